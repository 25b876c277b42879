//! A transmit socket: whole link-layer frames sent out of one interface.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use crate::error::CaptureError;
use crate::sys;

/// Frames sent and failed on a [`TxSocket`] since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames the kernel took.
    pub sent: u64,
    /// Frames the kernel refused, whatever the reason (`oversize`
    /// included).
    pub errors: u64,
    /// Of the errors, frames longer than the interface's MTU allows
    /// (EMSGSIZE): typically GRO/LRO aggregates read from the other side
    /// of a bridge whose receive offloads are on.
    pub oversize: u64,
}

/// An AF_PACKET `SOCK_RAW` socket bound to one interface, for sending
/// frames as they are (the caller's bytes are the frame on the wire, link
/// header included, no checksum or padding added).
///
/// It is bound with protocol 0, so it receives nothing. A failed send is
/// counted ([`TxSocket::stats`]) and returned, never a panic: a bridge
/// counts the frame and goes on.
pub struct TxSocket {
    fd: OwnedFd,
    iface: String,
    ifindex: u32,
    stats: TxStats,
}

impl TxSocket {
    /// Opens a transmit socket on `iface` in the network namespace of the
    /// calling thread (needs `CAP_NET_RAW`).
    pub fn open(iface: &str) -> Result<TxSocket, CaptureError> {
        let ifindex =
            sys::if_index(iface).ok_or_else(|| CaptureError::NoSuchInterface(iface.to_string()))?;
        let fd = sys::packet_socket(0).map_err(|e| {
            if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) {
                CaptureError::Permission(format!("socket(AF_PACKET, SOCK_RAW) for {iface}"))
            } else {
                CaptureError::Io(e)
            }
        })?;
        // Protocol 0: bound to the interface for sending, no receive hook.
        sys::bind_ll(&fd, &sys::sockaddr_ll(ifindex, 0)).map_err(|e| {
            CaptureError::Io(io::Error::new(e.kind(), format!("bind on {iface}: {e}")))
        })?;
        Ok(TxSocket {
            fd,
            iface: iface.to_string(),
            ifindex,
            stats: TxStats::default(),
        })
    }

    /// Sends one frame out of the interface. Waits when the socket's send
    /// buffer is full (back pressure rather than loss). An error (EMSGSIZE
    /// for a frame over the MTU, ENETDOWN for a link that is down, ...)
    /// is counted and returned.
    pub fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is a live slice of exactly the length passed; the
        // kernel only reads it. The descriptor is owned by `self`.
        let rc = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if rc < 0 {
            let e = sys::last_err();
            self.stats.errors += 1;
            if e.raw_os_error() == Some(libc::EMSGSIZE) {
                self.stats.oversize += 1;
            }
            return Err(e);
        }
        self.stats.sent += 1;
        Ok(())
    }

    /// Counters since open.
    pub fn stats(&self) -> TxStats {
        self.stats
    }

    /// Interface name.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// Interface index (in the socket's network namespace).
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }
}

impl AsFd for TxSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl std::fmt::Debug for TxSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxSocket")
            .field("iface", &self.iface)
            .field("ifindex", &self.ifindex)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_interface_is_named() {
        match TxSocket::open("vigil-no-such") {
            Err(CaptureError::NoSuchInterface(n)) => assert_eq!(n, "vigil-no-such"),
            other => panic!("expected NoSuchInterface, got {other:?}"),
        }
    }
}
