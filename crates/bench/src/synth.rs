//! Synthetic rule sets the way the seed recommends: permutations of real
//! patterns (a real pattern's bytes shuffled: same length, same byte mix,
//! same case flag), and, for comparison, random strings whose lengths
//! follow the real length distribution.

use vigil_prefilter::Pattern;

use crate::Rng;

/// How a synthetic set is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    /// Permutations of real patterns.
    Permuted,
    /// Random bytes, real lengths.
    Random,
}

impl SetKind {
    pub fn name(self) -> &'static str {
        match self {
            SetKind::Permuted => "permuted",
            SetKind::Random => "random",
        }
    }
}

/// `n` patterns synthesised from `seed` (ids 0..n).
pub fn make(seed: &[Pattern], n: usize, kind: SetKind, rng: &mut Rng) -> Vec<Pattern> {
    let seed: Vec<&Pattern> = seed.iter().filter(|p| !p.bytes.is_empty()).collect();
    (0..n)
        .map(|i| {
            let src = seed[rng.below(seed.len())];
            let bytes = match kind {
                SetKind::Permuted => {
                    let mut b = src.bytes.clone();
                    for j in (1..b.len()).rev() {
                        b.swap(j, rng.below(j + 1));
                    }
                    b
                }
                SetKind::Random => (0..src.bytes.len()).map(|_| rng.next_u64() as u8).collect(),
            };
            Pattern {
                id: i as u32,
                bytes,
                nocase: src.nocase,
            }
        })
        .collect()
}

/// A small built-in pattern list (HTTP and shell strings, a few binary),
/// for runs without a ruleset.
pub fn builtin() -> Vec<Pattern> {
    let words: &[&[u8]] = &[
        b"GET ",
        b"POST ",
        b"User-Agent: ",
        b"/etc/passwd",
        b"cmd.exe",
        b"/bin/sh",
        b"union select",
        b"<script",
        b"Content-Type: application/x-",
        b"eval(",
        b"\x90\x90\x90\x90",
        b"MZ",
        b"PK\x03\x04",
        b"\xff\xfeS\x00M\x00B",
        b"../..",
        b"wget http",
        b"powershell",
        b"base64_decode",
        b"Host: ",
        b".php?id=",
        b"HTTP/1.",
        b"\x00\x01\x00\x00",
        b"admin",
        b"passwd",
        b"Authorization: Basic",
    ];
    words
        .iter()
        .enumerate()
        .map(|(i, w)| Pattern {
            id: i as u32,
            bytes: w.to_vec(),
            nocase: i % 3 == 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_keep_lengths_and_bytes() {
        let seed = builtin();
        let mut rng = Rng::new(3);
        for p in make(&seed, 50, SetKind::Permuted, &mut rng) {
            let mut a = p.bytes.clone();
            a.sort_unstable();
            assert!(seed.iter().any(|s| {
                let mut b = s.bytes.clone();
                b.sort_unstable();
                a == b
            }));
        }
    }
}
