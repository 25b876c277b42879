//! `threshold` and `detection_filter`: rate limits on alerts, keyed by
//! source, destination, both, rule or flow.
//!
//! This state spans flows, and flows live on different workers, so it is
//! applied where alerts are merged back into input order: one tracker sees
//! every alert in packet order, whatever the number of workers, and the
//! result is repeatable.

use std::collections::HashMap;
use std::net::IpAddr;

use vigil_rules::{Threshold, ThresholdKind, Track};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Addr(IpAddr),
    Pair(IpAddr, IpAddr),
    Rule,
    Flow(u64),
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start_ns: i64,
    count: u32,
    /// `both`: already alerted in this window.
    alerted: bool,
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
        let w = self.state.entry(key).or_insert(Window {
            start_ns: k.ts_ns,
            count: 0,
            alerted: false,
        });
        if k.ts_ns - w.start_ns >= secs && secs > 0 {
            *w = Window {
                start_ns: k.ts_ns,
                count: 0,
                alerted: false,
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn t(kind: ThresholdKind, count: u32, seconds: u32) -> Threshold {
        Threshold {
            kind,
            track: Track::BySrc,
            count,
            seconds,
        }
    }

    fn key(src: u8, sec: i64) -> AlertKey {
        AlertKey {
            src: IpAddr::from([10, 0, 0, src]),
            dst: IpAddr::from([10, 0, 0, 99]),
            flow_id: 1,
            ts_ns: sec * 1_000_000_000,
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
}
