//! Telnet end to end: a crafted session on port 23 (option negotiation,
//! a terminal-type subnegotiation, a login) and the same bytes on
//! another port, through the `vigil` binary: `alert telnet` and
//! `app-layer-protocol:telnet` apply on port 23 only, as with the
//! Suricata 9 peer on the same capture (which also has no telnet record).

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

fn session(client: &str, server: &str, start: i64) -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        client.parse::<SocketAddr>().unwrap(),
        server.parse::<SocketAddr>().unwrap(),
    )
    .start_at((start, 0));
    t.handshake()
        .server_send(&[0xff, 0xfd, 0x18, 0xff, 0xfb, 0x01])
        .client_send(&[0xff, 0xfb, 0x18])
        .client_send(&[
            0xff, 0xfa, 0x18, 0x00, b'x', b't', b'e', b'r', b'm', 0xff, 0xf0,
        ])
        .server_send(b"Debian GNU/Linux 12\r\nlogin: ")
        .client_send(b"root\r\n")
        .server_send(b"Password: ")
        .client_send(b"toor\r\n")
        .server_send(b"uid=0(root) gid=0(root)\r\n# ")
        .close();
    t.into_frames()
}

fn capture() -> Vec<TimedFrame> {
    let mut f = session("10.6.0.1:41000", "10.6.0.2:23", 1_700_000_000);
    f.extend(session("10.6.0.1:41001", "10.6.0.2:2323", 1_700_000_010));
    f
}

#[test]
fn telnet_detected_on_its_port() {
    let common::Run { eve, events, dir } = common::run(
        "telnet",
        &capture(),
        "alert telnet any any -> any any (msg:\"login root\"; flow:to_server,established; content:\"root\"; sid:1;)\n\
         alert tcp any any -> any any (msg:\"telnet proto\"; flow:to_server; app-layer-protocol:telnet; content:\"toor\"; sid:2;)\n\
         alert telnet any any -> any any (msg:\"uid 0\"; flow:to_client; content:\"uid=0|28|root|29|\"; sid:3;)\n\
         alert http any any -> any any (msg:\"never: not http\"; content:\"root\"; sid:4;)\n\
         alert tcp any any -> any any (msg:\"DO TTYPE\"; flow:to_client; content:\"|ff fd 18|\"; sid:5;)\n\
         alert tcp any any -> any any (msg:\"not telnet\"; flow:to_server; app-layer-protocol:!telnet; content:\"toor\"; sid:6;)\n",
        Some(&["alert", "flow"]),
    );
    let mut alerts: Vec<(u64, u64, String)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                e["src_port"]
                    .as_u64()
                    .unwrap()
                    .min(e["dest_port"].as_u64().unwrap()),
                e["app_proto"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    alerts.sort();
    assert_eq!(
        alerts,
        vec![
            (1, 23, "telnet".into()),
            (2, 23, "telnet".into()),
            (3, 23, "telnet".into()),
            (5, 23, "telnet".into()),
            (5, 2323, "failed".into()),
            (6, 2323, "failed".into()),
        ],
        "{eve}"
    );
    let flows: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "flow")
        .collect();
    assert!(
        flows
            .iter()
            .any(|f| f["dest_port"] == 23 && f["app_proto"] == "telnet"),
        "{flows:?}"
    );
    // No telnet record: Suricata 9 has none.
    assert!(events.iter().all(|e| e["event_type"] != "telnet"));
    let _ = std::fs::remove_dir_all(&dir);
}
