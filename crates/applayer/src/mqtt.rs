//! MQTT 3.1, 3.1.1 and 5.0 over TCP (Suricata's `rust/src/mqtt`).
//!
//! Control packets are framed by their fixed header (type and flags, a
//! variable-length remaining length) and parsed by type, with MQTT 5's
//! properties once the CONNECT said version 5. A packet longer than
//! [`MAX_MSG`] is skipped (a `truncated` message records its length).
//! Transactions as Suricata makes them: a CONNECT and its CONNACK, a
//! PUBLISH and its PUBACK (QoS 1) or PUBREC/PUBREL/PUBCOMP (QoS 2), a
//! SUBSCRIBE and its SUBACK, an UNSUBSCRIBE and its UNSUBACK (paired by
//! packet id); every other packet is a transaction of its own. Packets
//! before the CONNACK raise `unintroduced_message`, answers without their
//! request `missing_connect`/`missing_publish`/..., a packet that does
//! not parse `malformed_traffic`. A gap loses the packet boundaries: the
//! direction is not parsed further.

use serde_json::{json, Map, Value};

use crate::events::MqttEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};

/// Largest control packet parsed (Suricata's `max-msg-length` default,
/// 1 MiB); longer ones are skipped.
pub const MAX_MSG: usize = 1024 * 1024;

/// `mqtt.type` names (Suricata's, lower case) and their type codes.
pub const TYPE_NAMES: &[(&str, u64)] = &[
    ("unassigned", 0),
    ("connect", 1),
    ("connack", 2),
    ("publish", 3),
    ("puback", 4),
    ("pubrec", 5),
    ("pubrel", 6),
    ("pubcomp", 7),
    ("subscribe", 8),
    ("suback", 9),
    ("unsubscribe", 10),
    ("unsuback", 11),
    ("pingreq", 12),
    ("pingresp", 13),
    ("disconnect", 14),
    ("auth", 15),
];

/// The fixed header of a control packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub typ: u8,
    pub dup: bool,
    pub qos: u8,
    pub retain: bool,
}

impl Header {
    fn from_byte(b: u8) -> Header {
        Header {
            typ: b >> 4,
            dup: b & 8 != 0,
            qos: (b >> 1) & 3,
            retain: b & 1 != 0,
        }
    }

    /// The low nibble: dup, QoS, retain.
    pub fn flags(&self) -> u8 {
        (u8::from(self.dup) << 3) | (self.qos << 1) | u8::from(self.retain)
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Connect {
    pub protocol_string: Vec<u8>,
    pub protocol_version: u8,
    pub flags: u8,
    pub keepalive: u16,
    pub client_id: Vec<u8>,
    pub will_topic: Option<Vec<u8>>,
    pub will_message: Option<Vec<u8>>,
    pub will_properties: Option<Map<String, Value>>,
    pub username: Option<Vec<u8>>,
    pub password: Option<Vec<u8>>,
    pub properties: Option<Map<String, Value>>,
}

/// A control packet's content by type.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Connect(Connect),
    Connack {
        session_present: bool,
        return_code: u8,
        properties: Option<Map<String, Value>>,
    },
    Publish {
        topic: Vec<u8>,
        message_id: Option<u16>,
        message: Vec<u8>,
        properties: Option<Map<String, Value>>,
    },
    /// PUBACK, PUBREC, PUBREL, PUBCOMP.
    Ack {
        message_id: u16,
        reason_code: Option<u8>,
        properties: Option<Map<String, Value>>,
    },
    Subscribe {
        message_id: u16,
        topics: Vec<(Vec<u8>, u8)>,
        properties: Option<Map<String, Value>>,
    },
    Suback {
        message_id: u16,
        qos_granted: Vec<u8>,
        properties: Option<Map<String, Value>>,
    },
    Unsubscribe {
        message_id: u16,
        topics: Vec<Vec<u8>>,
        properties: Option<Map<String, Value>>,
    },
    Unsuback {
        message_id: u16,
        reason_codes: Option<Vec<u8>>,
        properties: Option<Map<String, Value>>,
    },
    /// PINGREQ, PINGRESP.
    Empty,
    /// DISCONNECT, AUTH.
    Reason {
        reason_code: Option<u8>,
        properties: Option<Map<String, Value>>,
    },
    /// Type 0.
    Unassigned,
    /// A packet over [`MAX_MSG`], skipped.
    Truncated {
        length: usize,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Msg {
    pub header: Header,
    pub op: Op,
}

impl Msg {
    fn message_id(&self) -> Option<u16> {
        match &self.op {
            Op::Publish { message_id, .. } => *message_id,
            Op::Ack { message_id, .. }
            | Op::Subscribe { message_id, .. }
            | Op::Suback { message_id, .. }
            | Op::Unsubscribe { message_id, .. }
            | Op::Unsuback { message_id, .. } => Some(*message_id),
            _ => None,
        }
    }

    fn reason_codes(&self) -> Vec<u8> {
        match &self.op {
            Op::Connack { return_code, .. } => vec![*return_code],
            Op::Ack { reason_code, .. } | Op::Reason { reason_code, .. } => {
                reason_code.iter().copied().collect()
            }
            Op::Unsuback { reason_codes, .. } => reason_codes.clone().unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// A reader over one packet's body.
struct Rd<'a> {
    b: &'a [u8],
}

type R<T> = Result<T, ()>;

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        if self.b.len() < n {
            return Err(());
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> R<u16> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> R<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn bin(&mut self) -> R<Vec<u8>> {
        let n = self.u16()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn varint(&mut self) -> R<u32> {
        let mut v = 0u32;
        for i in 0..4 {
            let c = self.u8()?;
            v |= u32::from(c & 0x7f) << (7 * i);
            if c & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(())
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.b)
    }
}

/// MQTT 5 properties: a length, then identifier/value pairs, as the JSON
/// object Suricata logs (user properties under their own name).
fn properties(r: &mut Rd<'_>) -> R<Map<String, Value>> {
    let n = r.varint()? as usize;
    let mut p = Rd { b: r.take(n)? };
    let mut m = Map::new();
    while !p.b.is_empty() {
        let id = p.varint()?;
        let (name, v): (&str, Value) = match id {
            0x01 => ("payload_format_indicator", p.u8()?.into()),
            0x02 => ("message_expiry_interval", p.u32()?.into()),
            0x03 => ("content_type", suri_str(&p.bin()?)),
            0x08 => ("response_topic", suri_str(&p.bin()?)),
            0x09 => ("correlation_data", suri_str(&p.bin()?)),
            0x0b => ("subscription_identifier", p.varint()?.into()),
            0x11 => ("session_expiry_interval", p.u32()?.into()),
            0x12 => ("assigned_client_identifier", suri_str(&p.bin()?)),
            0x13 => ("server_keep_alive", p.u16()?.into()),
            0x15 => ("authentication_method", suri_str(&p.bin()?)),
            0x16 => ("authentication_data", suri_str(&p.bin()?)),
            0x17 => ("request_problem_information", p.u8()?.into()),
            0x18 => ("will_delay_interval", p.u32()?.into()),
            0x19 => ("request_response_information", p.u8()?.into()),
            0x1a => ("response_information", suri_str(&p.bin()?)),
            0x1c => ("server_reference", suri_str(&p.bin()?)),
            0x1f => ("reason_string", suri_str(&p.bin()?)),
            0x21 => ("receive_maximum", p.u16()?.into()),
            0x22 => ("topic_alias_maximum", p.u16()?.into()),
            0x23 => ("topic_alias", p.u16()?.into()),
            0x24 => ("maximum_qos", p.u8()?.into()),
            0x25 => ("retain_available", p.u8()?.into()),
            0x26 => {
                let k = p.bin()?;
                let v = p.bin()?;
                let k = String::from_utf8_lossy(&k).into_owned();
                m.insert(k, suri_str(&v));
                continue;
            }
            0x27 => ("maximum_packet_size", p.u32()?.into()),
            0x28 => ("wildcard_subscription_available", p.u8()?.into()),
            0x29 => ("subscription_identifier_available", p.u8()?.into()),
            0x2a => ("shared_subscription_available", p.u8()?.into()),
            _ => return Err(()),
        };
        m.insert(name.into(), v);
    }
    Ok(m)
}

/// Parses a control packet's body; `version` is the flow's protocol
/// version (0 before a CONNECT said it).
pub(crate) fn parse_body(h: Header, body: &[u8], version: u8) -> R<Op> {
    let mut r = Rd { b: body };
    let v5 = version >= 5;
    let props = |r: &mut Rd<'_>, v5: bool| -> R<Option<Map<String, Value>>> {
        if v5 {
            properties(r).map(Some)
        } else {
            Ok(None)
        }
    };
    Ok(match h.typ {
        1 => {
            let protocol_string = r.bin()?;
            let protocol_version = r.u8()?;
            let flags = r.u8()?;
            let keepalive = r.u16()?;
            let v5 = protocol_version >= 5;
            let properties = props(&mut r, v5)?;
            let client_id = r.bin()?;
            let (mut will_properties, mut will_topic, mut will_message) = (None, None, None);
            if flags & 0x04 != 0 {
                will_properties = props(&mut r, v5)?;
                will_topic = Some(r.bin()?);
                will_message = Some(r.bin()?);
            }
            let username = if flags & 0x80 != 0 {
                Some(r.bin()?)
            } else {
                None
            };
            let password = if flags & 0x40 != 0 {
                Some(r.bin()?)
            } else {
                None
            };
            Op::Connect(Connect {
                protocol_string,
                protocol_version,
                flags,
                keepalive,
                client_id,
                will_topic,
                will_message,
                will_properties,
                username,
                password,
                properties,
            })
        }
        2 => {
            let f = r.u8()?;
            let return_code = r.u8()?;
            let properties = if v5 && !r.b.is_empty() {
                Some(properties(&mut r)?)
            } else {
                None
            };
            Op::Connack {
                session_present: f & 1 != 0,
                return_code,
                properties,
            }
        }
        3 => {
            let topic = r.bin()?;
            let message_id = if h.qos > 0 { Some(r.u16()?) } else { None };
            let properties = props(&mut r, v5)?;
            Op::Publish {
                topic,
                message_id,
                message: r.rest().to_vec(),
                properties,
            }
        }
        4..=7 => {
            let message_id = r.u16()?;
            // MQTT 5: an absent reason code is 0 (success).
            let reason_code = if !v5 {
                None
            } else if r.b.is_empty() {
                Some(0)
            } else {
                Some(r.u8()?)
            };
            let properties = if v5 && !r.b.is_empty() {
                Some(properties(&mut r)?)
            } else {
                None
            };
            Op::Ack {
                message_id,
                reason_code,
                properties,
            }
        }
        8 => {
            let message_id = r.u16()?;
            let properties = props(&mut r, v5)?;
            let mut topics = Vec::new();
            while !r.b.is_empty() {
                let t = r.bin()?;
                topics.push((t, r.u8()?));
            }
            Op::Subscribe {
                message_id,
                topics,
                properties,
            }
        }
        9 => {
            let message_id = r.u16()?;
            let properties = props(&mut r, v5)?;
            Op::Suback {
                message_id,
                qos_granted: r.rest().to_vec(),
                properties,
            }
        }
        10 => {
            let message_id = r.u16()?;
            let properties = props(&mut r, v5)?;
            let mut topics = Vec::new();
            while !r.b.is_empty() {
                topics.push(r.bin()?);
            }
            Op::Unsubscribe {
                message_id,
                topics,
                properties,
            }
        }
        11 => {
            let message_id = r.u16()?;
            let properties = props(&mut r, v5)?;
            let reason_codes = v5.then(|| r.rest().to_vec());
            Op::Unsuback {
                message_id,
                reason_codes,
                properties,
            }
        }
        12 | 13 => Op::Empty,
        14 | 15 => {
            let reason_code = if !r.b.is_empty() {
                Some(r.u8()?)
            } else if v5 {
                Some(0)
            } else {
                None
            };
            let properties = if v5 && !r.b.is_empty() {
                Some(properties(&mut r)?)
            } else {
                None
            };
            Op::Reason {
                reason_code,
                properties,
            }
        }
        _ => Op::Unassigned,
    })
}

/// Most bytes of a PUBLISH message logged (Suricata's
/// `mqtt.string-log-limit` default, 1 KiB); the rest is counted.
const LOG_LIMIT: usize = 1024;

fn log_message(m: &[u8]) -> Value {
    if m.len() <= LOG_LIMIT {
        return suri_str(m);
    }
    let mut s = match suri_str(&m[..LOG_LIMIT]) {
        Value::String(s) => s,
        _ => String::new(),
    };
    s.push_str(&format!(
        "[truncated {} additional bytes]",
        m.len() - LOG_LIMIT
    ));
    Value::String(s)
}

/// One MQTT transaction: a request and its answers, or one packet.
#[derive(Debug)]
pub struct MqttTx {
    pub(crate) common: TxCommon,
    pub msgs: Vec<Msg>,
    /// Packet id awaited (the CONNECT's is [`CONNECT_ID`]).
    pkt_id: Option<u32>,
    pub complete: bool,
    /// The flow's protocol version when the transaction was made.
    pub version: u8,
}

const CONNECT_ID: u32 = u32::MAX;

impl Tx for MqttTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.complete,
            response_complete: self.complete,
        }
    }
}

fn props_into(m: &mut Map<String, Value>, key: &str, p: &Option<Map<String, Value>>) {
    if let Some(p) = p {
        if !p.is_empty() {
            m.insert(key.into(), Value::Object(p.clone()));
        }
    }
}

impl MqttTx {
    fn find(&self, typ: u8) -> Option<&Msg> {
        self.msgs.iter().find(|m| m.header.typ == typ)
    }

    fn connect(&self) -> Option<&Connect> {
        self.msgs.iter().find_map(|m| match &m.op {
            Op::Connect(c) => Some(c),
            _ => None,
        })
    }

    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        use BufferId::*;
        let c = self.connect();
        fn one(v: Option<&Vec<u8>>) -> Vec<&[u8]> {
            v.map(|v| vec![&v[..]]).unwrap_or_default()
        }
        let publish = self.find(3).and_then(|m| match &m.op {
            Op::Publish { topic, message, .. } => Some((topic, message)),
            _ => None,
        });
        match id {
            MqttConnectClientId => one(c.map(|c| &c.client_id)),
            MqttConnectUsername => one(c.and_then(|c| c.username.as_ref())),
            MqttConnectPassword => one(c.and_then(|c| c.password.as_ref())),
            MqttConnectWillTopic => one(c.and_then(|c| c.will_topic.as_ref())),
            MqttConnectWillMessage => one(c.and_then(|c| c.will_message.as_ref())),
            MqttConnectProtocolString => one(c.map(|c| &c.protocol_string)),
            MqttPublishTopic => one(publish.map(|p| p.0)),
            MqttPublishMessage => one(publish.map(|p| p.1)),
            MqttSubscribeTopic => self
                .msgs
                .iter()
                .flat_map(|m| match &m.op {
                    Op::Subscribe { topics, .. } => topics.iter().map(|t| &t.0[..]).collect(),
                    _ => Vec::new(),
                })
                .collect(),
            MqttUnsubscribeTopic => self
                .msgs
                .iter()
                .flat_map(|m| match &m.op {
                    Op::Unsubscribe { topics, .. } => topics.iter().map(|t| &t[..]).collect(),
                    _ => Vec::new(),
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn uints(&self, f: UintField) -> Vec<u64> {
        let each = |g: &dyn Fn(&Msg) -> Vec<u64>| self.msgs.iter().flat_map(g).collect();
        match f {
            UintField::MqttType => each(&|m| vec![m.header.typ.into()]),
            UintField::MqttFlags => each(&|m| vec![m.header.flags().into()]),
            UintField::MqttQos => each(&|m| vec![m.header.qos.into()]),
            UintField::MqttReasonCode => {
                each(&|m| m.reason_codes().into_iter().map(u64::from).collect())
            }
            UintField::MqttConnackSessionPresent => each(&|m| match &m.op {
                Op::Connack {
                    session_present, ..
                } => vec![u64::from(*session_present)],
                _ => Vec::new(),
            }),
            UintField::MqttProtocolVersion => {
                vec![self
                    .connect()
                    .map_or(self.version, |c| c.protocol_version)
                    .into()]
            }
            UintField::MqttConnectFlags => {
                self.connect().map(|c| c.flags.into()).into_iter().collect()
            }
            _ => Vec::new(),
        }
    }

    /// Suricata's `mqtt` object: one member per packet type.
    pub fn eve(&self) -> Value {
        let mut o = Map::new();
        for m in &self.msgs {
            let h = m.header;
            let mut e = Map::new();
            e.insert("qos".into(), h.qos.into());
            e.insert("retain".into(), h.retain.into());
            e.insert("dup".into(), h.dup.into());
            let name = match &m.op {
                Op::Truncated { length } => {
                    e.insert("skipped_length".into(), (*length as u64).into());
                    "truncated"
                }
                _ => TYPE_NAMES
                    .get(h.typ as usize)
                    .map_or("unassigned", |(n, _)| *n),
            };
            match &m.op {
                Op::Connect(c) => {
                    e.insert("protocol_string".into(), suri_str(&c.protocol_string));
                    e.insert("protocol_version".into(), c.protocol_version.into());
                    e.insert("client_id".into(), suri_str(&c.client_id));
                    e.insert(
                        "flags".into(),
                        json!({
                            "username": c.flags & 0x80 != 0,
                            "password": c.flags & 0x40 != 0,
                            "will_retain": c.flags & 0x20 != 0,
                            "will": c.flags & 0x04 != 0,
                            "clean_session": c.flags & 0x02 != 0,
                        }),
                    );
                    if let Some(u) = &c.username {
                        e.insert("username".into(), suri_str(u));
                    }
                    if let Some(p) = &c.password {
                        e.insert("password".into(), suri_str(p));
                    }
                    if let (Some(t), Some(msg)) = (&c.will_topic, &c.will_message) {
                        let mut w = Map::new();
                        w.insert("topic".into(), suri_str(t));
                        w.insert("message".into(), suri_str(msg));
                        props_into(&mut w, "properties", &c.will_properties);
                        e.insert("will".into(), Value::Object(w));
                    }
                    props_into(&mut e, "properties", &c.properties);
                }
                Op::Connack {
                    session_present,
                    return_code,
                    properties,
                } => {
                    e.insert("session_present".into(), (*session_present).into());
                    e.insert("return_code".into(), (*return_code).into());
                    props_into(&mut e, "properties", properties);
                }
                Op::Publish {
                    topic,
                    message_id,
                    message,
                    properties,
                } => {
                    e.insert("topic".into(), suri_str(topic));
                    if let Some(id) = message_id {
                        e.insert("message_id".into(), (*id).into());
                    }
                    e.insert("message".into(), log_message(message));
                    props_into(&mut e, "properties", properties);
                }
                Op::Ack {
                    message_id,
                    reason_code,
                    properties,
                } => {
                    e.insert("message_id".into(), (*message_id).into());
                    if let Some(rc) = reason_code {
                        e.insert("reason_code".into(), (*rc).into());
                    }
                    props_into(&mut e, "properties", properties);
                }
                Op::Subscribe {
                    message_id,
                    topics,
                    properties,
                } => {
                    e.insert("message_id".into(), (*message_id).into());
                    let t: Vec<Value> = topics
                        .iter()
                        .map(|(t, q)| json!({"topic": suri_str(t), "qos": q}))
                        .collect();
                    e.insert("topics".into(), Value::Array(t));
                    props_into(&mut e, "properties", properties);
                }
                Op::Suback {
                    message_id,
                    qos_granted,
                    properties,
                } => {
                    e.insert("message_id".into(), (*message_id).into());
                    e.insert("qos_granted".into(), json!(qos_granted));
                    props_into(&mut e, "properties", properties);
                }
                Op::Unsubscribe {
                    message_id,
                    topics,
                    properties,
                } => {
                    e.insert("message_id".into(), (*message_id).into());
                    let t: Vec<Value> = topics.iter().map(|t| suri_str(t)).collect();
                    e.insert("topics".into(), Value::Array(t));
                    props_into(&mut e, "properties", properties);
                }
                Op::Unsuback {
                    message_id,
                    reason_codes,
                    properties,
                } => {
                    e.insert("message_id".into(), (*message_id).into());
                    if let Some(rc) = reason_codes {
                        e.insert("reason_codes".into(), json!(rc));
                    }
                    props_into(&mut e, "properties", properties);
                }
                Op::Reason {
                    reason_code,
                    properties,
                } => {
                    if let Some(rc) = reason_code {
                        e.insert("reason_code".into(), (*rc).into());
                    }
                    props_into(&mut e, "properties", properties);
                }
                Op::Empty | Op::Unassigned | Op::Truncated { .. } => {}
            }
            o.insert(name.into(), Value::Object(e));
        }
        Value::Object(o)
    }
}

/// One direction's framing.
#[derive(Debug, Default)]
struct Side {
    /// The fixed header and body of the packet being read.
    buf: Vec<u8>,
    /// Body bytes of an oversized packet still to skip.
    skip: usize,
    /// Framing lost (gap, bad length): nothing more is parsed.
    lost: bool,
}

/// Per-flow MQTT state.
#[derive(Debug)]
pub struct MqttState {
    txs: TxList<MqttTx>,
    sides: [Side; 2],
    version: u8,
    connected: bool,
}

/// The length of a complete fixed header in `b` and the body length:
/// `Ok(None)` when more bytes are needed, `Err` on a bad length.
fn fixed_header(b: &[u8]) -> R<Option<(usize, usize)>> {
    let mut len = 0usize;
    for i in 0..4 {
        let Some(&c) = b.get(1 + i) else {
            return Ok(None);
        };
        len |= usize::from(c & 0x7f) << (7 * i);
        if c & 0x80 == 0 {
            return Ok(Some((2 + i, len)));
        }
    }
    Err(())
}

impl MqttState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        MqttState {
            txs: TxList::new(cfg.max_transactions),
            sides: Default::default(),
            version: 0,
            connected: false,
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&MqttTx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &MqttTx> {
        self.txs.txs.iter()
    }

    fn new_tx(&mut self, msg: Msg, complete: bool, ev: &mut Vec<AppLayerEvent>) -> TxId {
        let version = self.version;
        let dropped = self.txs.push(|id| MqttTx {
            common: TxCommon::new(id, 0),
            msgs: vec![msg],
            pkt_id: None,
            complete,
            version,
        });
        let id = self.txs.next_id - 1;
        if dropped {
            ev.push(AppLayerEvent::Mqtt(
                MqttEvent::TooManyTransactions,
                Some(id),
            ));
        }
        id
    }

    fn set_ts(&mut self, id: TxId, ts: Timestamp) {
        if let Some(t) = self.txs.get_mut(id) {
            t.common.ts = ts;
        }
    }

    /// The open transaction waiting for packet id `pid`.
    fn pending(&mut self, pid: u32) -> Option<&mut MqttTx> {
        self.txs
            .txs
            .iter_mut()
            .find(|t| !t.complete && t.pkt_id == Some(pid))
    }

    /// Files a parsed packet in its transaction.
    fn handle(&mut self, msg: Msg, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let e = |ev: &mut Vec<AppLayerEvent>, e: MqttEvent, id: TxId| {
            ev.push(AppLayerEvent::Mqtt(e, Some(id)))
        };
        let typ = msg.header.typ;
        if typ == 1 {
            if let Op::Connect(c) = &msg.op {
                self.version = c.protocol_version;
            }
            let double = self.connected;
            let id = self.new_tx(msg, false, ev);
            self.set_ts(id, ts);
            if let Some(t) = self.txs.get_mut(id) {
                t.pkt_id = Some(CONNECT_ID);
            }
            if double {
                e(ev, MqttEvent::DoubleConnect, id);
            }
            return;
        }
        if typ == 2 {
            if let Some(t) = self.pending(CONNECT_ID) {
                t.msgs.push(msg);
                t.complete = true;
                t.pkt_id = None;
                self.connected = true;
            } else {
                let id = self.new_tx(msg, true, ev);
                self.set_ts(id, ts);
                e(ev, MqttEvent::MissingConnect, id);
            }
            return;
        }
        if matches!(msg.op, Op::Truncated { .. }) {
            let id = self.new_tx(msg, true, ev);
            self.set_ts(id, ts);
            return;
        }
        if !self.connected {
            let id = self.new_tx(msg, true, ev);
            self.set_ts(id, ts);
            e(ev, MqttEvent::UnintroducedMessage, id);
            return;
        }
        let pid = msg.message_id().map(u32::from);
        match typ {
            3 => {
                let qos = msg.header.qos;
                let id = self.new_tx(msg, qos == 0 || qos > 2, ev);
                self.set_ts(id, ts);
                if qos > 2 {
                    e(ev, MqttEvent::InvalidQosLevel, id);
                } else if qos > 0 {
                    if let Some(t) = self.txs.get_mut(id) {
                        t.pkt_id = pid;
                    }
                }
            }
            4..=7 | 9 | 11 => {
                let done = matches!(typ, 4 | 7 | 9 | 11);
                let found = match pid {
                    Some(p) => match self.pending(p) {
                        Some(t) => {
                            t.msgs.push(msg.clone());
                            if done {
                                t.complete = true;
                            }
                            true
                        }
                        None => false,
                    },
                    None => false,
                };
                if !found {
                    let id = self.new_tx(msg, true, ev);
                    self.set_ts(id, ts);
                    let missing = match typ {
                        9 => MqttEvent::MissingSubscribe,
                        11 => MqttEvent::MissingUnsubscribe,
                        _ => MqttEvent::MissingPublish,
                    };
                    e(ev, missing, id);
                }
            }
            8 | 10 => {
                let id = self.new_tx(msg, false, ev);
                self.set_ts(id, ts);
                if let Some(t) = self.txs.get_mut(id) {
                    t.pkt_id = pid;
                }
            }
            0 => {
                let id = self.new_tx(msg, true, ev);
                self.set_ts(id, ts);
                e(ev, MqttEvent::UnassignedMsgType, id);
            }
            _ => {
                let id = self.new_tx(msg, true, ev);
                self.set_ts(id, ts);
            }
        }
    }

    /// A packet that does not parse: a transaction with the event.
    fn malformed(&mut self, h: Header, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let id = self.new_tx(
            Msg {
                header: h,
                op: Op::Unassigned,
            },
            true,
            ev,
        );
        self.set_ts(id, ts);
        ev.push(AppLayerEvent::Mqtt(MqttEvent::MalformedTraffic, Some(id)));
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        mut data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        while !data.is_empty() && !self.sides[d].lost {
            let side = &mut self.sides[d];
            if side.skip > 0 {
                let n = side.skip.min(data.len());
                side.skip -= n;
                data = &data[n..];
                continue;
            }
            // Read up to the end of the fixed header, then of the body.
            let need = match fixed_header(&side.buf) {
                Ok(Some((hl, bl))) => hl + bl,
                Ok(None) => side.buf.len() + 1,
                Err(()) => {
                    let h = Header::from_byte(side.buf[0]);
                    side.lost = true;
                    side.buf = Vec::new();
                    self.malformed(h, ts, ev);
                    return;
                }
            };
            if let Ok(Some((hl, bl))) = fixed_header(&side.buf) {
                if bl > MAX_MSG {
                    let h = Header::from_byte(side.buf[0]);
                    let got = side.buf.len() - hl;
                    side.skip = bl - got;
                    side.buf.clear();
                    let msg = Msg {
                        header: h,
                        op: Op::Truncated { length: bl },
                    };
                    self.handle(msg, ts, ev);
                    continue;
                }
            }
            let n = need.saturating_sub(side.buf.len()).min(data.len());
            side.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if let Ok(Some((hl, bl))) = fixed_header(&side.buf) {
                if bl <= MAX_MSG && side.buf.len() == hl + bl {
                    let buf = std::mem::take(&mut side.buf);
                    let h = Header::from_byte(buf[0]);
                    match parse_body(h, &buf[hl..], self.version) {
                        Ok(op) => self.handle(Msg { header: h, op }, ts, ev),
                        Err(()) => self.malformed(h, ts, ev),
                    }
                }
            }
        }
    }

    pub fn on_gap(&mut self, dir: Direction) {
        let side = &mut self.sides[dir.index()];
        side.lost = true;
        side.buf = Vec::new();
    }

    pub fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let side = &mut self.sides[dir.index()];
        if !side.buf.is_empty() && !side.lost {
            let h = Header::from_byte(side.buf[0]);
            side.buf = Vec::new();
            self.malformed(h, 0, ev);
        }
    }
}

impl TxParser for MqttState {
    fn proto(&self) -> AppProto {
        AppProto::Mqtt
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        MqttState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        MqttState::on_gap(self, dir)
    }
    fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        MqttState::finish(self, dir, ev)
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
    fn uints(&self, tx: TxId, field: UintField, _dir: Direction) -> Vec<u64> {
        self.txs.get(tx).map(|t| t.uints(field)).unwrap_or_default()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn wants_data(&self, dir: Direction) -> bool {
        !self.sides[dir.index()].lost
    }
}

/// Whether the first client bytes are an MQTT CONNECT: type 1 with no
/// flags, a sane remaining length, and the protocol name `MQTT` or
/// `MQIsdp`. `None` while too short to tell.
pub fn probe_connect(b: &[u8]) -> Option<bool> {
    if b.is_empty() {
        return None;
    }
    if b[0] != 0x10 {
        return Some(false);
    }
    let (hl, _) = match fixed_header(b) {
        Ok(Some(x)) => x,
        Ok(None) => return None,
        Err(()) => return Some(false),
    };
    let rest = &b[hl..];
    for name in [&b"\x00\x04MQTT"[..], b"\x00\x06MQIsdp"] {
        let n = rest.len().min(name.len());
        if rest[..n] == name[..n] {
            return if n == name.len() { Some(true) } else { None };
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MQTT 5 CONNECT with username/password and a receive maximum.
    const CONNECT5: &[u8] = b"\x10\x2f\x00\x04MQTT\x05\xc2\x00\x3c\x03\x21\x00\x14\x00\x13myvoiceismypassport\x00\x04user\x00\x04pass";
    /// CONNACK, reason 134, topic alias maximum 10.
    const CONNACK134: &[u8] = b"\x20\x06\x00\x86\x03\x22\x00\x0a";
    const PUBLISH0: &[u8] = b"\x30\x19\x00\x06topicX\x00baabaablacksheep";

    fn st() -> MqttState {
        MqttState::new(&AppLayerConfig::default())
    }

    fn feed(s: &mut MqttState, dir: Direction, d: &[u8]) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        s.feed(dir, d, 1, &mut ev);
        ev
    }

    #[test]
    fn connect_connack_is_one_transaction() {
        let mut s = st();
        assert!(feed(&mut s, Direction::ToServer, CONNECT5).is_empty());
        assert!(!s.tx(0).unwrap().complete);
        assert!(feed(&mut s, Direction::ToClient, CONNACK134).is_empty());
        let t = s.tx(0).unwrap();
        assert!(t.complete);
        assert_eq!(t.msgs.len(), 2);
        assert_eq!(t.uints(UintField::MqttReasonCode), vec![134]);
        assert_eq!(t.uints(UintField::MqttType), vec![1, 2]);
        assert_eq!(t.uints(UintField::MqttProtocolVersion), vec![5]);
        assert_eq!(t.uints(UintField::MqttConnectFlags), vec![0xc2]);
        assert_eq!(t.uints(UintField::MqttConnackSessionPresent), vec![0]);
        assert_eq!(
            t.buffers(BufferId::MqttConnectClientId),
            vec![&b"myvoiceismypassport"[..]]
        );
        assert_eq!(t.buffers(BufferId::MqttConnectUsername), vec![&b"user"[..]]);
        assert_eq!(t.buffers(BufferId::MqttConnectPassword), vec![&b"pass"[..]]);
        let e = t.eve();
        assert_eq!(e["connect"]["properties"]["receive_maximum"], 20);
        assert_eq!(e["connect"]["flags"]["username"], true);
        assert_eq!(e["connack"]["return_code"], 134);
        assert_eq!(e["connack"]["properties"]["topic_alias_maximum"], 10);
    }

    #[test]
    fn byte_at_a_time_is_the_same() {
        let mut a = st();
        feed(&mut a, Direction::ToServer, CONNECT5);
        feed(&mut a, Direction::ToClient, CONNACK134);
        feed(&mut a, Direction::ToServer, PUBLISH0);
        let mut b = st();
        for (dir, d) in [
            (Direction::ToServer, CONNECT5),
            (Direction::ToClient, CONNACK134),
            (Direction::ToServer, PUBLISH0),
        ] {
            for c in d {
                feed(&mut b, dir, std::slice::from_ref(c));
            }
        }
        let ea: Vec<Value> = a.transactions().map(|t| t.eve()).collect();
        let eb: Vec<Value> = b.transactions().map(|t| t.eve()).collect();
        assert_eq!(ea, eb);
        assert_eq!(ea.len(), 2);
        assert_eq!(ea[1]["publish"]["topic"], "topicX");
        assert_eq!(ea[1]["publish"]["message"], "baabaablacksheep");
    }

    #[test]
    fn publish_qos1_waits_for_puback_and_orphans_raise_events() {
        let mut s = st();
        feed(
            &mut s,
            Direction::ToServer,
            b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00",
        );
        feed(&mut s, Direction::ToClient, b"\x20\x02\x01\x00");
        // QoS 1 publish, id 7.
        feed(&mut s, Direction::ToServer, b"\x32\x07\x00\x01t\x00\x07hi");
        assert!(!s.tx(1).unwrap().complete);
        assert_eq!(s.tx(1).unwrap().uints(UintField::MqttQos), vec![1]);
        feed(&mut s, Direction::ToClient, b"\x40\x02\x00\x07");
        assert!(s.tx(1).unwrap().complete);
        // A PUBACK for nothing.
        let ev = feed(&mut s, Direction::ToClient, b"\x40\x02\x00\x09");
        assert_eq!(
            ev,
            vec![AppLayerEvent::Mqtt(MqttEvent::MissingPublish, Some(2))]
        );
        // Subscribe / suback.
        feed(
            &mut s,
            Direction::ToServer,
            b"\x82\x0a\x00\x05\x00\x05a/b/c\x01",
        );
        assert_eq!(
            s.tx(3).unwrap().buffers(BufferId::MqttSubscribeTopic),
            vec![&b"a/b/c"[..]]
        );
        feed(&mut s, Direction::ToClient, b"\x90\x03\x00\x05\x01");
        assert!(s.tx(3).unwrap().complete);
        assert_eq!(s.tx(3).unwrap().eve()["suback"]["qos_granted"], json!([1]));
        // Invalid QoS.
        let ev = feed(&mut s, Direction::ToServer, b"\x36\x05\x00\x01t\x00\x01");
        assert_eq!(
            ev,
            vec![AppLayerEvent::Mqtt(MqttEvent::InvalidQosLevel, Some(4))]
        );
        // Second CONNECT.
        let ev = feed(
            &mut s,
            Direction::ToServer,
            b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00",
        );
        assert_eq!(
            ev,
            vec![AppLayerEvent::Mqtt(MqttEvent::DoubleConnect, Some(5))]
        );
    }

    #[test]
    fn unintroduced_missing_connect_malformed() {
        let mut s = st();
        let ev = feed(&mut s, Direction::ToServer, b"\xc0\x00");
        assert_eq!(
            ev,
            vec![AppLayerEvent::Mqtt(MqttEvent::UnintroducedMessage, Some(0))]
        );
        let ev = feed(&mut s, Direction::ToClient, b"\x20\x02\x00\x00");
        assert_eq!(
            ev,
            vec![AppLayerEvent::Mqtt(MqttEvent::MissingConnect, Some(1))]
        );
        // A SUBSCRIBE whose topic length overruns the packet.
        let ev = feed(&mut s, Direction::ToServer, b"\x82\x04\x00\x01\x00\x09");
        assert_eq!(
            ev,
            vec![AppLayerEvent::Mqtt(MqttEvent::MalformedTraffic, Some(2))]
        );
        // Framing continues after it.
        feed(&mut s, Direction::ToServer, b"\xe0\x00");
        assert_eq!(s.tx(3).unwrap().uints(UintField::MqttType), vec![14]);
        // A five-byte remaining length loses the framing.
        let ev = feed(&mut s, Direction::ToServer, b"\x30\xff\xff\xff\xff\x01");
        assert_eq!(ev.len(), 1);
        assert!(!s.wants_data(Direction::ToServer));
    }

    #[test]
    fn oversized_packet_is_skipped() {
        let mut s = st();
        let n = MAX_MSG + 10;
        let mut p = vec![0x30];
        let mut l = n;
        loop {
            let mut c = (l & 0x7f) as u8;
            l >>= 7;
            if l > 0 {
                c |= 0x80;
            }
            p.push(c);
            if l == 0 {
                break;
            }
        }
        feed(&mut s, Direction::ToServer, &p);
        feed(&mut s, Direction::ToServer, &vec![b'x'; n]);
        feed(&mut s, Direction::ToServer, b"\xc0\x00");
        let t: Vec<Value> = s.transactions().map(|t| t.eve()).collect();
        assert_eq!(t[0]["truncated"]["skipped_length"], n as u64);
        assert!(t[1].get("pingreq").is_some());
    }

    #[test]
    fn long_messages_are_logged_truncated() {
        let m = vec![b'a'; LOG_LIMIT + 5];
        let v = log_message(&m);
        let t = v.as_str().unwrap();
        assert!(t.starts_with("aaa"));
        assert!(t.ends_with("a[truncated 5 additional bytes]"));
        assert_eq!(log_message(b"\xffz"), Value::String("\\xffz".into()));
    }

    #[test]
    fn gap_stops_the_direction() {
        let mut s = st();
        feed(&mut s, Direction::ToServer, &CONNECT5[..10]);
        s.on_gap(Direction::ToServer);
        feed(&mut s, Direction::ToServer, PUBLISH0);
        assert_eq!(s.transactions().count(), 0);
        // The other direction goes on.
        feed(&mut s, Direction::ToClient, CONNACK134);
        assert_eq!(s.transactions().count(), 1);
    }

    #[test]
    fn probe() {
        assert_eq!(probe_connect(CONNECT5), Some(true));
        assert_eq!(probe_connect(&CONNECT5[..5]), None);
        assert_eq!(probe_connect(b"\x10\x0c\x00\x06MQIsdp\x03"), Some(true));
        assert_eq!(probe_connect(b"\x20\x02\x00\x00"), Some(false));
        assert_eq!(probe_connect(b"\x10\x0c\x00\x04HTTP"), Some(false));
    }
}
