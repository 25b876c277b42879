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

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// its packet-size mix and content drive the choice.
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

/// Largest AC-Full table `auto` considers for one group.
pub const AUTO_AC_FULL_MAX_BYTES: usize = 64 << 20;
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
    /// Rule groups with a prefilter (groups sharing an engine included).
    pub groups: usize,
    /// One entry per distinct engine built.
    pub choices: Vec<GroupChoice>,
    /// Time spent calibrating.
    pub calibration: Duration,
    pub cache_file: Option<PathBuf>,
    /// Heap bytes of all distinct engines.
    pub heap_bytes: usize,
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
            "prefilter {}: {} groups, {} distinct engines ({}), {:.1} MB",
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
        let fb = self.count(Source::Fallback);
        if fb > 0 {
            s.push_str(&format!("; {fb} fell back to another engine"));
        }
        s
    }
}

/// Builds the engine of each rule group (see the module docs).
pub struct Selector {
    selection: Selection,
    memo: HashMap<Vec<Pattern>, Arc<dyn PrefilterEngine>>,
    /// Measurements by pattern-set hash (from the cache file, and new).
    cache: BTreeMap<u64, Vec<Cost>>,
    cache_dirty: bool,
    /// Measurements by group shape.
    shapes: HashMap<(u32, u8), Vec<Cost>>,
    ac_full_bytes: usize,
    spent: Duration,
    sample: Vec<Vec<u8>>,
    report: SelectionReport,
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

/// Stable 64-bit hash of a pattern list (FNV-1a).
pub fn pattern_set_hash(patterns: &[Pattern]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |b: u8| {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for p in patterns {
        for b in p.id.to_le_bytes() {
            eat(b);
        }
        for b in (p.bytes.len() as u32).to_le_bytes() {
            eat(b);
        }
        for &b in &p.bytes {
            eat(b);
        }
        eat(p.nocase as u8);
    }
    h
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
    pub fn new(selection: Selection) -> Selector {
        let mut report = SelectionReport::default();
        let mut cache = BTreeMap::new();
        let mut sample = Vec::new();
        match &selection {
            Selection::Fixed(k) => report.mode = k.name().to_string(),
            Selection::Auto(cfg) => {
                report.mode = "auto".into();
                report.cache_file = cfg.cache_file.clone();
                if let Some(f) = &cfg.cache_file {
                    cache = read_cache(f);
                }
                // Bound the measured bytes, keeping the size mix.
                let mut total = 0;
                for p in cfg.sample.iter().filter(|p| !p.is_empty()) {
                    if total + p.len() > SAMPLE_BYTES {
                        break;
                    }
                    total += p.len();
                    sample.push(p.clone());
                }
            }
        }
        Selector {
            selection,
            memo: HashMap::new(),
            cache,
            cache_dirty: false,
            shapes: HashMap::new(),
            ac_full_bytes: 0,
            spent: Duration::ZERO,
            sample,
            report,
        }
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

    /// [`Selector::build`] for a group that sees `share` (0..1) of the
    /// sampled payload bytes: `auto` weighs build time against that share
    /// of the expected volume (at least [`MIN_SHARE`]); `None`: all of it.
    pub fn build_for(
        &mut self,
        patterns: &[Pattern],
        share: Option<f64>,
    ) -> Result<Arc<dyn PrefilterEngine>, BuildError> {
        self.report.groups += 1;
        if let Some(e) = self.memo.get(patterns) {
            return Ok(e.clone());
        }
        let (engine, choice) = match self.selection.clone() {
            Selection::Fixed(k) => self.build_fixed(k, patterns)?,
            Selection::Auto(cfg) => {
                let expected = cfg
                    .expected_bytes
                    .map(|b| (b as f64 * share.unwrap_or(1.0).clamp(MIN_SHARE, 1.0)) as u64);
                self.build_auto(&cfg, expected, patterns)?
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
        self.memo.insert(patterns.to_vec(), engine.clone());
        Ok(engine)
    }

    /// Saves the calibration cache (when anything was measured) and
    /// returns what was chosen.
    pub fn finish(&mut self) -> SelectionReport {
        if self.cache_dirty {
            if let Some(f) = &self.report.cache_file {
                // The cache only saves time: failing to write it is not
                // an error.
                let _ = write_cache(f, &self.cache);
            }
            self.cache_dirty = false;
        }
        self.report.calibration = self.spent;
        self.report.clone()
    }

    fn build_kind(
        &mut self,
        kind: EngineKind,
        patterns: &[Pattern],
    ) -> Result<Box<dyn PrefilterEngine>, BuildError> {
        if kind == EngineKind::AcFull {
            let size = crate::automaton_size(patterns);
            let bytes = AcFullEngine::table_bytes_for(size.states);
            if self.ac_full_bytes + bytes > AC_FULL_TOTAL_BYTES {
                return Err(BuildError(format!(
                    "AC-Full memory budget ({} MB) spent",
                    AC_FULL_TOTAL_BYTES >> 20
                )));
            }
            let e = AcFullEngine::new(patterns)?;
            self.ac_full_bytes += bytes;
            return Ok(Box::new(e));
        }
        kind.build(patterns)
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

    fn static_choice(distinct: usize) -> EngineKind {
        if distinct == 1 {
            EngineKind::Bmh
        } else {
            EngineKind::Ac
        }
    }

    fn build_auto(
        &mut self,
        cfg: &AutoConfig,
        expected: Option<u64>,
        patterns: &[Pattern],
    ) -> Result<(Box<dyn PrefilterEngine>, GroupChoice), BuildError> {
        let n = patterns.len();
        let key = pattern_set_hash(patterns);
        let size = crate::automaton_size(patterns);
        let shape = shape(size.distinct, patterns);
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
        if self.spent >= cfg.budget || self.sample.is_empty() {
            let kind = Self::static_choice(size.distinct);
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
            .collect();
        let owned = std::mem::take(&mut self.sample);
        let sample: Vec<&[u8]> = owned.iter().map(|s| s.as_slice()).collect();
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
                self.ac_full_bytes = self
                    .ac_full_bytes
                    .saturating_sub(AcFullEngine::table_bytes_for(size.states));
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
    const PASS_NS: f64 = 2e6;
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
            loops[i] = ((PASS_NS / total.max(1.0)).ceil() as usize).clamp(1, 1000);
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

const CACHE_HEADER: &str = "# vigil prefilter calibration v2";

/// One line per pattern set: `hash<TAB>kind=ns_per_byte/build_ms...`.
fn read_cache(path: &std::path::Path) -> BTreeMap<u64, Vec<Cost>> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    let mut lines = text.lines();
    if lines.next() != Some(CACHE_HEADER) {
        return out;
    }
    for line in lines {
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
    out
}

fn write_cache(path: &std::path::Path, cache: &BTreeMap<u64, Vec<Cost>>) -> std::io::Result<()> {
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
        w.flush()?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let sample: Vec<Vec<u8>> = (0..20)
            .map(|i| format!("GET /index{i}.html HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes())
            .collect();
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
    fn auto_without_sample_uses_the_static_rule() {
        let mut s = Selector::new(Selection::Auto(AutoConfig::new(Vec::new())));
        assert_eq!(s.build(&pats(&["one"])).unwrap().name(), "bmh");
        assert_eq!(s.build(&pats(&["one", "two"])).unwrap().name(), "ac");
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
