#!/usr/bin/env bash
# Writes a seed corpus for the parse_rule fuzz target: a sample of rules
# from the shared rulesets (one per file) plus the config files.
# Usage: scripts/fuzz-seed.sh DIR [N]
set -euo pipefail
dir="${1:?usage: fuzz-seed.sh DIR [N]}"
n="${2:-3000}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rules="$root/../shared/rules"
mkdir -p "$dir"
i=0
for f in "$rules"/et-open/emerging.rules "$rules"/snort-community/*.rules; do
    [[ -f "$f" ]] || continue
    # every k-th rule so that the sample spans the file
    total=$(grep -c '^[a-z]' "$f" || true)
    step=$(( total / (n / 3) + 1 ))
    grep '^[a-z]' "$f" | awk -v s="$step" 'NR % s == 0' | while IFS= read -r line; do
        printf '%s\n' "$line" > "$dir/seed-$(basename "$f")-$((i++))"
    done
done
for c in "$rules"/et-open/classification.config "$rules"/et-open/reference.config; do
    [[ -f "$c" ]] && cp "$c" "$dir/"
done
ls "$dir" | wc -l
