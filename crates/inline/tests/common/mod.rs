//! Test network for the NFQUEUE tests: three network namespaces created
//! here and removed on drop,
//!
//! ```text
//! client 10.250.1.2/24 --veth-- 10.250.1.1/24 router 10.250.2.1/24 --veth-- 10.250.2.2/24 server
//! ```
//!
//! with default routes via the router, IPv4 forwarding in the router and
//! IPv6 off everywhere; an HTTP server thread in `server`, an HTTP client
//! in `client`, and a verdict loop on a thread inside `router`. Nothing is
//! ever sent outside these namespaces. Every loop is bounded in count and
//! time.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vigil_inline::{InlineError, Queue, QueueConfig, QueueStats, QueuedPacket, Verdict};

pub const CLIENT_IP: &str = "10.250.1.2";
pub const SERVER_IP: &str = "10.250.2.2";
pub const HTTP_PORT: u16 = 8080;

/// Fails (not skips) when not root: these tests build namespaces, run
/// iptables and bind NFQUEUEs.
pub fn require_root() {
    vigil_testnet::require_root(
        "vigil-inline's network tests (namespaces, veth pairs, iptables NFQUEUE rules, \
         queue binding; `sudo -E cargo test -p vigil-inline`)",
    );
}

pub use vigil_testnet::{enter, run, Ns};

/// client -- router -- server.
pub struct Topology {
    pub client: Ns,
    pub router: Ns,
    pub server: Ns,
}

impl Topology {
    pub fn new() -> Topology {
        require_root();
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let base = format!(
            "vigilnfq-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let t = Topology {
            client: Ns::new(format!("{base}-client")),
            router: Ns::new(format!("{base}-router")),
            server: Ns::new(format!("{base}-server")),
        };
        // veth pairs created directly inside the namespaces.
        run(
            "ip",
            &[
                "link",
                "add",
                "c0",
                "netns",
                &t.client.name,
                "type",
                "veth",
                "peer",
                "name",
                "r0",
                "netns",
                &t.router.name,
            ],
        );
        run(
            "ip",
            &[
                "link",
                "add",
                "s0",
                "netns",
                &t.server.name,
                "type",
                "veth",
                "peer",
                "name",
                "r1",
                "netns",
                &t.router.name,
            ],
        );
        t.client.ip(&["addr", "add", "10.250.1.2/24", "dev", "c0"]);
        t.client.ip(&["link", "set", "c0", "up"]);
        t.client
            .ip(&["route", "add", "default", "via", "10.250.1.1"]);
        t.router.ip(&["addr", "add", "10.250.1.1/24", "dev", "r0"]);
        t.router.ip(&["addr", "add", "10.250.2.1/24", "dev", "r1"]);
        t.router.ip(&["link", "set", "r0", "up"]);
        t.router.ip(&["link", "set", "r1", "up"]);
        t.router.exec("sysctl", &["-qw", "net.ipv4.ip_forward=1"]);
        t.server.ip(&["addr", "add", "10.250.2.2/24", "dev", "s0"]);
        t.server.ip(&["link", "set", "s0", "up"]);
        t.server
            .ip(&["route", "add", "default", "via", "10.250.2.1"]);
        t
    }

    /// `iptables -w 10 ARGS` in the router.
    pub fn iptables(&self, args: &[&str]) {
        let mut all = vec!["-w", "10"];
        all.extend_from_slice(args);
        self.router.exec("iptables", &all);
    }

    /// `iptables -A FORWARD -j NFQUEUE --queue-num N [--queue-bypass]`.
    pub fn queue_forward(&self, queue: u16, bypass: bool) {
        let n = queue.to_string();
        let mut args = vec!["-A", "FORWARD", "-j", "NFQUEUE", "--queue-num", n.as_str()];
        if bypass {
            args.push("--queue-bypass");
        }
        self.iptables(&args);
    }

    pub fn open_queue(&self, cfg: &QueueConfig) -> Result<Queue, InlineError> {
        self.router.run_in(|| Queue::open(cfg))
    }

    /// Interface index of `iface` in the router.
    pub fn router_ifindex(&self, iface: &str) -> u32 {
        let name = std::ffi::CString::new(iface).unwrap();
        // SAFETY: valid C string.
        self.router
            .run_in(|| unsafe { libc::if_nametoindex(name.as_ptr()) })
    }

    /// Starts the HTTP server in `server` on 10.250.2.2:8080.
    pub fn http_server(&self) -> HttpServer {
        let listener = self
            .server
            .run_in(|| TcpListener::bind((SERVER_IP, HTTP_PORT)))
            .expect("bind the HTTP server in the server namespace");
        HttpServer::start(listener)
    }

    /// `GET path` from the client; Err on time-out or a bad answer.
    pub fn http_get(&self, path: &str, timeout: Duration) -> Result<(u16, String), String> {
        self.client.run_in(|| http_get(path, timeout))
    }

    /// Sends `n` UDP datagrams from the client to the server's port 9
    /// (nobody listens: the server answers with ICMP port unreachable).
    pub fn udp_burst(&self, n: usize) {
        self.client.run_in(|| {
            let s = UdpSocket::bind((CLIENT_IP, 0)).expect("UDP socket in client");
            for i in 0..n {
                s.send_to(format!("filler {i}").as_bytes(), (SERVER_IP, 9))
                    .expect("send UDP");
            }
        })
    }
}

/// Tiny HTTP/1.0 server: one connection at a time, answers
/// `200 OK` with body `hello <path>\n`; stops on drop.
pub struct HttpServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<usize>>,
}

pub fn body_for(path: &str) -> String {
    format!("hello {path}\n")
}

impl HttpServer {
    fn start(listener: TcpListener) -> HttpServer {
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut served = 0;
            let start = Instant::now();
            // Bounded: stops when told or after 5 minutes.
            while !flag.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(300) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        if serve(conn).is_ok() {
                            served += 1;
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            served
        });
        HttpServer {
            stop,
            thread: Some(thread),
        }
    }
}

fn serve(mut conn: TcpStream) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut req = Vec::new();
    let mut buf = [0u8; 2048];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 65536 {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        req.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&req);
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    let body = body_for(&path);
    // One write, so the answer leaves in one segment.
    let resp = format!(
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(resp.as_bytes())
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// HTTP/1.0 GET to the server; connect, write and read each bounded by
/// `timeout`, the whole by 2 x `timeout`.
fn http_get(path: &str, timeout: Duration) -> Result<(u16, String), String> {
    let addr: SocketAddr = format!("{SERVER_IP}:{HTTP_PORT}").parse().unwrap();
    let deadline = Instant::now() + 2 * timeout;
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    s.set_write_timeout(Some(timeout)).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    // One write, so the request leaves in one segment (write! would send
    // its pieces separately).
    let req = format!("GET {path} HTTP/1.0\r\nHost: {SERVER_IP}\r\n\r\n");
    s.write_all(req.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut resp = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if Instant::now() >= deadline {
            return Err("response not complete before the deadline".into());
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => resp.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("read: {e} after {} bytes", resp.len())),
        }
    }
    let text = String::from_utf8_lossy(&resp).into_owned();
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line in {text:?}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// What the verdict loop saw of one packet.
#[derive(Debug, Clone)]
pub struct Seen {
    pub id: u32,
    pub ts_ns: i64,
    pub data: Vec<u8>,
    pub hw_protocol: u16,
    pub indev: u32,
    pub outdev: u32,
    pub verdict: Option<Verdict>,
}

/// How the loop answers.
#[derive(Clone, Copy)]
pub enum Mode {
    /// One verdict per packet from the policy (None: no verdict).
    PerPacket(fn(&QueuedPacket<'_>) -> Option<Verdict>),
    /// `verdict_batch(highest id, Accept)` after each poll.
    BatchAccept,
}

/// A worker thread inside the router: opens the queue there and runs the
/// poll/verdict loop until stopped (at most 2 minutes).
pub struct VerdictLoop {
    stop: Arc<AtomicBool>,
    received: Arc<AtomicUsize>,
    thread: Option<JoinHandle<(Vec<Seen>, QueueStats)>>,
}

impl VerdictLoop {
    pub fn start(topo: &Topology, cfg: QueueConfig, mode: Mode) -> VerdictLoop {
        let stop = Arc::new(AtomicBool::new(false));
        let received = Arc::new(AtomicUsize::new(0));
        let (ready_tx, ready_rx) = mpsc::channel();
        let path = topo.router.path();
        let (flag, count) = (stop.clone(), received.clone());
        let thread = std::thread::spawn(move || {
            enter(&path);
            let mut q = match Queue::open(&cfg) {
                Ok(q) => {
                    ready_tx.send(Ok(())).unwrap();
                    q
                }
                Err(e) => {
                    ready_tx.send(Err(e.to_string())).unwrap();
                    return (Vec::new(), QueueStats::default());
                }
            };
            let mut seen: Vec<Seen> = Vec::new();
            let start = Instant::now();
            while !flag.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(120) {
                let first_new = seen.len();
                q.poll(Duration::from_millis(20), &mut |p| {
                    let verdict = match mode {
                        Mode::PerPacket(policy) => policy(&p),
                        Mode::BatchAccept => Some(Verdict::Accept),
                    };
                    seen.push(Seen {
                        id: p.id,
                        ts_ns: p.ts_ns,
                        data: p.data.to_vec(),
                        hw_protocol: p.hw_protocol,
                        indev: p.indev,
                        outdev: p.outdev,
                        verdict,
                    })
                })
                .expect("poll");
                count.store(seen.len(), Ordering::Relaxed);
                match mode {
                    Mode::PerPacket(_) => {
                        for s in &seen[first_new..] {
                            if let Some(v) = s.verdict {
                                q.verdict(s.id, v).expect("verdict");
                            }
                        }
                    }
                    Mode::BatchAccept => {
                        if let Some(max) = seen[first_new..].iter().map(|s| s.id).max() {
                            let n = q
                                .verdict_batch(max, Verdict::Accept)
                                .expect("batch verdict");
                            assert_eq!(n, seen.len() - first_new, "batch covers the new packets");
                        }
                    }
                }
            }
            let stats = q.stats();
            (seen, stats)
        });
        match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("opening the queue in the router: {e}"),
            Err(e) => panic!("verdict loop did not start: {e}"),
        }
        VerdictLoop {
            stop,
            received,
            thread: Some(thread),
        }
    }

    pub fn received(&self) -> usize {
        self.received.load(Ordering::Relaxed)
    }

    /// Waits (at most `limit`) until the loop has seen `n` packets.
    pub fn wait_received(&self, n: usize, limit: Duration) -> usize {
        let start = Instant::now();
        while self.received() < n && start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.received()
    }

    /// Stops the loop; what it saw and the queue's final counters.
    pub fn finish(mut self) -> (Vec<Seen>, QueueStats) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .unwrap()
            .join()
            .expect("verdict loop panicked")
    }
}

impl Drop for VerdictLoop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
