//! HTTP/1.0 and 1.1, both directions, incremental.
//!
//! Each direction is a small state machine over lines and bodies: request
//! or status line, header lines (with folding), then a body delimited by
//! `Content-Length`, `chunked` transfer coding or, for responses, the end
//! of the connection. Requests open transactions in order; a response
//! belongs to the oldest transaction without one (pipelining), as libhtp
//! does. `100 Continue` interim responses are skipped; `101` and successful
//! `CONNECT` turn the connection into a tunnel that is not parsed.
//!
//! Headers are kept as libhtp keeps them: name as first seen, value
//! trimmed, repeated headers merged into one with `", "`. The buffers that
//! detection inspects are built on first use from these and cached.
//!
//! Response bodies with `Content-Encoding: gzip`/`deflate` are inflated
//! (`http.response_body`, `file.data`), bounded by
//! [`AppLayerConfig::http_decompress_limit`](crate::AppLayerConfig) and the
//! body limits.

mod body;
pub(crate) mod uri;

use std::cell::OnceCell;
use std::collections::VecDeque;

use serde_json::Value;

use crate::events::{AppLayerEvent, HttpEvent};
use crate::state::{TxCommon, TxId, TxProgress};
use crate::{AppLayerConfig, BufferId, Direction, Timestamp};
use body::{BodyDecoder, Coding};
use uri::trim;

/// One header as libhtp keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub name: Vec<u8>,
    pub value: Vec<u8>,
}

/// How far a message of a transaction has been parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum HttpProgress {
    #[default]
    None,
    /// Request or status line parsed.
    Line,
    /// Headers complete.
    Headers,
    /// Body being received.
    Body,
    /// Message complete.
    Complete,
}

/// One request/response exchange.
#[derive(Debug, Default)]
pub struct HttpTx {
    pub(crate) common: TxCommon,
    pub request_line: Vec<u8>,
    pub method: Vec<u8>,
    pub uri_raw: Vec<u8>,
    pub request_protocol: Vec<u8>,
    pub request_headers: Vec<Header>,
    pub request_headers_raw: Vec<u8>,
    pub request_body: Vec<u8>,
    pub request_progress: HttpProgress,
    pub response_line: Vec<u8>,
    pub response_protocol: Vec<u8>,
    pub status_code: Vec<u8>,
    pub status_msg: Vec<u8>,
    pub response_headers: Vec<Header>,
    pub response_headers_raw: Vec<u8>,
    /// Response body after transfer and content decoding.
    pub response_body: Vec<u8>,
    /// Response body bytes as sent (libhtp's `response_message_len`).
    pub response_message_len: u64,
    pub response_progress: HttpProgress,
    /// The request body bytes as sent.
    pub request_message_len: u64,
    cache: TxCache,
}

#[derive(Debug, Default)]
struct TxCache {
    uri: OnceCell<Vec<u8>>,
    host: OnceCell<Option<Vec<u8>>>,
    host_raw: OnceCell<Option<Vec<u8>>>,
    header: [OnceCell<Vec<u8>>; 2],
    names: [OnceCell<Vec<u8>>; 2],
    start: [OnceCell<Vec<u8>>; 2],
    lines: [OnceCell<Vec<Vec<u8>>>; 2],
}

/// `filename=` of a Content-Disposition value, quotes removed.
fn disposition_filename(v: &[u8]) -> Option<&[u8]> {
    let mut rest = v;
    while let Some(i) = uri::find(&rest.to_ascii_lowercase(), b"filename=") {
        let before = rest[..i].iter().rev().find(|c| !c.is_ascii_whitespace());
        let after = &rest[i + 9..];
        if matches!(before, None | Some(b';')) {
            let name = match after.strip_prefix(b"\"") {
                Some(q) => &q[..q.iter().position(|&c| c == b'"').unwrap_or(q.len())],
                None => {
                    let end = after.iter().position(|&c| c == b';').unwrap_or(after.len());
                    uri::trim(&after[..end])
                }
            };
            return (!name.is_empty()).then_some(name);
        }
        rest = after;
    }
    None
}

/// The `filename` of the first part header of a multipart body that
/// has one.
fn multipart_filename(body: &[u8]) -> Option<&[u8]> {
    const CD: &[u8] = b"content-disposition:";
    body.split(|&c| c == b'\n')
        .filter(|l| l.len() > CD.len() && l[..CD.len()].eq_ignore_ascii_case(CD))
        .find_map(|l| disposition_filename(uri::trim(&l[CD.len()..])))
}

/// The length of `headers` written as `Name: value\r\n` lines.
fn header_block_len(headers: &[Header]) -> usize {
    headers
        .iter()
        .map(|h| h.name.len() + h.value.len() + 4)
        .sum()
}

fn header_get<'a>(headers: &'a [Header], name: &str) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name.as_bytes()))
        .map(|h| h.value.as_slice())
}

impl HttpTx {
    pub fn id(&self) -> TxId {
        self.common.id
    }

    /// A request header's (merged) value, by case-insensitive name.
    /// The name of the file the body of `dir` carries, once there is a
    /// body: the `filename` of a Content-Disposition header, else (for a
    /// download or a PUT) the path of the request URI, as Suricata names
    /// HTTP files.
    fn file_name(&self, dir: Direction) -> Option<&[u8]> {
        let body = match dir {
            Direction::ToServer => &self.request_body,
            Direction::ToClient => &self.response_body,
        };
        if body.is_empty() {
            return None;
        }
        if let Some(n) =
            header_get(self.headers(dir), "content-disposition").and_then(disposition_filename)
        {
            return Some(n);
        }
        // A `multipart/form-data` upload: the file name of its first
        // part that has one (Suricata's file of the upload).
        if dir == Direction::ToServer
            && header_get(&self.request_headers, "content-type").is_some_and(|ct| {
                let ct = uri::trim(ct);
                ct.len() >= 19 && ct[..19].eq_ignore_ascii_case(b"multipart/form-data")
            })
        {
            return multipart_filename(&self.request_body);
        }
        if dir == Direction::ToServer && !self.method.eq_ignore_ascii_case(b"PUT") {
            return None;
        }
        let path = uri::split_uri(&self.uri_raw, false).path;
        (!path.is_empty()).then_some(path)
    }

    pub fn request_header(&self, name: &str) -> Option<&[u8]> {
        header_get(&self.request_headers, name)
    }

    /// A response header's (merged) value, by case-insensitive name.
    pub fn response_header(&self, name: &str) -> Option<&[u8]> {
        header_get(&self.response_headers, name)
    }

    fn headers(&self, dir: Direction) -> &[Header] {
        match dir {
            Direction::ToServer => &self.request_headers,
            Direction::ToClient => &self.response_headers,
        }
    }

    fn headers_done(&self, dir: Direction) -> bool {
        match dir {
            Direction::ToServer => self.request_progress >= HttpProgress::Headers,
            Direction::ToClient => self.response_progress >= HttpProgress::Headers,
        }
    }

    fn is_connect(&self) -> bool {
        self.method.eq_ignore_ascii_case(b"CONNECT")
    }

    /// The normalised URI (`http.uri`).
    pub fn uri_normalized(&self) -> Option<&[u8]> {
        if self.request_progress < HttpProgress::Line {
            return None;
        }
        Some(
            self.cache
                .uri
                .get_or_init(|| uri::normalize_uri(&self.uri_raw, self.is_connect())),
        )
    }

    /// `http.host`: the hostname from an absolute URI or the Host header,
    /// lower-cased, without port.
    pub fn host(&self) -> Option<&[u8]> {
        self.cache
            .host
            .get_or_init(|| {
                let parts = uri::split_uri(&self.uri_raw, self.is_connect());
                let h = match parts.hostname {
                    Some(h) => h,
                    None => uri::split_host_port(self.request_header("host")?).0,
                };
                Some(uri::normalize_hostname(h))
            })
            .as_deref()
    }

    /// `http.host.raw`: the Host header as sent, or the authority of an
    /// absolute URI.
    pub fn host_raw(&self) -> Option<&[u8]> {
        self.cache
            .host_raw
            .get_or_init(|| {
                let parts = uri::split_uri(&self.uri_raw, self.is_connect());
                match parts.hostname {
                    Some(h) => Some(h.to_vec()),
                    None => self.request_header("host").map(|h| h.to_vec()),
                }
            })
            .as_deref()
    }

    /// The port from the Host header or an absolute URI, when one is given.
    pub fn port(&self) -> Option<u16> {
        let parts = uri::split_uri(&self.uri_raw, self.is_connect());
        let p = match parts.hostname {
            Some(_) => parts.port?,
            None => uri::split_host_port(self.request_header("host")?).1?,
        };
        std::str::from_utf8(p).ok()?.parse().ok()
    }

    /// A buffer for one direction's inspection, as Suricata builds it.
    pub fn buffer(&self, id: BufferId, dir: Direction) -> Option<&[u8]> {
        use BufferId::*;
        let req = self.request_progress;
        let resp = self.response_progress;
        let nonempty = |v: &'_ [u8]| -> bool { !v.is_empty() };
        let d = dir.index();
        match id {
            HttpMethod => (req >= HttpProgress::Line).then_some(self.method.as_slice()),
            HttpUri => self.uri_normalized(),
            HttpUriRaw => (req >= HttpProgress::Line).then_some(self.uri_raw.as_slice()),
            HttpRequestLine => (req >= HttpProgress::Line).then_some(self.request_line.as_slice()),
            HttpProtocol => match dir {
                Direction::ToServer => Some(self.request_protocol.as_slice()),
                Direction::ToClient => Some(self.response_protocol.as_slice()),
            }
            .filter(|v| nonempty(v)),
            HttpHeader => {
                if !self.headers_done(dir) {
                    return None;
                }
                let b = self.cache.header[d].get_or_init(|| {
                    let skip: &[u8] = match dir {
                        Direction::ToServer => b"cookie",
                        Direction::ToClient => b"set-cookie",
                    };
                    let mut out = Vec::with_capacity(header_block_len(self.headers(dir)));
                    for h in self.headers(dir) {
                        if h.name.eq_ignore_ascii_case(skip) {
                            continue;
                        }
                        out.extend_from_slice(&h.name);
                        out.extend_from_slice(b": ");
                        out.extend_from_slice(&h.value);
                        out.extend_from_slice(b"\r\n");
                    }
                    out
                });
                Some(b.as_slice()).filter(|v| nonempty(v))
            }
            HttpHeaderRaw => {
                if !self.headers_done(dir) {
                    return None;
                }
                match dir {
                    Direction::ToServer => Some(self.request_headers_raw.as_slice()),
                    Direction::ToClient => Some(self.response_headers_raw.as_slice()),
                }
                .filter(|v| nonempty(v))
            }
            HttpHeaderNames => {
                if !self.headers_done(dir) {
                    return None;
                }
                let b = self.cache.names[d].get_or_init(|| {
                    let names: usize = self.headers(dir).iter().map(|h| h.name.len() + 2).sum();
                    let mut out = Vec::with_capacity(names + 4);
                    out.extend_from_slice(b"\r\n");
                    for h in self.headers(dir) {
                        out.extend_from_slice(&h.name);
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(b"\r\n");
                    out
                });
                Some(b.as_slice())
            }
            HttpStart => {
                if !self.headers_done(dir) {
                    return None;
                }
                let b = self.cache.start[d].get_or_init(|| {
                    let line = match dir {
                        Direction::ToServer => &self.request_line,
                        Direction::ToClient => &self.response_line,
                    };
                    let mut out =
                        Vec::with_capacity(line.len() + 4 + header_block_len(self.headers(dir)));
                    out.extend_from_slice(line);
                    out.extend_from_slice(b"\r\n");
                    for h in self.headers(dir) {
                        out.extend_from_slice(&h.name);
                        out.extend_from_slice(b": ");
                        out.extend_from_slice(&h.value);
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(b"\r\n");
                    out
                });
                Some(b.as_slice())
            }
            // Header fields exist once their header block is complete.
            HttpHost | HttpHostRaw | HttpUserAgent | HttpReferer | HttpAccept | HttpAcceptEnc
            | HttpAcceptLang
                if !self.headers_done(Direction::ToServer) =>
            {
                None
            }
            HttpServer | HttpLocation if !self.headers_done(Direction::ToClient) => None,
            HttpCookie | HttpContentType | HttpContentLen | HttpConnection
                if !self.headers_done(dir) =>
            {
                None
            }
            HttpHost => self.host(),
            HttpHostRaw => self.host_raw(),
            HttpUserAgent => self.request_header("user-agent"),
            HttpCookie => match dir {
                Direction::ToServer => self.request_header("cookie"),
                Direction::ToClient => self.response_header("set-cookie"),
            },
            HttpReferer => self.request_header("referer"),
            HttpAccept => self.request_header("accept"),
            HttpAcceptEnc => self.request_header("accept-encoding"),
            HttpAcceptLang => self.request_header("accept-language"),
            HttpContentType => header_get(self.headers(dir), "content-type"),
            HttpContentLen => header_get(self.headers(dir), "content-length"),
            HttpConnection => header_get(self.headers(dir), "connection"),
            HttpServer => self.response_header("server"),
            HttpLocation => self.response_header("location"),
            HttpRequestBody => Some(self.request_body.as_slice()).filter(|v| nonempty(v)),
            HttpResponseBody => Some(self.response_body.as_slice()).filter(|v| nonempty(v)),
            FileData => match dir {
                Direction::ToServer => Some(self.request_body.as_slice()),
                Direction::ToClient => Some(self.response_body.as_slice()),
            }
            .filter(|v| nonempty(v)),
            FileName => self.file_name(dir),
            HttpStatCode => (resp >= HttpProgress::Line).then_some(self.status_code.as_slice()),
            HttpStatMsg => (resp >= HttpProgress::Line).then_some(self.status_msg.as_slice()),
            HttpResponseLine => {
                (resp >= HttpProgress::Line).then_some(self.response_line.as_slice())
            }
            _ => None,
        }
    }

    /// Multi-buffers: `http.request_header` / `http.response_header` (one
    /// `Name: value` per header); single buffers yield themselves.
    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        let which = match id {
            BufferId::HttpRequestHeader => Direction::ToServer,
            BufferId::HttpResponseHeader => Direction::ToClient,
            _ => return self.buffer(id, dir).into_iter().collect(),
        };
        if !self.headers_done(which) {
            return Vec::new();
        }
        self.cache.lines[which.index()]
            .get_or_init(|| {
                self.headers(which)
                    .iter()
                    .map(|h| {
                        let mut l = Vec::with_capacity(h.name.len() + 2 + h.value.len());
                        l.extend_from_slice(&h.name);
                        l.extend_from_slice(b": ");
                        l.extend_from_slice(&h.value);
                        l
                    })
                    .collect()
            })
            .iter()
            .map(|v| v.as_slice())
            .collect()
    }

    /// The progress of a direction as `app-layer-state` numbers Suricata's
    /// HTTP/1 states: `request_started` (0), `request_line` (1),
    /// `request_headers` (2), `request_body` (3), `request_trailer` (4),
    /// `request_complete` (5), and the same for responses. As in libhtp,
    /// the state is the part being parsed: once the line is in, the
    /// message is in its headers (2); once the headers are in and a body
    /// follows, in its body (3). Trailers of a chunked body are parsed
    /// as part of the body (3); a transaction exists only once its line
    /// is complete, so `request_line` (1) is not seen.
    pub fn state_progress(&self, dir: Direction) -> u8 {
        let p = match dir {
            Direction::ToServer => self.request_progress,
            Direction::ToClient => self.response_progress,
        };
        match p {
            HttpProgress::None => 0,
            HttpProgress::Line => 2,
            HttpProgress::Headers | HttpProgress::Body => 3,
            HttpProgress::Complete => 5,
        }
    }

    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.request_progress == HttpProgress::Complete,
            response_complete: self.response_progress == HttpProgress::Complete,
        }
    }

    /// The EVE `http` object, with Suricata's field names (extended
    /// logging).
    pub fn eve(&self) -> Value {
        crate::jsonw::tree(&crate::jsonw::object(|w| self.eve_write(w)))
    }

    /// The members of the EVE `http` object, written to `w` in key order.
    pub fn eve_write(&self, w: &mut crate::jsonw::JsonText) {
        let response = self.response_progress >= HttpProgress::Line;
        if let Some(h) = self.host() {
            w.field_lossy("hostname", h);
        }
        if let Some(ct) = self.response_header("content-type") {
            let ct = ct.split(|&c| c == b';').next().unwrap_or(ct);
            w.field_lossy("http_content_type", trim(ct));
        }
        if !self.method.is_empty() {
            w.field_lossy("http_method", &self.method);
        }
        if let Some(p) = self.port() {
            w.field_u64("http_port", p);
        }
        if let Some(r) = self.request_header("referer") {
            w.field_lossy("http_refer", r);
        }
        if let Some(ua) = self.request_header("user-agent") {
            w.field_lossy("http_user_agent", ua);
        }
        if response {
            w.field_u64("length", self.response_message_len);
        }
        if !self.request_protocol.is_empty() {
            w.field_lossy("protocol", &self.request_protocol);
        } else if !self.response_protocol.is_empty() {
            w.field_lossy("protocol", &self.response_protocol);
        }
        if response {
            if let Some(loc) = self.response_header("location") {
                w.field_lossy("redirect", loc);
            }
            match std::str::from_utf8(&self.status_code)
                .ok()
                .and_then(|c| c.parse::<u64>().ok())
            {
                Some(code) => w.field_u64("status", code),
                None => w.field_lossy("status_string", &self.status_code),
            };
        }
        if self.request_progress >= HttpProgress::Line {
            w.field_lossy("url", &self.uri_raw);
        }
        if let Some(xff) = self.request_header("x-forwarded-for") {
            w.field_lossy("xff", xff);
        }
    }
}

/// Where one direction's parser is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DirState {
    /// Waiting for a request or status line (empty lines are skipped).
    Line,
    Headers,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    /// The CRLF after a chunk's data.
    ChunkDataEnd,
    Trailers,
    UntilClose,
    /// CONNECT/Upgrade: the rest is not HTTP.
    Tunnel,
    /// After a gap: data is dropped until something that starts a message.
    Resync,
}

struct DirParser {
    state: DirState,
    line: Vec<u8>,
    line_overflow: bool,
    /// The last bytes of an overlong line, so that a request line cut
    /// short still ends with its protocol.
    line_tail: Vec<u8>,
    /// The transaction the current message belongs to.
    tx: Option<TxId>,
    /// Header count of the current message (for the cap).
    header_count: usize,
    /// The last header line seen, for folding.
    has_header: bool,
    decoder: Option<BodyDecoder>,
    body_limit_reported: bool,
    /// Content-Length values seen in this message.
    content_length: Option<u64>,
}

impl DirParser {
    fn new() -> Self {
        DirParser {
            state: DirState::Line,
            line: Vec::new(),
            line_overflow: false,
            line_tail: Vec::new(),
            tx: None,
            header_count: 0,
            has_header: false,
            decoder: None,
            body_limit_reported: false,
            content_length: None,
        }
    }
}

/// Per-flow HTTP state.
pub struct HttpState {
    cfg: AppLayerConfig,
    txs: VecDeque<HttpTx>,
    next_id: TxId,
    dirs: [DirParser; 2],
    /// An accepted `Upgrade: h2c`: the transaction, and the bytes of each
    /// direction after it (capped at [`H2C_PENDING`]).
    h2c: Option<(TxId, [Vec<u8>; 2])>,
    /// A `101` with `Upgrade: websocket`: the bytes of each direction
    /// after it (capped at [`H2C_PENDING`]), for the WebSocket parser.
    websocket: Option<[Vec<u8>; 2]>,
}

/// What an HTTP/1 flow hands to HTTP/2 when its `Upgrade: h2c` is
/// accepted.
pub struct H2cUpgrade {
    pub request: HttpTx,
    /// Bytes of each direction (to-server, to-client) after the switch.
    pub pending: [Vec<u8>; 2],
}

/// Bytes after an accepted `Upgrade: h2c` kept for the HTTP/2 parser
/// within one feed.
const H2C_PENDING: usize = 1 << 20;

/// Bytes of an overlong line's end kept (enough for ` HTTP/1.1\r\n`).
const LINE_TAIL: usize = 32;

fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

fn parse_content_length(v: &[u8]) -> Option<u64> {
    let v = trim(v);
    if v.is_empty() || !v.iter().all(|c| c.is_ascii_digit()) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

impl HttpState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        HttpState {
            cfg: cfg.clone(),
            txs: VecDeque::new(),
            next_id: 0,
            dirs: [DirParser::new(), DirParser::new()],
            h2c: None,
            websocket: None,
        }
    }

    pub fn config(&self) -> &AppLayerConfig {
        &self.cfg
    }

    /// The upgrade request and the bytes after it, once a `101` accepted
    /// an `Upgrade: h2c` (the flow is HTTP/2 from there).
    pub fn take_h2c_upgrade(&mut self) -> Option<H2cUpgrade> {
        let (id, pending) = self.h2c.take()?;
        let i = self.txs.iter().position(|t| t.common.id == id)?;
        let request = self.txs.remove(i)?;
        Some(H2cUpgrade { request, pending })
    }

    /// Whether a `101` switched the flow to WebSocket.
    pub fn websocket_upgraded(&self) -> bool {
        self.websocket.is_some()
    }

    /// The bytes of each direction (to-server, to-client) after a `101`
    /// that switched the flow to WebSocket, once.
    pub fn take_websocket_upgrade(&mut self) -> Option<[Vec<u8>; 2]> {
        self.websocket.take()
    }

    pub fn transactions(&self) -> impl Iterator<Item = &HttpTx> {
        self.txs.iter()
    }

    pub fn tx(&self, id: TxId) -> Option<&HttpTx> {
        // Ids are increasing; the deque is short.
        self.txs.iter().find(|t| t.common.id == id)
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut HttpTx> {
        self.txs.iter_mut().find(|t| t.common.id == id)
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&HttpTx) -> bool) {
        let current: Vec<TxId> = self.dirs.iter().filter_map(|d| d.tx).collect();
        self.txs
            .retain(|t| current.contains(&t.common.id) || keep(t));
    }

    fn ev(ev: &mut Vec<AppLayerEvent>, e: HttpEvent, tx: Option<TxId>) {
        ev.push(AppLayerEvent::Http(e, tx));
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        let mut pos = 0;
        while pos < data.len() {
            let rest = &data[pos..];
            match self.dirs[d].state {
                DirState::Line
                | DirState::Headers
                | DirState::ChunkSize
                | DirState::ChunkDataEnd
                | DirState::Trailers => {
                    let (chunk, complete) = match memchr::memchr(b'\n', rest) {
                        Some(i) => (&rest[..=i], true),
                        None => (rest, false),
                    };
                    pos += chunk.len();
                    self.append_line(dir, chunk, ev);
                    if complete {
                        let mut line = std::mem::take(&mut self.dirs[d].line);
                        let overflow = std::mem::replace(&mut self.dirs[d].line_overflow, false);
                        let tail = std::mem::take(&mut self.dirs[d].line_tail);
                        if overflow && self.dirs[d].state == DirState::Line {
                            line.extend_from_slice(&tail);
                        }
                        self.handle_line(dir, &line, overflow, ts, ev);
                        line.clear();
                        if self.dirs[d].line.is_empty() {
                            // Keep the allocation for the next line.
                            self.dirs[d].line = line;
                        }
                    }
                }
                DirState::Length(remaining) | DirState::ChunkData(remaining) => {
                    let n = (remaining.min(rest.len() as u64)) as usize;
                    self.body_data(dir, &rest[..n], n as u64, ev);
                    pos += n;
                    self.body_consumed(dir, n as u64, ev);
                }
                DirState::UntilClose => {
                    self.body_data(dir, rest, rest.len() as u64, ev);
                    pos = data.len();
                }
                DirState::Tunnel => {
                    let pending = match (self.h2c.as_mut(), self.websocket.as_mut()) {
                        (Some((_, p)), _) | (None, Some(p)) => Some(p),
                        _ => None,
                    };
                    if let Some(pending) = pending {
                        let room = H2C_PENDING.saturating_sub(pending[d].len());
                        pending[d].extend_from_slice(&rest[..rest.len().min(room)]);
                    }
                    pos = data.len();
                }
                DirState::Resync => {
                    if looks_like_message_start(dir, rest) {
                        self.dirs[d].state = DirState::Line;
                    } else {
                        pos = data.len();
                    }
                }
            }
        }
    }

    fn append_line(&mut self, dir: Direction, chunk: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let max = self.cfg.http_max_line;
        let p = &mut self.dirs[dir.index()];
        let room = max.saturating_sub(p.line.len());
        if chunk.len() > room {
            p.line.extend_from_slice(&chunk[..room]);
            p.line_tail.extend_from_slice(&chunk[room..]);
            if p.line_tail.len() > LINE_TAIL {
                let cut = p.line_tail.len() - LINE_TAIL;
                p.line_tail.drain(..cut);
            }
            if !p.line_overflow {
                p.line_overflow = true;
                let e = match dir {
                    Direction::ToServer => HttpEvent::RequestFieldTooLong,
                    Direction::ToClient => HttpEvent::ResponseFieldTooLong,
                };
                let tx = p.tx;
                Self::ev(ev, e, tx);
            }
        } else {
            p.line.extend_from_slice(chunk);
        }
    }

    /// Handles one complete line (terminator included unless truncated).
    fn handle_line(
        &mut self,
        dir: Direction,
        raw: &[u8],
        overflow: bool,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        let mut line = raw;
        if line.last() == Some(&b'\n') {
            line = &line[..line.len() - 1];
        }
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        let _ = overflow;
        match self.dirs[d].state {
            DirState::Line => {
                if line.iter().all(|c| matches!(c, b' ' | b'\t')) {
                    return;
                }
                match dir {
                    Direction::ToServer => self.request_line(line, ts, ev),
                    Direction::ToClient => self.status_line(line, ts, ev),
                }
            }
            DirState::Headers => {
                if let Some(id) = self.dirs[d].tx {
                    let max_bytes = self.cfg.http_max_header_bytes;
                    if let Some(tx) = self.tx_mut(id) {
                        let raw_buf = match dir {
                            Direction::ToServer => &mut tx.request_headers_raw,
                            Direction::ToClient => &mut tx.response_headers_raw,
                        };
                        let room = max_bytes.saturating_sub(raw_buf.len());
                        raw_buf.extend_from_slice(&raw[..raw.len().min(room)]);
                    }
                }
                if line.is_empty() {
                    self.headers_done(dir, ev);
                } else {
                    self.header_line(dir, line, ev);
                }
            }
            DirState::ChunkSize => {
                let t = trim(line);
                if t.is_empty() {
                    // Tolerate stray empty lines between chunks.
                    return;
                }
                let hex = t.split(|&c| c == b';').next().unwrap_or(t);
                let hex = trim(hex);
                let size = if !hex.is_empty() && hex.len() <= 15 {
                    hex.iter().try_fold(0u64, |acc, &c| {
                        (c as char).to_digit(16).map(|v| acc << 4 | u64::from(v))
                    })
                } else {
                    None
                };
                match size {
                    Some(0) => self.dirs[d].state = DirState::Trailers,
                    Some(n) => self.dirs[d].state = DirState::ChunkData(n),
                    None => {
                        let e = match dir {
                            Direction::ToServer => HttpEvent::InvalidRequestChunkLen,
                            Direction::ToClient => HttpEvent::InvalidResponseChunkLen,
                        };
                        let tx = self.dirs[d].tx;
                        Self::ev(ev, e, tx);
                        self.message_done(dir, ev);
                        self.dirs[d].state = DirState::Resync;
                    }
                }
            }
            DirState::ChunkDataEnd => {
                if trim(line).is_empty() {
                    self.dirs[d].state = DirState::ChunkSize;
                } else {
                    // The CRLF was missing: this is already the next size.
                    self.dirs[d].state = DirState::ChunkSize;
                    self.handle_line(dir, raw, overflow, ts, ev);
                }
            }
            DirState::Trailers if line.is_empty() => self.message_done(dir, ev),
            _ => {}
        }
    }

    fn new_tx(&mut self, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) -> TxId {
        let id = self.next_id;
        self.next_id += 1;
        if self.txs.len() >= self.cfg.max_transactions {
            // Drop the oldest transaction that no parser is working on.
            let busy: Vec<TxId> = self.dirs.iter().filter_map(|d| d.tx).collect();
            if let Some(i) = self.txs.iter().position(|t| !busy.contains(&t.common.id)) {
                self.txs.remove(i);
            }
            Self::ev(ev, HttpEvent::TooManyTransactions, Some(id));
        }
        self.txs.push_back(HttpTx {
            common: TxCommon::new(id, ts),
            ..Default::default()
        });
        id
    }

    fn request_line(&mut self, line: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        // libhtp (REQ_FINALIZE): a line that follows a request with no
        // body and has no HTTP method is that request's unexpected body.
        let m_end = line
            .iter()
            .position(|c| matches!(c, b' ' | b'\t'))
            .unwrap_or(line.len());
        if !is_known_method(&line[..m_end]) {
            let limit = self.cfg.http_request_body_limit;
            if let Some(prev) = self.txs.back_mut().filter(|t| {
                t.request_progress == HttpProgress::Complete && t.request_body.is_empty()
            }) {
                let room = limit.saturating_sub(prev.request_body.len());
                prev.request_body
                    .extend_from_slice(&line[..line.len().min(room)]);
                let id = prev.common.id;
                Self::ev(ev, HttpEvent::RequestBodyUnexpected, Some(id));
                return;
            }
        }
        let id = self.new_tx(ts, ev);
        let mut events = Vec::new();
        let mut l = line;
        if l.first().is_some_and(|c| matches!(c, b' ' | b'\t')) {
            events.push(HttpEvent::RequestLineLeadingWhitespace);
            l = trim(l);
        }
        let m_end = l
            .iter()
            .position(|c| matches!(c, b' ' | b'\t'))
            .unwrap_or(l.len());
        let method = &l[..m_end];
        let after = &l[m_end..];
        let after = &after[after
            .iter()
            .position(|c| !matches!(c, b' ' | b'\t'))
            .unwrap_or(after.len())..];
        // The protocol is the last word when it looks like one; anything
        // before it, spaces included, is the URI.
        let (uri, proto) = match after.iter().rposition(|c| matches!(c, b' ' | b'\t')) {
            Some(i)
                if after[i + 1..].starts_with(b"HTTP/") || after[i + 1..].starts_with(b"http/") =>
            {
                (trim(&after[..i]), &after[i + 1..])
            }
            _ => (after, &b""[..]),
        };
        if method.is_empty() || !method.iter().all(|&c| is_token_char(c)) {
            events.push(HttpEvent::RequestLineInvalid);
        }
        if proto.is_empty() {
            events.push(HttpEvent::RequestLineMissingProtocol);
        }
        let http09 = proto.is_empty();
        for e in events {
            Self::ev(ev, e, Some(id));
        }
        if let Some(tx) = self.tx_mut(id) {
            tx.request_line = line.to_vec();
            tx.method = method.to_vec();
            tx.uri_raw = uri.to_vec();
            tx.request_protocol = proto.to_vec();
            tx.request_progress = if http09 {
                HttpProgress::Complete
            } else {
                HttpProgress::Line
            };
        }
        let p = &mut self.dirs[0];
        p.header_count = 0;
        p.has_header = false;
        p.content_length = None;
        p.body_limit_reported = false;
        if http09 {
            // HTTP/0.9: no headers, no body.
            p.tx = None;
            p.state = DirState::Line;
        } else {
            p.tx = Some(id);
            p.state = DirState::Headers;
        }
    }

    fn status_line(&mut self, line: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let l = trim(line);
        let p_end = l
            .iter()
            .position(|c| matches!(c, b' ' | b'\t'))
            .unwrap_or(l.len());
        let proto = &l[..p_end];
        let rest = trim(&l[p_end..]);
        let c_end = rest
            .iter()
            .position(|c| matches!(c, b' ' | b'\t'))
            .unwrap_or(rest.len());
        let code = &rest[..c_end];
        let msg = trim(&rest[c_end..]);

        // A 100-continue for a transaction already answered continues it.
        let id = match self.dirs[1].tx {
            Some(id) => id,
            None => {
                let pending = self
                    .txs
                    .iter()
                    .find(|t| {
                        t.response_progress == HttpProgress::None
                            && t.request_progress >= HttpProgress::Line
                    })
                    .map(|t| t.common.id);
                match pending {
                    Some(id) => id,
                    None => {
                        let id = self.new_tx(ts, ev);
                        Self::ev(ev, HttpEvent::UnableToMatchResponseToRequest, Some(id));
                        id
                    }
                }
            }
        };
        if !proto.starts_with(b"HTTP/") && !proto.starts_with(b"http/") {
            Self::ev(ev, HttpEvent::ResponseInvalidProtocol, Some(id));
        }
        if code.len() != 3 || !code.iter().all(|c| c.is_ascii_digit()) {
            Self::ev(ev, HttpEvent::ResponseInvalidStatus, Some(id));
        }
        if let Some(tx) = self.tx_mut(id) {
            tx.response_line = line.to_vec();
            tx.response_protocol = proto.to_vec();
            tx.status_code = code.to_vec();
            tx.status_msg = msg.to_vec();
            tx.response_headers.clear();
            tx.response_headers_raw.clear();
            tx.response_progress = HttpProgress::Line;
        }
        let p = &mut self.dirs[1];
        p.tx = Some(id);
        p.header_count = 0;
        p.has_header = false;
        p.content_length = None;
        p.body_limit_reported = false;
        p.state = DirState::Headers;
    }

    fn header_line(&mut self, dir: Direction, line: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        let Some(id) = self.dirs[d].tx else {
            return;
        };
        let max_headers = self.cfg.http_max_headers;
        let folded = matches!(line.first(), Some(b' ') | Some(b'\t'));
        if folded {
            if !self.dirs[d].has_header {
                let e = match dir {
                    Direction::ToServer => HttpEvent::InvalidRequestFieldFolding,
                    Direction::ToClient => HttpEvent::InvalidResponseFieldFolding,
                };
                Self::ev(ev, e, Some(id));
                return;
            }
            let cont = trim(line);
            let max_line = self.cfg.http_max_line;
            if let Some(tx) = self.tx_mut(id) {
                let headers = match dir {
                    Direction::ToServer => &mut tx.request_headers,
                    Direction::ToClient => &mut tx.response_headers,
                };
                if let Some(h) = headers.last_mut() {
                    if h.value.len() + cont.len() < max_line {
                        if !h.value.is_empty() {
                            h.value.push(b' ');
                        }
                        h.value.extend_from_slice(cont);
                    }
                }
            }
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => (trim(&line[..i]), trim(&line[i + 1..])),
            None => {
                let e = match dir {
                    Direction::ToServer => HttpEvent::RequestFieldMissingColon,
                    Direction::ToClient => HttpEvent::ResponseFieldMissingColon,
                };
                Self::ev(ev, e, Some(id));
                (trim(line), &b""[..])
            }
        };
        if name.is_empty() || !name.iter().all(|&c| is_token_char(c)) {
            let e = match dir {
                Direction::ToServer => HttpEvent::RequestHeaderInvalid,
                Direction::ToClient => HttpEvent::ResponseHeaderInvalid,
            };
            Self::ev(ev, e, Some(id));
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            match parse_content_length(value) {
                Some(n) => {
                    if let Some(prev) = self.dirs[d].content_length {
                        if prev != n {
                            let e = match dir {
                                Direction::ToServer => {
                                    HttpEvent::DuplicateContentLengthFieldInRequest
                                }
                                Direction::ToClient => {
                                    HttpEvent::DuplicateContentLengthFieldInResponse
                                }
                            };
                            Self::ev(ev, e, Some(id));
                        }
                    } else {
                        self.dirs[d].content_length = Some(n);
                    }
                }
                None => {
                    let e = match dir {
                        Direction::ToServer => HttpEvent::InvalidContentLengthFieldInRequest,
                        Direction::ToClient => HttpEvent::InvalidContentLengthFieldInResponse,
                    };
                    Self::ev(ev, e, Some(id));
                }
            }
        }
        let Some(tx) = self.txs.iter_mut().find(|t| t.common.id == id) else {
            return;
        };
        let headers = match dir {
            Direction::ToServer => &mut tx.request_headers,
            Direction::ToClient => &mut tx.response_headers,
        };
        if let Some(h) = headers
            .iter_mut()
            .find(|h| h.name.eq_ignore_ascii_case(name))
        {
            // libhtp merges repetitions into one header.
            if h.value.len() + value.len() + 2 <= self.cfg.http_max_line {
                h.value.extend_from_slice(b", ");
                h.value.extend_from_slice(value);
            }
            let e = match dir {
                Direction::ToServer => HttpEvent::RequestHeaderRepetition,
                Direction::ToClient => HttpEvent::ResponseHeaderRepetition,
            };
            if !name.eq_ignore_ascii_case(b"content-length") {
                ev.push(AppLayerEvent::Http(e, Some(id)));
            }
            self.dirs[d].has_header = true;
            return;
        }
        if self.dirs[d].header_count >= max_headers {
            if self.dirs[d].header_count == max_headers {
                let e = match dir {
                    Direction::ToServer => HttpEvent::RequestTooManyHeaders,
                    Direction::ToClient => HttpEvent::ResponseTooManyHeaders,
                };
                ev.push(AppLayerEvent::Http(e, Some(id)));
                self.dirs[d].header_count += 1;
            }
            self.dirs[d].has_header = false;
            return;
        }
        headers.push(Header {
            name: name.to_vec(),
            value: value.to_vec(),
        });
        self.dirs[d].header_count += 1;
        self.dirs[d].has_header = true;
    }

    fn headers_done(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        let Some(id) = self.dirs[d].tx else {
            self.dirs[d].state = DirState::Line;
            return;
        };
        let content_length = self.dirs[d].content_length;
        let decompress_limit = self.cfg.http_decompress_limit;
        let Some(tx) = self.txs.iter_mut().find(|t| t.common.id == id) else {
            self.dirs[d].state = DirState::Line;
            return;
        };
        let headers = match dir {
            Direction::ToServer => &tx.request_headers,
            Direction::ToClient => &tx.response_headers,
        };
        let te = header_get(headers, "transfer-encoding").map(|v| v.to_ascii_lowercase());
        let chunked = te
            .as_deref()
            .is_some_and(|v| memchr::memmem::find(v, b"chunked").is_some());
        let mut events = Vec::new();
        if te.is_some() && !chunked {
            events.push(match dir {
                Direction::ToServer => HttpEvent::InvalidTransferEncodingValueInRequest,
                Direction::ToClient => HttpEvent::InvalidTransferEncodingValueInResponse,
            });
        }
        let next = match dir {
            Direction::ToServer => {
                if tx.request_header("host").is_none()
                    && tx.request_protocol.eq_ignore_ascii_case(b"HTTP/1.1")
                {
                    events.push(HttpEvent::MissingHostHeader);
                }
                if let Some(auth) = tx.request_header("authorization") {
                    if !auth_scheme_known(auth) {
                        events.push(HttpEvent::RequestAuthUnrecognized);
                    }
                }
                tx.request_progress = HttpProgress::Headers;
                if chunked {
                    DirState::ChunkSize
                } else {
                    match content_length {
                        Some(n) if n > 0 => DirState::Length(n),
                        _ => DirState::Line,
                    }
                }
            }
            Direction::ToClient => {
                let code: u32 = std::str::from_utf8(&tx.status_code)
                    .ok()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                tx.response_progress = HttpProgress::Headers;
                if (100..200).contains(&code) && code != 101 {
                    // Interim response: the real one follows for the same
                    // transaction.
                    tx.response_progress = HttpProgress::None;
                    self.dirs[d].state = DirState::Line;
                    return;
                }
                let tunnel = code == 101 || (tx.is_connect() && (200..300).contains(&code));
                if tunnel {
                    let h2c = |v: Option<&[u8]>| {
                        v.is_some_and(|v| {
                            v.split(|&c| c == b',')
                                .any(|t| trim(t).eq_ignore_ascii_case(b"h2c"))
                        })
                    };
                    if code == 101
                        && h2c(tx.request_header("upgrade"))
                        && h2c(tx.response_header("upgrade"))
                    {
                        self.h2c = Some((tx.common.id, [Vec::new(), Vec::new()]));
                    } else if code == 101
                        && tx
                            .response_header("upgrade")
                            .is_some_and(|v| trim(v).eq_ignore_ascii_case(b"websocket"))
                    {
                        // Suricata asks for `websocket` on the response's
                        // `Upgrade` alone.
                        self.websocket = Some([Vec::new(), Vec::new()]);
                    }
                    tx.response_progress = HttpProgress::Complete;
                    self.dirs[d].tx = None;
                    self.dirs[d].state = DirState::Tunnel;
                    self.dirs[0].state = DirState::Tunnel;
                    return;
                }
                let no_body = tx.method.eq_ignore_ascii_case(b"HEAD") || code == 204 || code == 304;
                let enc = header_get(&tx.response_headers, "content-encoding")
                    .map(|v| trim(v).to_ascii_lowercase());
                let coding = match enc.as_deref() {
                    Some(b"gzip") | Some(b"x-gzip") => Some(Coding::Gzip),
                    Some(b"deflate") => Some(Coding::Deflate),
                    _ => None,
                };
                self.dirs[d].decoder = coding.map(|c| BodyDecoder::new(c, decompress_limit));
                if chunked && tx.response_protocol.eq_ignore_ascii_case(b"HTTP/1.0") {
                    events.push(HttpEvent::ResponseChunkedOldProto);
                }
                if no_body {
                    DirState::Line
                } else if chunked {
                    DirState::ChunkSize
                } else {
                    match content_length {
                        Some(0) => DirState::Line,
                        Some(n) => DirState::Length(n),
                        None => DirState::UntilClose,
                    }
                }
            }
        };
        for e in events {
            ev.push(AppLayerEvent::Http(e, Some(id)));
        }
        if next == DirState::Line {
            self.message_done(dir, ev);
        } else {
            if let Some(tx) = self.tx_mut(id) {
                match dir {
                    Direction::ToServer => tx.request_progress = HttpProgress::Body,
                    Direction::ToClient => tx.response_progress = HttpProgress::Body,
                }
            }
            self.dirs[d].state = next;
        }
    }

    fn body_data(
        &mut self,
        dir: Direction,
        data: &[u8],
        wire_len: u64,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        let Some(id) = self.dirs[d].tx else {
            return;
        };
        let limit = match dir {
            Direction::ToServer => self.cfg.http_request_body_limit,
            Direction::ToClient => self.cfg.http_response_body_limit,
        };
        let mut decoder = self.dirs[d].decoder.take();
        let mut limit_reported = self.dirs[d].body_limit_reported;
        let Some(tx) = self.txs.iter_mut().find(|t| t.common.id == id) else {
            return;
        };
        let (body, msg_len) = match dir {
            Direction::ToServer => (&mut tx.request_body, &mut tx.request_message_len),
            Direction::ToClient => (&mut tx.response_body, &mut tx.response_message_len),
        };
        *msg_len = msg_len.saturating_add(wire_len);
        let mut events = Vec::new();
        let mut decoded = Vec::new();
        let plain: &[u8] = match decoder.as_mut() {
            Some(dec) => {
                let o = dec.feed(data, &mut decoded);
                if o.failed {
                    events.push(HttpEvent::GzipDecompressionFailed);
                }
                if o.limit_hit {
                    events.push(HttpEvent::CompressionBomb);
                }
                &decoded
            }
            None => data,
        };
        let room = limit.saturating_sub(body.len());
        if plain.len() > room && !limit_reported {
            limit_reported = true;
            events.push(match dir {
                Direction::ToServer => HttpEvent::RequestBodyLimitReached,
                Direction::ToClient => HttpEvent::ResponseBodyLimitReached,
            });
        }
        body.extend_from_slice(&plain[..plain.len().min(room)]);
        for e in events {
            ev.push(AppLayerEvent::Http(e, Some(id)));
        }
        let p = &mut self.dirs[d];
        // Once the body is full there is nothing more to inflate.
        if !limit_reported {
            p.decoder = decoder;
        }
        p.body_limit_reported = limit_reported;
    }

    fn message_done(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        if let Some(id) = self.dirs[d].tx.take() {
            if let Some(tx) = self.tx_mut(id) {
                match dir {
                    Direction::ToServer => tx.request_progress = HttpProgress::Complete,
                    Direction::ToClient => tx.response_progress = HttpProgress::Complete,
                }
            }
        }
        let p = &mut self.dirs[d];
        p.decoder = None;
        if p.state != DirState::Tunnel {
            p.state = DirState::Line;
        }
    }

    /// A gap of `len` bytes in one direction (`None`: of unknown size).
    /// Inside an identity body of known extent (a Content-Length body, a
    /// chunk's data, a body delimited by the connection's close) the gap is
    /// consumed as body bytes that were never seen, as libhtp does for
    /// parsers that accept gaps: the message goes on and the body buffer
    /// keeps what arrived on both sides of the hole. Anywhere else (in a
    /// line, a chunk header, a compressed body, past the body's end) the
    /// message in progress is closed as far as it got and the parser waits
    /// for the start of a new message.
    pub fn on_gap(&mut self, dir: Direction, len: Option<u64>, ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        if self.dirs[d].state == DirState::Tunnel {
            return;
        }
        if let (Some(n), None) = (len, self.dirs[d].decoder.as_ref()) {
            if n > 0 && self.skip_body(dir, n, ev) {
                return;
            }
        }
        let tx = self.dirs[d].tx;
        ev.push(AppLayerEvent::Http(HttpEvent::StreamGap, tx));
        self.message_done(dir, ev);
        self.dirs[d].line.clear();
        self.dirs[d].line_tail.clear();
        self.dirs[d].line_overflow = false;
        self.dirs[d].state = DirState::Resync;
    }

    /// Consumes `n` missing bytes inside the current body; false when they
    /// do not fit in it.
    fn skip_body(&mut self, dir: Direction, n: u64, ev: &mut Vec<AppLayerEvent>) -> bool {
        let fits = match self.dirs[dir.index()].state {
            DirState::Length(rem) | DirState::ChunkData(rem) => n <= rem,
            DirState::UntilClose => true,
            _ => false,
        };
        if fits {
            // No bytes to keep, but the message length counts them.
            self.body_data(dir, &[], n, ev);
            self.body_consumed(dir, n, ev);
        }
        fits
    }

    /// After `n` bytes of a body (at most what is left of it): the state
    /// that follows (the message ends with a Content-Length body, a chunk
    /// waits for its CRLF, a body until close goes on).
    fn body_consumed(&mut self, dir: Direction, n: u64, ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        match self.dirs[d].state {
            DirState::Length(rem) if rem == n => self.message_done(dir, ev),
            DirState::Length(rem) => self.dirs[d].state = DirState::Length(rem - n),
            DirState::ChunkData(rem) if rem == n => self.dirs[d].state = DirState::ChunkDataEnd,
            DirState::ChunkData(rem) => self.dirs[d].state = DirState::ChunkData(rem - n),
            _ => {}
        }
    }

    /// The direction ended (FIN/RST): a body delimited by the connection
    /// close is complete.
    pub fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        if self.dirs[d].tx.is_some() {
            self.message_done(dir, ev);
        }
    }
}

/// Whether bytes after a gap plausibly start a new message.
fn looks_like_message_start(dir: Direction, data: &[u8]) -> bool {
    match dir {
        Direction::ToServer => {
            let end = data.iter().position(|&c| c == b' ').unwrap_or(data.len());
            end > 0
                && end <= 16
                && end < data.len()
                && data[..end].iter().all(|c| c.is_ascii_uppercase())
        }
        Direction::ToClient => data.starts_with(b"HTTP/"),
    }
}

/// Methods libhtp knows (`htp_convert_method_to_number`).
fn is_known_method(m: &[u8]) -> bool {
    const KNOWN: &[&[u8]] = &[
        b"GET",
        b"PUT",
        b"POST",
        b"DELETE",
        b"CONNECT",
        b"OPTIONS",
        b"TRACE",
        b"PATCH",
        b"PROPFIND",
        b"PROPPATCH",
        b"MKCOL",
        b"COPY",
        b"MOVE",
        b"LOCK",
        b"UNLOCK",
        b"VERSION-CONTROL",
        b"CHECKOUT",
        b"UNCHECKOUT",
        b"CHECKIN",
        b"UPDATE",
        b"LABEL",
        b"REPORT",
        b"MKWORKSPACE",
        b"MKACTIVITY",
        b"BASELINE-CONTROL",
        b"MERGE",
        b"INVALID",
        b"HEAD",
    ];
    KNOWN.contains(&m)
}

/// An `Authorization` value libhtp recognises: it begins (any case) with
/// `basic`, `digest` or `bearer`.
fn auth_scheme_known(value: &[u8]) -> bool {
    [&b"basic"[..], b"digest", b"bearer"].iter().any(|s| {
        value
            .get(..s.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(s))
    })
}
