//! The live pipeline with in-memory inputs standing in for capture rings:
//! the same alerts as offline, timeouts on the wall clock when nothing
//! arrives, a rule swap that applies to later packets and keeps flowbits,
//! stop drains what is left, and capture counters reach the output.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{engine, run_pcap, write_pcap};
use vigil_craft::PacketBuilder;
use vigil_detect::CompiledRule;
use vigil_engine::{
    dispatch_hash, run_live, AlertOut, AlertSink, EngineConfig, InputCounters, InputError,
    LiveConfig, LiveControl, LiveFrame, LiveInput, LiveSink, LiveSnapshot, OutKind, RunStats,
};

/// Frames handed out from a shared queue per worker; `gate` holds back
/// frames until the test lets them go (`released` frames so far).
struct QueueInput {
    queue: Arc<Mutex<VecDeque<Vec<u8>>>>,
    released: Arc<AtomicUsize>,
    taken: usize,
    counters: InputCounters,
}

impl LiveInput for QueueInput {
    fn name(&self) -> &str {
        "test0"
    }

    fn poll(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(LiveFrame<'_>),
    ) -> Result<usize, InputError> {
        let mut n = 0;
        while self.taken < self.released.load(Ordering::SeqCst) {
            let Some(frame) = self.queue.lock().unwrap().pop_front() else {
                break;
            };
            self.taken += 1;
            n += 1;
            self.counters.kernel_packets += 1;
            let ts = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as i64;
            f(LiveFrame {
                ts_ns: ts,
                linktype: 1,
                data: &frame,
                orig_len: frame.len() as u32,
                token: 0,
            });
        }
        if n == 0 {
            std::thread::sleep(timeout.min(Duration::from_millis(20)));
        }
        Ok(n)
    }

    fn counters(&mut self) -> InputCounters {
        self.counters
    }

    fn reopen(&mut self) -> Result<(), InputError> {
        Ok(())
    }
}

#[derive(Default)]
struct Seen {
    alerts: Vec<(u32, Instant)>,
    /// Alerts whose action a rate filter changed.
    rate_filtered: Vec<(u32, vigil_rules::Action)>,
    tx_logs: usize,
    snaps: Vec<(Instant, LiveSnapshot, bool)>,
    swaps: usize,
}

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Seen>>);

impl AlertSink for Collect {
    fn alert(&mut self, _a: &AlertOut, r: &CompiledRule) -> std::io::Result<()> {
        self.0.lock().unwrap().alerts.push((r.sid, Instant::now()));
        Ok(())
    }
    fn alert_rate_filtered(
        &mut self,
        _a: &AlertOut,
        r: &CompiledRule,
        action: vigil_rules::Action,
    ) -> std::io::Result<()> {
        let mut seen = self.0.lock().unwrap();
        seen.alerts.push((r.sid, Instant::now()));
        seen.rate_filtered.push((r.sid, action));
        Ok(())
    }
    fn tx_log(&mut self, a: &AlertOut) -> std::io::Result<()> {
        assert_eq!(a.kind, OutKind::TxLog);
        self.0.lock().unwrap().tx_logs += 1;
        Ok(())
    }
}

impl LiveSink for Collect {
    fn tick(&mut self, snap: &LiveSnapshot, last: bool) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap()
            .snaps
            .push((Instant::now(), snap.clone(), last));
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn swapped(&mut self, _worker: usize, _pause: Duration) {
        self.0.lock().unwrap().swaps += 1;
    }
}

type Queues = Vec<Arc<Mutex<VecDeque<Vec<u8>>>>>;

/// `workers` inputs fed as a symmetric-hash fanout would feed them.
fn inputs(
    frames: &[Vec<u8>],
    workers: usize,
    released: &Arc<AtomicUsize>,
) -> (Vec<Vec<Box<dyn LiveInput>>>, Queues) {
    let queues: Queues = (0..workers)
        .map(|_| Arc::new(Mutex::new(VecDeque::new())))
        .collect();
    for f in frames {
        let w = (dispatch_hash(1, f) % workers as u64) as usize;
        queues[w].lock().unwrap().push_back(f.clone());
    }
    let ins = queues
        .iter()
        .map(|q| {
            vec![Box::new(QueueInput {
                queue: q.clone(),
                released: released.clone(),
                taken: 0,
                counters: InputCounters::default(),
            }) as Box<dyn LiveInput>]
        })
        .collect();
    (ins, queues)
}

fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

fn run_in_background(
    ins: Vec<Vec<Box<dyn LiveInput>>>,
    control: Arc<LiveControl>,
    cfg: EngineConfig,
    sink: Collect,
) -> std::thread::JoinHandle<RunStats> {
    std::thread::spawn(move || {
        let mut sink = sink;
        run_live(ins, control, &cfg, &LiveConfig::default(), &mut sink).expect("live run")
    })
}

#[test]
fn live_finds_what_offline_finds_on_the_demo_capture() {
    let frames: Vec<Vec<u8>> = vigil_craft::demo::demo_capture()
        .into_iter()
        .map(|(_, f)| f)
        .collect();
    let rules: String = vigil_craft::demo::DEMO_RULES
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let rules = rules.as_str();
    let cfg = EngineConfig {
        workers: 2,
        ..EngineConfig::default()
    };
    let path = write_pcap("live-demo", vigil_craft::demo::demo_capture());
    let (offline, ostats) = run_pcap(&path, engine(rules), &cfg);
    let _ = std::fs::remove_file(&path);
    assert!(!offline.is_empty());

    let released = Arc::new(AtomicUsize::new(usize::MAX));
    let (ins, queues) = inputs(&frames, 2, &released);
    let control = LiveControl::new(engine(rules));
    let sink = Collect::default();
    let h = run_in_background(ins, control.clone(), cfg, sink.clone());
    assert!(wait_until(Duration::from_secs(10), || queues
        .iter()
        .all(|q| q.lock().unwrap().is_empty())));
    control.stop();
    let stats = h.join().expect("live thread");
    let seen = sink.0.lock().unwrap();
    let count = |v: Vec<u32>| {
        let mut m = BTreeMap::new();
        for s in v {
            *m.entry(s).or_insert(0) += 1;
        }
        m
    };
    assert_eq!(
        count(seen.alerts.iter().map(|a| a.0).collect()),
        count(offline.iter().map(|a| a.sid).collect()),
        "live alerts differ from offline"
    );
    assert_eq!(stats.workers.pkts, ostats.workers.pkts);
    assert_eq!(stats.workers.pkts, frames.len() as u64);
    assert_eq!(stats.alerts_written, offline.len() as u64);
    assert!(seen.tx_logs > 0, "transaction records are written live too");
    // The last tick carries the capture counters of every input; they add
    // up to the packets decoded (no drops here).
    let (_, last, is_last) = seen.snaps.last().expect("a final tick");
    assert!(*is_last);
    let kernel: u64 = last
        .interfaces()
        .iter()
        .map(|(_, c)| c.kernel_packets)
        .sum();
    assert_eq!(kernel, frames.len() as u64);
    assert_eq!(last.totals().pkts, frames.len() as u64);
}

fn udp(sport: u16, payload: &[u8]) -> Vec<u8> {
    PacketBuilder::new().ipv4_udp(
        Ipv4Addr::new(10, 0, 0, 1),
        sport,
        Ipv4Addr::new(10, 0, 0, 2),
        5000,
        payload,
    )
}

#[test]
fn an_idle_flow_times_out_on_the_wall_clock() {
    let mut cfg = EngineConfig {
        workers: 1,
        ..EngineConfig::default()
    };
    cfg.timeouts.udp.new = 1;
    cfg.timeouts.udp.established = 1;
    let released = Arc::new(AtomicUsize::new(usize::MAX));
    let (ins, _q) = inputs(&[udp(4000, b"hello")], 1, &released);
    let control = LiveControl::new(engine(
        "alert udp any any -> any any (content:\"zzz\"; sid:1;)",
    ));
    let sink = Collect::default();
    let start = Instant::now();
    let h = run_in_background(ins, control.clone(), cfg, sink.clone());
    // Nothing else arrives: the flow ends by the wall clock, within its
    // timeout (1 s), the one-second granularity of the clock, and a tick.
    let timed_out = wait_until(Duration::from_secs(6), || {
        sink.0
            .lock()
            .unwrap()
            .snaps
            .iter()
            .any(|(_, s, _)| s.totals().flows_timed_out == 1)
    });
    let after = start.elapsed();
    control.stop();
    let stats = h.join().unwrap();
    assert!(timed_out, "the idle flow was not timed out");
    assert!(
        after < Duration::from_secs(4),
        "timed out only after {after:?}"
    );
    assert_eq!(stats.workers.flows_timed_out, 1);
    assert_eq!(stats.workers.flows_active_at_end, 0);
}

#[test]
fn swapped_rules_apply_to_later_packets_and_keep_flowbits() {
    let cfg = EngineConfig {
        workers: 1,
        ..EngineConfig::default()
    };
    let frames = vec![
        udp(4000, b"first LOGIN"),
        udp(4000, b"second SECRET"),
        udp(4000, b"third SECRET"),
    ];
    let released = Arc::new(AtomicUsize::new(1));
    let (ins, _q) = inputs(&frames, 1, &released);
    let old = "alert udp any any -> any any (content:\"LOGIN\"; flowbits:set,logged_in; sid:1;)\n\
               alert udp any any -> any any (content:\"SECRET\"; sid:2;)";
    let new = "alert udp any any -> any any (content:\"SECRET\"; flowbits:isset,logged_in; sid:3;)\n\
               alert udp any any -> any any (content:\"LOGIN\"; flowbits:set,other; flowbits:set,logged_in; sid:4;)";
    let control = LiveControl::new(engine(old));
    let sink = Collect::default();
    let h = run_in_background(ins, control.clone(), cfg, sink.clone());
    assert!(wait_until(Duration::from_secs(5), || sink
        .0
        .lock()
        .unwrap()
        .alerts
        .len()
        == 1));
    control.swap_engine(engine(new));
    assert!(wait_until(Duration::from_secs(5), || sink
        .0
        .lock()
        .unwrap()
        .swaps
        == 1));
    released.store(3, Ordering::SeqCst);
    assert!(wait_until(Duration::from_secs(5), || sink
        .0
        .lock()
        .unwrap()
        .alerts
        .len()
        == 3));
    control.stop();
    h.join().unwrap();
    let sids: Vec<u32> = sink.0.lock().unwrap().alerts.iter().map(|a| a.0).collect();
    // sid 2 is gone; sid 3 sees the flowbit sid 1 set under the old rules
    // (its index differs in the new engine: carried over by name).
    assert_eq!(sids, vec![1, 3, 3]);
}

#[test]
fn stop_ends_every_flow_and_returns_promptly() {
    let cfg = EngineConfig {
        workers: 2,
        ..EngineConfig::default()
    };
    let frames: Vec<Vec<u8>> = (0..50).map(|i| udp(1000 + i, b"data")).collect();
    let released = Arc::new(AtomicUsize::new(usize::MAX));
    let (ins, queues) = inputs(&frames, 2, &released);
    let control = LiveControl::new(engine(
        "alert udp any any -> any any (content:\"data\"; sid:9;)",
    ));
    let sink = Collect::default();
    let h = run_in_background(ins, control.clone(), cfg, sink.clone());
    assert!(wait_until(Duration::from_secs(5), || queues
        .iter()
        .all(|q| q.lock().unwrap().is_empty())));
    let t = Instant::now();
    control.stop();
    let stats = h.join().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "stop took {:?}",
        t.elapsed()
    );
    assert_eq!(stats.workers.pkts, 50);
    assert_eq!(stats.workers.flows_active_at_end, 50);
    assert_eq!(sink.0.lock().unwrap().alerts.len(), 50);
}

#[test]
fn replay_speed_paces_a_capture_by_its_timestamps() {
    let t0 = 1_700_000_000i64;
    let frames = vec![
        ((t0, 0u32), udp(4000, b"one")),
        ((t0 + 3, 0u32), udp(4001, b"two")),
    ];
    let path = write_pcap("replay", frames);
    let mut cfg = EngineConfig {
        workers: 1,
        replay_speed: 2.0,
        ..EngineConfig::default()
    };
    cfg.timeouts.udp.new = 1;
    let rules = "alert udp any any -> any any (content:\"two\"; sid:1;)";
    let start = Instant::now();
    let (alerts, stats) = run_pcap(&path, engine(rules), &cfg);
    let paced = start.elapsed();
    // 3 s of capture at twice real time.
    assert!(paced >= Duration::from_millis(1400), "took {paced:?}");
    assert_eq!(alerts.len(), 1);
    // The first flow ended on the replay clock, before the second packet.
    assert_eq!(stats.workers.flows_timed_out, 1);
    cfg.replay_speed = 0.0;
    let (fast_alerts, fast_stats) = run_pcap(&path, engine(rules), &cfg);
    let _ = std::fs::remove_file(&path);
    assert_eq!(fast_alerts, alerts);
    assert_eq!(fast_stats.workers.flows_timed_out, 1);
}

#[test]
fn fragments_the_kernel_left_are_reassembled_by_the_worker() {
    // The fragmented SYN of the offline tests, the first fragment once.
    let f = common::fragmented_syn();
    let (first, second) = (f[0].1.clone(), f[2].1.clone());
    let cfg = EngineConfig {
        workers: 1,
        ..EngineConfig::default()
    };
    let released = Arc::new(AtomicUsize::new(usize::MAX));
    let (ins, queues) = inputs(&[first, second], 1, &released);
    let control = LiveControl::new(engine(
        "alert tcp any any -> any 80 (flags:S; flow:only_frag; sid:8;)",
    ));
    let sink = Collect::default();
    let h = run_in_background(ins, control.clone(), cfg, sink.clone());
    assert!(wait_until(Duration::from_secs(5), || queues[0]
        .lock()
        .unwrap()
        .is_empty()));
    assert!(wait_until(Duration::from_secs(5), || !sink
        .0
        .lock()
        .unwrap()
        .alerts
        .is_empty()));
    control.stop();
    let stats = h.join().unwrap();
    assert_eq!(sink.0.lock().unwrap().alerts[0].0, 8);
    assert_eq!(stats.defrag.reassembled, 1);
    assert_eq!(stats.defrag.fragments, 2);
}

#[test]
fn slices_split_live_flows_between_sensors() {
    let frames: Vec<Vec<u8>> = (0..60).map(|i| udp(2000 + i, b"data")).collect();
    let mut total_alerts = 0;
    for k in 0..2u32 {
        let slice = vigil_engine::Slice { index: k, count: 2 };
        let mine = frames
            .iter()
            .filter(|f| slice.owns(dispatch_hash(1, f)))
            .count() as u64;
        assert!(mine > 10 && mine < 50, "{mine} of 60 flows in slice {k}");
        let cfg = EngineConfig {
            workers: 2,
            ..EngineConfig::default()
        };
        let released = Arc::new(AtomicUsize::new(usize::MAX));
        let (ins, queues) = inputs(&frames, 2, &released);
        let control = LiveControl::new(engine(
            "alert udp any any -> any any (content:\"data\"; sid:9;)",
        ));
        let sink = Collect::default();
        let h = {
            let (control, mut sink) = (control.clone(), sink.clone());
            std::thread::spawn(move || {
                let live = LiveConfig {
                    slice: Some(slice),
                    ..LiveConfig::default()
                };
                run_live(ins, control, &cfg, &live, &mut sink).expect("live run")
            })
        };
        assert!(wait_until(Duration::from_secs(5), || queues
            .iter()
            .all(|q| q.lock().unwrap().is_empty())));
        control.stop();
        let stats = h.join().unwrap();
        assert_eq!(stats.workers.pkts, mine);
        let seen = sink.0.lock().unwrap();
        assert_eq!(seen.alerts.len() as u64, mine);
        total_alerts += seen.alerts.len();
        let (_, last, _) = seen.snaps.last().expect("a final tick");
        let skipped: u64 = last.interfaces().iter().map(|(_, c)| c.slice_skipped).sum();
        assert_eq!(skipped, 60 - mine);
    }
    assert_eq!(total_alerts, 60);
}

#[test]
fn rate_filter_changes_live_alert_actions() {
    let mut e = Arc::try_unwrap(engine(
        "alert udp any any -> any any (content:\"data\"; sid:9;)",
    ))
    .ok()
    .unwrap();
    let (tc, diags) = vigil_rules::ThresholdConfig::parse(
        "rate_filter gen_id 1, sig_id 9, track by_rule, count 2, seconds 60, new_action drop, timeout 60\n",
        "threshold.config",
        &vigil_rules::Vars::default(),
    );
    assert!(diags.is_empty());
    assert_eq!(e.apply_threshold_config(&tc).rate_filters, 1);
    let cfg = EngineConfig {
        workers: 2,
        ..EngineConfig::default()
    };
    let frames: Vec<Vec<u8>> = (0..6).map(|i| udp(3000 + i, b"data")).collect();
    let released = Arc::new(AtomicUsize::new(usize::MAX));
    let (ins, queues) = inputs(&frames, 2, &released);
    let control = LiveControl::new(Arc::new(e));
    let sink = Collect::default();
    let h = run_in_background(ins, control.clone(), cfg, sink.clone());
    assert!(wait_until(Duration::from_secs(5), || queues
        .iter()
        .all(|q| q.lock().unwrap().is_empty())));
    assert!(wait_until(Duration::from_secs(5), || sink
        .0
        .lock()
        .unwrap()
        .alerts
        .len()
        == 6));
    control.stop();
    h.join().unwrap();
    let seen = sink.0.lock().unwrap();
    // The first two matches keep the rule's action, the rest drop.
    assert_eq!(seen.alerts.len(), 6);
    assert_eq!(seen.rate_filtered, vec![(9, vigil_rules::Action::Drop); 4]);
}
