#!/usr/bin/env bash
# Growth: Vigil on a capture and on the same capture repeated N times
# (scripts/repeat_pcap.py: copies one after another in time, with shifted
# addresses so flows stay distinct), interleaved over rounds. Reports the
# processing-time ratio per copy (1.00: time grows linearly) and the peak
# RSS ratio (1.00: memory does not grow with the capture), medians of the
# per-round ratios.
#
#   scripts/bench-growth.sh [PCAP] [--copies N] [--rounds R] [--rules FILE]
#                           [--workers W] [--out DIR]
#
# Defaults: ../shared/pcaps/dev/dev-mix.pcap, 10 copies, 3 rounds, ET Open,
# 1 worker, target/bench-growth. VIGIL names the binary (default
# target/release/vigil).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
pcap="$root/../shared/pcaps/dev/dev-mix.pcap"
rules="$root/../shared/rules/et-open/emerging.rules"
copies=10 rounds=3 workers=1 out="$root/target/bench-growth"
while [ $# -gt 0 ]; do
    case "$1" in
        --copies) copies="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --rules) rules="$2"; shift 2 ;;
        --workers) workers="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        -*) echo "bench-growth: unknown option $1" >&2; exit 2 ;;
        *) pcap="$1"; shift ;;
    esac
done
vigil="${VIGIL:-$root/target/release/vigil}"
[ -x /usr/bin/time ] || { echo "bench-growth: /usr/bin/time is missing: apt-get install time" >&2; exit 1; }
[ -x "$vigil" ] || { echo "bench-growth: no $vigil (cargo build --release)" >&2; exit 1; }
mkdir -p "$out"
big="$out/repeated-$copies.pcap"
if [ ! -f "$big" ] || [ "$pcap" -nt "$big" ]; then
    python3 "$here/repeat_pcap.py" "$pcap" "$big" "$copies"
fi

run() { # label pcap -> prints "label run_seconds peak_kb packets alerts"
    local label="$1" input="$2" dir="$out/$1"
    mkdir -p "$dir"
    /usr/bin/time -v -o "$dir/time.txt" "$vigil" run -r "$input" -S "$rules" -l "$dir" \
        --workers "$workers" --quiet 2> "$dir/stderr.txt" > /dev/null
    local secs kb line
    line=$(grep '^vigil: [0-9]* packets' "$dir/stderr.txt" | tail -1)
    secs=$(sed -E 's/.* run ([0-9.]+)s.*/\1/' <<< "$line")
    kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
    echo "$label $secs $kb $(awk '{print $2}' <<< "$line") $(sed -E 's/.* ([0-9]+) alerts.*/\1/' <<< "$line")"
}

# One warm-up run of each (prefilter cache, page cache), not counted.
run one "$pcap" > /dev/null
run many "$big" > /dev/null
results="$out/results.txt"
: > "$results"
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then order="one many"; else order="many one"; fi
    for what in $order; do
        if [ "$what" = one ]; then run one "$pcap"; else run many "$big"; fi | tee -a "$results"
    done
done
python3 - "$results" "$copies" "$workers" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
copies, workers = int(sys.argv[2]), sys.argv[3]
one = [r for r in rows if r[0] == "one"]
many = [r for r in rows if r[0] == "many"]
t = [float(b[1]) / (copies * float(a[1])) for a, b in zip(one, many)]
m = [float(b[2]) / float(a[2]) for a, b in zip(one, many)]
print(f"growth: {copies} copies, {workers} worker(s), {len(t)} interleaved rounds")
print(f"  processing time: 1 copy median {statistics.median(float(a[1]) for a in one):.3f} s, "
      f"{copies} copies median {statistics.median(float(b[1]) for b in many):.3f} s")
print(f"  time per copy / time of 1 copy: median {statistics.median(t):.3f} "
      f"(rounds {', '.join(f'{x:.3f}' for x in t)}; 1.00 = linear)")
print(f"  peak RSS: 1 copy {statistics.median(int(a[2]) for a in one) / 1024:.0f} MiB, "
      f"{copies} copies {statistics.median(int(b[2]) for b in many) / 1024:.0f} MiB; ratio median "
      f"{statistics.median(m):.3f} (rounds {', '.join(f'{x:.3f}' for x in m)}; target <= 1.10)")
print(f"  packets {one[0][3]} / {many[0][3]}, alerts {one[0][4]} / {many[0][4]}")
PY
