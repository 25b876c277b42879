//! IKE (Suricata's `rust/src/ike`) over UDP ports 500 and 4500 (behind
//! the 4-byte non-ESP marker on 4500): a datagram is a message
//! ([`crate::msg`]) and a transaction of its own direction.
//!
//! IKEv1 (ISAKMP) is parsed here: `ipsec-parser` (rusticata) decodes
//! IKEv2 only, and ISAKMP's header and payload chain are a few fixed
//! fields (Suricata's own `ikev1.rs` is the same walk). The security
//! association's proposals and transforms, key exchange, nonce and vendor
//! IDs are kept per message and summed up per side for the record (the
//! client's and the server's key exchange and nonce, the server's chosen
//! transform). IKEv2 messages are decoded by `ipsec-parser`: their
//! proposals' transforms (the server's are the chosen ones), key
//! exchange, nonce and notify types, with Suricata's weak-crypto checks.
//!
//! Buffers: `ike.init_spi` (to server), `ike.resp_spi` (to client), both
//! as 16 hex digits; `ike.vendor` (to server, each vendor ID in hex),
//! `ike.key_exchange_payload`, `ike.nonce_payload` (the raw data).
//! Integers: `ike.exchtype`, `ike.key_exchange_payload_length`,
//! `ike.nonce_payload_length`, `ike.chosen_sa_attribute:<name>=<n>` (to
//! client: the server's chosen transform).

use std::fmt::Write as _;

use ipsec_parser::{
    parse_ikev2_payload_list, IkePayloadType, IkeTransformAuthType, IkeTransformDHType,
    IkeTransformEncType, IkeTransformPRFType, IkeV2PayloadContent, IkeV2Transform, ProtocolID,
};
use serde_json::{json, Map, Value};

use crate::events::IkeEvent;
use crate::msg::{MsgProto, MsgTxData, Parsed};
use crate::{AppLayerEvent, AppProto, BufferId, Direction, TxId};

/// IKE's ports (4500: NAT traversal).
pub const PORTS: [u16; 2] = [500, 4500];

/// Most transforms, vendor IDs and notify types kept per message.
pub const MAX_ITEMS: usize = 64;

/// One SA attribute: its type and value (a number when it fits in 8
/// bytes, else the bytes in hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaAttribute {
    pub kind: u16,
    pub value: Option<u64>,
    pub hex: Option<String>,
}

/// Suricata's names of the IKEv1 attribute types (`ike.chosen_sa_attribute`).
const ATTR_NAMES: [(u16, &str); 16] = [
    (1, "alg_enc"),
    (2, "alg_hash"),
    (3, "alg_auth"),
    (4, "alg_dh"),
    (5, "sa_group_type"),
    (6, "sa_group_prime"),
    (7, "sa_group_generator_one"),
    (8, "sa_group_generator_two"),
    (9, "sa_group_curve_a"),
    (10, "sa_group_curve_b"),
    (11, "sa_life_type"),
    (12, "sa_life_duration"),
    (13, "alg_prf"),
    (14, "sa_key_length"),
    (15, "sa_field_size"),
    (16, "sa_group_order"),
];

/// The attribute type an `ike.chosen_sa_attribute` name denotes.
pub fn attribute_by_name(name: &str) -> Option<u16> {
    ATTR_NAMES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(name.trim()))
        .map(|(k, _)| *k)
}

fn attribute_name(kind: u16) -> String {
    ATTR_NAMES
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or_else(|| format!("attr_{kind}"), |(_, n)| (*n).to_string())
}

/// Suricata's names of the values of the common IKEv1 attributes.
fn attribute_value_name(kind: u16, v: u64) -> &'static str {
    match (kind, v) {
        (1, 1) => "EncDesCbc",
        (1, 2) => "EncIdeaCbc",
        (1, 3) => "EncBlowfishCbc",
        (1, 4) => "EncRc5R16B64Cbc",
        (1, 5) => "Enc3DesCbc",
        (1, 6) => "EncCastCbc",
        (1, 7) => "EncAesCbc",
        (1, 8) => "EncCamelliaCbc",
        (2, 1) => "HashMd5",
        (2, 2) => "HashSha",
        (2, 3) => "HashTiger",
        (2, 4) => "HashSha2_256",
        (2, 5) => "HashSha2_384",
        (2, 6) => "HashSha2_512",
        (3, 1) => "AuthPreSharedKey",
        (3, 2) => "AuthDssSignatures",
        (3, 3) => "AuthRsaSignatures",
        (3, 4) => "AuthEncryptionWithRsa",
        (3, 5) => "AuthRevisedEncryptionWithRsa",
        (4, 1) => "GroupDefault768BitModp",
        (4, 2) => "GroupAlternate1024BitModpGroup",
        (4, 3) => "GroupEc2nOnGp2p155",
        (4, 4) => "GroupEc2nOnGp2p185",
        (4, 5) => "GroupModp1536Bit",
        (11, 1) => "LifeTypeSeconds",
        (11, 2) => "LifeTypeKilobytes",
        _ => "Unknown",
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// One IKE message.
#[derive(Debug, Clone, Default)]
pub struct IkeTx {
    pub dir: Option<Direction>,
    pub version_major: u8,
    pub version_minor: u8,
    /// 16 hex digits each.
    pub init_spi: String,
    pub resp_spi: String,
    pub exchange_type: u8,
    pub message_id: u32,
    pub flags: u8,
    /// Payload type names, first appearance first.
    pub payloads: Vec<&'static str>,
    /// IKEv1: the transforms of the SA's proposals (attribute lists).
    pub transforms: Vec<Vec<SaAttribute>>,
    /// IKEv2: the transforms (type, id) of the SA's proposals.
    pub v2_transforms: Vec<(u8, u16)>,
    pub key_exchange: Vec<u8>,
    pub nonce: Vec<u8>,
    /// Hex.
    pub vendor_ids: Vec<String>,
    pub encrypted: bool,
    pub notify: Vec<u16>,
}

impl IkeTx {
    fn v1(&self) -> bool {
        self.version_major == 1
    }

    fn add_payload(&mut self, name: &'static str) {
        if !self.payloads.contains(&name) {
            self.payloads.push(name);
        }
    }

    /// The chosen (server's first) transform's value of an attribute.
    fn chosen(&self, kind: u16) -> Option<u64> {
        if self.v1() {
            self.transforms
                .first()?
                .iter()
                .find(|a| a.kind == kind)
                .and_then(|a| a.value)
        } else {
            // IKEv2 transform types: 1 encryption, 2 PRF, 3 integrity, 4 DH.
            let t = match kind {
                1 => 1,
                13 => 2,
                3 => 3,
                4 => 4,
                _ => return None,
            };
            self.v2_transforms
                .iter()
                .find(|(ty, _)| *ty == t)
                .map(|(_, id)| u64::from(*id))
        }
    }
}

impl MsgTxData for IkeTx {
    fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        let to_server = self.dir == Some(Direction::ToServer);
        match id {
            BufferId::IkeInitSpi if to_server => vec![self.init_spi.as_bytes()],
            BufferId::IkeRespSpi if !to_server => vec![self.resp_spi.as_bytes()],
            BufferId::IkeVendor if to_server => {
                self.vendor_ids.iter().map(|v| v.as_bytes()).collect()
            }
            BufferId::IkeKeyExchange if self.v1() && !self.key_exchange.is_empty() => {
                vec![&self.key_exchange[..]]
            }
            BufferId::IkeNonce if self.v1() && !self.nonce.is_empty() => vec![&self.nonce[..]],
            _ => Vec::new(),
        }
    }

    fn ints(&self, key: &str) -> Vec<i64> {
        let len = |b: &Vec<u8>| -> Vec<i64> {
            if self.v1() && !b.is_empty() {
                i64::try_from(b.len()).ok().into_iter().collect()
            } else {
                Vec::new()
            }
        };
        match key {
            "ike.exchtype" => vec![i64::from(self.exchange_type)],
            "ike.key_exchange_payload_length" => len(&self.key_exchange),
            "ike.nonce_payload_length" => len(&self.nonce),
            k => match k
                .strip_prefix("ike.chosen_sa_attribute:")
                .and_then(|n| n.parse::<u16>().ok())
            {
                Some(kind) if self.dir == Some(Direction::ToClient) => self
                    .chosen(kind)
                    .and_then(|v| i64::try_from(v).ok())
                    .into_iter()
                    .collect(),
                _ => Vec::new(),
            },
        }
    }

    fn eve(&self) -> Value {
        Ike::default().eve_of(self)
    }
}

/// One side's exchange so far (IKEv1).
#[derive(Debug, Default, Clone)]
struct SideInfo {
    key_exchange: Vec<u8>,
    nonce: Vec<u8>,
    transforms: Vec<Vec<SaAttribute>>,
}

impl SideInfo {
    fn update(&mut self, tx: &IkeTx) {
        if !tx.key_exchange.is_empty() {
            self.key_exchange = tx.key_exchange.clone();
        }
        if !tx.nonce.is_empty() {
            self.nonce = tx.nonce.clone();
        }
        for t in &tx.transforms {
            if self.transforms.len() < MAX_ITEMS {
                self.transforms.push(t.clone());
            }
        }
    }

    fn eve(&self, m: &mut Map<String, Value>) {
        if !self.key_exchange.is_empty() {
            m.insert(
                "key_exchange_payload".into(),
                json!(hex(&self.key_exchange)),
            );
            m.insert(
                "key_exchange_payload_length".into(),
                json!(self.key_exchange.len()),
            );
        }
        if !self.nonce.is_empty() {
            m.insert("nonce_payload".into(), json!(hex(&self.nonce)));
            m.insert("nonce_payload_length".into(), json!(self.nonce.len()));
        }
    }
}

fn attributes_eve(t: &[SaAttribute], out: &mut Vec<Value>) {
    for a in t {
        let mut o = Map::new();
        o.insert("key".into(), json!(attribute_name(a.kind)));
        match (a.value, &a.hex) {
            (Some(v), _) => {
                o.insert("value".into(), json!(attribute_value_name(a.kind, v)));
                o.insert("raw".into(), json!(v));
            }
            (None, Some(h)) => {
                o.insert("value".into(), json!(h));
            }
            _ => {}
        }
        out.push(Value::Object(o));
    }
}

/// Per-flow IKE parser state.
#[derive(Debug, Default)]
pub struct Ike {
    /// Messages came behind the 4-byte non-ESP marker (NAT traversal,
    /// port 4500): a datagram without it is ESP, not IKE.
    nat_t: bool,
    doi: Option<u32>,
    client: SideInfo,
    server: SideInfo,
    /// IKEv2: the server's chosen transforms so far.
    server_v2: Vec<(u8, u16)>,
    errors: u32,
}

impl Ike {
    pub fn new() -> Self {
        Ike::default()
    }

    /// Suricata's `ike` object: the message, with the exchange so far.
    fn eve_of(&self, tx: &IkeTx) -> Value {
        let mut m = Map::new();
        // The version of Suricata's IKE record layout.
        m.insert("_v".into(), json!(2));
        m.insert("version_major".into(), json!(tx.version_major));
        m.insert("version_minor".into(), json!(tx.version_minor));
        m.insert("init_spi".into(), json!(tx.init_spi));
        m.insert("resp_spi".into(), json!(tx.resp_spi));
        m.insert("message_id".into(), json!(tx.message_id));
        m.insert("exchange_type".into(), json!(tx.exchange_type));
        if tx.v1() {
            let mut attrs = Vec::new();
            if let Some(t) = self.server.transforms.first() {
                attributes_eve(t, &mut attrs);
            }
            if !attrs.is_empty() {
                m.insert("attributes".into(), Value::Array(attrs));
            }
        } else {
            let role = if tx.flags & 0x08 != 0 {
                "initiator"
            } else {
                "responder"
            };
            m.insert("role".into(), json!(role));
            let attrs: Vec<Value> = self
                .server_v2
                .iter()
                .filter_map(|(t, id)| Some(json!({"key": v2_transform_key(*t)?, "raw": id})))
                .collect();
            if !attrs.is_empty() {
                m.insert("attributes".into(), Value::Array(attrs));
            }
        }
        if !tx.payloads.is_empty() {
            m.insert("payload".into(), json!(tx.payloads));
        }
        if tx.v1() {
            let mut v1 = Map::new();
            if let Some(d) = self.doi {
                v1.insert("doi".into(), json!(d));
            }
            v1.insert("encrypted_payloads".into(), json!(tx.encrypted));
            if !tx.encrypted {
                let mut client = Map::new();
                self.client.eve(&mut client);
                if tx.dir == Some(Direction::ToServer) && !tx.transforms.is_empty() {
                    let mut props = Vec::new();
                    for t in &tx.transforms {
                        attributes_eve(t, &mut props);
                    }
                    client.insert("proposals".into(), Value::Array(props));
                }
                v1.insert("client".into(), Value::Object(client));
                let mut server = Map::new();
                self.server.eve(&mut server);
                if !server.is_empty() {
                    v1.insert("server".into(), Value::Object(server));
                }
                if !tx.vendor_ids.is_empty() {
                    v1.insert("vendor_ids".into(), json!(tx.vendor_ids));
                }
            }
            m.insert("ikev1".into(), Value::Object(v1));
        } else {
            let mut v2 = Map::new();
            v2.insert("errors".into(), json!(self.errors));
            if !tx.notify.is_empty() {
                v2.insert("notify".into(), json!(tx.notify));
            }
            m.insert("ikev2".into(), Value::Object(v2));
        }
        Value::Object(m)
    }
}

/// The `attributes` key of a chosen IKEv2 transform. Suricata's EVE
/// schema allows IKEv1's names only, so the PRF and ESN transforms (and
/// unknown ones) are not listed.
fn v2_transform_key(t: u8) -> Option<&'static str> {
    match t {
        1 => Some("alg_enc"),
        3 => Some("alg_auth"),
        4 => Some("alg_dh"),
        _ => None,
    }
}

/// IKEv1 payload type names (Suricata's `IsakmpPayloadType`).
fn v1_payload_name(t: u8) -> Option<&'static str> {
    Some(match t {
        1 => "SecurityAssociation",
        2 => "Proposal",
        3 => "Transform",
        4 => "KeyExchange",
        5 => "Identification",
        6 => "Certificate",
        7 => "CertificateRequest",
        8 => "Hash",
        9 => "Signature",
        10 => "Nonce",
        11 => "Notification",
        12 => "Delete",
        13 => "VendorID",
        15 => "SaKekPayload",
        16 => "SaTekPayload",
        17 => "KeyDownload",
        18 => "SequenceNumber",
        19 => "ProofOfPossession",
        20 => "NatDiscovery",
        21 => "NatOriginalAddress",
        22 => "GroupAssociatedPolicy",
        _ => return None,
    })
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Walks a chain of generic payloads (`next`, reserved, length) starting
/// with type `first`; calls `f(type, body)` for each. `Err` when a length
/// is impossible; `Ok(rest)` with what follows the last payload.
fn walk<'a>(
    mut i: &'a [u8],
    first: u8,
    f: &mut dyn FnMut(u8, &'a [u8]) -> Result<(), ()>,
) -> Result<&'a [u8], ()> {
    let mut ty = first;
    let mut n = 0;
    while ty != 0 {
        n += 1;
        if n > 256 {
            return Err(());
        }
        let next = *i.first().ok_or(())?;
        let len = usize::from(be16(i, 2).ok_or(())?);
        if len < 4 || len > i.len() {
            return Err(());
        }
        f(ty, &i[4..len])?;
        i = &i[len..];
        ty = next;
    }
    Ok(i)
}

/// The SA attributes of an IKEv1 transform.
fn v1_attributes(mut i: &[u8]) -> Result<Vec<SaAttribute>, ()> {
    let mut out = Vec::new();
    while !i.is_empty() {
        let t = be16(i, 0).ok_or(())?;
        let kind = t & 0x7fff;
        if t & 0x8000 != 0 {
            let v = be16(i, 2).ok_or(())?;
            if out.len() < MAX_ITEMS {
                out.push(SaAttribute {
                    kind,
                    value: Some(u64::from(v)),
                    hex: None,
                });
            }
            i = &i[4..];
        } else {
            let len = usize::from(be16(i, 2).ok_or(())?);
            let v = i.get(4..4 + len).ok_or(())?;
            let attr = if len <= 8 {
                SaAttribute {
                    kind,
                    value: Some(v.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b))),
                    hex: None,
                }
            } else {
                SaAttribute {
                    kind,
                    value: None,
                    hex: Some(hex(v)),
                }
            };
            if out.len() < MAX_ITEMS {
                out.push(attr);
            }
            i = &i[4 + len..];
        }
    }
    Ok(out)
}

impl Ike {
    fn v1_payload(&mut self, ty: u8, body: &[u8], tx: &mut IkeTx) -> Result<(), ()> {
        if let Some(n) = v1_payload_name(ty) {
            tx.add_payload(n);
        }
        match ty {
            1 => {
                // DOI, situation, then proposals when the DOI is IPsec.
                let doi = be32(body, 0).ok_or(())?;
                self.doi = Some(doi);
                if doi == 1 {
                    let props = body.get(8..).ok_or(())?;
                    walk(props, 2, &mut |pt, p| self.v1_payload(pt, p, tx))?;
                }
            }
            2 => {
                // Proposal #, protocol, SPI size, #transforms, SPI.
                let spi = usize::from(*body.get(2).ok_or(())?);
                let xf = body.get(4 + spi..).ok_or(())?;
                if !xf.is_empty() {
                    walk(xf, 3, &mut |tt, t| self.v1_payload(tt, t, tx))?;
                }
            }
            3 => {
                let attrs = v1_attributes(body.get(4..).ok_or(())?)?;
                if tx.transforms.len() < MAX_ITEMS {
                    tx.transforms.push(attrs);
                }
            }
            4 => tx.key_exchange = body.to_vec(),
            10 => tx.nonce = body.to_vec(),
            13 if tx.vendor_ids.len() < MAX_ITEMS => tx.vendor_ids.push(hex(body)),
            _ => {}
        }
        Ok(())
    }

    fn v1(&mut self, dir: Direction, body: &[u8], next: u8, tx: &mut IkeTx) -> Vec<IkeEvent> {
        let mut ev = Vec::new();
        tx.encrypted = tx.flags & 0x01 != 0;
        if let Some(n) = v1_payload_name(next) {
            tx.add_payload(n);
        }
        if tx.encrypted {
            return ev;
        }
        match walk(body, next, &mut |t, p| self.v1_payload(t, p, tx)) {
            Ok(rest) => {
                if !rest.is_empty() {
                    ev.push(IkeEvent::PayloadExtraData);
                }
            }
            Err(()) => {
                ev.push(IkeEvent::MalformedData);
                return ev;
            }
        }
        if tx.payloads.contains(&"SecurityAssociation") {
            // A new SA: a new exchange on this flow.
            match dir {
                Direction::ToServer => self.client = SideInfo::default(),
                Direction::ToClient => self.server = SideInfo::default(),
            }
        }
        match dir {
            Direction::ToServer => self.client.update(tx),
            Direction::ToClient => {
                let before = self.server.transforms.len();
                if before <= 1 && before + tx.transforms.len() > 1 {
                    ev.push(IkeEvent::MultipleServerProposal);
                }
                self.server.update(tx);
            }
        }
        ev
    }

    fn v2(&mut self, dir: Direction, body: &[u8], next: u8, tx: &mut IkeTx) -> Vec<IkeEvent> {
        let mut ev = Vec::new();
        let payloads = match parse_ikev2_payload_list(body, IkePayloadType(next)) {
            Ok((_, Ok(p))) => p,
            _ => {
                ev.push(IkeEvent::MalformedData);
                return ev;
            }
        };
        let mut ty = next;
        for p in payloads {
            let name = v2_payload_name(ty);
            tx.add_payload(name);
            ty = p.hdr.next_payload_type.0;
            match p.content {
                IkeV2PayloadContent::SA(props) => {
                    for prop in props.iter().take(MAX_ITEMS) {
                        let xf: Vec<IkeV2Transform> =
                            prop.transforms.iter().map(IkeV2Transform::from).collect();
                        v2_checks(prop.protocol_id, &xf, &mut ev);
                        let raw: Vec<(u8, u16)> = prop
                            .transforms
                            .iter()
                            .map(|t| (t.transform_type.0, t.transform_id))
                            .collect();
                        if dir == Direction::ToClient {
                            if !self.server_v2.is_empty() || props.len() > 1 {
                                ev.push(IkeEvent::MultipleServerProposal);
                            }
                            self.server_v2 = raw.clone();
                        }
                        for r in raw {
                            if tx.v2_transforms.len() < MAX_ITEMS {
                                tx.v2_transforms.push(r);
                            }
                        }
                    }
                }
                IkeV2PayloadContent::KE(k) => tx.key_exchange = k.kex_data.to_vec(),
                IkeV2PayloadContent::Nonce(n) => tx.nonce = n.nonce_data.to_vec(),
                IkeV2PayloadContent::Notify(n) => {
                    if n.notify_type.0 < 16384 {
                        self.errors = self.errors.saturating_add(1);
                    }
                    if tx.notify.len() < MAX_ITEMS {
                        tx.notify.push(n.notify_type.0);
                    }
                }
                IkeV2PayloadContent::VendorID(v) if tx.vendor_ids.len() < MAX_ITEMS => {
                    tx.vendor_ids.push(hex(v.vendor_id));
                }
                IkeV2PayloadContent::Encrypted(_) => tx.encrypted = true,
                _ => {}
            }
        }
        ev
    }
}

fn v2_payload_name(t: u8) -> &'static str {
    match t {
        33 => "SecurityAssociation",
        34 => "KeyExchange",
        35 => "IdentInitiator",
        36 => "IdentResponder",
        37 => "Certificate",
        38 => "CertificateRequest",
        39 => "Authentication",
        40 => "Nonce",
        41 => "Notify",
        42 => "Delete",
        43 => "VendorID",
        44 => "TrafficSelectorInitiator",
        45 => "TrafficSelectorResponder",
        46 => "EncryptedAndAuthenticated",
        47 => "Configuration",
        48 => "ExtensibleAuthentication",
        _ => "Unknown",
    }
}

/// Suricata's checks of an IKEv2 proposal: weak or unknown transforms,
/// no DH, AH (no encryption), no integrity without an AEAD cipher.
fn v2_checks(proto: ProtocolID, xf: &[IkeV2Transform], ev: &mut Vec<IkeEvent>) {
    let mut push = |e| {
        if !ev.contains(&e) {
            ev.push(e);
        }
    };
    for t in xf {
        match *t {
            IkeV2Transform::Encryption(e) => {
                if matches!(
                    e,
                    IkeTransformEncType::ENCR_DES_IV64
                        | IkeTransformEncType::ENCR_DES
                        | IkeTransformEncType::ENCR_3DES
                        | IkeTransformEncType::ENCR_RC5
                        | IkeTransformEncType::ENCR_IDEA
                        | IkeTransformEncType::ENCR_CAST
                        | IkeTransformEncType::ENCR_BLOWFISH
                        | IkeTransformEncType::ENCR_3IDEA
                        | IkeTransformEncType::ENCR_DES_IV32
                        | IkeTransformEncType::ENCR_NULL
                ) {
                    push(IkeEvent::WeakCryptoEnc);
                }
            }
            IkeV2Transform::PRF(p) => {
                if p == IkeTransformPRFType::PRF_NULL {
                    push(IkeEvent::InvalidProposal);
                } else if matches!(
                    p,
                    IkeTransformPRFType::PRF_HMAC_MD5 | IkeTransformPRFType::PRF_HMAC_SHA1
                ) {
                    push(IkeEvent::WeakCryptoPrf);
                }
            }
            IkeV2Transform::Auth(a) => {
                if matches!(
                    a,
                    IkeTransformAuthType::AUTH_HMAC_MD5_96
                        | IkeTransformAuthType::AUTH_HMAC_SHA1_96
                        | IkeTransformAuthType::AUTH_DES_MAC
                        | IkeTransformAuthType::AUTH_KPDK_MD5
                        | IkeTransformAuthType::AUTH_AES_XCBC_96
                        | IkeTransformAuthType::AUTH_HMAC_MD5_128
                        | IkeTransformAuthType::AUTH_HMAC_SHA1_160
                ) {
                    push(IkeEvent::WeakCryptoAuth);
                }
            }
            IkeV2Transform::DH(d) => {
                if matches!(
                    d,
                    IkeTransformDHType::None
                        | IkeTransformDHType::Modp768
                        | IkeTransformDHType::Modp1024
                        | IkeTransformDHType::Modp1024s160
                        | IkeTransformDHType::Modp1536
                ) {
                    push(IkeEvent::WeakCryptoDh);
                }
            }
            IkeV2Transform::Unknown(..) => push(IkeEvent::UnknownProposal),
            IkeV2Transform::ESN(_) => {}
        }
    }
    if !xf.iter().any(|t| matches!(t, IkeV2Transform::DH(_))) {
        push(IkeEvent::WeakCryptoNoDh);
    }
    if proto == ProtocolID::AH {
        push(IkeEvent::NoEncryption);
    }
    let integrity = xf
        .iter()
        .any(|t| matches!(t, IkeV2Transform::Auth(a) if *a != IkeTransformAuthType::NONE));
    let aead = xf
        .iter()
        .any(|t| matches!(t, IkeV2Transform::Encryption(e) if e.is_aead()));
    if !integrity && !aead {
        push(IkeEvent::WeakCryptoNoAuth);
    }
}

impl MsgProto for Ike {
    type Tx = IkeTx;
    type Event = IkeEvent;
    const PROTO: AppProto = AppProto::Ike;
    const TCP_RECORDS: bool = false;

    fn parse(&mut self, dir: Direction, mut i: &[u8]) -> Parsed<IkeTx, IkeEvent> {
        let mut out = Parsed::default();
        match strip_marker(i) {
            Some(rest) => {
                self.nat_t = true;
                i = rest;
            }
            // ESP on a NAT-traversal flow.
            None if self.nat_t => return out,
            None => {}
        }
        if i.len() < 28 {
            out.events.push(IkeEvent::MalformedData);
            return out;
        }
        let total = be32(i, 24)
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(0);
        if total < 28 || total > i.len() {
            out.events.push(IkeEvent::MalformedData);
            return out;
        }
        let next = i[16];
        let mut tx = IkeTx {
            dir: Some(dir),
            version_major: i[17] >> 4,
            version_minor: i[17] & 0x0f,
            init_spi: hex(&i[0..8]),
            resp_spi: hex(&i[8..16]),
            exchange_type: i[18],
            flags: i[19],
            message_id: be32(i, 20).unwrap_or(0),
            ..Default::default()
        };
        let body = &i[28..total];
        let ev = match tx.version_major {
            1 => self.v1(dir, body, next, &mut tx),
            2 => self.v2(dir, body, next, &mut tx),
            _ => {
                out.events.push(IkeEvent::MalformedData);
                return out;
            }
        };
        if total < i.len() {
            out.events.push(IkeEvent::PayloadExtraData);
        }
        out.txs.push(tx);
        out.events.splice(0..0, ev);
        out
    }

    fn event(e: IkeEvent, tx: Option<TxId>) -> AppLayerEvent {
        AppLayerEvent::Ike(e, tx)
    }

    fn malformed() -> IkeEvent {
        IkeEvent::MalformedData
    }

    fn too_many() -> IkeEvent {
        IkeEvent::TooManyTransactions
    }

    fn eve(&self, tx: &IkeTx) -> Value {
        self.eve_of(tx)
    }
}

/// The message after a non-ESP marker (four zero bytes, NAT traversal),
/// when the datagram has one: the header's length then fits the rest.
fn strip_marker(i: &[u8]) -> Option<&[u8]> {
    let rest = i.strip_prefix(&[0, 0, 0, 0])?;
    let len = be32(rest, 24)? as usize;
    (len >= 28 && len <= rest.len() && rest.get(17).is_some_and(|v| matches!(v, 0x10 | 0x20)))
        .then_some(rest)
}

/// Suricata's probe: a header of version 1.0 or 2.0 whose length fits
/// the datagram (after the non-ESP marker on port 4500).
pub fn probe(i: &[u8]) -> bool {
    let i = strip_marker(i).unwrap_or(i);
    if i.len() < 28 {
        return false;
    }
    let len = be32(i, 24).unwrap_or(0) as usize;
    matches!(i[17], 0x10 | 0x20) && len >= 28 && len <= i.len()
}

/// IKE messages built from their fields, for tests, fuzz seeds and
/// crafted captures.
pub mod build {
    /// A generic payload: next type, reserved, length, body.
    pub fn payload(next: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![next, 0];
        v.extend_from_slice(&((body.len() + 4) as u16).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    /// A header and its payloads (`first`: the first payload's type).
    pub fn message(
        version: u8,
        exch: u8,
        flags: u8,
        spis: [u64; 2],
        first: u8,
        payloads: &[u8],
    ) -> Vec<u8> {
        let mut v = spis[0].to_be_bytes().to_vec();
        v.extend_from_slice(&spis[1].to_be_bytes());
        v.extend_from_slice(&[first, version, exch, flags]);
        v.extend_from_slice(&0u32.to_be_bytes());
        v.extend_from_slice(&((payloads.len() + 28) as u32).to_be_bytes());
        v.extend_from_slice(payloads);
        v
    }

    /// An IKEv1 SA payload body (IPsec DOI) with one proposal of the
    /// given transforms, each a list of (type, value) basic attributes.
    pub fn v1_sa(transforms: &[&[(u16, u16)]]) -> Vec<u8> {
        let mut xf = Vec::new();
        for (i, attrs) in transforms.iter().enumerate() {
            let mut body = vec![i as u8 + 1, 1, 0, 0];
            for (t, v) in attrs.iter() {
                body.extend_from_slice(&(t | 0x8000).to_be_bytes());
                body.extend_from_slice(&v.to_be_bytes());
            }
            let next = if i + 1 == transforms.len() { 0 } else { 3 };
            xf.extend(payload(next, &body));
        }
        let mut prop = vec![1, 1, 0, transforms.len() as u8];
        prop.extend(xf);
        let mut sa = 1u32.to_be_bytes().to_vec();
        sa.extend_from_slice(&1u32.to_be_bytes());
        sa.extend(payload(0, &prop));
        sa
    }

    /// An IKEv1 main-mode exchange: the initiator's SA offer (two
    /// transforms) with a vendor ID, the responder's choice, then the
    /// key exchange and nonce of each side.
    pub fn v1_main_mode() -> [Vec<u8>; 4] {
        let spis = [0xe47a_591f_d057_587f, 0];
        let both = [0xe47a_591f_d057_587f, 0xa00b_8ef0_902b_b8ec];
        let offer = v1_sa(&[
            &[(1, 7), (14, 128), (2, 2), (4, 2), (3, 1)],
            &[(1, 5), (2, 1), (4, 2), (3, 1)],
        ]);
        let chosen = v1_sa(&[&[
            (1, 7),
            (14, 128),
            (2, 2),
            (4, 2),
            (3, 1),
            (11, 1),
            (12, 3600),
        ]]);
        let mut i1 = payload(13, &offer);
        i1.extend(payload(0, b"\x4a\x13\x1c\x81"));
        let mut kei = payload(10, &[0x35; 128]);
        kei.extend(payload(0, &[0x89; 20]));
        let mut ker = payload(10, &[0x6d; 128]);
        ker.extend(payload(0, &[0x15; 24]));
        [
            message(0x10, 2, 0, spis, 1, &i1),
            message(0x10, 2, 0, both, 1, &payload(0, &chosen)),
            message(0x10, 2, 0, both, 4, &kei),
            message(0x10, 2, 0, both, 4, &ker),
        ]
    }

    /// An IKEv2 IKE_SA_INIT request: one proposal (IKE) of the given
    /// transforms (type, id), a key exchange and a nonce.
    pub fn v2_sa_init(flags: u8, transforms: &[(u8, u16)]) -> Vec<u8> {
        let mut xf = Vec::new();
        for (i, (t, id)) in transforms.iter().enumerate() {
            let last = if i + 1 == transforms.len() { 0 } else { 3 };
            let mut body = vec![*t, 0];
            body.extend_from_slice(&id.to_be_bytes());
            xf.extend(payload(last, &body));
        }
        let mut prop = vec![1, 1, 0, transforms.len() as u8];
        prop.extend(xf);
        let sa = payload(0, &prop);
        let mut p = payload(34, &sa);
        let mut ke = 14u16.to_be_bytes().to_vec();
        ke.extend_from_slice(&[0, 0]);
        ke.extend_from_slice(&[0xab; 64]);
        p.extend(payload(40, &ke));
        p.extend(payload(0, &[0x11; 32]));
        message(0x20, 34, flags, [0x1122_3344_5566_7788, 0], 33, &p)
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use crate::msg::{MsgParser, MsgState};
    use crate::{AppLayerConfig, Timestamp, Transport};

    fn state() -> MsgState<Ike> {
        MsgState::new(Ike::new(), Transport::Udp, &AppLayerConfig::default())
    }

    fn names(ev: &[AppLayerEvent]) -> Vec<&'static str> {
        ev.iter().map(|e| e.name()).collect()
    }

    #[test]
    fn v1_main_mode_buffers_and_record() {
        let mut s = state();
        let mut ev = Vec::new();
        let [i1, r1, i2, r2] = v1_main_mode();
        let ts = Timestamp::default();
        s.feed(Direction::ToServer, &i1, ts, &mut ev);
        s.feed(Direction::ToClient, &r1, ts, &mut ev);
        s.feed(Direction::ToServer, &i2, ts, &mut ev);
        s.feed(Direction::ToClient, &r2, ts, &mut ev);
        assert!(ev.is_empty(), "{ev:?}");
        let txs: Vec<_> = s.transactions().collect();
        assert_eq!(txs.len(), 4);
        assert_eq!(
            txs[0].data.buffers(BufferId::IkeInitSpi),
            vec![&b"e47a591fd057587f"[..]]
        );
        // The initiator's SPI to server only, the responder's to client.
        assert!(txs[1].data.buffers(BufferId::IkeInitSpi).is_empty());
        assert_eq!(
            txs[1].data.buffers(BufferId::IkeRespSpi),
            vec![&b"a00b8ef0902bb8ec"[..]]
        );
        assert_eq!(
            txs[0].data.buffers(BufferId::IkeVendor),
            vec![&b"4a131c81"[..]]
        );
        assert_eq!(
            txs[2].data.buffers(BufferId::IkeKeyExchange),
            vec![&[0x35u8; 128][..]]
        );
        assert_eq!(
            txs[3].data.buffers(BufferId::IkeNonce),
            vec![&[0x15u8; 24][..]]
        );
        assert_eq!(
            txs[2].data.ints("ike.key_exchange_payload_length"),
            vec![128]
        );
        assert_eq!(txs[3].data.ints("ike.nonce_payload_length"), vec![24]);
        assert_eq!(txs[0].data.ints("ike.exchtype"), vec![2]);
        // The chosen attributes: the responder's transform, to client.
        let hash = format!(
            "ike.chosen_sa_attribute:{}",
            attribute_by_name("alg_hash").unwrap()
        );
        assert_eq!(txs[1].data.ints(&hash), vec![2]);
        assert!(txs[0].data.ints(&hash).is_empty());
        let dur = format!(
            "ike.chosen_sa_attribute:{}",
            attribute_by_name("sa_life_duration").unwrap()
        );
        assert_eq!(txs[1].data.ints(&dur), vec![3600]);
        // The record sums the exchange up.
        let e = s.eve(3).unwrap();
        assert_eq!(e["init_spi"], "e47a591fd057587f");
        assert_eq!(e["ikev1"]["doi"], 1);
        assert_eq!(e["ikev1"]["client"]["key_exchange_payload_length"], 128);
        assert_eq!(e["ikev1"]["server"]["nonce_payload"], hex(&[0x15; 24]));
        assert_eq!(
            e["attributes"][0],
            json!({"key": "alg_enc", "value": "EncAesCbc", "raw": 7})
        );
        assert_eq!(e["payload"], json!(["KeyExchange", "Nonce"]));
        // The first message's record, written later, carries the
        // exchange as it is then (as Suricata's, logged at its packet).
        let first = s.eve(0).unwrap();
        assert_eq!(first["attributes"], e["attributes"]);
        assert_eq!(
            first["ikev1"]["client"]["proposals"]
                .as_array()
                .unwrap()
                .len(),
            9
        );
        assert_eq!(first["ikev1"]["vendor_ids"], json!(["4a131c81"]));
    }

    #[test]
    fn v1_malformed_truncated_extra_and_multiple_proposals() {
        let mut s = state();
        let mut ev = Vec::new();
        let [i1, ..] = v1_main_mode();
        let ts = Timestamp::default();
        for cut in [0, 10, 27, 40] {
            s.feed(Direction::ToServer, &i1[..cut], ts, &mut ev);
        }
        assert_eq!(names(&ev), ["MALFORMED_DATA"; 3]);
        // A payload length past the message.
        ev.clear();
        let mut bad = i1.clone();
        bad[30] = 0xff;
        s.feed(Direction::ToServer, &bad, ts, &mut ev);
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
        // Bytes after the message.
        ev.clear();
        let mut extra = i1.clone();
        extra.extend_from_slice(b"xx");
        s.feed(Direction::ToServer, &extra, ts, &mut ev);
        assert_eq!(names(&ev), ["PAYLOAD_EXTRA_DATA"]);
        // A responder answering with two transforms.
        ev.clear();
        let two = v1_sa(&[&[(1, 7)], &[(1, 5)]]);
        let m = message(0x10, 2, 0, [1, 2], 1, &payload(0, &two));
        s.feed(Direction::ToClient, &m, ts, &mut ev);
        assert_eq!(names(&ev), ["MULTIPLE_SERVER_PROPOSAL"]);
        // Encrypted payloads are not walked.
        ev.clear();
        let enc = message(0x10, 2, 1, [1, 2], 5, &[0xee; 40]);
        s.feed(Direction::ToServer, &enc, ts, &mut ev);
        assert!(ev.is_empty());
        let e = s.eve(s.transactions().last().unwrap().id()).unwrap();
        assert_eq!(e["ikev1"], json!({"doi": 1, "encrypted_payloads": true}));
    }

    #[test]
    fn v2_transforms_and_weak_crypto() {
        let mut s = state();
        let mut ev = Vec::new();
        let ts = Timestamp::default();
        // AES-CBC, PRF SHA1 (weak), integrity SHA1-96 (weak), DH 14.
        let m = v2_sa_init(0x08, &[(1, 12), (2, 2), (3, 2), (4, 14)]);
        s.feed(Direction::ToServer, &m, ts, &mut ev);
        assert_eq!(names(&ev), ["WEAK_CRYPTO_PRF", "WEAK_CRYPTO_AUTH"]);
        // The responder picks DES without DH.
        ev.clear();
        s.feed(
            Direction::ToClient,
            &v2_sa_init(0x20, &[(1, 2), (2, 5), (3, 12)]),
            ts,
            &mut ev,
        );
        assert_eq!(names(&ev), ["WEAK_CRYPTO_ENC", "WEAK_CRYPTO_NO_DH"]);
        let txs: Vec<_> = s.transactions().collect();
        assert_eq!(txs[1].data.ints("ike.chosen_sa_attribute:1"), vec![2]);
        assert_eq!(txs[0].data.ints("ike.exchtype"), vec![34]);
        // IKEv2 key exchange and nonce are not the v1 buffers.
        assert!(txs[0].data.buffers(BufferId::IkeKeyExchange).is_empty());
        let e = s.eve(0).unwrap();
        assert_eq!(e["version_major"], 2);
        assert_eq!(e["role"], "initiator");
        assert_eq!(
            e["payload"],
            json!(["SecurityAssociation", "KeyExchange", "Nonce"])
        );
        // Unknown transform type.
        ev.clear();
        s.feed(
            Direction::ToServer,
            &v2_sa_init(0x08, &[(1, 20), (4, 19), (9, 1)]),
            ts,
            &mut ev,
        );
        assert_eq!(names(&ev), ["UNKNOWN_PROPOSAL"]);
    }

    #[test]
    fn nat_traversal_marker_and_probe() {
        let [i1, ..] = v1_main_mode();
        let mut nat = vec![0, 0, 0, 0];
        nat.extend_from_slice(&i1);
        assert!(probe(&i1) && probe(&nat));
        assert!(!probe(&i1[..20]));
        assert!(!probe(
            b"\x00\x00\x00\x01ESP packet bytes......................"
        ));
        let mut s = state();
        let mut ev = Vec::new();
        let ts = Timestamp::default();
        s.feed(Direction::ToServer, &nat, ts, &mut ev);
        // ESP on the same flow is not IKE.
        s.feed(Direction::ToServer, &[0x12; 60], ts, &mut ev);
        assert!(ev.is_empty());
        assert_eq!(s.transactions().count(), 1);
    }
}
