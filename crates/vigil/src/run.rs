//! `vigil run`: load config and rules, run the offline pipeline, write
//! eve.json, fast.log and stats.log.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use vigil_detect::{BuildReport, CompiledRule, DetectEngine};
use vigil_engine::{AlertOut, AlertSink, EngineConfig, RunStats};
use vigil_output::{
    AlertEvent, EveConfig, EveFormatter, EveWriter, FastLogWriter, RedisCounts, RedisSettings,
    RedisWriter, StatsTree, TunnelEvent, VarsEvent,
};
use vigil_prefilter::SplitMode;
use vigil_rules::{Action, ClassificationConfig, Rule, RuleDiagnostic, Vars};
use vigil_source::PcapSource;

use crate::cli::RunArgs;
use crate::config::{falsy, truthy, Config};

/// Approximate memory per flow (table entry, key, state), used to turn
/// `flow.memcap` into a flow count.
const FLOW_BYTES: u64 = 256;

/// Rules loaded from files, with everything the summary needs.
pub struct LoadedRules {
    pub rules: Vec<Rule>,
    pub diagnostics: Vec<RuleDiagnostic>,
}

pub fn build_vars(cfg: &Config) -> Result<Vars> {
    let mut vars = Vars::default();
    for (name, value) in cfg.string_map("vars.address-groups") {
        vars.set_address(&name, &value)
            .map_err(|e| anyhow::anyhow!("vars.address-groups.{name}: {e}"))?;
    }
    for (name, value) in cfg.string_map("vars.port-groups") {
        vars.set_port(&name, &value)
            .map_err(|e| anyhow::anyhow!("vars.port-groups.{name}: {e}"))?;
    }
    Ok(vars)
}

pub fn load_classification(cfg: &Config) -> Result<ClassificationConfig> {
    match cfg.get_str("classification-file") {
        Some(f) => {
            let p = cfg.resolve(&f);
            match std::fs::read_to_string(&p) {
                Ok(text) => ClassificationConfig::parse(&text, &p.display().to_string())
                    .map_err(|e| anyhow::anyhow!("{e}")),
                // Suricata warns and goes on with no classifications; we
                // fall back to the standard list instead.
                Err(_) => Ok(ClassificationConfig::default()),
            }
        }
        None => Ok(ClassificationConfig::default()),
    }
}

/// `detect.prefilter-split-sets`: `protocols` (the default), `full`
/// (also `yes`, as before there were two), or `no`.
fn split_mode(v: Option<&str>) -> Result<SplitMode> {
    Ok(match v.map(str::to_ascii_lowercase).as_deref() {
        None | Some("protocols") => SplitMode::Protocols,
        Some("full") => SplitMode::Full,
        Some(v) if truthy(v) => SplitMode::Full,
        Some(v) if falsy(v) => SplitMode::Off,
        Some(v) => bail!("detect.prefilter-split-sets: {v:?} is not one of protocols, full, no"),
    })
}

/// Loads the IP reputation the config names (`iprep`), if any: bad lines
/// and unreadable reputation files are warnings (file and line), an
/// unreadable categories file is an error.
pub fn load_reputation(
    cfg: &Config,
    print: bool,
) -> Result<Option<std::sync::Arc<vigil_detect::reputation::Reputation>>> {
    let Some((cats, files)) = cfg.reputation_files()? else {
        return Ok(None);
    };
    let (rep, problems) = vigil_detect::reputation::Reputation::load(&cats, &files)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if print {
        for p in &problems {
            eprintln!("vigil: warning: {p}");
        }
        let (c, h, n) = rep.counts();
        eprintln!(
            "vigil: IP reputation: {c} categories, {h} hosts, {n} netblocks from {} file(s)",
            files.len()
        );
    }
    Ok(Some(std::sync::Arc::new(rep)))
}

/// Loads the GeoIP database the config names (`geoip-database`), if
/// any. A file that cannot be read is a warning naming it: the other
/// rules load, and `geoip` rules are skipped as invalid.
pub fn load_geoip(
    cfg: &Config,
    print: bool,
) -> Option<std::sync::Arc<vigil_detect::geoip::GeoIpDb>> {
    let path = cfg.geoip_database()?;
    match vigil_detect::geoip::GeoIpDb::open(&path) {
        Ok(db) => {
            if print {
                let (ty, _) = db.describe();
                eprintln!("vigil: GeoIP database {} ({ty})", path.display());
            }
            Some(std::sync::Arc::new(db))
        }
        Err(e) => {
            eprintln!("vigil: warning: {e}; geoip rules will be skipped");
            None
        }
    }
}

/// Loads the config's `threshold-file` (Suricata's key), if any, and
/// applies it. A missing file is a warning, as in Suricata.
pub fn apply_threshold_file(cfg: &Config, vars: &Vars, detect: &mut DetectEngine) -> Result<()> {
    let Some(f) = cfg.get_str("threshold-file") else {
        return Ok(());
    };
    let path = cfg.resolve(&f);
    let (tc, diags) = match vigil_rules::ThresholdConfig::load(&path, vars) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vigil: warning: {e}");
            return Ok(());
        }
    };
    for d in &diags {
        eprintln!("vigil: warning: {d}");
    }
    let rep = detect.apply_threshold_config(&tc);
    for w in &rep.warnings {
        eprintln!("vigil: warning: {w}");
    }
    eprintln!(
        "vigil: threshold file {}: {} entries ({} thresholds set, {} rules suppressed, {} address suppressions, {} rate filters)",
        path.display(),
        tc.entries.len(),
        rep.thresholds,
        rep.suppressed_rules,
        rep.address_suppressions,
        rep.rate_filters
    );
    Ok(())
}

pub fn load_rule_files(files: &[PathBuf], vars: &Vars) -> Result<LoadedRules> {
    let mut rules = Vec::new();
    let mut diagnostics = Vec::new();
    for f in files {
        let text =
            std::fs::read(f).with_context(|| format!("cannot read rule file {}", f.display()))?;
        // Valid UTF-8 (the common case) is checked by the word-at-a-time
        // validator; the lossy conversion, a byte at a time, took 4% of
        // loading ET Open.
        let text = match std::str::from_utf8(&text) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => String::from_utf8_lossy(&text),
        };
        let report = vigil_rules::parse_rules_str(&text, &f.display().to_string(), vars);
        rules.extend(report.rules);
        diagnostics.extend(report.errors);
    }
    Ok(LoadedRules { rules, diagnostics })
}

/// Where EVE lines go: eve.json, or Redis (`filetype: redis`).
pub enum EveOut {
    File(File),
    Redis(RedisWriter),
}

impl Write for EveOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            EveOut::File(f) => f.write(buf),
            EveOut::Redis(r) => r.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            EveOut::File(f) => f.write_all(buf),
            EveOut::Redis(r) => r.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            EveOut::File(f) => f.flush(),
            EveOut::Redis(r) => r.flush(),
        }
    }
}

/// The `eve.redis.*` stats.log lines.
pub fn redis_stats_lines(c: &RedisCounts) -> Vec<(&'static str, String)> {
    vec![
        ("eve.redis.written", c.written.to_string()),
        ("eve.redis.dropped", c.dropped.to_string()),
        ("eve.redis.reconnects", c.reconnects.to_string()),
        ("eve.redis.errors", c.errors.to_string()),
    ]
}

pub struct Sink {
    pub eve: EveWriter<EveOut>,
    pub fast: Option<FastLogWriter<BufWriter<File>>>,
    log_payload: bool,
    log_packet: bool,
    /// `tagged-packets`: packets a `tag` covers get a `packet` record.
    log_tagged: bool,
    /// Transaction record types the eve-log output writes (a set: every
    /// record is looked up, and a list's string compares showed in the
    /// merge thread's profile).
    log_types: LogTypes,
    /// XFF mode: `Some(true)` overwrites the alert's client address with
    /// the proxied one, `Some(false)` adds `alert.xff`.
    xff_overwrite: Option<bool>,
    /// Live: packets have no `pcap_cnt`.
    live: bool,
    /// `alert.references` is written, with these reference systems.
    references: Option<vigil_rules::ReferenceConfig>,
    /// `drop` records name the rule that dropped the packet.
    drop_alerts: bool,
    /// Inline (`-q`, `--inline`, `--simulate-ips`): an alert's `blocked`
    /// is the verdict the worker gave, which a `rate_filter` applied
    /// later cannot change.
    pub(crate) inline: bool,
}

impl Sink {
    /// The Redis writer, when EVE goes to Redis.
    pub fn redis(&mut self) -> Option<&mut RedisWriter> {
        match self.eve.get_mut() {
            EveOut::Redis(r) => Some(r),
            EveOut::File(_) => None,
        }
    }

    /// Flushes EVE and, for Redis, waits (bounded by its flush timeout)
    /// for the queued records to be delivered; the final counters.
    pub fn finish_redis(&mut self) -> std::io::Result<Option<RedisCounts>> {
        self.eve.flush()?;
        Ok(self.redis().map(|r| r.finish()))
    }

    /// Writes an alert to EVE and fast.log: `blocked` gives EVE's
    /// `action`, `rule_drop` fast.log's `[Drop]`/`[wDrop]`.
    fn write_alert(
        &mut self,
        a: &AlertOut,
        r: &CompiledRule,
        blocked: bool,
        rule_drop: bool,
    ) -> std::io::Result<()> {
        let xff_ip: Option<std::net::IpAddr> = match (self.xff_overwrite, &a.xff) {
            (Some(true), Some(x)) => x.parse().ok(),
            _ => None,
        };
        // Overwrite: the proxied client replaces the client side of the
        // alert (the source for to-server packets, else the destination).
        let (src_ip, dest_ip) = match (xff_ip, a.to_server) {
            (Some(ip), Some(true)) => (ip, a.dst),
            (Some(ip), Some(false)) => (a.src, ip),
            _ => (a.src, a.dst),
        };
        let references: Vec<String> = match &self.references {
            Some(rc) => r.references.iter().map(|(k, v)| rc.resolve(k, v)).collect(),
            None => Vec::new(),
        };
        let app_json = a.app.as_ref().map(|r| (r.key, r.json()));
        let ev = AlertEvent {
            // Suricata logs no pcap_cnt for flow-end pseudo packets or
            // tunnel packets (their `tunnel` object has the frame's), nor
            // for packets that did not come from a capture file.
            pcap_cnt: (!a.pseudo && a.tunnel.is_none() && !self.live).then_some(a.index),
            src_ip,
            dest_ip,
            tx_id: a.app.as_ref().map(|r| r.tx_id),
            action: if blocked { "blocked" } else { "allowed" },
            rule_drop,
            gid: r.gid,
            signature_id: r.sid,
            rev: r.rev,
            signature: &r.msg,
            category: &r.category,
            severity: r.severity,
            metadata: &r.metadata,
            references: &references,
            app_proto: a.app_proto,
            app: app_json.as_ref().map(|(k, j)| (*k, j.as_ref())),
            frame: a.frame.as_deref().map(|f| vigil_output::FrameEvent {
                name: f.name,
                id: f.id,
                to_server: f.to_server,
                stream_offset: f.stream_offset,
                length: f.length,
                complete: f.complete,
                tx_id: f.tx_id,
                payload: &f.data,
            }),
            xff: match self.xff_overwrite {
                Some(false) => a.xff.as_deref(),
                _ => None,
            },
            direction: a
                .to_server
                .map(|t| if t { "to_server" } else { "to_client" }),
            flow: None,
            payload: if self.log_payload {
                a.payload.as_deref()
            } else {
                None
            },
            stream: a.stream,
            packet: if self.log_packet {
                a.packet.as_deref()
            } else {
                None
            },
            packet_info_linktype: if self.log_packet {
                Some(a.linktype)
            } else {
                None
            },
            tunnel: a.tunnel.map(|t| TunnelEvent {
                src_ip: t.src,
                src_port: t.sp,
                dest_ip: t.dst,
                dest_port: t.dp,
                proto: t.proto,
                depth: t.depth,
                pcap_cnt: (!self.live).then_some(a.index),
            }),
            link_only: a.link_only,
            raw_pkt: if a.link_only {
                a.packet.as_deref()
            } else {
                None
            },
            target: r.target_dest.map(|d| {
                if d {
                    vigil_output::AlertTarget::Dest
                } else {
                    vigil_output::AlertTarget::Src
                }
            }),
            vars: vars_event(a),
            context: &a.context,
            ..packet_header(a)
        };
        self.eve.write_alert(&ev)?;
        if let Some(f) = &mut self.fast {
            f.write_alert(&ev)?;
        }
        Ok(())
    }
}

/// The fields every EVE record about `a` has: its time, flow, VLANs,
/// addresses, ports and protocol (the rest default).
fn event_header(a: &AlertOut) -> AlertEvent<'_> {
    AlertEvent {
        ts_secs: a.ts_ns.div_euclid(1_000_000_000),
        ts_nanos: a.ts_ns.rem_euclid(1_000_000_000) as u32,
        flow_id: a.flow_id,
        vlan: &a.vlan[..a.vlan_count as usize],
        src_ip: a.src,
        src_port: a.sp,
        dest_ip: a.dst,
        dest_port: a.dp,
        proto: a.proto,
        ..AlertEvent::default()
    }
}

/// [`event_header`] with the packet's own fields: ICMP type and code,
/// SCTP, IGMP and `pkt_src`.
fn packet_header(a: &AlertOut) -> AlertEvent<'_> {
    AlertEvent {
        icmp_type: a.icmp.map(|i| i.0),
        icmp_code: a.icmp.map(|i| i.1),
        sctp: a.sctp,
        igmp: a.igmp,
        pkt_src: a.pkt_src(),
        ..event_header(a)
    }
}

/// The flow's and packet's variables logged with `a` (EVE `metadata`).
fn vars_event(a: &AlertOut) -> Option<VarsEvent<'_>> {
    a.vars.as_deref().map(|v| VarsEvent {
        flowbits: &v.flowbits,
        flowints: &v.flowints,
        flowvars: &v.flowvars,
        pktvars: &v.pktvars,
    })
}

/// The transaction record types EVE writes.
type LogTypes = std::collections::HashSet<&'static str, foldhash::fast::RandomState>;

/// Builds the EVE event of transaction record `a` and gives it to `f`;
/// nothing when `log_types` does not take it (`live`: no `pcap_cnt`).
fn with_tx_event(
    a: &AlertOut,
    log_types: &LogTypes,
    live: bool,
    f: impl FnOnce(&AlertEvent<'_>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let Some(rec) = a.app.as_ref() else {
        return Ok(());
    };
    // Suricata's `ftp` type logs the `ftp_data` records too.
    let key = if rec.key == "ftp_data" {
        "ftp"
    } else {
        rec.key
    };
    if !log_types.contains(key) {
        return Ok(());
    }
    let flow_rec = matches!(key, "flow" | "netflow");
    let rec_json = rec.json();
    // A decoder or stream anomaly: about a packet, no transaction.
    let packet_rec = rec.tx_id == vigil_engine::PACKET_RECORD;
    let ev = AlertEvent {
        pcap_cnt: (!a.pseudo && !live).then_some(a.index),
        pkt_src: if flow_rec { "" } else { a.pkt_src() },
        icmp_type: a.icmp.filter(|_| flow_rec || packet_rec).map(|i| i.0),
        icmp_code: a.icmp.filter(|_| flow_rec || packet_rec).map(|i| i.1),
        sctp: a.sctp.filter(|_| packet_rec),
        igmp: a.igmp.filter(|_| packet_rec),
        // Suricata's `fileinfo` has the transaction's id in its object.
        tx_id: (!packet_rec && rec.key != "fileinfo").then_some(rec.tx_id),
        app: Some((rec.key, &rec_json)),
        app_proto: a.app_proto,
        vars: vars_event(a),
        ..event_header(a)
    };
    f(&ev)
}

/// A worker's formatter of transaction records: the lines
/// [`Sink::tx_log`](AlertSink::tx_log) would write, built on the worker
/// (vigil_engine::EngineConfig::format_in_workers).
struct TxLines {
    fmt: EveFormatter,
    log_types: LogTypes,
    live: bool,
}

impl vigil_engine::TxFormatter for TxLines {
    fn format(&mut self, a: &AlertOut, out: &mut Vec<u8>) -> std::io::Result<()> {
        let fmt = &mut self.fmt;
        with_tx_event(a, &self.log_types, self.live, |ev| {
            let start = out.len();
            fmt.tx_record(out, ev)?;
            if out.len() > start {
                out.push(b'\n');
            }
            Ok(())
        })
    }
}

/// Whether a rule action drops (drop, reject*).
fn drops(action: Action) -> bool {
    matches!(
        action,
        Action::Drop | Action::Reject | Action::RejectSrc | Action::RejectDst | Action::RejectBoth
    )
}

impl AlertSink for Sink {
    fn alert(&mut self, a: &AlertOut, r: &CompiledRule) -> std::io::Result<()> {
        self.write_alert(a, r, a.blocked, drops(r.action))
    }

    /// A `rate_filter` changed the alert's action. In IDS mode the alert
    /// says so as Suricata's does: `"blocked"` (and fast.log `[wDrop]`)
    /// for a new action drop or reject, `"allowed"` for alert. Inline the
    /// packet's verdict was given before thresholds are applied, so the
    /// alert keeps it (see docs/inline.md).
    fn alert_rate_filtered(
        &mut self,
        a: &AlertOut,
        r: &CompiledRule,
        action: Action,
    ) -> std::io::Result<()> {
        if self.inline {
            self.alert(a, r)
        } else {
            self.write_alert(a, r, drops(action), drops(action))
        }
    }

    fn tx_log(&mut self, a: &AlertOut) -> std::io::Result<()> {
        let eve = &mut self.eve;
        with_tx_event(a, &self.log_types, self.live, |ev| eve.write_tx(ev))
    }

    fn tx_formatter(&self) -> Option<Box<dyn vigil_engine::TxFormatter>> {
        Some(Box::new(TxLines {
            fmt: EveFormatter::new(*self.eve.config()),
            log_types: self.log_types.clone(),
            live: self.live,
        }))
    }

    fn tx_formatted(&mut self, lines: &[u8]) -> std::io::Result<()> {
        self.eve.write_record(lines)
    }

    fn tagged_packet(&mut self, a: &AlertOut) -> std::io::Result<()> {
        if !self.log_tagged {
            return Ok(());
        }
        let ev = AlertEvent {
            pcap_cnt: (!self.live).then_some(a.index),
            packet: a.packet.as_deref(),
            packet_info_linktype: Some(a.linktype),
            ..packet_header(a)
        };
        self.eve.write_packet(&ev)
    }

    fn drop_log(&mut self, a: &AlertOut, rule: Option<&CompiledRule>) -> std::io::Result<()> {
        let Some(rec) = a.app.as_ref() else {
            return Ok(());
        };
        let rec_json = rec.json();
        let rule = rule.filter(|_| self.drop_alerts);
        let ev = AlertEvent {
            pcap_cnt: (!self.live).then_some(a.index),
            action: "blocked",
            gid: rule.map_or(0, |r| r.gid),
            signature_id: rule.map_or(0, |r| r.sid),
            rev: rule.map_or(0, |r| r.rev),
            signature: rule.map_or("", |r| r.msg.as_str()),
            category: rule.map_or("", |r| r.category.as_str()),
            severity: rule.map_or(0, |r| r.severity),
            target: rule.and_then(|r| r.target_dest).map(|d| {
                if d {
                    vigil_output::AlertTarget::Dest
                } else {
                    vigil_output::AlertTarget::Src
                }
            }),
            app: Some((rec.key, &rec_json)),
            ..packet_header(a)
        };
        self.eve.write_drop(&ev, rule.is_some())
    }
}

/// Writes the `save` / `state` files of the datasets (at exit, as
/// Suricata does); problems are warnings.
pub fn save_datasets(detect: &DetectEngine) {
    let ds = detect
        .datasets
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_, errors) = ds.save_files();
    for e in errors {
        eprintln!("vigil: warning: {e}");
    }
}

fn print_load_summary(diagnostics: &[RuleDiagnostic], report: &BuildReport, verbose: u8) {
    for d in diagnostics {
        eprintln!("vigil: warning: {d}");
    }
    if verbose > 0 {
        // Dataset (and geoip) errors are printed on their own
        // (report.dataset_errors).
        let dataset_error = |s: &&vigil_detect::SkippedRule| {
            matches!(&s.reason, vigil_detect::Skip::Invalid { keyword, .. }
                if keyword == "dataset" || keyword == "datarep" || keyword == "geoip")
        };
        for s in report.skipped.iter().filter(|s| !dataset_error(s)) {
            let why = match &s.reason {
                vigil_detect::Skip::NotEvaluable(k) => format!("keyword {k}: not supported yet"),
                vigil_detect::Skip::Invalid { keyword, message } => {
                    format!("keyword {keyword}: {message}")
                }
                vigil_detect::Skip::RequiresUnmet(why) => format!("keyword requires: {why}"),
            };
            eprintln!(
                "vigil: warning: {}:{}: sid {}: {why}; rule skipped",
                s.file, s.line, s.sid
            );
        }
    }
    let skipped = report.skipped.len();
    eprintln!(
        "vigil: rules: {} loaded, {} skipped (not evaluable yet: {}, invalid: {}), {} failed to parse",
        report.loaded,
        skipped,
        report.not_evaluable_by_keyword.values().sum::<usize>(),
        report.invalid_by_keyword.values().sum::<usize>(),
        diagnostics.len()
    );
    let mut top: Vec<(&String, &usize)> = report.not_evaluable_by_keyword.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if !top.is_empty() {
        let list: Vec<String> = top
            .iter()
            .take(10)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        eprintln!(
            "vigil: skipped by keyword (top {}): {}",
            list.len(),
            list.join(", ")
        );
    }
    for (k, n) in &report.invalid_by_keyword {
        eprintln!("vigil: invalid rules by keyword: {k} {n}");
    }
}

/// The `stream` and `defrag` sections (Suricata's keys, plus
/// `stream.reassembly.overlap-policy` and `defrag.policy`).
fn stream_settings(cfg: &Config, e: &mut EngineConfig) -> Result<()> {
    use crate::config::parse_size;
    let size = |k: &str| -> Result<Option<u64>> {
        cfg.get_str(k)
            .map(|v| parse_size(&v).with_context(|| format!("{k}: bad size '{v}'")))
            .transpose()
    };
    if let Some(v) = cfg.get_str("stream.midstream") {
        e.stream.midstream = truthy(&v);
    }
    if let Some(v) = cfg.get_str("stream.bypass") {
        e.stream_bypass = truthy(&v);
    }
    if let Some(v) = size("stream.reassembly.depth")? {
        e.stream.depth = v;
    }
    if let Some(v) = size("stream.reassembly.memcap")? {
        e.stream_memcap = v as usize;
    }
    if let Some(v) = size("stream.reassembly.toserver-chunk-size")? {
        e.stream.toserver_chunk = v;
    }
    if let Some(v) = size("stream.reassembly.toclient-chunk-size")? {
        e.stream.toclient_chunk = v;
    }
    if let Some(v) = cfg.get_str("stream.reassembly.overlap-policy") {
        e.stream.policy = vigil_engine::OverlapPolicy::from_name(&v)
            .with_context(|| format!("stream.reassembly.overlap-policy: unknown policy '{v}'"))?;
    }
    if let Some(v) = cfg.get_str("defrag.enabled") {
        if !truthy(&v) {
            e.defrag = None;
        }
    }
    if let Some(d) = e.defrag.as_mut() {
        if let Some(v) = size("defrag.memcap")? {
            d.memcap = v as usize;
        }
        if let Some(v) = size("defrag.trackers")? {
            d.max_trackers = v as usize;
        }
        if let Some(v) = size("defrag.max-frags")? {
            d.max_frags = v as usize;
        }
        if let Some(v) = size("defrag.timeout")? {
            d.timeout_secs = v.min(u64::from(u32::MAX)) as u32;
        }
        if let Some(v) = cfg.get_str("defrag.policy") {
            d.policy = vigil_engine::FragPolicy::from_name(&v)
                .with_context(|| format!("defrag.policy: unknown policy '{v}'"))?;
        }
    }
    Ok(())
}

/// Protocols Suricata parses on both TCP and UDP, whose `app_layer.flow`
/// counters it names `<proto>_tcp` / `<proto>_udp` (`failed` included).
const APP_FLOW_BY_TRANSPORT: &[&str] = &[
    "dcerpc", "dns", "failed", "sip", "krb5", "llmnr", "ldap", "nfs", "enip",
];

/// All counters of a run: [`stats_parts`] in one tree (stats.log, and the
/// live stats records, which add their own capture and reload figures).
pub fn stats_tree(s: &RunStats, report: Option<&BuildReport>) -> StatsTree {
    let (mut t, vigil) = stats_parts(s, report);
    for (k, v) in vigil.counters() {
        let _ = t.set(&k, v);
    }
    t
}

/// A run's counters in two trees: those Suricata has, under its names
/// (the offline EVE `stats` record, which validates against Suricata's EVE
/// schema), and Vigil's own (stats.log only offline). IPS and device
/// counters stay in the first: they appear only in those modes.
pub fn stats_parts(s: &RunStats, report: Option<&BuildReport>) -> (StatsTree, StatsTree) {
    let w = &s.workers;
    let mut t = StatsTree::new();
    let mut own = StatsTree::new();
    let mut set = |k: &str, v: u64| {
        // Keys are fixed and well-formed; a clash would be a bug here.
        let _ = t.set(k, v);
    };
    let mut vigil = |k: &str, v: u64| {
        let _ = own.set(k, v);
    };
    set("decoder.pkts", w.pkts);
    set("decoder.bytes", w.bytes);
    set("decoder.invalid", w.invalid);
    set("decoder.ipv4", w.ipv4);
    set("decoder.ipv6", w.ipv6);
    set("decoder.tcp", w.tcp);
    set("decoder.udp", w.udp);
    set("decoder.icmpv4", w.icmpv4);
    set("decoder.icmpv6", w.icmpv6);
    set("decoder.sctp", w.sctp);
    set("decoder.igmp", w.igmp);
    set("decoder.vlan", w.vlan);
    vigil("decoder.fragments", w.fragments);
    vigil("decoder.other_ip", w.other_ip);
    vigil("decoder.tunnel_pkts", w.tunnel_pkts);
    vigil("decoder.truncated_records", s.truncated_records);
    for (name, n) in &w.events {
        if name.contains('.') {
            set(&format!("decoder.event.{name}"), *n);
        } else {
            // Events of no protocol (`too_many_layers`): Suricata's
            // counter is `decoder.<name>`.
            set(&format!("decoder.{name}"), *n);
        }
    }
    set("flow.total", w.flows_created);
    set("flow.tcp_reuse", w.tcp_reuse);
    vigil("flow.timeout", w.flows_timed_out);
    vigil("flow.memcap_evictions", w.flows_evicted);
    vigil("flow.active_at_end", w.flows_active_at_end);
    vigil("flow.passed", w.passed_flows);
    if w.bypassed_flows > 0 {
        set("flow.bypassed", w.bypassed_flows);
    }
    // Only once a flow became an elephant, so that runs without
    // `flow.rate-tracking` keep their stats as they were.
    if w.flow_elephant > 0 {
        set("flow.elephant", w.flow_elephant);
        set("flow.elephant_toserver", w.flow_elephant_toserver);
        set("flow.elephant_toclient", w.flow_elephant_toclient);
    }
    set("tcp.sessions", w.tcp_sessions);
    set("tcp.invalid_checksum", w.tcp_invalid_checksum);
    let exception_drops: u64 = w.ips_drop_exception.values().sum();
    let blocked =
        w.ips_drop_rule + w.ips_reject + w.ips_drop_flow + w.ips_drop_host + exception_drops;
    if w.ips_accepted + blocked > 0 {
        // Inline (or --simulate-ips) only, so that IDS records stay as
        // they were. Suricata's names; the host table is Vigil's.
        set("ips.accepted", w.ips_accepted);
        set("ips.replaced", w.ips_replaced);
        set("ips.marked", w.ips_marked);
        set("ips.blocked", blocked);
        set("ips.rejected", w.ips_reject + w.ips_exception_rejects);
        set("ips.drop_reason.rules", w.ips_drop_rule + w.ips_reject);
        set("ips.drop_reason.flow_drop", w.ips_drop_flow);
        set("ips.drop_reason.host_table", w.ips_drop_host);
        for (reason, n) in &w.ips_drop_exception {
            set(&format!("ips.drop_reason.{reason}"), *n);
        }
        set("ips.hosts.blocked", w.ips_hosts_blocked);
        set("ips.hosts.evictions", w.ips_host_evictions);
    }
    for ((case, policy), n) in &w.exceptions {
        set(&format!("exception_policy.{case}.{policy}"), *n);
    }
    set("tcp.pseudo", w.pseudo_packets);
    set("tcp.overlap", w.stream_overlaps);
    vigil("tcp.reassembly_depth_dropped_bytes", w.stream_depth_dropped);
    vigil(
        "tcp.reassembly_memcap_dropped_bytes",
        w.stream_memcap_dropped,
    );
    vigil("tcp.stream_chunks", w.stream_chunks);
    vigil("tcp.stream_chunk_bytes", w.stream_chunk_bytes);
    for (name, n) in &w.stream_events {
        set(name, *n);
    }
    for (name, n) in &w.app_flows {
        if APP_FLOW_BY_TRANSPORT.contains(name) {
            let udp = w.app_flows_udp.get(name).copied().unwrap_or(0);
            set(&format!("app_layer.flow.{name}_tcp"), n - udp);
            set(&format!("app_layer.flow.{name}_udp"), udp);
        } else {
            // `ftp-data` is `ftp_data` in Suricata's stats.
            set(&format!("app_layer.flow.{}", name.replace('-', "_")), *n);
        }
    }
    vigil("app_layer.tx_logged", w.tx_logged);
    vigil("app_layer.anomalies_logged", w.anomalies_logged);
    vigil("app_layer.tls_encrypted_flows", w.tls_encrypted_flows);
    vigil("app_layer.tx_inspections", w.tx_inspections);
    vigil("app_layer.events", w.app_events);
    vigil("app_layer.gaps", w.app_gaps);
    vigil("app_layer.bytes", w.app_bytes);
    // Files cut by the file store's memory cap or a gap.
    vigil(
        "file_store.truncated",
        vigil_applayer::files::truncated_count(),
    );
    // Suricata splits these by IP version (defrag.ipv4.fragments ...);
    // Vigil counts both together.
    let d = &s.defrag;
    if s.slice.is_some() {
        // Records of the capture that other slices inspect, and datagrams
        // rebuilt here whose flow is another slice's.
        vigil("slice.packets_skipped", s.slice_packets_skipped);
        vigil("slice.datagrams_skipped", s.slice_datagrams_skipped);
        vigil("slice.tunnels_skipped", s.slice_tunnels_skipped);
    }
    let st = &s.steering;
    vigil("steering.flows_placed", st.flows_placed);
    vigil("steering.pins_peak", st.pins_peak);
    vigil("steering.pins_expired", st.pins_expired);
    vigil("steering.frozen", st.frozen);
    let x = &s.ftp_expect;
    for (name, n) in [
        ("announced", x.announced),
        ("created", x.created),
        ("matched", x.matched),
        ("expired", x.expired),
        ("evicted", x.evicted),
        ("announcements_dropped", x.announcements_dropped),
        ("peak", x.peak),
        ("opened_evicted", x.opened_evicted),
    ] {
        vigil(&format!("ftp.expectations.{name}"), n);
    }
    vigil("defrag.fragments", d.fragments);
    vigil("defrag.reassembled", d.reassembled);
    vigil("defrag.overlaps", d.overlaps);
    vigil("defrag.timeouts", d.timeouts);
    vigil("defrag.evicted", d.evicted);
    vigil("defrag.ignored", d.ignored);
    vigil("defrag.memuse_peak", d.peak_bytes);
    vigil("capture.dropped", 0);
    set("detect.alert", s.alerts_written);
    set("detect.alerts_suppressed", s.alerts_suppressed);
    let x = &s.xbits;
    vigil("detect.xbits.events", x.events);
    vigil("detect.xbits.tests_failed", x.tests_failed);
    vigil("detect.xbits.sets", x.sets);
    vigil("detect.xbits.expired", x.expired);
    vigil("detect.xbits.table_full", x.full);
    vigil("detect.xbits.peak_entries", x.peak_entries);
    let tg = &s.tags;
    vigil("detect.tags.added", tg.added);
    vigil("detect.tags.rearmed", tg.rearmed);
    vigil("detect.tags.packets", tg.packets);
    vigil("detect.tags.expired", tg.expired);
    vigil("detect.tags.full", tg.full);
    let d = &s.datasets;
    vigil("detect.datasets.events", d.events);
    vigil("detect.datasets.failed", d.failed);
    vigil("detect.datasets.added", d.added);
    vigil("detect.datasets.removed", d.removed);
    vigil("detect.datasets.memcap_refused", d.memcap_refused);
    if let Some(d) = &s.detectors {
        vigil("detect.detectors.attempts", d.attempts);
        vigil("detect.detectors.failed", d.failed);
        for det in vigil_engine::detectors::Detector::ALL {
            let name = match det {
                vigil_engine::detectors::Detector::PortScan => "port_scan",
                vigil_engine::detectors::Detector::AddressScan => "address_scan",
                vigil_engine::detectors::Detector::SynFlood => "syn_flood",
                vigil_engine::detectors::Detector::FailedConnections => "failed_connections",
            };
            vigil(
                &format!("detect.detectors.{name}_alerts"),
                d.alerts[det as usize - 1],
            );
        }
        vigil("detect.detectors.keys_peak", d.keys_peak);
        vigil("detect.detectors.keys_refused", d.keys_refused);
    }
    if let Some(r) = report {
        // Suricata's detect.engines is an array of engines (tenants).
        vigil("detect.engines.rules_loaded", r.loaded as u64);
        vigil("detect.engines.rules_skipped", r.skipped.len() as u64);
    }
    // Device path counters (only with --prefilter-device on a device; last,
    // so the rest of the record is that of the CPU run).
    if let Some(d) = &s.device {
        set("prefilter_device.batches", d.batches);
        set("prefilter_device.batches_timed_out", d.batches_timed_out);
        set("prefilter_device.device_buffers", d.device_buffers);
        set("prefilter_device.device_bytes", d.device_bytes);
        set("prefilter_device.cpu_buffers", d.cpu_buffers);
        set("prefilter_device.cpu_bytes", d.cpu_bytes);
        set("prefilter_device.avg_fill_permille", d.avg_fill_permille());
        set("prefilter_device.transfer_us", d.transfer_ns / 1000);
        set("prefilter_device.kernel_us", d.kernel_ns / 1000);
        set("prefilter_device.queues", d.queues);
        set(
            "prefilter_device.avg_in_flight_centi",
            d.avg_inflight_centi(),
        );
        set("prefilter_device.max_in_flight", d.inflight_max);
        set("prefilter_device.pool_waits", d.pool_waits);
        set("prefilter_device.overflow_batches", d.overflow_batches);
        set("prefilter_device.overflow_reruns", d.overflow_reruns);
        set("prefilter_device.cpu_threshold_bytes", d.cpu_threshold);
    }
    (t, own)
}

/// The config file with `--set` applied.
pub fn load_config(args: &RunArgs) -> Result<Config> {
    let mut cfg = match &args.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    for kv in &args.set {
        cfg.set(kv)?;
    }
    Ok(cfg)
}

/// Rules compiled into a detection engine, with what the summary needs.
pub struct Detection {
    pub detect: DetectEngine,
    pub report: BuildReport,
    pub prefilter: vigil_prefilter::select::SelectionReport,
    pub rule_files: Vec<PathBuf>,
    /// `file:line: sid N: keyword K: message` of each rule that failed.
    pub diagnostics: Vec<String>,
}

/// Loads the rule files (the command line's, else the config's) and
/// compiles them with the prefilter engine asked for; `sample` is the
/// capture `--prefilter auto` measures on (none live). Also used by a
/// live rule reload.
pub fn load_detection(
    args: &RunArgs,
    cfg: &Config,
    sample: &std::path::Path,
    use_device: bool,
    print: bool,
) -> Result<Detection> {
    let vars = build_vars(cfg)?;
    let classes = load_classification(cfg)?;
    let mut rule_files: Vec<PathBuf> = if args.rules.is_empty() {
        cfg.rule_files()
    } else {
        args.rules.clone()
    };
    rule_files.extend(args.extra_rules.iter().cloned());
    if args.disable_detection {
        rule_files.clear();
    }
    let loaded = load_rule_files(&rule_files, &vars)?;
    let prefilter_name = default_prefilter(args.prefilter.as_deref(), !rule_files.is_empty());
    let mut selector = crate::bench_cmd::run_selector(
        crate::device::engine_name(&prefilter_name, use_device),
        &rule_files,
        sample,
        &args.log_dir,
        // Suricata's detect.sgh-mpm-caching: on unless set to no.
        cfg.get_str("detect.mpm-cache").is_none_or(|v| truthy(&v)),
    )?;
    // How the groups' patterns are split (`detect.prefilter-split-sets`,
    // docs/performance.md): by default only the less common protocols'
    // rules have sets of their own (`protocols`: on dev-mix 5% faster
    // than `no`, as fast as `full`, and a cold start as short as `no`'s);
    // `full` (or `yes`) splits by every protocol and flow direction (its
    // 116,000 literals make a cold start 7.6 s instead of 1.6 s); `no`
    // keeps one set per group. A prefilter device scans each packet once
    // for its whole rule group: it is never given split sets.
    let split = split_mode(cfg.get_str("detect.prefilter-split-sets").as_deref())?;
    selector.set_split_mode(if use_device { SplitMode::Off } else { split });
    let LoadedRules { rules, diagnostics } = loaded;
    let reputation = load_reputation(cfg, print)?;
    let mut ds_cfg = crate::config::dataset_config(cfg, &args.log_dir)?;
    ds_cfg.geoip = load_geoip(cfg, print);
    let (mut detect, report) =
        DetectEngine::build_owned_with(rules, &classes, &mut selector, reputation, ds_cfg);
    let prefilter = selector.finish();
    if print && !rule_files.is_empty() {
        eprintln!("vigil: {}", prefilter.summary());
        print_load_summary(&diagnostics, &report, args.verbose);
    }
    if print {
        for e in &report.dataset_errors {
            eprintln!("vigil: warning: {e}");
        }
    }
    apply_threshold_file(cfg, &vars, &mut detect)?;
    if args.init_errors_fatal && !diagnostics.is_empty() {
        bail!(
            "{} rule(s) failed to load and --init-errors-fatal is set",
            diagnostics.len()
        );
    }
    Ok(Detection {
        detect,
        report,
        prefilter,
        rule_files,
        diagnostics: diagnostics.iter().map(|d| d.to_string()).collect(),
    })
}

/// Output settings read from the config.
pub struct OutputSettings {
    pub eve_name: String,
    pub fast_enabled: bool,
    pub eve_cfg: EveConfig,
    pub log_payload: bool,
    pub log_packet: bool,
    /// eve-log alert `tagged-packets` (on unless set off, as in
    /// Suricata's default configuration).
    pub log_tagged: bool,
    pub log_types: Vec<&'static str>,
    pub xff: Option<crate::config::XffSettings>,
    /// The eve-log `drop` type, when listed.
    pub drop_log: Option<vigil_engine::DropLog>,
    /// `filetype: redis`: EVE goes to Redis instead of `eve_name`.
    pub redis: Option<RedisSettings>,
    /// Inline verdicts (see [`Sink`]'s `inline`); set by the caller.
    pub inline: bool,
    /// `alert: metadata: rule: reference: yes`: alerts carry the rule's
    /// references, resolved with the `reference-config-file` (the
    /// built-in list when it is not set or cannot be read).
    pub references: Option<vigil_rules::ReferenceConfig>,
    /// The kinds of `anomaly` records asked for (app-layer, decoder,
    /// stream); any of them puts `anomaly` in `log_types`.
    pub anomaly_applayer: bool,
    pub anomaly_decode: bool,
    pub anomaly_stream: bool,
}

/// Whether the eve-log alert type asks for `metadata: rule: reference:
/// yes` (Suricata 8; off by default).
fn eve_alert_rule_references(cfg: &Config) -> bool {
    use serde_yaml::Value;
    let on = |v: &Value| match v {
        Value::Bool(b) => *b,
        Value::String(s) => truthy(s),
        _ => false,
    };
    let Some(Value::Sequence(types)) = cfg.output("eve-log").and_then(|e| e.get("types")) else {
        return false;
    };
    types.iter().filter_map(|t| t.get("alert")).any(|a| {
        a.get("metadata")
            .and_then(|m| m.get("rule"))
            .and_then(|r| r.get("reference"))
            .is_some_and(on)
    })
}

/// The reference systems of the `reference-config-file`, else the
/// built-in list.
fn reference_config(cfg: &Config) -> vigil_rules::ReferenceConfig {
    cfg.get_str("reference-config-file")
        .and_then(|f| std::fs::read_to_string(cfg.resolve(&f)).ok())
        .and_then(|text| vigil_rules::ReferenceConfig::parse(&text, "reference-config-file").ok())
        .unwrap_or_default()
}

/// The eve-log `community-id` switch and its `community-id-seed`
/// (Suricata's keys; off by default, seed 0).
fn eve_community_id(cfg: &Config) -> Result<Option<u16>> {
    use serde_yaml::Value;
    let Some(eve) = cfg.output("eve-log") else {
        return Ok(None);
    };
    let on = match eve.get("community-id") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => truthy(s),
        Some(other) => bail!("outputs.eve-log.community-id: {other:?} is not yes or no"),
    };
    if !on {
        return Ok(None);
    }
    let seed = match eve.get("community-id-seed") {
        None => 0,
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .with_context(|| format!("outputs.eve-log.community-id-seed: {n} is not 0..65535"))?,
        Some(Value::String(t)) => t
            .trim()
            .parse()
            .with_context(|| format!("outputs.eve-log.community-id-seed: '{t}' is not 0..65535"))?,
        Some(other) => bail!("outputs.eve-log.community-id-seed: {other:?} is not 0..65535"),
    };
    Ok(Some(seed))
}

pub fn output_settings(cfg: &Config) -> Result<OutputSettings> {
    let eve_name = cfg
        .output("eve-log")
        .and_then(|e| e.get("filename"))
        .and_then(|v| v.as_str())
        .unwrap_or("eve.json")
        .to_string();
    let fast_enabled = cfg
        .output("fast")
        .and_then(|f| f.get("enabled"))
        .map(|v| match v {
            serde_yaml::Value::Bool(b) => *b,
            serde_yaml::Value::String(s) => truthy(s),
            _ => true,
        })
        .unwrap_or(true);
    let log_payload = cfg.eve_alert_flag("payload") || cfg.eve_alert_flag("payload-printable");
    Ok(OutputSettings {
        eve_name,
        fast_enabled,
        eve_cfg: EveConfig {
            payload_base64: cfg.eve_alert_flag("payload"),
            payload_printable: cfg.eve_alert_flag("payload-printable"),
            payload_length: false,
            community_id: eve_community_id(cfg)?,
        },
        log_payload,
        log_packet: cfg.eve_alert_flag("packet"),
        log_tagged: cfg.eve_logs_type("alert") && cfg.eve_alert_flag_default_on("tagged-packets"),
        log_types: [
            "http",
            "dns",
            "tls",
            "ssh",
            "dcerpc",
            "ftp",
            "sip",
            "smb",
            "mqtt",
            "rfb",
            "dhcp",
            "krb5",
            "snmp",
            "ike",
            "smtp",
            "flow",
            "websocket",
            "pgsql",
            "enip",
            "quic",
            "mdns",
            "llmnr",
            "ldap",
            "ntp",
            "modbus",
            "dnp3",
            "pop3",
            "rdp",
            "nfs",
            "tftp",
        ]
        .into_iter()
        .filter(|t| cfg.eve_logs_type(t))
        // Suricata's `bittorrent-dht` type writes `bittorrent_dht` records.
        .chain(
            cfg.eve_logs_type("bittorrent-dht")
                .then_some("bittorrent_dht"),
        )
        // Suricata's `files` type writes `fileinfo` records.
        .chain(cfg.eve_logs_type("files").then_some("fileinfo"))
        .chain(
            (cfg.eve_anomaly_kind("applayer")
                || cfg.eve_anomaly_kind("decode")
                || cfg.eve_anomaly_kind("stream"))
            .then_some("anomaly"),
        )
        // `netflow` repeats `flow` per direction: only when listed, as in
        // Suricata's default configuration (where it is commented out).
        .chain(cfg.eve_lists_type("netflow").then_some("netflow"))
        .collect(),
        xff: cfg.eve_alert_xff()?,
        drop_log: cfg.eve_drop_log()?,
        redis: cfg.eve_redis()?,
        inline: false,
        references: eve_alert_rule_references(cfg).then(|| reference_config(cfg)),
        anomaly_applayer: cfg.eve_anomaly_kind("applayer"),
        anomaly_decode: cfg.eve_anomaly_kind("decode"),
        anomaly_stream: cfg.eve_anomaly_kind("stream"),
    })
}

/// Opens a log file in `dir`, appending or truncating.
fn open_log(dir: &std::path::Path, name: &str, append: bool) -> Result<BufWriter<File>> {
    Ok(BufWriter::with_capacity(
        1 << 16,
        open_file(dir, name, append)?,
    ))
}

/// A log file in `dir`, created or appended to.
fn open_file(dir: &std::path::Path, name: &str, append: bool) -> Result<File> {
    let p = dir.join(name);
    let f = if append {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
    } else {
        File::create(&p)
    };
    f.with_context(|| format!("cannot create {}", p.display()))
}

/// Opens `fast.log` in `dir` when it is enabled.
pub fn open_fast(
    dir: &std::path::Path,
    o: &OutputSettings,
    append: bool,
) -> Result<Option<FastLogWriter<BufWriter<File>>>> {
    Ok(if o.fast_enabled {
        Some(FastLogWriter::new(open_log(dir, "fast.log", append)?))
    } else {
        None
    })
}

/// Opens `eve.json` (or starts the Redis writer, `filetype: redis`) and
/// `fast.log` in `dir` (appending: live runs and reopened files keep what
/// is there; truncating: offline runs).
pub fn open_sink(dir: &std::path::Path, o: &OutputSettings, append: bool) -> Result<Sink> {
    let eve_out = match &o.redis {
        Some(r) => EveOut::Redis(
            RedisWriter::start(r.clone()).context("cannot start the EVE Redis writer")?,
        ),
        // Unbuffered: `EveWriter` gathers whole lines itself.
        None => EveOut::File(open_file(dir, &o.eve_name, append)?),
    };
    Ok(Sink {
        eve: EveWriter::with_config(eve_out, o.eve_cfg),
        fast: open_fast(dir, o, append)?,
        log_payload: o.log_payload,
        log_packet: o.log_packet,
        log_tagged: o.log_tagged,
        log_types: o.log_types.iter().copied().collect(),
        xff_overwrite: o.xff.as_ref().map(|x| x.overwrite),
        live: append,
        references: o.references.clone(),
        drop_alerts: o.drop_log.is_some_and(|d| d.alerts),
        inline: o.inline,
    })
}

/// The engine settings from the command line and config.
pub fn engine_config(args: &RunArgs, cfg: &Config, o: &OutputSettings) -> Result<EngineConfig> {
    let single_thread = runmode_single(args)?;
    let workers = if single_thread {
        1
    } else {
        args.workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1)
    };
    let max_flows = match cfg.flow_memcap()? {
        Some(bytes) => (bytes / FLOW_BYTES).max(1024) as usize,
        None => 1 << 20,
    };
    let mut ecfg = EngineConfig {
        workers,
        single_thread,
        max_flows,
        rate_tracking: cfg.flow_rate_tracking()?,
        log_payload: o.log_payload,
        log_packet: o.log_packet,
        log_tx: o
            .log_types
            .iter()
            .any(|t| !matches!(*t, "flow" | "netflow" | "anomaly")),
        log_tx_types: Some(o.log_types.clone()),
        log_anomaly: o.anomaly_applayer,
        log_anomaly_decode: o.anomaly_decode,
        log_anomaly_stream: o.anomaly_stream,
        flow_log: vigil_engine::FlowLog {
            flow: o.log_types.contains(&"flow"),
            netflow: o.log_types.contains(&"netflow"),
        },
        alert_app: ["http", "dns", "tls"]
            .iter()
            .all(|t| cfg.eve_alert_flag_default_on(t)),
        log_vars: cfg.eve_metadata(),
        xff: o.xff.as_ref().map(|x| (x.header.clone(), x.reverse)),
        drop_log: o.drop_log,
        log_files: o.log_types.contains(&"fileinfo"),
        file_store: file_settings(cfg, &args.log_dir)?,
        ..EngineConfig::default()
    };
    match cfg
        .get_str("app-layer.protocols.tls.encryption-handling")
        .as_deref()
    {
        None | Some("default") => {}
        Some("full") => ecfg.tls_stop_after_handshake = false,
        Some("bypass") => ecfg.tls_bypass = true,
        Some(other) => bail!(
            "app-layer.protocols.tls.encryption-handling: '{other}' is not default, bypass or full"
        ),
    }
    if cfg
        .get_str("app-layer.enabled")
        .is_some_and(|v| !truthy(&v))
    {
        ecfg.app = None;
    }
    stream_settings(cfg, &mut ecfg)?;
    flow_timeouts(cfg, &mut ecfg.timeouts)?;
    ecfg.checksum = checksum_mode(args, cfg)?;
    ecfg.host_block = host_block(cfg)?;
    ecfg.detectors = detectors_config(cfg)?;
    ecfg.profile_rules = profile_rules_limit(args, cfg)?.is_some();
    ecfg.slice = slice_setting(args, cfg)?;
    ecfg.steering = steering_setting(args, cfg, &ecfg.timeouts)?;
    ecfg.format_in_workers = format_records_setting(cfg)?;
    Ok(ecfg)
}

/// `--runmode`, as Suricata's: `single` (one thread reads, inspects and
/// writes, with one worker; offline, the per-core figure) or `workers` /
/// `autofp` (the worker pipeline, the default). True for `single`.
fn runmode_single(args: &RunArgs) -> Result<bool> {
    match args.runmode.as_deref() {
        None | Some("workers") | Some("autofp") => Ok(false),
        Some("single") => {
            if let Some(w) = args.workers.filter(|&w| w != 1) {
                bail!("--runmode single runs one worker; --workers {w} asks for more");
            }
            Ok(true)
        }
        Some(other) => bail!("--runmode: {other:?} is not one of single, workers, autofp"),
    }
}

/// `vigil.format-records`: where transaction records are formatted:
/// `auto` (the default: on the workers when there are 2 or more, else on
/// the output thread), `workers` or `output`. The output is the same.
fn format_records_setting(cfg: &Config) -> Result<Option<bool>> {
    match cfg.get_str("vigil.format-records").as_deref() {
        None | Some("auto") => Ok(None),
        Some("workers") => Ok(Some(true)),
        Some("output") => Ok(Some(false)),
        Some(other) => {
            bail!("vigil.format-records: {other:?} is not one of auto, workers, output")
        }
    }
}

/// `--steering` / `vigil.steering`: `balance` (default: each new flow to
/// the least loaded worker, vigil_engine::steering) or `static` (`hash %
/// workers`). A flow's pin outlives the longest flow time-out by a minute.
fn steering_setting(
    args: &RunArgs,
    cfg: &Config,
    t: &vigil_engine::TimeoutTable,
) -> Result<Option<vigil_engine::steering::SteeringConfig>> {
    let mode = args
        .steering
        .clone()
        .or_else(|| cfg.get_str("vigil.steering"))
        .unwrap_or_else(|| "balance".into());
    match mode.as_str() {
        "static" => Ok(None),
        "balance" => {
            let longest = [t.default, t.tcp, t.udp, t.icmp]
                .iter()
                .flat_map(|f| [f.new, f.established, f.closed])
                .max()
                .unwrap_or(0);
            Ok(Some(vigil_engine::steering::SteeringConfig {
                idle_ns: (i64::from(longest) + 61) * 1_000_000_000,
                ..Default::default()
            }))
        }
        other => bail!("unknown --steering {other:?}: expected balance or static"),
    }
}

/// `--sensor-redis HOST:PORT`, else the config's `sensors.redis`
/// (`server`, `port`, `key`, `peer-timeout` seconds).
pub fn sensor_settings(
    args: &RunArgs,
    cfg: &Config,
) -> Result<Option<crate::sensors::SensorSettings>> {
    let (server, port) = match (&args.sensor_redis, cfg.get_str("sensors.redis.server")) {
        (Some(hp), _) => {
            let (h, p) = hp
                .rsplit_once(':')
                .with_context(|| format!("--sensor-redis: '{hp}' is not HOST:PORT"))?;
            let p: u16 = p
                .parse()
                .with_context(|| format!("--sensor-redis: '{p}' is not a port"))?;
            (h.to_string(), p)
        }
        (None, Some(h)) => {
            let p = match cfg.get_str("sensors.redis.port") {
                None => 6379,
                Some(v) => v
                    .trim()
                    .parse()
                    .with_context(|| format!("sensors.redis.port: '{v}' is not a port"))?,
            };
            (h, p)
        }
        (None, None) => return Ok(None),
    };
    let key = cfg
        .get_str("sensors.redis.key")
        .unwrap_or_else(|| "vigil:sensors".to_string());
    if key.is_empty() {
        bail!("sensors.redis.key: empty");
    }
    let peer_timeout = match cfg.get_str("sensors.redis.peer-timeout") {
        None => 30.0,
        Some(v) => match v.trim().parse::<f64>() {
            Ok(x) if x > 0.0 && x.is_finite() => x,
            _ => bail!("sensors.redis.peer-timeout: '{v}' is not a number of seconds > 0"),
        },
    };
    Ok(Some(crate::sensors::SensorSettings {
        server,
        port,
        key,
        peer_timeout: Duration::from_secs_f64(peer_timeout),
        live: !args.interfaces.is_empty(),
    }))
}

/// `--slice K/N`, else the config's `vigil.slice` (`None`: every flow).
pub fn slice_setting(args: &RunArgs, cfg: &Config) -> Result<Option<vigil_engine::Slice>> {
    let (text, from) = match (&args.slice, cfg.get_str("vigil.slice")) {
        (Some(s), _) => (s.clone(), "--slice"),
        (None, Some(s)) => (s, "vigil.slice"),
        (None, None) => return Ok(None),
    };
    vigil_engine::Slice::parse(&text)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("{from}: {e}"))
}

/// Rule profiling: `--profile-rules N`, else the config's
/// `profiling.rules.enabled` with its `limit` (Suricata's keys; 10 rules
/// when no limit is given). `None`: off.
pub fn profile_rules_limit(args: &RunArgs, cfg: &Config) -> Result<Option<usize>> {
    if let Some(n) = args.profile_rules {
        return Ok(Some(n));
    }
    if !cfg
        .get_str("profiling.rules.enabled")
        .is_some_and(|v| truthy(&v))
    {
        return Ok(None);
    }
    match cfg.get_str("profiling.rules.limit") {
        None => Ok(Some(10)),
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .with_context(|| format!("profiling.rules.limit: '{v}' is not a number of rules")),
    }
}

/// Writes the `limit` costliest rules of `profile` to `rule_perf.log`
/// (Suricata's table; its "ticks" are nanoseconds here) and
/// `rule_perf.json` in `dir`.
pub fn write_rule_profile(
    dir: &std::path::Path,
    detect: &DetectEngine,
    profile: &vigil_detect::RuleProfile,
    limit: usize,
) -> Result<()> {
    let total = profile.total_nanos().max(1) as f64;
    let top = profile.top(limit);
    let mut log = String::new();
    log.push_str(&format!(
        "  Sorted by: ticks (nanoseconds)\n  Rules checked: {}, total check time: {:.3} s\n",
        profile.rules.iter().filter(|c| c.checks > 0).count(),
        profile.total_nanos() as f64 / 1e9
    ));
    log.push_str(&format!(
        "  {:<8} {:<12} {:<8} {:<8} {:<12} {:<6} {:<10} {:<8} {:<11} {:<11} {:<11} {:<12}\n",
        "Num",
        "Rule",
        "Gid",
        "Rev",
        "Ticks",
        "%",
        "Checks",
        "Matches",
        "Max Ticks",
        "Avg Ticks",
        "Avg Match",
        "Avg No Match"
    ));
    log.push_str(&format!(
        "  {} {} {} {} {} {} {} {} {} {} {} {}\n",
        "-".repeat(8),
        "-".repeat(12),
        "-".repeat(8),
        "-".repeat(8),
        "-".repeat(12),
        "-".repeat(6),
        "-".repeat(10),
        "-".repeat(8),
        "-".repeat(11),
        "-".repeat(11),
        "-".repeat(11),
        "-".repeat(12)
    ));
    let mut rules_json = Vec::new();
    for (n, (ri, c)) in top.iter().enumerate() {
        let r = &detect.rules[*ri as usize];
        let avg = c.nanos as f64 / c.checks as f64;
        let avg_match = if c.matches > 0 {
            c.nanos_match as f64 / c.matches as f64
        } else {
            0.0
        };
        let nomatch = c.checks - c.matches;
        let avg_nomatch = if nomatch > 0 {
            (c.nanos - c.nanos_match) as f64 / nomatch as f64
        } else {
            0.0
        };
        let pct = c.nanos as f64 * 100.0 / total;
        log.push_str(&format!(
            "  {:<8} {:<12} {:<8} {:<8} {:<12} {:<6.2} {:<10} {:<8} {:<11} {:<11.2} {:<11.2} {:<12.2}\n",
            n + 1, r.sid, r.gid, r.rev, c.nanos, pct, c.checks, c.matches, c.max_nanos, avg,
            avg_match, avg_nomatch
        ));
        rules_json.push(serde_json::json!({
            "signature_id": r.sid,
            "gid": r.gid,
            "rev": r.rev,
            "msg": r.msg,
            "checks": c.checks,
            "matches": c.matches,
            "ticks_total": c.nanos,
            "ticks_max": c.max_nanos,
            "ticks_avg": avg,
            "ticks_avg_match": avg_match,
            "ticks_avg_nomatch": avg_nomatch,
            "percent": pct,
        }));
    }
    let p = dir.join("rule_perf.log");
    std::fs::write(&p, log).with_context(|| format!("cannot write {}", p.display()))?;
    let doc = serde_json::json!({
        "sort": "ticks",
        "ticks_unit": "nanoseconds",
        "rules_checked": profile.rules.iter().filter(|c| c.checks > 0).count(),
        "total_ticks": profile.total_nanos(),
        "rules": rules_json,
    });
    let p = dir.join("rule_perf.json");
    std::fs::write(&p, serde_json::to_string_pretty(&doc)? + "\n")
        .with_context(|| format!("cannot write {}", p.display()))?;
    Ok(())
}

/// Sets IPS mode on or off, and with it the exception policies
/// (`exception-policy` and the per-case keys; `auto` fails closed inline
/// and ignores in IDS mode).
pub(crate) fn set_inline(ecfg: &mut EngineConfig, cfg: &Config, inline: bool) -> Result<()> {
    ecfg.inline = inline;
    let per_case: Vec<(vigil_engine::ExceptionCase, String)> = vigil_engine::ExceptionCase::ALL
        .iter()
        .filter_map(|c| cfg.get_str(c.config_key()).map(|v| (*c, v)))
        .collect();
    let per_case: Vec<(vigil_engine::ExceptionCase, &str)> =
        per_case.iter().map(|(c, v)| (*c, v.as_str())).collect();
    ecfg.exceptions = vigil_engine::ExceptionPolicies::resolve(
        cfg.get_str("exception-policy").as_deref(),
        &per_case,
        inline,
        ecfg.stream.midstream,
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    Ok(())
}

/// `ips.block-hosts`: `classtypes` (a list, or a comma-separated string
/// with `--set`), `seconds` (300) and `track` (`src`, the default, or
/// `dst`).
/// The built-in detectors (`detectors:` in the config; all on by default
/// with the thresholds of `DetectorConfig::default`):
/// `detectors.enabled`, and per detector (`port-scan`, `address-scan`,
/// `syn-flood`, `failed-connections`) `enabled`, `count`, `seconds`.
fn detectors_config(cfg: &Config) -> Result<Option<vigil_engine::detectors::DetectorConfig>> {
    use vigil_engine::detectors::{DetectorConfig, Limit};
    if cfg
        .get_str("detectors.enabled")
        .is_some_and(|v| !truthy(&v))
    {
        return Ok(None);
    }
    let mut d = DetectorConfig::default();
    for (name, slot) in [
        ("port-scan", &mut d.port_scan),
        ("address-scan", &mut d.address_scan),
        ("syn-flood", &mut d.syn_flood),
        ("failed-connections", &mut d.failed_connections),
    ] {
        if cfg
            .get_str(&format!("detectors.{name}.enabled"))
            .is_some_and(|v| !truthy(&v))
        {
            *slot = None;
            continue;
        }
        let Some(limit) = slot.as_mut() else { continue };
        let num = |key: &str, default: u32| -> Result<u32> {
            let k = format!("detectors.{name}.{key}");
            match cfg.get_str(&k) {
                None => Ok(default),
                Some(v) => match v.trim().parse::<u32>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => bail!("{k}: '{v}' is not a positive number"),
                },
            }
        };
        *limit = Limit {
            count: num("count", limit.count)?,
            seconds: num("seconds", limit.seconds)?,
        };
    }
    Ok(Some(d).filter(|d| d.any()))
}

fn host_block(cfg: &Config) -> Result<Option<vigil_engine::hosts::HostBlockConfig>> {
    use vigil_engine::hosts::{BlockTrack, HostBlockConfig};
    let classtypes: Vec<String> = match cfg.get("ips.block-hosts.classtypes") {
        Some(serde_yaml::Value::Sequence(v)) => v
            .iter()
            .filter_map(|x| x.as_str().map(|s| s.trim().to_string()))
            .collect(),
        Some(serde_yaml::Value::String(s)) => s
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect(),
        _ => return Ok(None),
    };
    let mut h = HostBlockConfig {
        classtypes,
        ..HostBlockConfig::default()
    };
    if let Some(v) = cfg.get_str("ips.block-hosts.seconds") {
        h.seconds = v.trim().parse().with_context(|| {
            format!("ips.block-hosts.seconds: '{v}' is not a number of seconds")
        })?;
    }
    match cfg.get_str("ips.block-hosts.track").as_deref() {
        None | Some("src") | Some("by_src") => {}
        Some("dst") | Some("by_dst") => h.track = BlockTrack::Dst,
        Some(other) => bail!("ips.block-hosts.track: '{other}' is not src or dst"),
    }
    Ok(Some(h))
}

/// `-k`, else the config's `pcap-file.checksum-checks` (`-r`) or
/// `af-packet.checksum-checks` (`-i`); by default `none` for capture
/// files (they often hold offloaded checksums that were never filled in:
/// 22% of dev-mix's TCP packets) and `auto` live.
fn checksum_mode(args: &RunArgs, cfg: &Config) -> Result<vigil_engine::ChecksumMode> {
    let live = !args.interfaces.is_empty() || !args.nfqueues.is_empty() || !args.bridges.is_empty();
    let key = if live {
        "af-packet.checksum-checks"
    } else {
        "pcap-file.checksum-checks"
    };
    let (what, v) = match (&args.checksum, cfg.get_str(key)) {
        (Some(k), _) => ("-k", k.clone()),
        (None, Some(v)) => (key, v),
        (None, None) => {
            return Ok(if live {
                vigil_engine::ChecksumMode::Auto
            } else {
                vigil_engine::ChecksumMode::None
            })
        }
    };
    // Suricata's af-packet also has `kernel` (trust the kernel's offload
    // flags); without them it validates as `auto` does.
    let v = if v == "kernel" { "auto".to_string() } else { v };
    vigil_engine::ChecksumMode::from_name(&v)
        .with_context(|| format!("{what} {v}: expected auto, all or none"))
}

/// Suricata's `flow-timeouts` section: `default`, `tcp`, `udp`, `icmp`,
/// each with `new`, `established` and `closed` seconds.
fn flow_timeouts(cfg: &Config, t: &mut vigil_engine::TimeoutTable) -> Result<()> {
    for (name, slot) in [
        ("default", &mut t.default),
        ("tcp", &mut t.tcp),
        ("udp", &mut t.udp),
        ("icmp", &mut t.icmp),
    ] {
        for (state, field) in [
            ("new", &mut slot.new),
            ("established", &mut slot.established),
            ("closed", &mut slot.closed),
        ] {
            let key = format!("flow-timeouts.{name}.{state}");
            if let Some(v) = cfg.get_str(&key) {
                *field = v
                    .trim()
                    .parse()
                    .with_context(|| format!("{key}: '{v}' is not a number of seconds"))?;
            }
        }
    }
    Ok(())
}

/// This process's resident set size now and at its peak (`VmRSS`,
/// `VmHWM` in /proc/self/status), bytes; zeros where unavailable.
pub fn rss_now_and_peak() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let load_start = Instant::now();
    let rss_at_start = rss_now_and_peak().0;
    let cfg = load_config(&args)?;
    if !args.interfaces.is_empty() || !args.nfqueues.is_empty() || !args.bridges.is_empty() {
        return crate::live::run(args, cfg, load_start);
    }
    if !args.bpf.is_empty() || args.bpf_file.is_some() {
        bail!("a BPF filter applies to live capture (-i IFACE), not to -r");
    }
    let Some(pcap) = &args.pcap else {
        bail!("no input: give a capture with -r FILE|DIR or an interface with -i IFACE");
    };
    // Open the input first: a bad path is reported before rules load.
    let source = PcapSource::open(pcap).map_err(|e| anyhow::anyhow!("{e}"))?;
    let use_device = !args.disable_detection && crate::device::wanted(&args.device)?;
    let Detection {
        detect,
        report,
        prefilter,
        rule_files,
        ..
    } = load_detection(&args, &cfg, pcap, use_device, true)?;
    let use_device = use_device && !rule_files.is_empty();
    let (device, device_lines) = if use_device {
        crate::device::setup(&args.device, &detect, pcap)?
    } else {
        (None, Vec::new())
    };
    let load_time = load_start.elapsed();
    let rss_after_load = rss_now_and_peak().0;

    std::fs::create_dir_all(&args.log_dir)
        .with_context(|| format!("cannot create log directory {}", args.log_dir.display()))?;
    let open = |name: &str| -> Result<BufWriter<File>> {
        let p = args.log_dir.join(name);
        Ok(BufWriter::with_capacity(
            1 << 16,
            File::create(&p).with_context(|| format!("cannot create {}", p.display()))?,
        ))
    };
    let mut osettings = output_settings(&cfg)?;
    osettings.inline = args.simulate_ips;
    let mut sink = open_sink(&args.log_dir, &osettings, false)?;
    let mut ecfg = engine_config(&args, &cfg, &osettings)?;
    ecfg.device = device;
    // The inline verdicts, offline: drop and reject rules drop packets
    // and flows (deterministic; `"action":"blocked"`).
    set_inline(&mut ecfg, &cfg, args.simulate_ips)?;
    if args.simulate_ips
        && ecfg.workers > 1
        && ecfg
            .host_block
            .as_ref()
            .is_some_and(|h| !h.classtypes.is_empty())
    {
        // A host block made by one worker applies to the others' packets
        // as soon as it is made: over a capture file that would depend on
        // thread timing. One worker applies blocks in input order, so the
        // verdicts are the same whatever --workers says.
        eprintln!("vigil: --simulate-ips with ips.block-hosts runs one worker (host blocks in input order)");
        ecfg.workers = 1;
    }
    if args.simulate_ips && ecfg.workers > 1 && detect.rules.iter().any(|r| r.rate_filter.is_some())
    {
        // The same for rate filters, which change verdicts across flows.
        eprintln!("vigil: --simulate-ips with rate_filter entries runs one worker (rate filters in input order)");
        ecfg.workers = 1;
    }
    let workers = ecfg.workers;
    if let Some(x) = args.replay_speed {
        if !(x.is_finite() && x >= 0.0) {
            bail!("--replay-speed must be a number >= 0");
        }
        ecfg.replay_speed = x;
    }
    let bar = if !args.quiet && std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(source.total_bytes());
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let mut last_ts = 0i64;
    let detect = Arc::new(detect);
    let peers = crate::sensors::link(&args, &cfg, &mut ecfg, &detect.rules)?;
    if ecfg.single_thread && !ecfg.runs_single_thread() {
        eprintln!(
            "vigil: --runmode single: the device prefilter and linked sensors need the worker pipeline; running it with one worker"
        );
    }
    crate::processing_memory();
    let stats = {
        let mut progress = |done: u64, _total: u64| {
            if let Some(b) = &bar {
                b.set_position(done);
            }
        };
        vigil_engine::run_offline(source, detect.clone(), &ecfg, &mut sink, &mut progress)
            .map_err(|e| anyhow::anyhow!("{e}"))?
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    save_datasets(&detect);
    if let Some(ts) = stats_last_ts(&stats) {
        last_ts = ts;
    }
    // EVE gets the counters Suricata has, under its names; stats.log all.
    let (eve_tree, _) = stats_parts(&stats, Some(&report));
    let tree = stats_tree(&stats, Some(&report));
    sink.eve.write_stats(
        last_ts.div_euclid(1_000_000_000),
        last_ts.rem_euclid(1_000_000_000) as u32,
        &eve_tree,
    )?;
    // Redis: at most the flush timeout to deliver what is queued.
    let redis_counts = sink.finish_redis()?;
    if let Some(p) = &peers {
        p.finish(Duration::from_secs(5));
        p.counters.warn_if_lost();
    }
    if let Some(f) = &mut sink.fast {
        f.flush()?;
    }
    let wall = stats.wall.as_secs_f64().max(1e-9);
    let gbps = stats.bytes_read as f64 * 8.0 / wall / 1e9;
    let pps = stats.packets_read as f64 / wall;
    let timing = vec![
        (
            "vigil.load_seconds",
            format!("{:.3}", load_time.as_secs_f64()),
        ),
        ("vigil.wall_seconds", format!("{wall:.3}")),
        ("vigil.gbit_per_second", format!("{gbps:.3}")),
        ("vigil.packets_per_second", format!("{pps:.0}")),
        ("vigil.workers", workers.to_string()),
        (
            "vigil.slice",
            ecfg.slice
                .map_or_else(|| "all".to_string(), |s| s.to_string()),
        ),
        // Summed over workers (each has its own share of the memcap), so
        // it depends on the worker count: not an EVE stats value.
        (
            "vigil.stream_memory_peak_bytes",
            stats.workers.stream_mem_peak.to_string(),
        ),
        ("vigil.prefilter", prefilter.mode.clone()),
        (
            "vigil.prefilter.engines",
            prefilter
                .by_kind()
                .iter()
                .map(|(k, n)| format!("{k}:{n}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        (
            "vigil.prefilter.calibration_seconds",
            format!("{:.3}", prefilter.calibration.as_secs_f64()),
        ),
        // Memory by component (bytes). The ruleset's share is what
        // loading added to the resident set (compiled rules, groups,
        // prefilter databases, of which the prefilter's own figure);
        // flows are counted at the flow memcap's 256 bytes each.
        (
            "memory.process_peak_bytes",
            rss_now_and_peak().1.to_string(),
        ),
        (
            "memory.ruleset_bytes",
            rss_after_load.saturating_sub(rss_at_start).to_string(),
        ),
        ("memory.prefilter_bytes", prefilter.heap_bytes.to_string()),
        (
            "memory.flows_peak_bytes",
            (stats.workers.flows_peak * FLOW_BYTES).to_string(),
        ),
        (
            "memory.stream_peak_bytes",
            stats.workers.stream_mem_peak.to_string(),
        ),
        (
            "vigil.packets_per_worker",
            stats
                .per_worker_pkts
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
    ];
    let mut timing = timing;
    timing.extend(device_lines);
    if let Some(p) = &peers {
        timing.extend(p.counters.stats_lines(stats.remote_events));
    }
    if let Some(c) = &redis_counts {
        timing.extend(redis_stats_lines(c));
        if c.dropped > 0 {
            eprintln!(
                "vigil: warning: {} EVE records not delivered to Redis ({} errors); see eve.redis.* in stats.log",
                c.dropped, c.errors
            );
        }
    }
    let mut slog = open("stats.log")?;
    vigil_output::write_stats_log(&mut slog, &tree, &timing)?;
    slog.flush()?;
    eprintln!(
        "vigil: {} packets, {} bytes, {} alerts ({} suppressed by thresholds), {} flows; \
         load {:.2}s, run {:.3}s, {:.3} Gbit/s, {:.0} packets/s, {} worker(s){}",
        stats.packets_read,
        stats.bytes_read,
        stats.alerts_written,
        stats.alerts_suppressed,
        stats.workers.flows_created,
        load_time.as_secs_f64(),
        wall,
        gbps,
        pps,
        workers,
        if stats.single_thread {
            ", one thread"
        } else {
            ""
        }
    );
    if stats.workers.flows_evicted > 0 {
        eprintln!(
            "vigil: warning: {} flows evicted by the flow memcap; raise flow.memcap to keep all state",
            stats.workers.flows_evicted
        );
    }
    if let (Some(limit), Some(p)) = (
        profile_rules_limit(&args, &cfg)?,
        &stats.workers.rule_profile,
    ) {
        write_rule_profile(&args.log_dir, &detect, p, limit)?;
    }
    // The process ends here: freeing the compiled ruleset piece by piece
    // (hundreds of thousands of allocations, 0.2-0.3 s on ET Open) would
    // only delay the exit. Every output is flushed above.
    std::mem::forget(detect);
    Ok(ExitCode::SUCCESS)
}

/// The prefilter engine: the one asked for, else Hyperscan (the fastest
/// on real traffic) when this build has it, else Aho-Corasick, with a
/// word on stderr that the build lacks the fast engine.
pub fn default_prefilter(asked: Option<&str>, have_rules: bool) -> String {
    if let Some(a) = asked {
        return a.to_string();
    }
    if vigil_prefilter::EngineKind::Hs.available() {
        return "hs".to_string();
    }
    if have_rules {
        eprintln!(
            "vigil: note: built without Hyperscan (the hyperscan feature, on by default): \
             prefilter ac, several times slower; see README"
        );
    }
    "ac".to_string()
}

fn stats_last_ts(s: &RunStats) -> Option<i64> {
    s.last_ts_ns
}

/// File tracking settings: the `files` eve type's `force-hash` list and
/// `force-magic`, and the `file-store` output (version 2): its folder
/// (relative to the log folder), when enabled. Storing files needs their
/// SHA-256 (their name in the store).
fn file_settings(cfg: &Config, log_dir: &std::path::Path) -> Result<Option<std::path::PathBuf>> {
    use serde_yaml::Value;
    use vigil_applayer::files;
    if let Some(Value::Sequence(types)) = cfg.output("eve-log").and_then(|e| e.get("types")) {
        for f in types.iter().filter_map(|t| t.get("files")) {
            let hashes: Vec<String> = match f.get("force-hash") {
                Some(Value::Sequence(v)) => v
                    .iter()
                    .filter_map(|h| h.as_str().map(str::to_string))
                    .collect(),
                Some(Value::String(h)) => h.split(',').map(|h| h.trim().to_string()).collect(),
                _ => Vec::new(),
            };
            for h in hashes {
                files::enable(match h.to_ascii_lowercase().as_str() {
                    "md5" => files::FILE_MD5,
                    "sha1" => files::FILE_SHA1,
                    "sha256" => files::FILE_SHA256,
                    other => {
                        bail!("outputs.eve-log.types.files.force-hash: unknown hash '{other}'")
                    }
                });
            }
            if f.get("force-magic").is_some_and(|v| match v {
                Value::Bool(b) => *b,
                Value::String(t) => truthy(t),
                _ => false,
            }) {
                files::enable(files::FILE_MAGIC);
            }
        }
    }
    let Some(fs) = cfg.output("file-store") else {
        return Ok(None);
    };
    let enabled = match fs.get("enabled") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(t)) => truthy(t),
        _ => false,
    };
    if !enabled {
        return Ok(None);
    }
    let dir = fs
        .get("dir")
        .and_then(|v| v.as_str())
        .unwrap_or("filestore");
    files::enable(files::FILE_SHA256);
    if let Some(n) = fs
        .get("stream-depth")
        .and_then(|v| v.as_u64())
        .filter(|n| *n > 0)
    {
        files::set_store_memcap(usize::try_from(n).unwrap_or(usize::MAX));
    }
    Ok(Some(log_dir.join(dir)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_files_load_whether_or_not_they_are_utf8() {
        let dir = std::env::temp_dir().join(format!("vigil-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.rules");
        std::fs::write(
            &good,
            "alert tcp any any -> any any (msg:\"caf\u{e9}\"; content:\"x\"; sid:1;)\n",
        )
        .unwrap();
        // A Latin-1 byte in the message: not UTF-8, still loaded (the
        // byte becomes U+FFFD), and the next rule too.
        let bad = dir.join("bad.rules");
        let mut text = b"alert tcp any any -> any any (msg:\"caf".to_vec();
        text.extend_from_slice(b"\xe9\"; content:\"y\"; sid:2;)\n");
        text.extend_from_slice(b"alert udp any any -> any any (content:\"z\"; sid:3;)\n");
        std::fs::write(&bad, text).unwrap();
        let l = load_rule_files(&[good, bad], &Vars::default()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
        let msgs: Vec<(u32, &str)> = l.rules.iter().map(|r| (r.sid, r.msg.as_str())).collect();
        assert_eq!(msgs, vec![(1, "caf\u{e9}"), (2, "caf\u{fffd}"), (3, "")]);
    }

    #[test]
    fn format_records_values() {
        let at = |v: &str| {
            let mut c = Config::default();
            c.set(&format!("vigil.format-records={v}")).unwrap();
            format_records_setting(&c)
        };
        assert_eq!(format_records_setting(&Config::default()).unwrap(), None);
        assert_eq!(at("auto").unwrap(), None);
        assert_eq!(at("workers").unwrap(), Some(true));
        assert_eq!(at("output").unwrap(), Some(false));
        let e = at("both").unwrap_err().to_string();
        assert!(
            e.contains("vigil.format-records") && e.contains("both"),
            "{e}"
        );
    }

    #[test]
    fn split_mode_values() {
        assert_eq!(split_mode(None).unwrap(), SplitMode::Protocols);
        assert_eq!(split_mode(Some("protocols")).unwrap(), SplitMode::Protocols);
        assert_eq!(split_mode(Some("Full")).unwrap(), SplitMode::Full);
        assert_eq!(split_mode(Some("yes")).unwrap(), SplitMode::Full);
        assert_eq!(split_mode(Some("no")).unwrap(), SplitMode::Off);
        assert_eq!(split_mode(Some("false")).unwrap(), SplitMode::Off);
        let e = split_mode(Some("sometimes")).unwrap_err().to_string();
        assert!(
            e.contains("detect.prefilter-split-sets") && e.contains("sometimes"),
            "{e}"
        );
    }
}
