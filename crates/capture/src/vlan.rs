//! Putting back the VLAN tag the kernel took out of a frame.

/// `ETH_P_8021Q`: the TPID used when the kernel does not report one.
pub const ETH_P_8021Q: u16 = 0x8100;

/// Length of the two MAC addresses that precede the tag.
const MACS: usize = 12;

/// Writes `frame` with an 802.1Q/802.1ad tag (`tpid`, `tci`) inserted after
/// the destination and source MAC addresses into `out` (cleared first), so
/// `out` is the frame as it was on the wire. Returns false, leaving `out`
/// empty, when `frame` is too short to hold the two addresses.
pub fn insert_vlan_tag(frame: &[u8], tpid: u16, tci: u16, out: &mut Vec<u8>) -> bool {
    out.clear();
    if frame.len() < MACS {
        return false;
    }
    out.reserve(frame.len() + 4);
    out.extend_from_slice(&frame[..MACS]);
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&tci.to_be_bytes());
    out.extend_from_slice(&frame[MACS..]);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_after_the_macs() {
        let mut frame: Vec<u8> = (1..=12).collect();
        frame.extend_from_slice(&[0x08, 0x00, 0x45, 0x00]);
        let mut out = vec![0xee; 3];
        assert!(insert_vlan_tag(&frame, ETH_P_8021Q, 0x2064, &mut out));
        let mut want: Vec<u8> = (1..=12).collect();
        want.extend_from_slice(&[0x81, 0x00, 0x20, 0x64, 0x08, 0x00, 0x45, 0x00]);
        assert_eq!(out, want);
    }

    #[test]
    fn qinq_outer_tpid() {
        // The kernel strips the outer 802.1ad tag; the inner 802.1Q stays.
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a, 0x86, 0xdd]);
        let mut out = Vec::new();
        assert!(insert_vlan_tag(&frame, 0x88a8, 0x0064, &mut out));
        assert_eq!(&out[12..16], &[0x88, 0xa8, 0x00, 0x64]);
        assert_eq!(&out[16..], &frame[12..]);
        assert_eq!(out.len(), frame.len() + 4);
    }

    #[test]
    fn exactly_two_macs_and_too_short() {
        let mut out = Vec::new();
        assert!(insert_vlan_tag(&[7u8; 12], ETH_P_8021Q, 1, &mut out));
        assert_eq!(out.len(), 16);
        assert_eq!(&out[12..], &[0x81, 0, 0, 1]);
        assert!(!insert_vlan_tag(&[7u8; 11], ETH_P_8021Q, 1, &mut out));
        assert!(out.is_empty());
        assert!(!insert_vlan_tag(&[], ETH_P_8021Q, 1, &mut out));
    }
}
