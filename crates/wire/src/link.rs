//! pcap link types: which decoder a frame starts with.
//!
//! Decodes the link-layer headers that carry no further structure of their
//! own: BSD null/loopback (a 4-byte address family), raw IP (version from
//! the first nibble), and Linux cooked capture v1 (16 bytes) and v2
//! (20 bytes). Ethernet and PPP have their own modules.
//!
//! Not done: link types Vigil does not know (the packet stays empty, with no
//! event), and SLL's non-ethertype protocol values (802.2 LLC, CAN ...),
//! which are reported as unknown ethertypes as Suricata does.

use crate::bytes::{array, be16};
use crate::decoder::Decoder;
use crate::ethernet::ETHERNET_HEADER_LEN;
use crate::linktype;
use crate::DecoderEvent as E;

const SLL_HEADER_LEN: usize = 16;
const SLL2_HEADER_LEN: usize = 20;
const NULL_HEADER_LEN: usize = 4;

/// BSD address families: 2 is AF_INET everywhere; AF_INET6 differs by OS
/// (Linux 10, Winsock 23, NetBSD/OpenBSD 24, Solaris 26, FreeBSD 28,
/// Darwin 30).
const AF_INET: u32 = 2;
const AF_INET6: [u32; 6] = [10, 23, 24, 26, 28, 30];

impl Decoder<'_, '_> {
    pub(crate) fn link(&mut self, lt: u32) {
        let end = self.data.len();
        match lt {
            linktype::ETHERNET => {
                if end >= ETHERNET_HEADER_LEN {
                    self.pkt.link_header = 0..ETHERNET_HEADER_LEN;
                }
                self.ethernet(0, end);
            }
            linktype::LINUX_SLL => self.sll(end),
            linktype::LINUX_SLL2 => self.sll2(end),
            linktype::RAW | linktype::RAW_OPENBSD | linktype::RAW_ALT => self.raw(end),
            linktype::IPV4 => self.ipv4(0, end),
            linktype::IPV6 => self.ipv6(0, end),
            linktype::NULL => self.null(end, false),
            linktype::LOOP => self.null(end, true),
            linktype::PPP => self.ppp(0, end),
            _ => {}
        }
    }

    fn raw(&mut self, end: usize) {
        // Suricata checks the IPv4 minimum whatever the version.
        let Some(h) = array::<{ crate::ipv4::IPV4_HEADER_LEN }>(self.data, 0) else {
            self.event(E::Ipv4PktTooSmall);
            return;
        };
        match h[0] >> 4 {
            4 => self.ipv4(0, end),
            6 => self.ipv6(0, end),
            _ => self.event(E::IprawInvalidIpVersion),
        }
    }

    fn sll(&mut self, end: usize) {
        let Some(h) = array::<SLL_HEADER_LEN>(self.data, 0) else {
            self.event(E::SllPktTooSmall);
            return;
        };
        self.pkt.link_header = 0..SLL_HEADER_LEN;
        let proto = be16([h[14], h[15]]);
        self.network(proto, SLL_HEADER_LEN, end);
    }

    fn sll2(&mut self, end: usize) {
        let Some(h) = array::<SLL2_HEADER_LEN>(self.data, 0) else {
            self.event(E::SllPktTooSmall);
            return;
        };
        self.pkt.link_header = 0..SLL2_HEADER_LEN;
        let proto = be16([h[0], h[1]]);
        self.network(proto, SLL2_HEADER_LEN, end);
    }

    /// `LINKTYPE_NULL` stores the family in the capturing host's byte
    /// order, which the file does not say; a value that only makes sense
    /// big-endian (low bytes zero) is read that way. `LINKTYPE_LOOP` is
    /// always network order.
    fn null(&mut self, end: usize, network_order: bool) {
        let Some(h) = array::<NULL_HEADER_LEN>(self.data, 0) else {
            self.event(E::LtnullPktTooSmall);
            return;
        };
        self.pkt.link_header = 0..NULL_HEADER_LEN;
        let le = u32::from_le_bytes(*h);
        let family = if network_order || le > 0xffff {
            u32::from_be_bytes(*h)
        } else {
            le
        };
        if family == AF_INET {
            self.ipv4(NULL_HEADER_LEN, end);
        } else if AF_INET6.contains(&family) {
            self.ipv6(NULL_HEADER_LEN, end);
        } else {
            self.event(E::LtnullUnsupportedType);
        }
    }
}
