//! TLS (and SSLv3/SSLv2 hellos) up to the end of the handshake.
//!
//! The record layer is reassembled across segments (record headers and
//! handshake messages may be split anywhere); handshake messages spanning
//! records are reassembled up to [`AppLayerConfig::tls_max_handshake`].
//! Parsed: ClientHello and ServerHello (versions including the
//! `supported_versions` extension, random, cipher suites, extensions, SNI,
//! ALPN, groups, point formats, signature algorithms), Certificate (X.509
//! through `x509-parser`), key exchange messages (for `ssl_state`).
//! JA3/JA3S strings and MD5 hashes, and JA4, are computed from the hellos.
//!
//! After ChangeCipherSpec in a direction (or, for TLS 1.3, once the
//! ServerHello selected it) that direction is encrypted: records are
//! skipped by length and never buffered. A flow has one TLS transaction.
//!
//! Not done: SSLv2 beyond recognising the client hello, QUIC, TLS 1.3
//! encrypted extensions, heartbeat overflow checks.

use md5::{Digest as _, Md5};
use serde_json::Value;
use sha1::Sha1;
use sha2::Sha256;

use crate::events::{AppLayerEvent, TlsEvent};
use crate::state::{TxCommon, TxId, TxProgress};
use crate::{AppLayerConfig, BufferId, Direction, Timestamp};

/// `ssl_state` flags as Suricata's keyword names them.
pub mod ssl_state {
    pub const CLIENT_HELLO: u32 = 1 << 0;
    pub const SERVER_HELLO: u32 = 1 << 1;
    pub const CLIENT_KEYX: u32 = 1 << 2;
    pub const SERVER_KEYX: u32 = 1 << 3;
    /// A message type Suricata does not track (`unknown`).
    pub const UNKNOWN: u32 = 1 << 4;
}

/// Protocol versions as numbers on the wire (0x0303 is TLS 1.2).
pub const SSL_V2: u16 = 0x0200;
pub const SSL_V3: u16 = 0x0300;
pub const TLS_10: u16 = 0x0301;
pub const TLS_11: u16 = 0x0302;
pub const TLS_12: u16 = 0x0303;
pub const TLS_13: u16 = 0x0304;

/// Suricata's EVE `version` strings.
pub fn version_string(v: u16) -> String {
    match v {
        SSL_V2 => "SSLv2".into(),
        SSL_V3 => "SSLv3".into(),
        TLS_10 => "TLSv1".into(),
        TLS_11 => "TLS 1.1".into(),
        TLS_12 => "TLS 1.2".into(),
        TLS_13 => "TLS 1.3".into(),
        v if v >> 8 == 0x7f => format!("TLS 1.3 draft-{}", v & 0xff),
        _ => "UNDETERMINED".into(),
    }
}

/// The `ssl_version` keyword's names.
pub fn ssl_version_name(v: u16) -> Option<&'static str> {
    Some(match v {
        SSL_V2 => "sslv2",
        SSL_V3 => "sslv3",
        TLS_10 => "tls1.0",
        TLS_11 => "tls1.1",
        TLS_12 => "tls1.2",
        TLS_13 => "tls1.3",
        _ => return None,
    })
}

fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

/// A parsed ClientHello or ServerHello.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hello {
    pub legacy_version: u16,
    pub random: Vec<u8>,
    pub session_id: Vec<u8>,
    pub ciphers: Vec<u16>,
    pub compression: Vec<u8>,
    /// Extension types in order.
    pub extensions: Vec<u16>,
    pub sni: Option<Vec<u8>>,
    pub groups: Vec<u16>,
    pub point_formats: Vec<u8>,
    pub sig_algs: Vec<u16>,
    pub alpns: Vec<Vec<u8>>,
    /// `supported_versions`: the client's list, or the server's choice.
    pub supported_versions: Vec<u16>,
}

/// The server (or client) certificate's fields, formatted as Suricata
/// formats them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertInfo {
    /// `C=US, O=..., CN=...`, raw attribute bytes (NUL bytes kept).
    pub subject: Vec<u8>,
    pub issuer: Vec<u8>,
    /// Upper-case hex bytes joined by `:`.
    pub serial: String,
    /// SHA-1 of the DER, lower-case hex joined by `:`.
    pub fingerprint: String,
    /// Seconds since the epoch.
    pub not_before: i64,
    pub not_after: i64,
    pub sans: Vec<String>,
}

/// The TLS session: the flow's only transaction.
#[derive(Debug, Default)]
pub struct TlsTx {
    pub(crate) common: TxCommon,
    pub client_hello: Option<Hello>,
    pub server_hello: Option<Hello>,
    /// DER certificates sent by the server, leaf first.
    pub server_certs: Vec<Vec<u8>>,
    pub client_certs: Vec<Vec<u8>>,
    pub server_cert: Option<CertInfo>,
    pub client_cert: Option<CertInfo>,
    /// Record or hello version seen from the client (legacy version).
    pub client_version: u16,
    /// The version the server chose (supported_versions when present).
    pub server_version: u16,
    /// `ssl_state` flags seen so far.
    pub state_flags: u32,
    pub ja3_string: Option<Vec<u8>>,
    pub ja3_hash: Option<Vec<u8>>,
    pub ja3s_string: Option<Vec<u8>>,
    pub ja3s_hash: Option<Vec<u8>>,
    pub ja4: Option<Vec<u8>>,
    /// A ServerHelloDone was seen.
    pub server_hello_done: bool,
    encrypted: [bool; 2],
}

impl TlsTx {
    pub fn id(&self) -> TxId {
        self.common.id
    }

    /// Whether a direction has switched to encrypted records.
    pub fn encrypted(&self, dir: Direction) -> bool {
        self.encrypted[dir.index()]
    }

    /// The version `tls.version` / `ssl_version` compare for a direction.
    pub fn version(&self, dir: Direction) -> u16 {
        match dir {
            Direction::ToServer => self.client_version,
            Direction::ToClient => self.server_version,
        }
    }

    /// The negotiated version: the server's choice when known.
    pub fn negotiated_version(&self) -> u16 {
        if self.server_version != 0 {
            self.server_version
        } else {
            self.client_version
        }
    }

    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.encrypted[0],
            response_complete: self.encrypted[1],
        }
    }

    /// The progress of a direction as `app-layer-state` numbers Suricata's
    /// TLS states: client `client_in_progress` (0), `client_hello_done`
    /// (1), `client_cert_done` (2), `client_finished` (4); server
    /// `server_in_progress` (0), `server_hello` (1), `server_cert_done`
    /// (2), `server_hello_done` (3), `server_finished` (5). A direction
    /// is finished once it switched to encrypted records (its
    /// ChangeCipherSpec, or TLS 1.3's encrypted handshake), which is where
    /// Vigil completes it; the `*_handshake_done` states (3 and 4) are
    /// not told apart from finished.
    pub fn state_progress(&self, dir: Direction) -> u8 {
        match dir {
            Direction::ToServer => {
                if self.encrypted[0] {
                    4
                } else if !self.client_certs.is_empty() {
                    2
                } else if self.client_hello.is_some() {
                    1
                } else {
                    0
                }
            }
            Direction::ToClient => {
                if self.encrypted[1] {
                    5
                } else if self.server_hello_done {
                    3
                } else if !self.server_certs.is_empty() {
                    2
                } else if self.server_hello.is_some() {
                    1
                } else {
                    0
                }
            }
        }
    }

    fn cert(&self, dir: Direction) -> Option<&CertInfo> {
        match dir {
            Direction::ToServer => self.client_cert.as_ref(),
            Direction::ToClient => self.server_cert.as_ref(),
        }
    }

    pub fn buffer(&self, id: BufferId, dir: Direction) -> Option<&[u8]> {
        use BufferId::*;
        let hello = match dir {
            Direction::ToServer => self.client_hello.as_ref(),
            Direction::ToClient => self.server_hello.as_ref(),
        };
        match id {
            TlsSni => self.client_hello.as_ref()?.sni.as_deref(),
            TlsCertSubject => Some(self.cert(dir)?.subject.as_slice()),
            TlsCertIssuer => Some(self.cert(dir)?.issuer.as_slice()),
            TlsCertSerial => Some(self.cert(dir)?.serial.as_bytes()),
            TlsCertFingerprint => Some(self.cert(dir)?.fingerprint.as_bytes()),
            TlsRandom => hello.map(|h| h.random.as_slice()),
            TlsRandomTime => hello.and_then(|h| h.random.get(..4)),
            TlsRandomBytes => hello.and_then(|h| h.random.get(4..)),
            Ja3Hash => self.ja3_hash.as_deref(),
            Ja3String => self.ja3_string.as_deref(),
            Ja3sHash => self.ja3s_hash.as_deref(),
            Ja3sString => self.ja3s_string.as_deref(),
            Ja4Hash => self.ja4.as_deref(),
            TlsCerts => self.buffers(id, dir).into_iter().next(),
            _ => None,
        }
    }

    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        if id == BufferId::TlsCerts {
            let certs = match dir {
                Direction::ToServer => &self.client_certs,
                Direction::ToClient => &self.server_certs,
            };
            return certs.iter().map(|c| c.as_slice()).collect();
        }
        self.buffer(id, dir).into_iter().collect()
    }

    /// The EVE `tls` object with Suricata's field names.
    pub fn eve(&self) -> Value {
        crate::jsonw::tree(&crate::jsonw::object(|w| self.eve_write(w)))
    }

    /// The members of the EVE `tls` object, written to `w` in key order.
    pub fn eve_write(&self, w: &mut crate::jsonw::JsonText) {
        let cert = self.server_cert.as_ref();
        if let Some(c) = cert {
            w.field_str("fingerprint", &c.fingerprint);
            w.field_lossy("issuerdn", &c.issuer);
        }
        if let (Some(h), Some(st)) = (&self.ja3_hash, &self.ja3_string) {
            w.field_obj("ja3", |w| {
                w.field_lossy("hash", h).field_lossy("string", st);
            });
        }
        if let (Some(h), Some(st)) = (&self.ja3s_hash, &self.ja3s_string) {
            w.field_obj("ja3s", |w| {
                w.field_lossy("hash", h).field_lossy("string", st);
            });
        }
        if let Some(j) = &self.ja4 {
            w.field_lossy("ja4", j);
        }
        if let Some(c) = cert {
            w.field_str("notafter", &format_time(c.not_after));
            w.field_str("notbefore", &format_time(c.not_before));
            w.field_str("serial", &c.serial);
        }
        if let Some(sni) = self.client_hello.as_ref().and_then(|h| h.sni.as_deref()) {
            w.field_lossy("sni", sni);
        }
        if let Some(c) = cert {
            w.field_lossy("subject", &c.subject);
        }
        w.field_str("version", &version_string(self.negotiated_version()));
    }
}

/// `YYYY-MM-DDTHH:MM:SS` in UTC, as Suricata logs certificate validity.
pub fn format_time(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        y,
        m,
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8]) -> Self {
        Cursor { b, pos: 0 }
    }
    fn u8(&mut self) -> Option<u8> {
        let v = *self.b.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }
    fn u16(&mut self) -> Option<u16> {
        let s = self.b.get(self.pos..self.pos + 2)?;
        self.pos += 2;
        Some(u16::from_be_bytes([s[0], s[1]]))
    }
    fn u24(&mut self) -> Option<usize> {
        let s = self.b.get(self.pos..self.pos + 3)?;
        self.pos += 3;
        Some(usize::from(s[0]) << 16 | usize::from(s[1]) << 8 | usize::from(s[2]))
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = usize::from(self.u8()?);
        self.take(n)
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }
    fn done(&self) -> bool {
        self.pos >= self.b.len()
    }
}

fn u16_list(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect()
}

/// Parses a ClientHello (`client == true`) or ServerHello body. Returns
/// the hello and any events about it.
pub fn parse_hello(body: &[u8], client: bool) -> Option<(Hello, Vec<TlsEvent>)> {
    let mut c = Cursor::new(body);
    let mut h = Hello {
        legacy_version: c.u16()?,
        random: c.take(32)?.to_vec(),
        session_id: c.vec8()?.to_vec(),
        ..Default::default()
    };
    let mut events = Vec::new();
    if client {
        h.ciphers = u16_list(c.vec16()?);
        h.compression = c.vec8()?.to_vec();
    } else {
        h.ciphers = vec![c.u16()?];
        h.compression = vec![c.u8()?];
    }
    if c.done() {
        return Some((h, events));
    }
    let exts = c.vec16()?;
    let mut e = Cursor::new(exts);
    let mut sni_seen = false;
    while !e.done() {
        let (Some(ty), Some(data)) = (e.u16(), e.vec16()) else {
            events.push(TlsEvent::InvalidHandshakeMessage);
            break;
        };
        h.extensions.push(ty);
        let mut d = Cursor::new(data);
        match ty {
            0 if client => {
                if sni_seen {
                    events.push(TlsEvent::MultipleSniExtensions);
                    continue;
                }
                sni_seen = true;
                let Some(list) = d.vec16() else {
                    events.push(TlsEvent::InvalidSniLength);
                    continue;
                };
                let mut l = Cursor::new(list);
                match l.u8() {
                    Some(0) => match l.vec16() {
                        Some(name) => h.sni = Some(name.to_vec()),
                        None => events.push(TlsEvent::InvalidSniLength),
                    },
                    Some(_) => events.push(TlsEvent::InvalidSniType),
                    None => events.push(TlsEvent::InvalidSniLength),
                }
            }
            10 => h.groups = d.vec16().map(u16_list).unwrap_or_default(),
            11 => h.point_formats = d.vec8().map(|v| v.to_vec()).unwrap_or_default(),
            13 => h.sig_algs = d.vec16().map(u16_list).unwrap_or_default(),
            16 => {
                if let Some(list) = d.vec16() {
                    let mut l = Cursor::new(list);
                    while let Some(p) = l.vec8() {
                        h.alpns.push(p.to_vec());
                    }
                }
            }
            43 => {
                h.supported_versions = if client {
                    d.vec8().map(u16_list).unwrap_or_default()
                } else {
                    d.u16().into_iter().collect()
                };
            }
            _ => {}
        }
    }
    Some((h, events))
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends the values in decimal, separated by `-` (JA3's lists).
fn push_dec_list(out: &mut String, v: impl Iterator<Item = u16>) {
    let mut num = itoa::Buffer::new();
    for (i, x) in v.enumerate() {
        if i > 0 {
            out.push('-');
        }
        out.push_str(num.format(x));
    }
}

/// Appends the values as 4 lowercase hex digits each, separated by `,`
/// (JA4's lists).
fn push_hex4_list(out: &mut String, v: &[u16]) {
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for shift in [12, 8, 4, 0] {
            out.push(HEX[usize::from(x >> shift) & 15] as char);
        }
    }
}

/// The JA3 string of a ClientHello (GREASE values left out).
pub fn ja3_string(h: &Hello) -> String {
    let mut s = String::with_capacity(
        8 + 6 * (h.ciphers.len() + h.extensions.len() + h.groups.len()) + 4 * h.point_formats.len(),
    );
    s.push_str(itoa::Buffer::new().format(h.legacy_version));
    s.push(',');
    push_dec_list(&mut s, h.ciphers.iter().copied().filter(|&v| !is_grease(v)));
    s.push(',');
    push_dec_list(
        &mut s,
        h.extensions.iter().copied().filter(|&v| !is_grease(v)),
    );
    s.push(',');
    push_dec_list(&mut s, h.groups.iter().copied().filter(|&v| !is_grease(v)));
    s.push(',');
    push_dec_list(&mut s, h.point_formats.iter().map(|&v| u16::from(v)));
    s
}

/// The JA3S string of a ServerHello.
pub fn ja3s_string(h: &Hello) -> String {
    let mut s = String::with_capacity(8 + 6 * (h.ciphers.len() + h.extensions.len()));
    s.push_str(itoa::Buffer::new().format(h.legacy_version));
    s.push(',');
    push_dec_list(&mut s, h.ciphers.iter().copied());
    s.push(',');
    push_dec_list(
        &mut s,
        h.extensions.iter().copied().filter(|&v| !is_grease(v)),
    );
    s
}

pub fn md5_hex(s: &[u8]) -> String {
    crate::hex_lower(&Md5::digest(s))
}

/// Appends the first 12 hex digits of the SHA-256 of `s`.
fn push_sha256_12(out: &mut String, s: &[u8]) {
    crate::push_hex_lower(out, &Sha256::digest(s)[..6]);
}

/// The JA4 fingerprint of a ClientHello over TCP.
pub fn ja4(h: &Hello) -> String {
    ja4_for(h, 't')
}

/// JA4's version field: the highest version the hello offers (its
/// `supported_versions` without GREASE, else its legacy version).
fn ja4_version(h: &Hello) -> &'static str {
    let version = h
        .supported_versions
        .iter()
        .copied()
        .filter(|&v| !is_grease(v))
        .max()
        .unwrap_or(h.legacy_version);
    match version {
        TLS_13 => "13",
        TLS_12 => "12",
        TLS_11 => "11",
        TLS_10 => "10",
        SSL_V3 => "s3",
        SSL_V2 => "s2",
        0x0100 => "s1",
        _ => "00",
    }
}

/// The JA4 fingerprint of a ClientHello, `transport` its first letter
/// (`t` TCP, `q` QUIC). The cipher and extension lists are sorted as
/// numbers: their 4-digit hex forms, which JA4 sorts, sort the same.
pub fn ja4_for(h: &Hello, transport: char) -> String {
    let ver = ja4_version(h);
    let sni = if h.extensions.contains(&0) { 'd' } else { 'i' };
    let mut ciphers: Vec<u16> = h
        .ciphers
        .iter()
        .copied()
        .filter(|&v| !is_grease(v))
        .collect();
    let n_exts = h.extensions.iter().filter(|&&v| !is_grease(v)).count();
    let mut out = String::with_capacity(36);
    out.push(transport);
    out.push_str(ver);
    out.push(sni);
    for n in [ciphers.len().min(99), n_exts.min(99)] {
        out.push(char::from(b'0' + (n / 10) as u8));
        out.push(char::from(b'0' + (n % 10) as u8));
    }
    match h.alpns.first().filter(|a| !a.is_empty()) {
        None => out.push_str("00"),
        Some(a) => {
            let (f, l) = (a[0], a[a.len() - 1]);
            if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() {
                out.push(f as char);
                out.push(l as char);
            } else {
                // The first and last digit of the value in hex.
                out.push(HEX[usize::from(f >> 4)] as char);
                out.push(HEX[usize::from(l & 15)] as char);
            }
        }
    }
    out.push('_');
    let mut list =
        String::with_capacity(5 * ciphers.len().max(h.extensions.len() + h.sig_algs.len()));
    if ciphers.is_empty() {
        out.push_str("000000000000");
    } else {
        ciphers.sort_unstable();
        push_hex4_list(&mut list, &ciphers);
        push_sha256_12(&mut out, list.as_bytes());
    }
    out.push('_');
    let mut exts = ciphers;
    exts.clear();
    exts.extend(
        h.extensions
            .iter()
            .copied()
            .filter(|&e| !is_grease(e) && e != 0 && e != 16),
    );
    if exts.is_empty() {
        out.push_str("000000000000");
    } else {
        exts.sort_unstable();
        list.clear();
        push_hex4_list(&mut list, &exts);
        if !h.sig_algs.is_empty() {
            list.push('_');
            push_hex4_list(&mut list, &h.sig_algs);
        }
        push_sha256_12(&mut out, list.as_bytes());
    }
    out
}

fn x509_name(name: &x509_parser::x509::X509Name<'_>) -> Vec<u8> {
    let reg = x509_parser::objects::oid_registry();
    let mut out = Vec::new();
    for (i, rdn) in name.iter_rdn().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        for (j, attr) in rdn.iter().enumerate() {
            if j > 0 {
                out.extend_from_slice(b" + ");
            }
            match x509_parser::objects::oid2abbrev(attr.attr_type(), reg) {
                Ok(sn) => out.extend_from_slice(sn.as_bytes()),
                Err(_) => out.extend_from_slice(attr.attr_type().to_id_string().as_bytes()),
            }
            out.push(b'=');
            let v = attr.attr_value();
            let tag = v.tag();
            if tag == x509_parser::der_parser::asn1_rs::Tag::BmpString {
                let units: Vec<u16> = v
                    .data
                    .chunks_exact(2)
                    .map(|c| u16::from_be_bytes([c[0], c[1]]))
                    .collect();
                out.extend_from_slice(String::from_utf16_lossy(&units).as_bytes());
            } else {
                out.extend_from_slice(v.data);
            }
        }
    }
    out
}

fn colon_hex(bytes: &[u8], upper: bool) -> String {
    let digits = if upper { b"0123456789ABCDEF" } else { HEX };
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, &b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(':');
        }
        s.push(digits[usize::from(b >> 4)] as char);
        s.push(digits[usize::from(b & 15)] as char);
    }
    s
}

/// Parses one DER certificate into the fields Suricata exposes.
pub fn parse_cert(der: &[u8]) -> Option<CertInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let tbs = &cert.tbs_certificate;
    let mut sans = Vec::new();
    if let Ok(Some(ext)) = tbs.subject_alternative_name() {
        for n in &ext.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(d) = n {
                sans.push((*d).to_string());
            }
        }
    }
    Some(CertInfo {
        subject: x509_name(tbs.subject()),
        issuer: x509_name(tbs.issuer()),
        serial: colon_hex(tbs.raw_serial(), true),
        fingerprint: colon_hex(&Sha1::digest(der), false),
        not_before: tbs.validity().not_before.timestamp(),
        not_after: tbs.validity().not_after.timestamp(),
        sans,
    })
}

/// The event for a certificate that does not decode, as Suricata maps
/// its X.509 decoder's errors: truncated DER is an invalid length, a DER
/// encoding error invalid DER, anything else an invalid certificate.
fn cert_error_event(der: &[u8]) -> TlsEvent {
    use x509_parser::error::X509Error;
    use x509_parser::nom::Err;
    match x509_parser::parse_x509_certificate(der) {
        Err(Err::Incomplete(_)) => TlsEvent::CertificateInvalidLength,
        Err(Err::Error(X509Error::Der(e)) | Err::Failure(X509Error::Der(e))) => match e {
            x509_parser::der_parser::error::BerError::InvalidLength => {
                TlsEvent::CertificateInvalidLength
            }
            _ => TlsEvent::CertificateInvalidDer,
        },
        Err(_) => TlsEvent::InvalidCertificate,
        Ok(_) => TlsEvent::CertificateInvalidDer,
    }
}

/// Handshake message types the parser handles (Suricata's
/// `SupportedHandshakeType`); another is an invalid handshake message.
fn supported_handshake_type(t: u8) -> bool {
    matches!(
        t,
        0 | 1 | 2 | 4 | 11 | 12 | 13 | 14 | 15 | 16 | 20 | 21 | 22
    )
}

const MAX_RECORD: usize = 16_384 + 2_048;

#[derive(Default)]
struct TlsDir {
    /// Record header bytes gathered so far.
    hdr: Vec<u8>,
    /// Payload bytes left in the current record.
    remaining: usize,
    rec_type: u8,
    /// Handshake bytes of the message being reassembled.
    hs: Vec<u8>,
    /// Handshake bytes to drop (a message over the cap).
    hs_skip: usize,
    /// Records have stopped making sense: ignore the rest.
    broken: bool,
    /// ... because the data was not TLS (an invalid record), not because
    /// of a gap: Suricata's parser error.
    error: bool,
    seen_record: bool,
    /// The record being read is SSLv2.
    sslv2: bool,
}

/// Per-flow TLS state.
pub struct TlsState {
    cfg: AppLayerConfig,
    tx: TlsTx,
    started: bool,
    dirs: [TlsDir; 2],
    /// An application-data record was seen (not 0-RTT early data before
    /// the ServerHello): the handshake is over.
    app_data: bool,
    /// A record of the direction completed since the last
    /// [`TlsState::take_raw_trigger`].
    raw_trigger: [bool; 2],
}

impl TlsState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        TlsState {
            cfg: cfg.clone(),
            tx: TlsTx::default(),
            started: false,
            dirs: [TlsDir::default(), TlsDir::default()],
            app_data: false,
            raw_trigger: [false; 2],
        }
    }

    /// Whether the handshake is over for payload inspection: an
    /// application-data record was seen in either direction (Suricata's
    /// `NO_INSPECTION_PAYLOAD` under `encryption-handling: default`).
    /// The handshake's last bytes (a client Certificate in the segment
    /// of its ChangeCipherSpec and Finished) are still inspected; the
    /// encrypted data after them is not.
    pub fn payload_done(&self) -> bool {
        self.app_data
    }

    /// Whether a record of `dir` completed since the last call (Suricata
    /// triggers raw stream inspection per complete record), so that the
    /// handshake's bytes are inspected before encrypted data stops it.
    pub fn take_raw_trigger(&mut self, dir: Direction) -> bool {
        std::mem::take(&mut self.raw_trigger[dir.index()])
    }

    /// The session transaction, once data was seen.
    pub fn tx(&self) -> Option<&TlsTx> {
        self.started.then_some(&self.tx)
    }

    pub(crate) fn tx_ref(&self, id: TxId) -> Option<&TlsTx> {
        self.tx().filter(|t| t.common.id == id)
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut TlsTx> {
        (self.started && self.tx.common.id == id).then_some(&mut self.tx)
    }

    /// The parser met data that is not TLS (an invalid record) and
    /// stopped: Suricata's app-layer parser error.
    pub fn errored(&self) -> bool {
        self.dirs.iter().any(|d| d.error)
    }

    pub fn on_gap(&mut self, dir: Direction) {
        // Record boundaries are lost: the rest of this direction is opaque.
        self.dirs[dir.index()].broken = true;
    }

    fn ev(ev: &mut Vec<AppLayerEvent>, e: TlsEvent) {
        ev.push(AppLayerEvent::Tls(e, Some(0)));
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        mut data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if !self.started {
            self.started = true;
            self.tx.common = TxCommon::new(0, ts);
        }
        let d = dir.index();
        while !data.is_empty() {
            if self.dirs[d].broken {
                return;
            }
            if self.dirs[d].remaining == 0 {
                let p = &mut self.dirs[d];
                // SSLv2: two length bytes, then message type and version.
                let need = 5;
                let n = (need - p.hdr.len().min(need)).min(data.len());
                p.hdr.extend_from_slice(&data[..n]);
                data = &data[n..];
                if p.hdr.len() < need {
                    continue;
                }
                let hdr = std::mem::take(&mut p.hdr);
                self.record_header(dir, &hdr, ev);
                continue;
            }
            let n = self.dirs[d].remaining.min(data.len());
            let chunk = &data[..n];
            data = &data[n..];
            self.dirs[d].remaining -= n;
            self.record_data(dir, chunk, ev);
            if self.dirs[d].remaining == 0 {
                self.raw_trigger[d] = true;
            }
        }
    }

    fn record_header(&mut self, dir: Direction, hdr: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        let first = !self.dirs[d].seen_record;
        self.dirs[d].seen_record = true;
        if first && hdr[0] & 0x80 != 0 {
            // SSLv2 record header (2-byte form) of a client or server hello.
            let len = usize::from(hdr[0] & 0x7f) << 8 | usize::from(hdr[1]);
            let hello = match dir {
                Direction::ToServer => hdr[2] == 1,
                Direction::ToClient => hdr[2] == 4,
            };
            if len < 3 || !hello {
                Self::ev(ev, TlsEvent::InvalidSslv2Header);
                self.dirs[d].broken = true;
                self.dirs[d].error = true;
                return;
            }
            match dir {
                Direction::ToServer => {
                    self.tx.state_flags |= ssl_state::CLIENT_HELLO;
                    self.tx.client_version = u16::from_be_bytes([hdr[3], hdr[4]]);
                }
                Direction::ToClient => {
                    self.tx.state_flags |= ssl_state::SERVER_HELLO;
                    self.tx.server_version = SSL_V2;
                }
            }
            self.dirs[d].sslv2 = true;
            self.dirs[d].rec_type = 0;
            self.dirs[d].remaining = len - 3;
            return;
        }
        let ty = hdr[0];
        let version = u16::from_be_bytes([hdr[1], hdr[2]]);
        let len = usize::from(u16::from_be_bytes([hdr[3], hdr[4]]));
        if !(20..=24).contains(&ty) {
            Self::ev(ev, TlsEvent::InvalidRecordType);
            self.dirs[d].broken = true;
            self.dirs[d].error = true;
            return;
        }
        if hdr[1] != 3 && version != 0x0100 {
            Self::ev(ev, TlsEvent::InvalidRecordVersion);
            self.dirs[d].broken = true;
            self.dirs[d].error = true;
            return;
        }
        if len > MAX_RECORD {
            Self::ev(ev, TlsEvent::InvalidRecordLength);
            self.dirs[d].broken = true;
            self.dirs[d].error = true;
            return;
        }
        if dir == Direction::ToServer && self.tx.client_version == 0 {
            self.tx.client_version = version;
        }
        if dir == Direction::ToClient && self.tx.server_version == 0 && ty == 22 {
            self.tx.server_version = version;
        }
        let p = &mut self.dirs[d];
        p.sslv2 = false;
        p.rec_type = ty;
        p.remaining = len;
        match ty {
            20 => {
                // ChangeCipherSpec: what follows in this direction is
                // encrypted.
                self.tx.encrypted[d] = true;
                p.hs.clear();
                p.hs_skip = 0;
            }
            24 => Self::ev(ev, TlsEvent::HeartbeatMessage),
            23 => {
                // Application data before a ChangeCipherSpec is TLS 1.3's
                // encrypted handshake.
                self.tx.encrypted[d] = true;
                // 0-RTT data from the client before the server answered
                // (no ServerHello, no server record at all) does not end
                // the handshake.
                if dir == Direction::ToClient
                    || self.tx.state_flags & ssl_state::SERVER_HELLO != 0
                    || self.dirs[Direction::ToClient.index()].seen_record
                {
                    self.app_data = true;
                }
            }
            _ => {}
        }
    }

    fn record_data(&mut self, dir: Direction, chunk: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let d = dir.index();
        if self.dirs[d].sslv2 {
            // The rest of an SSLv2 hello is not parsed.
            return;
        }
        if self.dirs[d].rec_type == 21 && !self.tx.encrypted[d] {
            // A fatal plaintext alert.
            if chunk.first() == Some(&2) {
                Self::ev(ev, TlsEvent::ErrorMessageEncountered);
            }
            return;
        }
        if self.dirs[d].rec_type != 22 || self.tx.encrypted[d] {
            return;
        }
        let mut chunk = chunk;
        let p = &mut self.dirs[d];
        if p.hs_skip > 0 {
            let n = p.hs_skip.min(chunk.len());
            p.hs_skip -= n;
            chunk = &chunk[n..];
        }
        p.hs.extend_from_slice(chunk);
        loop {
            let p = &mut self.dirs[d];
            if p.hs.len() < 4 || self.tx.encrypted[d] {
                if self.tx.encrypted[d] {
                    p.hs.clear();
                }
                return;
            }
            let len = usize::from(p.hs[1]) << 16 | usize::from(p.hs[2]) << 8 | usize::from(p.hs[3]);
            if !supported_handshake_type(p.hs[0]) {
                // Skipped at its header, whatever its length.
                Self::ev(ev, TlsEvent::InvalidHandshakeMessage);
                let have = p.hs.len() - 4;
                let n = have.min(len);
                p.hs.drain(..4 + n);
                p.hs_skip = len - n;
                continue;
            }
            if len > self.cfg.tls_max_handshake {
                Self::ev(ev, TlsEvent::HandshakeInvalidLength);
                let have = p.hs.len() - 4;
                p.hs_skip = len - have.min(len);
                p.hs.clear();
                return;
            }
            if p.hs.len() < 4 + len {
                return;
            }
            let msg: Vec<u8> = p.hs.drain(..4 + len).collect();
            self.handshake(dir, msg[0], &msg[4..], ev);
        }
    }

    fn handshake(&mut self, dir: Direction, ty: u8, body: &[u8], ev: &mut Vec<AppLayerEvent>) {
        match (ty, dir) {
            (1, Direction::ToServer) => match parse_hello(body, true) {
                Some((h, events)) => {
                    for e in events {
                        Self::ev(ev, e);
                    }
                    self.tx.state_flags |= ssl_state::CLIENT_HELLO;
                    self.tx.client_version = h.legacy_version;
                    let s = ja3_string(&h);
                    self.tx.ja3_hash = Some(md5_hex(s.as_bytes()).into_bytes());
                    self.tx.ja3_string = Some(s.into_bytes());
                    self.tx.ja4 = Some(ja4(&h).into_bytes());
                    self.tx.client_hello = Some(h);
                }
                None => Self::ev(ev, TlsEvent::InvalidHandshakeMessage),
            },
            (2, Direction::ToClient) => match parse_hello(body, false) {
                Some((h, events)) => {
                    for e in events {
                        Self::ev(ev, e);
                    }
                    self.tx.state_flags |= ssl_state::SERVER_HELLO;
                    self.tx.server_version = h
                        .supported_versions
                        .first()
                        .copied()
                        .unwrap_or(h.legacy_version);
                    let s = ja3s_string(&h);
                    self.tx.ja3s_hash = Some(md5_hex(s.as_bytes()).into_bytes());
                    self.tx.ja3s_string = Some(s.into_bytes());
                    let tls13 =
                        self.tx.server_version == TLS_13 || self.tx.server_version >> 8 == 0x7f;
                    self.tx.server_hello = Some(h);
                    if tls13 {
                        // Everything after the ServerHello is encrypted.
                        self.tx.encrypted[1] = true;
                    }
                }
                None => Self::ev(ev, TlsEvent::InvalidHandshakeMessage),
            },
            (11, _) => self.certificates(dir, body, ev),
            (12, Direction::ToClient) => self.tx.state_flags |= ssl_state::SERVER_KEYX,
            (16, Direction::ToServer) => self.tx.state_flags |= ssl_state::CLIENT_KEYX,
            (14, Direction::ToClient) => self.tx.server_hello_done = true,
            (0, _) | (4, _) | (13, _) | (14, _) | (15, _) | (20, _) | (22, _) => {}
            _ => self.tx.state_flags |= ssl_state::UNKNOWN,
        }
    }

    fn certificates(&mut self, dir: Direction, body: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let mut c = Cursor::new(body);
        let Some(total) = c.u24() else {
            Self::ev(ev, TlsEvent::CertificateInvalidLength);
            return;
        };
        let Some(list) = c.take(total) else {
            Self::ev(ev, TlsEvent::CertificateInvalidLength);
            return;
        };
        let mut l = Cursor::new(list);
        let mut certs = Vec::new();
        while !l.done() {
            let Some(n) = l.u24() else {
                Self::ev(ev, TlsEvent::CertificateInvalidLength);
                break;
            };
            let Some(der) = l.take(n) else {
                Self::ev(ev, TlsEvent::CertificateInvalidLength);
                break;
            };
            certs.push(der.to_vec());
        }
        let info = match certs.first() {
            Some(der) => {
                let info = parse_cert(der);
                if info.is_none() {
                    Self::ev(ev, cert_error_event(der));
                }
                info
            }
            None => None,
        };
        match dir {
            Direction::ToClient => {
                self.tx.server_certs = certs;
                self.tx.server_cert = info;
            }
            Direction::ToServer => {
                self.tx.client_certs = certs;
                self.tx.client_cert = info;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_format() {
        assert_eq!(format_time(0), "1970-01-01T00:00:00");
        assert_eq!(format_time(1_460_592_000), "2016-04-14T00:00:00");
        assert_eq!(format_time(951_782_400), "2000-02-29T00:00:00");
    }

    #[test]
    fn grease() {
        assert!(is_grease(0x0a0a));
        assert!(is_grease(0xfafa));
        assert!(!is_grease(0x0a1a));
        assert!(!is_grease(0x1301));
    }
}

/// The fingerprints written without `format!` against their first
/// versions, which built every value as a `String`, kept here as the
/// specification: the same output for any hello.
#[cfg(test)]
mod fingerprint_oracle {
    use super::*;
    use proptest::prelude::*;

    fn old_join_u16(v: impl Iterator<Item = u16>) -> String {
        v.map(|x| x.to_string()).collect::<Vec<_>>().join("-")
    }

    fn old_ja3_string(h: &Hello) -> String {
        format!(
            "{},{},{},{},{}",
            h.legacy_version,
            old_join_u16(h.ciphers.iter().copied().filter(|&v| !is_grease(v))),
            old_join_u16(h.extensions.iter().copied().filter(|&v| !is_grease(v))),
            old_join_u16(h.groups.iter().copied().filter(|&v| !is_grease(v))),
            old_join_u16(h.point_formats.iter().map(|&v| u16::from(v))),
        )
    }

    fn old_ja3s_string(h: &Hello) -> String {
        format!(
            "{},{},{}",
            h.legacy_version,
            old_join_u16(h.ciphers.iter().copied()),
            old_join_u16(h.extensions.iter().copied().filter(|&v| !is_grease(v))),
        )
    }

    fn old_sha256_12(s: &str) -> String {
        let mut h = crate::hex_lower(&Sha256::digest(s.as_bytes()));
        h.truncate(12);
        h
    }

    fn old_ja4_for(h: &Hello, transport: char) -> String {
        let ver = ja4_version(h);
        let sni = if h.extensions.contains(&0) { 'd' } else { 'i' };
        let ciphers: Vec<u16> = h
            .ciphers
            .iter()
            .copied()
            .filter(|&v| !is_grease(v))
            .collect();
        let exts: Vec<u16> = h
            .extensions
            .iter()
            .copied()
            .filter(|&v| !is_grease(v))
            .collect();
        let alpn = match h.alpns.first().filter(|a| !a.is_empty()) {
            None => "00".to_string(),
            Some(a) => {
                let (f, l) = (a[0], a[a.len() - 1]);
                if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() {
                    format!("{}{}", f as char, l as char)
                } else {
                    let hex = crate::hex_lower(a);
                    let hb = hex.as_bytes();
                    format!("{}{}", hb[0] as char, hb[hb.len() - 1] as char)
                }
            }
        };
        let a = format!(
            "{}{}{}{:02}{:02}{}",
            transport,
            ver,
            sni,
            ciphers.len().min(99),
            exts.len().min(99),
            alpn
        );
        let mut sc: Vec<String> = ciphers.iter().map(|c| format!("{c:04x}")).collect();
        sc.sort();
        let b = if sc.is_empty() {
            "000000000000".to_string()
        } else {
            old_sha256_12(&sc.join(","))
        };
        let mut se: Vec<String> = exts
            .iter()
            .filter(|&&e| e != 0 && e != 16)
            .map(|e| format!("{e:04x}"))
            .collect();
        se.sort();
        let c = if se.is_empty() {
            "000000000000".to_string()
        } else {
            let mut s = se.join(",");
            if !h.sig_algs.is_empty() {
                s.push('_');
                s.push_str(
                    &h.sig_algs
                        .iter()
                        .map(|v| format!("{v:04x}"))
                        .collect::<Vec<_>>()
                        .join(","),
                );
            }
            old_sha256_12(&s)
        };
        format!("{a}_{b}_{c}")
    }

    fn old_colon_hex(bytes: &[u8], upper: bool) -> String {
        bytes
            .iter()
            .map(|b| {
                if upper {
                    format!("{b:02X}")
                } else {
                    format!("{b:02x}")
                }
            })
            .collect::<Vec<_>>()
            .join(":")
    }

    fn u16s() -> impl Strategy<Value = Vec<u16>> {
        // GREASE values, SNI (0), ALPN (16) and the rest.
        prop::collection::vec(
            prop_oneof![
                Just(0x0a0au16),
                Just(0xfafa),
                Just(0),
                Just(16),
                any::<u16>()
            ],
            0..24,
        )
    }

    fn hellos() -> impl Strategy<Value = Hello> {
        (
            (any::<u16>(), u16s(), u16s(), u16s()),
            (
                prop::collection::vec(any::<u8>(), 0..5),
                u16s(),
                prop::collection::vec(prop::collection::vec(any::<u8>(), 0..4), 0..3),
                prop::collection::vec(
                    prop_oneof![
                        Just(0x0304u16),
                        Just(0x0303),
                        Just(0x0300),
                        Just(0x0002),
                        Just(0x0100),
                        Just(0x1a1a),
                        any::<u16>()
                    ],
                    0..4,
                ),
            ),
        )
            .prop_map(
                |(
                    (legacy_version, ciphers, extensions, groups),
                    (point_formats, sig_algs, alpns, supported_versions),
                )| Hello {
                    legacy_version,
                    ciphers,
                    extensions,
                    groups,
                    point_formats,
                    sig_algs,
                    alpns,
                    supported_versions,
                    ..Hello::default()
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn fingerprints_match_their_first_versions(h in hellos()) {
            prop_assert_eq!(ja3_string(&h), old_ja3_string(&h));
            prop_assert_eq!(ja3s_string(&h), old_ja3s_string(&h));
            prop_assert_eq!(ja4_for(&h, 't'), old_ja4_for(&h, 't'));
            prop_assert_eq!(ja4_for(&h, 'q'), old_ja4_for(&h, 'q'));
        }

        #[test]
        fn colon_hex_matches_its_first_version(b in prop::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(colon_hex(&b, true), old_colon_hex(&b, true));
            prop_assert_eq!(colon_hex(&b, false), old_colon_hex(&b, false));
        }
    }

    #[test]
    fn ja4_of_a_known_hello() {
        // TLS 1.3 in supported_versions, SNI, ALPN h2, two GREASE values.
        let h = Hello {
            legacy_version: 0x0303,
            ciphers: vec![0x0a0a, 0x1301, 0x1302, 0xc02b],
            extensions: vec![0xfafa, 0, 16, 43, 13, 10],
            sig_algs: vec![0x0403, 0x0804],
            alpns: vec![b"h2".to_vec()],
            supported_versions: vec![0x1a1a, 0x0304, 0x0303],
            ..Hello::default()
        };
        let a = "t13d0305h2";
        let b = &crate::hex_lower(&Sha256::digest(b"1301,1302,c02b"))[..12];
        let c = &crate::hex_lower(&Sha256::digest(b"000a,000d,002b_0403,0804"))[..12];
        assert_eq!(ja4(&h), format!("{a}_{b}_{c}"));
        assert_eq!(ja3_string(&h), "771,4865-4866-49195,0-16-43-13-10,,");
    }
}
