#!/usr/bin/env bash
# Vigil against the Suricata peer (../shared/peers/suricata) on one capture
# and ruleset: processing time at 1 and 2 threads, whole-process wall time,
# peak RSS, alert agreement, Vigil's 1 -> 2 worker scaling and the
# byte-identity of its eve.json across worker counts, over interleaved rounds.
# The work is done by scripts/bench_vs_suricata.py (see its docstring).
#
#   scripts/bench-vs-suricata.sh [PCAP] [--rounds N] [--rules R] [--out DIR]
#                                [--timeout S] [--update-docs]
#
# PCAP defaults to ../shared/pcaps/dev/dev-mix.pcap, rules to ET Open, the
# output directory to target/bench-vs-suricata (results.md, chart.svg and
# each configuration's last output). Environment: VIGIL (binary, default
# target/release/vigil), VIGIL_ARGS (extra arguments for both Vigil runs,
# default none), SURICATA_RUN (the peer's run.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

# /usr/bin/time -v gives peak RSS and wall time (Debian package `time`).
if [ ! -x /usr/bin/time ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
        echo "bench-vs-suricata: installing /usr/bin/time (package time)" >&2
        apt-get install -y -qq time > /dev/null 2>&1 ||
            { apt-get update -qq > /dev/null && apt-get install -y -qq time > /dev/null; }
    fi
    [ -x /usr/bin/time ] || {
        echo "bench-vs-suricata: /usr/bin/time is missing: apt-get install time" >&2; exit 1; }
fi

# Suricata's runtime libraries (its README lists them).
suri_run=${SURICATA_RUN:-$root/../shared/peers/suricata/run.sh}
suri_bin=$(dirname "$suri_run")/suricata
if [ -x "$suri_bin" ] && ldd "$suri_bin" 2> /dev/null | grep -q 'not found'; then
    libs="libvectorscan5 libyaml-0-2 libjansson4 libpcap0.8 libcap-ng0 libmagic1 liblz4-1 libpcre2-8-0 libnetfilter-queue1"
    if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
        echo "bench-vs-suricata: installing Suricata's runtime libraries" >&2
        { apt-get update -qq && apt-get install -y -qq $libs; } > /dev/null 2>&1 || true
    fi
    if ldd "$suri_bin" | grep -q 'not found'; then
        echo "bench-vs-suricata: Suricata lacks runtime libraries:" >&2
        ldd "$suri_bin" | grep 'not found' >&2
        echo "install them with: apt-get install $libs" >&2
        exit 1
    fi
fi

exec python3 "$here/bench_vs_suricata.py" "$@"
