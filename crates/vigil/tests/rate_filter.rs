//! `threshold.config` `rate_filter` in `vigil run`: the alert's action
//! changes while a rule matches too often for the tracked key, for
//! `timeout` seconds; `pass` stops the alerts; inline the new action is
//! the packet's verdict.

use std::path::{Path, PathBuf};
use std::process::Command;

use vigil_craft::{eth_ipv4_udp, write_pcap_file, TimedFrame};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-rate-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn udp(ms: i64, src: &str, sport: u16, payload: &[u8]) -> TimedFrame {
    (
        (1_700_000_000 + ms / 1000, ((ms % 1000) * 1000) as u32),
        eth_ipv4_udp(
            src.parse().unwrap(),
            sport,
            "192.0.2.80".parse().unwrap(),
            5353,
            payload,
        ),
    )
}

/// `(signature_id, src_ip, action)` of every alert, and fast.log, and
/// stderr.
fn run(dir: &Path, extra: &[&str]) -> (Vec<(u64, String, String)>, String, String) {
    let out = dir.join(format!("out{}", extra.len()));
    let mut args = vec![
        "run".to_string(),
        "-c".into(),
        dir.join("vigil.yaml").to_str().unwrap().into(),
        "-r".into(),
        dir.join("in.pcap").to_str().unwrap().into(),
        "-S".into(),
        dir.join("r.rules").to_str().unwrap().into(),
        "-l".into(),
        out.to_str().unwrap().into(),
        "--quiet".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(&args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let eve = std::fs::read_to_string(out.join("eve.json")).unwrap();
    let alerts = eve
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event_type"] == "alert")
        .map(|v| {
            (
                v["alert"]["signature_id"].as_u64().unwrap(),
                v["src_ip"].as_str().unwrap().to_string(),
                v["alert"]["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let fast = std::fs::read_to_string(out.join("fast.log")).unwrap();
    (alerts, fast, stderr)
}

#[test]
fn rate_filter_changes_the_action_while_a_rule_matches_too_often() {
    let d = tmpdir("actions");
    let mut frames = Vec::new();
    // 10.0.0.1: one match a second for 10 s, then one at 30 s.
    for s in 0..10u16 {
        frames.push(udp(i64::from(s) * 1000, "10.0.0.1", 40000 + s, b"probe"));
    }
    // 10.0.0.2: two matches, under the count: its own key.
    frames.push(udp(3500, "10.0.0.2", 41000, b"probe"));
    frames.push(udp(4500, "10.0.0.2", 41001, b"probe"));
    // 10.0.0.3: a rule whose rate filter passes.
    for s in 0..4u16 {
        frames.push(udp(
            i64::from(s) * 1000 + 200,
            "10.0.0.3",
            42000 + s,
            b"pass-me",
        ));
    }
    frames.push(udp(30_000, "10.0.0.1", 40100, b"probe"));
    frames.sort_by_key(|f| f.0);
    write_pcap_file(&d.join("in.pcap"), &frames).unwrap();
    std::fs::write(
        d.join("r.rules"),
        "alert udp any any -> any any (msg:\"probe\"; content:\"probe\"; sid:30;)\n\
         alert udp any any -> any any (msg:\"pass me\"; content:\"pass-me\"; sid:31;)\n",
    )
    .unwrap();
    std::fs::write(
        d.join("threshold.config"),
        "rate_filter gen_id 1, sig_id 30, track by_src, count 3, seconds 60, new_action drop, timeout 4\n\
         rate_filter gen_id 1, sig_id 31, track by_rule, count 1, seconds 60, new_action pass, timeout 100\n",
    )
    .unwrap();
    std::fs::write(d.join("vigil.yaml"), "threshold-file: threshold.config\n").unwrap();

    let (alerts, fast, stderr) = run(&d, &[]);
    assert!(!stderr.contains("not applied"), "{stderr}");
    assert!(stderr.contains("2 rate filters"), "{stderr}");
    let actions = |src: &str, sid: u64| -> Vec<&str> {
        alerts
            .iter()
            .filter(|a| a.0 == sid && a.1 == src)
            .map(|a| a.2.as_str())
            .collect()
    };
    // Matches 1-3 keep the rule's action; the 4th (second 3) exceeds
    // count 3 and switches `drop` on until second 3 + 4; the match at
    // second 8 finds it timed out (allowed), the one at second 9 is
    // again over the count in the 60 s window; second 30: timed out.
    let (a, b) = ("allowed", "blocked");
    assert_eq!(
        actions("10.0.0.1", 30),
        vec![a, a, a, b, b, b, b, b, a, b, a],
        "{alerts:?}"
    );
    // Another source has its own count.
    assert_eq!(actions("10.0.0.2", 30), vec![a, a]);
    // `pass`: from the second match on (count 1) the rule does not alert.
    assert_eq!(actions("10.0.0.3", 31), vec![a]);
    // fast.log marks the alerts whose action became drop, as Suricata's
    // does in IDS mode (`[wDrop]`).
    assert_eq!(fast.matches("[wDrop]").count(), 6, "{fast}");

    // Inline, the rate filter changes the verdict: the packets whose
    // alerts say "blocked" were dropped (each probe is its own flow), the
    // same for any worker count (one table, in input order).
    for w in ["1", "2"] {
        let (inline, _, stderr) = run(&d, &["--simulate-ips", "--workers", w]);
        assert_eq!(inline, alerts, "--simulate-ips --workers {w}: {stderr}");
    }
    let out = d.join("out3");
    let eve = std::fs::read_to_string(out.join("eve.json")).unwrap();
    let stats = eve.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(stats).unwrap();
    assert_eq!(v["stats"]["ips"]["blocked"], 6, "{stats}");
}
