//! SNMP (Suricata's `rust/src/snmp`), over UDP: a datagram is a message
//! ([`crate::msg`]), decoded by `snmp-parser` (rusticata, what Suricata
//! uses): v1 and v2c with their community, v3 with its USM user name
//! (an encrypted v3 PDU is logged as `encrypted`). Every message is a
//! transaction of its own direction.
//!
//! Buffers: `snmp.community`, `snmp.usm`, `snmp.trap_oid` (the v1 trap's
//! enterprise OID, dotted) and `snmp.trap_address` (its agent address).
//! Integers: `snmp.version` (the flow's version: 1, 2 or 3),
//! `snmp.pdu_type` (numbers or names: `get_request` ...),
//! `snmp.trap_type` (`cold_start` ...). Events: `malformed_data` (a
//! message that does not decode), `version_mismatch` (a message of
//! another version than the flow's first), `unknown_security_model` (a
//! v3 message whose security model is not USM).

use serde_json::{json, Map, Value};
use snmp_parser::{
    parse_snmp_generic_message, NetworkAddress, ScopedPduData, SecurityParameters,
    SnmpGenericMessage, SnmpPdu, TrapType,
};

use crate::events::SnmpEvent;
use crate::msg::{MsgProto, MsgTxData, Parsed};
use crate::{AppLayerEvent, AppProto, BufferId, Direction, TxId};

/// SNMP's ports (agent, trap receiver).
pub const PORTS: [u16; 2] = [161, 162];

/// Most variable OIDs kept per message.
pub const MAX_VARS: usize = 256;

/// A v1 trap's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trap {
    pub trap_type: u8,
    /// The enterprise OID, dotted.
    pub oid: String,
    pub address: String,
}

/// One SNMP message.
#[derive(Debug, Clone, Default)]
pub struct SnmpTx {
    /// The flow's version (1, 2 or 3).
    pub version: u32,
    /// `None` for an encrypted v3 PDU.
    pub pdu_type: Option<u32>,
    pub error: u32,
    pub trap: Option<Trap>,
    /// The variables' OIDs, dotted.
    pub vars: Vec<String>,
    pub community: Option<String>,
    pub usm: Option<String>,
    pub encrypted: bool,
}

/// Suricata's names of the PDU types (EVE `pdu_type`, `snmp.pdu_type`).
const PDU_NAMES: [&str; 9] = [
    "get_request",
    "get_next_request",
    "response",
    "set_request",
    "trap_v1",
    "get_bulk_request",
    "inform_request",
    "trap_v2",
    "report",
];

fn pdu_name(t: u32) -> String {
    usize::try_from(t)
        .ok()
        .and_then(|i| PDU_NAMES.get(i))
        .map_or_else(|| t.to_string(), |n| (*n).to_string())
}

/// The PDU type a `snmp.pdu_type` name denotes (`get_request`, or the
/// crate's `GetRequest`).
pub fn pdu_type_by_name(name: &str) -> Option<u32> {
    let n: String = name.trim().chars().filter(|c| *c != '_').collect();
    PDU_NAMES
        .iter()
        .position(|p| p.replace('_', "").eq_ignore_ascii_case(&n))
        .and_then(|i| u32::try_from(i).ok())
}

/// The generic trap a `snmp.trap_type` name denotes (`cold_start`,
/// `coldStart` ...).
pub fn trap_type_by_name(name: &str) -> Option<u8> {
    let n: String = name.trim().chars().filter(|c| *c != '_').collect();
    (0u8..=6).find(|&t| format!("{:?}", TrapType(t)).eq_ignore_ascii_case(&n))
}

impl MsgTxData for SnmpTx {
    fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        let v = match id {
            BufferId::SnmpCommunity => self.community.as_deref(),
            BufferId::SnmpUsm => self.usm.as_deref(),
            BufferId::SnmpTrapOid => self.trap.as_ref().map(|t| t.oid.as_str()),
            BufferId::SnmpTrapAddress => self.trap.as_ref().map(|t| t.address.as_str()),
            _ => None,
        };
        v.map(str::as_bytes).into_iter().collect()
    }

    fn ints(&self, key: &str) -> Vec<i64> {
        match key {
            "snmp.version" => vec![i64::from(self.version)],
            "snmp.pdu_type" => self.pdu_type.map(i64::from).into_iter().collect(),
            "snmp.trap_type" => self
                .trap
                .as_ref()
                .map(|t| i64::from(t.trap_type))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Suricata's `snmp` object.
    fn eve(&self) -> Value {
        let mut m = Map::new();
        m.insert("version".into(), json!(self.version));
        if self.encrypted {
            m.insert("pdu_type".into(), json!("encrypted"));
        } else {
            if let Some(t) = self.pdu_type {
                m.insert("pdu_type".into(), json!(pdu_name(t)));
                // The PDU's error status is kept for rules but not logged:
                // Suricata's EVE schema has no `error` in `snmp`.
                if let Some(trap) = &self.trap {
                    m.insert(
                        "trap_type".into(),
                        json!(format!("{:?}", TrapType(trap.trap_type))),
                    );
                    m.insert("trap_oid".into(), json!(trap.oid));
                    m.insert("trap_address".into(), json!(trap.address));
                }
                if !self.vars.is_empty() {
                    m.insert("vars".into(), json!(self.vars));
                }
            }
            if let Some(c) = &self.community {
                m.insert("community".into(), json!(c));
            }
            if let Some(u) = &self.usm {
                m.insert("usm".into(), json!(u));
            }
        }
        Value::Object(m)
    }
}

fn pdu_info(pdu: &SnmpPdu, tx: &mut SnmpTx) {
    tx.pdu_type = Some(pdu.pdu_type().0);
    match pdu {
        SnmpPdu::Generic(g) => tx.error = g.err.0,
        SnmpPdu::Bulk(_) => {}
        SnmpPdu::TrapV1(t) => {
            let NetworkAddress::IPv4(a) = t.agent_addr;
            tx.trap = Some(Trap {
                trap_type: t.generic_trap.0,
                oid: t.enterprise.to_id_string(),
                address: a.to_string(),
            });
        }
    }
    tx.vars = pdu
        .vars_iter()
        .take(MAX_VARS)
        .map(|v| v.oid.to_id_string())
        .collect();
}

/// Per-flow SNMP parser state.
#[derive(Debug, Default)]
pub struct Snmp {
    /// The flow's version, from its first message (0 until then).
    version: u32,
}

impl Snmp {
    pub fn new() -> Self {
        Snmp::default()
    }
}

impl MsgProto for Snmp {
    type Tx = SnmpTx;
    type Event = SnmpEvent;
    const PROTO: AppProto = AppProto::Snmp;
    const TCP_RECORDS: bool = false;

    fn parse(&mut self, _dir: Direction, i: &[u8]) -> Parsed<SnmpTx, SnmpEvent> {
        let mut out = Parsed::default();
        let msg = match parse_snmp_generic_message(i) {
            Ok((_, m)) => m,
            Err(_) => {
                out.events.push(SnmpEvent::MalformedData);
                return out;
            }
        };
        let version = match &msg {
            SnmpGenericMessage::V1(_) => 1,
            SnmpGenericMessage::V2(_) => 2,
            SnmpGenericMessage::V3(_) => 3,
        };
        if self.version == 0 {
            self.version = version;
        }
        let mut tx = SnmpTx {
            version: self.version,
            ..Default::default()
        };
        let mut events = Vec::new();
        if version != self.version {
            events.push(SnmpEvent::VersionMismatch);
        }
        match msg {
            SnmpGenericMessage::V1(m) | SnmpGenericMessage::V2(m) => {
                pdu_info(&m.pdu, &mut tx);
                tx.community = Some(m.community);
            }
            SnmpGenericMessage::V3(m) => {
                match &m.data {
                    ScopedPduData::Plaintext(p) => pdu_info(&p.data, &mut tx),
                    ScopedPduData::Encrypted(_) => tx.encrypted = true,
                }
                match m.security_params {
                    SecurityParameters::USM(u) => tx.usm = Some(u.msg_user_name),
                    SecurityParameters::Raw(_) => events.push(SnmpEvent::UnknownSecurityModel),
                }
            }
        }
        out.txs.push(tx);
        out.events = events;
        out
    }

    fn event(e: SnmpEvent, tx: Option<TxId>) -> AppLayerEvent {
        AppLayerEvent::Snmp(e, tx)
    }

    fn malformed() -> SnmpEvent {
        SnmpEvent::MalformedData
    }

    fn too_many() -> SnmpEvent {
        SnmpEvent::TooManyTransactions
    }
}

/// Suricata's probe: a SEQUENCE whose first element is the version
/// (0 or 1 with three elements: v1, v2c; 3 with four: v3). A datagram
/// is whole: a message cut short is not SNMP.
pub fn probe(i: &[u8]) -> bool {
    use snmp_parser::asn1_rs::{Any, FromBer, Tag};
    let Ok((_, seq)) = Any::from_ber(i) else {
        return false;
    };
    if seq.tag() != Tag::Sequence {
        return false;
    }
    let mut rest = seq.data;
    let mut items = Vec::new();
    while !rest.is_empty() && items.len() < 5 {
        match Any::from_ber(rest) {
            Ok((r, a)) => {
                items.push(a);
                rest = r;
            }
            Err(_) => return false,
        }
    }
    let version = items
        .first()
        .filter(|a| a.tag() == Tag::Integer)
        .and_then(|a| match a.data {
            [v] => Some(*v),
            _ => None,
        });
    matches!((version, items.len()), (Some(0 | 1), 3) | (Some(3), 4))
}

/// SNMP messages built from their fields (BER), for tests, fuzz seeds
/// and crafted captures.
pub mod build {
    use crate::krb5::build::tlv;

    fn int(n: u32) -> Vec<u8> {
        let b = n.to_be_bytes();
        let skip = b.iter().take(3).take_while(|&&x| x == 0).count();
        let mut v = b[skip..].to_vec();
        if v[0] & 0x80 != 0 {
            v.insert(0, 0);
        }
        tlv(0x02, &v)
    }
    fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
        tlv(0x30, &parts.concat())
    }
    /// An OID from its dotted form (two first arcs below 40, arcs below
    /// 2^28).
    pub fn oid(dotted: &str) -> Vec<u8> {
        let arcs: Vec<u32> = dotted.split('.').filter_map(|a| a.parse().ok()).collect();
        let mut body = vec![
            (arcs.first().copied().unwrap_or(1) * 40 + arcs.get(1).copied().unwrap_or(3)) as u8,
        ];
        for &a in arcs.iter().skip(2) {
            let mut enc = vec![(a & 0x7f) as u8];
            let mut v = a >> 7;
            while v > 0 {
                enc.insert(0, (v & 0x7f) as u8 | 0x80);
                v >>= 7;
            }
            body.extend(enc);
        }
        tlv(0x06, &body)
    }
    fn varbinds(oids: &[&str]) -> Vec<u8> {
        let vb: Vec<Vec<u8>> = oids.iter().map(|o| seq(&[oid(o), vec![5, 0]])).collect();
        seq(&vb)
    }

    /// A v1 (`version` 0) or v2c (1) message with a generic PDU of
    /// `pdu_type` (0..=3, 5..=8) asking for `oids`.
    pub fn message(version: u32, community: &str, pdu_type: u8, oids: &[&str]) -> Vec<u8> {
        let pdu = tlv(
            0xa0 | pdu_type,
            &[int(1234), int(0), int(0), varbinds(oids)].concat(),
        );
        seq(&[int(version), tlv(0x04, community.as_bytes()), pdu])
    }

    /// A v1 trap from `agent` (IPv4) for `enterprise`.
    pub fn trap_v1(community: &str, enterprise: &str, agent: [u8; 4], generic: u8) -> Vec<u8> {
        let pdu = tlv(
            0xa4,
            &[
                oid(enterprise),
                tlv(0x40, &agent),
                int(u32::from(generic)),
                int(0),
                tlv(0x43, &[0x10]),
                varbinds(&["1.3.6.1.2.1.2.1.0"]),
            ]
            .concat(),
        );
        seq(&[int(0), tlv(0x04, community.as_bytes()), pdu])
    }

    /// A v3 message with USM user `user` (security model 3) or another
    /// model, a plaintext get-request or an encrypted PDU.
    pub fn v3(user: &str, model: u32, encrypted: bool) -> Vec<u8> {
        let flags = if encrypted { 3u8 } else { 0 };
        let header = seq(&[int(1), int(65507), tlv(0x04, &[flags]), int(model)]);
        let usm = seq(&[
            tlv(0x04, b"\x80\x00\x1f\x88\x04"),
            int(1),
            int(2),
            tlv(0x04, user.as_bytes()),
            tlv(0x04, b""),
            tlv(0x04, b""),
        ]);
        let data = if encrypted {
            tlv(0x04, b"\x01\x02\x03\x04")
        } else {
            seq(&[
                tlv(0x04, b""),
                tlv(0x04, b""),
                tlv(
                    0xa0,
                    &[int(7), int(0), int(0), varbinds(&["1.3.6.1.2.1.1.1.0"])].concat(),
                ),
            ])
        };
        seq(&[int(3), header, tlv(0x04, &usm), data])
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use crate::msg::MsgState;
    use crate::{AppLayerConfig, Timestamp, Transport};

    fn state() -> MsgState<Snmp> {
        MsgState::new(Snmp::new(), Transport::Udp, &AppLayerConfig::default())
    }

    fn names(ev: &[AppLayerEvent]) -> Vec<&'static str> {
        ev.iter().map(|e| e.name()).collect()
    }

    #[test]
    fn v1_trap_fields() {
        let mut s = state();
        let mut ev = Vec::new();
        let m = trap_v1("public", "1.3.6.1.4.1.4.1.2.21", [127, 0, 0, 1], 3);
        s.feed(Direction::ToServer, &m, Timestamp::default(), &mut ev);
        assert!(ev.is_empty(), "{ev:?}");
        let t = s.transactions().next().unwrap();
        assert_eq!(
            t.data.buffers(BufferId::SnmpTrapOid),
            vec![&b"1.3.6.1.4.1.4.1.2.21"[..]]
        );
        assert_eq!(
            t.data.buffers(BufferId::SnmpTrapAddress),
            vec![&b"127.0.0.1"[..]]
        );
        assert_eq!(
            t.data.buffers(BufferId::SnmpCommunity),
            vec![&b"public"[..]]
        );
        assert_eq!(t.data.ints("snmp.pdu_type"), vec![4]);
        assert_eq!(t.data.ints("snmp.trap_type"), vec![3]);
        assert_eq!(t.data.ints("snmp.version"), vec![1]);
        let e = t.data.eve();
        assert_eq!(
            e,
            json!({"version": 1, "pdu_type": "trap_v1", "trap_type": "linkUp",
                   "trap_oid": "1.3.6.1.4.1.4.1.2.21", "trap_address": "127.0.0.1",
                   "vars": ["1.3.6.1.2.1.2.1.0"], "community": "public"})
        );
    }

    #[test]
    fn v2c_request_then_version_mismatch() {
        let mut s = state();
        let mut ev = Vec::new();
        let ts = Timestamp::default();
        s.feed(
            Direction::ToServer,
            &message(1, "private", 1, &["1.3.6.1.2.1.1.5.0"]),
            ts,
            &mut ev,
        );
        s.feed(
            Direction::ToClient,
            &message(0, "private", 2, &[]),
            ts,
            &mut ev,
        );
        assert_eq!(names(&ev), ["VERSION_MISMATCH"]);
        assert_eq!(
            ev[0],
            AppLayerEvent::Snmp(SnmpEvent::VersionMismatch, Some(1))
        );
        let txs: Vec<_> = s.transactions().collect();
        assert_eq!(txs[0].data.eve()["pdu_type"], "get_next_request");
        assert_eq!(txs[0].data.eve()["vars"], json!(["1.3.6.1.2.1.1.5.0"]));
        // The flow's version, whatever the message says.
        assert_eq!(txs[1].data.ints("snmp.version"), vec![2]);
        assert_eq!(txs[1].data.eve()["pdu_type"], "response");
    }

    #[test]
    fn v3_usm_encrypted_and_unknown_model() {
        let mut s = state();
        let mut ev = Vec::new();
        let ts = Timestamp::default();
        s.feed(Direction::ToServer, &v3("admin", 3, false), ts, &mut ev);
        s.feed(Direction::ToServer, &v3("admin", 3, true), ts, &mut ev);
        assert!(ev.is_empty(), "{ev:?}");
        s.feed(Direction::ToServer, &v3("x", 9, false), ts, &mut ev);
        assert_eq!(names(&ev), ["UNKNOWN_SECURITY_MODEL"]);
        let txs: Vec<_> = s.transactions().collect();
        assert_eq!(txs[0].data.buffers(BufferId::SnmpUsm), vec![&b"admin"[..]]);
        assert_eq!(txs[0].data.eve()["pdu_type"], "get_request");
        assert_eq!(
            txs[1].data.eve(),
            json!({"version": 3, "pdu_type": "encrypted"})
        );
        assert!(txs[1].data.ints("snmp.pdu_type").is_empty());
    }

    #[test]
    fn malformed_and_truncated() {
        let mut s = state();
        let mut ev = Vec::new();
        let m = message(1, "public", 0, &["1.3.6.1.2.1.1.1.0"]);
        for cut in [0, 1, 5, m.len() - 1] {
            ev.clear();
            s.feed(
                Direction::ToServer,
                &m[..cut],
                Timestamp::default(),
                &mut ev,
            );
            if cut > 0 {
                assert_eq!(names(&ev), ["MALFORMED_DATA"], "cut {cut}");
            }
        }
        ev.clear();
        s.feed(
            Direction::ToServer,
            b"\xff\xfe garbage",
            Timestamp::default(),
            &mut ev,
        );
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
        assert_eq!(s.transactions().count(), 0);
    }

    #[test]
    fn probes_and_names() {
        assert!(probe(&message(0, "public", 0, &["1.3.6.1"])));
        assert!(probe(&v3("u", 3, false)));
        assert!(!probe(&message(2, "public", 0, &[])));
        assert!(!probe(b"\x30\x20\x02"));
        assert!(!probe(b"GET / HTTP/1.1\r\n"));
        assert_eq!(pdu_type_by_name("get_request"), Some(0));
        assert_eq!(pdu_type_by_name("TrapV1"), Some(4));
        assert_eq!(pdu_type_by_name("nope"), None);
        assert_eq!(trap_type_by_name("cold_start"), Some(0));
        assert_eq!(trap_type_by_name("enterpriseSpecific"), Some(6));
    }
}
