//! Which rules the groups of protocols without ports hold
//! (`RuleGroups::by_proto`): a rule's protocol and its `ip_proto` test
//! decide, and for TCP, UDP and SCTP packets without a decoded transport
//! header only `ip` rules apply.

use vigil_detect::DetectEngine;
use vigil_prefilter::{EngineKind, Selector};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Rule, Vars};

const RULES: [&str; 6] = [
    r#"alert ip any any -> any any (msg:"gre only"; ip_proto:47; content:"gre"; sid:1;)"#,
    r#"alert ip any any -> any any (msg:"any ip"; content:"anyip"; sid:2;)"#,
    r#"alert tcp any any -> any any (msg:"tcp"; content:"tcp"; sid:3;)"#,
    r#"alert icmp any any -> any any (msg:"icmp"; content:"icmp"; sid:4;)"#,
    r#"alert ip any any -> any any (msg:"above 100"; ip_proto:>100; content:"high"; sid:5;)"#,
    r#"alert http any any -> any any (msg:"a transaction rule"; content:"webby"; sid:6;)"#,
];

fn engine() -> DetectEngine {
    let vars = Vars::default();
    let rules: Vec<Rule> = RULES
        .iter()
        .map(|t| parse_rule(t, &vars, Origin::default()).expect("rule"))
        .collect();
    let mut selector = Selector::fixed(EngineKind::Ac);
    let (e, report) =
        DetectEngine::build_with(&rules, &ClassificationConfig::default(), &mut selector);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    e
}

/// The sids of the group that packets of IP protocol `proto` without
/// ports meet.
fn sids(e: &DetectEngine, proto: u8) -> Vec<u32> {
    let g = &e.groups.groups[e.groups.select_proto_only(proto).primary as usize];
    let mut s: Vec<u32> = g
        .prefiltered
        .iter()
        .chain(&g.always)
        .map(|&r| e.rules[r as usize].sid)
        .collect();
    s.sort_unstable();
    s
}

#[test]
fn protocol_groups_follow_the_rules_protocol_and_ip_proto() {
    let e = engine();
    assert_eq!(sids(&e, 47), vec![1, 2], "GRE");
    assert_eq!(sids(&e, 1), vec![2, 4], "ICMP");
    assert_eq!(sids(&e, 58), vec![2, 4], "ICMPv6");
    assert_eq!(sids(&e, 50), vec![2], "ESP");
    assert_eq!(sids(&e, 101), vec![2, 5]);
    assert_eq!(sids(&e, 255), vec![2, 5]);
    // TCP without a decoded header (a non-first fragment): `ip` rules
    // only, not the TCP rule, and no transaction rule anywhere.
    assert_eq!(sids(&e, 6), vec![2]);
    assert_eq!(sids(&e, 17), vec![2]);
}
