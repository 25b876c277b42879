//! `vigil rules check`: parse rule files and report problems like a
//! compiler.

use std::process::ExitCode;

use anyhow::Result;
use vigil_detect::{DetectEngine, Skip};

use crate::cli::CheckArgs;
use crate::config::Config;
use crate::run::{build_vars, load_classification, load_rule_files};

pub fn check(args: CheckArgs) -> Result<ExitCode> {
    let mut cfg = match &args.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    for kv in &args.set {
        cfg.set(kv)?;
    }
    let vars = build_vars(&cfg)?;
    let classes = load_classification(&cfg)?;
    let loaded = load_rule_files(&args.files, &vars)?;
    let (_, report) = DetectEngine::build(&loaded.rules, &classes);
    let total = loaded.rules.len() + loaded.diagnostics.len();
    let not_eval: usize = report.not_evaluable_by_keyword.values().sum();
    let invalid: usize = report.invalid_by_keyword.values().sum();
    if args.json {
        let problems: Vec<serde_json::Value> = loaded
            .diagnostics
            .iter()
            .map(|d| {
                serde_json::json!({
                    "file": d.file, "line": d.line, "sid": d.sid,
                    "keyword": d.keyword, "message": d.message, "kind": "syntax"
                })
            })
            .chain(report.skipped.iter().map(|s| {
                let (kind, keyword, message) = match &s.reason {
                    Skip::NotEvaluable(k) => {
                        ("not_evaluable", k.clone(), "not evaluable yet".to_string())
                    }
                    Skip::Invalid { keyword, message } => {
                        ("invalid", keyword.clone(), message.clone())
                    }
                };
                serde_json::json!({
                    "file": s.file, "line": s.line, "sid": s.sid,
                    "keyword": keyword, "message": message, "kind": kind
                })
            }))
            .collect();
        let out = serde_json::json!({
            "summary": {
                "rules": total,
                "ok": report.loaded,
                "not_evaluable": not_eval,
                "invalid": invalid,
                "syntax_errors": loaded.diagnostics.len(),
                "not_evaluable_by_keyword": report.not_evaluable_by_keyword,
                "invalid_by_keyword": report.invalid_by_keyword,
            },
            "problems": problems,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for d in &loaded.diagnostics {
            println!("{d}");
        }
        for s in &report.skipped {
            if let Skip::Invalid { keyword, message } = &s.reason {
                println!(
                    "{}:{}: sid {}: keyword {keyword}: {message}",
                    s.file, s.line, s.sid
                );
            }
        }
        println!(
            "{total} rules: {} ok, {not_eval} not yet evaluable, {invalid} invalid, {} syntax errors",
            report.loaded,
            loaded.diagnostics.len()
        );
        let mut top: Vec<_> = report.not_evaluable_by_keyword.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (k, n) in top {
            println!("  not yet evaluable: {k}: {n}");
        }
    }
    Ok(if loaded.diagnostics.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
