//! End-to-end tests: crafted pcap in, eve.json / fast.log out, through the
//! real `vigil` binary.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use vigil_craft::{write_pcap_file, TcpSession, TimedFrame};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn vigil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .output()
        .expect("run vigil")
}

/// `vigil run -r pcap -S rules -l out [extra]`.
fn vigil_run(pcap: &Path, rules: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "-r",
        pcap.to_str().unwrap(),
        "-S",
        rules.to_str().unwrap(),
        "-l",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    vigil(&args)
}

fn run_case(
    dir: &Path,
    frames: &[TimedFrame],
    rules: &str,
    extra: &[&str],
) -> (Vec<serde_json::Value>, String) {
    let pcap = dir.join("in.pcap");
    write_pcap_file(&pcap, frames).unwrap();
    let rules_path = dir.join("test.rules");
    std::fs::write(&rules_path, rules).unwrap();
    let out = dir.join("out");
    let o = vigil_run(&pcap, &rules_path, &out, extra);
    assert!(
        o.status.success(),
        "vigil failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let eve = std::fs::read_to_string(out.join("eve.json")).unwrap();
    let events = eve
        .lines()
        .map(|l| serde_json::from_str(l).expect("eve line is JSON"))
        .collect();
    (
        events,
        std::fs::read_to_string(out.join("fast.log")).unwrap(),
    )
}

fn alert_sids(events: &[serde_json::Value]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect()
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn demo_capture_raises_demo_alerts() {
    let d = tmpdir("demo");
    let frames = vigil_craft::demo_capture();
    let (events, fast) = run_case(&d, &frames, vigil_craft::DEMO_RULES, &[]);
    let sids = alert_sids(&events);
    assert!(!sids.is_empty(), "demo raised no alert");
    // Every alert has Suricata's core fields (no pcap_cnt on flow-end
    // pseudo packets, as in Suricata).
    for e in events.iter().filter(|e| e["event_type"] == "alert") {
        for k in ["timestamp", "flow_id", "src_ip", "dest_ip", "proto"] {
            assert!(!e[k].is_null(), "missing {k} in {e}");
        }
        assert_eq!(
            e["pcap_cnt"].is_null(),
            e["pkt_src"] == "stream (flow timeout)",
            "{e}"
        );
        assert_eq!(e["alert"]["action"], "allowed");
    }
    // The demo's SYN scan of 20 ports is also found by the built-in
    // vertical port scan detector (gid 9000, sid 1), once.
    let scans: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert" && e["alert"]["gid"] == 9000)
        .collect();
    assert_eq!(scans.len(), 1, "{scans:?}");
    assert_eq!(scans[0]["alert"]["signature_id"], 1);
    assert_eq!(scans[0]["alert"]["metadata"]["vigil_scope"][0], "pair");
    assert_eq!(fast.lines().count(), sids.len());
    let stats = events.last().unwrap();
    assert_eq!(stats["event_type"], "stats");
    assert_eq!(
        stats["stats"]["detect"]["alert"].as_u64().unwrap(),
        sids.len() as u64
    );
    assert_eq!(
        stats["stats"]["decoder"]["pkts"].as_u64().unwrap(),
        frames.len() as u64
    );
    // Captured bytes, as Suricata counts them.
    assert_eq!(
        stats["stats"]["decoder"]["bytes"].as_u64().unwrap(),
        frames.iter().map(|(_, f)| f.len() as u64).sum::<u64>()
    );
}

/// Many flows over several workers: output must not depend on the count.
#[test]
fn output_identical_for_any_worker_count() {
    let d = tmpdir("workers");
    let mut frames = vigil_craft::demo_capture();
    for i in 0..40u16 {
        let mut s = TcpSession::new(
            addr(&format!("10.0.{}.{}:{}", i % 5, 10 + i, 40000 + i)),
            addr(&format!("203.0.113.{}:80", 1 + i % 7)),
        )
        .start_at((1_705_400_000 + i as i64, 0));
        s.handshake()
            .client_send(format!("GET /item{i} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
            .close();
        frames.extend(s.into_frames());
    }
    frames.sort_by_key(|f| f.0);
    let rules = format!(
        "{}\nalert tcp any any -> any 80 (msg:\"item\"; flow:to_server,established; content:\"GET /item\"; depth:9; sid:9000001; rev:1;)\n\
         alert tcp any 80 -> any any (msg:\"ok\"; flow:established,to_client; content:\"200 OK\"; sid:9000002; rev:1;)\n\
         alert http any any -> any any (msg:\"http item\"; flow:established,to_server; content:\"/item\"; sid:9000003; rev:1;)\n\
         alert ftp any any -> any any (msg:\"ftp, a set of its own\"; content:\"MKD\"; sid:9000004; rev:1;)\n",
        vigil_craft::DEMO_RULES
    );
    let mut outputs = Vec::new();
    // Every split of the prefilter sets (by default the less common
    // protocols' rules only) gives the same output too.
    let split = ["--workers", "2", "--set", "detect.prefilter-split-sets=yes"];
    let unsplit = ["--workers", "2", "--set", "detect.prefilter-split-sets=no"];
    for (name, extra) in [
        ("1", &["--workers", "1"][..]),
        // One thread reads, inspects and writes in turn.
        ("single", &["--runmode", "single"][..]),
        ("2", &["--workers", "2"][..]),
        ("4", &["--workers", "4"][..]),
        ("2split", &split[..]),
        ("2unsplit", &unsplit[..]),
    ] {
        let sub = d.join(name);
        std::fs::create_dir_all(&sub).unwrap();
        run_case(&sub, &frames, &rules, extra);
        let eve = std::fs::read(sub.join("out/eve.json")).unwrap();
        let fast = std::fs::read(sub.join("out/fast.log")).unwrap();
        outputs.push((eve, fast));
    }
    let n = String::from_utf8_lossy(&outputs[0].0)
        .lines()
        .filter(|l| l.contains("9000001"))
        .count();
    // Each request alerts twice, as in Suricata: on its packet (the
    // content has a depth, so the rule inspects packets too) and on the
    // reassembled stream once the client closes.
    assert_eq!(n, 80);
    assert!(
        outputs.windows(2).all(|w| w[0] == w[1]),
        "output differs between worker counts"
    );
    // The option takes effect: the full split has more pattern lists than
    // the default (the FTP rule's set), which has more than none.
    let lists = |extra: &[&str]| {
        let o = vigil_run(
            &d.join("1/in.pcap"),
            &d.join("1/test.rules"),
            &d.join("lists"),
            extra,
        );
        assert!(o.status.success());
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let n = err
            .split(" pattern lists")
            .next()
            .and_then(|h| h.rsplit(' ').next())
            .and_then(|n| n.parse::<usize>().ok());
        n.unwrap_or_else(|| panic!("no pattern list count: {err}"))
    };
    let default = lists(&["--workers", "2"]);
    assert!(lists(&split) > default && default > lists(&unsplit));
}

/// `--simulate-ips` with host blocking: a block made on one flow applies
/// to the attacker's other flows in input order, so the verdicts (and the
/// whole output) are the same for any worker count.
#[test]
fn simulate_ips_with_host_blocking_is_the_same_for_any_worker_count() {
    let d = tmpdir("hostblock");
    let attacker = "198.51.100.7";
    let mut frames = Vec::new();
    for i in 0..24u16 {
        // The attacker's first flow carries the attack; the rest of its
        // flows (to several servers, so over several workers) come after
        // and must be dropped by the host table; other clients are not.
        let client = if i % 2 == 0 {
            format!("{attacker}:{}", 41000 + i)
        } else {
            format!("10.0.3.{}:{}", 10 + i, 42000 + i)
        };
        let mut s = TcpSession::new(addr(&client), addr(&format!("203.0.113.{}:80", 1 + i % 5)))
            .start_at((1_705_400_000 + i as i64, 0));
        let path = if i == 0 { "/ATTACK" } else { "/fine" };
        s.handshake()
            .client_send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
            .close();
        frames.extend(s.into_frames());
    }
    frames.sort_by_key(|f| f.0);
    let rules = "drop tcp any any -> any 80 (msg:\"attack\"; content:\"GET /ATTACK\"; classtype:trojan-activity; sid:7001;)\n\
                 alert tcp any any -> any 80 (msg:\"fine\"; flow:to_server,established; content:\"GET /fine\"; sid:7002;)\n";
    let config = d.join("vigil.yaml");
    std::fs::write(
        &config,
        "ips:\n  block-hosts:\n    classtypes: [trojan-activity]\n    seconds: 3600\n",
    )
    .unwrap();
    let mut outputs = Vec::new();
    for w in ["1", "2", "4"] {
        let sub = d.join(w);
        std::fs::create_dir_all(&sub).unwrap();
        let (events, _) = run_case(
            &sub,
            &frames,
            rules,
            &[
                "--simulate-ips",
                "-c",
                config.to_str().unwrap(),
                "--workers",
                w,
            ],
        );
        let stats = events.last().unwrap()["stats"].clone();
        assert!(
            stats["ips"]["drop_reason"]["host_table"].as_u64().unwrap() > 0,
            "{stats}"
        );
        // Only the other clients' requests alert: the attacker's later
        // flows are dropped before inspection.
        let fine: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["alert"]["signature_id"] == 7002)
            .collect();
        assert_eq!(fine.len(), 12, "{fine:?}");
        assert!(fine.iter().all(|e| e["src_ip"] != attacker));
        outputs.push(std::fs::read(sub.join("out/eve.json")).unwrap());
    }
    assert!(
        outputs.windows(2).all(|w| w[0] == w[1]),
        "output differs between worker counts"
    );
}

#[test]
fn established_needs_a_handshake() {
    let d = tmpdir("est");
    let mut with = TcpSession::new(addr("10.0.0.1:1111"), addr("10.0.0.2:23"));
    with.handshake()
        .client_send(b"id\n")
        .server_send(b"uid=0(root) gid=0(root)\n");
    let mut without =
        TcpSession::new(addr("10.0.0.3:2222"), addr("10.0.0.4:23")).start_at((1_705_400_100, 0));
    without.server_send(b"uid=0(root) gid=0(root)\n");
    let mut frames = with.into_frames();
    frames.extend(without.into_frames());
    let rules = "alert tcp any any -> any any (msg:\"est\"; flow:established; content:\"uid=0|28|root|29|\"; sid:1;)\n\
                 alert tcp any any -> any any (msg:\"not est\"; flow:not_established; content:\"uid=0|28|root|29|\"; sid:2;)\n";
    let (events, _) = run_case(&d, &frames, rules, &[]);
    // sid 1 matches the reassembled stream when the first flow times out
    // (its pseudo packet, before the second session's packet, which is
    // much later); sid 2 matches the packet of the session without
    // handshake.
    assert_eq!(alert_sids(&events), vec![1, 2]);
    let a = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 1)
        .unwrap();
    assert_eq!(a["direction"], "to_client");
    assert_eq!(a["src_port"], 23);
}

#[test]
fn flowbits_carry_state_across_packets_in_order() {
    let d = tmpdir("flowbits");
    let mut s = TcpSession::new(addr("10.1.0.1:5000"), addr("10.1.0.2:80"));
    s.handshake()
        .client_send(b"LOGIN admin")
        .server_send(b"WELCOME")
        .client_send(b"LOGIN again");
    let rules = "alert tcp any any -> any any (msg:\"login\"; content:\"LOGIN\"; flowbits:set,logged; flowbits:noalert; sid:10;)\n\
                 alert tcp any any -> any any (msg:\"welcome after login\"; content:\"WELCOME\"; flowbits:isset,logged; sid:11;)\n\
                 alert tcp any any -> any any (msg:\"welcome without login\"; content:\"WELCOME\"; flowbits:isnotset,logged; sid:12;)\n";
    let (events, _) = run_case(&d, s.frames(), rules, &[]);
    assert_eq!(alert_sids(&events), vec![11]);
}

#[test]
fn threshold_limits_alerts_per_source() {
    let d = tmpdir("threshold");
    let mut frames = Vec::new();
    for i in 0..5u16 {
        let mut s = TcpSession::new(addr(&format!("10.2.0.1:{}", 6000 + i)), addr("10.2.0.2:80"))
            .start_at((1_705_400_000 + i as i64, 0));
        s.handshake().client_send(b"probe");
        frames.extend(s.into_frames());
    }
    let rules = "alert tcp any any -> any any (msg:\"probe\"; content:\"probe\"; threshold:type limit, track by_src, count 2, seconds 60; sid:20;)\n";
    for w in ["1", "3"] {
        let sub = d.join(w);
        std::fs::create_dir_all(&sub).unwrap();
        let (events, _) = run_case(&sub, &frames, rules, &["--workers", w]);
        assert_eq!(alert_sids(&events), vec![20, 20], "workers {w}");
    }
}

#[test]
fn clear_errors_for_bad_input() {
    let d = tmpdir("errors");
    let missing = vigil(&[
        "run",
        "-r",
        "/nonexistent/x.pcap",
        "-l",
        d.to_str().unwrap(),
    ]);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/x.pcap"), "{err}");

    let pcap = d.join("ok.pcap");
    write_pcap_file(&pcap, &vigil_craft::demo_capture()).unwrap();
    let no_rules = vigil(&[
        "run",
        "-r",
        pcap.to_str().unwrap(),
        "-S",
        "/nonexistent.rules",
        "-l",
        d.to_str().unwrap(),
    ]);
    assert!(!no_rules.status.success());
    assert!(String::from_utf8_lossy(&no_rules.stderr).contains("/nonexistent.rules"));

    let garbage = d.join("garbage.pcap");
    std::fs::write(&garbage, b"this is not a capture file at all").unwrap();
    let bad = vigil(&[
        "run",
        "-r",
        garbage.to_str().unwrap(),
        "-l",
        d.to_str().unwrap(),
    ]);
    assert!(!bad.status.success());

    let flag = vigil(&["run", "--no-such-flag"]);
    assert!(!flag.status.success());

    // Run modes: Suricata's names, anything else is refused; single is
    // one worker.
    let runmode = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "-r",
            pcap.to_str().unwrap(),
            "-l",
            d.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = vigil(&args);
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (ok, err) = runmode(&["--runmode", "fastest"]);
    assert!(
        !ok && err.contains("--runmode") && err.contains("single"),
        "{err}"
    );
    let (ok, err) = runmode(&["--runmode", "single", "--workers", "2"]);
    assert!(!ok && err.contains("--workers 2"), "{err}");
    let (ok, err) = runmode(&["--runmode", "single", "--workers", "1"]);
    assert!(ok && err.contains("1 worker(s), one thread"), "{err}");
    let (ok, err) = runmode(&["--runmode", "autofp", "--workers", "1"]);
    assert!(
        ok && err.contains("1 worker(s)") && !err.contains("one thread"),
        "{err}"
    );
}

#[test]
fn bad_rules_are_reported_and_others_still_load() {
    let d = tmpdir("badrules");
    let mut s = TcpSession::new(addr("10.3.0.1:7000"), addr("10.3.0.2:80"));
    s.handshake().client_send(b"hello world");
    let rules = "alert tcp any any -> any any (msg:\"good\"; content:\"hello\"; sid:30;)\n\
                 alert tcp any any -> any any (msg:\"bad\"; content:\"x\"; nosuchkeyword; sid:31;)\n\
                 alert tcp any any -> any any (msg:\"app\"; dns.query.name; content:\"/\"; sid:32;)\n";
    let pcap = d.join("in.pcap");
    write_pcap_file(&pcap, s.frames()).unwrap();
    std::fs::write(d.join("r.rules"), rules).unwrap();
    let o = vigil(&[
        "run",
        "-r",
        pcap.to_str().unwrap(),
        "-S",
        d.join("r.rules").to_str().unwrap(),
        "-l",
        d.join("out").to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("r.rules:2"), "{err}");
    assert!(err.contains("sid 31"), "{err}");
    assert!(err.contains("nosuchkeyword"), "{err}");
    assert!(err.contains("1 loaded"), "{err}");
    let eve = std::fs::read_to_string(d.join("out/eve.json")).unwrap();
    assert_eq!(
        eve.lines()
            .filter(|l| l.contains("\"event_type\":\"alert\""))
            .count(),
        1
    );
}

/// `--profile-rules N`: the N costliest rules with their checks and
/// matches, in rule_perf.log and rule_perf.json; nothing written (and
/// the same alerts) without it.
#[test]
fn profile_rules_reports_checks_and_matches() {
    let d = tmpdir("profile");
    let frames = vigil_craft::demo_capture();
    let (plain, _) = run_case(&d, &frames, vigil_craft::DEMO_RULES, &[]);
    let out = d.join("out");
    assert!(!out.join("rule_perf.json").exists());
    let (profiled, _) = run_case(
        &d,
        &frames,
        vigil_craft::DEMO_RULES,
        &["--profile-rules", "3"],
    );
    assert_eq!(alert_sids(&plain), alert_sids(&profiled));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("rule_perf.json")).unwrap())
            .unwrap();
    let rules = doc["rules"].as_array().unwrap();
    assert!(!rules.is_empty() && rules.len() <= 3, "{doc}");
    let mut last = u64::MAX;
    for r in rules {
        let checks = r["checks"].as_u64().unwrap();
        let matches = r["matches"].as_u64().unwrap();
        let ticks = r["ticks_total"].as_u64().unwrap();
        assert!(checks >= 1 && matches <= checks, "{r}");
        assert!(ticks <= last, "not sorted by time: {doc}");
        last = ticks;
    }
    // Every alerting rule was checked at least as often as it alerted;
    // with a limit above the rule count, all checked rules are listed.
    let (_, _) = run_case(
        &d,
        &frames,
        vigil_craft::DEMO_RULES,
        &["--profile-rules", "1000"],
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("rule_perf.json")).unwrap())
            .unwrap();
    // Rule alerts (the built-in detectors, gid 9000, are not rules).
    let sids: Vec<u64> = plain
        .iter()
        .filter(|e| e["event_type"] == "alert" && e["alert"]["gid"] == 1)
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    for sid in &sids {
        let r = doc["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["signature_id"].as_u64() == Some(*sid))
            .unwrap_or_else(|| panic!("alerting sid {sid} missing from {doc}"));
        assert!(r["matches"].as_u64().unwrap() >= 1, "{r}");
    }
    let log = std::fs::read_to_string(out.join("rule_perf.log")).unwrap();
    assert!(log.contains("Avg No Match"));
    assert!(log
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(&sids[0].to_string())));
}

/// stats.log reports memory by component: the process peak is at least
/// the resident set the ruleset added, which is at least the prefilter's
/// databases.
#[test]
fn stats_log_reports_memory_by_component() {
    let d = tmpdir("memory");
    let frames = vigil_craft::demo_capture();
    run_case(&d, &frames, vigil_craft::DEMO_RULES, &[]);
    let log = std::fs::read_to_string(d.join("out/stats.log")).unwrap();
    let value = |key: &str| -> u64 {
        log.lines()
            .find(|l| l.split('|').next().map(str::trim) == Some(key))
            .and_then(|l| l.rsplit('|').next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{key} missing from stats.log:\n{log}"))
    };
    let peak = value("memory.process_peak_bytes");
    let prefilter = value("memory.prefilter_bytes");
    assert!(peak > 1 << 20, "peak {peak}");
    assert!(
        prefilter > 0 && prefilter < peak,
        "prefilter {prefilter}, peak {peak}"
    );
    assert!(value("memory.ruleset_bytes") < peak);
    assert!(value("memory.flows_peak_bytes") > 0);
    value("memory.stream_peak_bytes");
}

/// `decoder.bytes` counts captured bytes, as Suricata's does, not the
/// original lengths the records claim (a snaplen-cut capture, or a record
/// claiming gigabytes).
#[test]
fn decoder_bytes_counts_captured_bytes() {
    let d = tmpdir("capbytes");
    let frame = vigil_craft::eth_ipv4_udp(
        std::net::Ipv4Addr::new(10, 0, 0, 1),
        1000,
        std::net::Ipv4Addr::new(10, 0, 0, 2),
        2000,
        b"hello",
    );
    let mut pcap = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        pcap.extend_from_slice(&v.to_le_bytes());
    }
    for orig in [frame.len() as u32 + 1000, 4_000_000_000] {
        for v in [1_700_000_000u32, 0, frame.len() as u32, orig] {
            pcap.extend_from_slice(&v.to_le_bytes());
        }
        pcap.extend_from_slice(&frame);
    }
    let path = d.join("cut.pcap");
    std::fs::write(&path, &pcap).unwrap();
    let out = d.join("out");
    let o = vigil(&[
        "run",
        "-r",
        path.to_str().unwrap(),
        "-l",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let eve = std::fs::read_to_string(out.join("eve.json")).unwrap();
    let stats: serde_json::Value = serde_json::from_str(eve.lines().last().unwrap()).unwrap();
    assert_eq!(stats["stats"]["decoder"]["pkts"], 2);
    assert_eq!(stats["stats"]["decoder"]["bytes"], 2 * frame.len() as u64);
}

/// `xbits` and `hostbits`: a bit set on one flow is seen by a rule on
/// another flow (on another worker), in input order, until it expires;
/// the same alerts for any worker count.
#[test]
fn xbits_and_hostbits_cross_flows_in_input_order() {
    let d = tmpdir("xbits");
    let (a, b, c, dd) = ("10.3.0.1", "10.3.0.2", "10.3.0.3", "10.3.0.4");
    // (second, client, client port, server, server port, request)
    type Flow<'a> = (i64, &'a str, u16, &'a str, u16, &'a [u8]);
    let flows: &[Flow] = &[
        // Checked before it is set: no alert.
        (999, c, 6010, a, 80, b"CHECKDST"),
        (1000, a, 6000, b, 80, b"SETSRC"),
        // A is the destination now: set (sid 31).
        (1002, c, 6001, a, 80, b"CHECKDST"),
        // Not on B.
        (1003, c, 6002, b, 80, b"CHECKDST"),
        (1003, a, 6003, c, 80, b"PAIRSET"),
        // The pair in the other direction: set (sid 33).
        (1004, c, 6004, a, 443, b"PAIRCHK"),
        // hostbits on the destination, checked on the source.
        (1005, dd, 6006, b, 80, b"HBSET"),
        (1006, b, 6007, c, 80, b"HBCHK"),
        // Expired (set at 1000 for 10 s).
        (1020, c, 6005, a, 80, b"CHECKDST"),
    ];
    let mut frames = Vec::new();
    for (t, src, sp, dst, dp, data) in flows {
        let mut s = TcpSession::new(addr(&format!("{src}:{sp}")), addr(&format!("{dst}:{dp}")))
            .start_at((*t, 0));
        s.handshake().client_send(data).close();
        frames.extend(s.into_frames());
    }
    let rules = "\
alert tcp any any -> any any (msg:\"set\"; flow:to_server; content:\"SETSRC\"; xbits:set,evil,track ip_src,expire 10; xbits:noalert; sid:30;)
alert tcp any any -> any any (msg:\"dst has it\"; flow:to_server; content:\"CHECKDST\"; xbits:isset,evil,track ip_dst; sid:31;)
alert tcp any any -> any any (msg:\"pair set\"; flow:to_server; content:\"PAIRSET\"; xbits:set,p,track ip_pair; noalert; sid:32;)
alert tcp any any -> any any (msg:\"pair has it\"; flow:to_server; content:\"PAIRCHK\"; xbits:isset,p,track ip_pair; sid:33;)
alert tcp any any -> any any (msg:\"hb set\"; flow:to_server; content:\"HBSET\"; hostbits:set,h,dst; hostbits:noalert; sid:34;)
alert tcp any any -> any any (msg:\"hb src has it\"; flow:to_server; content:\"HBCHK\"; hostbits:isset,h,src; sid:35;)
alert tcp any any -> any any (msg:\"hb src lacks it\"; flow:to_server; content:\"HBCHK\"; hostbits:isnotset,h; sid:36;)
";
    let mut first: Option<String> = None;
    for w in ["1", "2", "3", "4"] {
        let sub = d.join(w);
        std::fs::create_dir_all(&sub).unwrap();
        let (events, _) = run_case(&sub, &frames, rules, &["--workers", w]);
        assert_eq!(alert_sids(&events), vec![31, 33, 35], "workers {w}");
        let eve = std::fs::read_to_string(sub.join("out/eve.json")).unwrap();
        match &first {
            None => first = Some(eve),
            Some(f) => assert_eq!(f, &eve, "eve.json differs at {w} workers"),
        }
        let stats = std::fs::read_to_string(sub.join("out/stats.log")).unwrap();
        let value = |k: &str| -> u64 {
            stats
                .lines()
                .find(|l| l.split('|').next().unwrap().trim() == k)
                .and_then(|l| l.rsplit('|').next())
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or_else(|| panic!("{k} missing in stats.log"))
        };
        // 10 matches of xbits rules (sid 36 matched once, failed its test).
        assert_eq!(value("detect.xbits.events"), 10, "workers {w}");
        assert_eq!(value("detect.xbits.tests_failed"), 4, "workers {w}");
        assert_eq!(value("detect.xbits.sets"), 3, "workers {w}");
    }
}

/// The built-in detectors on a crafted capture: a vertical port scan
/// (SYNs answered by resets), a horizontal address scan (SYNs nobody
/// answers) and a benign client that connects to many servers. Alerts
/// name the scope and the counts, the same for any worker count.
#[test]
fn detectors_find_crafted_scans_with_scope_and_counts() {
    use vigil_craft::{add_us, PacketBuilder, ACK, RST, SYN};
    let d = tmpdir("detectors");
    let b = PacketBuilder::default();
    let ip = |s: &str| -> std::net::IpAddr { s.parse().unwrap() };
    let mut frames: Vec<TimedFrame> = Vec::new();
    let mut t = 0u64;
    let at = |t: &mut u64| {
        *t += 1000;
        add_us((1_705_500_000, 0), *t)
    };
    // Vertical: 20 ports of one host, each answered by a reset.
    for port in 1..=20u16 {
        let (scanner, target) = (ip("10.7.0.66"), ip("10.7.0.1"));
        frames.push((
            at(&mut t),
            b.tcp(scanner, 40000, target, port, 1000, 0, SYN, &[]),
        ));
        frames.push((
            at(&mut t),
            b.tcp(target, port, scanner, 40000, 0, 1001, RST | ACK, &[]),
        ));
    }
    // Horizontal: port 445 of 30 hosts, no answer.
    for h in 1..=30u8 {
        let target = std::net::IpAddr::from([10, 7, 1, h]);
        frames.push((
            at(&mut t),
            b.tcp(
                ip("10.7.0.77"),
                41000 + u16::from(h),
                target,
                445,
                7,
                0,
                SYN,
                &[],
            ),
        ));
    }
    // Benign: 30 servers on port 443, every connection established.
    for h in 1..=30u8 {
        let server = format!("10.7.2.{h}:443");
        let mut s = TcpSession::new(
            addr(&format!("10.7.0.88:{}", 42000 + u16::from(h))),
            addr(&server),
        )
        .start_at((1_705_500_100 + i64::from(h), 0));
        s.handshake().client_send(b"hello").close();
        frames.extend(s.into_frames());
    }
    frames.sort_by_key(|f| f.0);
    let rules = "alert tcp any any -> any any (msg:\"unrelated\"; content:\"nothing-matches-this\"; sid:1;)\n";
    let mut first: Option<String> = None;
    for w in ["1", "2", "4"] {
        let sub = d.join(w);
        std::fs::create_dir_all(&sub).unwrap();
        let (events, _) = run_case(&sub, &frames, rules, &["--workers", w]);
        let alerts: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["event_type"] == "alert")
            .collect();
        let got: Vec<(u64, u64, &str, &str)> = alerts
            .iter()
            .map(|e| {
                (
                    e["alert"]["gid"].as_u64().unwrap(),
                    e["alert"]["signature_id"].as_u64().unwrap(),
                    e["src_ip"].as_str().unwrap(),
                    e["alert"]["metadata"]["vigil_scope"][0].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (9000, 1, "10.7.0.66", "pair"),
                (9000, 2, "10.7.0.77", "orig")
            ],
            "workers {w}"
        );
        assert_eq!(alerts[0]["dest_ip"], "10.7.0.1");
        assert_eq!(alerts[0]["alert"]["metadata"]["vigil_count"][0], "15");
        assert_eq!(alerts[1]["dest_port"], 445);
        assert_eq!(alerts[1]["alert"]["metadata"]["vigil_count"][0], "25");
        let eve = std::fs::read_to_string(sub.join("out/eve.json")).unwrap();
        match &first {
            None => first = Some(eve),
            Some(f) => assert_eq!(f, &eve, "eve.json differs at {w} workers"),
        }
    }
    // Off in the config: no detector alerts.
    let cfg = d.join("vigil.yaml");
    std::fs::write(&cfg, "detectors:\n  enabled: no\n").unwrap();
    let sub = d.join("off");
    std::fs::create_dir_all(&sub).unwrap();
    let (events, _) = run_case(&sub, &frames, rules, &["-c", cfg.to_str().unwrap()]);
    assert!(alert_sids(&events).is_empty());
    // A threshold from the config: 5 ports make a port scan.
    std::fs::write(
        &cfg,
        "detectors:\n  port-scan:\n    count: 5\n  address-scan:\n    enabled: no\n",
    )
    .unwrap();
    let sub = d.join("five");
    std::fs::create_dir_all(&sub).unwrap();
    let (events, _) = run_case(&sub, &frames, rules, &["-c", cfg.to_str().unwrap()]);
    let a: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .collect();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["alert"]["metadata"]["vigil_threshold"][0], "5");
}

/// eve-log `community-id: yes`: every event carries the flow's Community
/// ID, the same in both directions (the spec's vector: TCP
/// 1.2.3.4:1122 - 5.6.7.8:3344, seed 0); off by default, as in Suricata.
#[test]
fn community_id_on_every_event_when_enabled() {
    let d = tmpdir("community-id");
    for sub in ["off", "on", "seeded"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let mut s = TcpSession::new(addr("1.2.3.4:1122"), addr("5.6.7.8:3344"));
    s.handshake()
        .client_send(b"ping-request")
        .server_send(b"pong-reply")
        .close();
    let rules = "alert tcp any any -> any any (msg:\"req\"; content:\"ping-request\"; sid:50;)\n\
                 alert tcp any any -> any any (msg:\"rep\"; content:\"pong-reply\"; sid:51;)\n";
    let (off, _) = run_case(&d.join("off"), s.frames(), rules, &[]);
    assert!(off.iter().all(|e| e.get("community_id").is_none()));
    let cfg = d.join("vigil.yaml");
    std::fs::write(&cfg, "outputs:\n  - eve-log:\n      community-id: yes\n").unwrap();
    let (on, _) = run_case(
        &d.join("on"),
        s.frames(),
        rules,
        &["-c", cfg.to_str().unwrap()],
    );
    let alerts: Vec<&serde_json::Value> =
        on.iter().filter(|e| e["event_type"] == "alert").collect();
    assert_eq!(alerts.len(), 2);
    for a in &alerts {
        assert_eq!(a["community_id"], "1:wCb3OG7yAFWelaUydu0D+125CLM=", "{a}");
    }
    // Another seed, another id.
    std::fs::write(
        &cfg,
        "outputs:\n  - eve-log:\n      community-id: yes\n      community-id-seed: 7\n",
    )
    .unwrap();
    let (seeded, _) = run_case(
        &d.join("seeded"),
        s.frames(),
        rules,
        &["-c", cfg.to_str().unwrap()],
    );
    let a = seeded.iter().find(|e| e["event_type"] == "alert").unwrap();
    assert_ne!(a["community_id"], "1:wCb3OG7yAFWelaUydu0D+125CLM=");
    assert!(a["community_id"].as_str().unwrap().starts_with("1:"));
    // A bad seed is an error naming the key.
    std::fs::write(
        &cfg,
        "outputs:\n  - eve-log:\n      community-id: yes\n      community-id-seed: 70000\n",
    )
    .unwrap();
    let o = vigil(&[
        "run",
        "-r",
        d.join("on/in.pcap").to_str().unwrap(),
        "-c",
        cfg.to_str().unwrap(),
        "-l",
        d.join("bad").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("community-id-seed"));
}

/// An SCTP packet from 10.0.0.1:2905 to 10.0.0.2:6303 with tag `vtag`
/// and the given chunks (type, value), each padded to 4 bytes.
/// `trailer` is appended as it is (a malformed chunk).
fn sctp_frame(vtag: u32, chunks: &[(u8, &[u8])], trailer: &[u8]) -> Vec<u8> {
    let mut s = vec![0x0b, 0x59, 0x18, 0x9f];
    s.extend_from_slice(&vtag.to_be_bytes());
    s.extend_from_slice(&[0; 4]);
    for (t, v) in chunks {
        let len = 4 + v.len();
        s.extend_from_slice(&[*t, 0, (len >> 8) as u8, len as u8]);
        s.extend_from_slice(v);
        s.resize(s.len().next_multiple_of(4), 0);
    }
    s.extend_from_slice(trailer);
    vigil_craft::PacketBuilder::default().eth_ip(
        "10.0.0.1".parse().unwrap(),
        "10.0.0.2".parse().unwrap(),
        132,
        &s,
    )
}

#[test]
fn sctp_keywords_decoder_events_and_eve_object() {
    let d = tmpdir("sctp");
    let data = |user: &[u8]| {
        let mut v = vec![0u8; 12];
        v.extend_from_slice(user);
        v
    };
    let (d1, d2) = (data(b"AAAAfirst"), data(b"BBBBsecond"));
    let frames: Vec<TimedFrame> = vec![
        // 1: INIT
        ((1, 0), sctp_frame(0, &[(1, &[0; 16])], &[])),
        // 2: ABORT, then two DATA chunks
        ((2, 0), sctp_frame(77, &[(6, &[]), (0, &d1), (0, &d2)], &[])),
        // 3: 17 HEARTBEATs: too many chunks
        ((3, 0), sctp_frame(77, &[(4, &[][..]); 17], &[])),
        // 4: a chunk longer than the packet: invalid
        ((4, 0), sctp_frame(77, &[(6, &[])], &[6, 0, 0, 99])),
    ];
    let rules = "\
alert sctp any any -> any any (msg:\"hdr\"; sctp.hdr; content:\"|01 00 00 14|\"; offset:12; depth:4; sid:1;)\n\
alert sctp any any -> any any (msg:\"type\"; sctp.chunk_type:abort; sid:2;)\n\
alert sctp any any -> any any (msg:\"vtag\"; sctp.vtag:>76; sctp.chunk_cnt:3; sid:3;)\n\
alert sctp any any -> any any (msg:\"payload is the first DATA\"; content:\"first\"; dsize:9; sid:4;)\n\
alert sctp any any -> any any (msg:\"not the second\"; content:\"second\"; sid:5;)\n\
alert sctp any any -> any any (msg:\"chunk data\"; sctp.chunk_data; content:\"BBBB\"; startswith; sid:6;)\n\
alert sctp any any -> any any (msg:\"many\"; decode-event:sctp.too_many_chunks; sid:7;)\n\
alert sctp any any -> any any (msg:\"bad len\"; decode-event:sctp.chunk_len_invalid; sid:8;)\n\
alert sctp any any -> any any (msg:\"type count\"; sctp.chunk_type:heartbeat; sctp.chunk_cnt:>16; sid:9;)\n";
    let (events, _) = run_case(&d, &frames, rules, &[]);
    let alerts: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            (
                e["pcap_cnt"].as_u64().unwrap(),
                e["alert"]["signature_id"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = alerts.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            (1, 1),
            (2, 2),
            (2, 3),
            (2, 4),
            (2, 6),
            (3, 7),
            (3, 9),
            (4, 8)
        ]
    );
    let by = |cnt: u64, sid: u64| {
        events
            .iter()
            .find(|e| e["pcap_cnt"] == cnt && e["alert"]["signature_id"] == sid)
            .unwrap()
    };
    let init = &by(1, 1)["sctp"];
    assert_eq!(init["vtag"], 0);
    assert_eq!(init["chunk_types"], serde_json::json!(["init"]));
    assert_eq!(init["has_init"], true);
    let two = &by(2, 2)["sctp"];
    assert_eq!(two["chunk_cnt"], 3);
    assert_eq!(
        two["chunk_types"],
        serde_json::json!(["abort", "data", "data"])
    );
    assert_eq!(
        (two["has_data"].clone(), two["has_abort"].clone()),
        (true.into(), true.into())
    );
    let many = &by(3, 7)["sctp"];
    assert_eq!(many["chunk_cnt"], 17);
    assert_eq!(many["chunk_types"].as_array().unwrap().len(), 16);
    // The invalid packet has no SCTP layer, so no object.
    assert!(by(4, 8).get("sctp").is_none());
    assert_eq!(by(1, 1)["proto"], "SCTP");
}
