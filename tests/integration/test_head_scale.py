"""`jobscope head` at cluster scale: connections, slow clients, kill -9.

- 10,000 idle keep-alive connections are held (past the header timeout)
  and each answers a second request; /status answers meanwhile.
- 2,000 half-open connections (headers never finished) beside real agents:
  /status answers in under 1 s throughout, the head closes them after its
  header timeout, and every agent row arrives.
- One address gets at most --max-connections-per-ip connections; others are
  served all the while.
- The file-descriptor limit: raised at start when it can be; a clear error
  for a --max-connections it cannot hold; a lower default with a warning.
- kill -9 of the head 50 times in a row while agents stream (every restart
  starts with a backlog, so most kills land in a group commit): afterwards
  the head holds every agent row once, by (rows, checksum) per table.

Source addresses: the whole of 127.0.0.0/8 is loopback on Linux, so the
clients bind 127.0.0.N to look like N different nodes.
"""
import errno
import os
import random
import re
import resource
import selectors
import signal
import socket
import subprocess
import time
import urllib.request

from harness import JOBSCOPE, run_tests, check, eq, scaled, wait_for, wait_progress

from head_harness import (COMPARE, Head, agent_side, head_side, start_agent, stop_agent, held,
                          caught_up, sql, store_exists, integrity_ok, head_db, acked_total)

HEADER_TIMEOUT_S = 10  # HEAD_HEADER_TIMEOUT_S
PER_IP = 512           # HEAD_DEFAULT_CONNS_PER_IP


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(n, soft)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def open_conns(port, n, first_ip, per_ip, payload, sources=None):
    """n non-blocking connections, per_ip from each of 127.0.0.first_ip..
    (or one from each address in sources), each sent payload.  Returns
    (sockets, refused)."""
    if sources is None:
        sources = ["127.0.0.%d" % (first_ip + i // per_ip) for i in range(n)]
    socks, refused = [], 0
    for src in sources:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((src, 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        socks.append(s)
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_WRITE)
    pending = len(socks)
    deadline = time.monotonic() + scaled(30)
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            sel.unregister(s)
            pending -= 1
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                refused += 1
                continue
            try:
                s.send(payload)
            except OSError:
                refused += 1
    sel.close()
    check(pending == 0, "%d connections never connected" % pending)
    return socks, refused


def request_all(socks, payload, timeout=30, other=None):
    """Sends payload on every socket (none if empty) and reads one whole
    answer from each, until none is left or none has answered for timeout
    (scaled) seconds: thousands of answers on a busy machine may take longer
    than any fixed deadline, but they keep coming.  Returns (answered 200,
    closed without an answer or answered otherwise); those are closed here
    too, and other, a dict, counts them by status line, "closed" or "reset
    (ERRNO)", so that a failure says which they were."""
    sel = selectors.DefaultSelector()
    bufs = {}
    for s in socks:
        if payload:
            try:
                s.send(payload)
            except OSError:
                pass
        bufs[s] = b""
        sel.register(s, selectors.EVENT_READ)
    ok = closed = 0
    deadline = time.monotonic() + scaled(timeout)
    while bufs and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            try:
                data = s.recv(65536)
                why = "closed"
            except OSError as e:
                data, why = b"", "reset (%s)" % errno.errorcode.get(e.errno, e.errno)
            deadline = time.monotonic() + scaled(timeout)  # an answer (or its end) came
            if data:
                bufs[s] += data
                head, sep, body = bufs[s].partition(b"\r\n\r\n")
                if not sep:
                    continue
                m = re.search(rb"Content-Length: (\d+)", head, re.I)
                if m and len(body) < int(m.group(1)):
                    continue
                why = (None if head.startswith(b"HTTP/1.1 200")
                       else head.split(b"\r\n", 1)[0].decode(errors="replace"))
            sel.unregister(s)
            del bufs[s]
            if why is None:
                ok += 1
                continue
            closed += 1
            if other is not None:
                other[why] = other.get(why, 0) + 1
            s.close()
    sel.close()
    return ok, closed


def closed_by_peer(socks, timeout):
    """How many of socks the other end closed within timeout."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    left, closed = set(socks), 0
    deadline = time.monotonic() + scaled(timeout)
    while left and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                closed += 1
                sel.unregister(s)
                left.discard(s)
    sel.close()
    return closed


def runq_wait_ns(path):
    """The time a thread waited runnable for a CPU, ns: schedstat's second field."""
    try:
        with open(path) as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0  # a thread that ended


def head_waits(pid):
    return {tid: runq_wait_ns("/proc/%d/task/%s/schedstat" % (pid, tid))
            for tid in os.listdir("/proc/%d/task" % pid)}


def status_ms(head):
    """How long /status took the head, ms: the wall time of the request less the time the
    kernel kept this thread and the head waiting for a CPU (schedstat), which on a busy
    machine (other tests, busy loops beside) is the others' doing, not the head's.  Of
    the head's threads the one that waited longest is taken for the one that answered
    (taking them all would take off the waits of threads busy with other work)."""
    own0, head0 = runq_wait_ns("/proc/thread-self/schedstat"), head_waits(head.proc.pid)
    t = time.monotonic()
    with urllib.request.urlopen(head.url + "/status", timeout=scaled(10)) as r:
        r.read()
        eq(r.status, 200, "/status")
    wall = time.monotonic() - t
    own1, head1 = runq_wait_ns("/proc/thread-self/schedstat"), head_waits(head.proc.pid)
    waited = own1 - own0 + max([w - head0.get(tid, 0) for tid, w in head1.items()] or [0])
    return max(0.0, wall * 1000 - waited / 1e6)


def head_threads(pid):
    """Each thread of the head as 'TID NAME STATE wchan=W cpu=TICKS': what a stalled
    head was doing (blocked in the kernel, waiting on a lock, or spinning)."""
    out = []
    for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
            with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                wchan = f.read().strip() or "-"
        except OSError:
            continue  # a thread that ended
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2:].split()
        out.append("%s %s %s wchan=%s cpu=%d" % (tid, name, rest[0], wchan,
                                                 int(rest[11]) + int(rest[12])))
    return out


def pid_status(pid, field):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return None


def nofile_limit(pid):
    for line in open("/proc/%d/limits" % pid):
        if line.startswith("Max open files"):
            return int(line.split()[3])
    return None


def close_all(socks):
    for s in socks:
        s.close()


GET = b"GET / HTTP/1.1\r\nHost: head\r\n\r\n"


def test_10000_keepalive_connections_held(wd):
    if fd_limit_too_low():
        return
    raise_nofile(12000)
    head = Head(wd)
    socks = []
    try:
        check(nofile_limit(head.proc.pid) >= 10000, "the head raised its fd limit (%r)"
              % nofile_limit(head.proc.pid))
        rss0 = pid_status(head.proc.pid, "VmRSS")
        # a thousand at a time, each answered before the next thousand come: a
        # connection whose request waits unread past the header timeout (10 s)
        # is closed, and 10,000 at once on a loaded 2-core machine under ASan
        # can take that long; the earlier ones wait as idle keep-alives (120 s)
        #
        # A thousand normally take 0.2 s.  When the machine stalls the head
        # past the header timeout (a CI run once took 10 s over one thousand),
        # the header timeout closes the requests it had not yet read: that is
        # the timeout's job, so those connections are opened again, from the
        # same address, and the stall is printed.  A connection closed in a
        # thousand answered within the timeout is a failure.
        refused = ok = 0
        times = []
        for k in range(10):
            sources, tries = None, 0
            while sources is None or sources:
                t = time.monotonic()
                chunk, r = open_conns(head.port, 1000, 2 + 2 * k, 500, GET, sources)
                refused += r
                # a closed one is opened again from its own address: from
                # another, it would count against that one's cap (PER_IP)
                source = {s: s.getsockname()[0] for s in chunk}
                other = {}
                o, c = request_all(chunk, b"", other=other)
                took = time.monotonic() - t
                times.append(took)
                ok += o
                socks += [s for s in chunk if s.fileno() >= 0]
                sources = [source[s] for s in chunk if s.fileno() < 0]
                tries += 1
                if c and (took < HEADER_TIMEOUT_S or tries == 3):
                    eq((o, c), (len(chunk), 0), "answers to %d connections in %.1f s "
                       "(200, closed: %r)" % (len(chunk), took, other))
                if c:
                    print("a stall: %d of %d connections closed after %.1f s (%r); "
                          "opened again" % (c, len(chunk), took, other))
        print("each thousand answered in %s s" % ", ".join("%.1f" % t for t in times))
        eq(refused, 0, "connections refused")
        eq(ok, 10000, "first answers (200)")
        rss = pid_status(head.proc.pid, "VmRSS")
        print("head RSS: %d KiB idle, %d KiB with 10,000 connections (%.1f KiB each)"
              % (rss0, rss, (rss - rss0) / 10000.0))
        ms = status_ms(head)
        check(ms < 1000, "/status took %.0f ms beside 10,000 connections" % ms)
        # idle past the header timeout: a keep-alive connection is not cut by it (not a
        # wait: the idle time is the point)
        time.sleep(HEADER_TIMEOUT_S + 2)
        other = {}
        t = time.monotonic()
        # 10,000 requests at once: on a loaded machine (a CI run once went 30 s without
        # an answer after 8,720) the answers may pause for long; a pause is waited out
        # for two minutes, and a head that still answers no more says what each of its
        # threads was doing
        ok, closed = request_all(socks, GET, timeout=120, other=other)
        print("10,000 second answers in %.1f s" % (time.monotonic() - t))
        if ok + closed < 10000:
            print("the head's threads with %d requests unanswered:\n  %s"
                  % (10000 - ok - closed, "\n  ".join(head_threads(head.proc.pid))))
        eq((ok, closed), (10000, 0), "second answers after %d s idle (closed: %r)"
           % (HEADER_TIMEOUT_S + 2, other))
        print("/status %.0f ms beside 10,000 keep-alive connections" % ms)
    finally:
        close_all(socks)
    eq(head.kill(signal.SIGTERM), 0, "head exit")


def test_half_open_connections_beside_agents(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    raise_nofile(4000)
    head = Head(wd)
    agents = [start_agent(wd, head, "node-%d" % i) for i in range(3)]
    socks = []
    try:
        wait_for(lambda: store_exists(head.db) and
                 len(sql(head.db, "SELECT * FROM agents")) == 3, timeout=20,
                 what="three agents streaming")
        # 2,000 connections whose request headers never finish (500 per address)
        socks, refused = open_conns(head.port, 2000, 30, 500, b"GET / HTTP/1.1\r\nHost: h")
        eq(refused, 0, "half-open connections refused")
        start = time.monotonic()
        worst = 0.0
        while time.monotonic() - start < HEADER_TIMEOUT_S - 2:
            worst = max(worst, status_ms(head))
            time.sleep(0.5)  # not a wait: a sample every half second
        check(worst < 1000, "/status took %.0f ms beside 2,000 half-open connections" % worst)
        print("/status at worst %.0f ms beside 2,000 half-open connections" % worst)
        closed = closed_by_peer(socks, HEADER_TIMEOUT_S + 10)
        eq(closed, 2000, "half-open connections the head closed after its header timeout")
        print("the head closed all 2,000 after %.1f s" % (time.monotonic() - start))
    finally:
        close_all(socks)
        for proc, _, _, errf in agents:
            eq(stop_agent(proc, errf), 0, "agent exit")
    dbs = [db for _, db, _, _ in agents]
    wait_for(lambda: all(held(head.db, db) for db in dbs), timeout=30, what="the last ticks")
    eq(head.kill(signal.SIGTERM), 0, "head exit")
    for adb in dbs:
        for table in COMPARE:
            eq(head_side(head.db, adb, table), agent_side(adb, table),
               "%s of %s at the head vs the agent" % (table, os.path.basename(adb)))


def test_per_address_cap(wd):
    raise_nofile(4000)
    head = Head(wd)
    socks = []
    try:
        t = time.monotonic()
        socks, refused = open_conns(head.port, PER_IP + 88, 60, PER_IP + 88, GET)
        ok, closed = request_all(socks, b"")
        took = time.monotonic() - t
        rounds, stalled_last = 0, took >= HEADER_TIMEOUT_S
        while ok < PER_IP and stalled_last and rounds < 4:
            # a stall past the header timeout (as in the 10,000 case): the
            # requests the head had not read were closed with the refused
            # ones; as many are opened again, after a second for the head to
            # let go of those it closed (seen: 128 of 204 still counted at
            # once, on a loaded machine), and must be served, in as many
            # rounds as the machine stalls
            rounds += 1
            stalled = PER_IP - ok
            print("a stall: %d of %d served after %.1f s; %d opened again"
                  % (ok, PER_IP, took, stalled))
            time.sleep(1)
            t = time.monotonic()
            more, r = open_conns(head.port, stalled, 60, stalled, GET)
            socks += more
            o, c = request_all(more, b"")
            took = time.monotonic() - t
            stalled_last = o > 0 and (c > 0 or r > 0 or took >= HEADER_TIMEOUT_S)
            ok, closed, refused = ok + o, closed - stalled + c, refused + r
        eq((ok, closed + refused), (PER_IP, 88), "from one address: (served, refused)")
        # another address is served all the while
        ms = status_ms(head)
        check(ms < 1000, "/status from another address: %.0f ms" % ms)
    finally:
        close_all(socks)
    eq(head.kill(signal.SIGTERM), 0, "head exit")


def has_cap_sys_resource():
    for line in open("/proc/self/status"):
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) & (1 << 24))
    return False


def fd_limit_too_low():
    """Whether the head's default 16,384 connections cannot fit here (said so: a skip)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 16384 + 100 and not has_cap_sys_resource():
        print("SKIP: the hard fd limit here is %d (the head's 16,384 connections need more)"
              % hard)
        return True
    return False


def test_fd_limit(wd):
    if fd_limit_too_low():
        return
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    # a low soft limit: raised to what the connections need
    head = Head(wd, wrap=["prlimit", "--nofile=256:%d" % (hard if hard != resource.RLIM_INFINITY
                                                            else 1048576), "--"])
    check(nofile_limit(head.proc.pid) >= 16384, "fd limit raised from 256 (%r)"
          % nofile_limit(head.proc.pid))
    eq(head.kill(signal.SIGTERM), 0, "head exit")
    # a hard limit of 256 and no CAP_SYS_RESOURCE (dropped if we have it): it holds
    nocap = ["prlimit", "--nofile=256:256", "--"]
    if has_cap_sys_resource():
        nocap += ["setpriv", "--inh-caps=-sys_resource", "--bounding-set=-sys_resource", "--"]
    r = subprocess.run(nocap + [JOBSCOPE, "head", "--db", head_db(wd.join("h2.db")), "--listen",
                                "127.0.0.1:0", "--max-connections", "5000"],
                       capture_output=True, text=True, timeout=20)
    eq(r.returncode, 2, "exit code for a --max-connections the limit cannot hold")
    check("--max-connections 5000 needs" in r.stderr and "ulimit -n" in r.stderr,
          "a clear error: %r" % r.stderr)
    head = Head(wd, name="head3", wrap=nocap)
    log = open(head.log).read()
    check(re.search(r"the file-descriptor limit \(256\) allows \d+ connections, not 16384",
                    log), "a warning naming the lower limit: %r" % log)
    eq(nofile_limit(head.proc.pid), 256, "limit kept")
    eq(head.kill(signal.SIGTERM), 0, "head exit")


def test_kill9_during_group_commit_50_times(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    rng = random.Random(12)
    head = Head(wd)
    port = head.port
    agents = [start_agent(wd, head, "kill-%d" % i) for i in range(4)]
    dbs = [db for _, db, _, _ in agents]
    try:
        wait_for(lambda: store_exists(head.db) and
                 len(sql(head.db, "SELECT * FROM agents")) == 4, timeout=20,
                 what="four agents streaming")
        starts = []
        for i in range(50):
            # not waits: a moment at random to kill the head at (each restart finds a
            # backlog, which the agents send at once), and a time away
            time.sleep(rng.uniform(0.05, 0.5))
            eq(head.kill(signal.SIGKILL), -signal.SIGKILL, "kill %d" % (i + 1))
            time.sleep(rng.uniform(0.0, 0.3))
            t = time.monotonic()
            head = Head(wd, port=port, name="head-%d" % (i + 1))
            starts.append(time.monotonic() - t)
        print("50 restarts: the head listened %.1f s after its start at the median, %.1f s"
              " at worst" % (sorted(starts)[25], max(starts)))
        t = time.monotonic()
        # an agent whose sends failed many times in a row waits up to 30 s (the sender's
        # back-off) to try again, then sends its backlog
        # the deadline is for a stall (90 s: longer than the back-off), not for the
        # catch-up's speed, which is the machine's (a PostgreSQL head beside a loaded
        # suite took more than 90 s while it moved all along)
        wait_progress(caught_up(head.db, *dbs), lambda: acked_total(head.db), stall=90, cap=900,
                      what="the head to catch up after 50 kills")
        print("the head caught up %.1f s after the last restart" % (time.monotonic() - t))
    finally:
        for proc, _, _, errf in agents:
            eq(stop_agent(proc, errf), 0, "agent exit")
    wait_for(lambda: all(held(head.db, db) for db in dbs), timeout=30, what="the last ticks")
    eq(head.kill(signal.SIGTERM), 0, "head exit")
    check(integrity_ok(head.db), "the head's store after 50 kills")
    for adb in dbs:
        for table in COMPARE:
            a = agent_side(adb, table)
            eq(head_side(head.db, adb, table), a,
               "%s of %s: (rows, checksum) at the head vs the agent"
               % (table, os.path.basename(adb)))
    print("agents' rows: %s" % ", ".join(str(agent_side(db, "host_samples")[0]) for db in dbs))


if __name__ == "__main__":
    run_tests(globals())
