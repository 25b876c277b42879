//! Test network: a network namespace with a veth pair (va <-> vb), no
//! addresses, nothing routed, removed on drop; a raw sender on vb; frame
//! builders; a bounded collector.

#![allow(dead_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use vigil_capture::{Ring, RingConfig};

/// Fails (not skips) when not root: these tests build namespaces and open
/// AF_PACKET sockets.
pub fn require_root() {
    vigil_testnet::require_root(
        "vigil-capture's network tests (a namespace and veth pair, AF_PACKET sockets; \
         `sudo -E cargo test -p vigil-capture`)",
    );
}

/// A network namespace `vigilcap-<pid>-<n>` holding veth pair va/vb, both
/// up, MTU 65535, no addresses, IPv6 disabled so the stack sends nothing;
/// removed on drop.
pub struct Netns {
    pub name: String,
    ns: vigil_testnet::Ns,
}

impl Netns {
    pub fn new() -> Netns {
        require_root();
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "vigilcap-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let ns = vigil_testnet::Ns::new(name.clone());
        ns.ip(&[
            "link", "add", "va", "mtu", "65535", "type", "veth", "peer", "name", "vb", "mtu",
            "65535",
        ]);
        ns.ip(&["link", "set", "va", "up"]);
        ns.ip(&["link", "set", "vb", "up"]);
        Netns { name, ns }
    }

    /// Runs `f` on a new thread that has entered the namespace; sockets
    /// created there belong to the namespace.
    pub fn run_in<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        self.ns.run_in(f)
    }

    pub fn ip(&self, args: &[&str]) {
        self.ns.ip(args);
    }

    pub fn open_ring(&self, iface: &str, cfg: &RingConfig) -> Ring {
        self.run_in(|| Ring::open(iface, cfg))
            .unwrap_or_else(|e| panic!("Ring::open({iface}) in {}: {e}", self.name))
    }

    pub fn sender(&self, iface: &str) -> Sender {
        self.run_in(|| Sender::open(iface))
    }
}

/// Small rings for tests: 64 KiB x 16, 1 ms block timeout.
pub fn test_config(group: u16) -> RingConfig {
    RingConfig {
        block_size: 1 << 16,
        block_count: 16,
        frame_size: 2048,
        block_timeout_ms: 1,
        fanout_group: group,
        ..RingConfig::default()
    }
}

/// AF_PACKET SOCK_RAW socket that sends whole Ethernet frames on one
/// interface and receives nothing (protocol 0).
pub struct Sender {
    fd: OwnedFd,
    ifindex: u32,
}

impl Sender {
    fn open(iface: &str) -> Sender {
        // SAFETY: plain system call.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        assert!(
            fd >= 0,
            "sender socket: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let name = std::ffi::CString::new(iface).unwrap();
        // SAFETY: valid C string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        assert!(ifindex != 0, "no interface {iface}");
        Sender { fd, ifindex }
    }

    pub fn send(&self, frame: &[u8]) {
        assert!(frame.len() >= 14);
        // SAFETY: sockaddr_ll is plain old data.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = u16::from_be_bytes([frame[12], frame[13]]).to_be();
        sll.sll_ifindex = self.ifindex as i32;
        sll.sll_halen = 6;
        sll.sll_addr[..6].copy_from_slice(&frame[..6]);
        // SAFETY: buffer and address are live for the call, lengths match.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(
            n,
            frame.len() as isize,
            "sendto: {}",
            std::io::Error::last_os_error()
        );
    }
}

pub const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
pub const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];

pub fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

pub const UDP: u8 = 17;
pub const TCP: u8 = 6;

/// IPv4 packet with a UDP or TCP header (checksums of L4 left 0).
pub fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let mut l4 = Vec::new();
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    if proto == UDP {
        l4.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        l4.extend_from_slice(&[0, 0]);
    } else {
        l4.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    }
    l4.extend_from_slice(data);
    let total = (20 + l4.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    ip.extend_from_slice(&l4);
    ip
}

/// Ethernet frame A->B carrying an IPv4 UDP/TCP packet.
pub fn l4_frame(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    data: &[u8],
) -> Vec<u8> {
    eth(
        MAC_B,
        MAC_A,
        0x0800,
        &ipv4(proto, src, dst, sport, dport, data),
    )
}

pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// One received packet, copied out of the ring.
#[derive(Debug, Clone)]
pub struct Got {
    pub ts_ns: i64,
    pub data: Vec<u8>,
    pub orig_len: u32,
}

/// Polls every ring until `want` packets arrived in all or `limit` passed,
/// then keeps polling `linger` longer to catch unexpected extras. Returns
/// the packets per ring. Bounded in time and in iterations.
pub fn collect(
    rings: &mut [&mut Ring],
    want: usize,
    limit: Duration,
    linger: Duration,
) -> Vec<Vec<Got>> {
    let mut out: Vec<Vec<Got>> = vec![Vec::new(); rings.len()];
    let start = Instant::now();
    let mut until = start + limit;
    let mut lingering = false;
    for _ in 0..100_000 {
        let now = Instant::now();
        if now >= until {
            if lingering {
                break;
            }
            // Limit reached without everything: linger anyway, briefly.
            lingering = true;
            until = now + linger;
        }
        for (i, ring) in rings.iter_mut().enumerate() {
            ring.poll(Duration::from_millis(5), &mut |p| {
                out[i].push(Got {
                    ts_ns: p.ts_ns,
                    data: p.data.to_vec(),
                    orig_len: p.orig_len,
                })
            })
            .unwrap_or_else(|e| panic!("poll on {}: {e}", ring.iface()));
        }
        let total: usize = out.iter().map(Vec::len).sum();
        if !lingering && total >= want {
            lingering = true;
            until = Instant::now() + linger;
        }
    }
    out
}
