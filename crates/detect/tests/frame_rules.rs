//! `frame` rules: what compiles (and what Suricata refuses), and the
//! inspection of one frame against the frame rules of its type.

use std::net::Ipv4Addr;

use vigil_applayer::frames::{FrameProto, Framer};
use vigil_applayer::AppProto;
use vigil_craft::{PacketBuilder, ACK, PSH};
use vigil_detect::{
    AppProtoState, DetectEngine, DetectScratch, FlowDetectState, FlowView, PacketInput, Skip,
};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Vars};
use vigil_wire::{decode, linktype};

fn build(rules: &[&str]) -> (DetectEngine, Vec<(u32, Skip)>) {
    let vars = Vars::default();
    let parsed: Vec<_> = rules
        .iter()
        .map(|r| parse_rule(r, &vars, Origin::default()).unwrap_or_else(|e| panic!("{r}: {e}")))
        .collect();
    let (e, report) = DetectEngine::build(&parsed, &ClassificationConfig::default());
    let skipped = report
        .skipped
        .into_iter()
        .map(|s| (s.sid, s.reason))
        .collect();
    (e, skipped)
}

#[test]
fn frame_rules_compile_or_say_why_not() {
    let (e, skipped) = build(&[
        r#"alert tls any any -> any any (frame:tls.pdu; content:"a"; sid:1;)"#,
        r#"alert tls any any -> any any (content:"abc"; frame:tls.pdu; content:"a"; sid:5;)"#,
        r#"alert tls any any -> any any (tls.version:1.0; frame:tls.pdu; content:"a"; sid:6;)"#,
        r#"alert tls any any -> any any (frame:tls.stream; content:"a"; sid:7;)"#,
        r#"alert tcp any any -> any any (frame:nfs.rpc.pdu; content:"a"; sid:8;)"#,
        r#"alert tcp any any -> any any (flow:to_server; frame:smb.nbss.hdr; content:"|00|"; startswith; sid:9;)"#,
    ]);
    assert_eq!(e.frame_rules.len(), 2);
    assert_eq!(e.rules.iter().filter(|r| r.is_tx()).count(), 2);
    let why = |sid| {
        skipped
            .iter()
            .find(|(s, _)| *s == sid)
            .map(|(_, r)| r.clone())
    };
    for sid in [5, 6] {
        assert!(
            matches!(why(sid), Some(Skip::Invalid { ref keyword, .. }) if keyword == "frame"),
            "{sid}: {:?}",
            why(sid)
        );
    }
    assert!(matches!(why(7), Some(Skip::NotEvaluable(k)) if k == "frame:tls.stream"));
    assert!(matches!(why(8), Some(Skip::NotEvaluable(k)) if k == "frame:nfs.rpc.pdu"));
    let types = e.frame_types.as_deref().unwrap();
    assert_eq!(types, &[("smb", "nbss.hdr"), ("tls", "pdu")]);
}

#[test]
fn a_frame_is_inspected_by_the_rules_of_its_type() {
    let (e, skipped) = build(&[
        r#"alert tls any any -> any any (msg:"pdu"; frame:tls.pdu; content:"|17 03 03|"; startswith; content:"secret"; sid:1;)"#,
        r#"alert tls any any -> any any (msg:"data"; frame:data; content:"secret"; startswith; sid:2;)"#,
        r#"alert tls any any -> any any (msg:"hdr"; frame:hdr; content:"secret"; sid:3;)"#,
        r#"alert tls any any -> any any (msg:"to client"; flow:to_client; frame:data; content:"secret"; sid:4;)"#,
        r#"alert tls any any -> any any (msg:"flowbit"; flowbits:isset,x; frame:data; content:"secret"; sid:5;)"#,
        r#"alert tls any any -> any any (msg:"xf"; frame:data; to_uppercase; content:"SECRET"; sid:6;)"#,
    ]);
    assert!(skipped.is_empty(), "{skipped:?}");
    let mut fr = Framer::new(FrameProto::Tls, true, true, vec!["pdu", "hdr", "data"]);
    let mut rec = vec![0x17, 3, 3, 0, 6];
    rec.extend_from_slice(b"secret");
    fr.feed(0, &rec);
    let frames: Vec<_> = fr.take_done().collect();
    assert_eq!(frames.len(), 3);
    let bytes = PacketBuilder::new().ipv4_tcp(
        Ipv4Addr::new(10, 0, 0, 1),
        40000,
        Ipv4Addr::new(10, 0, 0, 2),
        443,
        1,
        1,
        PSH | ACK,
        b"x",
    );
    let p = decode(linktype::ETHERNET, &bytes);
    let view = FlowView {
        to_server: true,
        established: true,
        app_proto: AppProtoState::Detected(AppProto::Tls),
        ..FlowView::default()
    };
    let mut st = FlowDetectState::default();
    let mut scratch = DetectScratch::default();
    let mut sids = Vec::new();
    for f in &frames {
        let mut hits = Vec::new();
        e.inspect_frame(
            PacketInput::new(&p, Some(view)),
            "tls",
            f,
            Some(&mut st),
            &mut scratch,
            &mut hits,
        );
        sids.extend(hits.iter().map(|h| e.rules[h.rule as usize].sid));
    }
    sids.sort_unstable();
    assert_eq!(sids, vec![1, 2, 6]);
    // Another protocol's flow: nothing.
    let mut hits = Vec::new();
    e.inspect_frame(
        PacketInput::new(&p, Some(view)),
        "dcerpc",
        &frames[2],
        Some(&mut st),
        &mut scratch,
        &mut hits,
    );
    assert!(hits.is_empty());
}
