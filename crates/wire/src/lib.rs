//! Wire decoding: zero-copy views over captured frames.
//!
//! [`decode`] walks a frame from its link layer down to the transport layer
//! and fills a [`Packet`] whose fields are copies of small header values and
//! byte ranges into the original frame. It never allocates, never panics and
//! never fails: malformed or truncated input is reported as
//! [`DecoderEvent`]s on the packet (Suricata's event names), and decoding
//! stops at the layer that was bad.
//!
//! What it deliberately does not do: reassemble fragments or streams, keep
//! any state between packets, verify checksums, or interpret application
//! data.
//!
//! # Layers
//!
//! One module per layer, each an `impl` block on the shared decoding context
//! (`decoder.rs`):
//!
//! | module | decodes |
//! |---|---|
//! | `link` | pcap link types: BSD null/loop, raw IP, Linux SLL/SLL2 |
//! | `ethernet` | Ethernet, ethertype dispatch, 802.1Q/802.1ad/QinQ, 802.1ah, MPLS |
//! | `ppp` | PPP (HDLC-framed or bare), PPPoE session and discovery |
//! | `ipv4` | IPv4 header, options, fragments |
//! | `ipv6` | IPv6 header, extension headers, fragments |
//! | `transport` | transport dispatch, SCTP, ESP |
//! | `tcp`, `udp`, `icmp` | TCP (+options), UDP, ICMPv4/ICMPv6 |
//! | `tunnel` | IP-in-IP, GRE, ERSPAN type II, VXLAN, Geneve |
//!
//! # Semantics, following Suricata
//!
//! * A layer whose header fails validation is dropped from the packet:
//!   an IPv4/IPv6 header that is too short, has the wrong version or a bad
//!   length leaves `ip` as `None`; a bad TCP/UDP/ICMP header leaves `l4` as
//!   [`L4::None`]. The event says why.
//! * IPv4 total length and IPv6 payload length bound everything above them,
//!   so Ethernet padding is never payload.
//! * Fragments: a non-first fragment has `l4 == L4::Other(proto)` and its
//!   payload is the fragment data. A first fragment decodes its transport
//!   header when the whole header is there (no events are raised for the
//!   partial datagram; they belong to the reassembled packet).
//! * Tunnels (IP-in-IP, GRE, VXLAN, Geneve, ERSPAN): as in Suricata, the
//!   packet inside a tunnel is a packet of its own. [`decode`] stops at the
//!   first tunnel and sets [`Packet::inner_tunnel`]; [`decode_at`] with
//!   depth `k` gives the packet inside the `k`-th tunnel (its own layers and
//!   events, [`Packet::tunnel`] naming the tunnel, `outer_ip` and
//!   `outer_ports` the outermost IP packet's addresses). An overlay's inner
//!   Ethernet header (VXLAN, Geneve, GRE bridging, ERSPAN) becomes the inner
//!   packet's link header.
//! * ARP frames (on the wire or in an overlay) have no IP layer and set
//!   [`Packet::arp`]: `alert arp` and `alert ether` rules see them.

// Decoding untrusted bytes must not panic: no unchecked indexing, no unwraps.
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable
    )
)]

use std::net::IpAddr;
use std::ops::Range;

mod bytes;
mod checksum;
mod decoder;
mod ethernet;
mod events;
mod icmp;
mod ipv4;
mod ipv6;
mod link;
mod ppp;
mod tcp;
mod transport;
mod tunnel;
mod udp;

pub use events::{DecoderEvent, DecoderEvents, DecoderEventsIter};

/// Link-layer types (pcap `LINKTYPE_*` values) that Vigil decodes.
pub mod linktype {
    pub const NULL: u32 = 0;
    pub const ETHERNET: u32 = 1;
    pub const PPP: u32 = 9;
    pub const RAW: u32 = 101;
    pub const LOOP: u32 = 108;
    pub const LINUX_SLL: u32 = 113;
    pub const IPV4: u32 = 228;
    pub const IPV6: u32 = 229;
    pub const LINUX_SLL2: u32 = 276;
    /// OpenBSD's DLT_RAW value (12) as some writers store it.
    pub const RAW_OPENBSD: u32 = 12;
    /// DLT_RAW on some platforms (14).
    pub const RAW_ALT: u32 = 14;

    /// Every link type the decoder reads (robustness tests and the fuzz
    /// target walk them all).
    pub const DECODED: [u32; 11] = [
        NULL,
        ETHERNET,
        PPP,
        RAW,
        LOOP,
        LINUX_SLL,
        IPV4,
        IPV6,
        LINUX_SLL2,
        RAW_OPENBSD,
        RAW_ALT,
    ];
}

/// Network-layer facts of a decoded packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpInfo {
    /// 4 or 6.
    pub version: u8,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// Transport protocol number after IPv6 extension headers.
    pub proto: u8,
    /// TTL / hop limit.
    pub ttl: u8,
    /// IPv4 TOS / IPv6 traffic class.
    pub tos: u8,
    /// IPv4 identification; IPv6 fragment header identification (all 32
    /// bits) or 0 when there is no fragment header.
    pub id: u32,
    /// IPv4 header bytes or IPv6 fixed header plus extension headers.
    pub header: Range<usize>,
    /// IPv4 or IPv6 fixed header only (40 bytes for IPv6), for `ipv6.hdr`.
    pub fixed_header: Range<usize>,
    /// Fragmentation: is this packet a fragment (MF set or offset != 0)?
    pub fragment: Option<FragInfo>,
    /// IPv4 DF flag.
    pub dont_fragment: bool,
    /// IPv4 reserved (evil) bit.
    pub reserved_bit: bool,
    /// IPv4 option type bytes present (up to 8 recorded), as Suricata's
    /// `ipopts` keyword sees them: EOL, NOP and the options it validates
    /// (RR, QS, TS, SEC, LSRR, CIPSO, SID, SSRR, RTRALT) that passed
    /// validation, each recorded once, in order of appearance.
    pub ipv4_options: [u8; 8],
    pub ipv4_option_count: u8,
}

impl IpInfo {
    /// The recorded IPv4 option types (empty for IPv6).
    pub fn ipv4_options(&self) -> &[u8] {
        self.ipv4_options
            .get(..usize::from(self.ipv4_option_count))
            .unwrap_or(&[])
    }

    /// Whether the IPv4 option type `t` was recorded.
    pub fn has_ipv4_option(&self, t: u8) -> bool {
        self.ipv4_options().contains(&t)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragInfo {
    /// Offset in bytes.
    pub offset: u32,
    pub more_fragments: bool,
    pub id: u32,
    /// Fragment payload range in the frame.
    pub data: Range<usize>,
}

/// Where a TCP SACK option's blocks are: `count` pairs of big-endian
/// (left edge, right edge) u32 starting at `offset` in the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SackBlocks {
    pub offset: u32,
    pub count: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpInfo {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// FIN=0x01 SYN=0x02 RST=0x04 PSH=0x08 ACK=0x10 URG=0x20 ECE=0x40 CWR=0x80.
    pub flags: u8,
    pub window: u16,
    /// MSS option value if present.
    pub mss: Option<u16>,
    /// Window scale option value as sent (not clamped to 14).
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamp: Option<(u32, u32)>,
    /// SACK option blocks, if a well-formed SACK option is present
    /// (`count` may be 0: Suricata accepts an empty SACK option).
    pub sack: Option<SackBlocks>,
    /// TCP Fast Open option (kind 34, or the experimental 254/0xF989 form).
    pub tfo: bool,
    /// TCP MD5 signature option (RFC 2385) present with a valid length.
    pub md5: bool,
    /// TCP authentication option (RFC 5925) present with a valid length.
    pub ao: bool,
    /// Urgent pointer.
    pub urgent: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpInfo {
    pub src_port: u16,
    pub dst_port: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpInfo {
    pub itype: u8,
    pub icode: u8,
    /// Echo id / sequence when the type has them.
    pub id: Option<u16>,
    pub seq: Option<u16>,
    /// ICMPv6 packet-too-big MTU.
    pub mtu: Option<u32>,
}

/// An IGMP message (IPv4 protocol 2), as Suricata 9 decodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IgmpInfo {
    pub itype: u8,
    /// 1, 2 or 3; 0 for an IGMPv3 message too short for what it declares.
    pub version: u8,
}

/// An SCTP packet: the common header and a summary of its chunks, as
/// Suricata 9 decodes them (`sctp.*` keywords, the EVE `sctp` object).
/// The chunks themselves are walked again when a rule needs them
/// ([`Packet::sctp_chunks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SctpInfo {
    pub src_port: u16,
    pub dst_port: u16,
    /// Verification tag.
    pub vtag: u32,
    /// Length of the SCTP packet (common header and every chunk).
    pub len: u16,
    /// Every chunk in the packet.
    pub chunk_cnt: u16,
    /// DATA chunks among them.
    pub data_chunks: u16,
    /// Types of the first [`SCTP_MAX_TYPES`] chunks (`min(chunk_cnt, 16)`
    /// are set): what `sctp.chunk_type` matches and EVE lists.
    pub types: [u8; SCTP_MAX_TYPES],
    pub has_init: bool,
    pub has_init_ack: bool,
    pub has_data: bool,
    pub has_abort: bool,
}

/// Chunk types an [`SctpInfo`] keeps (Suricata keeps as many); more
/// chunks than this in one packet raise `sctp.too_many_chunks`.
pub const SCTP_MAX_TYPES: usize = 16;

impl SctpInfo {
    /// The recorded chunk types, first chunk first.
    pub fn chunk_types(&self) -> &[u8] {
        let n = usize::from(self.chunk_cnt).min(SCTP_MAX_TYPES);
        self.types.get(..n).unwrap_or(&self.types)
    }
}

/// SCTP chunk type values (RFC 9260).
pub mod sctp_chunk {
    pub const DATA: u8 = 0;
    pub const INIT: u8 = 1;
    pub const INIT_ACK: u8 = 2;
    pub const ABORT: u8 = 6;

    const NAMES: [&str; 15] = [
        "data",
        "init",
        "init_ack",
        "sack",
        "heartbeat",
        "hb_ack",
        "abort",
        "shutdown",
        "shutdown_ack",
        "error",
        "cookie_echo",
        "cookie_ack",
        "ecne",
        "cwr",
        "shutdown_complete",
    ];

    /// Suricata's name of a chunk type (`None`: Suricata has none, EVE
    /// writes `unknown(N)`).
    pub fn name(t: u8) -> Option<&'static str> {
        match t {
            192 => Some("forward_tsn"),
            _ => NAMES.get(usize::from(t)).copied(),
        }
    }

    /// The type a name in `sctp.chunk_type` denotes.
    pub fn from_name(name: &str) -> Option<u8> {
        if name == "forward_tsn" {
            return Some(192);
        }
        NAMES.iter().position(|n| *n == name).map(|i| i as u8)
    }
}

/// One chunk of an SCTP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SctpChunk<'a> {
    pub ctype: u8,
    pub flags: u8,
    /// The chunk's value (after its 4-byte header, without padding).
    pub value: &'a [u8],
}

impl<'a> SctpChunk<'a> {
    /// A DATA chunk's user data (after TSN, stream id and sequence,
    /// payload protocol id); `None` for other chunks.
    pub fn user_data(&self) -> Option<&'a [u8]> {
        (self.ctype == sctp_chunk::DATA).then(|| self.value.get(12..).unwrap_or(&[]))
    }
}

/// Walks the chunks of an SCTP packet's body (after the common header).
/// Stops at the first chunk whose length does not fit (the decoder has
/// rejected such packets already).
#[derive(Debug, Clone)]
pub struct SctpChunks<'a> {
    rest: &'a [u8],
}

impl<'a> SctpChunks<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        SctpChunks { rest: body }
    }
}

impl<'a> Iterator for SctpChunks<'a> {
    type Item = SctpChunk<'a>;

    fn next(&mut self) -> Option<SctpChunk<'a>> {
        let &[ctype, flags, l0, l1, ..] = self.rest else {
            self.rest = &[];
            return None;
        };
        let len = usize::from(u16::from_be_bytes([l0, l1]));
        let Some(value) = self.rest.get(4..len) else {
            self.rest = &[];
            return None;
        };
        // Padding to 4 bytes; the last chunk may omit it.
        let next = len.next_multiple_of(4).min(self.rest.len());
        self.rest = self.rest.get(next..).unwrap_or(&[]);
        Some(SctpChunk {
            ctype,
            flags,
            value,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    None,
    Tcp(TcpInfo),
    Udp(UdpInfo),
    Icmpv4(IcmpInfo),
    Icmpv6(IcmpInfo),
    Sctp(SctpInfo),
    Igmp(IgmpInfo),
    /// A transport this decoder does not parse (or a non-first fragment).
    Other(u8),
}

/// A decoded frame. All ranges index into `data`.
#[derive(Debug, Clone)]
pub struct Packet<'a> {
    pub data: &'a [u8],
    pub linktype: u32,
    /// Outer-to-inner VLAN ids (802.1Q / QinQ), `vlan_count` used.
    pub vlan: [u16; 3],
    pub vlan_count: u8,
    pub ip: Option<IpInfo>,
    pub l4: L4,
    /// Transport header bytes (TCP with options, UDP 8, ICMP 8, SCTP 12,
    /// ESP 8; for `L4::Other(47)` the GRE header when it was valid).
    pub l4_header: Range<usize>,
    /// Application payload after the transport header (empty if none),
    /// bounded by the IP and UDP lengths; the fragment data for a fragment
    /// whose transport is not decoded. Empty for other `L4::Other`.
    pub payload: Range<usize>,
    pub events: DecoderEvents,
    /// The frame's own link-layer header (Ethernet, SLL, SLL2, null/loop);
    /// empty for raw IP and PPP link types.
    pub link_header: Range<usize>,
    /// For a tunnel pseudo-packet, the outermost IP header (`ip` is the
    /// packet's own); `None` for a packet from the wire.
    pub outer_ip: Option<IpInfo>,
    /// With `outer_ip`: the outermost packet's ports (0 without ports).
    pub outer_ports: (u16, u16),
    /// A tunnel pseudo-packet: which tunnel carried it, at what depth.
    pub tunnel: Option<Tunnel>,
    /// The packet carries a tunnel that this decode did not enter: the
    /// packet inside is decoded at the next depth ([`decode_at`]).
    pub inner_tunnel: bool,
    /// An ARP frame (no IP layer).
    pub arp: bool,
}

impl Packet<'_> {
    /// The same decoded fields over `data`, which must be the bytes this
    /// packet was decoded from (or a copy of them): every range indexes
    /// into it. A reader that decoded a frame to steer it hands the
    /// fields to the worker with `rebind(&[])`, and the worker puts its
    /// copy of the bytes back, instead of decoding the frame again.
    pub fn rebind(self, data: &[u8]) -> Packet<'_> {
        Packet {
            data,
            linktype: self.linktype,
            vlan: self.vlan,
            vlan_count: self.vlan_count,
            ip: self.ip,
            l4: self.l4,
            l4_header: self.l4_header,
            payload: self.payload,
            events: self.events,
            link_header: self.link_header,
            outer_ip: self.outer_ip,
            outer_ports: self.outer_ports,
            tunnel: self.tunnel,
            inner_tunnel: self.inner_tunnel,
            arp: self.arp,
        }
    }
}

/// What encapsulated a tunnel pseudo-packet, named as Suricata's
/// `pkt_src` names the decoder that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelKind {
    /// IPv4 or IPv6 carried in IPv4 (protocols 4 and 41).
    Ipv4,
    /// IPv4 or IPv6 carried in IPv6.
    Ipv6,
    /// GRE (IP, PPP, transparent Ethernet bridging, ERSPAN).
    Gre,
    Vxlan,
    Geneve,
}

impl TunnelKind {
    /// Suricata's `pkt_src` for a packet this tunnel carried.
    pub fn pkt_src(self) -> &'static str {
        match self {
            TunnelKind::Ipv4 => "ipv4 tunnel",
            TunnelKind::Ipv6 => "ipv6 tunnel",
            TunnelKind::Gre => "gre tunnel",
            TunnelKind::Vxlan => "vxlan encapsulation",
            TunnelKind::Geneve => "geneve encapsulation",
        }
    }
}

/// A tunnel pseudo-packet's place in its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunnel {
    /// The innermost tunnel that carried the packet.
    pub kind: TunnelKind,
    /// How many tunnels down the packet sits (1: inside the outermost).
    pub depth: u8,
    /// Offset in the frame where the packet starts (its link header, or
    /// its IP header when it has none).
    pub start: usize,
}

impl<'a> Packet<'a> {
    pub(crate) fn empty(linktype: u32, data: &'a [u8]) -> Packet<'a> {
        Packet {
            data,
            linktype,
            vlan: [0; 3],
            vlan_count: 0,
            ip: None,
            l4: L4::None,
            l4_header: 0..0,
            payload: 0..0,
            events: DecoderEvents::new(),
            link_header: 0..0,
            outer_ip: None,
            outer_ports: (0, 0),
            tunnel: None,
            inner_tunnel: false,
            arp: false,
        }
    }

    /// The packet's own length: the frame's for a packet from the wire,
    /// from its start for a tunnel pseudo-packet (Suricata's tunnel packet
    /// length). `wire_len` is the frame's length on the wire.
    pub fn own_len(&self, wire_len: u32) -> u32 {
        match self.tunnel {
            Some(t) => wire_len.saturating_sub(t.start as u32),
            None => wire_len,
        }
    }

    fn slice(&self, r: &Range<usize>) -> &'a [u8] {
        self.data.get(r.clone()).unwrap_or(&[])
    }

    pub fn payload(&self) -> &'a [u8] {
        self.slice(&self.payload)
    }
    pub fn l4_header(&self) -> &'a [u8] {
        self.slice(&self.l4_header)
    }
    /// SCTP: the common header and every chunk (`sctp.hdr`).
    pub fn sctp_packet(&self) -> Option<&'a [u8]> {
        let L4::Sctp(s) = self.l4 else { return None };
        let start = self.l4_header.start;
        self.data.get(start..start + usize::from(s.len))
    }
    /// SCTP: the packet's chunks, in order (empty for other packets).
    pub fn sctp_chunks(&self) -> SctpChunks<'a> {
        let body = self
            .sctp_packet()
            .and_then(|b| b.get(self.l4_header.len()..))
            .unwrap_or(&[]);
        SctpChunks::new(body)
    }
    pub fn ip_header(&self) -> &'a [u8] {
        self.ip
            .as_ref()
            .map(|i| self.slice(&i.header))
            .unwrap_or(&[])
    }
    pub fn link_header(&self) -> &'a [u8] {
        self.slice(&self.link_header)
    }
    /// VLAN ids, outermost first.
    pub fn vlans(&self) -> &[u16] {
        self.vlan.get(..usize::from(self.vlan_count)).unwrap_or(&[])
    }
    /// Whether the (innermost) IP packet is a fragment.
    pub fn is_fragment(&self) -> bool {
        self.ip.as_ref().is_some_and(|i| i.fragment.is_some())
    }
    /// The TCP SACK blocks as (left edge, right edge) pairs.
    pub fn sack_blocks(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        let (bytes, count) = match self.l4 {
            L4::Tcp(TcpInfo { sack: Some(s), .. }) => {
                let start = s.offset as usize;
                let end = start + usize::from(s.count) * 8;
                (
                    self.data.get(start..end).unwrap_or(&[]),
                    usize::from(s.count),
                )
            }
            _ => (&[][..], 0),
        };
        bytes.chunks_exact(8).take(count).map(|c| {
            let l = bytes::be32_at(c, 0).unwrap_or(0);
            let r = bytes::be32_at(c, 4).unwrap_or(0);
            (l, r)
        })
    }
    pub fn src_port(&self) -> u16 {
        match self.l4 {
            L4::Tcp(t) => t.src_port,
            L4::Udp(u) => u.src_port,
            L4::Sctp(s) => s.src_port,
            _ => 0,
        }
    }
    pub fn dst_port(&self) -> u16 {
        match self.l4 {
            L4::Tcp(t) => t.dst_port,
            L4::Udp(u) => u.dst_port,
            L4::Sctp(s) => s.dst_port,
            _ => 0,
        }
    }
}

/// Decodes one frame of the given pcap link type, down to the first
/// tunnel (the packet from the wire).
///
/// Unknown link types give an empty packet (no IP, no event).
#[inline]
pub fn decode(linktype: u32, data: &[u8]) -> Packet<'_> {
    decode_at(linktype, data, 0)
}

/// Decodes the tunnel pseudo-packet `depth` tunnels down in the frame
/// (`0`: the packet from the wire). Only asked for when the packet at
/// `depth - 1` has [`Packet::inner_tunnel`].
// Inlined so that the packet is decoded in the caller's place: returned
// from a call, it was copied there (416 bytes, every frame).
#[inline(always)]
pub fn decode_at(linktype: u32, data: &[u8], depth: u8) -> Packet<'_> {
    let mut pkt = Packet::empty(linktype, data);
    decoder::Decoder::new(&mut pkt, data, depth).link(linktype);
    pkt
}

/// Decodes the innermost packet of a frame (every tunnel entered).
pub fn decode_innermost(linktype: u32, data: &[u8]) -> Packet<'_> {
    decode_at(linktype, data, u8::MAX)
}
