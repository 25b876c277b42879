//! IPv6 (RFC 8200): fixed header, extension headers, fragments, and what
//! comes next.
//!
//! Header checks, each fatal to the IP layer (`ip: None`): at least 40
//! bytes, version 6, payload length within the captured bytes. The payload
//! length bounds everything after the header.
//!
//! Extension headers are walked like Suricata's `DecodeIPV6ExtHdrs`:
//! hop-by-hop and destination options (options validated; unknown options
//! and padding-only headers raise events; two destination-options headers
//! are allowed), routing (type 0 flagged), fragment, AH, and the mobility,
//! HIP and shim6 headers, which are skipped. Duplicates raise
//! `ipv6.exthdr_dupl_*` and are skipped. ESP ends the walk (its payload is
//! opaque). `IpInfo::header` covers the fixed header and every extension
//! header before the transport; `IpInfo::proto` is the final next header.
//!
//! Fragments: a fragment header with offset 0 and M=0 is "useless" (event,
//! decoding goes on). Otherwise the packet is a fragment: a non-first one
//! stops there; a first one goes on through the headers in the fragment,
//! without events, to decode a complete transport header if there is one.
//! `ipv6.frag_invalid_length` (M set, length not a multiple of 8) and
//! `ipv6.frag_pkt_too_large` (offset + length > 65535) are raised here.
//!
//! Not done: jumbograms (RFC 2675), routing header contents, Teredo.

use std::net::{IpAddr, Ipv6Addr};

use crate::bytes::{array, be16, be32, u8_at};
use crate::decoder::Decoder;
use crate::transport::{
    L4Ctx, IPPROTO_AH, IPPROTO_DSTOPTS, IPPROTO_ESP, IPPROTO_FRAGMENT, IPPROTO_GRE, IPPROTO_HIP,
    IPPROTO_HOPOPTS, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_IPIP, IPPROTO_IPV6, IPPROTO_MH,
    IPPROTO_NONE, IPPROTO_ROUTING, IPPROTO_SCTP, IPPROTO_SHIM6, IPPROTO_TCP, IPPROTO_UDP,
};
use crate::DecoderEvent as E;
use crate::{FragInfo, IpInfo, TunnelKind, L4};

pub(crate) const IPV6_HEADER_LEN: usize = 40;
const IPV6_MAX_PACKET: usize = 65535;
const FRAG_HEADER_LEN: usize = 8;
const AH_HEADER_LEN: usize = 12;

const OPT_PAD1: u8 = 0x00;
const OPT_PADN: u8 = 0x01;
const OPT_RA: u8 = 0x05;
const OPT_JUMBO: u8 = 0xc2;
const OPT_HAO: u8 = 0xc9;

impl Decoder<'_, '_> {
    pub(crate) fn ipv6(&mut self, off: usize, end: usize) {
        if !self.enter_layer() {
            return;
        }
        let buf = self.bytes(off, end);
        let Some(h) = array::<IPV6_HEADER_LEN>(buf, 0) else {
            self.event(E::Ipv6PktTooSmall);
            return;
        };
        if h[0] >> 4 != 6 {
            self.event(E::Ipv6WrongIpVersion);
            return;
        }
        let plen = usize::from(be16([h[4], h[5]]));
        if buf.len() < IPV6_HEADER_LEN + plen {
            self.event(E::Ipv6TruncPkt);
            return;
        }
        let addr = |at: usize| {
            let a: [u8; 16] = array::<16>(h, at).copied().unwrap_or([0; 16]);
            IpAddr::V6(Ipv6Addr::from(a))
        };
        let nh = h[6];
        let hop_limit = h[7];
        let info = IpInfo {
            version: 6,
            src: addr(8),
            dst: addr(24),
            proto: nh,
            ttl: hop_limit,
            tos: (h[0] << 4) | (h[1] >> 4),
            id: 0,
            header: off..off + IPV6_HEADER_LEN,
            fixed_header: off..off + IPV6_HEADER_LEN,
            fragment: None,
            dont_fragment: false,
            reserved_bit: false,
            ipv4_options: [0; 8],
            ipv4_option_count: 0,
        };
        let data = off + IPV6_HEADER_LEN;
        let data_end = data + plen;
        let ctx = L4Ctx {
            version: 6,
            hop_limit,
            first_fragment: false,
        };

        match nh {
            IPPROTO_TCP | IPPROTO_UDP | IPPROTO_ICMPV6 | IPPROTO_SCTP => {
                self.pkt.ip = Some(info);
                self.transport(nh, data, data_end, ctx);
            }
            IPPROTO_IPIP => {
                self.set_ip_other(info, nh, data);
                self.ipv4_in_ipv6(data, data_end);
            }
            IPPROTO_IPV6 => {
                self.set_ip_other(info, nh, data);
                self.ipv6_in_ipv6(data, data_end);
            }
            IPPROTO_GRE => {
                self.set_ip_other(info, nh, data);
                self.gre(data, data_end);
            }
            IPPROTO_HOPOPTS | IPPROTO_ROUTING | IPPROTO_FRAGMENT | IPPROTO_NONE
            | IPPROTO_DSTOPTS | IPPROTO_AH | IPPROTO_ESP | IPPROTO_MH | IPPROTO_HIP
            | IPPROTO_SHIM6 => self.ipv6_ext_headers(info, data, data_end, ctx),
            IPPROTO_ICMP => {
                self.event(E::Ipv6Icmpv4);
                self.set_ip_other(info, nh, data);
            }
            _ => {
                self.event(E::Ipv6UnknownNextHeader);
                self.set_ip_other(info, nh, data);
            }
        }
    }

    fn ipv6_ext_headers(&mut self, mut info: IpInfo, start: usize, end: usize, ctx: L4Ctx) {
        let mut nh = info.proto;
        let mut pos = start;
        let (mut hh, mut rh, mut ah, mut fh) = (false, false, false, false);
        let mut dstopts = 0u8;
        // Events before a first fragment's fragment header stand; those
        // after it belong to the reassembled packet and are dropped.
        let mut first_fragment_events = None;

        loop {
            info.header.end = pos;
            info.proto = nh;
            let rest = self.bytes(pos, end);
            let remaining = rest.len();

            if nh == IPPROTO_NONE {
                if remaining > 0 {
                    self.event(E::Ipv6DataAfterNoneHeader);
                }
                self.set_ip_other(info, nh, pos);
                break;
            }
            let Some(&[next, len_byte]) = array::<2>(rest, 0) else {
                self.event(E::Ipv6TruncExthdr);
                self.set_ip_other(info, nh, pos);
                break;
            };

            // Length of the header at `pos`, or the terminal handling.
            let hdr_len = match nh {
                IPPROTO_TCP | IPPROTO_UDP | IPPROTO_ICMPV6 | IPPROTO_SCTP => {
                    self.pkt.ip = Some(info);
                    let ctx = L4Ctx {
                        first_fragment: first_fragment_events.is_some(),
                        ..ctx
                    };
                    self.transport(nh, pos, end, ctx);
                    break;
                }
                IPPROTO_ROUTING | IPPROTO_MH | IPPROTO_HIP | IPPROTO_SHIM6 => {
                    let hdr_len = 8 + usize::from(len_byte) * 8;
                    if hdr_len > remaining {
                        self.event(E::Ipv6TruncExthdr);
                        self.set_ip_other(info, nh, pos);
                        break;
                    }
                    if nh == IPPROTO_ROUTING {
                        if rh {
                            self.event(E::Ipv6ExthdrDuplRh);
                        } else {
                            rh = true;
                            if u8_at(rest, 2) == Some(0) {
                                self.event(E::Ipv6RhType0);
                            }
                        }
                    }
                    hdr_len
                }
                IPPROTO_HOPOPTS | IPPROTO_DSTOPTS => {
                    let hdr_len = (usize::from(len_byte) + 1) * 8;
                    if hdr_len > remaining {
                        self.event(E::Ipv6TruncExthdr);
                        self.set_ip_other(info, nh, pos);
                        break;
                    }
                    let hop = nh == IPPROTO_HOPOPTS;
                    let duplicate = if hop {
                        std::mem::replace(&mut hh, true)
                    } else {
                        dstopts = dstopts.saturating_add(1);
                        dstopts > 2
                    };
                    if duplicate {
                        self.event(if hop {
                            E::Ipv6ExthdrDuplHh
                        } else {
                            E::Ipv6ExthdrDuplDh
                        });
                    } else {
                        self.ipv6_options(rest.get(2..hdr_len).unwrap_or(&[]), hop);
                    }
                    hdr_len
                }
                IPPROTO_FRAGMENT => {
                    let Some(f) = array::<FRAG_HEADER_LEN>(rest, 0) else {
                        self.event(E::Ipv6TruncExthdr);
                        self.set_ip_other(info, nh, pos);
                        break;
                    };
                    if f[1] != 0 {
                        self.event(E::Ipv6FhNonZeroReservedField);
                    }
                    if std::mem::replace(&mut fh, true) {
                        self.event(E::Ipv6ExthdrDuplFh);
                        FRAG_HEADER_LEN
                    } else {
                        let fo = be16([f[2], f[3]]);
                        let offset = usize::from(fo & 0xfff8);
                        let more = fo & 0x0001 != 0;
                        let id = be32([f[4], f[5], f[6], f[7]]);
                        info.id = id;
                        if !more && offset == 0 {
                            self.event(E::Ipv6ExthdrUselessFh);
                            FRAG_HEADER_LEN
                        } else {
                            if more && remaining % 8 != 0 {
                                self.event(E::Ipv6FragInvalidLength);
                            }
                            if offset + (remaining - FRAG_HEADER_LEN) > IPV6_MAX_PACKET {
                                self.event(E::Ipv6FragPktTooLarge);
                            }
                            let data = pos + FRAG_HEADER_LEN;
                            info.fragment = Some(FragInfo {
                                offset: offset as u32,
                                more_fragments: more,
                                id,
                                data: data..end,
                            });
                            if offset != 0 {
                                info.header.end = data;
                                info.proto = next;
                                self.pkt.ip = Some(info);
                                self.fragment_data(next, data, end);
                                break;
                            }
                            first_fragment_events = Some(self.pkt.events);
                            FRAG_HEADER_LEN
                        }
                    }
                }
                IPPROTO_ESP => {
                    self.pkt.ip = Some(info);
                    self.esp(pos, end);
                    break;
                }
                IPPROTO_AH => {
                    // The length counts 4-byte words beyond the first two.
                    let extra = usize::from(len_byte.saturating_sub(1)) * 4;
                    let hdr_len = AH_HEADER_LEN + extra;
                    if hdr_len > remaining {
                        self.event(E::Ipv6TruncExthdr);
                        self.set_ip_other(info, nh, pos);
                        break;
                    }
                    if array::<2>(rest, 2).is_some_and(|r| be16(*r) != 0) {
                        self.event(E::Ipv6ExthdrAhResNotNull);
                    }
                    if std::mem::replace(&mut ah, true) {
                        self.event(E::Ipv6ExthdrDuplAh);
                    }
                    hdr_len
                }
                IPPROTO_IPIP => {
                    self.set_ip_other(info, nh, pos);
                    if first_fragment_events.is_none() {
                        self.ipv4_in_ipv6(pos, end);
                    }
                    break;
                }
                IPPROTO_ICMP => {
                    self.event(E::Ipv6Icmpv4);
                    self.set_ip_other(info, nh, pos);
                    break;
                }
                _ => {
                    self.event(E::Ipv6UnknownNextHeader);
                    self.set_ip_other(info, nh, pos);
                    break;
                }
            };
            nh = next;
            pos += hdr_len;
        }

        if let Some(events) = first_fragment_events {
            self.pkt.events = events;
            // Whatever the walk found, a first fragment without a decoded
            // transport carries its fragment data as payload.
            if matches!(self.pkt.l4, L4::Other(_) | L4::None) {
                if let Some(frag) = self.pkt.ip.as_ref().and_then(|i| i.fragment.clone()) {
                    let at = frag.data.start;
                    self.pkt.l4_header = at..at;
                    self.pkt.payload = frag.data;
                }
            }
        }
    }

    /// Hop-by-hop / destination options (RFC 8200 4.2), checked like
    /// Suricata: the length test allows one byte less than the option
    /// needs, exactly as Suricata's does.
    fn ipv6_options(&mut self, opts: &[u8], hop: bool) {
        let (mut padding, mut other) = (0u16, 0u16);
        let mut pos = 0usize;
        while let Some(&kind) = opts.get(pos) {
            if kind == OPT_PAD1 {
                padding += 1;
                pos += 1;
                continue;
            }
            let Some(len) = u8_at(opts, pos + 1).map(usize::from) else {
                self.event(E::Ipv6ExthdrInvalidOptlen);
                break;
            };
            if pos + 1 + len > opts.len() {
                self.event(E::Ipv6ExthdrInvalidOptlen);
                break;
            }
            match kind {
                OPT_PADN => {
                    padding += 1;
                    if len == 0 {
                        self.event(E::Ipv6ZeroLenPadn);
                    }
                }
                OPT_RA | OPT_JUMBO | OPT_HAO => {
                    let min = match kind {
                        OPT_RA => 2,
                        OPT_JUMBO => 4,
                        _ => 16,
                    };
                    if len < min {
                        self.event(E::Ipv6ExthdrInvalidOptlen);
                        break;
                    }
                    // Suricata does not count a jumbo payload option as content.
                    if kind != OPT_JUMBO {
                        other += 1;
                    }
                }
                _ => {
                    self.event(if hop {
                        E::Ipv6HopoptsUnknownOpt
                    } else {
                        E::Ipv6DstoptsUnknownOpt
                    });
                    other += 1;
                }
            }
            pos += len + 2;
        }
        if padding > 0 && other == 0 {
            self.event(if hop {
                E::Ipv6HopoptsOnlyPadding
            } else {
                E::Ipv6DstoptsOnlyPadding
            });
        }
    }

    /// IPv4 carried directly in IPv6 (next header 4).
    pub(crate) fn ipv4_in_ipv6(&mut self, off: usize, end: usize) {
        let Some(h) = array::<{ crate::ipv4::IPV4_HEADER_LEN }>(self.bytes(off, end), 0) else {
            self.event(E::Ipv4InIpv6TooSmall);
            return;
        };
        if h[0] >> 4 == 4 {
            self.tunnel(TunnelKind::Ipv6, off, |d| d.ipv4(off, end));
        } else {
            self.event(E::Ipv4InIpv6WrongVersion);
        }
    }

    /// IPv6 carried directly in IPv6 (next header 41).
    fn ipv6_in_ipv6(&mut self, off: usize, end: usize) {
        let Some(h) = array::<IPV6_HEADER_LEN>(self.bytes(off, end), 0) else {
            self.event(E::Ipv6InIpv6TooSmall);
            return;
        };
        if h[0] >> 4 == 6 {
            self.tunnel(TunnelKind::Ipv6, off, |d| d.ipv6(off, end));
        } else {
            self.event(E::Ipv6InIpv6WrongVersion);
        }
    }
}
