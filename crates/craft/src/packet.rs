//! Ethernet / IPv4 / IPv6 / TCP / UDP / ICMP frame builders with correct
//! checksums.
//!
//! The free functions (`eth_ipv4_tcp`, ...) use [`PacketBuilder::default()`];
//! build a [`PacketBuilder`] to change TTL, TOS, IP id, VLAN tags,
//! fragmentation bits, IPv4 options, TCP options or the TCP window.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::checksum::{fold, pseudo_v4, pseudo_v6, sum};

/// TCP flag bits (the low byte of the flags field).
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const URG: u8 = 0x20;
pub const ECE: u8 = 0x40;
pub const CWR: u8 = 0x80;

/// EtherTypes.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;

/// IP protocol numbers.
pub const IPPROTO_ICMP: u8 = 1;
pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;
pub const IPPROTO_ICMPV6: u8 = 58;

/// Default source / destination MAC addresses (locally administered).
pub const DEFAULT_SRC_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
pub const DEFAULT_DST_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];

/// Header fields that are not part of a packet's identity. Every field is
/// public; the chaining methods are shorthands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketBuilder {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// 802.1Q VLAN ids, outermost first.
    pub vlans: Vec<u16>,
    /// IPv4 TTL / IPv6 hop limit.
    pub ttl: u8,
    /// IPv4 TOS / IPv6 traffic class.
    pub tos: u8,
    pub ip_id: u16,
    pub df: bool,
    pub mf: bool,
    /// Fragment offset in 8-byte units.
    pub frag_offset: u16,
    /// Raw IPv4 options; padded with zeros (EOL) to a multiple of 4.
    pub ip_options: Vec<u8>,
    /// IPv6 flow label (20 bits).
    pub flow_label: u32,
    /// Raw TCP options; padded with zeros (EOL) to a multiple of 4.
    pub tcp_options: Vec<u8>,
    pub window: u16,
    pub urgent: u16,
}

impl Default for PacketBuilder {
    fn default() -> Self {
        PacketBuilder {
            src_mac: DEFAULT_SRC_MAC,
            dst_mac: DEFAULT_DST_MAC,
            vlans: Vec::new(),
            ttl: 64,
            tos: 0,
            ip_id: 1,
            df: false,
            mf: false,
            frag_offset: 0,
            ip_options: Vec::new(),
            flow_label: 0,
            tcp_options: Vec::new(),
            window: 64240,
            urgent: 0,
        }
    }
}

fn pad4(v: &mut Vec<u8>) {
    while v.len() % 4 != 0 {
        v.push(0);
    }
}

impl PacketBuilder {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn macs(mut self, src: [u8; 6], dst: [u8; 6]) -> Self {
        self.src_mac = src;
        self.dst_mac = dst;
        self
    }
    /// Adds an 802.1Q tag (call twice for QinQ; outermost first).
    pub fn vlan(mut self, id: u16) -> Self {
        self.vlans.push(id);
        self
    }
    pub fn ttl(mut self, ttl: u8) -> Self {
        self.ttl = ttl;
        self
    }
    pub fn tos(mut self, tos: u8) -> Self {
        self.tos = tos;
        self
    }
    pub fn ip_id(mut self, id: u16) -> Self {
        self.ip_id = id;
        self
    }
    pub fn df(mut self, df: bool) -> Self {
        self.df = df;
        self
    }
    pub fn mf(mut self, mf: bool) -> Self {
        self.mf = mf;
        self
    }
    /// Fragment offset in 8-byte units.
    pub fn frag_offset(mut self, units: u16) -> Self {
        self.frag_offset = units;
        self
    }
    pub fn ip_options(mut self, opts: &[u8]) -> Self {
        self.ip_options = opts.to_vec();
        self
    }
    pub fn flow_label(mut self, label: u32) -> Self {
        self.flow_label = label & 0xf_ffff;
        self
    }
    /// Replaces the raw TCP options.
    pub fn tcp_options(mut self, opts: &[u8]) -> Self {
        self.tcp_options = opts.to_vec();
        self
    }
    /// Appends a TCP MSS option.
    pub fn mss(mut self, mss: u16) -> Self {
        self.tcp_options.extend_from_slice(&[2, 4]);
        self.tcp_options.extend_from_slice(&mss.to_be_bytes());
        self
    }
    /// Appends NOP + TCP window-scale option.
    pub fn wscale(mut self, shift: u8) -> Self {
        self.tcp_options.extend_from_slice(&[1, 3, 3, shift]);
        self
    }
    /// Appends NOP, NOP + SACK-permitted option.
    pub fn sack_permitted(mut self) -> Self {
        self.tcp_options.extend_from_slice(&[1, 1, 4, 2]);
        self
    }
    pub fn window(mut self, window: u16) -> Self {
        self.window = window;
        self
    }
    pub fn urgent(mut self, urgent: u16) -> Self {
        self.urgent = urgent;
        self
    }

    // ---- layer 2 ----

    /// Ethernet header (+ VLAN tags) followed by `payload`.
    pub fn ethernet(&self, ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = Vec::with_capacity(14 + 4 * self.vlans.len() + payload.len());
        f.extend_from_slice(&self.dst_mac);
        f.extend_from_slice(&self.src_mac);
        for &vid in &self.vlans {
            f.extend_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
            f.extend_from_slice(&(vid & 0x0fff).to_be_bytes());
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    // ---- layer 3 ----

    /// An IPv4 packet (header with checksum + `body` as given).
    pub fn ipv4_packet(&self, src: Ipv4Addr, dst: Ipv4Addr, proto: u8, body: &[u8]) -> Vec<u8> {
        let mut opts = self.ip_options.clone();
        pad4(&mut opts);
        let hlen = 20 + opts.len();
        assert!(hlen <= 60, "IPv4 options longer than 40 bytes");
        let total = hlen + body.len();
        assert!(total <= 65535, "IPv4 packet larger than 65535 bytes");
        let mut p = Vec::with_capacity(total);
        p.push(0x40 | (hlen / 4) as u8);
        p.push(self.tos);
        p.extend_from_slice(&(total as u16).to_be_bytes());
        p.extend_from_slice(&self.ip_id.to_be_bytes());
        let frag =
            (u16::from(self.df) << 14) | (u16::from(self.mf) << 13) | (self.frag_offset & 0x1fff);
        p.extend_from_slice(&frag.to_be_bytes());
        p.push(self.ttl);
        p.push(proto);
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&dst.octets());
        p.extend_from_slice(&opts);
        let c = fold(sum(0, &p[..hlen]));
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p.extend_from_slice(body);
        p
    }

    /// An IPv6 packet (fixed header + `body` as given).
    pub fn ipv6_packet(
        &self,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        next_header: u8,
        body: &[u8],
    ) -> Vec<u8> {
        assert!(body.len() <= 65535, "IPv6 payload larger than 65535 bytes");
        let mut p = Vec::with_capacity(40 + body.len());
        let word = (6u32 << 28) | (u32::from(self.tos) << 20) | (self.flow_label & 0xf_ffff);
        p.extend_from_slice(&word.to_be_bytes());
        p.extend_from_slice(&(body.len() as u16).to_be_bytes());
        p.push(next_header);
        p.push(self.ttl);
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&dst.octets());
        p.extend_from_slice(body);
        p
    }

    /// An IP packet of the family of `src` and `dst` (which must match).
    pub fn ip_packet(&self, src: IpAddr, dst: IpAddr, proto: u8, body: &[u8]) -> Vec<u8> {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => self.ipv4_packet(s, d, proto, body),
            (IpAddr::V6(s), IpAddr::V6(d)) => self.ipv6_packet(s, d, proto, body),
            _ => panic!("mixed IPv4/IPv6 addresses: {src} -> {dst}"),
        }
    }

    /// Full Ethernet frame around an IP packet of the family of `src`/`dst`.
    pub fn eth_ip(&self, src: IpAddr, dst: IpAddr, proto: u8, body: &[u8]) -> Vec<u8> {
        let ethertype = if src.is_ipv4() {
            ETHERTYPE_IPV4
        } else {
            ETHERTYPE_IPV6
        };
        self.ethernet(ethertype, &self.ip_packet(src, dst, proto, body))
    }

    // ---- layer 4 (header + payload, checksummed over the pseudo-header) ----

    /// A TCP segment (header + payload) with its checksum.
    #[allow(clippy::too_many_arguments)]
    pub fn tcp_segment(
        &self,
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut opts = self.tcp_options.clone();
        pad4(&mut opts);
        let hlen = 20 + opts.len();
        assert!(hlen <= 60, "TCP options longer than 40 bytes");
        let mut s = Vec::with_capacity(hlen + payload.len());
        s.extend_from_slice(&sport.to_be_bytes());
        s.extend_from_slice(&dport.to_be_bytes());
        s.extend_from_slice(&seq.to_be_bytes());
        s.extend_from_slice(&ack.to_be_bytes());
        s.push(((hlen / 4) as u8) << 4);
        s.push(flags);
        s.extend_from_slice(&self.window.to_be_bytes());
        s.extend_from_slice(&[0, 0]);
        s.extend_from_slice(&self.urgent.to_be_bytes());
        s.extend_from_slice(&opts);
        s.extend_from_slice(payload);
        let c = l4_checksum(src, dst, IPPROTO_TCP, &s);
        s[16..18].copy_from_slice(&c.to_be_bytes());
        s
    }

    /// A UDP datagram (header + payload) with its checksum.
    pub fn udp_datagram(
        &self,
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let len = 8 + payload.len();
        assert!(len <= 65535, "UDP datagram larger than 65535 bytes");
        let mut d = Vec::with_capacity(len);
        d.extend_from_slice(&sport.to_be_bytes());
        d.extend_from_slice(&dport.to_be_bytes());
        d.extend_from_slice(&(len as u16).to_be_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend_from_slice(payload);
        let mut c = l4_checksum(src, dst, IPPROTO_UDP, &d);
        if c == 0 {
            c = 0xffff; // RFC 768: a computed zero is sent as all ones
        }
        d[6..8].copy_from_slice(&c.to_be_bytes());
        d
    }

    // ---- full frames ----

    #[allow(clippy::too_many_arguments)]
    pub fn ipv4_tcp(
        &self,
        src: Ipv4Addr,
        sport: u16,
        dst: Ipv4Addr,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let (s, d) = (IpAddr::V4(src), IpAddr::V4(dst));
        let seg = self.tcp_segment(s, sport, d, dport, seq, ack, flags, payload);
        self.ethernet(
            ETHERTYPE_IPV4,
            &self.ipv4_packet(src, dst, IPPROTO_TCP, &seg),
        )
    }

    pub fn ipv4_udp(
        &self,
        src: Ipv4Addr,
        sport: u16,
        dst: Ipv4Addr,
        dport: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let dg = self.udp_datagram(IpAddr::V4(src), sport, IpAddr::V4(dst), dport, payload);
        self.ethernet(
            ETHERTYPE_IPV4,
            &self.ipv4_packet(src, dst, IPPROTO_UDP, &dg),
        )
    }

    /// ICMP message: type, code, checksum, then `id`/`seq` (the second header
    /// word; for non-echo types pass 0, 0 or the values that type defines).
    #[allow(clippy::too_many_arguments)]
    pub fn ipv4_icmp(
        &self,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        icmp_type: u8,
        code: u8,
        id: u16,
        seq: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut m = icmp_header(icmp_type, code, id, seq, payload);
        let c = fold(sum(0, &m));
        m[2..4].copy_from_slice(&c.to_be_bytes());
        self.ethernet(
            ETHERTYPE_IPV4,
            &self.ipv4_packet(src, dst, IPPROTO_ICMP, &m),
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub fn ipv6_tcp(
        &self,
        src: Ipv6Addr,
        sport: u16,
        dst: Ipv6Addr,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let (s, d) = (IpAddr::V6(src), IpAddr::V6(dst));
        let seg = self.tcp_segment(s, sport, d, dport, seq, ack, flags, payload);
        self.ethernet(
            ETHERTYPE_IPV6,
            &self.ipv6_packet(src, dst, IPPROTO_TCP, &seg),
        )
    }

    pub fn ipv6_udp(
        &self,
        src: Ipv6Addr,
        sport: u16,
        dst: Ipv6Addr,
        dport: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let dg = self.udp_datagram(IpAddr::V6(src), sport, IpAddr::V6(dst), dport, payload);
        self.ethernet(
            ETHERTYPE_IPV6,
            &self.ipv6_packet(src, dst, IPPROTO_UDP, &dg),
        )
    }

    /// ICMPv6 message (checksum over the IPv6 pseudo-header).
    #[allow(clippy::too_many_arguments)]
    pub fn icmpv6(
        &self,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        icmp_type: u8,
        code: u8,
        id: u16,
        seq: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut m = icmp_header(icmp_type, code, id, seq, payload);
        let c = l4_checksum(IpAddr::V6(src), IpAddr::V6(dst), IPPROTO_ICMPV6, &m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        self.ethernet(
            ETHERTYPE_IPV6,
            &self.ipv6_packet(src, dst, IPPROTO_ICMPV6, &m),
        )
    }

    /// TCP frame of the family of `src`/`dst`.
    #[allow(clippy::too_many_arguments)]
    pub fn tcp(
        &self,
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let seg = self.tcp_segment(src, sport, dst, dport, seq, ack, flags, payload);
        self.eth_ip(src, dst, IPPROTO_TCP, &seg)
    }

    /// UDP frame of the family of `src`/`dst`.
    pub fn udp(&self, src: IpAddr, sport: u16, dst: IpAddr, dport: u16, payload: &[u8]) -> Vec<u8> {
        let dg = self.udp_datagram(src, sport, dst, dport, payload);
        self.eth_ip(src, dst, IPPROTO_UDP, &dg)
    }
}

fn icmp_header(icmp_type: u8, code: u8, id: u16, seq: u16, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + payload.len());
    m.extend_from_slice(&[icmp_type, code, 0, 0]);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(payload);
    m
}

/// Checksum of a TCP/UDP/ICMPv6 message (checksum field zero) over the
/// pseudo-header of `src`/`dst`.
pub fn l4_checksum(src: IpAddr, dst: IpAddr, proto: u8, msg: &[u8]) -> u16 {
    let pseudo = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => pseudo_v4(s, d, proto, msg.len() as u16),
        (IpAddr::V6(s), IpAddr::V6(d)) => pseudo_v6(s, d, proto, msg.len() as u32),
        _ => panic!("mixed IPv4/IPv6 addresses: {src} -> {dst}"),
    };
    fold(sum(pseudo, msg))
}

// ---- free functions with default header fields ----

#[allow(clippy::too_many_arguments)]
pub fn eth_ipv4_tcp(
    src: Ipv4Addr,
    sport: u16,
    dst: Ipv4Addr,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    PacketBuilder::default().ipv4_tcp(src, sport, dst, dport, seq, ack, flags, payload)
}

pub fn eth_ipv4_udp(
    src: Ipv4Addr,
    sport: u16,
    dst: Ipv4Addr,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    PacketBuilder::default().ipv4_udp(src, sport, dst, dport, payload)
}

pub fn eth_ipv4_icmp(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    icmp_type: u8,
    code: u8,
    id: u16,
    seq: u16,
    payload: &[u8],
) -> Vec<u8> {
    PacketBuilder::default().ipv4_icmp(src, dst, icmp_type, code, id, seq, payload)
}

#[allow(clippy::too_many_arguments)]
pub fn eth_ipv6_tcp(
    src: Ipv6Addr,
    sport: u16,
    dst: Ipv6Addr,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    PacketBuilder::default().ipv6_tcp(src, sport, dst, dport, seq, ack, flags, payload)
}

pub fn eth_ipv6_udp(
    src: Ipv6Addr,
    sport: u16,
    dst: Ipv6Addr,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    PacketBuilder::default().ipv6_udp(src, sport, dst, dport, payload)
}

pub fn eth_icmpv6(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    icmp_type: u8,
    code: u8,
    id: u16,
    seq: u16,
    payload: &[u8],
) -> Vec<u8> {
    PacketBuilder::default().icmpv6(src, dst, icmp_type, code, id, seq, payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::checksum;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    #[test]
    fn ipv4_header_checksum_known_vector() {
        // The classic example header 4500 0073 0000 4000 4011 b861 c0a8 0001
        // c0a8 00c7: checksum 0xb861 (hand-computed, and quoted widely).
        let b = PacketBuilder::default().ip_id(0).df(true).ttl(64);
        let p = b.ipv4_packet(
            Ipv4Addr::new(192, 168, 0, 1),
            Ipv4Addr::new(192, 168, 0, 199),
            IPPROTO_UDP,
            &[0u8; 0x73 - 20],
        );
        let expect = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(&p[..20], &expect);
    }

    #[test]
    fn icmp_echo_known_vector() {
        // Echo request id 1 seq 1, no payload: 0800 0000 0001 0001 -> 0xf7fd.
        let f = eth_ipv4_icmp(A, B, 8, 0, 1, 1, &[]);
        assert_eq!(
            &f[34..42],
            &[0x08, 0x00, 0xf7, 0xfd, 0x00, 0x01, 0x00, 0x01]
        );
    }

    #[test]
    fn tcp_udp_checksums_verify() {
        let f = eth_ipv4_tcp(A, 1234, B, 80, 1, 2, SYN | ACK, b"hello");
        assert_eq!(f.len(), 14 + 20 + 20 + 5);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(checksum(&f[14..34]), 0);
        let seg = &f[34..];
        assert_eq!(fold(sum(pseudo_v4(A, B, 6, seg.len() as u16), seg)), 0);
        assert_eq!(seg[13], SYN | ACK);

        let f = eth_ipv4_udp(A, 53, B, 5353, b"odd");
        let dg = &f[34..];
        assert_eq!(&dg[4..6], &11u16.to_be_bytes());
        assert_eq!(fold(sum(pseudo_v4(A, B, 17, dg.len() as u16), dg)), 0);

        let s6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let d6: Ipv6Addr = "2001:db8::2".parse().unwrap();
        for (f, proto) in [
            (eth_ipv6_tcp(s6, 1, d6, 2, 3, 4, ACK, b"x"), 6),
            (eth_ipv6_udp(s6, 1, d6, 2, b"xyz"), 17),
            (eth_icmpv6(s6, d6, 128, 0, 7, 9, b"ping"), 58),
        ] {
            assert_eq!(&f[12..14], &[0x86, 0xdd]);
            assert_eq!(f[14 + 6], proto);
            let body = &f[54..];
            assert_eq!(u16::from_be_bytes([f[18], f[19]]) as usize, body.len());
            assert_eq!(
                fold(sum(pseudo_v6(s6, d6, proto, body.len() as u32), body)),
                0
            );
        }
    }

    #[test]
    fn builder_options() {
        let b = PacketBuilder::new()
            .vlan(100)
            .vlan(200)
            .ttl(3)
            .tos(0x10)
            .ip_id(0x4242)
            .mf(true)
            .frag_offset(5)
            .ip_options(&[0x94, 0x04, 0, 0, 1])
            .mss(1460)
            .wscale(7)
            .window(1024);
        let f = b.ipv4_tcp(A, 1, B, 2, 0, 0, SYN, &[]);
        assert_eq!(
            &f[12..22],
            &[0x81, 0x00, 0x00, 100, 0x81, 0x00, 0x00, 200, 0x08, 0x00]
        );
        let ip = &f[22..];
        assert_eq!(ip[0], 0x47); // 28-byte header: 5 option bytes padded to 8
        assert_eq!(ip[1], 0x10);
        assert_eq!(&ip[4..8], &[0x42, 0x42, 0x20, 0x05]);
        assert_eq!(ip[8], 3);
        assert_eq!(checksum(&ip[..28]), 0);
        let tcp = &ip[28..];
        assert_eq!(tcp[12] >> 4, 7); // 20 + 8 option bytes
        assert_eq!(&tcp[20..28], &[2, 4, 0x05, 0xb4, 1, 3, 3, 7]);
        assert_eq!(&tcp[14..16], &1024u16.to_be_bytes());
        let df = PacketBuilder::new().df(true).ipv4_udp(A, 1, B, 2, b"");
        assert_eq!(&df[20..22], &[0x40, 0x00]);
    }
}
