//! The rule parser (crates/rules) on hostile rule text, plus address and
//! port variable resolution.
//!
//! There is no rule printer (the AST has no `Display`; writing one for
//! every keyword is not cheap), so the round trip checked is through the
//! text a rule keeps: a rule that parses keeps its text (`Rule::text`),
//! and parsing that text again gives the same rule. Parsing is
//! deterministic, and whatever parses survives the checks detection runs
//! (`is_evaluable`). A rule that parses also compiles for detection
//! (`vigil_detect::rule::compile_rule`, Ok or a reason to skip it)
//! without panicking. (Building a whole engine per input would spend
//! most of the time on the 64 Ki-entry port tables.)
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
        let mut names = vigil_detect::rule::FlowbitNames::default();
        let compiled =
            vigil_detect::rule::compile_rule(&rule, &ClassificationConfig::default(), &mut names);
        std::hint::black_box(&compiled);
    }
    let _ = vars.resolve_address(&text);
    let _ = vars.resolve_port(&text);
});
