//! Single-pattern search for `content`: exact (memchr's `memmem`) and
//! ASCII case-insensitive (`nocase`).

use memchr::memmem;

/// A precompiled searcher for one pattern. Always returns the leftmost
/// occurrence, like Suricata's single-pattern matchers.
#[derive(Clone, Debug)]
pub(crate) enum Searcher {
    Exact(Box<memmem::Finder<'static>>),
    NoCase(NoCase),
}

/// Case-insensitive search: scan for the rarest byte of the pattern (in
/// both cases) with `memchr2`, then compare the whole pattern folded.
#[derive(Clone, Debug)]
pub(crate) struct NoCase {
    /// The pattern, lower-cased.
    lower: Vec<u8>,
    /// Index of the byte used as the scan anchor.
    anchor: usize,
    /// The anchor byte in lower and upper case.
    lo: u8,
    up: u8,
}

impl Searcher {
    pub(crate) fn new(pattern: &[u8], nocase: bool) -> Searcher {
        if nocase && pattern.iter().any(u8::is_ascii_alphabetic) {
            let lower = pattern.to_ascii_lowercase();
            let anchor = (0..lower.len())
                .min_by_key(|&i| rank(lower[i]))
                .unwrap_or(0);
            let lo = lower[anchor];
            Searcher::NoCase(NoCase {
                anchor,
                lo,
                up: lo.to_ascii_uppercase(),
                lower,
            })
        } else {
            // Without letters, case folding changes nothing.
            Searcher::Exact(Box::new(memmem::Finder::new(pattern).into_owned()))
        }
    }

    /// Start of the leftmost occurrence in `hay`.
    #[inline]
    pub(crate) fn find(&self, hay: &[u8]) -> Option<usize> {
        match self {
            Searcher::Exact(f) => f.find(hay),
            Searcher::NoCase(n) => n.find(hay),
        }
    }

    /// Whether the pattern occurs at `pos` in `hay`.
    #[inline]
    pub(crate) fn is_at(&self, hay: &[u8], pos: usize) -> bool {
        match self {
            Searcher::Exact(f) => {
                let n = f.needle();
                hay.get(pos..pos + n.len()) == Some(n)
            }
            Searcher::NoCase(n) => hay
                .get(pos..pos + n.lower.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(&n.lower)),
        }
    }
}

impl NoCase {
    fn find(&self, hay: &[u8]) -> Option<usize> {
        let n = self.lower.len();
        if n == 0 {
            return Some(0);
        }
        if hay.len() < n {
            return None;
        }
        // Candidate starts are 0..=hay.len()-n; the anchor byte of the
        // candidate starting at s sits at s + anchor.
        let last_start = hay.len() - n;
        let region = &hay[self.anchor..=last_start + self.anchor];
        let mut base = 0;
        while base < region.len() {
            let rest = &region[base..];
            let hit = if self.lo == self.up {
                memchr::memchr(self.lo, rest)
            } else {
                memchr::memchr2(self.lo, self.up, rest)
            };
            let start = base + hit?;
            if hay[start..start + n].eq_ignore_ascii_case(&self.lower) {
                return Some(start);
            }
            base = start + 1;
        }
        None
    }
}

/// How common a (lower-cased) byte is in typical traffic; lower is rarer.
/// A rough heuristic only: it picks the anchor byte, never the result.
fn rank(b: u8) -> u8 {
    const COMMON: &[u8] = b"\0 etaoinshrdlcumwfgypbvk\r\n./-=:0123456789\xff";
    match COMMON.iter().position(|&c| c == b) {
        Some(i) => 255 - i as u8,
        None if b.is_ascii_alphabetic() => 200,
        None if b.is_ascii_punctuation() => 150,
        None => 100,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(p: &[u8], h: &[u8], nocase: bool) -> Option<usize> {
        if p.len() > h.len() {
            return None;
        }
        (0..=h.len() - p.len()).find(|&i| {
            if nocase {
                h[i..i + p.len()].eq_ignore_ascii_case(p)
            } else {
                &h[i..i + p.len()] == p
            }
        })
    }

    #[test]
    fn nocase_matches_naive() {
        let hays: &[&[u8]] = &[
            b"",
            b"a",
            b"xxHeLLo",
            b"hellhello",
            b"HELLO",
            b"zzzzq",
            b"qQqQz",
        ];
        let pats: &[&[u8]] = &[b"hello", b"q", b"Qz", b"LL", b"z", b"lo"];
        for h in hays {
            for p in pats {
                let s = Searcher::new(p, true);
                assert_eq!(s.find(h), naive(p, h, true), "{:?} in {:?}", p, h);
                let s = Searcher::new(p, false);
                assert_eq!(s.find(h), naive(p, h, false), "{:?} in {:?}", p, h);
            }
        }
    }

    #[test]
    fn is_at_checks_bounds() {
        let s = Searcher::new(b"Ab", true);
        assert!(s.is_at(b"xaB", 1));
        assert!(!s.is_at(b"xaB", 2));
        let s = Searcher::new(b"ab", false);
        assert!(s.is_at(b"xab", 1));
        assert!(!s.is_at(b"xaB", 1));
        assert!(!s.is_at(b"xa", 1));
    }
}
