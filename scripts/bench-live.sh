#!/usr/bin/env bash
# Highest live replay rate with zero kernel drops, Vigil against Suricata,
# per worker count (see scripts/bench_live.py). Needs root and ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -x target/release/vigil ] || cargo build --release -p vigil
exec python3 scripts/bench_live.py "$@"
