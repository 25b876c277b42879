//! vigil-craft: packet crafting for tests and the demo.
//!
//! - [`packet`]: Ethernet/IPv4/IPv6/TCP/UDP/ICMP frame builders with correct
//!   checksums ([`PacketBuilder`], [`eth_ipv4_tcp`], ...).
//! - [`session`]: [`TcpSession`], whole TCP conversations with seq/ack
//!   tracking.
//! - [`pcap`]: [`PcapWriter`] (classic pcap) and [`PcapNgWriter`].
//! - [`demo`]: the demo capture and [`DEMO_RULES`].
//! - [`checksum`]: the Internet checksum.
//! - [`adversarial`]: captures that attack a monitor's state (SYN flood,
//!   overlap storm, fragment flood, tiny segments).
//! - [`differential`]: rules and traffic for the differential test against
//!   Suricata (`scripts/differential.sh`).
//!
//! This crate depends on no other vigil crate.

pub mod adversarial;
pub mod checksum;
pub mod demo;
pub mod differential;
pub mod mmdb;
pub mod packet;
pub mod pcap;
pub mod session;

pub use demo::{demo_capture, write_demo, write_demo_pcap, DEMO_RULES, DEMO_START};
pub use packet::{
    eth_icmpv6, eth_ipv4_icmp, eth_ipv4_tcp, eth_ipv4_udp, eth_ipv6_tcp, eth_ipv6_udp,
    PacketBuilder, ACK, CWR, ECE, FIN, PSH, RST, SYN, URG,
};
pub use pcap::{
    pcap_bytes, write_pcap_file, PcapFormat, PcapNgWriter, PcapWriter, Ts, LINKTYPE_ETHERNET,
    LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL, LINKTYPE_NULL, LINKTYPE_RAW,
};
pub use session::{add_us, Dir, TcpSession, TimedFrame};
