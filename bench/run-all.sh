#!/usr/bin/env bash
# run-all.sh - build the floor, run every benchmark, rewrite bench/RESULTS.md.
#
#   bash bench/run-all.sh             the full run (about 8 minutes); `./dev bench` calls it
#   bash bench/run-all.sh --quick     one short run of each, written to
#                                     build/bench-out/RESULTS-quick.md instead
#   bash bench/run-all.sh --only gpu  the GPU benchmark alone (about 3 minutes): replaces its
#                                     section and its rows of the summary in bench/RESULTS.md,
#                                     leaves the rest as it is; with --quick as well, writes
#                                     build/bench-out/gpu-quick.md and leaves RESULTS.md alone
#   bash bench/run-all.sh --only scale  the head at 2,000 paced agents against Prometheus and
#                                     VictoriaMetrics alone (about 6 minutes; --quick: 2):
#                                     replaces section 8 and its summary rows in the same way
#                                     (with --quick: build/bench-out/scale-quick.md)
#   bash bench/run-all.sh --only report  `jobscope report` on the week-long store alone (its
#                                     time against job length included; about 10 minutes,
#                                     more when the store must be made): replaces section 7
#                                     and its summary rows (--quick: in RESULTS-quick.md)
#   bash bench/run-all.sh --only agent  the agent against pidstat, node_exporter and the floor
#                                     alone (about 2 minutes): replaces section 5 and its
#                                     summary rows in the same way (--quick: agent-quick.md)
#   bash bench/run-all.sh --only density  bytes per stored value: jobscope's store against
#                                     Prometheus and VictoriaMetrics with the same values
#                                     (about 30 minutes: a 15-minute agent window and a day of
#                                     js-mkstore's bench store; --quick: about 6): replaces
#                                     section 10 and its summary rows in the same way (with
#                                     --quick: build/bench-out/density-quick.md)
#
# Expects an optimized build in build/ (./dev bench sets it up); rebuilds
# jobscope, the two helpers and the core library it needs with ninja.  Raw JSON of every run
# goes to build/bench-out/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
	echo "usage: bash bench/run-all.sh [--quick] [--only gpu|scale|density|agent|report]" >&2
	exit 2
}
quick=false
only=""
invocation="bash bench/run-all.sh${*:+ $*}"
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=true ;;
	--only)
		case "${2:-}" in
		gpu | scale | density | agent | report) only=$2 ;;
		*) usage ;;
		esac
		shift
		;;
	*) usage ;;
	esac
	shift
done

say() { printf '==> %s\n' "$*" >&2; }

if [ ! -f build/build.ninja ]; then
	echo "run-all: no build/ here: run ./dev bench (or meson setup build --buildtype=release)" >&2
	exit 1
fi
# only what the benchmarks run: a test that does not build must not stop them
ninja -C build jobscope tests/js-sleepers tests/js-busy libjobscope_core.a >/dev/null
buildtype=$(meson introspect build --buildoptions 2>/dev/null | python3 -c '
import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"][0])' 2>/dev/null ||
	echo unknown)
[ "$buildtype" = release ] || say "warning: build/ is a '$buildtype' build, not release"

floor_cmd="cc -O2 -Wall -Wextra -Werror -o build/bench-floor bench/floor.c"
if [ -z "$only" ]; then
	say "$floor_cmd"
	$floor_cmd
fi

# The paced-agents simulator of section 8 (head_scale.py builds it too when it is missing).
sim_cmd="cc -O2 -Wall -Wextra -Werror -o build/bench-agents-sim bench/agents_sim.c -lsnappy -lzstd -lm"
if [ -z "$only" ] || [ "$only" = scale ]; then
	say "$sim_cmd"
	$sim_cmd || say "warning: bench-agents-sim did not build (libsnappy-dev, libzstd-dev?)"
fi

# The GPU benchmark: bench-gpu-cost linked with the core library, against
# the fake vendor libraries the build makes (tests/fakes).
gpu_cmd="cc -O2 -Wall -Wextra -Werror -std=gnu11 -Isrc bench/gpu_cost.c build/libjobscope_core.a -lsqlite3 -lm -ldl -o build/bench-gpu-cost"
if [ -z "$only" ] || [ "$only" = gpu ]; then
	ninja -C build tests/fakes/libnvidia-ml.so.1 tests/fakes/librocm_smi64.so.1 >/dev/null
	say "$gpu_cmd"
	$gpu_cmd
fi

out=build/bench-out
mkdir -p "$out"
if $quick; then
	results=$out/RESULTS-quick.md
	cost1_args=(--counts 100,1000 --reps 1 --window 5)
	cost2_args=(--counts 100,1000 --reps 1 --window 3 --interval-ms 100 --no-pidstat)
	over_args=(--runs 7 --work 500)
	gpu_args=(--rounds 11 --loop-ms 50 --e2e-reps 1 --e2e-seconds 5)
	scale_args=(--quick --steps 250,500)
	density_args=(--quick)
else
	results=bench/RESULTS.md
	kept_attrib=$(sed -n '/^## 9\. /,$p' bench/RESULTS.md 2>/dev/null || true)
	cost1_args=(--counts 100,1000 --reps 3 --window 20)
	cost2_args=(--counts 100,1000 --reps 3 --window 10 --interval-ms 100 --no-pidstat)
	over_args=(--runs 8 --work 2000)
	gpu_args=(--rounds 41 --loop-ms 100 --e2e-reps 5 --e2e-seconds 10)
	scale_args=(--steps 250,500,1000)
	density_args=()
fi

kept_attrib=${kept_attrib:-}
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
t0=$SECONDS
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""
[ -n "$(git status --porcelain -- src 2>/dev/null)" ] && dirty=" (with uncommitted changes in src/)"
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

gpu_bench() {
	say "GPU sampling cost (fake NVML, fake ROCm SMI)"
	python3 bench/gpu_cost.py "${gpu_args[@]}" --json "$out/gpu.json" \
		--markdown "$out/gpu.md" --summary "$out/gpu-summary.md"
}

# The GPU section of RESULTS.md, to stdout.
gpu_section() {
	echo "## 4. GPU sampling cost per tick (fake vendor libraries)"
	echo
	echo "Written by \`$invocation\` on $(date -u '+%Y-%m-%d %H:%M UTC')," \
		"commit $commit$dirty, \`$buildtype\` build, on $(nproc) CPUs ($cpu_model)." \
		"Built with \`$gpu_cmd\`; the fakes are the build's (build/tests/fakes)." \
		"Method: bench/README.md."
	echo
	cat "$out/gpu.md"
}

# Section 8: the head at 2,000 paced agents against Prometheus and VictoriaMetrics
# (bench/head_scale.py), into $out/scale-section.md.
scale_bench() {
	local t0=$SECONDS
	say "jobscope head at 2,000 paced agents vs Prometheus and VictoriaMetrics remote write"
	if ! python3 bench/head_scale.py "${scale_args[@]}" --json "$out/scale.json" \
		--markdown "$out/scale.md"; then
		say "warning: bench/head_scale.py failed (see above); its section says so"
		echo "Did not run: \`python3 bench/head_scale.py\` failed (see the log)." >"$out/scale.md"
		rm -f "$out/scale.json"
	fi
	{
		echo "## 8. jobscope head at 2,000 paced agents against Prometheus and VictoriaMetrics"
		echo
		echo "Written by \`$invocation\` on $(date -u '+%Y-%m-%d %H:%M UTC')," \
			"commit $commit$dirty, \`$buildtype\` build, on $(nproc) CPUs ($cpu_model);" \
			"took $((SECONDS - t0)) s.  The simulator: \`$sim_cmd\`.  Method: bench/README.md."
		echo
		cat "$out/scale.md"
	} >"$out/scale-section.md"
}

# Puts $out/scale-section.md into the results file $1 as section 8 (replacing one there)
# and its rows into the summary (replacing those there).
scale_put() {
	python3 - "$1" "$out/scale-section.md" "$out/scale.json" <<'PY'
import json, sys

sys.path.insert(0, "bench")
from results_md import put

path, section_file, json_file = sys.argv[1:4]
try:
    res = json.load(open(json_file))
    a, r = res["args"], res["result"]
    s, h = r["summary"], r["servers"].get("head", {})
    n = a["agents"]
    rows = []
    if "error" not in h and "head" in s:
        ok = lambda b: "met" if b else "NOT met"
        p99 = h["lat_p99_ms"]
        rows.append(f"| scale: head, {n} paced agents at 1 s, ingest p99 latency | "
                    f"{'-' if p99 is None else f'{p99:.1f} ms'} | < 100 ms | "
                    f"{ok(p99 is not None and p99 < 100)} |")
        rows.append(f"| scale: head, {n} paced agents, ticks acknowledged | "
                    f"{h['ticks_acked']:,} of {h['ticks_due']:,}, "
                    f"{sum(h['errors'].values())} errors | all, 0 errors | "
                    f"{ok(s['head']['pass'])} |")
        vs = [f"{s['head']['values_per_cpu_s']:,.0f}"]
        for k, name in (("prometheus", "Prometheus"), ("victoria", "VictoriaMetrics")):
            c = s.get("head_vs_" + k)
            if c:
                vs.append(f"{c['values_per_cpu_s']:.2f} × {name}")
        rows.append(f"| scale: head values per CPU-second at {n} agents | {'; '.join(vs)} | "
                    "(reported) | |")
        npn = s.get("nodes_per_head")
        rows.append(f"| scale: nodes per head ({s['values_per_node_tick']} values a second each, "
                    f"1.5 cores) | {'-' if npn is None else f'{npn:,.0f}'} "
                    f"({s['nodes_per_head_basis']}) | (reported) | |")
    else:
        rows.append("| scale benchmark | did not run | | |")
except (OSError, KeyError, ValueError, TypeError):
    rows = ["| scale benchmark | did not run | | |"]
ours = lambda l: l.startswith("| scale: ") or l.startswith("| scale benchmark ")
put(path, open(section_file).read(), rows, ours, "## 8. jobscope head at 2,000 paced agents")
PY
	mv "$1.tmp" "$1"
}

# Section 10: bytes per stored value, jobscope against Prometheus and VictoriaMetrics
# (bench/store_density.py), into $out/density-section.md.
density_bench() {
	local t0=$SECONDS
	say "store density: jobscope vs Prometheus and VictoriaMetrics, the same values"
	if ! ninja -C build tests/js-mkstore >/dev/null ||
		! python3 bench/store_density.py ${density_args[@]+"${density_args[@]}"} \
			--json "$out/density.json" --markdown "$out/density.md"; then
		say "warning: bench/store_density.py failed (see above); its section says so"
		echo "Did not run: \`python3 bench/store_density.py\` failed (see the log)." >"$out/density.md"
		rm -f "$out/density.json"
	fi
	{
		echo "## 10. Store density: jobscope against Prometheus and VictoriaMetrics"
		echo
		echo "Written by \`$invocation\` on $(date -u '+%Y-%m-%d %H:%M UTC')," \
			"commit $commit$dirty, \`$buildtype\` build, on $(nproc) CPUs ($cpu_model);" \
			"took $((SECONDS - t0)) s.  Method: bench/README.md."
		echo
		cat "$out/density.md"
	} >"$out/density-section.md"
}

# Puts $out/density-section.md into the results file $1 as section 10 and its rows into
# the summary, replacing those there.
density_put() {
	python3 - "$1" "$out/density-section.md" "$out/density.json" <<'PY'
import json, sys

sys.path.insert(0, "bench")
from results_md import put

path, section_file, json_file = sys.argv[1:4]
try:
    checks = json.load(open(json_file))["result"]["checks"]
    rows = [f"| density: {c['check']} | {c['measured']} | {c['target']} | "
            f"{'met' if c['pass'] else 'NOT met'} |" for c in checks]
except (OSError, KeyError, ValueError):
    rows = []
rows = rows or ["| density benchmark | did not run | | |"]
ours = lambda l: l.startswith("| density: ") or l.startswith("| density benchmark ")
put(path, open(section_file).read(), rows, ours, "## 10. Store density")
PY
	mv "$1.tmp" "$1"
}

if [ "$only" = density ]; then
	density_bench
	if $quick; then
		cp "$out/density-section.md" "$out/density-quick.md"
		say "wrote $out/density-quick.md"
	else
		density_put bench/RESULTS.md
		say "wrote bench/RESULTS.md (its section 10 and summary rows)"
	fi
	exit 0
fi

# `jobscope report` on a week-long synthetic store (js-mkstore, tests/tools/mkstore.c) against
# the sqlite3 CLI, and its time against job length (1 h, 8 h, 7 days; from report checkpoints
# and by whole replays): its section and summary rows go into $results.  The store is made
# once (about 3 minutes, 2 GiB) and kept in /var/tmp/jobscope-bench/.
report_bench() {
say "jobscope report (one long job, history by user, time by job length) vs the sqlite3 CLI"
report_t0=$SECONDS
report_quick=""
$quick && report_quick=--quick
if ! ninja -C build tests/js-mkstore >/dev/null ||
	! python3 bench/report_bench.py ${report_quick:+"$report_quick"} \
		--json "$out/report.json" --markdown "$out/report.md"; then
	say "warning: bench/report_bench.py failed (see above); its section says so"
	echo "Did not run: \`python3 bench/report_bench.py\` failed (see the log)." >"$out/report.md"
	rm -f "$out/report.json"
fi
{
	echo "## 7. jobscope report on a week-long store against the sqlite3 CLI"
	echo
	echo "Written by \`$invocation\` on $(date -u '+%Y-%m-%d %H:%M UTC')," \
		"commit $commit$dirty, \`$buildtype\` build, on $(nproc) CPUs ($cpu_model);" \
		"took $((SECONDS - report_t0)) s.  Method: bench/report_bench.py."
	echo
	cat "$out/report.md"
} >"$out/report-section.md"
python3 - "$results" "$out/report-section.md" "$out/report.json" <<'PY'
import json, sys

sys.path.insert(0, "bench")
from results_md import put

path, section_file, json_file = sys.argv[1:4]
try:
    checks = json.load(open(json_file))["result"]["checks"]
    rows = []
    for c in checks:
        verdict = "" if c["pass"] is None else ("met" if c["pass"] else "NOT met")
        rows.append(f"| report: {c['check']} | {c['measured']} | {c['target']} | {verdict} |")
except (OSError, KeyError, ValueError):
    rows = ["| report benchmark | did not run | | |"]
ours = lambda l: l.startswith("| report: ") or l.startswith("| report benchmark ")
put(path, open(section_file).read(), rows, ours, "## 7. jobscope report")
PY
mv "$results.tmp" "$results"
say "added the report benchmark to $results"
}
if [ "$only" = report ]; then
	[ -f "$results" ] || printf '# Benchmark results (quick)\n' >"$results"
	report_bench
	exit 0
fi

if [ "$only" = scale ]; then
	scale_bench
	if $quick; then
		cp "$out/scale-section.md" "$out/scale-quick.md"
		say "wrote $out/scale-quick.md"
	else
		scale_put bench/RESULTS.md
		say "wrote bench/RESULTS.md (its section 8 and summary rows)"
	fi
	exit 0
fi

if [ "$only" = agent ]; then
	t_agent=$SECONDS
	say "jobscope agent vs pidstat, node_exporter and the floor (1000 extra processes)"
	agent_quick=""
	$quick && agent_quick=--quick
	if ! python3 bench/agent_cost.py ${agent_quick:+"$agent_quick"} \
		--json "$out/agent.json" --markdown "$out/agent.md"; then
		say "warning: bench/agent_cost.py failed (see above); its section says so"
		echo "Did not run: \`python3 bench/agent_cost.py\` failed (see the log)." >"$out/agent.md"
		rm -f "$out/agent.json"
	fi
	{
		echo "## 5. jobscope agent against pidstat, node_exporter and the floor"
		echo
		echo "Written by \`$invocation\` on $(date -u '+%Y-%m-%d %H:%M UTC')," \
			"commit $commit$dirty, \`$buildtype\` build, on $(nproc) CPUs ($cpu_model);" \
			"took $((SECONDS - t_agent)) s.  Method: bench/README.md."
		echo
		cat "$out/agent.md"
	} >"$out/agent-section.md"
	if $quick; then
		cp "$out/agent-section.md" "$out/agent-quick.md"
		say "wrote $out/agent-quick.md"
		exit 0
	fi
	python3 - bench/RESULTS.md "$out/agent-section.md" "$out/agent.json" <<'PY'
import json, sys

sys.path.insert(0, "bench")
from results_md import put

path, section_file, json_file = sys.argv[1:4]
try:
    ag = json.load(open(json_file))["result"]
    rows = []
    for c in ag["checks"]:
        verdict = "" if c["pass"] is None else ("met" if c["pass"] else "NOT met")
        rows.append(f"| agent, 1000 extra processes, 1 s: {c['check']} | {c['measured']} | "
                    f"{c['target']} | {verdict} |")
    st = ag["store_summary"]
    bpv = st["bytes_per_value"]
    rows.append(f"| agent store growth at this load | {bpv:.2f} bytes per value, "
                f"{st['bytes_per_day'] / 2**20:.0f} MiB per day | (DESIGN.md: ≤ 2) | "
                f"{'met' if bpv <= 2 else 'NOT met'} |")
except (OSError, KeyError, ValueError, TypeError):
    rows = ["| agent benchmark | did not run | | |"]
ours = lambda l: l.startswith("| agent, 1000 extra processes") or \
    l.startswith("| agent store growth") or l.startswith("| agent benchmark ")
put(path, open(section_file).read(), rows, ours, "## 5. jobscope agent against pidstat")
PY
	mv bench/RESULTS.md.tmp bench/RESULTS.md
	say "wrote bench/RESULTS.md (its section 5 and summary rows)"
	exit 0
fi

if [ "$only" = gpu ]; then
	gpu_bench
	if $quick; then
		gpu_section >"$out/gpu-quick.md"
		say "wrote $out/gpu-quick.md"
		exit 0
	fi
	# the GPU section and the GPU rows of the summary are replaced; the rest stays
	gpu_section >"$out/gpu-section.md"
	python3 - bench/RESULTS.md "$out/gpu-section.md" "$out/gpu-summary.md" <<'PY'
import sys

sys.path.insert(0, "bench")
from results_md import put

path, section_file, rows_file = sys.argv[1:4]
section = open(section_file).read()
rows = [l for l in open(rows_file).read().splitlines() if l.strip()]
gpu_row = lambda l: l.startswith("| GPU ") or l.startswith("| `jobscope run` 100 ms, sampler")
put(path, section, rows, gpu_row, "## 4. GPU sampling cost")
PY
	mv bench/RESULTS.md.tmp bench/RESULTS.md
	say "wrote bench/RESULTS.md (its GPU section and summary rows)"
	exit 0
fi

say "sampler cost, 1 s interval (jobscope, floor, pidstat)"
python3 bench/sampler_cost.py "${cost1_args[@]}" \
	--json "$out/sampler-1s.json" --markdown "$out/sampler-1s.md"
say "sampler cost, 100 ms interval (jobscope, floor)"
python3 bench/sampler_cost.py "${cost2_args[@]}" \
	--json "$out/sampler-100ms.json" --markdown "$out/sampler-100ms.md"
say "overhead on a CPU-bound workload"
python3 bench/overhead.py "${over_args[@]}" \
	--json "$out/overhead.json" --markdown "$out/overhead.md"
gpu_bench
# the agent against pidstat, node_exporter and the floor of every process (bench/floor_all.c)
say "jobscope agent vs pidstat, node_exporter and the floor (1000 extra processes)"
agent_quick=""
$quick && agent_quick=--quick
if ! python3 bench/agent_cost.py ${agent_quick:+"$agent_quick"} \
	--json "$out/agent.json" --markdown "$out/agent.md"; then
	say "warning: bench/agent_cost.py failed (see above); its section says so"
	echo "Did not run: \`python3 bench/agent_cost.py\` failed (see the log)." >"$out/agent.md"
fi
# the head's ingest against Prometheus remote write (the same values), and an agent's catch-up
say "jobscope head ingest vs Prometheus remote write (50 simulated nodes), catch-up"
head_quick=""
$quick && head_quick=--quick
if ! python3 bench/head_ingest.py ${head_quick:+"$head_quick"} \
	--json "$out/head.json" --markdown "$out/head.md"; then
	say "warning: bench/head_ingest.py failed (see above); its section says so"
	echo "Did not run: \`python3 bench/head_ingest.py\` failed (see the log)." >"$out/head.md"
fi

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
took=$((SECONDS - t0))
mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)

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
try:
    ag = json.load(open(f"{out}/agent.json"))["result"]
    for c in ag["checks"]:
        verdict = "" if c["pass"] is None else ("met" if c["pass"] else "NOT met")
        print(f"| agent, 1000 extra processes, 1 s: {c['check']} | {c['measured']} | {c['target']} | {verdict} |")
    st = ag["store_summary"]
    bpv = st["bytes_per_value"]
    print(f"| agent store growth at this load | {bpv:.2f} bytes per value, {st['bytes_per_day'] / 2**20:.0f} MiB per day | (DESIGN.md: ≤ 2) | {ok(bpv, 2)} |")
except (OSError, KeyError, ValueError):
    print("| agent benchmark | did not run | | |")
try:
    hd = json.load(open(f"{out}/head.json"))["result"]
    s, h, p = hd["summary"], hd["head"], hd["prometheus"]
    print(f"| head / Prometheus remote write, values per CPU-second | {s['ratio']:.2f} ({h['values_per_cpu_s']:,.0f} / {p['values_per_cpu_s']:,.0f}) | ≥ 2 | {'met' if s['pass'] else 'NOT met'} |")
    print(f"| nodes one head takes (1 s, 8 GPUs, 200 processes each) | {s['nodes']:.0f} | (no target) | |")
    c = hd["catchup"]
    if c.get("seconds") is not None:
        print(f"| head catch-up of a {c['host_ticks']}-tick agent outage ({c['fact_rows']} rows) | {c['seconds']:.2f} s | (no target) | |")
    else:
        print(f"| head catch-up | failed: {c.get('error')} | | |")
except (OSError, KeyError, ValueError):
    print("| head benchmark | did not run | | |")
EOF
	cat "$out/gpu-summary.md"
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
	echo
	gpu_section
	echo
	echo "## 5. jobscope agent against pidstat, node_exporter and the floor"
	echo
	cat "$out/agent.md"
	echo
	echo "## 6. jobscope head ingest against Prometheus remote write"
	echo
	cat "$out/head.md"
} >"$results.tmp"
mv "$results.tmp" "$results"
say "wrote $results"

report_bench

scale_bench
scale_put "$results"
say "added the paced-agents benchmark to $results"
# section 9 (bench/attrib_cost.py, run by hand with two builds) is kept as it was
if [ -n "$kept_attrib" ]; then
	printf '\n%s\n' "$kept_attrib" >>"$results"
	say "kept section 9 (attribution cost) of the previous $results"
fi
# after section 9, which the lines above keep with whatever follows it: put() replaces
# the section 10 kept there, or appends one
density_bench
density_put "$results"
say "added the store density benchmark to $results"
