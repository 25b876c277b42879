//! Fuzz target: the rule parser, rules-file reader, variable resolution and
//! config readers (classification, reference, threshold) must never panic,
//! whatever bytes they are given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_rules::{
    parse_rule, parse_rules_str, ClassificationConfig, Origin, ReferenceConfig, ThresholdConfig,
    Vars,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let vars = Vars::default();
    if let Ok(rule) = parse_rule(&text, &vars, Origin::default()) {
        // Whatever parsed must also survive the checks detection runs.
        let _ = rule.is_evaluable();
    }
    let _ = parse_rules_str(&text, "fuzz.rules", &vars);
    let _ = ClassificationConfig::parse(&text, "fuzz.config");
    let _ = ReferenceConfig::parse(&text, "fuzz.config");
    let _ = ThresholdConfig::parse(&text, "threshold.config", &vars);
    let _ = vars.resolve_address(&text);
    let _ = vars.resolve_port(&text);
});
