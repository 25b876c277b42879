//! The payload verification engine: the second phase of detection.
//!
//! A rule's payload keywords for one buffer ([`PayloadItem`]s, in rule
//! order) are compiled once into a [`CompiledPayload`] and evaluated
//! against a byte buffer with Suricata's semantics. The evaluator is a
//! transcription of Suricata's `DetectEngineContentInspectionInternal`
//! (detect-engine-content-inspection.c): a recursive walk over the keyword
//! list that keeps a cursor (`buffer_offset`, the end of the previous
//! content/pcre match or where byte_jump/byte_extract/byte_math left it)
//! and, when a later keyword fails, retries a content or pcre at its next
//! occurrence — but only where Suricata would:
//!
//! - a content is retried when the keyword list after it failed and its
//!   `WITHIN_NEXT` flag is set: a later content has `within` (or a negated
//!   `distance`) relative to it, or a `pcre/R`, relative `byte_test`,
//!   `byte_jump`, `byte_extract`, `byte_math` or `isdataat` follows it;
//! - a pcre is retried (from one byte after the start of its last match)
//!   when anything relative to it follows;
//! - a failure that no retry can fix (an absolute content not found, an
//!   unanchored negated content found, isdataat with a constant, bsize)
//!   ends the whole inspection;
//! - the whole inspection gives up (no match) after
//!   [`INSPECTION_RECURSION_LIMIT`] steps, Suricata's default
//!   `inspection-recursion-limit`.
//!
//! What is set up at rule-parse time in Suricata is done by
//! [`CompiledPayload::compile`]: the "relative next" flags, `startswith`
//! (offset 0, depth = pattern length), `isdataat:!1,relative` turned into
//! `endswith` on the content before it, and depth counted from offset.

use std::fmt;
use std::sync::Arc;

use pcre2::bytes::Regex;
use vigil_applayer::transforms::{base64_decode_into, Base64Mode};
use vigil_rules::{
    ByteExtract, ByteJump, ByteMath, ByteTest, CmpOp, Content, Endian, IntCmp, IsDataAt, MathOp,
    NumBase, NumOrVar, NumOrVar64, NumOrVarSigned, PayloadItem, Pcre, VarScope, VAR_VALUE_MAX,
};

mod asn1;
mod num;
mod regex;
mod search;

pub use regex::{PCRE_DEPTH_LIMIT, PCRE_MATCH_LIMIT};
use search::Searcher;

/// Most byte_extract/byte_math variables one rule may define.
pub const MAX_VARS: usize = 16;

/// Suricata's default `detect.inspection-recursion-limit`.
pub const INSPECTION_RECURSION_LIMIT: u32 = 3000;

/// Why a payload keyword list cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadCompileError {
    #[error("pcre \"{pattern}\": {message}")]
    Pcre { pattern: String, message: String },
    #[error("{keyword}: unknown variable \"{name}\"")]
    UnknownVariable { keyword: &'static str, name: String },
    #[error("{keyword}: more than {max} byte_extract/byte_math variables")]
    TooManyVariables { keyword: &'static str, max: usize },
    #[error("content: empty pattern")]
    EmptyContent,
    #[error("{keyword}: cannot read {nbytes} bytes")]
    InvalidNbytes { keyword: &'static str, nbytes: u8 },
    #[error("{0}: not part of a payload program")]
    Unsupported(&'static str),
}

impl PayloadCompileError {
    /// The rule keyword at fault (`content`, `pcre`, `byte_test`, ...).
    pub fn keyword(&self) -> &'static str {
        match self {
            PayloadCompileError::Pcre { .. } => "pcre",
            PayloadCompileError::UnknownVariable { keyword, .. }
            | PayloadCompileError::TooManyVariables { keyword, .. }
            | PayloadCompileError::InvalidNbytes { keyword, .. } => keyword,
            PayloadCompileError::EmptyContent => "content",
            PayloadCompileError::Unsupported(k) => k,
        }
    }
}

/// byte_extract / byte_math variable names of one rule and their slots in
/// the `[u64; MAX_VARS]` array given to [`CompiledPayload::matches`]. One
/// table is shared by all buffers of a rule, so a buffer can use a value
/// extracted by an earlier one.
#[derive(Debug, Clone, Default)]
pub struct VarTable {
    names: Vec<String>,
}

impl VarTable {
    pub fn new() -> VarTable {
        VarTable::default()
    }

    /// The slot of `name`, if it was defined.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The slot for a variable being written; a name defined again reuses
    /// its slot.
    pub fn define(&mut self, name: &str) -> Result<usize, PayloadCompileError> {
        self.define_for(name, "byte_extract")
    }

    fn define_for(
        &mut self,
        name: &str,
        keyword: &'static str,
    ) -> Result<usize, PayloadCompileError> {
        if let Some(i) = self.slot(name) {
            return Ok(i);
        }
        if self.names.len() >= MAX_VARS {
            return Err(PayloadCompileError::TooManyVariables {
                keyword,
                max: MAX_VARS,
            });
        }
        self.names.push(name.to_string());
        Ok(self.names.len() - 1)
    }

    fn read(&self, name: &str, keyword: &'static str) -> Result<u8, PayloadCompileError> {
        self.slot(name)
            .map(|i| i as u8)
            .ok_or_else(|| PayloadCompileError::UnknownVariable {
                keyword,
                name: name.to_string(),
            })
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Variable names by slot.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// Which Suricata list the keywords belong to. It only changes which
/// keyword a relative byte_*/isdataat keyword attaches to at parse time
/// (Suricata's `DetectGetLastSMFromLists`): the keyword just before it in
/// the packet payload list, the last content or pcre in a sticky buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListKind {
    /// Packet payload / stream (`DETECT_SM_LIST_PMATCH`).
    #[default]
    Payload,
    /// A sticky buffer (`http.uri`, `dns.query`, `tcp.hdr`, ...).
    Sticky,
}

/// A compiled payload program for one buffer of one rule. Immutable and
/// `Send + Sync`: build once, share between workers.
#[derive(Clone)]
pub struct CompiledPayload {
    items: Vec<Item>,
    min_len: usize,
}

impl fmt::Debug for CompiledPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledPayload")
            .field("items", &self.items)
            .field("min_len", &self.min_len)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum U32V {
    Num(u32),
    Var(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum I32V {
    Num(i32),
    Var(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum U64V {
    Num(u64),
    Var(u8),
}

#[derive(Debug, Clone)]
struct CContent {
    search: Searcher,
    len: u32,
    negated: bool,
    endswith: bool,
    /// DETECT_CONTENT_DISTANCE
    has_distance: bool,
    distance: I32V,
    /// DETECT_CONTENT_WITHIN
    within: Option<U32V>,
    /// Absolute offset (Num(0) when none).
    offset: U32V,
    /// Suricata's internal depth: the absolute end of the window for a
    /// constant offset and depth (offset + depth), the raw depth when
    /// either is a variable (offset is then added at run time). Num(0):
    /// none.
    depth: U32V,
    /// DETECT_CONTENT_OFFSET / DETECT_CONTENT_DEPTH (for "is single").
    offset_flag: bool,
    depth_flag: bool,
    /// DETECT_CONTENT_WITHIN_NEXT / DETECT_CONTENT_DISTANCE_NEXT.
    within_next: bool,
    distance_next: bool,
    /// DETECT_CONTENT_IS_SINGLE
    single: bool,
    /// `replace:` bytes (same length as the pattern).
    replace: Option<Box<[u8]>>,
}

impl CContent {
    fn relative(&self) -> bool {
        self.has_distance || self.within.is_some()
    }
}

#[derive(Clone)]
struct CPcre {
    re: Regex,
    negated: bool,
    relative: bool,
    /// DETECT_PCRE_RELATIVE_NEXT
    relative_next: bool,
    /// Variables capture groups 1, 2, ... are stored in.
    caps: Box<[(VarScope, Arc<str>)]>,
}

/// A value a pcre captured during an inspection, waiting for the rule's
/// verdict: Suricata keeps captures in `det_ctx->varlist` and stores them
/// in the packet or flow only when the whole rule matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingVar {
    pub scope: VarScope,
    pub name: Arc<str>,
    /// At most [`vigil_rules::VAR_VALUE_MAX`] bytes.
    pub value: Box<[u8]>,
}

thread_local! {
    /// The captures of the rule being inspected (`det_ctx->varlist`): a
    /// later match of the same variable replaces an earlier one.
    static PENDING_VARS: std::cell::RefCell<Vec<PendingVar>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Forgets the captures of the previous rule (call before inspecting a
/// rule whose pcre captures, [`CompiledPayload::captures`]).
pub fn pending_vars_clear() {
    PENDING_VARS.with(|v| v.borrow_mut().clear());
}

/// Moves the captures made since [`pending_vars_clear`] into `out`, in the
/// order they were first made.
pub fn pending_vars_take(out: &mut Vec<PendingVar>) {
    PENDING_VARS.with(|v| out.append(&mut v.borrow_mut()));
}

fn pending_vars_store(scope: VarScope, name: &Arc<str>, value: &[u8]) {
    let value = &value[..value.len().min(VAR_VALUE_MAX)];
    PENDING_VARS.with(|v| {
        let mut v = v.borrow_mut();
        match v.iter_mut().find(|p| p.scope == scope && p.name == *name) {
            Some(p) => p.value = value.into(),
            None => v.push(PendingVar {
                scope,
                name: name.clone(),
                value: value.into(),
            }),
        }
    });
}

impl fmt::Debug for CPcre {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CPcre")
            .field("re", &self.re.as_str())
            .field("negated", &self.negated)
            .field("relative", &self.relative)
            .field("relative_next", &self.relative_next)
            .field("caps", &self.caps)
            .finish()
    }
}

/// Bitmask and its shift (one right shift per trailing zero of the mask).
#[derive(Debug, Clone, Copy)]
struct Mask {
    mask: u64,
    shift: u32,
}

impl Mask {
    fn new(m: Option<u64>) -> Option<Mask> {
        m.map(|mask| Mask {
            mask,
            shift: if mask == 0 { 0 } else { mask.trailing_zeros() },
        })
    }

    #[inline]
    fn apply(m: Option<Mask>, v: u64) -> u64 {
        match m {
            None => v,
            Some(m) => {
                let v = v & m.mask;
                if v != 0 && m.shift != 0 {
                    v >> m.shift
                } else {
                    v
                }
            }
        }
    }
}

/// The most bytes `byte_test:0,...,string` reads: a u64 has at most 22
/// octal digits, so a longer run of digits overflows anyway.
const STRING_ANY_LEN: usize = 23;

/// How a byte_* keyword reads its number.
#[derive(Debug, Clone, Copy)]
struct Read {
    nbytes: u8,
    endian: Endian,
    base: NumBase,
}

impl Read {
    fn new(
        keyword: &'static str,
        nbytes: u8,
        endian: Endian,
        base: NumBase,
    ) -> Result<Read, PayloadCompileError> {
        // Binary reads take 0..=8 bytes (`byte_jump:0,0,from_end` is
        // valid); string reads 1..=23 (the longest u64 in octal), and
        // byte_test also 0: the number is as long as its digits are
        // ([`STRING_ANY_LEN`]), as Suricata reads it.
        let (min, max) = match base {
            NumBase::Binary => (0, 8),
            _ if keyword == "byte_test" => (0, 23),
            _ => (1, 23),
        };
        if nbytes < min || nbytes > max {
            return Err(PayloadCompileError::InvalidNbytes { keyword, nbytes });
        }
        Ok(Read {
            nbytes,
            endian,
            base,
        })
    }

    /// For a byte count held in variable `var`: this read with that count,
    /// or `None` (no match) when the value is out of the allowed range.
    #[inline]
    fn with_var(self, var: Option<u8>, vars: &[u64; MAX_VARS]) -> Option<Read> {
        let Some(slot) = var else { return Some(self) };
        let n = vars[slot as usize];
        // As for constants: binary reads take 0..=8 bytes (0 reads
        // nothing), string reads 1..=23.
        let (min, max) = if self.base == NumBase::Binary {
            (0, 8)
        } else {
            (1, 23)
        };
        if n < min || n > max {
            return None;
        }
        Some(Read {
            nbytes: n as u8,
            ..self
        })
    }

    /// A read whose byte count comes from a variable at match time.
    fn var(endian: Endian, base: NumBase) -> Read {
        Read {
            nbytes: 0,
            endian,
            base,
        }
    }

    /// The value and the bytes consumed, reading at `buf[ptr..]` where
    /// `ptr + nbytes <= buf.len()` has been checked.
    #[inline]
    fn read(&self, buf: &[u8], ptr: usize) -> Option<(u64, usize)> {
        let bytes = &buf[ptr..ptr + self.nbytes as usize];
        if self.base == NumBase::Binary {
            Some((num::binary(bytes, self.endian), bytes.len()))
        } else {
            num::string(bytes, self.base)
        }
    }
}

#[derive(Debug, Clone)]
struct CByteTest {
    read: Read,
    /// Slot of the variable holding the byte count, if any.
    nbytes_var: Option<u8>,
    negated: bool,
    op: CmpOp,
    value: U64V,
    offset: I32V,
    relative: bool,
    mask: Option<Mask>,
}

#[derive(Debug, Clone)]
struct CByteJump {
    read: Read,
    nbytes_var: Option<u8>,
    offset: I32V,
    relative: bool,
    multiplier: u64,
    align: bool,
    from_beginning: bool,
    from_end: bool,
    post_offset: i32,
    mask: Option<Mask>,
}

#[derive(Debug, Clone)]
struct CByteExtract {
    read: Read,
    offset: i32,
    slot: u8,
    relative: bool,
    multiplier: u64,
    align: u64,
    mask: Option<Mask>,
}

#[derive(Debug, Clone)]
struct CByteMath {
    read: Read,
    nbytes_var: Option<u8>,
    offset: i32,
    op: MathOp,
    rvalue: U64V,
    slot: u8,
    relative: bool,
    mask: Option<Mask>,
}

#[derive(Debug, Clone)]
struct CIsDataAt {
    negated: bool,
    offset: U32V,
    relative: bool,
}

/// `base64_decode` and its `base64_data` program.
#[derive(Debug, Clone)]
struct CBase64 {
    bytes: u32,
    offset: u32,
    relative: bool,
    data: Box<CompiledPayload>,
}

/// Most bytes `base64_decode` decodes (Suricata's limit).
const BASE64_DECODE_MAX: u32 = 65535;

thread_local! {
    /// The decoded `base64_data` buffer, reused across inspections.
    static BASE64_DATA: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

#[derive(Debug, Clone)]
enum Item {
    Content(CContent),
    Pcre(CPcre),
    ByteTest(CByteTest),
    ByteJump(CByteJump),
    ByteExtract(CByteExtract),
    ByteMath(CByteMath),
    IsDataAt(CIsDataAt),
    Bsize(IntCmp),
    Entropy(vigil_rules::Entropy),
    Asn1(vigil_rules::Asn1),
    Base64Decode(CBase64),
}

/// `entropy`: the Shannon entropy of the selected bytes (all of them must
/// be in the buffer, as in Suricata) compared with the rule's value.
fn entropy_matches(e: &vigil_rules::Entropy, buf: &[u8]) -> bool {
    let start = e.offset as usize;
    let end = match e.bytes {
        Some(n) => start.saturating_add(n as usize),
        None => buf.len(),
    };
    match buf.get(start..end) {
        Some(b) if !b.is_empty() || e.bytes.is_none() => e.value.matches(shannon_entropy(b)),
        _ => false,
    }
}

/// Shannon entropy of `b` in bits per byte (0 for an empty slice).
pub(crate) fn shannon_entropy(b: &[u8]) -> f64 {
    if b.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &x in b {
        counts[usize::from(x)] += 1;
    }
    let n = b.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// The result of one inspection step, as in Suricata: match, no match
/// (an earlier keyword may retry), or no match and give up.
const MATCH: i8 = 1;
const NO_MATCH: i8 = 0;
const DISCONTINUE: i8 = -1;

/// Per-inspection state (Suricata's `det_ctx` fields).
struct Ctx<'b, 'v> {
    buf: &'b [u8],
    len: u32,
    vars: &'v mut [u64; MAX_VARS],
    /// `det_ctx->buffer_offset`.
    off: u32,
    count: u32,
    limit: u32,
    /// `replace`: (match start, content item) of every occurrence found
    /// of a content with `replace`, when recording.
    edits: Option<&'v mut Vec<(u32, u32)>>,
}

impl CompiledPayload {
    /// Compiles the keywords of a packet-payload buffer (see
    /// [`CompiledPayload::compile_for`]).
    pub fn compile(
        items: &[PayloadItem],
        vars: &mut VarTable,
    ) -> Result<CompiledPayload, PayloadCompileError> {
        CompiledPayload::compile_for(items, vars, ListKind::Payload)
    }

    /// Compiles one buffer's keywords, in rule order. Variables are looked
    /// up in (and byte_extract/byte_math results added to) `vars`, so
    /// compile a rule's buffers in rule order with one table.
    pub fn compile_for(
        items: &[PayloadItem],
        vars: &mut VarTable,
        kind: ListKind,
    ) -> Result<CompiledPayload, PayloadCompileError> {
        let mut out: Vec<Item> = Vec::with_capacity(items.len());
        for it in items {
            // `isdataat:!1,relative` right after a content becomes
            // `endswith` on that content (Suricata's DetectIsdataatSetup).
            if let PayloadItem::IsDataAt(IsDataAt {
                negated: true,
                offset: NumOrVar::Num(1),
                relative: true,
                ..
            }) = it
            {
                if let Some(p) = prev_for_byte_keyword(&out, kind) {
                    if let Item::Content(c) = &mut out[p] {
                        c.endswith = true;
                        continue;
                    }
                }
            }
            let item = compile_item(it, vars)?;
            set_next_flags(&mut out, &item, kind);
            out.push(item);
        }
        for it in &mut out {
            if let Item::Content(c) = it {
                c.single = !(c.has_distance
                    || c.within.is_some()
                    || c.within_next
                    || c.distance_next
                    || c.depth_flag
                    || c.offset_flag);
            }
        }
        let min_len = min_len(&out);
        Ok(CompiledPayload {
            items: out,
            min_len,
        })
    }

    /// The shortest buffer that can match (a lower bound): buffers shorter
    /// than this can be skipped without calling [`Self::matches`].
    pub fn min_len(&self) -> usize {
        self.min_len
    }

    /// Whether a pcre of the program stores capture groups in variables.
    pub fn captures(&self) -> bool {
        fn any(items: &[Item]) -> bool {
            items.iter().any(|i| match i {
                Item::Pcre(p) => !p.caps.is_empty(),
                Item::Base64Decode(b) => b.data.captures(),
                _ => false,
            })
        }
        any(&self.items)
    }

    /// Number of keywords after compilation.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are no keywords (such a program matches any buffer).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Evaluates the program against `buf`. byte_extract/byte_math write
    /// their results into `vars` (slots from the [`VarTable`]); keywords
    /// read variables from it, including values left by an earlier buffer
    /// of the same rule.
    pub fn matches(&self, buf: &[u8], vars: &mut [u64; MAX_VARS]) -> bool {
        self.matches_with_limit(buf, vars, INSPECTION_RECURSION_LIMIT)
    }

    /// [`Self::matches`] with another inspection recursion limit (the
    /// number of keyword evaluations, retries included, before giving up).
    pub fn matches_with_limit(&self, buf: &[u8], vars: &mut [u64; MAX_VARS], limit: u32) -> bool {
        if self.items.is_empty() {
            return true;
        }
        // Offsets are 32-bit, as in Suricata.
        let buf = &buf[..buf.len().min(u32::MAX as usize)];
        let mut ctx = Ctx {
            buf,
            len: buf.len() as u32,
            vars,
            off: 0,
            count: 0,
            limit,
            edits: None,
        };
        self.inspect(0, &mut ctx) == MATCH
    }

    /// True when a content of the program has `replace`.
    pub fn has_replace(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i, Item::Content(c) if c.replace.is_some()))
    }

    /// [`Self::matches`] that also returns the `replace` edits (offset in
    /// `buf`, bytes) when it matches: as Suricata's replace list, every
    /// occurrence found while inspecting (newest first), applied in that
    /// order so that the earliest found is written last.
    pub fn replace_edits(
        &self,
        buf: &[u8],
        vars: &mut [u64; MAX_VARS],
    ) -> Option<Vec<(usize, &[u8])>> {
        if self.items.is_empty() {
            return Some(Vec::new());
        }
        let buf = &buf[..buf.len().min(u32::MAX as usize)];
        let mut found = Vec::new();
        let mut ctx = Ctx {
            buf,
            len: buf.len() as u32,
            vars,
            off: 0,
            count: 0,
            limit: INSPECTION_RECURSION_LIMIT,
            edits: Some(&mut found),
        };
        if self.inspect(0, &mut ctx) != MATCH {
            return None;
        }
        Some(
            found
                .iter()
                .rev()
                .filter_map(|&(start, idx)| match self.items.get(idx as usize) {
                    Some(Item::Content(c)) => c.replace.as_deref().map(|r| (start as usize, r)),
                    _ => None,
                })
                .collect(),
        )
    }

    /// `DetectEngineContentInspectionInternal` for keyword `idx`.
    fn inspect(&self, idx: usize, ctx: &mut Ctx) -> i8 {
        ctx.count += 1;
        if ctx.count >= ctx.limit {
            return DISCONTINUE;
        }
        match &self.items[idx] {
            Item::Content(c) => self.content(c, idx, ctx),
            Item::Pcre(p) => self.pcre(p, idx, ctx),
            Item::ByteTest(b) => {
                if byte_test(b, ctx) {
                    self.next(idx, ctx)
                } else {
                    NO_MATCH
                }
            }
            Item::ByteJump(b) => {
                if byte_jump(b, ctx) {
                    self.next(idx, ctx)
                } else {
                    NO_MATCH
                }
            }
            Item::ByteExtract(b) => {
                if byte_extract(b, ctx) {
                    self.next(idx, ctx)
                } else {
                    NO_MATCH
                }
            }
            Item::ByteMath(b) => {
                if byte_math(b, ctx) {
                    self.next(idx, ctx)
                } else {
                    NO_MATCH
                }
            }
            Item::IsDataAt(d) => self.isdataat(d, idx, ctx),
            Item::Bsize(cmp) => {
                if cmp.matches(ctx.len as u64) {
                    self.next(idx, ctx)
                } else {
                    DISCONTINUE
                }
            }
            Item::Entropy(e) => {
                if entropy_matches(e, ctx.buf) {
                    self.next(idx, ctx)
                } else {
                    DISCONTINUE
                }
            }
            Item::Asn1(a) => {
                if asn1::matches(a, ctx.buf, ctx.off) {
                    self.next(idx, ctx)
                } else {
                    NO_MATCH
                }
            }
            Item::Base64Decode(b) => base64(b, ctx),
        }
    }

    /// Suricata's `match:` label: inspect the next keyword, or report the
    /// match if this was the last.
    #[inline]
    fn next(&self, idx: usize, ctx: &mut Ctx) -> i8 {
        if idx + 1 == self.items.len() {
            MATCH
        } else {
            self.inspect(idx + 1, ctx)
        }
    }

    fn content(&self, c: &CContent, idx: usize, ctx: &mut Ctx) -> i8 {
        let buf_len = ctx.len;
        let prev_buffer_offset = ctx.off;
        let offset_var = matches!(c.offset, U32V::Var(_));
        let depth_var = matches!(c.depth, U32V::Var(_));
        // Start of the previous occurrence + 1, when looking for the next.
        let mut prev_offset: u32 = 0;
        loop {
            let mut depth = buf_len;
            let mut offset: u32;
            if c.relative() {
                offset = prev_buffer_offset;
                let mut distance: i32 = 0;
                if c.has_distance {
                    distance = match c.distance {
                        I32V::Num(d) => d,
                        I32V::Var(s) => ctx.vars[s as usize] as u32 as i32,
                    };
                    if distance < 0 && distance.unsigned_abs() > offset {
                        offset = 0;
                    } else {
                        offset = offset.wrapping_add(distance as u32);
                    }
                }
                if let Some(w) = c.within {
                    let w = match w {
                        U32V::Num(w) => w,
                        U32V::Var(s) => ctx.vars[s as usize] as u32,
                    };
                    let end = prev_buffer_offset
                        .wrapping_add(w)
                        .wrapping_add(distance as u32);
                    if (depth as i32) > (end as i32) {
                        depth = end;
                    }
                }
                match c.depth {
                    U32V::Var(s) => {
                        let v = ctx.vars[s as usize];
                        if v.wrapping_add(prev_buffer_offset as u64) < depth as u64 {
                            depth = prev_buffer_offset.wrapping_add(v as u32);
                        }
                    }
                    U32V::Num(d) if d != 0 => {
                        if d.wrapping_add(prev_buffer_offset) < depth {
                            depth = prev_buffer_offset.wrapping_add(d);
                        }
                    }
                    U32V::Num(_) => {}
                }
                match c.offset {
                    U32V::Var(s) => {
                        let v = ctx.vars[s as usize];
                        if v > offset as u64 {
                            offset = v as u32;
                        }
                    }
                    U32V::Num(o) => {
                        if o > offset {
                            offset = o;
                        }
                    }
                }
            } else {
                match c.depth {
                    U32V::Var(s) => depth = ctx.vars[s as usize] as u32,
                    U32V::Num(d) if d != 0 => depth = d,
                    U32V::Num(_) => {}
                }
                offset = match c.offset {
                    U32V::Var(s) => ctx.vars[s as usize] as u32,
                    U32V::Num(o) => o,
                };
            }
            // A depth or offset from a variable: depth counts from offset.
            if offset_var || depth_var {
                depth = depth.wrapping_add(offset);
            }
            if prev_offset != 0 {
                offset = prev_offset;
            }
            if depth > buf_len {
                depth = buf_len;
            }
            // Nothing can be found; a negated content "matches".
            if offset > depth || depth == 0 {
                return if c.negated {
                    self.next(idx, ctx)
                } else {
                    NO_MATCH
                };
            }
            let sbuffer_len = depth - offset;
            let found: Option<u32> = if (c.endswith && depth < buf_len) || c.len > sbuffer_len {
                None
            } else if c.endswith && !c.negated {
                // Suricata walks the occurrences until one ends at the end
                // of the buffer; only that one can be used.
                let start = buf_len - c.len;
                (start >= offset && c.search.is_at(ctx.buf, start as usize)).then_some(start)
            } else {
                c.search
                    .find(&ctx.buf[offset as usize..depth as usize])
                    .map(|p| p as u32 + offset)
            };
            let Some(start) = found else {
                if c.negated {
                    return self.next(idx, ctx);
                }
                // An absolute content that is not there: nothing before it
                // can change that.
                return if c.relative() { NO_MATCH } else { DISCONTINUE };
            };
            let match_offset = start + c.len;
            if let (Some(e), Some(_), false) = (ctx.edits.as_mut(), &c.replace, c.negated) {
                e.push((start, idx as u32));
            }
            if c.negated {
                // Suricata compares the match end with the window length
                // here (equal when the window starts at 0).
                if c.endswith && sbuffer_len != match_offset {
                    return self.next(idx, ctx);
                }
                return if c.single { DISCONTINUE } else { NO_MATCH };
            }
            ctx.off = match_offset;
            if !c.endswith || match_offset == buf_len {
                if idx + 1 == self.items.len() {
                    return MATCH;
                }
                let r = self.inspect(idx + 1, ctx);
                if r != NO_MATCH {
                    return r;
                }
                // The rest failed; only a keyword with `within` (or another
                // relative keyword) after this one can gain from looking
                // at the next occurrence.
                if !c.within_next {
                    return DISCONTINUE;
                }
            }
            prev_offset = start + 1;
        }
    }

    fn pcre(&self, p: &CPcre, idx: usize, ctx: &mut Ctx) -> i8 {
        let prev_buffer_offset = ctx.off;
        // `det_ctx->pcre_match_start_offset`: one past the start of the
        // previous match, where the next search starts.
        let mut start_after: u32 = 0;
        loop {
            if !pcre_match(p, ctx, &mut start_after) {
                return NO_MATCH;
            }
            if !p.relative_next {
                return self.next(idx, ctx);
            }
            let prev_offset = start_after;
            let r = self.next(idx, ctx);
            if r != NO_MATCH {
                return r;
            }
            if prev_offset == 0 {
                // A negated pcre: there is no other occurrence to try.
                return NO_MATCH;
            }
            ctx.off = prev_buffer_offset;
            start_after = prev_offset;
        }
    }

    fn isdataat(&self, d: &CIsDataAt, idx: usize, ctx: &mut Ctx) -> i8 {
        let (dataat, var) = match d.offset {
            U32V::Num(n) => (n as u64, false),
            U32V::Var(s) => {
                let v = ctx.vars[s as usize];
                if v >= 100_000_000 {
                    return if d.negated {
                        self.next(idx, ctx)
                    } else {
                        NO_MATCH
                    };
                }
                (v, true)
            }
        };
        let fail = if var { NO_MATCH } else { DISCONTINUE };
        let has_data = if d.relative {
            ctx.off as u64 + dataat <= ctx.len as u64
        } else {
            dataat < ctx.len as u64
        };
        match (has_data, d.negated) {
            (true, false) | (false, true) => self.next(idx, ctx),
            (false, false) => fail,
            // Suricata: a relative negated isdataat that sees data is a
            // plain no match (an earlier content may retry), an absolute
            // one ends the inspection.
            (true, true) if d.relative => NO_MATCH,
            (true, true) => fail,
        }
    }
}

/// `base64_decode` (Suricata's `DetectBase64DecodeDoMatch` and the
/// inspection of the `base64_data` list that follows it): decodes from the
/// start of the buffer or the cursor, plus `offset`, at most `bytes`
/// bytes, stopping at the first byte outside the alphabet (RFC 4648); the
/// list matches when the `base64_data` keywords match the decoded bytes.
/// It is a terminal keyword: keywords after it in the same list are not
/// evaluated.
fn base64(b: &CBase64, ctx: &mut Ctx) -> i8 {
    let mut start = if b.relative { ctx.off } else { 0 }.min(ctx.len);
    if b.offset != 0 {
        if b.offset >= ctx.len - start {
            return NO_MATCH;
        }
        start += b.offset;
    }
    let end = start + (ctx.len - start).min(b.bytes);
    let input = &ctx.buf[start as usize..end as usize];
    let mut out = BASE64_DATA.take();
    out.clear();
    let matched = base64_decode_into(input, Base64Mode::Rfc4648, &mut out)
        && !b.data.is_empty()
        && b.data
            .matches_with_limit(&out, ctx.vars, ctx.limit.saturating_sub(ctx.count));
    BASE64_DATA.set(out);
    if matched {
        MATCH
    } else {
        NO_MATCH
    }
}

/// One pcre search (`DetectPcrePayloadMatch`). On a match, moves the
/// cursor to the match end and remembers where a retry starts.
fn pcre_match(p: &CPcre, ctx: &mut Ctx, start_after: &mut u32) -> bool {
    let base = if p.relative { ctx.off } else { 0 };
    let subject = &ctx.buf[base as usize..ctx.len as usize];
    let start = if *start_after != 0 {
        start_after.wrapping_sub(base) as usize
    } else {
        0
    };
    if start > subject.len() {
        // PCRE2_ERROR_BADOFFSET: a matching error, no match.
        return false;
    }
    if !p.caps.is_empty() && !p.negated {
        return pcre_capture(p, ctx, subject, base, start, start_after);
    }
    match p.re.find_at(subject, start) {
        // Match limit or other matching error: no match, even if negated.
        Err(_) => false,
        Ok(None) => p.negated,
        Ok(Some(m)) => {
            if p.negated {
                return false;
            }
            ctx.off = base + m.end() as u32;
            *start_after = base + m.start() as u32 + 1;
            true
        }
    }
}

/// [`pcre_match`] for a pcre whose groups are stored in variables:
/// group `n + 1` goes to `p.caps[n]`; a group that took no part in the
/// match stores nothing.
fn pcre_capture(
    p: &CPcre,
    ctx: &mut Ctx,
    subject: &[u8],
    base: u32,
    start: usize,
    start_after: &mut u32,
) -> bool {
    let mut locs = p.re.capture_locations();
    match p.re.captures_read_at(&mut locs, subject, start) {
        Err(_) | Ok(None) => false,
        Ok(Some(m)) => {
            for (i, (scope, name)) in p.caps.iter().enumerate() {
                if let Some((s, e)) = locs.get(i + 1) {
                    pending_vars_store(*scope, name, &subject[s..e]);
                }
            }
            ctx.off = base + m.end() as u32;
            *start_after = base + m.start() as u32 + 1;
            true
        }
    }
}

/// Where a byte_* keyword reads: `(ptr, len)` from an offset relative to
/// the buffer start or to the cursor, with Suricata's checks. `None`: no
/// match.
#[inline]
fn locate(ctx: &Ctx, offset: i64, relative: bool, nbytes: u8) -> Option<usize> {
    let buf_len = ctx.len as i64;
    let (ptr, len) = if relative {
        let off = ctx.off as i64;
        let len = buf_len - off - offset;
        if len <= 0 {
            return None;
        }
        (off + offset, len)
    } else {
        (offset, buf_len - offset)
    };
    if ptr < 0 || nbytes as i64 > len {
        return None;
    }
    Some(ptr as usize)
}

fn byte_test(b: &CByteTest, ctx: &mut Ctx) -> bool {
    if ctx.len == 0 {
        return false;
    }
    let offset = match b.offset {
        I32V::Num(o) => o as i64,
        I32V::Var(s) => ctx.vars[s as usize] as i32 as i64,
    };
    let value = match b.value {
        U64V::Num(v) => v,
        U64V::Var(s) => ctx.vars[s as usize],
    };
    let Some(read) = b.read.with_var(b.nbytes_var, ctx.vars) else {
        return false;
    };
    let Some(ptr) = locate(ctx, offset, b.relative, read.nbytes) else {
        return false;
    };
    let val = if read.nbytes == 0 && read.base != NumBase::Binary {
        // `byte_test:0,...,string`: the digits there, however many.
        let end = (ctx.len as usize).min(ptr + STRING_ANY_LEN);
        num::string(ctx.buf.get(ptr..end).unwrap_or(&[]), read.base)
    } else {
        read.read(ctx.buf, ptr)
    };
    let Some((val, _)) = val else {
        return false;
    };
    let val = Mask::apply(b.mask, val);
    let m = match b.op {
        CmpOp::Lt => val < value,
        CmpOp::Le => val <= value,
        CmpOp::Gt => val > value,
        CmpOp::Ge => val >= value,
        CmpOp::Eq => val == value,
        CmpOp::Ne => val != value,
        CmpOp::And => val & value != 0,
        CmpOp::Xor => val ^ value != 0,
    };
    m != b.negated
}

fn byte_jump(b: &CByteJump, ctx: &mut Ctx) -> bool {
    if ctx.len == 0 {
        return false;
    }
    let offset = match b.offset {
        I32V::Num(o) => o as i64,
        I32V::Var(s) => ctx.vars[s as usize] as i32 as i64,
    };
    let Some(read) = b.read.with_var(b.nbytes_var, ctx.vars) else {
        return false;
    };
    let buf_len = ctx.len as i64;
    let nbytes = read.nbytes as i64;
    let mut ptr = offset;
    let mut len = buf_len - offset;
    if b.relative {
        ptr += ctx.off as i64;
        len -= ctx.off as i64;
        if nbytes != 0 && len <= 0 {
            return false;
        }
    }
    if ptr < 0 || nbytes > len {
        return false;
    }
    let Some((val, extbytes)) = read.read(ctx.buf, ptr as usize) else {
        return false;
    };
    let mut val = Mask::apply(b.mask, val).wrapping_mul(b.multiplier);
    // align: round up to a multiple of 4.
    let rem = val % 4;
    if b.align && rem != 0 {
        val = val.wrapping_add(4 - rem);
    }
    let val = val.wrapping_add(b.post_offset as i64 as u64) as i64 as i128;
    let jump: i128 = if b.from_beginning {
        val
    } else if b.from_end {
        buf_len as i128 + val
    } else {
        ptr as i128 + val + extbytes as i128
    };
    let jump = if jump < 0 {
        // Before the buffer start: Suricata resets to the start.
        0
    } else if jump > buf_len as i128 {
        return false;
    } else {
        jump as u32
    };
    ctx.off = jump;
    true
}

fn byte_extract(b: &CByteExtract, ctx: &mut Ctx) -> bool {
    if ctx.len == 0 {
        return false;
    }
    let Some(ptr) = locate(ctx, b.offset as i64, b.relative, b.read.nbytes) else {
        return false;
    };
    let Some((val, extbytes)) = b.read.read(ctx.buf, ptr) else {
        return false;
    };
    let mut val = Mask::apply(b.mask, val).wrapping_mul(b.multiplier);
    if b.align != 0 {
        let rem = val % b.align;
        if rem != 0 {
            val = val.wrapping_add(b.align - rem);
        }
    }
    ctx.off = (ptr + extbytes) as u32;
    ctx.vars[b.slot as usize] = val;
    true
}

fn byte_math(b: &CByteMath, ctx: &mut Ctx) -> bool {
    if ctx.len == 0 {
        return false;
    }
    let rvalue = match b.rvalue {
        U64V::Num(v) => v,
        U64V::Var(s) => ctx.vars[s as usize],
    };
    let Some(read) = b.read.with_var(b.nbytes_var, ctx.vars) else {
        return false;
    };
    let Some(ptr) = locate(ctx, b.offset as i64, b.relative, read.nbytes) else {
        return false;
    };
    let Some((val, extbytes)) = read.read(ctx.buf, ptr) else {
        return false;
    };
    ctx.off = (ptr + extbytes) as u32;
    let val = match b.op {
        MathOp::Add => val.wrapping_add(rvalue),
        MathOp::Sub => val.wrapping_sub(rvalue),
        MathOp::Mul => val.wrapping_mul(rvalue),
        MathOp::Div => {
            if rvalue == 0 {
                return false;
            }
            val / rvalue
        }
        MathOp::Shl => {
            if rvalue < 64 {
                val << rvalue
            } else {
                0
            }
        }
        MathOp::Shr => {
            if rvalue < 64 {
                val >> rvalue
            } else {
                0
            }
        }
    };
    ctx.vars[b.slot as usize] = Mask::apply(b.mask, val);
    true
}

fn u32v(v: &NumOrVar, vars: &VarTable, keyword: &'static str) -> Result<U32V, PayloadCompileError> {
    Ok(match v {
        NumOrVar::Num(n) => U32V::Num(*n),
        NumOrVar::Var(name) => U32V::Var(vars.read(name, keyword)?),
    })
}

fn i32v(
    v: &NumOrVarSigned,
    vars: &VarTable,
    keyword: &'static str,
) -> Result<I32V, PayloadCompileError> {
    Ok(match v {
        NumOrVarSigned::Num(n) => I32V::Num(*n),
        NumOrVarSigned::Var(name) => I32V::Var(vars.read(name, keyword)?),
    })
}

fn u64v(
    v: &NumOrVar64,
    vars: &VarTable,
    keyword: &'static str,
) -> Result<U64V, PayloadCompileError> {
    Ok(match v {
        NumOrVar64::Num(n) => U64V::Num(*n),
        NumOrVar64::Var(name) => U64V::Var(vars.read(name, keyword)?),
    })
}

fn compile_content(c: &Content, vars: &VarTable) -> Result<CContent, PayloadCompileError> {
    if c.pattern.is_empty() {
        return Err(PayloadCompileError::EmptyContent);
    }
    let len = c.pattern.len() as u32;
    let offset = match &c.offset {
        Some(o) => u32v(o, vars, "offset")?,
        None => U32V::Num(0),
    };
    let depth_raw = match &c.depth {
        Some(d) => Some(u32v(d, vars, "depth")?),
        // startswith: depth = pattern length from offset 0.
        None if c.startswith => Some(U32V::Num(len)),
        None => None,
    };
    let depth = match (depth_raw, offset) {
        (None, _) => U32V::Num(0),
        // Constants: depth counts from offset (Suricata adds them at parse
        // time). With a variable, the offset is added at run time.
        (Some(U32V::Num(d)), U32V::Num(o)) => U32V::Num(d.saturating_add(o)),
        (Some(d), _) => d,
    };
    let distance = match &c.distance {
        Some(d) => i32v(d, vars, "distance")?,
        None => I32V::Num(0),
    };
    let within = match &c.within {
        Some(w) => Some(u32v(w, vars, "within")?),
        None => None,
    };
    Ok(CContent {
        search: Searcher::new(&c.pattern, c.nocase),
        len,
        negated: c.negated,
        endswith: c.endswith,
        has_distance: c.distance.is_some(),
        distance,
        within,
        offset,
        depth,
        offset_flag: c.offset.is_some(),
        depth_flag: depth_raw.is_some(),
        within_next: false,
        distance_next: false,
        single: false,
        replace: c.replace.as_deref().map(Into::into),
    })
}

/// Suricata rejects a multiplier of 0 (valid range 1..=65535); a parser
/// that uses 0 for "not given" gets the default 1.
fn multiplier(m: u32) -> u64 {
    if m == 0 {
        1
    } else {
        m as u64
    }
}

fn compile_item(it: &PayloadItem, vars: &mut VarTable) -> Result<Item, PayloadCompileError> {
    Ok(match it {
        PayloadItem::Content(c) => Item::Content(compile_content(c, vars)?),
        PayloadItem::Pcre(p) => Item::Pcre(compile_pcre(p)?),
        PayloadItem::ByteTest(b) => Item::ByteTest(compile_byte_test(b, vars)?),
        PayloadItem::ByteJump(b) => Item::ByteJump(compile_byte_jump(b, vars)?),
        PayloadItem::ByteExtract(b) => Item::ByteExtract(compile_byte_extract(b, vars)?),
        PayloadItem::ByteMath(b) => Item::ByteMath(compile_byte_math(b, vars)?),
        PayloadItem::IsDataAt(d) => Item::IsDataAt(CIsDataAt {
            negated: d.negated,
            offset: u32v(&d.offset, vars, "isdataat")?,
            relative: d.relative,
        }),
        PayloadItem::Bsize(cmp) => Item::Bsize(*cmp),
        PayloadItem::Entropy(e) => Item::Entropy(*e),
        PayloadItem::Asn1(a) => Item::Asn1(*a),
        PayloadItem::Absent { .. } => {
            return Err(PayloadCompileError::Unsupported("absent"));
        }
        PayloadItem::Dataset(_) => {
            return Err(PayloadCompileError::Unsupported("dataset"));
        }
        PayloadItem::Datarep(_) => {
            return Err(PayloadCompileError::Unsupported("datarep"));
        }
        PayloadItem::Base64Decode(d) => Item::Base64Decode(CBase64 {
            bytes: d.bytes.unwrap_or(BASE64_DECODE_MAX).min(BASE64_DECODE_MAX),
            offset: d.offset,
            relative: d.relative,
            data: Box::new(CompiledPayload::compile_for(
                &d.data,
                vars,
                ListKind::Sticky,
            )?),
        }),
    })
}

fn compile_pcre(p: &Pcre) -> Result<CPcre, PayloadCompileError> {
    let re = regex::build(p).map_err(|message| PayloadCompileError::Pcre {
        pattern: p.pattern.clone(),
        message,
    })?;
    // Suricata: "more pkt/flow var capture names than capturing
    // substrings".
    if p.captures.len() > re.captures_len() - 1 {
        return Err(PayloadCompileError::Pcre {
            pattern: p.pattern.clone(),
            message: "more variable capture names than capturing groups".into(),
        });
    }
    Ok(CPcre {
        re,
        negated: p.negated,
        relative: p.relative,
        relative_next: false,
        caps: p
            .captures
            .iter()
            .map(|c| (c.scope, Arc::from(c.name.as_str())))
            .collect(),
    })
}

/// The read of a byte_* keyword: a constant byte count (checked now) or
/// the slot of the variable that holds it (checked at match time).
fn read_or_var(
    keyword: &'static str,
    nbytes: u8,
    var: &Option<String>,
    endian: Endian,
    base: NumBase,
    vars: &VarTable,
) -> Result<(Read, Option<u8>), PayloadCompileError> {
    match var {
        None => Ok((Read::new(keyword, nbytes, endian, base)?, None)),
        Some(name) => Ok((Read::var(endian, base), Some(vars.read(name, keyword)?))),
    }
}

fn compile_byte_test(b: &ByteTest, vars: &VarTable) -> Result<CByteTest, PayloadCompileError> {
    const K: &str = "byte_test";
    let (read, nbytes_var) = read_or_var(K, b.nbytes, &b.nbytes_var, b.endian, b.base, vars)?;
    Ok(CByteTest {
        read,
        nbytes_var,
        negated: b.negated,
        op: b.op,
        value: u64v(&b.value, vars, K)?,
        offset: i32v(&b.offset, vars, K)?,
        relative: b.relative,
        mask: Mask::new(b.bitmask),
    })
}

fn compile_byte_jump(b: &ByteJump, vars: &VarTable) -> Result<CByteJump, PayloadCompileError> {
    const K: &str = "byte_jump";
    let (read, nbytes_var) = read_or_var(K, b.nbytes, &b.nbytes_var, b.endian, b.base, vars)?;
    Ok(CByteJump {
        read,
        nbytes_var,
        offset: i32v(&b.offset, vars, K)?,
        relative: b.relative,
        multiplier: multiplier(b.multiplier),
        align: b.align,
        from_beginning: b.from_beginning,
        from_end: b.from_end,
        post_offset: b.post_offset,
        mask: Mask::new(b.bitmask),
    })
}

fn compile_byte_extract(
    b: &ByteExtract,
    vars: &mut VarTable,
) -> Result<CByteExtract, PayloadCompileError> {
    const K: &str = "byte_extract";
    let read = Read::new(K, b.nbytes, b.endian, b.base)?;
    Ok(CByteExtract {
        read,
        offset: b.offset,
        slot: vars.define_for(&b.name, K)? as u8,
        relative: b.relative,
        multiplier: multiplier(b.multiplier),
        align: b.align as u64,
        mask: Mask::new(b.bitmask),
    })
}

fn compile_byte_math(b: &ByteMath, vars: &mut VarTable) -> Result<CByteMath, PayloadCompileError> {
    const K: &str = "byte_math";
    let (read, nbytes_var) = read_or_var(K, b.nbytes, &b.nbytes_var, b.endian, b.base, vars)?;
    // The rvalue is read before the result is defined.
    let rvalue = u64v(&b.rvalue, vars, K)?;
    Ok(CByteMath {
        read,
        nbytes_var,
        offset: b.offset,
        op: b.op,
        rvalue,
        slot: vars.define_for(&b.result, K)? as u8,
        relative: b.relative,
        mask: Mask::new(b.bitmask),
    })
}

/// The last content or pcre in `items`.
fn last_content_or_pcre(items: &[Item]) -> Option<usize> {
    items
        .iter()
        .rposition(|i| matches!(i, Item::Content(_) | Item::Pcre(_)))
}

/// The keyword a relative byte_*/isdataat keyword attaches to.
fn prev_for_byte_keyword(items: &[Item], kind: ListKind) -> Option<usize> {
    match kind {
        ListKind::Sticky => last_content_or_pcre(items),
        ListKind::Payload => items
            .iter()
            .rposition(|i| !matches!(i, Item::Bsize(_) | Item::Entropy(_) | Item::Asn1(_))),
    }
}

/// Sets the "relative next" flags that `item` (about to be appended to
/// `items`) puts on the keyword it is relative to, as Suricata's keyword
/// setup functions do.
fn set_next_flags(items: &mut [Item], item: &Item, kind: ListKind) {
    // (target, sets WITHIN_NEXT, sets DISTANCE_NEXT) on a content target;
    // a pcre target gets RELATIVE_NEXT either way.
    let (target, within, distance) = match item {
        Item::Content(c) => {
            if !c.relative() {
                return;
            }
            // within -> WITHIN_NEXT; distance -> DISTANCE_NEXT, or both
            // when the content is negated.
            let w = c.within.is_some() || (c.has_distance && c.negated);
            let d = c.has_distance;
            (last_content_or_pcre(items), w, d)
        }
        Item::Pcre(p) => {
            if !p.relative {
                return;
            }
            (last_content_or_pcre(items), true, true)
        }
        Item::ByteTest(CByteTest { relative, .. })
        | Item::ByteJump(CByteJump { relative, .. })
        | Item::ByteExtract(CByteExtract { relative, .. })
        | Item::ByteMath(CByteMath { relative, .. })
        | Item::IsDataAt(CIsDataAt { relative, .. })
        | Item::Base64Decode(CBase64 { relative, .. }) => {
            if !relative {
                return;
            }
            (prev_for_byte_keyword(items, kind), true, true)
        }
        Item::Bsize(_) | Item::Entropy(_) | Item::Asn1(_) => return,
    };
    match target.map(|t| &mut items[t]) {
        Some(Item::Content(c)) => {
            c.within_next |= within;
            c.distance_next |= distance;
        }
        Some(Item::Pcre(p)) => p.relative_next = true,
        _ => {}
    }
}

/// A lower bound on the length of a buffer that can match: every keyword
/// must succeed, so each one's minimal requirement is a bound; `cursor` is
/// a lower bound on the cursor position.
fn min_len(items: &[Item]) -> usize {
    let mut need: i64 = 0;
    let mut cursor: i64 = 0;
    for it in items {
        match it {
            Item::Content(c) => {
                if c.negated {
                    continue;
                }
                let static_offset = match c.offset {
                    U32V::Num(o) => o as i64,
                    U32V::Var(_) => 0,
                };
                let start = if c.relative() {
                    let rel = match (c.has_distance, c.distance) {
                        (false, _) => cursor,
                        (true, I32V::Num(d)) if d >= 0 => cursor + d as i64,
                        (true, _) => 0,
                    };
                    rel.max(static_offset)
                } else {
                    static_offset
                };
                cursor = start + c.len as i64;
                need = need.max(cursor);
            }
            Item::Pcre(p) => {
                // A relative pcre ends at or after the cursor; an absolute
                // one anywhere.
                if !p.negated && !p.relative {
                    cursor = 0;
                }
            }
            Item::ByteTest(b) => {
                if let I32V::Num(o) = b.offset {
                    let base = if b.relative { cursor } else { 0 };
                    need = need.max(base + o as i64 + b.read.nbytes as i64);
                }
            }
            Item::ByteJump(b) => {
                if let I32V::Num(o) = b.offset {
                    let base = if b.relative { cursor } else { 0 };
                    need = need.max(base + o as i64 + b.read.nbytes as i64);
                }
                cursor = 0;
            }
            Item::ByteExtract(CByteExtract {
                read,
                offset,
                relative,
                ..
            })
            | Item::ByteMath(CByteMath {
                read,
                offset,
                relative,
                ..
            }) => {
                let base = if *relative { cursor } else { 0 };
                let at = base + *offset as i64;
                need = need.max(at + read.nbytes as i64);
                cursor = at.max(0);
            }
            Item::IsDataAt(d) => {
                if let (false, U32V::Num(n)) = (d.negated, d.offset) {
                    need = need.max(if d.relative {
                        cursor + n as i64
                    } else {
                        n as i64 + 1
                    });
                }
            }
            Item::Entropy(e) => {
                let n = u64::from(e.offset) + u64::from(e.bytes.unwrap_or(0));
                need = need.max(n as i64);
            }
            // At least one byte at its offset.
            Item::Asn1(a) => {
                if let Some(o) = a.absolute_offset {
                    need = need.max(i64::from(o) + 1);
                }
            }
            Item::Bsize(cmp) => {
                let b = match *cmp {
                    IntCmp::Eq(v) | IntCmp::Ge(v) => v,
                    IntCmp::Gt(v) => v.saturating_add(1),
                    IntCmp::RangeEx(lo, _) => lo.saturating_add(1),
                    _ => 0,
                };
                need = need.max(b.min(i64::MAX as u64) as i64);
            }
            Item::Base64Decode(b) => {
                // At least one byte after the offset to decode; the
                // keyword ends the list.
                let base = if b.relative { cursor } else { 0 };
                need = need.max(base + b.offset as i64 + 1);
                break;
            }
        }
    }
    need.max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_payload_is_send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CompiledPayload>();
    }
}
