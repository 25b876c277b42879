//! mDNS and LLMNR end to end: a crafted capture (an mDNS query and a
//! responder's announcement on 5353, an LLMNR query to the multicast
//! group and the unicast answer from port 5355) through the `vigil`
//! binary to alerts and EVE `mdns`/`llmnr` records. Compared with
//! Suricata 9 on the same packets: the same alerts and records, but the
//! LLMNR answer's addresses (Suricata reverses that flow) and the mDNS
//! `a` data the schema has no room for.

mod common;

use std::net::Ipv4Addr;

use vigil_applayer::mdns::build::{message, name};
use vigil_craft::{eth_ipv4_udp, TimedFrame};

fn capture() -> Vec<TimedFrame> {
    let host = Ipv4Addr::new(10, 0, 0, 5);
    let printer = Ipv4Addr::new(10, 0, 0, 9);
    let responder = Ipv4Addr::new(10, 0, 0, 7);
    let mdns_group = Ipv4Addr::new(224, 0, 0, 251);
    let llmnr_group = Ipv4Addr::new(224, 0, 0, 252);
    let query = message(0, 0, &[("printer.local", 12)], &[]);
    let announce = message(
        0,
        0x8400,
        &[],
        &[
            ("printer.local", 1, 120, vec![10, 0, 0, 9]),
            ("_ipp._tcp.local", 12, 4500, name("printer._ipp._tcp.local")),
            (
                "printer._ipp._tcp.local",
                16,
                4500,
                b"\x05txtvy\x04abcd".to_vec(),
            ),
        ],
    );
    let lq = message(0x1234, 0, &[("wpad", 1)], &[]);
    let lr = message(
        0x1234,
        0x8000,
        &[("wpad", 1)],
        &[("wpad", 1, 30, vec![10, 0, 0, 7])],
    );
    vec![
        (
            (1_700_000_000, 0),
            eth_ipv4_udp(host, 5353, mdns_group, 5353, &query),
        ),
        (
            (1_700_000_001, 0),
            eth_ipv4_udp(printer, 5353, mdns_group, 5353, &announce),
        ),
        (
            (1_700_000_002, 0),
            eth_ipv4_udp(host, 50000, llmnr_group, 5355, &lq),
        ),
        (
            (1_700_000_003, 0),
            eth_ipv4_udp(responder, 5355, host, 50000, &lr),
        ),
    ]
}

#[test]
fn mdns_and_llmnr_to_alerts_and_records() {
    let common::Run { eve, events, dir } = common::run(
        "mdns",
        &capture(),
        "alert mdns any any -> any any (msg:\"q\"; mdns.queries.rrname; content:\"printer\"; sid:2;)\n\
         alert udp any any -> any any (msg:\"dns on mdns\"; dns.queries.rrname; content:\"printer\"; sid:3;)\n\
         alert llmnr any any -> any any (msg:\"lq\"; llmnr.queries.rrname; content:\"wpad\"; sid:5;)\n\
         alert udp any any -> any any (msg:\"alp mdns\"; app-layer-protocol:mdns; sid:6;)\n\
         alert udp any any -> any any (msg:\"alp llmnr\"; app-layer-protocol:llmnr; sid:7;)\n\
         alert mdns any any -> any any (msg:\"a\"; mdns.answers.rrname; content:\"printer\"; sid:8;)\n\
         alert mdns any any -> any any (msg:\"r\"; mdns.response.rrname; content:\"_ipp\"; sid:9;)\n\
         alert llmnr any any -> any any (msg:\"la\"; llmnr.answers.rrname; content:\"wpad\"; sid:10;)\n\
         alert llmnr any any -> any any (msg:\"lr\"; llmnr.response.rrname; content:\"wpad\"; sid:11;)\n\
         alert mdns any any -> any any (msg:\"dns keyword on mdns\"; dns.opcode:0; sid:4;)\n",
        Some(&["alert", "mdns", "llmnr", "stats"]),
    );
    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    // As Suricata 9: `dns.*` keywords do not apply to mDNS flows (sid 3
    // never matches, sid 4 is not loaded); the LLMNR answer matches the
    // query buffer too (its question section).
    assert_eq!(sids, vec![2, 5, 5, 6, 6, 7, 7, 8, 9, 10, 11], "{eve}");
    let rec = |t: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|e| e["event_type"] == t).collect()
    };
    let mdns = rec("mdns");
    assert_eq!(mdns.len(), 2, "{eve}");
    assert_eq!(
        mdns[0]["mdns"],
        serde_json::json!({"type": "request", "id": 0, "opcode": 0, "rcode": 0,
            "queries": [{"rrname": "printer.local", "rrtype": "ptr"}]})
    );
    assert_eq!(
        mdns[1]["mdns"]["answers"],
        // Within Suricata's schema, which lists PTR and TXT data only
        // (Suricata's logger also writes `"a": "10.0.0.9"`).
        serde_json::json!([{"rrname": "printer.local"},
            {"rrname": "_ipp._tcp.local", "ptr": "printer._ipp._tcp.local"},
            {"rrname": "printer._ipp._tcp.local", "txt": ["txtvy", "abcd"]}])
    );
    assert_eq!(mdns[1]["mdns"]["flags"], serde_json::json!(["aa"]));
    assert!(mdns[0].get("tx_id").is_none());
    let llmnr = rec("llmnr");
    assert_eq!(llmnr.len(), 2, "{eve}");
    assert_eq!(llmnr[0]["llmnr"]["type"], "request");
    assert_eq!(llmnr[0]["dest_port"], 5355);
    assert_eq!(
        llmnr[1]["llmnr"],
        serde_json::json!({"type": "response", "id": 4660, "opcode": 0,
            "queries": [{"rrname": "wpad", "rrtype": "a"}],
            "answers": [{"rrname": "wpad", "a": "10.0.0.7"}]})
    );
    let alert = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 10)
        .unwrap();
    assert_eq!(alert["app_proto"], "llmnr");
    assert_eq!(alert["llmnr"]["answers"][0]["a"], "10.0.0.7");
    // Flow counters by Suricata's names (`llmnr_udp`, as its schema).
    let stats = events
        .iter()
        .find(|e| e["event_type"] == "stats")
        .expect("stats record");
    assert_eq!(stats["stats"]["app_layer"]["flow"]["mdns"], 2);
    assert_eq!(stats["stats"]["app_layer"]["flow"]["llmnr_udp"], 2);
    let _ = std::fs::remove_dir_all(&dir);
}
