//! IKE end to end: a crafted capture (an IKEv1 main-mode exchange on
//! port 500, an IKEv2 IKE_SA_INIT behind the NAT-traversal marker on
//! 4500) through the `vigil` binary to alerts and EVE `ike` records.

mod common;

use std::net::Ipv4Addr;

use vigil_applayer::ike::build::{v1_main_mode, v2_sa_init};
use vigil_craft::{eth_ipv4_udp, TimedFrame};

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 4, 0, 1);
    let s = Ipv4Addr::new(10, 4, 0, 2);
    let mut frames: Vec<TimedFrame> = Vec::new();
    for (i, m) in v1_main_mode().iter().enumerate() {
        let (src, dst) = if i % 2 == 0 { (c, s) } else { (s, c) };
        frames.push((
            (1_700_000_000, i as u32 * 1000),
            eth_ipv4_udp(src, 500, dst, 500, m),
        ));
    }
    let mut nat = vec![0, 0, 0, 0];
    // AES-CBC, PRF HMAC-MD5 (weak), integrity SHA2-256, DH 14.
    nat.extend(v2_sa_init(0x08, &[(1, 12), (2, 1), (3, 12), (4, 14)]));
    frames.push(((1_700_000_001, 0), eth_ipv4_udp(c, 4500, s, 4500, &nat)));
    frames
}

#[test]
fn ike_v1_and_v2_to_alerts_and_records() {
    let common::Run { eve, events, dir } = common::run(
        "ike",
        &capture(),
        "alert ike any any -> any any (msg:\"init spi\"; ike.init_spi; content:\"e47a591f\"; startswith; sid:1;)\n\
         alert ike any any -> any any (msg:\"resp spi\"; ike.resp_spi; dotprefix; content:\".a00b\"; sid:2;)\n\
         alert ike any any -> any any (msg:\"vendor\"; ike.vendor; content:\"4a131c81\"; sid:3;)\n\
         alert ike any any -> any any (msg:\"hash\"; ike.chosen_sa_attribute:alg_hash=2; sid:4;)\n\
         alert ike any any -> any any (msg:\"ke len\"; ike.key_exchange_payload_length:128; sid:5;)\n\
         alert ike any any -> any any (msg:\"nonce\"; flow:to_client; ike.nonce_payload; content:\"|15 15 15|\"; sid:6;)\n\
         alert ike any any -> any any (msg:\"v2 sa init\"; ike.exchtype:34; sid:7;)\n\
         alert ike any any -> any any (msg:\"weak prf\"; app-layer-event:ike.weak_crypto_prf; sid:8;)\n\
         alert ike any any -> any any (msg:\"main mode\"; ike.exchtype:2; sid:9;)\n",
        Some(&["alert", "ike"]),
    );
    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    // sid 1: the two initiator messages; sid 2: the two responder
    // messages; sid 5: both key exchanges; sid 9: the four v1 messages.
    assert_eq!(
        sids,
        vec![1, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 9, 9, 9, 9],
        "{eve}"
    );
    let hash = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 4)
        .unwrap();
    assert_eq!(hash["app_proto"], "ike");
    assert_eq!(hash["direction"], "to_client");
    assert_eq!(hash["ike"]["attributes"][2]["value"], "HashSha");
    let recs: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event_type"] == "ike").collect();
    assert_eq!(recs.len(), 5, "{recs:?}");
    let last_v1 = recs[3];
    assert_eq!(
        last_v1["ike"]["ikev1"]["server"]["nonce_payload_length"],
        24
    );
    assert_eq!(
        last_v1["ike"]["ikev1"]["client"]["key_exchange_payload_length"],
        128
    );
    assert!(last_v1.get("tx_id").is_none());
    let v2 = recs[4];
    assert_eq!(v2["dest_port"], 4500);
    assert_eq!(v2["ike"]["version_major"], 2);
    assert_eq!(v2["ike"]["role"], "initiator");
    let _ = std::fs::remove_dir_all(&dir);
}
