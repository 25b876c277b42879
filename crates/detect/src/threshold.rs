//! `threshold` and `detection_filter`: rate limits on alerts, keyed by
//! source, destination, both, rule or flow; and `threshold.config`
//! `rate_filter`: a rule's action changed while it matches too often.
//!
//! This state spans flows, and flows live on different workers, so it is
//! applied where alerts are merged back into input order: one tracker sees
//! every alert in packet order, whatever the number of workers, and the
//! result is repeatable.

use std::collections::HashMap;
use std::net::IpAddr;

use vigil_rules::{
    Action, Threshold, ThresholdConfig, ThresholdEntry, ThresholdKind, Track, UniqueOn,
};

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

/// A `threshold.config` `rate_filter` entry, as applied to a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateFilter {
    /// `by_src`, `by_dst`, `by_both` or `by_rule`.
    pub track: Track,
    /// Matches allowed within `seconds` before the action changes.
    pub count: u32,
    pub seconds: u32,
    /// The action while the filter is on: `Alert`, `Drop`, `Reject` or
    /// `Pass`; `None` for `sdrop` and `log`, which Suricata accepts and
    /// leaves the action as it is.
    pub new_action: Option<Action>,
    /// How long (seconds) the new action lasts once the rate is exceeded.
    pub timeout: u32,
}

impl RateFilter {
    /// The action a `new_action` value names (see [`RateFilter::new_action`]).
    pub fn action_named(name: &str) -> Option<Action> {
        match name {
            "alert" => Some(Action::Alert),
            "drop" => Some(Action::Drop),
            "reject" => Some(Action::Reject),
            "pass" => Some(Action::Pass),
            _ => None,
        }
    }
}

/// Rate filter state of one rule and key (Suricata's threshold entry).
#[derive(Debug, Clone)]
struct Rate {
    /// Start of the counting window (ns).
    start_ns: i64,
    count: u32,
    /// Second at which the new action was switched on (`None`: off).
    on_since: Option<i64>,
}

/// Tracks threshold state for all rules.
#[derive(Debug, Default)]
pub struct ThresholdTracker {
    state: HashMap<(u32, bool, Key), Window>,
    rates: HashMap<(u32, Key), Rate>,
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
        Self::track_key(t.track, k)
    }

    fn track_key(track: Track, k: &AlertKey) -> Key {
        match track {
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

    /// The action a `rate_filter` gives an alert of rule `rule` that its
    /// threshold let through: `Some(new action)` while the filter is on
    /// for the alert's key, `None` when the rule's own action stands.
    /// Call once per such alert, in input order.
    ///
    /// Suricata's semantics: the first match of a key opens a window of
    /// `seconds`; a match within it that makes the count exceed `count`
    /// switches the new action on (at that match's second) for `timeout`
    /// seconds; the first match after that (more than `timeout` seconds
    /// later) switches it off and keeps the rule's action; a match after
    /// the window starts a new one.
    pub fn rate_filter(&mut self, rule: u32, rf: &RateFilter, k: &AlertKey) -> Option<Action> {
        self.sweep(k.ts_ns);
        let sec = k.ts_ns.div_euclid(1_000_000_000);
        let key = (rule, Self::track_key(rf.track, k));
        let Some(r) = self.rates.get_mut(&key) else {
            self.rates.insert(
                key,
                Rate {
                    start_ns: k.ts_ns,
                    count: 1,
                    on_since: None,
                },
            );
            return None;
        };
        let on = match r.on_since {
            Some(since) if sec - since > i64::from(rf.timeout) => {
                // Timed out: this match keeps the rule's action.
                r.on_since = None;
                false
            }
            Some(_) => true,
            None => {
                if k.ts_ns <= r.start_ns + i64::from(rf.seconds) * 1_000_000_000 {
                    r.count = r.count.saturating_add(1);
                    if r.count > rf.count {
                        r.on_since = Some(sec);
                        true
                    } else {
                        false
                    }
                } else {
                    r.start_ns = k.ts_ns;
                    r.count = 1;
                    false
                }
            }
        };
        if on {
            rf.new_action
        } else {
            None
        }
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
        if now_ns - self.last_sweep_ns < HOUR / 6 || self.state.len() + self.rates.len() < 100_000 {
            return;
        }
        self.last_sweep_ns = now_ns;
        let before = self.state.len() + self.rates.len();
        self.state.retain(|_, w| now_ns - w.start_ns < HOUR * 24);
        // A rate entry with its new action on is kept while it may be.
        self.rates.retain(|_, r| {
            now_ns - r.start_ns < HOUR * 24
                || r.on_since
                    .is_some_and(|s| now_ns / 1_000_000_000 - s < 24 * 3600)
        });
        self.expired += (before - self.state.len() - self.rates.len()) as u64;
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
    /// Rules given a rate filter.
    pub rate_filters: usize,
    /// Entries that matched no loaded rule, as `file:line: message`.
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
    /// - `rate_filter` gives the rule a [`RateFilter`] (one per rule: a
    ///   specific entry wins over a global one, the first of each kind
    ///   over later ones), applied after its threshold.
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
        let mut rate_set = vec![false; self.rules.len()];
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
                    ThresholdEntry::RateFilter {
                        track,
                        count,
                        seconds,
                        new_action,
                        timeout,
                        ..
                    } => {
                        if rate_set[i] {
                            continue;
                        }
                        rate_set[i] = true;
                        r.rate_filter = Some(RateFilter {
                            track: *track,
                            count: *count,
                            seconds: *seconds,
                            new_action: RateFilter::action_named(new_action),
                            timeout: *timeout,
                        });
                        rep.rate_filters += 1;
                    }
                }
            }
            let (g, s) = e.ids();
            match e {
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

    fn rf(track: Track, count: u32, seconds: u32, timeout: u32) -> RateFilter {
        RateFilter {
            track,
            count,
            seconds,
            new_action: Some(Action::Drop),
            timeout,
        }
    }

    /// An alert from `src` to `dst` at `ms` milliseconds.
    fn at(src: u8, dst: u8, ms: i64) -> AlertKey {
        AlertKey {
            src: IpAddr::from([10, 0, 0, src]),
            dst: IpAddr::from([10, 0, 1, dst]),
            flow_id: u64::from(src),
            ts_ns: ms * 1_000_000,
            sp: 1000,
            dp: 80,
        }
    }

    fn dropped(tr: &mut ThresholdTracker, f: &RateFilter, k: AlertKey) -> bool {
        match tr.rate_filter(7, f, &k) {
            Some(Action::Drop) => true,
            None => false,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rate_filter_switches_on_after_count_within_seconds() {
        let f = rf(Track::BySrc, 2, 10, 5);
        let mut tr = ThresholdTracker::default();
        // Matches 1 and 2 keep the action; the third within 10 s exceeds
        // count 2 and switches the new action on.
        assert!(!dropped(&mut tr, &f, at(1, 1, 0)));
        assert!(!dropped(&mut tr, &f, at(1, 1, 1000)));
        assert!(dropped(&mut tr, &f, at(1, 1, 2000)));
        assert!(dropped(&mut tr, &f, at(1, 1, 3000)));
        // On at second 2 for 5 s: still on at second 7, off (this match
        // keeps the rule's action) at second 8.
        assert!(dropped(&mut tr, &f, at(1, 1, 7000)));
        assert!(!dropped(&mut tr, &f, at(1, 1, 8000)));
        // The window (from second 0) has passed: a new one starts.
        assert!(!dropped(&mut tr, &f, at(1, 1, 11_000)));
        assert!(!dropped(&mut tr, &f, at(1, 1, 12_000)));
        assert!(dropped(&mut tr, &f, at(1, 1, 13_000)));
    }

    #[test]
    fn rate_filter_slow_matches_never_switch_on() {
        let f = rf(Track::BySrc, 1, 2, 60);
        let mut tr = ThresholdTracker::default();
        for s in 0..10 {
            assert!(!dropped(&mut tr, &f, at(1, 1, s * 3000)), "match {s}");
        }
    }

    #[test]
    fn rate_filter_tracks_by_src_dst_both_rule() {
        // count 1: the second match of a key within the window is on.
        let second_match_on = |track: Track, a: AlertKey, b: AlertKey| -> bool {
            let f = rf(track, 1, 60, 60);
            let mut tr = ThresholdTracker::default();
            assert!(!dropped(&mut tr, &f, a));
            dropped(&mut tr, &f, b)
        };
        // by_src: same source, other destination counts together; another
        // source does not.
        assert!(second_match_on(Track::BySrc, at(1, 1, 0), at(1, 2, 1)));
        assert!(!second_match_on(Track::BySrc, at(1, 1, 0), at(2, 1, 1)));
        // by_dst: the other way round.
        assert!(second_match_on(Track::ByDst, at(1, 1, 0), at(2, 1, 1)));
        assert!(!second_match_on(Track::ByDst, at(1, 1, 0), at(1, 2, 1)));
        // by_both: the address pair in either direction.
        let mut back = at(1, 1, 1);
        std::mem::swap(&mut back.src, &mut back.dst);
        assert!(second_match_on(Track::ByBoth, at(1, 1, 0), back));
        assert!(!second_match_on(Track::ByBoth, at(1, 1, 0), at(1, 2, 1)));
        // by_rule: every match of the rule.
        assert!(second_match_on(Track::ByRule, at(1, 1, 0), at(2, 2, 1)));
        // Rules are tracked apart.
        let f = rf(Track::ByRule, 1, 60, 60);
        let mut tr = ThresholdTracker::default();
        assert_eq!(tr.rate_filter(1, &f, &at(1, 1, 0)), None);
        assert_eq!(tr.rate_filter(2, &f, &at(1, 1, 1)), None);
        assert_eq!(tr.rate_filter(1, &f, &at(1, 1, 2)), Some(Action::Drop));
    }

    #[test]
    fn rate_filter_keys_time_out_apart() {
        let f = rf(Track::BySrc, 1, 10, 3);
        let mut tr = ThresholdTracker::default();
        assert!(!dropped(&mut tr, &f, at(1, 1, 0)));
        assert!(dropped(&mut tr, &f, at(1, 1, 500)));
        assert!(!dropped(&mut tr, &f, at(2, 1, 1000)));
        assert!(dropped(&mut tr, &f, at(2, 1, 2500)));
        // Source 1 went on at second 0, source 2 at second 2: at second 4
        // the first has timed out, the second not.
        assert!(!dropped(&mut tr, &f, at(1, 1, 4000)));
        assert!(dropped(&mut tr, &f, at(2, 1, 4000)));
        assert!(!dropped(&mut tr, &f, at(2, 1, 6000)));
    }

    #[test]
    fn rate_filter_new_actions() {
        for (name, want) in [
            ("alert", Some(Action::Alert)),
            ("drop", Some(Action::Drop)),
            ("reject", Some(Action::Reject)),
            ("pass", Some(Action::Pass)),
            ("sdrop", None),
            ("log", None),
        ] {
            assert_eq!(RateFilter::action_named(name), want, "{name}");
            let f = RateFilter {
                new_action: want,
                ..rf(Track::ByRule, 0, 1, 1)
            };
            let mut tr = ThresholdTracker::default();
            assert_eq!(tr.rate_filter(1, &f, &at(1, 1, 0)), None);
            assert_eq!(tr.rate_filter(1, &f, &at(1, 1, 1)), want, "{name}");
        }
    }
}
