//! E2xB: exclusion-based matching (Anagnostakis, Markatos et al., as
//! Antonatos et al. describe it). For each buffer, an occurrence map of its
//! fixed-size elements (folded 2-byte pairs, and single bytes for 1-byte
//! patterns) is built; a pattern with any element missing from the buffer
//! cannot occur and is excluded at once. The rare survivors are verified
//! with a substring search over the folded buffer, and exact patterns are
//! confirmed after a hit.
//!
//! Cost per buffer: linear in its length for the map, plus one map probe
//! per pattern (more for survivors), so E2xB shines with short buffers
//! and moderate pattern counts.

use std::cell::RefCell;

use memchr::memmem;

use crate::fold::{Folded, LOWER};
use crate::{BuildError, Pattern, PrefilterEngine, PrefilterMatch};

#[derive(Debug, Clone)]
pub struct E2xbEngine {
    /// Distinct elements of each slot: `elems[start[i]..start[i+1]]`; a
    /// 1-byte slot has the byte itself as its only element.
    elem_start: Vec<u32>,
    elems: Vec<u16>,
    /// Slots that are one byte long.
    single: Vec<bool>,
    has_single: bool,
    finders: Vec<memmem::Finder<'static>>,
    folded: Folded,
}

struct Scratch {
    /// One bit per folded 2-byte element.
    pairs: Vec<u64>,
    /// One bit per folded byte.
    bytes: [u64; 4],
    lowered: Vec<u8>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            pairs: vec![0; 1024],
            bytes: [0; 4],
            lowered: Vec::new(),
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

#[inline]
fn pair(a: u8, b: u8) -> usize {
    (LOWER[a as usize] as usize) << 8 | LOWER[b as usize] as usize
}

impl E2xbEngine {
    /// Builds the engine. Empty patterns are ignored.
    pub fn new(patterns: &[Pattern]) -> Result<Self, BuildError> {
        let folded = Folded::new(patterns);
        let mut elem_start = vec![0u32];
        let mut elems = Vec::new();
        let mut single = Vec::new();
        let mut finders = Vec::new();
        for k in &folded.keys {
            let mut e: Vec<u16> = if k.len() == 1 {
                vec![k[0] as u16]
            } else {
                k.windows(2).map(|w| pair(w[0], w[1]) as u16).collect()
            };
            e.sort_unstable();
            e.dedup();
            elems.extend(e);
            elem_start.push(elems.len() as u32);
            single.push(k.len() == 1);
            finders.push(memmem::Finder::new(&k[..]).into_owned());
        }
        Ok(E2xbEngine {
            elem_start,
            elems,
            has_single: single.iter().any(|&b| b),
            single,
            finders,
            folded,
        })
    }

    fn scan(&self, hay: &[u8], emit: &mut dyn FnMut(u32, usize)) {
        if self.folded.is_empty() || hay.is_empty() {
            return;
        }
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut s) => self.scan_with(&mut s, hay, emit),
            // A sink that scans again with E2xB on this thread: use a
            // scratch of its own.
            Err(_) => self.scan_with(&mut Scratch::new(), hay, emit),
        });
    }

    fn scan_with(&self, s: &mut Scratch, hay: &[u8], emit: &mut dyn FnMut(u32, usize)) {
        {
            for w in hay.windows(2) {
                let p = pair(w[0], w[1]);
                s.pairs[p >> 6] |= 1 << (p & 63);
            }
            if self.has_single {
                for &c in hay {
                    let b = LOWER[c as usize] as usize;
                    s.bytes[b >> 6] |= 1 << (b & 63);
                }
            }
            let mut lowered = false;
            for slot in 0..self.single.len() {
                let (a, z) = (
                    self.elem_start[slot] as usize,
                    self.elem_start[slot + 1] as usize,
                );
                let present = if self.single[slot] {
                    let b = self.elems[a] as usize;
                    s.bytes[b >> 6] & (1 << (b & 63)) != 0
                } else {
                    self.elems[a..z]
                        .iter()
                        .all(|&p| s.pairs[p as usize >> 6] & (1 << (p & 63)) != 0)
                };
                if !present {
                    continue;
                }
                if !lowered {
                    s.lowered.clear();
                    s.lowered.extend(hay.iter().map(|&c| LOWER[c as usize]));
                    lowered = true;
                }
                let n = self.folded.keys[slot].len();
                // Overlapping occurrences too: restart one byte later.
                let mut from = 0;
                while let Some(i) = self.finders[slot].find(&s.lowered[from..]) {
                    let end = from + i + n;
                    self.folded.report(hay, slot, end, &mut |id| emit(id, end));
                    from += i + 1;
                }
            }
            // Leave the maps clear for the next buffer.
            if hay.len() > 2048 {
                s.pairs.fill(0);
            } else {
                for w in hay.windows(2) {
                    let p = pair(w[0], w[1]);
                    s.pairs[p >> 6] = 0;
                }
            }
            s.bytes = [0; 4];
        }
    }
}

impl PrefilterEngine for E2xbEngine {
    fn name(&self) -> &'static str {
        "e2xb"
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
        self.elem_start.len() * 4
            + self.elems.len() * 2
            + self.single.len()
            + self.folded.keys.iter().map(|k| k.len() + 64).sum::<usize>()
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
        vectors::check_engine(|p| Box::new(E2xbEngine::new(p).unwrap()));
    }

    #[test]
    fn maps_are_left_clear() {
        let p = vec![Pattern {
            id: 0,
            bytes: b"xyz".to_vec(),
            nocase: false,
        }];
        let e = E2xbEngine::new(&p).unwrap();
        let long = vec![b'x'; 5000];
        let mut n = 0;
        e.scan_batch(&[b"..xy..yz..", &long, b"x"], &mut |_| n += 1);
        assert_eq!(n, 0);
        SCRATCH.with(|s| assert!(s.borrow().pairs.iter().all(|&w| w == 0)));
    }
}
