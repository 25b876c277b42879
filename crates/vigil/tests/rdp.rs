//! RDP end to end: crafted connection setups through the `vigil` binary
//! to alerts and EVE `rdp` records: standard RDP security (X.224 request
//! with cookie, confirm with flags, MCS Connect Initial with client core
//! data and channels, Connect Response), TLS negotiated (the flow stays
//! `rdp`, the server's certificate serials are logged, as in Suricata 9),
//! and a negotiation failure. Same records as the Suricata 9 peer on this capture.

mod common;

use std::net::SocketAddr;

use serde_json::json;
use vigil_craft::{TcpSession, TimedFrame};

fn tpkt(b: &[u8]) -> Vec<u8> {
    let mut v = vec![3, 0];
    v.extend_from_slice(&((b.len() + 4) as u16).to_be_bytes());
    v.extend_from_slice(b);
    v
}

fn x224(code: u8, var: &[u8]) -> Vec<u8> {
    let mut body = vec![code, 0, 0, 0x12, 0x34, 0];
    body.extend_from_slice(var);
    let mut v = vec![body.len() as u8];
    v.extend_from_slice(&body);
    tpkt(&v)
}

fn ber(tag: &[u8], b: &[u8]) -> Vec<u8> {
    let mut v = tag.to_vec();
    if b.len() < 128 {
        v.push(b.len() as u8);
    } else {
        v.push(0x82);
        v.extend_from_slice(&(b.len() as u16).to_be_bytes());
    }
    v.extend_from_slice(b);
    v
}

fn utf16z(s: &str, n: usize) -> Vec<u8> {
    let mut v: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    v.resize(n, 0);
    v
}

fn connect_initial() -> Vec<u8> {
    let mut core = Vec::new();
    core.extend_from_slice(&0x0008_0004u32.to_le_bytes());
    for v in [1280u16, 1024, 0xca01, 0xaa03] {
        core.extend_from_slice(&v.to_le_bytes());
    }
    core.extend_from_slice(&0x409u32.to_le_bytes());
    core.extend_from_slice(&7601u32.to_le_bytes());
    core.extend_from_slice(&utf16z("WORKSTATION", 32));
    for v in [4u32, 0, 12] {
        core.extend_from_slice(&v.to_le_bytes());
    }
    core.extend_from_slice(&[0; 64]);
    for v in [0xca01u16, 1] {
        core.extend_from_slice(&v.to_le_bytes());
    }
    core.extend_from_slice(&0u32.to_le_bytes());
    for v in [0x18u16, 0x0f, 0x0003] {
        core.extend_from_slice(&v.to_le_bytes());
    }
    core.extend_from_slice(&utf16z("00000-abc", 64));
    core.extend_from_slice(&[6, 0, 0, 0, 0, 0]);
    let block = |t: u16, b: &[u8]| {
        let mut v = t.to_le_bytes().to_vec();
        v.extend_from_slice(&((b.len() + 4) as u16).to_le_bytes());
        v.extend_from_slice(b);
        v
    };
    let mut net = 3u32.to_le_bytes().to_vec();
    for c in [&b"rdpdr"[..], b"rdpsnd", b"cliprdr"] {
        let mut name = c.to_vec();
        name.resize(8, 0);
        net.extend_from_slice(&name);
        net.extend_from_slice(&0x8080_0000u32.to_le_bytes());
    }
    let mut ud = block(0xc001, &core);
    ud.extend(block(0xc002, &[0; 8]));
    ud.extend(block(0xc003, &net));
    let mut ccr = b"\x00\x08\x00\x10\x00\x01\xc0\x00Duca".to_vec();
    ccr.extend_from_slice(&(0x8000 | ud.len() as u16).to_be_bytes());
    ccr.extend(ud);
    let mut gcc = b"\x00\x05\x00\x14\x7c\x00\x01".to_vec();
    gcc.extend_from_slice(&(0x8000 | ccr.len() as u16).to_be_bytes());
    gcc.extend(ccr);
    let ints: Vec<u8> = [34u8, 2, 0, 1, 0, 1, 0xff, 2]
        .iter()
        .flat_map(|&v| ber(b"\x02", &[v]))
        .collect();
    let params = ber(b"\x30", &ints);
    let mut ci = ber(b"\x04", b"\x01");
    ci.extend(ber(b"\x04", b"\x01"));
    ci.extend(ber(b"\x01", b"\xff"));
    for _ in 0..3 {
        ci.extend_from_slice(&params);
    }
    ci.extend(ber(b"\x04", &gcc));
    let mut p = b"\x02\xf0\x80".to_vec();
    p.extend(ber(b"\x7f\x65", &ci));
    tpkt(&p)
}

fn session(port: u16, t0: i64) -> TcpSession {
    let mut t = TcpSession::new(
        format!("10.6.0.1:{port}").parse::<SocketAddr>().unwrap(),
        "10.6.0.2:3389".parse::<SocketAddr>().unwrap(),
    )
    .start_at((t0, 0))
    .with_mss(100);
    t.handshake();
    t
}

fn capture() -> Vec<TimedFrame> {
    let mut s = session(50000, 1_700_000_000);
    s.client_send(&x224(
        0xe0,
        b"Cookie: mstshash=alice\r\n\x01\x00\x08\x00\x00\x00\x00\x00",
    ))
    .server_send(&x224(0xd0, b"\x02\x1f\x08\x00\x00\x00\x00\x00"))
    .client_send(&connect_initial())
    .server_send(&tpkt(b"\x02\xf0\x80\x7f\x66\x03\x0a\x01\x00"))
    .client_send(&tpkt(b"\x02\xf0\x80\x04\x01\x00\x01\x00"))
    .close();
    // TLS negotiated: the client's hello, the server's handshake, the
    // client's key exchange and encrypted finish.
    let hello = include_bytes!("../../applayer/tests/data/tls12_client.bin");
    let first = 5 + usize::from(u16::from_be_bytes([hello[3], hello[4]]));
    let mut t = session(50001, 1_700_000_100);
    t.client_send(&x224(
        0xe0,
        b"Cookie: mstshash=bob\r\n\x01\x08\x08\x00\x03\x00\x00\x00",
    ))
    .server_send(&x224(0xd0, b"\x02\x00\x08\x00\x01\x00\x00\x00"))
    .client_send(&hello[..first])
    .server_send(include_bytes!("../../applayer/tests/data/tls12_server.bin"))
    .client_send(&hello[first..])
    .close();
    let mut f = session(50002, 1_700_000_200);
    f.client_send(&x224(0xe0, b"\x01\x00\x08\x00\x00\x00\x00\x00"))
        .server_send(&x224(0xd0, b"\x03\x00\x08\x00\x02\x00\x00\x00"))
        .close();
    let mut frames = s.into_frames();
    frames.extend(t.into_frames());
    frames.extend(f.into_frames());
    frames
}

const RULES: &str = "\
alert rdp any any -> any any (msg:\"rdp\"; flow:to_server; sid:1;)\n\
alert tcp any any -> any any (msg:\"proto rdp\"; app-layer-protocol:rdp; flow:to_client; sid:2;)\n\
alert tls any any -> any any (msg:\"never: tls\"; tls.sni; content:\"test.vigil.example\"; sid:3;)\n";

#[test]
fn rdp_to_alerts_and_records() {
    let common::Run { events, dir, .. } =
        common::run("rdp", &capture(), RULES, Some(&["alert", "rdp", "tls"]));
    let mut sids = common::alert_sids(&events);
    sids.dedup();
    assert_eq!(sids, [1, 2]);
    // One app-layer-protocol alert per flow, all flows rdp.
    let proto: Vec<_> = events
        .iter()
        .filter(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == 2)
        .collect();
    assert_eq!(proto.len(), 3);
    assert!(events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .all(|e| e["app_proto"] == "rdp"));
    assert!(!events.iter().any(|e| e["event_type"] == "tls"));
    let recs: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event_type"] == "rdp").collect();
    assert!(recs.iter().all(|r| r.get("tx_id").is_none()));
    let rdp: Vec<&serde_json::Value> = recs.iter().map(|r| &r["rdp"]).collect();
    assert_eq!(
        rdp,
        [
            &json!({"tx_id": 1, "event_type": "initial_request", "cookie": "alice"}),
            &json!({"tx_id": 2, "event_type": "initial_response",
                "server_supports": ["extended_client_data", "dynvc_gfx", "restricted_admin",
                    "redirected_authentication"], "protocol": "rdp"}),
            &json!({"tx_id": 3, "event_type": "connect_request",
                "client": {"version": "v5", "desktop_width": 1280, "desktop_height": 1024,
                    "color_depth": 24, "keyboard_layout": "en-US", "build": "Windows 7 SP1",
                    "client_name": "WORKSTATION", "keyboard_type": "enhanced",
                    "function_keys": 12, "product_id": 1,
                    "capabilities": ["support_errinfo_pdf", "want_32bpp_session"],
                    "id": "00000-abc", "connection_hint": "lan"},
                "channels": ["rdpdr", "rdpsnd", "cliprdr"]}),
            &json!({"tx_id": 4, "event_type": "connect_response"}),
            &json!({"tx_id": 1, "event_type": "initial_request", "cookie": "bob",
                "flags": ["correlation_info_present"]}),
            &json!({"tx_id": 2, "event_type": "initial_response", "protocol": "ssl"}),
            &json!({"tx_id": 3, "event_type": "tls_handshake", "x509_serials": ["c0ffee1234"]}),
            &json!({"tx_id": 1, "event_type": "initial_request"}),
            &json!({"tx_id": 2, "event_type": "initial_response", "error_code": 2,
                "reason": "ssl not allowed by server"}),
        ]
    );
    if std::env::var_os("VIGIL_KEEP_E2E").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
