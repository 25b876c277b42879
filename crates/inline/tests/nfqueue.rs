//! NFQUEUE inline mode end to end: client -> router (iptables FORWARD ->
//! NFQUEUE, verdict loop on a thread inside the router) -> server, in
//! network namespaces the tests create. These run as root (they fail, not
//! skip, otherwise).

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use vigil_inline::{InlineError, Queue, QueueConfig, QueuedPacket, Verdict};

/// Time-out for requests that must succeed.
const OK_LIMIT: Duration = Duration::from_secs(5);
/// Time-out for requests that must fail (kept short: they always wait it out).
const FAIL_LIMIT: Duration = Duration::from_millis(1500);

fn accept_all(_: &QueuedPacket<'_>) -> Option<Verdict> {
    Some(Verdict::Accept)
}

fn drop_attack(p: &QueuedPacket<'_>) -> Option<Verdict> {
    Some(if contains(p.data, b"ATTACK") {
        Verdict::Drop
    } else {
        Verdict::Accept
    })
}

fn no_verdict(_: &QueuedPacket<'_>) -> Option<Verdict> {
    None
}

fn cfg(queue: u16) -> QueueConfig {
    QueueConfig {
        queue,
        ..QueueConfig::default()
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

#[test]
fn accept_all_passes_http_and_counters_add_up() {
    let t = Topology::new();
    t.queue_forward(0, false);
    let _http = t.http_server();
    let before = now_ns();
    let worker = VerdictLoop::start(&t, cfg(0), Mode::PerPacket(accept_all));

    let (status, body) = t
        .http_get("/hello", OK_LIMIT)
        .expect("GET through the queue");
    assert_eq!(status, 200);
    assert_eq!(body, body_for("/hello"));
    let (seen, stats) = worker.finish();
    let after = now_ns();

    // A TCP handshake, request, response and teardown: several packets each
    // way, every one seen and accepted.
    assert!(seen.len() >= 6, "{} packets", seen.len());
    assert_eq!(stats.received, seen.len() as u64, "{stats:?}");
    assert_eq!(stats.received, stats.accepted + stats.dropped, "{stats:?}");
    assert_eq!((stats.dropped, stats.held), (0, 0), "{stats:?}");
    assert_eq!(
        (stats.queue_dropped, stats.user_dropped),
        (0, 0),
        "{stats:?}"
    );

    let (r0, r1) = (t.router_ifindex("r0"), t.router_ifindex("r1"));
    let mut ids: Vec<u32> = seen.iter().map(|s| s.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), seen.len(), "ids are unique");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");
    for s in &seen {
        assert_eq!(s.hw_protocol, 0x0800, "IPv4");
        assert_eq!(s.data[0] >> 4, 4, "data starts with the IPv4 header");
        let total = u16::from_be_bytes([s.data[2], s.data[3]]) as usize;
        assert_eq!(total, s.data.len(), "the whole IP packet, no link header");
        assert_eq!(s.data[9], 6, "TCP");
        let (src, dst) = (&s.data[12..16], &s.data[16..20]);
        if src == [10, 250, 1, 2] {
            assert_eq!(dst, [10, 250, 2, 2]);
            assert_eq!((s.indev, s.outdev), (r0, r1), "client -> server");
        } else {
            assert_eq!((src, dst), (&[10, 250, 2, 2][..], &[10, 250, 1, 2][..]));
            assert_eq!((s.indev, s.outdev), (r1, r0), "server -> client");
        }
        assert!(
            s.ts_ns >= before - 1_000_000_000 && s.ts_ns <= after + 1_000_000_000,
            "timestamp {} outside [{before}, {after}] +- 1 s",
            s.ts_ns
        );
    }
    assert!(
        seen.iter()
            .any(|s| contains(&s.data, b"GET /hello HTTP/1.0")),
        "the request passed the queue"
    );
    assert!(
        seen.iter().any(|s| contains(&s.data, b"HTTP/1.0 200 OK")),
        "the response passed the queue"
    );
}

#[test]
fn batch_verdicts_accept_everything_up_to_an_id() {
    let t = Topology::new();
    t.queue_forward(3, false);
    let _http = t.http_server();
    let worker = VerdictLoop::start(&t, cfg(3), Mode::BatchAccept);
    for i in 0..3 {
        let path = format!("/batch/{i}");
        let (status, body) = t
            .http_get(&path, OK_LIMIT)
            .expect("GET with batch verdicts");
        assert_eq!((status, body), (200, body_for(&path)));
    }
    let (seen, stats) = worker.finish();
    assert!(seen.len() >= 18, "{} packets", seen.len());
    assert_eq!(stats.received, seen.len() as u64, "{stats:?}");
    assert_eq!(stats.accepted, stats.received, "{stats:?}");
    assert_eq!(stats.held, 0, "{stats:?}");
}

#[test]
fn packets_with_attack_are_dropped_and_benign_traffic_flows() {
    let t = Topology::new();
    t.queue_forward(1, false);
    let _http = t.http_server();
    let worker = VerdictLoop::start(&t, cfg(1), Mode::PerPacket(drop_attack));

    let (status, body) = t.http_get("/index.html", OK_LIMIT).expect("benign GET");
    assert_eq!((status, body), (200, body_for("/index.html")));

    // The handshake passes, the request segment (and its retransmissions)
    // is dropped, so no response comes before the time-out.
    match t.http_get("/ATTACK", FAIL_LIMIT) {
        Err(e) => assert!(e.starts_with("read:"), "fails waiting for the answer: {e}"),
        Ok(r) => panic!("the attack got an answer: {r:?}"),
    }
    let (status, body) = t
        .http_get("/after", OK_LIMIT)
        .expect("benign GET after the attack");
    assert_eq!((status, body), (200, body_for("/after")));

    let (seen, stats) = worker.finish();
    let dropped: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.verdict == Some(Verdict::Drop))
        .collect();
    assert!(!dropped.is_empty());
    assert!(dropped.iter().all(|s| contains(&s.data, b"GET /ATTACK")));
    assert_eq!(stats.dropped, dropped.len() as u64, "{stats:?}");
    assert_eq!(stats.received, stats.accepted + stats.dropped, "{stats:?}");
    assert_eq!(stats.held, 0, "{stats:?}");
    assert!(
        !seen.iter().any(|s| contains(&s.data, b"hello /ATTACK")),
        "the server never answered the attack"
    );
}

#[test]
fn a_queue_bound_twice_is_busy_and_bad_configs_are_errors() {
    let t = Topology::new();
    let first = t.open_queue(&cfg(5)).expect("first bind");
    assert_eq!(first.queue(), 5);
    match t.open_queue(&cfg(5)) {
        Err(e @ InlineError::Busy(_)) => {
            let m = e.to_string();
            assert!(m.contains("queue 5") && m.contains("already bound"), "{m}");
        }
        other => panic!("expected Busy, got {other:?}"),
    }
    // Another number, and the same number in another namespace, are free.
    let other = t.open_queue(&cfg(6)).expect("queue 6");
    let elsewhere = t
        .client
        .run_in(|| Queue::open(&cfg(5)))
        .expect("queue 5 in client");
    drop((other, elsewhere));
    // Unbinding frees the number.
    drop(first);
    let again = t.open_queue(&cfg(5)).expect("bind again after drop");
    drop(again);

    let zero = QueueConfig {
        max_len: 0,
        ..cfg(7)
    };
    assert!(matches!(t.open_queue(&zero), Err(InlineError::Config(_))));

    // A verdict for a packet that is not held is an error, not a kernel
    // round trip or a panic; so is a second verdict for the same id.
    let mut q = t.open_queue(&cfg(8)).unwrap();
    match q.verdict(42, Verdict::Accept) {
        Err(InlineError::Netlink(m)) => assert!(m.contains("id 42"), "{m}"),
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(q.verdict_batch(1000, Verdict::Drop).unwrap(), 0);
    // Nothing queued: poll waits about the time-out and returns 0.
    let start = std::time::Instant::now();
    let n = q.poll(Duration::from_millis(50), &mut |_| {}).unwrap();
    assert_eq!(n, 0);
    assert!(
        start.elapsed() >= Duration::from_millis(40),
        "{:?}",
        start.elapsed()
    );
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let s = q.stats();
    assert_eq!((s.received, s.accepted, s.dropped, s.held), (0, 0, 0, 0));
}

#[test]
fn without_cap_net_admin_is_a_permission_error() {
    let t = Topology::new();
    let r = t.router.run_in(|| {
        vigil_testnet::drop_capability_in_this_thread(vigil_testnet::CAP_NET_ADMIN);
        Queue::open(&cfg(0))
    });
    match r {
        Err(e @ InlineError::Permission(_)) => {
            assert!(e.to_string().contains("CAP_NET_ADMIN"), "{e}")
        }
        other => panic!("expected Permission, got {other:?}"),
    }
}

#[test]
fn fail_open_accepts_beyond_max_len_and_fail_closed_drops() {
    const MAX_LEN: u32 = 4;
    let t = Topology::new();
    t.queue_forward(2, false);
    let _http = t.http_server();

    // Fail-open: the worker takes packets but gives no verdict, so the
    // queue fills at 4; what comes after is accepted by the kernel.
    let open = QueueConfig {
        max_len: MAX_LEN,
        fail_open: true,
        ..cfg(2)
    };
    let worker = VerdictLoop::start(&t, open, Mode::PerPacket(no_verdict));
    t.udp_burst(16);
    assert_eq!(
        worker.wait_received(MAX_LEN as usize, Duration::from_secs(5)),
        MAX_LEN as usize,
        "the queue holds max_len packets"
    );
    let (status, body) = t
        .http_get("/fail-open", OK_LIMIT)
        .expect("a full fail-open queue lets traffic through");
    assert_eq!((status, body), (200, body_for("/fail-open")));
    let (seen, stats) = worker.finish();
    assert_eq!(
        seen.len(),
        MAX_LEN as usize,
        "nothing past the full queue reached us"
    );
    assert_eq!(stats.received, MAX_LEN as u64, "{stats:?}");
    assert_eq!(stats.held, MAX_LEN as u64, "{stats:?}");
    assert_eq!(stats.queue_dropped, 0, "fail-open drops nothing: {stats:?}");
    assert_eq!(stats.user_dropped, 0, "{stats:?}");
    assert!(
        seen.iter().all(|s| s.data[9] == 17),
        "the held ones are the UDP filler"
    );

    // Fail-closed (the default): same situation, traffic is dropped.
    let closed = QueueConfig {
        max_len: MAX_LEN,
        fail_open: false,
        ..cfg(2)
    };
    let worker = VerdictLoop::start(&t, closed, Mode::PerPacket(no_verdict));
    t.udp_burst(16);
    assert_eq!(
        worker.wait_received(MAX_LEN as usize, Duration::from_secs(5)),
        MAX_LEN as usize
    );
    match t.http_get("/fail-closed", FAIL_LIMIT) {
        Err(e) => assert!(e.starts_with("connect:"), "the SYN is dropped: {e}"),
        Ok(r) => panic!("a full fail-closed queue let a request through: {r:?}"),
    }
    let (seen, stats) = worker.finish();
    assert_eq!(seen.len(), MAX_LEN as usize);
    assert_eq!(stats.held, MAX_LEN as u64, "{stats:?}");
    // 12 UDP datagrams and at least the first SYN found the queue full.
    assert!(stats.queue_dropped >= 13, "{stats:?}");
}

#[test]
fn queue_bypass_passes_traffic_when_no_one_is_bound() {
    let t = Topology::new();
    let _http = t.http_server();

    t.queue_forward(4, true);
    let (status, body) = t
        .http_get("/bypass", OK_LIMIT)
        .expect("--queue-bypass with no listener accepts");
    assert_eq!((status, body), (200, body_for("/bypass")));

    t.iptables(&["-F", "FORWARD"]);
    t.queue_forward(4, false);
    match t.http_get("/no-bypass", FAIL_LIMIT) {
        Err(e) => assert!(e.starts_with("connect:"), "{e}"),
        Ok(r) => panic!("no listener and no bypass, yet an answer: {r:?}"),
    }

    // With bypass and a bound queue the packets do go to the queue.
    t.iptables(&["-F", "FORWARD"]);
    t.queue_forward(4, true);
    let worker = VerdictLoop::start(&t, cfg(4), Mode::PerPacket(accept_all));
    let (status, _) = t
        .http_get("/bound", OK_LIMIT)
        .expect("GET via the bound queue");
    assert_eq!(status, 200);
    let (seen, _) = worker.finish();
    assert!(seen.iter().any(|s| contains(&s.data, b"GET /bound")));
}

#[test]
fn a_panicking_callback_unwinds_out_of_poll_and_the_queue_goes_on() {
    let t = Topology::new();
    t.queue_forward(9, false);
    let mut q = t.open_queue(&cfg(9)).expect("bind");
    t.udp_burst(8);
    let mut first_id = None;
    let mut got = 0;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for _ in 0..100 {
            q.poll(Duration::from_millis(20), &mut |p| {
                first_id = Some(p.id);
                panic!("callback gave up on packet {}", p.id);
            })
            .unwrap();
        }
    }));
    let payload = r.expect_err("the callback's panic comes out of poll");
    let msg = payload.downcast_ref::<String>().expect("panic message");
    let first = first_id.expect("a packet reached the callback");
    assert_eq!(msg, &format!("callback gave up on packet {first}"));

    // The queue still works: the other packets come, and every id, the one
    // whose callback panicked included, takes a verdict.
    let mut ids = vec![first];
    for _ in 0..100 {
        q.poll(Duration::from_millis(20), &mut |p| ids.push(p.id))
            .unwrap();
        got = ids.len();
        if got == 8 {
            break;
        }
    }
    assert_eq!(got, 8, "all 8 datagrams held: {ids:?}");
    for id in &ids {
        q.verdict(*id, Verdict::Accept).unwrap();
    }
    let s = q.stats();
    assert_eq!((s.received, s.accepted, s.held), (8, 8, 0), "{s:?}");
}

/// Packets counted by the router's `iptables -t mangle` POSTROUTING rule
/// that matches `-m mark --mark MARK`.
fn marked_count(t: &Topology, mark: &str) -> u64 {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &t.router.name, "iptables", "-w", "10"])
        .args(["-t", "mangle", "-nvxL", "POSTROUTING"])
        .output()
        .expect("iptables -L");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| {
            l.contains(&format!("MARK match {mark}")) || l.contains(&format!("mark match {mark}"))
        })
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no counter for mark {mark} in:\n{text}"))
}

/// `nfq_set_mark`'s verdict: the packet was queued with mark 0xab00 (read
/// back as `QueuedPacket::mark`), the verdict sets 0x12 under mask 0xff,
/// and the kernel sends it on with mark 0xab12 (counted by a mangle
/// POSTROUTING `-m mark` rule); packets given a plain verdict keep 0xab00.
#[test]
fn a_marked_verdict_changes_the_packets_mark() {
    let t = Topology::new();
    t.iptables(&[
        "-t",
        "mangle",
        "-A",
        "PREROUTING",
        "-p",
        "udp",
        "-j",
        "MARK",
        "--set-mark",
        "0xab00",
    ]);
    t.iptables(&[
        "-t",
        "mangle",
        "-A",
        "POSTROUTING",
        "-p",
        "udp",
        "-m",
        "mark",
        "--mark",
        "0xab12",
    ]);
    t.iptables(&[
        "-t",
        "mangle",
        "-A",
        "POSTROUTING",
        "-p",
        "udp",
        "-m",
        "mark",
        "--mark",
        "0xab00",
    ]);
    t.iptables(&[
        "-A",
        "FORWARD",
        "-p",
        "udp",
        "-j",
        "NFQUEUE",
        "--queue-num",
        "11",
    ]);
    let path = t.router.path();
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        enter(&path);
        let mut q = Queue::open(&cfg(11)).expect("queue 11");
        tx.send(()).unwrap();
        let mut seen: Vec<(u32, u32, bool)> = Vec::new();
        let start = std::time::Instant::now();
        while seen.len() < 5 && start.elapsed() < Duration::from_secs(10) {
            let mut new = Vec::new();
            q.poll(Duration::from_millis(20), &mut |p| {
                new.push((p.id, p.mark, contains(p.data, b"mark me")));
            })
            .expect("poll");
            for &(id, _, mark) in &new {
                let m = mark.then_some((0x12, 0xff));
                let got = q
                    .verdict_marked(id, Verdict::Accept, &[], m)
                    .expect("verdict");
                assert_eq!(got, if mark { 0xab12 } else { 0xab00 });
            }
            seen.extend(new);
        }
        seen
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("queue opened");
    t.client.run_in(|| {
        let s = std::net::UdpSocket::bind((CLIENT_IP, 0)).expect("UDP socket in client");
        for i in 0..5 {
            let msg = if i % 2 == 0 {
                format!("mark me {i}")
            } else {
                format!("plain {i}")
            };
            s.send_to(msg.as_bytes(), (SERVER_IP, 9)).expect("send UDP");
        }
    });
    let seen = worker.join().expect("verdict loop");
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert!(seen.iter().all(|s| s.1 == 0xab00), "queued marks: {seen:?}");
    assert_eq!(marked_count(&t, "0xab12"), 3);
    assert_eq!(marked_count(&t, "0xab00"), 2);
}
