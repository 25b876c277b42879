#!/usr/bin/env bash
# Builds Vigil, writes the project's own demo capture (crafted packets: a
# few attacks among benign traffic) and runs Vigil over it with the demo
# rules. Output goes to demo-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release -p vigil -p vigil-craft
mkdir -p demo-out
target/release/vigil-craft-demo demo-out/demo.pcap
target/release/vigil run -r demo-out/demo.pcap -S demo/demo.rules -l demo-out
echo
echo "== demo-out/fast.log"
cat demo-out/fast.log
echo
echo "EVE JSON alerts: demo-out/eve.json ($(grep -c '"event_type":"alert"' demo-out/eve.json) alerts)"
