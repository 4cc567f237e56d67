#!/usr/bin/env python3
"""Writes a C file with a compiled BPF object (tasks.bpf.o) as a byte array, for taskiter.c."""
import sys


def main():
    out, path = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    body = ",".join(str(b) for b in data)
    with open(out, "w") as f:
        f.write("/* made by src/sample/embed_bpf.py from %s: do not edit */\n"
                "#include <stddef.h>\n\n"
                "extern const unsigned char taskiter_object[];\n"
                "extern const size_t taskiter_object_size;\n"
                "const unsigned char taskiter_object[] = {%s};\n"
                "const size_t taskiter_object_size = %d;\n" % ("tasks.bpf.o", body, len(data)))


if __name__ == "__main__":
    main()
