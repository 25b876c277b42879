//! The packet decoder (crates/wire) on hostile frames. The first byte picks
//! the pcap link type (every one Vigil decodes, plus an unknown one), the
//! rest is the frame. Tunnels (GRE, VXLAN, Geneve, IP-in-IP, ERSPAN,
//! MPLS, PPPoE ...) are reached from inside the frame.
//!
//! Every tunnel packet of the frame is decoded too (`decode_at` each depth
//! the one above offers).
//!
//! Invariants, for the frame and each tunnel packet: no panic; every range
//! the decoder returns lies within the frame; a transport implies an IP
//! layer; the packet keeps its link type; at most 3 VLAN ids and 8 IPv4
//! options; SACK blocks read in bounds; a tunnel packet knows its depth and
//! starts inside the frame; the depth stays within the layer budget.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ops::Range;
use vigil_wire::{decode_at, linktype, Packet, L4};

/// The `i`-th of the decoded link types and, last, one the decoder does
/// not know (12 in all).
fn linktype_at(i: usize) -> u32 {
    let n = linktype::DECODED.len() + 1;
    linktype::DECODED.get(i % n).copied().unwrap_or(9999)
}

fn in_frame(r: &Range<usize>, n: usize, what: &str) {
    assert!(
        r.start <= r.end && r.end <= n,
        "{what} {r:?} outside 0..{n}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let lt = linktype_at(usize::from(sel));
    let mut depth = 0u8;
    loop {
        let p = decode_at(lt, frame, depth);
        check(&p, lt, frame.len());
        if depth > 0 {
            let t = p.tunnel.expect("a tunnel packet says which tunnel");
            assert_eq!(t.depth, depth);
            assert!(t.start <= frame.len());
        }
        if !p.inner_tunnel {
            break;
        }
        depth += 1;
        assert!(depth <= 16, "tunnel packets beyond the layer budget");
    }
});

fn check(p: &Packet<'_>, lt: u32, n: usize) {
    assert_eq!(p.linktype, lt);
    in_frame(&p.l4_header, n, "l4_header");
    in_frame(&p.payload, n, "payload");
    in_frame(&p.link_header, n, "link_header");
    for ip in p.ip.iter().chain(p.outer_ip.iter()) {
        in_frame(&ip.header, n, "ip.header");
        in_frame(&ip.fixed_header, n, "ip.fixed_header");
        assert_eq!(ip.fixed_header.start, ip.header.start);
        assert!(ip.fixed_header.end <= ip.header.end);
        if let Some(f) = &ip.fragment {
            in_frame(&f.data, n, "fragment data");
        }
        assert!(usize::from(ip.ipv4_option_count) <= 8);
        let _ = ip.ipv4_options();
    }
    assert!(usize::from(p.vlan_count) <= 3);
    assert!(p.vlans().len() <= 3);
    if !matches!(p.l4, L4::None) {
        assert!(p.ip.is_some(), "transport without IP");
    }
    let _ = (p.payload(), p.l4_header(), p.ip_header(), p.link_header());
    let _ = (p.src_port(), p.dst_port(), p.is_fragment());
    let _ = p.sack_blocks().count();
    let _ = p.events.iter().count();
}
