#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit/integration/end-to-end
# tests, a smoke run of every fuzz target (scripts/fuzz.sh --smoke), and,
# when ../shared is present, the suricata-verify conformance run and the
# worker-count determinism check on the shared dev capture.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_TERM_COLOR=never
# Device tests fail, not skip, without an OpenCL platform (PoCL here).
export VIGIL_REQUIRE_OPENCL=1
# Network tests (live capture in network namespaces they create) fail, not
# skip, without root, ip and tcpreplay.
export VIGIL_REQUIRE_NET=1

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --release -- -D warnings
cargo build --release --workspace

if [ -d ../shared/suricata-verify ]; then
    # category:minimum passes (the floors are what this tree passes; CI
    # fails on any regression below them).
    for spec in "sig-core:${SV_MIN_SIG_CORE:-71}" "sig-http:${SV_MIN_SIG_HTTP:-45}" \
        "sig-dns:${SV_MIN_SIG_DNS:-13}" "sig-tls:${SV_MIN_SIG_TLS:-11}" \
        "sig-other-app:${SV_MIN_SIG_OTHER_APP:-57}"; do
        cat="${spec%%:*}" min="${spec##*:}"
        echo "== suricata-verify $cat (minimum $min)"
        SKIP_BUILD=1 CATEGORY="$cat" scripts/sv-suite.sh > "target/sv-$cat.txt" 2>&1 || true
        passed=$(grep -Eo '^[0-9]+ passed' "target/sv-$cat.txt" | tail -1 | grep -Eo '^[0-9]+' || echo 0)
        tail -n 1 "target/sv-$cat.txt"
        if [ "$passed" -lt "$min" ]; then
            echo "$cat conformance fell to $passed (< $min); see target/sv-$cat.txt" >&2
            exit 1
        fi
    done
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
    exp=../shared/pcaps/dev/expected-alerts.jsonl
    eve=target/determinism/w1/eve.json
    check() { # label min_recall min_precision [alert_agreement.py options]
        local label="$1" r="$2" p="$3"
        shift 3
        echo "== alert agreement with Suricata on dev-mix: $label (minimum recall $r, precision $p)"
        line=$(python3 ../shared/tools/alert_agreement.py "$@" "$exp" "$eve" | tail -n 1)
        echo "$line"
        python3 - "$line" "$r" "$p" <<'PY'
import re, sys
m = re.search(r"recall ([0-9.]+) precision ([0-9.]+)", sys.argv[1])
if not m or float(m.group(1)) < float(sys.argv[2]) or float(m.group(2)) < float(sys.argv[3]):
    sys.exit("alert agreement below the minimum")
PY
    }
    echo "== live: dev-mix replayed at 100 Mbit/s into a veth in a private netns, vigil -i --workers 2 vs offline"
    scripts/live-devmix.sh 100 2
    check "all alerts" 0.85 0.95
    # The rules' alerts only: Suricata has no counterpart of Vigil's own
    # cross-flow detectors (gid 9000, "VIGIL SCAN ..."), which alert by
    # default; every other alert must agree with Suricata's.
    mkdir -p target
    grep -o 'sid:[0-9]*;' ../shared/rules/et-open/emerging.rules | tr -dc '0-9\n' > target/et-open-sids.txt
    check "ET Open rules" 0.99 0.99 --only-sids target/et-open-sids.txt
    check "http, dns, tls" 0.93 0 --app-proto http,dns,tls
    if [ -f ../shared/rules/et-open/packet-stream-sids.txt ]; then
        check "packet and stream rules" 0.95 0.95 \
            --only-sids ../shared/rules/et-open/packet-stream-sids.txt
    fi
    # Every event of the dev-mix eve.json against Suricata's EVE schema;
    # the fields Suricata itself writes beyond the schema are set apart
    # (docs/ARCHITECTURE.md, "EVE schema"). The self-test first: a valid
    # and an invalid event, a known gap and an unknown field beside it.
    if [ -f ../shared/peers/suricata/eve.schema.json ]; then
        echo "== EVE schema: dev-mix eve.json against Suricata's eve.schema.json (no failures beyond the fields Suricata itself writes outside it, at most ${EVE_SCHEMA_MAX_FAILURES:-0} others)"
        python3 scripts/eve_schema_check.py --self-test
        python3 scripts/eve_schema_check.py "$eve" --max-failures "${EVE_SCHEMA_MAX_FAILURES:-0}"
    fi
fi

echo "== cargo test"
mkdir -p target
: > target/test-output.txt
cargo test --workspace --profile ci 2>&1 | tee -a target/test-output.txt
echo "== cargo test: device path on OpenCL (PoCL; VIGIL_REQUIRE_OPENCL=1)"
clinfo -l || true
cargo test -p vigil-opencl --profile ci 2>&1 | tee target/test-opencl.txt
grep -q "^test every_group_kind_in_one_batch_matches_the_cpu ... ok" target/test-opencl.txt
# The workspace build above has Hyperscan (the vigil crate's default
# feature); the build without it must keep working and testing.
echo "== cargo test: prefilter engines without Hyperscan (vigil --no-default-features)"
cargo clippy -p vigil --no-default-features --all-targets --release -- -D warnings
cargo test -p vigil-prefilter --profile ci 2>&1 | tee -a target/test-output.txt

# Differential test against the Suricata peer (docs/differential.md): a
# fixed seed, so the same 1000 rules x 2 flows every run; fails below 0.999.
if [ -x ../shared/peers/suricata/run.sh ]; then
    echo "== differential: 1000 generated rules x 2 flows vs Suricata (seed 7), agreement >= 0.999"
    SKIP_BUILD=1 scripts/differential.sh 1000 7 --out target/differential-smoke --reduce 0 --min-agreement 0.999
fi

echo "== fuzz: build every target of fuzz/, replay its seeds, ${FUZZ_SMOKE_SECS:-5}s of mutation each"
scripts/fuzz.sh --smoke "${FUZZ_SMOKE_SECS:-5}"

# One closing line over every cargo test run above.
totals=$(awk '/^test result:/ { p += $4; f += $6 } END { printf "%d passed, %d failed", p, f }' target/test-output.txt)
echo
echo "tests: $totals"
