"""Bad stores and a full disk: clear messages, documented exit codes, nothing lost."""
import hashlib
import json
import os
import sqlite3
import subprocess

from harness import JOBSCOPE, run, helper, jobscope, run_tests, check, eq


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def assert_refused(wd, db, what):
    marker = wd.join("started")
    before = digest(db)
    p = jobscope("run", "--db", db, "--", "touch", marker)
    eq(p.returncode, 2, "exit code for %s" % what)
    check(db in p.stderr, "the message names the file: %r" % p.stderr)
    check(not os.path.exists(marker), "the command must not start (%s)" % what)
    eq(digest(db), before, "%s left byte for byte as it was" % what)
    check(not os.path.exists(db + "-wal"), "no WAL created next to %s" % what)
    return p.stderr


def test_unwritable_db(wd):
    blocker = wd.join("file")
    open(blocker, "w").close()
    marker = wd.join("started")
    db = os.path.join(blocker, "sub", "store.db")
    p = jobscope("run", "--db", db, "--", "touch", marker)
    eq(p.returncode, 2, "exit code")
    check(db in p.stderr or blocker in p.stderr, "message names the path: %r" % p.stderr)
    check(not os.path.exists(marker), "the command must not start")


def test_foreign_text_file(wd):
    db = wd.join("notes.txt")
    with open(db, "w") as f:
        f.write("my precious notes\n" * 100)
    err = assert_refused(wd, db, "a text file")
    check("not a jobscope store" in err, err)


def test_foreign_sqlite_db(wd):
    db = wd.join("other.db")
    con = sqlite3.connect(db)
    con.execute("create table precious(x)")
    con.execute("insert into precious values (42)")
    con.commit()
    con.close()
    err = assert_refused(wd, db, "another application's SQLite file")
    check("not a jobscope store" in err, err)


def test_corrupt_store(wd):
    db = wd.join("store.db")
    r = run(wd, ["true"], db=db)
    eq(r.rc, 0, "first run")
    check(not os.path.exists(db + "-wal"), "the run checkpointed its WAL")
    with open(db, "r+b") as f:
        f.seek(4096)  # page 2: a b-tree page header and cells
        f.write(b"\xde\xad\xbe\xef" * 1024)
    err = assert_refused(wd, db, "a corrupt store")
    check("corrupt" in err, err)
    p = jobscope("report", "--db", db, "1")
    eq(p.returncode, 2, "report on a corrupt store")


def test_truncated_store(wd):
    db = wd.join("store.db")
    run(wd, [helper("busy"), "--sleep", "0.3"], db=db, opts=["--interval", "50ms"])
    size = os.path.getsize(db)
    with open(db, "r+b") as f:
        f.truncate(size // 2)
    err = assert_refused(wd, db, "a truncated store")
    check("corrupt" in err, err)


def test_newer_schema(wd):
    db = wd.join("store.db")
    run(wd, ["true"], db=db)
    con = sqlite3.connect(db)
    con.execute("pragma user_version = 99")
    con.commit()
    con.close()
    err = assert_refused(wd, db, "a store from a newer jobscope")
    check("newer" in err, err)


def test_full_disk_during_run(wd):
    mnt = wd.join("mnt")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt]).returncode != 0:
        print("SKIP: cannot mount a tmpfs here (needs root)")
        return
    try:
        db = os.path.join(mnt, "store.db")
        fill = os.path.join(mnt, "fill")
        # the sleeps are not waits: samples are stored for 0.6 s, lost while the
        # disk is full (a fixed amount of work, then 0.5 s), stored again for 0.6 s
        script = ("sleep 0.6; dd if=/dev/zero of=%s bs=64k 2>/dev/null; %s --work 100; "
                  "sleep 0.5; rm %s; sleep 0.6; echo done" % (fill, helper("busy"), fill))
        r = run(wd, ["sh", "-c", script], db=db, opts=["--interval", "50ms"])
        eq(r.rc, 0, "the command ran to its end")
        check("done" in r.stdout, "the command finished")
        lost = r.report["sampler"]["lost_samples"]
        check(lost > 0, "samples lost while the disk was full: %r" % lost)
        check(r.report["sampler"]["samples"] > lost, "some samples stored")
        ev = [e for e in r.report["events"] if e["kind"] == "lost_samples"]
        eq(len(ev), 1, "one lost_samples event")
        check("No space left" in ev[0]["message"], ev[0]["message"])
        # the burner's own CPU (its getrusage, in its JSON line) is in the live report;
        # a count of steps, not a time, so a loaded machine does not make it less
        burned = [json.loads(l)["cpu_seconds"] for l in r.stdout.splitlines()
                  if l.startswith("{")]
        eq(len(burned), 1, "js-busy's line: %r" % r.stdout)
        check(burned[0] > 0.05 and r.report["cpu"]["cpu_seconds"] >= burned[0] - 0.02,
              "the live report is complete: %r CPU s, js-busy's own %r"
              % (r.report["cpu"]["cpu_seconds"], burned[0]))
        check("cannot store samples" in r.stderr, "a warning on stderr: %r" % r.stderr)
        # the store is intact and says what was lost
        p = jobscope("report", "--db", db, "--format", "json", "1")
        eq(p.returncode, 0, "report from the store: %s" % p.stderr)
        check('"lost_samples": %d' % lost in p.stdout, "stored report counts the loss")
    finally:
        subprocess.run(["umount", "-l", mnt])


if __name__ == "__main__":
    run_tests(globals())
