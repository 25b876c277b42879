//! Modbus/TCP (Suricata's `rust/src/modbus`, which parses with the
//! `sawp-modbus` crate; so does Vigil).
//!
//! A message is the 7-byte MBAP header (transaction id, protocol id,
//! length, unit id) and a PDU of `length - 1` bytes (function code and
//! data). `sawp-modbus` decodes the PDUs of every public function code:
//! reads and writes of coils, discrete inputs, holding and input
//! registers (single, multiple, mask write, read/write multiple),
//! diagnostics (sub-function and data), the encapsulated interface
//! transport (MEI type and data), exceptions (function code with bit 7
//! set and an exception code), and keeps the other PDUs as bytes; it also
//! sets the message's access type (read/write, coils/discretes/input/
//! holding, single/multiple), its function-code category and error flags
//! (bad protocol id, length, value, function or exception code).
//!
//! Transactions are Suricata's: a request opens one unless an unanswered
//! response matches it; a response goes to the oldest request without a
//! response that matches it (same transaction id, unit id, function code
//! and access type, and for known functions consistent data), else it is
//! a transaction of its own with `unsolicited_response`. A message's
//! error flags become events (`invalid_protocol_id`, `invalid_length`,
//! `invalid_value`, `invalid_function_code`, `invalid_exception_code`);
//! a response to a read or write whose length or value is wrong is a
//! `value_mismatch` instead. Past 500 transactions not yet freed the
//! newest gets `flooded` and no more are opened until some are freed.
//!
//! Each direction buffers at most one incomplete message (the MBAP length
//! is at most 254 by the crate's check, so a message is at most 260
//! bytes): a length outside 2..=254 is a message with `invalid_length`
//! whose announced bytes are skipped, as Suricata skips them. A gap stops
//! the parsing of that direction (Suricata's Modbus parser does not
//! accept gaps).

use std::ops::{Range, RangeInclusive};

use sawp::error::{Error as SawpError, ErrorKind as SawpErrorKind};
use sawp::parser::{Direction as SawpDir, Parse};
use sawp::probe::{Probe, Status};
use sawp_modbus::{
    AccessType, CodeCategory, Data, ErrorFlags, Flags, FunctionCode, Message, Read, Write,
};
use serde_json::{Map, Value};

use crate::events::ModbusEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};

/// Suricata's default `detection-ports` (`dp: 502`).
pub const PORT: u16 = 502;
/// Unanswered transactions past which the flow is flooded (Suricata's
/// `REQUEST_FLOOD`).
pub const REQUEST_FLOOD: usize = 500;
/// The longest message: MBAP header (6 bytes before the unit id) and 254.
pub const MAX_MESSAGE: usize = 6 + 254;

const PARSER: sawp_modbus::Modbus = sawp_modbus::Modbus {
    probe_strict: false,
};
/// The detection probe is strict, as the Suricata 9 peer's: a function
/// code the crate does not know (Schneider's UMAS, 90) is not Modbus.
const STRICT: sawp_modbus::Modbus = sawp_modbus::Modbus { probe_strict: true };

/// Whether a side's first bytes are Modbus (`None`: more bytes needed), as
/// Suricata's probe: a whole message of either direction without error
/// flags and with a known function code.
pub fn probe(b: &[u8]) -> Option<bool> {
    match STRICT.probe(b, SawpDir::Unknown) {
        Status::Recognized => Some(true),
        Status::Incomplete => None,
        Status::Unrecognized => Some(false),
    }
}

/// One request and its response.
#[derive(Debug)]
pub struct ModbusTx {
    pub(crate) common: TxCommon,
    pub request: Option<Message>,
    pub response: Option<Message>,
}

impl Tx for ModbusTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        let done = self.response.is_some();
        TxProgress {
            request_complete: done || self.request.is_some(),
            response_complete: done,
        }
    }
}

/// The events a message's error flags raise.
fn flag_events(flags: &Flags<ErrorFlags>) -> Vec<ModbusEvent> {
    let mut v = Vec::new();
    if flags.intersects(ErrorFlags::FUNC_CODE) {
        v.push(ModbusEvent::InvalidFunctionCode);
    }
    if flags.intersects(ErrorFlags::DATA_VALUE) {
        v.push(ModbusEvent::InvalidValue);
    }
    if flags.intersects(ErrorFlags::DATA_LENGTH) {
        v.push(ModbusEvent::InvalidLength);
    }
    if flags.intersects(ErrorFlags::EXC_CODE) {
        v.push(ModbusEvent::InvalidExceptionCode);
    }
    if flags.intersects(ErrorFlags::PROTO_ID) {
        v.push(ModbusEvent::InvalidProtocolId);
    }
    v
}

/// A response's events: a read or write answered with a bad length or
/// value is a mismatch with its request.
fn response_events(m: &Message) -> Vec<ModbusEvent> {
    if m.access_type
        .intersects(AccessType::READ | AccessType::WRITE)
        && m.error_flags
            .intersects(ErrorFlags::DATA_LENGTH | ErrorFlags::DATA_VALUE)
    {
        vec![ModbusEvent::ValueMismatch]
    } else {
        flag_events(&m.error_flags)
    }
}

/// Bytes as Suricata's `set_string_from_bytes`.
fn bytes_str(b: &[u8]) -> Value {
    suri_str(b)
}

/// A message as Suricata logs it, within Suricata's EVE schema: the
/// schema has no `quantity`/`data` bytes for a multiple write request, no
/// masks of a mask write and no `mei` object in a response, which
/// Suricata's logger writes too, so those are left out.
fn message_eve(m: &Message, response: bool) -> Value {
    let mut o = Map::new();
    o.insert("transaction_id".into(), m.transaction_id.into());
    o.insert("protocol_id".into(), m.protocol_id.into());
    o.insert("unit_id".into(), m.unit_id.into());
    o.insert("function_raw".into(), m.function.raw.into());
    o.insert("function_code".into(), m.function.code.to_string().into());
    o.insert("access_type".into(), m.access_type.to_string().into());
    o.insert("category".into(), m.category.to_string().into());
    o.insert("error_flags".into(), m.error_flags.to_string().into());
    let read = |r: &Read| -> Option<Value> {
        let mut x = Map::new();
        match r {
            Read::Request { address, quantity } if !response => {
                x.insert("address".into(), (*address).into());
                x.insert("quantity".into(), (*quantity).into());
            }
            Read::Response(d) if response => {
                x.insert("data".into(), bytes_str(d));
            }
            _ => return None,
        }
        Some(Value::Object(x))
    };
    let write = |w: &Write| -> Value {
        let mut x = Map::new();
        match w {
            Write::MultReq { address, .. } | Write::Mask { address, .. } => {
                x.insert("address".into(), (*address).into());
            }
            Write::Other { address, data } => {
                x.insert("address".into(), (*address).into());
                x.insert("data".into(), (*data).into());
            }
        }
        Value::Object(x)
    };
    match &m.data {
        Data::Exception(e) if response => {
            let mut x = Map::new();
            x.insert("raw".into(), e.raw.into());
            x.insert("code".into(), e.code.to_string().into());
            o.insert("exception".into(), Value::Object(x));
        }
        Data::Exception(_) => {}
        Data::Diagnostic { func, data } => {
            let mut x = Map::new();
            x.insert("raw".into(), func.raw.into());
            x.insert("code".into(), func.code.to_string().into());
            x.insert("data".into(), bytes_str(data));
            o.insert("diagnostic".into(), Value::Object(x));
        }
        Data::MEI { mei_type, data } if !response => {
            let mut x = Map::new();
            x.insert("raw".into(), mei_type.raw.into());
            x.insert("code".into(), mei_type.code.to_string().into());
            x.insert("data".into(), bytes_str(data));
            o.insert("mei".into(), Value::Object(x));
        }
        // Suricata also logs a response's `mei` object, which its schema
        // does not list.
        Data::MEI { .. } => {}
        Data::Read(r) => {
            if let Some(v) = read(r) {
                o.insert("read".into(), v);
            }
        }
        Data::Write(w) => {
            o.insert("write".into(), write(w));
        }
        Data::ReadWrite { read: r, write: w } => {
            if let Some(v) = read(r) {
                o.insert("read".into(), v);
            }
            o.insert("write".into(), write(w));
        }
        Data::ByteVec(d) => {
            o.insert("data".into(), bytes_str(d));
        }
        Data::Empty => {}
    }
    Value::Object(o)
}

impl ModbusTx {
    /// The EVE `modbus` object (`id` counts from 1, as Suricata's).
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), (self.common.id + 1).into());
        if let Some(r) = &self.request {
            m.insert("request".into(), message_eve(r, false));
        }
        if let Some(r) = &self.response {
            m.insert("response".into(), message_eve(r, true));
        }
        Value::Object(m)
    }

    /// The message the `modbus` keyword inspects: the request, or the
    /// response of a transaction without one.
    fn inspected(&self) -> Option<&Message> {
        self.request.as_ref().or(self.response.as_ref())
    }

    /// The `modbus` keyword on this transaction.
    pub fn modbus_match(&self, spec: &ModbusSpec) -> bool {
        self.inspected().is_some_and(|m| spec.matches(m))
    }
}

/// The `modbus` keyword (Suricata's `rust/src/modbus/detect.rs`):
/// `function <n|category>[, subfunction <n>]`,
/// `access read|write [discretes|coils|input|holding][, address <r>[, value <r>]]`,
/// or `unit <r>[, <function or access>]`, where a range `<r>` is `n`,
/// `<n`, `>n` or `n<>m` (both ends excluded).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ModbusSpec {
    category: Option<u8>,
    function: Option<u8>,
    subfunction: Option<u16>,
    access: Option<u8>,
    unit: Option<Range<u16>>,
    address: Option<Range<u16>>,
    value: Option<Range<u16>>,
}

/// `n`, `<n`, `>n` or `n<>m`.
fn parse_range(s: &str) -> Option<Range<u16>> {
    if let Some((a, b)) = s.split_once("<>") {
        if !a.bytes().all(|c| c.is_ascii_digit()) || !b.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        return Some(a.parse().ok()?..b.parse().ok()?);
    }
    let (sign, num) = match s.as_bytes().first()? {
        b'<' | b'>' => (s.as_bytes()[0], &s[1..]),
        _ => (0, s),
    };
    if num.is_empty() || !num.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: u16 = num.parse().ok()?;
    Some(match sign {
        b'>' => n..u16::MAX,
        b'<' => 0..n,
        _ => n..n,
    })
}

/// Whether `v` is in a keyword range (`n..n` is `== n`; open ends and
/// `a<>b` exclude their bounds).
fn in_range(r: &Range<u16>, v: u16) -> bool {
    if r.start == r.end {
        r.start == v
    } else if r.start == 0 {
        v < r.end
    } else if r.end == u16::MAX {
        v > r.start
    } else {
        r.start < v && v < r.end
    }
}

/// Whether a keyword range meets a message's address range.
fn meets(r: &Range<u16>, t: RangeInclusive<u16>) -> bool {
    if r.start == r.end {
        t.contains(&r.start)
    } else if r.start == 0 {
        r.end > *t.start()
    } else if r.end == u16::MAX {
        r.start < *t.end()
    } else {
        r.start < *t.end() && *t.start() < r.end
    }
}

/// Strips a value's optional quotes and surrounding spaces.
fn unquote(s: &str) -> &str {
    let s = s.trim();
    let s = s.strip_prefix('"').unwrap_or(s);
    let s = s.strip_suffix('"').unwrap_or(s);
    s.trim()
}

/// The word after `key` and its whitespace (`key` must be followed by
/// whitespace when `need_ws`).
fn after_word<'a>(s: &'a str, key: &str, need_ws: bool) -> Option<&'a str> {
    let rest = s.strip_prefix(key)?;
    let t = rest.trim_start();
    if need_ws && t.len() == rest.len() {
        return None;
    }
    Some(t)
}

impl ModbusSpec {
    /// Parses the keyword's value as Suricata 9 does (a unit, a function
    /// or an access form).
    pub fn parse(v: &str) -> Result<Self, String> {
        let s = unquote(v);
        Self::parse_unit(s)
            .or_else(|| Self::parse_function(s))
            .or_else(|| Self::parse_access(s))
            .ok_or_else(|| format!("modbus: invalid value '{v}'"))
    }

    fn parse_unit(s: &str) -> Option<Self> {
        let rest = after_word(s, "unit", true)?;
        let (range, extra) = match rest.split_once(',') {
            Some((r, e)) => (r, Some(e.trim())),
            None => (rest, None),
        };
        let mut spec = match extra {
            Some(e) => Self::parse_function(e).or_else(|| Self::parse_access(e))?,
            None => ModbusSpec::default(),
        };
        spec.unit = Some(parse_range(range)?);
        Some(spec)
    }

    fn parse_function(s: &str) -> Option<Self> {
        let rest = after_word(s, "function", false)?;
        let (word, sub) = match rest.split_once(',') {
            Some((w, e)) => (w.trim_end(), Some(e.trim())),
            None => (rest.trim_end(), None),
        };
        let ok_word = word
            .strip_prefix('!')
            .unwrap_or(word)
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || (b'['..=b'`').contains(&c));
        if word.is_empty() || !ok_word {
            return None;
        }
        let mut spec = ModbusSpec::default();
        if let Ok(n) = word.parse::<u8>() {
            if n == 0 {
                return None;
            }
            spec.function = Some(n);
            if let Some(sub) = sub {
                let n = after_word(sub, "subfunction", true)?;
                if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                spec.subfunction = Some(n.parse().ok()?);
            }
            return Some(spec);
        }
        if word.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        // A sub-function after a category is accepted and ignored.
        if let Some(sub) = sub {
            let n = after_word(sub, "subfunction", true)?;
            if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
        }
        let neg = word.starts_with('!');
        let c = match &word[usize::from(neg)..] {
            "assigned" => CodeCategory::PUBLIC_ASSIGNED.into(),
            "unassigned" => CodeCategory::PUBLIC_UNASSIGNED.into(),
            "public" => CodeCategory::PUBLIC_ASSIGNED | CodeCategory::PUBLIC_UNASSIGNED,
            "user" => Flags::from(CodeCategory::USER_DEFINED),
            "reserved" => CodeCategory::RESERVED.into(),
            "all" => {
                CodeCategory::PUBLIC_ASSIGNED
                    | CodeCategory::PUBLIC_UNASSIGNED
                    | CodeCategory::USER_DEFINED
                    | CodeCategory::RESERVED
            }
            _ => return None,
        };
        let c: Flags<CodeCategory> = if neg { !c } else { c };
        spec.category = Some(c.bits());
        Some(spec)
    }

    fn parse_access(s: &str) -> Option<Self> {
        let rest = after_word(s, "access", false)?;
        let mut parts = rest.split(',');
        let head = parts.next()?.trim();
        let (rw, kind) = match head.split_once(|c: char| c.is_ascii_whitespace()) {
            Some((a, b)) => (a, Some(b.trim())),
            None => {
                // `readcoils` is accepted by Suricata's pattern too.
                let split = ["read", "write"]
                    .iter()
                    .find_map(|p| head.strip_prefix(p).map(|k| (&head[..p.len()], k)))?;
                (split.0, (!split.1.is_empty()).then_some(split.1))
            }
        };
        let mut access: Flags<AccessType> = match rw {
            "read" => AccessType::READ.into(),
            "write" => AccessType::WRITE.into(),
            _ => return None,
        };
        let write_only = rw == "write";
        match kind {
            None => {}
            Some("coils") => access |= AccessType::COILS,
            Some("holding") => access |= AccessType::HOLDING,
            Some("discretes") if !write_only => access |= AccessType::DISCRETES,
            Some("input") if !write_only => access |= AccessType::INPUT,
            Some(_) => return None,
        }
        let mut spec = ModbusSpec {
            access: Some(access.bits()),
            ..Default::default()
        };
        if let Some(a) = parts.next() {
            let a = after_word(a.trim_start(), "address", true)?;
            spec.address = Some(parse_range(a.trim_end())?);
        }
        if let Some(v) = parts.next() {
            let v = after_word(v.trim_start(), "value", true)?;
            let addr = spec.address.as_ref()?;
            if addr.start != addr.end || !write_only {
                return None;
            }
            spec.value = Some(parse_range(v.trim_end())?);
        }
        if parts.next().is_some() {
            return None;
        }
        Some(spec)
    }

    /// Whether a message (a transaction's request, or its response when it
    /// has none) matches.
    fn matches(&self, m: &Message) -> bool {
        if let Some(u) = &self.unit {
            if !in_range(u, u16::from(m.unit_id)) {
                return false;
            }
        }
        if let Some(a) = self.access {
            let a = Flags::<AccessType>::from_bits(a);
            let rw = a & (AccessType::READ | AccessType::WRITE);
            let func = a & AccessType::FUNC_MASK;
            if rw.is_empty()
                || !m.access_type.intersects(rw)
                || (!func.is_empty() && !m.access_type.intersects(func))
            {
                return false;
            }
            let Some(addr) = &self.address else {
                return true;
            };
            match m.get_address_range() {
                Some(r) if meets(addr, r.clone()) => {}
                _ => return false,
            }
            let Some(val) = &self.value else {
                return true;
            };
            return m
                .get_write_value_at_address(addr.start)
                .is_some_and(|v| in_range(val, v));
        }
        if let Some(c) = self.category {
            return m.category.intersects(Flags::<CodeCategory>::from_bits(c));
        }
        match self.function {
            Some(f) if FunctionCode::from_raw(f) == m.function.code => match self.subfunction {
                Some(sub) => matches!(&m.data, Data::Diagnostic { func, .. } if func.raw == sub),
                None => true,
            },
            Some(_) => false,
            None => true,
        }
    }
}

/// Per-flow Modbus state.
#[derive(Debug)]
pub struct ModbusState {
    txs: TxList<ModbusTx>,
    bufs: [Vec<u8>; 2],
    /// A direction no longer parsed (a gap, or bytes the parser rejects).
    stopped: [bool; 2],
    /// Flooded: no transaction is opened until some are freed.
    given_up: bool,
}

impl ModbusState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        ModbusState {
            // The flood limit is Suricata's; the generic cap stays above it.
            txs: TxList::new(cfg.max_transactions.max(REQUEST_FLOOD + 1)),
            bufs: [Vec::new(), Vec::new()],
            stopped: [false, false],
            given_up: false,
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&ModbusTx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &ModbusTx> {
        self.txs.txs.iter()
    }

    /// Opens a transaction (`None` while flooded).
    fn open(
        &mut self,
        ts: Timestamp,
        req: Option<Message>,
        resp: Option<Message>,
        events: Vec<ModbusEvent>,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if self.given_up {
            return;
        }
        let flooded = self.txs.txs.len() >= REQUEST_FLOOD;
        self.txs.push(|id| ModbusTx {
            common: TxCommon::new(id, ts),
            request: req,
            response: resp,
        });
        let id = self.txs.next_id - 1;
        for e in events {
            ev.push(AppLayerEvent::Modbus(e, Some(id)));
        }
        if flooded {
            ev.push(AppLayerEvent::Modbus(ModbusEvent::Flooded, Some(id)));
            self.given_up = true;
        }
    }

    /// Files one message.
    fn handle(
        &mut self,
        dir: Direction,
        mut msg: Message,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        // Matching validates the message against its counterpart (and may
        // set error flags on it), so the events are taken afterwards.
        let found = match dir {
            Direction::ToServer => self.txs.txs.iter().position(|t| {
                t.request.is_none() && t.response.as_ref().is_some_and(|r| msg.matches(r))
            }),
            Direction::ToClient => self.txs.txs.iter().position(|t| {
                t.response.is_none() && t.request.as_ref().is_some_and(|r| msg.matches(r))
            }),
        };
        let mut events = match dir {
            Direction::ToServer => flag_events(&msg.error_flags),
            Direction::ToClient => response_events(&msg),
        };
        match found {
            Some(i) => {
                let t = &mut self.txs.txs[i];
                let id = t.common.id;
                match dir {
                    Direction::ToServer => t.request = Some(msg),
                    Direction::ToClient => t.response = Some(msg),
                }
                ev.extend(
                    events
                        .into_iter()
                        .map(|e| AppLayerEvent::Modbus(e, Some(id))),
                );
            }
            None => match dir {
                Direction::ToServer => self.open(ts, Some(msg), None, events, ev),
                Direction::ToClient => {
                    events.push(ModbusEvent::UnsolicitedResponse);
                    self.open(ts, None, Some(msg), events, ev);
                }
            },
        }
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        if self.stopped[d] {
            return;
        }
        let sdir = match dir {
            Direction::ToServer => SawpDir::ToServer,
            Direction::ToClient => SawpDir::ToClient,
        };
        let mut buf = std::mem::take(&mut self.bufs[d]);
        buf.extend_from_slice(data);
        let mut off = 0;
        while off < buf.len() {
            match PARSER.parse(&buf[off..], sdir.clone()) {
                Ok((rest, Some(msg))) => {
                    let used = buf.len() - off - rest.len();
                    self.handle(dir, msg, ts, ev);
                    if used == 0 {
                        self.stopped[d] = true;
                        buf.clear();
                        off = 0;
                        break;
                    }
                    off += used;
                }
                Err(SawpError {
                    kind: SawpErrorKind::Incomplete(_),
                })
                | Ok((_, None)) => break,
                Err(_) => {
                    self.stopped[d] = true;
                    buf.clear();
                    off = 0;
                    break;
                }
            }
        }
        buf.drain(..off);
        // An incomplete message is at most MAX_MESSAGE bytes; the crate
        // asks for no more, but keep the cap explicit.
        if buf.len() > MAX_MESSAGE {
            buf.clear();
        }
        self.bufs[d] = buf;
    }

    /// Frees transactions: below the flood limit new ones open again.
    fn after_free(&mut self) {
        if self.given_up && self.txs.txs.len() < REQUEST_FLOOD {
            self.given_up = false;
        }
    }
}

impl TxParser for ModbusState {
    fn proto(&self) -> AppProto {
        AppProto::Modbus
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        ModbusState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        self.stopped[dir.index()] = true;
        self.bufs[dir.index()] = Vec::new();
    }
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        self.bufs[dir.index()] = Vec::new();
    }
    fn infos(&self) -> Vec<(&TxCommon, TxProgress)> {
        self.txs.infos()
    }
    fn common(&self, tx: TxId) -> Option<&TxCommon> {
        self.txs.get(tx).map(|t| &t.common)
    }
    fn common_mut(&mut self, tx: TxId) -> Option<&mut TxCommon> {
        self.txs.get_mut(tx).map(|t| &mut t.common)
    }
    fn retain(&mut self, keep: &mut dyn FnMut(&TxCommon, TxProgress) -> bool) {
        self.txs.retain(keep);
        self.after_free();
    }
    fn buffers(&self, _tx: TxId, _id: BufferId, _dir: Direction) -> Vec<&[u8]> {
        Vec::new()
    }
    fn uints(&self, _tx: TxId, _field: UintField, _dir: Direction) -> Vec<u64> {
        Vec::new()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn wants_data(&self, dir: Direction) -> bool {
        !self.stopped[dir.index()]
    }
    fn modbus_match(&self, tx: TxId, spec: &ModbusSpec) -> bool {
        self.txs.get(tx).is_some_and(|t| t.modbus_match(spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MBAP header and PDU.
    fn msg(tid: u16, unit: u8, pdu: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&tid.to_be_bytes());
        m.extend_from_slice(&0u16.to_be_bytes());
        m.extend_from_slice(&((pdu.len() + 1) as u16).to_be_bytes());
        m.push(unit);
        m.extend_from_slice(pdu);
        m
    }

    fn state() -> ModbusState {
        ModbusState::new(&AppLayerConfig::default())
    }

    fn feed(s: &mut ModbusState, dir: Direction, d: &[u8]) -> Vec<String> {
        let mut ev = Vec::new();
        s.feed(dir, d, 1, &mut ev);
        ev.iter().map(|e| e.name().to_string()).collect()
    }

    fn spec(v: &str) -> ModbusSpec {
        ModbusSpec::parse(v).unwrap()
    }

    #[test]
    fn probe_needs_a_whole_clean_message() {
        let m = msg(1, 1, &[3, 0, 1, 0, 2]);
        assert_eq!(probe(&m[..5]), None);
        assert_eq!(probe(&m), Some(true));
        let mut bad = m.clone();
        bad[3] = 1; // protocol id 1
        assert_eq!(probe(&bad), Some(false));
        assert_eq!(probe(b"GET / HTTP/1.1\r\n"), Some(false));
        // An unknown function code (UMAS, 90) is not detected.
        assert_eq!(probe(&msg(1, 0, &[0x5a, 0, 2])), Some(false));
    }

    #[test]
    fn read_holding_registers_pairs_by_transaction_id() {
        let mut s = state();
        assert!(feed(&mut s, Direction::ToServer, &msg(7, 1, &[3, 0, 9, 0, 2])).is_empty());
        assert!(feed(&mut s, Direction::ToServer, &msg(8, 1, &[1, 0, 0, 0, 8])).is_empty());
        // Answers in the other order.
        assert!(feed(&mut s, Direction::ToClient, &msg(8, 1, &[1, 1, 0x55])).is_empty());
        // sawp-modbus checks a read response's byte count against the
        // quantity as bits, registers included (so does Suricata): 4
        // bytes for 2 registers is a mismatch there.
        assert_eq!(
            feed(&mut s, Direction::ToClient, &msg(7, 1, &[3, 4, 0, 1, 0, 2])),
            ["value_mismatch"]
        );
        assert_eq!(s.transactions().count(), 2);
        let e = s.tx(0).unwrap().eve();
        assert_eq!(e["id"], 1);
        assert_eq!(e["request"]["function_code"], "RdHoldRegs");
        assert_eq!(e["request"]["access_type"], "READ | HOLDING");
        assert_eq!(e["request"]["category"], "PUBLIC_ASSIGNED");
        assert_eq!(e["request"]["error_flags"], "NONE");
        assert_eq!(e["request"]["read"]["address"], 9);
        assert_eq!(e["request"]["read"]["quantity"], 2);
        assert_eq!(e["response"]["transaction_id"], 7);
        assert_eq!(e["response"]["read"]["data"], "\u{0}\u{1}\u{0}\u{2}");
        let e1 = s.tx(1).unwrap().eve();
        assert_eq!(e1["response"]["transaction_id"], 8);
        assert_eq!(e1["request"]["access_type"], "READ | COILS");
    }

    #[test]
    fn messages_split_and_joined_across_segments() {
        let mut s = state();
        let mut two = msg(1, 1, &[6, 0, 4, 0, 0x10]);
        two.extend(msg(2, 1, &[5, 0, 1, 0xff, 0]));
        let (a, b) = two.split_at(9);
        assert!(feed(&mut s, Direction::ToServer, a).is_empty());
        assert_eq!(s.transactions().count(), 0);
        assert!(feed(&mut s, Direction::ToServer, b).is_empty());
        assert_eq!(s.transactions().count(), 2);
        let w = &s.tx(0).unwrap().eve()["request"]["write"];
        assert_eq!(w["address"], 4);
        assert_eq!(w["data"], 16);
    }

    #[test]
    fn unsolicited_response_and_exception() {
        let mut s = state();
        let ev = feed(&mut s, Direction::ToClient, &msg(3, 1, &[0x83, 2]));
        assert_eq!(ev, ["unsolicited_response"]);
        let e = s.tx(0).unwrap().eve();
        assert_eq!(e["response"]["exception"]["code"], "IllegalDataAddr");
        assert_eq!(e["response"]["exception"]["raw"], 2);
        assert_eq!(e["response"]["function_raw"], 0x83);
        assert_eq!(e["response"]["function_code"], "RdHoldRegs");
        // An exception answers a request of its function.
        let mut s = state();
        feed(&mut s, Direction::ToServer, &msg(4, 1, &[3, 0, 0, 0, 1]));
        assert!(feed(&mut s, Direction::ToClient, &msg(4, 1, &[0x83, 2])).is_empty());
        assert_eq!(s.transactions().count(), 1);
    }

    #[test]
    fn error_flags_raise_events() {
        let mut s = state();
        let mut m = msg(1, 1, &[3, 0, 0, 0, 1]);
        m[2] = 0;
        m[3] = 5;
        assert_eq!(
            feed(&mut s, Direction::ToServer, &m),
            ["invalid_protocol_id"]
        );
        // Quantity 0: invalid value.
        assert_eq!(
            feed(&mut s, Direction::ToServer, &msg(2, 1, &[3, 0, 0, 0, 0])),
            ["invalid_value"]
        );
        // Function code 0.
        assert_eq!(
            feed(&mut s, Direction::ToServer, &msg(3, 1, &[0, 1, 2])),
            ["invalid_function_code"]
        );
        // A length outside 2..=254: the announced bytes are skipped.
        // Length 256: the 256 bytes after the 6-byte header are skipped.
        let mut long = vec![0, 9, 0, 0, 1, 0, 1, 3];
        long.extend_from_slice(&[0; 254]);
        long.extend(msg(10, 1, &[3, 0, 0, 0, 1]));
        let ev = feed(&mut s, Direction::ToServer, &long);
        assert_eq!(ev, ["invalid_length"]);
        let last = s.transactions().last().unwrap().eve();
        assert_eq!(last["request"]["transaction_id"], 10);
        // A read response whose count disagrees with its length.
        feed(&mut s, Direction::ToServer, &msg(20, 1, &[4, 0, 0, 0, 1]));
        let ev = feed(&mut s, Direction::ToClient, &msg(20, 1, &[4, 4, 0, 1]));
        assert_eq!(ev, ["value_mismatch"]);
    }

    #[test]
    fn diagnostic_and_mei() {
        let mut s = state();
        feed(&mut s, Direction::ToServer, &msg(1, 1, &[8, 0, 1, 0, 0]));
        feed(&mut s, Direction::ToServer, &msg(2, 1, &[0x2b, 0x0e, 1, 0]));
        let d = s.tx(0).unwrap().eve();
        assert_eq!(d["request"]["diagnostic"]["code"], "RestartCommOpt");
        assert_eq!(d["request"]["diagnostic"]["raw"], 1);
        let m = s.tx(1).unwrap().eve();
        assert_eq!(m["request"]["mei"]["code"], "RdDevId");
        assert!(s
            .tx(0)
            .unwrap()
            .modbus_match(&spec("function 8, subfunction 1")));
        assert!(!s
            .tx(0)
            .unwrap()
            .modbus_match(&spec("function 8, subfunction 4")));
        assert!(s.tx(1).unwrap().modbus_match(&spec("function 43")));
    }

    #[test]
    fn keyword_grammar() {
        assert!(ModbusSpec::parse("function 0").is_err());
        assert!(ModbusSpec::parse("function 256").is_err());
        assert!(ModbusSpec::parse("function bogus").is_err());
        assert!(ModbusSpec::parse("access write discretes").is_err());
        assert!(ModbusSpec::parse("access write input").is_err());
        assert!(ModbusSpec::parse("access read holding, address 5, value 3").is_err());
        assert!(ModbusSpec::parse("access write holding, address 5<>9, value 3").is_err());
        assert!(ModbusSpec::parse("access write holding, address 5, value 3").is_ok());
        assert!(ModbusSpec::parse("\"unit 10, function !assigned\"").is_ok());
        assert!(ModbusSpec::parse("unit 1<>3, access read").is_ok());
        assert!(ModbusSpec::parse("unit x").is_err());
        assert_eq!(spec("function 3").function, Some(3),);
        assert_eq!(spec("unit <5").unit, Some(0..5));
        assert_eq!(spec("unit >5").unit, Some(5..u16::MAX));
    }

    #[test]
    fn keyword_matches_requests() {
        let mut s = state();
        // Write single register 40005 (address 4) = 0x10, unit 1.
        feed(&mut s, Direction::ToServer, &msg(1, 1, &[6, 0, 4, 0, 0x10]));
        // Write multiple registers from address 9: 3 registers.
        feed(
            &mut s,
            Direction::ToServer,
            &msg(2, 7, &[0x10, 0, 9, 0, 3, 6, 0, 1, 0, 2, 0, 3]),
        );
        let (t0, t1) = (s.tx(0).unwrap(), s.tx(1).unwrap());
        assert!(t0.modbus_match(&spec("function 6")));
        assert!(t0.modbus_match(&spec("function assigned")));
        assert!(!t0.modbus_match(&spec("function !assigned")));
        assert!(t0.modbus_match(&spec("access write")));
        assert!(t0.modbus_match(&spec("access write holding")));
        assert!(!t0.modbus_match(&spec("access write coils")));
        assert!(!t0.modbus_match(&spec("access read")));
        assert!(t0.modbus_match(&spec("access write holding, address 5")));
        assert!(!t0.modbus_match(&spec("access write holding, address 4")));
        assert!(t0.modbus_match(&spec("access write, address 5, value 16")));
        assert!(t0.modbus_match(&spec("access write, address 5, value >15")));
        assert!(!t0.modbus_match(&spec("access write, address 5, value <16")));
        assert!(t0.modbus_match(&spec("unit 1")));
        assert!(!t0.modbus_match(&spec("unit 2, function 6")));
        // Registers 10..=12 (addresses 9..=11 in the PDU).
        assert!(t1.modbus_match(&spec("access write holding, address 10<>13")));
        assert!(t1.modbus_match(&spec("access write, address 11, value 2")));
        assert!(t1.modbus_match(&spec("access write, address 12, value 3")));
        assert!(!t1.modbus_match(&spec("access write, address 11, value 3")));
        assert!(t1.modbus_match(&spec("unit >5, access write")));
        assert!(!t1.modbus_match(&spec("access write, address >20")));
    }

    #[test]
    fn flood_stops_new_transactions_until_freed() {
        let mut s = state();
        let mut flooded = 0;
        for i in 0..(REQUEST_FLOOD + 5) {
            let ev = feed(
                &mut s,
                Direction::ToServer,
                &msg(i as u16, 1, &[3, 0, 0, 0, 1]),
            );
            flooded += ev.iter().filter(|e| *e == "flooded").count();
        }
        assert_eq!(flooded, 1);
        assert_eq!(s.transactions().count(), REQUEST_FLOOD + 1);
        TxParser::retain(&mut s, &mut |c, _| c.id > 100);
        assert!(!s.given_up);
        feed(&mut s, Direction::ToServer, &msg(9, 1, &[3, 0, 0, 0, 1]));
        assert_eq!(s.transactions().count(), REQUEST_FLOOD - 100 + 1);
    }

    #[test]
    fn gap_stops_the_direction() {
        let mut s = state();
        let m = msg(1, 1, &[3, 0, 0, 0, 1]);
        feed(&mut s, Direction::ToServer, &m[..4]);
        TxParser::on_gap(&mut s, Direction::ToServer, &mut Vec::new());
        assert!(!TxParser::wants_data(&s, Direction::ToServer));
        feed(&mut s, Direction::ToServer, &m);
        assert_eq!(s.transactions().count(), 0);
        // The other direction goes on.
        feed(&mut s, Direction::ToClient, &msg(1, 1, &[3, 2, 0, 1]));
        assert_eq!(s.transactions().count(), 1);
    }
}
