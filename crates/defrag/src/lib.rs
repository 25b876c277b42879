//! vigil-defrag: IPv4 and IPv6 fragment reassembly.
//!
//! [`Defragmenter`] collects the fragments of each datagram (keyed by
//! addresses, identification, protocol for IPv4, and VLAN), detects
//! overlaps, and when every byte from offset 0 to the end given by the
//! last fragment is present, rebuilds the datagram as a raw IP packet:
//! the first fragment's header (for IPv6 the fixed header and the
//! unfragmentable extension headers, with the fragment header removed),
//! lengths and checksum fixed, then the payload resolved by a
//! target-based [`FragPolicy`].
//!
//! Limits: fragments per datagram, datagrams in progress, and total bytes
//! held; a datagram not completed within the timeout (packet time) is
//! dropped. Everything dropped because of a limit is counted.
//!
//! What it does not do: decode the rebuilt datagram (the caller does, like
//! any packet) or raise decoder events itself; it reports what happened in
//! [`Inserted`] and the caller maps that to Suricata's events
//! (`ipv4.frag_overlap`, `ipv6.frag_overlap`, `ipv4.frag_pkt_too_large`,
//! `ipv4.frag_ignored` ...).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// Target-based overlap policies for fragments, as Suricata's `defrag`
/// and Snort's frag3 name them. For a new fragment `N` overlapping an
/// earlier fragment `O`, the new bytes win when:
///
/// | policy | new data wins when |
/// |---|---|
/// | `first` | never |
/// | `last` | always |
/// | `bsd` (default) | `N` starts before `O` |
/// | `linux` | `N` starts at or before `O` |
/// | `windows` | `N` starts before `O` and ends after it |
/// | `solaris` | `N` starts before `O` and ends at or after its end |
///
/// These reproduce the Novak/Sturges test results (see the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FragPolicy {
    First,
    Last,
    #[default]
    Bsd,
    Linux,
    Windows,
    Solaris,
}

impl FragPolicy {
    pub fn from_name(s: &str) -> Option<FragPolicy> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "first" => FragPolicy::First,
            "last" => FragPolicy::Last,
            "bsd" | "bsd-right" | "macos" | "irix" | "hpux10" | "default" => FragPolicy::Bsd,
            "linux" | "old-linux" => FragPolicy::Linux,
            "windows" | "vista" | "windows2k3" => FragPolicy::Windows,
            "solaris" | "hpux11" => FragPolicy::Solaris,
            _ => return None,
        })
    }

    #[inline]
    fn new_wins(self, ns: u32, ne: u32, os: u32, oe: u32) -> bool {
        match self {
            FragPolicy::First => false,
            FragPolicy::Last => true,
            FragPolicy::Bsd => ns < os,
            FragPolicy::Linux => ns <= os,
            FragPolicy::Windows => ns < os && ne > oe,
            FragPolicy::Solaris => ns < os && ne >= oe,
        }
    }
}

/// Settings (Suricata's `defrag` section).
#[derive(Debug, Clone)]
pub struct DefragConfig {
    pub policy: FragPolicy,
    /// Seconds of packet time a datagram may take to complete.
    pub timeout_secs: u32,
    /// Fragments kept per datagram; more are ignored.
    pub max_frags: usize,
    /// Datagrams in progress at once; the oldest is dropped for a new one.
    pub max_trackers: usize,
    /// Bytes held (fragment data and bookkeeping); the oldest datagrams
    /// are dropped to make room.
    pub memcap: usize,
}

impl Default for DefragConfig {
    fn default() -> Self {
        DefragConfig {
            policy: FragPolicy::Bsd,
            timeout_secs: 60,
            max_frags: 1024,
            max_trackers: 65535,
            memcap: 32 << 20,
        }
    }
}

/// One fragment as the decoder saw it.
#[derive(Debug, Clone, Copy)]
pub struct Fragment<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// IPv4 identification or IPv6 fragment header identification.
    pub id: u32,
    /// IPv4 protocol; for IPv6 the fragment header's next header.
    pub proto: u8,
    /// Innermost VLAN id (0 if none).
    pub vlan: u16,
    /// Offset of the data in the datagram, bytes.
    pub offset: u32,
    pub more: bool,
    /// The frame's bytes before the IP header (link layers): the rebuilt
    /// packet keeps those of the first fragment, as Suricata does.
    pub link: &'a [u8],
    /// IPv4: the IP header with options. IPv6: the fixed header and the
    /// extension headers before the fragment header.
    pub header: &'a [u8],
    /// Fragment data (after the fragment header for IPv6).
    pub data: &'a [u8],
    /// Packet time, nanoseconds.
    pub ts_ns: i64,
}

/// What inserting a fragment did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inserted {
    /// The fragment overlapped data of earlier fragments.
    pub overlap: bool,
    /// The datagram would exceed 65535 bytes: fragment dropped.
    pub too_large: bool,
    /// The fragment was not used (limit reached, malformed).
    pub ignored: bool,
    /// ... because it could not be kept within the memory cap.
    pub memcap: bool,
    /// The datagram is complete and was written to the output buffer.
    pub reassembled: bool,
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefragStats {
    pub fragments: u64,
    pub reassembled: u64,
    pub overlaps: u64,
    pub timeouts: u64,
    /// Datagrams dropped to respect `max_trackers` or `memcap`.
    pub evicted: u64,
    /// Fragments ignored (per-datagram limit, too large, malformed).
    pub ignored: u64,
    pub peak_trackers: u64,
    pub peak_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    src: IpAddr,
    dst: IpAddr,
    id: u32,
    proto: u8,
    vlan: u16,
}

#[derive(Debug, Clone, Copy)]
struct Frag {
    offset: u32,
    len: u32,
    /// Where its bytes are in `Tracker::data`.
    at: u32,
}

#[derive(Debug, Default)]
struct Tracker {
    gen: u64,
    first_ns: i64,
    frags: Vec<Frag>,
    data: Vec<u8>,
    header: Vec<u8>,
    link: Vec<u8>,
    /// Byte offset 0 seen (the header comes from it).
    have_first: bool,
    /// End of the datagram, from the fragment without MF.
    total: Option<u32>,
    /// Merged ranges present.
    ranges: Vec<(u32, u32)>,
    next_header: u8,
    v6: bool,
}

impl Tracker {
    fn cost(&self) -> usize {
        self.data.len() + self.header.len() + self.link.len() + self.frags.len() * 16 + 128
    }

    fn reset(&mut self) {
        self.frags.clear();
        self.data.clear();
        self.header.clear();
        self.link.clear();
        self.ranges.clear();
        self.have_first = false;
        self.total = None;
    }

    fn add_range(&mut self, s: u32, e: u32) {
        let i = self.ranges.partition_point(|r| r.1 < s);
        let mut j = i;
        let (mut ns, mut ne) = (s, e);
        while j < self.ranges.len() && self.ranges[j].0 <= ne {
            ns = ns.min(self.ranges[j].0);
            ne = ne.max(self.ranges[j].1);
            j += 1;
        }
        self.ranges.splice(i..j, std::iter::once((ns, ne)));
    }

    fn complete(&self) -> bool {
        match self.total {
            Some(t) => self.have_first && self.ranges.first() == Some(&(0, t)),
            None => false,
        }
    }
}

/// The fragment reassembler. Owned by one thread; deterministic (packet
/// time only).
#[derive(Debug, Default)]
pub struct Defragmenter {
    cfg: DefragConfig,
    index: HashMap<Key, usize>,
    trackers: Vec<Tracker>,
    keys: Vec<Option<Key>>,
    free: Vec<usize>,
    /// Creation order, for expiry and eviction: (slot, generation).
    order: VecDeque<(usize, u64)>,
    next_gen: u64,
    bytes: usize,
    owner: Vec<u16>,
    pub stats: DefragStats,
}

const NO_OWNER: u16 = u16::MAX;
const IPV4_MAX: usize = 65535;

impl Defragmenter {
    pub fn new(cfg: DefragConfig) -> Self {
        Defragmenter {
            cfg,
            ..Default::default()
        }
    }

    /// Datagrams in progress.
    pub fn in_progress(&self) -> usize {
        self.index.len()
    }

    /// Bytes held now.
    pub fn bytes_held(&self) -> usize {
        self.bytes
    }

    fn drop_slot(&mut self, slot: usize) {
        if let Some(k) = self.keys[slot].take() {
            self.index.remove(&k);
            let t = &mut self.trackers[slot];
            self.bytes -= t.cost();
            t.reset();
            t.data.shrink_to(64 * 1024);
            self.free.push(slot);
        }
    }

    fn live(&self, slot: usize, gen: u64) -> bool {
        self.keys[slot].is_some() && self.trackers[slot].gen == gen
    }

    /// Drops datagrams older than the timeout at `now_ns`.
    pub fn expire(&mut self, now_ns: i64) {
        let limit = i64::from(self.cfg.timeout_secs) * 1_000_000_000;
        while let Some(&(slot, gen)) = self.order.front() {
            if !self.live(slot, gen) {
                self.order.pop_front();
                continue;
            }
            if now_ns.saturating_sub(self.trackers[slot].first_ns) <= limit {
                break;
            }
            self.order.pop_front();
            self.drop_slot(slot);
            self.stats.timeouts += 1;
        }
    }

    fn evict_oldest(&mut self) -> bool {
        while let Some((slot, gen)) = self.order.pop_front() {
            if self.live(slot, gen) {
                self.drop_slot(slot);
                self.stats.evicted += 1;
                return true;
            }
        }
        false
    }

    /// Adds a fragment. When it completes its datagram, the rebuilt packet
    /// (the first fragment's link layers, then the IP datagram) is written
    /// to `out` (cleared first) and `reassembled` is set.
    pub fn insert(&mut self, f: &Fragment<'_>, out: &mut Vec<u8>) -> Inserted {
        let mut r = Inserted::default();
        self.stats.fragments += 1;
        self.expire(f.ts_ns);
        let v6 = f.src.is_ipv6();
        let len = f.data.len() as u32;
        let end = f.offset as usize + f.data.len();
        let too_large = if v6 {
            end > IPV4_MAX
        } else {
            end + f.header.len() > IPV4_MAX
        };
        if too_large {
            r.too_large = true;
            r.ignored = true;
            self.stats.ignored += 1;
            return r;
        }
        if f.more && (len % 8 != 0 || len == 0) {
            r.ignored = true;
            self.stats.ignored += 1;
            return r;
        }
        let key = Key {
            src: f.src,
            dst: f.dst,
            id: f.id,
            proto: if v6 { 0 } else { f.proto },
            vlan: f.vlan,
        };
        let slot = match self.index.get(&key) {
            Some(&s) => s,
            None => {
                while self.index.len() >= self.cfg.max_trackers.max(1) {
                    if !self.evict_oldest() {
                        break;
                    }
                }
                let slot = match self.free.pop() {
                    Some(s) => s,
                    None => {
                        self.trackers.push(Tracker::default());
                        self.keys.push(None);
                        self.trackers.len() - 1
                    }
                };
                self.next_gen += 1;
                let t = &mut self.trackers[slot];
                t.reset();
                t.gen = self.next_gen;
                t.first_ns = f.ts_ns;
                t.v6 = v6;
                self.bytes += t.cost();
                self.keys[slot] = Some(key);
                self.index.insert(key, slot);
                self.order.push_back((slot, self.next_gen));
                self.stats.peak_trackers = self.stats.peak_trackers.max(self.index.len() as u64);
                slot
            }
        };
        if self.trackers[slot].frags.len() >= self.cfg.max_frags {
            r.ignored = true;
            self.stats.ignored += 1;
            return r;
        }
        // Make room within the memory cap, oldest datagrams first (never
        // the one being added to).
        let need = f.data.len()
            + 16
            + if f.offset == 0 {
                f.header.len() + f.link.len()
            } else {
                0
            };
        while self.bytes + need > self.cfg.memcap {
            match self.order.front().copied() {
                Some((s, g)) if s == slot && self.live(s, g) => {
                    r.ignored = true;
                    r.memcap = true;
                    self.stats.ignored += 1;
                    return r;
                }
                Some(_) => {
                    if !self.evict_oldest() {
                        break;
                    }
                }
                None => break,
            }
        }
        let t = &mut self.trackers[slot];
        let before = t.cost();
        let (s, e) = (f.offset, f.offset + len);
        if t.frags.iter().any(|o| o.offset < e && s < o.offset + o.len) {
            r.overlap = true;
            self.stats.overlaps += 1;
        }
        if f.offset == 0 && !t.have_first {
            t.have_first = true;
            t.header.extend_from_slice(f.header);
            t.link.extend_from_slice(f.link);
            t.next_header = f.proto;
        }
        if !f.more && t.total.is_none() {
            t.total = Some(e);
        }
        let at = t.data.len() as u32;
        t.data.extend_from_slice(f.data);
        t.frags.push(Frag { offset: s, len, at });
        if len > 0 {
            t.add_range(s, e);
        }
        let after = t.cost();
        self.bytes = self.bytes + after - before;
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.bytes as u64);
        if t.complete() {
            let ok = self.rebuild(slot, out);
            self.drop_slot(slot);
            if ok {
                r.reassembled = true;
                self.stats.reassembled += 1;
            } else {
                r.too_large = true;
                self.stats.ignored += 1;
            }
        }
        r
    }

    fn rebuild(&mut self, slot: usize, out: &mut Vec<u8>) -> bool {
        let policy = self.cfg.policy;
        let t = &self.trackers[slot];
        let Some(total) = t.total else { return false };
        let total = total as usize;
        let hlen = t.header.len();
        if (!t.v6 && hlen + total > IPV4_MAX)
            || (t.v6 && (hlen < 40 || hlen - 40 + total > IPV4_MAX))
        {
            return false;
        }
        out.clear();
        out.extend_from_slice(&t.link);
        let base = t.link.len();
        out.extend_from_slice(&t.header);
        out.resize(base + hlen + total, 0);
        self.owner.clear();
        self.owner.resize(total, NO_OWNER);
        for (i, fr) in t.frags.iter().enumerate() {
            let s = fr.offset as usize;
            let e = (s + fr.len as usize).min(total);
            for b in s..e {
                let o = self.owner[b];
                let win = o == NO_OWNER || {
                    let of = &t.frags[o as usize];
                    policy.new_wins(fr.offset, fr.offset + fr.len, of.offset, of.offset + of.len)
                };
                if win {
                    out[base + hlen + b] = t.data[fr.at as usize + (b - s)];
                    self.owner[b] = i.min(usize::from(NO_OWNER - 1)) as u16;
                }
            }
        }
        let ip = &mut out[base..];
        if t.v6 {
            let plen = (hlen - 40 + total) as u16;
            ip[4..6].copy_from_slice(&plen.to_be_bytes());
            // Point the header before the fragment header at what followed it.
            let mut field = 6;
            let mut nh = ip[6];
            let mut pos = 40;
            while pos < hlen {
                let l = match nh {
                    51 => (usize::from(ip.get(pos + 1).copied().unwrap_or(0)) + 2) * 4,
                    _ => (usize::from(ip.get(pos + 1).copied().unwrap_or(0)) + 1) * 8,
                };
                field = pos;
                nh = ip[pos];
                pos += l;
            }
            ip[field] = t.next_header;
        } else {
            let tl = (hlen + total) as u16;
            ip[2..4].copy_from_slice(&tl.to_be_bytes());
            ip[6] = 0;
            ip[7] = 0;
            ip[10] = 0;
            ip[11] = 0;
            let c = ipv4_checksum(&ip[..hlen]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
        }
        true
    }
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in h.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from(c[0]) << 8
        };
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const DST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    fn v4_header() -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, 1, 0, 0];
        h.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        h
    }

    fn frag<'a>(h: &'a [u8], off: u32, more: bool, data: &'a [u8]) -> Fragment<'a> {
        Fragment {
            src: SRC,
            dst: DST,
            id: 1,
            proto: 1,
            vlan: 0,
            offset: off,
            more,
            link: &[],
            header: h,
            data,
            ts_ns: 0,
        }
    }

    /// The Novak/Sturges fragment test as Suricata's `defrag.c` tests lay
    /// it out: originals A..I, then overlapping J..Q (the last one ends
    /// the datagram).
    fn novak(policy: FragPolicy) -> (String, u64) {
        let h = v4_header();
        let spec: &[(u32, char, u32)] = &[
            (0, 'A', 24),
            (32, 'B', 16),
            (48, 'C', 24),
            (80, 'D', 8),
            (104, 'E', 16),
            (120, 'F', 24),
            (144, 'G', 16),
            (160, 'H', 16),
            (176, 'I', 8),
            (8, 'J', 32),
            (48, 'K', 24),
            (72, 'L', 24),
            (96, 'M', 24),
            (128, 'N', 8),
            (152, 'O', 8),
            (160, 'P', 8),
            (176, 'Q', 16),
        ];
        let mut d = Defragmenter::new(DefragConfig {
            policy,
            ..Default::default()
        });
        let mut out = Vec::new();
        let mut done = None;
        for (i, &(off, c, len)) in spec.iter().enumerate() {
            let data = vec![c as u8; len as usize];
            let r = d.insert(&frag(&h, off, i != spec.len() - 1, &data), &mut out);
            if r.reassembled {
                done = Some(String::from_utf8(out[20..].to_vec()).unwrap());
            }
        }
        assert_eq!(d.in_progress(), 0);
        assert_eq!(d.bytes_held(), 0);
        (done.expect("reassembled"), d.stats.overlaps)
    }

    fn expand(s: &str) -> String {
        s.chars()
            .flat_map(|c| std::iter::repeat(c).take(8))
            .collect()
    }

    #[test]
    fn novak_bsd() {
        let (s, overlaps) = novak(FragPolicy::Bsd);
        assert_eq!(s, expand("AAAJJBCCCLLLMMMFFFGGHHIQ"));
        assert_eq!(overlaps, 8);
    }

    #[test]
    fn novak_linux() {
        assert_eq!(
            novak(FragPolicy::Linux).0,
            expand("AAAJJBKKKLLLMMMFFFGGPHQQ")
        );
    }

    #[test]
    fn novak_windows() {
        assert_eq!(
            novak(FragPolicy::Windows).0,
            expand("AAAJBBCCCLLLMEEFFFGGHHIQ")
        );
    }

    #[test]
    fn novak_solaris() {
        assert_eq!(
            novak(FragPolicy::Solaris).0,
            expand("AAAJBBCCCLLLMMMFFFGGHHIQ")
        );
    }

    #[test]
    fn novak_first() {
        assert_eq!(
            novak(FragPolicy::First).0,
            expand("AAAJBBCCCLDLMEEFFFGGHHIQ")
        );
    }

    #[test]
    fn novak_last() {
        assert_eq!(
            novak(FragPolicy::Last).0,
            expand("AJJJJBKKKLLLMMMFNFGOPHQQ")
        );
    }

    #[test]
    fn out_of_order_rebuilds_header_and_checksum() {
        let h = v4_header();
        let mut d = Defragmenter::default();
        let mut out = Vec::new();
        assert!(
            !d.insert(&frag(&h, 8, false, b"world"), &mut out)
                .reassembled
        );
        let r = d.insert(&frag(&h, 0, true, b"hello, w"), &mut out);
        assert!(r.reassembled && !r.overlap);
        assert_eq!(&out[20..], b"hello, wworld");
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 33);
        assert_eq!(&out[6..8], &[0, 0]);
        assert_eq!(ipv4_checksum(&out[..20]), 0);
    }

    #[test]
    fn ipv6_fragment_header_is_removed() {
        let src: IpAddr = "2001:db8::1".parse().unwrap();
        let dst: IpAddr = "2001:db8::2".parse().unwrap();
        // Fixed header (next header 0 = hop-by-hop) + 8-byte hop-by-hop
        // whose next header is the fragment header (44).
        let mut h = vec![0x60, 0, 0, 0, 0, 0, 0, 64];
        h.extend_from_slice(&[0; 32]);
        h.extend_from_slice(&[44, 0, 1, 4, 0, 0, 0, 0]);
        let mk = |off, more, data| Fragment {
            src,
            dst,
            id: 7,
            proto: 58,
            vlan: 0,
            offset: off,
            more,
            link: &[],
            header: &h,
            data,
            ts_ns: 0,
        };
        let mut d = Defragmenter::default();
        let mut out = Vec::new();
        d.insert(&mk(0, true, &[1u8; 8]), &mut out);
        let r = d.insert(&mk(8, false, &[2u8; 4]), &mut out);
        assert!(r.reassembled);
        assert_eq!(out.len(), 48 + 12);
        assert_eq!(u16::from_be_bytes([out[4], out[5]]), 8 + 12);
        assert_eq!(out[6], 0);
        assert_eq!(out[40], 58);
    }

    #[test]
    fn duplicate_fragment_is_an_overlap() {
        let h = v4_header();
        let mut d = Defragmenter::default();
        let mut out = Vec::new();
        d.insert(&frag(&h, 0, true, &[1; 8]), &mut out);
        let r = d.insert(&frag(&h, 0, true, &[1; 8]), &mut out);
        assert!(r.overlap);
    }

    #[test]
    fn timeout_drops_incomplete_datagrams() {
        let h = v4_header();
        let mut d = Defragmenter::default();
        let mut out = Vec::new();
        d.insert(&frag(&h, 0, true, &[1; 8]), &mut out);
        assert_eq!(d.in_progress(), 1);
        d.expire(61_000_000_000);
        assert_eq!(d.in_progress(), 0);
        assert_eq!(d.stats.timeouts, 1);
        assert_eq!(d.bytes_held(), 0);
    }

    #[test]
    fn limits_hold_under_a_flood() {
        let h = v4_header();
        let mut d = Defragmenter::new(DefragConfig {
            max_trackers: 100,
            memcap: 64 * 1024,
            max_frags: 4,
            ..Default::default()
        });
        let mut out = Vec::new();
        let data = [0u8; 512];
        for i in 0..10_000u32 {
            let mut f = frag(&h, (i % 8) * 512, true, &data);
            f.id = i / 8;
            d.insert(&f, &mut out);
            assert!(d.in_progress() <= 100);
            assert!(d.bytes_held() <= 64 * 1024);
        }
        assert!(d.stats.evicted > 0);
        assert!(d.stats.ignored > 0);
    }

    /// A datagram that alone outgrows the memory cap: its fragments are
    /// ignored as memcap refusals (what `defrag.memcap-policy` acts on).
    #[test]
    fn a_fragment_refused_by_the_memcap_says_so() {
        let h = v4_header();
        let mut d = Defragmenter::new(DefragConfig {
            memcap: 2048,
            ..Default::default()
        });
        let mut out = Vec::new();
        let data = [0u8; 1024];
        let r = d.insert(&frag(&h, 0, true, &data), &mut out);
        assert!(!r.ignored && !r.memcap);
        let r = d.insert(&frag(&h, 1024, true, &data), &mut out);
        assert!(r.ignored && r.memcap, "{r:?}");
        // Another limit (too large) is not a memcap refusal.
        let r = d.insert(&frag(&h, 65528, false, &[0; 16]), &mut out);
        assert!(!r.memcap);
    }

    #[test]
    fn too_large_is_refused() {
        let h = v4_header();
        let mut d = Defragmenter::default();
        let mut out = Vec::new();
        let r = d.insert(&frag(&h, 65528, false, &[0; 16]), &mut out);
        assert!(r.too_large);
    }

    proptest::proptest! {
        /// Arbitrary fragments never panic, stay within the caps, and a
        /// rebuilt datagram is exactly as long as its header plus data.
        #[test]
        fn arbitrary_fragments(
            frags in proptest::collection::vec(
                (0u32..64, 0u32..9000, proptest::bool::ANY, 0usize..1500, 0u8..4),
                1..100),
        ) {
            let h = v4_header();
            let mut d = Defragmenter::new(DefragConfig {
                memcap: 32 * 1024,
                max_trackers: 8,
                max_frags: 16,
                ..Default::default()
            });
            let mut out = Vec::new();
            for (i, &(id, off, more, len, policy)) in frags.iter().enumerate() {
                d.cfg.policy = [FragPolicy::Bsd, FragPolicy::Linux, FragPolicy::First, FragPolicy::Solaris][policy as usize];
                let data = vec![i as u8; len];
                let mut f = frag(&h, off & !7, more, &data);
                f.id = id % 4;
                f.ts_ns = i as i64 * 1_000_000_000;
                let r = d.insert(&f, &mut out);
                proptest::prop_assert!(d.bytes_held() <= 32 * 1024);
                proptest::prop_assert!(d.in_progress() <= 8);
                if r.reassembled {
                    let tl = u16::from_be_bytes([out[2], out[3]]) as usize;
                    proptest::prop_assert_eq!(tl, out.len());
                }
            }
        }
    }
}
