//! `vigil rules check`: parse and compile rule files and report problems
//! like a compiler.
//!
//! Every rule ends in exactly one state:
//!
//! - `ok`: loaded into detection;
//! - `not_evaluable`: well-formed, but uses a keyword, buffer or protocol
//!   that detection does not evaluate yet (skipped at run time);
//! - `invalid`: well-formed but cannot be compiled (bad regex, unknown
//!   classtype, ...);
//! - `requires_unmet`: its `requires:` is not met (skipped silently, as
//!   Suricata does);
//! - `duplicate`: another rule with the same gid:sid and a higher (or the
//!   same, later) revision wins;
//! - `syntax_error`: does not parse.
//!
//! Each problem is one line `file:line: sid N: keyword K: message`. The
//! exit status is non-zero only for syntax errors (or an unreadable file).

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use vigil_detect::payload::{CompiledPayload, ListKind, VarTable};
use vigil_detect::{rule::not_evaluable_keywords, DetectEngine, Skip};
use vigil_rules::{Buffer, ReferenceConfig, Rule};

use crate::cli::{CheckArgs, KeywordsArgs};
use crate::config::Config;
use crate::run::{build_vars, load_classification, load_rule_files};

/// One reported problem.
#[derive(Debug, Clone)]
struct Problem {
    file: String,
    line: usize,
    sid: Option<u32>,
    keyword: Option<String>,
    /// `syntax_error`, `invalid`, `not_evaluable`, `requires_unmet`,
    /// `duplicate` or `warning`.
    state: &'static str,
    /// Finer reason: the parser's error kind for syntax errors.
    kind: String,
    message: String,
}

impl Problem {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.file, "line": self.line, "sid": self.sid,
            "keyword": self.keyword, "state": self.state, "kind": self.kind,
            "message": self.message,
        })
    }
}

impl Counts {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "rules": self.rules, "ok": self.ok, "not_evaluable": self.not_evaluable,
            "invalid": self.invalid, "requires_unmet": self.requires_unmet,
            "duplicates": self.duplicates, "syntax_errors": self.syntax_errors,
            "warnings": self.warnings,
        })
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: ", self.file, self.line)?;
        if let Some(s) = self.sid {
            write!(f, "sid {s}: ")?;
        }
        if let Some(k) = &self.keyword {
            write!(f, "keyword {k}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Counts of one set of rules (a file, or all of them).
#[derive(Debug, Clone, Default)]
struct Counts {
    rules: usize,
    ok: usize,
    not_evaluable: usize,
    invalid: usize,
    requires_unmet: usize,
    duplicates: usize,
    syntax_errors: usize,
    warnings: usize,
}

#[derive(Debug, Clone)]
struct Timings {
    parse_ms: f64,
    compile_ms: f64,
    group_ms: f64,
    total_ms: f64,
    /// Compiling the payload programs (contents, regexes, byte_*) of
    /// every parsed rule, not-yet-evaluable buffers included: what
    /// compiling costs once every rule is evaluable.
    compile_all_ms: f64,
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Why a keyword is not evaluable, in words.
fn describe(k: &str) -> String {
    if let Some(p) = k.strip_prefix("protocol ") {
        return match p {
            "arp" | "ether" => format!("needs link-layer ({p}) rules"),
            _ => format!("needs the {p} application-layer parser"),
        };
    }
    match k {
        "stream_size" => "needs TCP stream sequence tracking".into(),
        "stream-event" => "needs TCP stream reassembly events".into(),
        "app-layer-event" | "app-layer-protocol" | "app-layer-state" | "urilen" => {
            "needs application-layer parsing".into()
        }
        k => match vigil_rules::keyword_class(k) {
            Some("buffer") => format!("needs the {k} buffer (application-layer parsing)"),
            Some("transform") => format!("buffer transform {k} is not applied yet"),
            _ => "keyword not evaluated yet".into(),
        },
    }
}

/// Compiles every buffer's payload program of every rule (evaluable or
/// not) and returns the time it took.
fn compile_all_payloads(rules: &[Rule]) -> Duration {
    let t = Instant::now();
    for r in rules {
        let mut vars = VarTable::new();
        for b in &r.buffers {
            let kind = if b.buffer == Buffer::Packet {
                ListKind::Payload
            } else {
                ListKind::Sticky
            };
            let _ = CompiledPayload::compile_for(&b.items, &mut vars, kind);
        }
    }
    t.elapsed()
}

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
    let refs = match cfg.get_str("reference-config-file") {
        Some(f) => match std::fs::read_to_string(cfg.resolve(&f)) {
            Ok(text) => ReferenceConfig::parse(&text, &f).map_err(|e| anyhow::anyhow!("{e}"))?,
            Err(_) => ReferenceConfig::default(),
        },
        None => ReferenceConfig::default(),
    };

    let start = Instant::now();
    let loaded = load_rule_files(&args.files, &vars)?;
    let parse_time = start.elapsed();
    let reputation = crate::run::load_reputation(&cfg, true)?;
    // The config's datasets, so that rules naming them check as they
    // load (nothing is saved: the data directory is only named).
    let mut ds_cfg = crate::config::dataset_config(&cfg, std::path::Path::new("."))?;
    ds_cfg.geoip = crate::run::load_geoip(&cfg, true);
    let (_engine, report) =
        DetectEngine::build_with_data(&loaded.rules, &classes, reputation, ds_cfg);
    for e in report
        .dataset_errors
        .iter()
        .filter(|e| !e.ends_with("rule skipped"))
    {
        eprintln!("vigil: warning: {e}");
    }
    let total_time = start.elapsed();
    let compile_all_time = if args.timings {
        compile_all_payloads(&loaded.rules)
    } else {
        Duration::ZERO
    };

    let file_index: HashMap<String, usize> = args
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.display().to_string(), i))
        .collect();
    let by_origin: HashMap<(&str, usize), &Rule> = loaded
        .rules
        .iter()
        .map(|r| ((r.origin.file.as_str(), r.origin.line), r))
        .collect();

    let mut problems: Vec<Problem> = Vec::new();
    let mut ne_by_kw: BTreeMap<String, usize> = BTreeMap::new();
    let mut ne_only_by_kw: BTreeMap<String, usize> = BTreeMap::new();
    let mut invalid_by_kw: BTreeMap<String, usize> = BTreeMap::new();
    let mut syntax_by_kind: BTreeMap<String, usize> = BTreeMap::new();

    for d in &loaded.diagnostics {
        *syntax_by_kind
            .entry(d.kind.as_str().to_string())
            .or_default() += 1;
        problems.push(Problem {
            file: d.file.clone(),
            line: d.line,
            sid: d.sid,
            keyword: d.keyword.clone(),
            state: "syntax_error",
            kind: d.kind.as_str().to_string(),
            message: d.message.clone(),
        });
    }

    let mut skipped_at: std::collections::HashSet<(&str, usize)> = Default::default();
    for s in &report.skipped {
        skipped_at.insert((s.file.as_str(), s.line));
        let rule = by_origin.get(&(s.file.as_str(), s.line)).copied();
        let (state, kind, keyword, message) = match &s.reason {
            Skip::NotEvaluable(k) => {
                let all = rule.map(not_evaluable_keywords).unwrap_or_default();
                let all = if all.is_empty() { vec![k.clone()] } else { all };
                for x in &all {
                    *ne_by_kw.entry(x.clone()).or_default() += 1;
                }
                if all.len() == 1 {
                    *ne_only_by_kw.entry(all[0].clone()).or_default() += 1;
                }
                let first = all[0].clone();
                let mut msg = format!("not yet evaluable: {}", describe(&first));
                if all.len() > 1 {
                    msg.push_str(&format!("; also needs {}", all[1..].join(", ")));
                }
                ("not_evaluable", "not_evaluable".to_string(), first, msg)
            }
            Skip::Invalid { keyword, message } => {
                *invalid_by_kw.entry(keyword.clone()).or_default() += 1;
                (
                    "invalid",
                    "invalid".to_string(),
                    keyword.clone(),
                    message.clone(),
                )
            }
            Skip::RequiresUnmet(why) => (
                "requires_unmet",
                "requires_unmet".to_string(),
                "requires".to_string(),
                format!("requirement not met, rule skipped: {why}"),
            ),
        };
        problems.push(Problem {
            file: s.file.clone(),
            line: s.line,
            sid: Some(s.sid),
            keyword: Some(keyword),
            state,
            kind,
            message,
        });
    }

    // Duplicates among the rules that compiled: the highest revision wins,
    // then the last loaded (DetectEngine::build's rule).
    let compiled: Vec<&Rule> = loaded
        .rules
        .iter()
        .filter(|r| !skipped_at.contains(&(r.origin.file.as_str(), r.origin.line)))
        .collect();
    let mut winner: HashMap<(u32, u32), usize> = HashMap::new();
    for (i, r) in compiled.iter().enumerate() {
        winner
            .entry((r.gid, r.sid))
            .and_modify(|w| {
                if r.rev >= compiled[*w].rev {
                    *w = i
                }
            })
            .or_insert(i);
    }
    let mut duplicates = 0usize;
    for (i, r) in compiled.iter().enumerate() {
        let w = winner[&(r.gid, r.sid)];
        if w != i {
            duplicates += 1;
            let k = compiled[w];
            problems.push(Problem {
                file: r.origin.file.clone(),
                line: r.origin.line,
                sid: Some(r.sid),
                keyword: Some("sid".into()),
                state: "duplicate",
                kind: "duplicate".into(),
                message: format!(
                    "duplicate signature {}:{} (rev {}); {}:{} (rev {}) is used",
                    r.gid, r.sid, r.rev, k.origin.file, k.origin.line, k.rev
                ),
            });
        }
    }

    // Warnings that do not change a rule's state.
    if !refs.is_empty() {
        for r in &loaded.rules {
            for (system, _) in &r.references {
                if refs.lookup(system).is_none() {
                    problems.push(Problem {
                        file: r.origin.file.clone(),
                        line: r.origin.line,
                        sid: Some(r.sid),
                        keyword: Some("reference".into()),
                        state: "warning",
                        kind: "warning".into(),
                        message: format!(
                            "warning: unknown reference system '{system}' (not in reference.config)"
                        ),
                    });
                }
            }
        }
    }

    problems.sort_by(|a, b| {
        let fa = file_index.get(&a.file).copied().unwrap_or(usize::MAX);
        let fb = file_index.get(&b.file).copied().unwrap_or(usize::MAX);
        (fa, &a.file, a.line).cmp(&(fb, &b.file, b.line))
    });

    // Per-file and total counts.
    let mut per_file: BTreeMap<usize, (String, Counts)> = BTreeMap::new();
    for (i, f) in args.files.iter().enumerate() {
        per_file.insert(i, (f.display().to_string(), Counts::default()));
    }
    let mut bump = |file: &str, f: &dyn Fn(&mut Counts)| {
        if let Some(i) = file_index.get(file) {
            if let Some((_, c)) = per_file.get_mut(i) {
                f(c);
            }
        }
    };
    for r in &loaded.rules {
        bump(&r.origin.file, &|c| c.rules += 1);
    }
    for p in &problems {
        bump(&p.file, &|c| match p.state {
            "syntax_error" => {
                c.rules += 1;
                c.syntax_errors += 1
            }
            "invalid" => c.invalid += 1,
            "not_evaluable" => c.not_evaluable += 1,
            "requires_unmet" => c.requires_unmet += 1,
            "duplicate" => c.duplicates += 1,
            _ => c.warnings += 1,
        });
    }
    for (_, c) in per_file.values_mut() {
        c.ok = c.rules
            - c.syntax_errors
            - c.invalid
            - c.not_evaluable
            - c.requires_unmet
            - c.duplicates;
    }
    let count = |state: &str| problems.iter().filter(|p| p.state == state).count();
    let total = Counts {
        rules: loaded.rules.len() + loaded.diagnostics.len(),
        ok: report.loaded,
        not_evaluable: count("not_evaluable"),
        invalid: count("invalid"),
        requires_unmet: count("requires_unmet"),
        duplicates,
        syntax_errors: loaded.diagnostics.len(),
        warnings: count("warning"),
    };
    let timings = Timings {
        parse_ms: ms(parse_time),
        compile_ms: ms(report.compile_time),
        group_ms: ms(report.group_time),
        total_ms: ms(total_time),
        compile_all_ms: ms(compile_all_time),
    };
    let mut ranked: Vec<(&String, &usize)> = ne_by_kw.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));

    if args.json {
        let files: Vec<serde_json::Value> = per_file
            .values()
            .map(|(name, c)| {
                let mut v = c.to_json();
                v["file"] = serde_json::Value::String(name.clone());
                v
            })
            .collect();
        let mut summary = total.to_json();
        summary["not_evaluable_by_keyword"] = serde_json::to_value(&ne_by_kw)?;
        summary["not_evaluable_only_by_keyword"] = serde_json::to_value(&ne_only_by_kw)?;
        summary["not_evaluable_ranked"] = serde_json::to_value(&ranked)?;
        summary["invalid_by_keyword"] = serde_json::to_value(&invalid_by_kw)?;
        summary["syntax_errors_by_kind"] = serde_json::to_value(&syntax_by_kind)?;
        summary["files"] = serde_json::Value::Array(files);
        if args.timings {
            summary["timings"] = serde_json::json!({
                "parse_ms": timings.parse_ms, "compile_ms": timings.compile_ms,
                "group_ms": timings.group_ms, "total_ms": timings.total_ms,
                "compile_all_payloads_ms": timings.compile_all_ms,
            });
        }
        let shown: Vec<serde_json::Value> = problems
            .iter()
            .filter(|p| !args.quiet || matches!(p.state, "syntax_error" | "invalid"))
            .map(Problem::to_json)
            .collect();
        let out = serde_json::json!({ "summary": summary, "problems": shown });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        use std::io::Write;
        let stdout = std::io::stdout();
        let mut o = std::io::BufWriter::new(stdout.lock());
        for p in &problems {
            if args.quiet && !matches!(p.state, "syntax_error" | "invalid") {
                continue;
            }
            writeln!(o, "{p}")?;
        }
        let line = |c: &Counts| {
            format!(
                "{} rules: {} ok, {} not yet evaluable, {} invalid, {} requires not met, \
                 {} duplicate, {} syntax errors",
                c.rules,
                c.ok,
                c.not_evaluable,
                c.invalid,
                c.requires_unmet,
                c.duplicates,
                c.syntax_errors
            )
        };
        if per_file.len() > 1 {
            for (name, c) in per_file.values() {
                writeln!(o, "{name}: {}", line(c))?;
            }
            writeln!(o, "total: {}", line(&total))?;
        } else {
            writeln!(o, "{}", line(&total))?;
        }
        if !ranked.is_empty() {
            writeln!(
                o,
                "not yet evaluable, by keyword (rules that need it / rules it alone blocks):"
            )?;
            for (k, n) in &ranked {
                let only = ne_only_by_kw.get(*k).copied().unwrap_or(0);
                writeln!(o, "  {k:<32} {n:>6} {only:>6}")?;
            }
        }
        if !invalid_by_kw.is_empty() {
            writeln!(o, "invalid, by keyword:")?;
            for (k, n) in &invalid_by_kw {
                writeln!(o, "  {k:<32} {n:>6}")?;
            }
        }
        if !syntax_by_kind.is_empty() {
            writeln!(o, "syntax errors, by kind:")?;
            for (k, n) in &syntax_by_kind {
                writeln!(o, "  {k:<32} {n:>6}")?;
            }
        }
        if total.warnings > 0 {
            writeln!(o, "{} warnings", total.warnings)?;
        }
        if args.timings {
            writeln!(
                o,
                "load time: parse {:.1} ms, compile {:.1} ms, group {:.1} ms, total {:.1} ms \
                 ({} rules loaded); payload programs of all {} parsed rules compile in {:.1} ms",
                timings.parse_ms,
                timings.compile_ms,
                timings.group_ms,
                timings.total_ms,
                total.ok,
                loaded.rules.len(),
                timings.compile_all_ms
            )?;
        }
        o.flush()?;
    }
    Ok(if loaded.diagnostics.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `vigil rules keywords [--json]`: the keyword registry with statuses.
pub fn keywords(args: KeywordsArgs) -> Result<ExitCode> {
    if args.json {
        let list: Vec<serde_json::Value> = vigil_rules::keyword_registry()
            .iter()
            .map(|k| {
                serde_json::json!({
                    "name": k.name, "canonical": k.canonical, "kind": k.kind,
                    "status": k.status.as_str(), "reason": k.status.reason(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        print!("{}", vigil_rules::keywords_markdown());
    }
    Ok(ExitCode::SUCCESS)
}
