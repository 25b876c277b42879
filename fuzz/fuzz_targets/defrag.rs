//! IP defragmentation (crates/defrag) on sequences of hostile fragments,
//! as `arbitrary` structured input: a policy and small caps, then
//! fragments of a few datagrams (IPv4 and IPv6, a handful of ids so that
//! fragments meet) with any offset, length, more-fragments flag and time.
//!
//! Invariants: no panic; a rebuilt packet is never longer than the bytes
//! given to the defragmenter so far (link + header + data of every
//! fragment); memory held stays within the memory cap (plus the one
//! fragment being added); once every datagram has timed out nothing is
//! held and no datagram is in progress.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use vigil_defrag::{DefragConfig, Defragmenter, FragPolicy, Fragment};

#[derive(Arbitrary, Debug)]
struct Input {
    policy: u8,
    max_frags: u8,
    max_trackers: u8,
    memcap_kb: u8,
    frags: Vec<Frag>,
}

#[derive(Arbitrary, Debug)]
struct Frag {
    v6: bool,
    /// Datagram: picks source, id and protocol from a few values.
    who: u8,
    /// Offset in 8-byte units (as on the wire), sometimes not a multiple.
    offset_units: u16,
    odd_offset: u8,
    more: bool,
    link: u8,
    header_len: u8,
    data: Vec<u8>,
    /// Time step in milliseconds.
    dt_ms: u16,
}

const POLICIES: [FragPolicy; 6] = [
    FragPolicy::First,
    FragPolicy::Last,
    FragPolicy::Bsd,
    FragPolicy::Linux,
    FragPolicy::Windows,
    FragPolicy::Solaris,
];

fuzz_target!(|input: Input| {
    let cfg = DefragConfig {
        policy: POLICIES[usize::from(input.policy) % POLICIES.len()],
        timeout_secs: 60,
        max_frags: usize::from(input.max_frags).max(1),
        max_trackers: usize::from(input.max_trackers % 8).max(1),
        memcap: (usize::from(input.memcap_kb) + 1) * 1024,
    };
    let memcap = cfg.memcap;
    let timeout_ns = i64::from(cfg.timeout_secs) * 1_000_000_000;
    let mut d = Defragmenter::new(cfg);
    let mut out = Vec::new();
    let mut ts: i64 = 1_700_000_000_000_000_000;
    let mut given = 0usize;
    let link_bytes = [0xaau8; 64];
    for f in input.frags.iter().take(256) {
        ts += i64::from(f.dt_ms) * 1_000_000;
        let who = f.who % 4;
        let (src, dst) = if f.v6 {
            (
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, u16::from(who))),
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x100)),
            )
        } else {
            (
                IpAddr::V4(Ipv4Addr::new(10, 0, 0, who)),
                IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)),
            )
        };
        let header_len = if f.v6 { 40 } else { 20 } + usize::from(f.header_len % 4) * 8;
        let mut header = vec![0u8; header_len];
        header[0] = if f.v6 { 0x60 } else { 0x45 };
        let link = &link_bytes[..usize::from(f.link % 3) * 14];
        let offset = u32::from(f.offset_units) * 8 + if f.odd_offset == 0xff { 1 } else { 0 };
        let data = &f.data[..f.data.len().min(2048)];
        let frag = Fragment {
            src,
            dst,
            id: u32::from(who % 2) + 7,
            proto: if who == 3 { 6 } else { 17 },
            vlan: 0,
            offset,
            more: f.more,
            link,
            header: &header,
            data,
            ts_ns: ts,
        };
        given += link.len() + header.len() + data.len();
        let r = d.insert(&frag, &mut out);
        if r.reassembled {
            assert!(
                out.len() <= given,
                "rebuilt {} bytes from {given} given",
                out.len()
            );
        }
        assert!(
            d.bytes_held() <= memcap + data.len() + header.len() + link.len() + 256,
            "{} bytes held, cap {memcap}",
            d.bytes_held()
        );
    }
    d.expire(ts + timeout_ns + 1);
    assert_eq!(d.in_progress(), 0, "datagrams left after the timeout");
    assert_eq!(d.bytes_held(), 0, "bytes held after every datagram ended");
});
