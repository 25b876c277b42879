//! Link types and interface-level counters.

use std::fs;
use std::io;
use std::path::Path;

use crate::error::CaptureError;
use crate::sys;

/// `DLT_EN10MB`: Ethernet.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// `DLT_RAW` (LINKTYPE_RAW): bare IPv4/IPv6 packets.
pub const LINKTYPE_RAW: u32 = 101;
/// `DLT_IEEE802_11`: 802.11 frames without radio header.
pub const LINKTYPE_IEEE802_11: u32 = 105;
/// `DLT_IEEE802_11_RADIO`: 802.11 with a radiotap header.
pub const LINKTYPE_IEEE802_11_RADIOTAP: u32 = 127;

/// `ARPHRD_RAWIP` from `<linux/if_arp.h>` (not in `libc`).
const ARPHRD_RAWIP: u16 = 519;

/// The pcap link type of what a `SOCK_RAW` packet socket delivers on an
/// interface of hardware type `arphrd`, or `None` when this crate does not
/// know (such interfaces would need cooked `SOCK_DGRAM` capture).
///
/// Ethernet and loopback give Ethernet frames; ARPHRD_NONE (tun devices,
/// WireGuard), RAWIP and the IP-in-IP tunnels (ipip, sit, ip6tnl) give bare
/// IP packets.
pub fn linktype_for_arphrd(arphrd: u16) -> Option<u32> {
    match arphrd {
        libc::ARPHRD_ETHER | libc::ARPHRD_LOOPBACK => Some(LINKTYPE_ETHERNET),
        libc::ARPHRD_NONE
        | ARPHRD_RAWIP
        | libc::ARPHRD_TUNNEL
        | libc::ARPHRD_TUNNEL6
        | libc::ARPHRD_SIT => Some(LINKTYPE_RAW),
        libc::ARPHRD_IEEE80211 => Some(LINKTYPE_IEEE802_11),
        libc::ARPHRD_IEEE80211_RADIOTAP => Some(LINKTYPE_IEEE802_11_RADIOTAP),
        _ => None,
    }
}

/// Packets the interface itself dropped before any socket saw them
/// (Suricata's `capture.kernel_ifdrops`): `rx_dropped + rx_missed_errors`
/// from `/sys/class/net/IFACE/statistics/`.
///
/// Both are counted because drivers differ in where they put "the NIC ran
/// out of receive descriptors": many (ixgbe, i40e, ice, mlx5) report it in
/// `rx_missed_errors` and keep `rx_dropped` for packets the driver or stack
/// discarded; the kernel itself sums the two in the "drop" column of
/// `/proc/net/dev`, and this function returns that same number. The value
/// is cumulative since the driver was loaded, not since a ring was opened:
/// callers subtract a baseline taken at start. A missing
/// `rx_missed_errors` file counts as 0.
///
/// `/sys` shows the interfaces of the network namespace it was mounted in,
/// not necessarily that of the calling thread.
pub fn interface_drops(iface: &str) -> Result<u64, CaptureError> {
    if !sys::valid_ifname(iface) {
        return Err(CaptureError::NoSuchInterface(iface.to_string()));
    }
    let stats = Path::new("/sys/class/net").join(iface).join("statistics");
    let dropped = match read_counter(&stats.join("rx_dropped")) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(CaptureError::NoSuchInterface(iface.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let missed = match read_counter(&stats.join("rx_missed_errors")) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e.into()),
    };
    Ok(dropped.saturating_add(missed))
}

fn read_counter(path: &Path) -> io::Result<u64> {
    let text = fs::read_to_string(path)?;
    parse_counter(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not a counter: {:?}", path.display(), text.trim()),
        )
    })
}

fn parse_counter(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arphrd_mapping() {
        assert_eq!(linktype_for_arphrd(libc::ARPHRD_ETHER), Some(1));
        assert_eq!(linktype_for_arphrd(libc::ARPHRD_LOOPBACK), Some(1));
        assert_eq!(linktype_for_arphrd(libc::ARPHRD_NONE), Some(101));
        assert_eq!(linktype_for_arphrd(ARPHRD_RAWIP), Some(101));
        assert_eq!(
            linktype_for_arphrd(libc::ARPHRD_IEEE80211_RADIOTAP),
            Some(127)
        );
        assert_eq!(linktype_for_arphrd(libc::ARPHRD_PPP), None);
    }

    #[test]
    fn counters() {
        assert_eq!(parse_counter("42\n"), Some(42));
        assert_eq!(parse_counter("x"), None);
    }

    #[test]
    fn interface_drops_errors() {
        assert!(matches!(
            interface_drops("../../etc"),
            Err(CaptureError::NoSuchInterface(_))
        ));
        assert!(matches!(
            interface_drops("vigilnosuch0"),
            Err(CaptureError::NoSuchInterface(_))
        ));
    }
}
