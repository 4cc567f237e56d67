"""An agent given several heads (--head repeated, or one name with several addresses)
streams to one and moves to the next when it refuses the connection, times out or
answers 5xx, from the seq the new head says it holds: nothing lost, nothing twice.

- the first head not listening: the agent streams to the second;
- the first head takes the connection and never answers: after the request's
  timeout (30 s), the second;
- head A on store X killed with -9 mid-stream, head B started on X (a store has one
  head at a time, so B is A's successor on the same database; X is a SQLite file, or
  in test_agent_failover_pg a PostgreSQL database): the agent moves to B, and X holds
  exactly the agent's rows; /api/v1/node shows B and one move;
- a head that answers the hello and then 503: the agent moves on;
- a head that answers 401: that is our token's answer, the agent stays (no move);
- a name with two addresses: each is a head (the resolver's "localhost" when it gives
  two; else the name is given two in a private mount namespace of the agent's, the
  machine's /etc/hosts untouched; else skipped, said why).
"""
import http.server
import json
import signal
import socket
import subprocess
import threading
import time

from harness import run_tests, check, eq, free_port, wait_for, wait_progress
from agent_harness import Agent
from head_harness import (COMPARE, Head, agent_side, head_side, sql, caught_up, held, node_id,
                          skip_on_pg)


def unshared(name):
    """An agent in a UTS namespace of its own: a node of its own, named name."""
    return ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name]


def node(agent):
    """The stream's state under /api/v1/node ({} until the sender started: after the
    first tick)."""
    return agent.json("/api/v1/node")["head"] or {}


def rows_exact(head_db, agent_db):
    """The head holds each of the agent's rows once: per table, the same rows (count and
    digest of their values), and host_samples one row per tick (distinct ts_ms) as many
    as the agent stored."""
    host = sql(agent_db, "SELECT hostname FROM nodes")[0][0]
    nid = node_id(head_db, host)
    count, distinct = sql(head_db, "SELECT count(*), count(DISTINCT ts_ms) FROM host_samples"
                          " WHERE node_id = ?", nid)[0]
    mine, mine_seq = sql(agent_db, "SELECT count(*), count(DISTINCT seq) FROM host_samples")[0]
    check(mine > 0, "the agent stored host_samples")
    eq(mine_seq, mine, "the agent's host_samples seqs, distinct")
    eq((count, distinct), (mine, mine), "the head's host_samples of the node (rows, distinct"
       " ts_ms) against the agent's rows")
    for table in COMPARE:
        eq(head_side(head_db, agent_db, table), agent_side(agent_db, table),
           "%s at the head (rows, digest) against the agent's" % table)


class FakeHead:
    """A head that is not one, on loopback: answers each POST with status (and, with
    hello_ok, a hello with acked_seq 0 first, as a head that knows nothing of us)."""

    def __init__(self, status, addr="127.0.0.1", port=0, hello_ok=False):
        fake = self
        self.posts = 0
        self.hellos = 0
        self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                hello = False
                if hello_ok and not self.headers.get("Content-Encoding"):
                    try:
                        hello = "tables" not in json.loads(body)
                    except ValueError:
                        pass
                with fake.lock:
                    fake.posts += 1
                    fake.hellos += hello
                if hello:
                    code, answer = 200, {"version": 1, "acked_seq": 0, "interval_ms": None,
                                         "cuda": False, "sessions": []}
                else:
                    code, answer = status, {"error": "fake head", "status": status}
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        family = socket.AF_INET6 if ":" in addr else socket.AF_INET

        class Server(http.server.ThreadingHTTPServer):
            address_family = family
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # an agent that closes its kept-alive connection is no error

        self.server = Server((addr, port), Handler)
        self.port = self.server.server_address[1]
        host = "[%s]" % addr if family == socket.AF_INET6 else addr
        self.url = "http://%s:%d" % (host, self.port)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def count(self):
        with self.lock:
            return self.posts

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Head6(Head):
    """A head on an IPv6 address: its listening line names [addr]:port."""

    def _port(self):
        if self.proc.poll() is not None:
            raise AssertionError("the head exited: %s" % open(self.log).read())
        return self.port_wanted if "head: listening on" in open(self.log).read() else None

    def __init__(self, wd, port, **kw):
        self.port_wanted = port
        super().__init__(wd, port=port, **kw)


# an agent whose rows are compared once it stopped: at SIGTERM it waits up to 15 s
# (not 2 s) for the head to take its last tick, so that a busy machine's slow head
# still gets it before the test looks
FLUSH = ["--stop-timeout", "15s"]


def stop_and_compare(agent, head_db):
    """Stops the agent (SIGTERM: it waits, started with FLUSH, up to 15 s for the head to
    hold its last tick), waits until the head holds every row, and compares them."""
    agent.stop()
    wait_for(lambda: held(head_db, agent.db), timeout=30, what="the head to hold every row")
    rows_exact(head_db, agent.db)


def test_first_head_not_listening(wd):
    dead = "http://127.0.0.1:%d" % free_port()
    head = Head(wd)
    agent = Agent(wd, wrap=unshared("fo-first"),
                  extra=FLUSH + ["--head", dead, "--head", head.url])
    try:
        wait_for(lambda: node(agent).get("connected") and node(agent).get("url") == head.url,
                 timeout=30, what="the agent on the second head")
        wait_for(caught_up(head.db, agent.db), timeout=60, what="the second head to catch up")
        h = node(agent)
        eq(h["heads"], [{"url": dead, "address": None}, {"url": head.url, "address": None}],
           "the heads listed")
        eq(h["moves"], 0, "moves (the dead head never answered)")
        eq(h["address"], None, "address (an IP literal: curl's)")
        stop_and_compare(agent, head.db)
    finally:
        agent.kill()
        head.kill(signal.SIGTERM)


def test_kill_head_mid_stream(wd):
    x = wd.join("x.db")
    a = Head(wd, db=x, name="head-a")
    port_b = free_port()
    url_b = "http://127.0.0.1:%d" % port_b
    agent = Agent(wd, wrap=unshared("fo-kill"), extra=FLUSH + ["--head", a.url, "--head", url_b])
    b = None
    try:
        wait_for(lambda: node(agent).get("connected") and node(agent).get("url") == a.url,
                 timeout=30, what="the agent on head A")
        # streaming: A holds some rows, more come each tick (100 ms)
        wait_for(lambda: (node(agent).get("acked_seq") or 0) > 50, timeout=60,
                 what="head A holding rows")
        a.kill(signal.SIGKILL)
        b = Head(wd, db=x, port=port_b, name="head-b")
        eq(b.url, url_b, "head B's URL")
        wait_for(lambda: node(agent).get("connected") and node(agent).get("url") == url_b,
                 timeout=60, what="the agent on head B")
        eq(b.db, a.db, "head B's store (head A's)")
        wait_progress(caught_up(b.db, agent.db), lambda: node(agent)["acked_seq"], stall=60,
                      what="head B to catch up")
        h = node(agent)
        eq(h["moves"], 1, "moves")
        eq([e["url"] for e in h["heads"]], [a.url, url_b], "the heads listed")
        check("streaming there now (move 1)" in agent.stderr(),
              "the agent says it moved: %s" % agent.stderr()[-2000:])
        eq(agent.metrics()[("jobscope_agent_head_moves_total", frozenset())], 1.0,
           "jobscope_agent_head_moves_total")
        stop_and_compare(agent, b.db)
    finally:
        agent.kill()
        if b:
            b.kill(signal.SIGTERM)


def test_5xx_moves(wd):
    fake = FakeHead(503, hello_ok=True)
    head = Head(wd)
    agent = Agent(wd, wrap=unshared("fo-5xx"),
                  extra=FLUSH + ["--head", fake.url, "--head", head.url])
    try:
        wait_for(lambda: node(agent).get("connected") and node(agent).get("url") == head.url,
                 timeout=30, what="the agent on the real head")
        check(fake.hellos >= 1, "the fake head was asked first (%d hellos)" % fake.hellos)
        wait_for(caught_up(head.db, agent.db), timeout=60, what="the real head to catch up")
        eq(node(agent)["moves"], 1, "moves (the fake head answered the hello, then 503)")
        before = fake.count()
        agent.wait_ticks(10)
        eq(fake.count(), before, "requests to the 503 head once the agent moved")
        stop_and_compare(agent, head.db)
    finally:
        agent.kill()
        head.kill(signal.SIGTERM)
        fake.close()


def test_timeout_moves(wd):
    if skip_on_pg("the agent's request timing out is the same whatever the head's store"):
        return
    # a head that takes the connection and never answers: the request times out (30 s)
    stuck = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stuck.bind(("127.0.0.1", 0))
    stuck.listen(16)  # never accepted: the kernel completes the handshake, nobody reads
    stuck_url = "http://127.0.0.1:%d" % stuck.getsockname()[1]
    head = Head(wd)
    agent = Agent(wd, wrap=unshared("fo-stuck"),
                  extra=FLUSH + ["--head", stuck_url, "--head", head.url])
    try:
        wait_for(lambda: node(agent).get("connected") and node(agent).get("url") == head.url,
                 timeout=90, what="the agent on the second head after the first timed out")
        check("Timeout" in (node(agent).get("last_error") or "")
              or "timed out" in agent.stderr(), "a timeout said: %s" % agent.stderr()[-2000:])
        wait_for(caught_up(head.db, agent.db), timeout=60, what="the second head to catch up")
        stop_and_compare(agent, head.db)
    finally:
        agent.kill()
        head.kill(signal.SIGTERM)
        stuck.close()


def test_stop_timeout(wd):
    if skip_on_pg("the agent's wait at a stop is the same whatever the head's store"):
        return
    # the only head takes the connection and never answers: at SIGTERM the agent waits
    # --stop-timeout for it to take the last tick, then says so and exits 0
    stuck = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stuck.bind(("127.0.0.1", 0))
    stuck.listen(16)
    agent = Agent(wd, wrap=unshared("fo-stop"),
                  extra=["--stop-timeout", "3s", "--head",
                         "http://127.0.0.1:%d" % stuck.getsockname()[1]])
    try:
        agent.wait_ticks(3)
        t0 = time.monotonic()
        eq(agent.stop(), 0, "the agent's exit code")
        took = time.monotonic() - t0
        check(took >= 3.0, "the agent waited its --stop-timeout (3 s) for the head: %.2f s"
              % took)
        check("the head does not hold the last rows yet" in agent.stderr(),
              "the rows the head lacks said: %s" % agent.stderr()[-2000:])
    finally:
        agent.kill()
        stuck.close()


def test_401_stays(wd):
    fake = FakeHead(401)
    head = Head(wd)
    agent = Agent(wd, wrap=unshared("fo-401"), extra=["--head", fake.url, "--head", head.url])
    try:
        wait_for(lambda: node(agent).get("refused"), timeout=30, what="the agent refused")
        agent.wait_ticks(10)
        h = node(agent)
        eq((h["url"], h["refused"], h["connected"], h["moves"]), (fake.url, True, False, 0),
           "(url, refused, connected, moves) after a 401")
        eq(fake.count(), 1, "requests to the refusing head (asked again in a minute)")
        eq(sql(head.db, "SELECT count(*) FROM agents")[0][0], 0, "agents at the other head")
        check("the head wants a token" in agent.stderr(), "the refusal said")
    finally:
        agent.kill()
        head.kill(signal.SIGTERM)
        fake.close()


def addresses(name, wrap=()):
    """The addresses of name, in the resolver's order (as the agent asks it: any family,
    stream sockets), each once; under wrap (a private mount namespace) when given."""
    code = ("import socket, json\n"
            "seen = []\n"
            "for ai in socket.getaddrinfo(%r, None, 0, socket.SOCK_STREAM):\n"
            "    a = ai[4][0]\n"
            "    seen.append(a) if a not in seen else None\n"
            "print(json.dumps(seen))\n" % name)
    try:
        r = subprocess.run(list(wrap) + ["python3", "-c", code], capture_output=True,
                           text=True, timeout=30)
    except OSError:
        return []
    return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else []


def loopback6():
    """Whether ::1 can be listened on here (IPv6 not turned off)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def private_hosts(wd, name):
    """A command prefix that runs a command with name resolving to 127.0.0.1 and ::1,
    /etc/hosts bound over in a mount namespace of its own (the machine's is not
    changed); None when that cannot be done here."""
    if not loopback6():
        return None
    hosts = wd.join("hosts")
    with open(hosts, "w") as f:
        f.write("127.0.0.1 localhost\n::1 %s\n127.0.0.1 %s\n" % (name, name))
    wrap = ["unshare", "--mount", "sh", "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"', hosts]
    return wrap if len(addresses(name, wrap)) == 2 else None


def test_name_with_two_addresses(wd):
    name, wrap = "localhost", []
    addrs = addresses(name)
    if len(addrs) < 2:
        why = "the resolver gives %s for localhost" % (addrs or "nothing")
        name = "js-heads.test"
        wrap = private_hosts(wd, name)
        if wrap is None:
            print("SKIP test_name_with_two_addresses: %s, and a private /etc/hosts cannot"
                  " be mounted here (or ::1 cannot be listened on)" % why, flush=True)
            return
        print("note: %s; %s is given 127.0.0.1 and ::1 in the agent's own mount"
              " namespace" % (why, name), flush=True)
        addrs = addresses(name, wrap)
    first, second = addrs[0], addrs[1]
    # the first address answers 503, the second is the head, on the same port
    fake = FakeHead(503, addr=first)
    port = fake.port
    if ":" in second:
        head = Head6(wd, port, addr="[%s]" % second)
    else:
        head = Head(wd, port=port, addr=second)
    url = "http://%s:%d" % (name, port)
    agent = Agent(wd, wrap=wrap + unshared("fo-name"), extra=FLUSH + ["--head", url])
    try:
        wait_for(lambda: node(agent).get("connected"), timeout=30, what="the agent on the head")
        h = node(agent)
        eq((h["url"], h["address"]), (url, second), "the head it is on (url, address)")
        eq(h["heads"], [{"url": url, "address": first}, {"url": url, "address": second}],
           "the heads: one per address, in the resolver's order")
        check(fake.count() >= 1, "the first address was tried")
        wait_for(caught_up(head.db, agent.db), timeout=60, what="the head to catch up")
        stop_and_compare(agent, head.db)
    finally:
        agent.kill()
        head.kill(signal.SIGTERM)
        fake.close()


run_tests(globals())
