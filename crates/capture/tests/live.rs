//! Live capture on a veth pair inside a private network namespace. These
//! run as root (they fail, not skip, otherwise).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::*;
use vigil_capture::{
    compile_filter, interface_drops, CaptureError, FanoutMode, Ring, RingConfig, TxSocket,
};

const LIMIT: Duration = Duration::from_secs(5);
const LINGER: Duration = Duration::from_millis(100);

#[test]
fn frames_arrive_intact_with_sane_timestamps_and_counts() {
    let ns = Netns::new();
    let mut ring = ns.open_ring("va", &test_config(1));
    assert_eq!(ring.iface(), "va");
    assert_eq!(ring.linktype(), 1);
    let tx = ns.sender("vb");

    let frames: Vec<Vec<u8>> = (0..120u32)
        .map(|i| {
            let len = 18 + (i as usize * 97) % 1400;
            let data: Vec<u8> = (0..len).map(|j| (j as u32 ^ i) as u8).collect();
            l4_frame(
                UDP,
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                4000 + i as u16,
                9999,
                &data,
            )
        })
        .collect();
    let before = now_ns();
    for f in &frames {
        tx.send(f);
    }
    let got = collect(&mut [&mut ring], frames.len(), LIMIT, LINGER).remove(0);
    let after = now_ns();

    assert_eq!(got.len(), frames.len(), "every frame arrives, nothing else");
    let mut last_ts = 0;
    for (g, f) in got.iter().zip(&frames) {
        assert_eq!(&g.data, f, "bytes identical, in order");
        assert_eq!(g.orig_len as usize, f.len());
        assert!(
            g.ts_ns >= before - 1_000_000_000 && g.ts_ns <= after + 1_000_000_000,
            "timestamp {} outside [{before}, {after}] +- 1 s",
            g.ts_ns
        );
        assert!(g.ts_ns >= last_ts, "timestamps do not go back");
        last_ts = g.ts_ns;
    }
    let s = ring.stats().unwrap();
    assert_eq!(s.packets, frames.len() as u64, "{s:?}");
    assert_eq!(s.drops, 0, "{s:?}");
    // The kernel resets its counters on each read; the ring keeps totals.
    assert_eq!(ring.stats().unwrap(), s);
    assert_eq!(ring.truncated(), 0);
    assert_eq!(ring.malformed(), 0);

    // More traffic adds to the totals.
    for f in frames.iter().take(10) {
        tx.send(f);
    }
    let got = collect(&mut [&mut ring], 10, LIMIT, LINGER).remove(0);
    assert_eq!(got.len(), 10);
    assert_eq!(ring.stats().unwrap().packets, frames.len() as u64 + 10);
}

/// (proto, lower endpoint, higher endpoint) of an Ethernet/IPv4 frame.
type FlowKey = (u8, ([u8; 4], u16), ([u8; 4], u16));

fn flow_key(frame: &[u8]) -> FlowKey {
    assert!(
        frame.len() >= 14 + 20 + 4 && frame[12..14] == [0x08, 0x00],
        "not IPv4: {frame:?}"
    );
    let ip = &frame[14..];
    let proto = ip[9];
    let src = <[u8; 4]>::try_from(&ip[12..16]).unwrap();
    let dst = <[u8; 4]>::try_from(&ip[16..20]).unwrap();
    let sport = u16::from_be_bytes([ip[20], ip[21]]);
    let dport = u16::from_be_bytes([ip[22], ip[23]]);
    let (a, b) = ((src, sport), (dst, dport));
    if a <= b {
        (proto, a, b)
    } else {
        (proto, b, a)
    }
}

#[test]
fn fanout_hash_keeps_both_directions_of_a_flow_on_one_ring() {
    let ns = Netns::new();
    let cfg = RingConfig {
        fanout: FanoutMode::Hash,
        ..test_config(7)
    };
    let mut r0 = ns.open_ring("va", &cfg);
    let mut r1 = ns.open_ring("va", &cfg);
    let tx = ns.sender("vb");

    const FLOWS: u16 = 64;
    const PER_DIRECTION: usize = 2;
    let mut sent = 0;
    for round in 0..PER_DIRECTION {
        for i in 0..FLOWS {
            let proto = if i % 2 == 0 { UDP } else { TCP };
            let c = [10, 1, (i >> 8) as u8, i as u8];
            let s = [10, 2, 0, (i % 7) as u8];
            let (cp, sp) = (20000 + i * 13, 80 + i % 5);
            let payload = [round as u8; 32];
            tx.send(&l4_frame(proto, c, s, cp, sp, &payload));
            tx.send(&eth(
                MAC_A,
                MAC_B,
                0x0800,
                &ipv4(proto, s, c, sp, cp, &payload),
            ));
            sent += 2;
        }
    }
    let got = collect(&mut [&mut r0, &mut r1], sent, LIMIT, LINGER);
    let total: usize = got.iter().map(Vec::len).sum();
    assert_eq!(total, sent, "every frame reaches exactly one ring");

    let mut rings_of: BTreeMap<FlowKey, BTreeSet<usize>> = BTreeMap::new();
    let mut count_of: BTreeMap<FlowKey, usize> = BTreeMap::new();
    for (ring, pkts) in got.iter().enumerate() {
        for p in pkts {
            let k = flow_key(&p.data);
            rings_of.entry(k).or_default().insert(ring);
            *count_of.entry(k).or_default() += 1;
        }
    }
    assert_eq!(rings_of.len(), FLOWS as usize);
    for (k, rings) in &rings_of {
        assert_eq!(rings.len(), 1, "flow {k:?} split over rings {rings:?}");
        assert_eq!(
            count_of[k],
            2 * PER_DIRECTION,
            "flow {k:?}: both directions"
        );
    }
    assert!(
        !got[0].is_empty() && !got[1].is_empty(),
        "both rings get traffic: {} / {}",
        got[0].len(),
        got[1].len()
    );
    let (s0, s1) = (r0.stats().unwrap(), r1.stats().unwrap());
    assert_eq!(s0.packets as usize, got[0].len());
    assert_eq!(s1.packets as usize, got[1].len());
}

#[test]
fn bpf_filter_passes_only_matching_frames() {
    let ns = Netns::new();
    let cfg = RingConfig {
        bpf: Some("udp port 53".into()),
        ..test_config(1)
    };
    let mut ring = ns.open_ring("va", &cfg);
    let tx = ns.sender("vb");

    let (c, s) = ([192, 0, 2, 1], [192, 0, 2, 53]);
    let mut want = Vec::new();
    for i in 0..20u16 {
        let q = l4_frame(UDP, c, s, 30000 + i, 53, b"query");
        let r = eth(
            MAC_A,
            MAC_B,
            0x0800,
            &ipv4(UDP, s, c, 53, 30000 + i, b"answer"),
        );
        tx.send(&q);
        tx.send(&r);
        want.push(q);
        want.push(r);
        // Not matching: other UDP port, TCP port 53, ARP.
        tx.send(&l4_frame(UDP, c, s, 30000 + i, 5353, b"mdns"));
        tx.send(&l4_frame(TCP, c, s, 30000 + i, 53, b"tcp dns"));
        tx.send(&eth([0xff; 6], MAC_A, 0x0806, &[0u8; 28]));
    }
    let got = collect(&mut [&mut ring], want.len(), LIMIT, LINGER).remove(0);
    let got: Vec<Vec<u8>> = got.into_iter().map(|g| g.data).collect();
    assert_eq!(got, want, "exactly the UDP port 53 frames, in order");
    assert_eq!(ring.stats().unwrap().packets, want.len() as u64);

    // A bad expression is an error, from open and from compile_filter.
    let bad = RingConfig {
        bpf: Some("udp port banana".into()),
        ..test_config(2)
    };
    match ns.run_in(|| Ring::open("va", &bad)) {
        Err(CaptureError::Filter(m)) => assert!(m.contains("banana"), "{m}"),
        other => panic!("expected Filter error, got {other:?}"),
    }
    assert!(matches!(
        compile_filter("ip and and", 1, 65535),
        Err(CaptureError::Filter(_))
    ));
}

#[test]
fn vlan_tags_come_out_in_the_frame() {
    let ns = Netns::new();
    let mut ring = ns.open_ring("va", &test_config(1));
    let tx = ns.sender("vb");

    let inner = ipv4(UDP, [10, 0, 0, 1], [10, 0, 0, 2], 1000, 2000, b"tagged");
    let tag = |tpid: u16, tci: u16| {
        let mut v = tpid.to_be_bytes().to_vec();
        v.extend_from_slice(&tci.to_be_bytes());
        v
    };
    // 802.1Q vid 100 prio 1; priority tag (vid 0, prio 3); tci 0; QinQ
    // (802.1ad outer vid 200, 802.1Q inner vid 10).
    let frames: Vec<Vec<u8>> = [
        vec![(0x8100, 0x2064)],
        vec![(0x8100, 0x6000)],
        vec![(0x8100, 0x0000)],
        vec![(0x88a8, 0x00c8), (0x8100, 0x000a)],
    ]
    .iter()
    .map(|tags| {
        let mut f = MAC_B.to_vec();
        f.extend_from_slice(&MAC_A);
        for &(tpid, tci) in tags {
            f.extend_from_slice(&tag(tpid, tci));
        }
        f.extend_from_slice(&0x0800u16.to_be_bytes());
        f.extend_from_slice(&inner);
        f
    })
    .collect();
    for f in &frames {
        tx.send(f);
    }
    let got = collect(&mut [&mut ring], frames.len(), LIMIT, LINGER).remove(0);
    assert_eq!(got.len(), frames.len());
    for (g, f) in got.iter().zip(&frames) {
        assert_eq!(
            &g.data[12..16],
            &f[12..16],
            "outer tag present after the MACs"
        );
        assert_eq!(&g.data, f, "frame as on the wire");
        assert_eq!(g.orig_len as usize, f.len());
    }
}

#[test]
fn bad_interfaces_configs_and_groups_are_errors() {
    let ns = Netns::new();
    let cfg = test_config(1);
    ns.run_in(|| {
        for name in ["vigilnosuch0", "", "../va", "a-name-far-too-long-for-linux"] {
            match Ring::open(name, &cfg) {
                Err(CaptureError::NoSuchInterface(n)) => assert!(n.contains(name)),
                other => panic!("{name:?}: expected NoSuchInterface, got {other:?}"),
            }
        }
        let bad_sizes = [
            RingConfig {
                block_size: 3 * 4096,
                ..cfg.clone()
            },
            RingConfig {
                block_count: 0,
                ..cfg.clone()
            },
            RingConfig {
                frame_size: 1 << 20,
                ..cfg.clone()
            },
            RingConfig {
                block_size: 1 << 30,
                block_count: 1 << 20,
                ..cfg.clone()
            },
        ];
        for c in &bad_sizes {
            match Ring::open("va", c) {
                Err(CaptureError::Ring(m)) => {
                    assert!(m.contains("block_size="), "message names the sizes: {m}")
                }
                other => panic!("{c:?}: expected Ring error, got {other:?}"),
            }
        }
        assert!(matches!(
            Ring::open(
                "va",
                &RingConfig {
                    snaplen: 0,
                    ..cfg.clone()
                }
            ),
            Err(CaptureError::Config(_))
        ));

        // One group id, two modes on one interface: the kernel refuses.
        let _first = Ring::open("va", &test_config(5)).expect("first member");
        let other_mode = RingConfig {
            fanout: FanoutMode::Lb,
            ..test_config(5)
        };
        match Ring::open("va", &other_mode) {
            Err(CaptureError::Fanout(m)) => assert!(m.contains("group 5"), "{m}"),
            other => panic!("expected Fanout error, got {other:?}"),
        }
        // The same group id on another interface: refused as well.
        match Ring::open("vb", &test_config(5)) {
            Err(CaptureError::Fanout(_)) => {}
            other => panic!("expected Fanout error, got {other:?}"),
        }
    });

    // NIC-level drops: readable for an interface sysfs shows, an error
    // otherwise.
    interface_drops("lo").expect("lo's counters");
    assert!(matches!(
        interface_drops("vigilnosuch0"),
        Err(CaptureError::NoSuchInterface(_))
    ));
}

#[test]
fn frames_over_snaplen_are_counted_truncated() {
    let ns = Netns::new();
    let small = RingConfig {
        snaplen: 128,
        ..test_config(1)
    };
    let filtered = RingConfig {
        snaplen: 128,
        bpf: Some("udp".into()),
        ..test_config(2)
    };
    let mut plain = ns.open_ring("va", &small);
    let mut with_filter = ns.open_ring("va", &filtered);
    let tx = ns.sender("vb");

    let big = l4_frame(UDP, [10, 0, 0, 1], [10, 0, 0, 2], 1, 2, &[0xab; 1000]);
    let short = l4_frame(UDP, [10, 0, 0, 1], [10, 0, 0, 2], 1, 2, &[0xcd; 40]);
    tx.send(&big);
    tx.send(&short);

    for ring in [&mut plain, &mut with_filter] {
        let got = collect(&mut [&mut *ring], 2, LIMIT, LINGER).remove(0);
        assert_eq!(got.len(), 2, "{}", ring.iface());
        assert_eq!(got[0].data, big[..128], "first 128 bytes");
        assert_eq!(got[0].orig_len as usize, big.len());
        assert_eq!(got[1].data, short, "short frame whole");
        assert_eq!(ring.truncated(), 1, "one frame truncated, counted");
    }
}

#[test]
fn link_down_is_reported() {
    let ns = Netns::new();
    let mut ring = ns.open_ring("va", &test_config(1));
    ns.ip(&["link", "set", "va", "down"]);
    let mut result = Ok(0);
    for _ in 0..50 {
        result = ring.poll(Duration::from_millis(100), &mut |_| {});
        if result.is_err() {
            break;
        }
    }
    match result {
        Err(CaptureError::LinkDown(m)) => assert!(m.contains("va"), "{m}"),
        other => panic!("expected LinkDown, got {other:?}"),
    }
    // Opening on a down interface says so too.
    match ns.run_in(|| Ring::open("va", &test_config(2))) {
        Err(CaptureError::LinkDown(_)) => {}
        other => panic!("expected LinkDown on open, got {other:?}"),
    }
}

#[test]
fn without_cap_net_raw_is_a_permission_error() {
    let ns = Netns::new();
    let r = ns.run_in(|| {
        vigil_testnet::drop_capability_in_this_thread(vigil_testnet::CAP_NET_RAW);
        Ring::open("va", &test_config(1))
    });
    match r {
        Err(e @ CaptureError::Permission(_)) => {
            assert!(e.to_string().contains("CAP_NET_RAW"), "{e}")
        }
        other => panic!("expected Permission, got {other:?}"),
    }
}

#[test]
fn a_full_ring_counts_drops() {
    let ns = Netns::new();
    // Two one-page blocks: a handful of 1000-byte frames fill the ring.
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let tiny = RingConfig {
        block_size: page,
        block_count: 2,
        frame_size: 2048,
        block_timeout_ms: 1,
        ..test_config(1)
    };
    let mut ring = ns.open_ring("va", &tiny);
    let tx = ns.sender("vb");
    let frame = l4_frame(UDP, [10, 0, 0, 1], [10, 0, 0, 2], 1, 2, &[0x5a; 1000]);
    let sent = (2 * page / 1000 + 32) as u64;
    for _ in 0..sent {
        tx.send(&frame); // nobody polls: the ring overflows
    }
    let got = collect(
        &mut [&mut ring],
        sent as usize,
        Duration::from_millis(500),
        LINGER,
    );
    let delivered = got[0].len() as u64;
    let s = ring.stats().unwrap();
    assert!(delivered > 0 && delivered < sent, "delivered {delivered}");
    assert!(s.drops > 0, "{s:?}");
    assert!(s.freeze_q_cnt > 0, "{s:?}");
    // tp_packets includes the drops.
    assert_eq!(s.packets, delivered + s.drops, "{s:?}");
    assert_eq!(s.packets, sent, "{s:?}");
    assert!(got[0].iter().all(|g| g.data == frame));
}

#[test]
fn a_closed_intake_neither_queues_nor_counts_new_frames() {
    let ns = Netns::new();
    let mut ring = ns.open_ring("va", &test_config(1));
    let tx = ns.sender("vb");
    let frame = |i: u16| l4_frame(UDP, [10, 0, 0, 1], [10, 0, 0, 2], 4000 + i, 53, b"before");
    for i in 0..20 {
        tx.send(&frame(i));
    }
    // Let the kernel take them in, then close: what is queued stays
    // readable, what comes after is neither queued nor counted.
    std::thread::sleep(std::time::Duration::from_millis(50));
    ring.close_intake().unwrap();
    for i in 20..40 {
        tx.send(&frame(i));
    }
    let got = collect(
        &mut [&mut ring],
        40,
        std::time::Duration::from_millis(500),
        LINGER,
    )
    .remove(0);
    assert_eq!(got.len(), 20, "only the frames sent before the close");
    let s = ring.stats().unwrap();
    assert_eq!(s.packets, 20, "{s:?}");
    assert_eq!(s.packets, got.len() as u64 + s.drops);
}

#[test]
fn poll_blocks_hands_over_at_most_that_many_blocks() {
    let ns = Netns::new();
    let mut cfg = test_config(1);
    cfg.block_size = 4096;
    cfg.block_count = 16;
    let mut ring = ns.open_ring("va", &cfg);
    let tx = ns.sender("vb");
    // About one 1000-byte frame per 4 KiB block is impossible: ~3 a block.
    for i in 0..30u16 {
        tx.send(&l4_frame(
            UDP,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            4000 + i,
            53,
            &[7u8; 1000],
        ));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mut first = 0;
    let n = ring
        .poll_blocks(std::time::Duration::from_millis(100), 1, &mut |_| {
            first += 1
        })
        .unwrap();
    assert_eq!(n, first);
    assert!(
        first > 0 && first <= 4,
        "one block holds at most 4 such frames: {first}"
    );
    let mut rest = 0;
    for _ in 0..20 {
        rest += ring
            .poll_blocks(std::time::Duration::from_millis(50), 16, &mut |_| {})
            .unwrap();
    }
    assert_eq!(first + rest, 30);
}

#[test]
fn a_tx_socket_sends_frames_as_they_are_and_counts_what_the_kernel_refuses() {
    let ns = Netns::new();
    ns.ip(&["link", "set", "va", "mtu", "1500"]);
    ns.ip(&["link", "set", "vb", "mtu", "1500"]);
    // The peer's ring sees the frames; a ring on va itself sees them as
    // outgoing unless it ignores outgoing frames.
    let mut peer = ns.open_ring("vb", &test_config(1));
    let mut sees_out = ns.open_ring("va", &test_config(2));
    let mut ignores_out = ns.open_ring(
        "va",
        &RingConfig {
            ignore_outgoing: true,
            ..test_config(3)
        },
    );
    let mut tx = ns
        .run_in(|| TxSocket::open("va"))
        .unwrap_or_else(|e| panic!("TxSocket::open: {e}"));
    assert_eq!(tx.iface(), "va");
    let frames: Vec<Vec<u8>> = (0..20u16)
        .map(|i| {
            l4_frame(
                UDP,
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                5000 + i,
                53,
                &[i as u8; 100],
            )
        })
        .collect();
    for f in &frames {
        tx.send(f).unwrap();
    }
    // Over the MTU (1500 + 14): refused with EMSGSIZE, counted.
    let big = l4_frame(UDP, [10, 0, 0, 1], [10, 0, 0, 2], 1, 2, &[0; 2000]);
    let e = tx.send(&big).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EMSGSIZE), "{e}");
    let s = tx.stats();
    assert_eq!((s.sent, s.errors, s.oversize), (20, 1, 1), "{s:?}");
    let got = collect(
        &mut [&mut peer, &mut sees_out, &mut ignores_out],
        2 * frames.len(),
        LIMIT,
        LINGER,
    );
    let data = |g: &Vec<Got>| g.iter().map(|p| p.data.clone()).collect::<Vec<_>>();
    assert_eq!(data(&got[0]), frames, "the peer gets every frame intact");
    assert_eq!(data(&got[1]), frames, "outgoing frames are seen by default");
    assert!(got[2].is_empty(), "ignore_outgoing: {} seen", got[2].len());
    // A frame received on va still reaches the ring that ignores outgoing.
    ns.sender("vb").send(&frames[0]);
    let got = collect(&mut [&mut ignores_out], 1, LIMIT, LINGER).remove(0);
    assert_eq!(got.len(), 1);
    // A missing interface is named.
    assert!(matches!(
        ns.run_in(|| TxSocket::open("nope0")),
        Err(CaptureError::NoSuchInterface(_))
    ));
}
