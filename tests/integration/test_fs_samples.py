"""fs_samples: each tick's root file system use, as psutil.disk_usage("/") counts it.

The node's root is the sysroot's: each case runs jobscope in a mount
namespace of its own whose sysroot is a private tmpfs (with /proc and /sys
linked in), so nothing else writes to that file system and every row can
be compared exactly with os.statvfs of the same directory, read through
/proc/PID/root.  Writing a file there between ticks must move used_bytes by
what statvfs says it moved.  An agent's rows stream to its head.
"""
import os
import subprocess
import time

from harness import JOBSCOPE, run_tests, check, eq, scaled, wait_for

from head_harness import Head, node_id, stop_agent, caught_up, held, sql, StoreError

ROOT = "/tmp/jobscope-fsroot"


def psutil_usage(path):
    """psutil.disk_usage's used and the total its percent divides by."""
    st = os.statvfs(path)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    return used, used + st.f_bavail * st.f_frsize


def in_private_root(args, hostname="fs-node"):
    """args run in their own mount and UTS namespaces with ROOT a fresh 64 MiB tmpfs."""
    script = ('mount --make-rprivate / && mkdir -p "$0" && mount -t tmpfs -o size=64m tmpfs "$0"'
              ' && ln -s /proc "$0/proc" && ln -s /sys "$0/sys" && hostname %s && exec "$@"'
              % hostname)
    return ["unshare", "--mount", "--uts", "sh", "-c", script, ROOT] + args


def can_unshare():
    return subprocess.run(["unshare", "--mount", "--uts", "true"]).returncode == 0


def fs_rows(db, where=""):
    try:
        return sql(db, "SELECT ts_ms, mount, used_bytes, total_bytes FROM fs_samples %s ORDER BY seq"
                   % where)
    except StoreError:
        return []  # a store still being created


def check_moves_with_writes(db, root, rows_of):
    """Rows match statvfs exactly, before and after a file of 8 MiB is written."""
    before = psutil_usage(root)
    n = len(rows_of())
    wait_for(lambda: len(rows_of()) >= n + 2, timeout=20, what="two more fs rows")
    eq(rows_of()[-1][1:], ("/",) + before, "the last row is statvfs's, exactly")
    with open(os.path.join(root, "ballast"), "wb") as f:
        f.write(b"\1" * (8 << 20))
        f.flush()
        os.fsync(f.fileno())
    after = psutil_usage(root)
    check(after[0] - before[0] >= 8 << 20, "statvfs sees the file: %r %r" % (before, after))
    t = int(time.time() * 1000)
    wait_for(lambda: [r for r in rows_of() if r[0] > t + 50], timeout=20,
             what="a row after the write")
    late = [r for r in rows_of() if r[0] > t + 50]
    eq(late[-1][1:], ("/",) + after, "after the write: statvfs's again")
    return before, after


def test_run_writes_fs_rows(wd):
    if not can_unshare():
        print("SKIP: cannot make mount namespaces here (needs root)")
        return
    db = wd.join("run.db")
    go = wd.join("go")
    env = dict(os.environ, JOBSCOPE_SYSROOT=ROOT)
    # the run's command lasts until the test is done with it
    proc = subprocess.Popen(in_private_root([JOBSCOPE, "run", "--interval", "100ms", "--db",
                                             db, "--", "sh", "-c",
                                             'until [ -e "$0" ]; do sleep 0.05; done', go]),
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: os.path.exists(db) and fs_rows(db), timeout=20, what="a first fs row")
        root = "/proc/%d/root%s" % (proc.pid, ROOT)
        # the run's process is `jobscope run` itself once unshare and sh exec'd it
        before, after = check_moves_with_writes(db, root, lambda: fs_rows(db))
    finally:
        open(go, "w").close()
        _, err = proc.communicate(timeout=scaled(60))
    eq(proc.returncode, 0, "run: " + err.decode())
    hosts = sql(db, "SELECT count(*) FROM host_samples")[0][0]
    eq(len(fs_rows(db)), hosts, "one fs row per host sample")
    # (two samples may share a ms: the run's last, at its command's exit, right after a
    # regular one)
    eq(sql(db, "SELECT count(*) FROM fs_samples f WHERE EXISTS (SELECT 1 FROM host_samples h"
               " WHERE h.node_id = f.node_id AND h.ts_ms = f.ts_ms)")[0][0],
       hosts, "with its host sample's node and time")


def test_agent_streams_fs_rows_to_head(wd):
    if not can_unshare():
        print("SKIP: cannot make mount namespaces here (needs root)")
        return
    head = Head(wd)
    db = wd.join("agent.db")
    errf = open(wd.join("agent.log"), "a")
    proc = subprocess.Popen(in_private_root([JOBSCOPE, "agent", "--db", db, "--interval", "100ms",
                                             "--listen", "none", "--head", head.url,
                                             "--sysroot", ROOT]),
                            stdout=subprocess.DEVNULL, stderr=errf)
    try:
        wait_for(lambda: os.path.exists(db) and fs_rows(db), timeout=20, what="a first fs row")
        root = "/proc/%d/root%s" % (proc.pid, ROOT)
        before, after = check_moves_with_writes(db, root, lambda: fs_rows(db))
        # the head holds what the agent, sampling on, had by now, but for the last
        # tick's fs row (it may follow the host row that marks it): two rows more, so
        # that the row after the write is not that one
        n = len(fs_rows(db)) + 2
        wait_for(lambda: len(fs_rows(db)) >= n, timeout=20, what="two more fs rows")
        wait_for(caught_up(head.db, db), timeout=30, what="the head current")
    finally:
        eq(stop_agent(proc, errf), 0, "agent exit")
    # at its stop the agent gives the head 2 s for its last rows, and says so when
    # they have to wait for its next start (a busy machine, a slow head)
    with open(wd.join("agent.log")) as f:
        flushed = "the head does not hold the last rows yet" not in f.read()
    if flushed:
        wait_for(lambda: held(head.db, db), timeout=30, what="the head current after the stop")
    eq(head.kill(), -9, "head killed")
    mine = fs_rows(db)
    nid = node_id(head.db, "fs-node")
    theirs = fs_rows(head.db, "WHERE node_id = %d" % nid)
    if flushed:
        eq(theirs, mine, "the head holds every fs row of the agent, the same values")
    else:
        print("the agent's last rows wait for its next start: compared up to the head's")
        check(len(theirs) >= n - 1, "the head holds %d fs rows, the agent had %d when asked"
              % (len(theirs), n))
        eq(theirs, mine[:len(theirs)], "the head holds the agent's fs rows, the same values")
    figures = [tuple(r[2:]) for r in theirs]
    check(before in figures and after in figures, "both figures reached the head")
    eq(sql(head.db, "SELECT count(*) FROM fs_samples WHERE used_bytes IS NULL"
                    " OR total_bytes IS NULL")[0][0], 0, "no row without its figures")


run_tests(globals())
