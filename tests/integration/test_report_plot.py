"""`jobscope report --plot`: real runs (CPU, fake GPUs) drawn to PNG, SVG and PDF.

The PNG is decoded with the standard library alone (chunks, CRCs, zlib,
row filters) to check that lines were really drawn across the time axis.
"""
import os
import re
import struct
import zlib
import xml.etree.ElementTree as ET

from harness import run, helper, jobscope, machine_cpus, plot_env, run_tests, check, eq

FAKES = os.environ.get("FAKES", "")
NVML = os.path.join(FAKES, "libnvidia-ml.so.1")

# The layout of src/report/plot.c: header, event band and time axis caption,
# then 180 px per panel and 120 px per device panel (multi-GPU jobs).
WIDTH = 1200
FRAME_H = 56 + 16 + 30
PANEL_H = 180
DEVICE_PANEL_H = 120
MARGIN_LEFT, MARGIN_RIGHT = 86, 24

DEVICE0 = ('device 0 uuid=GPU-00000000-0000-0000-0000-000000000000 name="NVIDIA A100-SXM4-80GB" '
           'bus=00000000:07:00.0 mem_total=85899345920 power_limit=400000 nvlinks=12\n')
DEVICE1 = ('device 1 uuid=GPU-11111111-1111-1111-1111-111111111111 name="NVIDIA A100-SXM4-80GB" '
           'bus=00000000:0F:00.0 mem_total=85899345920 power_limit=400000 nvlinks=12\n')
# utilization, memory, traffic and power that change over the run
STEPS0 = """
at 0 0 util=20 mem_used=12884901888 pcie_tx_kbps=500 pcie_rx_kbps=1000 power=150000 nvlink_rx_kib=0 nvlink_tx_kib=0
at 0.5 0 util=90 mem_used=34359738368 power=330000 nvlink_rx_kib=100000 nvlink_tx_kib=50000
at 1.0 0 util=40 power=200000 nvlink_rx_kib=300000 nvlink_tx_kib=150000
proc 0 pid=file:{pidfile} mem=8589934592 sm=80 memutil=30
xid 0 at=0.7 code=79
"""
STEPS1 = """
at 0 1 util=10 mem_used=4294967296 pcie_tx_kbps=200 pcie_rx_kbps=300 power=90000 nvlink_rx_kib=0 nvlink_tx_kib=0
at 0.5 1 util=70 mem_used=21474836480 power=280000 nvlink_rx_kib=80000 nvlink_tx_kib=40000
proc 1 pid=file:{pidfile} mem=8589934592 sm=60 memutil=30
"""


def gpu_env(wd, scenario):
    path = wd.join("scenario.scn")
    with open(path, "w") as f:
        f.write(scenario.replace("{pidfile}", wd.join("pid")))
    env = dict(os.environ)
    env.update({"JOBSCOPE_NVML_LIBRARY": NVML, "JOBSCOPE_ROCM_SMI_LIBRARY": "/nonexistent",
                "FAKE_GPU_SCENARIO": path})
    return env


def busy_cmd(wd, seconds):
    # the command writes its pid where the fake GPU reads its process list from
    return ["sh", "-c", "echo $$ > %s; exec %s --seconds %s" % (wd.join("pid"), helper("busy"),
                                                               seconds)]


def run_job(wd, db, seconds="1.5", env=None, on_time=False):
    """A real run stored in db; returns its id.  on_time: in machine_cpus(), for a test
    that counts the lines drawn: a plot breaks its lines where a tick is missing, and
    on a loaded machine jobscope run's 100 ms ticks came late (lines across 559 of
    1090 columns at a load of 25)."""
    def go():
        return run(wd, busy_cmd(wd, seconds), db=db, opts=["--interval", "100ms"], env=env)
    if on_time:
        with machine_cpus("a run whose plot must be whole"):
            r = go()
    else:
        r = go()
    eq(r.rc, 0, "jobscope run exit code: %s" % r.stderr)
    return str(r.report["run"]["id"])


def gpu_job(wd, db, devices, on_time=False):
    scenario = "driver 535.104.05\n" + DEVICE0 + STEPS0
    if devices == 2:
        scenario = "driver 535.104.05\n" + DEVICE0 + DEVICE1 + STEPS0 + STEPS1
    return run_job(wd, db, env=gpu_env(wd, scenario), on_time=on_time)


def report_plot(wd, db, run_id, path, extra_env=None):
    """jobscope report --plot; under ASan, fontconfig's process-wide caches
    (allocated once when cairo first picks a font, never freed) are not
    counted as leaks."""
    env = plot_env()
    env.update(extra_env or {})
    return jobscope("report", "--db", db, "--plot", path, run_id, env=env)


def plot(wd, db, run_id, path):
    p = report_plot(wd, db, run_id, path)
    eq(p.returncode, 0, "report --plot %s exit code (stderr %r)" % (path, p.stderr))
    check(os.path.getsize(path) > 0, "%s written" % path)
    return p


# ---- PNG with the standard library ----

class Png:
    def __init__(self, width, height, bpp, rows):
        self.width, self.height, self.bpp, self.rows = width, height, bpp, rows

    def pixel(self, x, y):
        row = self.rows[y]
        return tuple(row[x * self.bpp:x * self.bpp + 3])


def png_chunks(data):
    eq(data[:8], b"\x89PNG\r\n\x1a\n", "PNG signature")
    pos, chunks = 8, []
    while pos < len(data):
        check(pos + 12 <= len(data), "chunk header past the end of the file")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        check(pos + 12 + length <= len(data), "chunk %r past the end of the file" % kind)
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        eq(zlib.crc32(kind + body) & 0xffffffff, crc, "CRC of chunk %r" % kind)
        chunks.append((kind, body))
        pos += 12 + length
        if kind == b"IEND":
            break
    eq(chunks[0][0], b"IHDR", "first chunk")
    eq(chunks[-1][0], b"IEND", "last chunk")
    return chunks


def png_size(path):
    with open(path, "rb") as f:
        chunks = png_chunks(f.read())
    return struct.unpack(">II", chunks[0][1][:8])


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def unfilter(kind, line, prev, bpp):
    """Undoes one row's filter (PNG spec, section 9) in place."""
    n = len(line)
    if kind == 1:
        for i in range(bpp, n):
            line[i] = (line[i] + line[i - bpp]) & 0xff
    elif kind == 2:
        for i in range(n):
            line[i] = (line[i] + prev[i]) & 0xff
    elif kind == 3:
        for i in range(n):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xff
    elif kind == 4:
        for i in range(n):
            left = line[i - bpp] if i >= bpp else 0
            up_left = prev[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + paeth(left, prev[i], up_left)) & 0xff
    else:
        check(kind == 0, "unknown PNG filter %d" % kind)


def png_decode(path):
    with open(path, "rb") as f:
        chunks = png_chunks(f.read())
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    eq(depth, 8, "bit depth")
    check(colour in (2, 6), "RGB or RGBA, got colour type %d" % colour)
    eq(interlace, 0, "not interlaced")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    stride = width * bpp
    eq(len(raw), height * (stride + 1), "decompressed image size")
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = bytearray(raw[start + 1:start + 1 + stride])
        unfilter(raw[start], line, prev, bpp)
        rows.append(line)
        prev = line
    return Png(width, height, bpp, rows)


def drawn_lines(png):
    """Pixels of coloured lines (series, events) inside the panels: x spread and count.

    Background, grid, frame, limit lines and text are all grey; only the
    lines carry colour.
    """
    top, bottom = FRAME_H - 30, png.height - 30
    xs, count = set(), 0
    for y in range(top, bottom):
        row = png.rows[y]
        for x in range(MARGIN_LEFT + 2, png.width - MARGIN_RIGHT - 2):
            o = x * png.bpp
            r, g, b = row[o], row[o + 1], row[o + 2]
            if max(r, g, b) - min(r, g, b) > 60:
                count += 1
                xs.add(x)
    return count, xs


# ---- tests ----

def test_cpu_run_png(wd):
    db = wd.join("store.db")
    run_id = run_job(wd, db, on_time=True)
    path = wd.join("cpu.png")
    plot(wd, db, run_id, path)
    png = png_decode(path)
    eq(png.width, WIDTH, "PNG width")
    panels = (png.height - FRAME_H) / PANEL_H
    check(panels in (2, 3), "CPU, memory and maybe I/O panels: height %d" % png.height)
    eq(png.pixel(2, 2), (255, 255, 255), "white background")
    count, xs = drawn_lines(png)
    check(count > 2000, "lines drawn in the panels: %d coloured pixels" % count)
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    check(len(xs) > 0.8 * plot_w, "lines across the time axis: %d of %d columns" % (len(xs), plot_w))


def test_svg_and_pdf(wd):
    db = wd.join("store.db")
    run_id = run_job(wd, db)
    png_path, svg_path, pdf_path = wd.join("a.png"), wd.join("a.svg"), wd.join("a.PDF")
    plot(wd, db, run_id, png_path)
    plot(wd, db, run_id, svg_path)
    plot(wd, db, run_id, pdf_path)  # the extension in any case
    width, height = png_size(png_path)

    root = ET.parse(svg_path).getroot()
    eq(root.tag, "{http://www.w3.org/2000/svg}svg", "SVG root")
    eq(root.get("width"), "%dpt" % width, "SVG width")
    eq(root.get("height"), "%dpt" % height, "SVG height: the same layout as the PNG")
    ns = "{http://www.w3.org/2000/svg}"
    paths = root.findall(".//%spath" % ns)
    glyphs = root.findall(".//%suse" % ns)  # cairo writes text as glyph references
    check(len(paths) > 20, "SVG paths: %d" % len(paths))
    check(len(glyphs) > 100, "SVG text (glyph uses): %d" % len(glyphs))

    with open(pdf_path, "rb") as f:
        pdf = f.read()
    check(pdf.startswith(b"%PDF-"), "PDF header: %r" % pdf[:8])
    check(pdf.rstrip().endswith(b"%%EOF"), "PDF trailer: %r" % pdf[-16:])
    box = re.search(rb"/MediaBox \[\s*0 0 ([0-9.]+) ([0-9.]+)\s*\]", pdf)
    check(box, "a page with a MediaBox")
    eq((float(box.group(1)), float(box.group(2))), (width, height), "PDF page size")


def test_multi_gpu_per_device_panels(wd):
    one, two = wd.join("one.db"), wd.join("two.db")
    one_id = gpu_job(wd, one, 1)
    two_id = gpu_job(wd, two, 2, on_time=True)  # its lines are counted
    cpu = wd.join("cpu.db")
    cpu_id = run_job(wd, cpu)
    for db, run_id, name in ((one, one_id, "one.png"), (two, two_id, "two.png"),
                             (cpu, cpu_id, "cpu.png")):
        plot(wd, db, run_id, wd.join(name))
    _, h_one = png_size(wd.join("one.png"))
    _, h_two = png_size(wd.join("two.png"))
    _, h_cpu = png_size(wd.join("cpu.png"))
    # GPU utilization, memory, PCIe/NVLink and power: four panels over the CPU run
    eq(h_one - h_cpu, 4 * PANEL_H, "one GPU adds its four panels (heights %d, %d)"
       % (h_one, h_cpu))
    eq(h_two - h_one, 2 * DEVICE_PANEL_H, "two GPUs add one panel per device")
    png = png_decode(wd.join("two.png"))
    count, xs = drawn_lines(png)
    check(count > 10000, "GPU lines drawn: %d coloured pixels" % count)


def test_job_without_samples_still_plots(wd):
    db = wd.join("store.db")
    r = run(wd, ["true"], db=db, opts=["--interval", "10s"])
    eq(r.rc, 0, "run exit code")
    path = wd.join("empty.png")
    plot(wd, db, str(r.report["run"]["id"]), path)
    width, height = png_size(path)
    eq(width, WIDTH, "width")
    check(height >= FRAME_H, "height %d" % height)


def test_unknown_extension_fails(wd):
    db = wd.join("store.db")
    run_id = run_job(wd, db, seconds="0.3")
    path = wd.join("out.bmp")
    p = report_plot(wd, db, run_id, path)
    check(p.returncode != 0, "non-zero exit for .bmp")
    check("out.bmp" in p.stderr and ".png" in p.stderr, "names the file and the formats: %r"
          % p.stderr)
    check(not os.path.exists(path), "nothing written")


def test_unwritable_path_fails(wd):
    db = wd.join("store.db")
    run_id = run_job(wd, db, seconds="0.3")
    path = wd.join("no", "such", "dir.png")
    p = report_plot(wd, db, run_id, path)
    check(p.returncode != 0, "non-zero exit")
    check("cannot write plot" in p.stderr and "No such file or directory" in p.stderr,
          "says why: %r" % p.stderr)


def test_without_libcairo(wd):
    """cairo is loaded on the first plot: without it, --plot says which package
    to install, writes nothing, and the rest of jobscope does not need it."""
    db = wd.join("store.db")
    run_id = run_job(wd, db, seconds="0.3")
    path = wd.join("out.png")
    p = report_plot(wd, db, run_id, path,
                    {"JOBSCOPE_CAIRO_LIBRARY": "/nonexistent/libcairo.so.2"})
    check(p.returncode != 0, "non-zero exit without cairo")
    check("--plot needs libcairo2" in p.stderr and "apt-get install libcairo2" in p.stderr,
          "names the package: %r" % p.stderr)
    check(not os.path.exists(path), "nothing written")
    p = jobscope("report", "--db", db, "--format", "json", run_id,
                 env=dict(os.environ, JOBSCOPE_CAIRO_LIBRARY="/nonexistent/libcairo.so.2"))
    eq(p.returncode, 0, "a report without --plot needs no cairo: %r" % p.stderr)


if __name__ == "__main__":
    run_tests(globals())
