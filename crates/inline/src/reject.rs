//! The answers of a `reject` rule (Suricata's `reject`, `rejectsrc`,
//! `rejectdst`, `rejectboth`): the packet is dropped and the side(s) told
//! at once, a TCP reset for TCP, an ICMP port unreachable otherwise, so
//! a client sees a refusal rather than a time-out. Packets are built with
//! the `etherparse` crate (headers and checksums) and sent through a raw
//! IP socket (`socket2`), which needs CAP_NET_RAW.

use std::io;
use std::net::{IpAddr, SocketAddr};

use etherparse::PacketBuilder;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// What the answers are built from: the dropped packet's addressing and
/// TCP numbers, and the packet itself (quoted in ICMP errors).
#[derive(Debug, Clone, Copy)]
pub struct RejectInfo<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// IP protocol number (6 for TCP).
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
    /// TCP only: sequence and acknowledgement numbers, whether ACK, SYN
    /// and FIN were set, and the payload length.
    pub seq: u32,
    pub ack: u32,
    pub ack_flag: bool,
    pub syn: bool,
    pub fin: bool,
    pub payload_len: u32,
    /// The whole IP packet.
    pub packet: &'a [u8],
}

/// The IP packets answering a rejected packet, with where each goes.
/// `to_src` answers its sender, `to_dst` its receiver (TCP only: an ICMP
/// error goes to the sender alone).
pub fn reject_answers(r: &RejectInfo<'_>, to_src: bool, to_dst: bool) -> Vec<(IpAddr, Vec<u8>)> {
    let mut out = Vec::new();
    if r.proto == 6 {
        if to_src {
            // As from the receiver: RST|ACK acknowledging what was sent.
            let seq = if r.ack_flag { r.ack } else { 0 };
            let ack = r
                .seq
                .wrapping_add(r.payload_len)
                .wrapping_add(u32::from(r.syn))
                .wrapping_add(u32::from(r.fin));
            if let Some(p) = tcp_rst(r.dst, r.src, r.dport, r.sport, seq, Some(ack)) {
                out.push((r.src, p));
            }
        }
        if to_dst {
            // As from the sender, at the sequence the receiver expects
            // (the dropped packet's).
            if let Some(p) = tcp_rst(r.src, r.dst, r.sport, r.dport, r.seq, None) {
                out.push((r.dst, p));
            }
        }
    } else if to_src {
        if let Some(p) = port_unreachable(r) {
            out.push((r.src, p));
        }
    }
    out
}

fn tcp_rst(
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    dport: u16,
    seq: u32,
    ack: Option<u32>,
) -> Option<Vec<u8>> {
    let ip = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => PacketBuilder::ipv4(s.octets(), d.octets(), 64),
        (IpAddr::V6(s), IpAddr::V6(d)) => PacketBuilder::ipv6(s.octets(), d.octets(), 64),
        _ => return None,
    };
    let tcp = ip.tcp(sport, dport, seq, 0).rst();
    let tcp = match ack {
        Some(a) => tcp.ack(a),
        None => tcp,
    };
    let mut out = Vec::with_capacity(60);
    tcp.write(&mut out, &[]).ok()?;
    Some(out)
}

/// ICMP (v4 or v6) destination unreachable, port, quoting the start of
/// the rejected packet (RFC 792: header + 8 bytes; RFC 4443: as much as
/// fits in the minimum MTU).
fn port_unreachable(r: &RejectInfo<'_>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match (r.src, r.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let ihl = usize::from(r.packet.first()? & 0x0f) * 4;
            let quote = r.packet.get(..(ihl + 8).min(r.packet.len()))?;
            PacketBuilder::ipv4(d.octets(), s.octets(), 64)
                .icmpv4(etherparse::Icmpv4Type::DestinationUnreachable(
                    etherparse::icmpv4::DestUnreachableHeader::Port,
                ))
                .write(&mut out, quote)
                .ok()?;
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let quote = r.packet.get(..r.packet.len().min(1232 - 48))?;
            PacketBuilder::ipv6(d.octets(), s.octets(), 64)
                .icmpv6(etherparse::Icmpv6Type::DestinationUnreachable(
                    etherparse::icmpv6::DestUnreachableCode::Port,
                ))
                .write(&mut out, quote)
                .ok()?;
        }
        _ => return None,
    }
    Some(out)
}

/// The length of an Ethernet frame's link header (the MAC addresses, any
/// 802.1Q/802.1ad tags, the EtherType) when it carries IPv4 or IPv6, so
/// that `&frame[len..]` is the IP packet; `None` for anything else (ARP,
/// MPLS, PPPoE, a frame too short).
pub fn ethernet_ip_offset(frame: &[u8]) -> Option<usize> {
    let mut off = 12;
    loop {
        let t = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
        match t {
            // 802.1Q, 802.1ad, and the old QinQ EtherTypes: a tag of 4.
            0x8100 | 0x88a8 | 0x9100 => off += 4,
            0x0800 | 0x86dd if frame.len() > off + 2 => return Some(off + 2),
            _ => return None,
        }
    }
}

/// An IP answer of [`reject_answers`] framed for an inline bridge, from
/// the Ethernet frame that was rejected: its link header with the VLAN
/// tags kept, the EtherType of the answer's IP version, and the MAC
/// addresses swapped for the answer to the sender (`to_src`: it goes back
/// out of the interface the frame came in on) or as they were for the
/// answer to the receiver (it goes out of the peer interface, as the
/// frame would have). `None` when the frame is not Ethernet carrying IP
/// or the answer is not an IP packet.
pub fn ethernet_answer(original: &[u8], to_src: bool, answer: &[u8]) -> Option<Vec<u8>> {
    let l2 = ethernet_ip_offset(original)?;
    let ethertype: u16 = match answer.first()? >> 4 {
        4 => 0x0800,
        6 => 0x86dd,
        _ => return None,
    };
    let mut out = Vec::with_capacity(l2 + answer.len());
    if to_src {
        out.extend_from_slice(&original[6..12]);
        out.extend_from_slice(&original[0..6]);
    } else {
        out.extend_from_slice(&original[0..12]);
    }
    out.extend_from_slice(&original[12..l2 - 2]);
    out.extend_from_slice(&ethertype.to_be_bytes());
    out.extend_from_slice(answer);
    if out.len() < 60 {
        out.resize(60, 0);
    }
    Some(out)
}

/// Raw IP sockets (IPv4 and IPv6, header included) for the answers,
/// opened in the network namespace of the thread that creates them.
pub struct RawSender {
    v4: Socket,
    v6: Option<Socket>,
}

impl RawSender {
    pub fn new() -> io::Result<RawSender> {
        // IPPROTO_RAW: the packet carries its own IP header (IPv6 too).
        let raw = Protocol::from(libc::IPPROTO_RAW);
        let v4 = Socket::new(Domain::IPV4, Type::RAW, Some(raw))?;
        // IPv6 may be off in this namespace; reject answers then go to
        // IPv4 peers only.
        let v6 = Socket::new(Domain::IPV6, Type::RAW, Some(raw)).ok();
        Ok(RawSender { v4, v6 })
    }

    /// Sends one IP packet (its own header included) towards `to`.
    pub fn send(&self, to: IpAddr, packet: &[u8]) -> io::Result<()> {
        let addr = SockAddr::from(SocketAddr::new(to, 0));
        let sock = match to {
            IpAddr::V4(_) => &self.v4,
            IpAddr::V6(_) => self
                .v6
                .as_ref()
                .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "no IPv6 raw socket"))?,
        };
        sock.send_to(packet, &addr).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(proto: u8, packet: &[u8]) -> RejectInfo<'_> {
        RejectInfo {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            proto,
            sport: 40000,
            dport: 80,
            seq: 1000,
            ack: 5000,
            ack_flag: true,
            syn: false,
            fin: false,
            payload_len: 20,
            packet,
        }
    }

    #[test]
    fn a_tcp_reject_answers_each_side_with_a_valid_reset() {
        let r = info(6, &[]);
        let a = reject_answers(&r, true, true);
        assert_eq!(a.len(), 2);
        let (to, p) = &a[0];
        assert_eq!(*to, r.src);
        let h = etherparse::PacketHeaders::from_ip_slice(p).unwrap();
        let Some(etherparse::TransportHeader::Tcp(t)) = h.transport else {
            panic!("not TCP")
        };
        assert!(t.rst && t.ack);
        assert_eq!((t.source_port, t.destination_port), (80, 40000));
        assert_eq!(t.sequence_number, 5000);
        assert_eq!(t.acknowledgment_number, 1020);
        // The checksum verifies.
        let Some(etherparse::NetHeaders::Ipv4(ip, _)) = h.net else {
            panic!("not IPv4")
        };
        assert_eq!(ip.source, [10, 0, 0, 2]);
        assert_eq!(t.calc_checksum_ipv4(&ip, &[]).unwrap(), t.checksum);
        let (to, p) = &a[1];
        assert_eq!(*to, r.dst);
        let h = etherparse::PacketHeaders::from_ip_slice(p).unwrap();
        let Some(etherparse::TransportHeader::Tcp(t)) = h.transport else {
            panic!("not TCP")
        };
        assert!(t.rst && !t.ack);
        assert_eq!(t.sequence_number, 1000);
        // Only the source asked: one answer.
        assert_eq!(reject_answers(&r, true, false).len(), 1);
    }

    #[test]
    fn a_udp_reject_answers_the_sender_with_port_unreachable_quoting_it() {
        let udp = PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(5000, 53);
        let mut pkt = Vec::new();
        udp.write(&mut pkt, b"query-bytes").unwrap();
        let r = info(17, &pkt);
        let a = reject_answers(&r, true, true);
        assert_eq!(a.len(), 1, "ICMP goes to the sender only");
        let (to, p) = &a[0];
        assert_eq!(*to, r.src);
        let h = etherparse::PacketHeaders::from_ip_slice(p).unwrap();
        let Some(etherparse::TransportHeader::Icmpv4(i)) = h.transport else {
            panic!("not ICMP")
        };
        assert!(matches!(
            i.icmp_type,
            etherparse::Icmpv4Type::DestinationUnreachable(
                etherparse::icmpv4::DestUnreachableHeader::Port
            )
        ));
        // IP header (20) + 8 bytes of UDP quoted.
        assert_eq!(h.payload.slice(), &pkt[..28]);
    }

    #[test]
    fn mixed_families_and_empty_packets_give_no_answer_not_a_panic() {
        let mut r = info(17, &[]);
        assert!(reject_answers(&r, true, true).is_empty());
        r.dst = "::1".parse().unwrap();
        r.proto = 6;
        assert!(reject_answers(&r, true, true).is_empty());
    }

    const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xbb];
    const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xaa];

    fn frame(tags: &[[u8; 4]], ethertype: [u8; 2], ip: &[u8]) -> Vec<u8> {
        let mut f = DST_MAC.to_vec();
        f.extend_from_slice(&SRC_MAC);
        for t in tags {
            f.extend_from_slice(t);
        }
        f.extend_from_slice(&ethertype);
        f.extend_from_slice(ip);
        f
    }

    #[test]
    fn the_ip_offset_of_an_ethernet_frame_skips_vlan_tags() {
        let ip = [0x45u8; 20];
        assert_eq!(ethernet_ip_offset(&frame(&[], [0x08, 0x00], &ip)), Some(14));
        assert_eq!(ethernet_ip_offset(&frame(&[], [0x86, 0xdd], &ip)), Some(14));
        let q = [0x81, 0x00, 0x00, 0x0a];
        let ad = [0x88, 0xa8, 0x00, 0x14];
        assert_eq!(
            ethernet_ip_offset(&frame(&[q], [0x08, 0x00], &ip)),
            Some(18)
        );
        assert_eq!(
            ethernet_ip_offset(&frame(&[ad, q], [0x08, 0x00], &ip)),
            Some(22)
        );
        // ARP, MPLS, no payload, truncated: not IP.
        assert_eq!(ethernet_ip_offset(&frame(&[], [0x08, 0x06], &ip)), None);
        assert_eq!(ethernet_ip_offset(&frame(&[], [0x88, 0x47], &ip)), None);
        assert_eq!(ethernet_ip_offset(&frame(&[], [0x08, 0x00], &[])), None);
        assert_eq!(ethernet_ip_offset(&DST_MAC), None);
        assert_eq!(ethernet_ip_offset(&frame(&[q], [0x81, 0x00], &[])), None);
    }

    #[test]
    fn reject_answers_are_framed_byte_by_byte() {
        let answer = [0x45, 0x00, 0x00, 0x28, 0xde, 0xad];
        let orig = frame(&[], [0x08, 0x00], &[0x45; 40]);
        // To the sender: MACs swapped, IPv4 EtherType, the answer after.
        let to_src = ethernet_answer(&orig, true, &answer).unwrap();
        let mut want = SRC_MAC.to_vec();
        want.extend_from_slice(&DST_MAC);
        want.extend_from_slice(&[0x08, 0x00]);
        want.extend_from_slice(&answer);
        // Padded to 60 bytes.
        want.resize(60, 0);
        assert_eq!(to_src, want);
        // To the receiver: the original MACs.
        let to_dst = ethernet_answer(&orig, false, &answer).unwrap();
        let mut want = DST_MAC.to_vec();
        want.extend_from_slice(&SRC_MAC);
        want.extend_from_slice(&[0x08, 0x00]);
        want.extend_from_slice(&answer);
        want.resize(60, 0);
        assert_eq!(to_dst, want);
        // A VLAN tag is kept; the EtherType follows the answer's version.
        let tagged = frame(&[[0x81, 0x00, 0x20, 0x07]], [0x86, 0xdd], &[0x60; 40]);
        let v6 = [0x60, 0x00, 0x00, 0x00];
        let got = ethernet_answer(&tagged, true, &v6).unwrap();
        assert_eq!(got.len(), 60);
        assert!(got[22..].iter().all(|&b| b == 0));
        assert_eq!(
            got[..22],
            [
                0x02, 0, 0, 0, 0, 0xaa, 0x02, 0, 0, 0, 0, 0xbb, 0x81, 0x00, 0x20, 0x07, 0x86, 0xdd,
                0x60, 0x00, 0x00, 0x00
            ]
        );
        // A long answer is not padded.
        let long = [0x45; 100];
        assert_eq!(ethernet_answer(&orig, false, &long).unwrap().len(), 114);
        // Not IP in, or not IP out: nothing.
        assert_eq!(
            ethernet_answer(&frame(&[], [0x08, 0x06], &[0; 28]), true, &answer),
            None
        );
        assert_eq!(ethernet_answer(&orig, true, &[0x10, 0]), None);
        assert_eq!(ethernet_answer(&orig, true, &[]), None);
    }

    #[test]
    fn a_framed_tcp_reset_decodes_as_the_answer_to_the_sender() {
        let tcp = PacketBuilder::ethernet2(SRC_MAC, DST_MAC)
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 80, 1000, 512)
            .ack(5000)
            .psh();
        let mut orig = Vec::new();
        tcp.write(&mut orig, b"GET /ATTACK HTTP/1.1").unwrap();
        let ip = &orig[ethernet_ip_offset(&orig).unwrap()..];
        let r = RejectInfo {
            payload_len: 20,
            ..info(6, ip)
        };
        let (to, answer) = reject_answers(&r, true, false).remove(0);
        assert_eq!(to, r.src);
        let framed = ethernet_answer(&orig, true, &answer).unwrap();
        let h = etherparse::PacketHeaders::from_ethernet_slice(&framed).unwrap();
        let Some(etherparse::LinkHeader::Ethernet2(e)) = h.link else {
            panic!("not Ethernet")
        };
        assert_eq!((e.source, e.destination), (DST_MAC, SRC_MAC));
        let Some(etherparse::TransportHeader::Tcp(t)) = h.transport else {
            panic!("not TCP")
        };
        assert!(t.rst);
        assert_eq!((t.source_port, t.destination_port), (80, 40000));
    }
}
