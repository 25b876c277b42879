//! Suricata 8/9 session keywords end to end: `tcp.session`,
//! `flow.elephant` (with `flow.rate-tracking`) and the `alert` keyword.
//!
//! Set `VIGIL_TEST_PCAP_DIR` to keep the crafted captures (to run the
//! Suricata peer on them).

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;

use common::{run, write_pcap};
use vigil_craft::{TcpSession, TimedFrame};
use vigil_engine::EngineConfig;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn keep(name: &str, frames: &[TimedFrame]) {
    if let Ok(dir) = std::env::var("VIGIL_TEST_PCAP_DIR") {
        let p = write_pcap(name, frames.to_vec());
        let _ = std::fs::copy(&p, std::path::Path::new(&dir).join(format!("{name}.pcap")));
        let _ = std::fs::remove_file(p);
    }
}

/// Packet indexes (pcap_cnt) each sid alerted on.
fn by_sid(a: &[common::Seen], sid: u32) -> BTreeSet<u64> {
    a.iter()
        .filter(|s| s.sid == sid && !s.pseudo)
        .map(|s| s.index)
        .collect()
}

pub const TCP_SESSION_RULES: &str = "\
alert tcp any any -> any any (tcp.session:setup; sid:1;)
alert tcp any any -> any any (tcp.session:established; sid:2;)
alert tcp any any -> any any (tcp.session:closing; sid:3;)
alert tcp any any -> any any (tcp.session:closing,setup; sid:4;)
alert tcp any any -> any any (flow:not_established; sid:5;)
alert tcp any any -> any any (flow:established; sid:6;)
alert tcp any any -> any any (tcp.session:established; content:\"DATA\"; sid:7;)
";

fn tcp_session_capture() -> Vec<TimedFrame> {
    let mut s =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.1.1:8080")).start_at((1_700_000_000, 0));
    s.handshake()
        .client_send(b"DATA one")
        .server_send(b"reply")
        .close();
    s.into_frames()
}

#[test]
fn tcp_session_phases_follow_the_session() {
    let frames = tcp_session_capture();
    keep("tcp-session", &frames);
    assert_eq!(frames.len(), 10);
    let (a, _) = run(
        "tcp-session",
        frames,
        TCP_SESSION_RULES,
        &EngineConfig::default(),
    );
    let (setup, est, closing, either) =
        (by_sid(&a, 1), by_sid(&a, 2), by_sid(&a, 3), by_sid(&a, 4));
    // setup / established are flow:not_established / flow:established.
    assert_eq!(setup, by_sid(&a, 5));
    assert_eq!(est, by_sid(&a, 6));
    // The Suricata 9 peer on this capture: the handshake is setup (its
    // last ACK too: the flow was not established before it), the rest
    // established; closing from the client's FIN (8) to the server's FIN
    // (9); the last ACK finds the session closed.
    assert_eq!(setup, (1..=3).collect());
    assert_eq!(est, (4..=10).collect());
    assert_eq!(closing, [8, 9].into());
    assert_eq!(either, [1, 2, 3, 8, 9].into());
    // A packet keyword: the payload is matched on the packet, once.
    assert_eq!(by_sid(&a, 7), [4].into());
    assert_eq!(a.iter().filter(|s| s.sid == 7).count(), 1);
}

pub const ELEPHANT_RULES: &str = "\
alert tcp any any -> any any (flow.elephant:toserver; sid:1;)
alert tcp any any -> any any (flow.elephant:toclient; sid:2;)
alert tcp any any -> any any (flow.elephant:either; sid:3;)
alert tcp any any -> any any (flow.elephant:both; sid:4;)
";

/// A client uploading 20 KB within a second, the server answering with
/// a few bytes.
fn upload_capture() -> Vec<TimedFrame> {
    let mut s =
        TcpSession::new(addr("10.0.0.2:40001"), addr("10.0.1.1:8080")).start_at((1_700_000_000, 0));
    s.handshake();
    for _ in 0..20 {
        s.client_send(&[b'E'; 1000]);
    }
    s.server_send(b"ok").close();
    s.into_frames()
}

#[test]
fn flow_elephant_follows_the_byte_rate_per_direction() {
    let frames = upload_capture();
    keep("elephant", &frames);
    // Without flow.rate-tracking no flow is an elephant.
    let (a, st) = run(
        "elephant-off",
        frames.clone(),
        ELEPHANT_RULES,
        &EngineConfig::default(),
    );
    assert!(a.is_empty());
    assert_eq!(st.workers.flow_elephant, 0);
    let cfg = EngineConfig {
        rate_tracking: Some(vigil_engine::RateConfig::new(5000, 1).unwrap()),
        ..EngineConfig::default()
    };
    let (a, st) = run("elephant-on", frames.clone(), ELEPHANT_RULES, &cfg);
    let ts = by_sid(&a, 1);
    // From the packet that brings the client's bytes of this second to
    // 5000 (whole frames: 54-byte headers), to the end of the flow: 12 to
    // 48, as the Suricata 9 peer with the same settings.
    let mut sum = 0u64;
    let mut first = 0u64;
    for (i, (t, f)) in frames.iter().enumerate() {
        if f[26..30] == [10, 0, 0, 2] && t.0 == 1_700_000_000 {
            sum += f.len() as u64;
            if sum >= 5000 && first == 0 {
                first = i as u64 + 1;
            }
        }
    }
    assert!(
        first > 0,
        "the capture crosses 5000 bytes in its first second"
    );
    assert_eq!(ts, (first..=frames.len() as u64).collect());
    assert_eq!(by_sid(&a, 3), ts);
    assert!(by_sid(&a, 2).is_empty() && by_sid(&a, 4).is_empty());
    assert_eq!(st.workers.flow_elephant, 1);
    assert_eq!(st.workers.flow_elephant_toserver, 1);
    assert_eq!(st.workers.flow_elephant_toclient, 0);
    // A threshold above the upload: never.
    let cfg = EngineConfig {
        rate_tracking: Some(vigil_engine::RateConfig::new(30_000, 1).unwrap()),
        ..EngineConfig::default()
    };
    let (a, _) = run("elephant-high", frames, ELEPHANT_RULES, &cfg);
    assert!(a.is_empty());
}

pub const ALERT_KW_RULES: &str = "\
pass tcp any any -> any any (msg:\"pass alert\"; content:\"DATA\"; alert; sid:1;)
alert tcp any any -> any any (msg:\"after pass\"; content:\"reply\"; sid:2;)
pass tcp any any -> any any (msg:\"plain pass\"; content:\"NOPE\"; sid:3;)
";

/// `alert` on a pass rule: the pass rule alerts ("alert then pass") and
/// the flow is passed as without it.
#[test]
fn alert_keyword_makes_a_pass_rule_alert() {
    let (a, _) = run(
        "alert-kw",
        tcp_session_capture(),
        ALERT_KW_RULES,
        &EngineConfig::default(),
    );
    // As the Suricata 9 peer: one alert, on the stream at the client's
    // FIN (packet 8), and nothing after the pass.
    assert_eq!(
        a.iter().map(|s| (s.sid, s.index)).collect::<Vec<_>>(),
        vec![(1, 8)]
    );
    // Without the keyword the pass rule is silent and still passes.
    let rules = ALERT_KW_RULES.replace(" alert; sid:1;", " sid:1;");
    let (a, _) = run(
        "alert-kw-off",
        tcp_session_capture(),
        &rules,
        &EngineConfig::default(),
    );
    assert!(a.is_empty());
}
