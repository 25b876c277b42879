//! Protocols Vigil detects but does not parse into transactions yet:
//! DCERPC over UDP (SMB, FTP, SIP and SMTP have their parsers; DCERPC over TCP has its
//! parser, [`crate::dcerpc`], which triggers raw inspection the same way). A flow of one of them has its
//! `app_proto` set (so that rules whose header names the protocol, and
//! `app-layer-protocol`, apply to its packets and reassembled stream),
//! and its stream data is consumed without being kept.
//!
//! DCERPC over TCP is framed (PDUs by their fragment length), only to
//! tell when a PDU is complete: as Suricata's DCERPC parser does, each
//! complete PDU asks for the raw stream of its direction to be inspected
//! at once rather than when a chunk of data has piled up
//! ([`PassiveState::take_raw_trigger`]). Framing holds a 16-byte header
//! at most; a gap, or a header that makes no sense, loses it for good in
//! that direction (the stream is then inspected by chunks, as for any
//! TCP flow). SMB records do not trigger inspection: on dev-mix, doing so
//! doubled the alerts of depth-anchored SMB rules against Suricata's.

use crate::{AppProto, Direction};

/// Record framing of one direction.
#[derive(Debug, Default, Clone)]
struct Framing {
    hdr: [u8; 16],
    hdr_len: usize,
    /// Bytes of the current record's body still to skip.
    body_left: u64,
    lost: bool,
    /// A record completed since the last [`PassiveState::take_raw_trigger`].
    trigger: bool,
    records: u64,
}

/// Per-flow state of a protocol detected but not parsed.
#[derive(Debug)]
pub struct PassiveState {
    proto: AppProto,
    /// Bytes seen per direction (to-server, to-client).
    pub bytes: [u64; 2],
    /// Gaps seen per direction.
    pub gaps: [u64; 2],
    framing: [Framing; 2],
}

impl PassiveState {
    pub fn new(proto: AppProto) -> Self {
        let framed = proto == AppProto::Dcerpc;
        let f = Framing {
            lost: !framed,
            ..Framing::default()
        };
        PassiveState {
            proto,
            bytes: [0; 2],
            gaps: [0; 2],
            framing: [f.clone(), f],
        }
    }

    pub fn proto(&self) -> AppProto {
        self.proto
    }

    /// The total length of the DCERPC PDU a 16-byte header starts
    /// (`None`: not a PDU header).
    fn pdu_len(hdr: &[u8]) -> Option<u64> {
        if hdr[0] != 5 || hdr[1] > 1 {
            return None;
        }
        let n = if hdr[4] & 0x10 != 0 {
            u16::from_le_bytes([hdr[8], hdr[9]])
        } else {
            u16::from_be_bytes([hdr[8], hdr[9]])
        };
        (n >= 16).then_some(u64::from(n))
    }

    pub fn feed(&mut self, dir: Direction, mut data: &[u8]) {
        self.bytes[dir.index()] += data.len() as u64;
        let hsize = 16;
        let f = &mut self.framing[dir.index()];
        while !data.is_empty() && !f.lost {
            if f.body_left > 0 {
                let n = (data.len() as u64).min(f.body_left);
                f.body_left -= n;
                data = &data[n as usize..];
                if f.body_left == 0 {
                    f.trigger = true;
                    f.records += 1;
                }
                continue;
            }
            let n = (hsize - f.hdr_len).min(data.len());
            f.hdr[f.hdr_len..f.hdr_len + n].copy_from_slice(&data[..n]);
            f.hdr_len += n;
            data = &data[n..];
            if f.hdr_len < hsize {
                break;
            }
            f.hdr_len = 0;
            match Self::pdu_len(&f.hdr) {
                Some(len) if len > hsize as u64 => f.body_left = len - hsize as u64,
                Some(_) => {
                    f.trigger = true;
                    f.records += 1;
                }
                None => f.lost = true,
            }
        }
    }

    /// Whether a message of `dir` completed since the last call (then the
    /// raw stream of that direction is due for inspection).
    pub fn take_raw_trigger(&mut self, dir: Direction) -> bool {
        std::mem::take(&mut self.framing[dir.index()].trigger)
    }

    /// Whether the state still does anything with data of `dir`: only
    /// DCERPC framing does, until it is lost. The engine stops copying a
    /// direction out of the stream once this is false.
    pub fn wants_data(&self, dir: Direction) -> bool {
        !self.framing[dir.index()].lost
    }

    /// Messages framed so far in `dir`.
    pub fn records(&self, dir: Direction) -> u64 {
        self.framing[dir.index()].records
    }

    pub fn on_gap(&mut self, dir: Direction) {
        self.gaps[dir.index()] += 1;
        self.framing[dir.index()].lost = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dcerpc_pdu(ptype: u8, body: usize) -> Vec<u8> {
        let len = (16 + body) as u16;
        let mut v = vec![5, 0, ptype, 3, 0x10, 0, 0, 0];
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(&[0, 0, 1, 0, 0, 0]);
        v.extend(std::iter::repeat_n(0xAA, body));
        v
    }

    #[test]
    fn dcerpc_pdus_trigger_once_complete() {
        let mut s = PassiveState::new(AppProto::Dcerpc);
        let mut data = dcerpc_pdu(11, 56);
        data.extend(dcerpc_pdu(0, 100));
        // The first PDU and part of the second.
        s.feed(Direction::ToServer, &data[..80]);
        assert!(s.take_raw_trigger(Direction::ToServer));
        assert!(!s.take_raw_trigger(Direction::ToServer));
        for b in &data[80..] {
            s.feed(Direction::ToServer, std::slice::from_ref(b));
        }
        assert!(s.take_raw_trigger(Direction::ToServer));
        assert_eq!(s.records(Direction::ToServer), 2);
        assert!(!s.take_raw_trigger(Direction::ToClient));
    }

    #[test]
    fn gap_and_garbage_lose_framing() {
        let mut s = PassiveState::new(AppProto::Dcerpc);
        let pdu = dcerpc_pdu(0, 8);
        assert!(s.wants_data(Direction::ToClient));
        s.on_gap(Direction::ToClient);
        assert!(!s.wants_data(Direction::ToClient));
        s.feed(Direction::ToClient, &pdu);
        assert!(!s.take_raw_trigger(Direction::ToClient));
        let mut g = PassiveState::new(AppProto::Dcerpc);
        g.feed(Direction::ToServer, &[0xff; 64]);
        assert!(!g.take_raw_trigger(Direction::ToServer));
        // A fragment length under the header size is not a PDU.
        let mut bad = pdu.clone();
        bad[8] = 4;
        g = PassiveState::new(AppProto::Dcerpc);
        g.feed(Direction::ToServer, &bad);
        assert!(!g.take_raw_trigger(Direction::ToServer));
    }

    #[test]
    fn smb_is_not_framed() {
        let mut s = PassiveState::new(AppProto::Smb);
        s.feed(Direction::ToServer, b"\0\0\0\x08\xfeSMB\0\0\0\0");
        assert!(!s.take_raw_trigger(Direction::ToServer));
    }

    #[test]
    fn ftp_is_not_framed() {
        let mut s = PassiveState::new(AppProto::Ftp);
        assert!(!s.wants_data(Direction::ToServer));
        s.feed(Direction::ToServer, b"USER x\r\n");
        assert!(!s.take_raw_trigger(Direction::ToServer));
        assert_eq!(s.bytes[0], 8);
    }
}
