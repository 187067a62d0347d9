#!/usr/bin/env bash
# Where an exploration's wall time goes: one `rp-sim explore` under `perf`,
# every CPU sample sorted into the parts of a simulation step, plus the time
# nobody was on a CPU (waiting for a wake-up).
#
#   sim/where-time-goes.sh SCENARIO [SEEDS] [START_SEED] [-- rp-sim options]
#
# Needs perf (Debian: apt-get install linux-perf) and a release build
# (cargo build --release -p redis-primitives-sim). Prints one Markdown row:
# the columns of reports/explore-speed.md's breakdown, each a share of the
# wall time. With the default placement the simulation thread and its
# servers share one core (sim/src/placement.rs), so the shares and
# "waiting" add up to 100 %; with `-- --placement anywhere` they may not.
# It runs one job (`explore --jobs 1`): the breakdown of one simulation.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:?usage: sim/where-time-goes.sh SCENARIO [SEEDS] [START_SEED] [-- rp-sim options]}
seeds=${2:-20}
start=${3:-9000000}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift
bin=${RP_SIM:-target/release/rp-sim}  # RP_SIM=/path/to/rp-sim measures another build
[ -x "$bin" ] || { echo "build first: cargo build --release -p redis-primitives-sim" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf not found: apt-get install linux-perf" >&2; exit 2; }
data=$(mktemp)
trap 'rm -f "$data" "$data.txt" "$data.stat"' EXIT
# Two runs of the same seeds: one counted (`perf stat`: the wall time, and
# the CPU time of rp-sim and every server it started), one sampled
# (`perf record` at 997 Hz, a prime, so the sampling does not lock onto the
# 1 ms ticks). Sampling slows the run down, so its shares are applied to the
# counted run's CPU time, and "waiting" is the counted run's wall time that
# no process of the tree was on a CPU.
start_ns=$(date +%s%N)
perf stat -x, -e task-clock -o "$data.stat" -- "$bin" "$@" explore -s "$scenario" --seeds "$seeds" --start-seed "$start" --jobs 1 >/dev/null 2>&1 || true
wall_ns=$(( $(date +%s%N) - start_ns ))
cpu_ms=$(awk -F, '/task-clock/ {print $1}' "$data.stat")
perf record -q -F 997 -o "$data" -- "$bin" "$@" explore -s "$scenario" --seeds "$seeds" --start-seed "$start" --jobs 1 >/dev/null 2>&1 || true
perf report -i "$data" --no-children --sort comm,dso,sym -g none -q --percent-limit 0 -F overhead,sample,comm,dso,sym 2>/dev/null > "$data.txt"
# perf names a process by its executable's first 15 characters (the
# kernel's comm), so an RP_SIM build under another name is still rp-sim.
comm=$(basename "$bin" | cut -c1-15)
python3 - "$data.txt" "$wall_ns" "$cpu_ms" "$scenario" "$seeds" "$comm" <<'EOF'
import re, sys
path, wall_ns, cpu_ms, scenario, seeds, sim_comm = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
parts = {k: 0 for k in ["turmoil", "bridge", "clock", "library", "harness", "alloc", "redis", "other"]}
for line in open(path):
    m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    n, comm, dso, kind, sym = int(m[1]), m[2], m[3], m[4], m[5]
    if comm.startswith("redis-server") or comm.startswith("valkey-server") or comm.startswith("bio_") or comm.startswith("jemalloc"):
        parts["clock" if "rp_clock" in dso else "redis"] += n
    elif comm != sim_comm:
        continue  # perf itself, kernel threads, idle
    elif "ServerClock" in sym or "clock::" in sym and "redis_primitives_sim" in sym:
        parts["clock"] += n
    elif kind == "k" or "bridge::" in sym or sym.startswith("__send") or sym.startswith("__recv") or "read" == sym:
        # the kernel's work for rp-sim is the bridge's real sockets (turmoil makes no system calls)
        parts["bridge"] += n
    elif re.search(r"turmoil::|tokio::|indexmap|hash|Hasher|LocalKey|Timespec|clock_gettime|scoped::Scoped|RawWaker|wake", sym):
        parts["turmoil"] += n
    elif re.search(r"redis_primitives::|^redis::|<redis::|combine::", sym):
        parts["library"] += n
    elif "redis_primitives_sim" in sym or "hdrhistogram" in sym or "serde" in sym:
        parts["harness"] += n
    elif re.search(r"malloc|free|memmove|memcpy|memset|realloc|cfree|alloc::", sym):
        parts["alloc"] += n
    else:
        parts["other"] += n
wall = wall_ns / 1e9
busy = cpu_ms / 1e3 / wall  # share of the wall time some process of the tree was on a CPU
total = sum(parts.values()) or 1
cols = [100 * busy * parts[k] / total for k in ["turmoil", "bridge", "redis", "clock", "library", "harness", "alloc", "other"]]
waiting = max(0.0, 100 * (1 - busy))
print(f"| `{scenario}` | {seeds} | {wall:.2f} s | " + " | ".join(f"{c:.0f} %" for c in cols) + f" | {waiting:.0f} % |")
EOF
