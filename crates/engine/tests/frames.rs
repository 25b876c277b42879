//! `frame` rules end to end, from a crafted capture: the framers follow
//! each protocol's stream, detection inspects each complete frame, and
//! the alert carries the frame (EVE `frame` object). Set
//! `VIGIL_KEEP_FRAME_PCAPS=<dir>` to keep the captures (they were
//! compared with Suricata 9: docs/ARCHITECTURE.md, "App-layer frames").

mod common;

use std::net::SocketAddr;

use common::{engine, write_pcap};
use vigil_craft::{PacketBuilder, TcpSession, TimedFrame};
use vigil_detect::CompiledRule;
use vigil_engine::{run_offline, AlertOut, AlertSink, EngineConfig, FrameOut, OutKind};
use vigil_source::PcapSource;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[derive(Debug, Clone)]
struct Hit {
    sid: u32,
    to_server: Option<bool>,
    frame: Option<FrameOut>,
}

#[derive(Default)]
struct Collect(Vec<Hit>);

impl AlertSink for Collect {
    fn alert(&mut self, a: &AlertOut, r: &CompiledRule) -> std::io::Result<()> {
        if a.kind == OutKind::Alert {
            self.0.push(Hit {
                sid: r.sid,
                to_server: a.to_server,
                frame: a.frame.as_deref().cloned(),
            });
        }
        Ok(())
    }
}

fn run(name: &str, frames: Vec<TimedFrame>, rules: &str) -> Vec<Hit> {
    let path = write_pcap(name, frames);
    let src = PcapSource::open(&path).expect("open pcap");
    let mut sink = Collect::default();
    run_offline(
        src,
        engine(rules),
        &EngineConfig::default(),
        &mut sink,
        &mut |_, _| {},
    )
    .expect("run");
    if let Some(dir) = std::env::var_os("VIGIL_KEEP_FRAME_PCAPS") {
        let _ = std::fs::copy(
            &path,
            std::path::Path::new(&dir).join(format!("{name}.pcap")),
        );
    }
    let _ = std::fs::remove_file(&path);
    sink.0
}

fn sids(h: &[Hit]) -> Vec<u32> {
    let mut v: Vec<u32> = h.iter().map(|h| h.sid).collect();
    v.sort_unstable();
    v
}

fn frame_of(h: &[Hit], sid: u32) -> FrameOut {
    h.iter()
        .find(|h| h.sid == sid)
        .and_then(|h| h.frame.clone())
        .unwrap_or_else(|| panic!("no frame alert for {sid}: {h:#?}"))
}

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
    let mut hs = vec![1];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(&body);
    let mut rec = vec![0x16, 3, 1];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
}

fn server_hello() -> Vec<u8> {
    let mut body = vec![3, 3];
    body.extend_from_slice(&[0x22; 32]);
    body.push(0);
    body.extend_from_slice(&[0x00, 0x2f, 0]);
    let mut hs = vec![2];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(&body);
    let mut rec = vec![0x16, 3, 3];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
}

fn tls_session() -> Vec<TimedFrame> {
    let mut s = TcpSession::new(addr("10.0.0.1:40001"), addr("10.0.1.1:443"))
        .start_at((1_700_000_000, 0))
        .with_mss(40);
    let hello = client_hello("www.evil.example");
    s.handshake()
        .client_send(&hello)
        .server_send(&server_hello())
        // A fatal alert (bad_certificate) from the client.
        .client_send(&[0x15, 3, 3, 0, 2, 2, 42])
        .close();
    s.into_frames()
}

#[test]
fn tls_frames() {
    let rules = r#"
alert tls any any -> any any (msg:"hdr"; frame:tls.hdr; content:"|16 03 01|"; startswith; sid:1;)
alert tls any any -> any any (msg:"alert"; frame:alert; content:"|02 2a|"; startswith; endswith; sid:2;)
alert tcp any any -> any any (msg:"pdu"; frame:tls.pdu; content:"evil.example"; sid:3;)
alert tls any any -> any any (msg:"data"; flow:to_server; frame:tls.data; content:"|01 00|"; startswith; sid:4;)
alert tls any any -> any any (msg:"hdr no"; frame:tls.hdr; content:"evil"; sid:5;)
alert tls any any -> any any (msg:"data to client"; flow:to_client; frame:tls.data; content:"|02 00|"; startswith; sid:6;)
"#;
    let h = run("frames-tls", tls_session(), rules);
    assert_eq!(sids(&h), vec![1, 2, 3, 4, 6], "{h:#?}");
    let hdr = frame_of(&h, 1);
    let hello_len = client_hello("www.evil.example").len() as u64;
    assert_eq!(
        (hdr.name, hdr.stream_offset, hdr.length),
        ("hdr", Some(0), 5)
    );
    assert!(hdr.complete && hdr.to_server);
    let pdu = frame_of(&h, 3);
    assert_eq!((pdu.name, pdu.length), ("pdu", hello_len));
    let alert = frame_of(&h, 2);
    assert_eq!(
        (alert.stream_offset, alert.length),
        (Some(hello_len + 5), 2)
    );
    assert_eq!(&alert.data[..], &[2, 42]);
    assert_eq!(
        h.iter().find(|x| x.sid == 6).unwrap().to_server,
        Some(false)
    );
}

fn http_session() -> Vec<TimedFrame> {
    let mut s = TcpSession::new(addr("10.0.0.1:40002"), addr("10.0.1.1:80"))
        .start_at((1_700_000_000, 0))
        .with_mss(30);
    s.handshake()
        .client_send(
            b"POST /upload HTTP/1.1\r\nHost: example.com\r\nContent-Length: 12\r\n\r\nbody-of-post\
              GET /second HTTP/1.1\r\nHost: example.com\r\n\r\n",
        )
        .server_send(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n\
              HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!",
        )
        .close();
    s.into_frames()
}

#[test]
fn http1_frames() {
    let rules = r#"
alert http any any -> any any (msg:"req"; frame:http1.request; content:"POST /upload"; startswith; content:"body-of-post"; endswith; sid:1;)
alert http1 any any -> any any (msg:"second"; frame:request; content:"GET /second"; startswith; content:"|0d 0a 0d 0a|"; endswith; sid:2;)
alert http any any -> any any (msg:"chunked"; frame:http1.response; content:"HTTP/1.1 200"; startswith; content:"0|0d 0a 0d 0a|"; endswith; sid:3;)
alert http1 any any -> any any (msg:"404"; frame:response; content:"404"; content:"no!"; endswith; sid:4;)
alert http1 any any -> any any (msg:"no"; frame:request; content:"HTTP/1.1 200"; sid:5;)
"#;
    let h = run("frames-http", http_session(), rules);
    assert_eq!(sids(&h), vec![1, 2, 3, 4], "{h:#?}");
    let req = frame_of(&h, 1);
    assert_eq!(req.stream_offset, Some(0));
    let second = frame_of(&h, 2);
    assert_eq!(second.stream_offset, Some(req.length));
    assert!(!frame_of(&h, 3).to_server);
}

fn dns_query(id: u16, name: &str) -> Vec<u8> {
    vigil_craft::demo::dns_query(id, name, 1)
}

#[test]
fn dns_frames_udp_and_tcp() {
    let b = PacketBuilder::default();
    let (c, s) = (addr("10.0.0.9:5353"), addr("10.0.1.53:53"));
    let q = b.udp(
        c.ip(),
        c.port(),
        s.ip(),
        s.port(),
        &dns_query(0x1234, "www.example.com"),
    );
    let mut frames = vec![((1_700_000_100, 0), q)];
    let mut t =
        TcpSession::new(addr("10.0.0.9:40003"), addr("10.0.1.53:53")).start_at((1_700_000_200, 0));
    let m = dns_query(0x4321, "tcp.example.org");
    let mut rec = (m.len() as u16).to_be_bytes().to_vec();
    rec.extend_from_slice(&m);
    let m2 = dns_query(0x4322, "two.example.org");
    rec.extend_from_slice(&(m2.len() as u16).to_be_bytes());
    rec.extend_from_slice(&m2);
    t.handshake().client_send(&rec).close();
    frames.extend(t.into_frames());
    let rules = r#"
alert udp any any -> any any (msg:"udp pdu"; frame:dns.pdu; content:"|12 34|"; startswith; content:"example"; sid:1;)
alert dns any any -> any any (msg:"tcp pdu"; frame:pdu; content:"|43 21|"; startswith; sid:2;)
alert dns any any -> any any (msg:"second tcp pdu"; frame:pdu; content:"|43 22|"; startswith; sid:3;)
alert dns any any -> any any (msg:"any pdu"; frame:dns.pdu; content:"example"; sid:4;)
"#;
    let h = run("frames-dns", frames, rules);
    assert_eq!(sids(&h), vec![1, 2, 3, 4, 4, 4], "{h:#?}");
    let udp = frame_of(&h, 1);
    assert_eq!(udp.stream_offset, None);
    let tcp = frame_of(&h, 2);
    // The pdu leaves out the length prefix.
    assert_eq!((tcp.stream_offset, tcp.length), (Some(2), m.len() as u64));
}

fn smb2_negotiate(msg_id: u8, next: u32) -> Vec<u8> {
    let mut h = vec![0xfe, b'S', b'M', b'B', 64, 0, 0, 0, 0, 0, 0, 0];
    h.extend_from_slice(&[0, 0]); // negotiate
    h.extend_from_slice(&[1, 0]); // credits
    h.extend_from_slice(&[0, 0, 0, 0]); // flags
    h.extend_from_slice(&next.to_le_bytes());
    h.extend_from_slice(&[msg_id, 0, 0, 0, 0, 0, 0, 0]);
    h.extend_from_slice(&[0; 4 + 4 + 8 + 16]);
    assert_eq!(h.len(), 64);
    let mut body = vec![0x24, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(b"vigil-client-guid");
    body.truncate(12 + 16);
    body.extend_from_slice(&[0; 8]);
    body.extend_from_slice(&[0x02, 0x02, 0x10, 0x02]);
    h.extend_from_slice(&body);
    h
}

fn nbss(msg: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0];
    v.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    v.extend_from_slice(msg);
    v
}

#[test]
fn smb_frames() {
    let mut s = TcpSession::new(addr("10.0.0.1:40004"), addr("10.0.1.1:445"))
        .start_at((1_700_000_000, 0))
        .with_mss(50);
    let one = smb2_negotiate(0, 0);
    // Two compounded SMB2 messages in one NBSS record.
    let mut a = smb2_negotiate(1, 0);
    let pad = (8 - a.len() % 8) % 8;
    a.extend(std::iter::repeat_n(0u8, pad));
    let first_len = a.len() as u32;
    a[20..24].copy_from_slice(&first_len.to_le_bytes());
    a.extend_from_slice(&smb2_negotiate(2, 0));
    s.handshake()
        .client_send(&nbss(&one))
        .client_send(&nbss(&a))
        .close();
    let rules = r#"
alert smb any any -> any any (msg:"nbss hdr"; frame:nbss.hdr; content:"|00 00|"; startswith; sid:1;)
alert smb any any -> any any (msg:"smb2 hdr"; frame:smb.smb2.hdr; content:"|fe|SMB"; startswith; sid:2;)
alert smb any any -> any any (msg:"smb2 data"; frame:smb2.data; content:"|24 00 02 00|"; startswith; sid:3;)
alert smb any any -> any any (msg:"smb2 pdu 2"; frame:smb2.pdu; content:"|fe|SMB"; startswith; content:"|02 00 00 00 00 00 00 00|"; distance:20; within:8; sid:4;)
alert smb any any -> any any (msg:"nbss pdu"; frame:nbss.pdu; content:"|fe|SMB"; sid:5;)
alert smb any any -> any any (msg:"smb1"; frame:smb1.pdu; content:"SMB"; sid:6;)
"#;
    let h = run("frames-smb", s.into_frames(), rules);
    let count = |sid| h.iter().filter(|x| x.sid == sid).count();
    assert_eq!(count(1), 2, "{h:#?}");
    assert_eq!(count(2), 3);
    assert_eq!(count(3), 3);
    assert_eq!(count(4), 1);
    assert_eq!(count(5), 2);
    assert_eq!(count(6), 0);
    let hdr = frame_of(&h, 2);
    assert_eq!((hdr.stream_offset, hdr.length), (Some(4), 64));
    let pdu2 = frame_of(&h, 4);
    assert_eq!(
        pdu2.stream_offset,
        Some(4 + one.len() as u64 + 4 + u64::from(first_len))
    );
}

#[test]
fn smtp_frames() {
    let mut s =
        TcpSession::new(addr("10.0.0.1:40005"), addr("10.0.1.1:25")).start_at((1_700_000_000, 0));
    s.handshake()
        .server_send(b"220 mx.example.com ESMTP\r\n")
        .client_send(b"EHLO client.example\r\n")
        .server_send(b"250-mx.example.com\r\n250 PIPELINING\r\n")
        .client_send(b"MAIL FROM:<a@example.com>\r\n")
        .server_send(b"250 OK\r\n")
        .client_send(b"RCPT TO:<b@example.com>\r\n")
        .server_send(b"250 OK\r\n")
        .client_send(b"DATA\r\n")
        .server_send(b"354 go ahead\r\n")
        .client_send(b"Subject: hi\r\n\r\nsecret-body line\r\n.\r\n")
        .server_send(b"250 queued\r\n")
        .client_send(b"QUIT\r\n")
        .server_send(b"221 bye\r\n")
        .close();
    let rules = r#"
alert smtp any any -> any any (msg:"mail from"; frame:smtp.command_line; content:"MAIL FROM:"; startswith; content:"|0d 0a|"; endswith; sid:1;)
alert smtp any any -> any any (msg:"data"; frame:data; content:"Subject: hi"; startswith; content:"secret-body line|0d 0a|.|0d 0a|"; endswith; sid:2;)
alert smtp any any -> any any (msg:"354"; frame:response_line; content:"354 "; startswith; sid:3;)
alert smtp any any -> any any (msg:"multi-line reply"; frame:response_line; content:"250"; startswith; sid:4;)
alert smtp any any -> any any (msg:"no body in commands"; frame:command_line; content:"secret"; sid:5;)
"#;
    let h = run("frames-smtp", s.into_frames(), rules);
    let count = |sid| h.iter().filter(|x| x.sid == sid).count();
    assert_eq!(
        (count(1), count(2), count(3), count(4), count(5)),
        (1, 1, 1, 5, 0),
        "{h:#?}"
    );
    assert!(!frame_of(&h, 3).to_server);
}

fn dce_bind() -> Vec<u8> {
    let mut b = vec![5, 0, 0x0b, 3, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
    b.extend_from_slice(&[0xb8, 0x10, 0xb8, 0x10, 0, 0, 0, 0]);
    b.extend_from_slice(&[1, 0, 0, 0]);
    b.extend_from_slice(&[0, 0, 1, 0]);
    b.extend_from_slice(&[0x12; 16]);
    b.extend_from_slice(&[1, 0, 0, 0]);
    b.extend_from_slice(&[
        0x04, 0x5d, 0x88, 0x8a, 0xeb, 0x1c, 0xc9, 0x11, 0x9f, 0xe8, 0x08, 0x00, 0x2b, 0x10, 0x48,
        0x60,
    ]);
    b.extend_from_slice(&[2, 0, 0, 0]);
    let len = b.len() as u16;
    b[8..10].copy_from_slice(&len.to_le_bytes());
    b
}

#[test]
fn dcerpc_frames() {
    let mut s = TcpSession::new(addr("10.0.0.1:40006"), addr("10.0.1.1:135"))
        .start_at((1_700_000_000, 0))
        .with_mss(30);
    let bind = dce_bind();
    s.handshake().client_send(&bind).close();
    let rules = r#"
alert dcerpc any any -> any any (msg:"hdr"; frame:dcerpc.hdr; content:"|05 00 0b|"; startswith; sid:1;)
alert dcerpc any any -> any any (msg:"data"; frame:data; content:"|12 12 12 12|"; sid:2;)
alert dcerpc any any -> any any (msg:"pdu"; frame:pdu; content:"|05 00 0b|"; startswith; content:"|02 00 00 00|"; endswith; sid:3;)
alert dcerpc any any -> any any (msg:"hdr has no body"; frame:hdr; content:"|12 12|"; sid:4;)
"#;
    let h = run("frames-dcerpc", s.into_frames(), rules);
    assert_eq!(sids(&h), vec![1, 2, 3], "{h:#?}");
    assert_eq!(frame_of(&h, 3).length, bind.len() as u64);
    assert_eq!(frame_of(&h, 2).stream_offset, Some(16));
}

#[test]
fn no_frame_rules_no_framers() {
    // A flow without frame rules keeps no framer: the same capture with a
    // packet rule alerts as before and no alert has a frame.
    let rules = r#"alert tcp any any -> any any (msg:"pkt"; content:"evil.example"; sid:9;)"#;
    let h = run("frames-none", tls_session(), rules);
    assert!(!h.is_empty());
    assert!(h.iter().all(|x| x.frame.is_none()));
}
