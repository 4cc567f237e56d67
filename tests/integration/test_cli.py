"""The command line: help, version, usage errors and their exit codes."""
import os
import re

from harness import free_port, jobscope, run_tests, check, eq


def test_help_and_version(wd):
    p = jobscope("--help")
    eq(p.returncode, 0, "--help exit")
    for cmd in ("run", "runs", "report", "help"):
        check(("  %s " % cmd) in p.stdout, "--help lists %s" % cmd)
    check("Exit codes" in p.stdout, "--help documents exit codes")
    p = jobscope("--version")
    eq(p.returncode, 0, "--version exit")
    check(p.stdout.startswith("jobscope "), "--version prints the version")
    eq(jobscope("version").stdout, p.stdout, "version == --version")


def test_command_help(wd):
    for cmd in ("run", "runs", "report"):
        a = jobscope("help", cmd)
        b = jobscope(cmd, "--help")
        eq(a.returncode, 0, "help %s exit" % cmd)
        eq(b.returncode, 0, "%s --help exit" % cmd)
        eq(a.stdout, b.stdout, "help %s == %s --help" % (cmd, cmd))
        check(a.stdout.startswith("usage: jobscope %s" % cmd), "usage synopsis of %s" % cmd)
    # --help after other options still works, and a command's own --help is its own
    eq(jobscope("run", "--interval", "1s", "--help").returncode, 0, "run OPTS --help")


def test_usage_errors(wd):
    cases = [
        (("nosuchcmd",), "not a jobscope command"),
        (("--frobnicate",), "unknown option"),
        (("help", "nosuchcmd"), "no such command"),
        (("run",), "no command to run"),
        (("run", "--interval", "fast", "--", "true"), "bad --interval"),
        (("run", "--interval", "10ms", "--", "true"), "below the minimum"),
        (("run", "--interval", "-1s", "--", "true"), "bad --interval"),
        (("run", "--timeout", "0", "--", "true"), "bad --timeout"),
        (("run", "--report", "xml", "--", "true"), "bad --report"),
        (("run", "--bogus", "--", "true"), "unknown option '--bogus'"),
        (("run", "--interval"), "needs a value"),
        (("runs", "extra"), "unexpected argument"),
        (("report", "abc"), "not a run id"),
        (("report", "--format", "yaml", "1"), "bad --format"),
    ]
    for args, msg in cases:
        p = jobscope(*args)
        eq(p.returncode, 2, "exit code of %s" % (args,))
        check(msg in p.stderr, "%s: %r not in %r" % (args, msg, p.stderr))
        check(p.stderr.startswith("jobscope: "), "message format for %s" % (args,))
    eq(jobscope().returncode, 2, "no arguments")


def test_run_db_in_a_missing_directory(wd):
    # a --db whose directory is not there (a typo) is refused: no tree is made for it
    missing = wd.join("no", "such", "dir")
    marker = wd.join("started")
    p = jobscope("run", "--db", missing + "/x.db", "--", "touch", marker)
    eq(p.returncode, 2, "exit code (%s)" % p.stderr)
    check("no directory '%s'" % missing in p.stderr, p.stderr)
    check(not __import__("os").path.exists(wd.join("no")), "no directory made")
    check(not __import__("os").path.exists(marker), "the command must not start")


def test_command_with_newlines_stays_one_line(wd):
    # an argument holding a newline and a tab: `runs` keeps one row, the report's
    # header one line
    db = wd.join("nl.db")
    p = jobscope("run", "--db", db, "--report", "none", "--", "sh", "-c", "true\n\ttrue")
    eq(p.returncode, 0, p.stderr)
    rows = jobscope("runs", "--db", db).stdout.splitlines()
    eq(len(rows), 2, "a header and one row: %r" % rows)
    check(rows[1].endswith("sh -c true  true"), rows[1])
    head = jobscope("report", "--db", db).stdout.splitlines()[0]
    check(head.startswith("jobscope run 1") and head.endswith(": sh -c true  true"), head)


def test_deploy_files_name_real_options(wd):
    # the systemd units' command lines and agent.conf's settings are options the
    # binary takes (jobscope CMD --list-options: the commands' option tables)
    import glob
    import os
    import re
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")
    units = glob.glob(os.path.join(root, "systemd", "*.service"))
    check(len(units) >= 2, "the agent's and the head's units: %s" % units)
    for unit in units:
        text = open(unit).read().replace("\\\n", " ")
        m = re.search(r"^ExecStart=\S*jobscope (\w+)(.*)$", text, re.M)
        check(m, "%s: an ExecStart running jobscope" % unit)
        known = jobscope(m.group(1), "--list-options").stdout.split()
        for opt in re.findall(r"(--[a-z][\w-]*)", m.group(2)):
            check(opt + "=" in known or opt in known, "%s: %s is not an option of %s" %
                  (unit, opt, m.group(1)))
    known = jobscope("agent", "--list-options").stdout.split()
    for line in open(os.path.join(root, "agent.conf")):
        m = re.match(r"^\s*#?\s*([a-z][\w-]*)\s*=", line)
        if m and not line.lstrip().startswith("# "):
            check("--%s=" % m.group(1) in known or "--%s" % m.group(1) in known,
                  "agent.conf: %r is not an agent setting" % m.group(1))


def test_listen_on_a_port_in_use(wd):
    # one message of ours with the reason, not a raw line of a library before it
    import socket
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    addr = "127.0.0.1:%d" % taken.getsockname()[1]
    try:
        for cmd in ("agent", "head"):
            p = jobscope(cmd, "--db", wd.join(cmd + ".db"), "--listen", addr, "--exit-after",
                         "1s")
            eq(p.returncode, 2, "%s exit (%s)" % (cmd, p.stderr))
            eq(p.stderr, "jobscope: cannot listen on %s: Address already in use\n" % addr,
               "%s's message" % cmd)
    finally:
        taken.close()


def test_https_with_a_bad_certificate_or_no_gnutls(wd):
    # one line saying why; GnuTLS is loaded only when a certificate is given
    bad = wd.join("bad.pem")
    with open(bad, "w") as f:
        f.write("not a certificate\n")
    args = ("head", "--db", wd.join("h.db"), "--listen", "127.0.0.1:0", "--tls-cert", bad,
            "--tls-key", bad, "--exit-after", "1s")
    p = jobscope(*args)
    eq(p.returncode, 2, "exit (%s)" % p.stderr)
    check(re.fullmatch(r"jobscope: HTTPS: the certificate or the key is refused \(GnuTLS: .+\)\n",
                       p.stderr), "the message: %r" % p.stderr)
    env = dict(os.environ, JOBSCOPE_GNUTLS_LIBRARY="/nonexistent/libgnutls.so.30")
    p = jobscope(*args, env=env)
    eq(p.returncode, 2, "exit without GnuTLS (%s)" % p.stderr)
    check(p.stderr.startswith("jobscope: HTTPS needs libgnutls30 (") and
          p.stderr.endswith("apt-get install libgnutls30\n") and p.stderr.count("\n") == 1,
          "the message: %r" % p.stderr)


def test_run_bad_option_starts_nothing(wd):
    marker = wd.join("started")
    p = jobscope("run", "--db", wd.join("s.db"), "--interval", "1x", "--", "touch", marker)
    eq(p.returncode, 2, "exit code")
    check(not __import__("os").path.exists(marker), "the command must not start")


def test_report_run_id_is_a_stores(wd):
    """RUN_ID is a row of the store asked (`jobscope runs`); a head numbers its rows on
    its own machine, so `report --head URL 2` is a usage error naming what to give,
    said before the head is asked (nothing listens at the URL)."""
    db = wd.join("runs.db")
    eq(jobscope("run", "--db", db, "--", "true").returncode, 0, "a run")
    eq(jobscope("run", "--db", db, "--", "true").returncode, 0, "another")
    ids = [ln.split()[0] for ln in jobscope("runs", "--db", db).stdout.splitlines()[1:]]
    eq(len(ids), 2, "two runs listed")
    p = jobscope("report", "--db", db, ids[0], "--format", "json")
    eq(p.returncode, 0, "report --db with a run id: " + p.stderr)
    url = "http://127.0.0.1:%d" % free_port()
    for args in ((ids[0],), ("2", "--format", "json")):
        p = jobscope("report", "--head", url, *args)
        eq(p.returncode, 2, "report --head %s: a usage error (%s)" % (args, p.stderr))
        check(p.stderr.startswith("jobscope: "), p.stderr)
        check("is a run id of a store" in p.stderr and "--job KEY" in p.stderr
              and "'last'" in p.stderr, p.stderr)
        check("cannot reach" not in p.stderr, "the head is not asked: " + p.stderr)
    # 'last' and --job KEY are a head's questions: asked (and here, unreachable)
    for args in (("last",), ("--job", "slurm:1")):
        p = jobscope("report", "--head", url, *args)
        eq(p.returncode, 1, "report --head %s asks the head: %s" % (args, p.stderr))


def test_trial_help_names_its_own_options(wd):
    """trial's --help names only trial's options, and says no option as `run`'s."""
    text = jobscope("trial", "--help").stdout
    own = {o.rstrip("=") for o in jobscope("trial", "--list-options").stdout.split()}
    named = set(re.findall(r"--[a-z][a-z-]*", text))
    eq(named - own, set(), "options trial's --help names that trial lacks")
    check("`jobscope run`'s" not in text, text)


if __name__ == "__main__":
    run_tests(globals())
