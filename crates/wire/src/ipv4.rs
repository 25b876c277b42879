//! IPv4 (RFC 791): header, options, fragments, and what comes next.
//!
//! Header checks, in Suricata's order, each fatal to the IP layer (the
//! packet keeps `ip: None`): at least 20 bytes, version 4, IHL >= 5, total
//! length >= header length, total length <= captured bytes. The total
//! length then bounds the transport layer, so link-layer padding is never
//! payload.
//!
//! Options are walked and validated like Suricata does (record route,
//! timestamps, security, CIPSO, stream id, router alert, quick start);
//! problems raise `ipv4.opt_*` events but do not drop the IP layer.
//!
//! Fragments get a [`FragInfo`]; the transport of a first fragment is
//! decoded when its header is complete, without events. `offset + length >
//! 65535` raises `ipv4.frag_pkt_too_large` here (Suricata raises it in its
//! defragmenter); overlap checks need state and belong to reassembly.

use std::net::{IpAddr, Ipv4Addr};

use crate::bytes::{array, be16, u8_at};
use crate::decoder::Decoder;
use crate::transport::{L4Ctx, IPPROTO_GRE, IPPROTO_ICMPV6, IPPROTO_IPIP, IPPROTO_IPV6};
use crate::DecoderEvent as E;
use crate::{FragInfo, IpInfo, TunnelKind, L4};

pub(crate) const IPV4_HEADER_LEN: usize = 20;
const IPV4_MAX_PACKET: u32 = 65535;

const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_RR: u8 = 7;
const OPT_QS: u8 = 25;
const OPT_TS: u8 = 68;
const OPT_SEC: u8 = 130;
const OPT_LSRR: u8 = 131;
const OPT_CIPSO: u8 = 134;
const OPT_SID: u8 = 136;
const OPT_SSRR: u8 = 137;
const OPT_RTRALT: u8 = 148;

const OPT_QS_MIN: usize = 8;
const OPT_SEC_LEN: usize = 11;
const OPT_SID_LEN: usize = 4;
const OPT_RTRALT_LEN: usize = 4;
const OPT_ROUTE_MIN: usize = 3;
const OPT_TS_MIN: usize = 5;
const OPT_CIPSO_MIN: usize = 10;

impl Decoder<'_, '_> {
    pub(crate) fn ipv4(&mut self, off: usize, end: usize) {
        if !self.enter_layer() {
            return;
        }
        let buf = self.bytes(off, end);
        let Some(h) = array::<IPV4_HEADER_LEN>(buf, 0) else {
            self.event(E::Ipv4PktTooSmall);
            return;
        };
        if h[0] >> 4 != 4 {
            self.event(E::Ipv4WrongIpVersion);
            return;
        }
        let hlen = usize::from(h[0] & 0x0f) * 4;
        if hlen < IPV4_HEADER_LEN {
            self.event(E::Ipv4HlenTooSmall);
            return;
        }
        let total = usize::from(be16([h[2], h[3]]));
        if total < hlen {
            self.event(E::Ipv4IplenSmallerThanHlen);
            return;
        }
        if buf.len() < total {
            self.event(E::Ipv4TruncPkt);
            return;
        }

        let proto = h[9];
        let ttl = h[8];
        let frag = be16([h[6], h[7]]);
        let mut info = IpInfo {
            version: 4,
            src: IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15])),
            dst: IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19])),
            proto,
            ttl,
            tos: h[1],
            id: u32::from(be16([h[4], h[5]])),
            header: off..off + hlen,
            fixed_header: off..off + IPV4_HEADER_LEN,
            fragment: None,
            dont_fragment: frag & 0x4000 != 0,
            reserved_bit: frag & 0x8000 != 0,
            ipv4_options: [0; 8],
            ipv4_option_count: 0,
        };
        if hlen > IPV4_HEADER_LEN {
            let opts = buf.get(IPV4_HEADER_LEN..hlen).unwrap_or(&[]);
            // Suricata reads a timestamp option's flag byte past the option
            // itself; keep the bytes after the options for that.
            let after = buf.get(IPV4_HEADER_LEN..).unwrap_or(&[]);
            self.ipv4_options(opts, after, &mut info);
        }

        let l4_off = off + hlen;
        let l4_end = off + total;
        let frag_offset = u32::from(frag & 0x1fff) * 8;
        let more_fragments = frag & 0x2000 != 0;
        let ctx = L4Ctx {
            version: 4,
            hop_limit: ttl,
            first_fragment: false,
        };

        if frag_offset > 0 || more_fragments {
            let data_len = (total - hlen) as u32;
            if frag_offset + data_len > IPV4_MAX_PACKET {
                self.event(E::Ipv4FragPktTooLarge);
            }
            info.fragment = Some(FragInfo {
                offset: frag_offset,
                more_fragments,
                id: info.id,
                data: l4_off..l4_end,
            });
            self.pkt.ip = Some(info);
            if frag_offset == 0 {
                let ctx = L4Ctx {
                    first_fragment: true,
                    ..ctx
                };
                self.transport(proto, l4_off, l4_end, ctx);
            } else {
                self.fragment_data(proto, l4_off, l4_end);
            }
            return;
        }

        self.pkt.ip = Some(info);
        if self.transport(proto, l4_off, l4_end, ctx) {
            return;
        }
        self.set_l4(L4::Other(proto), l4_off..l4_off, l4_off..l4_off);
        match proto {
            IPPROTO_GRE => self.gre(l4_off, l4_end),
            IPPROTO_IPV6 => self.tunnel(TunnelKind::Ipv4, l4_off, |d| d.ipv6(l4_off, l4_end)),
            IPPROTO_IPIP => self.tunnel(TunnelKind::Ipv4, l4_off, |d| d.ipv4(l4_off, l4_end)),
            IPPROTO_ICMPV6 => self.event(E::Ipv4Icmpv6),
            _ => {}
        }
    }

    /// Walks the options like Suricata's `DecodeIPV4Options`.
    fn ipv4_options(&mut self, opts: &[u8], after: &[u8], info: &mut IpInfo) {
        if opts.len() % 8 != 0 {
            self.event(E::Ipv4OptPadRequired);
        }
        // One bit per validated option kind, for duplicate detection.
        let mut seen: u16 = 0;
        let mut pos = 0usize;
        while let Some(&kind) = opts.get(pos) {
            match kind {
                OPT_EOL => {
                    record_option(info, kind);
                    break;
                }
                OPT_NOP => {
                    record_option(info, kind);
                    pos += 1;
                    continue;
                }
                _ => {}
            }
            let remaining = opts.len() - pos;
            let Some(len) = u8_at(opts, pos + 1).map(usize::from) else {
                self.event(E::Ipv4OptEolRequired);
                break;
            };
            if len > remaining || len < 2 {
                self.event(E::Ipv4OptInvalidLen);
                return;
            }
            let opt = opts.get(pos..pos + len).unwrap_or(&[]);
            let bit = match kind {
                OPT_TS => 1 << 0,
                OPT_RR => 1 << 1,
                OPT_QS => 1 << 2,
                OPT_SEC => 1 << 3,
                OPT_LSRR => 1 << 4,
                OPT_CIPSO => 1 << 5,
                OPT_SID => 1 << 6,
                OPT_SSRR => 1 << 7,
                OPT_RTRALT => 1 << 8,
                _ => 0,
            };
            if bit == 0 {
                self.event(E::Ipv4OptInvalid);
            } else if seen & bit != 0 {
                self.event(E::Ipv4OptDuplicate);
            } else {
                let valid = match kind {
                    OPT_TS => validate_timestamp(opt, after.get(pos..).unwrap_or(&[])),
                    OPT_RR | OPT_LSRR | OPT_SSRR => validate_route(opt),
                    OPT_CIPSO => validate_cipso(opt),
                    _ => validate_generic(kind, opt),
                };
                if let Err(e) = valid {
                    self.event(e);
                    return;
                }
                seen |= bit;
                record_option(info, kind);
            }
            pos += len;
        }
    }
}

/// Records an option kind once, up to the 8 slots `IpInfo` has.
fn record_option(info: &mut IpInfo, kind: u8) {
    let n = usize::from(info.ipv4_option_count);
    if info.ipv4_options().contains(&kind) {
        return;
    }
    if let Some(slot) = info.ipv4_options.get_mut(n) {
        *slot = kind;
        info.ipv4_option_count += 1;
    }
}

fn validate_generic(kind: u8, opt: &[u8]) -> Result<(), E> {
    let len = opt.len();
    let ok = match kind {
        OPT_QS => len >= OPT_QS_MIN,
        OPT_SEC => len == OPT_SEC_LEN,
        OPT_SID => len == OPT_SID_LEN,
        OPT_RTRALT => len == OPT_RTRALT_LEN,
        _ => return Err(E::Ipv4OptUnknown),
    };
    if ok {
        Ok(())
    } else {
        Err(E::Ipv4OptInvalidLen)
    }
}

/// Record route, loose and strict source route: the 1-based pointer must
/// point past type/length/pointer, at a 4-byte slot, within the option.
fn validate_route(opt: &[u8]) -> Result<(), E> {
    if opt.len() < OPT_ROUTE_MIN {
        return Err(E::Ipv4OptInvalidLen);
    }
    let ptr = usize::from(u8_at(opt, 2).ok_or(E::Ipv4OptMalformed)?);
    if ptr < 4 || ptr % 4 != 0 || ptr > opt.len() + 1 {
        return Err(E::Ipv4OptMalformed);
    }
    Ok(())
}

/// Timestamp (RFC 781). `at` is the option followed by whatever comes after
/// it: Suricata takes the flag from the option's sixth byte.
fn validate_timestamp(opt: &[u8], at: &[u8]) -> Result<(), E> {
    if opt.len() < OPT_TS_MIN {
        return Err(E::Ipv4OptInvalidLen);
    }
    let ptr = usize::from(u8_at(opt, 2).ok_or(E::Ipv4OptMalformed)?);
    if ptr < 5 {
        return Err(E::Ipv4OptMalformed);
    }
    let flag = u8_at(at, 5).unwrap_or(0);
    let rec_size = if flag == 1 || flag == 3 { 8 } else { 4 };
    if (ptr - 5) % rec_size != 0 || ptr > opt.len() + 1 {
        return Err(E::Ipv4OptMalformed);
    }
    Ok(())
}

/// CIPSO: a 4-byte domain of interpretation, then tags of type/length/data.
fn validate_cipso(opt: &[u8]) -> Result<(), E> {
    if opt.len() < OPT_CIPSO_MIN {
        return Err(E::Ipv4OptInvalidLen);
    }
    let mut tags = opt.get(6..).unwrap_or(&[]);
    while !tags.is_empty() {
        let Some(&[ttype, tlen]) = array::<2>(tags, 0) else {
            return Err(E::Ipv4OptMalformed);
        };
        let tlen = usize::from(tlen);
        if tlen > tags.len() {
            return Err(E::Ipv4OptMalformed);
        }
        match ttype {
            1 | 2 | 5 | 6 | 7 => {
                if tlen < 4 {
                    return Err(E::Ipv4OptMalformed);
                }
                // The alignment octet is zero except in tag type 7.
                if ttype != 7 && u8_at(tags, 2) != Some(0) {
                    return Err(E::Ipv4OptMalformed);
                }
                tags = tags.get(tlen..).unwrap_or(&[]);
            }
            _ => return Err(E::Ipv4OptMalformed),
        }
    }
    Ok(())
}
