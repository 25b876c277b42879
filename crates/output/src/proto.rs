//! Names Suricata prints for IP protocol numbers and pcap link types.

/// IANA protocol keywords as Suricata's `known_proto` table spells them
/// (`util-proto-name.c`), for protocols 0..=143. Suricata prints these in EVE's
/// `proto` and in fast.log's `{PROTO}`; numbers past the table print as a
/// number (EVE: `"253"`, fast.log: `PROTO:253`).
const KNOWN_PROTO: [&str; 144] = [
    "HOPOPT",
    "ICMP",
    "IGMP",
    "GGP",
    "IP-in-IP",
    "ST",
    "TCP",
    "CBT",
    "EGP",
    "IGP",
    "BBN-RCC-MON",
    "NVP-II",
    "PUP",
    "ARGUS",
    "EMCON",
    "XNET",
    "CHAOS",
    "UDP",
    "MUX",
    "DCN-MEAS",
    "HMP",
    "PRM",
    "XNS-IDP",
    "TRUNK-1",
    "TRUNK-2",
    "LEAF-1",
    "LEAF-2",
    "RDP",
    "IRTP",
    "ISO-TP4",
    "NETBLT",
    "MFE-NSP",
    "MERIT-INP",
    "DCCP",
    "3PC",
    "IDPR",
    "XTP",
    "DDP",
    "IDPR-CMTP",
    "TP++",
    "IL",
    "IPv6",
    "SDRP",
    "IPv6-Route",
    "IPv6-Frag",
    "IDRP",
    "RSVP",
    "GRE",
    "DSR",
    "BNA",
    "ESP",
    "AH",
    "I-NLSP",
    "SwIPe",
    "NARP",
    "MOBILE",
    "TLSP",
    "SKIP",
    "IPv6-ICMP",
    "IPv6-NoNxt",
    "IPv6-Opts",
    "Any",
    "CFTP",
    "Any",
    "SAT-EXPAK",
    "KRYPTOLAN",
    "RVD",
    "IPPC",
    "Any",
    "SAT-MON",
    "VISA",
    "IPCU",
    "CPNX",
    "CPHB",
    "WSN",
    "PVP",
    "BR-SAT-MON",
    "SUN-ND",
    "WB-MON",
    "WB-EXPAK",
    "ISO-IP",
    "VMTP",
    "SECURE-VMTP",
    "VINES",
    "TTP",
    "NSFNET-IGP",
    "DGP",
    "TCF",
    "EIGRP",
    "OSPF",
    "Sprite-RPC",
    "LARP",
    "MTP",
    "AX.25",
    "OS",
    "MICP",
    "SCC-SP",
    "ETHERIP",
    "ENCAP",
    "Any",
    "GMTP",
    "IFMP",
    "PNNI",
    "PIM",
    "ARIS",
    "SCPS",
    "QNX",
    "A/N",
    "IPComp",
    "SNP",
    "Compaq-Peer",
    "IPX-in-IP",
    "VRRP",
    "PGM",
    "Any",
    "L2TP",
    "DDX",
    "IATP",
    "STP",
    "SRP",
    "UTI",
    "SMP",
    "SM",
    "PTP",
    "IS-IS",
    "FIRE",
    "CRTP",
    "CRUDP",
    "SSCOPMCE",
    "IPLT",
    "SPS",
    "PIPE",
    "SCTP",
    "FC",
    "RSVP-E2E-IGNORE",
    "Mobility",
    "UDPLite",
    "MPLS-in-IP",
    "manet",
    "HIP",
    "Shim6",
    "WESP",
    "ROHC",
    "Ethernet",
];

/// Suricata's name for an IP protocol number, or `None` where it prints the
/// number instead.
pub fn proto_name(proto: u8) -> Option<&'static str> {
    KNOWN_PROTO.get(usize::from(proto)).copied()
}

/// The name Suricata 8 writes in `packet_info.linktype_name`
/// (`DatalinkValueToName`), `"n/a"` for any other link type.
pub fn linktype_name(linktype: u32) -> &'static str {
    match linktype {
        0 => "NULL",
        1 => "EN10MB",
        9 => "PPP",
        12 => "RAW",
        101 => "RAW2",
        104 => "C_HDLC",
        113 => "LINUX_SLL",
        228 => "IPv4",
        229 => "IPv6",
        276 => "LINUX_SLL2",
        778 => "GRE_RAW",
        _ => "n/a",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_protocols() {
        assert_eq!(proto_name(1), Some("ICMP"));
        assert_eq!(proto_name(6), Some("TCP"));
        assert_eq!(proto_name(17), Some("UDP"));
        assert_eq!(proto_name(47), Some("GRE"));
        assert_eq!(proto_name(50), Some("ESP"));
        assert_eq!(proto_name(58), Some("IPv6-ICMP"));
        assert_eq!(proto_name(132), Some("SCTP"));
        assert_eq!(proto_name(143), Some("Ethernet"));
        assert_eq!(proto_name(144), None);
        assert_eq!(proto_name(255), None);
    }

    #[test]
    fn linktypes() {
        assert_eq!(linktype_name(1), "EN10MB");
        assert_eq!(linktype_name(113), "LINUX_SLL");
        assert_eq!(linktype_name(4242), "n/a");
    }
}
