//! QUIC end to end: a crafted capture (an IETF QUIC v1 client Initial
//! with a ClientHello split over two packets and the server's Initial
//! with its ServerHello, both sealed with the RFC 9001 initial keys of
//! the connection ID of RFC 9001 Appendix A; a gQUIC Q043 CHLO on
//! another flow) through the `vigil` binary to alerts and EVE `quic`
//! records.

mod common;

use std::net::Ipv4Addr;

use vigil_applayer::quic::build::{client_hello, crypto, gquic_chlo, server_hello};
use vigil_applayer::quic::{seal_initial, V1};
use vigil_applayer::Direction;
use vigil_craft::{eth_ipv4_udp, TimedFrame};

const ODCID: [u8; 8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];

fn padded(frames: Vec<u8>) -> Vec<u8> {
    let mut f = frames;
    f.resize(f.len().max(1150), 0);
    f
}

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 5, 0, 1);
    let s = Ipv4Addr::new(10, 5, 0, 2);
    let scid = [0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5];
    let ch = client_hello("www.example.com");
    let (a, b) = ch.split_at(60);
    let seal = |dir, dcid: &[u8], scid: &[u8], pn, frames| {
        seal_initial(V1, &ODCID, dir, dcid, scid, pn, &padded(frames)).unwrap()
    };
    let c1 = seal(Direction::ToServer, &ODCID, &[], 0, crypto(0, a));
    let c2 = seal(Direction::ToServer, &ODCID, &[], 1, crypto(60, b));
    let s1 = seal(
        Direction::ToClient,
        &[],
        &scid,
        0,
        crypto(0, &server_hello()),
    );
    vec![
        ((1_700_000_000, 0), eth_ipv4_udp(c, 50000, s, 443, &c1)),
        ((1_700_000_000, 1000), eth_ipv4_udp(c, 50000, s, 443, &c2)),
        ((1_700_000_000, 2000), eth_ipv4_udp(s, 443, c, 50000, &s1)),
        // A short-header packet: no record.
        (
            (1_700_000_000, 3000),
            eth_ipv4_udp(c, 50000, s, 443, &[0x41, 1, 2, 3, 4, 5, 6]),
        ),
        (
            (1_700_000_001, 0),
            eth_ipv4_udp(c, 50001, s, 443, &gquic_chlo()),
        ),
    ]
}

#[test]
fn quic_initials_to_alerts_and_records() {
    let common::Run { eve, events, dir } = common::run(
        "quic",
        &capture(),
        "alert quic any any -> any any (msg:\"sni\"; quic.sni; content:\"example.com\"; endswith; sid:1;)\n\
         alert quic any any -> any any (msg:\"version\"; quic.version; content:\"|00 00 00 01|\"; sid:2;)\n\
         alert quic any any -> any any (msg:\"ja3s\"; ja3s.string; content:\"771,4865,43-51\"; sid:3;)\n\
         alert quic any any -> any any (msg:\"ja4\"; ja4.hash; content:\"q13d0307h3_\"; startswith; sid:4;)\n\
         alert quic any any -> any any (msg:\"gquic sni\"; quic.sni; content:\"www.example.org\"; sid:5;)\n\
         alert quic any any -> any any (msg:\"cyu\"; quic.cyu.hash; content:\"e030dea1f2eea44ac7db5fe4de792acd\"; sid:6;)\n\
         alert quic any any -> any any (msg:\"never: ja3 deadbeef\"; ja3.hash; content:\"deadbeef\"; sid:7;)\n\
         alert quic any any -> any any (msg:\"never: event\"; app-layer-event:quic.failed_decrypt; sid:8;)\n\
         alert tls any any -> any any (msg:\"never: tls on quic\"; ja3s.string; content:\"771\"; sid:9;)\n",
        Some(&["alert", "quic"]),
    );
    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    // sid 2: the three IETF Initial packets.
    assert_eq!(sids, vec![1, 2, 2, 2, 3, 4, 5, 6], "{eve}");
    let ja3s = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 3)
        .unwrap();
    assert_eq!(ja3s["app_proto"], "quic");
    assert_eq!(ja3s["quic"]["ja3s"]["string"], "771,4865,43-51");
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "quic")
        .collect();
    assert_eq!(recs.len(), 4, "{recs:?}");
    assert!(recs.iter().all(|r| r.get("tx_id").is_none()));
    // The first client packet holds half the hello: version only.
    assert_eq!(recs[0]["quic"], serde_json::json!({"version": "1"}));
    let hello = recs[1];
    assert_eq!(hello["quic"]["sni"], "www.example.com");
    assert_eq!(hello["quic"]["extensions"][1]["values"][0], "h3");
    assert!(hello["quic"]["ja3"]["hash"].as_str().unwrap().len() == 32);
    // The server's packet is logged from the server.
    assert_eq!(recs[2]["src_port"], 443);
    assert_eq!(recs[2]["quic"]["ja3s"]["string"], "771,4865,43-51");
    assert!(recs[2]["quic"].get("ja4").is_none());
    let g = recs[3];
    assert_eq!(g["quic"]["version"], "Q043");
    assert_eq!(
        g["quic"]["cyu"][0]["string"],
        "43,PAD-SNI-VER-CCS-PDMD-ICSL-MIDS-CFCW-SFCW"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
