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
    out
}

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
    ]
}

/// Runs the shared vectors and a randomized differential test against an
/// engine built by `build`.
pub(crate) fn check_engine(build: impl Fn(&[Pattern]) -> Box<dyn PrefilterEngine>) {
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
    for round in 0..300 {
        let alpha: &[u8] = if round % 3 == 0 {
            b"aAb"
        } else {
            b"abcABC\x00\xff"
        };
        let npat = 1 + (next() % 12) as usize;
        let pats: Vec<Pattern> = (0..npat)
            .map(|i| {
                let len = 1 + (next() % 4) as usize;
                let bytes: Vec<u8> = (0..len)
                    .map(|_| alpha[(next() % alpha.len() as u64) as usize])
                    .collect();
                pat(i as u32, &bytes, next() % 2 == 0)
            })
            .collect();
        let bufs: Vec<Vec<u8>> = (0..3)
            .map(|_| {
                let len = (next() % 40) as usize;
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
