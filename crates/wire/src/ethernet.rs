//! Ethernet II, ethertype dispatch, VLAN tags (802.1Q, 802.1ad, QinQ),
//! 802.1ah (MAC-in-MAC) and MPLS label stacks.
//!
//! Up to three VLAN tags are recorded, outermost first; a fourth raises
//! `vlan.too_many_layers`. MPLS: the label stack is skipped; the bottom
//! label (0 = IPv4, 2 = IPv6 explicit null) or, for other labels, the first
//! nibble of the payload picks IPv4, IPv6 or an Ethernet pseudowire (with
//! its 4-byte control word).
//!
//! ARP frames are marked ([`crate::Packet::arp`]), not decoded further.
//! Recognised but not decoded (no event, no IP): Cisco FabricPath/DCE,
//! NSH, VN-Tag and E-Tag. Any other ethertype raises
//! `ethernet.unknown_ethertype` as Suricata 8 does, plus `vlan.unknown_type`
//! right after a VLAN tag. Not done: 802.3 LLC/SNAP frames (length field
//! instead of an ethertype), which count as unknown ethertypes.

use crate::bytes::{array, be16, be32};
use crate::decoder::Decoder;
use crate::DecoderEvent as E;

pub(crate) const ETHERNET_HEADER_LEN: usize = 14;
const VLAN_HEADER_LEN: usize = 4;
const IEEE8021AH_HEADER_LEN: usize = 18;
const MPLS_HEADER_LEN: usize = 4;
const MPLS_PW_LEN: usize = 4;

pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
pub(crate) const ETHERTYPE_ARP: u16 = 0x0806;
pub(crate) const ETHERTYPE_IPV6: u16 = 0x86dd;
pub(crate) const ETHERTYPE_VLAN: u16 = 0x8100;
pub(crate) const ETHERTYPE_8021AD: u16 = 0x88a8;
pub(crate) const ETHERTYPE_QINQ: u16 = 0x9100;
pub(crate) const ETHERTYPE_8021AH: u16 = 0x88e7;
pub(crate) const ETHERTYPE_MPLS_UNICAST: u16 = 0x8847;
pub(crate) const ETHERTYPE_MPLS_MULTICAST: u16 = 0x8848;
pub(crate) const ETHERTYPE_PPPOE_DISC: u16 = 0x8863;
pub(crate) const ETHERTYPE_PPPOE_SESS: u16 = 0x8864;
pub(crate) const ETHERTYPE_DCE: u16 = 0x8903;
pub(crate) const ETHERTYPE_VNTAG: u16 = 0x8926;
pub(crate) const ETHERTYPE_ETAG: u16 = 0x893f;
pub(crate) const ETHERTYPE_NSH: u16 = 0x894f;

const MPLS_LABEL_IPV4: u32 = 0;
const MPLS_LABEL_ROUTER_ALERT: u32 = 1;
const MPLS_LABEL_IPV6: u32 = 2;
const MPLS_LABEL_NULL: u32 = 3;
const MPLS_MAX_RESERVED_LABEL: u32 = 15;

impl Decoder<'_, '_> {
    pub(crate) fn ethernet(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<ETHERNET_HEADER_LEN>(buf, 0) else {
            self.event(E::EthernetPktTooSmall);
            return;
        };
        if !self.enter_layer() {
            return;
        }
        let ethertype = be16([h[12], h[13]]);
        self.network(ethertype, off + ETHERNET_HEADER_LEN, end);
    }

    /// Dispatches on an ethertype. Returns `false` (after raising
    /// `ethernet.unknown_ethertype`) when the ethertype is not one Vigil
    /// knows.
    pub(crate) fn network(&mut self, ethertype: u16, off: usize, end: usize) -> bool {
        match ethertype {
            ETHERTYPE_IPV4 => self.ipv4(off, end),
            ETHERTYPE_IPV6 => self.ipv6(off, end),
            ETHERTYPE_VLAN | ETHERTYPE_8021AD | ETHERTYPE_QINQ => self.vlan(off, end),
            ETHERTYPE_MPLS_UNICAST | ETHERTYPE_MPLS_MULTICAST => self.mpls(off, end),
            ETHERTYPE_PPPOE_SESS => self.pppoe_session(off, end),
            ETHERTYPE_PPPOE_DISC => self.pppoe_discovery(off, end),
            ETHERTYPE_8021AH => self.ieee8021ah(off, end),
            ETHERTYPE_ARP => self.pkt.arp = true,
            ETHERTYPE_DCE | ETHERTYPE_NSH | ETHERTYPE_VNTAG | ETHERTYPE_ETAG => {}
            _ => {
                self.event(E::EthernetUnknownEthertype);
                return false;
            }
        }
        true
    }

    fn vlan(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<VLAN_HEADER_LEN>(buf, 0) else {
            self.event(E::VlanHeaderTooSmall);
            return;
        };
        if !self.enter_layer() {
            return;
        }
        if !self.push_vlan(be16([h[0], h[1]]) & 0x0fff) {
            self.event(E::VlanTooManyLayers);
            return;
        }
        if !self.network(be16([h[2], h[3]]), off + VLAN_HEADER_LEN, end) {
            self.event(E::VlanUnknownType);
        }
    }

    /// 802.1ah backbone service instance tag: 4-byte I-TAG, customer
    /// destination and source MACs, then the customer ethertype.
    fn ieee8021ah(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<IEEE8021AH_HEADER_LEN>(buf, 0) else {
            self.event(E::Ieee8021ahHeaderTooSmall);
            return;
        };
        if !self.enter_layer() {
            return;
        }
        self.network(be16([h[16], h[17]]), off + IEEE8021AH_HEADER_LEN, end);
    }

    fn mpls(&mut self, off: usize, end: usize) {
        if !self.enter_layer() {
            return;
        }
        let mut pos = off;
        let shim = loop {
            let Some(h) = array::<MPLS_HEADER_LEN>(self.bytes(pos, end), 0) else {
                self.event(E::MplsHeaderTooSmall);
                return;
            };
            let shim = be32(*h);
            pos += MPLS_HEADER_LEN;
            if (shim >> 8) & 1 == 1 {
                break shim;
            }
        };
        match shim >> 12 {
            MPLS_LABEL_IPV4 => return self.ipv4(pos, end),
            MPLS_LABEL_IPV6 => return self.ipv6(pos, end),
            // Not valid at the bottom of the stack.
            MPLS_LABEL_ROUTER_ALERT => return self.event(E::MplsBadLabelRouterAlert),
            MPLS_LABEL_NULL => return self.event(E::MplsBadLabelImplicitNull),
            l if l < MPLS_MAX_RESERVED_LABEL => return self.event(E::MplsBadLabelReserved),
            _ => {}
        }
        let rest = self.bytes(pos, end);
        // One byte tells IPv4 from IPv6, but a pseudowire needs its control word.
        let Some(first) = array::<MPLS_PW_LEN>(rest, 0) else {
            self.event(E::MplsPktTooSmall);
            return;
        };
        match first[0] >> 4 {
            4 => self.ipv4(pos, end),
            6 => self.ipv6(pos, end),
            0 => self.ethernet(pos + MPLS_PW_LEN, end),
            _ => self.event(E::MplsUnknownPayloadType),
        }
    }
}
