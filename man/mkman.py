#!/usr/bin/env python3
"""mkman.py - one man page from jobscope's own --help text, through help2man.

  mkman.py JOBSCOPE COMMAND OUTPUT   writes jobscope-COMMAND.1 to OUTPUT
  mkman.py JOBSCOPE - OUTPUT         writes jobscope.1 (the command list)

help2man runs "PROGRAM --help" and names the page after PROGRAM, so a
wrapper named jobscope-COMMAND (or jobscope) is made in a temporary
directory; it runs this script with --print-help, which prints
`jobscope COMMAND --help` with its synopsis in the shape help2man reads
("Usage:" and "or:" lines, one line per form) and "Exit status:" as a
section of its own.  The NAME line is the command's summary from
`jobscope --help`, so a command missing from the binary's table fails the
build here.  Nothing else is written by hand: the pages cannot drift from
the binary.
"""
import os
import re
import subprocess
import sys
import tempfile


def run_help(jobscope, command):
    argv = [jobscope, '--help'] if command == '-' else [jobscope, command, '--help']
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, check=False)
    if out.returncode != 0 or not out.stdout:
        sys.exit(f"mkman: '{' '.join(argv)}' failed (exit {out.returncode}): {out.stderr.strip()}")
    return out.stdout


def commands(jobscope):
    """The command table as `jobscope --help` lists it: [(name, summary)]."""
    text = run_help(jobscope, '-')
    block = text.split('\nCommands:\n', 1)[1].split('\n\n', 1)[0]
    found = []
    for line in block.splitlines():
        m = re.match(r'^  (\S+) +(\S.*)$', line)
        if m:
            found.append((m.group(1), m.group(2)))
    return found


def for_help2man(text):
    """The synopsis as "Usage:"/"or:" lines, one per form, and an exit
    status paragraph under a heading of its own."""
    lines = text.splitlines()
    forms = []
    i = 0
    while i < len(lines) and lines[i].strip():
        line = lines[i]
        if line.startswith('usage: '):
            forms.append(line[len('usage: '):].strip())
        elif line.lstrip().startswith('jobscope ') or not forms:
            forms.append(line.strip())
        else:
            forms[-1] += ' ' + line.strip()
        i += 1
    out = []
    for n, form in enumerate(forms):
        out.append(('Usage: ' if n == 0 else '  or: ') + form)
    for line in lines[i:]:
        m = re.match(r'^(Exit status|Exit codes): (.*)$', line)
        if m:
            out += ['Exit status:', m.group(2)]
        else:
            out.append(line)
    return '\n'.join(out) + '\n'


def see_also(names, command):
    pages = ['jobscope'] + ['jobscope-' + n for n in names]
    pages = [p for p in pages if p != ('jobscope' if command == '-' else 'jobscope-' + command)]
    return '[SEE ALSO]\n.ad l\n' + ',\n'.join(f'.BR \\%{p} (1)' for p in pages) + '\n'


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == '--print-help':
        # the wrapper: help2man asks only for --help (it is given the version)
        sys.stdout.write(for_help2man(run_help(sys.argv[2], sys.argv[3])))
        return
    if len(sys.argv) != 4:
        sys.exit('usage: mkman.py JOBSCOPE COMMAND|- OUTPUT')
    jobscope, command, output = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    table = commands(jobscope)
    summaries = dict(table)
    if command == '-':
        page, name = 'jobscope', 'profile what jobs use: CPU, memory, I/O and GPUs'
    elif command in summaries:
        page, name = 'jobscope-' + command, summaries[command]
    else:
        sys.exit(f"mkman: '{command}' is not in `jobscope --help`'s command list")
    version = subprocess.run([jobscope, '--version'], stdout=subprocess.PIPE, text=True,
                             check=True).stdout.split()[-1]
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = os.path.join(tmp, page)
        with open(wrapper, 'w') as f:
            f.write('#!/bin/sh\nexec "%s" "%s" --print-help "%s" "%s"\n'
                    % (sys.executable, os.path.abspath(__file__), jobscope, command))
        os.chmod(wrapper, 0o755)
        include = os.path.join(tmp, 'include.h2m')
        with open(include, 'w') as f:
            f.write(see_also([n for n, _ in table], command))
        subprocess.run(['help2man', '--no-info', '--section=1', '--version-string=' + version,
                        '--source=jobscope ' + version, '--manual=jobscope manual',
                        '--name=' + name, '--include=' + include, '--output=' + output,
                        wrapper], check=True)
    # help2man sets "jobscope-export" as the program in the synopsis: the
    # user types "jobscope export"
    with open(output) as f:
        roff = f.read()
    if command != '-':
        sub = re.escape(command)
        roff = re.sub(r'^\.B jobscope\n\\fI\\,%s \\/\\fR' % sub,
                      '.B jobscope %s\n' % command, roff, flags=re.M)
        roff = re.sub(r'^\.B jobscope\n\\fI\\,%s ' % sub,
                      '.B jobscope %s\n\\\\fI\\\\,' % command, roff, flags=re.M)
    # no hyphenation inside a synopsis' option names
    roff = roff.replace('.SH SYNOPSIS\n', '.SH SYNOPSIS\n.nh\n', 1)
    roff = roff.replace('\n.SH DESCRIPTION\n', '\n.hy\n.SH DESCRIPTION\n', 1)
    with open(output, 'w') as f:
        f.write(roff)


if __name__ == '__main__':
    main()
