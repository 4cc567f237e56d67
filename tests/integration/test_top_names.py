"""`jobscope top` shows a job by its name, else its command, first (as htop shows a
process's command): `jobscope run --name NAME -- CMD` into a store, then `top --batch
--db`: the row starts with NAME; a run without a name starts with its command; the
key is in the last column once the screen is wide enough for it, and on the job's
screen always."""
import os
import sqlite3

from harness import jobscope, run_tests, eq, check

WIDTH = 100
NAME_W = 34  # src/top/layout.c: the first column at its widest (NAME_MAX)


def run_into(db, *args):
    r = jobscope("run", "--db", db, "-i", "100ms", "-r", "none", *args)
    eq(r.returncode, 0, "jobscope run: %s" % r.stderr)
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        (job, start, command, user), = con.execute(
            "SELECT id, start_ms, command, user FROM jobs").fetchall()
    finally:
        con.close()
    return "run:%d:%d" % (job, start), command, user


def batch(db, width=WIDTH, *more):
    r = jobscope("top", "--db", db, "--batch", "--width", str(width), "--height", "8", *more)
    eq(r.returncode, 0, "top --batch: %s" % r.stderr)
    return r.stdout.splitlines()


def test_name_first_then_command(wd):
    named = wd.join("named.db")
    key, command, user = run_into(named, "--name", "resnet-train", "--", "sleep", "0.3")
    eq(command, "sleep 0.3", "the stored command")
    lines = batch(named)
    eq(lines[2], "NAME/COMMAND".ljust(NAME_W + 1) + "USER     CPU used/res  MEM used/res"
       "   GPU  EFF% VERDICT", "the header, no KEY column at %d" % WIDTH)
    eq(lines[3][:NAME_W + 1 + 8], "resnet-train".ljust(NAME_W + 1) + user[:8].ljust(8),
       "the row: the name first, then the user")
    check(key not in "\n".join(lines), "no key at %d columns:\n%s" % (WIDTH, "\n".join(lines)))
    # wide enough: the key is the last column
    wide = batch(named, 140)
    check(wide[2].endswith(" KEY"), "KEY last: %r" % wide[2])
    eq(wide[3][:NAME_W + 1], "resnet-train".ljust(NAME_W + 1), "wide: the name first")
    eq(wide[3][wide[2].index(" KEY") + 1:], key, "wide: the key, in the KEY column")
    # the job's screen: the name, then its key
    job = batch(named, WIDTH, "--job", key)
    check(job[1].startswith("resnet-train  %s  user %s" % (key, user)), "job screen: %r" % job[1])

    plain = wd.join("plain.db")
    key, command, user = run_into(plain, "--", "sleep", "0.3")
    eq(command, "sleep 0.3", "the stored command")
    row = batch(plain)[3]
    eq(row[:NAME_W + 1 + 8], "sleep 0.3".ljust(NAME_W + 1) + user[:8].ljust(8),
       "no name: the command first")
    job = batch(plain, WIDTH, "--job", key)
    check(job[1].startswith("%s  user %s" % (key, user)), "job screen, no name: %r" % job[1])


if __name__ == "__main__":
    run_tests(globals())
