//! The parsers behind one interface: MQTT, RFB, DHCP, SMTP and FTP data plug into
//! [`crate::AppLayerState`] as one variant through [`TxParser`], and
//! expose their integer fields to detection by [`UintField`] (one generic
//! check in the detection crate instead of one per keyword).

use serde_json::Value;

use crate::state::{TxCommon, TxProgress};
use crate::{AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId};

/// What a transaction-based parser offers the engine.
pub(crate) trait TxParser: Send + Sync {
    fn proto(&self) -> AppProto;
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>);
    fn on_gap(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>);
    fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>);
    /// The transactions held, oldest first, with their progress.
    fn infos(&self) -> Vec<(&TxCommon, TxProgress)>;
    fn common(&self, tx: TxId) -> Option<&TxCommon>;
    fn common_mut(&mut self, tx: TxId) -> Option<&mut TxCommon>;
    /// Keeps the transactions `keep` admits.
    fn retain(&mut self, keep: &mut dyn FnMut(&TxCommon, TxProgress) -> bool);
    fn buffers(&self, tx: TxId, id: BufferId, dir: Direction) -> Vec<&[u8]>;
    /// The values of an integer field on a transaction, for the direction
    /// inspected (empty: absent).
    fn uints(&self, tx: TxId, field: UintField, dir: Direction) -> Vec<u64>;
    fn eve(&self, tx: TxId) -> Option<Value>;
    /// The object an alert on the transaction carries, when it is not the
    /// record's (DNP3 wraps it by direction).
    fn eve_alert(&self, tx: TxId) -> Option<Value> {
        self.eve(tx)
    }
    /// Objects logged beside the protocol's own (SMTP's `email`).
    fn eve_siblings(&self, _tx: TxId) -> Vec<(&'static str, Value)> {
        Vec::new()
    }
    /// The decoded mail a transaction carries (SMTP's DATA, POP3's
    /// RETR): its parts are its files.
    fn mime(&self, _tx: TxId) -> Option<&crate::smtp::mime::Mime> {
        None
    }
    /// The direction of a transaction that is one message of one side
    /// (DHCP): it is inspected and logged in that direction only.
    fn tx_dir(&self, _tx: TxId) -> Option<Direction> {
        None
    }
    fn wants_data(&self, _dir: Direction) -> bool {
        true
    }
    /// The protocol the flow goes on in, and the caps to parse it with
    /// (PostgreSQL's accepted SSLRequest: TLS).
    fn upgrade(&self) -> Option<(AppProto, &crate::AppLayerConfig)> {
        None
    }
    /// The bytes each side sent after the hand-over to [`upgrade`]'s
    /// protocol, for its parser (to the server, to the client).
    ///
    /// [`upgrade`]: TxParser::upgrade
    fn take_pending(&mut self) -> [Vec<u8>; 2] {
        Default::default()
    }

    /// Whether the transaction stays out of the transaction log (NFS's
    /// GETATTR).
    fn log_filtered(&self, _tx: TxId) -> bool {
        false
    }

    /// ENIP's `cip_service` on a transaction's direction.
    fn cip_service(&self, _tx: TxId, _dir: Direction, _spec: &crate::enip::CipServiceSpec) -> bool {
        false
    }
    /// The `modbus` keyword on a transaction.
    fn modbus_match(&self, _tx: TxId, _spec: &crate::modbus::ModbusSpec) -> bool {
        false
    }
}

/// A transaction as [`TxList`] needs it.
pub(crate) trait Tx {
    fn common(&self) -> &TxCommon;
    fn progress(&self) -> TxProgress;
}

/// A flow's transactions, capped: the oldest is dropped past `max`.
#[derive(Debug)]
pub(crate) struct TxList<T> {
    pub txs: std::collections::VecDeque<T>,
    pub next_id: TxId,
    pub max: usize,
}

impl<T: Tx> TxList<T> {
    pub fn new(max: usize) -> Self {
        TxList {
            txs: Default::default(),
            next_id: 0,
            max: max.max(1),
        }
    }

    /// Adds a transaction built from its id; returns whether an old one
    /// had to go (the protocol's too-many-transactions event).
    pub fn push(&mut self, make: impl FnOnce(TxId) -> T) -> bool {
        let dropped = self.txs.len() >= self.max;
        if dropped {
            self.txs.pop_front();
        }
        let id = self.next_id;
        self.next_id += 1;
        self.txs.push_back(make(id));
        dropped
    }

    pub fn get(&self, id: TxId) -> Option<&T> {
        self.txs.iter().find(|t| t.common().id == id)
    }

    pub fn get_mut(&mut self, id: TxId) -> Option<&mut T> {
        self.txs.iter_mut().find(|t| t.common().id == id)
    }

    pub fn infos(&self) -> Vec<(&TxCommon, TxProgress)> {
        self.txs
            .iter()
            .map(|t| (t.common(), t.progress()))
            .collect()
    }

    pub fn retain(&mut self, keep: &mut dyn FnMut(&TxCommon, TxProgress) -> bool) {
        self.txs.retain(|t| keep(t.common(), t.progress()));
    }
}

/// Bytes as Suricata's JSON builder writes them: the text when it is
/// UTF-8, else ASCII bytes as characters and the others as `\xNN`.
pub(crate) fn suri_str(b: &[u8]) -> Value {
    match std::str::from_utf8(b) {
        Ok(s) => Value::String(s.to_string()),
        Err(_) => {
            let mut s = String::with_capacity(b.len());
            for &c in b {
                if c.is_ascii() {
                    s.push(c as char);
                } else {
                    s.push_str(&format!("\\x{c:02x}"));
                }
            }
            Value::String(s)
        }
    }
}

/// How the value of an integer keyword is written.
enum Syntax {
    /// A number or comparison, or one of these names.
    Enum(&'static [(&'static str, u64)]),
    /// Comma-separated flag names, each optionally negated (`retain,!dup`).
    Flags(&'static [(&'static str, u64)]),
    /// `true`/`false` (`yes`/`no`).
    Bool,
}

macro_rules! uint_fields {
    ($($v:ident => $kw:literal, $proto:ident, $max:expr, $syn:expr;)*) => {
        /// An integer field of a transaction an integer keyword tests.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum UintField { $($v,)* }
        impl UintField {
            /// Every field (robustness tests and fuzz targets ask each).
            pub const ALL: &'static [UintField] = &[$(UintField::$v,)*];
            /// The field a keyword names (Suricata's name and aliases).
            pub fn from_keyword(kw: &str) -> Option<UintField> {
                Some(match kw {
                    $($kw => UintField::$v,)*
                    _ => return None,
                })
            }
            pub fn keyword(self) -> &'static str {
                match self { $(UintField::$v => $kw,)* }
            }
            pub fn proto(self) -> AppProto {
                match self { $(UintField::$v => AppProto::$proto,)* }
            }
            /// The largest value the field holds.
            pub fn max(self) -> u64 {
                match self { $(UintField::$v => $max,)* }
            }
            fn syntax(self) -> Syntax {
                match self { $(UintField::$v => $syn,)* }
            }
        }
    };
}

const NONE: Syntax = Syntax::Enum(&[]);

uint_fields! {
    MqttType => "mqtt.type", Mqtt, 255, Syntax::Enum(crate::mqtt::TYPE_NAMES);
    MqttFlags => "mqtt.flags", Mqtt, 15, Syntax::Flags(&[("dup", 8), ("retain", 1)]);
    MqttQos => "mqtt.qos", Mqtt, 3, NONE;
    MqttReasonCode => "mqtt.reason_code", Mqtt, 255, NONE;
    MqttConnackSessionPresent => "mqtt.connack.session_present", Mqtt, 1, Syntax::Bool;
    MqttProtocolVersion => "mqtt.protocol_version", Mqtt, 255, NONE;
    MqttConnectFlags => "mqtt.connect.flags", Mqtt, 255, Syntax::Flags(&[
        ("username", 0x80), ("password", 0x40), ("will_retain", 0x20), ("will", 0x04),
        ("clean_session", 0x02),
    ]);
    RfbSectype => "rfb.sectype", Rfb, u32::MAX as u64, NONE;
    RfbSecresult => "rfb.secresult", Rfb, u32::MAX as u64,
        Syntax::Enum(&[("ok", 0), ("fail", 1), ("toomany", 2), ("unknown", 3)]);
    DhcpLeasetime => "dhcp.leasetime", Dhcp, u64::MAX, NONE;
    DhcpRebindingTime => "dhcp.rebinding_time", Dhcp, u64::MAX, NONE;
    DhcpRenewalTime => "dhcp.renewal_time", Dhcp, u64::MAX, NONE;
    FtpdataCommand => "ftpdata_command", FtpData, 4,
        Syntax::Enum(crate::ftpdata::COMMAND_NAMES);
    WebsocketOpcode => "websocket.opcode", WebSocket, 255,
        Syntax::Enum(crate::websocket::OPCODE_NAMES);
    WebsocketFlags => "websocket.flags", WebSocket, 255,
        Syntax::Flags(crate::websocket::FLAG_NAMES);
    WebsocketMask => "websocket.mask", WebSocket, u32::MAX as u64, NONE;
    EnipCommand => "enip.command", Enip, 65535, Syntax::Enum(crate::enip::COMMAND_NAMES);
    Dnp3Func => "dnp3.func", Dnp3, 255, Syntax::Enum(crate::dnp3::FUNC_NAMES);
    Dnp3Ind => "dnp3.ind", Dnp3, 65535, Syntax::Flags(crate::dnp3::IND_NAMES);
    Dnp3Obj => "dnp3.obj", Dnp3, 65535, NONE;
    EnipStatus => "enip.status", Enip, u32::MAX as u64, Syntax::Enum(crate::enip::STATUS_NAMES);
    EnipProtocolVersion => "enip.protocol_version", Enip, 65535, NONE;
    EnipCipAttribute => "enip.cip_attribute", Enip, u32::MAX as u64, NONE;
    EnipCipInstance => "enip.cip_instance", Enip, u32::MAX as u64, NONE;
    EnipCipClass => "enip.cip_class", Enip, u32::MAX as u64, NONE;
    EnipCipExtendedstatus => "enip.cip_extendedstatus", Enip, 65535, NONE;
    EnipCipStatus => "enip.cip_status", Enip, 255, NONE;
    EnipRevision => "enip.revision", Enip, 65535, NONE;
    EnipIdentityStatus => "enip.identity_status", Enip, 65535, NONE;
    EnipState => "enip.state", Enip, 255, NONE;
    EnipSerial => "enip.serial", Enip, u32::MAX as u64, NONE;
    EnipProductCode => "enip.product_code", Enip, 65535, NONE;
    EnipDeviceType => "enip.device_type", Enip, 65535, NONE;
    EnipVendorId => "enip.vendor_id", Enip, 65535, NONE;
    EnipCapabilities => "enip.capabilities", Enip, 65535, NONE;
    LdapRequestOperation => "ldap.request.operation", Ldap, 255,
        Syntax::Enum(crate::ldap::OPERATION_NAMES);
    LdapResponsesOperation => "ldap.responses.operation", Ldap, 255,
        Syntax::Enum(crate::ldap::OPERATION_NAMES);
    LdapResponsesCount => "ldap.responses.count", Ldap, u32::MAX as u64, NONE;
    LdapResponsesResultCode => "ldap.responses.result_code", Ldap, u32::MAX as u64,
        Syntax::Enum(crate::ldap::RESULT_CODE_NAMES);
    NfsProcedure => "nfs_procedure", Nfs, u32::MAX as u64, NONE;
    NfsVersion => "nfs.version", Nfs, u32::MAX as u64, NONE;
}

impl UintField {
    /// The one direction the field is inspected in when it belongs to
    /// one side of the protocol (Suricata's registration): `None` for
    /// both.
    pub fn direction(self) -> Option<Direction> {
        match self {
            UintField::RfbSectype => Some(Direction::ToServer),
            UintField::RfbSecresult => Some(Direction::ToClient),
            UintField::LdapRequestOperation => Some(Direction::ToServer),
            UintField::LdapResponsesOperation
            | UintField::LdapResponsesCount
            | UintField::LdapResponsesResultCode => Some(Direction::ToClient),
            UintField::NfsProcedure | UintField::NfsVersion => Some(Direction::ToServer),
            _ => None,
        }
    }

    /// The value of the keyword in the integer syntax of the detection
    /// crate: names become numbers, flag lists a bitmask test
    /// (`&mask=value`), `true`/`false` 1/0. Other text is returned as is.
    pub fn normalize(self, value: &str) -> Result<String, String> {
        let v = value.trim().trim_matches('"').trim();
        match self.syntax() {
            Syntax::Enum(names) => {
                let (neg, body) = match v.strip_prefix('!') {
                    Some(b) => ("!", b.trim()),
                    None => ("", v),
                };
                // The name may be followed by the multi-integer index
                // (`CONNACK,all`).
                let (head, tail) = match body.split_once(',') {
                    Some((h, t)) => (h.trim(), format!(",{t}")),
                    None => (body, String::new()),
                };
                match names.iter().find(|(n, _)| n.eq_ignore_ascii_case(head)) {
                    Some((_, n)) => Ok(format!("{neg}{n}{tail}")),
                    None => Ok(v.to_string()),
                }
            }
            Syntax::Bool => match v.to_ascii_lowercase().as_str() {
                "" | "true" | "yes" | "1" => Ok("1".into()),
                "false" | "no" | "0" => Ok("0".into()),
                x => Err(format!("{}: invalid value '{x}'", self.keyword())),
            },
            Syntax::Flags(names) => {
                if v.starts_with('&') || v.bytes().next().is_some_and(|c| c.is_ascii_digit()) {
                    return Ok(v.to_string());
                }
                let (mut mask, mut want) = (0u64, 0u64);
                for part in v.split(',').map(str::trim) {
                    let (neg, name) = match part.strip_prefix('!') {
                        Some(n) => (true, n.trim()),
                        None => (false, part),
                    };
                    let Some((_, bit)) = names.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))
                    else {
                        return Err(format!("{}: unknown flag '{name}'", self.keyword()));
                    };
                    if mask & bit != 0 {
                        return Err(format!("{}: flag '{name}' twice", self.keyword()));
                    }
                    mask |= bit;
                    if !neg {
                        want |= bit;
                    }
                }
                Ok(format!("&{mask}={want}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_names_flags_and_bools() {
        assert_eq!(UintField::MqttType.normalize("CONNACK").unwrap(), "2");
        assert_eq!(UintField::MqttType.normalize("!publish").unwrap(), "!3");
        assert_eq!(UintField::MqttType.normalize("3,all").unwrap(), "3,all");
        assert_eq!(
            UintField::MqttFlags.normalize("retain,!dup").unwrap(),
            "&9=1"
        );
        assert!(UintField::MqttFlags.normalize("retain,retain").is_err());
        assert!(UintField::MqttConnectFlags.normalize("bogus").is_err());
        assert_eq!(
            UintField::MqttConnackSessionPresent
                .normalize("no")
                .unwrap(),
            "0"
        );
        assert_eq!(UintField::RfbSecresult.normalize("ok").unwrap(), "0");
    }

    #[test]
    fn suricata_strings() {
        assert_eq!(suri_str(b"ab\xffc"), Value::String("ab\\xffc".into()));
        assert_eq!(suri_str("é".as_bytes()), Value::String("é".into()));
    }
}
