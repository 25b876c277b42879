//! Flow keys and the symmetric hash used for dispatch.

use std::net::{IpAddr, Ipv6Addr};

/// Converts an address to one 128-bit space (IPv4 as IPv4-mapped IPv6).
#[inline]
pub fn addr_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// Converts back from [`addr_bits`].
pub fn bits_addr(b: u128) -> IpAddr {
    let v6 = Ipv6Addr::from(b);
    match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    }
}

/// A direction-independent flow key: the (address, port) endpoint that
/// sorts lower is stored first, so both directions build the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub lo_addr: u128,
    pub hi_addr: u128,
    pub lo_port: u16,
    pub hi_port: u16,
    pub proto: u8,
    /// Innermost VLAN id (0 when untagged): the same 5-tuple on two VLANs
    /// is two flows, as in Suricata.
    pub vlan: u16,
}

impl FlowKey {
    /// Builds the key and tells whether the packet's source is the `lo`
    /// endpoint.
    pub fn new(
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        proto: u8,
        vlan: u16,
    ) -> (FlowKey, bool) {
        let s = (addr_bits(src), sport);
        let d = (addr_bits(dst), dport);
        let src_is_lo = s <= d;
        let (lo, hi) = if src_is_lo { (s, d) } else { (d, s) };
        (
            FlowKey {
                lo_addr: lo.0,
                hi_addr: hi.0,
                lo_port: lo.1,
                hi_port: hi.1,
                proto,
                vlan,
            },
            src_is_lo,
        )
    }
}

#[inline]
fn mix(mut x: u64) -> u64 {
    // splitmix64 finaliser: cheap, well distributed, fixed (repeatable).
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[inline]
fn fold(a: u128) -> u64 {
    (a as u64) ^ ((a >> 64) as u64).rotate_left(17)
}

/// Symmetric 5-tuple hash: both directions of a flow hash alike. Fixed
/// (no random seed), so dispatch is the same from run to run.
#[inline]
pub fn flow_hash(key: &FlowKey) -> u64 {
    let h = mix(fold(key.lo_addr) ^ 0x51_7cc1_b727_220a);
    let h = mix(h ^ fold(key.hi_addr));
    mix(h
        ^ ((key.lo_port as u64) << 32)
        ^ ((key.hi_port as u64) << 16)
        ^ ((key.proto as u64) << 48)
        ^ key.vlan as u64)
}

/// Symmetric hash of an address pair only: used for IP fragments, whose
/// ports are not known until the datagram is reassembled.
#[inline]
pub fn pair_hash(a: IpAddr, b: IpAddr) -> u64 {
    let (x, y) = (addr_bits(a), addr_bits(b));
    let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
    mix(mix(fold(lo) ^ 0x2545_f491_4f6c_dd1d) ^ fold(hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::from(a)
    }

    #[test]
    fn both_directions_same_key_and_hash() {
        let (k1, lo1) = FlowKey::new(v4([10, 0, 0, 1]), 1234, v4([10, 0, 0, 2]), 80, 6, 0);
        let (k2, lo2) = FlowKey::new(v4([10, 0, 0, 2]), 80, v4([10, 0, 0, 1]), 1234, 6, 0);
        assert_eq!(k1, k2);
        assert_ne!(lo1, lo2);
        assert_eq!(flow_hash(&k1), flow_hash(&k2));
    }

    #[test]
    fn vlan_and_proto_separate_flows() {
        let (a, _) = FlowKey::new(v4([1, 1, 1, 1]), 1, v4([2, 2, 2, 2]), 2, 6, 0);
        let (b, _) = FlowKey::new(v4([1, 1, 1, 1]), 1, v4([2, 2, 2, 2]), 2, 17, 0);
        let (c, _) = FlowKey::new(v4([1, 1, 1, 1]), 1, v4([2, 2, 2, 2]), 2, 6, 7);
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn addr_round_trip() {
        for a in [v4([192, 168, 1, 1]), "2001:db8::1".parse().unwrap()] {
            assert_eq!(bits_addr(addr_bits(a)), a);
        }
    }

    proptest! {
        #[test]
        fn symmetric(a: [u8; 16], b: [u8; 16], sp: u16, dp: u16, p: u8) {
            let (x, y) = (IpAddr::from(a), IpAddr::from(b));
            let (k1, _) = FlowKey::new(x, sp, y, dp, p, 0);
            let (k2, _) = FlowKey::new(y, dp, x, sp, p, 0);
            prop_assert_eq!(flow_hash(&k1), flow_hash(&k2));
            prop_assert_eq!(pair_hash(x, y), pair_hash(y, x));
        }
    }
}
