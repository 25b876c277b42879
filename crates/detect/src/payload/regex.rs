//! Compiling a rule's `pcre` with PCRE2 (JIT when available).
//!
//! The `pcre2` crate exposes the `i s m x` options directly. The others are
//! expressed in the pattern, with the same effect:
//! - `G` (ungreedy): the inline `(?U)` option;
//! - `A` (anchored): `\G(?:...)`, which anchors at the start offset as
//!   PCRE2_ANCHORED does;
//! - `E` (dollar end-only, ignored by PCRE2 under `m`): every `$`
//!   metacharacter becomes `\z`.
//!
//! Suricata's default match limits (match-limit 3500, recursion/depth
//! limit 1500) are set with the `(*LIMIT_MATCH=..)(*LIMIT_DEPTH=..)`
//! start-of-pattern items; a search that hits them counts as no match, as
//! in Suricata.

use std::borrow::Cow;

use pcre2::bytes::{Regex, RegexBuilder};
use vigil_rules::Pcre;

/// Suricata's `SC_MATCH_LIMIT_DEFAULT`.
pub const PCRE_MATCH_LIMIT: u32 = 3500;
/// Suricata's `SC_MATCH_LIMIT_RECURSION_DEFAULT`.
pub const PCRE_DEPTH_LIMIT: u32 = 1500;

pub(crate) fn build(p: &Pcre) -> Result<Regex, String> {
    let (lead, body) = split_start_items(&p.pattern);
    if body.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1 {
        return Err("\\ at end of pattern".to_string());
    }
    let body: Cow<str> = if p.dollar_endonly && !p.multiline {
        Cow::Owned(dollar_endonly(body, p.extended))
    } else {
        Cow::Borrowed(body)
    };
    let mut pat = String::with_capacity(body.len() + 64);
    pat.push_str(&format!(
        "(*LIMIT_MATCH={PCRE_MATCH_LIMIT})(*LIMIT_DEPTH={PCRE_DEPTH_LIMIT})"
    ));
    pat.push_str(lead);
    if p.ungreedy {
        pat.push_str("(?U)");
    }
    if p.anchored {
        pat.push_str("\\G(?:");
        pat.push_str(&body);
        // `\E` closes a trailing `\Q` quote (and is ignored otherwise); in
        // extended mode the newline ends a trailing `#` comment.
        pat.push_str(if p.extended { "\\E\n)" } else { "\\E)" });
    } else {
        pat.push_str(&body);
    }
    RegexBuilder::new()
        .caseless(p.caseless)
        .dotall(p.dotall)
        .multi_line(p.multiline)
        .extended(p.extended)
        .jit_if_available(true)
        .build(&pat)
        .map_err(|e| e.to_string())
}

/// Splits off leading `(*NAME)` / `(*NAME=n)` items (`(*UTF)`,
/// `(*LIMIT_MATCH=10)`, `(*CRLF)`...), which must stay at the very start.
fn split_start_items(pattern: &str) -> (&str, &str) {
    let b = pattern.as_bytes();
    let mut i = 0;
    while b[i..].starts_with(b"(*") {
        let name_end = b[i + 2..].iter().position(|&c| {
            !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_' || c == b'=')
        });
        match name_end {
            Some(n) if n > 0 && b[i + 2 + n] == b')' => i += 2 + n + 1,
            _ => break,
        }
    }
    pattern.split_at(i)
}

/// Rewrites the `$` metacharacters of `pat` to `\z`, leaving escapes,
/// `\Q..\E` quotes, character classes and comments alone.
fn dollar_endonly(pat: &str, extended: bool) -> String {
    let b = pat.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len() + 8);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() && b[i + 1] == b'Q' => {
                let end = find(b, i + 2, b"\\E").map_or(b.len(), |e| e + 2);
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            b'\\' => {
                let end = (i + 2).min(b.len());
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            b'[' => {
                let end = class_end(b, i);
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            b'(' if b[i..].starts_with(b"(?#") => {
                let end = find(b, i, b")").map_or(b.len(), |e| e + 1);
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            b'#' if extended => {
                let end = find(b, i, b"\n").map_or(b.len(), |e| e + 1);
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            b'$' => {
                out.extend_from_slice(b"\\z");
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Only ASCII was inserted and whole UTF-8 sequences were copied.
    String::from_utf8(out).unwrap_or_else(|_| pat.to_string())
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(&b[from..], needle).map(|p| p + from)
}

/// End (exclusive) of the character class starting at `b[start] == '['`.
fn class_end(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    if i < b.len() && b[i] == b'^' {
        i += 1;
    }
    // A `]` right after `[` or `[^` is a literal.
    if i < b.len() && b[i] == b']' {
        i += 1;
    }
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' if b[i..].starts_with(b"[:") => {
                i = find(b, i + 2, b":]").map_or(i + 1, |e| e + 2);
            }
            b']' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_items_stay_first() {
        assert_eq!(
            split_start_items("(*UTF)(*LIMIT_MATCH=5)abc"),
            ("(*UTF)(*LIMIT_MATCH=5)", "abc")
        );
        assert_eq!(split_start_items("(*MARK:x)abc"), ("", "(*MARK:x)abc"));
        assert_eq!(split_start_items("abc"), ("", "abc"));
        assert_eq!(split_start_items("(*"), ("", "(*"));
    }

    #[test]
    fn dollar_rewrite() {
        assert_eq!(dollar_endonly("a$", false), "a\\z");
        assert_eq!(
            dollar_endonly("a\\$[$]\\Q$\\E(?#$)$", false),
            "a\\$[$]\\Q$\\E(?#$)\\z"
        );
        assert_eq!(dollar_endonly("[]$]$", false), "[]$]\\z");
        assert_eq!(dollar_endonly("[[:alpha:]$]$", false), "[[:alpha:]$]\\z");
        assert_eq!(dollar_endonly("a # $\n$", true), "a # $\n\\z");
    }
}
