"""Several hosts on one machine: a head and three agents, each in a network
namespace of its own, joined by veth links to a bridge in the head's.

Faults on purpose: one agent's link is cut while it streams, and that agent is
restarted while cut; the link comes back once the restarted agent has found
the head away (or after JOBSCOPE_TEST_CUT_S, when that is longer: 60 for a cut
long enough for the agents' back-off to reach its 30 s cap); the head's disk is
filled, then freed.  Afterwards the head holds exactly the rows each agent
sampled (per table: count and checksum), nothing lost, nothing twice.
"""
import os
import secrets
import signal
import subprocess
import time

from harness import run_tests, check, eq, wait_for

from head_harness import (COMPARE, Head, agent_side, head_side, start_agent, stop_agent, held,
                          caught_up, sql, PG)

# the cut lasts until the restarted agent has found the head away, and at least CUT_S
CUT_S = float(os.environ.get("JOBSCOPE_TEST_CUT_S", "0"))
# the namespaces' names are the machine's (/run/netns), whatever pid namespace the
# test runs in: a random tag keeps two runs side by side (sqlite and _pg) apart
TAG = "js" + secrets.token_hex(4)
NET = "10.77.%d" % (secrets.randbelow(200) + 20)


def top_seq(db):
    return sql(db, "SELECT coalesce(max(seq), 0) FROM host_samples")[0][0]


def ip(*args, check_rc=True):
    r = subprocess.run(["ip"] + list(args), capture_output=True, text=True)
    if check_rc and r.returncode != 0:
        raise AssertionError("ip %s: %s" % (" ".join(args), r.stderr))
    return r


class Net:
    """netns <tag>-head with a bridge; <tag>-aN joined to it by a veth each."""

    def __init__(self, tag, nagents):
        self.tag = tag
        self.head = tag + "-head"
        self.agents = ["%s-a%d" % (tag, i) for i in range(nagents)]
        ip("netns", "add", self.head)
        ip("-n", self.head, "link", "set", "lo", "up")
        ip("-n", self.head, "link", "add", "br0", "type", "bridge")
        ip("-n", self.head, "addr", "add", NET + ".1/24", "dev", "br0")
        ip("-n", self.head, "link", "set", "br0", "up")
        for i, ns in enumerate(self.agents):
            ip("netns", "add", ns)
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "h%d" % i,
               "netns", self.head)
            ip("-n", ns, "addr", "add", "%s.%d/24" % (NET, 10 + i), "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", self.head, "link", "set", "h%d" % i, "master", "br0")
            ip("-n", self.head, "link", "set", "h%d" % i, "up")

    def cut(self, i, down=True):
        ip("-n", self.head, "link", "set", "h%d" % i, "down" if down else "up")

    def close(self):
        for ns in [self.head] + self.agents:
            ip("netns", "del", ns, check_rc=False)


def test_three_hosts_cut_link_restart_full_disk(wd):
    if os.getuid() != 0 or ip("netns", "list", check_rc=False).returncode != 0:
        print("SKIP: network namespaces need root")
        return
    net = Net(TAG, 3)
    mnt = wd.join("headfs")
    os.mkdir(mnt)
    # the full disk is the SQLite file's: on PostgreSQL the rest of the case runs without it
    if PG:
        print("postgresql: no full-disk part (the head's store is not a file)")
    mounted = not PG and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs",
                                         mnt]).returncode == 0
    agents = []
    head = None
    try:
        head = Head(wd, db=os.path.join(mnt if mounted else wd.path, "head.db"),
                    netns=net.head, addr=NET + ".1",
                    extra=["--insecure"])  # a private namespace: no token to pass around
        for i, ns in enumerate(net.agents):
            agents.append(list(start_agent(wd, head, "host%d" % i, netns=ns)))
        dbs = [a[1] for a in agents]
        wait_for(lambda: len(sql(head.db, "SELECT * FROM agents")) == 3, timeout=30,
                 what="three agents streaming")

        # cut host0 off while it streams: it goes on sampling, and sends each tick's
        # rows into the cut
        net.cut(0)
        t_cut = time.monotonic()
        top0 = top_seq(dbs[0])
        wait_for(lambda: sql(dbs[0], "SELECT count(*) FROM host_samples WHERE seq > ?",
                             top0)[0][0] >= 5, timeout=20, what="5 ticks of host0 in the cut")
        # restart it while cut: the new one finds the head away (its first try, a
        # connection that times out, fails and it says so).  The stop waits for the
        # batch host0 sent into the cut: the sender's transfer is not cut short by a
        # stop, it ends at its own timeout (SENDER_TIMEOUT_S, 30 s), then the exit's
        # flush of 2 s
        t = time.monotonic()
        eq(stop_agent(agents[0][0], agents[0][3], timeout=45), 0, "host0 stopped while cut")
        print("host0 took %.1f s to stop while cut" % (time.monotonic() - t))
        log0 = agents[0][2]
        seen = os.path.getsize(log0)
        agents[0] = list(start_agent(wd, head, "host0", netns=net.agents[0]))
        wait_for(lambda: "retrying" in open(log0).read()[seen:], timeout=30,
                 what="the restarted host0 to find the head away")
        # and keep it cut CUT_S in all (not a wait: a longer cut on request)
        time.sleep(max(0.0, CUT_S - (time.monotonic() - t_cut)))
        behind = not held(head.db, dbs[0])
        check(behind, "while cut the head is behind host0")
        net.cut(0, down=False)
        wait_for(caught_up(head.db, dbs[0]), timeout=60, what="host0 caught up")

        if mounted:
            # the head's disk fills: batches are refused (507), nothing acknowledged
            fill = os.path.join(mnt, "fill")
            subprocess.run(["dd", "if=/dev/zero", "of=" + fill, "bs=64k"],
                           stderr=subprocess.DEVNULL)
            host1_log = os.path.join(wd.path, "host1.log")
            wait_for(lambda: "disk is full" in open(host1_log).read() or
                     "507" in open(host1_log).read(), timeout=30,
                     what="host1 told by the head that its disk is full")
            os.unlink(fill)
            wait_for(caught_up(head.db, *dbs), timeout=60,
                     what="catching up after the full disk")
    finally:
        for a in agents:
            eq(stop_agent(a[0], a[3]), 0, "agent exit")
        if agents and head:
            wait_for(lambda: all(held(head.db, a[1]) for a in agents), timeout=60,
                     what="the last rows")
        if head:
            head.kill(signal.SIGTERM)
        net.close()
    try:
        for adb in dbs:
            for table in COMPARE:
                a, h = agent_side(adb, table), head_side(head.db, adb, table)
                eq(h, a, "%s of %s: (rows, checksum) at the head vs the agent"
                   % (table, os.path.basename(adb)))
        eq(sql(head.db, "SELECT count(*) FROM agents")[0][0], 3, "three agents")
        if mounted:
            check("disk is full" in open(os.path.join(wd.path, "host1.log")).read() or
                  "507" in open(os.path.join(wd.path, "host1.log")).read(),
                  "an agent saw the full disk")
    finally:
        if mounted:
            subprocess.run(["umount", "-l", mnt])


run_tests(globals())
