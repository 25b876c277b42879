//! RFB end to end: a crafted VNC handshake (3.8, VNC authentication,
//! ServerInit) in small segments on a port that is not VNC's, through the
//! `vigil` binary to alerts and the EVE `rfb` record.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

fn server_init() -> Vec<u8> {
    let mut v = vec![
        0x04, 0x00, 0x03, 0x00, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0,
    ];
    v.extend_from_slice(&11u32.to_be_bytes());
    v.extend_from_slice(b"lab-desktop");
    v
}

fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.3.0.1:42000".parse::<SocketAddr>().unwrap(),
        "10.3.0.2:5999".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(5);
    let challenge: Vec<u8> = (0u8..16).collect();
    let response: Vec<u8> = (0xf0u8..=0xff).collect();
    t.handshake()
        .server_send(b"RFB 003.008\n")
        .client_send(b"RFB 003.008\n")
        .server_send(b"\x02\x01\x02")
        .client_send(b"\x02")
        .server_send(&challenge)
        .client_send(&response)
        .server_send(b"\x00\x00\x00\x00")
        .client_send(b"\x00")
        .server_send(&server_init())
        .close();
    t.into_frames()
}

#[test]
fn rfb_to_alerts_and_record() {
    let common::Run { events, dir, .. } = common::run(
        "rfb",
        &capture(),
        "alert rfb any any -> any any (msg:\"ok\"; rfb.secresult:ok; sid:1;)\n\
         alert rfb any any -> any any (msg:\"vnc auth\"; rfb.sectype:2; sid:2;)\n\
         alert rfb any any -> any any (msg:\"name\"; rfb.name; content:\"lab-\"; startswith; sid:3;)\n\
         alert rfb any any -> any any (msg:\"never: fail\"; rfb.secresult:fail; sid:4;)\n\
         alert rfb any any -> any any (msg:\"never: none\"; rfb.sectype:1; sid:5;)\n\
         alert rfb any any -> any any (msg:\"never: event\"; app-layer-event:rfb.malformed_message; sid:6;)\n",
        None,
    );
    let alerts: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .collect();
    let mut sids: Vec<u64> = alerts
        .iter()
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2, 3]);
    for a in &alerts {
        assert_eq!(a["app_proto"], "rfb");
        assert_eq!(a["tx_id"], 0);
        let want = if a["alert"]["signature_id"] == 2 {
            "to_server"
        } else {
            "to_client"
        };
        assert_eq!(a["direction"], want);
    }
    let recs: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event_type"] == "rfb").collect();
    assert_eq!(recs.len(), 1);
    let r = &recs[0]["rfb"];
    assert_eq!(r["server_protocol_version"]["major"], "003");
    assert_eq!(r["client_protocol_version"]["minor"], "008");
    assert_eq!(r["authentication"]["security_type"], 2);
    assert_eq!(r["authentication"]["security_result"], "OK");
    assert_eq!(
        r["authentication"]["vnc"]["challenge"],
        "000102030405060708090a0b0c0d0e0f"
    );
    assert_eq!(r["screen_shared"], false);
    assert_eq!(r["framebuffer"]["width"], 1024);
    assert_eq!(r["framebuffer"]["height"], 768);
    assert_eq!(r["framebuffer"]["name"], "lab-desktop");
    assert_eq!(r["framebuffer"]["pixel_format"]["depth"], 24);
    assert!(recs[0].get("tx_id").is_none());
    assert_eq!(recs[0]["src_port"], 42000);
    let _ = std::fs::remove_dir_all(&dir);
}
