//! Application-layer frames (Suricata's `frame` keyword and the alert's
//! `frame` object): the protocol data units of a direction of a flow,
//! each a span of the reassembled stream (or of a datagram) with a type
//! name (`tls.pdu`, `smb.nbss.hdr`, `http1.request` ...).
//!
//! A [`Framer`] follows one direction, fed the same stream data as the
//! protocol's parser, in order and with stream offsets. It reads only
//! the headers it needs (record lengths, line ends, NBSS / SMB / DCERPC
//! headers), opens a frame where a unit starts and completes it once all
//! of its bytes were seen. Completed frames wait in a bounded queue for
//! detection ([`Framer::take_done`]).
//!
//! Bounds: a frame keeps at most [`FRAME_DATA_MAX`] of its bytes (its
//! length is still the whole unit's), a framer holds at most
//! [`OPEN_MAX`] open frames and [`DONE_MAX`] completed ones (older ones
//! are dropped and counted), and a line is looked at up to
//! [`LINE_MAX`] bytes. A gap in the stream or a unit that does not parse
//! stops the framer for the direction (Suricata stops its parser too).

use std::collections::VecDeque;

/// Bytes of one frame kept for inspection.
pub const FRAME_DATA_MAX: usize = 65_536;
/// Frames open at once in one direction.
pub const OPEN_MAX: usize = 64;
/// Completed frames waiting for detection in one direction.
pub const DONE_MAX: usize = 256;
/// Bytes of a line the line-based framers keep (longer lines still end
/// their frame at their end).
pub const LINE_MAX: usize = 8192;
/// Stream bytes a framer remembers: a frame found once its header or
/// first line is whole gets its first bytes from there. A frame whose
/// start is further back (a longer line) is dropped.
const HIST_MAX: usize = LINE_MAX + 64;

/// A complete frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The protocol's frame-type name as in `frame:<proto>.<name>` (the
    /// protocol is the framer's: [`Framer::proto`]).
    pub name: &'static str,
    /// Its id: frames of a direction count from 1 in the order they
    /// start (Suricata's frame ids).
    pub id: u64,
    /// Stream offset of its first byte (TCP); 0 for a datagram.
    pub offset: u64,
    /// Its length on the wire.
    pub len: u64,
    /// Its first bytes (up to [`FRAME_DATA_MAX`]).
    pub data: Vec<u8>,
    /// All of its bytes were seen (false: the stream ended first).
    pub complete: bool,
    /// The transaction it belongs to, where the framer knows it (HTTP/1
    /// messages, SMTP mail data).
    pub tx_id: Option<u64>,
}

/// Protocols with frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameProto {
    Tls,
    Dns,
    Http1,
    Smb,
    Dcerpc,
    Smtp,
}

impl FrameProto {
    /// The protocol of a flow's parser, when it has frames.
    pub fn of(p: crate::AppProto) -> Option<FrameProto> {
        use crate::AppProto as P;
        Some(match p {
            P::Tls => FrameProto::Tls,
            P::Dns => FrameProto::Dns,
            P::Http => FrameProto::Http1,
            P::Smb => FrameProto::Smb,
            P::Dcerpc => FrameProto::Dcerpc,
            P::Smtp => FrameProto::Smtp,
            _ => return None,
        })
    }

    /// Suricata's name of the protocol in frame names (`http1`, not `http`).
    pub fn name(self) -> &'static str {
        match self {
            FrameProto::Tls => "tls",
            FrameProto::Dns => "dns",
            FrameProto::Http1 => "http1",
            FrameProto::Smb => "smb",
            FrameProto::Dcerpc => "dcerpc",
            FrameProto::Smtp => "smtp",
        }
    }

    /// The frame names the framer produces.
    pub fn frame_names(self) -> &'static [&'static str] {
        match self {
            FrameProto::Tls => &[
                "pdu",
                "hdr",
                "data",
                "alert",
                "heartbeat",
                "ssl2.hdr",
                "ssl2.pdu",
            ],
            FrameProto::Dns => &["pdu"],
            FrameProto::Http1 => &["request", "response"],
            FrameProto::Smb => &[
                "nbss.pdu",
                "nbss.hdr",
                "nbss.data",
                "smb1.pdu",
                "smb1.hdr",
                "smb1.data",
                "smb2.pdu",
                "smb2.hdr",
                "smb2.data",
                "smb3.pdu",
                "smb3.hdr",
                "smb3.data",
            ],
            FrameProto::Dcerpc => &["pdu", "hdr", "data"],
            FrameProto::Smtp => &["command_line", "data", "response_line"],
        }
    }
}

#[derive(Debug)]
struct Open {
    name: &'static str,
    id: u64,
    tx_id: Option<u64>,
    offset: u64,
    /// `None` until the framer finds its end.
    len: Option<u64>,
    data: Vec<u8>,
}

/// What a header-reading framer waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// TLS record header (5 bytes), or SSLv2's (2).
    TlsHdr,
    /// DNS over TCP length prefix.
    DnsLen,
    /// NBSS header.
    Nbss,
    /// The 4-byte protocol id of an SMB message ending at `end`.
    SmbMagic { end: u64 },
    /// SMB2 `NextCommand` of the message at `start`.
    Smb2Next { start: u64, end: u64 },
    /// DCERPC common header (16 bytes).
    DceHdr,
}

impl Step {
    fn size(self) -> usize {
        match self {
            Step::TlsHdr => 5,
            Step::DnsLen => 2,
            Step::Nbss | Step::SmbMagic { .. } | Step::Smb2Next { .. } => 4,
            Step::DceHdr => 16,
        }
    }
}

/// Line-based framers' state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lines {
    /// HTTP/1: before a message's start line.
    HttpIdle,
    /// HTTP/1: in the start line or headers of the message at `start`.
    HttpHeaders { start: u64, first: bool },
    /// HTTP/1: a body of known length ends at `end`.
    HttpBody { end: u64 },
    /// HTTP/1: a chunk-size line.
    HttpChunkSize,
    /// HTTP/1: chunk data (and its CRLF) up to `end`.
    HttpChunk { end: u64 },
    /// HTTP/1: trailer lines after the last chunk.
    HttpTrailer,
    /// HTTP/1 response without length: the body runs to the stream's end.
    HttpToClose,
    /// SMTP: command or reply lines.
    SmtpCommands,
    /// SMTP: mail data after `DATA`, up to the `.` line.
    SmtpData,
    /// SMTP: a `BDAT` chunk up to `end`.
    SmtpBdat { end: u64 },
}

#[derive(Debug)]
enum Mode {
    Header {
        at: u64,
        step: Step,
        hdr: Vec<u8>,
    },
    Lines {
        st: Lines,
        line: Vec<u8>,
        line_start: u64,
    },
    /// Datagrams: each is a frame (DNS over UDP).
    Datagram,
    Stopped,
}

/// The framer of one direction of a flow.
#[derive(Debug)]
pub struct Framer {
    proto: FrameProto,
    to_server: bool,
    /// Stream offset of the next byte expected.
    pos: u64,
    mode: Mode,
    open: Vec<Open>,
    done: VecDeque<Frame>,
    /// Frames dropped because a bound was reached.
    pub dropped: u64,
    /// The id of the next frame.
    next_id: u64,
    /// The last stream bytes before `pos` (at most [`HIST_MAX`]).
    hist: Vec<u8>,
    /// The frame types rules inspect: only those are made (and counted
    /// in ids), as Suricata registers only the frame types in use.
    enabled: Vec<&'static str>,
    /// Messages started (HTTP/1) or mails sent (SMTP): the transaction id
    /// of the next frame that has one.
    tx_count: u64,
    /// HTTP/1: the status code of the response being read, its
    /// `Content-Length` and whether it is chunked.
    http_status: Option<Vec<u8>>,
    http_len: Option<u64>,
    http_chunked: bool,
}

impl Framer {
    /// A framer for `proto`'s data in one direction, over TCP (`tcp`) or
    /// datagrams, making the frames named in `enabled` (frame-type names
    /// within the protocol).
    pub fn new(
        proto: FrameProto,
        to_server: bool,
        tcp: bool,
        enabled: Vec<&'static str>,
    ) -> Framer {
        let mode = if !tcp {
            Mode::Datagram
        } else {
            match proto {
                FrameProto::Tls => header(0, Step::TlsHdr),
                FrameProto::Dns => header(0, Step::DnsLen),
                FrameProto::Smb => header(0, Step::Nbss),
                FrameProto::Dcerpc => header(0, Step::DceHdr),
                FrameProto::Http1 => lines(Lines::HttpIdle),
                FrameProto::Smtp => lines(Lines::SmtpCommands),
            }
        };
        Framer {
            proto,
            to_server,
            pos: 0,
            mode,
            open: Vec::new(),
            done: VecDeque::new(),
            dropped: 0,
            next_id: 1,
            hist: Vec::new(),
            enabled,
            tx_count: 0,
            http_status: None,
            http_len: None,
            http_chunked: false,
        }
    }

    pub fn proto(&self) -> FrameProto {
        self.proto
    }

    /// Stopped after a gap or data it could not frame.
    pub fn stopped(&self) -> bool {
        matches!(self.mode, Mode::Stopped)
    }

    /// One datagram (UDP): one `pdu` frame.
    pub fn feed_datagram(&mut self, data: &[u8]) {
        if matches!(self.mode, Mode::Datagram) && !data.is_empty() && self.enabled.contains(&"pdu")
        {
            let id = self.next_id;
            self.next_id += 1;
            let tx_id = self.dns_tx();
            self.push_done(Frame {
                name: "pdu",
                id,
                offset: 0,
                len: data.len() as u64,
                data: data[..data.len().min(FRAME_DATA_MAX)].to_vec(),
                complete: true,
                tx_id,
            });
        }
    }

    /// Stream data starting at stream offset `offset`. Data that does not
    /// continue where the last ended (a gap) stops the framer.
    pub fn feed(&mut self, offset: u64, data: &[u8]) {
        if matches!(self.mode, Mode::Stopped | Mode::Datagram) || data.is_empty() {
            return;
        }
        if offset != self.pos {
            self.stop();
            return;
        }
        let end = offset + data.len() as u64;
        match &mut self.mode {
            Mode::Header { .. } => self.scan_headers(offset, data),
            Mode::Lines { .. } => self.scan_lines(offset, data),
            _ => {}
        }
        // Copy the chunk's part of every open frame (and, for a frame
        // that starts before the chunk, its first bytes from the recent
        // history), then complete those that end within what was seen.
        let hist_start = offset - self.hist.len() as u64;
        let hist = &self.hist;
        let before = self.open.len();
        self.open.retain_mut(|f| {
            let seen = f.offset + f.data.len() as u64;
            let f_end = f.len.map_or(u64::MAX, |l| f.offset + l);
            if seen < offset && f.data.len() < FRAME_DATA_MAX {
                if seen < hist_start {
                    // Its start is no longer known (a line longer than
                    // the history): drop it rather than show a hole.
                    return false;
                }
                let a = (seen - hist_start) as usize;
                let b = (f_end.min(offset) - hist_start) as usize;
                let b = b.min(a + (FRAME_DATA_MAX - f.data.len()));
                f.data.extend_from_slice(&hist[a..b]);
            }
            let seen = f.offset + f.data.len() as u64;
            let from = seen.max(offset);
            let to = f_end.min(end);
            let room = FRAME_DATA_MAX - f.data.len();
            if from < to && room > 0 && seen >= offset {
                let a = (from - offset) as usize;
                let b = ((to - offset) as usize).min(a + room);
                f.data.extend_from_slice(&data[a..b]);
            }
            true
        });
        self.dropped += (before - self.open.len()) as u64;
        if data.len() >= HIST_MAX {
            self.hist.clear();
            self.hist.extend_from_slice(&data[data.len() - HIST_MAX..]);
        } else {
            let excess = (self.hist.len() + data.len()).saturating_sub(HIST_MAX);
            self.hist.drain(..excess);
            self.hist.extend_from_slice(data);
        }
        self.pos = end;
        let mut i = 0;
        while i < self.open.len() {
            let f = &self.open[i];
            if f.len.is_some_and(|l| f.offset + l <= end) {
                let f = self.open.remove(i);
                self.complete(f, true);
            } else {
                i += 1;
            }
        }
    }

    /// A gap in the stream: the framer stops, open frames are dropped.
    pub fn gap(&mut self) {
        self.stop();
    }

    /// The direction ended: frames still open are completed as they are
    /// (an HTTP response read to the close is complete then).
    pub fn finish(&mut self) {
        let to_close = matches!(
            self.mode,
            Mode::Lines {
                st: Lines::HttpToClose,
                ..
            }
        );
        for mut f in std::mem::take(&mut self.open) {
            let whole = f.len.is_none() && to_close;
            if f.len.is_none() {
                f.len = Some(self.pos.saturating_sub(f.offset));
            }
            self.complete(f, whole);
        }
        self.hist = Vec::new();
        self.mode = Mode::Stopped;
    }

    /// Completed frames, oldest first.
    pub fn take_done(&mut self) -> impl Iterator<Item = Frame> + '_ {
        self.done.drain(..)
    }

    pub fn has_done(&self) -> bool {
        !self.done.is_empty()
    }

    pub fn to_server(&self) -> bool {
        self.to_server
    }

    fn stop(&mut self) {
        self.dropped += self.open.len() as u64;
        self.open.clear();
        self.hist = Vec::new();
        self.mode = Mode::Stopped;
    }

    fn complete(&mut self, f: Open, whole: bool) {
        let len = f.len.unwrap_or(f.data.len() as u64);
        let complete = whole || f.offset + len <= self.pos;
        self.push_done(Frame {
            name: f.name,
            id: f.id,
            offset: f.offset,
            len,
            data: f.data,
            complete,
            tx_id: f.tx_id,
        });
    }

    fn push_done(&mut self, f: Frame) {
        if self.done.len() >= DONE_MAX {
            self.done.pop_front();
            self.dropped += 1;
        }
        self.done.push_back(f);
    }

    fn open(&mut self, name: &'static str, offset: u64, len: Option<u64>) {
        self.open_tx(name, offset, len, None);
    }

    fn open_tx(&mut self, name: &'static str, offset: u64, len: Option<u64>, tx_id: Option<u64>) {
        if len == Some(0) || !self.enabled.contains(&name) {
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        if self.open.len() >= OPEN_MAX {
            self.dropped += 1;
            return;
        }
        self.open.push(Open {
            name,
            id,
            tx_id,
            offset,
            len,
            data: Vec::new(),
        });
    }

    /// Sets the length of the last open frame called `name` with no length.
    fn close(&mut self, name: &'static str, end: u64) {
        if let Some(f) = self
            .open
            .iter_mut()
            .rev()
            .find(|f| f.name == name && f.len.is_none())
        {
            f.len = Some(end.saturating_sub(f.offset));
        }
    }

    fn scan_headers(&mut self, offset: u64, data: &[u8]) {
        let end = offset + data.len() as u64;
        loop {
            let Mode::Header { at, step, hdr } = &mut self.mode else {
                return;
            };
            let (at, step) = (*at, *step);
            let have = at + hdr.len() as u64;
            if have >= end {
                return;
            }
            let from = (have.max(offset) - offset) as usize;
            let n = (step.size() - hdr.len()).min(data.len() - from);
            if at + (hdr.len() as u64) < offset {
                // (Cannot happen: steps only move forward.)
                self.stop();
                return;
            }
            hdr.extend_from_slice(&data[from..from + n]);
            if hdr.len() < step.size() {
                return;
            }
            let h = std::mem::take(hdr);
            match self.header_done(at, step, &h) {
                Some((next, step)) => self.mode = header(next, step),
                None => {
                    self.stop();
                    return;
                }
            }
        }
    }

    /// A complete header `h` of `step` at `at`: opens its frames and says
    /// where the next header is (`None`: not this protocol; stop).
    fn header_done(&mut self, at: u64, step: Step, h: &[u8]) -> Option<(u64, Step)> {
        match step {
            Step::TlsHdr => {
                if h[0] & 0x80 != 0 && at == 0 {
                    // SSLv2 record with a 2-byte header.
                    let len = u64::from(u16::from_be_bytes([h[0] & 0x7f, h[1]]));
                    self.open("ssl2.hdr", at, Some(2));
                    self.open("ssl2.pdu", at, Some(2 + len));
                    return Some((at + 2 + len, Step::TlsHdr));
                }
                if !(20..=24).contains(&h[0]) || h[1] != 3 {
                    return None;
                }
                let len = u64::from(u16::from_be_bytes([h[3], h[4]]));
                self.open("hdr", at, Some(5));
                self.open("pdu", at, Some(5 + len));
                self.open("data", at + 5, Some(len));
                match h[0] {
                    21 => self.open("alert", at + 5, Some(len)),
                    24 => self.open("heartbeat", at + 5, Some(len)),
                    _ => {}
                }
                Some((at + 5 + len, Step::TlsHdr))
            }
            Step::DnsLen => {
                let len = u64::from(u16::from_be_bytes([h[0], h[1]]));
                let tx = self.dns_tx();
                self.open_tx("pdu", at + 2, Some(len), tx);
                Some((at + 2 + len, Step::DnsLen))
            }
            Step::Nbss => {
                let len = (u64::from(h[1] & 1) << 16) | u64::from(u16::from_be_bytes([h[2], h[3]]));
                self.open("nbss.pdu", at, Some(4 + len));
                self.open("nbss.hdr", at, Some(4));
                self.open("nbss.data", at + 4, Some(len));
                let end = at + 4 + len;
                if h[0] == 0 && len >= 4 {
                    Some((at + 4, Step::SmbMagic { end }))
                } else {
                    Some((end, Step::Nbss))
                }
            }
            Step::SmbMagic { end } => {
                let rest = end - at;
                match h {
                    [0xff, b'S', b'M', b'B'] => {
                        self.open("smb1.pdu", at, Some(rest));
                        self.open("smb1.hdr", at, Some(rest.min(32)));
                        self.open("smb1.data", at + 32, Some(rest.saturating_sub(32)));
                        Some((end, Step::Nbss))
                    }
                    [0xfe, b'S', b'M', b'B'] if rest >= 24 => {
                        Some((at + 20, Step::Smb2Next { start: at, end }))
                    }
                    [0xfd, b'S', b'M', b'B'] => {
                        self.open("smb3.pdu", at, Some(rest));
                        self.open("smb3.hdr", at, Some(rest.min(52)));
                        self.open("smb3.data", at + 52, Some(rest.saturating_sub(52)));
                        Some((end, Step::Nbss))
                    }
                    _ => Some((end, Step::Nbss)),
                }
            }
            Step::Smb2Next { start, end } => {
                let next = u64::from(u32::from_le_bytes([h[0], h[1], h[2], h[3]]));
                let rest = end - start;
                let len = if next >= 64 && next < rest {
                    next
                } else {
                    rest
                };
                self.open("smb2.pdu", start, Some(len));
                self.open("smb2.hdr", start, Some(len.min(64)));
                self.open("smb2.data", start + 64, Some(len.saturating_sub(64)));
                if start + len < end && end - (start + len) >= 4 {
                    Some((start + len, Step::SmbMagic { end }))
                } else {
                    Some((end, Step::Nbss))
                }
            }
            Step::DceHdr => {
                if h[0] != 5 {
                    return None;
                }
                let little = h[4] & 0x10 != 0;
                let fl = [h[8], h[9]];
                let len = u64::from(if little {
                    u16::from_le_bytes(fl)
                } else {
                    u16::from_be_bytes(fl)
                });
                if len < 16 {
                    return None;
                }
                self.open("hdr", at, Some(16));
                self.open("pdu", at, Some(len));
                self.open("data", at + 16, Some(len - 16));
                Some((at + len, Step::DceHdr))
            }
        }
    }

    fn scan_lines(&mut self, offset: u64, data: &[u8]) {
        let mut i = 0usize;
        while i < data.len() {
            let Mode::Lines {
                st,
                line,
                line_start,
            } = &mut self.mode
            else {
                return;
            };
            let here = offset + i as u64;
            // Spans skipped by length.
            match *st {
                Lines::HttpBody { end } | Lines::HttpChunk { end } | Lines::SmtpBdat { end } => {
                    let skip = end.saturating_sub(here).min((data.len() - i) as u64) as usize;
                    i += skip;
                    if offset + i as u64 >= end {
                        let st0 = *st;
                        let (next, close) = match st0 {
                            Lines::HttpBody { .. } => (Lines::HttpIdle, Some(self.http_name())),
                            Lines::HttpChunk { .. } => (Lines::HttpChunkSize, None),
                            _ => (Lines::SmtpCommands, Some("data")),
                        };
                        if let Mode::Lines { st, line_start, .. } = &mut self.mode {
                            *st = next;
                            *line_start = end;
                        }
                        if let Some(n) = close {
                            self.close(n, end);
                        }
                    }
                    continue;
                }
                Lines::HttpToClose => return,
                _ => {}
            }
            if line.is_empty() {
                *line_start = here;
            }
            let rest = &data[i..];
            let (take, eol) = match rest.iter().position(|&b| b == b'\n') {
                Some(p) => (p + 1, true),
                None => (rest.len(), false),
            };
            let keep = take.min(LINE_MAX.saturating_sub(line.len()));
            line.extend_from_slice(&rest[..keep]);
            i += take;
            if !eol {
                continue;
            }
            let start = *line_start;
            let end = offset + i as u64;
            let l = std::mem::take(line);
            let st0 = *st;
            if !self.line_done(st0, start, end, &l) {
                self.stop();
                return;
            }
        }
    }

    /// DNS: a query's transaction id as Suricata's frames have it (the
    /// flow's queries counted from 1); responses get none here.
    fn dns_tx(&mut self) -> Option<u64> {
        if !self.to_server {
            return None;
        }
        self.tx_count += 1;
        Some(self.tx_count)
    }

    fn http_name(&self) -> &'static str {
        if self.to_server {
            "request"
        } else {
            "response"
        }
    }

    fn set_lines(&mut self, st: Lines, line_start: u64) {
        if let Mode::Lines {
            st: s,
            line_start: ls,
            ..
        } = &mut self.mode
        {
            *s = st;
            *ls = line_start;
        }
    }

    /// One whole line `l` (with its end of line) at [start, end). False:
    /// the data is not this protocol any more.
    fn line_done(&mut self, st: Lines, start: u64, end: u64, l: &[u8]) -> bool {
        let text = trim_eol(l);
        match st {
            Lines::HttpIdle => {
                if text.is_empty() {
                    return true; // blank lines between messages
                }
                let name = self.http_name();
                let tx = self.tx_count;
                self.tx_count += 1;
                self.open_tx(name, start, None, Some(tx));
                self.http_header_line(start, end, text, true)
            }
            Lines::HttpHeaders { start: s, first } => self.http_header_line(s, end, text, first),
            Lines::HttpChunkSize => {
                let hex = text.split(|&b| b == b';').next().unwrap_or(&[]);
                let hex = std::str::from_utf8(hex).unwrap_or("").trim();
                let Ok(n) = u64::from_str_radix(hex, 16) else {
                    return false;
                };
                if n == 0 {
                    self.set_lines(Lines::HttpTrailer, end);
                } else {
                    // The chunk's data and its CRLF.
                    self.set_lines(
                        Lines::HttpChunk {
                            end: end.saturating_add(n).saturating_add(2),
                        },
                        end,
                    );
                }
                true
            }
            Lines::HttpTrailer => {
                if text.is_empty() {
                    let n = self.http_name();
                    self.close(n, end);
                    self.set_lines(Lines::HttpIdle, end);
                }
                true
            }
            Lines::SmtpCommands if self.to_server => {
                self.open("command_line", start, Some(end - start));
                let upper: Vec<u8> = text.to_ascii_uppercase();
                if upper == b"DATA" {
                    let tx = self.tx_count;
                    self.tx_count += 1;
                    self.open_tx("data", end, None, Some(tx));
                    self.set_lines(Lines::SmtpData, end);
                } else if upper.starts_with(b"BDAT ") {
                    let n = std::str::from_utf8(&upper[5..])
                        .ok()
                        .and_then(|s| s.split_whitespace().next())
                        .and_then(|s| s.parse::<u64>().ok());
                    let Some(n) = n else { return false };
                    self.open_tx("data", end, Some(n), Some(self.tx_count));
                    if upper.ends_with(b" LAST") {
                        self.tx_count += 1;
                    }
                    self.set_lines(Lines::SmtpBdat { end: end + n }, end);
                } else if upper == b"STARTTLS" {
                    // What follows is TLS: nothing more to frame.
                    self.set_lines(Lines::HttpToClose, end);
                }
                true
            }
            Lines::SmtpCommands => {
                // A reply line starts with three digits.
                if text.len() < 3 || !text[..3].iter().all(u8::is_ascii_digit) {
                    return false;
                }
                self.open("response_line", start, Some(end - start));
                true
            }
            Lines::SmtpData => {
                if text == b"." {
                    // The data frame ends with the `.` line, as Suricata's.
                    self.close("data", end);
                    self.set_lines(Lines::SmtpCommands, end);
                }
                true
            }
            Lines::HttpBody { .. }
            | Lines::HttpChunk { .. }
            | Lines::SmtpBdat { .. }
            | Lines::HttpToClose => true,
        }
    }

    /// An HTTP/1 start or header line of the message at `start`.
    fn http_header_line(&mut self, start: u64, end: u64, text: &[u8], first: bool) -> bool {
        if first {
            let ok = if self.to_server {
                text.windows(5).any(|w| w == b"HTTP/")
            } else {
                text.starts_with(b"HTTP/")
            };
            if !ok {
                return false;
            }
            let status = (!self.to_server)
                .then(|| text.get(9..12))
                .flatten()
                .map(|s| s.to_vec());
            self.set_lines(
                Lines::HttpHeaders {
                    start,
                    first: false,
                },
                end,
            );
            self.http_status = status;
            self.http_len = None;
            self.http_chunked = false;
            return true;
        }
        if !text.is_empty() {
            if let Some((k, v)) = split_header(text) {
                if k.eq_ignore_ascii_case(b"content-length") {
                    self.http_len = std::str::from_utf8(v)
                        .ok()
                        .and_then(|s| s.trim().parse().ok());
                } else if k.eq_ignore_ascii_case(b"transfer-encoding")
                    && v.to_ascii_lowercase().windows(7).any(|w| w == b"chunked")
                {
                    self.http_chunked = true;
                }
            }
            self.set_lines(
                Lines::HttpHeaders {
                    start,
                    first: false,
                },
                end,
            );
            return true;
        }
        // End of the headers.
        let name = self.http_name();
        let no_body = matches!(
            self.http_status.as_deref(),
            Some([b'1', _, _]) | Some(b"204") | Some(b"304")
        );
        if no_body {
            self.close(name, end);
            self.set_lines(Lines::HttpIdle, end);
        } else if self.http_chunked {
            self.set_lines(Lines::HttpChunkSize, end);
        } else if let Some(n) = self.http_len {
            if n == 0 {
                self.close(name, end);
                self.set_lines(Lines::HttpIdle, end);
            } else {
                self.set_lines(
                    Lines::HttpBody {
                        end: end.saturating_add(n),
                    },
                    end,
                );
            }
        } else if self.to_server {
            self.close(name, end);
            self.set_lines(Lines::HttpIdle, end);
        } else {
            self.set_lines(Lines::HttpToClose, end);
        }
        true
    }
}

fn header(at: u64, step: Step) -> Mode {
    Mode::Header {
        at,
        step,
        hdr: Vec::with_capacity(step.size()),
    }
}

fn lines(st: Lines) -> Mode {
    Mode::Lines {
        st,
        line: Vec::new(),
        line_start: 0,
    }
}

fn trim_eol(l: &[u8]) -> &[u8] {
    let l = l.strip_suffix(b"\n").unwrap_or(l);
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn split_header(l: &[u8]) -> Option<(&[u8], &[u8])> {
    let p = l.iter().position(|&b| b == b':')?;
    Some((l[..p].trim_ascii(), &l[p + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: FrameProto) -> Vec<&'static str> {
        p.frame_names().to_vec()
    }

    /// Feeds `data` in pieces of `step` bytes; the frames as (name, offset, len, data).
    fn frames(p: FrameProto, to_server: bool, data: &[u8], step: usize) -> Vec<Frame> {
        let mut f = Framer::new(p, to_server, true, all(p));
        let mut off = 0u64;
        for c in data.chunks(step) {
            f.feed(off, c);
            off += c.len() as u64;
        }
        f.finish();
        f.take_done().collect()
    }

    fn spans(v: &[Frame]) -> Vec<(&'static str, u64, u64)> {
        let mut s: Vec<_> = v.iter().map(|f| (f.name, f.offset, f.len)).collect();
        s.sort();
        s
    }

    #[test]
    fn tls_records_in_any_pieces() {
        let mut d = vec![0x16, 3, 1, 0, 4, 1, 0, 0, 0];
        d.extend_from_slice(&[0x15, 3, 3, 0, 2, 2, 40]);
        d.extend_from_slice(&[0x18, 3, 3, 0, 1, 9]);
        for step in [1, 3, 100] {
            let v = frames(FrameProto::Tls, true, &d, step);
            assert_eq!(
                spans(&v),
                vec![
                    ("alert", 14, 2),
                    ("data", 5, 4),
                    ("data", 14, 2),
                    ("data", 21, 1),
                    ("hdr", 0, 5),
                    ("hdr", 9, 5),
                    ("hdr", 16, 5),
                    ("heartbeat", 21, 1),
                    ("pdu", 0, 9),
                    ("pdu", 9, 7),
                    ("pdu", 16, 6),
                ],
                "step {step}"
            );
            assert!(
                v.iter().all(|f| f.complete && f.data.len() as u64 == f.len),
                "{v:?}"
            );
            // Ids count in Suricata's order: hdr, pdu, data.
            let first: Vec<_> = v
                .iter()
                .filter(|f| f.offset < 9)
                .map(|f| (f.id, f.name))
                .collect();
            assert!(
                first.contains(&(1, "hdr")) && first.contains(&(2, "pdu")),
                "{first:?}"
            );
        }
        // Not TLS: the framer stops.
        let v = frames(FrameProto::Tls, true, b"GET / HTTP/1.1\r\n\r\n", 4);
        assert!(v.is_empty());
    }

    #[test]
    fn only_enabled_types_are_made_and_counted() {
        let d = [0x16, 3, 1, 0, 1, 7, 0x16, 3, 1, 0, 1, 8];
        let mut f = Framer::new(FrameProto::Tls, true, true, vec!["data"]);
        f.feed(0, &d);
        let v: Vec<_> = f.take_done().map(|f| (f.name, f.id, f.data)).collect();
        assert_eq!(v, vec![("data", 1, vec![7]), ("data", 2, vec![8])]);
    }

    #[test]
    fn dns_over_tcp_leaves_out_the_length() {
        let d = [0, 3, 1, 2, 3, 0, 2, 4, 5];
        let v = frames(FrameProto::Dns, true, &d, 2);
        assert_eq!(spans(&v), vec![("pdu", 2, 3), ("pdu", 7, 2)]);
        let mut u = Framer::new(FrameProto::Dns, true, false, vec!["pdu"]);
        u.feed_datagram(&[1, 2, 3]);
        assert_eq!(u.take_done().map(|f| f.len).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn smb_nbss_and_compounded_smb2() {
        let mut m1 = vec![0xfe, b'S', b'M', b'B'];
        m1.resize(64, 0);
        m1[20] = 72; // NextCommand
        m1.resize(72, 1);
        let mut m2 = vec![0xfe, b'S', b'M', b'B'];
        m2.resize(70, 2);
        let mut d = vec![0, 0, 0, (m1.len() + m2.len()) as u8];
        d.extend_from_slice(&m1);
        d.extend_from_slice(&m2);
        let mut s1 = vec![0, 0, 0, 40, 0xff, b'S', b'M', b'B'];
        s1.resize(44, 3);
        d.extend_from_slice(&s1);
        let v = frames(FrameProto::Smb, true, &d, 7);
        let n = 4 + 72 + 70;
        assert_eq!(
            spans(&v),
            vec![
                ("nbss.data", 4, 142),
                ("nbss.data", n + 4, 40),
                ("nbss.hdr", 0, 4),
                ("nbss.hdr", n, 4),
                ("nbss.pdu", 0, n),
                ("nbss.pdu", n, 44),
                ("smb1.data", n + 36, 8),
                ("smb1.hdr", n + 4, 32),
                ("smb1.pdu", n + 4, 40),
                ("smb2.data", 68, 8),
                ("smb2.data", 140, 6),
                ("smb2.hdr", 4, 64),
                ("smb2.hdr", 76, 64),
                ("smb2.pdu", 4, 72),
                ("smb2.pdu", 76, 70),
            ]
        );
    }

    #[test]
    fn dcerpc_fragments_either_endianness() {
        let mut le = vec![5, 0, 0, 3, 0x10, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0];
        le.extend_from_slice(&[9; 4]);
        let mut be = vec![5, 0, 0, 3, 0x00, 0, 0, 0, 0, 18, 0, 0, 0, 0, 0, 1];
        be.extend_from_slice(&[8; 2]);
        let d = [le, be].concat();
        let v = frames(FrameProto::Dcerpc, true, &d, 5);
        assert_eq!(
            spans(&v),
            vec![
                ("data", 16, 4),
                ("data", 36, 2),
                ("hdr", 0, 16),
                ("hdr", 20, 16),
                ("pdu", 0, 20),
                ("pdu", 20, 18)
            ]
        );
        // A fragment length under the header's size is not DCERPC.
        let bad = [5, 0, 0, 3, 0x10, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0];
        assert!(frames(FrameProto::Dcerpc, true, &bad, 16).is_empty());
    }

    #[test]
    fn http1_lengths_chunks_and_close() {
        let req = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n\r\n";
        let v = frames(FrameProto::Http1, true, req, 5);
        assert_eq!(spans(&v), vec![("request", 0, 42), ("request", 42, 19)]);
        assert_eq!(
            v.iter().map(|f| f.tx_id).collect::<Vec<_>>(),
            vec![Some(0), Some(1)]
        );
        let resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nHTTP/1.1 304 X\r\n\r\nHTTP/1.0 200 OK\r\n\r\nto the end";
        let v = frames(FrameProto::Http1, false, resp, 4);
        let a = 47 + 8 + 5;
        assert_eq!(
            spans(&v),
            vec![
                ("response", 0, a),
                ("response", a, 18),
                ("response", a + 18, 29)
            ]
        );
        assert!(v.iter().all(|f| f.complete));
    }

    #[test]
    fn smtp_lines_data_and_bdat() {
        let c = b"EHLO x\r\nDATA\r\nhi\r\n.\r\nBDAT 3 LAST\r\nxyzQUIT\r\n";
        let v = frames(FrameProto::Smtp, true, c, 3);
        assert_eq!(
            spans(&v),
            vec![
                ("command_line", 0, 8),
                ("command_line", 8, 6),
                ("command_line", 21, 13),
                ("command_line", 37, 6),
                ("data", 14, 7),
                ("data", 34, 3),
            ]
        );
        let s = b"220 hi\r\n250-a\r\n250 b\r\n";
        let v = frames(FrameProto::Smtp, false, s, 2);
        assert_eq!(
            spans(&v),
            vec![
                ("response_line", 0, 8),
                ("response_line", 8, 7),
                ("response_line", 15, 7)
            ]
        );
    }

    #[test]
    fn gaps_stop_the_framer_and_bounds_hold() {
        let mut f = Framer::new(FrameProto::Tls, true, true, all(FrameProto::Tls));
        f.feed(0, &[0x16, 3, 1]);
        f.feed(10, &[0, 1]);
        assert!(f.stopped());
        assert_eq!(f.take_done().count(), 0);
        // A huge record keeps FRAME_DATA_MAX bytes and its whole length.
        let mut f = Framer::new(FrameProto::Tls, true, true, vec!["data"]);
        let body = vec![0x41u8; 70_000];
        let mut d = vec![0x17, 3, 3];
        let len = 65_535u16;
        d.extend_from_slice(&len.to_be_bytes());
        d.extend_from_slice(&body[..65_535]);
        for (i, c) in d.chunks(1000).enumerate() {
            f.feed((i * 1000) as u64, c);
        }
        let v: Vec<_> = f.take_done().collect();
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].len, v[0].data.len()),
            (65_535, FRAME_DATA_MAX.min(65_535))
        );
        // Many completed frames: the queue keeps the newest DONE_MAX.
        let mut f = Framer::new(FrameProto::Tls, true, true, vec!["hdr"]);
        let rec = [0x17, 3, 3, 0, 0];
        for i in 0..(DONE_MAX + 10) {
            f.feed((i * 5) as u64, &rec);
        }
        assert_eq!(f.take_done().count(), DONE_MAX);
        assert_eq!(f.dropped, 10);
    }
}
