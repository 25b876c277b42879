//! No input makes a parser panic, whatever the bytes and however they are
//! split; detection by content accepts real first bytes.

use proptest::prelude::*;
use vigil_applayer::probe::{Detection, ProtocolDetector};
use vigil_applayer::{
    probe, probe_udp, transforms, AppLayerState, AppProto, BufferId, Direction, ProbeResult,
    Transport,
};

/// Feeds chunks alternately to both directions and reads every buffer and
/// EVE object.
fn exercise(proto: AppProto, transport: Transport, chunks: &[(bool, Vec<u8>)]) {
    let mut s = AppLayerState::new(proto, transport);
    for (i, (to_server, c)) in chunks.iter().enumerate() {
        let dir = if *to_server {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        s.feed(dir, c, i as u64);
        if i % 7 == 3 {
            s.on_gap(dir, if i % 2 == 0 { None } else { Some(i as u64) });
        }
    }
    s.finish(Direction::ToServer);
    s.finish(Direction::ToClient);
    for t in s.transactions() {
        for &id in BufferId::ALL {
            for dir in [Direction::ToServer, Direction::ToClient] {
                let _ = s.buffer(t.id, id, dir);
                let _ = s.buffers(t.id, id, dir).count();
            }
        }
        let _ = s.eve(t.id);
    }
}

fn chunks() -> impl Strategy<Value = Vec<(bool, Vec<u8>)>> {
    prop::collection::vec(
        (any::<bool>(), prop::collection::vec(any::<u8>(), 0..200)),
        0..12,
    )
}

/// Bytes that look enough like each protocol to get past the first checks.
fn seeded(prefix: &'static [u8]) -> impl Strategy<Value = Vec<(bool, Vec<u8>)>> {
    chunks().prop_map(move |mut v| {
        if let Some(first) = v.first_mut() {
            let mut b = prefix.to_vec();
            b.extend_from_slice(&first.1);
            first.1 = b;
        }
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn http_never_panics(c in seeded(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n")) {
        exercise(AppProto::Http, Transport::Tcp, &c);
    }

    #[test]
    fn http_arbitrary(c in chunks()) {
        exercise(AppProto::Http, Transport::Tcp, &c);
    }

    #[test]
    fn tls_never_panics(c in seeded(&[0x16, 0x03, 0x01, 0x00, 0x80, 0x01, 0x00, 0x00, 0x7c, 0x03, 0x03])) {
        exercise(AppProto::Tls, Transport::Tcp, &c);
    }

    #[test]
    fn tls_arbitrary(c in chunks()) {
        exercise(AppProto::Tls, Transport::Tcp, &c);
    }

    #[test]
    fn dns_udp_never_panics(c in seeded(&[0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x01, 0x00, 0x01])) {
        exercise(AppProto::Dns, Transport::Udp, &c);
    }

    #[test]
    fn ssh_never_panics(c in seeded(b"SSH-2.0-")) {
        exercise(AppProto::Ssh, Transport::Tcp, &c);
    }

    #[test]
    fn ssh_arbitrary(c in chunks()) {
        exercise(AppProto::Ssh, Transport::Tcp, &c);
    }

    #[test]
    fn sip_never_panics(c in seeded(b"INVITE sip:a@b SIP/2.0\r\nVia: x\r\nContent-Type: application/sdp\r\nContent-Length: 40\r\n\r\nv=0\r\no=")) {
        exercise(AppProto::Sip, Transport::Tcp, &c);
        exercise(AppProto::Sip, Transport::Udp, &c);
    }

    #[test]
    fn sip_arbitrary(c in chunks()) {
        exercise(AppProto::Sip, Transport::Tcp, &c);
        exercise(AppProto::Sip, Transport::Udp, &c);
    }

    #[test]
    fn krb5_never_panics(c in seeded(&[0, 0, 0, 0x60, 0x6a, 0x81, 0x5d, 0x30, 0x81, 0x5a, 0xa1, 0x03, 0x02, 0x01, 0x05])) {
        exercise(AppProto::Krb5, Transport::Tcp, &c);
        exercise(AppProto::Krb5, Transport::Udp, &c);
    }

    #[test]
    fn krb5_arbitrary(c in chunks()) {
        exercise(AppProto::Krb5, Transport::Tcp, &c);
        exercise(AppProto::Krb5, Transport::Udp, &c);
    }

    #[test]
    fn snmp_never_panics(c in seeded(&[0x30, 0x29, 0x02, 0x01, 0x01, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x1c])) {
        exercise(AppProto::Snmp, Transport::Udp, &c);
    }

    #[test]
    fn snmp_arbitrary(c in chunks()) {
        exercise(AppProto::Snmp, Transport::Udp, &c);
        // SNMP is UDP only: a TCP stream is ignored.
        exercise(AppProto::Snmp, Transport::Tcp, &c);
    }

    #[test]
    fn ike_never_panics(c in seeded(&[0xe4, 0x7a, 0x59, 0x1f, 0xd0, 0x57, 0x58, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x10, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0x80])) {
        exercise(AppProto::Ike, Transport::Udp, &c);
    }

    #[test]
    fn ike_arbitrary(c in chunks()) {
        exercise(AppProto::Ike, Transport::Udp, &c);
    }

    #[test]
    fn dcerpc_never_panics(c in seeded(&[5, 0, 11, 3, 0x10, 0, 0, 0, 0x48, 0, 0, 0, 1, 0, 0, 0])) {
        exercise(AppProto::Dcerpc, Transport::Tcp, &c);
    }

    /// A request header with a fragment length of 0x30: the body, and
    /// what follows, is arbitrary.
    #[test]
    fn dcerpc_request_never_panics(c in seeded(&[5, 0, 0, 3, 0x10, 0, 0, 0, 0x30, 0, 0, 0, 1, 0, 0, 0])) {
        exercise(AppProto::Dcerpc, Transport::Tcp, &c);
    }

    #[test]
    fn smb_ftp_smtp_arbitrary(c in chunks()) {
        exercise(AppProto::Smb, Transport::Tcp, &c);
        exercise(AppProto::Ftp, Transport::Tcp, &c);
        exercise(AppProto::Smtp, Transport::Tcp, &c);
        exercise(AppProto::Dcerpc, Transport::Tcp, &c);
    }

    #[test]
    fn ftp_never_panics(c in seeded(b"PORT 1,2,3,4,5,6\r\n227 Entering Passive Mode (1,2,3,4,5,6)\r\n150-")) {
        exercise(AppProto::Ftp, Transport::Tcp, &c);
    }

    #[test]
    fn dns_tcp_never_panics(c in chunks()) {
        exercise(AppProto::Dns, Transport::Tcp, &c);
    }

    /// Real handshakes and messages with bytes overwritten, cut anywhere.
    #[test]
    fn mutated_real_messages(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let (dce_client, dce_server) = dcerpc_call();
        let (krb_client, krb_server) = krb5_exchange();
        let snmp_req = vigil_applayer::snmp::build::message(1, "public", 0, &["1.3.6.1.2.1.1.1.0"]);
        let snmp_trap = vigil_applayer::snmp::build::trap_v1("public", "1.3.6.1.4.1.4.1.2.21", [10, 0, 0, 1], 6);
        let [ike_i, ike_r, ..] = vigil_applayer::ike::build::v1_main_mode();
        let ike_v2 = vigil_applayer::ike::build::v2_sa_init(8, &[(1, 12), (2, 5), (3, 12), (4, 19)]);
        let fixtures: [(AppProto, Transport, &[u8], &[u8]); 9] = [
            (AppProto::Ike, Transport::Udp, &ike_i, &ike_r),
            (AppProto::Ike, Transport::Udp, &ike_v2, &ike_r),
            (AppProto::Snmp, Transport::Udp, &snmp_req, &snmp_trap),
            (AppProto::Krb5, Transport::Tcp, &krb_client, &krb_server),
            (AppProto::Krb5, Transport::Udp, &krb_client[4..], &krb_server[4..]),
            (AppProto::Dcerpc, Transport::Tcp, &dce_client, &dce_server),
            (AppProto::Tls, Transport::Tcp, include_bytes!("data/tls12_client.bin"), include_bytes!("data/tls12_server.bin")),
            (AppProto::Http, Transport::Tcp,
             b"POST /a?b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
             b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: 9\r\n\r\nx\x9c\xcbH\xcd\x01\x00"),
            (AppProto::Dns, Transport::Tcp,
             b"\x00\x15\x1a\x2b\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x00\x00\x01\x00\x01",
             b"\x00\x1b\x1a\x2b\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\x03www\x00\x00\x01\x00\x01\xc0\x0c\x00\x05\x00\x01"),
        ];
        for (proto, transport, client, server) in fixtures {
            let mut chunks = Vec::new();
            for (to_server, data) in [(true, client), (false, server)] {
                let mut d = data.to_vec();
                for (i, b) in &edits {
                    let at = i.index(d.len());
                    d[at] = *b;
                }
                let mut points: Vec<usize> = cuts.iter().map(|c| c.index(d.len() + 1)).collect();
                points.sort_unstable();
                let mut last = 0;
                for p in points.into_iter().chain([d.len()]) {
                    chunks.push((to_server, d[last..p.max(last)].to_vec()));
                    last = p.max(last);
                }
            }
            exercise(proto, transport, &chunks);
        }
    }

    #[test]
    fn probes_never_panic(b in prop::collection::vec(any::<u8>(), 0..100), port in any::<u16>()) {
        for dir in [Direction::ToServer, Direction::ToClient] {
            let _ = probe(dir, &b, port);
            let _ = probe_udp(dir, &b, port);
        }
    }

    #[test]
    fn transforms_never_panic(b in prop::collection::vec(any::<u8>(), 0..100), key in prop::collection::vec(any::<u8>(), 0..4)) {
        let _ = transforms::url_decode(&b);
        let _ = transforms::compress_whitespace(&b);
        let _ = transforms::xor(&b, &key);
        let _ = transforms::header_lowercase(&b);
        let _ = transforms::strip_pseudo_headers(&b);
        for mode in [transforms::Base64Mode::Rfc4648, transforms::Base64Mode::Rfc2045, transforms::Base64Mode::Strict] {
            let o = transforms::Base64Options { bytes: Some(key.len() * 7), offset: key.len(), mode };
            let _ = transforms::from_base64(&b, &o);
        }
    }
}

#[test]
fn probing_by_content() {
    use Direction::*;
    let tls = include_bytes!("data/tls12_client.bin");
    // Ports are only a hint: TLS on port 80, HTTP on 443.
    assert_eq!(probe(ToServer, tls, 80), ProbeResult::Tls);
    assert_eq!(
        probe(ToServer, b"GET /x HTTP/1.1\r\n", 443),
        ProbeResult::Http
    );
    assert_eq!(
        probe(ToClient, b"HTTP/1.1 200 OK\r\n", 8080),
        ProbeResult::Http
    );
    assert_eq!(probe(ToServer, b"GE", 80), ProbeResult::NeedMore);
    assert_eq!(probe(ToServer, b"\x16\x03", 80), ProbeResult::NeedMore);
    assert_eq!(
        probe(ToServer, b"SSH-2.0-OpenSSH_9.6\r\n", 22),
        ProbeResult::Ssh
    );
    assert_eq!(probe(ToClient, b"SSH-1.99-x\r\n", 2222), ProbeResult::Ssh);
    assert_eq!(probe(ToServer, b"SS", 22), ProbeResult::NeedMore);
    assert_eq!(
        probe(ToServer, b"GETX / HTTP/1.1", 80),
        ProbeResult::Unknown
    );
    let q: &[u8] = &[
        0x1a, 0x2b, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, b'w', b'w',
        b'w', 0x00, 0x00, 0x01, 0x00, 0x01,
    ];
    assert_eq!(probe_udp(ToServer, q, 5353), ProbeResult::Dns);
    assert_eq!(
        probe_udp(ToClient, q, 53),
        ProbeResult::Unknown,
        "a query sent to the client"
    );
    let mut tcpq = (q.len() as u16).to_be_bytes().to_vec();
    tcpq.extend_from_slice(q);
    assert_eq!(probe(ToServer, &tcpq, 53), ProbeResult::Dns);
    assert_eq!(probe(ToServer, &tcpq, 9999), ProbeResult::Dns);
}

#[test]
fn detector_combines_directions() {
    // Server speaks first with an unknown banner; the client's request
    // decides.
    let mut d = ProtocolDetector::new(Transport::Tcp, 8080);
    assert_eq!(
        d.feed(
            Direction::ToClient,
            b"220 welcome to nothing in particular at all.......................\r\n"
        ),
        Detection::Pending
    );
    assert_eq!(
        d.feed(Direction::ToServer, b"GET / HTTP/1.0\r\n"),
        Detection::Detected(AppProto::Http)
    );
    let mut d = ProtocolDetector::new(Transport::Tcp, 80);
    d.feed(Direction::ToServer, &[0u8; 80]);
    assert_eq!(d.feed(Direction::ToClient, &[1u8; 80]), Detection::Failed);
    let mut d = ProtocolDetector::new(Transport::Tcp, 80);
    assert_eq!(d.feed(Direction::ToServer, b"PO"), Detection::Pending);
    assert_eq!(
        d.feed(Direction::ToServer, b"ST /a HTTP/1.1\r\n"),
        Detection::Detected(AppProto::Http)
    );
}

/// The new protocols' probes: SMB over NetBIOS, DCERPC PDUs, SSH banners,
/// FTP and SMTP by command or greeting with the port as a hint.
#[test]
fn probing_new_protocols() {
    use Direction::*;
    let smb2 = b"\x00\x00\x00\x44\xfeSMB\x40\x00";
    assert_eq!(probe(ToServer, smb2, 445), ProbeResult::Smb);
    assert_eq!(probe(ToServer, smb2, 50000), ProbeResult::Smb);
    assert_eq!(
        probe(ToServer, b"\x00\x00\x00\x2f\xffSMB", 139),
        ProbeResult::Smb
    );
    assert_eq!(
        probe(ToServer, b"\x00\x00\x00\x44\xfe", 445),
        ProbeResult::NeedMore
    );
    assert_eq!(
        probe(ToServer, b"\x00\x00\x00\x44GET / HTTP/1.1", 445),
        ProbeResult::Unknown
    );
    let bind = [5u8, 0, 11, 3, 0x10, 0, 0, 0, 0x48, 0, 0, 0, 1, 0, 0, 0];
    assert_eq!(probe(ToServer, &bind, 49444), ProbeResult::Dcerpc);
    assert_eq!(probe(ToServer, &bind[..6], 135), ProbeResult::NeedMore);
    let mut bad = bind;
    bad[1] = 7;
    assert_eq!(probe(ToServer, &bad, 135), ProbeResult::Unknown);
    assert_eq!(probe(ToServer, b"USER anonymous\r\n", 21), ProbeResult::Ftp);
    assert_eq!(probe(ToServer, b"user bob\r\n", 2121), ProbeResult::Ftp);
    assert_eq!(
        probe(ToServer, b"EHLO example.org\r\n", 25),
        ProbeResult::Smtp
    );
    assert_eq!(
        probe(ToClient, b"220 (vsFTPd 3.0.3)\r\n", 2121),
        ProbeResult::Ftp
    );
    assert_eq!(
        probe(ToClient, b"220 mx.example.org ESMTP\r\n", 2525),
        ProbeResult::Smtp
    );
    assert_eq!(probe(ToClient, b"220 welcome\r\n", 21), ProbeResult::Ftp);
    // A greeting longer than the detector looks at is judged on its start.
    let long = b"220 redmint FTP server (Version 6.4/OpenBSD/Linux-ftpd-0.17) ready.\r\n";
    assert_eq!(probe(ToClient, &long[..64], 2121), ProbeResult::Ftp);
    assert_eq!(probe(ToClient, &long[..20], 2121), ProbeResult::NeedMore);
    assert_eq!(probe(ToClient, b"220 welcome\r\n", 587), ProbeResult::Smtp);
    // A bare greeting on another port leaves it to the client.
    assert_eq!(
        probe(ToClient, b"220 welcome here\r\n", 4000),
        ProbeResult::Unknown
    );
    assert_eq!(probe(ToClient, b"220 welc", 4000), ProbeResult::NeedMore);
    assert_eq!(
        probe(ToClient, b"200 OK, fine by me\r\n", 21),
        ProbeResult::Unknown
    );
    let mut d = ProtocolDetector::new(Transport::Tcp, 4000);
    assert_eq!(d.feed(ToClient, b"220 welcome\r\n"), Detection::Pending);
    assert_eq!(
        d.feed(ToServer, b"HELO me\r\n"),
        Detection::Detected(AppProto::Smtp)
    );
}

/// A DCERPC bind and request and their answers (client bytes, server
/// bytes), little-endian, netlogon opnum 26.
fn dcerpc_call() -> (Vec<u8>, Vec<u8>) {
    fn pdu(ptype: u8, call: u8, body: &[u8]) -> Vec<u8> {
        let len = 16 + body.len() as u16;
        let mut v = vec![5, 0, ptype, 3, 0x10, 0, 0, 0];
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(&[0, 0, call, 0, 0, 0]);
        v.extend_from_slice(body);
        v
    }
    let mut bind = vec![0xb8, 0x10, 0xb8, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0];
    bind.extend_from_slice(&[
        0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab, 0xef, 0, 1, 0x23, 0x45, 0x67, 0xcf, 0xfb,
    ]);
    bind.extend_from_slice(&[1, 0, 0, 0]);
    bind.extend_from_slice(&[0x04; 20]);
    let mut ack = vec![0xb8, 0x10, 0xb8, 0x10, 1, 0, 0, 0, 4, 0];
    ack.extend_from_slice(b"135\0\0\0");
    ack.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    ack.extend_from_slice(&[0x04; 20]);
    let mut req = vec![12, 0, 0, 0, 0, 0, 26, 0];
    req.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x2f, 0x21]);
    let mut resp = vec![4, 0, 0, 0, 0, 0, 0, 0];
    resp.extend_from_slice(&[0, 0, 0, 0]);
    let mut client = pdu(11, 1, &bind);
    client.extend(pdu(0, 2, &req));
    let mut server = pdu(12, 1, &ack);
    server.extend(pdu(2, 2, &resp));
    (client, server)
}

/// A DCERPC exchange parses; truncated, oversized (stub past the cap),
/// gap-ridden and garbage input is bounded and ends parsing cleanly.
#[test]
fn dcerpc_truncated_oversized_gap_garbage() {
    let (client, server) = dcerpc_call();
    let mut s = AppLayerState::new(AppProto::Dcerpc, Transport::Tcp);
    assert!(s.feed(Direction::ToServer, &client, 1).is_empty());
    assert!(s.feed(Direction::ToClient, &server, 2).is_empty());
    assert_eq!(s.transactions().len(), 2);
    let stub = s.buffer(1, BufferId::DcerpcStubData, Direction::ToServer);
    assert_eq!(stub.map(<[u8]>::len), Some(12));
    assert_eq!(s.eve(1).unwrap()["req"]["opnum"], 26);

    // Truncated: the last PDU is never complete.
    let mut t = AppLayerState::new(AppProto::Dcerpc, Transport::Tcp);
    t.feed(Direction::ToServer, &client[..client.len() - 1], 1);
    assert_eq!(t.transactions().len(), 1);
    t.finish(Direction::ToServer);

    // Oversized: 40 fragments of 60,000 stub bytes stop at the cap.
    let mut o = AppLayerState::new(AppProto::Dcerpc, Transport::Tcp);
    let mut events = Vec::new();
    for i in 0..40u8 {
        let flags = match i {
            0 => 1,
            39 => 2,
            _ => 0,
        };
        let len = 24 + 60_000u16;
        let mut p = vec![5, 0, 0, flags, 0x10, 0, 0, 0];
        p.extend_from_slice(&len.to_le_bytes());
        p.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0]);
        p.resize(usize::from(len), 0x41);
        events.extend(o.feed(Direction::ToServer, &p, 3));
    }
    let kept = o.buffer(0, BufferId::DcerpcStubData, Direction::ToServer);
    let cap = vigil_applayer::AppLayerConfig::default().dcerpc_max_stub;
    assert_eq!(kept.map(<[u8]>::len), Some(cap));
    assert!(events.iter().any(|e| e.name() == "STUB_LIMIT_REACHED"));
    assert!(o.transactions()[0].progress.request_complete);

    // A gap in the middle of a PDU: framing is lost, nothing more parsed.
    let mut g = AppLayerState::new(AppProto::Dcerpc, Transport::Tcp);
    g.feed(Direction::ToServer, &client[..30], 1);
    let ev = g.on_gap(Direction::ToServer, Some(10));
    assert_eq!(ev[0].keyword(), "dcerpc.stream_gap");
    assert!(!g.wants_data(Direction::ToServer));
    g.feed(Direction::ToServer, &client[40..], 2);
    g.feed(Direction::ToServer, &client, 3);
    assert!(g.transactions().is_empty());

    // Garbage: an event, then nothing.
    let mut x = AppLayerState::new(AppProto::Dcerpc, Transport::Tcp);
    let ev = x.feed(Direction::ToClient, &[0xff; 64], 1);
    assert_eq!(ev[0].keyword(), "dcerpc.invalid_header");
    assert!(!x.wants_data(Direction::ToClient));
    assert!(x.wants_data(Direction::ToServer));
}

/// Truncated and oversized SSH identifications, and a gap before one.
#[test]
fn ssh_truncated_oversized_gap() {
    let mut s = AppLayerState::new(AppProto::Ssh, Transport::Tcp);
    s.feed(Direction::ToServer, b"SSH-2.0-Open", 1);
    assert_eq!(
        s.buffer(0, BufferId::SshSoftware, Direction::ToServer),
        None
    );
    s.finish(Direction::ToServer);
    assert!(s.transactions()[0].progress.request_complete);
    let mut big = b"SSH-2.0-".to_vec();
    big.resize(100_000, b'Z');
    big.extend_from_slice(b"\r\n");
    s.feed(Direction::ToClient, &big, 2);
    let sw = s
        .buffer(0, BufferId::SshSoftware, Direction::ToClient)
        .unwrap();
    assert!(sw.len() <= vigil_applayer::ssh::MAX_LINE);
    let mut g = AppLayerState::new(AppProto::Ssh, Transport::Tcp);
    g.on_gap(Direction::ToClient, Some(10));
    g.feed(Direction::ToClient, b"SSH-2.0-late\r\n", 3);
    assert_eq!(
        g.buffer(0, BufferId::SshSoftware, Direction::ToClient),
        None
    );
}

/// FTP: truncated lines, oversized lines and reply floods stay capped and
/// raise Suricata's events; gaps resynchronise; garbage makes transactions
/// without commands, never a panic.
#[test]
fn ftp_truncated_oversized_gap_garbage() {
    use vigil_applayer::ftp::{MAX_LINE, MAX_REPLY_LINES};
    let mut s = AppLayerState::new(AppProto::Ftp, Transport::Tcp);
    // Truncated: a command without its LF is read at the end.
    s.feed(Direction::ToServer, b"RETR file", 1);
    assert!(s.transactions().is_empty());
    s.finish(Direction::ToServer);
    assert_eq!(
        s.buffer(0, BufferId::FtpCommandData, Direction::ToServer),
        Some(&b"file"[..])
    );
    // Oversized: the line is cut at MAX_LINE with the event.
    let mut big = b"200 ".to_vec();
    big.resize(1_000_000, b'x');
    big.push(b'\n');
    let ev = s.feed(Direction::ToClient, &big, 2);
    assert!(ev
        .iter()
        .any(|e| e.keyword() == "ftp.response_command_too_long"));
    let r = s
        .buffer(0, BufferId::FtpReply, Direction::ToClient)
        .unwrap();
    assert_eq!(r.len(), MAX_LINE - 4);
    assert_eq!(s.eve(0).unwrap()["reply_truncated"], true);
    // A flood of reply lines is capped.
    let mut g = AppLayerState::new(AppProto::Ftp, Transport::Tcp);
    g.feed(Direction::ToClient, &b"220-x\n".repeat(10_000), 1);
    assert_eq!(
        g.buffers(0, BufferId::FtpReply, Direction::ToClient)
            .count(),
        MAX_REPLY_LINES
    );
    // A gap mid-line loses that line only.
    let mut g = AppLayerState::new(AppProto::Ftp, Transport::Tcp);
    g.feed(Direction::ToServer, b"USER a", 1);
    g.on_gap(Direction::ToServer, Some(100));
    g.feed(Direction::ToServer, b"bc\r\nSTOR x\r\n", 2);
    assert_eq!(g.transactions().len(), 1);
    assert_eq!(
        g.buffer(0, BufferId::FtpCommand, Direction::ToServer),
        Some(&b"STOR"[..])
    );
    // Garbage: lines without a known command or a reply code.
    let mut g = AppLayerState::new(AppProto::Ftp, Transport::Tcp);
    g.feed(Direction::ToServer, b"\x00\xff\r\n\n\r\r\n", 1);
    g.feed(Direction::ToClient, b"\x16\x03\x01\n-\n", 1);
    for t in g.transactions() {
        assert_eq!(
            g.buffer(t.id, BufferId::FtpCommand, Direction::ToServer),
            None
        );
        let e = g.eve(t.id).unwrap();
        assert!(e.get("command").is_none() && e.get("completion_code").is_none());
    }
}

/// SIP: truncated, oversized, gap-ridden and garbage input, over TCP and
/// UDP; what does parse is kept, caps hold, anomalies are events.
#[test]
fn sip_truncated_oversized_gap_garbage() {
    let msg = b"REGISTER sip:r.example SIP/2.0\r\nFrom: <sip:a@r.example>\r\nContent-Length: 4\r\n\r\nabcd";
    // UDP: truncated datagram, garbage, then a good one.
    let mut u = AppLayerState::new(AppProto::Sip, Transport::Udp);
    assert_eq!(u.feed(Direction::ToServer, &msg[..20], 1).len(), 1);
    assert_eq!(u.feed(Direction::ToServer, b"\x00\xff garbage", 2).len(), 1);
    assert!(u.feed(Direction::ToServer, msg, 3).is_empty());
    assert_eq!(
        u.buffer(0, BufferId::SipFrom, Direction::ToServer),
        Some(&b"<sip:a@r.example>"[..])
    );
    // TCP: a message split by a gap is lost, the next one parses.
    let mut t = AppLayerState::new(AppProto::Sip, Transport::Tcp);
    t.feed(Direction::ToServer, &msg[..30], 1);
    t.on_gap(Direction::ToServer, Some(100));
    t.feed(Direction::ToServer, &msg[40..], 2);
    t.feed(Direction::ToServer, msg, 3);
    assert_eq!(t.transactions().len(), 1);
    assert_eq!(
        t.buffer(0, BufferId::SipMethod, Direction::ToServer),
        Some(&b"REGISTER"[..])
    );
    // Oversized: a header block with no end, a huge declared body.
    let mut big = b"SIP/2.0 200 OK\r\nX: ".to_vec();
    big.resize(1_000_000, b'y');
    let ev = t.feed(Direction::ToClient, &big, 4);
    assert!(ev.iter().any(|e| e.name() == "INVALID_DATA"));
    let mut o = AppLayerState::new(AppProto::Sip, Transport::Tcp);
    o.feed(
        Direction::ToClient,
        b"SIP/2.0 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
        1,
    );
    for _ in 0..64 {
        o.feed(Direction::ToClient, &[b'z'; 16 * 1024], 2);
    }
    o.finish(Direction::ToClient);
    assert_eq!(o.transactions().len(), 1);
    assert_eq!(
        o.buffer(0, BufferId::SipStatCode, Direction::ToClient),
        Some(&b"200"[..])
    );
}

/// SIP detection: methods and status lines over UDP and TCP, the SIP
/// request line winning over HTTP's shared methods, port 5060 as hint.
#[test]
fn sip_probe() {
    use Direction::*;
    assert_eq!(
        probe_udp(ToServer, b"REGISTER sip:x SIP/2.0\r\n", 40000),
        ProbeResult::Sip
    );
    assert_eq!(
        probe_udp(ToClient, b"SIP/2.0 200 OK\r\n", 40000),
        ProbeResult::Sip
    );
    assert_eq!(
        probe_udp(ToServer, b"REGISTERX", 5060),
        ProbeResult::Unknown
    );
    // SSDP shares NOTIFY but is HTTP over UDP; a line cut short is not
    // enough either.
    assert_eq!(
        probe_udp(
            ToServer,
            b"NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\n",
            1900
        ),
        ProbeResult::Unknown
    );
    assert_eq!(
        probe_udp(ToServer, b"INVITE sip:x", 5060),
        ProbeResult::Unknown
    );
    assert_eq!(probe(ToServer, b"INV", 5060), ProbeResult::NeedMore);
    assert_eq!(probe(ToServer, b"INVITE sip:b", 80), ProbeResult::Sip);
    // NOTIFY is HTTP's too: the line or the port decides.
    assert_eq!(
        probe(ToServer, b"NOTIFY sip:a@b SIP/2.0\r\n", 80),
        ProbeResult::Sip
    );
    assert_eq!(
        probe(ToServer, b"NOTIFY /x HTTP/1.1\r\n", 80),
        ProbeResult::Http
    );
    assert_eq!(probe(ToServer, b"NOTIFY sip:a", 5060), ProbeResult::Sip);
    assert_eq!(
        probe(ToClient, b"SIP/2.0 100 Trying", 5060),
        ProbeResult::Sip
    );
}

/// An AS-REQ (client) and its AS-REP (server), each behind its TCP record
/// marker.
fn krb5_exchange() -> (Vec<u8>, Vec<u8>) {
    use vigil_applayer::krb5::build::*;
    (
        record(&kdc_req(10, Some(&["robin"]), &["krbtgt", "EXAMPLE.ORG"])),
        record(&kdc_rep(11, 18, 23)),
    )
}

/// Kerberos 5: truncated, oversized, gap-ridden and garbage input over
/// TCP and UDP; what parses is kept, anomalies are `malformed_data`.
#[test]
fn krb5_truncated_oversized_gap_garbage() {
    use vigil_applayer::krb5::build::*;
    let (req, rep) = krb5_exchange();
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<&str> {
        ev.iter().map(|e| e.name()).collect()
    };
    // UDP: truncated message, garbage, then a good one.
    let mut u = AppLayerState::new(AppProto::Krb5, Transport::Udp);
    assert_eq!(
        names(&u.feed(Direction::ToServer, &req[4..30], 1)),
        ["MALFORMED_DATA"]
    );
    assert_eq!(
        names(&u.feed(Direction::ToServer, b"\x6a\xff\xff garbage", 2)),
        ["MALFORMED_DATA"]
    );
    assert!(u.feed(Direction::ToServer, &req[4..], 3).is_empty());
    assert_eq!(u.transactions().len(), 1);
    assert_eq!(
        u.buffers(0, BufferId::Krb5Sname, Direction::ToServer)
            .collect::<Vec<_>>(),
        [&b"krbtgt"[..], &b"EXAMPLE.ORG"[..]]
    );
    // Buffers exist in the message's own direction only.
    assert_eq!(u.buffer(0, BufferId::Krb5Cname, Direction::ToClient), None);
    // TCP: a record split by a gap is lost, the next one parses.
    let mut t = AppLayerState::new(AppProto::Krb5, Transport::Tcp);
    t.feed(Direction::ToServer, &req[..30], 1);
    assert_eq!(
        names(&t.on_gap(Direction::ToServer, Some(10))),
        ["MALFORMED_DATA"]
    );
    t.feed(Direction::ToServer, &req[40..], 2);
    t.feed(Direction::ToServer, &req, 3);
    // The weak ticket cipher is not the reply's: no event for it.
    assert!(t.feed(Direction::ToClient, &rep, 4).is_empty());
    assert_eq!(t.transactions().len(), 2);
    let e = t.eve(1).unwrap();
    assert_eq!(e["msg_type"], "KRB_AS_REP");
    assert_eq!(e["ticket_encryption"], "rc4-hmac");
    // Oversized: a record marker past the cap is skipped whole.
    let mut o = AppLayerState::new(AppProto::Krb5, Transport::Tcp);
    let big = 10_000_000u32;
    assert_eq!(
        names(&o.feed(Direction::ToClient, &big.to_be_bytes(), 1)),
        ["MALFORMED_DATA"]
    );
    for _ in 0..(big as usize / 65536) {
        assert!(o.feed(Direction::ToClient, &[0u8; 65536], 2).is_empty());
    }
    o.feed(Direction::ToClient, &[0u8; 10_000_000 % 65536], 2);
    assert!(o.feed(Direction::ToClient, &rep, 3).is_empty());
    assert_eq!(o.transactions().len(), 1);
    // A record cut by the end of the stream.
    o.feed(Direction::ToClient, &rep[..20], 4);
    assert_eq!(names(&o.finish(Direction::ToClient)), ["MALFORMED_DATA"]);
    // Detection: port 88 and Kerberos' shape, over both transports.
    assert_eq!(probe(Direction::ToServer, &req, 88), ProbeResult::Krb5);
    assert_eq!(probe(Direction::ToServer, &req, 8080), ProbeResult::Unknown);
    assert_eq!(
        probe(Direction::ToServer, &req[..8], 88),
        ProbeResult::NeedMore
    );
    assert_eq!(
        probe_udp(Direction::ToServer, &req[4..], 88),
        ProbeResult::Krb5
    );
    assert_eq!(
        probe_udp(Direction::ToServer, b"\x00\x01garbage-garbage", 88),
        ProbeResult::Unknown
    );
    let _ = krb_error(6);
}

/// SNMP: truncated, oversized, garbage input, v3 without USM; what
/// parses is kept, anomalies are events.
#[test]
fn snmp_truncated_oversized_garbage() {
    use vigil_applayer::snmp::build::*;
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<&str> {
        ev.iter().map(|e| e.name()).collect()
    };
    let req = message(1, "public", 0, &["1.3.6.1.2.1.1.1.0"]);
    let mut u = AppLayerState::new(AppProto::Snmp, Transport::Udp);
    assert_eq!(
        names(&u.feed(Direction::ToServer, &req[..req.len() - 3], 1)),
        ["MALFORMED_DATA"]
    );
    assert_eq!(
        names(&u.feed(Direction::ToServer, b"\x30\xff garbage", 2)),
        ["MALFORMED_DATA"]
    );
    assert!(u.feed(Direction::ToServer, &req, 3).is_empty());
    assert_eq!(
        u.buffer(0, BufferId::SnmpCommunity, Direction::ToServer),
        Some(&b"public"[..])
    );
    // Buffers exist in the message's own direction only.
    assert_eq!(
        u.buffer(0, BufferId::SnmpCommunity, Direction::ToClient),
        None
    );
    // A v1 message on a v2c flow; a v3 message without USM.
    assert_eq!(
        names(&u.feed(Direction::ToClient, &message(0, "public", 2, &[]), 4)),
        ["VERSION_MISMATCH"]
    );
    let ev = u.feed(Direction::ToServer, &v3("bob", 7, false), 5);
    assert_eq!(names(&ev), ["VERSION_MISMATCH", "UNKNOWN_SECURITY_MODEL"]);
    // Oversized: a trap with thousands of variables keeps a capped list.
    let oids: Vec<String> = (0..5000).map(|i| format!("1.3.6.1.2.1.{i}")).collect();
    let refs: Vec<&str> = oids.iter().map(String::as_str).collect();
    let big = message(1, "public", 2, &refs);
    let mut o = AppLayerState::new(AppProto::Snmp, Transport::Udp);
    assert!(o.feed(Direction::ToClient, &big, 1).is_empty());
    let e = o.eve(0).unwrap();
    assert_eq!(
        e["vars"].as_array().unwrap().len(),
        vigil_applayer::snmp::MAX_VARS
    );
    // A gap means nothing over UDP.
    assert!(o.on_gap(Direction::ToClient, Some(10)).is_empty());
    // Detection: SNMP's ports and the message's shape.
    assert_eq!(probe_udp(Direction::ToServer, &req, 161), ProbeResult::Snmp);
    assert_eq!(
        probe_udp(
            Direction::ToServer,
            &trap_v1("p", "1.3.6.1.4.1", [1, 2, 3, 4], 0),
            162
        ),
        ProbeResult::Snmp
    );
    assert_eq!(
        probe_udp(Direction::ToServer, &req, 5000),
        ProbeResult::Unknown
    );
    assert_eq!(
        probe_udp(Direction::ToServer, &req[..10], 161),
        ProbeResult::Unknown
    );
}

/// IKE: truncated, oversized, garbage input, v1 and v2; what parses is
/// kept, anomalies are events.
#[test]
fn ike_truncated_oversized_garbage() {
    use vigil_applayer::ike::build::*;
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<&str> {
        ev.iter().map(|e| e.name()).collect()
    };
    let [i1, r1, ..] = v1_main_mode();
    let mut u = AppLayerState::new(AppProto::Ike, Transport::Udp);
    assert_eq!(
        names(&u.feed(Direction::ToServer, &i1[..40], 1)),
        ["MALFORMED_DATA"]
    );
    assert_eq!(
        names(&u.feed(Direction::ToServer, &[0xff; 30], 2)),
        ["MALFORMED_DATA"]
    );
    assert!(u.feed(Direction::ToServer, &i1, 3).is_empty());
    assert!(u.feed(Direction::ToClient, &r1, 4).is_empty());
    assert_eq!(u.transactions().len(), 2);
    assert_eq!(
        u.buffer(0, BufferId::IkeInitSpi, Direction::ToServer),
        Some(&b"e47a591fd057587f"[..])
    );
    // Buffers exist in the message's own direction only.
    assert_eq!(u.buffer(0, BufferId::IkeInitSpi, Direction::ToClient), None);
    // Oversized: 200 vendor IDs keep a capped list; a chain of more than
    // 256 payloads is malformed.
    let chain = |n: u16| {
        let mut p = Vec::new();
        for i in 0..n {
            let next = if i + 1 == n { 0 } else { 13 };
            p.extend(payload(next, &i.to_be_bytes()));
        }
        message(0x10, 2, 0, [1, 0], 13, &p)
    };
    let mut o = AppLayerState::new(AppProto::Ike, Transport::Udp);
    assert!(o.feed(Direction::ToServer, &chain(200), 1).is_empty());
    assert_eq!(
        o.buffers(0, BufferId::IkeVendor, Direction::ToServer)
            .count(),
        vigil_applayer::ike::MAX_ITEMS
    );
    assert_eq!(
        names(&o.feed(Direction::ToServer, &chain(3000), 1)),
        ["MALFORMED_DATA"]
    );
    // A payload chain that loops on zero lengths is malformed, not a hang.
    let mut z = message(0x10, 2, 0, [1, 0], 13, &[13, 0, 0, 0, 13, 0, 0, 0]);
    z.truncate(36);
    assert_eq!(
        names(&o.feed(Direction::ToServer, &z, 2)),
        ["MALFORMED_DATA"]
    );
    // A gap means nothing over UDP.
    assert!(o.on_gap(Direction::ToClient, Some(10)).is_empty());
    // Detection: IKE's ports and header.
    assert_eq!(probe_udp(Direction::ToServer, &i1, 500), ProbeResult::Ike);
    let mut nat = vec![0, 0, 0, 0];
    nat.extend_from_slice(&i1);
    assert_eq!(probe_udp(Direction::ToServer, &nat, 4500), ProbeResult::Ike);
    assert_eq!(
        probe_udp(Direction::ToServer, &i1, 5000),
        ProbeResult::Unknown
    );
    assert_eq!(
        probe_udp(Direction::ToServer, &i1[..27], 500),
        ProbeResult::Unknown
    );
}
