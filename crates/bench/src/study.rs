//! The grid: engines x rule-set sizes x payload sizes x payload kinds (x
//! synthetic set kinds), with `auto`'s pick for every cell and ratios
//! against a baseline engine measured in the same run.

use std::time::Instant;

use vigil_prefilter::select::{auto_candidates, measure_interleaved};
use vigil_prefilter::{EngineKind, Pattern, PrefilterEngine};

use crate::synth::{self, SetKind};
use crate::{payloads, Rng};

/// Payload kind of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadKind {
    /// Uniformly random bytes.
    Random,
    /// Real payloads cut from a capture.
    Real,
}

impl PayloadKind {
    pub fn name(self) -> &'static str {
        match self {
            PayloadKind::Random => "random",
            PayloadKind::Real => "real",
        }
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct StudyConfig {
    pub rule_counts: Vec<usize>,
    pub sizes: Vec<usize>,
    pub set_kinds: Vec<SetKind>,
    pub payload_kinds: Vec<PayloadKind>,
    pub engines: Vec<EngineKind>,
    /// Engine the ratios are taken against.
    pub baseline: EngineKind,
    /// Payload bytes scanned per timed pass of a cell.
    pub bytes_per_cell: usize,
    /// Timed passes (the minimum is kept), after one warm-up pass.
    pub reps: usize,
    /// BMH searches one pattern at a time; it is left out above this many
    /// rules (hours of scanning for nothing).
    pub bmh_max_rules: usize,
    /// E2xB likewise (one probe per pattern per packet).
    pub e2xb_max_rules: usize,
    pub seed: u64,
}

impl StudyConfig {
    /// The full study: 1..10,000 rules, 50/500/1500-byte payloads, both
    /// payload kinds and both synthetic set kinds.
    pub fn full() -> StudyConfig {
        StudyConfig {
            rule_counts: vec![1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000],
            sizes: vec![50, 500, 1500],
            set_kinds: vec![SetKind::Permuted, SetKind::Random],
            payload_kinds: vec![PayloadKind::Random, PayloadKind::Real],
            engines: EngineKind::available_kinds(),
            baseline: EngineKind::Ac,
            bytes_per_cell: 192 << 10,
            reps: 15,
            bmh_max_rules: 200,
            e2xb_max_rules: 10000,
            seed: 0x5eed,
        }
    }

    /// Under a minute: fewer sizes of rule set, permuted sets only, less
    /// data per cell.
    pub fn quick() -> StudyConfig {
        StudyConfig {
            rule_counts: vec![1, 10, 100, 1000, 10000],
            set_kinds: vec![SetKind::Permuted],
            bytes_per_cell: 48 << 10,
            reps: 9,
            bmh_max_rules: 10,
            e2xb_max_rules: 1000,
            ..StudyConfig::full()
        }
    }
}

/// One measured cell (one engine, or `auto`).
#[derive(Debug, Clone)]
pub struct Cell {
    pub set_kind: SetKind,
    pub rules: usize,
    pub payload_kind: PayloadKind,
    pub size: usize,
    /// Engine name, or "auto".
    pub engine: String,
    /// For `auto`: the engine it picked.
    pub picked: Option<EngineKind>,
    pub build_ms: f64,
    pub heap_bytes: usize,
    pub ns_per_byte: f64,
    pub ns_per_packet: f64,
    pub gbit_per_s: f64,
    /// Cost over the baseline engine's cost in the same cell.
    pub ratio_vs_baseline: f64,
    /// Cost over the cheapest engine's cost in the same cell.
    pub ratio_vs_best: f64,
}

struct Built {
    kind: EngineKind,
    engine: Box<dyn PrefilterEngine>,
    build_ms: f64,
}

/// Runs the grid. `seed` are the real patterns to synthesise sets from,
/// `real` the payload pool to cut real payloads from; `progress` gets a
/// line per rule-set size.
pub fn run(
    cfg: &StudyConfig,
    seed: &[Pattern],
    real: &[Vec<u8>],
    progress: &mut dyn FnMut(&str),
) -> Vec<Cell> {
    let mut rng = Rng::new(cfg.seed);
    // The same payloads for every rule-set size and engine; auto
    // calibrates on a separate, smaller sample of the same kind and size
    // (as `vigil run` calibrates on the head of the capture).
    let mut loads = Vec::new();
    for &pk in &cfg.payload_kinds {
        for &size in &cfg.sizes {
            let count = (cfg.bytes_per_cell / size).max(8);
            let make = |n: usize, phase: f64, rng: &mut Rng| match pk {
                PayloadKind::Random => payloads::random(size, n, rng),
                PayloadKind::Real => payloads::cut(real, size, n, phase),
            };
            let bufs = make(count, 0.0, &mut rng);
            let calib = make(count, 0.5, &mut rng);
            loads.push((pk, size, bufs, calib));
        }
    }
    let mut cells = Vec::new();
    for &sk in &cfg.set_kinds {
        for &n in &cfg.rule_counts {
            let t0 = Instant::now();
            let pats = synth::make(seed, n, sk, &mut rng);
            let built: Vec<Built> = cfg
                .engines
                .iter()
                .filter(|&&k| !(k == EngineKind::Bmh && n > cfg.bmh_max_rules))
                .filter(|&&k| !(k == EngineKind::E2xb && n > cfg.e2xb_max_rules))
                .filter_map(|&kind| {
                    let t = Instant::now();
                    let engine = kind.build(&pats).ok()?;
                    Some(Built {
                        kind,
                        engine,
                        build_ms: t.elapsed().as_secs_f64() * 1e3,
                    })
                })
                .collect();
            for (pk, size, bufs, calib) in &loads {
                let bufs: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
                let calib: Vec<&[u8]> = calib.iter().map(|b| b.as_slice()).collect();
                // Interleaved passes: every engine sees the same machine
                // load; the minimum over passes is kept.
                let engines: Vec<&dyn PrefilterEngine> =
                    built.iter().map(|b| b.engine.as_ref()).collect();
                // Auto's calibration sample is measured in alternation with
                // the cell's own (same time window, so machine-load drift
                // between the two does not decide), but only auto's view
                // of it picks the engine.
                let auto_kinds = auto_candidates(&pats, &cfg.engines);
                let calib_engines: Vec<&dyn PrefilterEngine> = built
                    .iter()
                    .filter(|b| auto_kinds.contains(&b.kind))
                    .map(|b| b.engine.as_ref())
                    .collect();
                let mut best_ns = vec![f64::INFINITY; engines.len()];
                let mut calib_ns = vec![f64::INFINITY; calib_engines.len()];
                let rounds = cfg.reps.max(2).div_ceil(2);
                for _ in 0..rounds {
                    let a = measure_interleaved(&engines, &bufs, 2);
                    let b = measure_interleaved(&calib_engines, &calib, 2);
                    for (x, y) in best_ns.iter_mut().zip(a) {
                        *x = x.min(y);
                    }
                    for (x, y) in calib_ns.iter_mut().zip(b) {
                        *x = x.min(y);
                    }
                }
                let base = built
                    .iter()
                    .position(|b| b.kind == cfg.baseline)
                    .map(|i| best_ns[i]);
                let min = best_ns.iter().copied().fold(f64::INFINITY, f64::min);
                let cell = |engine: String, picked, build_ms, heap_bytes, nsb: f64| Cell {
                    set_kind: sk,
                    rules: n,
                    payload_kind: *pk,
                    size: *size,
                    engine,
                    picked,
                    build_ms,
                    heap_bytes,
                    ns_per_byte: nsb,
                    ns_per_packet: nsb * *size as f64,
                    gbit_per_s: 8.0 / nsb.max(1e-6),
                    ratio_vs_baseline: base.map_or(f64::NAN, |b| nsb / b),
                    ratio_vs_best: nsb / min,
                };
                for (i, b) in built.iter().enumerate() {
                    cells.push(cell(
                        b.kind.name().to_string(),
                        None,
                        b.build_ms,
                        b.engine.heap_bytes(),
                        best_ns[i],
                    ));
                }
                // Auto: what its calibration sample says, costed at that
                // engine's measurement in this cell.
                let picked = built
                    .iter()
                    .filter(|b| auto_kinds.contains(&b.kind))
                    .zip(&calib_ns)
                    .min_by(|x, y| x.1.total_cmp(y.1))
                    .map(|(b, _)| b.kind);
                if let Some(kind) = picked {
                    if let Some(i) = built.iter().position(|b| b.kind == kind) {
                        cells.push(cell(
                            "auto".into(),
                            Some(kind),
                            built[i].build_ms,
                            built[i].engine.heap_bytes(),
                            best_ns[i],
                        ));
                    }
                }
            }
            progress(&format!(
                "{} set, {n} rules: {} engines in {:.1}s",
                sk.name(),
                built.len(),
                t0.elapsed().as_secs_f64()
            ));
        }
    }
    cells
}

/// CSV of all cells.
pub fn csv(cells: &[Cell]) -> String {
    let mut s = String::from(
        "set_kind,rules,payload_kind,payload_size,engine,picked,build_ms,heap_bytes,\
         ns_per_byte,ns_per_packet,gbit_per_s,ratio_vs_baseline,ratio_vs_best\n",
    );
    for c in cells {
        s.push_str(&format!(
            "{},{},{},{},{},{},{:.3},{},{:.4},{:.1},{:.3},{:.4},{:.4}\n",
            c.set_kind.name(),
            c.rules,
            c.payload_kind.name(),
            c.size,
            c.engine,
            c.picked.map_or("", |k| k.name()),
            c.build_ms,
            c.heap_bytes,
            c.ns_per_byte,
            c.ns_per_packet,
            c.gbit_per_s,
            c.ratio_vs_baseline,
            c.ratio_vs_best
        ));
    }
    s
}

/// Engines in the order they appear in `cells` (auto last).
pub fn engine_names(cells: &[Cell]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in cells {
        if c.engine != "auto" && !names.contains(&c.engine) {
            names.push(c.engine.clone());
        }
    }
    names
}

/// Text tables: for each (set kind, payload kind, size), ns per packet by
/// rule count and engine, the winner, and auto's pick and ratio.
pub fn table(cells: &[Cell]) -> String {
    let names = engine_names(cells);
    let mut out = String::new();
    let mut panels: Vec<(SetKind, PayloadKind, usize)> = Vec::new();
    for c in cells {
        let k = (c.set_kind, c.payload_kind, c.size);
        if !panels.contains(&k) {
            panels.push(k);
        }
    }
    for (sk, pk, size) in panels {
        out.push_str(&format!(
            "\n{} patterns, {} payloads of {size} bytes: ns per packet\n{:>6}",
            sk.name(),
            pk.name(),
            "rules"
        ));
        for n in &names {
            out.push_str(&format!(" {n:>10}"));
        }
        out.push_str(&format!(" {:>10} {:>16}\n", "best", "auto (x best)"));
        let mut rules: Vec<usize> = cells
            .iter()
            .filter(|c| (c.set_kind, c.payload_kind, c.size) == (sk, pk, size))
            .map(|c| c.rules)
            .collect();
        rules.dedup();
        for r in rules {
            let row: Vec<&Cell> = cells
                .iter()
                .filter(|c| (c.set_kind, c.payload_kind, c.size, c.rules) == (sk, pk, size, r))
                .collect();
            out.push_str(&format!("{r:>6}"));
            for n in &names {
                match row.iter().find(|c| &c.engine == n) {
                    Some(c) => out.push_str(&format!(" {:>10.0}", c.ns_per_packet)),
                    None => out.push_str(&format!(" {:>10}", "-")),
                }
            }
            let best = row
                .iter()
                .filter(|c| c.engine != "auto")
                .min_by(|a, b| a.ns_per_packet.total_cmp(&b.ns_per_packet));
            out.push_str(&format!(" {:>10}", best.map_or("-", |c| c.engine.as_str())));
            match row.iter().find(|c| c.engine == "auto") {
                Some(a) => out.push_str(&format!(
                    " {:>10} {:>5.2}\n",
                    a.picked.map_or("-", |k| k.name()),
                    a.ratio_vs_best
                )),
                None => out.push('\n'),
            }
        }
    }
    out
}

/// The headline: for each payload kind and size (permuted sets), which
/// engine wins over which range of rule counts; and auto's worst ratio.
pub fn headline(cells: &[Cell]) -> String {
    let mut out = String::new();
    let mut keys: Vec<(PayloadKind, usize)> = Vec::new();
    for c in cells.iter().filter(|c| c.set_kind == SetKind::Permuted) {
        if !keys.contains(&(c.payload_kind, c.size)) {
            keys.push((c.payload_kind, c.size));
        }
    }
    for (pk, size) in keys {
        let mut rules: Vec<usize> = cells
            .iter()
            .filter(|c| (c.set_kind, c.payload_kind, c.size) == (SetKind::Permuted, pk, size))
            .map(|c| c.rules)
            .collect();
        rules.dedup();
        let mut runs: Vec<(String, usize, usize)> = Vec::new();
        for r in rules {
            let best = cells
                .iter()
                .filter(|c| {
                    (c.set_kind, c.payload_kind, c.size, c.rules)
                        == (SetKind::Permuted, pk, size, r)
                        && c.engine != "auto"
                })
                .min_by(|a, b| a.ns_per_packet.total_cmp(&b.ns_per_packet));
            let Some(best) = best else { continue };
            match runs.last_mut() {
                Some(last) if last.0 == best.engine => last.2 = r,
                _ => runs.push((best.engine.clone(), r, r)),
            }
        }
        let parts: Vec<String> = runs
            .iter()
            .map(|(e, a, b)| {
                if a == b {
                    format!("{e} at {a}")
                } else {
                    format!("{e} {a}-{b}")
                }
            })
            .collect();
        out.push_str(&format!(
            "{} {size:>4} B: {}\n",
            pk.name(),
            parts.join(", ")
        ));
    }
    let autos: Vec<&Cell> = cells.iter().filter(|c| c.engine == "auto").collect();
    if let Some(worst) = autos
        .iter()
        .max_by(|a, b| a.ratio_vs_best.total_cmp(&b.ratio_vs_best))
    {
        let within = autos.iter().filter(|c| c.ratio_vs_best <= 1.05).count();
        out.push_str(&format!(
            "auto: within 5% of the best engine in {within} of {} cells; worst {:.2}x ({} set, {} rules, {} {} B, picked {})\n",
            autos.len(),
            worst.ratio_vs_best,
            worst.set_kind.name(),
            worst.rules,
            worst.payload_kind.name(),
            worst.size,
            worst.picked.map_or("-", |k| k.name())
        ));
    }
    out
}

/// The seed's Figure 5 (cost per packet against rules, one line per
/// engine) and Figure 6 (cost over the baseline's against rules), one
/// panel per payload kind and size, permuted sets (random sets when the
/// run has no permuted ones).
pub fn figures(cells: &[Cell], baseline: EngineKind) -> (String, String) {
    use crate::svg::{render, Panel, Series};
    let sk = if cells.iter().any(|c| c.set_kind == SetKind::Permuted) {
        SetKind::Permuted
    } else {
        SetKind::Random
    };
    let mut keys: Vec<(PayloadKind, usize)> = Vec::new();
    for c in cells.iter().filter(|c| c.set_kind == sk) {
        if !keys.contains(&(c.payload_kind, c.size)) {
            keys.push((c.payload_kind, c.size));
        }
    }
    let mut names = engine_names(cells);
    names.push("auto".into());
    let mut cost = Vec::new();
    let mut ratio = Vec::new();
    for &(pk, size) in &keys {
        let pick = |f: &dyn Fn(&Cell) -> f64, skip_base: bool| -> Vec<Series> {
            names
                .iter()
                .filter(|n| !(skip_base && n.as_str() == baseline.name()))
                .map(|n| Series {
                    name: n.clone(),
                    points: cells
                        .iter()
                        .filter(|c| {
                            c.set_kind == sk
                                && c.payload_kind == pk
                                && c.size == size
                                && &c.engine == n
                        })
                        .map(|c| (c.rules as f64, f(c)))
                        .collect(),
                })
                .collect()
        };
        cost.push(Panel {
            title: format!("{} payloads, {size} B", pk.name()),
            x_label: "rules (patterns in the group)".into(),
            y_label: "ns per packet".into(),
            series: pick(&|c| c.ns_per_packet, false),
            reference: None,
        });
        ratio.push(Panel {
            title: format!("{} payloads, {size} B", pk.name()),
            x_label: "rules (patterns in the group)".into(),
            y_label: format!("cost / {} cost", baseline.name()),
            series: pick(&|c| c.ratio_vs_baseline, true),
            reference: Some(1.0),
        });
    }
    let cols = 3;
    (
        render(
            &format!("Prefilter cost vs rules ({} pattern sets)", sk.name()),
            &cost,
            cols,
        ),
        render(
            &format!(
                "Cost relative to {} vs rules ({} pattern sets)",
                baseline.name(),
                sk.name()
            ),
            &ratio,
            cols,
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_grid_runs_and_reports() {
        let cfg = StudyConfig {
            rule_counts: vec![1, 5],
            sizes: vec![50],
            set_kinds: vec![SetKind::Permuted],
            bytes_per_cell: 2000,
            reps: 1,
            ..StudyConfig::quick()
        };
        let cells = run(&cfg, &synth::builtin(), &payloads::demo(), &mut |_| {});
        assert!(cells.iter().any(|c| c.engine == "auto"));
        assert!(cells.iter().all(|c| c.ratio_vs_best >= 1.0 - 1e-9));
        let t = table(&cells);
        assert!(t.contains("rules"));
        assert!(csv(&cells).lines().count() == cells.len() + 1);
        assert!(headline(&cells).contains("auto:"));
    }
}
