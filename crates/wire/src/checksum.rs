//! Checksum validation: TCP and UDP over IPv4 and IPv6 for Suricata's
//! checksum modes (`-k`), and every checksum a `*-csum` rule keyword
//! names (IPv4 header, TCP, UDP, ICMPv4, ICMPv6). The decoder itself
//! never checks; the worker and detection ask.
//!
//! A checksum that cannot be judged (a truncated frame, a fragment, an
//! IPv4 UDP datagram without a checksum) is reported as `None`, never as
//! invalid.

use std::net::IpAddr;

use crate::{Packet, L4};

/// One's complement sum of `data` added to `acc` (RFC 1071), unfolded.
fn sum(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        if let [a, b] = c {
            acc += u64::from(u16::from_be_bytes([*a, *b]));
        }
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

fn pseudo_header(src: IpAddr, dst: IpAddr, proto: u8, len: usize) -> u64 {
    let mut acc = 0;
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            acc = sum(acc, &s.octets());
            acc = sum(acc, &d.octets());
        }
        (s, d) => {
            let b = |a: IpAddr| match a {
                IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
                IpAddr::V6(v) => v.octets(),
            };
            acc = sum(acc, &b(s));
            acc = sum(acc, &b(d));
        }
    }
    acc + u64::from(proto) + len as u64
}

impl Packet<'_> {
    /// Whether the TCP or UDP checksum is right: `Some(false)` only when
    /// the whole segment was captured and its checksum is wrong.
    pub fn transport_checksum_ok(&self) -> Option<bool> {
        let ip = self.ip.as_ref()?;
        if ip.fragment.is_some() {
            return None;
        }
        let proto = match self.l4 {
            L4::Tcp(_) => 6,
            L4::Udp(_) => 17,
            _ => return None,
        };
        // The segment's extent from the IP length, not from what was
        // captured: a frame cut short cannot be judged.
        let end = self.ip_payload_end()?;
        let start = self.l4_header.start;
        let seg = self.data.get(start..end)?;
        if proto == 17 && ip.version == 4 && seg.get(6..8) == Some(&[0, 0]) {
            // IPv4 UDP without a checksum.
            return None;
        }
        let acc = sum(pseudo_header(ip.src, ip.dst, proto, seg.len()), seg);
        Some(fold(acc) == 0xffff)
    }
}

impl Packet<'_> {
    /// Whether the IPv4 header checksum is right (`None`: not IPv4, or
    /// the header was not all captured).
    pub fn ipv4_checksum_ok(&self) -> Option<bool> {
        let ip = self.ip.as_ref()?;
        if ip.version != 4 {
            return None;
        }
        let h = self.data.get(ip.header.clone())?;
        Some(fold(sum(0, h)) == 0xffff)
    }

    /// Whether the ICMPv4, IGMP or ICMPv6 checksum is right (ICMPv6 with
    /// its pseudo header); `None` when the message was not all captured
    /// or the packet is a fragment.
    pub fn icmp_checksum_ok(&self) -> Option<bool> {
        let ip = self.ip.as_ref()?;
        if ip.fragment.is_some() {
            return None;
        }
        let start = self.l4_header.start;
        let end = self.ip_payload_end()?;
        let msg = self.data.get(start..end)?;
        let acc = match self.l4 {
            L4::Icmpv4(_) | L4::Igmp(_) => sum(0, msg),
            L4::Icmpv6(_) => sum(pseudo_header(ip.src, ip.dst, 58, msg.len()), msg),
            _ => return None,
        };
        Some(fold(acc) == 0xffff)
    }

    /// Where the IP datagram ends by its own length fields (not what was
    /// captured).
    fn ip_payload_end(&self) -> Option<usize> {
        let ip = self.ip.as_ref()?;
        let be16 = |at: usize| -> Option<usize> {
            match self.data.get(at..at + 2)? {
                [a, b] => Some(usize::from(u16::from_be_bytes([*a, *b]))),
                _ => None,
            }
        };
        if ip.version == 4 {
            Some(ip.header.start + be16(ip.header.start + 2)?)
        } else {
            Some(ip.fixed_header.start + 40 + be16(ip.fixed_header.start + 4)?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example_sums_as_documented() {
        // RFC 1071, section 3: 0001 f203 f4f5 f6f7 sums to ddf2 (folded).
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(0, &data)), 0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(0, &[0x12, 0x34, 0x56])), 0x6834);
    }
}
