//! Telnet (Suricata's `rust/src/telnet`), over TCP port 23. Suricata 9
//! detects it on its port (any two bytes, either direction), parses the
//! stream into control messages (IAC commands, option negotiation
//! `WILL`/`WONT`/`DO`/`DONT`, `SB ... IAC SE` subnegotiation) and data
//! lines, and follows the login prompts; it makes no transactions,
//! raises no events and has no keywords or EVE record. Rules whose
//! header says `telnet` and `app-layer-protocol:telnet` apply to the
//! flow's packets and stream.
//!
//! This parser does the same, byte by byte without buffering (so it is
//! bounded whatever the input): it counts control messages and lines per
//! direction and remembers which options each side negotiated, for
//! tests and future keywords. A gap resynchronises at the next byte, as
//! Suricata's (whose probe accepts anything after a gap).

use serde_json::Value;

use crate::state::{TxCommon, TxProgress};
use crate::txparser::{TxParser, UintField};
use crate::{AppLayerEvent, AppProto, BufferId, Direction, Timestamp, TxId};

/// Telnet's port.
pub const PORT: u16 = 23;

/// Interpret As Command.
pub const IAC: u8 = 255;
/// Subnegotiation begin and end.
pub const SB: u8 = 250;
pub const SE: u8 = 240;
pub const WILL: u8 = 251;
pub const WONT: u8 = 252;
pub const DO: u8 = 253;
pub const DONT: u8 = 254;

/// Where the byte-level parser of one direction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum At {
    /// In data (a line).
    #[default]
    Data,
    /// After IAC.
    Iac,
    /// After IAC WILL/WONT/DO/DONT: the option comes next.
    Opt(u8),
    /// After IAC SB: the option comes next.
    SubStart,
    /// In a subnegotiation's parameters.
    Sub,
    /// IAC inside a subnegotiation (SE ends it, IAC is an escaped 255).
    SubIac,
}

/// One direction's parse.
#[derive(Debug, Clone, Default)]
pub struct Side {
    at: At,
    /// Bytes of the current data line so far.
    line_len: usize,
    /// Control messages seen (IAC commands, negotiations,
    /// subnegotiations).
    pub controls: u64,
    /// Data lines completed (`\n`).
    pub lines: u64,
    /// Options this side offered or asked for (`WILL`/`DO`), a bit each.
    pub options: [u64; 4],
    /// Options subnegotiated.
    pub sub_options: [u64; 4],
}

fn set(bits: &mut [u64; 4], opt: u8) {
    bits[usize::from(opt >> 6)] |= 1 << (opt & 63);
}

fn has(bits: &[u64; 4], opt: u8) -> bool {
    bits[usize::from(opt >> 6)] & (1 << (opt & 63)) != 0
}

impl Side {
    fn byte(&mut self, b: u8) {
        self.at = match (self.at, b) {
            (At::Data, IAC) => At::Iac,
            (At::Data, b'\n') => {
                self.lines += 1;
                self.line_len = 0;
                At::Data
            }
            (At::Data, _) => {
                self.line_len = self.line_len.saturating_add(1);
                At::Data
            }
            // IAC IAC is a data byte 255.
            (At::Iac, IAC) => {
                self.line_len = self.line_len.saturating_add(1);
                At::Data
            }
            (At::Iac, WILL..=DONT) => At::Opt(b),
            (At::Iac, SB) => At::SubStart,
            (At::Iac, _) => {
                self.controls += 1;
                At::Data
            }
            (At::Opt(cmd), opt) => {
                self.controls += 1;
                if matches!(cmd, WILL | DO) {
                    set(&mut self.options, opt);
                }
                At::Data
            }
            (At::SubStart, opt) => {
                set(&mut self.sub_options, opt);
                At::Sub
            }
            (At::Sub, IAC) => At::SubIac,
            (At::Sub, _) => At::Sub,
            (At::SubIac, SE) => {
                self.controls += 1;
                At::Data
            }
            (At::SubIac, _) => At::Sub,
        };
    }

    /// Whether the side offered or asked for `opt` (`WILL`/`DO`).
    pub fn negotiated(&self, opt: u8) -> bool {
        has(&self.options, opt)
    }

    /// Whether the side subnegotiated `opt`.
    pub fn subnegotiated(&self, opt: u8) -> bool {
        has(&self.sub_options, opt)
    }
}

/// Per-flow telnet state: the two directions' parses, no transactions.
#[derive(Debug, Clone, Default)]
pub struct TelnetState {
    sides: [Side; 2],
}

impl TelnetState {
    pub fn new() -> Self {
        TelnetState::default()
    }

    /// One direction's parse.
    pub fn side(&self, dir: Direction) -> &Side {
        &self.sides[dir.index()]
    }

    pub fn feed(&mut self, dir: Direction, data: &[u8]) {
        let s = &mut self.sides[dir.index()];
        for &b in data {
            s.byte(b);
        }
    }

    /// A hole: whatever was being parsed is lost; parsing starts again
    /// in data.
    pub fn on_gap(&mut self, dir: Direction) {
        let s = &mut self.sides[dir.index()];
        s.at = At::Data;
        s.line_len = 0;
    }
}

impl TxParser for TelnetState {
    fn proto(&self) -> AppProto {
        AppProto::Telnet
    }
    fn feed(&mut self, dir: Direction, data: &[u8], _ts: Timestamp, _ev: &mut Vec<AppLayerEvent>) {
        TelnetState::feed(self, dir, data)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        TelnetState::on_gap(self, dir)
    }
    fn finish(&mut self, _dir: Direction, _ev: &mut Vec<AppLayerEvent>) {}
    fn infos(&self) -> Vec<(&TxCommon, TxProgress)> {
        Vec::new()
    }
    fn common(&self, _tx: TxId) -> Option<&TxCommon> {
        None
    }
    fn common_mut(&mut self, _tx: TxId) -> Option<&mut TxCommon> {
        None
    }
    fn retain(&mut self, _keep: &mut dyn FnMut(&TxCommon, TxProgress) -> bool) {}
    fn buffers(&self, _tx: TxId, _id: BufferId, _dir: Direction) -> Vec<&[u8]> {
        Vec::new()
    }
    fn uints(&self, _tx: TxId, _field: UintField, _dir: Direction) -> Vec<u64> {
        Vec::new()
    }
    fn eve(&self, _tx: TxId) -> Option<Value> {
        None
    }
}

/// Suricata's probe: on port 23, any two bytes.
pub fn probe(data: &[u8]) -> Option<bool> {
    (data.len() >= 2).then_some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_subnegotiation_and_lines() {
        let mut t = TelnetState::new();
        // Server: DO TERMINAL-TYPE (24), WILL ECHO (1), WONT LINEMODE (34),
        // then a prompt.
        t.feed(
            Direction::ToClient,
            &[IAC, DO, 24, IAC, WILL, 1, IAC, WONT, 34],
        );
        t.feed(Direction::ToClient, b"Ubuntu 22.04\r\nlogin: ");
        // Client: WILL TERMINAL-TYPE, SB TERMINAL-TYPE IS "xterm" SE, a
        // line with an escaped 255, split anywhere.
        let c = [
            &[IAC, WILL, 24, IAC, SB, 24, 0][..],
            b"xterm",
            &[IAC, IAC, IAC, SE],
            b"root\r\n",
            &[IAC, 244], // IAC IP
        ]
        .concat();
        for ch in c.chunks(3) {
            t.feed(Direction::ToServer, ch);
        }
        let s = t.side(Direction::ToClient);
        assert_eq!((s.controls, s.lines), (3, 1));
        assert!(s.negotiated(24) && s.negotiated(1) && !s.negotiated(34));
        let c = t.side(Direction::ToServer);
        assert_eq!((c.controls, c.lines), (3, 1));
        assert!(c.negotiated(24) && c.subnegotiated(24) && !c.subnegotiated(1));
    }

    #[test]
    fn gap_resyncs_and_garbage_is_bounded() {
        let mut t = TelnetState::new();
        t.feed(Direction::ToServer, &[IAC, SB, 31, 0, 80]);
        t.on_gap(Direction::ToServer);
        t.feed(Direction::ToServer, b"ls\n");
        assert_eq!(t.side(Direction::ToServer).lines, 1);
        assert_eq!(t.side(Direction::ToServer).controls, 0);
        // A megabyte without a newline or an IAC keeps no bytes.
        t.feed(Direction::ToClient, &vec![b'a'; 1 << 20]);
        assert_eq!(t.side(Direction::ToClient).line_len, 1 << 20);
        assert_eq!(t.side(Direction::ToClient).lines, 0);
        // An unterminated subnegotiation swallows data, as Suricata's.
        t.feed(Direction::ToClient, &[IAC, SB, 24, 1]);
        t.feed(Direction::ToClient, b"not a line\n");
        assert_eq!(t.side(Direction::ToClient).lines, 0);
        assert_eq!(probe(b"x"), None);
        assert_eq!(probe(&[IAC, DO]), Some(true));
    }
}
