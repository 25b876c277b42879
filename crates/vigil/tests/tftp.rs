//! TFTP end to end: a read request and a write request to UDP 69 (with a
//! DATA packet from the server's ephemeral port, not parsed), through
//! the `vigil` binary to alerts and the EVE `tftp` records.

mod common;

use std::net::Ipv4Addr;

use vigil_craft::{eth_ipv4_udp, TimedFrame};

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 6, 0, 1);
    let s = Ipv4Addr::new(10, 6, 0, 2);
    vec![
        (
            (1_700_000_000, 0),
            eth_ipv4_udp(c, 3000, s, 69, b"\x00\x01pxelinux.0\x00octet\x00"),
        ),
        (
            (1_700_000_000, 100),
            eth_ipv4_udp(s, 40000, c, 3000, b"\x00\x03\x00\x01boot image"),
        ),
        (
            (1_700_000_001, 0),
            eth_ipv4_udp(c, 3001, s, 69, b"\x00\x02running-config\x00netascii\x00"),
        ),
    ]
}

const RULES: &str = "\
alert tftp any any -> any any (msg:\"tftp\"; sid:1;)\n\
alert tftp any any -> any any (msg:\"pxe\"; content:\"pxelinux\"; sid:2;)\n\
alert tftp any any -> any any (msg:\"config\"; content:\"config\"; sid:3;)\n\
alert tftp any any -> any any (msg:\"never: data\"; content:\"boot image\"; sid:4;)\n";

#[test]
fn tftp_to_alerts_and_records() {
    let types = ["alert", "tftp"];
    let common::Run { events, dir, .. } = common::run("tftp", &capture(), RULES, Some(&types));
    let mut got: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            assert_eq!(e["app_proto"], "tftp");
            e["alert"]["signature_id"].as_u64().unwrap()
        })
        .collect();
    got.sort();
    // The Suricata 9 peer's alerts on the same capture: both requests,
    // the content of each; the DATA packet is on a flow of its own.
    assert_eq!(got, [1, 1, 2, 3]);
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "tftp")
        .map(|e| &e["tftp"])
        .collect();
    // The peer's records.
    assert_eq!(
        recs,
        [
            &serde_json::json!({"packet": "read", "file": "pxelinux.0", "mode": "octet"}),
            &serde_json::json!({"packet": "write", "file": "running-config", "mode": "netascii"})
        ]
    );
    if std::env::var_os("VIGIL_E2E_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
