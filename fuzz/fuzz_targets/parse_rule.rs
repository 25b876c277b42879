//! The rule parser (crates/rules) on hostile rule text, plus address and
//! port variable resolution.
//!
//! There is no rule printer (the AST has no `Display`; writing one for
//! every keyword is not cheap), so the round trip checked is through the
//! text a rule keeps: a rule that parses keeps its text (`Rule::text`),
//! and parsing that text again gives the same rule. Parsing is
//! deterministic, and whatever parses survives the checks detection runs
//! (`is_evaluable`). A rule that parses also builds into a detection
//! engine without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Vars};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let vars = Vars::default();
    let first = parse_rule(&text, &vars, Origin::default());
    let again = parse_rule(&text, &vars, Origin::default());
    match (&first, &again) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "parsing is not deterministic"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("parsing is not deterministic"),
    }
    if let Ok(rule) = first {
        let _ = rule.is_evaluable();
        let reparsed = parse_rule(&rule.text, &vars, Origin::default())
            .unwrap_or_else(|e| panic!("the rule's own text does not parse: {e}\n{}", rule.text));
        assert_eq!(rule, reparsed, "parse(text) != parse(rule.text)");
        let (engine, _report) =
            vigil_detect::DetectEngine::build(&[rule], &ClassificationConfig::default());
        std::hint::black_box(&engine);
    }
    let _ = vars.resolve_address(&text);
    let _ = vars.resolve_port(&text);
});
