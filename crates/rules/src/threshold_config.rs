//! `threshold.config`: Suricata's global thresholds, suppressions and rate
//! filters.
//!
//! ```text
//! threshold gen_id 1, sig_id 2002087, type both, track by_src, count 3, seconds 5
//! event_filter gen_id 1, sig_id 2002087, type limit, track by_dst, count 1, seconds 60
//! suppress gen_id 1, sig_id 2002087
//! suppress gen_id 1, sig_id 2003614, track by_either, ip [10.0.0.0/8,$HOME_NET]
//! rate_filter gen_id 1, sig_id 888, track by_src, count 10, seconds 60, new_action drop, timeout 300
//! ```
//!
//! Comments (`#`), blank lines and backslash continuations are accepted. A
//! bad line is reported (`file:line: keyword K: message`) and skipped; the
//! others still load. `gen_id 0` / `sig_id 0` mean "every gid / sid".
//! Applying the entries to compiled rules is detection's job.

use std::path::Path;

use crate::ast::{AddrSpec, Threshold, Track};
use crate::error::{RuleDiagnostic, RuleErrorKind};
use crate::parser::parse_threshold;
use crate::values::parse_u32;
use crate::vars::Vars;

/// Which address of an alert a `suppress ... track` entry tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuppressTrack {
    BySrc,
    ByDst,
    /// Source or destination.
    ByEither,
}

/// One entry of a `threshold.config` file.
#[derive(Debug, Clone, PartialEq)]
pub enum ThresholdEntry {
    /// `threshold` / `event_filter`: replaces the rule's own threshold
    /// and detection_filter (for sid 0 / gid 0: applies to rules that
    /// have none).
    Threshold {
        gid: u32,
        sid: u32,
        threshold: Threshold,
        line: usize,
    },
    /// `suppress`: without `track`, the rule never alerts (its flowbits
    /// and other side effects still happen); with `track` and `ip`, only
    /// alerts whose tracked address is in `ip` are suppressed.
    Suppress {
        gid: u32,
        sid: u32,
        track: Option<(SuppressTrack, AddrSpec)>,
        line: usize,
    },
    /// `rate_filter`: once the rule matched more than `count` times within
    /// `seconds` for the tracked key, its action becomes `new_action` for
    /// `timeout` seconds (for that key).
    RateFilter {
        gid: u32,
        sid: u32,
        track: Track,
        count: u32,
        seconds: u32,
        /// `alert`, `drop`, `pass`, `reject`, `sdrop` or `log` (the last
        /// two leave the action as it is, as in Suricata).
        new_action: String,
        timeout: u32,
        line: usize,
    },
}

impl ThresholdEntry {
    /// `(gen_id, sig_id)` of the entry (0 = any).
    pub fn ids(&self) -> (u32, u32) {
        match self {
            ThresholdEntry::Threshold { gid, sid, .. }
            | ThresholdEntry::Suppress { gid, sid, .. }
            | ThresholdEntry::RateFilter { gid, sid, .. } => (*gid, *sid),
        }
    }

    /// Whether the entry applies to the rule `(gid, sid)`.
    pub fn applies_to(&self, rule_gid: u32, rule_sid: u32) -> bool {
        let (g, s) = self.ids();
        (g == 0 || g == rule_gid) && (s == 0 || s == rule_sid)
    }

    pub fn line(&self) -> usize {
        match self {
            ThresholdEntry::Threshold { line, .. }
            | ThresholdEntry::Suppress { line, .. }
            | ThresholdEntry::RateFilter { line, .. } => *line,
        }
    }
}

/// A parsed `threshold.config`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThresholdConfig {
    pub entries: Vec<ThresholdEntry>,
    /// The file name used in diagnostics.
    pub file: String,
}

impl ThresholdConfig {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parses the text of a threshold.config; `ip` specifications may use
    /// the address variables of `vars`. Bad lines are returned as
    /// diagnostics and left out.
    pub fn parse(
        text: &str,
        file_name: &str,
        vars: &Vars,
    ) -> (ThresholdConfig, Vec<RuleDiagnostic>) {
        let mut cfg = ThresholdConfig {
            entries: Vec::new(),
            file: file_name.to_string(),
        };
        let mut diags = Vec::new();
        crate::file::for_each_rule(text.as_bytes(), |line, bytes| {
            let s = String::from_utf8_lossy(bytes);
            match parse_entry(&s, vars, line) {
                Ok(e) => cfg.entries.push(e),
                Err((keyword, message)) => diags.push(RuleDiagnostic {
                    file: file_name.to_string(),
                    line,
                    sid: None,
                    keyword: Some(keyword),
                    kind: RuleErrorKind::InvalidValue,
                    message,
                }),
            }
        });
        (cfg, diags)
    }

    /// Reads and parses a threshold.config file.
    pub fn load(
        path: impl AsRef<Path>,
        vars: &Vars,
    ) -> Result<(ThresholdConfig, Vec<RuleDiagnostic>), RuleDiagnostic> {
        let path = path.as_ref();
        let name = path.display().to_string();
        match std::fs::read(path) {
            Ok(bytes) => Ok(Self::parse(&String::from_utf8_lossy(&bytes), &name, vars)),
            Err(e) => Err(RuleDiagnostic {
                file: name,
                line: 0,
                sid: None,
                keyword: None,
                kind: RuleErrorKind::Io,
                message: format!("cannot read threshold file: {e}"),
            }),
        }
    }
}

/// Splits at commas outside `[...]`.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

type EntryError = (String, String);

fn parse_entry(line: &str, vars: &Vars, lineno: usize) -> Result<ThresholdEntry, EntryError> {
    let t = line.trim();
    let (kind, rest) = t
        .split_once(char::is_whitespace)
        .map(|(k, r)| (k, r.trim()))
        .unwrap_or((t, ""));
    let kw = kind.to_string();
    let fail = |m: String| (kw.clone(), m);
    if !matches!(
        kind,
        "threshold" | "event_filter" | "suppress" | "rate_filter"
    ) {
        return Err((
            kw.clone(),
            format!(
                "unknown entry '{}' (threshold, event_filter, suppress or rate_filter)",
                truncate(kind, 40)
            ),
        ));
    }
    let mut gid = None;
    let mut sid = None;
    let mut others: Vec<(&str, &str)> = Vec::new();
    for part in split_top(rest) {
        if part.is_empty() {
            continue;
        }
        let (k, v) = part
            .split_once(char::is_whitespace)
            .map(|(k, v)| (k, v.trim()))
            .ok_or_else(|| fail(format!("'{}' needs a value", truncate(part, 40))))?;
        match k {
            "gen_id" => {
                if gid.is_some() {
                    return Err(fail("gen_id given twice".into()));
                }
                gid = Some(parse_u32(v).map_err(&fail)?);
            }
            "sig_id" => {
                if sid.is_some() {
                    return Err(fail("sig_id given twice".into()));
                }
                sid = Some(parse_u32(v).map_err(&fail)?);
            }
            _ => others.push((k, v)),
        }
    }
    let gid = gid.ok_or_else(|| fail("missing gen_id".into()))?;
    let sid = sid.ok_or_else(|| fail("missing sig_id".into()))?;
    match kind {
        "threshold" | "event_filter" => {
            let joined: Vec<String> = others.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let threshold = parse_threshold(&joined.join(","), false).map_err(&fail)?;
            Ok(ThresholdEntry::Threshold {
                gid,
                sid,
                threshold,
                line: lineno,
            })
        }
        "suppress" => {
            let mut track = None;
            let mut ip = None;
            for (k, v) in others {
                match k {
                    "track" => {
                        track = Some(match v {
                            "by_src" => SuppressTrack::BySrc,
                            "by_dst" => SuppressTrack::ByDst,
                            "by_either" => SuppressTrack::ByEither,
                            o => {
                                return Err(fail(format!(
                                    "suppress track must be by_src, by_dst or by_either, not '{}'",
                                    truncate(o, 40)
                                )))
                            }
                        })
                    }
                    "ip" => {
                        ip = Some(vars.resolve_address(v).map_err(|e| fail(e.message))?);
                    }
                    o => {
                        return Err(fail(format!(
                            "unknown suppress option '{}'",
                            truncate(o, 40)
                        )))
                    }
                }
            }
            let track = match (track, ip) {
                (None, None) => None,
                (Some(t), Some(ip)) => Some((t, ip)),
                (Some(_), None) => return Err(fail("suppress with 'track' needs 'ip'".into())),
                (None, Some(_)) => return Err(fail("suppress with 'ip' needs 'track'".into())),
            };
            Ok(ThresholdEntry::Suppress {
                gid,
                sid,
                track,
                line: lineno,
            })
        }
        _ => {
            let mut new_action = None;
            let (mut track, mut count, mut seconds, mut timeout) = (None, None, None, None);
            for (k, v) in others {
                match k {
                    "track" => {
                        track = Some(match v {
                            "by_src" => Track::BySrc,
                            "by_dst" => Track::ByDst,
                            "by_rule" => Track::ByRule,
                            "by_both" => Track::ByBoth,
                            _ => {
                                return Err(fail(format!(
                                    "invalid rate_filter track '{}'",
                                    truncate(v, 40)
                                )))
                            }
                        });
                    }
                    "count" => count = Some(parse_u32(v).map_err(&fail)?),
                    "seconds" => seconds = Some(parse_u32(v).map_err(&fail)?),
                    "timeout" => timeout = Some(parse_u32(v).map_err(&fail)?),
                    "new_action" => {
                        if !matches!(v, "alert" | "drop" | "pass" | "reject" | "sdrop" | "log") {
                            return Err(fail(format!("invalid new_action '{}'", truncate(v, 40))));
                        }
                        new_action = Some(v.to_string());
                    }
                    o => {
                        return Err(fail(format!(
                            "unknown rate_filter option '{}'",
                            truncate(o, 40)
                        )))
                    }
                }
            }
            let Some(new_action) = new_action else {
                return Err(fail("rate_filter needs new_action".into()));
            };
            let (Some(track), Some(count), Some(seconds), Some(timeout)) =
                (track, count, seconds, timeout)
            else {
                return Err(fail(
                    "rate_filter needs track, count, seconds and timeout".into(),
                ));
            };
            Ok(ThresholdEntry::RateFilter {
                gid,
                sid,
                track,
                count,
                seconds,
                new_action,
                timeout,
                line: lineno,
            })
        }
    }
}

fn truncate(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut e = n;
    while !s.is_char_boundary(e) {
        e -= 1;
    }
    &s[..e]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{ThresholdKind, Track};

    fn parse(t: &str) -> (ThresholdConfig, Vec<RuleDiagnostic>) {
        ThresholdConfig::parse(t, "threshold.config", &Vars::default())
    }

    #[test]
    fn all_entry_kinds() {
        let (c, d) = parse(
            "# comment\n\
             threshold gen_id 1, sig_id 10, type limit, track by_src, count 1, seconds 60\n\
             event_filter gen_id 1, sig_id 11, type both, track by_dst, count 3, seconds 5\n\
             suppress gen_id 1, sig_id 12\n\
             suppress gen_id 1, sig_id 13, track by_either, ip [10.0.0.0/8,192.168.1.1]\n\
             suppress gen_id 0, sig_id 0, track by_src, ip $HOME_NET\n\
             rate_filter gen_id 1, sig_id 14, track by_src, count 10, seconds 60, \\\n  new_action drop, timeout 300\n",
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(c.entries.len(), 6);
        match &c.entries[0] {
            ThresholdEntry::Threshold {
                gid: 1,
                sid: 10,
                threshold,
                line: 2,
            } => {
                assert_eq!(threshold.kind, ThresholdKind::Limit);
                assert_eq!(threshold.track, Track::BySrc);
                assert_eq!((threshold.count, threshold.seconds), (1, 60));
            }
            e => panic!("{e:?}"),
        }
        assert!(matches!(
            &c.entries[2],
            ThresholdEntry::Suppress {
                sid: 12,
                track: None,
                ..
            }
        ));
        match &c.entries[3] {
            ThresholdEntry::Suppress {
                track: Some((SuppressTrack::ByEither, ip)),
                ..
            } => {
                assert!(ip.contains("10.1.2.3".parse().unwrap()));
                assert!(ip.contains("192.168.1.1".parse().unwrap()));
                assert!(!ip.contains("192.168.1.2".parse().unwrap()));
            }
            e => panic!("{e:?}"),
        }
        assert!(c.entries[4].applies_to(1, 99));
        assert!(c.entries[4].applies_to(3, 1));
        assert!(!c.entries[0].applies_to(1, 11));
        assert_eq!(
            c.entries[5],
            ThresholdEntry::RateFilter {
                gid: 1,
                sid: 14,
                track: Track::BySrc,
                count: 10,
                seconds: 60,
                new_action: "drop".into(),
                timeout: 300,
                line: 7,
            }
        );
    }

    #[test]
    fn bad_lines_are_reported_and_skipped() {
        let (c, d) = parse(
            "threshold gen_id 1, sig_id 10, type limit, track by_src, count 1\n\
             suppress gen_id 1\n\
             suppress gen_id 1, sig_id 3, track by_src\n\
             bogus gen_id 1, sig_id 1\n\
             suppress gen_id 1, sig_id 4, track by_src, ip 1.2.3.300\n\
             suppress gen_id 1, sig_id 5\n",
        );
        assert_eq!(c.entries.len(), 1);
        assert_eq!(d.len(), 5);
        assert_eq!(d[0].line, 1);
        assert!(d[0]
            .to_string()
            .starts_with("threshold.config:1: keyword threshold: "));
        assert!(d[0].message.contains("seconds"), "{}", d[0].message);
        assert!(d[1].message.contains("sig_id"));
    }
}
