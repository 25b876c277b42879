#!/usr/bin/env bash
# What inline prevention costs: a bulk TCP transfer (iperf3) and ping RTTs
# through a test router, with no IPS, Vigil -q 0 and Suricata -q 0 (NFQUEUE,
# ET Open), and through a Linux bridge and Vigil's AF_PACKET bridge
# (`vigil run --inline A:B`, when the binary has it), over interleaved
# rounds. The work is done by scripts/bench_inline.py (see its docstring);
# this part checks the machine and removes the test namespaces on any exit.
#
#   scripts/bench-inline.sh [--rounds N] [--duration S] [--queues N] [--cases C,..]
#                           [--rules R] [--out DIR] [--update-docs]
#
# Environment: ROUNDS (default 3), VIGIL (binary, default
# target/release/vigil; a build with CARGO_TARGET_DIR=DIR puts it in
# DIR/release/vigil), SURICATA_RUN (the peer's run.sh). Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
die() { echo "bench-inline: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (network namespaces, iptables, NFQUEUE)"
for t in ip iptables iperf3 ping python3; do
    command -v "$t" > /dev/null 2>&1 ||
        die "$t is missing (scripts/setup.sh installs it: iproute2, iptables, iperf3, iputils-ping)"
done
vigil=${VIGIL:-target/release/vigil}
[ -x "$vigil" ] || die "no Vigil binary at $vigil: cargo build --release -p vigil
(with CARGO_TARGET_DIR=DIR the binary is DIR/release/vigil: set VIGIL to it)"
suri_run=${SURICATA_RUN:-$root/../shared/peers/suricata/run.sh}
[ -x "$suri_run" ] || die "no Suricata peer at $suri_run (set SURICATA_RUN)"
suri_bin=$(dirname "$suri_run")/suricata
if [ -x "$suri_bin" ] && ldd "$suri_bin" 2> /dev/null | grep -q 'not found'; then
    die "Suricata lacks runtime libraries ($(ldd "$suri_bin" | grep 'not found' | awk '{print $1}' | tr '\n' ' '));
see $(dirname "$suri_run")/README.md for the apt-get line"
fi

# The namespaces are named from this shell's pid; whatever happens to the
# Python part, they (and anything still running in them) go on exit.
export BENCH_INLINE_NS="vbi$$"
cleanup() {
    for n in c r s; do
        ns="$BENCH_INLINE_NS-$n"
        ip netns list 2> /dev/null | grep -q "^$ns\b" || continue
        for p in $(ip netns pids "$ns" 2> /dev/null); do kill "$p" 2> /dev/null || true; done
        sleep 0.5
        for p in $(ip netns pids "$ns" 2> /dev/null); do kill -9 "$p" 2> /dev/null || true; done
        ip netns del "$ns" 2> /dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

VIGIL=$vigil SURICATA_RUN=$suri_run python3 "$here/bench_inline.py" "$@"
