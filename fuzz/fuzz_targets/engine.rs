//! The detection engine (crates/engine's worker over crates/detect) on a
//! rule text plus a packet sequence built from the input.
//!
//! Layout: one settings byte (bit 0 inline, bit 1 midstream pickup, bits
//! 2..4 the overlap policy), two bytes (little endian) choosing which of
//! the 16 built-in rules (`RULES`) are loaded, more rules as text (one per
//! line, up to the first NUL byte; lines that do not parse are left out),
//! then packets, each
//! `[ctl][flags][len][len bytes of payload]`:
//! - `ctl` bits 0..1: 0 TCP, 1 UDP, 2 ICMP echo, 3 the payload is a whole
//!   Ethernet frame;
//! - bit 2: from the server; bits 3..5 the server port (80, 443, 53,
//!   8080, 21, 25, 445, 6666); bit 6: IPv6;
//! - bit 7: the TCP sequence number steps back half the payload
//!   (overlaps and retransmissions);
//! - `flags`: the TCP flags.
//!
//! TCP sequence and acknowledgement numbers follow each side's data (one
//! connection per server port), so that handshakes, streams and the
//! app-layer parsers are reached. Packets go to one worker in batches of
//! 8, then the worker finishes (flows end, streams are flushed).
//!
//! Invariants: no panic; every alert names a packet of the input (or a
//! flow-end pseudo packet after it) and a loaded rule; inline, every
//! packet of a batch gets a verdict.
#![no_main]

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use vigil_craft::PacketBuilder;
use vigil_detect::DetectEngine;
use vigil_engine::{Batch, OutKind, OverlapPolicy, StreamSettings, Worker, WorkerConfig};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Vars};

const PORTS: [u16; 8] = [80, 443, 53, 8080, 21, 25, 445, 6666];

/// Rules the packets can trip: app-layer buffers of each protocol,
/// stream and packet content, flowbits, thresholds, byte tests, pcre,
/// inline drops.
const RULES: [&str; 16] = [
    r#"alert http any any -> any any (msg:"uri"; flow:established,to_server; http.uri; content:"/index"; http.method; content:"GET"; sid:1;)"#,
    r#"alert http any any -> any any (msg:"resp"; http.stat_code; content:"200"; file.data; content:"hi"; sid:2;)"#,
    r#"alert http any any -> any any (msg:"hdr"; http.header; content:"Host|3a|"; nocase; http.user_agent; pcre:"/^[a-z]+\//i"; sid:3;)"#,
    r#"alert dns any any -> any any (msg:"dns"; dns.query; content:"example"; nocase; sid:4;)"#,
    r#"alert tls any any -> any any (msg:"tls"; tls.sni; content:"example"; sid:5;)"#,
    r#"alert tcp any any -> any 80 (msg:"stream"; flow:established,to_server; content:"etc/passwd"; sid:6;)"#,
    r#"drop tcp any any -> any any (msg:"drop"; content:"attack"; sid:7;)"#,
    r#"alert tcp any any -> any any (msg:"fb set"; flowbits:set,seen; flowbits:noalert; content:"GET"; sid:8;)"#,
    r#"alert tcp any any -> any any (msg:"fb isset"; flowbits:isset,seen; content:"HTTP/1."; sid:9;)"#,
    r#"alert icmp any any -> any any (msg:"ping"; itype:8; threshold:type limit,track by_src,count 1,seconds 60; sid:10;)"#,
    r#"alert udp any any -> any any (msg:"udp"; dsize:>4; byte_test:1,>,0x7f,2; sid:11;)"#,
    r#"alert tcp any any -> any any (msg:"flags"; flags:S; detection_filter:track by_dst,count 2,seconds 10; sid:12;)"#,
    r#"alert tcp any any -> any any (msg:"bytes"; content:"|16 03|"; depth:2; byte_extract:2,1,len,relative; byte_jump:2,1,relative; isdataat:1,relative; sid:13;)"#,
    r#"alert ip any any -> any any (msg:"ttl"; ttl:<2; sid:14;)"#,
    r#"reject tcp any any -> any 445 (msg:"reject"; flow:to_server; content:"|ff|SMB"; sid:15;)"#,
    r#"alert tcp-pkt any any -> any any (msg:"pkt"; content:"POST"; stream_size:client,>,10; sid:16;)"#,
];

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let settings = data[0];
    let mask = u16::from_le_bytes([data[1], data[2]]);
    let rest = &data[3..];
    let (rules_text, mut pkts) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let detect = engine_for(mask, rules_text);
    let nrules = detect.rules.len();
    let inline = settings & 1 != 0;
    let cfg = WorkerConfig {
        inline,
        stream: StreamSettings {
            midstream: settings & 2 != 0,
            policy: OverlapPolicy::ALL[usize::from(settings >> 2 & 7) % OverlapPolicy::ALL.len()],
            inline,
            ..StreamSettings::default()
        },
        ..WorkerConfig::default()
    };
    let mut worker = Worker::new(detect, cfg);

    let b = PacketBuilder::default();
    // Next sequence number per (port, from_server).
    let mut next: HashMap<(u16, bool), u32> = HashMap::new();
    let mut batch = Batch::default();
    let mut alerts = Vec::new();
    let mut index = 0u64;
    let ts0: i64 = 1_700_000_000_000_000_000;
    while pkts.len() >= 3 {
        let (ctl, flags, len) = (pkts[0], pkts[1], usize::from(pkts[2]));
        let len = len.min(pkts.len() - 3);
        let payload = &pkts[3..3 + len];
        pkts = &pkts[3 + len..];
        let from_server = ctl & 4 != 0;
        let port = PORTS[usize::from(ctl >> 3 & 7)];
        let (client, server): (IpAddr, IpAddr) = if ctl & 0x40 != 0 {
            (
                Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).into(),
                Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2).into(),
            )
        } else {
            (
                Ipv4Addr::new(10, 0, 0, 1).into(),
                Ipv4Addr::new(10, 0, 0, 2).into(),
            )
        };
        let (src, dst, sport, dport) = if from_server {
            (server, client, port, 40000)
        } else {
            (client, server, 40000, port)
        };
        let frame = match ctl & 3 {
            0 => {
                let isn = if from_server { 5000 } else { 1000 };
                let seq = *next.entry((port, from_server)).or_insert(isn);
                let seq = if ctl & 0x80 != 0 {
                    seq.wrapping_sub(len as u32 / 2)
                } else {
                    seq
                };
                let peer_isn = if from_server { 1000 } else { 5000 };
                let ack = *next.entry((port, !from_server)).or_insert(peer_isn);
                let adv = len as u32
                    + u32::from(flags & vigil_craft::SYN != 0)
                    + u32::from(flags & vigil_craft::FIN != 0);
                let e = next.entry((port, from_server)).or_default();
                *e = (*e).max(seq.wrapping_add(adv));
                let seg = b.tcp_segment(src, sport, dst, dport, seq, ack, flags, payload);
                b.eth_ip(src, dst, 6, &seg)
            }
            1 => {
                let d = b.udp_datagram(src, sport, dst, dport, payload);
                b.eth_ip(src, dst, 17, &d)
            }
            2 => {
                let (proto, ty) = if src.is_ipv6() { (58, 128) } else { (1, 8) };
                let mut m = vec![ty, 0, 0, 0, 0, 1, 0, 1];
                m.extend_from_slice(payload);
                b.eth_ip(src, dst, proto, &m)
            }
            _ => payload.to_vec(),
        };
        index += 1;
        let ts = ts0 + index as i64 * 1_000_000;
        batch.push(index, ts, 1, &frame, frame.len() as u32);
        if batch.len() == 8 {
            batch.upto = index;
            run_batch(&mut worker, &batch, &mut alerts, inline);
            batch.clear();
        }
    }
    if !batch.is_empty() {
        batch.upto = index;
        run_batch(&mut worker, &batch, &mut alerts, inline);
    }
    let (_stats, tail) = worker.finish();
    alerts.extend(tail);
    for a in &alerts {
        assert!(
            a.index <= index + 1,
            "alert for packet {} of {index}",
            a.index
        );
        if a.kind == OutKind::Alert {
            assert!(
                (a.rule as usize) < nrules,
                "alert for rule {} of {nrules}",
                a.rule
            );
        }
    }
});

/// The engine for a rule choice and text. Building one costs far more
/// than running a few packets (the port tables), and most mutations leave
/// the rules alone, so the last few engines are kept (an engine is
/// immutable).
fn engine_for(mask: u16, rules_text: &[u8]) -> Arc<DetectEngine> {
    type Cache = Vec<(u16, Vec<u8>, Arc<DetectEngine>)>;
    thread_local! {
        static CACHE: RefCell<Cache> = const { RefCell::new(Vec::new()) };
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(i) = c.iter().position(|(m, t, _)| *m == mask && t == rules_text) {
            let hit = c.remove(i);
            let e = hit.2.clone();
            c.push(hit);
            return e;
        }
        let vars = Vars::default();
        let text = String::from_utf8_lossy(rules_text);
        let mut rules: Vec<_> = (0..16)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| {
                parse_rule(RULES[i], &vars, Origin::default())
                    .unwrap_or_else(|e| panic!("built-in rule {i}: {e}"))
            })
            .collect();
        rules.extend(
            text.lines()
                .take(64)
                .filter_map(|l| parse_rule(l, &vars, Origin::default()).ok()),
        );
        let (detect, _report) = DetectEngine::build(&rules, &ClassificationConfig::default());
        let e = Arc::new(detect);
        if c.len() >= 8 {
            c.remove(0);
        }
        c.push((mask, rules_text.to_vec(), e.clone()));
        e
    })
}

fn run_batch(
    worker: &mut Worker,
    batch: &Batch,
    alerts: &mut Vec<vigil_engine::AlertOut>,
    inline: bool,
) {
    worker.process(batch, alerts);
    if inline {
        assert_eq!(worker.verdicts().len(), batch.len(), "a verdict per packet");
    }
}
