//! Loading rules files: comments, blank lines, backslash continuation,
//! CRLF; every rule that fails is reported and skipped.

use std::path::Path;

use crate::ast::{Origin, Rule};
use crate::error::{RuleDiagnostic, RuleError, RuleErrorKind};
use crate::parser::{find_sid, parse_rule};
use crate::vars::Vars;

/// The rules of one file and the problems found in it.
#[derive(Debug, Clone, Default)]
pub struct RuleFileReport {
    pub rules: Vec<Rule>,
    pub errors: Vec<RuleDiagnostic>,
}

impl RuleFileReport {
    /// Adds the rules and errors of another report.
    pub fn merge(&mut self, other: RuleFileReport) {
        self.rules.extend(other.rules);
        self.errors.extend(other.errors);
    }
}

/// Reads and parses a rules file. A file that cannot be read gives a
/// report with one `Io` diagnostic and no rules.
pub fn load_rules_file(path: impl AsRef<Path>, vars: &Vars) -> RuleFileReport {
    let path = path.as_ref();
    let name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => parse_rules_bytes(&bytes, &name, vars),
        Err(e) => RuleFileReport {
            rules: Vec::new(),
            errors: vec![RuleDiagnostic {
                file: name,
                line: 0,
                sid: None,
                keyword: None,
                kind: RuleErrorKind::Io,
                message: format!("cannot read rules file: {e}"),
            }],
        },
    }
}

/// Parses the text of a rules file; `file_name` is used in diagnostics.
pub fn parse_rules_str(text: &str, file_name: &str, vars: &Vars) -> RuleFileReport {
    parse_rules_bytes(text.as_bytes(), file_name, vars)
}

/// Calls `f(first_line, rule_bytes)` for every rule in the file, with
/// continuation lines joined and comments and blank lines skipped.
pub(crate) fn for_each_rule(bytes: &[u8], mut f: impl FnMut(usize, &[u8])) {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut pending: Vec<u8> = Vec::new();
    let mut pending_line = 0usize;
    for (idx, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let lineno = idx + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line = trim_end(line);
        if pending.is_empty() {
            let start = trim_start(line);
            if start.is_empty() || start[0] == b'#' {
                continue;
            }
            pending_line = lineno;
            if let Some(body) = start.strip_suffix(b"\\") {
                pending.extend_from_slice(body);
                continue;
            }
            f(pending_line, start);
        } else {
            if let Some(body) = line.strip_suffix(b"\\") {
                pending.extend_from_slice(body);
                continue;
            }
            pending.extend_from_slice(line);
            f(pending_line, &pending);
            pending.clear();
        }
    }
    if !pending.is_empty() {
        f(pending_line, &pending);
    }
}

fn trim_end(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    &b[..n]
}

fn trim_start(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    &b[n..]
}

fn parse_rules_bytes(bytes: &[u8], file_name: &str, vars: &Vars) -> RuleFileReport {
    let mut report = RuleFileReport::default();
    for_each_rule(bytes, |line, rule| {
        let origin = Origin {
            file: file_name.to_string(),
            line,
        };
        match std::str::from_utf8(rule) {
            Ok(text) => match parse_rule(text, vars, origin) {
                Ok(r) => report.rules.push(r),
                Err(e) => report.errors.push(e.into()),
            },
            Err(_) => {
                let lossy = String::from_utf8_lossy(rule);
                let mut e = RuleError::new(RuleErrorKind::Syntax, "rule text is not valid UTF-8");
                e.sid = find_sid(&lossy);
                e.origin = origin;
                report.errors.push(e.into());
            }
        }
    });
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_and_comments() {
        let text = "# comment\r\n\r\n  # alert tcp any any -> any any (sid:9;)\n\
                    alert tcp any any -> any any \\\n  (msg:\"x\"; \\\r\n sid:1;)\r\n\
                    alert tcp any any -> any any (sid:2;)\n";
        let mut seen = Vec::new();
        for_each_rule(text.as_bytes(), |line, r| {
            seen.push((line, String::from_utf8(r.to_vec()).unwrap()))
        });
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].0, 4);
        assert_eq!(
            seen[0].1,
            "alert tcp any any -> any any   (msg:\"x\";  sid:1;)"
        );
        assert_eq!(seen[1].0, 7);
    }
}
