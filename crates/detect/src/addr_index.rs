//! An address index for rules that have no fast pattern.
//!
//! Rules without content (IP reputation lists, protocol or flag checks)
//! would otherwise be verified on every packet of their group. Most of them
//! name a narrow set of addresses on one side (`[1.2.3.4,5.6.7.0/24,...]
//! any -> $HOME_NET any`). Such a rule is indexed by that side: the address
//! space is cut into elementary intervals at every range boundary, and each
//! interval maps to the (deduplicated) list of rules that cover it, so a
//! packet finds its candidates with one binary search per side.

use std::collections::HashMap;

/// Sorted elementary intervals of one address family.
#[derive(Debug, Default)]
pub struct AddrIndex {
    /// Start of each interval (sorted); the interval runs to the next start.
    starts: Vec<u128>,
    /// Set id per interval (`u32::MAX`: no rule).
    set_of: Vec<u32>,
    sets: Vec<Vec<u32>>,
}

impl AddrIndex {
    /// Builds from `(lo, hi, rule)` inclusive ranges.
    pub fn build(ranges: &[(u128, u128, u32)]) -> AddrIndex {
        if ranges.is_empty() {
            return AddrIndex::default();
        }
        // Events: +rule at lo, -rule at hi+1.
        let mut events: Vec<(u128, bool, u32)> = Vec::with_capacity(ranges.len() * 2);
        for &(lo, hi, r) in ranges {
            events.push((lo, true, r));
            if hi != u128::MAX {
                events.push((hi + 1, false, r));
            }
        }
        events.sort_unstable();
        let mut active: HashMap<u32, u32> = HashMap::new();
        let mut dedup: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut idx = AddrIndex::default();
        let mut i = 0;
        while i < events.len() {
            let at = events[i].0;
            while i < events.len() && events[i].0 == at {
                let (_, add, r) = events[i];
                if add {
                    *active.entry(r).or_insert(0) += 1;
                } else if let Some(c) = active.get_mut(&r) {
                    *c -= 1;
                    if *c == 0 {
                        active.remove(&r);
                    }
                }
                i += 1;
            }
            let set = if active.is_empty() {
                u32::MAX
            } else {
                let mut m: Vec<u32> = active.keys().copied().collect();
                m.sort_unstable();
                let next = idx.sets.len() as u32;
                *dedup.entry(m.clone()).or_insert_with(|| {
                    idx.sets.push(m);
                    next
                })
            };
            idx.starts.push(at);
            idx.set_of.push(set);
        }
        idx
    }

    /// Rules whose indexed side covers `addr`.
    #[inline]
    pub fn lookup(&self, addr: u128) -> &[u32] {
        let n = self.starts.partition_point(|&s| s <= addr);
        if n == 0 {
            return &[];
        }
        match self.set_of[n - 1] {
            u32::MAX => &[],
            s => &self.sets[s as usize],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_and_adjacent_ranges() {
        let idx = AddrIndex::build(&[(10, 20, 1), (15, 30, 2), (31, 31, 3), (100, u128::MAX, 4)]);
        assert_eq!(idx.lookup(9), &[] as &[u32]);
        assert_eq!(idx.lookup(10), &[1]);
        assert_eq!(idx.lookup(15), &[1, 2]);
        assert_eq!(idx.lookup(20), &[1, 2]);
        assert_eq!(idx.lookup(21), &[2]);
        assert_eq!(idx.lookup(31), &[3]);
        assert_eq!(idx.lookup(32), &[] as &[u32]);
        assert_eq!(idx.lookup(u128::MAX), &[4]);
    }

    #[test]
    fn empty_index() {
        let idx = AddrIndex::build(&[]);
        assert!(idx.lookup(5).is_empty());
    }
}
