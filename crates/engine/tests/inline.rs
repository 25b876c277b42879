//! Inline semantics offline (`--simulate-ips`): a drop rule blocks the
//! packet that matches and, through the flow verdict table, every later
//! packet of its flow; other flows go on; without inline mode the same
//! rule only alerts.

mod common;

use std::net::SocketAddr;

use common::{engine, write_pcap};
use vigil_craft::{TcpSession, TimedFrame};
use vigil_detect::CompiledRule;
use vigil_engine::{run_offline, AlertOut, AlertSink, EngineConfig, RunStats};
use vigil_source::PcapSource;

#[derive(Default)]
struct Blocked(Vec<(u32, bool)>);

impl AlertSink for Blocked {
    fn alert(&mut self, a: &AlertOut, r: &CompiledRule) -> std::io::Result<()> {
        self.0.push((r.sid, a.blocked));
        Ok(())
    }
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Two sessions: one sends an attack then more data, the other is benign.
fn capture() -> Vec<TimedFrame> {
    let mut bad =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:80")).start_at((1_700_000_000, 0));
    bad.handshake()
        .client_send(b"GET /index.html HTTP/1.1\r\n\r\n")
        .client_send(b"GET /ATTACK HTTP/1.1\r\n\r\n")
        .client_send(b"GET /after HTTP/1.1\r\n\r\n")
        .close();
    let mut good =
        TcpSession::new(addr("10.0.0.2:40001"), addr("10.0.0.9:80")).start_at((1_700_000_001, 0));
    good.handshake()
        .client_send(b"GET /fine HTTP/1.1\r\n\r\n")
        .close();
    let mut f = bad.into_frames();
    f.extend(good.into_frames());
    f.sort_by_key(|x| x.0);
    f
}

fn run(name: &str, inline: bool, rules: &str) -> (Vec<(u32, bool)>, RunStats) {
    run_with(name, inline, rules, 2)
}

fn run_with(name: &str, inline: bool, rules: &str, workers: usize) -> (Vec<(u32, bool)>, RunStats) {
    let cfg = EngineConfig {
        inline,
        workers,
        ..EngineConfig::default()
    };
    run_frames(name, capture(), rules, &cfg)
}

/// `frames` through the offline pipeline: (sid, blocked) of each alert.
fn run_frames(
    name: &str,
    frames: Vec<TimedFrame>,
    rules: &str,
    cfg: &EngineConfig,
) -> (Vec<(u32, bool)>, RunStats) {
    let path = write_pcap(&format!("inline-{name}"), frames);
    let mut sink = Blocked::default();
    let stats = run_offline(
        PcapSource::open(&path).unwrap(),
        engine(rules),
        cfg,
        &mut sink,
        &mut |_, _| {},
    )
    .unwrap();
    let _ = std::fs::remove_file(&path);
    (sink.0, stats)
}

/// One worker in inline mode (stream and app layer inline too).
fn inline_worker(rules: &str) -> vigil_engine::Worker {
    vigil_engine::Worker::new(
        engine(rules),
        vigil_engine::WorkerConfig {
            inline: true,
            stream: vigil_engine::StreamSettings {
                inline: true,
                ..Default::default()
            },
            ..vigil_engine::WorkerConfig::default()
        },
    )
}

/// Frames in one batch, a microsecond apart.
fn batch_of(frames: &[Vec<u8>]) -> vigil_engine::Batch {
    let mut batch = vigil_engine::Batch::default();
    for (i, f) in frames.iter().enumerate() {
        batch.push(
            i as u64 + 1,
            1_700_000_000_000_000_000 + i as i64 * 1000,
            1,
            f,
            f.len() as u32,
        );
    }
    batch
}

const RULES: &str = "drop tcp any any -> any 80 (content:\"ATTACK\"; sid:1;)\n\
                     alert tcp any any -> any 80 (content:\"GET /after\"; sid:2;)\n\
                     alert tcp any any -> any 80 (content:\"GET /fine\"; sid:3;)\n";

#[test]
fn a_drop_rule_blocks_its_packet_and_the_rest_of_the_flow() {
    let (alerts, stats) = run("drop", true, RULES);
    // sid 1 blocked; sid 2 never seen (its packet belongs to the dropped
    // flow); the other flow is untouched.
    assert!(alerts.contains(&(1, true)), "{alerts:?}");
    assert!(!alerts.iter().any(|a| a.0 == 2), "{alerts:?}");
    assert!(alerts.contains(&(3, false)), "{alerts:?}");
    let w = &stats.workers;
    assert_eq!(w.ips_drop_rule, 1);
    // After the attack: its ACK, the next request, its ACK, and the
    // close (FIN, FIN, ACK) are dropped by the flow table.
    assert!(w.ips_drop_flow >= 4, "{}", w.ips_drop_flow);
    assert_eq!(w.ips_reject, 0);
}

#[test]
fn without_inline_a_drop_rule_only_alerts() {
    let (alerts, stats) = run("ids", false, RULES);
    assert!(alerts.contains(&(1, false)), "{alerts:?}");
    assert!(alerts.contains(&(2, false)), "{alerts:?}");
    assert_eq!(stats.workers.ips_drop_rule + stats.workers.ips_drop_flow, 0);
}

#[test]
fn a_reject_rule_is_counted_apart_and_wins_over_drop() {
    let rules = "drop tcp any any -> any 80 (content:\"ATTACK\"; sid:1;)\n\
                 reject tcp any any -> any 80 (content:\"/ATTACK\"; sid:4;)\n";
    let (alerts, stats) = run("reject", true, rules);
    assert!(
        alerts.contains(&(1, true)) && alerts.contains(&(4, true)),
        "{alerts:?}"
    );
    assert_eq!(stats.workers.ips_reject, 1);
    assert_eq!(stats.workers.ips_drop_rule, 0);
}

#[test]
fn inline_verdicts_are_the_same_for_any_worker_count() {
    let (a1, s1) = run_with("w1", true, RULES, 1);
    let one = (a1, s1.workers.ips_drop_rule, s1.workers.ips_drop_flow);
    let (a, s) = run("w2", true, RULES);
    assert_eq!(one, (a, s.workers.ips_drop_rule, s.workers.ips_drop_flow));
}

/// Inline stream inspection: an attack split over two segments is caught
/// by the segment that completes it, before any ACK, and that packet is
/// the one dropped; everything before passes, everything after is
/// dropped by the flow table.
#[test]
fn the_segment_completing_a_split_attack_is_the_one_dropped() {
    use vigil_craft::{PacketBuilder, ACK, PSH};
    use vigil_engine::Verdict;
    let mut s = TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:80"))
        .start_at((1_700_000_000, 0))
        .with_data_acks(false);
    s.handshake();
    let (c, v) = (s.client(), s.server());
    let seq = s.client_next_seq();
    let ack = s.server_next_seq();
    let seg = |seq: u32, data: &[u8]| {
        PacketBuilder::default().tcp(
            c.ip(),
            c.port(),
            v.ip(),
            v.port(),
            seq,
            ack,
            PSH | ACK,
            data,
        )
    };
    let mut frames: Vec<Vec<u8>> = s.take_frames().into_iter().map(|f| f.1).collect();
    let first = frames.len();
    frames.push(seg(seq, b"GET /AT"));
    frames.push(seg(seq + 7, b"TACK HTTP/1.1\r\n"));
    frames.push(seg(seq + 22, b"Host: x\r\n\r\n"));
    let batch = batch_of(&frames);
    let mut w = inline_worker("drop tcp any any -> any 80 (content:\"/ATTACK\"; sid:1;)");
    let mut alerts = Vec::new();
    w.process(&batch, &mut alerts);
    let v = w.verdicts().to_vec();
    assert_eq!(v.len(), frames.len());
    assert!(
        v[..first + 1].iter().all(|x| *x == Verdict::Accept),
        "{v:?}"
    );
    assert_eq!(v[first + 1], Verdict::Drop, "{v:?}");
    assert_eq!(v[first + 2], Verdict::FlowDropped, "{v:?}");
    assert_eq!(alerts.len(), 1);
    assert!(alerts[0].blocked && alerts[0].stream);
}

/// Inline, the application layer parses data as it arrives: an `http.uri`
/// drop rule blocks the request's own packet, before the server could
/// acknowledge (and so receive) it.
#[test]
fn an_http_uri_drop_rule_blocks_the_request_packet_itself() {
    use vigil_engine::Verdict;
    let mut s = TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:80"))
        .start_at((1_700_000_000, 0))
        .with_data_acks(false);
    s.handshake()
        .client_send(b"GET /ATTACK HTTP/1.1\r\nHost: x\r\n\r\n");
    let frames: Vec<Vec<u8>> = s.into_frames().into_iter().map(|f| f.1).collect();
    let batch = batch_of(&frames);
    let mut w =
        inline_worker("drop http any any -> any any (http.uri; content:\"/ATTACK\"; sid:5;)");
    let mut alerts = Vec::new();
    w.process(&batch, &mut alerts);
    let v = w.verdicts();
    assert_eq!(v.last(), Some(&Verdict::Drop), "{v:?}");
    assert!(
        v[..v.len() - 1].iter().all(|x| *x == Verdict::Accept),
        "{v:?}"
    );
    assert_eq!(alerts.len(), 1);
    assert!(alerts[0].blocked);
}

/// The host table: a drop by a rule of a listed classtype blocks the
/// attacker; its next connection is dropped before inspection, other
/// hosts pass, and after the block time it passes again.
#[test]
fn a_blocking_classtype_blocks_the_host_for_its_time() {
    use vigil_engine::hosts::{BlockTrack, HostBlockConfig};
    let session = |client: &str, t: i64, path: &str| {
        let mut s = TcpSession::new(addr(client), addr("10.0.0.9:80")).start_at((t, 0));
        s.handshake()
            .client_send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .close();
        s.into_frames()
    };
    let t0 = 1_700_000_000;
    let mut frames = session("10.0.0.1:40000", t0, "/ATTACK");
    frames.extend(session("10.0.0.1:40001", t0 + 1, "/later"));
    frames.extend(session("10.0.0.2:40002", t0 + 2, "/other"));
    frames.extend(session("10.0.0.1:40003", t0 + 10, "/much-later"));
    frames.sort_by_key(|f| f.0);
    let rules = "drop http any any -> any any (http.uri; content:\"/ATTACK\"; classtype:web-application-attack; sid:6;)\n\
                 alert http any any -> any any (http.uri; content:\"later\"; sid:7;)\n\
                 alert http any any -> any any (http.uri; content:\"/other\"; sid:8;)\n";
    let cfg = EngineConfig {
        inline: true,
        workers: 1,
        host_block: Some(HostBlockConfig {
            classtypes: vec!["web-application-attack".into()],
            seconds: 5,
            track: BlockTrack::Src,
            ..HostBlockConfig::default()
        }),
        ..EngineConfig::default()
    };
    let (alerts, stats) = run_frames("hosts", frames, rules, &cfg);
    let sids: Vec<u32> = alerts.iter().map(|a| a.0).collect();
    // sid 7 fires once: for /much-later (the block expired), not for
    // /later (blocked before inspection).
    assert_eq!(sids.iter().filter(|s| **s == 7).count(), 1, "{sids:?}");
    assert!(sids.contains(&6) && sids.contains(&8), "{sids:?}");
    let w = &stats.workers;
    assert_eq!(w.ips_hosts_blocked, 1);
    // Every packet of the /later connection, in both directions.
    assert!(w.ips_drop_host >= 5, "{}", w.ips_drop_host);
    assert_eq!(w.ips_host_evictions, 0);
}

/// The `bypass` keyword: the rule alerts, and the rest of its flow is
/// not inspected; other flows are. (Inline, each packet's data is
/// inspected on its own arrival, so the later request is clearly after
/// the bypass; in IDS mode one stream chunk may hold both.)
#[test]
fn a_bypass_rule_alerts_and_stops_inspection_of_its_flow() {
    let rules = "alert tcp any any -> any 80 (content:\"GET /index.html\"; bypass; sid:5;)\n\
                 alert tcp any any -> any 80 (content:\"GET /after\"; sid:2;)\n\
                 alert tcp any any -> any 80 (content:\"GET /fine\"; sid:3;)\n";
    let (alerts, stats) = run("bypass", true, rules);
    assert!(alerts.contains(&(5, false)), "{alerts:?}");
    assert!(!alerts.iter().any(|a| a.0 == 2), "{alerts:?}");
    assert!(alerts.contains(&(3, false)), "{alerts:?}");
    assert_eq!(stats.workers.bypassed_flows, 1);
    assert_eq!(stats.workers.ips_drop_flow, 0);
    // IDS mode: bypassed as well.
    let (alerts, stats) = run("bypass-ids", false, rules);
    assert!(alerts.contains(&(5, false)), "{alerts:?}");
    assert_eq!(stats.workers.bypassed_flows, 1);
    // Without the keyword the later request alerts, nothing is bypassed.
    let (alerts, stats) = run("no-bypass", true, &rules.replace(" bypass;", ""));
    assert!(alerts.contains(&(2, false)), "{alerts:?}");
    assert_eq!(stats.workers.bypassed_flows, 0);
}

/// `replace` inline: the matched bytes are rewritten in the packet that
/// goes on (checksum recomputed); the verdict is an accept; without
/// inline mode (or for a packet the rule does not match) nothing changes.
#[test]
fn replace_rewrites_the_matched_bytes_of_the_packet_that_goes_on() {
    use std::net::IpAddr;
    let b = vigil_craft::PacketBuilder::default();
    let (c, s): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.9".parse().unwrap());
    let mut frames = vec![
        b.udp(c, 4000, s, 53, b"this is a big test, big"),
        b.udp(c, 4000, s, 53, b"nothing here"),
    ];
    let mut tcp = TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:80"));
    tcp.handshake().client_send(b"GET /big HTTP/1.1\r\n");
    frames.extend(tcp.into_frames().into_iter().map(|f| f.1));
    let req = frames
        .iter()
        .position(|f| f.windows(4).any(|w| w == b"/big"))
        .unwrap();
    let rules = "alert udp any any -> any any (content:\"big\"; replace:\"pig\"; content:\"test\"; sid:1;)\n\
                 alert tcp any any -> any any (content:\"/big\"; replace:\"/p|69|g\"; sid:2;)\n";
    let mut w = inline_worker(rules);
    let mut alerts = Vec::new();
    w.process(&batch_of(&frames), &mut alerts);
    assert!(w.verdicts().iter().all(|v| !v.is_drop()));
    let changed = w.changed();
    assert_eq!(
        changed.iter().map(|c| c.0).collect::<Vec<_>>(),
        vec![0, req]
    );
    // Only the occurrence the match used (before "test") is rewritten.
    for (i, want) in [
        (0usize, &b"this is a pig test, big"[..]),
        (req, b"GET /pig HTTP/1.1\r\n"),
    ] {
        let f = &changed.iter().find(|c| c.0 == i).unwrap().1;
        assert_eq!(f.len(), frames[i].len());
        let p = vigil_wire::decode(1, f);
        assert_eq!(p.payload(), want);
        assert_eq!(p.transport_checksum_ok(), Some(true), "packet {i}");
        // Only the payload changed (and the checksum).
        let orig = vigil_wire::decode(1, &frames[i]);
        assert_eq!(orig.transport_checksum_ok(), Some(true));
        assert_eq!(
            f[..f.len() - want.len()].len(),
            frames[i].len() - want.len()
        );
    }
    assert_eq!(w.snapshot().ips_replaced, 2);

    // IDS mode: Suricata ignores replace (the rule alerts as usual).
    let mut ids = vigil_engine::Worker::new(engine(rules), vigil_engine::WorkerConfig::default());
    let mut alerts = Vec::new();
    ids.process(&batch_of(&frames), &mut alerts);
    assert!(ids.changed().is_empty());
    // (The TCP rule's stream match comes later, with the flow's end.)
    assert!(alerts.iter().any(|a| a.rule == 0));
}

/// `nfq_set_mark` inline: an accepted packet that rules with marks match
/// carries the change, the matching rules' marks applied in turn (each on
/// the previous result); a dropped packet, a packet no such rule matches,
/// a zero mask and IDS mode give no mark.
#[test]
fn nfq_set_mark_marks_the_accepted_packets_that_match() {
    use std::net::IpAddr;
    use vigil_engine::MarkChange;
    let b = vigil_craft::PacketBuilder::default();
    let (c, s): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.9".parse().unwrap());
    let frames = vec![
        b.udp(c, 4000, s, 53, b"one mark"),
        b.udp(c, 4000, s, 53, b"two marks"),
        b.udp(c, 4000, s, 54, b"two marks, dropped"),
        b.udp(c, 4000, s, 53, b"nothing"),
        b.udp(c, 4000, s, 53, b"zero mask"),
    ];
    let rules = "alert udp any any -> any any (content:\"mark\"; nfq_set_mark:0x12/0xff; sid:1;)\n\
                 alert udp any any -> any any (content:\"two\"; nfq_set_mark:0x300/0xf0f; sid:2;)\n\
                 drop udp any any -> any 54 (content:\"dropped\"; sid:3;)\n\
                 alert udp any any -> any any (content:\"zero\"; nfq_set_mark:5/0; sid:4;)\n";
    let mut w = inline_worker(rules);
    let mut alerts = Vec::new();
    w.process(&batch_of(&frames), &mut alerts);
    assert!(w.verdicts()[2].is_drop());
    let marks = w.marks().to_vec();
    assert_eq!(marks.iter().map(|m| m.0).collect::<Vec<_>>(), vec![0, 1]);
    let one = marks[0].1;
    assert_eq!(
        one,
        MarkChange {
            value: 0x12,
            mask: 0xff
        }
    );
    assert_eq!(one.apply(0xabcd_ef00), 0xabcd_ef12);
    // sid 1 then sid 2: 0x12/0xff, then 0x300/0xf0f on that result.
    let two = marks[1].1;
    for old in [0u32, 0xffff_ffff, 0x1234_5678] {
        let step1 = (old & !0xff) | 0x12;
        let step2 = (step1 & !0xf0f) | (0x300 & 0xf0f);
        assert_eq!(two.apply(old), step2, "old {old:#x}");
    }
    assert_eq!(two.apply(0), 0x310);
    assert_eq!(w.snapshot().ips_marked, 2);
    assert!(w.changed().is_empty());

    // IDS mode: no marks (the rules alert as usual).
    let mut ids = vigil_engine::Worker::new(engine(rules), vigil_engine::WorkerConfig::default());
    let mut alerts = Vec::new();
    ids.process(&batch_of(&frames), &mut alerts);
    assert!(ids.marks().is_empty());
    assert!(alerts.iter().any(|a| a.rule == 0));
}
