//! The host verdict table (Sommer and Paxson's ANI): after a drop by a
//! rule whose classtype the config lists (`ips.block-hosts`), the
//! offending host is blocked for a while, and every packet from (or to)
//! it is dropped before decoding goes further, by every worker.
//!
//! Shared by all workers without a lock: a fixed array of slots, each two
//! atomics (the address's 64-bit hash, and the block's expiry second),
//! indexed by the hash. A lookup is two relaxed loads; a block writes the
//! expiry to 0, the hash, then the expiry, so a reader racing a writer
//! sees either the old entry, no entry, or the new one: at worst a block
//! shows a moment late. Two hosts whose hashes share a slot evict each
//! other (counted); a lookup matches the full 64-bit hash, so another host
//! is blocked only on a 64-bit collision.

use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which end of the dropped packet is blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockTrack {
    /// The packet's source (the attacker, for most rules).
    Src,
    /// Its destination.
    Dst,
}

/// `ips.block-hosts`: classtypes whose drops block a host, for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBlockConfig {
    pub classtypes: Vec<String>,
    pub seconds: u32,
    pub track: BlockTrack,
    /// Slots in the table (rounded up to a power of two).
    pub slots: usize,
}

impl Default for HostBlockConfig {
    fn default() -> Self {
        HostBlockConfig {
            classtypes: Vec::new(),
            seconds: 300,
            track: BlockTrack::Src,
            slots: 1 << 16,
        }
    }
}

struct Slot {
    hash: AtomicU64,
    /// Second (packet time) the block ends; 0: empty.
    until: AtomicU64,
}

/// The table, shared read-mostly by all workers.
pub struct HostTable {
    slots: Box<[Slot]>,
    mask: usize,
    pub cfg: HostBlockConfig,
}

impl std::fmt::Debug for HostTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostTable")
            .field("slots", &self.slots.len())
            .field("cfg", &self.cfg)
            .finish()
    }
}

fn addr_hash(a: IpAddr) -> u64 {
    // SipHash with fixed keys (std's DefaultHasher::new): the same hash
    // in every worker and run; 0 is kept for "empty".
    let mut h = std::collections::hash_map::DefaultHasher::new();
    a.hash(&mut h);
    h.finish().max(1)
}

impl HostTable {
    pub fn new(cfg: HostBlockConfig) -> HostTable {
        let n = cfg.slots.max(1).next_power_of_two();
        let slots = (0..n)
            .map(|_| Slot {
                hash: AtomicU64::new(0),
                until: AtomicU64::new(0),
            })
            .collect();
        HostTable {
            slots,
            mask: n - 1,
            cfg,
        }
    }

    /// Whether a drop by a rule of `classtype` blocks a host.
    pub fn blocks_class(&self, classtype: &str) -> bool {
        !classtype.is_empty() && self.cfg.classtypes.iter().any(|c| c == classtype)
    }

    /// Blocks `a` until `now_sec + seconds`. Returns true when it took the
    /// slot of another blocked host (an eviction).
    pub fn block(&self, a: IpAddr, now_sec: u64) -> bool {
        let h = addr_hash(a);
        let s = &self.slots[(h as usize) & self.mask];
        let old_h = s.hash.load(Ordering::Relaxed);
        let evicted = old_h != 0 && old_h != h && s.until.load(Ordering::Relaxed) > now_sec;
        s.until.store(0, Ordering::Release);
        s.hash.store(h, Ordering::Release);
        s.until
            .store(now_sec + u64::from(self.cfg.seconds), Ordering::Release);
        evicted
    }

    /// Whether `a` is blocked at `now_sec`.
    pub fn is_blocked(&self, a: IpAddr, now_sec: u64) -> bool {
        let h = addr_hash(a);
        let s = &self.slots[(h as usize) & self.mask];
        let until = s.until.load(Ordering::Acquire);
        until > now_sec && s.hash.load(Ordering::Acquire) == h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(seconds: u32, slots: usize) -> HostTable {
        HostTable::new(HostBlockConfig {
            classtypes: vec!["web-application-attack".into()],
            seconds,
            track: BlockTrack::Src,
            slots,
        })
    }

    #[test]
    fn a_block_holds_for_its_duration_then_expires() {
        let t = table(60, 1024);
        let a: IpAddr = "192.0.2.7".parse().unwrap();
        let b: IpAddr = "2001:db8::7".parse().unwrap();
        assert!(!t.is_blocked(a, 1000));
        assert!(!t.block(a, 1000));
        assert!(t.is_blocked(a, 1000));
        assert!(t.is_blocked(a, 1059));
        assert!(!t.is_blocked(a, 1060));
        assert!(!t.is_blocked(b, 1000));
        assert!(t.blocks_class("web-application-attack"));
        assert!(!t.blocks_class("misc-activity"));
        assert!(!t.blocks_class(""));
    }

    #[test]
    fn hosts_sharing_a_slot_evict_each_other_and_never_block_the_other() {
        let t = table(60, 1);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        t.block(a, 10);
        assert!(t.block(b, 11), "b took a's slot");
        assert!(t.is_blocked(b, 11));
        assert!(!t.is_blocked(a, 11));
    }

    #[test]
    fn concurrent_blocks_and_lookups_stay_consistent() {
        let t = std::sync::Arc::new(table(1_000_000, 256));
        let addrs: Vec<IpAddr> = (0..64u8).map(|i| IpAddr::from([10, 0, 0, i])).collect();
        std::thread::scope(|s| {
            for w in 0..4 {
                let t = t.clone();
                let addrs = addrs.clone();
                s.spawn(move || {
                    for (i, a) in addrs.iter().enumerate() {
                        if i % 4 == w {
                            t.block(*a, 1);
                        }
                        // Never blocked before it was blocked by someone,
                        // never anything outside the list.
                        assert!(!t.is_blocked(IpAddr::from([10, 0, 1, i as u8]), 1));
                    }
                });
            }
        });
        // Each slot ends holding exactly one of the hosts hashed to it
        // (whichever wrote last): as many blocks hold as slots were used.
        let held = addrs.iter().filter(|a| t.is_blocked(**a, 2)).count();
        let used: std::collections::HashSet<usize> = addrs
            .iter()
            .map(|a| (addr_hash(*a) as usize) & t.mask)
            .collect();
        assert_eq!(held, used.len());
    }
}
