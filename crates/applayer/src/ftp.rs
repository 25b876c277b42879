//! FTP control channel (RFC 959, 2428): one transaction per command
//! line and the reply lines that answer it, as Suricata's FTP parser
//! keeps them, for `ftp.command`, `ftp.command_data`, `ftp.reply`,
//! `ftp.completion_code`, `ftp.dynamic_port`, `ftp.mode`,
//! `ftp.reply_received`, `ftpbounce` and the EVE `ftp` record.
//!
//! Each direction is read as lines ending in LF (a CR before it is
//! dropped), in pieces of any size. A line keeps at most [`MAX_LINE`]
//! bytes (Suricata's `ftp.max-line-length` default); the rest up to the
//! LF is skipped, the line is marked truncated and the transaction gets
//! `request_command_too_long` / `response_command_too_long`.
//!
//! A command line opens a transaction. Its command is one of the names
//! Suricata knows (`USER`, `PORT`, `RETR` ...), compared without
//! case and followed by a space or the end of the line; other commands
//! open a transaction without a command name. A reply line goes to the
//! oldest transaction still waiting for its reply, or opens one without a
//! command (the server's greeting, unsolicited replies). A reply line
//! `ddd text` carries completion code `ddd`; `ddd-text` lines and the
//! lines of a multi-line reply without a code are kept as they are
//! (Suricata does the same). A multi-line reply (`ddd-` ... `ddd `)
//! stays with its transaction until its last line; a reply ends the
//! transaction (`reply_received`) unless its code is 1xx (preliminary:
//! `150 Opening data connection` is followed by `226`). At most
//! [`MAX_REPLY_LINES`] reply lines are kept per transaction.
//!
//! `PORT` / `EPRT` set the data connection's port (`dynamic_port`) and
//! active mode when the command is parsed; `PASV` / `EPSV` take it from
//! the `227` / `229` reply (passive mode). The data connection itself
//! is expected by the engine's reader ([`crate::ftpdata`],
//! docs/ARCHITECTURE.md "FTP data connections").
//!
//! After `234` answers `AUTH TLS` the channel is TLS: the parser stops
//! reading it. A gap drops the partial line of its direction and skips to
//! the next LF.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use serde_json::Value;

use crate::events::FtpEvent;
use crate::state::{TxCommon, TxProgress};
use crate::{AppLayerConfig, AppLayerEvent, BufferId, Direction, Timestamp, TxId};

/// Longest line kept (Suricata's `ftp.max-line-length` default, 4 KiB).
pub const MAX_LINE: usize = 4096;
/// Most reply lines kept per transaction; later ones are counted only.
pub const MAX_REPLY_LINES: usize = 256;

/// The commands Suricata's FTP parser names (`FtpCommands`); any other
/// command line is a transaction without a command.
const COMMANDS: &[&str] = &[
    "PORT", "EPRT", "PASV", "RETR", "EPSV", "STOR", "ABOR", "ACCT", "ALLO", "APPE", "CDUP",
    "CHMOD", "CWD", "DELE", "HELP", "IDLE", "LIST", "MAIL", "MDTM", "MKD", "MLFL", "MODE", "MRCP",
    "MRSQ", "MSAM", "MSND", "MSOM", "NLST", "NOOP", "PASS", "PWD", "QUIT", "REIN", "REST", "RMD",
    "RNFR", "RNTO", "SITE", "SIZE", "SMNT", "STAT", "STOU", "STRU", "SYST", "TYPE", "UMASK",
    "USER",
];

/// One reply line.
#[derive(Debug, Clone)]
pub struct FtpReply {
    /// The completion code of a `ddd text` line (empty otherwise).
    pub code: Vec<u8>,
    /// The text after the code, or the whole line when it has none.
    pub text: Vec<u8>,
    pub truncated: bool,
}

/// One command and its reply.
#[derive(Debug)]
pub struct FtpTx {
    pub(crate) common: TxCommon,
    /// The command's canonical (upper-case) name when it is a known one.
    command: Option<&'static str>,
    /// The argument after the command and one separator.
    command_data: Vec<u8>,
    command_truncated: bool,
    replies: Vec<FtpReply>,
    /// A final (non-1xx) reply was read.
    done: bool,
    /// The code of the multi-line reply in progress (`ddd-` read, `ddd `
    /// not yet).
    multi: Option<[u8; 3]>,
    /// Port of the data connection (`PORT`, `EPRT`, `227`, `229`).
    dyn_port: Option<u16>,
    /// Active mode (`PORT`/`EPRT` with a valid argument).
    active: bool,
    /// The IPv4 address a `PORT` names (`ftpbounce`).
    port_addr: Option<Ipv4Addr>,
    /// The command is `AUTH TLS` (not a command Suricata's EVE names).
    auth_tls: bool,
    /// Opened by a command line (not by a reply nothing waited for).
    has_request: bool,
    reply_lines_dropped: u64,
}

impl FtpTx {
    fn new(id: TxId, ts: Timestamp) -> Self {
        FtpTx {
            common: TxCommon::new(id, ts),
            command: None,
            command_data: Vec::new(),
            command_truncated: false,
            replies: Vec::new(),
            done: false,
            multi: None,
            dyn_port: None,
            active: false,
            port_addr: None,
            auth_tls: false,
            has_request: false,
            reply_lines_dropped: 0,
        }
    }

    pub fn id(&self) -> TxId {
        self.common.id
    }

    /// The command name (`None` for a reply without command, or a command
    /// Suricata does not name).
    pub fn command(&self) -> Option<&'static str> {
        self.command
    }

    pub fn command_data(&self) -> &[u8] {
        &self.command_data
    }

    pub fn replies(&self) -> &[FtpReply] {
        &self.replies
    }

    /// A final reply was read (`ftp.reply_received`).
    pub fn reply_received(&self) -> bool {
        self.done
    }

    pub fn dynamic_port(&self) -> Option<u16> {
        self.dyn_port
    }

    pub fn active(&self) -> bool {
        self.active
    }

    /// The address a `PORT` command names, for `ftpbounce`.
    pub fn port_addr(&self) -> Option<Ipv4Addr> {
        self.port_addr
    }

    /// Whether data of `dir` reached the transaction yet: its command
    /// line to the server, a reply line to the client. As Suricata, a
    /// side is inspected only once its own data touched it (a command
    /// whose reply has not started is not inspected to the client).
    pub fn side_started(&self, dir: Direction) -> bool {
        match dir {
            Direction::ToServer => self.has_request,
            Direction::ToClient => self.done || !self.replies.is_empty(),
        }
    }

    /// The request is complete once the command line is read (a
    /// transaction opened by a reply has none to wait for); the response
    /// once a final reply is read.
    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: true,
            response_complete: self.done,
        }
    }

    /// `ftp.command`, `ftp.command_data` (whatever the direction).
    pub fn buffer(&self, id: BufferId, _dir: Direction) -> Option<&[u8]> {
        match id {
            BufferId::FtpCommand => self.command.map(str::as_bytes),
            BufferId::FtpCommandData => (self.command.is_some() && !self.command_data.is_empty())
                .then_some(&self.command_data[..]),
            _ => None,
        }
    }

    /// Multi-buffers `ftp.reply` (each reply line) and
    /// `ftp.completion_code` (each code); single buffers yield themselves.
    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        match id {
            BufferId::FtpReply => self.replies.iter().map(|r| &r.text[..]).collect(),
            BufferId::FtpCompletionCode => self
                .replies
                .iter()
                .filter(|r| !r.code.is_empty())
                .map(|r| &r.code[..])
                .collect(),
            _ => self.buffer(id, dir).into_iter().collect(),
        }
    }

    /// Suricata's `ftp` object.
    pub fn eve(&self) -> Value {
        crate::jsonw::tree(&crate::jsonw::object(|w| self.eve_write(w)))
    }

    /// The members of the `ftp` object, written to `w` in key order.
    pub fn eve_write(&self, w: &mut crate::jsonw::JsonText) {
        if let Some(c) = self.command {
            w.field_str("command", c);
            if !self.command_data.is_empty() {
                w.field_lossy("command_data", &self.command_data);
                w.field_bool("command_truncated", self.command_truncated);
            }
        }
        w.field_lossy_list(
            "completion_code",
            self.replies
                .iter()
                .map(|r| &r.code[..])
                .filter(|c| !c.is_empty()),
        );
        if let Some(p) = self.dyn_port {
            w.field_u64("dynamic_port", p);
        }
        if matches!(self.command, Some("PORT" | "EPRT" | "PASV" | "EPSV")) {
            let mode = if self.active { "active" } else { "passive" };
            w.field_str("mode", mode);
        }
        w.field_lossy_list(
            "reply",
            self.replies
                .iter()
                .map(|r| &r.text[..])
                .filter(|t| !t.is_empty()),
        );
        let received = if self.done { "yes" } else { "no" };
        w.field_str("reply_received", received);
        let truncated = self.replies.iter().any(|r| r.truncated);
        w.field_bool("reply_truncated", truncated);
    }
}

/// Line assembly of one direction.
#[derive(Debug, Default)]
struct Lines {
    buf: Vec<u8>,
    truncated: bool,
    /// After a gap: skip to the next LF.
    resync: bool,
    /// TLS after `AUTH TLS`: nothing more is read.
    stopped: bool,
}

impl Lines {
    /// Appends `data`; returns the complete lines (CR LF / LF removed)
    /// with their truncation flag.
    fn push(&mut self, mut data: &[u8], out: &mut Vec<(Vec<u8>, bool)>) {
        while !data.is_empty() {
            let (chunk, eol) = match memchr::memchr(b'\n', data) {
                Some(i) => (&data[..i], true),
                None => (data, false),
            };
            data = &data[(chunk.len() + usize::from(eol)).min(data.len())..];
            if self.resync {
                if eol {
                    self.resync = false;
                }
                continue;
            }
            let room = MAX_LINE.saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            self.truncated |= chunk.len() > room;
            if eol {
                out.push(self.take());
            }
        }
    }

    fn take(&mut self) -> (Vec<u8>, bool) {
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        (line, std::mem::take(&mut self.truncated))
    }
}

/// Per-flow FTP state.
#[derive(Debug)]
pub struct FtpState {
    lines: [Lines; 2],
    txs: VecDeque<FtpTx>,
    next_id: TxId,
    max_txs: usize,
    /// Lines read per direction.
    pub lines_read: [u64; 2],
    /// A line of the direction completed since the last
    /// [`FtpState::take_raw_trigger`].
    raw_trigger: [bool; 2],
}

/// The known command a request line starts with, and the offset of its
/// argument.
fn command_of(line: &[u8]) -> Option<(&'static str, usize)> {
    COMMANDS.iter().find_map(|&c| {
        let n = c.len();
        let head = line.get(..n)?;
        if !head.eq_ignore_ascii_case(c.as_bytes()) {
            return None;
        }
        match line.get(n) {
            None => Some((c, n)),
            Some(b' ') => Some((c, n + 1)),
            Some(_) => None,
        }
    })
}

fn trim(b: &[u8]) -> &[u8] {
    let s = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let e = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(s, |i| i + 1);
    &b[s..e.max(s)]
}

fn parse_u8(b: &[u8]) -> Option<u8> {
    let t = trim(b);
    if t.is_empty() || t.len() > 3 || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok()
}

/// `h1,h2,h3,h4,p1,p2` (a `PORT` argument, the numbers of a `227`
/// reply): the address and port; `None` when malformed or the port is 0.
pub fn parse_host_port(arg: &[u8]) -> Option<(Ipv4Addr, u16)> {
    let mut n = [0u8; 6];
    let mut parts = arg.split(|&c| c == b',');
    for v in n.iter_mut() {
        *v = parse_u8(parts.next()?)?;
    }
    if parts.next().is_some() {
        return None;
    }
    let port = u16::from(n[4]) << 8 | u16::from(n[5]);
    (port != 0).then(|| (Ipv4Addr::new(n[0], n[1], n[2], n[3]), port))
}

/// `EPRT |af|address|port|` (RFC 2428): the port, when valid and not 0.
pub fn parse_eprt(arg: &[u8]) -> Option<u16> {
    let arg = trim(arg);
    let (&delim, rest) = arg.split_first()?;
    if delim.is_ascii_alphanumeric() {
        return None;
    }
    let f: Vec<&[u8]> = rest.split(|&c| c == delim).collect();
    // af, address, port, then the empty field after the last delimiter.
    if f.len() != 4 || !f[3].is_empty() || !matches!(f[0], b"1" | b"2") || f[1].is_empty() {
        return None;
    }
    let p: u16 = std::str::from_utf8(f[2]).ok()?.parse().ok()?;
    (p != 0).then_some(p)
}

/// The port of a `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2)` reply
/// text.
pub(crate) fn parse_pasv_reply(text: &[u8]) -> Option<u16> {
    let open = memchr::memchr(b'(', text)?;
    let close = open + memchr::memchr(b')', &text[open..])?;
    parse_host_port(&text[open + 1..close]).map(|(_, p)| p)
}

/// The port of a `229 Entering Extended Passive Mode (|||port|)` reply
/// text.
pub(crate) fn parse_epsv_reply(text: &[u8]) -> Option<u16> {
    let open = memchr::memchr(b'(', text)?;
    let close = open + memchr::memchr(b')', &text[open..])?;
    let inner = &text[open + 1..close];
    let (&d, rest) = inner.split_first()?;
    let f: Vec<&[u8]> = rest.split(|&c| c == d).collect();
    if f.len() != 4 || !f[0].is_empty() || !f[1].is_empty() || !f[3].is_empty() {
        return None;
    }
    let p: u16 = std::str::from_utf8(f[2]).ok()?.parse().ok()?;
    (p != 0).then_some(p)
}

/// Splits a reply line into completion code and text: `ddd text` has a
/// code; any other line (`ddd-text`, continuation lines) is all text.
fn split_reply(line: &[u8]) -> (&[u8], &[u8]) {
    if line.len() >= 4 && line[..3].iter().all(u8::is_ascii_digit) && line[3] == b' ' {
        (&line[..3], &line[4..])
    } else if line.len() == 3 && line.iter().all(u8::is_ascii_digit) {
        (line, &[])
    } else {
        (&[], line)
    }
}

impl FtpState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        FtpState {
            lines: Default::default(),
            txs: VecDeque::new(),
            next_id: 0,
            max_txs: cfg.max_transactions.max(1),
            lines_read: [0; 2],
            raw_trigger: [false; 2],
        }
    }

    pub fn transactions(&self) -> impl Iterator<Item = &FtpTx> {
        self.txs.iter()
    }

    pub fn tx(&self, id: TxId) -> Option<&FtpTx> {
        self.txs.iter().find(|t| t.common.id == id)
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut FtpTx> {
        self.txs.iter_mut().find(|t| t.common.id == id)
    }

    pub(crate) fn retain(&mut self, keep: impl FnMut(&FtpTx) -> bool) {
        self.txs.retain(keep);
    }

    fn new_tx(&mut self, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) -> usize {
        if self.txs.len() >= self.max_txs {
            self.txs.pop_front();
            let id = Some(self.next_id);
            ev.push(AppLayerEvent::Ftp(FtpEvent::TooManyTransactions, id));
        }
        self.txs.push_back(FtpTx::new(self.next_id, ts));
        self.next_id += 1;
        self.txs.len() - 1
    }

    /// Feeds stream bytes of one direction.
    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        if self.lines[d].stopped {
            return;
        }
        let mut lines = Vec::new();
        self.lines[d].push(data, &mut lines);
        for (line, truncated) in lines {
            if self.lines[d].stopped {
                break;
            }
            self.line(dir, &line, truncated, ts, ev);
        }
    }

    fn line(
        &mut self,
        dir: Direction,
        line: &[u8],
        truncated: bool,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        self.lines_read[dir.index()] += 1;
        self.raw_trigger[dir.index()] = true;
        match dir {
            Direction::ToServer => self.request(line, truncated, ts, ev),
            Direction::ToClient => self.reply(line, truncated, ts, ev),
        }
    }

    fn request(
        &mut self,
        line: &[u8],
        truncated: bool,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let i = self.new_tx(ts, ev);
        let tx = &mut self.txs[i];
        tx.has_request = true;
        if truncated {
            ev.push(AppLayerEvent::Ftp(
                FtpEvent::RequestCommandTooLong,
                Some(tx.common.id),
            ));
        }
        tx.auth_tls = line
            .get(..8)
            .is_some_and(|h| h.eq_ignore_ascii_case(b"AUTH TLS"));
        let Some((cmd, off)) = command_of(line) else {
            return;
        };
        tx.command = Some(cmd);
        tx.command_data = line[off..].to_vec();
        tx.command_truncated = truncated;
        match cmd {
            "PORT" => {
                if let Some((addr, port)) = parse_host_port(&tx.command_data) {
                    tx.dyn_port = Some(port);
                    tx.active = true;
                    tx.port_addr = Some(addr);
                }
            }
            "EPRT" => {
                if let Some(port) = parse_eprt(&tx.command_data) {
                    tx.dyn_port = Some(port);
                    tx.active = true;
                }
            }
            _ => {}
        }
    }

    fn reply(&mut self, line: &[u8], truncated: bool, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        // The transaction a multi-line reply is being read into, else the
        // oldest one waiting for its reply, else a new one.
        let i = match self
            .txs
            .iter()
            .position(|t| t.multi.is_some())
            .or_else(|| self.txs.iter().position(|t| !t.done))
        {
            Some(i) => i,
            None => self.new_tx(ts, ev),
        };
        let tx = &mut self.txs[i];
        if truncated {
            ev.push(AppLayerEvent::Ftp(
                FtpEvent::ResponseCommandTooLong,
                Some(tx.common.id),
            ));
        }
        let (code, text) = split_reply(line);
        if tx.replies.len() < MAX_REPLY_LINES {
            tx.replies.push(FtpReply {
                code: code.to_vec(),
                text: text.to_vec(),
                truncated,
            });
        } else {
            if tx.reply_lines_dropped == 0 {
                ev.push(AppLayerEvent::Ftp(
                    FtpEvent::TooManyReplyLines,
                    Some(tx.common.id),
                ));
            }
            tx.reply_lines_dropped += 1;
        }
        // Multi-line replies: `ddd-` opens, `ddd ` with the same code
        // closes; lines in between belong to the reply.
        let lead: Option<[u8; 3]> = line
            .get(..3)
            .filter(|c| c.iter().all(u8::is_ascii_digit))
            .map(|c| [c[0], c[1], c[2]]);
        match (tx.multi, lead) {
            (Some(m), Some(c)) if c == m && line.get(3) != Some(&b'-') => tx.multi = None,
            (Some(_), _) => return,
            (None, Some(c)) if line.get(3) == Some(&b'-') => {
                tx.multi = Some(c);
                return;
            }
            _ => {}
        }
        let Some(c) = lead else {
            // Text without a code outside a multi-line reply: Suricata
            // takes it as a reply all the same.
            tx.done = true;
            return;
        };
        match (tx.command, &c) {
            (Some("PASV"), b"227") => {
                if let Some(p) = parse_pasv_reply(text) {
                    tx.dyn_port = Some(p);
                    tx.active = false;
                }
            }
            (Some("EPSV"), b"229") => {
                if let Some(p) = parse_epsv_reply(text) {
                    tx.dyn_port = Some(p);
                    tx.active = false;
                }
            }
            _ if tx.auth_tls && &c == b"234" => {
                // TLS follows in both directions.
                self.lines[0].stopped = true;
                self.lines[1].stopped = true;
            }
            _ => {}
        }
        let tx = &mut self.txs[i];
        // 1xx is a preliminary reply: the final one follows.
        if c[0] != b'1' {
            tx.done = true;
        }
    }

    /// Whether a line of `dir` completed since the last call: its raw
    /// stream is then due for inspection at once, as in Suricata (a
    /// command is inspected as raw stream on the packet after its
    /// acknowledgement, not when a chunk has piled up).
    pub fn take_raw_trigger(&mut self, dir: Direction) -> bool {
        std::mem::take(&mut self.raw_trigger[dir.index()])
    }

    /// Whether the parser still reads `dir` (not after `AUTH TLS`).
    pub fn wants_data(&self, dir: Direction) -> bool {
        !self.lines[dir.index()].stopped
    }

    /// A gap: a partial line is dropped and reading resumes after the
    /// next LF; a gap between lines (FTP sends a line per segment) loses
    /// the lines it covers only. A multi-line reply in progress is closed.
    pub fn on_gap(&mut self, dir: Direction) {
        let l = &mut self.lines[dir.index()];
        l.resync |= !l.buf.is_empty() || l.truncated;
        l.buf.clear();
        l.truncated = false;
        if dir == Direction::ToClient {
            for t in self.txs.iter_mut().filter(|t| t.multi.is_some()) {
                t.multi = None;
                t.done = true;
            }
        }
    }

    /// The direction ended: a last line without LF is read.
    pub fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        let l = &mut self.lines[d];
        if l.stopped || l.resync || (l.buf.is_empty() && !l.truncated) {
            return;
        }
        let (line, truncated) = l.take();
        let ts = self.txs.back().map_or(0, |t| t.common.ts);
        self.line(dir, &line, truncated, ts, ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> FtpState {
        FtpState::new(&AppLayerConfig::default())
    }

    fn feed(s: &mut FtpState, dir: Direction, data: &[u8]) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        s.feed(dir, data, 1, &mut ev);
        ev
    }

    const SESSION_C: &[u8] =
        b"USER anonymous\r\nPASS anonymous\r\nPORT 192,168,0,13,234,10\r\nNLST\r\nQUIT\r\n";
    const SESSION_S: &[u8] = b"220 (vsFTPd 2.3.5)\r\n331 Please specify the password.\r\n\
230 Login successful.\r\n200 PORT command successful.\r\n150 Here comes the directory listing.\r\n\
226 Directory send OK.\r\n221 Goodbye.\r\n";

    fn check_session(s: &FtpState) {
        let t: Vec<&FtpTx> = s.transactions().collect();
        assert_eq!(t.len(), 6);
        // The greeting has a transaction of its own, without a command.
        assert_eq!(t[0].command(), None);
        assert_eq!(
            t[0].buffers(BufferId::FtpCompletionCode, Direction::ToClient),
            vec![&b"220"[..]]
        );
        assert_eq!(t[1].command(), Some("USER"));
        assert_eq!(
            t[1].buffer(BufferId::FtpCommandData, Direction::ToServer),
            Some(&b"anonymous"[..])
        );
        assert_eq!(
            t[1].buffers(BufferId::FtpReply, Direction::ToClient),
            vec![&b"Please specify the password."[..]]
        );
        assert_eq!(t[3].command(), Some("PORT"));
        assert_eq!(t[3].dynamic_port(), Some(59914));
        assert!(t[3].active());
        assert_eq!(t[3].port_addr(), Some(Ipv4Addr::new(192, 168, 0, 13)));
        assert_eq!(t[4].command(), Some("NLST"));
        assert_eq!(
            t[4].buffer(BufferId::FtpCommandData, Direction::ToServer),
            None
        );
        assert_eq!(
            t[4].buffers(BufferId::FtpCompletionCode, Direction::ToClient),
            vec![&b"150"[..], &b"226"[..]]
        );
        assert!(t.iter().all(|t| t.reply_received()));
        let e = t[3].eve();
        assert_eq!(e["command"], "PORT");
        assert_eq!(e["command_data"], "192,168,0,13,234,10");
        assert_eq!(e["command_truncated"], false);
        assert_eq!(e["dynamic_port"], 59914);
        assert_eq!(e["mode"], "active");
        assert_eq!(e["reply_received"], "yes");
        assert_eq!(e["reply_truncated"], false);
        let e = t[4].eve();
        assert!(e.get("command_data").is_none() && e.get("command_truncated").is_none());
        assert_eq!(e["reply"][1], "Directory send OK.");
    }

    /// Replies interleaved with commands as on the wire.
    fn interleaved(s: &mut FtpState, step: usize) {
        let c: Vec<&[u8]> = SESSION_C.split_inclusive(|&b| b == b'\n').collect();
        let r: Vec<&[u8]> = SESSION_S.split_inclusive(|&b| b == b'\n').collect();
        let answers: [&[usize]; 5] = [&[1], &[2], &[3], &[4, 5], &[6]];
        let mut chunks: Vec<(Direction, &[u8])> = vec![(Direction::ToClient, r[0])];
        for (cmd, ans) in c.iter().zip(answers) {
            chunks.push((Direction::ToServer, cmd));
            chunks.extend(ans.iter().map(|&a| (Direction::ToClient, r[a])));
        }
        for (d, data) in chunks {
            for piece in data.chunks(step) {
                assert!(feed(s, d, piece).is_empty());
            }
        }
    }

    #[test]
    fn session_whole_and_byte_by_byte() {
        for step in [1, 3, 1000] {
            let mut s = state();
            interleaved(&mut s, step);
            check_session(&s);
        }
    }

    #[test]
    fn multi_line_reply_stays_with_its_command() {
        let mut s = state();
        feed(&mut s, Direction::ToServer, b"FEAT\r\nSYST\r\n");
        let r = b"211-Features:\r\n EPRT\r\n211 End\r\n215 UNIX Type: L8\r\n";
        for b in r.iter() {
            feed(&mut s, Direction::ToClient, std::slice::from_ref(b));
        }
        let t: Vec<&FtpTx> = s.transactions().collect();
        // FEAT is not a command Suricata names.
        assert_eq!(t[0].command(), None);
        assert_eq!(
            t[0].buffers(BufferId::FtpReply, Direction::ToClient),
            vec![&b"211-Features:"[..], b" EPRT", b"End"]
        );
        assert_eq!(
            t[0].buffers(BufferId::FtpCompletionCode, Direction::ToClient),
            vec![&b"211"[..]]
        );
        assert_eq!(t[1].command(), Some("SYST"));
        assert_eq!(
            t[1].buffers(BufferId::FtpReply, Direction::ToClient),
            vec![&b"UNIX Type: L8"[..]]
        );
        // A multi-line reply in progress keeps the transaction open.
        let mut s = state();
        feed(&mut s, Direction::ToClient, b"220-Welcome\r\n");
        assert!(!s.tx(0).unwrap().reply_received());
        feed(&mut s, Direction::ToClient, b"220 ready\r\n");
        assert!(s.tx(0).unwrap().reply_received());
    }

    #[test]
    fn passive_and_extended_modes() {
        let mut s = state();
        feed(
            &mut s,
            Direction::ToServer,
            b"PASV\r\nEPSV\r\nEPRT |2|::1|34325|\r\n",
        );
        feed(
            &mut s,
            Direction::ToClient,
            b"227 Entering Passive Mode (90,130,70,73,100,85).\r\n\
229 Entering Extended Passive Mode (|||6446|)\r\n200 EPRT command successful.\r\n",
        );
        let t: Vec<&FtpTx> = s.transactions().collect();
        assert_eq!(t[0].dynamic_port(), Some(25685));
        assert!(!t[0].active());
        assert_eq!(t[0].eve()["mode"], "passive");
        assert_eq!(t[1].dynamic_port(), Some(6446));
        assert_eq!(t[2].dynamic_port(), Some(34325));
        assert!(t[2].active());
        assert_eq!(t[2].port_addr(), None);
        // Malformed arguments set no port and leave passive mode.
        let mut s = state();
        feed(
            &mut s,
            Direction::ToServer,
            b"PORT 114,115\r\nPORT 1,2,3,4,0,0\r\nPORT 1,2,3,400,1,1\r\nEPRT |3|x|1|\r\n",
        );
        for t in s.transactions() {
            assert_eq!(t.dynamic_port(), None);
            assert_eq!(t.eve()["mode"], "passive");
            assert_eq!(t.eve()["reply_received"], "no");
        }
    }

    #[test]
    fn preliminary_reply_keeps_the_transaction_open() {
        let mut s = state();
        feed(&mut s, Direction::ToServer, b"retr a.tx");
        assert!(!s.take_raw_trigger(Direction::ToServer));
        feed(&mut s, Direction::ToServer, b"t\r\n");
        assert!(s.take_raw_trigger(Direction::ToServer));
        assert!(!s.take_raw_trigger(Direction::ToServer));
        feed(&mut s, Direction::ToClient, b"150 Opening\r\n");
        let t = s.tx(0).unwrap();
        assert_eq!(t.command(), Some("RETR"));
        assert!(!t.reply_received() && !t.progress().response_complete);
        assert!(t.side_started(Direction::ToServer) && t.side_started(Direction::ToClient));
        feed(&mut s, Direction::ToClient, b"226 Transfer complete.\r\n");
        assert!(s.tx(0).unwrap().progress().response_complete);
        // A reply nothing waits for opens a transaction of its own.
        feed(&mut s, Direction::ToClient, b"421 Timeout.\r\n");
        assert_eq!(s.tx(1).unwrap().command(), None);
        assert!(!s.tx(1).unwrap().side_started(Direction::ToServer));
        feed(&mut s, Direction::ToServer, b"NOOP\r\n");
        assert!(!s.tx(2).unwrap().side_started(Direction::ToClient));
    }

    #[test]
    fn long_lines_are_capped_with_events() {
        let mut s = state();
        let mut long = b"STOR ".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_LINE * 3));
        long.extend_from_slice(b"\r\nNOOP\r\n");
        let ev = feed(&mut s, Direction::ToServer, &long);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Ftp(FtpEvent::RequestCommandTooLong, Some(0))]
        );
        let t = s.tx(0).unwrap();
        assert_eq!(t.command_data().len(), MAX_LINE - 5);
        assert_eq!(t.eve()["command_truncated"], true);
        assert_eq!(s.tx(1).unwrap().command(), Some("NOOP"));
        let mut reply = b"200 ".to_vec();
        reply.extend(std::iter::repeat_n(b'b', MAX_LINE * 2));
        reply.push(b'\n');
        let ev = feed(&mut s, Direction::ToClient, &reply);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Ftp(
                FtpEvent::ResponseCommandTooLong,
                Some(0)
            )]
        );
        assert_eq!(s.tx(0).unwrap().eve()["reply_truncated"], true);
    }

    #[test]
    fn reply_lines_and_transactions_are_capped() {
        let mut s = FtpState::new(&AppLayerConfig {
            max_transactions: 4,
            ..AppLayerConfig::default()
        });
        let mut r = b"211-start\r\n".to_vec();
        for _ in 0..MAX_REPLY_LINES * 2 {
            r.extend_from_slice(b" x\r\n");
        }
        let ev = feed(&mut s, Direction::ToClient, &r);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Ftp(FtpEvent::TooManyReplyLines, Some(0))]
        );
        assert_eq!(s.tx(0).unwrap().replies().len(), MAX_REPLY_LINES);
        let ev = feed(
            &mut s,
            Direction::ToServer,
            b"NOOP\r\n".repeat(10).as_slice(),
        );
        assert!(ev
            .iter()
            .all(|e| matches!(e, AppLayerEvent::Ftp(FtpEvent::TooManyTransactions, _))));
        assert_eq!(s.transactions().count(), 4);
        assert_eq!(s.transactions().last().unwrap().id(), 10);
    }

    #[test]
    fn gap_resynchronises_at_the_next_line() {
        let mut s = state();
        feed(&mut s, Direction::ToServer, b"USER bo");
        s.on_gap(Direction::ToServer);
        feed(&mut s, Direction::ToServer, b"b\r\nPASS x\r\n");
        let t: Vec<&FtpTx> = s.transactions().collect();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].command(), Some("PASS"));
        // A gap between lines loses no line after it.
        s.on_gap(Direction::ToServer);
        feed(&mut s, Direction::ToServer, b"SYST\r\n");
        assert_eq!(s.tx(1).unwrap().command(), Some("SYST"));
        s.retain(|t| t.id() == 0);
        // A multi-line reply cut by a gap is closed.
        feed(&mut s, Direction::ToClient, b"230-a\r\n");
        s.on_gap(Direction::ToClient);
        feed(&mut s, Direction::ToClient, b"lost\r\n");
        assert!(s.tx(0).unwrap().reply_received());
        // A last line without LF is read at the end of the stream.
        let mut ev = Vec::new();
        feed(&mut s, Direction::ToServer, b"QUIT");
        s.finish(Direction::ToServer, &mut ev);
        assert_eq!(s.transactions().last().unwrap().command(), Some("QUIT"));
    }

    #[test]
    fn auth_tls_stops_parsing() {
        let mut s = state();
        feed(&mut s, Direction::ToServer, b"AUTH TLS\r\n");
        feed(
            &mut s,
            Direction::ToClient,
            b"234 Proceed.\r\n\x16\x03\x01\n\n",
        );
        assert!(!s.wants_data(Direction::ToClient) && !s.wants_data(Direction::ToServer));
        feed(&mut s, Direction::ToServer, b"\x16\x03\x01\x00\x10\n");
        assert_eq!(s.transactions().count(), 1);
        assert_eq!(s.tx(0).unwrap().command(), None);
        assert_eq!(s.tx(0).unwrap().eve()["completion_code"][0], "234");
    }

    #[test]
    fn command_names_need_a_boundary() {
        assert_eq!(command_of(b"user x"), Some(("USER", 5)));
        assert_eq!(command_of(b"CWD"), Some(("CWD", 3)));
        assert_eq!(command_of(b"CWDX a"), None);
        assert_eq!(command_of(b""), None);
        assert_eq!(command_of(b"AUTH TLS"), None);
        assert_eq!(split_reply(b"220-x"), (&b""[..], &b"220-x"[..]));
        assert_eq!(split_reply(b"220"), (&b"220"[..], &b""[..]));
        assert_eq!(parse_eprt(b"|1|132.235.1.2|6275|"), Some(6275));
        assert_eq!(parse_eprt(b"|1|132.235.1.2|0|"), None);
        assert_eq!(parse_eprt(b""), None);
        assert_eq!(parse_epsv_reply(b"x (|||"), None);
        assert_eq!(parse_pasv_reply(b"x )("), None);
    }
}
