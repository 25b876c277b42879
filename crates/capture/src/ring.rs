//! One TPACKET_V3 receive ring on one AF_PACKET socket.

use std::io;
use std::mem::{self, offset_of};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::config::RingConfig;
use crate::error::CaptureError;
use crate::filter::{accept_all, compile_filter, SockFilter};
use crate::link::{linktype_for_arphrd, LINKTYPE_ETHERNET};
use crate::sys::{self, tpacket3_hdr, tpacket_block_desc, tpacket_req3, tpacket_stats_v3};
use crate::vlan::{insert_vlan_tag, ETH_P_8021Q};

/// One captured packet, valid for the duration of the callback.
#[derive(Debug, Clone, Copy)]
pub struct LivePacket<'a> {
    /// Kernel receive timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    /// The captured bytes (at most snaplen, plus 4 for a re-inserted VLAN
    /// tag), as the frame was on the wire.
    pub data: &'a [u8],
    /// Length of the packet on the wire (`tp_len`, plus 4 for a re-inserted
    /// VLAN tag); larger than `data.len()` when the packet was truncated.
    pub orig_len: u32,
}

/// Kernel socket counters accumulated since the ring was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// `tp_packets`: packets that passed the filter, the dropped ones
    /// included (the kernel adds `tp_drops` into it when it reports).
    pub packets: u64,
    /// `tp_drops`: packets lost because the ring was full.
    pub drops: u64,
    /// `tp_freeze_q_cnt`: times the ring froze because no block was free.
    pub freeze_q_cnt: u64,
}

/// The ring's shared mapping; unmapped on drop.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned and the mapping
        // is unmapped only here, once; no slices into it outlive the Ring
        // (packets are only lent to callbacks during `poll`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A TPACKET_V3 receive ring on one interface, member of a fanout group.
///
/// Owned by one worker thread (it is `Send`, not `Sync`). Dropping it
/// unmaps the ring and closes the socket, which also leaves the fanout
/// group and drops the promiscuous membership.
pub struct Ring {
    // Declared before `fd` so the mapping is unmapped before the socket
    // closes.
    map: Mapping,
    fd: OwnedFd,
    block_size: usize,
    block_count: usize,
    next_block: usize,
    scratch: Vec<u8>,
    totals: KernelStats,
    truncated: u64,
    malformed: u64,
    ignore_outgoing: bool,
    outgoing_skipped: u64,
    iface: String,
    ifindex: u32,
    linktype: u32,
}

// SAFETY: the mapping belongs to this Ring alone (nothing else holds its
// address), and the socket is an owned descriptor; moving both to another
// thread is fine. Ring is not Sync, and `poll` takes `&mut self`.
unsafe impl Send for Ring {}

/// Offset of `block_status` in a block (`tpacket_block_desc.hdr.bh1`).
const BLOCK_STATUS_OFFSET: usize = offset_of!(tpacket_block_desc, hdr);

fn os_code(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

fn is_permission(e: &io::Error) -> bool {
    matches!(os_code(e), libc::EPERM | libc::EACCES)
}

fn is_link_gone(code: i32) -> bool {
    matches!(code, libc::ENETDOWN | libc::ENXIO | libc::ENODEV)
}

impl Ring {
    /// Opens a ring on `iface` in the network namespace of the calling
    /// thread.
    ///
    /// Order (see packet(7)): validate the configuration, look the
    /// interface up, `socket(AF_PACKET, SOCK_RAW, 0)`, `PACKET_VERSION`
    /// = TPACKET_V3, `PACKET_RX_RING`, `mmap`, `SO_ATTACH_FILTER`,
    /// `bind` to the interface with `ETH_P_ALL`, promiscuous membership,
    /// `PACKET_FANOUT` (with `PACKET_FANOUT_FLAG_IGNORE_OUTGOING` for
    /// [`RingConfig::ignore_outgoing`] when the kernel has it).
    ///
    /// The socket is created with protocol 0, which receives nothing until
    /// `bind` names the protocol: an `ETH_P_ALL` socket would start
    /// receiving from *every* interface at once, before the bind and before
    /// the filter, and those packets would have to be flushed from the ring.
    pub fn open(iface: &str, cfg: &RingConfig) -> Result<Ring, CaptureError> {
        cfg.validate(sys::page_size())?;
        let ifindex =
            sys::if_index(iface).ok_or_else(|| CaptureError::NoSuchInterface(iface.to_string()))?;

        let fd = sys::packet_socket(0).map_err(|e| {
            if is_permission(&e) {
                CaptureError::Permission(format!("socket(AF_PACKET, SOCK_RAW) for {iface}"))
            } else {
                CaptureError::Io(e)
            }
        })?;

        let arphrd = hardware_type(&fd, iface)?;
        let linktype =
            linktype_for_arphrd(arphrd).ok_or_else(|| CaptureError::UnsupportedLinkType {
                iface: iface.to_string(),
                arphrd,
            })?;
        let program = match &cfg.bpf {
            Some(expr) => compile_filter(expr, linktype, cfg.snaplen)?,
            None => accept_all(cfg.snaplen),
        };

        let sockopt_err = |what: &str, e: io::Error| {
            if is_permission(&e) {
                CaptureError::Permission(format!("{what} on {iface}"))
            } else {
                CaptureError::Io(io::Error::new(e.kind(), format!("{what} on {iface}: {e}")))
            }
        };

        sys::setsockopt(&fd, libc::SOL_PACKET, sys::PACKET_VERSION, &sys::TPACKET_V3)
            .map_err(|e| sockopt_err("PACKET_VERSION TPACKET_V3", e))?;

        let total = cfg.block_size * cfg.block_count; // validated: no overflow
        let geometry = format!(
            "block_size={} block_count={} frame_size={} ({} bytes in all)",
            cfg.block_size, cfg.block_count, cfg.frame_size, total
        );
        let req = tpacket_req3 {
            tp_block_size: cfg.block_size as u32,
            tp_block_nr: cfg.block_count as u32,
            tp_frame_size: cfg.frame_size as u32,
            tp_frame_nr: cfg.frame_count() as u32,
            tp_retire_blk_tov: cfg.block_timeout_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        sys::setsockopt(&fd, libc::SOL_PACKET, sys::PACKET_RX_RING, &req).map_err(|e| {
            if is_permission(&e) {
                CaptureError::Permission(format!("PACKET_RX_RING on {iface}"))
            } else {
                CaptureError::Ring(format!(
                    "setsockopt(PACKET_RX_RING) on {iface} with {geometry}: {e}"
                ))
            }
        })?;

        // SAFETY: a fresh shared mapping of the socket's ring, `total` bytes
        // as just configured; the kernel checks the length against the ring.
        let addr = unsafe {
            libc::mmap(
                ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            let e = sys::last_err();
            return Err(CaptureError::Ring(format!(
                "mmap of the ring on {iface} with {geometry}: {e}"
            )));
        }
        let map = Mapping {
            ptr: NonNull::new(addr.cast()).ok_or_else(|| {
                CaptureError::Ring(format!("mmap of the ring on {iface} returned NULL"))
            })?,
            len: total,
        };

        attach_filter(&fd, &program)
            .map_err(|e| CaptureError::Filter(format!("SO_ATTACH_FILTER on {iface}: {e}")))?;

        sys::bind_ll(&fd, &sys::sockaddr_ll(ifindex, sys::ETH_P_ALL)).map_err(|e| {
            if is_link_gone(os_code(&e)) {
                CaptureError::NoSuchInterface(format!("{iface}: {e}"))
            } else {
                sockopt_err("bind", e)
            }
        })?;
        // Binding to a down interface succeeds but leaves ENETDOWN pending.
        let pending = sys::so_error(&fd)?;
        if pending != 0 {
            let e = io::Error::from_raw_os_error(pending);
            return Err(if is_link_gone(pending) {
                CaptureError::LinkDown(format!("{iface}: {e}"))
            } else {
                CaptureError::Io(e)
            });
        }

        if cfg.promisc {
            // SAFETY: packet_mreq is plain old data; all-zero is valid.
            let mut mreq: libc::packet_mreq = unsafe { mem::zeroed() };
            mreq.mr_ifindex = ifindex as libc::c_int;
            mreq.mr_type = sys::PACKET_MR_PROMISC as libc::c_ushort;
            sys::setsockopt(&fd, libc::SOL_PACKET, sys::PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(|e| sockopt_err("PACKET_ADD_MEMBERSHIP promisc", e))?;
        }

        let mut type_flags = cfg.fanout.kernel_value();
        if cfg.defrag {
            type_flags |= sys::PACKET_FANOUT_FLAG_DEFRAG;
        }
        let fanout_arg = |flags: u32| (u32::from(cfg.fanout_group) | (flags << 16)) as libc::c_int;
        // Outgoing frames: the socket option PACKET_IGNORE_OUTGOING does
        // not apply to a socket in a fanout group (the group's hook
        // receives for it), so the group is asked with
        // PACKET_FANOUT_FLAG_IGNORE_OUTGOING (Linux 6.9); a kernel without
        // it refuses the flag (EINVAL) and the ring then skips outgoing
        // frames itself as it reads them (`walk_block`).
        let mut joined = Err(io::Error::from_raw_os_error(libc::EINVAL));
        if cfg.ignore_outgoing {
            joined = sys::setsockopt(
                &fd,
                libc::SOL_PACKET,
                sys::PACKET_FANOUT,
                &fanout_arg(type_flags | sys::PACKET_FANOUT_FLAG_IGNORE_OUTGOING),
            );
        }
        if matches!(&joined, Err(e) if os_code(e) == libc::EINVAL) {
            joined = sys::setsockopt(
                &fd,
                libc::SOL_PACKET,
                sys::PACKET_FANOUT,
                &fanout_arg(type_flags),
            );
        }
        joined.map_err(|e| {
            if is_permission(&e) {
                CaptureError::Permission(format!("PACKET_FANOUT on {iface}"))
            } else {
                CaptureError::Fanout(format!(
                    "join group {} (mode {}, defrag {}) on {iface}: {e} \
                     (all rings of a group must be on one interface with the same mode \
                     and flags; use another group id per interface)",
                    cfg.fanout_group, cfg.fanout, cfg.defrag
                ))
            }
        })?;

        Ok(Ring {
            map,
            fd,
            block_size: cfg.block_size,
            block_count: cfg.block_count,
            next_block: 0,
            scratch: Vec::new(),
            totals: KernelStats::default(),
            truncated: 0,
            malformed: 0,
            ignore_outgoing: cfg.ignore_outgoing,
            outgoing_skipped: 0,
            iface: iface.to_string(),
            ifindex,
            linktype,
        })
    }

    /// Waits up to `timeout` for a retired block, then calls `f` for every
    /// packet of every ready block (at most one pass over the ring),
    /// returning each block to the kernel after its packets. Returns the
    /// number of packets. Does not wait when a block is already ready, and
    /// never waits longer than `timeout` (0 = just look).
    ///
    /// [`CaptureError::LinkDown`] when the interface went down or away: the
    /// caller counts it and reopens the ring.
    pub fn poll(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&LivePacket<'_>),
    ) -> Result<usize, CaptureError> {
        self.poll_blocks(timeout, self.block_count, f)
    }

    /// [`Ring::poll`] handing over at most `max_blocks` blocks (at least
    /// one), so that a caller copying frames out bounds its own buffer.
    pub fn poll_blocks(
        &mut self,
        timeout: Duration,
        max_blocks: usize,
        f: &mut dyn FnMut(&LivePacket<'_>),
    ) -> Result<usize, CaptureError> {
        if !self.block_ready(self.next_block) {
            self.wait(timeout)?;
        }
        let mut count = 0;
        for _ in 0..self.block_count.min(max_blocks.max(1)) {
            let block = self.next_block;
            if !self.block_ready(block) {
                break;
            }
            count += self.walk_block(block, f);
            self.release_block(block);
            self.next_block = (block + 1) % self.block_count;
        }
        Ok(count)
    }

    /// Stops the intake: a filter that accepts nothing replaces the
    /// ring's, so the kernel neither queues nor counts new packets for
    /// it, while what is already in the ring can still be read. For a
    /// clean stop: close the intake, drain, then read [`Ring::stats`], and
    /// every packet counted was delivered or counted as dropped.
    pub fn close_intake(&mut self) -> Result<(), CaptureError> {
        let none = [SockFilter {
            code: sys::BPF_RET_K,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        attach_filter(&self.fd, &none)
            .map_err(|e| CaptureError::Filter(format!("SO_ATTACH_FILTER on {}: {e}", self.iface)))
    }

    /// Kernel counters since open. Each `PACKET_STATISTICS` read resets the
    /// kernel's counters, so the ring keeps the running totals.
    pub fn stats(&mut self) -> Result<KernelStats, CaptureError> {
        let zero = tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        };
        let (s, _) = sys::getsockopt(&self.fd, libc::SOL_PACKET, sys::PACKET_STATISTICS, zero)?;
        self.totals.packets += u64::from(s.tp_packets);
        self.totals.drops += u64::from(s.tp_drops);
        self.totals.freeze_q_cnt += u64::from(s.tp_freeze_q_cnt);
        Ok(self.totals)
    }

    /// Interface name.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// Interface index (in the ring's network namespace).
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// pcap link type (DLT) of the delivered frames: 1 for Ethernet and
    /// loopback, 101 (raw IP) for tun/ARPHRD_NONE and IP tunnels.
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// Packets delivered shorter than they were on the wire (`tp_snaplen <
    /// tp_len`): over snaplen, or GRO/TSO aggregates larger than a block.
    pub fn truncated(&self) -> u64 {
        self.truncated
    }

    /// Outgoing frames skipped by the ring itself with
    /// [`RingConfig::ignore_outgoing`] on a kernel whose fanout group
    /// could not leave them out (before Linux 6.9); 0 otherwise.
    pub fn outgoing_skipped(&self) -> u64 {
        self.outgoing_skipped
    }

    /// Ring entries skipped because their header pointed outside the block
    /// (should stay 0; counted rather than trusted).
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    fn block_ptr(&self, block: usize) -> *mut u8 {
        // SAFETY: block < block_count, so the offset is inside the mapping
        // of block_size * block_count bytes.
        unsafe { self.map.ptr.as_ptr().add(block * self.block_size) }
    }

    fn block_status(&self, block: usize) -> &AtomicU32 {
        // SAFETY: every block starts page-aligned with a tpacket_block_desc;
        // `block_status` is its 4-byte-aligned u32 at BLOCK_STATUS_OFFSET,
        // inside the mapping, live as long as `self`. The kernel and this
        // process hand the block over through this word, so it is only
        // accessed atomically here.
        unsafe { AtomicU32::from_ptr(self.block_ptr(block).add(BLOCK_STATUS_OFFSET).cast()) }
    }

    fn block_ready(&self, block: usize) -> bool {
        self.block_status(block).load(Ordering::Acquire) & sys::TP_STATUS_USER != 0
    }

    fn release_block(&self, block: usize) {
        self.block_status(block)
            .store(sys::TP_STATUS_KERNEL, Ordering::Release);
    }

    /// ppoll(2) for up to `timeout`. Ok whether or not something arrived;
    /// errors for a pending socket error.
    fn wait(&self, timeout: Duration) -> Result<(), CaptureError> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: timeout.subsec_nanos() as _,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, ptr::null()) };
        if rc < 0 {
            let e = sys::last_err();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e.into())
            };
        }
        if rc == 0 {
            return Ok(());
        }
        if pfd.revents & libc::POLLNVAL != 0 {
            return Err(io::Error::from_raw_os_error(libc::EBADF).into());
        }
        if pfd.revents & libc::POLLERR != 0 {
            let code = sys::so_error(&self.fd)?;
            if is_link_gone(code) {
                return Err(CaptureError::LinkDown(format!(
                    "{}: {}",
                    self.iface,
                    io::Error::from_raw_os_error(code)
                )));
            }
            if code != 0 {
                return Err(io::Error::from_raw_os_error(code).into());
            }
        }
        Ok(())
    }

    /// Whether the frame whose header is at `off` in the block at `base`
    /// (`bs` bytes) was sent out of the interface (`sll_pkttype` of the
    /// `sockaddr_ll` the kernel puts after the `tpacket3_hdr`).
    fn is_outgoing(&self, base: *const u8, off: usize, bs: usize) -> bool {
        let at = off + mem::size_of::<tpacket3_hdr>() + offset_of!(libc::sockaddr_ll, sll_pkttype);
        if at >= bs {
            return false;
        }
        // SAFETY: `at` lies inside the user-owned block (checked above),
        // which the kernel does not write until it is released.
        let pkttype = unsafe { ptr::read(base.add(at)) };
        pkttype == libc::PACKET_OUTGOING
    }

    /// Calls `f` for each packet of a user-owned block; returns the count.
    fn walk_block(&mut self, block: usize, f: &mut dyn FnMut(&LivePacket<'_>)) -> usize {
        let base = self.block_ptr(block);
        let bs = self.block_size;
        // SAFETY: the block is user-owned (status checked with Acquire), so
        // the kernel does not write it; it starts with a tpacket_block_desc
        // (page-aligned) whose `bh1` variant is the one TPACKET_V3 uses.
        let bh = unsafe { ptr::read(base.cast::<tpacket_block_desc>()).hdr.bh1 };
        let mut off = bh.offset_to_first_pkt as usize;
        let mut count = 0;
        for _ in 0..bh.num_pkts {
            let Some(hdr_end) = off.checked_add(mem::size_of::<tpacket3_hdr>()) else {
                self.malformed += 1;
                break;
            };
            if hdr_end > bs {
                self.malformed += 1;
                break;
            }
            // SAFETY: `off..hdr_end` lies inside the user-owned block.
            let h = unsafe { ptr::read_unaligned(base.add(off).cast::<tpacket3_hdr>()) };
            if self.ignore_outgoing && self.is_outgoing(base, off, bs) {
                self.outgoing_skipped += 1;
                if h.tp_next_offset == 0 {
                    break;
                }
                off += h.tp_next_offset as usize;
                continue;
            }
            let start = off + h.tp_mac as usize;
            let snap = h.tp_snaplen as usize;
            if start.checked_add(snap).map_or(true, |end| end > bs) {
                self.malformed += 1;
                break;
            }
            // SAFETY: `start..start + snap` lies inside the user-owned block,
            // which stays mapped and unmodified until `release_block`, after
            // this loop; the slice does not escape the callback.
            let raw = unsafe { std::slice::from_raw_parts(base.add(start), snap) };
            if h.tp_snaplen < h.tp_len {
                self.truncated += 1;
            }
            let ts_ns = i64::from(h.tp_sec) * 1_000_000_000 + i64::from(h.tp_nsec);
            let tci = h.hv1.tp_vlan_tci;
            let tagged = h.tp_status & sys::TP_STATUS_VLAN_VALID != 0 || tci != 0;
            let pkt = if tagged && self.linktype == LINKTYPE_ETHERNET {
                let tpid = if h.tp_status & sys::TP_STATUS_VLAN_TPID_VALID != 0 {
                    h.hv1.tp_vlan_tpid
                } else {
                    ETH_P_8021Q
                };
                if insert_vlan_tag(raw, tpid, tci as u16, &mut self.scratch) {
                    LivePacket {
                        ts_ns,
                        data: &self.scratch,
                        orig_len: h.tp_len.saturating_add(4),
                    }
                } else {
                    LivePacket {
                        ts_ns,
                        data: raw,
                        orig_len: h.tp_len,
                    }
                }
            } else {
                LivePacket {
                    ts_ns,
                    data: raw,
                    orig_len: h.tp_len,
                }
            };
            f(&pkt);
            count += 1;
            if h.tp_next_offset == 0 {
                break;
            }
            off += h.tp_next_offset as usize;
        }
        count
    }
}

impl AsFd for Ring {
    /// The socket, for an external poller (readable: a block is ready).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("iface", &self.iface)
            .field("ifindex", &self.ifindex)
            .field("linktype", &self.linktype)
            .field("block_size", &self.block_size)
            .field("block_count", &self.block_count)
            .field("truncated", &self.truncated)
            .finish_non_exhaustive()
    }
}

/// `ARPHRD_*` type of `iface` (SIOCGIFHWADDR on the packet socket, so it
/// is looked up in the socket's network namespace).
fn hardware_type(fd: &OwnedFd, iface: &str) -> Result<u16, CaptureError> {
    // SAFETY: ifreq is plain old data; all-zero is valid.
    let mut ifr: libc::ifreq = unsafe { mem::zeroed() };
    // `iface` was validated: shorter than IFNAMSIZ, so the name stays
    // NUL-terminated.
    for (dst, &src) in ifr.ifr_name.iter_mut().zip(iface.as_bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: SIOCGIFHWADDR reads the name from and writes a sockaddr into
    // the live `ifr`.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFHWADDR as _, &mut ifr) };
    if rc < 0 {
        let e = sys::last_err();
        return Err(if is_link_gone(os_code(&e)) {
            CaptureError::NoSuchInterface(iface.to_string())
        } else {
            CaptureError::Io(e)
        });
    }
    // SAFETY: SIOCGIFHWADDR fills the `ifru_hwaddr` member of the union.
    Ok(unsafe { ifr.ifr_ifru.ifru_hwaddr.sa_family })
}

/// `SO_ATTACH_FILTER` of a classic BPF program.
fn attach_filter(fd: &OwnedFd, program: &[SockFilter]) -> io::Result<()> {
    let len = u16::try_from(program.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "filter program too long"))?;
    let fprog = libc::sock_fprog {
        len,
        // The kernel copies the program and never writes through this.
        filter: program.as_ptr().cast_mut(),
    };
    sys::setsockopt(fd, libc::SOL_SOCKET, sys::SO_ATTACH_FILTER, &fprog)
}
