"""results_md.py - one benchmark's part of bench/RESULTS.md put in place.

put(path, section, rows, is_ours, heading): the summary table's rows that
is_ours() claims are replaced by rows (after its last row); the section
that starts with heading is replaced where it stands, or appended when
there is none.  Writes path + ".tmp" (run-all.sh moves it over path).
"""


def put(path, section, rows, is_ours, heading):
    lines = [l for l in open(path).read().splitlines() if not is_ours(l)]
    if "## Summary" in lines:  # the new rows go after the last row of its table
        last = start = lines.index("## Summary")
        for i in range(start + 1, len(lines)):
            if lines[i].startswith("## "):
                break
            if lines[i].startswith("|"):
                last = i
        lines[last + 1:last + 1] = rows
    text = "\n".join(lines) + "\n"
    i = text.find(heading)
    if i < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        j = text.find("\n## ", i + len(heading))
        text = text[:i] + section + ("\n" + text[j + 1:] if j >= 0 else "")
    open(path + ".tmp", "w").write(text)
