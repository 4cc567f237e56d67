#!/usr/bin/env bash
# run-all.sh - build the floor, run every benchmark, rewrite bench/RESULTS.md.
#
#   bash bench/run-all.sh           the full run (about 5 minutes); `./dev bench` calls it
#   bash bench/run-all.sh --quick   one short run of each, written to
#                                   build/bench-out/RESULTS-quick.md instead
#
# Expects an optimized build in build/ (./dev bench sets it up); rebuilds
# jobscope and the two helpers it needs with ninja.  Raw JSON of every run goes to build/bench-out/.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case "${1:-}" in
--quick) quick=true ;;
"") ;;
*)
	echo "usage: bash bench/run-all.sh [--quick]" >&2
	exit 2
	;;
esac

say() { printf '==> %s\n' "$*" >&2; }

if [ ! -f build/build.ninja ]; then
	echo "run-all: no build/ here: run ./dev bench (or meson setup build --buildtype=release)" >&2
	exit 1
fi
# only what the benchmarks run: a test that does not build must not stop them
ninja -C build jobscope tests/js-sleepers tests/js-busy >/dev/null
buildtype=$(meson introspect build --buildoptions 2>/dev/null | python3 -c '
import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"][0])' 2>/dev/null ||
	echo unknown)
[ "$buildtype" = release ] || say "warning: build/ is a '$buildtype' build, not release"

floor_cmd="cc -O2 -Wall -Wextra -Werror -o build/bench-floor bench/floor.c"
say "$floor_cmd"
$floor_cmd

out=build/bench-out
mkdir -p "$out"
if $quick; then
	results=$out/RESULTS-quick.md
	cost1_args=(--counts 100,1000 --reps 1 --window 5)
	cost2_args=(--counts 100,1000 --reps 1 --window 3 --interval-ms 100 --no-pidstat)
	over_args=(--runs 7 --work 500)
else
	results=bench/RESULTS.md
	cost1_args=(--counts 100,1000 --reps 3 --window 20)
	cost2_args=(--counts 100,1000 --reps 3 --window 10 --interval-ms 100 --no-pidstat)
	over_args=(--runs 8 --work 2000)
fi

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
t0=$SECONDS

say "sampler cost, 1 s interval (jobscope, floor, pidstat)"
python3 bench/sampler_cost.py "${cost1_args[@]}" \
	--json "$out/sampler-1s.json" --markdown "$out/sampler-1s.md"
say "sampler cost, 100 ms interval (jobscope, floor)"
python3 bench/sampler_cost.py "${cost2_args[@]}" \
	--json "$out/sampler-100ms.json" --markdown "$out/sampler-100ms.md"
say "overhead on a CPU-bound workload"
python3 bench/overhead.py "${over_args[@]}" \
	--json "$out/overhead.json" --markdown "$out/overhead.md"

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
took=$((SECONDS - t0))
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""
[ -n "$(git status --porcelain -- src 2>/dev/null)" ] && dirty=" (with uncommitted changes in src/)"
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
invocation="bash bench/run-all.sh${1:+ $1}"

{
	echo "# jobscope benchmarks"
	echo
	echo "Written by \`$invocation\` (\`./dev bench\` runs it after an optimized build)."
	echo
	echo "- date: $started; took ${took} s"
	echo "- machine: $(nproc) CPUs, $cpu_model, $mem RAM, kernel $(uname -r)," \
		"$(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "- jobscope: commit $commit$dirty, \`$buildtype\` build;" \
		"the floor: \`$floor_cmd\`; $(pidstat -V 2>&1 | head -1)"
	echo "- load average (1, 5, 15 min): $load_start at the start, $load_end at the end." \
		"The machine is shared: \"other load\" below is the CPU that anything but the" \
		"measured processes used meanwhile, in cores (of $(nproc))."
	echo
	echo "## Summary"
	echo
	python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
s1 = json.load(open(f"{out}/sampler-1s.json"))["results"]
s2 = json.load(open(f"{out}/sampler-100ms.json"))["results"]
ov = json.load(open(f"{out}/overhead.json"))["summary"]
ok = lambda v, t: "met" if v <= t else "**missed**"
print("| benchmark | measured | target | |")
print("|---|---|---|---|")
for res in s1:
    s = res["summary"]
    for o, t in (("floor", 1.5), ("pidstat", 0.33)):
        v = s["ratio_" + o]["sched_ms_per_tick"]
        print(f"| CPU per tick, 1 s, N={res['n']}: jobscope/{o} | {v:.2f} | ≤ {t} | {ok(v, t)} |")
for res in s2:
    v = res["summary"]["ratio_floor"]["sched_ms_per_tick"]
    print(f"| CPU per tick, 100 ms, N={res['n']}: jobscope/floor | {v:.2f} | (≤ 1.5) | {ok(v, 1.5)} |")
big = max(s1, key=lambda r: r["n"])
hwm = big["summary"]["jobscope_hwm_kib"] / 1024
print(f"| jobscope peak RSS, N={big['n']} | {hwm:.1f} MiB | ≤ 10 MiB | {ok(hwm, 10)} |")
r = ov["wall_ratio"]
print(f"| wall time under jobscope (100 ms) / bare | {r:.4f} | ≤ 1.02 | {ok(r, 1.02)} |")
EOF
	echo
	echo "The floor opens, reads once and closes every file every tick; jobscope/floor" \
		"below 1 means jobscope reads less than that (see bench/README.md)."
	echo
	echo "## 1. Sampler cost per tick, 1 s interval"
	echo
	cat "$out/sampler-1s.md"
	echo
	echo "## 2. Sampler cost per tick, 100 ms interval (pidstat cannot go below 1 s)"
	echo
	cat "$out/sampler-100ms.md"
	echo
	echo "## 3. Overhead on a CPU-bound workload"
	echo
	cat "$out/overhead.md"
} >"$results.tmp"
mv "$results.tmp" "$results"
say "wrote $results"
