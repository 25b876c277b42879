//! LDAP over TCP and UDP (CLDAP), as Suricata's `rust/src/ldap`.
//!
//! Each message (`LDAPMessage`, RFC 4511) is framed by its outer BER
//! header here, buffered whole (up to [`MAX_MESSAGE`]) and decoded by the
//! `ldap-parser` crate. A transaction is a request and the responses
//! that carry its message id (a search: its entries, references and the
//! final SearchResultDone); a response whose id matches no request is a
//! transaction of its own, with `request_not_found` unless it is an
//! ExtendedResponse (an unsolicited notification, message id 0). As in
//! Suricata, a transaction is complete with a final response (bind,
//! search done, modify, add, del, moddn, compare, extended) or with an
//! UnbindRequest.
//!
//! Malformed input stops the parser for the flow (Suricata's parser
//! error): a bad response raises `invalid_data` (a bad request over TCP
//! raises nothing, as in Suricata); over UDP a truncated message raises
//! `incomplete_data` and a bad one `invalid_data`. A TCP message whose
//! inner lengths run past its end is one the decoder waits on forever,
//! as in Suricata: that side is parsed no further, silently, while the
//! other goes on. A SearchRequest whose filter nests past the crate's
//! depth limit is taken without its filter ([`decode_deep_search`]), as
//! Suricata takes it. After a gap a side
//! resumes only when its next bytes start with a message that decodes,
//! else the parser stops. More open transactions than
//! `max_transactions` drop the oldest with `too_many_transactions`.

use ldap_parser::asn1_rs::FromBer;
use ldap_parser::filter::{Attribute, Filter, PartialAttribute};
use ldap_parser::ldap::{AuthenticationChoice, Control, LdapMessage, LdapResult, ProtocolOp};
use serde_json::{json, Map, Value};

use crate::events::LdapEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser};
use crate::{
    hex_lower, AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, Transport,
    TxId, UintField,
};

/// Suricata's default `detection-ports` for LDAP over TCP and UDP.
pub const PORTS: [u16; 2] = [389, 3268];
/// Largest message buffered; a longer one is invalid data.
pub const MAX_MESSAGE: usize = 1024 * 1024;

/// Operation codes and names (Suricata's `ProtocolOpCode`, the values of
/// `ldap.request.operation` and `ldap.responses.operation`).
pub const OPERATION_NAMES: &[(&str, u64)] = &[
    ("bind_request", 0),
    ("bind_response", 1),
    ("unbind_request", 2),
    ("search_request", 3),
    ("search_result_entry", 4),
    ("search_result_done", 5),
    ("modify_request", 6),
    ("modify_response", 7),
    ("add_request", 8),
    ("add_response", 9),
    ("del_request", 10),
    ("del_response", 11),
    ("mod_dn_request", 12),
    ("mod_dn_response", 13),
    ("compare_request", 14),
    ("compare_response", 15),
    ("abandon_request", 16),
    ("search_result_reference", 19),
    ("extended_request", 23),
    ("extended_response", 24),
    ("intermediate_response", 25),
];

/// LDAPResult codes and the names Suricata logs and
/// `ldap.responses.result_code` accepts.
pub const RESULT_CODE_NAMES: &[(&str, u64)] = &[
    ("success", 0),
    ("operations_error", 1),
    ("protocol_error", 2),
    ("time_limit_exceeded", 3),
    ("size_limit_exceeded", 4),
    ("compare_false", 5),
    ("compare_true", 6),
    ("auth_method_not_supported", 7),
    ("stronger_auth_required", 8),
    ("referral", 10),
    ("admin_limit_exceeded", 11),
    ("unavailable_critical_extension", 12),
    ("confidentiality_required", 13),
    ("sasl_bind_in_progress", 14),
    ("no_such_attribute", 16),
    ("undefined_attribute_type", 17),
    ("inappropriate_matching", 18),
    ("constraint_violation", 19),
    ("attribute_or_value_exists", 20),
    ("invalid_attribute_syntax", 21),
    ("no_such_object", 32),
    ("alias_problem", 33),
    ("invalid_dns_syntax", 34),
    ("is_leaf", 35),
    ("alias_dereferencing_problem", 36),
    ("inappropriate_authentication", 48),
    ("invalid_credentials", 49),
    ("insufficient_access_rights", 50),
    ("busy", 51),
    ("unavailable", 52),
    ("unwilling_to_perform", 53),
    ("loop_detect", 54),
    ("sort_control_missing", 60),
    ("offset_range_error", 61),
    ("naming_violation", 64),
    ("object_class_violation", 65),
    ("not_allowed_on_non_leaf", 66),
    ("not_allowed_on_rdn", 67),
    ("entry_already_exists", 68),
    ("object_class_mods_prohibited", 69),
    ("results_too_large", 70),
    ("affects_multiple_dsas", 71),
    ("control_error", 76),
    ("other", 80),
    ("server_down", 81),
    ("local_error", 82),
    ("encoding_error", 83),
    ("decoding_error", 84),
    ("timeout", 85),
    ("auth_unknown", 86),
    ("filter_error", 87),
    ("user_canceled", 88),
    ("param_error", 89),
    ("no_memory", 90),
    ("connect_error", 91),
    ("not_supported", 92),
    ("control_not_found", 93),
    ("no_results_returned", 94),
    ("more_results_to_return", 95),
    ("client_loop", 96),
    ("referral_limit_exceeded", 97),
    ("invalid_response", 100),
    ("ambiguous_response", 101),
    ("tls_not_supported", 112),
    ("intermediate_response", 113),
    ("unknown_type", 114),
    ("canceled", 118),
    ("no_such_operation", 119),
    ("too_late", 120),
    ("cannot_cancel", 121),
    ("assertion_failed", 122),
    ("authorization_denied", 123),
    ("e_sync_refresh_required", 4096),
    ("no_operation", 16654),
];

fn name_of(table: &[(&'static str, u64)], v: u64) -> Value {
    match table.iter().find(|(_, n)| *n == v) {
        Some((s, _)) => Value::String((*s).to_string()),
        None => Value::String(v.to_string()),
    }
}

/// One decoded message, kept as what detection and logging need.
#[derive(Clone, Debug, PartialEq)]
pub struct LdapMsg {
    pub message_id: u32,
    /// The protocolOp's application tag ([`OPERATION_NAMES`]).
    pub op: u8,
    /// The DN `ldap.request.dn` / `ldap.responses.dn` inspects.
    pub dn: Option<Vec<u8>>,
    /// The LDAPResult's code and diagnostic message.
    pub result: Option<(u32, Vec<u8>)>,
    /// The attribute types `ldap.*.attribute_type` inspects.
    pub attribute_types: Vec<Vec<u8>>,
    /// The operation's own EVE object (`bind_request`, ...).
    detail: Option<(&'static str, Value)>,
    controls: Option<Value>,
}

fn s(c: &str) -> Value {
    Value::String(c.to_string())
}

fn result_eve(r: &LdapResult) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "result_code".into(),
        name_of(RESULT_CODE_NAMES, u64::from(r.result_code.0)),
    );
    m.insert("matched_dn".into(), s(&r.matched_dn.0));
    m.insert("message".into(), s(&r.diagnostic_message.0));
    m
}

fn values<'a>(vals: impl Iterator<Item = &'a [u8]>) -> Option<Value> {
    let v: Vec<Value> = vals.map(suri_str).collect();
    (!v.is_empty()).then_some(Value::Array(v))
}

fn partial_attrs(attrs: &[PartialAttribute], key: &str) -> Option<Value> {
    let v: Vec<Value> = attrs
        .iter()
        .map(|a| {
            let mut m = Map::new();
            m.insert(key.into(), s(&a.attr_type.0));
            if let Some(v) = values(a.attr_vals.iter().map(|v| &v.0[..])) {
                m.insert("values".into(), v);
            }
            Value::Object(m)
        })
        .collect();
    (!v.is_empty()).then_some(Value::Array(v))
}

fn add_attrs(attrs: &[Attribute]) -> Option<Value> {
    let v: Vec<Value> = attrs
        .iter()
        .map(|a| {
            let mut m = Map::new();
            m.insert("name".into(), s(&a.attr_type.0));
            if let Some(v) = values(a.attr_vals.iter().map(|v| &v.0[..])) {
                m.insert("values".into(), v);
            }
            Value::Object(m)
        })
        .collect();
    (!v.is_empty()).then_some(Value::Array(v))
}

fn controls_eve(c: &[Control]) -> Value {
    Value::Array(
        c.iter()
            .map(|c| {
                let mut m = Map::new();
                m.insert("control_type".into(), s(&c.control_type.0));
                m.insert("criticality".into(), c.criticality.into());
                if let Some(v) = &c.control_value {
                    m.insert("control_value".into(), hex_lower(v).into());
                }
                Value::Object(m)
            })
            .collect(),
    )
}

impl LdapMsg {
    fn from_parsed(m: &LdapMessage) -> LdapMsg {
        let mut out = LdapMsg {
            message_id: m.message_id.0,
            op: m.protocol_op.tag().0 as u8,
            dn: None,
            result: m
                .protocol_op
                .result()
                .map(|r| (r.result_code.0, r.diagnostic_message.0.as_bytes().to_vec())),
            attribute_types: Vec::new(),
            detail: None,
            controls: m.controls.as_ref().map(|c| controls_eve(c)),
        };
        let dn = |d: &str| Some(d.as_bytes().to_vec());
        let with_result =
            |name: &'static str, r: &LdapResult| Some((name, Value::Object(result_eve(r))));
        match &m.protocol_op {
            ProtocolOp::BindRequest(r) => {
                out.dn = dn(&r.name.0);
                let mut o = Map::new();
                o.insert("version".into(), r.version.into());
                o.insert("name".into(), s(&r.name.0));
                if let AuthenticationChoice::Sasl(sasl) = &r.authentication {
                    let mut a = Map::new();
                    a.insert("mechanism".into(), s(&sasl.mechanism.0));
                    if let Some(c) = &sasl.credentials {
                        a.insert("credentials".into(), hex_lower(c).into());
                    }
                    o.insert("sasl".into(), Value::Object(a));
                }
                out.detail = Some(("bind_request", Value::Object(o)));
            }
            ProtocolOp::BindResponse(r) => {
                out.dn = dn(&r.result.matched_dn.0);
                let mut o = result_eve(&r.result);
                if let Some(c) = &r.server_sasl_creds {
                    o.insert("server_sasl_creds".into(), hex_lower(c).into());
                }
                out.detail = Some(("bind_response", Value::Object(o)));
            }
            ProtocolOp::UnbindRequest => {}
            ProtocolOp::SearchRequest(r) => {
                out.dn = dn(&r.base_object.0);
                out.attribute_types = r
                    .attributes
                    .iter()
                    .map(|a| a.0.as_bytes().to_vec())
                    .collect();
                // Suricata logs a filter of the `present` kind only.
                let present = match &r.filter {
                    Filter::Present(a) => Some(&*a.0),
                    _ => None,
                };
                let attrs: Vec<&str> = r.attributes.iter().map(|a| &*a.0).collect();
                out.detail = Some(search_request_eve(
                    SearchFields {
                        base: &r.base_object.0,
                        scope: r.scope.0,
                        deref: r.deref_aliases.0,
                        size: r.size_limit,
                        time: r.time_limit,
                        types_only: r.types_only,
                    },
                    present,
                    &attrs,
                ));
            }
            ProtocolOp::SearchResultEntry(r) => {
                out.dn = dn(&r.object_name.0);
                out.attribute_types = r
                    .attributes
                    .iter()
                    .map(|a| a.attr_type.0.as_bytes().to_vec())
                    .collect();
                let mut o = Map::new();
                o.insert("base_object".into(), s(&r.object_name.0));
                if let Some(a) = partial_attrs(&r.attributes, "type") {
                    o.insert("attributes".into(), a);
                }
                out.detail = Some(("search_result_entry", Value::Object(o)));
            }
            ProtocolOp::SearchResultDone(r) => {
                out.dn = dn(&r.matched_dn.0);
                out.detail = with_result("search_result_done", r);
            }
            ProtocolOp::SearchResultReference(_) => {}
            ProtocolOp::ModifyRequest(r) => {
                out.dn = dn(&r.object.0);
                out.attribute_types = r
                    .changes
                    .iter()
                    .map(|c| c.modification.attr_type.0.as_bytes().to_vec())
                    .collect();
                let mut o = Map::new();
                o.insert("object".into(), s(&r.object.0));
                let changes: Vec<Value> = r
                    .changes
                    .iter()
                    .map(|c| {
                        let mut md = Map::new();
                        md.insert("attribute_type".into(), s(&c.modification.attr_type.0));
                        if let Some(v) = values(c.modification.attr_vals.iter().map(|v| &v.0[..])) {
                            md.insert("attribute_values".into(), v);
                        }
                        let op = match c.operation.0 {
                            0 => s("add"),
                            1 => s("delete"),
                            2 => s("replace"),
                            n => Value::String(n.to_string()),
                        };
                        json!({"operation": op, "modification": Value::Object(md)})
                    })
                    .collect();
                if !changes.is_empty() {
                    o.insert("changes".into(), Value::Array(changes));
                }
                out.detail = Some(("modify_request", Value::Object(o)));
            }
            ProtocolOp::ModifyResponse(r) => {
                out.dn = dn(&r.result.matched_dn.0);
                out.detail = with_result("modify_response", &r.result);
            }
            ProtocolOp::AddRequest(r) => {
                out.dn = dn(&r.entry.0);
                out.attribute_types = r
                    .attributes
                    .iter()
                    .map(|a| a.attr_type.0.as_bytes().to_vec())
                    .collect();
                let mut o = Map::new();
                o.insert("entry".into(), s(&r.entry.0));
                if let Some(a) = add_attrs(&r.attributes) {
                    o.insert("attributes".into(), a);
                }
                out.detail = Some(("add_request", Value::Object(o)));
            }
            ProtocolOp::AddResponse(r) => {
                out.dn = dn(&r.matched_dn.0);
                out.detail = with_result("add_response", r);
            }
            ProtocolOp::DelRequest(r) => {
                out.dn = dn(&r.0);
                out.detail = Some(("del_request", json!({"dn": r.0})));
            }
            ProtocolOp::DelResponse(r) => {
                out.dn = dn(&r.matched_dn.0);
                out.detail = with_result("del_response", r);
            }
            ProtocolOp::ModDnRequest(r) => {
                out.dn = dn(&r.entry.0);
                let mut o = Map::new();
                o.insert("entry".into(), s(&r.entry.0));
                o.insert("new_rdn".into(), s(&r.newrdn.0));
                o.insert("delete_old_rdn".into(), r.deleteoldrdn.into());
                if let Some(n) = &r.newsuperior {
                    o.insert("new_superior".into(), s(&n.0));
                }
                out.detail = Some(("mod_dn_request", Value::Object(o)));
            }
            ProtocolOp::ModDnResponse(r) => {
                out.dn = dn(&r.matched_dn.0);
                out.detail = with_result("mod_dn_response", r);
            }
            ProtocolOp::CompareRequest(r) => {
                out.dn = dn(&r.entry.0);
                out.attribute_types = vec![r.ava.attribute_desc.0.as_bytes().to_vec()];
                out.detail = Some((
                    "compare_request",
                    json!({
                        "entry": r.entry.0,
                        "attribute_value_assertion": {
                            "description": r.ava.attribute_desc.0,
                            "value": suri_str(&r.ava.assertion_value),
                        }
                    }),
                ));
            }
            ProtocolOp::CompareResponse(r) => {
                out.dn = dn(&r.matched_dn.0);
                out.detail = with_result("compare_response", r);
            }
            ProtocolOp::AbandonRequest(id) => {
                out.detail = Some(("abandon_request", json!({"message_id": id.0})));
            }
            ProtocolOp::ExtendedRequest(r) => {
                let mut o = Map::new();
                o.insert("name".into(), s(&r.request_name.0));
                if let Some(v) = &r.request_value {
                    o.insert("value".into(), suri_str(v));
                }
                out.detail = Some(("extended_request", Value::Object(o)));
            }
            ProtocolOp::ExtendedResponse(r) => {
                out.dn = dn(&r.result.matched_dn.0);
                let mut o = result_eve(&r.result);
                if let Some(n) = &r.response_name {
                    o.insert("name".into(), s(&n.0));
                }
                if let Some(v) = &r.response_value {
                    o.insert("value".into(), suri_str(v));
                }
                out.detail = Some(("extended_response", Value::Object(o)));
            }
            ProtocolOp::IntermediateResponse(r) => {
                let mut o = Map::new();
                if let Some(n) = &r.response_name {
                    o.insert("name".into(), s(&n.0));
                }
                if let Some(v) = &r.response_value {
                    o.insert("value".into(), suri_str(v));
                }
                out.detail = Some(("intermediate_response", Value::Object(o)));
            }
        }
        out
    }

    /// The operation's name as logged.
    pub fn operation(&self) -> Value {
        name_of(OPERATION_NAMES, u64::from(self.op))
    }

    /// Whether this message completes its transaction (Suricata's
    /// `tx_is_complete`): an UnbindRequest, a final response.
    fn completes(&self, dir: Direction) -> bool {
        match dir {
            Direction::ToServer => self.op == 2,
            Direction::ToClient => matches!(self.op, 1 | 5 | 7 | 9 | 11 | 13 | 15 | 24),
        }
    }

    fn eve_into(&self, m: &mut Map<String, Value>) {
        m.insert("operation".into(), self.operation());
        if let Some((k, v)) = &self.detail {
            m.insert((*k).into(), v.clone());
        }
        if let Some(c) = &self.controls {
            m.insert("controls".into(), c.clone());
        }
    }
}

/// What the framing found at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
enum Frame {
    /// A whole message of this many bytes.
    Whole(usize),
    /// The start of a message: more bytes needed.
    Partial,
    /// Not an LDAPMessage (or one longer than [`MAX_MESSAGE`]).
    Bad,
}

/// The outer BER header: a SEQUENCE (0x30) with a definite length.
fn frame(b: &[u8]) -> Frame {
    let Some(&t) = b.first() else {
        return Frame::Partial;
    };
    if t != 0x30 {
        return Frame::Bad;
    }
    let Some(&l0) = b.get(1) else {
        return Frame::Partial;
    };
    let (hdr, len) = if l0 < 0x80 {
        (2, usize::from(l0))
    } else {
        let n = usize::from(l0 & 0x7f);
        if n == 0 || n > 4 {
            return Frame::Bad;
        }
        if b.len() < 2 + n {
            return Frame::Partial;
        }
        let len = b[2..2 + n]
            .iter()
            .fold(0usize, |a, &c| (a << 8) | usize::from(c));
        (2 + n, len)
    };
    let total = hdr + len;
    if total > MAX_MESSAGE {
        return Frame::Bad;
    }
    if b.len() < total {
        Frame::Partial
    } else {
        Frame::Whole(total)
    }
}

/// Why a whole frame did not decode.
#[derive(Debug, PartialEq, Eq)]
enum Undecoded {
    /// The decoder wants more bytes than the frame holds (an inner
    /// length past its end): Suricata's parser waits for them forever.
    Incomplete,
    Invalid,
}

/// Decodes one whole message.
fn decode(b: &[u8]) -> Result<LdapMsg, Undecoded> {
    match LdapMessage::from_ber(b) {
        Ok((_, m)) => Ok(LdapMsg::from_parsed(&m)),
        Err(ldap_parser::Err::Incomplete(_)) => Err(Undecoded::Incomplete),
        Err(_) => decode_deep_search(b).ok_or(Undecoded::Invalid),
    }
}

/// A SearchRequest's fixed fields, as both decoders read them.
struct SearchFields<'a> {
    base: &'a str,
    scope: u32,
    deref: u32,
    size: u32,
    time: u32,
    types_only: bool,
}

/// The EVE `search_request` object (Suricata's key order), with the
/// filter when it is of the `present` kind.
fn search_request_eve(
    f: SearchFields<'_>,
    present: Option<&str>,
    attributes: &[&str],
) -> (&'static str, Value) {
    let mut o = Map::new();
    o.insert("base_object".into(), s(f.base));
    o.insert("scope".into(), f.scope.into());
    o.insert("deref_alias".into(), f.deref.into());
    o.insert("size_limit".into(), f.size.into());
    o.insert("time_limit".into(), f.time.into());
    o.insert("types_only".into(), f.types_only.into());
    if let Some(a) = present {
        o.insert("filter".into(), json!({"type": "present", "value": a}));
    }
    if !attributes.is_empty() {
        o.insert(
            "attributes".into(),
            Value::Array(attributes.iter().map(|a| s(a)).collect()),
        );
    }
    ("search_request", Value::Object(o))
}

/// A SearchRequest whose filter `ldap-parser` refuses (it nests deeper
/// than the crate's limit, 32): Suricata still takes such a request and
/// logs it without a filter (dev-mix holds a hundred, filters nested about
/// 200 deep). Its other fields are decoded here from the BER elements and
/// the filter is skipped whole, never recursed into; controls are not
/// read. `None` when the message is anything else or malformed.
fn decode_deep_search(b: &[u8]) -> Option<LdapMsg> {
    use ldap_parser::asn1_rs::{Any, Class, Enumerated, Tag};
    let (_, msg) = Any::from_ber(b).ok()?;
    if msg.tag() != Tag::Sequence {
        return None;
    }
    let (rest, id) = Any::from_ber(msg.data).ok()?;
    let message_id = u32::try_from(id).ok()?;
    let (_, op) = Any::from_ber(rest).ok()?;
    if op.class() != Class::Application || op.tag().0 != 3 {
        return None;
    }
    let mut els = Vec::with_capacity(8);
    let mut i = op.data;
    while !i.is_empty() && els.len() < 8 {
        let (r, a) = Any::from_ber(i).ok()?;
        els.push(a);
        i = r;
    }
    let [base, scope, deref, size, time, types_only, filter, attrs] =
        <[Any; 8]>::try_from(els).ok()?;
    if base.tag() != Tag::OctetString
        || filter.class() != Class::ContextSpecific
        || attrs.tag() != Tag::Sequence
    {
        return None;
    }
    let base = std::str::from_utf8(base.data).ok()?;
    let scope = Enumerated::try_from(scope).ok()?.0;
    let deref = Enumerated::try_from(deref).ok()?.0;
    let size = u32::try_from(size).ok()?;
    let time = u32::try_from(time).ok()?;
    let types_only = bool::try_from(types_only).ok()?;
    let mut attributes = Vec::new();
    let mut i = attrs.data;
    while !i.is_empty() {
        let (r, a) = Any::from_ber(i).ok()?;
        if a.tag() != Tag::OctetString {
            return None;
        }
        attributes.push(std::str::from_utf8(a.data).ok()?);
        i = r;
    }
    let detail = search_request_eve(
        SearchFields {
            base,
            scope,
            deref,
            size,
            time,
            types_only,
        },
        None,
        &attributes,
    );
    Some(LdapMsg {
        message_id,
        op: 3,
        dn: Some(base.as_bytes().to_vec()),
        result: None,
        attribute_types: attributes.iter().map(|a| a.as_bytes().to_vec()).collect(),
        detail: Some(detail),
        controls: None,
    })
}

/// Whether `b` (a side's first bytes) starts with an LDAP message, as
/// Suricata's probing parser: `None` while more bytes are needed.
pub fn probe(b: &[u8]) -> Option<bool> {
    match frame(b) {
        Frame::Bad => Some(false),
        Frame::Whole(n) => Some(decode(&b[..n]).is_ok()),
        Frame::Partial => {
            // The messageID INTEGER and the protocolOp's application tag
            // right after the header.
            let hdr = match b.get(1) {
                Some(&l) if l < 0x80 => 2,
                Some(&l) => 2 + usize::from(l & 0x7f),
                None => return None,
            };
            let id = b.get(hdr..hdr + 2)?;
            if id[0] != 0x02 || !(1..=5).contains(&id[1]) {
                return Some(false);
            }
            b.get(hdr + 2 + usize::from(id[1]))
                .map(|&t| t & 0xc0 == 0x40)
        }
    }
}

/// Whether a datagram starts with a whole LDAP message that decodes.
pub fn probe_datagram(b: &[u8]) -> bool {
    matches!(frame(b), Frame::Whole(n) if decode(&b[..n]).is_ok())
}

/// A request and its responses.
#[derive(Debug, Default)]
pub struct LdapTx {
    pub(crate) common: TxCommon,
    pub request: Option<LdapMsg>,
    pub responses: Vec<LdapMsg>,
    pub complete: bool,
}

impl Tx for LdapTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.complete || self.request.is_some(),
            response_complete: self.complete,
        }
    }
}

impl LdapTx {
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        if let Some(r) = &self.request {
            let mut o = Map::new();
            o.insert("message_id".into(), r.message_id.into());
            r.eve_into(&mut o);
            m.insert("request".into(), Value::Object(o));
        }
        if !self.responses.is_empty() {
            let v = self
                .responses
                .iter()
                .map(|r| {
                    let mut o = Map::new();
                    r.eve_into(&mut o);
                    if self.request.is_none() {
                        o.insert("message_id".into(), r.message_id.into());
                    }
                    Value::Object(o)
                })
                .collect();
            m.insert("responses".into(), Value::Array(v));
        }
        Value::Object(m)
    }

    pub fn uints(&self, f: UintField) -> Vec<u64> {
        match f {
            UintField::LdapRequestOperation => {
                self.request.iter().map(|r| u64::from(r.op)).collect()
            }
            UintField::LdapResponsesOperation => {
                self.responses.iter().map(|r| u64::from(r.op)).collect()
            }
            UintField::LdapResponsesCount => vec![self.responses.len() as u64],
            UintField::LdapResponsesResultCode => self
                .responses
                .iter()
                .filter_map(|r| r.result.as_ref().map(|x| u64::from(x.0)))
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        match id {
            BufferId::LdapRequestDn => self
                .request
                .as_ref()
                .and_then(|r| r.dn.as_deref())
                .into_iter()
                .collect(),
            BufferId::LdapRequestAttributeType => self
                .request
                .iter()
                .flat_map(|r| r.attribute_types.iter().map(|a| &a[..]))
                .collect(),
            // One per response, empty for one that has none (as
            // Suricata's getters, which go on to the next response).
            BufferId::LdapResponsesDn => self
                .responses
                .iter()
                .map(|r| r.dn.as_deref().unwrap_or_default())
                .collect(),
            BufferId::LdapResponsesMessage => self
                .responses
                .iter()
                .map(|r| r.result.as_ref().map_or(&b""[..], |x| &x.1[..]))
                .collect(),
            BufferId::LdapResponsesAttributeType => self
                .responses
                .iter()
                .filter(|r| r.op == 4)
                .flat_map(|r| r.attribute_types.iter().map(|a| &a[..]))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Per-flow LDAP state.
#[derive(Debug)]
pub struct LdapState {
    transport: Transport,
    txs: TxList<LdapTx>,
    bufs: [Vec<u8>; 2],
    /// A gap on the side: its next bytes must start a message.
    gap: [bool; 2],
    /// The parser stopped (Suricata's parser error).
    failed: bool,
    /// A side whose message never completes for the decoder: it is
    /// parsed no further, the other side goes on.
    stuck: [bool; 2],
}

impl LdapState {
    pub fn new(transport: Transport, cfg: &AppLayerConfig) -> Self {
        LdapState {
            transport,
            txs: TxList::new(cfg.max_transactions),
            bufs: [Vec::new(), Vec::new()],
            gap: [false; 2],
            failed: false,
            stuck: [false; 2],
        }
    }

    pub fn transactions(&self) -> impl Iterator<Item = &LdapTx> {
        self.txs.txs.iter()
    }

    fn fail(&mut self) {
        self.failed = true;
        self.bufs = [Vec::new(), Vec::new()];
    }

    /// The event on the newest transaction (Suricata's `set_event`).
    fn event(&self, e: LdapEvent, ev: &mut Vec<AppLayerEvent>) {
        let tx = self.txs.txs.back().map(|t| t.common.id);
        ev.push(AppLayerEvent::Ldap(e, tx));
    }

    fn new_tx(&mut self, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) -> TxId {
        let dropped = self.txs.push(|id| LdapTx {
            common: TxCommon::new(id, ts),
            ..Default::default()
        });
        let id = self.txs.next_id - 1;
        if dropped {
            ev.push(AppLayerEvent::Ldap(
                LdapEvent::TooManyTransactions,
                Some(id),
            ));
        }
        id
    }

    fn request(&mut self, m: LdapMsg, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let id = self.new_tx(ts, ev);
        if let Some(t) = self.txs.get_mut(id) {
            t.complete = m.completes(Direction::ToServer);
            t.request = Some(m);
        }
    }

    fn response(&mut self, m: LdapMsg, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let found = self.txs.txs.iter_mut().find(|t| {
            t.request
                .as_ref()
                .is_some_and(|r| r.message_id == m.message_id)
        });
        if let Some(t) = found {
            t.complete = m.completes(Direction::ToClient);
            t.responses.push(m);
            return;
        }
        let unsolicited = m.op == 24;
        let id = self.new_tx(ts, ev);
        if let Some(t) = self.txs.get_mut(id) {
            t.complete = true;
            t.responses.push(m);
        }
        if !unsolicited {
            ev.push(AppLayerEvent::Ldap(LdapEvent::RequestNotFound, Some(id)));
        }
    }

    fn message(&mut self, dir: Direction, m: LdapMsg, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        match dir {
            Direction::ToServer => self.request(m, ts, ev),
            Direction::ToClient => self.response(m, ts, ev),
        }
    }

    /// A bad message: the parser stops, with `invalid_data` for a
    /// response (and for anything over UDP), as Suricata.
    fn bad(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        if dir == Direction::ToClient || self.transport == Transport::Udp {
            self.event(LdapEvent::InvalidData, ev);
        }
        self.fail();
    }

    fn feed_udp(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let mut rest = data;
        while !rest.is_empty() {
            match frame(rest) {
                Frame::Whole(n) => match decode(&rest[..n]) {
                    Ok(m) => {
                        self.message(dir, m, ts, ev);
                        rest = &rest[n..];
                    }
                    Err(Undecoded::Incomplete) => {
                        self.event(LdapEvent::IncompleteData, ev);
                        return self.fail();
                    }
                    Err(Undecoded::Invalid) => return self.bad(dir, ev),
                },
                Frame::Partial => {
                    self.event(LdapEvent::IncompleteData, ev);
                    return self.fail();
                }
                Frame::Bad => return self.bad(dir, ev),
            }
            // A request datagram carries one message.
            if dir == Direction::ToServer {
                return;
            }
        }
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if self.failed || self.stuck[dir.index()] || data.is_empty() {
            return;
        }
        if self.transport == Transport::Udp {
            return self.feed_udp(dir, data, ts, ev);
        }
        let d = dir.index();
        self.bufs[d].extend_from_slice(data);
        let mut off = 0;
        loop {
            let b = &self.bufs[d][off..];
            if b.is_empty() {
                break;
            }
            match frame(b) {
                Frame::Whole(n) => match decode(&b[..n]) {
                    Ok(m) => {
                        self.gap[d] = false;
                        off += n;
                        self.message(dir, m, ts, ev);
                    }
                    // Not a message where the side resumed.
                    Err(_) if std::mem::take(&mut self.gap[d]) => return self.fail(),
                    Err(Undecoded::Incomplete) => {
                        self.stuck[d] = true;
                        self.bufs[d] = Vec::new();
                        return;
                    }
                    Err(Undecoded::Invalid) => return self.bad(dir, ev),
                },
                Frame::Partial => break,
                Frame::Bad => {
                    if std::mem::take(&mut self.gap[d]) {
                        return self.fail();
                    }
                    return self.bad(dir, ev);
                }
            }
        }
        self.bufs[d].drain(..off);
    }

    /// A gap: what was buffered is lost, the side's next bytes must
    /// start a message.
    pub fn on_gap(&mut self, dir: Direction) {
        self.bufs[dir.index()].clear();
        self.gap[dir.index()] = true;
    }
}

impl TxParser for LdapState {
    fn proto(&self) -> AppProto {
        AppProto::Ldap
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        LdapState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        LdapState::on_gap(self, dir)
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
    fn uints(&self, tx: TxId, field: UintField, _dir: Direction) -> Vec<u64> {
        self.txs.get(tx).map(|t| t.uints(field)).unwrap_or_default()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn wants_data(&self, dir: Direction) -> bool {
        !self.failed && !self.stuck[dir.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        if content.len() < 0x80 {
            v.push(content.len() as u8);
        } else {
            v.extend_from_slice(&[0x82, (content.len() >> 8) as u8, content.len() as u8]);
        }
        v.extend_from_slice(content);
        v
    }

    fn msg(id: u8, op: &[u8]) -> Vec<u8> {
        tlv(0x30, &[tlv(0x02, &[id]), op.to_vec()].concat())
    }

    fn octets(s: &str) -> Vec<u8> {
        tlv(0x04, s.as_bytes())
    }

    fn result(tag: u8, code: u8, text: &str) -> Vec<u8> {
        tlv(
            tag,
            &[tlv(0x0a, &[code]), octets(""), octets(text)].concat(),
        )
    }

    fn bind(id: u8, dn: &str) -> Vec<u8> {
        msg(
            id,
            &tlv(
                0x60,
                &[tlv(0x02, &[3]), octets(dn), tlv(0x80, b"pw")].concat(),
            ),
        )
    }

    fn search(id: u8, base: &str, attrs: &[&str]) -> Vec<u8> {
        let a: Vec<u8> = attrs.iter().flat_map(|s| octets(s)).collect();
        msg(
            id,
            &tlv(
                0x63,
                &[
                    octets(base),
                    tlv(0x0a, &[0]),
                    tlv(0x0a, &[3]),
                    tlv(0x02, &[0]),
                    tlv(0x02, &[0]),
                    tlv(0x01, &[0xff]),
                    tlv(0x87, b"objectClass"),
                    tlv(0x30, &a),
                ]
                .concat(),
            ),
        )
    }

    fn entry(id: u8, dn: &str, attr: &str) -> Vec<u8> {
        let pa = tlv(
            0x30,
            &[octets(attr), tlv(0x31, &octets("v\u{e9}"))].concat(),
        );
        msg(id, &tlv(0x64, &[octets(dn), tlv(0x30, &pa)].concat()))
    }

    fn st(t: Transport) -> LdapState {
        LdapState::new(t, &AppLayerConfig::default())
    }

    fn feed(s: &mut LdapState, d: Direction, b: &[u8], bytewise: bool) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        if bytewise {
            for c in b {
                s.feed(d, std::slice::from_ref(c), 1, &mut ev);
            }
        } else {
            s.feed(d, b, 1, &mut ev);
        }
        ev
    }

    #[test]
    fn bind_and_search_split_and_batched() {
        for bytewise in [false, true] {
            let mut s = st(Transport::Tcp);
            let mut ev = feed(&mut s, ToServer, &bind(1, "cn=admin"), bytewise);
            ev.extend(feed(
                &mut s,
                ToClient,
                &msg(1, &result(0x61, 0, "")),
                bytewise,
            ));
            // Two requests in one segment, the responses batched.
            let reqs = [search(2, "dc=a", &["cn", "mail"]), search(3, "dc=b", &[])].concat();
            ev.extend(feed(&mut s, ToServer, &reqs, bytewise));
            let resps = [
                entry(2, "cn=x,dc=a", "cn"),
                entry(3, "cn=y,dc=b", "sn"),
                msg(2, &result(0x65, 0, "done")),
                msg(3, &result(0x65, 32, "none")),
            ]
            .concat();
            ev.extend(feed(&mut s, ToClient, &resps, bytewise));
            assert!(ev.is_empty(), "{ev:?}");
            let txs: Vec<&LdapTx> = s.transactions().collect();
            assert_eq!(txs.len(), 3);
            assert!(txs.iter().all(|t| t.complete));
            assert_eq!(
                txs[0].buffers(BufferId::LdapRequestDn),
                vec![&b"cn=admin"[..]]
            );
            assert_eq!(txs[0].uints(UintField::LdapRequestOperation), vec![0]);
            assert_eq!(txs[0].uints(UintField::LdapResponsesOperation), vec![1]);
            let t = txs[1];
            assert_eq!(t.uints(UintField::LdapResponsesOperation), vec![4, 5]);
            assert_eq!(t.uints(UintField::LdapResponsesCount), vec![2]);
            assert_eq!(t.uints(UintField::LdapResponsesResultCode), vec![0]);
            assert_eq!(
                t.buffers(BufferId::LdapRequestAttributeType),
                vec![&b"cn"[..], b"mail"]
            );
            assert_eq!(
                t.buffers(BufferId::LdapResponsesDn),
                vec![&b"cn=x,dc=a"[..], b""]
            );
            assert_eq!(
                t.buffers(BufferId::LdapResponsesAttributeType),
                vec![&b"cn"[..]]
            );
            // The entry has no message: an empty buffer in its place.
            assert_eq!(
                t.buffers(BufferId::LdapResponsesMessage),
                vec![&b""[..], b"done"]
            );
            assert_eq!(txs[2].uints(UintField::LdapResponsesResultCode), vec![32]);
            let e = t.eve();
            assert_eq!(e["request"]["operation"], "search_request");
            assert_eq!(e["request"]["search_request"]["deref_alias"], 3);
            assert_eq!(e["request"]["search_request"]["types_only"], true);
            assert_eq!(
                e["responses"][0]["search_result_entry"]["attributes"][0]["values"][0],
                "v\u{e9}"
            );
            assert_eq!(e["responses"][1]["search_result_done"]["message"], "done");
            assert!(e["responses"][1].get("message_id").is_none());
            assert_eq!(
                txs[2].eve()["responses"][1]["search_result_done"]["result_code"],
                "no_such_object"
            );
        }
    }

    #[test]
    fn orphans_unsolicited_and_unbind() {
        let mut s = st(Transport::Tcp);
        let ev = feed(&mut s, ToClient, &msg(5, &result(0x6b, 0, "")), false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Ldap(LdapEvent::RequestNotFound, Some(0))]
        );
        let notice = msg(
            0,
            &tlv(
                0x78,
                &[
                    tlv(0x0a, &[52]),
                    octets(""),
                    octets("bye"),
                    tlv(0x8a, b"1.3.6.1.4.1.1466.20036"),
                ]
                .concat(),
            ),
        );
        assert!(feed(&mut s, ToClient, &notice, false).is_empty());
        assert!(feed(&mut s, ToServer, &msg(6, &[0x42, 0x00]), false).is_empty());
        let txs: Vec<&LdapTx> = s.transactions().collect();
        assert_eq!(txs.len(), 3);
        assert_eq!(txs[0].eve()["responses"][0]["message_id"], 5);
        assert_eq!(
            txs[1].eve()["responses"][0]["extended_response"]["result_code"],
            "unavailable"
        );
        assert_eq!(
            txs[1].eve()["responses"][0]["extended_response"]["name"],
            "1.3.6.1.4.1.1466.20036"
        );
        assert!(txs[2].complete);
        assert_eq!(txs[2].eve()["request"]["operation"], "unbind_request");
    }

    #[test]
    fn malformed_stops_with_suricata_events() {
        // A bad response: invalid_data, then nothing more is parsed.
        let mut s = st(Transport::Tcp);
        feed(&mut s, ToServer, &bind(1, "a"), false);
        let ev = feed(&mut s, ToClient, b"\x30\x03\x04\x01\x01", false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Ldap(LdapEvent::InvalidData, Some(0))]
        );
        assert!(!s.wants_data(ToServer));
        assert!(feed(&mut s, ToServer, &bind(2, "b"), false).is_empty());
        assert_eq!(s.transactions().count(), 1);
        // Inner lengths past the message's end: that side waits forever
        // (no event), the other side goes on.
        let mut s = st(Transport::Tcp);
        feed(&mut s, ToServer, &bind(1, "a"), false);
        assert!(feed(&mut s, ToClient, b"\x30\x03\x02\x01\x01", false).is_empty());
        assert!(!s.wants_data(ToClient));
        assert!(feed(&mut s, ToServer, &bind(2, "b"), false).is_empty());
        assert_eq!(s.transactions().count(), 2);
        // A bad request over TCP: the parser stops without an event.
        let mut s = st(Transport::Tcp);
        assert!(feed(&mut s, ToServer, b"GET / HTTP/1.1\r\n", false).is_empty());
        assert!(!s.wants_data(ToClient));
        // Oversized: a length past the cap is invalid at once.
        let mut s = st(Transport::Tcp);
        let ev = feed(&mut s, ToClient, b"\x30\x84\x7f\xff\xff\xff\x02", false);
        assert_eq!(ev, vec![AppLayerEvent::Ldap(LdapEvent::InvalidData, None)]);
        // UDP: a truncated datagram is incomplete_data, garbage invalid_data.
        let mut s = st(Transport::Udp);
        let b = bind(1, "cn=x");
        let ev = feed(&mut s, ToServer, &b[..b.len() - 2], false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Ldap(LdapEvent::IncompleteData, None)]
        );
        let mut s = st(Transport::Udp);
        feed(&mut s, ToServer, &b, false);
        let ev = feed(&mut s, ToClient, b"\x31\x00", false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Ldap(LdapEvent::InvalidData, Some(0))]
        );
    }

    #[test]
    fn gaps_resync_on_a_message_or_stop() {
        let mut s = st(Transport::Tcp);
        let b = bind(1, "cn=admin");
        feed(&mut s, ToServer, &b[..5], false);
        s.on_gap(ToServer);
        // The next bytes start a message: parsing goes on.
        assert!(feed(&mut s, ToServer, &bind(2, "cn=other"), false).is_empty());
        assert_eq!(s.transactions().count(), 1);
        assert_eq!(
            s.transactions()
                .next()
                .unwrap()
                .buffers(BufferId::LdapRequestDn),
            vec![&b"cn=other"[..]]
        );
        // Mid-message bytes after a gap: the parser stops, no event.
        s.on_gap(ToClient);
        assert!(feed(&mut s, ToClient, &b[3..], false).is_empty());
        assert!(!s.wants_data(ToClient));
    }

    #[test]
    fn too_many_transactions() {
        let cfg = AppLayerConfig {
            max_transactions: 2,
            ..Default::default()
        };
        let mut s = LdapState::new(Transport::Tcp, &cfg);
        let mut ev = Vec::new();
        for i in 1..=3 {
            s.feed(ToServer, &bind(i, "x"), 1, &mut ev);
        }
        assert_eq!(
            ev,
            vec![AppLayerEvent::Ldap(LdapEvent::TooManyTransactions, Some(2))]
        );
        assert_eq!(s.transactions().count(), 2);
    }

    #[test]
    fn search_with_a_filter_nested_past_the_crate_limit() {
        // (&(&(&...(objectClass=*)...))) 100 deep: the request is a
        // transaction without a filter, as in Suricata.
        let mut f = b"\x87\x0bobjectClass".to_vec();
        for _ in 0..100 {
            let mut g = vec![0xa0];
            g.extend(ber_len(f.len()));
            g.extend(&f);
            f = g;
        }
        let mut body =
            b"\x04\x07dc=test\x0a\x01\x02\x0a\x01\x00\x02\x01\x05\x02\x01\x00\x01\x01\x00".to_vec();
        body.extend(&f);
        body.extend(b"\x30\x04\x04\x02cn");
        let mut op = vec![0x63];
        op.extend(ber_len(body.len()));
        op.extend(&body);
        let mut inner = b"\x02\x01\x07".to_vec();
        inner.extend(&op);
        let mut m = vec![0x30];
        m.extend(ber_len(inner.len()));
        m.extend(&inner);
        assert!(LdapMessage::from_ber(&m).is_err(), "the crate refuses it");
        let mut s = st(Transport::Tcp);
        assert!(feed(&mut s, ToServer, &m, false).is_empty());
        let tx = s.transactions().next().expect("a transaction");
        assert_eq!(tx.buffers(BufferId::LdapRequestDn), vec![&b"dc=test"[..]]);
        let sr = s.txs.txs.front().unwrap().request.as_ref().unwrap();
        assert_eq!(sr.message_id, 7);
        let (name, v) = sr.detail.as_ref().unwrap();
        assert_eq!(*name, "search_request");
        assert_eq!(
            *v,
            json!({"base_object": "dc=test", "scope": 2, "deref_alias": 0,
                   "size_limit": 5, "time_limit": 0, "types_only": false,
                   "attributes": ["cn"]})
        );
        // Cut inside the filter: not a message.
        let mut bad = m.clone();
        bad.truncate(m.len() - 6);
        bad[1] = 0x82;
        assert!(decode_deep_search(&bad).is_none());
        // A bind with a bad body stays invalid.
        assert!(decode_deep_search(b"\x30\x05\x02\x01\x01\x60\x00").is_none());
    }

    fn ber_len(n: usize) -> Vec<u8> {
        if n < 0x80 {
            vec![n as u8]
        } else {
            vec![0x82, (n >> 8) as u8, n as u8]
        }
    }

    #[test]
    fn probe_and_frame() {
        let b = bind(1, "cn=admin");
        assert_eq!(probe(&b), Some(true));
        assert_eq!(probe(&b[..1]), None);
        assert_eq!(probe(&b[..6]), Some(true));
        assert_eq!(probe(&b[..4]), None);
        assert_eq!(probe(b"\x30\x05\x04\x01"), Some(false));
        assert_eq!(probe(b"GET /"), Some(false));
        assert_eq!(frame(&b), Frame::Whole(b.len()));
        assert!(probe_datagram(&b));
        assert!(!probe_datagram(&b[..8]));
        assert_eq!(frame(b"\x30\x80"), Frame::Bad);
        assert_eq!(frame(b"\x30\x82\x01"), Frame::Partial);
    }
}
