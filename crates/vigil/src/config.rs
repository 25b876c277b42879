//! Suricata-style YAML configuration, with `--set key=value` overrides.
//!
//! Honoured settings (everything else is read and ignored):
//! `vars.address-groups.*`, `vars.port-groups.*`, `default-rule-path`,
//! `rule-files`, `classification-file`, `reputation-categories-file`,
//! `default-reputation-path`, `reputation-files`, `geoip-database`, `flow.memcap`, `outputs` → `eve-log` (`enabled`, `filename`, alert
//! `payload`, `payload-printable`, `packet`, `filetype` with its `redis`
//! section), `outputs` → `fast`
//! (`enabled`, `filename`), and `include` (files merged in order).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_yaml::{Mapping, Value};

/// The parsed config tree plus where it came from.
#[derive(Debug, Default, Clone)]
pub struct Config {
    pub root: Value,
    pub dir: Option<PathBuf>,
}

fn parse_yaml(text: &str, path: &Path) -> Result<Value> {
    // serde_yaml rejects the `%YAML 1.1` directive Suricata configs start
    // with; it carries no information we need.
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("%YAML"))
        .collect::<Vec<_>>()
        .join("\n");
    if body.trim().is_empty() || body.trim() == "---" {
        return Ok(Value::Mapping(Mapping::new()));
    }
    serde_yaml::from_str(&body).with_context(|| format!("{}: invalid YAML", path.display()))
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Mapping(a), Value::Mapping(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

impl Config {
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        let mut root = parse_yaml(&text, path)?;
        let dir = path.parent().map(Path::to_path_buf);
        // `include: file` or a list of files, relative to the config.
        let includes: Vec<String> = match root.get("include") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Sequence(v)) => v
                .iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect(),
            _ => vec![],
        };
        for inc in includes {
            let p = dir.clone().unwrap_or_default().join(&inc);
            // Suricata itself fails on a missing include; so do we, but
            // naming the file.
            let text = std::fs::read_to_string(&p).with_context(|| {
                format!("{}: cannot read included {}", path.display(), p.display())
            })?;
            let mut base = parse_yaml(&text, &p)?;
            merge(&mut base, root);
            root = base;
        }
        Ok(Config { root, dir })
    }

    /// Applies `key=value` with a dotted key, creating maps as needed.
    pub fn set(&mut self, kv: &str) -> Result<()> {
        let Some((key, value)) = kv.split_once('=') else {
            bail!("--set {kv}: expected KEY=VALUE");
        };
        if key.is_empty() {
            bail!("--set {kv}: empty key");
        }
        if !self.root.is_mapping() {
            self.root = Value::Mapping(Mapping::new());
        }
        let mut node = &mut self.root;
        let parts: Vec<&str> = key.split('.').collect();
        for (i, part) in parts.iter().enumerate() {
            let map = match node {
                Value::Mapping(m) => m,
                other => {
                    *other = Value::Mapping(Mapping::new());
                    other.as_mapping_mut().expect("just made a mapping")
                }
            };
            let k = Value::String(part.to_string());
            if i + 1 == parts.len() {
                map.insert(k, Value::String(value.to_string()));
                return Ok(());
            }
            node = map.entry(k).or_insert(Value::Mapping(Mapping::new()));
        }
        Ok(())
    }

    pub fn get(&self, dotted: &str) -> Option<&Value> {
        let mut node = &self.root;
        for part in dotted.split('.') {
            node = node.get(part)?;
        }
        Some(node)
    }

    pub fn get_str(&self, dotted: &str) -> Option<String> {
        scalar(self.get(dotted)?)
    }

    /// `(name, value)` pairs of a map of scalars, e.g. `vars.address-groups`.
    pub fn string_map(&self, dotted: &str) -> Vec<(String, String)> {
        match self.get(dotted) {
            Some(Value::Mapping(m)) => m
                .iter()
                .filter_map(|(k, v)| Some((scalar(k)?, scalar(v)?)))
                .collect(),
            _ => vec![],
        }
    }

    pub fn resolve(&self, p: &str) -> PathBuf {
        let path = PathBuf::from(p);
        if path.is_absolute() {
            return path;
        }
        match &self.dir {
            Some(d) => d.join(path),
            None => path,
        }
    }

    /// The GeoIP database `geoip` rules read (Suricata's
    /// `geoip-database`, a MaxMind DB file), relative to the config's
    /// directory; `None` when not set.
    pub fn geoip_database(&self) -> Option<PathBuf> {
        self.get_str("geoip-database").map(|p| self.resolve(&p))
    }

    /// IP reputation files (Suricata's `reputation-categories-file`, and
    /// `reputation-files` under `default-reputation-path`): `None` when
    /// neither is set (reputation disabled); an error when only one is.
    pub fn reputation_files(&self) -> Result<Option<(PathBuf, Vec<PathBuf>)>> {
        let cats = self.get_str("reputation-categories-file");
        let files = self.get("reputation-files");
        match (cats, files) {
            (None, None) => Ok(None),
            (None, Some(_)) => {
                bail!("\"reputation-files\" is set but \"reputation-categories-file\" is not")
            }
            (Some(_), None) => {
                bail!("\"reputation-categories-file\" is set but \"reputation-files\" is not")
            }
            (Some(c), Some(v)) => {
                let base = self.get_str("default-reputation-path");
                let names: Vec<String> = match v {
                    Value::Sequence(v) => v.iter().filter_map(scalar).collect(),
                    other => scalar(other).into_iter().collect(),
                };
                let files = names
                    .iter()
                    .map(|f| {
                        let p = PathBuf::from(f);
                        match (&base, p.is_absolute()) {
                            (Some(b), false) => self.resolve(b).join(p),
                            _ => self.resolve(f),
                        }
                    })
                    .collect();
                Ok(Some((self.resolve(&c), files)))
            }
        }
    }

    /// Rule files named by the config (`default-rule-path` + `rule-files`).
    pub fn rule_files(&self) -> Vec<PathBuf> {
        let base = self.get_str("default-rule-path");
        match self.get("rule-files") {
            Some(Value::Sequence(v)) => v
                .iter()
                .filter_map(scalar)
                .map(|f| {
                    let p = PathBuf::from(&f);
                    match (&base, p.is_absolute()) {
                        (Some(b), false) => self.resolve(b).join(p),
                        _ => self.resolve(&f),
                    }
                })
                .collect(),
            _ => vec![],
        }
    }

    /// The settings of the first output of a kind (`eve-log`, `fast`).
    pub fn output(&self, kind: &str) -> Option<&Value> {
        match self.get("outputs") {
            Some(Value::Sequence(v)) => v.iter().find_map(|o| o.get(kind)),
            _ => None,
        }
    }

    /// An `eve-log` alert option such as `payload` (`types: - alert: {...}`).
    pub fn eve_alert_flag(&self, name: &str) -> bool {
        let Some(eve) = self.output("eve-log") else {
            return false;
        };
        let Some(Value::Sequence(types)) = eve.get("types") else {
            return false;
        };
        types
            .iter()
            .filter_map(|t| t.get("alert"))
            .any(|a| a.get(name).and_then(scalar).is_some_and(|v| truthy(&v)))
    }

    /// Whether the `eve-log` output logs event type `name` (`http`,
    /// `dns`, `tls`): when the config lists `types`, only those listed
    /// (as a plain entry or a map key); without a list, every type.
    pub fn eve_logs_type(&self, name: &str) -> bool {
        let listed = self
            .output("eve-log")
            .is_some_and(|e| matches!(e.get("types"), Some(Value::Sequence(_))));
        !listed || self.eve_lists_type(name)
    }

    /// Whether the eve-log `types` list names `name` (types that are off
    /// unless asked for, such as `netflow`).
    pub fn eve_lists_type(&self, name: &str) -> bool {
        let Some(Value::Sequence(types)) = self.output("eve-log").and_then(|e| e.get("types"))
        else {
            return false;
        };
        types.iter().any(|t| match t {
            Value::String(s) => s == name,
            Value::Mapping(_) => t.get(name).is_some(),
            _ => false,
        })
    }

    /// Whether anomalies of a kind (`applayer`, `decode`, `stream`) are
    /// logged: the eve-log `anomaly` type (on without a `types` list), not
    /// `enabled: no`, and its `types.<kind>` as set, defaulting to
    /// Suricata's: applayer yes, decode and stream no.
    pub fn eve_anomaly_kind(&self, kind: &str) -> bool {
        let default = kind == "applayer";
        if !self.eve_logs_type("anomaly") {
            return false;
        }
        let Some(Value::Sequence(types)) = self.output("eve-log").and_then(|e| e.get("types"))
        else {
            return default;
        };
        let Some(a) = types.iter().find_map(|t| t.get("anomaly")) else {
            return default;
        };
        let flag = |v: Option<&Value>| v.and_then(scalar).map(|v| truthy(&v));
        if flag(a.get("enabled")) == Some(false) {
            return false;
        }
        flag(a.get("types").and_then(|t| t.get(kind))).unwrap_or(default)
    }

    /// The eve-log `drop` type, when the `types` list asks for it
    /// (Suricata's `- drop:` entry; `flows: start` by default, `all` to log
    /// every dropped packet). Not written unless listed.
    pub fn eve_drop_log(&self) -> Result<Option<vigil_engine::DropLog>> {
        let Some(eve) = self.output("eve-log") else {
            return Ok(None);
        };
        let Some(Value::Sequence(types)) = eve.get("types") else {
            return Ok(None);
        };
        for t in types {
            match t {
                Value::String(s) if s == "drop" => return Ok(Some(Default::default())),
                Value::Mapping(_) => {
                    let Some(d) = t.get("drop") else { continue };
                    let all = match d.get("flows").and_then(scalar).as_deref() {
                        None | Some("start") => false,
                        Some("all") => true,
                        Some(other) => {
                            bail!("outputs.eve-log.types.drop.flows: '{other}' is not start or all")
                        }
                    };
                    let alerts = d.get("alerts").and_then(scalar).is_some_and(|v| truthy(&v));
                    return Ok(Some(vigil_engine::DropLog { all, alerts }));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// The eve-log top-level `metadata` switch (Suricata's
    /// `include_metadata`, on unless set false): events carry the flow's
    /// and packet's variables as `metadata`.
    pub fn eve_metadata(&self) -> bool {
        // Suricata's ConfValIsFalse.
        !self
            .output("eve-log")
            .and_then(|e| e.get("metadata"))
            .and_then(scalar)
            .is_some_and(|v| falsy(&v))
    }

    /// An alert option that defaults to on (`http`, `dns`, `tls`: the
    /// transaction's object in app-layer alerts); off only when set false.
    pub fn eve_alert_flag_default_on(&self, name: &str) -> bool {
        let Some(eve) = self.output("eve-log") else {
            return true;
        };
        let Some(Value::Sequence(types)) = eve.get("types") else {
            return true;
        };
        types
            .iter()
            .filter_map(|t| t.get("alert"))
            .filter_map(|a| a.get(name).and_then(scalar))
            .all(|v| truthy(&v))
    }

    /// The eve-log alert `xff` section, when enabled: `mode`
    /// (`extra-data` or `overwrite`), `deployment` (`reverse` or
    /// `forward`), `header` (default `X-Forwarded-For`).
    pub fn eve_alert_xff(&self) -> Result<Option<XffSettings>> {
        let Some(eve) = self.output("eve-log") else {
            return Ok(None);
        };
        let Some(Value::Sequence(types)) = eve.get("types") else {
            return Ok(None);
        };
        let Some(x) = types
            .iter()
            .filter_map(|t| t.get("alert"))
            .find_map(|a| a.get("xff"))
        else {
            return Ok(None);
        };
        let get = |k: &str| x.get(k).and_then(scalar);
        if !get("enabled").is_some_and(|v| truthy(&v)) {
            return Ok(None);
        }
        let overwrite = match get("mode").as_deref() {
            None | Some("extra-data") => false,
            Some("overwrite") => true,
            Some(m) => bail!("xff.mode: '{m}' is not extra-data or overwrite"),
        };
        let reverse = match get("deployment").as_deref() {
            None | Some("reverse") => true,
            Some("forward") => false,
            Some(d) => bail!("xff.deployment: '{d}' is not reverse or forward"),
        };
        Ok(Some(XffSettings {
            overwrite,
            reverse,
            header: get("header")
                .unwrap_or_else(|| "X-Forwarded-For".into())
                .to_ascii_lowercase(),
        }))
    }

    /// Where EVE records go: `None` for a file (`filetype: regular`, the
    /// default), the Redis settings for `filetype: redis` (Suricata's
    /// `redis:` options `server`, `port`, `mode`, `key`, `username`,
    /// `password`, `pipelining.enabled`/`batch-size`, `stream-maxlen`,
    /// `stream-trim-exact`; Vigil's own `buffer-size` and
    /// `flush-timeout`). Anything unusable is an error naming the option.
    pub fn eve_redis(&self) -> Result<Option<vigil_output::RedisSettings>> {
        let Some(eve) = self.output("eve-log") else {
            return Ok(None);
        };
        match eve.get("filetype").and_then(scalar).as_deref() {
            None | Some("regular") | Some("file") => return Ok(None),
            Some("redis") => {}
            Some(other) => {
                bail!("outputs.eve-log.filetype: '{other}' is not supported (regular or redis)")
            }
        }
        let empty = Value::Mapping(Mapping::new());
        let r = match eve.get("redis") {
            None | Some(Value::Null) => &empty,
            Some(v @ Value::Mapping(_)) => v,
            Some(_) => bail!("outputs.eve-log.redis: expected a map of options"),
        };
        let get = |k: &str| r.get(k).and_then(scalar);
        let mut s = vigil_output::RedisSettings::default();
        if let Some(v) = get("server") {
            if v.trim().is_empty() {
                bail!("outputs.eve-log.redis.server: empty");
            }
            s.server = v.trim().to_string();
        }
        if let Some(v) = get("port") {
            s.port = match v.trim().parse::<u16>() {
                Ok(p) if p > 0 => p,
                _ => bail!("outputs.eve-log.redis.port: '{v}' is not a port (1-65535)"),
            };
        }
        if let Some(v) = get("key") {
            if v.is_empty() {
                bail!("outputs.eve-log.redis.key: empty (the list key, channel or stream to write to)");
            }
            s.key = v;
        } else if r.get("key").is_some() {
            bail!("outputs.eve-log.redis.key: expected a name");
        }
        s.username = get("username").filter(|v| !v.is_empty());
        s.password = get("password").filter(|v| !v.is_empty());
        let maxlen = match get("stream-maxlen") {
            None => 100_000,
            Some(v) => v.trim().parse::<u64>().map_err(|_| {
                anyhow::anyhow!(
                    "outputs.eve-log.redis.stream-maxlen: '{v}' is not a count (0: no trimming)"
                )
            })?,
        };
        let exact = get("stream-trim-exact").is_some_and(|v| truthy(&v));
        let mode = get("mode").unwrap_or_else(|| "list".to_string());
        s.mode = vigil_output::RedisMode::parse(&mode, maxlen, exact).ok_or_else(|| {
            anyhow::anyhow!(
                "outputs.eve-log.redis.mode: '{mode}' is not list, lpush, rpush, channel, publish, stream or xadd"
            )
        })?;
        if let Some(p) = r.get("pipelining") {
            let enabled = p
                .get("enabled")
                .and_then(scalar)
                .is_some_and(|v| truthy(&v));
            if enabled {
                s.batch_size = match p.get("batch-size").and_then(scalar) {
                    None => 10,
                    Some(v) => match v.trim().parse::<usize>() {
                        Ok(n) if (1..=100_000).contains(&n) => n,
                        _ => bail!(
                            "outputs.eve-log.redis.pipelining.batch-size: '{v}' is not a count from 1 to 100000"
                        ),
                    },
                };
            }
        }
        if let Some(v) = get("buffer-size") {
            s.buffer_size = match v.trim().parse::<usize>() {
                Ok(n) if (1..=10_000_000).contains(&n) => n,
                _ => bail!(
                    "outputs.eve-log.redis.buffer-size: '{v}' is not a record count from 1 to 10000000"
                ),
            };
        }
        if let Some(v) = get("flush-timeout") {
            s.flush_timeout = match v.trim().parse::<f64>() {
                Ok(x) if (0.0..=3600.0).contains(&x) => std::time::Duration::from_secs_f64(x),
                _ => bail!(
                    "outputs.eve-log.redis.flush-timeout: '{v}' is not a number of seconds from 0 to 3600"
                ),
            };
        }
        Ok(Some(s))
    }

    /// `flow.rate-tracking` (Suricata 8+'s elephant flows): `None` when
    /// the section is absent; with it, `bytes` (a size) and `interval`
    /// (seconds) are both required, as in Suricata.
    pub fn flow_rate_tracking(&self) -> Result<Option<vigil_engine::RateConfig>> {
        if self.get("flow.rate-tracking").is_none() {
            return Ok(None);
        }
        let Some(b) = self.get_str("flow.rate-tracking.bytes") else {
            bail!("flow.rate-tracking: no value for bytes");
        };
        let bytes = parse_size(&b)
            .map_err(|e| anyhow::anyhow!("flow.rate-tracking.bytes: invalid value '{b}': {e}"))?;
        let Some(i) = self.get_str("flow.rate-tracking.interval") else {
            bail!("flow.rate-tracking: no value for interval");
        };
        let interval: u16 = i.trim().parse().map_err(|_| {
            anyhow::anyhow!("flow.rate-tracking.interval: '{i}' is not a number of seconds")
        })?;
        vigil_engine::RateConfig::new(bytes, interval)
            .map(Some)
            .map_err(|e| anyhow::anyhow!(e))
    }

    /// `flow.memcap` in bytes, if set.
    pub fn flow_memcap(&self) -> Result<Option<u64>> {
        match self.get_str("flow.memcap") {
            Some(s) => parse_size(&s).map(Some),
            None => Ok(None),
        }
    }
}

pub fn truthy(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "yes" | "true" | "on" | "1" | "enabled"
    )
}

/// A value that turns a default-on option off (Suricata's
/// `ConfValIsFalse`, plus `disable`/`disabled` beside `truthy`'s `enabled`).
pub fn falsy(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "no" | "false" | "off" | "0" | "disable" | "disabled"
    )
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "yes".into() } else { "no".into() }),
        _ => None,
    }
}

/// The `datasets:` section (Suricata's): `defaults` (`memcap`,
/// `hashsize`), `rules` (`allow-absolute-filenames`, `allow-write`) and
/// one entry per set (`type`, `load`, `save`, `state`, `memcap`,
/// `hashsize`). `data-dir` (default: the log directory) holds the rules'
/// `save`/`state` files and the config sets' relative paths.
pub fn dataset_config(cfg: &Config, log_dir: &Path) -> Result<vigil_detect::DatasetConfig> {
    use vigil_rules::{DatasetDecl, DatasetType};
    let mut out = vigil_detect::DatasetConfig::default();
    out.paths.data_dir = match cfg.get_str("data-dir") {
        Some(d) => cfg.resolve(&d),
        None => log_dir.to_path_buf(),
    };
    out.paths.rule_dir = cfg.get_str("default-rule-path").map(|d| cfg.resolve(&d));
    out.paths.allow_absolute = cfg
        .get_str("datasets.rules.allow-absolute-filenames")
        .is_some_and(|v| truthy(&v));
    out.paths.deny_write = cfg
        .get_str("datasets.rules.allow-write")
        .is_some_and(|v| !truthy(&v));
    let size = |v: Option<&Value>, what: &str| -> Result<Option<u64>> {
        v.and_then(scalar)
            .map(|s| parse_size(&s).with_context(|| format!("datasets: {what}")))
            .transpose()
    };
    let mut entries: Vec<(String, &Value)> = Vec::new();
    match cfg.get("datasets") {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Mapping(m)) => {
            for (k, v) in m {
                if let Some(k) = scalar(k) {
                    entries.push((k, v));
                }
            }
        }
        // Suricata 5's list form: `- name: {...}`.
        Some(Value::Sequence(items)) => {
            for it in items {
                if let Value::Mapping(m) = it {
                    for (k, v) in m {
                        if let Some(k) = scalar(k) {
                            entries.push((k, v));
                        }
                    }
                }
            }
        }
        Some(other) => bail!("datasets: {other:?} is not a mapping"),
    }
    for (name, v) in entries {
        match name.as_str() {
            "defaults" => {
                out.default_memcap = size(v.get("memcap"), "defaults.memcap")?;
                out.default_hashsize = size(v.get("hashsize"), "defaults.hashsize")?
                    .map(|h| u32::try_from(h).context("datasets: defaults.hashsize too large"))
                    .transpose()?;
            }
            "rules" => {}
            _ => {
                let field = |k: &str| v.get(k).and_then(scalar);
                let ty = match field("type") {
                    Some(t) => Some(
                        DatasetType::parse(&t)
                            .with_context(|| format!("datasets.{name}.type: bad type '{t}'"))?,
                    ),
                    None => None,
                };
                let state = field("state");
                if state.is_some() && (field("load").is_some() || field("save").is_some()) {
                    bail!("datasets.{name}: 'state' cannot be mixed with 'load' or 'save'");
                }
                out.sets.push(DatasetDecl {
                    name: name.clone(),
                    ty,
                    load: state.clone().or_else(|| field("load")),
                    save: state.clone().or_else(|| field("save")),
                    state: state.is_some(),
                    memcap: size(v.get("memcap"), &format!("{name}.memcap"))?,
                    hashsize: size(v.get("hashsize"), &format!("{name}.hashsize"))?
                        .map(|h| u32::try_from(h).unwrap_or(u32::MAX)),
                });
            }
        }
    }
    Ok(out)
}

/// Parses Suricata sizes: `128mb`, `128 MiB`, `1gb`, `4kb`, `1048576`
/// (the rule language's parser, [`vigil_rules::parse_size`]).
pub fn parse_size(s: &str) -> Result<u64> {
    vigil_rules::parse_size(s).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geoip_database_setting() {
        let mut c = Config {
            dir: Some(PathBuf::from("/etc/vigil")),
            ..Config::default()
        };
        assert_eq!(c.geoip_database(), None);
        c.set("geoip-database=GeoLite2-Country.mmdb").unwrap();
        assert_eq!(
            c.geoip_database(),
            Some(PathBuf::from("/etc/vigil/GeoLite2-Country.mmdb"))
        );
        c.set("geoip-database=/usr/share/GeoIP/c.mmdb").unwrap();
        assert_eq!(
            c.geoip_database(),
            Some(PathBuf::from("/usr/share/GeoIP/c.mmdb"))
        );
    }

    #[test]
    fn reputation_settings() {
        let mut c = Config {
            dir: Some(PathBuf::from("/etc/vigil")),
            ..Config::default()
        };
        assert!(c.reputation_files().unwrap().is_none());
        c.set("reputation-categories-file=iprep/categories.txt")
            .unwrap();
        assert!(c.reputation_files().is_err());
        let root: Value = serde_yaml::from_str(
            "reputation-categories-file: /r/cats.txt\ndefault-reputation-path: rep\nreputation-files:\n  - a.list\n  - /abs/b.list\n",
        )
        .unwrap();
        let c = Config {
            root,
            dir: Some(PathBuf::from("/etc/vigil")),
        };
        let (cats, files) = c.reputation_files().unwrap().unwrap();
        assert_eq!(cats, PathBuf::from("/r/cats.txt"));
        assert_eq!(
            files,
            vec![
                PathBuf::from("/etc/vigil/rep/a.list"),
                PathBuf::from("/abs/b.list")
            ]
        );
        let root: Value = serde_yaml::from_str("reputation-files:\n  - a.list\n").unwrap();
        assert!(Config { root, dir: None }.reputation_files().is_err());
    }

    #[test]
    fn set_creates_nested_keys() {
        let mut c = Config::default();
        c.set("vars.address-groups.HOME_NET=[10.0.0.0/8]").unwrap();
        assert_eq!(
            c.string_map("vars.address-groups"),
            vec![("HOME_NET".to_string(), "[10.0.0.0/8]".to_string())]
        );
        assert!(c.set("novalue").is_err());
    }

    #[test]
    fn yaml_with_directive_and_outputs() {
        let dir = std::env::temp_dir().join(format!("vigil-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.yaml");
        std::fs::write(
            &p,
            "%YAML 1.1\n---\nvars:\n  port-groups:\n    HTTP_PORTS: \"8080\"\noutputs:\n  - eve-log:\n      types:\n        - alert:\n            payload: yes\nflow:\n  memcap: 64mb\n",
        )
        .unwrap();
        let c = Config::load(&p).unwrap();
        assert!(c.eve_alert_flag("payload"));
        assert!(!c.eve_alert_flag("packet"));
        assert_eq!(c.flow_memcap().unwrap(), Some(64 << 20));
        assert_eq!(c.string_map("vars.port-groups")[0].1, "8080");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn flow_rate_tracking_settings() {
        let dir = std::env::temp_dir().join(format!("vigil-cfg-rate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.yaml");
        let c = |y: &str| {
            std::fs::write(&p, y).unwrap();
            Config::load(&p).unwrap()
        };
        assert_eq!(
            c("flow:\n  memcap: 1mb\n").flow_rate_tracking().unwrap(),
            None
        );
        let r = c("flow:\n  rate-tracking:\n    bytes: 1mb\n    interval: 10\n")
            .flow_rate_tracking()
            .unwrap()
            .unwrap();
        assert_eq!((r.bytes, r.interval), (1 << 20, 10));
        for bad in [
            "flow:\n  rate-tracking:\n    interval: 10\n",
            "flow:\n  rate-tracking:\n    bytes: 1mb\n",
            "flow:\n  rate-tracking:\n    bytes: lots\n    interval: 10\n",
            "flow:\n  rate-tracking:\n    bytes: 1mb\n    interval: 0\n",
            "flow:\n  rate-tracking:\n    bytes: 1mb\n    interval: 99999\n",
        ] {
            let e = c(bad).flow_rate_tracking().unwrap_err().to_string();
            assert!(e.contains("flow.rate-tracking"), "{bad}: {e}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn netflow_is_logged_only_when_listed_flow_by_default() {
        let root = |y: &str| Config {
            root: parse_yaml(y, Path::new("t.yaml")).unwrap(),
            ..Config::default()
        };
        let none = Config::default();
        assert!(none.eve_logs_type("flow"));
        assert!(!none.eve_lists_type("netflow"));
        let listed = root("outputs:\n  - eve-log:\n      types:\n        - alert\n        - netflow\n        - http:\n            extended: yes\n");
        assert!(listed.eve_lists_type("netflow"));
        assert!(listed.eve_logs_type("http"));
        assert!(!listed.eve_logs_type("flow"));
        let no_list = root("outputs:\n  - eve-log:\n      filename: eve.json\n");
        assert!(no_list.eve_logs_type("flow"));
        assert!(!no_list.eve_lists_type("netflow"));
        assert!(no_list.eve_anomaly_kind("applayer"));
        assert!(!listed.eve_anomaly_kind("applayer"));
        let anomaly = |a: &str| {
            root(&format!(
                "outputs:\n  - eve-log:\n      types:\n        - anomaly:\n{a}"
            ))
            .eve_anomaly_kind("applayer")
        };
        assert!(anomaly("            enabled: yes\n"));
        assert!(!anomaly("            enabled: no\n"));
        assert!(!anomaly("            types:\n              applayer: no\n"));
        assert!(anomaly("            types:\n              decode: yes\n"));
        // decode and stream are off unless set, as in Suricata.
        let kinds = |a: &str| {
            let c = root(&format!(
                "outputs:\n  - eve-log:\n      types:\n        - anomaly:\n{a}"
            ));
            (c.eve_anomaly_kind("decode"), c.eve_anomaly_kind("stream"))
        };
        assert_eq!(kinds("            enabled: yes\n"), (false, false));
        assert_eq!(
            kinds("            types:\n              decode: yes\n              stream: yes\n"),
            (true, true)
        );
        assert_eq!(
            kinds("            enabled: no\n            types:\n              decode: yes\n"),
            (false, false)
        );
        assert!(!no_list.eve_anomaly_kind("decode"));
    }

    fn redis_cfg(eve: &str) -> Result<Option<vigil_output::RedisSettings>> {
        let yaml = format!("outputs:\n  - eve-log:\n{eve}");
        let root = parse_yaml(&yaml, Path::new("t.yaml")).unwrap();
        Config { root, dir: None }.eve_redis()
    }

    #[test]
    fn eve_redis_defaults_and_options() {
        use vigil_output::RedisMode;
        assert_eq!(redis_cfg("      filetype: regular\n").unwrap(), None);
        assert_eq!(redis_cfg("      filename: e.json\n").unwrap(), None);
        let d = redis_cfg("      filetype: redis\n").unwrap().unwrap();
        assert_eq!(d, vigil_output::RedisSettings::default());
        assert_eq!(
            (d.server.as_str(), d.port, d.key.as_str()),
            ("127.0.0.1", 6379, "suricata")
        );
        let s = redis_cfg(
            "      filetype: redis\n      redis:\n        server: 127.0.0.2\n        port: 7000\n        mode: stream\n        key: k\n        stream-maxlen: 50\n        stream-trim-exact: yes\n        pipelining:\n          enabled: yes\n        buffer-size: 8\n        flush-timeout: 0.5\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.server, "127.0.0.2");
        assert_eq!(s.port, 7000);
        assert_eq!(s.key, "k");
        assert_eq!(
            s.mode,
            RedisMode::Xadd {
                maxlen: 50,
                exact: true
            }
        );
        assert_eq!(s.batch_size, 10);
        assert_eq!(s.buffer_size, 8);
        assert_eq!(s.flush_timeout, std::time::Duration::from_millis(500));
        let p = redis_cfg("      filetype: redis\n      redis:\n        mode: channel\n        pipelining:\n          enabled: no\n          batch-size: 50\n").unwrap().unwrap();
        assert_eq!((p.mode, p.batch_size), (RedisMode::Publish, 1));
    }

    #[test]
    fn eve_redis_bad_options_name_the_option() {
        let err = |eve: &str| format!("{:#}", redis_cfg(eve).unwrap_err());
        assert!(err("      filetype: syslog\n").contains("outputs.eve-log.filetype"));
        let r = "      filetype: redis\n      redis:\n";
        assert!(err(&format!("{r}        mode: queue\n"))
            .contains("outputs.eve-log.redis.mode: 'queue'"));
        assert!(err(&format!("{r}        port: 70000\n"))
            .contains("outputs.eve-log.redis.port: '70000'"));
        assert!(err(&format!("{r}        port: 0\n")).contains("outputs.eve-log.redis.port"));
        assert!(err(&format!("{r}        key:\n")).contains("outputs.eve-log.redis.key"));
        assert!(err(&format!("{r}        key: ''\n")).contains("outputs.eve-log.redis.key"));
        assert!(err(&format!("{r}        server: ''\n")).contains("outputs.eve-log.redis.server"));
        assert!(err(&format!(
            "{r}        pipelining:\n          enabled: yes\n          batch-size: 0\n"
        ))
        .contains("outputs.eve-log.redis.pipelining.batch-size"));
        assert!(err(&format!(
            "{r}        mode: stream\n        stream-maxlen: -1\n"
        ))
        .contains("outputs.eve-log.redis.stream-maxlen"));
        assert!(err(&format!("{r}        buffer-size: 0\n"))
            .contains("outputs.eve-log.redis.buffer-size"));
        assert!(err(&format!("{r}        flush-timeout: soon\n"))
            .contains("outputs.eve-log.redis.flush-timeout"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4kb").unwrap(), 4096);
        assert_eq!(parse_size("1gb").unwrap(), 1 << 30);
        assert_eq!(parse_size("12").unwrap(), 12);
        assert!(parse_size("lots").is_err());
        // Suricata's own configuration writes binary units with a space.
        assert_eq!(parse_size("128 MiB").unwrap(), 128 << 20);
        assert_eq!(parse_size("32 KiB").unwrap(), 32 << 10);
        assert_eq!(parse_size("1.5 GiB").unwrap(), 3 << 29);
    }
}

/// Suricata's XFF settings for alerts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XffSettings {
    /// Replace the client address instead of adding `alert.xff`.
    pub overwrite: bool,
    /// Use the last address of the header's list (reverse proxy) rather
    /// than the first.
    pub reverse: bool,
    /// Header name, lower case.
    pub header: String,
}
