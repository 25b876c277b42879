//! `threshold` and `detection_filter`: rate limits on alerts, keyed by
//! source, destination, both, rule or flow.
//!
//! This state spans flows, and flows live on different workers, so it is
//! applied where alerts are merged back into input order: one tracker sees
//! every alert in packet order, whatever the number of workers, and the
//! result is repeatable.

use std::collections::HashMap;
use std::net::IpAddr;

use vigil_rules::{Threshold, ThresholdConfig, ThresholdEntry, ThresholdKind, Track, UniqueOn};

use crate::DetectEngine;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Addr(IpAddr),
    Pair(IpAddr, IpAddr),
    Rule,
    Flow(u64),
}

#[derive(Debug, Clone)]
struct Window {
    start_ns: i64,
    count: u32,
    /// `both`: already alerted in this window.
    alerted: bool,
    /// `backoff`: the match number that alerts next.
    next: u64,
    /// `unique_on`: the distinct ports seen in this window, sorted.
    ports: Vec<u16>,
}

impl Window {
    fn new(start_ns: i64, t: &Threshold) -> Window {
        Window {
            start_ns,
            count: 0,
            alerted: false,
            next: t.count as u64,
            ports: Vec::new(),
        }
    }
}

/// Tracks threshold state for all rules.
#[derive(Debug, Default)]
pub struct ThresholdTracker {
    state: HashMap<(u32, bool, Key), Window>,
    /// Entries dropped by the periodic sweep (bounded memory).
    pub expired: u64,
    last_sweep_ns: i64,
}

/// What the alert's packet looked like, for tracking.
#[derive(Debug, Clone, Copy)]
pub struct AlertKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub flow_id: u64,
    pub ts_ns: i64,
    /// Source and destination ports (0 without), for `unique_on`.
    pub sp: u16,
    pub dp: u16,
}

impl ThresholdTracker {
    fn key(t: &Threshold, k: &AlertKey) -> Key {
        match t.track {
            Track::BySrc => Key::Addr(k.src),
            Track::ByDst => Key::Addr(k.dst),
            Track::ByBoth => {
                let (a, b) = if k.src <= k.dst {
                    (k.src, k.dst)
                } else {
                    (k.dst, k.src)
                };
                Key::Pair(a, b)
            }
            Track::ByRule => Key::Rule,
            Track::ByFlow => Key::Flow(k.flow_id),
        }
    }

    /// Whether an alert of rule `rule` passes its threshold (`Some`) and
    /// detection filter. Call once per match, in input order.
    pub fn allow(
        &mut self,
        rule: u32,
        threshold: Option<&Threshold>,
        filter: Option<&Threshold>,
        k: &AlertKey,
    ) -> bool {
        self.sweep(k.ts_ns);
        let mut ok = true;
        if let Some(f) = filter {
            ok &= self.step(rule, true, f, k);
        }
        if ok {
            if let Some(t) = threshold {
                ok &= self.step(rule, false, t, k);
            }
        }
        ok
    }

    fn step(&mut self, rule: u32, filter: bool, t: &Threshold, k: &AlertKey) -> bool {
        let key = (rule, filter, Self::key(t, k));
        let secs = t.seconds as i64 * 1_000_000_000;
        let w = self
            .state
            .entry(key)
            .or_insert_with(|| Window::new(k.ts_ns, t));
        if k.ts_ns - w.start_ns >= secs && secs > 0 {
            *w = Window::new(k.ts_ns, t);
        }
        if let Some(u) = t.unique_on {
            // Distinct counting: alert once more than `count` distinct
            // ports were seen in the window.
            let port = match u {
                UniqueOn::SrcPort => k.sp,
                UniqueOn::DstPort => k.dp,
            };
            if let Err(i) = w.ports.binary_search(&port) {
                w.ports.insert(i, port);
            }
            return w.ports.len() as u64 > t.count as u64;
        }
        w.count = w.count.saturating_add(1);
        match t.kind {
            // At most `count` alerts per window.
            ThresholdKind::Limit => w.count <= t.count,
            // Every `count`-th match in the window alerts.
            ThresholdKind::Threshold => {
                if w.count >= t.count {
                    w.count = 0;
                    true
                } else {
                    false
                }
            }
            // Once per window, after `count` matches.
            ThresholdKind::Both => {
                if w.count >= t.count && !w.alerted {
                    w.alerted = true;
                    true
                } else {
                    false
                }
            }
            // Match number count, count*m, count*m^2, ... alerts.
            ThresholdKind::Backoff => {
                if w.count as u64 >= w.next {
                    w.next = w.next.saturating_mul(t.multiplier.max(2) as u64);
                    true
                } else {
                    false
                }
            }
            // Every match after the first `count` in the window.
            ThresholdKind::DetectionFilter => w.count > t.count,
        }
    }

    /// Drops windows idle for over an hour of packet time (bounded memory
    /// under address floods); cheap, amortised over many calls.
    fn sweep(&mut self, now_ns: i64) {
        const HOUR: i64 = 3600 * 1_000_000_000;
        if now_ns - self.last_sweep_ns < HOUR / 6 || self.state.len() < 100_000 {
            return;
        }
        self.last_sweep_ns = now_ns;
        let before = self.state.len();
        self.state.retain(|_, w| now_ns - w.start_ns < HOUR * 24);
        self.expired += (before - self.state.len()) as u64;
    }
}

/// What applying a `threshold.config` did, for the load summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ThresholdApplyReport {
    /// Rules whose threshold was set or replaced.
    pub thresholds: usize,
    /// Rules turned into `noalert` by a plain suppress.
    pub suppressed_rules: usize,
    /// Rules given an address suppression.
    pub address_suppressions: usize,
    /// Entries that matched no loaded rule, and `rate_filter` entries
    /// (not applied), as `file:line: message`.
    pub warnings: Vec<String>,
}

impl DetectEngine {
    /// Applies `threshold.config` entries to the compiled rules, as
    /// Suricata does:
    ///
    /// - `threshold` / `event_filter` for one sid replaces the rule's own
    ///   `threshold` and `detection_filter`; with gen_id 0 or sig_id 0 it
    ///   applies only to rules that have neither;
    /// - `suppress` without `track` makes the rule `noalert` (flowbits and
    ///   other side effects still happen); with `track`/`ip` it drops the
    ///   alerts whose tracked address is in `ip`;
    /// - `rate_filter` is reported and ignored.
    pub fn apply_threshold_config(&mut self, cfg: &ThresholdConfig) -> ThresholdApplyReport {
        let mut rep = ThresholdApplyReport::default();
        // Specific entries win over global ones whatever their order.
        let mut specific: Vec<&ThresholdEntry> = Vec::new();
        let mut global: Vec<&ThresholdEntry> = Vec::new();
        for e in &cfg.entries {
            let (g, s) = e.ids();
            if g != 0 && s != 0 {
                specific.push(e);
            } else {
                global.push(e);
            }
        }
        let mut set_by_specific = vec![false; self.rules.len()];
        for e in specific.iter().chain(global.iter()) {
            let mut hits = 0usize;
            for (i, r) in self.rules.iter_mut().enumerate() {
                if !e.applies_to(r.gid, r.sid) {
                    continue;
                }
                hits += 1;
                let (g, s) = e.ids();
                let is_specific = g != 0 && s != 0;
                match e {
                    ThresholdEntry::Threshold { threshold, .. } => {
                        if is_specific {
                            if set_by_specific[i] {
                                continue;
                            }
                            set_by_specific[i] = true;
                        } else if set_by_specific[i]
                            || r.threshold.is_some()
                            || r.detection_filter.is_some()
                        {
                            continue;
                        }
                        r.threshold = Some(*threshold);
                        r.detection_filter = None;
                        rep.thresholds += 1;
                    }
                    ThresholdEntry::Suppress { track: None, .. } => {
                        if !r.noalert {
                            r.noalert = true;
                            rep.suppressed_rules += 1;
                        }
                    }
                    ThresholdEntry::Suppress {
                        track: Some((t, ip)),
                        ..
                    } => {
                        r.suppress.push((*t, ip.compile()));
                        rep.address_suppressions += 1;
                    }
                    ThresholdEntry::RateFilter { .. } => {}
                }
            }
            let (g, s) = e.ids();
            match e {
                ThresholdEntry::RateFilter { new_action, .. } => rep.warnings.push(format!(
                    "{}:{}: rate_filter gen_id {g}, sig_id {s} (new_action {new_action}) is not applied yet",
                    cfg.file,
                    e.line()
                )),
                _ if hits == 0 && s != 0 => rep.warnings.push(format!(
                    "{}:{}: no loaded rule has gen_id {g}, sig_id {s}",
                    cfg.file,
                    e.line()
                )),
                _ => {}
            }
        }
        rep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(kind: ThresholdKind, count: u32, seconds: u32) -> Threshold {
        Threshold {
            kind,
            track: Track::BySrc,
            count,
            seconds,
            multiplier: 0,
            unique_on: None,
        }
    }

    fn key(src: u8, sec: i64) -> AlertKey {
        AlertKey {
            src: IpAddr::from([10, 0, 0, src]),
            dst: IpAddr::from([10, 0, 0, 99]),
            flow_id: 1,
            ts_ns: sec * 1_000_000_000,
            sp: 1000,
            dp: 80,
        }
    }

    fn run(th: Threshold, events: &[(u8, i64)]) -> Vec<bool> {
        let mut tr = ThresholdTracker::default();
        events
            .iter()
            .map(|&(s, ts)| tr.allow(1, Some(&th), None, &key(s, ts)))
            .collect()
    }

    #[test]
    fn limit_per_source_and_window() {
        let th = t(ThresholdKind::Limit, 1, 60);
        assert_eq!(
            run(th, &[(1, 0), (1, 1), (2, 2), (1, 61), (1, 62)]),
            vec![true, false, true, true, false]
        );
    }

    #[test]
    fn threshold_every_nth() {
        let th = t(ThresholdKind::Threshold, 3, 60);
        assert_eq!(
            run(th, &[(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5)]),
            vec![false, false, true, false, false, true]
        );
    }

    #[test]
    fn both_once_after_count() {
        let th = t(ThresholdKind::Both, 2, 60);
        assert_eq!(
            run(th, &[(1, 0), (1, 1), (1, 2), (1, 70), (1, 71)]),
            vec![false, true, false, false, true]
        );
    }

    #[test]
    fn detection_filter_after_count() {
        let f = t(ThresholdKind::DetectionFilter, 2, 60);
        let mut tr = ThresholdTracker::default();
        let got: Vec<bool> = (0..4)
            .map(|i| tr.allow(1, None, Some(&f), &key(1, i)))
            .collect();
        assert_eq!(got, vec![false, false, true, true]);
    }

    #[test]
    fn backoff_powers() {
        let alerts_at = |count: u32, m: u32, n: usize| -> Vec<usize> {
            let th = Threshold {
                kind: ThresholdKind::Backoff,
                track: Track::ByFlow,
                count,
                seconds: 0,
                multiplier: m,
                unique_on: None,
            };
            let mut tr = ThresholdTracker::default();
            (1..=n)
                .filter(|&i| tr.allow(1, Some(&th), None, &key(1, i as i64)))
                .collect()
        };
        assert_eq!(alerts_at(1, 2, 40), vec![1, 2, 4, 8, 16, 32]);
        assert_eq!(alerts_at(3, 2, 30), vec![3, 6, 12, 24]);
        assert_eq!(alerts_at(5, 5, 200), vec![5, 25, 125]);
        // The sv test's numbers: 6676 matches on one flow.
        assert_eq!(alerts_at(1, 2, 6676).len(), 13);
        assert_eq!(alerts_at(3, 2, 6676).len(), 12);
        assert_eq!(alerts_at(5, 5, 6676).len(), 5);
    }

    #[test]
    fn unique_on_counts_distinct_ports() {
        let f = Threshold {
            kind: ThresholdKind::DetectionFilter,
            track: Track::ByDst,
            count: 2,
            seconds: 60,
            multiplier: 0,
            unique_on: Some(UniqueOn::DstPort),
        };
        let mut tr = ThresholdTracker::default();
        let mut at = |dp: u16, sec: i64| {
            let mut k = key(1, sec);
            k.dp = dp;
            tr.allow(1, None, Some(&f), &k)
        };
        // Duplicates do not count; the third distinct port alerts.
        assert!(!at(80, 0));
        assert!(!at(80, 1));
        assert!(!at(81, 2));
        assert!(!at(81, 3));
        assert!(at(82, 4));
        assert!(at(80, 5));
        // A new window starts over.
        assert!(!at(83, 70));
    }
}
