//! Property tests: the payload engine against naive reference
//! implementations of Suricata's content semantics.

use proptest::prelude::*;
use vigil_detect::payload::{CompiledPayload, VarTable, MAX_VARS};
use vigil_rules::{
    ByteExtract, ByteJump, ByteMath, ByteTest, CmpOp, Content, Endian, IntCmp, IsDataAt, MathOp,
    NumBase, NumOrVar, NumOrVar64, NumOrVarSigned, PayloadItem, Pcre,
};

fn content(pattern: Vec<u8>) -> Content {
    Content {
        pattern,
        negated: false,
        nocase: false,
        offset: None,
        depth: None,
        distance: None,
        within: None,
        startswith: false,
        endswith: false,
        rawbytes: false,
        replace: None,
        fast_pattern: None,
    }
}

/// A small alphabet with case variants, so that matches (and nocase
/// matches) are frequent.
fn alpha() -> impl Strategy<Value = u8> {
    prop::sample::select(vec![b'a', b'b', b'A', b'B', b'c'])
}

fn pattern() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(alpha(), 1..=3)
}

fn buffer() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(alpha(), 0..=16)
}

/// An absolute content: offset/depth, startswith, endswith (not negated),
/// nocase, negation.
fn absolute_content() -> impl Strategy<Value = Content> {
    (
        pattern(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(0u32..6),
        prop::option::of(1u32..8),
        0u8..6,
    )
        .prop_map(|(p, negated, nocase, offset, depth, anchor)| {
            let mut c = content(p);
            c.negated = negated;
            c.nocase = nocase;
            match anchor {
                0 => c.startswith = true,
                1 if !negated => c.endswith = true,
                _ => {}
            }
            if !c.startswith {
                c.offset = offset.map(NumOrVar::Num);
                c.depth = depth.map(NumOrVar::Num);
            }
            c
        })
}

fn eq(a: &[u8], b: &[u8], nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

fn num(v: &Option<NumOrVar>) -> Option<u32> {
    v.as_ref().map(|v| match v {
        NumOrVar::Num(n) => *n,
        NumOrVar::Var(_) => unreachable!(),
    })
}

/// Whether the pattern occurs in `buf[start..end]` (and, for endswith,
/// ends at the end of the buffer, which must also be the window end).
fn occurs(c: &Content, buf: &[u8], start: usize, end: usize) -> bool {
    let n = c.pattern.len();
    if c.endswith && end != buf.len() {
        return false;
    }
    (start..end)
        .filter(|&i| i + n <= end)
        .filter(|&i| !c.endswith || i + n == buf.len())
        .any(|i| eq(&buf[i..i + n], &c.pattern, c.nocase))
}

/// Naive reference for one absolute content.
fn absolute_ok(c: &Content, buf: &[u8]) -> bool {
    let len = buf.len();
    let offset = if c.startswith {
        0
    } else {
        num(&c.offset).unwrap_or(0) as usize
    };
    let depth = if c.startswith {
        Some(c.pattern.len() as u32)
    } else {
        num(&c.depth)
    };
    let end = match depth {
        Some(d) => (offset + d as usize).min(len),
        None => len,
    };
    let found = offset <= end && end != 0 && occurs(c, buf, offset, end);
    found != c.negated
}

/// The window of a relative content after a previous match ending at
/// `prev_end`, as Suricata computes it; `None` when empty.
fn relative_window(c: &Content, prev_end: usize, len: usize) -> Option<(usize, usize)> {
    let d = match &c.distance {
        Some(NumOrVarSigned::Num(d)) => *d as i64,
        Some(NumOrVarSigned::Var(_)) => unreachable!(),
        None => 0,
    };
    let start = (prev_end as i64 + d).max(0) as usize;
    let end = match num(&c.within) {
        // The generator keeps within + distance >= 0.
        Some(w) => ((prev_end as i64 + w as i64 + d) as usize).min(len),
        None => len,
    };
    (start <= end && end != 0).then_some((start, end))
}

fn chain_content() -> impl Strategy<Value = (Content, Content)> {
    (
        pattern(),
        any::<bool>(),
        prop::option::of(0u32..4),
        pattern(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(-3i32..5),
        prop::option::of(0u32..7),
    )
        .prop_filter_map(
            "need distance or within",
            |(pa, na, oa, pb, nb, negb, d, w)| {
                if d.is_none() && w.is_none() {
                    return None;
                }
                let mut a = content(pa);
                a.nocase = na;
                a.offset = oa.map(NumOrVar::Num);
                let mut b = content(pb);
                b.nocase = nb;
                b.negated = negb;
                b.distance = d.map(NumOrVarSigned::Num);
                // Suricata rejects within < pattern length; keep within +
                // distance >= 0 so the window end is never before the buffer.
                b.within = w.map(|w| {
                    let min = (b.pattern.len() as i32).max(-d.unwrap_or(0));
                    NumOrVar::Num((w as i32).max(min) as u32)
                });
                Some((a, b))
            },
        )
}

fn eval(items: &[PayloadItem], buf: &[u8]) -> (bool, usize) {
    let prog = CompiledPayload::compile(items, &mut VarTable::default()).unwrap();
    (prog.matches(buf, &mut [0u64; MAX_VARS]), prog.min_len())
}

/// Any keyword, with small parameters; variables are `v0`/`v1`, defined
/// by the first two (byte_extract) items of [`any_program`].
fn any_item() -> impl Strategy<Value = PayloadItem> {
    let base = prop::sample::select(vec![
        NumBase::Binary,
        NumBase::Dec,
        NumBase::Hex,
        NumBase::Oct,
    ]);
    let endian = prop::sample::select(vec![Endian::Big, Endian::Little]);
    let var = prop::sample::select(vec!["v0".to_string(), "v1".to_string()]);
    let offset = prop_oneof![
        (-6i32..12).prop_map(NumOrVarSigned::Num),
        var.clone().prop_map(NumOrVarSigned::Var)
    ];
    let unsigned = prop_oneof![
        (0u32..12).prop_map(NumOrVar::Num),
        var.clone().prop_map(NumOrVar::Var)
    ];
    let nbytes = |b: NumBase, n: u8| {
        if b == NumBase::Binary {
            n % 9
        } else {
            n % 23 + 1
        }
    };
    prop_oneof![
        (
            chain_content(),
            any::<bool>(),
            prop::option::of(unsigned.clone()),
            prop::option::of(unsigned.clone())
        )
            .prop_map(|((a, mut b), first, o, d)| {
                if first {
                    PayloadItem::Content(a)
                } else {
                    b.offset = o;
                    b.depth = d;
                    PayloadItem::Content(b)
                }
            }),
        (
            prop::sample::select(vec!["a+", "^b", "(a|b)c$", "[ab]{2}", "x?"]),
            any::<[bool; 9]>()
        )
            .prop_map(|(p, f)| {
                PayloadItem::Pcre(Pcre {
                    negated: f[0],
                    pattern: p.to_string(),
                    caseless: f[1],
                    dotall: f[2],
                    multiline: f[3],
                    extended: false,
                    anchored: f[4],
                    dollar_endonly: f[5],
                    ungreedy: f[6],
                    relative: f[7],
                    rawbytes: f[8],
                    buffer_flag: None,
                    captures: Vec::new(),
                })
            }),
        (
            base.clone(),
            endian.clone(),
            any::<u8>(),
            any::<[bool; 3]>(),
            0u64..300,
            offset.clone(),
            prop::option::of(1u64..0x1ff),
            0usize..8
        )
            .prop_map(move |(base, endian, n, f, value, offset, bitmask, op)| {
                PayloadItem::ByteTest(ByteTest {
                    nbytes: nbytes(base, n),
                    nbytes_var: None,
                    negated: f[0],
                    op: [
                        CmpOp::Lt,
                        CmpOp::Le,
                        CmpOp::Gt,
                        CmpOp::Ge,
                        CmpOp::Eq,
                        CmpOp::Ne,
                        CmpOp::And,
                        CmpOp::Xor,
                    ][op],
                    value: if f[2] {
                        NumOrVar64::Var("v0".into())
                    } else {
                        NumOrVar64::Num(value)
                    },
                    offset,
                    relative: f[1],
                    endian,
                    base,
                    bitmask,
                    dce: false,
                })
            }),
        (
            base.clone(),
            endian.clone(),
            any::<u8>(),
            any::<[bool; 4]>(),
            offset,
            0u32..4,
            -8i32..8,
            prop::option::of(1u64..0xff)
        )
            .prop_map(
                move |(base, endian, n, f, offset, multiplier, post_offset, bitmask)| {
                    PayloadItem::ByteJump(ByteJump {
                        nbytes: nbytes(base, n),
                        nbytes_var: None,
                        offset,
                        relative: f[0],
                        multiplier,
                        endian,
                        base,
                        align: f[1],
                        from_beginning: f[2],
                        from_end: f[3] && !f[2],
                        post_offset,
                        bitmask,
                        dce: false,
                    })
                }
            ),
        (
            base.clone(),
            endian.clone(),
            any::<u8>(),
            any::<bool>(),
            -6i32..12,
            0u32..4,
            prop::sample::select(vec![0u8, 2, 4])
        )
            .prop_map(
                move |(base, endian, n, relative, offset, multiplier, align)| {
                    PayloadItem::ByteExtract(ByteExtract {
                        nbytes: nbytes(base, n),
                        offset,
                        name: "v1".into(),
                        relative,
                        multiplier,
                        endian,
                        base,
                        align,
                        bitmask: None,
                        dce: false,
                    })
                }
            ),
        (
            base,
            endian,
            any::<u8>(),
            any::<[bool; 2]>(),
            -6i32..12,
            0usize..6,
            0u64..70,
            prop::option::of(1u64..0xff)
        )
            .prop_map(move |(base, endian, n, f, offset, op, rvalue, bitmask)| {
                PayloadItem::ByteMath(ByteMath {
                    nbytes: nbytes(base, n),
                    nbytes_var: None,
                    offset,
                    op: [
                        MathOp::Add,
                        MathOp::Sub,
                        MathOp::Mul,
                        MathOp::Div,
                        MathOp::Shl,
                        MathOp::Shr,
                    ][op],
                    rvalue: if f[1] {
                        NumOrVar64::Var("v0".into())
                    } else {
                        NumOrVar64::Num(rvalue)
                    },
                    result: "v0".into(),
                    relative: f[0],
                    endian,
                    base,
                    bitmask,
                    dce: false,
                })
            }),
        (any::<[bool; 2]>(), unsigned).prop_map(|(f, offset)| {
            PayloadItem::IsDataAt(IsDataAt {
                negated: f[0],
                offset,
                relative: f[1],
                rawbytes: false,
            })
        }),
        (0u64..20, 0u64..20)
            .prop_map(|(a, b)| PayloadItem::Bsize(IntCmp::RangeEx(a.min(b), a.max(b)))),
    ]
}

fn any_program() -> impl Strategy<Value = Vec<PayloadItem>> {
    prop::collection::vec(any_item(), 1..6).prop_map(|mut items| {
        for (i, name) in ["v0", "v1"].iter().enumerate() {
            items.insert(
                i,
                PayloadItem::ByteExtract(ByteExtract {
                    nbytes: 1,
                    offset: i as i32,
                    name: name.to_string(),
                    relative: false,
                    multiplier: 1,
                    endian: Endian::Big,
                    base: NumBase::Binary,
                    align: 0,
                    bitmask: None,
                    dce: false,
                }),
            );
        }
        items
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Absolute contents (offset, depth, startswith, endswith, nocase,
    /// negation) are independent: the rule matches when each holds.
    #[test]
    fn absolute_contents_match_reference(
        contents in prop::collection::vec(absolute_content(), 1..=4),
        buf in buffer(),
    ) {
        let expected = contents.iter().all(|c| absolute_ok(c, &buf));
        let items: Vec<PayloadItem> = contents.into_iter().map(PayloadItem::Content).collect();
        let (got, min_len) = eval(&items, &buf);
        prop_assert_eq!(got, expected, "items {:?} buf {:?}", items, String::from_utf8_lossy(&buf));
        if got {
            prop_assert!(buf.len() >= min_len);
        }
    }

    /// `a; b (relative)`: with Suricata's retries the rule matches when
    /// some occurrence of `a` has `b` in (negated: not in) its window.
    #[test]
    fn relative_pair_matches_reference((a, b) in chain_content(), buf in buffer()) {
        let len = buf.len();
        let a_start = num(&a.offset).unwrap_or(0) as usize;
        let n = a.pattern.len();
        let expected = (a_start..len)
            .filter(|&i| i + n <= len && eq(&buf[i..i + n], &a.pattern, a.nocase))
            .any(|i| {
                let found = match relative_window(&b, i + n, len) {
                    Some((s, e)) => occurs(&b, &buf, s, e),
                    None => false,
                };
                found != b.negated
            });
        let items = vec![PayloadItem::Content(a), PayloadItem::Content(b)];
        let (got, min_len) = eval(&items, &buf);
        prop_assert_eq!(got, expected, "items {:?} buf {:?}", items, String::from_utf8_lossy(&buf));
        if got {
            prop_assert!(buf.len() >= min_len);
        }
    }

    /// Arbitrary bytes never make evaluation panic, and `min_len` is a
    /// lower bound.
    #[test]
    fn no_panic_on_random_buffers(
        contents in prop::collection::vec(absolute_content(), 1..=3),
        buf in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let items: Vec<PayloadItem> = contents.into_iter().map(PayloadItem::Content).collect();
        let (got, min_len) = eval(&items, &buf);
        prop_assert!(!got || buf.len() >= min_len);
    }

    /// Every keyword kind on arbitrary bytes: no panic, and `min_len` is
    /// a lower bound.
    #[test]
    fn any_program_is_safe(items in any_program(), buf in prop::collection::vec(any::<u8>(), 0..40)) {
        let prog = CompiledPayload::compile(&items, &mut VarTable::default()).unwrap();
        let got = prog.matches(&buf, &mut [0u64; MAX_VARS]);
        prop_assert!(!got || buf.len() >= prog.min_len(), "{:?}", items);
        // Digits and small values make string conversions and jumps hit.
        let digits: Vec<u8> = buf.iter().map(|b| b"0123456789abcd \x01"[(*b % 16) as usize]).collect();
        let got = prog.matches(&digits, &mut [0u64; MAX_VARS]);
        prop_assert!(!got || digits.len() >= prog.min_len(), "{:?}", items);
    }
}
