//! SIP (RFC 3261) over UDP and TCP, parsed as Suricata's `rust/src/sip`
//! does: every request and every response is a transaction of its own
//! (one direction each, Suricata's `APP_LAYER_PARSER_OPT_UNIDIR_TXS`), the
//! to-server side is parsed as requests and the to-client side as
//! responses, whoever sends them.
//!
//! * UDP: one message per datagram; the body is the rest of the datagram
//!   (cut at `Content-Length` when that is shorter).
//! * TCP: messages are framed by their header block (up to the empty
//!   line) and `Content-Length` (absent: no body). CR LF before a start
//!   line is skipped (RFC 3261 §7.5, keep-alives). A message that does not
//!   parse or a gap makes the parser look for the next line that starts a
//!   message.
//!
//! The grammar is Suricata's (its character classes for the method, the
//! request URI, the version, the reason phrase, header names and values;
//! folded header values are kept as sent). Header names keep their
//! spelling; the compact forms (`f`, `t`, `v`, `c`, `l`, `i`, `m`, `e`,
//! `s`, `k`) are expanded to the long names, as Suricata does, and the
//! header keywords look the long name up as written (`From`, `To`, `Via`,
//! `User-Agent`, `Content-Type`, `Content-Length`), each occurrence being
//! one buffer of the multi-buffer.
//!
//! A body is parsed as SDP (Suricata's grammar, whatever the
//! `Content-Type`) for the EVE `sdp` object. Malformed messages raise Suricata's `sip.invalid_data`,
//! truncated ones `sip.incomplete_data` (on the flow's last transaction,
//! as Suricata sets them).
//!
//! Caps: the header block of a message (`http_max_header_bytes`), the
//! number of headers kept (`http_max_headers`), the body kept
//! ([`MAX_BODY`]; the rest of a longer body is skipped, never buffered)
//! and the transactions held (`max_transactions`).

use std::collections::VecDeque;

use serde_json::{json, Map, Value};

use crate::events::SipEvent;
use crate::state::{TxCommon, TxProgress};
use crate::{AppLayerConfig, AppLayerEvent, BufferId, Direction, Timestamp, Transport, TxId};

/// Body bytes kept per message (enough for any SDP offer).
pub const MAX_BODY: usize = 64 * 1024;

/// SIP request methods Suricata's protocol detection looks for at the
/// start of the client's data.
pub const METHODS: &[&[u8]] = &[
    b"REGISTER",
    b"INVITE",
    b"ACK",
    b"BYE",
    b"CANCEL",
    b"UPDATE",
    b"REFER",
    b"PRACK",
    b"SUBSCRIBE",
    b"NOTIFY",
    b"PUBLISH",
    b"MESSAGE",
    b"INFO",
    b"OPTIONS",
];

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!%'*+-._`".contains(&b)
}

fn is_uri(b: u8) -> bool {
    is_token(b) || b"~#@:;=?+&$,/".contains(&b)
}

/// The URI characters of Suricata's SDP `u=` line.
fn is_sip_uri(b: u8) -> bool {
    b.is_ascii_alphanumeric() || is_sdp_token(b) || b"~#@:;=?+&$,/".contains(&b)
}

fn is_version(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'/'
}

fn is_reason(b: u8) -> bool {
    is_token(b) || b"$&(),/:;=?@[\\]^ ".contains(&b)
}

fn is_header_value(b: u8) -> bool {
    is_token(b) || b"\"#$&(),/;:<=>?@[]{}()^|~\\\t\n\r ".contains(&b)
}

/// Why a message did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fail {
    /// It ends before its header block does (or holds a byte the header
    /// grammar rejects, which Suricata's parser also reports as
    /// incomplete).
    Incomplete,
    /// It breaks the grammar.
    Invalid,
}

/// A parsed start line and header block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SipHead {
    /// Request: method, URI, version. Response: version, code, reason.
    pub method: Vec<u8>,
    pub uri: Vec<u8>,
    pub version: Vec<u8>,
    pub code: Vec<u8>,
    pub reason: Vec<u8>,
    /// The request or response line as Suricata keeps it (up to the first
    /// byte outside the reason-phrase characters, normally the CR).
    pub line: Vec<u8>,
    /// `(name, value)` in order, compact names expanded.
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// Headers past the cap were dropped.
    pub headers_capped: bool,
}

impl SipHead {
    /// The values of header `name` (long form, as written), in order.
    pub fn header<'a>(&'a self, name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.as_slice() == name)
            .map(|(_, v)| v.as_slice())
    }

    fn content_length(&self) -> Option<usize> {
        let v = self.header(b"Content-Length").next()?;
        std::str::from_utf8(v).ok()?.trim().parse().ok()
    }
}

/// The long name of a compact header name (RFC 3261 §7.3.3).
pub fn expand_compact(name: &[u8]) -> &[u8] {
    match name {
        b"i" => b"Call-ID",
        b"m" => b"Contact",
        b"e" => b"Content-Encoding",
        b"l" => b"Content-Length",
        b"c" => b"Content-Type",
        b"f" => b"From",
        b"s" => b"Subject",
        b"k" => b"Supported",
        b"t" => b"To",
        b"v" => b"Via",
        _ => name,
    }
}

/// Index of the first byte at or after `i` that fails `f`; `Incomplete`
/// when the input ends first (streaming semantics, as nom's).
fn span(b: &[u8], i: usize, f: impl Fn(u8) -> bool) -> Result<usize, Fail> {
    match b.get(i..).and_then(|r| r.iter().position(|&c| !f(c))) {
        Some(n) => Ok(i + n),
        None => Err(Fail::Incomplete),
    }
}

fn expect(b: &[u8], i: usize, c: u8) -> Result<usize, Fail> {
    match b.get(i) {
        None => Err(Fail::Incomplete),
        Some(&x) if x == c => Ok(i + 1),
        Some(_) => Err(Fail::Invalid),
    }
}

fn crlf(b: &[u8], i: usize) -> Result<usize, Fail> {
    let i = expect(b, i, b'\r')?;
    expect(b, i, b'\n')
}

/// Suricata's header value: up to a line end not followed by a space or
/// tab (folded lines are kept), trailing blanks trimmed. Returns the
/// value's end and where the line's CR LF starts.
fn header_value(b: &[u8], start: usize) -> Result<(usize, usize), Fail> {
    let mut end = start;
    let mut trail = 0;
    let mut i = start;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                i += 1;
                match b.get(i) {
                    None => return Err(Fail::Incomplete),
                    Some(b' ' | b'\t') => {
                        i += 1;
                        continue;
                    }
                    Some(_) => return Ok((end, end + trail)),
                }
            }
            b' ' | b'\t' => trail += 1,
            b'\r' => {}
            c => {
                trail = 0;
                if !is_header_value(c) {
                    return Err(Fail::Incomplete);
                }
                end = i + 1;
            }
        }
        i += 1;
    }
    Err(Fail::Incomplete)
}

/// Parses the start line and header block of a message of `dir` from the
/// beginning of `b`; returns it and the offset of the body.
pub fn parse_head(dir: Direction, b: &[u8], max_headers: usize) -> Result<(SipHead, usize), Fail> {
    let mut h = SipHead::default();
    let mut i = match dir {
        Direction::ToServer => {
            let m = span(b, 0, |c| c.is_ascii_alphabetic())?;
            let u0 = expect(b, m, b' ')?;
            let u1 = span(b, u0, is_uri)?;
            if u1 == u0 {
                return Err(Fail::Invalid);
            }
            let v0 = expect(b, u1, b' ')?;
            let v1 = span(b, v0, is_version)?;
            if v1 == v0 {
                return Err(Fail::Invalid);
            }
            h.method = b[..m].to_vec();
            h.uri = b[u0..u1].to_vec();
            h.version = b[v0..v1].to_vec();
            crlf(b, v1)?
        }
        Direction::ToClient => {
            let v1 = span(b, 0, is_version)?;
            if v1 == 0 {
                return Err(Fail::Invalid);
            }
            let c0 = expect(b, v1, b' ')?;
            if b.len() < c0 + 3 {
                return Err(Fail::Incomplete);
            }
            let r0 = expect(b, c0 + 3, b' ')?;
            let r1 = span(b, r0, is_reason)?;
            h.version = b[..v1].to_vec();
            h.code = b[c0..c0 + 3].to_vec();
            h.reason = b[r0..r1].to_vec();
            crlf(b, r1)?
        }
    };
    // The line as Suricata's `sip_take_line` keeps it.
    let line_end = b.iter().position(|&c| !is_reason(c)).unwrap_or(b.len());
    h.line = b[..line_end].to_vec();
    loop {
        match b.get(i..i + 2) {
            Some(b"\r\n") => break,
            None if b"\r\n".starts_with(&b[i.min(b.len())..]) => return Err(Fail::Incomplete),
            _ => {}
        }
        let n1 = span(b, i, is_token)?;
        let c = span(b, n1, |c| c == b' ' || c == b'\t')?;
        let v0 = expect(b, c, b':')?;
        let v0 = span(b, v0, |c| c == b' ' || c == b'\t')?;
        let (v1, eol) = header_value(b, v0)?;
        let next = crlf(b, eol)?;
        if h.headers.len() < max_headers {
            h.headers
                .push((expand_compact(&b[i..n1]).to_vec(), b[v0..v1].to_vec()));
        } else {
            h.headers_capped = true;
        }
        i = next;
    }
    Ok((h, i + 2))
}

/// One SDP media description.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SdpMedia {
    pub media: String,
    pub media_info: Option<String>,
    pub connection_data: Option<String>,
    pub bandwidths: Vec<String>,
    pub encryption_key: Option<String>,
    pub attributes: Vec<String>,
}

/// An SDP session description (RFC 4566), the fields Suricata logs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sdp {
    pub origin: String,
    pub session_name: String,
    pub session_info: Option<String>,
    pub uri: Option<String>,
    pub email: Option<String>,
    pub phone_number: Option<String>,
    pub connection_data: Option<String>,
    pub bandwidths: Vec<String>,
    pub time_descriptions: Vec<(String, Option<String>)>,
    pub timezone: Option<String>,
    pub encryption_key: Option<String>,
    pub attributes: Vec<String>,
    pub media: Vec<SdpMedia>,
}

/// A cursor over an SDP body with the few combinators its grammar needs
/// (complete input: a line must end with LF or CR LF).
struct SdpCur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> SdpCur<'a> {
    fn tag(&mut self, t: &[u8]) -> Option<()> {
        if self.b.get(self.i..)?.starts_with(t) {
            self.i += t.len();
            Some(())
        } else {
            None
        }
    }

    fn take_while(&mut self, f: impl Fn(u8) -> bool) -> &'a [u8] {
        let rest = self.b.get(self.i..).unwrap_or_default();
        let n = rest.iter().position(|&c| !f(c)).unwrap_or(rest.len());
        self.i += n;
        &rest[..n]
    }

    fn space1(&mut self) -> Option<()> {
        (!self.take_while(|c| c == b' ' || c == b'\t').is_empty()).then_some(())
    }

    fn eol(&mut self) -> Option<()> {
        self.tag(b"\r\n").or_else(|| self.tag(b"\n"))
    }

    fn till_eol(&mut self) -> String {
        lossy(self.take_while(|c| c != b'\r' && c != b'\n'))
    }

    /// `prefix`, the rest of the line, its end.
    fn line(&mut self, prefix: &[u8]) -> Option<String> {
        self.tag(prefix)?;
        let v = self.till_eol();
        self.eol()?;
        Some(v)
    }

    /// Runs `f`, restoring the position when it fails (nom's `opt`).
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let at = self.i;
        let r = f(self);
        if r.is_none() {
            self.i = at;
        }
        r
    }

    /// `f` as many times as it succeeds (nom's `many0`), at most
    /// [`SDP_MAX_ITEMS`] kept.
    fn many<T>(&mut self, f: impl Fn(&mut Self) -> Option<T>) -> Vec<T> {
        let mut v = Vec::new();
        while let Some(x) = self.opt(&f) {
            if v.len() < SDP_MAX_ITEMS {
                v.push(x);
            }
        }
        v
    }
}

/// Items kept per SDP list (attributes, bandwidths, media).
const SDP_MAX_ITEMS: usize = 256;

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// RFC 4566 `token-char`.
fn is_sdp_token(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x27 | 0x2a | 0x2b | 0x2d | 0x2e | 0x30..=0x39 | 0x41..=0x5a | 0x5e..=0x7e)
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b' ' || b == b'\t'
}

fn is_time_char(b: u8) -> bool {
    b.is_ascii_digit() || b"dhms-".contains(&b)
}

fn sdp_info(c: &mut SdpCur) -> Option<String> {
    c.tag(b"i=")?;
    let v = lossy(c.take_while(is_name_char));
    c.eol()?;
    Some(v)
}

/// A TTL or address count: no leading zero, at most 255.
fn sdp_num(c: &mut SdpCur) -> Option<u8> {
    c.tag(b"/")?;
    let d = c.take_while(|x| x.is_ascii_digit());
    if d.first() == Some(&b'0') {
        return None;
    }
    std::str::from_utf8(d).ok()?.parse().ok()
}

fn sdp_connection(c: &mut SdpCur) -> Option<String> {
    c.tag(b"c=")?;
    let net = lossy(c.take_while(|x| x.is_ascii_alphabetic()));
    c.space1()?;
    let at = lossy(c.take_while(|x| x.is_ascii_alphanumeric()));
    c.space1()?;
    let addr: std::net::IpAddr =
        std::str::from_utf8(c.take_while(|x| x.is_ascii_hexdigit() || x == b'.' || x == b':'))
            .ok()?
            .parse()
            .ok()?;
    let first = c.opt(sdp_num);
    let second = c.opt(sdp_num);
    c.eol()?;
    let (ttl, count) = match addr {
        std::net::IpAddr::V6(_) => (None, first),
        std::net::IpAddr::V4(a) if a.is_multicast() => {
            first?;
            (first, second)
        }
        std::net::IpAddr::V4(_) => match (first, second) {
            (Some(_), None) => (None, first),
            _ => (first, second),
        },
    };
    let mut s = format!("{net} {at} {addr}");
    for n in [ttl, count].into_iter().flatten() {
        s.push_str(&format!("/{n}"));
    }
    Some(s)
}

fn sdp_bandwidth(c: &mut SdpCur) -> Option<String> {
    c.tag(b"b=")?;
    let kind = [&b"CT"[..], b"AS", b"TIAS"]
        .into_iter()
        .find(|k| c.opt(|c| c.tag(k)).is_some())?;
    c.tag(b":")?;
    let n = c.take_while(|x| x.is_ascii_digit());
    if n.is_empty() {
        return None;
    }
    let n = lossy(n);
    c.eol()?;
    Some(format!("{}:{n}", lossy(kind)))
}

/// `r=` and `z=`: four time fields.
fn sdp_times4(c: &mut SdpCur, prefix: &[u8]) -> Option<String> {
    c.tag(prefix)?;
    let mut f = vec![lossy(c.take_while(is_time_char))];
    for _ in 0..3 {
        c.space1()?;
        f.push(lossy(c.take_while(is_time_char)));
    }
    c.eol()?;
    Some(f.join(" "))
}

fn sdp_attribute(c: &mut SdpCur) -> Option<String> {
    c.tag(b"a=")?;
    let name = lossy(c.take_while(|x| x.is_ascii_alphabetic()));
    let val = c.opt(|c| {
        c.tag(b":")?;
        Some(c.till_eol())
    });
    c.eol()?;
    Some(match val {
        Some(v) => format!("{name}:{v}"),
        None => name,
    })
}

fn sdp_media(c: &mut SdpCur) -> Option<SdpMedia> {
    c.tag(b"m=")?;
    let media = [&b"audio"[..], b"video", b"text", b"application", b"message"]
        .into_iter()
        .find(|k| c.opt(|c| c.tag(k)).is_some())?;
    c.space1()?;
    let port = c.take_while(|x| x.is_ascii_digit());
    if port.is_empty() || port.len() > 5 {
        return None;
    }
    let port: u16 = std::str::from_utf8(port).ok()?.parse().ok()?;
    let ports = c.opt(|c| {
        c.tag(b"/")?;
        let n = c.take_while(|x| x.is_ascii_digit());
        (!n.is_empty() && n.len() <= 5).then(|| lossy(n))
    });
    c.space1()?;
    let proto = [&b"udp"[..], b"RTP/AVP", b"RTP/SAVP"]
        .into_iter()
        .find(|k| c.opt(|c| c.tag(k)).is_some())?;
    let fmt = c.many(|c| {
        c.space1()?;
        let f = c.take_while(|x| x.is_ascii_alphanumeric());
        (!f.is_empty() && f.len() <= 255).then(|| lossy(f))
    });
    if fmt.is_empty() {
        return None;
    }
    c.eol()?;
    let mut m = format!("{} {port}", lossy(media));
    if let Some(n) = ports.and_then(|n| n.parse::<u16>().ok()) {
        m.push_str(&format!("/{n}"));
    }
    m.push_str(&format!(" {} {}", lossy(proto), fmt.join(" ")));
    Some(SdpMedia {
        media: m,
        media_info: c.opt(sdp_info),
        connection_data: c.opt(sdp_connection),
        bandwidths: c.many(sdp_bandwidth),
        encryption_key: c.opt(|c| c.line(b"k=")),
        attributes: c.many(sdp_attribute),
    })
}

/// Parses an SDP body with Suricata's grammar (RFC 4566 order: `v=0`,
/// `o=`, `s=`, optional `i= u= e= p= c=`, `b=` lines, one `t=` with an
/// optional `r=`, optional `z= k=`, `a=` lines, media descriptions);
/// `None` when the session part does not parse. What follows the last
/// media description that parses is ignored.
pub fn parse_sdp(body: &[u8]) -> Option<Sdp> {
    let c = &mut SdpCur { b: body, i: 0 };
    c.tag(b"v=0")?;
    c.eol()?;
    c.tag(b"o=")?;
    let user = lossy(c.take_while(is_sdp_token));
    c.space1()?;
    let id = lossy(c.take_while(|x| x.is_ascii_digit()));
    c.space1()?;
    let ver = lossy(c.take_while(|x| x.is_ascii_digit()));
    c.space1()?;
    let net = lossy(c.take_while(|x| x.is_ascii_alphabetic()));
    c.space1()?;
    let at = lossy(c.take_while(|x| x.is_ascii_alphanumeric()));
    c.space1()?;
    let addr = c.till_eol();
    c.eol()?;
    c.tag(b"s=")?;
    let session_name = lossy(c.take_while(is_name_char));
    c.eol()?;
    let session_info = c.opt(sdp_info);
    let uri = c.opt(|c| {
        c.tag(b"u=")?;
        let u = lossy(c.take_while(is_sip_uri));
        c.eol()?;
        Some(u)
    });
    let email = c.opt(|c| c.line(b"e="));
    let phone_number = c.opt(|c| c.line(b"p="));
    let connection_data = c.opt(sdp_connection);
    let bandwidths = c.many(sdp_bandwidth);
    c.tag(b"t=")?;
    let start = c.take_while(|x| x.is_ascii_digit());
    c.space1()?;
    let stop = c.take_while(|x| x.is_ascii_digit());
    if start.is_empty() || stop.is_empty() {
        return None;
    }
    c.eol()?;
    let time = format!("{} {}", lossy(start), lossy(stop));
    let repeat = c.opt(|c| sdp_times4(c, b"r="));
    let timezone = c.opt(|c| sdp_times4(c, b"z="));
    let encryption_key = c.opt(|c| c.line(b"k="));
    let attributes = c.many(sdp_attribute);
    let media = c.many(sdp_media);
    Some(Sdp {
        origin: format!("{user} {id} {ver} {net} {at} {addr}"),
        session_name,
        session_info,
        uri,
        email,
        phone_number,
        connection_data,
        bandwidths,
        time_descriptions: vec![(time, repeat)],
        timezone,
        encryption_key,
        attributes,
        media,
    })
}

impl Sdp {
    /// Suricata's `sdp` object.
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        m.insert("origin".into(), json!(self.origin));
        m.insert("session_name".into(), json!(self.session_name));
        let opt = |m: &mut Map<String, Value>, k: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        };
        let list = |m: &mut Map<String, Value>, k: &str, v: &Vec<String>| {
            if !v.is_empty() {
                m.insert(k.into(), json!(v));
            }
        };
        opt(&mut m, "session_info", &self.session_info);
        opt(&mut m, "uri", &self.uri);
        opt(&mut m, "email", &self.email);
        opt(&mut m, "phone_number", &self.phone_number);
        opt(&mut m, "connection_data", &self.connection_data);
        list(&mut m, "bandwidths", &self.bandwidths);
        if !self.time_descriptions.is_empty() {
            let t: Vec<Value> = self
                .time_descriptions
                .iter()
                .map(|(t, r)| {
                    let mut o = Map::new();
                    o.insert("time".into(), json!(t));
                    opt(&mut o, "repeat_time", r);
                    Value::Object(o)
                })
                .collect();
            m.insert("time_descriptions".into(), Value::Array(t));
        }
        opt(&mut m, "timezone", &self.timezone);
        opt(&mut m, "encryption_key", &self.encryption_key);
        list(&mut m, "attributes", &self.attributes);
        if !self.media.is_empty() {
            let md: Vec<Value> = self
                .media
                .iter()
                .map(|d| {
                    let mut o = Map::new();
                    o.insert("media".into(), json!(d.media));
                    opt(&mut o, "media_info", &d.media_info);
                    opt(&mut o, "connection_data", &d.connection_data);
                    list(&mut o, "bandwidths", &d.bandwidths);
                    opt(&mut o, "encryption_key", &d.encryption_key);
                    list(&mut o, "attributes", &d.attributes);
                    Value::Object(o)
                })
                .collect();
            m.insert("media_descriptions".into(), Value::Array(md));
        }
        Value::Object(m)
    }
}

/// One SIP message: a request (to server) or a response (to client).
#[derive(Debug)]
pub struct SipTx {
    pub(crate) common: TxCommon,
    /// The direction the message travelled in.
    pub dir: Direction,
    pub head: SipHead,
    pub body: Vec<u8>,
    pub sdp: Option<Sdp>,
}

impl SipTx {
    pub fn id(&self) -> TxId {
        self.common.id
    }

    pub fn is_request(&self) -> bool {
        self.dir == Direction::ToServer
    }

    /// A message is complete once parsed; nothing else comes for it.
    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: true,
            response_complete: true,
        }
    }

    /// The instances of a buffer for the direction inspected: request
    /// fields on requests, response fields on responses; `sip.protocol`
    /// and the header buffers of the message's own direction.
    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        use BufferId::*;
        if dir != self.dir {
            return Vec::new();
        }
        let h = &self.head;
        fn one(v: &[u8]) -> Vec<&[u8]> {
            if v.is_empty() {
                Vec::new()
            } else {
                vec![v]
            }
        }
        let req = self.is_request();
        match id {
            SipMethod if req => one(&h.method),
            SipUri if req => one(&h.uri),
            SipRequestLine if req => one(&h.line),
            SipStatCode if !req => one(&h.code),
            SipStatMsg if !req => one(&h.reason),
            SipResponseLine if !req => one(&h.line),
            SipProtocol => one(&h.version),
            SipFrom => h.header(b"From").collect(),
            SipTo => h.header(b"To").collect(),
            SipVia => h.header(b"Via").collect(),
            SipUserAgent => h.header(b"User-Agent").collect(),
            SipContentType => h.header(b"Content-Type").collect(),
            SipContentLength => h.header(b"Content-Length").collect(),
            _ => Vec::new(),
        }
    }

    pub fn buffer(&self, id: BufferId, dir: Direction) -> Option<&[u8]> {
        self.buffers(id, dir).into_iter().next()
    }

    /// Suricata's `sip` object: `method`, `uri`, `version`,
    /// `request_line` for a request; `version`, `code`, `reason`,
    /// `response_line` for a response; `sdp` when the body is SDP.
    pub fn eve(&self) -> Value {
        let s = |v: &[u8]| Value::String(String::from_utf8_lossy(v).into_owned());
        let h = &self.head;
        let mut m = Map::new();
        if self.is_request() {
            m.insert("method".into(), s(&h.method));
            m.insert("uri".into(), s(&h.uri));
            m.insert("version".into(), s(&h.version));
            if let Some(sdp) = &self.sdp {
                m.insert("sdp".into(), sdp.eve());
            }
            if !h.line.is_empty() {
                m.insert("request_line".into(), s(&h.line));
            }
        } else {
            m.insert("version".into(), s(&h.version));
            m.insert("code".into(), s(&h.code));
            m.insert("reason".into(), s(&h.reason));
            if let Some(sdp) = &self.sdp {
                m.insert("sdp".into(), sdp.eve());
            }
            if !h.line.is_empty() {
                m.insert("response_line".into(), s(&h.line));
            }
        }
        Value::Object(m)
    }
}

/// One direction of a TCP flow.
#[derive(Debug, Default)]
struct Side {
    /// The message being read (header block, then body up to
    /// [`MAX_BODY`]).
    buf: Vec<u8>,
    /// Where the search for the end of the header block resumes.
    scan: usize,
    /// The parsed head of the message whose body is being read, with the
    /// body bytes still to come (kept up to [`MAX_BODY`], then skipped).
    head: Option<(SipHead, usize)>,
    /// Lost the message boundary (gap, unparsable message): waiting for a
    /// line that starts a message.
    desync: bool,
}

/// Per-flow SIP state.
#[derive(Debug)]
pub struct SipState {
    transport: Transport,
    max_head: usize,
    max_headers: usize,
    max_txs: usize,
    txs: VecDeque<SipTx>,
    next_id: TxId,
    sides: [Side; 2],
}

/// Whether `b` can start a message of `dir`: `Some(true)` yes,
/// `Some(false)` too short to tell, `None` no.
fn starts_message(dir: Direction, b: &[u8]) -> Option<bool> {
    let pre = |p: &[u8]| -> Option<bool> {
        let n = b.len().min(p.len());
        (b[..n] == p[..n]).then_some(n == p.len())
    };
    match dir {
        Direction::ToServer => {
            let mut more = false;
            for m in METHODS {
                let mut w = m.to_vec();
                w.push(b' ');
                match pre(&w) {
                    Some(true) => return Some(true),
                    Some(false) => more = true,
                    None => {}
                }
            }
            more.then_some(false)
        }
        Direction::ToClient => pre(b"SIP/"),
    }
}

impl SipState {
    pub fn new(transport: Transport, cfg: &AppLayerConfig) -> Self {
        SipState {
            transport,
            max_head: cfg.http_max_header_bytes.max(1024),
            max_headers: cfg.http_max_headers,
            max_txs: cfg.max_transactions.max(1),
            txs: VecDeque::new(),
            next_id: 0,
            sides: [Side::default(), Side::default()],
        }
    }

    pub fn transactions(&self) -> impl Iterator<Item = &SipTx> {
        self.txs.iter()
    }

    pub fn tx(&self, id: TxId) -> Option<&SipTx> {
        self.txs.iter().find(|t| t.common.id == id)
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut SipTx> {
        self.txs.iter_mut().find(|t| t.common.id == id)
    }

    pub(crate) fn retain(&mut self, keep: impl FnMut(&SipTx) -> bool) {
        self.txs.retain(keep);
    }

    /// An event on the flow's newest transaction, as Suricata sets it.
    fn event(&self, e: SipEvent, ev: &mut Vec<AppLayerEvent>) {
        ev.push(AppLayerEvent::Sip(e, self.txs.back().map(|t| t.common.id)));
    }

    fn push_tx(
        &mut self,
        dir: Direction,
        head: SipHead,
        body: Vec<u8>,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if self.txs.len() >= self.max_txs {
            self.txs.pop_front();
            self.event(SipEvent::TooManyTransactions, ev);
        }
        // Suricata parses any body as SDP, whatever its Content-Type.
        let sdp = if body.is_empty() {
            None
        } else {
            parse_sdp(&body)
        };
        let capped = head.headers_capped;
        let id = self.next_id;
        self.next_id += 1;
        self.txs.push_back(SipTx {
            common: TxCommon::new(id, ts),
            dir,
            head,
            body,
            sdp,
        });
        if capped {
            self.event(SipEvent::TooManyHeaders, ev);
        }
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        match self.transport {
            Transport::Udp => self.datagram(dir, data, ts, ev),
            Transport::Tcp => self.feed_tcp(dir, data, ts, ev),
        }
    }

    fn datagram(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if data.is_empty() {
            return;
        }
        match parse_head(dir, data, self.max_headers) {
            Ok((head, off)) => {
                let rest = &data[off.min(data.len())..];
                let n = head
                    .content_length()
                    .unwrap_or(rest.len())
                    .min(rest.len())
                    .min(MAX_BODY);
                self.push_tx(dir, head, rest[..n].to_vec(), ts, ev);
            }
            Err(Fail::Incomplete) => self.event(SipEvent::IncompleteData, ev),
            Err(Fail::Invalid) => self.event(SipEvent::InvalidData, ev),
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
        while !data.is_empty() {
            let side = &mut self.sides[d];
            // Reading a body.
            if let Some((_, remaining)) = side.head.as_mut() {
                let n = (*remaining).min(data.len());
                let keep = MAX_BODY.saturating_sub(side.buf.len()).min(n);
                side.buf.extend_from_slice(&data[..keep]);
                *remaining -= n;
                data = &data[n..];
                if *remaining == 0 {
                    self.complete_body(dir, ts, ev);
                    self.scan_heads(dir, ts, ev);
                }
                continue;
            }
            // Reading a header block.
            let room = (self.max_head + 4).saturating_sub(side.buf.len());
            let n = room.min(data.len());
            side.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            self.scan_heads(dir, ts, ev);
            let side = &mut self.sides[d];
            if side.head.is_none() && side.buf.len() > self.max_head {
                // No end of header block within the cap.
                side.buf.clear();
                side.scan = 0;
                side.desync = true;
                self.event(SipEvent::InvalidData, ev);
            }
        }
    }

    /// Parses the complete header blocks in the buffer of `dir`, leaving
    /// a partial one (or the body of the last) in it.
    fn scan_heads(&mut self, dir: Direction, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        loop {
            let side = &mut self.sides[d];
            if side.head.is_some() {
                return;
            }
            // CR LF before a start line is skipped.
            let lead = side
                .buf
                .iter()
                .position(|&c| c != b'\r' && c != b'\n')
                .unwrap_or(side.buf.len());
            if lead > 0 {
                side.buf.drain(..lead);
                side.scan = 0;
            }
            if side.buf.is_empty() {
                return;
            }
            if side.desync {
                match starts_message(dir, &side.buf) {
                    Some(true) => side.desync = false,
                    Some(false) => return,
                    None => {
                        // Drop this line and try the next.
                        match memchr::memchr(b'\n', &side.buf) {
                            Some(i) => {
                                side.buf.drain(..=i);
                            }
                            None => side.buf.clear(),
                        }
                        side.scan = 0;
                        continue;
                    }
                }
            }
            let from = side.scan.saturating_sub(3);
            let Some(p) = memchr::memmem::find(&side.buf[from..], b"\r\n\r\n") else {
                side.scan = side.buf.len();
                return;
            };
            let end = from + p + 4;
            let parsed = parse_head(dir, &side.buf[..end], self.max_headers);
            let side = &mut self.sides[d];
            side.scan = 0;
            match parsed {
                Ok((head, off)) => {
                    side.buf.drain(..off.min(end));
                    let want = head.content_length().unwrap_or(0);
                    let avail = side.buf.len();
                    if avail <= want {
                        // The body is still coming.
                        side.buf.truncate(MAX_BODY);
                        side.head = Some((head, want - avail));
                        if avail == want {
                            self.complete_body(dir, ts, ev);
                            continue;
                        }
                        return;
                    }
                    // More than the body is here: the next message follows.
                    let rest = side.buf.split_off(want);
                    let mut body = std::mem::replace(&mut side.buf, rest);
                    body.truncate(MAX_BODY);
                    self.push_tx(dir, head, body, ts, ev);
                }
                Err(e) => {
                    side.buf.drain(..end);
                    side.desync = true;
                    let e = match e {
                        Fail::Incomplete => SipEvent::IncompleteData,
                        Fail::Invalid => SipEvent::InvalidData,
                    };
                    self.event(e, ev);
                }
            }
        }
    }

    /// The body of the message being read is complete: the transaction is
    /// made, and header blocks already buffered behind it are parsed.
    fn complete_body(&mut self, dir: Direction, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let side = &mut self.sides[dir.index()];
        let Some((head, _)) = side.head.take() else {
            return;
        };
        let body = std::mem::take(&mut side.buf);
        side.scan = 0;
        self.push_tx(dir, head, body, ts, ev);
    }

    /// A gap in `dir`: the message being read is lost (a message whose
    /// body was being read is kept with what came of it).
    pub fn on_gap(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        if self.transport != Transport::Tcp {
            return;
        }
        self.complete_body(dir, 0, ev);
        let side = &mut self.sides[dir.index()];
        side.buf.clear();
        side.scan = 0;
        side.desync = true;
    }

    /// The direction ended: a message still being read is incomplete.
    pub fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        if self.transport != Transport::Tcp {
            return;
        }
        let d = dir.index();
        let pending = self.sides[d].head.is_some();
        if pending {
            // The body is short: keep the message with what came.
            self.complete_body(dir, 0, ev);
            self.event(SipEvent::IncompleteData, ev);
        } else if !self.sides[d].buf.is_empty() && !self.sides[d].desync {
            self.event(SipEvent::IncompleteData, ev);
        }
        let side = &mut self.sides[d];
        side.buf = Vec::new();
        side.scan = 0;
        side.head = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQ: &[u8] = b"INVITE sip:bob@example.com SIP/2.0\r\n\
Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\r\n\
v: SIP/2.0/TCP 10.0.0.2\r\n\
f: <sip:alice@example.com>;tag=1\r\n\
To: <sip:bob@example.com>\r\n\
User-Agent: TestPhone 1.0\r\n\
Content-Type: application/sdp\r\n\
Content-Length: 73\r\n\
\r\n\
v=0\r\no=alice 1 1 IN IP4 10.0.0.1\r\ns=call\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n";

    const RESP: &[u8] = b"SIP/2.0 180 Ringing\r\nt: <sip:bob@example.com>;tag=2\r\nl: 0\r\n\r\n";

    fn state(t: Transport) -> SipState {
        SipState::new(t, &AppLayerConfig::default())
    }

    fn bufs(s: &SipState, id: TxId, b: BufferId, dir: Direction) -> Vec<Vec<u8>> {
        s.tx(id)
            .unwrap()
            .buffers(b, dir)
            .into_iter()
            .map(|x| x.to_vec())
            .collect()
    }

    #[test]
    fn request_fields_compact_headers_and_sdp() {
        assert_eq!(
            REQ.len() - REQ.windows(4).position(|w| w == b"\r\n\r\n").unwrap() - 4,
            73
        );
        let mut s = state(Transport::Udp);
        let mut ev = Vec::new();
        s.feed(Direction::ToServer, REQ, 1, &mut ev);
        assert!(ev.is_empty(), "{ev:?}");
        let up = Direction::ToServer;
        let t = s.tx(0).unwrap();
        assert_eq!(t.buffer(BufferId::SipMethod, up), Some(&b"INVITE"[..]));
        assert_eq!(
            t.buffer(BufferId::SipUri, up),
            Some(&b"sip:bob@example.com"[..])
        );
        assert_eq!(t.buffer(BufferId::SipProtocol, up), Some(&b"SIP/2.0"[..]));
        assert_eq!(
            t.buffer(BufferId::SipRequestLine, up),
            Some(&b"INVITE sip:bob@example.com SIP/2.0"[..])
        );
        // Response buffers and the other direction: nothing.
        assert_eq!(t.buffer(BufferId::SipStatCode, up), None);
        assert_eq!(t.buffer(BufferId::SipFrom, Direction::ToClient), None);
        // `v:` and `f:` are Via and From; Via is a multi-buffer.
        assert_eq!(
            bufs(&s, 0, BufferId::SipVia, up),
            vec![
                b"SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1".to_vec(),
                b"SIP/2.0/TCP 10.0.0.2".to_vec()
            ]
        );
        assert_eq!(
            bufs(&s, 0, BufferId::SipFrom, up),
            vec![b"<sip:alice@example.com>;tag=1".to_vec()]
        );
        assert_eq!(
            bufs(&s, 0, BufferId::SipUserAgent, up),
            vec![b"TestPhone 1.0".to_vec()]
        );
        assert_eq!(
            bufs(&s, 0, BufferId::SipContentLength, up),
            vec![b"73".to_vec()]
        );
        let e = t.eve();
        assert_eq!(e["method"], "INVITE");
        assert_eq!(e["request_line"], "INVITE sip:bob@example.com SIP/2.0");
        assert_eq!(e["sdp"]["origin"], "alice 1 1 IN IP4 10.0.0.1");
        assert_eq!(e["sdp"]["session_name"], "call");
        assert_eq!(e["sdp"]["time_descriptions"][0]["time"], "0 0");
        assert_eq!(
            e["sdp"]["media_descriptions"][0]["media"],
            "audio 4000 RTP/AVP 0"
        );
        assert!(e.get("code").is_none());
    }

    #[test]
    fn response_fields() {
        let mut s = state(Transport::Udp);
        let mut ev = Vec::new();
        s.feed(Direction::ToClient, RESP, 1, &mut ev);
        let dn = Direction::ToClient;
        let t = s.tx(0).unwrap();
        assert_eq!(t.buffer(BufferId::SipStatCode, dn), Some(&b"180"[..]));
        assert_eq!(t.buffer(BufferId::SipStatMsg, dn), Some(&b"Ringing"[..]));
        assert_eq!(
            t.buffer(BufferId::SipResponseLine, dn),
            Some(&b"SIP/2.0 180 Ringing"[..])
        );
        assert_eq!(t.buffer(BufferId::SipMethod, dn), None);
        assert_eq!(
            t.buffer(BufferId::SipTo, dn),
            Some(&b"<sip:bob@example.com>;tag=2"[..])
        );
        assert_eq!(t.buffer(BufferId::SipTo, Direction::ToServer), None);
        let e = t.eve();
        assert_eq!(e["code"], "180");
        assert_eq!(e["reason"], "Ringing");
        assert_eq!(e["response_line"], "SIP/2.0 180 Ringing");
    }

    #[test]
    fn malformed_and_truncated_datagrams_raise_events() {
        let mut s = state(Transport::Udp);
        let mut ev = Vec::new();
        // A response sent to the server is not a request.
        s.feed(Direction::ToServer, RESP, 1, &mut ev);
        assert_eq!(ev, vec![AppLayerEvent::Sip(SipEvent::InvalidData, None)]);
        ev.clear();
        s.feed(Direction::ToServer, REQ, 2, &mut ev);
        // Cut inside the headers: incomplete, filed on the last message.
        s.feed(Direction::ToServer, &REQ[..60], 3, &mut ev);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Sip(SipEvent::IncompleteData, Some(0))]
        );
        assert_eq!(s.transactions().count(), 1);
    }

    #[test]
    fn tcp_byte_at_a_time_with_body_framing() {
        let mut s = state(Transport::Tcp);
        let mut ev = Vec::new();
        let mut stream = b"\r\n".to_vec();
        stream.extend_from_slice(REQ);
        stream.extend_from_slice(b"BYE sip:bob@example.com SIP/2.0\r\nContent-Length: 0\r\n\r\n");
        for &c in &stream {
            s.feed(Direction::ToServer, &[c], 1, &mut ev);
        }
        assert!(ev.is_empty(), "{ev:?}");
        let txs: Vec<&SipTx> = s.transactions().collect();
        assert_eq!(txs.len(), 2);
        assert_eq!(txs[0].body.len(), 73);
        assert!(txs[0].sdp.is_some());
        assert_eq!(
            txs[1].buffer(BufferId::SipMethod, Direction::ToServer),
            Some(&b"BYE"[..])
        );
        // The same stream in one piece gives the same messages.
        let mut w = state(Transport::Tcp);
        w.feed(Direction::ToServer, &stream, 1, &mut ev);
        let whole: Vec<_> = w
            .transactions()
            .map(|t| (t.head.clone(), t.body.clone()))
            .collect();
        let bytes: Vec<_> = txs
            .iter()
            .map(|t| (t.head.clone(), t.body.clone()))
            .collect();
        assert_eq!(whole, bytes);
    }

    #[test]
    fn tcp_gap_resynchronises_on_next_message() {
        let mut s = state(Transport::Tcp);
        let mut ev = Vec::new();
        s.feed(Direction::ToClient, &RESP[..20], 1, &mut ev);
        s.on_gap(Direction::ToClient, &mut ev);
        // The rest of the lost message, then a whole one.
        s.feed(Direction::ToClient, &RESP[25..], 2, &mut ev);
        s.feed(Direction::ToClient, RESP, 3, &mut ev);
        let txs: Vec<&SipTx> = s.transactions().collect();
        assert_eq!(txs.len(), 1);
        assert_eq!(
            txs[0].buffer(BufferId::SipStatCode, Direction::ToClient),
            Some(&b"180"[..])
        );
    }

    #[test]
    fn tcp_invalid_message_is_skipped_and_counted() {
        let mut s = state(Transport::Tcp);
        let mut ev = Vec::new();
        s.feed(
            Direction::ToServer,
            b"INVITE bad<uri> SIP/2.0\r\n\r\n",
            1,
            &mut ev,
        );
        assert_eq!(ev, vec![AppLayerEvent::Sip(SipEvent::InvalidData, None)]);
        s.feed(
            Direction::ToServer,
            b"ACK sip:a@b SIP/2.0\r\n\r\n",
            2,
            &mut ev,
        );
        assert_eq!(s.transactions().count(), 1);
    }

    #[test]
    fn caps_hold_for_large_bodies_and_header_blocks() {
        let mut s = state(Transport::Tcp);
        let mut ev = Vec::new();
        let big = 10 * MAX_BODY;
        let head = format!("MESSAGE sip:a@b SIP/2.0\r\nContent-Length: {big}\r\n\r\n");
        s.feed(Direction::ToServer, head.as_bytes(), 1, &mut ev);
        let chunk = vec![b'x'; 4096];
        for _ in 0..big / 4096 {
            s.feed(Direction::ToServer, &chunk, 1, &mut ev);
            assert!(s.sides[0].buf.len() <= MAX_BODY);
        }
        s.feed(Direction::ToServer, &chunk[..big % 4096], 1, &mut ev);
        assert_eq!(s.transactions().count(), 1);
        assert_eq!(s.tx(0).unwrap().body.len(), MAX_BODY);
        // A header block that never ends is dropped at the cap.
        let mut h = b"INFO sip:a@b SIP/2.0\r\n".to_vec();
        h.extend(std::iter::repeat_n(b'A', 200_000));
        s.feed(Direction::ToServer, &h, 2, &mut ev);
        assert!(s.sides[0].buf.len() <= s.max_head + 4);
        assert!(ev.contains(&AppLayerEvent::Sip(SipEvent::InvalidData, Some(0))));
        // Truncated at the end of the stream: incomplete.
        let mut t = state(Transport::Tcp);
        let mut ev = Vec::new();
        t.feed(Direction::ToServer, &REQ[..REQ.len() - 5], 1, &mut ev);
        t.finish(Direction::ToServer, &mut ev);
        assert_eq!(t.transactions().count(), 1);
        assert!(ev.contains(&AppLayerEvent::Sip(SipEvent::IncompleteData, Some(0))));
    }

    #[test]
    fn folded_header_value_is_kept_as_sent() {
        let m = b"OPTIONS sip:a@b SIP/2.0\r\nFrom: <sip:x@y>\r\n ;tag=9  \r\n\r\n";
        let (h, off) = parse_head(Direction::ToServer, m, 16).unwrap();
        assert_eq!(off, m.len());
        assert_eq!(h.header(b"From").next(), Some(&b"<sip:x@y>\r\n ;tag=9"[..]));
        assert_eq!(
            parse_head(Direction::ToServer, &m[..30], 16),
            Err(Fail::Incomplete)
        );
    }

    #[test]
    fn sdp_grammar_as_suricata() {
        assert!(parse_sdp(b"o=x 1 1 IN IP4 a\r\ns=y\r\nt=0 0\r\n").is_none());
        assert!(parse_sdp(b"v=0\r\ns=y\r\nt=0 0\r\n").is_none());
        // The session name is letters, digits and blanks only.
        assert!(parse_sdp(b"v=0\no=x 1 1 IN IP4 h\ns=-\nt=0 0\n").is_none());
        // A time line is required.
        assert!(parse_sdp(b"v=0\no=x 1 1 IN IP4 h\ns=y\n").is_none());
        let s = parse_sdp(
            b"v=0\no=x 1 2 IN IP4 h.example\ns=y z\nc=IN IP4 224.2.1.1/127/3\nb=AS:64\nt=0 0\n\
r=7d 1h 0 25h\na=tool:t\nm=video 1/2 RTP/AVP 31 32\nb=AS:128\na=recvonly\n\
m=audio 5 RTP/AVPF 0\nm=audio 6 udp 0\n",
        )
        .unwrap();
        assert_eq!(s.origin, "x 1 2 IN IP4 h.example");
        assert_eq!(s.session_name, "y z");
        assert_eq!(s.connection_data.as_deref(), Some("IN IP4 224.2.1.1/127/3"));
        assert_eq!(s.bandwidths, vec!["AS:64"]);
        assert_eq!(
            s.time_descriptions,
            vec![("0 0".into(), Some("7d 1h 0 25h".into()))]
        );
        assert_eq!(s.attributes, vec!["tool:t"]);
        // The media list stops at the first that does not parse.
        assert_eq!(s.media.len(), 1);
        assert_eq!(s.media[0].media, "video 1/2 RTP/AVP 31 32");
        assert_eq!(s.media[0].bandwidths, vec!["AS:128"]);
        assert_eq!(s.media[0].attributes, vec!["recvonly"]);
        // A multicast address needs its TTL (else the line is not a
        // connection line and the session does not parse).
        assert!(parse_sdp(b"v=0\no=x 1 1 IN IP4 h\ns=y\nc=IN IP4 224.2.1.1\nt=0 0\n").is_none());
        let e = s.eve();
        assert_eq!(e["time_descriptions"][0]["repeat_time"], "7d 1h 0 25h");
        assert_eq!(e["media_descriptions"][0]["attributes"][0], "recvonly");
    }
}
