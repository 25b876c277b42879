//! Split rule groups (`vigil_detect::group::SplitSets`): the worker scans
//! a TCP packet's payload only for the patterns of rules that can match
//! it, the stream data for the stream rules, and a flow for the patterns
//! of its own application protocol once it is known. The alerts must be
//! those of one engine per group over every pattern, packet by packet,
//! whatever the rule kind: stream matches across segments, anchored
//! (`depth`) rules that inspect both, packet-only rules, rules of the
//! flow's protocol and of another, negated protocol tests, rules of one
//! flow direction (the sets are kept per direction), UDP.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;

use common::{run_pcap, write_pcap, Seen};
use vigil_craft::{PacketBuilder, TcpSession, TimedFrame};
use vigil_detect::DetectEngine;
use vigil_engine::EngineConfig;
use vigil_prefilter::{EngineKind, SplitMode};

const RULES: &str = r#"alert tcp any any -> any any (msg:"stream, across segments"; content:"GET /split-here"; sid:1;)
alert tcp any any -> any any (msg:"anchored"; content:"GET"; depth:3; sid:2;)
alert tcp any any -> any any (msg:"packet only"; dsize:>4; content:"re HTTP"; sid:3;)
alert http any any -> any any (msg:"raw content of the flow's protocol"; content:"split-here"; sid:4;)
alert smb any any -> any any (msg:"another protocol"; content:"GET"; sid:5;)
alert tcp any any -> any any (msg:"not smb"; app-layer-protocol:!smb; content:"Host:"; sid:6;)
alert dns any any -> any any (msg:"udp protocol rule"; content:"|07|example"; sid:7;)
alert udp any any -> any 53 (msg:"udp"; content:"|03|com"; sid:8;)
alert tcp any any -> any any (msg:"server side stream"; flow:to_client; content:"200 OK"; sid:9;)
alert http any any -> any any (msg:"stream only, protocol"; flow:only_stream; content:"example.com"; sid:10;)
alert tcp any any -> any any (msg:"wrong direction"; flow:to_server; content:"200 OK"; sid:11;)
alert tcp any any -> any any (msg:"stateless"; flow:stateless; content:"Content-Length"; sid:12;)
alert http any any -> any any (msg:"protocol, to client"; flow:established,to_client; content:"HTTP/1.1 200"; sid:13;)
"#;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn detect(kind: EngineKind, mode: SplitMode) -> Arc<DetectEngine> {
    common::engine_with_mode(RULES, kind, mode)
}

fn frames() -> Vec<TimedFrame> {
    // HTTP in 6-byte segments: the URI is split across packets.
    let mut s = TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.1.1:8080"))
        .start_at((1_700_000_000, 0))
        .with_mss(6);
    s.handshake()
        .client_send(b"GET /split-here HTTP/1.1\r\nHost: example.com\r\n\r\n")
        .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        .close();
    let mut out = s.into_frames();
    // The same bytes in one segment each way.
    let mut s =
        TcpSession::new(addr("10.0.0.2:40001"), addr("10.0.1.1:80")).start_at((1_700_000_010, 0));
    s.handshake()
        .client_send(b"GET /split-here HTTP/1.1\r\nHost: example.com\r\n\r\n")
        .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        .close();
    out.extend(s.into_frames());
    let b = PacketBuilder::default();
    let mut q = vec![0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7];
    q.extend_from_slice(b"example");
    q.extend_from_slice(&[3, b'c', b'o', b'm', 0, 0, 1, 0, 1]);
    let (c, d) = (addr("10.0.0.9:5353"), addr("10.0.1.53:53"));
    out.push((
        (1_700_000_020, 0),
        b.udp(c.ip(), c.port(), d.ip(), d.port(), &q),
    ));
    out
}

#[test]
fn split_groups_give_the_alerts_of_single_engines() {
    let path = write_pcap("split-groups", frames());
    for kind in [EngineKind::Ac, EngineKind::AcCompact, EngineKind::Hs] {
        if !kind.available() {
            continue;
        }
        for workers in [1, 2] {
            let cfg = EngineConfig {
                workers,
                ..EngineConfig::default()
            };
            let (want, whole) = run_pcap(&path, detect(kind, SplitMode::Off), &cfg);
            let sids: std::collections::BTreeSet<u32> = want.iter().map(|s: &Seen| s.sid).collect();
            assert_eq!(
                sids,
                [1, 2, 3, 4, 6, 7, 8, 9, 10, 12, 13].into_iter().collect(),
                "{kind}: every kind of rule fires (the smb and wrong-direction ones do not)"
            );
            let checked = |s: &vigil_engine::RunStats| s.workers.rules_checked;
            let mut checks = Vec::new();
            for mode in [SplitMode::Protocols, SplitMode::Full] {
                let (got, split) = run_pcap(&path, detect(kind, mode), &cfg);
                assert_eq!(got, want, "{kind}, {mode:?}, {workers} worker(s)");
                // Fewer rules reached verification: the smb rule's pattern
                // is not looked for on an HTTP flow (both modes), a
                // to-server rule's not in data going to the client (full).
                assert!(
                    checked(&split) < checked(&whole),
                    "{kind}, {mode:?}: {} checks split, {} with one engine",
                    checked(&split),
                    checked(&whole)
                );
                checks.push(checked(&split));
            }
            assert!(
                checks[1] < checks[0],
                "{kind}: full split checks fewer: {checks:?}"
            );
        }
    }
    let _ = std::fs::remove_file(&path);
}
