#!/usr/bin/env python3
"""End-to-end throughput of vigil configurations, measured in one run.

Runs every configuration over the same capture and ruleset, interleaved
round by round (the machine is shared and noisy, so each round runs every
configuration once, back to back, in reverse order every other round so
that no configuration always goes first), and prints the median run and
load time of each with its ratio against the first configuration (the
baseline), the median of the per-round ratios (each run against the
baseline's run in the same round), and in how many rounds the
configuration ran at most as long as the baseline.
Every configuration's eve.json must be byte-identical to the baseline's
unless --allow-different is given (for comparing different versions).

usage: scripts/bench-e2e.py [--rounds N] [--workers N] [--pcap P] [--rules R]
                            [--out DIR] [--allow-different]
                            LABEL=BINARY[:ARGS] ...

example:
  scripts/bench-e2e.py hs=target/release/vigil:'--prefilter hs' \\
                       auto=target/release/vigil:'--prefilter auto'
"""
import argparse
import filecmp
import os
import re
import shlex
import statistics
import subprocess
import sys

LINE = re.compile(r"load ([0-9.]+)s, run ([0-9.]+)s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="+", help="LABEL=BINARY[:ARGS]")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pcap", default="../shared/pcaps/dev/dev-mix.pcap")
    ap.add_argument("--rules", default="../shared/rules/et-open/emerging.rules")
    ap.add_argument("--out", default="target/bench-e2e")
    ap.add_argument("--allow-different", action="store_true")
    a = ap.parse_args()
    configs = []
    for c in a.configs:
        label, _, rest = c.partition("=")
        binary, _, args = rest.partition(":")
        if not label or not binary:
            sys.exit(f"bad configuration {c!r}: want LABEL=BINARY[:ARGS]")
        configs.append((label, binary, shlex.split(args)))
    times = {label: ([], []) for label, _, _ in configs}
    for r in range(a.rounds):
        order = configs if r % 2 == 0 else configs[::-1]
        for label, binary, args in order:
            out = os.path.join(a.out, label)
            cmd = [binary, "run", "-r", a.pcap, "-S", a.rules, "-l", out,
                   "--workers", str(a.workers), "--quiet", *args]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{label}: exit {p.returncode}\n{p.stderr}")
            m = LINE.search(p.stderr)
            if not m:
                sys.exit(f"{label}: no timing line in\n{p.stderr}")
            load, run = float(m.group(1)), float(m.group(2))
            times[label][0].append(run)
            times[label][1].append(load)
            print(f"round {r + 1} {label}: run {run:.3f}s load {load:.2f}s", file=sys.stderr)
    base = configs[0][0]
    base_eve = os.path.join(a.out, base, "eve.json")
    base_run = statistics.median(times[base][0])
    print(f"{a.rounds} interleaved rounds, --workers {a.workers}, baseline {base}")
    print("| configuration | run (median) | run / baseline | paired ratio (median) | "
          "rounds at most baseline | runs | load (median) | eve.json |")
    print("|---|---|---|---|---|---|---|---|")
    differs = False
    for label, _, _ in configs:
        runs, loads = times[label]
        same = filecmp.cmp(base_eve, os.path.join(a.out, label, "eve.json"), shallow=False)
        differs |= not same
        med = statistics.median(runs)
        span = f"{min(runs):.3f}-{max(runs):.3f}s"
        paired = [x / b for x, b in zip(runs, times[base][0])]
        wins = sum(1 for x, b in zip(runs, times[base][0]) if x <= b)
        print(f"| {label} | {med:.3f} s | {med / base_run:.2f} | "
              f"{statistics.median(paired):.3f} | {wins}/{len(runs)} | {span} | "
              f"{statistics.median(loads):.2f} s | {'identical' if same else 'DIFFERENT'} |")
    if differs and not a.allow_different:
        sys.exit("eve.json differs between configurations")


if __name__ == "__main__":
    main()
