//! End to end for `app-layer-state`: a crafted capture (an HTTP/1 POST
//! whose line, headers and body arrive in separate segments, a TLS
//! ClientHello and ServerHello/ServerHelloDone) through the `vigil`
//! binary to EVE alerts. The expected alerts are those of the Suricata 9
//! peer on the same capture and rules.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use vigil_craft::{TcpSession, TimedFrame};

const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 8, 0, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(10, 8, 0, 2);

fn handshake_record(msg_type: u8, body: &[u8]) -> Vec<u8> {
    let mut hs = vec![msg_type];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(body);
    let mut rec = vec![0x16, 3, 1];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
}

/// A TLS 1.2 ClientHello with an SNI.
fn client_hello(sni: &str) -> Vec<u8> {
    let name = sni.as_bytes();
    let mut ext = vec![0, 0];
    ext.extend_from_slice(&((name.len() + 5) as u16).to_be_bytes());
    ext.extend_from_slice(&((name.len() + 3) as u16).to_be_bytes());
    ext.push(0);
    ext.extend_from_slice(&(name.len() as u16).to_be_bytes());
    ext.extend_from_slice(name);
    let mut body = vec![3, 3];
    body.extend_from_slice(&[0x11; 32]);
    body.push(0);
    body.extend_from_slice(&[0, 4, 0x00, 0x2f, 0x00, 0x35]);
    body.extend_from_slice(&[1, 0]);
    body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    body.extend_from_slice(&ext);
    handshake_record(1, &body)
}

/// A TLS 1.2 ServerHello (no extensions) followed by a ServerHelloDone.
fn server_hello_done() -> Vec<u8> {
    let mut body = vec![3, 3];
    body.extend_from_slice(&[0x22; 32]);
    body.push(0);
    body.extend_from_slice(&[0x00, 0x2f, 0]);
    let mut out = handshake_record(2, &body);
    out.extend(handshake_record(14, &[]));
    out
}

fn capture() -> Vec<TimedFrame> {
    let t = 1_700_000_000;
    let mut frames = Vec::new();
    let mut s = TcpSession::new(
        SocketAddr::from((CLIENT, 41000)),
        SocketAddr::from((SERVER, 80)),
    )
    .start_at((t, 0));
    s.handshake()
        .client_send(b"POST /up HTTP/1.1\r\nHost: a\r\n")
        .client_send(b"Content-Length: 4\r\n\r\n")
        .client_send(b"abcd")
        .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .close();
    frames.extend(s.into_frames());
    let mut s = TcpSession::new(
        SocketAddr::from((CLIENT, 41001)),
        SocketAddr::from((SERVER, 443)),
    )
    .start_at((t + 1, 0));
    s.handshake()
        .client_send(&client_hello("state.example"))
        .server_send(&server_hello_done())
        .close();
    frames.extend(s.into_frames());
    frames.sort_by_key(|f| f.0);
    frames
}

const RULES: &str = "\
alert http1 any any -> any any (msg:\"never: the line is in with the headers\"; app-layer-state:<request_headers; sid:1;)
alert http1 any any -> any any (msg:\"past headers\"; app-layer-state:>request_headers; sid:2;)
alert http1 any any -> any any (msg:\"hook body\"; app-layer-state:request_body; sid:3;)
alert http1 any any -> any any (msg:\"never: past complete\"; app-layer-state:>request_complete; sid:4;)
alert http1 any any -> any any (msg:\"never: before started\"; app-layer-state:<request_started; sid:5;)
alert http1 any any -> any any (msg:\"past response line\"; app-layer-state:>response_line; sid:6;)
alert http1 any any -> any any (msg:\"never: response in one segment\"; app-layer-state:<response_complete; sid:7;)
alert http1 any any -> any any (msg:\"uri before body\"; app-layer-state:<request_body; http.uri; content:\"/up\"; sid:8;)
alert tls any any -> any any (msg:\"client hello\"; app-layer-state:>client_in_progress; sid:11;)
alert tls any any -> any any (msg:\"no client cert\"; app-layer-state:<client_cert_done; sid:12;)
alert tls any any -> any any (msg:\"server hello done\"; app-layer-state:server_hello_done; sid:14;)
alert tls any any -> any any (msg:\"never: done in the hello segment\"; app-layer-state:<server_cert_done; sid:15;)
alert tls any any -> any any (msg:\"never: http state\"; app-layer-state:>client_finished; sid:16;)
";

#[test]
fn app_layer_state_from_capture_to_eve() {
    let common::Run { eve, events, .. } =
        common::run_with("applstate", &capture(), RULES, Some(&["alert"]), "", &[]);
    // The Suricata 9 peer on this capture alerts the same sids, with two
    // differences: it also inspects the server side of the TLS
    // transaction on the server's ACK of the ClientHello (no server
    // data yet, so before server_cert_done: sid 15), where Vigil
    // inspects a direction when its data arrives; and its hook rules
    // (no operator: 3, 14) alert at each inspection once the state is
    // reached (twice each here), where Vigil alerts once per
    // transaction, as for every other transaction rule.
    assert_eq!(
        common::alert_sids(&events),
        vec![2, 3, 6, 8, 11, 12, 14],
        "{eve}"
    );
    // The to-client rule alerts to the client.
    let a = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 6)
        .unwrap();
    assert_eq!(a["src_port"], 80, "{a}");
}
