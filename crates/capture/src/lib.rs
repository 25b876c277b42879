//! Linux AF_PACKET live capture with TPACKET_V3 rings and `PACKET_FANOUT`,
//! one ring per worker thread, the way Suricata's af-packet runmode
//! (`workers`) captures.
//!
//! # What it does
//!
//! [`Ring::open`] creates one AF_PACKET socket on an interface, maps a
//! TPACKET_V3 receive ring into the process, attaches an optional pcap
//! filter (compiled by libpcap, see [`compile_filter`]), puts the interface
//! in promiscuous mode and joins a fanout group. A worker thread owns one
//! ring and calls [`Ring::poll`] in a loop; each call hands the packets of
//! the blocks the kernel has retired to a callback as [`LivePacket`]s
//! (borrowed straight from the ring, no copy) and gives the blocks back.
//! [`Ring::stats`] reports the socket's kernel counters (received, dropped
//! because the ring was full) and [`interface_drops`] the NIC's own drops.
//!
//! # Why TPACKET_V3 and fanout
//!
//! * **TPACKET_V3** packs variable-length frames into large blocks, so a
//!   ring holds many more small packets than a fixed-frame (V2) ring of the
//!   same memory, and user space wakes up once per block rather than once
//!   per packet. A block is handed over when it is full or when
//!   `block_timeout_ms` has passed, which bounds the latency at low rates.
//! * **PACKET_FANOUT** lets N sockets on one interface share its traffic:
//!   the kernel picks one ring per packet. In [`FanoutMode::Hash`] it uses
//!   the symmetric flow hash, so both directions of a flow reach the same
//!   worker, which can then keep flow, stream and detection state without
//!   locks. `PACKET_FANOUT_FLAG_DEFRAG` ([`RingConfig::defrag`]) makes the
//!   kernel reassemble IPv4 fragments before hashing, since only the first
//!   fragment carries the ports.
//!
//! # Defaults ([`RingConfig::default`])
//!
//! * `block_size` 1 MiB: holds ~700 full-size Ethernet frames or a dozen
//!   64 KiB GRO aggregates; a power of two (the kernel allocates blocks in
//!   power-of-two page orders) and a multiple of any page size in use.
//! * `block_count` 64: 64 MiB per ring, about half a second of a saturated
//!   1 Gbit/s link, enough to ride out a slow rule or a flush.
//! * `frame_size` 2048: TPACKET_V3 does not use fixed frames, but the
//!   kernel still validates `tp_frame_size`/`tp_frame_nr`.
//! * `block_timeout_ms` 10: a live IDS should not wait long for a block to
//!   fill on a quiet link.
//! * `fanout` hash with `defrag`: flow affinity (see above).
//! * `promisc` true: a sensor on a SPAN/TAP port must see frames not
//!   addressed to it.
//! * `snaplen` 65535: whole packets; larger GRO/TSO aggregates and anything
//!   over snaplen are delivered truncated and counted in
//!   [`Ring::truncated`], never silently.
//!
//! # Details
//!
//! * VLAN: the kernel takes the outer 802.1Q/802.1ad tag out of the frame
//!   and reports it in the ring header; the ring puts it back after the MAC
//!   addresses (into a per-ring scratch buffer) so `data` is the frame as
//!   on the wire and `orig_len` is 4 bytes longer.
//! * Network namespaces: a socket belongs to the namespace of the thread
//!   that created it; open the ring from a thread inside the namespace.
//! * Privileges: opening a ring needs `CAP_NET_RAW`
//!   ([`CaptureError::Permission`] says so).
//! * Inline bridge: [`TxSocket`] sends whole frames out of an interface
//!   (counting, not failing on, frames the kernel refuses, e.g. EMSGSIZE
//!   for a GRO aggregate over the MTU), and
//!   [`RingConfig::ignore_outgoing`] keeps a ring from reading back what
//!   was sent out of its interface (`PACKET_FANOUT_FLAG_IGNORE_OUTGOING`,
//!   else skipped as the ring is read).
//! * Link down: [`Ring::poll`] returns [`CaptureError::LinkDown`] when the
//!   socket reports ENETDOWN/ENXIO/ENODEV; the caller counts it and reopens.

mod config;
mod error;
mod filter;
mod link;
mod ring;
mod sys;
mod tx;
mod vlan;

pub use config::{FanoutMode, ParseFanoutModeError, RingConfig};
pub use error::CaptureError;
pub use filter::{compile_filter, SockFilter};
pub use link::{
    interface_drops, linktype_for_arphrd, LINKTYPE_ETHERNET, LINKTYPE_IEEE802_11,
    LINKTYPE_IEEE802_11_RADIOTAP, LINKTYPE_RAW,
};
pub use ring::{KernelStats, LivePacket, Ring};
pub use tx::{TxSocket, TxStats};
pub use vlan::{insert_vlan_tag, ETH_P_8021Q};
