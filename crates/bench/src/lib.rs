//! The string-matching study (`vigil bench prefilter`): Antonatos et al.'s
//! experiment (cost of each algorithm against the number of rules, the
//! packet size and the payload kind) on this machine, for every Vigil
//! prefilter engine and for `auto`, plus MIDeA's Table 2 (memory of the
//! automaton layouts) for a whole ruleset.
//!
//! Inputs are plain data (fast patterns, payloads) so the study does not
//! depend on rule parsing; `vigil bench` supplies them.

pub mod payloads;
pub mod study;
pub mod svg;
pub mod synth;
pub mod table2;

/// A small deterministic generator (xorshift64*), so runs are repeatable.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}
