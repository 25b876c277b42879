//! RDP connection setup, as Suricata's `rust/src/rdp`: the X.224
//! Connection Request (cookie, negotiation request flags) and Confirm
//! (negotiation response or failure), the MCS Connect Initial with its
//! GCC client data (core data and network channels) and the MCS Connect
//! Response, one transaction each, logged as `rdp` records with
//! `event_type` `initial_request`, `initial_response`, `connect_request`
//! and `connect_response` and their `tx_id` (from 1) inside the object.
//!
//! Our own parser: no crate parses these PDUs passively; they are TPKT
//! records (RFC 1006) holding X.224 TPDUs, a BER header and a run of
//! length-prefixed little-endian blocks (MS-RDPBCGR 2.2.1).
//!
//! Each direction is read as TPKT records (version 3, big-endian length,
//! at most 64 KiB), buffered until whole. Once the server confirms a
//! security protocol other than standard RDP security (TLS, CredSSP),
//! the rest of the flow is TLS, and the flow stays `rdp` (as in
//! Suricata): the server's handshake records are read for its
//! Certificate message, logged as a `tls_handshake` transaction with the
//! certificates' serial numbers (`x509_serials`); the first record that
//! is not a handshake one (or 64 KiB of handshake) ends the parsing.
//! Bytes that are not a TPKT record end the parsing of their direction.
//!
//! The strings of the client core data (version, build, keyboard layout
//! and type, connection hint, capabilities) are Suricata's, as its
//! Suricata 9 peer logs them for each value (tests/rdp.rs); keyboard
//! layouts outside the table in [`lcid_name`] are `unknown` here.

use serde_json::{json, Map, Value};

use crate::state::{TxCommon, TxProgress};
use crate::txparser::{Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};

/// RDP's port.
pub const PORT: u16 = 3389;
/// Most bytes of one TPKT record held.
const MAX_RECORD: usize = 65535;

/// What one transaction holds.
#[derive(Debug, Clone, PartialEq)]
pub enum RdpItem {
    InitialRequest {
        cookie: Option<Vec<u8>>,
        /// Negotiation request flags.
        flags: Option<u8>,
    },
    InitialResponse(Negotiation),
    ConnectRequest {
        client: Option<Box<ClientCore>>,
        channels: Vec<Vec<u8>>,
    },
    ConnectResponse,
    /// The server's certificates in the TLS handshake that follows a
    /// TLS-based protocol: their serial numbers, lower-case hex.
    TlsHandshake {
        serials: Vec<String>,
    },
}

/// The server's answer to the negotiation request.
#[derive(Debug, Clone, PartialEq)]
pub enum Negotiation {
    None,
    Response { flags: u8, protocol: u32 },
    Failure { code: u32 },
}

/// The client core data (TS_UD_CS_CORE), optional fields as far as the
/// client sent them (and as they parse).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientCore {
    pub version: u32,
    pub desktop_width: u16,
    pub desktop_height: u16,
    pub color_depth: u16,
    pub keyboard_layout: u32,
    pub client_build: u32,
    pub client_name: String,
    pub keyboard_type: u32,
    pub keyboard_subtype: u32,
    pub function_keys: u32,
    pub ime: String,
    pub post_beta2_color_depth: Option<u16>,
    pub product_id: Option<u16>,
    pub serial_number: Option<u32>,
    pub high_color_depth: Option<u16>,
    pub early_capability_flags: Option<u16>,
    pub dig_product_id: Option<String>,
    pub connection_type: Option<u8>,
    pub physical_width: Option<u32>,
    pub physical_height: Option<u32>,
    pub orientation: Option<u16>,
    pub scale_factor: Option<u32>,
    pub device_scale_factor: Option<u32>,
}

#[derive(Debug)]
pub struct RdpTx {
    pub(crate) common: TxCommon,
    pub item: RdpItem,
}

impl Tx for RdpTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: true,
            response_complete: true,
        }
    }
}

/// Little-endian reader over a slice.
struct Rd<'a>(&'a [u8]);

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// A fixed-size UTF-16LE field, up to its first NUL.
fn utf16(b: &[u8]) -> String {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    String::from_utf16_lossy(&units)
}

/// The X.224 TPDU of a TPKT record's payload: its code, its header
/// (after the length indicator) and the user data after it.
fn x224(p: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let li = usize::from(*p.first()?);
    let hdr = p.get(1..1 + li)?;
    Some((*hdr.first()? & 0xf0, hdr, &p[1 + li..]))
}

/// The cookie and negotiation request after a Connection Request's
/// fixed fields.
fn parse_request(v: &[u8]) -> RdpItem {
    // Code, DST-REF, SRC-REF, class.
    let mut rest = v.get(6..).unwrap_or(&[]);
    let mut cookie = None;
    if let Some(r) = rest.strip_prefix(b"Cookie: mstshash=") {
        let end = memchr::memmem::find(r, b"\r\n").unwrap_or(r.len());
        cookie = Some(r[..end].to_vec());
        rest = r.get(end + 2..).unwrap_or(&[]);
    } else if let Some(end) = memchr::memmem::find(rest, b"\r\n") {
        // A routing token: skipped.
        rest = &rest[end + 2..];
    }
    let mut r = Rd(rest);
    let flags = match (r.u8(), r.u8(), r.u16()) {
        (Some(1), Some(f), Some(8)) => Some(f),
        _ => None,
    };
    RdpItem::InitialRequest { cookie, flags }
}

fn parse_confirm(v: &[u8]) -> RdpItem {
    let mut r = Rd(v.get(6..).unwrap_or(&[]));
    let n = match (r.u8(), r.u8(), r.u16(), r.u32()) {
        (Some(2), Some(flags), Some(8), Some(protocol)) => {
            Negotiation::Response { flags, protocol }
        }
        (Some(3), Some(_), Some(8), Some(code)) => Negotiation::Failure { code },
        _ => Negotiation::None,
    };
    RdpItem::InitialResponse(n)
}

/// A BER length: (length, bytes it took).
fn ber_len(b: &[u8]) -> Option<(usize, usize)> {
    let first = *b.first()?;
    if first < 0x80 {
        return Some((usize::from(first), 1));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 2 {
        return None;
    }
    let mut len = 0usize;
    for &c in b.get(1..1 + n)? {
        len = len << 8 | usize::from(c);
    }
    Some((len, 1 + n))
}

/// A PER length (T.124): one byte, or two with the top bit set.
fn per_len(b: &[u8]) -> Option<(usize, usize)> {
    let first = *b.first()?;
    if first & 0x80 == 0 {
        return Some((usize::from(first), 1));
    }
    Some((usize::from(first & 0x3f) << 8 | usize::from(*b.get(1)?), 2))
}

/// The MCS Connect Initial of an X.224 data TPDU: its client data blocks.
fn parse_connect_initial(p: &[u8]) -> Option<RdpItem> {
    let body = p.strip_prefix(&[0x7f, 0x65])?;
    let (_, n) = ber_len(body)?;
    let mut b = &body[n..];
    // calling/called domain selectors, upward flag, three domain
    // parameter sequences, then the user data octet string.
    for _ in 0..6 {
        let (len, n) = ber_len(b.get(1..)?)?;
        b = b.get(1 + n + len..)?;
    }
    if *b.first()? != 0x04 {
        return None;
    }
    let (len, n) = ber_len(b.get(1..)?)?;
    let gcc = b.get(1 + n..(1 + n + len).min(b.len()))?;
    // The GCC Conference Create Request: the user data after the H.221
    // key "Duca".
    let at = memchr::memmem::find(gcc, b"Duca")?;
    let (_, n) = per_len(gcc.get(at + 4..)?)?;
    let mut blocks = gcc.get(at + 4 + n..)?;
    let mut client = None;
    let mut channels = Vec::new();
    while blocks.len() >= 4 {
        let ty = u16::from_le_bytes([blocks[0], blocks[1]]);
        let len = usize::from(u16::from_le_bytes([blocks[2], blocks[3]]));
        if len < 4 {
            break;
        }
        let data = &blocks[4..len.min(blocks.len())];
        match ty {
            0xc001 => client = parse_core(data).map(Box::new),
            0xc003 => channels = parse_net(data),
            _ => {}
        }
        blocks = blocks.get(len..).unwrap_or(&[]);
    }
    Some(RdpItem::ConnectRequest { client, channels })
}

fn parse_core(d: &[u8]) -> Option<ClientCore> {
    let mut r = Rd(d);
    let mut c = ClientCore {
        version: r.u32()?,
        desktop_width: r.u16()?,
        desktop_height: r.u16()?,
        color_depth: r.u16()?,
        ..Default::default()
    };
    r.u16()?; // SASSequence
    c.keyboard_layout = r.u32()?;
    c.client_build = r.u32()?;
    c.client_name = utf16(r.take(32)?);
    c.keyboard_type = r.u32()?;
    c.keyboard_subtype = r.u32()?;
    c.function_keys = r.u32()?;
    c.ime = utf16(r.take(64)?);
    // The optional fields, in order, as far as they are there and valid
    // (Suricata stops at the first that is not).
    (|| {
        c.post_beta2_color_depth = Some(r.u16()?).filter(|v| (0xca00..=0xca04).contains(v));
        c.post_beta2_color_depth?;
        c.product_id = Some(r.u16()?);
        c.serial_number = Some(r.u32()?);
        c.high_color_depth = Some(r.u16()?).filter(|v| matches!(v, 4 | 8 | 15 | 16 | 24));
        c.high_color_depth?;
        r.u16()?; // supportedColorDepths
        c.early_capability_flags = Some(r.u16()?);
        c.dig_product_id = Some(utf16(r.take(64)?));
        c.connection_type = Some(r.u8()?);
        r.u8()?; // pad
        r.u32()?; // serverSelectedProtocol
                  // Values out of their ranges (MS-RDPBCGR 2.2.1.3.2) end the
                  // optional fields, as in Suricata (a client sending zeros).
        c.physical_width = Some(r.u32()?).filter(|v| (10..=10000).contains(v));
        c.physical_width?;
        c.physical_height = Some(r.u32()?).filter(|v| (10..=10000).contains(v));
        c.physical_height?;
        c.orientation = Some(r.u16()?).filter(|v| matches!(v, 0 | 90 | 180 | 270));
        c.orientation?;
        c.scale_factor = Some(r.u32()?).filter(|v| (100..=500).contains(v));
        c.scale_factor?;
        c.device_scale_factor = Some(r.u32()?).filter(|v| matches!(v, 100 | 140 | 180));
        Some(())
    })();
    Some(c)
}

fn parse_net(d: &[u8]) -> Vec<Vec<u8>> {
    let mut r = Rd(d);
    let count = r.u32().unwrap_or(0).min(31);
    let mut out = Vec::new();
    for _ in 0..count {
        let Some(def) = r.take(12) else { break };
        let name = &def[..8];
        let end = name.iter().position(|&c| c == 0).unwrap_or(8);
        out.push(name[..end].to_vec());
    }
    out
}

/// Suricata's names of the client versions.
fn version_name(v: u32) -> String {
    match v {
        0x0008_0001 => "v4".into(),
        0x0008_0004 => "v5".into(),
        0x0008_0005..=0x0008_000c => format!("v10.{}", v - 0x0008_0005),
        _ => "unknown".into(),
    }
}

/// Suricata's names of the Windows builds.
fn build_name(b: u32) -> &'static str {
    match b {
        2195 => "Windows 2000",
        2600 => "Windows XP",
        3790 => "Windows Server 2003",
        6000 => "Windows Vista RTM",
        6001 => "Windows Vista SP1",
        6002 => "Windows Vista SP2",
        7600 => "Windows 7 RTM",
        7601 => "Windows 7 SP1",
        9200 => "Windows 8",
        9600 => "Windows 8.1",
        10240 => "Windows 10 TH1",
        10586 => "Windows 10 TH2",
        14393 => "Windows 10 RS1",
        15063 => "Windows 10 RS2",
        16299 => "Windows 10 RS3",
        17134 => "Windows 10 RS4",
        17763 => "Windows 10 RS5",
        _ => "unknown",
    }
}

/// Keyboard layouts (Windows LCIDs) by their locale names, as Suricata
/// logs them.
fn lcid_name(l: u32) -> &'static str {
    match l {
        0x401 => "ar-SA",
        0x402 => "bg-BG",
        0x404 => "zh-TW",
        0x405 => "cs-CZ",
        0x406 => "da-DK",
        0x407 => "de-DE",
        0x408 => "el-GR",
        0x409 => "en-US",
        0x40b => "fi-FI",
        0x40c => "fr-FR",
        0x40d => "he-IL",
        0x40e => "hu-HU",
        0x410 => "it-IT",
        0x411 => "ja-JP",
        0x412 => "ko-KR",
        0x413 => "nl-NL",
        0x414 => "nb-NO",
        0x415 => "pl-PL",
        0x416 => "pt-BR",
        0x418 => "ro-RO",
        0x419 => "ru-RU",
        0x41a => "hr-HR",
        0x41b => "sk-SK",
        0x41d => "sv-SE",
        0x41e => "th-TH",
        0x41f => "tr-TR",
        0x421 => "id-ID",
        0x422 => "uk-UA",
        0x424 => "sl-SI",
        0x425 => "et-EE",
        0x426 => "lv-LV",
        0x427 => "lt-LT",
        0x42a => "vi-VN",
        0x439 => "hi-IN",
        0x43e => "ms-MY",
        0x804 => "zh-CN",
        0x807 => "de-CH",
        0x809 => "en-GB",
        0x80a => "es-MX",
        0x80c => "fr-BE",
        0x816 => "pt-PT",
        0x81a => "sr-Latn-CS",
        0xc09 => "en-AU",
        0xc0a => "es-ES",
        0xc1a => "sr-Cyrl-CS",
        0x1009 => "en-CA",
        _ => "unknown",
    }
}

const CAPABILITIES: &[(u16, &str)] = &[
    (0x0001, "support_errinfo_pdf"),
    (0x0002, "want_32bpp_session"),
    (0x0004, "support_statusinfo_pdu"),
    (0x0008, "strong_asymmetric_keys"),
    (0x0020, "valid_connection_type"),
    (0x0040, "support_monitor_layout_pdu"),
    (0x0080, "support_netchar_autodetect"),
    (0x0100, "support_dynvc_gfx_protocol"),
    (0x0200, "support_dynamic_time_zone"),
    (0x0400, "support_heartbeat_pdu"),
];

impl ClientCore {
    fn eve(&self) -> Value {
        let mut m = Map::new();
        m.insert("version".into(), json!(version_name(self.version)));
        m.insert("desktop_width".into(), json!(self.desktop_width));
        m.insert("desktop_height".into(), json!(self.desktop_height));
        let depth = self
            .high_color_depth
            .map(u64::from)
            .or(match self.post_beta2_color_depth {
                Some(0xca00) => Some(4),
                Some(0xca01) => Some(8),
                Some(0xca02) => Some(15),
                Some(0xca03) => Some(16),
                Some(0xca04) => Some(24),
                _ => None,
            })
            .or(match self.color_depth {
                0xca00 => Some(4),
                0xca01 => Some(8),
                _ => None,
            });
        if let Some(d) = depth {
            m.insert("color_depth".into(), json!(d));
        }
        m.insert(
            "keyboard_layout".into(),
            json!(lcid_name(self.keyboard_layout)),
        );
        m.insert("build".into(), json!(build_name(self.client_build)));
        if !self.client_name.is_empty() {
            m.insert("client_name".into(), json!(self.client_name));
        }
        let kb = match self.keyboard_type {
            1 => Some("xt"),
            2 => Some("ico"),
            3 => Some("at"),
            4 => Some("enhanced"),
            5 => Some("1050"),
            6 => Some("9140"),
            7 => Some("jp"),
            _ => None,
        };
        if let Some(k) = kb {
            m.insert("keyboard_type".into(), json!(k));
        }
        if self.keyboard_subtype != 0 {
            m.insert("keyboard_subtype".into(), json!(self.keyboard_subtype));
        }
        if self.function_keys != 0 {
            m.insert("function_keys".into(), json!(self.function_keys));
        }
        if !self.ime.is_empty() {
            m.insert("ime".into(), json!(self.ime));
        }
        if let Some(p) = self.product_id {
            m.insert("product_id".into(), json!(p));
        }
        if let Some(s) = self.serial_number.filter(|&s| s != 0) {
            m.insert("serial_number".into(), json!(s));
        }
        if let Some(f) = self.early_capability_flags.filter(|&f| f != 0) {
            let caps: Vec<&str> = CAPABILITIES
                .iter()
                .filter(|(bit, _)| f & bit != 0)
                .map(|(_, n)| *n)
                .collect();
            m.insert("capabilities".into(), json!(caps));
        }
        if let Some(id) = self.dig_product_id.as_ref().filter(|i| !i.is_empty()) {
            m.insert("id".into(), json!(id));
        }
        let hint = match self.connection_type {
            Some(1) => Some("modem"),
            Some(2) => Some("low_broadband"),
            Some(3) => Some("satellite"),
            Some(4) => Some("high_broadband"),
            Some(5) => Some("wan"),
            Some(6) => Some("lan"),
            Some(7) => Some("autodetect"),
            _ => None,
        };
        if let Some(h) = hint {
            m.insert("connection_hint".into(), json!(h));
        }
        for (k, v) in [
            ("physical_width", self.physical_width),
            ("physical_height", self.physical_height),
            ("scale_factor", self.scale_factor),
            ("device_scale_factor", self.device_scale_factor),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
        if let Some(o) = self.orientation {
            m.insert("desktop_orientation".into(), json!(o));
        }
        Value::Object(m)
    }
}

impl RdpTx {
    /// The `rdp` object (Suricata's `rdp` logger).
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        m.insert("tx_id".into(), json!(self.common.id + 1));
        match &self.item {
            RdpItem::InitialRequest { cookie, flags } => {
                m.insert("event_type".into(), json!("initial_request"));
                if let Some(c) = cookie {
                    m.insert("cookie".into(), crate::txparser::suri_str(c));
                }
                if let Some(f) = flags.filter(|&f| f != 0) {
                    let names: Vec<&str> = [
                        (0x01, "restricted_admin_mode_required"),
                        (0x02, "redirected_authentication_mode_required"),
                        (0x08, "correlation_info_present"),
                    ]
                    .iter()
                    .filter(|(b, _)| f & b != 0)
                    .map(|(_, n)| *n)
                    .collect();
                    m.insert("flags".into(), json!(names));
                }
            }
            RdpItem::InitialResponse(n) => {
                m.insert("event_type".into(), json!("initial_response"));
                match n {
                    Negotiation::Response { flags, protocol } => {
                        if *flags != 0 {
                            let names: Vec<&str> = [
                                (0x01, "extended_client_data"),
                                (0x02, "dynvc_gfx"),
                                (0x08, "restricted_admin"),
                                (0x10, "redirected_authentication"),
                            ]
                            .iter()
                            .filter(|(b, _)| flags & b != 0)
                            .map(|(_, n)| *n)
                            .collect();
                            m.insert("server_supports".into(), json!(names));
                        }
                        let p = match protocol {
                            0 => "rdp",
                            1 => "ssl",
                            2 => "hybrid",
                            4 => "rds_tls",
                            8 => "hybrid_ex",
                            _ => "unknown",
                        };
                        m.insert("protocol".into(), json!(p));
                    }
                    Negotiation::Failure { code } => {
                        let reason = match code {
                            1 => "ssl required by server",
                            2 => "ssl not allowed by server",
                            3 => "ssl cert not on server",
                            4 => "inconsistent flags",
                            5 => "hybrid required by server",
                            6 => "ssl with user auth required by server",
                            _ => "unknown",
                        };
                        m.insert("error_code".into(), json!(code));
                        m.insert("reason".into(), json!(reason));
                    }
                    Negotiation::None => {}
                }
            }
            RdpItem::ConnectRequest { client, channels } => {
                m.insert("event_type".into(), json!("connect_request"));
                if let Some(c) = client {
                    m.insert("client".into(), c.eve());
                }
                if !channels.is_empty() {
                    let ch: Vec<Value> = channels
                        .iter()
                        .map(|c| crate::txparser::suri_str(c))
                        .collect();
                    m.insert("channels".into(), Value::Array(ch));
                }
            }
            RdpItem::ConnectResponse => {
                m.insert("event_type".into(), json!("connect_response"));
            }
            RdpItem::TlsHandshake { serials } => {
                m.insert("event_type".into(), json!("tls_handshake"));
                m.insert("x509_serials".into(), json!(serials));
            }
        }
        Value::Object(m)
    }
}

/// One RDP flow.
#[derive(Debug)]
pub struct RdpState {
    txs: TxList<RdpTx>,
    bufs: [Vec<u8>; 2],
    /// The direction left the protocol (not TPKT, a gap).
    lost: [bool; 2],
    /// The negotiated security protocol is TLS-based: only the
    /// server's TLS handshake is read, for its certificates.
    tls: bool,
    /// The server's TLS records and handshake messages, while looking
    /// for its certificates.
    tls_rec: Vec<u8>,
    tls_hs: Vec<u8>,
    /// The certificates were found, or the handshake is over or broken.
    tls_done: bool,
}

/// Most bytes of the server's TLS handshake read for its certificates.
const MAX_TLS_HANDSHAKE: usize = 64 * 1024;

/// A certificate's serial number as Suricata's RDP logger writes it
/// (hex, lower case, no leading zeros).
fn serial_hex(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let hex: String = cert
        .tbs_certificate
        .raw_serial()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let t = hex.trim_start_matches('0');
    Some(if t.is_empty() { "0".into() } else { t.into() })
}

impl RdpState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        RdpState {
            txs: TxList::new(cfg.max_transactions),
            bufs: Default::default(),
            lost: [false; 2],
            tls: false,
            tls_rec: Vec::new(),
            tls_hs: Vec::new(),
            tls_done: false,
        }
    }

    pub fn transactions(&self) -> impl Iterator<Item = &RdpTx> {
        self.txs.txs.iter()
    }

    fn push(&mut self, item: RdpItem, ts: Timestamp) {
        self.txs.push(|id| RdpTx {
            common: TxCommon::new(id, ts),
            item,
        });
    }

    pub fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp) {
        let d = dir.index();
        if self.tls {
            if dir == Direction::ToClient {
                self.tls_bytes(data, ts);
            }
            return;
        }
        if self.lost[d] {
            return;
        }
        self.bufs[d].extend_from_slice(data);
        loop {
            let buf = &self.bufs[d];
            if buf.len() < 4 {
                break;
            }
            if buf[0] != 3 {
                self.lost[d] = true;
                self.bufs[d] = Vec::new();
                break;
            }
            let len = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
            if len < 4 {
                self.lost[d] = true;
                self.bufs[d] = Vec::new();
                break;
            }
            if buf.len() < len.min(MAX_RECORD) {
                break;
            }
            let rec: Vec<u8> = self.bufs[d].drain(..len).collect();
            self.record(dir, &rec[4..], ts);
            if self.tls {
                let rest = std::mem::take(&mut self.bufs[1]);
                self.bufs = Default::default();
                self.tls_bytes(&rest, ts);
                break;
            }
        }
    }

    /// The server's bytes after a TLS-based protocol was confirmed: TLS
    /// records, whose handshake messages are searched for the
    /// Certificate.
    fn tls_bytes(&mut self, data: &[u8], ts: Timestamp) {
        if self.tls_done {
            return;
        }
        self.tls_rec.extend_from_slice(data);
        while self.tls_rec.len() >= 5 && !self.tls_done {
            let ty = self.tls_rec[0];
            let len = usize::from(u16::from_be_bytes([self.tls_rec[3], self.tls_rec[4]]));
            if !(20..=23).contains(&ty) || self.tls_rec[1] != 3 || len > 16384 + 2048 {
                self.tls_done = true;
                break;
            }
            if self.tls_rec.len() < 5 + len {
                break;
            }
            let rec: Vec<u8> = self.tls_rec.drain(..5 + len).collect();
            if ty != 22 {
                // ChangeCipherSpec, alert, data: the clear handshake is over.
                self.tls_done = true;
                break;
            }
            self.tls_hs.extend_from_slice(&rec[5..]);
            if self.tls_hs.len() > MAX_TLS_HANDSHAKE {
                self.tls_done = true;
                break;
            }
            self.handshake_messages(ts);
        }
        if self.tls_done {
            self.tls_rec = Vec::new();
            self.tls_hs = Vec::new();
        }
    }

    fn handshake_messages(&mut self, ts: Timestamp) {
        while self.tls_hs.len() >= 4 {
            let h = &self.tls_hs;
            let len = usize::from(h[1]) << 16 | usize::from(h[2]) << 8 | usize::from(h[3]);
            if h.len() < 4 + len {
                return;
            }
            let msg: Vec<u8> = self.tls_hs.drain(..4 + len).collect();
            if msg[0] != 11 {
                continue;
            }
            // Certificate: a 3-byte list length, then 3-byte-length DER
            // certificates.
            let mut list = msg.get(7..).unwrap_or(&[]);
            let mut serials = Vec::new();
            while list.len() >= 3 {
                let n =
                    usize::from(list[0]) << 16 | usize::from(list[1]) << 8 | usize::from(list[2]);
                let Some(der) = list.get(3..3 + n) else { break };
                serials.extend(serial_hex(der));
                list = &list[3 + n..];
            }
            self.push(RdpItem::TlsHandshake { serials }, ts);
            self.tls_done = true;
            return;
        }
    }

    fn record(&mut self, dir: Direction, p: &[u8], ts: Timestamp) {
        let Some((code, hdr, rest)) = x224(p) else {
            return;
        };
        match (dir, code) {
            (Direction::ToServer, 0xe0) => self.push(parse_request(hdr), ts),
            (Direction::ToClient, 0xd0) => {
                let item = parse_confirm(hdr);
                if let RdpItem::InitialResponse(Negotiation::Response { protocol, .. }) = &item {
                    self.tls = *protocol != 0;
                }
                self.push(item, ts);
            }
            (Direction::ToServer, 0xf0) => {
                if let Some(item) = parse_connect_initial(rest) {
                    self.push(item, ts);
                }
            }
            (Direction::ToClient, 0xf0) if rest.starts_with(&[0x7f, 0x66]) => {
                self.push(RdpItem::ConnectResponse, ts)
            }
            _ => {}
        }
    }
}

impl TxParser for RdpState {
    fn proto(&self) -> AppProto {
        AppProto::Rdp
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, _ev: &mut Vec<AppLayerEvent>) {
        RdpState::feed(self, dir, data, ts)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        self.lost[dir.index()] = true;
        self.bufs[dir.index()] = Vec::new();
    }
    fn finish(&mut self, _dir: Direction, _ev: &mut Vec<AppLayerEvent>) {}
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
    }
    fn buffers(&self, _tx: TxId, _id: BufferId, _dir: Direction) -> Vec<&[u8]> {
        Vec::new()
    }
    fn uints(&self, _tx: TxId, _field: UintField, _dir: Direction) -> Vec<u64> {
        Vec::new()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn wants_data(&self, dir: Direction) -> bool {
        if self.tls {
            return dir == Direction::ToClient && !self.tls_done;
        }
        !self.lost[dir.index()]
    }
}

/// Detection: a TPKT record holding an X.224 Connection Request from the
/// client, or a Connection Confirm from the server (Suricata's RDP
/// probe). `None`: more bytes needed.
pub fn probe(dir: Direction, data: &[u8]) -> Option<bool> {
    if data.len() < 6 {
        let ok = data.first().map_or(true, |&v| v == 3) && data.get(1).map_or(true, |&r| r == 0);
        return if ok { None } else { Some(false) };
    }
    let len = usize::from(u16::from_be_bytes([data[2], data[3]]));
    let li = usize::from(data[4]);
    let want = match dir {
        Direction::ToServer => 0xe0,
        Direction::ToClient => 0xd0,
    };
    Some(data[0] == 3 && data[1] == 0 && len >= 11 && li + 5 <= len && data[5] & 0xf0 == want)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use Direction::*;

    pub fn tpkt(b: &[u8]) -> Vec<u8> {
        let mut v = vec![3, 0];
        v.extend_from_slice(&((b.len() + 4) as u16).to_be_bytes());
        v.extend_from_slice(b);
        v
    }

    pub fn x224(code: u8, var: &[u8]) -> Vec<u8> {
        let mut body = vec![code, 0, 0, 0x12, 0x34, 0];
        body.extend_from_slice(var);
        let mut v = vec![body.len() as u8];
        v.extend_from_slice(&body);
        tpkt(&v)
    }

    fn ber(tag: &[u8], b: &[u8]) -> Vec<u8> {
        let mut v = tag.to_vec();
        if b.len() < 128 {
            v.push(b.len() as u8);
        } else {
            v.push(0x82);
            v.extend_from_slice(&(b.len() as u16).to_be_bytes());
        }
        v.extend_from_slice(b);
        v
    }

    fn utf16z(s: &str, n: usize) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        v.resize(n, 0);
        v
    }

    /// An MCS Connect Initial with client core data (`build`, `layout`,
    /// high colour depth `hcd`) and three channels.
    pub fn connect_initial(build: u32, layout: u32, hcd: u16) -> Vec<u8> {
        let mut core = Vec::new();
        core.extend_from_slice(&0x0008_0004u32.to_le_bytes());
        core.extend_from_slice(&1280u16.to_le_bytes());
        core.extend_from_slice(&1024u16.to_le_bytes());
        core.extend_from_slice(&0xca01u16.to_le_bytes());
        core.extend_from_slice(&0xaa03u16.to_le_bytes());
        core.extend_from_slice(&layout.to_le_bytes());
        core.extend_from_slice(&build.to_le_bytes());
        core.extend_from_slice(&utf16z("WORKSTATION", 32));
        for v in [4u32, 0, 12] {
            core.extend_from_slice(&v.to_le_bytes());
        }
        core.extend_from_slice(&[0; 64]);
        for v in [0xca01u16, 1] {
            core.extend_from_slice(&v.to_le_bytes());
        }
        core.extend_from_slice(&0u32.to_le_bytes());
        for v in [hcd, 0x0f, 0x0003] {
            core.extend_from_slice(&v.to_le_bytes());
        }
        core.extend_from_slice(&utf16z("00000-abc", 64));
        core.extend_from_slice(&[6, 0, 0, 0, 0, 0]);
        let block = |t: u16, b: &[u8]| {
            let mut v = t.to_le_bytes().to_vec();
            v.extend_from_slice(&((b.len() + 4) as u16).to_le_bytes());
            v.extend_from_slice(b);
            v
        };
        let mut net = 3u32.to_le_bytes().to_vec();
        for c in [&b"rdpdr"[..], b"rdpsnd", b"cliprdr"] {
            let mut name = c.to_vec();
            name.resize(8, 0);
            net.extend_from_slice(&name);
            net.extend_from_slice(&0x8080_0000u32.to_le_bytes());
        }
        let mut ud = block(0xc001, &core);
        ud.extend(block(0xc002, &[0; 8]));
        ud.extend(block(0xc003, &net));
        let mut ccr = b"\x00\x08\x00\x10\x00\x01\xc0\x00Duca".to_vec();
        ccr.extend_from_slice(&(0x8000 | ud.len() as u16).to_be_bytes());
        ccr.extend(ud);
        let mut gcc = b"\x00\x05\x00\x14\x7c\x00\x01".to_vec();
        gcc.extend_from_slice(&(0x8000 | ccr.len() as u16).to_be_bytes());
        gcc.extend(ccr);
        let params: Vec<u8> = ber(
            b"\x30",
            &[34u8, 2, 0, 1, 0, 1, 0xff, 2]
                .iter()
                .flat_map(|&v| ber(b"\x02", &[v]))
                .collect::<Vec<u8>>(),
        );
        let mut ci = ber(b"\x04", b"\x01");
        ci.extend(ber(b"\x04", b"\x01"));
        ci.extend(ber(b"\x01", b"\xff"));
        for _ in 0..3 {
            ci.extend_from_slice(&params);
        }
        ci.extend(ber(b"\x04", &gcc));
        let mut p = b"\x02\xf0\x80".to_vec();
        p.extend(ber(b"\x7f\x65", &ci));
        tpkt(&p)
    }

    fn state() -> RdpState {
        RdpState::new(&AppLayerConfig::default())
    }

    #[test]
    fn negotiation_and_connect_request() {
        let mut s = state();
        let cr = x224(
            0xe0,
            b"Cookie: mstshash=alice\r\n\x01\x08\x08\x00\x03\x00\x00\x00",
        );
        // Byte by byte: records are reassembled.
        for b in &cr {
            s.feed(ToServer, std::slice::from_ref(b), 1);
        }
        s.feed(
            ToClient,
            &x224(0xd0, b"\x02\x1f\x08\x00\x00\x00\x00\x00"),
            2,
        );
        s.feed(ToServer, &connect_initial(7601, 0x409, 24), 3);
        s.feed(ToClient, &tpkt(b"\x02\xf0\x80\x7f\x66\x03\x0a\x01\x00"), 4);
        let e: Vec<Value> = s.transactions().map(|t| t.eve()).collect();
        assert_eq!(
            e[0],
            json!({"tx_id": 1, "event_type": "initial_request", "cookie": "alice",
                   "flags": ["correlation_info_present"]})
        );
        assert_eq!(
            e[1],
            json!({"tx_id": 2, "event_type": "initial_response", "protocol": "rdp",
                   "server_supports": ["extended_client_data", "dynvc_gfx", "restricted_admin",
                                       "redirected_authentication"]})
        );
        assert_eq!(
            e[2],
            json!({"tx_id": 3, "event_type": "connect_request",
                "client": {"version": "v5", "desktop_width": 1280, "desktop_height": 1024,
                    "color_depth": 24, "keyboard_layout": "en-US", "build": "Windows 7 SP1",
                    "client_name": "WORKSTATION", "keyboard_type": "enhanced", "function_keys": 12,
                    "product_id": 1, "capabilities": ["support_errinfo_pdf", "want_32bpp_session"],
                    "id": "00000-abc", "connection_hint": "lan"},
                "channels": ["rdpdr", "rdpsnd", "cliprdr"]})
        );
        assert_eq!(e[3], json!({"tx_id": 4, "event_type": "connect_response"}));
    }

    #[test]
    fn invalid_high_color_depth_stops_optional_fields() {
        let mut s = state();
        s.feed(ToServer, &connect_initial(1234, 0x1234, 7), 1);
        let c = s.transactions().next().unwrap().eve()["client"].clone();
        assert_eq!(c["color_depth"], 8);
        assert_eq!(c["build"], "unknown");
        assert_eq!(c["keyboard_layout"], "unknown");
        assert_eq!(c["product_id"], 1);
        assert!(c.get("capabilities").is_none() && c.get("connection_hint").is_none());
    }

    #[test]
    fn tls_failure_and_garbage() {
        let mut s = state();
        s.feed(
            ToServer,
            &x224(0xe0, b"\x01\x00\x08\x00\x03\x00\x00\x00"),
            1,
        );
        s.feed(
            ToClient,
            &x224(0xd0, b"\x02\x00\x08\x00\x01\x00\x00\x00"),
            2,
        );
        assert_eq!(s.transactions().nth(1).unwrap().eve()["protocol"], "ssl");
        assert!(!TxParser::wants_data(&s, ToServer));
        s.feed(ToServer, b"\x16\x03\x01\x00\x05hello", 3);
        assert_eq!(s.transactions().count(), 2);

        let mut f = state();
        f.feed(
            ToClient,
            &x224(0xd0, b"\x03\x00\x08\x00\x02\x00\x00\x00"),
            1,
        );
        assert_eq!(
            f.transactions().next().unwrap().eve(),
            json!({"tx_id": 1, "event_type": "initial_response", "error_code": 2,
                   "reason": "ssl not allowed by server"})
        );
        let mut g = state();
        g.feed(ToServer, b"GET / HTTP/1.1\r\n\r\n", 1);
        assert!(!TxParser::wants_data(&g, ToServer));
        // A truncated connect initial yields nothing, and no panic.
        let ci = connect_initial(7601, 0x409, 24);
        let mut t = state();
        let mut cut = ci[..ci.len() - 300].to_vec();
        let n = (cut.len() as u16).to_be_bytes();
        cut[2] = n[0];
        cut[3] = n[1];
        t.feed(ToServer, &cut, 1);
        assert!(t.transactions().count() <= 1);
    }

    #[test]
    fn tls_certificate_serials() {
        let mut s = state();
        s.feed(
            ToServer,
            &x224(0xe0, b"\x01\x00\x08\x00\x01\x00\x00\x00"),
            1,
        );
        let mut cc = x224(0xd0, b"\x02\x00\x08\x00\x01\x00\x00\x00");
        let server = include_bytes!("../tests/data/tls12_server.bin");
        // The confirm and the start of the handshake in one piece, the
        // rest byte by byte.
        cc.extend_from_slice(&server[..10]);
        s.feed(ToClient, &cc, 2);
        for b in &server[10..] {
            s.feed(ToClient, std::slice::from_ref(b), 3);
        }
        let e = s.transactions().nth(2).unwrap().eve();
        assert_eq!(
            e,
            json!({"tx_id": 3, "event_type": "tls_handshake", "x509_serials": ["c0ffee1234"]})
        );
        assert!(!TxParser::wants_data(&s, ToClient));
        assert_eq!(
            serial_hex(include_bytes!("../tests/data/selfsigned.der")).as_deref(),
            Some("c0ffee1234")
        );
    }

    #[test]
    fn probes() {
        let cr = x224(0xe0, b"Cookie: mstshash=a\r\n");
        assert_eq!(probe(ToServer, &cr), Some(true));
        assert_eq!(probe(ToClient, &x224(0xd0, b"")), Some(true));
        assert_eq!(probe(ToServer, &cr[..3]), None);
        assert_eq!(probe(ToServer, b"GET / HTTP/1.1"), Some(false));
        assert_eq!(probe(ToClient, &cr), Some(false));
    }
}
