"""The Prometheus process the tests that run a real one share: a private
config and TSDB, a loopback port of the kernel's choice, ready when /-/ready
answers."""
import re
import subprocess

from harness import http_get, slurm_env, stop, tail, wait_for

PROMETHEUS = "/usr/bin/prometheus"


class PrometheusProcess:
    """A private Prometheus: config (YAML text) in wd/prometheus.yml, its TSDB
    in wd/tsdb, on a loopback port of the kernel's choice (port 0, read back
    from its "Listening on" line), extra flags after the usual ones.  Tests
    subclass it with the queries they need."""

    def __init__(self, wd, config, extra=(), ready_timeout=20):
        self.log = wd.join("prometheus.log")
        path = wd.join("prometheus.yml")
        with open(path, "w") as f:
            f.write(config)
        self.errf = open(self.log, "w")
        self.port = self.url = None
        # log level info: the line with the port (and little else after the start)
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + path, "--storage.tsdb.path=" + wd.join("tsdb"),
             "--web.listen-address=127.0.0.1:0", "--log.level=info"] + list(extra),
            stdin=subprocess.DEVNULL, stdout=self.errf, stderr=self.errf, env=slurm_env())
        try:
            wait_for(self._ready, timeout=ready_timeout, what="Prometheus /-/ready")
        except AssertionError:
            log = tail(self.log)
            self.stop()
            raise AssertionError("Prometheus did not start:\n" + log)

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("prometheus exited with %s" % self.proc.returncode)
        if self.port is None:
            m = re.search(r'msg="Listening on" address=127\.0\.0\.1:(\d+)', tail(self.log, 1000))
            if not m:
                return False
            self.port = int(m.group(1))
            self.url = "http://127.0.0.1:%d" % self.port
        try:
            return http_get(self.url + "/-/ready", timeout=1)[0] == 200
        except OSError:
            return False

    def stop(self):
        """Its exit code on SIGTERM."""
        try:
            return stop(self.proc)
        finally:
            self.errf.close()
