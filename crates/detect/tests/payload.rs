//! Table-driven tests of the payload verification engine against
//! Suricata's documented (and, where the docs are silent, implemented)
//! semantics. Items are built directly from the AST types.

use vigil_detect::payload::{CompiledPayload, ListKind, PayloadCompileError, VarTable, MAX_VARS};
use vigil_rules::{
    ByteExtract, ByteJump, ByteMath, ByteTest, CmpOp, Content, Endian, IntCmp, IsDataAt, MathOp,
    NumBase, NumOrVar, NumOrVar64, NumOrVarSigned, PayloadItem, Pcre,
};

// ---------------------------------------------------------------- builders

/// Decodes Suricata content notation: `abc|00 0a|def`.
fn bytes(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut hex = false;
    let mut digits = String::new();
    for ch in s.chars() {
        match (ch, hex) {
            ('|', false) => hex = true,
            ('|', true) => hex = false,
            (' ', true) => {}
            (c, true) => {
                digits.push(c);
                if digits.len() == 2 {
                    out.push(u8::from_str_radix(&digits, 16).unwrap());
                    digits.clear();
                }
            }
            (c, false) => out.extend_from_slice(c.to_string().as_bytes()),
        }
    }
    out
}

struct C(Content);

fn c(p: &str) -> C {
    C(Content {
        pattern: bytes(p),
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
    })
}

impl C {
    fn neg(mut self) -> C {
        self.0.negated = true;
        self
    }
    fn nocase(mut self) -> C {
        self.0.nocase = true;
        self
    }
    fn offset(mut self, n: u32) -> C {
        self.0.offset = Some(NumOrVar::Num(n));
        self
    }
    fn offset_var(mut self, v: &str) -> C {
        self.0.offset = Some(NumOrVar::Var(v.into()));
        self
    }
    fn depth(mut self, n: u32) -> C {
        self.0.depth = Some(NumOrVar::Num(n));
        self
    }
    fn depth_var(mut self, v: &str) -> C {
        self.0.depth = Some(NumOrVar::Var(v.into()));
        self
    }
    fn distance(mut self, n: i32) -> C {
        self.0.distance = Some(NumOrVarSigned::Num(n));
        self
    }
    fn distance_var(mut self, v: &str) -> C {
        self.0.distance = Some(NumOrVarSigned::Var(v.into()));
        self
    }
    fn within(mut self, n: u32) -> C {
        self.0.within = Some(NumOrVar::Num(n));
        self
    }
    fn within_var(mut self, v: &str) -> C {
        self.0.within = Some(NumOrVar::Var(v.into()));
        self
    }
    fn startswith(mut self) -> C {
        self.0.startswith = true;
        self
    }
    fn endswith(mut self) -> C {
        self.0.endswith = true;
        self
    }
    fn i(self) -> PayloadItem {
        PayloadItem::Content(self.0)
    }
}

/// `pcre("!/abc/iR")`: Suricata pcre syntax (without the quotes).
fn pcre(spec: &str) -> PayloadItem {
    let (negated, spec) = match spec.strip_prefix('!') {
        Some(s) => (true, s),
        None => (false, spec),
    };
    let end = spec.rfind('/').unwrap();
    let pattern = spec[1..end].to_string();
    let flags = &spec[end + 1..];
    PayloadItem::Pcre(Pcre {
        negated,
        pattern,
        caseless: flags.contains('i'),
        dotall: flags.contains('s'),
        multiline: flags.contains('m'),
        extended: flags.contains('x'),
        anchored: flags.contains('A'),
        dollar_endonly: flags.contains('E'),
        ungreedy: flags.contains('G'),
        relative: flags.contains('R'),
        rawbytes: flags.contains('B'),
        buffer_flag: None,
        captures: Vec::new(),
    })
}

struct Bt(ByteTest);

fn bt(nbytes: u8, op: CmpOp, value: u64, offset: i32) -> Bt {
    Bt(ByteTest {
        nbytes,
        nbytes_var: None,
        negated: false,
        op,
        value: NumOrVar64::Num(value),
        offset: NumOrVarSigned::Num(offset),
        relative: false,
        endian: Endian::Big,
        base: NumBase::Binary,
        bitmask: None,
        dce: false,
    })
}

impl Bt {
    fn neg(mut self) -> Bt {
        self.0.negated = true;
        self
    }
    fn relative(mut self) -> Bt {
        self.0.relative = true;
        self
    }
    fn little(mut self) -> Bt {
        self.0.endian = Endian::Little;
        self
    }
    fn string(mut self, base: NumBase) -> Bt {
        self.0.base = base;
        self
    }
    fn bitmask(mut self, m: u64) -> Bt {
        self.0.bitmask = Some(m);
        self
    }
    fn value_var(mut self, v: &str) -> Bt {
        self.0.value = NumOrVar64::Var(v.into());
        self
    }
    fn offset_var(mut self, v: &str) -> Bt {
        self.0.offset = NumOrVarSigned::Var(v.into());
        self
    }
    fn i(self) -> PayloadItem {
        PayloadItem::ByteTest(self.0)
    }
}

struct Bj(ByteJump);

fn bj(nbytes: u8, offset: i32) -> Bj {
    Bj(ByteJump {
        nbytes,
        nbytes_var: None,
        offset: NumOrVarSigned::Num(offset),
        relative: false,
        multiplier: 1,
        endian: Endian::Big,
        base: NumBase::Binary,
        align: false,
        from_beginning: false,
        from_end: false,
        post_offset: 0,
        bitmask: None,
        dce: false,
    })
}

impl Bj {
    fn relative(mut self) -> Bj {
        self.0.relative = true;
        self
    }
    fn multiplier(mut self, m: u32) -> Bj {
        self.0.multiplier = m;
        self
    }
    fn align(mut self) -> Bj {
        self.0.align = true;
        self
    }
    fn jump_from_beginning(mut self) -> Bj {
        self.0.from_beginning = true;
        self
    }
    fn jump_from_end(mut self) -> Bj {
        self.0.from_end = true;
        self
    }
    fn post_offset(mut self, n: i32) -> Bj {
        self.0.post_offset = n;
        self
    }
    fn string(mut self, base: NumBase) -> Bj {
        self.0.base = base;
        self
    }
    fn little(mut self) -> Bj {
        self.0.endian = Endian::Little;
        self
    }
    fn bitmask(mut self, m: u64) -> Bj {
        self.0.bitmask = Some(m);
        self
    }
    fn i(self) -> PayloadItem {
        PayloadItem::ByteJump(self.0)
    }
}

struct Be(ByteExtract);

fn be(nbytes: u8, offset: i32, name: &str) -> Be {
    Be(ByteExtract {
        nbytes,
        offset,
        name: name.into(),
        relative: false,
        multiplier: 1,
        endian: Endian::Big,
        base: NumBase::Binary,
        align: 0,
        bitmask: None,
        dce: false,
    })
}

impl Be {
    fn relative(mut self) -> Be {
        self.0.relative = true;
        self
    }
    fn multiplier(mut self, m: u32) -> Be {
        self.0.multiplier = m;
        self
    }
    fn align(mut self, a: u8) -> Be {
        self.0.align = a;
        self
    }
    fn string(mut self, base: NumBase) -> Be {
        self.0.base = base;
        self
    }
    fn little(mut self) -> Be {
        self.0.endian = Endian::Little;
        self
    }
    fn i(self) -> PayloadItem {
        PayloadItem::ByteExtract(self.0)
    }
}

struct Bm(ByteMath);

fn bm(nbytes: u8, offset: i32, op: MathOp, rvalue: u64, result: &str) -> Bm {
    Bm(ByteMath {
        nbytes,
        nbytes_var: None,
        offset,
        op,
        rvalue: NumOrVar64::Num(rvalue),
        result: result.into(),
        relative: false,
        endian: Endian::Big,
        base: NumBase::Binary,
        bitmask: None,
        dce: false,
    })
}

impl Bm {
    fn relative(mut self) -> Bm {
        self.0.relative = true;
        self
    }
    fn rvalue_var(mut self, v: &str) -> Bm {
        self.0.rvalue = NumOrVar64::Var(v.into());
        self
    }
    fn bitmask(mut self, m: u64) -> Bm {
        self.0.bitmask = Some(m);
        self
    }
    fn i(self) -> PayloadItem {
        PayloadItem::ByteMath(self.0)
    }
}

fn isdataat(n: u32) -> PayloadItem {
    PayloadItem::IsDataAt(IsDataAt {
        negated: false,
        offset: NumOrVar::Num(n),
        relative: false,
        rawbytes: false,
    })
}

fn isdataat_full(negated: bool, offset: NumOrVar, relative: bool) -> PayloadItem {
    PayloadItem::IsDataAt(IsDataAt {
        negated,
        offset,
        relative,
        rawbytes: false,
    })
}

fn isdataat_rel(n: u32) -> PayloadItem {
    isdataat_full(false, NumOrVar::Num(n), true)
}

fn run(items: &[PayloadItem], buf: &[u8]) -> bool {
    let mut vars = VarTable::default();
    let prog = CompiledPayload::compile(items, &mut vars).expect("compiles");
    let mut v = [0u64; MAX_VARS];
    prog.matches(buf, &mut v)
}

struct Case {
    name: &'static str,
    items: Vec<PayloadItem>,
    /// (payload, expected)
    bufs: Vec<(Vec<u8>, bool)>,
}

fn case(name: &'static str, items: Vec<PayloadItem>, bufs: &[(&str, bool)]) -> Case {
    Case {
        name,
        items,
        bufs: bufs.iter().map(|(b, e)| (bytes(b), *e)).collect(),
    }
}

fn check(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for cs in &cases {
        for (buf, expected) in &cs.bufs {
            let got = run(&cs.items, buf);
            if got != *expected {
                failures.push(format!(
                    "{}: {:?} -> {} (expected {})",
                    cs.name,
                    String::from_utf8_lossy(buf),
                    got,
                    expected
                ));
            }
        }
    }
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

// ------------------------------------------------------------------ content

#[test]
fn content_modifiers() {
    check(vec![
        case(
            "anywhere",
            vec![c("abc").i()],
            &[("xxabcxx", true), ("xxabxx", false), ("", false)],
        ),
        case(
            "offset",
            vec![c("abc").offset(2).i()],
            &[("xxabc", true), ("xabcx", false), ("xxxabc", true)],
        ),
        case(
            "depth",
            vec![c("abc").depth(3).i()],
            &[("abcx", true), ("xabc", false), ("ab", false)],
        ),
        case(
            "depth counts from offset",
            vec![c("abc").offset(1).depth(3).i()],
            &[("xabc", true), ("xxabc", false), ("abc", false)],
        ),
        case(
            "distance",
            vec![c("ab").i(), c("cd").distance(2).i()],
            &[("abxxcd", true), ("abxcd", false), ("abxxxxcd", true)],
        ),
        case(
            "distance 0 means anywhere after",
            vec![c("ab").i(), c("cd").distance(0).i()],
            &[("abcd", true), ("cdab", false), ("abxxxcd", true)],
        ),
        case(
            "negative distance",
            vec![c("cd").i(), c("ab").distance(-4).i()],
            &[("abcd", true), ("cdab", true), ("cdxx", false)],
        ),
        case(
            "negative distance with within",
            vec![c("cd").i(), c("bc").distance(-3).within(2).i()],
            &[("abcd", true), ("xbcd", true), ("abxd", false)],
        ),
        case(
            "negative distance window after the pattern",
            vec![c("cd").i(), c("bc").distance(-2).within(2).i()],
            &[("abcd", false)],
        ),
        case(
            "within",
            vec![c("ab").i(), c("cd").within(4).i()],
            &[("abxxcd", true), ("abxxxcd", false), ("abcd", true)],
        ),
        case(
            "distance and within",
            vec![c("ab").i(), c("cd").distance(1).within(3).i()],
            &[
                ("abxcd", true),
                ("abcd", false),
                ("abxxcd", true),
                ("abxxxcd", false),
            ],
        ),
        case(
            "relative first content is relative to the buffer start",
            vec![c("ab").distance(1).within(3).i()],
            &[
                ("xab", true),
                ("ab", false),
                ("xxab", true),
                ("xxxab", false),
            ],
        ),
        case(
            "startswith",
            vec![c("GET").startswith().i()],
            &[("GET /", true), (" GET", false), ("GE", false)],
        ),
        case(
            "endswith",
            vec![c("html").endswith().i()],
            &[
                ("a.html", true),
                ("a.html?", false),
                ("htmlhtml", true),
                ("html", true),
            ],
        ),
        case(
            "startswith and endswith",
            vec![c("abc").startswith().endswith().i()],
            &[("abc", true), ("abcabc", false), ("xabc", false)],
        ),
        case(
            "endswith after a relative content",
            vec![c("a").i(), c("b").distance(0).endswith().i()],
            &[("xaxb", true), ("xbxa", false), ("abab", true)],
        ),
        case(
            "negated",
            vec![c("evil").neg().i()],
            &[
                ("good", true),
                ("evil", false),
                ("", true),
                ("xevilx", false),
            ],
        ),
        case(
            "negated offset",
            vec![c("evil").neg().offset(4).i()],
            &[("evilgood", true), ("goodevil", false)],
        ),
        case(
            "negated depth",
            vec![c("evil").neg().depth(4).i()],
            &[("xevil", true), ("evilx", false)],
        ),
        case(
            "negated with positive",
            vec![c("GET").i(), c("admin").neg().i()],
            &[
                ("GET /index", true),
                ("GET /admin", false),
                ("POST /", false),
            ],
        ),
        case(
            "negated relative content",
            vec![c("a").i(), c("b").neg().distance(0).within(1).i()],
            // "abac": the first 'a' is followed by 'b'; Suricata retries 'a'.
            &[
                ("ab", false),
                ("ac", true),
                ("abac", true),
                ("a", true),
                ("abab", false),
            ],
        ),
        case(
            "negated distance-only content retries the previous content",
            vec![c("a").i(), c("b").neg().distance(0).i()],
            &[("abxa", true), ("ab", false), ("ba", true)],
        ),
        case(
            "nocase",
            vec![c("HeLLo").nocase().i()],
            &[("xxhello", true), ("HELLO", true), ("xxhellx", false)],
        ),
        case(
            "case sensitive",
            vec![c("HeLLo").i()],
            &[("xxhello", false), ("HeLLo", true)],
        ),
        case(
            "nocase offset",
            vec![c("ABC").nocase().offset(1).i()],
            &[("abc", false), ("xabc", true)],
        ),
        case(
            "nocase endswith",
            vec![c("HTML").nocase().endswith().i()],
            &[("a.html", true), ("a.htm", false)],
        ),
        case(
            "nocase negated",
            vec![c("EVIL").nocase().neg().i()],
            &[("xEvIl", false), ("good", true)],
        ),
        case(
            "binary content",
            vec![c("|00 01|a|ff|").i()],
            &[("x|00 01|a|ff|", true), ("|00 01|b|ff|", false)],
        ),
    ]);
}

#[test]
fn backtracking() {
    check(vec![
        case(
            "retry the previous content (a; b distance 0 within 1)",
            vec![c("a").i(), c("b").distance(0).within(1).i()],
            &[("axxab", true), ("axxa", false), ("axxbxa", false)],
        ),
        case(
            "three levels",
            vec![c("a").i(), c("b").within(2).i(), c("c").within(2).i()],
            &[("abxxabc", true), ("abxxabxxc", false)],
        ),
        case(
            "retry in the middle of the chain",
            vec![
                c("a").i(),
                c("b").distance(0).i(),
                c("c").distance(0).within(1).i(),
            ],
            &[("abxbc", true), ("abxbxc", false)],
        ),
        case(
            "relative byte_test makes the content retry",
            vec![c("a").i(), bt(1, CmpOp::Eq, b'x' as u64, 0).relative().i()],
            &[("abax", true), ("abab", false)],
        ),
        case(
            "relative isdataat without data ends the inspection",
            vec![c("a").i(), isdataat_rel(3)],
            &[("abcxa", true), ("xxaxx", false), ("axx", false)],
        ),
        case(
            "pcre retries at its next match",
            vec![pcre("/a./"), c("z").distance(0).within(1).i()],
            &[("abacz", true), ("abacaz", false)],
        ),
        case(
            "pcre then content with backtracking",
            vec![pcre("/b+/"), c("c").distance(0).within(1).i()],
            &[("abbbc", true), ("abbxc", false)],
        ),
    ]);
}

#[test]
fn payload_vs_sticky_relative_attachment() {
    // In the packet payload list a relative byte_test attaches to the
    // keyword just before it (here an absolute isdataat), so the content
    // is not retried; in a sticky buffer it attaches to the last content.
    let items = vec![
        c("a").i(),
        isdataat(1),
        bt(1, CmpOp::Eq, b'x' as u64, 0).relative().i(),
    ];
    let mut vars = VarTable::default();
    let payload = CompiledPayload::compile_for(&items, &mut vars, ListKind::Payload).unwrap();
    let sticky = CompiledPayload::compile_for(&items, &mut vars, ListKind::Sticky).unwrap();
    let mut v = [0u64; MAX_VARS];
    assert!(!payload.matches(b"abax", &mut v));
    assert!(sticky.matches(b"abax", &mut v));
    assert!(payload.matches(b"axab", &mut v));
}

#[test]
fn inspection_recursion_limit() {
    // a; a within 40; a within 40; b within 1 over 110 'a's and a 'b':
    // the only matches need the first 'a' at 29 or later, which the
    // depth-first search reaches after ~46000 steps.
    let items = vec![
        c("a").i(),
        c("a").distance(0).within(40).i(),
        c("a").distance(0).within(40).i(),
        c("b").distance(0).within(1).i(),
    ];
    let mut buf = vec![b'a'; 110];
    buf.push(b'b');
    let mut vars = VarTable::default();
    let prog = CompiledPayload::compile(&items, &mut vars).unwrap();
    let mut v = [0u64; MAX_VARS];
    assert!(
        !prog.matches(&buf, &mut v),
        "gives up at the default limit of 3000"
    );
    assert!(prog.matches_with_limit(&buf, &mut v, u32::MAX));
    // The same rule on a buffer where the match is found early.
    assert!(prog.matches(b"aaab", &mut v));
}

// --------------------------------------------------------------------- pcre

#[test]
fn pcre_keyword() {
    check(vec![
        case(
            "absolute",
            vec![pcre("/fo+bar/")],
            &[("xxfoooobar", true), ("fobar", true), ("fbar", false)],
        ),
        case(
            "relative",
            vec![c("abc").i(), pcre("/^def/R")],
            &[("abcdef", true), ("abcxdef", false), ("defabc", false)],
        ),
        case(
            "negated",
            vec![pcre("!/evil/")],
            &[("good", true), ("evil", false)],
        ),
        case(
            "negated relative",
            vec![c("a").i(), pcre("!/^b/R")],
            &[("ab", false), ("ac", true), ("abac", true)],
        ),
        case(
            "caseless",
            vec![pcre("/ABC/i")],
            &[("abc", true), ("abd", false)],
        ),
        case("dotall", vec![pcre("/a.b/s")], &[("a\nb", true)]),
        case(
            "no dotall",
            vec![pcre("/a.b/")],
            &[("a\nb", false), ("axb", true)],
        ),
        case("multiline", vec![pcre("/^b/m")], &[("a\nb", true)]),
        case(
            "no multiline",
            vec![pcre("/^b/")],
            &[("a\nb", false), ("b", true)],
        ),
        case(
            "extended",
            vec![pcre("/a b c # comment/x")],
            &[("abc", true), ("a b c", false)],
        ),
        case(
            "anchored",
            vec![pcre("/bc/A")],
            &[("abc", false), ("bcd", true)],
        ),
        case(
            "anchored alternation",
            vec![pcre("/x|bc/A")],
            &[("abc", false), ("bc", true), ("xa", true)],
        ),
        case(
            "anchored relative",
            vec![c("ab").i(), pcre("/c/AR")],
            &[("abc", true), ("abxc", false)],
        ),
        case(
            "dollar end only",
            vec![pcre("/c$/E")],
            &[("abc\n", false), ("abc", true)],
        ),
        case("dollar", vec![pcre("/c$/")], &[("abc\n", true)]),
        case(
            "ungreedy sets the end of the match",
            vec![pcre("/a.+/G"), c("c").distance(0).within(1).i()],
            &[("abcXc", true)],
        ),
        case(
            "greedy sets the end of the match",
            vec![pcre("/a.+/"), c("c").distance(0).within(1).i()],
            &[("abcXc", false)],
        ),
        case(
            "absolute pcre moves the cursor too",
            vec![c("x").i(), pcre("/y/"), c("z").distance(0).within(1).i()],
            &[("xyz", true), ("yzx", true), ("xyaz", false)],
        ),
        case(
            "match limit counts as no match",
            vec![pcre("/(a+)+$/")],
            &[
                ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", false),
                ("aaa", true),
            ],
        ),
        case(
            "match limit counts as no match even when negated",
            vec![pcre("!/(a+)+$/")],
            &[
                ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", false),
                ("b", true),
            ],
        ),
        case(
            "binary subject",
            vec![pcre("/\\x00\\xff/")],
            &[("a|00 ff|", true), ("|00 fe|", false)],
        ),
    ]);
}

#[test]
fn pcre_compile_errors() {
    let mut vars = VarTable::default();
    let err = CompiledPayload::compile(&[pcre("/a(b/")], &mut vars).unwrap_err();
    assert_eq!(err.keyword(), "pcre");
    assert!(matches!(err, PayloadCompileError::Pcre { .. }));
    assert!(err.to_string().contains("a(b"), "{err}");
    let err = CompiledPayload::compile(&[pcre("/ab\\/A")], &mut vars).unwrap_err();
    assert_eq!(err.keyword(), "pcre");
}

// ---------------------------------------------------------------- byte_test

#[test]
fn byte_test_keyword() {
    check(vec![
        // Examples from the Suricata documentation.
        case(
            "num = value",
            vec![c("|00 01 00 02|").i(), bt(2, CmpOp::Eq, 0x01, 0).i()],
            &[("|00 01 00 02|", true)],
        ),
        case(
            "num = value relative to content",
            vec![
                c("|00 01 00 02|").i(),
                bt(2, CmpOp::Eq, 0x03, 2).relative().i(),
            ],
            &[
                ("|00 01 00 02 aa bb 00 03|", true),
                ("|00 01 00 02 aa bb 00 04|", false),
            ],
        ),
        case(
            "num != value",
            vec![c("|00 01 00 02|").i(), bt(2, CmpOp::Eq, 0x06, 0).neg().i()],
            &[("|00 01 00 02|", true), ("|00 06 00 01 00 02|", false)],
        ),
        case(
            "detect large values",
            vec![
                c("|00 01 00 02|").i(),
                bt(2, CmpOp::Gt, 1000, 1).relative().i(),
            ],
            &[
                ("|00 01 00 02 00 10 00|", true),
                ("|00 01 00 02 00 00 10|", false),
            ],
        ),
        case(
            "lowest bit is set",
            vec![
                c("|00 01 00 02|").i(),
                bt(2, CmpOp::And, 0x01, 12).relative().i(),
            ],
            &[
                ("|00 01 00 02|xxxxxxxxxxxx|00 01|", true),
                ("|00 01 00 02|xxxxxxxxxxxx|00 02|", false),
                ("|00 01 00 02|xxxxxxxxxxxx|00|", false),
            ],
        ),
        case(
            "compare to string",
            vec![
                c("foobar").i(),
                bt(4, CmpOp::Eq, 1337, 1)
                    .relative()
                    .string(NumBase::Dec)
                    .i(),
            ],
            &[
                ("foobar 1337", true),
                ("foobar 1338", false),
                ("foobar abcd", false),
            ],
        ),
        case(
            "bitmask shifts by the trailing zeros",
            vec![bt(2, CmpOp::Eq, 3, 0).bitmask(0x0f00).i()],
            &[("|03 45|", true), ("|04 45|", false)],
        ),
        case(
            "little endian",
            vec![bt(2, CmpOp::Eq, 0x0201, 0).little().i()],
            &[("|01 02|", true), ("|02 01|", false)],
        ),
        case(
            "<=",
            vec![bt(1, CmpOp::Le, 5, 0).i()],
            &[("|05|", true), ("|06|", false)],
        ),
        case(
            ">=",
            vec![bt(1, CmpOp::Ge, 6, 0).i()],
            &[("|05|", false), ("|06|", true)],
        ),
        case(
            "<",
            vec![bt(1, CmpOp::Lt, 5, 0).i()],
            &[("|04|", true), ("|05|", false)],
        ),
        case(
            "^",
            vec![bt(1, CmpOp::Xor, 5, 0).i()],
            &[("|05|", false), ("|04|", true)],
        ),
        case(
            "negated <",
            vec![bt(1, CmpOp::Lt, 5, 0).neg().i()],
            &[("|05|", true), ("|04|", false)],
        ),
        case(
            "negated &",
            vec![bt(1, CmpOp::And, 0x80, 0).neg().i()],
            &[("|7f|", true), ("|80|", false)],
        ),
        case(
            "hex string",
            vec![bt(4, CmpOp::Eq, 31, 0).string(NumBase::Hex).i()],
            &[("0x1f", true), ("001f", true), ("0x1e", false)],
        ),
        case(
            "oct string",
            vec![bt(2, CmpOp::Eq, 15, 0).string(NumBase::Oct).i()],
            &[("17", true), ("18", false)],
        ),
        case(
            "8 bytes",
            vec![bt(8, CmpOp::Eq, 0x0102030405060708, 0).i()],
            &[("|01 02 03 04 05 06 07 08|", true)],
        ),
        case(
            "out of range",
            vec![bt(4, CmpOp::Eq, 0, 2).i()],
            &[("abc", false), ("ab|00 00 00 00|", true)],
        ),
        case(
            "negative relative offset",
            vec![
                c("cd").i(),
                bt(1, CmpOp::Eq, b'a' as u64, -4).relative().i(),
            ],
            &[("abcd", true), ("xbcd", false)],
        ),
        case(
            "before the buffer start",
            vec![
                c("cd").i(),
                bt(1, CmpOp::Eq, b'a' as u64, -5).relative().i(),
            ],
            &[("abcd", false)],
        ),
        case(
            "value from a variable",
            vec![be(1, 0, "v").i(), bt(1, CmpOp::Eq, 0, 1).value_var("v").i()],
            &[("|07 07|", true), ("|07 08|", false)],
        ),
        case(
            "offset from a variable",
            vec![
                be(1, 0, "o").i(),
                bt(1, CmpOp::Eq, b'A' as u64, 0).offset_var("o").i(),
            ],
            &[("|02|xA", true), ("|01|xA", false)],
        ),
        case(
            "empty buffer",
            vec![bt(1, CmpOp::Eq, 0, 0).neg().i()],
            &[("", false)],
        ),
    ]);
}

// ---------------------------------------------------------------- byte_jump

#[test]
fn byte_jump_keyword() {
    check(vec![
        case(
            "jump over a length field",
            vec![bj(2, 0).i(), c("XYZ").distance(0).within(3).i()],
            &[("|00 03|abcXYZ", true), ("|00 02|abcXYZ", false)],
        ),
        // From the Suricata documentation.
        case(
            "content, jump, content",
            vec![c("Alice").i(), bj(2, 0).i(), c("Bob").i()],
            &[("|00 04|Alice Bob", true), ("|00 04|Alice", false)],
        ),
        case(
            "multiple jumps",
            vec![
                bj(2, 0).i(),
                bj(2, 0).relative().i(),
                c("foobar").distance(0).within(6).i(),
            ],
            &[
                ("|00 02|ab|00 01|cfoobar", true),
                ("|00 02|ab|00 02|cfoobar", false),
            ],
        ),
        case(
            "from the end -8 bytes",
            vec![
                bj(0, 0).jump_from_end().post_offset(-8).i(),
                c("|6c 33 33 74|").distance(0).within(4).i(),
            ],
            &[("xxxxl33txxxx", true), ("xxxl33txxxxx", false)],
        ),
        case(
            "from_beginning",
            vec![
                c("x").i(),
                bj(1, 0).relative().jump_from_beginning().i(),
                c("Z").distance(0).within(1).i(),
            ],
            &[("x|05|abcZ", true), ("x|04|abcZ", false)],
        ),
        case(
            "align",
            vec![bj(1, 0).align().i(), c("Z").distance(0).within(1).i()],
            &[("|01|xxxxZ", true), ("|01|Z", false)],
        ),
        case(
            "multiplier",
            vec![bj(1, 0).multiplier(2).i(), c("Z").distance(0).within(1).i()],
            &[("|02|abcdZ", true)],
        ),
        case(
            "string dec (jump counts the digits read)",
            vec![
                bj(2, 0).string(NumBase::Dec).i(),
                c("Z").distance(0).within(1).i(),
            ],
            &[("03abcZ", true), ("3 abcZ", false), ("3 abZ", true)],
        ),
        case(
            "post_offset",
            vec![
                bj(1, 0).post_offset(2).i(),
                c("Z").distance(0).within(1).i(),
            ],
            &[("|01|aXYZ", true)],
        ),
        case(
            "little endian",
            vec![bj(2, 0).little().i(), c("Z").distance(0).within(1).i()],
            &[("|01 00|aZ", true)],
        ),
        case(
            "bitmask",
            vec![bj(1, 0).bitmask(0x0f).i(), c("Z").distance(0).within(1).i()],
            &[("|f1|aZ", true)],
        ),
        case(
            "beyond the end",
            vec![bj(1, 0).i()],
            &[("|09|ab", false), ("|02|ab", true)],
        ),
        case(
            "before the start resets to the start",
            vec![
                bj(1, 0).jump_from_beginning().post_offset(-5).i(),
                c("|01|").distance(0).within(1).i(),
            ],
            &[("|01|abc", true)],
        ),
        case(
            "not enough bytes",
            vec![bj(4, 0).i()],
            &[("|00 00|", false)],
        ),
    ]);
}

// ------------------------------------------------------------- byte_extract

#[test]
fn byte_extract_keyword() {
    check(vec![
        case(
            "within from a variable",
            vec![be(1, 0, "len").i(), c("X").within_var("len").i()],
            &[("|04|abcX", true), ("|02|abcX", false)],
        ),
        case(
            "offset from a variable",
            vec![be(1, 0, "off").i(), c("X").offset_var("off").i()],
            &[("|03|XaX", true), ("|03|Xab", false)],
        ),
        case(
            "depth from a variable counts from offset",
            vec![be(1, 0, "d").i(), c("X").offset(1).depth_var("d").i()],
            &[("|02|aXb", true), ("|01|aX", false)],
        ),
        case(
            "distance from a variable",
            vec![be(1, 0, "dist").i(), c("X").distance_var("dist").i()],
            &[("|02|abX", true), ("|03|aXb", false)],
        ),
        case(
            "multiplier",
            vec![
                be(1, 0, "v").multiplier(3).i(),
                bt(1, CmpOp::Eq, 0, 1).value_var("v").i(),
            ],
            &[("|02 06|", true), ("|02 02|", false)],
        ),
        case(
            "align",
            vec![
                be(1, 0, "v").align(4).i(),
                bt(1, CmpOp::Eq, 0, 1).value_var("v").i(),
            ],
            &[("|05 08|", true), ("|04 04|", true), ("|05 05|", false)],
        ),
        case(
            "string",
            vec![
                be(2, 0, "v").string(NumBase::Dec).i(),
                bt(1, CmpOp::Eq, 0, 2).value_var("v").i(),
            ],
            &[("12|0c|", true), ("12|0d|", false), ("ab|00|", false)],
        ),
        case(
            "little endian",
            vec![
                be(2, 0, "v").little().i(),
                bt(2, CmpOp::Eq, 0, 2).value_var("v").i(),
            ],
            &[("|01 02 02 01|", true)],
        ),
        case(
            "the cursor moves past the extracted bytes",
            vec![be(2, 1, "v").i(), c("Z").distance(0).within(1).i()],
            &[("x|00 00|Z", true), ("x|00 00|aZ", false)],
        ),
        // From the Suricata documentation.
        case(
            "using distance",
            vec![
                c("Alice").i(),
                be(2, 0, "size").i(),
                c("Bob").distance_var("size").within(3).i(),
            ],
            &[("|00 05|AliceBob", true), ("|00 04|AliceBob", false)],
        ),
        case(
            "using within",
            vec![
                c("|00 FF|").i(),
                be(1, 0, "len").relative().i(),
                c("|5c 00|").distance(2).within_var("len").i(),
            ],
            &[
                ("|00 FF 04 aa bb 5c 00|", true),
                ("|00 FF 01 aa bb 5c 00|", false),
            ],
        ),
        case(
            "comparing bytes",
            vec![
                c("|00 FF|").i(),
                be(2, 0, "cmp_ver").relative().i(),
                c("FooBar").distance(0).i(),
                bt(2, CmpOp::Eq, 0, 0).value_var("cmp_ver").i(),
            ],
            &[
                ("|00 FF 00 FF|FooBar", true),
                ("|00 FF 00 01|FooBar", false),
            ],
        ),
    ]);
}

#[test]
fn variables_across_buffers() {
    let mut vars = VarTable::default();
    let first = CompiledPayload::compile(&[be(1, 0, "n").i()], &mut vars).unwrap();
    let second =
        CompiledPayload::compile_for(&[c("X").offset_var("n").i()], &mut vars, ListKind::Sticky)
            .unwrap();
    assert_eq!(vars.slot("n"), Some(0));
    let mut v = [0u64; MAX_VARS];
    assert!(first.matches(b"\x03", &mut v));
    assert!(second.matches(b"abcX", &mut v));
    assert!(!second.matches(b"aXcd", &mut v));
}

#[test]
fn unknown_and_too_many_variables() {
    let mut vars = VarTable::default();
    let err = CompiledPayload::compile(&[c("X").offset_var("nope").i()], &mut vars).unwrap_err();
    assert_eq!(err.keyword(), "offset");
    assert!(matches!(err, PayloadCompileError::UnknownVariable { .. }));
    // A variable must be defined before it is used.
    let err = CompiledPayload::compile(
        &[bt(1, CmpOp::Eq, 0, 0).value_var("v").i(), be(1, 0, "v").i()],
        &mut vars,
    )
    .unwrap_err();
    assert_eq!(err.keyword(), "byte_test");
    let items: Vec<PayloadItem> = (0..=MAX_VARS)
        .map(|i| be(1, 0, &format!("v{i}")).i())
        .collect();
    let err = CompiledPayload::compile(&items, &mut VarTable::default()).unwrap_err();
    assert!(matches!(err, PayloadCompileError::TooManyVariables { .. }));
    let err = CompiledPayload::compile(&[c("").i()], &mut vars).unwrap_err();
    assert_eq!(err, PayloadCompileError::EmptyContent);
    let err = CompiledPayload::compile(&[bt(9, CmpOp::Eq, 0, 0).i()], &mut vars).unwrap_err();
    assert_eq!(err.keyword(), "byte_test");
}

// ---------------------------------------------------------------- byte_math

#[test]
fn byte_math_keyword() {
    check(vec![
        // From the Suricata documentation.
        case(
            "byte_extract, byte_math and byte_test",
            vec![
                be(1, 0, "extracted_val").relative().i(),
                bm(1, 1, MathOp::Add, 0, "var")
                    .rvalue_var("extracted_val")
                    .i(),
                bt(2, CmpOp::Eq, 0, 13).value_var("var").i(),
            ],
            &[
                ("|05 07|xxxxxxxxxxx|00 0c|", true),
                ("|05 07|xxxxxxxxxxx|00 0d|", false),
            ],
        ),
        case(
            "relative to content",
            vec![
                c("|00 04 93 F3|").i(),
                c("|00 00 00 07|").distance(4).within(4).i(),
                bm(4, 0, MathOp::Add, 248, "var").relative().i(),
                bt(4, CmpOp::Eq, 0, 12).relative().value_var("var").i(),
            ],
            &[
                (
                    "|00 04 93 F3|xxxx|00 00 00 07 00 00 00 08|xxxxxxxxxxxx|00 00 01 00|",
                    true,
                ),
                (
                    "|00 04 93 F3|xxxx|00 00 00 07 00 00 00 08|xxxxxxxxxxxx|00 00 01 01|",
                    false,
                ),
            ],
        ),
        case(
            "sub",
            vec![
                bm(1, 0, MathOp::Sub, 2, "r").i(),
                bt(1, CmpOp::Eq, 0, 1).value_var("r").i(),
            ],
            &[("|07 05|", true)],
        ),
        case(
            "mul",
            vec![
                bm(1, 0, MathOp::Mul, 3, "r").i(),
                bt(1, CmpOp::Eq, 0, 1).value_var("r").i(),
            ],
            &[("|07 15|", true)],
        ),
        case(
            "div",
            vec![
                bm(1, 0, MathOp::Div, 2, "r").i(),
                bt(1, CmpOp::Eq, 0, 1).value_var("r").i(),
            ],
            &[("|07 03|", true)],
        ),
        case(
            "div by zero",
            vec![bm(1, 0, MathOp::Div, 0, "r").i()],
            &[("|07|", false)],
        ),
        case(
            "shl",
            vec![
                bm(1, 0, MathOp::Shl, 2, "r").i(),
                bt(1, CmpOp::Eq, 0, 1).value_var("r").i(),
            ],
            &[("|03 0c|", true)],
        ),
        case(
            "shr",
            vec![
                bm(1, 0, MathOp::Shr, 1, "r").i(),
                bt(1, CmpOp::Eq, 0, 1).value_var("r").i(),
            ],
            &[("|07 03|", true)],
        ),
        case(
            "bitmask after the operation",
            vec![
                bm(1, 0, MathOp::Add, 1, "r").bitmask(0xf0).i(),
                bt(1, CmpOp::Eq, 0, 1).value_var("r").i(),
            ],
            &[("|1f 02|", true), ("|1e 01|", true), ("|1e 02|", false)],
        ),
        case(
            "the cursor moves past the bytes read",
            vec![
                c("ab").i(),
                bm(1, 0, MathOp::Add, 1, "r").relative().i(),
                c("Z").distance(0).within(1).i(),
            ],
            &[("ab|05|Z", true), ("ab|05|xZ", false)],
        ),
    ]);
}

// ----------------------------------------------------------------- isdataat

#[test]
fn isdataat_keyword() {
    check(vec![
        // Suricata's DetectIsdataatTestPacket01 on "Hi all!".
        case("absolute", vec![isdataat(6)], &[("Hi all!", true)]),
        case(
            "relative and absolute",
            vec![c("all").i(), isdataat_rel(1), isdataat(6)],
            &[("Hi all!", true)],
        ),
        case(
            "absolute past the end",
            vec![isdataat(8)],
            &[("Hi all!", false)],
        ),
        case(
            "relative",
            vec![c("Hi").i(), isdataat_rel(5)],
            &[("Hi all!", true)],
        ),
        case(
            "relative past the end",
            vec![c("Hi").i(), isdataat_rel(6)],
            &[("Hi all!", false)],
        ),
        case(
            "negated absolute",
            vec![isdataat_full(true, NumOrVar::Num(10), false)],
            &[("short", true), ("a long payload", false)],
        ),
        case(
            "isdataat:!1,relative is endswith",
            vec![c("ab").i(), isdataat_full(true, NumOrVar::Num(1), true)],
            &[("xxab", true), ("abx", false), ("abxab", true)],
        ),
        case(
            "negated relative",
            vec![c("ab").i(), isdataat_full(true, NumOrVar::Num(2), true)],
            &[
                ("ab", true),
                ("abx", true),
                ("abxy", false),
                ("abxyab", true),
            ],
        ),
        case(
            "offset from a variable",
            vec![
                be(1, 0, "n").i(),
                isdataat_full(false, NumOrVar::Var("n".into()), false),
            ],
            &[("|03|abc", true), ("|04|abc", false)],
        ),
    ]);
}

#[test]
fn bsize_keyword() {
    check(vec![
        case(
            "equal",
            vec![PayloadItem::Bsize(IntCmp::Eq(3))],
            &[("abc", true), ("ab", false), ("", false)],
        ),
        case(
            "zero",
            vec![PayloadItem::Bsize(IntCmp::Eq(0))],
            &[("", true), ("a", false)],
        ),
        case(
            "range",
            vec![c("a").i(), PayloadItem::Bsize(IntCmp::RangeEx(1, 4))],
            &[("ab", true), ("abcd", false)],
        ),
    ]);
}

#[test]
fn min_len_is_a_lower_bound() {
    let cases: Vec<(Vec<PayloadItem>, usize)> = vec![
        (vec![c("abc").offset(5).i()], 8),
        (vec![c("ab").i(), c("cd").distance(2).i()], 6),
        (vec![c("ab").neg().i()], 0),
        (vec![isdataat(9)], 10),
        (vec![PayloadItem::Bsize(IntCmp::Ge(20))], 20),
        (vec![c("ab").i(), bt(2, CmpOp::Eq, 0, 3).relative().i()], 7),
        (vec![pcre("/x/")], 0),
    ];
    for (items, expected) in cases {
        let prog = CompiledPayload::compile(&items, &mut VarTable::default()).unwrap();
        assert_eq!(prog.min_len(), expected, "{items:?}");
    }
}

#[test]
fn empty_program_matches() {
    let prog = CompiledPayload::compile(&[], &mut VarTable::default()).unwrap();
    assert!(prog.is_empty());
    assert!(prog.matches(b"anything", &mut [0; MAX_VARS]));
}
