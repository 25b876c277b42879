//! BitTorrent DHT end to end: a crafted capture (a get_peers query and
//! its response, an error, a malformed message on one flow; a response
//! opening a flow of its own, which is not detected) through the `vigil`
//! binary to alerts, `bittorrent_dht` records and the anomaly, as the
//! Suricata 9 peer gives on the same capture.

mod common;

use std::net::Ipv4Addr;

use vigil_applayer::bittorrent_dht::build::{error_msg, get_peers, reply};
use vigil_craft::{eth_ipv4_udp, TimedFrame};

const QID: &[u8; 20] = b"abcdefghij0123456789";
const RID: &[u8; 20] = b"mnopqrstuvwxyz123456";

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 7, 0, 1);
    let s = Ipv4Addr::new(10, 7, 0, 2);
    let other = Ipv4Addr::new(10, 7, 0, 3);
    let q = get_peers(b"aa", QID, &[0x11; 20], b"UT\x01\x02");
    let r = reply(
        b"aa",
        RID,
        ([b'N'; 20], [10, 7, 0, 9], 6881),
        ([10, 7, 0, 8], 6882),
    );
    let e = error_msg(b"bb", 201, "A Generic Error Ocurred");
    let bad = [&b"d1:ad2:id20:"[..], QID, b"e1:q4:ping1:t2:dd1:y1:xe"].concat();
    vec![
        ((1_700_000_000, 0), eth_ipv4_udp(c, 6881, s, 51413, &q)),
        ((1_700_000_001, 0), eth_ipv4_udp(s, 51413, c, 6881, &r)),
        ((1_700_000_002, 0), eth_ipv4_udp(c, 6881, s, 51413, &e)),
        ((1_700_000_003, 0), eth_ipv4_udp(c, 6881, s, 51413, &bad)),
        ((1_700_000_004, 0), eth_ipv4_udp(other, 7000, s, 51413, &r)),
    ]
}

#[test]
fn bittorrent_dht_to_alerts_and_records() {
    let common::Run { eve, events, dir } = common::run(
        "bittorrent-dht",
        &capture(),
        "alert bittorrent-dht any any -> any any (msg:\"any dht\"; sid:1;)\n\
         alert bittorrent-dht any any -> any any (msg:\"malformed\"; app-layer-event:bittorrent-dht.malformed_packet; sid:2;)\n\
         alert udp any any -> any any (msg:\"dht get_peers\"; content:\"9:get_peers\"; sid:3;)\n",
        Some(&["alert", "bittorrent-dht", "anomaly"]),
    );
    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    // sid 1: each message of the detected flow, the malformed one too;
    // the flow opened by a response is not DHT.
    assert_eq!(sids, vec![1, 1, 1, 1, 2, 3], "{eve}");
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "bittorrent_dht")
        .collect();
    assert_eq!(recs.len(), 4, "{recs:?}");
    assert_eq!(
        recs[0]["bittorrent_dht"],
        serde_json::json!({"transaction_id": "6161", "client_version": "55540102",
            "request_type": "get_peers",
            "request": {"id": "6162636465666768696a30313233343536373839",
                        "info_hash": "1111111111111111111111111111111111111111"}})
    );
    // The response is logged from its sender, without `tx_id`.
    assert_eq!(recs[1]["src_port"], 51413);
    assert!(recs[1].get("tx_id").is_none());
    assert_eq!(
        recs[1]["bittorrent_dht"]["response"]["nodes"][0],
        serde_json::json!({"id": "4e".repeat(20), "ip": "10.7.0.9", "port": 6881})
    );
    assert_eq!(
        recs[1]["bittorrent_dht"]["response"]["values"],
        serde_json::json!([{"ip": "10.7.0.8", "port": 6882}])
    );
    assert_eq!(recs[2]["bittorrent_dht"]["error"]["num"], 201);
    assert_eq!(
        recs[3]["bittorrent_dht"],
        serde_json::json!({"transaction_id": ""})
    );
    let alert = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 2)
        .unwrap();
    assert_eq!(alert["app_proto"], "bittorrent-dht");
    let anomaly = events
        .iter()
        .find(|e| e["event_type"] == "anomaly")
        .expect("anomaly record");
    assert_eq!(anomaly["anomaly"]["event"], "malformed_packet");
    assert_eq!(anomaly["anomaly"]["app_proto"], "bittorrent-dht");
    let _ = std::fs::remove_dir_all(&dir);
}
