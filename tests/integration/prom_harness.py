"""The Prometheus process the tests that run a real one share: a private
config and TSDB, a free loopback port, ready when /-/ready answers."""
import subprocess

from harness import free_port, http_get, slurm_env, stop, tail, wait_for

PROMETHEUS = "/usr/bin/prometheus"


class PrometheusProcess:
    """A private Prometheus: config (YAML text) in wd/prometheus.yml, its TSDB
    in wd/tsdb, on a free loopback port (tried again when another process
    took the port meanwhile), extra flags after the usual ones.  Tests
    subclass it with the queries they need."""

    def __init__(self, wd, config, extra=(), ready_timeout=20):
        self.log = wd.join("prometheus.log")
        path = wd.join("prometheus.yml")
        with open(path, "w") as f:
            f.write(config)
        self.proc = None
        for _attempt in range(3):
            self.port = free_port()
            self.url = "http://127.0.0.1:%d" % self.port
            self.errf = open(self.log, "w")
            self.proc = subprocess.Popen(
                [PROMETHEUS, "--config.file=" + path, "--storage.tsdb.path=" + wd.join("tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"]
                + list(extra),
                stdin=subprocess.DEVNULL, stdout=self.errf, stderr=self.errf, env=slurm_env())
            try:
                wait_for(self._ready, timeout=ready_timeout, what="Prometheus /-/ready")
                return
            except AssertionError:
                log = tail(self.log)
                self.stop()
                if "address already in use" not in log:
                    raise AssertionError("Prometheus did not start:\n" + log)
        raise AssertionError("Prometheus could not bind a free port:\n" + tail(self.log))

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("prometheus exited with %s" % self.proc.returncode)
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
