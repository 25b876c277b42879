#!/usr/bin/env bash
# Live capture on a real (virtual) link, checked against the offline run:
# dev-mix.pcap is replayed with tcpreplay at RATE Mbit/s into a veth pair
# inside a network namespace this script creates and removes (no
# addresses, IPv6 off, no routes: nothing leaves it), while
# `vigil run -i va --workers 2` with ET Open listens on the other end.
# Checks (exit 1 when one fails):
#   - alert agreement with the offline run of the same binary on the same
#     capture (alert_agreement.py, offline eve as EXPECTED): recall and
#     precision at least MIN (0.99), for rule alerts (the detectors'
#     alerts, gid 9000, are counted on both sides);
#   - capture.kernel_drops is 0 and kernel_packets = decoded + drops;
#   - SIGTERM at the end: exit 0 within 5 s, the last line a stats event.
# Needs root, ip, tcpreplay, and ../shared beside the repository.
#   usage: scripts/live-devmix.sh [RATE_MBPS] [WORKERS]
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-100}
workers=${2:-2}
min=${LIVE_MIN_AGREEMENT:-0.99}
shared=../shared
pcap=$shared/pcaps/dev/dev-mix.pcap
rules=$shared/rules/et-open/emerging.rules
vigil=${VIGIL:-target/release/vigil}
work=target/live-devmix
ns=vigil-devmix-$$
rm -rf "$work"
mkdir -p "$work"
cleanup() {
    [ -n "${vpid:-}" ] && kill -9 "$vpid" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

# tcpreplay refuses one dev-mix record (bogus original length).
python3 $shared/tools/pcap_for_replay.py "$pcap" "$work/fixed.pcap" >/dev/null
# dev-mix joins captures taken over 19 months; replayed at RATE Mbit/s it
# lasts seconds, so flows that were months apart meet and thresholds
# count in other windows. The reference must see the packets with the
# timing the link gives them: the offline run reads a copy whose
# timestamps are those of a replay at RATE (each frame's wire time at
# that rate after the previous one), and the live run replays that copy.
python3 - "$work/fixed.pcap" "$work/replay.pcap" "$rate" "$PWD/scripts" <<'PY'
import struct, sys
src, dst, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
sys.path.insert(0, sys.argv[4])
import pcaplib
with open(src, "rb") as f, open(dst, "wb") as g:
    gh, end, nano, _ = pcaplib.read_header(f)
    g.write(gh)
    t = 1_700_000_000.0
    for _, _, cap, length, data in pcaplib.records(f, end):
        t += length * 8 / (rate * 1e6)
        sec = int(t)
        frac = int((t - sec) * (1e9 if nano else 1e6))
        g.write(struct.pack(end + "IIII", sec, frac, cap, length) + data)
PY

echo "offline run (the reference)"
"$vigil" run -r "$work/replay.pcap" -S "$rules" -l "$work/offline" --workers "$workers" --quiet \
    2> "$work/offline.stderr"

ip netns add "$ns"
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link add va type veth peer name vb
for d in va vb; do
    ip -n "$ns" link set "$d" mtu 65535 up
    # Offloads would merge or split frames on the way (GRO/TSO).
    if command -v ethtool >/dev/null; then
        ip netns exec "$ns" ethtool -K "$d" gro off gso off tso off >/dev/null 2>&1 || true
    fi
done

echo "live run: vigil run -i va --workers $workers, replay at $rate Mbit/s"
# -k none: 22% of dev-mix's TCP packets carry checksums that the capturing
# hosts' NICs were to fill in (offload); replayed, they are wrong on the
# wire. The live default (auto) would keep them out of reassembly, as it
# should on a link where they really are wrong; the reference run reads
# the file with the file default, none.
ip netns exec "$ns" "$vigil" run -i va -S "$rules" -l "$work/live" --workers "$workers" -k none \
    --pidfile "$work/vigil.pid" --set stats.interval=2 2> "$work/live.stderr" &
vpid=$!
for _ in $(seq 1 600); do
    grep -q "vigil: live on" "$work/live.stderr" 2>/dev/null && break
    kill -0 "$vpid" 2>/dev/null || { cat "$work/live.stderr"; exit 1; }
    sleep 0.1
done
grep -q "vigil: live on" "$work/live.stderr" || { echo "vigil did not start" >&2; exit 1; }
ip netns exec "$ns" tcpreplay -q -i vb --mbps="$rate" "$work/replay.pcap" > "$work/tcpreplay.txt" 2>&1
# Let the rings drain (a block is handed over when full or after its
# timeout), then stop.
sleep 2
t0=$(date +%s.%N)
kill -TERM "$vpid"
status=0
for _ in $(seq 1 200); do
    kill -0 "$vpid" 2>/dev/null || break
    sleep 0.05
done
if kill -0 "$vpid" 2>/dev/null; then
    echo "vigil did not exit within 10 s of SIGTERM" >&2
    exit 1
fi
wait "$vpid" || status=$?
vpid=
t1=$(date +%s.%N)
took=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
echo "SIGTERM: exit $status after ${took}s"
tail -n 3 "$work/live.stderr"

python3 - "$work" "$took" "$status" <<'PY'
import json, sys
work, took, status = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
lines = open(f"{work}/live/eve.json").read().splitlines()
evs = [json.loads(l) for l in lines]  # a truncated line fails here
last = evs[-1]
assert last["event_type"] == "stats", "the last event is not the final stats"
s = last["stats"]
kp, kd = s["capture"]["kernel_packets"], s["capture"]["kernel_drops"]
dec = s["decoder"]["pkts"]
print(f"capture: kernel_packets {kp}, kernel_drops {kd}, ifdrops {s['capture']['kernel_ifdrops']}, decoded {dec}")
ok = True
if status != 0 or took > 5:
    print("FAIL: SIGTERM must end the run with exit 0 within 5 s"); ok = False
if kd != 0:
    print("FAIL: kernel drops"); ok = False
if kp != dec + kd:
    print("FAIL: kernel packets != decoded + drops"); ok = False
sys.exit(0 if ok else 1)
PY
# The built-in detectors (gid 9000) alert on the connection event that
# crossed a threshold; live, events of different workers meet in arrival
# order, so the triggering flow can differ from the offline run's: their
# counts are reported, the rules' alerts are compared.
for side in offline live; do
    grep -v '"gid":9000' "$work/$side/eve.json" > "$work/$side/eve-rules.json" || true
    echo "detector alerts ($side): $(grep -c '"gid":9000' "$work/$side/eve.json" || true)"
done
line=$(python3 $shared/tools/alert_agreement.py "$work/offline/eve-rules.json" "$work/live/eve-rules.json" | tail -n 1)
echo "live vs offline (rule alerts): $line"
python3 - "$line" "$min" <<'PY'
import re, sys
m = re.search(r"recall ([0-9.]+) precision ([0-9.]+)", sys.argv[1])
if not m or float(m.group(1)) < float(sys.argv[2]) or float(m.group(2)) < float(sys.argv[2]):
    sys.exit("FAIL: live alert agreement below the minimum")
PY
echo "live dev-mix: ok"
