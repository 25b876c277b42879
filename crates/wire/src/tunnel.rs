//! Encapsulations whose inner packet is decoded as if it were a frame of
//! its own: GRE (RFC 2784/2890, and version 1 as PPTP uses it), ERSPAN
//! type II, and VXLAN (RFC 7348). IP-in-IP and IPv6-in-IP are dispatched
//! from the IP modules through the same [`Decoder::tunnel`] helper.
//!
//! GRE header checks follow Suricata's `DecodeGRE` event for event; GRE
//! carries IPv4, IPv6, PPP, 802.1Q, Transparent Ethernet Bridging (0x6558)
//! and ERSPAN type II (0x88BE with the sequence bit set). VXLAN is tried on
//! UDP port 4789 when the I flag is set and the reserved byte is zero; its
//! inner Ethernet header is skipped and the inner ethertype must be IPv4,
//! IPv6 or 802.1Q (else `vxlan.unknown_payload_type`). Geneve (RFC 8926)
//! is tried on UDP port 6081 as Suricata's `DecodeGeneve` does: version 0,
//! the options skipped by their length, an inner Ethernet frame (0x6558)
//! or a bare IPv4/IPv6 packet (else `geneve.unknown_payload_type`).
//!
//! Not done: ERSPAN type I/III, Teredo, NVGRE key interpretation.

use crate::bytes::{array, be16};
use crate::decoder::Decoder;
use crate::ethernet::{
    ETHERNET_HEADER_LEN, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN,
};
use crate::DecoderEvent as E;
use crate::TunnelKind::{self, Geneve, Gre, Vxlan};

const GRE_HEADER_LEN: usize = 4;
const GRE_OPTION_LEN: usize = 4;
const GRE_SRE_HEADER_LEN: usize = 4;

const GRE_CHECKSUM: u8 = 0x80;
const GRE_ROUTING: u8 = 0x40;
const GRE_KEY: u8 = 0x20;
const GRE_SEQ: u8 = 0x10;
const GRE_STRICT_SOURCE_ROUTE: u8 = 0x08;
const GRE_RECURSION: u8 = 0x07;
/// Second byte: acknowledgment present (version 1), reserved flags, version.
const GRE_V1_ACK: u8 = 0x80;
const GRE_FLAGS: u8 = 0x78;
const GRE_VERSION: u8 = 0x07;

const GRE_PROTO_PPP: u16 = 0x880b;
const GRE_PROTO_BRIDGE: u16 = 0x6558;
const GRE_PROTO_ERSPAN: u16 = 0x88be;

const ERSPAN_II_HEADER_LEN: usize = 8;
const VXLAN_HEADER_LEN: usize = 8;
const GENEVE_HEADER_LEN: usize = 8;

impl Decoder<'_, '_> {
    pub(crate) fn gre(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<GRE_HEADER_LEN>(buf, 0) else {
            self.event(E::GrePktTooSmall);
            return;
        };
        if !self.enter_layer() {
            return;
        }
        let (flags, ver_byte) = (h[0], h[1]);
        let proto = be16([h[2], h[3]]);
        let mut hlen = GRE_HEADER_LEN;
        match ver_byte & GRE_VERSION {
            0 => {
                if flags & GRE_RECURSION != 0 {
                    return self.event(E::GreVersion0Recur);
                }
                if ver_byte & GRE_FLAGS != 0 {
                    return self.event(E::GreVersion0Flags);
                }
                if flags & GRE_KEY != 0 {
                    hlen += GRE_OPTION_LEN;
                }
                if flags & GRE_SEQ != 0 {
                    hlen += GRE_OPTION_LEN;
                }
                if flags & (GRE_CHECKSUM | GRE_ROUTING) != 0 {
                    hlen += GRE_OPTION_LEN; // checksum + offset
                }
                if hlen > buf.len() {
                    return self.event(E::GreVersion0HdrTooBig);
                }
                if flags & GRE_ROUTING != 0 {
                    // Source route entries until the null entry.
                    loop {
                        let Some(sre) = array::<GRE_SRE_HEADER_LEN>(buf, hlen) else {
                            return self.event(E::GreVersion0MalformedSreHdr);
                        };
                        hlen += GRE_SRE_HEADER_LEN;
                        let (af, sre_len) = (be16([sre[0], sre[1]]), sre[3]);
                        if af == 0 && sre_len == 0 {
                            break;
                        }
                        hlen += usize::from(sre_len);
                        if hlen > buf.len() {
                            return self.event(E::GreVersion0MalformedSreHdr);
                        }
                    }
                }
            }
            1 => {
                if flags & GRE_CHECKSUM != 0 {
                    return self.event(E::GreVersion1Chksum);
                }
                if flags & GRE_ROUTING != 0 {
                    return self.event(E::GreVersion1Route);
                }
                if flags & GRE_STRICT_SOURCE_ROUTE != 0 {
                    return self.event(E::GreVersion1Ssr);
                }
                if flags & GRE_RECURSION != 0 {
                    return self.event(E::GreVersion1Recur);
                }
                if ver_byte & GRE_FLAGS != 0 {
                    return self.event(E::GreVersion1Flags);
                }
                if proto != GRE_PROTO_PPP {
                    return self.event(E::GreVersion1WrongProtocol);
                }
                if flags & GRE_KEY == 0 {
                    return self.event(E::GreVersion1NoKey);
                }
                hlen += GRE_OPTION_LEN;
                if flags & GRE_SEQ != 0 {
                    hlen += GRE_OPTION_LEN;
                }
                if ver_byte & GRE_V1_ACK != 0 {
                    hlen += GRE_OPTION_LEN;
                }
                if hlen > buf.len() {
                    return self.event(E::GreVersion1HdrTooBig);
                }
            }
            _ => return self.event(E::GreWrongVersion),
        }

        self.pkt.l4_header = off..off + hlen;
        self.pkt.payload = off + hlen..off + hlen;
        let inner = off + hlen;
        match proto {
            ETHERTYPE_IPV4 => self.tunnel(Gre, inner, |d| d.ipv4(inner, end)),
            ETHERTYPE_IPV6 => self.tunnel(Gre, inner, |d| d.ipv6(inner, end)),
            GRE_PROTO_PPP => self.tunnel(Gre, inner, |d| d.ppp(inner, end)),
            ETHERTYPE_VLAN => self.tunnel(Gre, inner, |d| {
                d.network(ETHERTYPE_VLAN, inner, end);
            }),
            GRE_PROTO_ERSPAN if flags & GRE_SEQ != 0 => {
                self.tunnel(Gre, inner, |d| d.erspan2(inner, end))
            }
            GRE_PROTO_BRIDGE => self.tunnel(Gre, inner, |d| d.inner_ethernet(inner, end)),
            _ => {}
        }
    }

    /// ERSPAN type II: version 1, a VLAN id, then a mirrored Ethernet frame.
    fn erspan2(&mut self, off: usize, end: usize) {
        let Some(h) = array::<ERSPAN_II_HEADER_LEN>(self.bytes(off, end), 0) else {
            self.event(E::ErspanHeaderTooSmall);
            return;
        };
        let ver_vlan = be16([h[0], h[1]]);
        if ver_vlan >> 12 != 1 {
            self.event(E::ErspanUnsupportedVersion);
            return;
        }
        let vlan = ver_vlan & 0x0fff;
        if vlan > 0 && !self.push_vlan(vlan) {
            self.event(E::ErspanTooManyVlanLayers);
            return;
        }
        self.inner_ethernet(off + ERSPAN_II_HEADER_LEN, end);
    }

    /// An Ethernet frame inside a tunnel: its header is the tunnel
    /// packet's link header (`ether.hdr`).
    fn inner_ethernet(&mut self, off: usize, end: usize) {
        if self.bytes(off, end).len() >= ETHERNET_HEADER_LEN {
            self.pkt.link_header = off..off + ETHERNET_HEADER_LEN;
        }
        self.ethernet(off, end);
    }

    /// Tries `off..end` (a UDP payload) as VXLAN; not VXLAN-looking data is
    /// left alone as plain UDP payload.
    pub(crate) fn vxlan(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<{ VXLAN_HEADER_LEN + ETHERNET_HEADER_LEN }>(buf, 0) else {
            return;
        };
        if h[0] & 0x08 == 0 || h[7] != 0 {
            return;
        }
        let ethertype = be16([h[20], h[21]]);
        let eth = off + VXLAN_HEADER_LEN;
        self.overlay_frame(Vxlan, ethertype, eth, end, E::VxlanUnknownPayloadType);
    }

    /// An overlay's inner Ethernet frame at `eth` (VXLAN, Geneve), as
    /// Suricata decodes it: IPv4, IPv6, 802.1Q or ARP as a tunnel packet
    /// with that Ethernet header, anything else the overlay's `unknown`
    /// event.
    fn overlay_frame(
        &mut self,
        kind: TunnelKind,
        ethertype: u16,
        eth: usize,
        end: usize,
        unknown: E,
    ) {
        match ethertype {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 | ETHERTYPE_VLAN | ETHERTYPE_ARP => {
                self.tunnel(kind, eth, |d| d.inner_ethernet(eth, end))
            }
            _ => self.event(unknown),
        }
    }

    /// Tries `off..end` (a UDP payload) as Geneve; data that is not
    /// version-0 Geneve with room for its options is left alone as plain
    /// UDP payload.
    pub(crate) fn geneve(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<GENEVE_HEADER_LEN>(buf, 0) else {
            return;
        };
        if h[0] >> 6 != 0 {
            return;
        }
        let hlen = GENEVE_HEADER_LEN + usize::from(h[0] & 0x3f) * 4;
        if buf.len() < hlen {
            return;
        }
        let proto = be16([h[2], h[3]]);
        let inner = off + hlen;
        match proto {
            GRE_PROTO_BRIDGE => {
                let Some(eth) = array::<ETHERNET_HEADER_LEN>(buf, hlen) else {
                    return;
                };
                let ethertype = be16([eth[12], eth[13]]);
                self.overlay_frame(Geneve, ethertype, inner, end, E::GeneveUnknownPayloadType);
            }
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => self.tunnel(Geneve, inner, |d| {
                d.network(proto, inner, end);
            }),
            _ => self.event(E::GeneveUnknownPayloadType),
        }
    }
}
