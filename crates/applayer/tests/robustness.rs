//! No input makes a parser panic, whatever the bytes and however they are
//! split; detection by content accepts real first bytes.

use proptest::prelude::*;
use vigil_applayer::probe::{Detection, ProtocolDetector};
use vigil_applayer::{
    probe, probe_udp, transforms, AppLayerState, AppProto, BufferId, Direction, ProbeResult,
    Transport, UintField,
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
        for &f in UintField::ALL {
            let _ = s.uints(t.id, f, Direction::ToServer);
        }
        // The record's text is what serde_json writes for the object's
        // tree (the busiest protocols write it directly): keys in order,
        // strings escaped alike, a key once.
        if let Some(text) = s.eve_text(t.id, false) {
            let mut want = serde_json::to_string(&s.eve(t.id).unwrap()).unwrap();
            for (key, obj) in s.eve_siblings(t.id) {
                want.push_str(&format!(
                    ",\"{key}\":{}",
                    serde_json::to_string(&obj).unwrap()
                ));
            }
            assert_eq!(text, want);
        }
        // The files of each side, as detection and the fileinfo log
        // read them.
        for dir in [Direction::ToServer, Direction::ToClient] {
            for f in vigil_applayer::files::tx_files(&s, t.id, dir) {
                let t = vigil_applayer::files::track(&f, 0xf, true, true, false);
                let _ = t.eve(0, None);
            }
        }
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
    fn http2_never_panics(c in seeded(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x04\x00\x00\xff\xff\x00\x00\x03\x01\x05\x00\x00\x00\x01\x82\x84\x86")) {
        exercise(AppProto::Http2, Transport::Tcp, &c);
    }

    #[test]
    fn http2_arbitrary(c in chunks()) {
        exercise(AppProto::Http2, Transport::Tcp, &c);
    }

    #[test]
    fn mqtt_never_panics(c in seeded(b"\x10\x2f\x00\x04MQTT\x05\xc2\x00\x3c\x03\x21\x00\x14")) {
        exercise(AppProto::Mqtt, Transport::Tcp, &c);
    }

    #[test]
    fn smtp_never_panics(c in seeded(b"EHLO a\r\nMAIL FROM:<a@b>\r\nRCPT TO:<c@d>\r\nDATA\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Transfer-Encoding: base64\r\n\r\n")) {
        exercise(AppProto::Smtp, Transport::Tcp, &c);
    }

    #[test]
    fn mqtt_arbitrary(c in chunks()) {
        exercise(AppProto::Mqtt, Transport::Tcp, &c);
    }

    #[test]
    fn ftp_data_never_panics(c in chunks()) {
        exercise(AppProto::FtpData, Transport::Tcp, &c);
    }

    /// The control lines the engine's expectation table reads, from any
    /// packet: announcements and transfers, whole or cut anywhere.
    #[test]
    fn ftp_control_lines_never_panic(
        c in seeded(b"227 Entering Passive Mode (10,0,0,2,"),
        d in seeded(b"EPRT |2|::1|"),
        e in seeded(b"229 ok (|||"),
    ) {
        use vigil_applayer::ftpdata::{control_line, ControlLine};
        for (_, b) in c.iter().chain(&d).chain(&e) {
            for cut in [0, b.len() / 2, b.len()] {
                if let Some(ControlLine::Transfer(i)) = control_line(&b[..cut]) {
                    prop_assert!(i.filename.len() <= vigil_applayer::ftpdata::MAX_FILENAME);
                }
            }
        }
    }

    #[test]
    fn rfb_never_panics(c in seeded(b"RFB 003.008\nRFB 003.008\n\x01\x02\x02")) {
        exercise(AppProto::Rfb, Transport::Tcp, &c);
    }

    #[test]
    fn rfb_arbitrary(c in chunks()) {
        exercise(AppProto::Rfb, Transport::Tcp, &c);
    }

    #[test]
    fn pop3_never_panics(c in seeded(b"RETR 1\r\n+OK\r\nSubject: x\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n")) {
        exercise(AppProto::Pop3, Transport::Tcp, &c);
    }

    #[test]
    fn pop3_arbitrary(c in chunks()) {
        exercise(AppProto::Pop3, Transport::Tcp, &c);
    }

    #[test]
    fn rdp_never_panics(c in seeded(b"\x03\x00\x00\x13\x0e\xe0\x00\x00\x00\x00\x00\x01\x00\x08\x00\x03\x00\x00\x00")) {
        exercise(AppProto::Rdp, Transport::Tcp, &c);
    }

    #[test]
    fn rdp_arbitrary(c in chunks()) {
        exercise(AppProto::Rdp, Transport::Tcp, &c);
    }

    #[test]
    fn websocket_never_panics(c in seeded(b"\x81\xfe\x00\x10\x01\x02\x03\x04")) {
        exercise(AppProto::WebSocket, Transport::Tcp, &c);
    }

    #[test]
    fn websocket_arbitrary(c in chunks()) {
        exercise(AppProto::WebSocket, Transport::Tcp, &c);
    }

    #[test]
    fn pgsql_never_panics(c in seeded(b"\x00\x00\x00\x17\x00\x03\x00\x00user\x00u\x00\x00Q\x00\x00\x00\x09sel")) {
        exercise(AppProto::Pgsql, Transport::Tcp, &c);
    }

    #[test]
    fn pgsql_arbitrary(c in chunks()) {
        exercise(AppProto::Pgsql, Transport::Tcp, &c);
    }

    #[test]
    fn dhcp_never_panics(c in seeded(b"\x01\x01\x06\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x63\x82\x53\x63\x35\x01\x03")) {
        exercise(AppProto::Dhcp, Transport::Udp, &c);
    }

    #[test]
    fn dhcp_arbitrary(c in chunks()) {
        exercise(AppProto::Dhcp, Transport::Udp, &c);
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
    fn enip_never_panics(c in seeded(&[0x6f, 0, 16, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0xb2, 0, 8, 0, 0x0e, 3, 0x20, 1, 0x24, 1, 0x30, 7])) {
        exercise(AppProto::Enip, Transport::Tcp, &c);
    }

    #[test]
    fn enip_arbitrary(c in chunks()) {
        exercise(AppProto::Enip, Transport::Tcp, &c);
        exercise(AppProto::Enip, Transport::Udp, &c);
    }

    #[test]
    fn ldap_never_panics(c in seeded(&[0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00])) {
        exercise(AppProto::Ldap, Transport::Tcp, &c);
        exercise(AppProto::Ldap, Transport::Udp, &c);
    }

    #[test]
    fn ldap_arbitrary(c in chunks()) {
        exercise(AppProto::Ldap, Transport::Tcp, &c);
        exercise(AppProto::Ldap, Transport::Udp, &c);
    }

    #[test]
    fn nfs_never_panics(c in seeded(&[0x80, 0, 0, 0x60, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0x86, 0xa3, 0, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0])) {
        exercise(AppProto::Nfs, Transport::Tcp, &c);
        let udp: Vec<(bool, Vec<u8>)> = c.iter().map(|(d, b)| (*d, b.get(4..).unwrap_or_default().to_vec())).collect();
        exercise(AppProto::Nfs, Transport::Udp, &udp);
    }

    #[test]
    fn tftp_never_panics(c in seeded(b"\x00\x01file\x00octet\x00")) {
        exercise(AppProto::Tftp, Transport::Udp, &c);
    }

    #[test]
    fn nfs_arbitrary(c in chunks()) {
        exercise(AppProto::Nfs, Transport::Tcp, &c);
        exercise(AppProto::Nfs, Transport::Udp, &c);
    }

    #[test]
    fn quic_never_panics(c in seeded(&[0xc3, 0, 0, 0, 1, 8, 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08, 0, 0, 0x41, 0x00])) {
        exercise(AppProto::Quic, Transport::Udp, &c);
    }

    #[test]
    fn quic_arbitrary(c in chunks()) {
        exercise(AppProto::Quic, Transport::Udp, &c);
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
    fn smb2_never_panics(c in seeded(b"\x00\x00\x00\x78\xfeSMB\x40\x00\x00\x00\x00\x00\x00\x00\x09\x00")) {
        exercise(AppProto::Smb, Transport::Tcp, &c);
    }

    #[test]
    fn smb1_never_panics(c in seeded(b"\x00\x00\x00\x50\xffSMB\x2f\x00\x00\x00\x00\x18\x01\xc8")) {
        exercise(AppProto::Smb, Transport::Tcp, &c);
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
    assert_eq!(probe_udp(ToServer, q, 53), ProbeResult::Dns);
    // Over UDP, DNS is DNS on its port only (Suricata's probing parser):
    // NetBIOS and DNSCrypt's port 443 are not; mDNS's and LLMNR's ports
    // are those protocols.
    for port in [137, 443] {
        assert_eq!(probe_udp(ToServer, q, port), ProbeResult::Unknown, "{port}");
    }
    assert_eq!(probe_udp(ToServer, q, 5353), ProbeResult::Mdns);
    assert_eq!(probe_udp(ToServer, q, 5355), ProbeResult::Llmnr);
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

/// HTTP/2: truncated, oversized, gap-ridden and garbage input; what does
/// parse is kept, caps hold, anomalies are events.
#[test]
fn http2_truncated_oversized_gap_garbage() {
    fn frame(t: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len() as u32;
        let mut v = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, t, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }
    let preface = vigil_applayer::http2::PREFACE;
    // GET / (static table: :method GET, :path /, :scheme http).
    let get = frame(1, 0x5, 1, &[0x82, 0x84, 0x86]);
    // Truncated: a frame header cut short, then the end of the flow.
    let mut t = AppLayerState::new(AppProto::Http2, Transport::Tcp);
    let mut c = preface.to_vec();
    c.extend_from_slice(&get);
    c.extend_from_slice(&get[..5]);
    assert!(t.feed(Direction::ToServer, &c, 1).is_empty());
    let ev = t.finish(Direction::ToServer);
    assert!(ev.iter().any(|e| e.name() == "INVALID_FRAME_HEADER"));
    assert_eq!(
        t.buffer(0, BufferId::HttpMethod, Direction::ToServer),
        Some(&b"GET"[..])
    );
    // Oversized: a 16 MB frame is skipped (never buffered), the next one
    // parses; a body beyond the limit is cut.
    let mut o = AppLayerState::new(AppProto::Http2, Transport::Tcp);
    o.feed(Direction::ToServer, preface, 1);
    let mut big = frame(0, 0, 1, &[]);
    big[..3].copy_from_slice(&[0xff, 0xff, 0xff]);
    let ev = o.feed(Direction::ToServer, &big, 2);
    assert!(ev.iter().any(|e| e.name() == "LONG_FRAME_DATA"));
    for _ in 0..1023 {
        o.feed(Direction::ToServer, &[b'z'; 16 * 1024], 3);
    }
    o.feed(Direction::ToServer, &[b'z'; 16 * 1024 - 1], 3);
    o.feed(
        Direction::ToServer,
        &frame(1, 0x4, 3, &[0x82, 0x84, 0x86]),
        4,
    );
    for _ in 0..20 {
        o.feed(Direction::ToServer, &frame(0, 0, 3, &[b'b'; 16 * 1024]), 5);
    }
    let tx = o.transactions().last().expect("stream 3").id;
    assert_eq!(
        o.buffer(tx, BufferId::HttpMethod, Direction::ToServer),
        Some(&b"GET"[..])
    );
    let body = o
        .buffer(tx, BufferId::HttpRequestBody, Direction::ToServer)
        .expect("body");
    assert_eq!(
        body.len(),
        vigil_applayer::AppLayerConfig::default().http_request_body_limit
    );
    // Gap: the direction is dropped, the other one goes on.
    let mut g = AppLayerState::new(AppProto::Http2, Transport::Tcp);
    g.feed(Direction::ToServer, &preface[..10], 1);
    let ev = g.on_gap(Direction::ToServer, Some(100));
    assert!(ev.iter().any(|e| e.name() == "REASSEMBLY_GAP"));
    assert!(!g.wants_data(Direction::ToServer));
    assert!(g.feed(Direction::ToServer, &get, 2).is_empty());
    g.feed(Direction::ToClient, &frame(1, 0x5, 1, &[0x88]), 3);
    assert_eq!(
        g.buffer(0, BufferId::HttpStatCode, Direction::ToClient),
        Some(&b"200"[..])
    );
    // Garbage: a wrong preface, then garbage on the server side.
    let mut b = AppLayerState::new(AppProto::Http2, Transport::Tcp);
    let ev = b.feed(Direction::ToServer, b"GET / HTTP/1.1\r\n\r\n", 1);
    assert!(ev.iter().any(|e| e.name() == "INVALID_CLIENT_MAGIC"));
    let ev = b.feed(
        Direction::ToClient,
        &frame(1, 0x5, 1, &[0xff, 0xff, 0x7f]),
        2,
    );
    assert!(ev.iter().any(|e| e.name() == "INVALID_HEADER"));
}

/// HTTP/2 detection: the client preface on any port.
#[test]
fn http2_probe() {
    use Direction::*;
    let p = vigil_applayer::http2::PREFACE;
    assert_eq!(probe(ToServer, p, 8080), ProbeResult::Http2);
    assert_eq!(probe(ToServer, &p[..10], 80), ProbeResult::NeedMore);
    assert_eq!(
        probe(ToServer, b"PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n", 80),
        ProbeResult::Unknown
    );
    assert_eq!(
        probe(ToServer, b"GET / HTTP/1.1\r\n", 80),
        ProbeResult::Http
    );
}

/// MQTT: truncated, oversized, gap-ridden and garbage input; what parses
/// is kept, anomalies are events, oversized packets are skipped.
#[test]
fn mqtt_truncated_oversized_gap_garbage() {
    let connect = b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00";
    let mut s = AppLayerState::new(AppProto::Mqtt, Transport::Tcp);
    s.feed(Direction::ToServer, connect, 1);
    s.feed(Direction::ToClient, b"\x20\x02\x00\x00", 2);
    // Truncated: a PUBLISH cut by the end of the stream.
    s.feed(Direction::ToServer, b"\x30\x10\x00\x03abc", 3);
    let ev = s.finish(Direction::ToServer);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].name(), "malformed_traffic");
    assert_eq!(
        s.buffer(0, BufferId::MqttConnectProtocolString, Direction::ToServer),
        Some(&b"MQTT"[..])
    );
    // Garbage from the server: unassigned type, then a body that does not
    // parse; framing holds.
    let ev = s.feed(Direction::ToClient, b"\x00\x00\x82\x01\x00\xd0\x00", 4);
    let names: Vec<&str> = ev.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["unassigned_msg_type", "malformed_traffic"]);
    assert_eq!(
        s.uints(4, UintField::MqttType, Direction::ToClient),
        vec![13]
    );
    // Oversized: a 200 MB PUBLISH is skipped without being kept.
    let mut o = AppLayerState::new(AppProto::Mqtt, Transport::Tcp);
    o.feed(Direction::ToServer, connect, 1);
    o.feed(Direction::ToServer, b"\x30\x80\x80\x80\x60", 2);
    for _ in 0..64 {
        o.feed(Direction::ToServer, &[b'z'; 16 * 1024], 3);
    }
    assert_eq!(o.transactions().len(), 2);
    assert!(o.eve(1).unwrap().get("truncated").is_some());
    // A gap: the direction stops, the other goes on.
    let mut g = AppLayerState::new(AppProto::Mqtt, Transport::Tcp);
    g.feed(Direction::ToServer, &connect[..5], 1);
    g.on_gap(Direction::ToServer, Some(10));
    g.feed(Direction::ToServer, connect, 2);
    assert!(g.transactions().is_empty());
    assert!(!g.wants_data(Direction::ToServer));
    g.feed(Direction::ToClient, b"\xd0\x00", 3);
    assert_eq!(g.transactions().len(), 1);
}

/// MQTT detection: the client's CONNECT, on MQTT's port only (as
/// Suricata's probe).
#[test]
fn mqtt_probe() {
    use Direction::*;
    let c = b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00";
    assert_eq!(probe(ToServer, c, 1883), ProbeResult::Mqtt);
    assert_ne!(probe(ToServer, c, 40000), ProbeResult::Mqtt);
    assert_eq!(probe(ToServer, &c[..4], 1883), ProbeResult::NeedMore);
    assert_ne!(
        probe(ToClient, b"\x20\x02\x00\x00", 1883),
        ProbeResult::Mqtt
    );
    let mut d = ProtocolDetector::new(Transport::Tcp, 1883);
    assert_eq!(d.feed(ToServer, c), Detection::Detected(AppProto::Mqtt));
}

/// RFB: truncated, oversized, gap-ridden and garbage handshakes; what was
/// read is kept, anomalies are events, the flow is let go at the end.
#[test]
fn rfb_truncated_oversized_gap_garbage() {
    use Direction::*;
    let mut s = AppLayerState::new(AppProto::Rfb, Transport::Tcp);
    s.feed(ToClient, b"RFB 003.008\n", 1);
    s.feed(ToServer, b"RFB 003.008\n", 2);
    // Truncated: the type list is cut, then the stream ends.
    s.feed(ToClient, b"\x03\x02", 3);
    s.finish(ToClient);
    assert_eq!(s.transactions().len(), 1);
    assert!(s.transactions()[0].progress.response_complete);
    assert!(!s.wants_data(ToServer));
    assert_eq!(s.eve(0).unwrap()["client_protocol_version"]["minor"], "008");
    // Garbage instead of a version line.
    let mut g = AppLayerState::new(AppProto::Rfb, Transport::Tcp);
    let ev = g.feed(ToClient, b"HTTP/1.1 200 OK\r\n\r\n", 1);
    assert_eq!(ev[0].name(), "malformed_message");
    // Oversized: a client flooding before the server spoke.
    let mut o = AppLayerState::new(AppProto::Rfb, Transport::Tcp);
    let mut names = Vec::new();
    for _ in 0..64 {
        names.extend(
            o.feed(ToServer, &[b'z'; 16 * 1024], 2)
                .iter()
                .map(|e| e.name()),
        );
    }
    assert_eq!(names, ["confused_state"]);
    // A gap: the handshake stops where it was.
    let mut p = AppLayerState::new(AppProto::Rfb, Transport::Tcp);
    p.feed(ToClient, b"RFB 003.0", 1);
    p.on_gap(ToClient, Some(3));
    p.feed(ToClient, b"08\n", 2);
    assert!(p.eve(0).unwrap().get("server_protocol_version").is_none());
}

/// RFB detection: the version line, from either side.
#[test]
fn rfb_probe() {
    use Direction::*;
    assert_eq!(probe(ToClient, b"RFB 003.008\n", 5900), ProbeResult::Rfb);
    assert_eq!(probe(ToServer, b"RFB 003.003\n", 40000), ProbeResult::Rfb);
    assert_eq!(probe(ToClient, b"RFB 00", 5900), ProbeResult::NeedMore);
    assert_ne!(probe(ToClient, b"RFB x", 5900), ProbeResult::Rfb);
}

/// A DHCP message of `op` with the given options after the cookie.
fn dhcp_message(op: u8, opts: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 240];
    b[0] = op;
    b[2] = 6;
    b[236..240].copy_from_slice(&[0x63, 0x82, 0x53, 0x63]);
    b.extend_from_slice(opts);
    b
}

/// DHCP: truncated, oversized and garbage datagrams; each is a
/// transaction of its direction, anomalies are events.
#[test]
fn dhcp_truncated_oversized_garbage() {
    use Direction::*;
    let mut s = AppLayerState::new(AppProto::Dhcp, Transport::Udp);
    // Truncated options: what came before the cut is kept.
    let ev = s.feed(
        ToClient,
        &dhcp_message(2, b"\x35\x01\x05\x33\x04\x00\x00"),
        1,
    );
    assert_eq!(ev[0].name(), "truncated_options");
    assert_eq!(s.eve(0).unwrap()["dhcp_type"], "ack");
    assert!(s.uints(0, UintField::DhcpLeasetime, ToClient).is_empty());
    // Garbage.
    let ev = s.feed(ToServer, b"\xde\xad", 2);
    assert_eq!(ev[0].name(), "malformed_options");
    // Oversized: 64 KiB of options, each parsed, none kept past the
    // datagram.
    let mut opts = Vec::new();
    while opts.len() < 65_000 {
        opts.extend_from_slice(b"\x3c\x05abcde");
    }
    let ev = s.feed(ToServer, &dhcp_message(1, &opts), 3);
    assert!(ev.is_empty());
    assert_eq!(
        s.buffer(2, BufferId::DhcpVendorClassId, ToServer),
        Some(&b"abcde"[..])
    );
    // Gaps and ends do nothing to a datagram protocol.
    s.on_gap(ToServer, None);
    s.finish(ToServer);
    assert_eq!(s.transactions().len(), 3);
}

/// DHCP detection: the BOOTP header and cookie on ports 67/68.
#[test]
fn dhcp_probe() {
    use Direction::*;
    let m = dhcp_message(1, b"\xff");
    assert_eq!(probe_udp(ToServer, &m, 67), ProbeResult::Dhcp);
    assert_eq!(
        probe_udp(ToClient, &dhcp_message(2, b""), 68),
        ProbeResult::Dhcp
    );
    assert_ne!(probe_udp(ToServer, &m, 5353), ProbeResult::Dhcp);
    assert_ne!(probe_udp(ToServer, &m[..100], 67), ProbeResult::Dhcp);
}

/// An SMB2 message in an NBSS record (session 0x11, tree `tree`).
fn smb2_msg(cmd: u16, resp: bool, msg_id: u64, tree: u32, body: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\xfeSMB");
    h[4] = 64;
    h[12..14].copy_from_slice(&cmd.to_le_bytes());
    h[16] = u8::from(resp);
    h[24..32].copy_from_slice(&msg_id.to_le_bytes());
    h[36..40].copy_from_slice(&tree.to_le_bytes());
    h[40] = 0x11;
    h.extend_from_slice(body);
    let n = h.len();
    let mut v = vec![0, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    v.extend(h);
    v
}

/// A tree connect request to `path` (UTF-16LE).
fn smb2_tree_connect(msg_id: u64, path: &str) -> Vec<u8> {
    let p: Vec<u8> = path.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let mut b = vec![9, 0, 0, 0, 72, 0];
    b.extend_from_slice(&(p.len() as u16).to_le_bytes());
    b.extend(p);
    smb2_msg(3, false, msg_id, 0, &b)
}

/// SMB: truncated, oversized, gap-ridden and garbage input; what does
/// parse is kept, caps hold, anomalies are events.
#[test]
fn smb_truncated_oversized_gap_garbage() {
    let tc = smb2_tree_connect(1, "\\\\srv\\share");
    // Truncated: a record cut short is not a transaction; the stream
    // ending completes nothing that was not there.
    let mut s = AppLayerState::new(AppProto::Smb, Transport::Tcp);
    assert!(s
        .feed(Direction::ToServer, &tc[..tc.len() - 3], 1)
        .is_empty());
    s.finish(Direction::ToServer);
    assert!(s.transactions().is_empty());
    // A gap in the middle of a record: framing found again at the next.
    let mut s = AppLayerState::new(AppProto::Smb, Transport::Tcp);
    s.feed(Direction::ToServer, &tc[..30], 1);
    s.on_gap(Direction::ToServer, Some(500));
    s.feed(Direction::ToServer, &tc[50..], 2);
    s.feed(
        Direction::ToServer,
        &smb2_tree_connect(2, "\\\\srv\\two"),
        3,
    );
    assert_eq!(s.transactions().len(), 1);
    assert_eq!(
        s.buffer(0, BufferId::SmbShare, Direction::ToServer),
        Some(&b"\\\\srv\\two"[..])
    );
    // Garbage: not SMB in an NBSS message, a bad NBSS type.
    let mut g = AppLayerState::new(AppProto::Smb, Transport::Tcp);
    let ev = g.feed(Direction::ToServer, b"\x00\x00\x00\x05hello", 1);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].name(), "MALFORMED_DATA");
    let ev = g.feed(Direction::ToServer, b"\x42\xff\xff\xffxxxxxxxxxxxxxxxx", 2);
    assert_eq!(ev.len(), 1);
    g.feed(Direction::ToServer, &tc, 3);
    assert_eq!(g.transactions().len(), 1);
    // Oversized: a 16 MiB record (24-bit length) is skipped past its
    // buffered part with RECORD_OVERFLOW; the next record parses.
    let mut o = AppLayerState::new(AppProto::Smb, Transport::Tcp);
    let mut ev = o.feed(Direction::ToServer, b"\x00\xff\xff\xff\xfeSMB", 1);
    let chunk = vec![0x41u8; 64 * 1024];
    let mut left = 0xff_ffffusize - 4;
    while left > 0 {
        let n = left.min(chunk.len());
        ev.extend(o.feed(Direction::ToServer, &chunk[..n], 2));
        left -= n;
    }
    ev.extend(o.feed(Direction::ToServer, &tc, 3));
    assert!(ev.iter().any(|e| e.name() == "RECORD_OVERFLOW"));
    assert_eq!(
        o.buffer(0, BufferId::SmbShare, Direction::ToServer),
        Some(&b"\\\\srv\\share"[..])
    );
    // Many transactions: capped.
    let mut m = AppLayerState::new(AppProto::Smb, Transport::Tcp);
    for i in 0..2000 {
        m.feed(Direction::ToServer, &smb2_tree_connect(i, "\\\\a\\b"), i);
    }
    assert!(m.transactions().len() <= 512);
    // Writes of a file beyond the per-file cap keep at most the cap.
    let mut w = AppLayerState::new(AppProto::Smb, Transport::Tcp);
    let fid = [3u8; 16];
    for i in 0..40u64 {
        let data = vec![b'z'; 60_000];
        let mut b = vec![0u8; 48];
        b[0] = 49;
        b[2..4].copy_from_slice(&112u16.to_le_bytes());
        b[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes());
        b[8..16].copy_from_slice(&(i * 60_000).to_le_bytes());
        b[16..32].copy_from_slice(&fid);
        b.extend(data);
        w.feed(Direction::ToServer, &smb2_msg(9, false, 10 + i, 5, &b), i);
    }
    let t = w.transactions()[0].id;
    let data = w
        .buffer(t, BufferId::FileData, Direction::ToServer)
        .unwrap();
    assert_eq!(data.len(), vigil_applayer::smb::MAX_FILE_DATA);
}

/// SMB detection on port 139: a NetBIOS session request (encoded names)
/// or a short NBSS record followed by an SMB message is SMB; other
/// NBSS-like bytes are not.
#[test]
fn smb_probe_netbios_session() {
    use Direction::*;
    let mut req = vec![0x81, 0, 0, 0x44, 0x20];
    req.extend_from_slice(b"EMEPEDEBEMEIEPFDFECACACACACACAAA");
    req.push(0);
    req.push(0x20);
    req.extend_from_slice(b"FDEFEMEFEDFEFCEPFCCACACACACACAAA");
    req.push(0);
    assert_eq!(probe(ToServer, &req, 139), ProbeResult::Smb);
    assert_eq!(probe(ToServer, &req[..10], 139), ProbeResult::NeedMore);
    let mut bad = req.clone();
    bad[8] = b'z';
    assert_eq!(probe(ToServer, &bad, 139), ProbeResult::Unknown);
    // Positive response, then the server's SMB message.
    let resp = b"\x82\x00\x00\x00\x00\x00\x00\x55\xffSMBr";
    assert_eq!(probe(ToClient, resp, 139), ProbeResult::Smb);
    assert_eq!(probe(ToClient, &resp[..4], 139), ProbeResult::NeedMore);
    assert_ne!(
        probe(ToClient, b"\x82\x00\x00\x00HTTP/1.1", 139),
        ProbeResult::Smb
    );
    // The parser skips the session records.
    let mut s = AppLayerState::new(AppProto::Smb, Transport::Tcp);
    let mut d = req.clone();
    d.extend(smb2_tree_connect(1, "\\\\a\\b"));
    assert!(s.feed(ToServer, &d, 1).is_empty());
    assert_eq!(s.transactions().len(), 1);
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

/// SMTP: truncated, oversized, gap-ridden and garbage input; commands,
/// replies and mail lines are capped, a gap resyncs on the next command.
#[test]
fn smtp_truncated_oversized_gap_garbage() {
    use Direction::{ToClient, ToServer};
    let names = |ev: Vec<vigil_applayer::AppLayerEvent>| -> Vec<&'static str> {
        ev.iter().map(|e| e.name()).collect()
    };
    // Truncated: the stream ends within the DATA; what came is kept.
    let mut s = AppLayerState::new(AppProto::Smtp, Transport::Tcp);
    s.feed(ToClient, b"220 hi\r\n", 1);
    s.feed(
        ToServer,
        b"HELO h\r\nMAIL FROM:<a@b>\r\nDATA\r\nSubject: cut\r\n\r\nbody that st",
        2,
    );
    s.finish(ToServer);
    assert_eq!(
        s.buffer(0, BufferId::EmailSubject, ToServer),
        Some(&b"cut"[..])
    );
    assert_eq!(
        s.buffer(0, BufferId::FileData, ToServer),
        Some(&b"body that st"[..])
    );
    assert!(s.transactions()[0].progress.request_complete);
    // Oversized: a 1 MB command line, reply line and header are capped.
    let mut o = AppLayerState::new(AppProto::Smtp, Transport::Tcp);
    o.feed(ToClient, b"220 hi\r\n", 1);
    let ev = o.feed(ToServer, b"MAIL FROM:<", 2);
    assert!(ev.is_empty());
    let mut ev = Vec::new();
    for _ in 0..64 {
        ev.extend(o.feed(ToServer, &[b'z'; 16 * 1024], 3));
        ev.extend(o.feed(ToClient, &[b'5'; 16 * 1024], 3));
    }
    ev.extend(o.feed(ToServer, b">\r\n", 4));
    ev.extend(o.feed(ToClient, b"\r\n", 4));
    assert_eq!(
        names(ev),
        [
            "MAX_COMMAND_LINE_LEN_EXCEEDED",
            "MAX_REPLY_LINE_LEN_EXCEEDED",
            "INVALID_REPLY"
        ]
    );
    let from = o.buffer(0, BufferId::SmtpMailFrom, ToServer).unwrap();
    assert!(from.len() < 512, "{}", from.len());
    o.feed(ToClient, b"250 ok\r\n", 5);
    let ev = o.feed(ToServer, b"DATA\r\nX-Big: ", 5);
    assert!(ev.is_empty());
    let mut ev = Vec::new();
    for _ in 0..64 {
        ev.extend(o.feed(ToServer, &[b'h'; 16 * 1024], 6));
    }
    ev.extend(o.feed(ToServer, b"\r\n\r\nok\r\n.\r\n", 7));
    assert_eq!(names(ev), ["MIME_LONG_LINE", "MIME_LONG_HEADER_VALUE"]);
    assert_eq!(o.buffer(0, BufferId::FileData, ToServer), Some(&b"ok"[..]));
    // Gap-ridden: each gap loses the partial line and resyncs on a
    // command; the mail cut by a gap ends there.
    let mut g = AppLayerState::new(AppProto::Smtp, Transport::Tcp);
    g.feed(
        ToServer,
        b"EHLO x\r\nMAIL FROM:<one>\r\nDATA\r\nSubject: a\r\n\r\nfirst ",
        1,
    );
    g.on_gap(ToServer, Some(100));
    g.feed(
        ToServer,
        b"lost\r\n.\r\nnot a command\r\nRCPT TO:<z>\r\n",
        2,
    );
    g.on_gap(ToClient, None);
    g.feed(ToClient, b"0 partial\r\n250 ok\r\n", 3);
    let txs = g.transactions();
    assert_eq!(txs.len(), 2);
    assert!(txs[0].progress.request_complete);
    assert_eq!(
        g.buffer(0, BufferId::FileData, ToServer),
        Some(&b"first "[..])
    );
    assert_eq!(
        g.buffer(1, BufferId::SmtpRcptTo, ToServer),
        Some(&b"<z>"[..])
    );
    // Garbage: binary from both sides raises reply events, keeps no
    // more than the caps, and every buffer reads.
    let mut x = AppLayerState::new(AppProto::Smtp, Transport::Tcp);
    let mut ev = Vec::new();
    for i in 0..200u32 {
        let b: Vec<u8> = (0..300u32).map(|j| (i * 31 + j * 17) as u8).collect();
        ev.extend(x.feed(ToServer, &b, u64::from(i)));
        ev.extend(x.feed(ToClient, &b, u64::from(i)));
    }
    x.finish(ToServer);
    assert!(names(ev).contains(&"INVALID_REPLY"));
    for t in x.transactions() {
        for &id in BufferId::ALL {
            for b in x.buffers(t.id, id, ToServer) {
                assert!(b.len() <= 1024 * 1024);
            }
        }
    }
}

/// A WebSocket frame with a 7-bit length.
fn ws_frame(first: u8, key: Option<[u8; 4]>, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![
        first,
        payload.len() as u8 | if key.is_some() { 0x80 } else { 0 },
    ];
    let mut p = payload.to_vec();
    if let Some(k) = key {
        v.extend_from_slice(&k);
        for (i, c) in p.iter_mut().enumerate() {
            *c ^= k[i % 4];
        }
    }
    v.extend_from_slice(&p);
    v
}

/// WebSocket: an HTTP/1 flow becomes WebSocket after its `101`, once the
/// upgrade transaction is logged; frames sent with the `101` are kept for
/// it. Truncated, oversized, gap-ridden and garbage frames never panic,
/// payloads stay capped.
#[test]
fn websocket_upgrade_truncated_oversized_gap_garbage() {
    use Direction::*;
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    s.feed(
        ToServer,
        b"GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        1,
    );
    let mut resp =
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\r\n"
            .to_vec();
    resp.extend(ws_frame(0x81, None, b"early"));
    s.feed(ToClient, &resp, 2);
    // Not logged yet: still HTTP.
    s.feed(ToServer, &ws_frame(0x81, Some([1, 2, 3, 4]), b"hi"), 3);
    assert_eq!(s.proto(), AppProto::Http);
    let tx = s.transactions()[0].id;
    s.set_logged(tx);
    s.feed(ToServer, &ws_frame(0x89, Some([9, 9, 9, 9]), b"p"), 4);
    assert_eq!(s.proto(), AppProto::WebSocket);
    let ops: Vec<serde_json::Value> = s
        .transactions()
        .iter()
        .map(|t| s.eve(t.id).unwrap()["opcode"].clone())
        .collect();
    assert_eq!(ops, ["text", "text", "ping"]);
    let first = s.transactions()[0].id;
    assert_eq!(
        s.buffer(first, BufferId::WebsocketPayload, ToServer),
        Some(&b"hi"[..])
    );
    // Truncated: a header cut by the end of the stream is no frame.
    s.feed(ToClient, &[0x82, 0x7f, 0, 0], 5);
    s.finish(ToClient);
    assert_eq!(s.transactions().len(), 3);
    // Oversized: a 1 GiB frame announced, 1 MiB sent; the payload kept
    // is capped and the end is skipped with an event.
    let mut o = AppLayerState::new(AppProto::WebSocket, Transport::Tcp);
    let mut hdr = vec![0x82, 0x7f];
    hdr.extend_from_slice(&(1u64 << 30).to_be_bytes());
    let mut names = Vec::new();
    names.extend(o.feed(ToClient, &hdr, 1).iter().map(|e| e.name()));
    for _ in 0..64 {
        names.extend(
            o.feed(ToClient, &[0u8; 16 * 1024], 2)
                .iter()
                .map(|e| e.name()),
        );
    }
    assert_eq!(names, ["skip_end_of_payload"]);
    let t = o.transactions()[0].id;
    assert_eq!(
        o.buffer(t, BufferId::WebsocketPayload, ToClient)
            .unwrap()
            .len(),
        0xFFFF
    );
    // A gap ends the parsing.
    let mut g = AppLayerState::new(AppProto::WebSocket, Transport::Tcp);
    g.feed(ToServer, &ws_frame(0x81, None, b"one")[..3], 1);
    g.on_gap(ToServer, Some(10));
    g.feed(ToServer, &ws_frame(0x81, None, b"two"), 2);
    assert!(g.transactions().is_empty());
    assert!(!g.wants_data(ToServer));
    // Garbage: every byte is some frame; nothing panics, payloads capped.
    let mut x = AppLayerState::new(AppProto::WebSocket, Transport::Tcp);
    for i in 0..200u32 {
        let b: Vec<u8> = (0..300u32).map(|j| (i * 31 + j * 17) as u8).collect();
        x.feed(ToServer, &b, u64::from(i));
        x.feed(ToClient, &b, u64::from(i));
    }
    for t in x.transactions() {
        for dir in [ToServer, ToClient] {
            if let Some(b) = x.buffer(t.id, BufferId::WebsocketPayload, dir) {
                assert!(b.len() <= 1 << 20);
            }
        }
    }
}

/// Malformed multipart uploads and bodies: file listing never panics and
/// keeps only what the parsers hold.
#[test]
fn files_of_malformed_http_uploads() {
    let bodies: [&[u8]; 5] = [
        b"--B\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\nxx",
        b"--B--\r\n",
        b"garbage without boundaries",
        b"--B\r\nContent-Disposition: form-data; filename=\r\n\r\n\r\n--B",
        b"\r\n\r\n--B\r\n\r\n--B\r\n\r\n--B--",
    ];
    for body in bodies {
        let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
        let head = format!(
            "POST /u HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.feed(Direction::ToServer, head.as_bytes(), 0);
        s.feed(Direction::ToServer, body, 0);
        for t in s.transactions() {
            for f in vigil_applayer::files::tx_files(&s, t.id, Direction::ToServer) {
                assert!(f.data.len() <= body.len());
                let tr = vigil_applayer::files::track(&f, 0xf, false, true, false);
                assert_eq!(tr.size, f.data.len() as u64);
            }
        }
    }
}

/// A PostgreSQL message with its tag and length.
fn pg_msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// PostgreSQL: truncated, oversized, gap-ridden and garbage messages;
/// an accepted SSLRequest hands the flow to TLS once logged.
#[test]
fn pgsql_truncated_oversized_gap_garbage_tls() {
    use Direction::*;
    let startup = b"\x00\x00\x00\x13\x00\x03\x00\x00user\x00u\x00db\x00\x00";
    // Truncated: a query cut by the end of the stream is not one.
    let mut s = AppLayerState::new(AppProto::Pgsql, Transport::Tcp);
    s.feed(ToServer, startup, 1);
    s.feed(ToServer, &pg_msg(b'Q', b"select 1\x00")[..7], 2);
    s.finish(ToServer);
    assert_eq!(s.transactions().len(), 1);
    assert!(s.transactions()[0].progress.request_complete);
    // Oversized: a 1 GiB message announced; the body kept is capped.
    let mut o = AppLayerState::new(AppProto::Pgsql, Transport::Tcp);
    o.feed(ToServer, startup, 1);
    let mut names = Vec::new();
    let mut q = vec![b'Q'];
    q.extend_from_slice(&(1u32 << 30).to_be_bytes());
    names.extend(o.feed(ToServer, &q, 2).iter().map(|e| e.name()));
    for _ in 0..64 {
        names.extend(
            o.feed(ToServer, &[b'a'; 16 * 1024], 3)
                .iter()
                .map(|e| e.name()),
        );
    }
    assert_eq!(names, ["oversized_message"]);
    let t = o.transactions().last().unwrap().id;
    assert_eq!(
        o.buffer(t, BufferId::PgsqlQuery, ToServer).unwrap().len(),
        vigil_applayer::pgsql::MAX_MESSAGE
    );
    // Gap: the side resumes at the next plausible message.
    let mut g = AppLayerState::new(AppProto::Pgsql, Transport::Tcp);
    g.feed(ToServer, startup, 1);
    g.on_gap(ToServer, Some(5));
    g.feed(ToServer, b"junk ", 2);
    g.feed(ToServer, &pg_msg(b'Q', b"select 2\x00"), 3);
    let t = g.transactions().last().unwrap().id;
    assert_eq!(
        g.buffer(t, BufferId::PgsqlQuery, ToServer),
        Some(&b"select 2"[..])
    );
    // Garbage: a bad length stops the side with an event.
    let mut x = AppLayerState::new(AppProto::Pgsql, Transport::Tcp);
    let ev = x.feed(ToClient, b"R\x00\x00\x00\x01zzzz", 1);
    assert_eq!(ev[0].name(), "malformed_message");
    // SSLRequest accepted: TLS from the next feed once logged.
    let mut t = AppLayerState::new(AppProto::Pgsql, Transport::Tcp);
    t.feed(ToServer, b"\x00\x00\x00\x08\x04\xd2\x16\x2f", 1);
    t.feed(ToClient, b"S", 2);
    assert_eq!(t.proto(), AppProto::Pgsql);
    t.set_logged(0);
    t.feed(
        ToServer,
        &[0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x03],
        3,
    );
    assert_eq!(t.proto(), AppProto::Tls);
}

/// An ENIP PDU: the 24-byte encapsulation header and `data`.
fn enip_pdu(cmd: u16, session: u32, data: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&cmd.to_le_bytes());
    p.extend_from_slice(&(data.len() as u16).to_le_bytes());
    p.extend_from_slice(&session.to_le_bytes());
    p.extend_from_slice(&[0; 16]);
    p.extend_from_slice(data);
    p
}

/// ENIP: truncated, oversized, gap-ridden and garbage PDUs; what parses
/// is kept, bad command data is `invalid_pdu`, a gap resumes at the next
/// plausible header.
#[test]
fn enip_truncated_oversized_gap_garbage() {
    use Direction::*;
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<&str> {
        ev.iter().map(|e| e.name()).collect()
    };
    // SendRRData, unconnected data: Get Attribute Single class 1.
    let cip = [0x0e, 3, 0x20, 1, 0x24, 1, 0x30, 7];
    let mut rr = vec![
        0,
        0,
        0,
        0,
        0,
        0,
        2,
        0,
        0,
        0,
        0,
        0,
        0xb2,
        0,
        cip.len() as u8,
        0,
    ];
    rr.extend_from_slice(&cip);
    let good = enip_pdu(0x6f, 9, &rr);
    let mut s = AppLayerState::new(AppProto::Enip, Transport::Tcp);
    // Truncated: half a PDU, then the stream ends: nothing is made up.
    assert!(s.feed(ToServer, &good[..30], 1).is_empty());
    s.finish(ToServer);
    assert!(s.transactions().is_empty());
    // Oversized: a header claiming 65535 bytes that never come is
    // buffered (at most 64 KiB + 24) and never parsed.
    let mut o = AppLayerState::new(AppProto::Enip, Transport::Tcp);
    let mut big = enip_pdu(0x6f, 9, &[]);
    big[2..4].copy_from_slice(&u16::MAX.to_le_bytes());
    o.feed(ToServer, &big, 1);
    o.feed(ToServer, &[0x41; 60_000], 2);
    assert!(o.transactions().is_empty());
    // Garbage command data: an item longer than the PDU.
    let mut g = AppLayerState::new(AppProto::Enip, Transport::Tcp);
    let bad = enip_pdu(0x6f, 9, &[0, 0, 0, 0, 0, 0, 1, 0, 0xb2, 0, 0xff, 0]);
    assert_eq!(names(&g.feed(ToServer, &bad, 1)), ["invalid_pdu"]);
    assert_eq!(g.transactions().len(), 1);
    assert_eq!(g.eve(0).unwrap()["request"]["command"], "send_r_r_data");
    // A path segment of an unknown type is invalid too.
    let mut rr2 = rr.clone();
    let n = rr2.len();
    rr2[n - 6] = 0x7f;
    assert_eq!(
        names(&g.feed(ToServer, &enip_pdu(0x6f, 9, &rr2), 2)),
        ["invalid_pdu"]
    );
    // A gap: the rest of the PDU is skipped, the next header resumes.
    let mut p = AppLayerState::new(AppProto::Enip, Transport::Tcp);
    p.feed(ToServer, &good[..10], 1);
    p.on_gap(ToServer, Some(5));
    p.feed(ToServer, &good[15..], 2);
    assert!(p.transactions().is_empty());
    p.feed(ToServer, &good, 3);
    assert_eq!(p.transactions().len(), 1);
    assert_eq!(
        p.eve(0).unwrap()["request"]["cip"]["class_name"],
        "Identity"
    );
    // UDP: a datagram is one PDU; a short one is dropped.
    let mut u = AppLayerState::new(AppProto::Enip, Transport::Udp);
    u.feed(ToServer, &good[..20], 1);
    u.feed(ToServer, &good, 2);
    assert_eq!(u.transactions().len(), 1);
}

/// ENIP detection: a plausible header on port 44818, TCP and UDP.
#[test]
fn enip_probe() {
    use Direction::*;
    let list_identity = enip_pdu(0x63, 0, &[]);
    assert_eq!(probe(ToServer, &list_identity, 44818), ProbeResult::Enip);
    assert_eq!(
        probe(ToServer, &list_identity[..10], 44818),
        ProbeResult::NeedMore
    );
    assert_ne!(probe(ToServer, &list_identity, 80), ProbeResult::Enip);
    assert_eq!(
        vigil_applayer::probe_udp(ToServer, &list_identity, 44818),
        ProbeResult::Enip
    );
    // RegisterSession must carry 4 bytes; unknown commands are not ENIP.
    assert_ne!(
        probe(ToServer, &enip_pdu(0x65, 0, &[1, 0]), 44818),
        ProbeResult::Enip
    );
    assert_ne!(
        probe(ToServer, &enip_pdu(0x99, 0, &[]), 44818),
        ProbeResult::Enip
    );
}

#[test]
fn quic_real_initials_truncated_garbage() {
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<&str> {
        ev.iter().map(|e| e.name()).collect()
    };
    let ci = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/quic_client_initial.bin"
    ))
    .unwrap();
    let si = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/quic_server_initial.bin"
    ))
    .unwrap();
    assert_eq!(probe_udp(Direction::ToServer, &ci, 443), ProbeResult::Quic);
    // Suricata's ports only.
    assert_ne!(probe_udp(Direction::ToServer, &ci, 4433), ProbeResult::Quic);
    let mut u = AppLayerState::new(AppProto::Quic, Transport::Udp);
    assert!(u.feed(Direction::ToServer, &ci, 1).is_empty());
    assert!(u.feed(Direction::ToClient, &si, 2).is_empty());
    assert_eq!(
        u.buffer(0, BufferId::QuicSni, Direction::ToServer),
        Some(&b"msquic.net"[..])
    );
    assert_eq!(
        u.buffer(0, BufferId::QuicVersion, Direction::ToServer),
        Some(&[0, 0, 0, 1][..])
    );
    assert_eq!(
        u.buffer(1, BufferId::Ja3sString, Direction::ToClient),
        Some(&b"771,4866,43-51-41"[..])
    );
    // A packet's buffers exist in its own direction only.
    assert_eq!(u.buffer(0, BufferId::QuicSni, Direction::ToClient), None);
    // Truncated: the length field runs past the datagram (not QUIC any
    // more: a header error); a flipped ciphertext byte fails to decrypt.
    let mut t = AppLayerState::new(AppProto::Quic, Transport::Udp);
    assert_eq!(
        names(&t.feed(Direction::ToServer, &ci[..600], 1)),
        ["ERROR_ON_HEADER"]
    );
    let mut bad = ci.clone();
    bad[700] ^= 0x55;
    assert_eq!(
        names(&t.feed(Direction::ToServer, &bad, 2)),
        ["FAILED_DECRYPT"]
    );
    // Garbage long header; oversized: a datagram over 64 KiB never parses.
    assert_eq!(
        names(&t.feed(Direction::ToServer, &[0xff; 40], 3)),
        ["ERROR_ON_HEADER"]
    );
    let mut big = vec![0x40u8];
    big.resize(70_000, 0);
    assert_eq!(
        names(&t.feed(Direction::ToServer, &big, 4)),
        ["ERROR_ON_HEADER"]
    );
}

proptest! {
    #[test]
    fn mdns_llmnr_never_panic(c in seeded(&[0x00, 0x00, 0x84, 0x00, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01])) {
        exercise(AppProto::Mdns, Transport::Udp, &c);
        exercise(AppProto::Llmnr, Transport::Udp, &c);
        exercise(AppProto::Llmnr, Transport::Tcp, &c);
    }
}

/// mDNS and LLMNR: truncated, oversized, garbage and gaps; detection on
/// their ports and on the responder's source port.
#[test]
fn mdns_llmnr_truncated_oversized_gap_garbage() {
    use vigil_applayer::mdns::build::message;
    use Direction::*;
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<String> {
        ev.iter().map(|e| e.keyword()).collect()
    };
    let q = message(1, 0, &[("host.local", 1)], &[]);
    let mut m = AppLayerState::new(AppProto::Mdns, Transport::Udp);
    assert!(m.feed(ToServer, &q, 1).is_empty());
    // Truncated: malformed, on the newest transaction.
    assert_eq!(
        names(&m.feed(ToServer, &q[..q.len() - 3], 2)),
        ["mdns.malformed_data"]
    );
    assert_eq!(m.tx_events(0).len(), 1);
    // Garbage and short datagrams are not DNS: nothing.
    assert!(m
        .feed(ToServer, b"\xff\xff\xff\xff\xff\xff garbage", 3)
        .is_empty());
    assert!(m.feed(ToServer, b"\x00", 4).is_empty());
    // Oversized: a name past the cap is kept truncated and flagged.
    let long = format!("{}.local", vec!["a".repeat(60); 30].join("."));
    let big = message(2, 0, &[(long.as_str(), 1)], &[]);
    assert_eq!(names(&m.feed(ToServer, &big, 5)), ["mdns.name_too_long"]);
    let e = m.eve(1).unwrap();
    assert_eq!(e["queries"][0]["rrname_truncated"], true);
    assert!(e["queries"][0]["rrname"].as_str().unwrap().len() <= 1025);
    assert_eq!(m.transactions().len(), 2);
    // LLMNR over TCP: a message split anywhere, a gap resynchronises on
    // the next plausible message.
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    let mut t = AppLayerState::new(AppProto::Llmnr, Transport::Tcp);
    for b in framed.chunks(3) {
        assert!(t.feed(ToServer, b, 1).is_empty());
    }
    assert_eq!(t.transactions().len(), 1);
    t.on_gap(ToServer, Some(5));
    assert!(t.feed(ToServer, &[0xff; 20], 2).is_empty());
    t.feed(ToServer, &framed, 3);
    assert_eq!(t.transactions().len(), 2);
    assert_eq!(
        t.buffer(1, BufferId::LlmnrQueriesRrname, ToServer),
        Some(&b"host.local"[..])
    );
    // Detection: mDNS and LLMNR on their ports, DNS's own port stays DNS.
    assert_eq!(probe_udp(ToServer, &q, 5353), ProbeResult::Mdns);
    assert_eq!(probe_udp(ToServer, &q, 5355), ProbeResult::Llmnr);
    assert_eq!(probe_udp(ToServer, &q, 53), ProbeResult::Dns);
    assert_eq!(probe_udp(ToServer, &q[..11], 5353), ProbeResult::Unknown);
    assert_eq!(probe(ToServer, &framed, 5355), ProbeResult::Llmnr);
    // A responder's unicast answer opens a flow from port 5355.
    let r = message(
        1,
        0x8000,
        &[("host", 1)],
        &[("host", 1, 30, vec![10, 0, 0, 1])],
    );
    let mut d = ProtocolDetector::new(Transport::Udp, 50000);
    d.set_client_port(5355);
    assert_eq!(d.feed(ToServer, &r), Detection::Detected(AppProto::Llmnr));
    assert!(d.reversed());
    let mut s = AppLayerState::new(AppProto::Llmnr, Transport::Udp);
    s.set_reversed();
    assert!(s.feed(ToServer, &r, 1).is_empty());
    assert_eq!(s.eve(0).unwrap()["type"], "response");
    // Not reversed, the same answer is not a request.
    let mut n = AppLayerState::new(AppProto::Llmnr, Transport::Udp);
    n.feed(ToServer, &q, 1);
    assert_eq!(names(&n.feed(ToServer, &r, 2)), ["llmnr.not_request"]);
}

fn ldap_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    if content.len() < 0x80 {
        v.push(content.len() as u8);
    } else {
        v.extend_from_slice(&[0x82, (content.len() >> 8) as u8, content.len() as u8]);
    }
    v.extend_from_slice(content);
    v
}

fn ldap_bind(id: u8, dn: &[u8]) -> Vec<u8> {
    let op = ldap_tlv(
        0x60,
        &[ldap_tlv(2, &[3]), ldap_tlv(4, dn), ldap_tlv(0x80, b"pw")].concat(),
    );
    ldap_tlv(0x30, &[ldap_tlv(2, &[id]), op].concat())
}

/// LDAP: truncated, oversized, gap-ridden and garbage messages; what was
/// read is kept, anomalies are Suricata's events, a bad message stops
/// the parser.
#[test]
fn ldap_truncated_oversized_gap_garbage() {
    use Direction::*;
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<&str> {
        ev.iter().map(|e| e.name()).collect()
    };
    let good = ldap_bind(1, b"cn=admin,dc=example,dc=org");
    // Truncated: half a message, then the stream ends: nothing made up.
    let mut s = AppLayerState::new(AppProto::Ldap, Transport::Tcp);
    assert!(s.feed(ToServer, &good[..10], 1).is_empty());
    s.finish(ToServer);
    assert!(s.transactions().is_empty());
    // Oversized: a DN of 40,000 bytes in 1000-byte segments is buffered
    // and parsed; a length past the 1 MiB cap is invalid at once.
    let mut o = AppLayerState::new(AppProto::Ldap, Transport::Tcp);
    let big = ldap_bind(2, &[b'a'; 40_000]);
    for c in big.chunks(1000) {
        assert!(o.feed(ToServer, c, 1).is_empty());
    }
    assert_eq!(o.transactions().len(), 1);
    let huge = [0x30, 0x84, 0x10, 0, 0, 0, 2, 1, 1];
    assert_eq!(names(&o.feed(ToClient, &huge, 2)), ["invalid_data"]);
    assert!(!o.wants_data(ToServer));
    // Garbage response (an INTEGER where the op should be).
    let mut g = AppLayerState::new(AppProto::Ldap, Transport::Tcp);
    g.feed(ToServer, &good, 1);
    let bad = ldap_tlv(0x30, &[ldap_tlv(2, &[1]), ldap_tlv(2, &[7])].concat());
    assert_eq!(names(&g.feed(ToClient, &bad, 2)), ["invalid_data"]);
    assert_eq!(g.eve(0).unwrap()["request"]["operation"], "bind_request");
    // A gap mid-message: the side resumes on the next whole message.
    let mut p = AppLayerState::new(AppProto::Ldap, Transport::Tcp);
    p.feed(ToServer, &good[..12], 1);
    p.on_gap(ToServer, Some(5));
    p.feed(ToServer, &ldap_bind(3, b"cn=next"), 2);
    assert_eq!(p.transactions().len(), 1);
    assert_eq!(p.eve(0).unwrap()["request"]["message_id"], 3);
    // UDP: a truncated datagram is incomplete_data.
    let mut u = AppLayerState::new(AppProto::Ldap, Transport::Udp);
    assert_eq!(
        names(&u.feed(ToServer, &good[..20], 1)),
        ["incomplete_data"]
    );
}

/// LDAP detection: a message on 389/3268, TCP and UDP.
#[test]
fn ldap_probe() {
    use Direction::*;
    let b = ldap_bind(1, b"cn=admin");
    assert_eq!(probe(ToServer, &b, 389), ProbeResult::Ldap);
    assert_eq!(probe(ToServer, &b, 3268), ProbeResult::Ldap);
    assert_eq!(probe(ToServer, &b[..3], 389), ProbeResult::NeedMore);
    assert_ne!(probe(ToServer, &b, 8080), ProbeResult::Ldap);
    assert_ne!(
        probe(ToServer, b"\x30\x03\x04\x01\x01", 389),
        ProbeResult::Ldap
    );
    assert_eq!(
        vigil_applayer::probe_udp(ToServer, &b, 389),
        ProbeResult::Ldap
    );
    assert_ne!(
        vigil_applayer::probe_udp(ToServer, &b[..8], 389),
        ProbeResult::Ldap
    );
}

proptest! {
    #[test]
    fn ntp_never_panics(c in seeded(&[0x23, 0x02, 0x06, 0xec, 0, 0, 0, 0x10, 0, 0, 0, 0x20, b'R', b'A', b'T', b'E'])) {
        exercise(AppProto::Ntp, Transport::Udp, &c);
    }

    #[test]
    fn ntp_arbitrary(c in chunks()) {
        exercise(AppProto::Ntp, Transport::Udp, &c);
    }
}

/// NTP: truncated, oversized (extension fields and a MAC past the
/// header), garbage datagrams; each is one message or a malformed one.
#[test]
fn ntp_truncated_oversized_garbage() {
    use vigil_applayer::ntp::build::message;
    use Direction::*;
    let mut s = AppLayerState::new(AppProto::Ntp, Transport::Udp);
    let m = message(4, 3, 0, [0; 4], 1);
    let ev = s.feed(ToServer, &m[..40], 1);
    assert_eq!(ev[0].name(), "MALFORMED_DATA");
    assert!(s.transactions().is_empty());
    // A v4 message with a trailing MAC (key id and 16 bytes).
    let mut big = message(4, 4, 1, *b"GPS\0", 2);
    big.extend([0, 0, 0, 7]);
    big.extend([0x5a; 16]);
    assert!(s.feed(ToClient, &big, 2).is_empty());
    assert_eq!(s.transactions().len(), 1);
    let id = s.transactions()[0].id;
    assert_eq!(s.eve(id).unwrap()["reference_id"], "47:50:53:00");
    // 64 KiB of garbage, then a gap (nothing to lose in UDP).
    let ev = s.feed(ToServer, &[0xff; 65_000], 3);
    assert_eq!(ev[0].name(), "MALFORMED_DATA");
    s.on_gap(ToServer, Some(10));
    assert!(s.feed(ToServer, &m, 4).is_empty());
    assert_eq!(s.transactions().len(), 2);
}

/// NTP detection: a v3/v4 message on port 123 from either side.
#[test]
fn ntp_probe() {
    use vigil_applayer::ntp::build::message;
    use Direction::*;
    let m = message(4, 3, 0, [0; 4], 1);
    assert_eq!(probe_udp(ToServer, &m, 123), ProbeResult::Ntp);
    assert_eq!(
        probe_udp(ToClient, &message(3, 4, 2, [10, 0, 0, 1], 1), 123),
        ProbeResult::Ntp
    );
    assert_ne!(probe_udp(ToServer, &m, 4000), ProbeResult::Ntp);
    assert_ne!(probe_udp(ToServer, &m[..20], 123), ProbeResult::Ntp);
}

proptest! {
    #[test]
    fn telnet_never_panics(c in seeded(&[0xff, 0xfd, 0x18, 0xff, 0xfa, 0x18, 0x00])) {
        exercise(AppProto::Telnet, Transport::Tcp, &c);
    }
}

/// Telnet detection: any two bytes on port 23 that no protocol
/// recognised by content claims; elsewhere nothing.
#[test]
fn telnet_probe() {
    use Direction::*;
    assert_eq!(probe(ToClient, b"\xff\xfd\x18", 23), ProbeResult::Telnet);
    assert_eq!(probe(ToServer, b"root\r\n", 23), ProbeResult::Telnet);
    assert_ne!(probe(ToServer, b"\xff\xfd\x18", 2323), ProbeResult::Telnet);
    assert_eq!(
        probe(ToServer, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 23),
        ProbeResult::Http
    );
    // Truncated, oversized, gap-ridden, garbage: no transactions, no
    // events, data still wanted.
    let mut s = AppLayerState::new(AppProto::Telnet, Transport::Tcp);
    assert!(s.feed(ToServer, &[0xff, 0xfa, 0x18], 1).is_empty());
    s.on_gap(ToServer, Some(100));
    assert!(s.feed(ToServer, &[0xff; 70_000], 2).is_empty());
    assert!(s.feed(ToClient, &[0u8; 70_000], 3).is_empty());
    s.finish(ToServer);
    assert!(s.transactions().is_empty());
    assert!(s.wants_data(ToClient));
}

proptest! {
    #[test]
    fn bittorrent_dht_never_panics(c in seeded(b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe")) {
        exercise(AppProto::BittorrentDht, Transport::Udp, &c);
    }

    #[test]
    fn bittorrent_dht_arbitrary(c in chunks()) {
        exercise(AppProto::BittorrentDht, Transport::Udp, &c);
    }
}

/// BitTorrent DHT: detection by a query's prefix on ports from 1024;
/// truncated, oversized (a response with thousands of nodes, capped),
/// deeply nested and garbage datagrams.
#[test]
fn bittorrent_dht_probe_and_limits() {
    use vigil_applayer::bittorrent_dht::{build::bstr, MAX_ITEMS};
    use Direction::*;
    let q = b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe";
    assert_eq!(probe_udp(ToServer, q, 6881), ProbeResult::BittorrentDht);
    assert_eq!(probe_udp(ToClient, q, 51413), ProbeResult::BittorrentDht);
    assert_ne!(probe_udp(ToServer, q, 1023), ProbeResult::BittorrentDht);
    assert_ne!(
        probe_udp(
            ToServer,
            b"d1:rd2:id20:abcdefghij0123456789e1:t2:aa1:y1:re",
            6881
        ),
        ProbeResult::BittorrentDht
    );
    let mut s = AppLayerState::new(AppProto::BittorrentDht, Transport::Udp);
    assert!(s.feed(ToServer, q, 1).is_empty());
    let ev = s.feed(ToServer, &q[..20], 2);
    assert_eq!(ev[0].name(), "MALFORMED_PACKET");
    let nodes = vec![7u8; 26 * 5000];
    let big = [
        &b"d1:rd2:id20:mnopqrstuvwxyz1234565:nodes"[..],
        &bstr(&nodes),
        b"e1:t2:aa1:y1:re",
    ]
    .concat();
    assert!(s.feed(ToClient, &big, 3).is_empty());
    let deep = [&b"d1:ad2:id"[..], &[b'l'; 5000], &[b'e'; 5000], b"ee"].concat();
    assert_eq!(s.feed(ToServer, &deep, 4)[0].name(), "MALFORMED_PACKET");
    let txs = s.transactions();
    assert_eq!(txs.len(), 4);
    let rec = s.eve(txs[2].id).unwrap();
    assert_eq!(
        rec["response"]["nodes"].as_array().unwrap().len(),
        MAX_ITEMS
    );
    assert_eq!(s.eve(txs[1].id).unwrap()["transaction_id"], "");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn modbus_never_panics(c in seeded(&[0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 2])) {
        exercise(AppProto::Modbus, Transport::Tcp, &c);
    }

    #[test]
    fn modbus_arbitrary(c in chunks()) {
        exercise(AppProto::Modbus, Transport::Tcp, &c);
    }
}

/// A Modbus/TCP message: MBAP header and PDU.
fn modbus_msg(tid: u16, unit: u8, pdu: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&tid.to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    m.extend_from_slice(&((pdu.len() + 1) as u16).to_be_bytes());
    m.push(unit);
    m.extend_from_slice(pdu);
    m
}

/// Modbus: truncated, oversized, gap-ridden and garbage messages; a
/// truncated message makes nothing up, an oversized length is
/// `invalid_length` and its bytes are skipped, garbage raises events on
/// what it decodes to, a gap ends the parsing of its direction.
#[test]
fn modbus_truncated_oversized_gap_garbage() {
    use Direction::*;
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<&str> {
        ev.iter().map(|e| e.name()).collect()
    };
    let good = modbus_msg(1, 1, &[3, 0, 0, 0, 2]);
    // Truncated: half a message, then the stream ends.
    let mut s = AppLayerState::new(AppProto::Modbus, Transport::Tcp);
    assert!(s.feed(ToServer, &good[..7], 1).is_empty());
    s.finish(ToServer);
    assert!(s.transactions().is_empty());
    // Oversized: a length of 65535 is one invalid message whose bytes
    // (here all that came) are skipped; the next message parses.
    let mut o = AppLayerState::new(AppProto::Modbus, Transport::Tcp);
    let mut big = modbus_msg(2, 1, &[3, 0, 0, 0, 2]);
    big[4..6].copy_from_slice(&u16::MAX.to_be_bytes());
    assert_eq!(names(&o.feed(ToServer, &big, 1)), ["invalid_length"]);
    assert!(o.feed(ToServer, &good, 2).is_empty());
    assert_eq!(o.transactions().len(), 2);
    assert_eq!(o.eve(1).unwrap()["request"]["transaction_id"], 1);
    // Garbage: text decodes as a message with a bad protocol id and length.
    let mut g = AppLayerState::new(AppProto::Modbus, Transport::Tcp);
    let ev = g.feed(ToServer, b"GET / HTTP/1.1\r\n\r\n", 1);
    assert!(names(&ev).contains(&"invalid_protocol_id"));
    assert!(names(&ev).contains(&"invalid_length"));
    // A gap: the direction is no longer parsed, the other one is.
    let mut p = AppLayerState::new(AppProto::Modbus, Transport::Tcp);
    p.feed(ToServer, &good[..4], 1);
    p.on_gap(ToServer, Some(2));
    assert!(p.feed(ToServer, &good, 3).is_empty());
    assert!(p.transactions().is_empty());
    let ev = p.feed(ToClient, &modbus_msg(1, 1, &[3, 2, 0, 7]), 4);
    assert_eq!(names(&ev), ["unsolicited_response"]);
    assert_eq!(p.transactions().len(), 1);
}

/// Modbus is detected on port 502 by a whole message without error
/// flags, either way, as Suricata's probe.
#[test]
fn modbus_detected_on_its_port() {
    let m = modbus_msg(1, 1, &[3, 0, 0, 0, 2]);
    assert_eq!(probe(Direction::ToServer, &m, 502), ProbeResult::Modbus);
    assert_eq!(
        probe(Direction::ToClient, &modbus_msg(1, 1, &[3, 2, 0, 1]), 502),
        ProbeResult::Modbus
    );
    assert_ne!(probe(Direction::ToServer, &m, 503), ProbeResult::Modbus);
    assert_eq!(
        probe(Direction::ToServer, &m[..5], 502),
        ProbeResult::NeedMore
    );
    let mut bad = m.clone();
    bad[3] = 1;
    assert_ne!(probe(Direction::ToServer, &bad, 502), ProbeResult::Modbus);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn dnp3_never_panics(c in seeded(Box::leak(vigil_applayer::dnp3::frame(0xc4, 10, 1, &[0xc0, 0xc0, 0x01, 60, 1, 0x06, 30, 2, 0x00, 0, 1]).into_boxed_slice()))) {
        exercise(AppProto::Dnp3, Transport::Tcp, &c);
    }

    #[test]
    fn dnp3_arbitrary(c in chunks()) {
        exercise(AppProto::Dnp3, Transport::Tcp, &c);
    }
}

/// DNP3: truncated frames wait, an oversized message is `malformed`,
/// garbage and a gap stop the direction, a bad block CRC skips its frame.
#[test]
fn dnp3_truncated_oversized_gap_garbage() {
    use vigil_applayer::dnp3::frame;
    use Direction::*;
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<&str> {
        ev.iter().map(|e| e.name()).collect()
    };
    let read = frame(0xc4, 10, 1, &[0xc0, 0xc0, 0x01, 60, 1, 0x06]);
    // Truncated: a partial frame makes nothing up.
    let mut s = AppLayerState::new(AppProto::Dnp3, Transport::Tcp);
    assert!(s.feed(ToServer, &read[..12], 1).is_empty());
    s.finish(ToServer);
    assert!(s.transactions().is_empty());
    // Oversized: segments without FIN past 64 KiB are malformed.
    let mut o = AppLayerState::new(AppProto::Dnp3, Transport::Tcp);
    let mut ev = Vec::new();
    for i in 0..300u32 {
        let th = if i == 0 { 0x40 } else { (i % 64) as u8 };
        let mut ud = vec![th];
        ud.extend_from_slice(&[0xc0, 0x02]);
        ud.extend(std::iter::repeat_n(0x41, 247));
        ev.extend(o.feed(ToServer, &frame(0xc4, 10, 1, &ud), u64::from(i)));
    }
    assert_eq!(names(&ev), ["malformed"]);
    assert_eq!(o.transactions().len(), 1);
    // Garbage: not a link header, the direction stops.
    let mut g = AppLayerState::new(AppProto::Dnp3, Transport::Tcp);
    assert!(g.feed(ToServer, b"GET / HTTP/1.1\r\n\r\n", 1).is_empty());
    assert!(g.feed(ToServer, &read, 2).is_empty());
    assert!(g.transactions().is_empty());
    // A gap stops the direction; the other goes on.
    let mut p = AppLayerState::new(AppProto::Dnp3, Transport::Tcp);
    p.feed(ToServer, &read[..5], 1);
    p.on_gap(ToServer, Some(2));
    assert!(p.feed(ToServer, &read, 3).is_empty());
    assert!(p.transactions().is_empty());
    p.feed(ToClient, &frame(0x44, 1, 10, &[0xc0, 0xc0, 0x81, 0, 0]), 4);
    assert_eq!(p.transactions().len(), 1);
}

/// DNP3 is detected on port 20000 by a link header, either way.
#[test]
fn dnp3_detected_on_its_port() {
    let f = vigil_applayer::dnp3::frame(0xc4, 10, 1, &[0xc0, 0xc0, 0x01]);
    assert_eq!(probe(Direction::ToServer, &f, 20000), ProbeResult::Dnp3);
    assert_ne!(probe(Direction::ToServer, &f, 20001), ProbeResult::Dnp3);
    assert_eq!(
        probe(Direction::ToServer, &f[..4], 20000),
        ProbeResult::NeedMore
    );
}

/// POP3: truncated, oversized, gap-ridden and garbage sessions; what was
/// read is kept, anomalies are Suricata's events, lines are capped.
#[test]
fn pop3_truncated_oversized_gap_garbage() {
    use Direction::*;
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<String> {
        ev.iter().map(|e| e.keyword()).collect()
    };
    // Truncated: a RETR whose mail stops mid-way, then the flow ends.
    let mut s = AppLayerState::new(AppProto::Pop3, Transport::Tcp);
    s.feed(ToServer, b"RETR 1\r\n", 1);
    s.feed(ToClient, b"+OK\r\nSubject: cut\r\n\r\nhalf a li", 2);
    s.finish(ToClient);
    assert!(s.transactions()[0].progress.response_complete);
    assert_eq!(
        s.buffer(0, BufferId::EmailSubject, ToClient),
        Some(&b"cut"[..])
    );
    assert_eq!(s.eve_siblings(0)[0].1["status"], "PARSE_DONE");
    // Oversized: a 1 MiB command line and a 1 MiB multi-line response in
    // 16 KiB pieces: one event each, what is kept stays capped.
    let mut o = AppLayerState::new(AppProto::Pop3, Transport::Tcp);
    let mut ev = o.feed(ToServer, b"USER ", 1);
    for _ in 0..64 {
        ev.extend(o.feed(ToServer, &[b'u'; 16 * 1024], 2));
    }
    ev.extend(o.feed(ToServer, b"\r\nLIST\r\n", 3));
    assert_eq!(names(&ev), ["pop3.request_too_long"]);
    let mut ev = o.feed(ToClient, b"+OK\r\n+OK\r\n", 4);
    for _ in 0..64 {
        ev.extend(o.feed(ToClient, &[b"x".repeat(1023), b"\r\n".to_vec()].concat(), 5));
        ev.extend(o.feed(ToClient, &[b'y'; 16 * 1024], 5));
        ev.extend(o.feed(ToClient, b"\r\n", 5));
    }
    o.feed(ToClient, b".\r\n", 6);
    assert!(ev.is_empty());
    let list = o.eve(1).unwrap();
    let data = list["response"]["data"].as_array().unwrap();
    let kept: usize = data.iter().map(|d| d.as_str().unwrap().len()).sum();
    assert!(kept <= 64 * 1024, "{kept}");
    assert!(o.transactions()[1].progress.response_complete);
    // A gap in a multi-line response ends it; parsing resumes at the
    // next status line.
    let mut g = AppLayerState::new(AppProto::Pop3, Transport::Tcp);
    g.feed(ToServer, b"UIDL\r\nNOOP\r\n", 1);
    g.feed(ToClient, b"+OK\r\n1 a\r\n", 2);
    g.on_gap(ToClient, Some(100));
    g.feed(ToClient, b"9 z\r\n.\r\n+OK noop\r\n", 3);
    assert_eq!(
        g.eve(0).unwrap()["response"]["data"],
        serde_json::json!(["1 a"])
    );
    assert_eq!(g.eve(1).unwrap()["response"]["header"], "noop");
    // Garbage: server lines that are no status, binary commands.
    let mut b = AppLayerState::new(AppProto::Pop3, Transport::Tcp);
    b.feed(ToClient, b"HTTP/1.1 200 OK\r\n\x00\xff\r\n", 1);
    assert!(b.transactions().is_empty());
    let ev = b.feed(ToServer, b"\x00\x01\x02\r\n", 2);
    assert_eq!(names(&ev), ["pop3.unknown_command"]);
}

/// POP3 detection: the server's status or a client command, on port 110.
#[test]
fn pop3_probe() {
    use Direction::*;
    assert_eq!(
        probe(ToClient, b"+OK POP3 ready\r\n", 110),
        ProbeResult::Pop3
    );
    assert_eq!(probe(ToServer, b"CAPA\r\n", 110), ProbeResult::Pop3);
    assert_eq!(probe(ToClient, b"+O", 110), ProbeResult::NeedMore);
    assert_ne!(
        probe(ToClient, b"+OK POP3 ready\r\n", 8110),
        ProbeResult::Pop3
    );
    assert_eq!(probe(ToClient, b"220 ftp ready\r\n", 21), ProbeResult::Ftp);
    let mut d = ProtocolDetector::new(Transport::Tcp, 110);
    assert_eq!(
        d.feed(ToClient, b"+OK ready\r\n"),
        Detection::Detected(AppProto::Pop3)
    );
}

/// RDP: truncated, oversized, gap-ridden and garbage setups; records
/// are reassembled, what does not parse is dropped, the direction is let
/// go on garbage and gaps.
#[test]
fn rdp_truncated_oversized_gap_garbage() {
    use Direction::*;
    let cr = b"\x03\x00\x00\x21\x1c\xe0\x00\x00\x00\x00\x00Cookie: mstshash=eve\r\n";
    // Truncated: the request never completes.
    let mut s = AppLayerState::new(AppProto::Rdp, Transport::Tcp);
    s.feed(ToServer, &cr[..20], 1);
    s.finish(ToServer);
    assert!(s.transactions().is_empty());
    s.feed(ToServer, &cr[20..], 2);
    assert_eq!(s.eve(0).unwrap()["cookie"], "eve");
    // Oversized: a TPKT record announcing 65535 bytes of an unknown TPDU,
    // fed in pieces: held until whole, then dropped.
    let mut o = AppLayerState::new(AppProto::Rdp, Transport::Tcp);
    o.feed(ToServer, b"\x03\x00\xff\xff\x02\xf0\x80", 1);
    for _ in 0..3 {
        o.feed(ToServer, &[0x41; 16 * 1024], 2);
    }
    o.feed(ToServer, &[0x41; 65535 - 7 - 3 * 16 * 1024], 2);
    o.feed(ToServer, cr, 3);
    assert_eq!(o.transactions().len(), 1);
    // A gap: the direction is no longer parsed.
    let mut g = AppLayerState::new(AppProto::Rdp, Transport::Tcp);
    g.on_gap(ToServer, Some(10));
    g.feed(ToServer, cr, 1);
    assert!(g.transactions().is_empty());
    assert!(!g.wants_data(ToServer));
    // Garbage: not TPKT.
    let mut b = AppLayerState::new(AppProto::Rdp, Transport::Tcp);
    b.feed(ToClient, b"SSH-2.0-x\r\n", 1);
    b.feed(ToClient, b"\x03\x00\x00\x0b\x06\xd0\x00\x00\x12\x34\x00", 2);
    assert!(b.transactions().is_empty());
}

/// RDP on its port, IMAP by content on any port.
#[test]
fn rdp_imap_probe() {
    use Direction::*;
    let cr = b"\x03\x00\x00\x0b\x06\xe0\x00\x00\x00\x00\x00";
    assert_eq!(probe(ToServer, cr, 3389), ProbeResult::Rdp);
    assert_ne!(probe(ToServer, cr, 102), ProbeResult::Rdp);
    assert_eq!(
        probe(ToClient, b"* OK IMAP4rev1\r\n", 143),
        ProbeResult::Imap
    );
    assert_eq!(
        probe(ToClient, b"* OK IMAP4rev1\r\n", 9143),
        ProbeResult::Imap
    );
    assert_eq!(
        probe(ToServer, b"a1 CAPABILITY\r\n", 9143),
        ProbeResult::Imap
    );
    let mut d = ProtocolDetector::new(Transport::Tcp, 143);
    assert_eq!(
        d.feed(ToClient, b"* OK ready\r\n"),
        Detection::Detected(AppProto::Imap)
    );
}

/// An ONC RPC call to NFS (AUTH_NULL) and an accepted reply.
fn nfs_call(xid: u32, vers: u32, procedure: u32, args: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    for w in [xid, 0, 2, 100003, vers, procedure, 0, 0, 0, 0] {
        m.extend_from_slice(&w.to_be_bytes());
    }
    m.extend_from_slice(args);
    m
}

fn nfs_reply(xid: u32, results: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    for w in [xid, 1, 0, 0, 0, 0] {
        m.extend_from_slice(&w.to_be_bytes());
    }
    m.extend_from_slice(results);
    m
}

fn rpc_record(m: &[u8]) -> Vec<u8> {
    let mut v = (m.len() as u32 | 0x8000_0000).to_be_bytes().to_vec();
    v.extend_from_slice(m);
    v
}

#[test]
fn nfs_truncated_oversized_gap_garbage() {
    use Direction::*;
    let fh = [0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
    let names = |ev: &[vigil_applayer::AppLayerEvent]| -> Vec<String> {
        ev.iter()
            .map(|e| format!("{}.{}", e.proto().name(), e.name()))
            .collect()
    };
    // Truncated: a record cut by the end of the stream is not parsed; a
    // whole record whose arguments are cut is malformed_data.
    let mut s = AppLayerState::new(AppProto::Nfs, Transport::Tcp);
    let getattr = rpc_record(&nfs_call(1, 3, 1, &fh));
    s.feed(ToServer, &getattr[..20], 1);
    s.finish(ToServer);
    assert!(s.transactions().is_empty());
    let mut s = AppLayerState::new(AppProto::Nfs, Transport::Tcp);
    let ev = s.feed(ToServer, &rpc_record(&nfs_call(2, 3, 3, &[0, 0, 0, 40])), 1);
    assert_eq!(names(&ev), ["nfs.malformed_data"]);
    // Oversized: a 1 GiB record announced and sent in part is skipped
    // (one event), and the record after it parses.
    let mut o = AppLayerState::new(AppProto::Nfs, Transport::Tcp);
    let mut ev = o.feed(ToServer, &(0x8000_0000u32 | 1 << 30).to_be_bytes(), 1);
    for _ in 0..64 {
        ev.extend(o.feed(ToServer, &[0x55; 16 * 1024], 2));
    }
    assert_eq!(names(&ev), ["nfs.malformed_data"]);
    assert!(o.transactions().is_empty());
    // Fragments: a call in two record fragments is one message.
    let call = nfs_call(3, 3, 1, &fh);
    let mut f = AppLayerState::new(AppProto::Nfs, Transport::Tcp);
    let mut frag = (10u32).to_be_bytes().to_vec();
    frag.extend_from_slice(&call[..10]);
    let mut last = ((call.len() - 10) as u32 | 0x8000_0000)
        .to_be_bytes()
        .to_vec();
    last.extend_from_slice(&call[10..]);
    f.feed(ToServer, &frag, 1);
    assert!(f.transactions().is_empty());
    f.feed(ToServer, &last, 2);
    assert_eq!(f.transactions().len(), 1);
    // Gap: garbage after it is dropped until a record starts a segment.
    let mut g = AppLayerState::new(AppProto::Nfs, Transport::Tcp);
    g.feed(ToServer, &getattr, 1);
    g.on_gap(ToServer, Some(100));
    assert!(g
        .feed(ToServer, b"\x00\x01 not a record at all", 2)
        .is_empty());
    g.feed(ToServer, &rpc_record(&nfs_call(4, 3, 4, &fh)), 3);
    assert_eq!(g.transactions().len(), 2);
    // A reply to nothing asked is ignored; one to the call completes it.
    g.feed(ToClient, &rpc_record(&nfs_reply(99, &[0; 4])), 4);
    g.feed(ToClient, &rpc_record(&nfs_reply(4, &[0; 4])), 5);
    assert!(g.transactions()[1].progress.response_complete);
    // Garbage on UDP: a datagram that is no RPC message.
    let mut u = AppLayerState::new(AppProto::Nfs, Transport::Udp);
    assert_eq!(
        names(&u.feed(ToServer, b"garbage", 1)),
        ["nfs.malformed_data"]
    );
    u.feed(ToServer, &nfs_call(5, 2, 0, &[]), 2);
    assert_eq!(u.transactions().len(), 1);
    // Detection: a call to NFS on any port by content, a reply on 2049.
    assert_eq!(
        probe(ToServer, &rpc_record(&nfs_call(6, 3, 0, &[])), 999),
        ProbeResult::Nfs
    );
    assert_eq!(
        probe_udp(ToServer, &nfs_call(6, 4, 0, &[]), 999),
        ProbeResult::Nfs
    );
    assert_eq!(
        probe_udp(ToClient, &nfs_reply(6, &[]), 2049),
        ProbeResult::Nfs
    );
    assert_ne!(
        probe_udp(ToClient, &nfs_reply(6, &[]), 999),
        ProbeResult::Nfs
    );
}
