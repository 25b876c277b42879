//! Table-driven detection tests: rule text + packet -> alert or not,
//! through the real parser, rule compiler, rule groups, prefilter and
//! verification.

use std::net::Ipv4Addr;

use vigil_craft::{eth_ipv4_icmp, eth_ipv4_tcp, eth_ipv4_udp};
use vigil_detect::{DetectEngine, DetectScratch, FlowDetectState, FlowView, PacketInput};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Vars};
use vigil_wire::{decode, linktype};

const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 80);

fn engine(rules: &[&str]) -> DetectEngine {
    let vars = Vars::default();
    let parsed: Vec<_> = rules
        .iter()
        .map(|r| parse_rule(r, &vars, Origin::default()).unwrap_or_else(|e| panic!("{r}: {e}")))
        .collect();
    let (e, report) = DetectEngine::build(&parsed, &ClassificationConfig::default());
    assert!(report.skipped.is_empty(), "skipped: {:?}", report.skipped);
    e
}

/// The sids of group `g`'s rules (prefiltered and always checked),
/// sorted.
fn group_sids(e: &DetectEngine, g: u32) -> Vec<u32> {
    let g = &e.groups.groups[g as usize];
    let mut v: Vec<u32> = g
        .always
        .iter()
        .chain(&g.prefiltered)
        .map(|&r| e.rules[r as usize].sid)
        .collect();
    v.sort_unstable();
    v
}

/// Sids that alert on `frame`, inspected as an established to-server
/// packet of a flow with state `st`.
fn alerts_with(e: &DetectEngine, frame: &[u8], st: &mut FlowDetectState) -> Vec<u32> {
    let p = decode(linktype::ETHERNET, frame);
    let mut scratch = DetectScratch::default();
    let mut cand = Vec::new();
    let sel = e.select_groups(&p).expect("IP packet");
    let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
    e.candidates(sel, p.payload(), addrs, &mut scratch, &mut cand);
    let mut hits = Vec::new();
    e.verify(
        PacketInput::new(
            &p,
            Some(FlowView {
                to_server: true,
                established: true,
                ..FlowView::default()
            }),
        ),
        &cand,
        Some(st),
        &mut scratch,
        &mut hits,
    );
    hits.iter().map(|&i| e.rules[i as usize].sid).collect()
}

fn tcp(payload: &[u8]) -> Vec<u8> {
    eth_ipv4_tcp(CLIENT, 40000, SERVER, 80, 1, 1, 0x18, payload)
}

fn fires(rule: &str, payload: &[u8]) -> bool {
    let e = engine(&[rule]);
    !alerts_with(&e, &tcp(payload), &mut FlowDetectState::default()).is_empty()
}

#[test]
fn payload_keyword_table() {
    // (rule options, payload, expected)
    let table: &[(&str, &[u8], bool)] = &[
        (r#"content:"abc";"#, b"xxabcxx", true),
        (r#"content:"abc";"#, b"xxabxcx", false),
        (r#"content:"|41 42|C";"#, b"zABCz", true),
        // nocase
        (r#"content:"ABC"; nocase;"#, b"xxabcxx", true),
        (r#"content:"ABC";"#, b"xxabcxx", false),
        // offset / depth
        (r#"content:"abc"; offset:2;"#, b"xxabc", true),
        (r#"content:"abc"; offset:3;"#, b"xxabc", false),
        (r#"content:"abc"; depth:5;"#, b"xxabc", true),
        (r#"content:"abc"; depth:4;"#, b"xxabc", false),
        (r#"content:"abc"; offset:1; depth:4;"#, b"xxabc", true),
        // distance / within
        (
            r#"content:"ab"; content:"cd"; distance:2;"#,
            b"ab12cd",
            true,
        ),
        (
            r#"content:"ab"; content:"cd"; distance:3;"#,
            b"ab12cd",
            false,
        ),
        (r#"content:"ab"; content:"cd"; within:4;"#, b"ab12cd", true),
        (r#"content:"ab"; content:"cd"; within:3;"#, b"ab12cd", false),
        (
            r#"content:"ab"; content:"cd"; distance:0; within:2;"#,
            b"abcd",
            true,
        ),
        // backtracking: the first "a" fails the within, the second passes
        (
            r#"content:"a"; content:"b"; distance:0; within:1;"#,
            b"axxab",
            true,
        ),
        // negative distance
        (
            r#"content:"cd"; content:"ab"; distance:-4; within:2;"#,
            b"abcd",
            true,
        ),
        // negation (absolute and relative)
        (r#"content:"abc"; content:!"evil";"#, b"abc good", true),
        (r#"content:"abc"; content:!"evil";"#, b"abc evil", false),
        (
            r#"content:"abc"; content:!"x"; distance:0; within:1;"#,
            b"abcy x",
            true,
        ),
        (
            r#"content:"abc"; content:!"x"; distance:0; within:1;"#,
            b"abcx",
            false,
        ),
        // startswith / endswith
        (r#"content:"GET"; startswith;"#, b"GET /", true),
        (r#"content:"GET"; startswith;"#, b" GET /", false),
        (r#"content:"end"; endswith;"#, b"the end", true),
        (r#"content:"end"; endswith;"#, b"the end.", false),
        // pcre, absolute and relative
        (r#"pcre:"/^GET\s+\/admin/";"#, b"GET /admin", true),
        (r#"pcre:"/^get/i";"#, b"GET /", true),
        (
            r#"content:"user="; pcre:"/^[a-z]+\;/R";"#,
            b"user=root;",
            true,
        ),
        (
            r#"content:"user="; pcre:"/^[a-z]+\;/R";"#,
            b"user=ROOT;",
            false,
        ),
        (r#"content:"x"; pcre:!"/evil/";"#, b"x good", true),
        // fast_pattern with chop still verifies the whole content
        (
            r#"content:"abcdef"; fast_pattern:2,2;"#,
            b"zzabcdefzz",
            true,
        ),
        (r#"content:"abcdef"; fast_pattern:2,2;"#, b"zzcdzz", false),
        // dsize
        (r#"dsize:5;"#, b"12345", true),
        (r#"dsize:>5;"#, b"12345", false),
        (r#"dsize:3<>10;"#, b"12345", true),
        // byte_test / isdataat
        (
            r#"content:"len="; byte_test:2,>,10,0,relative,string,dec;"#,
            b"len=42",
            true,
        ),
        (
            r#"content:"len="; byte_test:2,>,50,0,relative,string,dec;"#,
            b"len=42",
            false,
        ),
        (r#"content:"abc"; isdataat:2,relative;"#, b"abcde", true),
        (r#"content:"abc"; isdataat:3,relative;"#, b"abcde", false),
    ];
    for (opts, payload, want) in table {
        let rule = format!("alert tcp any any -> any any (msg:\"t\"; {opts} sid:1;)");
        assert_eq!(
            fires(&rule, payload),
            *want,
            "{opts} on {:?}",
            String::from_utf8_lossy(payload)
        );
    }
}

#[test]
fn header_and_packet_conditions() {
    let e = engine(&[
        "alert tcp any any -> any 80 (msg:\"port 80\"; sid:1;)",
        "alert tcp any any -> any 81 (msg:\"port 81\"; sid:2;)",
        "alert tcp 10.0.0.0/8 any -> !10.0.0.0/8 any (msg:\"out\"; sid:3;)",
        "alert tcp any any <> 10.0.0.1 any (msg:\"either\"; sid:4;)",
        "alert tcp any any -> any any (msg:\"psh ack\"; flags:PA; sid:5;)",
        "alert tcp any any -> any any (msg:\"syn\"; flags:S; sid:6;)",
        "alert udp any any -> any any (msg:\"udp\"; sid:7;)",
        "alert tcp any any -> any any (msg:\"ttl\"; ttl:64; sid:8;)",
        "alert tcp any any -> any any (msg:\"to client\"; flow:to_client; sid:9;)",
    ]);
    let mut st = FlowDetectState::default();
    let mut got = alerts_with(&e, &tcp(b"x"), &mut st);
    got.sort();
    assert_eq!(got, vec![1, 3, 4, 5, 8]);
}

#[test]
fn icmp_and_udp_rules() {
    let e = engine(&[
        "alert icmp any any -> any any (msg:\"echo\"; itype:8; icode:0; sid:1;)",
        "alert icmp any any -> any any (msg:\"reply\"; itype:0; sid:2;)",
        "alert udp any any -> any 53 (msg:\"dns\"; content:\"|07|example\"; sid:3;)",
    ]);
    let mut st = FlowDetectState::default();
    let echo = eth_ipv4_icmp(CLIENT, SERVER, 8, 0, 1, 1, b"ping");
    assert_eq!(alerts_with(&e, &echo, &mut st), vec![1]);
    let dns = eth_ipv4_udp(CLIENT, 5353, SERVER, 53, b"\x00\x01\x07example\x03com\x00");
    assert_eq!(alerts_with(&e, &dns, &mut st), vec![3]);
}

#[test]
fn flowbits_set_then_isset_in_rule_order() {
    let e = engine(&[
        "alert tcp any any -> any any (msg:\"check\"; content:\"B\"; flowbits:isset,seen; sid:2;)",
        "alert tcp any any -> any any (msg:\"set\"; content:\"A\"; flowbits:set,seen; flowbits:noalert; sid:1;)",
    ]);
    let mut st = FlowDetectState::default();
    assert!(alerts_with(&e, &tcp(b"B"), &mut st).is_empty());
    assert!(alerts_with(&e, &tcp(b"A"), &mut st).is_empty());
    assert_eq!(alerts_with(&e, &tcp(b"B"), &mut st), vec![2]);
    // Setters are ordered before readers, so one packet can do both.
    let mut fresh = FlowDetectState::default();
    assert_eq!(alerts_with(&e, &tcp(b"AB"), &mut fresh), vec![2]);
}

#[test]
fn pass_rule_stops_inspection() {
    let e = engine(&[
        "alert tcp any any -> any any (msg:\"a\"; content:\"x\"; sid:1;)",
        "pass tcp any any -> any any (msg:\"p\"; content:\"trusted\"; sid:2;)",
    ]);
    let mut st = FlowDetectState::default();
    assert_eq!(alerts_with(&e, &tcp(b"x"), &mut st), vec![1]);
    assert!(alerts_with(&e, &tcp(b"x trusted"), &mut st).is_empty());
    assert!(st.passed);
}

#[test]
fn ip_reputation_rules_without_content_use_the_address_index() {
    let e = engine(&[
        "alert ip [198.51.100.7,192.0.2.0/24] any -> any any (msg:\"bad src\"; sid:1;)",
        "alert ip any any -> [203.0.113.9] any (msg:\"bad dst\"; sid:2;)",
    ]);
    assert!(e.groups.groups.iter().any(|g| g.addr_indexed > 0));
    let mut st = FlowDetectState::default();
    // SERVER is in 192.0.2.0/24 but is the destination here.
    assert!(alerts_with(&e, &tcp(b"x"), &mut st).is_empty());
    let back = eth_ipv4_tcp(SERVER, 80, CLIENT, 40000, 1, 1, 0x18, b"y");
    assert_eq!(alerts_with(&e, &back, &mut st), vec![1]);
    let to_bad = eth_ipv4_tcp(CLIENT, 1, Ipv4Addr::new(203, 0, 113, 9), 2, 1, 1, 0x10, b"");
    assert_eq!(alerts_with(&e, &to_bad, &mut st), vec![2]);
}

/// An `ip` rule with `ip_proto:N` sits only in the groups of protocol N
/// (it used to be verified on every packet of every protocol); without
/// `ip_proto`, or negated, it stays in every group.
#[test]
fn ip_proto_rules_are_grouped_by_their_protocol() {
    let e = engine(&[
        "alert ip any any -> any any (msg:\"6in4\"; ip_proto:41; sid:1;)",
        "alert ip any any -> any any (msg:\"not gre\"; ip_proto:!47; sid:2;)",
        "alert ip any any -> any any (msg:\"any\"; ttl:1; sid:3;)",
    ]);
    let sids_in = |proto: u8, sp: u16, dp: u16| -> Vec<u32> {
        let sel = e.groups.select(proto, sp, dp);
        let mut v: Vec<u32> = std::iter::once(sel.primary)
            .chain(sel.secondary)
            .flat_map(|g| {
                let g = &e.groups.groups[g as usize];
                g.always
                    .iter()
                    .chain(&g.prefiltered)
                    .copied()
                    .collect::<Vec<_>>()
            })
            .map(|r| e.rules[r as usize].sid)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    assert_eq!(sids_in(41, 0, 0), vec![1, 2, 3]);
    assert_eq!(sids_in(6, 1234, 80), vec![2, 3]);
    assert_eq!(sids_in(17, 53, 53), vec![2, 3]);
    assert_eq!(sids_in(47, 0, 0), vec![3]);
}

/// The groups of packets without ports (`select_proto_only`: other IP
/// protocols, and TCP/UDP/SCTP without a decoded transport header, a
/// non-first fragment) hold the packet rules their protocol and their
/// `ip_proto` test admit: for TCP and UDP only `ip` rules, never a
/// transaction rule.
#[test]
fn portless_groups_follow_the_rules_protocol_and_ip_proto() {
    let e = engine(&[
        "alert ip any any -> any any (msg:\"gre only\"; ip_proto:47; content:\"gre\"; sid:1;)",
        "alert ip any any -> any any (msg:\"any ip\"; content:\"anyip\"; sid:2;)",
        "alert tcp any any -> any any (msg:\"tcp\"; content:\"tcp\"; sid:3;)",
        "alert icmp any any -> any any (msg:\"icmp\"; content:\"icmp\"; sid:4;)",
        "alert ip any any -> any any (msg:\"above 100\"; ip_proto:>100; content:\"high\"; sid:5;)",
        "alert http any any -> any any (msg:\"a transaction rule\"; content:\"webby\"; sid:6;)",
    ]);
    let sids = |proto: u8| group_sids(&e, e.groups.select_proto_only(proto).primary);
    assert_eq!(sids(47), vec![1, 2], "GRE");
    assert_eq!(sids(1), vec![2, 4], "ICMP");
    assert_eq!(sids(58), vec![2, 4], "ICMPv6");
    assert_eq!(sids(50), vec![2], "ESP");
    assert_eq!(sids(101), vec![2, 5]);
    assert_eq!(sids(255), vec![2, 5]);
    assert_eq!(sids(6), vec![2]);
    assert_eq!(sids(17), vec![2]);
}

/// A source side that admits most ports (`!80`) does not key a
/// source-port group, which would send most packets through a second
/// scan: the rule is grouped with the port-independent ones, and its
/// ports are still checked when it is verified. A narrow source side
/// (`80`) keeps its group, reached only from that port.
#[test]
fn broad_source_ports_are_grouped_as_any_and_still_checked() {
    let e = engine(&[
        "alert tcp any !80 -> any any (content:\"broadsrc\"; sid:1;)",
        "alert tcp any 80 -> any any (content:\"fromweb\"; sid:2;)",
        "alert tcp any any -> any 80 (content:\"toweb\"; sid:3;)",
    ]);
    let sids = |g: u32| group_sids(&e, g);
    let to_web = e.groups.select(6, 40000, 80);
    assert_eq!(to_web.secondary, None);
    assert_eq!(sids(to_web.primary), vec![1, 3]);
    let from_web = e.groups.select(6, 80, 40000);
    assert_eq!(sids(from_web.primary), vec![1]);
    assert_eq!(from_web.secondary.map(sids), Some(vec![2]));
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mut st = FlowDetectState::default();
    let from = |sp: u16, payload: &[u8]| eth_ipv4_tcp(a, sp, b, 40000, 1, 1, 0x18, payload);
    assert_eq!(
        alerts_with(&e, &from(1234, b"x broadsrc"), &mut st),
        vec![1]
    );
    assert!(alerts_with(&e, &from(80, b"x broadsrc"), &mut st).is_empty());
    assert_eq!(alerts_with(&e, &from(80, b"x fromweb"), &mut st), vec![2]);
    assert!(alerts_with(&e, &from(81, b"x fromweb"), &mut st).is_empty());
}

/// `ip_proto:!N` matches every protocol but N.
#[test]
fn negated_ip_proto_matches_other_protocols() {
    let e = engine(&[
        "alert ip any any -> any any (ip_proto:!47; sid:2;)",
        "alert ip any any -> any any (ip_proto:!6; sid:3;)",
        "alert ip any any -> any any (ip_proto:6; sid:4;)",
    ]);
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let tcp = eth_ipv4_tcp(a, 1234, b, 80, 1, 1, 0x18, b"x");
    let mut st = FlowDetectState::default();
    assert_eq!(alerts_with(&e, &tcp, &mut st), vec![2, 4]);
}

/// A rule with payload keywords needs a payload (Suricata's
/// SIG_MASK_REQUIRE_PAYLOAD), even when every keyword is negated: found by
/// scripts/differential.sh, where Vigil alerted on the SYN, ACK and FIN
/// packets of a flow for `pcre:!"/../"` and Suricata did not.
#[test]
fn negated_payload_keywords_need_a_payload() {
    for opts in [
        r#"pcre:!"/ab=\d+/";"#,
        r#"content:!"evil";"#,
        r#"isdataat:!1;"#,
        r#"pcre:!"/ab=\d+/"; ttl:>0;"#,
    ] {
        let rule = format!("alert tcp any any -> any any (msg:\"n\"; {opts} sid:1;)");
        assert!(fires(&rule, b"x"), "{opts} on a payload without it");
        assert!(!fires(&rule, b""), "{opts} on an empty packet");
        let rule = format!("alert udp any any -> any any (msg:\"n\"; {opts} sid:1;)");
        let e = engine(&[rule.as_str()]);
        let udp = |p: &[u8]| eth_ipv4_udp(CLIENT, 40000, SERVER, 53, p);
        let mut st = FlowDetectState::default();
        assert!(
            alerts_with(&e, &udp(b""), &mut st).is_empty(),
            "{opts} udp empty"
        );
        let mut st = FlowDetectState::default();
        assert!(
            !alerts_with(&e, &udp(b"x"), &mut st).is_empty(),
            "{opts} udp"
        );
    }
}

/// A packet without payload that brings stream data to inspect (the FIN
/// after the data) passes Suricata's payload mask: its own empty payload is
/// then inspected, so a rule of negated keywords matches there even when
/// the stream holds the pattern (Suricata alerts on the FIN for
/// `pcre:!"/../"; ttl:>0;` and for `content:!"x";` alone; found by
/// scripts/differential.sh).
#[test]
fn empty_packet_with_stream_data_inspects_its_empty_payload() {
    let mut chunk = vigil_detect::StreamChunk::default();
    chunk.push_block(0, |v| v.extend_from_slice(b"xx ab=12 evil"));
    for opts in [r#"pcre:!"/ab=\d+/"; ttl:>0;"#, r#"content:!"evil";"#] {
        let rule = format!("alert tcp any any -> any any (msg:\"n\"; {opts} sid:1;)");
        let e = engine(&[rule.as_str()]);
        let frame = eth_ipv4_tcp(CLIENT, 40000, SERVER, 80, 1, 1, 0x11, b"");
        let p = decode(linktype::ETHERNET, &frame);
        let run = |stream: Option<&vigil_detect::StreamChunk>| {
            let mut scratch = DetectScratch::default();
            let mut cand = Vec::new();
            let sel = e.select_groups(&p).expect("IP packet");
            let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
            e.candidates(sel, p.payload(), addrs, &mut scratch, &mut cand);
            let mut input = PacketInput::new(
                &p,
                Some(FlowView {
                    to_server: true,
                    established: true,
                    ..FlowView::default()
                }),
            );
            input.stream = stream;
            let mut hits = Vec::new();
            let mut st = FlowDetectState::default();
            e.verify(input, &cand, Some(&mut st), &mut scratch, &mut hits);
            !hits.is_empty()
        };
        assert!(!run(None), "{opts}: no payload, no stream data");
        assert!(run(Some(&chunk)), "{opts}: stream data on the packet");
    }
}
