#!/usr/bin/env python3
"""Runs one integration test in a PID namespace of its own, so that tests can run
side by side.

    pidns.py COMMAND [ARG...]

An agent samples every process it can see.  Two tests running at once on one host
would see each other's processes: a job one test makes (SLURM_JOB_ID=4711, a
`jobscope run`, a StatsD sender) would show up in the other test's agent, and its
counts would be wrong.  In a PID namespace with its own /proc (a mount namespace
whose /proc is that namespace's), a test sees only the processes it started; the
host's figures (/proc/stat, meminfo, pressure, disks) stay the host's, so a busy
machine is still seen as busy.

This file re-executes itself under `unshare --pid --fork --mount-proc
--kill-child` and then acts as the namespace's PID 1: it starts COMMAND, reaps
every process orphaned into it (as init would: an agent must not see the zombies
a test left behind), passes SIGTERM/SIGINT/SIGHUP on to COMMAND, and exits with
COMMAND's status.  When the namespace cannot be made (not root, no unshare, a
kernel without user or PID namespaces), COMMAND runs as it is, with a warning on
stderr: the test still runs, but then only alone.

JOBSCOPE_TEST_PIDNS=0 turns this off (COMMAND runs as it is, without a warning).
With JOBSCOPE_TEST_USAGE_LOG=FILE, PID 1 appends one JSON line to FILE when COMMAND
ends: the test's name (JOBSCOPE_TEST_NAME, else COMMAND's last argument), its wall
time and the CPU time of every process of the namespace (all of them were reaped
here, so RUSAGE_CHILDREN holds them all): `./dev test` prints its timing table
from these lines.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

INSIDE = "_JOBSCOPE_TEST_PIDNS_INIT"


def log_usage(argv, start):
    path = os.environ.get("JOBSCOPE_TEST_USAGE_LOG")
    if not path:
        return
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    name = os.environ.get("JOBSCOPE_TEST_NAME") or os.path.basename(argv[-1])
    line = json.dumps({"test": name, "wall_s": round(time.monotonic() - start, 2),
                       "cpu_s": round(ru.ru_utime + ru.ru_stime, 2)})
    with open(path, "a") as f:
        f.write(line + "\n")


def init(argv):
    """PID 1 of the namespace: run argv, reap everything, exit with argv's status."""
    start = time.monotonic()
    child = os.fork()
    if child == 0:
        os.execvp(argv[0], argv)

    def forward(sig, _frame):
        try:
            os.kill(child, sig)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            sys.exit(1)
        except InterruptedError:
            continue
        if pid == child:
            break
    log_usage(argv, start)
    # what the test left running goes with it (the namespace ends with its PID 1)
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status)
             else 128 + os.WTERMSIG(status))


def main():
    argv = sys.argv[1:]
    if not argv:
        sys.exit("usage: pidns.py COMMAND [ARG...]")
    if os.environ.get(INSIDE) == str(os.getpid()):
        del os.environ[INSIDE]
        init(argv)
    if os.environ.get("JOBSCOPE_TEST_PIDNS", "1") == "0":
        os.execvp(argv[0], argv)
    unshare = shutil.which("unshare")
    why = None
    if os.geteuid() != 0:
        why = "not root"
    elif not unshare:
        why = "no unshare(1)"
    elif subprocess.run([unshare, "--pid", "--fork", "--mount-proc", "true"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode != 0:
        why = "unshare --pid --mount-proc failed"
    if why:
        sys.stderr.write("pidns.py: %s: running without a PID namespace of its own;"
                         " run this test alone\n" % why)
        os.execvp(argv[0], argv)
    # in the namespace this process is PID 1 again: the marker says so
    env = dict(os.environ, **{INSIDE: "1"})
    os.execve(unshare, [unshare, "--pid", "--fork", "--mount-proc", "--kill-child", "--",
                        sys.executable, os.path.abspath(__file__)] + argv, env)


if __name__ == "__main__":
    main()
