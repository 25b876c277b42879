//! Stateful inspection end to end: TCP reassembly and raw stream
//! inspection, overlap policies, stream keywords, defragmentation, flow
//! end, and repeatability across worker counts.

mod common;

use std::net::SocketAddr;

use common::{fragmented_syn, run, sids};
use vigil_craft::{add_us, Dir, PacketBuilder, TcpSession, TimedFrame, ACK, PSH, RST};
use vigil_engine::{EngineConfig, OverlapPolicy};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn session(i: u16) -> TcpSession {
    TcpSession::new(
        addr(&format!("10.0.0.{}:{}", 1 + i % 200, 40000 + i)),
        addr("10.0.1.1:8080"),
    )
    .start_at((1_700_000_000 + i64::from(i), 0))
}

/// A client data segment at `rel` bytes after the handshake, by hand.
fn client_seg(s: &TcpSession, base: u32, rel: u32, data: &[u8], t: u64) -> TimedFrame {
    let (c, v) = (s.client(), s.server());
    let f = PacketBuilder::default().tcp(
        c.ip(),
        c.port(),
        v.ip(),
        v.port(),
        base.wrapping_add(rel),
        s.server_next_seq(),
        PSH | ACK,
        data,
    );
    (add_us(s.now(), t), f)
}

fn server_ack(s: &TcpSession, ack: u32, t: u64) -> TimedFrame {
    let (c, v) = (s.client(), s.server());
    let f = PacketBuilder::default().tcp(
        v.ip(),
        v.port(),
        c.ip(),
        c.port(),
        s.server_next_seq(),
        ack,
        ACK,
        &[],
    );
    (add_us(s.now(), t), f)
}

#[test]
fn content_split_across_segments_matches_the_stream_once() {
    let mut s = session(1).with_mss(3);
    s.handshake().client_send(b"xxATTACKyyATTACK").close();
    let rules = "alert tcp any any -> any any (content:\"ATTACK\"; sid:1;)\n\
                 alert tcp-pkt any any -> any any (content:\"ATTACK\"; sid:2;)\n";
    let (a, _) = run("split", s.into_frames(), rules, &EngineConfig::default());
    assert_eq!(sids(&a), vec![1]);
    assert!(a[0].stream && !a[0].pseudo);
}

#[test]
fn anchored_rules_inspect_packets_and_stream() {
    let mut s = session(2);
    s.handshake()
        .client_send(b"GNUTELLA CONNECT/0.6\r\n")
        .close();
    let rules = "alert tcp any any -> any any (flow:to_server,established; content:\"GNUTELLA\"; depth:8; sid:3;)\n";
    let (a, _) = run("anchored", s.into_frames(), rules, &EngineConfig::default());
    // Suricata alerts on the packet, then again on the stream chunk.
    assert_eq!(sids(&a), vec![3, 3]);
    assert!(!a[0].stream && a[1].stream);
}

#[test]
fn rst_payload_is_not_stream_data() {
    let mut s = session(3);
    s.handshake().server_send(b"Please Let Me In!");
    s.segment(Dir::ToClient, RST, b"Access Denied");
    let rules = "alert tcp-pkt any any -> any any (content:\"Access Denied\"; sid:1;)\n\
                 alert tcp any any -> any any (flow:only_stream; content:\"Access Denied\"; sid:2;)\n\
                 alert tcp any any -> any any (content:\"Please Let Me In!\"; sid:4;)\n\
                 alert tcp any any -> any any (content:\"Please Let Me In!Access Denied\"; sid:5;)\n";
    let (a, _) = run("rst", s.into_frames(), rules, &EngineConfig::default());
    let mut got = sids(&a);
    got.sort();
    assert_eq!(got, vec![1, 4]);
}

fn overlap_capture() -> Vec<TimedFrame> {
    let mut s = session(4);
    s.handshake();
    let base = s.client_next_seq();
    let mut f = s.take_frames();
    f.push(client_seg(&s, base, 0, b"GOOD", 1));
    f.push(client_seg(&s, base, 0, b"EVIL", 2));
    f.push(server_ack(&s, base.wrapping_add(4), 3));
    f
}

#[test]
fn overlapping_retransmission_keeps_the_first_data_and_raises_an_event() {
    let rules = "alert tcp-stream any any -> any any (content:\"EVIL\"; sid:1;)\n\
                 alert tcp-stream any any -> any any (content:\"GOOD\"; sid:2;)\n\
                 alert tcp-pkt any any -> any any (content:\"EVIL\"; sid:3;)\n\
                 alert tcp any any -> any any (stream-event:reassembly_overlap_different_data; sid:4;)\n";
    let mut cfg = EngineConfig {
        log_payload: true,
        ..EngineConfig::default()
    };
    let (a, _) = run("overlap", overlap_capture(), rules, &cfg);
    assert_eq!(sids(&a), vec![3, 4, 2]);
    let good = &a[2];
    assert!(good.stream && good.pseudo);
    assert_eq!(good.payload.as_deref(), Some(&b"GOOD"[..]));
    // Under the `last` policy the retransmitted data wins.
    cfg.stream.policy = OverlapPolicy::Last;
    let (a, _) = run("overlap-last", overlap_capture(), rules, &cfg);
    assert_eq!(sids(&a), vec![3, 4, 1]);
}

#[test]
fn gaps_split_the_stream_and_show_in_the_payload() {
    let mut s = session(5);
    s.handshake();
    let base = s.client_next_seq();
    let mut f = s.take_frames();
    f.push(client_seg(&s, base, 0, b"VERY", 1));
    f.push(client_seg(&s, base, 8, b"DATA", 2));
    f.push(server_ack(&s, base.wrapping_add(12), 3));
    let rules = "alert tcp-stream any any -> any any (content:\"VERY\"; sid:1;)\n\
                 alert tcp-stream any any -> any any (content:\"DATA\"; sid:3;)\n\
                 alert tcp-stream any any -> any any (content:\"VERYGOODDATA\"; sid:7;)\n";
    let cfg = EngineConfig {
        log_payload: true,
        ..EngineConfig::default()
    };
    let (a, _) = run("gap", f, rules, &cfg);
    assert_eq!(sids(&a), vec![1, 3]);
    assert_eq!(
        a[0].payload.as_deref(),
        Some(&b"VERY[4 bytes missing]DATA"[..])
    );
}

#[test]
fn stream_size_compares_sequence_progress() {
    let mut s = session(6);
    s.handshake().client_send(&[b'x'; 30]).close();
    let rules = "alert tcp any any -> any any (flow:to_server; stream_size:client,>,20; sid:8;)\n";
    let (a, _) = run("size", s.into_frames(), rules, &EngineConfig::default());
    // Every client packet after the 30 bytes: the data packet (31 > 20),
    // the FIN and the last ACK; plus the final pseudo packet? No: the
    // session is closed and fully inspected by then.
    assert_eq!(sids(&a), vec![8, 8, 8]);
}

#[test]
fn rebuilt_datagram_is_inspected_with_its_flow() {
    let rules = "alert tcp any any -> any 80 (flags:S; sid:7;)\n\
                 alert tcp any any -> any 80 (flags:S; flow:only_frag; sid:8;)\n\
                 alert ip any any -> any any (decode-event:ipv4.frag_overlap; sid:9;)\n";
    let (a, stats) = run("defrag", fragmented_syn(), rules, &EngineConfig::default());
    assert_eq!(sids(&a), vec![9, 7, 8]);
    assert_eq!(stats.defrag.reassembled, 1);
    assert_eq!(stats.workers.tcp_sessions, 1);
    // Without defragmentation the fragments alone match no TCP rule.
    let cfg = EngineConfig {
        defrag: None,
        ..EngineConfig::default()
    };
    let (a, _) = run("nodefrag", fragmented_syn(), rules, &cfg);
    assert!(a.is_empty());
}

#[test]
fn flow_timeout_inspects_what_is_left_before_the_new_flow() {
    let mut s = session(7).with_data_acks(false);
    s.handshake().client_send(b"LEFTOVER");
    let mut f = s.take_frames();
    // 20 minutes later the same client port opens a new connection.
    let mut again = TcpSession::new(s.client(), s.server())
        .start_at(add_us(s.now(), 1_200_000_000))
        .with_isn(90_000, 70_000);
    again.handshake();
    f.extend(again.into_frames());
    let rules = "alert tcp any any -> any any (content:\"LEFTOVER\"; sid:1;)\n\
                 alert tcp any any -> any any (flags:S; sid:2;)\n";
    let (a, stats) = run("timeout", f, rules, &EngineConfig::default());
    assert_eq!(sids(&a), vec![2, 1, 2]);
    assert!(a[1].stream && a[1].pseudo);
    assert_eq!(stats.workers.flows_timed_out, 1);
}

/// Many sessions, fragments and reused ports: the alerts must not depend
/// on the number of workers.
#[test]
fn output_identical_for_any_worker_count() {
    let mut frames = Vec::new();
    for i in 0..60u16 {
        let mut s = session(i).with_mss(7);
        s.handshake()
            .client_send(format!("GET /item{i} HTTP/1.1\r\nX: ATTACK\r\n\r\n").as_bytes())
            .server_send(b"HTTP/1.1 200 OK\r\n\r\nsecret");
        if i % 3 == 0 {
            s.close();
        } else if i % 3 == 1 {
            s.reset(Dir::ToServer);
        }
        frames.extend(s.into_frames());
    }
    frames.extend(fragmented_syn());
    frames.sort_by_key(|f| f.0);
    let rules = "alert tcp any any -> any any (content:\"ATTACK\"; sid:1;)\n\
                 alert tcp any any -> any 8080 (flow:to_server,established; content:\"GET /item\"; depth:9; sid:2;)\n\
                 alert tcp any 8080 -> any any (flow:to_client; content:\"secret\"; sid:3;)\n\
                 alert tcp any any -> any any (flags:S; sid:4;)\n\
                 alert ip any any -> any any (decode-event:ipv4.frag_overlap; sid:5;)\n";
    let mut outs = Vec::new();
    for w in [1, 2, 3] {
        let cfg = EngineConfig {
            workers: w,
            log_payload: true,
            batch_packets: 16,
            ..EngineConfig::default()
        };
        outs.push(run(&format!("workers{w}"), frames.clone(), rules, &cfg).0);
    }
    assert_eq!(outs[0].iter().filter(|s| s.sid == 1).count(), 60);
    assert!(outs[0].iter().any(|s| s.sid == 3 && s.pseudo));
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
}

/// An insertion attempt: the first copy of the data has a wrong checksum
/// (the end host drops it), the retransmission carries other bytes. With
/// validation (`-k all`) the stream holds what the host accepted and the
/// bad segment is counted; without it (`none`) the bad copy is reassembled.
#[test]
fn checksum_validation_keeps_bad_segments_out_of_the_stream() {
    use vigil_engine::ChecksumMode;
    let mut s = session(7);
    s.handshake();
    let base = s.client_next_seq();
    let mut evil = client_seg(&s, base, 0, b"EVIL", 10);
    // TCP checksum at Ethernet 14 + IPv4 20 + 16.
    evil.1[14 + 20 + 16] ^= 0x5a;
    let good = client_seg(&s, base, 0, b"GOOD", 20);
    let mut frames = s.take_frames();
    frames.push(evil);
    frames.push(good);
    frames.push(server_ack(&s, base.wrapping_add(4), 30));
    let rules = "alert tcp any any -> any any (content:\"EVIL\"; flow:only_stream; sid:1;)\n\
                 alert tcp any any -> any any (content:\"GOOD\"; flow:only_stream; sid:2;)\n\
                 alert tcp-pkt any any -> any any (content:\"EVIL\"; sid:3;)\n";
    let none = EngineConfig::default();
    let (a, st) = run("cksum-none", frames.clone(), rules, &none);
    let mut got = sids(&a);
    got.sort();
    assert_eq!(
        got,
        vec![1, 3],
        "without validation the bad copy is reassembled"
    );
    assert_eq!(st.workers.tcp_invalid_checksum, 0);
    let all = EngineConfig {
        checksum: ChecksumMode::All,
        ..EngineConfig::default()
    };
    let (a, st) = run("cksum-all", frames, rules, &all);
    let mut got = sids(&a);
    got.sort();
    assert_eq!(
        got,
        vec![2, 3],
        "with validation the stream holds what the host took"
    );
    assert_eq!(st.workers.tcp_invalid_checksum, 1);
}

/// A packet the stream engine does not take (bad checksum, `-k all`) is
/// still inspected as a packet, but as in Suricata without the flow's
/// application layer: rules of an app protocol (`alert http`) and
/// transaction rules do not match it, protocol-agnostic rules do.
#[test]
fn bad_checksum_packets_are_inspected_without_the_app_layer() {
    use vigil_engine::ChecksumMode;
    let mut s = session(9);
    s.handshake()
        .client_send(b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
        .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    let base = s.client_next_seq();
    let req: &[u8] = b"GET /evil HTTP/1.1\r\nHost: EVIL\r\n\r\n";
    let mut bad = client_seg(&s, base, 0, req, 10);
    bad.1[14 + 20 + 16] ^= 0x5a;
    let mut frames = s.take_frames();
    frames.push(bad);
    frames.push(server_ack(&s, base.wrapping_add(req.len() as u32), 20));
    let rules = "alert http any any -> any any (content:\"EVIL\"; sid:21;)\n\
                 alert tcp-pkt any any -> any any (content:\"EVIL\"; sid:22;)\n\
                 alert http any any -> any any (http.uri; content:\"/evil\"; sid:23;)\n\
                 alert tcp any any -> any any (flow:established,to_server; content:\"EVIL\"; sid:24;)\n";
    let (a, st) = run("app-none", frames.clone(), rules, &EngineConfig::default());
    let none = sids(&a);
    for sid in [21, 22, 23, 24] {
        assert!(none.contains(&sid), "without validation {sid}: {none:?}");
    }
    assert_eq!(st.workers.tcp_invalid_checksum, 0);
    let all = EngineConfig {
        checksum: ChecksumMode::All,
        ..EngineConfig::default()
    };
    let (a, st) = run("app-all", frames, rules, &all);
    let got = sids(&a);
    assert!(got.contains(&22) && got.contains(&24), "{got:?}");
    assert!(!got.contains(&21) && !got.contains(&23), "{got:?}");
    assert_eq!(st.workers.tcp_invalid_checksum, 1);
}

/// `engine-event` takes the full Suricata event name of either family
/// (`decoder.` / `stream.`, any case) and matches exactly like
/// `decode-event` / `stream-event`.
#[test]
fn engine_event_matches_decoder_and_stream_events() {
    let rules = "alert tcp any any -> any any (stream-event:reassembly_overlap_different_data; sid:4;)\n\
                 alert tcp any any -> any any (engine-event:stream.reassembly_overlap_different_data; sid:14;)\n\
                 alert tcp any any -> any any (engine-event:Stream.Reassembly_Overlap_Different_Data; sid:15;)\n";
    let (a, _) = run(
        "engine-ev-stream",
        overlap_capture(),
        rules,
        &EngineConfig::default(),
    );
    assert_eq!(sids(&a), vec![4, 14, 15]);
    let rules = "alert ip any any -> any any (decode-event:ipv4.frag_overlap; sid:9;)\n\
                 alert ip any any -> any any (engine-event:decoder.ipv4.frag_overlap; sid:19;)\n\
                 alert ip any any -> any any (engine-event:DECODER.IPV4.FRAG_OVERLAP; sid:20;)\n\
                 alert ip any any -> any any (engine-event:decoder.ipv4.trunc_pkt; sid:21;)\n";
    let (a, _) = run(
        "engine-ev-defrag",
        fragmented_syn(),
        rules,
        &EngineConfig::default(),
    );
    assert_eq!(sids(&a), vec![9, 19, 20]);
}

/// `prefilter` changes no match: each rule alerts exactly like its twin
/// without it, on the packet and on the stream.
#[test]
fn prefilter_changes_no_alert() {
    let base = [
        "content:\"ATTACK\";",
        "flow:to_server,established; content:\"GET /item\"; depth:9;",
        "flags:S;",
        "flow:established; dsize:>0;",
        "content:\"xx\"; content:\"ATTACK\"; distance:0;",
    ];
    let mut plain = String::new();
    let mut with = String::new();
    for (i, b) in base.iter().enumerate() {
        plain.push_str(&format!(
            "alert tcp any any -> any any ({b} sid:{};)\n",
            i + 1
        ));
        with.push_str(&format!(
            "alert tcp any any -> any any ({b} prefilter; sid:{};)\n",
            i + 1
        ));
    }
    let frames = || {
        let mut s = session(40).with_mss(5);
        s.handshake()
            .client_send(b"GET /item1 HTTP/1.1\r\nX: xxATTACK\r\n\r\n")
            .close();
        s.into_frames()
    };
    let (a, _) = run("prefilter-off", frames(), &plain, &EngineConfig::default());
    let (b, _) = run("prefilter-on", frames(), &with, &EngineConfig::default());
    let key = |v: &[common::Seen]| -> Vec<(u32, bool, u64)> {
        v.iter().map(|s| (s.sid, s.stream, s.index)).collect()
    };
    assert!(sids(&a).contains(&1) && sids(&a).contains(&3) && sids(&a).contains(&5));
    assert_eq!(key(&a), key(&b));
}
