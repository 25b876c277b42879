//! PostgreSQL over TCP, protocol 3 (Suricata's `rust/src/pgsql`).
//!
//! Messages of both sides are parsed as they complete: the client's
//! untagged startup packets (StartupMessage, SSLRequest, CancelRequest)
//! and tagged messages (simple query `Q`, password / SASL `p`, terminate
//! `X`), the server's authentication requests and results (`R`),
//! parameter status (`S`), backend key data (`K`), row descriptions
//! (`T`), data rows (`D`, counted and summed, not kept), command
//! completion (`C`), ready-for-query (`Z`), errors and notices (`E`,
//! `N`), notifications (`A`) and the one-byte answer to an SSLRequest.
//! Transactions follow Suricata's state machine: a client request opens
//! one, the server's messages go to the latest, which completes on
//! ReadyForQuery, an authentication request or the SSL answer. An
//! accepted SSLRequest ends the parsing (Suricata hands the flow to TLS;
//! see `AppLayerState::switch_upgrade`). A gap is skipped: the side resumes
//! at the next bytes that parse as a message. Message bodies are kept up
//! to [`MAX_MESSAGE`]; a longer message is cut there and the rest skipped
//! (`oversized_message`, Vigil's: Suricata's parser raises no events); a
//! length below the minimum is `malformed_message` and stops that side.

use serde_json::{json, Map, Value};

use crate::events::PgsqlEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};

/// Suricata's default port (its probing parsers are registered there
/// only).
pub const PORT: u16 = 5432;
/// Body bytes kept per message.
pub const MAX_MESSAGE: usize = 256 * 1024;
/// Most parameters kept per startup message or transaction.
const MAX_PARAMS: usize = 64;

const SSL_REQUEST: u32 = (1234 << 16) | 5679;
const CANCEL_REQUEST: u32 = (1234 << 16) | 5678;
const GSSENC_REQUEST: u32 = (1234 << 16) | 5680;

/// A client message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    SslRequest,
    Startup {
        major: u16,
        minor: u16,
        params: Vec<(Vec<u8>, Vec<u8>)>,
    },
    Password(Vec<u8>),
    SaslInitial {
        mechanism: Vec<u8>,
        param: Vec<u8>,
    },
    SaslResponse(Vec<u8>),
    SimpleQuery(Vec<u8>),
    Cancel {
        pid: u32,
        key: u32,
    },
    Terminate,
    Unknown(u8),
}

/// A server message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    SslAccepted,
    SslRejected,
    Error(Vec<(u8, Vec<u8>)>),
    Notice(Vec<(u8, Vec<u8>)>),
    /// `R` with its type (0 ok, 3 cleartext, 5 MD5, 9 SSPI, 10 SASL, 11
    /// SASL continue, 12 SASL final) and the rest of the body.
    Auth(u32, Vec<u8>),
    ParameterStatus(Vec<u8>, Vec<u8>),
    BackendKeyData(u32, u32),
    CommandComplete(Vec<u8>),
    ReadyForQuery(u8),
    RowDescription(u16),
    /// The data rows before a CommandComplete, summed up.
    DataRows {
        rows: u64,
        size: u64,
    },
    Notification {
        pid: u32,
        channel: Vec<u8>,
        payload: Vec<u8>,
    },
    Unknown(u8),
}

#[derive(Debug)]
pub struct PgsqlTx {
    pub(crate) common: TxCommon,
    pub request: Option<Request>,
    pub responses: Vec<Response>,
    rows: u64,
    data_size: u64,
    req_done: bool,
    res_done: bool,
}

impl Tx for PgsqlTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.req_done,
            response_complete: self.res_done,
        }
    }
}

/// The error and notice fields Suricata's EVE schema allows.
const SCHEMA_FIELDS: &[u8] = b"SVCMFLR";

/// The name Suricata logs an error or notice field under.
fn field_name(t: u8) -> &'static str {
    match t {
        b'S' => "severity_localizable",
        b'V' => "severity_non_localizable",
        b'C' => "code",
        b'M' => "message",
        b'D' => "detail",
        b'H' => "hint",
        b'P' => "position",
        b'p' => "internal_position",
        b'q' => "internal_query",
        b'W' => "where",
        b's' => "schema_name",
        b't' => "table_name",
        b'c' => "column_name",
        b'd' => "data_type",
        b'n' => "constraint_name",
        b'F' => "file",
        b'L' => "line",
        b'R' => "routine",
        _ => "unknown_field_type",
    }
}

/// Suricata's names of the startup and runtime parameters it knows.
fn param_name(n: &[u8]) -> Value {
    let known = match n {
        b"DateStyle" => "date_style",
        b"IntervalStyle" => "interval_style",
        b"TimeZone" => "time_zone",
        _ => return suri_str(n),
    };
    known.into()
}

fn param_obj(n: &[u8], v: &[u8]) -> Value {
    let mut m = Map::new();
    let key = match param_name(n) {
        Value::String(s) => s,
        _ => String::new(),
    };
    m.insert(key, suri_str(v));
    Value::Object(m)
}

fn mechanism_name(m: &[u8]) -> Value {
    match m {
        b"SCRAM-SHA-256" => "scram_SHA256".into(),
        b"SCRAM-SHA-256-PLUS" => "scram_SHA256_plus".into(),
        _ => suri_str(m),
    }
}

impl PgsqlTx {
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        // Suricata's own transaction numbering, from 1.
        m.insert("tx_id".into(), (self.common.id + 1).into());
        if let Some(r) = &self.request {
            m.insert("request".into(), request_eve(r));
        }
        if !self.responses.is_empty() {
            m.insert("response".into(), self.response_eve());
        }
        Value::Object(m)
    }

    fn response_eve(&self) -> Value {
        let mut o = Map::new();
        let mut params: Vec<Value> = Vec::new();
        for r in &self.responses {
            match r {
                Response::SslAccepted => {
                    o.insert("ssl_accepted".into(), true.into());
                }
                Response::SslRejected => {
                    o.insert("ssl_accepted".into(), false.into());
                }
                Response::Error(f) | Response::Notice(f) => {
                    // Suricata also logs the other fields (detail, hint,
                    // position ...), which its own EVE schema does not
                    // allow; Vigil keeps to the schema.
                    for (t, v) in f.iter().filter(|(t, _)| SCHEMA_FIELDS.contains(t)) {
                        o.insert(field_name(*t).into(), suri_str(v));
                    }
                }
                Response::Auth(t, p) => match t {
                    0 => {
                        o.insert("message".into(), "authentication_ok".into());
                    }
                    3 => {
                        o.insert("message".into(), "authentication_cleartext_password".into());
                    }
                    5 => {
                        o.insert("authentication_md5_password".into(), suri_str(p));
                    }
                    9 => {
                        o.insert("authentication_sspi".into(), suri_str(p));
                    }
                    10 => {
                        o.insert("message".into(), "authentication_sasl".into());
                    }
                    11 => {
                        o.insert("message".into(), "authentication_sasl_continue".into());
                    }
                    12 => {
                        o.insert("authentication_sasl_final".into(), suri_str(p));
                    }
                    _ => {}
                },
                Response::ParameterStatus(n, v) => {
                    if params.len() < MAX_PARAMS {
                        params.push(param_obj(n, v));
                    }
                }
                Response::BackendKeyData(pid, key) => {
                    o.insert("process_id".into(), (*pid).into());
                    o.insert("secret_key".into(), (*key).into());
                }
                Response::CommandComplete(c) => {
                    o.insert("command_completed".into(), suri_str(c));
                }
                Response::RowDescription(n) => {
                    o.insert("field_count".into(), (*n).into());
                }
                Response::DataRows { rows, size } => {
                    o.insert("data_rows".into(), (*rows).into());
                    o.insert("data_size".into(), (*size).into());
                }
                Response::Notification {
                    pid,
                    channel,
                    payload,
                } => {
                    o.insert("pid".into(), (*pid).into());
                    o.insert("channel_name".into(), suri_str(channel));
                    o.insert("payload".into(), suri_str(payload));
                }
                Response::ReadyForQuery(_) | Response::Unknown(_) => {}
            }
        }
        if !params.is_empty() {
            o.insert("parameter_status".into(), Value::Array(params));
        }
        Value::Object(o)
    }

    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        match (id, &self.request) {
            (BufferId::PgsqlQuery, Some(Request::SimpleQuery(q))) => vec![&q[..]],
            _ => Vec::new(),
        }
    }
}

fn request_eve(r: &Request) -> Value {
    match r {
        Request::Startup {
            major,
            minor,
            params,
        } => {
            let mut sp = Map::new();
            let mut opt = Vec::new();
            for (n, v) in params {
                if n == b"user" && !sp.contains_key("user") {
                    sp.insert("user".into(), suri_str(v));
                } else if opt.len() < MAX_PARAMS {
                    opt.push(param_obj(n, v));
                }
            }
            if !opt.is_empty() {
                sp.insert("optional_parameters".into(), Value::Array(opt));
            }
            json!({"protocol_version": format!("{major}.{minor}"), "startup_parameters": sp})
        }
        Request::SslRequest => json!({"message": "SSL Request"}),
        Request::SaslInitial { mechanism, param } => json!({
            "sasl_authentication_mechanism": mechanism_name(mechanism),
            "sasl_param": suri_str(param),
        }),
        // Passwords are not logged (Suricata's default, `log-password: no`).
        Request::Password(_) => json!({"password_redacted": true}),
        Request::SaslResponse(p) => json!({"sasl_response": suri_str(p)}),
        Request::SimpleQuery(q) => json!({"simple_query": suri_str(q)}),
        Request::Cancel { pid, key } => json!({
            "message": "cancel_request", "process_id": pid, "secret_key": key,
        }),
        Request::Terminate => json!({"message": "termination_message"}),
        Request::Unknown(_) => json!({}),
    }
}

/// Where the connection is, as far as the parsers need to know (a subset
/// of Suricata's `PgsqlStateProgress`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Idle,
    SslRequested,
    /// The server asked for a password (cleartext or MD5).
    PasswordAsked,
    /// The server offered SASL: an initial response follows.
    SaslAsked,
    /// SASL under way: responses follow.
    SaslContinue,
    /// A request that opens a transaction was just read.
    RequestRead,
    /// Server messages of the current transaction.
    Responding,
    /// SSL accepted: TLS from here.
    Tls,
}

#[derive(Debug, Default)]
struct Side {
    buf: Vec<u8>,
    /// Bytes of an oversized message still to skip.
    to_skip: u64,
    /// After a gap: wait for bytes that parse as a message.
    gap: bool,
    /// Unrecoverable framing error.
    broken: bool,
}

/// Per-flow PostgreSQL state.
#[derive(Debug)]
pub struct PgsqlState {
    cfg: AppLayerConfig,
    txs: TxList<PgsqlTx>,
    st: St,
    sides: [Side; 2],
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// `b` up to its first NUL, and what follows the NUL (`None` without
/// one).
fn cstr(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = b.iter().position(|&c| c == 0)?;
    Some((&b[..i], &b[i + 1..]))
}

/// The framing of the message at the start of `b`.
#[derive(Debug, PartialEq, Eq)]
enum Frame {
    /// More bytes are needed.
    More,
    /// Bytes that cannot start a message.
    Bad,
    /// `(tag, header length, body length)`: tag 0 for a startup packet.
    Msg(u8, usize, usize),
}

fn frame_request(b: &[u8]) -> Frame {
    let Some(&first) = b.first() else {
        return Frame::More;
    };
    if first == 0 {
        // Untagged: length (with itself), then a code.
        if b.len() < 8 {
            return Frame::More;
        }
        let len = be32(b) as usize;
        if len < 8 {
            return Frame::Bad;
        }
        return Frame::Msg(0, 4, len - 4);
    }
    frame_tagged(b)
}

fn frame_tagged(b: &[u8]) -> Frame {
    if b.len() < 5 {
        return Frame::More;
    }
    if !b[0].is_ascii_alphabetic() {
        return Frame::Bad;
    }
    let len = be32(&b[1..]) as usize;
    if len < 4 {
        return Frame::Bad;
    }
    Frame::Msg(b[0], 5, len - 4)
}

fn parse_request(tag: u8, body: &[u8], st: St) -> Option<Request> {
    Some(match tag {
        0 => {
            let code = be32(body);
            match code {
                SSL_REQUEST | GSSENC_REQUEST if body.len() == 4 => Request::SslRequest,
                CANCEL_REQUEST if body.len() == 12 => Request::Cancel {
                    pid: be32(&body[4..]),
                    key: be32(&body[8..]),
                },
                _ if code >> 16 == 3 => {
                    let mut params = Vec::new();
                    let mut rest = &body[4..];
                    while let Some((n, r)) = cstr(rest) {
                        if n.is_empty() {
                            break;
                        }
                        let (v, r) = cstr(r)?;
                        if params.len() < MAX_PARAMS {
                            params.push((n.to_vec(), v.to_vec()));
                        }
                        rest = r;
                    }
                    Request::Startup {
                        major: (code >> 16) as u16,
                        minor: code as u16,
                        params,
                    }
                }
                _ => return None,
            }
        }
        b'p' => match st {
            St::SaslAsked => {
                let (mechanism, r) = cstr(body)?;
                let param = if r.len() >= 4 { &r[4..] } else { &[][..] };
                Request::SaslInitial {
                    mechanism: mechanism.to_vec(),
                    param: param.to_vec(),
                }
            }
            St::SaslContinue => Request::SaslResponse(body.to_vec()),
            _ => Request::Password(cstr(body).map_or(body, |(p, _)| p).to_vec()),
        },
        b'Q' => Request::SimpleQuery(cstr(body).map_or(body, |(q, _)| q).to_vec()),
        b'X' => Request::Terminate,
        t => Request::Unknown(t),
    })
}

fn error_fields(mut b: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut v = Vec::new();
    while let Some((&t, r)) = b.split_first() {
        if t == 0 {
            break;
        }
        let Some((val, r)) = cstr(r) else { break };
        if v.len() < MAX_PARAMS {
            v.push((t, val.to_vec()));
        }
        b = r;
    }
    v
}

fn parse_response(tag: u8, body: &[u8]) -> Option<Response> {
    Some(match tag {
        b'R' if body.len() >= 4 => Response::Auth(be32(body), body[4..].to_vec()),
        b'E' => Response::Error(error_fields(body)),
        b'N' => Response::Notice(error_fields(body)),
        b'S' => {
            let (n, r) = cstr(body)?;
            let (v, _) = cstr(r)?;
            Response::ParameterStatus(n.to_vec(), v.to_vec())
        }
        b'K' if body.len() == 8 => Response::BackendKeyData(be32(body), be32(&body[4..])),
        b'C' => Response::CommandComplete(cstr(body).map_or(body, |(c, _)| c).to_vec()),
        b'Z' if body.len() == 1 => Response::ReadyForQuery(body[0]),
        b'T' if body.len() >= 2 => Response::RowDescription(be16(body)),
        b'A' if body.len() >= 4 => {
            let (channel, r) = cstr(&body[4..])?;
            let (payload, _) = cstr(r)?;
            Response::Notification {
                pid: be32(body),
                channel: channel.to_vec(),
                payload: payload.to_vec(),
            }
        }
        b'R' | b'K' | b'Z' | b'T' | b'A' => return None,
        t => Response::Unknown(t),
    })
}

/// Whether a message header found after a gap can be one: a tag the
/// side sends and a length the parser keeps whole.
fn plausible(dir: Direction, tag: u8, len: usize) -> bool {
    let tags: &[u8] = match dir {
        Direction::ToServer => b"\0QpXPBEDSCFfHdc",
        Direction::ToClient => b"REKSNCZTADIns123GHWcdtV",
    };
    tags.contains(&tag) && len <= MAX_MESSAGE
}

/// The byte size of a DataRow's column values.
fn data_row_size(body: &[u8]) -> u64 {
    if body.len() < 2 {
        return 0;
    }
    let n = be16(body);
    let mut rest = &body[2..];
    let mut size = 0u64;
    for _ in 0..n {
        if rest.len() < 4 {
            break;
        }
        let l = be32(rest) as i32;
        rest = &rest[4..];
        if l > 0 {
            let l = (l as usize).min(rest.len());
            size += l as u64;
            rest = &rest[l..];
        }
    }
    size
}

/// Whether the first bytes of one side look like PostgreSQL: `None`
/// while too short to tell (Suricata's probing parsers: a startup,
/// SSL or cancel request from the client; a known message or the SSL
/// answer from the server).
pub fn probe(dir: Direction, b: &[u8]) -> Option<bool> {
    match dir {
        Direction::ToServer => {
            if b.first().is_some_and(|&c| c != 0) {
                // Tagged messages do not open a connection.
                return Some(false);
            }
            match frame_request(b) {
                Frame::More => None,
                Frame::Bad => Some(false),
                Frame::Msg(_, h, l) => {
                    if b.len() < h + l.min(MAX_MESSAGE) {
                        // The code is enough to tell.
                        let code = be32(&b[4..]);
                        return Some(
                            code >> 16 == 3 || code == SSL_REQUEST || code == CANCEL_REQUEST,
                        );
                    }
                    Some(parse_request(0, &b[h..h + l], St::Idle).is_some())
                }
            }
        }
        Direction::ToClient => {
            if b.len() == 1 && (b[0] == b'S' || b[0] == b'N') {
                return Some(true);
            }
            match frame_tagged(b) {
                Frame::More => None,
                Frame::Bad => Some(false),
                Frame::Msg(t, _, l) => Some(b"REKSNCZTA".contains(&t) && l <= MAX_MESSAGE),
            }
        }
    }
}

impl PgsqlState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        PgsqlState {
            cfg: cfg.clone(),
            txs: TxList::new(cfg.max_transactions),
            st: St::Idle,
            sides: Default::default(),
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&PgsqlTx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &PgsqlTx> {
        self.txs.txs.iter()
    }

    /// Whether the server accepted an SSLRequest: TLS follows.
    pub fn tls_accepted(&self) -> bool {
        self.st == St::Tls
    }

    fn event(id: Option<TxId>, e: PgsqlEvent, ev: &mut Vec<AppLayerEvent>) {
        ev.push(AppLayerEvent::Pgsql(e, id));
    }

    fn new_tx(&mut self, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let dropped = self.txs.push(|id| PgsqlTx {
            common: TxCommon::new(id, ts),
            request: None,
            responses: Vec::new(),
            rows: 0,
            data_size: 0,
            req_done: false,
            res_done: false,
        });
        if dropped {
            let id = self.txs.next_id - 1;
            Self::event(Some(id), PgsqlEvent::TooManyTransactions, ev);
        }
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if self.st == St::Tls {
            return;
        }
        let side = &mut self.sides[dir.index()];
        if side.broken {
            return;
        }
        let mut data = data;
        if side.to_skip > 0 {
            let n = side.to_skip.min(data.len() as u64);
            side.to_skip -= n;
            data = &data[n as usize..];
        }
        side.buf.extend_from_slice(data);
        let mut pos = 0;
        loop {
            if self.st == St::Tls {
                self.sides = Default::default();
                return;
            }
            let side = &mut self.sides[dir.index()];
            let b = &side.buf[pos..];
            if b.is_empty() {
                break;
            }
            // The one-byte answer to an SSLRequest.
            if dir == Direction::ToClient
                && self.st == St::SslRequested
                && (b[0] == b'S' || b[0] == b'N')
            {
                side.gap = false;
                pos += 1;
                let r = if b[0] == b'S' {
                    Response::SslAccepted
                } else {
                    Response::SslRejected
                };
                self.response(r, ts, ev);
                continue;
            }
            let f = match dir {
                Direction::ToServer => frame_request(b),
                Direction::ToClient => frame_tagged(b),
            };
            let (tag, h, l) = match f {
                Frame::More => break,
                Frame::Bad if side.gap => {
                    // Not in sync after a gap: drop a byte and retry.
                    pos += 1;
                    continue;
                }
                Frame::Bad => {
                    side.broken = true;
                    side.buf.clear();
                    let id = self.txs.txs.back().map(|t| t.common.id);
                    Self::event(id, PgsqlEvent::MalformedMessage, ev);
                    return;
                }
                Frame::Msg(t, h, l) => (t, h, l),
            };
            if side.gap && !plausible(dir, tag, l) {
                // Not in sync after a gap: drop a byte and retry.
                pos += 1;
                continue;
            }
            let keep = l.min(MAX_MESSAGE);
            if b.len() < h + keep {
                break;
            }
            let body = b[h..h + keep].to_vec();
            let skip = (l - keep) as u64;
            let parsed = match dir {
                Direction::ToServer => parse_request(tag, &body, self.st).map(Err),
                Direction::ToClient => parse_response(tag, &body).map(Ok),
            };
            if side.gap && (parsed.is_none() || skip > 0) {
                pos += 1;
                continue;
            }
            side.gap = false;
            pos += h + keep;
            side.to_skip = skip;
            if skip > 0 {
                // The rest of the message is skipped (in this buffer first).
                let n = skip.min((side.buf.len() - pos) as u64);
                side.to_skip -= n;
                pos += n as usize;
            }
            match parsed {
                Some(Err(r)) => self.request(r, ts, ev),
                Some(Ok(_)) if tag == b'D' => self.data_row(&body, ts, ev),
                Some(Ok(r)) => self.response(r, ts, ev),
                None => {
                    let id = self.txs.txs.back().map(|t| t.common.id);
                    Self::event(id, PgsqlEvent::MalformedMessage, ev);
                }
            }
            if skip > 0 {
                let id = self.txs.txs.back().map(|t| t.common.id);
                Self::event(id, PgsqlEvent::OversizedMessage, ev);
            }
        }
        let side = &mut self.sides[dir.index()];
        side.buf.drain(..pos.min(side.buf.len()));
    }

    fn request(&mut self, r: Request, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let next = match &r {
            Request::SslRequest => Some(St::SslRequested),
            Request::Unknown(_) => None,
            _ => Some(St::RequestRead),
        };
        let Some(next) = next else {
            // Suricata keeps the state; an unknown message goes to the
            // latest transaction (a new one when there is none).
            if self.txs.txs.is_empty() {
                self.new_tx(ts, ev);
            }
            if let Some(t) = self.txs.txs.back_mut() {
                t.request = Some(r);
            }
            return;
        };
        let closes = matches!(r, Request::Terminate | Request::Cancel { .. });
        self.st = next;
        self.new_tx(ts, ev);
        if let Some(t) = self.txs.txs.back_mut() {
            t.request = Some(r);
            t.req_done = true;
            if closes {
                // No answer comes.
                t.res_done = true;
            }
        }
    }

    /// The transaction server messages go to: the latest, unless a
    /// request was just read and nothing opened one (a new one then, as
    /// Suricata's `find_or_create_tx`).
    fn current(&mut self, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) -> Option<&mut PgsqlTx> {
        if self.txs.txs.is_empty() || self.txs.txs.back().is_some_and(|t| t.res_done) {
            self.new_tx(ts, ev);
        }
        self.txs.txs.back_mut()
    }

    fn data_row(&mut self, body: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        self.st = St::Responding;
        if let Some(t) = self.current(ts, ev) {
            t.rows = t.rows.saturating_add(1);
            t.data_size = t.data_size.saturating_add(data_row_size(body));
        }
    }

    fn response(&mut self, r: Response, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let (next, complete) = match &r {
            Response::SslAccepted => (St::Tls, true),
            Response::SslRejected => (St::Idle, true),
            Response::Auth(3 | 5, _) => (St::PasswordAsked, true),
            Response::Auth(10, _) => (St::SaslAsked, true),
            Response::Auth(11, _) => (St::SaslContinue, true),
            Response::Auth(12, _) => (St::Responding, true),
            Response::ReadyForQuery(_) => (St::Idle, true),
            _ => (St::Responding, false),
        };
        self.st = next;
        let Some(t) = self.current(ts, ev) else {
            return;
        };
        if matches!(r, Response::CommandComplete(_)) && t.rows > 0 {
            let rows = std::mem::take(&mut t.rows);
            let size = std::mem::take(&mut t.data_size);
            t.responses.push(Response::DataRows { rows, size });
        }
        if t.responses.len() < 4 * MAX_PARAMS {
            t.responses.push(r);
        }
        if complete {
            t.req_done = true;
            t.res_done = true;
        }
    }

    pub fn on_gap(&mut self, dir: Direction) {
        let s = &mut self.sides[dir.index()];
        s.buf.clear();
        s.to_skip = 0;
        s.gap = true;
    }

    /// A side ended: what is open is complete.
    pub fn finish(&mut self, _dir: Direction) {
        if let Some(t) = self.txs.txs.back_mut() {
            t.req_done = true;
            t.res_done = true;
        }
    }
}

impl TxParser for PgsqlState {
    fn proto(&self) -> AppProto {
        AppProto::Pgsql
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        PgsqlState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        PgsqlState::on_gap(self, dir)
    }
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        PgsqlState::finish(self, dir)
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
        // The latest transaction stays: responses may still come to it.
        let last = self.txs.txs.back().map(|t| t.common.id);
        self.txs
            .retain(&mut |c, p| Some(c.id) == last || keep(c, p));
    }
    fn buffers(&self, tx: TxId, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        if dir != Direction::ToServer {
            return Vec::new();
        }
        self.txs.get(tx).map(|t| t.buffers(id)).unwrap_or_default()
    }
    fn uints(&self, _tx: TxId, _field: UintField, _dir: Direction) -> Vec<u64> {
        Vec::new()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn wants_data(&self, _dir: Direction) -> bool {
        self.st != St::Tls
    }
    fn upgrade(&self) -> Option<(AppProto, &AppLayerConfig)> {
        self.tls_accepted().then_some((AppProto::Tls, &self.cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    pub(crate) fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        v.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    pub(crate) fn startup(params: &[(&str, &str)]) -> Vec<u8> {
        let mut body = 0x0003_0000u32.to_be_bytes().to_vec();
        for (n, v) in params {
            body.extend_from_slice(n.as_bytes());
            body.push(0);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut v = (body.len() as u32 + 4).to_be_bytes().to_vec();
        v.extend(body);
        v
    }

    fn row(cols: &[&[u8]]) -> Vec<u8> {
        let mut b = (cols.len() as u16).to_be_bytes().to_vec();
        for c in cols {
            b.extend_from_slice(&(c.len() as u32).to_be_bytes());
            b.extend_from_slice(c);
        }
        msg(b'D', &b)
    }

    /// A session: startup, MD5 authentication, a query with two rows.
    pub(crate) fn session() -> Vec<(Direction, Vec<u8>)> {
        let mut ok = msg(b'R', &0u32.to_be_bytes());
        ok.extend(msg(b'S', b"server_version\x0016.1\x00"));
        ok.extend(msg(b'S', b"DateStyle\x00ISO, MDY\x00"));
        ok.extend(msg(b'K', &[0, 0, 0x30, 0x39, 0, 0, 0, 7]));
        ok.extend(msg(b'Z', b"I"));
        let mut rows = msg(
            b'T',
            &[
                0, 1, b'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 4, 255, 255, 255, 255, 0, 0,
            ],
        );
        rows.extend(row(&[b"42"]));
        rows.extend(row(&[b"1000"]));
        rows.extend(msg(b'C', b"SELECT 2\x00"));
        rows.extend(msg(b'Z', b"I"));
        let mut md5 = 5u32.to_be_bytes().to_vec();
        md5.extend_from_slice(b"\x01\x02\x03\x04");
        vec![
            (
                ToServer,
                startup(&[
                    ("user", "alice"),
                    ("database", "shop"),
                    ("application_name", "psql"),
                ]),
            ),
            (ToClient, msg(b'R', &md5)),
            (ToServer, msg(b'p', b"md5abcdef\x00")),
            (ToClient, ok),
            (ToServer, msg(b'Q', b"select a from t;\x00")),
            (ToClient, rows),
            (ToServer, msg(b'X', b"")),
        ]
    }

    fn run(steps: &[(Direction, Vec<u8>)], bytewise: bool) -> (PgsqlState, Vec<AppLayerEvent>) {
        let mut s = PgsqlState::new(&AppLayerConfig::default());
        let mut ev = Vec::new();
        for (d, b) in steps {
            if bytewise {
                for c in b {
                    s.feed(*d, std::slice::from_ref(c), 1, &mut ev);
                }
            } else {
                s.feed(*d, b, 1, &mut ev);
            }
        }
        (s, ev)
    }

    #[test]
    fn startup_auth_query() {
        for bytewise in [false, true] {
            let (s, ev) = run(&session(), bytewise);
            assert!(ev.is_empty(), "{ev:?}");
            let e: Vec<Value> = s.transactions().map(|t| t.eve()).collect();
            assert_eq!(e.len(), 4);
            assert_eq!(e[0]["request"]["protocol_version"], "3.0");
            assert_eq!(e[0]["request"]["startup_parameters"]["user"], "alice");
            assert_eq!(
                e[0]["request"]["startup_parameters"]["optional_parameters"],
                json!([{"database": "shop"}, {"application_name": "psql"}])
            );
            assert_eq!(
                e[0]["response"]["authentication_md5_password"],
                "\u{1}\u{2}\u{3}\u{4}"
            );
            assert_eq!(e[1]["request"], json!({"password_redacted": true}));
            assert_eq!(e[1]["response"]["message"], "authentication_ok");
            assert_eq!(
                e[1]["response"]["parameter_status"],
                json!([{"server_version": "16.1"}, {"date_style": "ISO, MDY"}])
            );
            assert_eq!(e[1]["response"]["process_id"], 12345);
            assert_eq!(e[2]["request"]["simple_query"], "select a from t;");
            assert_eq!(e[2]["response"]["field_count"], 1);
            assert_eq!(e[2]["response"]["data_rows"], 2);
            assert_eq!(e[2]["response"]["data_size"], 6);
            assert_eq!(e[2]["response"]["command_completed"], "SELECT 2");
            assert_eq!(e[3]["request"]["message"], "termination_message");
            assert!(s.transactions().all(|t| t.progress().response_complete));
            let q = s.transactions().nth(2).unwrap();
            assert_eq!(
                q.buffers(BufferId::PgsqlQuery),
                vec![&b"select a from t;"[..]]
            );
            assert!(s
                .transactions()
                .next()
                .unwrap()
                .buffers(BufferId::PgsqlQuery)
                .is_empty());
        }
    }

    #[test]
    fn ssl_request_and_error() {
        let ssl = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
        let (s, _) = run(
            &[(ToServer, ssl.to_vec()), (ToClient, b"N".to_vec())],
            false,
        );
        let e = s.tx(0).unwrap().eve();
        assert_eq!(e["request"]["message"], "SSL Request");
        assert_eq!(e["response"]["ssl_accepted"], false);
        assert!(!s.tls_accepted());
        let (s, _) = run(
            &[
                (ToServer, ssl.to_vec()),
                (ToClient, b"S\x16\x03\x01".to_vec()),
            ],
            false,
        );
        assert!(s.tls_accepted());
        assert!(!s.wants_data(ToServer));
        // An error to a query.
        let err = msg(
            b'E',
            b"SERROR\x00VERROR\x00C42P01\x00Mrelation \"t\" does not exist\x00\x00",
        );
        let mut steps = session();
        steps[5].1 = err;
        steps[5].1.extend(msg(b'Z', b"I"));
        let (s, _) = run(&steps, false);
        let e = s.tx(2).unwrap().eve();
        assert_eq!(e["response"]["code"], "42P01");
        assert_eq!(e["response"]["severity_non_localizable"], "ERROR");
        assert_eq!(e["response"]["message"], "relation \"t\" does not exist");
    }

    #[test]
    fn sasl_exchange() {
        let mut sasl = 10u32.to_be_bytes().to_vec();
        sasl.extend_from_slice(b"SCRAM-SHA-256\x00\x00");
        let mut init = b"SCRAM-SHA-256\x00".to_vec();
        init.extend_from_slice(&8u32.to_be_bytes());
        init.extend_from_slice(b"n,,n=,r=");
        let mut cont = 11u32.to_be_bytes().to_vec();
        cont.extend_from_slice(b"r=xyz");
        let mut fin = 12u32.to_be_bytes().to_vec();
        fin.extend_from_slice(b"v=abc");
        let mut fin = msg(b'R', &fin);
        fin.extend(msg(b'R', &0u32.to_be_bytes()));
        fin.extend(msg(b'Z', b"I"));
        let steps = vec![
            (ToServer, startup(&[("user", "bob")])),
            (ToClient, msg(b'R', &sasl)),
            (ToServer, msg(b'p', &init)),
            (ToClient, msg(b'R', &cont)),
            (ToServer, msg(b'p', b"c=biws,r=xyz,p=zz")),
            (ToClient, fin),
        ];
        let (s, ev) = run(&steps, false);
        assert!(ev.is_empty());
        let e: Vec<Value> = s.transactions().map(|t| t.eve()).collect();
        assert_eq!(e[0]["response"]["message"], "authentication_sasl");
        assert_eq!(
            e[1]["request"]["sasl_authentication_mechanism"],
            "scram_SHA256"
        );
        assert_eq!(e[1]["request"]["sasl_param"], "n,,n=,r=");
        assert_eq!(e[1]["response"]["message"], "authentication_sasl_continue");
        assert_eq!(e[2]["request"]["sasl_response"], "c=biws,r=xyz,p=zz");
        assert_eq!(e[2]["response"]["authentication_sasl_final"], "v=abc");
    }

    #[test]
    fn oversized_gap_and_garbage() {
        // A query longer than the cap: cut, the rest skipped, in sync.
        let big = vec![b'x'; MAX_MESSAGE + 1000];
        let mut q = b"select '".to_vec();
        q.extend(&big);
        q.extend(b"'\x00");
        let mut steps = session();
        steps[4].1 = msg(b'Q', &q);
        let (s, ev) = run(&steps, false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Pgsql(PgsqlEvent::OversizedMessage, Some(2))]
        );
        assert_eq!(
            s.tx(2).unwrap().buffers(BufferId::PgsqlQuery)[0].len(),
            MAX_MESSAGE
        );
        assert_eq!(s.tx(2).unwrap().eve()["response"]["data_rows"], 2);
        // A gap: the side resumes at the next message that parses.
        let mut s = PgsqlState::new(&AppLayerConfig::default());
        let mut ev = Vec::new();
        for (d, b) in &session()[..4] {
            s.feed(*d, b, 1, &mut ev);
        }
        s.feed(ToServer, &msg(b'Q', b"select 1")[..4], 1, &mut ev);
        s.on_gap(ToServer);
        s.feed(ToServer, b"ect 1\x00", 1, &mut ev);
        s.feed(ToServer, &msg(b'Q', b"select 2\x00"), 1, &mut ev);
        let last = s.transactions().last().unwrap();
        assert_eq!(last.buffers(BufferId::PgsqlQuery), vec![&b"select 2"[..]]);
        // Garbage: a bad length is malformed and stops the side.
        let (s, ev) = run(&[(ToServer, b"\x00\x00\x00\x02abcdefgh".to_vec())], false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Pgsql(PgsqlEvent::MalformedMessage, None)]
        );
        assert!(s.transactions().next().is_none());
    }

    #[test]
    fn probes() {
        assert_eq!(probe(ToServer, &startup(&[("user", "u")])), Some(true));
        assert_eq!(
            probe(ToServer, &[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]),
            Some(true)
        );
        assert_eq!(probe(ToServer, &[0, 0, 0]), None);
        assert_eq!(probe(ToServer, b"GET / HTTP/1.1\r\n"), Some(false));
        assert_eq!(probe(ToClient, b"N"), Some(true));
        assert_eq!(probe(ToClient, &msg(b'R', &[0, 0, 0, 0])), Some(true));
        assert_eq!(probe(ToClient, b"HTTP/1.1 200"), Some(false));
    }
}
