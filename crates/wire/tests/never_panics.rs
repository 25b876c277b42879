//! Property tests: `decode` never panics and every range it returns lies
//! within the frame, for arbitrary bytes under every link type and for
//! mutated well-formed frames (which reach the deeper layers).

mod common;

use common::*;
use proptest::prelude::*;
use vigil_wire::{decode, decode_at, linktype};

/// The `i`-th of the decoded link types and, last, one the decoder does
/// not know (12 in all).
fn linktype_at(i: usize) -> u32 {
    let n = linktype::DECODED.len() + 1;
    linktype::DECODED.get(i % n).copied().unwrap_or(9999)
}

/// Well-formed frames touching each decoder; mutated below.
fn seeds() -> Vec<(u32, Vec<u8>)> {
    let payload = b"GET / HTTP/1.1\r\n\r\n";
    let t = tcp(
        1234,
        80,
        0x18,
        &[
            2, 4, 5, 0xb4, 1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2,
        ],
        payload,
    );
    let u = udp(53, 53, b"\x12\x34\x01\x00\x00\x01");
    let v4t = ipv4(6, &t);
    let v4u = ipv4(17, &u);
    let v6t = ipv6(6, &t);
    let mut rr = vec![0x07, 0x0f, 0x04];
    rr.resize(16, 0);
    let v4opt = ipv4_full(17, &rr, 0, &u);
    // Hop-by-hop (router alert), routing type 2, destination options (home
    // address), first fragment, AH, TCP.
    let mut ext_chain = ext(43, &[5, 2, 0, 0, 0, 0]);
    ext_chain.extend_from_slice(&[60, 0, 2, 0, 0, 0, 0, 0]);
    let mut hao = vec![0xc9, 16];
    hao.extend_from_slice(&[0x20; 16]);
    hao.extend_from_slice(&[0, 0, 0, 0]);
    ext_chain.extend_from_slice(&ext(44, &hao));
    let t20 = tcp(1234, 80, 0x18, &[1, 1, 1, 1], &[b'x'; 20]);
    let mut ah = vec![6, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1];
    ah.extend_from_slice(&t20);
    ext_chain.extend_from_slice(&frag6(51, 0, true, 1, &ah));
    let v6ext = ipv6(0, &ext_chain);
    let icmp4 = ipv4(
        1,
        &[
            3, 1, 0, 0, 0, 0, 0, 0, 0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 1, 2, 3, 4, 5, 6, 7,
            8,
        ],
    );
    let icmp6 = ipv6_hl(
        58,
        1,
        &[
            130, 0, 0, 0, 0, 0, 0, 0, 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        ],
    );
    let gre = {
        let mut g = vec![0x30, 0, 0x08, 0x00, 0, 0, 0, 1, 0, 0, 0, 2];
        g.extend_from_slice(&v4t);
        ipv4(47, &g)
    };
    let vxlan = {
        let mut vx = vec![0x08, 0, 0, 0, 0, 0, 1, 0];
        vx.extend_from_slice(&eth(0x8100, &vlan(5, 0x86dd, &v6t)));
        ipv4(17, &udp(1, 4789, &vx))
    };
    let geneve = {
        let mut g = vec![0x01, 0, 0x65, 0x58, 0, 0, 1, 0, 0, 1, 2, 0];
        g.extend_from_slice(&eth(0x0800, &v4t));
        ipv4(17, &udp(1, 6081, &g))
    };
    let mpls = {
        let mut m = vec![0, 1, 0, 0x40, 0, 1, 1, 0x40];
        m.extend_from_slice(&v4t);
        m
    };
    let pppoe = {
        let mut s = vec![0x11, 0, 0, 1, 0, 0x30, 0x00, 0x21];
        s.extend_from_slice(&v4u);
        s
    };
    let frag = ipv4_full(17, &[], 0x2000, &u);
    let mut sll = vec![0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x86, 0xdd];
    sll.extend_from_slice(&v6t);
    let mut null = vec![2, 0, 0, 0];
    null.extend_from_slice(&v4t);
    let mut ppp = vec![0xff, 0x03, 0x00, 0x57];
    ppp.extend_from_slice(&v6t);

    vec![
        (linktype::ETHERNET, eth(0x0800, &v4t)),
        (
            linktype::ETHERNET,
            eth(0x8100, &vlan(7, 0x88a8, &vlan(8, 0x0800, &v4u))),
        ),
        (linktype::ETHERNET, eth(0x86dd, &v6ext)),
        (linktype::ETHERNET, eth(0x0800, &v4opt)),
        (linktype::ETHERNET, eth(0x0800, &icmp4)),
        (linktype::ETHERNET, eth(0x86dd, &icmp6)),
        (linktype::ETHERNET, eth(0x0800, &gre)),
        (linktype::ETHERNET, eth(0x0800, &vxlan)),
        (linktype::ETHERNET, eth(0x0800, &geneve)),
        (linktype::ETHERNET, eth(0x8847, &mpls)),
        (linktype::ETHERNET, eth(0x8864, &pppoe)),
        (linktype::ETHERNET, eth(0x0800, &frag)),
        (linktype::RAW, ipv4(41, &v6ext)),
        (linktype::RAW, ipv6(4, &v4opt)),
        (linktype::LINUX_SLL, sll),
        (linktype::NULL, null),
        (linktype::PPP, ppp),
    ]
}

/// The wire packet and every tunnel packet inside it.
fn check(lt: u32, data: &[u8]) {
    let mut depth = 0u8;
    loop {
        let p = decode_at(lt, data, depth);
        check_ranges(&p);
        assert_eq!(p.linktype, lt);
        if depth > 0 {
            let t = p.tunnel.expect("a tunnel packet says which tunnel");
            assert_eq!(t.depth, depth);
            assert!(t.start <= data.len());
        }
        if !p.inner_tunnel {
            break;
        }
        depth += 1;
        assert!(depth <= 16, "more tunnels than the layer budget allows");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn arbitrary_bytes_every_link_type(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        for lt in (0..=linktype::DECODED.len()).map(linktype_at) {
            check(lt, &data);
        }
    }

    #[test]
    fn mutated_frames(
        seed in 0usize..16,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in any::<usize>(),
        truncate in any::<bool>(),
    ) {
        let seeds = seeds();
        let (lt, mut frame) = seeds[seed % seeds.len()].clone();
        check(lt, &frame);
        for (at, byte) in flips {
            let n = frame.len();
            frame[at % n] = byte;
        }
        if truncate {
            frame.truncate(cut % (frame.len() + 1));
        }
        check(lt, &frame);
    }
}

/// Every seed frame decodes without events: the seeds are well formed, so
/// the mutation test starts from the deep paths it means to exercise.
#[test]
fn seeds_are_clean() {
    for (i, (lt, frame)) in seeds().into_iter().enumerate() {
        let p = decode(lt, &frame);
        assert!(p.ip.is_some(), "seed {i}");
        assert!(p.events.is_empty(), "seed {i}: {:?}", p.events);
    }
}

/// Every prefix of every seed: truncation at each byte boundary.
#[test]
fn every_truncation_of_every_seed() {
    for (lt, frame) in seeds() {
        for n in 0..=frame.len() {
            check(lt, &frame[..n]);
        }
    }
}

/// Deterministic soak: many random mutations (byte flips, insertions,
/// deletions, truncation) of every seed, under its own and every other
/// link type.
#[test]
fn random_mutation_soak() {
    let seeds = seeds();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    for _ in 0..100_000 {
        let (lt, mut frame) = seeds[rand() as usize % seeds.len()].clone();
        for _ in 0..1 + rand() % 6 {
            let n = frame.len().max(1);
            let at = rand() as usize % n;
            match rand() % 4 {
                0 | 1 => {
                    if let Some(b) = frame.get_mut(at) {
                        *b = rand() as u8;
                    }
                }
                2 => frame.insert(at.min(frame.len()), rand() as u8),
                _ => {
                    if at < frame.len() {
                        frame.remove(at);
                    }
                }
            }
        }
        if rand() % 4 == 0 {
            let n = rand() as usize % (frame.len() + 1);
            frame.truncate(n);
        }
        let lt = if rand() % 8 == 0 {
            linktype_at(rand() as usize)
        } else {
            lt
        };
        check(lt, &frame);
    }
}
