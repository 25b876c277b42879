//! The live pipeline: every worker reads its own inputs (one capture ring
//! per interface, all rings of an interface in one kernel fanout group
//! that hashes flows symmetrically), so there is no reader thread and
//! nothing is shared from the wire to the alert. Alerts go to one output
//! thread, which applies thresholds and writes them as they come.
//!
//! ```text
//!  ring(if0,w0) ring(if1,w0) ─► worker 0 ─┐
//!  ring(if0,w1) ring(if1,w1) ─► worker 1 ─┼─► output (thresholds, EVE,
//!  ring(if0,wN) ...          ─► worker N ─┘   fast.log, stats, metrics)
//! ```
//!
//! The worker is the offline [`Worker`]; what differs is where packets
//! come from ([`LiveInput`]) and which clock drives timeouts: a worker puts
//! a clock marker with the wall-clock time into its batch whenever the
//! second changes, whether or not packets arrived, so an idle link still
//! times its flows out. Each worker publishes its counters every second;
//! the output thread turns them into `stats` events every
//! `stats_interval`.
//!
//! Control ([`LiveControl`]): `stop` ends the run (workers drain their
//! inputs, end every flow and exit); a new detection engine put in with
//! [`LiveControl::swap_engine`] is taken by each worker between two
//! batches (a rule reload without dropping packets).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use vigil_detect::{DetectEngine, ThresholdTracker, XbitTable};

use vigil_defrag::{DefragStats, Defragmenter};

use crate::{AlertSink, Batch, EngineConfig, OutKind, RunError, RunStats, Worker, WorkerStats};

/// One frame from a live input.
#[derive(Debug, Clone, Copy)]
pub struct LiveFrame<'a> {
    pub ts_ns: i64,
    pub linktype: u32,
    pub data: &'a [u8],
    /// Length on the wire (more than `data.len()` for a truncated frame).
    pub orig_len: u32,
    /// Inline inputs: what [`LiveInput::verdict`] is given back for this
    /// packet (an NFQUEUE packet id); 0 otherwise.
    pub token: u64,
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The link went away (interface down or removed): the worker counts
    /// it and tries [`LiveInput::reopen`] once a second.
    #[error("link down: {0}")]
    LinkDown(String),
    #[error("{0}")]
    Other(String),
}

/// Capture counters of one input, cumulative since it was opened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct InputCounters {
    /// Packets the kernel saw for this input, its drops included
    /// (Suricata's `capture.kernel_packets`).
    pub kernel_packets: u64,
    /// Packets the kernel dropped because the ring was full.
    pub kernel_drops: u64,
    /// Drops by the interface itself (the same for every input of an
    /// interface; Suricata's `capture.kernel_ifdrops`).
    pub kernel_ifdrops: u64,
    /// Frames longer than the snapshot length (cut, counted).
    pub truncated: u64,
    /// Times the link went down and was reopened.
    pub link_down: u64,
    /// Inline bridge: frames of this input sent out of the peer interface
    /// (and reject answers sent).
    pub tx_packets: u64,
    /// Inline bridge: frames of this input that the kernel refused to send
    /// (over the peer's MTU, link down, ...), and failed reject answers.
    pub tx_errors: u64,
    /// `--slice`: frames of this input left to other slices (not
    /// inspected here).
    pub slice_skipped: u64,
}

/// A packet source read by one worker (an AF_PACKET ring, ...).
pub trait LiveInput: Send {
    /// The interface name (for counters).
    fn name(&self) -> &str;
    /// Waits at most `timeout` for frames and hands each to `f`; returns
    /// how many there were.
    fn poll(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(LiveFrame<'_>),
    ) -> Result<usize, InputError>;
    fn counters(&mut self) -> InputCounters;
    /// Stop taking new packets in (what is queued can still be read):
    /// at a stop, so that after the drain every packet the input counted
    /// was delivered or counted as dropped.
    fn close_intake(&mut self) {}
    /// Inline inputs: the packet `token` may go (`Accept`) or not. Called
    /// once for every frame the input handed over, after the worker
    /// inspected it, with the frame (a reject answers from it); passive
    /// inputs ignore it.
    fn verdict(
        &mut self,
        _token: u64,
        _v: crate::Verdict,
        _frame: &[u8],
    ) -> Result<(), InputError> {
        Ok(())
    }
    /// Inline inputs: the verdict of a packet that a `replace` rule
    /// rewrote (`changed`: the packet as it goes on). By default the
    /// original goes on (inputs that cannot send a changed packet).
    fn verdict_changed(
        &mut self,
        token: u64,
        v: crate::Verdict,
        frame: &[u8],
        _changed: &[u8],
    ) -> Result<(), InputError> {
        self.verdict(token, v, frame)
    }
    /// Inline inputs: the verdict of a packet that `nfq_set_mark` rules
    /// mark (`changed`: the packet as it goes on when `replace` rewrote
    /// it too). By default the mark is ignored (only NFQUEUE has marks).
    fn verdict_marked(
        &mut self,
        token: u64,
        v: crate::Verdict,
        frame: &[u8],
        changed: Option<&[u8]>,
        _mark: crate::MarkChange,
    ) -> Result<(), InputError> {
        match changed {
            Some(c) => self.verdict_changed(token, v, frame, c),
            None => self.verdict(token, v, frame),
        }
    }
    /// Inline inputs: every verdict of a batch was given; send what was
    /// held back to be sent together (NFQUEUE's batch verdicts).
    fn flush_verdicts(&mut self) -> Result<(), InputError> {
        Ok(())
    }
    /// Opens the input again after [`InputError::LinkDown`].
    fn reopen(&mut self) -> Result<(), InputError>;
}

/// Shared between the controlling thread and the live pipeline.
#[derive(Debug)]
pub struct LiveControl {
    stop: AtomicBool,
    generation: AtomicU64,
    engine: Mutex<Arc<DetectEngine>>,
}

impl LiveControl {
    pub fn new(engine: Arc<DetectEngine>) -> Arc<Self> {
        Arc::new(LiveControl {
            stop: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            engine: Mutex::new(engine),
        })
    }

    /// Ends the run: workers drain their inputs, end their flows, and the
    /// pipeline returns.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Puts a new detection engine in; workers take it between batches.
    pub fn swap_engine(&self, e: Arc<DetectEngine>) {
        *self.engine.lock().unwrap_or_else(|p| p.into_inner()) = e;
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    pub fn engine(&self) -> Arc<DetectEngine> {
        self.engine
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Inline hold times of one worker: how long each packet waited between
/// its timestamp (the kernel's when NFQUEUE gives one, else when the
/// worker received it) and its verdict, in power-of-two microsecond
/// buckets (bucket `i` holds times below `2^i` µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HoldTimes {
    pub buckets: [u64; 32],
    pub count: u64,
    pub max_us: u64,
}

impl HoldTimes {
    pub fn add(&mut self, us: u64) {
        let i = (64 - us.leading_zeros()).min(31) as usize;
        self.buckets[i] += 1;
        self.count += 1;
        self.max_us = self.max_us.max(us);
    }

    /// The `q` quantile (0..=1) as the upper bound of its bucket, in µs
    /// (at most the maximum seen); 0 with no packets.
    pub fn quantile_us(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return ((1u64 << i).saturating_sub(1)).min(self.max_us);
            }
        }
        self.max_us
    }
}

/// What the output side is told every second.
#[derive(Debug, Default, Clone)]
pub struct LiveSnapshot {
    /// Each worker's counters so far.
    pub workers: Vec<WorkerStats>,
    /// Each worker's inputs: (interface, counters).
    pub inputs: Vec<Vec<(String, InputCounters)>>,
    /// Each worker's defragmentation counters.
    pub defrag: Vec<DefragStats>,
    /// Each worker's inline hold times (empty when not inline).
    pub hold: Vec<HoldTimes>,
    pub alerts_written: u64,
    pub alerts_suppressed: u64,
    /// Of the alerts written, those whose packet was dropped (inline).
    pub alerts_blocked: u64,
    pub uptime: Duration,
    /// Wall-clock time now, nanoseconds since the epoch.
    pub now_ns: i64,
}

impl LiveSnapshot {
    /// Workers' counters summed.
    pub fn totals(&self) -> WorkerStats {
        let mut t = WorkerStats::default();
        for w in &self.workers {
            t.add(w);
        }
        t
    }

    /// Defragmentation counters summed over workers.
    pub fn defrag_totals(&self) -> DefragStats {
        let mut t = DefragStats::default();
        for d in &self.defrag {
            t.fragments += d.fragments;
            t.reassembled += d.reassembled;
            t.overlaps += d.overlaps;
            t.timeouts += d.timeouts;
            t.evicted += d.evicted;
            t.ignored += d.ignored;
            t.peak_trackers += d.peak_trackers;
            t.peak_bytes += d.peak_bytes;
        }
        t
    }

    /// Counters per interface, summed over the workers' inputs (the
    /// interface drops are the interface's, not summed).
    pub fn interfaces(&self) -> Vec<(String, InputCounters)> {
        let mut out: Vec<(String, InputCounters)> = Vec::new();
        for (name, c) in self.inputs.iter().flatten() {
            let i = match out.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    out.push((name.clone(), InputCounters::default()));
                    out.len() - 1
                }
            };
            let t = &mut out[i].1;
            t.kernel_packets += c.kernel_packets;
            t.kernel_drops += c.kernel_drops;
            t.kernel_ifdrops = t.kernel_ifdrops.max(c.kernel_ifdrops);
            t.truncated += c.truncated;
            t.link_down += c.link_down;
            t.tx_packets += c.tx_packets;
            t.tx_errors += c.tx_errors;
            t.slice_skipped += c.slice_skipped;
        }
        out
    }
}

/// The output side of a live run.
pub trait LiveSink: AlertSink {
    /// Called about once a second with the counters so far, and once at
    /// the end with `last` set; the sink writes stats events on its own
    /// interval and flushes.
    fn tick(&mut self, snap: &LiveSnapshot, last: bool) -> std::io::Result<()>;
    /// Output written since the last call should reach the files now.
    fn flush(&mut self) -> std::io::Result<()>;
    /// A worker took a new detection engine after pausing this long.
    fn swapped(&mut self, _worker: usize, _pause: Duration) {}
}

/// Live settings beyond [`EngineConfig`].
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// How long a worker waits for packets before it looks at the clock
    /// and its control (the timer tick).
    pub tick: Duration,
    /// Largest number of frames one batch takes from an input poll.
    pub batch_packets: usize,
    /// `--slice K/N` (capture only: an inline input must give every
    /// frame a verdict): frames of other slices' flows are skipped before
    /// the worker decodes them.
    pub slice: Option<crate::Slice>,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            tick: Duration::from_millis(100),
            batch_packets: 1024,
            slice: None,
        }
    }
}

/// A worker's counters: its own, its inputs', its defragmenter's.
struct Counters {
    worker: WorkerStats,
    inputs: Vec<(String, InputCounters)>,
    defrag: DefragStats,
    hold: HoldTimes,
}

enum Msg {
    Alerts(Arc<DetectEngine>, Vec<crate::AlertOut>),
    /// A worker's counters; `true` when they are its last (it ended).
    Counters(usize, Box<Counters>, bool),
    Swapped(usize, Duration),
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Runs the live pipeline: worker `w` reads `inputs[w]`. Returns when
/// `control` is stopped and every worker has ended its flows.
pub fn run_live(
    inputs: Vec<Vec<Box<dyn LiveInput>>>,
    control: Arc<LiveControl>,
    cfg: &EngineConfig,
    live: &LiveConfig,
    sink: &mut (dyn LiveSink + Send),
) -> Result<RunStats, RunError> {
    let start = Instant::now();
    let n = inputs.len().max(1);
    let wcfg = crate::worker_config(cfg, n);
    let (tx, rx) = bounded::<Msg>(n * 64);
    std::thread::scope(|scope| -> Result<RunStats, RunError> {
        let mut handles = Vec::with_capacity(n);
        for (w, ins) in inputs.into_iter().enumerate() {
            let tx = tx.clone();
            let control = control.clone();
            let wcfg = wcfg.clone();
            let live = live.clone();
            // Fragments the kernel did not reassemble (IPv6; IPv4 when
            // fanout defrag is off) are rebuilt here: a datagram's
            // fragments share an address pair, so they reach one worker.
            let defrag = cfg.defrag.clone().map(|mut d| {
                d.memcap = (d.memcap / n).max(64 << 10);
                d.max_trackers = (d.max_trackers / n).max(64);
                Defragmenter::new(d)
            });
            // FTP data connections: each worker expects those its own
            // control flows announce (the kernel's fanout decides where a
            // data flow goes, so across workers they are not linked).
            let ftp_expect = crate::expect_table(cfg);
            handles.push(
                std::thread::Builder::new()
                    .name(format!("vigil-w{w}"))
                    .spawn_scoped(scope, move || {
                        let worker = Worker::new(control.engine(), wcfg);
                        let inputs = (ins, defrag, ftp_expect);
                        live_worker(w, worker, inputs, &control, &live, tx)
                    })
                    .map_err(RunError::Output)?,
            );
        }
        drop(tx);
        let detectors = cfg.detectors.clone().filter(|d| d.any());
        let out = output_loop(n, rx, sink, start, detectors.as_ref(), cfg.peers.as_ref());
        let mut totals = RunStats::default();
        for h in handles {
            if h.join().is_err() {
                return Err(RunError::Worker("a live worker panicked".into()));
            }
        }
        let (stats, defrag, per_worker, written, suppressed) = out?;
        totals.workers = stats;
        totals.defrag = defrag;
        totals.per_worker_pkts = per_worker;
        totals.alerts_written = written;
        totals.alerts_suppressed = suppressed;
        totals.packets_read = totals.workers.pkts;
        totals.bytes_read = totals.workers.bytes;
        totals.last_ts_ns = Some(now_ns());
        totals.wall = start.elapsed();
        Ok(totals)
    })
}

fn input_counters(ins: &mut [Box<dyn LiveInput>]) -> Vec<(String, InputCounters)> {
    ins.iter_mut()
        .map(|i| (i.name().to_string(), i.counters()))
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn live_worker(
    id: usize,
    mut worker: Worker,
    (mut ins, mut defrag, mut ftp_expect): (
        Vec<Box<dyn LiveInput>>,
        Option<Defragmenter>,
        Option<crate::expect::Expectations>,
    ),
    control: &LiveControl,
    live: &LiveConfig,
    tx: Sender<Msg>,
) {
    let mut batch = Batch::default();
    let mut index = 0u64;
    let mut generation = control.generation();
    let mut clock_sec = now_ns().div_euclid(1_000_000_000);
    let mut last_stats = Instant::now();
    let mut down: Vec<Option<Instant>> = vec![None; ins.len()];
    let mut link_downs: Vec<u64> = vec![0; ins.len()];
    let mut slice_skipped: Vec<u64> = vec![0; ins.len()];
    let slice = live.slice.filter(|s| s.count > 1);
    let max = live.batch_packets.max(1);
    let mut draining = false;
    let mut datagram = Vec::new();
    // Per batch record: (input, token) of the frame, to give verdicts back
    // (`usize::MAX` for markers and rebuilt datagrams).
    let mut tokens: Vec<(usize, u64)> = Vec::new();
    let mut verdicts = Vec::new();
    let mut hold = HoldTimes::default();
    loop {
        if !draining && control.stopping() {
            draining = true;
            for input in ins.iter_mut() {
                input.close_intake();
            }
        }
        if control.generation() != generation {
            let t = Instant::now();
            generation = control.generation();
            worker.set_detect(control.engine());
            let _ = tx.send(Msg::Swapped(id, t.elapsed()));
        }
        batch.clear();
        tokens.clear();
        // The wall clock entered a new second: flows time out here even
        // when nothing arrives.
        let now = now_ns();
        let sec = now.div_euclid(1_000_000_000);
        if sec > clock_sec {
            clock_sec = sec;
            batch.push_marker(index + 1, now);
            tokens.push((usize::MAX, 0));
            if let Some(d) = defrag.as_mut() {
                d.expire(now);
            }
        }
        let k = ins.len().max(1) as u32;
        let mut got = 0usize;
        for (i, input) in ins.iter_mut().enumerate() {
            if let Some(since) = down[i] {
                if since.elapsed() < Duration::from_secs(1) {
                    continue;
                }
                match input.reopen() {
                    Ok(()) => down[i] = None,
                    Err(_) => down[i] = Some(Instant::now()),
                }
                continue;
            }
            // Draining waits a little: a ring hands over a block of
            // frames only when it is full or its retire timeout passed.
            let timeout = if got > 0 {
                Duration::ZERO
            } else if draining {
                Duration::from_millis(50) / k
            } else {
                live.tick / k
            };
            let mut taken = 0usize;
            let skipped = &mut slice_skipped[i];
            let r = input.poll(timeout, &mut |f: LiveFrame<'_>| {
                index += 1;
                taken += 1;
                // `--slice`: the frame's flow (a fragment's address pair)
                // decides whether it is inspected here; fragments go to
                // the defragmenter all the same, and the datagram they
                // complete is kept when its own flow is this slice's.
                let p = vigil_wire::decode(f.linktype, f.data);
                // Tunnel pseudo-packets stay with the frame's queue (as in
                // Suricata); defragmentation works on the innermost.
                let mut depth = 0u8;
                let mut inner = None;
                while inner.as_ref().unwrap_or(&p).inner_tunnel {
                    depth += 1;
                    inner = Some(vigil_wire::decode_at(f.linktype, f.data, depth));
                }
                let p = Some(inner.unwrap_or(p));
                let keep = match (&p, slice) {
                    (Some(p), Some(s)) => s.owns(crate::packet_hash(p)),
                    _ => true,
                };
                let (flags, rebuilt) = match (defrag.as_mut(), &p) {
                    (Some(d), Some(p)) => {
                        crate::defrag_packet(d, p, f.data, f.ts_ns, &mut datagram)
                    }
                    _ => (0, false),
                };
                let ftp_data = match (ftp_expect.as_mut(), &p) {
                    (Some(t), Some(p)) => t.observe(p, f.ts_ns),
                    _ => None,
                };
                if keep {
                    batch.push_record(index, f.ts_ns, f.linktype, f.data, f.orig_len, false, flags);
                    // Without tunnels `p` is the frame's own decode:
                    // the worker takes it rather than decode again.
                    if let (0, Some(p)) = (depth, p) {
                        batch.tag_decoded(p);
                    }
                    tokens.push((i, f.token));
                    for d in 1..=depth {
                        batch.push_tunnel(index, f.ts_ns, f.linktype, f.data, f.orig_len, d);
                        tokens.push((usize::MAX, 0));
                    }
                    // The innermost packet's record: the frame's, or its
                    // deepest tunnel packet's (pushed last).
                    if let Some(info) = ftp_data {
                        batch.tag_ftp_data(info);
                    }
                } else {
                    *skipped += 1;
                }
                let rebuilt = rebuilt
                    && slice.is_none_or(|s| {
                        s.owns(crate::packet_hash(&vigil_wire::decode(
                            f.linktype, &datagram,
                        )))
                    });
                if rebuilt {
                    tokens.push((usize::MAX, 0));
                    batch.push_record(
                        index,
                        f.ts_ns,
                        f.linktype,
                        &datagram,
                        datagram.len() as u32,
                        true,
                        0,
                    );
                }
            });
            got += taken;
            if let Err(e) = r {
                match e {
                    InputError::LinkDown(_) => {
                        link_downs[i] += 1;
                        down[i] = Some(Instant::now());
                    }
                    InputError::Other(msg) => {
                        eprintln!("vigil: worker {id}: {}: {msg}", input.name());
                        down[i] = Some(Instant::now());
                    }
                }
            }
            if batch.len() >= max {
                break;
            }
        }
        if !batch.is_empty() {
            let mut alerts = Vec::new();
            worker.process(&batch, &mut alerts);
            // Inline: each packet goes or not now that every rule that
            // can see it has run (alerts are written after).
            // A tunnel packet's drop drops the frame that carried it (its
            // records follow the frame's, one per depth).
            verdicts.clear();
            verdicts.extend_from_slice(worker.verdicts());
            for (i, rec) in batch.records.iter().enumerate() {
                let at = i.checked_sub(usize::from(rec.tunnel));
                if let (true, Some(j)) = (rec.tunnel > 0, at) {
                    if verdicts[i].is_drop() && !verdicts[j].is_drop() {
                        verdicts[j] = verdicts[i];
                    }
                }
            }
            let mut changed = worker.changed().iter().peekable();
            let mut marks = worker.marks().iter().peekable();
            for (i, ((&(input, token), &v), rec)) in
                tokens.iter().zip(&verdicts).zip(&batch.records).enumerate()
            {
                let change = changed.next_if(|c| c.0 == i).map(|c| &c.1[..]);
                let mark = marks.next_if(|m| m.0 == i).map(|m| m.1);
                if let Some(inp) = ins.get_mut(input) {
                    let r = match (change, mark) {
                        (c, Some(m)) => inp.verdict_marked(token, v, batch.data(rec), c, m),
                        (Some(c), None) => inp.verdict_changed(token, v, batch.data(rec), c),
                        (None, None) => inp.verdict(token, v, batch.data(rec)),
                    };
                    if let Err(e) = r {
                        eprintln!("vigil: worker {id}: {}: verdict: {e}", inp.name());
                    }
                    if token != 0 {
                        hold.add((now_ns() - rec.ts_ns).max(0) as u64 / 1000);
                    }
                }
            }
            for inp in ins.iter_mut() {
                if let Err(e) = inp.flush_verdicts() {
                    eprintln!("vigil: worker {id}: {}: verdict: {e}", inp.name());
                }
            }
            if !alerts.is_empty()
                && tx
                    .send(Msg::Alerts(worker.detect().clone(), alerts))
                    .is_err()
            {
                return;
            }
        }
        let counters = |ins: &mut [Box<dyn LiveInput>],
                        worker: WorkerStats,
                        d: &Option<Defragmenter>,
                        hold: HoldTimes| {
            let mut c = input_counters(ins);
            for (j, (_, cc)) in c.iter_mut().enumerate() {
                cc.link_down += link_downs[j];
                cc.slice_skipped += slice_skipped[j];
            }
            Box::new(Counters {
                worker,
                inputs: c,
                defrag: d.as_ref().map(|d| d.stats).unwrap_or_default(),
                hold,
            })
        };
        if draining && got == 0 {
            // Inputs are empty: end every flow and report the last
            // counters (read after the drain, so that every packet the
            // kernel counted was decoded or counted as dropped).
            let engine = worker.detect().clone();
            let (stats, alerts) = worker.finish();
            let c = counters(&mut ins, stats, &defrag, hold);
            if !alerts.is_empty() {
                let _ = tx.send(Msg::Alerts(engine, alerts));
            }
            let _ = tx.send(Msg::Counters(id, c, true));
            return;
        }
        if last_stats.elapsed() >= Duration::from_secs(1) {
            last_stats = Instant::now();
            let c = counters(&mut ins, worker.snapshot(), &defrag, hold);
            if tx.send(Msg::Counters(id, c, false)).is_err() {
                return;
            }
        }
    }
}

type OutputTotals = (WorkerStats, DefragStats, Vec<u64>, u64, u64);

fn output_loop(
    n: usize,
    rx: Receiver<Msg>,
    sink: &mut (dyn LiveSink + Send),
    start: Instant,
    detectors: Option<&crate::detectors::DetectorConfig>,
    peers: Option<&crate::Peers>,
) -> Result<OutputTotals, RunError> {
    let mut dets = detectors.map(crate::detectors::Detectors::new);
    let mut det_alerts = Vec::new();
    // Linked sensors: the others' host-scoped events, applied as they
    // arrive (live there is no shared input order to wait for).
    let slice = peers.map(|p| p.0.slice());
    let (peer_tx, peer_rx) = crossbeam_channel::bounded::<crate::PeerReport>(1024);
    if let Some(p) = peers {
        p.0.subscribe(Box::new(move |r| peer_tx.send(r).is_ok()));
    }
    let mut first_engine: Option<Arc<DetectEngine>> = None;
    let mut publish = Vec::new();
    let mut snap = LiveSnapshot {
        workers: vec![WorkerStats::default(); n],
        inputs: vec![Vec::new(); n],
        defrag: vec![DefragStats::default(); n],
        hold: vec![HoldTimes::default(); n],
        ..LiveSnapshot::default()
    };
    let mut done = vec![false; n];
    let mut thresholds = ThresholdTracker::default();
    let mut xbits = XbitTable::default();
    let mut tags = crate::tags::TagTable::default();
    let mut threshold_engine: Option<Arc<DetectEngine>> = None;
    let mut last_tick = Instant::now();
    let mut failed: Option<std::io::Error> = None;
    loop {
        let msg = rx.recv_timeout(Duration::from_millis(200));
        let mut wrote = false;
        match msg {
            Ok(Msg::Alerts(engine, alerts)) => {
                let first = first_engine.get_or_insert_with(|| engine.clone());
                if let Some(p) = peers {
                    publish.clear();
                    publish.extend(
                        alerts
                            .iter()
                            .filter(|a| matches!(a.kind, OutKind::Conn(_) | OutKind::Xbits))
                            .cloned(),
                    );
                    // Rule indices name rules of the ruleset loaded at
                    // start: after a reload, xbits events stay local.
                    if !Arc::ptr_eq(first, &engine) {
                        publish.retain(|a| a.kind != OutKind::Xbits);
                    }
                    if !publish.is_empty() {
                        p.0.publish(&publish, 0);
                    }
                }
                // Thresholds count by rule index: a new engine starts them
                // afresh (as a rule reload does in Suricata).
                if !threshold_engine
                    .as_ref()
                    .is_some_and(|e| Arc::ptr_eq(e, &engine))
                {
                    thresholds = ThresholdTracker::default();
                    // Bits are kept by name index: a new ruleset (rule
                    // reload) starts afresh too.
                    xbits = XbitTable::default();
                    tags = crate::tags::TagTable::default();
                    threshold_engine = Some(engine.clone());
                }
                for a in &alerts {
                    if failed.is_some() {
                        break;
                    }
                    let r = if let OutKind::Conn(k) = a.kind {
                        match dets.as_mut() {
                            Some(d) => {
                                crate::detector_alerts(d, k, a, &mut det_alerts, sink, slice).map(
                                    |w| {
                                        snap.alerts_written += w;
                                    },
                                )
                            }
                            None => Ok(()),
                        }
                    } else if a.kind == OutKind::TxLog {
                        sink.tx_log(a)
                    } else if a.kind == OutKind::Drop {
                        sink.drop_log(a, engine.rules.get(a.rule as usize))
                    } else if a.kind == OutKind::Tag {
                        if tags.on_packet(a) {
                            sink.tagged_packet(a)
                        } else {
                            Ok(())
                        }
                    } else {
                        let rule = &engine.rules[a.rule as usize];
                        let matched = a.kind != OutKind::Xbits
                            || crate::xbits_alert(&mut xbits, &engine, rule, a);
                        let admitted = if matched {
                            crate::threshold_admit(&mut thresholds, rule, a)
                        } else {
                            None
                        };
                        if !matched {
                            Ok(())
                        } else if let Some(action) = admitted {
                            snap.alerts_written += 1;
                            snap.alerts_blocked += u64::from(a.blocked);
                            if let Some(t) = &rule.tag {
                                tags.on_alert(t, rule.gid, rule.sid, a);
                            }
                            crate::write_alert(sink, a, rule, action)
                        } else {
                            snap.alerts_suppressed += 1;
                            Ok(())
                        }
                    };
                    if let Err(e) = r {
                        failed = Some(e);
                    }
                }
                wrote = true;
            }
            Ok(Msg::Counters(w, c, last)) => {
                let c = *c;
                snap.workers[w] = c.worker;
                snap.inputs[w] = c.inputs;
                snap.defrag[w] = c.defrag;
                snap.hold[w] = c.hold;
                done[w] |= last;
            }
            Ok(Msg::Swapped(w, pause)) => sink.swapped(w, pause),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        // Other sensors' events: state here, alerts by their owner.
        for rep in peer_rx.try_iter() {
            for a in &rep.events {
                match a.kind {
                    OutKind::Conn(k) => {
                        if let Some(d) = dets.as_mut() {
                            match crate::detector_alerts(d, k, a, &mut det_alerts, sink, slice) {
                                Ok(w) => {
                                    snap.alerts_written += w;
                                    wrote |= w > 0;
                                }
                                Err(e) => {
                                    failed.get_or_insert(e);
                                }
                            }
                        }
                    }
                    OutKind::Xbits => {
                        // Named by the ruleset loaded at start.
                        let engine = first_engine.as_ref().filter(|f| {
                            threshold_engine.as_ref().is_none_or(|t| Arc::ptr_eq(f, t))
                        });
                        if let Some(r) = engine
                            .and_then(|e| e.rules.get(a.rule as usize))
                            .filter(|r| !r.xbits.is_empty())
                        {
                            xbits.resolve(&r.xbits, a.src, a.dst, a.ts_ns);
                        }
                    }
                    _ => {}
                }
            }
        }
        if let (Some(p), true) = (peers, last_tick.elapsed() >= Duration::from_secs(1)) {
            // A heartbeat: the others do not give up on a quiet sensor.
            p.0.publish(&[], 0);
        }
        if wrote && rx.is_empty() {
            if let Err(e) = sink.flush() {
                failed.get_or_insert(e);
            }
        }
        if last_tick.elapsed() >= Duration::from_secs(1) && !done.iter().all(|d| *d) {
            last_tick = Instant::now();
            snap.uptime = start.elapsed();
            snap.now_ns = now_ns();
            if let Err(e) = sink.tick(&snap, false) {
                failed.get_or_insert(e);
            }
        }
    }
    snap.uptime = start.elapsed();
    snap.now_ns = now_ns();
    if failed.is_none() {
        sink.tick(&snap, true)?;
        sink.flush()?;
    }
    if let Some(e) = failed {
        return Err(RunError::Output(e));
    }
    let per_worker = snap.workers.iter().map(|w| w.pkts).collect();
    Ok((
        snap.totals(),
        snap.defrag_totals(),
        per_worker,
        snap.alerts_written,
        snap.alerts_suppressed,
    ))
}

#[cfg(test)]
mod tests {
    use super::HoldTimes;

    #[test]
    fn hold_time_quantiles_come_from_power_of_two_buckets() {
        let mut h = HoldTimes::default();
        assert_eq!(h.quantile_us(0.5), 0);
        for us in [0, 1, 3, 5, 9, 100, 100, 100, 100, 5000] {
            h.add(us);
        }
        assert_eq!(h.count, 10);
        assert_eq!(h.max_us, 5000);
        // Half are at most 9 µs: bucket [8, 16) reports 15.
        assert_eq!(h.quantile_us(0.5), 15);
        // p99 is the largest: its bucket [4096, 8192) is capped at the max.
        assert_eq!(h.quantile_us(0.99), 5000);
        assert_eq!(h.quantile_us(0.0), 0);
    }
}
