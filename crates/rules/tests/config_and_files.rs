//! classification.config, reference.config, and rules-file loading.

use std::path::Path;

use vigil_rules::*;

#[test]
fn default_classifications() {
    let c = ClassificationConfig::default();
    for (name, desc, prio) in [
        ("trojan-activity", "A Network Trojan was detected", 1),
        ("bad-unknown", "Potentially Bad Traffic", 2),
        ("misc-activity", "Misc activity", 3),
        (
            "policy-violation",
            "Potential Corporate Privacy Violation",
            1,
        ),
        ("tcp-connection", "A TCP connection was detected", 4),
        (
            "command-and-control",
            "Malware Command and Control Activity Detected",
            1,
        ),
        ("web-application-attack", "Web Application Attack", 1),
        ("not-suspicious", "Not Suspicious Traffic", 3),
    ] {
        let k = c.lookup(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!((k.description.as_str(), k.priority), (desc, prio), "{name}");
    }
    assert_eq!(c.lookup("TROJAN-ACTIVITY").unwrap().name, "trojan-activity");
    assert!(c.lookup("nope").is_none());
    assert!(c.len() >= 43);
}

#[test]
fn classification_parse_and_errors() {
    let c = ClassificationConfig::parse(
        "# comment\n\nconfig classification: a-b,Desc, with comma,2\nconfig classification:x,Y,4\n\
         config classification: x,Z,1\n",
        "c.config",
    )
    .unwrap();
    assert_eq!(c.len(), 2);
    assert_eq!(c.lookup("a-b").unwrap().description, "Desc, with comma");
    assert_eq!(c.lookup("x").unwrap().priority, 1);
    let names: Vec<&str> = c.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a-b", "x"]);
    for bad in [
        "config classification: a,b\n",
        "config classification: a,b,c\n",
        "config classification: ,b,1\n",
        "config reference: a b\n",
        "hello\n",
    ] {
        let e = ClassificationConfig::parse(bad, "c.config").unwrap_err();
        assert_eq!(e.origin.line, 1, "{bad}");
        assert!(e.to_string().starts_with("c.config:1: "), "{e}");
    }
}

#[test]
fn references() {
    let r = ReferenceConfig::default();
    assert_eq!(
        r.url("cve", "2020-1234").as_deref(),
        Some("https://cve.mitre.org/cgi-bin/cvename.cgi?name=2020-1234")
    );
    assert_eq!(r.lookup("URL"), Some("https://"));
    assert_eq!(
        r.lookup("mcafee"),
        Some("https://vil.nai.com/vil/content/v_")
    );
    // EVE's alert.references: a value with a scheme stays as it is; an
    // unknown system gives the value alone.
    assert_eq!(
        r.resolve("url", "github.com/corelight/zerologon"),
        "https://github.com/corelight/zerologon"
    );
    assert_eq!(r.resolve("url", " foobar://x/y "), "foobar://x/y");
    assert_eq!(r.resolve("cve", "http://x/y"), "http://x/y");
    assert_eq!(r.resolve("nosuch", "abc"), "abc");
    assert!(r.lookup("nope").is_none());
    let p = ReferenceConfig::parse("config reference: foo   https://foo/?id=\n", "r").unwrap();
    assert_eq!(p.url("FOO", "1").as_deref(), Some("https://foo/?id=1"));
    assert!(ReferenceConfig::parse("config reference: lonely\n", "r").is_err());
}

#[test]
fn shared_config_files_load() {
    let dir = Path::new("/work/shared/rules/et-open");
    let cls = dir.join("classification.config");
    if cls.is_file() {
        let c = ClassificationConfig::load(&cls).unwrap();
        let d = ClassificationConfig::default();
        for k in c.iter() {
            let b = d
                .lookup(&k.name)
                .unwrap_or_else(|| panic!("{} missing from default", k.name));
            assert_eq!(b.priority, k.priority, "{}", k.name);
            assert_eq!(b.description, k.description, "{}", k.name);
        }
    }
    let rf = dir.join("reference.config");
    if rf.is_file() {
        let r = ReferenceConfig::load(&rf).unwrap();
        assert!(r.lookup("cve").is_some() && r.lookup("url").is_some());
    }
    assert!(ClassificationConfig::load("/nonexistent/x.config").is_err());
}

#[test]
fn rules_file_keeps_going_after_errors() {
    let text = "# header comment\r\n\
                alert tcp any any -> any any (msg:\"one\"; sid:1;)\r\n\
                \r\n\
                # alert tcp any any -> any any (msg:\"disabled\"; sid:2;)\n\
                alert tcp any any -> any any (msg:\"bad\"; content:\"abc\"; depth:1; sid:3;)\n\
                alert tcp any any -> any any (msg:\"multi\"; \\\n    content:\"x\"; \\\n    sid:4;)\n\
                alert tcp any any -> any any (msg:\"unknown\"; whatever; sid:5;)\n\
                not a rule at all\n\
                alert tcp any any -> any any (msg:\"last\"; sid:6;)";
    let rep = parse_rules_str(text, "x.rules", &Vars::default());
    let sids: Vec<u32> = rep.rules.iter().map(|r| r.sid).collect();
    assert_eq!(sids, [1, 4, 6]);
    assert_eq!(rep.rules[1].origin.line, 6);
    assert_eq!(rep.rules[1].origin.file, "x.rules");
    assert!(rep.rules[1].text.contains("content:\"x\";"));
    let errs: Vec<String> = rep.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert_eq!(
        errs[0],
        "x.rules:5: sid 3: keyword depth: depth 1 is smaller than the content length 3"
    );
    assert_eq!(
        errs[1],
        "x.rules:9: sid 5: keyword whatever: unknown keyword 'whatever'"
    );
    assert!(errs[2].starts_with("x.rules:10: "), "{}", errs[2]);
    assert_eq!(rep.errors[1].kind, RuleErrorKind::UnknownKeyword);
    assert_eq!(rep.errors[1].keyword.as_deref(), Some("whatever"));
}

#[test]
fn load_missing_file_reports_io() {
    let rep = load_rules_file("/nonexistent/file.rules", &Vars::default());
    assert!(rep.rules.is_empty());
    assert_eq!(rep.errors.len(), 1);
    assert_eq!(rep.errors[0].kind, RuleErrorKind::Io);
}

#[test]
fn load_file_with_invalid_utf8() {
    let dir = std::env::temp_dir().join(format!("vigil-rules-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("latin1.rules");
    let mut bytes = b"alert tcp any any -> any any (msg:\"caf".to_vec();
    bytes.push(0xe9);
    bytes.extend_from_slice(b"\"; sid:7;)\nalert tcp any any -> any any (sid:8;)\n");
    std::fs::write(&p, &bytes).unwrap();
    let rep = load_rules_file(&p, &Vars::default());
    assert_eq!(rep.rules.len(), 1);
    assert_eq!(rep.errors.len(), 1);
    assert_eq!(rep.errors[0].sid, Some(7));
    std::fs::remove_dir_all(&dir).ok();
}
