//! Message protocols: one transaction per parsed message, each message a
//! UDP datagram or a record of a TCP stream framed by a 4-byte big-endian
//! length (Kerberos' record marker). Kerberos 5 ([`crate::krb5`]), IKE
//! ([`crate::ike`]) and SNMP ([`crate::snmp`]) plug a whole-message parser
//! (the rusticata crates) into [`MsgState`], which does the framing, the
//! caps, the transaction list and the app-layer events; the engine sees
//! them through the object-safe [`MsgParser`].

use std::collections::VecDeque;
use std::fmt::Debug;

use serde_json::Value;

use crate::state::{TxCommon, TxProgress};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, Transport, TxId,
};

/// Largest TCP record kept (Suricata's Kerberos parser gives up on a
/// record marker above 16 KiB while probing and on 100,000 buffered
/// bytes while parsing).
pub const MAX_RECORD: usize = 64 * 1024;

/// What a message transaction exposes to detection and logging.
pub trait MsgTxData: Debug + Send {
    /// The instances of a sticky buffer (for the message's own direction).
    fn buffers(&self, id: BufferId) -> Vec<&[u8]>;
    /// The values of an integer keyword (`krb5_msg_type`,
    /// `snmp.version`, `ike.chosen_sa_attribute:alg_hash` ...); empty when
    /// the message has none.
    fn ints(&self, key: &str) -> Vec<i64>;
    /// The EVE object of the protocol.
    fn eve(&self) -> Value;
}

/// What parsing one message gives: the transactions it opens and the
/// events it raises (set on the newest transaction, as Suricata does).
#[derive(Debug)]
pub struct Parsed<T, E> {
    pub txs: Vec<T>,
    pub events: Vec<E>,
}

impl<T, E> Default for Parsed<T, E> {
    fn default() -> Self {
        Parsed {
            txs: Vec::new(),
            events: Vec::new(),
        }
    }
}

/// A protocol whose messages are parsed whole.
pub trait MsgProto: Debug + Send + 'static {
    type Tx: MsgTxData;
    type Event: Copy + Debug + Send;
    const PROTO: AppProto;
    /// Whether a TCP stream carries 4-byte record markers (Kerberos);
    /// protocols without a TCP framing are UDP only.
    const TCP_RECORDS: bool;
    fn parse(&mut self, dir: Direction, msg: &[u8]) -> Parsed<Self::Tx, Self::Event>;
    /// Wraps an event for the engine.
    fn event(e: Self::Event, tx: Option<TxId>) -> AppLayerEvent;
    /// The event raised for data that cannot be framed (a record over the
    /// cap, a gap, a truncated record at the end).
    fn malformed() -> Self::Event;
    /// The event raised when transactions pile up past the cap.
    fn too_many() -> Self::Event;
    /// The EVE object of a transaction, which may carry flow state
    /// (IKE logs the exchange so far): the transaction's own by default.
    fn eve(&self, tx: &Self::Tx) -> Value {
        tx.eve()
    }
}

/// One message.
#[derive(Debug)]
pub struct MsgTx<T> {
    pub(crate) common: TxCommon,
    /// The direction the message travelled in.
    pub dir: Direction,
    pub data: T,
}

impl<T: MsgTxData> MsgTx<T> {
    pub fn id(&self) -> TxId {
        self.common.id
    }

    /// A message is complete once parsed.
    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: true,
            response_complete: true,
        }
    }
}

/// TCP framing of one direction.
#[derive(Debug, Default)]
struct Side {
    /// The record marker and the record read so far.
    buf: Vec<u8>,
    /// Bytes of an oversized record still to skip.
    skip: usize,
    /// Lost the framing after a gap: nothing is parsed any more.
    lost: bool,
}

/// Per-flow state of a message protocol.
#[derive(Debug)]
pub struct MsgState<P: MsgProto> {
    proto: P,
    transport: Transport,
    max_txs: usize,
    txs: VecDeque<MsgTx<P::Tx>>,
    next_id: TxId,
    sides: [Side; 2],
}

impl<P: MsgProto> MsgState<P> {
    pub fn new(proto: P, transport: Transport, cfg: &AppLayerConfig) -> Self {
        MsgState {
            proto,
            transport,
            max_txs: cfg.max_transactions.max(1),
            txs: VecDeque::new(),
            next_id: 0,
            sides: [Side::default(), Side::default()],
        }
    }

    pub fn transactions(&self) -> impl Iterator<Item = &MsgTx<P::Tx>> {
        self.txs.iter()
    }

    pub fn tx(&self, id: TxId) -> Option<&MsgTx<P::Tx>> {
        self.txs.iter().find(|t| t.common.id == id)
    }

    fn event(&self, e: P::Event, ev: &mut Vec<AppLayerEvent>) {
        ev.push(P::event(e, self.txs.back().map(|t| t.common.id)));
    }

    /// Parses one whole message.
    fn message(&mut self, dir: Direction, msg: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let parsed = self.proto.parse(dir, msg);
        for data in parsed.txs {
            if self.txs.len() >= self.max_txs {
                self.txs.pop_front();
                self.event(P::too_many(), ev);
            }
            let id = self.next_id;
            self.next_id += 1;
            self.txs.push_back(MsgTx {
                common: TxCommon::new(id, ts),
                dir,
                data,
            });
        }
        for e in parsed.events {
            self.event(e, ev);
        }
    }

    fn feed_tcp(
        &mut self,
        dir: Direction,
        mut data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        while !data.is_empty() {
            let side = &mut self.sides[d];
            if side.lost {
                return;
            }
            if side.skip > 0 {
                let n = side.skip.min(data.len());
                side.skip -= n;
                data = &data[n..];
                continue;
            }
            if side.buf.len() < 4 {
                let n = (4 - side.buf.len()).min(data.len());
                side.buf.extend_from_slice(&data[..n]);
                data = &data[n..];
                if side.buf.len() < 4 {
                    return;
                }
            }
            let len = u32::from_be_bytes([side.buf[0], side.buf[1], side.buf[2], side.buf[3]]);
            // The high bit is reserved (RFC 4120 7.2.2); a record over the
            // cap is skipped.
            let len = (len & 0x7fff_ffff) as usize;
            if len > MAX_RECORD {
                side.buf.clear();
                side.skip = len;
                self.event(P::malformed(), ev);
                continue;
            }
            let have = side.buf.len() - 4;
            let n = (len - have).min(data.len());
            side.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if side.buf.len() - 4 == len {
                let rec = std::mem::take(&mut side.buf);
                self.message(dir, &rec[4..], ts, ev);
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
        match self.transport {
            Transport::Udp => {
                if !data.is_empty() {
                    self.message(dir, data, ts, ev);
                }
            }
            Transport::Tcp if P::TCP_RECORDS => self.feed_tcp(dir, data, ts, ev),
            Transport::Tcp => {}
        }
    }

    /// A hole of `len` bytes in the stream (`None`: unknown). Inside a
    /// record of known extent the record is lost (malformed) and the rest
    /// of it skipped, so the next record marker is found again; a hole
    /// across a record boundary, or of unknown size, loses the framing for
    /// good (a record marker cannot be told from record bytes).
    pub fn on_gap(&mut self, dir: Direction, len: Option<u64>, ev: &mut Vec<AppLayerEvent>) {
        if self.transport != Transport::Tcp || !P::TCP_RECORDS {
            return;
        }
        let side = &mut self.sides[dir.index()];
        if side.lost {
            return;
        }
        let gap = len.and_then(|l| usize::try_from(l).ok());
        // Bytes of the current record still to come.
        let rest = if side.skip > 0 {
            Some(side.skip)
        } else if side.buf.len() >= 4 {
            let rec = u32::from_be_bytes([side.buf[0], side.buf[1], side.buf[2], side.buf[3]]);
            Some(((rec & 0x7fff_ffff) as usize).saturating_sub(side.buf.len() - 4))
        } else {
            None
        };
        let reading = !side.buf.is_empty();
        side.buf.clear();
        match (gap, rest) {
            (Some(g), Some(r)) if g <= r => {
                side.skip = r - g;
                if reading {
                    self.event(P::malformed(), ev);
                }
            }
            _ => {
                side.skip = 0;
                side.lost = true;
                self.event(P::malformed(), ev);
            }
        }
    }

    /// The stream ended: a partial record is malformed.
    pub fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let side = &mut self.sides[dir.index()];
        if !side.buf.is_empty() || side.skip > 0 {
            side.buf.clear();
            side.skip = 0;
            self.event(P::malformed(), ev);
        }
    }

    pub fn wants_data(&self, dir: Direction) -> bool {
        !self.sides[dir.index()].lost
    }
}

/// The engine's view of a [`MsgState`], whatever the protocol. The
/// transaction bookkeeping (`TxCommon`) stays crate-private.
#[allow(private_interfaces)]
pub trait MsgParser: Debug + Send {
    fn proto(&self) -> AppProto;
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>);
    fn on_gap(&mut self, dir: Direction, len: Option<u64>, ev: &mut Vec<AppLayerEvent>);
    fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>);
    fn wants_data(&self, dir: Direction) -> bool;
    fn infos(&self) -> Vec<(&TxCommon, TxProgress)>;
    fn common(&self, tx: TxId) -> Option<&TxCommon>;
    fn common_mut(&mut self, tx: TxId) -> Option<&mut TxCommon>;
    fn tx_dir(&self, tx: TxId) -> Option<Direction>;
    /// Drops the transactions `done` says are; returns how many.
    fn retain_not(&mut self, done: &dyn Fn(&TxCommon, TxProgress) -> bool) -> usize;
    /// A buffer's instances for the direction inspected (a message has
    /// buffers in its own direction only).
    fn buffers(&self, tx: TxId, id: BufferId, dir: Direction) -> Vec<&[u8]>;
    /// An integer keyword's values for the direction inspected.
    fn ints(&self, tx: TxId, key: &str, dir: Direction) -> Vec<i64>;
    fn eve(&self, tx: TxId) -> Option<Value>;
}

#[allow(private_interfaces)]
impl<P: MsgProto> MsgParser for MsgState<P> {
    fn proto(&self) -> AppProto {
        P::PROTO
    }

    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        MsgState::feed(self, dir, data, ts, ev)
    }

    fn on_gap(&mut self, dir: Direction, len: Option<u64>, ev: &mut Vec<AppLayerEvent>) {
        MsgState::on_gap(self, dir, len, ev)
    }

    fn finish(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        MsgState::finish(self, dir, ev)
    }

    fn wants_data(&self, dir: Direction) -> bool {
        MsgState::wants_data(self, dir)
    }

    fn infos(&self) -> Vec<(&TxCommon, TxProgress)> {
        self.txs.iter().map(|t| (&t.common, t.progress())).collect()
    }

    fn common(&self, tx: TxId) -> Option<&TxCommon> {
        self.tx(tx).map(|t| &t.common)
    }

    fn common_mut(&mut self, tx: TxId) -> Option<&mut TxCommon> {
        self.txs
            .iter_mut()
            .find(|t| t.common.id == tx)
            .map(|t| &mut t.common)
    }

    fn tx_dir(&self, tx: TxId) -> Option<Direction> {
        self.tx(tx).map(|t| t.dir)
    }

    fn retain_not(&mut self, done: &dyn Fn(&TxCommon, TxProgress) -> bool) -> usize {
        let before = self.txs.len();
        self.txs.retain(|t| !done(&t.common, t.progress()));
        before - self.txs.len()
    }

    fn buffers(&self, tx: TxId, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        match self.tx(tx) {
            Some(t) if t.dir == dir => t.data.buffers(id),
            _ => Vec::new(),
        }
    }

    fn ints(&self, tx: TxId, key: &str, dir: Direction) -> Vec<i64> {
        match self.tx(tx) {
            Some(t) if t.dir == dir => t.data.ints(key),
            _ => Vec::new(),
        }
    }

    fn eve(&self, tx: TxId) -> Option<Value> {
        self.tx(tx).map(|t| self.proto.eve(&t.data))
    }
}
