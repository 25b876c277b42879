//! POP3 (RFC 1939, RFC 2449 CAPA, RFC 2595 STLS, RFC 5034 AUTH), as
//! Suricata's `rust/src/pop3`: each command and its response are one
//! transaction; the server's greeting is a transaction with a response
//! only. The EVE `pop3` record has the request's `command` and `args`
//! and the response's `success`, `status`, `header` (the rest of the
//! status line) and `data` (the lines of a multi-line response).
//!
//! Our own parser: Suricata drives the `sawp-pop3` crate and works
//! around it for multi-line responses, SASL data and RETR content; what
//! is left of it is line splitting, done here in the incremental model of
//! the other line protocols (see docs/ARCHITECTURE.md).
//!
//! Each direction is read as lines ending in LF (a CR before it is
//! dropped), in pieces of any size; a line keeps at most [`LINE_CAP`]
//! bytes. A command longer than 255 bytes with its CRLF raises
//! `request_too_long`, a status line longer than 512 `response_too_long`
//! (RFC 2449). A command keyword POP3 does not define raises
//! `unknown_command`, one with the wrong number of arguments
//! `incorrect_argument_count`; more transactions than
//! `max_transactions` `too_many_transactions`.
//!
//! Responses answer the oldest command without one. A `+OK` to `CAPA`,
//! `TOP`, `RETR`, or `LIST`/`UIDL` without argument is followed by data
//! lines up to the line that is `.` (dot-unstuffed). The data of `RETR`
//! is the mail: it goes through the SMTP MIME decoder ([`crate::smtp::mime`])
//! instead of `data` (Suricata clears it), for the `email.*`, `file.data`
//! and `file.name` buffers, the `email` object logged beside `pop3` and
//! the mail's attachments in `fileinfo` (a Vigil extension: Suricata 9
//! does not decode POP3 mail). A `+` continuation to `AUTH` makes the
//! client's next line SASL data (command `<SASL DATA>`, as Suricata). A
//! `+OK` to `STLS` hands the flow to TLS.
//!
//! A gap in a direction drops its partial line; the client's side then
//! skips lines until one starts with a command keyword, the server's
//! until one starts with `+OK`/`-ERR` (an open multi-line response ends
//! there, its mail marked truncated).

use serde_json::{json, Map, Value};

use crate::events::Pop3Event;
use crate::smtp::mime::Mime;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};

/// POP3's port (Suricata's `detection-ports`).
pub const PORT: u16 = 110;
/// Longest command with its CRLF (RFC 2449).
pub const MAX_REQUEST: usize = 255;
/// Longest status line with its CRLF (RFC 2449).
pub const MAX_RESPONSE: usize = 512;
/// Bytes of one line kept (longer lines are cut).
pub const LINE_CAP: usize = 4096;
/// Data lines of one multi-line response kept.
pub const MAX_DATA_LINES: usize = 1024;
/// Bytes of data lines of one multi-line response kept.
pub const MAX_DATA_BYTES: usize = 64 * 1024;
/// Arguments of one command kept.
pub const MAX_ARGS: usize = 16;

/// The command keywords POP3 defines, with the least and most arguments
/// they take.
const KEYWORDS: &[(&str, usize, usize)] = &[
    ("USER", 1, 1),
    ("PASS", 1, usize::MAX),
    ("APOP", 2, 2),
    ("AUTH", 0, 2),
    ("STLS", 0, 0),
    ("CAPA", 0, 0),
    ("QUIT", 0, 0),
    ("STAT", 0, 0),
    ("LIST", 0, 1),
    ("RETR", 1, 1),
    ("DELE", 1, 1),
    ("NOOP", 0, 0),
    ("RSET", 0, 0),
    ("TOP", 2, 2),
    ("UIDL", 0, 1),
    ("UTF8", 0, 0),
    ("LANG", 0, 1),
];

/// The command of a transaction.
#[derive(Debug, Clone)]
pub struct Request {
    /// The keyword as sent.
    pub command: Vec<u8>,
    pub args: Vec<Vec<u8>>,
}

/// The response of a transaction.
#[derive(Debug, Clone, Default)]
pub struct Response {
    /// `+OK` (or a `+` continuation) rather than `-ERR`.
    pub success: bool,
    /// The status line after the status indicator.
    pub header: Vec<u8>,
    /// The lines of a multi-line response (not RETR's: its mail is
    /// decoded instead).
    pub data: Vec<Vec<u8>>,
}

/// One command and its response.
#[derive(Debug)]
pub struct Pop3Tx {
    pub(crate) common: TxCommon,
    pub request: Option<Request>,
    pub response: Option<Response>,
    /// A RETR's mail, decoded.
    pub mime: Option<Box<Mime>>,
    /// The mail lost bytes to a gap or the end of the flow.
    pub truncated: bool,
    data_bytes: usize,
    complete: bool,
}

impl Tx for Pop3Tx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.request.is_some() || self.complete,
            response_complete: self.complete,
        }
    }
}

impl Pop3Tx {
    /// The command keyword, upper case.
    fn keyword(&self) -> Option<Vec<u8>> {
        self.request
            .as_ref()
            .map(|r| r.command.to_ascii_uppercase())
    }

    /// The `pop3` object (Suricata's `pop3` logger).
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        if let Some(r) = &self.request {
            let args: Vec<Value> = r.args.iter().map(|a| suri_str(a)).collect();
            m.insert(
                "request".into(),
                json!({"command": suri_str(&r.command), "args": args}),
            );
        }
        if let Some(r) = &self.response {
            let data: Vec<Value> = r.data.iter().map(|d| suri_str(d)).collect();
            m.insert(
                "response".into(),
                json!({
                    "success": r.success,
                    "status": if r.success { "OK" } else { "ERR" },
                    "header": suri_str(&r.header),
                    "data": data,
                }),
            );
        }
        Value::Object(m)
    }

    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        if dir != Direction::ToClient {
            return Vec::new();
        }
        crate::smtp::mime_buffers(self.mime.as_deref(), id)
    }
}

/// A direction's partial line.
#[derive(Debug, Default)]
struct Side {
    line: Vec<u8>,
    /// Bytes of the line, kept or not.
    len: usize,
    /// After a gap: skip to a line that starts a command / a status.
    resync: bool,
}

/// One POP3 flow.
#[derive(Debug)]
pub struct Pop3State {
    txs: TxList<Pop3Tx>,
    cfg: AppLayerConfig,
    sides: [Side; 2],
    /// The multi-line response being read.
    multi: Option<TxId>,
    /// The client's next line is SASL data.
    sasl_next: bool,
    /// `+OK` to STLS: the flow is TLS from here.
    tls: bool,
    /// What each side sent after the `+OK` to STLS, for the TLS parser
    /// (at most [`MAX_PENDING`] bytes).
    pending: [Vec<u8>; 2],
}

/// Most bytes held per side between STLS's `+OK` and the hand-over.
pub const MAX_PENDING: usize = 64 * 1024;

/// Whether `line` starts with a POP3 command keyword (probing, resync).
fn starts_with_keyword(line: &[u8]) -> bool {
    KEYWORDS.iter().any(|(k, _, _)| {
        line.len() >= k.len()
            && line[..k.len()].eq_ignore_ascii_case(k.as_bytes())
            && matches!(line.get(k.len()), None | Some(b' ' | b'\r' | b'\n'))
    })
}

fn is_status(line: &[u8]) -> bool {
    line.starts_with(b"+OK") || line.starts_with(b"-ERR")
}

/// Detection by content: `+OK`/`-ERR` from the server, a command keyword
/// from the client (Suricata's `sawp-pop3` probe). `None`: more bytes
/// are needed.
pub fn probe(dir: Direction, data: &[u8]) -> Option<bool> {
    match dir {
        Direction::ToClient => {
            for p in [&b"+OK"[..], b"-ERR"] {
                if data.starts_with(p) {
                    return Some(true);
                }
                if p.starts_with(data) {
                    return None;
                }
            }
            Some(false)
        }
        Direction::ToServer => {
            let end = data
                .iter()
                .position(|c| !c.is_ascii_alphanumeric())
                .unwrap_or(data.len());
            let word = &data[..end];
            let known = |prefix: bool| {
                KEYWORDS.iter().any(|(k, _, _)| {
                    let k = k.as_bytes();
                    if prefix {
                        k.len() >= word.len() && k[..word.len()].eq_ignore_ascii_case(word)
                    } else {
                        k.eq_ignore_ascii_case(word)
                    }
                })
            };
            if end < data.len() {
                Some(known(false) && matches!(data[end], b' ' | b'\r' | b'\n'))
            } else if known(true) {
                None
            } else {
                Some(false)
            }
        }
    }
}

impl Pop3State {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        Pop3State {
            txs: TxList::new(cfg.max_transactions),
            cfg: cfg.clone(),
            sides: Default::default(),
            multi: None,
            sasl_next: false,
            tls: false,
            pending: Default::default(),
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&Pop3Tx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &Pop3Tx> {
        self.txs.txs.iter()
    }

    fn push(
        &mut self,
        ts: Timestamp,
        request: Option<Request>,
        ev: &mut Vec<AppLayerEvent>,
    ) -> TxId {
        let dropped = self.txs.push(|id| Pop3Tx {
            common: TxCommon::new(id, ts),
            request,
            response: None,
            mime: None,
            truncated: false,
            data_bytes: 0,
            complete: false,
        });
        let id = self.txs.next_id - 1;
        if dropped {
            ev.push(AppLayerEvent::Pop3(
                Pop3Event::TooManyTransactions,
                Some(id),
            ));
            if self.multi.is_some_and(|m| self.txs.get(m).is_none()) {
                self.multi = None;
            }
        }
        id
    }

    /// Reads a line of `dir` into its buffer; returns the bytes consumed
    /// and whether the line is complete.
    fn take_line(&mut self, dir: Direction, data: &[u8]) -> (usize, bool) {
        let side = &mut self.sides[dir.index()];
        let (n, done) = match memchr::memchr(b'\n', data) {
            Some(i) => (i + 1, true),
            None => (data.len(), false),
        };
        let room = LINE_CAP.saturating_sub(side.line.len());
        side.line.extend_from_slice(&data[..n.min(room)]);
        side.len = side.len.saturating_add(n);
        (n, done)
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        mut data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        while !data.is_empty() && !self.tls {
            let (n, done) = self.take_line(dir, data);
            data = &data[n..];
            if !done {
                continue;
            }
            let side = &mut self.sides[dir.index()];
            let line = std::mem::take(&mut side.line);
            let len = std::mem::replace(&mut side.len, 0);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            match dir {
                Direction::ToServer => self.client_line(text, len, ts, ev),
                Direction::ToClient => self.server_line(text, len, ts, ev),
            }
        }
        if self.tls {
            let p = &mut self.pending[dir.index()];
            let room = MAX_PENDING.saturating_sub(p.len());
            p.extend_from_slice(&data[..data.len().min(room)]);
        }
    }

    fn client_line(&mut self, text: &[u8], len: usize, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let side = &mut self.sides[0];
        if side.resync {
            if !starts_with_keyword(text) {
                return;
            }
            side.resync = false;
        }
        if std::mem::replace(&mut self.sasl_next, false) {
            let req = Request {
                command: b"<SASL DATA>".to_vec(),
                args: Vec::new(),
            };
            self.push(ts, Some(req), ev);
            return;
        }
        if text.is_empty() {
            return;
        }
        let mut words = text.split(|&c| c == b' ').filter(|w| !w.is_empty());
        let Some(word) = words.next() else {
            return;
        };
        let args: Vec<&[u8]> = words.collect();
        let known = KEYWORDS
            .iter()
            .find(|(k, _, _)| word.eq_ignore_ascii_case(k.as_bytes()));
        let req = Request {
            // As sent: Suricata logs the keyword's case.
            command: word.to_vec(),
            args: args.iter().take(MAX_ARGS).map(|a| a.to_vec()).collect(),
        };
        let id = self.push(ts, Some(req), ev);
        let mut raise = |e| ev.push(AppLayerEvent::Pop3(e, Some(id)));
        if len > MAX_REQUEST {
            raise(Pop3Event::RequestTooLong);
        }
        match known {
            None => raise(Pop3Event::UnknownCommand),
            Some((_, lo, hi)) if args.len() < *lo || args.len() > *hi => {
                raise(Pop3Event::IncorrectArgumentCount)
            }
            _ => {}
        }
    }

    /// The oldest transaction waiting for its response.
    fn waiting(&self) -> Option<TxId> {
        self.txs
            .txs
            .iter()
            .find(|t| t.request.is_some() && t.response.is_none())
            .map(|t| t.common.id)
    }

    fn server_line(&mut self, text: &[u8], len: usize, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let side = &mut self.sides[1];
        if side.resync {
            if !is_status(text) {
                return;
            }
            side.resync = false;
        }
        if let Some(id) = self.multi {
            self.data_line(id, text);
            return;
        }
        let (success, header, continuation) = if let Some(rest) = text.strip_prefix(b"+OK") {
            (true, rest, false)
        } else if let Some(rest) = text.strip_prefix(b"-ERR") {
            (false, rest, false)
        } else if let Some(rest) = text.strip_prefix(b"+") {
            (true, rest, true)
        } else {
            // Not a status line: nothing to answer with.
            return;
        };
        let header = header.strip_prefix(b" ").unwrap_or(header);
        let id = match self.waiting() {
            Some(id) => id,
            None => self.push(ts, None, ev),
        };
        if len > MAX_RESPONSE {
            ev.push(AppLayerEvent::Pop3(Pop3Event::ResponseTooLong, Some(id)));
        }
        let Some(t) = self.txs.get_mut(id) else {
            return;
        };
        t.response = Some(Response {
            success,
            header: header.to_vec(),
            data: Vec::new(),
        });
        let kw = t.keyword();
        let no_args = t.request.as_ref().is_some_and(|r| r.args.is_empty());
        let multi = success
            && !continuation
            && match kw.as_deref() {
                Some(b"CAPA" | b"TOP" | b"RETR") => true,
                Some(b"LIST" | b"UIDL") => no_args,
                _ => false,
            };
        if multi {
            if kw.as_deref() == Some(b"RETR") {
                t.mime = Some(Box::default());
            }
            self.multi = Some(id);
            return;
        }
        t.complete = true;
        match kw.as_deref() {
            Some(b"STLS") if success => self.tls = true,
            Some(b"AUTH" | b"<SASL DATA>") if continuation => self.sasl_next = true,
            _ => {}
        }
    }

    /// A line of a multi-line response.
    fn data_line(&mut self, id: TxId, text: &[u8]) {
        let Some(t) = self.txs.get_mut(id) else {
            self.multi = None;
            return;
        };
        if text == b"." {
            Self::end_multi(t, false);
            self.multi = None;
            return;
        }
        let text = text.strip_prefix(b".").unwrap_or(text);
        if let Some(m) = t.mime.as_mut() {
            let mut ignored = Vec::new();
            m.feed(text, b"\r\n", false, &mut ignored);
            return;
        }
        if let Some(r) = t.response.as_mut() {
            if r.data.len() < MAX_DATA_LINES && t.data_bytes + text.len() <= MAX_DATA_BYTES {
                t.data_bytes += text.len();
                r.data.push(text.to_vec());
            }
        }
    }

    fn end_multi(t: &mut Pop3Tx, truncated: bool) {
        if let Some(m) = t.mime.as_mut() {
            let mut ignored = Vec::new();
            m.finish(&mut ignored);
            if truncated {
                t.truncated = true;
                for p in m.parts.iter_mut() {
                    p.truncated = true;
                }
            }
        }
        t.complete = true;
    }

    fn end_open(&mut self, truncated: bool) {
        if let Some(id) = self.multi.take() {
            if let Some(t) = self.txs.get_mut(id) {
                Self::end_multi(t, truncated);
            }
        }
    }

    pub fn on_gap(&mut self, dir: Direction) {
        self.sides[dir.index()] = Side {
            resync: true,
            ..Default::default()
        };
        match dir {
            Direction::ToServer => self.sasl_next = false,
            Direction::ToClient => self.end_open(true),
        }
    }

    pub fn finish(&mut self, dir: Direction) {
        if dir == Direction::ToClient {
            self.end_open(true);
        }
    }
}

impl TxParser for Pop3State {
    fn proto(&self) -> AppProto {
        AppProto::Pop3
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        Pop3State::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        Pop3State::on_gap(self, dir)
    }
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        Pop3State::finish(self, dir)
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
        if self.multi.is_some_and(|id| self.txs.get(id).is_none()) {
            self.multi = None;
        }
    }
    fn buffers(&self, tx: TxId, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        self.txs
            .get(tx)
            .map(|t| t.buffers(id, dir))
            .unwrap_or_default()
    }
    fn uints(&self, _tx: TxId, _field: UintField, _dir: Direction) -> Vec<u64> {
        Vec::new()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn eve_siblings(&self, tx: TxId) -> Vec<(&'static str, Value)> {
        self.txs
            .get(tx)
            .and_then(|t| t.mime.as_deref())
            .map(|m| vec![("email", crate::smtp::email_eve(m))])
            .unwrap_or_default()
    }
    fn wants_data(&self, dir: Direction) -> bool {
        !self.tls || self.pending[dir.index()].len() < MAX_PENDING
    }
    fn take_pending(&mut self) -> [Vec<u8>; 2] {
        std::mem::take(&mut self.pending)
    }
    fn mime(&self, tx: TxId) -> Option<&Mime> {
        self.txs.get(tx).and_then(|t| t.mime.as_deref())
    }
    fn upgrade(&self) -> Option<(AppProto, &AppLayerConfig)> {
        self.tls.then_some((AppProto::Tls, &self.cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    fn state() -> Pop3State {
        Pop3State::new(&AppLayerConfig::default())
    }

    fn feed_all(s: &mut Pop3State, dir: Direction, data: &[u8]) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        s.feed(dir, data, 1, &mut ev);
        ev
    }

    #[test]
    fn greeting_commands_and_single_line_responses() {
        let mut s = state();
        feed_all(&mut s, ToClient, b"+OK POP3 ready <1.2@x>\r\n");
        feed_all(&mut s, ToServer, b"USER alice\r\nPASS se cret\r\n");
        feed_all(&mut s, ToClient, b"+OK\r\n-ERR bad password\r\n");
        let txs: Vec<&Pop3Tx> = s.transactions().collect();
        assert_eq!(txs.len(), 3);
        assert!(txs[0].request.is_none());
        assert_eq!(txs[0].eve()["response"]["header"], "POP3 ready <1.2@x>");
        assert_eq!(txs[1].eve()["request"]["command"], "USER");
        assert_eq!(txs[1].eve()["request"]["args"][0], "alice");
        assert_eq!(txs[1].eve()["response"]["header"], "");
        assert_eq!(txs[2].eve()["request"]["args"].as_array().unwrap().len(), 2);
        assert_eq!(txs[2].eve()["response"]["success"], false);
        assert_eq!(txs[2].eve()["response"]["status"], "ERR");
        assert!(txs.iter().all(|t| t.complete));
    }

    #[test]
    fn multi_line_responses_byte_by_byte() {
        let mut s = state();
        let server =
            b"+OK 2 messages\r\n1 120\r\n2 200\r\n.\r\n+OK 1 120\r\n+OK\r\n1 abc\r\n..x\r\n.\r\n";
        feed_all(&mut s, ToServer, b"list\r\nLIST 1\r\nUIDL\r\n");
        for b in server.iter() {
            feed_all(&mut s, ToClient, std::slice::from_ref(b));
        }
        let txs: Vec<&Pop3Tx> = s.transactions().collect();
        assert_eq!(txs[0].eve()["request"]["command"], "list");
        assert_eq!(txs[0].eve()["response"]["data"], json!(["1 120", "2 200"]));
        assert_eq!(txs[1].eve()["response"]["header"], "1 120");
        assert_eq!(txs[1].eve()["response"]["data"], json!([]));
        assert_eq!(txs[2].eve()["response"]["data"], json!(["1 abc", ".x"]));
    }

    #[test]
    fn retr_mail_is_decoded() {
        let mut s = state();
        feed_all(&mut s, ToServer, b"RETR 1\r\n");
        let mail = b"+OK 99 octets\r\nSubject: hi\r\nFrom: a@b\r\nContent-Type: multipart/mixed; boundary=\"B\"\r\n\r\n--B\r\nContent-Disposition: attachment; filename=\"x.bin\"\r\n\r\n..dotted\r\n--B--\r\n.\r\n";
        feed_all(&mut s, ToClient, mail);
        let t = s.tx(0).unwrap();
        assert!(t.complete);
        assert_eq!(
            t.buffers(BufferId::EmailSubject, ToClient),
            vec![&b"hi"[..]]
        );
        assert!(t.buffers(BufferId::EmailSubject, ToServer).is_empty());
        assert_eq!(t.buffers(BufferId::FileName, ToClient), vec![&b"x.bin"[..]]);
        assert!(t.buffers(BufferId::FileData, ToClient)[0].starts_with(b".dotted"));
        assert_eq!(t.eve()["response"]["data"], json!([]));
        let email = s.eve_siblings(0);
        assert_eq!(email[0].1["attachment"], json!(["x.bin"]));
        assert_eq!(email[0].1["status"], "PARSE_DONE");
    }

    #[test]
    fn events() {
        let mut s = state();
        let ev = feed_all(&mut s, ToServer, b"FROB x\r\nDELE 1 2\r\n");
        assert_eq!(
            ev,
            vec![
                AppLayerEvent::Pop3(Pop3Event::UnknownCommand, Some(0)),
                AppLayerEvent::Pop3(Pop3Event::IncorrectArgumentCount, Some(1)),
            ]
        );
        let mut long = b"USER ".to_vec();
        long.extend_from_slice(&[b'a'; 300]);
        long.extend_from_slice(b"\r\n");
        let ev = feed_all(&mut s, ToServer, &long);
        assert_eq!(ev[0].name(), "request_too_long");
        let mut resp = b"+OK ".to_vec();
        resp.extend_from_slice(&[b'b'; 600]);
        resp.extend_from_slice(b"\r\n");
        let ev = feed_all(&mut s, ToClient, &resp);
        assert_eq!(ev[0].name(), "response_too_long");
        // Kept lines are capped.
        let mut huge = b"NOOP ".to_vec();
        huge.extend_from_slice(&vec![b'c'; 3 * LINE_CAP]);
        huge.extend_from_slice(b"\r\n");
        feed_all(&mut s, ToServer, &huge);
        let last = s.transactions().last().unwrap();
        assert!(last.request.as_ref().unwrap().args[0].len() < LINE_CAP);
    }

    #[test]
    fn stls_hands_over_to_tls_and_auth_takes_sasl_data() {
        let mut s = state();
        feed_all(&mut s, ToServer, b"AUTH PLAIN\r\n");
        feed_all(&mut s, ToClient, b"+ \r\n");
        feed_all(&mut s, ToServer, b"AGFsaWNlAHNlY3JldA==\r\n");
        feed_all(&mut s, ToClient, b"+OK welcome\r\n");
        assert_eq!(s.tx(1).unwrap().eve()["request"]["command"], "<SASL DATA>");
        assert_eq!(s.tx(1).unwrap().eve()["response"]["header"], "welcome");
        feed_all(&mut s, ToServer, b"STLS\r\n");
        assert!(s.upgrade().is_none());
        feed_all(&mut s, ToClient, b"+OK go\r\n\x16\x03\x01");
        assert!(matches!(s.upgrade(), Some((AppProto::Tls, _))));
        feed_all(&mut s, ToServer, b"\x16\x03\x01\x00");
        assert_eq!(s.transactions().count(), 3);
        // The bytes after the `+OK` wait for the TLS parser.
        assert_eq!(
            s.take_pending(),
            [b"\x16\x03\x01\x00".to_vec(), b"\x16\x03\x01".to_vec()]
        );
    }

    #[test]
    fn gaps_resync_and_truncate() {
        let mut s = state();
        feed_all(&mut s, ToServer, b"RETR 1\r\n");
        feed_all(&mut s, ToClient, b"+OK\r\nSubject: a\r\n\r\nbody");
        s.on_gap(ToClient);
        assert!(s.tx(0).unwrap().truncated && s.tx(0).unwrap().complete);
        // Garbage until a status line.
        feed_all(&mut s, ToServer, b"NOOP\r\n");
        feed_all(&mut s, ToClient, b"rest of mail\r\n.\r\n+OK\r\n");
        assert!(s.tx(1).unwrap().response.is_some());
        s.on_gap(ToServer);
        feed_all(&mut s, ToServer, b"tail\r\nQUIT\r\n");
        assert_eq!(s.transactions().count(), 3);
    }

    #[test]
    fn probes() {
        assert_eq!(probe(ToClient, b"+OK ready\r\n"), Some(true));
        assert_eq!(probe(ToClient, b"-ERR x"), Some(true));
        assert_eq!(probe(ToClient, b"+O"), None);
        assert_eq!(probe(ToClient, b"220 smtp"), Some(false));
        assert_eq!(probe(ToServer, b"CAPA\r\n"), Some(true));
        assert_eq!(probe(ToServer, b"us"), None);
        assert_eq!(probe(ToServer, b"GET / HTTP/1.1"), Some(false));
    }
}
