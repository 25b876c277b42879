//! Suricata's own configuration files: sizes written with binary units
//! and a space (`memcap: 128 MiB`, as Suricata 9's suricata.yaml has
//! them) are read, and the peer's suricata.yaml loads as it is.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

/// An HTTP exchange whose response body (4,000 bytes) ends with a marker.
fn capture() -> Vec<TimedFrame> {
    let mut body = vec![b'a'; 4000 - 6];
    body.extend_from_slice(b"MARKER");
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    resp.extend_from_slice(&body);
    let mut t = TcpSession::new(
        "10.5.0.1:40000".parse::<SocketAddr>().unwrap(),
        "10.5.0.2:80".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0));
    t.handshake()
        .client_send(b"GET /big HTTP/1.1\r\nHost: cfg.example\r\n\r\n")
        .server_send(&resp)
        .close();
    t.into_frames()
}

const RULES: &str =
    "alert http any any -> any any (msg:\"marker\"; file.data; content:\"MARKER\"; sid:1;)\n";

/// A counter's total in the run's stats.log (0 when absent: zero
/// counters are not written).
fn stat(run: &common::Run, name: &str) -> u64 {
    let log = std::fs::read_to_string(run.dir.join("out/stats.log")).unwrap();
    common::stat(&log, name).unwrap_or(0)
}

#[test]
fn sizes_with_binary_units_are_read() {
    let frames = capture();
    // The default depth (1 MiB) takes the whole response.
    let whole = common::run_with("cfg-default", &frames, RULES, None, "", &[]);
    assert_eq!(stat(&whole, "tcp.reassembly_depth_dropped_bytes"), 0);
    assert_eq!(common::alert_sids(&whole.events), vec![1]);
    // "1 KiB" is 1,024 bytes: the rest of the response is past the depth.
    let yaml = "stream:\n  memcap: 64 MiB\n  reassembly:\n    memcap: 256 MiB\n    depth: 1 KiB\n";
    let cut = common::run_with("cfg-kib", &frames, RULES, None, yaml, &[]);
    let dropped = stat(&cut, "tcp.reassembly_depth_dropped_bytes");
    assert!(dropped > 2500, "dropped {dropped}");
    assert!(common::alert_sids(&cut.events).is_empty());
    let _ = std::fs::remove_dir_all(&whole.dir);
    let _ = std::fs::remove_dir_all(&cut.dir);
}

#[test]
fn the_peers_suricata_yaml_loads() {
    let yaml = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/peers/suricata/suricata.yaml");
    if !yaml.exists() {
        eprintln!("no {}: skipped", yaml.display());
        return;
    }
    let yaml = yaml.to_str().unwrap();
    let run = common::run_with("peer-yaml", &capture(), RULES, None, "", &["-c", yaml]);
    let types: std::collections::BTreeSet<String> = run
        .events
        .iter()
        .map(|e| e["event_type"].to_string())
        .collect();
    // Its eve-log types: alert, http, dns, tls, stats (no flow records).
    assert!(
        types.contains("\"alert\"") && types.contains("\"http\""),
        "{types:?}"
    );
    assert!(
        types.iter().all(
            |t| ["\"alert\"", "\"http\"", "\"dns\"", "\"tls\"", "\"stats\""].contains(&t.as_str())
        ),
        "{types:?}"
    );
    let _ = std::fs::remove_dir_all(&run.dir);
}
