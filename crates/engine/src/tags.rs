//! The `tag` keyword (Suricata's detect-engine-tag.c): an alert of a rule
//! with `tag:session` or `tag:host` tags the alert's flow or one of its
//! addresses; the later packets of that flow (or to or from that host),
//! within the tag's packets, bytes or seconds, are logged as EVE `packet`
//! records (`tagged-packets`).
//!
//! Applied where alerts meet in input order (the offline merge, the live
//! output), after thresholds, as Suricata tags only for alerts its
//! thresholds let through. When a loaded rule has `tag`, workers send one
//! [`OutKind::Tag`](crate::OutKind::Tag) item per packet (with the frame)
//! to that place, so host tags see every worker's packets in input order:
//! the same output for any worker count.
//!
//! Bounded: at most [`MAX_TAGS`] tags per flow or host (Suricata's
//! DETECT_TAG_MAX_TAGS), [`MAX_KEYS`] tagged flows and hosts in all
//! (counted when full), and entries idle for [`IDLE_SECS`] (Suricata's
//! TAG_MAX_LAST_TIME_SEEN) are dropped.

use std::collections::HashMap;
use std::net::IpAddr;

use vigil_rules::{TagMetric, TagScope, TagSpec};

use crate::AlertOut;

/// Tags one flow or host can hold (DETECT_TAG_MAX_TAGS).
pub const MAX_TAGS: usize = 50;
/// A rule that matches again re-arms its tag at most this many times
/// (DETECT_TAG_MATCH_LIMIT).
pub const MATCH_LIMIT: u32 = 10;
/// Tagged flows and hosts held at once.
pub const MAX_KEYS: usize = 65_536;
/// A tag not updated for this long (packet time) is dropped.
pub const IDLE_SECS: i64 = 600;

/// Counters (`detect.tags.*` in the stats).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TagStats {
    /// Tags set by alerts.
    pub added: u64,
    /// Alerts that re-armed their rule's tag.
    pub rearmed: u64,
    /// Packets logged as tagged.
    pub packets: u64,
    /// Tags that ran out (count reached) or went idle.
    pub expired: u64,
    /// Tags not set: the flow or host held [`MAX_TAGS`] already, or the
    /// table [`MAX_KEYS`] flows and hosts.
    pub full: u64,
}

#[derive(Debug, Clone)]
struct Entry {
    gid: u32,
    sid: u32,
    metric: TagMetric,
    count: u32,
    packets: u64,
    bytes: u64,
    first_s: i64,
    last_s: i64,
    skipped_first: bool,
    matches: u32,
}

/// The tags of every flow and host.
#[derive(Debug, Default)]
pub struct TagTable {
    flows: HashMap<u64, Vec<Entry>>,
    hosts: HashMap<IpAddr, Vec<Entry>>,
    last_sweep: i64,
    pub stats: TagStats,
}

fn secs(ts_ns: i64) -> i64 {
    ts_ns.div_euclid(1_000_000_000)
}

impl TagTable {
    /// True when nothing is tagged (every packet passes untouched).
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty() && self.hosts.is_empty()
    }

    /// An alert of rule `gid:sid` with `spec` was written for `a`.
    pub fn on_alert(&mut self, spec: &TagSpec, gid: u32, sid: u32, a: &AlertOut) {
        let now = secs(a.ts_ns);
        let keys = self.flows.len() + self.hosts.len();
        let list = match spec.scope {
            TagScope::Session => {
                let Some(id) = a.flow_id else { return };
                if keys >= MAX_KEYS && !self.flows.contains_key(&id) {
                    self.stats.full += 1;
                    return;
                }
                self.flows.entry(id).or_default()
            }
            TagScope::Host { src } => {
                let addr = if src { a.src } else { a.dst };
                if keys >= MAX_KEYS && !self.hosts.contains_key(&addr) {
                    self.stats.full += 1;
                    return;
                }
                self.hosts.entry(addr).or_default()
            }
        };
        if let Some(e) = list.iter_mut().find(|e| e.gid == gid && e.sid == sid) {
            e.matches += 1;
            if e.matches < MATCH_LIMIT {
                e.first_s = now;
                e.last_s = now;
                e.packets = 0;
                e.bytes = 0;
                self.stats.rearmed += 1;
            }
            return;
        }
        if list.len() >= MAX_TAGS {
            self.stats.full += 1;
            return;
        }
        // Suricata prepends: the newest tag is looked at first.
        list.insert(
            0,
            Entry {
                gid,
                sid,
                metric: spec.metric,
                count: spec.count,
                packets: 0,
                bytes: 0,
                first_s: now,
                last_s: now,
                skipped_first: false,
                matches: 0,
            },
        );
        self.stats.added += 1;
    }

    /// A packet ([`OutKind::Tag`](crate::OutKind::Tag) item, after its
    /// alerts): updates the tags of its flow and of its addresses; true
    /// when it is tagged (to be logged).
    pub fn on_packet(&mut self, a: &AlertOut) -> bool {
        if self.is_empty() {
            return false;
        }
        let now = secs(a.ts_ns);
        let len = a.packet.as_ref().map_or(0, |p| p.len() as u64);
        if now - self.last_sweep > 60 {
            self.sweep(now);
        }
        let mut tagged = false;
        let mut expired = 0;
        if let Some(id) = a.flow_id {
            if let Some(list) = self.flows.get_mut(&id) {
                tagged |= update(list, now, len, &mut expired);
                if list.is_empty() {
                    self.flows.remove(&id);
                }
            }
        }
        for addr in [a.src, a.dst] {
            if let Some(list) = self.hosts.get_mut(&addr) {
                tagged |= update(list, now, len, &mut expired);
                if list.is_empty() {
                    self.hosts.remove(&addr);
                }
            }
        }
        self.stats.expired += expired;
        self.stats.packets += u64::from(tagged);
        tagged
    }

    /// Drops the tags idle for [`IDLE_SECS`] (flows that ended, hosts
    /// gone quiet).
    fn sweep(&mut self, now: i64) {
        self.last_sweep = now;
        let mut expired = 0u64;
        let mut keep = |l: &mut Vec<Entry>| {
            let before = l.len();
            l.retain(|e| now - e.last_s <= IDLE_SECS);
            expired += (before - l.len()) as u64;
            !l.is_empty()
        };
        self.flows.retain(|_, l| keep(l));
        self.hosts.retain(|_, l| keep(l));
        self.stats.expired += expired;
    }
}

/// One packet against one flow's or host's tags: counters updated, the
/// tag's own (first) packet skipped, expired tags removed. True when a
/// live tag covers the packet.
fn update(list: &mut Vec<Entry>, now: i64, len: u64, expired: &mut u64) -> bool {
    let mut tagged = false;
    list.retain_mut(|e| {
        e.last_s = now;
        match e.metric {
            TagMetric::Packets => e.packets += 1,
            TagMetric::Bytes => e.bytes += len,
            TagMetric::Seconds => {}
        }
        // The packet that set the tag is logged by its alert.
        if !e.skipped_first {
            e.skipped_first = true;
            return true;
        }
        let over = match e.metric {
            TagMetric::Packets => e.packets > u64::from(e.count),
            TagMetric::Bytes => e.bytes > u64::from(e.count),
            TagMetric::Seconds => e.last_s - e.first_s > i64::from(e.count),
        };
        if over {
            *expired += 1;
            return false;
        }
        tagged = true;
        true
    });
    tagged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(ts_s: i64, flow: u64, src: &str, dst: &str, len: usize) -> AlertOut {
        AlertOut {
            index: 0,
            order: (0, 0, 0),
            ts_ns: ts_s * 1_000_000_000,
            flow_id: Some(flow),
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            sp: None,
            dp: None,
            proto: 17,
            icmp: None,
            sctp: None,
            igmp: None,
            vlan: [0; 3],
            vlan_count: 0,
            to_server: None,
            rule: 0,
            linktype: 1,
            stream: false,
            pseudo: false,
            rebuilt: false,
            payload: None,
            packet: Some(vec![0u8; len].into()),
            app_proto: None,
            app: None,
            kind: crate::OutKind::Tag,
            xff: None,
            blocked: false,
            tunnel: None,
            link_only: false,
            vars: None,
            context: Box::default(),
            datasets: None,
            line: None,
            frame: None,
        }
    }

    fn spec(scope: TagScope, count: u32, metric: TagMetric) -> TagSpec {
        TagSpec {
            scope,
            count,
            metric,
        }
    }

    #[test]
    fn session_packets_skip_the_alert_packet() {
        let mut t = TagTable::default();
        let a = pkt(10, 7, "10.0.0.1", "10.0.0.2", 60);
        t.on_alert(&spec(TagScope::Session, 3, TagMetric::Packets), 1, 1, &a);
        let got: Vec<bool> = (0..5)
            .map(|i| t.on_packet(&pkt(10 + i, 7, "10.0.0.1", "10.0.0.2", 60)))
            .collect();
        // The alert's packet, then count - 1 packets, as Suricata.
        assert_eq!(got, [false, true, true, false, false]);
        assert!(t.is_empty());
        assert_eq!(t.stats.packets, 2);
        assert_eq!(t.stats.expired, 1);
        // Another flow is not tagged.
        assert!(!t.on_packet(&pkt(11, 8, "10.0.0.1", "10.0.0.2", 60)));
    }

    #[test]
    fn host_bytes_and_seconds() {
        let mut t = TagTable::default();
        let a = pkt(10, 7, "10.0.0.1", "10.0.0.2", 100);
        t.on_alert(
            &spec(TagScope::Host { src: false }, 250, TagMetric::Bytes),
            1,
            2,
            &a,
        );
        assert!(!t.on_packet(&a)); // 100 bytes, the alert's packet
        assert!(t.on_packet(&pkt(11, 9, "10.0.0.2", "10.0.0.7", 100))); // 200
        assert!(!t.on_packet(&pkt(11, 9, "10.0.0.3", "10.0.0.7", 100))); // other hosts
        assert!(!t.on_packet(&pkt(12, 9, "10.0.0.7", "10.0.0.2", 100))); // 300 > 250
        let mut t = TagTable::default();
        t.on_alert(
            &spec(TagScope::Host { src: true }, 2, TagMetric::Seconds),
            1,
            3,
            &a,
        );
        assert!(!t.on_packet(&a));
        assert!(t.on_packet(&pkt(12, 1, "10.0.0.1", "10.0.0.9", 10)));
        assert!(!t.on_packet(&pkt(13, 1, "10.0.0.1", "10.0.0.9", 10)));
    }

    #[test]
    fn bounded() {
        let mut t = TagTable::default();
        let a = pkt(10, 7, "10.0.0.1", "10.0.0.2", 60);
        let s = spec(TagScope::Session, 5, TagMetric::Packets);
        for sid in 0..(MAX_TAGS as u32 + 5) {
            t.on_alert(&s, 1, sid, &a);
        }
        assert_eq!(t.stats.added, MAX_TAGS as u64);
        assert_eq!(t.stats.full, 5);
        // The same rule again re-arms, MATCH_LIMIT - 1 times.
        for _ in 0..20 {
            t.on_alert(&s, 1, 0, &a);
        }
        assert_eq!(t.stats.rearmed, u64::from(MATCH_LIMIT - 1));
        for f in 0..(MAX_KEYS as u64 + 3) {
            t.on_alert(&s, 1, 0, &pkt(10, 100 + f, "10.0.0.1", "10.0.0.2", 60));
        }
        assert_eq!(t.flows.len(), MAX_KEYS);
        assert_eq!(t.stats.full, 5 + 4);
        // Idle tags go.
        t.on_packet(&pkt(10 + IDLE_SECS + 100, 1, "10.9.9.9", "10.9.9.8", 60));
        assert!(t.is_empty());
    }
}
