//! PPP (RFC 1661) and PPPoE (RFC 2516).
//!
//! PPP frames may start with the HDLC address/control bytes `ff 03`, and the
//! protocol field may be compressed to one byte (odd first byte). IPv4,
//! IPv6 and Van Jacobson *uncompressed* TCP/IP (which carries a normal IPv4
//! header) are decoded; the other assigned protocols (LCP, IPCP, CHAP ...)
//! raise `ppp.unsup_proto`, anything else `ppp.wrong_type`.
//!
//! PPPoE session frames carry a bare PPP protocol field after the 6-byte
//! PPPoE header. Discovery frames are checked (code, tag length) but carry
//! no IP. Not done: VJ compressed TCP, PPP multilink, walking PPPoE tags.

use crate::bytes::{array, be16, u8_at};
use crate::decoder::Decoder;
use crate::ipv4::IPV4_HEADER_LEN;
use crate::ipv6::IPV6_HEADER_LEN;
use crate::DecoderEvent as E;

const PPP_IP: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;
const PPP_VJ_UCOMP: u16 = 0x002f;

/// Assigned PPP protocols Vigil (like Suricata) recognises but does not decode.
const PPP_UNSUPPORTED: [u16; 31] = [
    0x002d, // VJ compressed
    0x002b, // IPX
    0x0023, // OSI
    0x0025, // Xerox NS
    0x0027, // DECnet
    0x0029, // AppleTalk
    0x0031, // bridging PDU
    0x0033, // Stream Protocol
    0x0035, // Banyan Vines
    0x0201, // 802.1d hello
    0x0231, // Luxcom
    0x0233, // Sigma Network Systems
    0x0281, // MPLS unicast
    0x0283, // MPLS multicast
    0x8021, // IPCP
    0x8023, // OSICP
    0x8025, // NSCP
    0x8027, // DECNETCP
    0x8029, // ATCP
    0x802b, // IPXCP
    0x8033, // STIICP
    0x8035, // VINESCP
    0x8057, // IPV6CP
    0x8281, // MPLSCP
    0xc021, // LCP
    0xc023, // PAP
    0xc025, // LQR
    0xc223, // CHAP
    0x80fd, // CCP
    0xc029, // CBCP
    0x00fd, // compressed datagram
];

const PPPOE_HEADER_LEN: usize = 6;
/// PADI, PADO, PADR, PADS, PADT.
const PPPOE_DISCOVERY_CODES: [u8; 5] = [0x09, 0x07, 0x19, 0x65, 0xa7];

impl Decoder<'_, '_> {
    /// A PPP frame (link type 9, GRE-encapsulated PPP).
    pub(crate) fn ppp(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(first) = u8_at(buf, 0) else {
            self.event(E::PppPktTooSmall);
            return;
        };
        // 0xff: HDLC address and control bytes precede the protocol.
        let proto_off = if first == 0xff { 2 } else { 0 };
        let Some(proto_first) = u8_at(buf, proto_off) else {
            self.event(E::PppPktTooSmall);
            return;
        };
        let compressed = proto_first & 0x01 == 0x01;
        let proto_len = if compressed { 1 } else { 2 };
        if buf.len() < proto_off + proto_len {
            self.event(E::PppPktTooSmall);
            return;
        }
        if !self.enter_layer() {
            return;
        }
        let data = off + proto_off + proto_len;
        if compressed {
            match u16::from(proto_first) {
                PPP_IP => self.ppp_ip(data, end, E::PppIp4PktTooSmall),
                PPP_IPV6 => self.ppp_ipv6(data, end),
                PPP_VJ_UCOMP => self.ppp_vj_uncompressed(data, end),
                _ => self.event(E::PppUnsupProto),
            }
        } else {
            let Some(p) = array::<2>(buf, proto_off) else {
                return;
            };
            self.ppp_protocol(be16(*p), data, end);
        }
    }

    fn ppp_protocol(&mut self, proto: u16, data: usize, end: usize) {
        match proto {
            PPP_IP => self.ppp_ip(data, end, E::PppIp4PktTooSmall),
            PPP_IPV6 => self.ppp_ipv6(data, end),
            PPP_VJ_UCOMP => self.ppp_vj_uncompressed(data, end),
            p if PPP_UNSUPPORTED.contains(&p) => self.event(E::PppUnsupProto),
            _ => self.event(E::PppWrongType),
        }
    }

    fn ppp_ip(&mut self, data: usize, end: usize, too_small: E) {
        if end.saturating_sub(data) < IPV4_HEADER_LEN {
            self.event(too_small);
            return;
        }
        self.ipv4(data, end);
    }

    fn ppp_ipv6(&mut self, data: usize, end: usize) {
        if end.saturating_sub(data) < IPV6_HEADER_LEN {
            self.event(E::PppIp6PktTooSmall);
            return;
        }
        self.ipv6(data, end);
    }

    /// VJ uncompressed TCP/IP: an IPv4 header whose protocol byte holds the
    /// connection slot; decoded only when it still says version 4.
    fn ppp_vj_uncompressed(&mut self, data: usize, end: usize) {
        if end.saturating_sub(data) < IPV4_HEADER_LEN {
            self.event(E::PppVjuPktTooSmall);
            return;
        }
        if u8_at(self.bytes(data, end), 0).is_some_and(|b| b >> 4 == 4) {
            self.ipv4(data, end);
        }
    }

    pub(crate) fn pppoe_session(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<PPPOE_HEADER_LEN>(buf, 0) else {
            self.event(E::PppoePktTooSmall);
            return;
        };
        if be16([h[4], h[5]]) == 0 {
            return; // no PPP frame inside
        }
        let Some(first) = u8_at(buf, PPPOE_HEADER_LEN) else {
            self.event(E::PppoePktTooSmall);
            return;
        };
        // RFC 1661: an odd first byte means a one-byte protocol field.
        let (proto, hdr_len) = if first & 0x01 == 0x01 {
            (u16::from(first), PPPOE_HEADER_LEN + 1)
        } else {
            match array::<2>(buf, PPPOE_HEADER_LEN) {
                Some(p) => (be16(*p), PPPOE_HEADER_LEN + 2),
                None => {
                    self.event(E::PppoePktTooSmall);
                    return;
                }
            }
        };
        self.ppp_protocol(proto, off + hdr_len, end);
    }

    pub(crate) fn pppoe_discovery(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<PPPOE_HEADER_LEN>(buf, 0) else {
            self.event(E::PppoePktTooSmall);
            return;
        };
        if !PPPOE_DISCOVERY_CODES.contains(&h[1]) {
            self.event(E::PppoeWrongCode);
            return;
        }
        if usize::from(be16([h[4], h[5]])) > buf.len() - PPPOE_HEADER_LEN {
            self.event(E::PppoeMalformedTags);
        }
    }
}
