#!/bin/sh
# deploy/slurm/epilog.sh - a Slurm Epilog that appends the job's jobscope
# report to the job's output file: what it reserved against what it used
# (a seff / jobstats replacement that needs no accounting database).
#
# slurm.conf:  Epilog=/etc/slurm/epilog.d/jobscope.sh
# It runs as root on each node after the job; the node's `jobscope agent`
# has been sampling the job all along.  Settings (environment or
# /etc/default/jobscope):
#   JOBSCOPE            the binary (default /usr/local/bin/jobscope)
#   JOBSCOPE_AGENT_DB   the agent's store (default /var/lib/jobscope/agent.db)
#   JOBSCOPE_WAIT_S     how long to wait for the agent to see the job end (5)
# An epilog that fails drains the node: this one always exits 0.
[ -r /etc/default/jobscope ] && . /etc/default/jobscope
JOBSCOPE=${JOBSCOPE:-/usr/local/bin/jobscope}
DB=${JOBSCOPE_AGENT_DB:-/var/lib/jobscope/agent.db}
WAIT_S=${JOBSCOPE_WAIT_S:-5}
[ -n "$SLURM_JOB_ID" ] && [ -x "$JOBSCOPE" ] && [ -r "$DB" ] || exit 0

# the job's output file, from Slurm itself
out=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/^ *StdOut=//p' | head -n 1)

# the agent notices the end at its next tick: wait for it, a little
report=""
i=0
while [ "$i" -lt $((WAIT_S * 10)) ]; do
	if "$JOBSCOPE" report --db "$DB" --job "slurm:$SLURM_JOB_ID" --format json 2>/dev/null |
		grep -q '"finished": *true'; then
		break
	fi
	sleep 0.1
	i=$((i + 1))
done
report=$("$JOBSCOPE" report --db "$DB" --job "slurm:$SLURM_JOB_ID" 2>/dev/null) || exit 0

if [ -n "$out" ] && [ -f "$out" ]; then
	printf '\n%s\n' "$report" >>"$out"
else
	logger -t jobscope "job $SLURM_JOB_ID: $(printf '%s' "$report" | head -n 12 | tr '\n' ' ')" 2>/dev/null
fi
exit 0
