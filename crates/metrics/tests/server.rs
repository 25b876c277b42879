//! The HTTP endpoint, on 127.0.0.1 only, with bounded raw HTTP/1.0 requests.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use vigil_metrics::{Metrics, MetricsError, MetricsServer, Snapshot, WorkerFigures, CONTENT_TYPE};

const TIMEOUT: Duration = Duration::from_secs(5);

/// Sends one raw HTTP/1.0 request and returns (status, headers, body).
fn request(addr: SocketAddr, method: &str, path: &str) -> (u16, String, String) {
    assert!(addr.ip().is_loopback());
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).expect("connect");
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(TIMEOUT)).unwrap();
    write!(stream, "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    // HTTP/1.0: the server closes the connection after the response.
    stream.read_to_end(&mut raw).expect("read response");
    let raw = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("header/body split");
    let status_line = head.lines().next().unwrap();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    (status, head.to_string(), body.to_string())
}

fn start() -> (Metrics, MetricsServer) {
    let metrics = Metrics::default();
    let server = MetricsServer::start("127.0.0.1:0", metrics.clone()).expect("bind");
    (metrics, server)
}

#[test]
fn get_metrics_answers_200_with_the_latest_snapshot() {
    let (metrics, server) = start();
    let addr = server.local_addr();
    assert_eq!(addr.ip().to_string(), "127.0.0.1");
    assert_ne!(addr.port(), 0);

    metrics.publish(Snapshot {
        workers: vec![WorkerFigures {
            packets: 77,
            ..Default::default()
        }],
        rules_loaded: 12,
        ..Default::default()
    });
    let (status, head, body) = request(addr, "GET", "/metrics");
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase().contains(&format!(
            "content-type: {}",
            CONTENT_TYPE.to_ascii_lowercase()
        )),
        "{head}"
    );
    assert_eq!(body, metrics.render());
    assert!(body
        .lines()
        .any(|l| l == "vigil_packets_total{worker=\"0\"} 77"));
    assert!(body.lines().any(|l| l == "vigil_rules_loaded 12"));

    // A later publish shows on the next scrape; a query string is ignored.
    metrics.publish(Snapshot {
        rules_loaded: 13,
        ..Default::default()
    });
    let (status, _, body) = request(addr, "GET", "/metrics?x=1");
    assert_eq!(status, 200);
    assert!(body.lines().any(|l| l == "vigil_rules_loaded 13"));
    assert!(!body.contains("vigil_packets_total{"));

    server.stop();
}

#[test]
fn other_paths_are_404_and_other_methods_405() {
    let (_metrics, server) = start();
    let addr = server.local_addr();
    for path in ["/", "/metric", "/metrics/x", "/favicon.ico"] {
        let (status, _, body) = request(addr, "GET", path);
        assert_eq!(status, 404, "{path}");
        assert!(!body.contains("vigil_"), "{path}");
    }
    let (status, head, _) = request(addr, "POST", "/metrics");
    assert_eq!(status, 405);
    assert!(
        head.to_ascii_lowercase().contains("allow: get, head"),
        "{head}"
    );
}

#[test]
fn address_in_use_is_an_error_not_a_panic() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = MetricsServer::start(&addr, Metrics::default()).unwrap_err();
    assert!(matches!(err, MetricsError::Listen { .. }));
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("metrics: cannot listen on {addr}: ")),
        "{msg}"
    );

    // So is an address that does not parse.
    let err = MetricsServer::start("not an address", Metrics::default()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("metrics: cannot listen on not an address: "),
        "{err}"
    );
}

#[test]
fn stop_returns_promptly_and_releases_the_port() {
    let (_metrics, server) = start();
    let addr = server.local_addr();
    assert_eq!(request(addr, "GET", "/metrics").0, 200);

    let t = Instant::now();
    server.stop();
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());

    // The listener goes away (tiny_http's accept thread exits just after).
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match MetricsServer::start(&addr.to_string(), Metrics::default()) {
            Ok(again) => {
                again.stop();
                break;
            }
            Err(e) if Instant::now() > deadline => panic!("port not released: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[test]
fn drop_stops_it_too() {
    let (_metrics, server) = start();
    let t = Instant::now();
    drop(server);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

#[test]
fn stop_right_after_start_and_while_idle() {
    for _ in 0..20 {
        let (_metrics, server) = start();
        let t = Instant::now();
        server.stop();
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}

#[test]
fn stop_is_not_held_up_by_a_client_that_never_finishes_its_request() {
    let (_metrics, server) = start();
    let mut idle = TcpStream::connect_timeout(&server.local_addr(), TIMEOUT).unwrap();
    idle.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    server.stop();
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}
