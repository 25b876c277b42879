//! SSH: the identification strings of both sides (RFC 4253 §4.2),
//! `SSH-protoversion-softwareversion [comments]\r\n`, which is all that
//! `ssh.proto`, `ssh.software` and the EVE `ssh` record need. What follows
//! the identification (the binary packet protocol, encrypted after the key
//! exchange) is skipped; raw-stream rules still see it.
//!
//! A flow has one transaction (id 0), as in Suricata. Each direction is
//! complete once its identification line is parsed, or when the parser
//! gives up on it (a gap before it, a line over [`MAX_LINE`] bytes, the
//! end of the stream). Lines before the identification (servers may send
//! some) are skipped, as RFC 4253 allows.

use serde_json::{json, Map, Value};

use crate::state::{TxCommon, TxProgress};
use crate::{BufferId, Direction, Timestamp, TxId};

/// Longest identification line kept (RFC 4253: 255 bytes with CR LF);
/// longer lines are cut here.
pub const MAX_LINE: usize = 255;
/// Lines skipped before the identification before giving up on it.
const MAX_PRE_LINES: usize = 32;

/// One side's identification.
#[derive(Debug, Default, Clone)]
pub struct SshBanner {
    pub proto_version: Vec<u8>,
    pub software_version: Vec<u8>,
}

#[derive(Debug, Default)]
struct Side {
    /// The line being read (at most [`MAX_LINE`] bytes).
    line: Vec<u8>,
    /// Bytes of the current line dropped past the cap.
    overflow: bool,
    lines: usize,
    banner: Option<SshBanner>,
    /// Nothing more to read in this direction (banner parsed or given up).
    done: bool,
}

/// The flow's single transaction.
#[derive(Debug)]
pub struct SshTx {
    pub(crate) common: TxCommon,
    client: Option<SshBanner>,
    server: Option<SshBanner>,
    done: [bool; 2],
}

impl SshTx {
    pub fn id(&self) -> TxId {
        self.common.id
    }

    /// The identification of the side that sends in `dir`.
    pub fn banner(&self, dir: Direction) -> Option<&SshBanner> {
        match dir {
            Direction::ToServer => self.client.as_ref(),
            Direction::ToClient => self.server.as_ref(),
        }
    }

    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.done[0],
            response_complete: self.done[1],
        }
    }

    /// `ssh.proto` / `ssh.software` of the direction inspected.
    pub fn buffer(&self, id: BufferId, dir: Direction) -> Option<&[u8]> {
        let b = self.banner(dir)?;
        match id {
            BufferId::SshProto => Some(&b.proto_version),
            BufferId::SshSoftware => Some(&b.software_version),
            _ => None,
        }
    }

    pub fn buffers(&self, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        self.buffer(id, dir).into_iter().collect()
    }

    /// Suricata's `ssh` object: `client` and `server`, each with
    /// `proto_version` and `software_version`, for the sides seen.
    pub fn eve(&self) -> Value {
        let mut m = Map::new();
        for (k, b) in [("client", &self.client), ("server", &self.server)] {
            if let Some(b) = b {
                m.insert(
                    k.into(),
                    json!({
                        "proto_version": String::from_utf8_lossy(&b.proto_version),
                        "software_version": String::from_utf8_lossy(&b.software_version),
                    }),
                );
            }
        }
        Value::Object(m)
    }
}

/// Per-flow SSH state.
#[derive(Debug, Default)]
pub struct SshState {
    sides: [Side; 2],
    tx: Option<SshTx>,
}

/// Splits `SSH-2.0-OpenSSH_8.4p1 Debian-5` into proto and software
/// version (the software version ends at the first space).
pub fn parse_identification(line: &[u8]) -> Option<SshBanner> {
    let rest = line.strip_prefix(b"SSH-")?;
    let dash = memchr::memchr(b'-', rest)?;
    let proto = &rest[..dash];
    let after = &rest[dash + 1..];
    let end = after
        .iter()
        .position(|&c| c == b' ' || c == b'\r')
        .unwrap_or(after.len());
    if proto.is_empty() {
        return None;
    }
    Some(SshBanner {
        proto_version: proto.to_vec(),
        software_version: after[..end].to_vec(),
    })
}

impl SshState {
    pub fn new() -> Self {
        SshState::default()
    }

    pub fn tx(&self) -> Option<&SshTx> {
        self.tx.as_ref()
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut SshTx> {
        self.tx.as_mut().filter(|t| t.common.id == id)
    }

    pub fn tx_ref(&self, id: TxId) -> Option<&SshTx> {
        self.tx.as_ref().filter(|t| t.common.id == id)
    }

    fn ensure_tx(&mut self, ts: Timestamp) -> &mut SshTx {
        self.tx.get_or_insert_with(|| SshTx {
            common: TxCommon::new(0, ts),
            client: None,
            server: None,
            done: [false; 2],
        })
    }

    fn close(&mut self, dir: Direction, ts: Timestamp) {
        let d = dir.index();
        self.sides[d].done = true;
        self.sides[d].line = Vec::new();
        self.ensure_tx(ts).done[d] = true;
    }

    /// Feeds stream bytes of one direction.
    pub fn feed(&mut self, dir: Direction, mut data: &[u8], ts: Timestamp) {
        let d = dir.index();
        if data.is_empty() || self.sides[d].done {
            return;
        }
        self.ensure_tx(ts);
        while !data.is_empty() && !self.sides[d].done {
            let side = &mut self.sides[d];
            let (chunk, eol) = match memchr::memchr(b'\n', data) {
                Some(i) => (&data[..i], true),
                None => (data, false),
            };
            let room = MAX_LINE.saturating_sub(side.line.len());
            side.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            side.overflow |= chunk.len() > room;
            data = &data[(chunk.len() + usize::from(eol)).min(data.len())..];
            if !eol {
                if side.overflow && !side.line.starts_with(b"SSH-") {
                    // Not an identification and too long for one.
                    self.close(dir, ts);
                }
                return;
            }
            let line = std::mem::take(&mut side.line);
            side.overflow = false;
            side.lines += 1;
            if let Some(b) = parse_identification(&line) {
                let tx = self.ensure_tx(ts);
                match dir {
                    Direction::ToServer => tx.client = Some(b.clone()),
                    Direction::ToClient => tx.server = Some(b.clone()),
                }
                self.sides[d].banner = Some(b);
                self.close(dir, ts);
            } else if self.sides[d].lines >= MAX_PRE_LINES || dir == Direction::ToServer {
                // Clients send their identification first (RFC 4253).
                self.close(dir, ts);
            }
        }
    }

    /// Whether the identification of `dir` is still to be read (after it
    /// the parser skips everything).
    pub fn wants_data(&self, dir: Direction) -> bool {
        !self.sides[dir.index()].done
    }

    /// A gap: what was being read is lost; the identification, if not
    /// parsed yet, will not be.
    pub fn on_gap(&mut self, dir: Direction) {
        if !self.sides[dir.index()].done {
            self.close(dir, 0);
        }
    }

    /// The direction ended.
    pub fn finish(&mut self, dir: Direction) {
        if !self.sides[dir.index()].done {
            self.close(dir, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identification_split() {
        let b = parse_identification(b"SSH-2.0-OpenSSH_8.4p1 Debian-5\r").unwrap();
        assert_eq!(b.proto_version, b"2.0");
        assert_eq!(b.software_version, b"OpenSSH_8.4p1");
        let b = parse_identification(b"SSH-1.99-PuTTY_Release_0.70\r").unwrap();
        assert_eq!(b.proto_version, b"1.99");
        assert_eq!(b.software_version, b"PuTTY_Release_0.70");
        assert!(parse_identification(b"HTTP/1.1 200 OK").is_none());
        assert!(parse_identification(b"SSH--x").is_none());
    }

    #[test]
    fn banners_byte_by_byte_both_ways() {
        let mut s = SshState::new();
        for &c in b"SSH-2.0-libssh_0.9.6\r\n\x00\x00\x01" {
            s.feed(Direction::ToServer, &[c], 1);
        }
        let srv = b"Welcome\r\nSSH-2.0-dropbear_2016.74\r\n";
        s.feed(Direction::ToClient, srv, 2);
        let t = s.tx().unwrap();
        assert_eq!(
            t.buffer(BufferId::SshProto, Direction::ToServer),
            Some(&b"2.0"[..])
        );
        assert_eq!(
            t.buffer(BufferId::SshSoftware, Direction::ToServer),
            Some(&b"libssh_0.9.6"[..])
        );
        assert_eq!(
            t.buffer(BufferId::SshSoftware, Direction::ToClient),
            Some(&b"dropbear_2016.74"[..])
        );
        assert!(t.progress().request_complete && t.progress().response_complete);
        assert!(!s.wants_data(Direction::ToServer) && !s.wants_data(Direction::ToClient));
        let e = t.eve();
        assert_eq!(e["client"]["software_version"], "libssh_0.9.6");
        assert_eq!(e["server"]["proto_version"], "2.0");
    }

    #[test]
    fn long_line_is_capped_and_gap_closes() {
        let mut s = SshState::new();
        let mut long = b"SSH-2.0-".to_vec();
        long.extend(std::iter::repeat_n(b'A', 10_000));
        long.extend_from_slice(b"\r\n");
        s.feed(Direction::ToServer, &long, 1);
        let t = s.tx().unwrap();
        let sw = t
            .buffer(BufferId::SshSoftware, Direction::ToServer)
            .unwrap();
        assert!(sw.len() < MAX_LINE);
        s.on_gap(Direction::ToClient);
        assert!(s.tx().unwrap().progress().response_complete);
        assert!(s.tx().unwrap().banner(Direction::ToClient).is_none());
    }
}
