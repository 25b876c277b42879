//! Transport dispatch, plus the two transports too small for a module of
//! their own: SCTP (common header only) and ESP (SPI and sequence number).
//!
//! `transport` hands TCP, UDP, ICMP (v4 under IPv4, v6 under IPv6), SCTP
//! and ESP to their decoders. For a first fragment it decodes the header
//! without raising events, and falls back to `L4::Other` with the fragment
//! data as payload when the header is not all there.
//!
//! Not done: SCTP chunks (Suricata does not parse them either, and has no
//! chunk-count event), ESP decryption.

use crate::bytes::{array, be16};
use crate::decoder::Decoder;
use crate::DecoderEvent as E;
use crate::L4;

pub(crate) const IPPROTO_HOPOPTS: u8 = 0;
pub(crate) const IPPROTO_ICMP: u8 = 1;
pub(crate) const IPPROTO_IPIP: u8 = 4;
pub(crate) const IPPROTO_TCP: u8 = 6;
pub(crate) const IPPROTO_UDP: u8 = 17;
pub(crate) const IPPROTO_IPV6: u8 = 41;
pub(crate) const IPPROTO_ROUTING: u8 = 43;
pub(crate) const IPPROTO_FRAGMENT: u8 = 44;
pub(crate) const IPPROTO_GRE: u8 = 47;
pub(crate) const IPPROTO_ESP: u8 = 50;
pub(crate) const IPPROTO_AH: u8 = 51;
pub(crate) const IPPROTO_ICMPV6: u8 = 58;
pub(crate) const IPPROTO_NONE: u8 = 59;
pub(crate) const IPPROTO_DSTOPTS: u8 = 60;
pub(crate) const IPPROTO_SCTP: u8 = 132;
pub(crate) const IPPROTO_MH: u8 = 135;
pub(crate) const IPPROTO_HIP: u8 = 139;
pub(crate) const IPPROTO_SHIM6: u8 = 140;

const SCTP_HEADER_LEN: usize = 12;
const ESP_HEADER_LEN: usize = 8;

/// What a transport decoder needs to know about the IP layer under it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct L4Ctx {
    /// 4 or 6.
    pub(crate) version: u8,
    /// TTL / hop limit (ICMPv6 MLD checks it).
    pub(crate) hop_limit: u8,
    /// The data is the start of a fragmented datagram.
    pub(crate) first_fragment: bool,
}

impl Decoder<'_> {
    /// Decodes the transport `proto` at `off..end`. Returns `false` when
    /// `proto` is not a transport (tunnels, unknown protocols): the caller
    /// handles it.
    pub(crate) fn transport(&mut self, proto: u8, off: usize, end: usize, ctx: L4Ctx) -> bool {
        if ctx.first_fragment {
            let events = self.pkt.events;
            self.transport_header(proto, off, end, ctx);
            self.pkt.events = events;
            if matches!(self.pkt.l4, L4::None | L4::Other(_)) {
                self.fragment_data(proto, off, end);
            }
            return true;
        }
        self.transport_header(proto, off, end, ctx)
    }

    fn transport_header(&mut self, proto: u8, off: usize, end: usize, ctx: L4Ctx) -> bool {
        match proto {
            IPPROTO_TCP => self.tcp(off, end),
            IPPROTO_UDP => self.udp(off, end, ctx.first_fragment),
            IPPROTO_ICMP if ctx.version == 4 => self.icmpv4(off, end),
            IPPROTO_ICMPV6 if ctx.version == 6 => self.icmpv6(off, end, ctx.hop_limit),
            IPPROTO_SCTP => self.sctp(off, end),
            IPPROTO_ESP => self.esp(off, end),
            _ => return false,
        }
        true
    }

    /// A fragment whose transport is not decoded: the data is the payload.
    pub(crate) fn fragment_data(&mut self, proto: u8, off: usize, end: usize) {
        self.set_l4(L4::Other(proto), off..off, off..end);
    }

    fn sctp(&mut self, off: usize, end: usize) {
        let Some(h) = array::<SCTP_HEADER_LEN>(self.bytes(off, end), 0) else {
            self.event(E::SctpPktTooSmall);
            return;
        };
        let l4 = L4::Sctp {
            src_port: be16([h[0], h[1]]),
            dst_port: be16([h[2], h[3]]),
        };
        let body = off + SCTP_HEADER_LEN;
        self.set_l4(l4, off..body, body..end);
    }

    /// ESP: only the SPI and sequence number are clear text.
    pub(crate) fn esp(&mut self, off: usize, end: usize) {
        if end.saturating_sub(off) < ESP_HEADER_LEN {
            self.event(E::EspPktTooSmall);
            return;
        }
        let body = off + ESP_HEADER_LEN;
        self.set_l4(L4::Other(IPPROTO_ESP), off..body, body..end);
    }
}
