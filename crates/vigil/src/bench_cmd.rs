//! `vigil bench prefilter`: the string-matching study (see vigil-bench),
//! and the prefilter engine selection behind `vigil run --prefilter`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use vigil_bench::study::{self, StudyConfig};
use vigil_bench::{payloads, synth, table2};
use vigil_detect::DetectEngine;
use vigil_prefilter::select::{fnv1a, AutoConfig, FNV_OFFSET};
use vigil_prefilter::{EngineKind, Pattern, Selection, Selector, TrafficSample};

use crate::config::Config;
use crate::run::{build_vars, load_classification, load_rule_files};

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Every prefilter engine over rule-set sizes 1..10,000 x payload sizes
    /// 50/500/1500 x random and real payloads: per-byte and per-packet
    /// cost, Gbit/s, build time and memory, `auto`'s pick per cell; CSV,
    /// SVG plots, a printed table, and the memory table (MIDeA's Table 2)
    /// for the whole ruleset.
    Prefilter(BenchPrefilterArgs),
}

#[derive(Debug, Args)]
pub struct BenchPrefilterArgs {
    /// Output directory (grid.csv, table2.csv, table2.md, summary.txt,
    /// cost_vs_rules.svg, ratio_vs_rules.svg).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A short run (under a minute): fewer rule-set sizes, less data.
    #[arg(long)]
    pub quick: bool,
    /// Ruleset the synthetic sets and the memory table come from
    /// (default: ../shared/rules/et-open/emerging.rules when present, else
    /// a built-in pattern list).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Capture real payloads are cut from (default:
    /// ../shared/pcaps/dev/dev-mix.pcap when present, else the demo
    /// capture).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// cpu: the engine study above; opencl: device throughput (Gbit/s,
    /// with and without transfers) against batch size on the ruleset's
    /// largest rule group, next to every CPU engine (device.md,
    /// device.csv).
    #[arg(long, value_name = "DEVICE", default_value = "cpu")]
    pub device: String,
    /// OpenCL device number (with --device opencl).
    #[arg(long = "opencl-device", value_name = "N", default_value_t = 0)]
    pub opencl_device: usize,
}

const DEFAULT_RULES: &str = "../shared/rules/et-open/emerging.rules";
const DEFAULT_PCAP: &str = "../shared/pcaps/dev/dev-mix.pcap";

pub fn bench(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Prefilter(a) => prefilter(a),
    }
}

/// Patterns of a ruleset for the study.
struct RulesetPatterns {
    /// Rules parsed.
    parsed: usize,
    /// Rules loaded (evaluable).
    loaded: usize,
    /// One fast pattern per parsed rule with a content, whatever its
    /// buffer (explicit `fast_pattern`, else the longest content).
    fast: Vec<Pattern>,
    /// Every non-negated content of every parsed rule.
    contents: Vec<Pattern>,
    /// The distinct pattern sets of the loaded rules' groups, as `vigil
    /// run` builds them.
    group_sets: Vec<Vec<Pattern>>,
}

fn ruleset_patterns(files: &[PathBuf]) -> Result<RulesetPatterns> {
    let cfg = Config::default();
    let vars = build_vars(&cfg)?;
    let classes = load_classification(&cfg)?;
    let loaded = load_rule_files(files, &vars)?;
    let mut fast = Vec::new();
    let mut contents = Vec::new();
    let pat = |id: usize, c: &vigil_rules::Content| Pattern {
        id: id as u32,
        bytes: c.pattern.clone(),
        nocase: c.nocase,
    };
    for r in &loaded.rules {
        let all: Vec<&vigil_rules::Content> = r
            .buffers
            .iter()
            .flat_map(|b| b.items.iter())
            .filter_map(|i| match i {
                vigil_rules::PayloadItem::Content(c) if !c.negated && !c.pattern.is_empty() => {
                    Some(c)
                }
                _ => None,
            })
            .collect();
        let chosen = all
            .iter()
            .find(|c| c.fast_pattern.is_some())
            .or_else(|| all.iter().rev().max_by_key(|c| c.pattern.len()));
        if let Some(c) = chosen {
            fast.push(pat(fast.len(), c));
        }
        for c in all {
            contents.push(pat(contents.len(), c));
        }
    }
    let (detect, report) = DetectEngine::build(&loaded.rules, &classes);
    let fp = |r: u32| {
        let f = detect.rules[r as usize].fast_pattern.as_ref();
        f.map(|f| (f.bytes.clone(), f.nocase))
    };
    let mut group_sets: Vec<Vec<Pattern>> = Vec::new();
    for g in &detect.groups.groups {
        if g.prefiltered.is_empty() {
            continue;
        }
        let set: Vec<Pattern> = g
            .prefiltered
            .iter()
            .enumerate()
            .filter_map(|(i, &r)| {
                fp(r).map(|(bytes, nocase)| Pattern {
                    id: i as u32,
                    bytes,
                    nocase,
                })
            })
            .collect();
        if !group_sets.contains(&set) {
            group_sets.push(set);
        }
    }
    Ok(RulesetPatterns {
        parsed: loaded.rules.len(),
        loaded: report.loaded,
        fast,
        contents,
        group_sets,
    })
}

/// `--device opencl`: the device benchmark on the largest rule group of
/// the ruleset and real payloads.
fn prefilter_device(a: &BenchPrefilterArgs) -> Result<ExitCode> {
    let rules = a
        .rules
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_RULES));
    eprintln!("vigil bench: loading {}", rules.display());
    let rp = ruleset_patterns(std::slice::from_ref(&rules))?;
    let set = rp
        .group_sets
        .iter()
        .max_by_key(|s| s.len())
        .context("no rule group with a prefilter")?;
    let pcap = a
        .pcap
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PCAP));
    let real = payloads::from_pcap(&pcap, if a.quick { 2 << 20 } else { 16 << 20 })
        .map_err(|e| anyhow::anyhow!("{}: {e}", pcap.display()))?;
    crate::bench_device::run(
        &a.out,
        a.opencl_device,
        set,
        "largest rule group of the ruleset",
        &real,
        a.quick,
    )?;
    Ok(ExitCode::SUCCESS)
}

fn prefilter(a: BenchPrefilterArgs) -> Result<ExitCode> {
    let start = Instant::now();
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    match a.device.as_str() {
        "cpu" => {}
        "opencl" => return prefilter_device(&a),
        d => bail!("unknown --device {d:?}: expected cpu or opencl"),
    }
    let rules = a.rules.clone().or_else(|| {
        Path::new(DEFAULT_RULES)
            .exists()
            .then(|| DEFAULT_RULES.into())
    });
    let (seed, table2_rows) = match &rules {
        Some(f) => {
            eprintln!("vigil bench: loading {}", f.display());
            let rp = ruleset_patterns(std::slice::from_ref(f))?;
            if rp.fast.is_empty() {
                bail!("{}: no rule with a content", f.display());
            }
            let name = f
                .file_name()
                .map_or("rules".into(), |n| n.to_string_lossy());
            eprintln!(
                "vigil bench: {} rules parsed ({} with a content), {} loaded in {} distinct group sets; memory table...",
                rp.parsed,
                rp.fast.len(),
                rp.loaded,
                rp.group_sets.len()
            );
            let rows = vec![
                table2::row(
                    &format!("{name}: fast pattern of every rule, one automaton"),
                    rp.parsed,
                    std::slice::from_ref(&rp.fast),
                    true,
                ),
                table2::row(
                    &format!("{name}: every content of every rule, one automaton"),
                    rp.parsed,
                    std::slice::from_ref(&rp.contents),
                    true,
                ),
                table2::row(
                    &format!("{name}: loaded rules, one automaton per rule group (sum)"),
                    rp.loaded,
                    &rp.group_sets,
                    !a.quick,
                ),
            ];
            (rp.fast, rows)
        }
        None => {
            eprintln!("vigil bench: no ruleset found; using the built-in pattern list");
            let all = synth::builtin();
            let rows = vec![table2::row(
                "built-in patterns",
                all.len(),
                std::slice::from_ref(&all),
                true,
            )];
            (all, rows)
        }
    };
    let pcap = a.pcap.clone().or_else(|| {
        Path::new(DEFAULT_PCAP)
            .exists()
            .then(|| DEFAULT_PCAP.into())
    });
    let (real, real_src) = match &pcap {
        Some(p) => (
            payloads::from_pcap(p, 8 << 20).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?,
            p.display().to_string(),
        ),
        None => (payloads::demo(), "the demo capture".to_string()),
    };
    let cfg = if a.quick {
        StudyConfig::quick()
    } else {
        StudyConfig::full()
    };
    eprintln!(
        "vigil bench: grid: engines {}, rules {:?}, sizes {:?}; real payloads from {real_src} ({} packets)",
        cfg.engines
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(","),
        cfg.rule_counts,
        cfg.sizes,
        real.len()
    );
    let cells = study::run(&cfg, &seed, &real, &mut |line| {
        eprintln!("vigil bench: {line}")
    });
    let (fig5, fig6) = study::figures(&cells, cfg.baseline);
    let table = study::table(&cells);
    let headline = study::headline(&cells);
    let t2 = table2::markdown(&table2_rows);
    let write = |name: &str, text: &str| -> Result<()> {
        let p = a.out.join(name);
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))
    };
    write("grid.csv", &study::csv(&cells))?;
    write("cost_vs_rules.svg", &fig5)?;
    write("ratio_vs_rules.svg", &fig6)?;
    write("table2.csv", &table2::csv(&table2_rows))?;
    write("table2.md", &t2)?;
    let summary = format!(
        "# vigil bench prefilter{}\n\nbaseline: {} (ratios in grid.csv are against it, same run)\n\
         real payloads: {real_src}\n\n## Memory (MIDeA Table 2)\n\n{t2}\n## Winners\n\n{headline}\n## Grid\n{table}",
        if a.quick { " --quick" } else { "" },
        cfg.baseline
    );
    write("summary.txt", &summary)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{summary}")?;
    eprintln!(
        "vigil bench: done in {:.1}s; wrote {}",
        start.elapsed().as_secs_f64(),
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The engine selector for `vigil run --prefilter NAME`. `auto` measures
/// on payloads sampled over the whole of `pcap`, weighs each group's build
/// time against its share of the capture's volume, and caches its
/// measurements under
/// `$XDG_CACHE_HOME/vigil` (else `LOG_DIR/cache`), in a file named by a
/// hash of the rule files.
/// The directory of Vigil's caches (`auto`'s calibration, compiled
/// Hyperscan databases): `$XDG_CACHE_HOME/vigil`, else `LOG_DIR/cache`.
pub fn cache_dir(log_dir: &Path) -> PathBuf {
    match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d).join("vigil"),
        None => log_dir.join("cache"),
    }
}

/// The selector of `--prefilter NAME`; with `mpm_cache`, compiled
/// Hyperscan databases are cached in [`cache_dir`]`/hs`.
pub fn run_selector(
    name: &str,
    rule_files: &[PathBuf],
    pcap: &Path,
    log_dir: &Path,
    mpm_cache: bool,
) -> Result<Selector> {
    let mut selector = pick_selector(name, rule_files, pcap, log_dir)?;
    if mpm_cache {
        selector.set_hs_cache(Some(cache_dir(log_dir).join("hs")));
    }
    Ok(selector)
}

fn pick_selector(
    name: &str,
    rule_files: &[PathBuf],
    pcap: &Path,
    log_dir: &Path,
) -> Result<Selector> {
    if name != "auto" {
        let Some(kind) = EngineKind::parse(name) else {
            bail!(
                "unknown --prefilter {name:?}: expected auto, {}",
                EngineKind::ALL.map(|k| k.name()).join(", ")
            );
        };
        if !kind.available() {
            bail!(
                "--prefilter {name}: not available in this build (build with --features hyperscan)"
            );
        }
        return Ok(Selector::fixed(kind));
    }
    // Payloads spread over the whole capture: to measure on, and (with
    // their headers) to split the capture's volume between the groups.
    let sample = payloads::spread_from_pcap(pcap, vigil_prefilter::select::WHOLE_SAMPLE_BYTES)
        .unwrap_or_default();
    let mut h = FNV_OFFSET;
    let mut eat = |bytes: &[u8]| h = fnv1a(h, bytes);
    for f in rule_files {
        eat(f.to_string_lossy().as_bytes());
        eat(&std::fs::read(f).unwrap_or_default());
    }
    for k in EngineKind::available_kinds() {
        eat(k.name().as_bytes());
    }
    eat(env!("CARGO_PKG_VERSION").as_bytes());
    let dir = cache_dir(log_dir);
    let traffic = sample
        .iter()
        .map(|p| TrafficSample {
            proto: p.proto,
            sp: p.sp,
            dp: p.dp,
            bytes: p.payload.len() as u32,
        })
        .collect();
    let mut cfg = AutoConfig::new(sample.into_iter().map(|p| p.payload).collect());
    cfg.traffic = traffic;
    // Offline, a group scans at most the whole capture: weigh build time
    // against that.
    cfg.expected_bytes = vigil_source::PcapSource::open(pcap)
        .ok()
        .map(|s| s.total_bytes());
    cfg.cache_file = Some(dir.join(format!("prefilter-{h:016x}.tsv")));
    Ok(Selector::new(Selection::Auto(cfg)))
}
