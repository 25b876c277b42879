//! RFB (VNC) over TCP: the handshake (Suricata's `rust/src/rfb`).
//!
//! One transaction per flow, made of the protocol versions of both sides,
//! the security types the server offers (3.7/3.8) or imposes (3.3), the
//! client's choice, the VNC authentication challenge and response, the
//! security result (with the 3.8 failure reason), the client's shared
//! flag and the ServerInit (framebuffer size, pixel format, desktop
//! name). The handshake alternates between the sides, so one state
//! machine consumes whichever side's buffered bytes it needs next: the
//! order in which the directions are fed does not matter. Once the
//! ServerInit is read (or the handshake cannot go on) the flow is no
//! longer followed. Security types other than None (1) and VNC
//! authentication (2) raise `unimplemented_security_type`, a security
//! result other than 0-2 `unknown_security_result`, a bad version line or
//! an oversized field `malformed_message`, bytes a side sends when the
//! handshake does not expect them (beyond a small allowance)
//! `confused_state`.

use serde_json::{json, Map, Value};

use crate::events::RfbEvent;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxParser};
use crate::{
    hex_lower, AppLayerConfig, AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId,
    UintField,
};

/// Longest desktop name or failure reason kept; longer ones are a
/// malformed message.
pub const MAX_STRING: usize = 64 * 1024;
/// Bytes a side may have buffered ahead of what the handshake expects.
const MAX_PENDING: usize = MAX_STRING + 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    ServerVersion,
    ClientVersion,
    /// 3.3: the server's u32 security type.
    ServerSecType,
    /// 3.7/3.8: the count and list of types.
    ServerSecTypes,
    ClientSecType,
    Challenge,
    Response,
    SecResult,
    /// A failure reason (u32 length and text) follows.
    FailReason,
    ClientInit,
    ServerInit,
    Done,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PixelFormat {
    pub bits_per_pixel: u8,
    pub depth: u8,
    pub big_endian: bool,
    pub true_color: bool,
    pub red_max: u16,
    pub green_max: u16,
    pub blue_max: u16,
    pub red_shift: u8,
    pub green_shift: u8,
    pub blue_shift: u8,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerInit {
    pub width: u16,
    pub height: u16,
    pub pixel_format: PixelFormat,
    pub name: Vec<u8>,
}

/// The flow's one transaction: what the handshake said so far.
#[derive(Debug, Default)]
pub struct RfbTx {
    pub(crate) common: TxCommon,
    /// `(major, minor)` as written (`"003"`, `"008"`).
    pub server_version: Option<(String, String)>,
    pub client_version: Option<(String, String)>,
    pub offered_types: Vec<u32>,
    pub security_type: Option<u32>,
    pub challenge: Option<[u8; 16]>,
    pub response: Option<[u8; 16]>,
    pub security_result: Option<u32>,
    pub failure_reason: Option<Vec<u8>>,
    pub shared: Option<bool>,
    pub server_init: Option<ServerInit>,
    pub complete: bool,
}

impl Tx for RfbTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.complete,
            response_complete: self.complete,
        }
    }
}

impl RfbTx {
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        let ver = |v: &(String, String)| json!({"major": v.0, "minor": v.1});
        if let Some(v) = &self.server_version {
            m.insert("server_protocol_version".into(), ver(v));
        }
        if let Some(v) = &self.client_version {
            m.insert("client_protocol_version".into(), ver(v));
        }
        if let Some(t) = self.security_type {
            let mut a = Map::new();
            a.insert("security_type".into(), t.into());
            if let (Some(c), Some(r)) = (&self.challenge, &self.response) {
                a.insert(
                    "vnc".into(),
                    json!({"challenge": hex_lower(c), "response": hex_lower(r)}),
                );
            }
            if let Some(r) = self.security_result {
                let s = match r {
                    0 => "OK",
                    1 => "FAIL",
                    2 => "TOOMANY",
                    _ => "UNKNOWN",
                };
                a.insert("security_result".into(), s.into());
            }
            m.insert("authentication".into(), Value::Object(a));
        }
        if let Some(r) = &self.failure_reason {
            m.insert("server_security_failure_reason".into(), suri_str(r));
        }
        if let Some(s) = self.shared {
            m.insert("screen_shared".into(), s.into());
        }
        if let Some(si) = &self.server_init {
            let p = &si.pixel_format;
            m.insert(
                "framebuffer".into(),
                json!({
                    "width": si.width,
                    "height": si.height,
                    "name": suri_str(&si.name),
                    "pixel_format": {
                        "bits_per_pixel": p.bits_per_pixel,
                        "depth": p.depth,
                        "big_endian": p.big_endian,
                        "true_color": p.true_color,
                        "red_max": p.red_max,
                        "green_max": p.green_max,
                        "blue_max": p.blue_max,
                        "red_shift": p.red_shift,
                        "green_shift": p.green_shift,
                        "blue_shift": p.blue_shift,
                    }
                }),
            );
        }
        Value::Object(m)
    }

    pub fn uints(&self, f: UintField) -> Vec<u64> {
        match f {
            UintField::RfbSectype => self.security_type.map(u64::from).into_iter().collect(),
            UintField::RfbSecresult => self.security_result.map(u64::from).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    pub fn buffers(&self, id: BufferId) -> Vec<&[u8]> {
        match (id, &self.server_init) {
            (BufferId::RfbName, Some(si)) => vec![&si.name[..]],
            _ => Vec::new(),
        }
    }
}

/// Per-flow RFB state.
#[derive(Debug)]
pub struct RfbState {
    tx: Option<RfbTx>,
    st: St,
    bufs: [Vec<u8>; 2],
    /// The minor version in use (3, 7, 8 ...).
    minor: u32,
}

/// `RFB xxx.yyy\n`: the major and minor numbers as written.
fn version_line(b: &[u8]) -> Option<(String, String)> {
    if b.len() != 12 || &b[..4] != b"RFB " || b[7] != b'.' || b[11] != b'\n' {
        return None;
    }
    let (maj, min) = (&b[4..7], &b[8..11]);
    if !maj.iter().chain(min).all(u8::is_ascii_digit) {
        return None;
    }
    Some((
        String::from_utf8_lossy(maj).into_owned(),
        String::from_utf8_lossy(min).into_owned(),
    ))
}

/// Whether `b` (a side's first bytes) starts like an RFB version line:
/// `None` while too short to tell.
pub fn probe_version(b: &[u8]) -> Option<bool> {
    let pat = b"RFB 000.000\n";
    for (i, &c) in b.iter().take(12).enumerate() {
        let ok = match pat[i] {
            b'0' => c.is_ascii_digit(),
            p => c == p,
        };
        if !ok {
            return Some(false);
        }
    }
    if b.len() >= 12 {
        Some(true)
    } else {
        None
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

impl RfbState {
    pub fn new(_cfg: &AppLayerConfig) -> Self {
        RfbState {
            tx: None,
            st: St::ServerVersion,
            bufs: [Vec::new(), Vec::new()],
            minor: 8,
        }
    }

    pub fn tx(&self) -> Option<&RfbTx> {
        self.tx.as_ref()
    }

    fn event(&self, e: RfbEvent, ev: &mut Vec<AppLayerEvent>) {
        ev.push(AppLayerEvent::Rfb(e, Some(0)));
    }

    /// Stops following the flow.
    fn done(&mut self) {
        self.st = St::Done;
        self.bufs = [Vec::new(), Vec::new()];
        if let Some(t) = self.tx.as_mut() {
            t.complete = true;
        }
    }

    /// The side and byte count the current state needs (`None`: a length
    /// prefix decides, see [`Self::step`]).
    fn want(&self) -> Option<(usize, Option<usize>)> {
        // Buffers by direction index: the server's bytes go to the client.
        let s = Direction::ToClient.index();
        let c = Direction::ToServer.index();
        Some(match self.st {
            St::ServerVersion => (s, Some(12)),
            St::ClientVersion => (c, Some(12)),
            St::ServerSecType => (s, Some(4)),
            St::ServerSecTypes => (s, None),
            St::ClientSecType => (c, Some(1)),
            St::Challenge => (s, Some(16)),
            St::Response => (c, Some(16)),
            St::SecResult => (s, Some(4)),
            St::FailReason => (s, None),
            St::ClientInit => (c, Some(1)),
            St::ServerInit => (s, None),
            St::Done => return None,
        })
    }

    /// Bytes a length-prefixed state needs once its prefix is there.
    fn prefixed_len(&self, b: &[u8]) -> Option<usize> {
        match self.st {
            St::ServerSecTypes => b.first().map(|&n| 1 + usize::from(n)),
            St::FailReason => (b.len() >= 4).then(|| 4 + be32(b) as usize),
            St::ServerInit => (b.len() >= 24).then(|| 24 + be32(&b[20..24]) as usize),
            _ => None,
        }
    }

    /// Consumes what the handshake needs next while it is buffered.
    fn advance(&mut self, ev: &mut Vec<AppLayerEvent>) {
        loop {
            let Some((side, fixed)) = self.want() else {
                return;
            };
            let b = &self.bufs[side];
            let n = match fixed {
                Some(n) => n,
                None => match self.prefixed_len(b) {
                    Some(n) => n,
                    None => return,
                },
            };
            if n > MAX_PENDING {
                self.event(RfbEvent::MalformedMessage, ev);
                self.done();
                return;
            }
            if b.len() < n {
                return;
            }
            let msg: Vec<u8> = self.bufs[side].drain(..n).collect();
            self.step(&msg, ev);
        }
    }

    /// One complete message of the current state.
    fn step(&mut self, m: &[u8], ev: &mut Vec<AppLayerEvent>) {
        let Some(tx) = self.tx.as_mut() else {
            return;
        };
        match self.st {
            St::ServerVersion | St::ClientVersion => {
                let Some(v) = version_line(m) else {
                    self.event(RfbEvent::MalformedMessage, ev);
                    self.done();
                    return;
                };
                if self.st == St::ServerVersion {
                    tx.server_version = Some(v);
                    self.st = St::ClientVersion;
                } else {
                    self.minor = v.1.parse().unwrap_or(8);
                    tx.client_version = Some(v);
                    self.st = if self.minor == 3 {
                        St::ServerSecType
                    } else {
                        St::ServerSecTypes
                    };
                }
            }
            St::ServerSecType => {
                let t = be32(m);
                tx.offered_types = vec![t];
                if t == 0 {
                    self.st = St::FailReason;
                } else {
                    self.choose(t, ev);
                }
            }
            St::ServerSecTypes => {
                tx.offered_types = m[1..].iter().map(|&t| u32::from(t)).collect();
                self.st = if m[0] == 0 {
                    St::FailReason
                } else {
                    St::ClientSecType
                };
            }
            St::ClientSecType => self.choose(u32::from(m[0]), ev),
            St::Challenge => {
                tx.challenge = m.try_into().ok();
                self.st = St::Response;
            }
            St::Response => {
                tx.response = m.try_into().ok();
                self.st = St::SecResult;
            }
            St::SecResult => {
                let r = be32(m);
                tx.security_result = Some(r);
                match r {
                    0 => self.st = St::ClientInit,
                    1 | 2 if self.minor >= 8 => self.st = St::FailReason,
                    1 | 2 => self.done(),
                    _ => {
                        self.event(RfbEvent::UnknownSecurityResult, ev);
                        self.done();
                    }
                }
            }
            St::FailReason => {
                tx.failure_reason = Some(m[4..].to_vec());
                self.done();
            }
            St::ClientInit => {
                tx.shared = Some(m[0] != 0);
                self.st = St::ServerInit;
            }
            St::ServerInit => {
                let p = &m[4..20];
                tx.server_init = Some(ServerInit {
                    width: be16(m),
                    height: be16(&m[2..]),
                    pixel_format: PixelFormat {
                        bits_per_pixel: p[0],
                        depth: p[1],
                        big_endian: p[2] != 0,
                        true_color: p[3] != 0,
                        red_max: be16(&p[4..]),
                        green_max: be16(&p[6..]),
                        blue_max: be16(&p[8..]),
                        red_shift: p[10],
                        green_shift: p[11],
                        blue_shift: p[12],
                    },
                    name: m[24..].to_vec(),
                });
                self.done();
            }
            St::Done => {}
        }
    }

    /// The security type in use: what follows it.
    fn choose(&mut self, t: u32, ev: &mut Vec<AppLayerEvent>) {
        if let Some(tx) = self.tx.as_mut() {
            tx.security_type = Some(t);
        }
        match t {
            1 if self.minor >= 8 => self.st = St::SecResult,
            1 => self.st = St::ClientInit,
            2 => self.st = St::Challenge,
            _ => {
                self.event(RfbEvent::UnimplementedSecurityType, ev);
                self.done();
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
        if self.st == St::Done || data.is_empty() {
            return;
        }
        if self.tx.is_none() {
            self.tx = Some(RfbTx {
                common: TxCommon::new(0, ts),
                ..Default::default()
            });
        }
        let side = dir.index();
        let b = &mut self.bufs[side];
        if b.len() + data.len() > MAX_PENDING {
            // A side sends far more than the handshake asks of it.
            self.event(RfbEvent::ConfusedState, ev);
            self.done();
            return;
        }
        b.extend_from_slice(data);
        self.advance(ev);
    }

    /// A gap: the handshake cannot be followed further.
    pub fn on_gap(&mut self) {
        self.done();
    }

    /// A side ended: the handshake goes no further.
    pub fn finish(&mut self, _dir: Direction) {
        self.done();
    }
}

impl TxParser for RfbState {
    fn proto(&self) -> AppProto {
        AppProto::Rfb
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        RfbState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, _dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        RfbState::on_gap(self)
    }
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        RfbState::finish(self, dir)
    }
    fn infos(&self) -> Vec<(&TxCommon, TxProgress)> {
        self.tx.iter().map(|t| (&t.common, t.progress())).collect()
    }
    fn common(&self, tx: TxId) -> Option<&TxCommon> {
        self.tx
            .as_ref()
            .filter(|t| t.common.id == tx)
            .map(|t| &t.common)
    }
    fn common_mut(&mut self, tx: TxId) -> Option<&mut TxCommon> {
        self.tx
            .as_mut()
            .filter(|t| t.common.id == tx)
            .map(|t| &mut t.common)
    }
    fn retain(&mut self, keep: &mut dyn FnMut(&TxCommon, TxProgress) -> bool) {
        // The flow's only transaction stays: it holds the handshake state.
        let _ = keep;
    }
    fn buffers(&self, tx: TxId, id: BufferId, _dir: Direction) -> Vec<&[u8]> {
        self.tx
            .as_ref()
            .filter(|t| t.common.id == tx)
            .map(|t| t.buffers(id))
            .unwrap_or_default()
    }
    fn uints(&self, tx: TxId, field: UintField, _dir: Direction) -> Vec<u64> {
        self.tx
            .as_ref()
            .filter(|t| t.common.id == tx)
            .map(|t| t.uints(field))
            .unwrap_or_default()
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.tx
            .as_ref()
            .filter(|t| t.common.id == tx)
            .map(|t| t.eve())
    }
    fn wants_data(&self, _dir: Direction) -> bool {
        self.st != St::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    fn server_init(name: &[u8]) -> Vec<u8> {
        let mut v = vec![
            0x05, 0x00, 0x03, 0x20, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0,
        ];
        v.extend_from_slice(&(name.len() as u32).to_be_bytes());
        v.extend_from_slice(name);
        v
    }

    /// A 3.8 handshake with VNC authentication, as (direction, bytes).
    fn vnc38() -> Vec<(Direction, Vec<u8>)> {
        vec![
            (ToClient, b"RFB 003.008\n".to_vec()),
            (ToServer, b"RFB 003.008\n".to_vec()),
            (ToClient, vec![2, 2, 1]),
            (ToServer, vec![2]),
            (ToClient, (0u8..16).collect()),
            (ToServer, (100u8..116).collect()),
            (ToClient, vec![0, 0, 0, 0]),
            (ToServer, vec![1]),
            (ToClient, server_init(b"desk")),
        ]
    }

    fn run(steps: &[(Direction, Vec<u8>)], bytewise: bool) -> (RfbState, Vec<AppLayerEvent>) {
        let mut s = RfbState::new(&AppLayerConfig::default());
        let mut ev = Vec::new();
        for (d, b) in steps {
            if bytewise {
                for c in b {
                    s.feed(*d, std::slice::from_ref(c), 1, &mut ev);
                }
            } else {
                s.feed(*d, b, 1, &mut ev);
            }
        }
        (s, ev)
    }

    #[test]
    fn vnc_auth_handshake() {
        for bytewise in [false, true] {
            let (s, ev) = run(&vnc38(), bytewise);
            assert!(ev.is_empty());
            let t = s.tx().unwrap();
            assert!(t.complete);
            assert_eq!(t.uints(UintField::RfbSectype), vec![2]);
            assert_eq!(t.uints(UintField::RfbSecresult), vec![0]);
            assert_eq!(t.buffers(BufferId::RfbName), vec![&b"desk"[..]]);
            let e = t.eve();
            assert_eq!(e["server_protocol_version"]["minor"], "008");
            assert_eq!(e["authentication"]["security_result"], "OK");
            assert_eq!(
                e["authentication"]["vnc"]["challenge"],
                "000102030405060708090a0b0c0d0e0f"
            );
            assert_eq!(e["screen_shared"], true);
            assert_eq!(e["framebuffer"]["width"], 1280);
            assert_eq!(e["framebuffer"]["pixel_format"]["red_shift"], 16);
            assert!(!s.wants_data(ToServer));
        }
    }

    #[test]
    fn sides_fed_out_of_order() {
        // The server's bytes all arrive before the client's.
        let steps = vnc38();
        let mut reordered: Vec<(Direction, Vec<u8>)> =
            steps.iter().filter(|s| s.0 == ToClient).cloned().collect();
        reordered.extend(steps.iter().filter(|s| s.0 == ToServer).cloned());
        let (s, ev) = run(&reordered, false);
        assert!(ev.is_empty());
        assert_eq!(
            s.tx().unwrap().eve(),
            run(&steps, false).0.tx().unwrap().eve()
        );
    }

    #[test]
    fn v33_none_and_failures() {
        // 3.3, security type None imposed: no security result.
        let (s, ev) = run(
            &[
                (ToClient, b"RFB 003.003\n".to_vec()),
                (ToServer, b"RFB 003.003\n".to_vec()),
                (ToClient, vec![0, 0, 0, 1]),
                (ToServer, vec![0]),
                (ToClient, server_init(b"x")),
            ],
            false,
        );
        assert!(ev.is_empty());
        let t = s.tx().unwrap();
        assert_eq!(t.security_result, None);
        assert_eq!(t.buffers(BufferId::RfbName), vec![&b"x"[..]]);
        // 3.8 failure with a reason.
        let mut steps = vnc38();
        steps.truncate(6);
        steps.push((ToClient, b"\x00\x00\x00\x01\x00\x00\x00\x03bad".to_vec()));
        let (s, _) = run(&steps, false);
        let e = s.tx().unwrap().eve();
        assert_eq!(e["authentication"]["security_result"], "FAIL");
        assert_eq!(e["server_security_failure_reason"], "bad");
        // Unknown result, unimplemented type, bad version line.
        let mut steps = vnc38();
        steps[6].1 = vec![0, 0, 0, 9];
        let (_, ev) = run(&steps, false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Rfb(RfbEvent::UnknownSecurityResult, Some(0))]
        );
        let mut steps = vnc38();
        steps[3].1 = vec![19];
        let (_, ev) = run(&steps, false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Rfb(
                RfbEvent::UnimplementedSecurityType,
                Some(0)
            )]
        );
        let (_, ev) = run(&[(ToClient, b"RFB 003.00x\n".to_vec())], false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Rfb(RfbEvent::MalformedMessage, Some(0))]
        );
    }

    #[test]
    fn oversized_and_gaps() {
        let mut steps = vnc38();
        steps[8].1 = server_init(b"n");
        steps[8].1[20..24].copy_from_slice(&u32::MAX.to_be_bytes());
        let (s, ev) = run(&steps, false);
        assert_eq!(
            ev,
            vec![AppLayerEvent::Rfb(RfbEvent::MalformedMessage, Some(0))]
        );
        assert!(s.tx().unwrap().server_init.is_none());
        // A client that floods before the server spoke.
        let mut s = RfbState::new(&AppLayerConfig::default());
        let mut ev = Vec::new();
        for _ in 0..10 {
            s.feed(ToServer, &[0u8; 8192], 1, &mut ev);
        }
        assert_eq!(
            ev,
            vec![AppLayerEvent::Rfb(RfbEvent::ConfusedState, Some(0))]
        );
        // A gap ends the handshake where it was.
        let mut s = RfbState::new(&AppLayerConfig::default());
        s.feed(ToClient, b"RFB 003.008\n", 1, &mut ev);
        s.on_gap();
        s.feed(ToServer, b"RFB 003.008\n", 1, &mut ev);
        assert!(s.tx().unwrap().client_version.is_none());
        assert!(s.tx().unwrap().complete);
    }

    #[test]
    fn probe() {
        assert_eq!(probe_version(b"RFB 003.008\n"), Some(true));
        assert_eq!(probe_version(b"RFB 0"), None);
        assert_eq!(probe_version(b"RFB x"), Some(false));
        assert_eq!(probe_version(b"SSH-2.0"), Some(false));
    }
}
