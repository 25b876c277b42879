#!/usr/bin/env bash
# Differential test of Vigil against Suricata (docs/differential.md):
#   scripts/differential.sh [N] [SEED] [--batch B] [--flows F] [--out DIR]
#                           [--reduce K] [--min-agreement X] [--keep]
# N random rules (default 10000) from SEED (default 1), each with F flows
# (default 2) crafted around its boundaries; prints the agreement per
# (rule, flow). Set SKIP_BUILD=1 to use the binaries already built in
# $CARGO_TARGET_DIR (default target/).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p vigil -p vigil-craft
fi
exec python3 scripts/differential.py "$@"
