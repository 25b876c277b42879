//! `xbits` and `hostbits`: bits kept per host (`track ip_src`, `ip_dst`)
//! or per address pair (`track ip_pair`), set by a rule on one flow and
//! tested by a rule on another.
//!
//! This state spans flows, and flows live on different workers, so a
//! worker cannot answer an `isset`. It verifies everything else of the
//! rule and, when that matched, raises an event with the rule and the
//! packet's addresses. The events meet in one place in input order (the
//! ordered merge offline, the output thread live: the owner of the host
//! and pair scopes), which runs the rule's xbits in rule order against
//! one [`XbitTable`]: tests first decide whether the rule matches, then
//! its sets, unsets and toggles apply, then it alerts (unless `noalert`).
//! Offline the result is the same for any number of workers.

use std::collections::HashMap;
use std::net::IpAddr;

use vigil_rules::FlowbitsCmd;

/// Whose bit a rule's `xbits` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum XTrack {
    /// The packet's source host.
    Src,
    /// The packet's destination host.
    Dst,
    /// The two hosts, in either direction.
    Pair,
}

/// One `xbits` / `hostbits` keyword of a compiled rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XbitOp {
    pub cmd: FlowbitsCmd,
    /// Index into [`crate::DetectEngine::xbit_names`].
    pub bit: u32,
    pub track: XTrack,
    /// Seconds a set bit lives (Suricata's default: 30).
    pub expire_s: u32,
}

/// Suricata's default lifetime of a bit set without `expire`.
pub const DEFAULT_EXPIRE_S: u32 = 30;

impl XbitOp {
    pub fn is_test(&self) -> bool {
        matches!(self.cmd, FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Host(IpAddr),
    /// Lower address first.
    Pair(IpAddr, IpAddr),
}

fn key(track: XTrack, src: IpAddr, dst: IpAddr) -> Key {
    match track {
        XTrack::Src => Key::Host(src),
        XTrack::Dst => Key::Host(dst),
        XTrack::Pair if src <= dst => Key::Pair(src, dst),
        XTrack::Pair => Key::Pair(dst, src),
    }
}

/// Counters of the xbits table, for stats.log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XbitStats {
    /// Rule matches resolved against the table.
    pub events: u64,
    /// Of those, the ones whose tests failed (no effects, no alert).
    pub tests_failed: u64,
    /// Bits set (or refreshed).
    pub sets: u64,
    /// Bits removed because they expired.
    pub expired: u64,
    /// Sets refused because the table was full.
    pub full: u64,
    /// Largest number of bits held at once.
    pub peak_entries: u64,
}

/// The bits of every host and address pair, with their expiry.
#[derive(Debug)]
pub struct XbitTable {
    /// (bit, key) -> last second the bit is set (Suricata compares whole
    /// seconds: a bit set at second `t` with `expire N` is set up to and
    /// including second `t + N`).
    bits: HashMap<(u32, Key), i64>,
    max_entries: usize,
    next_sweep_s: i64,
    /// The second of the last sweep made because the table was full.
    full_sweep_s: i64,
    pub stats: XbitStats,
}

impl Default for XbitTable {
    fn default() -> Self {
        XbitTable::new(1 << 20)
    }
}

impl XbitTable {
    /// A table that holds at most `max_entries` bits (sets beyond are
    /// refused and counted).
    pub fn new(max_entries: usize) -> XbitTable {
        XbitTable {
            bits: HashMap::new(),
            max_entries: max_entries.max(1),
            next_sweep_s: i64::MIN,
            full_sweep_s: i64::MIN,
            stats: XbitStats::default(),
        }
    }

    /// Bits held now.
    pub fn len(&self) -> usize {
        self.bits.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    fn is_set(&mut self, k: (u32, Key), now_s: i64) -> bool {
        match self.bits.get(&k) {
            Some(&until) if now_s <= until => true,
            Some(_) => {
                self.bits.remove(&k);
                self.stats.expired += 1;
                false
            }
            None => false,
        }
    }

    /// Drops expired bits, at most once per packet-time minute.
    fn sweep(&mut self, now_s: i64) {
        if now_s < self.next_sweep_s {
            return;
        }
        self.next_sweep_s = now_s + 60;
        let before = self.bits.len();
        self.bits.retain(|_, until| now_s <= *until);
        self.stats.expired += (before - self.bits.len()) as u64;
    }

    /// Runs a matched rule's xbits for a packet from `src` to `dst` at
    /// `ts_ns`: true when every test holds, in which case the rule's
    /// effects were applied (the rule matches).
    pub fn resolve(&mut self, ops: &[XbitOp], src: IpAddr, dst: IpAddr, ts_ns: i64) -> bool {
        let now_s = ts_ns.div_euclid(1_000_000_000);
        self.sweep(now_s);
        self.stats.events += 1;
        for op in ops.iter().filter(|o| o.is_test()) {
            let set = self.is_set((op.bit, key(op.track, src, dst)), now_s);
            if set != (op.cmd == FlowbitsCmd::IsSet) {
                self.stats.tests_failed += 1;
                return false;
            }
        }
        for op in ops.iter().filter(|o| !o.is_test()) {
            let k = (op.bit, key(op.track, src, dst));
            match op.cmd {
                FlowbitsCmd::Set => self.set(k, now_s, op.expire_s),
                FlowbitsCmd::Unset => {
                    self.bits.remove(&k);
                }
                FlowbitsCmd::Toggle => {
                    if self.is_set(k, now_s) {
                        self.bits.remove(&k);
                    } else {
                        self.set(k, now_s, op.expire_s);
                    }
                }
                _ => {}
            }
        }
        true
    }

    fn set(&mut self, k: (u32, Key), now_s: i64, expire_s: u32) {
        if self.bits.len() >= self.max_entries && !self.bits.contains_key(&k) {
            // At most one sweep per packet-time second when full.
            if self.full_sweep_s != now_s {
                self.full_sweep_s = now_s;
                self.sweep_now(now_s);
            }
            if self.bits.len() >= self.max_entries {
                self.stats.full += 1;
                return;
            }
        }
        self.bits.insert(k, now_s + expire_s as i64);
        self.stats.sets += 1;
        self.stats.peak_entries = self.stats.peak_entries.max(self.bits.len() as u64);
    }

    fn sweep_now(&mut self, now_s: i64) {
        self.next_sweep_s = i64::MIN;
        self.sweep(now_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(cmd: FlowbitsCmd, bit: u32, track: XTrack, expire_s: u32) -> XbitOp {
        XbitOp {
            cmd,
            bit,
            track,
            expire_s,
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    const S: i64 = 1_000_000_000;

    #[test]
    fn set_by_src_is_seen_as_dst_on_another_flow() {
        let mut t = XbitTable::default();
        let (a, b, c) = (ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3"));
        // a -> b sets a bit on a (track ip_src).
        assert!(t.resolve(&[op(FlowbitsCmd::Set, 0, XTrack::Src, 30)], a, b, 100 * S));
        // c -> a tests it on a (track ip_dst): set.
        assert!(t.resolve(&[op(FlowbitsCmd::IsSet, 0, XTrack::Dst, 30)], c, a, 101 * S));
        // b -> c: not set on b.
        assert!(!t.resolve(&[op(FlowbitsCmd::IsSet, 0, XTrack::Src, 30)], b, c, 101 * S));
        assert!(t.resolve(
            &[op(FlowbitsCmd::IsNotSet, 0, XTrack::Src, 30)],
            b,
            c,
            101 * S
        ));
        // Another bit name is another bit.
        assert!(!t.resolve(&[op(FlowbitsCmd::IsSet, 1, XTrack::Dst, 30)], c, a, 101 * S));
        assert_eq!(t.stats.tests_failed, 2);
    }

    #[test]
    fn expiry_counts_whole_seconds() {
        let mut t = XbitTable::default();
        let (a, b) = (ip("10.0.0.1"), ip("10.0.0.2"));
        let set = [op(FlowbitsCmd::Set, 0, XTrack::Src, 10)];
        let test = [op(FlowbitsCmd::IsSet, 0, XTrack::Src, 10)];
        assert!(t.resolve(&set, a, b, 100 * S + S / 2));
        // Second 110 is still within (Suricata: expired when now > t + N).
        assert!(t.resolve(&test, a, b, 110 * S + S * 9 / 10));
        assert!(!t.resolve(&test, a, b, 111 * S));
        assert_eq!(t.stats.expired, 1);
        assert!(t.is_empty());
    }

    #[test]
    fn pair_is_direction_free_and_tests_gate_effects() {
        let mut t = XbitTable::default();
        let (a, b, c) = (ip("192.0.2.1"), ip("192.0.2.2"), ip("192.0.2.3"));
        // A rule that tests bit 0 and sets bit 1: the test fails, so bit 1
        // is not set.
        let chain = [
            op(FlowbitsCmd::IsSet, 0, XTrack::Pair, 30),
            op(FlowbitsCmd::Set, 1, XTrack::Pair, 30),
        ];
        assert!(!t.resolve(&chain, a, b, 5 * S));
        assert!(!t.resolve(&[op(FlowbitsCmd::IsSet, 1, XTrack::Pair, 30)], a, b, 5 * S));
        assert!(t.resolve(&[op(FlowbitsCmd::Set, 0, XTrack::Pair, 30)], b, a, 6 * S));
        assert!(t.resolve(&chain, a, b, 7 * S));
        assert!(t.resolve(&[op(FlowbitsCmd::IsSet, 1, XTrack::Pair, 30)], b, a, 8 * S));
        // Not for another pair.
        assert!(!t.resolve(&[op(FlowbitsCmd::IsSet, 1, XTrack::Pair, 30)], a, c, 8 * S));
    }

    #[test]
    fn unset_and_toggle() {
        let mut t = XbitTable::default();
        let (a, b) = (ip("2001:db8::1"), ip("2001:db8::2"));
        let is = [op(FlowbitsCmd::IsSet, 3, XTrack::Dst, 30)];
        let toggle = [op(FlowbitsCmd::Toggle, 3, XTrack::Dst, 30)];
        assert!(t.resolve(&toggle, a, b, S));
        assert!(t.resolve(&is, a, b, S));
        assert!(t.resolve(&toggle, a, b, 2 * S));
        assert!(!t.resolve(&is, a, b, 2 * S));
        assert!(t.resolve(&toggle, a, b, 3 * S));
        assert!(t.resolve(&[op(FlowbitsCmd::Unset, 3, XTrack::Dst, 30)], a, b, 4 * S));
        assert!(!t.resolve(&is, a, b, 4 * S));
    }

    #[test]
    fn a_full_table_refuses_and_counts() {
        let mut t = XbitTable::new(2);
        let b = ip("10.9.9.9");
        for i in 0..4u8 {
            let a = IpAddr::from([10, 0, 0, i]);
            t.resolve(&[op(FlowbitsCmd::Set, 0, XTrack::Src, 30)], a, b, S);
        }
        assert_eq!(t.len(), 2);
        assert_eq!(t.stats.full, 2);
        // Expired bits make room again.
        let a = IpAddr::from([10, 0, 0, 9]);
        t.resolve(&[op(FlowbitsCmd::Set, 0, XTrack::Src, 30)], a, b, 100 * S);
        assert_eq!(t.len(), 1);
        assert_eq!(t.stats.peak_entries, 2);
    }
}
