//! Kerberos 5 (Suricata's `rust/src/krb`): over UDP a datagram is a
//! message, over TCP each message follows a 4-byte record marker
//! ([`crate::msg`]). Messages are decoded by `kerberos-parser`
//! (rusticata, what Suricata uses). Every AS/TGS request and reply and
//! every KRB-ERROR is a transaction of its own direction; a KRB-ERROR
//! names the request it answers (`failed_request`), the last request
//! type seen on the flow. AP-REQ/AP-REP only set that request type.
//!
//! Buffers: `krb5.cname` and `krb5.sname` are multi-buffers, one per
//! name component. Integers: `krb5_msg_type` (AS_REQ ... names too),
//! `krb5_err_code`, the ticket's encryption type for
//! `krb5.ticket_encryption`, and `krb5.weak_encryption` (a reply with a
//! weak cipher). Events: `malformed_data` (a message that
//! does not decode, a broken record), `weak_encryption` (a reply
//! encrypted with a cipher other than AES or Camellia).

use der_parser::asn1_rs::FromDer;
use kerberos_parser::krb5::{EncryptionType, ErrorCode, KrbError, MessageType, PrincipalName};
use kerberos_parser::krb5_parser;
use serde_json::{json, Map, Value};

use crate::events::Krb5Event;
use crate::msg::{MsgProto, MsgTxData, Parsed};
use crate::{AppLayerEvent, AppProto, BufferId, Direction, TxId};

/// Kerberos' registered port (UDP and TCP).
pub const PORT: u16 = 88;

/// One Kerberos message.
#[derive(Debug, Clone, Default)]
pub struct Krb5Tx {
    pub msg_type: u32,
    /// KRB-ERROR: the request type it answers (0 when none was seen).
    pub failed_request: Option<u32>,
    pub cname: Option<Vec<String>>,
    pub realm: Option<String>,
    pub sname: Option<Vec<String>>,
    /// The reply's encryption type.
    pub etype: Option<i32>,
    /// The ticket's encryption type.
    pub ticket_etype: Option<i32>,
    pub error_code: Option<i32>,
}

/// Suricata's `test_weak_encryption`: anything but AES and Camellia.
pub fn weak_encryption(etype: i32) -> bool {
    !matches!(
        EncryptionType(etype),
        EncryptionType::AES128_CTS_HMAC_SHA1_96
            | EncryptionType::AES256_CTS_HMAC_SHA1_96
            | EncryptionType::AES128_CTS_HMAC_SHA256_128
            | EncryptionType::AES256_CTS_HMAC_SHA384_192
            | EncryptionType::CAMELLIA128_CTS_CMAC
            | EncryptionType::CAMELLIA256_CTS_CMAC
    )
}

/// The message type a `krb5_msg_type` name denotes (Suricata 9 accepts
/// `AS_REQ`, `KRB_AS_REQ` ...).
pub fn msg_type_by_name(name: &str) -> Option<u32> {
    let n = name.trim().to_ascii_uppercase();
    let n = n.strip_prefix("KRB_").unwrap_or(&n);
    Some(match n {
        "AS_REQ" => 10,
        "AS_REP" => 11,
        "TGS_REQ" => 12,
        "TGS_REP" => 13,
        "AP_REQ" => 14,
        "AP_REP" => 15,
        "RESERVED16" => 16,
        "RESERVED17" => 17,
        "SAFE" => 20,
        "PRIV" => 21,
        "CRED" => 22,
        "ERROR" => 30,
        _ => return None,
    })
}

/// The encryption type a `krb5.ticket_encryption` name denotes
/// (`aes256-cts-hmac-sha1-96`, `rc4-hmac` ..., or a number).
pub fn etype_by_name(name: &str) -> Option<i32> {
    let n = name.trim();
    if let Ok(v) = n.parse::<i32>() {
        return Some(v);
    }
    (-141..=65).find(|&e| format!("{:?}", EncryptionType(e)).eq_ignore_ascii_case(n))
}

fn etype_name(e: i32) -> String {
    format!("{:?}", EncryptionType(e))
}

fn principal(p: PrincipalName) -> Vec<String> {
    p.name_string
}

impl Krb5Tx {
    fn name(n: &Option<Vec<String>>) -> Value {
        match n {
            Some(v) => Value::String(v.join("/")),
            None => Value::String("<empty>".into()),
        }
    }
}

impl MsgTxData for Krb5Tx {
    fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        let parts = match id {
            BufferId::Krb5Cname => &self.cname,
            BufferId::Krb5Sname => &self.sname,
            _ => return Vec::new(),
        };
        parts.iter().flatten().map(|s| s.as_bytes()).collect()
    }

    fn ints(&self, key: &str) -> Vec<i64> {
        match key {
            "krb5_msg_type" => vec![i64::from(self.msg_type)],
            "krb5_err_code" => self.error_code.map(i64::from).into_iter().collect(),
            "krb5.ticket_encryption" => self.ticket_etype.map(i64::from).into_iter().collect(),
            // A reply encrypted with a weak cipher (1) or not (0).
            "krb5.weak_encryption" => self
                .etype
                .map(|e| i64::from(weak_encryption(e)))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Suricata's `krb5` object.
    fn eve(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "msg_type".into(),
            json!(format!("{:?}", MessageType(self.msg_type))),
        );
        if let Some(f) = self.failed_request {
            m.insert(
                "failed_request".into(),
                json!(format!("{:?}", MessageType(f))),
            );
        }
        if let Some(c) = self.error_code {
            m.insert("error_code".into(), json!(format!("{:?}", ErrorCode(c))));
        }
        m.insert("cname".into(), Self::name(&self.cname));
        m.insert(
            "realm".into(),
            json!(self.realm.clone().unwrap_or_else(|| "<empty>".into())),
        );
        m.insert("sname".into(), Self::name(&self.sname));
        match self.etype {
            Some(e) => {
                m.insert("encryption".into(), json!(etype_name(e)));
                m.insert("weak_encryption".into(), json!(weak_encryption(e)));
            }
            None => {
                m.insert("encryption".into(), json!("<none>"));
                m.insert("weak_encryption".into(), json!(false));
            }
        }
        if let Some(e) = self.ticket_etype {
            m.insert("ticket_encryption".into(), json!(etype_name(e)));
            m.insert("ticket_weak_encryption".into(), json!(weak_encryption(e)));
        }
        Value::Object(m)
    }
}

/// Per-flow Kerberos parser state.
#[derive(Debug, Default)]
pub struct Krb5 {
    /// The last request type seen (what a KRB-ERROR answers).
    req_type: u32,
}

impl Krb5 {
    pub fn new() -> Self {
        Krb5::default()
    }
}

impl MsgProto for Krb5 {
    type Tx = Krb5Tx;
    type Event = Krb5Event;
    const PROTO: AppProto = AppProto::Krb5;
    const TCP_RECORDS: bool = true;

    fn parse(&mut self, _dir: Direction, i: &[u8]) -> Parsed<Krb5Tx, Krb5Event> {
        let mut out = Parsed::default();
        let Some(&first) = i.first() else {
            out.events.push(Krb5Event::MalformedData);
            return out;
        };
        // Kerberos messages are [APPLICATION n] (constructed); anything
        // else is not a Kerberos message and is ignored, as in Suricata.
        if first >> 6 != 1 {
            return out;
        }
        let tag = u32::from(first & 0x1f);
        let mut tx = Krb5Tx {
            msg_type: tag,
            ..Default::default()
        };
        let ok = match tag {
            10 | 12 => {
                self.req_type = tag;
                let r = if tag == 10 {
                    krb5_parser::parse_as_req(i)
                } else {
                    krb5_parser::parse_tgs_req(i)
                };
                r.map(|(_, req)| {
                    tx.cname = req.req_body.cname.map(principal);
                    tx.realm = Some(req.req_body.realm.0);
                    tx.sname = req.req_body.sname.map(principal);
                })
                .is_ok()
            }
            11 | 13 => {
                self.req_type = 0;
                let r = if tag == 11 {
                    krb5_parser::parse_as_rep(i)
                } else {
                    krb5_parser::parse_tgs_rep(i)
                };
                r.map(|(_, rep)| {
                    tx.cname = Some(principal(rep.cname));
                    tx.realm = Some(rep.crealm.0);
                    tx.sname = Some(principal(rep.ticket.sname));
                    tx.ticket_etype = Some(rep.ticket.enc_part.etype.0);
                    tx.etype = Some(rep.enc_part.etype.0);
                })
                .is_ok()
            }
            14 => {
                self.req_type = 14;
                return out;
            }
            15 => {
                self.req_type = 0;
                return out;
            }
            30 => {
                let failed = std::mem::take(&mut self.req_type);
                KrbError::from_der(i)
                    .map(|(_, e)| {
                        tx.failed_request = Some(failed);
                        tx.cname = e.cname.map(principal);
                        tx.realm = e.crealm.map(|r| r.0);
                        tx.sname = Some(principal(e.sname));
                        tx.error_code = Some(e.error_code.0);
                    })
                    .is_ok()
            }
            _ => return out,
        };
        if !ok {
            out.events.push(Krb5Event::MalformedData);
            return out;
        }
        let weak = tx.etype.is_some_and(weak_encryption);
        out.txs.push(tx);
        if weak {
            out.events.push(Krb5Event::WeakEncryption);
        }
        out
    }

    fn event(e: Krb5Event, tx: Option<TxId>) -> AppLayerEvent {
        AppLayerEvent::Krb5(e, tx)
    }

    fn malformed() -> Krb5Event {
        Krb5Event::MalformedData
    }

    fn too_many() -> Krb5Event {
        Krb5Event::TooManyTransactions
    }
}

/// Suricata's probe: an `[APPLICATION n]` header (n <= 30) around a
/// SEQUENCE whose first field is the version 5 (`02 01 05`). `None`
/// while more bytes are needed.
pub fn probe(i: &[u8]) -> Option<bool> {
    if i.len() <= 10 {
        return None;
    }
    let (class, tag) = (i[0] >> 6, i[0] & 0x1f);
    if class != 1 || tag == 0x1f || tag > 30 {
        return Some(false);
    }
    let rest = skip_header(i)?;
    if rest.first() != Some(&0x30) {
        return Some(false);
    }
    let body = skip_header(rest)?;
    // [0] or [1] context tag, then INTEGER 5.
    Some(body.len() > 5 && body[2..5] == [2, 1, 5])
}

/// The bytes after a BER identifier and length (short or long form).
fn skip_header(i: &[u8]) -> Option<&[u8]> {
    let l = *i.get(1)?;
    if l & 0x80 == 0 {
        return i.get(2..);
    }
    let n = usize::from(l & 0x7f);
    if n == 0 || n > 4 {
        return Some(&[]);
    }
    i.get(2 + n..)
}

/// The TCP probe: a record marker below 16 KiB, then [`probe`].
pub fn probe_tcp(i: &[u8]) -> Option<bool> {
    if i.len() <= 14 {
        return None;
    }
    let mark = u32::from_be_bytes([i[0], i[1], i[2], i[3]]);
    if mark > 16384 {
        return Some(false);
    }
    probe(&i[4..])
}

/// Kerberos messages built from their fields (DER), for tests, fuzz
/// seeds and crafted captures.
pub mod build {
    /// A DER TLV (lengths below 2^24).
    pub fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        let n = body.len();
        if n < 128 {
            v.push(n as u8);
        } else if n < 256 {
            v.extend_from_slice(&[0x81, n as u8]);
        } else if n < 65536 {
            v.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
        } else {
            v.extend_from_slice(&[0x83, (n >> 16) as u8, (n >> 8) as u8, n as u8]);
        }
        v.extend_from_slice(body);
        v
    }
    fn int(n: u8) -> Vec<u8> {
        tlv(0x02, &[n])
    }
    fn gstr(s: &str) -> Vec<u8> {
        tlv(0x1b, s.as_bytes())
    }
    fn ctx(n: u8, body: &[u8]) -> Vec<u8> {
        tlv(0xa0 | n, body)
    }
    fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
        tlv(0x30, &parts.concat())
    }
    fn princ(names: &[&str]) -> Vec<u8> {
        let strs: Vec<Vec<u8>> = names.iter().map(|s| gstr(s)).collect();
        seq(&[ctx(0, &int(1)), ctx(1, &seq(&strs))])
    }
    fn enc(etype: u8) -> Vec<u8> {
        seq(&[ctx(0, &int(etype)), ctx(2, &tlv(0x04, b"cipher"))])
    }

    /// An AS-REQ (10) or TGS-REQ (12) for `cname` to `sname`.
    pub fn kdc_req(tag: u8, cname: Option<&[&str]>, sname: &[&str]) -> Vec<u8> {
        let mut body = vec![ctx(0, &tlv(0x03, &[0, 0x40, 0x81, 0, 0x10]))];
        if let Some(c) = cname {
            body.push(ctx(1, &princ(c)));
        }
        body.push(ctx(2, &gstr("EXAMPLE.ORG")));
        body.push(ctx(3, &princ(sname)));
        body.push(ctx(5, &tlv(0x18, b"20370913024805Z")));
        body.push(ctx(7, &int(7)));
        body.push(ctx(8, &seq(&[int(18), int(23)])));
        let req = seq(&[ctx(1, &int(5)), ctx(2, &int(tag)), ctx(4, &seq(&body))]);
        tlv(0x60 | tag, &req)
    }

    /// An AS-REP (11) or TGS-REP (13) with the reply and ticket
    /// encryption types.
    pub fn kdc_rep(tag: u8, etype: u8, ticket_etype: u8) -> Vec<u8> {
        let ticket = tlv(
            0x61,
            &seq(&[
                ctx(0, &int(5)),
                ctx(1, &gstr("EXAMPLE.ORG")),
                ctx(2, &princ(&["krbtgt", "EXAMPLE.ORG"])),
                ctx(3, &enc(ticket_etype)),
            ]),
        );
        let rep = seq(&[
            ctx(0, &int(5)),
            ctx(1, &int(tag)),
            ctx(3, &gstr("EXAMPLE.ORG")),
            ctx(4, &princ(&["robin"])),
            ctx(5, &ticket),
            ctx(6, &enc(etype)),
        ]);
        tlv(0x60 | tag, &rep)
    }

    /// A KRB-ERROR with `code`.
    pub fn krb_error(code: u8) -> Vec<u8> {
        let e = seq(&[
            ctx(0, &int(5)),
            ctx(1, &int(30)),
            ctx(4, &tlv(0x18, b"20210622092740Z")),
            ctx(5, &int(1)),
            ctx(6, &int(code)),
            ctx(9, &gstr("EXAMPLE.ORG")),
            ctx(10, &princ(&["krbtgt", "EXAMPLE.ORG"])),
        ]);
        tlv(0x7e, &e)
    }

    /// A message behind its TCP record marker.
    pub fn record(m: &[u8]) -> Vec<u8> {
        let mut v = (m.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(m);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use crate::msg::MsgState;
    use crate::{AppLayerConfig, Timestamp, Transport};

    fn state(t: Transport) -> MsgState<Krb5> {
        MsgState::new(Krb5::new(), t, &AppLayerConfig::default())
    }

    fn names(ev: &[AppLayerEvent]) -> Vec<&'static str> {
        ev.iter().map(|e| e.name()).collect()
    }

    #[test]
    fn udp_request_reply_error() {
        let mut s = state(Transport::Udp);
        let mut ev = Vec::new();
        let ts = Timestamp::default();
        s.feed(
            Direction::ToServer,
            &kdc_req(10, Some(&["robin"]), &["krbtgt", "EXAMPLE.ORG"]),
            ts,
            &mut ev,
        );
        s.feed(Direction::ToClient, &krb_error(25), ts, &mut ev);
        s.feed(
            Direction::ToServer,
            &kdc_req(12, None, &["ldap", "dc01"]),
            ts,
            &mut ev,
        );
        s.feed(Direction::ToClient, &kdc_rep(13, 18, 23), ts, &mut ev);
        assert!(ev.is_empty(), "{ev:?}");
        let txs: Vec<_> = s.transactions().collect();
        assert_eq!(txs.len(), 4);
        assert_eq!(txs[0].data.msg_type, 10);
        assert_eq!(
            txs[0].data.buffers(BufferId::Krb5Cname),
            vec![&b"robin"[..]]
        );
        assert_eq!(
            txs[0].data.buffers(BufferId::Krb5Sname),
            vec![&b"krbtgt"[..], &b"EXAMPLE.ORG"[..]]
        );
        let e = txs[1].data.eve();
        assert_eq!(e["msg_type"], "KRB_ERROR");
        assert_eq!(e["failed_request"], "KRB_AS_REQ");
        assert_eq!(e["error_code"], "KDC_ERR_PREAUTH_REQUIRED");
        assert_eq!(e["cname"], "<empty>");
        assert_eq!(txs[1].data.ints("krb5_err_code"), vec![25]);
        assert_eq!(txs[2].data.eve()["cname"], "<empty>");
        let r = txs[3].data.eve();
        assert_eq!(r["msg_type"], "KRB_TGS_REP");
        assert_eq!(r["encryption"], "aes256-cts-hmac-sha1-96");
        assert_eq!(r["weak_encryption"], false);
        assert_eq!(r["ticket_encryption"], "rc4-hmac");
        assert_eq!(r["ticket_weak_encryption"], true);
        assert_eq!(txs[3].data.ints("krb5.ticket_encryption"), vec![23]);
    }

    #[test]
    fn weak_reply_raises_event() {
        let mut s = state(Transport::Udp);
        let mut ev = Vec::new();
        s.feed(
            Direction::ToClient,
            &kdc_rep(11, 23, 18),
            Timestamp::default(),
            &mut ev,
        );
        assert_eq!(names(&ev), ["WEAK_ENCRYPTION"]);
        assert_eq!(
            ev[0],
            AppLayerEvent::Krb5(Krb5Event::WeakEncryption, Some(0))
        );
    }

    #[test]
    fn malformed_message() {
        let mut s = state(Transport::Udp);
        let mut ev = Vec::new();
        let mut m = kdc_req(10, Some(&["a"]), &["b"]);
        m.truncate(m.len() - 5);
        s.feed(Direction::ToServer, &m, Timestamp::default(), &mut ev);
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
        assert_eq!(s.transactions().count(), 0);
        // Not an application tag: ignored.
        ev.clear();
        s.feed(
            Direction::ToServer,
            b"\x30\x03\x02\x01\x05",
            Timestamp::default(),
            &mut ev,
        );
        assert!(ev.is_empty());
    }

    #[test]
    fn tcp_records_byte_by_byte() {
        let mut stream = record(&kdc_req(10, Some(&["robin"]), &["krbtgt", "X"]));
        stream.extend(record(&kdc_req(12, None, &["http", "web"])));
        let mut s = state(Transport::Tcp);
        let mut ev = Vec::new();
        for b in &stream {
            s.feed(Direction::ToServer, &[*b], Timestamp::default(), &mut ev);
        }
        assert!(ev.is_empty());
        let t: Vec<u32> = s.transactions().map(|t| t.data.msg_type).collect();
        assert_eq!(t, [10, 12]);
        let mut fin = Vec::new();
        s.finish(Direction::ToServer, &mut fin);
        assert!(fin.is_empty());
    }

    #[test]
    fn tcp_gap_inside_record_resyncs() {
        let first = record(&kdc_req(10, Some(&["robin"]), &["krbtgt", "X"]));
        let second = record(&kdc_req(12, None, &["http", "web"]));
        let mut s = state(Transport::Tcp);
        let mut ev = Vec::new();
        let ts = Timestamp::default();
        s.feed(Direction::ToServer, &first[..20], ts, &mut ev);
        s.on_gap(Direction::ToServer, Some(10), &mut ev);
        s.feed(Direction::ToServer, &first[30..], ts, &mut ev);
        s.feed(Direction::ToServer, &second, ts, &mut ev);
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
        let t: Vec<u32> = s.transactions().map(|t| t.data.msg_type).collect();
        assert_eq!(t, [12]);
        // A gap of unknown size loses the framing for good.
        ev.clear();
        s.on_gap(Direction::ToServer, None, &mut ev);
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
        assert!(!s.wants_data(Direction::ToServer));
        s.feed(Direction::ToServer, &second, ts, &mut ev);
        assert_eq!(s.transactions().count(), 1);
    }

    #[test]
    fn tcp_oversized_record_skipped_and_truncated_end() {
        let mut s = state(Transport::Tcp);
        let mut ev = Vec::new();
        let ts = Timestamp::default();
        let big = 100_000u32;
        s.feed(Direction::ToClient, &big.to_be_bytes(), ts, &mut ev);
        s.feed(Direction::ToClient, &vec![0u8; big as usize], ts, &mut ev);
        s.feed(
            Direction::ToClient,
            &record(&kdc_rep(11, 18, 18)),
            ts,
            &mut ev,
        );
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
        assert_eq!(s.transactions().count(), 1);
        ev.clear();
        s.feed(
            Direction::ToClient,
            &record(&kdc_rep(11, 18, 18))[..9],
            ts,
            &mut ev,
        );
        s.finish(Direction::ToClient, &mut ev);
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
    }

    #[test]
    fn probes() {
        let m = kdc_req(10, Some(&["robin"]), &["krbtgt", "X"]);
        assert_eq!(probe(&m), Some(true));
        assert_eq!(probe_tcp(&record(&m)), Some(true));
        assert_eq!(probe(&krb_error(6)), Some(true));
        assert_eq!(probe(&m[..8]), None);
        assert_eq!(probe(b"GET / HTTP/1.1\r\n"), Some(false));
        let mut huge = record(&m);
        huge[1] = 0x10;
        assert_eq!(probe_tcp(&huge), Some(false));
    }

    #[test]
    fn names_and_values() {
        assert_eq!(msg_type_by_name("AS_REQ"), Some(10));
        assert_eq!(msg_type_by_name("krb_error"), Some(30));
        assert_eq!(msg_type_by_name("nope"), None);
        assert_eq!(etype_by_name("rc4-hmac"), Some(23));
        assert_eq!(etype_by_name("AES256-CTS-HMAC-SHA1-96"), Some(18));
        assert_eq!(etype_by_name("17"), Some(17));
        assert!(weak_encryption(23) && !weak_encryption(18));
    }
}
