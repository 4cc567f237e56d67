"""Garbage sent to a head: every error one JSON answer, sent once, or a close at once.

A real `jobscope head` on 127.0.0.1 port 0 gets, on raw sockets: bytes that are no
request line (a TLS hello, a line of words), a Content-Length over the head's body
cap and one over 64 bits, a bad Content-Length, a request line longer than the
server takes (414) and headers too (431), a half request then a close, and an event
stream its client drops.  Each is answered within a short deadline (never held
until a timeout) with exactly one status line and a JSON body {"error", "status"},
Content-Type application/json; the head still answers a normal request afterwards,
and its log holds no line that is not its own.
"""
import json
import re
import socket
import struct
import time

from harness import run_tests, check, eq, scaled
from head_harness import Head

DEADLINE = 3.0  # seconds an answer or a close may take (scaled): far below the header timeout


def exchange(head, data, shut=False):
    """Sends data on a new connection; what comes back until the server closes it, and
    the seconds that took (an AssertionError if it is held past the deadline)."""
    s = socket.create_connection(("127.0.0.1", head.port), timeout=scaled(DEADLINE))
    start = time.monotonic()
    out = b""
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            except socket.timeout:
                raise AssertionError("held %.1f s with no close after %r: got %r"
                                     % (time.monotonic() - start, data[:60], out[:300]))
            if not b:
                break
            out += b
    finally:
        s.close()
    return out, time.monotonic() - start


def one_json_error(out, status, what):
    """out is exactly one answer: its status line once, JSON headers, a JSON body."""
    eq(len(re.findall(rb"(?:^|\n)HTTP/1\.[01] \d{3} ", out)), 1,
       "%s: status lines in %r" % (what, out[:400]))
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    eq(lines[0].split(" ")[1], str(status), "%s: status line %r" % (what, lines[0]))
    fields = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    eq(fields.get("content-type"), "application/json", "%s: content type" % what)
    eq(int(fields.get("content-length", -1)), len(body), "%s: body length" % what)
    doc = json.loads(body)
    eq(doc["status"], status, "%s: body status" % what)
    check(isinstance(doc["error"], str) and doc["error"], "%s: an error message: %r" % (what, doc))
    return doc


def still_answers(head):
    eq(head.get("/status")["is_profiling"], False, "the head answers /status")


def test_garbage_is_answered_or_closed_at_once(wd):
    head = Head(wd)
    # raw bytes that can start no request line: answered at once, no line end needed
    tls_hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 32
    for what, data in (("a TLS hello", tls_hello), ("a line of words", b"hello there\r\n"),
                       ("a binary blob", bytes(range(256)))):
        out, took = exchange(head, data)
        check(took < scaled(DEADLINE), "%s: answered in %.1f s" % (what, took))
        one_json_error(out, 400, what)
    # a POST body larger than the head takes (64 MiB): the handler's 413, its body unread
    req = (b"POST /api/v1/ingest HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n")
    one_json_error(exchange(head, req % (100 << 30))[0], 413, "Content-Length 100 GiB")
    # one over 64 bits (libmicrohttpd, the server before ours, sent its status line twice)
    over = req.replace(b"%d", b"99999999999999999999999")
    one_json_error(exchange(head, over)[0], 413, "Content-Length over 64 bits")
    one_json_error(exchange(head, req.replace(b"%d", b"12abc"))[0], 400, "a bad Content-Length")
    # a request line longer than the server holds: 414; headers longer: 431
    long_uri = b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    one_json_error(exchange(head, long_uri)[0], 414, "a long URI")
    long_header = b"GET /status HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 20000 + b"\r\n\r\n"
    one_json_error(exchange(head, long_header)[0], 431, "a long header")
    one_json_error(exchange(head, b"GET /status HTTP/1.1\r\nno colon here\r\n\r\n")[0], 400,
                   "a header line without a colon")
    # a half request, then the client's close: closed at once, nothing sent
    out, took = exchange(head, b"GET /status HTTP/1.1\r\nHost: x\r\n", shut=True)
    eq(out, b"", "a half request's answer")
    check(took < scaled(DEADLINE), "a half request closed in %.1f s" % took)
    # a head as long as the server takes passes through whole
    pad = b"x" * (8192 - len(b"GET /status?p= HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
    out, _ = exchange(head, b"GET /status?p=" + pad + b" HTTP/1.1\r\nHost: x\r\n"
                      b"Connection: close\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 200 "), "an 8 KiB head: %r" % out[:100])
    # a keep-alive connection: two requests on one socket, both answered
    s = socket.create_connection(("127.0.0.1", head.port), timeout=scaled(DEADLINE))
    try:
        f = s.makefile("rb")
        for i in range(2):
            s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
            line = f.readline()
            check(line.startswith(b"HTTP/1.1 200"), "keep-alive request %d: %r" % (i, line))
            length = 0
            while True:
                h = f.readline()
                if h in (b"\r\n", b""):
                    break
                if h.lower().startswith(b"content-length:"):
                    length = int(h.split(b":")[1])
            json.loads(f.read(length))
    finally:
        s.close()
    still_answers(head)
    eq(head.kill(), -9, "head killed")


def test_dropped_event_stream_is_quiet(wd):
    """A dashboard tab closed mid-stream: the failed write is not printed, the head goes on."""
    head = Head(wd)
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", head.port), timeout=scaled(5))
        s.sendall(b"GET /ui/events?topics=nodes,jobs HTTP/1.1\r\nHost: x\r\n\r\n")
        check(s.recv(100).startswith(b"HTTP/1.1 200"), "the stream's answer")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset, as a closed tab's
    # the streams' next rounds write to the closed sockets (one per watch interval, 1 s)
    time.sleep(2.5)  # nothing to poll for: the absence of a line is what is checked
    still_answers(head)
    lines = [ln for ln in open(head.log).read().splitlines() if ln]
    check(all(ln.startswith("jobscope: ") for ln in lines), "only our own lines: %r" % lines)
    check(not any("Failed to send" in ln for ln in lines), "no failed-send line: %r" % lines)
    eq(head.kill(), -9, "head killed")


run_tests(globals())
