//! BitTorrent DHT (BEP 5; Suricata's `rust/src/bittorrent_dht`), over
//! UDP: a datagram is a bencoded KRPC message ([`crate::msg`]), decoded
//! with `bendy` (what Suricata uses, with its canonical-order checks and
//! a nesting depth of 3). Every datagram is a transaction of its own
//! direction, a malformed one too (with `malformed_packet` and an empty
//! transaction id, as Suricata logs it).
//!
//! No keywords (Suricata 9 has none). EVE `bittorrent_dht`:
//! `transaction_id`, `client_version`, `request_type`, `request` (`id`,
//! `target`, `info_hash`, `token`, `implied_port`, `port`), `response`
//! (`id`, `nodes`, `nodes6`, `values`, `token`), `error` (`num`, `msg`);
//! byte strings in lower-case hex.

use bendy::decoding::{Decoder, Error, Object};
use serde_json::{json, Map, Value};

use crate::events::BittorrentDhtEvent;
use crate::msg::{MsgProto, MsgTxData, Parsed};
use crate::{hex_lower, AppLayerEvent, AppProto, BufferId, Direction, TxId};

/// What a DHT flow's first datagram starts with (a query's arguments
/// dictionary with the node id: Suricata's probe).
pub const PREFIX: &[u8] = b"d1:ad2:id20:";

/// Most nodes or values kept per response.
pub const MAX_ITEMS: usize = 256;

/// A query's arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub id: Vec<u8>,
    pub target: Option<Vec<u8>>,
    pub info_hash: Option<Vec<u8>>,
    pub token: Option<Vec<u8>>,
    pub implied_port: Option<u8>,
    pub port: Option<u16>,
}

/// A node of a response (compact node info).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: Vec<u8>,
    pub ip: Vec<u8>,
    pub port: u16,
}

/// A peer of a response's `values` (compact peer info).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub ip: Vec<u8>,
    pub port: u16,
}

/// A response's values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub id: Vec<u8>,
    pub nodes: Vec<Node>,
    pub nodes6: Vec<Node>,
    pub values: Option<Vec<Peer>>,
    pub token: Option<Vec<u8>>,
}

/// One DHT message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DhtTx {
    pub transaction_id: Vec<u8>,
    pub client_version: Option<Vec<u8>>,
    pub request_type: Option<String>,
    pub request: Option<Request>,
    pub response: Option<Response>,
    /// The error's code and message.
    pub error: Option<(u16, String)>,
}

fn ip_string(ip: &[u8]) -> String {
    match ip.len() {
        4 => format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3]),
        16 => ip.chunks(2).map(hex_lower).collect::<Vec<_>>().join(":"),
        _ => String::new(),
    }
}

impl MsgTxData for DhtTx {
    fn buffers(&self, _id: BufferId) -> Vec<&[u8]> {
        Vec::new()
    }

    fn ints(&self, _key: &str) -> Vec<i64> {
        Vec::new()
    }

    /// Suricata's `bittorrent_dht` object.
    fn eve(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "transaction_id".into(),
            json!(hex_lower(&self.transaction_id)),
        );
        if let Some(v) = &self.client_version {
            m.insert("client_version".into(), json!(hex_lower(v)));
        }
        if let Some(t) = &self.request_type {
            m.insert("request_type".into(), json!(t));
        }
        if let Some((num, msg)) = &self.error {
            m.insert("error".into(), json!({"num": num, "msg": msg}));
        }
        if let Some(r) = &self.request {
            let mut o = Map::new();
            o.insert("id".into(), json!(hex_lower(&r.id)));
            for (k, v) in [
                ("target", &r.target),
                ("info_hash", &r.info_hash),
                ("token", &r.token),
            ] {
                if let Some(v) = v {
                    o.insert(k.into(), json!(hex_lower(v)));
                }
            }
            if let Some(p) = r.implied_port {
                o.insert("implied_port".into(), json!(p));
            }
            if let Some(p) = r.port {
                o.insert("port".into(), json!(p));
            }
            m.insert("request".into(), Value::Object(o));
        }
        if let Some(r) = &self.response {
            let mut o = Map::new();
            o.insert("id".into(), json!(hex_lower(&r.id)));
            let nodes = |n: &[Node]| -> Value {
                n.iter()
                    .map(
                        |n| json!({"id": hex_lower(&n.id), "ip": ip_string(&n.ip), "port": n.port}),
                    )
                    .collect()
            };
            if !r.nodes.is_empty() {
                o.insert("nodes".into(), nodes(&r.nodes));
            }
            if !r.nodes6.is_empty() {
                o.insert("nodes6".into(), nodes(&r.nodes6));
            }
            if let Some(values) = &r.values {
                let v: Value = values
                    .iter()
                    .map(|p| json!({"ip": ip_string(&p.ip), "port": p.port}))
                    .collect();
                o.insert("values".into(), v);
            }
            if let Some(t) = &r.token {
                o.insert("token".into(), json!(hex_lower(t)));
            }
            m.insert("response".into(), Value::Object(o));
        }
        Value::Object(m)
    }
}

fn bytes(o: Object) -> Result<Vec<u8>, Error> {
    o.try_into_bytes().map(<[u8]>::to_vec)
}

fn text(o: Object) -> Result<String, Error> {
    let b = o.try_into_bytes()?;
    String::from_utf8(b.to_vec()).map_err(|_| Error::unexpected_token("UTF-8 string", "bytes"))
}

fn int<T: TryFrom<i64>>(o: Object, what: &'static str) -> Result<T, Error> {
    let s = o.try_into_integer()?;
    s.parse::<i64>()
        .ok()
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| Error::malformed_content(std::fmt::Error).context(what))
}

/// Compact node infos: a 20-byte id, the address, a port, each.
fn compact_nodes(b: &[u8], ip_len: usize) -> Vec<Node> {
    b.chunks_exact(20 + ip_len + 2)
        .take(MAX_ITEMS)
        .map(|c| Node {
            id: c[..20].to_vec(),
            ip: c[20..20 + ip_len].to_vec(),
            port: u16::from_be_bytes([c[20 + ip_len], c[21 + ip_len]]),
        })
        .collect()
}

fn request(o: Object) -> Result<Request, Error> {
    let mut d = o.try_into_dictionary()?;
    let mut r = Request::default();
    let mut id = None;
    while let Some((k, v)) = d.next_pair()? {
        match k {
            b"id" => id = Some(bytes(v)?),
            b"target" => r.target = Some(bytes(v)?),
            b"info_hash" => r.info_hash = Some(bytes(v)?),
            b"token" => r.token = Some(bytes(v)?),
            b"implied_port" => r.implied_port = Some(int(v, "implied_port")?),
            b"port" => r.port = Some(int(v, "port")?),
            _ => {}
        }
    }
    r.id = id.ok_or_else(|| Error::missing_field("id"))?;
    Ok(r)
}

fn response(o: Object) -> Result<Response, Error> {
    let mut d = o.try_into_dictionary()?;
    let mut r = Response::default();
    let mut id = None;
    while let Some((k, v)) = d.next_pair()? {
        match k {
            b"id" => id = Some(bytes(v)?),
            b"nodes" => r.nodes = compact_nodes(v.try_into_bytes()?, 4),
            b"nodes6" => r.nodes6 = compact_nodes(v.try_into_bytes()?, 16),
            b"values" => {
                let mut l = v.try_into_list()?;
                let mut peers = Vec::new();
                while let Some(p) = l.next_object()? {
                    let p = p.try_into_bytes()?;
                    let ip_len = match p.len() {
                        6 => 4,
                        18 => 16,
                        _ => continue,
                    };
                    if peers.len() < MAX_ITEMS {
                        peers.push(Peer {
                            ip: p[..ip_len].to_vec(),
                            port: u16::from_be_bytes([p[ip_len], p[ip_len + 1]]),
                        });
                    }
                }
                r.values = Some(peers);
            }
            b"token" => r.token = Some(bytes(v)?),
            _ => {}
        }
    }
    r.id = id.ok_or_else(|| Error::missing_field("id"))?;
    Ok(r)
}

fn error(o: Object) -> Result<(u16, String), Error> {
    let mut l = o.try_into_list()?;
    let (mut num, mut msg) = (None, None);
    while let Some(item) = l.next_object()? {
        match item {
            Object::Integer(_) => num = Some(int(item, "num")?),
            Object::Bytes(_) => msg = Some(text(item)?),
            _ => {}
        }
    }
    Ok((
        num.ok_or_else(|| Error::missing_field("num"))?,
        msg.ok_or_else(|| Error::missing_field("msg"))?,
    ))
}

/// Decodes one KRPC message into `tx`; on an error `tx` keeps what it had.
pub fn decode(i: &[u8]) -> Result<DhtTx, Error> {
    let mut dec = Decoder::new(i).with_max_depth(3);
    let top = dec
        .next_object()?
        .ok_or_else(|| Error::unexpected_token("Dict", "EOF"))?;
    let mut d = top.try_into_dictionary()?;
    let (mut y, mut q, mut a, mut r, mut e, mut t, mut v) =
        (None, None, None, None, None, None, None);
    while let Some((k, val)) = d.next_pair()? {
        match k {
            b"y" => y = Some(text(val)?),
            b"q" => q = Some(text(val)?),
            b"a" => a = Some(request(val)?),
            b"r" => r = Some(response(val)?),
            b"e" => e = Some(error(val)?),
            b"t" => t = Some(bytes(val)?),
            b"v" => v = Some(bytes(val)?),
            _ => {}
        }
    }
    let mut tx = DhtTx::default();
    match y.as_deref() {
        Some("q") => {
            tx.request_type = Some(q.ok_or_else(|| Error::missing_field("query_type"))?);
            tx.request = Some(a.ok_or_else(|| Error::missing_field("query_arguments"))?);
        }
        Some("r") => tx.response = Some(r.ok_or_else(|| Error::missing_field("response"))?),
        Some("e") => tx.error = Some(e.ok_or_else(|| Error::missing_field("error"))?),
        Some(other) => return Err(Error::unexpected_token("q, r or e", other)),
        None => return Err(Error::missing_field("packet_type")),
    }
    tx.transaction_id = t.ok_or_else(|| Error::missing_field("transaction_id"))?;
    tx.client_version = v;
    Ok(tx)
}

/// Suricata's probe: more than the prefix, starting with it.
pub fn probe(i: &[u8]) -> bool {
    i.len() > PREFIX.len() && i.starts_with(PREFIX)
}

/// Per-flow DHT state (none: each datagram stands alone).
#[derive(Debug, Default)]
pub struct BittorrentDht;

impl BittorrentDht {
    pub fn new() -> Self {
        BittorrentDht
    }
}

impl MsgProto for BittorrentDht {
    type Tx = DhtTx;
    type Event = BittorrentDhtEvent;
    const PROTO: AppProto = AppProto::BittorrentDht;
    const TCP_RECORDS: bool = false;

    fn parse(&mut self, _dir: Direction, i: &[u8]) -> Parsed<DhtTx, BittorrentDhtEvent> {
        let mut out = Parsed::default();
        match decode(i) {
            Ok(tx) => out.txs.push(tx),
            Err(_) => {
                // As Suricata: the datagram is a transaction all the same.
                out.txs.push(DhtTx::default());
                out.events.push(BittorrentDhtEvent::MalformedPacket);
            }
        }
        out
    }

    fn event(e: BittorrentDhtEvent, tx: Option<TxId>) -> AppLayerEvent {
        AppLayerEvent::BittorrentDht(e, tx)
    }

    fn malformed() -> BittorrentDhtEvent {
        BittorrentDhtEvent::MalformedPacket
    }

    fn too_many() -> BittorrentDhtEvent {
        BittorrentDhtEvent::TooManyTransactions
    }
}

/// KRPC messages for tests, fuzz seeds and crafted captures.
pub mod build {
    /// A bencoded byte string.
    pub fn bstr(b: &[u8]) -> Vec<u8> {
        let mut v = format!("{}:", b.len()).into_bytes();
        v.extend_from_slice(b);
        v
    }

    /// A `get_peers` query from node `id` for `info_hash`.
    pub fn get_peers(t: &[u8], id: &[u8; 20], info_hash: &[u8; 20], version: &[u8]) -> Vec<u8> {
        [
            &b"d1:ad2:id"[..],
            &bstr(id),
            b"9:info_hash",
            &bstr(info_hash),
            b"e1:q9:get_peers1:t",
            &bstr(t),
            b"1:v",
            &bstr(version),
            b"1:y1:qe",
        ]
        .concat()
    }

    /// A response from node `id` with one IPv4 node, one peer, a token.
    pub fn reply(
        t: &[u8],
        id: &[u8; 20],
        node: ([u8; 20], [u8; 4], u16),
        peer: ([u8; 4], u16),
    ) -> Vec<u8> {
        let mut n = node.0.to_vec();
        n.extend(node.1);
        n.extend(node.2.to_be_bytes());
        let mut p = peer.0.to_vec();
        p.extend(peer.1.to_be_bytes());
        [
            &b"d1:rd2:id"[..],
            &bstr(id),
            b"5:nodes",
            &bstr(&n),
            b"5:token8:aoeusnth6:valuesl",
            &bstr(&p),
            b"ee1:t",
            &bstr(t),
            b"1:y1:re",
        ]
        .concat()
    }

    /// An error message.
    pub fn error_msg(t: &[u8], num: u16, msg: &str) -> Vec<u8> {
        [
            format!("d1:eli{num}e").as_bytes(),
            &bstr(msg.as_bytes()),
            b"e1:t",
            &bstr(t),
            b"1:y1:ee",
        ]
        .concat()
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    const QID: &[u8; 20] = b"abcdefghij0123456789";
    const RID: &[u8; 20] = b"mnopqrstuvwxyz123456";

    #[test]
    fn query_response_error() {
        let q = get_peers(b"aa", QID, &[0x11; 20], b"UT\x01\x02");
        assert!(probe(&q));
        let tx = decode(&q).unwrap();
        assert_eq!(tx.request_type.as_deref(), Some("get_peers"));
        assert_eq!(
            tx.eve(),
            json!({"transaction_id": "6161", "client_version": "55540102",
                   "request_type": "get_peers",
                   "request": {"id": "6162636465666768696a30313233343536373839",
                               "info_hash": "1111111111111111111111111111111111111111"}})
        );
        let r = reply(
            b"aa",
            RID,
            ([b'N'; 20], [10, 7, 0, 9], 6881),
            ([10, 7, 0, 8], 6882),
        );
        assert!(!probe(&r));
        assert_eq!(
            decode(&r).unwrap().eve()["response"],
            json!({"id": "6d6e6f707172737475767778797a313233343536",
                   "nodes": [{"id": "4e".repeat(20), "ip": "10.7.0.9", "port": 6881}],
                   "values": [{"ip": "10.7.0.8", "port": 6882}],
                   "token": "616f6575736e7468"})
        );
        let e = decode(&error_msg(b"bb", 201, "A Generic Error Ocurred")).unwrap();
        assert_eq!(e.error, Some((201, "A Generic Error Ocurred".into())));
        assert_eq!(e.eve()["transaction_id"], "6262");
    }

    #[test]
    fn announce_peer_and_nodes6() {
        let m = [
            &b"d1:ad2:id20:"[..],
            QID,
            b"12:implied_porti1e9:info_hash20:",
            &[0x22; 20],
            b"4:porti6881e5:token8:aoeusnthe1:q13:announce_peer1:t2:cc1:y1:qe",
        ]
        .concat();
        let r = decode(&m).unwrap().request.unwrap();
        assert_eq!((r.implied_port, r.port), (Some(1), Some(6881)));
        assert_eq!(r.token.as_deref(), Some(&b"aoeusnth"[..]));
        let mut n6 = vec![b'M'; 20];
        n6.extend([0x20, 0x01, 0x0d, 0xb8]);
        n6.extend([0; 11]);
        n6.push(1);
        n6.extend(6881u16.to_be_bytes());
        let resp = [
            &b"d1:rd2:id20:"[..],
            RID,
            b"6:nodes6",
            &bstr(&n6),
            b"e1:t1:x1:y1:re",
        ]
        .concat();
        let e = decode(&resp).unwrap().eve();
        assert_eq!(
            e["response"]["nodes6"][0]["ip"],
            "2001:0db8:0000:0000:0000:0000:0000:0001"
        );
        assert!(e["response"].get("nodes").is_none());
    }

    #[test]
    fn malformed_messages() {
        let bad = [
            // Unknown message type.
            [&b"d1:ad2:id20:"[..], QID, b"e1:q4:ping1:t2:dd1:y1:xe"].concat(),
            // A port out of range.
            [
                &b"d1:ad2:id20:"[..],
                QID,
                b"4:porti99999ee1:q4:ping1:t2:dd1:y1:qe",
            ]
            .concat(),
            // Keys out of order (bendy's canonical check).
            [&b"d1:y1:q1:ad2:id20:"[..], QID, b"e1:q4:ping1:t2:dde"].concat(),
            // A query without its id; too deep; truncated; not bencode.
            b"d1:ade1:q4:ping1:t2:dd1:y1:qe".to_vec(),
            b"d1:ad2:idlllleeeee1:q4:ping1:t2:dd1:y1:qe".to_vec(),
            get_peers(b"aa", QID, &[0x11; 20], b"UT")[..30].to_vec(),
            b"GET / HTTP/1.1\r\n".to_vec(),
        ];
        for b in &bad {
            assert!(decode(b).is_err(), "{:?}", String::from_utf8_lossy(b));
            let p = BittorrentDht::new().parse(Direction::ToServer, b);
            assert_eq!(p.txs, vec![DhtTx::default()]);
            assert_eq!(p.events, vec![BittorrentDhtEvent::MalformedPacket]);
        }
        assert_eq!(DhtTx::default().eve(), json!({"transaction_id": ""}));
        assert!(!probe(PREFIX));
    }
}
