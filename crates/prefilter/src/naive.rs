//! The reference engine: checks every pattern at every offset. Slow and
//! obviously correct; the differential tests compare every other engine to
//! it.

use crate::{Pattern, PrefilterEngine, PrefilterMatch};

#[derive(Debug, Clone)]
pub struct NaiveEngine {
    patterns: Vec<Pattern>,
}

impl NaiveEngine {
    pub fn new(patterns: &[Pattern]) -> Self {
        NaiveEngine {
            patterns: patterns
                .iter()
                .filter(|p| !p.bytes.is_empty())
                .cloned()
                .collect(),
        }
    }
}

fn eq_at(hay: &[u8], pat: &[u8], nocase: bool) -> bool {
    if nocase {
        hay.eq_ignore_ascii_case(pat)
    } else {
        hay == pat
    }
}

impl PrefilterEngine for NaiveEngine {
    fn name(&self) -> &'static str {
        "naive"
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        for (bi, hay) in batch.iter().enumerate() {
            for end in 1..=hay.len() {
                for p in &self.patterns {
                    let n = p.bytes.len();
                    if n <= end && eq_at(&hay[end - n..end], &p.bytes, p.nocase) {
                        sink(PrefilterMatch {
                            buffer: bi as u32,
                            pattern: p.id,
                            end: end as u32,
                        });
                    }
                }
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.patterns.iter().map(|p| p.bytes.len() + 32).sum()
    }

    fn pattern_count(&self) -> usize {
        self.patterns.len()
    }
}
