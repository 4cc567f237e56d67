"""A private PostgreSQL 15 server on loopback for jobscope's integration tests.

    with PgCluster() as pg:                 # raises PgUnavailable(reason)
        url = pg.create_db("head1")         # postgresql://postgres@127.0.0.1:PORT/head1
        rows = pg.query("SELECT 1, 'a'", db="head1")   # [(1, "a")]
        pg.socket_url_of("head1")  # the same through the unix socket (for a netns)

Everything lives in a temporary directory owned by the `postgres` user
(initdb and postgres refuse to run as root; the tests run as root): the data
directory, the log and the unix socket.  The server listens on 127.0.0.1 at
a free port and on that socket only, trusts local and 127.0.0.1 connections
and nothing else, and runs with fsync off (a test's data need not survive a
crash of the machine).  postgres runs in the foreground as a child of this
process with PR_SET_PDEATHSIG, so it goes when the test process dies, even
by SIGKILL; stop() is pg_ctl stop -m fast.  psql (not a Python driver: the
tests' python has none) runs the queries.

Stdlib only; needs root and Debian's postgresql-15 (server) and
postgresql-client-15 (psql).  Run this file directly for a self-check.
"""
import ctypes
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import free_port, tail

PG_BIN = os.environ.get("JOBSCOPE_TEST_PG_BIN", "/usr/lib/postgresql/15/bin")
PSQL = shutil.which("psql") or os.path.join(PG_BIN, "psql")


class PgUnavailable(Exception):
    """PostgreSQL's binaries or the postgres user are missing, or it could not start."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason



def missing():
    """Why PostgreSQL cannot be started here, or None."""
    for b in ("initdb", "postgres", "pg_ctl"):
        if not os.access(os.path.join(PG_BIN, b), os.X_OK):
            return "%s not found in %s (Debian's postgresql-15)" % (b, PG_BIN)
    if not os.access(PSQL, os.X_OK):
        return "psql not found (Debian's postgresql-client-15)"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no 'postgres' user to run the server as"
    if os.geteuid() != 0:
        return "not root: cannot run the server as the postgres user"
    return None


def quote(v):
    """A Python value as a PostgreSQL literal."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def bind(query, args):
    """query with each ? (outside quotes) replaced by the next of args, quoted."""
    out, i, quote_ch = [], 0, None
    for ch in query:
        if quote_ch:
            if ch == quote_ch:
                quote_ch = None
        elif ch in "'\"":
            quote_ch = ch
        elif ch == "?":
            if i >= len(args):
                raise ValueError("too few arguments for %r" % query)
            out.append(quote(args[i]))
            i += 1
            continue
        out.append(ch)
    if i != len(args):
        raise ValueError("too many arguments for %r" % query)
    return "".join(out)


class PgCluster:
    """initdb + postgres in a temporary directory; see the module's docstring."""

    def __init__(self, dbname="jobscope"):
        self.dbname = dbname
        self.dir = None
        self.proc = None
        self.port = None
        self.url = None

    # -- life ---------------------------------------------------------------

    def _as_postgres(self, args, **kw):
        return subprocess.run(["runuser", "-u", "postgres", "--"] + args, cwd=self.dir,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, **kw)

    def start(self):
        why = missing()
        if why:
            raise PgUnavailable(why)
        pw = pwd.getpwnam("postgres")
        self.dir = tempfile.mkdtemp(prefix="jobscope-pg-")
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o700)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "postgres.log")
        r = self._as_postgres([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-U", "postgres",
                               "--auth=trust", "--encoding=UTF8", "--locale=C",
                               "--no-sync"], timeout=120)
        if r.returncode:
            self.stop()
            raise PgUnavailable("initdb failed: %s" % (r.stderr.strip() or r.stdout.strip()))
        # trust, but only on the socket and on 127.0.0.1
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as f:
            f.write("local all all trust\nhost all all 127.0.0.1/32 trust\n")
        self.port = free_port()
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": "'%s'" % self.dir,
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "shared_buffers": "64MB",
            "logging_collector": "off",
            "log_min_messages": "warning",
            "timezone": "'UTC'",
        }
        with open(os.path.join(self.data, "postgresql.auto.conf"), "a") as f:
            for k, v in conf.items():
                f.write("%s = %s\n" % (k, v))

        self._spawn()
        self.url = self.create_db(self.dbname)
        return self

    def _spawn(self):
        """postgres on the data directory, as the postgres user; waits until it answers."""
        pw = pwd.getpwnam("postgres")

        def become_postgres():
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            # after setuid: a change of credentials clears it
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT, 0, 0, 0)  # PDEATHSIG
            os.setsid()

        logf = open(self.log, "a")
        try:
            self.proc = subprocess.Popen([os.path.join(PG_BIN, "postgres"), "-D", self.data],
                                         cwd=self.dir, stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=logf, preexec_fn=become_postgres,
                                         env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
        finally:
            logf.close()
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                log = tail(self.log, 20)
                self.stop()
                raise PgUnavailable("postgres exited (%s): %s" % (self.proc.returncode, log))
            r = subprocess.run([os.path.join(PG_BIN, "pg_isready"), "-h", "127.0.0.1", "-p",
                                str(self.port), "-U", "postgres", "-q"],
                               stdin=subprocess.DEVNULL, capture_output=True)
            if r.returncode == 0:
                break
            if time.monotonic() > deadline:
                log = tail(self.log, 20)
                self.stop()
                raise PgUnavailable("postgres did not answer in 30 s: %s" % log)
            time.sleep(0.1)

    def kill9(self):
        """SIGKILL to the server and all its backends at once: a crash, not a stop."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def restart(self):
        """The server again on the same data directory (crash recovery after kill9)."""
        self._spawn()

    def stop(self):
        """pg_ctl stop -m fast; SIGKILL if that fails; removes the directory."""
        if self.proc and self.proc.poll() is None:
            r = self._as_postgres([os.path.join(PG_BIN, "pg_ctl"), "stop", "-D", self.data,
                                   "-m", "fast", "-w", "-t", "20"], timeout=40)
            try:
                self.proc.wait(timeout=5 if r.returncode == 0 else 0.1)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- databases ----------------------------------------------------------

    def url_of(self, db):
        return "postgresql://postgres@127.0.0.1:%d/%s" % (self.port, db)

    def socket_url_of(self, db):
        """db's URL through the unix socket (libpq's host=DIRECTORY form), for a client
        in a network namespace of its own, where 127.0.0.1 is not this server."""
        return "postgresql://postgres@/%s?host=%s&port=%d" % (db, self.dir, self.port)

    def create_db(self, db, fresh=True):
        """Creates database db (dropping one of that name when fresh); its URL."""
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", db):
            raise ValueError("bad database name %r" % db)
        if fresh:
            self.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % db, db="postgres")
        if not self.psql("SELECT 1 FROM pg_database WHERE datname = '%s'" % db, db="postgres"):
            self.psql("CREATE DATABASE %s" % db, db="postgres")
        return self.url_of(db)

    # -- queries ------------------------------------------------------------

    def psql(self, sql, db=None):
        """psql -At: the rows as tuples of text (NULL as None)."""
        null = "\\N-jobscope-null"
        r = subprocess.run([PSQL, "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-p",
                            str(self.port), "-U", "postgres", "-d", db or self.dbname,
                            "-F", "\x1f", "-R", "\x1e", "-P", "null=" + null, "-c", sql],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise PgError(r.stderr.strip(), sql)
        out = r.stdout
        if out.endswith("\n"):
            out = out[:-1]
        if not out:
            return []
        return [tuple(None if v == null else v for v in row.split("\x1f"))
                for row in out.split("\x1e")]

    def query(self, sql, *args, db=None):
        """The rows of sql (? bound to args) as sqlite3 would give them: ints, floats,
        text and None, from row_to_json of each row."""
        import json
        wrapped = "SELECT row_to_json(q) FROM (%s) q" % bind(sql, args).rstrip().rstrip(";")
        rows = []
        for (text,) in self.psql(wrapped, db=db):
            pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
            rows.append(tuple(int(v) if isinstance(v, bool) else v for _, v in pairs))
        return rows


class PgError(Exception):
    def __init__(self, message, sql):
        super().__init__("%s (in: %s)" % (message, sql))
        self.message = message


def _self_check():
    try:
        with PgCluster("selfcheck") as pg:
            print("up:", pg.url, "dir", pg.dir, "pid", pg.proc.pid)
            pg.psql("CREATE TABLE t (id bigint PRIMARY KEY, name text, v double precision,"
                    ' "user" text)')
            pg.psql("INSERT INTO t VALUES (1, 'a''b', 0.1, NULL), (2, '7', 2.5e300, 'u')")
            rows = pg.query('SELECT id, name, v, "user", count(*) OVER () AS n FROM t'
                            " WHERE id >= ? ORDER BY id", 1)
            print("rows:", rows)
            assert rows == [(1, "a'b", 0.1, None, 2), (2, "7", 2.5e300, "u", 2)], rows
            assert pg.query("SELECT count(*), sum(id), max(name) FROM t WHERE name = ?",
                            "a'b") == [(1, 1, "a'b")]
            assert pg.psql("SELECT name FROM t ORDER BY id") == [("a'b",), ("7",)]
            other = pg.create_db("other")
            assert other.endswith(":%d/other" % pg.port), other
            assert pg.query("SELECT current_database()", db="other") == [("other",)]
            try:
                pg.query("SELECT nope FROM t")
            except PgError as e:
                print("an error reads:", e.message.splitlines()[0])
            else:
                raise AssertionError("a bad query raised nothing")
            # only loopback and the socket: the server's own view
            assert pg.psql("SHOW listen_addresses") == [("127.0.0.1",)]
            assert pg.psql("SHOW fsync") == [("off",)]
            pid, d = pg.proc.pid, pg.dir
        assert not os.path.exists("/proc/%d" % pid) or \
            open("/proc/%d/stat" % pid).read().split()[2] == "Z", "postgres still running"
        assert not os.path.exists(d), "the directory is left"
        print("stopped, directory removed: ok")
    except PgUnavailable as e:
        print("SKIP: PostgreSQL unavailable: %s" % e.reason)
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(_self_check())
