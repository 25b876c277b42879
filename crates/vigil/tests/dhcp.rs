//! DHCP end to end: a crafted request and ACK over UDP 68 -> 67 through
//! the `vigil` binary: each datagram is a transaction inspected and logged
//! in its own direction (Suricata issue 8621), the lease times match
//! their keywords, the `dhcp` records carry Suricata's fields.

mod common;

use std::net::Ipv4Addr;

use vigil_craft::{eth_ipv4_udp, TimedFrame};

fn message(op: u8, yiaddr: [u8; 4], opts: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 240];
    b[0] = op;
    b[1] = 1;
    b[2] = 6;
    b[4..8].copy_from_slice(&0xdead_beefu32.to_be_bytes());
    b[16..20].copy_from_slice(&yiaddr);
    b[28..34].copy_from_slice(&[2, 0, 0, 0, 0, 7]);
    b[236..240].copy_from_slice(&[0x63, 0x82, 0x53, 0x63]);
    b.extend_from_slice(opts);
    b
}

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 4, 0, 7);
    let s = Ipv4Addr::new(10, 4, 0, 1);
    let req = message(1, [0; 4], b"\x35\x01\x03\x0c\x05host7\x3c\x04ACME\xff");
    let ack = message(
        2,
        [10, 4, 0, 7],
        b"\x35\x01\x05\x33\x04\x00\x00\x1c\x20\x3a\x04\x00\x00\x0e\x10\x3b\x04\x00\x00\x18\x9c\x03\x04\x0a\x04\x00\x01\xff",
    );
    vec![
        ((1_700_000_000, 0), eth_ipv4_udp(c, 68, s, 67, &req)),
        ((1_700_000_000, 1000), eth_ipv4_udp(s, 67, c, 68, &ack)),
    ]
}

#[test]
fn dhcp_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run(
        "dhcp",
        &capture(),
        "alert dhcp any any -> any any (msg:\"any dhcp\"; sid:1;)\n\
         alert dhcp any any -> any any (msg:\"to server\"; flow:to_server; sid:2;)\n\
         alert dhcp any any -> any any (msg:\"lease\"; dhcp.leasetime:7200; dhcp.renewal_time:<4000; dhcp.rebinding_time:6300; sid:3;)\n\
         alert dhcp any any -> any any (msg:\"vendor\"; dhcp.vendor_class_id; content:\"ACME\"; sid:4;)\n\
         alert dhcp any any -> any any (msg:\"never: lease\"; dhcp.leasetime:>7200; sid:5;)\n",
        None,
    );
    let alerts: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .collect();
    let got: Vec<(u64, u64, &str)> = alerts
        .iter()
        .map(|a| {
            (
                a["alert"]["signature_id"].as_u64().unwrap(),
                a["pcap_cnt"].as_u64().unwrap(),
                a["dhcp"]["type"].as_str().unwrap(),
            )
        })
        .collect();
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            (1, 1, "request"),
            (1, 2, "reply"),
            (2, 1, "request"),
            (3, 2, "reply"),
            (4, 1, "request"),
        ],
        "{got:?}"
    );
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "dhcp")
        .collect();
    assert_eq!(recs.len(), 2);
    let (req, ack) = (&recs[0], &recs[1]);
    assert_eq!(req["dhcp"]["hostname"], "host7");
    assert_eq!(req["dhcp"]["vendor_class_identifier"], "ACME");
    assert_eq!(req["dhcp"]["client_mac"], "02:00:00:00:00:07");
    assert_eq!(req["src_port"], 68);
    // The reply is logged from its sender.
    assert_eq!(ack["src_port"], 67);
    assert_eq!(ack["dhcp"]["dhcp_type"], "ack");
    assert_eq!(ack["dhcp"]["id"], 0xdead_beefu32);
    assert_eq!(ack["dhcp"]["assigned_ip"], "10.4.0.7");
    assert_eq!(ack["dhcp"]["lease_time"], 7200);
    assert_eq!(ack["dhcp"]["routers"], serde_json::json!(["10.4.0.1"]));
    assert!(ack.get("tx_id").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}
