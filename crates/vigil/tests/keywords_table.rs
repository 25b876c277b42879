//! `vigil rules keywords` through the real binary: the committed
//! docs/keywords.md is exactly its output, the JSON form lists the same
//! keywords, and every keyword of Suricata 9
//! (shared/peers/suricata/keywords.csv, which CI always has) is listed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn vigil(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .output()
        .expect("run vigil");
    assert!(out.status.success(), "vigil {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn suricata_keywords_csv() -> PathBuf {
    let root = workspace();
    [
        root.join("../shared/peers/suricata/keywords.csv"),
        root.join("shared/peers/suricata/keywords.csv"),
        PathBuf::from("/work/shared/peers/suricata/keywords.csv"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .expect("shared/peers/suricata/keywords.csv (the shared material) is required")
}

fn json_list() -> Vec<serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(&vigil(&["rules", "keywords", "--json"])).expect("JSON");
    v.as_array().expect("array").clone()
}

#[test]
fn committed_table_is_the_commands_output() {
    let generated = vigil(&["rules", "keywords"]);
    let path = workspace().join("docs/keywords.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: regenerate it with `vigil rules keywords > docs/keywords.md`",
        path.display()
    );
}

#[test]
fn json_and_markdown_list_the_same_keywords() {
    let list = json_list();
    let md = vigil(&["rules", "keywords"]);
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(rows.len(), list.len());
    for (row, k) in rows.iter().zip(&list) {
        let name = k["name"].as_str().unwrap();
        let status = k["status"].as_str().unwrap();
        let reason = k["reason"].as_str().unwrap();
        assert!(row.starts_with(&format!("| `{name}` |")), "{row} vs {name}");
        assert!(row.contains(&format!("| {status} |")), "{row}");
        assert!(
            matches!(status, "supported" | "parsed" | "unsupported"),
            "{name}: {status}"
        );
        assert_eq!(reason.is_empty(), status == "supported", "{name}");
    }
}

#[test]
fn every_suricata_keyword_is_listed() {
    let csv = std::fs::read_to_string(suricata_keywords_csv()).unwrap();
    let list = json_list();
    let listed: std::collections::HashMap<&str, &serde_json::Value> = list
        .iter()
        .map(|k| (k["name"].as_str().unwrap(), k))
        .collect();
    let mut missing = Vec::new();
    let mut n = 0;
    for line in csv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let name = line.split(';').next().unwrap().trim();
        n += 1;
        if !listed.contains_key(name) {
            missing.push(name);
        }
    }
    assert!(n >= 400, "keywords.csv has only {n} keywords");
    assert!(
        missing.is_empty(),
        "keywords of Suricata 9 missing from the registry: {missing:?}"
    );
}

#[test]
fn app_protocol_keywords_are_supported_or_unsupported_never_parsed() {
    // Keywords of protocols without a parser, as listed in the issue.
    let list = json_list();
    for k in &list {
        let name = k["name"].as_str().unwrap();
        let proto = [
            "smb.",
            "dcerpc.",
            "ftp.",
            "ssh.",
            "quic.",
            "sip.",
            "krb5.",
            "ike.",
            "mqtt.",
            "snmp.",
            "rfb.",
            "dhcp.",
            "ldap.",
            "websocket.",
            "email.",
            "http2.",
        ]
        .iter()
        .any(|p| name.starts_with(p));
        // A protocol's keyword is evaluated once its parser provides it
        // (ssh.proto, ssh.software); until then it is unsupported, never
        // accepted without being evaluated.
        if proto && k["status"] != "supported" {
            assert_eq!(k["status"], "unsupported", "{name}");
            assert_eq!(k["reason"], "protocol not parsed yet", "{name}");
        }
    }
}
