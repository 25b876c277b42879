//! HTTP/2 in clear text (h2c), as Suricata's `rust/src/http2`: the
//! client's connection preface, then frames (RFC 9113 §4) in each
//! direction. Every stream is a transaction (its request side the
//! client's frames, its response side the server's); a frame on stream
//! 0 (SETTINGS, PING, GOAWAY, a connection WINDOW_UPDATE) is a
//! transaction of its own, complete at once, as Suricata's global
//! transactions.
//!
//! Header blocks (HEADERS, PUSH_PROMISE and their CONTINUATION frames)
//! are decoded with HPACK (`loona-hpack`), one decoder, and so one
//! dynamic table, per direction. The flow reaches this parser either by
//! the client preface (prior knowledge, any port) or by an HTTP/1.1
//! `Upgrade: h2c` answered by `101 Switching Protocols`
//! ([`Http2State::upgraded`]: the HTTP/1 request becomes stream 1's).
//!
//! DNS over HTTPS carried in clear (`application/dns-message`: a GET's
//! `dns=` parameter in base64url, or the body of a POST or response) is
//! parsed with the DNS parser, so that `dns.*` keywords inspect it.
//!
//! Caps: a frame payload is buffered up to [`MAX_FRAME`] (larger frames
//! raise `long_frame_data` and are skipped), a header block up to
//! `http_max_header_bytes`, headers per side up to `http_max_headers`,
//! bodies up to the HTTP body limits, transactions up to
//! `max_transactions` (`too_many_streams`), frames remembered per side
//! up to [`MAX_FRAMES`]. A gap loses the framing: the direction is no
//! longer parsed.

use std::collections::VecDeque;

use serde_json::{json, Map, Value};

use crate::dns::{DnsMessage, DnsTx};
use crate::events::Http2Event;
use crate::http::{Header, HttpTx};
use crate::state::{TxCommon, TxProgress};
use crate::{AppLayerConfig, AppLayerEvent, BufferId, Direction, Timestamp, TxId};

/// The client connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Largest frame payload buffered (Suricata's
/// `HTTP2_MAX_HANDLED_FRAME_SIZE`).
pub const MAX_FRAME: usize = 65536;
/// Frames remembered per transaction side (for `http2.frametype` and the
/// other frame keywords).
pub const MAX_FRAMES: usize = 64;
/// Largest dynamic table a peer may ask for (Suricata's
/// `HTTP2_MAX_TABLESIZE`).
const MAX_TABLE: usize = 65536;

pub const FRAME_DATA: u8 = 0;
pub const FRAME_HEADERS: u8 = 1;
pub const FRAME_PRIORITY: u8 = 2;
pub const FRAME_RST_STREAM: u8 = 3;
pub const FRAME_SETTINGS: u8 = 4;
pub const FRAME_PUSH_PROMISE: u8 = 5;
pub const FRAME_PING: u8 = 6;
pub const FRAME_GOAWAY: u8 = 7;
pub const FRAME_WINDOW_UPDATE: u8 = 8;
pub const FRAME_CONTINUATION: u8 = 9;

const FLAG_END_STREAM: u8 = 0x1;
const FLAG_END_HEADERS: u8 = 0x4;
const FLAG_PADDED: u8 = 0x8;
const FLAG_PRIORITY: u8 = 0x20;

/// Frame type names as Suricata's `http2.frametype` and EVE write them.
pub const FRAME_TYPES: [&str; 10] = [
    "DATA",
    "HEADERS",
    "PRIORITY",
    "RST_STREAM",
    "SETTINGS",
    "PUSH_PROMISE",
    "PING",
    "GOAWAY",
    "WINDOW_UPDATE",
    "CONTINUATION",
];

/// Error code names (RFC 9113 §7), for `http2.errorcode` and EVE.
pub const ERROR_CODES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// Settings names (RFC 9113 §6.5.2), for `http2.settings` and EVE.
pub const SETTINGS: [&str; 6] = [
    "SETTINGS_HEADER_TABLE_SIZE",
    "SETTINGS_ENABLE_PUSH",
    "SETTINGS_MAX_CONCURRENT_STREAMS",
    "SETTINGS_INITIAL_WINDOW_SIZE",
    "SETTINGS_MAX_FRAME_SIZE",
    "SETTINGS_MAX_HEADER_LIST_SIZE",
];

pub fn frame_type_code(name: &str) -> Option<u8> {
    FRAME_TYPES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| i as u8)
}

pub fn error_code(name: &str) -> Option<u32> {
    ERROR_CODES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| i as u32)
}

pub fn settings_id(name: &str) -> Option<u16> {
    SETTINGS
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| i as u16 + 1)
}

/// What one side of a transaction saw, beyond its headers and body.
#[derive(Debug, Default)]
pub struct Http2Side {
    /// Frame types, in order (at most [`MAX_FRAMES`]).
    pub frames: Vec<u8>,
    /// RST_STREAM / GOAWAY error codes.
    pub error_codes: Vec<u32>,
    /// PRIORITY weights and HEADERS priority weights.
    pub priorities: Vec<u8>,
    /// WINDOW_UPDATE increments.
    pub windows: Vec<u32>,
    /// HPACK dynamic table size updates.
    pub size_updates: Vec<u64>,
    /// SETTINGS (identifier, value).
    pub settings: Vec<(u16, u32)>,
    pub headers: Vec<Header>,
    pub body: Vec<u8>,
    /// A header block of this side was decoded.
    pub headers_done: bool,
    /// END_STREAM (or RST_STREAM) seen.
    pub complete: bool,
    /// `application/dns-message` content.
    pub dns_body: bool,
    /// The DNS message of a DoH request or response.
    pub doh: Option<DnsTx>,
    /// Synthesised buffers, rebuilt when a header block completes:
    /// `name: value` lines, the `http.header` block, `http.header_names`.
    lines: Vec<Vec<u8>>,
    names: Vec<Vec<u8>>,
    header_block: Vec<u8>,
    header_names: Vec<u8>,
    host_norm: Option<Vec<u8>>,
}

impl Http2Side {
    fn frame(&mut self, t: u8) {
        if self.frames.len() < MAX_FRAMES {
            self.frames.push(t);
        }
    }

    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name.as_bytes()))
            .map(|h| h.value.as_slice())
    }

    fn rebuild(&mut self) {
        self.lines = self
            .headers
            .iter()
            .map(|h| {
                let mut l = h.name.clone();
                l.extend_from_slice(b": ");
                l.extend_from_slice(&h.value);
                l
            })
            .collect();
        self.names = self.headers.iter().map(|h| h.name.clone()).collect();
        self.header_block.clear();
        for l in &self.lines {
            self.header_block.extend_from_slice(l);
            self.header_block.extend_from_slice(b"\r\n");
        }
        self.header_names = b"\r\n".to_vec();
        for h in &self.headers {
            self.header_names.extend_from_slice(&h.name);
            self.header_names.extend_from_slice(b"\r\n");
        }
        self.header_names.extend_from_slice(b"\r\n");
        self.host_norm = self
            .header(":authority")
            .or_else(|| self.header("host"))
            .map(|h| normalize_host(h).to_ascii_lowercase());
    }
}

/// `host` without user info and port (Suricata's
/// `http2_normalize_host`).
pub fn normalize_host(v: &[u8]) -> &[u8] {
    let v = match memchr::memrchr(b'@', v) {
        Some(i) => &v[i + 1..],
        None => v,
    };
    if v.first() == Some(&b'[') {
        if let Some(i) = memchr::memchr(b']', v) {
            return &v[..=i];
        }
    }
    match memchr::memchr(b':', v) {
        Some(i) => &v[..i],
        None => v,
    }
}

/// One stream (or one connection-level frame).
#[derive(Debug, Default)]
pub struct Http2Tx {
    pub(crate) common: TxCommon,
    pub stream_id: u32,
    /// To-server, to-client.
    pub sides: [Http2Side; 2],
}

impl Http2Tx {
    pub fn id(&self) -> TxId {
        self.common.id
    }

    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.sides[0].complete,
            response_complete: self.sides[1].complete,
        }
    }

    pub fn side(&self, dir: Direction) -> &Http2Side {
        &self.sides[dir.index()]
    }

    pub fn method(&self) -> Option<&[u8]> {
        self.sides[0].header(":method")
    }

    pub fn path(&self) -> Option<&[u8]> {
        self.sides[0].header(":path")
    }

    pub fn status(&self) -> Option<&[u8]> {
        self.sides[1].header(":status")
    }

    /// One buffer (the first of a multi-buffer).
    pub fn buffer(&self, id: BufferId, dir: Direction) -> Option<&[u8]> {
        self.buffers(id, dir).into_iter().next()
    }

    /// The instances of an inspection buffer, as Suricata's HTTP/2
    /// getters build them.
    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        use BufferId::*;
        let d = dir.index();
        let req = &self.sides[0];
        let resp = &self.sides[1];
        let side = &self.sides[d];
        fn one(v: Option<&[u8]>) -> Vec<&[u8]> {
            v.into_iter().collect()
        }
        match id {
            HttpMethod => one(self.method()),
            HttpUri | HttpUriRaw => one(self.path()),
            HttpHost => one(req.host_norm.as_deref()),
            HttpHostRaw => one(req.header(":authority").or_else(|| req.header("host"))),
            HttpUserAgent => one(req.header("user-agent")),
            HttpReferer => one(req.header("referer")),
            HttpAccept => one(req.header("accept")),
            HttpAcceptEnc => one(req.header("accept-encoding")),
            HttpAcceptLang => one(req.header("accept-language")),
            HttpCookie => one(side.header(if d == 0 { "cookie" } else { "set-cookie" })),
            HttpContentType => one(side.header("content-type")),
            HttpContentLen => one(side.header("content-length")),
            HttpConnection => one(side.header("connection")),
            HttpServer => one(resp.header("server")),
            HttpLocation => one(resp.header("location")),
            HttpStatCode => one(self.status()),
            HttpProtocol if side.headers_done => vec![b"HTTP/2".as_slice()],
            HttpHeader | HttpHeaderRaw if side.headers_done && !side.header_block.is_empty() => {
                vec![side.header_block.as_slice()]
            }
            HttpHeaderNames if side.headers_done => vec![side.header_names.as_slice()],
            HttpRequestHeader => req.lines.iter().map(|l| l.as_slice()).collect(),
            HttpResponseHeader => resp.lines.iter().map(|l| l.as_slice()).collect(),
            Http2Header => side.lines.iter().map(|l| l.as_slice()).collect(),
            Http2HeaderName => side.names.iter().map(|l| l.as_slice()).collect(),
            HttpRequestBody if !req.body.is_empty() => vec![req.body.as_slice()],
            HttpResponseBody if !resp.body.is_empty() => vec![resp.body.as_slice()],
            FileData if !side.body.is_empty() => vec![side.body.as_slice()],
            DnsQuery | DnsQueriesRrname | DnsAnswersRrname | DnsResponseRrname => side
                .doh
                .as_ref()
                .map(|t| t.buffers(id, dir))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    fn side_eve(&self, d: usize) -> Map<String, Value> {
        let s = &self.sides[d];
        let mut m = Map::new();
        if !s.settings.is_empty() {
            let v: Vec<Value> = s
                .settings
                .iter()
                .map(|(id, val)| {
                    let name = usize::from(*id)
                        .checked_sub(1)
                        .and_then(|i| SETTINGS.get(i))
                        .map_or_else(|| format!("{id}"), |n| n.to_string());
                    json!({"settings_id": name, "settings_value": val})
                })
                .collect();
            m.insert("settings".into(), Value::Array(v));
        }
        if let Some(&e) = s.error_codes.last() {
            m.insert("error_code".into(), json!(error_name(e)));
        }
        if let Some(&p) = s.priorities.last() {
            m.insert("priority".into(), json!(p));
        }
        if let Some(&w) = s.windows.last() {
            m.insert("window".into(), json!(w));
        }
        m
    }

    /// The EVE `http` object of an HTTP/2 transaction (Suricata's
    /// `http2` logger: `version`, the headers, the HTTP/1 fields it
    /// derives, and the `http2` sub-object).
    pub fn eve(&self) -> Value {
        let mut o = Map::new();
        o.insert("version".into(), json!("2"));
        let hdrs = |s: &Http2Side| -> Value {
            Value::Array(
                s.headers
                    .iter()
                    .map(|h| {
                        json!({"name": String::from_utf8_lossy(&h.name),
                               "value": String::from_utf8_lossy(&h.value)})
                    })
                    .collect(),
            )
        };
        if !self.sides[0].headers.is_empty() {
            o.insert("request_headers".into(), hdrs(&self.sides[0]));
        }
        if !self.sides[1].headers.is_empty() {
            o.insert("response_headers".into(), hdrs(&self.sides[1]));
        }
        let req = &self.sides[0];
        let s = |v: &[u8]| json!(String::from_utf8_lossy(v));
        if let Some(h) = req.header("host").or_else(|| req.header(":authority")) {
            o.insert("hostname".into(), s(normalize_host(h)));
        }
        if let Some(v) = self.path() {
            o.insert("url".into(), s(v));
        }
        if let Some(v) = req.header("user-agent") {
            o.insert("http_user_agent".into(), s(v));
        }
        if let Some(v) = self.method() {
            o.insert("http_method".into(), s(v));
        }
        if let Some(v) = self.status() {
            let code = std::str::from_utf8(v)
                .ok()
                .and_then(|c| c.parse::<u64>().ok());
            match code {
                Some(c) => o.insert("status".into(), json!(c)),
                None => o.insert("status".into(), s(v)),
            };
        }
        if let Some(v) = self.sides[1].header("content-type") {
            o.insert("http_content_type".into(), s(v));
        }
        let mut h2 = Map::new();
        h2.insert("stream_id".into(), json!(self.stream_id));
        let rq = self.side_eve(0);
        if !rq.is_empty() {
            h2.insert("request".into(), Value::Object(rq));
        }
        let rs = self.side_eve(1);
        if !rs.is_empty() {
            h2.insert("response".into(), Value::Object(rs));
        }
        o.insert("http2".into(), Value::Object(h2));
        Value::Object(o)
    }

    /// The DNS object of a DoH transaction (response, else request), for
    /// EVE: Suricata 9's doh2 alerts carry it beside `http`.
    pub fn dns_eve(&self) -> Option<Value> {
        self.sides
            .iter()
            .rev()
            .find_map(|s| s.doh.as_ref())
            .map(|t| {
                // Suricata's doh2 object has no `grouped` answers.
                let mut v = t.eve();
                if let Some(o) = v.as_object_mut() {
                    o.remove("grouped");
                }
                v
            })
    }
}

pub fn error_name(e: u32) -> String {
    ERROR_CODES
        .get(e as usize)
        .map_or_else(|| format!("{e}"), |n| n.to_string())
}

/// A frame header (RFC 9113 §4.1).
#[derive(Debug, Clone, Copy)]
struct FrameHead {
    len: u32,
    ftype: u8,
    flags: u8,
    stream: u32,
}

/// A header block being gathered across CONTINUATION frames.
struct Block {
    stream: u32,
    /// The stream whose request headers a PUSH_PROMISE block carries.
    promised: Option<u32>,
    end_stream: bool,
    data: Vec<u8>,
    capped: bool,
}

/// Parsing state of one direction.
struct DirParser {
    /// To-server: bytes of the preface still expected.
    preface_left: usize,
    head: [u8; 9],
    head_len: usize,
    frame: Option<FrameHead>,
    /// Payload bytes of the current frame not received yet.
    remaining: usize,
    payload: Vec<u8>,
    /// The current frame's payload is too long to keep.
    skipping: bool,
    block: Option<Block>,
    decoder: loona_hpack::Decoder<'static>,
    /// Framing lost (a gap, a wrong preface): data is dropped.
    lost: bool,
}

impl DirParser {
    fn new(dir: Direction) -> Self {
        let mut decoder = loona_hpack::Decoder::new();
        decoder.set_max_allowed_table_size(MAX_TABLE);
        DirParser {
            preface_left: if dir == Direction::ToServer {
                PREFACE.len()
            } else {
                0
            },
            head: [0; 9],
            head_len: 0,
            frame: None,
            remaining: 0,
            payload: Vec::new(),
            skipping: false,
            block: None,
            decoder,
            lost: false,
        }
    }
}

/// Per-flow HTTP/2 state.
pub struct Http2State {
    max_header_bytes: usize,
    max_headers: usize,
    body_limit: [usize; 2],
    max_txs: usize,
    txs: VecDeque<Http2Tx>,
    next_id: TxId,
    dirs: [DirParser; 2],
}

impl Http2State {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        Http2State {
            max_header_bytes: cfg.http_max_header_bytes.max(1024),
            max_headers: cfg.http_max_headers.max(1),
            body_limit: [cfg.http_request_body_limit, cfg.http_response_body_limit],
            max_txs: cfg.max_transactions.max(1),
            txs: VecDeque::new(),
            next_id: 0,
            dirs: [
                DirParser::new(Direction::ToServer),
                DirParser::new(Direction::ToClient),
            ],
        }
    }

    /// The state after an HTTP/1.1 `Upgrade: h2c` was accepted: the
    /// upgrade request is stream 1's request (header names lower-cased,
    /// with the pseudo headers Suricata derives from the request line);
    /// its response comes as HTTP/2 frames. The client still sends the
    /// preface.
    pub fn upgraded(cfg: &AppLayerConfig, req: &HttpTx, ts: Timestamp) -> Self {
        let mut s = Http2State::new(cfg);
        let mut headers = vec![
            Header {
                name: b":method".to_vec(),
                value: req.method.clone(),
            },
            Header {
                name: b":path".to_vec(),
                value: req.uri_raw.clone(),
            },
        ];
        for h in &req.request_headers {
            if headers.len() >= s.max_headers {
                break;
            }
            headers.push(Header {
                name: h.name.to_ascii_lowercase(),
                value: h.value.clone(),
            });
        }
        let id = s.next_id;
        s.next_id += 1;
        let mut tx = Http2Tx {
            common: TxCommon::new(id, ts),
            stream_id: 1,
            sides: Default::default(),
        };
        tx.sides[0].headers = headers;
        tx.sides[0].headers_done = true;
        tx.sides[0].complete = true;
        tx.sides[0].body = req.request_body.clone();
        tx.sides[0].rebuild();
        s.txs.push_back(tx);
        s
    }

    pub fn transactions(&self) -> impl Iterator<Item = &Http2Tx> {
        self.txs.iter()
    }

    pub fn tx(&self, id: TxId) -> Option<&Http2Tx> {
        self.txs.iter().find(|t| t.common.id == id)
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut Http2Tx> {
        self.txs.iter_mut().find(|t| t.common.id == id)
    }

    pub(crate) fn retain(&mut self, keep: impl FnMut(&Http2Tx) -> bool) {
        self.txs.retain(keep);
    }

    fn ev(ev: &mut Vec<AppLayerEvent>, e: Http2Event, tx: Option<TxId>) {
        ev.push(AppLayerEvent::Http2(e, tx));
    }

    fn last_id(&self) -> Option<TxId> {
        self.txs.back().map(|t| t.common.id)
    }

    fn new_tx(&mut self, stream: u32, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) -> usize {
        if self.txs.len() >= self.max_txs {
            self.txs.pop_front();
            Self::ev(ev, Http2Event::TooManyStreams, self.last_id());
        }
        let id = self.next_id;
        self.next_id += 1;
        self.txs.push_back(Http2Tx {
            common: TxCommon::new(id, ts),
            stream_id: stream,
            sides: Default::default(),
        });
        self.txs.len() - 1
    }

    /// The transaction of a stream (created when new), or a new
    /// connection-level one for stream 0 (complete at once).
    fn stream_tx(&mut self, stream: u32, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) -> usize {
        if stream == 0 {
            let i = self.new_tx(0, ts, ev);
            self.txs[i].sides[0].complete = true;
            self.txs[i].sides[1].complete = true;
            return i;
        }
        match self.txs.iter().rposition(|t| t.stream_id == stream) {
            Some(i) => i,
            None => self.new_tx(stream, ts, ev),
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
        let mut rest = data;
        while !rest.is_empty() {
            let p = &mut self.dirs[d];
            if p.lost {
                return;
            }
            if p.preface_left > 0 {
                let done = PREFACE.len() - p.preface_left;
                let n = p.preface_left.min(rest.len());
                if rest[..n] != PREFACE[done..done + n] {
                    p.lost = true;
                    Self::ev(ev, Http2Event::InvalidClientMagic, self.last_id());
                    return;
                }
                p.preface_left -= n;
                rest = &rest[n..];
                continue;
            }
            if p.frame.is_none() {
                let n = (9 - p.head_len).min(rest.len());
                p.head[p.head_len..p.head_len + n].copy_from_slice(&rest[..n]);
                p.head_len += n;
                rest = &rest[n..];
                if p.head_len < 9 {
                    return;
                }
                p.head_len = 0;
                let h = p.head;
                let fh = FrameHead {
                    len: u32::from_be_bytes([0, h[0], h[1], h[2]]),
                    ftype: h[3],
                    flags: h[4],
                    stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
                };
                p.frame = Some(fh);
                p.remaining = fh.len as usize;
                p.payload.clear();
                p.skipping = fh.len as usize > MAX_FRAME;
                if p.skipping {
                    Self::ev(ev, Http2Event::LongFrameData, self.last_id());
                }
            }
            let p = &mut self.dirs[d];
            let n = p.remaining.min(rest.len());
            if !p.skipping {
                p.payload.extend_from_slice(&rest[..n]);
            }
            p.remaining -= n;
            rest = &rest[n..];
            if p.remaining > 0 {
                return;
            }
            let Some(fh) = p.frame.take() else { return };
            let payload = std::mem::take(&mut p.payload);
            if p.skipping {
                p.skipping = false;
                // A header block cannot be decoded without the frame.
                if p.block.is_some() && fh.ftype == FRAME_CONTINUATION {
                    p.block = None;
                }
                continue;
            }
            self.frame(dir, fh, &payload, ts, ev);
            let p = &mut self.dirs[d];
            if p.payload.capacity() == 0 {
                p.payload = payload;
            }
        }
    }

    /// Strips the padding of a padded frame.
    fn unpad<'a>(
        fh: &FrameHead,
        payload: &'a [u8],
        ev: &mut Vec<AppLayerEvent>,
        tx: Option<TxId>,
    ) -> Option<&'a [u8]> {
        if fh.flags & FLAG_PADDED == 0 {
            return Some(payload);
        }
        let Some((&pad, body)) = payload.split_first() else {
            Self::ev(ev, Http2Event::InvalidFrameLength, tx);
            return None;
        };
        match body.len().checked_sub(usize::from(pad)) {
            Some(n) => Some(&body[..n]),
            None => {
                Self::ev(ev, Http2Event::InvalidFrameData, tx);
                None
            }
        }
    }

    fn frame(
        &mut self,
        dir: Direction,
        fh: FrameHead,
        payload: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        // A header block must go on with CONTINUATION on its stream.
        if let Some(b) = &self.dirs[d].block {
            if fh.ftype != FRAME_CONTINUATION || fh.stream != b.stream {
                self.dirs[d].block = None;
                Self::ev(ev, Http2Event::InvalidFrameHeader, self.last_id());
            }
        }
        let fixed = match fh.ftype {
            FRAME_PRIORITY => Some(5),
            FRAME_RST_STREAM | FRAME_WINDOW_UPDATE => Some(4),
            FRAME_PING => Some(8),
            _ => None,
        };
        let stream_zero_only = matches!(fh.ftype, FRAME_SETTINGS | FRAME_PING | FRAME_GOAWAY);
        let stream_needed = matches!(
            fh.ftype,
            FRAME_DATA
                | FRAME_HEADERS
                | FRAME_PRIORITY
                | FRAME_RST_STREAM
                | FRAME_PUSH_PROMISE
                | FRAME_CONTINUATION
        );
        if (stream_zero_only && fh.stream != 0) || (stream_needed && fh.stream == 0) {
            Self::ev(ev, Http2Event::InvalidFrameHeader, self.last_id());
            return;
        }
        if fh.ftype == FRAME_CONTINUATION {
            self.continuation(dir, fh, payload, ts, ev);
            return;
        }
        // Stream id reuse: new headers on a side already ended.
        let reuse = fh.ftype == FRAME_HEADERS
            && self
                .txs
                .iter()
                .rev()
                .find(|t| t.stream_id == fh.stream)
                .is_some_and(|t| t.sides[d].complete && t.sides[d].headers_done)
            && fh.flags & FLAG_END_STREAM == 0;
        let i = if reuse {
            let i = self.new_tx(fh.stream, ts, ev);
            Self::ev(ev, Http2Event::StreamIdReuse, Some(self.txs[i].common.id));
            i
        } else {
            self.stream_tx(fh.stream, ts, ev)
        };
        let id = self.txs[i].common.id;
        self.txs[i].sides[d].frame(fh.ftype);
        if fixed.is_some_and(|n| payload.len() != n)
            || (fh.ftype == FRAME_SETTINGS && payload.len() % 6 != 0)
            || (fh.ftype == FRAME_GOAWAY && payload.len() < 8)
        {
            Self::ev(ev, Http2Event::InvalidFrameLength, Some(id));
            return;
        }
        match fh.ftype {
            FRAME_DATA => {
                let Some(data) = Self::unpad(&fh, payload, ev, Some(id)) else {
                    return;
                };
                let limit = self.body_limit[d];
                let side = &mut self.txs[i].sides[d];
                let room = limit.saturating_sub(side.body.len());
                side.body.extend_from_slice(&data[..data.len().min(room)]);
                if fh.flags & FLAG_END_STREAM != 0 {
                    self.end_side(i, dir, ts, ev);
                }
            }
            FRAME_HEADERS => {
                let Some(mut block) = Self::unpad(&fh, payload, ev, Some(id)) else {
                    return;
                };
                if fh.flags & FLAG_PRIORITY != 0 {
                    if block.len() < 5 {
                        Self::ev(ev, Http2Event::InvalidFrameLength, Some(id));
                        return;
                    }
                    let w = block[4];
                    let side = &mut self.txs[i].sides[d];
                    if side.priorities.len() < MAX_FRAMES {
                        side.priorities.push(w);
                    }
                    block = &block[5..];
                }
                self.start_block(dir, fh, None, block, ts, ev);
            }
            FRAME_PUSH_PROMISE => {
                let Some(block) = Self::unpad(&fh, payload, ev, Some(id)) else {
                    return;
                };
                if block.len() < 4 {
                    Self::ev(ev, Http2Event::InvalidFrameLength, Some(id));
                    return;
                }
                let promised =
                    u32::from_be_bytes([block[0], block[1], block[2], block[3]]) & 0x7fff_ffff;
                self.start_block(dir, fh, Some(promised), &block[4..], ts, ev);
            }
            FRAME_PRIORITY => {
                let side = &mut self.txs[i].sides[d];
                if side.priorities.len() < MAX_FRAMES {
                    side.priorities.push(payload[4]);
                }
            }
            FRAME_RST_STREAM => {
                let code = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                let tx = &mut self.txs[i];
                if tx.sides[d].error_codes.len() < MAX_FRAMES {
                    tx.sides[d].error_codes.push(code);
                }
                tx.sides[0].complete = true;
                tx.sides[1].complete = true;
            }
            FRAME_SETTINGS => {
                let side = &mut self.txs[i].sides[d];
                for s in payload.chunks_exact(6) {
                    let sid = u16::from_be_bytes([s[0], s[1]]);
                    let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                    if side.settings.len() < MAX_FRAMES {
                        side.settings.push((sid, v));
                    }
                }
            }
            FRAME_GOAWAY => {
                let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                let side = &mut self.txs[i].sides[d];
                if side.error_codes.len() < MAX_FRAMES {
                    side.error_codes.push(code);
                }
            }
            FRAME_WINDOW_UPDATE => {
                let w = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                    & 0x7fff_ffff;
                let side = &mut self.txs[i].sides[d];
                if side.windows.len() < MAX_FRAMES {
                    side.windows.push(w);
                }
            }
            // PING and unknown types: nothing to keep but the type.
            _ => {}
        }
    }

    fn start_block(
        &mut self,
        dir: Direction,
        fh: FrameHead,
        promised: Option<u32>,
        frag: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        let mut b = Block {
            stream: fh.stream,
            promised,
            end_stream: fh.flags & FLAG_END_STREAM != 0,
            data: Vec::new(),
            capped: false,
        };
        self.append_block(&mut b, frag, ev);
        if fh.flags & FLAG_END_HEADERS != 0 {
            self.end_block(dir, b, ts, ev);
        } else {
            self.dirs[d].block = Some(b);
        }
    }

    fn append_block(&self, b: &mut Block, frag: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let room = self.max_header_bytes.saturating_sub(b.data.len());
        if frag.len() > room {
            if !b.capped {
                b.capped = true;
                Self::ev(ev, Http2Event::LongFrameData, self.last_id());
            }
            b.data.extend_from_slice(&frag[..room]);
        } else {
            b.data.extend_from_slice(frag);
        }
    }

    fn continuation(
        &mut self,
        dir: Direction,
        fh: FrameHead,
        payload: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        let Some(mut b) = self.dirs[d].block.take() else {
            Self::ev(ev, Http2Event::InvalidFrameHeader, self.last_id());
            return;
        };
        if let Some(i) = self.txs.iter().rposition(|t| t.stream_id == fh.stream) {
            self.txs[i].sides[d].frame(FRAME_CONTINUATION);
        }
        self.append_block(&mut b, payload, ev);
        if fh.flags & FLAG_END_HEADERS != 0 {
            self.end_block(dir, b, ts, ev);
        } else {
            self.dirs[d].block = Some(b);
        }
    }

    /// Decodes a complete header block into its stream's side.
    fn end_block(&mut self, dir: Direction, b: Block, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        let (stream, side_ix) = match b.promised {
            // A promised stream's request headers, sent by the server.
            Some(p) => (p, 0),
            None => (b.stream, d),
        };
        let i = self.stream_tx(stream, ts, ev);
        let id = self.txs[i].common.id;
        let mut decoded: Vec<Header> = Vec::new();
        let mut too_many = false;
        let max_headers = self.max_headers;
        let res = self.dirs[d].decoder.decode_with_cb(&b.data, |n, v| {
            if decoded.len() < max_headers {
                decoded.push(Header {
                    name: n.into_owned(),
                    value: v.into_owned(),
                });
            } else {
                too_many = true;
            }
        });
        if let Err(e) = res {
            use loona_hpack::decoder::{DecoderError, IntegerDecodingError};
            let e = match e {
                DecoderError::IntegerDecodingError(
                    IntegerDecodingError::TooManyOctets | IntegerDecodingError::ValueTooLarge,
                ) => Http2Event::HeaderIntegerOverflow,
                DecoderError::InvalidMaxDynamicSize => Http2Event::HeaderIntegerOverflow,
                _ => Http2Event::InvalidHeader,
            };
            Self::ev(ev, e, Some(id));
        }
        if too_many {
            Self::ev(ev, Http2Event::TooManyHeaders, Some(id));
        }
        let updates = size_updates(&b.data);
        let side = &mut self.txs[i].sides[side_ix];
        for u in updates {
            if side.size_updates.len() < MAX_FRAMES {
                side.size_updates.push(u);
            }
        }
        for h in &decoded {
            if h.name.iter().any(|c| c.is_ascii_uppercase())
                || h.name.is_empty()
                || h.value.contains(&b'\n')
            {
                Self::ev(ev, Http2Event::InvalidHeader, Some(id));
                break;
            }
        }
        let room = self.max_headers.saturating_sub(side.headers.len());
        side.headers.extend(decoded.into_iter().take(room));
        side.headers_done = true;
        if side
            .header("content-type")
            .is_some_and(|v| v.starts_with(b"application/dns-message"))
        {
            side.dns_body = true;
        }
        side.rebuild();
        if side_ix == 0 {
            self.request_checks(i, ev);
        }
        if b.promised.is_some() {
            // The promised request is complete as sent.
            self.txs[i].sides[0].complete = true;
        } else if b.end_stream {
            self.end_side(i, dir, ts, ev);
        }
    }

    /// Suricata's request header checks: user info in `:authority`, and
    /// `:authority` against `Host`; a GET's `dns=` parameter (DoH).
    fn request_checks(&mut self, i: usize, ev: &mut Vec<AppLayerEvent>) {
        let id = self.txs[i].common.id;
        let req = &self.txs[i].sides[0];
        let authority = req.header(":authority");
        let host = req.header("host");
        if authority.is_some_and(|a| a.contains(&b'@')) {
            Self::ev(ev, Http2Event::UserinfoInUri, Some(id));
        }
        if let (Some(a), Some(h)) = (authority, host) {
            if !normalize_host(a).eq_ignore_ascii_case(normalize_host(h)) {
                Self::ev(ev, Http2Event::AuthorityHostMismatch, Some(id));
            }
        }
        let Some(path) = req.header(":path") else {
            return;
        };
        let Some(q) = memchr::memchr(b'?', path) else {
            return;
        };
        let param = path[q + 1..]
            .split(|&c| c == b'&')
            .find_map(|p| p.strip_prefix(b"dns="));
        let Some(param) = param else { return };
        let std_alphabet: Vec<u8> = param
            .iter()
            .map(|&c| match c {
                b'-' => b'+',
                b'_' => b'/',
                c => c,
            })
            .collect();
        let decoded =
            crate::transforms::base64_decode(&std_alphabet, crate::transforms::Base64Mode::Rfc4648);
        match decoded {
            Some(msg) if !msg.is_empty() => self.doh(i, Direction::ToServer, &msg, ev),
            _ => Self::ev(ev, Http2Event::InvalidFrameData, Some(id)),
        }
    }

    /// Parses a DoH message into a side of transaction `i`.
    fn doh(&mut self, i: usize, dir: Direction, msg: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let tx = &mut self.txs[i];
        match crate::dns::parse_message(msg, 1025) {
            Ok((message, _)) => {
                tx.sides[dir.index()].doh = Some(DnsTx::new_doh(dir, message, tx.common.ts));
            }
            Err(e) => ev.push(AppLayerEvent::Dns(e, Some(tx.common.id))),
        }
    }

    fn end_side(&mut self, i: usize, dir: Direction, _ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        self.txs[i].sides[d].complete = true;
        let s = &self.txs[i].sides[d];
        if s.dns_body && s.doh.is_none() && !s.body.is_empty() {
            let body = s.body.clone();
            self.doh(i, dir, &body, ev);
        }
    }

    /// Data is missing: the framing of this direction is lost.
    pub fn on_gap(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let last = self.last_id();
        let p = &mut self.dirs[dir.index()];
        if !p.lost {
            p.lost = true;
            p.block = None;
            p.frame = None;
            p.payload = Vec::new();
            Self::ev(ev, Http2Event::ReassemblyGap, last);
        }
    }

    /// The direction ended: a frame cut short is reported.
    pub fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let last = self.last_id();
        let p = &mut self.dirs[dir.index()];
        if !p.lost && (p.frame.is_some() || p.head_len > 0 || p.block.is_some()) {
            p.frame = None;
            p.head_len = 0;
            p.block = None;
            Self::ev(ev, Http2Event::InvalidFrameHeader, last);
        }
        p.lost = true;
    }

    /// Whether the parser still follows `dir`.
    pub fn wants_data(&self, dir: Direction) -> bool {
        !self.dirs[dir.index()].lost
    }
}

/// The dynamic table size updates at the start of a header block
/// (RFC 7541 §4.2: `001xxxxx`, a 5-bit-prefix integer).
fn size_updates(block: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(&b) = block.get(pos) {
        if b & 0xe0 != 0x20 {
            break;
        }
        let mut v = u64::from(b & 0x1f);
        pos += 1;
        if v == 0x1f {
            let mut shift = 0u32;
            loop {
                let Some(&c) = block.get(pos) else {
                    return out;
                };
                pos += 1;
                if shift > 56 {
                    return out;
                }
                v += u64::from(c & 0x7f) << shift;
                shift += 7;
                if c & 0x80 == 0 {
                    break;
                }
            }
        }
        out.push(v);
    }
    out
}

impl DnsTx {
    /// A DNS message carried over HTTP/2 (DoH), for the `dns.*` buffers
    /// and EVE of its HTTP/2 transaction.
    pub(crate) fn new_doh(dir: Direction, message: DnsMessage, ts: Timestamp) -> DnsTx {
        DnsTx {
            common: TxCommon::new(0, ts),
            dir,
            message,
            variant: crate::AppProto::Dns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AppLayerState, AppProto, Transport};

    fn frame(t: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len() as u32;
        let mut v = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, t, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn block(enc: &mut loona_hpack::Encoder<'static>, h: &[(&str, &str)]) -> Vec<u8> {
        enc.encode(h.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
    }

    const REQ: &[(&str, &str)] = &[
        (":method", "GET"),
        (":path", "/index.html"),
        (":authority", "example.com"),
        (":scheme", "http"),
        ("user-agent", "curl/8"),
    ];
    const RESP: &[(&str, &str)] = &[
        (":status", "200"),
        ("content-type", "text/html"),
        ("accept-ranges", "bytes"),
    ];

    /// A client side (preface, SETTINGS, two requests on streams 1 and
    /// 3: the second reuses the dynamic table) and a server side
    /// (SETTINGS, HEADERS and DATA for both).
    fn exchange() -> (Vec<u8>, Vec<u8>) {
        let mut enc = loona_hpack::Encoder::new();
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_SETTINGS, 0, 0, &[0, 4, 0, 0, 0xff, 0xff]));
        c.extend(frame(FRAME_HEADERS, 0x5, 1, &block(&mut enc, REQ)));
        c.extend(frame(FRAME_HEADERS, 0x5, 3, &block(&mut enc, REQ)));
        let mut enc = loona_hpack::Encoder::new();
        let mut s = frame(FRAME_SETTINGS, 0, 0, &[]);
        for id in [1, 3] {
            s.extend(frame(FRAME_HEADERS, 0x4, id, &block(&mut enc, RESP)));
            s.extend(frame(FRAME_DATA, 0x1, id, b"hello"));
        }
        (c, s)
    }

    fn run(st: &mut Http2State, c: &[u8], s: &[u8], bytewise: bool) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        for (dir, data) in [(Direction::ToServer, c), (Direction::ToClient, s)] {
            if bytewise {
                for b in data {
                    st.feed(dir, std::slice::from_ref(b), 1, &mut ev);
                }
            } else {
                st.feed(dir, data, 1, &mut ev);
            }
        }
        ev
    }

    fn stream(st: &Http2State, id: u32) -> &Http2Tx {
        st.transactions()
            .find(|t| t.stream_id == id)
            .expect("stream")
    }

    fn check_exchange(st: &Http2State) {
        for id in [1, 3] {
            let t = stream(st, id);
            assert!(t.progress().request_complete && t.progress().response_complete);
            for (buf, dir, want) in [
                (BufferId::HttpMethod, Direction::ToServer, &b"GET"[..]),
                (BufferId::HttpUri, Direction::ToServer, &b"/index.html"[..]),
                (BufferId::HttpHost, Direction::ToServer, &b"example.com"[..]),
                (BufferId::HttpUserAgent, Direction::ToServer, &b"curl/8"[..]),
                (BufferId::HttpStatCode, Direction::ToClient, &b"200"[..]),
                (BufferId::FileData, Direction::ToClient, &b"hello"[..]),
                (
                    BufferId::HttpHeaderNames,
                    Direction::ToClient,
                    &b"\r\n:status\r\ncontent-type\r\naccept-ranges\r\n\r\n"[..],
                ),
                (
                    BufferId::HttpHeader,
                    Direction::ToClient,
                    &b":status: 200\r\ncontent-type: text/html\r\naccept-ranges: bytes\r\n"[..],
                ),
            ] {
                assert_eq!(t.buffer(buf, dir), Some(want), "{buf:?} {dir:?}");
            }
            assert_eq!(
                t.buffers(BufferId::HttpRequestHeader, Direction::ToServer)[0],
                b":method: GET"
            );
            assert_eq!(
                t.buffers(BufferId::Http2HeaderName, Direction::ToServer)
                    .len(),
                REQ.len()
            );
            let e = t.eve();
            assert_eq!(e["version"], "2");
            assert_eq!(e["http_method"], "GET");
            assert_eq!(e["status"], 200);
            assert_eq!(e["http2"]["stream_id"], id);
            assert_eq!(e["request_headers"][1]["value"], "/index.html");
        }
        // The two SETTINGS frames are connection transactions.
        let settings: Vec<&Http2Tx> = st.transactions().filter(|t| t.stream_id == 0).collect();
        assert_eq!(settings.len(), 2);
        assert_eq!(settings[0].sides[0].settings, vec![(4, 0xffff)]);
        assert_eq!(settings[1].sides[1].frames, vec![FRAME_SETTINGS]);
    }

    #[test]
    fn request_response_whole_and_bytewise() {
        let (c, s) = exchange();
        let cfg = AppLayerConfig::default();
        let mut st = Http2State::new(&cfg);
        assert!(run(&mut st, &c, &s, false).is_empty());
        check_exchange(&st);
        let mut st = Http2State::new(&cfg);
        assert!(run(&mut st, &c, &s, true).is_empty());
        check_exchange(&st);
    }

    #[test]
    fn continuation_joins_header_block() {
        let mut enc = loona_hpack::Encoder::new();
        let b = block(&mut enc, REQ);
        let (a, rest) = b.split_at(5);
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_HEADERS, 0x1, 1, a));
        c.extend(frame(FRAME_CONTINUATION, 0x4, 1, rest));
        let mut st = Http2State::new(&AppLayerConfig::default());
        let ev = run(&mut st, &c, &[], false);
        assert!(ev.is_empty(), "{ev:?}");
        let t = stream(&st, 1);
        assert_eq!(t.sides[0].headers.len(), REQ.len());
        assert_eq!(t.sides[0].frames, vec![FRAME_HEADERS, FRAME_CONTINUATION]);
        assert!(t.progress().request_complete);
        // A CONTINUATION out of place.
        let mut st = Http2State::new(&AppLayerConfig::default());
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_CONTINUATION, 0x4, 1, rest));
        let ev = run(&mut st, &c, &[], false);
        assert!(ev.contains(&AppLayerEvent::Http2(Http2Event::InvalidFrameHeader, None)));
    }

    fn events(ev: &[AppLayerEvent]) -> Vec<Http2Event> {
        ev.iter()
            .filter_map(|e| match e {
                AppLayerEvent::Http2(e, _) => Some(*e),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn malformed_frames_raise_events() {
        let cfg = AppLayerConfig::default();
        // Wrong preface: the direction is dropped.
        let mut st = Http2State::new(&cfg);
        let ev = run(
            &mut st,
            b"PRI * HTTP/1.1\r\n\r\nSM\r\n\r\nxxxxxxxxx",
            &[],
            true,
        );
        assert_eq!(events(&ev), vec![Http2Event::InvalidClientMagic]);
        assert!(!st.wants_data(Direction::ToServer));
        // PING of 7 bytes, SETTINGS of 5, RST_STREAM on stream 0, a
        // padded DATA whose padding is longer than the frame.
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_PING, 0, 0, &[0; 7]));
        c.extend(frame(FRAME_SETTINGS, 0, 0, &[0; 5]));
        c.extend(frame(FRAME_RST_STREAM, 0, 0, &[0; 4]));
        c.extend(frame(FRAME_DATA, FLAG_PADDED, 1, &[9, 1, 2]));
        let mut st = Http2State::new(&cfg);
        let ev = events(&run(&mut st, &c, &[], false));
        assert_eq!(
            ev,
            vec![
                Http2Event::InvalidFrameLength,
                Http2Event::InvalidFrameLength,
                Http2Event::InvalidFrameHeader,
                Http2Event::InvalidFrameData,
            ]
        );
        // Garbage HPACK: an index past both tables.
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_HEADERS, 0x5, 1, &[0xff, 0xff, 0x7f]));
        let mut st = Http2State::new(&cfg);
        let ev = events(&run(&mut st, &c, &[], false));
        assert_eq!(ev, vec![Http2Event::InvalidHeader]);
        // An integer too long to decode.
        let mut c = PREFACE.to_vec();
        c.extend(frame(
            FRAME_HEADERS,
            0x5,
            1,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
        ));
        let mut st = Http2State::new(&cfg);
        let ev = events(&run(&mut st, &c, &[], false));
        assert_eq!(ev, vec![Http2Event::HeaderIntegerOverflow]);
    }

    #[test]
    fn oversized_frame_is_skipped() {
        let mut enc = loona_hpack::Encoder::new();
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_DATA, 0, 1, &vec![b'a'; MAX_FRAME + 1]));
        c.extend(frame(FRAME_HEADERS, 0x5, 3, &block(&mut enc, REQ)));
        let mut st = Http2State::new(&AppLayerConfig::default());
        let ev = events(&run(&mut st, &c, &[], false));
        assert_eq!(ev, vec![Http2Event::LongFrameData]);
        assert!(stream(&st, 3).progress().request_complete);
        assert!(st.transactions().all(|t| t.stream_id != 1));
    }

    #[test]
    fn gap_drops_the_direction() {
        let (c, s) = exchange();
        let mut st = Http2State::new(&AppLayerConfig::default());
        let mut ev = Vec::new();
        st.feed(Direction::ToServer, &c[..40], 1, &mut ev);
        st.on_gap(Direction::ToServer, &mut ev);
        st.feed(Direction::ToServer, &c[60..], 1, &mut ev);
        st.feed(Direction::ToClient, &s, 1, &mut ev);
        assert_eq!(events(&ev), vec![Http2Event::ReassemblyGap]);
        assert!(!st.wants_data(Direction::ToServer));
        // The server side still parses.
        assert_eq!(
            stream(&st, 3).buffer(BufferId::HttpStatCode, Direction::ToClient),
            Some(&b"200"[..])
        );
        // A frame cut short at the end of the flow.
        let mut st = Http2State::new(&AppLayerConfig::default());
        let mut ev = Vec::new();
        st.feed(Direction::ToClient, &s[..12], 1, &mut ev);
        st.finish(Direction::ToClient, &mut ev);
        assert_eq!(events(&ev), vec![Http2Event::InvalidFrameHeader]);
    }

    #[test]
    fn authority_checks() {
        let mut enc = loona_hpack::Encoder::new();
        let mut c = PREFACE.to_vec();
        let h = [
            (":method", "GET"),
            (":path", "/"),
            (":authority", "user:pw@example.com:8080"),
            ("host", "other.org"),
        ];
        c.extend(frame(FRAME_HEADERS, 0x5, 1, &block(&mut enc, &h)));
        let h = [
            (":method", "GET"),
            (":authority", "A.example:80"),
            ("host", "a.example"),
        ];
        c.extend(frame(FRAME_HEADERS, 0x5, 3, &block(&mut enc, &h)));
        let mut st = Http2State::new(&AppLayerConfig::default());
        let ev = run(&mut st, &c, &[], false);
        let id1 = stream(&st, 1).id();
        assert_eq!(
            ev,
            vec![
                AppLayerEvent::Http2(Http2Event::UserinfoInUri, Some(id1)),
                AppLayerEvent::Http2(Http2Event::AuthorityHostMismatch, Some(id1)),
            ]
        );
        assert_eq!(
            stream(&st, 1).buffer(BufferId::HttpHost, Direction::ToServer),
            Some(&b"example.com"[..])
        );
    }

    fn b64url(data: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for ch in data.chunks(3) {
            let n = ch
                .iter()
                .enumerate()
                .fold(0u32, |a, (i, &b)| a | u32::from(b) << (16 - 8 * i));
            for i in 0..=ch.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        out
    }

    fn dns_query(name: &str) -> Vec<u8> {
        let mut q = vec![0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for l in name.split('.') {
            q.push(l.len() as u8);
            q.extend_from_slice(l.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        q
    }

    #[test]
    fn dns_over_http2() {
        let mut enc = loona_hpack::Encoder::new();
        let path = format!("/dns-query?dns={}", b64url(&dns_query("www.example.org")));
        let h = [
            (":method", "GET"),
            (":path", path.as_str()),
            (":authority", "dns.test"),
        ];
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_HEADERS, 0x5, 1, &block(&mut enc, &h)));
        // POST with the message as body.
        let h = [
            (":method", "POST"),
            (":path", "/dns-query"),
            ("content-type", "application/dns-message"),
        ];
        c.extend(frame(FRAME_HEADERS, 0x4, 3, &block(&mut enc, &h)));
        c.extend(frame(FRAME_DATA, 0x1, 3, &dns_query("post.example")));
        let mut st = Http2State::new(&AppLayerConfig::default());
        assert!(run(&mut st, &c, &[], false).is_empty());
        assert_eq!(
            stream(&st, 1).buffers(BufferId::DnsQuery, Direction::ToServer),
            vec![&b"www.example.org"[..]]
        );
        assert_eq!(
            stream(&st, 3).buffers(BufferId::DnsQuery, Direction::ToServer),
            vec![&b"post.example"[..]]
        );
        assert!(stream(&st, 3).dns_eve().is_some());
    }

    #[test]
    fn caps_and_size_updates() {
        let cfg = AppLayerConfig {
            max_transactions: 4,
            ..AppLayerConfig::default()
        };
        let mut st = Http2State::new(&cfg);
        let mut c = PREFACE.to_vec();
        for _ in 0..6 {
            c.extend(frame(FRAME_PING, 0, 0, &[0; 8]));
        }
        // A dynamic table size update to 100 before an indexed header.
        c.extend(frame(FRAME_HEADERS, 0x5, 1, &[0x3f, 0x45, 0x82]));
        let ev = events(&run(&mut st, &c, &[], false));
        assert_eq!(ev, vec![Http2Event::TooManyStreams; 3]);
        assert_eq!(st.transactions().count(), 4);
        assert_eq!(stream(&st, 1).sides[0].size_updates, vec![100]);
        assert_eq!(stream(&st, 1).method(), Some(&b"GET"[..]));
    }

    #[test]
    fn data_is_a_file_each_way() {
        use crate::files::{side_complete, tx_files, FileView};
        let mut st = AppLayerState::new(AppProto::Http2, Transport::Tcp);
        let mut enc = loona_hpack::Encoder::new();
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_SETTINGS, 0, 0, &[]));
        c.extend(frame(FRAME_HEADERS, 0x4, 1, &block(&mut enc, REQ)));
        c.extend(frame(FRAME_DATA, 0, 1, b"up"));
        c.extend(frame(FRAME_DATA, 0x1, 1, b"load"));
        // A stream without DATA has no file.
        c.extend(frame(FRAME_HEADERS, 0x5, 3, &block(&mut enc, REQ)));
        st.feed(Direction::ToServer, &c, 1);
        let mut enc = loona_hpack::Encoder::new();
        let mut s = frame(FRAME_SETTINGS, 0, 0, &[]);
        s.extend(frame(FRAME_HEADERS, 0x4, 1, &block(&mut enc, RESP)));
        s.extend(frame(FRAME_DATA, 0, 1, b"MZ\x90\x00"));
        st.feed(Direction::ToClient, &s, 2);
        let h2 = st.as_http2().expect("http2");
        let (id1, id3) = (stream(h2, 1).common.id, stream(h2, 3).common.id);
        let file = |d: &'static [u8]| FileView {
            name: None,
            data: std::borrow::Cow::Borrowed(d),
        };
        assert_eq!(
            tx_files(&st, id1, Direction::ToServer),
            vec![file(b"upload")]
        );
        assert_eq!(
            tx_files(&st, id1, Direction::ToClient),
            vec![file(b"MZ\x90\x00")]
        );
        assert!(tx_files(&st, id3, Direction::ToServer).is_empty());
        // The upload ended with END_STREAM, the download not yet.
        assert!(side_complete(&st, id1, Direction::ToServer));
        assert!(!side_complete(&st, id1, Direction::ToClient));
    }

    #[test]
    fn h2c_upgrade_switches_the_flow() {
        let mut st = AppLayerState::new(AppProto::Http, Transport::Tcp);
        st.feed(
            Direction::ToServer,
            b"GET /up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n",
            1,
        );
        assert_eq!(st.proto(), AppProto::Http);
        let mut enc = loona_hpack::Encoder::new();
        let mut s =
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
                .to_vec();
        s.extend(frame(FRAME_SETTINGS, 0, 0, &[]));
        s.extend(frame(FRAME_HEADERS, 0x4, 1, &block(&mut enc, RESP)));
        st.feed(Direction::ToClient, &s, 2);
        assert_eq!(st.proto(), AppProto::Http2);
        let mut c = PREFACE.to_vec();
        c.extend(frame(FRAME_SETTINGS, 0, 0, &[]));
        assert!(st.feed(Direction::ToServer, &c, 3).is_empty());
        st.feed(Direction::ToClient, &frame(FRAME_DATA, 0x1, 1, b"body"), 4);
        let h2 = st.as_http2().expect("http2");
        let t = stream(h2, 1);
        assert_eq!(t.path(), Some(&b"/up"[..]));
        assert_eq!(t.sides[0].header("upgrade"), Some(&b"h2c"[..]));
        assert_eq!(t.status(), Some(&b"200"[..]));
        assert!(t.progress().response_complete);
        assert_eq!(st.eve_key(), "http");
        // Without `Upgrade: h2c` in the request a 101 is a plain tunnel.
        let mut st = AppLayerState::new(AppProto::Http, Transport::Tcp);
        st.feed(
            Direction::ToServer,
            b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n",
            1,
        );
        st.feed(
            Direction::ToClient,
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
            2,
        );
        assert_eq!(st.proto(), AppProto::Http);
    }
}
