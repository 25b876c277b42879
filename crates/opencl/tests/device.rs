//! Device tests (PoCL in CI). Without an OpenCL platform they skip with a
//! note, unless `VIGIL_REQUIRE_OPENCL=1` (CI), where they fail.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use vigil_opencl::{DeviceMatcher, Handle, Lane, LaneConfig, OpenClEngine};
use vigil_prefilter::{EngineKind, Pattern, PrefilterEngine};

fn have_device() -> bool {
    match vigil_opencl::devices() {
        Ok(d) if !d.is_empty() => true,
        r => {
            let why = match r {
                Err(e) => e.to_string(),
                Ok(_) => "no OpenCL device".into(),
            };
            if vigil_opencl::required_by_env() {
                panic!("VIGIL_REQUIRE_OPENCL=1 but {why}");
            }
            eprintln!("note: skipping device test: {why}");
            false
        }
    }
}

/// Small xorshift generator (deterministic).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize, alphabet: &[u8]) -> Vec<u8> {
        (0..n)
            .map(|_| alphabet[self.below(alphabet.len())])
            .collect()
    }
}

const ALPHA: &[u8] = b"abcAB\x00\xffxyz";

fn patterns(rng: &mut Rng, n: usize, id0: u32) -> Vec<Pattern> {
    (0..n)
        .map(|i| {
            let len = 1 + rng.below(5);
            Pattern {
                id: id0 + i as u32,
                bytes: rng.bytes(len, ALPHA),
                nocase: rng.below(2) == 0,
            }
        })
        .collect()
}

fn cpu_set(e: &dyn PrefilterEngine, hay: &[u8]) -> BTreeSet<(u32, u32)> {
    let mut s = BTreeSet::new();
    e.scan_batch(&[hay], &mut |m| {
        s.insert((m.pattern, m.end));
    });
    s
}

fn cpu_multiset(e: &dyn PrefilterEngine, hay: &[u8]) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    e.scan_batch(&[hay], &mut |m| v.push((m.pattern, m.end)));
    v.sort_unstable();
    v
}

fn lane_multiset(l: &Lane, h: Handle) -> Vec<(u32, u32)> {
    let mut v = l.matches(h).expect("results held").to_vec();
    v.sort_unstable();
    v
}

#[test]
fn shared_vectors_ac_full_on_the_device() {
    if !have_device() {
        return;
    }
    vigil_prefilter::vectors::check_engine_rounds(
        |p| Box::new(OpenClEngine::new(EngineKind::AcFull, p, 0, LaneConfig::default()).unwrap()),
        40,
    );
}

#[test]
fn shared_vectors_ac_compact_on_the_device() {
    if !have_device() {
        return;
    }
    vigil_prefilter::vectors::check_engine_rounds(
        |p| {
            Box::new(OpenClEngine::new(EngineKind::AcCompact, p, 0, LaneConfig::default()).unwrap())
        },
        40,
    );
}

#[test]
fn wide_ac_full_ids_on_the_device() {
    if !have_device() {
        return;
    }
    // Enough states for AC-Full's u32 layout.
    let mut p: Vec<Pattern> = (0..9000u32)
        .map(|i| Pattern {
            id: i,
            bytes: format!("\u{2}{i:05}zzzz").into_bytes(),
            nocase: false,
        })
        .collect();
    p.push(Pattern {
        id: 99_999,
        bytes: b"Needle".to_vec(),
        nocase: false,
    });
    let e = OpenClEngine::new(EngineKind::AcFull, &p, 0, LaneConfig::default()).unwrap();
    let cpu = EngineKind::AcFull.build(&p).unwrap();
    let hay = b"xx\x0200042zzzz Needle needle \x0208999zzzz".to_vec();
    let mut got = BTreeSet::new();
    e.scan_batch(&[&hay], &mut |m| {
        got.insert((m.pattern, m.end));
    });
    assert_eq!(got, cpu_set(cpu.as_ref(), &hay));
    assert_eq!(got.len(), 3);
}

/// Groups of every kind in one batch: AC-Full, AC-Compact, a CPU-only
/// engine (Wu-Manber) and a group without a prefilter.
fn mixed_groups(rng: &mut Rng) -> Vec<Option<Arc<dyn PrefilterEngine>>> {
    let mk = |k: EngineKind, p: &[Pattern]| -> Option<Arc<dyn PrefilterEngine>> {
        Some(Arc::from(k.build(p).unwrap()))
    };
    vec![
        mk(EngineKind::AcFull, &patterns(rng, 40, 0)),
        mk(EngineKind::AcCompact, &patterns(rng, 40, 1000)),
        mk(EngineKind::Wm, &patterns(rng, 40, 2000)),
        None,
        mk(EngineKind::AcCompact, &patterns(rng, 3, 3000)),
    ]
}

#[test]
fn every_group_kind_in_one_batch_matches_the_cpu() {
    if !have_device() {
        return;
    }
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let groups = mixed_groups(&mut rng);
    let m = DeviceMatcher::new(0, groups.clone()).unwrap();
    assert!(m.on_device(0) && m.on_device(1) && !m.on_device(2) && !m.on_device(3));
    assert!(m.on_device(4));
    let mut lane = Lane::new(
        m.clone(),
        LaneConfig {
            queues: 3,
            max_bytes: 8 << 10,
            max_buffers: 37,
            ..LaneConfig::default()
        },
    )
    .unwrap();
    let now = Instant::now();
    let mut work = Vec::new();
    for i in 0..600 {
        let g = i % groups.len();
        let n = rng.below(700);
        let hay = rng.bytes(n, ALPHA);
        let h = if lane.wants(g, hay.len(), now) {
            Some(lane.push(g as u32, &hay, now).unwrap())
        } else {
            None
        };
        work.push((g, hay, h));
    }
    lane.flush().unwrap();
    let mut device = 0;
    for (g, hay, h) in &work {
        let Some(h) = h else { continue };
        lane.wait(h.seq).unwrap();
        let e = groups[*g].as_deref().unwrap();
        assert_eq!(lane_multiset(&lane, *h), cpu_multiset(e, hay), "group {g}");
        device += 1;
    }
    assert!(device > 300);
    assert!(lane.stats.batches > 5, "{:?}", lane.stats);
    assert!(lane.stats.inflight_max >= 2, "{:?}", lane.stats);
    assert!(lane.stats.cpu_buffers > 0);
}

#[test]
fn output_area_overflow_is_rerun_on_the_cpu() {
    if !have_device() {
        return;
    }
    let p = vec![
        Pattern {
            id: 1,
            bytes: b"a".to_vec(),
            nocase: true,
        },
        Pattern {
            id: 2,
            bytes: b"aa".to_vec(),
            nocase: false,
        },
    ];
    for kind in [EngineKind::AcFull, EngineKind::AcCompact] {
        let cpu: Arc<dyn PrefilterEngine> = Arc::from(kind.build(&p).unwrap());
        let m = DeviceMatcher::new(0, vec![Some(cpu.clone())]).unwrap();
        let mut lane = Lane::new(
            m,
            LaneConfig {
                output_entries: 50,
                ..LaneConfig::default()
            },
        )
        .unwrap();
        let now = Instant::now();
        let bufs: Vec<Vec<u8>> = vec![
            b"xxaxx".to_vec(),
            vec![b'A'; 200],
            b"no match".to_vec(),
            b"aAa".to_vec(),
            vec![b'a'; 40],
        ];
        let hs: Vec<Handle> = bufs.iter().map(|b| lane.push(0, b, now).unwrap()).collect();
        lane.flush().unwrap();
        lane.wait(hs[hs.len() - 1].seq).unwrap();
        for (b, h) in bufs.iter().zip(&hs) {
            assert_eq!(lane_multiset(&lane, *h), cpu_multiset(cpu.as_ref(), b));
        }
        assert_eq!(lane.stats.overflow_batches, 1, "{kind}");
        assert!(lane.stats.overflow_reruns >= 1, "{kind}");
    }
}

#[test]
fn a_batch_that_times_out_half_full_is_launched_and_correct() {
    if !have_device() {
        return;
    }
    let mut rng = Rng(42);
    let p = patterns(&mut rng, 30, 0);
    let cpu: Arc<dyn PrefilterEngine> = Arc::from(EngineKind::AcCompact.build(&p).unwrap());
    let m = DeviceMatcher::new(0, vec![Some(cpu.clone())]).unwrap();
    let mut lane = Lane::new(
        m,
        LaneConfig {
            fixed_buffers: Some(64),
            max_latency: Duration::from_millis(20),
            ..LaneConfig::default()
        },
    )
    .unwrap();
    let t0 = Instant::now();
    let bufs: Vec<Vec<u8>> = (0..32).map(|_| rng.bytes(300, ALPHA)).collect();
    let hs: Vec<Handle> = bufs.iter().map(|b| lane.push(0, b, t0).unwrap()).collect();
    // Half full: not launched, not ready, not yet due.
    assert_eq!(lane.in_flight(), 0);
    assert!(!lane.ready(hs[0].seq));
    assert!(!lane.launch_if_due(t0 + Duration::from_millis(5)).unwrap());
    let due = lane.deadline().unwrap();
    assert_eq!(due, t0 + Duration::from_millis(20));
    assert!(lane.launch_if_due(due).unwrap());
    assert_eq!(lane.stats.batches_timed_out, 1);
    lane.wait(hs[0].seq).unwrap();
    assert!(lane.ready(hs[0].seq));
    for (b, h) in bufs.iter().zip(&hs) {
        assert_eq!(lane_multiset(&lane, *h), cpu_multiset(cpu.as_ref(), b));
    }
    assert_eq!(lane.stats.batches, 1);
    assert_eq!(lane.stats.device_buffers, 32);
}

#[test]
fn buffers_straddling_the_threshold() {
    if !have_device() {
        return;
    }
    let mut rng = Rng(7);
    let p = patterns(&mut rng, 20, 0);
    let cpu: Arc<dyn PrefilterEngine> = Arc::from(EngineKind::AcFull.build(&p).unwrap());
    let m = DeviceMatcher::new(0, vec![Some(cpu.clone())]).unwrap();
    let mut lane = Lane::new(
        m,
        LaneConfig {
            cpu_threshold: 64,
            max_bytes: 4096,
            ..LaneConfig::default()
        },
    )
    .unwrap();
    let now = Instant::now();
    assert!(!lane.wants(0, 63, now));
    assert!(lane.wants(0, 64, now));
    assert!(lane.wants(0, 4096, now));
    assert!(!lane.wants(0, 4097, now), "larger than the batch area");
    assert!(!lane.wants(0, 0, now));
    let mut hs = Vec::new();
    for len in [1usize, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000] {
        let b = rng.bytes(len, ALPHA);
        if lane.wants(0, len, now) {
            hs.push((b.clone(), lane.push(0, &b, now).unwrap()));
        }
    }
    assert_eq!(hs.len(), 6);
    lane.flush().unwrap();
    lane.wait(hs.last().unwrap().1.seq).unwrap();
    for (b, h) in &hs {
        assert_eq!(lane_multiset(&lane, *h), cpu_multiset(cpu.as_ref(), b));
    }
    // 63, 4097 and 0 above, then 1, 15, 16, 17 and 63.
    assert_eq!(lane.stats.cpu_buffers, 3 + 5);
}

#[test]
fn calibration_finds_a_threshold() {
    if !have_device() {
        return;
    }
    let mut rng = Rng(11);
    let p = patterns(&mut rng, 200, 0);
    let cpu: Arc<dyn PrefilterEngine> = Arc::from(EngineKind::AcCompact.build(&p).unwrap());
    let m = DeviceMatcher::new(0, vec![Some(cpu)]).unwrap();
    let mut lane = Lane::new(m, LaneConfig::default()).unwrap();
    let sample = rng.bytes(64 << 10, ALPHA);
    let c = lane.calibrate(&sample).unwrap();
    assert_eq!(c.rows.len(), 8);
    eprintln!("calibration: threshold {} rows {:?}", c.threshold, c.rows);
    assert_eq!(lane.stats.batches, 0, "calibration stats are reset");
}
