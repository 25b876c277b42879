//! HTTP/2 end to end: a crafted capture (h2c with prior knowledge on a
//! port that is not HTTP's, two streams whose second header block uses
//! the HPACK dynamic table, an `:authority` that differs from `host`; and
//! an HTTP/1.1 `Upgrade: h2c` accepted by `101`) through the `vigil`
//! binary to alerts, EVE `http` records and `fileinfo` records.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn frame(t: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let n = payload.len() as u32;
    let mut v = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, t, flags];
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// An HPACK literal header (`0x40`: added to the dynamic table, `0x00`:
/// not), name and value as plain strings.
fn literal(kind: u8, name: &str, value: &str) -> Vec<u8> {
    let mut v = vec![kind, name.len() as u8];
    v.extend_from_slice(name.as_bytes());
    v.push(value.len() as u8);
    v.extend_from_slice(value.as_bytes());
    v
}

fn session(client: &str, server: &str, at: i64) -> TcpSession {
    TcpSession::new(
        client.parse::<SocketAddr>().unwrap(),
        server.parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000 + at, 0))
    .with_mss(60)
}

fn capture() -> Vec<TimedFrame> {
    // Prior knowledge, port 8080.
    let mut c = PREFACE.to_vec();
    c.extend(frame(4, 0, 0, &[0, 3, 0, 0, 0, 100]));
    // Stream 1: GET /a (static :method GET, :scheme http), its
    // authority, and `x-custom: one` into the dynamic table (index 62).
    let mut h1 = vec![0x82, 0x86];
    h1.extend(literal(0x00, ":path", "/a"));
    h1.extend(literal(0x00, ":authority", "h2.test"));
    h1.extend(literal(0x40, "x-custom", "one"));
    c.extend(frame(1, 0x5, 1, &h1));
    // Stream 3: the dynamic entry again, and a `host` that is not the
    // authority.
    let mut h3 = vec![0x82, 0x86, 0xbe];
    h3.extend(literal(0x00, ":path", "/b"));
    h3.extend(literal(0x00, ":authority", "h2.test"));
    h3.extend(literal(0x00, "host", "other.test"));
    c.extend(frame(1, 0x5, 3, &h3));
    let mut s = frame(4, 0, 0, &[]);
    for id in [1, 3] {
        let mut h = vec![0x88];
        h.extend(literal(0x00, "content-type", "text/plain"));
        s.extend(frame(1, 0x4, id, &h));
        s.extend(frame(0, 0x1, id, b"secret body"));
    }
    let mut t = session("10.2.0.1:40000", "10.2.0.2:8080", 0);
    t.handshake().client_send(&c).server_send(&s).close();
    let mut frames = t.into_frames();

    // HTTP/1.1 Upgrade: h2c on port 80.
    let req = b"GET /up HTTP/1.1\r\nHost: up.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n";
    let mut s =
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".to_vec();
    s.extend(frame(4, 0, 0, &[]));
    s.extend(frame(1, 0x4, 1, &[0x88]));
    s.extend(frame(0, 0x1, 1, b"upgraded"));
    let mut c = PREFACE.to_vec();
    c.extend(frame(4, 0, 0, &[]));
    let mut t = session("10.2.0.1:40001", "10.2.0.2:80", 5);
    t.handshake()
        .client_send(req)
        .server_send(&s)
        .client_send(&c)
        .close();
    frames.extend(t.into_frames());
    frames
}

#[test]
fn http2_prior_knowledge_and_upgrade_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run(
        "http2",
        &capture(),
        "alert http2 any any -> any any (msg:\"get a\"; http.method; content:\"GET\"; http.uri; content:\"/a\"; sid:1;)\n\
         alert http any any -> any any (msg:\"body\"; flow:to_client; file_data; content:\"secret\"; sid:2;)\n\
         alert http2 any any -> any any (msg:\"mismatch\"; app-layer-event:http2.authority_host_mismatch; sid:3;)\n\
         alert http1 any any -> any any (msg:\"never on http2\"; http.header_names; content:\"x-custom\"; sid:4;)\n\
         alert http2 any any -> any any (msg:\"dynamic table\"; flow:to_server; http2.header; content:\"x-custom: one\"; sid:5;)\n\
         alert http any any -> any any (msg:\"status\"; http.stat_code; content:\"200\"; sid:6;)\n\
         alert http2 any any -> any any (msg:\"upgrade request\"; http.request_header; content:\"upgrade: h2c\"; sid:7;)\n\
         alert http any any -> any any (msg:\"pseudo stripped\"; flow:to_client; http.header_names; strip_pseudo_headers; content:\"|0d 0a|content-type|0d 0a|\"; startswith; sid:8;)\n\
         alert http2 any any -> any any (msg:\"settings\"; flow:to_server; http2.settings:SETTINGS_MAX_CONCURRENT_STREAMS=100; sid:9;)\n\
         alert http2 any any -> any any (msg:\"data frames\"; flow:to_client; http2.frametype:DATA; sid:10;)\n\
         alert http2 any any -> any any (msg:\"never\"; http2.window:>0; sid:11;)\n\
         alert http2 any any -> any any (msg:\"file size\"; filesize:8; sid:12;)\n",
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
    // sid 2, 5, 8: streams 1 and 3; sid 6 and 10 also the upgraded
    // stream 1; sid 9 the client's SETTINGS; sid 12 the upgraded
    // stream's 8-byte file.
    assert_eq!(
        sids,
        vec![1, 2, 2, 3, 5, 5, 6, 6, 6, 7, 8, 8, 9, 10, 10, 10, 12],
        "{alerts:?}"
    );
    for a in &alerts {
        assert_eq!(a["app_proto"], "http2");
        assert_eq!(a["http"]["version"], "2");
    }
    let get = alerts
        .iter()
        .find(|e| e["alert"]["signature_id"] == 1)
        .unwrap();
    assert_eq!(get["http"]["url"], "/a");
    assert_eq!(get["http"]["http2"]["stream_id"], 1);
    assert_eq!(get["dest_port"], 8080);
    let mismatch = alerts
        .iter()
        .find(|e| e["alert"]["signature_id"] == 3)
        .unwrap();
    assert_eq!(mismatch["http"]["http2"]["stream_id"], 3);
    assert_eq!(mismatch["http"]["hostname"], "other.test");
    let up = alerts
        .iter()
        .find(|e| e["alert"]["signature_id"] == 7)
        .unwrap();
    assert_eq!(up["http"]["url"], "/up");
    assert_eq!(up["dest_port"], 80);

    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "http" && e["http"]["http2"]["stream_id"] != 0)
        .collect();
    assert_eq!(recs.len(), 3, "{recs:?}");
    let s3 = recs
        .iter()
        .find(|r| r["http"]["url"] == "/b")
        .expect("stream 3 record");
    assert_eq!(s3["http"]["status"], 200);
    assert_eq!(s3["http"]["request_headers"][2]["name"], "x-custom");
    assert_eq!(s3["http"]["request_headers"][2]["value"], "one");
    assert_eq!(s3["http"]["response_headers"][1]["value"], "text/plain");
    assert_eq!(s3["src_port"], 40000);
    // SETTINGS frames are connection transactions (stream 0).
    assert!(events.iter().any(|e| e["event_type"] == "http"
        && e["http"]["http2"]["stream_id"] == 0
        && e["http"]["http2"]["request"]["settings"][0]["settings_id"]
            == "SETTINGS_MAX_CONCURRENT_STREAMS"));
    // Each stream's DATA is a file: the two responses on 8080 and the
    // upgraded stream's, unnamed as in Suricata, with the stream's record.
    let mut files: Vec<(String, u64, u64, String)> = events
        .iter()
        .filter(|e| e["event_type"] == "fileinfo")
        .map(|e| {
            assert_eq!(e["http"]["version"], "2", "{e}");
            assert_eq!(e["fileinfo"]["filename"], "", "{e}");
            (
                e["http"]["url"].as_str().unwrap_or_default().to_string(),
                e["fileinfo"]["size"].as_u64().unwrap(),
                e["dest_port"].as_u64().unwrap(),
                e["fileinfo"]["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    files.sort();
    let closed = |u: &str, n, p| (u.to_string(), n, p, "CLOSED".to_string());
    assert_eq!(
        files,
        vec![
            closed("/a", 11, 40000),
            closed("/b", 11, 40000),
            closed("/up", 8, 40001)
        ]
    );
    let stats = events
        .iter()
        .rev()
        .find(|e| e["event_type"] == "stats")
        .expect("stats record");
    assert_eq!(stats["stats"]["app_layer"]["flow"]["http2"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}
