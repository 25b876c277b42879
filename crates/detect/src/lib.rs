//! Detection: rules compiled into groups, a multi-pattern prefilter per
//! group, and full verification of each candidate rule.
//!
//! [`DetectEngine`] is built once from parsed rules and shared (read-only)
//! by all workers. Each worker keeps a [`DetectScratch`] and, per flow, a
//! [`FlowDetectState`]. Detection runs in two phases so that the first can
//! be batched: [`DetectEngine::candidates`] (stateless: may run for a whole
//! batch of packets, on any engine or device) and [`DetectEngine::verify`]
//! (stateful: runs in packet order).
//!
//! What it does not do: decide which packets to inspect (the worker does),
//! apply thresholds (the ordered merge does, see [`threshold`]), or format
//! alerts (vigil-output).

pub mod addr_index;
pub mod app;
pub mod dataset;
pub mod frame;
pub mod geoip;
pub mod group;
pub mod inspect;
pub mod payload;
pub mod profile;
pub mod reputation;
pub mod rule;
pub mod stream;
pub mod threshold;
pub mod xbits;

use std::collections::BTreeMap;

use rule::ProtoMatch;
use vigil_rules::{ClassificationConfig, Rule};

pub use app::{AppProtoState, AppSpec, AppTest, TxDetectState, TxGroups, TxInput};
pub use dataset::{DatasetConfig, DatasetStats, Datasets};
pub use group::{GroupSel, GroupStats, RuleGroups};
pub use inspect::{
    DetectScratch, FlowDetectState, FlowView, Hit, NamedValue, PacketInput, PacketVars, ScanSets,
};
pub use profile::{RuleCost, RuleProfile};
pub use rule::{CompiledRule, Skip};
pub use stream::{StreamChunk, StreamReq, StreamSize};
pub use threshold::{AlertKey, ThresholdTracker};
pub use xbits::{XbitStats, XbitTable};

/// A rule that was not loaded, and why.
#[derive(Debug, Clone)]
pub struct SkippedRule {
    pub sid: u32,
    pub file: String,
    pub line: usize,
    pub reason: Skip,
}

/// What loading produced: counts by reason, for the summary.
#[derive(Debug, Default)]
pub struct BuildReport {
    pub loaded: usize,
    pub skipped: Vec<SkippedRule>,
    /// Skipped rules counted by the keyword that is not evaluable yet.
    pub not_evaluable_by_keyword: BTreeMap<String, usize>,
    /// Rules that could not be compiled, by keyword.
    pub invalid_by_keyword: BTreeMap<String, usize>,
    /// Rules left out because their `requires:` is not met.
    pub requires_unmet: usize,
    /// Time spent compiling rules (payload programs, regexes, ...) and
    /// building the rule groups and their prefilters.
    pub compile_time: std::time::Duration,
    pub group_time: std::time::Duration,
    /// Problems with the datasets: config sets, files that could not be
    /// read, bad lines (`file:line: message`).
    pub dataset_errors: Vec<String>,
}

/// The compiled ruleset.
#[derive(Debug)]
pub struct DetectEngine {
    /// Rules in inspection order.
    pub rules: Vec<CompiledRule>,
    pub groups: RuleGroups,
    /// Transaction rules by application protocol and direction.
    pub tx: app::TxGroups,
    pub flowbit_names: Vec<String>,
    /// `flowint` variable names by index.
    pub flowint_names: Vec<String>,
    /// `xbits` / `hostbits` names by index.
    pub xbit_names: Vec<String>,
    /// Flow variable names the rules capture or read, sorted: a rule
    /// reload keeps the flows' variables of these names.
    pub flowvar_names: Vec<String>,
    /// `ether` and `arp` rules, in rule order: the only rules a packet
    /// without an IP layer is checked against ([`Self::verify_link`]).
    pub link_rules: Vec<u32>,
    /// Rules on application-layer frames (`frame`), in rule order
    /// ([`frame`]).
    pub frame_rules: Vec<u32>,
    /// The frame types the frame rules inspect, as (protocol, type)
    /// (`None` without frame rules): the only frames the framers make.
    pub frame_types: Option<std::sync::Arc<[(&'static str, &'static str)]>>,
    /// The `dataset` / `datarep` sets, global to all flows: only where the
    /// workers' events meet in input order reads and changes them (see
    /// [`dataset`]).
    pub datasets: std::sync::Mutex<dataset::Datasets>,
}

impl DetectEngine {
    /// Index maps from this engine's flow variables to `new`'s, by name
    /// (flowbits, flowints), for [`FlowDetectState::remap`] on a rule
    /// reload.
    pub fn var_maps_to(&self, new: &DetectEngine) -> (Vec<Option<u32>>, Vec<Option<u32>>) {
        let map = |old: &[String], new: &[String]| -> Vec<Option<u32>> {
            let idx: std::collections::HashMap<&str, u32> = new
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), i as u32))
                .collect();
            old.iter().map(|n| idx.get(n.as_str()).copied()).collect()
        };
        (
            map(&self.flowbit_names, &new.flowbit_names),
            map(&self.flowint_names, &new.flowint_names),
        )
    }

    /// Compiles rules; those that cannot be evaluated are reported and left
    /// out. Duplicate (gid, sid) pairs keep the later revision, as
    /// Suricata does.
    pub fn build(rules: &[Rule], classes: &ClassificationConfig) -> (DetectEngine, BuildReport) {
        Self::build_with(rules, classes, &mut vigil_prefilter::Selector::default())
    }

    /// [`DetectEngine::build`] with the prefilter engines of the rule
    /// groups chosen by `selector` (`--prefilter`).
    pub fn build_with(
        rules: &[Rule],
        classes: &ClassificationConfig,
        selector: &mut vigil_prefilter::Selector,
    ) -> (DetectEngine, BuildReport) {
        Self::build_from(
            rules.iter(),
            rules.len(),
            classes,
            selector,
            None,
            dataset::DatasetConfig::default(),
        )
    }

    /// [`DetectEngine::build`] with the datasets configuration (the
    /// config's sets, the data directory); the sets' files are read.
    pub fn build_with_datasets(
        rules: &[Rule],
        classes: &ClassificationConfig,
        datasets: dataset::DatasetConfig,
    ) -> (DetectEngine, BuildReport) {
        Self::build_with_data(rules, classes, None, datasets)
    }

    /// [`DetectEngine::build`] with the IP reputation that `iprep` rules
    /// read.
    pub fn build_with_reputation(
        rules: &[Rule],
        classes: &ClassificationConfig,
        reputation: Option<std::sync::Arc<reputation::Reputation>>,
    ) -> (DetectEngine, BuildReport) {
        Self::build_with_data(
            rules,
            classes,
            reputation,
            dataset::DatasetConfig::default(),
        )
    }

    /// [`DetectEngine::build`] with the data rules read from outside: the
    /// IP reputation (`iprep`) and the datasets configuration.
    pub fn build_with_data(
        rules: &[Rule],
        classes: &ClassificationConfig,
        reputation: Option<std::sync::Arc<reputation::Reputation>>,
        datasets: dataset::DatasetConfig,
    ) -> (DetectEngine, BuildReport) {
        Self::build_from(
            rules.iter(),
            rules.len(),
            classes,
            &mut vigil_prefilter::Selector::default(),
            reputation,
            datasets,
        )
    }

    /// [`DetectEngine::build_with`] taking the parsed rules: each rule's
    /// syntax tree is freed as soon as it is compiled, so that the trees of
    /// a large ruleset are not held alongside its rule groups and
    /// prefilter databases (a lower peak memory at load).
    pub fn build_owned(
        rules: Vec<Rule>,
        classes: &ClassificationConfig,
        selector: &mut vigil_prefilter::Selector,
    ) -> (DetectEngine, BuildReport) {
        Self::build_owned_with(
            rules,
            classes,
            selector,
            None,
            dataset::DatasetConfig::default(),
        )
    }

    /// [`DetectEngine::build_owned`] with the IP reputation that `iprep`
    /// rules read (see [`reputation`]) and the datasets configuration
    /// (the config's sets, the data directory; the sets' files are read).
    pub fn build_owned_with(
        rules: Vec<Rule>,
        classes: &ClassificationConfig,
        selector: &mut vigil_prefilter::Selector,
        reputation: Option<std::sync::Arc<reputation::Reputation>>,
        datasets: dataset::DatasetConfig,
    ) -> (DetectEngine, BuildReport) {
        let n = rules.len();
        Self::build_from(
            rules.into_iter(),
            n,
            classes,
            selector,
            reputation,
            datasets,
        )
    }

    fn build_from<R: std::borrow::Borrow<Rule>>(
        rules: impl Iterator<Item = R>,
        count: usize,
        classes: &ClassificationConfig,
        selector: &mut vigil_prefilter::Selector,
        reputation: Option<std::sync::Arc<reputation::Reputation>>,
        ds_cfg: dataset::DatasetConfig,
    ) -> (DetectEngine, BuildReport) {
        let mut report = BuildReport::default();
        let compile_start = std::time::Instant::now();
        let mut names = rule::FlowbitNames::default();
        report.dataset_errors = ds_cfg.declare_config_sets(&mut names.datasets);
        names.dataset_cfg = ds_cfg;
        let mut compiled = Vec::with_capacity(count);
        for r in rules {
            let r: &Rule = r.borrow();
            match rule::compile_rule_with(r, classes, &mut names, reputation.as_ref()) {
                Ok(c) => compiled.push(c),
                Err(reason) => {
                    match &reason {
                        Skip::NotEvaluable(k) => {
                            *report
                                .not_evaluable_by_keyword
                                .entry(k.clone())
                                .or_default() += 1
                        }
                        Skip::Invalid { keyword, message } => {
                            // A set that cannot be used (or a geoip rule
                            // without a database) is reported even without
                            // -v, as the sets' file problems are.
                            if keyword == "dataset" || keyword == "datarep" || keyword == "geoip" {
                                report.dataset_errors.push(format!(
                                    "{}:{}: sid {}: keyword {keyword}: {message}; rule skipped",
                                    r.origin.file, r.origin.line, r.sid
                                ));
                            }
                            *report
                                .invalid_by_keyword
                                .entry(keyword.clone())
                                .or_default() += 1
                        }
                        Skip::RequiresUnmet(_) => report.requires_unmet += 1,
                    }
                    report.skipped.push(SkippedRule {
                        sid: r.sid,
                        file: r.origin.file.clone(),
                        line: r.origin.line,
                        reason,
                    });
                }
            }
        }
        // Duplicate signature ids: keep the highest revision (then the
        // last loaded), like Suricata's duplicate-sid handling.
        let mut best: std::collections::HashMap<(u32, u32), usize> = Default::default();
        for (i, r) in compiled.iter().enumerate() {
            best.entry((r.gid, r.sid))
                .and_modify(|b| {
                    if r.rev >= compiled[*b].rev {
                        *b = i
                    }
                })
                .or_insert(i);
        }
        let mut keep: Vec<bool> = vec![false; compiled.len()];
        for &i in best.values() {
            keep[i] = true;
        }
        let mut compiled: Vec<CompiledRule> = compiled
            .into_iter()
            .zip(keep)
            .filter_map(|(r, k)| k.then_some(r))
            .collect();
        compiled.sort_by_key(rule::order_key);
        report.loaded = compiled.len();
        let mut datasets = std::mem::take(&mut names.datasets);
        report.dataset_errors.extend(datasets.load_files());
        report.compile_time = compile_start.elapsed();
        let group_start = std::time::Instant::now();
        let groups = RuleGroups::build_with(&compiled, selector);
        let tx = app::TxGroups::build(&mut compiled, selector);
        report.group_time = group_start.elapsed();
        let link_rules = compiled
            .iter()
            .enumerate()
            .filter(|(_, r)| r.pkthdr || matches!(r.proto, ProtoMatch::Ether | ProtoMatch::Arp))
            .map(|(i, _)| i as u32)
            .collect();
        let frame_rules: Vec<u32> = compiled
            .iter()
            .enumerate()
            .filter(|(_, r)| r.frame.is_some())
            .map(|(i, _)| i as u32)
            .collect();
        let mut types: Vec<(&'static str, &'static str)> = compiled
            .iter()
            .filter_map(|r| r.frame.as_ref().map(|f| (f.proto, f.name)))
            .collect();
        types.sort_unstable();
        types.dedup();
        let frame_types = (!types.is_empty()).then(|| types.into());
        (
            DetectEngine {
                rules: compiled,
                groups,
                tx,
                link_rules,
                frame_rules,
                frame_types,
                flowbit_names: names.names,
                flowint_names: names.int_names,
                xbit_names: names.xbit_names,
                flowvar_names: names.flowvar_names.into_iter().collect(),
                datasets: std::sync::Mutex::new(datasets),
            },
            report,
        )
    }
}
