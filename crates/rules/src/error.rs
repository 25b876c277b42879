//! Errors and diagnostics of the rule parser.

use std::fmt;

use crate::ast::Origin;

/// What kind of problem a rule (or variable, or config line) has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleErrorKind {
    /// The rule text is malformed (no options, unterminated string, ...).
    Syntax,
    /// Bad action, protocol or direction in the header.
    Header,
    /// Bad address specification.
    Address,
    /// Bad port specification.
    Port,
    /// Undefined, recursive or malformed variable.
    Variable,
    /// A keyword that neither Suricata nor Snort knows.
    UnknownKeyword,
    /// A known keyword with a value it does not accept.
    InvalidValue,
    /// Keywords that do not fit together (e.g. `depth` shorter than the
    /// content, a relative keyword with nothing to be relative to).
    Validation,
    /// The rule has no `sid`.
    MissingSid,
    /// A file could not be read.
    Io,
}

impl RuleErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleErrorKind::Syntax => "syntax",
            RuleErrorKind::Header => "header",
            RuleErrorKind::Address => "address",
            RuleErrorKind::Port => "port",
            RuleErrorKind::Variable => "variable",
            RuleErrorKind::UnknownKeyword => "unknown keyword",
            RuleErrorKind::InvalidValue => "invalid value",
            RuleErrorKind::Validation => "validation",
            RuleErrorKind::MissingSid => "missing sid",
            RuleErrorKind::Io => "io",
        }
    }
}

/// An error found while parsing one rule.
///
/// Displays as `file:line: sid N: keyword K: message`, leaving out the
/// parts that are unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RuleError {
    pub kind: RuleErrorKind,
    /// The keyword at fault, if any.
    pub keyword: Option<String>,
    pub message: String,
    /// The rule's sid when it could be found in the text.
    pub sid: Option<u32>,
    pub origin: Origin,
}

impl RuleError {
    pub fn new(kind: RuleErrorKind, message: impl Into<String>) -> Self {
        RuleError {
            kind,
            keyword: None,
            message: message.into(),
            sid: None,
            origin: Origin::default(),
        }
    }

    /// The same error, blamed on `keyword`.
    pub fn with_keyword(mut self, keyword: impl Into<String>) -> Self {
        self.keyword = Some(keyword.into());
        self
    }
}

fn write_location(
    f: &mut fmt::Formatter<'_>,
    file: &str,
    line: usize,
    sid: Option<u32>,
    keyword: Option<&str>,
) -> fmt::Result {
    match (file.is_empty(), line) {
        (false, 0) => write!(f, "{file}: ")?,
        (false, l) => write!(f, "{file}:{l}: ")?,
        (true, 0) => {}
        (true, l) => write!(f, "line {l}: ")?,
    }
    if let Some(sid) = sid {
        write!(f, "sid {sid}: ")?;
    }
    if let Some(k) = keyword {
        write!(f, "keyword {k}: ")?;
    }
    Ok(())
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_location(
            f,
            &self.origin.file,
            self.origin.line,
            self.sid,
            self.keyword.as_deref(),
        )?;
        f.write_str(&self.message)
    }
}

/// One problem found while loading a rules file; the rule it concerns was
/// skipped. Displays like [`RuleError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleDiagnostic {
    pub file: String,
    /// 1-based line of the rule's first line.
    pub line: usize,
    pub sid: Option<u32>,
    pub keyword: Option<String>,
    pub kind: RuleErrorKind,
    pub message: String,
}

impl From<RuleError> for RuleDiagnostic {
    fn from(e: RuleError) -> Self {
        RuleDiagnostic {
            file: e.origin.file,
            line: e.origin.line,
            sid: e.sid,
            keyword: e.keyword,
            kind: e.kind,
            message: e.message,
        }
    }
}

impl fmt::Display for RuleDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_location(f, &self.file, self.line, self.sid, self.keyword.as_deref())?;
        f.write_str(&self.message)
    }
}
