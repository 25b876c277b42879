//! Overlap policies for TCP segments: when a new segment covers bytes that
//! an earlier one already supplied, which bytes does the target host keep?
//!
//! Attackers send overlapping segments with different data so that a
//! monitor that resolves the overlap differently from the target host sees
//! another stream (Ptacek and Newsham; Novak and Sturges, "Target-Based TCP
//! Stream Reassembly"). The policy decides, for one new segment `N` and one
//! earlier segment `O` it overlaps, whether `N`'s bytes win on the overlap:
//!
//! The table follows Suricata's IDS-mode rules (`stream-tcp-list.c`):
//!
//! | policy | new data wins when |
//! |---|---|
//! | `first` (also `vista`) | never (the original is kept) |
//! | `last` | always |
//! | `bsd` (default; also `windows`, `windows2k3`, `macos`, `irix`, `hpux10`) | `N` starts before `O` |
//! | `linux` | `N` starts before `O`, or at the same place and ends after it |
//! | `old-linux` | `N` starts before `O`, or at the same place and ends at or after it |
//! | `solaris` (also `hpux11`) | `N` ends after `O`, or ends at its end and starts at or before it |
//!
//! A byte covered by several earlier segments takes the new data only if
//! the new segment wins against every one of them.

/// A reassembly overlap policy (Suricata's `os-policy` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverlapPolicy {
    First,
    Last,
    #[default]
    Bsd,
    Linux,
    OldLinux,
    Solaris,
}

impl OverlapPolicy {
    /// Every policy (fuzz targets try each).
    pub const ALL: [OverlapPolicy; 6] = [
        OverlapPolicy::First,
        OverlapPolicy::Last,
        OverlapPolicy::Bsd,
        OverlapPolicy::Linux,
        OverlapPolicy::OldLinux,
        OverlapPolicy::Solaris,
    ];

    /// Parses a policy or a target OS name as Suricata's host-os-policy
    /// section spells them.
    pub fn from_name(s: &str) -> Option<OverlapPolicy> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "first" | "vista" => OverlapPolicy::First,
            "last" => OverlapPolicy::Last,
            "bsd" | "bsd-right" | "macos" | "irix" | "hpux10" | "windows" | "windows2k3"
            | "default" => OverlapPolicy::Bsd,
            "linux" => OverlapPolicy::Linux,
            "old-linux" | "old_linux" => OverlapPolicy::OldLinux,
            "solaris" | "hpux11" => OverlapPolicy::Solaris,
            _ => return None,
        })
    }

    /// Whether the policy needs the boundaries of earlier segments (all but
    /// `first` and `last`).
    pub fn needs_segments(self) -> bool {
        !matches!(self, OverlapPolicy::First | OverlapPolicy::Last)
    }

    /// Does new segment `[ns, ne)` win over earlier segment `[os, oe)` on
    /// the bytes they share?
    #[inline]
    pub fn new_wins(self, ns: u64, ne: u64, os: u64, oe: u64) -> bool {
        match self {
            OverlapPolicy::First => false,
            OverlapPolicy::Last => true,
            OverlapPolicy::Bsd => ns < os,
            OverlapPolicy::Linux => ns < os || (ns == os && ne > oe),
            OverlapPolicy::OldLinux => ns < os || (ns == os && ne >= oe),
            OverlapPolicy::Solaris => ne > oe || (ne == oe && ns <= os),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(OverlapPolicy::from_name("BSD"), Some(OverlapPolicy::Bsd));
        assert_eq!(
            OverlapPolicy::from_name("vista"),
            Some(OverlapPolicy::First)
        );
        assert_eq!(
            OverlapPolicy::from_name("windows"),
            Some(OverlapPolicy::Bsd)
        );
        assert_eq!(
            OverlapPolicy::from_name("old-linux"),
            Some(OverlapPolicy::OldLinux)
        );
        assert_eq!(OverlapPolicy::from_name("beos"), None);
    }

    #[test]
    fn pairwise_rules() {
        use OverlapPolicy::*;
        // (policy, new, old, new wins)
        type Case = (OverlapPolicy, (u64, u64), (u64, u64), bool);
        let t: &[Case] = &[
            (First, (0, 10), (5, 8), false),
            (Last, (6, 7), (5, 8), true),
            (Bsd, (0, 6), (5, 8), true),
            (Bsd, (5, 9), (5, 8), false),
            (Bsd, (6, 9), (5, 8), false),
            (Linux, (5, 9), (5, 8), true),
            (Linux, (5, 7), (5, 8), false),
            (Linux, (4, 6), (5, 8), true),
            (Linux, (5, 8), (5, 8), false),
            (OldLinux, (5, 8), (5, 8), true),
            (OldLinux, (5, 7), (5, 8), false),
            (Solaris, (4, 8), (5, 8), true),
            (Solaris, (5, 9), (5, 8), true),
            (Solaris, (5, 8), (5, 8), true),
            (Solaris, (6, 9), (5, 8), true),
            (Solaris, (6, 8), (5, 8), false),
            (Solaris, (4, 7), (5, 8), false),
        ];
        for &(p, (ns, ne), (os, oe), want) in t {
            assert_eq!(
                p.new_wins(ns, ne, os, oe),
                want,
                "{p:?} new {ns}..{ne} old {os}..{oe}"
            );
        }
    }
}
