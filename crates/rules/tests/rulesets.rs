//! Loads the real rulesets in `shared/rules/` (skipped when absent) and
//! checks that every rule parses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use vigil_rules::{load_rules_file, ClassificationConfig, ReferenceConfig, RuleFileReport, Vars};

fn rules_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("VIGIL_RULES_DIR") {
        return Some(PathBuf::from(d));
    }
    // crates/rules -> workspace root -> /work/shared
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        manifest.join("../../shared/rules"),
        manifest.join("../../../shared/rules"),
        PathBuf::from("/work/shared/rules"),
    ]
    .into_iter()
    .find(|c| c.is_dir())
}

fn load(rel: &str) -> Option<(RuleFileReport, f64)> {
    let dir = rules_dir()?;
    let path = dir.join(rel);
    if !path.is_file() {
        eprintln!("skipping: {} not found", path.display());
        return None;
    }
    let vars = Vars::default();
    let t = Instant::now();
    let report = load_rules_file(&path, &vars);
    Some((report, t.elapsed().as_secs_f64()))
}

fn summarize(name: &str, report: &RuleFileReport, secs: f64) {
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for e in &report.errors {
        let key = format!("{}: {}", e.keyword.as_deref().unwrap_or("-"), e.message);
        *reasons.entry(key).or_default() += 1;
    }
    let mut ne: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &report.rules {
        for k in &r.not_evaluable {
            *ne.entry(k.as_str()).or_default() += 1;
        }
    }
    eprintln!(
        "{name}: {} rules, {} errors, {:.3}s",
        report.rules.len(),
        report.errors.len(),
        secs
    );
    for (k, n) in &reasons {
        eprintln!("  {n:6}  {k}");
    }
    for e in report.errors.iter().take(20) {
        eprintln!("  e.g. {e}");
    }
    let evaluable = report
        .rules
        .iter()
        .filter(|r| r.not_evaluable.is_empty())
        .count();
    eprintln!("  fully evaluable rules: {evaluable}");
    let mut ne: Vec<_> = ne.into_iter().collect();
    ne.sort_by_key(|e| std::cmp::Reverse(e.1));
    let top: Vec<String> = ne
        .iter()
        .take(25)
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    eprintln!("  not evaluable: {}", top.join(" "));
    // Every classtype and reference system used is in the built-in lists.
    let classes = ClassificationConfig::default();
    let refs = ReferenceConfig::default();
    for r in &report.rules {
        if let Some(c) = &r.classtype {
            assert!(classes.lookup(c).is_some(), "sid {}: classtype {c}", r.sid);
        }
        for (t, _) in &r.references {
            assert!(
                refs.lookup(t).is_some(),
                "sid {}: reference type {t}",
                r.sid
            );
        }
    }
}

#[test]
fn et_open_parses() {
    let Some((report, secs)) = load("et-open/emerging.rules") else {
        return;
    };
    summarize("et-open", &report, secs);
    assert!(report.rules.len() > 20_000);
    assert!(report.errors.is_empty(), "{} errors", report.errors.len());
}

#[test]
fn snort2_community_parses() {
    let Some((report, secs)) = load("snort-community/community.rules") else {
        return;
    };
    summarize("snort2-community", &report, secs);
    assert!(report.rules.len() > 500);
    assert!(report.errors.is_empty(), "{} errors", report.errors.len());
}

#[test]
fn snort3_community_parses() {
    let Some((report, secs)) = load("snort-community/snort3-community.rules") else {
        return;
    };
    summarize("snort3-community", &report, secs);
    assert!(report.rules.len() > 4_000);
    assert!(report.errors.is_empty(), "{} errors", report.errors.len());
}
