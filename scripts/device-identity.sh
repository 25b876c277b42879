#!/usr/bin/env bash
# The device path's acceptance check: eve.json and fast.log on the shared
# dev capture with ET Open are byte-identical with --prefilter-device
# opencl and on the CPU, at 1 and 2 workers, with small batches (16
# buffers, 4 queues, a 0.2 ms budget so time limits fire, a 64-entry
# output area so overflows are re-run) and large adaptive ones (AC-Full,
# and a CPU threshold so both paths are used). The one difference allowed
# is the device's own counters (`prefilter_device` in the stats record).
# Needs an OpenCL platform (CI: PoCL).
set -euo pipefail
cd "$(dirname "$0")/.."
PCAP=${PCAP:-../shared/pcaps/dev/dev-mix.pcap}
RULES=${RULES:-../shared/rules/et-open/emerging.rules}
OUT=${OUT:-target/device-identity}
rm -rf "$OUT"
mkdir -p "$OUT"
run() {
    local name=$1
    shift
    target/release/vigil run -r "$PCAP" -S "$RULES" -l "$OUT/$name" --quiet "$@" \
        2> "$OUT/$name.stderr" || { cat "$OUT/$name.stderr" >&2; exit 1; }
    echo "$name: $(tail -n 1 "$OUT/$name.stderr")"
}
# eve.json without the stats record's "prefilter_device" object.
strip() {
    python3 - "$1" <<'PY'
import re, sys
with open(sys.argv[1], "rb") as f:
    data = f.read()
sys.stdout.buffer.write(re.sub(rb',"prefilter_device":\{[^{}]*\}', b"", data))
PY
}
# Device counters of a run: batches and buffers on the device.
used() {
    python3 - "$1" <<'PY'
import json, sys
last = None
for line in open(sys.argv[1]):
    if '"event_type":"stats"' in line:
        last = json.loads(line)
d = last["stats"]["prefilter_device"]
if d["device_buffers"] == 0 or d["batches"] == 0:
    sys.exit(f"{sys.argv[1]}: nothing ran on the device: {d}")
print(f"  device: {d['batches']} batches ({d['batches_timed_out']} by time limit), "
      f"{d['device_buffers']} buffers / {d['device_bytes']} bytes on the device, "
      f"{d['cpu_buffers']} / {d['cpu_bytes']} on the CPU, max {d['max_in_flight']} in flight, "
      f"{d['overflow_reruns']} overflow re-runs")
PY
}
for w in 1 2; do
    run "cpu-w$w" --workers "$w"
    run "small-w$w" --workers "$w" --prefilter-device opencl --opencl-cpu-threshold 0 \
        --opencl-batch-buffers 16 --opencl-queues 4 --max-latency-ms 0.2 --opencl-output-entries 64
    run "large-w$w" --workers "$w" --prefilter-device opencl --prefilter ac-full \
        --opencl-cpu-threshold 128 --max-latency-ms 200
    strip "$OUT/cpu-w$w/eve.json" > "$OUT/cpu-w$w.eve"
    for v in small large; do
        used "$OUT/$v-w$w/eve.json"
        strip "$OUT/$v-w$w/eve.json" > "$OUT/$v-w$w.eve"
        cmp "$OUT/cpu-w$w.eve" "$OUT/$v-w$w.eve"
        cmp "$OUT/cpu-w$w/fast.log" "$OUT/$v-w$w/fast.log"
    done
done
echo "device identity: eve.json and fast.log identical, cpu vs opencl, 1 and 2 workers, small and large batches ($(grep -c '"event_type":"alert"' "$OUT/cpu-w1/eve.json") alerts)"
