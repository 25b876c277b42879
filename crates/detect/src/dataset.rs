//! `dataset` and `datarep`: named sets of values (strings, MD5 / SHA-256
//! digests, IPv4 / IP addresses), global to the engine, that rules look
//! buffers up in, add them to, or remove them from; `datarep` sets carry a
//! 16-bit reputation per value.
//!
//! Sets are shared by all flows, and flows live on different workers, so
//! a worker cannot decide a `dataset` keyword. As for `xbits`
//! ([`crate::xbits`]), the worker verifies everything else of the rule
//! and, when that matched, raises a deferred event carrying, for each
//! dataset keyword, the (transformed) buffers it would look at. The
//! events meet in one place in input order (the ordered merge offline,
//! the output thread live), which runs the rule's keywords in rule order
//! against the one [`Datasets`] table: the first that fails ends the rule
//! (no alert; the effects of the keywords before it stay, as in
//! Suricata, where keywords run left to right). Offline the result is
//! the same for any number of workers.
//!
//! A keyword matches as Suricata's `DetectDatasetBufferMatch`: `isset`
//! when some buffer is in the set, `isnotset` when some buffer is not,
//! `set` when some buffer was added (it was not there: a rule with `set`
//! alerts on new values only), `unset` when some buffer was removed;
//! `datarep` when some buffer is in the set with a reputation that passes
//! the comparison. Empty buffers never match.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use vigil_rules::{DatasetCmd, DatasetType, RepOp};

/// Suricata's default memcap of one set (THASH_DEFAULT_MEMCAP).
pub const DEFAULT_MEMCAP: u64 = 16 << 20;
/// Suricata's default hash size (accepted; Vigil sizes its tables itself).
pub const DEFAULT_HASHSIZE: u32 = 4096;
/// Bytes counted against the memcap for each value besides its own bytes
/// (the hash entry, its reputation and bookkeeping).
pub const ENTRY_OVERHEAD: u64 = 48;

/// What a rule's dataset keyword does with the value(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DsTest {
    Cmd(DatasetCmd),
    Rep(RepOp, u16),
}

/// Where the buffer of a dataset keyword comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DsSource {
    /// Index into [`crate::CompiledRule::buffers`].
    Packet(u32),
    /// Index into the rule's transaction lists ([`crate::AppSpec::lists`]).
    Tx(u32),
}

/// One `dataset` / `datarep` keyword of a compiled rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetOp {
    /// Index into [`Datasets::specs`].
    pub set: u32,
    pub test: DsTest,
    pub src: DsSource,
}

impl DatasetOp {
    /// Whether the keyword may change its set.
    pub fn writes(&self) -> bool {
        matches!(
            self.test,
            DsTest::Cmd(DatasetCmd::Set) | DsTest::Cmd(DatasetCmd::Unset)
        )
    }
}

/// A declared set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetSpec {
    pub name: String,
    pub ty: DatasetType,
    /// File read at start (`load`, or `state`).
    pub load: Option<PathBuf>,
    /// File written at exit (`save`, or `state`).
    pub save: Option<PathBuf>,
    /// `state`: the load file may be missing (first run).
    pub state: bool,
    pub memcap: u64,
    pub hashsize: u32,
}

/// Counters of one set, for stats.log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetStats {
    /// Values read from its file.
    pub loaded: u64,
    /// Lines of its file that could not be read.
    pub bad_lines: u64,
    /// Values added by `set`.
    pub added: u64,
    /// Values removed by `unset`.
    pub removed: u64,
    /// Additions (file or `set`) refused because the memcap was reached.
    pub memcap_refused: u64,
}

/// Counters of all sets together, for stats.log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DatasetStats {
    /// Deferred rule matches resolved against the sets.
    pub events: u64,
    /// Of those, the ones a dataset keyword failed (no alert).
    pub failed: u64,
    pub added: u64,
    pub removed: u64,
    pub memcap_refused: u64,
}

/// The values of one set.
#[derive(Debug, Clone, Default)]
pub struct SetData {
    /// Value (normalised: see [`key_of`]) -> reputation (0 without).
    map: HashMap<Box<[u8]>, u16>,
    /// Bytes counted against the memcap.
    used: u64,
    pub stats: SetStats,
}

impl SetData {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Bytes counted against the memcap.
    pub fn used(&self) -> u64 {
        self.used
    }

    pub fn get(&self, key: &[u8]) -> Option<u16> {
        self.map.get(key).copied()
    }

    /// Adds `key`: `Some(true)` when added, `Some(false)` when it was
    /// there, `None` when the memcap refused it.
    pub fn add(&mut self, key: &[u8], rep: u16, memcap: u64) -> Option<bool> {
        if let Some(r) = self.map.get_mut(key) {
            *r = rep;
            return Some(false);
        }
        let cost = key.len() as u64 + ENTRY_OVERHEAD;
        if self.used + cost > memcap {
            self.stats.memcap_refused += 1;
            return None;
        }
        self.used += cost;
        self.map.insert(key.into(), rep);
        Some(true)
    }

    /// Removes `key`; true when it was there.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        if self.map.remove(key).is_some() {
            self.used -= key.len() as u64 + ENTRY_OVERHEAD;
            true
        } else {
            false
        }
    }
}

/// A value of type `ty` as the set holds it: `None` when `data` cannot be
/// one (an MD5 set looked up with other than 16 bytes ...). An `ip` set
/// holds 16 bytes; an IPv4 address is its 4 bytes followed by 12 zeros
/// (Suricata's form), so `ip.src` of an IPv4 packet finds it.
pub fn key_of(ty: DatasetType, data: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    use std::borrow::Cow;
    match (ty, data.len()) {
        (_, 0) => None,
        (DatasetType::String, _) => Some(Cow::Borrowed(data)),
        (DatasetType::Md5, 16) | (DatasetType::Sha256, 32) | (DatasetType::Ipv4, 4) => {
            Some(Cow::Borrowed(data))
        }
        (DatasetType::Ip, 16) => Some(Cow::Borrowed(data)),
        (DatasetType::Ip, 4) => {
            let mut k = [0u8; 16];
            k[..4].copy_from_slice(data);
            Some(Cow::Owned(k.to_vec()))
        }
        _ => None,
    }
}

/// Parses one value as written in a file (base64, hex, address).
pub fn parse_value(ty: DatasetType, s: &str) -> Result<Vec<u8>, String> {
    match ty {
        DatasetType::String => {
            let v = vigil_applayer::transforms::base64_decode(
                s.as_bytes(),
                vigil_applayer::transforms::Base64Mode::Strict,
            )
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("bad base64 '{}'", short(s)))?;
            Ok(v)
        }
        DatasetType::Md5 | DatasetType::Sha256 => {
            let n = if ty == DatasetType::Md5 { 16 } else { 32 };
            let b = s.as_bytes();
            if b.len() != n * 2 {
                return Err(format!(
                    "'{}' is not {} hex digits ({})",
                    short(s),
                    n * 2,
                    ty.as_str()
                ));
            }
            b.chunks(2)
                .map(|p| {
                    std::str::from_utf8(p)
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .ok_or_else(|| format!("'{}' is not hex", short(s)))
                })
                .collect()
        }
        DatasetType::Ipv4 => s
            .parse::<std::net::Ipv4Addr>()
            .map(|a| a.octets().to_vec())
            .map_err(|_| format!("'{}' is not an IPv4 address", short(s))),
        DatasetType::Ip => {
            let a: IpAddr = s
                .parse()
                .map_err(|_| format!("'{}' is not an IP address", short(s)))?;
            let mut k = [0u8; 16];
            match a {
                IpAddr::V4(v4) => k[..4].copy_from_slice(&v4.octets()),
                IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                    Some(v4) => k[..4].copy_from_slice(&v4.octets()),
                    None => k = v6.octets(),
                },
            }
            Ok(k.to_vec())
        }
    }
}

/// One value as a line of a file (the inverse of [`parse_value`]).
pub fn format_value(ty: DatasetType, key: &[u8]) -> String {
    match ty {
        DatasetType::String => base64_encode(key),
        DatasetType::Md5 | DatasetType::Sha256 => key.iter().map(|b| format!("{b:02x}")).collect(),
        DatasetType::Ipv4 => match <[u8; 4]>::try_from(key) {
            Ok(a) => std::net::Ipv4Addr::from(a).to_string(),
            Err(_) => String::new(),
        },
        DatasetType::Ip => match <[u8; 16]>::try_from(key) {
            Ok(a) if a[4..].iter().all(|&b| b == 0) => {
                std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string()
            }
            Ok(a) => std::net::Ipv6Addr::from(a).to_string(),
            Err(_) => String::new(),
        },
    }
}

fn short(s: &str) -> &str {
    let mut end = s.len().min(40);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Standard base64 with padding.
pub fn base64_encode(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        out.push(A[(n >> 18) as usize & 63] as char);
        out.push(A[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            A[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            A[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// Reads a set's file text into `data`: one value per line, optionally
/// followed by `,<reputation>` (0..65535). Empty lines are skipped. A bad
/// line is reported (`file:line: message`) and skipped; the rest loads.
/// Values beyond the memcap are refused and counted.
pub fn load_text(spec: &SetSpec, file: &str, text: &str, data: &mut SetData) -> Vec<String> {
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r').trim();
        if line.is_empty() {
            continue;
        }
        let (val, rep) = match line.split_once(',') {
            Some((v, r)) => match r.trim().parse::<u16>() {
                Ok(r) => (v.trim(), r),
                Err(_) => {
                    errors.push(format!(
                        "{file}:{}: dataset {}: bad reputation '{}' (0..65535)",
                        i + 1,
                        spec.name,
                        short(r)
                    ));
                    data.stats.bad_lines += 1;
                    continue;
                }
            },
            None => (line, 0),
        };
        match parse_value(spec.ty, val) {
            Ok(k) => {
                if data.add(&k, rep, spec.memcap).is_some() {
                    data.stats.loaded += 1;
                }
            }
            Err(e) => {
                errors.push(format!("{file}:{}: dataset {}: {e}", i + 1, spec.name));
                data.stats.bad_lines += 1;
            }
        }
    }
    errors
}

/// A set's values as its file holds them, one per line, sorted (so that
/// the file is the same whatever the order values were added in).
pub fn save_text(spec: &SetSpec, data: &SetData) -> String {
    let mut lines: Vec<String> = data.map.keys().map(|k| format_value(spec.ty, k)).collect();
    lines.sort_unstable();
    let mut out = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Every declared set and its values.
#[derive(Debug, Clone, Default)]
pub struct Datasets {
    pub specs: Vec<SetSpec>,
    pub data: Vec<SetData>,
    pub stats: DatasetStats,
}

impl Datasets {
    /// The index of the set called `name`.
    pub fn find(&self, name: &str) -> Option<u32> {
        self.specs
            .iter()
            .position(|s| s.name == name)
            .map(|i| i as u32)
    }

    /// Adds a set (its values are loaded by [`Self::load_files`]).
    pub fn declare(&mut self, spec: SetSpec) -> u32 {
        self.specs.push(spec);
        self.data.push(SetData::default());
        (self.specs.len() - 1) as u32
    }

    /// Reads every set's `load` file. Returns the problems: a missing
    /// file (except a `state` one, which the first run has not written
    /// yet), and each bad line.
    pub fn load_files(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for (spec, data) in self.specs.iter().zip(self.data.iter_mut()) {
            let Some(path) = &spec.load else { continue };
            match std::fs::read(path) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    errors.extend(load_text(spec, &path.display().to_string(), &text, data));
                }
                Err(e) if spec.state && e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => errors.push(format!(
                    "dataset {}: cannot read '{}': {e}",
                    spec.name,
                    path.display()
                )),
            }
        }
        errors
    }

    /// Writes every set that has a `save` (or `state`) file. Returns the
    /// files written and the problems.
    pub fn save_files(&self) -> (Vec<PathBuf>, Vec<String>) {
        let mut written = Vec::new();
        let mut errors = Vec::new();
        for (spec, data) in self.specs.iter().zip(&self.data) {
            let Some(path) = &spec.save else { continue };
            let res = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| std::fs::write(path, save_text(spec, data)));
            match res {
                Ok(()) => written.push(path.clone()),
                Err(e) => errors.push(format!(
                    "dataset {}: cannot write '{}': {e}",
                    spec.name,
                    path.display()
                )),
            }
        }
        (written, errors)
    }

    /// Runs a matched rule's dataset keywords, in rule order, with the
    /// buffers the worker captured for each (`values[i]` for `ops[i]`):
    /// true when every keyword matched. Keywords before a failing one keep
    /// their effects.
    pub fn resolve(&mut self, ops: &[DatasetOp], values: &[Box<[Box<[u8]>]>]) -> bool {
        self.stats.events += 1;
        for (i, op) in ops.iter().enumerate() {
            let bufs: &[Box<[u8]>] = values.get(i).map_or(&[], |v| v);
            if !self.apply(op, bufs) {
                self.stats.failed += 1;
                return false;
            }
        }
        true
    }

    /// One keyword against its buffers (Suricata: the buffers of a
    /// multi-buffer are tried in order until one matches).
    pub fn apply(&mut self, op: &DatasetOp, bufs: &[Box<[u8]>]) -> bool {
        let (Some(spec), Some(data)) = (
            self.specs.get(op.set as usize),
            self.data.get_mut(op.set as usize),
        ) else {
            return false;
        };
        for b in bufs {
            if b.is_empty() {
                continue;
            }
            let key = key_of(spec.ty, b);
            let hit = match op.test {
                DsTest::Cmd(DatasetCmd::IsSet) => key.is_some_and(|k| data.get(&k).is_some()),
                DsTest::Cmd(DatasetCmd::IsNotSet) => key.is_none_or(|k| data.get(&k).is_none()),
                DsTest::Cmd(DatasetCmd::Set) => match key {
                    Some(k) => match data.add(&k, 0, spec.memcap) {
                        Some(true) => {
                            data.stats.added += 1;
                            self.stats.added += 1;
                            true
                        }
                        Some(false) => false,
                        None => {
                            self.stats.memcap_refused += 1;
                            false
                        }
                    },
                    None => false,
                },
                DsTest::Cmd(DatasetCmd::Unset) => match key {
                    Some(k) if data.remove(&k) => {
                        data.stats.removed += 1;
                        self.stats.removed += 1;
                        true
                    }
                    _ => false,
                },
                DsTest::Rep(op, v) => key
                    .and_then(|k| data.get(&k))
                    .is_some_and(|r| op.matches(r, v)),
            };
            if hit {
                return true;
            }
        }
        false
    }
}

/// Where set files are found.
#[derive(Debug, Clone, Default)]
pub struct DatasetPaths {
    /// Suricata's data directory: `save` and `state` files of rules, and
    /// relative paths of sets declared in the config.
    pub data_dir: PathBuf,
    /// `default-rule-path`: where a rule's relative `load` file is looked
    /// for when it is not next to the rule file.
    pub rule_dir: Option<PathBuf>,
    /// `datasets.rules.allow-absolute-filenames`.
    pub allow_absolute: bool,
    /// `datasets.rules.allow-write` (default true).
    pub deny_write: bool,
}

/// The datasets configuration: the config's `datasets:` sets and defaults,
/// and the paths.
#[derive(Debug, Clone, Default)]
pub struct DatasetConfig {
    pub paths: DatasetPaths,
    /// `datasets.defaults.memcap` / `hashsize`.
    pub default_memcap: Option<u64>,
    pub default_hashsize: Option<u32>,
    /// Sets declared in the config, with paths as written.
    pub sets: Vec<vigil_rules::DatasetDecl>,
    /// The GeoIP database `geoip` rules read (`geoip-database`): not a
    /// dataset, but other data from outside the rules, passed along with
    /// the sets. `None`: `geoip` rules are skipped as invalid.
    pub geoip: Option<std::sync::Arc<crate::geoip::GeoIpDb>>,
}

impl DatasetConfig {
    /// A config path: absolute as is; else under the data directory, and
    /// for a `load` file that is not there, as written (Suricata's
    /// DatasetGetPath).
    fn config_path(&self, p: &str, load: bool) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            return path.to_path_buf();
        }
        let in_data = self.paths.data_dir.join(path);
        if load && !in_data.exists() {
            return path.to_path_buf();
        }
        in_data
    }

    /// A rule's `save` / `state` path: under the data directory; absolute
    /// paths and `..` only with `allow-absolute-filenames`.
    fn rule_save_path(&self, p: &str) -> Result<PathBuf, String> {
        if self.paths.deny_write {
            return Err(
                "rules with save/state datasets are disabled (datasets.rules.allow-write)".into(),
            );
        }
        let path = Path::new(p);
        if !self.paths.allow_absolute {
            if path.is_absolute() {
                return Err(format!("absolute path not allowed: '{p}'"));
            }
            if path
                .components()
                .any(|c| c == std::path::Component::ParentDir)
            {
                return Err(format!("directory traversal not allowed: '{p}'"));
            }
        }
        Ok(self.paths.data_dir.join(path))
    }

    /// A rule's `load` path: next to the rule file, else under the
    /// default rule path, else as written.
    fn rule_load_path(&self, p: &str, rule_file: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            return path.to_path_buf();
        }
        if let Some(dir) = Path::new(rule_file).parent() {
            let q = dir.join(path);
            if q.exists() {
                return q;
            }
        }
        if let Some(d) = &self.paths.rule_dir {
            let q = d.join(path);
            if q.exists() {
                return q;
            }
        }
        path.to_path_buf()
    }

    fn memcap(&self, m: Option<u64>) -> u64 {
        m.filter(|&m| m > 0)
            .or(self.default_memcap)
            .unwrap_or(DEFAULT_MEMCAP)
    }

    fn hashsize(&self, h: Option<u32>) -> u32 {
        h.filter(|&h| h > 0)
            .or(self.default_hashsize)
            .unwrap_or(DEFAULT_HASHSIZE)
    }

    /// The sets the config declares (an error for one without a type).
    pub fn declare_config_sets(&self, ds: &mut Datasets) -> Vec<String> {
        let mut errors = Vec::new();
        for d in &self.sets {
            let Some(ty) = d.ty else {
                errors.push(format!("datasets.{}: no type", d.name));
                continue;
            };
            if ds.find(&d.name).is_some() {
                errors.push(format!("datasets.{}: declared twice", d.name));
                continue;
            }
            ds.declare(SetSpec {
                name: d.name.clone(),
                ty,
                load: d.load.as_deref().map(|p| self.config_path(p, true)),
                save: d.save.as_deref().map(|p| self.config_path(p, false)),
                state: d.state,
                memcap: self.memcap(d.memcap),
                hashsize: self.hashsize(d.hashsize),
            });
        }
        errors
    }

    /// The set a rule's keyword names: the one already declared (by the
    /// config or an earlier rule), which the keyword's options must agree
    /// with, else a new one, which needs a type.
    pub fn resolve_rule_set(
        &self,
        ds: &mut Datasets,
        d: &vigil_rules::DatasetDecl,
        rule_file: &str,
    ) -> Result<u32, String> {
        let (load, save) = if d.state {
            let p = self.rule_save_path(d.save.as_deref().unwrap_or(""))?;
            (Some(p.clone()), Some(p))
        } else {
            let save = d
                .save
                .as_deref()
                .map(|p| self.rule_save_path(p))
                .transpose()?;
            let load = d.load.as_deref().map(|p| self.rule_load_path(p, rule_file));
            (load, save)
        };
        if let Some(i) = ds.find(&d.name) {
            let s = &ds.specs[i as usize];
            if let Some(t) = d.ty {
                if t != s.ty {
                    return Err(format!(
                        "set '{}' is of type {}, not {}",
                        d.name,
                        s.ty.as_str(),
                        t.as_str()
                    ));
                }
            }
            if (load.is_some() && load != s.load) || (save.is_some() && save != s.save) {
                return Err(format!(
                    "set '{}' is already declared with other load/save/state files",
                    d.name
                ));
            }
            return Ok(i);
        }
        let Some(ty) = d.ty else {
            return Err(format!(
                "set '{}' is not declared and the keyword has no type",
                d.name
            ));
        };
        Ok(ds.declare(SetSpec {
            name: d.name.clone(),
            ty,
            load,
            save,
            state: d.state,
            memcap: self.memcap(d.memcap),
            hashsize: self.hashsize(d.hashsize),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ty: DatasetType, memcap: u64) -> SetSpec {
        SetSpec {
            name: "s".into(),
            ty,
            load: None,
            save: None,
            state: false,
            memcap,
            hashsize: DEFAULT_HASHSIZE,
        }
    }

    fn b(v: &[u8]) -> Box<[u8]> {
        v.into()
    }

    #[test]
    fn base64_round_trip() {
        for v in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"Mozilla/4.0 (compatible; )",
            b"\x00\xff\x10",
        ] {
            let e = base64_encode(v);
            if !v.is_empty() {
                assert_eq!(parse_value(DatasetType::String, &e).unwrap(), v);
            }
        }
        assert_eq!(
            base64_encode(b"Mozilla/4.0 (compatible; )"),
            "TW96aWxsYS80LjAgKGNvbXBhdGlibGU7ICk="
        );
    }

    #[test]
    fn file_lines_good_and_bad() {
        let s = spec(DatasetType::String, DEFAULT_MEMCAP);
        let mut d = SetData::default();
        let text = "Z29vZ2xlLmNvbQ==\n\n!!notbase64\r\nZXhhbXBsZS5jb20=,12\nYQ==,70000\nYg==,x\r\nYw==\r\n";
        let errs = load_text(&s, "f.lst", text, &mut d);
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(
            errs[0].starts_with("f.lst:3: dataset s: bad base64"),
            "{}",
            errs[0]
        );
        assert!(errs[1].starts_with("f.lst:5:"), "{}", errs[1]);
        assert!(errs[2].starts_with("f.lst:6:"), "{}", errs[2]);
        assert_eq!(d.len(), 3);
        assert_eq!(d.get(b"google.com"), Some(0));
        assert_eq!(d.get(b"example.com"), Some(12));
        assert_eq!(d.get(b"c"), Some(0));
        assert_eq!(d.stats.loaded, 3);
        assert_eq!(d.stats.bad_lines, 3);
    }

    #[test]
    fn digests_and_addresses() {
        let md5 = "d41d8cd98f00b204e9800998ecf8427e";
        let k = parse_value(DatasetType::Md5, md5).unwrap();
        assert_eq!(k.len(), 16);
        assert_eq!(format_value(DatasetType::Md5, &k), md5);
        assert!(parse_value(DatasetType::Md5, &md5[1..]).is_err());
        assert!(parse_value(DatasetType::Md5, "zz1d8cd98f00b204e9800998ecf8427e").is_err());
        let sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(parse_value(DatasetType::Sha256, sha).unwrap().len(), 32);
        assert!(parse_value(DatasetType::Sha256, md5).is_err());
        assert_eq!(
            parse_value(DatasetType::Ipv4, "10.1.2.3").unwrap(),
            vec![10, 1, 2, 3]
        );
        assert!(parse_value(DatasetType::Ipv4, "::1").is_err());
        assert!(parse_value(DatasetType::Ipv4, "10.1.2").is_err());
        // An `ip` set: IPv4 (plain or mapped) as 4 bytes and 12 zeros.
        let v4 = parse_value(DatasetType::Ip, "10.1.2.3").unwrap();
        assert_eq!(v4, parse_value(DatasetType::Ip, "::ffff:10.1.2.3").unwrap());
        assert_eq!(&v4[..4], &[10, 1, 2, 3]);
        assert_eq!(
            key_of(DatasetType::Ip, &[10, 1, 2, 3]).unwrap().as_ref(),
            &v4[..]
        );
        assert_eq!(format_value(DatasetType::Ip, &v4), "10.1.2.3");
        let v6 = parse_value(DatasetType::Ip, "2001:db8::1").unwrap();
        assert_eq!(format_value(DatasetType::Ip, &v6), "2001:db8::1");
        // Lookups of the wrong size are no value of the type.
        assert!(key_of(DatasetType::Md5, b"short").is_none());
        assert!(key_of(DatasetType::Ipv4, &[0; 16]).is_none());
        assert!(key_of(DatasetType::String, b"").is_none());
    }

    fn one_set(ty: DatasetType, memcap: u64) -> Datasets {
        let mut ds = Datasets::default();
        ds.declare(spec(ty, memcap));
        ds
    }

    fn op(test: DsTest) -> DatasetOp {
        DatasetOp {
            set: 0,
            test,
            src: DsSource::Tx(0),
        }
    }

    #[test]
    fn each_command() {
        let mut ds = one_set(DatasetType::String, DEFAULT_MEMCAP);
        let v = [b(b"ua-1")];
        let isset = op(DsTest::Cmd(DatasetCmd::IsSet));
        let isnotset = op(DsTest::Cmd(DatasetCmd::IsNotSet));
        let set = op(DsTest::Cmd(DatasetCmd::Set));
        let unset = op(DsTest::Cmd(DatasetCmd::Unset));
        assert!(!ds.apply(&isset, &v));
        assert!(ds.apply(&isnotset, &v));
        // `set` matches only when the value is new.
        assert!(ds.apply(&set, &v));
        assert!(!ds.apply(&set, &v));
        assert!(ds.apply(&isset, &v));
        assert!(!ds.apply(&isnotset, &v));
        assert!(ds.apply(&unset, &v));
        assert!(!ds.apply(&unset, &v));
        assert!(!ds.apply(&isset, &v));
        // Empty buffers never match, not even isnotset.
        assert!(!ds.apply(&isnotset, &[b(b"")]));
        assert!(!ds.apply(&set, &[b(b"")]));
        // A multi-buffer: any buffer; `set` adds the first new one only.
        let multi = [b(b"x"), b(b"y")];
        assert!(ds.apply(&set, &multi));
        assert!(ds.apply(&set, &multi));
        assert!(!ds.apply(&set, &multi));
        assert_eq!(ds.stats.added, 3);
        assert_eq!(ds.stats.removed, 1);
    }

    #[test]
    fn rule_order_and_failure() {
        let mut ds = one_set(DatasetType::String, DEFAULT_MEMCAP);
        ds.declare(SetSpec {
            name: "t".into(),
            ..spec(DatasetType::String, DEFAULT_MEMCAP)
        });
        let set_s = op(DsTest::Cmd(DatasetCmd::Set));
        let isset_t = DatasetOp {
            set: 1,
            ..op(DsTest::Cmd(DatasetCmd::IsSet))
        };
        let vals = [
            vec![b(b"a")].into_boxed_slice(),
            vec![b(b"a")].into_boxed_slice(),
        ];
        // The set happens, then the isset on the other set fails.
        assert!(!ds.resolve(&[set_s, isset_t], &vals));
        assert_eq!(ds.data[0].len(), 1);
        assert_eq!(ds.stats.failed, 1);
        // A failing first keyword stops the rule: the second never runs.
        let set_t = DatasetOp {
            set: 1,
            ..op(DsTest::Cmd(DatasetCmd::Set))
        };
        assert!(!ds.resolve(&[isset_t, set_t], &vals));
        assert!(ds.data[1].is_empty());
        assert_eq!(ds.stats.events, 2);
    }

    #[test]
    fn each_datarep_op() {
        let mut ds = one_set(DatasetType::String, DEFAULT_MEMCAP);
        let s = ds.specs[0].clone();
        load_text(&s, "r", "Yg==,200\n", &mut ds.data[0]);
        let v = [b(b"b")];
        let cases = [
            (RepOp::Gt, 199, true),
            (RepOp::Gt, 200, false),
            (RepOp::Lt, 201, true),
            (RepOp::Lt, 200, false),
            (RepOp::Ge, 200, true),
            (RepOp::Ge, 201, false),
            (RepOp::Le, 200, true),
            (RepOp::Le, 199, false),
            (RepOp::Eq, 200, true),
            (RepOp::Eq, 201, false),
            (RepOp::Ne, 201, true),
            (RepOp::Ne, 200, false),
        ];
        for (o, val, want) in cases {
            assert_eq!(ds.apply(&op(DsTest::Rep(o, val)), &v), want, "{o:?} {val}");
        }
        // A value not in the set never matches, whatever the comparison.
        assert!(!ds.apply(&op(DsTest::Rep(RepOp::Ne, 1)), &[b(b"zz")]));
        assert!(!ds.apply(&op(DsTest::Rep(RepOp::Lt, 1000)), &[b(b"zz")]));
    }

    #[test]
    fn memcap_refuses_and_counts() {
        // Room for two 4-byte values.
        let cap = 2 * (4 + ENTRY_OVERHEAD);
        let mut ds = one_set(DatasetType::Ipv4, cap);
        let set = op(DsTest::Cmd(DatasetCmd::Set));
        for i in 0..4u8 {
            ds.apply(&set, &[b(&[10, 0, 0, i])]);
        }
        assert_eq!(ds.data[0].len(), 2);
        assert_eq!(ds.data[0].used(), cap);
        assert_eq!(ds.stats.memcap_refused, 2);
        assert_eq!(ds.data[0].stats.memcap_refused, 2);
        // A removal makes room again.
        assert!(ds.apply(&op(DsTest::Cmd(DatasetCmd::Unset)), &[b(&[10, 0, 0, 0])]));
        assert!(ds.apply(&set, &[b(&[10, 0, 0, 9])]));
        // Loading counts against it too.
        let mut d = SetData::default();
        let s = spec(DatasetType::Ipv4, cap);
        load_text(&s, "f", "1.1.1.1\n2.2.2.2\n3.3.3.3\n", &mut d);
        assert_eq!((d.len(), d.stats.memcap_refused), (2, 1));
    }

    #[test]
    fn save_is_sorted_and_reloads() {
        let mut ds = one_set(DatasetType::String, DEFAULT_MEMCAP);
        let set = op(DsTest::Cmd(DatasetCmd::Set));
        for v in [&b"zeta"[..], b"alpha", b"Mozilla/4.0 (compatible; )"] {
            ds.apply(&set, &[b(v)]);
        }
        let text = save_text(&ds.specs[0], &ds.data[0]);
        assert_eq!(
            text,
            "TW96aWxsYS80LjAgKGNvbXBhdGlibGU7ICk=\nYWxwaGE=\nemV0YQ==\n"
        );
        let mut d = SetData::default();
        assert!(load_text(&ds.specs[0], "f", &text, &mut d).is_empty());
        assert_eq!(d.len(), 3);
    }

    #[test]
    fn rule_sets_declare_and_agree() {
        let cfg = DatasetConfig {
            paths: DatasetPaths {
                data_dir: PathBuf::from("/data"),
                ..DatasetPaths::default()
            },
            ..DatasetConfig::default()
        };
        let mut ds = Datasets::default();
        let decl = |ty: Option<DatasetType>| vigil_rules::DatasetDecl {
            name: "ua".into(),
            ty,
            ..Default::default()
        };
        assert!(cfg
            .resolve_rule_set(&mut ds, &decl(None), "r.rules")
            .is_err());
        assert_eq!(
            cfg.resolve_rule_set(&mut ds, &decl(Some(DatasetType::String)), "r.rules"),
            Ok(0)
        );
        // Later rules may leave the type out, not change it.
        assert_eq!(cfg.resolve_rule_set(&mut ds, &decl(None), "r.rules"), Ok(0));
        assert!(cfg
            .resolve_rule_set(&mut ds, &decl(Some(DatasetType::Md5)), "r.rules")
            .is_err());
        // save/state: under the data directory, no absolute path or `..`.
        let st = |p: &str| vigil_rules::DatasetDecl {
            name: "st".into(),
            ty: Some(DatasetType::Ipv4),
            load: Some(p.into()),
            save: Some(p.into()),
            state: true,
            ..Default::default()
        };
        let i = cfg
            .resolve_rule_set(&mut ds, &st("seen.lst"), "r.rules")
            .unwrap();
        assert_eq!(
            ds.specs[i as usize].save.as_deref(),
            Some(Path::new("/data/seen.lst"))
        );
        assert!(cfg
            .resolve_rule_set(&mut ds, &st("/etc/x"), "r.rules")
            .is_err());
        assert!(cfg
            .resolve_rule_set(&mut ds, &st("../x"), "r.rules")
            .is_err());
    }
}
