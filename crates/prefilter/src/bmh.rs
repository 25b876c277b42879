//! Boyer-Moore-Horspool: the single-pattern algorithm Fisk and Varghese
//! recommend for groups with one rule. A set of several patterns is
//! searched one pattern at a time (cost grows with the set, which is why
//! `auto` only considers it for tiny groups). Matching is on folded bytes;
//! exact patterns are confirmed after a hit. One-byte patterns use
//! `memchr`.

use crate::fold::{Folded, LOWER};
use crate::{BuildError, Pattern, PrefilterEngine, PrefilterMatch};

#[derive(Debug, Clone)]
struct Horspool {
    /// Bad-character shift per input byte (case folded), capped at 255.
    shift: Box<[u8; 256]>,
}

impl Horspool {
    fn new(key: &[u8]) -> Horspool {
        let m = key.len();
        let mut shift = Box::new([m.min(255) as u8; 256]);
        for (j, &c) in key[..m - 1].iter().enumerate() {
            let s = (m - 1 - j).min(255) as u8;
            shift[c as usize] = s;
            shift[c.to_ascii_uppercase() as usize] = s;
        }
        Horspool { shift }
    }
}

#[derive(Debug, Clone)]
pub struct BmhEngine {
    tables: Vec<Horspool>,
    folded: Folded,
}

impl BmhEngine {
    /// Builds the engine. Empty patterns are ignored.
    pub fn new(patterns: &[Pattern]) -> Result<Self, BuildError> {
        let folded = Folded::new(patterns);
        let tables = folded.keys.iter().map(|k| Horspool::new(k)).collect();
        Ok(BmhEngine { tables, folded })
    }

    fn scan(&self, hay: &[u8], emit: &mut dyn FnMut(u32, usize)) {
        for (slot, (key, t)) in self.folded.keys.iter().zip(&self.tables).enumerate() {
            let m = key.len();
            if m > hay.len() {
                continue;
            }
            if m == 1 {
                let c = key[0];
                let u = c.to_ascii_uppercase();
                let mut each = |at: usize| {
                    self.folded
                        .report(hay, slot, at + 1, &mut |id| emit(id, at + 1))
                };
                if u != c {
                    memchr::memchr2_iter(c, u, hay).for_each(&mut each);
                } else {
                    memchr::memchr_iter(c, hay).for_each(&mut each);
                }
                continue;
            }
            let lastc = key[m - 1];
            let mut i = 0usize;
            while i + m <= hay.len() {
                let c = hay[i + m - 1];
                if LOWER[c as usize] == lastc
                    && hay[i..i + m - 1].eq_ignore_ascii_case(&key[..m - 1])
                {
                    self.folded
                        .report(hay, slot, i + m, &mut |id| emit(id, i + m));
                }
                i += t.shift[c as usize] as usize;
            }
        }
    }
}

impl PrefilterEngine for BmhEngine {
    fn name(&self) -> &'static str {
        "bmh"
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        for (bi, hay) in batch.iter().enumerate() {
            self.scan(hay, &mut |pattern, end| {
                sink(PrefilterMatch {
                    buffer: bi as u32,
                    pattern,
                    end: end as u32,
                })
            });
        }
    }

    fn scan_ids(&self, hay: &[u8], sink: &mut dyn FnMut(u32)) {
        self.scan(hay, &mut |id, _| sink(id));
    }

    fn heap_bytes(&self) -> usize {
        self.tables.len() * 256 + self.folded.heap_bytes()
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
        vectors::check_engine(|p| Box::new(BmhEngine::new(p).unwrap()));
    }
}
