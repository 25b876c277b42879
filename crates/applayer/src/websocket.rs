//! WebSocket over TCP (RFC 6455; Suricata's `rust/src/websocket`).
//!
//! A flow becomes `websocket` when its HTTP/1 `Upgrade: websocket`
//! request is answered `101` (see `AppLayerState::switch_websocket`);
//! there is no detection of its own on a fresh flow. Each frame is a
//! transaction of the direction that sent it, as in Suricata: its FIN
//! bit, the flag nibble (FIN, RSV1 "comp", RSV2, RSV3), the opcode, the
//! masking key and the payload, unmasked. A payload longer than
//! [`MAX_PAYLOAD`] is cut there and the rest of it skipped
//! (`skip_end_of_payload`). The payloads of a fragmented message (frames
//! without FIN, then continuations) are gathered, up to [`MAX_PAYLOAD`]
//! (`reassembly_limit_reached` past it), and the final frame carries the
//! whole message; a message compressed with `permessage-deflate` (RSV1 on
//! its first frame) is inflated there, capped at [`MAX_INFLATED`]. As in
//! Suricata, a gap ends the parsing of the flow (frames cannot be found
//! again in the middle of a stream).

use std::io::Read;

use serde_json::{Map, Value};

use crate::events::WebSocketEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};

/// Payload bytes kept per frame and per reassembled message (Suricata's
/// `app-layer.protocols.websocket.max-payload-size` default).
pub const MAX_PAYLOAD: usize = 0xFFFF;
/// Bytes an inflated message may grow to.
pub const MAX_INFLATED: usize = 1 << 20;
/// The longest frame header: 2 bytes, a 64-bit length, the masking key.
const MAX_HEADER: usize = 14;

/// Opcode names, as Suricata writes them and `websocket.opcode` accepts
/// them.
pub const OPCODE_NAMES: &[(&str, u64)] = &[
    ("continuation", 0),
    ("text", 1),
    ("binary", 2),
    ("close", 8),
    ("ping", 9),
    ("pong", 10),
];

/// `websocket.flags` names: the bits of the first byte.
pub const FLAG_NAMES: &[(&str, u64)] = &[("fin", 0x80), ("comp", 0x40)];

/// One frame.
#[derive(Debug)]
pub struct WsTx {
    pub(crate) common: TxCommon,
    pub dir: Direction,
    pub fin: bool,
    /// The first byte's high nibble (FIN, RSV1-3).
    pub flags: u8,
    pub opcode: u8,
    pub mask: Option<u32>,
    /// Unmasked (and, for the final frame of a message, reassembled and
    /// inflated) payload.
    pub payload: Vec<u8>,
}

impl Tx for WsTx {
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

impl WsTx {
    pub fn opcode_name(&self) -> String {
        match OPCODE_NAMES
            .iter()
            .find(|(_, v)| *v == u64::from(self.opcode))
        {
            Some((n, _)) => (*n).to_string(),
            None => format!("unknown-{}", self.opcode),
        }
    }

    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        m.insert("fin".into(), self.fin.into());
        if let Some(k) = self.mask {
            m.insert("mask".into(), k.into());
        }
        m.insert("opcode".into(), self.opcode_name().into());
        Value::Object(m)
    }

    pub fn uints(&self, f: UintField) -> Vec<u64> {
        match f {
            UintField::WebsocketOpcode => vec![u64::from(self.opcode)],
            UintField::WebsocketFlags => vec![u64::from(self.flags)],
            UintField::WebsocketMask => self.mask.map(u64::from).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        match id {
            BufferId::WebsocketPayload => vec![&self.payload[..]],
            _ => Vec::new(),
        }
    }
}

/// A frame header: what precedes the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub first: u8,
    pub mask: Option<u32>,
    pub len: u64,
    /// Bytes of the header.
    pub size: usize,
}

/// The frame header at the start of `b`: `None` while incomplete.
pub fn parse_header(b: &[u8]) -> Option<Header> {
    let (&first, rest) = b.split_first()?;
    let (&second, rest) = rest.split_first()?;
    let (len, rest, mut size) = match second & 0x7f {
        126 => (
            u64::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?)),
            &rest[2..],
            4,
        ),
        127 => (
            u64::from_be_bytes(rest.get(..8)?.try_into().ok()?),
            &rest[8..],
            10,
        ),
        n => (u64::from(n), rest, 2),
    };
    let mask = if second & 0x80 != 0 {
        size += 4;
        Some(u32::from_be_bytes(rest.get(..4)?.try_into().ok()?))
    } else {
        None
    };
    Some(Header {
        first,
        mask,
        len,
        size,
    })
}

/// XORs `p` with the masking key, starting at key byte 0.
pub fn unmask(p: &mut [u8], key: u32) {
    let k = key.to_be_bytes();
    for (i, c) in p.iter_mut().enumerate() {
        *c ^= k[i % 4];
    }
}

/// A message's payloads gathered across its frames.
#[derive(Debug, Default)]
struct Reassembly {
    data: Vec<u8>,
    /// A message started and has not ended.
    open: bool,
    /// Its first frame had RSV1 (`permessage-deflate`).
    compress: bool,
}

#[derive(Debug, Default)]
struct Side {
    buf: Vec<u8>,
    /// Payload bytes of an oversized frame still to skip.
    to_skip: u64,
    msg: Reassembly,
}

/// Per-flow WebSocket state.
#[derive(Debug)]
pub struct WebSocketState {
    txs: TxList<WsTx>,
    sides: [Side; 2],
    /// A gap: frames cannot be found again.
    stopped: bool,
}

/// Inflates a `permessage-deflate` message (RFC 7692 section 7.2.2: the
/// sender removed the final empty block's `00 00 ff ff`), at most
/// [`MAX_INFLATED`] bytes; `None` when nothing came out.
fn inflate(p: &[u8]) -> Option<Vec<u8>> {
    let mut input = Vec::with_capacity(p.len() + 4);
    input.extend_from_slice(p);
    input.extend_from_slice(&[0, 0, 0xff, 0xff]);
    let mut out = Vec::new();
    let mut d = flate2::read::DeflateDecoder::new(&input[..]).take(MAX_INFLATED as u64);
    // A truncated or corrupt stream still yields what inflated before it.
    let _ = d.read_to_end(&mut out);
    (!out.is_empty()).then_some(out)
}

impl WebSocketState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        WebSocketState {
            txs: TxList::new(cfg.max_transactions),
            sides: Default::default(),
            stopped: false,
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&WsTx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &WsTx> {
        self.txs.txs.iter()
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if self.stopped {
            return;
        }
        let side = &mut self.sides[dir.index()];
        let mut data = data;
        if side.to_skip > 0 {
            let n = side.to_skip.min(data.len() as u64);
            side.to_skip -= n;
            data = &data[n as usize..];
        }
        side.buf.extend_from_slice(data);
        self.frames(dir, ts, ev);
    }

    /// Takes the complete frames buffered for `dir`.
    fn frames(&mut self, dir: Direction, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let mut pos = 0;
        loop {
            let side = &mut self.sides[dir.index()];
            if side.to_skip > 0 {
                // The rest of an oversized payload (only while the
                // buffer held more than the frame).
                let n = side.to_skip.min((side.buf.len() - pos) as u64);
                side.to_skip -= n;
                pos += n as usize;
                if side.to_skip > 0 {
                    break;
                }
            }
            let Some(h) = parse_header(&side.buf[pos..]) else {
                break;
            };
            let (keep, skip) = if h.len < MAX_PAYLOAD as u64 {
                (h.len as usize, 0)
            } else {
                (MAX_PAYLOAD, h.len - MAX_PAYLOAD as u64)
            };
            if side.buf.len() - pos < h.size + keep {
                break;
            }
            let start = pos + h.size;
            let mut payload = side.buf[start..start + keep].to_vec();
            pos = start + keep;
            side.to_skip = skip;
            if let Some(k) = h.mask {
                unmask(&mut payload, k);
            }
            let fin = h.first & 0x80 != 0;
            let mut events = Vec::new();
            if skip > 0 {
                events.push(WebSocketEvent::SkipEndOfPayload);
            }
            let msg = &mut side.msg;
            // Control frames (close, ping, pong) stand alone, even in the
            // middle of a fragmented message.
            let control = h.first & 0x08 != 0;
            if !control && (msg.open || !fin) {
                if !msg.open {
                    msg.open = true;
                    msg.compress = h.first & 0x40 != 0;
                }
                let room = MAX_PAYLOAD.saturating_sub(msg.data.len());
                if room > 0 && payload.len() >= room {
                    events.push(WebSocketEvent::ReassemblyLimitReached);
                }
                msg.data
                    .extend_from_slice(&payload[..payload.len().min(room)]);
            } else if !control {
                msg.compress = h.first & 0x40 != 0;
            }
            if fin && !control {
                if msg.open {
                    payload = std::mem::take(&mut msg.data);
                    msg.open = false;
                }
                if std::mem::take(&mut msg.compress) {
                    if let Some(p) = inflate(&payload) {
                        payload = p;
                    }
                }
            }
            let dropped = self.txs.push(|id| WsTx {
                common: TxCommon::new(id, ts),
                dir,
                fin,
                flags: h.first & 0xf0,
                opcode: h.first & 0x0f,
                mask: h.mask,
                payload,
            });
            let id = self.txs.next_id - 1;
            if dropped {
                events.push(WebSocketEvent::TooManyTransactions);
            }
            ev.extend(
                events
                    .into_iter()
                    .map(|e| AppLayerEvent::WebSocket(e, Some(id))),
            );
        }
        let side = &mut self.sides[dir.index()];
        side.buf.drain(..pos);
        // What is left is less than a header and a capped payload.
        debug_assert!(side.buf.len() < MAX_HEADER + MAX_PAYLOAD);
    }

    /// A gap: the flow is no longer parsed (Suricata's parser does not
    /// accept gaps).
    pub fn on_gap(&mut self) {
        self.stopped = true;
        self.sides = Default::default();
    }
}

impl TxParser for WebSocketState {
    fn proto(&self) -> AppProto {
        AppProto::WebSocket
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        WebSocketState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, _dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        WebSocketState::on_gap(self)
    }
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        // A frame cut by the end of the stream is not a frame.
        self.sides[dir.index()] = Side::default();
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
    fn wants_data(&self, _dir: Direction) -> bool {
        !self.stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use Direction::*;

    /// A frame: first byte, optional key, payload (masked here when a
    /// key is given).
    pub(crate) fn frame(first: u8, key: Option<u32>, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![first];
        let m = if key.is_some() { 0x80 } else { 0 };
        match payload.len() {
            n if n < 126 => v.push(m | n as u8),
            n if n <= 0xffff => {
                v.push(m | 126);
                v.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                v.push(m | 127);
                v.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mut p = payload.to_vec();
        if let Some(k) = key {
            v.extend_from_slice(&k.to_be_bytes());
            unmask(&mut p, k);
        }
        v.extend_from_slice(&p);
        v
    }

    fn state() -> WebSocketState {
        WebSocketState::new(&AppLayerConfig::default())
    }

    #[test]
    fn masked_and_unmasked_frames_bytewise() {
        let mut s = state();
        let mut ev = Vec::new();
        let c = frame(0x81, Some(0x11223344), b"hello server");
        for b in &c {
            s.feed(ToServer, std::slice::from_ref(b), 1, &mut ev);
        }
        s.feed(ToClient, &frame(0x82, None, b"\x00\x01bin"), 2, &mut ev);
        assert!(ev.is_empty());
        let t0 = s.tx(0).unwrap();
        assert_eq!(t0.dir, ToServer);
        assert_eq!(t0.payload, b"hello server");
        assert_eq!(t0.mask, Some(0x11223344));
        assert_eq!(t0.uints(UintField::WebsocketOpcode), vec![1]);
        assert_eq!(t0.uints(UintField::WebsocketFlags), vec![0x80]);
        assert_eq!(t0.uints(UintField::WebsocketMask), vec![0x11223344]);
        assert_eq!(
            t0.eve(),
            json!({"fin": true, "mask": 0x11223344u32, "opcode": "text"})
        );
        let t1 = s.tx(1).unwrap();
        assert_eq!(t1.dir, ToClient);
        assert_eq!(t1.payload, b"\x00\x01bin");
        assert!(t1.uints(UintField::WebsocketMask).is_empty());
        assert_eq!(t1.eve(), json!({"fin": true, "opcode": "binary"}));
        // Direction filter: the client's frame is not a to-client buffer.
        assert!(TxParser::buffers(&s, 0, BufferId::WebsocketPayload, ToClient).is_empty());
        assert_eq!(
            TxParser::buffers(&s, 0, BufferId::WebsocketPayload, ToServer),
            vec![&b"hello server"[..]]
        );
    }

    #[test]
    fn length_forms_and_opcodes() {
        let mut s = state();
        let mut ev = Vec::new();
        let mid = vec![b'a'; 300];
        let big = vec![b'b'; 70_000];
        let mut all = frame(0x82, None, &mid);
        all.extend(frame(0x82, Some(7), &big));
        all.extend(frame(0x88, None, b"\x03\xe8bye"));
        all.extend(frame(0x8b, None, b""));
        s.feed(ToClient, &all, 1, &mut ev);
        assert_eq!(s.tx(0).unwrap().payload.len(), 300);
        // Longer than the cap: cut, the rest skipped, the next frame found.
        let t = s.tx(1).unwrap();
        assert_eq!(t.payload.len(), MAX_PAYLOAD);
        assert!(t.payload.iter().all(|&c| c == b'b'));
        assert_eq!(
            ev,
            vec![AppLayerEvent::WebSocket(
                WebSocketEvent::SkipEndOfPayload,
                Some(1)
            )]
        );
        assert_eq!(s.tx(2).unwrap().opcode_name(), "close");
        assert_eq!(s.tx(3).unwrap().opcode_name(), "unknown-11");
        assert_eq!(s.tx(3).unwrap().payload, b"");
    }

    #[test]
    fn oversized_payload_skipped_across_feeds() {
        let mut s = state();
        let mut ev = Vec::new();
        let f = frame(0x82, None, &vec![1u8; 200_000]);
        for c in f.chunks(1000) {
            s.feed(ToClient, c, 1, &mut ev);
        }
        s.feed(ToClient, &frame(0x81, None, b"after"), 1, &mut ev);
        assert_eq!(s.transactions().count(), 2);
        assert_eq!(s.tx(1).unwrap().payload, b"after");
        assert!(s.sides[1].buf.is_empty());
    }

    #[test]
    fn fragmented_message_reassembled() {
        let mut s = state();
        let mut ev = Vec::new();
        s.feed(ToServer, &frame(0x01, Some(5), b"frag"), 1, &mut ev);
        // A control frame in the middle does not join the message.
        s.feed(ToServer, &frame(0x89, Some(6), b"p"), 1, &mut ev);
        s.feed(ToServer, &frame(0x00, Some(7), b"men"), 1, &mut ev);
        s.feed(ToServer, &frame(0x80, Some(8), b"ted"), 1, &mut ev);
        let p: Vec<&[u8]> = s.transactions().map(|t| &t.payload[..]).collect();
        assert_eq!(p, vec![&b"frag"[..], b"p", b"men", b"fragmented"]);
        assert!(s.tx(3).unwrap().fin);
        assert_eq!(s.tx(3).unwrap().opcode_name(), "continuation");
        // Past the cap: the event, the message cut.
        let mut s = state();
        let part = vec![b'x'; 40_000];
        s.feed(ToClient, &frame(0x02, None, &part), 1, &mut ev);
        s.feed(ToClient, &frame(0x80, None, &part), 1, &mut ev);
        assert_eq!(s.tx(1).unwrap().payload.len(), MAX_PAYLOAD);
        assert_eq!(
            ev.last(),
            Some(&AppLayerEvent::WebSocket(
                WebSocketEvent::ReassemblyLimitReached,
                Some(1)
            ))
        );
    }

    #[test]
    fn permessage_deflate() {
        use std::io::Write;
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b"compressed hello hello hello").unwrap();
        let mut z = e.finish().unwrap();
        // As a sender does it: a sync flush ends with 00 00 ff ff, cut.
        z.extend_from_slice(&[0, 0, 0xff, 0xff]);
        let z = &z[..z.len() - 4];
        let mut s = state();
        let mut ev = Vec::new();
        let (a, b) = z.split_at(z.len() / 2);
        s.feed(ToClient, &frame(0x41, None, a), 1, &mut ev);
        s.feed(ToClient, &frame(0x80, None, b), 1, &mut ev);
        assert_eq!(s.tx(1).unwrap().payload, b"compressed hello hello hello");
        assert_eq!(
            s.tx(0).unwrap().uints(UintField::WebsocketFlags),
            vec![0x40]
        );
        // Garbage that does not inflate stays as it was.
        s.feed(ToClient, &frame(0xc1, None, b"\xff\xfe"), 1, &mut ev);
        assert_eq!(s.tx(2).unwrap().payload, b"\xff\xfe");
    }

    #[test]
    fn gap_stops_and_truncated_frames_are_dropped() {
        let mut s = state();
        let mut ev = Vec::new();
        let f = frame(0x81, None, b"complete");
        s.feed(ToServer, &f[..5], 1, &mut ev);
        s.finish(ToServer, &mut ev);
        assert_eq!(s.transactions().count(), 0);
        s.feed(ToClient, &frame(0x81, None, b"one"), 1, &mut ev);
        s.on_gap();
        assert!(!s.wants_data(ToClient));
        s.feed(ToClient, &frame(0x81, None, b"two"), 1, &mut ev);
        assert_eq!(s.transactions().count(), 1);
        assert!(ev.is_empty());
    }

    #[test]
    fn header_forms() {
        assert_eq!(parse_header(b"\x81"), None);
        assert_eq!(parse_header(b"\x81\xfe\x01"), None);
        let h = parse_header(b"\x81\xfe\x01\x00\x01\x02\x03\x04").unwrap();
        assert_eq!((h.len, h.size, h.mask), (256, 8, Some(0x01020304)));
        let h = parse_header(b"\x82\x7f\x00\x00\x00\x01\x00\x00\x00\x00").unwrap();
        assert_eq!((h.len, h.size, h.mask), (1 << 32, 10, None));
    }
}
