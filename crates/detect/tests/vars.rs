//! pcre variable capture: what a capturing pcre stores (bytes, groups,
//! the 65535-byte cap, a retry replacing an earlier capture), and the
//! flow state's variables (order of setting, reload carry-over), through
//! whole rules for `flowvar` / `pktvar`.

use std::sync::Arc;

use vigil_detect::payload::{
    pending_vars_clear, pending_vars_take, CompiledPayload, PendingVar, VarTable, MAX_VARS,
};
use vigil_detect::{DetectEngine, DetectScratch, FlowDetectState, FlowView, PacketInput};
use vigil_rules::{
    parse_rule, ClassificationConfig, Origin, PayloadItem, PcreCapture, Rule, VarScope, Vars,
    VAR_VALUE_MAX,
};

fn rule(text: &str) -> Rule {
    parse_rule(text, &Vars::default(), Origin::default()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The packet-payload items of `alert tcp ... (<opts> sid:1;)`.
fn items(opts: &str) -> Vec<PayloadItem> {
    let r = rule(&format!("alert tcp any any -> any any ({opts} sid:1;)"));
    r.buffers[0].items.clone()
}

/// Runs the items on `buf`; the match and what was captured.
fn capture(opts: &str, buf: &[u8]) -> (bool, Vec<PendingVar>) {
    let prog = CompiledPayload::compile(&items(opts), &mut VarTable::default()).expect("compiles");
    assert!(prog.captures());
    pending_vars_clear();
    let m = prog.matches(buf, &mut [0u64; MAX_VARS]);
    let mut out = Vec::new();
    pending_vars_take(&mut out);
    (m, out)
}

fn var(scope: VarScope, name: &str, value: &[u8]) -> PendingVar {
    PendingVar {
        scope,
        name: name.into(),
        value: value.into(),
    }
}

#[test]
fn groups_go_to_their_variables() {
    let (m, v) = capture(
        r#"pcre:"/k=(?P<flow_key>[^&]*)&(?P<pkt_v>[^&]*)&(?P<alert_a>x)?/";"#,
        b"GET /?k=\x00ab&cd&",
    );
    assert!(m);
    // Group 3 took no part: nothing stored for it.
    assert_eq!(
        v,
        vec![
            var(VarScope::Flow, "key", b"\x00ab"),
            var(VarScope::Pkt, "v", b"cd"),
        ]
    );
    // The names after the flags take the first groups.
    let (_, v) = capture(r#"pcre:"/(a)(b)/,pkt:first,flow:second";"#, b"ab");
    assert_eq!(
        v,
        vec![
            var(VarScope::Pkt, "first", b"a"),
            var(VarScope::Flow, "second", b"b")
        ]
    );
    // A non-matching pcre stores nothing; a negated one never captures.
    assert!(capture(r#"pcre:"/(?P<pkt_x>z)/";"#, b"ab").1.is_empty());
    let (m, v) = capture(r#"pcre:!"/(?P<pkt_x>z)/";"#, b"ab");
    assert!(m && v.is_empty());
}

#[test]
fn captures_are_capped_at_65535_bytes() {
    let buf = vec![b'A'; 70_000];
    let (m, v) = capture(r#"pcre:"/(?P<flow_big>A+)/";"#, &buf);
    assert!(m);
    assert_eq!(v[0].value.len(), VAR_VALUE_MAX);
    assert_eq!(VAR_VALUE_MAX, 65535);
}

/// A later keyword fails and the pcre is tried again at its next match:
/// the capture of the match that counted replaces the first.
#[test]
fn a_retry_replaces_the_capture() {
    let (m, v) = capture(
        r#"pcre:"/id=(?P<flow_id>\d)/"; content:"!"; within:1;"#,
        b"id=1? id=2!",
    );
    assert!(m);
    assert_eq!(v, vec![var(VarScope::Flow, "id", b"2")]);
}

#[test]
fn too_many_names_for_the_groups_is_an_error() {
    let e = CompiledPayload::compile(
        &items(r#"pcre:"/(a)/,pkt:one,pkt:two";"#),
        &mut VarTable::default(),
    )
    .unwrap_err();
    assert_eq!(e.keyword(), "pcre");
}

fn engine(rules: &[&str]) -> DetectEngine {
    let rules: Vec<Rule> = rules.iter().map(|r| rule(r)).collect();
    let (e, report) = DetectEngine::build(&rules, &ClassificationConfig::default());
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    e
}

/// Runs every rule of `e` on a TCP packet with `payload`; the sids that
/// alerted.
fn inspect(
    e: &DetectEngine,
    payload: &[u8],
    st: &mut FlowDetectState,
    scratch: &mut DetectScratch,
) -> Vec<u32> {
    let frame = vigil_craft::eth_ipv4_tcp(
        "10.0.0.1".parse().unwrap(),
        1234,
        "10.0.0.2".parse().unwrap(),
        80,
        1,
        1,
        vigil_craft::ACK | vigil_craft::PSH,
        payload,
    );
    let p = vigil_wire::decode(vigil_wire::linktype::ETHERNET, &frame);
    let view = FlowView {
        to_server: true,
        established: true,
        ..FlowView::default()
    };
    let all: Vec<u32> = (0..e.rules.len() as u32).collect();
    let mut hits = Vec::new();
    scratch.begin_packet();
    e.verify_hits(
        PacketInput::new(&p, Some(view)),
        &all,
        Some(st),
        scratch,
        &mut hits,
    );
    hits.iter().map(|h| e.rules[h.rule as usize].sid).collect()
}

#[test]
fn flowvar_and_pktvar_through_rules() {
    let e = engine(&[
        r#"alert tcp any any -> any any (pcre:"/user=(?P<flow_user>\w+)/"; sid:1;)"#,
        r#"alert tcp any any -> any any (flowvar:user,"li"; sid:2;)"#,
        r#"alert tcp any any -> any any (pktvar:tok,"|00|"; sid:3;)"#,
        r#"alert tcp any any -> any any (pcre:"/tok=(?P<pkt_tok>..)/"; sid:4;)"#,
        r#"alert tcp any any -> any any (pcre:"/(?P<flow_never>tok)/"; content:"absent"; sid:5;)"#,
        r#"alert tcp any any -> any any (flowvar:never,"tok"; sid:6;)"#,
    ]);
    let mut st = FlowDetectState::default();
    let mut scratch = DetectScratch::default();
    // Rule order puts the capture (sid 1) before the read (sid 2), and
    // sid 4 before sid 3; a rule that does not match stores nothing.
    let mut sids = inspect(&e, b"user=alice tok=\x00z", &mut st, &mut scratch);
    sids.sort();
    assert_eq!(sids, vec![1, 2, 3, 4]);
    assert_eq!(st.flowvar("user"), Some(&b"alice"[..]));
    assert_eq!(st.flowvar("never"), None);
    assert_eq!(
        scratch.captured.pktvars,
        vec![(Arc::from("tok"), Box::from(&b"\x00z"[..]))]
    );
    // The next packet: the flow variable is still there, the packet
    // variable is not; a new capture replaces the value.
    let sids = inspect(&e, b"hello", &mut st, &mut scratch);
    assert_eq!(sids, vec![2]);
    assert!(scratch.captured.pktvars.is_empty());
    let sids = inspect(&e, b"user=bob", &mut st, &mut scratch);
    assert_eq!(sids, vec![1]);
    assert_eq!(st.flowvar("user"), Some(&b"bob"[..]));
}

#[test]
fn flow_state_keeps_setting_order_across_a_reload() {
    let old = engine(&[
        r#"alert tcp any any -> any any (content:"a"; flowbits:set,zz; flowbits:set,aa; flowint:cnt,+,1; flowint:other,=,5; sid:1;)"#,
        r#"alert tcp any any -> any any (content:"b"; flowbits:unset,zz; flowbits:set,zz; pcre:"/(?P<flow_v>b)/"; sid:2;)"#,
    ]);
    let mut st = FlowDetectState::default();
    let mut scratch = DetectScratch::default();
    inspect(&old, b"a", &mut st, &mut scratch);
    let names = |e: &DetectEngine, st: &FlowDetectState| -> Vec<String> {
        st.flowbits_in_order()
            .iter()
            .map(|&b| e.flowbit_names[b as usize].clone())
            .collect()
    };
    assert_eq!(names(&old, &st), vec!["zz", "aa"]);
    // Unset then set again: last.
    inspect(&old, b"b", &mut st, &mut scratch);
    assert_eq!(names(&old, &st), vec!["aa", "zz"]);
    assert_eq!(st.flowvar("v"), Some(&b"b"[..]));

    // The new rules know aa, zz (other indices), cnt and v only.
    let new = engine(&[
        r#"alert tcp any any -> any any (flowbits:isset,zz; flowbits:isset,aa; flowint:cnt,>,0; flowvar:v,"b"; sid:9;)"#,
    ]);
    let (bits, ints) = old.var_maps_to(&new);
    st.remap(&bits, &ints);
    st.retain_flowvars(|n| new.flowvar_names.iter().any(|v| v == n));
    assert_eq!(names(&new, &st), vec!["aa", "zz"]);
    let ints: Vec<(String, u32)> = st
        .flowints_in_order()
        .map(|(i, v)| (new.flowint_names[i as usize].clone(), v))
        .collect();
    assert_eq!(ints, vec![("cnt".to_string(), 1)]);
    assert_eq!(st.flowvar("v"), Some(&b"b"[..]));
    assert_eq!(inspect(&new, b"x", &mut st, &mut scratch), vec![9]);
}

#[test]
fn capture_names_keep_their_scope() {
    let r = rule(r#"alert tcp any any -> any any (pcre:"/(?P<alert_a>.)/"; sid:1;)"#);
    let PayloadItem::Pcre(p) = &r.buffers[0].items[0] else {
        panic!()
    };
    assert_eq!(
        p.captures,
        vec![PcreCapture {
            scope: VarScope::Alert,
            name: "a".into()
        }]
    );
}
