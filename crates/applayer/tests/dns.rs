//! DNS over UDP and TCP: compression pointers, a pointer loop, the
//! buffers Suricata inspects and the version 3 EVE object.

use vigil_applayer::{AppLayerState, AppProto, BufferId, Direction, Transport};

/// `www.example.com A?`, id 0x1a2b, RD.
const QUERY: &[u8] = &[
    0x1a, 0x2b, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // header
    0x03, b'w', b'w', b'w', 0x07, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0x03, b'c', b'o', b'm',
    0x00, 0x00, 0x01, 0x00, 0x01,
];

/// The answer: CNAME to cdn.example.com (compressed), its A record, an NS
/// authority and an empty EDNS OPT record.
const RESPONSE: &[u8] = &[
    0x1a, 0x2b, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x01, 0x00, 0x01, // header
    // question at 12
    0x03, b'w', b'w', b'w', 0x07, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0x03, b'c', b'o', b'm',
    0x00, 0x00, 0x01, 0x00, 0x01,
    // answer 1 at 33: www.example.com CNAME cdn.example.com (rdata at 45)
    0xc0, 0x0c, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x06, 0x03, b'c', b'd', b'n',
    0xc0, 0x10, // answer 2: cdn.example.com A 93.184.216.34
    0xc0, 0x2d, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x04, 0x5d, 0xb8, 0xd8, 0x22,
    // authority: example.com NS ns.example.com
    0xc0, 0x10, 0x00, 0x02, 0x00, 0x01, 0x00, 0x01, 0x51, 0x80, 0x00, 0x05, 0x02, b'n', b's', 0xc0,
    0x10, // additional: OPT, no options
    0x00, 0x00, 0x29, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

fn names(s: &AppLayerState, tx: u64, id: BufferId, dir: Direction) -> Vec<String> {
    s.buffers(tx, id, dir)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect()
}

fn check(s: &AppLayerState) {
    use BufferId::*;
    use Direction::*;
    let txs = s.transactions();
    assert_eq!(txs.len(), 2);
    assert_eq!(names(s, 0, DnsQuery, ToServer), ["www.example.com"]);
    assert!(names(s, 0, DnsQuery, ToClient).is_empty());
    assert!(
        names(s, 1, DnsQuery, ToClient).is_empty(),
        "dns.query is requests only"
    );
    assert_eq!(names(s, 1, DnsQueriesRrname, ToClient), ["www.example.com"]);
    assert_eq!(
        names(s, 1, DnsAnswersRrname, ToClient),
        ["www.example.com", "cdn.example.com"]
    );
    assert_eq!(
        names(s, 1, DnsResponseRrname, ToClient),
        [
            "www.example.com",
            "www.example.com",
            "cdn.example.com",
            "cdn.example.com",
            "example.com",
            "ns.example.com",
            ""
        ]
    );
    let dns = s.as_dns().unwrap();
    let resp = dns.tx(1).unwrap();
    assert_eq!(resp.opcode(), 0);
    assert_eq!(resp.rcode(), 0);
    assert_eq!(resp.query_rrtypes().collect::<Vec<_>>(), [1]);

    let q = s.eve(0).unwrap();
    assert_eq!(q["version"], 3);
    assert_eq!(q["type"], "request");
    assert_eq!(q["id"], 0x1a2b);
    assert_eq!(q["flags"], "100");
    assert_eq!(q["rd"], true);
    assert_eq!(q["queries"][0]["rrname"], "www.example.com");
    assert_eq!(q["queries"][0]["rrtype"], "A");
    let r = s.eve(1).unwrap();
    assert_eq!(r["type"], "response");
    assert_eq!(r["flags"], "8180");
    assert_eq!(r["qr"], true);
    assert_eq!(r["ra"], true);
    assert_eq!(r["rcode"], "NOERROR");
    assert_eq!(r["answers"][0]["rrtype"], "CNAME");
    assert_eq!(r["answers"][0]["rdata"], "cdn.example.com");
    assert_eq!(r["answers"][0]["ttl"], 3600);
    assert_eq!(r["answers"][1]["rdata"], "93.184.216.34");
    assert_eq!(r["grouped"]["A"][0], "93.184.216.34");
    assert_eq!(r["grouped"]["CNAME"][0], "cdn.example.com");
    assert_eq!(r["authorities"][0]["rdata"], "ns.example.com");
    assert!(
        r.get("additionals").is_none(),
        "empty OPT records are not logged"
    );
}

#[test]
fn udp_query_and_response() {
    let mut s = AppLayerState::new(AppProto::Dns, Transport::Udp);
    assert!(s.feed(Direction::ToServer, QUERY, 0).is_empty());
    assert!(s.feed(Direction::ToClient, RESPONSE, 0).is_empty());
    check(&s);
}

fn tcp(msg: &[u8]) -> Vec<u8> {
    let mut v = (msg.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(msg);
    v
}

#[test]
fn tcp_every_split_point() {
    let q = tcp(QUERY);
    let r = tcp(RESPONSE);
    for i in 0..=q.len() {
        let mut s = AppLayerState::new(AppProto::Dns, Transport::Tcp);
        s.feed(Direction::ToServer, &q[..i], 0);
        s.feed(Direction::ToServer, &q[i..], 0);
        s.feed(Direction::ToClient, &r, 0);
        check(&s);
    }
    for i in 0..=r.len() {
        let mut s = AppLayerState::new(AppProto::Dns, Transport::Tcp);
        s.feed(Direction::ToServer, &q, 0);
        s.feed(Direction::ToClient, &r[..i], 0);
        s.feed(Direction::ToClient, &r[i..], 0);
        check(&s);
    }
}

#[test]
fn tcp_two_messages_in_one_segment() {
    let mut both = tcp(QUERY);
    both.extend_from_slice(&tcp(QUERY));
    let mut s = AppLayerState::new(AppProto::Dns, Transport::Tcp);
    s.feed(Direction::ToServer, &both, 0);
    assert_eq!(s.transactions().len(), 2);
}

#[test]
fn pointer_loop_in_answer() {
    let mut m = RESPONSE[..33].to_vec();
    m[7] = 1; // one answer
    m[9] = 0;
    m[11] = 0;
    // An answer whose name points to itself (offset 33).
    m.extend_from_slice(&[0xc0, 33, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]);
    let mut s = AppLayerState::new(AppProto::Dns, Transport::Udp);
    let ev = s.feed(Direction::ToClient, &m, 0);
    let kw: Vec<String> = ev.iter().map(|e| e.keyword()).collect();
    assert!(kw.contains(&"dns.infinite_loop".to_string()), "{kw:?}");
}

#[test]
fn anomalies() {
    // A response sent to the server, with the Z flag and an invalid opcode.
    let mut m = QUERY.to_vec();
    m[2] = 0x80 | (9 << 3);
    m[3] = 0x40;
    let mut s = AppLayerState::new(AppProto::Dns, Transport::Udp);
    let ev = s.feed(Direction::ToServer, &m, 0);
    let kw: Vec<String> = ev.iter().map(|e| e.keyword()).collect();
    assert_eq!(
        kw,
        ["dns.not_a_request", "dns.z_flag_set", "dns.invalid_opcode"]
    );
    assert_eq!(s.as_dns().unwrap().tx(0).unwrap().opcode(), 9);
    let ev = s.feed(Direction::ToServer, &QUERY[..20], 0);
    assert_eq!(ev[0].keyword(), "dns.malformed_data");
}
