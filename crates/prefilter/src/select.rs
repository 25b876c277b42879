//! Engine selection per rule group: a fixed engine for every group, or
//! `auto`, which measures the candidate engines on a group's pattern set
//! against a sample of the traffic's payloads and keeps the cheapest —
//! Antonatos et al.'s hybrid (the best algorithm depends on the number of
//! patterns and the packet sizes), made automatic.
//!
//! Cost of an engine for a group = its measured scan cost (ns per sample
//! byte) x the bytes the group is expected to scan + its build time; with
//! no expected volume (live, or the benchmark), the scan cost alone. The
//! expected bytes of a group are the capture's size times the group's
//! share of the sampled payload bytes (the caller routes sampled packet
//! headers to its groups). So a group that sees most of the traffic gets
//! the fastest scanner even if it is slow to build (Hyperscan), and the
//! hundreds of groups that see little get one that builds in a
//! millisecond.
//!
//! Calibration is bounded: groups of a similar shape (distinct-pattern
//! count within 25%, same shortest-pattern class) behave alike — in ET
//! Open most port groups are the same few thousand port-independent
//! patterns plus a handful of their own — so the first group of a shape is
//! measured and its costs serve the others ("shared"); a time budget caps
//! the whole, after which groups get a static choice. Choices are cached on
//! disk (one file per ruleset, one line per group pattern set), so a second
//! load measures nothing. Whatever is chosen, every engine reports the same
//! matches, so the choice changes speed, never output.
//!
//! Groups with identical pattern lists share one engine.
//!
//! With a fixed engine the groups' engines are independent of each other,
//! so [`Selector::prebuild`] builds them on several threads before the
//! caller asks for them one by one; Hyperscan databases can also come from
//! an on-disk cache ([`Selector::set_hs_cache`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// The maps keyed by whole pattern lists: foldhash, not SipHash, which
// took a tenth of rule loading's instructions (each growth rehashes
// every key).
use foldhash::HashMap;

use crate::{AcFullEngine, BuildError, EngineKind, Pattern, PrefilterEngine};

/// How engines are chosen.
#[derive(Debug, Clone)]
pub enum Selection {
    /// The same engine for every group.
    Fixed(EngineKind),
    /// Measured per group.
    Auto(AutoConfig),
}

/// Settings of `auto`.
#[derive(Debug, Clone)]
pub struct AutoConfig {
    /// Payloads to measure on: a sample of the traffic to inspect, so that
    /// its packet-size mix and content drive the choice ([`Selector::new`]
    /// takes them out of the config).
    pub sample: Vec<Vec<u8>>,
    /// Bytes a group is expected to scan (offline: the capture's size),
    /// to weigh build time against scan time; `None`: scan cost only.
    pub expected_bytes: Option<u64>,
    /// Headers of sampled packets (with their payload sizes), for the
    /// caller to split `expected_bytes` between its groups (see
    /// [`Selector::build_for`]).
    pub traffic: Vec<TrafficSample>,
    /// Calibration cache (read at start, written by [`Selector::finish`]).
    pub cache_file: Option<PathBuf>,
    /// Time allowed for measuring, for the whole ruleset.
    pub budget: Duration,
    /// Engines considered (those not available are dropped).
    pub candidates: Vec<EngineKind>,
}

impl AutoConfig {
    /// Defaults: every available engine, scan cost only, a 3 s budget, no
    /// cache.
    pub fn new(sample: Vec<Vec<u8>>) -> AutoConfig {
        AutoConfig {
            sample,
            expected_bytes: None,
            traffic: Vec::new(),
            cache_file: None,
            budget: Duration::from_secs(3),
            candidates: EngineKind::available_kinds(),
        }
    }
}

/// One sampled packet: what decides its rule groups, and its payload size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrafficSample {
    pub proto: u8,
    pub sp: u16,
    pub dp: u16,
    pub bytes: u32,
}

/// Smallest traffic share assumed for a group (one the sample missed may
/// still see traffic).
pub const MIN_SHARE: f64 = 0.001;
/// Largest share of the sampled bytes a group may scan: TCP payloads are
/// scanned twice, once per packet and once more as reassembled stream
/// data.
pub const MAX_SHARE: f64 = 2.0;

/// Largest AC-Full table `auto` considers for one group.
pub const AUTO_AC_FULL_MAX_BYTES: usize = 64 << 20;

/// Largest AC-Full table `auto` considers for a group measured on its
/// own data ([`Selector::build_on`]): such groups are measured alone and
/// never in the whole-configuration check, and a measurement alone keeps
/// the table in the cache, which a run with hundreds of other groups
/// does not; a table that stays cache-resident (an L2's worth) is
/// measured at about the cost it has in the run.
pub const AUTO_AC_FULL_ALONE_MAX_BYTES: usize = 1 << 20;
/// AC-Full tables of all groups together, beyond which further groups get
/// AC-Compact (fixed `ac-full`) or are not offered AC-Full (`auto`).
pub const AC_FULL_TOTAL_BYTES: usize = 4 << 30;
/// Largest distinct-pattern count for which `auto` tries BMH (one pass
/// over the buffer per pattern).
pub const AUTO_BMH_MAX_PATTERNS: usize = 8;
/// Largest pattern count for which `auto` tries E2xB (one map probe per
/// pattern per buffer makes it slow past this).
pub const AUTO_E2XB_MAX_PATTERNS: usize = 4000;
/// Bytes of the sample measured per group.
const SAMPLE_BYTES: usize = 96 << 10;
/// Bytes of the sample the whole-configuration check scans through the
/// groups (larger: it must reach the groups that carry the traffic).
pub const WHOLE_SAMPLE_BYTES: usize = 1 << 20;

/// Indices of the non-empty payloads to keep so that about `max` bytes
/// remain, spread evenly over the whole list (which is in capture order)
/// rather than its beginning; all of them when they fit.
fn spread(payloads: &[Vec<u8>], max: usize) -> Vec<usize> {
    let total: usize = payloads.iter().map(Vec::len).sum();
    let ratio = if total <= max {
        1.0
    } else {
        max as f64 / total as f64
    };
    let mut credit = 0f64;
    let mut kept = 0usize;
    let mut out = Vec::new();
    for (i, p) in payloads.iter().enumerate() {
        if p.is_empty() {
            continue;
        }
        credit += p.len() as f64 * ratio;
        if credit >= p.len() as f64 && kept + p.len() <= max {
            credit -= p.len() as f64;
            kept += p.len();
            out.push(i);
        }
    }
    out
}

/// How a group's engine was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Fixed,
    /// Measured on this group.
    Calibrated,
    /// Measured on an earlier group of the same shape.
    Shared,
    /// From the on-disk cache.
    Cached,
    /// Calibration budget spent: static rule (one pattern: BMH, else AC).
    Static,
    /// Replaced by the whole-configuration check (see
    /// [`Selector::check_whole`]).
    Whole,
    /// The requested engine could not be built; another was.
    Fallback,
}

/// One engine's measurement on a pattern set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    pub kind: EngineKind,
    /// Scan cost, nanoseconds per sample byte.
    pub ns_per_byte: f64,
    /// Build time, milliseconds.
    pub build_ms: f64,
}

impl Cost {
    /// Total cost in nanoseconds for `bytes` scanned (scan cost only when
    /// `None`, in ns per byte).
    pub fn total(&self, bytes: Option<u64>) -> f64 {
        match bytes {
            Some(b) => self.ns_per_byte * b as f64 + self.build_ms * 1e6,
            None => self.ns_per_byte,
        }
    }
}

/// The cheapest of `costs` for `bytes` (see [`Cost::total`]).
pub fn cheapest(costs: &[Cost], bytes: Option<u64>) -> Option<EngineKind> {
    costs
        .iter()
        .min_by(|a, b| a.total(bytes).total_cmp(&b.total(bytes)))
        .map(|c| c.kind)
}

/// The choice for one distinct pattern set.
#[derive(Debug, Clone)]
pub struct GroupChoice {
    pub patterns: usize,
    pub kind: EngineKind,
    pub source: Source,
    /// The measurements the choice came from (empty when not measured).
    pub costs: Vec<Cost>,
}

/// What selection did, for the log line and stats.
#[derive(Debug, Clone, Default)]
pub struct SelectionReport {
    /// `auto` or the fixed engine's name.
    pub mode: String,
    /// Pattern lists given an engine (rule groups, their per-protocol
    /// sets and transaction lists; lists sharing an engine included).
    pub groups: usize,
    /// One entry per distinct engine built.
    pub choices: Vec<GroupChoice>,
    /// Time spent calibrating.
    pub calibration: Duration,
    pub cache_file: Option<PathBuf>,
    /// Heap bytes of all distinct engines.
    pub heap_bytes: usize,
    /// The whole-configuration check, when it ran.
    pub whole: Option<WholeCheck>,
}

/// A configuration of the whole-configuration check, over the sampled
/// pattern sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WholeChoice {
    /// Every set keeps its per-group choice.
    #[default]
    PerGroup,
    /// This engine on every sampled set it may serve.
    Single(EngineKind),
    /// Per sampled set (by [`pattern_set_hash`]), the engine fastest on
    /// the sampled packets that set scans.
    PerSet(BTreeMap<u64, EngineKind>),
}

impl WholeChoice {
    pub fn name(&self) -> &'static str {
        match self {
            WholeChoice::PerGroup => "per-group",
            WholeChoice::Single(k) => k.name(),
            WholeChoice::PerSet(_) => "per-set",
        }
    }
}

/// Outcome of the whole-configuration check (see [`Selector::check_whole`]).
#[derive(Debug, Clone, Default)]
pub struct WholeCheck {
    /// Distinct pattern sets the sampled traffic reaches.
    pub sets: usize,
    /// The configuration kept.
    pub winner: WholeChoice,
    /// Simulated run time of each configuration measured (by
    /// [`WholeChoice::name`]), in ns per pass over the sample; empty when
    /// the winner came from the cache.
    pub measured: Vec<(String, f64)>,
    /// Time the check took (building included).
    pub time: Duration,
}

impl SelectionReport {
    /// Distinct engines per kind.
    pub fn by_kind(&self) -> BTreeMap<EngineKind, usize> {
        let mut m = BTreeMap::new();
        for c in &self.choices {
            *m.entry(c.kind).or_insert(0) += 1;
        }
        m
    }

    pub fn count(&self, source: Source) -> usize {
        self.choices.iter().filter(|c| c.source == source).count()
    }

    /// One line: mode, engines per kind, how chosen.
    pub fn summary(&self) -> String {
        let kinds: Vec<String> = self
            .by_kind()
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let mut s = format!(
            "prefilter {}: {} pattern lists, {} distinct engines ({}), {:.1} MB",
            self.mode,
            self.groups,
            self.choices.len(),
            kinds.join(", "),
            self.heap_bytes as f64 / 1e6
        );
        if self.mode == "auto" {
            s.push_str(&format!(
                "; measured {}, shared {}, cached {}, static {}; calibration {:.2}s",
                self.count(Source::Calibrated),
                self.count(Source::Shared),
                self.count(Source::Cached),
                self.count(Source::Static),
                self.calibration.as_secs_f64()
            ));
        }
        if let Some(w) = &self.whole {
            s.push_str(&format!(
                "; whole-run check over {} sampled sets: {} ({}",
                w.sets,
                w.winner.name(),
                if w.measured.is_empty() {
                    "cached".to_string()
                } else {
                    w.measured
                        .iter()
                        .map(|(k, ns)| format!("{k} {:.2} ms", ns / 1e6))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
            s.push_str(&format!(", {:.2}s)", w.time.as_secs_f64()));
        }
        let fb = self.count(Source::Fallback);
        if fb > 0 {
            s.push_str(&format!("; {fb} fell back to another engine"));
        }
        s
    }
}

/// How rule groups split their fast patterns into the sets a worker
/// scans separately, by what it knows when it scans: the flow's
/// application protocol and direction (see `vigil_detect::group::SplitSets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitMode {
    /// One engine per group over all its patterns.
    Off,
    /// The rules of the less common application protocols (all but
    /// HTTP/1, HTTP/2, TLS and DNS) in a set per protocol, scanned only on
    /// that protocol's flows; every other pattern in one set per group.
    Protocols,
    /// A set per application protocol and flow direction, and one per
    /// direction for the rules without a protocol.
    Full,
}

/// Builds the engine of each rule group (see the module docs).
pub struct Selector {
    selection: Selection,
    /// Engine and its entry in `report.choices`, by pattern list.
    memo: HashMap<Vec<Pattern>, (Arc<dyn PrefilterEngine>, usize)>,
    /// Measurements by pattern-set hash (from the cache file, and new).
    cache: BTreeMap<u64, Vec<Cost>>,
    cache_dirty: bool,
    /// Measurements by group shape and data tag (0: packet payloads).
    shapes: HashMap<(u32, u8, u64), Vec<Cost>>,
    ac_full_bytes: usize,
    spent: Duration,
    /// Payloads each group's candidates are measured on.
    sample: Vec<Vec<u8>>,
    /// Payloads of the whole-configuration check (a larger spread of the
    /// same traffic), and their headers (same order), when given.
    whole_sample: Vec<Vec<u8>>,
    sample_traffic: Vec<TrafficSample>,
    /// Whole-configuration winners by sampled-sets hash.
    whole_cache: WholeCache,
    report: SelectionReport,
    /// Directory of compiled Hyperscan databases, if caching.
    hs_cache: Option<PathBuf>,
    /// Threads [`Selector::prebuild`] builds on (1: it does nothing).
    threads: usize,
    /// How rule groups split their fast patterns by what the worker
    /// knows when it scans (see [`Selector::set_split_mode`]).
    split: SplitMode,
    /// Engines built ahead by [`Selector::prebuild`] (index into
    /// `prebuilt_engines`, by pattern list), taken by the build of the
    /// same kind for the same patterns.
    prebuilt: HashMap<Vec<Pattern>, usize>,
    prebuilt_engines: Vec<Option<(EngineKind, BuildResult)>>,
}

type BuildResult = Result<Box<dyn PrefilterEngine>, BuildError>;

/// Builds of `kind` over each of `sets`, on up to `threads` threads
/// (largest sets first, from a shared queue); results in `sets` order.
fn build_parallel(
    kind: EngineKind,
    sets: &[&[Pattern]],
    hs_cache: Option<&std::path::Path>,
    threads: usize,
) -> Vec<Result<Box<dyn PrefilterEngine>, BuildError>> {
    if sets.is_empty() {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..sets.len()).collect();
    // Large sets take longest: start them first, so that the last builds
    // to finish are short ones.
    order.sort_by_key(|&i| std::cmp::Reverse(sets[i].len()));
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            done.push((i, kind.build_cached(sets[i], hs_cache)));
        }
        done
    };
    let mut out: Vec<Option<BuildResult>> = (0..sets.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.clamp(1, sets.len()))
            .map(|_| s.spawn(work))
            .collect();
        for h in handles {
            let done = h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            for (i, r) in done {
                out[i] = Some(r);
            }
        }
    });
    out.into_iter()
        .map(|r| r.expect("every set built"))
        .collect()
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selector")
            .field("selection", &self.report.mode)
            .field("engines", &self.memo.len())
            .finish()
    }
}

impl Default for Selector {
    fn default() -> Self {
        Selector::new(Selection::Fixed(EngineKind::Ac))
    }
}

/// FNV-1a's offset basis: the hash of no bytes (see [`fnv1a`]).
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// `h` (an FNV-1a hash, [`FNV_OFFSET`] to start) with `bytes` fed in:
/// the stable hash the calibration cache is keyed by.
pub fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ b as u64).wrapping_mul(FNV_PRIME))
}

/// `h` with a whole 64-bit word mixed in (one FNV step), to combine
/// hashes.
fn fnv_mix(h: u64, word: u64) -> u64 {
    (h ^ word).wrapping_mul(FNV_PRIME)
}

/// Stable 64-bit hash of a pattern list (FNV-1a).
pub fn pattern_set_hash(patterns: &[Pattern]) -> u64 {
    patterns.iter().fold(FNV_OFFSET, |h, p| {
        let h = fnv1a(h, &p.id.to_le_bytes());
        let h = fnv1a(h, &(p.bytes.len() as u32).to_le_bytes());
        let h = fnv1a(h, &p.bytes);
        fnv1a(h, &[p.nocase as u8])
    })
}

/// Shape of a pattern set: distinct-count bucket (25% wide) and shortest
/// pattern length (1, 2, 3+).
fn shape(distinct: usize, patterns: &[Pattern]) -> (u32, u8) {
    let bucket = ((distinct.max(1) as f64).ln() / 1.25f64.ln()).floor() as u32;
    let min = patterns
        .iter()
        .map(|p| p.bytes.len())
        .filter(|&l| l > 0)
        .min()
        .unwrap_or(1)
        .min(3) as u8;
    (bucket, min)
}

impl Selector {
    pub fn new(mut selection: Selection) -> Selector {
        let mut report = SelectionReport::default();
        let mut cache = BTreeMap::new();
        let mut whole_cache = BTreeMap::new();
        let mut sample = Vec::new();
        let mut whole_sample = Vec::new();
        let mut sample_traffic = Vec::new();
        match &mut selection {
            Selection::Fixed(k) => report.mode = k.name().to_string(),
            Selection::Auto(cfg) => {
                report.mode = "auto".into();
                report.cache_file = cfg.cache_file.clone();
                if let Some(f) = &cfg.cache_file {
                    (cache, whole_cache) = read_cache(f);
                }
                // Bound the measured bytes, keeping the size mix and the
                // spread over the capture. The payloads move out of the
                // config, which is cloned for every group built.
                let all = std::mem::take(&mut cfg.sample);
                sample = spread(&all, SAMPLE_BYTES)
                    .into_iter()
                    .map(|i| all[i].clone())
                    .collect();
                if cfg.traffic.len() == all.len() {
                    for i in spread(&all, WHOLE_SAMPLE_BYTES) {
                        whole_sample.push(all[i].clone());
                        sample_traffic.push(cfg.traffic[i]);
                    }
                }
            }
        }
        Selector {
            selection,
            memo: HashMap::default(),
            cache,
            cache_dirty: false,
            shapes: HashMap::default(),
            ac_full_bytes: 0,
            spent: Duration::ZERO,
            sample,
            whole_sample,
            sample_traffic,
            whole_cache,
            report,
            hs_cache: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            split: SplitMode::Full,
            prebuilt: HashMap::default(),
            prebuilt_engines: Vec::new(),
        }
    }

    /// Reads and stores compiled Hyperscan databases in `dir` (`None`:
    /// no cache). [`Selector::finish`] bounds the directory (see
    /// `hyperscan::prune_cache`).
    pub fn set_hs_cache(&mut self, dir: Option<PathBuf>) {
        self.hs_cache = dir;
    }

    /// The Hyperscan cache directory, if any.
    pub fn hs_cache(&self) -> Option<&std::path::Path> {
        self.hs_cache.as_deref()
    }

    /// Threads [`Selector::prebuild`] may use (default: the available
    /// parallelism; 1 builds every engine on the caller's thread when it
    /// is asked for).
    pub fn set_build_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// Whether the rule groups built with this selector split their fast
    /// patterns into the sets a worker scans separately ([`SplitMode::Full`],
    /// the default here), or keep one engine per group over all of them
    /// (what a prefilter device, which scans each packet once for its
    /// whole group, is given).
    pub fn set_split_groups(&mut self, on: bool) {
        self.split = if on { SplitMode::Full } else { SplitMode::Off };
    }

    /// How the rule groups split their fast patterns.
    pub fn set_split_mode(&mut self, mode: SplitMode) {
        self.split = mode;
    }

    /// See [`Selector::set_split_mode`].
    pub fn split_mode(&self) -> SplitMode {
        self.split
    }

    /// Whether the rule groups split their fast patterns at all.
    pub fn split_groups(&self) -> bool {
        self.split != SplitMode::Off
    }

    /// Builds, in parallel, the engines the caller is about to ask for
    /// (the pattern lists of its groups, in any order), so that the
    /// [`Selector::build`] calls that follow, in the caller's order, take
    /// them instead of building: the engines, the report and its order
    /// are exactly those of serial builds. Only with a fixed engine other
    /// than AC-Full (whose memory budget is spent in group order); `auto`
    /// measures as it goes and builds serially.
    pub fn prebuild(&mut self, sets: &[&[Pattern]]) {
        let Selection::Fixed(kind) = self.selection else {
            return;
        };
        if kind == EngineKind::AcFull || self.threads < 2 {
            return;
        }
        // One hash of each list here (and one when it is taken): lists
        // of ET Open's groups hold thousands of patterns.
        let first = self.prebuilt_engines.len();
        let mut todo: Vec<&[Pattern]> = Vec::new();
        for &p in sets {
            if p.is_empty() || (!self.memo.is_empty() && self.memo.contains_key(p)) {
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(v) = self.prebuilt.entry(p.to_vec()) {
                v.insert(first + todo.len());
                todo.push(p);
            }
        }
        let built = build_parallel(kind, &todo, self.hs_cache.as_deref(), self.threads);
        self.prebuilt_engines
            .extend(built.into_iter().map(|r| Some((kind, r))));
    }

    /// A fixed engine for every group.
    pub fn fixed(kind: EngineKind) -> Selector {
        Selector::new(Selection::Fixed(kind))
    }

    /// The engine for one group's patterns (ids are the caller's).
    pub fn build(&mut self, patterns: &[Pattern]) -> Result<Arc<dyn PrefilterEngine>, BuildError> {
        self.build_for(patterns, None)
    }

    /// Sampled packet headers (`auto` only), for [`Selector::build_for`]'s
    /// traffic share.
    pub fn traffic(&self) -> &[TrafficSample] {
        match &self.selection {
            Selection::Auto(cfg) => &cfg.traffic,
            Selection::Fixed(_) => &[],
        }
    }

    /// Headers of the whole-configuration sample's packets, in the order of the
    /// payloads [`Route::sample`] indexes (`auto` with traffic only).
    pub fn sampled_traffic(&self) -> &[TrafficSample] {
        &self.sample_traffic
    }

    /// The whole-configuration sample: each sampled packet's headers and
    /// payload (`auto` with traffic only), for callers that derive other
    /// samples from the traffic (see [`Selector::build_on`]).
    pub fn sampled_packets(&self) -> impl Iterator<Item = (&TrafficSample, &[u8])> + '_ {
        self.sample_traffic
            .iter()
            .zip(self.whole_sample.iter().map(|p| p.as_slice()))
    }

    /// [`Selector::build`] for a group that scans `share` (0..[`MAX_SHARE`])
    /// of the sampled payload bytes: `auto` weighs build time against that
    /// share of the expected volume (at least [`MIN_SHARE`]); `None`: all of it.
    pub fn build_for(
        &mut self,
        patterns: &[Pattern],
        share: Option<f64>,
    ) -> Result<Arc<dyn PrefilterEngine>, BuildError> {
        self.build_sampled(patterns, share, None)
    }

    /// [`Selector::build`] for a group that scans other data than packet
    /// payloads (an application-layer buffer): `auto` measures its
    /// candidates on `sample` (that data, as seen in the sampled traffic)
    /// instead of the payload sample, and caches the result under `tag`
    /// (which names the kind of data) as well as the pattern set. An
    /// empty `sample` falls back to the payload sample.
    pub fn build_on(
        &mut self,
        patterns: &[Pattern],
        tag: u64,
        sample: &[Vec<u8>],
    ) -> Result<Arc<dyn PrefilterEngine>, BuildError> {
        if sample.is_empty() {
            return self.build_for(patterns, None);
        }
        self.build_sampled(patterns, None, Some((tag, sample)))
    }

    fn build_sampled(
        &mut self,
        patterns: &[Pattern],
        share: Option<f64>,
        on: Option<(u64, &[Vec<u8>])>,
    ) -> Result<Arc<dyn PrefilterEngine>, BuildError> {
        self.report.groups += 1;
        if let Some((e, _)) = self.memo.get(patterns) {
            return Ok(e.clone());
        }
        let (engine, choice) = match self.selection.clone() {
            Selection::Fixed(k) => self.build_fixed(k, patterns)?,
            Selection::Auto(cfg) => {
                let expected = cfg
                    .expected_bytes
                    .map(|b| (b as f64 * share.unwrap_or(1.0).clamp(MIN_SHARE, MAX_SHARE)) as u64);
                self.build_auto(&cfg, expected, patterns, on)?
            }
        };
        if std::env::var_os("VIGIL_PREFILTER_DEBUG").is_some() {
            eprintln!(
                "prefilter group: {} patterns, share {:?}: {} ({:?})",
                patterns.len(),
                share,
                choice.kind,
                choice.source
            );
        }
        let engine: Arc<dyn PrefilterEngine> = Arc::from(engine);
        self.report.heap_bytes += engine.heap_bytes();
        self.report.choices.push(choice);
        self.memo.insert(
            patterns.to_vec(),
            (engine.clone(), self.report.choices.len() - 1),
        );
        Ok(engine)
    }

    /// Saves the calibration cache (when anything was measured) and
    /// returns what was chosen.
    pub fn finish(&mut self) -> SelectionReport {
        if self.cache_dirty {
            if let Some(f) = &self.report.cache_file {
                // The cache only saves time: failing to write it is not
                // an error.
                let _ = write_cache(f, &self.cache, &self.whole_cache);
            }
            self.cache_dirty = false;
        }
        self.prebuilt.clear();
        self.prebuilt_engines.clear();
        #[cfg(feature = "hyperscan")]
        if let Some(dir) = &self.hs_cache {
            crate::hyperscan::prune_cache(
                dir,
                crate::hyperscan::CACHE_MAX_AGE,
                crate::hyperscan::CACHE_MAX_BYTES,
            );
        }
        self.report.calibration = self.spent;
        self.report.clone()
    }

    /// The whole-configuration check of `auto`, after every group's
    /// engine is built: the sampled packets are scanned as the run scans
    /// them (`routes`: each packet by its groups, TCP twice), with every
    /// group's engine alive and the groups interleaved in packet order, so
    /// that cache pressure between the groups' tables and the real mix of
    /// packet sizes per group are in the measurement. That simulated run
    /// is timed for the per-group choices and, for each candidate engine,
    /// for that engine on every sampled pattern set it may serve (the
    /// sets no sampled packet reaches keep their choice: they cost the
    /// run next to nothing); the fastest configuration is kept, so `auto`
    /// never runs slower than a single engine on the sampled traffic. The
    /// winner is cached by the set of sampled pattern sets. `sets[g]` is
    /// group `g`'s pattern list (empty: no prefilter). Returns each
    /// group's engine (`None` for empty lists), or `None` when nothing
    /// changed.
    pub fn check_whole(
        &mut self,
        sets: &[&[Pattern]],
        routes: &[Route],
    ) -> Option<Vec<Option<Arc<dyn PrefilterEngine>>>> {
        let Selection::Auto(cfg) = self.selection.clone() else {
            return None;
        };
        let sample = std::mem::take(&mut self.whole_sample);
        let out = self.check_whole_on(&cfg, &sample, sets, routes);
        self.whole_sample = sample;
        out
    }

    fn check_whole_on(
        &mut self,
        cfg: &AutoConfig,
        sample: &[Vec<u8>],
        sets: &[&[Pattern]],
        routes: &[Route],
    ) -> Option<Vec<Option<Arc<dyn PrefilterEngine>>>> {
        let start = Instant::now();
        // Distinct pattern sets the sample reaches, in order of first use.
        let mut index: HashMap<&[Pattern], usize> = HashMap::default();
        let mut distinct: Vec<&[Pattern]> = Vec::new();
        let mut packets: Vec<SimPacket> = Vec::new();
        for r in routes {
            let Some(payload) = sample.get(r.sample as usize) else {
                continue;
            };
            let mut ds = [None, None];
            for (slot, &g) in ds.iter_mut().zip(&r.groups) {
                let Some(set) = sets.get(g as usize).filter(|s| !s.is_empty()) else {
                    continue;
                };
                if !self.memo.contains_key(*set) {
                    continue;
                }
                let next = distinct.len();
                *slot = Some(*index.entry(set).or_insert_with(|| {
                    distinct.push(set);
                    next
                }));
            }
            if ds.iter().any(|d| d.is_some()) {
                packets.push((payload.as_slice(), ds, r.stream));
            }
        }
        if distinct.is_empty() {
            return None;
        }
        let hashes: Vec<u64> = distinct.iter().map(|s| pattern_set_hash(s)).collect();
        let mut keys = hashes.clone();
        keys.sort_unstable();
        let key = keys.iter().fold(FNV_OFFSET, |h, &k| fnv_mix(h, k));
        let current: Vec<(Arc<dyn PrefilterEngine>, usize)> =
            distinct.iter().map(|s| self.memo[*s].clone()).collect();
        let current_kind: Vec<EngineKind> = current
            .iter()
            .map(|c| self.report.choices[c.1].kind)
            .collect();
        let cached = self.whole_cache.get(&key).cloned();
        // Engine wanted per distinct set for each kind to build: every
        // candidate where it may serve the set (measuring), or what the
        // cached winner recorded.
        let may_serve = |k: EngineKind| -> (EngineKind, Vec<bool>) {
            let w = distinct
                .iter()
                .zip(&current_kind)
                .map(|(set, &ck)| ck != k && auto_candidates(set, &cfg.candidates).contains(&k))
                .collect();
            (k, w)
        };
        let wants: Vec<(EngineKind, Vec<bool>)> = match &cached {
            Some(WholeChoice::PerGroup) => Vec::new(),
            Some(WholeChoice::Single(k)) => vec![may_serve(*k)],
            Some(WholeChoice::PerSet(m)) => {
                let kinds: BTreeSet<EngineKind> = m.values().copied().collect();
                kinds
                    .into_iter()
                    .map(|k| {
                        let w = hashes
                            .iter()
                            .zip(&current_kind)
                            .map(|(h, &ck)| ck != k && m.get(h) == Some(&k))
                            .collect();
                        (k, w)
                    })
                    .collect()
            }
            None => cfg
                .candidates
                .iter()
                .copied()
                .filter(|k| k.available())
                .map(may_serve)
                .collect(),
        };
        let mut alternatives: Vec<(EngineKind, Engines)> = Vec::new();
        for (kind, mut wanted) in wants {
            if kind == EngineKind::AcFull {
                // Reserve AC-Full's memory budget before building.
                for (w, set) in wanted.iter_mut().zip(&distinct) {
                    *w = *w && self.reserve_ac_full(crate::automaton_size(set).states);
                }
            }
            let engines = build_wanted(
                kind,
                &distinct,
                &wanted,
                self.hs_cache.as_deref(),
                self.threads,
            );
            if kind == EngineKind::AcFull {
                // Give back the reservations of builds that failed.
                for ((e, w), set) in engines.iter().zip(&wanted).zip(&distinct) {
                    if *w && e.is_none() {
                        self.give_back_ac_full(crate::automaton_size(set).states);
                    }
                }
            }
            if engines.iter().any(|e| e.is_some()) {
                alternatives.push((kind, engines));
            }
        }
        // The configuration kept: per set, the alternative whose engine
        // replaces the per-group one (`None`: keep it).
        let single = |a: usize, alts: &[(EngineKind, Engines)]| -> Vec<Option<usize>> {
            alts[a].1.iter().map(|e| e.as_ref().map(|_| a)).collect()
        };
        let mut measured = Vec::new();
        let (choice, assignment) = match &cached {
            Some(WholeChoice::PerGroup) => (WholeChoice::PerGroup, vec![None; distinct.len()]),
            Some(WholeChoice::Single(k)) => {
                let a = if alternatives.is_empty() {
                    vec![None; distinct.len()]
                } else {
                    single(0, &alternatives)
                };
                (WholeChoice::Single(*k), a)
            }
            Some(WholeChoice::PerSet(m)) => {
                let a = (0..distinct.len())
                    .map(|d| {
                        alternatives
                            .iter()
                            .position(|(k, e)| m.get(&hashes[d]) == Some(k) && e[d].is_some())
                    })
                    .collect();
                (WholeChoice::PerSet(m.clone()), a)
            }
            None => {
                // Per set: the fastest engine on the sampled packets that
                // set scans, measured alone.
                let mut per_set: Vec<Option<usize>> = vec![None; distinct.len()];
                for (d, slot) in per_set.iter_mut().enumerate() {
                    let mut payloads: Vec<&[u8]> = Vec::new();
                    for (payload, ds, stream) in &packets {
                        if ds.contains(&Some(d)) {
                            for _ in 0..1 + *stream as usize {
                                payloads.push(payload);
                            }
                        }
                    }
                    let mut options: Vec<(Option<usize>, &dyn PrefilterEngine)> =
                        vec![(None, current[d].0.as_ref())];
                    for (a, (_, engines)) in alternatives.iter().enumerate() {
                        if let Some(e) = &engines[d] {
                            options.push((Some(a), e.as_ref()));
                        }
                    }
                    if options.len() < 2 {
                        continue;
                    }
                    let engines: Vec<&dyn PrefilterEngine> = options.iter().map(|o| o.1).collect();
                    let ns = measure_interleaved_for(&engines, &payloads, PER_SET_REPS, 5e5);
                    let best = ns
                        .iter()
                        .enumerate()
                        .min_by(|x, y| x.1.total_cmp(y.1))
                        .map_or(0, |b| b.0);
                    *slot = options[best].0;
                }
                let mut assignments: Vec<(WholeChoice, Vec<Option<usize>>)> =
                    vec![(WholeChoice::PerGroup, vec![None; distinct.len()])];
                for (a, (kind, _)) in alternatives.iter().enumerate() {
                    assignments.push((WholeChoice::Single(*kind), single(a, &alternatives)));
                }
                if !assignments.iter().any(|x| x.1 == per_set) {
                    let m = per_set
                        .iter()
                        .enumerate()
                        .map(|(d, a)| (hashes[d], a.map_or(current_kind[d], |a| alternatives[a].0)))
                        .collect();
                    assignments.push((WholeChoice::PerSet(m), per_set));
                }
                let configs: Vec<Vec<&dyn PrefilterEngine>> = assignments
                    .iter()
                    .map(|(_, asg)| {
                        asg.iter()
                            .enumerate()
                            .map(|(d, a)| match a {
                                Some(a) => alternatives[*a].1[d].as_deref().expect("built"),
                                None => current[d].0.as_ref(),
                            })
                            .collect()
                    })
                    .collect();
                let ns = simulate_run(&configs, &packets, WHOLE_REPS);
                let mut best = 0;
                for (i, (c, _)) in assignments.iter().enumerate() {
                    measured.push((c.name().to_string(), ns[i]));
                    if ns[i] < ns[best] {
                        best = i;
                    }
                }
                let winner = assignments.swap_remove(best);
                self.whole_cache.insert(key, winner.0.clone());
                self.cache_dirty = true;
                winner
            }
        };
        if std::env::var_os("VIGIL_PREFILTER_DEBUG").is_some() {
            eprintln!(
                "prefilter whole-run check: {} sampled sets, {} packets: {:?} -> {}",
                distinct.len(),
                packets.len(),
                measured,
                choice.name()
            );
        }
        let mut changed = false;
        for (d, a) in assignment.iter().enumerate() {
            let Some(a) = *a else { continue };
            let kind = alternatives[a].0;
            let Some(e) = alternatives[a].1[d].take() else {
                continue;
            };
            let e: Arc<dyn PrefilterEngine> = Arc::from(e);
            let (old, ci) = self.memo[distinct[d]].clone();
            if old.name() == "ac-full" {
                self.give_back_ac_full(crate::automaton_size(distinct[d]).states);
            }
            self.report.heap_bytes =
                self.report.heap_bytes.saturating_sub(old.heap_bytes()) + e.heap_bytes();
            let c = &mut self.report.choices[ci];
            c.kind = kind;
            c.source = Source::Whole;
            self.memo.insert(distinct[d].to_vec(), (e, ci));
            changed = true;
        }
        for (kind, engines) in &alternatives {
            self.release(*kind, engines, &distinct);
        }
        let time = start.elapsed();
        self.spent += time;
        self.report.whole = Some(WholeCheck {
            sets: distinct.len(),
            winner: choice,
            measured,
            time,
        });
        changed.then(|| {
            sets.iter()
                .map(|s| self.memo.get(*s).map(|m| m.0.clone()))
                .collect()
        })
    }

    /// Gives back the AC-Full budget of engines built and not kept.
    fn release(
        &mut self,
        kind: EngineKind,
        engines: &[Option<Box<dyn PrefilterEngine>>],
        sets: &[&[Pattern]],
    ) {
        if kind != EngineKind::AcFull {
            return;
        }
        for (e, set) in engines.iter().zip(sets) {
            if e.is_some() {
                self.give_back_ac_full(crate::automaton_size(set).states);
            }
        }
    }

    /// Counts an AC-Full table of `states` states against
    /// [`AC_FULL_TOTAL_BYTES`]; false (nothing counted) when it would not
    /// fit.
    fn reserve_ac_full(&mut self, states: usize) -> bool {
        let bytes = AcFullEngine::table_bytes_for(states);
        let fits = self.ac_full_bytes + bytes <= AC_FULL_TOTAL_BYTES;
        if fits {
            self.ac_full_bytes += bytes;
        }
        fits
    }

    /// Gives back what [`Selector::reserve_ac_full`] counted.
    fn give_back_ac_full(&mut self, states: usize) {
        self.ac_full_bytes = self
            .ac_full_bytes
            .saturating_sub(AcFullEngine::table_bytes_for(states));
    }

    fn build_kind(
        &mut self,
        kind: EngineKind,
        patterns: &[Pattern],
    ) -> Result<Box<dyn PrefilterEngine>, BuildError> {
        if let Some(i) = self.prebuilt.remove(patterns) {
            if let Some((k, built)) = self.prebuilt_engines[i].take() {
                if k == kind {
                    return built;
                }
            }
        }
        if kind == EngineKind::AcFull {
            let states = crate::automaton_size(patterns).states;
            if !self.reserve_ac_full(states) {
                return Err(BuildError(format!(
                    "AC-Full memory budget ({} MB) spent",
                    AC_FULL_TOTAL_BYTES >> 20
                )));
            }
            return match AcFullEngine::new(patterns) {
                Ok(e) => Ok(Box::new(e)),
                Err(e) => {
                    self.give_back_ac_full(states);
                    Err(e)
                }
            };
        }
        kind.build_cached(patterns, self.hs_cache.as_deref())
    }

    fn build_fixed(
        &mut self,
        kind: EngineKind,
        patterns: &[Pattern],
    ) -> Result<(Box<dyn PrefilterEngine>, GroupChoice), BuildError> {
        let n = patterns.len();
        let (e, kind, source) = match self.build_kind(kind, patterns) {
            Ok(e) => (e, kind, Source::Fixed),
            Err(err) => {
                // AC-Full past its memory budget degrades to the compact
                // layout of the same automaton; anything else to `ac`.
                let other = if kind == EngineKind::AcFull {
                    EngineKind::AcCompact
                } else {
                    EngineKind::Ac
                };
                if other == kind {
                    return Err(err);
                }
                (self.build_kind(other, patterns)?, other, Source::Fallback)
            }
        };
        Ok((
            e,
            GroupChoice {
                patterns: n,
                kind,
                source,
                costs: Vec::new(),
            },
        ))
    }

    /// The engine for a group `auto` has no time left to measure, from
    /// the study's headline (`docs/prefilter-study.md`): BMH for one
    /// pattern, Hyperscan for more where it is built in and a candidate
    /// (the fastest from 20 patterns up at every packet size, and at
    /// every set size from 500-byte packets up), else AC.
    fn static_choice(distinct: usize, candidates: &[EngineKind]) -> EngineKind {
        if distinct == 1 {
            EngineKind::Bmh
        } else if EngineKind::Hs.available() && candidates.contains(&EngineKind::Hs) {
            EngineKind::Hs
        } else {
            EngineKind::Ac
        }
    }

    fn build_auto(
        &mut self,
        cfg: &AutoConfig,
        expected: Option<u64>,
        patterns: &[Pattern],
        on: Option<(u64, &[Vec<u8>])>,
    ) -> Result<(Box<dyn PrefilterEngine>, GroupChoice), BuildError> {
        let n = patterns.len();
        let tag = on.map_or(0, |o| o.0);
        // Measurements on other data are kept apart from the payload ones.
        let key = match on {
            None => pattern_set_hash(patterns),
            Some((tag, _)) => fnv_mix(pattern_set_hash(patterns), tag),
        };
        let size = crate::automaton_size(patterns);
        let (bucket, min) = shape(size.distinct, patterns);
        let shape = (bucket, min, tag);
        let usable = |k: EngineKind, me: &Selector| {
            k.available()
                && cfg.candidates.contains(&k)
                && (k != EngineKind::AcFull
                    || me.ac_full_bytes + AcFullEngine::table_bytes_for(size.states)
                        <= AC_FULL_TOTAL_BYTES)
        };
        // Measurements from the cache, or from a group of the same shape.
        let known = match self.cache.get(&key) {
            Some(c) => Some((c.clone(), Source::Cached)),
            None => self.shapes.get(&shape).map(|c| (c.clone(), Source::Shared)),
        };
        if let Some((costs, source)) = known {
            let ok: Vec<Cost> = costs
                .iter()
                .copied()
                .filter(|c| usable(c.kind, self))
                .collect();
            if let Some(kind) = cheapest(&ok, expected) {
                if let Ok(e) = self.build_kind(kind, patterns) {
                    if source == Source::Shared {
                        self.cache.insert(key, costs.clone());
                        self.cache_dirty = true;
                    }
                    return Ok((
                        e,
                        GroupChoice {
                            patterns: n,
                            kind,
                            source,
                            costs,
                        },
                    ));
                }
            }
        }
        if self.spent >= cfg.budget || (on.is_none() && self.sample.is_empty()) {
            let kind = Self::static_choice(size.distinct, &cfg.candidates);
            let e = self.build_kind(kind, patterns)?;
            return Ok((
                e,
                GroupChoice {
                    patterns: n,
                    kind,
                    source: Source::Static,
                    costs: Vec::new(),
                },
            ));
        }
        // Measure every candidate on this group.
        let start = Instant::now();
        let candidates: Vec<EngineKind> = auto_candidates(patterns, &cfg.candidates)
            .into_iter()
            .filter(|&k| usable(k, self))
            .filter(|&k| {
                on.is_none()
                    || k != EngineKind::AcFull
                    || AcFullEngine::table_bytes_for(size.states) <= AUTO_AC_FULL_ALONE_MAX_BYTES
            })
            .collect();
        let owned = std::mem::take(&mut self.sample);
        let sample: Vec<&[u8]> = on
            .map_or(&owned[..], |o| o.1)
            .iter()
            .map(|s| s.as_slice())
            .collect();
        let debug = std::env::var_os("VIGIL_PREFILTER_DEBUG").is_some();
        let mut built: Vec<(EngineKind, Box<dyn PrefilterEngine>)> = Vec::new();
        let mut build_ms = Vec::new();
        for kind in candidates {
            let t = Instant::now();
            let Ok(e) = self.build_kind(kind, patterns) else {
                continue;
            };
            build_ms.push(t.elapsed().as_secs_f64() * 1e3);
            built.push((kind, e));
        }
        let engines: Vec<&dyn PrefilterEngine> = built.iter().map(|b| b.1.as_ref()).collect();
        let ns = measure_interleaved(&engines, &sample, CALIBRATION_REPS);
        let mut costs = Vec::new();
        for (((kind, _), ns_per_byte), build_ms) in built.iter().zip(ns).zip(build_ms) {
            if debug {
                eprintln!(
                    "prefilter calibrate: {n} patterns: {kind} build {build_ms:.1} ms, {ns_per_byte:.3} ns/B"
                );
            }
            costs.push(Cost {
                kind: *kind,
                ns_per_byte,
                build_ms,
            });
        }
        drop(sample);
        self.sample = owned;
        self.spent += start.elapsed();
        let kind = cheapest(&costs, expected).unwrap_or(EngineKind::Ac);
        // Keep the chosen engine; release the others' AC-Full budget.
        let mut chosen = None;
        for (k, e) in built {
            if k == kind {
                chosen = Some(e);
            } else if k == EngineKind::AcFull {
                self.give_back_ac_full(size.states);
            }
        }
        let e = match chosen {
            Some(e) => e,
            None => EngineKind::Ac.build(patterns)?,
        };
        self.cache.insert(key, costs.clone());
        self.shapes.insert(shape, costs.clone());
        self.cache_dirty = true;
        Ok((
            e,
            GroupChoice {
                patterns: n,
                kind,
                source: Source::Calibrated,
                costs,
            },
        ))
    }
}

/// The engines `auto` measures for a pattern set, out of `kinds`: those
/// available, BMH only for tiny sets, E2xB only up to
/// [`AUTO_E2XB_MAX_PATTERNS`], AC-Full only up to
/// [`AUTO_AC_FULL_MAX_BYTES`] of table.
pub fn auto_candidates(patterns: &[Pattern], kinds: &[EngineKind]) -> Vec<EngineKind> {
    let size = crate::automaton_size(patterns);
    kinds
        .iter()
        .copied()
        .filter(|k| k.available())
        .filter(|k| match k {
            EngineKind::Bmh => size.distinct <= AUTO_BMH_MAX_PATTERNS,
            EngineKind::E2xb => size.distinct <= AUTO_E2XB_MAX_PATTERNS,
            EngineKind::AcFull => {
                AcFullEngine::table_bytes_for(size.states) <= AUTO_AC_FULL_MAX_BYTES
            }
            _ => true,
        })
        .collect()
}

/// What `auto` would pick for `patterns` on `sample` with scan cost only
/// (no budget, no cache, no sharing), and every candidate's measurement.
pub fn calibrate(
    patterns: &[Pattern],
    sample: &[&[u8]],
    kinds: &[EngineKind],
) -> Option<(EngineKind, Vec<Cost>)> {
    let mut built = Vec::new();
    let mut build_ms = Vec::new();
    for kind in auto_candidates(patterns, kinds) {
        let t = Instant::now();
        if let Ok(e) = kind.build(patterns) {
            build_ms.push(t.elapsed().as_secs_f64() * 1e3);
            built.push((kind, e));
        }
    }
    let engines: Vec<&dyn PrefilterEngine> = built.iter().map(|b| b.1.as_ref()).collect();
    let ns = measure_interleaved(&engines, sample, CALIBRATION_REPS);
    let costs: Vec<Cost> = built
        .iter()
        .zip(ns)
        .zip(build_ms)
        .map(|(((kind, _), ns_per_byte), build_ms)| Cost {
            kind: *kind,
            ns_per_byte,
            build_ms,
        })
        .collect();
    Some((cheapest(&costs, None)?, costs))
}

/// Timed passes per engine when calibrating.
pub const CALIBRATION_REPS: usize = 5;
/// Timed passes per configuration in the whole-configuration check.
pub const WHOLE_REPS: usize = 9;
/// Timed passes per engine when the whole-configuration check measures
/// each sampled set alone on its own packets.
pub const PER_SET_REPS: usize = 3;

/// One sampled packet as the run scans it (see [`Selector::check_whole`]):
/// its payload (index into [`Selector::sampled_traffic`]), the rule groups
/// that scan it ([`NO_GROUP`]: none), and whether its bytes are scanned a
/// second time as reassembled stream data (TCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub sample: u32,
    pub groups: [u32; 2],
    pub stream: bool,
}

/// No group in a [`Route`] slot.
pub const NO_GROUP: u32 = u32::MAX;

/// A sampled packet in the simulated run: payload, the distinct pattern
/// sets that scan it, and whether it is scanned again as stream data.
type SimPacket<'a> = (&'a [u8], [Option<usize>; 2], bool);

/// Engines per distinct pattern set (`None`: not built).
type Engines = Vec<Option<Box<dyn PrefilterEngine>>>;

/// Builds a `kind` engine for each of `sets` where `wanted`, on all cores
/// (Hyperscan compiles of a few hundred patterns take 100-200 ms each).
fn build_wanted(
    kind: EngineKind,
    sets: &[&[Pattern]],
    wanted: &[bool],
    hs_cache: Option<&std::path::Path>,
    threads: usize,
) -> Engines {
    let todo: Vec<usize> = (0..sets.len()).filter(|&i| wanted[i]).collect();
    let picked: Vec<&[Pattern]> = todo.iter().map(|&i| sets[i]).collect();
    let mut out: Engines = (0..sets.len()).map(|_| None).collect();
    for (i, r) in todo
        .into_iter()
        .zip(build_parallel(kind, &picked, hs_cache, threads))
    {
        out[i] = r.ok();
    }
    out
}

/// Time of one simulated run over `packets` for each configuration
/// (engine per distinct pattern set), in ns per pass: the best of `reps`
/// passes, the configurations' passes interleaved; a pass repeats the
/// packets until it lasts about 5 ms.
fn simulate_run(
    configs: &[Vec<&dyn PrefilterEngine>],
    packets: &[SimPacket],
    reps: usize,
) -> Vec<f64> {
    const PASS_NS: f64 = 5e6;
    let mut hits = 0u64;
    let mut pass = |c: &[&dyn PrefilterEngine], loops: usize| {
        let t = Instant::now();
        for _ in 0..loops {
            for (payload, ds, stream) in packets {
                for _ in 0..1 + *stream as usize {
                    for d in ds.iter().flatten() {
                        c[*d].scan_ids(payload, &mut |_| hits += 1);
                    }
                }
            }
        }
        t.elapsed().as_nanos() as f64 / loops as f64
    };
    let mut loops = vec![1usize; configs.len()];
    let mut best = vec![f64::INFINITY; configs.len()];
    for (i, c) in configs.iter().enumerate() {
        let ns = pass(c, 1);
        loops[i] = ((PASS_NS / ns.max(1.0)).ceil() as usize).clamp(1, 1000);
    }
    for _ in 0..reps.max(1) {
        for (i, c) in configs.iter().enumerate() {
            best[i] = best[i].min(pass(c, loops[i]));
        }
    }
    std::hint::black_box(hits);
    best
}

/// Cost of scanning `sample` with `engine`, in nanoseconds per byte: the
/// best of `reps` timed passes after one warm-up pass.
pub fn measure(engine: &dyn PrefilterEngine, sample: &[&[u8]], reps: usize) -> f64 {
    measure_interleaved(&[engine], sample, reps)[0]
}

/// [`measure`] for several engines, their passes interleaved (one pass of
/// each in turn), so that all see the same machine load and the same cache
/// pressure from the others; the best pass of each is kept. A pass of a
/// fast engine repeats the sample until it lasts about 2 ms, so that timer
/// and scheduler noise stay small against it.
pub fn measure_interleaved(
    engines: &[&dyn PrefilterEngine],
    sample: &[&[u8]],
    reps: usize,
) -> Vec<f64> {
    measure_interleaved_for(engines, sample, reps, 2e6)
}

/// [`measure_interleaved`] with passes of about `pass_ns`.
fn measure_interleaved_for(
    engines: &[&dyn PrefilterEngine],
    sample: &[&[u8]],
    reps: usize,
    pass_ns: f64,
) -> Vec<f64> {
    let bytes: usize = sample.iter().map(|s| s.len()).sum::<usize>().max(1);
    let mut hits = 0u64;
    let mut pass = |e: &dyn PrefilterEngine, loops: usize| {
        let t = Instant::now();
        for _ in 0..loops {
            for s in sample {
                e.scan_ids(s, &mut |_| hits += 1);
            }
        }
        t.elapsed().as_nanos() as f64 / (bytes * loops) as f64
    };
    // Warm-up pass: also sizes the timed passes. An engine slower than
    // 20 ms a pass is clearly not the one to pick and is not repeated.
    let mut best = vec![f64::INFINITY; engines.len()];
    let mut loops = vec![1usize; engines.len()];
    for (i, e) in engines.iter().enumerate() {
        let ns = pass(*e, 1);
        let total = ns * bytes as f64;
        if total > 20e6 {
            best[i] = ns;
            loops[i] = 0;
        } else {
            loops[i] = ((pass_ns / total.max(1.0)).ceil() as usize).clamp(1, 1000);
        }
    }
    for _ in 0..reps.max(1) {
        for (i, e) in engines.iter().enumerate() {
            if loops[i] > 0 {
                best[i] = best[i].min(pass(*e, loops[i]));
            }
        }
    }
    std::hint::black_box(hits);
    best
}

const CACHE_HEADER: &str = "# vigil prefilter calibration v4";

type CostCache = BTreeMap<u64, Vec<Cost>>;
type WholeCache = BTreeMap<u64, WholeChoice>;

/// One line per pattern set: `hash<TAB>kind=ns_per_byte/build_ms...`,
/// and one per whole-configuration check: `whole<TAB>hash<TAB>kind`
/// (`per-group`: the per-group choices won; `per-set` followed by
/// `<TAB>set-hash=kind` for each sampled set).
fn read_cache(path: &std::path::Path) -> (CostCache, WholeCache) {
    let mut out = BTreeMap::new();
    let mut whole = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return (out, whole);
    };
    let mut lines = text.lines();
    if lines.next() != Some(CACHE_HEADER) {
        return (out, whole);
    }
    for line in lines {
        if let Some(rest) = line.strip_prefix("whole\t") {
            let mut f = rest.split('\t');
            let (Some(Ok(h)), Some(k)) = (f.next().map(|h| u64::from_str_radix(h, 16)), f.next())
            else {
                continue;
            };
            let choice = match k {
                "per-group" => Some(WholeChoice::PerGroup),
                "per-set" => f
                    .map(|e| {
                        let (h, k) = e.split_once('=')?;
                        Some((u64::from_str_radix(h, 16).ok()?, EngineKind::parse(k)?))
                    })
                    .collect::<Option<BTreeMap<_, _>>>()
                    .map(WholeChoice::PerSet),
                k => EngineKind::parse(k).map(WholeChoice::Single),
            };
            if let Some(c) = choice {
                whole.insert(h, c);
            }
            continue;
        }
        let mut f = line.split('\t');
        let Some(Ok(h)) = f.next().map(|h| u64::from_str_radix(h, 16)) else {
            continue;
        };
        let costs: Vec<Cost> = f
            .filter_map(|c| {
                let (k, v) = c.split_once('=')?;
                let (ns, ms) = v.split_once('/')?;
                Some(Cost {
                    kind: EngineKind::parse(k)?,
                    ns_per_byte: ns.parse().ok()?,
                    build_ms: ms.parse().ok()?,
                })
            })
            .collect();
        if !costs.is_empty() {
            out.insert(h, costs);
        }
    }
    (out, whole)
}

fn write_cache(
    path: &std::path::Path,
    cache: &CostCache,
    whole: &WholeCache,
) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        writeln!(w, "{CACHE_HEADER}")?;
        for (h, costs) in cache {
            write!(w, "{h:016x}")?;
            for c in costs {
                write!(w, "\t{}={:.4}/{:.3}", c.kind, c.ns_per_byte, c.build_ms)?;
            }
            writeln!(w)?;
        }
        for (h, c) in whole {
            write!(w, "whole\t{h:016x}\t{}", c.name())?;
            if let WholeChoice::PerSet(m) = c {
                for (s, k) in m {
                    write!(w, "\t{s:016x}={k}")?;
                }
            }
            writeln!(w)?;
        }
        w.flush()?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` small HTTP requests, a payload sample.
    fn requests(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| format!("GET /index{i}.html HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes())
            .collect()
    }

    fn pats(words: &[&str]) -> Vec<Pattern> {
        words
            .iter()
            .enumerate()
            .map(|(i, w)| Pattern {
                id: i as u32,
                bytes: w.as_bytes().to_vec(),
                nocase: i % 2 == 0,
            })
            .collect()
    }

    #[test]
    fn fixed_shares_engines_between_identical_groups() {
        let mut s = Selector::fixed(EngineKind::Wm);
        let a = s.build(&pats(&["abc", "def"])).unwrap();
        let b = s.build(&pats(&["abc", "def"])).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let r = s.finish();
        assert_eq!((r.groups, r.choices.len()), (2, 1));
        assert_eq!(a.name(), "wm");
    }

    #[test]
    fn auto_calibrates_then_reads_its_cache() {
        let dir = std::env::temp_dir().join(format!("vigil-sel-{}", std::process::id()));
        let file = dir.join("cache.tsv");
        let sample = requests(20);
        let mut cfg = AutoConfig::new(sample);
        cfg.cache_file = Some(file.clone());
        let p = pats(&["index", "host:", "passwd"]);
        let mut s = Selector::new(Selection::Auto(cfg.clone()));
        let e1 = s.build(&p).unwrap();
        let r1 = s.finish();
        assert_eq!(r1.count(Source::Calibrated), 1);
        assert!(r1.summary().contains("measured 1"));
        assert!(!r1.choices[0].costs.is_empty());
        let mut s = Selector::new(Selection::Auto(cfg));
        let e2 = s.build(&p).unwrap();
        let r2 = s.finish();
        assert_eq!(r2.count(Source::Cached), 1);
        assert_eq!(e1.name(), e2.name());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn build_on_measures_on_its_own_sample_and_caches_apart() {
        let dir = std::env::temp_dir().join(format!("vigil-on-{}", std::process::id()));
        let file = dir.join("cache.tsv");
        let payloads = requests(20);
        let uris: Vec<Vec<u8>> = (0..20)
            .map(|i| format!("/index{i}.html").into_bytes())
            .collect();
        let mut cfg = AutoConfig::new(payloads);
        cfg.cache_file = Some(file.clone());
        let p = pats(&["index", "host:", "passwd"]);
        let mut s = Selector::new(Selection::Auto(cfg.clone()));
        s.build_on(&p, 0x55, &uris).unwrap();
        let r = s.finish();
        assert_eq!(r.count(Source::Calibrated), 1);
        // The same set on packet payloads is measured again (another key),
        // and on the same data it comes from the cache.
        let mut s = Selector::new(Selection::Auto(cfg.clone()));
        s.build(&p).unwrap();
        assert_eq!(s.finish().count(Source::Calibrated), 1);
        let mut s = Selector::new(Selection::Auto(cfg.clone()));
        s.build_on(&p, 0x55, &uris).unwrap();
        assert_eq!(s.finish().count(Source::Cached), 1);
        // An empty sample falls back to the payload sample.
        let mut s = Selector::new(Selection::Auto(cfg));
        s.build_on(&p, 0x77, &[]).unwrap();
        assert_eq!(s.finish().count(Source::Cached), 1);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn auto_without_sample_uses_the_static_rule() {
        let mut s = Selector::new(Selection::Auto(AutoConfig::new(Vec::new())));
        assert_eq!(s.build(&pats(&["one"])).unwrap().name(), "bmh");
        let many = if EngineKind::Hs.available() {
            "hs"
        } else {
            "ac"
        };
        assert_eq!(s.build(&pats(&["one", "two"])).unwrap().name(), many);
        // Without Hyperscan among the candidates: AC.
        let mut cfg = AutoConfig::new(Vec::new());
        cfg.candidates.retain(|&k| k != EngineKind::Hs);
        let mut s = Selector::new(Selection::Auto(cfg));
        assert_eq!(s.build(&pats(&["one", "two"])).unwrap().name(), "ac");
    }

    #[test]
    fn whole_check_runs_then_reads_its_cache() {
        let dir = std::env::temp_dir().join(format!("vigil-whole-{}", std::process::id()));
        let file = dir.join("cache.tsv");
        let sample = requests(40);
        let mut cfg = AutoConfig::new(sample.clone());
        cfg.traffic = (0..sample.len())
            .map(|i| TrafficSample {
                proto: 6,
                sp: 40000,
                dp: 80,
                bytes: sample[i].len() as u32,
            })
            .collect();
        cfg.cache_file = Some(file.clone());
        let a = pats(&["index", "host:", "passwd"]);
        let b = pats(&["zzz"]);
        let routes: Vec<Route> = (0..sample.len() as u32)
            .map(|i| Route {
                sample: i,
                groups: [0, if i % 2 == 0 { 1 } else { NO_GROUP }],
                stream: true,
            })
            .collect();
        let sets: Vec<&[Pattern]> = vec![&a, &b, &[]];
        let run = |cfg: AutoConfig| {
            let mut s = Selector::new(Selection::Auto(cfg));
            assert_eq!(s.sampled_traffic().len(), sample.len());
            let before = [s.build(&a).unwrap(), s.build(&b).unwrap()];
            let after = s.check_whole(&sets, &routes);
            let r = s.finish();
            let w = r.whole.clone().expect("whole check ran");
            assert_eq!(w.sets, 2);
            if let Some(engines) = after {
                assert!(engines[2].is_none());
                match &w.winner {
                    WholeChoice::PerGroup => panic!("per-group kept, yet engines replaced"),
                    WholeChoice::Single(kind) => {
                        assert!(engines[..2]
                            .iter()
                            .any(|e| e.as_ref().unwrap().name() == kind.name()))
                    }
                    WholeChoice::PerSet(m) => {
                        for (e, set) in engines.iter().zip([&a, &b]) {
                            let kind = m[&pattern_set_hash(set)];
                            assert_eq!(e.as_ref().unwrap().name(), kind.name());
                        }
                    }
                }
            } else {
                let _ = before;
            }
            assert!(r.summary().contains("whole-run check over 2 sampled sets"));
            w
        };
        let first = run(cfg.clone());
        assert!(!first.measured.is_empty());
        let second = run(cfg);
        assert!(second.measured.is_empty(), "second run reads the cache");
        assert_eq!(first.winner, second.winner);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn spread_keeps_all_that_fits_and_samples_evenly_otherwise() {
        let small: Vec<Vec<u8>> = vec![vec![1; 10], Vec::new(), vec![2; 20]];
        assert_eq!(spread(&small, 1000), vec![0, 2]);
        // 1,000 payloads of 100 bytes, 10 KB wanted: about every tenth,
        // from the start to the end of the list, never over the bound.
        let many: Vec<Vec<u8>> = (0..1000).map(|i| vec![i as u8; 100]).collect();
        let kept = spread(&many, 10_000);
        assert!(kept.len() >= 95 && kept.len() <= 100, "{}", kept.len());
        assert!(kept.iter().map(|&i| many[i].len()).sum::<usize>() <= 10_000);
        assert!(kept[0] < 20 && *kept.last().unwrap() > 980, "{kept:?}");
        assert!(kept
            .windows(2)
            .all(|w| w[1] - w[0] >= 5 && w[1] - w[0] <= 15));
    }

    #[test]
    fn whole_choices_round_trip_through_the_cache_file() {
        let dir = std::env::temp_dir().join(format!("vigil-wcache-{}", std::process::id()));
        let file = dir.join("cache.tsv");
        let mut costs = CostCache::new();
        costs.insert(
            7,
            vec![Cost {
                kind: EngineKind::Wm,
                ns_per_byte: 0.5,
                build_ms: 1.25,
            }],
        );
        let mut whole = WholeCache::new();
        whole.insert(1, WholeChoice::PerGroup);
        whole.insert(2, WholeChoice::Single(EngineKind::E2xb));
        let m: BTreeMap<u64, EngineKind> =
            [(0xabc, EngineKind::Bmh), (u64::MAX, EngineKind::AcCompact)]
                .into_iter()
                .collect();
        whole.insert(3, WholeChoice::PerSet(m));
        write_cache(&file, &costs, &whole).unwrap();
        let (c2, w2) = read_cache(&file);
        assert_eq!(c2, costs);
        assert_eq!(w2, whole);
        // A damaged per-set line is dropped, not half read.
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("=bmh", "=nosuch")).unwrap();
        let (_, w3) = read_cache(&file);
        assert!(!w3.contains_key(&3));
        assert_eq!(w3.len(), 2);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn every_kind_parses_back() {
        for k in EngineKind::ALL {
            assert_eq!(EngineKind::parse(k.name()), Some(k));
        }
    }
}

#[cfg(test)]
mod cost_tests {
    use super::*;

    #[test]
    fn build_time_counts_only_with_a_volume() {
        let fast_scan = Cost {
            kind: EngineKind::Hs,
            ns_per_byte: 1.0,
            build_ms: 100.0,
        };
        let fast_build = Cost {
            kind: EngineKind::AcFull,
            ns_per_byte: 1.5,
            build_ms: 2.0,
        };
        let c = [fast_scan, fast_build];
        assert_eq!(cheapest(&c, None), Some(EngineKind::Hs));
        assert_eq!(cheapest(&c, Some(10_000_000)), Some(EngineKind::AcFull));
        assert_eq!(cheapest(&c, Some(10_000_000_000)), Some(EngineKind::Hs));
    }

    #[test]
    fn shapes_share_measurements() {
        let sample: Vec<Vec<u8>> = (0..30)
            .map(|i| format!("GET /x{i} HTTP/1.1\r\n").into_bytes())
            .collect();
        let mut s = Selector::new(Selection::Auto(AutoConfig::new(sample)));
        let set = |extra: &str| -> Vec<Pattern> {
            ["alpha", "beta", "gamma", "delta", "epsilon", extra]
                .iter()
                .enumerate()
                .map(|(i, w)| Pattern {
                    id: i as u32,
                    bytes: w.as_bytes().to_vec(),
                    nocase: false,
                })
                .collect()
        };
        s.build(&set("zeta")).unwrap();
        s.build(&set("theta")).unwrap();
        let r = s.finish();
        assert_eq!(r.count(Source::Calibrated), 1);
        assert_eq!(r.count(Source::Shared), 1);
        assert_eq!(r.choices[0].kind, r.choices[1].kind);
    }
}
