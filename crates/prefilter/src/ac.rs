//! Aho-Corasick through BurntSushi's `aho-corasick` crate: the first CPU
//! engine, and the one the others are measured against.
//!
//! Patterns that are equal ignoring ASCII case are inserted once (in a
//! case-folding automaton); each automaton pattern keeps the list of caller
//! patterns behind it, and case-sensitive ones are confirmed against the
//! haystack after a hit (MIDeA's trick for case-insensitive matching).

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind, StartKind};

use crate::{BuildError, Pattern, PrefilterEngine, PrefilterMatch};

#[derive(Debug, Clone)]
struct Member {
    id: u32,
    /// `None` for nocase members (no confirmation needed).
    exact: Option<Box<[u8]>>,
}

#[derive(Debug, Clone)]
pub struct AhoCorasickEngine {
    automaton: Option<AhoCorasick>,
    /// Caller patterns behind each automaton pattern.
    members: Vec<Vec<Member>>,
    /// True when every member of the automaton pattern is nocase.
    all_nocase: Vec<bool>,
    pattern_count: usize,
    heap: usize,
}

impl AhoCorasickEngine {
    /// Builds the engine. Empty patterns are ignored.
    pub fn new(patterns: &[Pattern]) -> Result<Self, BuildError> {
        Self::with_kind(patterns, None)
    }

    /// Builds with an explicit automaton kind (`None`: let the crate pick).
    pub fn with_kind(
        patterns: &[Pattern],
        kind: Option<AhoCorasickKind>,
    ) -> Result<Self, BuildError> {
        let mut index: std::collections::HashMap<Vec<u8>, usize> = Default::default();
        let mut folded: Vec<Vec<u8>> = Vec::new();
        let mut members: Vec<Vec<Member>> = Vec::new();
        let mut count = 0;
        for p in patterns.iter().filter(|p| !p.bytes.is_empty()) {
            count += 1;
            let key = p.bytes.to_ascii_lowercase();
            let slot = *index.entry(key.clone()).or_insert_with(|| {
                folded.push(key);
                members.push(Vec::new());
                folded.len() - 1
            });
            let exact = if p.nocase || !p.bytes.iter().any(u8::is_ascii_alphabetic) {
                None
            } else {
                Some(p.bytes.clone().into_boxed_slice())
            };
            members[slot].push(Member { id: p.id, exact });
        }
        let all_nocase = members
            .iter()
            .map(|m| m.iter().all(|m| m.exact.is_none()))
            .collect();
        let automaton = if folded.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::Standard)
                    .start_kind(StartKind::Unanchored)
                    .kind(kind)
                    .build(&folded)
                    .map_err(|e| BuildError(e.to_string()))?,
            )
        };
        let heap = automaton.as_ref().map_or(0, |a| a.memory_usage())
            + members
                .iter()
                .flatten()
                .map(|m| 16 + m.exact.as_ref().map_or(0, |e| e.len()))
                .sum::<usize>();
        Ok(AhoCorasickEngine {
            automaton,
            members,
            all_nocase,
            pattern_count: count,
            heap,
        })
    }

    #[inline]
    fn report(&self, hay: &[u8], slot: usize, end: usize, mut emit: impl FnMut(u32)) {
        if self.all_nocase[slot] {
            for m in &self.members[slot] {
                emit(m.id);
            }
            return;
        }
        for m in &self.members[slot] {
            match &m.exact {
                None => emit(m.id),
                Some(bytes) => {
                    // The automaton found the folded pattern ending at `end`,
                    // so the slice is in bounds and of the same length.
                    if hay.get(end - bytes.len()..end) == Some(&bytes[..]) {
                        emit(m.id)
                    }
                }
            }
        }
    }
}

impl PrefilterEngine for AhoCorasickEngine {
    fn name(&self) -> &'static str {
        "ac"
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        let Some(ac) = &self.automaton else { return };
        for (bi, hay) in batch.iter().enumerate() {
            for m in ac.find_overlapping_iter(*hay) {
                let end = m.end();
                self.report(hay, m.pattern().as_usize(), end, |id| {
                    sink(PrefilterMatch {
                        buffer: bi as u32,
                        pattern: id,
                        end: end as u32,
                    })
                });
            }
        }
    }

    fn scan_ids(&self, hay: &[u8], sink: &mut dyn FnMut(u32)) {
        let Some(ac) = &self.automaton else { return };
        for m in ac.find_overlapping_iter(hay) {
            self.report(hay, m.pattern().as_usize(), m.end(), &mut *sink);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.heap
    }

    fn pattern_count(&self) -> usize {
        self.pattern_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors;

    #[test]
    fn shared_vectors() {
        vectors::check_engine(|p| Box::new(AhoCorasickEngine::new(p).unwrap()));
    }

    #[test]
    fn empty_engine_reports_nothing() {
        let e = AhoCorasickEngine::new(&[]).unwrap();
        let mut n = 0;
        e.scan_batch(&[b"anything"], &mut |_| n += 1);
        assert_eq!(n, 0);
    }
}
