//! mDNS (RFC 6762, UDP 5353) and LLMNR (RFC 4795, UDP and TCP 5355): DNS
//! messages parsed by [`crate::dns`], each message a transaction, with
//! what Suricata 9 does differently for them:
//!
//! - **mDNS**: every message is taken as it comes, whatever its direction
//!   (multicast has no client and server): a message with the QR bit is a
//!   `response`, without it a `request`; no `not_a_request` /
//!   `not_a_response` events. The DNS events otherwise (`mdns.` prefix).
//! - **LLMNR**: requests to the server and responses to the client; a
//!   message of the wrong kind is not kept and raises `not_request` /
//!   `not_response` on the newest transaction; `invalid_opcode` for any
//!   opcode but 0, `z_flag_set` for a reserved header bit.
//! - Both: a header whose counts cannot fit the message is ignored (the
//!   DNS probe's header check); a message that does not parse raises
//!   `malformed_data` on the newest transaction.
//!
//! Their keywords are their own (`mdns.queries.rrname` ...): `dns.*`
//! keywords do not apply to these flows, as in Suricata. Records are the
//! `mdns` and `llmnr` objects of Suricata's schema: no `rrtype`/`ttl` in
//! records, the data under the lower-case type name where the schema
//! lists that key (mDNS: PTR and TXT data only).

use crate::dns::{
    opt_array, parse_message, print_addr, rdata_object, rrtype_string, DnsAnswer, DnsHeader,
    DnsRData, DnsState, DnsTx,
};
use crate::events::{AppLayerEvent, DnsEvent, LlmnrEvent};
use crate::jsonw::JsonText;
use crate::state::TxCommon;
use crate::{AppProto, BufferId, Direction, Timestamp};

/// mDNS's port (Suricata's `[5353]`).
pub const MDNS_PORT: u16 = 5353;
/// LLMNR's port, UDP and TCP.
pub const LLMNR_PORT: u16 = 5355;

/// The DNS probe's header check: the counts must fit the message (two
/// bytes per record at least), a message with no records must be a bare
/// header, and a request asks something.
pub fn header_plausible(h: &DnsHeader, len: usize) -> bool {
    let records = usize::from(h.qdcount)
        + usize::from(h.ancount)
        + usize::from(h.nscount)
        + usize::from(h.arcount);
    if 2 * records > len || (records == 0 && len > 12) {
        return false;
    }
    h.is_response() || h.qdcount > 0
}

/// The header at the start of `b`, when there are 12 bytes.
pub fn header(b: &[u8]) -> Option<DnsHeader> {
    let w = |i: usize| b.get(i..i + 2).map(|x| u16::from_be_bytes([x[0], x[1]]));
    Some(DnsHeader {
        id: w(0)?,
        flags: w(2)?,
        qdcount: w(4)?,
        ancount: w(6)?,
        nscount: w(8)?,
        arcount: w(10)?,
    })
}

/// Whether a datagram is a DNS message of either kind that parses (the
/// mDNS and LLMNR probes).
pub fn probe(data: &[u8]) -> bool {
    match parse_message(data, 1025) {
        Ok((m, _)) => header_plausible(&m.header, data.len()),
        Err(_) => false,
    }
}

fn event(variant: AppProto, e: DnsEvent, tx: Option<u64>) -> Option<AppLayerEvent> {
    match variant {
        AppProto::Llmnr => {
            let l = match e {
                DnsEvent::NotARequest => LlmnrEvent::NotRequest,
                DnsEvent::NotAResponse => LlmnrEvent::NotResponse,
                DnsEvent::ZFlagSet => LlmnrEvent::ZFlagSet,
                DnsEvent::InvalidOpcode => LlmnrEvent::InvalidOpcode,
                DnsEvent::TooManyTransactions => LlmnrEvent::TooManyTransactions,
                DnsEvent::MalformedData | DnsEvent::InfiniteLoop => LlmnrEvent::MalformedData,
                // Suricata's LLMNR parser ignores the name flags.
                _ => return None,
            };
            Some(AppLayerEvent::Llmnr(l, tx))
        }
        _ => Some(AppLayerEvent::Mdns(e, tx)),
    }
}

/// Parses one mDNS or LLMNR message into `s` (see the module notes).
pub(crate) fn message(
    s: &mut DnsState,
    dir: Direction,
    msg: &[u8],
    ts: Timestamp,
    ev: &mut Vec<AppLayerEvent>,
) {
    let variant = s.proto();
    let newest = |s: &DnsState| s.txs.back().map(|t| t.common.id);
    let (m, parse_events) = match parse_message(msg, s.cfg.dns_max_name) {
        Ok(r) => r,
        Err(_) => {
            // A header that does not fit the message is not DNS: dropped
            // silently, as Suricata's header validation does.
            match header(msg) {
                Some(h) if header_plausible(&h, msg.len()) => {}
                _ => return,
            }
            ev.extend(event(variant, DnsEvent::MalformedData, newest(s)));
            return;
        }
    };
    if !header_plausible(&m.header, msg.len()) {
        return;
    }
    let flags = m.header.flags;
    let mut events: Vec<DnsEvent> = Vec::new();
    if variant == AppProto::Llmnr {
        let sent = if s.reversed { dir.reverse() } else { dir };
        let wrong = match sent {
            Direction::ToServer if m.header.is_response() => Some(DnsEvent::NotARequest),
            Direction::ToClient if !m.header.is_response() => Some(DnsEvent::NotAResponse),
            _ => None,
        };
        if let Some(e) = wrong {
            ev.extend(event(variant, e, newest(s)));
            return;
        }
        if m.header.opcode() != 0 {
            events.push(DnsEvent::InvalidOpcode);
        }
        if flags & 0x00f0 != 0 {
            events.push(DnsEvent::ZFlagSet);
        }
    } else {
        events.extend(parse_events);
        if flags & 0x0040 != 0 {
            events.push(DnsEvent::ZFlagSet);
        }
        if m.header.opcode() >= 7 {
            events.push(DnsEvent::InvalidOpcode);
        }
    }
    if s.txs.len() >= s.cfg.max_transactions.max(1) {
        s.txs.pop_front();
        events.push(DnsEvent::TooManyTransactions);
    }
    let id = s.next_id;
    s.next_id += 1;
    s.txs.push_back(DnsTx {
        common: TxCommon::new(id, ts),
        dir,
        message: m,
        variant,
    });
    for e in events {
        ev.extend(event(variant, e, Some(id)));
    }
}

/// The `mdns.*` / `llmnr.*` buffers of a message (its own direction was
/// checked by the caller).
pub(crate) fn buffers(tx: &DnsTx, id: BufferId) -> Vec<&[u8]> {
    use BufferId::*;
    let m = &tx.message;
    fn names(v: &[DnsAnswer]) -> Vec<&[u8]> {
        v.iter().map(|a| a.name.value.as_slice()).collect()
    }
    match (tx.variant, id) {
        (AppProto::Mdns, MdnsQueriesRrname) | (AppProto::Llmnr, LlmnrQueriesRrname) => {
            m.queries.iter().map(|q| q.name.value.as_slice()).collect()
        }
        (AppProto::Mdns, MdnsAnswersRrname) | (AppProto::Llmnr, LlmnrAnswersRrname) => {
            names(&m.answers)
        }
        (AppProto::Mdns, MdnsAuthoritiesRrname) | (AppProto::Llmnr, LlmnrAuthoritiesRrname) => {
            names(&m.authorities)
        }
        (AppProto::Mdns, MdnsAdditionalsRrname) | (AppProto::Llmnr, LlmnrAdditionalsRrname) => {
            names(&m.additionals)
        }
        (AppProto::Mdns, MdnsResponseRrname) | (AppProto::Llmnr, LlmnrResponseRrname)
            if m.header.is_response() =>
        {
            tx.response_names()
        }
        _ => Vec::new(),
    }
}

/// The data keys Suricata's schema allows in each section of the `mdns`
/// and `llmnr` objects (its loggers write any type's; Vigil keeps its
/// records within the schema and leaves the others' data out).
fn allowed(variant: AppProto, section: &str) -> &'static [&'static str] {
    const LLMNR: &[&str] = &["a", "aaaa", "cname", "mx", "ns", "null", "ptr", "txt"];
    match (variant, section) {
        (AppProto::Llmnr, "answers") => &[
            "a", "aaaa", "cname", "mx", "ns", "null", "ptr", "txt", "soa", "srv", "sshfp",
        ],
        (AppProto::Llmnr, "authorities") => &[
            "a", "aaaa", "cname", "mx", "ns", "null", "ptr", "txt", "soa",
        ],
        (AppProto::Llmnr, "additionals") => &[
            "a", "aaaa", "cname", "mx", "ns", "null", "ptr", "txt", "opt",
        ],
        (AppProto::Llmnr, _) => LLMNR,
        (_, "answers" | "additionals") => &["ptr", "txt"],
        // mDNS authorities: their names only.
        _ => &["rrname"],
    }
}

/// One record of the `mdns`/`llmnr` object: its name, and its data under
/// the lower-case type name (when the section allows that key).
fn record(a: &DnsAnswer, allow: &[&str], w: &mut JsonText) {
    let keep = |k: &str| allow.is_empty() || allow.contains(&k);
    w.obj(|w| {
        w.field_lossy("rrname", &a.name.value);
        if a.name.truncated {
            w.field_bool("rrname_truncated", true);
        }
        let key = rrtype_string(a.rrtype).to_ascii_lowercase();
        if !keep(&key) {
            return;
        }
        match &a.data {
            DnsRData::A(b) | DnsRData::Aaaa(b) => {
                w.field_str(&key, &print_addr(b));
            }
            DnsRData::Name(n) => {
                w.field_lossy(&key, &n.value);
                if n.truncated && keep("rdata_truncated") {
                    w.field_bool("rdata_truncated", true);
                }
            }
            DnsRData::Txt(t) => {
                w.field_arr(&key, |w| {
                    for s in t {
                        w.lossy(s);
                    }
                });
            }
            DnsRData::Null(b) | DnsRData::Unknown(b) => {
                w.field_lossy(&key, b);
            }
            DnsRData::Soa { .. } | DnsRData::Sshfp { .. } | DnsRData::Srv { .. } => {
                rdata_object(&a.data, w.key(&key));
            }
            DnsRData::Opt(opts) => opt_array(opts, w.key(&key)),
        }
    });
}

/// The members of the `mdns` or `llmnr` object of a transaction.
pub(crate) fn eve_write(tx: &DnsTx, w: &mut JsonText) {
    let m = &tx.message;
    let h = &m.header;
    w.field_str(
        "type",
        if h.is_response() {
            "response"
        } else {
            "request"
        },
    );
    w.field_u64("id", h.id);
    let flag_names: &[(u16, &str)] = if tx.variant == AppProto::Llmnr {
        &[(0x0400, "c"), (0x0200, "tc"), (0x0100, "t")]
    } else {
        &[
            (0x0400, "aa"),
            (0x0200, "tc"),
            (0x0100, "rd"),
            (0x0080, "ra"),
            (0x0040, "z"),
            (0x0020, "ad"),
            (0x0010, "cd"),
        ]
    };
    let mut flags = flag_names
        .iter()
        .filter(|(bit, _)| h.flags & bit != 0)
        .map(|(_, n)| n)
        .peekable();
    if flags.peek().is_some() {
        w.field_strs("flags", flags);
    }
    w.field_u64("opcode", h.opcode());
    if tx.variant == AppProto::Mdns {
        w.field_u64("rcode", h.rcode());
    }
    if !m.queries.is_empty() {
        w.field_arr("queries", |w| {
            for q in &m.queries {
                w.obj(|w| {
                    w.field_lossy("rrname", &q.name.value);
                    w.field_str("rrtype", &rrtype_string(q.rrtype).to_ascii_lowercase());
                    if q.name.truncated {
                        w.field_bool("rrname_truncated", true);
                    }
                });
            }
        });
    }
    for (key, v) in [("answers", &m.answers), ("authorities", &m.authorities)] {
        if !v.is_empty() {
            let allow = allowed(tx.variant, key);
            w.field_arr(key, |w| {
                for a in v {
                    record(a, allow, w);
                }
            });
        }
    }
    let allow = allowed(tx.variant, "additionals");
    let mut adds = m.logged_additionals();
    if adds.peek().is_some() {
        w.field_arr("additionals", |w| {
            for a in adds {
                record(a, allow, w);
            }
        });
    }
}

/// Builders of test messages (tests and fuzz seeds).
#[doc(hidden)]
pub mod build {
    /// A name in wire format.
    pub fn name(n: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for l in n.split('.').filter(|l| !l.is_empty()) {
            out.push(l.len() as u8);
            out.extend_from_slice(l.as_bytes());
        }
        out.push(0);
        out
    }

    /// A message with `queries` (name, type) and `answers` (name, type,
    /// ttl, rdata), class IN.
    pub fn message(
        id: u16,
        flags: u16,
        queries: &[(&str, u16)],
        answers: &[(&str, u16, u32, Vec<u8>)],
    ) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [id, flags, queries.len() as u16, answers.len() as u16, 0, 0] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        for (n, t) in queries {
            b.extend_from_slice(&name(n));
            b.extend_from_slice(&t.to_be_bytes());
            b.extend_from_slice(&1u16.to_be_bytes());
        }
        for (n, t, ttl, rd) in answers {
            b.extend_from_slice(&name(n));
            b.extend_from_slice(&t.to_be_bytes());
            b.extend_from_slice(&1u16.to_be_bytes());
            b.extend_from_slice(&ttl.to_be_bytes());
            b.extend_from_slice(&(rd.len() as u16).to_be_bytes());
            b.extend_from_slice(rd);
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::build::{message, name};
    use super::*;
    use crate::{AppLayerConfig, Transport};
    use serde_json::{json, Value};

    fn eve(tx: &DnsTx) -> Value {
        tx.eve()
    }

    fn state(v: AppProto) -> DnsState {
        DnsState::with_variant(v, Transport::Udp, &AppLayerConfig::default())
    }

    fn feed(s: &mut DnsState, dir: Direction, m: &[u8]) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        s.feed(dir, m, 0, &mut ev);
        ev
    }

    fn response() -> Vec<u8> {
        message(
            0,
            0x8400,
            &[],
            &[
                ("printer.local", 1, 120, vec![10, 0, 0, 9]),
                ("_ipp._tcp.local", 12, 4500, name("printer._ipp._tcp.local")),
                (
                    "printer._ipp._tcp.local",
                    16,
                    4500,
                    b"\x05txtvy\x04abcd".to_vec(),
                ),
            ],
        )
    }

    #[test]
    fn mdns_response_to_server_is_a_response_record() {
        let mut s = state(AppProto::Mdns);
        let ev = feed(&mut s, Direction::ToServer, &response());
        assert!(ev.is_empty(), "{ev:?}");
        let tx = s.transactions().next().unwrap();
        assert_eq!(
            eve(tx),
            json!({"type": "response", "id": 0, "flags": ["aa"], "opcode": 0, "rcode": 0,
                "answers": [{"rrname": "printer.local"},
                    {"rrname": "_ipp._tcp.local", "ptr": "printer._ipp._tcp.local"},
                    {"rrname": "printer._ipp._tcp.local", "txt": ["txtvy", "abcd"]}]})
        );
        let b = tx.buffers(BufferId::MdnsAnswersRrname, Direction::ToServer);
        assert_eq!(b.len(), 3);
        let r = tx.buffers(BufferId::MdnsResponseRrname, Direction::ToServer);
        assert!(r.contains(&&b"printer._ipp._tcp.local"[..]));
        // DNS's buffers are not those of an mDNS flow.
        assert!(tx
            .buffers(BufferId::DnsAnswersRrname, Direction::ToServer)
            .is_empty());
    }

    #[test]
    fn mdns_query_and_z_flag() {
        let mut s = state(AppProto::Mdns);
        let q = message(0, 0x0040, &[("printer.local", 12)], &[]);
        let ev = feed(&mut s, Direction::ToClient, &q);
        assert_eq!(ev, vec![AppLayerEvent::Mdns(DnsEvent::ZFlagSet, Some(0))]);
        let tx = s.transactions().next().unwrap();
        assert_eq!(eve(tx)["type"], "request");
        assert_eq!(eve(tx)["flags"], json!(["z"]));
        assert_eq!(eve(tx)["queries"][0]["rrtype"], "ptr");
        assert!(tx
            .buffers(BufferId::MdnsResponseRrname, Direction::ToClient)
            .is_empty());
        assert_eq!(
            tx.buffers(BufferId::MdnsQueriesRrname, Direction::ToClient),
            vec![&b"printer.local"[..]]
        );
    }

    #[test]
    fn llmnr_wrong_kind_is_not_kept() {
        let mut s = state(AppProto::Llmnr);
        let q = message(0x1234, 0, &[("wpad", 1)], &[]);
        let r = message(
            0x1234,
            0x8000,
            &[("wpad", 1)],
            &[("wpad", 1, 30, vec![10, 0, 0, 7])],
        );
        assert!(feed(&mut s, Direction::ToServer, &q).is_empty());
        assert!(feed(&mut s, Direction::ToClient, &r).is_empty());
        // A response sent to the server: not kept, event on the newest.
        let ev = feed(&mut s, Direction::ToServer, &r);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Llmnr(LlmnrEvent::NotRequest, Some(1))]
        );
        assert_eq!(s.transactions().count(), 2);
        let resp = s.tx(1).unwrap();
        assert_eq!(
            eve(resp),
            json!({"type": "response", "id": 4660, "opcode": 0,
                "queries": [{"rrname": "wpad", "rrtype": "a"}],
                "answers": [{"rrname": "wpad", "a": "10.0.0.7"}]})
        );
        assert_eq!(
            resp.buffers(BufferId::LlmnrQueriesRrname, Direction::ToClient),
            vec![&b"wpad"[..]]
        );
        assert!(resp
            .buffers(BufferId::LlmnrQueriesRrname, Direction::ToServer)
            .is_empty());
    }

    /// Data keys the schema has no room for are left out: mDNS
    /// authorities keep their names only, answers and additionals PTR
    /// and TXT data; LLMNR answers keep their addresses.
    #[test]
    fn records_stay_within_the_schema() {
        let mut s = state(AppProto::Mdns);
        let mut m = message(0, 0x8400, &[], &[("h.local", 1, 120, vec![10, 0, 0, 1])]);
        // The answer again as an authority and as an additional.
        let rr = m[12..].to_vec();
        m.extend_from_slice(&rr);
        m.extend_from_slice(&rr);
        m[8..12].copy_from_slice(&[0, 1, 0, 1]);
        feed(&mut s, Direction::ToServer, &m);
        let e = eve(s.tx(0).unwrap());
        for sec in ["answers", "authorities", "additionals"] {
            assert_eq!(e[sec], json!([{"rrname": "h.local"}]), "{sec}");
        }
        let mut l = state(AppProto::Llmnr);
        feed(&mut l, Direction::ToClient, &m);
        let e = eve(l.tx(0).unwrap());
        assert_eq!(
            e["answers"],
            json!([{"rrname": "h.local", "a": "10.0.0.1"}])
        );
    }

    #[test]
    fn llmnr_opcode_and_reserved_bits() {
        let mut s = state(AppProto::Llmnr);
        // Opcode 1, C flag, a reserved bit.
        let q = message(7, 0x0800 | 0x0400 | 0x0010, &[("host", 1)], &[]);
        let ev = feed(&mut s, Direction::ToServer, &q);
        assert_eq!(
            ev,
            vec![
                AppLayerEvent::Llmnr(LlmnrEvent::InvalidOpcode, Some(0)),
                AppLayerEvent::Llmnr(LlmnrEvent::ZFlagSet, Some(0)),
            ]
        );
        assert_eq!(eve(s.tx(0).unwrap())["flags"], json!(["c"]));
    }

    #[test]
    fn malformed_and_implausible_messages() {
        let mut s = state(AppProto::Llmnr);
        let q = message(1, 0, &[("host", 1)], &[]);
        feed(&mut s, Direction::ToServer, &q);
        // Truncated question: malformed, on the newest transaction.
        let ev = feed(&mut s, Direction::ToServer, &q[..q.len() - 2]);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Llmnr(LlmnrEvent::MalformedData, Some(0))]
        );
        // Counts that cannot fit: not DNS, ignored.
        let mut bad = q.clone();
        bad[4] = 0xff;
        assert!(feed(&mut s, Direction::ToServer, &bad).is_empty());
        // Short garbage, and nothing at all.
        assert!(feed(&mut s, Direction::ToServer, b"\x01\x02").is_empty());
        assert_eq!(s.transactions().count(), 1);
        let mut m = state(AppProto::Mdns);
        let ev = feed(&mut m, Direction::ToServer, &q[..q.len() - 2]);
        assert_eq!(ev, vec![AppLayerEvent::Mdns(DnsEvent::MalformedData, None)]);
    }

    #[test]
    fn probe_wants_a_plausible_message() {
        assert!(probe(&message(0, 0, &[("a.local", 1)], &[])));
        assert!(probe(&response()));
        // A request that asks nothing.
        assert!(!probe(&message(0, 0, &[], &[])));
        assert!(!probe(b"\x00\x00\x00\x00\x00\x01"));
        let mut padded = message(0, 0, &[], &[]);
        padded.extend_from_slice(&[0; 8]);
        assert!(!probe(&padded));
    }
}
