//! The keyword registry (`vigil rules keywords`, docs/keywords.md) agrees
//! with detection: a rule using a keyword the registry calls `supported`,
//! or a hint it calls ignored, is evaluated; a rule using any other
//! `parsed` or `unsupported` keyword the parser accepts is skipped as not
//! evaluable.

use vigil_detect::rule::not_evaluable_keywords;
use vigil_rules::{keyword_registry, parse_rule, KeywordInfo, KeywordStatus, Origin, Vars};

/// A value the keyword's evaluator accepts, for keywords that need one.
fn sample_value(name: &str) -> Option<&'static str> {
    Some(match name {
        "tls.version" => "1.2",
        "ssl_version" => "tls1.2",
        "tls.fingerprint" => "\"aa:bb:cc\"",
        "dns.opcode" | "dns.rcode" | "dns.rrtype" => "1",
        "dcerpc.iface" | "dce_iface" => "e1af8308-5d1f-11c9-91a4-08002b14a0fa,any_frag",
        "dcerpc.opnum" | "dce_opnum" => "1-3,9",
        "app-layer-protocol" => "http",
        "ftp.mode" => "active",
        "ftp.reply_received" => "yes",
        "ike.chosen_sa_attribute" => "alg_hash=2",
        "xbits" => "set,x,track ip_src",
        "tag" => "session,10,packets",
        "target" => "src_ip",
        "modbus" => "function 3",
        "dnp3_obj" | "dnp3.obj" => "1,2",
        _ => return None,
    })
}

/// A rule that uses the keyword, or `None` for options whose detection
/// is tested keyword by keyword elsewhere.
fn rule_using(k: &KeywordInfo) -> Option<String> {
    let opt = match sample_value(k.name) {
        Some(v) => format!("{}:{v}", k.name),
        None => k.name.to_string(),
    };
    let body = match k.kind {
        "buffer" => format!("{opt}; content:\"a\";"),
        "modifier" => format!("content:\"a\"; {opt};"),
        "transform" => format!("http.uri; {opt}; content:\"a\";"),
        "keyword" if sample_value(k.name).is_some() => format!("{opt};"),
        "keyword" => format!("{}:1;", k.name),
        "hint" => format!("{}:x;", k.name),
        "option" if k.status != KeywordStatus::Supported => format!("{opt};"),
        _ => return None,
    };
    Some(format!("alert tcp any any -> any any ({body} sid:1;)"))
}

#[test]
fn registry_status_agrees_with_detection() {
    let vars = Vars::default();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for k in keyword_registry() {
        let Some(text) = rule_using(&k) else {
            continue;
        };
        let rule = parse_rule(&text, &vars, Origin::default())
            .unwrap_or_else(|e| panic!("{}: {text}: {e}", k.name));
        let blocked = not_evaluable_keywords(&rule);
        let should_load =
            k.status == KeywordStatus::Supported || k.status.reason().starts_with("ignored");
        if blocked.is_empty() != should_load {
            wrong.push(format!(
                "{} ({}): registry says {} '{}', detection {}",
                k.name,
                k.kind,
                k.status.as_str(),
                k.status.reason(),
                if blocked.is_empty() {
                    "evaluates it".to_string()
                } else {
                    format!("does not ({blocked:?})")
                }
            ));
        }
        checked += 1;
    }
    assert!(
        wrong.is_empty(),
        "{} disagreements:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked > 300, "only {checked} keywords checked");
}
