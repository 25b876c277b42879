#!/usr/bin/env bash
# Runs Vigil over every capture under ../shared (suricata-verify tests with
# their own rules, the dev capture with ET Open) and fails on any panic,
# hang (timeout) or error exit.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/vigil}
SHARED=${SHARED:-../shared}
TIMEOUT=${TIMEOUT:-120}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0; n=0
while IFS= read -r -d '' pcap; do
    n=$((n + 1))
    dir=$(dirname "$pcap")
    rules=()
    for r in "$dir"/*.rules; do [ -f "$r" ] && rules+=(-S "$r"); done
    case "$pcap" in
        */pcaps/dev/*) rules=(-S "$SHARED/rules/et-open/emerging.rules") ;;
    esac
    timeout "$TIMEOUT" "$BIN" run -r "$pcap" "${rules[@]}" -l "$out/o" --quiet -k none >"$out/stdout" 2>"$out/stderr"
    rc=$?
    if [ $rc -ne 0 ] || grep -q "panicked" "$out/stderr"; then
        echo "FAIL (exit $rc): $pcap"; tail -n 3 "$out/stderr"; fail=$((fail + 1))
    fi
done < <(find "$SHARED/pcaps" "$SHARED/suricata-verify" -type f \( -name '*.pcap' -o -name '*.pcapng' -o -name '*.cap' \) -print0 | sort -z)
echo "robustness: $n captures, $fail failures"
[ $fail -eq 0 ]
