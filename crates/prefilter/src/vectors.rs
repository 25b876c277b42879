//! Test vectors shared by every engine, and a randomized comparison against
//! the naive reference.

use std::collections::BTreeSet;

use crate::{NaiveEngine, Pattern, PrefilterEngine, PrefilterMatch};

fn pat(id: u32, bytes: &[u8], nocase: bool) -> Pattern {
    Pattern {
        id,
        bytes: bytes.to_vec(),
        nocase,
    }
}

fn run(e: &dyn PrefilterEngine, batch: &[&[u8]]) -> BTreeSet<PrefilterMatch> {
    let mut out = BTreeSet::new();
    e.scan_batch(batch, &mut |m| {
        out.insert(m);
    });
    check_ids(e, batch, &out);
    out
}

/// `scan_ids` reports exactly the patterns that `scan_batch` found in each
/// buffer (each at least once).
fn check_ids(e: &dyn PrefilterEngine, batch: &[&[u8]], found: &BTreeSet<PrefilterMatch>) {
    for (bi, hay) in batch.iter().enumerate() {
        let want: BTreeSet<u32> = found
            .iter()
            .filter(|m| m.buffer == bi as u32)
            .map(|m| m.pattern)
            .collect();
        let mut got = BTreeSet::new();
        e.scan_ids(hay, &mut |id| {
            got.insert(id);
        });
        assert_eq!(
            got,
            want,
            "scan_ids of buffer {bi} with engine {}",
            e.name()
        );
    }
}

static ALL_BYTES: &[u8] = &{
    let mut a = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        a[i] = i as u8;
        i += 1;
    }
    a
};

/// (patterns, batch, expected (buffer, pattern, end) triples)
type Vector = (Vec<Pattern>, Vec<&'static [u8]>, Vec<(u32, u32, u32)>);

fn table() -> Vec<Vector> {
    vec![
        // Overlapping patterns and prefixes of each other.
        (
            vec![
                pat(1, b"he", false),
                pat(2, b"she", false),
                pat(3, b"hers", false),
            ],
            vec![b"ushers"],
            vec![(0, 2, 4), (0, 1, 4), (0, 3, 6)],
        ),
        // Case: exact pattern must not match other case; nocase must.
        (
            vec![pat(1, b"GET", false), pat(2, b"get", true)],
            vec![b"get GET gEt"],
            vec![(0, 2, 3), (0, 1, 7), (0, 2, 7), (0, 2, 11)],
        ),
        // One-byte and binary patterns, several buffers.
        (
            vec![pat(7, b"\x00", false), pat(8, b"\xff\xfe", false)],
            vec![b"\x00\xff\xfe", b"", b"\xfe\xff"],
            vec![(0, 7, 1), (0, 8, 3)],
        ),
        // The same bytes under two ids, one nocase and one exact.
        (
            vec![pat(1, b"abc", false), pat(2, b"ABC", true)],
            vec![b"xABCx abc"],
            vec![(0, 2, 4), (0, 1, 9), (0, 2, 9)],
        ),
        // Repeated overlapping occurrences.
        (
            vec![pat(1, b"aa", false)],
            vec![b"aaaa"],
            vec![(0, 1, 2), (0, 1, 3), (0, 1, 4)],
        ),
        // A chain of prefixes, each a prefix of the next, with a 1-byte one.
        (
            vec![
                pat(1, b"a", false),
                pat(2, b"ab", false),
                pat(3, b"abc", false),
                pat(4, b"abcd", true),
            ],
            vec![b"xABCDabcd"],
            vec![(0, 4, 5), (0, 1, 6), (0, 2, 7), (0, 3, 8), (0, 4, 9)],
        ),
        // Suffixes of each other: failure links must keep inner outputs.
        (
            vec![
                pat(1, b"bcd", false),
                pat(2, b"cd", false),
                pat(3, b"abcde", false),
            ],
            vec![b"abcdx", b"abcde"],
            vec![(0, 1, 4), (0, 2, 4), (1, 1, 4), (1, 2, 4), (1, 3, 5)],
        ),
        // Only binary bytes, case bits that are not letters (0xc1 vs 0xe1,
        // '@' vs '`', '[' vs '{') must never fold, nocase or not.
        (
            vec![
                pat(1, b"\xc1\x00", true),
                pat(2, b"@[", true),
                pat(3, b"\x00\x00\x00", false),
            ],
            vec![b"\xe1\x00 \xc1\x00 `{ @[ \x00\x00\x00\x00"],
            vec![(0, 1, 5), (0, 2, 11), (0, 3, 15), (0, 3, 16)],
        ),
        // A pattern longer than every buffer, next to a 1-byte one.
        (
            vec![pat(1, b"longer than the buffer", false), pat(2, b"t", true)],
            vec![b"short", b"T", b""],
            vec![(0, 2, 5), (1, 2, 1)],
        ),
        // Duplicate patterns under different ids, both exact.
        (
            vec![
                pat(5, b"dup", false),
                pat(6, b"dup", false),
                pat(7, b"DUP", false),
            ],
            vec![b"dup DUP Dup"],
            vec![(0, 5, 3), (0, 6, 3), (0, 7, 7)],
        ),
        // Empty patterns are ignored.
        (
            vec![pat(1, b"", false), pat(2, b"z", false)],
            vec![b"zz"],
            vec![(0, 2, 1), (0, 2, 2)],
        ),
        // Matches at the very start and end, with all 256 byte values.
        (
            vec![pat(1, b"\x00\x01", false), pat(2, b"\xfe\xff", false)],
            vec![ALL_BYTES],
            vec![(0, 1, 2), (0, 2, 256)],
        ),
    ]
}

/// Runs the shared vectors and a randomized differential test against an
/// engine built by `build`.
pub fn check_engine(build: impl Fn(&[Pattern]) -> Box<dyn PrefilterEngine>) {
    check_engine_rounds(build, 600)
}

/// [`check_engine`] with `rounds` randomized rounds (for engines that are
/// slow to build).
pub fn check_engine_rounds(build: impl Fn(&[Pattern]) -> Box<dyn PrefilterEngine>, rounds: usize) {
    for (i, (pats, batch, want)) in table().into_iter().enumerate() {
        let e = build(&pats);
        let got = run(e.as_ref(), &batch);
        let want: BTreeSet<_> = want
            .into_iter()
            .map(|(buffer, pattern, end)| PrefilterMatch {
                buffer,
                pattern,
                end,
            })
            .collect();
        assert_eq!(got, want, "vector {i} with engine {}", e.name());
        assert_eq!(got, run(&NaiveEngine::new(&pats), &batch), "naive {i}");
    }
    // Randomized: small alphabets force many overlaps and prefixes.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..rounds {
        let alpha: &[u8] = match round % 4 {
            0 => b"aAb",
            1 => b"abcABC\x00\xff",
            // Letters next to their non-letter case-bit twins.
            2 => b"aA@`[{\xc1\xe1",
            _ => b"xyXY\x80\x01",
        };
        let npat = match round % 5 {
            0 => 1,
            4 => 20 + (next() % 60) as usize,
            _ => 1 + (next() % 12) as usize,
        };
        let mut pats: Vec<Pattern> = (0..npat)
            .map(|i| {
                let len = 1 + (next() % if round % 7 == 0 { 9 } else { 4 }) as usize;
                let bytes: Vec<u8> = (0..len)
                    .map(|_| alpha[(next() % alpha.len() as u64) as usize])
                    .collect();
                pat(i as u32, &bytes, next() % 2 == 0)
            })
            .collect();
        // Prefixes of other patterns, and exact/nocase twins.
        if round % 3 == 0 && !pats.is_empty() {
            let src = pats[(next() % pats.len() as u64) as usize].clone();
            let id = pats.len() as u32;
            pats.push(pat(
                id,
                &src.bytes[..1 + (next() as usize % src.bytes.len())],
                false,
            ));
            pats.push(pat(id + 1, &src.bytes, !src.nocase));
        }
        let bufs: Vec<Vec<u8>> = (0..3)
            .map(|_| {
                let len = (next() % if round % 11 == 0 { 400 } else { 40 }) as usize;
                (0..len)
                    .map(|_| alpha[(next() % alpha.len() as u64) as usize])
                    .collect()
            })
            .collect();
        let batch: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
        let e = build(&pats);
        assert_eq!(
            run(e.as_ref(), &batch),
            run(&NaiveEngine::new(&pats), &batch),
            "round {round}: {pats:?} {bufs:?}"
        );
    }
}
