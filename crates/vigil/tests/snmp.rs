//! SNMP end to end: a crafted capture (a v2c get and its response on port
//! 161, a v1 trap to 162, a v3 USM request) through the `vigil` binary to
//! alerts and EVE `snmp` records.

mod common;

use std::net::Ipv4Addr;

use vigil_applayer::snmp::build::{message, trap_v1, v3};
use vigil_craft::{eth_ipv4_udp, TimedFrame};

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 3, 0, 1);
    let s = Ipv4Addr::new(10, 3, 0, 2);
    let get = message(1, "private", 0, &["1.3.6.1.2.1.1.5.0"]);
    let resp = message(1, "private", 2, &["1.3.6.1.2.1.1.5.0"]);
    let trap = trap_v1("public", "1.3.6.1.4.1.9.1.1", [10, 3, 0, 1], 2);
    vec![
        ((1_700_000_000, 0), eth_ipv4_udp(c, 40000, s, 161, &get)),
        ((1_700_000_000, 100), eth_ipv4_udp(s, 161, c, 40000, &resp)),
        ((1_700_000_001, 0), eth_ipv4_udp(c, 40001, s, 162, &trap)),
        (
            (1_700_000_002, 0),
            eth_ipv4_udp(c, 40002, s, 161, &v3("admin", 3, false)),
        ),
    ]
}

#[test]
fn snmp_to_alerts_and_records() {
    let common::Run { eve, events, dir } = common::run(
        "snmp",
        &capture(),
        "alert snmp any any -> any any (msg:\"community\"; snmp.community; content:\"private\"; sid:1;)\n\
         alert snmp any any -> any any (msg:\"v2\"; snmp.version:2; sid:2;)\n\
         alert snmp any any -> any any (msg:\"get\"; snmp.pdu_type:get_request; sid:3;)\n\
         alert snmp any any -> any any (msg:\"trap oid\"; snmp.trap_oid; content:\"1.3.6.1.4.1.9\"; startswith; sid:4;)\n\
         alert snmp any any -> any any (msg:\"trap addr\"; snmp.trap_address; content:\"10.3.0.1\"; bsize:8; sid:5;)\n\
         alert snmp any any -> any any (msg:\"link down\"; snmp.trap_type:link_down; sid:6;)\n\
         alert snmp any any -> any any (msg:\"usm\"; snmp.usm; content:\"admin\"; sid:7;)\n\
         alert snmp any any -> any any (msg:\"not response\"; snmp.pdu_type:!2; sid:8;)\n",
        Some(&["alert", "snmp"]),
    );
    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    // sid 1 and 2: the get and its response; sid 3: the v2c and the v3
    // get; sid 8: the get, the trap and the v3 request.
    assert_eq!(sids, vec![1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 8, 8], "{eve}");
    let trap = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 4)
        .unwrap();
    assert_eq!(trap["app_proto"], "snmp");
    assert_eq!(trap["dest_port"], 162);
    assert_eq!(trap["snmp"]["trap_type"], "linkDown");
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "snmp")
        .collect();
    assert_eq!(recs.len(), 4, "{recs:?}");
    assert_eq!(
        recs[0]["snmp"],
        serde_json::json!({"version": 2, "pdu_type": "get_request",
            "vars": ["1.3.6.1.2.1.1.5.0"], "community": "private"})
    );
    assert_eq!(recs[1]["snmp"]["pdu_type"], "response");
    assert_eq!(recs[2]["snmp"]["trap_oid"], "1.3.6.1.4.1.9.1.1");
    assert_eq!(recs[2]["snmp"]["trap_address"], "10.3.0.1");
    assert_eq!(recs[3]["snmp"]["version"], 3);
    assert_eq!(recs[3]["snmp"]["usm"], "admin");
    // As Suricata's SNMP logger: no `tx_id` in the record.
    assert!(recs[0].get("tx_id").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}
