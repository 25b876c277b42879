//! Wu-Manber (the "MWM" of Snort 2.0, as Antonatos et al. describe it): a
//! bad-block shift table over 2-byte blocks built from all patterns, and a
//! hash of the block to the patterns that may end their `m`-byte prefix
//! there, verified byte by byte.
//!
//! `m` is the shortest pattern length; a window of `m` bytes slides over
//! the input and the block of `B` bytes at its end indexes the table. When
//! the set has a 1-byte pattern, `B` is 1 (a 256-entry table), as in
//! Snort's variant for short patterns. Matching is on folded bytes; exact
//! patterns are confirmed after a hit.

use crate::fold::{Folded, LOWER};
use crate::{BuildError, Pattern, PrefilterEngine, PrefilterMatch};

/// Table entry with this bit set: shift 0, the rest is a bucket index.
const BUCKET: u32 = 1 << 31;
/// Longest window used (shifts fit easily; longer prefixes add little).
const MAX_M: usize = 64;

#[derive(Debug, Clone)]
pub struct WuManberEngine {
    /// Window length.
    m: usize,
    /// Block length (1 or 2).
    block: usize,
    /// Shift per block, or `BUCKET | index`.
    table: Vec<u32>,
    /// Slots whose prefix ends with the block: `slots[start[i]..start[i+1]]`.
    bucket_start: Vec<u32>,
    bucket_slots: Vec<u32>,
    folded: Folded,
}

impl WuManberEngine {
    /// Builds the engine. Empty patterns are ignored.
    pub fn new(patterns: &[Pattern]) -> Result<Self, BuildError> {
        let folded = Folded::new(patterns);
        let m = folded
            .keys
            .iter()
            .map(|k| k.len())
            .min()
            .unwrap_or(1)
            .min(MAX_M);
        let block = if m >= 2 { 2 } else { 1 };
        let size = 1usize << (8 * block);
        let default = (m - block + 1) as u32;
        let mut table = vec![default; size];
        let hash = |k: &[u8], end: usize| -> usize {
            if block == 2 {
                (k[end - 2] as usize) << 8 | k[end - 1] as usize
            } else {
                k[end - 1] as usize
            }
        };
        let mut buckets: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
        for (slot, k) in folded.keys.iter().enumerate() {
            // A block ending at q (block <= q <= m) of the prefix allows a
            // shift of m - q.
            for q in block..=m {
                let h = hash(k, q);
                let shift = (m - q) as u32;
                if shift < table[h] {
                    table[h] = shift;
                }
            }
            buckets.entry(hash(k, m)).or_default().push(slot as u32);
        }
        let mut bucket_start = vec![0u32];
        let mut bucket_slots = Vec::new();
        for (i, (h, slots)) in buckets.into_iter().enumerate() {
            debug_assert_eq!(table[h], 0);
            table[h] = BUCKET | i as u32;
            bucket_slots.extend(slots);
            bucket_start.push(bucket_slots.len() as u32);
        }
        // Upper-case blocks share the entries of their folded forms.
        if !folded.is_empty() {
            for h in 0..size {
                let f = if block == 2 {
                    (LOWER[h >> 8] as usize) << 8 | LOWER[h & 0xff] as usize
                } else {
                    LOWER[h] as usize
                };
                if f != h {
                    table[h] = table[f];
                }
            }
        }
        Ok(WuManberEngine {
            m,
            block,
            table,
            bucket_start,
            bucket_slots,
            folded,
        })
    }

    #[inline]
    fn scan(&self, hay: &[u8], mut emit: impl FnMut(u32, usize)) {
        if self.folded.is_empty() || hay.len() < self.m {
            return;
        }
        let m = self.m;
        let t = &self.table[..];
        let mut i = 0usize; // window start
        let last = hay.len() - m;
        while i <= last {
            let end = i + m;
            let h = if self.block == 2 {
                (hay[end - 2] as usize) << 8 | hay[end - 1] as usize
            } else {
                hay[end - 1] as usize
            };
            let e = t[h];
            if e & BUCKET == 0 {
                i += e as usize;
                continue;
            }
            let b = (e & !BUCKET) as usize;
            let (a, z) = (
                self.bucket_start[b] as usize,
                self.bucket_start[b + 1] as usize,
            );
            for &slot in &self.bucket_slots[a..z] {
                let k = &self.folded.keys[slot as usize];
                if let Some(w) = hay.get(i..i + k.len()) {
                    if w.eq_ignore_ascii_case(k) {
                        self.folded
                            .report(hay, slot as usize, i + k.len(), &mut |id| {
                                emit(id, i + k.len())
                            });
                    }
                }
            }
            i += 1;
        }
    }
}

impl PrefilterEngine for WuManberEngine {
    fn name(&self) -> &'static str {
        "wm"
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        crate::scan_each(batch, sink, |hay, emit| self.scan(hay, emit));
    }

    fn scan_ids(&self, hay: &[u8], sink: &mut dyn FnMut(u32)) {
        self.scan(hay, |id, _| sink(id));
    }

    fn heap_bytes(&self) -> usize {
        (self.table.len() + self.bucket_start.len() + self.bucket_slots.len()) * 4
            + self.folded.heap_bytes()
    }

    fn pattern_count(&self) -> usize {
        self.folded.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors;

    #[test]
    fn shared_vectors() {
        vectors::check_engine(|p| Box::new(WuManberEngine::new(p).unwrap()));
    }

    #[test]
    fn long_patterns_shift_far() {
        let p = vec![Pattern {
            id: 0,
            bytes: b"abcdefgh".to_vec(),
            nocase: false,
        }];
        let e = WuManberEngine::new(&p).unwrap();
        assert_eq!((e.m, e.block), (8, 2));
        assert_eq!(e.table[0], 7);
    }
}
