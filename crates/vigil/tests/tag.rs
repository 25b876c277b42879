//! The `tag` keyword end to end: a crafted capture through the real
//! `vigil` binary to eve.json. The expected records are what Suricata 9
//! (the peer, `tagged-packets: yes`) writes for the same capture and
//! rules: the alerts, then an EVE `packet` record for each later packet a
//! session or host tag covers, the same for any worker count.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use vigil_craft::{write_pcap_file, PacketBuilder, TimedFrame};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-tag-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Three UDP flows (the peer comparison's capture): A 10.0.0.1:1000 ->
/// 10.0.0.2:9999 ("hello", five more, one answer), B 10.0.0.1 ->
/// 10.0.0.3, C 10.0.0.5 -> 10.0.0.2.
fn capture() -> Vec<TimedFrame> {
    let b = PacketBuilder::default();
    let t = 1_700_000_000i64;
    let a = |p: &[u8]| b.udp(ip("10.0.0.1"), 1000, ip("10.0.0.2"), 9999, p);
    let mut f = vec![((t, 0), a(b"hello"))];
    for i in 0..5 {
        f.push(((t + i, 0), a(&vec![b'x'; i as usize + 1])));
    }
    f.push((
        (t + 1, 0),
        b.udp(ip("10.0.0.2"), 9999, ip("10.0.0.1"), 1000, b"back"),
    ));
    f.push((
        (t + 2, 0),
        b.udp(ip("10.0.0.1"), 1001, ip("10.0.0.3"), 9999, b"other"),
    ));
    let c = |p: &[u8]| b.udp(ip("10.0.0.5"), 1002, ip("10.0.0.2"), 9999, p);
    f.push(((t + 3, 0), c(b"third")));
    for i in 0..3 {
        f.push(((t + 5 + i, 0), c(b"more")));
    }
    f
}

fn run(dir: &Path, rules: &str, out: &str, extra: &[&str]) -> String {
    std::fs::write(dir.join("t.rules"), rules).unwrap();
    let out = dir.join(out);
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .arg("run")
        .arg("-r")
        .arg(dir.join("in.pcap"))
        .arg("-S")
        .arg(dir.join("t.rules"))
        .arg("-l")
        .arg(&out)
        .args(["-k", "none"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    std::fs::read_to_string(out.join("eve.json")).unwrap()
}

/// (pcap_cnt, event type, sid or 0) of the alert and packet records.
fn records(eve: &str) -> Vec<(u64, String, u64)> {
    eve.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event_type"] == "alert" || e["event_type"] == "packet")
        .map(|e| {
            (
                e["pcap_cnt"].as_u64().unwrap(),
                e["event_type"].as_str().unwrap().to_string(),
                e["alert"]["signature_id"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

fn rec(v: &[(u64, &str, u64)]) -> Vec<(u64, String, u64)> {
    v.iter().map(|(c, t, s)| (*c, t.to_string(), *s)).collect()
}

#[test]
fn session_tag_logs_count_minus_one_packets_as_suricata() {
    let d = tmpdir("session");
    write_pcap_file(&d.join("in.pcap"), &capture()).unwrap();
    let rules = "alert udp any any -> any any (msg:\"sess\"; content:\"hello\"; tag:session,3,packets; sid:1;)\n";
    for w in ["1", "2", "3"] {
        let eve = run(&d, rules, &format!("o{w}"), &["--workers", w]);
        assert_eq!(
            records(&eve),
            rec(&[(1, "alert", 1), (2, "packet", 0), (3, "packet", 0)]),
            "workers {w}"
        );
        // The record as Suricata writes it: the frame and its link type.
        let p: serde_json::Value = serde_json::from_str(
            eve.lines()
                .find(|l| l.contains("\"event_type\":\"packet\""))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            p["packet"].as_str().unwrap(),
            vigil_detect::dataset::base64_encode(&capture()[1].1)
        );
        assert_eq!(p["packet_info"]["linktype"], 1);
        assert_eq!(p["src_port"], 1000);
        assert_eq!(p["pkt_src"], "wire/pcap");
        assert!(p["flow_id"].is_u64());
        assert!(p.get("alert").is_none() && p.get("direction").is_none());
    }
    // `tagged-packets: no`: the alerts only.
    std::fs::write(
        d.join("vigil.yaml"),
        "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - alert:\n            tagged-packets: no\n",
    )
    .unwrap();
    let c = d.join("vigil.yaml");
    let eve = run(&d, rules, "off", &["-c", c.to_str().unwrap()]);
    assert_eq!(records(&eve), rec(&[(1, "alert", 1)]));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn host_bytes_and_seconds_tags_across_flows_and_workers() {
    let d = tmpdir("host");
    write_pcap_file(&d.join("in.pcap"), &capture()).unwrap();
    let rules = "\
alert udp any any -> any any (msg:\"a\"; content:\"hello\"; tag:session,120,bytes; sid:1;)
alert udp any any -> any any (msg:\"b\"; content:\"back\"; tag:host,2,seconds,src; sid:2;)
alert udp any any -> any any (msg:\"c\"; content:\"third\"; tag:host,8,packets; sid:3;)
alert udp any any -> any any (msg:\"d\"; content:\"other\"; tag:host; sid:4;)
";
    // Suricata 9 on this capture: the same records (its multi-threaded
    // run may write packet 8's alert later).
    let want = rec(&[
        (1, "alert", 1),
        (2, "packet", 0),
        (7, "alert", 2),
        (8, "alert", 4),
        (9, "alert", 3),
        (9, "packet", 0),
        (10, "packet", 0),
        (11, "packet", 0),
        (12, "packet", 0),
    ]);
    for w in ["1", "2", "3"] {
        let eve = run(&d, rules, &format!("o{w}"), &["--workers", w]);
        assert_eq!(records(&eve), want, "workers {w}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_threshold_that_holds_the_alert_back_sets_no_tag() {
    let d = tmpdir("threshold");
    write_pcap_file(&d.join("in.pcap"), &capture()).unwrap();
    // Every second match alerts (packets 3 and 5), and only alerts set
    // or re-arm the tag (Suricata 9 gives these records).
    let rules = "alert udp any any -> any any (msg:\"x\"; content:\"x\"; threshold:type threshold,track by_src,count 2,seconds 60; tag:session,3,packets; sid:1;)\n";
    let eve = run(&d, rules, "o", &["--workers", "2"]);
    assert_eq!(
        records(&eve),
        rec(&[
            (3, "alert", 1),
            (4, "packet", 0),
            // The alert re-arms the tag; the packet is counted (and
            // tagged) too, as in Suricata.
            (5, "alert", 1),
            (5, "packet", 0),
            (6, "packet", 0),
            (7, "packet", 0),
        ])
    );
    let _ = std::fs::remove_dir_all(&d);
}
