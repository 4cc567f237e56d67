#!/usr/bin/env python3
"""A short real libFuzzer run of every fuzz target, each until its coverage stops growing.

    fuzz-smoke.py BUILD_DIR CORPUS_DIR LOG [--jobs N] [--plateau S] [--min S] [--max S]
                  [--only NAME...]

Each target (BUILD_DIR/tests/fuzz_NAME, one per tests/fuzz/fuzz_NAME.c) runs from
its checked-in corpus (CORPUS_DIR/fuzz_NAME, read, not written: new inputs go to a
scratch directory, unless --grow-corpus merges those that add coverage into it)
under ASan+UBSan.  Its edge coverage ("cov:" in libFuzzer's
status lines) is followed as it runs: once it has not grown for --plateau seconds
since the seed corpus was replayed (and at least --min seconds have passed), the target has reached the plateau a
smoke run can reach and is stopped with SIGINT; --max caps it.  A fixed time per
target spent most of it on plateaus: the targets reach theirs in 1 to 10 s from
the corpus (docs/testing.md has the measurement).  Time is CPU time of the fuzzer
process, not wall time, so a loaded machine makes no target stop before it has
done its share of work.

Writes "ok fuzz_NAME" or "FAIL fuzz_NAME" per target to LOG (scripts/count-tests.py
counts them), the fuzzer's output to BUILD_DIR/fuzz_NAME.log, a crashing input to
BUILD_DIR/fuzz-artifacts/; prints one line per target; exits 1 if any failed.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

COV = re.compile(r"^#(\d+)\s+(INITED|NEW|REDUCE|pulse|DONE)\b.*?\bcov: (\d+)")


def cpu_seconds(pid):
    """utime + stime of a live process, from /proc/PID/stat; None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Target:
    def __init__(self, name, args):
        self.name = name
        self.args = args
        self.ok = False
        self.why = ""
        self.cov = 0
        self.runs = 0
        self.cpu = 0.0
        self.wall = 0.0
        self.grew_at = 0.0

    def run(self):
        a = self.args
        exe = os.path.join(a.build, "tests", self.name)
        corpus = os.path.join(a.corpus, self.name)
        log_path = os.path.join(a.build, self.name + ".log")
        artifacts = os.path.join(a.build, "fuzz-artifacts") + "/"
        os.makedirs(artifacts, exist_ok=True)
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="jobscope-fuzz-") as work, \
                open(log_path, "w") as log:
            # a safety cap in libFuzzer's own (wall) time, far above what the CPU
            # caps take even on a machine shared with much else
            proc = subprocess.Popen([exe, "-max_total_time=%d" % (a.wall or 20 * a.max),
                                     "-print_final_stats=1", "-artifact_prefix=" + artifacts,
                                     work, corpus],
                                    stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.PIPE, text=True, errors="replace")
            grew_at = 0.0  # CPU seconds at the last growth of coverage
            stopped = False
            lines = []

            def watch():
                nonlocal grew_at
                for line in proc.stderr:
                    log.write(line)
                    lines.append(line)
                    m = COV.match(line)
                    if m:
                        self.runs = int(m.group(1))
                        cov = int(m.group(3))
                        if cov > self.cov:
                            self.cov = cov
                            grew_at = cpu_seconds(proc.pid) or grew_at
                            self.grew_at = grew_at

            reader = threading.Thread(target=watch, daemon=True)
            reader.start()
            stopped_at = 0.0
            while proc.poll() is None:
                cpu = cpu_seconds(proc.pid)
                if cpu is not None:
                    self.cpu = cpu
                    # the plateau is counted from the first coverage line: replaying
                    # the seed corpus (libFuzzer's INITED) can take seconds of its own
                    plateau = self.cov and cpu - grew_at >= a.plateau and cpu >= a.min
                    if (plateau or cpu >= a.max) and not stopped:
                        proc.send_signal(signal.SIGINT)
                        stopped = True
                        stopped_at = time.monotonic()
                if stopped and time.monotonic() - stopped_at > 10:
                    # libFuzzer's SIGINT handler allocates: a signal that lands inside
                    # ASan's allocator deadlocks it (seen: fuzz_jobs_query asleep on the
                    # allocator's futex for 12 minutes).  What it found is in the
                    # scratch directory already; the run is over.
                    proc.kill()
                time.sleep(0.1)
            reader.join(timeout=10)
            rc = proc.returncode
            if a.grow_corpus and (rc in (0, 72) or stopped) and os.listdir(work):
                # what this run found that adds coverage goes into the corpus
                subprocess.run([exe, "-merge=1", corpus, work], stdin=subprocess.DEVNULL,
                               stdout=log, stderr=log)
        self.wall = time.monotonic() - start
        text = "".join(lines)
        crashed = re.search(r"ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                            r"libFuzzer)|runtime error:|SUMMARY: ", text)
        # libFuzzer exits 0 at -max_total_time and 72 (its -interrupted_exitcode)
        # when the SIGINT sent above stops it
        if crashed:
            self.why = crashed.group(0)
        elif not stopped and self.cpu < a.min:
            self.why = "starved: %.1f s of CPU in %.0f s, not the %.1f s asked" % (
                self.cpu, self.wall, a.min)
        elif rc not in (0, 72) and not (stopped and rc in (-signal.SIGINT, -signal.SIGKILL)):
            self.why = "exit status %s" % rc
        elif not any(COV.match(line) for line in lines):
            self.why = "no coverage line: not a libFuzzer run"
        else:
            self.ok = True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("corpus")
    p.add_argument("log")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--plateau", type=float, default=3.0,
                   help="stop after this many CPU seconds with no new coverage")
    p.add_argument("--min", type=float, default=2.0, help="CPU seconds at least")
    p.add_argument("--max", type=float, default=15.0, help="CPU seconds at most")
    p.add_argument("--wall", type=int, default=0,
                   help="wall seconds at most (libFuzzer's -max_total_time; default 20 * max)")
    p.add_argument("--grow-corpus", action="store_true",
                   help="merge the inputs that found new coverage into CORPUS_DIR (libFuzzer's"
                        " -merge=1): a longer run grows the corpus the smoke runs start from")
    p.add_argument("--only", nargs="*", default=None, help="these targets (fuzz_NAME) only")
    a = p.parse_args()
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz")
    # every target in tests/fuzz: a new one cannot be left out
    names = sorted(f[:-2] for f in os.listdir(src) if re.fullmatch(r"fuzz_\w+\.c", f))
    if a.only:
        names = [n for n in names if n in a.only]
    targets = [Target(n, a) for n in names]
    queue = list(targets)
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                t = queue.pop(0)
            t.run()
            with lock:
                print("%s %s: cov %d (last grew at %.1f s) after %d runs, %.1f s CPU (%.1f s)%s" % (
                    "ok  " if t.ok else "FAIL", t.name, t.cov, t.grew_at, t.runs, t.cpu, t.wall,
                    "" if t.ok else ": %s, see %s" % (t.why, os.path.join(a.build,
                                                                        t.name + ".log"))),
                    flush=True)

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(max(1, a.jobs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    with open(a.log, "w") as f:
        for t in targets:
            f.write("%s %s\n" % ("ok" if t.ok else "FAIL", t.name))
    failed = [t.name for t in targets if not t.ok]
    print("fuzz smoke: %d targets, %.0f s, %.0f s of CPU%s" % (
        len(targets), time.monotonic() - start, sum(t.cpu for t in targets),
        ", FAILED: " + " ".join(failed) if failed else ""), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
