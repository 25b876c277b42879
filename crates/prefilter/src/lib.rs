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
//!
//! Engines ([`EngineKind`]), each in its own module behind the one trait:
//! - `ac`: BurntSushi's `aho-corasick` crate (it picks its own automaton);
//! - `ac-full`: dense DFA, 256 entries per state ([`ac_full`]);
//! - `ac-compact`: MIDeA's banded rows ([`ac_compact`]);
//! - `wm`: Wu-Manber over 2-byte blocks ([`wu_manber`]);
//! - `e2xb`: exclusion-based matching ([`e2xb`]);
//! - `bmh`: Boyer-Moore-Horspool, for single-pattern groups ([`bmh`]);
//! - `hs`: Hyperscan/Vectorscan literal API (feature `hyperscan`).
//!
//! [`select`] picks one per rule group, fixed or by measurement (`auto`).

pub mod ac;
pub mod ac_compact;
pub mod ac_full;
pub mod bmh;
pub mod e2xb;
mod fold;
#[cfg(feature = "hyperscan")]
pub mod hyperscan;
pub mod naive;
pub mod select;
mod trie;
pub mod wu_manber;

pub use ac::AhoCorasickEngine;
pub use ac_compact::AcCompactEngine;
pub use ac_full::AcFullEngine;
pub use bmh::BmhEngine;
pub use e2xb::E2xbEngine;
#[cfg(feature = "hyperscan")]
pub use hyperscan::HyperscanEngine;
pub use naive::NaiveEngine;
pub use select::{Route, Selection, SelectionReport, Selector, SplitMode, TrafficSample, NO_GROUP};
pub use wu_manber::WuManberEngine;

/// The engines, by their `--prefilter` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineKind {
    Ac,
    AcFull,
    AcCompact,
    Wm,
    E2xb,
    Bmh,
    Hs,
}

impl EngineKind {
    pub const ALL: [EngineKind; 7] = [
        EngineKind::Ac,
        EngineKind::AcFull,
        EngineKind::AcCompact,
        EngineKind::Wm,
        EngineKind::E2xb,
        EngineKind::Bmh,
        EngineKind::Hs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Ac => "ac",
            EngineKind::AcFull => "ac-full",
            EngineKind::AcCompact => "ac-compact",
            EngineKind::Wm => "wm",
            EngineKind::E2xb => "e2xb",
            EngineKind::Bmh => "bmh",
            EngineKind::Hs => "hs",
        }
    }

    pub fn parse(s: &str) -> Option<EngineKind> {
        EngineKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// False for `hs` when built without the `hyperscan` feature or on a
    /// processor the library does not support.
    pub fn available(self) -> bool {
        match self {
            #[cfg(feature = "hyperscan")]
            EngineKind::Hs => hyperscan::available(),
            #[cfg(not(feature = "hyperscan"))]
            EngineKind::Hs => false,
            _ => true,
        }
    }

    /// The engines this build offers.
    pub fn available_kinds() -> Vec<EngineKind> {
        EngineKind::ALL
            .into_iter()
            .filter(|k| k.available())
            .collect()
    }

    /// Builds an engine of this kind over `patterns`.
    pub fn build(self, patterns: &[Pattern]) -> Result<Box<dyn PrefilterEngine>, BuildError> {
        self.build_cached(patterns, None)
    }

    /// [`EngineKind::build`] with a cache directory for compiled Hyperscan
    /// databases (the other engines build in milliseconds and ignore it).
    pub fn build_cached(
        self,
        patterns: &[Pattern],
        hs_cache: Option<&std::path::Path>,
    ) -> Result<Box<dyn PrefilterEngine>, BuildError> {
        #[cfg(not(feature = "hyperscan"))]
        let _ = hs_cache;
        Ok(match self {
            EngineKind::Ac => Box::new(AhoCorasickEngine::new(patterns)?),
            EngineKind::AcFull => Box::new(AcFullEngine::new(patterns)?),
            EngineKind::AcCompact => Box::new(AcCompactEngine::new(patterns)?),
            EngineKind::Wm => Box::new(WuManberEngine::new(patterns)?),
            EngineKind::E2xb => Box::new(E2xbEngine::new(patterns)?),
            EngineKind::Bmh => Box::new(BmhEngine::new(patterns)?),
            #[cfg(feature = "hyperscan")]
            EngineKind::Hs => Box::new(HyperscanEngine::with_cache(patterns, hs_cache)?),
            #[cfg(not(feature = "hyperscan"))]
            EngineKind::Hs => {
                return Err(BuildError(
                    "Hyperscan support not compiled in (build with --features hyperscan)".into(),
                ))
            }
        })
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Automaton sizes of a pattern set (for the memory table of the study).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutomatonSize {
    /// Distinct case-folded patterns.
    pub distinct: usize,
    /// Aho-Corasick states.
    pub states: usize,
    /// Bytes of AC-Full's table and match lists (computed, not built).
    pub ac_full_bytes: usize,
    /// Bytes of AC-Compact's rows, bands and match lists.
    pub ac_compact_bytes: usize,
}

/// Computes the Aho-Corasick sizes of a pattern set without building the
/// dense table (which for large sets takes gigabytes).
pub fn automaton_size(patterns: &[Pattern]) -> AutomatonSize {
    let folded = fold::Folded::new(patterns);
    let t = trie::Trie::build(&folded);
    let (start, slots) = t.flat_outputs();
    let lists = (start.len() + slots.len()) * 4 + folded.heap_bytes();
    let band: usize = (1..t.states())
        .map(|s| match (t.goto[s].first(), t.goto[s].last()) {
            (Some(a), Some(b)) => (b.0 - a.0) as usize + 1,
            _ => 0,
        })
        .sum::<usize>()
        + 256;
    AutomatonSize {
        distinct: folded.keys.len(),
        states: t.states(),
        ac_full_bytes: AcFullEngine::table_bytes_for(t.states()) + lists,
        ac_compact_bytes: t.states() * std::mem::size_of::<ac_compact::Row>() + band * 4 + lists,
    }
}

/// A pattern handed to an engine.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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

    /// The automaton's tables, for engines a device can run (AC-Full and
    /// AC-Compact); `None` for the others. The device reports folded
    /// pattern slots, which [`PrefilterEngine::report_slot`] turns into
    /// caller ids exactly as the CPU scan does.
    fn device_tables(&self) -> Option<DeviceTables<'_>> {
        None
    }

    /// Calls `emit` with the caller pattern ids behind folded slot `slot`
    /// found ending at `end` in `hay` (case-sensitive members confirmed
    /// against `hay`). Only meaningful for engines with
    /// [`PrefilterEngine::device_tables`].
    fn report_slot(&self, hay: &[u8], slot: u32, end: usize, emit: &mut dyn FnMut(u32)) {
        let _ = (hay, slot, end, emit);
    }
}

/// An Aho-Corasick automaton laid out for upload to a device.
#[derive(Debug, Clone, Copy)]
pub enum DeviceTables<'a> {
    /// AC-Full's dense table, in one of its two id widths (see
    /// [`ac_full`]); input bytes index it directly (case folded in).
    AcFull {
        table: AcFullTable<'a>,
        out_start: &'a [u32],
        out_slots: &'a [u32],
    },
    /// AC-Compact's banded rows (see [`ac_compact`]); input bytes are
    /// folded to lower case before each transition.
    AcCompact {
        rows: &'a [ac_compact::Row],
        band: &'a [u32],
        out_start: &'a [u32],
        out_slots: &'a [u32],
    },
}

/// AC-Full's table as stored.
#[derive(Debug, Clone, Copy)]
pub enum AcFullTable<'a> {
    /// `state << 8 | byte` -> `next | 0x8000` (bit 15: next has matches).
    U16(&'a [u16]),
    /// `(state << 8) + byte` -> `(next << 8) | has_match`.
    U32(&'a [u32]),
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

/// The engines' shared test vectors, also for engines outside this crate
/// (the OpenCL device engine): feature `test-vectors`.
#[cfg(any(test, feature = "test-vectors"))]
#[doc(hidden)]
pub mod vectors;

/// `scan_batch` for engines that scan one buffer at a time with a
/// `(pattern, end)` callback: tags each hit with its buffer's index.
pub(crate) fn scan_each(
    batch: &[&[u8]],
    sink: &mut dyn FnMut(PrefilterMatch),
    mut scan: impl FnMut(&[u8], &mut dyn FnMut(u32, usize)),
) {
    for (bi, hay) in batch.iter().enumerate() {
        scan(hay, &mut |pattern, end| {
            sink(PrefilterMatch {
                buffer: bi as u32,
                pattern,
                end: end as u32,
            })
        });
    }
}
