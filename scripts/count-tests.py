#!/usr/bin/env python3
"""Count individual test cases from meson's testlog.json (and the fuzz log).

cmocka binaries and the Python integration scripts each run many cases;
a meson test that failed without saying how many cases failed (a crash, a
timeout) counts as one failure.  Prints "N passed, N failed" last.
"""
import json
import re
import sys

passed = failed = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get("stdout") or ""
    ok = t["result"] in ("OK", "EXPECTEDFAIL")
    if t["result"] == "SKIP":
        continue
    m = re.findall(r"^(\d+) passed, (\d+) failed", out, re.M)
    run_ = re.search(r"^\[==========\] (\d+) test\(s\) run\.", out, re.M)
    if m:
        p, f = int(m[-1][0]), int(m[-1][1])
    elif run_:
        f_m = re.search(r"^\[  FAILED  \] (\d+) test\(s\)", out, re.M)
        f = int(f_m.group(1)) if f_m else 0
        p = int(run_.group(1)) - f
    else:
        p, f = (1, 0) if ok else (0, 1)
    if not ok and f == 0:
        f = 1
    passed += p
    failed += f
    if not ok:
        print("failed: %s (%s)" % (t["name"], t["result"]))
for path in sys.argv[2:]:
    for line in open(path):
        if line.startswith("ok "):
            passed += 1
        elif line.startswith("FAIL "):
            failed += 1
            print("failed: %s" % line.split()[1])
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
