"""The man pages (man/): `meson install --destdir` puts jobscope(1) and one
jobscope-COMMAND(1) per command of `jobscope --help` into mandir/man1; each
renders with `man --warnings -l` without a warning, and names every option
its command's --help prints.

argv[1]: the build directory (meson install runs there, --no-rebuild).
"""
import os
import re
import shutil
import subprocess
import tempfile
import sys

from harness import JOBSCOPE, jobscope, run_tests, check, eq, scaled

BUILD = sys.argv[1] if len(sys.argv) > 1 else ""
_installed = {}
_rendered = {}


def commands():
    """[(name, summary)] as `jobscope --help` lists them."""
    p = jobscope("--help")
    eq(p.returncode, 0, "jobscope --help exit code")
    block = p.stdout.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    found = [re.match(r"^  (\S+) +(\S.*)$", line) for line in block.splitlines()]
    return [(m.group(1), m.group(2)) for m in found if m]


def man1():
    """The installed man1 directory, installed once into a private DESTDIR."""
    if "dir" not in _installed:
        dest = tempfile.mkdtemp(prefix="jobscope-man-")
        shutil.rmtree(dest, ignore_errors=True)
        p = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--tags", "man",
                            "--destdir", dest], capture_output=True, text=True,
                           timeout=scaled(120))
        eq(p.returncode, 0, "meson install exit code (%s)" % (p.stdout + p.stderr)[-2000:])
        dirs = [root for root, _, files in os.walk(dest) if root.endswith("/man1")]
        eq(len(dirs), 1, "man1 directories under %s" % dest)
        _installed["dir"] = dirs[0]
        _installed["dest"] = dest
    return _installed["dir"]


def render(page):
    """`man --warnings -l` at 80 columns, in ASCII: (text, warnings); each page is
    rendered once for all the tests (the installed pages do not change)."""
    if page not in _rendered:
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C", LANG="C", MANPAGER="cat",
                   PAGER="cat")
        p = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True,
                           env=env, timeout=scaled(60))
        eq(p.returncode, 0, "man -l %s exit code (%s)" % (page, p.stderr))
        _rendered[page] = (p.stdout, p.stderr)
    return _rendered[page]


def help_options(text):
    """Every option an --help text's option lines print: -x and --long."""
    opts = set()
    for line in text.splitlines():
        if not re.match(r"^ {2,8}-", line):
            continue
        head = re.split(r"\s{2,}", line.strip())[0]
        opts.update(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", head))
    return opts


def test_every_command_has_a_page(wd):
    names = [n for n, _ in commands()]
    check(len(names) >= 10 and "run" in names and "report" in names, names)
    want = {"jobscope.1"} | {"jobscope-%s.1" % n for n in names}
    eq(set(os.listdir(man1())), want, "installed man1 pages")


def test_pages_render_without_warnings(wd):
    for name, summary in [("", "profile what jobs use")] + commands():
        page = "jobscope-%s" % name if name else "jobscope"
        text, warnings = render(os.path.join(man1(), page + ".1"))
        eq(warnings, "", "%s.1's warnings" % page)
        # NAME and the page header
        check(re.search(r"^%s\(1\) " % re.escape(page.upper()), text, re.M), text[:200])
        flat = " ".join(text.split())
        check(("NAME %s - %s" % (page, summary)) in flat, "%s: NAME line in %s" % (page, flat[:300]))
        check(" SEE ALSO " in flat, "%s has no SEE ALSO" % page)
        if name:
            check(re.search(r"SYNOPSIS jobscope %s\b" % re.escape(name), flat),
                  "%s: synopsis %s" % (page, flat[:400]))
            check("jobscope(1)" in flat, "%s: SEE ALSO jobscope(1)" % page)
        else:
            for other, _ in commands():
                check(("jobscope-%s(1)" % other) in flat,
                      "jobscope.1's SEE ALSO lacks jobscope-%s(1)" % other)


def test_every_option_in_its_page(wd):
    checked = 0
    for name, _ in commands():
        p = jobscope(name, "--help")
        eq(p.returncode, 0, "jobscope %s --help exit code" % name)
        opts = help_options(p.stdout)
        if name not in ("status", "clients", "mark", "metric"):
            check("--help" in opts, "jobscope %s --help lists no --help: %s" % (name, opts))
        text, _ = render(os.path.join(man1(), "jobscope-%s.1" % name))
        flat = " ".join(text.split())
        joined = re.sub(r"(\w)- (\w)", r"\1\2", flat)  # a word hyphenated at a line's end
        for opt in opts:
            check(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), flat)
                  or re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), joined),
                  "jobscope-%s.1 lacks %s" % (name, opt))
            checked += 1
    check(checked > 100, "only %d options checked" % checked)


def test_page_follows_help_text(wd):
    # a sentence of each --help text's description is in its page, word for word
    for name, _ in commands():
        lines = jobscope(name, "--help").stdout.splitlines()
        para = []
        for line in lines[lines.index("") + 1:] if "" in lines else []:
            if not line.strip():
                break
            para.append(line.strip())
        if not para:
            continue
        words = " ".join(para).split()[:6]
        text, _ = render(os.path.join(man1(), "jobscope-%s.1" % name))
        flat = " ".join(text.split())
        check(" ".join(words) in re.sub(r"(\w)- (\w)", r"\1\2", flat),
              "jobscope-%s.1 lacks %r" % (name, " ".join(words)))


if __name__ == "__main__":
    if not BUILD or not os.path.isdir(BUILD):
        print("usage: test_man.py BUILD_DIR", file=sys.stderr)
        sys.exit(2)
    if not shutil.which("help2man") or not shutil.which("man"):
        print("skipped: help2man or man (man-db) is not installed")
        sys.exit(77)
    try:
        run_tests(globals())
    finally:
        if "dest" in _installed:
            shutil.rmtree(_installed["dest"], ignore_errors=True)
