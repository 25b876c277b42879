//! The file parsers of crates/rules on hostile text: the first byte picks
//! a rules file (`parse_rules_str`: comments, continuation lines, one
//! diagnostic per bad rule), `classification.config`, `reference.config`
//! or `threshold.config`.
//!
//! Invariants: no panic; a rules file gives at most one rule or one
//! diagnostic per rule it holds (never more than its line count), and
//! every rule it returns re-parses from its own text to the same rule.
//! A threshold.config gives at most one entry or diagnostic per line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_rules::{
    parse_rule, parse_rules_str, ClassificationConfig, ReferenceConfig, ThresholdConfig, Vars,
};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(body);
    let lines = text.split('\n').count();
    let vars = Vars::default();
    match sel % 4 {
        0 => {
            let report = parse_rules_str(&text, "fuzz.rules", &vars);
            assert!(
                report.rules.len() + report.errors.len() <= lines,
                "{} rules and {} errors from {lines} lines",
                report.rules.len(),
                report.errors.len()
            );
            for rule in &report.rules {
                assert!(rule.origin.line >= 1 && rule.origin.line <= lines);
                let again = parse_rule(&rule.text, &vars, rule.origin.clone())
                    .unwrap_or_else(|e| panic!("rule text does not re-parse: {e}\n{}", rule.text));
                assert_eq!(rule, &again);
            }
        }
        1 => {
            let _ = ClassificationConfig::parse(&text, "classification.config");
        }
        2 => {
            let _ = ReferenceConfig::parse(&text, "reference.config");
        }
        _ => {
            let (cfg, diags) = ThresholdConfig::parse(&text, "threshold.config", &vars);
            assert!(cfg.entries.len() + diags.len() <= lines);
        }
    }
});
