#!/usr/bin/env python3
"""Highest replay rate with zero kernel drops, Vigil and Suricata live.

For each worker count and each rate (ascending), dev-mix (made replayable
by ../shared/tools/pcap_for_replay.py) is replayed with tcpreplay into a
veth pair inside a network namespace this script creates and removes (no
addresses, IPv6 off, no routes: nothing leaves it), once to Vigil
(`vigil run -i va --workers N`) and once to Suricata
(`../shared/peers/suricata/run.sh --live va`, `--runmode workers` with N
threads), interleaved rate by rate, same rules. A run passes when the
final stats show no kernel drops. The figure per engine and worker count
is the highest rate passed before the first failure; the ratio
Vigil/Suricata is printed, and a Markdown table is written to OUT.

This is a benchmark (the machine is shared and noisy), not a test.

usage: scripts/bench-live.sh [--workers 1,2] [--rates 100,200,...]
                             [--pcap P] [--rules R] [--out DIR]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

from benchlib import last_stats, stop, wait_for

NS = f"vigil-blive-{os.getpid()}"


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def netns_up():
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    sh("ip", "netns", "add", NS)
    sh("ip", "netns", "exec", NS, "sysctl", "-qw",
       "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
    sh("ip", "-n", NS, "link", "add", "va", "type", "veth", "peer", "name", "vb")
    for d in ("va", "vb"):
        sh("ip", "-n", NS, "link", "set", d, "mtu", "65535", "up")
        if shutil.which("ethtool"):
            subprocess.run(["ip", "netns", "exec", NS, "ethtool", "-K", d, "gro", "off",
                            "gso", "off", "tso", "off"], capture_output=True)


def netns_down():
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def replay(pcap, rate):
    p = subprocess.run(["ip", "netns", "exec", NS, "tcpreplay", "-i", "vb",
                        f"--mbps={rate}", pcap], capture_output=True, text=True)
    m = re.search(r"Rated: [0-9.]+ Bps, ([0-9.]+) Mbps", p.stdout)
    return float(m.group(1)) if m else None


def run_once(engine, workers, rate, a, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    log = os.path.join(out, "stderr.txt")
    if engine == "vigil":
        cmd = ["ip", "netns", "exec", NS, a.vigil, "run", "-i", "va", "-S", a.rules,
               "-l", out, "--workers", str(workers)]
        ready, eve = "vigil: live on", os.path.join(out, "eve.json")
        ready_file = log
    else:
        cmd = ["ip", "netns", "exec", NS, a.suricata, "--live", "va", out, a.rules,
               "--runmode", "workers", "--set", "af-packet.0.interface=va",
               "--set", f"af-packet.0.threads={workers}"]
        ready, eve = "engine started", os.path.join(out, "eve.json")
        ready_file = os.path.join(out, "suricata.log")
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    try:
        if not wait_for(ready_file, ready, proc, 180):
            print(f"  {engine}: did not start; see {log}", file=sys.stderr)
            return None, None
        sent = replay(a.pcap_replay, rate)
        time.sleep(2)
    finally:
        stop(proc)
    s = last_stats(eve)
    if s is None:
        print(f"  {engine}: no stats event in {eve}", file=sys.stderr)
        return None, sent
    # Ring overflow is what the rate limits; interface drops on the veth
    # come from the kernel's fanout defragmentation (fragments it could
    # not reassemble), the same at any rate.
    cap = s.get("capture", {})
    return cap.get("kernel_drops", 0), sent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rates", default="100,200,400,700,1000,1500,2000,3000")
    ap.add_argument("--pcap", default="../shared/pcaps/dev/dev-mix.pcap")
    ap.add_argument("--rules", default="../shared/rules/et-open/emerging.rules")
    ap.add_argument("--out", default="target/bench-live")
    ap.add_argument("--vigil", default=os.environ.get("VIGIL", "target/release/vigil"))
    ap.add_argument("--suricata", default="../shared/peers/suricata/run.sh")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-live: needs root (network namespaces, AF_PACKET)")
    for t in ("ip", "tcpreplay"):
        if not shutil.which(t):
            sys.exit(f"bench-live: {t} is missing (scripts/setup.sh installs it)")
    os.makedirs(a.out, exist_ok=True)
    a.pcap_replay = os.path.join(a.out, "replay.pcap")
    sh("python3", "../shared/tools/pcap_for_replay.py", a.pcap, a.pcap_replay,
       stdout=subprocess.DEVNULL)
    rates = [int(r) for r in a.rates.split(",")]
    results = {}
    netns_up()
    try:
        for w in [int(x) for x in a.workers.split(",")]:
            best = {"vigil": 0, "suricata": 0}
            sent_max = {"vigil": 0.0, "suricata": 0.0}
            alive = {"vigil": True, "suricata": True}
            for i, rate in enumerate(rates):
                order = ["vigil", "suricata"] if i % 2 == 0 else ["suricata", "vigil"]
                for eng in order:
                    if not alive[eng]:
                        continue
                    drops, sent = run_once(eng, w, rate, a, os.path.join(a.out, f"{eng}-w{w}-r{rate}"))
                    print(f"workers {w} rate {rate} Mbit/s (sent {sent}): {eng} drops {drops}")
                    if drops == 0:
                        best[eng] = rate
                        sent_max[eng] = max(sent_max[eng], sent or 0.0)
                    else:
                        alive[eng] = False
                if not any(alive.values()):
                    break
            results[w] = (best, sent_max)
    finally:
        netns_down()
    # tcpreplay on the same machine has a ceiling of its own: a rate it
    # could not reach says nothing about the engines; the table gives the
    # highest rate asked and the rate tcpreplay really sent.
    lines = ["| workers | Vigil: asked / sent (Mbit/s), 0 drops | Suricata: asked / sent | ratio (sent) |",
             "|---|---|---|---|"]
    for w, (b, sm) in results.items():
        ratio = f"{sm['vigil'] / sm['suricata']:.2f}" if sm["suricata"] else "n/a"
        lines.append(f"| {w} | {b['vigil']} / {sm['vigil']:.0f} | {b['suricata']} / {sm['suricata']:.0f} | {ratio} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(table + "\n")


if __name__ == "__main__":
    main()
