#!/usr/bin/env bash
# Runs Vigil over the shared dev capture with ET Open at 1, 2 and 4 workers
# and checks that eve.json and fast.log are byte-identical. VIGIL names the
# binary (default target/release/vigil).
set -euo pipefail
cd "$(dirname "$0")/.."
PCAP=${PCAP:-../shared/pcaps/dev/dev-mix.pcap}
RULES=${RULES:-../shared/rules/et-open/emerging.rules}
OUT=${OUT:-target/determinism}
VIGIL=${VIGIL:-target/release/vigil}
rm -rf "$OUT"
for w in 1 2 4; do
    "$VIGIL" run -r "$PCAP" -S "$RULES" -l "$OUT/w$w" --workers "$w" --quiet 2> "$OUT.w$w.stderr" || {
        cat "$OUT.w$w.stderr" >&2; exit 1; }
    tail -n 1 "$OUT.w$w.stderr"
done
for w in 2 4; do
    cmp "$OUT/w1/eve.json" "$OUT/w$w/eve.json"
    cmp "$OUT/w1/fast.log" "$OUT/w$w/fast.log"
done
echo "determinism: eve.json and fast.log identical for 1, 2 and 4 workers ($(grep -c '"event_type":"alert"' "$OUT/w1/eve.json") alerts)"
