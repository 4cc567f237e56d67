"""A private PostgreSQL 15 server on loopback for jobscope's integration tests.

    with PgCluster() as pg:                 # raises PgUnavailable(reason)
        url = pg.create_db("head1")         # postgresql://postgres@127.0.0.1:PORT/head1
        rows = pg.query("SELECT 1, 'a'", db="head1")   # [(1, "a")]
        pg.socket_url_of("head1")  # the same through the unix socket (for a netns)

Everything lives in a temporary directory owned by the `postgres` user
(initdb and postgres refuse to run as root; the tests run as root), on
/dev/shm when it has room: the data directory (a copy of what initdb made
once for this boot: see "the template" below), the log and the unix socket.
The server listens on 127.0.0.1 at a free port and on that socket only,
trusts local and 127.0.0.1 connections and nothing else, and runs with fsync
off (a test's data need not survive a crash of the machine).  postgres runs
in the foreground as a child of this process with PR_SET_PDEATHSIG, so it
goes when the test process dies, even by SIGKILL; stop() is an immediate
shutdown and removes the directory.  psql (not a Python driver: the tests'
python has none) runs the queries.

A primary with a synchronous standby (a database primary that can die):

    with PgCluster("db", replication=True) as p, PgStandby(p, "standby1") as s:
        p.sync_standby("standby1")  # synchronous_standby_names, once it streams as sync
        p.kill9(); s.promote()      # the standby takes writes

Stdlib only; needs root and Debian's postgresql-15 (server) and
postgresql-client-15 (psql).  Run this file directly for a self-check.
"""
import ctypes
import fcntl
import hashlib
import json
import os
import pwd
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import free_port, scaled, tail

PG_BIN = os.environ.get("JOBSCOPE_TEST_PG_BIN", "/usr/lib/postgresql/15/bin")
PSQL = shutil.which("psql") or os.path.join(PG_BIN, "psql")


def _group_alive(pgid):
    """Whether a process of process group pgid is alive (a zombie is not: it holds no
    memory)."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % d).read()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


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


# -- the template: initdb once per boot, a copy per server --------------------
#
# initdb is most of a server's start (about a CPU second and, on a busy machine,
# several seconds of wall time), and every *_pg test starts a server of its own.
# Its output is the same every time for one PostgreSQL build and these settings, so
# it is made once per boot into a template directory in the temporary directory
# (under a lock) and each server starts on a copy of its own: no server ever runs on
# the template, nothing one test writes reaches another.  The template also
# holds an empty database TEMPLATE_DB, the one PgCluster() makes by default.

INITDB_ARGS = ["-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"]
# every server's settings but its port and socket (written into each copy)
SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    # no fsync: a test's data need not outlive the machine's crash; a commit is still
    # written (to the kernel) before it returns, so a crash of the server (kill -9,
    # test_head_pg_faults) keeps every commit, as the head needs (its writer sets
    # synchronous_commit on for its session whatever the server's default, which
    # test_head_pg_faults sets off in one case)
    "fsync": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "shared_buffers": "64MB",
    "logging_collector": "off",
    "log_min_messages": "warning",
    "timezone": "'UTC'",
    # compiling a query costs more CPU than a test's query saves by it
    "jit": "off",
}
# trust, but only on the socket and on 127.0.0.1
HBA = "local all all trust\nhost all all 127.0.0.1/32 trust\n"
# a primary's (PgCluster(replication=True)): "all" does not cover a walsender's connection
HBA_REPLICATION = "local replication all trust\nhost replication all 127.0.0.1/32 trust\n"
TEMPLATE_DB = "jobscope"
TEMPLATE_PREFIX = "jobscope-pg-template-"
TEMPLATE_LOCK = os.path.join(tempfile.gettempdir(), "jobscope-pg-template.lock")


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def _template_dir():
    """This boot's template for this PostgreSQL build and these settings: a directory
    named by their digest (another build or other settings get another one)."""
    key = [_boot_id(), INITDB_ARGS, sorted(SETTINGS.items()), HBA, TEMPLATE_DB]
    for b in ("initdb", "postgres"):
        path = os.path.realpath(os.path.join(PG_BIN, b))
        st = os.stat(path)
        key.append((path, st.st_size, st.st_mtime_ns))
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), TEMPLATE_PREFIX + digest)


def _listing(data):
    """Every file below data with its size, as the manifest holds them."""
    out = []
    for root, _dirs, files in os.walk(data):
        for name in files:
            path = os.path.join(root, name)
            out.append([os.path.relpath(path, data), os.lstat(path).st_size])
    return sorted(out)


def _template_ok(top):
    """Whether top holds a whole template: its manifest (written last) names this boot
    and every file as it is now (a cleaner of /tmp may have taken some)."""
    try:
        with open(os.path.join(top, "manifest.json")) as f:
            m = json.load(f)
        return m["boot_id"] == _boot_id() and m["files"] == _listing(os.path.join(top, "data"))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _make_template(top):
    """initdb, the settings, TEMPLATE_DB made by a server started once and stopped cleanly;
    built beside top and renamed into place, its manifest last.  Every other template
    (another boot's, other settings', a half-built one) is removed: the caller holds the
    lock exclusively, so no one is copying one, and one still wanted is made again."""
    parent = os.path.dirname(top)
    for name in os.listdir(parent):
        if name.startswith(TEMPLATE_PREFIX):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    pw = pwd.getpwnam("postgres")
    c = PgCluster()
    c.dir = tempfile.mkdtemp(prefix=os.path.basename(top) + ".building-", dir=parent)
    os.chown(c.dir, pw.pw_uid, pw.pw_gid)
    os.chmod(c.dir, 0o700)
    c.data = os.path.join(c.dir, "data")
    c.log = os.path.join(c.dir, "postgres.log")
    try:
        r = c._as_postgres([os.path.join(PG_BIN, "initdb"), "-D", c.data] + INITDB_ARGS,
                           timeout=scaled(120))
        if r.returncode:
            raise PgUnavailable("initdb failed: %s" % (r.stderr.strip() or r.stdout.strip()))
        with open(os.path.join(c.data, "pg_hba.conf"), "w") as f:
            f.write(HBA)
        with open(os.path.join(c.data, "postgresql.auto.conf"), "a") as f:
            for k, v in SETTINGS.items():
                f.write("%s = %s\n" % (k, v))
        c.port = free_port()
        c._spawn(["-p", str(c.port), "-k", c.dir])
        c.psql("CREATE DATABASE %s" % TEMPLATE_DB, db="postgres")
        c.close_sessions()
        r = c._as_postgres([os.path.join(PG_BIN, "pg_ctl"), "stop", "-D", c.data, "-m", "fast",
                            "-w", "-t", "60"], timeout=scaled(90))
        if r.returncode:
            raise PgUnavailable("the template's server did not stop: %s" % r.stderr.strip())
        c.proc.wait(timeout=scaled(30))
        c.proc = None
        manifest = {"boot_id": _boot_id(), "files": _listing(c.data)}
        os.remove(c.log)
        os.rename(c.dir, top)
        c.dir = None
        with open(os.path.join(top, "manifest.json.tmp"), "w") as f:
            json.dump(manifest, f)
        os.rename(os.path.join(top, "manifest.json.tmp"), os.path.join(top, "manifest.json"))
    finally:
        c.close_sessions()
        if c.proc is not None and c.proc.poll() is None:
            os.killpg(c.proc.pid, signal.SIGKILL)
            c.proc.wait()
        if c.dir:
            shutil.rmtree(c.dir, ignore_errors=True)


SHM = "/dev/shm"
SHM_ROOM = 2 << 30  # what 8 servers side by side may write, with room to spare


def _server_parent():
    """Where a server's directory goes: SHM, a tmpfs, when it has room; else the
    temporary directory.  A server's files are written and deleted within one test:
    on a disk file system (ext4 here) the copy of the template alone cost about a CPU
    second and two seconds on a busy machine, on tmpfs a tenth of that."""
    try:
        st = os.statvfs(SHM)
        if st.f_bavail * st.f_frsize >= SHM_ROOM and os.access(SHM, os.W_OK):
            return SHM
    except OSError:
        pass
    return tempfile.gettempdir()


SERVER_PREFIX = "jobscope-pg-"
OWNER = "owner.lock"  # in a server's directory: flock'ed by the test process that owns it


def _remove_orphans(parent):
    """Server directories whose test process died without removing them (a test killed
    by its timeout): on tmpfs they hold memory until the next boot.  A directory whose
    owner lock can be taken has no owner left.  One without a lock file is one being
    made this moment, or of an older version of this file: taken when a minute old and
    no server answers on its socket."""
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        if not name.startswith(SERVER_PREFIX) or name.startswith(TEMPLATE_PREFIX) or \
                not os.path.isdir(path):
            continue
        try:
            fd = os.open(os.path.join(path, OWNER), os.O_RDWR)
        except FileNotFoundError:
            try:
                if time.time() - os.stat(path).st_mtime > 60 and not _answers(path):
                    shutil.rmtree(path, ignore_errors=True)
            except OSError:
                pass
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(path, ignore_errors=True)
        except BlockingIOError:
            pass  # its test is running
        finally:
            os.close(fd)


def _answers(path):
    """Whether a server listens on a unix socket in directory path."""
    for name in os.listdir(path):
        if name.startswith(".s.PGSQL.") and not name.endswith(".lock"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(os.path.join(path, name))
                return True
            except OSError:
                pass
            finally:
                sock.close()
    return False


def _copy_template(data):
    """A copy of this boot's template (made first when there is none) at data: a shared
    lock while copying, an exclusive one to make it, so no copy is of half a template."""
    top = _template_dir()
    fd = os.open(TEMPLATE_LOCK, os.O_CREAT | os.O_RDWR, 0o666)
    deadline = time.monotonic() + scaled(180)

    def lock(how):
        while True:
            try:
                fcntl.flock(fd, how | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise PgUnavailable("the template's lock %s was held for %.0f s"
                                        % (TEMPLATE_LOCK, scaled(180)))
                time.sleep(0.05)
    try:
        while True:
            lock(fcntl.LOCK_SH)
            if _template_ok(top):
                break
            fcntl.flock(fd, fcntl.LOCK_UN)
            lock(fcntl.LOCK_EX)
            if not _template_ok(top):
                _make_template(top)
            fcntl.flock(fd, fcntl.LOCK_UN)
        # the WAL segment is mostly zeros: holes in the copy, the same bytes to read
        r = subprocess.run(["cp", "-a", "--sparse=always", os.path.join(top, "data"), data],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if r.returncode:
            raise PgUnavailable("cannot copy the template %s: %s" % (top, r.stderr.strip()))
    finally:
        os.close(fd)  # the lock goes with the descriptor


class PgCluster:
    """initdb + postgres in a temporary directory; see the module's docstring."""

    def __init__(self, dbname="jobscope", replication=False):
        self.dbname = dbname
        self.replication = replication  # standbys may stream from it (PgStandby)
        self.dir = None
        self.proc = None
        self.port = None
        self.url = None
        self._sessions = {}  # database: _Session
        self._owner = None  # the descriptor of the directory's owner lock
        self._lock = threading.Lock()

    # -- life ---------------------------------------------------------------

    def _as_postgres(self, args, **kw):
        return subprocess.run(["runuser", "-u", "postgres", "--"] + args, cwd=self.dir,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, **kw)

    def start(self):
        why = missing()
        if why:
            raise PgUnavailable(why)
        self._make_dir()
        try:
            _copy_template(self.data)
        except PgUnavailable:
            self.stop()
            raise
        self.port = free_port()
        with open(os.path.join(self.data, "postgresql.auto.conf"), "a") as f:
            f.write("port = %d\nunix_socket_directories = '%s'\n" % (self.port, self.dir))
        if self.replication:
            with open(os.path.join(self.data, "pg_hba.conf"), "a") as f:
                f.write(HBA_REPLICATION)
        self._spawn()
        self.url = self.create_db(self.dbname, fresh=self.dbname != TEMPLATE_DB)
        return self

    def _make_dir(self):
        """This server's directory (owned by postgres, locked by this process): see start."""
        pw = pwd.getpwnam("postgres")
        parent = _server_parent()
        _remove_orphans(parent)
        self.dir = tempfile.mkdtemp(prefix=SERVER_PREFIX, dir=parent)
        # held until stop(): the directory is this process's while it lives
        self._owner = os.open(os.path.join(self.dir, OWNER), os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._owner, fcntl.LOCK_EX)
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o700)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "postgres.log")

    def sync_standby(self, name, timeout=60):
        """Makes standby name (streaming from this server) synchronous: a commit returns
        once the standby has flushed it (synchronous_commit on, the default).  Waits until
        pg_stat_replication says so."""
        self.psql("ALTER SYSTEM SET synchronous_standby_names = '%s'" % name, db="postgres")
        self.psql("SELECT pg_reload_conf()", db="postgres")
        deadline = time.monotonic() + scaled(timeout)
        while self.psql("SELECT sync_state FROM pg_stat_replication WHERE application_name"
                        " = '%s'" % name, db="postgres") != [("sync",)]:
            if time.monotonic() > deadline:
                raise PgError("standby %s not synchronous in %.0f s: %s" % (
                    name, scaled(timeout), self.psql("SELECT application_name, state,"
                                                     " sync_state FROM pg_stat_replication",
                                                     db="postgres")), "pg_stat_replication")
            time.sleep(0.1)

    def _spawn(self, args=()):
        """postgres on the data directory (with args), as the postgres user; waits until it
        answers."""
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
            self.proc = subprocess.Popen([os.path.join(PG_BIN, "postgres"), "-D", self.data]
                                         + list(args), cwd=self.dir, stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=logf, preexec_fn=become_postgres,
                                         env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
        finally:
            logf.close()
        deadline = time.monotonic() + scaled(30)
        while True:
            if self.proc.poll() is not None:
                code, log = self.proc.returncode, tail(self.log, 20)
                self.stop()  # forgets self.proc
                raise PgUnavailable("postgres exited (%s): %s" % (code, log))
            r = subprocess.run([os.path.join(PG_BIN, "pg_isready"), "-h", "127.0.0.1", "-p",
                                str(self.port), "-U", "postgres", "-q"],
                               stdin=subprocess.DEVNULL, capture_output=True)
            if r.returncode == 0:
                break
            if time.monotonic() > deadline:
                log = tail(self.log, 20)
                self.stop()
                raise PgUnavailable("postgres did not answer in %.0f s: %s" % (scaled(30), log))
            time.sleep(0.1)

    def kill9(self):
        """SIGKILL to the server and all its backends at once: a crash, not a stop.
        Returns once every process of the server's group is gone: a backend still dying
        holds the old shared memory, and a server started on the directory meanwhile
        refuses ("pre-existing shared memory block ... is still in use"), which a busy
        machine showed."""
        pgid = self.proc.pid
        os.killpg(pgid, signal.SIGKILL)
        self.proc.wait(timeout=scaled(10))
        deadline = time.monotonic() + scaled(10)
        while _group_alive(pgid):
            if time.monotonic() > deadline:
                raise PgError("processes of group %d alive %.0f s after SIGKILL"
                              % (pgid, scaled(10)), "kill9")
            time.sleep(0.05)
        self.close_sessions()

    def restart(self):
        """The server again on the same data directory (crash recovery after kill9)."""
        self._spawn()

    def stop(self):
        """An immediate shutdown (SIGQUIT: no checkpoint, the directory is removed
        anyway; the server still removes its shared memory); SIGKILL if that fails;
        removes the directory."""
        self.close_sessions()
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=scaled(20))
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=scaled(10))
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        if self._owner is not None:
            os.close(self._owner)
            self._owner = None

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
        if fresh or not self.psql("SELECT 1 FROM pg_database WHERE datname = '%s'" % db,
                                  db="postgres"):
            self.psql("CREATE DATABASE %s" % db, db="postgres")
        return self.url_of(db)

    # -- queries ------------------------------------------------------------

    def psql(self, sql, db=None):
        """One statement's rows as tuples of text (NULL as None), as psql -At prints them.

        Through a psql kept running per database (see _Session): a psql started per
        statement cost 30 ms of CPU (the process, a connection, a backend), and a test
        that polls the head's store every 20 ms spent most of its CPU there."""
        db = db or self.dbname
        with self._lock:
            for attempt in (1, 2):
                s = self._sessions.get(db)
                if s is None:
                    s = self._sessions[db] = _Session(self, db)
                try:
                    return s.run(sql)
                except _SessionLost as e:
                    # its connection went (a server killed or restarted, a database
                    # dropped WITH (FORCE)) before the statement ran: a new one
                    s.close()
                    del self._sessions[db]
                    if attempt == 2:
                        raise PgError(str(e), sql)

    def close_sessions(self):
        with self._lock:
            for s in self._sessions.values():
                s.close()
            self._sessions.clear()

    def script(self, sql, db=None):
        """Runs statements (any number, any length: on psql's stdin, not its command line)
        in one transaction; nothing is returned, the first error raises PgError.  One
        psql for many statements: each psql is a process and a connection, a tenth of a
        second on a busy machine."""
        r = subprocess.run([PSQL, "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1", "-h", self.dir,
                            "-p", str(self.port), "-U", "postgres", "-d", db or self.dbname,
                            "-f", "-"], input=sql, capture_output=True, text=True,
                           timeout=scaled(120))
        if r.returncode:
            raise PgError(r.stderr.strip(), sql[:2000])

    def query(self, sql, *args, db=None):
        """The rows of sql (? bound to args) as sqlite3 would give them: ints, floats,
        text and None, from row_to_json of each row."""
        wrapped = "SELECT row_to_json(q) FROM (%s) q" % bind(sql, args).rstrip().rstrip(";")
        rows = []
        for (text,) in self.psql(wrapped, db=db):
            pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
            rows.append(tuple(int(v) if isinstance(v, bool) else v for _, v in pairs))
        return rows


class PgStandby(PgCluster):
    """A hot standby of primary (a PgCluster(replication=True) that runs): pg_basebackup -R
    of it into a directory of its own, started on a port of its own, streaming from it
    as application name `name` (cluster_name), read-only until promote().  Its own
    synchronous_standby_names is empty whatever the primary's (the base backup copies
    the primary's settings): once promoted, a commit does not wait for a standby it does
    not have."""

    def __init__(self, primary, name="standby1"):
        super().__init__(primary.dbname)
        self.primary = primary
        self.name = name

    def start(self):
        why = missing()
        if why:
            raise PgUnavailable(why)
        self._make_dir()
        r = self._as_postgres([os.path.join(PG_BIN, "pg_basebackup"), "-h", "127.0.0.1", "-p",
                               str(self.primary.port), "-U", "postgres", "-D", self.data,
                               "-R", "-X", "stream", "-c", "fast", "--no-sync"],
                              timeout=scaled(120))
        if r.returncode:
            self.stop()
            raise PgUnavailable("pg_basebackup failed: %s" % r.stderr.strip())
        self.port = free_port()
        with open(os.path.join(self.data, "postgresql.auto.conf"), "a") as f:
            f.write("port = %d\nunix_socket_directories = '%s'\ncluster_name = '%s'\n"
                    "synchronous_standby_names = ''\n" % (self.port, self.dir, self.name))
        self._spawn()
        self.url = self.url_of(self.dbname)
        return self

    def promote(self, timeout=60):
        """pg_ctl promote: the standby ends recovery and takes writes; waits for it."""
        r = self._as_postgres([os.path.join(PG_BIN, "pg_ctl"), "promote", "-D", self.data, "-w",
                               "-t", str(int(scaled(timeout)))], timeout=scaled(timeout) + 10)
        if r.returncode:
            raise PgError("pg_ctl promote failed: %s" % (r.stderr.strip() or r.stdout.strip()),
                          "pg_ctl promote")
        deadline = time.monotonic() + scaled(timeout)
        while self.psql("SELECT pg_is_in_recovery()", db="postgres") != [("f",)]:
            if time.monotonic() > deadline:
                raise PgError("still in recovery %.0f s after pg_ctl promote" % scaled(timeout),
                              "pg_is_in_recovery()")
            time.sleep(0.1)


class _SessionLost(Exception):
    """A session's psql ended (its connection lost, or none made): nothing ran."""


class _Session:
    """psql -At reading statements from a pipe, on one database: each statement is
    followed by an \\echo of a marker and psql's ERROR variable, so that its rows (on
    stdout) and its error (on stderr) are read back to the marker."""

    NULL = "\\N-jobscope-null"

    def __init__(self, cluster, db):
        self.marker = "--jobscope-end-%d-%x--" % (os.getpid(), id(self))
        self.proc = subprocess.Popen(
            [PSQL, "-X", "-At", "-q", "-h", cluster.dir, "-p", str(cluster.port), "-U",
             "postgres", "-d", db, "-F", "\x1f", "-R", "\x1e", "-P", "null=" + self.NULL,
             "-f", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.set_blocking(self.proc.stderr.fileno(), False)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass

    def _stderr(self):
        try:
            return (self.proc.stderr.read() or b"").decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def run(self, sql):
        if self.proc.poll() is not None:
            raise _SessionLost("psql ended: %s" % self._stderr().strip())
        try:
            self.proc.stdin.write(("%s\n;\n\\echo %s :ERROR\n" % (sql, self.marker)).encode())
            self.proc.stdin.flush()
        except OSError:
            raise _SessionLost("psql ended: %s" % self._stderr().strip())
        out, fd = b"", self.proc.stdout.fileno()
        end = ("%s " % self.marker).encode()
        deadline = time.monotonic() + scaled(60)
        while True:
            at = out.find(end)
            if at >= 0 and (at == 0 or out[at - 1:at] == b"\n") and out.endswith(b"\n"):
                break
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise PgError("no answer from psql in %.0f s" % scaled(60), sql)
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                err = self._stderr().strip()
                if out or "lost" not in err and "closed the connection" not in err \
                        and "could not connect" not in err and "terminating" not in err:
                    # it ran, or failed otherwise, and psql ended: not to be run again
                    self.close()
                    raise PgError("psql ended: %s" % err, sql)
                raise _SessionLost(err)
            out += chunk
        failed = out[at + len(end):].strip() == b"true"
        err = self._stderr().strip()
        if failed:
            raise PgError(err or "failed", sql)
        text = out[:at].decode()
        if text.endswith("\n"):
            text = text[:-1]
        if not text:
            return []
        return [tuple(None if v == self.NULL else v for v in row.split("\x1f"))
                for row in text.split("\x1e")]


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
            # a script: many statements through stdin, one transaction, the first error
            pg.script("INSERT INTO t (id, name) VALUES (3, 'x:y ?');\n"
                      "INSERT INTO t (id, name) VALUES (4, '%s');" % ("z" * 200000))
            assert pg.psql("SELECT count(*), max(length(name)) FROM t") == [("4", "200000")]
            try:
                pg.script("INSERT INTO t (id) VALUES (5); SELECT nope FROM t;")
            except PgError:
                pass
            else:
                raise AssertionError("a bad script raised nothing")
            assert pg.psql("SELECT count(*) FROM t WHERE id = 5") == [("0",)], "not rolled back"
            pg.psql("DELETE FROM t WHERE id > 2")
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
            # the sessions psql keeps: a crash and a restart of the server, a database
            # dropped under its session, an error, then answers again
            assert pg.psql("SELECT 1 WHERE false") == []
            pg.kill9()
            pg.restart()
            assert pg.query("SELECT count(*) FROM t") == [(2,)]
            pg.create_db("other")
            assert pg.query("SELECT current_database()", db="other") == [("other",)]
            try:
                pg.psql("SELECT 1/0")
            except PgError as e:
                assert "division by zero" in e.message, e.message
            else:
                raise AssertionError("1/0 raised nothing")
            assert pg.psql("SELECT 'a:b', '::x', 'c;d'") == [("a:b", "::x", "c;d")]
            assert pg.psql("SELECT 1 -- a comment") == [("1",)]
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
