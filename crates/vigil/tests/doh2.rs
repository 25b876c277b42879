//! DNS over HTTP/2 end to end: a crafted h2c capture (a GET with the
//! query in `dns=`, a POST with it as body, their `application/dns-message`
//! answers) through the `vigil` binary: `dns.*` keywords inspect the DNS
//! messages, `alert doh2` rules apply, and the `http` record carries the
//! DNS message as Suricata 9's doh2 logger does.

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

/// An HPACK literal header without indexing (lengths below 127).
fn literal(name: &str, value: &str) -> Vec<u8> {
    let mut v = vec![0x00, name.len() as u8];
    v.extend_from_slice(name.as_bytes());
    v.push(value.len() as u8);
    v.extend_from_slice(value.as_bytes());
    v
}

fn b64url(data: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for ch in data.chunks(3) {
        let n = ch
            .iter()
            .enumerate()
            .fold(0u32, |a, (i, &b)| a | u32::from(b) << (16 - 8 * i));
        for i in 0..=ch.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn name(n: &str) -> Vec<u8> {
    let mut q = Vec::new();
    for l in n.split('.') {
        q.push(l.len() as u8);
        q.extend_from_slice(l.as_bytes());
    }
    q.push(0);
    q
}

fn query(id: u16, n: &str) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend([1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend(name(n));
    q.extend([0, 1, 0, 1]);
    q
}

fn answer(id: u16, n: &str, ip: [u8; 4]) -> Vec<u8> {
    let mut a = id.to_be_bytes().to_vec();
    a.extend([0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
    a.extend(name(n));
    a.extend([0, 1, 0, 1, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
    a.extend(ip);
    a
}

fn capture() -> Vec<TimedFrame> {
    let mut c = PREFACE.to_vec();
    c.extend(frame(4, 0, 0, &[]));
    // Stream 1: GET /dns-query?dns=... (static :method GET, :scheme http).
    let mut h1 = vec![0x82, 0x86];
    h1.extend(literal(
        ":path",
        &format!("/dns-query?dns={}", b64url(&query(0, "evil.example"))),
    ));
    h1.extend(literal(":authority", "doh.test"));
    h1.extend(literal("accept", "application/dns-message"));
    c.extend(frame(1, 0x5, 1, &h1));
    // Stream 3: POST with the query as body.
    let mut h3 = vec![0x83, 0x86];
    h3.extend(literal(":path", "/dns-query"));
    h3.extend(literal(":authority", "doh.test"));
    h3.extend(literal("content-type", "application/dns-message"));
    c.extend(frame(1, 0x4, 3, &h3));
    c.extend(frame(0, 0x1, 3, &query(0, "post.example")));
    let mut s = frame(4, 0, 0, &[]);
    for (id, n, ip) in [
        (1, "evil.example", [192, 0, 2, 66]),
        (3, "post.example", [192, 0, 2, 3]),
    ] {
        let mut h = vec![0x88];
        h.extend(literal("content-type", "application/dns-message"));
        s.extend(frame(1, 0x4, id, &h));
        s.extend(frame(0, 0x1, id, &answer(0, n, ip)));
    }
    let mut t = TcpSession::new(
        "10.8.0.1:40000".parse::<SocketAddr>().unwrap(),
        "10.8.0.2:8080".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0));
    t.handshake().client_send(&c).server_send(&s).close();
    t.into_frames()
}

#[test]
fn doh2_dns_keywords_and_alert_dns_object() {
    let common::Run { eve, events, dir } = common::run(
        "doh2",
        &capture(),
        "alert doh2 any any -> any any (msg:\"doh query\"; dns.query; content:\"evil.example\"; sid:1;)\n\
         alert dns any any -> any any (msg:\"dns rule\"; dns.query; content:\"evil\"; sid:3;)\n\
         alert doh2 any any -> any any (msg:\"doh answer\"; dns.answers.rrname; content:\"post.example\"; sid:4;)\n\
         alert doh2 any any -> any any (msg:\"never: not queried\"; dns.query; content:\"example.org\"; sid:5;)\n\
         alert http2 any any -> any any (msg:\"invalid: dns in http2\"; dns.query; content:\"post\"; sid:6;)\n\
         alert http2 any any -> any any (msg:\"http2 header\"; http.request_header; content:\"authority|3a 20|doh.test\"; sid:7;)\n",
        Some(&["alert"]),
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
    // sid 6 is rejected, as by the peer; sid 7: both streams.
    assert_eq!(sids, vec![1, 3, 4, 7, 7], "{eve}");
    // The GET's answer, as the Suricata 9 peer logs it beside `http`.
    let a = alerts
        .iter()
        .find(|e| e["alert"]["signature_id"] == 1)
        .unwrap();
    assert_eq!(a["http"]["http2"]["stream_id"], 1);
    assert_eq!(
        a["dns"],
        serde_json::json!({"version": 3, "type": "response", "tx_id": 0, "id": 0,
            "flags": "8180", "qr": true, "rd": true, "ra": true, "opcode": 0,
            "rcode": "NOERROR",
            "queries": [{"rrname": "evil.example", "rrtype": "A"}],
            "answers": [{"rrname": "evil.example", "rrtype": "A", "ttl": 60,
                         "rdata": "192.0.2.66"}]})
    );
    let post = alerts
        .iter()
        .find(|e| e["alert"]["signature_id"] == 4)
        .unwrap();
    assert_eq!(post["dns"]["answers"][0]["rdata"], "192.0.2.3");
    let _ = std::fs::remove_dir_all(&dir);
}
