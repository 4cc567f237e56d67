#!/usr/bin/env python3
"""The shell completions (deploy/completion/): `meson install --tags completion` puts
the bash one into share/bash-completion/completions/jobscope and the zsh one into
share/zsh/site-functions/_jobscope; the bash one, sourced into a real bash, offers the
commands of `jobscope --help` and each command's options as its --help lists them
(they come from the same option tables through `jobscope CMD --list-options`).

argv[1]: the build directory (meson install runs there, --no-rebuild).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import JOBSCOPE, jobscope, run_tests, check, eq, scaled

BUILD = sys.argv[1] if len(sys.argv) > 1 else ""


def installed():
    dest = tempfile.mkdtemp(prefix="jobscope-completion-")
    p = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--tags", "completion",
                        "--destdir", dest], capture_output=True, text=True, timeout=scaled(120))
    eq(p.returncode, 0, "meson install: %s" % (p.stdout + p.stderr)[-2000:])
    found = {}
    for root, _, files in os.walk(dest):
        for f in files:
            found[os.path.relpath(os.path.join(root, f), dest)] = os.path.join(root, f)
    return dest, found


def complete(script, *words):
    """COMPREPLY for the command line `words` (the last one being completed)."""
    line = " ".join("'%s'" % w for w in (JOBSCOPE,) + words)
    prog = ('source "%s"; COMP_WORDS=(%s); COMP_CWORD=%d; _jobscope; '
            'printf "%%s\\n" "${COMPREPLY[@]}"' % (script, line, len(words)))
    p = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True,
                       timeout=scaled(30))
    eq(p.returncode, 0, "bash: %s" % p.stderr)
    return sorted(l for l in p.stdout.splitlines() if l)


def help_options(cmd):
    """The long options a command's --help lists."""
    text = jobscope(cmd, "--help").stdout
    opts = set()
    for line in text.splitlines():
        if re.match(r"^ {2,8}-", line):
            opts.update(re.findall(r"--[a-z][\w-]*", re.split(r"\s{2,}", line.strip())[0]))
    return opts


def test_installed_and_complete(wd):
    dest, found = installed()
    try:
        bash = [p for r, p in found.items() if r.endswith("bash-completion/completions/jobscope")]
        zsh = [p for r, p in found.items() if r.endswith("zsh/site-functions/_jobscope")]
        eq((len(bash), len(zsh)), (1, 1), "installed files: %s" % sorted(found))
        commands = jobscope("--list-commands").stdout.split()
        listed = re.findall(r"^  (\S+) +\S", jobscope("--help").stdout.split("\nCommands:\n")[1]
                            .split("\n\n")[0], re.M)
        eq(commands, listed, "--list-commands is the command table")
        eq(complete(bash[0], "ru"), ["run", "runs"], "commands from 'ru'")
        eq(complete(bash[0], "runs", "--j"), ["--json"], "runs --j")
        eq(complete(bash[0], "-v", "agent", "--max"), ["--max-db-size="], "after -v, agent --max")
        for cmd in commands:
            offered = {o.rstrip("=") for o in complete(bash[0], cmd, "--")}
            eq(offered, help_options(cmd) | {"--help"}, "%s: offered = its --help's" % cmd)
        check(complete(bash[0], "report", "") is not None, "file names after a command")
    finally:
        shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    run_tests(globals())
