//! DNP3 over TCP (Suricata's `app-layer-dnp3.c`).
//!
//! Link layer: frames of a 10-byte header (`05 64`, length, control,
//! destination and source addresses, CRC) and user data in blocks of at
//! most 16 bytes, each followed by its CRC (CRC-16/DNP, the `crc`
//! crate). A header whose CRC is wrong raises `bad_link_crc` and stops
//! the direction, a length below 5 `len_too_small` (a response too short
//! for its headers stops the direction too); a user-data block with a bad
//! CRC raises `bad_transport_crc` and the frame is skipped; frames that
//! are not user data are skipped.
//!
//! Transport layer: the first byte of the user data (FIN, FIR, sequence);
//! the segments of one application message (FIR ... FIN, consecutive
//! sequence numbers, same addresses) are joined without their CRCs and
//! transport headers, at most [`MAX_APP`] bytes (`malformed` past that,
//! and for a segment without user data).
//!
//! Application layer: control (FIR, FIN, CON, UNS, sequence) and function
//! code, then for responses the internal indications (IIN), then object
//! headers: group, variation, qualifier (prefix and range codes), the
//! range (start/stop or count) and the objects' data. The data of the
//! common fixed-size objects (binary, analog, counter, CROB, time, IIN
//! ... `OBJECT_SIZES`) is stepped over; an object Vigil does not know
//! the size of raises `unknown_object` and ends the decoding (the
//! message is then not `complete`), as Suricata does for the objects it
//! does not know. Point values are not decoded.
//!
//! Transactions are one message each, as Suricata 7+'s: a request (not a
//! confirm) or a response; past 500 open transactions the newest raises
//! `flooded`. Events go to the newest transaction.

use serde_json::{json, Map, Value};

use crate::events::Dnp3Event;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{Tx, TxList, TxParser};
use crate::{
    AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId, UintField,
};

/// Suricata's default `detection-ports` (`dp: 20000`).
pub const PORT: u16 = 20000;
/// The link header's length.
pub const LINK_HEADER: usize = 10;
/// The longest application message kept.
pub const MAX_APP: usize = 64 * 1024;
/// Open transactions past which the flow is flooded.
pub const FLOOD: usize = 500;

const CRC: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_DNP);

/// Application function codes as Suricata names them (`dnp3_func`).
pub const FUNC_NAMES: &[(&str, u64)] = &[
    ("confirm", 0),
    ("read", 1),
    ("write", 2),
    ("select", 3),
    ("operate", 4),
    ("direct_operate", 5),
    ("direct_operate_nr", 6),
    ("immed_freeze", 7),
    ("immed_freeze_nr", 8),
    ("freeze_clear", 9),
    ("freeze_clear_nr", 10),
    ("freeze_at_time", 11),
    ("freeze_at_time_nr", 12),
    ("cold_restart", 13),
    ("warm_restart", 14),
    ("initialize_data", 15),
    ("initialize_appl", 16),
    ("start_appl", 17),
    ("stop_appl", 18),
    ("save_config", 19),
    ("enable_unsolicited", 20),
    ("disable_unsolicited", 21),
    ("assign_class", 22),
    ("delay_measure", 23),
    ("record_current_time", 24),
    ("open_file", 25),
    ("close_file", 26),
    ("delete_file", 27),
    ("get_file_info", 28),
    ("authenticate_file", 29),
    ("abort_file", 30),
    ("activate_config", 31),
    ("authenticate_req", 32),
    ("authenticate_err", 33),
    ("response", 129),
    ("unsolicited_response", 130),
    ("authenticate_resp", 131),
];

/// Internal indications (`iin1 << 8 | iin2`) as Suricata names them
/// (`dnp3_ind`, the EVE `iin.indicators`), in Suricata's order.
pub const IND_NAMES: &[(&str, u64)] = &[
    ("all_stations", 0x0100),
    ("class_1_events", 0x0200),
    ("class_2_events", 0x0400),
    ("class_3_events", 0x0800),
    ("need_time", 0x1000),
    ("local_control", 0x2000),
    ("device_trouble", 0x4000),
    ("device_restart", 0x8000),
    ("no_func_code_support", 0x0001),
    ("object_unknown", 0x0002),
    ("parameter_error", 0x0004),
    ("event_buffer_overflow", 0x0008),
    ("already_executing", 0x0010),
    ("config_corrupt", 0x0020),
    ("reserved_2", 0x0040),
    ("reserved_1", 0x0080),
];

/// Bytes per object of the fixed-size objects stepped over, by (group,
/// variation); 0 marks packed single bits.
const OBJECT_SIZES: &[((u8, u8), usize)] = &[
    ((1, 1), 0),
    ((1, 2), 1),
    ((2, 1), 1),
    ((2, 2), 7),
    ((2, 3), 3),
    ((3, 1), 0),
    ((3, 2), 1),
    ((4, 1), 1),
    ((4, 2), 7),
    ((4, 3), 3),
    ((10, 1), 0),
    ((10, 2), 1),
    ((11, 1), 1),
    ((11, 2), 7),
    ((12, 1), 11),
    ((12, 2), 11),
    ((20, 1), 5),
    ((20, 2), 3),
    ((20, 5), 4),
    ((20, 6), 2),
    ((21, 1), 5),
    ((21, 2), 3),
    ((21, 9), 4),
    ((21, 10), 2),
    ((22, 1), 5),
    ((22, 2), 3),
    ((22, 5), 11),
    ((22, 6), 9),
    ((30, 1), 5),
    ((30, 2), 3),
    ((30, 3), 4),
    ((30, 4), 2),
    ((30, 5), 5),
    ((30, 6), 9),
    ((32, 1), 5),
    ((32, 2), 3),
    ((32, 3), 11),
    ((32, 4), 9),
    ((32, 5), 5),
    ((32, 6), 9),
    ((32, 7), 11),
    ((32, 8), 15),
    ((40, 1), 5),
    ((40, 2), 3),
    ((40, 3), 5),
    ((40, 4), 9),
    ((41, 1), 5),
    ((41, 2), 3),
    ((41, 3), 5),
    ((41, 4), 9),
    ((50, 1), 6),
    ((50, 3), 6),
    ((51, 1), 6),
    ((51, 2), 6),
    ((52, 1), 2),
    ((52, 2), 2),
    ((80, 1), 0),
];

/// Whether `b` (a side's first bytes) starts like DNP3 (`None`: too short
/// to tell): a printable banner naming DNP3, or a link header with the
/// start bytes and a length of at least 5.
pub fn probe(b: &[u8]) -> Option<bool> {
    if memchr::memmem::find(b, b"DNP3").is_some()
        && b.iter().take(256).all(|&c| (0x20..0x7f).contains(&c))
    {
        return Some(true);
    }
    if b.len() < LINK_HEADER {
        return None;
    }
    Some(b[0] == 0x05 && b[1] == 0x64 && b[2] >= 5)
}

fn le16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

/// Whether a block (data and its 2-byte CRC) checks.
fn crc_ok(block: &[u8]) -> bool {
    if block.len() < 3 {
        return false;
    }
    let (d, c) = block.split_at(block.len() - 2);
    CRC.checksum(d) == le16(c)
}

/// The frame's length on the wire for a header length byte (0: too
/// small).
fn frame_len(len: u8) -> usize {
    if len < 5 {
        return 0;
    }
    let data = usize::from(len) - 5;
    let mut n = data / 16 * 18;
    if data % 16 != 0 {
        n += data % 16 + 2;
    }
    LINK_HEADER + n
}

/// The user data of a frame (after the header) without its CRCs.
fn strip_crcs(b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(b.len());
    for block in b.chunks(18) {
        if !crc_ok(block) {
            return None;
        }
        out.extend_from_slice(&block[..block.len() - 2]);
    }
    Some(out)
}

/// One object header (and how many objects it counts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub group: u8,
    pub variation: u8,
    pub qualifier: u8,
    pub start: u32,
    pub stop: u32,
    pub count: u32,
}

impl Object {
    fn prefix_code(&self) -> u8 {
        (self.qualifier >> 4) & 0x7
    }
    fn range_code(&self) -> u8 {
        self.qualifier & 0xf
    }
}

/// Reads the object headers of an application message body; returns
/// them and whether every object was decoded (`unknown`: an object of
/// unknown size was met).
fn decode_objects(mut b: &[u8]) -> (Vec<Object>, bool, bool) {
    let mut out = Vec::new();
    while !b.is_empty() {
        if b.len() < 3 {
            return (out, false, false);
        }
        let (group, variation, qualifier) = (b[0], b[1], b[2]);
        b = &b[3..];
        let mut o = Object {
            group,
            variation,
            qualifier,
            start: 0,
            stop: 0,
            count: 0,
        };
        let take = |b: &mut &[u8], n: usize| -> Option<u32> {
            if b.len() < n {
                return None;
            }
            let v = b[..n]
                .iter()
                .rev()
                .fold(0u32, |acc, &x| (acc << 8) | u32::from(x));
            *b = &b[n..];
            Some(v)
        };
        let ok = match o.range_code() {
            0..=5 => {
                let n = match o.range_code() {
                    0 | 3 => 1,
                    1 | 4 => 2,
                    _ => 4,
                };
                match (take(&mut b, n), take(&mut b, n)) {
                    (Some(s), Some(e)) => {
                        o.start = s;
                        o.stop = e;
                        o.count = e.wrapping_sub(s).wrapping_add(1);
                        true
                    }
                    _ => false,
                }
            }
            6 => true,
            7 | 0x0b => take(&mut b, 1).map(|c| o.count = c).is_some(),
            8 => take(&mut b, 2).map(|c| o.count = c).is_some(),
            9 => take(&mut b, 4).map(|c| o.count = c).is_some(),
            _ => return (out, false, false),
        };
        if !ok {
            return (out, false, false);
        }
        let (variation, count, prefix) = (o.variation, o.count as usize, o.prefix_code());
        let group = o.group;
        out.push(o);
        if variation == 0 || count == 0 {
            continue;
        }
        let Some(&(_, size)) = OBJECT_SIZES.iter().find(|(k, _)| *k == (group, variation)) else {
            return (out, false, true);
        };
        let prefix_len = match prefix {
            1 | 4 => 1,
            2 | 5 => 2,
            3 | 6 => 4,
            _ => 0,
        };
        let need = if size == 0 {
            count.div_ceil(8)
        } else {
            count.saturating_mul(size + prefix_len)
        };
        if b.len() < need {
            return (out, false, false);
        }
        b = &b[need..];
    }
    (out, true, false)
}

/// One application message (a transaction).
#[derive(Debug)]
pub struct Dnp3Tx {
    pub(crate) common: TxCommon,
    pub dir: Direction,
    /// Link control, source and destination of the first frame.
    pub link_control: u8,
    pub src: u16,
    pub dst: u16,
    /// The last transport header (sequence of the next segment).
    th: u8,
    /// The application message, without transport headers and CRCs.
    pub data: Vec<u8>,
    pub done: bool,
    pub objects: Vec<Object>,
    pub complete: bool,
}

impl Tx for Dnp3Tx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.done,
            response_complete: self.done,
        }
    }
}

impl Dnp3Tx {
    fn app_control(&self) -> Option<u8> {
        self.data.first().copied()
    }
    fn function(&self) -> Option<u8> {
        self.data.get(1).copied()
    }
    fn iin(&self) -> Option<u16> {
        match self.dir {
            Direction::ToClient if self.data.len() >= 4 => {
                Some(u16::from(self.data[2]) << 8 | u16::from(self.data[3]))
            }
            _ => None,
        }
    }

    /// The record: its type, link control, addresses, application layer
    /// and (responses) indications.
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        let ty = match (self.dir, self.function()) {
            (Direction::ToServer, _) => "request",
            (_, Some(130)) => "unsolicited_response",
            _ => "response",
        };
        m.insert("type".into(), ty.into());
        let lc = self.link_control;
        m.insert(
            "control".into(),
            json!({
                "dir": lc & 0x80 != 0,
                "pri": lc & 0x40 != 0,
                "fcb": lc & 0x20 != 0,
                "fcv": lc & 0x10 != 0,
                "function_code": lc & 0x0f,
            }),
        );
        m.insert("src".into(), self.src.into());
        m.insert("dst".into(), self.dst.into());
        let mut app = Map::new();
        if let Some(ac) = self.app_control() {
            app.insert(
                "control".into(),
                json!({
                    "fir": ac & 0x80 != 0,
                    "fin": ac & 0x40 != 0,
                    "con": ac & 0x20 != 0,
                    "uns": ac & 0x10 != 0,
                    "sequence": ac & 0x0f,
                }),
            );
        }
        if let Some(f) = self.function() {
            app.insert("function_code".into(), f.into());
        }
        if !self.objects.is_empty() {
            let objs: Vec<Value> = self
                .objects
                .iter()
                .map(|o| {
                    json!({
                        "group": o.group,
                        "variation": o.variation,
                        "qualifier": o.qualifier,
                        "prefix_code": o.prefix_code(),
                        "range_code": o.range_code(),
                        "start": o.start,
                        "stop": o.stop,
                        "count": o.count,
                    })
                })
                .collect();
            app.insert("objects".into(), objs.into());
        }
        app.insert("complete".into(), self.complete.into());
        m.insert("application".into(), Value::Object(app));
        if let Some(iin) = self.iin() {
            let ind: Vec<Value> = IND_NAMES
                .iter()
                .filter(|(_, v)| u64::from(iin) & v != 0)
                .map(|(n, _)| Value::from(*n))
                .collect();
            let mut i = Map::new();
            if !ind.is_empty() {
                i.insert("indicators".into(), ind.into());
            }
            m.insert("iin".into(), Value::Object(i));
        }
        Value::Object(m)
    }

    pub fn uints(&self, f: UintField) -> Vec<u64> {
        match f {
            UintField::Dnp3Func => self.function().map(u64::from).into_iter().collect(),
            UintField::Dnp3Ind => self.iin().map(u64::from).into_iter().collect(),
            UintField::Dnp3Obj => self
                .objects
                .iter()
                .map(|o| u64::from(o.group) << 8 | u64::from(o.variation))
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        match id {
            // What is reassembled so far, as Suricata's buffer.
            BufferId::Dnp3Data if !self.data.is_empty() => vec![&self.data[..]],
            _ => Vec::new(),
        }
    }
}

/// Per-flow DNP3 state.
#[derive(Debug)]
pub struct Dnp3State {
    txs: TxList<Dnp3Tx>,
    bufs: [Vec<u8>; 2],
    stopped: [bool; 2],
}

impl Dnp3State {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        Dnp3State {
            txs: TxList::new(cfg.max_transactions.max(FLOOD + 1)),
            bufs: [Vec::new(), Vec::new()],
            stopped: [false, false],
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&Dnp3Tx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &Dnp3Tx> {
        self.txs.txs.iter()
    }

    /// An event on the newest transaction.
    fn event(&self, e: Dnp3Event, ev: &mut Vec<AppLayerEvent>) {
        let id = self.txs.txs.back().map(|t| t.common.id);
        ev.push(AppLayerEvent::Dnp3(e, id));
    }

    /// One user-data frame: `frame` is the whole frame.
    fn user_data(
        &mut self,
        dir: Direction,
        frame: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let Some(ud) = strip_crcs(&frame[LINK_HEADER..]) else {
            self.event(Dnp3Event::BadTransportCrc, ev);
            return;
        };
        let (control, dst, src) = (frame[3], le16(&frame[4..]), le16(&frame[6..]));
        let th = ud[0];
        let (fir, fin, seq) = (th & 0x40 != 0, th & 0x80 != 0, th & 0x3f);
        let body = &ud[1..];
        let idx = if fir {
            // Requests: confirms are not transactions.
            if dir == Direction::ToServer && body.get(1) == Some(&0) {
                return;
            }
            let flooded = self.txs.txs.len() >= FLOOD;
            self.txs.push(|id| Dnp3Tx {
                common: TxCommon::new(id, ts),
                dir,
                link_control: control,
                src,
                dst,
                th,
                data: Vec::new(),
                done: false,
                objects: Vec::new(),
                complete: false,
            });
            if flooded {
                self.event(Dnp3Event::Flooded, ev);
            }
            self.txs.txs.len() - 1
        } else {
            let Some(i) = self.txs.txs.iter().position(|t| {
                t.dir == dir
                    && !t.done
                    && t.src == src
                    && t.dst == dst
                    && (t.th & 0x3f).wrapping_add(1) % 64 == seq
            }) else {
                return;
            };
            i
        };
        let t = &mut self.txs.txs[idx];
        t.th = th;
        if body.is_empty() || t.data.len() + body.len() > MAX_APP {
            t.done = true;
            self.event(Dnp3Event::Malformed, ev);
            return;
        }
        t.data.extend_from_slice(body);
        if !fin {
            return;
        }
        t.done = true;
        let head = if dir == Direction::ToServer { 2 } else { 4 };
        let (objects, complete, unknown) = decode_objects(t.data.get(head..).unwrap_or(&[]));
        t.objects = objects;
        t.complete = complete;
        if unknown {
            self.event(Dnp3Event::UnknownObject, ev);
        }
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let d = dir.index();
        if self.stopped[d] {
            return;
        }
        // A server's banner before its frames is ignored.
        if dir == Direction::ToClient
            && self.bufs[d].is_empty()
            && memchr::memmem::find(data, b"DNP3").is_some()
        {
            return;
        }
        let mut buf = std::mem::take(&mut self.bufs[d]);
        buf.extend_from_slice(data);
        let mut off = 0;
        while buf.len() - off >= LINK_HEADER {
            let h = &buf[off..off + LINK_HEADER];
            if h[0] != 0x05 || h[1] != 0x64 {
                self.stopped[d] = true;
                break;
            }
            if !crc_ok(&h[..10]) {
                self.event(Dnp3Event::BadLinkCrc, ev);
                self.stopped[d] = true;
                break;
            }
            let n = frame_len(h[2]);
            if n == 0 {
                self.event(Dnp3Event::LenTooSmall, ev);
                self.stopped[d] = true;
                break;
            }
            if buf.len() - off < n {
                break;
            }
            let frame = buf[off..off + n].to_vec();
            off += n;
            // Only user data (confirmed or unconfirmed).
            if !matches!(frame[3] & 0x0f, 3 | 4) {
                continue;
            }
            let min = if dir == Direction::ToServer { 8 } else { 10 };
            if usize::from(frame[2]) < min {
                self.event(Dnp3Event::LenTooSmall, ev);
                if dir == Direction::ToClient {
                    self.stopped[d] = true;
                    break;
                }
                continue;
            }
            self.user_data(dir, &frame, ts, ev);
        }
        if self.stopped[d] {
            buf = Vec::new();
        } else {
            buf.drain(..off);
        }
        self.bufs[d] = buf;
    }
}

impl TxParser for Dnp3State {
    fn proto(&self) -> AppProto {
        AppProto::Dnp3
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        Dnp3State::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        self.stopped[dir.index()] = true;
        self.bufs[dir.index()] = Vec::new();
    }
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        self.bufs[dir.index()] = Vec::new();
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
    /// Only whole messages are logged (the peer logs no record for a
    /// message whose last segment never came, even at the flow's end).
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).filter(|t| t.done).map(|t| t.eve())
    }
    /// Suricata's alert object: the record under `request` or
    /// `response`, empty while the message is incomplete.
    fn eve_alert(&self, tx: TxId) -> Option<Value> {
        let t = self.txs.get(tx)?;
        if !t.done {
            return Some(json!({}));
        }
        let key = match t.dir {
            Direction::ToServer => "request",
            Direction::ToClient => "response",
        };
        Some(json!({ key: t.eve() }))
    }
    fn tx_dir(&self, tx: TxId) -> Option<Direction> {
        self.txs.get(tx).map(|t| t.dir)
    }
    fn wants_data(&self, dir: Direction) -> bool {
        !self.stopped[dir.index()]
    }
}

/// Builds frames: a link header and user data in CRC'd blocks (tests,
/// fuzz seeds and the end-to-end capture build theirs the same way).
pub fn frame(control: u8, dst: u16, src: u16, user_data: &[u8]) -> Vec<u8> {
    let mut f = vec![0x05, 0x64, (5 + user_data.len()) as u8, control];
    f.extend_from_slice(&dst.to_le_bytes());
    f.extend_from_slice(&src.to_le_bytes());
    let c = CRC.checksum(&f);
    f.extend_from_slice(&c.to_le_bytes());
    for block in user_data.chunks(16) {
        f.extend_from_slice(block);
        f.extend_from_slice(&CRC.checksum(block).to_le_bytes());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> Dnp3State {
        Dnp3State::new(&AppLayerConfig::default())
    }

    fn feed(s: &mut Dnp3State, dir: Direction, d: &[u8]) -> Vec<String> {
        let mut ev = Vec::new();
        s.feed(dir, d, 1, &mut ev);
        ev.iter().map(|e| e.name().to_string()).collect()
    }

    /// A class 0 read (g60v1, all objects) from master 1 to outstation 10.
    fn read_class0() -> Vec<u8> {
        frame(0xc4, 10, 1, &[0xc0, 0xc0, 0x01, 60, 1, 0x06])
    }

    #[test]
    fn crc_is_dnp() {
        // The link header of a known frame (05 64 05 c0 01 00 00 04: e9 21).
        assert_eq!(
            CRC.checksum(&[0x05, 0x64, 0x05, 0xc0, 0x01, 0x00, 0x00, 0x04]),
            0x21e9
        );
    }

    #[test]
    fn read_request_and_response() {
        let mut s = state();
        assert_eq!(probe(&read_class0()), Some(true));
        assert!(feed(&mut s, Direction::ToServer, &read_class0()).is_empty());
        // Response: IIN device_restart, g30v2 (3 bytes each) 0..=1, then
        // g1v2 (1 byte) 0..=2.
        let resp = frame(
            0x44,
            1,
            10,
            &[
                0xc0, 0xc0, 0x81, 0x80, 0x00, 30, 2, 0x00, 0, 1, 1, 5, 0, 1, 6, 0, 1, 2, 0x00, 0,
                2, 1, 1, 0x81,
            ],
        );
        assert!(feed(&mut s, Direction::ToClient, &resp).is_empty());
        assert_eq!(s.transactions().count(), 2);
        let r = s.tx(0).unwrap().eve();
        assert_eq!(r["type"], "request");
        assert_eq!(r["src"], 1);
        assert_eq!(r["dst"], 10);
        assert_eq!(r["control"]["dir"], true);
        assert_eq!(r["application"]["function_code"], 1);
        assert_eq!(r["application"]["objects"][0]["group"], 60);
        assert_eq!(r["application"]["objects"][0]["range_code"], 6);
        assert_eq!(r["application"]["complete"], true);
        let p = s.tx(1).unwrap().eve();
        assert_eq!(p["type"], "response");
        assert_eq!(p["iin"]["indicators"][0], "device_restart");
        assert_eq!(p["application"]["objects"][1]["group"], 1);
        assert_eq!(p["application"]["objects"][1]["count"], 3);
        assert_eq!(p["application"]["complete"], true);
        let t = s.tx(1).unwrap();
        assert_eq!(t.uints(UintField::Dnp3Func), [129]);
        assert_eq!(t.uints(UintField::Dnp3Ind), [0x8000]);
        assert_eq!(t.uints(UintField::Dnp3Obj), [30 << 8 | 2, 1 << 8 | 2]);
        assert_eq!(t.buffers(BufferId::Dnp3Data)[0][..3], [0xc0, 0x81, 0x80]);
    }

    #[test]
    fn transport_segments_are_joined() {
        let mut s = state();
        // Write (fc 2) of g12v1 CROB split in two transport segments.
        let app = [
            0xc1, 0x02, 12, 1, 0x17, 1, 3, 0x41, 1, 0xe8, 3, 0, 0, 0xd0, 7, 0, 0, 0,
        ];
        let a = frame(0xc4, 10, 1, &[&[0x41][..], &app[..10]].concat());
        let b = frame(0xc4, 10, 1, &[&[0x82][..], &app[10..]].concat());
        let mut both = a.clone();
        both.extend_from_slice(&b);
        // Split inside a frame too; no record before the last segment.
        assert!(feed(&mut s, Direction::ToServer, &a).is_empty());
        assert!(TxParser::eve(&s, 0).is_none());
        let mut s = state();
        assert!(feed(&mut s, Direction::ToServer, &both[..7]).is_empty());
        assert!(feed(&mut s, Direction::ToServer, &both[7..]).is_empty());
        assert_eq!(s.transactions().count(), 1);
        let t = s.tx(0).unwrap();
        assert!(t.done && t.complete);
        assert_eq!(t.data, app);
        assert_eq!(t.eve()["application"]["objects"][0]["count"], 1);
    }

    #[test]
    fn events() {
        let mut s = state();
        feed(&mut s, Direction::ToServer, &read_class0());
        // A bad user-data CRC: the frame is skipped.
        let mut bad = read_class0();
        let n = bad.len();
        bad[n - 1] ^= 0xff;
        assert_eq!(
            feed(&mut s, Direction::ToServer, &bad),
            ["bad_transport_crc"]
        );
        // An unknown object.
        let unk = frame(0xc4, 10, 1, &[0xc1, 0xc1, 0x02, 99, 9, 0x00, 0, 0, 7]);
        assert_eq!(feed(&mut s, Direction::ToServer, &unk), ["unknown_object"]);
        assert_eq!(s.tx(1).unwrap().eve()["application"]["complete"], false);
        // A header length below 5.
        let mut small = frame(0xc4, 10, 1, &[]);
        small[2] = 4;
        let c = CRC.checksum(&small[..8]);
        small[8..10].copy_from_slice(&c.to_le_bytes());
        assert_eq!(feed(&mut s, Direction::ToServer, &small), ["len_too_small"]);
        // A bad link CRC stops the direction.
        let mut s = state();
        let mut bad = read_class0();
        bad[8] ^= 1;
        assert_eq!(feed(&mut s, Direction::ToServer, &bad), ["bad_link_crc"]);
        assert!(!TxParser::wants_data(&s, Direction::ToServer));
    }

    #[test]
    fn confirms_and_banner() {
        let mut s = state();
        assert!(feed(
            &mut s,
            Direction::ToServer,
            &frame(0xc4, 10, 1, &[0xc0, 0xc0, 0x00])
        )
        .is_empty());
        assert_eq!(s.transactions().count(), 0);
        assert_eq!(probe(b"DNP3 outstation ready"), Some(true));
        assert!(feed(&mut s, Direction::ToClient, b"DNP3 banner\r\n").is_empty());
        assert_eq!(probe(b"\x05\x64"), None);
        assert_eq!(probe(b"GET / HTTP/1.1\r\n"), Some(false));
    }
}
