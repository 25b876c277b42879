//! Transaction records formatted on the workers
//! (`EngineConfig::format_in_workers`, `AlertSink::tx_formatter`): the
//! same output, in the same order among the alerts, wherever they are
//! formatted; records the sink does not take are dropped on the worker;
//! a record that fails to format goes to `tx_log` as before.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{engine, write_pcap};
use vigil_craft::{TcpSession, TimedFrame};
use vigil_detect::CompiledRule;
use vigil_engine::{run_offline, AlertOut, AlertSink, EngineConfig, FlowLog, TxFormatter};
use vigil_source::PcapSource;

/// One line of a transaction record, as both paths write it.
fn tx_line(a: &AlertOut, out: &mut Vec<u8>) {
    let r = a.app.as_ref().expect("a transaction record");
    out.extend_from_slice(format!("T {} {} {} {}\n", a.index, r.key, r.tx_id, r.json()).as_bytes());
}

/// What the formatter does with a record of type `skip` (nothing) or
/// `fail` (an error).
#[derive(Clone, Copy, Default)]
struct Rules {
    skip: Option<&'static str>,
    fail: Option<&'static str>,
}

struct Format(Rules);

impl TxFormatter for Format {
    fn format(&mut self, a: &AlertOut, out: &mut Vec<u8>) -> std::io::Result<()> {
        let key = a.app.as_ref().map(|r| r.key);
        if key.is_some() && key == self.0.fail {
            // Something written before the error must not be kept.
            out.extend_from_slice(b"partial");
            return Err(std::io::Error::other("cannot format"));
        }
        if key.is_some() && key == self.0.skip {
            return Ok(());
        }
        tx_line(a, out);
        Ok(())
    }
}

#[derive(Default)]
struct Lines {
    rules: Rules,
    out: Vec<u8>,
    /// Records written by `tx_log` and lines handed over formatted.
    via_tx_log: usize,
    via_formatted: usize,
}

impl AlertSink for Lines {
    fn alert(&mut self, a: &AlertOut, r: &CompiledRule) -> std::io::Result<()> {
        self.out
            .extend_from_slice(format!("A {} {}\n", r.sid, a.index).as_bytes());
        Ok(())
    }

    fn tx_log(&mut self, a: &AlertOut) -> std::io::Result<()> {
        assert!(a.line.is_none());
        self.via_tx_log += 1;
        if a.app.as_ref().map(|r| r.key) != self.rules.skip {
            tx_line(a, &mut self.out);
        }
        Ok(())
    }

    fn tx_formatter(&self) -> Option<Box<dyn TxFormatter>> {
        Some(Box::new(Format(self.rules)))
    }

    fn tx_formatted(&mut self, lines: &[u8]) -> std::io::Result<()> {
        assert!(lines.ends_with(b"\n") && !lines.starts_with(b"partial"));
        self.via_formatted += 1;
        self.out.extend_from_slice(lines);
        Ok(())
    }
}

/// Eight HTTP sessions (so that every worker has some), each with two
/// requests, interleaved packet by packet.
fn sessions() -> Vec<TimedFrame> {
    let mut all: Vec<Vec<TimedFrame>> = (0..8u16)
        .map(|i| {
            let client: SocketAddr = format!("10.0.0.{}:{}", i + 1, 40000 + i).parse().unwrap();
            let server: SocketAddr = "10.0.1.1:80".parse().unwrap();
            let mut s = TcpSession::new(client, server).start_at((1_700_000_000, u32::from(i)));
            s.handshake()
                .client_send(format!("GET /{i}/a HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .client_send(format!("GET /{i}/b HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .server_send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                .close();
            s.into_frames()
        })
        .collect();
    let mut frames = Vec::new();
    let longest = all.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..longest {
        for s in &mut all {
            if let Some(f) = s.get(k) {
                frames.push(f.clone());
            }
        }
    }
    // Packet times in input order.
    for (k, f) in frames.iter_mut().enumerate() {
        f.0 = (1_700_000_000 + k as i64 / 10, (k as u32 % 10) * 1000);
    }
    frames
}

const RULES: &str =
    "alert http any any -> any any (msg:\"404\"; http.stat_code; content:\"404\"; sid:1;)\n\
                     alert tcp any any -> any 80 (msg:\"b\"; content:\"/b \"; sid:2;)";

fn run(workers: usize, format_in_workers: Option<bool>, rules: Rules) -> Lines {
    // Tests run in parallel and make the same runs: each its own file.
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let path = write_pcap(
        &format!("fmt-{}", RUNS.fetch_add(1, Ordering::Relaxed)),
        sessions(),
    );
    let cfg = EngineConfig {
        workers,
        format_in_workers,
        flow_log: FlowLog {
            flow: true,
            netflow: false,
        },
        ..EngineConfig::default()
    };
    let src = PcapSource::open(&path).expect("open pcap");
    let mut sink = Lines {
        rules,
        ..Lines::default()
    };
    run_offline(src, engine(RULES), &cfg, &mut sink, &mut |_, _| {}).expect("run");
    let _ = std::fs::remove_file(&path);
    sink
}

fn count(out: &[u8], prefix: &str) -> usize {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count()
}

#[test]
fn one_worker_formats_on_the_output_thread_and_more_on_the_workers() {
    let one = run(1, None, Rules::default());
    assert_eq!(one.via_formatted, 0);
    // 16 http records and 8 flow records.
    assert_eq!(one.via_tx_log, 24);
    assert_eq!(count(&one.out, "T "), 24);
    assert_eq!(count(&one.out, "A 1 "), 8);
    assert_eq!(count(&one.out, "A 2 "), 8);
    for workers in [2, 3] {
        let many = run(workers, None, Rules::default());
        assert_eq!(many.via_tx_log, 0, "{workers} workers");
        assert_eq!(many.via_formatted, 24, "{workers} workers");
        assert_eq!(
            String::from_utf8_lossy(&many.out),
            String::from_utf8_lossy(&one.out),
            "{workers} workers"
        );
    }
}

#[test]
fn the_setting_overrides_the_worker_count() {
    let base = run(1, None, Rules::default());
    let on = run(1, Some(true), Rules::default());
    assert_eq!((on.via_tx_log, on.via_formatted), (0, 24));
    let off = run(3, Some(false), Rules::default());
    assert_eq!((off.via_tx_log, off.via_formatted), (24, 0));
    assert_eq!(on.out, base.out);
    assert_eq!(off.out, base.out);
}

#[test]
fn records_the_sink_does_not_take_are_dropped_on_the_worker() {
    let skip = Rules {
        skip: Some("flow"),
        fail: None,
    };
    let one = run(1, None, skip);
    assert_eq!(one.via_tx_log, 24);
    let two = run(2, None, skip);
    assert_eq!((two.via_tx_log, two.via_formatted), (0, 16));
    assert_eq!(two.out, one.out);
    assert_eq!(count(&two.out, "T "), 16);
}

#[test]
fn a_record_that_fails_to_format_goes_to_tx_log() {
    let fail = Rules {
        skip: None,
        fail: Some("flow"),
    };
    let two = run(2, None, fail);
    assert_eq!((two.via_tx_log, two.via_formatted), (8, 16));
    assert_eq!(two.out, run(1, None, Rules::default()).out);
}
