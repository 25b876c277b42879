//! The application layer in the pipeline, end to end from a capture:
//! protocol detection by content, transaction records, `app_proto` on
//! alerts, and the same output whatever the worker count.

mod common;

use std::net::SocketAddr;

use common::{engine, write_pcap};
use vigil_craft::{PacketBuilder, TcpSession, TimedFrame};
use vigil_detect::CompiledRule;
use vigil_engine::{run_offline, AlertOut, AlertSink, EngineConfig, OutKind, RunStats};
use vigil_source::PcapSource;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// What a test looks at: alerts and transaction records, in output order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Out {
    kind: OutKind,
    sid: u32,
    index: u64,
    src: String,
    app_proto: Option<&'static str>,
    key: Option<&'static str>,
    tx_id: Option<u64>,
    json: Option<String>,
}

#[derive(Default)]
struct Collect(Vec<Out>);

impl Collect {
    fn push(&mut self, a: &AlertOut, sid: u32) {
        self.0.push(Out {
            kind: a.kind,
            sid,
            index: a.index,
            src: format!("{}:{}", a.src, a.sp.unwrap_or(0)),
            app_proto: a.app_proto,
            key: a.app.as_ref().map(|r| r.key),
            tx_id: a.app.as_ref().map(|r| r.tx_id),
            json: a.app.as_ref().map(|r| r.json().into_owned()),
        });
    }
}

impl AlertSink for Collect {
    fn alert(&mut self, a: &AlertOut, r: &CompiledRule) -> std::io::Result<()> {
        self.push(a, r.sid);
        Ok(())
    }
    fn tx_log(&mut self, a: &AlertOut) -> std::io::Result<()> {
        self.push(a, 0);
        Ok(())
    }
}

fn run(name: &str, frames: Vec<TimedFrame>, rules: &str, workers: usize) -> (Vec<Out>, RunStats) {
    run_cfg(name, frames, rules, workers, false)
}

fn run_cfg(
    name: &str,
    frames: Vec<TimedFrame>,
    rules: &str,
    workers: usize,
    log_anomaly: bool,
) -> (Vec<Out>, RunStats) {
    let path = write_pcap(name, frames);
    let cfg = EngineConfig {
        workers,
        log_anomaly,
        ..EngineConfig::default()
    };
    let src = PcapSource::open(&path).expect("open pcap");
    let mut sink = Collect::default();
    let stats = run_offline(src, engine(rules), &cfg, &mut sink, &mut |_, _| {}).expect("run");
    let _ = std::fs::remove_file(&path);
    (sink.0, stats)
}

fn records(v: &[Out], key: &str) -> Vec<serde_json::Value> {
    v.iter()
        .filter(|o| o.kind == OutKind::TxLog && o.key == Some(key))
        .map(|o| serde_json::from_str(o.json.as_deref().unwrap()).unwrap())
        .collect()
}

/// Two pipelined HTTP requests on a port that is not HTTP's.
fn http_session() -> Vec<TimedFrame> {
    let mut s = TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.1.1:8081"))
        .start_at((1_700_000_000, 0))
        .with_mss(20);
    s.handshake()
        .client_send(
            b"GET /a/../index.html?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: vigil-test\r\n\r\n\
              GET /second HTTP/1.1\r\nHost: example.com\r\n\r\n",
        )
        .server_send(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/html\r\n\r\nhello\
              HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
        )
        .close();
    s.into_frames()
}

#[test]
fn http_is_detected_by_content_and_each_transaction_is_logged_once() {
    let rules = "alert tcp any any -> any any (msg:\"pkt\"; content:\"vigil-test\"; sid:1;)";
    let (out, stats) = run("http", http_session(), rules, 1);
    let http = records(&out, "http");
    assert_eq!(http.len(), 2, "{out:#?}");
    assert_eq!(http[0]["url"], "/a/../index.html?q=1");
    assert_eq!(http[0]["hostname"], "example.com");
    assert_eq!(http[0]["http_user_agent"], "vigil-test");
    assert_eq!(http[0]["status"], 200);
    assert_eq!(http[1]["url"], "/second");
    assert_eq!(http[1]["status"], 404);
    let txs: Vec<u64> = out
        .iter()
        .filter(|o| o.kind == OutKind::TxLog)
        .map(|o| o.tx_id.unwrap())
        .collect();
    assert_eq!(txs, vec![0, 1]);
    // Records name the client as the source.
    assert!(out
        .iter()
        .filter(|o| o.kind == OutKind::TxLog)
        .all(|o| o.src == "10.0.0.1:40000"));
    // The packet rule's alert carries the flow's protocol.
    let alerts: Vec<&Out> = out.iter().filter(|o| o.kind == OutKind::Alert).collect();
    assert!(!alerts.is_empty());
    assert!(
        alerts.iter().all(|a| a.app_proto == Some("http")),
        "{alerts:#?}"
    );
    assert_eq!(stats.workers.app_flows.get("http"), Some(&1));
    assert_eq!(stats.workers.tx_logged, 2);
}

/// A transaction's record is written at the packet that completes it,
/// not later: a flow that goes on (here a second request a minute on)
/// must not hold it back to its next data or its end. Checked with
/// detection on, and for a flow a `pass` rule took out of detection
/// (its transactions are logged by another path).
#[test]
fn a_transaction_is_logged_at_the_packet_that_completes_it() {
    for rules in [
        "alert tcp any any -> any any (msg:\"pkt\"; content:\"zzz-none\"; sid:1;)",
        "pass tcp any any -> any any (content:\"GET /first\"; sid:2;)",
    ] {
        let mut s = TcpSession::new(addr("10.0.0.1:40001"), addr("10.0.1.1:8082"))
            .start_at((1_700_000_000, 0));
        s.handshake()
            .client_send(b"GET /first HTTP/1.1\r\nHost: example.com\r\n\r\n")
            .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let first_exchange = s.frames().len() as u64;
        s.advance(60_000_000)
            .client_send(b"GET /second HTTP/1.1\r\nHost: example.com\r\n\r\n")
            .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let second_exchange = s.frames().len() as u64;
        s.advance(60_000_000).close();
        let (out, _) = run("http-log-at", s.into_frames(), rules, 1);
        let http: Vec<&Out> = out
            .iter()
            .filter(|o| o.kind == OutKind::TxLog && o.key == Some("http"))
            .collect();
        assert_eq!(http.len(), 2, "{rules}: {out:#?}");
        // Record indices count frames from 1.
        assert!(
            (1..=first_exchange).contains(&http[0].index),
            "{rules}: first record at {} (first exchange ends at {first_exchange})",
            http[0].index
        );
        assert!(
            (first_exchange + 1..=second_exchange).contains(&http[1].index),
            "{rules}: second record at {} (second exchange {first_exchange}..{second_exchange})",
            http[1].index
        );
    }
}

#[test]
fn records_of_types_not_logged_are_not_built() {
    let rules = "alert tcp any any -> any any (msg:\"pkt\"; content:\"vigil-test\"; sid:1;)";
    let path = write_pcap("http-types", http_session());
    let run_types = |types: Option<Vec<&'static str>>| {
        let cfg = EngineConfig {
            workers: 1,
            log_tx_types: types,
            ..EngineConfig::default()
        };
        let mut sink = Collect::default();
        let src = PcapSource::open(&path).expect("open pcap");
        let stats = run_offline(src, engine(rules), &cfg, &mut sink, &mut |_, _| {}).expect("run");
        (sink.0, stats)
    };
    // `dns` only: the HTTP flow's transactions are parsed and inspected
    // (the alert keeps its app_proto) but no record is made.
    let (out, stats) = run_types(Some(vec!["dns", "tls"]));
    assert!(out.iter().all(|o| o.kind != OutKind::TxLog), "{out:#?}");
    assert!(out
        .iter()
        .any(|o| o.kind == OutKind::Alert && o.app_proto == Some("http")));
    assert_eq!(stats.workers.tx_logged, 0);
    // `http` listed: both records.
    let (out, stats) = run_types(Some(vec!["dns", "http"]));
    assert_eq!(records(&out, "http").len(), 2);
    assert_eq!(stats.workers.tx_logged, 2);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn unknown_protocol_fails_detection_and_logs_nothing() {
    let mut s =
        TcpSession::new(addr("10.0.0.1:40001"), addr("10.0.1.1:80")).start_at((1_700_000_000, 0));
    s.handshake()
        .client_send(&[0x00, 0x01, 0x02, 0xfe, 0xff, 0x10, 0x20, 0x30].repeat(20))
        .server_send(&[0x99; 200])
        .close();
    let rules = "alert tcp any any -> any any (msg:\"x\"; content:\"|fe ff|\"; sid:2;)";
    let (out, stats) = run("failed", s.into_frames(), rules, 1);
    assert!(out.iter().all(|o| o.kind == OutKind::Alert));
    assert!(out.iter().any(|o| o.sid == 2));
    assert!(
        out.iter().all(|o| o.app_proto == Some("failed")),
        "{out:#?}"
    );
    assert_eq!(stats.workers.app_flows.get("failed"), Some(&1));
    assert_eq!(stats.workers.tx_logged, 0);
}

fn dns_query(id: u16, name: &str) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.extend_from_slice(&[0, 0, 1, 0, 1]);
    m
}

fn dns_answer(id: u16, name: &str) -> Vec<u8> {
    let mut m = dns_query(id, name);
    m[2] = 0x81;
    m[3] = 0x80;
    m[7] = 1; // one answer
    m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7]);
    m
}

fn dns_frames() -> Vec<TimedFrame> {
    let b = PacketBuilder::default();
    let (c, s) = (addr("10.0.0.9:5353"), addr("10.0.1.53:53"));
    let mut frames = Vec::new();
    for (i, name) in ["example.com", "vigil.test"].iter().enumerate() {
        let q = b.udp(
            c.ip(),
            c.port() + i as u16,
            s.ip(),
            s.port(),
            &dns_query(7 + i as u16, name),
        );
        let a = b.udp(
            s.ip(),
            s.port(),
            c.ip(),
            c.port() + i as u16,
            &dns_answer(7 + i as u16, name),
        );
        frames.push(((1_700_000_100 + i as i64, 0), q));
        frames.push(((1_700_000_100 + i as i64, 500), a));
    }
    frames
}

#[test]
fn dns_over_udp_is_parsed_and_logged_per_transaction() {
    let rules = "alert udp any any -> any 53 (msg:\"q\"; content:\"example\"; sid:3;)";
    let (out, stats) = run("dns", dns_frames(), rules, 1);
    let dns = records(&out, "dns");
    assert!(dns.len() >= 2, "{out:#?}");
    let names: Vec<String> = dns
        .iter()
        .filter_map(|r| r["queries"][0]["rrname"].as_str().map(str::to_string))
        .collect();
    assert!(names.contains(&"example.com".to_string()), "{names:?}");
    assert!(names.contains(&"vigil.test".to_string()), "{names:?}");
    let alert = out.iter().find(|o| o.sid == 3).expect("packet rule alert");
    assert_eq!(alert.app_proto, Some("dns"));
    assert_eq!(stats.workers.app_flows.get("dns"), Some(&2));
}

/// Parser events become `anomaly` records, one per event of a finished
/// transaction, with its `tx_id`, from the client: upper case for HTTP
/// (libhtp's names), snake case for DNS (Suricata's Rust parser).
#[test]
fn parser_events_are_logged_as_anomalies_when_asked_for() {
    let mut s =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.1.1:80")).start_at((1_700_000_000, 0));
    s.handshake()
        .client_send(b"GET / HTTP/1.1\r\nUser-Agent: a\r\n\r\n")
        .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        .close();
    let mut frames = s.into_frames();
    let b = PacketBuilder::default();
    let mut q = dns_query(9, "z.test");
    q[3] |= 0x40; // the reserved Z bit
    let (c, d) = (addr("10.0.0.9:5353"), addr("10.0.1.53:53"));
    frames.push((
        (1_700_000_010, 0),
        b.udp(c.ip(), c.port(), d.ip(), d.port(), &q),
    ));
    let (off, _) = run("anomaly-off", frames.clone(), "", 1);
    assert!(records(&off, "anomaly").is_empty());
    let (out, stats) = run_cfg("anomaly", frames.clone(), "", 1, true);
    let a: Vec<&Out> = out.iter().filter(|o| o.key == Some("anomaly")).collect();
    let events: Vec<serde_json::Value> = records(&out, "anomaly");
    assert_eq!(events.len(), 2, "{out:#?}");
    assert_eq!(
        events[0],
        serde_json::json!({"app_proto": "http", "type": "applayer",
            "event": "MISSING_HOST_HEADER", "layer": "proto_parser"})
    );
    assert_eq!(a[0].tx_id, Some(0));
    assert_eq!(a[0].src, "10.0.0.1:40000");
    assert_eq!(a[0].app_proto, Some("http"));
    assert_eq!(events[1]["app_proto"], "dns");
    assert_eq!(events[1]["event"], "z_flag_set");
    assert_eq!(stats.workers.anomalies_logged, 2);
    let (two, _) = run_cfg("anomaly-w2", frames, "", 2, true);
    assert_eq!(out, two);
}

#[test]
fn output_is_the_same_for_one_and_two_workers() {
    let mut frames = http_session();
    frames.extend(dns_frames());
    frames.sort_by_key(|f| f.0);
    let rules = "alert tcp any any -> any any (msg:\"pkt\"; content:\"example\"; sid:1;)\n\
                 alert udp any any -> any any (msg:\"dns\"; content:\"vigil\"; sid:2;)";
    let (one, _) = run("w1", frames.clone(), rules, 1);
    let (two, _) = run("w2", frames, rules, 2);
    assert!(one.iter().any(|o| o.kind == OutKind::TxLog));
    assert_eq!(one, two);
}

#[test]
fn transaction_rules_fire_once_per_transaction_with_its_object() {
    let rules = "alert http any any -> any any (msg:\"uri\"; http.uri; content:\"/second\"; sid:10;)\n\
                 alert http any any -> any any (msg:\"host\"; http.host; content:\"example.com\"; sid:11;)\n\
                 alert http any any -> any any (msg:\"body\"; file.data; content:\"hello\"; sid:12;)\n\
                 alert http any any -> any any (msg:\"404\"; http.stat_code; content:\"404\"; sid:13;)";
    for workers in [1, 2] {
        let (out, _) = run("txrules", http_session(), rules, workers);
        let alerts: Vec<&Out> = out.iter().filter(|o| o.kind == OutKind::Alert).collect();
        let by = |sid: u32| -> Vec<&&Out> { alerts.iter().filter(|a| a.sid == sid).collect() };
        // One per transaction: the host rule fires for both requests.
        assert_eq!(by(11).len(), 2, "{alerts:#?}");
        assert_eq!(by(11)[0].tx_id, Some(0));
        assert_eq!(by(11)[1].tx_id, Some(1));
        let uri = by(10);
        assert_eq!(uri.len(), 1);
        assert_eq!(uri[0].tx_id, Some(1));
        assert_eq!(uri[0].key, Some("http"));
        // To-server rules alert on a client packet, to-client ones on a
        // server packet.
        assert_eq!(uri[0].src, "10.0.0.1:40000");
        let body = by(12);
        assert_eq!(body.len(), 1);
        assert_eq!(body[0].tx_id, Some(0));
        assert_eq!(body[0].src, "10.0.1.1:8081");
        let json: serde_json::Value =
            serde_json::from_str(body[0].json.as_deref().unwrap()).unwrap();
        assert_eq!(json["url"], "/a/../index.html?q=1");
        assert_eq!(by(13).len(), 1);
        assert_eq!(by(13)[0].tx_id, Some(1));
    }
}

fn tls_session() -> Vec<TimedFrame> {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../applayer/tests/data/");
    let client_hello = std::fs::read(format!("{data}tls12_client.bin")).unwrap();
    let server_flight = std::fs::read(format!("{data}tls12_server.bin")).unwrap();
    let ccs_and_finished: &[u8] = &[
        0x14, 3, 3, 0, 1, 1, 0x16, 3, 3, 0, 4, 0xaa, 0xbb, 0xcc, 0xdd,
    ];
    let mut app_data = vec![0x17, 3, 3, 0, 11];
    app_data.extend_from_slice(b"LATEPATTERN");
    let mut s =
        TcpSession::new(addr("10.0.0.5:40100"), addr("10.0.1.5:443")).start_at((1_700_000_200, 0));
    s.handshake()
        .client_send(&client_hello)
        .server_send(&server_flight)
        .client_send(ccs_and_finished)
        .server_send(ccs_and_finished)
        .client_send(&app_data)
        .close();
    s.into_frames()
}

#[test]
fn tls_payload_is_not_inspected_after_the_handshake() {
    let rules = "alert tcp any any -> any any (msg:\"late\"; content:\"LATEPATTERN\"; sid:20;)\n\
                 alert tls any any -> any any (msg:\"hdr\"; flow:to_server; flowbits:noalert; flowbits:set,x; sid:21;)";
    let (out, stats) = run("tls", tls_session(), rules, 1);
    assert_eq!(records(&out, "tls").len(), 1, "{out:#?}");
    assert_eq!(stats.workers.tls_encrypted_flows, 1);
    assert!(!out.iter().any(|o| o.sid == 20), "{out:#?}");
    // With encryption-handling `full` the same data is inspected.
    let path = write_pcap("tls-full", tls_session());
    let cfg = EngineConfig {
        tls_stop_after_handshake: false,
        ..EngineConfig::default()
    };
    let mut sink = Collect::default();
    let src = PcapSource::open(&path).expect("open pcap");
    run_offline(src, engine(rules), &cfg, &mut sink, &mut |_, _| {}).expect("run");
    let _ = std::fs::remove_file(&path);
    assert!(sink.0.iter().any(|o| o.sid == 20), "{:#?}", sink.0);
}

/// A config rule (`config: logging disable, type tx, scope tx`) keeps
/// the transaction it matches out of the log, without an alert; the other
/// transaction is logged.
#[test]
fn a_config_rule_keeps_its_transaction_out_of_the_log() {
    let rules = "config http any any -> any any (msg:\"quiet\"; http.uri; content:\"/second\"; \
                 config: logging disable, type tx, scope tx; sid:9;)";
    let (out, stats) = run("config-rule", http_session(), rules, 1);
    let http = records(&out, "http");
    assert_eq!(http.len(), 1, "{out:#?}");
    assert_eq!(http[0]["url"], "/a/../index.html?q=1");
    assert!(!out.iter().any(|o| o.kind == OutKind::Alert), "{out:#?}");
    assert_eq!(stats.workers.tx_logged, 1);
    // The same rule as an alert rule: it alerts, and still keeps the
    // transaction out of the log.
    let (out, _) = run(
        "config-alert",
        http_session(),
        &rules.replacen("config", "alert", 1),
        1,
    );
    assert_eq!(records(&out, "http").len(), 1, "{out:#?}");
    assert!(out.iter().any(|o| o.kind == OutKind::Alert && o.sid == 9));
}

#[test]
fn flow_age_counts_whole_seconds_since_the_flows_first_packet() {
    use std::net::Ipv4Addr;
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let pb = PacketBuilder::new();
    // Packets (microsecond timestamps) at 100.9 s, 101.1 s (age 1: seconds differ), 105.95 s and
    // 112.0 s of the same UDP flow.
    let frames: Vec<TimedFrame> = [(100, 900_000), (101, 100_000), (105, 950_000), (112, 0)]
        .into_iter()
        .map(|ts| (ts, pb.ipv4_udp(a, 5000, b, 6000, b"x")))
        .collect();
    let rules = "alert udp any any -> any any (flow.age:0; sid:1;)\n\
                 alert udp any any -> any any (flow.age:>=5; sid:2;)\n\
                 alert udp any any -> any any (flow.age:1; sid:3;)\n";
    let (out, _) = run("flow_age", frames, rules, 1);
    let got: Vec<(u64, u32)> = out
        .iter()
        .filter(|o| o.kind == OutKind::Alert)
        .map(|o| (o.index, o.sid))
        .collect();
    assert_eq!(got, vec![(1, 1), (2, 3), (3, 2), (4, 2)]);
}

/// SSH on a port that is not SSH's: the identification strings of both
/// sides, the `ssh` record, `ssh.software`/`ssh.proto` rules and a raw
/// rule whose header names ssh.
#[test]
fn ssh_is_detected_and_its_identifications_logged() {
    let mut s = TcpSession::new(addr("10.0.0.1:40022"), addr("10.0.1.1:2222"))
        .start_at((1_700_000_000, 0))
        .with_mss(9);
    s.handshake()
        .server_send(b"SSH-2.0-OpenSSH_9.6 Debian\r\n")
        .client_send(b"SSH-2.0-PUTTY_Release_0.81\r\n\x00\x00\x01\x2c\x06\x14")
        .server_send(b"\x00\x00\x01\x2c\x06\x14resume@appgate.com")
        .close();
    let rules = "alert ssh any any -> any any (msg:\"sw\"; flow:to_server; ssh.software; content:\"PUTTY\"; sid:20;)\n\
                 alert ssh any any -> any any (msg:\"proto\"; ssh_proto; content:\"2.0\"; sid:21;)\n\
                 alert ssh any any -> any any (msg:\"raw\"; flow:to_client; content:\"resume@appgate.com\"; sid:22;)\n\
                 alert ssh any any -> any any (msg:\"sw not\"; ssh.software; content:\"libssh\"; sid:23;)";
    let (out, stats) = run("ssh", s.into_frames(), rules, 1);
    let ssh = records(&out, "ssh");
    assert_eq!(ssh.len(), 1, "{out:#?}");
    assert_eq!(ssh[0]["client"]["proto_version"], "2.0");
    assert_eq!(ssh[0]["client"]["software_version"], "PUTTY_Release_0.81");
    assert_eq!(ssh[0]["server"]["software_version"], "OpenSSH_9.6");
    let alerts: Vec<&Out> = out.iter().filter(|o| o.kind == OutKind::Alert).collect();
    let sids: Vec<u32> = alerts.iter().map(|a| a.sid).collect();
    assert_eq!(sids.iter().filter(|&&s| s == 20).count(), 1, "{alerts:#?}");
    assert!(sids.contains(&21) && sids.contains(&22), "{alerts:#?}");
    assert!(!sids.contains(&23));
    assert!(alerts.iter().all(|a| a.app_proto == Some("ssh")));
    let sw = alerts.iter().find(|a| a.sid == 20).unwrap();
    assert_eq!(sw.key, Some("ssh"));
    assert_eq!(stats.workers.app_flows.get("ssh"), Some(&1));
}

fn dcerpc_pdu(ptype: u8, call: u32, body: &[u8]) -> Vec<u8> {
    let len = (16 + body.len()) as u16;
    let mut v = vec![5, 0, ptype, 3, 0x10, 0, 0, 0];
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(&call.to_le_bytes());
    v.extend_from_slice(body);
    v
}

/// DCERPC over TCP on a dynamic port: detected by its PDU header, and
/// each request PDU is inspected as raw stream when it is complete (as
/// Suricata's DCERPC parser asks), not once a 2.5 KB chunk piled up: a
/// raw `alert dcerpc` rule fires once per request.
#[test]
fn dcerpc_over_tcp_raw_rule_fires_per_request() {
    let mut s = TcpSession::new(addr("10.0.0.5:34462"), addr("10.0.1.5:49444"))
        .start_at((1_700_000_000, 0));
    s.handshake()
        .client_send(&dcerpc_pdu(11, 1, &[0u8; 56]))
        .server_send(&dcerpc_pdu(12, 1, &[0u8; 44]));
    for call in 2..5u32 {
        let mut body = vec![0u8; 24];
        body.extend_from_slice(b"\\\\127.0.0.1\\ADMIN$\\__");
        s.client_send(&dcerpc_pdu(0, call, &body))
            .server_send(&dcerpc_pdu(2, call, &[0u8; 24]));
    }
    s.close();
    let rules = "alert dcerpc any any -> any any (msg:\"raw\"; flow:established,to_server; content:\"ADMIN$\"; sid:30;)\n\
                 alert smb any any -> any any (msg:\"not smb\"; content:\"ADMIN$\"; sid:31;)";
    let (out, stats) = run("dcerpc", s.into_frames(), rules, 1);
    let alerts: Vec<&Out> = out.iter().filter(|o| o.kind == OutKind::Alert).collect();
    assert_eq!(
        alerts.iter().filter(|a| a.sid == 30).count(),
        3,
        "{alerts:#?}"
    );
    assert!(alerts
        .iter()
        .all(|a| a.sid == 30 && a.app_proto == Some("dcerpc")));
    assert_eq!(stats.workers.app_flows.get("dcerpc"), Some(&1));
}

/// SMB2 over NetBIOS on 445: `alert smb` rules apply, and so do `alert
/// dcerpc` ones (DCERPC over SMB named pipes, Suricata's AppProtoEquals);
/// `alert ftp` ones do not.
#[test]
fn smb_flow_matches_smb_and_dcerpc_rules() {
    let mut smb = b"\xfeSMB\x40\x00".to_vec();
    smb.resize(64, 0);
    smb.extend_from_slice(&dcerpc_pdu(0, 7, b"\x00\x00svcctl-marker"));
    let mut rec = vec![0, 0];
    rec.extend_from_slice(&(smb.len() as u16).to_be_bytes());
    rec.extend_from_slice(&smb);
    let mut s =
        TcpSession::new(addr("10.0.0.6:50000"), addr("10.0.1.6:445")).start_at((1_700_000_000, 0));
    s.handshake()
        .client_send(&rec)
        .server_send(b"\x00\x00\x00\x08\xfeSMB\x40\x00\x00\x00")
        .close();
    let rules = "alert smb any any -> any any (msg:\"smb\"; flow:to_server; content:\"|fe|SMB\"; sid:40;)\n\
                 alert dcerpc any any -> any any (msg:\"dce\"; content:\"svcctl-marker\"; sid:41;)\n\
                 alert ftp any any -> any any (msg:\"ftp\"; content:\"svcctl-marker\"; sid:42;)";
    let (out, _) = run("smb", s.into_frames(), rules, 1);
    let sids: Vec<u32> = out
        .iter()
        .filter(|o| o.kind == OutKind::Alert)
        .map(|o| o.sid)
        .collect();
    assert!(sids.contains(&40) && sids.contains(&41), "{out:#?}");
    assert!(!sids.contains(&42));
    assert!(out
        .iter()
        .filter(|o| o.kind == OutKind::Alert)
        .all(|o| o.app_proto == Some("smb")));
}

/// FTP and SMTP away from their ports: the server's greeting names the
/// protocol, or the client's first command decides.
#[test]
fn ftp_and_smtp_are_detected_by_greeting_or_command() {
    let mut f =
        TcpSession::new(addr("10.0.0.7:40001"), addr("10.0.1.7:2121")).start_at((1_700_000_000, 0));
    f.handshake()
        .server_send(b"220 (vsFTPd 3.0.3)\r\n")
        .client_send(b"USER anonymous\r\n")
        .server_send(b"331 Please specify the password.\r\n")
        .close();
    let mut m =
        TcpSession::new(addr("10.0.0.8:40002"), addr("10.0.1.8:4025")).start_at((1_700_000_001, 0));
    m.handshake()
        .server_send(b"220 mail.example.org ready\r\n")
        .client_send(b"EHLO client.example.org\r\n")
        .server_send(b"250 mail.example.org\r\n")
        .close();
    let mut frames = f.into_frames();
    frames.extend(m.into_frames());
    let rules = "alert ftp any any -> any any (msg:\"ftp\"; flow:to_server; content:\"USER anonymous\"; sid:50;)\n\
                 alert smtp any any -> any any (msg:\"smtp\"; flow:to_server; content:\"EHLO\"; sid:51;)\n\
                 alert smtp any any -> any any (msg:\"not smtp\"; content:\"USER\"; sid:52;)";
    let (out, stats) = run("ftpsmtp", frames, rules, 1);
    let alerts: Vec<(u32, Option<&str>)> = out
        .iter()
        .filter(|o| o.kind == OutKind::Alert)
        .map(|o| (o.sid, o.app_proto))
        .collect();
    assert!(alerts.contains(&(50, Some("ftp"))), "{alerts:?}");
    assert!(alerts.contains(&(51, Some("smtp"))), "{alerts:?}");
    assert!(!alerts.iter().any(|a| a.0 == 52));
    assert_eq!(stats.workers.app_flows.get("ftp"), Some(&1));
    assert_eq!(stats.workers.app_flows.get("smtp"), Some(&1));
}

/// DNS over TCP: one query for a SIG record (type 24) with a name that
/// starts with a digit, length-prefixed, answered.
fn dns_tcp_frames() -> Vec<TimedFrame> {
    let mut q = dns_query(0x4242, "1x.example");
    let n = q.len();
    q[n - 4..n - 2].copy_from_slice(&[0, 24]);
    let mut a = q.clone();
    a[2] = 0x81;
    a[3] = 0x80;
    let framed = |m: &[u8]| {
        let mut v = (m.len() as u16).to_be_bytes().to_vec();
        v.extend_from_slice(m);
        v
    };
    let mut s =
        TcpSession::new(addr("10.0.0.7:40200"), addr("10.0.1.53:53")).start_at((1_700_000_300, 0));
    s.handshake()
        .client_send(&framed(&q))
        .server_send(&framed(&a))
        .close();
    s.into_frames()
}

/// ET sid 2030547's shape: packet-payload content (no sticky buffer) and a
/// transaction buffer in one rule. Over TCP the payload part is matched
/// in the raw stream of the rule's direction, as over UDP in the packet.
#[test]
fn payload_and_transaction_buffer_rule_matches_dns_over_tcp() {
    let rules = "alert dns any any -> any any (msg:\"sig\"; content:\"|00 00 18 00 01|\"; fast_pattern; dns.query; pcre:\"/^\\d/\"; sid:30;)";
    let (out, _) = run("dns-tcp-mixed", dns_tcp_frames(), rules, 1);
    assert!(!records(&out, "dns").is_empty(), "{out:#?}");
    let hits: Vec<&Out> = out.iter().filter(|o| o.sid == 30).collect();
    assert_eq!(hits.len(), 1, "{out:#?}");
    assert_eq!(hits[0].src, "10.0.0.7:40200");
}

/// A TLS 1.2 handshake whose client sends its Certificate, key exchange,
/// ChangeCipherSpec and Finished in one flight (client authentication);
/// the certificate carries a name constraint with a punycode address.
/// `acks_midflight`: the server acknowledges every second segment of that
/// flight (a real stack) instead of the whole flight at once.
fn tls_client_cert_session(acks_midflight: bool) -> Vec<TimedFrame> {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../applayer/tests/data/");
    // The recorded handshake's ClientHello, and the server's first flight
    // (ServerHello to ServerHelloDone: its first four records).
    let records = |b: &[u8], n: usize| {
        let mut end = 0;
        for _ in 0..n {
            end += 5 + usize::from(u16::from_be_bytes([b[end + 3], b[end + 4]]));
        }
        b[..end].to_vec()
    };
    let client_hello = records(
        &std::fs::read(format!("{data}tls12_client.bin")).unwrap(),
        1,
    );
    let server_flight = records(
        &std::fs::read(format!("{data}tls12_server.bin")).unwrap(),
        4,
    );
    let mut cert = vec![
        0x30, 0x20, 0x06, 0x03, 0x55, 0x1d, 0x1e, 0x30, 0x82, 0x02, 0x10,
    ];
    cert.extend_from_slice(b"xn--mnchen-3ya.example");
    // A real client certificate chain: more than a raw-stream chunk.
    cert.resize(3000, 0x20);
    let u24 = |n: usize| [(n >> 16) as u8, (n >> 8) as u8, n as u8];
    let mut certs = u24(cert.len()).to_vec();
    certs.extend_from_slice(&cert);
    let mut body = u24(certs.len()).to_vec();
    body.extend_from_slice(&certs);
    let mut hs = vec![11];
    hs.extend_from_slice(&u24(body.len()));
    hs.extend_from_slice(&body);
    // ClientKeyExchange with a 32-byte key.
    hs.extend_from_slice(&[16, 0, 0, 33, 32]);
    hs.extend_from_slice(&[0x42; 32]);
    let mut flight = vec![0x16, 3, 3];
    flight.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    flight.extend_from_slice(&hs);
    flight.extend_from_slice(&[0x14, 3, 3, 0, 1, 1]);
    flight.extend_from_slice(&[0x16, 3, 3, 0, 40]);
    flight.extend_from_slice(&[0x5a; 40]);
    let mut server_end = vec![0x14, 3, 3, 0, 1, 1, 0x16, 3, 3, 0, 40];
    server_end.extend_from_slice(&[0x6b; 40]);
    let mut app_data = vec![0x17, 3, 3, 0, 16];
    app_data.extend_from_slice(&[0x7c; 16]);
    let mut s =
        TcpSession::new(addr("10.0.0.6:40300"), addr("10.0.1.6:443")).start_at((1_700_000_400, 0));
    s.handshake()
        .client_send(&client_hello)
        .server_send(&server_flight);
    if acks_midflight {
        s = s.with_data_acks(false);
        for (i, seg) in flight.chunks(1460).enumerate() {
            s.segment(
                vigil_craft::Dir::ToServer,
                vigil_craft::PSH | vigil_craft::ACK,
                seg,
            );
            if i % 2 == 1 || (i + 1) * 1460 >= flight.len() {
                s.segment(vigil_craft::Dir::ToClient, vigil_craft::ACK, &[]);
            }
        }
        s = s.with_data_acks(true);
    } else {
        s.client_send(&flight);
    }
    s.server_send(&server_end)
        .client_send(&app_data)
        .server_send(&app_data)
        .close();
    s.into_frames()
}

/// ET sid 2039619's shape: a raw-stream rule on the client's certificate.
/// Inspection stops at the first application-data record, not at the
/// ChangeCipherSpec: the Certificate that shares a segment with the
/// ChangeCipherSpec and Finished is still inspected (once), and so is
/// the ClientHello (each complete record asks for raw inspection); the
/// encrypted data after them is not. Checked against Suricata 9 on the
/// same captures: the same sids.
#[test]
fn tls_raw_rule_sees_the_handshake_segment_that_ends_it() {
    let rules = "alert tls any any -> any any (msg:\"punycode\"; flow:established,to_server; content:\"|06 03 55 1d 1e|\"; content:\"xn--\"; fast_pattern; within:30; byte_test:2,>,513,-6,relative; sid:40;)\n\
                 alert tcp any any -> any any (msg:\"late\"; content:\"|7c 7c 7c 7c|\"; sid:41;)\n\
                 alert tcp any any -> any any (msg:\"sni\"; flow:to_server; content:\"test.vigil\"; sid:42;)\n\
                 alert tcp any any -> any any (msg:\"key\"; content:\"|42 42 42 42 42 42|\"; sid:43;)";
    for midflight in [false, true] {
        let (out, stats) = run(
            "tls-client-cert",
            tls_client_cert_session(midflight),
            rules,
            1,
        );
        assert_eq!(stats.workers.tls_encrypted_flows, 1, "{out:#?}");
        let sids = |sid| out.iter().filter(|o| o.sid == sid).count();
        assert_eq!(sids(40), 1, "{out:#?}");
        assert_eq!(sids(42), 1, "{out:#?}");
        assert_eq!(sids(43), 1, "{out:#?}");
        assert_eq!(sids(41), 0, "{out:#?}");
        let hit = out.iter().find(|o| o.sid == 40).unwrap();
        assert_eq!(hit.src, "10.0.0.6:40300");
    }
}

/// Decoder and stream events become `anomaly` records when their kinds
/// are asked for (off by default, as in Suricata): one per event of the
/// packet, with Suricata's names, no `tx_id`.
#[test]
fn decoder_and_stream_events_are_logged_as_anomalies_when_asked_for() {
    let b = PacketBuilder::default().ip_options(&[1, 1, 1, 1]);
    let (c, d) = (addr("10.0.0.9:5353"), addr("10.0.1.53:53"));
    let mut frames = vec![(
        (1_700_000_010, 0),
        b.udp(c.ip(), c.port(), d.ip(), d.port(), &dns_query(9, "z.test")),
    )];
    // An RST with no session.
    let rst = PacketBuilder::default().tcp(
        addr("10.0.0.8:40000").ip(),
        40000,
        addr("10.0.1.8:80").ip(),
        80,
        1,
        1,
        0x14,
        &[],
    );
    frames.push(((1_700_000_011, 0), rst));
    let run_with = |decode, stream| {
        let path = write_pcap(&format!("anomaly-pkt-{decode}-{stream}"), frames.clone());
        let cfg = EngineConfig {
            workers: 1,
            log_anomaly_decode: decode,
            log_anomaly_stream: stream,
            ..EngineConfig::default()
        };
        let mut sink = Collect::default();
        let src = PcapSource::open(&path).expect("open pcap");
        run_offline(src, engine(""), &cfg, &mut sink, &mut |_, _| {}).expect("run");
        let _ = std::fs::remove_file(&path);
        sink.0
    };
    assert!(records(&run_with(false, false), "anomaly").is_empty());
    let out = run_with(true, true);
    let events = records(&out, "anomaly");
    assert!(
        events.contains(
            &serde_json::json!({"type": "decode", "event": "decoder.ipv4.opt_pad_required"})
        ),
        "{out:#?}"
    );
    assert!(
        events
            .contains(&serde_json::json!({"type": "stream", "event": "stream.rst_but_no_session"})),
        "{out:#?}"
    );
    let decode_only = records(&run_with(true, false), "anomaly");
    assert!(
        decode_only.iter().all(|e| e["type"] == "decode"),
        "{decode_only:?}"
    );
    assert!(!decode_only.is_empty());
}

/// `pkthdr` rules see packets whose IP layer cannot be decoded (here an
/// IPv4 header cut short): Suricata alerts on them with decoder-event
/// rules; `ip` rules do not see them.
#[test]
fn pkthdr_rules_see_undecodable_packets() {
    let good = PacketBuilder::default().udp(
        addr("10.0.0.9:5353").ip(),
        5353,
        addr("10.0.1.53:53").ip(),
        53,
        &dns_query(9, "z.test"),
    );
    // The IPv4 header and 4 bytes of the datagram its length announces.
    let cut = good[..14 + 24].to_vec();
    let frames = vec![((1_700_000_010, 0), good), ((1_700_000_011, 0), cut)];
    let rules = "alert pkthdr any any -> any any (msg:\"trunc\"; decode-event:ipv4.trunc_pkt; sid:60;)\n\
                 alert ip any any -> any any (msg:\"ip trunc\"; decode-event:ipv4.trunc_pkt; sid:61;)\n\
                 alert pkthdr any any -> any any (msg:\"any\"; sid:62;)";
    let (out, _) = run("pkthdr", frames, rules, 1);
    let sids = |sid| {
        out.iter()
            .filter(|o| o.sid == sid)
            .map(|o| o.index)
            .collect::<Vec<_>>()
    };
    assert_eq!(sids(60), vec![2], "{out:#?}");
    assert!(sids(61).is_empty(), "{out:#?}");
    assert_eq!(sids(62), vec![1, 2], "{out:#?}");
}

/// A PPPoE session frame carrying LCP (no IP layer, `ppp.unsup_proto`,
/// which Suricata raises without making the packet invalid) is not
/// inspected by `pkthdr` rules, as in Suricata (suricata-verify `pppoe`).
#[test]
fn pkthdr_rules_skip_valid_packets_without_ip() {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x88, 0x64]);
    // PPPoE session header, PPP protocol LCP (0xc021), an LCP echo.
    f.extend_from_slice(&[0x11, 0x00, 0x00, 0x01, 0x00, 0x0a, 0xc0, 0x21]);
    f.extend_from_slice(&[0x09, 0x01, 0x00, 0x08, 0, 0, 0, 0]);
    let rules =
        "alert pkthdr any any -> any any (msg:\"unsup\"; decode-event:ppp.unsup_proto; sid:70;)\n\
                 alert pkthdr any any -> any any (msg:\"any\"; sid:71;)";
    let (out, stats) = run("pppoe-lcp", vec![((1_700_000_010, 0), f)], rules, 1);
    assert!(out.iter().all(|o| o.sid != 70 && o.sid != 71), "{out:#?}");
    assert_eq!(
        stats.workers.events.get("ppp.unsup_proto"),
        Some(&1),
        "{stats:#?}"
    );
}
