//! Kernel constants and small system-call helpers.
//!
//! The structures and most constants come from the `libc` crate (its
//! `<linux/if_packet.h>` bindings); the few it does not define for every
//! Linux target are defined here with the header they come from.

use std::ffi::CString;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(crate) use libc::{
    tpacket3_hdr, tpacket_block_desc, tpacket_req3, tpacket_stats_v3, PACKET_ADD_MEMBERSHIP,
    PACKET_FANOUT, PACKET_FANOUT_CPU, PACKET_FANOUT_FLAG_DEFRAG,
    PACKET_FANOUT_FLAG_IGNORE_OUTGOING, PACKET_FANOUT_HASH, PACKET_FANOUT_LB, PACKET_FANOUT_QM,
    PACKET_MR_PROMISC, PACKET_RX_RING, PACKET_STATISTICS, PACKET_VERSION, TPACKET3_HDRLEN,
    TPACKET_ALIGNMENT, TP_STATUS_KERNEL, TP_STATUS_USER, TP_STATUS_VLAN_TPID_VALID,
    TP_STATUS_VLAN_VALID,
};

/// `TPACKET_V3` from `enum tpacket_versions` in `<linux/if_packet.h>`.
pub(crate) const TPACKET_V3: libc::c_int = 2;

/// `SO_ATTACH_FILTER` from `<asm-generic/socket.h>` (26 on every Linux
/// architecture, including mips and sparc). Not exported by `libc` for all
/// targets.
pub(crate) const SO_ATTACH_FILTER: libc::c_int = 26;

/// `ETH_P_ALL` from `<linux/if_ether.h>`.
pub(crate) const ETH_P_ALL: u16 = 0x0003;

/// `BPF_MAXINSNS` from `<linux/bpf_common.h>`: the longest classic BPF
/// program the kernel accepts.
pub(crate) const BPF_MAXINSNS: usize = 4096;

/// `BPF_RET | BPF_K` from `<linux/filter.h>`: return a constant.
pub(crate) const BPF_RET_K: u16 = 0x06;

/// The current thread's `errno` as an `io::Error`.
pub(crate) fn last_err() -> io::Error {
    io::Error::last_os_error()
}

/// System page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n <= 0 {
        4096
    } else {
        n as usize
    }
}

/// Interface index by name, `None` when there is no such interface in the
/// calling thread's network namespace or the name cannot be one.
pub(crate) fn if_index(name: &str) -> Option<u32> {
    if !valid_ifname(name) {
        return None;
    }
    let c = CString::new(name).ok()?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (idx != 0).then_some(idx)
}

/// Whether `name` can be a Linux interface name: 1..=15 bytes (IFNAMSIZ
/// minus the NUL), no '/', no whitespace, no NUL, not "." or "..".
pub(crate) fn valid_ifname(name: &str) -> bool {
    !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == 0 || b.is_ascii_whitespace() || b == b':')
}

/// `socket(AF_PACKET, SOCK_RAW, protocol)`; `protocol` in host order.
pub(crate) fn packet_socket(protocol: u16) -> io::Result<OwnedFd> {
    // SAFETY: plain system call with constant arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::c_int::from(protocol.to_be()),
        )
    };
    if fd < 0 {
        return Err(last_err());
    }
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt(fd, level, name, &value, sizeof value)`.
pub(crate) fn setsockopt<T>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` points to a live `T` of exactly the length passed; the
    // kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(last_err())
    } else {
        Ok(())
    }
}

/// `getsockopt` of a plain-old-data value; returns the value and the length
/// the kernel wrote.
pub(crate) fn getsockopt<T: Copy>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    mut value: T,
) -> io::Result<(T, usize)> {
    let mut len = mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a live, writable `T` and `len` its size; the kernel
    // writes at most `len` bytes and updates `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut value as *mut T).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        Err(last_err())
    } else {
        Ok((value, len as usize))
    }
}

/// A zeroed `sockaddr_ll` for `ifindex` and `protocol` (host order).
pub(crate) fn sockaddr_ll(ifindex: u32, protocol: u16) -> libc::sockaddr_ll {
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as libc::c_ushort;
    sll.sll_protocol = protocol.to_be();
    sll.sll_ifindex = ifindex as libc::c_int;
    sll
}

/// `bind(2)` of a packet socket.
pub(crate) fn bind_ll(fd: &OwnedFd, sll: &libc::sockaddr_ll) -> io::Result<()> {
    // SAFETY: `sll` is a live sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (sll as *const libc::sockaddr_ll).cast(),
            mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(last_err())
    } else {
        Ok(())
    }
}

/// Pending socket error (`SO_ERROR`, which also clears it); 0 when none.
pub(crate) fn so_error(fd: &OwnedFd) -> io::Result<i32> {
    let (v, _) = getsockopt::<libc::c_int>(fd, libc::SOL_SOCKET, libc::SO_ERROR, 0)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names() {
        assert!(valid_ifname("eth0"));
        assert!(valid_ifname("enp3s0f1"));
        assert!(valid_ifname("a23456789012345"));
        assert!(!valid_ifname("a234567890123456"));
        assert!(!valid_ifname(""));
        assert!(!valid_ifname(".."));
        assert!(!valid_ifname("../eth0"));
        assert!(!valid_ifname("eth 0"));
        assert!(!valid_ifname("eth0\0"));
        assert_eq!(if_index("no/such"), None);
    }

    #[test]
    fn header_sizes_match_the_kernel() {
        // <linux/if_packet.h>: tpacket3_hdr is 48 bytes; TPACKET3_HDRLEN adds
        // a sockaddr_ll (20 bytes).
        assert_eq!(mem::size_of::<tpacket3_hdr>(), 48);
        assert_eq!(TPACKET3_HDRLEN, 68);
        assert_eq!(mem::size_of::<tpacket_req3>(), 28);
        assert_eq!(mem::size_of::<tpacket_stats_v3>(), 12);
    }
}
