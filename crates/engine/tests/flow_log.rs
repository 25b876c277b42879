//! Flow-end records (the EVE `flow` and `netflow` types), end to end from
//! a capture: counters per direction, times, state, why the flow ended,
//! TCP flags, TTL ranges, and the same records whatever the worker count.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use common::{engine, write_pcap};
use serde_json::Value;
use vigil_craft::{PacketBuilder, TcpSession, TimedFrame};
use vigil_detect::CompiledRule;
use vigil_engine::{run_offline, AlertOut, AlertSink, EngineConfig, FlowLog, OutKind};
use vigil_source::PcapSource;

/// One flow-end record: its type, tuple, `app_proto`, and its object with
/// any sibling (`tcp`) under one JSON object.
#[derive(Debug, Clone, PartialEq)]
struct Rec {
    key: &'static str,
    src: String,
    dst: String,
    ts_ns: i64,
    flow_id: Option<u64>,
    app_proto: Option<&'static str>,
    body: Value,
}

#[derive(Default)]
struct Collect {
    recs: Vec<Rec>,
    alerts: usize,
}

impl AlertSink for Collect {
    fn alert(&mut self, _: &AlertOut, _: &CompiledRule) -> std::io::Result<()> {
        self.alerts += 1;
        Ok(())
    }
    fn tx_log(&mut self, a: &AlertOut) -> std::io::Result<()> {
        let Some(r) = a
            .app
            .as_ref()
            .filter(|r| matches!(r.key, "flow" | "netflow"))
        else {
            return Ok(());
        };
        assert_eq!(a.kind, OutKind::TxLog);
        let body = serde_json::from_str(&format!("{{\"{}\":{}}}", r.key, r.json()))
            .unwrap_or_else(|e| panic!("{e}: {}", r.json()));
        self.recs.push(Rec {
            key: r.key,
            src: format!("{}:{}", a.src, a.sp.unwrap_or(0)),
            dst: format!("{}:{}", a.dst, a.dp.unwrap_or(0)),
            ts_ns: a.ts_ns,
            flow_id: a.flow_id,
            app_proto: a.app_proto,
            body,
        });
        Ok(())
    }
}

fn run(name: &str, frames: Vec<TimedFrame>, rules: &str, workers: usize, log: FlowLog) -> Collect {
    let path = write_pcap(name, frames);
    let cfg = EngineConfig {
        workers,
        flow_log: log,
        ..EngineConfig::default()
    };
    let src = PcapSource::open(&path).expect("open pcap");
    let mut sink = Collect::default();
    run_offline(src, engine(rules), &cfg, &mut sink, &mut |_, _| {}).expect("run");
    let _ = std::fs::remove_file(&path);
    sink
}

const BOTH: FlowLog = FlowLog {
    flow: true,
    netflow: true,
};

const T0: i64 = 1_700_000_000;

/// An HTTP session closed by FIN: 2 transactions, client TTL 64, server
/// TTL 50.
fn http_session() -> Vec<TimedFrame> {
    let client: SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let server: SocketAddr = "10.0.1.1:80".parse().unwrap();
    let mut s = TcpSession::new(client, server).start_at((T0, 0));
    s.handshake()
        .client_send(b"GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: vigil-test\r\n\r\n")
        .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .client_send(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        .server_send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        .close();
    // The server's packets with another TTL.
    let mut server_side = TcpSession::new(client, server)
        .start_at((T0, 0))
        .with_builder(PacketBuilder::new().ttl(50));
    server_side
        .handshake()
        .client_send(b"GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: vigil-test\r\n\r\n")
        .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .client_send(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        .server_send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        .close();
    // Same sequence of segments, same times: take each frame from the
    // session whose TTL its sender has.
    s.into_frames()
        .into_iter()
        .zip(server_side.into_frames())
        .map(|(a, b)| if from_client(&a.1) { a } else { b })
        .collect()
}

/// Whether an Ethernet/IPv4 frame was sent by 10.0.0.1.
fn from_client(frame: &[u8]) -> bool {
    frame[26..30] == [10, 0, 0, 1]
}

#[test]
fn a_closed_tcp_session_gives_one_flow_record_and_a_netflow_record_per_direction() {
    let frames = http_session();
    let (mut pkts, mut bytes) = ([0u64; 2], [0u64; 2]);
    for (_, f) in &frames {
        let d = usize::from(!from_client(f));
        pkts[d] += 1;
        bytes[d] += f.len() as u64;
    }
    let last = frames.last().unwrap().0;
    let rules = "alert http any any -> any any (msg:\"ua\"; http.user_agent; content:\"vigil-test\"; sid:1;)";
    let out = run("flowlog-http", frames, rules, 1, BOTH);
    assert_eq!(out.alerts, 1);
    let keys: Vec<&str> = out.recs.iter().map(|r| r.key).collect();
    assert_eq!(keys, ["flow", "netflow", "netflow"], "{:#?}", out.recs);

    let flow = &out.recs[0];
    assert_eq!(flow.src, "10.0.0.1:40000");
    assert_eq!(flow.dst, "10.0.1.1:80");
    assert_eq!(flow.app_proto, Some("http"));
    let f = &flow.body["flow"];
    assert_eq!(f["pkts_toserver"], pkts[0]);
    assert_eq!(f["pkts_toclient"], pkts[1]);
    assert_eq!(f["bytes_toserver"], bytes[0]);
    assert_eq!(f["bytes_toclient"], bytes[1]);
    assert_eq!(f["start"], "2023-11-14T22:13:20.000000+0000");
    let end_ns = last.0 * 1_000_000_000 + i64::from(last.1) * 1000;
    assert_eq!(
        f["end"],
        vigil_output::iso8601(end_ns / 1_000_000_000, (end_ns % 1_000_000_000) as u32)
    );
    assert_eq!(f["age"], 0);
    assert_eq!(f["state"], "closed");
    // End of input: the flow was still in the table.
    assert_eq!(f["reason"], "shutdown");
    assert_eq!(flow.ts_ns, end_ns);
    assert_eq!(f["alerted"], true);
    assert_eq!(f["tx_cnt"], 2);
    let tcp = &flow.body["tcp"];
    // SYN, ACK, PSH and FIN each way (0x1b).
    assert_eq!(tcp["tcp_flags"], "1b");
    assert_eq!(tcp["tcp_flags_ts"], "1b");
    assert_eq!(tcp["tcp_flags_tc"], "1b");
    for b in ["syn", "fin", "psh", "ack"] {
        assert_eq!(tcp[b], true, "{b}");
    }
    assert!(tcp.get("rst").is_none());
    assert!(tcp["state"].is_string());

    let (ts, tc) = (&out.recs[1], &out.recs[2]);
    assert_eq!(ts.flow_id, flow.flow_id);
    assert_eq!(tc.flow_id, flow.flow_id);
    assert_eq!(
        (ts.src.as_str(), tc.src.as_str()),
        ("10.0.0.1:40000", "10.0.1.1:80")
    );
    assert_eq!(tc.dst, "10.0.0.1:40000");
    assert_eq!(ts.body["netflow"]["pkts"], pkts[0]);
    assert_eq!(tc.body["netflow"]["bytes"], bytes[1]);
    assert_eq!(ts.body["netflow"]["min_ttl"], 64);
    assert_eq!(ts.body["netflow"]["max_ttl"], 64);
    assert_eq!(tc.body["netflow"]["min_ttl"], 50);
    assert_eq!(tc.body["netflow"]["max_ttl"], 50);
    assert_eq!(tc.body["netflow"]["tx_cnt"], 2);
    assert_eq!(tc.body["tcp"]["tcp_flags"], "1b");
    assert_eq!(tc.app_proto, Some("http"));
}

/// A UDP flow idle past its timeout ends at the first clock tick after
/// its deadline; a lone SYN is a flow that never carried data (no
/// `app_proto`) and sent no reply (one netflow record).
#[test]
fn idle_flows_end_by_timeout_and_flows_without_data_have_no_app_proto() {
    let b = PacketBuilder::new();
    let (c, s) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mut frames = vec![
        ((T0, 0), b.ipv4_udp(c, 5000, s, 9999, b"hello")),
        ((T0, 1000), b.ipv4_udp(s, 9999, c, 5000, b"world")),
    ];
    // Long after the UDP timeout (30 s for a flow seen both ways, 300 s
    // established): a SYN on another flow.
    frames.push(((T0 + 400, 0), b.ipv4_tcp(c, 40001, s, 22, 1, 0, 0x02, &[])));
    let out = run("flowlog-timeout", frames, "", 1, BOTH);
    let flows: Vec<&Rec> = out.recs.iter().filter(|r| r.key == "flow").collect();
    assert_eq!(flows.len(), 2, "{:#?}", out.recs);
    let udp = &flows[0].body["flow"];
    assert_eq!(udp["reason"], "timeout");
    assert_eq!(udp["state"], "established");
    assert_eq!(
        (udp["pkts_toserver"].as_u64(), udp["pkts_toclient"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(
        flows[0].ts_ns >= (T0 + 300) * 1_000_000_000,
        "{}",
        flows[0].ts_ns
    );
    assert!(flows[0].body.get("tcp").is_none());
    let syn = flows[1];
    assert_eq!(syn.body["flow"]["reason"], "shutdown");
    assert_eq!(syn.app_proto, None);
    assert_eq!(syn.body["tcp"]["tcp_flags"], "02");
    assert_eq!(syn.body["tcp"]["tcp_flags_tc"], "00");
    let syn_netflow: Vec<&Rec> = out
        .recs
        .iter()
        .filter(|r| r.key == "netflow" && r.flow_id == syn.flow_id)
        .collect();
    assert_eq!(syn_netflow.len(), 1);
    assert_eq!(syn_netflow[0].app_proto, Some("unknown"));
}

#[test]
fn flow_records_are_off_unless_asked_for_and_the_same_for_any_worker_count() {
    let rules = "alert http any any -> any any (msg:\"ua\"; http.user_agent; content:\"vigil-test\"; sid:1;)";
    let none = run("flowlog-off", http_session(), rules, 1, FlowLog::default());
    assert!(none.recs.is_empty());
    let only_flow = FlowLog {
        flow: true,
        netflow: false,
    };
    let one = run("flowlog-w1", http_session(), rules, 1, only_flow);
    assert_eq!(one.recs.len(), 1);
    let mut frames = http_session();
    // A second session, so that the two workers both have a flow.
    let mut s2 = TcpSession::new(
        "10.0.0.3:40001".parse().unwrap(),
        "10.0.1.1:80".parse().unwrap(),
    )
    .start_at((T0, 500));
    s2.handshake()
        .client_send(b"GET /c HTTP/1.1\r\nHost: y\r\n\r\n")
        .close();
    frames.extend(s2.into_frames());
    frames.sort_by_key(|f| f.0);
    let w1 = run("flowlog-2w1", frames.clone(), rules, 1, BOTH);
    let w2 = run("flowlog-2w2", frames, rules, 2, BOTH);
    assert_eq!(w1.recs.len(), 6);
    assert_eq!(w1.recs, w2.recs);
}

/// With `flow.rate-tracking`, an elephant flow's record says so after
/// `alerted`, with its directions (Suricata's `elephant` and
/// `elephant_direction`); other flows' records are unchanged.
#[test]
fn elephant_flows_are_marked_in_the_flow_record() {
    let client: SocketAddr = "10.0.0.7:40000".parse().unwrap();
    let server: SocketAddr = "10.0.1.1:8080".parse().unwrap();
    let mut s = TcpSession::new(client, server).start_at((T0, 0));
    s.handshake();
    for _ in 0..10 {
        s.client_send(&[b'u'; 1000]);
    }
    s.server_send(b"ok").close();
    let frames = s.into_frames();
    let go = |rate: Option<vigil_engine::RateConfig>| {
        let path = write_pcap("elephant-rec", frames.clone());
        let cfg = EngineConfig {
            flow_log: BOTH,
            rate_tracking: rate,
            ..EngineConfig::default()
        };
        let src = PcapSource::open(&path).expect("open pcap");
        let mut sink = Collect::default();
        run_offline(src, engine(""), &cfg, &mut sink, &mut |_, _| {}).expect("run");
        let _ = std::fs::remove_file(&path);
        sink.recs
            .into_iter()
            .find(|r| r.key == "flow")
            .expect("flow record")
    };
    let plain = go(None);
    assert!(plain.body["flow"].get("elephant").is_none());
    let rec = go(Some(vigil_engine::RateConfig::new(4000, 5).unwrap()));
    let f = &rec.body["flow"];
    assert_eq!(f["elephant"], true);
    assert_eq!(f["elephant_direction"], serde_json::json!(["toserver"]));
    // Both directions over a tiny threshold.
    let rec = go(Some(vigil_engine::RateConfig::new(1, 1).unwrap()));
    assert_eq!(
        rec.body["flow"]["elephant_direction"],
        serde_json::json!(["toserver", "toclient"])
    );
}
