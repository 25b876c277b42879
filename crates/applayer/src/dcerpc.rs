//! DCERPC (DCE 1.1 RPC, MS-RPCE), connection-oriented, as carried over
//! TCP: PDUs framed by their fragment length, bind / bind_ack /
//! alter_context / alter_context_resp / bind_nak negotiating the
//! interfaces of each presentation context id, and request / response /
//! fault PDUs forming the transactions, as Suricata's parser builds them.
//!
//! A transaction is a request and its response, matched by call id: a
//! request PDU joins the oldest transaction of its call id whose request
//! is not complete (else opens one), a response or fault the oldest
//! transaction of its call id whose response is not complete. Fragments
//! (`PFC_FIRST_FRAG` / `PFC_LAST_FRAG`) are reassembled: the stub data of
//! every fragment is appended (as Suricata takes it: a request's after its
//! request header, object UUID and authentication verifier included; a response's after
//! the common header, its response header included), up to [`AppLayerConfig::dcerpc_max_stub`]
//! bytes per direction and transaction, and a side is complete with its
//! last fragment. Bind and alter_context PDUs are transactions too (their
//! response is the bind_ack / alter_context_resp / bind_nak of the same
//! call id), which is how Suricata logs them.
//!
//! The interfaces offered in binds are kept per context id with the
//! result of the ack (`ack_result` 0: accepted) and whether the bind PDU
//! had `PFC_FIRST_FRAG`; `dcerpc.iface` matches accepted interfaces of the
//! request's context id.
//!
//! # Entry points
//!
//! [`DcerpcState::feed`] takes a TCP stream in pieces of any size;
//! [`DcerpcState::feed_pdu`] one complete PDU. A parser of a transport that
//! carries DCERPC (SMB named pipes: the data of writes to and reads from
//! a pipe) can feed either, per direction, to one `DcerpcState` per pipe.
//!
//! # Bounds
//!
//! A PDU is at most 65,535 bytes (its fragment length is 16 bits): the
//! parser buffers one PDU per direction. Stub data, interfaces
//! ([`MAX_INTERFACES`]) and transactions (`max_transactions`) are capped;
//! reaching a cap raises an event. A header that is not DCERPC, or a gap,
//! loses the framing of that direction for good (Suricata likewise stops
//! parsing a direction after an error).

use std::collections::VecDeque;

use serde_json::Value;

use crate::events::{AppLayerEvent, DcerpcEvent};
use crate::jsonw::JsonText;
use crate::state::{TxCommon, TxProgress};
use crate::{AppLayerConfig, BufferId, Direction, Timestamp, TxId};

/// Size of the connection-oriented PDU header.
pub const HDR_LEN: usize = 16;
/// Most interface entries kept per flow (bind and alter_context offers).
pub const MAX_INTERFACES: usize = 64;

pub const PFC_FIRST_FRAG: u8 = 0x01;
pub const PFC_LAST_FRAG: u8 = 0x02;
pub const PFC_OBJECT_UUID: u8 = 0x80;

pub const PTYPE_REQUEST: u8 = 0;
pub const PTYPE_RESPONSE: u8 = 2;
pub const PTYPE_FAULT: u8 = 3;
pub const PTYPE_BIND: u8 = 11;
pub const PTYPE_BIND_ACK: u8 = 12;
pub const PTYPE_BIND_NAK: u8 = 13;
pub const PTYPE_ALTER_CONTEXT: u8 = 14;
pub const PTYPE_ALTER_CONTEXT_RESP: u8 = 15;

/// Suricata's names of the PDU types (EVE `request` / `response`).
pub fn ptype_name(t: u8) -> std::borrow::Cow<'static, str> {
    let s = match t {
        0 => "REQUEST",
        1 => "PING",
        2 => "RESPONSE",
        3 => "FAULT",
        4 => "WORKING",
        5 => "NOCALL",
        6 => "REJECT",
        7 => "ACK",
        8 => "CL_CANCEL",
        9 => "FACK",
        10 => "CANCEL_ACK",
        11 => "BIND",
        12 => "BINDACK",
        13 => "BINDNAK",
        14 => "ALTER_CONTEXT",
        15 => "ALTER_CONTEXT_RESP",
        16 => "AUTH3",
        17 => "SHUTDOWN",
        18 => "CO_CANCEL",
        19 => "ORPHANED",
        20 => "RTS",
        t => return t.to_string().into(),
    };
    s.into()
}

/// Service names of a few well-known interfaces (EVE `service`).
fn service_name(uuid: &str) -> Option<&'static str> {
    const KNOWN: &[(&str, &str)] = &[
        ("00000131-0000-0000-c000-000000000046", "IRemUnknown"),
        ("00000143-0000-0000-c000-000000000046", "IRemUnknown2"),
        (
            "000001a0-0000-0000-c000-000000000046",
            "IRemoteSCMActivator",
        ),
        ("00020400-0000-0000-c000-000000000046", "IDispatch"),
        ("00020401-0000-0000-c000-000000000046", "ITypeInfo"),
        (
            "027947e1-d731-11ce-a357-000000000001",
            "IEnumWbemClassObject interface",
        ),
        ("12345678-1234-abcd-ef00-0123456789ab", "spoolss"),
        ("12345678-1234-abcd-ef00-01234567cffb", "netlogon"),
        ("12345778-1234-abcd-ef00-0123456789ab", "lsarpc"),
        ("12345778-1234-abcd-ef00-0123456789ac", "samr"),
        (
            "1c1c45ee-4395-11d2-b60b-00104b703efd",
            "IWbemFetchSmartEnum interface",
        ),
        ("338cd001-2244-31f1-aaaa-900038001003", "winreg"),
        ("367abb81-9844-35f1-ad32-98f038001003", "svcctl"),
        (
            "423ec01e-2e35-11d2-b604-00104b703efd",
            "IWbemWCOSmartEnum interface",
        ),
        (
            "44aca675-e8fc-11d0-a07c-00c04fb68820",
            "IWbemCallResult interface",
        ),
        ("4b324fc8-1670-01d3-1278-5a47bf6ee188", "srvsvc"),
        ("6bffd098-a112-3610-9833-46c3f87e345a", "wkssvc"),
        (
            "86d35949-83c9-4044-b424-db363231fd0c",
            "ITaskSchedulerService",
        ),
        ("9556dc99-828c-11cf-a37e-00aa003240c7", "IWbemServices"),
        ("99fcfec4-5260-101b-bbcb-00aa0021347a", "IObjectExporter"),
        ("a4f1db00-ca47-1067-b31f-00dd010662da", "exchange_mapi"),
        ("d4781cd6-e5d3-44df-ad94-930efe48a887", "IWbemLoginClientID"),
        ("e1af8308-5d1f-11c9-91a4-08002b14a0fa", "epmapper"),
        ("e3514235-4b06-11d1-ab04-00c04fc2dcd2", "drsuapi"),
        ("f309ad18-d86a-11d0-a075-00c04fb68820", "IWbemLevel1Login"),
        ("f5cc5a18-4264-101a-8c59-08002b2f8426", "nspi"),
    ];
    KNOWN.iter().find(|(u, _)| *u == uuid).map(|(_, n)| *n)
}

/// A UUID in its canonical byte order (as written, fields big-endian).
pub type Uuid = [u8; 16];

/// `12345678-1234-abcd-ef00-01234567cffb`.
pub fn uuid_string(u: &Uuid) -> String {
    let h = crate::hex_lower(u);
    let mut s = String::with_capacity(36);
    for (i, part) in [&h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32]]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            s.push('-');
        }
        s.push_str(part);
    }
    s
}

/// Parses `12345678-1234-abcd-ef00-01234567cffb` (hex digits of any case).
pub fn parse_uuid(s: &str) -> Option<Uuid> {
    let parts: Vec<&str> = s.trim().split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if parts.len() != 5 || parts.iter().zip(lens).any(|(p, l)| p.len() != l) {
        return None;
    }
    let hex: String = parts.concat();
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A UUID as it is on the wire: with little-endian data representation
/// its first three fields are byte-swapped.
fn wire_uuid(b: &[u8], le: bool) -> Uuid {
    let mut u = [0u8; 16];
    u.copy_from_slice(&b[..16]);
    if le {
        u[0..4].reverse();
        u[4..6].reverse();
        u[6..8].reverse();
    }
    u
}

/// One interface offered in a bind or alter_context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub ctxid: u16,
    pub uuid: Uuid,
    pub version: u16,
    pub version_minor: u16,
    /// The ack's result for this context (0: acceptance); `None` until
    /// acknowledged.
    pub ack_result: Option<u16>,
    /// The bind PDU had `PFC_FIRST_FRAG`.
    pub first_frag: bool,
}

/// One request and its response.
#[derive(Debug)]
pub struct DcerpcTx {
    pub(crate) common: TxCommon,
    pub call_id: u32,
    /// PDU type of the request side (REQUEST, BIND, ALTER_CONTEXT) and of
    /// the response side (RESPONSE, FAULT, BINDACK ...).
    pub req_cmd: u8,
    pub resp_cmd: u8,
    pub ctxid: u16,
    pub opnum: u16,
    /// The first request fragment (`PFC_FIRST_FRAG`) was seen.
    pub first_request_seen: bool,
    pub frag_cnt: [u16; 2],
    stub: [Vec<u8>; 2],
    pub req_done: bool,
    pub resp_done: bool,
    /// Data representation of the request is little-endian.
    pub little_endian: bool,
    /// Indices in the flow's interfaces of a bind / alter_context.
    bind_ifaces: std::ops::Range<usize>,
}

impl DcerpcTx {
    fn new(id: TxId, ts: Timestamp, call_id: u32, req_cmd: u8) -> Self {
        DcerpcTx {
            common: TxCommon::new(id, ts),
            call_id,
            req_cmd,
            resp_cmd: PTYPE_RESPONSE,
            ctxid: 0,
            opnum: 0,
            first_request_seen: false,
            frag_cnt: [0; 2],
            stub: [Vec::new(), Vec::new()],
            req_done: false,
            resp_done: false,
            little_endian: true,
            bind_ifaces: 0..0,
        }
    }

    pub fn id(&self) -> TxId {
        self.common.id
    }

    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.req_done,
            response_complete: self.resp_done,
        }
    }

    /// The reassembled stub data of one side (requests to the server,
    /// responses to the client).
    pub fn stub_data(&self, dir: Direction) -> &[u8] {
        &self.stub[dir.index()]
    }

    /// `dcerpc.stub_data` of the direction inspected.
    pub fn buffer(&self, id: BufferId, dir: Direction) -> Option<&[u8]> {
        match id {
            BufferId::DcerpcStubData => Some(self.stub_data(dir)),
            _ => None,
        }
    }

    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        self.buffer(id, dir).into_iter().collect()
    }
}

/// Framing of one direction.
#[derive(Debug, Default)]
struct Framing {
    /// The PDU being read (header included), at most its fragment length.
    pdu: Vec<u8>,
    lost: bool,
    /// A PDU completed since the last [`DcerpcState::take_raw_trigger`].
    trigger: bool,
    pdus: u64,
}

/// Per-flow DCERPC state.
#[derive(Debug)]
pub struct DcerpcState {
    max_stub: usize,
    max_tx: usize,
    framing: [Framing; 2],
    interfaces: Vec<Interface>,
    /// Interfaces of the last bind / alter_context not acknowledged yet.
    pending: std::ops::Range<usize>,
    txs: VecDeque<DcerpcTx>,
    next_id: TxId,
    /// `rpc_vers.rpc_vers_minor` of the last PDU.
    rpc_version: Option<(u8, u8)>,
    /// Malformed PDUs seen.
    pub malformed: u64,
}

/// A parsed PDU header.
#[derive(Debug, Clone, Copy)]
struct Header {
    vers: u8,
    vers_minor: u8,
    ptype: u8,
    flags: u8,
    le: bool,
    frag_len: usize,
    auth_len: usize,
    call_id: u32,
}

/// Little- or big-endian reader over a PDU with bounds checks.
struct Rd<'a> {
    b: &'a [u8],
    le: bool,
}

impl Rd<'_> {
    fn u8(&self, at: usize) -> Option<u8> {
        self.b.get(at).copied()
    }
    fn u16(&self, at: usize) -> Option<u16> {
        let s: [u8; 2] = self.b.get(at..at + 2)?.try_into().ok()?;
        Some(if self.le {
            u16::from_le_bytes(s)
        } else {
            u16::from_be_bytes(s)
        })
    }
    fn u32(&self, at: usize) -> Option<u32> {
        let s: [u8; 4] = self.b.get(at..at + 4)?.try_into().ok()?;
        Some(if self.le {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        })
    }
    fn uuid(&self, at: usize) -> Option<Uuid> {
        Some(wire_uuid(self.b.get(at..at + 16)?, self.le))
    }
}

/// The header of a connection-oriented PDU (`None`: not one).
fn parse_header(h: &[u8]) -> Option<Header> {
    if h.len() < HDR_LEN || h[0] != 5 || h[1] > 1 {
        return None;
    }
    let le = h[4] & 0x10 != 0;
    let r = Rd { b: h, le };
    let frag_len = usize::from(r.u16(8)?);
    if frag_len < HDR_LEN {
        return None;
    }
    Some(Header {
        vers: h[0],
        vers_minor: h[1],
        ptype: h[2],
        flags: h[3],
        le,
        frag_len,
        auth_len: usize::from(r.u16(10)?),
        call_id: r.u32(12)?,
    })
}

impl DcerpcState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        DcerpcState {
            max_stub: cfg.dcerpc_max_stub,
            max_tx: cfg.max_transactions.max(1),
            framing: [Framing::default(), Framing::default()],
            interfaces: Vec::new(),
            pending: 0..0,
            txs: VecDeque::new(),
            next_id: 0,
            rpc_version: None,
            malformed: 0,
        }
    }

    /// Stream data of one direction, in pieces of any size.
    pub fn feed(
        &mut self,
        dir: Direction,
        mut data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let di = dir.index();
        while !data.is_empty() && !self.framing[di].lost {
            let f = &mut self.framing[di];
            if f.pdu.len() < HDR_LEN {
                let n = (HDR_LEN - f.pdu.len()).min(data.len());
                f.pdu.extend_from_slice(&data[..n]);
                data = &data[n..];
                if f.pdu.len() < HDR_LEN {
                    break;
                }
                if parse_header(&f.pdu).is_none() {
                    f.lost = true;
                    f.pdu = Vec::new();
                    self.malformed += 1;
                    ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::InvalidHeader, None));
                    break;
                }
            }
            let Some(h) = parse_header(&f.pdu) else { break };
            let n = (h.frag_len - f.pdu.len()).min(data.len());
            f.pdu.extend_from_slice(&data[..n]);
            data = &data[n..];
            if f.pdu.len() == h.frag_len {
                let pdu = std::mem::take(&mut f.pdu);
                f.trigger = true;
                f.pdus += 1;
                self.feed_pdu(dir, &pdu, ts, ev);
            }
        }
    }

    /// One complete PDU of one direction (what a transport that frames
    /// PDUs itself, or carries them in its own messages, hands over).
    /// Bytes past the fragment length are ignored.
    pub fn feed_pdu(
        &mut self,
        dir: Direction,
        pdu: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let Some(h) = parse_header(pdu) else {
            self.malformed += 1;
            ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::InvalidHeader, None));
            return;
        };
        let Some(pdu) = pdu.get(..h.frag_len) else {
            self.malformed += 1;
            ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::MalformedPdu, None));
            return;
        };
        self.rpc_version = Some((h.vers, h.vers_minor));
        let r = Rd { b: pdu, le: h.le };
        let ok = match (h.ptype, dir) {
            (PTYPE_BIND | PTYPE_ALTER_CONTEXT, Direction::ToServer) => self.bind(&h, &r, ts, ev),
            (PTYPE_BIND_ACK | PTYPE_ALTER_CONTEXT_RESP, Direction::ToClient) => {
                self.bind_ack(&h, &r, ev)
            }
            (PTYPE_BIND_NAK, Direction::ToClient) => {
                for i in self.pending.clone() {
                    if let Some(e) = self.interfaces.get_mut(i) {
                        e.ack_result = Some(2);
                    }
                }
                self.pending = 0..0;
                self.close_response(&h, ev);
                true
            }
            (PTYPE_REQUEST, Direction::ToServer) => self.request(&h, &r, ts, ev),
            (PTYPE_RESPONSE, Direction::ToClient) => self.response(&h, &r, ts, ev),
            (PTYPE_FAULT, Direction::ToClient) => {
                self.close_response(&h, ev);
                true
            }
            // A request-side PDU in responses or the reverse.
            (
                PTYPE_BIND
                | PTYPE_ALTER_CONTEXT
                | PTYPE_REQUEST
                | PTYPE_BIND_ACK
                | PTYPE_ALTER_CONTEXT_RESP
                | PTYPE_BIND_NAK
                | PTYPE_RESPONSE
                | PTYPE_FAULT,
                _,
            ) => {
                ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::UnexpectedPdu, None));
                true
            }
            // AUTH3, shutdown, cancel, orphaned, RTS: no transaction.
            _ => true,
        };
        if !ok {
            self.malformed += 1;
            ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::MalformedPdu, None));
        }
    }

    /// The end of the body (before the authentication verifier).
    fn body_end(h: &Header) -> usize {
        let auth = if h.auth_len > 0 { h.auth_len + 8 } else { 0 };
        h.frag_len.saturating_sub(auth)
    }

    fn new_tx(&mut self, call_id: u32, cmd: u8, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        if self.txs.len() >= self.max_tx {
            self.txs.pop_front();
            ev.push(AppLayerEvent::Dcerpc(
                DcerpcEvent::TooManyTransactions,
                None,
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.txs.push_back(DcerpcTx::new(id, ts, call_id, cmd));
    }

    /// The oldest transaction of `call_id` whose `dir` side is open.
    fn open_tx(&mut self, call_id: u32, dir: Direction) -> Option<usize> {
        self.txs.iter().position(|t| {
            t.call_id == call_id
                && match dir {
                    Direction::ToServer => !t.req_done,
                    Direction::ToClient => !t.resp_done,
                }
        })
    }

    fn bind(&mut self, h: &Header, r: &Rd<'_>, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) -> bool {
        let end = Self::body_end(h);
        // max_xmit_frag, max_recv_frag, assoc_group_id, n_context_elem.
        let Some(n) = r.u8(HDR_LEN + 8) else {
            return false;
        };
        let start = self.interfaces.len();
        let mut at = HDR_LEN + 12;
        let mut ok = true;
        for _ in 0..n {
            let (Some(ctxid), Some(n_ts), Some(uuid), Some(ver), Some(minor)) = (
                r.u16(at),
                r.u8(at + 2),
                r.uuid(at + 4),
                r.u16(at + 20),
                r.u16(at + 22),
            ) else {
                ok = false;
                break;
            };
            at += 24 + 20 * usize::from(n_ts);
            if at > end {
                ok = false;
                break;
            }
            if self.interfaces.len() >= MAX_INTERFACES {
                ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::TooManyInterfaces, None));
                break;
            }
            self.interfaces.push(Interface {
                ctxid,
                uuid,
                version: ver,
                version_minor: minor,
                ack_result: None,
                first_frag: h.flags & PFC_FIRST_FRAG != 0,
            });
        }
        self.pending = start..self.interfaces.len();
        self.new_tx(h.call_id, h.ptype, ts, ev);
        if let Some(t) = self.txs.back_mut() {
            t.req_done = true;
            t.little_endian = h.le;
            t.frag_cnt[0] = 1;
            t.bind_ifaces = start..self.interfaces.len();
        }
        ok
    }

    fn bind_ack(&mut self, h: &Header, r: &Rd<'_>, ev: &mut Vec<AppLayerEvent>) -> bool {
        let end = Self::body_end(h);
        let Some(sec_len) = r.u16(HDR_LEN + 8) else {
            return false;
        };
        // Secondary address, then padding to a 4-byte boundary.
        let mut at = HDR_LEN + 10 + usize::from(sec_len);
        at = (at + 3) & !3;
        let Some(n) = r.u8(at) else {
            self.close_response(h, ev);
            return false;
        };
        at += 4;
        let mut ok = true;
        let pending = self.pending.clone();
        for i in 0..usize::from(n) {
            let Some(result) = r.u16(at) else {
                ok = false;
                break;
            };
            if at + 24 > end {
                ok = false;
                break;
            }
            at += 24;
            if let Some(e) = pending
                .clone()
                .nth(i)
                .and_then(|j| self.interfaces.get_mut(j))
            {
                e.ack_result = Some(result);
            }
        }
        self.pending = 0..0;
        self.close_response(h, ev);
        ok
    }

    /// A response-side PDU that completes its transaction (acks, naks,
    /// faults).
    fn close_response(&mut self, h: &Header, ev: &mut Vec<AppLayerEvent>) {
        match self.open_tx(h.call_id, Direction::ToClient) {
            Some(i) => {
                let t = &mut self.txs[i];
                t.resp_cmd = h.ptype;
                t.resp_done = true;
                t.frag_cnt[1] = t.frag_cnt[1].saturating_add(1);
            }
            None => ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::UnmatchedResponse, None)),
        }
    }

    fn append_stub(&mut self, i: usize, dir: Direction, stub: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let max = self.max_stub;
        let t = &mut self.txs[i];
        let s = &mut t.stub[dir.index()];
        let room = max.saturating_sub(s.len());
        if stub.len() > room {
            ev.push(AppLayerEvent::Dcerpc(
                DcerpcEvent::StubLimitReached,
                Some(t.common.id),
            ));
        }
        s.extend_from_slice(&stub[..stub.len().min(room)]);
    }

    fn request(
        &mut self,
        h: &Header,
        r: &Rd<'_>,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> bool {
        // alloc_hint, p_cont_id, opnum, [object uuid].
        let (Some(ctxid), Some(opnum)) = (r.u16(HDR_LEN + 4), r.u16(HDR_LEN + 6)) else {
            return false;
        };
        // As Suricata: the stub is the rest of the PDU, an object UUID
        // (`PFC_OBJECT_UUID`) and the authentication verifier included.
        let start = HDR_LEN + 8;
        let end = h.frag_len;
        let first = h.flags & PFC_FIRST_FRAG != 0;
        let i = match self.open_tx(h.call_id, Direction::ToServer) {
            // A first fragment while a request of this call id is open
            // starts it over, as Suricata resets the stub buffer.
            Some(i) => i,
            None => {
                self.new_tx(h.call_id, PTYPE_REQUEST, ts, ev);
                self.txs.len() - 1
            }
        };
        {
            let t = &mut self.txs[i];
            if first {
                if t.first_request_seen {
                    t.stub[0].clear();
                }
                t.first_request_seen = true;
                t.ctxid = ctxid;
                t.opnum = opnum;
                t.little_endian = h.le;
            } else if t.frag_cnt[0] == 0 {
                // Middle of a request whose start was not seen.
                t.ctxid = ctxid;
                t.opnum = opnum;
                t.little_endian = h.le;
            }
            t.frag_cnt[0] = t.frag_cnt[0].saturating_add(1);
            if h.flags & PFC_LAST_FRAG != 0 {
                t.req_done = true;
            }
        }
        self.take_stub(i, Direction::ToServer, r, start..end, ev);
        true
    }

    fn response(
        &mut self,
        h: &Header,
        r: &Rd<'_>,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> bool {
        // alloc_hint, p_cont_id, cancel_count, reserved.
        if r.u32(HDR_LEN).is_none() || r.u16(HDR_LEN + 4).is_none() {
            return false;
        }
        // As Suricata: a response's stub is everything after the common
        // header (the response header and any verifier included).
        let start = HDR_LEN;
        let end = h.frag_len;
        let i = match self.open_tx(h.call_id, Direction::ToClient) {
            Some(i) => i,
            None => {
                // A response whose request was not seen: Suricata opens a
                // transaction for it.
                self.new_tx(h.call_id, PTYPE_REQUEST, ts, ev);
                self.txs.len() - 1
            }
        };
        {
            let t = &mut self.txs[i];
            if h.flags & PFC_FIRST_FRAG != 0 && t.frag_cnt[1] > 0 {
                t.stub[1].clear();
            }
            t.resp_cmd = PTYPE_RESPONSE;
            t.frag_cnt[1] = t.frag_cnt[1].saturating_add(1);
            if h.flags & PFC_LAST_FRAG != 0 {
                t.resp_done = true;
            }
        }
        self.take_stub(i, Direction::ToClient, r, start..end, ev);
        true
    }

    /// Appends the PDU's stub bytes `at` to transaction `i`'s stub of
    /// `dir`; a PDU too short for them is malformed (counted, with the
    /// event).
    fn take_stub(
        &mut self,
        i: usize,
        dir: Direction,
        r: &Rd<'_>,
        at: std::ops::Range<usize>,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let id = self.txs[i].common.id;
        let Some(stub) = r.b.get(at.start..at.end.max(at.start)) else {
            ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::MalformedPdu, Some(id)));
            self.malformed += 1;
            return;
        };
        self.append_stub(i, dir, stub, ev);
    }

    /// Whether a PDU of `dir` completed since the last call (the raw
    /// stream of that direction is then due for inspection, as Suricata's
    /// DCERPC parser asks).
    pub fn take_raw_trigger(&mut self, dir: Direction) -> bool {
        std::mem::take(&mut self.framing[dir.index()].trigger)
    }

    /// Whether the framing of `dir` still follows the stream.
    pub fn wants_data(&self, dir: Direction) -> bool {
        !self.framing[dir.index()].lost
    }

    /// PDUs framed so far in `dir`.
    pub fn pdus(&self, dir: Direction) -> u64 {
        self.framing[dir.index()].pdus
    }

    /// A gap: the PDU in progress is lost and so is the framing of that
    /// direction (PDU boundaries cannot be found again reliably). Open
    /// sides of transactions in that direction are closed.
    pub fn on_gap(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let f = &mut self.framing[dir.index()];
        f.lost = true;
        f.pdu = Vec::new();
        ev.push(AppLayerEvent::Dcerpc(DcerpcEvent::StreamGap, None));
        self.close_side(dir);
    }

    /// The stream of `dir` ended: sides still open are complete.
    pub fn finish(&mut self, dir: Direction) {
        self.close_side(dir);
    }

    fn close_side(&mut self, dir: Direction) {
        for t in &mut self.txs {
            match dir {
                Direction::ToServer => t.req_done = true,
                Direction::ToClient => t.resp_done = true,
            }
        }
    }

    pub fn transactions(&self) -> impl Iterator<Item = &DcerpcTx> {
        self.txs.iter()
    }

    pub fn tx(&self, id: TxId) -> Option<&DcerpcTx> {
        self.txs.iter().find(|t| t.common.id == id)
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut DcerpcTx> {
        self.txs.iter_mut().find(|t| t.common.id == id)
    }

    pub(crate) fn retain(&mut self, f: impl FnMut(&DcerpcTx) -> bool) {
        self.txs.retain(f);
    }

    /// Every interface offered so far, with its ack result.
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// `dcerpc.iface`: an accepted interface of the transaction's context
    /// id has this UUID (and a major version `version` admits). Without
    /// `any_frag`, only interfaces bound by a bind PDU that had
    /// `PFC_FIRST_FRAG` count, as in Suricata.
    pub fn iface_matches(
        &self,
        tx: TxId,
        uuid: &Uuid,
        version: impl Fn(u16) -> bool,
        any_frag: bool,
    ) -> bool {
        let Some(t) = self.tx(tx) else { return false };
        if !t.first_request_seen || !(t.req_cmd == PTYPE_REQUEST || t.resp_cmd == PTYPE_RESPONSE) {
            return false;
        }
        self.interfaces.iter().any(|e| {
            (any_frag || e.first_frag)
                && e.ack_result == Some(0)
                && e.uuid == *uuid
                && e.ctxid == t.ctxid
                && version(e.version)
        })
    }

    /// The request's opnum, once its first fragment is seen.
    pub fn opnum(&self, tx: TxId) -> Option<u16> {
        self.tx(tx)
            .filter(|t| t.first_request_seen)
            .map(|t| t.opnum)
    }

    fn iface_eve(e: &Interface, w: &mut JsonText) {
        let uuid = uuid_string(&e.uuid);
        w.obj(|w| {
            if let Some(r) = e.ack_result {
                w.field_u64("ack_result", r);
            }
            if let Some(s) = service_name(&uuid) {
                w.field_str("service", s);
            }
            w.field_str("uuid", &uuid);
            let mut num = itoa::Buffer::new();
            let mut version = String::from(num.format(e.version));
            version.push('.');
            version.push_str(num.format(e.version_minor));
            w.field_str("version", &version);
        });
    }

    /// Suricata's `dcerpc` object for a transaction: `request` and `req`
    /// (opnum, fragments, stub size) or the bind's `interfaces`,
    /// `response` and `res`, `call_id`, `rpc_version`.
    pub fn eve(&self, tx: TxId) -> Option<Value> {
        self.tx(tx)?;
        Some(crate::jsonw::tree(&crate::jsonw::object(|w| {
            self.eve_write(tx, false, w)
        })))
    }

    /// The members of the `dcerpc` object of `tx`, written to `w`; with
    /// `smb`, Suricata's SMB form of it: the opnum beside `request`, no
    /// `rpc_version` (its EVE schema). Nothing for a transaction not held.
    pub fn eve_write(&self, tx: TxId, smb: bool, w: &mut JsonText) {
        let Some(t) = self.tx(tx) else {
            return;
        };
        // Members in key order.
        w.field_u64("call_id", t.call_id);
        let request = t.req_done && t.frag_cnt[0] > 0;
        if request && t.req_cmd == PTYPE_REQUEST {
            // The interface the request's context is bound to.
            if let Some(e) = self
                .interfaces
                .iter()
                .rev()
                .find(|e| e.ctxid == t.ctxid && e.ack_result == Some(0))
            {
                w.field_arr("interfaces", |w| Self::iface_eve(e, w));
            }
            if smb {
                w.field_u64("opnum", t.opnum);
            }
            w.field_obj("req", |w| {
                w.field_u64("frag_cnt", t.frag_cnt[0]);
                if !smb {
                    w.field_u64("opnum", t.opnum);
                }
                w.field_u64("stub_data_size", t.stub[0].len() as u64);
            });
        } else if request && t.req_cmd == PTYPE_BIND {
            // Suricata lists the interfaces of binds only.
            let list = self.interfaces.get(t.bind_ifaces.clone()).unwrap_or(&[]);
            if !list.is_empty() {
                w.field_arr("interfaces", |w| {
                    for e in list {
                        Self::iface_eve(e, w);
                    }
                });
            }
        }
        if request {
            w.field_str("request", &ptype_name(t.req_cmd));
        } else {
            w.field_str("request", "REQUEST_LOST");
        }
        if t.resp_done && t.frag_cnt[1] > 0 {
            if t.resp_cmd == PTYPE_RESPONSE {
                w.field_obj("res", |w| {
                    w.field_u64("frag_cnt", t.frag_cnt[1]);
                    w.field_u64("stub_data_size", t.stub[1].len() as u64);
                });
            }
            w.field_str("response", &ptype_name(t.resp_cmd));
        } else {
            w.field_str("response", "UNREPLIED");
        }
        if let (Some((a, b)), false) = (self.rpc_version, smb) {
            w.field_str("rpc_version", &format!("{a}.{b}"));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const NETLOGON: &str = "12345678-1234-abcd-ef00-01234567cffb";
    const EPM: &str = "e1af8308-5d1f-11c9-91a4-08002b14a0fa";

    /// A PDU with header fields and `body` (little-endian unless `be`).
    pub(crate) fn pdu(ptype: u8, flags: u8, call_id: u32, body: &[u8], be: bool) -> Vec<u8> {
        let len = (HDR_LEN + body.len()) as u16;
        let mut v = vec![5, 0, ptype, flags, if be { 0 } else { 0x10 }, 0, 0, 0];
        if be {
            v.extend_from_slice(&len.to_be_bytes());
            v.extend_from_slice(&[0, 0]);
            v.extend_from_slice(&call_id.to_be_bytes());
        } else {
            v.extend_from_slice(&len.to_le_bytes());
            v.extend_from_slice(&[0, 0]);
            v.extend_from_slice(&call_id.to_le_bytes());
        }
        v.extend_from_slice(body);
        v
    }

    pub(crate) fn wire(uuid: &str, be: bool) -> Vec<u8> {
        let mut u = parse_uuid(uuid).unwrap();
        if !be {
            u[0..4].reverse();
            u[4..6].reverse();
            u[6..8].reverse();
        }
        u.to_vec()
    }

    /// A bind (or alter_context) offering (ctxid, uuid, major version).
    pub(crate) fn bind(ptype: u8, flags: u8, call_id: u32, ctxs: &[(u16, &str, u16)]) -> Vec<u8> {
        let mut b = vec![
            0xb8,
            0x10,
            0xb8,
            0x10,
            0,
            0,
            0,
            0,
            ctxs.len() as u8,
            0,
            0,
            0,
        ];
        for (ctx, uuid, ver) in ctxs {
            b.extend_from_slice(&ctx.to_le_bytes());
            b.extend_from_slice(&[1, 0]);
            b.extend(wire(uuid, false));
            b.extend_from_slice(&ver.to_le_bytes());
            b.extend_from_slice(&0u16.to_le_bytes());
            b.extend_from_slice(&[0x04; 20]);
        }
        pdu(ptype, flags, call_id, &b, false)
    }

    pub(crate) fn bind_ack(call_id: u32, results: &[u16]) -> Vec<u8> {
        // Secondary address "135\0" (4 bytes): 10 + 4 = 14, padded to 16.
        let mut b = vec![0xb8, 0x10, 0xb8, 0x10, 1, 0, 0, 0, 4, 0];
        b.extend_from_slice(b"135\0");
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&[results.len() as u8, 0, 0, 0]);
        for r in results {
            b.extend_from_slice(&r.to_le_bytes());
            b.extend_from_slice(&[0, 0]);
            b.extend_from_slice(&[0x04; 20]);
        }
        pdu(PTYPE_BIND_ACK, 3, call_id, &b, false)
    }

    pub(crate) fn request(flags: u8, call_id: u32, ctx: u16, opnum: u16, stub: &[u8]) -> Vec<u8> {
        let mut b = (stub.len() as u32).to_le_bytes().to_vec();
        b.extend_from_slice(&ctx.to_le_bytes());
        b.extend_from_slice(&opnum.to_le_bytes());
        b.extend_from_slice(stub);
        pdu(PTYPE_REQUEST, flags, call_id, &b, false)
    }

    pub(crate) fn response(flags: u8, call_id: u32, stub: &[u8]) -> Vec<u8> {
        let mut b = (stub.len() as u32).to_le_bytes().to_vec();
        b.extend_from_slice(&[0, 0, 0, 0]);
        b.extend_from_slice(stub);
        pdu(PTYPE_RESPONSE, flags, call_id, &b, false)
    }

    fn state() -> DcerpcState {
        DcerpcState::new(&AppLayerConfig::default())
    }

    fn feed(s: &mut DcerpcState, dir: Direction, data: &[u8]) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        s.feed(dir, data, 7, &mut ev);
        ev
    }

    fn any_version(_: u16) -> bool {
        true
    }

    /// Bind, ack, request and response of one call, whole or a byte at a
    /// time: the same transactions.
    #[test]
    fn bind_request_response() {
        for bytewise in [false, true] {
            let mut s = state();
            let mut ts = bind(PTYPE_BIND, 3, 1, &[(0, NETLOGON, 1)]);
            ts.extend(request(3, 2, 0, 26, b"\x01\x02\x03\x04"));
            let mut tc = bind_ack(1, &[0]);
            tc.extend(response(3, 2, b"\xaa\xbb"));
            let mut ev = Vec::new();
            for (dir, data) in [(Direction::ToServer, &ts), (Direction::ToClient, &tc)] {
                if bytewise {
                    for b in data.iter() {
                        ev.extend(feed(&mut s, dir, std::slice::from_ref(b)));
                    }
                } else {
                    ev.extend(feed(&mut s, dir, data));
                }
            }
            assert!(ev.is_empty(), "{ev:?}");
            assert_eq!(s.pdus(Direction::ToServer), 2);
            assert!(s.take_raw_trigger(Direction::ToServer));
            assert!(!s.take_raw_trigger(Direction::ToServer));
            let txs: Vec<&DcerpcTx> = s.transactions().collect();
            assert_eq!(txs.len(), 2);
            assert_eq!(
                (txs[0].req_cmd, txs[0].resp_cmd),
                (PTYPE_BIND, PTYPE_BIND_ACK)
            );
            let t = txs[1];
            assert_eq!((t.call_id, t.opnum, t.ctxid), (2, 26, 0));
            assert!(t.req_done && t.resp_done);
            assert_eq!(t.stub_data(Direction::ToServer), b"\x01\x02\x03\x04");
            // A response's stub starts with its response header, as
            // Suricata keeps it.
            assert_eq!(
                t.buffer(BufferId::DcerpcStubData, Direction::ToClient),
                Some(&b"\x02\0\0\0\0\0\0\0\xaa\xbb"[..])
            );
            assert_eq!(t.buffer(BufferId::HttpUri, Direction::ToClient), None);
            let uuid = parse_uuid(NETLOGON).unwrap();
            assert!(s.iface_matches(1, &uuid, any_version, false));
            assert!(s.iface_matches(1, &uuid, |v| v == 1, false));
            assert!(!s.iface_matches(1, &uuid, |v| v > 1, false));
            assert!(!s.iface_matches(1, &parse_uuid(EPM).unwrap(), any_version, true));
            // The bind transaction has no request of its own.
            assert!(!s.iface_matches(0, &uuid, any_version, true));
            assert_eq!(s.opnum(1), Some(26));
            assert_eq!(s.opnum(0), None);
            let e = s.eve(1).unwrap();
            assert_eq!(e["request"], "REQUEST");
            assert_eq!(e["response"], "RESPONSE");
            assert_eq!(e["req"]["opnum"], 26);
            assert_eq!(e["req"]["stub_data_size"], 4);
            assert_eq!(e["res"]["stub_data_size"], 10);
            assert_eq!(e["call_id"], 2);
            assert_eq!(e["rpc_version"], "5.0");
            assert_eq!(e["interfaces"][0]["uuid"], NETLOGON);
            assert_eq!(e["interfaces"][0]["service"], "netlogon");
            let b = s.eve(0).unwrap();
            assert_eq!(b["request"], "BIND");
            assert_eq!(b["response"], "BINDACK");
            assert_eq!(b["interfaces"][0]["version"], "1.0");
            assert_eq!(b["interfaces"][0]["ack_result"], 0);
        }
    }

    /// Three request fragments and two response fragments make one
    /// transaction with the stub data joined.
    #[test]
    fn fragments_are_reassembled() {
        let mut s = state();
        feed(
            &mut s,
            Direction::ToServer,
            &bind(PTYPE_BIND, 3, 1, &[(1, EPM, 3)]),
        );
        feed(&mut s, Direction::ToClient, &bind_ack(1, &[0]));
        feed(
            &mut s,
            Direction::ToServer,
            &request(PFC_FIRST_FRAG, 5, 1, 42, b"abc"),
        );
        let t = s.tx(1).unwrap();
        assert!(!t.req_done);
        assert_eq!(s.opnum(1), Some(42));
        feed(&mut s, Direction::ToServer, &request(0, 5, 1, 42, b"def"));
        feed(
            &mut s,
            Direction::ToServer,
            &request(PFC_LAST_FRAG, 5, 1, 42, b"gh"),
        );
        feed(
            &mut s,
            Direction::ToClient,
            &response(PFC_FIRST_FRAG, 5, b"12"),
        );
        assert!(!s.tx(1).unwrap().resp_done);
        feed(
            &mut s,
            Direction::ToClient,
            &response(PFC_LAST_FRAG, 5, b"34"),
        );
        let t = s.tx(1).unwrap();
        assert_eq!(s.transactions().count(), 2);
        assert!(t.req_done && t.resp_done);
        assert_eq!(t.stub_data(Direction::ToServer), b"abcdefgh");
        assert_eq!(
            t.stub_data(Direction::ToClient),
            b"\x02\0\0\0\0\0\0\x0012\x02\0\0\0\0\0\0\x0034"
        );
        assert_eq!(t.frag_cnt, [3, 2]);
        assert_eq!(s.eve(1).unwrap()["req"]["frag_cnt"], 3);
        // A new request of the same call id is a new transaction.
        feed(&mut s, Direction::ToServer, &request(3, 5, 1, 7, b""));
        assert_eq!(s.opnum(2), Some(7));
    }

    /// A request whose first fragment was not seen has no opnum for
    /// detection (Suricata's first_request_seen).
    #[test]
    fn middle_fragment_only() {
        let mut s = state();
        feed(
            &mut s,
            Direction::ToServer,
            &request(PFC_LAST_FRAG, 9, 0, 3, b"x"),
        );
        assert_eq!(s.opnum(0), None);
        assert!(s.tx(0).unwrap().req_done);
    }

    /// Interfaces bound by a bind without PFC_FIRST_FRAG only match with
    /// `any_frag`; rejected contexts never match; the request's context id
    /// must be the interface's.
    #[test]
    fn iface_rules() {
        let uuid = parse_uuid(EPM).unwrap();
        let mut s = state();
        feed(
            &mut s,
            Direction::ToServer,
            &bind(PTYPE_BIND, 0, 1, &[(0, EPM, 3)]),
        );
        feed(&mut s, Direction::ToClient, &bind_ack(1, &[0]));
        feed(&mut s, Direction::ToServer, &request(3, 1, 0, 42, b""));
        assert!(!s.iface_matches(1, &uuid, any_version, false));
        assert!(s.iface_matches(1, &uuid, any_version, true));

        let mut s = state();
        let offer = [(0, EPM, 3), (1, NETLOGON, 1)];
        feed(&mut s, Direction::ToServer, &bind(PTYPE_BIND, 3, 1, &offer));
        feed(&mut s, Direction::ToClient, &bind_ack(1, &[2, 0]));
        feed(&mut s, Direction::ToServer, &request(3, 2, 0, 1, b""));
        feed(&mut s, Direction::ToServer, &request(3, 3, 1, 1, b""));
        assert_eq!(s.interfaces()[0].ack_result, Some(2));
        assert!(!s.iface_matches(1, &uuid, any_version, true));
        let nl = parse_uuid(NETLOGON).unwrap();
        assert!(!s.iface_matches(1, &nl, any_version, false));
        assert!(s.iface_matches(2, &nl, any_version, false));
        // An alter_context adds a context; a nak rejects what it offered.
        feed(
            &mut s,
            Direction::ToServer,
            &bind(PTYPE_ALTER_CONTEXT, 3, 4, &[(2, EPM, 3)]),
        );
        feed(
            &mut s,
            Direction::ToClient,
            &pdu(PTYPE_BIND_NAK, 3, 4, &[0, 0], false),
        );
        assert_eq!(s.interfaces()[2].ack_result, Some(2));
        assert_eq!(s.tx(3).unwrap().resp_cmd, PTYPE_BIND_NAK);
    }

    /// Big-endian data representation: fields and UUIDs read as such.
    #[test]
    fn big_endian() {
        let mut s = state();
        let mut b = vec![0x10, 0xb8, 0x10, 0xb8, 0, 0, 0, 0, 1, 0, 0, 0];
        b.extend_from_slice(&[0, 7, 1, 0]);
        b.extend(wire(NETLOGON, true));
        b.extend_from_slice(&[0, 1, 0, 0]);
        b.extend_from_slice(&[0; 20]);
        feed(
            &mut s,
            Direction::ToServer,
            &pdu(PTYPE_BIND, 3, 1, &b, true),
        );
        assert_eq!(s.interfaces()[0].uuid, parse_uuid(NETLOGON).unwrap());
        assert_eq!((s.interfaces()[0].ctxid, s.interfaces()[0].version), (7, 1));
        let req = [0, 0, 0, 0, 0, 7, 0, 30, 0xee];
        feed(
            &mut s,
            Direction::ToServer,
            &pdu(PTYPE_REQUEST, 3, 2, &req, true),
        );
        assert_eq!(s.opnum(1), Some(30));
        assert_eq!(s.tx(1).unwrap().ctxid, 7);
        assert!(!s.tx(1).unwrap().little_endian);
    }

    /// Stub data past the cap is dropped with an event.
    #[test]
    fn stub_cap() {
        let cfg = AppLayerConfig {
            dcerpc_max_stub: 5,
            ..AppLayerConfig::default()
        };
        let mut s = DcerpcState::new(&cfg);
        let ev = feed(&mut s, Direction::ToServer, &request(1, 1, 0, 1, b"abcd"));
        assert!(ev.is_empty());
        let ev = feed(&mut s, Direction::ToServer, &request(2, 1, 0, 1, b"efgh"));
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dcerpc(
                DcerpcEvent::StubLimitReached,
                Some(0)
            )]
        );
        assert_eq!(s.tx(0).unwrap().stub_data(Direction::ToServer), b"abcde");
    }

    /// The object UUID and the authentication verifier stay in the stub
    /// data, as Suricata keeps them.
    #[test]
    fn auth_and_object_uuid() {
        let mut s = state();
        let mut body = vec![0, 0, 0, 0, 0, 0, 5, 0];
        body.extend_from_slice(&[0x11; 16]);
        body.extend_from_slice(b"STUB");
        body.extend_from_slice(&[0x0a, 2, 0, 0, 0, 0, 0, 0]);
        body.extend_from_slice(&[0xcc; 4]);
        let mut p = pdu(PTYPE_REQUEST, 3 | PFC_OBJECT_UUID, 1, &body, false);
        p[10] = 4;
        feed(&mut s, Direction::ToServer, &p);
        let stub = s.tx(0).unwrap().stub_data(Direction::ToServer);
        assert_eq!(&stub[..16], &[0x11; 16]);
        assert_eq!(&stub[16..20], b"STUB");
        assert_eq!(stub.len(), 32);
        assert_eq!(s.opnum(0), Some(5));
    }

    /// Garbage loses the framing with an event; a gap too, and closes the
    /// open side; nothing after is parsed.
    #[test]
    fn garbage_and_gaps() {
        let mut s = state();
        let ev = feed(&mut s, Direction::ToServer, b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dcerpc(DcerpcEvent::InvalidHeader, None)]
        );
        assert!(!s.wants_data(Direction::ToServer));
        assert!(feed(&mut s, Direction::ToServer, &request(3, 1, 0, 1, b"")).is_empty());
        assert_eq!(s.transactions().count(), 0);
        assert!(s.wants_data(Direction::ToClient));

        let mut s = state();
        let r = request(3, 1, 0, 1, b"abcdef");
        feed(&mut s, Direction::ToServer, &r[..20]);
        let mut ev = Vec::new();
        s.on_gap(Direction::ToServer, &mut ev);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dcerpc(DcerpcEvent::StreamGap, None)]
        );
        feed(&mut s, Direction::ToServer, &r[20..]);
        feed(&mut s, Direction::ToServer, &r);
        assert_eq!(s.transactions().count(), 0);
        // A fragment length under the header size is not a PDU.
        let mut s = state();
        let mut bad = request(3, 1, 0, 1, b"");
        bad[8] = 4;
        bad[9] = 0;
        let ev = feed(&mut s, Direction::ToServer, &bad);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dcerpc(DcerpcEvent::InvalidHeader, None)]
        );
        // A gap on the response side completes open responses.
        let mut s = state();
        feed(&mut s, Direction::ToServer, &request(3, 1, 0, 1, b""));
        s.on_gap(Direction::ToClient, &mut Vec::new());
        assert!(s.tx(0).unwrap().progress().response_complete);
        assert_eq!(s.eve(0).unwrap()["response"], "UNREPLIED");
    }

    /// Truncated bodies raise MALFORMED_PDU and do not panic; PDUs in the
    /// wrong direction raise UNEXPECTED_PDU.
    #[test]
    fn malformed_pdus() {
        let mut s = state();
        let ev = feed(
            &mut s,
            Direction::ToServer,
            &pdu(PTYPE_BIND, 3, 1, &[0; 8], false),
        );
        assert!(ev.contains(&AppLayerEvent::Dcerpc(DcerpcEvent::MalformedPdu, None)));
        let mut b = bind(PTYPE_BIND, 3, 2, &[(0, EPM, 3), (1, EPM, 3)]);
        b[HDR_LEN + 8] = 9;
        let ev = feed(&mut s, Direction::ToServer, &b);
        assert!(ev.contains(&AppLayerEvent::Dcerpc(DcerpcEvent::MalformedPdu, None)));
        assert_eq!(s.interfaces().len(), 2);
        let ev = feed(
            &mut s,
            Direction::ToServer,
            &pdu(PTYPE_REQUEST, 3, 3, &[0; 3], false),
        );
        assert!(ev.contains(&AppLayerEvent::Dcerpc(DcerpcEvent::MalformedPdu, None)));
        let ev = feed(
            &mut s,
            Direction::ToClient,
            &pdu(PTYPE_BIND_ACK, 3, 2, &[0; 3], false),
        );
        assert!(ev.contains(&AppLayerEvent::Dcerpc(DcerpcEvent::MalformedPdu, None)));
        let ev = feed(&mut s, Direction::ToClient, &request(3, 9, 0, 1, b""));
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dcerpc(DcerpcEvent::UnexpectedPdu, None)]
        );
        let ev = feed(
            &mut s,
            Direction::ToClient,
            &pdu(PTYPE_FAULT, 3, 77, &[0; 16], false),
        );
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dcerpc(DcerpcEvent::UnmatchedResponse, None)]
        );
        // feed_pdu with a PDU shorter than its fragment length.
        let mut ev = Vec::new();
        s.feed_pdu(
            Direction::ToServer,
            &request(3, 1, 0, 1, b"xyz")[..20],
            0,
            &mut ev,
        );
        assert_eq!(
            ev,
            vec![AppLayerEvent::Dcerpc(DcerpcEvent::MalformedPdu, None)]
        );
    }

    /// A fault answers its request.
    #[test]
    fn fault_completes_response() {
        let mut s = state();
        feed(&mut s, Direction::ToServer, &request(3, 4, 0, 1, b""));
        feed(
            &mut s,
            Direction::ToClient,
            &pdu(PTYPE_FAULT, 3, 4, &[0; 16], false),
        );
        let e = s.eve(0).unwrap();
        assert_eq!(e["response"], "FAULT");
        assert!(e.get("res").is_none());
    }

    /// The transaction list is capped, oldest dropped, with an event.
    #[test]
    fn transaction_cap() {
        let cfg = AppLayerConfig {
            max_transactions: 3,
            ..AppLayerConfig::default()
        };
        let mut s = DcerpcState::new(&cfg);
        let mut ev = Vec::new();
        for call in 0..5 {
            ev.extend(feed(
                &mut s,
                Direction::ToServer,
                &request(3, call, 0, 1, b""),
            ));
        }
        assert_eq!(s.transactions().count(), 3);
        assert_eq!(s.transactions().next().unwrap().id(), 2);
        assert!(ev.contains(&AppLayerEvent::Dcerpc(
            DcerpcEvent::TooManyTransactions,
            None
        )));
    }

    /// Interfaces are capped.
    #[test]
    fn interface_cap() {
        let mut s = state();
        let offer: Vec<(u16, &str, u16)> = (0..40).map(|i| (i, EPM, 3)).collect();
        feed(&mut s, Direction::ToServer, &bind(PTYPE_BIND, 3, 1, &offer));
        let ev = feed(&mut s, Direction::ToServer, &bind(PTYPE_BIND, 3, 2, &offer));
        assert_eq!(s.interfaces().len(), MAX_INTERFACES);
        assert!(ev.contains(&AppLayerEvent::Dcerpc(DcerpcEvent::TooManyInterfaces, None)));
    }

    #[test]
    fn uuid_text() {
        let u = parse_uuid("E1AF8308-5D1F-11C9-91A4-08002B14A0FA").unwrap();
        assert_eq!(uuid_string(&u), EPM);
        assert!(parse_uuid("e1af8308-5d1f-11c9-91a4").is_none());
        assert!(parse_uuid("e1af8308-5d1f-11c9-91a4-08002b14a0fg").is_none());
        assert!(parse_uuid("e1af83085-d1f-11c9-91a4-08002b14a0fa").is_none());
        assert_eq!(ptype_name(12), "BINDACK");
        assert_eq!(ptype_name(99), "99");
    }
}
