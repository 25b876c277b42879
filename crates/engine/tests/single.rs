//! `--runmode single`: the reader, the one worker and the merge take turns
//! on the calling thread, and the output is the pipeline's.

mod common;

use std::net::SocketAddr;
use std::thread::ThreadId;

use common::{engine, write_pcap};
use vigil_craft::{TcpSession, TimedFrame};
use vigil_detect::CompiledRule;
use vigil_engine::{run_offline, AlertOut, AlertSink, EngineConfig, RunStats};
use vigil_source::PcapSource;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Every record as (kind, sid, packet index, tx id), and the thread that
/// wrote it.
#[derive(Default)]
struct Collect {
    out: Vec<String>,
    threads: Vec<ThreadId>,
}

impl Collect {
    fn push(&mut self, a: &AlertOut, sid: u32) {
        self.out.push(format!(
            "{:?} {sid} {} {:?}",
            a.kind,
            a.index,
            a.app.as_ref().map(|r| r.tx_id)
        ));
        self.threads.push(std::thread::current().id());
    }
}

impl AlertSink for Collect {
    fn alert(&mut self, a: &AlertOut, r: &CompiledRule) -> std::io::Result<()> {
        self.push(a, r.sid);
        Ok(())
    }
    fn tx_log(&mut self, a: &AlertOut) -> std::io::Result<()> {
        self.push(a, 0);
        Ok(())
    }
}

fn sessions() -> Vec<TimedFrame> {
    let mut frames = Vec::new();
    for i in 0..30u16 {
        let mut s = TcpSession::new(
            addr(&format!("10.1.{}.{}:{}", i % 3, 20 + i, 41000 + i)),
            addr(&format!("198.51.100.{}:80", 1 + i % 4)),
        )
        // Flows spread over several seconds: time-outs at second marks.
        .start_at((1_705_500_000 + (i / 4) as i64, 0));
        s.handshake()
            .client_send(format!("GET /single{i} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .close();
        frames.extend(s.into_frames());
    }
    frames.sort_by_key(|f| f.0);
    frames
}

const RULES: &str = "alert http any any -> any any (msg:\"single\"; flow:established,to_server; content:\"/single\"; sid:7100001; rev:1;)\n\
alert tcp any 80 -> any any (msg:\"ok\"; flow:established,to_client; content:\"200 OK\"; sid:7100002; rev:1;)\n";

fn run(single_thread: bool, batch_packets: usize) -> (Collect, RunStats) {
    let path = write_pcap(
        &format!("single-{single_thread}-{batch_packets}"),
        sessions(),
    );
    let cfg = EngineConfig {
        workers: 1,
        single_thread,
        batch_packets,
        log_tx: true,
        ..EngineConfig::default()
    };
    let src = PcapSource::open(&path).expect("open pcap");
    let mut sink = Collect::default();
    let stats = run_offline(src, engine(RULES), &cfg, &mut sink, &mut |_, _| {}).expect("run");
    (sink, stats)
}

#[test]
fn single_thread_writes_the_pipelines_output_on_the_calling_thread() {
    let me = std::thread::current().id();
    let (pipe, pipe_stats) = run(false, 1024);
    assert!(
        pipe.out.iter().filter(|l| l.contains(" 7100001 ")).count() == 30,
        "{:?}",
        pipe.out
    );
    assert!(pipe.out.iter().any(|l| l.starts_with("TxLog")));
    // The pipeline writes from its merge thread.
    assert!(pipe.threads.iter().all(|&t| t != me));
    // Small batches too: every batch is inspected and written before the
    // reader goes on.
    for batch in [1024, 7, 1] {
        let (single, stats) = run(true, batch);
        assert_eq!(single.out, pipe.out, "batch {batch}");
        assert!(single.threads.iter().all(|&t| t == me), "batch {batch}");
        assert!(stats.single_thread && !pipe_stats.single_thread);
        assert_eq!(stats.packets_read, pipe_stats.packets_read);
        assert_eq!(stats.alerts_written, pipe_stats.alerts_written);
        assert_eq!(stats.workers.pkts, pipe_stats.workers.pkts);
        assert_eq!(stats.per_worker_pkts, pipe_stats.per_worker_pkts);
    }
}

#[test]
fn single_thread_needs_one_worker() {
    // With more workers the setting is not taken: the pipeline runs.
    let path = write_pcap("single-two-workers", sessions());
    let cfg = EngineConfig {
        workers: 2,
        single_thread: true,
        ..EngineConfig::default()
    };
    let src = PcapSource::open(&path).expect("open pcap");
    let mut sink = Collect::default();
    let stats = run_offline(src, engine(RULES), &cfg, &mut sink, &mut |_, _| {}).expect("run");
    assert_eq!(stats.per_worker_pkts.len(), 2);
    assert!(!stats.single_thread);
    let me = std::thread::current().id();
    assert!(!sink.threads.is_empty() && sink.threads.iter().all(|&t| t != me));
}
