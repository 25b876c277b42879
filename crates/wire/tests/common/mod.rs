//! Frame builders for the tests. Checksums are left zero: the decoder does
//! not verify them.
#![allow(dead_code)]

use vigil_wire::{Packet, L4};

pub const MAC_A: [u8; 6] = [0x00, 0x1b, 0x21, 0x3c, 0x9d, 0xf8];
pub const MAC_B: [u8; 6] = [0x00, 0x0c, 0x29, 0x8e, 0x5b, 0x01];

pub fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&MAC_A);
    v.extend_from_slice(&MAC_B);
    v.extend_from_slice(&ethertype.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

pub fn vlan(id: u16, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(&ethertype.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// IPv4 header with options, 192.168.1.10 -> 10.0.0.1, TTL 64, id 0x1234.
pub fn ipv4_full(proto: u8, opts: &[u8], frag: u16, payload: &[u8]) -> Vec<u8> {
    assert_eq!(opts.len() % 4, 0);
    let hlen = 20 + opts.len();
    let total = hlen + payload.len();
    let mut v = vec![
        0x40 | (hlen / 4) as u8,
        0x00,
        (total >> 8) as u8,
        total as u8,
        0x12,
        0x34,
        (frag >> 8) as u8,
        frag as u8,
        64,
        proto,
        0,
        0,
        192,
        168,
        1,
        10,
        10,
        0,
        0,
        1,
    ];
    v.extend_from_slice(opts);
    v.extend_from_slice(payload);
    v
}

pub fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    ipv4_full(proto, &[], 0x4000, payload)
}

/// IPv6 header 2001:db8::1 -> 2001:db8::2, hop limit 64.
pub fn ipv6_hl(nh: u8, hop_limit: u8, payload: &[u8]) -> Vec<u8> {
    let plen = payload.len();
    let mut v = vec![
        0x60,
        0x00,
        0x00,
        0x00,
        (plen >> 8) as u8,
        plen as u8,
        nh,
        hop_limit,
    ];
    v.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    v.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    v.extend_from_slice(payload);
    v
}

pub fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
    ipv6_hl(nh, 64, payload)
}

/// Extension header (hop-by-hop, destination options, routing) with the
/// given body; the body length + 2 must be a multiple of 8.
pub fn ext(next: u8, body: &[u8]) -> Vec<u8> {
    assert_eq!((body.len() + 2) % 8, 0);
    let mut v = vec![next, ((body.len() + 2) / 8 - 1) as u8];
    v.extend_from_slice(body);
    v
}

pub fn frag6(next: u8, offset: u16, more: bool, id: u32, payload: &[u8]) -> Vec<u8> {
    let fo = (offset & 0xfff8) | u16::from(more);
    let mut v = vec![next, 0];
    v.extend_from_slice(&fo.to_be_bytes());
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

pub fn tcp(sport: u16, dport: u16, flags: u8, opts: &[u8], payload: &[u8]) -> Vec<u8> {
    assert_eq!(opts.len() % 4, 0);
    let hlen = 20 + opts.len();
    let mut v = Vec::new();
    v.extend_from_slice(&sport.to_be_bytes());
    v.extend_from_slice(&dport.to_be_bytes());
    v.extend_from_slice(&0x0102_0304u32.to_be_bytes());
    v.extend_from_slice(&0x0a0b_0c0du32.to_be_bytes());
    v.push(((hlen / 4) as u8) << 4);
    v.push(flags);
    v.extend_from_slice(&65535u16.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 0]);
    v.extend_from_slice(opts);
    v.extend_from_slice(payload);
    v
}

pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut v = Vec::new();
    v.extend_from_slice(&sport.to_be_bytes());
    v.extend_from_slice(&dport.to_be_bytes());
    v.extend_from_slice(&(len as u16).to_be_bytes());
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(payload);
    v
}

pub fn names(p: &Packet<'_>) -> Vec<&'static str> {
    p.events.iter().map(|e| e.name()).collect()
}

pub fn tcp_info(p: &Packet<'_>) -> vigil_wire::TcpInfo {
    match p.l4 {
        L4::Tcp(t) => t,
        ref other => panic!("expected TCP, got {other:?} events {:?}", p.events),
    }
}

/// Every range a packet hands out lies within its frame.
pub fn check_ranges(p: &Packet<'_>) {
    let n = p.data.len();
    let ok = |r: &std::ops::Range<usize>, what: &str| {
        assert!(
            r.start <= r.end && r.end <= n,
            "{what} {r:?} outside 0..{n}"
        );
    };
    ok(&p.l4_header, "l4_header");
    ok(&p.payload, "payload");
    ok(&p.link_header, "link_header");
    for ip in p.ip.iter().chain(p.outer_ip.iter()) {
        ok(&ip.header, "ip.header");
        ok(&ip.fixed_header, "ip.fixed_header");
        assert!(ip.fixed_header.start == ip.header.start);
        assert!(ip.fixed_header.end <= ip.header.end);
        if let Some(f) = &ip.fragment {
            ok(&f.data, "frag.data");
        }
        assert!(usize::from(ip.ipv4_option_count) <= 8);
    }
    assert!(usize::from(p.vlan_count) <= 3);
    if !matches!(p.l4, L4::None) {
        assert!(p.ip.is_some(), "transport without IP");
    }
    let _ = (p.payload(), p.l4_header(), p.ip_header(), p.link_header());
    let _ = p.sack_blocks().count();
}
