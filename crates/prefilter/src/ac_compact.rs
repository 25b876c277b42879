//! AC-Compact: MIDeA's banded-row layout of the Aho-Corasick automaton.
//!
//! Each state stores only the band of its goto row from the first to the
//! last byte that has a (non-failure) transition, plus the band's first
//! byte and its offset in one shared array; bytes outside the band, and
//! zero entries inside it, mean "follow the failure link". The root's row
//! is stored whole (its missing transitions lead back to the root). The
//! next state is therefore computed, not looked up, which costs some speed
//! for a table one to two orders of magnitude smaller than AC-Full's.
//!
//! The layout is flat on purpose — three arrays of plain integers — so the
//! device engine can upload it as is:
//! - `rows[s] = Row { off, fail, lo, len }` (12 bytes per state);
//! - `band[off..off + len]`: next state for bytes `lo..lo + len`, with
//!   [`MATCH`] set when the next state has matches, 0 for "fail";
//! - match lists as in AC-Full (`out_start`, `out_slots`).
//!
//! Input bytes are folded to lower case before each transition.

use crate::fold::{Folded, LOWER};
use crate::trie::Trie;
use crate::{BuildError, DeviceTables, Pattern, PrefilterEngine, PrefilterMatch};

/// Flag bit of a band entry: the next state has matches.
pub const MATCH: u32 = 1 << 31;

/// One state's banded row.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub struct Row {
    /// Offset of the band in [`AcCompactEngine::band`].
    pub off: u32,
    /// Failure link.
    pub fail: u32,
    /// First byte of the band.
    pub lo: u16,
    /// Band length (0 for states without goto transitions; 256 for the root).
    pub len: u16,
}

#[derive(Debug, Clone)]
pub struct AcCompactEngine {
    rows: Vec<Row>,
    band: Vec<u32>,
    out_start: Vec<u32>,
    out_slots: Vec<u32>,
    folded: Folded,
}

impl AcCompactEngine {
    /// Builds the engine. Empty patterns are ignored.
    pub fn new(patterns: &[Pattern]) -> Result<Self, BuildError> {
        let folded = Folded::new(patterns);
        let trie = Trie::build(&folded);
        if trie.states() >= MATCH as usize {
            return Err(BuildError("too many states for AC-Compact".into()));
        }
        let flag = |n: u32| {
            n | if trie.out[n as usize].is_empty() {
                0
            } else {
                MATCH
            }
        };
        let mut rows = Vec::with_capacity(trie.states());
        let mut band = Vec::new();
        for s in 0..trie.states() {
            let goto = &trie.goto[s];
            let (lo, len) = if s == 0 {
                (0usize, 256usize)
            } else {
                match (goto.first(), goto.last()) {
                    (Some(&(a, _)), Some(&(b, _))) => (a as usize, b as usize - a as usize + 1),
                    _ => (0, 0),
                }
            };
            let off = band.len();
            band.resize(off + len, 0);
            for &(b, n) in goto {
                band[off + b as usize - lo] = flag(n);
            }
            rows.push(Row {
                off: off as u32,
                fail: trie.fail[s],
                lo: lo as u16,
                len: len as u16,
            });
        }
        let (out_start, out_slots) = trie.flat_outputs();
        Ok(AcCompactEngine {
            rows,
            band,
            out_start,
            out_slots,
            folded,
        })
    }

    /// Number of automaton states.
    pub fn states(&self) -> usize {
        self.rows.len()
    }

    /// The banded table: per-state rows and the shared band array.
    pub fn layout(&self) -> (&[Row], &[u32]) {
        (&self.rows, &self.band)
    }

    #[inline]
    fn scan(&self, hay: &[u8], mut emit: impl FnMut(u32, usize)) {
        if self.folded.is_empty() {
            return;
        }
        let rows = &self.rows[..];
        let band = &self.band[..];
        let mut s = 0usize;
        for (i, &c) in hay.iter().enumerate() {
            let b = LOWER[c as usize] as usize;
            let e = loop {
                let r = rows[s];
                let k = b.wrapping_sub(r.lo as usize);
                if k < r.len as usize {
                    let e = band[r.off as usize + k];
                    if e != 0 {
                        break e;
                    }
                }
                if s == 0 {
                    break 0;
                }
                s = r.fail as usize;
            };
            s = (e & !MATCH) as usize;
            if e & MATCH != 0 {
                let (a, z) = (self.out_start[s] as usize, self.out_start[s + 1] as usize);
                for &slot in &self.out_slots[a..z] {
                    self.folded
                        .report(hay, slot as usize, i + 1, &mut |id| emit(id, i + 1));
                }
            }
        }
    }
}

impl PrefilterEngine for AcCompactEngine {
    fn name(&self) -> &'static str {
        "ac-compact"
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        crate::scan_each(batch, sink, |hay, emit| self.scan(hay, emit));
    }

    fn scan_ids(&self, hay: &[u8], sink: &mut dyn FnMut(u32)) {
        self.scan(hay, |id, _| sink(id));
    }

    fn heap_bytes(&self) -> usize {
        self.rows.len() * std::mem::size_of::<Row>()
            + self.band.len() * 4
            + (self.out_start.len() + self.out_slots.len()) * 4
            + self.folded.heap_bytes()
    }

    fn pattern_count(&self) -> usize {
        self.folded.count
    }

    fn device_tables(&self) -> Option<DeviceTables<'_>> {
        if self.folded.is_empty() {
            return None;
        }
        Some(DeviceTables::AcCompact {
            rows: &self.rows,
            band: &self.band,
            out_start: &self.out_start,
            out_slots: &self.out_slots,
        })
    }

    fn report_slot(&self, hay: &[u8], slot: u32, end: usize, emit: &mut dyn FnMut(u32)) {
        self.folded
            .report(hay, slot as usize, end, &mut |id| emit(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors;

    #[test]
    fn shared_vectors() {
        vectors::check_engine(|p| Box::new(AcCompactEngine::new(p).unwrap()));
    }

    #[test]
    fn bands_are_narrow() {
        let p: Vec<Pattern> = ["hello", "help", "world"]
            .iter()
            .enumerate()
            .map(|(i, s)| Pattern {
                id: i as u32,
                bytes: s.as_bytes().to_vec(),
                nocase: false,
            })
            .collect();
        let e = AcCompactEngine::new(&p).unwrap();
        // Root row of 256, one entry per inner state, "hel" l..p (5).
        let (rows, band) = e.layout();
        assert_eq!(rows.len(), 12);
        assert_eq!(band.len(), 256 + 7 + 5);
    }
}
