//! AC-Full: Aho-Corasick as a dense DFA, 256 next-state entries per state
//! (MIDeA's "full state representation"), with match lists per state.
//!
//! Case folding is built into the table: the columns of the upper-case
//! ASCII letters repeat those of the lower-case ones, so scanning needs one
//! load per input byte and no folding; case-sensitive patterns are
//! confirmed after a hit ([`crate::fold`]).
//!
//! Ids are `u16` when the automaton has at most 32,767 states (state index
//! in the low 15 bits, "has matches" in the top bit) and `u32` otherwise
//! (state index premultiplied by 256, so the next row starts at the id
//! itself, and "has matches" in bit 0).

use crate::fold::{Folded, LOWER};
use crate::trie::Trie;
use crate::{AcFullTable, BuildError, DeviceTables, Pattern, PrefilterEngine, PrefilterMatch};

/// Largest table AC-Full builds, in bytes (see [`AcFullEngine::new`]).
pub const MAX_TABLE_BYTES: usize = 1 << 31;

#[derive(Debug, Clone)]
enum Table {
    Empty,
    /// `state << 8 | byte` -> `next | MATCH16`.
    U16(Vec<u16>),
    /// `(state << 8) + byte` -> `(next << 8) | has_match`.
    U32(Vec<u32>),
}

const MATCH16: u16 = 0x8000;

#[derive(Debug, Clone)]
pub struct AcFullEngine {
    table: Table,
    /// Match list of state `s`: `out_slots[out_start[s]..out_start[s + 1]]`.
    out_start: Vec<u32>,
    out_slots: Vec<u32>,
    folded: Folded,
    states: usize,
}

impl AcFullEngine {
    /// Builds the engine. Empty patterns are ignored. Fails when the
    /// table would exceed [`MAX_TABLE_BYTES`].
    pub fn new(patterns: &[Pattern]) -> Result<Self, BuildError> {
        let folded = Folded::new(patterns);
        let trie = Trie::build(&folded);
        Self::from_trie(folded, &trie)
    }

    /// Table bytes AC-Full would use for a trie of `states` states.
    pub fn table_bytes_for(states: usize) -> usize {
        states * 256 * if states <= 0x7fff { 2 } else { 4 }
    }

    fn from_trie(folded: Folded, trie: &Trie) -> Result<Self, BuildError> {
        let states = trie.states();
        if folded.is_empty() {
            return Ok(AcFullEngine {
                table: Table::Empty,
                out_start: Vec::new(),
                out_slots: Vec::new(),
                folded,
                states,
            });
        }
        let bytes = Self::table_bytes_for(states);
        if bytes > MAX_TABLE_BYTES || states >= 1 << 24 {
            return Err(BuildError(format!(
                "AC-Full table of {states} states would take {bytes} bytes"
            )));
        }
        // Dense rows in breadth-first order: a state's row is its failure
        // state's row overridden by its own goto transitions (the root's
        // missing transitions lead back to the root).
        let mut rows: Vec<u32> = vec![0; states * 256];
        for &s in &trie.bfs {
            let s = s as usize;
            if s != 0 {
                let f = trie.fail[s] as usize;
                rows.copy_within(f * 256..f * 256 + 256, s * 256);
            }
            for &(b, n) in &trie.goto[s] {
                rows[s * 256 + b as usize] = n;
            }
        }
        // Fold case into the table: upper-case columns copy lower-case ones.
        for s in 0..states {
            for b in b'A'..=b'Z' {
                rows[s * 256 + b as usize] = rows[s * 256 + LOWER[b as usize] as usize];
            }
        }
        let has_match: Vec<bool> = trie.out.iter().map(|o| !o.is_empty()).collect();
        let table = if states <= 0x7fff {
            Table::U16(
                rows.iter()
                    .map(|&n| n as u16 | if has_match[n as usize] { MATCH16 } else { 0 })
                    .collect(),
            )
        } else {
            Table::U32(
                rows.iter()
                    .map(|&n| (n << 8) | has_match[n as usize] as u32)
                    .collect(),
            )
        };
        let (out_start, out_slots) = trie.flat_outputs();
        Ok(AcFullEngine {
            table,
            out_start,
            out_slots,
            folded,
            states,
        })
    }

    /// Number of automaton states.
    pub fn states(&self) -> usize {
        self.states
    }

    #[inline]
    fn emit_state(&self, hay: &[u8], state: usize, end: usize, emit: &mut impl FnMut(u32)) {
        let (a, b) = (
            self.out_start[state] as usize,
            self.out_start[state + 1] as usize,
        );
        for &slot in &self.out_slots[a..b] {
            self.folded.report(hay, slot as usize, end, emit);
        }
    }

    #[inline]
    fn scan(&self, hay: &[u8], mut emit: impl FnMut(u32, usize)) {
        match &self.table {
            Table::Empty => {}
            Table::U16(t) => {
                let mut s = 0usize;
                for (i, &c) in hay.iter().enumerate() {
                    let e = t[(s << 8) | c as usize];
                    s = (e & !MATCH16) as usize;
                    if e & MATCH16 != 0 {
                        self.emit_state(hay, s, i + 1, &mut |id| emit(id, i + 1));
                    }
                }
            }
            Table::U32(t) => {
                let mut s = 0usize;
                for (i, &c) in hay.iter().enumerate() {
                    let e = t[s + c as usize];
                    s = (e & !0xff) as usize;
                    if e & 1 != 0 {
                        self.emit_state(hay, s >> 8, i + 1, &mut |id| emit(id, i + 1));
                    }
                }
            }
        }
    }
}

impl PrefilterEngine for AcFullEngine {
    fn name(&self) -> &'static str {
        "ac-full"
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        crate::scan_each(batch, sink, |hay, emit| self.scan(hay, emit));
    }

    fn scan_ids(&self, hay: &[u8], sink: &mut dyn FnMut(u32)) {
        self.scan(hay, |id, _| sink(id));
    }

    fn heap_bytes(&self) -> usize {
        let table = match &self.table {
            Table::Empty => 0,
            Table::U16(t) => t.len() * 2,
            Table::U32(t) => t.len() * 4,
        };
        table + (self.out_start.len() + self.out_slots.len()) * 4 + self.folded.heap_bytes()
    }

    fn pattern_count(&self) -> usize {
        self.folded.count
    }

    fn device_tables(&self) -> Option<DeviceTables<'_>> {
        let table = match &self.table {
            Table::Empty => return None,
            Table::U16(t) => AcFullTable::U16(t),
            Table::U32(t) => AcFullTable::U32(t),
        };
        Some(DeviceTables::AcFull {
            table,
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
        vectors::check_engine(|p| Box::new(AcFullEngine::new(p).unwrap()));
    }

    #[test]
    fn wide_ids_pass_the_vectors_too() {
        // Enough states for the u32 layout, plus the vector patterns.
        vectors::check_engine_rounds(
            |p| {
                let mut all = p.to_vec();
                for i in 0..9000u32 {
                    all.push(Pattern {
                        id: 1_000_000 + i,
                        bytes: format!("\u{2}{i:05}zzzz").into_bytes(),
                        nocase: false,
                    });
                }
                let e = AcFullEngine::new(&all).unwrap();
                assert!(matches!(e.table, Table::U32(_)));
                Box::new(e)
            },
            30,
        );
    }
}
