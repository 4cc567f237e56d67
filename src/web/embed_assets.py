#!/usr/bin/env python3
"""Writes a C file with each asset (src/web/assets/*) as a byte array, for web.c."""
import os
import sys

TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".svg": "image/svg+xml", ".png": "image/png"}


def main():
    out, paths = sys.argv[1], sys.argv[2:]
    lines = ['/* made by src/web/embed_assets.py: do not edit */', '#include "web/web.h"', '']
    rows = []
    for i, p in enumerate(sorted(paths)):
        data = open(p, "rb").read()
        name = os.path.basename(p)
        ctype = TYPES[os.path.splitext(name)[1]]
        body = ",".join(str(b) for b in data)
        lines.append("static const char asset_%d[] = {%s, 0};" % (i, body))
        rows.append('\t{"%s", "%s", asset_%d, %d},' % (name, ctype, i, len(data)))
    lines.append("const struct web_asset web_assets[] = {")
    lines += rows
    lines.append("\t{0, 0, 0, 0},")
    lines.append("};")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
