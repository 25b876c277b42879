//! DHCP over UDP (Suricata's `rust/src/dhcp`): each datagram is a
//! transaction of its own direction (a client's request to the server, a
//! server's reply to the client), made of the BOOTP header and the DHCP
//! options after the magic cookie. Options that run past the datagram
//! raise `truncated_options`; a header too short `malformed_options`
//! (the transaction is still made, to carry the event). As in Suricata
//! the magic cookie is not checked once the flow is DHCP (detection
//! checks it): on dev-mix three discovers without it are the peer's
//! records. The `dhcp` object is Suricata's extended one.

use std::net::Ipv4Addr;

use serde_json::{Map, Value};

use crate::events::DhcpEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};

/// BOOTP header plus magic cookie.
pub const HEADER_LEN: usize = 240;
const MAGIC: [u8; 4] = [0x63, 0x82, 0x53, 0x63];

/// One DHCP option as it came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DhcpOption {
    pub code: u8,
    pub data: Vec<u8>,
}

/// One DHCP message: a transaction.
#[derive(Debug)]
pub struct DhcpTx {
    pub(crate) common: TxCommon,
    pub dir: Direction,
    /// `None` when the header did not parse.
    pub header: Option<Header>,
    pub options: Vec<DhcpOption>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub op: u8,
    pub hlen: u8,
    pub xid: u32,
    pub ciaddr: Ipv4Addr,
    pub yiaddr: Ipv4Addr,
    pub siaddr: Ipv4Addr,
    pub giaddr: Ipv4Addr,
    pub chaddr: [u8; 16],
}

impl Tx for DhcpTx {
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

fn ip(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

fn hex_colon(b: &[u8]) -> String {
    b.iter()
        .map(|c| format!("{c:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Suricata's names of the message types (option 53).
fn type_name(t: u8) -> String {
    match t {
        1 => "discover".into(),
        2 => "offer".into(),
        3 => "request".into(),
        4 => "decline".into(),
        5 => "ack".into(),
        6 => "nak".into(),
        7 => "release".into(),
        8 => "inform".into(),
        _ => "unknown".into(),
    }
}

/// Suricata's names of the parameters a client asks for (option 55);
/// it logs only these.
fn param_name(p: u8) -> Option<&'static str> {
    Some(match p {
        1 => "subnet_mask",
        3 => "router",
        6 => "dns_server",
        15 => "domain",
        35 => "arp_timeout",
        42 => "ntp_server",
        66 => "tftp_server_name",
        150 => "tftp_server_ip",
        _ => return None,
    })
}

impl DhcpTx {
    fn option(&self, code: u8) -> Option<&[u8]> {
        self.options
            .iter()
            .find(|o| o.code == code)
            .map(|o| &o.data[..])
    }

    fn u32_option(&self, code: u8) -> Option<u64> {
        self.option(code)
            .filter(|d| d.len() >= 4)
            .map(|d| u64::from(u32::from_be_bytes([d[0], d[1], d[2], d[3]])))
    }

    pub fn uints(&self, f: UintField) -> Vec<u64> {
        let code = match f {
            UintField::DhcpLeasetime => 51,
            UintField::DhcpRebindingTime => 59,
            UintField::DhcpRenewalTime => 58,
            _ => return Vec::new(),
        };
        self.u32_option(code).into_iter().collect()
    }

    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        match id {
            BufferId::DhcpVendorClassId => self.option(60).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    /// Suricata's extended `dhcp` object.
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        let Some(h) = &self.header else {
            return Value::Object(m);
        };
        let s = |v: String| Value::String(v);
        m.insert(
            "type".into(),
            match h.op {
                1 => "request",
                2 => "reply",
                _ => "<unknown>",
            }
            .into(),
        );
        m.insert("id".into(), h.xid.into());
        let hl = usize::from(h.hlen).min(16);
        m.insert("client_mac".into(), s(hex_colon(&h.chaddr[..hl])));
        m.insert("assigned_ip".into(), s(h.yiaddr.to_string()));
        m.insert("client_ip".into(), s(h.ciaddr.to_string()));
        if h.op == 2 {
            m.insert("relay_ip".into(), s(h.giaddr.to_string()));
            m.insert("next_server_ip".into(), s(h.siaddr.to_string()));
        }
        let ips = |d: &[u8]| -> Value {
            Value::Array(
                d.chunks_exact(4)
                    .map(|c| Value::String(ip(c).to_string()))
                    .collect(),
            )
        };
        let be32 = |d: &[u8]| -> Option<Value> {
            (d.len() >= 4).then(|| u32::from_be_bytes([d[0], d[1], d[2], d[3]]).into())
        };
        for o in &self.options {
            let d = &o.data[..];
            match o.code {
                61 if d.len() >= 2 => {
                    m.insert("client_id".into(), s(hex_colon(&d[1..])));
                }
                51 => {
                    if let Some(v) = be32(d) {
                        m.insert("lease_time".into(), v);
                    }
                }
                59 => {
                    if let Some(v) = be32(d) {
                        m.insert("rebinding_time".into(), v);
                    }
                }
                58 => {
                    if let Some(v) = be32(d) {
                        m.insert("renewal_time".into(), v);
                    }
                }
                1 if d.len() >= 4 => {
                    m.insert("subnet_mask".into(), s(ip(d).to_string()));
                }
                12 => {
                    m.insert("hostname".into(), suri_str(d));
                }
                53 if !d.is_empty() => {
                    m.insert("dhcp_type".into(), s(type_name(d[0])));
                }
                50 if d.len() >= 4 => {
                    m.insert("requested_ip".into(), s(ip(d).to_string()));
                }
                55 => {
                    let p: Vec<Value> = d
                        .iter()
                        .filter_map(|&p| param_name(p))
                        .map(Value::from)
                        .collect();
                    m.insert("params".into(), Value::Array(p));
                }
                6 => {
                    m.insert("dns_servers".into(), ips(d));
                }
                3 => {
                    m.insert("routers".into(), ips(d));
                }
                60 => {
                    m.insert("vendor_class_identifier".into(), suri_str(d));
                }
                _ => {}
            }
        }
        Value::Object(m)
    }
}

/// Parses a datagram: the header (`None` when short) and the options;
/// the event, if any.
pub fn parse(b: &[u8]) -> (Option<Header>, Vec<DhcpOption>, Option<DhcpEvent>) {
    if b.len() < HEADER_LEN {
        return (None, Vec::new(), Some(DhcpEvent::MalformedOptions));
    }
    let mut chaddr = [0u8; 16];
    chaddr.copy_from_slice(&b[28..44]);
    let h = Header {
        op: b[0],
        hlen: b[2],
        xid: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        ciaddr: ip(&b[12..]),
        yiaddr: ip(&b[16..]),
        siaddr: ip(&b[20..]),
        giaddr: ip(&b[24..]),
        chaddr,
    };
    let mut opts = Vec::new();
    let mut i = HEADER_LEN;
    let mut event = None;
    while i < b.len() {
        let code = b[i];
        match code {
            0 => {
                i += 1;
                continue;
            }
            255 => break,
            _ => {}
        }
        let Some(&len) = b.get(i + 1) else {
            event = Some(DhcpEvent::TruncatedOptions);
            break;
        };
        let end = i + 2 + usize::from(len);
        if end > b.len() {
            event = Some(DhcpEvent::TruncatedOptions);
            break;
        }
        opts.push(DhcpOption {
            code,
            data: b[i + 2..end].to_vec(),
        });
        i = end;
    }
    (Some(h), opts, event)
}

/// Whether a datagram is a BOOTP/DHCP message: a request or reply header
/// with the magic cookie.
pub fn probe(b: &[u8]) -> bool {
    b.len() >= HEADER_LEN && matches!(b[0], 1 | 2) && b[236..240] == MAGIC
}

/// Per-flow DHCP state.
#[derive(Debug)]
pub struct DhcpState {
    txs: TxList<DhcpTx>,
}

impl DhcpState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        DhcpState {
            txs: TxList::new(cfg.max_transactions),
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&DhcpTx> {
        self.txs.get(id)
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if data.is_empty() {
            return;
        }
        let (header, options, event) = parse(data);
        let dropped = self.txs.push(|id| DhcpTx {
            common: TxCommon::new(id, ts),
            dir,
            header,
            options,
        });
        let id = self.txs.next_id - 1;
        if dropped {
            ev.push(AppLayerEvent::Dhcp(
                DhcpEvent::TooManyTransactions,
                Some(id),
            ));
        }
        if let Some(e) = event {
            ev.push(AppLayerEvent::Dhcp(e, Some(id)));
        }
    }
}

impl TxParser for DhcpState {
    fn proto(&self) -> AppProto {
        AppProto::Dhcp
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        DhcpState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, _dir: Direction, _ev: &mut Vec<AppLayerEvent>) {}
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
        self.txs.retain(keep)
    }
    fn buffers(&self, tx: TxId, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        self.txs
            .get(tx)
            .filter(|t| t.dir == dir)
            .map(|t| t.buffers(id))
            .unwrap_or_default()
    }
    fn uints(&self, tx: TxId, field: UintField, dir: Direction) -> Vec<u64> {
        self.txs
            .get(tx)
            .filter(|t| t.dir == dir)
            .map(|t| t.uints(field))
            .unwrap_or_default()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn tx_dir(&self, tx: TxId) -> Option<Direction> {
        self.txs.get(tx).map(|t| t.dir)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A DHCP message: op, xid 0x01020304, the client MAC, yiaddr, then
    /// `opts` after the cookie.
    pub(crate) fn message(op: u8, yiaddr: [u8; 4], opts: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_LEN];
        b[0] = op;
        b[1] = 1;
        b[2] = 6;
        b[4..8].copy_from_slice(&[1, 2, 3, 4]);
        b[16..20].copy_from_slice(&yiaddr);
        b[20..24].copy_from_slice(&[10, 0, 0, 1]);
        b[28..34].copy_from_slice(&[0, 0x11, 0x22, 0x33, 0x44, 0x55]);
        b[236..240].copy_from_slice(&MAGIC);
        b.extend_from_slice(opts);
        b
    }

    fn state() -> DhcpState {
        DhcpState::new(&AppLayerConfig::default())
    }

    #[test]
    fn request_and_ack_are_transactions_of_their_direction() {
        let mut s = state();
        let mut ev = Vec::new();
        let req = message(
            1,
            [0; 4],
            b"\x35\x01\x03\x0c\x04nas1\x37\x04\x01\x03\x1c\x06\x3c\x03abc\x3d\x07\x01\x00\x11\x22\x33\x44\x55\xff",
        );
        s.feed(Direction::ToServer, &req, 1, &mut ev);
        let ack = message(
            2,
            [10, 0, 0, 9],
            b"\x35\x01\x05\x33\x04\x00\x00\x0e\x10\x3a\x04\x00\x00\x07\x08\x3b\x04\x00\x00\x0c\x4e\x01\x04\xff\xff\x00\x00\x06\x08\x0a\x00\x00\x01\x0a\x00\x00\x02\x00\x00\xff",
        );
        s.feed(Direction::ToClient, &ack, 2, &mut ev);
        assert!(ev.is_empty());
        let r = s.tx(0).unwrap();
        assert_eq!(s.tx_dir(0), Some(Direction::ToServer));
        let e = r.eve();
        assert_eq!(e["type"], "request");
        assert_eq!(e["id"], 0x01020304);
        assert_eq!(e["client_mac"], "00:11:22:33:44:55");
        assert_eq!(e["dhcp_type"], "request");
        assert_eq!(e["hostname"], "nas1");
        assert_eq!(
            e["params"],
            serde_json::json!(["subnet_mask", "router", "dns_server"])
        );
        assert_eq!(e["client_id"], "00:11:22:33:44:55");
        assert_eq!(e["vendor_class_identifier"], "abc");
        assert!(e.get("relay_ip").is_none());
        assert_eq!(
            TxParser::buffers(&s, 0, BufferId::DhcpVendorClassId, Direction::ToServer),
            vec![&b"abc"[..]]
        );
        assert!(
            TxParser::buffers(&s, 0, BufferId::DhcpVendorClassId, Direction::ToClient).is_empty()
        );
        let a = s.tx(1).unwrap();
        let e = a.eve();
        assert_eq!(e["type"], "reply");
        assert_eq!(e["dhcp_type"], "ack");
        assert_eq!(e["assigned_ip"], "10.0.0.9");
        assert_eq!(e["next_server_ip"], "10.0.0.1");
        assert_eq!(e["lease_time"], 3600);
        assert_eq!(e["renewal_time"], 1800);
        assert_eq!(e["rebinding_time"], 3150);
        assert_eq!(e["subnet_mask"], "255.255.0.0");
        assert_eq!(
            e["dns_servers"],
            serde_json::json!(["10.0.0.1", "10.0.0.2"])
        );
        assert_eq!(a.uints(UintField::DhcpLeasetime), vec![3600]);
        assert_eq!(a.uints(UintField::DhcpRenewalTime), vec![1800]);
        assert_eq!(a.uints(UintField::DhcpRebindingTime), vec![3150]);
        assert!(TxParser::uints(&s, 1, UintField::DhcpLeasetime, Direction::ToServer).is_empty());
    }

    #[test]
    fn truncated_and_malformed() {
        let mut s = state();
        let mut ev = Vec::new();
        // An option whose length runs past the datagram.
        s.feed(
            Direction::ToServer,
            &message(1, [0; 4], b"\x35\x01\x01\x0c\x09ab"),
            1,
            &mut ev,
        );
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dhcp(DhcpEvent::TruncatedOptions, Some(0))]
        );
        assert_eq!(s.tx(0).unwrap().eve()["dhcp_type"], "discover");
        ev.clear();
        // A short datagram; one without the cookie still parses (the
        // cookie is for detection).
        s.feed(Direction::ToServer, b"\x01\x01\x06", 2, &mut ev);
        let mut nocookie = message(1, [0; 4], b"\x35\x01\x01\xff");
        nocookie[236] = 0;
        s.feed(Direction::ToServer, &nocookie, 3, &mut ev);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dhcp(DhcpEvent::MalformedOptions, Some(1))]
        );
        assert_eq!(s.tx(1).unwrap().eve(), serde_json::json!({}));
        assert_eq!(s.tx(2).unwrap().eve()["dhcp_type"], "discover");
        assert!(probe(&message(2, [0; 4], b"\xff")));
        assert!(!probe(&nocookie));
        assert!(!probe(b"\x01"));
    }
}
