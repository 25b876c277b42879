//! Differential testing against Suricata: random but valid rules from a
//! grammar of payload keywords both engines support, and for each rule a few
//! flows whose payloads are built from the rule's own contents and fields,
//! placed at, just short of or just beyond the rule's boundaries.
//!
//! The rule is derived from the payload rather than the other way round:
//! every item (content, pcre, byte_test, byte_jump, byte_extract, isdataat)
//! first places its bytes in the payload, then writes its modifiers from the
//! position it got, off by one now and then (offset, depth, distance,
//! within, isdataat sizes, byte_test values, dsize, TTL...). Each rule gets
//! `flows` flows: the payload as built, then mutated copies (a byte flipped
//! or its case changed in a significant region, a byte inserted or deleted,
//! the end cut short, a header field moved by one), so that about half of
//! the cases match. TCP payloads are cut into segments at random points;
//! some UDP datagrams are sent as IPv4 fragments.
//!
//! Everything is derived from the seed and the rule's index, so a rule and
//! its flows are the same whatever the batch they are generated in (only the
//! ports depend on the position in the batch). `scripts/differential.sh`
//! runs both engines on the output and compares alerts per (rule, flow).

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};

use crate::packet::{PacketBuilder, ACK, IPPROTO_UDP, PSH};
use crate::session::{Dir, TcpSession, TimedFrame};

/// First server port of a batch (rule `i` of the batch listens on
/// `SERVER_PORT_BASE + i`).
pub const SERVER_PORT_BASE: u16 = 10000;
/// First client port of a batch (flow `j` of the batch uses
/// `CLIENT_PORT_BASE + j`); a flow is identified by its client port.
pub const CLIENT_PORT_BASE: u16 = 36000;
/// Most flows in one batch (client ports up to 65535).
pub const MAX_BATCH_FLOWS: usize = (u16::MAX - CLIENT_PORT_BASE) as usize;

const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

/// Filler bytes: none is a content letter (in either case), a digit, a hex
/// digit or `=`, so filler never extends a content, a number or a pcre token.
const FILLER: &[u8] = b"-._~:;#@QRSTUVWXYZ";
/// Content bytes: letters a-h (case-folded under nocase) and a few binary
/// bytes written in hex.
const CONTENT_TEXT: &[u8] = b"abcdefgh";
const CONTENT_BIN: &[u8] = &[0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff];

/// SplitMix64: small, fast and good enough for test generation.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    /// A generator for item `index` under `seed`, independent of the others.
    pub fn for_index(seed: u64, index: u64) -> Self {
        let mut r = Rng(seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        r
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    /// True with probability `pct` percent.
    pub fn pct(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    /// Off-by-one noise: 0 half of the time, else -1 or +1.
    fn delta(&mut self) -> i64 {
        match self.below(4) {
            0 => -1,
            1 => 1,
            _ => 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
}

/// One generated rule with the payload it was built around.
#[derive(Clone, Debug)]
pub struct GenRule {
    pub sid: u32,
    pub proto: Proto,
    /// Payload direction (to the server, or from it for to_client rules).
    pub dir: Dir,
    pub server_port: u16,
    /// The rule's options between the parentheses, without msg/sid/rev.
    pub options: Vec<String>,
    pub payload: Vec<u8>,
    /// Byte ranges of the payload that carry a rule item (targets of the
    /// mutations that should turn a match into a near miss).
    pub marks: Vec<(usize, usize)>,
    /// IP/TCP header values the flows are sent with.
    pub header: Header,
    /// Whether TCP payloads may be cut into several segments (not with
    /// dsize, which is a per-packet size).
    pub may_split: bool,
    /// An `http` rule: the payload is an HTTP request and the rule's items
    /// sit in sticky buffers.
    pub http: bool,
    /// What the server answers (HTTP rules), empty otherwise.
    pub response: Vec<u8>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Header {
    pub ttl: u8,
    pub tos: u8,
    pub ip_id: u16,
    pub window: u16,
}

impl GenRule {
    /// The rule text.
    pub fn text(&self) -> String {
        let (proto, src_port, dst_port) = match (self.proto, self.dir) {
            (Proto::Tcp, Dir::ToServer) if self.http => {
                ("http", "any".to_string(), self.server_port.to_string())
            }
            (Proto::Tcp, Dir::ToServer) => ("tcp", "any".to_string(), self.server_port.to_string()),
            (Proto::Tcp, Dir::ToClient) => ("tcp", self.server_port.to_string(), "any".to_string()),
            (Proto::Udp, _) => ("udp", "any".to_string(), self.server_port.to_string()),
        };
        let mut s = format!(
            "alert {proto} any {src_port} -> any {dst_port} (msg:\"differential {}\"; ",
            self.sid
        );
        for o in &self.options {
            s.push_str(o);
            s.push_str("; ");
        }
        let _ = write!(s, "sid:{}; rev:1;)", self.sid);
        s
    }
}

/// Writes `bytes` as a Suricata content string (letters as they are, other
/// bytes in `|..|` hex).
pub fn content_string(bytes: &[u8]) -> String {
    let mut s = String::new();
    let mut in_hex = false;
    for &b in bytes {
        let plain = b.is_ascii_alphanumeric() || b == b'=' || b == b'-' || b == b'.' || b == b'_';
        if plain {
            if in_hex {
                s.push('|');
                in_hex = false;
            }
            s.push(b as char);
        } else {
            if in_hex {
                s.push(' ');
            } else {
                s.push('|');
                in_hex = true;
            }
            let _ = write!(s, "{b:02X}");
        }
    }
    if in_hex {
        s.push('|');
    }
    s
}

/// Options resolved once the payload is complete.
enum Late {
    /// isdataat:[!]N[,relative] around the data left after `cursor`.
    IsDataAt {
        at: usize,
        cursor: Option<usize>,
        neg: bool,
        delta: i64,
    },
}

struct Builder<'r> {
    rng: &'r mut Rng,
    filler: &'static [u8],
    /// No binary bytes in contents (HTTP header fields and URIs).
    text_only: bool,
    /// The buffer is normalised to lowercase (`http.host`): `nocase`
    /// varies the payload's case but is not written (Suricata refuses it).
    lowercase_buffer: bool,
    payload: Vec<u8>,
    /// End of the last match (None before the first anchoring item).
    cursor: Option<usize>,
    opts: Vec<String>,
    late: Vec<(usize, Late)>,
    marks: Vec<(usize, usize)>,
    contents: Vec<Vec<u8>>,
    extract_n: u32,
    endswith_last: bool,
    fast_pattern_used: bool,
}

impl<'r> Builder<'r> {
    /// A builder for one buffer: `payload` is what the buffer already
    /// holds, `fast_pattern_used` whether the rule has a fast_pattern
    /// already (one per rule).
    fn new(
        rng: &'r mut Rng,
        filler: &'static [u8],
        text_only: bool,
        payload: Vec<u8>,
        fast_pattern_used: bool,
    ) -> Self {
        Builder {
            rng,
            filler,
            text_only,
            lowercase_buffer: false,
            payload,
            cursor: None,
            opts: Vec::new(),
            late: Vec::new(),
            marks: Vec::new(),
            contents: Vec::new(),
            extract_n: 0,
            endswith_last: false,
            fast_pattern_used,
        }
    }

    /// A buffer's items start with a content, sometimes a pcre.
    fn first_item(&mut self, last: bool) {
        if self.rng.pct(85) {
            self.content(last);
        } else {
            self.pcre();
        }
    }

    fn filler(&mut self, n: usize) {
        for _ in 0..n {
            let b = self.rng.pick(self.filler);
            self.payload.push(b);
        }
    }

    fn gap(&mut self) -> usize {
        let g = match self.rng.below(4) {
            0 => 0,
            1 => self.rng.range(1, 3),
            _ => self.rng.range(0, 12),
        } as usize;
        self.filler(g);
        g
    }

    fn new_content_bytes(&mut self) -> Vec<u8> {
        if !self.contents.is_empty() && self.rng.pct(20) {
            let i = self.rng.below(self.contents.len() as u64) as usize;
            return self.contents[i].clone();
        }
        let len = self.rng.range(1, 8) as usize;
        let binary = self.rng.pct(15);
        (0..len)
            .map(|_| {
                if binary && self.rng.pct(50) && !self.text_only {
                    self.rng.pick(CONTENT_BIN)
                } else {
                    self.rng.pick(CONTENT_TEXT)
                }
            })
            .collect()
    }

    /// Places `bytes` (case randomised under nocase) and returns its start.
    fn place(&mut self, bytes: &[u8], nocase: bool) -> usize {
        let start = self.payload.len();
        for &b in bytes {
            let b = if nocase && b.is_ascii_lowercase() && self.rng.pct(50) {
                b.to_ascii_uppercase()
            } else {
                b
            };
            self.payload.push(b);
        }
        self.marks.push((start, start + bytes.len()));
        start
    }

    fn content(&mut self, last: bool) {
        let bytes = self.new_content_bytes();
        let len = bytes.len() as i64;
        let nocase = self.rng.pct(25);
        let first = self.payload.is_empty() && self.cursor.is_none();
        let startswith = first && self.rng.pct(10);
        if startswith {
            if self.rng.pct(20) {
                self.filler(1);
            }
        } else {
            self.gap();
        }
        let start = self.place(&bytes, nocase) as i64;
        let end = start + len;
        let mut o = vec![format!("content:\"{}\"", content_string(&bytes))];
        if nocase && !self.lowercase_buffer {
            o.push("nocase".into());
        }
        if startswith {
            o.push("startswith".into());
        } else if let (Some(cur), true) = (self.cursor, self.rng.pct(65)) {
            let cur = cur as i64;
            let mode = self.rng.below(4);
            let mut distance = start - cur;
            if mode != 1 {
                distance += self.rng.delta();
                o.push(format!("distance:{distance}"));
            } else {
                distance = 0;
            }
            if mode != 0 {
                let within = (end - cur - distance + self.rng.delta()).max(len);
                o.push(format!("within:{within}"));
            }
        } else {
            let mode = self.rng.below(5);
            let mut offset = 0;
            if mode == 1 || mode == 3 {
                offset = (start + self.rng.delta()).max(0);
                o.push(format!("offset:{offset}"));
            }
            if mode == 2 || mode == 3 {
                let depth = (end - offset + self.rng.delta()).max(len);
                o.push(format!("depth:{depth}"));
            }
        }
        if last && !startswith && self.rng.pct(15) {
            o.push("endswith".into());
            self.endswith_last = true;
        }
        if !self.fast_pattern_used && self.rng.pct(15) {
            o.push("fast_pattern".into());
            self.fast_pattern_used = true;
        }
        self.opts.extend(o);
        self.contents.push(bytes);
        self.cursor = Some(end as usize);
    }

    fn negated_content(&mut self) {
        let bytes = self.new_content_bytes();
        let nocase = self.rng.pct(25);
        let present = self.rng.pct(50);
        let mut start = self.payload.len();
        if present {
            self.gap();
            start = self.place(&bytes, nocase);
        }
        let len = bytes.len() as i64;
        let mut o = vec![format!("content:!\"{}\"", content_string(&bytes))];
        if nocase && !self.lowercase_buffer {
            o.push("nocase".into());
        }
        match (self.cursor, self.rng.below(3)) {
            (Some(cur), 0) => {
                o.push("distance:0".into());
                let within =
                    ((start + bytes.len()) as i64 - cur as i64 + self.rng.delta()).max(len);
                o.push(format!("within:{within}"));
            }
            (_, 1) => {
                let depth = ((start + bytes.len()) as i64 + self.rng.delta()).max(len);
                o.push(format!("depth:{depth}"));
            }
            _ => {}
        }
        self.opts.extend(o);
    }

    fn pcre(&mut self) {
        let relative = self.cursor.is_some() && self.rng.pct(60);
        let anchored = self.rng.pct(30);
        let nocase = self.rng.pct(30);
        if anchored && relative {
            if self.rng.pct(20) {
                self.filler(1);
            }
        } else if anchored {
            // ^ without R is the start of the buffer: only the first item.
        } else {
            self.gap();
        }
        let wlen = self.rng.range(2, 5) as usize;
        let word: Vec<u8> = (0..wlen).map(|_| self.rng.pick(CONTENT_TEXT)).collect();
        let ndigits = self.rng.range(1, 5) as usize;
        let mut token = word.clone();
        token.push(b'=');
        for _ in 0..ndigits {
            let d = b'0' + self.rng.below(10) as u8;
            token.push(d);
        }
        let start = self.place(&token, nocase);
        let anchored = anchored && (relative || start <= 1);
        let mut re = String::new();
        if anchored {
            re.push('^');
        }
        for &c in &word {
            match self.rng.below(10) {
                0 | 1 => re.push('.'),
                2 => re.push_str("[a-h]"),
                _ => re.push(c as char),
            }
        }
        re.push('=');
        match self.rng.below(3) {
            0 => re.push_str("\\d+"),
            1 => {
                let k = (ndigits as i64 + self.rng.delta()).max(1);
                let _ = write!(re, "\\d{{{k}}}");
            }
            _ => {
                let k = (ndigits as i64 + self.rng.delta()).max(1);
                let _ = write!(re, "[0-9]{{{k},}}");
            }
        }
        if self.rng.pct(10) {
            // A lookahead on the next byte: filler or the end.
            re.push_str("(?![0-9])");
        }
        let mut flags = String::new();
        if relative {
            flags.push('R');
        }
        if nocase {
            flags.push('i');
        }
        if self.rng.pct(10) {
            flags.push('s');
        }
        let neg = self.rng.pct(5);
        self.opts.push(format!(
            "pcre:{}\"/{re}/{flags}\"",
            if neg { "!" } else { "" }
        ));
        if !neg {
            self.cursor = Some(start + token.len());
        }
    }

    /// A numeric field: (bytes in the payload, option words, value).
    fn field(&mut self, max: u64, allow_hex: bool) -> (Vec<u8>, Vec<&'static str>, u64, usize) {
        match self.rng.below(if allow_hex { 5 } else { 4 }) {
            0 | 1 => {
                // string, dec
                let v = self.rng.below(max.min(99_999) + 1);
                let s = v.to_string().into_bytes();
                let n = s.len();
                (s, vec!["string", "dec"], v, n)
            }
            2 | 3 => {
                let nbytes = if max < 256 {
                    1
                } else {
                    self.rng.pick(&[1usize, 2, 4])
                };
                let cap = if nbytes == 4 {
                    u32::MAX as u64
                } else {
                    (1u64 << (8 * nbytes)) - 1
                };
                let v = self.rng.below(max.min(cap) + 1);
                let little = self.rng.pct(40);
                let be = v.to_be_bytes();
                let mut b = be[8 - nbytes..].to_vec();
                if little {
                    b.reverse();
                }
                (b, if little { vec!["little"] } else { vec![] }, v, nbytes)
            }
            _ => {
                let v = self.rng.below(max.min(0xfffff) + 1);
                let s = format!("{v:x}").into_bytes();
                let n = s.len();
                (s, vec!["string", "hex"], v, n)
            }
        }
    }

    /// `offset[,relative]` words for a field placed at `start`.
    fn field_offset(&mut self, start: usize, relative: bool) -> (i64, bool) {
        let base = if relative {
            start as i64 - self.cursor.unwrap_or(0) as i64
        } else {
            start as i64
        };
        let off = if self.rng.pct(15) {
            base + self.rng.delta()
        } else {
            base
        };
        if !relative {
            return (off.max(0), false);
        }
        (off, true)
    }

    fn byte_test(&mut self) {
        let relative = self.cursor.is_some() && self.rng.pct(60);
        self.gap();
        let (bytes, words, v, mut n) = self.field(u32::MAX as u64, true);
        let start = self.place(&bytes, false);
        let (off, rel) = self.field_offset(start, relative);
        if words.contains(&"string") && self.rng.pct(10) {
            n = (n as i64 + self.rng.delta()).clamp(1, 10) as usize;
        }
        let op = self.rng.pick(&["<", ">", "=", "!=", "<=", ">=", "&", "^"]);
        let value = match op {
            "&" | "^" => {
                if v != 0 && self.rng.pct(60) {
                    1u64 << (63 - v.leading_zeros())
                } else {
                    1u64 << self.rng.below(if n >= 4 { 31 } else { 8 * n as u64 })
                }
            }
            _ => (v as i64 + self.rng.delta()).max(0) as u64,
        };
        let mut s = format!("byte_test:{n},{op},{value},{off}");
        if rel {
            s.push_str(",relative");
        }
        for w in words {
            s.push(',');
            s.push_str(w);
        }
        self.opts.push(s);
    }

    fn byte_jump(&mut self) {
        let relative = self.cursor.is_some() && self.rng.pct(60);
        self.gap();
        let mult: u64 = if self.rng.pct(20) {
            self.rng.range(2, 4) as u64
        } else {
            1
        };
        let post: i64 = if self.rng.pct(20) {
            self.rng.range(-2, 3)
        } else {
            0
        };
        let from_beginning = self.rng.pct(15);
        // The jump lands `jump` bytes past the field (or from the start).
        let field_start = self.payload.len();
        let (probe, words, _, n) = self.field(12, false);
        let field_end = field_start + probe.len();
        let _ = n;
        let (jump, bytes, words, n) = {
            let min_target = field_end as i64 + self.rng.range(0, 10);
            let base = if from_beginning { 0 } else { field_end as i64 };
            let need = (min_target - base - post).max(0) as u64;
            let v = need.div_ceil(mult);
            // Re-encode v in the same form as the probe.
            let bytes = encode_like(&words, v, probe.len());
            if bytes.len() != probe.len() {
                // v does not fit the probe's width: use a decimal string.
                let s = v.to_string().into_bytes();
                let len = s.len();
                (v, s, vec!["string", "dec"], len)
            } else {
                (v, bytes, words, n)
            }
        };
        let start = self.place(&bytes, false);
        let field_end = start + bytes.len();
        let (off, rel) = self.field_offset(start, relative);
        let base = if from_beginning { 0 } else { field_end as i64 };
        let target = (base + jump as i64 * mult as i64 + post).max(0) as usize;
        let mut s = format!("byte_jump:{n},{off}");
        if rel {
            s.push_str(",relative");
        }
        for w in words {
            s.push(',');
            s.push_str(w);
        }
        if mult > 1 {
            let _ = write!(s, ",multiplier {mult}");
        }
        if post != 0 {
            let _ = write!(s, ",post_offset {post}");
        }
        if from_beginning {
            s.push_str(",from_beginning");
        }
        self.opts.push(s);
        if target >= self.payload.len() {
            let pad = target - self.payload.len();
            self.filler(pad);
        }
        self.cursor = Some(target);
        // The content the jump leads to.
        let bytes = self.new_content_bytes();
        let at = self.payload.len();
        self.place(&bytes, false);
        let d = at as i64 - target as i64
            + if self.rng.pct(15) {
                self.rng.delta()
            } else {
                0
            };
        self.opts
            .push(format!("content:\"{}\"", content_string(&bytes)));
        self.opts.push(format!("distance:{d}"));
        if self.rng.pct(50) {
            self.opts.push(format!("within:{}", bytes.len()));
        }
        self.contents.push(bytes.clone());
        self.cursor = Some(at + bytes.len());
    }

    fn byte_extract(&mut self) {
        let relative = self.cursor.is_some() && self.rng.pct(60);
        self.gap();
        let (bytes, words, v, n) = self.field(12, false);
        let start = self.place(&bytes, false);
        let (off, rel) = self.field_offset(start, relative);
        self.extract_n += 1;
        let name = format!("bx{}", self.extract_n);
        let mut s = format!("byte_extract:{n},{off},{name}");
        if rel {
            s.push_str(",relative");
        }
        for w in words {
            s.push(',');
            s.push_str(w);
        }
        self.opts.push(s);
        let field_end = start + bytes.len();
        // The next content sits v bytes past the field (give or take one).
        let gap = (v as i64
            + if self.rng.pct(20) {
                self.rng.delta()
            } else {
                0
            })
        .max(0) as usize;
        self.filler(gap);
        let cbytes = self.new_content_bytes();
        let at = self.place(&cbytes, false);
        let _ = field_end;
        self.opts
            .push(format!("content:\"{}\"", content_string(&cbytes)));
        if self.rng.pct(70) {
            self.opts.push(format!("distance:{name}"));
            if self.rng.pct(40) {
                self.opts.push(format!("within:{}", cbytes.len()));
            }
        } else {
            self.opts.push("distance:0".into());
            self.opts.push(format!("within:{name}"));
        }
        self.contents.push(cbytes.clone());
        self.cursor = Some(at + cbytes.len());
    }

    fn isdataat(&mut self) {
        let relative = self.cursor.is_some() && self.rng.pct(70);
        let neg = self.rng.pct(25);
        let at = self.opts.len();
        self.opts.push(String::new());
        let delta = self.rng.delta();
        let cursor = if relative { self.cursor } else { None };
        self.late.push((
            at,
            Late::IsDataAt {
                at,
                cursor,
                neg,
                delta,
            },
        ));
    }

    fn finish(&mut self) {
        if self.endswith_last {
            if self.rng.pct(20) {
                self.filler(1);
            }
        } else if self.rng.pct(70) {
            let n = self.rng.range(0, 6) as usize;
            self.filler(n);
        }
        let len = self.payload.len() as i64;
        for (_, late) in std::mem::take(&mut self.late) {
            match late {
                Late::IsDataAt {
                    at,
                    cursor,
                    neg,
                    delta,
                } => {
                    let (n, rel) = match cursor {
                        Some(c) => (len - c as i64 - 1 + delta, ",relative"),
                        None => (len - 1 + delta, ""),
                    };
                    let n = n.max(0);
                    self.opts[at] = format!("isdataat:{}{n}{rel}", if neg { "!" } else { "" });
                }
            }
        }
    }
}

/// Encodes `v` in the form described by `words` (as `field` made it), with
/// `width` bytes for binary forms.
fn encode_like(words: &[&str], v: u64, width: usize) -> Vec<u8> {
    if words.contains(&"string") {
        return v.to_string().into_bytes();
    }
    if width < 8 && v >= (1u64 << (8 * width)) {
        return Vec::new();
    }
    let mut b = v.to_be_bytes()[8 - width..].to_vec();
    if words.contains(&"little") {
        b.reverse();
    }
    b
}

/// Generates rule `index` (global, for the seed) with the given sid and
/// server port.
pub fn gen_rule(seed: u64, index: u64, sid: u32, server_port: u16) -> GenRule {
    let mut rng = Rng::for_index(seed, index);
    let proto = if rng.pct(75) { Proto::Tcp } else { Proto::Udp };
    let dir = if proto == Proto::Tcp && rng.pct(20) {
        Dir::ToClient
    } else {
        Dir::ToServer
    };
    let items = rng.range(1, 4) as usize;
    let mut b = Builder::new(&mut rng, FILLER, false, Vec::new(), false);
    for i in 0..items {
        let last = i + 1 == items;
        if i == 0 {
            b.first_item(last);
            continue;
        }
        match b.rng.below(100) {
            0..=39 => b.content(last),
            40..=51 => b.pcre(),
            52..=63 => b.byte_test(),
            64..=71 => b.byte_jump(),
            72..=79 => b.byte_extract(),
            80..=89 => b.isdataat(),
            _ => b.negated_content(),
        }
    }
    b.finish();
    let payload = std::mem::take(&mut b.payload);
    let marks = std::mem::take(&mut b.marks);
    let mut options = std::mem::take(&mut b.opts);
    drop(b);

    // flow
    let mut pre = Vec::new();
    match (proto, dir) {
        (Proto::Tcp, Dir::ToServer) => match rng.below(10) {
            0..=4 => pre.push("flow:established,to_server".to_string()),
            5 | 6 => pre.push("flow:to_server".to_string()),
            _ => {}
        },
        (Proto::Tcp, Dir::ToClient) => match rng.below(10) {
            0..=5 => pre.push("flow:established,to_client".to_string()),
            _ => pre.push("flow:from_server".to_string()),
        },
        (Proto::Udp, _) => {
            if rng.pct(30) {
                pre.push("flow:to_server".to_string());
            }
        }
    }
    // Header keywords, around the values the flows are sent with.
    let header = Header {
        ttl: rng.range(32, 128) as u8,
        tos: rng.pick(&[0u8, 8, 16, 32]),
        ip_id: rng.range(1, 60000) as u16,
        window: rng.range(1000, 65000) as u16,
    };
    let mut post = Vec::new();
    if rng.pct(20) {
        let d = rng.delta();
        let t = i64::from(header.ttl);
        post.push(match rng.below(4) {
            0 => format!("ttl:{}", t + d),
            1 => format!("ttl:<{}", t + 1 + d),
            2 => format!("ttl:>{}", t - 1 + d),
            _ => format!("ttl:{}-{}", t - 2 + d, t + 2),
        });
    }
    if rng.pct(8) {
        post.push(format!("id:{}", i64::from(header.ip_id) + rng.delta()));
    }
    if rng.pct(5) {
        post.push(format!("tos:{}", header.tos));
    }
    if proto == Proto::Tcp && rng.pct(8) {
        post.push(format!("window:{}", i64::from(header.window) + rng.delta()));
    }
    if proto == Proto::Tcp && rng.pct(8) {
        post.push(
            rng.pick(&["flags:AP", "flags:A+", "flags:PA,12", "flags:S", "flags:!R"])
                .to_string(),
        );
    }
    let mut may_split = true;
    if rng.pct(if proto == Proto::Udp { 30 } else { 10 }) {
        may_split = false;
        let n = payload.len() as i64;
        let d = rng.delta();
        post.push(match rng.below(4) {
            0 => format!("dsize:{}", n + d),
            1 => format!("dsize:<{}", (n + 1 + d).max(1)),
            2 => format!("dsize:>{}", (n - 1 + d).max(0)),
            _ => format!("dsize:{}<>{}", (n - 2 + d).max(0), n + 2),
        });
    }
    pre.append(&mut options);
    pre.append(&mut post);
    GenRule {
        sid,
        proto,
        dir,
        server_port,
        options: pre,
        payload,
        marks,
        header,
        may_split,
        http: false,
        response: Vec::new(),
    }
}

/// URI filler: unreserved characters no content, number or token uses.
const URI_FILLER: &[u8] = b"-._~QRSTUVWXYZ";
/// Host and User-Agent filler.
const HOST_FILLER: &[u8] = b"-.QRSTUVWXYZ";
const UA_FILLER: &[u8] = b"-._~;:()QRSTUVWXYZ";

/// The items of one HTTP sticky buffer, built into `prefix` + filler.
fn http_buffer(
    rng: &mut Rng,
    prefix: &[u8],
    filler: &'static [u8],
    opts: &mut Vec<String>,
    fast_pattern_used: &mut bool,
) -> (Vec<u8>, Vec<(usize, usize)>) {
    let items = rng.range(1, 2) as usize;
    let mut b = Builder::new(rng, filler, true, prefix.to_vec(), *fast_pattern_used);
    b.lowercase_buffer = filler == HOST_FILLER;
    for i in 0..items {
        let last = i + 1 == items;
        if i == 0 {
            b.first_item(last);
            continue;
        }
        match b.rng.below(100) {
            0..=59 => b.content(last),
            60..=74 => b.pcre(),
            75..=89 => b.isdataat(),
            _ => b.negated_content(),
        }
    }
    b.finish();
    *fast_pattern_used = b.fast_pattern_used;
    opts.append(&mut b.opts);
    (std::mem::take(&mut b.payload), std::mem::take(&mut b.marks))
}

/// An `http` rule: items in `http.uri`, `http.host`, `http.user_agent` and
/// `http.method`, and the request that carries them.
fn gen_http_rule(rng: &mut Rng, sid: u32, server_port: u16) -> GenRule {
    let method: &str = rng.pick(&["GET", "HEAD", "DELETE", "OPTIONS"]);
    let mut opts = Vec::new();
    if rng.pct(50) {
        opts.push("flow:established,to_server".to_string());
    }
    let mut fp = false;
    let mut use_uri = rng.pct(70);
    let use_host = rng.pct(35);
    let use_ua = rng.pct(35);
    let use_method = rng.pct(15);
    if !(use_uri || use_host || use_ua || use_method) {
        use_uri = true;
    }
    let (uri, uri_marks) = if use_uri {
        opts.push("http.uri".into());
        http_buffer(rng, b"/", URI_FILLER, &mut opts, &mut fp)
    } else {
        (b"/index.html".to_vec(), Vec::new())
    };
    let (host, host_marks) = if use_host {
        opts.push("http.host".into());
        http_buffer(rng, b"", HOST_FILLER, &mut opts, &mut fp)
    } else {
        (b"www.example.test".to_vec(), Vec::new())
    };
    let (ua, ua_marks) = if use_ua {
        opts.push("http.user_agent".into());
        http_buffer(rng, b"", UA_FILLER, &mut opts, &mut fp)
    } else {
        (b"Mozilla/5.0".to_vec(), Vec::new())
    };
    if use_method {
        opts.push("http.method".into());
        let mut m = method.as_bytes().to_vec();
        if rng.pct(25) {
            let i = rng.below(m.len() as u64) as usize;
            m[i] = m[i].to_ascii_lowercase();
        }
        opts.push(format!("content:\"{}\"", content_string(&m)));
        if rng.pct(30) {
            opts.push("nocase".into());
        }
    }
    let mut payload = Vec::new();
    let mut marks = Vec::new();
    payload.extend_from_slice(method.as_bytes());
    payload.push(b' ');
    let base = payload.len();
    marks.extend(uri_marks.iter().map(|&(a, b)| (a + base, b + base)));
    payload.extend_from_slice(&uri);
    payload.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    let base = payload.len();
    marks.extend(host_marks.iter().map(|&(a, b)| (a + base, b + base)));
    payload.extend_from_slice(&host);
    payload.extend_from_slice(b"\r\nUser-Agent: ");
    let base = payload.len();
    marks.extend(ua_marks.iter().map(|&(a, b)| (a + base, b + base)));
    payload.extend_from_slice(&ua);
    payload.extend_from_slice(b"\r\nAccept: */*\r\n\r\n");
    let header = Header {
        ttl: rng.range(32, 128) as u8,
        tos: 0,
        ip_id: rng.range(1, 60000) as u16,
        window: rng.range(1000, 65000) as u16,
    };
    GenRule {
        sid,
        proto: Proto::Tcp,
        dir: Dir::ToServer,
        server_port,
        options: opts,
        payload,
        marks,
        header,
        may_split: true,
        http: true,
        response: b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec(),
    }
}

/// Rule `index` where `http_pct` percent of the rules are `http` rules
/// (decided apart, so the other rules do not depend on `http_pct`).
pub fn gen_rule_mix(seed: u64, index: u64, sid: u32, server_port: u16, http_pct: u64) -> GenRule {
    let mut pick = Rng::for_index(seed ^ 0x4854_5450, index);
    if pick.pct(http_pct) {
        let mut rng = Rng::for_index(seed, index);
        return gen_http_rule(&mut rng, sid, server_port);
    }
    gen_rule(seed, index, sid, server_port)
}

/// One flow of a rule: its client port and what was done to the payload.
#[derive(Clone, Debug)]
pub struct GenFlow {
    pub client_port: u16,
    pub variant: String,
}

/// A mutated copy of the rule's payload and header (variant name, payload,
/// header).
fn mutate(rng: &mut Rng, r: &GenRule) -> (String, Vec<u8>, Header) {
    let mut p = r.payload.clone();
    let mut h = r.header;
    let kind = rng.below(7);
    let mark = if r.marks.is_empty() {
        (0, p.len())
    } else {
        r.marks[rng.below(r.marks.len() as u64) as usize]
    };
    let in_mark = |rng: &mut Rng| {
        if mark.1 > mark.0 {
            mark.0 + rng.below((mark.1 - mark.0) as u64) as usize
        } else {
            0
        }
    };
    let name = match kind {
        0 if !p.is_empty() => {
            let i = in_mark(rng).min(p.len() - 1);
            p[i] ^= 1 << rng.below(8);
            "flip"
        }
        1 if !p.is_empty() => {
            let i = in_mark(rng).min(p.len() - 1);
            if p[i].is_ascii_alphabetic() {
                p[i] ^= 0x20;
            } else {
                p[i] = p[i].wrapping_add(1);
            }
            "case"
        }
        2 => {
            let i = if rng.pct(60) {
                mark.0
            } else {
                rng.below(p.len() as u64 + 1) as usize
            };
            let f = rng.pick(FILLER);
            p.insert(i.min(p.len()), f);
            "insert"
        }
        3 if p.len() > 1 => {
            let i = if rng.pct(60) {
                mark.0.min(p.len() - 1)
            } else {
                rng.below(p.len() as u64) as usize
            };
            p.remove(i);
            "delete"
        }
        4 if p.len() > 1 => {
            p.pop();
            "truncate"
        }
        5 => {
            p.push(rng.pick(FILLER));
            "extend"
        }
        _ => {
            h.ttl = (i64::from(h.ttl) + rng.pick(&[-1i64, 1])) as u8;
            h.ip_id = h.ip_id.wrapping_add(1);
            h.window = h.window.wrapping_sub(1);
            h.tos ^= 8;
            "header"
        }
    };
    (name.to_string(), p, h)
}

fn builder_for(h: Header) -> PacketBuilder {
    PacketBuilder::new()
        .ttl(h.ttl)
        .tos(h.tos)
        .ip_id(h.ip_id)
        .window(h.window)
}

/// The frames of one flow of rule `r`.
fn flow_frames(
    rng: &mut Rng,
    r: &GenRule,
    payload: &[u8],
    h: Header,
    client_port: u16,
    start_us: u64,
    split: bool,
) -> (Vec<TimedFrame>, String) {
    let client = IpAddr::V4(CLIENT_IP);
    let server = IpAddr::V4(SERVER_IP);
    let ts = crate::session::add_us((1_700_000_000, 0), start_us);
    let b = builder_for(h);
    match r.proto {
        Proto::Tcp => {
            let mut s = TcpSession::new(
                std::net::SocketAddr::new(client, client_port),
                std::net::SocketAddr::new(server, r.server_port),
            )
            .with_builder(b)
            .with_isn(rng.next_u64() as u32, rng.next_u64() as u32)
            .start_at(ts)
            .with_step(100);
            s.handshake();
            let mut cuts: Vec<usize> = Vec::new();
            if split && r.may_split && payload.len() > 1 {
                let k = rng.below(4);
                for _ in 0..k {
                    cuts.push(1 + rng.below(payload.len() as u64 - 1) as usize);
                }
                cuts.sort_unstable();
                cuts.dedup();
            }
            let mut prev = 0;
            for &c in cuts.iter().chain(std::iter::once(&payload.len())) {
                s.segment(r.dir, PSH | ACK, &payload[prev..c]);
                prev = c;
            }
            let back = match r.dir {
                Dir::ToServer => Dir::ToClient,
                Dir::ToClient => Dir::ToServer,
            };
            s.segment(back, ACK, &[]);
            if !r.response.is_empty() {
                s.segment(back, PSH | ACK, &r.response);
                s.segment(r.dir, ACK, &[]);
            }
            s.close();
            let desc = format!("tcp segments {}", cuts.len() + 1);
            (s.into_frames(), desc)
        }
        Proto::Udp => {
            let dg = b.udp_datagram(client, client_port, server, r.server_port, payload);
            if split && dg.len() > 16 && rng.pct(15) {
                // IPv4 fragments at an 8-byte boundary.
                let cut = 8 * (1 + rng.below(((dg.len() - 1) / 8) as u64) as usize);
                let cut = cut.min(dg.len() - 1) / 8 * 8;
                let cut = cut.max(8);
                let f1 = b.clone().mf(true).frag_offset(0);
                let f2 = b.clone().mf(false).frag_offset((cut / 8) as u16);
                let p1 = f1.ethernet(
                    0x0800,
                    &f1.ipv4_packet(CLIENT_IP, SERVER_IP, IPPROTO_UDP, &dg[..cut]),
                );
                let p2 = f2.ethernet(
                    0x0800,
                    &f2.ipv4_packet(CLIENT_IP, SERVER_IP, IPPROTO_UDP, &dg[cut..]),
                );
                let t2 = crate::session::add_us(ts, 100);
                (vec![(ts, p1), (t2, p2)], "udp fragments 2".to_string())
            } else {
                (
                    vec![(
                        ts,
                        b.udp(client, client_port, server, r.server_port, payload),
                    )],
                    "udp".to_string(),
                )
            }
        }
    }
}

/// Sid offset of the flowbit-setting companion of a rule.
pub const SETTER_SID_OFFSET: u32 = 2_000_000;

/// Makes `r` check a flowbit (`isset` or `isnotset`) that a companion rule
/// (sid + [`SETTER_SID_OFFSET`], `noalert`) sets when the first item of
/// `r`'s payload is in the flow. Returns the companion's text.
fn add_flowbits(rng: &mut Rng, r: &mut GenRule) -> String {
    let (a, b) = r.marks[0];
    let name = format!("fb{}", r.sid);
    let mut setter = r.clone();
    setter.sid = r.sid + SETTER_SID_OFFSET;
    setter.options = r
        .options
        .iter()
        .filter(|o| o.starts_with("flow:"))
        .cloned()
        .collect();
    setter
        .options
        .push(format!("content:\"{}\"", content_string(&r.payload[a..b])));
    setter.options.push(format!("flowbits:set,{name}"));
    setter.options.push("flowbits:noalert".into());
    let cmd = if rng.pct(75) { "isset" } else { "isnotset" };
    r.options.push(format!("flowbits:{cmd},{name}"));
    setter.text()
}

/// One batch: `count` rules from global index `first`, sids `first_sid +
/// i`, `flows` flows per rule, `http_pct` percent of them `http` rules,
/// `flowbits_pct` percent of the others checking a flowbit that a
/// companion rule sets. Returns the rule lines, the frames (in time
/// order) and one line per flow: `sid client_port variant description`.
pub fn gen_batch(
    seed: u64,
    first: u64,
    count: usize,
    first_sid: u32,
    flows: usize,
    http_pct: u64,
    flowbits_pct: u64,
) -> (Vec<String>, Vec<TimedFrame>, Vec<String>) {
    assert!(
        count * flows <= MAX_BATCH_FLOWS,
        "batch too large for the port plan"
    );
    assert!(count <= usize::from(CLIENT_PORT_BASE - SERVER_PORT_BASE));
    let mut rules = Vec::with_capacity(count);
    let mut frames = Vec::new();
    let mut index = Vec::new();
    let mut t_us: u64 = 0;
    for i in 0..count {
        let g = first + i as u64;
        let sid = first_sid + i as u32;
        let mut r = gen_rule_mix(seed, g, sid, SERVER_PORT_BASE + i as u16, http_pct);
        let mut fb = Rng::for_index(seed ^ 0xF10B_1750, g);
        if !r.http && !r.marks.is_empty() && fb.pct(flowbits_pct) {
            let setter = add_flowbits(&mut fb, &mut r);
            if fb.pct(50) {
                rules.push(setter);
                rules.push(r.text());
            } else {
                rules.push(r.text());
                rules.push(setter);
            }
        } else {
            rules.push(r.text());
        }
        let mut rng = Rng::for_index(seed ^ 0x5EED_F10E, g);
        for v in 0..flows {
            let port = CLIENT_PORT_BASE + (i * flows + v) as u16;
            let (variant, payload, h) = if v == 0 {
                ("as-built".to_string(), r.payload.clone(), r.header)
            } else {
                mutate(&mut rng, &r)
            };
            let (f, desc) = flow_frames(&mut rng, &r, &payload, h, port, t_us, true);
            t_us += 100 * (f.len() as u64 + 1);
            frames.extend(f);
            index.push(format!("{sid}\t{port}\t{variant}\t{desc}"));
        }
    }
    (rules, frames, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_index_stable() {
        let a = gen_batch(7, 0, 20, 1, 2, 30, 30);
        let b = gen_batch(7, 0, 20, 1, 2, 30, 30);
        assert_eq!(a.0, b.0);
        assert_eq!(a.1, b.1);
        assert_eq!(a.2, b.2);
        // Rule 10 is the same rule whether generated first or tenth (only
        // sid and port differ).
        let r1 = gen_rule(7, 10, 5, 10000);
        let r2 = gen_rule(7, 10, 5, 10000);
        assert_eq!(r1.text(), r2.text());
        assert_eq!(r1.payload, r2.payload);
    }

    #[test]
    fn rules_look_valid() {
        for i in 0..2000 {
            let r = gen_rule(1, i, 1 + i as u32, 10000);
            let t = r.text();
            assert!(t.starts_with("alert "), "{t}");
            assert!(t.ends_with("rev:1;)"), "{t}");
            assert!(!r.payload.is_empty(), "{t}");
            assert!(t.contains("content:") || t.contains("pcre:"), "{t}");
            assert!(!t.contains("; ;"), "{t}");
            assert!(t.len() < 2000);
            assert!(!t.contains(":-1<>") && !t.contains("dsize:>-"), "{t}");
        }
    }

    #[test]
    fn http_rules_carry_their_request() {
        let mut n = 0;
        for i in 0..300 {
            let r = gen_rule_mix(5, i, 1, 10000, 100);
            assert!(r.http && r.text().starts_with("alert http "));
            assert!(r.payload.ends_with(b"\r\n\r\n"));
            assert!(r.response.starts_with(b"HTTP/1.1 200"));
            for b in ["http.uri", "http.host", "http.user_agent", "http.method"] {
                n += usize::from(r.text().contains(b));
            }
        }
        assert!(n >= 300);
        // http_pct 0 leaves the rules as gen_rule makes them.
        for i in 0..100 {
            assert_eq!(
                gen_rule_mix(5, i, 1, 10000, 0).text(),
                gen_rule(5, i, 1, 10000).text()
            );
        }
    }

    #[test]
    fn content_string_forms() {
        assert_eq!(content_string(b"abc"), "abc");
        assert_eq!(content_string(&[0, 0xff, b'a', 1]), "|00 FF|a|01|");
    }

    #[test]
    fn as_built_flow_carries_the_payload() {
        let r = gen_rule(3, 0, 1, 10000);
        let mut rng = Rng::new(1);
        let (f, _) = flow_frames(&mut rng, &r, &r.payload, r.header, 40000, 0, false);
        let joined: Vec<u8> = f.iter().flat_map(|(_, x)| x.clone()).collect();
        assert!(joined
            .windows(r.payload.len())
            .any(|w| w == r.payload.as_slice()));
    }
}
