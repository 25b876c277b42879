//! The groups' prefilter engines built in parallel (`Selector::prebuild`)
//! are those of a serial build: same engine kind, pattern count, sharing
//! between groups, scan results and selection report, group by group.

use std::sync::Arc;

use vigil_detect::DetectEngine;
use vigil_prefilter::{EngineKind, PrefilterEngine, Selector};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Rule, Vars};

fn rules() -> Vec<Rule> {
    let vars = Vars::default();
    let mut text = Vec::new();
    let ports = [80, 443, 53, 25, 8080, 22];
    for i in 0..240u32 {
        let port = ports[i as usize % ports.len()];
        let proto = if i % 5 == 0 { "udp" } else { "tcp" };
        let nocase = if i % 3 == 0 { " nocase;" } else { "" };
        // Shared words give the groups overlapping pattern sets.
        text.push(format!(
            "alert {proto} any any -> any {port} (msg:\"r{i}\"; content:\"word{}-{i}\";{nocase} sid:{};)",
            i % 7,
            i + 1
        ));
        if i % 4 == 0 {
            text.push(format!(
                "alert {proto} any {port} -> any any (msg:\"s{i}\"; content:\"|00 01|back{i}\"; sid:{};)",
                10_000 + i
            ));
        }
        if i % 6 == 0 {
            text.push(format!(
                "alert http any any -> any any (msg:\"h{i}\"; http.uri; content:\"/path{i}\"; sid:{};)",
                20_000 + i
            ));
            text.push(format!(
                "alert http any any -> any any (msg:\"u{i}\"; http.user_agent; content:\"Agent{i}\"; nocase; sid:{};)",
                30_000 + i
            ));
        }
    }
    // A group with a single pattern, and one identical to another.
    text.push("alert tcp any any -> any 9999 (msg:\"one\"; content:\"solo\"; sid:40000;)".into());
    text.push("alert tcp any any -> any 9998 (msg:\"one\"; content:\"solo\"; sid:40001;)".into());
    text.iter()
        .map(|r| parse_rule(r, &vars, Origin::default()).unwrap_or_else(|e| panic!("{r}: {e}")))
        .collect()
}

fn payloads() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..240u32)
        .step_by(7)
        .map(|i| format!("GET /path{i} xx WORD{}-{i} word3-{i} solo", i % 7).into_bytes())
        .collect();
    v.push(b"\x00\x01back8 \x00\x01back16 Agent12 agent18".to_vec());
    v
}

/// What identifies an engine's behaviour: kind, size, and scan results.
fn fingerprint(e: &dyn PrefilterEngine, payloads: &[Vec<u8>]) -> String {
    let mut s = format!("{} {} {}:", e.name(), e.pattern_count(), e.heap_bytes());
    for p in payloads {
        let mut ids = Vec::new();
        e.scan_ids(p, &mut |id| ids.push(id));
        ids.sort_unstable();
        ids.dedup();
        s.push_str(&format!(" {ids:?}"));
    }
    s
}

/// Every engine of the detection engine, in group order: the packet
/// groups', then the transaction groups'.
fn engines(d: &DetectEngine) -> Vec<Option<Arc<dyn PrefilterEngine>>> {
    let mut v: Vec<Option<Arc<dyn PrefilterEngine>>> = Vec::new();
    for g in &d.groups.groups {
        match &g.split {
            Some(s) => v.extend(s.sets.iter().map(|p| p.engine.clone())),
            None => v.push(g.engine.clone()),
        }
    }
    for g in &d.tx.groups {
        v.extend(g.prefilters.iter().map(|p| Some(p.engine.clone())));
    }
    v
}

#[test]
fn parallel_build_gives_the_serial_groups() {
    let rules = rules();
    let payloads = payloads();
    for kind in EngineKind::available_kinds() {
        let build = |threads: usize| {
            let mut sel = Selector::fixed(kind);
            sel.set_build_threads(threads);
            let (d, report) =
                DetectEngine::build_with(&rules, &ClassificationConfig::default(), &mut sel);
            assert!(report.skipped.is_empty(), "{:?}", report.skipped);
            (d, format!("{:?}", sel.finish()))
        };
        let (serial, serial_report) = build(1);
        let (parallel, parallel_report) = build(4);
        assert_eq!(serial_report, parallel_report, "{kind}");
        let (a, b) = (engines(&serial), engines(&parallel));
        assert_eq!(a.len(), b.len(), "{kind}");
        assert!(
            a.iter().flatten().count() > 10,
            "{kind}: the rules make many groups"
        );
        let print = |e: &Option<Arc<dyn PrefilterEngine>>| {
            e.as_ref().map(|e| fingerprint(e.as_ref(), &payloads))
        };
        for (g, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(print(x), print(y), "{kind}: group {g}");
        }
        // Groups with the same patterns share one engine in both builds.
        let same = |v: &[Option<Arc<dyn PrefilterEngine>>], i: usize, j: usize| match (&v[i], &v[j])
        {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y),
            _ => false,
        };
        for i in 0..a.len() {
            for j in i + 1..a.len() {
                assert_eq!(same(&a, i, j), same(&b, i, j), "{kind}: groups {i}, {j}");
            }
        }
        for (x, y) in serial.groups.groups.iter().zip(&parallel.groups.groups) {
            assert_eq!(x.prefiltered, y.prefiltered, "{kind}");
            assert_eq!(x.always, y.always, "{kind}");
        }
    }
}
