//! The alert record that every alert output formats.

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// Protocol numbers whose "ports" in fast.log are ICMP type and code.
pub(crate) const IPPROTO_ICMP: u8 = 1;
pub(crate) const IPPROTO_ICMPV6: u8 = 58;

/// One alert, borrowed from the engine's packet, flow and rule state.
///
/// It carries exactly what Suricata's EVE `alert` event and fast.log line
/// print, already resolved (names, directions, actions), so the formatters
/// make no decisions of their own beyond layout. Optional fields are left
/// out of the JSON when `None` (or empty, for `vlan` and `metadata`).
#[derive(Debug, Clone, Copy)]
pub struct AlertEvent<'a> {
    /// Packet time, seconds since the Unix epoch (may be negative).
    pub ts_secs: i64,
    /// Sub-second part of the packet time, in nanoseconds (printed to the
    /// microsecond, truncated).
    pub ts_nanos: u32,
    pub flow_id: Option<u64>,
    /// 1-based index of the packet in the pcap (Suricata omits it for
    /// pseudo packets; pass `None` there).
    pub pcap_cnt: Option<u64>,
    /// VLAN ids, outermost first; omitted when empty.
    pub vlan: &'a [u16],
    pub src_ip: IpAddr,
    /// Set for TCP, UDP and SCTP only (Suricata logs no ports otherwise).
    pub src_port: Option<u16>,
    pub dest_ip: IpAddr,
    pub dest_port: Option<u16>,
    /// IP protocol number; printed with Suricata's protocol names.
    pub proto: u8,
    /// Set for ICMP and ICMPv6 packets.
    pub icmp_type: Option<u8>,
    pub icmp_code: Option<u8>,
    /// Set for SCTP packets: the EVE `sctp` object.
    pub sctp: Option<vigil_wire::SctpInfo>,
    /// Set for IGMP packets: the EVE `igmp` object.
    pub igmp: Option<vigil_wire::IgmpInfo>,
    /// Where the packet came from: `"wire/pcap"`, `"stream (flow timeout)"`, ...
    pub pkt_src: &'a str,
    /// Transaction id when the alert matched an application-layer transaction.
    pub tx_id: Option<u64>,
    /// `"allowed"` or `"blocked"`.
    pub action: &'a str,
    /// True when the rule's action drops (drop, reject*): fast.log then
    /// prints `[Drop] ` in IPS mode and `[wDrop] ` otherwise.
    pub rule_drop: bool,
    pub gid: u32,
    pub signature_id: u32,
    pub rev: u32,
    /// The rule's `msg`.
    pub signature: &'a str,
    /// Classification description, `""` when the rule has no classtype
    /// (fast.log then prints `(null)`, like Suricata).
    pub category: &'a str,
    /// Rule priority (Suricata's default is 3).
    pub severity: u8,
    /// Rule metadata `key value` pairs in rule order.
    pub metadata: &'a [(String, String)],
    /// The rule's references as URLs (`alert.references`, Suricata 8's
    /// `metadata: rule: reference: yes`); not printed when empty.
    pub references: &'a [String],
    pub app_proto: Option<&'a str>,
    /// The app-layer transaction's object (`http`, `dns`, `tls`) as
    /// serialised JSON, with its key: written after `alert`, and the body
    /// of a transaction record.
    pub app: Option<(&'static str, &'a str)>,
    /// XFF `extra-data`: the proxied client address, as `alert.xff`.
    pub xff: Option<&'a str>,
    /// `"to_server"` or `"to_client"`; Suricata prints it for packets with a flow.
    pub direction: Option<&'a str>,
    pub flow: Option<FlowInfo>,
    /// Payload (or reassembled stream data) to log as `payload`,
    /// `payload_length` and `payload_printable`, as the `EveConfig` selects;
    /// `stream` is printed whenever this is `Some`.
    pub payload: Option<&'a [u8]>,
    /// Whether `payload` is stream data (`"stream":1`) or the packet's own.
    pub stream: bool,
    /// The application-layer frame a `frame` rule matched (`alert.frame`).
    pub frame: Option<FrameEvent<'a>>,
    /// Whole packet, base64 in `packet`.
    pub packet: Option<&'a [u8]>,
    /// pcap link type of `packet`, printed as `packet_info`.
    pub packet_info_linktype: Option<u32>,
    /// A tunnel pseudo-packet: the EVE `tunnel` object (the frame's
    /// outermost packet), written after `alert`.
    pub tunnel: Option<TunnelEvent>,
    /// The packet has no IP layer (ARP and other link-layer frames): no
    /// addresses, ports, `proto` or `ip_v` are written.
    pub link_only: bool,
    /// With `link_only`: the packet's bytes, whose first 32 fast.log
    /// prints in hex (Suricata's `[Raw pkt: ...]`).
    pub raw_pkt: Option<&'a [u8]>,
    /// The rule's `target:` keyword: `alert.source` and `alert.target`
    /// are written (Suricata's AlertJsonSourceTarget).
    pub target: Option<AlertTarget>,
    /// The flow's and the packet's variables, for the top-level
    /// `metadata` object (eve-log `metadata: yes`); `None`: not written.
    pub vars: Option<VarsEvent<'a>>,
    /// The rule's alert variables (`(?P<alert_name>...)`), written as
    /// `alert.context` when not empty.
    pub context: &'a [(Arc<str>, Box<[u8]>)],
}

/// Which side of the packet a rule's `target:` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertTarget {
    /// `target:src_ip`: the source address is the target; the
    /// destination is the `source`.
    Src,
    /// `target:dest_ip`: the destination is the target.
    Dest,
}

/// A flow's and a packet's variables as Suricata's `EveAddMetadata`
/// logs them: flowbits by name, flowints, flow variables and packet
/// variables, each in the order they were first set. Values are raw
/// bytes; the writer prints them with non-printable bytes as `.`.
#[derive(Debug, Clone, Copy, Default)]
pub struct VarsEvent<'a> {
    pub flowbits: &'a [String],
    pub flowints: &'a [(String, u32)],
    pub flowvars: &'a [(Arc<str>, Box<[u8]>)],
    pub pktvars: &'a [(Arc<str>, Box<[u8]>)],
}

impl VarsEvent<'_> {
    /// Whether Suricata writes a `metadata` object (possibly empty: only
    /// `traffic/` flowbits) at all.
    pub fn any(&self) -> bool {
        !(self.flowbits.is_empty()
            && self.flowints.is_empty()
            && self.flowvars.is_empty()
            && self.pktvars.is_empty())
    }
}

/// Suricata's `tunnel` object: the outermost packet of the frame that
/// carried a tunnel packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelEvent {
    pub src_ip: IpAddr,
    pub src_port: u16,
    pub dest_ip: IpAddr,
    pub dest_port: u16,
    pub proto: u8,
    /// How many tunnels down the packet sits.
    pub depth: u8,
    /// The frame's position in the capture; `None` live.
    pub pcap_cnt: Option<u64>,
}

/// An application-layer frame, as Suricata's `frame` object.
#[derive(Debug, Clone, Copy)]
pub struct FrameEvent<'a> {
    /// The frame type's name within its protocol (`pdu`, `nbss.hdr` ...).
    pub name: &'a str,
    pub id: u64,
    pub to_server: bool,
    /// Stream offset of the frame's first byte (TCP only).
    pub stream_offset: Option<u64>,
    pub length: u64,
    pub complete: bool,
    pub tx_id: Option<u64>,
    /// The frame's bytes (the first 256 are logged).
    pub payload: &'a [u8],
}

impl Default for AlertEvent<'_> {
    fn default() -> Self {
        AlertEvent {
            ts_secs: 0,
            ts_nanos: 0,
            flow_id: None,
            pcap_cnt: None,
            vlan: &[],
            src_ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            src_port: None,
            dest_ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            dest_port: None,
            proto: 0,
            icmp_type: None,
            icmp_code: None,
            sctp: None,
            igmp: None,
            pkt_src: "wire/pcap",
            tx_id: None,
            action: "allowed",
            rule_drop: false,
            gid: 1,
            signature_id: 0,
            rev: 0,
            signature: "",
            category: "",
            severity: 3,
            metadata: &[],
            references: &[],
            app_proto: None,
            app: None,
            xff: None,
            direction: None,
            flow: None,
            payload: None,
            stream: false,
            frame: None,
            packet: None,
            packet_info_linktype: None,
            tunnel: None,
            link_only: false,
            raw_pkt: None,
            target: None,
            vars: None,
            context: &[],
        }
    }
}

/// The flow an alert's packet belongs to, as EVE's alert `flow` object
/// prints it. Addresses and ports are in the flow's direction (client
/// first), not the packet's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowInfo {
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    /// Time of the flow's first packet.
    pub start_secs: i64,
    pub start_nanos: u32,
    pub src_ip: IpAddr,
    pub dest_ip: IpAddr,
    pub src_port: Option<u16>,
    pub dest_port: Option<u16>,
}

/// Writes an address the way Suricata's `PrintInet` does: dotted quad for
/// IPv4, and for IPv6 all eight groups as four lower-case hex digits with no
/// `::` compression (`2001:0db8:0000:0000:0000:0000:0000:0001`).
pub fn write_ip<W: Write + ?Sized>(w: &mut W, ip: &IpAddr) -> io::Result<()> {
    // Two addresses are in every record: formatted into a stack buffer
    // with one write (the formatter's per-argument cost showed in
    // profiles).
    let mut buf = [0u8; 39];
    let mut n = 0;
    match ip {
        IpAddr::V4(a) => {
            for (i, o) in a.octets().into_iter().enumerate() {
                if i > 0 {
                    buf[n] = b'.';
                    n += 1;
                }
                if o >= 100 {
                    buf[n] = b'0' + o / 100;
                    n += 1;
                }
                if o >= 10 {
                    buf[n] = b'0' + o / 10 % 10;
                    n += 1;
                }
                buf[n] = b'0' + o % 10;
                n += 1;
            }
        }
        IpAddr::V6(a) => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            for (i, s) in a.segments().into_iter().enumerate() {
                if i > 0 {
                    buf[n] = b':';
                    n += 1;
                }
                for shift in [12, 8, 4, 0] {
                    buf[n] = HEX[usize::from(s >> shift & 0xf)];
                    n += 1;
                }
            }
        }
    }
    w.write_all(&buf[..n])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    fn ip(a: IpAddr) -> String {
        let mut v = Vec::new();
        write_ip(&mut v, &a).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn suricata_address_forms() {
        assert_eq!(
            ip(IpAddr::V4(Ipv4Addr::new(192, 168, 1, 161))),
            "192.168.1.161"
        );
        for a in [
            [0, 0, 0, 0],
            [255, 255, 255, 255],
            [10, 99, 100, 9],
            [1, 20, 250, 199],
        ] {
            assert_eq!(
                ip(IpAddr::V4(Ipv4Addr::from(a))),
                Ipv4Addr::from(a).to_string()
            );
        }
        assert_eq!(
            ip(IpAddr::V6(Ipv6Addr::new(
                0xfe80, 0xabcd, 0x1, 0x10, 0x100, 0xffff, 0xa0b, 0
            ))),
            "fe80:abcd:0001:0010:0100:ffff:0a0b:0000"
        );
        assert_eq!(
            ip(IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1))),
            "2001:0db8:0000:0000:0000:0000:0000:0001"
        );
        assert_eq!(
            ip(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            "0000:0000:0000:0000:0000:0000:0000:0000"
        );
        // The form suricata-verify expects (tests/*/test.yaml).
        assert_eq!(
            ip(IpAddr::V6(Ipv6Addr::new(
                0xfd01, 0, 0, 0, 0, 0, 0x101, 0x101
            ))),
            "fd01:0000:0000:0000:0000:0000:0101:0101"
        );
    }
}
