#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit/integration/end-to-end
# tests, and, when ../shared is present, the suricata-verify conformance
# run and the worker-count determinism check on the shared dev capture.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_TERM_COLOR=never
# Device tests fail, not skip, without an OpenCL platform (PoCL here).
export VIGIL_REQUIRE_OPENCL=1

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --release -- -D warnings
cargo build --release --workspace

if [ -d ../shared/suricata-verify ]; then
    echo "== suricata-verify sig-core (minimum ${SV_MIN_SIG_CORE:-65} of 71)"
    scripts/sv-suite.sh > target/sv-sig-core.txt 2>&1 || true
    passed=$(grep -Eo '^[0-9]+ passed' target/sv-sig-core.txt | tail -1 | grep -Eo '^[0-9]+' || echo 0)
    if [ "$passed" -lt "${SV_MIN_SIG_CORE:-65}" ]; then
        echo "sig-core conformance fell to $passed (< ${SV_MIN_SIG_CORE:-65}); see target/sv-sig-core.txt" >&2
        exit 1
    fi
    echo "sig-core conformance: $passed of 71"
fi
if [ -d ../shared/pcaps ]; then
    echo "== robustness: every shared capture"
    scripts/robustness.sh
fi
if [ -f ../shared/pcaps/dev/dev-mix.pcap ] && [ -f ../shared/rules/et-open/emerging.rules ]; then
    echo "== determinism: dev-mix with ET Open, --workers 1 / 2 / 4"
    scripts/determinism.sh
    echo "== device: eve.json identity, --prefilter-device opencl (PoCL) vs cpu, 1 / 2 workers, small / large batches"
    scripts/device-identity.sh
    if [ -f ../shared/rules/et-open/packet-stream-sids.txt ]; then
        echo "== alert agreement with Suricata on dev-mix (packet and stream rules; minimum 0.95)"
        line=$(python3 ../shared/tools/alert_agreement.py \
            --only-sids ../shared/rules/et-open/packet-stream-sids.txt \
            ../shared/pcaps/dev/expected-alerts.jsonl target/determinism/w1/eve.json | tail -n 1)
        echo "$line"
        python3 - "$line" <<'PY'
import re, sys
m = re.search(r"recall ([0-9.]+) precision ([0-9.]+)", sys.argv[1])
if not m or float(m.group(1)) < 0.95 or float(m.group(2)) < 0.95:
    sys.exit("alert agreement below 0.95")
PY
    fi
fi

echo "== cargo test"
mkdir -p target
: > target/test-output.txt
cargo test --workspace --release 2>&1 | tee -a target/test-output.txt
echo "== cargo test: device path on OpenCL (PoCL; VIGIL_REQUIRE_OPENCL=1)"
clinfo -l || true
cargo test -p vigil-opencl --release 2>&1 | tee target/test-opencl.txt
grep -q "^test every_group_kind_in_one_batch_matches_the_cpu ... ok" target/test-opencl.txt
echo "== cargo test: prefilter engines with Hyperscan (--features hyperscan)"
cargo clippy -p vigil-prefilter --features hyperscan --all-targets --release -- -D warnings
cargo test -p vigil-prefilter --features hyperscan --release 2>&1 | tee -a target/test-output.txt

# One closing line over every cargo test run above.
totals=$(awk '/^test result:/ { p += $4; f += $6 } END { printf "%d passed, %d failed", p, f }' target/test-output.txt)
echo
echo "tests: $totals"
