#!/usr/bin/env bash
# Run the suricata-verify conformance suite against Vigil.
#
# Builds the release binary, then runs ../shared/tools/sv/run-suite.py over
# the tests of one catalog category and prints its final
# "N passed, M failed, K skipped" line last.
#
# Usage: scripts/sv-suite.sh [run-suite.py options...]
#   CATEGORY=sig-core   catalog category (comma list), default sig-core
#   JOBS=2              parallel tests
#   SKIP_BUILD=1        use the binary already built
#   CARGO_TARGET_DIR    honoured, as cargo does (relative to the repo root)
# Extra arguments go to run-suite.py (e.g. -v, --tests NAME..., --keep).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$script_dir/.." && pwd)"
shared="$root/../shared"

if [[ ! -d "$shared" ]]; then
    echo "sv-suite: $shared not found: the shared folder (suricata-verify" \
        "mirror and tools) must sit next to the repository" >&2
    exit 2
fi
shared="$(cd "$shared" && pwd)"
runner="$shared/tools/sv/run-suite.py"
source_dir="$shared/suricata-verify"
for need in "$runner" "$source_dir"; do
    if [[ ! -e "$need" ]]; then
        echo "sv-suite: $need not found (is $shared complete?)" >&2
        exit 2
    fi
done

cd "$root"

target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" = /* ]] || target_dir="$root/$target_dir"
bin="$target_dir/release/vigil"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    echo "sv-suite: cargo build --release -p vigil" >&2
    if ! cargo build --release -p vigil; then
        echo "sv-suite: building vigil failed" >&2
        exit 1
    fi
fi
if [[ ! -x "$bin" ]]; then
    echo "sv-suite: $bin not found or not executable" >&2
    exit 1
fi

log="$(mktemp "${TMPDIR:-/tmp}/sv-suite.XXXXXX")"
trap 'rm -f "$log"' EXIT

set +e
python3 "$runner" \
    --source "$source_dir" \
    --cmd "$bin run {config_opt} {pcap_opt} {rules_opt} -l {outdir} {args}" \
    --category "${CATEGORY:-sig-core}" \
    --features "${FEATURES:-MAGIC,HAVE_JA3}" \
    -j "${JOBS:-2}" \
    "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e

summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -n 1 || true)"
if [[ -z "$summary" ]]; then
    echo "sv-suite: run-suite.py printed no summary (exit status $rc)" >&2
    exit $(( rc == 0 ? 1 : rc ))
fi
echo
echo "$summary"
exit "$rc"
