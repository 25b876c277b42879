//! Counters: a tree of named `u64`s, serialised as EVE `stats` and as
//! Suricata's `stats.log` table.
//!
//! Counters are addressed by dotted paths as Suricata names them
//! (`decoder.pkts`, `decoder.event.ipv4.pkt_too_small`, `detect.alert`); each
//! dot opens a nested object in EVE, as Suricata's stats output does.
//! Siblings keep the order they were first added in (Suricata's counter
//! registration order), so the output depends only on the order of the
//! calls; [`StatsTree::sort`] gives a canonical order where that is not
//! fixed. The tree holds counters only: no uptime, no wall-clock time.

use std::io::{self, Write};

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::time::write_statslog_date;

/// Why a counter path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatsError {
    #[error("counter path {path:?} has an empty component")]
    EmptyComponent { path: String },
    #[error(
        "counter path {path:?} conflicts with {existing:?}: one is a counter, the other a group"
    )]
    Conflict { path: String, existing: String },
}

/// A node of the tree: a counter or a group of nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatsNode {
    Counter(u64),
    Group(StatsTree),
}

/// An ordered tree of counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsTree {
    entries: Vec<(String, StatsNode)>,
}

impl StatsTree {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Direct children, in order.
    pub fn entries(&self) -> &[(String, StatsNode)] {
        &self.entries
    }

    /// Sets a counter, creating it (and its groups) if needed.
    pub fn set(&mut self, path: &str, value: u64) -> Result<(), StatsError> {
        *self.counter_mut(path)? = value;
        Ok(())
    }

    /// Adds to a counter (saturating), creating it at 0 first if needed.
    pub fn add(&mut self, path: &str, delta: u64) -> Result<(), StatsError> {
        let c = self.counter_mut(path)?;
        *c = c.saturating_add(delta);
        Ok(())
    }

    /// Raises a counter to `value` if it is lower (for maxima such as
    /// `decoder.max_pkt_size`).
    pub fn set_max(&mut self, path: &str, value: u64) -> Result<(), StatsError> {
        let c = self.counter_mut(path)?;
        *c = (*c).max(value);
        Ok(())
    }

    /// A counter's value; `None` if absent or a group.
    pub fn get(&self, path: &str) -> Option<u64> {
        let mut tree = self;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            let node = tree.find(part)?;
            match (node, parts.peek().is_some()) {
                (StatsNode::Counter(v), false) => return Some(*v),
                (StatsNode::Group(g), true) => tree = g,
                _ => return None,
            }
        }
        None
    }

    /// Adds every counter of `other` into this tree; counters new to this
    /// tree are appended in `other`'s order.
    pub fn merge(&mut self, other: &StatsTree) -> Result<(), StatsError> {
        for (path, v) in other.counters() {
            self.add(&path, v)?;
        }
        Ok(())
    }

    /// Sorts every level by name (byte order), for a canonical layout.
    pub fn sort(&mut self) {
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, node) in &mut self.entries {
            if let StatsNode::Group(g) = node {
                g.sort();
            }
        }
    }

    /// Every counter as (dotted path, value), depth first, in tree order.
    pub fn counters(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut prefix = String::new();
        self.collect(&mut prefix, &mut out);
        out
    }

    fn collect(&self, prefix: &mut String, out: &mut Vec<(String, u64)>) {
        for (name, node) in &self.entries {
            let len = prefix.len();
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(name);
            match node {
                StatsNode::Counter(v) => out.push((prefix.clone(), *v)),
                StatsNode::Group(g) => g.collect(prefix, out),
            }
            prefix.truncate(len);
        }
    }

    fn find(&self, name: &str) -> Option<&StatsNode> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn counter_mut(&mut self, path: &str) -> Result<&mut u64, StatsError> {
        if path.split('.').any(str::is_empty) {
            return Err(StatsError::EmptyComponent {
                path: path.to_string(),
            });
        }
        let mut tree = self;
        let mut consumed = 0usize;
        let mut parts = path.split('.').peekable();
        loop {
            // `path` is non-empty here, so the iterator yields at least once.
            let Some(part) = parts.next() else {
                return Err(StatsError::EmptyComponent {
                    path: path.to_string(),
                });
            };
            consumed += part.len() + usize::from(consumed > 0);
            let last = parts.peek().is_none();
            let idx = match tree.entries.iter().position(|(n, _)| n == part) {
                Some(i) => i,
                None => {
                    let node = if last {
                        StatsNode::Counter(0)
                    } else {
                        StatsNode::Group(StatsTree::new())
                    };
                    tree.entries.push((part.to_string(), node));
                    tree.entries.len() - 1
                }
            };
            match (&mut tree.entries[idx].1, last) {
                (StatsNode::Counter(v), true) => return Ok(v),
                (StatsNode::Group(g), false) => tree = g,
                _ => {
                    return Err(StatsError::Conflict {
                        path: path.to_string(),
                        existing: path[..consumed].to_string(),
                    })
                }
            }
        }
    }
}

impl Serialize for StatsTree {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.entries.len()))?;
        for (name, node) in &self.entries {
            map.serialize_entry(name, node)?;
        }
        map.end()
    }
}

impl Serialize for StatsNode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StatsNode::Counter(v) => s.serialize_u64(*v),
            StatsNode::Group(g) => g.serialize(s),
        }
    }
}

/// How [`write_stats_log_with`] lays out a stats.log block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsLogOptions {
    /// Print the `Date: ... (uptime: ...)` header line: (time in seconds
    /// since the epoch, printed in UTC; uptime in seconds). Leave `None` for
    /// a block that is the same from run to run.
    pub date: Option<(i64, u64)>,
    /// Print counters whose value is 0 (Suricata's `null-values`; off by
    /// default, as in Suricata).
    pub null_values: bool,
}

/// Suricata's stats.log separator line.
const SEPARATOR: &str =
    "---------------------------------------------------------------------------------------------------";
const TM_NAME: &str = "Total";

/// Writes one stats.log block in Suricata's table layout, without a date
/// line and without zero counters, followed by `extra` rows (e.g. timings)
/// in the same layout:
///
/// ```text
/// Counter                                                      | TM Name                   | Value
/// decoder.pkts                                                 | Total                     | 123
/// ```
pub fn write_stats_log<W: Write + ?Sized>(
    w: &mut W,
    tree: &StatsTree,
    extra: &[(&str, String)],
) -> io::Result<()> {
    write_stats_log_with(w, tree, extra, &StatsLogOptions::default())
}

/// [`write_stats_log`] with options.
pub fn write_stats_log_with<W: Write + ?Sized>(
    w: &mut W,
    tree: &StatsTree,
    extra: &[(&str, String)],
    opts: &StatsLogOptions,
) -> io::Result<()> {
    writeln!(w, "{SEPARATOR}")?;
    if let Some((secs, uptime)) = opts.date {
        w.write_all(b"Date: ")?;
        write_statslog_date(w, secs)?;
        writeln!(
            w,
            " (uptime: {}d, {:02}h {:02}m {:02}s)",
            uptime / 86_400,
            uptime / 3600 % 24,
            uptime / 60 % 60,
            uptime % 60
        )?;
        writeln!(w, "{SEPARATOR}")?;
    }
    writeln!(w, "{:<60} | {:<25} | Value", "Counter", "TM Name")?;
    writeln!(w, "{SEPARATOR}")?;
    for (name, value) in tree.counters() {
        if value == 0 && !opts.null_values {
            continue;
        }
        writeln!(w, "{name:<60} | {TM_NAME:<25} | {value}")?;
    }
    for (name, value) in extra {
        writeln!(w, "{name:<60} | {TM_NAME:<25} | {value}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separator_is_suricatas_99_dashes() {
        assert_eq!(SEPARATOR.len(), 99);
        assert!(SEPARATOR.bytes().all(|b| b == b'-'));
    }

    #[test]
    fn paths_and_conflicts() {
        let mut t = StatsTree::new();
        t.add("decoder.pkts", 2).unwrap();
        t.add("decoder.pkts", 3).unwrap();
        t.set_max("decoder.max_pkt_size", 60).unwrap();
        t.set_max("decoder.max_pkt_size", 40).unwrap();
        assert_eq!(t.get("decoder.pkts"), Some(5));
        assert_eq!(t.get("decoder.max_pkt_size"), Some(60));
        assert_eq!(t.get("decoder"), None);
        assert_eq!(t.get("decoder.pkts.x"), None);
        assert_eq!(t.get("nope"), None);
        assert_eq!(
            t.set("decoder.pkts.ipv4", 1),
            Err(StatsError::Conflict {
                path: "decoder.pkts.ipv4".into(),
                existing: "decoder.pkts".into()
            })
        );
        assert_eq!(
            t.set("decoder", 1),
            Err(StatsError::Conflict {
                path: "decoder".into(),
                existing: "decoder".into()
            })
        );
        assert!(matches!(
            t.set("a..b", 1),
            Err(StatsError::EmptyComponent { .. })
        ));
        assert!(matches!(
            t.set("", 1),
            Err(StatsError::EmptyComponent { .. })
        ));
        assert!(matches!(
            t.set("a.", 1),
            Err(StatsError::EmptyComponent { .. })
        ));
        t.add("x", u64::MAX).unwrap();
        t.add("x", 1).unwrap();
        assert_eq!(t.get("x"), Some(u64::MAX));
    }

    #[test]
    fn merge_and_sort() {
        let mut a = StatsTree::new();
        a.add("flow.total", 1).unwrap();
        let mut b = StatsTree::new();
        b.add("decoder.pkts", 7).unwrap();
        b.add("flow.total", 2).unwrap();
        a.merge(&b).unwrap();
        assert_eq!(
            a.counters(),
            vec![
                ("flow.total".to_string(), 3),
                ("decoder.pkts".to_string(), 7)
            ]
        );
        a.sort();
        assert_eq!(
            a.counters(),
            vec![
                ("decoder.pkts".to_string(), 7),
                ("flow.total".to_string(), 3)
            ]
        );
    }
}
