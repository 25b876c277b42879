#!/usr/bin/env bash
# Where a run's cores go while packets are processed: each Vigil thread's
# time on a CPU, the time the CPUs sat idle, and how long each thread
# slept before whom woke it. Traced with the scheduler's own events
# (`perf record -a -e sched:sched_switch -e sched:sched_wakeup`), so the
# figures are times, not samples.
#
#   scripts/cpu-use.sh [--workers N] [--vigil BIN] [PCAP] [-- VIGIL_ARGS...]
#
# The window is from the first to the last scheduler event of a worker
# thread (`vigil-w*`): the processing phase, not rule loading. With one
# worker that thread rarely switches, so the window is only meaningful
# from 2 workers up. Needs root (system-wide tracing) and perf.
set -euo pipefail
cd "$(dirname "$0")/.."

workers=2
vigil=target/release/vigil
pcap=../shared/pcaps/dev/dev-mix.pcap
rules=../shared/rules/et-open/emerging.rules
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --workers) workers=$2; shift 2 ;;
        --vigil) vigil=$2; shift 2 ;;
        --rules) rules=$2; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) pcap=$1; shift ;;
    esac
done
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf record -a -q -e sched:sched_switch -e sched:sched_wakeup -o "$tmp/sched.data" \
    "$vigil" run -r "$pcap" -S "$rules" -l "$tmp/out" --workers "$workers" "${extra[@]}" \
    >/dev/null 2>"$tmp/vigil.err" || { cat "$tmp/vigil.err" >&2; exit 1; }
perf script -i "$tmp/sched.data" -F comm,tid,cpu,time,event,trace 2>/dev/null >"$tmp/sched.txt"
wall=$(awk '/wall_seconds/ {print $NF}' "$tmp/out/stats.log")

python3 - "$tmp/sched.txt" "$wall" "$(basename "$vigil")" <<'PY'
import collections, re, sys

path, wall, main_comm = sys.argv[1], sys.argv[2], sys.argv[3][:15]
line_re = re.compile(r"\s*(\S+)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)")
field_re = re.compile(r"(\w+)=(\S+)")
events = []  # (time, cpu, kind, pid, comm, prev_state, next_pid, next_comm, waker_tid, waker_comm)
for line in open(path):
    m = line_re.match(line)
    if not m:
        continue
    comm, tid, cpu, t, ev, rest = m.groups()
    f = dict(field_re.findall(rest))
    t, cpu = float(t), int(cpu)
    if ev == "sched_switch":
        events.append((t, cpu, "switch", int(f["prev_pid"]), f["prev_comm"], f["prev_state"],
                       int(f["next_pid"]), f["next_comm"], 0, ""))
    elif ev == "sched_wakeup":
        events.append((t, cpu, "wake", int(f["pid"]), f["comm"], "", 0, "", int(tid), comm))

workers = [t for t, _, _, _, c, *_ in events if c.startswith("vigil-w")]
if not workers:
    sys.exit("no worker thread seen in the trace")
t0, t1 = min(workers), max(workers)
names = {}
# Time on a CPU, per task name, counted per CPU from one switch to the
# next (the idle task has pid 0 on every CPU); the task a CPU runs when
# the window opens is credited from the window's start.
on_cpu = collections.Counter()
last_switch = {}
running = {}
slept = {}
woken = collections.Counter()
woken_n = collections.Counter()
for t, cpu, kind, pid, comm, state, next_pid, next_comm, wtid, wcomm in events:
    if not t0 <= t <= t1:
        continue
    names[pid] = comm
    if kind == "switch":
        names[next_pid] = next_comm
        on_cpu[comm] += t - last_switch.get(cpu, t0)
        last_switch[cpu] = t
        running[cpu] = next_comm
        if state.startswith(("S", "D")):
            slept[pid] = t
    elif kind == "wake" and pid in slept:
        waker = names.get(wtid, wcomm)
        if waker.startswith("swapper"):
            waker = "an idle CPU (remote wake-up)"
        key = (comm, waker)
        woken[key] += t - slept.pop(pid)
        woken_n[key] += 1
# What each CPU was running when the window closed.
for cpu, comm in running.items():
    on_cpu[comm] += t1 - last_switch[cpu]


def role(comm):
    if comm.startswith("swapper"):
        return "idle"
    if comm.startswith("vigil-w"):
        return comm
    if comm == "vigil-merge":
        return "merge"
    if comm in ("vigil", main_comm):
        return "reader"
    return "other"


by_role = collections.Counter()
for comm, secs in on_cpu.items():
    by_role[role(comm)] += secs
span = t1 - t0
print(f"processing wall (stats.log) {wall} s; traced window {span:.3f} s")
print("core-seconds in the window:")
for r in sorted(by_role, key=lambda r: (r == "idle", r == "other", r)):
    print(f"  {r:<12} {by_role[r]:.3f}")
busy = [v for r, v in by_role.items() if r.startswith("vigil-w")]
if len(busy) > 1:
    print(f"  busiest worker / mean: {max(busy) / (sum(busy) / len(busy)):.3f}")
print("sleeps of Vigil's threads, by who woke them (seconds, count):")
for (who, waker), secs in sorted(woken.items(), key=lambda x: -x[1]):
    if who.startswith("vigil") or who == main_comm:
        print(f"  {who:<15} woken by {waker:<28} {secs:.3f}  {woken_n[(who, waker)]}")
PY
