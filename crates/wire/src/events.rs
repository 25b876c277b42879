//! Decoder events: the anomalies Suricata's packet decoders report.
//!
//! Each [`DecoderEvent`] carries the name Suricata gives it in
//! `decode-event:` rule options and in `rules/decoder-events.rules`, i.e.
//! the part after `decoder.` in `src/decode-events.c` (`ipv4.trunc_pkt`,
//! `tcp.opt_invalid_len`, `too_many_layers` ...). The list holds every
//! decoder event Suricata defines, including ones for layers Vigil does not
//! decode (NSH, VN-Tag, Cisco HDLC ...), so that any `decode-event:` rule
//! Suricata accepts resolves to a variant here; stream events live with the
//! stream tracker, not here.
//!
//! [`DecoderEvents`] is the per-packet set: a fixed-size bitset, `Copy`, no
//! allocation, iterated in declaration order.

use std::fmt;

macro_rules! decoder_events {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, )+) => {
        /// One decoder anomaly, named as in Suricata.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum DecoderEvent {
            $( $(#[$doc])* $variant, )+
        }

        impl DecoderEvent {
            /// Every event, in declaration order (the order of `decode-events.c`).
            pub const ALL: &'static [DecoderEvent] = &[ $( DecoderEvent::$variant, )+ ];

            /// Suricata's name, as written after `decode-event:` in a rule.
            pub const fn name(self) -> &'static str {
                match self {
                    $( DecoderEvent::$variant => $name, )+
                }
            }

            /// Looks an event up by its rule name. The `decoder.` prefix used by
            /// Suricata's stats counters and `decode-events.c` is accepted too.
            pub fn from_name(name: &str) -> Option<DecoderEvent> {
                let name = name.strip_prefix("decoder.").unwrap_or(name);
                match name {
                    $( $name => Some(DecoderEvent::$variant), )+
                    _ => None,
                }
            }
        }
    };
}

decoder_events! {
    // IPv4
    Ipv4PktTooSmall => "ipv4.pkt_too_small",
    Ipv4HlenTooSmall => "ipv4.hlen_too_small",
    Ipv4IplenSmallerThanHlen => "ipv4.iplen_smaller_than_hlen",
    Ipv4TruncPkt => "ipv4.trunc_pkt",
    Ipv4OptInvalid => "ipv4.opt_invalid",
    Ipv4OptInvalidLen => "ipv4.opt_invalid_len",
    Ipv4OptMalformed => "ipv4.opt_malformed",
    Ipv4OptPadRequired => "ipv4.opt_pad_required",
    Ipv4OptEolRequired => "ipv4.opt_eol_required",
    Ipv4OptDuplicate => "ipv4.opt_duplicate",
    Ipv4OptUnknown => "ipv4.opt_unknown",
    Ipv4WrongIpVersion => "ipv4.wrong_ip_version",
    Ipv4Icmpv6 => "ipv4.icmpv6",
    // ICMPv4
    Icmpv4PktTooSmall => "icmpv4.pkt_too_small",
    Icmpv4UnknownType => "icmpv4.unknown_type",
    Icmpv4UnknownCode => "icmpv4.unknown_code",
    Icmpv4Ipv4TruncPkt => "icmpv4.ipv4_trunc_pkt",
    Icmpv4Ipv4UnknownVer => "icmpv4.ipv4_unknown_ver",
    // ICMPv6
    Icmpv6UnknownType => "icmpv6.unknown_type",
    Icmpv6UnknownCode => "icmpv6.unknown_code",
    Icmpv6PktTooSmall => "icmpv6.pkt_too_small",
    Icmpv6Ipv6UnknownVersion => "icmpv6.ipv6_unknown_version",
    Icmpv6Ipv6TruncPkt => "icmpv6.ipv6_trunc_pkt",
    Icmpv6MldMessageWithInvalidHl => "icmpv6.mld_message_with_invalid_hl",
    Icmpv6UnassignedType => "icmpv6.unassigned_type",
    Icmpv6ExperimentationType => "icmpv6.experimentation_type",
    // IPv6
    Ipv6PktTooSmall => "ipv6.pkt_too_small",
    Ipv6TruncPkt => "ipv6.trunc_pkt",
    Ipv6TruncExthdr => "ipv6.trunc_exthdr",
    Ipv6ExthdrDuplFh => "ipv6.exthdr_dupl_fh",
    Ipv6ExthdrUselessFh => "ipv6.exthdr_useless_fh",
    Ipv6ExthdrDuplRh => "ipv6.exthdr_dupl_rh",
    Ipv6ExthdrDuplHh => "ipv6.exthdr_dupl_hh",
    Ipv6ExthdrDuplDh => "ipv6.exthdr_dupl_dh",
    Ipv6ExthdrDuplAh => "ipv6.exthdr_dupl_ah",
    Ipv6ExthdrDuplEh => "ipv6.exthdr_dupl_eh",
    Ipv6ExthdrInvalidOptlen => "ipv6.exthdr_invalid_optlen",
    Ipv6WrongIpVersion => "ipv6.wrong_ip_version",
    Ipv6ExthdrAhResNotNull => "ipv6.exthdr_ah_res_not_null",
    Ipv6HopoptsUnknownOpt => "ipv6.hopopts_unknown_opt",
    Ipv6HopoptsOnlyPadding => "ipv6.hopopts_only_padding",
    Ipv6DstoptsUnknownOpt => "ipv6.dstopts_unknown_opt",
    Ipv6DstoptsOnlyPadding => "ipv6.dstopts_only_padding",
    Ipv6RhType0 => "ipv6.rh_type_0",
    Ipv6ZeroLenPadn => "ipv6.zero_len_padn",
    Ipv6FhNonZeroReservedField => "ipv6.fh_non_zero_reserved_field",
    Ipv6DataAfterNoneHeader => "ipv6.data_after_none_header",
    Ipv6UnknownNextHeader => "ipv6.unknown_next_header",
    Ipv6Icmpv4 => "ipv6.icmpv4",
    // TCP
    TcpPktTooSmall => "tcp.pkt_too_small",
    TcpHlenTooSmall => "tcp.hlen_too_small",
    TcpInvalidOptlen => "tcp.invalid_optlen",
    TcpOptInvalidLen => "tcp.opt_invalid_len",
    TcpOptDuplicate => "tcp.opt_duplicate",
    // UDP
    UdpPktTooSmall => "udp.pkt_too_small",
    UdpHlenTooSmall => "udp.hlen_too_small",
    /// Kept for rules written against Suricata < 8; no longer raised.
    UdpHlenInvalid => "udp.hlen_invalid",
    UdpLenInvalid => "udp.len_invalid",
    // Link layers
    SllPktTooSmall => "sll.pkt_too_small",
    EthernetPktTooSmall => "ethernet.pkt_too_small",
    EthernetUnknownEthertype => "ethernet.unknown_ethertype",
    PppPktTooSmall => "ppp.pkt_too_small",
    PppVjuPktTooSmall => "ppp.vju_pkt_too_small",
    PppIp4PktTooSmall => "ppp.ip4_pkt_too_small",
    PppIp6PktTooSmall => "ppp.ip6_pkt_too_small",
    PppWrongType => "ppp.wrong_type",
    PppUnsupProto => "ppp.unsup_proto",
    PppoePktTooSmall => "pppoe.pkt_too_small",
    PppoeWrongCode => "pppoe.wrong_code",
    PppoeMalformedTags => "pppoe.malformed_tags",
    // GRE
    GrePktTooSmall => "gre.pkt_too_small",
    GreWrongVersion => "gre.wrong_version",
    GreVersion0Recur => "gre.version0_recur",
    GreVersion0Flags => "gre.version0_flags",
    GreVersion0HdrTooBig => "gre.version0_hdr_too_big",
    GreVersion0MalformedSreHdr => "gre.version0_malformed_sre_hdr",
    GreVersion1Chksum => "gre.version1_chksum",
    GreVersion1Route => "gre.version1_route",
    GreVersion1Ssr => "gre.version1_ssr",
    GreVersion1Recur => "gre.version1_recur",
    GreVersion1Flags => "gre.version1_flags",
    GreVersion1NoKey => "gre.version1_no_key",
    GreVersion1WrongProtocol => "gre.version1_wrong_protocol",
    GreVersion1MalformedSreHdr => "gre.version1_malformed_sre_hdr",
    GreVersion1HdrTooBig => "gre.version1_hdr_too_big",
    // VLAN and friends
    VlanHeaderTooSmall => "vlan.header_too_small",
    VlanUnknownType => "vlan.unknown_type",
    VlanTooManyLayers => "vlan.too_many_layers",
    Ieee8021ahHeaderTooSmall => "ieee8021ah.header_too_small",
    VntagHeaderTooSmall => "vntag.header_too_small",
    VntagUnknownType => "vntag.unknown_type",
    IprawInvalidIpVersion => "ipraw.invalid_ip_version",
    LtnullPktTooSmall => "ltnull.pkt_too_small",
    LtnullUnsupportedType => "ltnull.unsupported_type",
    IgmpPktTooSmall => "igmp.pkt_too_small",
    IgmpV3PktTooSmall => "igmp.v3_pkt_too_small",
    IgmpMalformed => "igmp.malformed",
    SctpPktTooSmall => "sctp.pkt_too_small",
    SctpChunkTooSmall => "sctp.chunk_too_small",
    SctpChunkLenInvalid => "sctp.chunk_len_invalid",
    SctpInitChunkBundled => "sctp.init_chunk_bundled",
    SctpInitWithNonZeroVtag => "sctp.init_with_non_zero_vtag",
    SctpDataWithZeroVtag => "sctp.data_with_zero_vtag",
    SctpTooManyChunks => "sctp.too_many_chunks",
    SctpTooManyDataChunks => "sctp.too_many_data_chunks",
    EspPktTooSmall => "esp.pkt_too_small",
    // Fragmentation
    Ipv4FragPktTooLarge => "ipv4.frag_pkt_too_large",
    Ipv6FragPktTooLarge => "ipv6.frag_pkt_too_large",
    Ipv4FragOverlap => "ipv4.frag_overlap",
    Ipv6FragOverlap => "ipv6.frag_overlap",
    Ipv6FragInvalidLength => "ipv6.frag_invalid_length",
    Ipv4FragIgnored => "ipv4.frag_ignored",
    Ipv6FragIgnored => "ipv6.frag_ignored",
    // IP in IPv6
    Ipv4InIpv6TooSmall => "ipv6.ipv4_in_ipv6_too_small",
    Ipv4InIpv6WrongVersion => "ipv6.ipv4_in_ipv6_wrong_version",
    Ipv6InIpv6TooSmall => "ipv6.ipv6_in_ipv6_too_small",
    Ipv6InIpv6WrongVersion => "ipv6.ipv6_in_ipv6_wrong_version",
    // MPLS
    MplsHeaderTooSmall => "mpls.header_too_small",
    MplsPktTooSmall => "mpls.pkt_too_small",
    MplsBadLabelRouterAlert => "mpls.bad_label_router_alert",
    MplsBadLabelImplicitNull => "mpls.bad_label_implicit_null",
    MplsBadLabelReserved => "mpls.bad_label_reserved",
    MplsUnknownPayloadType => "mpls.unknown_payload_type",
    // Overlays
    VxlanUnknownPayloadType => "vxlan.unknown_payload_type",
    GeneveUnknownPayloadType => "geneve.unknown_payload_type",
    ErspanHeaderTooSmall => "erspan.header_too_small",
    ErspanUnsupportedVersion => "erspan.unsupported_version",
    ErspanTooManyVlanLayers => "erspan.too_many_vlan_layers",
    DcePktTooSmall => "dce.pkt_too_small",
    ChdlcPktTooSmall => "chdlc.pkt_too_small",
    NshHeaderTooSmall => "nsh.header_too_small",
    NshUnsupportedVersion => "nsh.unsupported_version",
    NshBadHeaderLength => "nsh.bad_header_length",
    NshReservedType => "nsh.reserved_type",
    NshUnsupportedType => "nsh.unsupported_type",
    NshUnknownPayload => "nsh.unknown_payload",
    /// More nested layers than the decoder follows (Suricata's `decoder.max-layers`).
    TooManyLayers => "too_many_layers",
}

impl fmt::Display for DecoderEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const WORDS: usize = DecoderEvent::ALL.len().div_ceil(64);

/// A fixed-size set of events raised while decoding one packet.
///
/// `Copy` and allocation-free: one bit per [`DecoderEvent`].
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DecoderEvents {
    bits: [u64; WORDS],
}

impl DecoderEvent {
    /// Whether the event makes a packet invalid (Suricata's
    /// `ENGINE_SET_INVALID_EVENT`), so that a packet without an IP layer
    /// is still inspected by `pkthdr` rules. A few events only note what
    /// the decoder did not follow (`ENGINE_SET_EVENT`): an unsupported PPP
    /// protocol (LCP, IPCP ... in PPPoE sessions), an unknown Ethernet,
    /// VLAN or VN-Tag type.
    pub const fn marks_invalid(self) -> bool {
        !matches!(
            self,
            DecoderEvent::PppUnsupProto
                | DecoderEvent::EthernetUnknownEthertype
                | DecoderEvent::VlanUnknownType
                | DecoderEvent::VntagUnknownType
        )
    }
}

impl DecoderEvents {
    /// The empty set.
    pub const fn new() -> Self {
        DecoderEvents { bits: [0; WORDS] }
    }

    #[inline]
    fn slot(e: DecoderEvent) -> (usize, u64) {
        let i = e as usize;
        (i / 64, 1u64 << (i % 64))
    }

    /// Adds `e`; returns whether it was not already present.
    #[inline]
    pub fn insert(&mut self, e: DecoderEvent) -> bool {
        let (w, m) = Self::slot(e);
        match self.bits.get_mut(w) {
            Some(word) => {
                let new = *word & m == 0;
                *word |= m;
                new
            }
            None => false,
        }
    }

    /// Removes `e`; returns whether it was present.
    #[inline]
    pub fn remove(&mut self, e: DecoderEvent) -> bool {
        let (w, m) = Self::slot(e);
        match self.bits.get_mut(w) {
            Some(word) => {
                let had = *word & m != 0;
                *word &= !m;
                had
            }
            None => false,
        }
    }

    #[inline]
    pub fn contains(&self, e: DecoderEvent) -> bool {
        let (w, m) = Self::slot(e);
        self.bits.get(w).is_some_and(|word| word & m != 0)
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// Number of distinct events in the set.
    #[inline]
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Adds every event of `other`.
    #[inline]
    pub fn extend_from(&mut self, other: &DecoderEvents) {
        for (a, b) in self.bits.iter_mut().zip(other.bits.iter()) {
            *a |= b;
        }
    }

    /// The events in declaration order.
    pub fn iter(&self) -> DecoderEventsIter {
        DecoderEventsIter {
            bits: self.bits,
            word: 0,
        }
    }
}

impl fmt::Debug for DecoderEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(DecoderEvent::name))
            .finish()
    }
}

impl FromIterator<DecoderEvent> for DecoderEvents {
    fn from_iter<I: IntoIterator<Item = DecoderEvent>>(iter: I) -> Self {
        let mut set = DecoderEvents::new();
        for e in iter {
            set.insert(e);
        }
        set
    }
}

impl IntoIterator for DecoderEvents {
    type Item = DecoderEvent;
    type IntoIter = DecoderEventsIter;
    fn into_iter(self) -> DecoderEventsIter {
        self.iter()
    }
}

impl IntoIterator for &DecoderEvents {
    type Item = DecoderEvent;
    type IntoIter = DecoderEventsIter;
    fn into_iter(self) -> DecoderEventsIter {
        self.iter()
    }
}

/// Iterator over a [`DecoderEvents`] set, in declaration order.
#[derive(Debug, Clone)]
pub struct DecoderEventsIter {
    bits: [u64; WORDS],
    word: usize,
}

impl Iterator for DecoderEventsIter {
    type Item = DecoderEvent;

    fn next(&mut self) -> Option<DecoderEvent> {
        while let Some(w) = self.bits.get_mut(self.word) {
            if *w == 0 {
                self.word += 1;
                continue;
            }
            let bit = w.trailing_zeros() as usize;
            *w &= *w - 1;
            return DecoderEvent::ALL.get(self.word * 64 + bit).copied();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (i, &e) in DecoderEvent::ALL.iter().enumerate() {
            assert_eq!(e as usize, i, "ALL is in declaration order");
            assert!(seen.insert(e.name()), "duplicate name {}", e.name());
            assert_eq!(DecoderEvent::from_name(e.name()), Some(e));
            let prefixed = format!("decoder.{}", e.name());
            assert_eq!(DecoderEvent::from_name(&prefixed), Some(e));
        }
        assert_eq!(DecoderEvent::from_name("ipv4.no_such_thing"), None);
        assert_eq!(DecoderEvent::from_name(""), None);
    }

    #[test]
    fn known_suricata_names() {
        for name in [
            "ipv4.pkt_too_small",
            "ipv4.opt_pad_required",
            "ipv6.exthdr_useless_fh",
            "ipv6.frag_invalid_length",
            "ipv6.ipv4_in_ipv6_wrong_version",
            "tcp.opt_invalid_len",
            "udp.len_invalid",
            "icmpv6.mld_message_with_invalid_hl",
            "vlan.too_many_layers",
            "ltnull.unsupported_type",
            "pppoe.malformed_tags",
            "gre.version0_recur",
            "mpls.bad_label_router_alert",
            "too_many_layers",
        ] {
            assert!(DecoderEvent::from_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn set_operations() {
        let mut s = DecoderEvents::new();
        assert!(s.is_empty());
        assert_eq!(s.len(), 0);
        assert!(s.insert(DecoderEvent::TooManyLayers));
        assert!(!s.insert(DecoderEvent::TooManyLayers));
        assert!(s.insert(DecoderEvent::Ipv4PktTooSmall));
        assert!(s.insert(DecoderEvent::UdpLenInvalid));
        assert_eq!(s.len(), 3);
        assert!(s.contains(DecoderEvent::UdpLenInvalid));
        assert!(!s.contains(DecoderEvent::UdpPktTooSmall));
        let v: Vec<_> = s.iter().collect();
        assert_eq!(
            v,
            vec![
                DecoderEvent::Ipv4PktTooSmall,
                DecoderEvent::UdpLenInvalid,
                DecoderEvent::TooManyLayers
            ]
        );
        assert!(s.remove(DecoderEvent::UdpLenInvalid));
        assert!(!s.remove(DecoderEvent::UdpLenInvalid));
        assert_eq!(s.len(), 2);
        let all: DecoderEvents = DecoderEvent::ALL.iter().copied().collect();
        assert_eq!(all.len(), DecoderEvent::ALL.len());
        assert_eq!(all.iter().count(), DecoderEvent::ALL.len());
        assert_eq!(
            format!("{:?}", s),
            "{\"ipv4.pkt_too_small\", \"too_many_layers\"}"
        );
    }
}
