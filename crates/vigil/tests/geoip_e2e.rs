//! `geoip` end to end: a crafted capture through the `vigil` binary with
//! `geoip-database` set in the YAML to a crafted MaxMind DB
//! (vigil_craft::mmdb: 10.1/16 RU, 10.2/16 US, 10.3/16 DE, 10.4/16 a
//! record without a country), to EVE alerts; and the load errors without
//! a database or with one that cannot be read.

mod common;

use std::net::Ipv4Addr;
use std::process::Command;

use vigil_craft::{eth_ipv4_udp, TimedFrame};

const RU: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 5);
const US: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 5);
const DE: Ipv4Addr = Ipv4Addr::new(10, 3, 0, 5);
const NO_COUNTRY: Ipv4Addr = Ipv4Addr::new(10, 4, 0, 5);
const MISS: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

fn capture() -> Vec<TimedFrame> {
    let t = 1_700_000_000;
    vec![
        // One flow RU <-> US, both directions (the per-flow cache).
        ((t, 0), eth_ipv4_udp(RU, 1000, US, 53, b"a")),
        ((t, 1000), eth_ipv4_udp(US, 53, RU, 1000, b"b")),
        ((t, 2000), eth_ipv4_udp(RU, 1000, US, 53, b"c")),
        // DE -> an address not in the database.
        ((t + 1, 0), eth_ipv4_udp(DE, 2000, MISS, 53, b"d")),
        // An address whose record has no country -> DE.
        ((t + 2, 0), eth_ipv4_udp(NO_COUNTRY, 3000, DE, 53, b"e")),
    ]
}

const RULES: &str = "\
alert udp any any -> any any (msg:\"from RU\"; geoip:src,RU; sid:1;)
alert udp any any -> any any (msg:\"RU/US both\"; geoip:both,RU,US; sid:2;)
alert udp any any -> any any (msg:\"not RU/US\"; geoip:!RU,US; sid:3;)
alert udp any any -> any any (msg:\"to DE\"; geoip:dst,DE; sid:4;)
alert udp any any -> any any (msg:\"no geoip\"; content:\"d\"; sid:5;)
";

#[test]
fn geoip_rules_alert_with_the_configured_database() {
    let dir = std::env::temp_dir().join(format!("vigil-geoip-db-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("country.mmdb");
    std::fs::write(&db, vigil_craft::mmdb::test_country_db()).unwrap();
    let yaml = format!("geoip-database: {}\n", db.display());
    let common::Run { eve, events, .. } =
        common::run_with("geoip", &capture(), RULES, Some(&["alert"]), &yaml, &[]);
    // 1: the two RU -> US packets; 2: all three packets of the RU/US
    // flow; 3: DE -> (miss) by its source and (no country) -> DE by its
    // destination (an address without a country never matches, even
    // negated); 4: -> DE; 5: the control rule.
    assert_eq!(
        common::alert_sids(&events),
        vec![1, 1, 2, 2, 2, 3, 3, 4, 5],
        "{eve}"
    );
    let a = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 4)
        .unwrap();
    assert_eq!(a["src_ip"], "10.4.0.5");
    assert_eq!(a["dest_ip"], "10.3.0.5");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs vigil with `yaml` as the config: (stderr, alert sids).
fn run_raw(tag: &str, yaml: &str) -> (String, Vec<u64>) {
    let dir = std::env::temp_dir().join(format!("vigil-geoip-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("g.pcap");
    vigil_craft::write_pcap_file(&pcap, &capture()).unwrap();
    std::fs::write(dir.join("g.rules"), RULES).unwrap();
    std::fs::write(dir.join("vigil.yaml"), format!("%YAML 1.1\n---\n{yaml}")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .arg("run")
        .arg("-c")
        .arg(dir.join("vigil.yaml"))
        .arg("-r")
        .arg(&pcap)
        .arg("-S")
        .arg(dir.join("g.rules"))
        .arg("-l")
        .arg(dir.join("out"))
        .args(["-k", "none"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    let eve = std::fs::read_to_string(dir.join("out/eve.json")).unwrap();
    let events: Vec<serde_json::Value> = eve
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    (stderr, common::alert_sids(&events))
}

#[test]
fn without_a_readable_database_geoip_rules_are_skipped() {
    // Not configured: each geoip rule is reported (naming the keyword and
    // the config key) and skipped; the other rule loads.
    let (stderr, sids) = run_raw("none", "");
    assert_eq!(sids, vec![5], "{stderr}");
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("keyword geoip") && l.contains("geoip-database"))
            .count(),
        4,
        "{stderr}"
    );
    // Configured but unreadable: a warning naming the file.
    let (stderr, sids) = run_raw(
        "bad",
        "geoip-database: /nonexistent/GeoLite2-Country.mmdb\n",
    );
    assert_eq!(sids, vec![5], "{stderr}");
    assert!(
        stderr.contains("warning: geoip-database /nonexistent/GeoLite2-Country.mmdb"),
        "{stderr}"
    );
}
