//! Transport checksum validation on crafted frames: right checksums pass,
//! a flipped byte fails, what cannot be judged is `None`.

use std::net::Ipv4Addr;

use vigil_craft::PacketBuilder;
use vigil_wire::{decode, linktype};

fn v4() -> (Ipv4Addr, Ipv4Addr) {
    (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 51, 100, 7))
}

#[test]
fn crafted_tcp_and_udp_checksums_are_valid() {
    let (a, b) = v4();
    let b_ = PacketBuilder::new();
    let tcp = b_.ipv4_tcp(
        a,
        1234,
        b,
        80,
        1,
        0,
        vigil_craft::SYN | vigil_craft::ACK,
        b"payload!",
    );
    let udp = b_.ipv4_udp(a, 5353, b, 53, b"odd-length");
    let v6 = vigil_craft::eth_ipv6_tcp(
        "2001:db8::1".parse().unwrap(),
        4000,
        "2001:db8::2".parse().unwrap(),
        443,
        7,
        9,
        vigil_craft::ACK,
        b"six",
    );
    for f in [&tcp, &udp, &v6] {
        let p = decode(linktype::ETHERNET, f);
        assert_eq!(p.transport_checksum_ok(), Some(true), "{f:02x?}");
    }
}

#[test]
fn a_changed_byte_makes_the_checksum_wrong() {
    let (a, b) = v4();
    let mut tcp = PacketBuilder::new().ipv4_tcp(a, 1234, b, 80, 1, 0, vigil_craft::ACK, b"payload");
    let n = tcp.len();
    tcp[n - 1] ^= 0x20;
    assert_eq!(
        decode(linktype::ETHERNET, &tcp).transport_checksum_ok(),
        Some(false)
    );
    let mut udp = PacketBuilder::new().ipv4_udp(a, 1, b, 2, b"data");
    let n = udp.len();
    udp[n - 2] ^= 1;
    assert_eq!(
        decode(linktype::ETHERNET, &udp).transport_checksum_ok(),
        Some(false)
    );
}

#[test]
fn what_cannot_be_judged_is_none() {
    let (a, b) = v4();
    // Cut short: the segment is not all there.
    let tcp = PacketBuilder::new().ipv4_tcp(a, 1234, b, 80, 1, 0, vigil_craft::ACK, &[7u8; 100]);
    let cut = &tcp[..tcp.len() - 10];
    assert_eq!(
        decode(linktype::ETHERNET, cut).transport_checksum_ok(),
        None
    );
    // IPv4 UDP with checksum 0: none was computed.
    let mut udp = PacketBuilder::new().ipv4_udp(a, 1, b, 2, b"data");
    udp[14 + 20 + 6] = 0;
    udp[14 + 20 + 7] = 0;
    assert_eq!(
        decode(linktype::ETHERNET, &udp).transport_checksum_ok(),
        None
    );
    // Not TCP or UDP.
    let icmp = PacketBuilder::new().ipv4_icmp(a, b, 8, 0, 1, 1, b"ping");
    assert_eq!(
        decode(linktype::ETHERNET, &icmp).transport_checksum_ok(),
        None
    );
}
