"""A fake node's /proc and /sys for `jobscope agent --sysroot` (the tests that
read a node they cannot make for real): the host files of tests/fixtures'
sysroot1, a cgroup tree, and processes written as the kernel writes them."""
import os
import shutil

from harness import FIXTURES


def add_proc(root, pid, ppid, comm, cgroup, environ=b"", uid=0, session=None, utime=100,
             stime=50, rss_kb=10240, read_bytes=4096, write_bytes=8192):
    """/proc/PID of a sleeping process (again for a pid already there)."""
    d = os.path.join(root, "proc", str(pid))
    os.makedirs(d, exist_ok=True)
    session = session or pid
    with open(os.path.join(d, "stat"), "w") as f:
        f.write("%d (%s) S %d %d %d 0 -1 4194304 10 0 0 0 %d %d 0 0 20 0 1 0 %d 52428800 %d "
                "18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
                % (pid, comm, ppid, pid, session, utime, stime, 1000 + pid, rss_kb // 4))
    with open(os.path.join(d, "status"), "w") as f:
        f.write("Name:\t%s\nState:\tS (sleeping)\nPid:\t%d\nPPid:\t%d\nUid:\t%d\t%d\t%d\t%d\n"
                "VmHWM:\t%8d kB\nVmRSS:\t%8d kB\nVmSwap:\t       0 kB\nThreads:\t1\n"
                % (comm, pid, ppid, uid, uid, uid, uid, rss_kb, rss_kb))
    with open(os.path.join(d, "io"), "w") as f:
        f.write("rchar: 0\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: %d\nwrite_bytes: %d\n"
                "cancelled_write_bytes: 0\n" % (read_bytes, write_bytes))
    with open(os.path.join(d, "cmdline"), "wb") as f:
        f.write(comm.encode() + b"\0")
    with open(os.path.join(d, "cgroup"), "w") as f:
        f.write(cgroup)
    with open(os.path.join(d, "environ"), "wb") as f:
        f.write(environ)


def skeleton(root, cgroup_tree):
    """root/proc with sysroot1's host files (no process) and root/sys with the cgroup
    tree of tests/fixtures/cgroup/<cgroup_tree>."""
    src = os.path.join(FIXTURES, "sysroot1", "proc")
    os.makedirs(os.path.join(root, "proc"))
    for entry in os.listdir(src):
        if not entry.isdigit():
            p = os.path.join(src, entry)
            (shutil.copytree if os.path.isdir(p) else shutil.copy)(
                p, os.path.join(root, "proc", entry))
    shutil.copytree(os.path.join(FIXTURES, "cgroup", cgroup_tree, "sys"),
                    os.path.join(root, "sys"))
    return root
