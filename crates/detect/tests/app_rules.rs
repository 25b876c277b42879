//! Rules on application-layer buffers, end to end through the real rule
//! parser, compiler, transaction prefilter and verifier, over transactions
//! built by the app-layer parsers from raw HTTP, DNS and TLS bytes.

use std::net::Ipv4Addr;

use vigil_applayer::{AppLayerState, AppProto, Direction as AppDir, Transport, TxId};
use vigil_craft::{PacketBuilder, ACK, PSH};
use vigil_detect::{
    AppProtoState, DetectEngine, DetectScratch, FlowDetectState, FlowView, Hit, PacketInput,
    TxDetectState, TxInput,
};
use vigil_prefilter::{EngineKind, Selection, Selector};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Vars};
use vigil_wire::{decode, linktype};

const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 80);

fn parse(rules: &[&str]) -> Vec<vigil_rules::Rule> {
    let vars = Vars::default();
    rules
        .iter()
        .map(|r| parse_rule(r, &vars, Origin::default()).unwrap_or_else(|e| panic!("{r}: {e}")))
        .collect()
}

fn engine_with(rules: &[&str], selector: &mut Selector) -> DetectEngine {
    let (e, report) =
        DetectEngine::build_with(&parse(rules), &ClassificationConfig::default(), selector);
    assert!(report.skipped.is_empty(), "skipped: {:?}", report.skipped);
    e
}

fn engine(rules: &[&str]) -> DetectEngine {
    engine_with(rules, &mut Selector::default())
}

/// A packet of the flow in `dir` (client 10.0.0.1:40000, server
/// 192.0.2.80:80 for TCP, :53 for UDP).
fn packet(dir: AppDir, udp: bool, payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::new();
    let port = if udp { 53 } else { 80 };
    match (dir, udp) {
        (AppDir::ToServer, false) => {
            b.ipv4_tcp(CLIENT, 40000, SERVER, port, 1, 1, PSH | ACK, payload)
        }
        (AppDir::ToClient, false) => {
            b.ipv4_tcp(SERVER, port, CLIENT, 40000, 1, 1, PSH | ACK, payload)
        }
        (AppDir::ToServer, true) => b.ipv4_udp(CLIENT, 40000, SERVER, port, payload),
        (AppDir::ToClient, true) => b.ipv4_udp(SERVER, port, CLIENT, 40000, payload),
    }
}

fn flow(dir: AppDir, app: AppProtoState) -> FlowView {
    FlowView {
        to_server: dir == AppDir::ToServer,
        established: true,
        app_proto: app,
        ..FlowView::default()
    }
}

/// Runs `inspect_tx` for one transaction direction on a packet of that
/// direction; returns the sids that alerted.
fn inspect(
    e: &DetectEngine,
    app: &AppLayerState,
    tx: TxId,
    dir: AppDir,
    txst: &mut TxDetectState,
    st: &mut FlowDetectState,
) -> Vec<u32> {
    let udp = app.proto() == AppProto::Dns;
    let frame = packet(dir, udp, b"");
    let p = decode(linktype::ETHERNET, &frame);
    let f = flow(dir, AppProtoState::Detected(app.proto()));
    let mut scratch = DetectScratch::default();
    let mut hits: Vec<Hit> = Vec::new();
    e.inspect_tx(
        PacketInput::new(&p, Some(f)),
        TxInput { app, tx, dir },
        txst,
        Some(st),
        &mut scratch,
        &mut hits,
    );
    assert!(hits.iter().all(|h| h.tx == Some(tx) && !h.stream));
    let mut sids: Vec<u32> = hits.iter().map(|h| e.rules[h.rule as usize].sid).collect();
    sids.sort();
    sids
}

/// Packet-path detection (prefilter + verify) on one packet.
fn packet_alerts(e: &DetectEngine, frame: &[u8], f: FlowView) -> Vec<u32> {
    let p = decode(linktype::ETHERNET, frame);
    let mut scratch = DetectScratch::default();
    let mut cand = Vec::new();
    let sel = e.select_groups(&p).expect("IP packet");
    let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
    e.candidates(sel, p.payload(), addrs, &mut scratch, &mut cand);
    let mut hits = Vec::new();
    let mut st = FlowDetectState::default();
    e.verify(
        PacketInput::new(&p, Some(f)),
        &cand,
        Some(&mut st),
        &mut scratch,
        &mut hits,
    );
    let mut sids: Vec<u32> = hits.iter().map(|&i| e.rules[i as usize].sid).collect();
    sids.sort();
    sids
}

const REQUEST: &[u8] = b"GET /a/../index.php?q=1 HTTP/1.1\r\n\
Host: www.Example.com\r\n\
User-Agent: EvilBot/1.0\r\n\
X-Foo: bar\r\n\
\r\n";

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\n\
Server: nginx\r\n\
Content-Type: text/html\r\n\
Content-Length: 18\r\n\
\r\n\
secret body here!!";

fn http(reqs: &[&[u8]], resps: &[&[u8]]) -> AppLayerState {
    let mut app = AppLayerState::new(AppProto::Http, Transport::Tcp);
    for r in reqs {
        app.feed(AppDir::ToServer, r, 1);
    }
    for r in resps {
        app.feed(AppDir::ToClient, r, 2);
    }
    app
}

const HTTP_RULES: &[&str] = &[
    "alert http any any -> any any (msg:\"uri\"; http.uri; content:\"/index.php\"; startswith; sid:1;)",
    "alert http any any -> any any (msg:\"host\"; http.host; content:\"www.example.com\"; sid:2;)",
    "alert http any any -> any any (msg:\"ua\"; http.user_agent; content:\"EvilBot\"; sid:3;)",
    "alert http any any -> any any (msg:\"hdr\"; http.header; content:\"X-Foo|3a 20|bar|0d 0a|\"; sid:4;)",
    "alert http any any -> any any (msg:\"uri no\"; http.uri; content:\"/other\"; sid:5;)",
    "alert http any any -> any any (msg:\"legacy modifier\"; content:\"GET\"; http_method; content:\"index\"; http_uri; sid:6;)",
    "alert http any any -> any any (msg:\"negated\"; http.uri; content:!\"/admin\"; sid:7;)",
    "alert http any any -> any any (msg:\"body\"; flow:established,to_client; file.data; content:\"secret body\"; sid:10;)",
    "alert http any any -> any any (msg:\"404\"; http.stat_code; content:\"404\"; sid:11;)",
    "alert http any any -> any any (msg:\"200\"; http.stat_code; content:\"200\"; sid:12;)",
    "alert http any any -> any any (msg:\"mixed\"; http.uri; content:\"index\"; http.server; content:\"nginx\"; sid:13;)",
    "alert http any any -> any any (msg:\"to_client header\"; flow:to_client; http.header; content:\"Server|3a 20|nginx\"; sid:14;)",
    "alert http any any -> any any (msg:\"urilen\"; urilen:10; sid:20;)",
    "alert http any any -> any any (msg:\"urilen raw\"; urilen:>15,raw; sid:21;)",
    "alert http any any -> any any (msg:\"urilen no\"; urilen:<5; sid:22;)",
    "alert http any any -> any any (msg:\"lowercase\"; http.user_agent; to_lowercase; content:\"evilbot\"; sid:30;)",
    "alert http any any -> any any (msg:\"lowercase no\"; http.user_agent; to_lowercase; content:\"EvilBot\"; sid:31;)",
];

fn http_rules() -> Vec<&'static str> {
    HTTP_RULES.to_vec()
}

#[test]
fn http_request_buffers() {
    let e = engine(&http_rules());
    assert!(e.has_tx_rules(AppProto::Http));
    assert!(!e.has_tx_rules(AppProto::Dns));
    let app = http(&[REQUEST], &[]);
    let tx = app.transactions()[0].id;
    let mut txst = TxDetectState::default();
    let mut st = FlowDetectState::default();
    // Normalised URI "/index.php?q=1" (14 bytes) is not 10: sid 20 does not
    // fire; the raw URI is 19 bytes (sid 21).
    assert_eq!(
        inspect(&e, &app, tx, AppDir::ToServer, &mut txst, &mut st),
        vec![1, 2, 3, 4, 6, 7, 21, 30]
    );
}

#[test]
fn urilen_on_normalised_uri() {
    let e = engine(&http_rules());
    let app = http(&[b"GET /index.php HTTP/1.1\r\nHost: a\r\n\r\n"], &[]);
    let mut txst = TxDetectState::default();
    let mut st = FlowDetectState::default();
    let sids = inspect(&e, &app, 0, AppDir::ToServer, &mut txst, &mut st);
    assert!(
        sids.contains(&20) && !sids.contains(&21) && !sids.contains(&22),
        "{sids:?}"
    );
}

#[test]
fn http_response_buffers_and_direction() {
    let e = engine(&http_rules());
    // Request only: response rules (stat_code, file.data, mixed) do not
    // fire on to-server inspection.
    let app = http(&[REQUEST], &[]);
    let mut txst = TxDetectState::default();
    let mut st = FlowDetectState::default();
    let sids = inspect(&e, &app, 0, AppDir::ToServer, &mut txst, &mut st);
    for s in [10, 11, 12, 13, 14] {
        assert!(!sids.contains(&s), "{s} in {sids:?}");
    }
    // To-client inspection before the response arrived: the buffers are
    // absent, nothing fires.
    assert!(inspect(&e, &app, 0, AppDir::ToClient, &mut txst, &mut st).is_empty());
    let app = http(&[REQUEST], &[RESPONSE]);
    assert_eq!(
        inspect(&e, &app, 0, AppDir::ToClient, &mut txst, &mut st),
        vec![10, 12, 13, 14]
    );
}

#[test]
fn fires_once_per_transaction() {
    let e = engine(&["alert http any any -> any any (http.uri; content:\"/x\"; sid:1;)"]);
    let app = http(
        &[b"GET /x1 HTTP/1.1\r\nHost: a\r\n\r\nGET /x2 HTTP/1.1\r\nHost: a\r\n\r\n"],
        &[],
    );
    let txs = app.transactions();
    assert_eq!(txs.len(), 2);
    let mut st = FlowDetectState::default();
    let mut t0 = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, txs[0].id, AppDir::ToServer, &mut t0, &mut st),
        vec![1]
    );
    assert!(inspect(&e, &app, txs[0].id, AppDir::ToServer, &mut t0, &mut st).is_empty());
    let mut t1 = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, txs[1].id, AppDir::ToServer, &mut t1, &mut st),
        vec![1]
    );
}

#[test]
fn body_arriving_later_matches_later() {
    let e = engine(&[
        "alert http any any -> any any (flow:to_server; http.request_body; content:\"pass=\"; sid:1;)",
    ]);
    let mut app = AppLayerState::new(AppProto::Http, Transport::Tcp);
    app.feed(
        AppDir::ToServer,
        b"POST /login HTTP/1.1\r\nHost: a\r\nContent-Length: 15\r\n\r\n",
        1,
    );
    let mut txst = TxDetectState::default();
    let mut st = FlowDetectState::default();
    assert!(inspect(&e, &app, 0, AppDir::ToServer, &mut txst, &mut st).is_empty());
    app.feed(AppDir::ToServer, b"user=a&pass=bb", 2);
    assert_eq!(
        inspect(&e, &app, 0, AppDir::ToServer, &mut txst, &mut st),
        vec![1]
    );
}

#[test]
fn transforms_hash_and_lowercase() {
    let digest = vigil_applayer::transforms::to_sha256(b"EvilBot/1.0");
    let hex: String = digest.iter().map(|b| format!("{b:02X} ")).collect();
    let rule = format!(
        "alert http any any -> any any (http.user_agent; to_sha256; content:\"|{}|\"; sid:1;)",
        hex.trim()
    );
    let e = engine(&[
        &rule,
        // The same buffer with and without a transform: two lists.
        "alert http any any -> any any (http.user_agent; content:\"Evil\"; http.user_agent; to_uppercase; content:\"EVILBOT\"; sid:2;)",
        "alert http any any -> any any (http.user_agent; content:\"EVILBOT\"; sid:3;)",
    ]);
    let app = http(&[REQUEST], &[]);
    let mut txst = TxDetectState::default();
    let mut st = FlowDetectState::default();
    assert_eq!(
        inspect(&e, &app, 0, AppDir::ToServer, &mut txst, &mut st),
        vec![1, 2]
    );
}

/// A DNS query message with several questions (type A, class IN).
fn dns_query(id: u16, names: &[&str]) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00]);
    m.extend_from_slice(&(names.len() as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    for n in names {
        for label in n.split('.') {
            m.push(label.len() as u8);
            m.extend_from_slice(label.as_bytes());
        }
        m.push(0);
        m.extend_from_slice(&[0, 1, 0, 1]);
    }
    m
}

const DNS_RULES: &[&str] = &[
    "alert dns any any -> any any (dns.query; dotprefix; content:\".evil.com\"; endswith; sid:1;)",
    "alert dns any any -> any any (dns.query; content:\"a.example\"; content:\"evil\"; sid:2;)",
    "alert dns any any -> any any (dns.query; content:\"a.example\"; sid:3;)",
    "alert udp any any -> any 53 (dns.query; content:\"evil\"; nocase; sid:4;)",
    "alert udp any any -> any 5353 (dns.query; content:\"evil\"; sid:5;)",
    "alert dns any any -> any any (dns.opcode:0; dns.rrtype:1; sid:6;)",
    "alert dns any any -> any any (dns.rrtype:28; sid:7;)",
    "alert dns any any -> any any (dns.rcode:0; sid:8;)",
];

#[test]
fn dns_multi_buffer_and_dotprefix() {
    let e = engine(DNS_RULES);
    let mut app = AppLayerState::new(AppProto::Dns, Transport::Udp);
    app.feed(
        AppDir::ToServer,
        &dns_query(7, &["a.example", "www.evil.com"]),
        1,
    );
    app.feed(AppDir::ToServer, &dns_query(8, &["notevil.com"]), 2);
    let txs = app.transactions();
    assert_eq!(txs.len(), 2);
    let mut st = FlowDetectState::default();
    // Each instance is inspected on its own: sid 2 needs both contents in
    // one name. Header ports are verified (sid 5 is for port 5353).
    // dns.rcode without a flow direction reads requests too (sid 8).
    assert_eq!(
        inspect(
            &e,
            &app,
            txs[0].id,
            AppDir::ToServer,
            &mut TxDetectState::default(),
            &mut st
        ),
        vec![1, 3, 4, 6, 8]
    );
    // dotprefix: ".notevil.com" does not end with ".evil.com".
    assert_eq!(
        inspect(
            &e,
            &app,
            txs[1].id,
            AppDir::ToServer,
            &mut TxDetectState::default(),
            &mut st
        ),
        vec![4, 6, 8]
    );
}

#[test]
fn domain_and_tld_transforms_on_dns_query() {
    let e = engine(&[
        "alert dns any any -> any any (dns.query; domain; content:\"example.co.uk\"; startswith; endswith; sid:1;)",
        "alert dns any any -> any any (dns.query; tld; content:\"co.uk\"; startswith; endswith; sid:2;)",
        "alert dns any any -> any any (dns.query; tld; content:\"uk\"; startswith; endswith; sid:3;)",
        "alert dns any any -> any any (dns.query; domain; bsize:0; sid:4;)",
        "alert dns any any -> any any (dns.query; domain; content:\"b.unknowntld\"; startswith; endswith; sid:5;)",
    ]);
    let run = |names: &[&str]| {
        let mut app = AppLayerState::new(AppProto::Dns, Transport::Udp);
        app.feed(AppDir::ToServer, &dns_query(7, names), 1);
        let txs = app.transactions();
        inspect(
            &e,
            &app,
            txs[0].id,
            AppDir::ToServer,
            &mut TxDetectState::default(),
            &mut FlowDetectState::default(),
        )
    };
    assert_eq!(run(&["www.mail.example.co.uk"]), vec![1, 2]);
    // A bare public suffix has no registrable domain: both give an empty
    // buffer, as in Suricata.
    assert_eq!(run(&["co.uk"]), vec![4]);
    assert_eq!(run(&["a.b.unknowntld"]), vec![5]);
}

/// A TLS 1.2 ClientHello record with an SNI extension.
fn client_hello(sni: &str) -> Vec<u8> {
    let mut ext = Vec::new();
    let name = sni.as_bytes();
    ext.extend_from_slice(&[0, 0]);
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

#[test]
fn tls_sni() {
    let e = engine(&[
        "alert tls any any -> any any (tls.sni; content:\"evil.example\"; endswith; sid:1;)",
        "alert tls any any -> any any (tls.sni; content:\"good.example\"; sid:2;)",
        "alert tls any any -> any any (tls.cert_subject; content:\"CN=\"; sid:3;)",
        "alert tls any any -> any any (flow:to_server; tls.version:1.2; sid:4;)",
        "alert tls any any -> any any (flow:to_server; tls.version:1.3; sid:5;)",
        "alert tls any any -> any any (flow:to_client; tls.version:1.2; sid:6;)",
    ]);
    let mut app = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    app.feed(AppDir::ToServer, &client_hello("www.evil.example"), 1);
    let tx = app.transactions()[0].id;
    let mut st = FlowDetectState::default();
    let mut txst = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, tx, AppDir::ToServer, &mut txst, &mut st),
        vec![1, 4]
    );
    // No ServerHello yet: nothing to match to the client.
    assert!(inspect(&e, &app, tx, AppDir::ToClient, &mut txst, &mut st).is_empty());
}

#[test]
fn tx_rules_are_not_packet_rules() {
    let e = engine(&[
        "alert http any any -> any any (http.uri; content:\"index\"; sid:1;)",
        "alert http any any -> any any (content:\"index\"; sid:2;)",
    ]);
    assert_eq!(e.groups.stats().prefilter_patterns, 1);
    let frame = packet(AppDir::ToServer, false, REQUEST);
    let detected = flow(AppDir::ToServer, AppProtoState::Detected(AppProto::Http));
    assert_eq!(packet_alerts(&e, &frame, detected), vec![2]);
}

#[test]
fn header_protocol_requires_detected_app_proto() {
    let e = engine(&[
        "alert http any any -> any any (content:\"GET\"; sid:1;)",
        "alert tcp any any -> any any (content:\"GET\"; sid:2;)",
        "alert dns any any -> any any (content:\"GET\"; sid:3;)",
        "alert tls any any -> any any (flow:to_server; sid:4;)",
    ]);
    let frame = packet(AppDir::ToServer, false, REQUEST);
    let at = |s| flow(AppDir::ToServer, s);
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Unknown)),
        vec![2]
    );
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Detected(AppProto::Http))),
        vec![1, 2]
    );
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Detected(AppProto::Tls))),
        vec![2, 4]
    );
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Failed)),
        vec![2]
    );
}

/// A `dcerpc` header also matches SMB flows (DCERPC over named pipes),
/// as Suricata's AppProtoEquals; `smb` does not match DCERPC flows.
#[test]
fn dcerpc_header_matches_smb_flows() {
    let e = engine(&[
        "alert dcerpc any any -> any any (content:\"GET\"; sid:1;)",
        "alert smb any any -> any any (content:\"GET\"; sid:2;)",
        "alert ssh any any -> any any (content:\"GET\"; sid:3;)",
    ]);
    let frame = packet(AppDir::ToServer, false, REQUEST);
    let at = |s| flow(AppDir::ToServer, s);
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Detected(AppProto::Smb))),
        vec![1, 2]
    );
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Detected(AppProto::Dcerpc))),
        vec![1]
    );
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Detected(AppProto::Ssh))),
        vec![3]
    );
    assert!(packet_alerts(&e, &frame, at(AppProtoState::Detected(AppProto::Http))).is_empty());
}

/// A DCERPC PDU (little-endian) of `ptype` with `body`.
fn dce_pdu(ptype: u8, flags: u8, call: u8, body: &[u8]) -> Vec<u8> {
    let len = 16 + body.len() as u16;
    let mut v = vec![5, 0, ptype, flags, 0x10, 0, 0, 0];
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(&[0, 0, call, 0, 0, 0]);
    v.extend_from_slice(body);
    v
}

/// A flow that bound netlogon 1.0 on context 0 (first fragment flag as
/// given), had it accepted, and called opnum 26 with stub `stub`.
fn dcerpc_flow(bind_flags: u8, stub: &[u8]) -> AppLayerState {
    let mut bind = vec![0xb8, 0x10, 0xb8, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0];
    bind.extend_from_slice(&[
        0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab, 0xef, 0, 1, 0x23, 0x45, 0x67, 0xcf, 0xfb,
    ]);
    bind.extend_from_slice(&[1, 0, 0, 0]);
    bind.extend_from_slice(&[0x04; 20]);
    let mut ack = vec![0xb8, 0x10, 0xb8, 0x10, 1, 0, 0, 0, 0, 0, 0, 0];
    ack.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    ack.extend_from_slice(&[0x04; 20]);
    let mut req = vec![0, 0, 0, 0, 0, 0, 26, 0];
    req.extend_from_slice(stub);
    let mut app = AppLayerState::new(AppProto::Dcerpc, Transport::Tcp);
    app.feed(AppDir::ToServer, &dce_pdu(11, bind_flags, 1, &bind), 1);
    app.feed(AppDir::ToClient, &dce_pdu(12, 3, 1, &ack), 2);
    app.feed(AppDir::ToServer, &dce_pdu(0, 3, 2, &req), 3);
    app.feed(AppDir::ToClient, &dce_pdu(2, 3, 2, &[0; 8]), 4);
    app
}

const DCERPC_RULES: &[&str] = &[
    "alert dcerpc any any -> any any (flow:to_server; dcerpc.iface:12345678-1234-abcd-ef00-01234567cffb; sid:1;)",
    "alert dcerpc any any -> any any (flow:to_server; dce_iface:12345678-1234-ABCD-ef00-01234567cffb,>1; sid:2;)",
    "alert dcerpc any any -> any any (flow:to_server; dcerpc.iface:12345678-1234-abcd-ef00-01234567cffb,=1,any_frag; sid:3;)",
    "alert dcerpc any any -> any any (flow:to_server; dcerpc.iface:e1af8308-5d1f-11c9-91a4-08002b14a0fa; sid:4;)",
    "alert dcerpc any any -> any any (flow:to_server; dcerpc.opnum:20-30; sid:5;)",
    "alert dcerpc any any -> any any (flow:to_server; dce_opnum:1,2,3; sid:6;)",
    "alert dcerpc any any -> any any (flow:to_server; dcerpc.opnum:>25; sid:7;)",
    "alert dcerpc any any -> any any (flow:to_server; dcerpc.stub_data; content:\"|ff ff 2f 21|\"; endswith; sid:8;)",
    "alert dcerpc any any -> any any (flow:to_server; dce_stub_data; content:\"nothere\"; sid:9;)",
    "alert dcerpc any any -> any any (dcerpc.opnum:26; dcerpc.iface:12345678-1234-abcd-ef00-01234567cffb; sid:10;)",
];

/// dcerpc.iface (version comparison, any_frag), dcerpc.opnum (lists,
/// ranges, comparisons) and dcerpc.stub_data with their dce_ aliases.
#[test]
fn dcerpc_keywords() {
    let e = engine(DCERPC_RULES);
    assert_eq!(e.rules.len(), DCERPC_RULES.len());
    let app = dcerpc_flow(3, &[0, 0, 0, 0, 0xff, 0xff, 0x2f, 0x21]);
    let txs = app.transactions();
    assert_eq!(txs.len(), 2);
    let mut st = FlowDetectState::default();
    let mut txst = TxDetectState::default();
    // The bind transaction has no request: nothing matches it.
    assert!(inspect(&e, &app, txs[0].id, AppDir::ToServer, &mut txst, &mut st).is_empty());
    let mut txst = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, txs[1].id, AppDir::ToServer, &mut txst, &mut st),
        vec![1, 3, 5, 7, 8, 10]
    );
    // Without a flow direction the rule is also inspected to the client.
    let mut txst = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, txs[1].id, AppDir::ToClient, &mut txst, &mut st),
        vec![10]
    );
    // A bind without PFC_FIRST_FRAG: only any_frag matches the interface.
    let app = dcerpc_flow(0, b"x");
    let mut txst = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, 1, AppDir::ToServer, &mut txst, &mut st),
        vec![3, 5, 7]
    );
    // Bad values make the rule invalid.
    let (_, report) = DetectEngine::build(
        &parse(&[
            "alert dcerpc any any -> any any (dcerpc.iface:1234; sid:20;)",
            "alert dcerpc any any -> any any (dcerpc.opnum:5-2; sid:21;)",
            "alert dcerpc any any -> any any (dcerpc.iface:12345678-1234-abcd-ef00-01234567cffb,any_frag,1; sid:22;)",
        ]),
        &ClassificationConfig::default(),
    );
    assert_eq!(report.loaded, 0);
}

#[test]
fn app_layer_protocol_keyword() {
    let e = engine(&[
        "alert tcp any any -> any any (app-layer-protocol:failed; sid:1;)",
        "alert tcp any any -> any any (app-layer-protocol:!http; sid:2;)",
        "alert tcp any any -> any any (app-layer-protocol:http; sid:3;)",
        "alert tcp any any -> any any (app-layer-protocol:http; content:\"xyz\"; sid:4;)",
    ]);
    let frame = packet(AppDir::ToServer, false, b"xyz");
    // Rules whose only match is app-layer-protocol are PD-only: they
    // match on the packet on which detection completed.
    let at = |s| FlowView {
        app_proto_decided_now: true,
        ..flow(AppDir::ToServer, s)
    };
    assert_eq!(
        packet_alerts(
            &e,
            &frame,
            flow(AppDir::ToServer, AppProtoState::Detected(AppProto::Http))
        ),
        vec![4]
    );
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Failed)),
        vec![1, 2]
    );
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Detected(AppProto::Http))),
        vec![3, 4]
    );
    assert_eq!(
        packet_alerts(&e, &frame, at(AppProtoState::Detected(AppProto::Dns))),
        vec![2]
    );
    assert!(packet_alerts(&e, &frame, at(AppProtoState::Unknown)).is_empty());
    // Protocols Vigil does not detect stay not evaluable.
    let (_, report) = DetectEngine::build(
        &parse(&["alert tcp any any -> any any (app-layer-protocol:s7commplus; sid:9;)"]),
        &ClassificationConfig::default(),
    );
    assert_eq!(
        report.not_evaluable_by_keyword.get("app-layer-protocol"),
        Some(&1)
    );
}

#[test]
fn unsupported_app_buffers_stay_not_evaluable() {
    let (e, report) = DetectEngine::build(
        &parse(&[
            "alert tcp any any -> any any (dns.query.name; content:\"x\"; sid:1;)",
            "alert http any any -> any any (http.uri; luaxform:x.lua; content:\"x\"; sid:2;)",
            "alert http any any -> any any (http.uri; content:\"x\"; sid:3;)",
        ]),
        &ClassificationConfig::default(),
    );
    assert_eq!(e.rules.len(), 1);
    assert_eq!(report.loaded, 1);
    assert_eq!(report.skipped.len(), 2);
    assert_eq!(report.not_evaluable_by_keyword.get("luaxform"), Some(&1));
}

#[test]
fn same_hits_with_every_prefilter_engine() {
    let mut rules: Vec<String> = http_rules().iter().map(|s| s.to_string()).collect();
    rules.extend(DNS_RULES.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = rules.iter().map(String::as_str).collect();
    let run = |e: &DetectEngine| {
        let mut out = Vec::new();
        let app = http(
            &[REQUEST, b"GET /admin HTTP/1.1\r\nHost: b\r\n\r\n"],
            &[RESPONSE],
        );
        let mut st = FlowDetectState::default();
        for t in app.transactions() {
            let mut txst = TxDetectState::default();
            for dir in [AppDir::ToServer, AppDir::ToClient] {
                out.push(inspect(e, &app, t.id, dir, &mut txst, &mut st));
            }
        }
        let mut dns = AppLayerState::new(AppProto::Dns, Transport::Udp);
        dns.feed(
            AppDir::ToServer,
            &dns_query(1, &["a.example", "x.evil.com"]),
            1,
        );
        for t in dns.transactions() {
            out.push(inspect(
                e,
                &dns,
                t.id,
                AppDir::ToServer,
                &mut TxDetectState::default(),
                &mut st,
            ));
        }
        out
    };
    let reference = run(&engine(&refs));
    assert!(reference.iter().any(|v| !v.is_empty()));
    let kinds = EngineKind::available_kinds();
    assert!(kinds.len() > 1);
    for k in kinds {
        let e = engine_with(&refs, &mut Selector::new(Selection::Fixed(k)));
        assert_eq!(run(&e), reference, "engine {k:?}");
    }
}

/// Transaction groups of ET Open (when the shared ruleset is present):
/// `cargo test --release -p vigil-detect --test app_rules -- --ignored
/// --nocapture`.
#[test]
#[ignore]
fn et_open_tx_group_stats() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/rules/et-open/emerging.rules"
    );
    if !std::path::Path::new(path).exists() {
        return;
    }
    let loaded = vigil_rules::load_rules_file(path, &Vars::default());
    let (e, report) = DetectEngine::build(&loaded.rules, &ClassificationConfig::default());
    let tx = e.rules.iter().filter(|r| r.is_tx()).count();
    println!(
        "loaded {} rules, {} transaction rules, {} buffer lists",
        report.loaded,
        tx,
        e.tx.lists.len()
    );
    for proto in [AppProto::Http, AppProto::Dns, AppProto::Tls] {
        for dir in [AppDir::ToServer, AppDir::ToClient] {
            let g = e.tx.group(proto, dir).unwrap();
            println!(
                "{:?} {:?}: {} rules, {} always, {} prefilter lists",
                proto,
                dir,
                g.rule_count(),
                g.always.len(),
                g.prefilters.len()
            );
        }
    }
}

#[test]
fn app_layer_event_matches_the_transaction_that_raised_it() {
    let e = engine(&[
        "alert http any any -> any any (msg:\"dup cl\"; flow:to_server; app-layer-event:http.duplicate_content_length_field_in_request; sid:1;)",
        "alert http any any -> any any (msg:\"long\"; flow:to_server; app-layer-event:http.request_field_too_long; sid:2;)",
    ]);
    let dup: &[u8] =
        b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc";
    let app = http(&[dup, REQUEST], &[]);
    let mut st = FlowDetectState::default();
    let mut t0 = TxDetectState::default();
    let mut t1 = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, 0, AppDir::ToServer, &mut t0, &mut st),
        vec![1]
    );
    // Once per transaction, and not on a clean one.
    assert!(inspect(&e, &app, 0, AppDir::ToServer, &mut t0, &mut st).is_empty());
    assert!(inspect(&e, &app, 1, AppDir::ToServer, &mut t1, &mut st).is_empty());
    // An unknown event name leaves the rule not evaluable.
    let (_, report) = DetectEngine::build(
        &parse(&[
            "alert http any any -> any any (msg:\"x\"; app-layer-event:http.no_such_event; sid:3;)",
        ]),
        &ClassificationConfig::default(),
    );
    assert_eq!(
        report.not_evaluable_by_keyword.get("app-layer-event"),
        Some(&1)
    );
}

#[test]
fn multi_integer_index_modes() {
    use vigil_detect::app::{MultiUint, TxCheck};
    let m = |s: &str| MultiUint::parse(s, 65535).unwrap();
    let v = [1u64, 5, 1];
    assert!(m("5").matches(&v));
    assert!(m("1,0").matches(&v));
    assert!(!m("1,1").matches(&v));
    assert!(m("1,-1").matches(&v));
    assert!(!m("1,all").matches(&v));
    assert!(m("1,all").matches(&[1, 1]));
    assert!(!m("1,all").matches(&[]));
    assert!(m("1,all_or_absent").matches(&[]));
    assert!(m("1,or_absent").matches(&[]));
    assert!(m("1,nb 2").matches(&v));
    assert!(m("1,oob_or 7").matches(&v));
    assert!(m("count 3").matches(&v));
    // Subslice [1..3) = [5, 1].
    assert!(m("5,0,1:3").matches(&v));
    assert!(MultiUint::parse("1,x", 65535).is_err());
    assert!(matches!(
        TxCheck::parse("ssl_version", "!tls1.3,tls1.2"),
        Some(Ok(TxCheck::SslVersion { negate: true, .. }))
    ));
    assert!(matches!(
        TxCheck::parse("ssl_version", "tls9"),
        Some(Err(_))
    ));
}

#[test]
fn app_layer_state_compares_the_transaction_progress() {
    let e = engine(&[
        "alert http1 any any -> any any (msg:\"before body\"; app-layer-state:<request_body; sid:1;)",
        "alert http1 any any -> any any (msg:\"before headers\"; app-layer-state:<request_headers; sid:6;)",
        "alert http1 any any -> any any (msg:\"past headers\"; app-layer-state:>request_headers; sid:2;)",
        "alert http1 any any -> any any (msg:\"hook\"; app-layer-state:request_headers; sid:3;)",
        "alert http1 any any -> any any (msg:\"response\"; app-layer-state:>response_started; sid:4;)",
        "alert http1 any any -> any any (msg:\"past line, uri\"; app-layer-state:>request_line; http.uri; content:\"/up\"; sid:5;)",
    ]);
    // The request line and part of the headers: as in libhtp, the
    // request is in its headers (request_headers, 2).
    let mut app = http(&[b"POST /up HTTP/1.1\r\nHost: a\r\n"], &[]);
    assert_eq!(app.state_progress(0, AppDir::ToServer), Some(2));
    assert_eq!(app.state_progress(0, AppDir::ToClient), Some(0));
    let mut st = FlowDetectState::default();
    let mut txst = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, 0, AppDir::ToServer, &mut txst, &mut st),
        vec![1, 3, 5]
    );
    // The headers end and a body is expected: as in libhtp, the request
    // is in request_body (3) right away.
    app.feed(AppDir::ToServer, b"Content-Length: 4\r\n\r\n", 2);
    assert_eq!(app.state_progress(0, AppDir::ToServer), Some(3));
    let mut fresh = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, 0, AppDir::ToServer, &mut fresh, &mut st),
        vec![2, 3, 5]
    );
    // The body completes the request (request_complete, 5); the rules
    // fired once for the transaction, the hook rule (no operator) too.
    app.feed(AppDir::ToServer, b"abcd", 2);
    assert_eq!(app.state_progress(0, AppDir::ToServer), Some(5));
    assert!(inspect(&e, &app, 0, AppDir::ToServer, &mut fresh, &mut st).is_empty());
    // The response side: only the to-client rule, once a line is in.
    assert!(inspect(&e, &app, 0, AppDir::ToClient, &mut fresh, &mut st).is_empty());
    app.feed(AppDir::ToClient, b"HTTP/1.1 200 OK\r\n", 3);
    assert_eq!(app.state_progress(0, AppDir::ToClient), Some(2));
    assert_eq!(
        inspect(&e, &app, 0, AppDir::ToClient, &mut fresh, &mut st),
        vec![4]
    );

    // TLS: a ClientHello is client_hello_done (1).
    let e = engine(&[
        "alert tls any any -> any any (msg:\"hello\"; app-layer-state:>client_in_progress; sid:11;)",
        "alert tls any any -> any any (msg:\"no cert\"; app-layer-state:<client_cert_done; sid:12;)",
        "alert tls any any -> any any (msg:\"past hello\"; app-layer-state:>client_hello_done; sid:13;)",
        "alert tls any any -> any any (msg:\"server\"; app-layer-state:server_hello; sid:14;)",
    ]);
    let mut app = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    app.feed(AppDir::ToServer, &client_hello("a.example"), 1);
    let tx = app.transactions()[0].id;
    assert_eq!(app.state_progress(tx, AppDir::ToServer), Some(1));
    let mut txst = TxDetectState::default();
    assert_eq!(
        inspect(&e, &app, tx, AppDir::ToServer, &mut txst, &mut st),
        vec![11, 12]
    );
    assert!(inspect(&e, &app, tx, AppDir::ToClient, &mut txst, &mut st).is_empty());

    // SSH and SMTP name states Vigil does not track: not evaluable.
    let (_, report) = DetectEngine::build(
        &parse(&[
            "alert ssh any any -> any any (msg:\"x\"; app-layer-state:>request_banner_done; sid:21;)",
            "alert smtp any any -> any any (msg:\"x\"; app-layer-state:request_data; sid:22;)",
        ]),
        &ClassificationConfig::default(),
    );
    assert_eq!(
        report.not_evaluable_by_keyword.get("app-layer-state"),
        Some(&2)
    );
}

/// `file.data` and `http.response_body` (and `http.request_body`) are the
/// same bytes on HTTP/1: their fast patterns share one engine and the
/// body is scanned once. Each list's rules must still fire exactly where
/// they did with an engine per list, on every engine kind; a list with a
/// transform is not merged (its bytes differ).
#[test]
fn file_data_and_body_lists_share_one_scan() {
    let rules = [
        "alert http any any -> any any (flow:to_client; file.data; content:\"secret-a\"; sid:1;)",
        "alert http any any -> any any (flow:to_client; http.response_body; content:\"secret-b\"; sid:2;)",
        "alert http any any -> any any (flow:to_client; http.response_body; content:\"absent-c\"; sid:3;)",
        "alert http any any -> any any (flow:to_server; file.data; content:\"upload-d\"; sid:4;)",
        "alert http any any -> any any (flow:to_server; http.request_body; content:\"upload-e\"; sid:5;)",
        "alert http any any -> any any (flow:to_server; http.request_body; to_lowercase; content:\"upload-f\"; sid:6;)",
    ];
    let e = engine(&rules);
    let merged = |dir| e.tx.group(AppProto::Http, dir).unwrap().merged.len();
    assert_eq!(merged(AppDir::ToClient), 1);
    // To-server: file.data pairs with the plain request body only.
    assert_eq!(merged(AppDir::ToServer), 1);
    let req: &[u8] =
        b"POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 26\r\n\r\nupload-d upload-e UPLOAD-F";
    let resp: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\nsecret-a secret-b";
    let run = |e: &DetectEngine| {
        let app = http(&[req], &[resp]);
        let mut st = FlowDetectState::default();
        let mut txst = TxDetectState::default();
        [AppDir::ToServer, AppDir::ToClient]
            .into_iter()
            .map(|dir| inspect(e, &app, 0, dir, &mut txst, &mut st))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(&e), vec![vec![4, 5, 6], vec![1, 2]]);
    for k in EngineKind::available_kinds() {
        let e = engine_with(&rules, &mut Selector::new(Selection::Fixed(k)));
        assert_eq!(run(&e), vec![vec![4, 5, 6], vec![1, 2]], "engine {k:?}");
    }
}
