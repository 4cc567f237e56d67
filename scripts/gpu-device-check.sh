#!/usr/bin/env bash
# gpu-device-check.sh - what jobscope reads of a real NVIDIA GPU, beside the
# driver's own tools, in one run of under 5 minutes (docs/gpu.md, "On a real
# GPU").  For a machine with a GPU, its driver, nvidia-smi and a Python with
# PyTorch; run from the repository root after a build:
#
#   scripts/gpu-device-check.sh [--libs DIR] [--tar FILE] [JOBSCOPE [OUTDIR]]
#
# JOBSCOPE defaults to build/jobscope, OUTDIR to $OUT or ./gpu-check.  It
# writes there:
#   gpus.json                 jobscope gpus --json
#   smi-query.csv             nvidia-smi --query-gpu, once a second, beside each run
#   dmon-<load>.txt           nvidia-smi dmon -s pucvmet, beside each run
#   run-<load>.json           jobscope run --report json of the load (60 s each):
#                             matmul: a bf16 matmul loop (tensor cores), copy: a
#                             device-to-device copy loop (DRAM bandwidth)
#   run-matmul-cuda.json      the matmul again under --cuda (GPM and CUPTI at once)
#   perf-<load>-{before,after}.txt
#                             nvidia-smi -q -d PERFORMANCE around each run (the
#                             driver's own throttle-time counters, in us)
#   report-<load>.txt         jobscope report of that run, as text
#   torch-matmul.txt          torch.profiler's kernel table for a few steps
#   summary.txt               the figures side by side
# Nothing here needs the network.  Each jobscope run is bounded (timeout,
# 90 s past its load), so a hang costs minutes, not the lease.
#
# A build from another distribution (this one's, on a lent machine with its
# own image) runs there with its libraries beside it:
#
#   scripts/gpu-device-check.sh --fetch-libs .gpu/deb      # here: apt-get download
#   scripts/gpu-device-check.sh --libs .gpu/deb --tar "$OUT/gpu-check.tgz" \
#       build/jobscope /tmp/gpu-check                      # there
#
# --libs unpacks the .deb files with dpkg -x into a folder of their own and
# runs jobscope through `ld.so --library-path` (LD_LIBRARY_PATH would reach
# the profiled program too), with JOBSCOPE_CUDA_HOOK next to the binary;
# --tar packs OUTDIR into one file (a lent machine gives back few files).
set -uo pipefail
LIBS_PKGS="libsqlite3-0 libcjson1 libzstd1 libncursesw6 libtinfo6"
LIBS="" TAR=""
while [ $# -gt 0 ]; do
	case $1 in
	--fetch-libs)
		mkdir -p "$2" && cd "$2" && exec apt-get download $LIBS_PKGS
		;;
	--libs) LIBS=$2; shift 2 ;;
	--tar) TAR=$2; shift 2 ;;
	*) break ;;
	esac
done
JS=${1:-build/jobscope}
OUTDIR=${2:-${OUT:-gpu-check}}
SECS=${GPU_CHECK_SECONDS:-60}
PY=${PYTHON:-python3}
if [ -n "$LIBS" ]; then
	root=$(mktemp -d /tmp/jobscope-libs.XXXXXX)
	for f in "$LIBS"/*.deb; do dpkg -x "$f" "$root" || exit 1; done
	bin=$(cd "$(dirname "$JS")" && pwd)/$(basename "$JS")
	export JOBSCOPE_CUDA_HOOK=${JOBSCOPE_CUDA_HOOK:-$(dirname "$bin")/libjobscope-cuda.so}
	JS=$root/jobscope
	printf '#!/bin/sh\nexec /lib64/ld-linux-x86-64.so.2 --library-path %s %s "$@"\n' \
		"$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" "$bin" >"$JS"
	chmod +x "$JS"
fi
mkdir -p "$OUTDIR"
exec 3>&1
say() { echo "== $*" >&3; }

cat >"$OUTDIR/load.py" <<'EOF'
import sys, time, torch
kind, secs = sys.argv[1], float(sys.argv[2])
dev = torch.device("cuda")
end = time.time() + secs
if kind == "matmul":
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    while time.time() < end:
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize()
elif kind == "copy":
    src = torch.empty(1 << 30, device=dev, dtype=torch.uint8)
    dst = torch.empty_like(src)
    while time.time() < end:
        for _ in range(20):
            dst.copy_(src)
        torch.cuda.synchronize()
elif kind == "profile":
    from torch.profiler import profile, ProfilerActivity
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(50):
            c = a @ a
        torch.cuda.synchronize()
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=10))
EOF

say "jobscope gpus"
"$JS" gpus --json >"$OUTDIR/gpus.json" 2>"$OUTDIR/gpus.err"
if ! nvidia-smi -L >"$OUTDIR/smi-list.txt" 2>&1; then
	say "nvidia-smi -L failed: no NVIDIA driver here ($OUTDIR/smi-list.txt); jobscope gpus says:"
	"$JS" gpus >&3 2>&1
	exit 1
fi

run_load() { # LOAD [jobscope run options...]
	local load=$1 tag=$1
	shift
	[ $# -gt 0 ] && tag=$load-cuda
	say "jobscope run $* -- $load ($SECS s)"
	nvidia-smi dmon -s pucvmet -d 1 >"$OUTDIR/dmon-$tag.txt" 2>&1 &
	local dmon=$!
	nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,power.draw,clocks.sm,clocks_throttle_reasons.active,clocks_event_reasons.sw_power_cap,temperature.gpu --format=csv -l 1 >"$OUTDIR/smi-query-$tag.csv" 2>&1 &
	local q=$!
	nvidia-smi -q -d PERFORMANCE >"$OUTDIR/perf-$tag-before.txt" 2>&1
	# bounded: a run that never ends (it happened, docs/gpu.md) must not take the whole lease
	timeout -k 5 $((SECS + 90)) "$JS" run --db "$OUTDIR/store.db" --interval 1s --report json \
		-o "$OUTDIR/run-$tag.json" "$@" -- "$PY" "$OUTDIR/load.py" "$load" "$SECS" \
		>"$OUTDIR/run-$tag.out" 2>&1
	echo "exit $?" >>"$OUTDIR/run-$tag.out"
	nvidia-smi -q -d PERFORMANCE >"$OUTDIR/perf-$tag-after.txt" 2>&1
	kill $dmon $q 2>/dev/null
	wait $dmon $q 2>/dev/null
	"$JS" report --db "$OUTDIR/store.db" >"$OUTDIR/report-$tag.txt" 2>&1
}
run_load matmul
run_load copy
run_load matmul --cuda
say "torch.profiler"
"$PY" "$OUTDIR/load.py" profile 0 >"$OUTDIR/torch-matmul.txt" 2>&1

say "summary"
"$PY" - "$OUTDIR" >"$OUTDIR/summary.txt" 2>&1 <<'EOF'
import json, sys, os
d = sys.argv[1]
for tag in ("matmul", "copy", "matmul-cuda"):
    p = os.path.join(d, "run-%s.json" % tag)
    if not os.path.exists(p):
        print(tag, "no report"); continue
    r = json.load(open(p))
    for g in r.get("gpus", []):
        keys = ["util_avg_pct", "sm_active_avg_pct", "sm_occupancy_avg_pct", "tensor_active_avg_pct",
                "hmma_tensor_active_avg_pct", "dram_active_avg_pct", "fp32_active_avg_pct",
                "fp16_active_avg_pct", "throttle_power_s", "throttle_thermal_s", "power_avg_w"]
        print(tag, "GPU", g.get("index"), " ".join("%s=%s" % (k, g.get(k)) for k in keys))
    print(tag, "verdicts:", [v.get("kind") for v in r.get("verdicts", [])])
EOF
cat "$OUTDIR/summary.txt" >&3
if [ -n "$TAR" ]; then
	tar czf "$TAR" -C "$(dirname "$OUTDIR")" "$(basename "$OUTDIR")" && say "packed into $TAR"
fi
