"""Memory and I/O accounting on real workloads."""
from harness import run, helper, run_tests, near, check, eq

MiB = 1 << 20


def test_rss_peak_300mib(wd):
    r = run(wd, [helper("memtouch"), "--mib", "300", "--hold", "0.5"])
    eq(r.rc, 0, "exit code")
    truth = r.helper_json()["maxrss_bytes"]
    mem = r.report["memory"]
    near(mem["rss_peak_bytes"], truth, 0.05, "rss_peak_bytes vs getrusage")
    check(mem["rss_peak_at"] is not None, "rss_peak_at")
    check(mem["host_total_bytes"] > 0, "host_total_bytes")
    p = r.report["processes"][0]
    near(p["rss_peak_bytes"], truth, 0.05, "process rss_peak_bytes")


def test_rss_peak_of_a_short_spike(wd):
    # the peak lasts far less than one interval: the high-water mark catches it
    r = run(wd, [helper("memtouch"), "--mib", "200", "--hold", "0"], opts=["--interval", "2s"])
    truth = r.helper_json()["maxrss_bytes"]
    near(r.report["memory"]["rss_peak_bytes"], truth, 0.05, "rss_peak_bytes")


def test_write_200mib_fsync(wd):
    r = run(wd, [helper("writer"), "--mib", "200", "--fsync", "--path", wd.join("out.bin")])
    eq(r.rc, 0, "exit code")
    io = r.report["io"]
    check(io["write_bytes"] >= 200 * MiB, "write_bytes %r >= 200 MiB" % io["write_bytes"])
    check(io["write_peak_bps"] > 0, "write_peak_bps")
    check(io["read_bytes"] is not None, "read_bytes known")


def test_network_is_host_wide(wd):
    r = run(wd, ["true"])
    net = r.report["network"]
    eq(net["scope"], "host", "network scope")
    check(net["rx_bytes"] is not None and net["rx_bytes"] >= 0, "rx_bytes")


if __name__ == "__main__":
    run_tests(globals())
