//! IMAP end to end: Suricata 9 detects IMAP and parses nothing
//! (`detection-only`). A crafted session on port 143 and one on another
//! port (detection is by content) through the `vigil` binary: `alert
//! imap` and `app-layer-protocol:imap` rules alert, no record is logged,
//! the STARTTLS that follows is not parsed (the flow stays `imap`). Same
//! alerts as the Suricata 9 peer.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

fn session(port: u16, server_port: u16, t0: i64) -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        format!("10.8.0.1:{port}").parse::<SocketAddr>().unwrap(),
        format!("10.8.0.2:{server_port}")
            .parse::<SocketAddr>()
            .unwrap(),
    )
    .start_at((t0, 0));
    t.handshake()
        .server_send(b"* OK [CAPABILITY IMAP4rev1 STARTTLS] ready\r\n")
        .client_send(b"a001 CAPABILITY\r\n")
        .server_send(b"* CAPABILITY IMAP4rev1 STARTTLS\r\na001 OK done\r\n")
        .client_send(b"a002 LOGIN joe secret\r\n")
        .server_send(b"a002 OK logged in\r\n")
        .client_send(b"a003 STARTTLS\r\n")
        .server_send(b"a003 OK begin TLS\r\n")
        .client_send(include_bytes!("../../applayer/tests/data/tls12_client.bin"))
        .close();
    t.into_frames()
}

#[test]
fn imap_detected_by_content() {
    let mut frames = session(52000, 143, 1_700_000_000);
    frames.extend(session(52001, 1143, 1_700_000_100));
    let rules = "\
alert imap any any -> any any (msg:\"imap login\"; flow:to_server; content:\"LOGIN\"; sid:1;)\n\
alert tcp any any -> any any (msg:\"proto imap\"; app-layer-protocol:imap; flow:to_client; content:\"begin TLS\"; sid:2;)\n\
alert tls any any -> any any (msg:\"never: tls\"; tls.sni; content:\"vigil\"; sid:3;)\n";
    let common::Run { events, dir, .. } = common::run("imap", &frames, rules, None);
    let alerts: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            assert_eq!(e["app_proto"], "imap");
            let client = if e["direction"] == "to_server" {
                &e["src_port"]
            } else {
                &e["dest_port"]
            };
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                client.as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = alerts.clone();
    sorted.sort();
    assert_eq!(sorted, [(1, 52000), (1, 52001), (2, 52000), (2, 52001)]);
    assert!(!events
        .iter()
        .any(|e| matches!(e["event_type"].as_str(), Some("imap" | "tls"))));
    if std::env::var_os("VIGIL_KEEP_E2E").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
