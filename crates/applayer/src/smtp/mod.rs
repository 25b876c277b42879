//! SMTP (RFC 5321) with its mail's MIME content (Suricata's
//! `app-layer-smtp.c` and MIME decoder), for `smtp.helo`,
//! `smtp.mail_from`, `smtp.rcpt_to`, the `email.*` buffers, `file.data`
//! (each decoded MIME part), `app-layer-event:smtp.*` and the EVE `smtp`
//! record with its `email` object.
//!
//! Our own parser: no crate parses SMTP incrementally in both directions
//! as Suricata does (see docs/ARCHITECTURE.md).
//!
//! Each direction is read as lines ending in LF (a CR before it is
//! dropped), in pieces of any size. A command or reply line keeps at most
//! [`MAX_LINE`] bytes (Suricata's 510); the rest up to the LF is skipped
//! with `max_command_line_len_exceeded` / `max_reply_line_len_exceeded`.
//!
//! Commands wait in a queue (pipelining) for their replies; a reply ends
//! with its `ddd ` line (`ddd-` lines continue it) and answers the oldest
//! command. The first reply with no command waiting is the greeting;
//! later ones raise `unable_to_match_reply_with_request`. `DATA` puts the
//! client into the data phase at once (as Suricata): lines up to the one
//! that is `.` are the mail, dot-unstuffed and fed to the MIME decoder
//! ([`mime`]); a `DATA` answered by anything but `354` is rejected
//! (`data_command_rejected`) and ends the data phase. `BDAT n [LAST]`
//! takes the next `n` bytes as they are (CHUNKING); `LAST` ends the mail.
//! A `220` to `STARTTLS` ends the parsing of the flow (Suricata hands it
//! to TLS detection; Vigil stops and marks the transaction `starttls`);
//! another reply to it is `tls_rejected`.
//!
//! One transaction per mail, as Suricata: it opens with the first command
//! when none is open and ends with the end of its data (or `RSET`, or a
//! new `MAIL FROM` before any data); `HELO`/`EHLO`'s name is the
//! session's and every later transaction carries it. `QUIT` and `RSET`
//! open no transaction.
//!
//! A gap in the client's data ends the mail being received (its content
//! is marked truncated) and the parser skips lines until one that starts
//! with a known command; a gap in the server's drops the waiting
//! commands and the partial line.

pub mod mime;

use std::collections::VecDeque;

use serde_json::{json, Map, Value};

use crate::events::SmtpEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};
use mime::{ieq_prefix, trim, Mime};

/// Longest command or reply line (Suricata's
/// `SMTP_MAX_REQUEST_AND_REPLY_LINE_LENGTH`).
pub const MAX_LINE: usize = 510;
/// Longest piece of a data line held before it is passed on.
pub const MAX_DATA_PIECE: usize = 4096;
/// Most commands waiting for their replies.
pub const MAX_PENDING: usize = 64;
/// Most recipients kept per mail.
pub const MAX_RCPT: usize = 64;
/// Largest BDAT chunk announced that is accepted (Suricata's limit is its
/// `max-tx` bytes; larger ones raise `bdat_chunk_len_exceeded`).
pub const MAX_BDAT: u64 = 1 << 32;

/// The commands that matter to the parser; the others are `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    Helo,
    Mail,
    Rcpt,
    Data,
    Bdat {
        last: bool,
    },
    StartTls,
    Rset,
    Quit,
    /// The `.` line that ends the data.
    DataEnd,
    Other,
}

/// The command verbs a line must start with to end a resync after a gap.
const VERBS: &[&[u8]] = &[
    b"HELO",
    b"EHLO",
    b"MAIL",
    b"RCPT",
    b"DATA",
    b"BDAT",
    b"RSET",
    b"QUIT",
    b"NOOP",
    b"VRFY",
    b"EXPN",
    b"HELP",
    b"AUTH",
    b"STARTTLS",
    b"TURN",
    b"ETRN",
    b"SEND",
    b"SOML",
    b"SAML",
];

/// One mail (or the session before it).
#[derive(Debug)]
pub struct SmtpTx {
    pub(crate) common: TxCommon,
    pub helo: Option<Vec<u8>>,
    pub mail_from: Option<Vec<u8>>,
    pub rcpt_to: Vec<Vec<u8>>,
    /// The DATA or BDAT content, decoded.
    pub mime: Option<Box<Mime>>,
    /// The content lost bytes to a gap.
    pub truncated: bool,
    /// The flow switched to TLS after this transaction's STARTTLS.
    pub starttls: bool,
    done: bool,
}

impl Tx for SmtpTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.done,
            response_complete: self.done,
        }
    }
}

impl SmtpTx {
    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        use BufferId::*;
        fn one(v: Option<&[u8]>) -> Vec<&[u8]> {
            v.into_iter().collect()
        }
        match id {
            SmtpHelo => one(self.helo.as_deref()),
            SmtpMailFrom => one(self.mail_from.as_deref()),
            SmtpRcptTo => self.rcpt_to.iter().map(|r| &r[..]).collect(),
            _ => mime_buffers(self.mime.as_deref(), id),
        }
    }

    /// The `smtp` object (Suricata's `smtp` logger).
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        if let Some(h) = &self.helo {
            m.insert("helo".into(), suri_str(h));
        }
        if let Some(f) = &self.mail_from {
            m.insert("mail_from".into(), suri_str(f));
        }
        if !self.rcpt_to.is_empty() {
            let r: Vec<Value> = self.rcpt_to.iter().map(|r| suri_str(r)).collect();
            m.insert("rcpt_to".into(), Value::Array(r));
        }
        Value::Object(m)
    }

    /// The `email` object: the message's headers, attachments and URLs
    /// (`None` before any data).
    pub fn email_eve(&self) -> Option<Value> {
        self.mime.as_deref().map(email_eve)
    }
}

/// The `email.*`, `file.data` and `file.name` buffers of a decoded mail
/// (SMTP's DATA, POP3's RETR).
pub(crate) fn mime_buffers(mime: Option<&Mime>, id: BufferId) -> Vec<&[u8]> {
    use BufferId::*;
    fn one(v: Option<&[u8]>) -> Vec<&[u8]> {
        v.into_iter().collect()
    }
    let hdr = |n: &[u8]| one(mime.and_then(|m| m.header(n)));
    match id {
        EmailFrom => hdr(b"from"),
        EmailTo => hdr(b"to"),
        EmailCc => hdr(b"cc"),
        EmailSubject => hdr(b"subject"),
        EmailDate => hdr(b"date"),
        EmailMessageId => hdr(b"message-id"),
        EmailXMailer => hdr(b"x-mailer"),
        EmailBodyMd5 => one(mime.and_then(|m| m.body_md5.as_deref())),
        EmailReceived => mime
            .map(|m| m.headers_named(b"received").collect())
            .unwrap_or_default(),
        EmailUrl => mime
            .map(|m| m.urls.iter().map(|u| &u[..]).collect())
            .unwrap_or_default(),
        FileData => mime
            .map(|m| m.parts.iter().map(|p| &p.data[..]).collect())
            .unwrap_or_default(),
        FileName => mime
            .map(|m| {
                m.parts
                    .iter()
                    .filter_map(|p| p.filename.as_deref())
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The `email` object of a decoded mail: its headers, attachments and
/// URLs.
pub(crate) fn email_eve(mime: &Mime) -> Value {
    let mut m = Map::new();
    let status = if mime.done {
        "PARSE_DONE"
    } else if mime.body_started {
        "BODY_STARTED"
    } else {
        "HEADERS_STARTED"
    };
    m.insert("status".into(), json!(status));
    let list = |v: &[u8]| -> Vec<Value> {
        v.split(|&c| c == b',')
            .map(trim)
            .filter(|s| !s.is_empty())
            .map(suri_str)
            .collect()
    };
    if let Some(v) = mime.header(b"from") {
        m.insert("from".into(), suri_str(trim(v)));
    }
    for (key, name) in [("to", &b"to"[..]), ("cc", b"cc")] {
        if let Some(v) = mime.header(name) {
            let l = list(v);
            if !l.is_empty() {
                m.insert(key.into(), Value::Array(l));
            }
        }
    }
    for (key, name) in [
        ("subject", &b"subject"[..]),
        ("date", b"date"),
        ("message_id", b"message-id"),
        ("x_mailer", b"x-mailer"),
    ] {
        if let Some(v) = mime.header(name) {
            m.insert(key.into(), suri_str(v));
        }
    }
    let received: Vec<Value> = mime.headers_named(b"received").map(suri_str).collect();
    if !received.is_empty() {
        m.insert("received".into(), Value::Array(received));
    }
    let att: Vec<Value> = mime
        .parts
        .iter()
        .filter_map(|p| p.filename.as_deref())
        .map(suri_str)
        .collect();
    if !att.is_empty() {
        m.insert("attachment".into(), Value::Array(att));
    }
    if !mime.urls.is_empty() {
        let u: Vec<Value> = mime.urls.iter().map(|u| suri_str(u)).collect();
        m.insert("url".into(), Value::Array(u));
    }
    Value::Object(m)
}

/// What the client's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Command,
    /// After DATA, until the `.` line.
    Data,
    /// The bytes left of a BDAT chunk.
    Bdat {
        left: u64,
        last: bool,
    },
}

/// A direction's partial line.
#[derive(Debug, Default)]
struct Side {
    line: Vec<u8>,
    /// The line went past its cap: the rest up to LF is dropped.
    over: bool,
    /// After a gap: skip to the next line (and, for the client, to a
    /// command).
    resync: bool,
}

/// One SMTP flow.
#[derive(Debug)]
pub struct SmtpState {
    txs: TxList<SmtpTx>,
    /// The open transaction.
    cur: Option<TxId>,
    helo: Option<Vec<u8>>,
    mode: Mode,
    sides: [Side; 2],
    pending: VecDeque<Cmd>,
    /// The first reply (the greeting) was read.
    greeted: bool,
    pipelining: bool,
    /// The flow switched to TLS: nothing more is parsed.
    tls: bool,
    /// Events of each direction waiting for a transaction.
    ev: Vec<SmtpEvent>,
    /// A data line was passed on in pieces: the next piece continues it.
    data_cont: bool,
}

impl SmtpState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        SmtpState {
            txs: TxList::new(cfg.max_transactions),
            cur: None,
            helo: None,
            mode: Mode::Command,
            sides: Default::default(),
            pending: VecDeque::new(),
            greeted: false,
            pipelining: false,
            tls: false,
            ev: Vec::new(),
            data_cont: false,
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&SmtpTx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &SmtpTx> {
        self.txs.txs.iter()
    }

    /// The open transaction, opened if none is.
    fn open(&mut self, ts: Timestamp) -> TxId {
        if let Some(id) = self.cur.filter(|&id| self.txs.get(id).is_some()) {
            return id;
        }
        let helo = self.helo.clone();
        self.txs.push(|id| SmtpTx {
            common: TxCommon::new(id, ts),
            helo,
            mail_from: None,
            rcpt_to: Vec::new(),
            mime: None,
            truncated: false,
            starttls: false,
            done: false,
        });
        let id = self.txs.next_id - 1;
        self.cur = Some(id);
        id
    }

    fn cur_mut(&mut self) -> Option<&mut SmtpTx> {
        let id = self.cur?;
        self.txs.get_mut(id)
    }

    /// Ends the open transaction.
    fn close(&mut self) {
        let mut ev = Vec::new();
        if let Some(t) = self.cur_mut() {
            if let Some(m) = t.mime.as_mut() {
                m.finish(&mut ev);
            }
            t.done = true;
        }
        self.cur = None;
        self.data_cont = false;
        ev.into_iter().for_each(|e| self.raise(e));
    }

    /// Notes an event for the open transaction; each name once until
    /// they are filed (a transaction keeps distinct events only), so that
    /// a flood of bad lines holds no more than one of each.
    fn raise(&mut self, e: SmtpEvent) {
        if !self.ev.contains(&e) {
            self.ev.push(e);
        }
    }

    /// Files the events raised so far on the open transaction (one is
    /// opened for them if none is) or the last one.
    fn flush_events(&mut self, ts: Timestamp, out: &mut Vec<AppLayerEvent>) {
        if self.ev.is_empty() {
            return;
        }
        let id = match self
            .cur
            .or_else(|| self.txs.txs.back().map(|t| t.common.id))
        {
            Some(id) => id,
            None => self.open(ts),
        };
        for e in self.ev.drain(..) {
            out.push(AppLayerEvent::Smtp(e, Some(id)));
        }
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        mut data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        while !data.is_empty() && !self.tls {
            let n = match dir {
                Direction::ToServer => self.client_bytes(data, ts),
                Direction::ToClient => self.server_bytes(data, ts),
            };
            data = data.get(n.max(1)..).unwrap_or(&[]);
        }
        self.flush_events(ts, ev);
    }

    /// Reads a line into a side's buffer, at most `cap` bytes of it;
    /// returns the bytes consumed and whether the line is complete. Past
    /// the cap, the rest of the line is consumed and dropped (`over`), or
    /// with `split` left for the next call once the caller took the piece.
    fn take_line(side: &mut Side, data: &[u8], cap: usize, split: bool) -> (usize, bool) {
        let (n, done) = match memchr::memchr(b'\n', data) {
            Some(i) => (i + 1, true),
            None => (data.len(), false),
        };
        let room = cap.saturating_sub(side.line.len());
        if n > room {
            if split {
                side.line.extend_from_slice(&data[..room]);
                return (room, false);
            }
            side.over = true;
        }
        side.line.extend_from_slice(&data[..n.min(room)]);
        (n, done)
    }

    /// Splits a complete line from its ending.
    fn split_eol(line: &[u8]) -> (&[u8], &[u8]) {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        (text, &line[text.len()..])
    }

    fn client_bytes(&mut self, data: &[u8], ts: Timestamp) -> usize {
        if let Mode::Bdat { left, last } = self.mode {
            let n = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
            if n == 0 {
                self.mode = Mode::Command;
                return 0;
            }
            let chunk = &data[..n];
            self.bdat_bytes(chunk);
            let left = left.saturating_sub(n as u64);
            if left == 0 {
                // A line the chunk left open goes on in the next chunk.
                self.flush_piece();
                self.mode = Mode::Command;
                if last {
                    self.close();
                }
            } else {
                self.mode = Mode::Bdat { left, last };
            }
            return n;
        }
        let cap = if self.mode == Mode::Data {
            MAX_DATA_PIECE
        } else {
            MAX_LINE + 2
        };
        let side = &mut self.sides[0];
        let (n, done) = Self::take_line(side, data, cap, self.mode == Mode::Data);
        if self.mode == Mode::Data && !side.resync && !done && side.line.len() >= cap {
            // A long data line: passed on in pieces (dot-unstuffed first).
            if !self.data_cont && side.line.first() == Some(&b'.') {
                side.line.remove(0);
            }
            self.flush_piece();
            return n;
        }
        if !done {
            return n;
        }
        let line = std::mem::take(&mut side.line);
        let over = std::mem::replace(&mut side.over, false);
        let cont = std::mem::replace(&mut self.data_cont, false);
        if side.resync {
            if !starts_with_verb(&line) {
                return n;
            }
            side.resync = false;
        }
        let (text, eol) = Self::split_eol(&line);
        match self.mode {
            Mode::Data => {
                if over {
                    // A piece past the cap cannot happen: pieces are
                    // passed on at the cap.
                    self.raise(SmtpEvent::MimeLongLine);
                }
                self.data_line(text, eol, cont)
            }
            _ => {
                if over {
                    self.raise(SmtpEvent::MaxCommandLineLenExceeded);
                }
                let text = &text[..text.len().min(MAX_LINE)];
                self.command(text, ts);
            }
        }
        n
    }

    /// A line (or piece of one) of the DATA phase.
    fn data_line(&mut self, text: &[u8], eol: &[u8], cont: bool) {
        if !cont && !eol.is_empty() && text == b"." {
            self.mode = Mode::Command;
            self.close();
            // The server answers the end of the data.
            if self.pending.len() < MAX_PENDING {
                self.pending.push_back(Cmd::DataEnd);
            }
            return;
        }
        // Dot-unstuffing.
        let text = match text {
            [b'.', rest @ ..] if !cont => rest,
            _ => text,
        };
        self.mime_feed(text, eol, cont);
    }

    /// Bytes of a BDAT chunk: fed to the MIME decoder line by line.
    fn bdat_bytes(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let side = &mut self.sides[0];
            let (n, done) = Self::take_line(side, chunk, MAX_DATA_PIECE, true);
            chunk = chunk.get(n..).unwrap_or(&[]);
            if !done {
                if side.line.len() >= MAX_DATA_PIECE {
                    self.flush_piece();
                }
                continue;
            }
            let line = std::mem::take(&mut side.line);
            let cont = std::mem::replace(&mut self.data_cont, false);
            let (text, eol) = Self::split_eol(&line);
            self.mime_feed(text, eol, cont);
        }
    }

    /// Passes the client's partial data line on to the MIME decoder as a
    /// piece (a long line, the end of a BDAT chunk, a gap).
    fn flush_piece(&mut self) {
        let piece = std::mem::take(&mut self.sides[0].line);
        self.sides[0].over = false;
        if piece.is_empty() {
            return;
        }
        let cont = std::mem::replace(&mut self.data_cont, true);
        self.mime_feed(&piece, b"", cont);
    }

    fn mime_feed(&mut self, text: &[u8], eol: &[u8], cont: bool) {
        let mut ev = Vec::new();
        if let Some(m) = self.cur_mut().and_then(|t| t.mime.as_mut()) {
            m.feed(text, eol, cont, &mut ev);
        }
        ev.into_iter().for_each(|e| self.raise(e));
    }

    fn command(&mut self, line: &[u8], ts: Timestamp) {
        let verb_end = line.iter().position(|&c| c == b' ').unwrap_or(line.len());
        let verb = &line[..verb_end];
        let arg = trim(&line[verb_end..]);
        let is = |v: &[u8]| verb.eq_ignore_ascii_case(v);
        let cmd = if is(b"HELO") || is(b"EHLO") {
            Cmd::Helo
        } else if is(b"MAIL") && ieq_prefix(arg, b"FROM:") {
            Cmd::Mail
        } else if is(b"RCPT") && ieq_prefix(arg, b"TO:") {
            Cmd::Rcpt
        } else if is(b"DATA") {
            Cmd::Data
        } else if is(b"BDAT") {
            Cmd::Bdat {
                last: arg
                    .split(|&c| c == b' ')
                    .nth(1)
                    .is_some_and(|l| l.eq_ignore_ascii_case(b"LAST")),
            }
        } else if is(b"STARTTLS") {
            Cmd::StartTls
        } else if is(b"RSET") {
            Cmd::Rset
        } else if is(b"QUIT") {
            Cmd::Quit
        } else {
            Cmd::Other
        };
        if !self.pending.is_empty()
            && !self.pipelining
            && self.greeted
            && self
                .pending
                .iter()
                .any(|c| !matches!(c, Cmd::Other | Cmd::DataEnd))
        {
            self.raise(SmtpEvent::InvalidPipelinedSequence);
        }
        if self.pending.len() < MAX_PENDING {
            self.pending.push_back(cmd);
        }
        match cmd {
            Cmd::Quit => return,
            Cmd::Rset => {
                if self.cur_mut().is_some_and(|t| t.mail_from.is_some()) {
                    self.close();
                }
                return;
            }
            _ => {}
        }
        let id = self.open(ts);
        let Some(t) = self.txs.get_mut(id) else {
            return;
        };
        match cmd {
            Cmd::Helo => {
                let h = arg.to_vec();
                t.helo = Some(h.clone());
                self.helo = Some(h);
            }
            Cmd::Mail => {
                let from = trim(arg.get(5..).unwrap_or(b"")).to_vec();
                let empty = from.is_empty();
                // A second MAIL FROM in one mail replaces the first.
                let dup = t.mail_from.replace(from).is_some();
                if empty {
                    self.raise(SmtpEvent::UnparsableContent);
                }
                if dup {
                    self.raise(SmtpEvent::DuplicateFields);
                }
            }
            Cmd::Rcpt => {
                let to = trim(arg.get(3..).unwrap_or(b""));
                if to.is_empty() {
                    self.raise(SmtpEvent::UnparsableContent);
                } else if t.rcpt_to.len() < MAX_RCPT {
                    t.rcpt_to.push(to.to_vec());
                }
            }
            Cmd::Data => {
                t.mime.get_or_insert_with(Default::default);
                self.mode = Mode::Data;
            }
            Cmd::Bdat { last } => {
                let size = arg
                    .split(|&c| c == b' ')
                    .next()
                    .and_then(|s| std::str::from_utf8(s).ok())
                    .and_then(|s| s.parse::<u64>().ok());
                match size {
                    Some(n) if n <= MAX_BDAT => {
                        t.mime.get_or_insert_with(Default::default);
                        self.mode = Mode::Bdat { left: n, last };
                        if n == 0 && last {
                            self.mode = Mode::Command;
                            self.close();
                        }
                    }
                    _ => self.raise(SmtpEvent::BdatChunkLenExceeded),
                }
            }
            _ => {}
        }
    }

    fn server_bytes(&mut self, data: &[u8], ts: Timestamp) -> usize {
        let side = &mut self.sides[1];
        let (n, done) = Self::take_line(side, data, MAX_LINE + 2, false);
        if !done {
            return n;
        }
        let line = std::mem::take(&mut side.line);
        let over = std::mem::replace(&mut side.over, false);
        if std::mem::replace(&mut side.resync, false) {
            return n;
        }
        if over {
            self.raise(SmtpEvent::MaxReplyLineLenExceeded);
        }
        let (text, _) = Self::split_eol(&line);
        let text = &text[..text.len().min(MAX_LINE)];
        self.reply(text, ts);
        n
    }

    fn reply(&mut self, line: &[u8], ts: Timestamp) {
        let code = match line {
            [a, b, c, rest @ ..]
                if a.is_ascii_digit()
                    && b.is_ascii_digit()
                    && c.is_ascii_digit()
                    && matches!(rest.first(), None | Some(b' ' | b'-' | b'\t')) =>
            {
                u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
            }
            _ => {
                self.raise(SmtpEvent::InvalidReply);
                return;
            }
        };
        if trim(line.get(4..).unwrap_or(b"")).eq_ignore_ascii_case(b"PIPELINING") {
            self.pipelining = true;
        }
        if line.get(3) == Some(&b'-') {
            return;
        }
        if !self.greeted {
            self.greeted = true;
            if self.pending.is_empty() {
                if code != 220 {
                    self.raise(SmtpEvent::InvalidReply);
                }
                return;
            }
            self.raise(SmtpEvent::NoServerWelcomeMessage);
        }
        let Some(cmd) = self.pending.pop_front() else {
            self.raise(SmtpEvent::UnableToMatchReplyWithRequest);
            return;
        };
        match cmd {
            Cmd::Data if code != 354 => {
                self.raise(SmtpEvent::DataCommandRejected);
                if self.mode == Mode::Data {
                    self.mode = Mode::Command;
                    self.close();
                }
            }
            Cmd::StartTls if code == 220 => {
                let id = self.open(ts);
                if let Some(t) = self.txs.get_mut(id) {
                    t.starttls = true;
                }
                self.close();
                self.tls = true;
            }
            Cmd::StartTls => self.raise(SmtpEvent::TlsRejected),
            _ => {}
        }
    }

    pub fn on_gap(&mut self, dir: Direction) {
        let d = dir.index();
        if dir == Direction::ToServer && self.mode != Mode::Command {
            self.flush_piece();
        }
        self.sides[d] = Side {
            resync: true,
            ..Default::default()
        };
        match dir {
            Direction::ToServer => {
                if self.mode != Mode::Command {
                    if let Some(t) = self.cur_mut() {
                        t.truncated = true;
                    }
                    self.mode = Mode::Command;
                    self.close();
                }
            }
            Direction::ToClient => {
                self.pending.clear();
            }
        }
    }

    pub fn finish(&mut self, dir: Direction, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        if dir == Direction::ToServer {
            if self.mode != Mode::Command {
                // The mail's last partial line is still content.
                self.flush_piece();
                if let Some(t) = self.cur_mut() {
                    t.truncated = true;
                }
            }
            self.mode = Mode::Command;
            self.close();
        }
        self.flush_events(ts, ev);
    }
}

/// Whether a line starts with a command verb (resync after a gap).
fn starts_with_verb(line: &[u8]) -> bool {
    VERBS.iter().any(|v| {
        ieq_prefix(line, v) && matches!(line.get(v.len()), None | Some(b' ' | b'\r' | b'\n'))
    })
}

impl TxParser for SmtpState {
    fn proto(&self) -> AppProto {
        AppProto::Smtp
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        SmtpState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        SmtpState::on_gap(self, dir)
    }
    fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        SmtpState::finish(self, dir, 0, ev)
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
        if self.cur.is_some_and(|id| self.txs.get(id).is_none()) {
            self.cur = None;
        }
    }
    fn buffers(&self, tx: TxId, id: BufferId, _dir: Direction) -> Vec<&[u8]> {
        self.txs.get(tx).map(|t| t.buffers(id)).unwrap_or_default()
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
            .and_then(|t| t.email_eve())
            .map(|e| vec![("email", e)])
            .unwrap_or_default()
    }
    fn wants_data(&self, _dir: Direction) -> bool {
        !self.tls
    }
    fn mime(&self, tx: TxId) -> Option<&Mime> {
        self.txs.get(tx).and_then(|t| t.mime.as_deref())
    }
}

#[cfg(test)]
mod tests;
