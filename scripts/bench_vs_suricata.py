#!/usr/bin/env python3
"""Vigil against the Suricata peer on one capture and ruleset, in one run.

Each round runs seven processes on the same capture and rules, back to back:
Suricata `--runmode single`, Vigil `--workers 1`, Suricata's default runmode
(autofp, pinned to 2 detect threads), Vigil `--workers 2`, Vigil
`--workers 1` given the peer's own suricata.yaml, Suricata
`--runmode single` logging every record type, and Vigil `--runmode single`
(one thread reads, inspects and writes), in reverse order every
other round so that neither engine always goes first (the
machine is shared and noisy; only ratios taken within one run mean anything).
Every process runs under `/usr/bin/time -v` for its peak RSS and wall time.

Figures (medians over the rounds, and the per-round Vigil/Suricata ratios):
  - processing time at 1 worker: Suricata's "time elapsed" (suricata.log)
    against Vigil's "run" figure (its stderr summary line), for Vigil
    `--workers 1` (one worker thread, with the reader and the output thread
    beside it on the other core) and for Vigil `--runmode single` (one
    thread, as Suricata's single runmode);
  - the same for Vigil given the peer's suricata.yaml (`-c`, with `-k none` as
    run.sh gives Suricata): its eve-log types are alert, http, dns, tls and
    stats, where Vigil's defaults log every record type (flow, smb, fileinfo
    ...), so this one compares the same output work; no target;
  - and the other way round: Suricata single given the peer's yaml with the
    eve-log types of Suricata's shipped suricata.yaml (every protocol's
    records, anomaly, files, flow) against Vigil's defaults; no target;
  - processing time at 2 threads: Suricata autofp against Vigil --workers 2;
  - whole-process wall time (load included) of the 1-thread runs;
  - peak RSS at 1 and 2 threads;
  - Vigil's scaling: 1-worker over 2-worker processing time, and
    one-thread (`--runmode single`) over 2-worker processing time;
  - alert agreement (shared tools/alert_agreement.py, Suricata's eve.json of
    the same round as EXPECTED): recall and precision;
  - whether Vigil's eve.json is byte-identical between 1 and 2 workers and
    one thread.

Writes results.md (Markdown table) and chart.svg (grouped bars, Suricata = 1)
into the output directory; --update-docs copies both into docs/performance.md
(between the bench-vs-suricata markers) and docs/performance-chart.svg.

usage: scripts/bench_vs_suricata.py [PCAP] [--rounds N] [--rules R] [--out DIR]
                                    [--timeout S] [--update-docs]
environment: VIGIL (binary, default target/release/vigil), VIGIL_ARGS (extra
arguments for every Vigil run, default none), SURICATA_RUN (the peer's run.sh,
default ../shared/peers/suricata/run.sh), ALERT_AGREEMENT (the tool).
"""
import argparse
import filecmp
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys

from benchlib import tail

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
BEGIN = "<!-- bench-vs-suricata:begin -->"
END = "<!-- bench-vs-suricata:end -->"

VIGIL_LINE = re.compile(r"load ([0-9.]+)s, run ([0-9.]+)s")
VIGIL_ALERTS = re.compile(r"(\d+) alerts")
SURI_ELAPSED = re.compile(r"time elapsed ([0-9.]+)s")
SURI_THREADS = re.compile(r"Threads created -> ([^\n]*?)\s+Engine started")
TIME_RSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")
TIME_WALL = re.compile(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([0-9:.]+)")
AGREEMENT = re.compile(r"agreement: recall ([0-9.]+) precision ([0-9.]+) "
                       r"\(matched (\d+) of (\d+) expected, (\d+) reported\)")

# The six runs of a round, in the order of even rounds (odd rounds reverse it).
RUNS = ["suricata-single", "vigil-w1", "suricata-autofp", "vigil-w2", "vigil-w1-peercfg",
        "suricata-single-full", "vigil-single"]

# The eve-log types of Suricata's shipped suricata.yaml (its protocols'
# records, anomaly, files and flow), for the run that logs as much as
# Vigil's defaults do; the peer's file keeps alert, http, dns, tls, stats.
SHIPPED_TYPES = ["anomaly", "http", "dns", "tls", "files", "smtp", "ftp", "rdp", "nfs", "smb",
                 "tftp", "ike", "dcerpc", "krb5", "bittorrent-dht", "snmp", "rfb", "sip", "quic",
                 "ldap", "dhcp", "mqtt", "http2", "doh2", "pgsql", "websocket", "pop3", "mdns",
                 "llmnr", "ssh", "flow"]
PEER_TYPES = "    - http\n    - dns\n    - tls\n    - stats:"


def full_yaml(a):
    """The peer's suricata.yaml with the shipped eve-log types, written to
    the output directory; its path."""
    with open(a.peer_yaml) as fh:
        text = fh.read()
    if text.count(PEER_TYPES) != 1:
        raise Failure(f"{a.peer_yaml}: its eve-log types (http, dns, tls, stats) not found "
                      f"as expected; cannot derive the every-record-type config")
    text = text.replace(PEER_TYPES, "".join(f"    - {t}\n" for t in SHIPPED_TYPES) + "    - stats:")
    path = os.path.join(a.out, "suricata-shipped-types.yaml")
    with open(path, "w") as fh:
        fh.write(text)
    return path


class Failure(Exception):
    """A run or a parse failed; main() prints it without a traceback."""


def wall_seconds(text):
    """/usr/bin/time's elapsed field: m:ss.ss or h:mm:ss."""
    secs = 0.0
    for part in text.split(":"):
        secs = secs * 60 + float(part)
    return secs


def timed(label, cmd, outdir, timeout):
    """Runs cmd under /usr/bin/time -v with stdout/stderr in outdir; returns
    (stderr text, peak RSS in KiB, wall seconds)."""
    if os.path.isdir(outdir):
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    tv = os.path.join(outdir, "time-v.txt")
    err = os.path.join(outdir, "stderr.txt")
    full = ["/usr/bin/time", "-v", "-o", tv, *cmd]
    try:
        with open(os.path.join(outdir, "stdout.txt"), "w") as o, open(err, "w") as e:
            p = subprocess.run(full, stdout=o, stderr=e, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"{label}: still running after {timeout} s, stopped "
                      f"(--timeout); command: {shlex.join(cmd)}")
    except OSError as ex:
        raise Failure(f"{label}: cannot start {full[0]}: {ex}")
    if p.returncode != 0:
        raise Failure(f"{label}: exit status {p.returncode}; command: {shlex.join(cmd)}\n"
                      f"last lines of {err}:\n{tail(err)}")
    with open(tv, errors="replace") as fh:
        tvtext = fh.read()
    rss, wall = TIME_RSS.search(tvtext), TIME_WALL.search(tvtext)
    if not rss or not wall:
        raise Failure(f"{label}: no peak RSS / wall time in {tv}:\n{tvtext[-800:]}")
    with open(err, errors="replace") as fh:
        stderr = fh.read()
    return stderr, int(rss.group(1)), wall_seconds(wall.group(1))


def run_suricata(a, name, extra):
    out = os.path.join(a.out, name)
    stderr, rss, wall = timed(name, [a.suricata, a.pcap, out, a.rules, *extra], out, a.timeout)
    log = os.path.join(out, "suricata.log")
    try:
        with open(log, errors="replace") as fh:
            text = fh.read()
    except OSError as ex:
        raise Failure(f"{name}: no {log}: {ex}")
    m = SURI_ELAPSED.search(text)
    if not m:
        raise Failure(f"{name}: no 'time elapsed N.NNNs' line in {log}; last lines:\n{tail(log)}")
    t = SURI_THREADS.search(text) or SURI_THREADS.search(stderr)
    return {"proc": float(m.group(1)), "rss": rss, "wall": wall,
            "threads": t.group(1).strip() if t else "?",
            "eve": os.path.join(out, "eve.json")}


def run_vigil(a, name, workers, extra=()):
    out = os.path.join(a.out, name)
    cmd = [a.vigil, "run", "-r", a.pcap, "-S", a.rules, "-l", out,
           "--workers", str(workers), "--quiet", *extra, *a.vigil_args]
    stderr, rss, wall = timed(name, cmd, out, a.timeout)
    m = VIGIL_LINE.search(stderr)
    if not m:
        raise Failure(f"{name}: no 'load X.XXs, run Y.YYYs' summary on stderr; last lines:\n"
                      + "\n".join(stderr.splitlines()[-10:]))
    n = VIGIL_ALERTS.search(stderr[m.start() - 400 if m.start() > 400 else 0:m.end()])
    return {"proc": float(m.group(2)), "load": float(m.group(1)), "rss": rss, "wall": wall,
            "alerts": int(n.group(1)) if n else None, "eve": os.path.join(out, "eve.json")}


def agreement(a, expected, actual):
    cmd = [sys.executable, a.agreement, expected, actual]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"alert agreement: still running after {a.timeout} s: {shlex.join(cmd)}")
    m = AGREEMENT.search(p.stdout)
    if p.returncode != 0 or not m:
        raise Failure(f"alert agreement failed (exit {p.returncode}): {shlex.join(cmd)}\n"
                      f"{(p.stdout + p.stderr)[-1500:]}")
    return {"recall": float(m.group(1)), "precision": float(m.group(2)),
            "matched": int(m.group(3)), "expected": int(m.group(4)), "reported": int(m.group(5))}


def med(xs):
    return statistics.median(xs)


def fmt_s(x):
    return f"{x:.3f} s"


def fmt_wall(x):
    return f"{x:.2f} s"


def fmt_mib(kib):
    return f"{kib / 1024:.0f} MiB"


def build_rows(res, rounds):
    """The table's rows: dicts with the figure, both medians, the per-round
    ratios (Vigil/Suricata) and the target check."""
    S1, S2, SF = res["suricata-single"], res["suricata-autofp"], res["suricata-single-full"]
    V1, V2, VC = res["vigil-w1"], res["vigil-w2"], res["vigil-w1-peercfg"]
    VS = res["vigil-single"]
    rows = []

    def pair(figure, s, v, key, fmt, target=None, chart=None, bound=None, note=None):
        sv = [r[key] for r in s]
        vv = [r[key] for r in v]
        ratios = [y / x for x, y in zip(sv, vv)]
        ratio = med(ratios)
        met = None if target is None else ratio <= target
        if bound is not None:  # target against another figure's median
            met = med(vv) <= bound[1]
        rows.append({"figure": figure, "s": fmt(med(sv)), "v": fmt(med(vv)),
                     "ratio": f"{ratio:.3f}x", "rounds": ", ".join(f"{x:.2f}" for x in ratios),
                     "target": (f"≤ {target:.2f}x" if target is not None else
                                bound[0] if bound is not None else "—"),
                     "met": met, "chart": chart, "chart_ratio": ratio,
                     "chart_target": target if target is not None else
                     (bound[1] / med(sv) if bound is not None else None)})

    pair("processing, 1 worker (Suricata `--runmode single`, Vigil `--workers 1`: one worker "
         "thread, its reader and output threads on the other core)",
         S1, V1, "proc", fmt_s, target=0.40, chart="processing\n1 worker")
    pair("processing, one thread each (both `--runmode single`: reading, detection and "
         "output on one thread)", S1, VS, "proc", fmt_s, target=0.40,
         chart="processing\none thread")
    pair("processing, 1 worker, Vigil given the peer's suricata.yaml (`-c`, `-k none` as run.sh "
         "gives Suricata: the same eve-log types, alert/http/dns/tls/stats, where Vigil's "
         "defaults log every type)", S1, VC, "proc", fmt_s)
    pair("processing, 1 worker, both logging every record type (Suricata given the peer's "
         "suricata.yaml with the eve-log types of its shipped one; Vigil's defaults)",
         SF, V1, "proc", fmt_s)
    pair("processing, 2 threads (Suricata autofp, 2 detect threads; Vigil `--workers 2`)",
         S2, V2, "proc", fmt_s, chart="processing\n2 threads")
    pair("whole process wall time incl. load, 1 worker (Suricata single)",
         S1, V1, "wall", fmt_wall, target=0.25, chart="whole process\n1 worker")
    pair("peak RSS, 1 worker (Suricata single)", S1, V1, "rss", fmt_mib, target=1.00,
         chart="peak RSS\n1 worker")
    s1rss = med([r["rss"] for r in S1])
    pair("peak RSS, 2 threads (ratio against Suricata autofp)", S2, V2, "rss", fmt_mib,
         chart="peak RSS\n2 threads",
         bound=(f"≤ Suricata single ({fmt_mib(s1rss)})", s1rss))

    vs = [x["proc"] / y["proc"] for x, y in zip(V1, V2)]
    ss = [x["proc"] / y["proc"] for x, y in zip(S1, S2)]
    rows.append({"figure": "speedup from 1 to 2 workers (`--workers 1` / `--workers 2` processing)",
                 "s": f"{med(ss):.2f}x (single / autofp)", "v": f"{med(vs):.3f}x",
                 "ratio": "—", "rounds": "Vigil: " + ", ".join(f"{x:.2f}" for x in vs),
                 "target": "Vigil ≥ 1.80x", "met": med(vs) >= 1.80, "chart": None})
    v1s = [x["proc"] / y["proc"] for x, y in zip(VS, V2)]
    rows.append({"figure": "speedup from one thread to 2 workers (`--runmode single` / "
                           "`--workers 2` processing: one core against two)",
                 "s": f"{med(ss):.2f}x (single / autofp)", "v": f"{med(v1s):.3f}x",
                 "ratio": "—", "rounds": "Vigil: " + ", ".join(f"{x:.2f}" for x in v1s),
                 "target": "Vigil ≥ 1.80x", "met": med(v1s) >= 1.80, "chart": None})

    for label, s, v, key in (("1 worker", S1, V1, "agree1"), ("2 workers", S2, V2, "agree2")):
        ag = [r[key] for r in v]
        rows.append({"figure": f"alert agreement, {label} (Suricata's eve.json as expected)",
                     "s": f"{med([g['expected'] for g in ag]):.0f} alerts",
                     "v": f"{med([g['reported'] for g in ag]):.0f} alerts",
                     "ratio": f"recall {med([g['recall'] for g in ag]):.4f}, "
                              f"precision {med([g['precision'] for g in ag]):.4f}",
                     "rounds": ", ".join(f"{g['recall']:.4f}/{g['precision']:.4f}" for g in ag),
                     "target": "—", "met": None, "chart": None})

    same = sum(1 for r in V2 if r["identical"])
    rows.append({"figure": "Vigil eve.json byte-identical, 1 vs 2 workers vs one thread", "s": "—",
                 "v": f"{same}/{rounds} rounds", "ratio": "—",
                 "rounds": ", ".join("yes" if r["identical"] else "NO" for r in V2),
                 "target": "identical", "met": same == rounds, "chart": None})
    return rows


def markdown(a, res, rows, rounds):
    S1, S2, V1 = res["suricata-single"], res["suricata-autofp"], res["vigil-w1"]
    out = []
    out.append(f"{rounds} interleaved rounds on `{os.path.basename(a.pcap)}` with "
               f"`{os.path.basename(a.rules)}`; Vigil `{os.path.basename(a.vigil)}` "
               f"{('with `' + shlex.join(a.vigil_args) + '`') if a.vigil_args else 'with its defaults'}; "
               f"Suricata threads (autofp): {S2[-1]['threads']}; "
               f"{os.cpu_count()} CPUs, load average {a.loadavg[0]:.1f} before and "
               f"{a.loadavg[1]:.1f} after (the benchmark's own load included). Ratios are Vigil / Suricata, the median of the "
               f"per-round paired ratios (lower is better, except the speedup).")
    out.append("")
    out.append("| figure | Suricata (median) | Vigil (median) | ratio | per-round ratios | target | met |")
    out.append("|---|---|---|---|---|---|---|")
    for r in rows:
        met = "—" if r["met"] is None else ("met" if r["met"] else "**not met**")
        out.append(f"| {r['figure']} | {r['s']} | {r['v']} | {r['ratio']} | {r['rounds']} | "
                   f"{r['target']} | {met} |")
    out.append("")
    out.append(f"Load: Vigil median {med([r['load'] for r in V1]):.2f} s (its summary line); "
               f"Suricata's load is its wall time less processing, median "
               f"{med([r['wall'] - r['proc'] for r in S1]):.1f} s.")
    return "\n".join(out) + "\n"


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_chart(rows, rounds):
    bars = [r for r in rows if r.get("chart")]
    W, H = 780, 380
    left, right, top, bottom = 60, 20, 60, 70
    pw, ph = W - left - right, H - top - bottom
    ymax = max([1.0] + [r["chart_ratio"] for r in bars] +
               [r["chart_target"] or 0 for r in bars]) * 1.15
    step = 0.25 if ymax <= 1.6 else 0.5 if ymax <= 3.5 else 1.0
    y = lambda v: top + ph - v / ymax * ph
    gw = pw / len(bars)
    bw = min(46, gw / 3)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="#ffffff"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
         f'Vigil vs Suricata, normalised to Suricata = 1 (lower is better)</text>',
         f'<text x="{W / 2}" y="40" text-anchor="middle" fill="#555">'
         f'medians of the per-round ratios over {rounds} interleaved rounds; '
         f'red dashes: target</text>']
    v = 0.0
    for _ in range(100):  # grid lines (bounded)
        if v > ymax + 1e-9:
            break
        s.append(f'<line x1="{left}" x2="{W - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                 f'stroke="#ddd"/>')
        s.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#555">'
                 f'{v:.2f}</text>')
        v += step
    s.append(f'<line x1="{left}" x2="{W - right}" y1="{y(1):.1f}" y2="{y(1):.1f}" '
             f'stroke="#888" stroke-dasharray="2,3"/>')
    for i, r in enumerate(bars):
        cx = left + gw * (i + 0.5)
        t = r.get("chart_target")
        for j, (val, color, label) in enumerate(((1.0, "#8c8c8c", "1.00"),
                                                  (r["chart_ratio"], "#2b6cb0",
                                                   f'{r["chart_ratio"]:.3f}x'))):
            x = cx - bw - 2 if j == 0 else cx + 2
            s.append(f'<rect x="{x:.1f}" y="{y(val):.1f}" width="{bw:.1f}" '
                     f'height="{y(0) - y(val):.1f}" fill="{color}"/>')
            weight = ' font-weight="bold"' if j else ""
            ty = y(val)
            if j and t is not None and 0 <= ty - y(t) < 16:
                ty = y(t)  # keep the label clear of the target's dashes just above
            s.append(f'<text x="{x + bw / 2:.1f}" y="{ty - 5:.1f}" text-anchor="middle"'
                     f'{weight}>{label}</text>')
        if t is not None:
            s.append(f'<line x1="{cx + 2:.1f}" x2="{cx + 2 + bw:.1f}" y1="{y(t):.1f}" '
                     f'y2="{y(t):.1f}" stroke="#c53030" stroke-width="2" '
                     f'stroke-dasharray="5,3"/>')
        for k, line in enumerate(r["chart"].split("\n")):
            s.append(f'<text x="{cx:.1f}" y="{top + ph + 18 + 15 * k}" '
                     f'text-anchor="middle">{esc(line)}</text>')
    lx, ly = left + 10, H - 18
    s.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="#8c8c8c"/>'
             f'<text x="{lx + 18}" y="{ly}">Suricata</text>'
             f'<rect x="{lx + 90}" y="{ly - 10}" width="12" height="12" fill="#2b6cb0"/>'
             f'<text x="{lx + 108}" y="{ly}">Vigil</text>')
    s.append("</svg>")
    return "\n".join(s) + "\n"


def update_docs(md, svg):
    doc = os.path.join(ROOT, "docs", "performance.md")
    try:
        with open(doc) as fh:
            text = fh.read()
    except OSError as ex:
        raise Failure(f"--update-docs: cannot read {doc}: {ex}")
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        raise Failure(f"--update-docs: {doc} lacks the markers {BEGIN} ... {END}")
    text = text[:b + len(BEGIN)] + "\n" + md + text[e:]
    with open(doc, "w") as fh:
        fh.write(text)
    with open(os.path.join(ROOT, "docs", "performance-chart.svg"), "w") as fh:
        fh.write(svg)
    print(f"updated {doc} and docs/performance-chart.svg", file=sys.stderr)


def check_inputs(a):
    for what, path in (("capture", a.pcap), ("rules", a.rules), ("Suricata's run.sh", a.suricata),
                       ("the peer's suricata.yaml", a.peer_yaml),
                       ("alert_agreement.py", a.agreement)):
        if not os.path.isfile(path):
            raise Failure(f"{what} not found: {path}")
    if not (os.path.isfile(a.vigil) and os.access(a.vigil, os.X_OK)):
        raise Failure(f"vigil binary not found or not executable: {a.vigil} "
                      f"(set VIGIL, or build target/release/vigil)")
    if not os.access("/usr/bin/time", os.X_OK):
        raise Failure("/usr/bin/time not found (Debian package `time`)")
    if a.rounds < 1 or a.rounds > 100:
        raise Failure("--rounds must be between 1 and 100")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pcap", nargs="?", default=os.path.join(SHARED, "pcaps/dev/dev-mix.pcap"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rules", default=os.path.join(SHARED, "rules/et-open/emerging.rules"))
    ap.add_argument("--out", default=os.path.join(ROOT, "target/bench-vs-suricata"))
    ap.add_argument("--timeout", type=int, default=900, help="seconds a single run may take")
    ap.add_argument("--update-docs", action="store_true")
    a = ap.parse_args()
    a.vigil = os.environ.get("VIGIL") or os.path.join(ROOT, "target/release/vigil")
    a.vigil_args = shlex.split(os.environ.get("VIGIL_ARGS", ""))
    a.suricata = os.environ.get("SURICATA_RUN") or os.path.join(SHARED, "peers/suricata/run.sh")
    a.peer_yaml = os.path.join(os.path.dirname(os.path.abspath(a.suricata)), "suricata.yaml")
    a.agreement = os.environ.get("ALERT_AGREEMENT") or os.path.join(SHARED, "tools/alert_agreement.py")
    check_inputs(a)
    a.pcap, a.rules = os.path.abspath(a.pcap), os.path.abspath(a.rules)
    os.makedirs(a.out, exist_ok=True)
    # Suricata's autofp starts cpus * detect-thread-ratio detect threads; pin it
    # to 2 (2.5 / cpus: the product is truncated to an integer).
    ratio = 2.5 / (os.cpu_count() or 2)
    extra = {"suricata-single": ["--runmode", "single"],
             # run.sh passes its own -c first; the later one wins.
             "suricata-single-full": ["--runmode", "single", "-c", full_yaml(a)],
             "suricata-autofp": ["--runmode", "autofp",
                                 "--set", f"threading.detect-thread-ratio={ratio:.4f}"]}
    res = {k: [] for k in RUNS}
    a.loadavg = [os.getloadavg()[0]]
    for rnd in range(a.rounds):
        order = RUNS if rnd % 2 == 0 else RUNS[::-1]
        for name in order:
            if name.startswith("suricata"):
                r = run_suricata(a, name, extra[name])
                print(f"round {rnd + 1} {name}: processing {r['proc']:.3f}s, wall {r['wall']:.2f}s, "
                      f"peak RSS {fmt_mib(r['rss'])}, threads {r['threads']}", file=sys.stderr)
            elif name == "vigil-single":
                r = run_vigil(a, name, 1, ["--runmode", "single"])
                print(f"round {rnd + 1} {name}: processing {r['proc']:.3f}s (one thread), "
                      f"{r['alerts']} alerts", file=sys.stderr)
            elif name == "vigil-w1-peercfg":
                r = run_vigil(a, name, 1, ["-c", a.peer_yaml, "-k", "none"])
                print(f"round {rnd + 1} {name}: processing {r['proc']:.3f}s "
                      f"(the peer's suricata.yaml), {r['alerts']} alerts", file=sys.stderr)
            else:
                r = run_vigil(a, name, 1 if name == "vigil-w1" else 2)
                print(f"round {rnd + 1} {name}: processing {r['proc']:.3f}s, wall {r['wall']:.2f}s "
                      f"(load {r['load']:.2f}s), peak RSS {fmt_mib(r['rss'])}, "
                      f"{r['alerts']} alerts", file=sys.stderr)
            res[name].append(r)
        # Compare this round's outputs before the next round overwrites them.
        w1, w2 = res["vigil-w1"][-1], res["vigil-w2"][-1]
        w1["agree1"] = agreement(a, res["suricata-single"][-1]["eve"], w1["eve"])
        w2["agree2"] = agreement(a, res["suricata-autofp"][-1]["eve"], w2["eve"])
        w2["identical"] = (filecmp.cmp(w1["eve"], w2["eve"], shallow=False)
                           and filecmp.cmp(w1["eve"], res["vigil-single"][-1]["eve"],
                                           shallow=False))
        # Carry the keys build_rows reads from the other worker count's row.
        w2["agree1"], w1["agree2"] = w1["agree1"], w2["agree2"]
        print(f"round {rnd + 1}: agreement 1 worker recall {w1['agree1']['recall']:.4f} "
              f"precision {w1['agree1']['precision']:.4f}; 2 threads recall "
              f"{w2['agree2']['recall']:.4f} precision {w2['agree2']['precision']:.4f}; "
              f"Vigil eve.json 1 vs 2 workers vs one thread "
              f"{'identical' if w2['identical'] else 'DIFFERENT'}",
              file=sys.stderr)
    a.loadavg.append(os.getloadavg()[0])
    rows = build_rows(res, a.rounds)
    md = markdown(a, res, rows, a.rounds)
    svg = svg_chart(rows, a.rounds)
    with open(os.path.join(a.out, "results.md"), "w") as fh:
        fh.write(md)
    with open(os.path.join(a.out, "chart.svg"), "w") as fh:
        fh.write(svg)
    print(md)
    print(f"Vigil eve.json 1 vs 2 workers vs one thread: "
          f"{'byte-identical' if all(r['identical'] for r in res['vigil-w2']) else 'DIFFERENT'} "
          f"({sum(r['identical'] for r in res['vigil-w2'])}/{a.rounds} rounds)")
    print(f"wrote {os.path.join(a.out, 'results.md')} and {os.path.join(a.out, 'chart.svg')}",
          file=sys.stderr)
    if a.update_docs:
        update_docs(md, svg)


if __name__ == "__main__":
    try:
        main()
    except Failure as ex:
        sys.exit(f"bench-vs-suricata: {ex}")
    except KeyboardInterrupt:
        sys.exit("bench-vs-suricata: interrupted")
