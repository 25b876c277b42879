//! Packet and flow keywords beyond the core set, through the real parser,
//! compiler and verifier: dsize semantics, ip/tcp/icmp header keywords,
//! flow counters, flowint, byte_* with variable byte counts, requires,
//! and threshold.config suppressions.

use std::net::{Ipv4Addr, Ipv6Addr};

use vigil_craft::{eth_icmpv6, PacketBuilder, ACK, PSH, SYN};
use vigil_detect::{DetectEngine, DetectScratch, FlowDetectState, FlowView, PacketInput, Skip};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, ThresholdConfig, Vars};
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

fn alerts(
    e: &DetectEngine,
    frame: &[u8],
    flow: Option<FlowView>,
    st: &mut FlowDetectState,
) -> Vec<u32> {
    let p = decode(linktype::ETHERNET, frame);
    let mut scratch = DetectScratch::default();
    let mut cand = Vec::new();
    let sel = e.select_groups(&p).expect("IP packet");
    let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
    e.candidates(sel, p.payload(), addrs, &mut scratch, &mut cand);
    let mut hits = Vec::new();
    e.verify(
        PacketInput::new(&p, flow),
        &cand,
        Some(st),
        &mut scratch,
        &mut hits,
    );
    let mut sids: Vec<u32> = hits.iter().map(|&i| e.rules[i as usize].sid).collect();
    sids.sort();
    sids
}

fn est() -> Option<FlowView> {
    Some(FlowView {
        to_server: true,
        established: true,
        ..FlowView::default()
    })
}

fn tcp_with(b: PacketBuilder, flags: u8, payload: &[u8]) -> Vec<u8> {
    b.ipv4_tcp(CLIENT, 40000, SERVER, 80, 1, 1, flags, payload)
}

fn tcp(payload: &[u8]) -> Vec<u8> {
    tcp_with(PacketBuilder::new(), PSH | ACK, payload)
}

#[test]
fn dsize_negation_and_ranges_need_a_payload() {
    // Suricata's signature mask: !N, >N, >=N, ranges and =N>0 need payload.
    let e = engine(&[
        "alert tcp any any -> any any (dsize:!9; sid:1;)",
        "alert tcp any any -> any any (dsize:<10; sid:2;)",
        "alert tcp any any -> any any (dsize:0; sid:3;)",
        "alert tcp any any -> any any (dsize:0<>20; sid:4;)",
        "alert tcp any any -> any any (dsize:<=10; sid:5;)",
    ]);
    let mut st = FlowDetectState::default();
    assert_eq!(alerts(&e, &tcp(b""), est(), &mut st), vec![2, 3, 5]);
    assert_eq!(
        alerts(&e, &tcp(b"0123456789"), est(), &mut st),
        vec![1, 4, 5]
    );
    assert_eq!(
        alerts(&e, &tcp(b"012345678"), est(), &mut st),
        vec![2, 4, 5]
    );
}

#[test]
fn ip_and_tcp_header_keywords() {
    let e = engine(&[
        "alert tcp any any -> any any (ipopts:rr; sid:1;)",
        "alert tcp any any -> any any (ipopts:any; sid:2;)",
        "alert tcp any any -> any any (tcp.wscale:7; sid:3;)",
        "alert tcp any any -> any any (tcp.mss:<1000; sid:4;)",
        "alert tcp any any -> any any (flags:S,CE; window:!1024; sid:5;)",
        "alert tcp any any -> any any (ttl:<10; tos:0x10; id:77; sid:6;)",
        "alert tcp any any -> any any (fragbits:!D; sid:7;)",
        "alert tcp any any -> any any (seq:1; ack:1; sid:8;)",
        "alert ip any any -> any any (sameip; sid:9;)",
        // Suricata 9's names of seq, ack and window.
        "alert tcp any any -> any any (tcp.seq:1; tcp.ack:1; sid:10;)",
        "alert tcp any any -> any any (flags:S,CE; tcp.window:!1024; sid:11;)",
    ]);
    let mut st = FlowDetectState::default();
    // Record route option: type 7, length 7, pointer 4, one empty slot.
    let rr = PacketBuilder::new()
        .df(true)
        .ip_options(&[7, 7, 4, 0, 0, 0, 0, 1]);
    assert_eq!(
        alerts(&e, &tcp_with(rr, PSH | ACK, b"x"), est(), &mut st),
        vec![1, 2, 8, 10]
    );
    let syn = PacketBuilder::new().wscale(7).mss(536).df(false);
    // flags:S with C and E masked: SYN|ECE|CWR still matches.
    assert_eq!(
        alerts(&e, &tcp_with(syn, SYN | 0xC0, b""), None, &mut st),
        vec![3, 4, 5, 7, 8, 10, 11]
    );
    let ip = PacketBuilder::new().df(true).ttl(5).tos(0x10).ip_id(77);
    assert_eq!(
        alerts(&e, &tcp_with(ip, PSH | ACK, b"x"), est(), &mut st),
        vec![6, 8, 10]
    );
}

#[test]
fn icmpv6_mtu_and_icmp_fields() {
    let e = engine(&[
        "alert ipv6 any any -> any any (icmpv6.mtu:<1280; sid:1;)",
        "alert icmpv6 any any -> any any (itype:1<>3; icode:0; sid:2;)",
    ]);
    let a: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let b: Ipv6Addr = "2001:db8::2".parse().unwrap();
    let mut st = FlowDetectState::default();
    // Packet too big, MTU 1000 (the id/seq words carry the MTU).
    let f = eth_icmpv6(a, b, 2, 0, 0, 1000, b"\x60\0\0\0");
    assert_eq!(alerts(&e, &f, None, &mut st), vec![1, 2]);
    let f = eth_icmpv6(a, b, 2, 0, 0, 1500, b"\x60\0\0\0");
    assert_eq!(alerts(&e, &f, None, &mut st), vec![2]);
}

#[test]
fn flow_counters() {
    let e = engine(&[
        "alert tcp any any -> any any (flow.pkts:toserver,=3; sid:1;)",
        "alert tcp any any -> any any (flow.pkts:either,>=10; sid:2;)",
        "alert tcp any any -> any any (flow.bytes_toclient:>1000; sid:3;)",
        "alert tcp any any -> any any (flow.pkts_toclient:0; flow.bytes:toserver,<300; sid:4;)",
    ]);
    let mut st = FlowDetectState::default();
    let view = |ps, pc, bs, bc| {
        Some(FlowView {
            to_server: true,
            established: true,
            pkts_toserver: ps,
            pkts_toclient: pc,
            bytes_toserver: bs,
            bytes_toclient: bc,
            ..FlowView::default()
        })
    };
    assert_eq!(
        alerts(&e, &tcp(b"x"), view(3, 0, 200, 0), &mut st),
        vec![1, 4]
    );
    assert_eq!(
        alerts(&e, &tcp(b"x"), view(4, 10, 400, 2000), &mut st),
        vec![2, 3]
    );
    // Without a flow the counters cannot match.
    assert!(alerts(&e, &tcp(b"x"), None, &mut st).is_empty());
}

#[test]
fn flowint_counts_per_flow() {
    let e = engine(&[
        "alert tcp any any -> any any (content:\"login\"; flowint:tries,+,1; noalert; sid:1;)",
        "alert tcp any any -> any any (content:\"login\"; flowint:tries,isset; flowint:tries,>=,3; sid:2;)",
        "alert tcp any any -> any any (content:\"reset\"; flowint:tries,=,0; noalert; sid:3;)",
        "alert tcp any any -> any any (content:\"check\"; flowint:tries,notset; sid:4;)",
        "alert tcp any any -> any any (content:\"cmp\"; flowint:limit,=,2; flowint:tries,>,limit; sid:5;)",
    ]);
    let mut st = FlowDetectState::default();
    assert_eq!(alerts(&e, &tcp(b"check"), est(), &mut st), vec![4]);
    assert!(alerts(&e, &tcp(b"login"), est(), &mut st).is_empty());
    assert!(alerts(&e, &tcp(b"login"), est(), &mut st).is_empty());
    // Modifiers run before tests: sid 1 orders before sid 2.
    assert_eq!(alerts(&e, &tcp(b"login"), est(), &mut st), vec![2]);
    assert_eq!(alerts(&e, &tcp(b"cmp"), est(), &mut st), vec![5]);
    assert!(alerts(&e, &tcp(b"reset"), est(), &mut st).is_empty());
    assert!(alerts(&e, &tcp(b"check"), est(), &mut st).is_empty());
    assert!(alerts(&e, &tcp(b"login"), est(), &mut st).is_empty());
    // Another flow has its own variables.
    let mut other = FlowDetectState::default();
    assert_eq!(alerts(&e, &tcp(b"check"), est(), &mut other), vec![4]);
}

#[test]
fn byte_keywords_with_variable_byte_counts() {
    // sv detect-bytejump-02: the jump width comes from byte_extract.
    let e = engine(&[
        "alert tcp any any -> any any (content:\"|00 00 00|\"; byte_extract:1,0,n,relative; byte_jump:n,0,relative; content:\"END\"; within:3; sid:1;)",
        "alert tcp any any -> any any (content:\"H\"; byte_extract:1,0,n,relative,string,dec; byte_test:n,=,0x4142,0,relative; sid:2;)",
        "alert tcp any any -> any any (content:\"M\"; byte_extract:1,0,n,relative; byte_math:bytes n,offset 0,oper +,rvalue 1,result r,relative; byte_test:1,=,r,0,relative; sid:3;)",
    ]);
    let mut st = FlowDetectState::default();
    // width 2: reads 00 03, jumps 3 past the field to "END".
    assert_eq!(
        alerts(&e, &tcp(b"\x00\x00\x00\x02\x00\x03xyzEND"), est(), &mut st),
        vec![1]
    );
    // sv detect-bytejump-02's packet: the extracted width is 0, so the
    // jump reads nothing and stays put.
    let e0 = engine(&["alert tcp any any -> any any (content:\"|00 00 00|\"; byte_extract:1,4,n,relative; byte_jump:n,0,relative; isdataat:1,relative; sid:9;)"]);
    assert_eq!(
        alerts(
            &e0,
            &tcp(b"\x00\x00\x00\x05\x34\x23\x06\x00\x21\x0a"),
            est(),
            &mut st
        ),
        vec![9]
    );
    // width 9 is out of range for a binary read: no match.
    assert!(alerts(&e, &tcp(b"\x00\x00\x00\x09\x00\x03xyzEND"), est(), &mut st).is_empty());
    assert_eq!(alerts(&e, &tcp(b"H2AB"), est(), &mut st), vec![2]);
    // byte_math reads 1 byte (0x05), adds 1 -> 6; the next byte is 6.
    assert_eq!(alerts(&e, &tcp(b"M\x01\x05\x06"), est(), &mut st), vec![3]);
    assert!(alerts(&e, &tcp(b"M\x01\x05\x07"), est(), &mut st).is_empty());
}

#[test]
fn requires_unmet_rules_are_skipped() {
    let vars = Vars::default();
    let rules: Vec<_> = [
        "alert tcp any any -> any any (content:\"a\"; requires: version >= 99; sid:1; rev:2;)",
        "alert tcp any any -> any any (content:\"a\"; sid:1; rev:1;)",
        "alert tcp any any -> any any (content:\"b\"; requires: version >= 7; sid:2;)",
    ]
    .iter()
    .map(|r| parse_rule(r, &vars, Origin::default()).unwrap())
    .collect();
    let (e, report) = DetectEngine::build(&rules, &ClassificationConfig::default());
    assert_eq!(report.requires_unmet, 1);
    assert!(matches!(report.skipped[0].reason, Skip::RequiresUnmet(_)));
    assert_eq!(e.rules.len(), 2);
    let mut st = FlowDetectState::default();
    assert_eq!(alerts(&e, &tcp(b"ab"), est(), &mut st), vec![1, 2]);
}

#[test]
fn xbits_per_transaction_and_app_layer_rules_are_not_evaluable() {
    let vars = Vars::default();
    let rules: Vec<_> = [
        "alert tcp any any -> any any (xbits:isset,a,track tx; sid:1;)",
        "alert s7commplus any any -> any any (content:\"a\"; sid:2;)",
        // An xbits test decided after the flow state already changed.
        "alert tcp any any -> any any (xbits:isset,a,track ip_src; flowbits:set,b; sid:3;)",
        "pass tcp any any -> any any (xbits:set,a,track ip_src; sid:4;)",
        // Loads: xbits effects only, with flowbits.
        "alert tcp any any -> any any (xbits:set,a,track ip_src; flowbits:set,b; sid:5;)",
    ]
    .iter()
    .map(|r| parse_rule(r, &vars, Origin::default()).unwrap())
    .collect();
    let (_, report) = DetectEngine::build(&rules, &ClassificationConfig::default());
    assert_eq!(
        report.not_evaluable_by_keyword.get("xbits track tx"),
        Some(&1)
    );
    assert_eq!(
        report
            .not_evaluable_by_keyword
            .get("xbits on a pass rule, or an xbits test with flowbits/flowint/bypass"),
        Some(&2)
    );
    assert_eq!(report.loaded, 1);
    assert_eq!(
        report.not_evaluable_by_keyword.get("protocol s7commplus"),
        Some(&1)
    );
    assert_eq!(
        vigil_detect::rule::not_evaluable_keywords(&rules[1]),
        vec!["protocol s7commplus".to_string()]
    );
}

#[test]
fn threshold_config_suppress_and_override() {
    let mut e = engine(&[
        "alert tcp any any -> any any (content:\"a\"; flowbits:set,seen; sid:1;)",
        "alert tcp any any -> any any (content:\"b\"; sid:2;)",
        "alert tcp any any -> any any (content:\"c\"; threshold:type limit,track by_src,count 5,seconds 60; sid:3;)",
        "alert tcp any any -> any any (content:\"d\"; flowbits:isset,seen; sid:4;)",
        "alert tcp any any -> any any (content:\"e\"; sid:5;)",
    ]);
    let (cfg, diags) = ThresholdConfig::parse(
        "suppress gen_id 1, sig_id 1\n\
         suppress gen_id 1, sig_id 2, track by_src, ip 10.0.0.0/8\n\
         threshold gen_id 1, sig_id 3, type limit, track by_dst, count 1, seconds 10\n\
         threshold gen_id 0, sig_id 0, type limit, track by_src, count 2, seconds 60\n\
         rate_filter gen_id 1, sig_id 5, track by_src, count 1, seconds 1, new_action drop, timeout 5\n\
         suppress gen_id 1, sig_id 999\n",
        "threshold.config",
        &Vars::default(),
    );
    assert!(diags.is_empty(), "{diags:?}");
    let rep = e.apply_threshold_config(&cfg);
    assert_eq!(rep.suppressed_rules, 1);
    assert_eq!(rep.address_suppressions, 1);
    assert_eq!(rep.rate_filters, 1);
    assert_eq!(rep.warnings.len(), 1, "{:?}", rep.warnings);
    let by_sid = |sid: u32| e.rules.iter().find(|r| r.sid == sid).unwrap();
    // The specific entry replaced sid 3's own threshold; the global one
    // applied to the rules without one.
    let t3 = by_sid(3).threshold.unwrap();
    assert_eq!((t3.count, t3.seconds), (1, 10));
    assert_eq!(by_sid(2).threshold.unwrap().count, 2);
    let rf = by_sid(5).rate_filter.unwrap();
    assert_eq!((rf.count, rf.seconds, rf.timeout), (1, 1, 5));
    assert_eq!(rf.new_action, Some(vigil_rules::Action::Drop));
    let mut st = FlowDetectState::default();
    // sid 1 is suppressed but still sets its flowbit; sid 2 is suppressed
    // for sources in 10/8 (the client is 10.0.0.1).
    assert_eq!(alerts(&e, &tcp(b"abde"), est(), &mut st), vec![4, 5]);
}

#[test]
fn base64_decode_and_data() {
    let e = engine(&[
        // Relative to a content; a failed decode retries the content's
        // next occurrence.
        r#"alert tcp any any -> any any (content:"b64,"; base64_decode:relative; base64_data; content:"hello"; sid:1;)"#,
        // Absolute, bytes and offset; base64_data keywords are anchored
        // in the decoded buffer.
        r#"alert tcp any any -> any any (content:"b64,"; base64_decode:bytes 8, offset 4; base64_data; content:"hello"; depth:5; sid:2;)"#,
        // Relative keywords inside base64_data.
        r#"alert tcp any any -> any any (content:"b64,"; base64_decode:relative; base64_data; content:"hel"; content:"world"; distance:3; within:5; sid:3;)"#,
        // Without base64_data keywords nothing matches (as in Suricata).
        r#"alert tcp any any -> any any (content:"b64,"; base64_decode:relative; sid:4;)"#,
        // Negated content on the decoded data.
        r#"alert tcp any any -> any any (content:"b64,"; base64_decode:relative; base64_data; content:!"hello"; sid:5;)"#,
    ]);
    let mut st = FlowDetectState::default();
    // "hello world"
    assert_eq!(
        alerts(&e, &tcp(b"b64,aGVsbG8gd29ybGQ="), est(), &mut st),
        vec![1, 2, 3]
    );
    // "foobar": only the negated one.
    assert_eq!(alerts(&e, &tcp(b"b64,Zm9vYmFy"), est(), &mut st), vec![5]);
    // Decoding stops at the first byte outside the alphabet (RFC 4648):
    // "hello " then nothing, so "world" is not there.
    assert_eq!(
        alerts(&e, &tcp(b"b64,aGVsbG8g!d29ybGQ="), est(), &mut st),
        vec![1, 2]
    );
    // The first occurrence decodes "foo"; the second "hello world".
    // sid 2 decodes from offset 4 ("Zm9v...") and fails.
    assert_eq!(
        alerts(&e, &tcp(b"b64,Zm9v b64,aGVsbG8gd29ybGQ="), est(), &mut st),
        vec![1, 3, 5]
    );
    // Nothing to decode after the content.
    assert_eq!(
        alerts(&e, &tcp(b"xx b64,"), est(), &mut st),
        Vec::<u32>::new()
    );
}

#[test]
fn vlan_id_and_layers() {
    let e = engine(&[
        "alert tcp any any -> any any (vlan.id:300; sid:1;)",
        "alert tcp any any -> any any (vlan.id:<300,0; sid:2;)",
        "alert tcp any any -> any any (vlan.id:>=200,1; sid:3;)",
        "alert tcp any any -> any any (vlan.id:123,-1; sid:4;)",
        "alert tcp any any -> any any (vlan.id:>100,all; sid:5;)",
        "alert tcp any any -> any any (vlan.layers:2; sid:6;)",
        "alert tcp any any -> any any (vlan.layers:0; sid:7;)",
        "alert tcp any any -> any any (vlan.id:666,-2; sid:8;)",
    ]);
    let mut st = FlowDetectState::default();
    let f = |b: PacketBuilder| tcp_with(b, PSH | ACK, b"x");
    // [vlan 666 (index 0 and -2)] [vlan 123 (index 1 and -1)]
    assert_eq!(
        alerts(
            &e,
            &f(PacketBuilder::new().vlan(666).vlan(123)),
            est(),
            &mut st
        ),
        vec![4, 5, 6, 8]
    );
    // One layer, 300: index 0 and -1; no layer 1 or -2.
    assert_eq!(
        alerts(&e, &f(PacketBuilder::new().vlan(300)), est(), &mut st),
        vec![1, 5]
    );
    assert_eq!(
        alerts(
            &e,
            &f(PacketBuilder::new().vlan(50).vlan(250)),
            est(),
            &mut st
        ),
        vec![2, 3, 6]
    );
    // No VLAN: only vlan.layers:0 (all needs at least one layer).
    assert_eq!(
        alerts(&e, &f(PacketBuilder::new()), est(), &mut st),
        vec![7]
    );
}

#[test]
fn flow_age() {
    let e = engine(&[
        "alert tcp any any -> any any (flow.age:>10; sid:1;)",
        "alert tcp any any -> any any (flow.age:0; sid:2;)",
        "alert tcp any any -> any any (flow.age:5-20; sid:3;)",
    ]);
    let mut st = FlowDetectState::default();
    let aged = |s: u64| {
        Some(FlowView {
            age_secs: s,
            ..est().unwrap()
        })
    };
    assert_eq!(alerts(&e, &tcp(b"x"), aged(0), &mut st), vec![2]);
    assert_eq!(alerts(&e, &tcp(b"x"), aged(11), &mut st), vec![1, 3]);
    assert_eq!(alerts(&e, &tcp(b"x"), aged(30), &mut st), vec![1]);
    // No flow: no age.
    assert_eq!(alerts(&e, &tcp(b"x"), None, &mut st), Vec::<u32>::new());
}

fn alerts_csum(e: &DetectEngine, frame: &[u8]) -> Vec<u32> {
    let p = decode(linktype::ETHERNET, frame);
    let mut scratch = DetectScratch::default();
    let mut cand = Vec::new();
    let sel = e.select_groups(&p).expect("IP packet");
    e.candidates(sel, p.payload(), None, &mut scratch, &mut cand);
    let input = PacketInput::new(&p, None);
    let mut hits = Vec::new();
    let mut st = FlowDetectState::default();
    e.verify(input, &cand, Some(&mut st), &mut scratch, &mut hits);
    let mut sids: Vec<u32> = hits.iter().map(|&i| e.rules[i as usize].sid).collect();
    sids.sort();
    sids
}

/// Flips a bit of the 16-bit word at `at`.
fn corrupt(mut f: Vec<u8>, at: usize) -> Vec<u8> {
    f[at + 1] ^= 0x01;
    f
}

#[test]
fn checksum_keywords() {
    let e = engine(&[
        "alert ip any any -> any any (ipv4-csum:valid; sid:1;)",
        "alert ip any any -> any any (ipv4-csum:invalid; sid:2;)",
        "alert tcp any any -> any any (tcpv4-csum:valid; sid:3;)",
        "alert tcp any any -> any any (tcpv4-csum:invalid; sid:4;)",
        "alert udp any any -> any any (udpv4-csum:valid; sid:5;)",
        "alert udp any any -> any any (udpv4-csum:invalid; sid:6;)",
        "alert icmp any any -> any any (icmpv4-csum:valid; sid:7;)",
        "alert icmp any any -> any any (icmpv4-csum:invalid; sid:8;)",
        "alert tcp any any -> any any (tcpv6-csum:\"valid\"; sid:9;)",
        "alert tcp any any -> any any (tcpv6-csum:invalid; sid:10;)",
        "alert udp any any -> any any (udpv6-csum:valid; sid:11;)",
        "alert udp any any -> any any (udpv6-csum:invalid; sid:12;)",
        "alert icmpv6 any any -> any any (icmpv6-csum:valid; sid:13;)",
        "alert icmpv6 any any -> any any (icmpv6-csum:invalid; sid:14;)",
    ]);
    let (a6, b6): (Ipv6Addr, Ipv6Addr) = (
        "2001:db8::1".parse().unwrap(),
        "2001:db8::2".parse().unwrap(),
    );
    // Ethernet 14 + IPv4 20 / IPv6 40: where each checksum sits.
    let tcp4 = tcp(b"hello");
    let udp4 = vigil_craft::eth_ipv4_udp(CLIENT, 5000, SERVER, 53, b"q");
    let icmp4 = vigil_craft::eth_ipv4_icmp(CLIENT, SERVER, 8, 0, 1, 2, b"ping");
    let tcp6 = vigil_craft::eth_ipv6_tcp(a6, 4000, b6, 80, 1, 1, PSH | ACK, b"x");
    let udp6 = vigil_craft::eth_ipv6_udp(a6, 4000, b6, 53, b"x");
    let icmp6 = eth_icmpv6(a6, b6, 128, 0, 1, 1, b"x");
    assert_eq!(alerts_csum(&e, &tcp4), vec![1, 3]);
    assert_eq!(alerts_csum(&e, &corrupt(tcp4.clone(), 24)), vec![2, 3]);
    assert_eq!(alerts_csum(&e, &corrupt(tcp4.clone(), 50)), vec![1, 4]);
    assert_eq!(alerts_csum(&e, &udp4), vec![1, 5]);
    assert_eq!(alerts_csum(&e, &corrupt(udp4.clone(), 40)), vec![1, 6]);
    // IPv4 UDP without a checksum is valid.
    let mut no_sum = udp4.clone();
    no_sum[40..42].copy_from_slice(&[0, 0]);
    assert_eq!(alerts_csum(&e, &no_sum), vec![1, 5]);
    assert_eq!(alerts_csum(&e, &icmp4), vec![1, 7]);
    assert_eq!(alerts_csum(&e, &corrupt(icmp4, 36)), vec![1, 8]);
    assert_eq!(alerts_csum(&e, &tcp6), vec![9]);
    assert_eq!(alerts_csum(&e, &corrupt(tcp6, 70)), vec![10]);
    assert_eq!(alerts_csum(&e, &udp6), vec![11]);
    assert_eq!(alerts_csum(&e, &corrupt(udp6, 60)), vec![12]);
    assert_eq!(alerts_csum(&e, &icmp6), vec![13]);
    assert_eq!(alerts_csum(&e, &corrupt(icmp6, 56)), vec![14]);
    assert_eq!(alerts_csum(&e, &corrupt(corrupt(tcp4, 24), 50)), vec![2, 4]);
}

#[test]
fn ip_src_and_dst_buffers() {
    let e = engine(&[
        "alert ip any any -> any any (ip.src; content:\"|0a 00 00 01|\"; bsize:4; sid:1;)",
        "alert ip any any -> any any (ip.dst; content:\"|c0 00 02 50|\"; sid:2;)",
        "alert ip any any -> any any (ip.dst; content:\"|0a 00 00 01|\"; sid:3;)",
        "alert ip any any -> any any (ip.src; content:\"|20 01 0d b8|\"; startswith; bsize:16; sid:4;)",
    ]);
    assert_eq!(alerts_csum(&e, &tcp(b"x")), vec![1, 2]);
    let a6: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let b6: Ipv6Addr = "2001:db9::2".parse().unwrap();
    let f = vigil_craft::eth_ipv6_udp(a6, 1, b6, 2, b"x");
    assert_eq!(alerts_csum(&e, &f), vec![4]);
}

#[test]
fn entropy_of_the_buffer_or_part_of_it() {
    let e = engine(&[
        "alert udp any any -> any any (entropy:value 0; sid:1;)",
        "alert udp any any -> any any (entropy:value >=1; sid:2;)",
        "alert udp any any -> any any (entropy:value 2; sid:3;)",
        "alert udp any any -> any any (entropy:bytes 4, offset 4, value 2; sid:4;)",
        "alert udp any any -> any any (entropy:offset 4, value >=4; sid:5;)",
        "alert udp any any -> any any (entropy:value 1.5-2.5; sid:6;)",
        "alert udp any any -> any any (entropy:bytes 1000, value >=0; sid:7;)",
        "alert udp any any -> any any (content:\"XXXX\"; entropy:value <=4.2; sid:8;)",
    ]);
    let udp = |p: &[u8]| vigil_craft::eth_ipv4_udp(CLIENT, 5000, SERVER, 53, p);
    assert_eq!(alerts_csum(&e, &udp(b"aaaaaaaaaaaaaaaa")), vec![1]);
    // "abcd" repeated: 2 bits per byte, everywhere.
    assert_eq!(alerts_csum(&e, &udp(b"abcdabcdabcdabcd")), vec![2, 3, 4, 6]);
    // 16 distinct bytes: 4 bits; after 4 bytes 12 distinct: < 4.
    let distinct: Vec<u8> = (0..16).collect();
    assert_eq!(alerts_csum(&e, &udp(&distinct)), vec![2, 4]);
    let mut x = b"XXXX".to_vec();
    x.extend_from_slice(&distinct);
    // Whole buffer: 4 X then 16 distinct, about 4.12 bits.
    assert_eq!(alerts_csum(&e, &udp(&x)), vec![2, 4, 5, 8]);
}

#[test]
fn byte_test_string_with_zero_bytes_reads_all_the_digits() {
    // ET Open ships `byte_test:0,...,string,dec` (Suricata reads the
    // digits that are there, however many).
    let e = engine(&[
        "alert udp any any -> any any (byte_test:0,=,0,0,string,dec; sid:1;)",
        "alert udp any any -> any any (byte_test:0,>,4000,0,string,dec; sid:2;)",
        "alert udp any any -> any any (byte_test:0,=,12,0,string,dec; sid:3;)",
        "alert udp any any -> any any (byte_test:0,=,34,3,string,dec; sid:4;)",
        "alert udp any any -> any any (byte_test:0,=,0x12,0,string,hex; sid:5;)",
        "alert udp any any -> any any (byte_test:0,=,7,0,string,dec; sid:6;)",
    ]);
    let udp = |p: &[u8]| vigil_craft::eth_ipv4_udp(CLIENT, 5000, SERVER, 53, p);
    assert_eq!(alerts_csum(&e, &udp(b"0")), vec![1]);
    assert_eq!(alerts_csum(&e, &udp(b"12")), vec![3, 5]);
    assert!(alerts_csum(&e, &udp(b"abc")).is_empty());
    assert_eq!(alerts_csum(&e, &udp(b"0abc")), vec![1]);
    assert_eq!(alerts_csum(&e, &udp(b"4001")), vec![2]);
    assert_eq!(alerts_csum(&e, &udp(b"12 34")), vec![3, 4, 5]);
    // Too many digits for a u64: no match.
    assert!(alerts_csum(&e, &udp(b"99999999999999999999999")).is_empty());
    assert_eq!(alerts_csum(&e, &udp(b"007")), vec![6]);
}

#[test]
fn igmp_type_header_checksum_and_l3_proto() {
    let e = engine(&[
        "alert igmp any any -> any any (igmp.type:22; sid:1;)",
        "alert ip any any -> any any (igmp.hdr; content:\"|e0 00 00 01|\"; endswith; sid:2;)",
        "alert ip any any -> any any (igmp-csum:valid; sid:3;)",
        "alert ip any any -> any any (igmp-csum:invalid; sid:4;)",
        "alert ip any any -> any any (l3_proto:ipv4; sid:5;)",
        "alert ip any any -> any any (l3_proto:ipv6; sid:6;)",
    ]);
    let report = |sum_ok: bool| {
        let b = PacketBuilder::new();
        let mut m = vec![0x16, 0, 0, 0, 224, 0, 0, 1];
        // One's complement checksum of the message.
        let mut acc: u32 = m
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        acc = (acc & 0xffff) + (acc >> 16);
        let c = !(acc as u16) ^ u16::from(!sum_ok);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        b.eth_ip(CLIENT.into(), Ipv4Addr::new(224, 0, 0, 1).into(), 2, &m)
    };
    assert_eq!(alerts_csum(&e, &report(true)), vec![1, 2, 3, 5]);
    assert_eq!(alerts_csum(&e, &report(false)), vec![1, 2, 4, 5]);
    let a6: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let f = vigil_craft::eth_ipv6_udp(a6, 1, a6, 2, b"x");
    assert_eq!(alerts_csum(&e, &f), vec![6]);
}

#[test]
fn asn1_checks_the_objects_after_the_last_match() {
    let e = engine(&[
        // The ET Open shape: contents, then asn1 relative to the last one.
        "alert tcp any any -> any any (msg:\"oversize\"; content:\"NTLM\"; asn1:oversize_length 4, relative_offset 1; sid:1;)",
        "alert tcp any any -> any any (msg:\"bits\"; content:\"NTLM\"; asn1:bitstring_overflow, relative_offset 1; sid:2;)",
        "alert tcp any any -> any any (msg:\"absolute\"; content:\"NTLM\"; asn1:oversize_length 4, absolute_offset 0; sid:3;)",
    ]);
    let mut st = FlowDetectState::default();
    // "NTLM" then one byte, then SEQUENCE { OCTET STRING (5) }.
    let seq = b"NTLM\x00\x30\x07\x04\x05abcde";
    assert_eq!(alerts(&e, &tcp(seq), est(), &mut st), vec![1]);
    // A short one, and a BIT STRING claiming 255 unused bits of 8.
    let bits = b"NTLM\x00\x03\x01\xff";
    assert_eq!(alerts(&e, &tcp(bits), est(), &mut st), vec![2]);
    // Not ASN.1 after the match: nothing (and "NTLM" itself at offset 0
    // is not an object).
    assert!(alerts(&e, &tcp(b"NTLM\x00plain text"), est(), &mut st).is_empty());
}

/// An ONC RPC call header: xid, CALL, rpcvers 2, program, version,
/// procedure, then null credentials and verifier.
fn rpc_call(mtype: u32, prog: u32, vers: u32, proc_: u32) -> Vec<u8> {
    let mut m = Vec::new();
    for w in [0x64b2_b375, mtype, 2, prog, vers, proc_, 0, 0, 0, 0] {
        m.extend_from_slice(&u32::to_be_bytes(w));
    }
    m
}

#[test]
fn rpc_calls_on_udp_and_tcp() {
    let e = engine(&[
        "alert udp any any -> any any (rpc:100000, 2, 3; sid:1;)",
        "alert udp any any -> any any (rpc:100000, 2, *; sid:2;)",
        "alert udp any any -> any any (rpc:100000, *, 3; sid:3;)",
        "alert udp any any -> any any (rpc:100000, *, *; sid:4;)",
        "alert udp any any -> any any (rpc:123456, *, 3; sid:5;)",
        "alert tcp any any -> any any (rpc:100003, 3, *; sid:6;)",
        "alert ip any any -> any any (rpc:100000; sid:7;)",
    ]);
    let mut st = FlowDetectState::default();
    let udp = |payload: &[u8]| PacketBuilder::new().ipv4_udp(CLIENT, 800, SERVER, 111, payload);
    // Suricata's DetectRpcTestSig01 packet.
    assert_eq!(
        alerts(&e, &udp(&rpc_call(0, 100000, 2, 3)), None, &mut st),
        vec![1, 2, 3, 4, 7]
    );
    assert_eq!(
        alerts(&e, &udp(&rpc_call(0, 100000, 4, 3)), None, &mut st),
        vec![3, 4, 7]
    );
    // A REPLY is not a call.
    assert!(alerts(&e, &udp(&rpc_call(1, 100000, 2, 3)), None, &mut st).is_empty());
    // Short payloads never match: UDP needs 24 bytes.
    let call = rpc_call(0, 100000, 2, 3);
    assert_eq!(
        alerts(&e, &udp(&call[..24]), None, &mut st),
        vec![1, 2, 3, 4, 7]
    );
    for n in [0, 1, 12, 20, 23] {
        assert!(
            alerts(&e, &udp(&call[..n]), None, &mut st).is_empty(),
            "{n}"
        );
    }
    // TCP: after the 4-byte record marker, and 28 bytes at least.
    let mut rec = vec![0x80, 0, 0, 40];
    rec.extend_from_slice(&rpc_call(0, 100003, 3, 1));
    assert_eq!(alerts(&e, &tcp(&rec), est(), &mut st), vec![6]);
    for n in [0, 4, 20, 27] {
        assert!(
            alerts(&e, &tcp(&rec[..n]), est(), &mut st).is_empty(),
            "{n}"
        );
    }
    assert_eq!(alerts(&e, &tcp(&rec[..28]), est(), &mut st), vec![6]);
    // Without the record marker the fields are misread.
    assert!(alerts(&e, &tcp(&rpc_call(0, 100003, 3, 1)), est(), &mut st).is_empty());
}

#[test]
fn rpc_bytes_never_panic() {
    let r = vigil_rules::RpcMatch {
        program: 1,
        version: None,
        procedure: None,
    };
    let mut seed = 7u64;
    for len in 0..64 {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                (seed >> 56) as u8
            })
            .collect();
        let _ = vigil_detect::inspect::rpc_call_matches(&r, &bytes);
    }
    assert!(vigil_detect::inspect::rpc_call_matches(
        &r,
        &rpc_call(0, 1, 9, 9)
    ));
    assert!(!vigil_detect::inspect::rpc_call_matches(
        &r,
        &rpc_call(0, 1, 9, 9)[..23]
    ));
}

fn reputation() -> std::sync::Arc<vigil_detect::reputation::Reputation> {
    let mut r = vigil_detect::reputation::Reputation::default();
    assert!(r
        .add_categories(
            "categories.txt",
            "1,BadHosts,Known bad hosts\n2,CnC,Command and control\n"
        )
        .is_empty());
    let bad = r.add_scores(
        "reputation.list",
        "10.0.0.0/24,1,20\n192.0.2.80,2,100\nnot-an-ip,1,1\n",
    );
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].line, 3);
    std::sync::Arc::new(r)
}

#[test]
fn iprep_with_a_loaded_reputation() {
    let vars = Vars::default();
    let rules: Vec<_> = [
        "alert tcp any any -> any any (iprep:src,BadHosts,>,10; sid:1;)",
        "alert tcp any any -> any any (iprep:src,BadHosts,>,20; sid:2;)",
        "alert tcp any any -> any any (iprep:dst,CnC,=,100; sid:3;)",
        "alert tcp any any -> any any (iprep:both,BadHosts,isset; sid:4;)",
        "alert tcp any any -> any any (iprep:any,CnC,>=,50; sid:5;)",
        "alert tcp any any -> any any (iprep:src,CnC,isnotset; sid:6;)",
        "alert tcp any any -> any any (iprep:dst,BadHosts,isset; sid:7;)",
        "alert tcp any any -> any any (iprep:src,Unknown,>,1; sid:8;)",
    ]
    .iter()
    .map(|r| parse_rule(r, &vars, Origin::default()).unwrap())
    .collect();
    let (e, report) = DetectEngine::build_with_reputation(
        &rules,
        &ClassificationConfig::default(),
        Some(reputation()),
    );
    assert_eq!(report.skipped.len(), 1);
    assert!(matches!(&report.skipped[0].reason,
        Skip::Invalid { keyword, message } if keyword == "iprep" && message.contains("Unknown")));
    let mut st = FlowDetectState::default();
    // 10.0.0.1 (BadHosts 20) -> 192.0.2.80 (a host entry: CnC 100, and
    // BadHosts 0 because a host entry answers for every category).
    assert_eq!(
        alerts(&e, &tcp(b"x"), est(), &mut st),
        vec![1, 3, 4, 5, 6, 7]
    );
    // Other addresses have no reputation.
    let other = PacketBuilder::new().ipv4_tcp(
        Ipv4Addr::new(10, 0, 1, 1),
        40000,
        Ipv4Addr::new(198, 51, 100, 1),
        80,
        1,
        1,
        PSH | ACK,
        b"x",
    );
    assert_eq!(alerts(&e, &other, est(), &mut st), vec![6]);
    // Without a reputation every iprep rule is invalid (Suricata: an
    // unknown category).
    let (e, report) = DetectEngine::build(&rules, &ClassificationConfig::default());
    assert!(e.rules.is_empty());
    assert_eq!(report.invalid_by_keyword.get("iprep"), Some(&8));
}

#[test]
fn target_is_recorded_on_the_compiled_rule() {
    let e = engine(&[
        "alert tcp any any -> any any (target:dest_ip; sid:1;)",
        "alert tcp any any -> any any (target:src_ip; sid:2;)",
        "alert tcp any any -> any any (sid:3;)",
    ]);
    let t = |sid: u32| e.rules.iter().find(|r| r.sid == sid).unwrap().target_dest;
    assert_eq!((t(1), t(2), t(3)), (Some(true), Some(false), None));
}

/// `engine-event`: the family prefix is required (a parse error naming
/// the keyword), an unknown event of a known family makes the rule
/// invalid, as Suricata's "unknown decode event".
#[test]
fn engine_event_names_are_checked() {
    let vars = Vars::default();
    for bad in [
        "engine-event:ipv4.trunc_pkt",
        "engine-event:applayer.x",
        "engine-event:",
        "engine-event:decoder.a,b",
    ] {
        let r = format!("alert ip any any -> any any ({bad}; sid:1;)");
        let e = parse_rule(&r, &vars, Origin::default()).expect_err(&r);
        assert_eq!(e.keyword.as_deref(), Some("engine-event"), "{r}: {e}");
    }
    let rules: Vec<_> = [
        "alert ip any any -> any any (engine-event:decoder.ipv4.no_such_event; sid:1;)",
        "alert tcp any any -> any any (engine-event:stream.no_such_event; sid:2;)",
        "alert ip any any -> any any (engine-event:decoder.ipv4.trunc_pkt; sid:3;)",
        "alert tcp any any -> any any (engine-event:stream.pkt_invalid_ack; sid:4;)",
    ]
    .iter()
    .map(|r| parse_rule(r, &vars, Origin::default()).unwrap())
    .collect();
    let (_, report) = DetectEngine::build(&rules, &ClassificationConfig::default());
    let bad: Vec<u32> = report.skipped.iter().map(|s| s.sid).collect();
    assert_eq!(bad, vec![1, 2]);
    for s in &report.skipped {
        assert!(matches!(&s.reason,
            Skip::Invalid { keyword, message } if keyword == "engine-event" && message.contains("unknown")));
    }
}

/// `tcp.session`: setup / established by the packet's established flag
/// (as `flow:not_established` / `flow:established`), closing by the
/// session state; never on a flow that is not TCP.
#[test]
fn tcp_session_phases() {
    use vigil_stream::TcpState as S;
    let e = engine(&[
        "alert tcp any any -> any any (tcp.session:setup; sid:1;)",
        "alert tcp any any -> any any (tcp.session:established; sid:2;)",
        "alert tcp any any -> any any (tcp.session:closing; sid:3;)",
        "alert tcp any any -> any any (tcp.session:setup,closing; sid:4;)",
    ]);
    let view = |established: bool, state: Option<S>| {
        Some(FlowView {
            to_server: true,
            established,
            tcp_state: state,
            ..FlowView::default()
        })
    };
    let mut st = FlowDetectState::default();
    let p = tcp(b"x");
    let cases: &[(bool, Option<S>, &[u32])] = &[
        (false, Some(S::SynSent), &[1, 4]),
        (false, Some(S::SynRecv), &[1, 4]),
        (true, Some(S::Established), &[2]),
        (true, Some(S::FinWait1), &[2, 3, 4]),
        (true, Some(S::FinWait2), &[2, 3, 4]),
        (true, Some(S::CloseWait), &[2, 3, 4]),
        (true, Some(S::LastAck), &[2, 3, 4]),
        (true, Some(S::Closing), &[2, 3, 4]),
        (true, Some(S::TimeWait), &[2, 3, 4]),
        (true, Some(S::Closed), &[2]),
        (true, None, &[]),
    ];
    for (est, state, want) in cases {
        assert_eq!(
            alerts(&e, &p, view(*est, *state), &mut st),
            want.to_vec(),
            "{est} {state:?}"
        );
    }
    assert!(alerts(&e, &p, None, &mut st).is_empty());
}

/// `flow.elephant` reads the flow's per-direction elephant flags.
#[test]
fn flow_elephant_directions() {
    let e = engine(&[
        "alert tcp any any -> any any (flow.elephant:toserver; sid:1;)",
        "alert tcp any any -> any any (flow.elephant:toclient; sid:2;)",
        "alert tcp any any -> any any (flow.elephant:either; sid:3;)",
        "alert tcp any any -> any any (flow.elephant:both; sid:4;)",
    ]);
    let mut st = FlowDetectState::default();
    let p = tcp(b"x");
    for (ele, want) in [
        ([false, false], vec![]),
        ([true, false], vec![1, 3]),
        ([false, true], vec![2, 3]),
        ([true, true], vec![1, 2, 3, 4]),
    ] {
        let v = Some(FlowView {
            to_server: true,
            established: true,
            elephant: ele,
            ..FlowView::default()
        });
        assert_eq!(alerts(&e, &p, v, &mut st), want, "{ele:?}");
    }
}

/// `alert` on a pass rule: the verdict passes the flow and the rule
/// alerts; `noalert` still silences it.
#[test]
fn pass_rule_with_alert_keyword_alerts() {
    let e = engine(&[
        "pass tcp any any -> any any (content:\"x\"; alert; sid:1;)",
        "alert tcp any any -> any any (content:\"x\"; sid:2;)",
    ]);
    let mut st = FlowDetectState::default();
    assert_eq!(alerts(&e, &tcp(b"x"), est(), &mut st), vec![1]);
    assert!(st.passed);
    let e = engine(&[
        "pass tcp any any -> any any (content:\"x\"; alert; noalert; sid:1;)",
        "alert tcp any any -> any any (content:\"x\"; sid:2;)",
    ]);
    let mut st = FlowDetectState::default();
    assert!(alerts(&e, &tcp(b"x"), est(), &mut st).is_empty());
    assert!(st.passed);
}
