//! Exception policies and `drop` records, inline: a session picked up
//! without its handshake, a reassembly memory cap reached, and the EVE
//! `drop` record of each dropped packet.

mod common;

use std::net::SocketAddr;

use common::engine;
use vigil_craft::{TcpSession, TimedFrame};
use vigil_engine::{
    AlertOut, DropLog, ExceptionCase, ExceptionPolicies, ExceptionPolicy, OutKind, Verdict, Worker,
    WorkerConfig,
};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

const RULES: &str = "alert tcp any any -> any 80 (msg:\"seen\"; content:\"GET /\"; sid:7;)\n\
                     drop tcp any any -> any 80 (msg:\"attack\"; content:\"ATTACK\"; sid:8;)\n";

/// A session's frames: handshake, two requests, close.
fn session(requests: &[&[u8]]) -> (Vec<TimedFrame>, usize) {
    let mut s =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:80")).start_at((1_700_000_000, 0));
    s.handshake();
    let handshake = s.take_frames().len();
    let mut s =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:80")).start_at((1_700_000_000, 0));
    s.handshake();
    for r in requests {
        s.client_send(r);
    }
    s.close();
    (s.into_frames(), handshake)
}

/// One worker, inline or not, with the policies `auto` gives for that
/// mode, overridden by `per_case`.
fn worker(
    inline: bool,
    per_case: &[(ExceptionCase, &str)],
    tweak: impl Fn(&mut WorkerConfig),
) -> Worker {
    let mut cfg = WorkerConfig {
        inline,
        stream: vigil_engine::StreamSettings {
            inline,
            ..Default::default()
        },
        exceptions: ExceptionPolicies::resolve(None, per_case, inline, false).unwrap(),
        ..WorkerConfig::default()
    };
    tweak(&mut cfg);
    Worker::new(engine(RULES), cfg)
}

fn run(w: &mut Worker, frames: &[TimedFrame]) -> (Vec<Verdict>, Vec<AlertOut>) {
    let mut batch = vigil_engine::Batch::default();
    for (i, f) in frames.iter().enumerate() {
        let ts = f.0 .0 * 1_000_000_000 + i64::from(f.0 .1) * 1000;
        batch.push(i as u64 + 1, ts, 1, &f.1, f.1.len() as u32);
    }
    let mut out = Vec::new();
    w.process(&batch, &mut out);
    (w.verdicts().to_vec(), out)
}

fn alerts(out: &[AlertOut]) -> usize {
    out.iter().filter(|a| a.kind == OutKind::Alert).count()
}

#[test]
fn inline_a_session_without_its_handshake_is_dropped_by_default() {
    let (frames, hs) = session(&[b"GET / HTTP/1.1\r\n\r\n"]);
    let midstream = &frames[hs..];
    let mut w = worker(true, &[], |_| {});
    let (v, out) = run(&mut w, midstream);
    // The first packet (the request, an ACK without SYN) applies the
    // policy; the flow table drops the rest without inspection.
    assert_eq!(v[0], Verdict::Exception(ExceptionCase::Midstream), "{v:?}");
    assert!(v[1..].iter().all(|x| *x == Verdict::FlowDropped), "{v:?}");
    assert_eq!(alerts(&out), 0);
    let s = w.snapshot();
    assert_eq!(s.exceptions.get(&("tcp.midstream", "drop_flow")), Some(&1));
    assert_eq!(s.ips_drop_exception.get("stream_midstream"), Some(&1));
    assert_eq!(s.ips_drop_flow, (midstream.len() - 1) as u64);
    // With its handshake the same session is accepted and inspected.
    let mut w = worker(true, &[], |_| {});
    let (v, out) = run(&mut w, &frames);
    assert!(v.iter().all(|x| *x == Verdict::Accept), "{v:?}");
    assert_eq!(alerts(&out), 1);
    assert!(w.snapshot().exceptions.is_empty());
}

#[test]
fn in_ids_mode_auto_ignores_and_pass_flow_stops_detection_only() {
    let (frames, hs) = session(&[b"GET / HTTP/1.1\r\n\r\n"]);
    let midstream = &frames[hs..];
    // IDS, auto: nothing applied; the packet rule still sees the request.
    let mut w = worker(false, &[], |_| {});
    let (_, out) = run(&mut w, midstream);
    assert_eq!(alerts(&out), 1);
    assert!(w.snapshot().exceptions.is_empty());
    // pass-flow, inline: accepted, no detection, counted once per flow.
    let mut w = worker(true, &[(ExceptionCase::Midstream, "pass-flow")], |_| {});
    let (v, out) = run(&mut w, midstream);
    assert!(v.iter().all(|x| *x == Verdict::Accept), "{v:?}");
    assert_eq!(alerts(&out), 0);
    assert_eq!(
        w.snapshot().exceptions.get(&("tcp.midstream", "pass_flow")),
        Some(&1)
    );
    // ignore, inline: inspected as in IDS mode.
    let mut w = worker(true, &[(ExceptionCase::Midstream, "ignore")], |_| {});
    let (v, out) = run(&mut w, midstream);
    assert!(v.iter().all(|x| *x == Verdict::Accept), "{v:?}");
    assert_eq!(alerts(&out), 1);
}

#[test]
fn a_reassembly_memcap_applies_its_policy_to_the_flow() {
    let (frames, hs) = session(&[b"GET / HTTP/1.1\r\n\r\n", b"GET /more HTTP/1.1\r\n\r\n"]);
    // Too little reassembly memory for any segment.
    let tiny = |c: &mut WorkerConfig| c.stream_memcap = 4;
    let mut w = worker(true, &[], tiny);
    let (v, out) = run(&mut w, &frames);
    let first_data = hs;
    assert!(
        v[..first_data].iter().all(|x| *x == Verdict::Accept),
        "{v:?}"
    );
    assert_eq!(
        v[first_data],
        Verdict::Exception(ExceptionCase::StreamReassemblyMemcap),
        "{v:?}"
    );
    assert!(
        v[first_data + 1..]
            .iter()
            .all(|x| *x == Verdict::FlowDropped),
        "{v:?}"
    );
    assert_eq!(alerts(&out), 0);
    let s = w.snapshot();
    assert_eq!(s.exceptions.get(&("tcp.reassembly", "drop_flow")), Some(&1));
    assert!(s.stream_memcap_dropped > 0);
    // drop-packet: only the packets that hit the cap are dropped; the
    // flow goes on.
    let mut w = worker(
        true,
        &[(ExceptionCase::StreamReassemblyMemcap, "drop-packet")],
        tiny,
    );
    let (v, _) = run(&mut w, &frames);
    assert!(!v.contains(&Verdict::FlowDropped), "{v:?}");
    let dropped = v
        .iter()
        .filter(|x| **x == Verdict::Exception(ExceptionCase::StreamReassemblyMemcap))
        .count() as u64;
    assert!(dropped >= 2, "{v:?}");
    assert_eq!(
        w.snapshot()
            .exceptions
            .get(&("tcp.reassembly", "drop_packet")),
        Some(&dropped)
    );
    // Enough memory: no exception.
    let mut w = worker(true, &[], |_| {});
    let (v, _) = run(&mut w, &frames);
    assert!(v.iter().all(|x| *x == Verdict::Accept), "{v:?}");
}

#[test]
fn the_resolved_policy_names_and_counters_are_suricatas() {
    assert_eq!(
        ExceptionPolicy::from_name("drop-flow"),
        Some(ExceptionPolicy::DropFlow)
    );
    assert_eq!(ExceptionPolicy::DropFlow.counter(), "drop_flow");
    assert_eq!(
        ExceptionCase::Midstream.config_key(),
        "stream.midstream-policy"
    );
    assert_eq!(ExceptionCase::Midstream.counter(), "tcp.midstream");
}

fn drop_records(out: &[AlertOut]) -> Vec<serde_json::Value> {
    out.iter()
        .filter(|a| a.kind == OutKind::Drop)
        .map(|a| serde_json::from_str(&a.app.as_ref().unwrap().json()).unwrap())
        .collect()
}

#[test]
fn a_drop_record_describes_the_dropped_packet_and_why() {
    let (frames, hs) = session(&[b"GET /ATTACK HTTP/1.1\r\n\r\n"]);
    let log =
        |all: bool| move |c: &mut WorkerConfig| c.drop_log = Some(DropLog { all, alerts: true });
    let mut w = worker(true, &[], log(false));
    let (v, out) = run(&mut w, &frames);
    assert_eq!(v[hs], Verdict::Drop, "{v:?}");
    let recs = drop_records(&out);
    // flows: start — the attack packet (to server), then the first
    // dropped packet to the client.
    assert_eq!(recs.len(), 2, "{recs:?}");
    let d = &recs[0];
    // The fields come from the attack packet's own headers.
    let f = &frames[hs].1;
    let ip = &f[14..34];
    let tcp = &f[34..54];
    let be32 = |b: &[u8]| u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let be16 = |b: &[u8]| u64::from(u16::from_be_bytes([b[0], b[1]]));
    assert_eq!(d["len"], be16(&ip[2..4]));
    assert_eq!(d["len"], 40 + "GET /ATTACK HTTP/1.1\r\n\r\n".len() as u64);
    assert_eq!(d["ttl"], u64::from(ip[8]));
    assert_eq!(d["tos"], u64::from(ip[1]));
    assert_eq!(d["ipid"], be16(&ip[4..6]));
    assert_eq!(d["tcpseq"], be32(&tcp[4..8]));
    assert_eq!(d["tcpack"], be32(&tcp[8..12]));
    assert_eq!(d["tcpwin"], be16(&tcp[14..16]));
    assert_eq!(d["ack"], true);
    assert_eq!(d["syn"], false);
    assert_eq!(d["psh"], tcp[13] & 0x08 != 0);
    assert_eq!(d["reason"], "rules");
    let drop_out = out.iter().find(|a| a.kind == OutKind::Drop).unwrap();
    assert_eq!(w.detect().rules[drop_out.rule as usize].sid, 8);
    assert_eq!(recs[1]["reason"], "flow drop");
    // flows: all — one record per dropped packet.
    let mut w = worker(true, &[], log(true));
    let (v, out) = run(&mut w, &frames);
    let dropped = v.iter().filter(|x| x.is_drop()).count();
    assert_eq!(drop_records(&out).len(), dropped);
    assert!(dropped > 2);
    // Not inline: nothing is dropped, nothing recorded.
    let mut w = worker(false, &[], log(true));
    let (_, out) = run(&mut w, &frames);
    assert!(drop_records(&out).is_empty());
}

#[test]
fn a_parser_error_applies_the_app_layer_policy() {
    let mut s =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:443")).start_at((1_700_000_000, 0));
    s.handshake();
    let hs = s.take_frames();
    let mut s =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:443")).start_at((1_700_000_000, 0));
    s.handshake();
    // A TLS handshake record (a ClientHello header), then a record of a
    // type TLS does not have: the parser cannot go on.
    s.client_send(&[0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00]);
    s.client_send(&[0x99, 0x03, 0x01, 0x00, 0x01, 0x00]);
    s.client_send(b"more data");
    let frames = s.into_frames();
    let mut w = worker(true, &[], |_| {});
    let (v, _) = run(&mut w, &frames);
    let at = v
        .iter()
        .position(|x| *x == Verdict::Exception(ExceptionCase::AppLayerError))
        .unwrap_or_else(|| panic!("no app-layer error exception: {v:?}"));
    assert!(at > hs.len(), "{v:?}");
    assert!(v[..at].iter().all(|x| *x == Verdict::Accept), "{v:?}");
    assert!(
        v[at + 1..].iter().all(|x| *x == Verdict::FlowDropped),
        "{v:?}"
    );
    assert_eq!(
        w.snapshot()
            .exceptions
            .get(&("app_layer.error", "drop_flow")),
        Some(&1)
    );
    // IDS mode: ignored.
    let mut w = worker(false, &[], |_| {});
    let (v, _) = run(&mut w, &frames);
    assert!(v.iter().all(|x| *x == Verdict::Accept), "{v:?}");
    assert!(w.snapshot().exceptions.is_empty());
}

/// `stream.bypass`: once a direction reaches the reassembly depth the flow
/// is bypassed: its later packets are accepted without inspection.
#[test]
fn stream_bypass_bypasses_a_flow_at_the_reassembly_depth() {
    let (frames, _) = session(&[b"GET / HTTP/1.1\r\n\r\n", b"more ATTACK data"]);
    let shallow = |bypass: bool| {
        move |c: &mut WorkerConfig| {
            c.stream.depth = 8;
            c.stream_bypass = bypass;
        }
    };
    let mut w = worker(true, &[], shallow(true));
    let (v, out) = run(&mut w, &frames);
    assert!(v.iter().all(|x| *x == Verdict::Accept), "{v:?}");
    assert!(!out
        .iter()
        .any(|a| a.kind == OutKind::Alert && w.detect().rules[a.rule as usize].sid == 8));
    assert_eq!(w.snapshot().bypassed_flows, 1);
    // Without it the flow is still inspected packet by packet: the drop
    // rule sees the second request.
    let mut w = worker(true, &[], shallow(false));
    let (v, _) = run(&mut w, &frames);
    assert!(v.contains(&Verdict::Drop), "{v:?}");
    assert_eq!(w.snapshot().bypassed_flows, 0);
}

/// `encryption-handling: bypass`: once both sides of a TLS session are
/// encrypted the flow is bypassed.
#[test]
fn tls_bypass_bypasses_an_encrypted_session() {
    let mut s =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.9:443")).start_at((1_700_000_000, 0));
    s.handshake();
    // ClientHello and ServerHello headers, ChangeCipherSpec both ways,
    // then application data.
    s.client_send(&[0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00]);
    s.server_send(&[0x16, 0x03, 0x03, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00]);
    s.client_send(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
    s.server_send(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
    s.client_send(&[0x17, 0x03, 0x03, 0x00, 0x04, 1, 2, 3, 4]);
    s.close();
    let frames = s.into_frames();
    for bypass in [false, true] {
        let mut w = worker(true, &[], |c| c.tls_bypass = bypass);
        let (v, _) = run(&mut w, &frames);
        assert!(v.iter().all(|x| *x == Verdict::Accept), "{v:?}");
        let st = w.snapshot();
        assert_eq!(st.tls_encrypted_flows, 1, "bypass {bypass}");
        assert_eq!(st.bypassed_flows, u64::from(bypass));
    }
}
