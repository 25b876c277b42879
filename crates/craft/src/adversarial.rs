//! Adversarial captures: traffic built to exhaust a monitor's state rather
//! than to carry an attack (Sommer and Paxson: reassembly, not string
//! matching, is where a monitor gets hurt). Each generator yields frames in
//! time order, lazily where the capture is large, so tests and the
//! `vigil-craft-adversarial` tool can stream millions of packets to a pcap
//! without holding them.
//!
//! | scenario | what it does | which limit it hits |
//! |---|---|---|
//! | [`syn_flood`] | one SYN from each of N distinct clients | flow table |
//! | [`overlap_storm`] | one connection; never-acknowledged segments rewriting the same ranges with other data, plus sparse segments across the window | stream memory, overlap handling |
//! | [`fragment_flood`] | N datagrams of which only overlapping first fragments arrive | defragmentation trackers and memory |
//! | [`tiny_segments`] | one connection whose data comes one byte per segment | per-segment bookkeeping |

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::packet::{PacketBuilder, ACK, PSH, SYN};
use crate::pcap::Ts;
use crate::session::{add_us, Dir, TcpSession, TimedFrame};

/// Time of the first frame of every scenario.
pub const START: Ts = (1_700_000_000, 0);

const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

/// A SYN from each of `flows` distinct clients (10.x.y.z, ports 1024 and
/// up) to 192.0.2.1:80, one microsecond apart; no SYN ever gets an answer.
pub fn syn_flood(flows: u32) -> impl Iterator<Item = TimedFrame> {
    let b = PacketBuilder::default().mss(1460);
    (0..flows).map(move |i| {
        let src = Ipv4Addr::from(0x0a00_0000 | (i & 0x00ff_ffff));
        let sport = 1024 + (i >> 24) as u16;
        let frame = b.tcp(
            IpAddr::V4(src),
            sport,
            IpAddr::V4(SERVER),
            80,
            i.wrapping_mul(2_654_435_761),
            0,
            SYN,
            &[],
        );
        (add_us(START, u64::from(i)), frame)
    })
}

/// One established connection (window scaling on, so the whole first
/// MiB is inside the window), then `segments` data segments from the
/// client that the server never acknowledges: each rewrites one of 64
/// 1 KiB slots of the first 64 KiB with new bytes (overlaps with
/// different data), and every fourth lands alone somewhere in the rest
/// of the first MiB (sparse data, which costs a block each when stored).
pub fn overlap_storm(segments: u32) -> impl Iterator<Item = TimedFrame> {
    let client: SocketAddr = "10.9.9.9:40000".parse().expect("valid address");
    let server: SocketAddr = "192.0.2.1:80".parse().expect("valid address");
    let b = PacketBuilder::default().window(65535).wscale(14);
    let mut s = TcpSession::new(client, server)
        .with_builder(b.clone())
        .start_at(START);
    // The server's first scaled window opens the whole range.
    s.handshake().segment(Dir::ToClient, ACK, &[]);
    let head = s.take_frames();
    let base = s.client_next_seq();
    let ack = s.server_next_seq();
    let now = s.now();
    let seg = move |i: u32| {
        let (off, len) = if i % 4 == 3 {
            (64 * 1024 + (i.wrapping_mul(40_503) % (960 << 10)), 512)
        } else {
            ((i % 64) * 1024, 1024)
        };
        let data = vec![b'A' + (i % 26) as u8; len];
        let frame = b.tcp(
            client.ip(),
            client.port(),
            server.ip(),
            server.port(),
            base.wrapping_add(off),
            ack,
            PSH | ACK,
            &data,
        );
        (add_us(now, u64::from(i) + 1), frame)
    };
    head.into_iter().chain((0..segments).map(seg))
}

/// `datagrams` fragmented datagrams (UDP, IPv4) that never complete: each
/// sends two overlapping first pieces of 1400 bytes (the second shifted by
/// 8 bytes), never the last fragment. Distinct identification numbers and
/// sources make every datagram a new tracker.
pub fn fragment_flood(datagrams: u32) -> impl Iterator<Item = TimedFrame> {
    (0..datagrams).flat_map(move |i| {
        let src = IpAddr::V4(Ipv4Addr::from(0x0a40_0000 | (i >> 16)));
        let id = (i & 0xffff) as u16;
        let body = vec![b'F'; 1400];
        let ts = add_us(START, u64::from(i) * 2);
        let first = PacketBuilder::default()
            .ip_id(id)
            .mf(true)
            .frag_offset(0)
            .eth_ip(src, IpAddr::V4(SERVER), 17, &body);
        let overlap = PacketBuilder::default()
            .ip_id(id)
            .mf(true)
            .frag_offset(1)
            .eth_ip(src, IpAddr::V4(SERVER), 17, &body);
        [(ts, first), (add_us(ts, 1), overlap)]
    })
}

/// One connection whose client sends `data` one byte per segment. With
/// `ack_every = Some(k)` the server acknowledges every `k` segments (so a
/// monitor can inspect and release as it goes); with `None` nothing is
/// acknowledged until the connection closes.
pub fn tiny_segments(data: &[u8], ack_every: Option<u32>) -> Vec<TimedFrame> {
    let client: SocketAddr = "10.7.7.7:40001".parse().expect("valid address");
    let server: SocketAddr = "192.0.2.1:80".parse().expect("valid address");
    let mut s = TcpSession::new(client, server)
        .start_at(START)
        .with_step(1)
        .with_mss(1)
        .with_data_acks(false);
    s.handshake();
    for (i, byte) in data.iter().enumerate() {
        s.segment(Dir::ToServer, PSH | ACK, std::slice::from_ref(byte));
        if let Some(k) = ack_every {
            if (i as u32 + 1) % k.max(1) == 0 {
                s.segment(Dir::ToClient, ACK, &[]);
            }
        }
    }
    s.segment(Dir::ToClient, ACK, &[]);
    s.close();
    s.into_frames()
}

/// The scenarios by name, for the command-line tool.
pub const SCENARIOS: &[&str] = &[
    "syn-flood",
    "overlap-storm",
    "fragment-flood",
    "tiny-segments",
];

/// Frames of a scenario by name with size `n` (flows, segments,
/// datagrams or bytes).
pub fn scenario(name: &str, n: u32) -> Option<Box<dyn Iterator<Item = TimedFrame>>> {
    Some(match name {
        "syn-flood" => Box::new(syn_flood(n)),
        "overlap-storm" => Box::new(overlap_storm(n)),
        "fragment-flood" => Box::new(fragment_flood(n)),
        "tiny-segments" => {
            let data: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            Box::new(tiny_segments(&data, None).into_iter())
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syn_flood_flows_are_distinct_and_ordered() {
        let frames: Vec<_> = syn_flood(1000).collect();
        assert_eq!(frames.len(), 1000);
        let mut keys: Vec<_> = frames.iter().map(|(_, f)| f[26..36].to_vec()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 1000);
        assert!(frames.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn storm_and_floods_have_the_expected_sizes() {
        assert_eq!(overlap_storm(100).count(), 4 + 100);
        assert_eq!(fragment_flood(10).count(), 20);
        let t = tiny_segments(b"abcdef", Some(2));
        // handshake + 6 data + 3 acks + final ack + close (3).
        assert_eq!(t.len(), 3 + 6 + 3 + 1 + 3);
        assert!(scenario("nope", 1).is_none());
        for s in SCENARIOS {
            assert!(scenario(s, 4).is_some());
        }
    }
}
