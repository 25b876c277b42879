#!/usr/bin/env bash
# (Re)writes the committed seed corpora of every fuzz target under
# fuzz/corpus/<target>/ (or DIR/<target>/) from hand-built inputs and the
# test data committed in this repository (scripts/fuzz_seed.py).
# Usage: scripts/fuzz-seed.sh [DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec python3 "$root/scripts/fuzz_seed.py" "${1:-$root/fuzz/corpus}"
