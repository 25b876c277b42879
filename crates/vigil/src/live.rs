//! `vigil run -i IFACE`: live capture. Each worker owns one AF_PACKET
//! ring per interface (`vigil-capture`), all rings of an interface in one
//! fanout group, and runs the same worker code as offline
//! (`vigil_engine::run_live`). This module opens the rings, writes output
//! as it happens (EVE and fast.log flushed after every batch of alerts, a
//! `stats` event every `stats.interval` seconds), serves metrics, and
//! handles the signals: SIGINT/SIGTERM stop, SIGUSR2 reloads the rules,
//! SIGHUP reopens the output files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use vigil_capture::{FanoutMode, Ring, RingConfig};
use vigil_detect::{BuildReport, CompiledRule};
use vigil_engine::{
    AlertOut, AlertSink, InputCounters, InputError, LiveConfig, LiveControl, LiveFrame, LiveInput,
    LiveSink, LiveSnapshot, RunStats,
};
use vigil_output::StatsTree;

use crate::cli::{CtlArgs, CtlCommand, RunArgs};
use crate::config::Config;
use crate::run::{OutputSettings, Sink};

/// One worker's ring on one interface, as the engine's input (also the
/// receiving side of a bridge input).
pub(crate) struct RingInput {
    pub(crate) ring: Ring,
    pub(crate) iface: String,
    cfg: RingConfig,
    /// The interface's drop counter when the ring was opened (the
    /// kernel's counter runs since boot).
    ifdrops_base: u64,
    /// Counters of rings closed on a link-down, kept across reopening.
    carried: InputCounters,
}

/// A capture error as the engine's input error (a link down is retried).
pub(crate) fn input_error(e: vigil_capture::CaptureError) -> InputError {
    match e {
        vigil_capture::CaptureError::LinkDown(m) => InputError::LinkDown(m),
        other => InputError::Other(other.to_string()),
    }
}

impl RingInput {
    pub(crate) fn open(
        iface: &str,
        cfg: &RingConfig,
    ) -> Result<RingInput, vigil_capture::CaptureError> {
        let ring = Ring::open(iface, cfg)?;
        Ok(RingInput {
            ring,
            iface: iface.to_string(),
            cfg: cfg.clone(),
            ifdrops_base: vigil_capture::interface_drops(iface).unwrap_or(0),
            carried: InputCounters::default(),
        })
    }
}

impl LiveInput for RingInput {
    fn name(&self) -> &str {
        &self.iface
    }

    fn poll(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(LiveFrame<'_>),
    ) -> Result<usize, InputError> {
        let linktype = self.ring.linktype();
        // At most 4 blocks (4 MiB by default) a call: the worker copies
        // them into its batch before inspecting.
        self.ring
            .poll_blocks(timeout, 4, &mut |p| {
                f(LiveFrame {
                    ts_ns: p.ts_ns,
                    linktype,
                    data: p.data,
                    orig_len: p.orig_len,
                    token: 0,
                })
            })
            .map_err(input_error)
    }

    fn counters(&mut self) -> InputCounters {
        let k = self.ring.stats().unwrap_or_default();
        let ifd = vigil_capture::interface_drops(&self.iface)
            .unwrap_or(0)
            .saturating_sub(self.ifdrops_base);
        InputCounters {
            kernel_packets: self.carried.kernel_packets + k.packets,
            kernel_drops: self.carried.kernel_drops + k.drops,
            kernel_ifdrops: ifd,
            truncated: self.carried.truncated + self.ring.truncated(),
            ..InputCounters::default()
        }
    }

    fn close_intake(&mut self) {
        if let Err(e) = self.ring.close_intake() {
            eprintln!("vigil: {}: {e}", self.iface);
        }
    }

    fn reopen(&mut self) -> Result<(), InputError> {
        let now = self.counters();
        let ring = Ring::open(&self.iface, &self.cfg).map_err(input_error)?;
        self.carried = InputCounters {
            kernel_ifdrops: 0,
            ..now
        };
        self.ring = ring;
        Ok(())
    }
}

/// One worker's NFQUEUE queue, as the engine's input: each packet is
/// held by the kernel until [`LiveInput::verdict`].
struct QueueInput {
    queue: vigil_inline::Queue,
    name: String,
    /// Raw sockets for the answers of `reject` rules (`None`: could not
    /// be opened; rejects then only drop, counted in `unanswered`).
    sender: Option<vigil_inline::RawSender>,
    /// The last packet of a run of accepted ones whose verdict is not
    /// sent yet: one batch verdict covers the run (every packet of the
    /// queue reaches this worker in id order, so the ids up to it are
    /// exactly the run).
    accept_up_to: Option<u32>,
}

impl QueueInput {
    fn send_accepts(&mut self) -> Result<(), InputError> {
        if let Some(id) = self.accept_up_to.take() {
            self.queue
                .verdict_batch(id, vigil_inline::Verdict::Accept)
                .map_err(|e| InputError::Other(e.to_string()))?;
        }
        Ok(())
    }
}

/// The answers to a rejected packet (an IP packet, as NFQUEUE gives it).
pub(crate) fn reject_info<'a>(frame: &'a [u8]) -> Option<vigil_inline::RejectInfo<'a>> {
    let p = vigil_wire::decode(101, frame);
    let ip = p.ip.as_ref()?;
    let (seq, ack, flags) = match p.l4 {
        vigil_wire::L4::Tcp(t) => (t.seq, t.ack, t.flags),
        _ => (0, 0, 0),
    };
    Some(vigil_inline::RejectInfo {
        src: ip.src,
        dst: ip.dst,
        proto: ip.proto,
        sport: p.src_port(),
        dport: p.dst_port(),
        seq,
        ack,
        ack_flag: flags & 0x10 != 0,
        syn: flags & 0x02 != 0,
        fin: flags & 0x01 != 0,
        payload_len: p.payload().len() as u32,
        packet: frame,
    })
}

impl LiveInput for QueueInput {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(LiveFrame<'_>),
    ) -> Result<usize, InputError> {
        self.queue
            .poll(timeout, &mut |p| {
                // The IP packet, no link header.
                let linktype = match p.hw_protocol {
                    0x86dd => 229,
                    0x0800 => 228,
                    _ => 101,
                };
                f(LiveFrame {
                    ts_ns: p.ts_ns,
                    linktype,
                    data: p.data,
                    orig_len: p.data.len() as u32,
                    token: u64::from(p.id),
                })
            })
            .map_err(|e| InputError::Other(e.to_string()))
    }

    fn verdict(
        &mut self,
        token: u64,
        v: vigil_engine::Verdict,
        frame: &[u8],
    ) -> Result<(), InputError> {
        if let vigil_engine::Verdict::Reject(to) = v {
            let (src, dst) = to.sides();
            if let (Some(sender), Some(info)) = (&self.sender, reject_info(frame)) {
                for (to, answer) in vigil_inline::reject_answers(&info, src, dst) {
                    if let Err(e) = sender.send(to, &answer) {
                        eprintln!("vigil: {}: reject answer to {to}: {e}", self.name);
                    }
                }
            }
        }
        if !v.is_drop() {
            self.accept_up_to = Some(token as u32);
            return Ok(());
        }
        // The accepted packets before it go first, in one message.
        self.send_accepts()?;
        self.queue
            .verdict(token as u32, vigil_inline::Verdict::Drop)
            .map_err(|e| InputError::Other(e.to_string()))
    }

    fn verdict_changed(
        &mut self,
        token: u64,
        v: vigil_engine::Verdict,
        frame: &[u8],
        changed: &[u8],
    ) -> Result<(), InputError> {
        if v.is_drop() {
            return self.verdict(token, v, frame);
        }
        // The accepted packets before it go first; this one goes on
        // changed (`replace`), with its own verdict.
        self.send_accepts()?;
        self.queue
            .verdict_with_data(token as u32, vigil_inline::Verdict::Accept, changed)
            .map_err(|e| InputError::Other(e.to_string()))
    }

    fn verdict_marked(
        &mut self,
        token: u64,
        v: vigil_engine::Verdict,
        frame: &[u8],
        changed: Option<&[u8]>,
        mark: vigil_engine::MarkChange,
    ) -> Result<(), InputError> {
        if v.is_drop() {
            return self.verdict(token, v, frame);
        }
        // The accepted packets before it go first; this one goes on with
        // its new mark (`nfq_set_mark`), changed too if `replace` rewrote
        // it, with its own verdict (nfq_set_verdict2).
        self.send_accepts()?;
        self.queue
            .verdict_marked(
                token as u32,
                vigil_inline::Verdict::Accept,
                changed.unwrap_or(&[]),
                Some((mark.value, mark.mask)),
            )
            .map(|_| ())
            .map_err(|e| InputError::Other(e.to_string()))
    }

    fn flush_verdicts(&mut self) -> Result<(), InputError> {
        self.send_accepts()
    }

    fn counters(&mut self) -> InputCounters {
        let s = self.queue.stats();
        InputCounters {
            kernel_packets: s.received + s.queue_dropped + s.user_dropped,
            kernel_drops: s.queue_dropped + s.user_dropped,
            ..InputCounters::default()
        }
    }

    fn reopen(&mut self) -> Result<(), InputError> {
        Err(InputError::Other("an NFQUEUE queue is not reopened".into()))
    }
}

/// The live output: the offline sink's writers, flushed as alerts come,
/// stats events on an interval, metrics, and reopening on SIGHUP.
struct LiveOutput {
    sink: Sink,
    settings: OutputSettings,
    log_dir: PathBuf,
    reopen: Arc<AtomicBool>,
    stats_interval: Duration,
    last_stats: Instant,
    metrics: Option<vigil_metrics::Metrics>,
    report: Arc<std::sync::Mutex<ReloadInfo>>,
    /// An inline bridge: the transmit counters go into the stats too.
    bridge: bool,
    /// `--slice` (capture only).
    slice: Option<vigil_engine::Slice>,
}

/// Rule reload figures, shared between the control thread and output.
#[derive(Debug, Default, Clone)]
struct ReloadInfo {
    rules_loaded: u64,
    reloads: u64,
    failures: u64,
}

impl AlertSink for LiveOutput {
    fn alert(&mut self, a: &AlertOut, rule: &CompiledRule) -> std::io::Result<()> {
        self.sink.alert(a, rule)
    }

    fn alert_rate_filtered(
        &mut self,
        a: &AlertOut,
        rule: &CompiledRule,
        action: vigil_rules::Action,
    ) -> std::io::Result<()> {
        self.sink.alert_rate_filtered(a, rule, action)
    }

    fn tx_log(&mut self, a: &AlertOut) -> std::io::Result<()> {
        self.sink.tx_log(a)
    }

    fn drop_log(&mut self, a: &AlertOut, rule: Option<&CompiledRule>) -> std::io::Result<()> {
        self.sink.drop_log(a, rule)
    }

    fn tagged_packet(&mut self, a: &AlertOut) -> std::io::Result<()> {
        self.sink.tagged_packet(a)
    }
}

impl LiveOutput {
    fn stats_tree(&self, snap: &LiveSnapshot) -> StatsTree {
        let totals = RunStats {
            workers: snap.totals(),
            alerts_written: snap.alerts_written,
            alerts_suppressed: snap.alerts_suppressed,
            ..RunStats::default()
        };
        let ifaces = snap.interfaces();
        let skipped: u64 = ifaces.iter().map(|(_, c)| c.slice_skipped).sum();
        let totals = RunStats {
            slice: self.slice,
            slice_packets_skipped: skipped,
            ..totals
        };
        let mut t = crate::run::stats_tree(&totals, None);
        let sum = |f: fn(&InputCounters) -> u64| ifaces.iter().map(|(_, c)| f(c)).sum::<u64>();
        let mut set = |k: &str, v: u64| {
            let _ = t.set(k, v);
        };
        set("capture.kernel_packets", sum(|c| c.kernel_packets));
        set("capture.kernel_drops", sum(|c| c.kernel_drops));
        set("capture.kernel_ifdrops", sum(|c| c.kernel_ifdrops));
        set("capture.truncated", sum(|c| c.truncated));
        set("capture.link_down", sum(|c| c.link_down));
        set("capture.dropped", sum(|c| c.kernel_drops));
        if self.bridge {
            set("capture.tx_packets", sum(|c| c.tx_packets));
            set("capture.tx_errors", sum(|c| c.tx_errors));
        }
        for (name, c) in &ifaces {
            // Interface names may hold dots (VLAN devices): not a path.
            let n = name.replace('.', "_");
            set(
                &format!("capture.interfaces.{n}.kernel_packets"),
                c.kernel_packets,
            );
            set(
                &format!("capture.interfaces.{n}.kernel_drops"),
                c.kernel_drops,
            );
            set(
                &format!("capture.interfaces.{n}.kernel_ifdrops"),
                c.kernel_ifdrops,
            );
            if self.bridge {
                // Frames that came in on this interface and were sent on
                // (or could not be), with the reject answers they caused.
                set(&format!("capture.interfaces.{n}.tx_packets"), c.tx_packets);
                set(&format!("capture.interfaces.{n}.tx_errors"), c.tx_errors);
            }
        }
        // Inline: how long packets were held until their verdict, per
        // worker (p50 and p99 as power-of-two bucket bounds).
        for (w, h) in snap.hold.iter().enumerate() {
            if h.count > 0 {
                set(
                    &format!("ips.hold_time_us.worker_{w}.p50"),
                    h.quantile_us(0.5),
                );
                set(
                    &format!("ips.hold_time_us.worker_{w}.p99"),
                    h.quantile_us(0.99),
                );
                set(&format!("ips.hold_time_us.worker_{w}.max"), h.max_us);
                set(&format!("ips.hold_time_us.worker_{w}.packets"), h.count);
            }
        }
        let info = self.report.lock().map(|i| i.clone()).unwrap_or_default();
        set("detect.engines.rules_loaded", info.rules_loaded);
        set("detect.engines.reloads", info.reloads);
        set("detect.engines.reload_failures", info.failures);
        t
    }

    fn write_stats(&mut self, snap: &LiveSnapshot, last: bool) -> std::io::Result<()> {
        let tree = self.stats_tree(snap);
        self.sink.eve.write_stats(
            snap.now_ns.div_euclid(1_000_000_000),
            snap.now_ns.rem_euclid(1_000_000_000) as u32,
            &tree,
        )?;
        // EVE to Redis: the last block has the counts after the exit
        // flush (bounded by its flush timeout).
        let redis = if last {
            self.sink.finish_redis()?
        } else {
            self.sink.redis().map(|r| r.counts())
        };
        let mut lines: Vec<(&'static str, String)> = vec![
            (
                "vigil.uptime_seconds",
                format!("{:.0}", snap.uptime.as_secs_f64()),
            ),
            ("vigil.workers", snap.workers.len().to_string()),
        ];
        // Per worker, comma-separated in worker order.
        let per_worker = |f: &dyn Fn(usize) -> u64| {
            (0..snap.workers.len())
                .map(|w| f(w).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let inputs_sum = |w: usize, f: fn(&InputCounters) -> u64| {
            snap.inputs
                .get(w)
                .map_or(0, |ins| ins.iter().map(|(_, c)| f(c)).sum::<u64>())
        };
        lines.push((
            "vigil.packets_per_worker",
            per_worker(&|w| snap.workers[w].pkts),
        ));
        lines.push((
            "vigil.kernel_packets_per_worker",
            per_worker(&|w| inputs_sum(w, |c| c.kernel_packets)),
        ));
        lines.push((
            "vigil.kernel_drops_per_worker",
            per_worker(&|w| inputs_sum(w, |c| c.kernel_drops)),
        ));
        if let Some(c) = &redis {
            lines.extend(crate::run::redis_stats_lines(c));
        }
        // stats.log grows by one block per interval, as Suricata's does.
        let p = self.log_dir.join("stats.log");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)?;
        let mut buf = Vec::new();
        vigil_output::write_stats_log(&mut buf, &tree, &lines)?;
        f.write_all(&buf)?;
        Ok(())
    }

    fn publish(&self, snap: &LiveSnapshot) {
        let Some(m) = &self.metrics else { return };
        let info = self.report.lock().map(|i| i.clone()).unwrap_or_default();
        let workers = snap
            .workers
            .iter()
            .map(|w| vigil_metrics::WorkerFigures {
                packets: w.pkts,
                bytes: w.bytes,
                decoder_invalid: w.invalid,
                flows_created: w.flows_created,
                flows_active: w.flows_active_at_end,
                flows_timed_out: w.flows_timed_out,
                flow_memcap_evictions: w.flows_evicted,
                stream_memcap_dropped_bytes: w.stream_memcap_dropped,
                alerts: w.alerts,
            })
            .collect();
        let interfaces = snap
            .interfaces()
            .into_iter()
            .map(|(name, c)| vigil_metrics::InterfaceFigures {
                name,
                kernel_packets: c.kernel_packets,
                kernel_drops: c.kernel_drops,
                kernel_ifdrops: c.kernel_ifdrops,
                truncated: c.truncated,
            })
            .collect();
        m.publish(vigil_metrics::Snapshot {
            workers,
            interfaces,
            alerts_by_action: vec![
                (
                    "allowed".to_string(),
                    snap.alerts_written - snap.alerts_blocked,
                ),
                ("blocked".to_string(), snap.alerts_blocked),
            ],
            uptime_seconds: snap.uptime.as_secs_f64(),
            rules_loaded: info.rules_loaded,
            reloads: info.reloads,
            reload_failures: info.failures,
        });
    }
}

impl LiveSink for LiveOutput {
    fn tick(&mut self, snap: &LiveSnapshot, last: bool) -> std::io::Result<()> {
        if self.reopen.swap(false, Ordering::SeqCst) {
            // SIGHUP (logrotate moved the files away): write what is
            // buffered to the old files, then open new ones.
            self.flush()?;
            if self.sink.redis().is_some() {
                // EVE goes to Redis: only fast.log is a file to reopen.
                match crate::run::open_fast(&self.log_dir, &self.settings, true) {
                    Ok(f) => {
                        self.sink.fast = f;
                        eprintln!("vigil: output files reopened");
                    }
                    Err(e) => eprintln!("vigil: warning: cannot reopen output files: {e:#}"),
                }
            } else {
                match crate::run::open_sink(&self.log_dir, &self.settings, true) {
                    Ok(s) => {
                        self.sink = s;
                        eprintln!("vigil: output files reopened");
                    }
                    Err(e) => eprintln!("vigil: warning: cannot reopen output files: {e:#}"),
                }
            }
        }
        self.publish(snap);
        if last || self.last_stats.elapsed() >= self.stats_interval {
            self.last_stats = Instant::now();
            self.write_stats(snap, last)?;
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.sink.eve.flush()?;
        if let Some(f) = &mut self.sink.fast {
            f.flush()?;
        }
        Ok(())
    }

    fn swapped(&mut self, worker: usize, pause: Duration) {
        eprintln!(
            "vigil: worker {worker} took the new rules (paused {:.3} ms)",
            pause.as_secs_f64() * 1e3
        );
    }
}

/// Ring settings from the command line (Suricata's `af-packet` section
/// names are also read from the config: `block-size`, `ring-size` as
/// blocks, `cluster-type`).
fn ring_config(args: &RunArgs, cfg: &Config) -> Result<RingConfig> {
    let mut r = RingConfig::default();
    if let Some(v) = cfg.get_str("af-packet.block-size") {
        r.block_size = crate::config::parse_size(&v)? as usize;
    }
    if let Some(v) = args.ring_block_size {
        r.block_size = v;
    }
    if let Some(v) = args.ring_blocks {
        r.block_count = v;
    }
    if let Some(v) = args.ring_frame_size {
        r.frame_size = v;
    }
    r.fanout = args
        .fanout
        .parse::<FanoutMode>()
        .map_err(|_| anyhow::anyhow!("--fanout {}: expected hash, lb, cpu or qm", args.fanout))?;
    r.promisc = !args.no_promisc;
    r.bpf = bpf_filter(args)?;
    Ok(r)
}

/// The BPF filter: `-F FILE` or the expression after the options.
fn bpf_filter(args: &RunArgs) -> Result<Option<String>> {
    match (&args.bpf_file, args.bpf.is_empty()) {
        (Some(_), false) => bail!("give a BPF filter with -F FILE or as an expression, not both"),
        (Some(f), true) => {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read BPF filter file {}", f.display()))?;
            // Suricata drops `#` comments from filter files.
            let expr: Vec<&str> = text
                .lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty())
                .collect();
            Ok((!expr.is_empty()).then(|| expr.join(" ")))
        }
        (None, false) => Ok(Some(args.bpf.join(" "))),
        (None, true) => Ok(None),
    }
}

/// Removes the pid file when the run ends, however it ends.
struct PidFile(PathBuf);

impl PidFile {
    fn create(p: &Path) -> Result<PidFile> {
        std::fs::write(p, format!("{}\n", std::process::id()))
            .with_context(|| format!("cannot write pid file {}", p.display()))?;
        Ok(PidFile(p.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn run(args: RunArgs, cfg: Config, load_start: Instant) -> Result<ExitCode> {
    if args.pcap.is_some() {
        bail!("give either -r FILE or -i IFACE");
    }
    if args.replay_speed.is_some() {
        bail!("--replay-speed paces a capture file (-r); a live link has its own pace");
    }
    if crate::device::wanted(&args.device)? {
        bail!("--prefilter-device applies to -r runs for now; live capture runs the prefilter on the CPU");
    }
    let ring_cfg = ring_config(&args, &cfg)?;
    let mut osettings = crate::run::output_settings(&cfg)?;
    let mut ecfg = crate::run::engine_config(&args, &cfg, &osettings)?;
    let queues =
        vigil_inline::parse_queue_specs(&args.nfqueues).map_err(|e| anyhow::anyhow!("-q: {e}"))?;
    let bridges = crate::bridge::parse_bridge_specs(&args.bridges)
        .map_err(|e| anyhow::anyhow!("--inline {e}"))?;
    if !bridges.is_empty() {
        if ring_cfg.bpf.is_some() {
            bail!("--inline: a BPF filter would keep the frames it does not match from being forwarded; the bridge takes none");
        }
        if ring_cfg.fanout != FanoutMode::Hash {
            bail!("--inline: --fanout {} would split the two directions of a flow over workers; the bridge needs hash", args.fanout);
        }
        if args.no_promisc {
            bail!("--inline: a bridge must see frames for every address (--no-promisc does not apply)");
        }
    }
    if !queues.is_empty() {
        // One worker per queue, as Suricata's -q; every packet waits for
        // its verdict (drop and reject rules drop, stream and app layer
        // inspect data as it arrives).
        ecfg.workers = queues.len();
    }
    // Inline (-q, --inline): every packet waits for its verdict (drop and
    // reject rules drop, stream and app layer inspect data as it arrives,
    // exception policies fail closed by default).
    crate::run::set_inline(&mut ecfg, &cfg, !queues.is_empty() || !bridges.is_empty())?;
    osettings.inline = ecfg.inline;
    if ecfg.slice.is_some() && (!queues.is_empty() || !bridges.is_empty()) {
        // An inline input needs a verdict for every frame, and a frame of
        // another slice would have to be let through uninspected.
        bail!("--slice applies to capture (-r, -i), not to inline (-q, --inline): every packet held inline must be inspected by this sensor");
    }
    let workers = ecfg.workers;
    // Inputs first: a missing interface, queue or permission is said
    // before the rules take seconds to load.
    let mut inputs: Vec<Vec<Box<dyn LiveInput>>> = (0..workers).map(|_| Vec::new()).collect();
    let fail_open = cfg
        .get_str("nfq.fail-open")
        .is_some_and(|v| crate::config::truthy(&v));
    for (w, &q) in queues.iter().enumerate() {
        let qc = vigil_inline::QueueConfig {
            queue: q,
            fail_open,
            ..vigil_inline::QueueConfig::default()
        };
        let queue =
            vigil_inline::Queue::open(&qc).map_err(|e| anyhow::anyhow!("NFQUEUE {q}: {e}"))?;
        let sender = match vigil_inline::RawSender::new() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("vigil: warning: no raw socket for reject answers ({e}); reject rules will only drop");
                None
            }
        };
        inputs[w].push(Box::new(QueueInput {
            queue,
            name: format!("nfq{q}"),
            sender,
            accept_up_to: None,
        }));
    }
    for (i, iface) in args.interfaces.iter().enumerate() {
        let group = (std::process::id() as u16)
            .wrapping_mul(31)
            .wrapping_add(i as u16);
        let rc = RingConfig {
            fanout_group: group,
            ..ring_cfg.clone()
        };
        for (w, ins) in inputs.iter_mut().enumerate() {
            let input = RingInput::open(iface, &rc)
                .map_err(|e| anyhow::anyhow!("{iface}: {e}"))
                .with_context(|| format!("opening the capture ring of worker {w}"))?;
            ins.push(Box::new(input));
        }
    }
    // The bridges: each worker opens one ring on each interface, and the
    // rings of an interface form one fanout group. The kernel's hash is
    // symmetric (both directions of a flow hash alike) and picks the
    // member at index `(hash * members) >> 32` (`fanout_demux_hash`):
    // from the hash and the member count alone, not the interface; a
    // member's index is the order in which it joined. Opening the rings
    // of each interface for workers 0, 1, ... in that order makes member
    // i worker i in both groups, so a flow's frames from A (group of A)
    // and its replies from B (group of B) reach the same worker.
    let bridge_cfg = crate::bridge::bridge_ring_config(&ring_cfg);
    let per_worker = 2 * bridges.len();
    let waits: Vec<_> = (0..workers)
        .map(|_| crate::bridge::WaitSet::new(per_worker))
        .collect();
    for (b, (a_if, b_if)) in bridges.iter().enumerate() {
        for (side, (iface, peer)) in [(a_if, b_if), (b_if, a_if)].into_iter().enumerate() {
            let group = (std::process::id() as u16)
                .wrapping_mul(31)
                .wrapping_add((2 * b + side) as u16);
            let rc = RingConfig {
                fanout_group: group,
                ..bridge_cfg.clone()
            };
            for (w, ins) in inputs.iter_mut().enumerate() {
                let input = crate::bridge::BridgeInput::open(
                    iface,
                    peer,
                    &rc,
                    waits[w].clone(),
                    2 * b + side,
                )
                .map_err(|e| anyhow::anyhow!("{iface}: {e}"))
                .with_context(|| format!("opening the bridge {a_if}:{b_if} for worker {w}"))?;
                ins.push(Box::new(input));
            }
        }
    }
    // No capture file to measure `--prefilter auto` on: it uses its
    // cached choices for this ruleset, else the static rule.
    let no_sample = Path::new("");
    let d = crate::run::load_detection(&args, &cfg, no_sample, false, true)?;
    std::fs::create_dir_all(&args.log_dir)
        .with_context(|| format!("cannot create log directory {}", args.log_dir.display()))?;
    let _pid = args.pidfile.as_deref().map(PidFile::create).transpose()?;
    let metrics = vigil_metrics::Metrics::default();
    let _server = match &args.metrics {
        Some(addr) => Some(
            vigil_metrics::MetricsServer::start(addr, metrics.clone())
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        ),
        None => None,
    };
    let stats_interval = cfg
        .get_str("stats.interval")
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| *x > 0.0)
                .with_context(|| format!("stats.interval: '{v}' is not a number of seconds"))
        })
        .transpose()?
        .unwrap_or(8.0);
    let info = Arc::new(std::sync::Mutex::new(ReloadInfo {
        rules_loaded: d.report.loaded as u64,
        ..ReloadInfo::default()
    }));
    let reopen = Arc::new(AtomicBool::new(false));
    let mut out = LiveOutput {
        sink: crate::run::open_sink(&args.log_dir, &osettings, true)?,
        settings: osettings,
        log_dir: args.log_dir.clone(),
        reopen: reopen.clone(),
        stats_interval: Duration::from_secs_f64(stats_interval),
        last_stats: Instant::now(),
        metrics: args.metrics.as_ref().map(|_| metrics.clone()),
        report: info.clone(),
        bridge: !bridges.is_empty(),
        slice: ecfg.slice,
    };
    // Sensors linked through Redis (`--slice` with `--sensor-redis`).
    let peers = crate::sensors::link(&args, &cfg, &mut ecfg, &d.detect.rules)?;
    let control = LiveControl::new(Arc::new(d.detect));
    // Signals set flags; the control thread acts on them.
    let stop = Arc::new(AtomicBool::new(false));
    let reload = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGUSR2, reload.clone())
        .context("installing signal handlers")?;
    signal_hook::flag::register(signal_hook::consts::SIGHUP, reopen.clone())
        .context("installing signal handlers")?;
    if !bridges.is_empty() {
        eprintln!(
            "vigil: live inline bridge {} with {workers} worker(s) (fail-closed: nothing passes while vigil is not running); loaded in {:.2}s",
            bridges
                .iter()
                .map(|(a, b)| format!("{a}:{b}"))
                .collect::<Vec<_>>()
                .join(", "),
            load_start.elapsed().as_secs_f64()
        );
    } else if queues.is_empty() {
        eprintln!(
            "vigil: live on {} with {workers} worker(s) (fanout {}, {} rings of {} x {} bytes); loaded in {:.2}s",
            args.interfaces.join(", "),
            args.fanout,
            workers * args.interfaces.len(),
            ring_cfg.block_count,
            ring_cfg.block_size,
            load_start.elapsed().as_secs_f64()
        );
    } else {
        eprintln!(
            "vigil: live inline on NFQUEUE {} with {workers} worker(s) ({}); loaded in {:.2}s",
            queues
                .iter()
                .map(|q| q.to_string())
                .collect::<Vec<_>>()
                .join(","),
            if fail_open {
                "fail-open when a queue is full"
            } else {
                "fail-closed"
            },
            load_start.elapsed().as_secs_f64()
        );
    }
    crate::processing_memory();
    let finished = Arc::new(AtomicBool::new(false));
    let stats = std::thread::scope(|scope| -> Result<RunStats> {
        let ctl = control.clone();
        let fin = finished.clone();
        let args_ref = &args;
        scope.spawn(move || {
            control_loop(args_ref, &ctl, &stop, &reload, &fin, &info);
        });
        let r = vigil_engine::run_live(
            inputs,
            control.clone(),
            &ecfg,
            &LiveConfig {
                slice: ecfg.slice,
                ..LiveConfig::default()
            },
            &mut out,
        );
        finished.store(true, Ordering::SeqCst);
        r.map_err(|e| anyhow::anyhow!("{e}"))
    })?;
    if let Some(p) = &peers {
        // Tell the others this sensor left, then let the queue go out.
        vigil_engine::PeerLink::publish(&**p, &[], u64::MAX);
        p.finish(Duration::from_secs(2));
    }
    eprintln!(
        "vigil: {} packets, {} bytes, {} alerts ({} suppressed by thresholds), {} flows; ran {:.1}s",
        stats.packets_read,
        stats.bytes_read,
        stats.alerts_written,
        stats.alerts_suppressed,
        stats.workers.flows_created,
        stats.wall.as_secs_f64()
    );
    if let (Some(limit), Some(p)) = (
        crate::run::profile_rules_limit(&args, &cfg)?,
        &stats.workers.rule_profile,
    ) {
        // After a reload the profile covers the rules loaded last.
        crate::run::write_rule_profile(&args.log_dir, &control.engine(), p, limit)?;
    }
    crate::run::save_datasets(&control.engine());
    Ok(ExitCode::SUCCESS)
}

/// Acts on the signal flags until the run is over: stop, reload the rules
/// (built beside the running engine, then swapped in; a failed load keeps
/// the old rules).
fn control_loop(
    args: &RunArgs,
    control: &LiveControl,
    stop: &AtomicBool,
    reload: &AtomicBool,
    finished: &AtomicBool,
    info: &std::sync::Mutex<ReloadInfo>,
) {
    while !finished.load(Ordering::SeqCst) {
        if stop.load(Ordering::SeqCst) && !control.stopping() {
            eprintln!("vigil: stopping: draining the rings and ending every flow");
            control.stop();
        }
        if reload.swap(false, Ordering::SeqCst) && !control.stopping() {
            let t = Instant::now();
            // The running sets' `state` / `save` files first: the new
            // ruleset's sets start from them (sets only `load`ed are read
            // afresh, as Suricata's reload does).
            crate::run::save_datasets(&control.engine());
            let r = crate::run::load_config(args).and_then(|cfg| {
                crate::run::load_detection(args, &cfg, Path::new(""), false, false)
            });
            // A reload is all or nothing: a rule file with an error
            // keeps the running rules (at start the good rules load and
            // the bad ones are reported; on a running sensor a typo must
            // not silently drop rules).
            let r = r.and_then(|d| {
                if d.diagnostics.is_empty() {
                    Ok(d)
                } else {
                    let shown: Vec<&str> =
                        d.diagnostics.iter().take(5).map(String::as_str).collect();
                    Err(anyhow::anyhow!(
                        "{} rule(s) failed to load: {}{}",
                        d.diagnostics.len(),
                        shown.join("; "),
                        if d.diagnostics.len() > 5 { "; ..." } else { "" }
                    ))
                }
            });
            match r {
                Ok(d) => {
                    let loaded = d.report.loaded;
                    control.swap_engine(Arc::new(d.detect));
                    if let Ok(mut i) = info.lock() {
                        i.reloads += 1;
                        i.rules_loaded = loaded as u64;
                    }
                    eprintln!(
                        "vigil: rules reloaded: {loaded} loaded; built in {:.2}s",
                        t.elapsed().as_secs_f64()
                    );
                    report_skips(&d.report);
                }
                Err(e) => {
                    if let Ok(mut i) = info.lock() {
                        i.failures += 1;
                    }
                    eprintln!("vigil: rule reload failed, the old rules stay: {e:#}");
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn report_skips(r: &BuildReport) {
    if !r.skipped.is_empty() {
        eprintln!("vigil: {} rules skipped on reload", r.skipped.len());
    }
}

/// `vigil ctl ...`: signals a running instance.
pub fn ctl(cmd: CtlCommand) -> Result<ExitCode> {
    let (a, sig, what): (&CtlArgs, i32, &str) = match &cmd {
        CtlCommand::ReloadRules(a) => (a, libc::SIGUSR2, "reload the rules"),
        CtlCommand::ReopenLogs(a) => (a, libc::SIGHUP, "reopen its output files"),
        CtlCommand::Stop(a) => (a, libc::SIGTERM, "stop"),
    };
    let pid = match (a.pid, &a.pidfile) {
        (Some(p), _) => p,
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read pid file {}", f.display()))?;
            text.trim()
                .parse::<i32>()
                .ok()
                .filter(|p| *p > 0)
                .with_context(|| format!("{}: not a process id", f.display()))?
        }
        (None, None) => bail!("give --pidfile FILE or --pid PID"),
    };
    // SAFETY: kill(2) with a positive pid and a valid signal number only
    // sends a signal; it touches no memory of ours.
    let r = unsafe { libc::kill(pid, sig) };
    if r != 0 {
        bail!(
            "cannot signal process {pid}: {}",
            std::io::Error::last_os_error()
        );
    }
    eprintln!("vigil: asked process {pid} to {what}");
    Ok(ExitCode::SUCCESS)
}
