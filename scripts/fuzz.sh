#!/usr/bin/env bash
# Fuzzing with cargo-fuzz (libFuzzer), nightly Rust. See docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#       A campaign: every target (default: all of them) runs SECONDS
#       (default 300) of mutation, JOBS (default 2) at a time, on a working
#       corpus in fuzz/campaign/<target> started from the committed seeds
#       (fuzz/corpus/<target>); the working corpus is then minimised
#       (cargo fuzz cmin). Prints per target the executions, coverage and
#       corpus size, and every crash found with the command that replays it.
#       Exits 1 if any target crashed.
#
#   scripts/fuzz.sh --smoke [SECONDS]
#       What CI runs (scripts/test.sh): builds every target, replays each
#       one's committed seeds (-runs=0), then mutates for SECONDS (default
#       10) per target, JOBS at a time. Fails on a build failure or a
#       crash. The committed corpus is not written to.
#
# Builds go to FUZZ_TARGET_DIR (default target/fuzz), with debug
# assertions (overflow checks) on. Logs: fuzz/campaign/logs/ (smoke runs:
# FUZZ_TARGET_DIR/fuzz-smoke-logs/).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

smoke=0
if [ "${1:-}" = "--smoke" ]; then
    smoke=1
    shift
    secs="${1:-10}"
    [ $# -gt 0 ] && shift
else
    secs="${1:-300}"
    [ $# -gt 0 ] && shift
fi
jobs="${JOBS:-2}"
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$root/target/fuzz}"
export CARGO_TERM_COLOR=never
fuzz=(cargo +nightly fuzz)
flags=(--debug-assertions)

cd fuzz
mapfile -t all < <("${fuzz[@]}" list)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
logs="$root/fuzz/campaign/logs"
# A smoke run keeps its logs apart, so as not to overwrite a campaign's.
[ "$smoke" = 1 ] && logs="$CARGO_TARGET_DIR/fuzz-smoke-logs"
mkdir -p "$logs"

start=$(date +%s)
echo "== fuzz: build ${#all[@]} targets (${CARGO_TARGET_DIR})"
"${fuzz[@]}" build "${flags[@]}"
echo "   built in $(( $(date +%s) - start )) s"

# run_one TARGET: replay the seeds, then mutate; the log goes to $logs.
run_one() {
    local t="$1" work log
    log="$logs/$t.log"
    if [ "$smoke" = 1 ]; then
        work=$(mktemp -d)
    else
        work="$root/fuzz/campaign/$t"
        mkdir -p "$work"
    fi
    local rc=0
    {
        # Replay only: every committed seed must pass.
        "${fuzz[@]}" run "${flags[@]}" "$t" "corpus/$t" -- -runs=0 &&
        # New inputs go to the first directory only (never the seeds).
        "${fuzz[@]}" run "${flags[@]}" "$t" "$work" "corpus/$t" -- \
            -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
    } > "$log" 2>&1 || rc=$?
    [ "$smoke" = 1 ] && rm -rf "$work"
    return $rc
}

failed=()
pids=()
names=()
reap() { # waits for the oldest job
    local pid="${pids[0]}" name="${names[0]}"
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
    if ! wait "$pid"; then
        failed+=("$name")
    fi
}
for t in "${targets[@]}"; do
    [ ${#pids[@]} -ge "$jobs" ] && reap
    echo "== fuzz: $t (${secs}s)"
    run_one "$t" &
    pids+=($!)
    names+=("$t")
done
while [ ${#pids[@]} -gt 0 ]; do reap; done

if [ "$smoke" = 0 ]; then
    for t in "${targets[@]}"; do
        echo "== fuzz: cmin $t"
        "${fuzz[@]}" cmin "${flags[@]}" "$t" "$root/fuzz/campaign/$t" > "$logs/$t.cmin.log" 2>&1 ||
            echo "   cmin failed, see $logs/$t.cmin.log"
    done
fi

echo
printf '%-18s %12s %8s %8s %8s\n' target execs exec/s cov corpus
for t in "${targets[@]}"; do
    log="$logs/$t.log"
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1 || true)
    rate=$(grep -Eo 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1 || true)
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+' || true)
    n=-
    [ "$smoke" = 0 ] && n=$(find "$root/fuzz/campaign/$t" -type f | wc -l)
    printf '%-18s %12s %8s %8s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$n"
done

crashes=0
for t in "${targets[@]}"; do
    for a in artifacts/"$t"/{crash,timeout,oom,leak}-*; do
        [ -e "$a" ] || continue
        # Only artifacts of this run.
        [ "$(stat -c %Y "$a")" -ge "$start" ] || continue
        crashes=$((crashes + 1))
        echo "CRASH $t: fuzz/$a"
        echo "   replay: (cd fuzz && cargo +nightly fuzz run ${flags[*]} $t $a)"
        grep -m1 -E "panicked at|ERROR: libFuzzer|SUMMARY" "$logs/$t.log" | sed 's/^/   /' || true
    done
done
for t in "${failed[@]}"; do
    echo "FAILED $t: see $logs/$t.log"
    tail -n 30 "$logs/$t.log" | sed 's/^/   /'
done
echo "fuzz: ${#targets[@]} targets, ${secs}s each, $crashes crash artifacts, ${#failed[@]} failed, $(( $(date +%s) - start )) s in all"
[ ${#failed[@]} -eq 0 ] && [ "$crashes" -eq 0 ]
