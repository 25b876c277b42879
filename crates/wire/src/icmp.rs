//! ICMPv4 (RFC 792) and ICMPv6 (RFC 4443 and the ND/MLD family).
//!
//! Both need the 8-byte header (`icmpv4.pkt_too_small`,
//! `icmpv6.pkt_too_small`, fatal). Type and code are checked against the
//! types Suricata knows, raising `unknown_type` / `unknown_code` (ICMPv6 also
//! `unassigned_type` and `experimentation_type` by IANA range). Error
//! messages must quote at least an IP header of the right version
//! (`ipv4_trunc_pkt` / `ipv4_unknown_ver`, `ipv6_trunc_pkt` /
//! `ipv6_unknown_version`); MLD messages must have hop limit 1.
//!
//! Payload: for ICMPv4 and the ICMPv6 error and echo messages, the bytes
//! after the 8-byte header. For the other ICMPv6 messages (ND, MLD, ...)
//! Suricata counts only 4 bytes as header, so their payload starts at
//! offset 4; `l4_header` still spans 8 bytes.
//!
//! Not done: decoding the quoted packet's transport header, checksums.

use crate::bytes::{array, be16, be32};
use crate::decoder::Decoder;
use crate::DecoderEvent as E;
use crate::{IcmpInfo, L4};

const ICMP_HEADER_LEN: usize = 8;
const ICMPV4_TIMESTAMP_LEN: usize = 12;

impl Decoder<'_, '_> {
    pub(crate) fn icmpv4(&mut self, off: usize, end: usize) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<ICMP_HEADER_LEN>(buf, 0) else {
            self.event(E::Icmpv4PktTooSmall);
            return;
        };
        let (itype, icode) = (h[0], h[1]);
        let mut info = IcmpInfo {
            itype,
            icode,
            id: None,
            seq: None,
            mtu: None,
        };
        let body = off + ICMP_HEADER_LEN;
        let quoted = buf.get(ICMP_HEADER_LEN..).unwrap_or(&[]);
        let mut with_id = || {
            info.id = Some(be16([h[4], h[5]]));
            info.seq = Some(be16([h[6], h[7]]));
        };
        match itype {
            // Echo reply, echo, information request/reply, address mask request/reply.
            0 | 8 | 15 | 16 | 17 | 18 => {
                with_id();
                if icode != 0 {
                    self.event(E::Icmpv4UnknownCode);
                }
            }
            // Timestamp request/reply: 12 more bytes of timestamps.
            13 | 14 => {
                with_id();
                if icode != 0 {
                    self.event(E::Icmpv4UnknownCode);
                }
                if buf.len() < ICMP_HEADER_LEN + ICMPV4_TIMESTAMP_LEN {
                    self.event(E::Icmpv4Ipv4TruncPkt);
                }
            }
            // Destination unreachable, redirect, time exceeded, parameter problem.
            3 | 5 | 11 | 12 => {
                let max_code = match itype {
                    3 => 15,
                    5 => 3,
                    11 => 1,
                    _ => 0,
                };
                if icode > max_code {
                    self.event(E::Icmpv4UnknownCode);
                } else if !quoted.is_empty() {
                    self.icmpv4_quoted_ip(quoted);
                }
            }
            // Source quench: Suricata checks the quote even when it is empty.
            4 => {
                if icode != 0 {
                    self.event(E::Icmpv4UnknownCode);
                } else {
                    self.icmpv4_quoted_ip(quoted);
                }
            }
            // Router advertisement: addresses * entry size (in 32-bit words).
            9 => {
                let advert_len = usize::from(h[4]) * usize::from(h[5]) * 4;
                if buf.len() < advert_len + ICMP_HEADER_LEN {
                    self.event(E::Icmpv4Ipv4TruncPkt);
                }
            }
            _ => self.event(E::Icmpv4UnknownType),
        }
        self.set_l4(L4::Icmpv4(info), off..body, body..end);
    }

    fn icmpv4_quoted_ip(&mut self, quoted: &[u8]) {
        match array::<{ crate::ipv4::IPV4_HEADER_LEN }>(quoted, 0) {
            None => self.event(E::Icmpv4Ipv4TruncPkt),
            Some(ip) if ip[0] >> 4 != 4 => self.event(E::Icmpv4Ipv4UnknownVer),
            Some(_) => {}
        }
    }

    pub(crate) fn icmpv6(&mut self, off: usize, end: usize, hop_limit: u8) {
        let buf = self.bytes(off, end);
        let Some(h) = array::<ICMP_HEADER_LEN>(buf, 0) else {
            self.event(E::Icmpv6PktTooSmall);
            return;
        };
        let (itype, icode) = (h[0], h[1]);
        let mut info = IcmpInfo {
            itype,
            icode,
            id: None,
            seq: None,
            mtu: None,
        };
        let quoted = buf.get(ICMP_HEADER_LEN..).unwrap_or(&[]);
        // Whether the message has a full 8-byte header (errors, echo).
        let mut full_header = false;
        let code_must_be_zero = |d: &mut Self| {
            if icode != 0 {
                d.event(E::Icmpv6UnknownCode);
            }
        };
        match itype {
            // Destination unreachable, packet too big, time exceeded, parameter problem.
            1..=4 => {
                let max_code = match itype {
                    1 => 6,
                    3 => 1,
                    4 => 2,
                    _ => 0,
                };
                if icode > max_code {
                    self.event(E::Icmpv6UnknownCode);
                } else {
                    if itype == 2 {
                        info.mtu = Some(be32([h[4], h[5], h[6], h[7]]));
                    }
                    self.icmpv6_quoted_ip(quoted);
                    full_header = true;
                }
            }
            // Echo request / reply.
            128 | 129 => {
                if icode != 0 {
                    self.event(E::Icmpv6UnknownCode);
                } else {
                    info.id = Some(be16([h[4], h[5]]));
                    info.seq = Some(be16([h[6], h[7]]));
                    full_header = true;
                }
            }
            // MLD query, report, done.
            130..=132 => {
                code_must_be_zero(self);
                if hop_limit != 1 {
                    self.event(E::Icmpv6MldMessageWithInvalidHl);
                }
            }
            // Router renumbering.
            138 => {
                if icode > 2 && icode != 255 {
                    self.event(E::Icmpv6UnknownCode);
                }
            }
            // Node information query / reply.
            139 | 140 => {
                if icode > 2 {
                    self.event(E::Icmpv6UnknownCode);
                }
            }
            // RPL control.
            155 => {
                if (icode > 3 && icode < 128) || icode > 132 {
                    self.event(E::Icmpv6UnknownCode);
                }
            }
            // Mobile experimental, multicast router advertisement/solicitation/termination.
            150..=153 => {}
            // ND, inverse ND, MLDv2 report, home agent / mobile prefix /
            // certification path, FMIPv6, locator update, duplicate address
            // request / confirmation, MPL control.
            133..=137 | 141..=149 | 154 | 156..=159 => code_must_be_zero(self),
            5..=99 => self.event(E::Icmpv6UnassignedType),
            100 | 101 | 200 | 201 => self.event(E::Icmpv6ExperimentationType),
            102..=126 | 160..=199 | 202..=255 => self.event(E::Icmpv6UnassignedType),
            _ => self.event(E::Icmpv6UnknownType),
        }
        let header = off..off + ICMP_HEADER_LEN;
        let payload_start = if full_header {
            off + ICMP_HEADER_LEN
        } else {
            off + ICMP_HEADER_LEN / 2
        };
        self.set_l4(L4::Icmpv6(info), header, payload_start..end);
    }

    fn icmpv6_quoted_ip(&mut self, quoted: &[u8]) {
        match array::<{ crate::ipv6::IPV6_HEADER_LEN }>(quoted, 0) {
            None => self.event(E::Icmpv6Ipv6TruncPkt),
            Some(ip) if ip[0] >> 4 != 6 => self.event(E::Icmpv6Ipv6UnknownVersion),
            Some(_) => {}
        }
    }
}
