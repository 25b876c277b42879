//! Incremental MIME decoding of a mail's DATA (RFC 2045-2047), as
//! Suricata's MIME decoder does it for SMTP: fed line by line (a long line
//! in pieces), it keeps the message headers (unfolded), follows nested
//! `multipart/*` boundaries, decodes each leaf entity's content
//! (base64, quoted-printable, or as it is) into a [`Part`] (Suricata
//! makes each one a file: `file.data`), takes attachment names from
//! `Content-Disposition: ...; filename=` or `Content-Type: ...; name=`,
//! and extracts the URLs of text parts (`email.url`).
//!
//! Everything is capped: header names and values, headers per entity,
//! nesting depth, boundary length, parts per message, bytes per part,
//! URLs. What a cap drops raises one of Suricata's `MIME_*` events.

use md5::{Digest as _, Md5};

use crate::events::SmtpEvent;
use crate::http::uri::hexval;
use crate::transforms::{base64_decode_into, Base64Mode};

/// Longest header name kept (Suricata's `MAX_HEADER_NAME`).
pub const MAX_HEADER_NAME: usize = 75;
/// Longest header value kept (Suricata's `MAX_HEADER_VALUE`).
pub const MAX_HEADER_VALUE: usize = 2000;
/// Most headers kept per entity.
pub const MAX_HEADERS: usize = 64;
/// Longest line before `MIME_LONG_LINE` (RFC 5322's 998).
pub const MAX_LINE_LEN: usize = 998;
/// Longest base64 line before `MIME_LONG_ENC_LINE` (RFC 2045's 76).
pub const MAX_ENC_LINE_LEN: usize = 76;
/// Longest boundary kept (RFC 2046 allows 70; Suricata's limit is 254).
pub const MAX_BOUNDARY: usize = 254;
/// Deepest multipart nesting followed.
pub const MAX_DEPTH: usize = 10;
/// Most parts (files) kept per message.
pub const MAX_PARTS: usize = 32;
/// Decoded bytes kept per part, and per message (all parts together);
/// the rest is dropped.
pub const MAX_PART_DATA: usize = 1024 * 1024;
pub const MAX_MESSAGE_DATA: usize = 4 * 1024 * 1024;
/// Most URLs kept per message, and their longest length.
pub const MAX_URLS: usize = 64;
pub const MAX_URL_LEN: usize = 2048;
/// Longest file name kept.
pub const MAX_FILENAME: usize = 1024;

/// How an entity's content is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cte {
    Plain,
    Base64,
    Qp,
}

/// One decoded leaf entity: a file to Suricata.
#[derive(Clone, Debug, Default)]
pub struct Part {
    pub data: Vec<u8>,
    pub filename: Option<Vec<u8>>,
    /// `Content-Disposition: attachment`, or a file name.
    pub attachment: bool,
    /// A `text/*` part (or one without a type): URLs are taken from it.
    pub text: bool,
    /// Bytes were dropped past [`MAX_PART_DATA`].
    pub truncated: bool,
}

/// Where the decoder is within the current entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Headers,
    /// The content of the current leaf part (`part` is its index).
    Body,
    /// Preamble or epilogue of a multipart, or a part past the caps:
    /// lines are only checked for boundaries.
    Skip,
}

/// The decoder of one message.
#[derive(Debug)]
pub struct Mime {
    phase: Phase,
    /// Headers of the entity being read (unfolded), and the one being
    /// read (folded lines are appended to it).
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// The message's own headers, once read.
    pub top: Vec<(Vec<u8>, Vec<u8>)>,
    top_done: bool,
    /// The open multiparts' boundaries, outermost first.
    boundaries: Vec<Vec<u8>>,
    pub parts: Vec<Part>,
    part: Option<usize>,
    cte: Cte,
    /// The line ending of the last content line, written before the next
    /// one: the one before a boundary belongs to the boundary.
    eol: Vec<u8>,
    /// Base64 characters not yet decoded (fewer than 4), and whether the
    /// padding ended the encoded text.
    b64: Vec<u8>,
    b64_done: bool,
    pub urls: Vec<Vec<u8>>,
    /// Length of the current line so far (pieces of a long line).
    line_len: usize,
    long_line: bool,
    long_header: bool,
    /// The last line of the message was read (`finish`).
    pub done: bool,
    /// The body (content after the top headers) was reached.
    pub body_started: bool,
    /// MD5 of the body as sent (every line after the message's headers,
    /// with its ending), and its lower-case hex once the message ended
    /// (`email.body_md5`).
    md5: Option<Md5>,
    pub body_md5: Option<Vec<u8>>,
    /// Decoded bytes kept in all parts.
    kept: usize,
}

impl Default for Mime {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `s` starts with `p`, ASCII case ignored.
pub(crate) fn ieq_prefix(s: &[u8], p: &[u8]) -> bool {
    s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p)
}

/// `s` without leading and trailing spaces, tabs, CR and LF.
pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

fn capped(s: &[u8], max: usize) -> Vec<u8> {
    s[..s.len().min(max)].to_vec()
}

/// The value of parameter `name` of a header value (`type/sub; a=b;
/// name="x"`): quotes removed; `name*=charset''value` accepted as is.
pub fn header_param(value: &[u8], name: &[u8]) -> Option<Vec<u8>> {
    for p in value.split(|&c| c == b';').skip(1) {
        let p = trim(p);
        let Some(eq) = p.iter().position(|&c| c == b'=') else {
            continue;
        };
        let key = trim(&p[..eq]);
        let key = key.strip_suffix(b"*").unwrap_or(key);
        if !key.eq_ignore_ascii_case(name) {
            continue;
        }
        let v = trim(&p[eq + 1..]);
        let v = match v {
            [b'"', inner @ ..] => match inner.iter().position(|&c| c == b'"') {
                Some(end) => &inner[..end],
                None => inner,
            },
            _ => {
                // RFC 2231: charset'language'value.
                match v.iter().rposition(|&c| c == b'\'') {
                    Some(i) if p.get(eq.wrapping_sub(1)) == Some(&b'*') => &v[i + 1..],
                    _ => v,
                }
            }
        };
        return Some(v.to_vec());
    }
    None
}

impl Mime {
    pub fn new() -> Mime {
        Mime {
            phase: Phase::Headers,
            headers: Vec::new(),
            top: Vec::new(),
            top_done: false,
            boundaries: Vec::new(),
            parts: Vec::new(),
            part: None,
            cte: Cte::Plain,
            eol: Vec::new(),
            b64: Vec::new(),
            b64_done: false,
            urls: Vec::new(),
            line_len: 0,
            long_line: false,
            long_header: false,
            done: false,
            body_started: false,
            md5: None,
            body_md5: None,
            kept: 0,
        }
    }

    /// The first header of the message named `name`.
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.top
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| &v[..])
    }

    /// Every header of the message named `name`.
    pub fn headers_named<'a>(&'a self, name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.top
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| &v[..])
    }

    /// Feeds a piece of a line: `text` without its line ending, `eol` the
    /// ending (empty while the line goes on), `cont` when the piece
    /// continues a line already partly fed.
    pub fn feed(&mut self, text: &[u8], eol: &[u8], cont: bool, ev: &mut Vec<SmtpEvent>) {
        if self.done {
            return;
        }
        if !cont {
            self.line_len = 0;
            self.long_line = false;
        }
        self.line_len = self.line_len.saturating_add(text.len());
        if self.line_len > MAX_LINE_LEN && !self.long_line {
            self.long_line = true;
            ev.push(SmtpEvent::MimeLongLine);
        }
        if let Some(h) = self.md5.as_mut() {
            h.update(text);
            h.update(eol);
        }
        match self.phase {
            Phase::Headers => self.header_line(text, eol, cont, ev),
            Phase::Body | Phase::Skip => {
                if !cont && self.boundary_line(text, ev) {
                    return;
                }
                if self.phase == Phase::Body {
                    if !eol.is_empty()
                        && self.cte == Cte::Base64
                        && self.line_len > MAX_ENC_LINE_LEN
                    {
                        ev.push(SmtpEvent::MimeLongEncLine);
                    }
                    self.content(text, eol, ev);
                }
            }
        }
    }

    /// The message ends: the open part is closed.
    pub fn finish(&mut self, ev: &mut Vec<SmtpEvent>) {
        if self.done {
            return;
        }
        if self.phase == Phase::Headers {
            self.end_headers(ev);
        }
        self.close_part(ev);
        self.top_done = true;
        self.done = true;
        if let Some(h) = self.md5.take() {
            let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
            self.body_md5 = Some(hex.into_bytes());
        }
    }

    fn header_line(&mut self, text: &[u8], eol: &[u8], cont: bool, ev: &mut Vec<SmtpEvent>) {
        if cont || matches!(text.first(), Some(b' ' | b'\t')) && !self.headers.is_empty() {
            // A folded line (or the rest of a long one): unfolded into the
            // header being read.
            if let Some((_, v)) = self.headers.last_mut() {
                let room = MAX_HEADER_VALUE.saturating_sub(v.len());
                if text.len() > room && !self.long_header {
                    self.long_header = true;
                    ev.push(SmtpEvent::MimeLongHeaderValue);
                }
                v.extend_from_slice(&text[..text.len().min(room)]);
            }
            return;
        }
        if text.is_empty() && !eol.is_empty() {
            self.end_headers(ev);
            return;
        }
        self.long_header = false;
        match text.iter().position(|&c| c == b':') {
            Some(colon) => {
                let name = trim(&text[..colon]);
                if name.len() > MAX_HEADER_NAME {
                    ev.push(SmtpEvent::MimeLongHeaderName);
                }
                let value = trim(&text[colon + 1..]);
                if value.len() > MAX_HEADER_VALUE {
                    self.long_header = true;
                    ev.push(SmtpEvent::MimeLongHeaderValue);
                }
                if self.headers.len() < MAX_HEADERS {
                    self.headers.push((
                        capped(name, MAX_HEADER_NAME),
                        capped(value, MAX_HEADER_VALUE),
                    ));
                }
            }
            None if self.headers.is_empty() => {
                // No header at all: the content starts here.
                self.end_headers(ev);
                if let Some(h) = self.md5.as_mut() {
                    h.update(text);
                    h.update(eol);
                }
                if self.phase == Phase::Body {
                    self.content(text, eol, ev);
                }
            }
            None => ev.push(SmtpEvent::MimeParseFailed),
        }
    }

    /// The blank line after an entity's headers: a multipart opens its
    /// boundary, a leaf entity becomes a part.
    fn end_headers(&mut self, ev: &mut Vec<SmtpEvent>) {
        let headers = std::mem::take(&mut self.headers);
        let get = |name: &[u8]| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| &v[..])
        };
        let ctype = get(b"content-type").unwrap_or(b"");
        let disp = get(b"content-disposition").unwrap_or(b"");
        self.cte = match get(b"content-transfer-encoding").map(trim) {
            Some(e) if e.eq_ignore_ascii_case(b"base64") => Cte::Base64,
            Some(e) if e.eq_ignore_ascii_case(b"quoted-printable") => Cte::Qp,
            _ => Cte::Plain,
        };
        self.b64.clear();
        self.b64_done = false;
        self.eol.clear();
        let multipart = ieq_prefix(trim(ctype), b"multipart/");
        let boundary = if multipart {
            header_param(ctype, b"boundary")
        } else {
            None
        };
        let filename = header_param(disp, b"filename").or_else(|| header_param(ctype, b"name"));
        let text = trim(ctype).is_empty() || ieq_prefix(trim(ctype), b"text/");
        if !self.top_done {
            self.top_done = true;
            self.body_started = true;
            self.top = headers.clone();
            self.md5 = Some(Md5::new());
        }
        match boundary {
            Some(b) => {
                if b.len() > MAX_BOUNDARY {
                    ev.push(SmtpEvent::MimeLongBoundary);
                }
                if self.boundaries.len() < MAX_DEPTH && !b.is_empty() {
                    let mut full = b"--".to_vec();
                    full.extend_from_slice(&b[..b.len().min(MAX_BOUNDARY)]);
                    self.boundaries.push(full);
                } else {
                    ev.push(SmtpEvent::MimeParseFailed);
                }
                self.phase = Phase::Skip;
            }
            None if multipart => {
                // A multipart without a boundary: its content as is.
                ev.push(SmtpEvent::MimeMalformedMsg);
                self.open_part(None, false, text, ev);
            }
            None => {
                let attachment = ieq_prefix(trim(disp), b"attachment") || filename.is_some();
                if let Some(f) = &filename {
                    if f.len() > MAX_FILENAME {
                        ev.push(SmtpEvent::MimeLongFilename);
                    }
                }
                let filename = filename.map(|f| capped(&f, MAX_FILENAME));
                self.open_part(filename, attachment, text, ev);
            }
        }
    }

    fn open_part(
        &mut self,
        filename: Option<Vec<u8>>,
        attachment: bool,
        text: bool,
        ev: &mut Vec<SmtpEvent>,
    ) {
        if self.parts.len() >= MAX_PARTS {
            ev.push(SmtpEvent::MimeParseFailed);
            self.phase = Phase::Skip;
            self.part = None;
            return;
        }
        self.parts.push(Part {
            filename,
            attachment,
            text,
            ..Default::default()
        });
        self.part = Some(self.parts.len() - 1);
        self.phase = Phase::Body;
    }

    /// Closes the current part: the base64 left is decoded, URLs of a
    /// text part are taken.
    fn close_part(&mut self, ev: &mut Vec<SmtpEvent>) {
        let Some(i) = self.part.take() else {
            return;
        };
        if self.cte == Cte::Base64 && !self.b64.is_empty() {
            if self.b64.len() % 4 == 1 {
                ev.push(SmtpEvent::MimeInvalidBase64);
            }
            let rest = std::mem::take(&mut self.b64);
            self.append_decoded(&rest, true);
        }
        self.eol.clear();
        if let Some(p) = self.parts.get(i) {
            if p.text {
                let urls = extract_urls(&p.data);
                for u in urls {
                    if self.urls.len() >= MAX_URLS {
                        break;
                    }
                    if !self.urls.contains(&u) {
                        self.urls.push(u);
                    }
                }
            }
        }
    }

    /// A line at the start of a body line that is one of the open
    /// boundaries: the current part ends, a new entity starts (`--b`) or
    /// the multipart ends (`--b--`).
    fn boundary_line(&mut self, text: &[u8], ev: &mut Vec<SmtpEvent>) -> bool {
        if self.boundaries.is_empty() || !text.starts_with(b"--") {
            return false;
        }
        let t = trim(text);
        for depth in (0..self.boundaries.len()).rev() {
            let b = &self.boundaries[depth];
            if !t.starts_with(b) {
                continue;
            }
            let rest = &t[b.len()..];
            let end = match rest {
                b"" => false,
                b"--" => true,
                _ => continue,
            };
            self.close_part(ev);
            if end {
                self.boundaries.truncate(depth);
                self.phase = Phase::Skip;
            } else {
                self.boundaries.truncate(depth + 1);
                self.phase = Phase::Headers;
                self.headers.clear();
            }
            return true;
        }
        false
    }

    /// Decodes a content line into the current part.
    fn content(&mut self, text: &[u8], eol: &[u8], ev: &mut Vec<SmtpEvent>) {
        match self.cte {
            Cte::Base64 => {
                if self.b64_done {
                    return;
                }
                let mut bad = false;
                for &c in text {
                    match c {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' => self.b64.push(c),
                        b'=' => {
                            self.b64_done = true;
                            break;
                        }
                        b' ' | b'\t' | b'\r' => {}
                        _ => bad = true,
                    }
                }
                if bad {
                    ev.push(SmtpEvent::MimeInvalidBase64);
                }
                let whole = if self.b64_done {
                    self.b64.len()
                } else {
                    self.b64.len() / 4 * 4
                };
                if whole > 0 {
                    let chunk: Vec<u8> = self.b64.drain(..whole).collect();
                    self.append_decoded(&chunk, true);
                }
            }
            Cte::Qp => {
                let mut out = Vec::with_capacity(text.len());
                let mut soft = false;
                let mut i = 0;
                while i < text.len() {
                    let c = text[i];
                    if c == b'=' {
                        if i + 1 == text.len() {
                            soft = true;
                            break;
                        }
                        match (
                            text.get(i + 1).and_then(|&c| hexval(c)),
                            text.get(i + 2).and_then(|&c| hexval(c)),
                        ) {
                            (Some(h), Some(l)) => {
                                out.push(h << 4 | l);
                                i += 3;
                                continue;
                            }
                            _ => {
                                ev.push(SmtpEvent::MimeInvalidQp);
                                out.push(c);
                            }
                        }
                    } else {
                        out.push(c);
                    }
                    i += 1;
                }
                self.append_text(&out, if soft { b"" } else { eol });
            }
            Cte::Plain => self.append_text(text, eol),
        }
    }

    /// Appends content with the line ending held back from the previous
    /// line, then holds this one's.
    fn append_text(&mut self, text: &[u8], eol: &[u8]) {
        let pending = std::mem::take(&mut self.eol);
        self.append_decoded(&pending, false);
        self.append_decoded(text, false);
        self.eol = eol.to_vec();
    }

    /// Adds bytes to the current part (base64 text when `b64`), within
    /// [`MAX_PART_DATA`] and [`MAX_MESSAGE_DATA`].
    fn append_decoded(&mut self, bytes: &[u8], b64: bool) {
        let Some(p) = self.part.and_then(|i| self.parts.get_mut(i)) else {
            return;
        };
        if bytes.is_empty() || p.truncated {
            return;
        }
        let before = p.data.len();
        if b64 {
            base64_decode_into(bytes, Base64Mode::Rfc2045, &mut p.data);
        } else {
            p.data.extend_from_slice(bytes);
        }
        let room = MAX_MESSAGE_DATA.saturating_sub(self.kept);
        let cap = MAX_PART_DATA.min(before.saturating_add(room));
        if p.data.len() > cap {
            p.data.truncate(cap);
            p.truncated = true;
        }
        self.kept = self
            .kept
            .saturating_add(p.data.len().saturating_sub(before));
    }
}

/// The `http://` and `https://` URLs of a text (Suricata's default
/// `extract-urls-schemes`), up to whitespace, a quote or an angle
/// bracket; at most [`MAX_URLS`], each at most [`MAX_URL_LEN`] bytes.
pub fn extract_urls(text: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut i = 0;
    while i < text.len() && out.len() < MAX_URLS {
        let rest = &text[i..];
        let skip = if ieq_prefix(rest, b"http://") {
            7
        } else if ieq_prefix(rest, b"https://") {
            8
        } else {
            i += 1;
            continue;
        };
        let end = rest[skip..]
            .iter()
            .position(|&c| {
                c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'`')
            })
            .map_or(rest.len(), |e| e + skip);
        if end > skip {
            let u = capped(&rest[..end], MAX_URL_LEN);
            if !out.contains(&u) {
                out.push(u);
            }
        }
        i += end.max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds a message line by line (CRLF endings).
    fn decode(msg: &[u8]) -> (Mime, Vec<SmtpEvent>) {
        let mut m = Mime::new();
        let mut ev = Vec::new();
        for line in msg.split_inclusive(|&c| c == b'\n') {
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            m.feed(text, &line[text.len()..], false, &mut ev);
        }
        m.finish(&mut ev);
        (m, ev)
    }

    #[test]
    fn single_part_with_folded_headers() {
        let (m, ev) = decode(
            b"From: a@b.c\r\nSubject: hello\r\n  world\r\nTo: x@y.z, w@v.u\r\n\r\nline 1\r\nline 2\r\n",
        );
        assert!(ev.is_empty(), "{ev:?}");
        assert_eq!(m.header(b"subject"), Some(&b"hello  world"[..]));
        assert_eq!(m.header(b"TO"), Some(&b"x@y.z, w@v.u"[..]));
        assert_eq!(m.parts.len(), 1);
        assert_eq!(m.parts[0].data, b"line 1\r\nline 2");
        assert!(!m.parts[0].attachment);
        // md5("line 1\r\nline 2\r\n")
        let want: String = Md5::digest(b"line 1\r\nline 2\r\n")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(m.body_md5.as_deref(), Some(want.as_bytes()));
    }

    #[test]
    fn nested_multipart_base64_and_qp() {
        let msg = b"Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n\
preamble\r\n\
--outer\r\n\
Content-Type: multipart/alternative; boundary=inner\r\n\r\n\
--inner\r\n\
Content-Type: text/plain\r\n\
Content-Transfer-Encoding: quoted-printable\r\n\r\n\
caf=C3=A9 see http://example.com/x?a=3D1 soft=\r\n\
break\r\n\
--inner--\r\n\
--outer\r\n\
Content-Type: application/octet-stream; name=\"n.bin\"\r\n\
Content-Disposition: attachment; filename=\"evil.exe\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\n\
aGVs\r\n\
bG8gd29y\r\n\
bGQ=\r\n\
--outer--\r\n\
epilogue\r\n";
        let (m, ev) = decode(msg);
        assert!(ev.is_empty(), "{ev:?}");
        assert_eq!(m.parts.len(), 2);
        assert_eq!(
            m.parts[0].data,
            "café see http://example.com/x?a=1 softbreak".as_bytes()
        );
        assert_eq!(m.parts[1].data, b"hello world");
        assert_eq!(m.parts[1].filename.as_deref(), Some(&b"evil.exe"[..]));
        assert!(m.parts[1].attachment);
        assert_eq!(m.urls, vec![b"http://example.com/x?a=1".to_vec()]);
    }

    #[test]
    fn long_pieces_and_caps() {
        let mut m = Mime::new();
        let mut ev = Vec::new();
        m.feed(b"Subject: x", b"\r\n", false, &mut ev);
        m.feed(b"", b"\r\n", false, &mut ev);
        let piece = vec![b'a'; 600];
        m.feed(&piece, b"", false, &mut ev);
        m.feed(&piece, b"\r\n", true, &mut ev);
        m.finish(&mut ev);
        assert_eq!(ev, vec![SmtpEvent::MimeLongLine]);
        assert_eq!(m.parts[0].data.len(), 1200);
        // A header value past the cap is truncated.
        let mut m = Mime::new();
        let mut ev = Vec::new();
        let long = [b"X: ".to_vec(), vec![b'v'; MAX_HEADER_VALUE + 10]].concat();
        m.feed(&long, b"\r\n", false, &mut ev);
        m.finish(&mut ev);
        assert!(ev.contains(&SmtpEvent::MimeLongHeaderValue));
        assert_eq!(m.header(b"x").map(<[u8]>::len), Some(MAX_HEADER_VALUE));
    }

    #[test]
    fn parts_and_message_are_capped() {
        let mut m = Mime::new();
        let mut ev = Vec::new();
        m.feed(
            b"Content-Type: multipart/mixed; boundary=b",
            b"\r\n",
            false,
            &mut ev,
        );
        m.feed(b"", b"\r\n", false, &mut ev);
        let line = vec![b'x'; 4096];
        for _ in 0..6 {
            m.feed(b"--b", b"\r\n", false, &mut ev);
            m.feed(b"", b"\r\n", false, &mut ev);
            for _ in 0..300 {
                m.feed(&line, b"\r\n", false, &mut ev);
            }
        }
        m.finish(&mut ev);
        let sizes: Vec<usize> = m.parts.iter().map(|p| p.data.len()).collect();
        assert_eq!(sizes.len(), 6);
        assert!(sizes[..4].iter().all(|&n| n == MAX_PART_DATA), "{sizes:?}");
        assert_eq!(sizes[4..], [0, 0]);
        assert!(m.parts.iter().all(|p| p.truncated));
    }

    #[test]
    fn invalid_encodings_raise_events() {
        let (m, ev) = decode(b"Content-Transfer-Encoding: base64\r\n\r\naGVs!bG8=\r\n");
        assert!(ev.contains(&SmtpEvent::MimeInvalidBase64));
        assert_eq!(m.parts[0].data, b"hello");
        let (m, ev) = decode(b"Content-Transfer-Encoding: quoted-printable\r\n\r\na=ZZb\r\n");
        assert!(ev.contains(&SmtpEvent::MimeInvalidQp));
        assert_eq!(m.parts[0].data, b"a=ZZb");
    }

    #[test]
    fn params_and_urls() {
        assert_eq!(
            header_param(b"attachment; FILENAME = \"a b.txt\"", b"filename"),
            Some(b"a b.txt".to_vec())
        );
        assert_eq!(
            header_param(b"attachment; filename*=utf-8''x.pdf", b"filename"),
            Some(b"x.pdf".to_vec())
        );
        assert_eq!(header_param(b"text/plain", b"name"), None);
        assert_eq!(
            extract_urls(b"<a href=\"HTTPS://e.com/p\">x</a> http:// http://b.c"),
            vec![b"HTTPS://e.com/p".to_vec(), b"http://b.c".to_vec()]
        );
    }
}
