"""`jobscope report --format html`: one self-contained page.

Real runs (a CPU/memory/I/O workload; a fake two-GPU run) are stored, the
page is made by the CLI and checked as text (well-formed, no script, no
URL, everything escaped, every chart there, gaps left as gaps), then loaded
in headless Chromium at a wide and a phone window size: no console message
at all, and a PNG screenshot each time.  The console detector is proven
able to fail on a page with a script error and on the report with an
external image slipped in.

Chromium: $CHROMIUM or /usr/bin/chromium.  Without it the browser part is
skipped with a message, unless $CI is set: then it fails.  Chromium runs
with every background service off and the resolver mapping every name to
NOTFOUND, so nothing but loopback can be contacted.
"""
import html
import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

from harness import run, helper, jobscope, run_tests, check, eq, scaled

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_TIMEOUT_S = 60
WINDOWS = [(1280, 2000), (390, 2000)]  # wide screen, phone
HOSTILE = '<b>&"x"'  # an argv word that must come out escaped
HOSTILE_ESCAPED = "&lt;b&gt;&amp;&quot;x&quot;"
# control characters (C0, C1 as UTF-8) and a byte that is not UTF-8: U+FFFD each
CONTROLS = b"a\x01b\xc2\x85c\xffd"
CONTROLS_SHOWN = "a\ufffdb\ufffdc\ufffdd"

# Two GPUs, both the command's; GPU 1 falls off the bus at 1.2 s, so its
# series must end there (a gap, not a drop to 0).  An XID to mark.
GPU_SCENARIO = """
driver 535.104.05
device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100-SXM4-80GB" bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=12
device 1 uuid=GPU-11111111-1111-1111-1111-111111111111 name="NVIDIA A100-SXM4-80GB" bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=12
at 0 0 util=60 mem_util=25 mem_used=12884901888 power=200000 temp=61
at 1 0 util=90 mem_used=25769803776 power=300000
at 0 1 util=30 mem_util=5 mem_used=4294967296 power=100000 temp=50
proc 0 pid=file:{pidfile} mem=8589934592 sm=80 memutil=30
proc 1 pid=file:{pidfile} mem=2147483648 sm=30 memutil=5
xid 0 at=0.8 code=79
lost 1 at=1.2
"""

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class StrictParser(html.parser.HTMLParser):
    """html.parser never raises; this one fails on what a browser would repair:
    an end tag that does not close the open element, an element left open,
    a stray declaration, an unknown entity.  It records tags and attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.stack = []
        self.errors = []
        self.tags = []  # (tag, attrs dict) in document order
        self.decls = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes %r at %r" % (tag, self.stack[-1:],
                                                         self.getpos()))
            return
        self.stack.pop()

    def handle_decl(self, decl):
        self.decls.append(decl)

    def handle_entityref(self, name):
        if name not in ("amp", "lt", "gt", "quot"):
            self.errors.append("entity &%s; at %r" % (name, self.getpos()))

    def unknown_decl(self, data):
        self.errors.append("unknown declaration %r" % data)


def parse_page(text):
    p = StrictParser()
    p.feed(text)
    p.close()
    check(not p.errors, "markup errors: %r" % p.errors[:5])
    eq(p.stack, [], "elements left open")
    eq(p.decls, ["DOCTYPE html"], "declarations")
    return p


def check_self_contained(text, p):
    """No script, no URL, nothing fetched, no raw control character."""
    low = text.lower()
    check("<script" not in low, "a <script> in the page")
    check("http://" not in low and "https://" not in low, "an http(s) URL in the page")
    check("@import" not in low, "a CSS @import")
    for m in re.finditer(r"url\(\s*['\"]?([^'\")]*)", low):
        check(m.group(1).startswith("data:"), "a CSS url() that is not data: %r" % m.group(0))
    for tag, attrs in p.tags:
        for name in ("src", "href", "srcset", "action", "data", "poster", "xlink:href"):
            value = attrs.get(name)
            if value is None:
                continue
            check(value.startswith("data:") or (name == "href" and value.startswith("#")),
                  "<%s %s=%r> points outside the page" % (tag, name, value))
        check(not any(k.startswith("on") for k in attrs), "an event handler on <%s>" % tag)
    bad = re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]", text)
    check(bad is None, "a raw control character: %r" % (bad and bad.group(0)))
    check(not re.search(r"\b(nan|inf)\b", low), "nan or inf printed")


def check_head(text, p):
    check(text.startswith("<!DOCTYPE html>"), "starts with the doctype: %r" % text[:40])
    metas = [a for t, a in p.tags if t == "meta"]
    check({"charset": "utf-8"} in metas, "meta charset: %r" % metas)
    check({"name": "viewport", "content": "width=device-width, initial-scale=1"} in metas,
          "meta viewport: %r" % metas)
    csp = [a.get("content", "") for a in metas if a.get("http-equiv") == "Content-Security-Policy"]
    check(csp and "default-src 'none'" in csp[0], "a CSP that forbids fetching: %r" % csp)
    eq(sum(1 for t, _ in p.tags if t == "style"), 1, "one <style>")


def check_sections(text):
    """The sections, in the order the issue asks for."""
    ids = ["<header>", 'id="verdicts"', 'id="figures"', 'id="analysis"', 'id="charts"',
           'id="processes"', 'id="events"', "<footer>"]
    at = [text.find(i) for i in ids]
    check(all(a >= 0 for a in at), "sections missing: %r" % [i for i, a in zip(ids, at) if a < 0])
    eq(at, sorted(at), "section order")


def json_report(db):
    p = jobscope("report", "--db", db, "--format", "json")
    eq(p.returncode, 0, "jobscope report --format json: %s" % p.stderr)
    return json.loads(p.stdout)


def check_verdicts(db, text):
    """Every verdict of the JSON report, in its order, coloured by severity,
    with its advice and an evidence table."""
    verdicts = json_report(db)["verdicts"]
    shown = re.findall(r'<div class="verdict (info|warning|critical)">\n<p><span class="badge">'
                       r'\1</span>(.*?)<span class="kind">([a-z_]+)</span>', text)
    eq([(s, k) for s, _, k in shown], [(v["severity"], v["kind"]) for v in verdicts],
       "verdicts (severity, kind)")
    section = html.unescape(text[text.find('id="verdicts"'):text.find('id="figures"')])
    for v in verdicts:
        check(v["message"] in section, "message %r" % v["message"])
        if v.get("advice"):
            check(v["advice"] in section, "advice %r" % v["advice"])
    eq(text.count('<table class="evidence">'), sum(1 for v in verdicts if v["evidence"]),
       "one evidence table per verdict with evidence")
    if not verdicts:
        check("Nothing to fix" in text, "no verdict said so")


def svg_blocks(text):
    """{id: svg text} for every chart."""
    return {m.group(1): m.group(0) for m in
            re.finditer(r'<svg class="chart" id="([a-z-]+)".*?</svg>', text, re.S)}


def check_chart(svg, name, y_title):
    check('viewBox="0 0 ' in svg, "%s has a viewBox" % name)
    check(">%s</text>" % y_title in svg, "%s: y axis title %r" % (name, y_title))
    check(re.search(r">time since start \((s|min|h)\)</text>", svg), "%s: x axis title" % name)
    check('<path class="s"' in svg, "%s draws a line" % name)


def paths(svg):
    """[(colour, [(x, y), ...])] of the series of a chart."""
    out = []
    for m in re.finditer(r'<path class="s" stroke="(#[0-9a-f]+)" d="([^"]*)"', svg):
        pts = [(float(x), float(y)) for x, y in re.findall(r"[ML]([\d.]+) ([\d.]+)", m.group(2))]
        out.append((m.group(1), pts))
    return out


# ---- Chromium ----

def chromium_args(user_dir, png, size, url):
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-breakpad", "--disable-domain-reliability",
            "--no-pings", "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND",
            "--user-data-dir=" + user_dir, "--enable-logging=stderr", "--v=0",
            "--screenshot=" + png, "--window-size=%d,%d" % size, url]


def chromium_load(wd, page, size, tag):
    """Loads page at a window size; returns (console lines, png path)."""
    png = wd.join("%s-%dx%d.png" % (tag, size[0], size[1]))
    user_dir = tempfile.mkdtemp(prefix="chromium-", dir=wd.path)
    proc = subprocess.Popen(chromium_args(user_dir, png, size, "file://" + page),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace",
                            start_new_session=True, cwd=wd.path)
    try:
        out, err = proc.communicate(timeout=scaled(CHROMIUM_TIMEOUT_S))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("chromium did not finish in %d s on %s" % (scaled(CHROMIUM_TIMEOUT_S),
                                                                     page))
    finally:
        try:  # its helpers (zygote, crashpad) share the session: none outlives the test
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    eq(proc.returncode, 0, "chromium exit status (stderr tail: %r)" % err[-2000:])
    console = [l for l in (out + err).splitlines() if "CONSOLE" in l]
    return console, png


def check_png(png):
    check(os.path.exists(png), "no screenshot %s" % png)
    with open(png, "rb") as f:
        data = f.read()
    eq(data[:8], b"\x89PNG\r\n\x1a\n", "PNG signature of %s" % png)
    check(len(data) > 10 * 1024, "%s is only %d bytes" % (png, len(data)))


def have_chromium():
    """True to go on; False (after saying so) to skip; fails under CI."""
    if os.access(CHROMIUM, os.X_OK):
        return True
    check(not os.environ.get("CI"), "CI is set and %s is missing: the browser test must run"
          % CHROMIUM)
    print("SKIP browser checks: %s is not installed (set CI=1 to make this fail)" % CHROMIUM)
    return False


def browser_check(wd, page, tag):
    if not have_chromium():
        return
    for size in WINDOWS:
        console, png = chromium_load(wd, page, size, tag)
        eq(console, [], "console messages at %dx%d" % size)
        check_png(png)
        keep = os.environ.get("KEEP_SCREENSHOTS")
        if keep:
            shutil.copy(png, keep)


# ---- the runs ----

def make_report(wd, db):
    page = wd.join("r.html")
    p = jobscope("report", "--db", db, "--format", "html", "-o", page)
    eq(p.returncode, 0, "jobscope report --format html: %s" % p.stderr)
    eq(p.stderr, "", "jobscope report's stderr (a sanitizer report?)")
    with open(page, encoding="utf-8") as f:  # strict: fails on bytes that are not UTF-8
        return page, f.read()


def cpu_run(wd):
    """A real workload: a busy thread, 64 MiB touched, 32 MiB written; hostile argv words."""
    script = "%s --seconds 2.5 & %s --mib 64 --hold 1.5; %s --mib 32 --path %s --fsync; wait" % (
        helper("busy"), helper("memtouch"), helper("writer"), wd.join("out.bin"))
    db = wd.join("cpu.db")
    r = run(wd, ["sh", "-c", script, HOSTILE, CONTROLS], db=db, opts=["--interval", "100ms"])
    eq(r.rc, 0, "jobscope run: %s" % r.stderr)
    return db, r


def gpu_run(wd):
    scn = wd.join("gpu.scn")
    with open(scn, "w") as f:
        f.write(GPU_SCENARIO.replace("{pidfile}", wd.join("pid")))
    env = dict(os.environ)
    env.update({"JOBSCOPE_NVML_LIBRARY": NVML, "JOBSCOPE_ROCM_SMI_LIBRARY": "/nonexistent",
                "FAKE_GPU_SCENARIO": scn})
    cmd = ["sh", "-c", "echo $$ > %s; exec %s --seconds 2.5" % (wd.join("pid"), helper("busy"))]
    db = wd.join("gpu.db")
    r = run(wd, cmd, db=db, opts=["--interval", "100ms"], env=env)
    eq(r.rc, 0, "jobscope run: %s" % r.stderr)
    eq(len(r.report["gpus"]), 2, "both fake GPUs are the command's")
    return db, r


# ---- tests ----

def test_console_detector_can_fail(wd):
    """The detector sees a script error, and the report's CSP blocks (and
    reports) an external image slipped into it: so an empty list means it."""
    if not have_chromium():
        return
    bad = wd.join("bad.html")
    with open(bad, "w") as f:
        f.write("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>bad</title></head>"
                "<body><p>x</p><script>undefined_fn()</script></body></html>")
    console, png = chromium_load(wd, bad, WINDOWS[0], "bad")
    check(any("undefined_fn" in l for l in console), "script error not seen: %r" % console)
    check_png(png)

    db, _ = cpu_run(wd)
    page, text = make_report(wd, db)
    leak = wd.join("leak.html")
    with open(leak, "w", encoding="utf-8") as f:
        f.write(text.replace("</main>", '<img src="https://example.invalid/x.png" alt=""></main>'))
    console, _ = chromium_load(wd, leak, WINDOWS[0], "leak")
    check(any("example.invalid" in l for l in console),
          "the CSP let an external image load silently: %r" % console)


def test_cpu_report(wd):
    db, r = cpu_run(wd)
    page, text = make_report(wd, db)
    p = parse_page(text)
    check_head(text, p)
    check_self_contained(text, p)
    check_sections(text)
    # the command, escaped wherever it is shown, raw nowhere
    check(HOSTILE not in text and "<b>" not in text, "the command's markup came out raw")
    check(text.count(HOSTILE_ESCAPED) >= 2, "the escaped command in <title> and the header")
    check(HOSTILE_ESCAPED + " " + CONTROLS_SHOWN + "</code>" in text,
          "control characters and a bad byte replaced in the header's command")
    check("<title>jobscope run %d: " % r.report["run"]["id"] in text, "the title")
    check_verdicts(db, text)
    # the charts this job has, none for GPUs
    svgs = svg_blocks(text)
    eq(sorted(svgs), ["chart-cpu", "chart-io", "chart-memory"], "charts")
    eq(text.count("<svg"), 3, "no other svg")
    check_chart(svgs["chart-cpu"], "cpu", "CPU (cores)")
    check_chart(svgs["chart-memory"], "memory", "memory (MiB)")
    check(re.search(r">I/O \((KiB|MiB|GiB)/s\)</text>", svgs["chart-io"]), "I/O axis in a rate")
    check('class="ref"' in svgs["chart-cpu"], "the CPU chart's dashed line at the cores allowed")
    check("allowed: %d cores" % r.report["cpu"]["cores_allowed"] in text, "its legend")
    check("No GPU on this node" in text, "said there are no GPU charts")
    # missing figures are dashes, not zeros
    check("GPU utilization mean / p95</div><div class=\"v\">\u2014 / \u2014</div>" in text,
          "GPU utilization missing, shown as dashes")
    # the exit event, in the list and on the charts
    check("<code>exit</code>" in text, "the exit event listed")
    check("<title>#" in svgs["chart-cpu"], "events marked on the charts")
    rows = re.findall(r'<tr><td class="n">(\d+)</td><td class="n">\d+</td>', text)
    seen = json_report(db)["processes"]
    check(len(seen) >= 3, "sh, js-busy and js-memtouch seen: %r" % seen)
    eq(len(rows), min(len(seen), 15), "rows in the processes table")
    if len(seen) <= 15:
        eq(sorted(map(int, rows)), sorted(p["pid"] for p in seen), "the processes' pids")
    browser_check(wd, page, "cpu")


def test_gpu_report(wd):
    db, r = gpu_run(wd)
    page, text = make_report(wd, db)
    p = parse_page(text)
    check_head(text, p)
    check_self_contained(text, p)
    check_sections(text)
    svgs = svg_blocks(text)
    for name in ("chart-cpu", "chart-memory", "chart-io", "chart-gpu-util", "chart-gpu-memory",
                 "chart-gpu-power"):
        check(name in svgs, "chart %s missing: %r" % (name, sorted(svgs)))
    check_chart(svgs["chart-gpu-util"], "gpu util", "utilization (%)")
    check_chart(svgs["chart-gpu-memory"], "gpu memory", "GPU memory (GiB)")
    check_chart(svgs["chart-gpu-power"], "gpu power", "power (W)")
    check(">GPU 0</li>" in text and ">GPU 1</li>" in text, "a legend entry per device")
    check("device memory: 80.0 GiB" in text, "GPU memory's dashed line at the device's size")
    # GPU 1 is lost at 1.2 s: its line stops there instead of dropping to 0
    util = paths(svgs["chart-gpu-util"])
    eq(len(util), 2, "one utilization line per device")
    g0, g1 = util[0][1], util[1][1]
    check(max(x for x, _ in g1) < max(x for x, _ in g0) - 100,
          "GPU 1's line ends when it is lost: %r vs %r" % (g1[-1:], g0[-1:]))
    eq(len({y for _, y in g1}), 1, "GPU 1 stays at 30%% while it is there, no 0: %r" % g1)
    check(len({y for _, y in g0}) >= 2, "GPU 0 goes from 60% to 90%")
    check(re.search(r"<title>#\d+ \+[^<]*xid", svgs["chart-gpu-util"]), "the XID marked")
    check("GPUs reserved / touched / busy</div><div class=\"v\">\u2014 / 2 / 2</div>" in text,
          "GPUs: none reserved (a plain run), 2 touched, 2 busy")
    check(re.search(r"GPU utilization mean / p95</div><div class=\"v\">\d+\.\d% / \d+%</div>",
                    text), "GPU utilization figures")
    browser_check(wd, page, "gpu")


if __name__ == "__main__":
    run_tests(globals())
