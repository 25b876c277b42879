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
//!   next `RETR`/`STOR` turns the announcement into an *expectation*
//!   keyed by (listening address, port, other address) with the command
//!   and file name, as Suricata creates its expectation on those two
//!   commands;
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

/// Caps and timeouts of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectConfig {
    pub max_expectations: usize,
    pub max_announcements: usize,
    /// An expectation not taken within this many seconds goes.
    pub timeout_s: u64,
    /// An announcement no `RETR`/`STOR` used within this many seconds
    /// goes.
    pub announce_timeout_s: u64,
}

impl Default for ExpectConfig {
    fn default() -> Self {
        ExpectConfig {
            max_expectations: 4096,
            max_announcements: 4096,
            timeout_s: 30,
            announce_timeout_s: 600,
        }
    }
}

/// What the table did (stats.log `ftp.expectations.*`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ExpectStats {
    /// Data connections announced (`PORT`, `EPRT`, `227`, `229`).
    pub announced: u64,
    /// Expectations made (`RETR`/`STOR` after an announcement).
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
}

#[derive(Debug)]
struct Expectation {
    info: FtpDataInfo,
    sec: i64,
    seq: u64,
}

/// Most lines of one payload read as control lines (a control segment
/// holds one or a few).
const MAX_LINES: usize = 16;

/// The expectation table (see the module documentation).
#[derive(Debug, Default)]
pub struct Expectations {
    cfg: ExpectConfig,
    announced: HashMap<CtlKey, Announce>,
    announce_order: BTreeMap<u64, CtlKey>,
    expected: HashMap<ExpKey, Expectation>,
    expect_order: BTreeMap<u64, ExpKey>,
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
        if ip.fragment.is_some() || !matches!(p.l4, L4::Tcp(_)) {
            return None;
        }
        let payload = p.payload();
        if payload.is_empty() {
            return None;
        }
        let sec = ts_ns.div_euclid(1_000_000_000);
        let (src, sp, dst, dp) = (ip.src, p.src_port(), ip.dst, p.dst_port());
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
        // Control channels are text: binary payloads are not read.
        if !payload[0].is_ascii_alphanumeric() {
            return None;
        }
        let ctl: CtlKey = if (src, sp) <= (dst, dp) {
            ((src, sp), (dst, dp))
        } else {
            ((dst, dp), (src, sp))
        };
        for line in payload.split(|&b| b == b'\n').take(MAX_LINES) {
            // A reply code or a command letter.
            let first = line.first().map(u8::to_ascii_uppercase);
            if !matches!(first, Some(b'2' | b'P' | b'E' | b'R' | b'S')) {
                continue;
            }
            match control_line(line) {
                Some(ControlLine::Announce { port, .. }) => self.announce(ctl, src, port, sec),
                Some(ControlLine::Transfer(info)) => {
                    if let Some(a) = self.announced.remove(&ctl) {
                        self.announce_order.remove(&a.seq);
                        let other = if a.listener == src { dst } else { src };
                        self.expect((a.listener, a.port, other), info, sec);
                    }
                }
                None => {}
            }
        }
        None
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

    fn tcp(src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
        let s: std::net::SocketAddr = src.parse().unwrap();
        let d: std::net::SocketAddr = dst.parse().unwrap();
        PacketBuilder::new().tcp(s.ip(), s.port(), d.ip(), d.port(), 1, 1, 0x18, payload)
    }

    fn feed(
        t: &mut Expectations,
        src: &str,
        dst: &str,
        payload: &[u8],
        sec: i64,
    ) -> Option<FtpDataInfo> {
        let f = tcp(src, dst, payload);
        let p = vigil_wire::decode(1, &f);
        t.observe(&p, sec * 1_000_000_000)
    }

    const C: &str = "10.0.0.1:40000";
    const S: &str = "10.0.0.2:21";

    #[test]
    fn passive_retr_is_expected_once() {
        let mut t = Expectations::new(ExpectConfig::default());
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
        assert!(feed(&mut t, C, S, b"TYPE I\r\nRETR pub/a.bin\r\n", 1).is_none());
        assert_eq!(t.len(), 1);
        // Another port, another host pair: not it.
        assert!(feed(&mut t, "10.0.0.2:5002", "10.0.0.1:50000", b"x", 1).is_none());
        assert!(feed(&mut t, "10.0.0.3:5001", "10.0.0.1:50000", b"x", 1).is_none());
        let got = feed(&mut t, "10.0.0.2:5001", "10.0.0.1:50000", b"data", 2).unwrap();
        assert_eq!(got.command, FtpDataCommand::Retr);
        assert_eq!(got.filename, b"pub/a.bin");
        // Taken: the flow's next packet carries nothing.
        assert!(feed(&mut t, "10.0.0.2:5001", "10.0.0.1:50000", b"data", 2).is_none());
        assert_eq!(t.stats.created, 1);
        assert_eq!(t.stats.matched, 1);
    }

    #[test]
    fn active_stor_expects_the_client() {
        let mut t = Expectations::new(ExpectConfig::default());
        feed(&mut t, C, S, b"PORT 10,0,0,1,234,10\r\n", 0);
        feed(&mut t, C, S, b"STOR up.txt\r\n", 0);
        // The client sends the file over the server's connection to it
        // (either packet direction matches).
        let got = feed(&mut t, "10.0.0.1:59914", "10.0.0.2:20", b"file", 0).unwrap();
        assert_eq!(got.command, FtpDataCommand::Stor);
        // IPv6 with EPRT.
        let c6 = "[2001:db8::1]:40000";
        let s6 = "[2001:db8::2]:21";
        feed(&mut t, c6, s6, b"EPRT |2|2001:db8::1|6275|\r\n", 0);
        feed(&mut t, c6, s6, b"RETR x\r\n", 0);
        assert!(feed(&mut t, "[2001:db8::2]:20", "[2001:db8::1]:6275", b"d", 0).is_some());
    }

    #[test]
    fn expectations_expire() {
        let mut t = Expectations::new(ExpectConfig::default());
        feed(
            &mut t,
            S,
            C,
            b"229 Entering Extended Passive Mode (|||6446|)\r\n",
            0,
        );
        feed(&mut t, C, S, b"RETR a\r\n", 0);
        assert!(feed(&mut t, "10.0.0.1:50000", "10.0.0.2:6446", b"x", 31).is_none());
        assert_eq!(t.stats.expired, 1);
        assert!(t.is_empty());
    }

    #[test]
    fn table_is_capped_and_counts_evictions() {
        let cfg = ExpectConfig {
            max_expectations: 8,
            max_announcements: 4,
            ..Default::default()
        };
        let mut t = Expectations::new(cfg);
        // 100 control flows announce and transfer: at most 8 expected.
        for i in 0..100u16 {
            let c = format!("10.0.1.{}:{}", i % 200, 30000 + i);
            let reply = format!("227 ok (10,0,0,2,{},{})\r\n", 20 + i / 256, i % 256);
            feed(&mut t, S, &c, reply.as_bytes(), 0);
            feed(&mut t, &c, S, b"RETR f\r\n", 0);
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
    }
}
