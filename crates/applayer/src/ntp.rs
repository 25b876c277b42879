//! NTP (Suricata's `rust/src/ntp`), over UDP: a datagram is a message
//! ([`crate::msg`]), decoded by `ntp-parser` (rusticata, what Suricata
//! uses): versions 3 and 4. Every message is a transaction of its own
//! direction, as in Suricata 9 (which logs one `ntp` record per
//! message, requests and replies alike).
//!
//! Buffer: `ntp.reference_id` (the 4 raw bytes). Integers:
//! `ntp.version`, `ntp.mode` (numbers or names: `client`, `server` ...),
//! `ntp.stratum`. Events: Suricata's table (`unsolicited_response`,
//! `malformed_data`, `not_request`, `not_response`); like Suricata, only
//! `malformed_data` is ever raised (a datagram that does not decode).

use ntp_parser::{parse_ntp, NtpPacket};
use serde_json::{json, Value};

use crate::events::NtpEvent;
use crate::msg::{MsgProto, MsgTxData, Parsed};
use crate::{AppLayerEvent, AppProto, BufferId, Direction, TxId};

/// NTP's port.
pub const PORT: u16 = 123;

/// Suricata's names of the modes (`ntp.mode`), by number.
const MODE_NAMES: [&str; 8] = [
    "reserved",
    "symmetric_active",
    "symmetric_passive",
    "client",
    "server",
    "broadcast",
    "control",
    "private",
];

/// The mode a `ntp.mode` name denotes.
pub fn mode_by_name(name: &str) -> Option<u8> {
    let n = name.trim();
    MODE_NAMES
        .iter()
        .position(|m| m.eq_ignore_ascii_case(n))
        .and_then(|i| u8::try_from(i).ok())
}

/// One NTP message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NtpTx {
    pub version: u8,
    pub mode: u8,
    pub stratum: u8,
    /// The reference ID as sent (an ASCII code or an IPv4 address).
    pub reference_id: [u8; 4],
}

impl MsgTxData for NtpTx {
    fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        match id {
            BufferId::NtpReferenceId => vec![&self.reference_id[..]],
            _ => Vec::new(),
        }
    }

    fn ints(&self, key: &str) -> Vec<i64> {
        match key {
            "ntp.version" => vec![i64::from(self.version)],
            "ntp.mode" => vec![i64::from(self.mode)],
            "ntp.stratum" => vec![i64::from(self.stratum)],
            _ => Vec::new(),
        }
    }

    /// Suricata's `ntp` object: the reference ID as colon-separated hex.
    fn eve(&self) -> Value {
        let r = &self.reference_id;
        json!({
            "version": self.version,
            "mode": self.mode,
            "stratum": self.stratum,
            "reference_id": format!("{:02x}:{:02x}:{:02x}:{:02x}", r[0], r[1], r[2], r[3]),
        })
    }
}

/// Decodes one message: `None` when it is not NTP v3 or v4.
pub fn decode(i: &[u8]) -> Option<NtpTx> {
    let (_, p) = parse_ntp(i).ok()?;
    let (version, mode, stratum, ref_id) = match p {
        NtpPacket::V3(p) => (p.version, p.mode.0, p.stratum, p.ref_id),
        NtpPacket::V4(p) => (p.version, p.mode.0, p.stratum, p.ref_id),
    };
    Some(NtpTx {
        version,
        mode,
        stratum,
        reference_id: ref_id.to_be_bytes(),
    })
}

/// Suricata's probe: the datagram decodes as NTP v3 or v4.
pub fn probe(i: &[u8]) -> bool {
    decode(i).is_some()
}

/// Per-flow NTP parser state (none: each datagram stands alone).
#[derive(Debug, Default)]
pub struct Ntp;

impl Ntp {
    pub fn new() -> Self {
        Ntp
    }
}

impl MsgProto for Ntp {
    type Tx = NtpTx;
    type Event = NtpEvent;
    const PROTO: AppProto = AppProto::Ntp;
    const TCP_RECORDS: bool = false;

    fn parse(&mut self, _dir: Direction, i: &[u8]) -> Parsed<NtpTx, NtpEvent> {
        let mut out = Parsed::default();
        match decode(i) {
            Some(tx) => out.txs.push(tx),
            None => out.events.push(NtpEvent::MalformedData),
        }
        out
    }

    fn event(e: NtpEvent, tx: Option<TxId>) -> AppLayerEvent {
        AppLayerEvent::Ntp(e, tx)
    }

    fn malformed() -> NtpEvent {
        NtpEvent::MalformedData
    }

    fn too_many() -> NtpEvent {
        NtpEvent::TooManyTransactions
    }
}

/// NTP messages built from their fields, for tests, fuzz seeds and
/// crafted captures.
pub mod build {
    /// A 48-byte message: leap 0, `version`, `mode`, `stratum`, the
    /// reference ID, the transmit timestamp's seconds from `xmit`.
    pub fn message(version: u8, mode: u8, stratum: u8, ref_id: [u8; 4], xmit: u32) -> Vec<u8> {
        let mut m = vec![((version & 7) << 3) | (mode & 7), stratum, 6, 0xec];
        m.extend([0, 0, 0, 0x10, 0, 0, 0, 0x20]);
        m.extend(ref_id);
        m.extend([0u8; 24]);
        m.extend(xmit.to_be_bytes());
        m.extend([0x12, 0x34, 0x56, 0x78]);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::build::message;
    use super::*;
    use crate::msg::MsgState;
    use crate::{AppLayerConfig, Timestamp, Transport};

    fn state() -> MsgState<Ntp> {
        MsgState::new(Ntp::new(), Transport::Udp, &AppLayerConfig::default())
    }

    #[test]
    fn request_and_reply_are_transactions() {
        let mut s = state();
        let mut ev = Vec::new();
        let ts = Timestamp::default();
        // A v4 client request as sent by ntpdate: byte 0 is 0x23.
        let req = message(4, 3, 0, [0; 4], 0xe93c_1f2a);
        assert_eq!(req[0], 0x23);
        assert_eq!(req.len(), 48);
        s.feed(Direction::ToServer, &req, ts, &mut ev);
        s.feed(
            Direction::ToClient,
            &message(4, 4, 2, *b"RATE", 0xe93c_1f2b),
            ts,
            &mut ev,
        );
        assert!(ev.is_empty(), "{ev:?}");
        let txs: Vec<_> = s.transactions().collect();
        assert_eq!(txs.len(), 2);
        assert_eq!(txs[0].dir, Direction::ToServer);
        assert_eq!(txs[0].data.ints("ntp.mode"), vec![3]);
        assert_eq!(txs[0].data.ints("ntp.version"), vec![4]);
        assert_eq!(txs[1].data.ints("ntp.stratum"), vec![2]);
        assert_eq!(
            txs[1].data.buffers(BufferId::NtpReferenceId),
            vec![&b"RATE"[..]]
        );
        assert_eq!(
            txs[1].data.eve(),
            json!({"version": 4, "mode": 4, "stratum": 2, "reference_id": "52:41:54:45"})
        );
        assert_eq!(txs[0].data.eve()["reference_id"], "00:00:00:00");
    }

    #[test]
    fn v3_symmetric_with_address_reference() {
        let m = message(3, 1, 3, [10, 0, 0, 1], 1);
        assert_eq!(
            decode(&m),
            Some(NtpTx {
                version: 3,
                mode: 1,
                stratum: 3,
                reference_id: [10, 0, 0, 1],
            })
        );
        // A v3 message with a trailing authenticator (key id and MAC).
        let mut auth = m.clone();
        auth.extend([0, 0, 0, 1]);
        auth.extend([0xaa; 16]);
        assert_eq!(decode(&auth).map(|t| t.mode), Some(1));
    }

    #[test]
    fn malformed_truncated_and_other_versions() {
        let mut s = state();
        let ts = Timestamp::default();
        let m = message(4, 3, 0, [0; 4], 7);
        for cut in [1, 3, 20, 47] {
            let mut ev = Vec::new();
            s.feed(Direction::ToServer, &m[..cut], ts, &mut ev);
            assert_eq!(
                ev.iter().map(|e| e.name()).collect::<Vec<_>>(),
                ["MALFORMED_DATA"],
                "cut {cut}"
            );
        }
        // Version 2 and 5 are not NTP to Suricata's parser.
        assert!(!probe(&message(2, 3, 0, [0; 4], 7)));
        assert!(!probe(&message(5, 3, 0, [0; 4], 7)));
        assert!(!probe(
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n........................"
        ));
        assert!(probe(&m));
        assert_eq!(s.transactions().count(), 0);
    }

    #[test]
    fn mode_names() {
        assert_eq!(mode_by_name("client"), Some(3));
        assert_eq!(mode_by_name("symmetric_passive"), Some(2));
        assert_eq!(mode_by_name("Private"), Some(7));
        assert_eq!(mode_by_name("symmetric_private"), None);
    }
}
