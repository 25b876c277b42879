//! TFTP (RFC 1350) over UDP, as Suricata 9 parses it (`rust/src/tftp`):
//! read and write requests (RRQ, WRQ) are transactions, with the file
//! name and transfer mode; DATA, ACK and ERROR packets, which flow
//! between ephemeral ports, are not parsed. Two short zero-terminated
//! strings are all there is to read, so the parser is ours.
//!
//! # Bounds
//!
//! A file name or mode is cut at [`MAX_FIELD`] bytes (a request is one
//! datagram, itself at most 64 KiB); transactions are capped by
//! `max_transactions`.

use serde_json::{Map, Value};

use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser, UintField};
use crate::{AppLayerConfig, AppProto, BufferId, Direction, Timestamp, TxId};

/// TFTP's port.
pub const PORT: u16 = 69;
/// Longest file name or mode kept.
pub const MAX_FIELD: usize = 1024;

const RRQ: u16 = 1;
const WRQ: u16 = 2;

/// A read or write request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub opcode: u16,
    pub filename: Vec<u8>,
    pub mode: Vec<u8>,
}

/// Parses an RRQ or WRQ: the opcode, then the file name and the mode,
/// each ending with a zero byte; the mode is one RFC 1350 names
/// (`netascii`, `octet`, `mail`, any case), as Suricata requires.
pub fn parse_request(b: &[u8]) -> Option<Request> {
    if b.len() < 4 || b[0] != 0 || !matches!(b[1] as u16, RRQ | WRQ) {
        return None;
    }
    let rest = &b[2..];
    let end = memchr::memchr(0, rest)?;
    let filename = &rest[..end];
    let rest = &rest[end + 1..];
    let end = memchr::memchr(0, rest)?;
    let mode = &rest[..end];
    if !["netascii", "octet", "mail"]
        .iter()
        .any(|m| m.as_bytes().eq_ignore_ascii_case(mode))
    {
        return None;
    }
    Some(Request {
        opcode: b[1] as u16,
        filename: filename[..filename.len().min(MAX_FIELD)].to_vec(),
        mode: mode.to_vec(),
    })
}

/// Whether a datagram to the TFTP port is a request.
pub fn probe(b: &[u8]) -> bool {
    parse_request(b).is_some()
}

/// One request.
#[derive(Debug, Default)]
pub struct TftpTx {
    pub(crate) common: TxCommon,
    pub request: Option<Request>,
}

impl Tx for TftpTx {
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

impl TftpTx {
    /// The EVE `tftp` object: `packet` (`read`/`write`), `file`, `mode`.
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        if let Some(r) = &self.request {
            let packet = if r.opcode == RRQ { "read" } else { "write" };
            m.insert("packet".into(), Value::String(packet.into()));
            m.insert("file".into(), suri_str(&r.filename));
            m.insert("mode".into(), suri_str(&r.mode));
        }
        Value::Object(m)
    }
}

/// Per-flow TFTP state.
#[derive(Debug)]
pub struct TftpState {
    txs: TxList<TftpTx>,
}

impl TftpState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        TftpState {
            txs: TxList::new(cfg.max_transactions),
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&TftpTx> {
        self.txs.get(id)
    }
}

impl TxParser for TftpState {
    fn proto(&self) -> AppProto {
        AppProto::Tftp
    }
    fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        _ev: &mut Vec<crate::AppLayerEvent>,
    ) {
        // Requests go to the server; anything else is not parsed (as
        // Suricata, which has no TFTP events).
        if dir != Direction::ToServer {
            return;
        }
        if let Some(r) = parse_request(data) {
            self.txs.push(|id| TftpTx {
                common: TxCommon::new(id, ts),
                request: Some(r),
            });
        }
    }
    fn on_gap(&mut self, _dir: Direction, _ev: &mut Vec<crate::AppLayerEvent>) {}
    fn finish(&mut self, _dir: Direction, _ev: &mut Vec<crate::AppLayerEvent>) {}
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
    fn buffers(&self, _tx: TxId, _id: BufferId, _dir: Direction) -> Vec<&[u8]> {
        Vec::new()
    }
    fn uints(&self, _tx: TxId, _field: UintField, _dir: Direction) -> Vec<u64> {
        Vec::new()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve())
    }
    fn tx_dir(&self, _tx: TxId) -> Option<Direction> {
        Some(Direction::ToServer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        let r = parse_request(b"\x00\x01boot/pxelinux.0\x00octet\x00").unwrap();
        assert_eq!(r.opcode, RRQ);
        assert_eq!(r.filename, b"boot/pxelinux.0");
        assert_eq!(r.mode, b"octet");
        // Options after the mode (RFC 2347) are allowed.
        let w = parse_request(b"\x00\x02up.cfg\x00NETASCII\x00blksize\x001428\x00").unwrap();
        assert_eq!(w.opcode, WRQ);
        assert_eq!(w.mode, b"NETASCII");
        // Not requests: DATA, an unknown mode, a name without its end.
        assert!(parse_request(b"\x00\x03\x00\x01data").is_none());
        assert!(parse_request(b"\x00\x01f\x00binary\x00").is_none());
        assert!(parse_request(b"\x00\x01file-without-end").is_none());
        assert!(parse_request(b"\x00\x01f\x00octet").is_none());
        assert!(parse_request(b"\x01").is_none());
        assert!(probe(b"\x00\x01a\x00mail\x00"));
    }

    #[test]
    fn transactions_and_records() {
        let mut s = TftpState::new(&AppLayerConfig::default());
        let mut ev = Vec::new();
        s.feed(
            Direction::ToServer,
            b"\x00\x01a.bin\x00octet\x00",
            1,
            &mut ev,
        );
        s.feed(
            Direction::ToClient,
            b"\x00\x05\x00\x01not found\x00",
            2,
            &mut ev,
        );
        s.feed(Direction::ToServer, b"\x00\x04\x00\x01", 3, &mut ev);
        s.feed(
            Direction::ToServer,
            b"\x00\x02b\xff\x00mail\x00",
            4,
            &mut ev,
        );
        assert!(ev.is_empty());
        assert_eq!(s.infos().len(), 2);
        assert_eq!(
            s.tx(0).unwrap().eve(),
            serde_json::json!({"packet": "read", "file": "a.bin", "mode": "octet"})
        );
        assert_eq!(s.tx(1).unwrap().eve()["packet"], "write");
        assert_eq!(s.tx(1).unwrap().eve()["file"], "b\\xff");
        // A long name is cut.
        let mut long = b"\x00\x01".to_vec();
        long.extend(std::iter::repeat_n(b'n', 5000));
        long.extend_from_slice(b"\x00octet\x00");
        assert_eq!(parse_request(&long).unwrap().filename.len(), MAX_FIELD);
    }
}
