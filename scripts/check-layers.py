#!/usr/bin/env python3
"""check-layers.py - the module layering of docs/architecture.md, enforced.

Every folder under src/ is a module; a module may include only its own
headers and those of the modules above it in LAYERS.  Also: no include
circle between files (a file is its .c and .h: x depends on y when x.c or
x.h includes y.h; a circle inside a folder is one the module order cannot
see), no source file over MAX_LINES lines, and SQL (SELECT/INSERT/UPDATE/
DELETE statements) only in src/store/ (and src/db/, the engines under it,
which know no jobscope table).  Prints each breach and ends with "N passed, N failed"-style
counts on one line; exits 1 on any breach.
"""
import os
import re
import sys

LAYERS = ["common", "app", "cuda", "sample", "attrib", "db", "store", "analysis", "report", "http", "prom",
          "net", "web", "agent", "head", "top", "run", "cli"]
MAX_LINES = 1500
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SQL = re.compile(r'"\s*(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE)\b')


def module_of(path):
    parts = path.split(os.sep)
    return parts[1] if len(parts) > 2 and parts[0] == "src" else None


def circles(deps):
    """The include circles of deps ({file: set of files}): strongly connected
    components of more than one file (Tarjan's, without recursion), sorted."""
    index, low, on, stack, found = {}, {}, set(), [], []
    for root in sorted(deps):
        if root in index:
            continue
        work = [(root, iter(sorted(deps[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in deps:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(deps[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    os.chdir(root)
    breaches, files, deps = [], 0, {}
    for dirpath, _, names in os.walk("src"):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            mod = module_of(path)
            files += 1
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            nlines = text.count("\n")
            if nlines > MAX_LINES:
                breaches.append(f"{path}: {nlines} lines (at most {MAX_LINES})")
            if mod not in LAYERS:
                breaches.append(f"{path}: module '{mod}' is not in the layer list")
                continue
            unit = path[:-2]
            deps.setdefault(unit, set())
            for inc in INCLUDE.findall(text):
                if inc.endswith(".h"):
                    dep_unit = os.path.join("src", inc[:-2]) if "/" in inc else \
                        os.path.join(dirpath, inc[:-2])
                    if dep_unit != unit:
                        deps[unit].add(dep_unit)
                if "/" not in inc:
                    continue  # a header of its own folder
                dep = inc.split("/")[0]
                if dep not in LAYERS:
                    continue
                if LAYERS.index(dep) > LAYERS.index(mod):
                    breaches.append(f"{path}: includes \"{inc}\": {mod} may not use {dep}")
            if mod not in ("store", "db") and SQL.search(text):  # db/: the engines, no table
                breaches.append(f"{path}: SQL outside src/store/")
    for comp in circles(deps):
        breaches.append("an include circle: %s" % " <-> ".join(comp))
    for b in breaches:
        print("check-layers: " + b)
    print(f"check-layers: {files} files, {len(breaches)} breaches")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
