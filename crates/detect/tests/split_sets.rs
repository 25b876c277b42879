//! Where `SplitMode` puts each rule's fast pattern in a group's sets:
//! `Protocols` keeps the rules without a protocol and those of the common
//! protocols (HTTP, TLS, DNS) in one generic set and gives each other
//! protocol a set of its own, with no split by direction; `Full` splits
//! by protocol and direction.

use vigil_detect::group::{app_slot, RuleGroup, SplitSets, NO_SET};
use vigil_detect::{AppProtoState, DetectEngine};
use vigil_prefilter::{EngineKind, Selector, SplitMode};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Rule, Vars};

const RULES: [&str; 4] = [
    r#"alert tcp any any -> any any (msg:"generic, to server"; flow:to_server; content:"plain"; sid:1;)"#,
    r#"alert http any any -> any any (msg:"common protocol"; content:"webby"; sid:2;)"#,
    r#"alert ftp any any -> any any (msg:"less common protocol"; content:"MKD"; sid:3;)"#,
    r#"alert tcp any any -> any any (msg:"not smb"; app-layer-protocol:!smb; content:"notsmb"; sid:4;)"#,
];

fn engine(mode: SplitMode) -> DetectEngine {
    let vars = Vars::default();
    let rules: Vec<Rule> = RULES
        .iter()
        .map(|t| parse_rule(t, &vars, Origin::default()).expect("rule"))
        .collect();
    let mut selector = Selector::fixed(EngineKind::Ac);
    selector.set_split_mode(mode);
    let (e, report) =
        DetectEngine::build_with(&rules, &ClassificationConfig::default(), &mut selector);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    e
}

/// The TCP group of port 21, which every rule here is in.
fn port21(e: &DetectEngine) -> &RuleGroup {
    &e.groups.groups[e.groups.select(6, 40000, 21).primary as usize]
}

/// Its split sets.
fn port21_split(e: &DetectEngine) -> &SplitSets {
    port21(e).split.as_deref().expect("split group")
}

/// The sids in set `i` of the TCP group of port 21 (`None`: no set).
fn sids(e: &DetectEngine, i: u32) -> Option<Vec<u32>> {
    let split = port21_split(e);
    (i != NO_SET).then(|| {
        let mut s: Vec<u32> = split.sets[i as usize]
            .rules
            .iter()
            .map(|&r| e.rules[r as usize].sid)
            .collect();
        s.sort_unstable();
        s
    })
}

fn slot(p: vigil_applayer::AppProto) -> usize {
    app_slot(AppProtoState::Detected(p)).expect("slot")
}

#[test]
fn protocols_mode_sets_apart_only_the_less_common_protocols() {
    use vigil_applayer::AppProto;
    let e = engine(SplitMode::Protocols);
    let split = port21_split(&e);
    // One generic set for both directions: the rule without a protocol,
    // the HTTP rule and the negated one (it admits HTTP too).
    assert_eq!(split.generic[0], split.generic[1]);
    assert_eq!(sids(&e, split.generic[0]), Some(vec![1, 2, 4]));
    // FTP flows also scan the FTP rule's set; HTTP flows scan nothing more.
    let ftp = split.app[slot(AppProto::Ftp)];
    assert_eq!(ftp[0], ftp[1]);
    assert_eq!(sids(&e, ftp[0]), Some(vec![3]));
    assert_eq!(sids(&e, split.app[slot(AppProto::Http)][0]), None);
    // Each pattern is in one set: as many literals as one engine.
    let total: usize = split.sets.iter().map(|s| s.rules.len()).sum();
    assert_eq!(total, RULES.len());
}

#[test]
fn full_mode_splits_by_protocol_and_direction() {
    use vigil_applayer::AppProto;
    let e = engine(SplitMode::Full);
    let split = port21_split(&e);
    assert_eq!(sids(&e, split.generic[0]), Some(vec![1]));
    assert_eq!(sids(&e, split.generic[1]), None);
    assert_eq!(
        sids(&e, split.app[slot(AppProto::Http)][0]),
        Some(vec![2, 4])
    );
    assert_eq!(
        sids(&e, split.app[slot(AppProto::Ftp)][1]),
        Some(vec![3, 4])
    );
    assert_eq!(sids(&e, split.app[slot(AppProto::Smb)][0]), None);
}

#[test]
fn off_mode_keeps_one_engine_per_group() {
    let e = engine(SplitMode::Off);
    let g = port21(&e);
    assert!(g.split.is_none());
    assert_eq!(g.prefiltered.len(), RULES.len());
}
