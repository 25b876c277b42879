//! Transport dispatch, plus the two transports too small for a module of
//! their own: SCTP (common header only) and ESP (SPI and sequence number).
//!
//! `transport` hands TCP, UDP, ICMP (v4 under IPv4, v6 under IPv6), SCTP
//! and ESP to their decoders. For a first fragment it decodes the header
//! without raising events, and falls back to `L4::Other` with the fragment
//! data as payload when the header is not all there.
//!
//! SCTP chunks are walked as Suricata 9 walks them: counted, the first 16
//! types kept, lengths checked (a chunk that does not fit makes the packet
//! invalid, with `sctp.chunk_too_small` or `sctp.chunk_len_invalid`), and
//! the payload is the first DATA chunk's user data.
//!
//! Not done: ESP decryption.

use crate::bytes::{array, be16};
use crate::decoder::Decoder;
use crate::DecoderEvent as E;
use crate::{sctp_chunk, IgmpInfo, SctpChunks, SctpInfo, L4, SCTP_MAX_TYPES};

pub(crate) const IPPROTO_HOPOPTS: u8 = 0;
pub(crate) const IPPROTO_ICMP: u8 = 1;
pub(crate) const IPPROTO_IGMP: u8 = 2;
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

impl Decoder<'_, '_> {
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
            IPPROTO_IGMP if ctx.version == 4 => self.igmp(off, end),
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
        let body = off + SCTP_HEADER_LEN;
        let mut s = SctpInfo {
            src_port: be16([h[0], h[1]]),
            dst_port: be16([h[2], h[3]]),
            vtag: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            // IP lengths bound a packet to 64 KiB.
            len: (end - off).min(usize::from(u16::MAX)) as u16,
            chunk_cnt: 0,
            data_chunks: 0,
            types: [0; SCTP_MAX_TYPES],
            has_init: false,
            has_init_ack: false,
            has_data: false,
            has_abort: false,
        };
        // Validate every chunk's length first: a packet with a chunk that
        // does not fit is not decoded (Suricata marks it invalid).
        let chunks = self.bytes(body, end);
        let mut rest = chunks;
        while !rest.is_empty() {
            let &[_, _, l0, l1, ..] = rest else {
                self.event(E::SctpChunkTooSmall);
                return;
            };
            let len = usize::from(be16([l0, l1]));
            if len < 4 || len > rest.len() {
                self.event(E::SctpChunkLenInvalid);
                return;
            }
            rest = rest.get(len.next_multiple_of(4)..).unwrap_or(&[]);
        }
        let mut payload = body..body;
        let mut off_in = 0usize;
        for c in SctpChunks::new(chunks) {
            if let Some(t) = s.types.get_mut(usize::from(s.chunk_cnt)) {
                *t = c.ctype;
            }
            s.chunk_cnt = s.chunk_cnt.saturating_add(1);
            match c.ctype {
                sctp_chunk::DATA => {
                    if !s.has_data {
                        // The packet payload is the first DATA chunk's
                        // user data.
                        let start = body + off_in + 4 + c.value.len().min(12);
                        payload = start..body + off_in + 4 + c.value.len();
                    }
                    s.has_data = true;
                    s.data_chunks = s.data_chunks.saturating_add(1);
                }
                sctp_chunk::INIT => s.has_init = true,
                sctp_chunk::INIT_ACK => s.has_init_ack = true,
                sctp_chunk::ABORT => s.has_abort = true,
                _ => {}
            }
            off_in += (4 + c.value.len()).next_multiple_of(4);
        }
        if s.has_init {
            if s.chunk_cnt > 1 {
                self.event(E::SctpInitChunkBundled);
            }
            if s.vtag != 0 {
                self.event(E::SctpInitWithNonZeroVtag);
            }
        }
        if s.has_data && s.vtag == 0 {
            self.event(E::SctpDataWithZeroVtag);
        }
        if usize::from(s.chunk_cnt) > SCTP_MAX_TYPES {
            self.event(E::SctpTooManyChunks);
        }
        if usize::from(s.data_chunks) > SCTP_MAX_TYPES {
            self.event(E::SctpTooManyDataChunks);
        }
        self.set_l4(L4::Sctp(s), off..body, payload);
    }

    /// IGMP (RFC 1112, 2236, 3376). The header (`igmp.hdr`) is 8 bytes
    /// for versions 1 and 2; for version 3 it is the whole query (with
    /// its sources) or report (with its group records). No payload.
    fn igmp(&mut self, off: usize, end: usize) {
        let m = self.bytes(off, end);
        let (&[itype, code, ..], true) = (m, m.len() >= 8) else {
            // Still an IGMP packet to Suricata (dsize:0 matches it), with
            // nothing decoded.
            self.event(E::IgmpPktTooSmall);
            self.set_l4(L4::Other(IPPROTO_IGMP), off..off, end..end);
            return;
        };
        let be = |at: usize| match m.get(at..at + 2) {
            Some(&[a, b]) => usize::from(be16([a, b])),
            _ => 0,
        };
        // (version, header length); length 0: a v3 message cut short.
        let (version, hlen) = match itype {
            0x11 if m.len() >= 12 => {
                let need = 12 + 4 * be(10);
                if m.len() >= need {
                    (3, need)
                } else {
                    (0, 0)
                }
            }
            0x11 => (if code == 0 { 1 } else { 2 }, 8),
            0x12 => (1, 8),
            0x22 => {
                // Group records: type, aux words, source count, group,
                // then the sources and aux data.
                let mut at = 8usize;
                let mut ok = true;
                for _ in 0..be(6) {
                    match m.get(at..at + 8) {
                        Some(&[_, aux, n0, n1, ..]) => {
                            at += 8 + 4 * usize::from(aux) + 4 * usize::from(be16([n0, n1]));
                        }
                        _ => {
                            ok = false;
                            break;
                        }
                    }
                    if at > m.len() {
                        ok = false;
                        break;
                    }
                }
                if ok {
                    (3, at)
                } else {
                    (0, 0)
                }
            }
            _ => (2, 8),
        };
        if version == 0 {
            self.event(E::IgmpV3PktTooSmall);
        }
        let l4 = L4::Igmp(IgmpInfo { itype, version });
        self.set_l4(l4, off..off + hlen, end..end);
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
