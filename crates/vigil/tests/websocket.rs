//! WebSocket end to end: a crafted HTTP/1 upgrade (`101`) followed by
//! frames both ways in small segments (masked, unmasked, a fragmented
//! message, a close), through the `vigil` binary to alerts, the `http`
//! record of the upgrade and a `websocket` record per frame.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

/// A frame: the first byte, an optional masking key, the payload (masked
/// here when there is a key).
fn frame(first: u8, key: Option<u32>, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mut v = vec![first, payload.len() as u8];
    let mut p = payload.to_vec();
    if let Some(k) = key {
        v[1] |= 0x80;
        v.extend_from_slice(&k.to_be_bytes());
        let kb = k.to_be_bytes();
        for (i, c) in p.iter_mut().enumerate() {
            *c ^= kb[i % 4];
        }
    }
    v.extend_from_slice(&p);
    v
}

const KEY: u32 = 0x3a7e_c15d;

fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.4.0.1:43000".parse::<SocketAddr>().unwrap(),
        "10.4.0.2:8080".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(7);
    t.handshake()
        .client_send(
            b"GET /chat HTTP/1.1\r\nHost: ws.example\r\nUpgrade: websocket\r\n\
              Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
              Sec-WebSocket-Version: 13\r\n\r\n",
        )
        .server_send(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
              Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
        )
        .client_send(&frame(0x81, Some(KEY), b"hello ws server"))
        .server_send(&frame(0x81, None, b"welcome"))
        .client_send(&frame(0x02, Some(KEY), b"fragmented "))
        .client_send(&frame(0x80, Some(KEY ^ 0xffff), b"message"))
        .server_send(&frame(0x88, None, b"\x03\xe8"))
        .close();
    t.into_frames()
}

#[test]
fn websocket_to_alerts_and_records() {
    let rules = format!(
        "alert websocket any any -> any any (msg:\"payload\"; websocket.payload; content:\"hello ws\"; sid:1;)\n\
         alert websocket any any -> any any (msg:\"text\"; websocket.opcode:text; sid:2;)\n\
         alert websocket any any -> any any (msg:\"mask\"; websocket.mask:{KEY}; sid:3;)\n\
         alert websocket any any -> any any (msg:\"not fin\"; websocket.flags:!fin; sid:4;)\n\
         alert http any any -> any any (msg:\"upgrade\"; http.uri; content:\"/chat\"; sid:5;)\n\
         alert websocket any any -> any any (msg:\"reassembled\"; websocket.payload; content:\"fragmented message\"; sid:6;)\n\
         alert websocket any any -> any any (msg:\"close\"; websocket.opcode:close; flow:to_client; sid:7;)\n\
         alert websocket any any -> any any (msg:\"never: ping\"; websocket.opcode:ping; sid:8;)\n\
         alert websocket any any -> any any (msg:\"never: masked bytes\"; websocket.payload; content:\"|3a 7e|\"; startswith; sid:9;)\n\
         alert websocket any any -> any any (msg:\"never: event\"; app-layer-event:websocket.skip_end_of_payload; sid:10;)\n"
    );
    let common::Run { events, dir, .. } = common::run("websocket", &capture(), &rules, None);
    let alerts: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .collect();
    let mut sids: Vec<u64> = alerts
        .iter()
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2, 2, 3, 3, 4, 5, 6, 7], "{alerts:#?}");
    for a in &alerts {
        let sid = a["alert"]["signature_id"].as_u64().unwrap();
        let want = if sid == 5 { "http" } else { "websocket" };
        assert_eq!(a["app_proto"], want, "sid {sid}");
        if sid == 1 || sid == 3 || sid == 6 {
            assert_eq!(a["direction"], "to_server", "sid {sid}");
        }
        if sid == 7 {
            assert_eq!(a["direction"], "to_client");
        }
    }
    // The upgrade is logged as HTTP.
    let http: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "http")
        .collect();
    assert_eq!(http.len(), 1);
    assert_eq!(http[0]["http"]["status"], 101);
    // One record per frame, in the order they were sent.
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "websocket")
        .map(|e| &e["websocket"])
        .collect();
    let ops: Vec<&str> = recs.iter().map(|r| r["opcode"].as_str().unwrap()).collect();
    assert_eq!(
        ops,
        vec!["text", "text", "binary", "continuation", "close"],
        "{recs:#?}"
    );
    assert_eq!(recs[0]["mask"], KEY);
    assert_eq!(recs[0]["fin"], true);
    assert!(recs[1].get("mask").is_none());
    assert_eq!(recs[2]["fin"], false);
    if std::env::var_os("VIGIL_KEEP_E2E").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
