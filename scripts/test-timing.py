#!/usr/bin/env python3
"""The timing table `./dev test` prints at its end.

    test-timing.py PHASES USAGE [TESTLOG]

PHASES: lines "NAME start|end EPOCH-SECONDS" written by ./dev as each phase
begins and ends (phases overlap: the release and fuzz builds and the fuzz runs go
on beside the meson tests).  USAGE: the JSON lines tests/integration/pidns.py
writes per integration test (wall and CPU seconds of its whole pid namespace).
TESTLOG: meson's testlog.json (each test's duration; its suite is in its name).
"""
import json
import sys
from collections import OrderedDict


def phases(path):
    out = OrderedDict()
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 3:
                continue
            name, what, at = parts[0], parts[1], float(parts[2])
            out.setdefault(name, {})[what] = at
    return out


def main():
    ph = phases(sys.argv[1])
    usage = {}
    try:
        with open(sys.argv[2]) as f:
            for line in f:
                d = json.loads(line)
                usage[d["test"]] = d
    except (OSError, ValueError):
        pass
    tests = []
    if len(sys.argv) > 3:
        with open(sys.argv[3]) as f:
            for line in f:
                t = json.loads(line)
                suite, _, name = t["name"].partition(" / ")
                suite = suite.split(":", 1)[-1].split("+")[-1]
                tests.append((name, suite, t["duration"]))
    starts = [p["start"] for p in ph.values() if "start" in p]
    ends = [p["end"] for p in ph.values() if "end" in p]
    print("== timing: wall seconds of each phase (the builds and fuzz runs after "
          "build-asan go on beside meson-test)")
    for name, p in ph.items():
        if "start" in p and "end" in p:
            print("  %-14s %7.1f   (from %+.0f s)" % (name, p["end"] - p["start"],
                                                    p["start"] - min(starts)))
    if starts and ends:
        print("  %-14s %7.1f" % ("total", max(ends) - min(starts)))
    if tests:
        by_suite = OrderedDict()
        for name, suite, d in tests:
            s = by_suite.setdefault(suite, [0, 0.0])
            s[0] += 1
            s[1] += d
        print("== meson tests by suite: how many, and their seconds added up (they run side by side)")
        for suite, (n, d) in by_suite.items():
            print("  %-14s %4d %9.1f" % (suite, n, d))
        print("== the slowest tests: wall seconds (CPU seconds of the test's processes, "
              "integration tests only)")
        for name, suite, d in sorted(tests, key=lambda t: -t[2])[:12]:
            # a unit test and an integration test may share a name (test_pack)
            u = usage.get(name) if suite in ("integration", "postgresql") else None
            print("  %-28s %-12s %7.1f  %s" % (name, suite, d,
                                              "(%.1f CPU)" % u["cpu_s"] if u else ""))
        if usage:
            print("  all integration tests: %.0f CPU seconds" % sum(u["cpu_s"] for u in usage.values()))


if __name__ == "__main__":
    main()
