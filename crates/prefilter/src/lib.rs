//! Multi-pattern prefilter engines: the first phase of detection.
//!
//! A prefilter engine is built once from the fast patterns of one rule group
//! and then answers, for every inspection buffer of a batch, which of those
//! patterns occur and where they end. Detection verifies the rules behind
//! the reported pattern ids in full afterwards, so an engine may report a
//! pattern more than once but must never miss an occurrence.
//!
//! The contract is batch-shaped on purpose: CPU engines simply loop over the
//! batch, while device engines (OpenCL, later) ship the whole batch in one
//! transfer, as MIDeA does.
//!
//! Case-insensitive patterns follow MIDeA's trick where an engine does not
//! fold case itself: every pattern is inserted in lower case into a
//! case-folding automaton, and case-sensitive ones are confirmed against
//! the buffer after a hit (see [`ac::AhoCorasickEngine`]).

pub mod ac;
pub mod naive;

pub use ac::AhoCorasickEngine;
pub use naive::NaiveEngine;

/// A pattern handed to an engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// Caller-chosen id, reported back on a match.
    pub id: u32,
    pub bytes: Vec<u8>,
    /// Match ignoring ASCII case.
    pub nocase: bool,
}

/// One occurrence of a pattern in a buffer of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PrefilterMatch {
    /// Index of the buffer in the batch.
    pub buffer: u32,
    pub pattern: u32,
    /// Offset one past the last byte of the occurrence.
    pub end: u32,
}

/// The contract every prefilter engine implements.
pub trait PrefilterEngine: Send + Sync + std::fmt::Debug {
    /// Short engine name, for stats and logs.
    fn name(&self) -> &'static str;

    /// Scans every buffer of `batch` and calls `sink` for each occurrence of
    /// each pattern (overlapping occurrences included), in buffer order and,
    /// within a buffer, in an engine-defined order.
    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch));

    /// Calls `sink(pattern_id)` at least once for every pattern that occurs
    /// in `haystack`. Engines may override this with something cheaper than
    /// enumerating every occurrence.
    fn scan_ids(&self, haystack: &[u8], sink: &mut dyn FnMut(u32)) {
        self.scan_batch(&[haystack], &mut |m| sink(m.pattern));
    }

    /// Approximate heap bytes held by the engine's tables.
    fn heap_bytes(&self) -> usize;

    /// Number of patterns the engine was built from.
    fn pattern_count(&self) -> usize;
}

/// Errors while building an engine.
#[derive(Debug)]
pub struct BuildError(pub String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "prefilter build failed: {}", self.0)
    }
}
impl std::error::Error for BuildError {}

#[cfg(test)]
pub(crate) mod vectors;
