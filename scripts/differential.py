#!/usr/bin/env python3
"""Differential test of Vigil against Suricata (docs/differential.md).

    differential.py [N] [SEED] [--batch B] [--flows F] [--out DIR]
                    [--reduce K] [--min-agreement X]

Generates N rules (seeded; vigil-craft-differential) in batches of B, each
with F flows built around the rule's own contents and fields, runs Suricata
(the peer, --runmode single) and Vigil on every batch and compares, per
(rule, flow), the number of alerts each engine raised. A case is one
(rule, flow) pair. The agreement is on the verdict: both engines alerted
on the flow, or neither did; the summary also gives the agreement on the
exact number of alerts (count agreement), and every case where the counts
differ is listed as a disagreement of kind "count".
Rules that either engine does not load (Suricata: a parse error; Vigil:
`vigil rules check` reports them invalid or not yet evaluable) are counted
apart and left out of the cases.

Each disagreement is written to OUT/disagreements.jsonl with its rule, the
flow's capture cut out of the batch (OUT/cases/SID-PORT.pcap) and, for the
first K (--reduce), a minimal rule: options are dropped one at a time, as
long as the engines still disagree on that capture.

Exit status: 0 when the run completed (whatever the agreement, unless
--min-agreement is given and not reached: 1), 2 on errors (an engine
failed, bad arguments).
"""
import argparse
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pcaplib  # noqa: E402

TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
VIGIL = os.environ.get("VIGIL", os.path.join(TARGET, "release", "vigil"))
CRAFT = os.environ.get("VIGIL_CRAFT_DIFFERENTIAL",
                       os.path.join(TARGET, "release", "vigil-craft-differential"))
SURICATA_RUN = os.environ.get(
    "SURICATA_RUN", os.path.join(ROOT, "..", "shared", "peers", "suricata", "run.sh"))
if not os.path.exists(SURICATA_RUN):
    SURICATA_RUN = "/work/shared/peers/suricata/run.sh"

SID_BASE = 1_000_000
HTTP_PCT = 0
FLOWBITS_PCT = 10
CLIENT_PORT_BASE = 36000


class EngineError(Exception):
    pass


def run(cmd, log):
    with open(log, "w") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    return p.returncode


def suricata(pcap, rules, out):
    """Runs the peer; returns (alerts {(sid, port): n}, sids it rejected)."""
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    rc = run([SURICATA_RUN, pcap, out, rules, "--runmode", "single"],
             os.path.join(out, "stdout.log"))
    if rc != 0:
        raise EngineError(f"suricata exited {rc} ({out}/stdout.log)")
    rejected = set()
    lines = open(rules).read().splitlines()
    log = open(os.path.join(out, "suricata.log"), errors="replace").read()
    for m in re.finditer(r'error parsing signature .* at line (\d+)', log):
        n = int(m.group(1))
        sm = re.search(r"sid:(\d+);", lines[n - 1]) if 0 < n <= len(lines) else None
        if sm:
            rejected.add(int(sm.group(1)))
    return alerts(os.path.join(out, "eve.json")), rejected


def vigil(pcap, rules, out):
    """Runs Vigil; returns (alerts, sids it does not load or evaluate)."""
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    rejected = set()
    check = subprocess.run([VIGIL, "rules", "check", rules], capture_output=True, text=True)
    for line in check.stdout.splitlines():
        m = re.match(r".*?:\d+: sid (\d+): ", line)
        if m:
            rejected.add(int(m.group(1)))
    rc = run([VIGIL, "run", "-r", pcap, "-S", rules, "-l", out, "--quiet",
              "--workers", "1"], os.path.join(out, "stdout.log"))
    if rc != 0:
        raise EngineError(f"vigil exited {rc} ({out}/stdout.log)")
    return alerts(os.path.join(out, "eve.json")), rejected


def alerts(eve):
    """{(sid, client port): count} of the alerts in an EVE file."""
    c = collections.Counter()
    if not os.path.exists(eve):
        return c
    with open(eve, errors="replace") as f:
        for line in f:
            if '"alert"' not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event_type") != "alert" or e["alert"].get("gid", 1) != 1:
                # Vigil's detectors (gid 9000, e.g. a SYN flood by source
                # over a batch's flows) are not rules.
                continue
            sid = e["alert"]["signature_id"]
            sp, dp = e.get("src_port", 0), e.get("dest_port", 0)
            port = sp if sp >= CLIENT_PORT_BASE else dp
            c[(sid, port)] += 1
    return c


def cut_flow(src, dst, port):
    """Writes the frames of the flow with client port `port` (and the later
    fragments of its datagrams) from pcap `src` to `dst`."""
    with open(src, "rb") as f:
        gh, end, _, _ = pcaplib.read_header(f)
        out = [gh]
        frag_ids = set()
        for ts, frac, cap, length, data in pcaplib.records(f, end):
            keep = False
            if len(data) >= 34 and data[12:14] == b"\x08\x00":
                ihl = (data[14] & 0x0F) * 4
                ipid = struct.unpack(">H", data[18:20])[0]
                fragoff = struct.unpack(">H", data[20:22])[0] & 0x1FFF
                l4 = 14 + ihl
                if fragoff == 0 and len(data) >= l4 + 4:
                    sp, dp = struct.unpack(">HH", data[l4:l4 + 4])
                    if port in (sp, dp):
                        keep = True
                        frag_ids.add(ipid)
                elif fragoff != 0 and ipid in frag_ids:
                    keep = True
            if keep:
                out.append(struct.pack(end + "IIII", ts, frac, cap, length) + data)
    with open(dst, "wb") as f:
        f.write(b"".join(out))


def split_options(rule):
    head, body = rule.split("(", 1)
    body = body.rstrip().rstrip(")").strip()
    opts = [o.strip() for o in body.split("; ") if o.strip()]
    opts = [o.rstrip(";") for o in opts]
    return head, opts


MODIFIERS = ("nocase", "offset:", "depth:", "distance:", "within:", "fast_pattern",
             "endswith", "startswith")


def candidates(rule):
    """Rules with one option (or one content with its modifiers) less."""
    head, opts = split_options(rule)
    fixed = [o for o in opts if o.startswith(("msg:", "sid:", "rev:"))]
    free = [o for o in opts if not o.startswith(("msg:", "sid:", "rev:"))]
    out = []
    for i, o in enumerate(free):
        out.append(free[:i] + free[i + 1:])
        if o.startswith(("content:", "pcre:", "byte_jump:", "byte_extract:")):
            j = i + 1
            while j < len(free) and free[j].startswith(MODIFIERS):
                j += 1
            if j > i + 1:
                out.append(free[:i] + free[j:])
    seen, uniq = set(), []
    for c in out:
        k = tuple(c)
        if k not in seen and c:
            seen.add(k)
            uniq.append(c)
    return head, fixed, uniq


def render(head, opts, sid):
    return f"{head}(msg:\"reduced\"; " + "".join(o + "; " for o in opts) + f"sid:{sid}; rev:1;)"


def reduce_case(rule, pcap, port, work):
    """Greedy reduction: drops options while both engines load the rule and
    still disagree on `pcap`. Returns (rule, suricata count, vigil count)."""
    head, opts = split_options(rule)
    cur = [o for o in opts if not o.startswith(("msg:", "sid:", "rev:"))]
    s_n = v_n = None
    for rnd in range(30):
        _, _, cands = candidates(render(head, cur, 1))
        if not cands:
            break
        rules = os.path.join(work, f"round{rnd}.rules")
        with open(rules, "w") as f:
            for j, c in enumerate(cands):
                f.write(render(head, c, 2_000_000_000 + j) + "\n")
        sa, srej = suricata(pcap, rules, os.path.join(work, f"s{rnd}"))
        va, vrej = vigil(pcap, rules, os.path.join(work, f"v{rnd}"))
        best = None
        for j, c in enumerate(cands):
            sid = 2_000_000_000 + j
            if sid in srej or sid in vrej:
                continue
            a, b = sa.get((sid, port), 0), va.get((sid, port), 0)
            if a != b and (best is None or len(c) < len(best[0])):
                best = (c, a, b)
        if best is None:
            break
        cur, s_n, v_n = best
    return render(head, cur, 1), s_n, v_n


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", nargs="?", type=int, default=10000, help="rules (default 10000)")
    ap.add_argument("seed", nargs="?", type=int, default=1, help="seed (default 1)")
    ap.add_argument("--batch", type=int, default=500, help="rules per batch (default 500)")
    ap.add_argument("--flows", type=int, default=2, help="flows per rule (default 2)")
    ap.add_argument("--flowbits", type=int, default=FLOWBITS_PCT,
                    help="percent of rules checking a flowbit set by a companion rule "
                    f"(default {FLOWBITS_PCT})")
    ap.add_argument("--http", type=int, default=HTTP_PCT,
                    help=f"percent of http rules on sticky buffers (default {HTTP_PCT})")
    ap.add_argument("--out", default=os.path.join(TARGET, "differential"),
                    help="output directory (default $CARGO_TARGET_DIR/differential)")
    ap.add_argument("--reduce", type=int, default=20,
                    help="reduce the first K disagreements (default 20)")
    ap.add_argument("--min-agreement", type=float, default=None,
                    help="exit 1 when the agreement is lower")
    ap.add_argument("--keep", action="store_true", help="keep the engines' outputs")
    a = ap.parse_args()
    if a.n < 1 or a.batch < 1 or a.flows < 1 or a.batch * a.flows > 29000:
        ap.error("N, --batch and --flows must be positive, --batch x --flows <= 29000")
    for exe in (VIGIL, CRAFT, SURICATA_RUN):
        if not os.path.exists(exe):
            print(f"differential: {exe} not found (cargo build --release -p vigil -p vigil-craft)",
                  file=sys.stderr)
            return 2
    out = os.path.abspath(a.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "cases"))
    t0 = time.time()
    cases = agree = agree_alerted = 0
    s_alerted = v_alerted = 0
    dropped_s, dropped_v, dropped_both = 0, 0, 0
    rules_kept = 0
    by_variant = collections.Counter()
    dis = []
    try:
        for bi, first in enumerate(range(0, a.n, a.batch)):
            count = min(a.batch, a.n - first)
            bdir = os.path.join(out, f"batch{bi:03d}")
            subprocess.run([CRAFT, str(a.seed), str(first), str(count), str(a.flows), bdir,
                            str(a.http), str(a.flowbits)], check=True)
            rules = os.path.join(bdir, "rules.rules")
            pcap = os.path.join(bdir, "traffic.pcap")
            sa, srej = suricata(pcap, rules, os.path.join(bdir, "suricata"))
            va, vrej = vigil(pcap, rules, os.path.join(bdir, "vigil"))
            dropped_s += len(srej - vrej)
            dropped_v += len(vrej - srej)
            dropped_both += len(srej & vrej)
            text = {}
            for line in open(rules):
                m = re.search(r"sid:(\d+);", line)
                if m:
                    text[int(m.group(1))] = line.strip()
            flows = [l.rstrip("\n").split("\t") for l in open(os.path.join(bdir, "flows.tsv")) if l.strip()]
            designated = set()
            kept_sids = set()
            for sid, port, variant, desc in flows:
                sid, port = int(sid), int(port)
                designated.add((sid, port))
                if sid in srej or sid in vrej:
                    continue
                kept_sids.add(sid)
                s, v = sa.get((sid, port), 0), va.get((sid, port), 0)
                cases += 1
                s_alerted += s > 0
                v_alerted += v > 0
                if (s > 0) == (v > 0):
                    agree_alerted += 1
                if s == v:
                    agree += 1
                    continue
                kind = "count" if (s > 0) == (v > 0) else "verdict"
                by_variant[f"{kind}:{variant}"] += 1
                cpcap = os.path.join(out, "cases", f"{sid}-{port}.pcap")
                cut_flow(pcap, cpcap, port)
                dis.append({"kind": kind, "sid": sid, "port": port, "variant": variant,
                            "traffic": desc,
                            "suricata": s, "vigil": v, "rule": text[sid], "pcap": cpcap})
            rules_kept += len(kept_sids)
            # Alerts outside the designated (rule, flow) pairs are cases too.
            for key in (set(sa) | set(va)) - designated:
                sid, port = key
                if sid in srej or sid in vrej:
                    continue
                cases += 1
                s, v = sa.get(key, 0), va.get(key, 0)
                s_alerted += s > 0
                v_alerted += v > 0
                agree_alerted += (s > 0) == (v > 0)
                if s == v:
                    agree += 1
                else:
                    kind = "count" if (s > 0) == (v > 0) else "verdict"
                    dis.append({"kind": kind, "sid": sid, "port": port,
                                "variant": "undesignated",
                                "suricata": s, "vigil": v, "rule": text.get(sid, "?"),
                                "pcap": pcap})
            if not a.keep:
                for d in ("suricata", "vigil"):
                    shutil.rmtree(os.path.join(bdir, d), ignore_errors=True)
            print(f"batch {bi}: rules {first}..{first + count - 1}, cases so far {cases}, "
                  f"disagreements {len(dis)} ({time.time() - t0:.0f}s)", flush=True)
        # Verdict disagreements first.
        dis.sort(key=lambda d: d["kind"] != "verdict")
        for i, d in enumerate(dis[:a.reduce]):
            if "(" not in d["rule"] or d["variant"] == "undesignated":
                continue
            work = os.path.join(out, "reduce", f"{d['sid']}-{d['port']}")
            os.makedirs(work, exist_ok=True)
            r, s, v = reduce_case(d["rule"], d["pcap"], d["port"], work)
            d["reduced"] = r
            d["reduced_counts"] = [s, v]
            if not a.keep:
                shutil.rmtree(work, ignore_errors=True)
    except (EngineError, subprocess.CalledProcessError, OSError) as e:
        print(f"differential: {e}", file=sys.stderr)
        return 2
    with open(os.path.join(out, "disagreements.jsonl"), "w") as f:
        for d in dis:
            f.write(json.dumps(d) + "\n")
    elapsed = time.time() - t0
    summary = {
        "rules": a.n, "seed": a.seed, "flows_per_rule": a.flows, "batch": a.batch,
        "http_pct": a.http, "flowbits_pct": a.flowbits,
        "rules_compared": rules_kept,
        "dropped_suricata_only": dropped_s, "dropped_vigil_only": dropped_v,
        "dropped_both": dropped_both,
        "cases": cases, "agree": agree_alerted, "agree_count": agree,
        "agreement": agree_alerted / cases if cases else 0.0,
        "agreement_count": agree / cases if cases else 0.0,
        "verdict_disagreements": sum(d["kind"] == "verdict" for d in dis),
        "count_disagreements": sum(d["kind"] == "count" for d in dis),
        "suricata_alerted": s_alerted, "vigil_alerted": v_alerted,
        "disagreements": len(dis), "disagreements_by_variant": dict(by_variant),
        "seconds": round(elapsed, 1),
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))
    print(f"agreement {summary['agreement']:.5f} over {cases} cases "
          f"({rules_kept} rules x {a.flows} flows; seed {a.seed}); "
          f"same alert count {summary['agreement_count']:.5f}; "
          f"{len(dis)} disagreements in {out}/disagreements.jsonl, {elapsed:.0f}s")
    if a.min_agreement is not None and summary["agreement"] < a.min_agreement:
        print(f"differential: agreement {summary['agreement']:.5f} < {a.min_agreement}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
