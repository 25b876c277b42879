//! EtherNet/IP (ENIP) and CIP over TCP and UDP (Suricata's `rust/src/enip`).
//!
//! A PDU is the 24-byte encapsulation header (command, length, session
//! handle, status, sender context, options; little-endian) and `length`
//! bytes of command data. `SendRRData`/`SendUnitData` carry a common
//! packet format (interface handle, timeout, items): a connected (0xb1,
//! with a sequence number) or unconnected (0xb2) data item holds a CIP
//! message, a service code (bit 7: response) with, for a request, the
//! EPATH (class, instance, attribute, member and connection point logical
//! segments of 8, 16 or 32 bits) and, for a response, the general and
//! extended status. The Multiple Service Packet (0x0a) is parsed one level
//! deep. `RegisterSession`, `ListIdentity` (CIP identity item) and
//! `ListServices` have their own payloads.
//!
//! Each request PDU opens a transaction; a response goes to the first
//! open request of the same command (and session, and CIP sequence number
//! when both carry connected data), and every open request it passes is
//! closed, as Suricata pairs them. A response nothing matches is a
//! transaction of its own. Over TCP a direction's bytes are buffered to a
//! whole PDU (at most 24 + 65535 bytes, the length is 16 bits); after a
//! gap, data is ignored until it starts with a plausible header. Over UDP
//! a datagram is one PDU. Command data that does not parse raises
//! `invalid_pdu`; the transaction cap `too_many_transactions`.

use serde_json::{json, Map, Value};

use crate::events::EnipEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{Tx, TxList, TxParser};
use crate::{
    hex_lower, AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, Transport,
    TxId, UintField,
};

/// The encapsulation header's length.
pub const HEADER_LEN: usize = 24;
/// Suricata's default `detection-ports` (both source and destination).
pub const PORT: u16 = 44818;

/// Encapsulation commands, as Suricata 9 writes them in EVE (its enum
/// names in snake case; `enip_command` takes the names too).
pub const COMMAND_NAMES: &[(&str, u64)] = &[
    ("nop", 0),
    ("list_services", 4),
    ("list_identity", 0x63),
    ("list_interfaces", 0x64),
    ("register_session", 0x65),
    ("unregister_session", 0x66),
    ("send_r_r_data", 0x6f),
    ("send_unit_data", 0x70),
    ("indicate_status", 0x72),
    ("cancel", 0x73),
];

/// Encapsulation status codes (`enip.status` names).
pub const STATUS_NAMES: &[(&str, u64)] = &[
    ("success", 0),
    ("invalid_cmd", 1),
    ("no_resources", 2),
    ("incorrect_data", 3),
    ("invalid_session", 0x64),
    ("invalid_length", 0x65),
    ("unsupported_prot_rev", 0x69),
    ("encap_header_error", 0x6a),
];

const CMD_LIST_SERVICES: u16 = 4;
const CMD_LIST_IDENTITY: u16 = 0x63;
const CMD_LIST_INTERFACES: u16 = 0x64;
const CMD_REGISTER_SESSION: u16 = 0x65;
const CMD_UNREGISTER_SESSION: u16 = 0x66;
const CMD_SEND_RRDATA: u16 = 0x6f;
const CMD_SEND_UNIT_DATA: u16 = 0x70;

const ITEM_CONNECTED_DATA: u16 = 0xb1;
const ITEM_UNCONNECTED_DATA: u16 = 0xb2;
const ITEM_IDENTITY: u16 = 0x0c;
const ITEM_SERVICES: u16 = 0x100;

/// CIP services with a payload parsed here.
pub const CIP_GET_ATTR_LIST: u8 = 3;
pub const CIP_SET_ATTR_LIST: u8 = 4;
pub const CIP_MULTIPLE_SERVICE: u8 = 0x0a;

/// Most items kept per common packet format, and CIP messages per
/// Multiple Service Packet (the rest are skipped).
const MAX_ITEMS: usize = 64;

fn name_of(table: &[(&'static str, u64)], v: u64) -> Option<&'static str> {
    table.iter().find(|(_, n)| *n == v).map(|(s, _)| *s)
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub cmd: u16,
    pub len: u16,
    pub session: u32,
    pub status: u32,
    pub context: u64,
    pub options: u32,
}

/// The header at the start of `b` (at least [`HEADER_LEN`] bytes).
pub fn parse_header(b: &[u8]) -> Option<Header> {
    if b.len() < HEADER_LEN {
        return None;
    }
    Some(Header {
        cmd: le16(b, 0)?,
        len: le16(b, 2)?,
        session: le32(b, 4)?,
        status: le32(b, 8)?,
        context: u64::from_le_bytes(b[12..20].try_into().ok()?),
        options: le32(b, 20)?,
    })
}

/// Whether `b` starts with a plausible encapsulation header (Suricata's
/// probe): a known command and status, the fixed lengths of session
/// commands, a `ListInterfaces` item list that fits.
pub fn probe(b: &[u8]) -> bool {
    let Some(h) = parse_header(b) else {
        return false;
    };
    if name_of(STATUS_NAMES, u64::from(h.status)).is_none() {
        return false;
    }
    match h.cmd {
        0 => h.options == 0,
        CMD_REGISTER_SESSION => h.len == 4,
        CMD_UNREGISTER_SESSION => h.len == 4 || h.len == 0,
        CMD_LIST_INTERFACES => {
            let rest = &b[HEADER_LEN..];
            match le16(rest, 0) {
                Some(n) => rest.len() >= 2 + 2 * usize::from(n),
                None => false,
            }
        }
        c => name_of(COMMAND_NAMES, u64::from(c)).is_some(),
    }
}

/// One logical segment of a CIP request path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathSegment {
    /// The segment byte (`0x20` 8-bit class, `0x25` 16-bit instance ...).
    pub segment_type: u8,
    pub value: u32,
}

impl PathSegment {
    /// The logical type: 8 class, 9 instance, 10 member, 11 connection
    /// point, 12 attribute (Suricata's `segment_type >> 2`).
    pub fn kind(&self) -> u8 {
        self.segment_type >> 2
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CipBody {
    #[default]
    None,
    Request {
        path: Vec<PathSegment>,
        /// Get Attribute List's attributes, or Set Attribute List's first.
        attributes: Vec<u16>,
        multiple: Vec<Cip>,
    },
    Response {
        status: u8,
        status_extended: Vec<u8>,
        multiple: Vec<Cip>,
    },
}

/// One CIP message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cip {
    /// The service code without the response bit.
    pub service: u8,
    pub body: CipBody,
}

fn parse_path(b: &[u8]) -> Option<Vec<PathSegment>> {
    let mut segs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let t = b[i];
        let (value, n) = match t {
            0x20 | 0x24 | 0x28 | 0x2c | 0x30 => (u32::from(*b.get(i + 1)?), 2),
            0x21 | 0x25 | 0x29 | 0x2d | 0x31 => (u32::from(le16(b, i + 2)?), 4),
            0x22 | 0x26 | 0x2a | 0x2e | 0x32 => (le32(b, i + 2)?, 6),
            _ => return None,
        };
        segs.push(PathSegment {
            segment_type: t,
            value,
        });
        i += n;
    }
    Some(segs)
}

/// A CIP message; `multi` allows a Multiple Service Packet's list (one
/// level only).
pub fn parse_cip(b: &[u8], multi: bool) -> Option<Cip> {
    let sc = *b.first()?;
    let service = sc & 0x7f;
    if sc & 0x80 == 0 {
        let words = usize::from(*b.get(1)?);
        let path = parse_path(b.get(2..2 + 2 * words)?)?;
        let rest = &b[2 + 2 * words..];
        let mut attributes = Vec::new();
        let mut multiple = Vec::new();
        match service {
            CIP_GET_ATTR_LIST => {
                let n = usize::from(le16(rest, 0)?);
                for k in 0..n.min(MAX_ITEMS) {
                    attributes.push(le16(rest, 2 + 2 * k)?);
                }
            }
            CIP_SET_ATTR_LIST if le16(rest, 0)? > 0 => attributes.push(le16(rest, 2)?),
            CIP_MULTIPLE_SERVICE if multi => multiple = parse_multiple(rest)?,
            _ => {}
        }
        Some(Cip {
            service,
            body: CipBody::Request {
                path,
                attributes,
                multiple,
            },
        })
    } else {
        let status = *b.get(2)?;
        let ext_words = usize::from(*b.get(3)?);
        let status_extended = b.get(4..4 + 2 * ext_words)?.to_vec();
        let rest = &b[4 + 2 * ext_words..];
        // The list is expected whatever the status (as Suricata parses
        // it): an error response without one does not parse.
        let multiple = if service == CIP_MULTIPLE_SERVICE && multi {
            parse_multiple(rest)?
        } else {
            Vec::new()
        };
        Some(Cip {
            service,
            body: CipBody::Response {
                status,
                status_extended,
                multiple,
            },
        })
    }
}

/// A Multiple Service Packet's messages (count, offsets from the count).
fn parse_multiple(b: &[u8]) -> Option<Vec<Cip>> {
    let n = usize::from(le16(b, 0)?);
    let mut out = Vec::new();
    for k in 0..n {
        let off = usize::from(le16(b, 2 + 2 * k)?);
        if k >= MAX_ITEMS {
            continue;
        }
        let end = if k + 1 < n {
            usize::from(le16(b, 4 + 2 * k)?)
        } else {
            b.len()
        };
        out.push(parse_cip(b.get(off..end.max(off).min(b.len()))?, false)?);
    }
    Some(out)
}

/// A CIP identity item (`ListIdentity` response).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    pub protocol_version: u16,
    pub vendor_id: u16,
    pub device_type: u16,
    pub product_code: u16,
    pub revision_major: u8,
    pub revision_minor: u8,
    pub status: u16,
    pub serial: u32,
    pub product_name: Vec<u8>,
    pub state: u8,
}

/// A `ListServices` response item.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Service {
    pub protocol_version: u16,
    pub capabilities: u16,
    pub name: Vec<u8>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Payload {
    #[default]
    None,
    /// `SendRRData`/`SendUnitData`: the first data item's CIP message and
    /// its sequence number when connected.
    Cip {
        seq: Option<u16>,
        cip: Option<Cip>,
        /// Whether the second item is connected data (response pairing).
        connected: bool,
    },
    RegisterSession {
        protocol_version: u16,
        options: u16,
    },
    Identity(Identity),
    Services(Service),
}

/// One encapsulation PDU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pdu {
    pub header: Header,
    pub payload: Payload,
    /// The command data did not parse (`invalid_pdu`).
    pub invalid: bool,
}

/// Common packet format items: `(type, data)`.
fn items(b: &[u8]) -> Option<Vec<(u16, &[u8])>> {
    let n = usize::from(le16(b, 0)?);
    let mut out = Vec::new();
    let mut i = 2;
    for _ in 0..n {
        let t = le16(b, i)?;
        let l = usize::from(le16(b, i + 2)?);
        let d = b.get(i + 4..i + 4 + l)?;
        if out.len() < MAX_ITEMS {
            out.push((t, d));
        }
        i += 4 + l;
    }
    Some(out)
}

fn parse_cpf_cip(d: &[u8]) -> Option<Payload> {
    // Interface handle (4), timeout (2), then the items.
    let it = items(d.get(6..)?)?;
    let connected = it.get(1).is_some_and(|(t, _)| *t == ITEM_CONNECTED_DATA);
    for (t, data) in &it {
        match *t {
            ITEM_CONNECTED_DATA => {
                let seq = le16(data, 0)?;
                return Some(Payload::Cip {
                    seq: Some(seq),
                    cip: Some(parse_cip(&data[2..], true)?),
                    connected,
                });
            }
            ITEM_UNCONNECTED_DATA => {
                return Some(Payload::Cip {
                    seq: None,
                    cip: Some(parse_cip(data, true)?),
                    connected,
                });
            }
            _ => {}
        }
    }
    Some(Payload::Cip {
        seq: None,
        cip: None,
        connected,
    })
}

fn parse_identity(d: &[u8]) -> Option<Identity> {
    // Protocol version, a 16-byte socket address, then the identity.
    let name_len = usize::from(*d.get(32)?);
    Some(Identity {
        protocol_version: le16(d, 0)?,
        vendor_id: le16(d, 18)?,
        device_type: le16(d, 20)?,
        product_code: le16(d, 22)?,
        revision_major: *d.get(24)?,
        revision_minor: *d.get(25)?,
        status: le16(d, 26)?,
        serial: le32(d, 28)?,
        product_name: d.get(33..33 + name_len)?.to_vec(),
        state: *d.get(33 + name_len)?,
    })
}

fn parse_service(d: &[u8]) -> Option<Service> {
    // The 16-byte name field as sent, NUL padding included (as Suricata
    // logs and inspects it).
    Some(Service {
        protocol_version: le16(d, 0)?,
        capabilities: le16(d, 2)?,
        name: d.get(4..20)?.to_vec(),
    })
}

/// The command data of a PDU whose header is `h`.
fn parse_payload(h: &Header, d: &[u8]) -> Option<Payload> {
    Some(match h.cmd {
        CMD_SEND_RRDATA | CMD_SEND_UNIT_DATA => parse_cpf_cip(d)?,
        CMD_REGISTER_SESSION if d.len() >= 4 => Payload::RegisterSession {
            protocol_version: le16(d, 0)?,
            options: le16(d, 2)?,
        },
        CMD_LIST_IDENTITY if !d.is_empty() => {
            let it = items(d)?;
            match it.iter().find(|(t, _)| *t == ITEM_IDENTITY) {
                Some((_, data)) => Payload::Identity(parse_identity(data)?),
                None => Payload::None,
            }
        }
        CMD_LIST_SERVICES if !d.is_empty() => {
            let it = items(d)?;
            match it.iter().find(|(t, _)| *t == ITEM_SERVICES) {
                Some((_, data)) => Payload::Services(parse_service(data)?),
                None => Payload::None,
            }
        }
        _ => Payload::None,
    })
}

/// A whole PDU at the start of `b`: the PDU and its length, `None` while
/// incomplete.
pub fn parse_pdu(b: &[u8]) -> Option<(Pdu, usize)> {
    let header = parse_header(b)?;
    let total = HEADER_LEN + usize::from(header.len);
    let data = b.get(HEADER_LEN..total)?;
    let (payload, invalid) = match parse_payload(&header, data) {
        Some(p) => (p, false),
        None => (Payload::None, true),
    };
    Some((
        Pdu {
            header,
            payload,
            invalid,
        },
        total,
    ))
}

/// Whether a response answers a request (Suricata's pairing): same
/// command, same session (but for `RegisterSession`, which assigns it),
/// and when both carry connected data, the same sequence number.
fn response_matches(req: &Pdu, resp: &Pdu) -> bool {
    if req.header.cmd != resp.header.cmd {
        return false;
    }
    if req.header.session != resp.header.session && req.header.cmd != CMD_REGISTER_SESSION {
        return false;
    }
    match (&req.payload, &resp.payload) {
        (
            Payload::Cip {
                seq: s1,
                connected: true,
                ..
            },
            Payload::Cip {
                seq: s2,
                connected: true,
                ..
            },
        ) => s1.is_some() && s1 == s2,
        (Payload::Cip { .. }, Payload::Cip { .. }) => true,
        (Payload::Cip { .. }, _) => false,
        (_, Payload::Cip { .. }) => false,
        _ => true,
    }
}

/// The `cip_service` keyword: a service, optionally with a class in the
/// path and an attribute (path or attribute list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CipServiceSpec {
    pub service: u8,
    pub class: Option<u32>,
    pub attribute: Option<u32>,
}

impl CipServiceSpec {
    /// `service[,class[,attribute]]` (Suricata's syntax: a service below
    /// 0x80; a negated attribute is ignored).
    pub fn parse(v: &str) -> Result<Self, String> {
        let err = || format!("cip_service: invalid value '{v}'");
        let parts: Vec<&str> = v
            .trim()
            .trim_matches('"')
            .split(',')
            .map(str::trim)
            .collect();
        if parts.len() > 3 {
            return Err(err());
        }
        let service: u8 = parts[0].parse().map_err(|_| err())?;
        if service >= 0x80 {
            return Err(err());
        }
        let class = match parts.get(1) {
            Some(c) => Some(c.parse::<u32>().map_err(|_| err())?),
            None => None,
        };
        let attribute = match parts.get(2) {
            Some(a) => match a.strip_prefix('!') {
                Some(n) => {
                    n.trim().parse::<u32>().map_err(|_| err())?;
                    None
                }
                None => Some(a.parse::<u32>().map_err(|_| err())?),
            },
            None => None,
        };
        Ok(CipServiceSpec {
            service,
            class,
            attribute,
        })
    }

    fn matches(&self, c: &Cip) -> bool {
        if c.service == self.service {
            let Some(class) = self.class else {
                return true;
            };
            let CipBody::Request {
                path, attributes, ..
            } = &c.body
            else {
                return false;
            };
            if !path.iter().any(|s| s.kind() == 8 && s.value == class) {
                return false;
            }
            return match self.attribute {
                None => true,
                Some(a) => {
                    path.iter().any(|s| s.kind() == 12 && s.value == a)
                        || attributes.iter().any(|&x| u32::from(x) == a)
                }
            };
        }
        match &c.body {
            CipBody::Request { multiple, .. } | CipBody::Response { multiple, .. }
                if c.service == CIP_MULTIPLE_SERVICE =>
            {
                multiple.iter().any(|m| self.matches(m))
            }
            _ => false,
        }
    }
}

/// One request and its response.
#[derive(Debug, Default)]
pub struct EnipTx {
    pub(crate) common: TxCommon,
    pub request: Option<Pdu>,
    pub response: Option<Pdu>,
    /// A later response passed this request by: it gets none.
    pub done: bool,
}

impl Tx for EnipTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.done || self.request.is_some(),
            response_complete: self.done || self.response.is_some(),
        }
    }
}

fn cip_of(p: &Pdu) -> Option<&Cip> {
    match &p.payload {
        Payload::Cip { cip, .. } => cip.as_ref(),
        _ => None,
    }
}

/// Every CIP message of `c`: itself and its Multiple Service list.
fn with_multiple(c: &Cip) -> impl Iterator<Item = &Cip> {
    let more: &[Cip] = match &c.body {
        CipBody::Request { multiple, .. } | CipBody::Response { multiple, .. } => multiple,
        CipBody::None => &[],
    };
    std::iter::once(c).chain(more.iter())
}

impl EnipTx {
    fn pdu(&self, dir: Direction) -> Option<&Pdu> {
        match dir {
            Direction::ToServer => self.request.as_ref(),
            Direction::ToClient => self.response.as_ref(),
        }
    }

    fn identity(&self) -> Option<&Identity> {
        match &self.response.as_ref()?.payload {
            Payload::Identity(i) => Some(i),
            _ => None,
        }
    }

    /// The values an integer keyword sees in direction `dir`.
    pub fn uints(&self, f: UintField, dir: Direction) -> Vec<u64> {
        use UintField::*;
        let one = |v: Option<u64>| v.into_iter().collect::<Vec<u64>>();
        let req_path = |kind: u8| -> Vec<u64> {
            let Some(c) = self.request.as_ref().and_then(cip_of) else {
                return Vec::new();
            };
            with_multiple(c)
                .flat_map(|m| match &m.body {
                    CipBody::Request { path, .. } => path.clone(),
                    _ => Vec::new(),
                })
                .filter(|s| s.kind() == kind)
                .map(|s| u64::from(s.value))
                .collect()
        };
        let resp_cip = || self.response.as_ref().and_then(cip_of);
        match f {
            EnipCommand => one(self.pdu(dir).map(|p| u64::from(p.header.cmd))),
            EnipStatus => one(self.pdu(dir).map(|p| u64::from(p.header.status))),
            EnipProtocolVersion => one(match &self.pdu(dir).map(|p| &p.payload) {
                Some(Payload::RegisterSession {
                    protocol_version, ..
                }) => Some(u64::from(*protocol_version)),
                Some(Payload::Identity(i)) if dir == Direction::ToClient => {
                    Some(u64::from(i.protocol_version))
                }
                Some(Payload::Services(s)) if dir == Direction::ToClient => {
                    Some(u64::from(s.protocol_version))
                }
                _ => None,
            }),
            EnipCipClass => req_path(8),
            EnipCipInstance => req_path(9),
            EnipCipAttribute => {
                let mut v = req_path(12);
                if let Some(c) = self.request.as_ref().and_then(cip_of) {
                    for m in with_multiple(c) {
                        if let CipBody::Request { attributes, .. } = &m.body {
                            v.extend(attributes.iter().map(|&a| u64::from(a)));
                        }
                    }
                }
                v
            }
            EnipCipStatus => resp_cip()
                .map(|c| {
                    with_multiple(c)
                        .filter_map(|m| match &m.body {
                            CipBody::Response { status, .. } => Some(u64::from(*status)),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            EnipCipExtendedstatus => resp_cip()
                .map(|c| {
                    with_multiple(c)
                        .filter_map(|m| match &m.body {
                            CipBody::Response {
                                status_extended, ..
                            } if status_extended.len() == 2 => {
                                Some(u64::from(u16::from_le_bytes([
                                    status_extended[0],
                                    status_extended[1],
                                ])))
                            }
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            EnipRevision => one(self
                .identity()
                .map(|i| (u64::from(i.revision_major) << 8) | u64::from(i.revision_minor))),
            EnipIdentityStatus => one(self.identity().map(|i| u64::from(i.status))),
            EnipState => one(self.identity().map(|i| u64::from(i.state))),
            EnipSerial => one(self.identity().map(|i| u64::from(i.serial))),
            EnipProductCode => one(self.identity().map(|i| u64::from(i.product_code))),
            EnipDeviceType => one(self.identity().map(|i| u64::from(i.device_type))),
            EnipVendorId => one(self.identity().map(|i| u64::from(i.vendor_id))),
            EnipCapabilities => one(match &self.response.as_ref().map(|p| &p.payload) {
                Some(Payload::Services(s)) => Some(u64::from(s.capabilities)),
                _ => None,
            }),
            _ => Vec::new(),
        }
    }

    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        match (id, self.response.as_ref().map(|p| &p.payload)) {
            (BufferId::EnipProductName, Some(Payload::Identity(i))) => vec![&i.product_name[..]],
            (BufferId::EnipServiceName, Some(Payload::Services(s))) => vec![&s.name[..]],
            _ => Vec::new(),
        }
    }

    /// `cip_service` on the first CIP message of direction `dir`.
    pub fn cip_service(&self, dir: Direction, spec: &CipServiceSpec) -> bool {
        self.pdu(dir)
            .and_then(cip_of)
            .is_some_and(|c| spec.matches(c))
    }

    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        if let Some(p) = &self.request {
            m.insert("request".into(), pdu_eve(p));
        }
        if let Some(p) = &self.response {
            m.insert("response".into(), pdu_eve(p));
        }
        Value::Object(m)
    }
}

fn named(table: &[(&'static str, u64)], v: u64) -> Value {
    match name_of(table, v) {
        Some(s) => s.into(),
        None => format!("unknown-{v}").into(),
    }
}

fn pdu_eve(p: &Pdu) -> Value {
    let mut m = Map::new();
    m.insert(
        "command".into(),
        named(COMMAND_NAMES, u64::from(p.header.cmd)),
    );
    m.insert(
        "status".into(),
        named(STATUS_NAMES, u64::from(p.header.status)),
    );
    if p.header.options != 0 {
        m.insert("options".into(), p.header.options.into());
    }
    match &p.payload {
        Payload::Cip { cip: Some(c), .. } => {
            m.insert("cip".into(), cip_eve(c));
        }
        Payload::RegisterSession {
            protocol_version,
            options,
        } => {
            m.insert(
                "register_session".into(),
                json!({"protocol_version": protocol_version, "options": options}),
            );
        }
        Payload::Identity(i) => {
            m.insert(
                "identity".into(),
                json!({
                    "protocol_version": i.protocol_version,
                    "revision": format!("{}.{}", i.revision_major, i.revision_minor),
                    "vendor_id": named(VENDOR_NAMES, u64::from(i.vendor_id)),
                    "device_type": named(DEVICE_TYPE_NAMES, u64::from(i.device_type)),
                    "product_code": i.product_code,
                    "status": i.status,
                    "serial": i.serial,
                    "product_name": String::from_utf8_lossy(&i.product_name),
                    "state": i.state,
                }),
            );
        }
        Payload::Services(s) => {
            m.insert(
                "list_services".into(),
                json!({
                    "protocol_version": s.protocol_version,
                    "capabilities": s.capabilities,
                    "service_name": String::from_utf8_lossy(&s.name),
                }),
            );
        }
        _ => {}
    }
    Value::Object(m)
}

fn cip_eve(c: &Cip) -> Value {
    let mut m = Map::new();
    m.insert("service".into(), named(SERVICE_NAMES, u64::from(c.service)));
    match &c.body {
        CipBody::Response {
            status,
            status_extended,
            multiple,
        } => {
            m.insert("status".into(), named(CIP_STATUS_NAMES, u64::from(*status)));
            if !status_extended.is_empty() {
                m.insert("status_extended".into(), hex_lower(status_extended).into());
            }
            if !multiple.is_empty() {
                m.insert(
                    "multiple".into(),
                    multiple.iter().map(cip_eve).collect::<Vec<_>>().into(),
                );
            }
        }
        CipBody::Request { path, multiple, .. } => {
            if !path.is_empty() {
                m.insert(
                    "path".into(),
                    path.iter()
                        .map(|s| {
                            json!({
                                "segment_type": segment_name(s.segment_type),
                                "value": s.value,
                            })
                        })
                        .collect::<Vec<_>>()
                        .into(),
                );
                if let Some(s) = path.iter().rev().find(|s| s.kind() == 8) {
                    m.insert("class_name".into(), named(CLASS_NAMES, u64::from(s.value)));
                }
            }
            if !multiple.is_empty() {
                m.insert(
                    "multiple".into(),
                    multiple.iter().map(cip_eve).collect::<Vec<_>>().into(),
                );
            }
        }
        CipBody::None => {}
    }
    Value::Object(m)
}

fn segment_name(t: u8) -> String {
    let kind = match t >> 2 {
        8 => "class",
        9 => "instance",
        10 => "member",
        11 => "connection_point",
        12 => "attribute",
        _ => return format!("unknown-{t}"),
    };
    kind.to_string()
}

/// CIP common service names and the class-specific ones Suricata names,
/// spelt as Suricata writes them in EVE.
const SERVICE_NAMES: &[(&str, u64)] = &[
    ("Get Attributes All", 0x01),
    ("Set Attributes All", 0x02),
    ("Get Attribute List", 0x03),
    ("Set Attribute List", 0x04),
    ("Reset", 0x05),
    ("Start", 0x06),
    ("Stop", 0x07),
    ("Create", 0x08),
    ("Delete", 0x09),
    ("Multiple Service Packet", 0x0a),
    ("Apply Attributes", 0x0d),
    ("Get Attributes Single", 0x0e),
    ("Set Attributes Single", 0x10),
    ("Find Next Object Instance", 0x11),
    ("Restore", 0x15),
    ("Save", 0x16),
    ("No Forward Open", 0x17),
    ("Get Member", 0x18),
    ("Set Member", 0x19),
    ("Insert Member", 0x1a),
    ("Remove Member", 0x1b),
    ("Group Sync", 0x1c),
    ("Get Connection Point Member List", 0x1d),
    ("Execute PCCC Service", 0x4b),
    ("Read Data", 0x4c),
    ("Write Data", 0x4d),
    ("Read Write Modify Data", 0x4e),
    ("Read Data Fragmented", 0x52),
    ("Write Data Fragmented", 0x53),
    ("Forward Open", 0x54),
];

/// CIP general status codes.
const CIP_STATUS_NAMES: &[(&str, u64)] = &[
    ("Success", 0x00),
    ("Connection Failure", 0x01),
    ("Resource Unavailable", 0x02),
    ("Invalid Parameter Value", 0x03),
    ("Path Segment Error", 0x04),
    ("Path Destination Unknown", 0x05),
    ("Partial Transfer", 0x06),
    ("Connection Lost", 0x07),
    ("Service Not Supported", 0x08),
    ("Invalid Attribute Value", 0x09),
    ("Attribute List Error", 0x0a),
    ("Already In Requested Mode/State", 0x0b),
    ("Object State Conflict", 0x0c),
    ("Object Already Exists", 0x0d),
    ("Attribute Not Settable", 0x0e),
    ("Privilege Violation", 0x0f),
    ("Device State Conflict", 0x10),
    ("Reply Data Too Large", 0x11),
    ("Fragmentation Of A Primitive Value", 0x12),
    ("Not Enough Data", 0x13),
    ("Attribute Not Supported", 0x14),
    ("Too Much Data", 0x15),
    ("Object Does Not Exist", 0x16),
    ("Service Fragmentation Sequence Not In Progress", 0x17),
    ("No Stored Attribute Data", 0x18),
    ("Store Operation Failure", 0x19),
    ("Routing Failure, Request Packet Too Large", 0x1a),
    ("Routing Failure, Response Packet Too Large", 0x1b),
    ("Missing Attribute List Entry Data", 0x1c),
    ("Invalid Attribute Value List", 0x1d),
    ("Embedded Service Error", 0x1e),
    ("Vendor Specific Error", 0x1f),
    ("Invalid Parameter", 0x20),
    ("Write-Once Value Or Medium Already Written", 0x21),
    ("Invalid Reply Received", 0x22),
    ("Buffer Overflow", 0x23),
    ("Invalid Message Format", 0x24),
    ("Key Failure In Path", 0x25),
    ("Path Size Invalid", 0x26),
    ("Unexpected Attribute In List", 0x27),
    ("Invalid Member ID", 0x28),
    ("Member Not Settable", 0x29),
    ("Group 2 Only Server General Failure", 0x2a),
    ("Unknown Modbus Error", 0x2b),
    ("Attribute Not Gettable", 0x2c),
    ("Still Processing", 0xff),
];

/// The common CIP object classes (others are `unknown-N`).
const CLASS_NAMES: &[(&str, u64)] = &[
    ("Identity", 0x01),
    ("Message Router", 0x02),
    ("DeviceNet", 0x03),
    ("Assembly", 0x04),
    ("Connection", 0x05),
    ("Connection Manager", 0x06),
    ("Register", 0x07),
    ("Discrete Input Point", 0x08),
    ("Discrete Output Point", 0x09),
    ("Analog Input Point", 0x0a),
    ("Analog Output Point", 0x0b),
    ("Parameter", 0x0f),
    ("Parameter Group", 0x10),
    ("Group", 0x12),
    ("File", 0x37),
    ("Event Log", 0x41),
    ("Time Sync", 0x43),
    ("Modbus", 0x44),
    ("Device Level Ring (DLR)", 0x47),
    ("QoS", 0x48),
    ("PCCC Class", 0x67),
    ("Port", 0xf4),
    ("TCP/IP Interface", 0xf5),
    ("Ethernet Link", 0xf6),
];

/// CIP device profiles (identity `device_type`; others `unknown-N`).
const DEVICE_TYPE_NAMES: &[(&str, u64)] = &[
    ("Generic Device (deprecated)", 0x00),
    ("Control Station (deprecated)", 0x01),
    ("AC Drive Device", 0x02),
    ("Motor Overload", 0x03),
    ("Limit Switch", 0x04),
    ("Inductive Proximity Switch", 0x05),
    ("Photoelectric Sensor", 0x06),
    ("General Purpose Discrete I/O", 0x07),
    ("Resolver", 0x09),
    ("Communications Adapter", 0x0c),
    ("Programmable Logic Controller", 0x0e),
    ("Position Controller", 0x10),
    ("DC Drive", 0x13),
    ("Contactor", 0x15),
    ("Motor Starter", 0x16),
    ("Softstart Starter", 0x17),
    ("Human-Machine Interface", 0x18),
    ("Mass Flow Controller", 0x1a),
    ("Pneumatic Valve(s)", 0x1b),
    ("Vacuum Pressure Gauge", 0x1c),
    ("Process Control Value", 0x1d),
    ("Residual Gas Analyzer", 0x1e),
    ("DC Power Generator", 0x1f),
    ("RF Power Generator", 0x20),
    ("Turbomolecular Vacuum Pump", 0x21),
    ("Encoder", 0x22),
    ("Safety Discrete I/O Device", 0x23),
    ("Fluid Flow Controller", 0x24),
    ("CIP Motion Drive", 0x25),
    ("CompoNet Repeater", 0x26),
    ("Mass Flow Controller Enhanced", 0x27),
    ("CIP Modbus Device", 0x28),
    ("CIP Modbus Translator", 0x29),
    ("Safety Analog I/O Device", 0x2a),
    ("Generic Device (keyable)", 0x2b),
    ("Managed Ethernet Switch", 0x2c),
];

/// The best known vendor ids (the ODVA list is long; others `unknown-N`).
const VENDOR_NAMES: &[(&str, u64)] = &[
    ("Rockwell Automation/Allen-Bradley", 1),
    ("Honeywell Inc.", 3),
    ("Parker Hannifin Corp. (Veriflo Division)", 4),
    ("Rockwell Automation/Reliance Elec.", 5),
    ("SMC Corporation", 7),
    ("Molex Incorporated", 8),
    ("Festo Corporation", 26),
    ("Wago Corporation", 40),
    ("ABB Industrial Systems", 46),
    ("Omron Corporation", 47),
    ("Turck Inc.", 48),
    ("Beckhoff Automation GmbH", 108),
    ("National Instruments", 109),
    ("Siemens Energy & Automation/Drives", 145),
    ("Mitsubishi Electric Corporation", 161),
    ("Schneider Automation Inc.", 243),
    ("Yokogawa Electric Corporation", 250),
    ("Hilscher GmbH", 283),
    ("Prosoft Technology", 309),
    ("GE Fanuc Automation North America Inc.", 326),
];

/// Per-flow ENIP state.
#[derive(Debug)]
pub struct EnipState {
    txs: TxList<EnipTx>,
    transport: Transport,
    bufs: [Vec<u8>; 2],
    /// A gap was seen: data is ignored until a plausible header.
    gap: [bool; 2],
}

impl EnipState {
    pub fn new(transport: Transport, cfg: &AppLayerConfig) -> Self {
        EnipState {
            txs: TxList::new(cfg.max_transactions),
            transport,
            bufs: [Vec::new(), Vec::new()],
            gap: [false, false],
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&EnipTx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &EnipTx> {
        self.txs.txs.iter()
    }

    /// Files one PDU.
    fn handle(&mut self, dir: Direction, pdu: Pdu, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let invalid = pdu.invalid;
        if dir == Direction::ToClient {
            let mut found = None;
            for t in self.txs.txs.iter_mut() {
                if t.response.is_some() {
                    continue;
                }
                let Some(req) = &t.request else { continue };
                t.done = true;
                if response_matches(req, &pdu) {
                    found = Some(t.common.id);
                    break;
                }
            }
            if let Some(id) = found {
                if let Some(t) = self.txs.get_mut(id) {
                    t.response = Some(pdu);
                }
                if invalid {
                    ev.push(AppLayerEvent::Enip(EnipEvent::InvalidPdu, Some(id)));
                }
                return;
            }
        }
        let (req, resp) = match dir {
            Direction::ToServer => (Some(pdu), None),
            Direction::ToClient => (None, Some(pdu)),
        };
        let dropped = self.txs.push(|id| EnipTx {
            common: TxCommon::new(id, ts),
            request: req,
            response: resp,
            done: false,
        });
        let id = self.txs.next_id - 1;
        if dropped {
            ev.push(AppLayerEvent::Enip(
                EnipEvent::TooManyTransactions,
                Some(id),
            ));
        }
        if invalid {
            ev.push(AppLayerEvent::Enip(EnipEvent::InvalidPdu, Some(id)));
        }
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if self.transport == Transport::Udp {
            if let Some((pdu, _)) = parse_pdu(data) {
                self.handle(dir, pdu, ts, ev);
            }
            return;
        }
        let d = dir.index();
        if self.gap[d] {
            if !probe(data) {
                return;
            }
            self.gap[d] = false;
        }
        self.bufs[d].extend_from_slice(data);
        let mut off = 0;
        while let Some((pdu, n)) = parse_pdu(&self.bufs[d][off..]) {
            off += n;
            self.handle(dir, pdu, ts, ev);
        }
        self.bufs[d].drain(..off);
    }

    pub fn on_gap(&mut self, dir: Direction) {
        self.gap[dir.index()] = true;
        self.bufs[dir.index()].clear();
    }
}

impl TxParser for EnipState {
    fn proto(&self) -> AppProto {
        AppProto::Enip
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        EnipState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        EnipState::on_gap(self, dir)
    }
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        self.bufs[dir.index()].clear();
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
        self.txs.retain(keep)
    }
    fn buffers(&self, tx: TxId, id: BufferId, _dir: Direction) -> Vec<&[u8]> {
        self.txs.get(tx).map(|t| t.buffers(id)).unwrap_or_default()
    }
    fn uints(&self, tx: TxId, field: UintField, dir: Direction) -> Vec<u64> {
        self.txs
            .get(tx)
            .map(|t| t.uints(field, dir))
            .unwrap_or_default()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn cip_service(&self, tx: TxId, dir: Direction, spec: &CipServiceSpec) -> bool {
        self.txs.get(tx).is_some_and(|t| t.cip_service(dir, spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(cmd: u16, len: usize, session: u32, status: u32) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&cmd.to_le_bytes());
        h.extend_from_slice(&(len as u16).to_le_bytes());
        h.extend_from_slice(&session.to_le_bytes());
        h.extend_from_slice(&status.to_le_bytes());
        h.extend_from_slice(&[0xc1, 0xde, 0xbe, 0xd1, 0, 0, 0, 0]);
        h.extend_from_slice(&0u32.to_le_bytes());
        h
    }

    fn pdu(cmd: u16, session: u32, data: &[u8]) -> Vec<u8> {
        let mut p = header(cmd, data.len(), session, 0);
        p.extend_from_slice(data);
        p
    }

    /// SendRRData with one unconnected data item holding `cip`.
    fn rr(session: u32, cip: &[u8]) -> Vec<u8> {
        let mut d = vec![0, 0, 0, 0, 0x0a, 0];
        d.extend_from_slice(&2u16.to_le_bytes());
        d.extend_from_slice(&[0, 0, 0, 0]);
        d.extend_from_slice(&ITEM_UNCONNECTED_DATA.to_le_bytes());
        d.extend_from_slice(&(cip.len() as u16).to_le_bytes());
        d.extend_from_slice(cip);
        pdu(CMD_SEND_RRDATA, session, &d)
    }

    /// The ListIdentity response of suricata-verify's enip-alert.
    fn identity_response() -> Vec<u8> {
        let mut item = vec![1, 0];
        item.extend_from_slice(&[0, 2, 0xaf, 0x12, 10, 1, 1, 0xa4, 0, 0, 0, 0, 0, 0, 0, 0]);
        item.extend_from_slice(&[1, 0, 0x0c, 0, 0x3a, 0, 4, 3, 0x30, 0, 0x8e, 0x4d, 0x52, 0]);
        item.push(11);
        item.extend_from_slice(b"1756-ENBT/A");
        item.push(3);
        let mut d = vec![1, 0, 0x0c, 0];
        d.extend_from_slice(&(item.len() as u16).to_le_bytes());
        d.extend_from_slice(&item);
        pdu(CMD_LIST_IDENTITY, 0, &d)
    }

    fn feed(s: &mut EnipState, dir: Direction, d: &[u8]) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        s.feed(dir, d, 1, &mut ev);
        ev
    }

    fn tcp() -> EnipState {
        EnipState::new(Transport::Tcp, &AppLayerConfig::default())
    }

    #[test]
    fn list_identity_pairs_request_and_response() {
        let mut s = tcp();
        let req = header(CMD_LIST_IDENTITY, 0, 0, 0);
        assert!(probe(&req));
        assert!(feed(&mut s, Direction::ToServer, &req).is_empty());
        assert!(feed(&mut s, Direction::ToClient, &identity_response()).is_empty());
        assert_eq!(s.transactions().count(), 1);
        let t = s.tx(0).unwrap();
        assert_eq!(
            t.uints(UintField::EnipCommand, Direction::ToServer),
            vec![99]
        );
        assert_eq!(
            t.uints(UintField::EnipCommand, Direction::ToClient),
            vec![99]
        );
        assert_eq!(
            t.uints(UintField::EnipVendorId, Direction::ToClient),
            vec![1]
        );
        assert_eq!(
            t.uints(UintField::EnipDeviceType, Direction::ToClient),
            vec![12]
        );
        assert_eq!(
            t.uints(UintField::EnipProductCode, Direction::ToClient),
            vec![58]
        );
        assert_eq!(
            t.uints(UintField::EnipRevision, Direction::ToClient),
            vec![0x403]
        );
        assert_eq!(
            t.uints(UintField::EnipSerial, Direction::ToClient),
            vec![0x524d8e]
        );
        assert_eq!(t.uints(UintField::EnipState, Direction::ToClient), vec![3]);
        assert_eq!(
            t.uints(UintField::EnipProtocolVersion, Direction::ToClient),
            vec![1]
        );
        assert_eq!(
            t.buffers(BufferId::EnipProductName),
            vec![&b"1756-ENBT/A"[..]]
        );
        let e = t.eve();
        assert_eq!(e["request"]["command"], "list_identity");
        assert_eq!(e["response"]["status"], "success");
        assert_eq!(e["response"]["identity"]["revision"], "4.3");
        assert_eq!(
            e["response"]["identity"]["vendor_id"],
            "Rockwell Automation/Allen-Bradley"
        );
        assert_eq!(
            e["response"]["identity"]["device_type"],
            "Communications Adapter"
        );
        assert_eq!(e["response"]["identity"]["product_name"], "1756-ENBT/A");
        assert!(t.progress().response_complete);
    }

    #[test]
    fn cip_request_path_and_response_status() {
        let mut s = tcp();
        // Get Attribute Single, class 1 instance 1 attribute 7.
        let req = rr(0x1234, &[0x0e, 3, 0x20, 0x01, 0x24, 0x01, 0x30, 0x07]);
        // Its response: status 0x05 with an extended status 0x0107.
        let resp = rr(0x1234, &[0x8e, 0, 0x05, 1, 0x07, 0x01]);
        feed(&mut s, Direction::ToServer, &req);
        feed(&mut s, Direction::ToClient, &resp);
        let t = s.tx(0).unwrap();
        assert_eq!(
            t.uints(UintField::EnipCipClass, Direction::ToServer),
            vec![1]
        );
        assert_eq!(
            t.uints(UintField::EnipCipInstance, Direction::ToServer),
            vec![1]
        );
        assert_eq!(
            t.uints(UintField::EnipCipAttribute, Direction::ToServer),
            vec![7]
        );
        assert_eq!(
            t.uints(UintField::EnipCipStatus, Direction::ToClient),
            vec![5]
        );
        assert_eq!(
            t.uints(UintField::EnipCipExtendedstatus, Direction::ToClient),
            vec![0x107]
        );
        let spec = CipServiceSpec::parse("14,1,7").unwrap();
        assert!(t.cip_service(Direction::ToServer, &spec));
        assert!(!t.cip_service(Direction::ToServer, &CipServiceSpec::parse("14,2").unwrap()));
        assert!(t.cip_service(Direction::ToClient, &CipServiceSpec::parse("14").unwrap()));
        assert!(CipServiceSpec::parse("200").is_err());
        assert!(CipServiceSpec::parse("1,2,3,4").is_err());
        let e = t.eve();
        assert_eq!(e["request"]["command"], "send_r_r_data");
        assert_eq!(e["request"]["cip"]["service"], "Get Attributes Single");
        assert_eq!(e["request"]["cip"]["class_name"], "Identity");
        assert_eq!(e["request"]["cip"]["path"][2]["segment_type"], "attribute");
        assert_eq!(e["response"]["cip"]["status"], "Path Destination Unknown");
        assert_eq!(e["response"]["cip"]["status_extended"], "0701");
    }

    #[test]
    fn multiple_service_packet() {
        // Two Get Attribute Single requests inside a Multiple Service Packet.
        let a = [0x0e, 3, 0x20, 0x01, 0x24, 0x01, 0x30, 0x01];
        let b = [0x0e, 3, 0x20, 0xf5, 0x24, 0x01, 0x30, 0x05];
        let mut inner = vec![2, 0, 6, 0, 14, 0];
        inner.extend_from_slice(&a);
        inner.extend_from_slice(&b);
        let mut cip = vec![0x0a, 2, 0x20, 0x02, 0x24, 0x01];
        cip.extend_from_slice(&inner);
        let mut s = tcp();
        feed(&mut s, Direction::ToServer, &rr(7, &cip));
        let t = s.tx(0).unwrap();
        assert_eq!(
            t.uints(UintField::EnipCipClass, Direction::ToServer),
            vec![2, 1, 0xf5]
        );
        assert!(t.cip_service(
            Direction::ToServer,
            &CipServiceSpec::parse("14,245,5").unwrap()
        ));
        assert_eq!(
            t.eve()["request"]["cip"]["multiple"][1]["class_name"],
            "TCP/IP Interface"
        );
    }

    #[test]
    fn byte_at_a_time_and_gap() {
        let req = rr(1, &[0x0e, 3, 0x20, 0x01, 0x24, 0x01, 0x30, 0x07]);
        let mut s = tcp();
        for b in &req {
            feed(&mut s, Direction::ToServer, std::slice::from_ref(b));
        }
        assert_eq!(s.transactions().count(), 1);
        // After a gap, bytes that are not a header are skipped, the next
        // header resumes.
        s.on_gap(Direction::ToServer);
        feed(&mut s, Direction::ToServer, &req[10..]);
        assert_eq!(s.transactions().count(), 1);
        feed(&mut s, Direction::ToServer, &req);
        assert_eq!(s.transactions().count(), 2);
    }

    #[test]
    fn invalid_and_unmatched() {
        let mut s = tcp();
        // SendRRData whose item claims more bytes than there are.
        let bad = pdu(
            CMD_SEND_RRDATA,
            1,
            &[0, 0, 0, 0, 0, 0, 1, 0, 0xb2, 0, 50, 0],
        );
        let ev = feed(&mut s, Direction::ToServer, &bad);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Enip(EnipEvent::InvalidPdu, Some(0))]
        );
        // A RegisterSession response with no request is its own transaction.
        let reg = pdu(CMD_REGISTER_SESSION, 5, &[1, 0, 0, 0]);
        feed(&mut s, Direction::ToClient, &reg);
        assert_eq!(s.transactions().count(), 2);
        let t = s.tx(1).unwrap();
        assert_eq!(
            t.uints(UintField::EnipProtocolVersion, Direction::ToClient),
            vec![1]
        );
        assert!(t.request.is_none());
        // The earlier request was passed by: done.
        assert!(s.tx(0).unwrap().done);
        assert!(!probe(&header(0x99, 0, 0, 0)));
        assert!(!probe(&header(CMD_REGISTER_SESSION, 3, 0, 0)));
        assert!(!probe(&header(0x63, 0, 0, 7)));
    }

    #[test]
    fn udp_datagrams_and_cap() {
        let cfg = AppLayerConfig {
            max_transactions: 2,
            ..Default::default()
        };
        let mut s = EnipState::new(Transport::Udp, &cfg);
        let req = header(CMD_LIST_IDENTITY, 0, 0, 0);
        feed(&mut s, Direction::ToServer, &req);
        feed(&mut s, Direction::ToServer, &req);
        let ev = feed(&mut s, Direction::ToServer, &req);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Enip(EnipEvent::TooManyTransactions, Some(2))]
        );
        // A truncated datagram is ignored.
        assert!(feed(&mut s, Direction::ToClient, &identity_response()[..30]).is_empty());
        assert_eq!(s.transactions().count(), 2);
    }
}
