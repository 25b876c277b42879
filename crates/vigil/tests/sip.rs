//! SIP end to end: a crafted capture (SIP over UDP and over TCP, a
//! message split across segments, compact headers, an SDP body) through
//! the `vigil` binary to alerts and EVE `sip` records.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use vigil_craft::{eth_ipv4_udp, TcpSession, TimedFrame};

const INVITE: &[u8] = b"INVITE sip:bob@example.com SIP/2.0\r\n\
v: SIP/2.0/TCP 10.1.0.1:5060\r\n\
f: <sip:alice@example.com>;tag=77\r\n\
t: <sip:bob@example.com>\r\n\
User-Agent: CraftPhone/2\r\n\
c: application/sdp\r\n\
l: 70\r\n\
\r\n\
v=0\r\no=alice 5 5 IN IP4 10.1.0.1\r\ns=talk\r\nt=0 0\r\nm=audio 9 RTP/AVP 0\r\n";

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 1, 0, 1);
    let s = Ipv4Addr::new(10, 1, 0, 2);
    let register = b"REGISTER sip:example.com SIP/2.0\r\nFrom: <sip:alice@example.com>\r\nTo: <sip:alice@example.com>\r\nContent-Length: 0\r\n\r\n";
    let ok = b"SIP/2.0 200 OK\r\nFrom: <sip:alice@example.com>\r\nContent-Length: 0\r\n\r\n";
    let mut frames: Vec<TimedFrame> = vec![
        ((1_700_000_000, 0), eth_ipv4_udp(c, 5060, s, 5060, register)),
        ((1_700_000_000, 500), eth_ipv4_udp(s, 5060, c, 5060, ok)),
    ];
    // Over TCP on a port that is not SIP's, the INVITE in small segments.
    let mut t = TcpSession::new(
        "10.1.0.1:40000".parse::<SocketAddr>().unwrap(),
        "10.1.0.2:8000".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_001, 0))
    .with_mss(40);
    t.handshake()
        .client_send(INVITE)
        .server_send(b"SIP/2.0 100 Trying\r\nContent-Length: 0\r\n\r\n")
        .close();
    frames.extend(t.into_frames());
    frames
}

#[test]
fn sip_over_udp_and_tcp_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run(
        "sip",
        &capture(),
        "alert sip any any -> any any (msg:\"register\"; flow:to_server; sip.method; content:\"REGISTER\"; sid:1;)\n\
         alert sip any any -> any any (msg:\"from compact\"; flow:to_server; sip.from; content:\"alice\"; sid:2;)\n\
         alert sip any any -> any any (msg:\"trying\"; flow:to_client; sip.stat_code; content:\"100\"; sid:3;)\n\
         alert sip any any -> any any (msg:\"via tcp\"; sip.via; content:\"SIP/2.0/TCP\"; sid:4;)\n\
         alert tcp any any -> any any (msg:\"proto\"; app-layer-protocol:sip; flow:to_server; content:\"INVITE\"; sid:5;)\n\
         alert sip any any -> any any (msg:\"never\"; flow:to_client; sip.method; content:\"REGISTER\"; sid:6;)\n",
        None,
    );

    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    // sid 2: the REGISTER's From and the INVITE's `f:`.
    assert_eq!(sids, vec![1, 2, 2, 3, 4, 5]);
    for a in events.iter().filter(|e| e["event_type"] == "alert") {
        assert_eq!(a["app_proto"], "sip");
    }
    let reg = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 1)
        .unwrap();
    assert_eq!(reg["proto"], "UDP");
    assert_eq!(reg["tx_id"], 0);
    assert_eq!(reg["sip"]["method"], "REGISTER");
    let trying = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 3)
        .unwrap();
    assert_eq!(trying["tx_id"], 1);
    assert_eq!(trying["sip"]["response_line"], "SIP/2.0 100 Trying");

    let recs: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event_type"] == "sip").collect();
    assert_eq!(recs.len(), 4, "{recs:?}");
    let invite = recs
        .iter()
        .find(|r| r["sip"]["method"] == "INVITE")
        .expect("INVITE record");
    assert_eq!(invite["proto"], "TCP");
    assert_eq!(invite["sip"]["uri"], "sip:bob@example.com");
    assert_eq!(invite["sip"]["version"], "SIP/2.0");
    assert_eq!(
        invite["sip"]["request_line"],
        "INVITE sip:bob@example.com SIP/2.0"
    );
    assert_eq!(invite["sip"]["sdp"]["origin"], "alice 5 5 IN IP4 10.1.0.1");
    assert_eq!(
        invite["sip"]["sdp"]["media_descriptions"][0]["media"],
        "audio 9 RTP/AVP 0"
    );
    // A response is logged from its sender, the server.
    let trying_rec = recs
        .iter()
        .find(|r| r["sip"]["code"] == "100")
        .expect("100 record");
    assert_eq!(trying_rec["src_port"], 8000);
    assert_eq!(trying_rec["dest_port"], 40000);
    assert_eq!(invite["src_port"], 40000);
    // As Suricata's SIP logger: no `tx_id` in the record.
    assert!(invite.get("tx_id").is_none());
    let ok = recs
        .iter()
        .find(|r| r["sip"]["code"] == "200")
        .expect("200 record");
    assert_eq!(ok["sip"]["reason"], "OK");
    assert_eq!(ok["src_port"], 5060);
    // Flows counted by transport, as Suricata's `sip_udp` / `sip_tcp`.
    let stats = events
        .iter()
        .rev()
        .find(|e| e["event_type"] == "stats")
        .expect("stats record");
    assert_eq!(stats["stats"]["app_layer"]["flow"]["sip_udp"], 1);
    assert_eq!(stats["stats"]["app_layer"]["flow"]["sip_tcp"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}
