//! NTP end to end: a crafted capture (a v4 client request and the
//! server's reply on port 123, a v3 symmetric-active message, a
//! truncated datagram) through the `vigil` binary to alerts and EVE
//! `ntp` records, as the Suricata 9 peer gives on the same capture.

mod common;

use std::net::Ipv4Addr;

use vigil_applayer::ntp::build::message;
use vigil_craft::{eth_ipv4_udp, TimedFrame};

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 5, 0, 1);
    let s = Ipv4Addr::new(10, 5, 0, 2);
    let req = message(4, 3, 0, [0; 4], 0xe93c_1f2a);
    let reply = message(4, 4, 2, *b"RATE", 0xe93c_1f2b);
    let sym = message(3, 1, 3, [10, 0, 0, 1], 0xe93c_1f2c);
    vec![
        ((1_700_000_000, 0), eth_ipv4_udp(c, 40000, s, 123, &req)),
        ((1_700_000_001, 0), eth_ipv4_udp(s, 123, c, 40000, &reply)),
        ((1_700_000_002, 0), eth_ipv4_udp(c, 40001, s, 123, &sym)),
        (
            (1_700_000_003, 0),
            eth_ipv4_udp(c, 40000, s, 123, &req[..3]),
        ),
    ]
}

#[test]
fn ntp_to_alerts_and_records() {
    let common::Run { eve, events, dir } = common::run(
        "ntp",
        &capture(),
        "alert ntp any any -> any any (msg:\"client\"; ntp.mode:client; sid:1;)\n\
         alert ntp any any -> any any (msg:\"server\"; ntp.mode:server; sid:2;)\n\
         alert ntp any any -> any any (msg:\"stratum 2\"; ntp.stratum:2; sid:3;)\n\
         alert ntp any any -> any any (msg:\"refid RATE\"; ntp.reference_id; content:\"RATE\"; sid:4;)\n\
         alert ntp any any -> any any (msg:\"v3\"; ntp.version:3; sid:5;)\n\
         alert ntp any any -> any any (msg:\"refid ip\"; ntp.reference_id; content:\"|0a 00 00 01|\"; bsize:4; sid:6;)\n\
         alert ntp any any -> any any (msg:\"any ntp\"; sid:7;)\n\
         alert ntp any any -> any any (msg:\"not server\"; ntp.mode:!server; ntp.stratum:<16; sid:8;)\n",
        Some(&["alert", "ntp"]),
    );
    let alerts: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                e["src_port"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sids: Vec<u64> = alerts.iter().map(|a| a.0).collect();
    sids.sort();
    // sid 7: once per message, in its own direction (the truncated
    // datagram is no transaction); sid 8: the request and the v3 message.
    assert_eq!(sids, vec![1, 2, 3, 4, 5, 6, 7, 7, 7, 8, 8], "{eve}");
    assert!(alerts.contains(&(2, 123)), "{alerts:?}");
    let server = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 2)
        .unwrap();
    assert_eq!(server["app_proto"], "ntp");
    assert_eq!(
        server["ntp"],
        serde_json::json!({"version": 4, "mode": 4, "stratum": 2, "reference_id": "52:41:54:45"})
    );
    let recs: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event_type"] == "ntp").collect();
    assert_eq!(recs.len(), 3, "{recs:?}");
    assert_eq!(
        recs[0]["ntp"],
        serde_json::json!({"version": 4, "mode": 3, "stratum": 0, "reference_id": "00:00:00:00"})
    );
    // The reply is logged from its sender, without `tx_id`, as Suricata.
    assert_eq!(recs[1]["src_port"], 123);
    assert_eq!(recs[1]["dest_port"], 40000);
    assert!(recs[1].get("tx_id").is_none());
    assert_eq!(recs[2]["ntp"]["reference_id"], "0a:00:00:01");
    assert_eq!(recs[2]["ntp"]["version"], 3);
    let _ = std::fs::remove_dir_all(&dir);
}
