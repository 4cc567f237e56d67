"""Headless Chromium driven through the DevTools protocol over --remote-debugging-pipe.

Python's stdlib only: Chromium reads commands on fd 3 and writes answers and
events on fd 4, each a JSON message ended by a NUL byte.  One page (a
target attached with flatten), its console watched: uncaught exceptions
(Runtime.exceptionThrown), console.error/warn/assert (Runtime.consoleAPICalled)
and the browser's own errors and warnings (Log.entryAdded: failed loads, CSP
violations) land in Browser.console.  Its requests are followed too
(Network.*), so that settle() can tell when every message a load may still
give has come.  Every deadline is scaled (harness.scaled).

Chromium runs with every background service off and the resolver mapping
every name to NOTFOUND (as test_report_html.py), so nothing but loopback can
be reached.
"""
import base64
import fcntl
import json
import os
import subprocess
import tempfile
import threading
import time

from harness import scaled

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def have_chromium():
    return os.access(CHROMIUM, os.X_OK)


class Browser:
    def __init__(self, workdir, timeout=30):
        self.timeout = scaled(timeout)
        self.user_dir = tempfile.mkdtemp(prefix="chromium-", dir=workdir)
        self.log = open(os.path.join(workdir, "chromium.log"), "w")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # Chromium's ends, first moved above 3 and 4 so that placing one cannot clobber the other
        child_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_chrome_r)
        os.close(from_chrome_w)

        def fds():
            os.dup2(child_r, 3)  # dup2 leaves the new descriptor open across exec
            os.dup2(child_w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-breakpad", "--disable-domain-reliability",
             "--no-pings", "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
             "--hide-scrollbars", "--user-data-dir=" + self.user_dir,
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            preexec_fn=fds, close_fds=False)
        to_chrome_r, from_chrome_w = child_r, child_w
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next = 0
        self._answers = {}
        self._cond = threading.Condition()
        self.events = []
        self.console = []
        self.requests = {}  # the page's requests not yet finished or failed: id -> url
        self._closed = False
        threading.Thread(target=self._reader, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(domain + ".enable")

    def _reader(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._closed = True
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._answers[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                        self._console(msg)
                    self._cond.notify_all()

    def _console(self, msg):
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Network.requestWillBeSent" and p.get("type") != "EventSource" and \
                p["request"]["url"].startswith("http"):  # a blob: download never "finishes"
            self.requests[p["requestId"]] = p["request"]["url"]
        elif m in ("Network.loadingFinished", "Network.loadingFailed") or (
                m == "Network.responseReceived" and
                p.get("response", {}).get("mimeType") == "text/event-stream"):
            self.requests.pop(p["requestId"], None)  # an event stream never finishes
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.console.append("exception: %s %s" % (d.get("text"), d.get("exception", {}).get(
                "description", "")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            self.console.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description"))) for a in p.get("args", []))))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            e = p["entry"]
            self.console.append("log %s: %s %s" % (e["level"], e.get("text"), e.get("url", "")))

    def call(self, method, params=None, session=True, timeout=None):
        with self._cond:
            self._next += 1
            mid = self._next
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while mid not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise AssertionError("chromium: no answer to %s" % method)
                self._cond.wait(left)
            ans = self._answers.pop(mid)
        if "error" in ans:
            raise AssertionError("chromium: %s: %s" % (method, ans["error"]))
        return ans.get("result", {})

    def size(self, width, height):
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1,
                   "mobile": width < 600})

    def navigate(self, url):
        """Loads url and waits for its load event."""
        with self._cond:
            seen = len(self.events)
            self.requests.clear()  # the page left behind is no more
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + self.timeout
        with self._cond:
            while not any(e.get("method") == "Page.loadEventFired"
                          for e in self.events[seen:]):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("chromium: %s did not load" % url)
                self._cond.wait(left)

    def eval(self, expression):
        """The value of a JavaScript expression (a promise is awaited)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                           "returnByValue": True})
        if "exceptionDetails" in r:
            raise AssertionError("page: %s: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, expression, timeout=20, what=None):
        """Polls a JavaScript expression until it is truthy (in JavaScript)."""
        timeout = scaled(timeout)
        deadline = time.monotonic() + timeout
        while True:
            v = self.eval("!!(%s)" % expression)
            if v:
                return v
            if time.monotonic() > deadline:
                raise AssertionError("page: %s not true in %d s; console %r; the page says: %r" % (
                    what or expression, timeout, self.console,
                    self.eval("document.body ? document.body.innerText.slice(0, 600) : ''")))
            time.sleep(0.2)

    def settle(self, timeout=20):
        """Returns once every message the page's loads so far may give has come: no
        request of the page is in flight (a failed image, a refused fetch: each logs
        when it ends), then the page has run what it queued (a timer, a frame: a CSP
        violation's report), and still no request is in flight.  The answer to that
        last evaluation comes after every event the page sent before it."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            with self._cond:
                idle = not self.requests
            if idle:
                self.eval("new Promise(r => setTimeout(() => requestAnimationFrame("
                          "() => setTimeout(r, 0)), 0))")
                with self._cond:
                    if not self.requests:
                        return
            if time.monotonic() > deadline:
                raise AssertionError("page: requests still in flight after %d s: %r"
                                     % (scaled(timeout), sorted(self.requests.values())))
            time.sleep(0.05)

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", {"format": "png"})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
        return path

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except AssertionError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        self.log.close()
