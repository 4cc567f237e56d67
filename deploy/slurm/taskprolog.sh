#!/bin/sh
# deploy/slurm/taskprolog.sh - a Slurm TaskProlog that puts every task of
# every job under the node's `jobscope agent --cuda-socket`: the CUDA driver
# loads libjobscope-cuda.so into each CUDA program (CUDA_INJECTION64_PATH,
# no LD_PRELOAD), which connects to the agent and records CUDA API, kernel
# and memory-operation tables while a head's session asks for them
# (`jobscope session start NAME --cuda`), or always (`--cuda-always`).
# docs/cuda.md, "On a cluster".  With the agent's --statsd-socket, tasks
# also get JOBSCOPE_STATSD_SOCKET, where `jobscope mark` and `jobscope
# metric` (and StatsD clients that read it) send app metrics
# (docs/app-metrics.md).
#
# slurm.conf:  TaskProlog=/etc/slurm/taskprolog.d/jobscope.sh
# A TaskProlog's "export NAME=VALUE" lines on stdout go into the task's
# environment.  Settings (environment or /etc/default/jobscope):
#   JOBSCOPE_CUDA_HOOK    the hook (default: where `meson install` put it,
#                         <libdir>/jobscope/libjobscope-cuda.so, libdir being
#                         /usr/local/lib/x86_64-linux-gnu on Debian; the first
#                         of /usr/local/lib/*/jobscope, /usr/local/lib/jobscope,
#                         /usr/lib/*/jobscope, /usr/lib/jobscope that holds it)
#   JOBSCOPE_CUDA_SOCKET  the agent's --cuda-socket (default /run/jobscope/cuda.sock)
#   JOBSCOPE_STATSD_SOCKET  the agent's --statsd-socket (default /run/jobscope/statsd.sock)
# A job that sets CUDA_INJECTION64_PATH itself (nsys, ncu) keeps its own.
# Nothing is exported when the hook or the socket is missing: jobs run as
# they would without jobscope.
[ -r /etc/default/jobscope ] && . /etc/default/jobscope
if [ -z "$JOBSCOPE_CUDA_HOOK" ]; then
	for h in /usr/local/lib/*/jobscope/libjobscope-cuda.so /usr/local/lib/jobscope/libjobscope-cuda.so \
		/usr/lib/*/jobscope/libjobscope-cuda.so /usr/lib/jobscope/libjobscope-cuda.so; do
		[ -r "$h" ] && JOBSCOPE_CUDA_HOOK=$h && break
	done
fi
HOOK=$JOBSCOPE_CUDA_HOOK
SOCK=${JOBSCOPE_CUDA_SOCKET:-/run/jobscope/cuda.sock}
STATSD=${JOBSCOPE_STATSD_SOCKET:-/run/jobscope/statsd.sock}
[ -S "$STATSD" ] && echo "export JOBSCOPE_STATSD_SOCKET=$STATSD"
[ -z "$CUDA_INJECTION64_PATH" ] && [ -r "$HOOK" ] && [ -S "$SOCK" ] || exit 0
echo "export CUDA_INJECTION64_PATH=$HOOK"
echo "export JOBSCOPE_CUDA_SOCKET=$SOCK"
exit 0
