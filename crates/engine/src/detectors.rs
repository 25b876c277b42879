//! Built-in detectors that look across flows: port scans, address scans,
//! SYN floods and failed connections, by source host.
//!
//! The model is Bro's classic scan detector: count the distinct targets of
//! one scope in a time window, and raise once when the count reaches a
//! threshold. Workers raise connection events (a TCP connection attempt,
//! a TCP connection that never got established) as [`crate::OutKind::Conn`]
//! items in their output; the owner of the host scopes (the ordered merge
//! offline, the output thread live) feeds them here in input order, so
//! the result is the same for any worker count.
//!
//! | gid:sid | detector | scope | counts | default |
//! |---|---|---|---|---|
//! | 9000:1 | vertical port scan | `pair` (orig, resp) | distinct destination ports of failed connections | 15 in 300 s |
//! | 9000:2 | horizontal address scan | `orig` (orig, port) | distinct destination hosts of failed connections on one port | 25 in 300 s |
//! | 9000:3 | SYN flood | `orig` | connection attempts (SYNs that open a session) | 1000 in 10 s |
//! | 9000:4 | failed connections | `orig` | connections never established | 100 in 60 s |
//!
//! Only failed connections count for the scans, as in Bro: a client that
//! talks to many servers is not a scanner. Each scope alerts once per
//! window (a new window starts `seconds` after the first event of the
//! last). Every table is bounded (entries whose window passed are swept
//! each packet-time minute; beyond [`MAX_KEYS`] keys new keys are refused
//! and counted).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::net::IpAddr;

use vigil_detect::CompiledRule;

use crate::{AlertOut, Fold};

/// The gid of the built-in detectors' alerts.
pub const DETECTOR_GID: u32 = 9000;

/// Keys per detector table at most.
pub const MAX_KEYS: usize = 1 << 18;

/// A connection event a worker raises for the detectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnKind {
    /// A SYN opened a TCP session (`src` is the client).
    Attempt,
    /// A TCP session that began with a SYN ended without being
    /// established (no answer, or reset): raised when the flow ends.
    Failed,
}

/// A threshold: `count` in `seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub count: u32,
    pub seconds: u32,
}

/// Which detectors run, with their thresholds (`None`: off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectorConfig {
    pub port_scan: Option<Limit>,
    pub address_scan: Option<Limit>,
    pub syn_flood: Option<Limit>,
    pub failed_connections: Option<Limit>,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            port_scan: Some(Limit {
                count: 15,
                seconds: 300,
            }),
            address_scan: Some(Limit {
                count: 25,
                seconds: 300,
            }),
            syn_flood: Some(Limit {
                count: 1000,
                seconds: 10,
            }),
            failed_connections: Some(Limit {
                count: 100,
                seconds: 60,
            }),
        }
    }
}

impl DetectorConfig {
    /// Whether any detector runs (workers raise events only then).
    pub fn any(&self) -> bool {
        self.port_scan.is_some()
            || self.address_scan.is_some()
            || self.syn_flood.is_some()
            || self.failed_connections.is_some()
    }
}

/// The detectors, by signature id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detector {
    PortScan = 1,
    AddressScan = 2,
    SynFlood = 3,
    FailedConnections = 4,
}

impl Detector {
    pub const ALL: [Detector; 4] = [
        Detector::PortScan,
        Detector::AddressScan,
        Detector::SynFlood,
        Detector::FailedConnections,
    ];

    pub fn sid(self) -> u32 {
        self as u32
    }

    pub fn msg(self) -> &'static str {
        match self {
            Detector::PortScan => "VIGIL SCAN vertical port scan",
            Detector::AddressScan => "VIGIL SCAN horizontal address scan",
            Detector::SynFlood => "VIGIL DOS SYN flood by source",
            Detector::FailedConnections => "VIGIL SCAN failed connections by source",
        }
    }

    /// The scope whose state the detector counts in.
    pub fn scope(self) -> &'static str {
        match self {
            Detector::PortScan => "pair",
            _ => "orig",
        }
    }

    fn category(self) -> (&'static str, &'static str) {
        match self {
            Detector::SynFlood => ("attempted-dos", "Attempted Denial of Service"),
            _ => ("attempted-recon", "Attempted Information Leak"),
        }
    }
}

/// An alert a detector raised: on the event that reached the threshold.
#[derive(Debug, Clone)]
pub struct DetectorAlert {
    pub detector: Detector,
    /// What was counted when the threshold was reached.
    pub count: u32,
    pub limit: Limit,
}

/// Counters, for stats.log (`detect.detectors.*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DetectorStats {
    pub attempts: u64,
    pub failed: u64,
    /// Alerts raised, by detector (sid order).
    pub alerts: [u64; 4],
    /// New keys refused because a table was full.
    pub keys_refused: u64,
    /// Largest number of keys held in one table.
    pub keys_peak: u64,
}

#[derive(Debug)]
struct Window<T> {
    start_s: i64,
    /// Distinct items (scans) or nothing (counts), at most the threshold.
    seen: HashSet<T, Fold>,
    count: u32,
    alerted: bool,
}

/// One detector's table: per key, the window in progress.
#[derive(Debug)]
struct Table<K, T> {
    limit: Limit,
    windows: HashMap<K, Window<T>, Fold>,
    /// The second of the last sweep made because the table was full.
    full_sweep_s: i64,
}

impl<K: Hash + Eq + Copy, T: Hash + Eq> Table<K, T> {
    fn new(limit: Limit) -> Self {
        Table {
            limit,
            windows: HashMap::default(),
            full_sweep_s: i64::MIN,
        }
    }

    /// Counts `item` (distinct when `Some`) for `key` at second `now_s`:
    /// the count when this event reaches the threshold.
    fn add(
        &mut self,
        key: K,
        item: Option<T>,
        now_s: i64,
        stats: &mut DetectorStats,
    ) -> Option<u32> {
        let secs = self.limit.seconds.max(1) as i64;
        if !self.windows.contains_key(&key) && self.windows.len() >= MAX_KEYS {
            // At most one sweep per packet-time second when full.
            if self.full_sweep_s != now_s {
                self.full_sweep_s = now_s;
                self.sweep(now_s);
            }
            if self.windows.len() >= MAX_KEYS {
                stats.keys_refused += 1;
                return None;
            }
        }
        let held = self.windows.len() + usize::from(!self.windows.contains_key(&key));
        stats.keys_peak = stats.keys_peak.max(held as u64);
        let w = self.windows.entry(key).or_insert_with(|| Window {
            start_s: now_s,
            seen: HashSet::default(),
            count: 0,
            alerted: false,
        });
        if now_s - w.start_s >= secs {
            *w = Window {
                start_s: now_s,
                seen: HashSet::default(),
                count: 0,
                alerted: false,
            };
        }
        if w.alerted {
            return None;
        }
        match item {
            Some(t) => {
                if !w.seen.insert(t) {
                    return None;
                }
                w.count = w.seen.len() as u32;
            }
            None => w.count += 1,
        }
        if w.count >= self.limit.count.max(1) {
            w.alerted = true;
            // The window's items are not needed any more.
            w.seen = HashSet::default();
            return Some(w.count);
        }
        None
    }

    fn sweep(&mut self, now_s: i64) {
        let secs = self.limit.seconds.max(1) as i64;
        self.windows.retain(|_, w| now_s - w.start_s < secs);
    }
}

/// The detectors' state: the owner of the `orig` and `pair` scopes.
#[derive(Debug)]
pub struct Detectors {
    port_scan: Option<Table<(IpAddr, IpAddr), u16>>,
    address_scan: Option<Table<(IpAddr, u16), IpAddr>>,
    syn_flood: Option<Table<IpAddr, ()>>,
    failed: Option<Table<IpAddr, ()>>,
    next_sweep_s: i64,
    pub stats: DetectorStats,
}

impl Detectors {
    pub fn new(cfg: &DetectorConfig) -> Detectors {
        Detectors {
            port_scan: cfg.port_scan.map(Table::new),
            address_scan: cfg.address_scan.map(Table::new),
            syn_flood: cfg.syn_flood.map(Table::new),
            failed: cfg.failed_connections.map(Table::new),
            next_sweep_s: i64::MIN,
            stats: DetectorStats::default(),
        }
    }

    /// Feeds one connection event (from `a.src` to `a.dst`, port `a.dp`,
    /// at `a.ts_ns`); appends the alerts it raises.
    pub fn on_event(&mut self, kind: ConnKind, a: &AlertOut, out: &mut Vec<DetectorAlert>) {
        let now_s = a.ts_ns.div_euclid(1_000_000_000);
        if now_s >= self.next_sweep_s {
            self.next_sweep_s = now_s.saturating_add(60);
            if let Some(t) = &mut self.port_scan {
                t.sweep(now_s);
            }
            if let Some(t) = &mut self.address_scan {
                t.sweep(now_s);
            }
            if let Some(t) = &mut self.syn_flood {
                t.sweep(now_s);
            }
            if let Some(t) = &mut self.failed {
                t.sweep(now_s);
            }
        }
        let dp = a.dp.unwrap_or(0);
        let st = &mut self.stats;
        let mut hits: [Option<(Detector, u32, Limit)>; 3] = [None; 3];
        match kind {
            ConnKind::Attempt => {
                st.attempts += 1;
                if let Some(t) = &mut self.syn_flood {
                    hits[0] = t
                        .add(a.src, None, now_s, st)
                        .map(|c| (Detector::SynFlood, c, t.limit));
                }
            }
            ConnKind::Failed => {
                st.failed += 1;
                if let Some(t) = &mut self.port_scan {
                    hits[0] = t
                        .add((a.src, a.dst), Some(dp), now_s, st)
                        .map(|c| (Detector::PortScan, c, t.limit));
                }
                if let Some(t) = &mut self.address_scan {
                    hits[1] = t
                        .add((a.src, dp), Some(a.dst), now_s, st)
                        .map(|c| (Detector::AddressScan, c, t.limit));
                }
                if let Some(t) = &mut self.failed {
                    hits[2] = t
                        .add(a.src, None, now_s, st)
                        .map(|c| (Detector::FailedConnections, c, t.limit));
                }
            }
        }
        for (detector, count, limit) in hits.into_iter().flatten() {
            st.alerts[detector as usize - 1] += 1;
            out.push(DetectorAlert {
                detector,
                count,
                limit,
            });
        }
    }
}

/// The sensor (slice of `n`) that writes the detectors' alerts about
/// source host `src` when sensors share their events.
pub fn owner_of(src: IpAddr, n: u32) -> u32 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(&match src {
        IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
        IpAddr::V6(v) => v.octets(),
    });
    (h.finish() % u64::from(n.max(1))) as u32
}

/// The rule an alert of detector `d` is written with: gid 9000, the
/// detector's sid, and the scope and counts as rule metadata
/// (`vigil_scope`, `vigil_count`, `vigil_threshold`, `vigil_seconds`).
pub fn detector_rule(alert: &DetectorAlert) -> CompiledRule {
    let d = alert.detector;
    let text = format!(
        "alert tcp any any -> any any (msg:\"{}\"; gid:{DETECTOR_GID}; sid:{}; rev:1; priority:2; \
         metadata: vigil_scope {}, vigil_count {}, vigil_threshold {}, vigil_seconds {};)",
        d.msg(),
        d.sid(),
        d.scope(),
        alert.count,
        alert.limit.count,
        alert.limit.seconds,
    );
    let rule = vigil_rules::parse_rule(
        &text,
        &vigil_rules::Vars::default(),
        vigil_rules::Origin::default(),
    )
    .expect("detector rule text parses");
    let mut r = vigil_detect::rule::compile_rule(
        &rule,
        &vigil_rules::ClassificationConfig::default(),
        &mut vigil_detect::rule::FlowbitNames::default(),
    )
    .expect("detector rule compiles");
    let (classtype, category) = d.category();
    r.classtype = classtype.to_string();
    r.category = category.to_string();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(src: &str, dst: &str, dp: u16, t_s: i64) -> AlertOut {
        crate::worker::conn_event(
            ConnKind::Failed,
            0,
            (0, 1, 0),
            t_s * 1_000_000_000,
            None,
            (src.parse().unwrap(), Some(40000)),
            (dst.parse().unwrap(), Some(dp)),
            false,
        )
    }

    fn small() -> DetectorConfig {
        let l = |count, seconds| Some(Limit { count, seconds });
        DetectorConfig {
            port_scan: l(3, 10),
            address_scan: l(3, 10),
            syn_flood: l(4, 1),
            failed_connections: l(5, 10),
        }
    }

    #[test]
    fn vertical_scan_counts_distinct_ports_once_per_window() {
        let mut d = Detectors::new(&DetectorConfig {
            failed_connections: None,
            ..small()
        });
        let mut out = Vec::new();
        // A repeated port does not count.
        for (p, t) in [(22, 0), (22, 1), (23, 2)] {
            d.on_event(
                ConnKind::Failed,
                &ev("10.0.0.9", "10.0.0.1", p, t),
                &mut out,
            );
        }
        assert!(out.is_empty());
        d.on_event(
            ConnKind::Failed,
            &ev("10.0.0.9", "10.0.0.1", 25, 3),
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].detector, Detector::PortScan);
        assert_eq!(out[0].count, 3);
        // Once per window.
        d.on_event(
            ConnKind::Failed,
            &ev("10.0.0.9", "10.0.0.1", 26, 4),
            &mut out,
        );
        assert_eq!(out.len(), 1);
        // Another target host is another pair.
        for (p, t) in [(22, 5), (23, 5), (24, 5)] {
            d.on_event(
                ConnKind::Failed,
                &ev("10.0.0.9", "10.0.0.2", p, t),
                &mut out,
            );
        }
        assert_eq!(
            out.iter()
                .filter(|a| a.detector == Detector::PortScan)
                .count(),
            2
        );
        // A new window after 10 s.
        for (p, t) in [(80, 20), (81, 21), (82, 22)] {
            d.on_event(
                ConnKind::Failed,
                &ev("10.0.0.9", "10.0.0.1", p, t),
                &mut out,
            );
        }
        assert_eq!(d.stats.alerts[0], 3);
    }

    #[test]
    fn horizontal_scan_counts_hosts_on_one_port() {
        let mut d = Detectors::new(&DetectorConfig {
            port_scan: None,
            failed_connections: None,
            ..small()
        });
        let mut out = Vec::new();
        // Three hosts, but on different ports: no address scan.
        for (h, p) in [("10.1.0.1", 80), ("10.1.0.2", 81), ("10.1.0.3", 82)] {
            d.on_event(ConnKind::Failed, &ev("10.0.0.9", h, p, 1), &mut out);
        }
        assert!(out.is_empty());
        for h in ["10.1.0.1", "10.1.0.2", "10.1.0.3"] {
            d.on_event(ConnKind::Failed, &ev("10.0.0.9", h, 445, 2), &mut out);
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].detector, Detector::AddressScan);
        assert_eq!(Detector::AddressScan.scope(), "orig");
    }

    #[test]
    fn syn_flood_and_failed_connections_count_events() {
        let mut d = Detectors::new(&small());
        let mut out = Vec::new();
        for i in 0..4 {
            d.on_event(
                ConnKind::Attempt,
                &ev("10.0.0.7", "10.0.0.1", 80 + i, 100),
                &mut out,
            );
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].detector, Detector::SynFlood);
        // Spread over more than a second each: no flood.
        for i in 0..4 {
            d.on_event(
                ConnKind::Attempt,
                &ev("10.0.0.8", "10.0.0.1", 80, 200 + 2 * i),
                &mut out,
            );
        }
        assert_eq!(out.len(), 1);
        // Five failed connections to one port of one host: neither scan,
        // but failed connections.
        let mut d = Detectors::new(&small());
        let mut out = Vec::new();
        for t in 0..5 {
            d.on_event(
                ConnKind::Failed,
                &ev("10.0.0.7", "10.0.0.1", 80, t),
                &mut out,
            );
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].detector, Detector::FailedConnections);
        assert_eq!(d.stats.failed, 5);
    }

    #[test]
    fn detector_rules_carry_scope_and_counts() {
        for det in Detector::ALL {
            let r = detector_rule(&DetectorAlert {
                detector: det,
                count: 17,
                limit: Limit {
                    count: 15,
                    seconds: 300,
                },
            });
            assert_eq!((r.gid, r.sid), (DETECTOR_GID, det.sid()));
            assert_eq!(r.msg, det.msg());
            assert!(r
                .metadata
                .contains(&("vigil_scope".into(), det.scope().into())));
            assert!(r.metadata.contains(&("vigil_count".into(), "17".into())));
            assert!(!r.category.is_empty());
        }
    }
}
