//! `vigil run --slice K/N`: N sensors given the same capture inspect every
//! flow exactly once between them, so the union of their alerts is the
//! alerts of one full run.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use vigil_craft::{add_us, write_pcap_file, PacketBuilder, TimedFrame};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-slice-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `vigil run -r pcap -S rules -l out [extra]`; returns the alert
/// lines of eve.json (as written) and stats.log.
fn run(pcap: &Path, rules: &Path, out: &Path, extra: &[&str]) -> (Vec<String>, String) {
    let mut args = vec![
        "run",
        "-r",
        pcap.to_str().unwrap(),
        "-S",
        rules.to_str().unwrap(),
        "-l",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(&args)
        .output()
        .expect("run vigil");
    assert!(
        o.status.success(),
        "vigil {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let eve = std::fs::read_to_string(out.join("eve.json")).unwrap();
    let alerts = eve
        .lines()
        .filter(|l| l.contains("\"event_type\":\"alert\""))
        .map(String::from)
        .collect();
    (
        alerts,
        std::fs::read_to_string(out.join("stats.log")).unwrap(),
    )
}

fn multiset(lines: impl IntoIterator<Item = String>) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in lines {
        *m.entry(l).or_insert(0) += 1;
    }
    m
}

fn sid(line: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["alert"]["signature_id"].as_u64().unwrap()
}

/// `shared/` beside the repository (the worktree's parent), if present.
fn shared_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        manifest.join("../../../shared"),
        manifest.join("../../shared"),
    ]
    .into_iter()
    .find(|d| d.join("pcaps/dev/dev-mix.pcap").is_file())
}

/// 24 UDP datagrams, each from its own address in two IPv4 fragments
/// (16 bytes, then the rest): the raw fragments belong to the slice of
/// their address pair, the rebuilt datagram to the slice of its 5-tuple.
fn fragmented_datagrams() -> Vec<TimedFrame> {
    let dst: IpAddr = "192.0.2.80".parse().unwrap();
    let mut frames = Vec::new();
    let mut t = (1_700_000_000, 0);
    for i in 0..24u16 {
        let src: IpAddr = format!("10.9.{}.{}", i / 8, 1 + i % 8).parse().unwrap();
        let udp = PacketBuilder::default().udp_datagram(
            src,
            40000 + i,
            dst,
            5000 + i,
            b"....SLICE-PAYLOAD-MARKER....",
        );
        let b = PacketBuilder::default().ip_id(1000 + i);
        let first = b
            .clone()
            .mf(true)
            .frag_offset(0)
            .eth_ip(src, dst, 17, &udp[..16]);
        let second = b.clone().frag_offset(2).eth_ip(src, dst, 17, &udp[16..]);
        frames.push((t, first));
        t = add_us(t, 10);
        frames.push((t, second));
        t = add_us(t, 10);
    }
    frames
}

/// Fragment alerts (an `ip` rule on the first fragment) and alerts on the
/// rebuilt datagram (payload, seen only once rebuilt) each land in exactly
/// one slice, and the slices together give the full run's alerts.
#[test]
fn fragments_and_rebuilt_datagrams_land_in_exactly_one_slice() {
    let dir = tmpdir("frag");
    let pcap = dir.join("frags.pcap");
    write_pcap_file(&pcap, &fragmented_datagrams()).unwrap();
    let rules = dir.join("frag.rules");
    std::fs::write(
        &rules,
        "alert ip any any -> any any (msg:\"first fragment\"; fragbits:M; sid:1;)\n\
         alert udp any any -> any any (msg:\"rebuilt datagram\"; content:\"SLICE-PAYLOAD-MARKER\"; sid:2;)\n",
    )
    .unwrap();
    let (full, _) = run(&pcap, &rules, &dir.join("full"), &["--workers", "2"]);
    let sids: Vec<u64> = full.iter().map(|l| sid(l)).collect();
    assert_eq!(sids.iter().filter(|&&s| s == 1).count(), 24, "{full:#?}");
    assert_eq!(sids.iter().filter(|&&s| s == 2).count(), 24, "{full:#?}");
    for n in [2u32, 3] {
        let mut union = Vec::new();
        // Source address of the datagram -> slices of its fragment alert
        // and of its rebuilt-datagram alert.
        let mut owner: BTreeMap<(String, u64), BTreeSet<u32>> = BTreeMap::new();
        for k in 0..n {
            let spec = format!("{k}/{n}");
            let (alerts, stats) = run(
                &pcap,
                &rules,
                &dir.join(format!("s{k}_{n}")),
                &["--workers", "2", "--slice", &spec],
            );
            assert!(stats.contains("slice.packets_skipped"), "{stats}");
            for l in &alerts {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let src = v["src_ip"].as_str().unwrap().to_string();
                owner.entry((src, sid(l))).or_default().insert(k);
            }
            union.extend(alerts);
        }
        assert_eq!(
            multiset(union),
            multiset(full.clone()),
            "slices of {n} together differ from the full run"
        );
        assert!(owner.values().all(|s| s.len() == 1));
        // The split matters: some datagram's fragment is inspected by
        // one slice and its rebuilt datagram by another.
        let split = (0..24)
            .map(|i| format!("10.9.{}.{}", i / 8, 1 + i % 8))
            .filter(|src| owner[&(src.clone(), 1)] != owner[&(src.clone(), 2)])
            .count();
        assert!(split > 0, "no datagram split across slices of {n}");
        eprintln!(
            "{n} slices: {split} of 24 datagrams have fragment and datagram in different slices"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bad slice is a clear error.
#[test]
fn bad_slice_is_refused() {
    let dir = tmpdir("bad");
    let pcap = dir.join("frags.pcap");
    write_pcap_file(&pcap, &fragmented_datagrams()).unwrap();
    let rules = dir.join("empty.rules");
    std::fs::write(&rules, "").unwrap();
    for (spec, want) in [
        ("2/2", "K must be below N"),
        ("0/0", "N must be at least 1"),
        ("1", "expected K/N"),
        ("x/2", "expected K/N"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
            .args(["run", "-r", pcap.to_str().unwrap(), "-S"])
            .arg(&rules)
            .arg("-l")
            .arg(dir.join("out"))
            .args(["--slice", spec])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "--slice {spec} was accepted");
        assert!(err.contains(want), "--slice {spec}: {err}");
    }
    // The config key says the same.
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["run", "-r", pcap.to_str().unwrap(), "-S"])
        .arg(&rules)
        .arg("-l")
        .arg(dir.join("out"))
        .args(["--set", "vigil.slice=3/2"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("vigil.slice"));
}

/// Inline every held packet needs this sensor's verdict: `--slice` is
/// refused there (before any queue is opened).
#[test]
fn slice_is_refused_inline() {
    let dir = tmpdir("inline");
    let rules = dir.join("empty.rules");
    std::fs::write(&rules, "").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["run", "-q", "0", "-S"])
        .arg(&rules)
        .arg("-l")
        .arg(dir.join("out"))
        .args(["--slice", "0/2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("--slice applies to capture"), "{err}");
}

/// dev-mix with ET Open: the slices' alerts together are the full run's,
/// line for line (timestamps, flow ids, pcap_cnt and all), for rules
/// without `threshold`/`detection_filter`. Those keep counts across flows
/// (by_src, by_dst, by_rule, by_both), which a slice sees only part of, so
/// their alerts may differ; the differences are printed. So may the
/// built-in detectors' (gid 9000), which count per host.
#[test]
fn dev_mix_slices_together_equal_the_full_run() {
    let Some(shared) = shared_dir() else {
        eprintln!("skipping: ../shared/pcaps/dev/dev-mix.pcap not found");
        return;
    };
    let pcap = shared.join("pcaps/dev/dev-mix.pcap");
    let rules = shared.join("rules/et-open/emerging.rules");
    if !rules.is_file() {
        eprintln!("skipping: {} not found", rules.display());
        return;
    }
    // Rules with cross-flow counting state.
    let text = std::fs::read_to_string(&rules).unwrap();
    let counted: BTreeSet<u64> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.contains("threshold:") || l.contains("detection_filter:"))
        .filter_map(|l| {
            let at = l.find("sid:")? + 4;
            let digits: String = l[at..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            digits.parse().ok()
        })
        .collect();
    assert!(!counted.is_empty());
    let dir = tmpdir("devmix");
    let (full, full_stats) = run(&pcap, &rules, &dir.join("full"), &["--workers", "2"]);
    // The built-in detectors (gid 9000) count per host across flows too.
    let host_scoped = |l: &str| l.contains("\"gid\":9000");
    let plain = |v: &[String]| -> BTreeMap<String, usize> {
        multiset(
            v.iter()
                .filter(|l| !counted.contains(&sid(l)) && !host_scoped(l))
                .cloned(),
        )
    };
    let full_plain = plain(&full);
    assert!(full_plain.len() > 1000, "{} alerts", full_plain.len());
    let full_flows = common::stat(&full_stats, "flow.total").unwrap();
    let full_pkts = common::stat(&full_stats, "decoder.pkts").unwrap();
    let full_tunnels = common::stat(&full_stats, "decoder.tunnel_pkts").unwrap();
    assert!(full_tunnels > 0, "dev-mix has tunnel packets");
    for n in [2u32, 3] {
        let mut union = Vec::new();
        let (mut flows, mut pkts, mut skipped) = (0, 0, 0);
        let (mut tunnels, mut tunnels_skipped) = (0, 0);
        let mut per_slice = Vec::new();
        for k in 0..n {
            let spec = format!("{k}/{n}");
            let (alerts, stats) = run(
                &pcap,
                &rules,
                &dir.join(format!("s{k}_{n}")),
                &["--workers", "2", "--slice", &spec],
            );
            flows += common::stat(&stats, "flow.total").unwrap();
            pkts += common::stat(&stats, "decoder.pkts").unwrap();
            skipped += common::stat(&stats, "slice.packets_skipped").unwrap();
            tunnels += common::stat(&stats, "decoder.tunnel_pkts").unwrap();
            tunnels_skipped += common::stat(&stats, "slice.tunnels_skipped").unwrap();
            per_slice.push(alerts.len());
            union.extend(alerts);
        }
        // Every record is inspected by exactly one slice.
        assert_eq!(pkts, full_pkts);
        assert_eq!(skipped, full_pkts * u64::from(n - 1));
        // ... and every tunnel packet inside them.
        assert_eq!(tunnels, full_tunnels);
        assert_eq!(tunnels_skipped, full_tunnels * u64::from(n - 1));
        assert_eq!(flows, full_flows);
        assert_eq!(
            plain(&union),
            full_plain,
            "{n} slices: alerts of rules without thresholds differ"
        );
        let (all_u, all_f) = (multiset(union.clone()), multiset(full.clone()));
        let diff = |a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>| -> Vec<u64> {
            a.iter()
                .filter(|(l, _)| !host_scoped(l))
                .flat_map(|(l, &c)| {
                    let extra = c.saturating_sub(b.get(l).copied().unwrap_or(0));
                    std::iter::repeat_n(sid(l), extra)
                })
                .collect()
        };
        let (extra, missing) = (diff(&all_u, &all_f), diff(&all_f, &all_u));
        // Only rules with thresholds may differ.
        assert!(extra.iter().chain(&missing).all(|s| counted.contains(s)));
        eprintln!(
            "{n} slices: alerts per slice {per_slice:?} (full run {}); \
             threshold rules: {} alerts more in the slices (sids {extra:?}), {} fewer (sids {missing:?})",
            full.len(),
            extra.len(),
            missing.len()
        );
    }
    // Seven runs' output of a 140 MB capture: not left behind.
    let _ = std::fs::remove_dir_all(&dir);
}
