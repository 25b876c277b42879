#!/usr/bin/env python3
"""What inline prevention costs: throughput and latency through Vigil,
Suricata and no IPS at all, measured in one run.

The test network is three network namespaces this script creates and
removes (client, router, server; IPv6 off; addresses only on these test
hosts, routes only between their subnets, nothing routed out):

  routed:  client c0 10.252.1.2 -- r0 10.252.1.1 [router] r1 10.252.2.1 --
           s0 10.252.2.2 server; the router forwards (ip_forward=1)
  bridged: client c1 10.252.3.2 -- ba [router, no addresses] bb --
           s1 10.252.3.3 server (GRO/GSO/TSO off on these four veths)

Cases, each with iperf3 (client -> server, -t DURATION) and ping
(-c PINGS -i 0.01, client -> server):

  plain        routed, no IPS (the routed baseline)
  vigil-nfq    routed, `iptables -A FORWARD -j NFQUEUE --queue-num 0`
               (--queue-balance 0:N-1 with --queues N), `vigil run -q 0`
  suricata-nfq the same rule, `run.sh --nfq 0 --runmode workers`
  linux-bridge bridged, ba and bb enslaved to a Linux bridge br0 (the
               bridged baseline)
  vigil-bridge bridged, `vigil run --inline ba:bb`, only when `vigil run
               --help` mentions --inline (else reported as not available)

Both engines load the same rules (ET Open by default). The NFQUEUE rule
has no --queue-bypass: while no IPS holds the queue nothing passes, so
every measured packet went through the engine. Each IPS is started, waited
for (Vigil's "vigil: live ..." line on stderr, Suricata's "Engine started"
in suricata.log, bounded by --ready-timeout) and stopped (SIGTERM) per
case. Rounds are interleaved, in reverse order every other round; the
ratios are taken per round against the same round's baseline (and Vigil
against Suricata of the same round) and their median reported: the
machine is shared and noisy, so only ratios within one run mean anything.

Vigil runs with `--set stats.interval=1`; its hold time until the verdict
(`ips.hold_time_us.worker_N.p50/p99`, power-of-two bucket bounds) is read
from the last stats event written after the pings (idle: the pings only)
and from the final one at stop (the whole case, dominated by the bulk
transfer). With several queues the worker that held the most packets is
reported.

Writes results.md and results.json into --out; --update-docs puts the
Markdown between the bench-inline markers of docs/performance.md.

usage: scripts/bench-inline.sh [--rounds N] [--duration S] [--pings N]
                               [--queues N] [--rules R] [--out DIR]
                               [--cases C1,C2] [--update-docs]
environment: ROUNDS, VIGIL, SURICATA_RUN, BENCH_INLINE_NS (namespace prefix)
"""
import argparse
import datetime
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

from benchlib import last_stats, stop, tail, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
BEGIN = "<!-- bench-inline:begin -->"
END = "<!-- bench-inline:end -->"

ROUTED_SERVER = "10.252.2.2"
BRIDGED_SERVER = "10.252.3.3"
CASES = ["plain", "vigil-nfq", "suricata-nfq", "linux-bridge", "vigil-bridge"]
LABELS = {
    "plain": "no IPS (routed)",
    "vigil-nfq": "Vigil `-q 0`",
    "suricata-nfq": "Suricata `--nfq 0` (workers)",
    "linux-bridge": "no IPS (Linux bridge)",
    "vigil-bridge": "Vigil `--inline ba:bb`",
}
BASELINE = {"plain": "plain", "vigil-nfq": "plain", "suricata-nfq": "plain",
            "linux-bridge": "linux-bridge", "vigil-bridge": "linux-bridge"}
PING_TIME = re.compile(r"time=([0-9.]+) ms")


class Failure(Exception):
    """A step failed; main() prints it without a traceback."""


def sh(*args, check=True, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise Failure(f"`{' '.join(args)}` failed ({p.returncode}): {p.stderr.strip()}")
    return p


class Net:
    """The client, router and server namespaces."""

    def __init__(self, prefix):
        self.c, self.r, self.s = (f"{prefix}-{x}" for x in "crs")

    def run(self, ns, cmd, check=True):
        return sh("ip", "netns", "exec", ns, "sh", "-ec", cmd, check=check)

    def up(self):
        self.down()
        for ns in (self.c, self.r, self.s):
            sh("ip", "netns", "add", ns)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1", check=False)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        c, r, s = self.c, self.r, self.s
        for a, na, b, nb in (("c0", c, "r0", r), ("r1", r, "s0", s),
                             ("c1", c, "ba", r), ("bb", r, "s1", s)):
            sh("ip", "link", "add", a, "netns", na, "type", "veth", "peer", "name", b, "netns", nb)
        self.run(c, "ip addr add 10.252.1.2/24 dev c0; ip link set c0 up;"
                    "ip route add 10.252.2.0/24 via 10.252.1.1;"
                    "ip addr add 10.252.3.2/24 dev c1; ip link set c1 up")
        self.run(r, "ip addr add 10.252.1.1/24 dev r0; ip addr add 10.252.2.1/24 dev r1;"
                    "ip link set r0 up; ip link set r1 up; ip link set ba up; ip link set bb up;"
                    "sysctl -qw net.ipv4.ip_forward=1")
        self.run(s, "ip addr add 10.252.2.2/24 dev s0; ip link set s0 up;"
                    "ip route add 10.252.1.0/24 via 10.252.2.1;"
                    "ip addr add 10.252.3.3/24 dev s1; ip link set s1 up")
        # Bridged frames must not go through iptables (br_netfilter, when
        # loaded, would send them to the FORWARD chain).
        self.run(r, "sysctl -qw net.bridge.bridge-nf-call-iptables=0", check=False)
        # An AF_PACKET bridge sees and sends frames as they are on the
        # wire: no offloaded super-frames and no checksums left to the
        # "hardware" (a veth hands locally sent frames over that way) on
        # the bridged path; the Linux bridge baseline runs on the same
        # settings. One feature at a time: ethtool fails a request that
        # changes nothing.
        if shutil.which("ethtool"):
            for ns, dev in ((c, "c1"), (r, "ba"), (r, "bb"), (s, "s1")):
                for feature in ("gro", "lro", "gso", "tso", "tx"):
                    sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, feature, "off",
                       check=False)

    def down(self):
        for ns in (self.c, self.r, self.s):
            if os.path.exists(f"/var/run/netns/{ns}"):
                for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (ProcessLookupError, ValueError):
                        pass
                sh("ip", "netns", "del", ns, check=False)


def nfq_rule(queues):
    if queues == 1:
        return ["-j", "NFQUEUE", "--queue-num", "0"]
    return ["-j", "NFQUEUE", "--queue-balance", f"0:{queues - 1}"]


def lookup(tree, dotted):
    """A counter from a stats tree, nested ({"ips": {"hold_time_us": ...}})
    or flat ({"ips.hold_time_us...": N})."""
    if dotted in tree:
        return tree[dotted]
    node = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def hold_time(stats, queues):
    """(p50, p99, max, packets) of the worker that held the most packets."""
    best = None
    for w in range(max(queues, 1)):
        k = f"ips.hold_time_us.worker_{w}"
        n = lookup(stats, k + ".packets") if stats else None
        if n and (best is None or n > best[3]):
            best = (lookup(stats, k + ".p50"), lookup(stats, k + ".p99"),
                    lookup(stats, k + ".max"), n)
    return best


def percentile(xs, q):
    """Nearest-rank percentile."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def ping(net, server, count):
    p = net.run(net.c, f"ping -n -c {count} -i 0.01 -W 1 {server}", check=False)
    rtts = [float(x) for x in PING_TIME.findall(p.stdout)]
    if not rtts:
        raise Failure(f"ping {server} from the client: no reply\n{p.stdout[-500:]}{p.stderr[-500:]}")
    return {"p50": percentile(rtts, 0.5), "p99": percentile(rtts, 0.99),
            "lost": count - len(rtts)}


def iperf(net, server, duration):
    cmd = ["ip", "netns", "exec", net.c, "iperf3", "-c", server, "-t", str(duration), "-J"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    except subprocess.TimeoutExpired:
        raise Failure(f"iperf3 to {server}: still running after {duration + 60} s")
    try:
        j = json.loads(p.stdout)
        end = j["end"]
        return {"gbps": end["sum_received"]["bits_per_second"] / 1e9,
                "retransmits": end["sum_sent"].get("retransmits", 0)}
    except (ValueError, KeyError):
        raise Failure(f"iperf3 to {server} failed (exit {p.returncode}):\n"
                      f"{p.stdout[-800:]}{p.stderr[-400:]}")


def start_ips(a, net, case, out):
    """Starts the case's IPS in the router; returns (process, eve.json path)."""
    err = os.path.join(out, "stderr.txt")
    if case.startswith("vigil"):
        src = (["--inline", "ba:bb"] if case == "vigil-bridge" else
               [x for q in range(a.queues) for x in ("-q", str(q))])
        cmd = [a.vigil, "run", *src, "-S", a.rules, "-l", out, "--set", "stats.interval=1"]
        ready_file, needle = err, "vigil: live"
    else:
        extra = [x for q in range(1, a.queues) for x in ("-q", str(q))]
        cmd = [a.suricata, "--nfq", "0", out, a.rules, *extra, "--runmode", "workers"]
        ready_file, needle = os.path.join(out, "suricata.log"), "engine started"
    with open(os.path.join(out, "command.txt"), "w") as fh:
        fh.write(" ".join(cmd) + "\n")
    with open(err, "w") as fh:
        proc = subprocess.Popen(["ip", "netns", "exec", net.r, *cmd],
                                stdout=subprocess.DEVNULL, stderr=fh)
    t0 = time.time()
    if not wait_for(ready_file, needle, proc, a.ready_timeout):
        stop(proc)
        raise Failure(f"{case}: not ready after {a.ready_timeout} s (exit {proc.returncode}); "
                      f"last lines of {ready_file}:\n{tail(ready_file)}")
    return proc, os.path.join(out, "eve.json"), time.time() - t0


def run_case(a, net, case, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    routed = case in ("plain", "vigil-nfq", "suricata-nfq")
    server = ROUTED_SERVER if routed else BRIDGED_SERVER
    res = {"case": case}
    if case in ("vigil-nfq", "suricata-nfq"):
        sh("ip", "netns", "exec", net.r, "iptables", "-A", "FORWARD", *nfq_rule(a.queues))
    if case == "linux-bridge":
        net.run(net.r, "ip link add br0 type bridge; ip link set ba master br0;"
                       "ip link set bb master br0; ip link set br0 up")
    proc = None
    try:
        if case not in ("plain", "linux-bridge"):
            proc, eve, res["ready_s"] = start_ips(a, net, case, out)
        ping(net, server, 3)  # neighbours resolved, path checked
        res["ping"] = ping(net, server, a.pings)
        if case.startswith("vigil"):
            time.sleep(2.5)  # a stats event (interval 1 s) after the pings
            res["hold_idle"] = hold_time(last_stats(eve), a.queues)
        res["iperf"] = iperf(net, server, a.duration)
    finally:
        if proc is not None:
            stop(proc)
        if case in ("vigil-nfq", "suricata-nfq"):
            sh("ip", "netns", "exec", net.r, "iptables", "-F", "FORWARD", check=False)
        if case == "linux-bridge":
            net.run(net.r, "ip link del br0", check=False)
    if case.startswith("vigil"):
        res["hold_load"] = hold_time(last_stats(eve), a.queues)
        if not res["hold_load"]:
            raise Failure(f"{case}: no ips.hold_time_us in the last stats event of {eve}")
    return res


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarise(a, res):
    """Per case: medians and per-round ratios against the baseline."""
    out = {}
    for case, runs in res.items():
        if not runs:
            continue
        base = res[BASELINE[case]]
        tput = [r["iperf"]["gbps"] for r in runs]
        ratio = [r["iperf"]["gbps"] / b["iperf"]["gbps"] for r, b in zip(runs, base)]
        add50 = [r["ping"]["p50"] - b["ping"]["p50"] for r, b in zip(runs, base)]
        add99 = [r["ping"]["p99"] - b["ping"]["p99"] for r, b in zip(runs, base)]
        s = {"gbps": med(tput), "gbps_rounds": tput, "ratio": med(ratio), "ratio_rounds": ratio,
             "p50": med([r["ping"]["p50"] for r in runs]),
             "p99": med([r["ping"]["p99"] for r in runs]),
             "add50": med(add50), "add99": med(add99),
             "lost": sum(r["ping"]["lost"] for r in runs),
             "retransmits": med([r["iperf"]["retransmits"] for r in runs]),
             "ready_s": med([r.get("ready_s") for r in runs])}
        for k in ("hold_idle", "hold_load"):
            hs = [r.get(k) for r in runs if r.get(k)]
            if hs:
                s[k] = (med([h[0] for h in hs]), med([h[1] for h in hs]),
                        max(h[2] for h in hs if h[2] is not None))
        out[case] = s
    if res.get("vigil-nfq") and res.get("suricata-nfq"):
        pairs = list(zip(res["vigil-nfq"], res["suricata-nfq"]))
        out["vs"] = {"tput": [v["iperf"]["gbps"] / s["iperf"]["gbps"] for v, s in pairs],
                     "p50": [v["ping"]["p50"] / s["ping"]["p50"] for v, s in pairs],
                     "p99": [v["ping"]["p99"] / s["ping"]["p99"] for v, s in pairs]}
    return out


def markdown(a, summ, bridge_note):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rules = os.path.basename(a.rules)
    qdesc = "`--queue-num 0`" if a.queues == 1 else f"`--queue-balance 0:{a.queues - 1}`"
    lines = [
        f"Run of {now}: {a.rounds} interleaved rounds, iperf3 `-t {a.duration}` and "
        f"`ping -c {a.pings} -i 0.01` per case, rules `{rules}` in both engines, NFQUEUE "
        f"{qdesc}; {os.cpu_count()} CPUs (nproc), kernel {os.uname().release}, load average "
        f"{a.loadavg[0]:.1f} before and {a.loadavg[1]:.1f} after (other work on the machine "
        f"included); {a.vigil_version}, Suricata 9.0.0-dev (`../shared/peers/suricata`).",
        "",
        "| case | throughput (median) | per round (Gbit/s) | vs. baseline | ping p50 / p99 "
        "| added p50 / p99 | Vigil hold p50 / p99, idle | Vigil hold p50 / p99 / max, bulk |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in CASES:
        s = summ.get(case)
        if s is None:
            why = bridge_note if case == "vigil-bridge" and bridge_note else "not run (--cases)"
            lines.append(f"| {LABELS[case]} | {why} | | | | | | |")
            continue
        is_base = BASELINE[case] == case
        hi, hl = s.get("hold_idle"), s.get("hold_load")
        lines.append(
            f"| {LABELS[case]} | {s['gbps']:.2f} Gbit/s | "
            f"{', '.join(f'{x:.2f}' for x in s['gbps_rounds'])} | "
            + ("baseline" if is_base else
               f"{s['ratio']:.3f}x ({', '.join(f'{x:.2f}' for x in s['ratio_rounds'])})")
            + f" | {s['p50']:.3f} / {s['p99']:.3f} ms"
            + ("" if not s["lost"] else f" ({s['lost']} lost)")
            + " | " + ("—" if is_base else f"{s['add50']:+.3f} / {s['add99']:+.3f} ms")
            + " | " + (f"{hi[0]} / {hi[1]} µs" if hi else "—")
            + " | " + (f"{hl[0]} / {hl[1]} / {hl[2]} µs" if hl else "—") + " |")
    vs = summ.get("vs")
    lines.append("")
    if vs:
        lines.append(
            f"Vigil / Suricata, NFQUEUE, median of the per-round ratios: throughput "
            f"**{med(vs['tput']):.3f}x** ({', '.join(f'{x:.2f}' for x in vs['tput'])}; higher "
            f"is better), ping p50 {med(vs['p50']):.3f}x, p99 {med(vs['p99']):.3f}x (lower is "
            f"better).")
    ready = [f"{LABELS[c]} {summ[c]['ready_s']:.1f} s" for c in CASES
             if c in summ and summ[c].get("ready_s") is not None]
    if ready:
        lines.append(f"Start-up until ready (rule loading), median: {', '.join(ready)}.")
    return "\n".join(lines) + "\n"


def update_docs(md):
    doc = os.path.join(ROOT, "docs", "performance.md")
    with open(doc) as fh:
        text = fh.read()
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        raise Failure(f"--update-docs: {doc} lacks the markers {BEGIN} ... {END}")
    with open(doc, "w") as fh:
        fh.write(text[:b + len(BEGIN)] + "\n" + md + text[e:])
    print(f"updated {doc}", file=sys.stderr)


def has_bridge(vigil):
    p = subprocess.run([vigil, "run", "--help"], capture_output=True, text=True)
    return "--inline" in p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", "3")))
    ap.add_argument("--duration", type=int, default=10, help="iperf3 seconds per case")
    ap.add_argument("--pings", type=int, default=200)
    ap.add_argument("--queues", type=int, default=1, help="NFQUEUE queues (and Vigil workers)")
    ap.add_argument("--rules", default=os.path.join(SHARED, "rules/et-open/emerging.rules"))
    ap.add_argument("--out", default=os.path.join(ROOT, "target/bench-inline"))
    ap.add_argument("--ready-timeout", type=int, default=180)
    ap.add_argument("--cases", default=",".join(CASES),
                    help="comma-separated subset (their baselines are added)")
    ap.add_argument("--update-docs", action="store_true")
    a = ap.parse_args()
    a.vigil = os.path.abspath(os.environ.get("VIGIL") or os.path.join(ROOT, "target/release/vigil"))
    a.suricata = os.environ.get("SURICATA_RUN") or os.path.join(SHARED, "peers/suricata/run.sh")
    a.rules = os.path.abspath(a.rules)
    if os.geteuid() != 0:
        raise Failure("needs root (network namespaces, iptables, NFQUEUE)")
    for t in ("ip", "iptables", "iperf3", "ping"):
        if not shutil.which(t):
            raise Failure(f"{t} is missing (scripts/setup.sh installs it)")
    for what, path in (("Vigil", a.vigil), ("Suricata's run.sh", a.suricata), ("rules", a.rules)):
        if not os.path.isfile(path):
            raise Failure(f"{what} not found: {path}")
    if not 1 <= a.rounds <= 50 or not 1 <= a.queues <= 16:
        raise Failure("--rounds must be 1..50 and --queues 1..16")
    a.vigil_version = (sh(a.vigil, "--version", check=False).stdout.strip().split("\n")[0]
                       or "vigil")
    bridge = has_bridge(a.vigil)
    bridge_note = ("not available: `vigil run --help` has no `--inline` "
                   "(the AF_PACKET bridge mode is not in this build)")
    want = set(a.cases.split(","))
    if want - set(CASES):
        raise Failure(f"--cases: unknown {', '.join(sorted(want - set(CASES)))}")
    want |= {BASELINE[c] for c in want}
    cases = [c for c in CASES if c in want and (bridge or c != "vigil-bridge")]
    if not bridge:
        print(f"bench-inline: vigil-bridge {bridge_note}", file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    net = Net(os.environ.get("BENCH_INLINE_NS") or f"vbi{os.getpid()}")
    res = {c: [] for c in cases}
    a.loadavg = [os.getloadavg()[0]]
    iperf_srv = None
    try:
        net.up()
        iperf_srv = subprocess.Popen(["ip", "netns", "exec", net.s, "iperf3", "-s"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        for rnd in range(a.rounds):
            for case in cases if rnd % 2 == 0 else cases[::-1]:
                r = run_case(a, net, case, os.path.join(a.out, case))
                res[case].append(r)
                hold = r.get("hold_load")
                print(f"round {rnd + 1} {case}: {r['iperf']['gbps']:.2f} Gbit/s "
                      f"({r['iperf']['retransmits']} retransmits), ping p50 "
                      f"{r['ping']['p50']:.3f} p99 {r['ping']['p99']:.3f} ms"
                      + (f" ({r['ping']['lost']} lost)" if r["ping"]["lost"] else "")
                      + (f", hold p50/p99/max {hold[0]}/{hold[1]}/{hold[2]} us over "
                         f"{hold[3]} packets" if hold else ""), file=sys.stderr)
    finally:
        if iperf_srv is not None:
            stop(iperf_srv, 5)
        net.down()
    a.loadavg.append(os.getloadavg()[0])
    summ = summarise(a, res)
    md = markdown(a, summ, None if bridge else bridge_note)
    with open(os.path.join(a.out, "results.md"), "w") as fh:
        fh.write(md)
    with open(os.path.join(a.out, "results.json"), "w") as fh:
        json.dump({"runs": res, "summary": summ}, fh, indent=1)
    print(md)
    if a.update_docs:
        update_docs(md)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench-inline: terminated"))
    try:
        main()
    except Failure as ex:
        sys.exit(f"bench-inline: {ex}")
    except KeyboardInterrupt:
        sys.exit("bench-inline: interrupted")
