//! DNS over UDP (one message per datagram) and TCP (two-byte length prefix,
//! messages reassembled across segments).
//!
//! Each message is its own transaction, as in Suricata 7+: a request
//! transaction to the server, a response transaction to the client. Names
//! are decompressed with loop protection (at most 255 labels and pointers
//! per name, and at most [`AppLayerConfig::dns_max_name`] bytes, longer
//! names are kept truncated and flagged).
//!
//! mDNS and LLMNR are variants of this state ([`crate::mdns`] holds
//! what differs: their events, buffers and records).
//!
//! Not done: EDNS option decoding beyond code and data, DNSSEC record
//! contents (logged by type only), SVCB/HTTPS parameters.

use std::borrow::Cow;
use std::collections::VecDeque;

use serde_json::Value;

use crate::events::{AppLayerEvent, DnsEvent};
use crate::jsonw::JsonText;
use crate::state::{TxCommon, TxId, TxProgress};
use crate::{AppLayerConfig, AppProto, BufferId, Direction, Timestamp, Transport};

/// A decompressed name, dotted, without the trailing dot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsName {
    pub value: Vec<u8>,
    /// Longer than the cap, or cut short by a pointer loop.
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsHeader {
    pub id: u16,
    pub flags: u16,
    pub qdcount: u16,
    pub ancount: u16,
    pub nscount: u16,
    pub arcount: u16,
}

impl DnsHeader {
    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0xf) as u8
    }
    pub fn rcode(&self) -> u8 {
        (self.flags & 0xf) as u8
    }
    pub fn is_response(&self) -> bool {
        self.flags & 0x8000 != 0
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsQuery {
    pub name: DnsName,
    pub rrtype: u16,
    pub rrclass: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DnsRData {
    A(Vec<u8>),
    Aaaa(Vec<u8>),
    /// CNAME, NS, PTR, MX (preference dropped, as Suricata logs it).
    Name(DnsName),
    Txt(Vec<Vec<u8>>),
    Soa {
        mname: DnsName,
        rname: DnsName,
        serial: u32,
        refresh: u32,
        retry: u32,
        expire: u32,
        minimum: u32,
    },
    Srv {
        priority: u16,
        weight: u16,
        port: u16,
        target: DnsName,
    },
    Sshfp {
        algo: u8,
        fp_type: u8,
        fingerprint: Vec<u8>,
    },
    Opt(Vec<(u16, Vec<u8>)>),
    Null(Vec<u8>),
    Unknown(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsAnswer {
    pub name: DnsName,
    pub rrtype: u16,
    pub rrclass: u16,
    pub ttl: u32,
    pub data: DnsRData,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsMessage {
    pub header: DnsHeader,
    pub queries: Vec<DnsQuery>,
    pub answers: Vec<DnsAnswer>,
    pub authorities: Vec<DnsAnswer>,
    pub additionals: Vec<DnsAnswer>,
}

impl DnsMessage {
    /// The additional records EVE logs: all but empty OPT records.
    pub(crate) fn logged_additionals(
        &self,
    ) -> std::iter::Peekable<impl Iterator<Item = &DnsAnswer>> {
        self.additionals
            .iter()
            .filter(|a| !matches!(&a.data, DnsRData::Opt(o) if o.is_empty()))
            .peekable()
    }
}

const T_A: u16 = 1;
const T_NS: u16 = 2;
const T_CNAME: u16 = 5;
const T_SOA: u16 = 6;
const T_NULL: u16 = 10;
const T_PTR: u16 = 12;
const T_MX: u16 = 15;
const T_TXT: u16 = 16;
const T_AAAA: u16 = 28;
const T_SRV: u16 = 33;
const T_OPT: u16 = 41;
const T_SSHFP: u16 = 44;

struct Reader<'a> {
    msg: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn u16(&mut self) -> Option<u16> {
        let b = self.msg.get(self.pos..self.pos + 2)?;
        self.pos += 2;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        let b = self.msg.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.msg.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(b)
    }
}

/// Why a name could not be read.
#[derive(Debug, PartialEq, Eq)]
enum NameError {
    Truncated,
    Loop,
}

/// Reads a possibly compressed name starting at `start`; returns the name
/// and the offset just past it in the message (past the first pointer when
/// there is one).
fn parse_name(msg: &[u8], start: usize, max: usize) -> Result<(DnsName, usize), NameError> {
    // Most names fit in 32 bytes: one allocation instead of a few
    // growing ones.
    let mut name = DnsName {
        value: Vec::with_capacity(32),
        truncated: false,
    };
    let mut pos = start;
    let mut end: Option<usize> = None;
    let mut count = 0usize;
    loop {
        let len = *msg.get(pos).ok_or(NameError::Truncated)?;
        if len == 0 {
            if end.is_none() {
                end = Some(pos + 1);
            }
            break;
        }
        match len & 0xc0 {
            0xc0 => {
                let b = *msg.get(pos + 1).ok_or(NameError::Truncated)?;
                let off = (usize::from(len & 0x3f) << 8) | usize::from(b);
                if off >= msg.len() {
                    return Err(NameError::Truncated);
                }
                if end.is_none() {
                    end = Some(pos + 2);
                }
                pos = off;
            }
            0x00 => {
                let label = msg
                    .get(pos + 1..pos + 1 + usize::from(len))
                    .ok_or(NameError::Truncated)?;
                if !name.truncated {
                    let sep = usize::from(!name.value.is_empty());
                    if name.value.len() + sep + label.len() > max {
                        name.truncated = true;
                    } else {
                        if sep == 1 {
                            name.value.push(b'.');
                        }
                        name.value.extend_from_slice(label);
                    }
                }
                pos += 1 + usize::from(len);
            }
            // Extended label types (0x40, 0x80) are not in use.
            _ => return Err(NameError::Truncated),
        }
        count += 1;
        if count > 255 {
            return Err(NameError::Loop);
        }
    }
    Ok((name, end.unwrap_or(pos + 1)))
}

struct Parser<'a> {
    r: Reader<'a>,
    max_name: usize,
    events: Vec<DnsEvent>,
}

impl<'a> Parser<'a> {
    fn name(&mut self) -> Option<DnsName> {
        match parse_name(self.r.msg, self.r.pos, self.max_name) {
            Ok((n, end)) => {
                if n.truncated && !self.events.contains(&DnsEvent::NameTooLong) {
                    self.events.push(DnsEvent::NameTooLong);
                }
                self.r.pos = end;
                Some(n)
            }
            Err(NameError::Loop) => {
                self.events.push(DnsEvent::InfiniteLoop);
                None
            }
            Err(NameError::Truncated) => None,
        }
    }

    fn name_at(&mut self, at: usize) -> DnsName {
        match parse_name(self.r.msg, at, self.max_name) {
            Ok((n, _)) => n,
            Err(e) => {
                if e == NameError::Loop && !self.events.contains(&DnsEvent::InfiniteLoop) {
                    self.events.push(DnsEvent::InfiniteLoop);
                }
                DnsName {
                    value: Vec::new(),
                    truncated: true,
                }
            }
        }
    }

    fn answer(&mut self) -> Option<DnsAnswer> {
        let name = self.name()?;
        let rrtype = self.r.u16()?;
        let rrclass = self.r.u16()?;
        let ttl = self.r.u32()?;
        let rdlen = usize::from(self.r.u16()?);
        let rstart = self.r.pos;
        let rdata = self.r.bytes(rdlen)?;
        let data = match rrtype {
            T_A if rdlen == 4 => DnsRData::A(rdata.to_vec()),
            T_AAAA if rdlen == 16 => DnsRData::Aaaa(rdata.to_vec()),
            T_CNAME | T_NS | T_PTR => DnsRData::Name(self.name_at(rstart)),
            T_MX if rdlen >= 3 => DnsRData::Name(self.name_at(rstart + 2)),
            T_TXT => {
                let mut v = Vec::new();
                let mut i = 0;
                while i < rdata.len() {
                    let l = usize::from(rdata[i]);
                    let end = (i + 1 + l).min(rdata.len());
                    v.push(rdata[i + 1..end].to_vec());
                    i = end;
                }
                DnsRData::Txt(v)
            }
            T_SOA => {
                let saved = self.r.pos;
                self.r.pos = rstart;
                let soa = (|| {
                    let mname = self.name()?;
                    let rname = self.name()?;
                    Some(DnsRData::Soa {
                        mname,
                        rname,
                        serial: self.r.u32()?,
                        refresh: self.r.u32()?,
                        retry: self.r.u32()?,
                        expire: self.r.u32()?,
                        minimum: self.r.u32()?,
                    })
                })();
                self.r.pos = saved;
                soa.unwrap_or_else(|| DnsRData::Unknown(rdata.to_vec()))
            }
            T_SRV if rdlen >= 7 => DnsRData::Srv {
                priority: u16::from_be_bytes([rdata[0], rdata[1]]),
                weight: u16::from_be_bytes([rdata[2], rdata[3]]),
                port: u16::from_be_bytes([rdata[4], rdata[5]]),
                target: self.name_at(rstart + 6),
            },
            T_SSHFP if rdlen >= 2 => DnsRData::Sshfp {
                algo: rdata[0],
                fp_type: rdata[1],
                fingerprint: rdata[2..].to_vec(),
            },
            T_OPT => {
                let mut opts = Vec::new();
                let mut i = 0;
                while i + 4 <= rdata.len() {
                    let code = u16::from_be_bytes([rdata[i], rdata[i + 1]]);
                    let l = usize::from(u16::from_be_bytes([rdata[i + 2], rdata[i + 3]]));
                    let end = (i + 4 + l).min(rdata.len());
                    opts.push((code, rdata[i + 4..end].to_vec()));
                    i = end;
                }
                DnsRData::Opt(opts)
            }
            T_NULL => DnsRData::Null(rdata.to_vec()),
            _ => DnsRData::Unknown(rdata.to_vec()),
        };
        Some(DnsAnswer {
            name,
            rrtype,
            rrclass,
            ttl,
            data,
        })
    }
}

/// Parses one whole DNS message. Sections that are cut short keep what was
/// read; a header or question section that cannot be read is an error.
pub fn parse_message(msg: &[u8], max_name: usize) -> Result<(DnsMessage, Vec<DnsEvent>), DnsEvent> {
    let mut p = Parser {
        r: Reader { msg, pos: 0 },
        max_name,
        events: Vec::new(),
    };
    let bad = DnsEvent::MalformedData;
    let header = DnsHeader {
        id: p.r.u16().ok_or(bad)?,
        flags: p.r.u16().ok_or(bad)?,
        qdcount: p.r.u16().ok_or(bad)?,
        ancount: p.r.u16().ok_or(bad)?,
        nscount: p.r.u16().ok_or(bad)?,
        arcount: p.r.u16().ok_or(bad)?,
    };
    let mut m = DnsMessage {
        header,
        queries: Vec::new(),
        answers: Vec::new(),
        authorities: Vec::new(),
        additionals: Vec::new(),
    };
    for _ in 0..m.header.qdcount {
        let Some(name) = p.name() else {
            if p.events.contains(&DnsEvent::InfiniteLoop) {
                return Err(DnsEvent::InfiniteLoop);
            }
            return Err(bad);
        };
        let rrtype = p.r.u16().ok_or(bad)?;
        let rrclass = p.r.u16().ok_or(bad)?;
        m.queries.push(DnsQuery {
            name,
            rrtype,
            rrclass,
        });
    }
    for _ in 0..m.header.ancount {
        match p.answer() {
            Some(a) => m.answers.push(a),
            None => {
                p.events.push(bad);
                return Ok((m, p.events));
            }
        }
    }
    for _ in 0..m.header.nscount {
        match p.answer() {
            Some(a) => m.authorities.push(a),
            None => {
                p.events.push(DnsEvent::InvalidAuthorities);
                return Ok((m, p.events));
            }
        }
    }
    for _ in 0..m.header.arcount {
        match p.answer() {
            Some(a) => m.additionals.push(a),
            None => {
                p.events.push(DnsEvent::InvalidAdditionals);
                return Ok((m, p.events));
            }
        }
    }
    Ok((m, p.events))
}

/// One DNS message and the direction it travelled.
#[derive(Debug)]
pub struct DnsTx {
    pub(crate) common: TxCommon,
    pub dir: Direction,
    pub message: DnsMessage,
    /// `Dns`, `Mdns` or `Llmnr`.
    pub variant: AppProto,
}

impl DnsTx {
    pub fn id(&self) -> TxId {
        self.common.id
    }
    pub fn is_request(&self) -> bool {
        self.dir == Direction::ToServer
    }
    pub fn opcode(&self) -> u8 {
        self.message.header.opcode()
    }
    pub fn rcode(&self) -> u8 {
        self.message.header.rcode()
    }
    /// The rrtypes `dns.rrtype` matches: those of the queries.
    pub fn query_rrtypes(&self) -> impl Iterator<Item = u16> + '_ {
        self.message.queries.iter().map(|q| q.rrtype)
    }
    pub fn answer_rrtypes(&self) -> impl Iterator<Item = u16> + '_ {
        self.message.answers.iter().map(|a| a.rrtype)
    }

    pub fn progress(&self) -> TxProgress {
        // One message, one direction: nothing more will come for it.
        TxProgress {
            request_complete: true,
            response_complete: true,
        }
    }

    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        if dir != self.dir {
            return Vec::new();
        }
        if self.variant != AppProto::Dns {
            return crate::mdns::buffers(self, id);
        }
        let m = &self.message;
        match id {
            BufferId::DnsQuery if self.is_request() => {
                m.queries.iter().map(|q| q.name.value.as_slice()).collect()
            }
            BufferId::DnsQueriesRrname => {
                m.queries.iter().map(|q| q.name.value.as_slice()).collect()
            }
            BufferId::DnsAnswersRrname => {
                m.answers.iter().map(|a| a.name.value.as_slice()).collect()
            }
            BufferId::DnsResponseRrname if !self.is_request() => self.response_names(),
            _ => Vec::new(),
        }
    }

    /// Every name of the message: queries, then each record's name and
    /// the names inside its data (`dns.response.rrname`).
    pub(crate) fn response_names(&self) -> Vec<&[u8]> {
        let m = &self.message;
        let mut out: Vec<&[u8]> = m.queries.iter().map(|q| q.name.value.as_slice()).collect();
        for a in m.answers.iter().chain(&m.authorities).chain(&m.additionals) {
            out.push(&a.name.value);
            match &a.data {
                DnsRData::Name(n) => out.push(&n.value),
                DnsRData::Soa { mname, rname, .. } => {
                    out.push(&mname.value);
                    out.push(&rname.value);
                }
                DnsRData::Srv { target, .. } => out.push(&target.value),
                _ => {}
            }
        }
        out
    }

    /// The EVE `dns` object in Suricata 8's version 3 format.
    pub fn eve(&self) -> Value {
        crate::jsonw::tree(&crate::jsonw::object(|w| self.eve_write(w)))
    }

    /// The members of the EVE object (`dns`, or `mdns`/`llmnr` for
    /// those variants), written to `w`.
    pub fn eve_write(&self, w: &mut JsonText) {
        if self.variant != AppProto::Dns {
            return crate::mdns::eve_write(self, w);
        }
        let m = &self.message;
        let h = &m.header;
        // Members in key order (JsonText would reorder them, at a cost).
        let flag = |bit: u16| h.flags & bit != 0;
        if flag(0x0400) {
            w.field_bool("aa", true);
        }
        let mut adds = m.logged_additionals();
        if adds.peek().is_some() {
            w.field_arr("additionals", |w| {
                for a in adds {
                    answer_detail(a, w);
                }
            });
        }
        if !m.answers.is_empty() {
            w.field_arr("answers", |w| {
                for a in &m.answers {
                    answer_detail(a, w);
                }
            });
        }
        if !m.authorities.is_empty() {
            w.field_arr("authorities", |w| {
                for a in &m.authorities {
                    answer_detail(a, w);
                }
            });
        }
        w.field_str("flags", &format!("{:x}", h.flags));
        if !m.answers.is_empty() {
            grouped(&m.answers, w);
        }
        w.field_u64("id", h.id);
        w.field_u64("opcode", h.opcode());
        if flag(0x8000) {
            w.field_bool("qr", true);
        }
        if !m.queries.is_empty() {
            w.field_arr("queries", |w| {
                for q in &m.queries {
                    w.obj(|w| {
                        w.field_lossy("rrname", &q.name.value);
                        if q.name.truncated {
                            w.field_bool("rrname_truncated", true);
                        }
                        w.field_str("rrtype", &rrtype_string(q.rrtype));
                    });
                }
            });
        }
        if flag(0x0080) {
            w.field_bool("ra", true);
        }
        w.field_str("rcode", &rcode_string(h.rcode()));
        if flag(0x0100) {
            w.field_bool("rd", true);
        }
        if flag(0x0200) {
            w.field_bool("tc", true);
        }
        w.field_u64("tx_id", self.common.id);
        w.field_str(
            "type",
            if self.is_request() {
                "request"
            } else {
                "response"
            },
        );
        w.field_u64("version", 3u8);
        if flag(0x0040) {
            w.field_bool("z", true);
        }
    }
}

/// The `grouped` object: the answers' data by type, types in name order.
fn grouped(answers: &[DnsAnswer], w: &mut JsonText) {
    let mut types: Vec<(Cow<'static, str>, &DnsAnswer)> = answers
        .iter()
        .filter(|a| {
            matches!(
                a.data,
                DnsRData::A(_)
                    | DnsRData::Aaaa(_)
                    | DnsRData::Name(_)
                    | DnsRData::Txt(_)
                    | DnsRData::Null(_)
                    | DnsRData::Soa { .. }
                    | DnsRData::Sshfp { .. }
                    | DnsRData::Srv { .. }
            )
        })
        .map(|a| (rrtype_string(a.rrtype), a))
        .collect();
    // Stable: each type's answers stay in their order.
    types.sort_by(|a, b| a.0.cmp(&b.0));
    w.field_obj("grouped", |w| {
        for (i, (t, _)) in types.iter().enumerate() {
            if i > 0 && types[i - 1].0 == *t {
                continue;
            }
            w.field_arr(t, |w| {
                for (_, a) in types[i..].iter().take_while(|(u, _)| u == t) {
                    match &a.data {
                        DnsRData::A(b) | DnsRData::Aaaa(b) => {
                            w.str(&print_addr(b));
                        }
                        DnsRData::Name(n) => {
                            w.lossy(&n.value);
                        }
                        DnsRData::Txt(t) => {
                            for t in t {
                                w.lossy(t);
                            }
                        }
                        DnsRData::Null(b) => {
                            w.lossy(b);
                        }
                        d => rdata_object(d, w),
                    }
                }
            });
        }
    });
}

/// The object of SOA, SSHFP and SRV data (`null` for other types).
pub(crate) fn rdata_object(d: &DnsRData, w: &mut JsonText) {
    match d {
        DnsRData::Soa {
            mname,
            rname,
            serial,
            refresh,
            retry,
            expire,
            minimum,
        } => w.obj(|w| {
            w.field_lossy("mname", &mname.value)
                .field_lossy("rname", &rname.value)
                .field_u64("serial", *serial)
                .field_u64("refresh", *refresh)
                .field_u64("retry", *retry)
                .field_u64("expire", *expire)
                .field_u64("minimum", *minimum);
        }),
        DnsRData::Sshfp {
            algo,
            fp_type,
            fingerprint,
        } => {
            let hex: Vec<String> = fingerprint.iter().map(|b| format!("{b:02x}")).collect();
            w.obj(|w| {
                w.field_str("fingerprint", &hex.join(":"))
                    .field_u64("algo", *algo)
                    .field_u64("type", *fp_type);
            })
        }
        DnsRData::Srv {
            priority,
            weight,
            port,
            target,
        } => w.obj(|w| {
            w.field_u64("priority", *priority)
                .field_u64("weight", *weight)
                .field_u64("port", *port)
                .field_lossy("name", &target.value);
        }),
        _ => w.null(),
    };
}

/// The EDNS options of an OPT record.
pub(crate) fn opt_array(opts: &[(u16, Vec<u8>)], w: &mut JsonText) {
    w.arr(|w| {
        for (code, data) in opts {
            w.obj(|w| {
                w.field_u64("code", *code)
                    .field_str("data", &crate::hex_lower(data));
            });
        }
    });
}

/// One detailed answer entry (several for TXT: one per string), members
/// in key order.
fn answer_detail(a: &DnsAnswer, w: &mut JsonText) {
    let name = |w: &mut JsonText| {
        w.field_lossy("rrname", &a.name.value);
        if a.name.truncated {
            w.field_bool("rrname_truncated", true);
        }
        w.field_str("rrtype", &rrtype_string(a.rrtype));
    };
    if let DnsRData::Txt(t) = &a.data {
        if !t.is_empty() {
            for s in t {
                w.obj(|w| {
                    w.field_lossy("rdata", s);
                    name(w);
                    w.field_u64("ttl", a.ttl);
                });
            }
            return;
        }
    }
    w.obj(|w| {
        match &a.data {
            DnsRData::A(b) | DnsRData::Aaaa(b) => {
                w.field_str("rdata", &print_addr(b));
            }
            DnsRData::Name(n) => {
                w.field_lossy("rdata", &n.value);
                if n.truncated {
                    w.field_bool("rdata_truncated", true);
                }
            }
            DnsRData::Null(b) => {
                w.field_lossy("rdata", b);
            }
            DnsRData::Opt(opts) => opt_array(opts, w.key("opt")),
            _ => {}
        }
        name(w);
        match &a.data {
            DnsRData::Soa { .. } => rdata_object(&a.data, w.key("soa")),
            DnsRData::Sshfp { .. } => rdata_object(&a.data, w.key("sshfp")),
            DnsRData::Srv { .. } => rdata_object(&a.data, w.key("srv")),
            _ => {}
        }
        w.field_u64("ttl", a.ttl);
    });
}

/// Suricata's address format: dotted quad, or eight groups of four hex
/// digits (no `::` compression).
pub fn print_addr(b: &[u8]) -> String {
    match b.len() {
        4 => {
            let mut s = String::with_capacity(15);
            let mut num = itoa::Buffer::new();
            for (i, &o) in b.iter().enumerate() {
                if i > 0 {
                    s.push('.');
                }
                s.push_str(num.format(o));
            }
            s
        }
        16 => {
            // Every group as four hex digits, none left out.
            let mut s = String::with_capacity(39);
            for (i, group) in b.chunks(2).enumerate() {
                if i > 0 {
                    s.push(':');
                }
                crate::push_hex_lower(&mut s, group);
            }
            s
        }
        _ => String::new(),
    }
}

/// Record type names as Suricata logs them (number when unknown).
pub fn rrtype_string(t: u16) -> Cow<'static, str> {
    let s = match t {
        1 => "A",
        2 => "NS",
        3 => "MD",
        4 => "MF",
        5 => "CNAME",
        6 => "SOA",
        7 => "MB",
        8 => "MG",
        9 => "MR",
        10 => "NULL",
        11 => "WKS",
        12 => "PTR",
        13 => "HINFO",
        14 => "MINFO",
        15 => "MX",
        16 => "TXT",
        17 => "RP",
        18 => "AFSDB",
        19 => "X25",
        20 => "ISDN",
        21 => "RT",
        22 => "NSAP",
        23 => "NSAPPTR",
        24 => "SIG",
        25 => "KEY",
        26 => "PX",
        27 => "GPOS",
        28 => "AAAA",
        29 => "LOC",
        30 => "NXT",
        33 => "SRV",
        34 => "ATMA",
        35 => "NAPTR",
        36 => "KX",
        37 => "CERT",
        38 => "A6",
        39 => "DNAME",
        41 => "OPT",
        42 => "APL",
        43 => "DS",
        44 => "SSHFP",
        45 => "IPSECKEY",
        46 => "RRSIG",
        47 => "NSEC",
        48 => "DNSKEY",
        49 => "DHCID",
        50 => "NSEC3",
        51 => "NSEC3PARAM",
        52 => "TLSA",
        55 => "HIP",
        59 => "CDS",
        60 => "CDNSKEY",
        65 => "HTTPS",
        99 => "SPF",
        249 => "TKEY",
        250 => "TSIG",
        254 => "MAILA",
        255 => "ANY",
        256 => "URI",
        _ => return Cow::Owned(t.to_string()),
    };
    Cow::Borrowed(s)
}

/// Response code names as Suricata logs them.
pub fn rcode_string(rc: u8) -> Cow<'static, str> {
    let s = match rc {
        0 => "NOERROR",
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        6 => "YXDOMAIN",
        7 => "YXRRSET",
        8 => "NXRRSET",
        9 => "NOTAUTH",
        10 => "NOTZONE",
        _ => return Cow::Owned(rc.to_string()),
    };
    Cow::Borrowed(s)
}

/// Per-flow DNS state.
pub struct DnsState {
    transport: Transport,
    pub(crate) cfg: AppLayerConfig,
    pub(crate) txs: VecDeque<DnsTx>,
    pub(crate) next_id: TxId,
    /// `Dns`, or the variant parsed with DNS's parser (`Mdns`, `Llmnr`).
    variant: AppProto,
    /// The flow's first packet came from the server (LLMNR found on the
    /// client's port): requests come the flow's way back.
    pub(crate) reversed: bool,
    /// TCP: bytes of the message being reassembled, per direction (at most
    /// two length bytes plus 65,535).
    tcp_buf: [Vec<u8>; 2],
    /// TCP: a gap made the stream position unknown.
    tcp_desync: [bool; 2],
    /// TCP: a whole message of the direction arrived since the last
    /// [`DnsState::take_raw_trigger`] (Suricata triggers raw stream
    /// inspection per length-prefixed message, before parsing it).
    raw_trigger: [bool; 2],
}

impl DnsState {
    pub fn new(transport: Transport, cfg: &AppLayerConfig) -> Self {
        Self::with_variant(AppProto::Dns, transport, cfg)
    }

    /// The state of a protocol that carries DNS messages: `Dns`, `Mdns`
    /// or `Llmnr`.
    pub fn with_variant(variant: AppProto, transport: Transport, cfg: &AppLayerConfig) -> Self {
        DnsState {
            variant,
            reversed: false,
            transport,
            cfg: cfg.clone(),
            txs: VecDeque::new(),
            next_id: 0,
            tcp_buf: [Vec::new(), Vec::new()],
            tcp_desync: [false, false],
            raw_trigger: [false, false],
        }
    }

    /// Whether a DNS-over-TCP message of `dir` completed since the last
    /// call: the raw stream of that direction is then inspected with the
    /// next packet of that direction, so rules mixing payload keywords
    /// with `dns.*` buffers see the message in both places.
    pub fn take_raw_trigger(&mut self, dir: Direction) -> bool {
        std::mem::take(&mut self.raw_trigger[dir.index()])
    }

    /// The flow's protocol: `Dns`, `Mdns` or `Llmnr`.
    pub fn proto(&self) -> AppProto {
        self.variant
    }

    pub fn transactions(&self) -> impl Iterator<Item = &DnsTx> {
        self.txs.iter()
    }

    pub fn tx(&self, id: TxId) -> Option<&DnsTx> {
        self.txs.iter().find(|t| t.common.id == id)
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut DnsTx> {
        self.txs.iter_mut().find(|t| t.common.id == id)
    }

    pub(crate) fn retain(&mut self, keep: impl FnMut(&DnsTx) -> bool) {
        self.txs.retain(keep);
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        match self.transport {
            Transport::Udp => self.message(dir, data, ts, ev),
            Transport::Tcp => self.feed_tcp(dir, data, ts, ev),
        }
    }

    fn feed_tcp(
        &mut self,
        dir: Direction,
        mut data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        if self.tcp_desync[d] {
            // Resume only where a plausible message starts.
            if data.len() >= 14 && crate::probe::dns_tcp_plausible(data) {
                self.tcp_desync[d] = false;
            } else {
                return;
            }
        }
        while !data.is_empty() {
            let buf = &mut self.tcp_buf[d];
            if buf.len() < 2 {
                let n = (2 - buf.len()).min(data.len());
                buf.extend_from_slice(&data[..n]);
                data = &data[n..];
                if buf.len() < 2 {
                    return;
                }
            }
            let want = usize::from(u16::from_be_bytes([buf[0], buf[1]])) + 2;
            let n = (want - buf.len()).min(data.len());
            buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if buf.len() == want {
                self.raw_trigger[d] = true;
                let msg = std::mem::take(&mut self.tcp_buf[d]);
                self.message(dir, &msg[2..], ts, ev);
                let mut msg = msg;
                msg.clear();
                self.tcp_buf[d] = msg;
            }
        }
    }

    fn message(&mut self, dir: Direction, msg: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        if self.variant != AppProto::Dns {
            return crate::mdns::message(self, dir, msg, ts, ev);
        }
        match parse_message(msg, self.cfg.dns_max_name) {
            Ok((m, events)) => {
                let id = self.next_id;
                self.next_id += 1;
                let mut all = events;
                match dir {
                    Direction::ToServer if m.header.is_response() => {
                        all.push(DnsEvent::NotARequest)
                    }
                    Direction::ToClient if !m.header.is_response() => {
                        all.push(DnsEvent::NotAResponse)
                    }
                    _ => {}
                }
                if m.header.flags & 0x0040 != 0 {
                    all.push(DnsEvent::ZFlagSet);
                }
                if (7..=15).contains(&m.header.opcode()) {
                    all.push(DnsEvent::InvalidOpcode);
                }
                if self.txs.len() >= self.cfg.max_transactions {
                    self.txs.pop_front();
                    all.push(DnsEvent::TooManyTransactions);
                }
                for e in all {
                    ev.push(AppLayerEvent::Dns(e, Some(id)));
                }
                self.txs.push_back(DnsTx {
                    common: TxCommon::new(id, ts),
                    dir,
                    message: m,
                    variant: AppProto::Dns,
                });
            }
            Err(e) => ev.push(AppLayerEvent::Dns(e, None)),
        }
    }

    pub fn on_gap(&mut self, dir: Direction) {
        if self.transport == Transport::Tcp {
            self.tcp_buf[dir.index()].clear();
            self.tcp_desync[dir.index()] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_printed_in_full() {
        assert_eq!(print_addr(&[192, 168, 0, 1]), "192.168.0.1");
        assert_eq!(print_addr(&[0, 10, 255, 100]), "0.10.255.100");
        let mut v6 = [0u8; 16];
        v6[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        v6[15] = 1;
        assert_eq!(print_addr(&v6), "2001:0db8:0000:0000:0000:0000:0000:0001");
        assert_eq!(print_addr(&[1, 2, 3]), "");
    }

    #[test]
    fn pointer_loop_is_caught() {
        // Header, then a question whose name points at itself.
        let mut m = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(parse_message(&m, 1025).unwrap_err(), DnsEvent::InfiniteLoop);
    }

    #[test]
    fn long_names_are_truncated() {
        let mut m = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for _ in 0..4 {
            m.push(63);
            m.extend_from_slice(&[b'a'; 63]);
        }
        m.push(0);
        m.extend_from_slice(&[0, 1, 0, 1]);
        let (msg, ev) = parse_message(&m, 100).unwrap();
        assert!(msg.queries[0].name.truncated);
        assert!(msg.queries[0].name.value.len() <= 100);
        assert_eq!(ev, vec![DnsEvent::NameTooLong]);
    }

    /// Each whole length-prefixed message asks once for raw stream
    /// inspection of its direction; a partial one does not.
    #[test]
    fn tcp_messages_trigger_raw_inspection_per_direction() {
        let mut s = DnsState::new(Transport::Tcp, &AppLayerConfig::default());
        let mut m = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[1, b'a', 0, 0, 1, 0, 1]);
        let mut framed = (m.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&m);
        let mut ev = Vec::new();
        s.feed(Direction::ToServer, &framed[..5], 0, &mut ev);
        assert!(!s.take_raw_trigger(Direction::ToServer));
        s.feed(Direction::ToServer, &framed[5..], 0, &mut ev);
        assert!(!s.take_raw_trigger(Direction::ToClient));
        assert!(s.take_raw_trigger(Direction::ToServer));
        assert!(!s.take_raw_trigger(Direction::ToServer));
        assert_eq!(s.transactions().count(), 1);
    }
}
