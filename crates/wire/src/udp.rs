//! UDP (RFC 768).
//!
//! Checks, as in Suricata 8, each fatal to the transport layer: at least 8
//! bytes (`udp.hlen_too_small`), the length field within the IP payload
//! (`udp.pkt_too_small`), the length field at least 8 (`udp.len_invalid`).
//! The payload is what the UDP length says, so bytes after it (padding,
//! trailers) are not payload. Datagrams to port 4789 are tried as VXLAN,
//! to port 6081 as Geneve.
//!
//! For the first fragment of a datagram the length field describes the
//! whole datagram, so it is not checked and the payload runs to the end of
//! the fragment.
//!
//! Not done: checksums, Teredo, Geneve.

use crate::bytes::{array, be16};
use crate::decoder::Decoder;
use crate::DecoderEvent as E;
use crate::{UdpInfo, L4};

const UDP_HEADER_LEN: usize = 8;
const VXLAN_PORT: u16 = 4789;
const GENEVE_PORT: u16 = 6081;

impl Decoder<'_, '_> {
    pub(crate) fn udp(&mut self, off: usize, end: usize, first_fragment: bool) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<UDP_HEADER_LEN>(buf, 0) else {
            self.event(E::UdpHlenTooSmall);
            return;
        };
        let info = UdpInfo {
            src_port: be16([h[0], h[1]]),
            dst_port: be16([h[2], h[3]]),
        };
        let body = off + UDP_HEADER_LEN;
        if first_fragment {
            self.set_l4(L4::Udp(info), off..body, body..end);
            return;
        }
        let len = usize::from(be16([h[4], h[5]]));
        if buf.len() < len {
            self.event(E::UdpPktTooSmall);
            return;
        }
        if len < UDP_HEADER_LEN {
            self.event(E::UdpLenInvalid);
            return;
        }
        let dgram_end = off + len;
        self.set_l4(L4::Udp(info), off..body, body..dgram_end);
        match info.dst_port {
            VXLAN_PORT => self.vxlan(body, dgram_end),
            GENEVE_PORT => self.geneve(body, dgram_end),
            _ => {}
        }
    }
}
