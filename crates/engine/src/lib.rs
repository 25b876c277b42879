//! The offline pipeline: a reader that dispatches packets by symmetric flow
//! hash to shared-nothing workers over bounded queues, and an ordered merge
//! that puts their alerts back into input order.
//!
//! ```text
//!  reader ──batches──► worker 0 ──reports──┐
//!  (pcap, hash)  ────► worker 1 ──reports──┼─► merge (input order,
//!                ────► worker N ──reports──┘   thresholds) ─► AlertSink
//! ```
//!
//! Repeatability: a flow's packets all reach one worker in input order, so
//! per-flow state is the same whatever the worker count; alerts are merged
//! by packet index; and cross-flow state (thresholds) is applied in the
//! merge, which sees every alert in input order. The one exception is the
//! flow memcap: evictions depend on how many flows share a worker's table,
//! so they are counted and reported.
//!
//! Offline queues apply back-pressure and never drop.

/// The hasher of the engine's tables keyed by traffic (addresses, ports):
/// foldhash, randomly seeded per table; SipHash was most of these tables'
/// cost on the reader and merge threads.
pub(crate) type Fold = foldhash::fast::RandomState;

mod app;
mod batch;
pub mod detectors;
mod exception;
pub mod expect;
mod files;
pub mod hosts;
mod live;
pub mod steering;
pub mod tags;
mod worker;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use vigil_defrag::{DefragStats, Defragmenter, Fragment};
use vigil_detect::{AlertKey, CompiledRule, DetectEngine, ThresholdTracker, XbitStats, XbitTable};
use vigil_flow::{flow_hash, pair_hash, FlowKey};
use vigil_source::PcapSource;
use vigil_stream::StreamConfig;
use vigil_wire::{decode, Packet};

pub use batch::{Batch, BatchPool, PacketRecord};
pub use exception::{ExceptionCase, ExceptionPolicies, ExceptionPolicy};
pub use live::{
    run_live, HoldTimes, InputCounters, InputError, LiveConfig, LiveControl, LiveFrame, LiveInput,
    LiveSink, LiveSnapshot,
};
pub use vigil_defrag::{DefragConfig, FragPolicy};
pub use vigil_flow::{FlowTimeouts, RateConfig, TimeoutTable};
pub use vigil_opencl::{DeviceStats, LaneConfig};
pub use vigil_stream::{OverlapPolicy, StreamConfig as StreamSettings};
pub use worker::{
    AlertOrder, AlertOut, AlertVars, AppRecord, ChecksumMode, DeviceSetup, DropLog, FlowEnd,
    FlowLog, FrameOut, MarkChange, OutKind, PendingBatch, RejectTo, SessionState as TcpState,
    TunnelOut, Verdict, Worker, WorkerConfig, WorkerStats, PACKET_RECORD,
};

/// Where merged alerts go (EVE, fast.log ...), in input order.
pub trait AlertSink {
    fn alert(&mut self, alert: &AlertOut, rule: &CompiledRule) -> std::io::Result<()>;

    /// An app-layer transaction record ([`OutKind::TxLog`]).
    fn tx_log(&mut self, _record: &AlertOut) -> std::io::Result<()> {
        Ok(())
    }

    /// An alert whose action a `threshold.config` `rate_filter` changed
    /// to `action` (`Alert`, `Drop` or `Reject`; `Pass` alerts are not
    /// written). By default written as any alert.
    fn alert_rate_filtered(
        &mut self,
        alert: &AlertOut,
        rule: &CompiledRule,
        _action: vigil_rules::Action,
    ) -> std::io::Result<()> {
        self.alert(alert, rule)
    }

    /// A packet a `tag` covers ([`OutKind::Tag`], `packet` holds the
    /// frame): Suricata's EVE `packet` record (`tagged-packets`).
    fn tagged_packet(&mut self, _packet: &AlertOut) -> std::io::Result<()> {
        Ok(())
    }

    /// Inline: a dropped packet ([`OutKind::Drop`]), with the rule that
    /// dropped it, if a rule did.
    fn drop_log(
        &mut self,
        _record: &AlertOut,
        _rule: Option<&CompiledRule>,
    ) -> std::io::Result<()> {
        Ok(())
    }

    /// A formatter for the workers: one per worker, each writing
    /// transaction records as [`tx_log`](Self::tx_log) would have them,
    /// so that a run of several workers does not format them all on the
    /// one output thread. `None` (the default): they are given to
    /// `tx_log`. A sink that returns one takes its lines in
    /// [`tx_formatted`](Self::tx_formatted).
    fn tx_formatter(&self) -> Option<Box<dyn TxFormatter>> {
        None
    }

    /// A transaction record a worker's [`TxFormatter`] wrote: its output
    /// line(s), each with its newline, in output order.
    fn tx_formatted(&mut self, _lines: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes transaction records ([`OutKind::TxLog`]) on a worker: see
/// [`AlertSink::tx_formatter`].
pub trait TxFormatter: Send {
    /// Appends `record`'s output, each line with its newline, to `out`;
    /// nothing when the sink would not write it.
    fn format(&mut self, record: &AlertOut, out: &mut Vec<u8>) -> std::io::Result<()>;
}

/// A worker's [`TxFormatter`] and its scratch line.
struct WorkerFormat {
    f: Box<dyn TxFormatter>,
    line: Vec<u8>,
}

impl WorkerFormat {
    /// Formats the transaction records among `alerts` (their `line` set,
    /// their `app` dropped here, on the thread that built it) and removes
    /// those the sink writes nothing for. A record that fails to format
    /// is left as it was, for `tx_log` to write or report.
    fn apply(&mut self, alerts: &mut Vec<AlertOut>) {
        alerts.retain_mut(|a| {
            if a.kind != OutKind::TxLog || a.app.is_none() {
                return true;
            }
            self.line.clear();
            match self.f.format(a, &mut self.line) {
                Ok(()) if self.line.is_empty() => false,
                Ok(()) => {
                    a.line = Some(self.line.as_slice().into());
                    a.app = None;
                    true
                }
                Err(_) => true,
            }
        });
    }
}

/// Whether transaction records are formatted on the workers
/// ([`EngineConfig::format_in_workers`], `None`: with 2 workers or more).
fn formats_in_workers(cfg: &EngineConfig, workers: usize) -> bool {
    cfg.format_in_workers.unwrap_or(workers >= 2)
}

/// A worker's transaction record formatter, when one of `workers`
/// workers formats ([`formats_in_workers`]) and the sink has one.
fn worker_format(
    cfg: &EngineConfig,
    workers: usize,
    sink: &(dyn AlertSink + Send),
) -> Option<WorkerFormat> {
    formats_in_workers(cfg, workers)
        .then(|| sink.tx_formatter())
        .flatten()
        .map(|f| WorkerFormat {
            f,
            line: Vec::new(),
        })
}

/// Pipeline settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub workers: usize,
    /// One thread does everything (`--runmode single`, as Suricata's):
    /// reading, the one worker's detection and the output, in turn, on
    /// the calling thread. Offline only, with one worker, no device
    /// prefilter and no linked sensors (those run the pipeline). The
    /// output is the same as the pipeline's.
    pub single_thread: bool,
    /// Where transaction records are formatted when the sink can have
    /// them formatted on the workers ([`AlertSink::tx_formatter`]):
    /// `Some(true)` on the workers, `Some(false)` on the output thread,
    /// `None` on the workers when there are 2 or more. With one worker the
    /// output thread has the other core to itself, and formatting there
    /// takes the work off the worker; with more, the one output thread
    /// formatting for all of them is serial work that caps how far they
    /// scale (docs/performance.md). The output is the same either way.
    pub format_in_workers: Option<bool>,
    /// Flow table capacity, all workers together.
    pub max_flows: usize,
    /// Packets per batch sent to a worker. Each batch handed over can
    /// wake a sleeping thread (the worker, or the reader waiting for room),
    /// and those switches, not the copies, were what small batches cost:
    /// 1,024 rather than 128 took dev-mix's switches from 22,000 to 3,000
    /// at 1 worker and its 2-worker run from 0.99 s to 0.67 s
    /// (docs/performance.md).
    pub batch_packets: usize,
    /// Batches in flight per worker (bounded queue depth). The reader
    /// hands packets over in input order, so when one worker's queue is
    /// full it waits, and another worker can run dry meanwhile: with 4
    /// batches a 2-worker run on dev-mix left 0.10-0.20 core-seconds of
    /// its 2 cores idle, with 16 0.02-0.08, for 24 MiB more resident
    /// memory while packets are processed (below the start-up peak of
    /// building the prefilter; docs/performance.md).
    pub queue_depth: usize,
    pub log_payload: bool,
    pub log_packet: bool,
    /// TCP tracking and reassembly settings.
    pub stream: StreamConfig,
    /// Stream reassembly memory, all workers together (each gets an
    /// equal share).
    pub stream_memcap: usize,
    /// IP defragmentation (`None`: fragments are not reassembled).
    pub defrag: Option<DefragConfig>,
    /// Largest stream payload logged with an alert.
    pub payload_max: usize,
    /// App-layer parsing (`None`: off).
    pub app: Option<vigil_applayer::AppLayerConfig>,
    /// Write `http`, `dns` and `tls` transaction records.
    pub log_tx: bool,
    /// The transaction record keys to write (`http`, `smb`, ... as the
    /// eve-log `types` name them; `ftp` covers `ftp_data`); `None`
    /// writes every one. A record of a type not logged is not built.
    pub log_tx_types: Option<Vec<&'static str>>,
    /// Put the transaction's object in app-layer alerts.
    pub alert_app: bool,
    /// Log the flow's and packet's variables with alerts (eve-log
    /// `metadata`, on by default as in Suricata).
    pub log_vars: bool,
    /// See [`WorkerConfig::tls_stop_after_handshake`].
    pub tls_stop_after_handshake: bool,
    /// See [`WorkerConfig::tls_bypass`].
    pub tls_bypass: bool,
    /// See [`WorkerConfig::stream_bypass`].
    pub stream_bypass: bool,
    /// XFF header (lower case) and reverse deployment (see
    /// [`WorkerConfig::xff`]).
    pub xff: Option<(String, bool)>,
    /// Prefilter on an OpenCL device (`None`: CPU engines only).
    pub device: Option<DeviceSetup>,
    /// Flow idle timeouts (`flow-timeouts`).
    pub timeouts: TimeoutTable,
    /// Pseudo-real-time replay: packets are read at their timestamps'
    /// pace times this factor (1: real time), and the clock markers that
    /// time flows out follow that clock while the reader waits; 0 reads
    /// as fast as possible.
    pub replay_speed: f64,
    /// TCP checksum validation (`-k`).
    pub checksum: ChecksumMode,
    /// Inline (IPS) semantics: drop and reject rules drop (see
    /// [`WorkerConfig::inline`]); offline this is `--simulate-ips`.
    pub inline: bool,
    /// Inline: block hosts after drops of these classtypes.
    pub host_block: Option<hosts::HostBlockConfig>,
    /// Exception policies, resolved for the mode (inline or not).
    pub exceptions: ExceptionPolicies,
    /// Time and count every rule check (`--profile-rules`); off by default.
    pub profile_rules: bool,
    /// Inline: `drop` records (the eve-log `drop` type).
    pub drop_log: Option<DropLog>,
    /// `flow` / `netflow` records at flow end (the eve-log types).
    pub flow_log: FlowLog,
    /// `anomaly` records for app-layer parser events (the eve-log type).
    pub log_anomaly: bool,
    /// `anomaly` records for decoder events, one per event of a packet
    /// (the anomaly type's `types.decode`; off by default, as Suricata's).
    pub log_anomaly_decode: bool,
    /// `anomaly` records for stream (TCP) events (`types.stream`; off by
    /// default).
    pub log_anomaly_stream: bool,
    /// Write a `fileinfo` record per file of each finished transaction.
    pub log_files: bool,
    /// Suricata's file-store v2 folder (`filestore` rules write there);
    /// `None`: off.
    pub file_store: Option<std::path::PathBuf>,
    /// The built-in cross-flow detectors (scans, floods); `None`: off.
    pub detectors: Option<detectors::DetectorConfig>,
    /// Sensors sharing host-scoped events (`--slice` with a link).
    pub peers: Option<Peers>,
    /// `--slice K/N`: inspect only the flows of slice K (`None`: all).
    pub slice: Option<Slice>,
    /// FTP data connections expected from their control channel
    /// ([`expect`]; `None`: not followed).
    pub ftp_expect: Option<expect::ExpectConfig>,
    /// `flow.rate-tracking`: elephant-flow detection (`None`: off, as in
    /// Suricata without the setting).
    pub rate_tracking: Option<vigil_flow::RateConfig>,
    /// Balancing flow steering over the workers (`steering`: each new flow
    /// to the least loaded worker); `None`:
    /// the static `hash % workers`.
    pub steering: Option<steering::SteeringConfig>,
}

impl EngineConfig {
    /// Whether a capture runs on one thread ([`EngineConfig::single_thread`]):
    /// asked for, one worker, no device prefilter and no linked sensors.
    pub fn runs_single_thread(&self) -> bool {
        self.single_thread && self.workers <= 1 && self.device.is_none() && self.peers.is_none()
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            workers: 1,
            single_thread: false,
            format_in_workers: None,
            max_flows: 1 << 20,
            batch_packets: 1024,
            queue_depth: 16,
            log_payload: false,
            log_packet: false,
            stream: StreamConfig::default(),
            stream_memcap: 256 << 20,
            defrag: Some(DefragConfig::default()),
            payload_max: 4096,
            app: Some(vigil_applayer::AppLayerConfig::default()),
            log_tx: true,
            log_tx_types: None,
            alert_app: true,
            log_vars: true,
            tls_stop_after_handshake: true,
            tls_bypass: false,
            stream_bypass: false,
            xff: None,
            device: None,
            timeouts: TimeoutTable::default(),
            replay_speed: 0.0,
            checksum: ChecksumMode::None,
            inline: false,
            host_block: None,
            exceptions: ExceptionPolicies::default(),
            profile_rules: false,
            drop_log: None,
            flow_log: FlowLog::default(),
            log_anomaly: false,
            log_anomaly_decode: false,
            log_anomaly_stream: false,
            log_files: false,
            file_store: None,
            detectors: Some(detectors::DetectorConfig::default()),
            peers: None,
            slice: None,
            ftp_expect: Some(expect::ExpectConfig::default()),
            rate_tracking: None,
            steering: Some(steering::SteeringConfig::default()),
        }
    }
}

/// `--slice K/N`: this process inspects only the packets whose dispatch
/// hash ([`packet_hash`]) falls in slice `index` of `count`, so that
/// `count` processes given the same input inspect every packet exactly
/// once between them (sensors that split one capture or one link).
///
/// The slice is taken from the hash's high 32 bits, the worker from the
/// whole hash modulo the worker count: the two choices are independent,
/// so the workers of a slice stay as balanced as without slicing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    pub index: u32,
    pub count: u32,
}

impl Slice {
    /// Parses `K/N` (`0 <= K < N`).
    pub fn parse(s: &str) -> Result<Slice, String> {
        let bad = || format!("slice '{s}': expected K/N with 0 <= K < N (e.g. 0/2)");
        let (k, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(format!("slice '{s}': N must be at least 1"));
        }
        if index >= count {
            return Err(format!(
                "slice '{s}': K must be below N (slices are numbered 0 to {})",
                count - 1
            ));
        }
        Ok(Slice { index, count })
    }

    /// The slice a dispatch hash belongs to.
    #[inline]
    pub fn of(hash: u64, count: u32) -> u32 {
        ((hash >> 32) % u64::from(count.max(1))) as u32
    }

    /// Whether a packet with this dispatch hash is inspected here.
    #[inline]
    pub fn owns(&self, hash: u64) -> bool {
        self.count <= 1 || Self::of(hash, self.count) == self.index
    }
}

impl std::fmt::Display for Slice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Totals of a run.
#[derive(Debug, Default, Clone)]
pub struct RunStats {
    pub workers: WorkerStats,
    /// The run was on one thread (`EngineConfig::single_thread`).
    pub single_thread: bool,
    /// Alerts written after thresholds.
    pub alerts_written: u64,
    pub alerts_suppressed: u64,
    pub packets_read: u64,
    pub bytes_read: u64,
    pub truncated_records: u64,
    /// Time of the last packet read (ns), for the final stats event.
    pub last_ts_ns: Option<i64>,
    pub wall: Duration,
    /// Per-worker packet counts (load balance).
    pub per_worker_pkts: Vec<u64>,
    /// Defragmentation counters (the reader reassembles).
    pub defrag: DefragStats,
    /// Device path counters, summed over workers (`None`: CPU run).
    pub device: Option<DeviceStats>,
    /// Host and ip-pair bits (`xbits`, `hostbits`).
    pub xbits: XbitStats,
    /// `tag` keyword tags (crate::tags).
    pub tags: tags::TagStats,
    /// `dataset` / `datarep` resolution.
    pub datasets: vigil_detect::DatasetStats,
    /// The built-in detectors (`None`: off).
    pub detectors: Option<detectors::DetectorStats>,
    /// Host-scoped events of other sensors merged in (`--slice` with a
    /// link).
    pub remote_events: u64,
    /// `--slice` of the run (`None`: every flow).
    pub slice: Option<Slice>,
    /// `--slice`: capture records left to other slices (raw packets and
    /// fragments; each is inspected by exactly one slice).
    pub slice_packets_skipped: u64,
    /// `--slice`: datagrams rebuilt from fragments that belong to another
    /// slice (every slice defragments everything).
    pub slice_datagrams_skipped: u64,
    /// `--slice`: tunnel packets whose own flow belongs to another slice.
    pub slice_tunnels_skipped: u64,
    /// The FTP expectation table (the reader keeps it).
    pub ftp_expect: expect::ExpectStats,
    /// The reader's flow steering (`steering`).
    pub steering: steering::SteeringStats,
}

/// Errors that end a run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Source(#[from] vigil_source::SourceError),
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
    #[error("a worker thread failed: {0}")]
    Worker(String),
}

/// Emptied report vectors waiting for reuse, per worker (see
/// [`run_offline`]).
const SPARE_REPORTS_PER_WORKER: usize = 4;
/// Largest report vector (in records) kept for reuse.
const SPARE_REPORT_CAPACITY: usize = 4096;

struct Report {
    worker: usize,
    upto: u64,
    alerts: Vec<AlertOut>,
}

/// Another sensor's host-scoped events (connection events and xbits
/// matches, in its input order) up to `upto` (its progress in input
/// order; `u64::MAX`: it finished, or was given up on).
#[derive(Debug)]
pub struct PeerReport {
    pub peer: usize,
    pub upto: u64,
    pub events: Vec<AlertOut>,
}

/// A link between sensors that split one capture with `--slice K/N`:
/// each publishes the events of the host and pair scopes it raises and
/// receives the others', so that every sensor's detectors and xbits see
/// all of them in input order. Alerts of the detectors are written by the
/// sensor that owns the source host ([`detectors::owner_of`]), xbits
/// alerts by the sensor that saw the packet.
pub trait PeerLink: Send + Sync {
    /// This sensor's slice and the number of slices.
    fn slice(&self) -> (u32, u32);
    /// Publishes this sensor's events (in input order) up to `upto`.
    fn publish(&self, events: &[AlertOut], upto: u64);
    /// Starts receiving: the other sensors' reports go to `deliver`
    /// (peer numbers `0..N-1`, this sensor excluded) until it returns
    /// false; a sensor that goes silent is given up on with a final
    /// report.
    fn subscribe(&self, deliver: Box<dyn FnMut(PeerReport) -> bool + Send>);
}

/// [`EngineConfig::peers`]: a shared [`PeerLink`].
#[derive(Clone)]
pub struct Peers(pub Arc<dyn PeerLink>);

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Peers{:?}", self.0.slice())
    }
}

/// Picks a worker for a frame: 5-tuple symmetric hash, or the address
/// pair for IP fragments (their ports are unknown until reassembly).
pub fn dispatch_hash(linktype: u32, data: &[u8]) -> u64 {
    packet_hash(&decode(linktype, data))
}

/// [`dispatch_hash`] of a decoded packet.
pub fn packet_hash(p: &Packet<'_>) -> u64 {
    match &p.ip {
        None => 0,
        Some(ip) if ip.fragment.is_some() => pair_hash(ip.src, ip.dst),
        Some(ip) => {
            let vlan = if p.vlan_count > 0 {
                p.vlan[p.vlan_count as usize - 1]
            } else {
                0
            };
            let (k, _) = FlowKey::new(ip.src, p.src_port(), ip.dst, p.dst_port(), ip.proto, vlan);
            flow_hash(&k)
        }
    }
}

/// Runs the whole offline pipeline over `source`, writing merged alerts to
/// `sink`. `progress(bytes_read, total_bytes)` is called now and then from
/// the reading thread.
pub fn run_offline(
    mut source: PcapSource,
    detect: Arc<DetectEngine>,
    cfg: &EngineConfig,
    sink: &mut (dyn AlertSink + Send),
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunStats, RunError> {
    let n = cfg.workers.max(1);
    if cfg.runs_single_thread() {
        return run_single(source, detect, cfg, sink, progress);
    }
    let start = Instant::now();
    let pool = BatchPool::with_packets(cfg.batch_packets.max(1));
    let (report_tx, report_rx) = bounded::<Report>(n * cfg.queue_depth.max(1) * 2);
    // Emptied report vectors go back from the merge to the workers, so
    // that a worker's records of a batch land in room already allocated
    // (growing a fresh vector copied every record a few times over).
    let (spare_tx, spare_rx) = bounded::<Vec<AlertOut>>(SPARE_REPORTS_PER_WORKER * n);
    let mut batch_txs: Vec<Sender<Batch>> = Vec::with_capacity(n);
    let wcfg = worker_config(cfg, n);
    let formats: Vec<Option<WorkerFormat>> = (0..n).map(|_| worker_format(cfg, n, sink)).collect();
    std::thread::scope(|scope| -> Result<RunStats, RunError> {
        let mut handles = Vec::with_capacity(n);
        for (w, format) in formats.into_iter().enumerate() {
            let (tx, rx) = bounded::<Batch>(cfg.queue_depth.max(1));
            batch_txs.push(tx);
            let detect = detect.clone();
            let report_tx = report_tx.clone();
            let pool = pool.clone();
            let wcfg = wcfg.clone();
            let device = cfg.device.clone();
            let spare = spare_rx.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("vigil-w{w}"))
                    .spawn_scoped(scope, move || {
                        let worker = Worker::new(detect, wcfg);
                        let lanes = Lanes {
                            id: w,
                            rx,
                            tx: report_tx,
                            pool,
                            spare: &spare,
                            format,
                        };
                        match device {
                            None => Ok((worker_loop(worker, lanes), None)),
                            Some(d) => {
                                device_worker_loop(worker, lanes, &d).map(|(s, d)| (s, Some(d)))
                            }
                        }
                    })
                    .map_err(RunError::Output)?,
            );
        }
        // Other sensors' events come in as reports of workers n.. .
        let merge_peers = cfg.peers.clone();
        if let Some(p) = &merge_peers {
            let tx = report_tx.clone();
            p.0.subscribe(Box::new(move |r: PeerReport| {
                tx.send(Report {
                    worker: n + r.peer,
                    upto: r.upto,
                    alerts: r.events,
                })
                .is_ok()
            }));
        }
        drop(report_tx);
        drop(spare_rx);
        let merge_detect = detect.clone();
        let merge_detectors = cfg.detectors.clone();
        let merger = std::thread::Builder::new()
            .name("vigil-merge".into())
            .spawn_scoped(scope, move || {
                merge_loop(
                    n,
                    report_rx,
                    &spare_tx,
                    &merge_detect,
                    merge_detectors.as_ref(),
                    merge_peers.as_ref(),
                    sink,
                )
            })
            .map_err(RunError::Output)?;

        let mut send = |w: usize, b: Batch| -> Result<(), RunError> {
            batch_txs[w]
                .send(b)
                .map_err(|_| RunError::Worker(format!("worker {w} stopped early")))
        };
        let read = read_loop(&mut source, n, &mut send, &pool, cfg, progress);
        drop(batch_txs);
        let mut totals = RunStats::default();
        let mut worker_failed = None;
        for h in handles {
            match h.join() {
                Ok(Ok((s, d))) => {
                    totals.per_worker_pkts.push(s.pkts);
                    totals.workers.add(&s);
                    if let Some(d) = d {
                        totals
                            .device
                            .get_or_insert_with(DeviceStats::default)
                            .add(&d);
                    }
                }
                Ok(Err(e)) => worker_failed = Some(e),
                Err(_) => worker_failed = Some("panicked".to_string()),
            }
        }
        let merged = merger
            .join()
            .map_err(|_| RunError::Worker("merge thread panicked".into()))?;
        let read = read?;
        if let Some(w) = worker_failed {
            return Err(RunError::Worker(w));
        }
        let merged = merged?;
        add_totals(&mut totals, read, merged, &source, &detect, cfg);
        totals.wall = start.elapsed();
        Ok(totals)
    })
}

/// `run_offline` on the calling thread alone (`--runmode single`): each
/// batch the reader fills is inspected by the one worker and its records
/// written by the merge before the reader goes on. The same steps in the
/// same order as the pipeline with one worker, so the output is the same.
fn run_single(
    mut source: PcapSource,
    detect: Arc<DetectEngine>,
    cfg: &EngineConfig,
    sink: &mut (dyn AlertSink + Send),
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunStats, RunError> {
    let start = Instant::now();
    let pool = BatchPool::with_packets(cfg.batch_packets.max(1));
    let mut worker = Worker::new(detect.clone(), worker_config(cfg, 1));
    let mut format = worker_format(cfg, 1, sink);
    let mut merge = Merge::new(1, &detect, cfg.detectors.as_ref(), None, sink);
    let mut alerts = Vec::new();
    let mut send = |_: usize, b: Batch| -> Result<(), RunError> {
        worker.process(&b, &mut alerts);
        let upto = b.upto;
        pool.put(b);
        if let Some(f) = &mut format {
            f.apply(&mut alerts);
        }
        merge.take(0, upto, &mut alerts)
    };
    let read = read_loop(&mut source, 1, &mut send, &pool, cfg, progress)?;
    // End of input: flows end and what is left of their streams is
    // inspected; those records sort after every packet's.
    let (stats, mut last) = worker.finish();
    if let Some(f) = &mut format {
        f.apply(&mut last);
    }
    merge.take(0, u64::MAX, &mut last)?;
    let merged = merge.finish()?;
    let mut totals = RunStats {
        single_thread: true,
        ..RunStats::default()
    };
    totals.per_worker_pkts.push(stats.pkts);
    totals.workers.add(&stats);
    add_totals(&mut totals, read, merged, &source, &detect, cfg);
    totals.wall = start.elapsed();
    Ok(totals)
}

/// What the reader and the merge counted, into a run's totals.
fn add_totals(
    totals: &mut RunStats,
    read: ReadTotals,
    merged: MergeTotals,
    source: &PcapSource,
    detect: &DetectEngine,
    cfg: &EngineConfig,
) {
    totals.last_ts_ns = read.last_ts;
    totals.defrag = read.defrag;
    totals.slice = cfg.slice;
    totals.slice_packets_skipped = read.slice_packets_skipped;
    totals.slice_datagrams_skipped = read.slice_datagrams_skipped;
    totals.slice_tunnels_skipped = read.slice_tunnels_skipped;
    totals.ftp_expect = read.ftp_expect;
    totals.steering = read.steering;
    totals.xbits = merged.xbits;
    totals.tags = merged.tags;
    totals.datasets = detect.datasets.lock().map(|d| d.stats).unwrap_or_default();
    totals.detectors = merged.detectors;
    totals.remote_events = merged.remote_events;
    totals.alerts_written = merged.written;
    totals.alerts_suppressed = merged.suppressed;
    totals.packets_read = read.packets;
    totals.bytes_read = read.bytes;
    totals.truncated_records = source.truncated_records();
}

/// Each worker's settings when `n` workers share `cfg`'s memory caps.
pub(crate) fn worker_config(cfg: &EngineConfig, n: usize) -> WorkerConfig {
    let mut stream = cfg.stream.clone();
    // Inline, a packet is inspected with the stream data it completes
    // before it is let through (Suricata's stream.inline).
    stream.inline |= cfg.inline;
    WorkerConfig {
        rate_tracking: cfg.rate_tracking,
        max_flows: (cfg.max_flows / n).max(1024),
        log_payload: cfg.log_payload,
        log_packet: cfg.log_packet,
        stream,
        stream_memcap: (cfg.stream_memcap / n).max(64 << 10),
        payload_max: cfg.payload_max,
        app: cfg.app.clone(),
        log_tx: cfg.log_tx,
        log_tx_types: cfg.log_tx_types.clone(),
        flow_log: cfg.flow_log,
        log_anomaly: cfg.log_anomaly,
        log_anomaly_decode: cfg.log_anomaly_decode,
        log_anomaly_stream: cfg.log_anomaly_stream,
        log_files: cfg.log_files,
        file_store: cfg.file_store.clone(),
        alert_app: cfg.alert_app,
        log_vars: cfg.log_vars,
        xff: cfg.xff.clone(),
        tls_stop_after_handshake: cfg.tls_stop_after_handshake,
        tls_bypass: cfg.tls_bypass,
        stream_bypass: cfg.stream_bypass,
        timeouts: cfg.timeouts,
        checksum: cfg.checksum,
        inline: cfg.inline,
        // One table for all workers of the run.
        hosts: cfg
            .host_block
            .clone()
            .filter(|h| !h.classtypes.is_empty())
            .map(|h| Arc::new(hosts::HostTable::new(h))),
        exceptions: cfg.exceptions,
        drop_log: cfg.drop_log.filter(|_| cfg.inline),
        profile_rules: cfg.profile_rules,
        conn_events: cfg.detectors.as_ref().is_some_and(|d| d.any()),
        rate_filters: cfg
            .inline
            .then(|| Arc::new(std::sync::Mutex::new(ThresholdTracker::default()))),
    }
}

/// Feeds a fragment to the defragmenter: the findings about it
/// ([`batch::DEFRAG_OVERLAP`] ...) and whether it completed a datagram,
/// which is then in `datagram` (the first fragment's link layers and the
/// rebuilt IP packet, Suricata's layout). Not a fragment: `(0, false)`.
pub(crate) fn defrag_packet(
    d: &mut Defragmenter,
    p: &Packet<'_>,
    data: &[u8],
    ts_ns: i64,
    datagram: &mut Vec<u8>,
) -> (u8, bool) {
    let Some(ip) = p.ip.as_ref() else {
        return (0, false);
    };
    let Some(frag) = &ip.fragment else {
        return (0, false);
    };
    let ip_start = if ip.version == 4 {
        ip.header.start
    } else {
        ip.fixed_header.start
    };
    let header = if ip.version == 4 {
        data.get(ip.header.clone())
    } else {
        data.get(ip.fixed_header.start..frag.data.start.saturating_sub(8))
    };
    let next = if ip.version == 4 {
        Some(ip.proto)
    } else {
        data.get(frag.data.start.saturating_sub(8)).copied()
    };
    let (Some(header), Some(next), Some(fdata), Some(link)) = (
        header,
        next,
        data.get(frag.data.clone()),
        data.get(..ip_start),
    ) else {
        return (0, false);
    };
    let vlan = p.vlans().last().copied().unwrap_or(0);
    let r = d.insert(
        &Fragment {
            src: ip.src,
            dst: ip.dst,
            id: frag.id,
            proto: next,
            vlan,
            offset: frag.offset,
            more: frag.more_fragments,
            link,
            header,
            data: fdata,
            ts_ns,
        },
        datagram,
    );
    let mut flags = 0u8;
    if r.overlap {
        flags |= batch::DEFRAG_OVERLAP;
    }
    if r.too_large {
        flags |= batch::DEFRAG_TOO_LARGE;
    }
    if r.ignored && !r.too_large {
        flags |= batch::DEFRAG_IGNORED;
    }
    if r.memcap {
        flags |= batch::DEFRAG_MEMCAP;
    }
    (flags, r.reassembled)
}

/// What the rule's threshold, detection filter and rate filter make of
/// `a`: `None` when it is not written (held back by the threshold, or a
/// rate filter's new action is `pass`), else `Some(action)` with the
/// action a rate filter gave it (`None`: the rule's own). Applied where
/// alerts meet in input order: the offline merge, the live output.
pub(crate) fn threshold_admit(
    t: &mut ThresholdTracker,
    r: &CompiledRule,
    a: &AlertOut,
) -> Option<Option<vigil_rules::Action>> {
    if r.threshold.is_none() && r.detection_filter.is_none() && r.rate_filter.is_none() {
        return Some(None);
    }
    let key = AlertKey {
        src: a.src,
        dst: a.dst,
        flow_id: a.flow_id.unwrap_or(0),
        ts_ns: a.ts_ns,
        sp: a.sp.unwrap_or(0),
        dp: a.dp.unwrap_or(0),
    };
    if (r.threshold.is_some() || r.detection_filter.is_some())
        && !t.allow(
            a.rule,
            r.threshold.as_ref(),
            r.detection_filter.as_ref(),
            &key,
        )
    {
        return None;
    }
    match r
        .rate_filter
        .as_ref()
        .and_then(|f| t.rate_filter(a.rule, f, &key))
    {
        // Suricata: a pass action ends the packet's alerts here.
        Some(vigil_rules::Action::Pass) => None,
        action => Some(action),
    }
}

/// Writes an alert that [`threshold_admit`] let through.
pub(crate) fn write_alert<S: AlertSink + ?Sized>(
    sink: &mut S,
    a: &AlertOut,
    r: &CompiledRule,
    action: Option<vigil_rules::Action>,
) -> std::io::Result<()> {
    match action {
        None => sink.alert(a, r),
        Some(action) => sink.alert_rate_filtered(a, r, action),
    }
}

/// The FTP expectation table of a reader (`None` when off or without
/// the app layer).
pub(crate) fn expect_table(cfg: &EngineConfig) -> Option<expect::Expectations> {
    let c = cfg.ftp_expect.filter(|_| cfg.app.is_some())?;
    Some(expect::Expectations::new(expect::ExpectConfig {
        midstream: cfg.stream.midstream,
        ..c
    }))
}

/// What the reader counted.
struct ReadTotals {
    packets: u64,
    bytes: u64,
    last_ts: Option<i64>,
    defrag: DefragStats,
    slice_packets_skipped: u64,
    slice_datagrams_skipped: u64,
    slice_tunnels_skipped: u64,
    ftp_expect: expect::ExpectStats,
    steering: steering::SteeringStats,
}

/// Reads the capture, decodes, defragments and steers each packet to its
/// worker's batch; a full batch goes to `send` (the worker's channel, or
/// with `--runmode single` the worker and the merge in turn).
fn read_loop(
    source: &mut PcapSource,
    n: usize,
    send: &mut dyn FnMut(usize, Batch) -> Result<(), RunError>,
    pool: &BatchPool,
    cfg: &EngineConfig,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ReadTotals, RunError> {
    let slice = cfg.slice.filter(|s| s.count > 1);
    let mut slice_packets_skipped = 0u64;
    let mut slice_datagrams_skipped = 0u64;
    let mut slice_tunnels_skipped = 0u64;
    let mut pending: Vec<Batch> = (0..n).map(|_| pool.get()).collect();
    let mut packets = 0u64;
    let mut bytes = 0u64;
    let mut last = 0u64;
    let mut last_ts = None;
    let batch_packets = cfg.batch_packets.max(1);
    let mut defrag = cfg.defrag.clone().map(Defragmenter::new);
    // FTP data connections: single-owner state fed in input order, as
    // defragmentation (see `expect`).
    let mut ftp_expect = expect_table(cfg);
    // Flow hash -> worker: new flows to the least loaded worker.
    let mut steer = steering::Steering::new(n, cfg.steering);
    // The workers of this frame's tunnel pseudo-packets: (depth, worker).
    let mut tunnel_to: Vec<(u8, usize)> = Vec::new();
    let mut datagram = Vec::new();
    // The tunnel pseudo-packets of the frame at hand: (depth, flow hash).
    let mut tunnels: Vec<(u8, u64)> = Vec::new();
    let mut tunnel_pkts: Vec<Packet<'static>> = Vec::new();
    let mut clock_sec: Option<i64> = None;
    // Every `tick` packets all workers hear how far the input has got,
    // even those with nothing to do, so the merge never waits on them.
    let tick = (batch_packets * n) as u64;
    // Replay pacing: (first packet's time, when it was read).
    let mut origin: Option<(i64, Instant)> = None;
    while let Some(pkt) = source.next_packet()? {
        packets += 1;
        bytes += pkt.data.len() as u64;
        let ts_ns = pkt.ts.secs.saturating_mul(1_000_000_000) + pkt.ts.nanos as i64;
        if cfg.replay_speed > 0.0 {
            let speed = cfg.replay_speed;
            let (t0, i0) = *origin.get_or_insert((ts_ns, Instant::now()));
            let due = i0 + Duration::from_secs_f64((ts_ns - t0).max(0) as f64 / 1e9 / speed);
            loop {
                let now = Instant::now();
                // The replay clock: packet time that has passed so far.
                let clock_ns = t0 + ((now - i0).as_secs_f64() * speed * 1e9) as i64;
                let sec = clock_ns.min(ts_ns).div_euclid(1_000_000_000);
                if clock_sec.is_some_and(|c| sec > c) {
                    // A quiet second of the replay: workers time their
                    // flows out now, not when the next packet comes.
                    for (w, slot) in pending.iter_mut().enumerate() {
                        slot.push_marker(pkt.index, clock_ns.min(ts_ns));
                        let mut b = std::mem::replace(slot, pool.get());
                        b.upto = last;
                        send(w, b)?;
                    }
                    clock_sec = Some(sec);
                }
                if now >= due {
                    break;
                }
                if pending.iter().any(|b| !b.is_empty()) {
                    for (w, slot) in pending.iter_mut().enumerate() {
                        let mut b = std::mem::replace(slot, pool.get());
                        b.upto = last;
                        send(w, b)?;
                    }
                }
                std::thread::sleep((due - now).min(Duration::from_millis(50)));
            }
        }
        last_ts = Some(ts_ns);
        last = pkt.index;
        // Packet time entered a new second: every worker times its flows
        // out here, before this packet.
        let sec = ts_ns.div_euclid(1_000_000_000);
        match clock_sec {
            Some(c) if sec > c => {
                for b in pending.iter_mut() {
                    b.push_marker(pkt.index, ts_ns);
                }
                clock_sec = Some(sec);
            }
            None => clock_sec = Some(sec),
            _ => {}
        }
        // Named `frame` from the start: a move into a new name was a copy
        // of the whole decode (416 bytes) per packet.
        let frame = decode(pkt.linktype, pkt.data);
        let hash = if n == 1 && slice.is_none() {
            0
        } else {
            packet_hash(&frame)
        };
        // Tunnel pseudo-packets, one per tunnel in the frame, each to the
        // worker of its own flow; defragmentation works on the innermost.
        let mut inner = None;
        tunnels.clear();
        tunnel_pkts.clear();
        if frame.inner_tunnel {
            let mut depth = 0u8;
            loop {
                depth += 1;
                let q = vigil_wire::decode_at(pkt.linktype, pkt.data, depth);
                let h = if n == 1 && slice.is_none() {
                    0
                } else {
                    packet_hash(&q)
                };
                let more = q.inner_tunnel;
                tunnels.push((depth, h));
                tunnel_pkts.push(q.clone().rebind(&[]));
                inner = Some(q);
                if !more {
                    break;
                }
            }
        }
        let p = inner.as_ref().unwrap_or(&frame);
        let ftp_data = ftp_expect.as_mut().and_then(|t| t.observe(p, ts_ns));
        let deepest = tunnels.last().map(|&(d, _)| d);
        // `--slice`: a packet of another slice's flow (a fragment: of
        // another slice's address pair) is not inspected here.
        let w = if slice.is_some_and(|s| !s.owns(hash)) {
            slice_packets_skipped += 1;
            None
        } else {
            Some(steer.worker(hash, ts_ns))
        };
        // Defragmentation happens here, before dispatch, so that the
        // rebuilt datagram goes to the worker of its own flow (like a
        // NIC's fanout with defragmentation). It is single-owner state
        // fed in input order: the same for any worker count. With
        // `--slice` every slice feeds it every fragment, so that each
        // rebuilds every datagram and keeps those of its own flows.
        let (flags, rebuilt) = match defrag.as_mut() {
            Some(d) => defrag_packet(d, p, pkt.data, ts_ns, &mut datagram),
            None => (0, false),
        };
        // The rebuilt packet keeps the first fragment's link layers and
        // link type, and goes to the worker of its own flow.
        let rebuilt_to = if rebuilt {
            let rh = if n == 1 && slice.is_none() {
                0
            } else {
                packet_hash(&decode(pkt.linktype, &datagram))
            };
            if slice.is_some_and(|s| !s.owns(rh)) {
                slice_datagrams_skipped += 1;
                None
            } else {
                Some((steer.worker(rh, ts_ns), pkt.linktype))
            }
        } else {
            None
        };
        if let Some(w) = w {
            pending[w].push_frame(
                pkt.index,
                ts_ns,
                pkt.linktype,
                pkt.data,
                pkt.lent,
                pkt.orig_len,
                flags,
                0,
            );
            // The worker takes this decode rather than repeating it.
            pending[w].tag_decoded(frame);
        }
        tunnel_to.clear();
        for (&(depth, h), q) in tunnels.iter().zip(tunnel_pkts.drain(..)) {
            if slice.is_some_and(|s| !s.owns(h)) {
                slice_tunnels_skipped += 1;
                continue;
            }
            let tw = steer.worker(h, ts_ns);
            tunnel_to.push((depth, tw));
            pending[tw].push_frame(
                pkt.index,
                ts_ns,
                pkt.linktype,
                pkt.data,
                pkt.lent,
                pkt.orig_len,
                0,
                depth,
            );
            pending[tw].tag_decoded(q);
        }
        // The record of the packet that opens an expected FTP data
        // connection (the innermost one of a tunnel) carries it.
        if let Some(info) = ftp_data {
            match (deepest, tunnel_to.last()) {
                (None, _) => {
                    if let Some(w) = w {
                        pending[w].tag_ftp_data(info);
                    }
                }
                (Some(d), Some(&(td, tw))) if td == d => {
                    pending[tw].tag_ftp_data(info);
                }
                _ => {}
            }
        }
        if let Some((rw, lt)) = rebuilt_to {
            pending[rw].push_record(
                pkt.index,
                ts_ns,
                lt,
                &datagram,
                datagram.len() as u32,
                true,
                0,
            );
        }
        // Send only after both records are in, so that no worker reports
        // this index as done before it has the rebuilt datagram.
        for ww in w
            .into_iter()
            .chain(rebuilt_to.map(|r| r.0))
            .chain(tunnel_to.iter().map(|&(_, tw)| tw))
        {
            if pending[ww].len() >= batch_packets {
                let mut b = std::mem::replace(&mut pending[ww], pool.get());
                b.upto = last;
                send(ww, b)?;
            }
        }
        steer.tick(ts_ns);
        if packets.is_multiple_of(tick) {
            for (w, slot) in pending.iter_mut().enumerate() {
                let mut b = std::mem::replace(slot, pool.get());
                b.upto = last;
                send(w, b)?;
            }
            progress(source.bytes_read(), source.total_bytes());
        }
    }
    for (w, mut b) in pending.into_iter().enumerate() {
        b.upto = last;
        send(w, b)?;
    }
    progress(source.bytes_read(), source.total_bytes());
    Ok(ReadTotals {
        packets,
        bytes,
        last_ts,
        defrag: defrag.map(|d| d.stats).unwrap_or_default(),
        slice_packets_skipped,
        slice_datagrams_skipped,
        slice_tunnels_skipped,
        ftp_expect: ftp_expect.map(|t| t.stats).unwrap_or_default(),
        steering: steer.stats,
    })
}

/// A worker thread's channels: batches in, reports out, emptied report
/// vectors back, and its transaction record formatter, if it formats.
struct Lanes<'a> {
    id: usize,
    rx: Receiver<Batch>,
    tx: Sender<Report>,
    pool: BatchPool,
    spare: &'a Receiver<Vec<AlertOut>>,
    format: Option<WorkerFormat>,
}

impl Lanes<'_> {
    /// A vector for a batch's records: an emptied one back from the
    /// merge when there is one.
    fn alerts(&self) -> Vec<AlertOut> {
        self.spare.try_recv().unwrap_or_default()
    }

    /// Sends the records of the packets up to `upto` to the merge,
    /// formatted first when this worker formats; false once the merge has
    /// stopped.
    fn report(&mut self, upto: u64, mut alerts: Vec<AlertOut>) -> bool {
        if let Some(f) = &mut self.format {
            f.apply(&mut alerts);
        }
        self.tx
            .send(Report {
                worker: self.id,
                upto,
                alerts,
            })
            .is_ok()
    }
}

fn worker_loop(mut worker: Worker, mut lanes: Lanes<'_>) -> WorkerStats {
    while let Ok(batch) = lanes.rx.recv() {
        let mut alerts = lanes.alerts();
        worker.process(&batch, &mut alerts);
        let upto = batch.upto;
        lanes.pool.put(batch);
        if !lanes.report(upto, alerts) {
            break;
        }
    }
    // End of input: flows end and what is left of their streams is
    // inspected; those alerts sort after every packet's.
    let (stats, alerts) = worker.finish();
    lanes.report(u64::MAX, alerts);
    stats
}

/// [`worker_loop`] with the prefilter on the device: batch N+1 is decoded
/// and submitted while the device works on batch N; packet batches are
/// completed (pass 2) in arrival order once their device results are back,
/// or when more than `max_pending` wait. Filling device batches are
/// launched at their time limit even when no input arrives.
fn device_worker_loop(
    mut worker: Worker,
    mut lanes: Lanes<'_>,
    setup: &DeviceSetup,
) -> Result<(WorkerStats, DeviceStats), String> {
    use crossbeam_channel::RecvTimeoutError;
    let id = lanes.id;
    let err = |e: vigil_opencl::Error| format!("worker {id}: OpenCL: {e}");
    let mut lane =
        vigil_opencl::Lane::new(setup.matcher.clone(), setup.lane.clone()).map_err(err)?;
    let mut pending: VecDeque<PendingBatch> = VecDeque::new();
    let mut open = true;
    let mut stopped = false;
    while !stopped && (open || !pending.is_empty()) {
        lane.poll().map_err(err)?;
        while let Some(front) = pending.front() {
            let force = !open || pending.len() > setup.max_pending.max(1);
            if !force && !front.ready(&lane) {
                break;
            }
            let p = pending.pop_front().expect("front exists");
            let upto = p.batch.upto;
            let mut alerts = lanes.alerts();
            let batch = worker
                .device_complete(&mut lane, p, &mut alerts)
                .map_err(err)?;
            lanes.pool.put(batch);
            if !lanes.report(upto, alerts) {
                stopped = true;
                break;
            }
        }
        if !open || stopped {
            continue;
        }
        let msg = match lane.deadline() {
            Some(d) => lanes.rx.recv_deadline(d),
            // Launched batches finish on their own: look again soon.
            None if lane.in_flight() > 0 => lanes.rx.recv_timeout(Duration::from_micros(500)),
            None => lanes.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match msg {
            Ok(b) => pending.push_back(worker.device_submit(&mut lane, b).map_err(err)?),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                open = false;
                lane.flush().map_err(err)?;
            }
        }
        lane.launch_if_due(Instant::now()).map_err(err)?;
    }
    let (stats, alerts) = worker.finish();
    lanes.report(u64::MAX, alerts);
    Ok((stats, lane.stats.clone()))
}

fn merge_loop(
    n: usize,
    rx: Receiver<Report>,
    spare: &Sender<Vec<AlertOut>>,
    detect: &DetectEngine,
    detectors: Option<&detectors::DetectorConfig>,
    peers: Option<&Peers>,
    sink: &mut (dyn AlertSink + Send),
) -> Result<MergeTotals, RunError> {
    let mut merge = Merge::new(n, detect, detectors, peers, sink);
    let mut result = Ok(());
    for rep in rx.iter() {
        if result.is_err() {
            continue; // keep draining so workers are not blocked
        }
        let mut alerts = rep.alerts;
        result = merge.take(rep.worker, rep.upto, &mut alerts);
        // Back to the workers for reuse, unless the channel is full or
        // the vector grew past what a batch usually needs (a flush at the
        // end of input); dropped then.
        if alerts.capacity() <= SPARE_REPORT_CAPACITY {
            let _ = spare.try_send(alerts);
        }
    }
    result?;
    merge.finish()
}

/// The output side of a run: the workers' (and linked sensors') records
/// put back in input order, cross-flow state applied (thresholds, xbits,
/// tags, detectors) and written to the sink. Fed by the merge thread, or
/// in turn with reading and detection by the one thread of
/// `--runmode single`.
struct Merge<'a> {
    n: usize,
    peers: Option<&'a Peers>,
    // Queues 0..n are this process's workers, n.. the other sensors'
    // host-scoped events (`--slice` with a link): one order for all.
    queues: Vec<VecDeque<AlertOut>>,
    marks: Vec<u64>,
    // This sensor's host-scoped events waiting to be published in order.
    to_publish: Vec<VecDeque<AlertOut>>,
    published_upto: u64,
    out: MergeOut<'a>,
}

/// What the merge writes with: the sink and the cross-flow state.
struct MergeOut<'a> {
    n: usize,
    slice: Option<(u32, u32)>,
    detect: &'a DetectEngine,
    sink: &'a mut (dyn AlertSink + Send),
    thresholds: ThresholdTracker,
    xbits: XbitTable,
    tags: tags::TagTable,
    dets: Option<detectors::Detectors>,
    det_alerts: Vec<detectors::DetectorAlert>,
    written: u64,
    suppressed: u64,
    remote_events: u64,
}

impl<'a> Merge<'a> {
    fn new(
        n: usize,
        detect: &'a DetectEngine,
        detectors: Option<&detectors::DetectorConfig>,
        peers: Option<&'a Peers>,
        sink: &'a mut (dyn AlertSink + Send),
    ) -> Self {
        let slice = peers.map(|p| p.0.slice());
        let total = n + slice.map_or(0, |(_, k)| k.saturating_sub(1) as usize);
        Merge {
            n,
            peers,
            queues: (0..total).map(|_| VecDeque::new()).collect(),
            marks: vec![0u64; total],
            to_publish: (0..n).map(|_| VecDeque::new()).collect(),
            published_upto: 0,
            out: MergeOut {
                n,
                slice,
                detect,
                sink,
                thresholds: ThresholdTracker::default(),
                xbits: XbitTable::default(),
                tags: tags::TagTable::default(),
                dets: detectors.filter(|d| d.any()).map(detectors::Detectors::new),
                det_alerts: Vec::new(),
                written: 0,
                suppressed: 0,
                remote_events: 0,
            },
        }
    }

    /// Takes queue `w`'s records of the packets up to `upto` (emptying
    /// `alerts`) and writes every record that is now in order.
    fn take(&mut self, w: usize, upto: u64, alerts: &mut Vec<AlertOut>) -> Result<(), RunError> {
        let n = self.n;
        if let (Some(p), true) = (self.peers, w < n) {
            self.to_publish[w].extend(
                alerts
                    .iter()
                    .filter(|a| matches!(a.kind, OutKind::Conn(_) | OutKind::Xbits))
                    .cloned(),
            );
            let local = self.marks[..n]
                .iter()
                .enumerate()
                .map(|(i, m)| if i == w { (*m).max(upto) } else { *m })
                .min()
                .unwrap_or(0);
            if local > self.published_upto {
                let mut batch = Vec::new();
                drain_ordered(&mut self.to_publish, local, &mut |_, a| {
                    batch.push(a.clone());
                    Ok(())
                })?;
                p.0.publish(&batch, local);
                self.published_upto = local;
            }
        }
        self.marks[w] = self.marks[w].max(upto);
        self.queues[w].extend(alerts.drain(..));
        let safe = *self.marks.iter().min().expect("at least one worker");
        let out = &mut self.out;
        drain_ordered(&mut self.queues, safe, &mut |w, a| out.emit(w, a))
    }

    /// Writes what is left, at the end of input.
    fn finish(mut self) -> Result<MergeTotals, RunError> {
        let out = &mut self.out;
        drain_ordered(&mut self.queues, u64::MAX, &mut |w, a| out.emit(w, a))?;
        let o = self.out;
        Ok(MergeTotals {
            written: o.written,
            suppressed: o.suppressed,
            xbits: o.xbits.stats,
            tags: o.tags.stats,
            detectors: o.dets.map(|d| d.stats),
            remote_events: o.remote_events,
        })
    }
}

impl MergeOut<'_> {
    /// Writes one record of queue `w`, in output order.
    fn emit(&mut self, w: usize, a: &AlertOut) -> Result<(), RunError> {
        let remote = w >= self.n;
        self.remote_events += u64::from(remote);
        let detect = self.detect;
        match a.kind {
            OutKind::Conn(k) => {
                if let Some(d) = self.dets.as_mut() {
                    self.written += detector_alerts(
                        d,
                        k,
                        a,
                        &mut self.det_alerts,
                        &mut *self.sink,
                        self.slice,
                    )?;
                }
                return Ok(());
            }
            _ if remote => {
                // Another sensor's xbits match: its effects apply here
                // too; the alert is that sensor's.
                // (Dataset values do not travel between sensors: each
                // sensor's sets see its own traffic.)
                if a.kind == OutKind::Xbits {
                    if let Some(r) = detect
                        .rules
                        .get(a.rule as usize)
                        .filter(|r| !r.xbits.is_empty())
                    {
                        self.xbits.resolve(&r.xbits, a.src, a.dst, a.ts_ns);
                    }
                }
                return Ok(());
            }
            OutKind::TxLog => {
                match &a.line {
                    Some(line) => self.sink.tx_formatted(line)?,
                    None => self.sink.tx_log(a)?,
                }
                return Ok(());
            }
            OutKind::Drop => {
                return Ok(self.sink.drop_log(a, detect.rules.get(a.rule as usize))?)
            }
            OutKind::Tag => {
                if self.tags.on_packet(a) {
                    self.sink.tagged_packet(a)?;
                }
                return Ok(());
            }
            OutKind::Xbits => {
                if !xbits_alert(&mut self.xbits, detect, &detect.rules[a.rule as usize], a) {
                    return Ok(());
                }
            }
            OutKind::Alert => {}
        }
        let r = &detect.rules[a.rule as usize];
        let Some(action) = threshold_admit(&mut self.thresholds, r, a) else {
            self.suppressed += 1;
            return Ok(());
        };
        self.written += 1;
        if let Some(t) = &r.tag {
            self.tags.on_alert(t, r.gid, r.sid, a);
        }
        write_alert(&mut *self.sink, a, r, action)?;
        Ok(())
    }
}

/// Emits the queued items whose packet index is at most `upto`, in output
/// order (packet index, phase, ended flow). An order key belongs to
/// exactly one queue (a packet, a rebuilt datagram or a flow is on one
/// worker, and on one sensor), so ties cannot span queues and a queue's
/// own order is kept.
fn drain_ordered(
    queues: &mut [VecDeque<AlertOut>],
    upto: u64,
    emit: &mut dyn FnMut(usize, &AlertOut) -> Result<(), RunError>,
) -> Result<(), RunError> {
    loop {
        let mut best: Option<(AlertOrder, usize)> = None;
        for (w, q) in queues.iter().enumerate() {
            if let Some(a) = q.front() {
                if a.order.0 <= upto && best.is_none_or(|(o, _)| a.order < o) {
                    best = Some((a.order, w));
                }
            }
        }
        let Some((key, w)) = best else { return Ok(()) };
        while queues[w].front().is_some_and(|a| a.order == key) {
            let a = queues[w].pop_front().expect("front exists");
            emit(w, &a)?;
        }
    }
}

/// What the merge counted.
struct MergeTotals {
    written: u64,
    suppressed: u64,
    xbits: XbitStats,
    tags: tags::TagStats,
    detectors: Option<detectors::DetectorStats>,
    /// Events of other sensors merged in.
    remote_events: u64,
}

/// Feeds a connection event to the detectors and writes the alerts it
/// raises (on the event's packet or flow, with the detector's rule).
/// With linked sensors (`slice`: this one and their number) every sensor
/// counts every event and the owner of the source host writes the
/// alert. Returns how many were written.
pub(crate) fn detector_alerts<S: AlertSink + ?Sized>(
    d: &mut detectors::Detectors,
    kind: detectors::ConnKind,
    a: &AlertOut,
    buf: &mut Vec<detectors::DetectorAlert>,
    sink: &mut S,
    slice: Option<(u32, u32)>,
) -> std::io::Result<u64> {
    buf.clear();
    d.on_event(kind, a, buf);
    if slice.is_some_and(|(k, n)| detectors::owner_of(a.src, n) != k) {
        return Ok(0);
    }
    for da in buf.iter() {
        let mut out = a.clone();
        out.kind = OutKind::Alert;
        sink.alert(&out, &detectors::detector_rule(da))?;
    }
    Ok(buf.len() as u64)
}

/// Resolves an [`OutKind::Xbits`] event against the host and pair bits
/// and the datasets: whether the rule matched after all and alerts (its
/// effects applied). The rule's xbits first, then its dataset keywords
/// (not run when an xbits test failed).
pub(crate) fn xbits_alert(
    t: &mut XbitTable,
    detect: &DetectEngine,
    r: &CompiledRule,
    a: &AlertOut,
) -> bool {
    if !r.xbits.is_empty() && !t.resolve(&r.xbits, a.src, a.dst, a.ts_ns) {
        return false;
    }
    if !r.datasets.is_empty() {
        let mut ds = detect
            .datasets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !ds.resolve(&r.datasets, a.datasets.as_deref().unwrap_or(&[])) {
            return false;
        }
    }
    !r.noalert && !r.suppressed(a.src, a.dst)
}

#[cfg(test)]
mod tests {
    use super::Slice;

    #[test]
    fn slice_parse_and_ownership() {
        assert_eq!(Slice::parse("1/3"), Ok(Slice { index: 1, count: 3 }));
        assert_eq!(
            Slice::parse(" 0 / 1 ").map(|s| s.to_string()).as_deref(),
            Ok("0/1")
        );
        for bad in ["3/3", "0/0", "1", "-1/2", "a/b", "1/2/3", ""] {
            assert!(Slice::parse(bad).is_err(), "{bad}");
        }
        // Every hash has exactly one owner among the slices of N, and the
        // slice does not follow the worker choice (hash % workers).
        for n in 1..6u32 {
            let slices: Vec<Slice> = (0..n).map(|index| Slice { index, count: n }).collect();
            let mut per_worker = [[0u32; 4]; 6];
            for i in 0..4000u64 {
                let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 7);
                assert_eq!(slices.iter().filter(|s| s.owns(h)).count(), 1);
                per_worker[Slice::of(h, n) as usize][(h % 4) as usize] += 1;
            }
            for s in per_worker.iter().take(n as usize) {
                let (lo, hi) = (s.iter().min().unwrap(), s.iter().max().unwrap());
                assert!(*hi < lo * 2 + 50, "slice workers unbalanced: {s:?}");
            }
        }
    }
}
