//! FTP data connections: the expectation table the reader keeps.
//!
//! Suricata links a data connection to its control channel through an
//! *expectation*: the control parser announces (address, port) and the
//! command that will use it, and a new flow that matches is given
//! `ftp-data` without probing. Here the control flow and the data flow
//! can belong to different workers (flows are pinned by a symmetric
//! 5-tuple hash), so no worker can own the table without making the
//! outcome depend on thread timing. The reader sees every packet in input
//! order before dispatching it, so it keeps the table (single owner,
//! input order: the same for any worker count, as defragmentation):
//!
//! * each TCP payload is read as control lines ([`control_line`]): a
//!   `PORT`/`EPRT` command or a `227`/`229` reply records, for its flow,
//!   that its sender listens on a port (an *announcement*); the flow's
//!   next `RETR`/`STOR`/`LIST`/`NLST` turns the announcement into an
//!   *expectation* keyed by (listening address, port, other address)
//!   with the command and file name, as Suricata creates its expectation
//!   on those commands;
//! * a TCP payload whose (source address, source port, destination
//!   address) or (destination, destination port, source) is expected
//!   takes the expectation: its record carries the command and file name
//!   to the worker, which gives the flow `ftp-data` before probing it
//!   (Suricata looks expectations up when a flow's protocol is first
//!   detected, at its first data).
//!
//! The reader reads packets, not reassembled streams: a control line
//! split over two segments is not seen (FTP clients and servers send a
//! line per segment). Both tables are bounded: at most
//! [`ExpectConfig::max_expectations`] expectations (the oldest is evicted
//! and counted) that expire [`ExpectConfig::timeout_s`] seconds after
//! they were made (Suricata's 30 s), and at most
//! [`ExpectConfig::max_announcements`] announcements (oldest evicted,
//! counted; expired after [`ExpectConfig::announce_timeout_s`]).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use vigil_applayer::ftpdata::{control_line, ControlLine, FtpDataInfo};
use vigil_wire::{Packet, L4};

use crate::Fold;

/// Caps and timeouts of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectConfig {
    pub max_expectations: usize,
    pub max_announcements: usize,
    /// An expectation not taken within this many seconds goes.
    pub timeout_s: u64,
    /// An announcement no transfer command used within this many seconds
    /// goes.
    pub announce_timeout_s: u64,
    /// Flows that began with a SYN remembered (their control lines are
    /// read; oldest forgotten past this).
    pub max_opened: usize,
    /// `stream.midstream`: flows picked up without a SYN are parsed too.
    pub midstream: bool,
}

impl Default for ExpectConfig {
    fn default() -> Self {
        ExpectConfig {
            max_expectations: 4096,
            max_announcements: 4096,
            timeout_s: 30,
            announce_timeout_s: 600,
            max_opened: 1 << 16,
            midstream: false,
        }
    }
}

/// What the table did (stats.log `ftp.expectations.*`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ExpectStats {
    /// Data connections announced (`PORT`, `EPRT`, `227`, `229`).
    pub announced: u64,
    /// Expectations made (`RETR`/`STOR`/`LIST`/`NLST` after an
    /// announcement).
    pub created: u64,
    /// Expectations a data connection took.
    pub matched: u64,
    /// Expectations that timed out.
    pub expired: u64,
    /// Expectations evicted to keep the cap.
    pub evicted: u64,
    /// Announcements evicted to keep the cap, or timed out.
    pub announcements_dropped: u64,
    /// Most expectations held at once.
    pub peak: u64,
    /// Flows that began with a SYN forgotten to keep the cap.
    pub opened_evicted: u64,
}

/// A control flow, either direction: (lower endpoint, higher endpoint).
type CtlKey = ((IpAddr, u16), (IpAddr, u16));
/// An expected connection: (listening address, port, other address).
type ExpKey = (IpAddr, u16, IpAddr);

#[derive(Debug)]
struct Announce {
    listener: IpAddr,
    port: u16,
    sec: i64,
    seq: u64,
    /// The transfer command read after it, waiting for the peer's
    /// acknowledgement.
    transfer: Option<Transfer>,
}

#[derive(Debug)]
struct Transfer {
    key: ExpKey,
    info: FtpDataInfo,
    /// Who sent the command, and the sequence number its segment ends at.
    sender: (IpAddr, u16),
    ack_end: u32,
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

#[derive(Debug)]
struct Expectation {
    info: FtpDataInfo,
    sec: i64,
    seq: u64,
}

/// Most lines of one payload read as control lines (a control segment
/// holds one or a few).
const MAX_LINES: usize = 16;

/// Whether a payload begins as an FTP control segment does: a command
/// (3 or 4 letters, then a space or the line's end) or a reply (3 digits,
/// then a space or `-`), RFC 959's two line shapes. A control channel's
/// segments begin at a line's start, so anything else (HTTP's
/// `HTTP/1.1 200`, a body, binary data) is not read for control lines:
/// most of the reader's text payloads are turned away here, before their
/// lines are split.
fn ftp_shaped(payload: &[u8]) -> bool {
    let head = &payload[..payload.len().min(5)];
    let letters = head.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    if (3..=4).contains(&letters) {
        return matches!(head.get(letters), None | Some(b' ' | b'\r' | b'\n'));
    }
    head.len() >= 4 && head[..3].iter().all(u8::is_ascii_digit) && matches!(head[3], b' ' | b'-')
}

/// The expectation table (see the module documentation).
#[derive(Debug, Default)]
pub struct Expectations {
    cfg: ExpectConfig,
    // Keyed with foldhash (every TCP packet with a text payload is looked
    // up in `opened` on the reader thread; SipHash was most of the
    // table's cost). Never iterated: the order is in the BTreeMaps.
    announced: HashMap<CtlKey, Announce, Fold>,
    announce_order: BTreeMap<u64, CtlKey>,
    expected: HashMap<ExpKey, Expectation, Fold>,
    expect_order: BTreeMap<u64, ExpKey>,
    /// Flows that began with a SYN: the ones whose control lines count.
    opened: HashMap<CtlKey, u64, Fold>,
    opened_order: BTreeMap<u64, CtlKey>,
    seq: u64,
    pub stats: ExpectStats,
}

impl Expectations {
    pub fn new(cfg: ExpectConfig) -> Self {
        Expectations {
            cfg,
            ..Default::default()
        }
    }

    /// Expectations held now.
    pub fn len(&self) -> usize {
        self.expected.len()
    }

    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }

    /// Reads one packet (in input order, at packet time `ts_ns`): its
    /// control lines update the table, and when it belongs to an expected
    /// data connection the expectation is taken and returned.
    pub fn observe(&mut self, p: &Packet<'_>, ts_ns: i64) -> Option<FtpDataInfo> {
        let ip = p.ip.as_ref()?;
        let L4::Tcp(t) = &p.l4 else {
            return None;
        };
        if ip.fragment.is_some() {
            return None;
        }
        let sec = ts_ns.div_euclid(1_000_000_000);
        let (src, sp, dst, dp) = (ip.src, t.src_port, ip.dst, t.dst_port);
        let ctl: CtlKey = if (src, sp) <= (dst, dp) {
            ((src, sp), (dst, dp))
        } else {
            ((dst, dp), (src, sp))
        };
        if t.flags & (SYN | ACK) == SYN && !self.cfg.midstream {
            self.opened(ctl);
        }
        // A transfer command takes effect once the peer acknowledged it,
        // as Suricata's parser sees a direction's data then (IDS mode).
        if t.flags & ACK != 0 && !self.announced.is_empty() {
            let due = self
                .announced
                .get(&ctl)
                .and_then(|a| a.transfer.as_ref())
                .is_some_and(|x| {
                    x.sender != (src, sp) && t.ack.wrapping_sub(x.ack_end) as i32 >= 0
                });
            if due {
                if let Some(a) = self.announced.remove(&ctl) {
                    self.announce_order.remove(&a.seq);
                    if let Some(x) = a.transfer {
                        self.expect(x.key, x.info, sec);
                    }
                }
            }
        }
        if !self.expected.is_empty() {
            self.expire(sec);
            for key in [(src, sp, dst), (dst, dp, src)] {
                if let Some(e) = self.expected.remove(&key) {
                    self.expect_order.remove(&e.seq);
                    self.stats.matched += 1;
                    return Some(e.info);
                }
            }
        }
        let payload = p.payload();
        // Only segments that begin as control lines do are read
        // ([`ftp_shaped`]). Nor are flows that did not start with a SYN
        // (Suricata parses those only with `stream.midstream`).
        if !ftp_shaped(payload) || !(self.cfg.midstream || self.opened.contains_key(&ctl)) {
            return None;
        }
        // The lines (as `split` on LF would give them), found with memchr.
        let mut start = 0;
        for _ in 0..MAX_LINES {
            if start > payload.len() {
                break;
            }
            let end = memchr::memchr(b'\n', &payload[start..]).map_or(payload.len(), |i| start + i);
            let line = &payload[start..end];
            start = end + 1;
            // A reply code or a command letter.
            let first = line.first().map(u8::to_ascii_uppercase);
            if !matches!(first, Some(b'2' | b'P' | b'E' | b'R' | b'S' | b'L' | b'N')) {
                continue;
            }
            match control_line(line) {
                Some(ControlLine::Announce { port, .. }) => self.announce(ctl, src, port, sec),
                Some(ControlLine::Transfer(info)) => {
                    if let Some(a) = self.announced.get_mut(&ctl) {
                        let other = if a.listener == src { dst } else { src };
                        a.transfer = Some(Transfer {
                            key: (a.listener, a.port, other),
                            info,
                            sender: (src, sp),
                            ack_end: t.seq.wrapping_add(payload.len() as u32),
                        });
                    }
                }
                None => {}
            }
        }
        None
    }

    /// Remembers a flow that began with a SYN (oldest forgotten past the
    /// cap).
    fn opened(&mut self, ctl: CtlKey) {
        let seq = self.next_seq();
        if let Some(old) = self.opened.insert(ctl, seq) {
            self.opened_order.remove(&old);
        }
        self.opened_order.insert(seq, ctl);
        while self.opened.len() > self.cfg.max_opened.max(1) {
            let Some((_, k)) = self.opened_order.pop_first() else {
                break;
            };
            self.opened.remove(&k);
            self.stats.opened_evicted += 1;
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn announce(&mut self, ctl: CtlKey, listener: IpAddr, port: u16, sec: i64) {
        self.stats.announced += 1;
        let seq = self.next_seq();
        if let Some(old) = self.announced.remove(&ctl) {
            self.announce_order.remove(&old.seq);
        }
        // Drop what timed out, then the oldest while full.
        while let Some((&s, &k)) = self.announce_order.first_key_value() {
            let stale = self
                .announced
                .get(&k)
                .is_none_or(|a| sec.saturating_sub(a.sec) > self.cfg.announce_timeout_s as i64);
            if !stale && self.announced.len() < self.cfg.max_announcements.max(1) {
                break;
            }
            self.announce_order.remove(&s);
            self.announced.remove(&k);
            self.stats.announcements_dropped += 1;
        }
        self.announced.insert(
            ctl,
            Announce {
                listener,
                port,
                sec,
                seq,
                transfer: None,
            },
        );
        self.announce_order.insert(seq, ctl);
    }

    fn expect(&mut self, key: ExpKey, info: FtpDataInfo, sec: i64) {
        self.stats.created += 1;
        let seq = self.next_seq();
        if let Some(old) = self.expected.remove(&key) {
            // The same connection expected again: the newer command wins.
            self.expect_order.remove(&old.seq);
            self.stats.evicted += 1;
        }
        self.expire(sec);
        while self.expected.len() >= self.cfg.max_expectations.max(1) {
            let Some((s, k)) = self.expect_order.pop_first() else {
                break;
            };
            self.expected.remove(&k);
            self.stats.evicted += 1;
            let _ = s;
        }
        self.expected.insert(key, Expectation { info, sec, seq });
        self.expect_order.insert(seq, key);
        self.stats.peak = self.stats.peak.max(self.expected.len() as u64);
    }

    /// Drops the expectations older than the timeout (oldest first: they
    /// were made in input order).
    fn expire(&mut self, sec: i64) {
        while let Some((&s, &k)) = self.expect_order.first_key_value() {
            let old = self
                .expected
                .get(&k)
                .is_none_or(|e| sec.saturating_sub(e.sec) > self.cfg.timeout_s as i64);
            if !old {
                break;
            }
            self.expect_order.remove(&s);
            self.expected.remove(&k);
            self.stats.expired += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_applayer::ftpdata::FtpDataCommand;
    use vigil_craft::PacketBuilder;

    fn pkt(
        t: &mut Expectations,
        src: &str,
        dst: &str,
        flags: u8,
        (seq, ack): (u32, u32),
        payload: &[u8],
        sec: i64,
    ) -> Option<FtpDataInfo> {
        let s: std::net::SocketAddr = src.parse().unwrap();
        let d: std::net::SocketAddr = dst.parse().unwrap();
        let f =
            PacketBuilder::new().tcp(s.ip(), s.port(), d.ip(), d.port(), seq, ack, flags, payload);
        let p = vigil_wire::decode(1, &f);
        t.observe(&p, sec * 1_000_000_000)
    }

    /// A data segment (sequence 1, acknowledging 1).
    fn feed(
        t: &mut Expectations,
        src: &str,
        dst: &str,
        payload: &[u8],
        sec: i64,
    ) -> Option<FtpDataInfo> {
        pkt(t, src, dst, 0x18, (1, 1), payload, sec)
    }

    /// The peer acknowledges a command sent by `feed` (`len` bytes).
    fn ack(t: &mut Expectations, src: &str, dst: &str, len: usize, sec: i64) {
        pkt(t, src, dst, ACK, (1, 1 + len as u32), b"", sec);
    }

    /// Flows picked up midstream count (no SYN needed).
    fn table() -> Expectations {
        Expectations::new(ExpectConfig {
            midstream: true,
            ..Default::default()
        })
    }

    const C: &str = "10.0.0.1:40000";
    const S: &str = "10.0.0.2:21";

    #[test]
    fn passive_retr_is_expected_once_acknowledged() {
        let mut t = table();
        assert!(feed(
            &mut t,
            S,
            C,
            b"227 Entering Passive Mode (10,0,0,2,19,137)\r\n",
            0
        )
        .is_none());
        // No command yet: nothing expected.
        assert!(feed(&mut t, "10.0.0.2:5001", "10.0.0.1:50000", b"data", 0).is_none());
        let cmd = b"TYPE I\r\nRETR pub/a.bin\r\n";
        assert!(feed(&mut t, C, S, cmd, 1).is_none());
        // Not acknowledged yet (an acknowledgement short of its end, or
        // one from the client, does not count).
        assert!(t.is_empty());
        ack(&mut t, S, C, cmd.len() - 1, 1);
        ack(&mut t, C, S, cmd.len(), 1);
        assert!(t.is_empty());
        ack(&mut t, S, C, cmd.len(), 1);
        assert_eq!(t.len(), 1);
        // Another port, another host pair: not it.
        assert!(feed(&mut t, "10.0.0.2:5002", "10.0.0.1:50000", b"x", 1).is_none());
        assert!(feed(&mut t, "10.0.0.3:5001", "10.0.0.1:50000", b"x", 1).is_none());
        // Any packet of the connection takes it (here the client's SYN).
        let got = pkt(
            &mut t,
            "10.0.0.1:50000",
            "10.0.0.2:5001",
            SYN,
            (7, 0),
            b"",
            2,
        )
        .unwrap();
        assert_eq!(got.command, FtpDataCommand::Retr);
        assert_eq!(got.filename, b"pub/a.bin");
        // Taken: the flow's next packet carries nothing.
        assert!(feed(&mut t, "10.0.0.2:5001", "10.0.0.1:50000", b"data", 2).is_none());
        assert_eq!(t.stats.created, 1);
        assert_eq!(t.stats.matched, 1);
    }

    #[test]
    fn flows_without_a_syn_are_not_read_unless_midstream() {
        let mut t = Expectations::new(ExpectConfig::default());
        feed(
            &mut t,
            S,
            C,
            b"227 Entering Passive Mode (10,0,0,2,19,137)\r\n",
            0,
        );
        assert_eq!(t.stats.announced, 0);
        pkt(&mut t, C, S, SYN, (0, 0), b"", 0);
        feed(
            &mut t,
            S,
            C,
            b"227 Entering Passive Mode (10,0,0,2,19,137)\r\n",
            0,
        );
        feed(&mut t, C, S, b"LIST\r\n", 0);
        ack(&mut t, S, C, 6, 0);
        let got = feed(&mut t, "10.0.0.2:5001", "10.0.0.1:50000", b"-rw-", 0).unwrap();
        assert_eq!(got.command, FtpDataCommand::List);
        assert!(got.filename.is_empty());
    }

    #[test]
    fn only_segments_shaped_as_control_lines_are_read() {
        for (payload, shaped) in [
            (
                &b"227 Entering Passive Mode (10,0,0,2,19,137)\r\n"[..],
                true,
            ),
            (b"150-Opening\r\n227 x\r\n", true),
            (b"PORT 10,0,0,1,234,10\r\n", true),
            (b"LIST\r\n", true),
            (b"LIST", true),
            (b"pwd\n", true),
            (b"CWD /\r\n", true),
            (
                b"HTTP/1.1 200 OK\r\n227 Entering Passive Mode (10,0,0,2,19,137)\r\n",
                false,
            ),
            (b"<html>\r\nPORT 10,0,0,1,234,10\r\n", false),
            (b"Accept: */*\r\n", false),
            (b"a001 LOGIN x y\r\n", false),
            (b"22 x", false),
            (b"2270", false),
            (b"RETRIEVE x", false),
            (b"", false),
            (b"\x16\x03\x01", false),
        ] {
            let text = String::from_utf8_lossy(payload);
            assert_eq!(ftp_shaped(payload), shaped, "{text:?}");
        }
        // A later line shaped as an announcement, after a first line that
        // is not a control line, announces nothing.
        let mut t = table();
        feed(
            &mut t,
            S,
            C,
            b"HTTP/1.1 200 OK\r\n227 Entering Passive Mode (10,0,0,2,19,137)\r\n",
            0,
        );
        assert_eq!(t.stats.announced, 0);
        feed(
            &mut t,
            S,
            C,
            b"150-Here\r\n227 Entering Passive Mode (10,0,0,2,19,137)\r\n",
            0,
        );
        assert_eq!(t.stats.announced, 1);
    }

    #[test]
    fn active_stor_expects_the_client() {
        let mut t = table();
        feed(&mut t, C, S, b"PORT 10,0,0,1,234,10\r\n", 0);
        feed(&mut t, C, S, b"STOR up.txt\r\n", 0);
        ack(&mut t, S, C, 13, 0);
        // The client sends the file over the server's connection to it
        // (either packet direction matches).
        let got = feed(&mut t, "10.0.0.1:59914", "10.0.0.2:20", b"file", 0).unwrap();
        assert_eq!(got.command, FtpDataCommand::Stor);
        // IPv6 with EPRT.
        let c6 = "[2001:db8::1]:40000";
        let s6 = "[2001:db8::2]:21";
        feed(&mut t, c6, s6, b"EPRT |2|2001:db8::1|6275|\r\n", 0);
        feed(&mut t, c6, s6, b"RETR x\r\n", 0);
        ack(&mut t, s6, c6, 8, 0);
        assert!(feed(&mut t, "[2001:db8::2]:20", "[2001:db8::1]:6275", b"d", 0).is_some());
    }

    #[test]
    fn expectations_expire() {
        let mut t = table();
        feed(
            &mut t,
            S,
            C,
            b"229 Entering Extended Passive Mode (|||6446|)\r\n",
            0,
        );
        feed(&mut t, C, S, b"RETR a\r\n", 0);
        ack(&mut t, S, C, 8, 0);
        assert!(feed(&mut t, "10.0.0.1:50000", "10.0.0.2:6446", b"x", 31).is_none());
        assert_eq!(t.stats.expired, 1);
        assert!(t.is_empty());
    }

    #[test]
    fn tables_are_capped_and_count_evictions() {
        let cfg = ExpectConfig {
            max_expectations: 8,
            max_announcements: 4,
            max_opened: 3,
            ..Default::default()
        };
        let mut t = Expectations::new(ExpectConfig {
            midstream: true,
            ..cfg
        });
        // 100 control flows announce and transfer: at most 8 expected.
        for i in 0..100u16 {
            let c = format!("10.0.1.{}:{}", i % 200, 30000 + i);
            let reply = format!("227 ok (10,0,0,2,{},{})\r\n", 20 + i / 256, i % 256);
            feed(&mut t, S, &c, reply.as_bytes(), 0);
            feed(&mut t, &c, S, b"RETR f\r\n", 0);
            ack(&mut t, S, &c, 8, 0);
            assert!(t.len() <= 8);
        }
        assert_eq!(t.stats.created, 100);
        assert_eq!(t.stats.evicted, 92);
        assert_eq!(t.stats.peak, 8);
        // The newest survive.
        assert!(feed(&mut t, "10.0.0.2:5219", "10.0.1.99:1", b"x", 0).is_some());
        assert!(feed(&mut t, "10.0.0.2:5120", "10.0.1.0:1", b"x", 0).is_none());
        // Announcements without a transfer: at most 4 kept.
        for i in 0..10u16 {
            let c = format!("10.0.2.1:{}", 30000 + i);
            feed(&mut t, &c, S, b"PORT 10,0,2,1,100,1\r\n", 0);
        }
        assert_eq!(t.announced.len(), 4);
        assert_eq!(t.stats.announcements_dropped, 6);
        // Flows opened by a SYN: at most 3 remembered.
        let mut t = Expectations::new(cfg);
        for i in 0..10u16 {
            pkt(
                &mut t,
                &format!("10.0.3.1:{}", 30000 + i),
                S,
                SYN,
                (0, 0),
                b"",
                0,
            );
        }
        assert_eq!(t.opened.len(), 3);
        assert_eq!(t.stats.opened_evicted, 7);
    }
}
