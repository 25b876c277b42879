//! Byte-vector tests: real frames (several taken from Suricata's decoder
//! unit tests) and built ones, one behaviour each.

mod common;

use std::net::IpAddr;

use common::*;
use vigil_wire::{linktype, Packet, SctpInfo, TunnelKind, L4};

/// Decodes a copy of `data` that lives for the rest of the test process,
/// so frames can be built inline.
fn decode(lt: u32, data: &[u8]) -> Packet<'static> {
    let frame: &'static [u8] = Box::leak(data.to_vec().into_boxed_slice());
    vigil_wire::decode(lt, frame)
}

/// [`decode`] at a tunnel depth.
fn decode_at(lt: u32, data: &[u8], depth: u8) -> Packet<'static> {
    let frame: &'static [u8] = Box::leak(data.to_vec().into_boxed_slice());
    vigil_wire::decode_at(lt, frame, depth)
}

/// [`decode`] of the innermost packet.
fn decode_innermost(lt: u32, data: &[u8]) -> Packet<'static> {
    let frame: &'static [u8] = Box::leak(data.to_vec().into_boxed_slice());
    vigil_wire::decode_innermost(lt, frame)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

// ---------------------------------------------------------------- Ethernet

/// A captured Ethernet/IPv6/TCP ACK with timestamps.
const ETH_IPV6_TCP: [u8; 86] = [
    0x00, 0x60, 0x97, 0x07, 0x69, 0xea, 0x00, 0x00, 0x86, 0x05, 0x80, 0xda, 0x86, 0xdd, 0x60, 0x00,
    0x00, 0x00, 0x00, 0x20, 0x06, 0x40, 0x3f, 0xfe, 0x05, 0x07, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00,
    0x86, 0xff, 0xfe, 0x05, 0x80, 0xda, 0x3f, 0xfe, 0x05, 0x01, 0x04, 0x10, 0x00, 0x00, 0x02, 0xc0,
    0xdf, 0xff, 0xfe, 0x47, 0x03, 0x3e, 0x03, 0xfe, 0x00, 0x16, 0xd6, 0x76, 0xf5, 0x2d, 0x0c, 0x7a,
    0x08, 0x77, 0x80, 0x10, 0x21, 0x5c, 0xc2, 0xf1, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x00, 0x08,
    0xca, 0x5a, 0x00, 0x01, 0x69, 0x27,
];

#[test]
fn ethernet_ipv6_tcp_real_frame() {
    let p = decode(linktype::ETHERNET, &ETH_IPV6_TCP);
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.link_header, 0..14);
    let i = p.ip.as_ref().unwrap();
    assert_eq!(i.version, 6);
    assert_eq!(i.src, ip("3ffe:507:0:1:200:86ff:fe05:80da"));
    assert_eq!(i.dst, ip("3ffe:501:410:0:2c0:dfff:fe47:33e"));
    assert_eq!((i.proto, i.ttl), (6, 64));
    assert_eq!(i.header, 14..54);
    let t = tcp_info(&p);
    assert_eq!((t.src_port, t.dst_port), (1022, 22));
    assert_eq!(t.flags, 0x10);
    assert_eq!(t.timestamp, Some((0x0008_ca5a, 0x0001_6927)));
    assert_eq!(p.l4_header, 54..86);
    assert!(p.payload().is_empty());
    assert_eq!((p.src_port(), p.dst_port()), (1022, 22));
}

/// A TCP SYN with MSS, SACK-permitted, timestamps and window scale.
const TCP_SYN: [u8; 40] = [
    0xda, 0xc1, 0x00, 0x50, 0xb6, 0x21, 0x7f, 0x58, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0x16, 0xd0,
    0x8a, 0xaf, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x00, 0x62, 0x88, 0x28,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x02,
];

#[test]
fn ipv4_tcp_syn_options() {
    let frame = eth(0x0800, &ipv4(6, &TCP_SYN));
    let p = decode(linktype::ETHERNET, &frame);
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    let i = p.ip.as_ref().unwrap();
    assert_eq!(i.version, 4);
    assert_eq!(i.src, ip("192.168.1.10"));
    assert_eq!(i.dst, ip("10.0.0.1"));
    assert_eq!((i.proto, i.ttl, i.id), (6, 64, 0x1234));
    assert!(i.dont_fragment && !i.reserved_bit && i.fragment.is_none());
    assert_eq!(i.header, 14..34);
    let t = tcp_info(&p);
    assert_eq!((t.src_port, t.dst_port), (56001, 80));
    assert_eq!(t.seq, 0xb621_7f58);
    assert_eq!(t.flags, 0x02);
    assert_eq!(t.window, 5840);
    assert_eq!(t.mss, Some(1460));
    assert!(t.sack_permitted);
    assert_eq!(t.timestamp, Some((0x0062_8828, 0)));
    assert_eq!(t.wscale, Some(2));
    assert_eq!(t.sack, None);
    assert_eq!(p.l4_header(), &TCP_SYN[..]);
    assert!(p.payload.is_empty());
}

#[test]
fn ethernet_padding_is_not_payload() {
    let mut frame = eth(0x0800, &ipv4(17, &udp(53, 53, b"abcd")));
    frame.resize(60, 0); // minimum Ethernet frame, zero padded
    let p = decode(linktype::ETHERNET, &frame);
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"abcd");
    assert_eq!(p.ip_header().len(), 20);
}

#[test]
fn ethernet_too_small() {
    let p = decode(linktype::ETHERNET, &[0u8; 13]);
    check_ranges(&p);
    assert_eq!(names(&p), ["ethernet.pkt_too_small"]);
    assert!(p.ip.is_none());
}

#[test]
fn arp_is_not_ip_and_not_an_event() {
    let arp = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x00, 0x1b, 0x21, 0x3c, 0x9d, 0xf8, 192,
        168, 1, 10, 0, 0, 0, 0, 0, 0, 192, 168, 1, 1,
    ];
    let p = decode(linktype::ETHERNET, &eth(0x0806, &arp));
    check_ranges(&p);
    assert!(p.ip.is_none());
    assert_eq!(p.l4, L4::None);
    assert!(p.payload.is_empty());
    assert!(p.events.is_empty());
}

#[test]
fn unknown_ethertype() {
    let p = decode(linktype::ETHERNET, &eth(0x8035, &[0; 28]));
    assert_eq!(names(&p), ["ethernet.unknown_ethertype"]);
    assert!(p.ip.is_none());
}

// -------------------------------------------------------------------- VLAN

#[test]
fn vlan_single_and_qinq() {
    let inner = ipv4(17, &udp(1000, 2000, b"x"));
    let p = decode(linktype::ETHERNET, &eth(0x8100, &vlan(100, 0x0800, &inner)));
    check_ranges(&p);
    assert!(p.events.is_empty());
    assert_eq!(p.vlans(), &[100]);
    assert_eq!(p.payload(), b"x");

    let qinq = vlan(0x2000 | 10, 0x8100, &vlan(20, 0x0800, &inner));
    let p = decode(linktype::ETHERNET, &eth(0x88a8, &qinq));
    assert!(p.events.is_empty());
    assert_eq!(p.vlans(), &[10, 20], "priority bits are masked off");
    assert!(matches!(p.l4, L4::Udp(_)));

    let three = vlan(1, 0x9100, &vlan(2, 0x8100, &vlan(3, 0x0800, &inner)));
    let p = decode(linktype::ETHERNET, &eth(0x8100, &three));
    assert!(p.events.is_empty());
    assert_eq!(p.vlans(), &[1, 2, 3]);
    assert!(p.ip.is_some());
}

#[test]
fn vlan_too_many_layers() {
    let inner = ipv4(17, &udp(1000, 2000, b"x"));
    let four = vlan(
        1,
        0x8100,
        &vlan(2, 0x8100, &vlan(3, 0x8100, &vlan(4, 0x0800, &inner))),
    );
    let p = decode(linktype::ETHERNET, &eth(0x8100, &four));
    check_ranges(&p);
    assert_eq!(names(&p), ["vlan.too_many_layers"]);
    assert_eq!(p.vlans(), &[1, 2, 3]);
    assert!(p.ip.is_none());
}

#[test]
fn vlan_malformed() {
    let p = decode(linktype::ETHERNET, &eth(0x8100, &[0x00, 0x64, 0x08]));
    assert_eq!(names(&p), ["vlan.header_too_small"]);
    let p = decode(linktype::ETHERNET, &eth(0x8100, &vlan(7, 0x8035, &[0; 28])));
    assert_eq!(
        names(&p),
        ["ethernet.unknown_ethertype", "vlan.unknown_type"]
    );
    assert_eq!(p.vlans(), &[7]);
}

// -------------------------------------------------------------------- MPLS

#[test]
fn mpls_label_stack() {
    let inner = ipv4(17, &udp(1, 2, b"mpls"));
    // Two labels (16, 17), bottom of stack on the second; IPv4 by nibble.
    let mut stack = vec![0x00, 0x01, 0x00, 0x40, 0x00, 0x01, 0x11, 0x40];
    stack.extend_from_slice(&inner);
    let p = decode(linktype::ETHERNET, &eth(0x8847, &stack));
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"mpls");

    // IPv6 explicit null at the bottom.
    let mut stack = vec![0x00, 0x00, 0x21, 0x40];
    stack.extend_from_slice(&ipv6(17, &udp(1, 2, b"six")));
    let p = decode(linktype::ETHERNET, &eth(0x8847, &stack));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.ip.as_ref().unwrap().version, 6);

    // Router alert at the bottom is invalid.
    let mut stack = vec![0x00, 0x00, 0x11, 0x40];
    stack.extend_from_slice(&inner);
    let p = decode(linktype::ETHERNET, &eth(0x8847, &stack));
    assert_eq!(names(&p), ["mpls.bad_label_router_alert"]);

    // Stack without a bottom label.
    let p = decode(
        linktype::ETHERNET,
        &eth(0x8848, &[0x00, 0x01, 0x00, 0x40, 0x00]),
    );
    assert_eq!(names(&p), ["mpls.header_too_small"]);

    // Ethernet pseudowire with control word.
    let mut stack = vec![0x00, 0x01, 0x01, 0x40, 0, 0, 0, 0];
    stack.extend_from_slice(&eth(0x0800, &inner));
    let p = decode(linktype::ETHERNET, &eth(0x8847, &stack));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"mpls");
}

// ------------------------------------------------------------- PPP, PPPoE

#[test]
fn pppoe_session_ipv4() {
    let inner = ipv4(17, &udp(1, 2, b"ppp"));
    let mut s = vec![0x11, 0x00, 0x00, 0x01];
    s.extend_from_slice(&((inner.len() + 2) as u16).to_be_bytes());
    s.extend_from_slice(&[0x00, 0x21]);
    s.extend_from_slice(&inner);
    let p = decode(linktype::ETHERNET, &eth(0x8864, &s));
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"ppp");

    let lcp = [
        0x11, 0x00, 0x00, 0x01, 0x00, 0x06, 0xc0, 0x21, 0x09, 0x01, 0x00, 0x04,
    ];
    let p = decode(linktype::ETHERNET, &eth(0x8864, &lcp));
    assert_eq!(names(&p), ["ppp.unsup_proto"]);

    let short_ip = [0x11, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00, 0x21, 0x45, 0x00];
    let p = decode(linktype::ETHERNET, &eth(0x8864, &short_ip));
    assert_eq!(names(&p), ["ppp.ip4_pkt_too_small"]);

    let p = decode(linktype::ETHERNET, &eth(0x8864, &[0x11, 0x00, 0x00]));
    assert_eq!(names(&p), ["pppoe.pkt_too_small"]);
}

#[test]
fn pppoe_discovery() {
    // PADI with a Service-Name tag.
    let padi = [0x11, 0x09, 0x00, 0x00, 0x00, 0x04, 0x01, 0x01, 0x00, 0x00];
    let p = decode(linktype::ETHERNET, &eth(0x8863, &padi));
    assert!(p.events.is_empty());
    assert!(p.ip.is_none());
    let bad_code = [0x11, 0x42, 0x00, 0x00, 0x00, 0x00];
    let p = decode(linktype::ETHERNET, &eth(0x8863, &bad_code));
    assert_eq!(names(&p), ["pppoe.wrong_code"]);
    let bad_len = [0x11, 0x09, 0x00, 0x00, 0x00, 0x20, 0x01, 0x01, 0x00, 0x00];
    let p = decode(linktype::ETHERNET, &eth(0x8863, &bad_len));
    assert_eq!(names(&p), ["pppoe.malformed_tags"]);
}

#[test]
fn ppp_link_type() {
    let inner = ipv4(6, &tcp(1, 2, 0x18, &[], b"hi"));
    let mut hdlc = vec![0xff, 0x03, 0x00, 0x21];
    hdlc.extend_from_slice(&inner);
    let p = decode(linktype::PPP, &hdlc);
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"hi");

    let mut compressed = vec![0x21];
    compressed.extend_from_slice(&inner);
    let p = decode(linktype::PPP, &compressed);
    assert!(p.events.is_empty());
    assert!(matches!(p.l4, L4::Tcp(_)));

    let p = decode(linktype::PPP, &[0xff, 0x03, 0xc0, 0x21, 0x01]);
    assert_eq!(names(&p), ["ppp.unsup_proto"]);
    let p = decode(linktype::PPP, &[0x12, 0x34, 0x00]);
    assert_eq!(names(&p), ["ppp.wrong_type"]);
    let p = decode(linktype::PPP, &[0xff, 0x03]);
    assert_eq!(names(&p), ["ppp.pkt_too_small"]);
    let p = decode(linktype::PPP, &[0xff, 0x03, 0x00, 0x57, 0x60]);
    assert_eq!(names(&p), ["ppp.ip6_pkt_too_small"]);
}

// ------------------------------------------------------ other link types

#[test]
fn linux_sll_and_sll2() {
    let inner = ipv4(17, &udp(5353, 5353, b"sll"));
    let mut sll = vec![
        0, 0, 0, 1, 0, 6, 0, 0x1b, 0x21, 0x3c, 0x9d, 0xf8, 0, 0, 0x08, 0x00,
    ];
    sll.extend_from_slice(&inner);
    let p = decode(linktype::LINUX_SLL, &sll);
    check_ranges(&p);
    assert!(p.events.is_empty());
    assert_eq!(p.link_header, 0..16);
    assert_eq!(p.payload(), b"sll");
    let p = decode(linktype::LINUX_SLL, &sll[..15]);
    assert_eq!(names(&p), ["sll.pkt_too_small"]);

    let mut sll2 = vec![0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6];
    sll2.extend_from_slice(&[0, 0x1b, 0x21, 0x3c, 0x9d, 0xf8, 0, 0]);
    sll2.extend_from_slice(&inner);
    let p = decode(linktype::LINUX_SLL2, &sll2);
    assert!(p.events.is_empty());
    assert_eq!(p.link_header, 0..20);
    assert_eq!(p.payload(), b"sll");
}

#[test]
fn raw_ip_link_types() {
    let v4 = ipv4(17, &udp(1, 2, b"raw"));
    let v6 = ipv6(17, &udp(1, 2, b"raw"));
    for lt in [linktype::RAW, linktype::RAW_OPENBSD, linktype::RAW_ALT] {
        let p = decode(lt, &v4);
        assert!(p.events.is_empty());
        assert_eq!(p.ip.as_ref().unwrap().version, 4);
        let p = decode(lt, &v6);
        assert!(p.events.is_empty());
        assert_eq!(p.ip.as_ref().unwrap().version, 6);
        assert_eq!(p.payload(), b"raw");
        assert!(p.link_header.is_empty());
    }
    let p = decode(linktype::IPV4, &v4);
    assert_eq!(p.payload(), b"raw");
    let p = decode(linktype::IPV6, &v6);
    assert_eq!(p.payload(), b"raw");
    let p = decode(linktype::IPV4, &v6);
    assert_eq!(names(&p), ["ipv4.wrong_ip_version"]);

    let mut v5 = v4.clone();
    v5[0] = 0x55;
    let p = decode(linktype::RAW, &v5);
    assert_eq!(names(&p), ["ipraw.invalid_ip_version"]);
    let p = decode(linktype::RAW, &v6[..19]);
    assert_eq!(names(&p), ["ipv4.pkt_too_small"]);
}

#[test]
fn null_and_loop() {
    let v4 = ipv4(17, &udp(1, 2, b"lo"));
    let v6 = ipv6(17, &udp(1, 2, b"lo"));
    let with = |fam: [u8; 4], ip: &[u8]| {
        let mut v = fam.to_vec();
        v.extend_from_slice(ip);
        v
    };
    // Little-endian host, big-endian host.
    for fam in [[2, 0, 0, 0], [0, 0, 0, 2]] {
        let p = decode(linktype::NULL, &with(fam, &v4));
        assert!(p.events.is_empty());
        assert_eq!(p.payload(), b"lo");
        assert_eq!(p.link_header, 0..4);
    }
    for af in [24u8, 28, 30, 10] {
        let p = decode(linktype::NULL, &with([af, 0, 0, 0], &v6));
        assert!(p.events.is_empty(), "{af}");
        assert_eq!(p.ip.as_ref().unwrap().version, 6);
    }
    let p = decode(linktype::LOOP, &with([0, 0, 0, 2], &v4));
    assert_eq!(p.payload(), b"lo");
    let p = decode(linktype::LOOP, &with([0, 0, 0, 30], &v6));
    assert_eq!(p.payload(), b"lo");
    let p = decode(linktype::NULL, &with([7, 0, 0, 0], &v4));
    assert_eq!(names(&p), ["ltnull.unsupported_type"]);
    let p = decode(linktype::NULL, &[2, 0, 0]);
    assert_eq!(names(&p), ["ltnull.pkt_too_small"]);
}

#[test]
fn unknown_link_type_is_empty() {
    let p = decode(147, &ETH_IPV6_TCP);
    assert!(p.ip.is_none() && p.events.is_empty());
    let p = decode(linktype::ETHERNET, &[]);
    assert_eq!(names(&p), ["ethernet.pkt_too_small"]);
}

// -------------------------------------------------------------------- IPv4

#[test]
fn ipv4_header_errors() {
    let good = ipv4(17, &udp(1, 2, b"data"));

    let p = decode(linktype::RAW, &good[..19]);
    assert_eq!(names(&p), ["ipv4.pkt_too_small"]);

    let mut v = good.clone();
    v[0] = 0x44; // IHL 4
    let p = decode(linktype::RAW, &v);
    assert_eq!(names(&p), ["ipv4.hlen_too_small"]);
    assert!(p.ip.is_none());

    let mut v = good.clone();
    v[2] = 0;
    v[3] = 19;
    let p = decode(linktype::RAW, &v);
    assert_eq!(names(&p), ["ipv4.iplen_smaller_than_hlen"]);

    let p = decode(linktype::RAW, &good[..good.len() - 1]);
    assert_eq!(names(&p), ["ipv4.trunc_pkt"]);
    assert!(p.ip.is_none());
    assert_eq!(p.l4, L4::None);

    let p = decode(linktype::ETHERNET, &eth(0x0800, &ipv6(17, &udp(1, 2, b""))));
    assert_eq!(names(&p), ["ipv4.wrong_ip_version"]);
}

#[test]
fn ipv4_record_route_and_timestamp_options() {
    // Record route (39 bytes, pointer 8) + EOL.
    let mut rr = vec![0x07, 0x27, 0x08, 0xc0, 0xa8, 0x2a, 0x64];
    rr.resize(40, 0);
    let p = decode(linktype::RAW, &ipv4_full(17, &rr, 0, &udp(1, 2, b"o")));
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    let i = p.ip.as_ref().unwrap();
    assert_eq!(i.ipv4_options(), &[7, 0]);
    assert!(i.has_ipv4_option(7));
    assert_eq!(i.header, 0..60);
    assert_eq!(p.payload(), b"o");

    // Timestamp, 36 bytes, pointer 13.
    let mut ts = vec![
        0x44, 0x24, 0x0d, 0x01, 0x0a, 0x0a, 0x0a, 0x69, 0x04, 0xce, 0x0d,
    ];
    ts.resize(40, 0);
    let p = decode(linktype::RAW, &ipv4_full(17, &ts, 0, &udp(1, 2, b"")));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.ip.as_ref().unwrap().ipv4_options(), &[68, 0]);
}

#[test]
fn ipv4_bad_options() {
    let frame = |opts: &[u8]| ipv4_full(17, opts, 0, &udp(1, 2, b"o"));
    let mut rr = vec![0x07, 0x27, 0x08, 0xc0, 0xa8, 0x2a, 0x64];
    rr.resize(40, 0);

    let mut too_long = rr.clone();
    too_long[1] = 0xff;
    let p = decode(linktype::RAW, &frame(&too_long));
    assert_eq!(names(&p), ["ipv4.opt_invalid_len"]);
    // Option problems do not drop the IP layer.
    assert!(p.ip.is_some());
    assert_eq!(p.payload(), b"o");

    for ptr in [0xff, 0x05] {
        let mut bad_ptr = rr.clone();
        bad_ptr[2] = ptr;
        let p = decode(linktype::RAW, &frame(&bad_ptr));
        assert_eq!(names(&p), ["ipv4.opt_malformed"], "ptr {ptr}");
        assert_eq!(p.ip.as_ref().unwrap().ipv4_options(), &[] as &[u8]);
    }

    let mut ts = vec![0x44, 0x24, 0x04, 0x01];
    ts.resize(40, 0);
    let p = decode(linktype::RAW, &frame(&ts));
    assert_eq!(names(&p), ["ipv4.opt_malformed"]);

    // Router alert twice: 8 bytes, no padding problem.
    let p = decode(linktype::RAW, &frame(&[0x94, 4, 0, 0, 0x94, 4, 0, 0]));
    assert_eq!(names(&p), ["ipv4.opt_duplicate"]);
    assert_eq!(p.ip.as_ref().unwrap().ipv4_options(), &[148]);

    // A lone router alert is 4 bytes: Suricata wants 8-byte multiples.
    let p = decode(linktype::RAW, &frame(&[0x94, 4, 0, 0]));
    assert_eq!(names(&p), ["ipv4.opt_pad_required"]);

    // An option Suricata does not know.
    let p = decode(linktype::RAW, &frame(&[0x9e, 4, 0, 0, 1, 1, 1, 0]));
    assert_eq!(names(&p), ["ipv4.opt_invalid"]);

    // Multi-byte option type in the last byte.
    let p = decode(linktype::RAW, &frame(&[1, 1, 1, 1, 1, 1, 1, 0x44]));
    assert_eq!(names(&p), ["ipv4.opt_eol_required"]);

    // Length 1.
    let p = decode(linktype::RAW, &frame(&[0x94, 1, 0, 0, 0, 0, 0, 0]));
    assert_eq!(names(&p), ["ipv4.opt_invalid_len"]);

    // Security option with the wrong length.
    let mut sec = vec![0x82, 0x0a, 0xf1, 0x35];
    sec.resize(16, 0);
    let p = decode(linktype::RAW, &frame(&sec));
    assert_eq!(names(&p), ["ipv4.opt_invalid_len"]);
}

#[test]
fn ipv4_cipso_option() {
    let frame = |opts: &[u8]| ipv4_full(17, opts, 0, &udp(1, 2, b""));
    // CIPSO, DOI 1, tag type 1 (len 6), alignment octet 0; NOP padding.
    let good = [134, 12, 0, 0, 0, 1, 1, 6, 0, 3, 0, 0, 1, 1, 1, 1];
    let p = decode(linktype::RAW, &frame(&good));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert!(p.ip.as_ref().unwrap().has_ipv4_option(134));
    let bad_tag = [134, 12, 0, 0, 0, 1, 9, 6, 0, 3, 0, 0, 1, 1, 1, 1];
    let p = decode(linktype::RAW, &frame(&bad_tag));
    assert_eq!(names(&p), ["ipv4.opt_malformed"]);
}

#[test]
fn ipv4_fragments() {
    // Non-first fragment: offset 185 * 8, more fragments.
    let data = [0xabu8; 24];
    let v = ipv4_full(17, &[], 0x2000 | 185, &data);
    let p = decode(linktype::RAW, &v);
    check_ranges(&p);
    assert!(p.events.is_empty());
    assert_eq!(p.l4, L4::Other(17));
    assert_eq!(p.payload(), &data[..]);
    assert!(p.l4_header.is_empty());
    let f = p.ip.as_ref().unwrap().fragment.clone().unwrap();
    assert_eq!((f.offset, f.more_fragments, f.id), (1480, true, 0x1234));
    assert_eq!(f.data, 20..44);
    assert!(p.is_fragment());

    // First fragment of a UDP datagram: the UDP length covers the whole
    // datagram, which is not an error here.
    let mut u = udp(1234, 53, &[0x55; 16]);
    u[4..6].copy_from_slice(&3000u16.to_be_bytes());
    let p = decode(linktype::RAW, &ipv4_full(17, &[], 0x2000, &u));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert!(matches!(p.l4, L4::Udp(u) if u.dst_port == 53));
    assert_eq!(p.payload(), &[0x55; 16][..]);

    // First fragment too short for the TCP header.
    let p = decode(linktype::RAW, &ipv4_full(6, &[], 0x2000, &[0; 16]));
    assert!(p.events.is_empty());
    assert_eq!(p.l4, L4::Other(6));
    assert_eq!(p.payload().len(), 16);

    // Last fragment: offset + length past 65535.
    let p = decode(linktype::RAW, &ipv4_full(17, &[], 8189, &[0; 100]));
    assert_eq!(names(&p), ["ipv4.frag_pkt_too_large"]);
    assert!(p.ip.as_ref().unwrap().fragment.is_some());
}

#[test]
fn ipv4_carrying_icmpv6() {
    let p = decode(linktype::RAW, &ipv4(58, &[128, 0, 0, 0, 0, 1, 0, 1]));
    assert_eq!(names(&p), ["ipv4.icmpv6"]);
    assert_eq!(p.l4, L4::Other(58));
}

#[test]
fn ipv4_unknown_protocol() {
    // An experimental protocol (253) with a router alert option.
    let p = decode(
        linktype::RAW,
        &ipv4_full(253, &[0x94, 4, 0, 0], 0, &[0x16, 0, 0, 0, 239, 1, 1, 1]),
    );
    assert_eq!(names(&p), ["ipv4.opt_pad_required"]);
    assert_eq!(p.l4, L4::Other(253));
    assert!(p.payload.is_empty());
    // IGMP (2) with the same option is decoded.
    let p = decode(
        linktype::RAW,
        &ipv4_full(2, &[0x94, 4, 0, 0], 0, &[0x16, 0, 0, 0, 239, 1, 1, 1]),
    );
    assert!(matches!(p.l4, L4::Igmp(g) if g.itype == 0x16 && g.version == 2));
}

// --------------------------------------------------------------------- TCP

#[test]
fn tcp_sack_blocks() {
    let raw = [
        0x00, 0x50, 0x06, 0xa6, 0xfa, 0x87, 0x0b, 0xf5, 0xf1, 0x59, 0x02, 0xe0, 0xa0, 0x10, 0x3e,
        0xbc, 0x1d, 0xe7, 0x00, 0x00, 0x01, 0x01, 0x05, 0x12, 0xf1, 0x59, 0x13, 0xfc, 0xf1, 0x59,
        0x1f, 0x64, 0xf1, 0x59, 0x08, 0x94, 0xf1, 0x59, 0x0e, 0x48,
    ];
    let p = decode(linktype::RAW, &ipv4(6, &raw));
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    let t = tcp_info(&p);
    assert_eq!(t.sack.map(|s| s.count), Some(2));
    let blocks: Vec<_> = p.sack_blocks().collect();
    assert_eq!(
        blocks,
        [(0xf159_13fc, 0xf159_1f64), (0xf159_0894, 0xf159_0e48)]
    );
}

#[test]
fn tcp_option_errors() {
    let with_opts = |opts: &[u8]| decode(linktype::RAW, &ipv4(6, &tcp(1, 2, 0x10, opts, b"p")));

    // Empty SACK: Suricata accepts it.
    let p = with_opts(&[1, 1, 5, 2]);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(tcp_info(&p).sack.map(|s| s.count), Some(0));

    let p = with_opts(&[1, 5, 3, 0]);
    assert_eq!(names(&p), ["tcp.opt_invalid_len"]);
    assert_eq!(tcp_info(&p).sack, None);
    assert_eq!(p.payload(), b"p");

    let p = with_opts(&[2, 4, 5, 0xb4, 2, 4, 2, 0x18]);
    assert_eq!(names(&p), ["tcp.opt_duplicate"]);
    assert_eq!(tcp_info(&p).mss, Some(1460));

    let p = with_opts(&[2, 3, 5, 0]);
    assert_eq!(names(&p), ["tcp.opt_invalid_len"]);
    assert_eq!(tcp_info(&p).mss, None);

    // Length 0 and a length running past the options end the walk.
    let p = with_opts(&[3, 0, 1, 1]);
    assert_eq!(names(&p), ["tcp.opt_invalid_len"]);
    let p = with_opts(&[1, 1, 8, 10]);
    assert_eq!(names(&p), ["tcp.opt_invalid_len"]);

    let p = with_opts(&[3, 3, 14, 3, 3, 7, 0, 0]);
    assert_eq!(names(&p), ["tcp.opt_duplicate"]);
    assert_eq!(tcp_info(&p).wscale, Some(14));

    // Fast Open cookie, MD5 signature.
    let mut opts = vec![34, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1];
    opts.extend_from_slice(&[19, 18]);
    opts.extend_from_slice(&[0; 16]);
    opts.extend_from_slice(&[0, 0]);
    let p = with_opts(&opts);
    assert!(p.events.is_empty(), "{:?}", p.events);
    let t = tcp_info(&p);
    assert!(t.tfo && t.md5 && !t.ao);
}

#[test]
fn tcp_header_errors() {
    let seg = tcp(1, 2, 0x02, &[], b"");
    let p = decode(linktype::RAW, &ipv4(6, &seg[..19]));
    assert_eq!(names(&p), ["tcp.pkt_too_small"]);
    assert_eq!(p.l4, L4::None);
    assert!(p.ip.is_some());
    assert!(p.payload.is_empty());

    let mut long = seg.clone();
    long[12] = 0x60; // 24-byte header in 20 bytes
    let p = decode(linktype::RAW, &ipv4(6, &long));
    assert_eq!(names(&p), ["tcp.hlen_too_small"]);

    let mut short = seg.clone();
    short[12] = 0x40;
    let p = decode(linktype::RAW, &ipv4(6, &short));
    assert_eq!(names(&p), ["tcp.invalid_optlen"]);
}

// --------------------------------------------------------------------- UDP

#[test]
fn udp_lengths() {
    let p = decode(linktype::RAW, &ipv4(17, &[0, 53, 0, 53, 0]));
    assert_eq!(names(&p), ["udp.hlen_too_small"]);
    assert_eq!(p.l4, L4::None);

    let mut u = udp(53, 53, b"abc");
    u[5] = 200;
    let p = decode(linktype::RAW, &ipv4(17, &u));
    assert_eq!(names(&p), ["udp.pkt_too_small"]);

    let mut u = udp(53, 53, b"abc");
    u[5] = 7;
    let p = decode(linktype::RAW, &ipv4(17, &u));
    assert_eq!(names(&p), ["udp.len_invalid"]);

    // UDP length shorter than the IP payload: the rest is not payload.
    let mut u = udp(53, 53, b"abcdef");
    u[5] = 11;
    let p = decode(linktype::RAW, &ipv4(17, &u));
    assert!(p.events.is_empty());
    assert_eq!(p.payload(), b"abc");
    assert_eq!(p.l4_header().len(), 8);
}

// -------------------------------------------------------------------- ICMP

#[test]
fn icmpv4_echo() {
    let echo = [
        0x08, 0x00, 0x78, 0x47, 0xfc, 0x55, 0x00, 0x04, 0x52, 0xab, 0x86, 0x4a, 0x84, 0x50, 0x0e,
        0x00, 0xab, 0xab, 0xab, 0xab,
    ];
    let p = decode(linktype::RAW, &ipv4(1, &echo));
    check_ranges(&p);
    assert!(p.events.is_empty());
    match p.l4 {
        L4::Icmpv4(i) => {
            assert_eq!((i.itype, i.icode), (8, 0));
            assert_eq!((i.id, i.seq), (Some(0xfc55), Some(4)));
        }
        ref o => panic!("{o:?}"),
    }
    assert_eq!(p.payload(), &echo[8..]);
    assert_eq!(p.l4_header(), &echo[..8]);

    let mut bad = echo;
    bad[1] = 3;
    let p = decode(linktype::RAW, &ipv4(1, &bad));
    assert_eq!(names(&p), ["icmpv4.unknown_code"]);
    bad[0] = 42;
    let p = decode(linktype::RAW, &ipv4(1, &bad));
    assert_eq!(names(&p), ["icmpv4.unknown_type"]);
    let p = decode(linktype::RAW, &ipv4(1, &echo[..7]));
    assert_eq!(names(&p), ["icmpv4.pkt_too_small"]);
    assert_eq!(p.l4, L4::None);
}

#[test]
fn icmpv4_errors_quote_ipv4() {
    // TTL exceeded quoting a UDP packet 192.168.1.13 -> 209.85.227.147.
    let ttl_exceeded = [
        0x0b, 0x00, 0x6a, 0x3d, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00, 0x3c, 0x64, 0x15, 0x00,
        0x00, 0x01, 0x11, 0xde, 0xfd, 0xc0, 0xa8, 0x01, 0x0d, 0xd1, 0x55, 0xe3, 0x93, 0x8b, 0x12,
        0x82, 0xaa, 0x00, 0x28, 0x7c, 0xdd,
    ];
    let p = decode(linktype::RAW, &ipv4(1, &ttl_exceeded));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert!(matches!(p.l4, L4::Icmpv4(i) if i.itype == 11 && i.id.is_none()));

    let p = decode(linktype::RAW, &ipv4(1, &ttl_exceeded[..20]));
    assert_eq!(names(&p), ["icmpv4.ipv4_trunc_pkt"]);
    let mut wrong = ttl_exceeded;
    wrong[8] = 0x65;
    let p = decode(linktype::RAW, &ipv4(1, &wrong));
    assert_eq!(names(&p), ["icmpv4.ipv4_unknown_ver"]);
    let mut code = ttl_exceeded;
    code[1] = 2;
    let p = decode(linktype::RAW, &ipv4(1, &code));
    assert_eq!(names(&p), ["icmpv4.unknown_code"]);
    // Timestamp request without its timestamps.
    let p = decode(linktype::RAW, &ipv4(1, &[13, 0, 0, 0, 0, 1, 0, 1, 0, 0]));
    assert_eq!(names(&p), ["icmpv4.ipv4_trunc_pkt"]);
}

#[test]
fn icmpv6_echo_request_real() {
    let raw = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x08, 0x3a, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x80, 0x00, 0xe5, 0xa5, 0x25,
        0xf0, 0x75, 0x23,
    ];
    let p = decode(linktype::RAW, &raw);
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    let i = p.ip.as_ref().unwrap();
    assert_eq!(i.dst, ip("ff02::1"));
    assert_eq!(i.ttl, 255);
    match p.l4 {
        L4::Icmpv6(i) => {
            assert_eq!(
                (i.itype, i.icode, i.id, i.seq),
                (128, 0, Some(9712), Some(29987))
            );
        }
        ref o => panic!("{o:?}"),
    }
    assert!(p.payload.is_empty());
}

#[test]
fn icmpv6_packet_too_big_real() {
    let raw = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x30, 0x3a, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x5c, 0x7a, 0x00,
        0x00, 0x05, 0x00, 0x64, 0x14, 0xfd, 0xff, 0x00, 0x00, 0x3b, 0xff, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x02, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    ];
    let p = decode(linktype::RAW, &raw);
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert!(matches!(p.l4, L4::Icmpv6(i) if i.itype == 2 && i.mtu == Some(1280)));
    assert_eq!(p.payload().len(), 40);

    let short = {
        let mut v = raw[..60].to_vec();
        v[5] = 20;
        v
    };
    let p = decode(linktype::RAW, &short);
    assert_eq!(names(&p), ["icmpv6.ipv6_trunc_pkt"]);
}

#[test]
fn icmpv6_types_and_codes() {
    // Neighbour solicitation: payload starts after 4 bytes, as in Suricata.
    let mut ns = vec![135, 0, 0, 0, 0, 0, 0, 0];
    ns.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let p = decode(linktype::RAW, &ipv6_hl(58, 255, &ns));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), &ns[4..]);
    assert_eq!(p.l4_header(), &ns[..8]);

    let p = decode(
        linktype::RAW,
        &ipv6_hl(58, 255, &[135, 1, 0, 0, 0, 0, 0, 0]),
    );
    assert_eq!(names(&p), ["icmpv6.unknown_code"]);

    // MLD report must have hop limit 1.
    let mld = [
        131, 0, 0, 0, 0, 0, 0, 0, 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfb,
    ];
    let p = decode(linktype::RAW, &ipv6_hl(58, 1, &mld));
    assert!(p.events.is_empty());
    let p = decode(linktype::RAW, &ipv6_hl(58, 64, &mld));
    assert_eq!(names(&p), ["icmpv6.mld_message_with_invalid_hl"]);

    let p = decode(linktype::RAW, &ipv6(58, &[50, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(names(&p), ["icmpv6.unassigned_type"]);
    let p = decode(linktype::RAW, &ipv6(58, &[200, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(names(&p), ["icmpv6.experimentation_type"]);
    let p = decode(linktype::RAW, &ipv6(58, &[0, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(names(&p), ["icmpv6.unknown_type"]);
    let p = decode(linktype::RAW, &ipv6(58, &[128, 0, 0, 0]));
    assert_eq!(names(&p), ["icmpv6.pkt_too_small"]);
    assert_eq!(p.l4, L4::None);
    // Echo with a nonzero code has no id/seq.
    let p = decode(linktype::RAW, &ipv6(58, &[128, 1, 0, 0, 0, 1, 0, 2]));
    assert_eq!(names(&p), ["icmpv6.unknown_code"]);
    assert!(matches!(p.l4, L4::Icmpv6(i) if i.id.is_none()));
    // ICMPv4 in IPv6.
    let p = decode(linktype::RAW, &ipv6(1, &[8, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(names(&p), ["ipv6.icmpv4"]);
    assert_eq!(p.l4, L4::Other(1));
}

// -------------------------------------------------------------------- SCTP

/// An SCTP common header (ports 2905 -> 2905) with tag `vtag`, then
/// `chunks`.
fn sctp_pkt(vtag: u32, chunks: &[&[u8]]) -> Vec<u8> {
    let mut s = vec![0x0b, 0x59, 0x0b, 0x59];
    s.extend_from_slice(&vtag.to_be_bytes());
    s.extend_from_slice(&[0; 4]);
    for c in chunks {
        s.extend_from_slice(c);
    }
    s
}

/// A chunk of type `t` with `value`, padded to 4 bytes.
fn sctp_chunk(t: u8, value: &[u8]) -> Vec<u8> {
    let len = 4 + value.len();
    let mut c = vec![t, 0, (len >> 8) as u8, len as u8];
    c.extend_from_slice(value);
    c.resize(len.next_multiple_of(4), 0);
    c
}

/// A DATA chunk carrying `user` (TSN, stream id/seq and PPID zero).
fn sctp_data(user: &[u8]) -> Vec<u8> {
    let mut v = vec![0; 12];
    v.extend_from_slice(user);
    sctp_chunk(0, &v)
}

fn sctp_info(p: &Packet<'_>) -> SctpInfo {
    match p.l4 {
        L4::Sctp(s) => s,
        other => panic!("not SCTP: {other:?}"),
    }
}

#[test]
fn sctp_header_and_chunks() {
    let init = sctp_chunk(1, &[0; 16]);
    let sctp = sctp_pkt(0, &[&init]);
    let p = decode(linktype::RAW, &ipv4(132, &sctp));
    assert!(p.events.is_empty(), "{:?}", names(&p));
    let s = sctp_info(&p);
    assert_eq!((s.src_port, s.dst_port, s.vtag), (2905, 2905, 0));
    assert_eq!((p.src_port(), p.dst_port()), (2905, 2905));
    assert_eq!((s.chunk_cnt, s.chunk_types()), (1, &[1u8][..]));
    assert!(s.has_init && !s.has_init_ack && !s.has_data && !s.has_abort);
    // No DATA chunk: no payload; sctp.hdr is the whole packet.
    assert!(p.payload().is_empty());
    assert_eq!(p.sctp_packet(), Some(&sctp[..]));
    assert_eq!(p.l4_header(), &sctp[..12]);

    let p = decode(linktype::RAW, &ipv6(132, &sctp[..11]));
    assert_eq!(names(&p), ["sctp.pkt_too_small"]);
    assert_eq!(p.l4, L4::None);
}

#[test]
fn sctp_payload_is_first_data_chunk() {
    let abort = sctp_chunk(6, &[]);
    let d1 = sctp_data(b"first");
    let d2 = sctp_data(b"second!");
    let sctp = sctp_pkt(7, &[&abort, &d1, &d2]);
    let p = decode(linktype::RAW, &ipv4(132, &sctp));
    assert!(p.events.is_empty(), "{:?}", names(&p));
    let s = sctp_info(&p);
    assert_eq!(s.chunk_types(), &[6, 0, 0]);
    assert_eq!(s.data_chunks, 2);
    assert!(s.has_data && s.has_abort);
    assert_eq!(p.payload(), b"first");
    let user: Vec<&[u8]> = p.sctp_chunks().filter_map(|c| c.user_data()).collect();
    assert_eq!(user, [&b"first"[..], &b"second!"[..]]);
    // A DATA chunk too short for its fixed fields has no user data.
    let short = sctp_chunk(0, &[0; 4]);
    let p = decode(linktype::RAW, &ipv4(132, &sctp_pkt(7, &[&short])));
    assert!(p.payload().is_empty());
    assert_eq!(sctp_info(&p).data_chunks, 1);
}

#[test]
fn sctp_chunk_events() {
    let init = sctp_chunk(1, &[0; 16]);
    let abort = sctp_chunk(6, &[]);
    let data = sctp_data(b"x");
    let ev = |sctp: &[u8]| names(&decode(linktype::RAW, &ipv4(132, sctp)));
    assert_eq!(
        ev(&sctp_pkt(0, &[&init, &abort])),
        ["sctp.init_chunk_bundled"]
    );
    assert_eq!(ev(&sctp_pkt(9, &[&init])), ["sctp.init_with_non_zero_vtag"]);
    assert_eq!(ev(&sctp_pkt(0, &[&data])), ["sctp.data_with_zero_vtag"]);
    // 16 chunks are fine, 17 are too many; DATA chunks count separately.
    let sixteen: Vec<&[u8]> = vec![&abort[..]; 16];
    assert!(ev(&sctp_pkt(1, &sixteen)).is_empty());
    let many: Vec<&[u8]> = vec![&abort[..]; 17];
    let p_many = sctp_pkt(1, &many);
    assert_eq!(ev(&p_many), ["sctp.too_many_chunks"]);
    let p = decode(linktype::RAW, &ipv4(132, &p_many));
    let s = sctp_info(&p);
    assert_eq!((s.chunk_cnt, s.chunk_types().len()), (17, 16));
    let datas: Vec<&[u8]> = vec![&data[..]; 17];
    assert_eq!(
        ev(&sctp_pkt(1, &datas)),
        ["sctp.too_many_chunks", "sctp.too_many_data_chunks"]
    );
    // A chunk that does not fit makes the packet invalid.
    for (bad, name) in [
        (sctp_pkt(1, &[&abort, &[6, 0]]), "sctp.chunk_too_small"),
        (sctp_pkt(1, &[&[6, 0, 0, 2]]), "sctp.chunk_len_invalid"),
        (
            sctp_pkt(1, &[&[6, 0, 0, 200, 0, 0, 0, 0]]),
            "sctp.chunk_len_invalid",
        ),
    ] {
        let p = decode(linktype::RAW, &ipv4(132, &bad));
        assert_eq!(names(&p), [name]);
        assert_eq!(p.l4, L4::None);
    }
    // An empty packet (no chunks) is valid.
    let p = decode(linktype::RAW, &ipv4(132, &sctp_pkt(1, &[])));
    assert!(p.events.is_empty());
    assert_eq!(sctp_info(&p).chunk_cnt, 0);
}

#[test]
fn sctp_chunk_names() {
    use vigil_wire::sctp_chunk::{from_name, name};
    assert_eq!(name(5), Some("hb_ack"));
    assert_eq!(name(192), Some("forward_tsn"));
    assert_eq!(name(15), None);
    for t in 0..=255u8 {
        if let Some(n) = name(t) {
            assert_eq!(from_name(n), Some(t));
        }
    }
    assert_eq!(from_name("heartbeat_ack"), None);
}

// -------------------------------------------------------------------- IPv6

#[test]
fn ipv6_header_errors() {
    let good = ipv6(17, &udp(1, 2, b"six"));
    let p = decode(linktype::IPV6, &good[..39]);
    assert_eq!(names(&p), ["ipv6.pkt_too_small"]);
    let p = decode(linktype::IPV6, &good[..good.len() - 1]);
    assert_eq!(names(&p), ["ipv6.trunc_pkt"]);
    assert!(p.ip.is_none());
    let mut v = good.clone();
    v[0] = 0x70;
    let p = decode(linktype::IPV6, &v);
    assert_eq!(names(&p), ["ipv6.wrong_ip_version"]);
    // Traffic class straddles the first two bytes.
    let mut v = good.clone();
    v[0] = 0x6b;
    v[1] = 0x80;
    let p = decode(linktype::IPV6, &v);
    assert_eq!(p.ip.as_ref().unwrap().tos, 0xb8);
}

#[test]
fn ipv6_hop_by_hop_and_destination_options() {
    let u = udp(1, 2, b"ext");
    // Router alert + PadN.
    let hop = ext(60, &[5, 2, 0, 0, 1, 0]);
    let dst = ext(17, &[1, 4, 0, 0, 0, 0]);
    let mut payload = hop.clone();
    payload.extend_from_slice(&dst);
    payload.extend_from_slice(&u);
    let p = decode(linktype::IPV6, &ipv6(0, &payload));
    check_ranges(&p);
    assert_eq!(
        names(&p),
        ["ipv6.dstopts_only_padding", "ipv6.zero_len_padn"]
    );
    let i = p.ip.as_ref().unwrap();
    assert_eq!(i.proto, 17);
    assert_eq!(i.header, 0..56);
    assert_eq!(i.fixed_header, 0..40);
    assert_eq!(p.payload(), b"ext");

    // Unknown option type in hop-by-hop options, then a second hop-by-hop header.
    let mut payload = ext(0, &[0x3e, 2, 0, 0, 1, 0]);
    payload.extend_from_slice(&ext(17, &[1, 4, 0, 0, 0, 0]));
    payload.extend_from_slice(&u);
    let p = decode(linktype::IPV6, &ipv6(0, &payload));
    assert_eq!(
        names(&p),
        [
            "ipv6.exthdr_dupl_hh",
            "ipv6.hopopts_unknown_opt",
            "ipv6.zero_len_padn"
        ]
    );
    assert_eq!(p.payload(), b"ext");

    // Option length beyond the header.
    let mut payload = ext(17, &[1, 9, 0, 0, 0, 0]);
    payload.extend_from_slice(&u);
    let p = decode(linktype::IPV6, &ipv6(0, &payload));
    assert_eq!(names(&p), ["ipv6.exthdr_invalid_optlen"]);

    // Header longer than the packet.
    let p = decode(linktype::IPV6, &ipv6(0, &[17, 1, 0, 0, 0, 0, 0, 0]));
    assert_eq!(names(&p), ["ipv6.trunc_exthdr"]);
    assert!(p.ip.is_some());
    assert_eq!(p.l4, L4::Other(0));
}

#[test]
fn ipv6_routing_and_ah() {
    let u = udp(1, 2, b"rt");
    let mut payload = vec![43, 0, 0, 0, 0, 0, 0, 0]; // routing type 0 -> routing again
    payload.extend_from_slice(&[51, 0, 4, 0, 0, 0, 0, 0]); // second routing header
    payload.extend_from_slice(&[17, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]); // AH, reserved != 0
    payload.extend_from_slice(&u);
    let p = decode(linktype::IPV6, &ipv6(43, &payload));
    check_ranges(&p);
    assert_eq!(
        names(&p),
        [
            "ipv6.exthdr_dupl_rh",
            "ipv6.exthdr_ah_res_not_null",
            "ipv6.rh_type_0"
        ]
    );
    assert_eq!(p.payload(), b"rt");
    assert_eq!(p.ip.as_ref().unwrap().header, 0..68);
}

#[test]
fn ipv6_fragments() {
    let u = udp(1000, 2000, &[7; 24]);

    // Offset 0, M clear: useless fragment header, decoding goes on.
    let p = decode(
        linktype::IPV6,
        &ipv6(44, &frag6(17, 0, false, 0xdead_beef, &u)),
    );
    check_ranges(&p);
    assert_eq!(names(&p), ["ipv6.exthdr_useless_fh"]);
    let i = p.ip.as_ref().unwrap();
    assert!(i.fragment.is_none());
    assert_eq!(i.id, 0xdead_beef);
    assert_eq!(p.payload(), &[7; 24][..]);

    // First fragment: UDP decoded, no events.
    let p = decode(linktype::IPV6, &ipv6(44, &frag6(17, 0, true, 7, &u)));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert!(matches!(p.l4, L4::Udp(u) if u.dst_port == 2000));
    let f = p.ip.as_ref().unwrap().fragment.clone().unwrap();
    assert_eq!((f.offset, f.more_fragments, f.id), (0, true, 7));
    assert_eq!(f.data, 48..48 + 32);

    // Non-first fragment.
    let p = decode(
        linktype::IPV6,
        &ipv6(44, &frag6(17, 1232, true, 7, &[9; 16])),
    );
    assert!(p.events.is_empty());
    assert_eq!(p.l4, L4::Other(17));
    assert_eq!(p.payload(), &[9; 16][..]);
    assert_eq!(p.ip.as_ref().unwrap().proto, 17);
    assert_eq!(p.ip.as_ref().unwrap().header, 0..48);

    // More fragments but a length that is not a multiple of 8.
    let p = decode(linktype::IPV6, &ipv6(44, &frag6(17, 8, true, 7, &[9; 15])));
    assert_eq!(names(&p), ["ipv6.frag_invalid_length"]);

    // Offset + length > 65535.
    let p = decode(
        linktype::IPV6,
        &ipv6(44, &frag6(17, 65528, false, 7, &[9; 16])),
    );
    assert_eq!(names(&p), ["ipv6.frag_pkt_too_large"]);

    // Reserved byte set; duplicate fragment header.
    let mut fh = frag6(44, 0, false, 7, &frag6(17, 0, false, 7, &u));
    fh[1] = 1;
    let p = decode(linktype::IPV6, &ipv6(44, &fh));
    assert_eq!(
        names(&p),
        [
            "ipv6.exthdr_dupl_fh",
            "ipv6.exthdr_useless_fh",
            "ipv6.fh_non_zero_reserved_field"
        ]
    );
    assert!(matches!(p.l4, L4::Udp(_)));

    // First fragment whose transport header is cut: fragment data as payload.
    let p = decode(linktype::IPV6, &ipv6(44, &frag6(6, 0, true, 7, &[1; 8])));
    assert!(p.events.is_empty());
    assert_eq!(p.l4, L4::Other(6));
    assert_eq!(p.payload(), &[1; 8][..]);
}

#[test]
fn ipv6_none_esp_unknown() {
    let p = decode(linktype::IPV6, &ipv6(59, &[]));
    assert!(p.events.is_empty());
    assert_eq!(p.l4, L4::Other(59));
    let p = decode(linktype::IPV6, &ipv6(59, &[1, 2, 3]));
    assert_eq!(names(&p), ["ipv6.data_after_none_header"]);

    let esp = [0, 0, 1, 0, 0, 0, 0, 5, 0xde, 0xad];
    let p = decode(linktype::IPV6, &ipv6(50, &esp));
    assert!(p.events.is_empty());
    assert_eq!(p.l4, L4::Other(50));
    assert_eq!(p.payload(), &[0xde, 0xad]);
    let p = decode(linktype::IPV6, &ipv6(50, &esp[..6]));
    assert_eq!(names(&p), ["esp.pkt_too_small"]);

    let p = decode(linktype::IPV6, &ipv6(253, &[0; 8]));
    assert_eq!(names(&p), ["ipv6.unknown_next_header"]);
    assert_eq!(p.l4, L4::Other(253));
}

// ----------------------------------------------------------------- tunnels

#[test]
fn ipv6_in_ipv4_and_ipv4_in_ipv6() {
    let inner6 = ipv6(6, &tcp(4000, 80, 0x18, &[], b"GET /"));
    let p = decode_innermost(linktype::ETHERNET, &eth(0x0800, &ipv4(41, &inner6)));
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.ip.as_ref().unwrap().version, 6);
    assert_eq!(p.outer_ip.as_ref().unwrap().version, 4);
    assert_eq!(p.payload(), b"GET /");

    let inner4 = ipv4(17, &udp(1, 2, b"in6"));
    let p = decode_innermost(linktype::IPV6, &ipv6(4, &inner4));
    assert!(p.events.is_empty());
    assert_eq!(p.ip.as_ref().unwrap().version, 4);
    assert_eq!(p.outer_ip.as_ref().unwrap().version, 6);
    assert_eq!(p.payload(), b"in6");

    let p = decode_innermost(linktype::IPV6, &ipv6(4, &inner4[..10]));
    assert_eq!(names(&p), ["ipv6.ipv4_in_ipv6_too_small"]);
    assert_eq!(p.ip.as_ref().unwrap().version, 6);
    assert!(p.outer_ip.is_none());
    let p = decode_innermost(linktype::IPV6, &ipv6(4, &ipv6(17, &udp(1, 2, b""))));
    assert_eq!(names(&p), ["ipv6.ipv4_in_ipv6_wrong_version"]);
    let p = decode_innermost(linktype::IPV6, &ipv6(41, &ipv4(17, &udp(1, 2, &[0; 20]))));
    assert_eq!(names(&p), ["ipv6.ipv6_in_ipv6_wrong_version"]);
    let p = decode_innermost(linktype::IPV6, &ipv6(41, &[0x60; 20]));
    assert_eq!(names(&p), ["ipv6.ipv6_in_ipv6_too_small"]);

    // A broken inner packet is a broken tunnel packet; the outer one is
    // whole.
    let frame = ipv4(4, &inner4[..inner4.len() - 1]);
    let p = decode(linktype::RAW, &frame);
    assert!(p.events.is_empty());
    assert!(p.inner_tunnel);
    assert_eq!(p.l4, L4::Other(4));
    assert!(p.outer_ip.is_none());
    assert_eq!(p.ip.as_ref().unwrap().header, 0..20);
    let p = decode_at(linktype::RAW, &frame, 1);
    assert_eq!(names(&p), ["ipv4.trunc_pkt"]);
    assert!(p.ip.is_none());
    assert_eq!(p.outer_ip.as_ref().unwrap().proto, 4);
}

#[test]
fn tunnel_pseudo_packets_one_per_depth() {
    // IPv6 in IPv4: the wire packet stops at the tunnel, the packet inside
    // is decoded at depth 1 with its own events and length.
    let inner6 = ipv6(6, &tcp(4000, 80, 0x18, &[], b"GET /"));
    let frame = eth(0x0800, &ipv4(41, &inner6));
    let outer = decode(linktype::ETHERNET, &frame);
    check_ranges(&outer);
    assert!(outer.inner_tunnel);
    assert!(outer.tunnel.is_none());
    assert_eq!(outer.ip.as_ref().unwrap().version, 4);
    assert_eq!(outer.l4, L4::Other(41));
    assert_eq!(outer.link_header(), &frame[..14]);
    let inner = decode_at(linktype::ETHERNET, &frame, 1);
    check_ranges(&inner);
    assert!(!inner.inner_tunnel);
    let t = inner.tunnel.unwrap();
    assert_eq!((t.kind, t.depth, t.start), (TunnelKind::Ipv4, 1, 34));
    assert_eq!(t.kind.pkt_src(), "ipv4 tunnel");
    assert_eq!(inner.own_len(frame.len() as u32), inner6.len() as u32);
    assert!(inner.link_header().is_empty());
    assert_eq!(inner.payload(), b"GET /");

    // Outer-layer events stay on the wire packet.
    let mut bad = ipv4(4, &ipv4(17, &udp(1, 2, b"x")));
    bad[0] = 0x46; // IPv4 with 4 option bytes that are not there
    let p = decode(linktype::RAW, &bad);
    assert!(!p.events.is_empty());

    // Two tunnels: GRE in IPv4 in IPv6.
    let g = ipv4(47, &gre(0, 0, 0x0800, &[], &ipv4(17, &udp(7, 9, b"two"))));
    let frame = ipv6(4, &g);
    let d0 = decode(linktype::IPV6, &frame);
    let d1 = decode_at(linktype::IPV6, &frame, 1);
    let d2 = decode_at(linktype::IPV6, &frame, 2);
    assert!(d0.inner_tunnel && d1.inner_tunnel && !d2.inner_tunnel);
    assert_eq!(d1.ip.as_ref().unwrap().proto, 47);
    assert_eq!(d1.tunnel.unwrap().kind, TunnelKind::Ipv6);
    assert_eq!(d2.tunnel.unwrap().kind, TunnelKind::Gre);
    assert_eq!(d2.tunnel.unwrap().depth, 2);
    assert_eq!(d2.outer_ip.as_ref().unwrap().version, 6);
    assert_eq!(d2.payload(), b"two");
    assert_eq!(decode_innermost(linktype::IPV6, &frame).payload(), b"two");
}

#[test]
fn arp_on_the_wire_and_in_vxlan() {
    let arp_body = [
        0u8, 1, 8, 0, 6, 4, 0, 1, 0, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
    ];
    let frame = eth(0x0806, &arp_body);
    let p = decode(linktype::ETHERNET, &frame);
    assert!(p.arp && p.ip.is_none() && !p.inner_tunnel);
    assert!(p.events.is_empty());
    assert_eq!(p.link_header(), &frame[..14]);

    // In VXLAN: a tunnel packet whose link header is the inner frame's.
    let mut inner = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x06];
    inner.extend_from_slice(&arp_body);
    let mut vx = vec![0x08, 0, 0, 0, 0, 0, 100, 0];
    vx.extend_from_slice(&inner);
    let frame = eth(0x0800, &ipv4(17, &udp(42710, 4789, &vx)));
    let outer = decode(linktype::ETHERNET, &frame);
    assert!(outer.inner_tunnel && !outer.arp);
    assert_eq!(outer.dst_port(), 4789);
    let p = decode_at(linktype::ETHERNET, &frame, 1);
    assert!(p.arp && p.ip.is_none());
    assert_eq!(p.link_header(), &inner[..14]);
    let t = p.tunnel.unwrap();
    assert_eq!(t.kind.pkt_src(), "vxlan encapsulation");
    assert_eq!(p.outer_ports, (42710, 4789));
    assert_eq!(p.own_len(frame.len() as u32), inner.len() as u32);
}

fn gre(flags: u8, version: u8, proto: u16, extra: &[u8], inner: &[u8]) -> Vec<u8> {
    let mut v = vec![flags, version];
    v.extend_from_slice(&proto.to_be_bytes());
    v.extend_from_slice(extra);
    v.extend_from_slice(inner);
    v
}

#[test]
fn gre_tunnels() {
    let inner = ipv4(6, &tcp(1, 443, 0x18, &[], b"gre!"));
    let p = decode_innermost(linktype::RAW, &ipv4(47, &gre(0, 0, 0x0800, &[], &inner)));
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"gre!");
    assert_eq!(p.outer_ip.as_ref().unwrap().proto, 47);
    assert_eq!(p.ip.as_ref().unwrap().header, 24..44);

    // Key and sequence number.
    let g = gre(
        0x30,
        0,
        0x86dd,
        &[0, 0, 0, 1, 0, 0, 0, 2],
        &ipv6(17, &udp(1, 2, b"k")),
    );
    let p = decode_innermost(linktype::RAW, &ipv4(47, &g));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"k");

    // Transparent Ethernet bridging.
    let g = gre(0, 0, 0x6558, &[], &eth(0x0800, &inner));
    let p = decode_innermost(linktype::RAW, &ipv4(47, &g));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"gre!");

    // ERSPAN type II (sequence number present), VLAN 12.
    let mut erspan = vec![0x10, 0x0c, 0x00, 0x01, 0, 0, 0, 0];
    erspan.extend_from_slice(&eth(0x0800, &inner));
    let g = gre(0x10, 0, 0x88be, &[0, 0, 0, 9], &erspan);
    let p = decode_innermost(linktype::RAW, &ipv4(47, &g));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.vlans(), &[12]);
    assert_eq!(p.payload(), b"gre!");

    // PPTP: version 1, key, PPP in HDLC framing.
    let mut ppp = vec![0xff, 0x03, 0x00, 0x21];
    ppp.extend_from_slice(&inner);
    let g = gre(0x20, 1, 0x880b, &[0, 10, 0, 1], &ppp);
    let p = decode_innermost(linktype::RAW, &ipv4(47, &g));
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"gre!");

    // Header errors keep the outer packet.
    let p = decode_innermost(linktype::RAW, &ipv4(47, &gre(0, 2, 0x0800, &[], &inner)));
    assert_eq!(names(&p), ["gre.wrong_version"]);
    assert_eq!(p.l4, L4::Other(47));
    let p = decode_innermost(linktype::RAW, &ipv4(47, &gre(0x01, 0, 0x0800, &[], &inner)));
    assert_eq!(names(&p), ["gre.version0_recur"]);
    let p = decode_innermost(linktype::RAW, &ipv4(47, &[0, 0, 8]));
    assert_eq!(names(&p), ["gre.pkt_too_small"]);
    let p = decode_innermost(
        linktype::RAW,
        &ipv4(47, &gre(0xb0, 0, 0x0800, &[0, 0], &[])),
    );
    assert_eq!(names(&p), ["gre.version0_hdr_too_big"]);
    let p = decode_innermost(
        linktype::RAW,
        &ipv4(47, &gre(0x00, 1, 0x880b, &[0, 0, 0, 0], &[])),
    );
    assert_eq!(names(&p), ["gre.version1_no_key"]);
    let p = decode_innermost(
        linktype::RAW,
        &ipv4(47, &gre(0x20, 1, 0x0800, &[0, 0, 0, 0], &[])),
    );
    assert_eq!(names(&p), ["gre.version1_wrong_protocol"]);
}

#[test]
fn vxlan() {
    let inner = eth(0x0800, &ipv4(6, &tcp(5000, 80, 0x18, &[], b"vx")));
    let mut vx = vec![0x08, 0, 0, 0, 0, 0x12, 0x34, 0];
    vx.extend_from_slice(&inner);
    let p = decode_innermost(
        linktype::ETHERNET,
        &eth(0x0800, &ipv4(17, &udp(40000, 4789, &vx))),
    );
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"vx");
    assert_eq!(p.dst_port(), 80);
    assert_eq!(p.outer_ip.as_ref().unwrap().proto, 17);

    // Without the I flag it is just UDP.
    let mut not_vx = vx.clone();
    not_vx[0] = 0;
    let p = decode_innermost(
        linktype::ETHERNET,
        &eth(0x0800, &ipv4(17, &udp(40000, 4789, &not_vx))),
    );
    assert!(p.events.is_empty());
    assert_eq!(p.dst_port(), 4789);
    assert_eq!(p.payload(), &not_vx[..]);

    let mut lldp = vx.clone();
    lldp[8 + 12] = 0x88;
    lldp[8 + 13] = 0xcc;
    let p = decode_innermost(
        linktype::ETHERNET,
        &eth(0x0800, &ipv4(17, &udp(40000, 4789, &lldp))),
    );
    assert_eq!(names(&p), ["vxlan.unknown_payload_type"]);
    assert_eq!(p.dst_port(), 4789);
}

#[test]
fn geneve() {
    let inner = eth(0x0800, &ipv4(6, &tcp(5000, 80, 0x18, &[], b"gv")));
    // Version 0, one 4-byte word of options (class, type, len 0), TEB.
    let mut gv = vec![
        0x01, 0, 0x65, 0x58, 0, 0x12, 0x34, 0, 0x01, 0x02, 0x03, 0x00,
    ];
    gv.extend_from_slice(&inner);
    let p = decode_innermost(
        linktype::ETHERNET,
        &eth(0x0800, &ipv4(17, &udp(40000, 6081, &gv))),
    );
    check_ranges(&p);
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"gv");
    assert_eq!(p.dst_port(), 80);
    assert_eq!(p.outer_ip.as_ref().unwrap().proto, 17);

    // A bare IPv4 packet (protocol 0x0800), no options.
    let mut bare = vec![0x00, 0, 0x08, 0x00, 0, 0, 1, 0];
    bare.extend_from_slice(&ipv4(17, &udp(53, 5353, b"in")));
    let p = decode_innermost(
        linktype::ETHERNET,
        &eth(0x0800, &ipv4(17, &udp(40000, 6081, &bare))),
    );
    assert!(p.events.is_empty(), "{:?}", p.events);
    assert_eq!(p.payload(), b"in");
    assert_eq!(p.dst_port(), 5353);

    // Version 1, or options longer than the datagram: plain UDP.
    for bad in [
        {
            let mut g = gv.clone();
            g[0] |= 0x40;
            g
        },
        gv[..10].to_vec(),
    ] {
        let p = decode_innermost(
            linktype::ETHERNET,
            &eth(0x0800, &ipv4(17, &udp(40000, 6081, &bad))),
        );
        assert!(p.events.is_empty(), "{:?}", p.events);
        assert_eq!(p.dst_port(), 6081);
        assert_eq!(p.payload(), &bad[..]);
    }

    // An unknown protocol type, and an inner frame that is not IP.
    let mut unknown = gv.clone();
    unknown[2] = 0x12;
    let p = decode_innermost(
        linktype::ETHERNET,
        &eth(0x0800, &ipv4(17, &udp(40000, 6081, &unknown))),
    );
    assert_eq!(names(&p), ["geneve.unknown_payload_type"]);
    let mut lldp = gv.clone();
    lldp[12 + 12] = 0x88;
    lldp[12 + 13] = 0xcc;
    let p = decode_innermost(
        linktype::ETHERNET,
        &eth(0x0800, &ipv4(17, &udp(40000, 6081, &lldp))),
    );
    assert_eq!(names(&p), ["geneve.unknown_payload_type"]);
    assert_eq!(p.dst_port(), 6081);
}

#[test]
fn nested_tunnels_hit_the_layer_limit() {
    let mut pkt = ipv4(17, &udp(1, 2, b"deep"));
    for _ in 0..20 {
        pkt = ipv4(4, &pkt);
    }
    let p = decode_innermost(linktype::RAW, &pkt);
    check_ranges(&p);
    assert_eq!(names(&p), ["too_many_layers"]);
    // Tunnel packets are offered only as deep as the budget allows: the
    // last one offered is entered.
    let mut depth = 0;
    while decode_at(linktype::RAW, &pkt, depth).inner_tunnel {
        depth += 1;
    }
    assert!((5..16).contains(&depth), "{depth}");
    let last = decode_at(linktype::RAW, &pkt, depth);
    assert_eq!(last.tunnel.unwrap().depth, depth);
    assert!(p.ip.is_some());
    assert!(p.payload.is_empty());

    let mut pkt = ipv4(17, &udp(1, 2, b"deep"));
    for _ in 0..5 {
        pkt = ipv4(4, &pkt);
    }
    let p = decode_innermost(linktype::RAW, &pkt);
    assert!(p.events.is_empty());
    assert_eq!(p.payload(), b"deep");
    assert_eq!(p.outer_ip.as_ref().unwrap().header, 0..20);
}

// -------------------------------------------------------------------- IGMP

/// An IGMP message with its checksum filled in.
fn igmp_msg(mut m: Vec<u8>) -> Vec<u8> {
    let mut acc: u32 = m
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    let c = !(acc as u16);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

#[test]
fn igmp_versions_header_and_events() {
    let igmp = |m: &[u8]| decode(linktype::RAW, &ipv4(2, m));
    let info = |p: &Packet<'_>| match p.l4 {
        L4::Igmp(g) => (g.itype, g.version),
        other => panic!("not IGMP: {other:?}"),
    };
    // v1 query (max response 0), v2 query, v2 report, v1 report.
    let q1 = igmp_msg(vec![0x11, 0, 0, 0, 0, 0, 0, 0]);
    let q2 = igmp_msg(vec![0x11, 100, 0, 0, 224, 0, 0, 1]);
    let r2 = igmp_msg(vec![0x16, 0, 0, 0, 224, 0, 0, 1]);
    let r1 = igmp_msg(vec![0x12, 0, 0, 0, 224, 0, 0, 1]);
    for (m, want) in [
        (&q1, (0x11, 1)),
        (&q2, (0x11, 2)),
        (&r2, (0x16, 2)),
        (&r1, (0x12, 1)),
    ] {
        let p = igmp(m);
        assert!(p.events.is_empty(), "{:?}", names(&p));
        assert_eq!(info(&p), want);
        assert_eq!(p.l4_header(), &m[..8]);
        assert!(p.payload().is_empty());
        assert_eq!(p.icmp_checksum_ok(), Some(true));
    }
    // v3 query with one source: the header takes the source too.
    let q3 = igmp_msg(vec![
        0x11, 100, 0, 0, 224, 0, 0, 5, 2, 125, 0, 1, 10, 0, 0, 9,
    ]);
    let p = igmp(&q3);
    assert_eq!(info(&p), (0x11, 3));
    assert_eq!(p.l4_header(), &q3[..]);
    // ... and claiming two sources it does not have: too small, version 0.
    let mut short = q3.clone();
    short[11] = 2;
    let p = igmp(&igmp_msg(short));
    assert_eq!(info(&p), (0x11, 0));
    assert_eq!(names(&p), ["igmp.v3_pkt_too_small"]);
    // v3 report with one record (no sources).
    let r3 = igmp_msg(vec![0x22, 0, 0, 0, 0, 0, 0, 1, 4, 0, 0, 0, 224, 0, 0, 7]);
    let p = igmp(&r3);
    assert_eq!(info(&p), (0x22, 3));
    assert_eq!(p.l4_header().len(), 16);
    // A bad checksum, and a message too short to decode.
    let mut bad = r2.clone();
    bad[3] ^= 1;
    assert_eq!(igmp(&bad).icmp_checksum_ok(), Some(false));
    let p = igmp(&[0x11, 0]);
    assert_eq!(names(&p), ["igmp.pkt_too_small"]);
    assert_eq!(p.l4, L4::Other(2));
}
