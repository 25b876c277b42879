//! IP reputation for the `iprep` keyword, loaded as Suricata's
//! reputation.c does.
//!
//! - The categories file has lines `id,shortname,description` (id 0..59;
//!   a rule names a category by its short name).
//! - Reputation files have lines `ip-or-cidr,category-id,score` (score
//!   0..127); a first line `ip,cat,score` (a header) is skipped.
//! - Lines starting with `#`, a blank or a line break are skipped; a line
//!   that does not parse is reported (file and line) and skipped.
//!
//! Lookups follow Suricata: a single address is a host entry, and a host
//! entry answers for every category (categories the file did not give it
//! score 0, as Suricata's per-host score array does); only an address
//! without a host entry is looked up in the category's netblocks, where
//! the longest prefix wins. The table is built once and shared read-only
//! (behind an `Arc`) by every rule that uses `iprep`; a lookup is one hash
//! probe for the host plus one per distinct prefix length of the
//! category's netblocks, whatever the number of entries.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// Suricata's `SREP_MAX_CATS`: category ids are 0..59.
pub const MAX_CATS: usize = 60;
/// Suricata's `SREP_MAX_VAL`: scores are 0..127.
pub const MAX_SCORE: u8 = 127;

/// Netblocks of one category and address family: for each prefix length
/// in use (longest first), the masked network and its score.
#[derive(Debug, Default)]
struct Prefixes {
    /// Prefix lengths in use, longest first.
    lens: Vec<u8>,
    nets: HashMap<(u8, u128), u8>,
}

impl Prefixes {
    fn insert(&mut self, len: u8, net: u128, score: u8) {
        if !self.lens.contains(&len) {
            self.lens.push(len);
            self.lens.sort_unstable_by(|a, b| b.cmp(a));
        }
        self.nets.insert((len, net), score);
    }

    /// The score of the longest prefix covering `addr` (`bits` wide).
    fn lookup(&self, addr: u128, bits: u8) -> Option<u8> {
        self.lens
            .iter()
            .find_map(|&len| self.nets.get(&(len, mask(addr, len, bits))).copied())
    }
}

fn mask(addr: u128, len: u8, bits: u8) -> u128 {
    if len == 0 {
        return 0;
    }
    let m = u128::MAX << (bits - len);
    let m = if bits == 32 { m & 0xffff_ffff } else { m };
    addr & m
}

/// The loaded reputation data.
#[derive(Debug, Default)]
pub struct Reputation {
    /// Short name -> category id.
    categories: HashMap<String, u8>,
    /// Single addresses: a score per category (0 where not given).
    hosts: HashMap<IpAddr, Box<[u8; MAX_CATS]>>,
    /// Netblocks by category id.
    v4: HashMap<u8, Prefixes>,
    v6: HashMap<u8, Prefixes>,
}

/// A line that was skipped, with where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub file: String,
    pub line: usize,
    pub text: String,
    pub why: String,
}

impl std::fmt::Display for BadLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: bad reputation line \"{}\": {}",
            self.file, self.line, self.text, self.why
        )
    }
}

/// Runs `apply` on each line of a list file that is not blank or a
/// comment (trailing space trimmed); the lines it refuses are returned
/// with the file, line number and reason.
fn each_line(
    file: &str,
    text: &str,
    mut apply: impl FnMut(&str) -> Result<(), String>,
) -> Vec<BadLine> {
    let mut bad = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if skipped(raw) {
            continue;
        }
        let line = raw.trim_end();
        if let Err(why) = apply(line) {
            bad.push(BadLine {
                file: file.to_string(),
                line: i + 1,
                text: line.to_string(),
                why,
            });
        }
    }
    bad
}

/// Whether Suricata skips the line (comment or blank).
fn skipped(line: &str) -> bool {
    line.is_empty() || matches!(line.as_bytes()[0], b'#' | b' ' | b'\t' | b'\r' | b'\n')
}

fn parse_num(s: &str, max: u8, what: &str) -> Result<u8, String> {
    let t = s.trim();
    match t.parse::<u16>() {
        Ok(n) if n <= u16::from(max) && !t.starts_with('+') => Ok(n as u8),
        _ => Err(format!("{what} '{t}' is not a number 0..{max}")),
    }
}

/// `ip` or `ip/len` with the network masked: (family bits, address, len).
fn parse_net(s: &str) -> Result<(u8, u128, u8, bool), String> {
    let t = s.trim();
    let (addr, len) = match t.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (t, None),
    };
    let ip: IpAddr = addr
        .parse()
        .map_err(|_| format!("'{addr}' is not an IP address"))?;
    let (bits, v) = match ip {
        IpAddr::V4(a) => (32u8, u128::from(u32::from(a))),
        IpAddr::V6(a) => (128u8, u128::from(a)),
    };
    let len = match len {
        None => bits,
        Some(l) => match l.trim().parse::<u8>() {
            Ok(n) if n <= bits => n,
            _ => return Err(format!("bad prefix length '/{l}'")),
        },
    };
    Ok((bits, mask(v, len, bits), len, t.contains('/')))
}

impl Reputation {
    /// Reads the categories file and the reputation files; `Err` only when
    /// the categories file cannot be read. Reputation files that cannot be
    /// read and bad lines are returned as problems, and skipped.
    pub fn load(categories: &Path, files: &[PathBuf]) -> Result<(Reputation, Vec<String>), String> {
        let text = std::fs::read_to_string(categories).map_err(|e| {
            format!(
                "cannot read reputation categories file {}: {e}",
                categories.display()
            )
        })?;
        let mut rep = Reputation::default();
        let mut problems: Vec<String> = rep
            .add_categories(&categories.display().to_string(), &text)
            .iter()
            .map(ToString::to_string)
            .collect();
        for f in files {
            match std::fs::read_to_string(f) {
                Ok(t) => problems.extend(
                    rep.add_scores(&f.display().to_string(), &t)
                        .iter()
                        .map(ToString::to_string),
                ),
                Err(e) => problems.push(format!(
                    "cannot read reputation file {}: {e} (skipped)",
                    f.display()
                )),
            }
        }
        Ok((rep, problems))
    }

    /// Adds the lines of a categories file (`id,shortname,description`).
    pub fn add_categories(&mut self, file: &str, text: &str) -> Vec<BadLine> {
        each_line(file, text, |line| {
            let mut parts = line.splitn(3, ',');
            let id = parts.next().unwrap_or("");
            let name = parts
                .next()
                .ok_or_else(|| "expected 'id,shortname,description'".to_string())?;
            let id = parse_num(id, (MAX_CATS - 1) as u8, "category id")?;
            let name = name.trim();
            if name.is_empty() {
                return Err("empty short name".to_string());
            }
            // Suricata keeps 31 bytes of the short name.
            let name: String = name.chars().take(31).collect();
            self.categories.retain(|_, v| *v != id);
            self.categories.insert(name, id);
            Ok(())
        })
    }

    /// Adds the lines of a reputation file (`ip-or-cidr,category,score`).
    pub fn add_scores(&mut self, file: &str, text: &str) -> Vec<BadLine> {
        each_line(file, text, |line| {
            let parts: Vec<&str> = line.split(',').collect();
            if parts.len() != 3 {
                return Err("expected 'ip,category,score'".to_string());
            }
            if parts[0] == "ip" {
                return Ok(());
            }
            let cat = parse_num(parts[1], (MAX_CATS - 1) as u8, "category")?;
            let score = parse_num(parts[2], MAX_SCORE, "score")?;
            let (bits, addr, len, cidr) = parse_net(parts[0])?;
            if cidr {
                let fam = if bits == 32 {
                    &mut self.v4
                } else {
                    &mut self.v6
                };
                fam.entry(cat).or_default().insert(len, addr, score);
            } else {
                let ip = if bits == 32 {
                    IpAddr::V4((addr as u32).into())
                } else {
                    IpAddr::V6(addr.into())
                };
                self.hosts
                    .entry(ip)
                    .or_insert_with(|| Box::new([0; MAX_CATS]))[cat as usize] = score;
            }
            Ok(())
        })
    }

    /// The id of a category short name. Id 0 cannot be named from a rule
    /// (Suricata's lookup returns 0 for "not found").
    pub fn category(&self, name: &str) -> Option<u8> {
        self.categories.get(name).copied().filter(|&id| id != 0)
    }

    /// The score of `ip` in category `cat`, if it has one.
    pub fn score(&self, ip: IpAddr, cat: u8) -> Option<u8> {
        if let Some(h) = self.hosts.get(&ip) {
            return h.get(cat as usize).copied();
        }
        match ip {
            IpAddr::V4(a) => self.v4.get(&cat)?.lookup(u128::from(u32::from(a)), 32),
            IpAddr::V6(a) => self.v6.get(&cat)?.lookup(u128::from(a), 128),
        }
    }

    /// Number of categories, host entries and netblocks (for the load
    /// summary).
    pub fn counts(&self) -> (usize, usize, usize) {
        let nets = self
            .v4
            .values()
            .chain(self.v6.values())
            .map(|p| p.nets.len())
            .sum();
        (self.categories.len(), self.hosts.len(), nets)
    }
}

/// A compiled `iprep` test.
#[derive(Clone)]
pub struct IpRepCheck {
    pub side: vigil_rules::IpRepSide,
    pub cat: u8,
    pub op: vigil_rules::IpRepOp,
    pub value: u8,
    pub rep: std::sync::Arc<Reputation>,
}

/// Without the table: a rule's debug print does not dump the reputation.
impl std::fmt::Debug for IpRepCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpRepCheck")
            .field("side", &self.side)
            .field("cat", &self.cat)
            .field("op", &self.op)
            .field("value", &self.value)
            .finish_non_exhaustive()
    }
}

impl IpRepCheck {
    /// Suricata's `DetectIPRepMatch`.
    pub fn matches(&self, src: IpAddr, dst: IpAddr) -> bool {
        use vigil_rules::{IpRepOp, IpRepSide};
        let s = || self.rep.score(src, self.cat);
        let d = || self.rep.score(dst, self.cat);
        let ok = |v: u8| self.op.matches(v, self.value);
        let notset = self.op == IpRepOp::IsNotSet;
        // `isnotset` is Suricata's `= 0` on a score that exists: for `src`
        // and `dst` a score of 0 (such as a host entry's category the
        // file did not give) counts as not set; for `any` and `both` only
        // the absence of a score does.
        match self.side {
            IpRepSide::Src => s().map_or(notset, ok),
            IpRepSide::Dst => d().map_or(notset, ok),
            IpRepSide::Any => {
                if notset {
                    s().is_none() || d().is_none()
                } else {
                    s().is_some_and(ok) || d().is_some_and(ok)
                }
            }
            IpRepSide::Both => {
                if notset {
                    s().is_none() && d().is_none()
                } else {
                    s().is_some_and(ok) && d().is_some_and(ok)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use vigil_rules::{IpRepOp, IpRepSide};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn sample() -> Reputation {
        let mut r = Reputation::default();
        assert!(r
            .add_categories(
                "cats",
                "1,BadHosts,Known bad hosts\n2,GoodHosts,Known good hosts\n# c\n\n"
            )
            .is_empty());
        let bad = r.add_scores(
            "rep",
            "ip,cat,score\n10.0.0.0/8,1,10\n10.1.0.0/16,1,50\n10.1.2.3,2,90\n192.168.0.0/16,2,127\n2001:db8::/32,1,77\n2001:db8::1,1,5\n",
        );
        assert!(bad.is_empty(), "{bad:?}");
        r
    }

    #[test]
    fn longest_prefix_and_hosts() {
        let r = sample();
        assert_eq!(r.category("BadHosts"), Some(1));
        assert_eq!(r.category("badhosts"), None);
        assert_eq!(r.score(ip("10.9.9.9"), 1), Some(10));
        assert_eq!(r.score(ip("10.1.9.9"), 1), Some(50));
        assert_eq!(r.score(ip("11.0.0.1"), 1), None);
        // A host entry answers for every category (Suricata's per-host
        // score array): category 1 is 0 there, not the netblock's 50.
        assert_eq!(r.score(ip("10.1.2.3"), 2), Some(90));
        assert_eq!(r.score(ip("10.1.2.3"), 1), Some(0));
        assert_eq!(r.score(ip("192.168.4.4"), 2), Some(127));
        assert_eq!(r.score(ip("192.168.4.4"), 1), None);
        assert_eq!(r.score(ip("2001:db8:1::9"), 1), Some(77));
        assert_eq!(r.score(ip("2001:db8::1"), 1), Some(5));
        assert_eq!(r.score(ip("2001:db9::1"), 1), None);
        assert_eq!(r.counts(), (2, 2, 4));
    }

    #[test]
    fn bad_lines_are_reported_with_file_and_line() {
        let mut r = Reputation::default();
        let bad = r.add_categories("c.txt", "1,A,a\nx,B,b\n99,C,c\n3\n2,,x\n");
        let lines: Vec<usize> = bad.iter().map(|b| b.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5]);
        assert!(bad[0]
            .to_string()
            .starts_with("c.txt:2: bad reputation line"));
        let bad = r.add_scores(
            "r.txt",
            "1.2.3.4,1,200\n1.2.3.4,1\nfoo,1,1\n1.2.3.0/33,1,1\n::1,60,1\n1.2.3.4,1,1,1\n1.2.3.4,-1,1\n1.2.3.5,1,3\n",
        );
        let lines: Vec<usize> = bad.iter().map(|b| b.line).collect();
        assert_eq!(lines, vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(r.score(ip("1.2.3.5"), 1), Some(3));
        assert_eq!(r.score(ip("1.2.3.4"), 1), None);
    }

    #[test]
    fn load_from_files() {
        let dir = std::env::temp_dir().join(format!("vigil-rep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cats = dir.join("cats.txt");
        std::fs::write(&cats, "1,BadHosts,x\nbad\n").unwrap();
        let rep = dir.join("a.list");
        std::fs::write(&rep, "ip,cat,score\n10.0.0.0/8,1,20\n\n10.0.0.1,1,x\n").unwrap();
        let missing = dir.join("missing.list");
        let (r, problems) = Reputation::load(&cats, &[rep.clone(), missing]).unwrap();
        assert_eq!(r.score(ip("10.0.0.1"), 1), Some(20));
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("cats.txt:2:"), "{problems:?}");
        assert!(problems[1].contains("a.list:4:"), "{problems:?}");
        assert!(problems[2].contains("missing.list"), "{problems:?}");
        assert!(Reputation::load(&dir.join("nope.txt"), &[rep]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn arbitrary_lines_never_panic() {
        let mut r = Reputation::default();
        let mut seed = 0x1234_5678_9abc_def0u64;
        let alphabet = b"0123456789.,:/abcdef#- \t\xff";
        for _ in 0..2000 {
            let mut line = Vec::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for k in 0..(seed % 40) {
                line.push(alphabet[((seed >> (k % 50)) as usize + k as usize) % alphabet.len()]);
            }
            let s = String::from_utf8_lossy(&line);
            let _ = r.add_categories("c", &s);
            let _ = r.add_scores("r", &s);
            let _ = r.score(ip("1.2.3.4"), (seed % 60) as u8);
        }
    }

    fn check(side: IpRepSide, op: IpRepOp, value: u8) -> IpRepCheck {
        IpRepCheck {
            side,
            cat: 1,
            op,
            value,
            rep: Arc::new(sample()),
        }
    }

    #[test]
    fn sides_and_operators() {
        let bad = ip("10.9.9.9"); // 10 in BadHosts
        let worse = ip("10.1.9.9"); // 50
        let none = ip("8.8.8.8");
        assert!(check(IpRepSide::Src, IpRepOp::Gt, 5).matches(bad, none));
        assert!(!check(IpRepSide::Src, IpRepOp::Gt, 10).matches(bad, none));
        assert!(check(IpRepSide::Src, IpRepOp::Ge, 10).matches(bad, none));
        assert!(check(IpRepSide::Src, IpRepOp::Eq, 10).matches(bad, none));
        assert!(check(IpRepSide::Src, IpRepOp::Lt, 11).matches(bad, none));
        assert!(check(IpRepSide::Src, IpRepOp::Le, 10).matches(bad, none));
        assert!(check(IpRepSide::Src, IpRepOp::Ne, 11).matches(bad, none));
        assert!(!check(IpRepSide::Dst, IpRepOp::Gt, 5).matches(bad, none));
        assert!(check(IpRepSide::Dst, IpRepOp::Gt, 5).matches(none, bad));
        assert!(check(IpRepSide::Any, IpRepOp::Gt, 5).matches(none, bad));
        assert!(!check(IpRepSide::Any, IpRepOp::Gt, 50).matches(bad, worse));
        assert!(check(IpRepSide::Both, IpRepOp::Gt, 5).matches(bad, worse));
        assert!(!check(IpRepSide::Both, IpRepOp::Gt, 20).matches(bad, worse));
        assert!(!check(IpRepSide::Both, IpRepOp::Gt, 5).matches(bad, none));
        // isset / isnotset
        assert!(check(IpRepSide::Src, IpRepOp::IsSet, 0).matches(bad, none));
        assert!(!check(IpRepSide::Src, IpRepOp::IsSet, 0).matches(none, bad));
        assert!(check(IpRepSide::Src, IpRepOp::IsNotSet, 0).matches(none, bad));
        assert!(!check(IpRepSide::Src, IpRepOp::IsNotSet, 0).matches(bad, none));
        // A score of 0 (10.1.2.3 is a host entry with no BadHosts score)
        // is "not set" for src/dst, as in Suricata, but set for any/both.
        let zero = ip("10.1.2.3");
        assert!(check(IpRepSide::Src, IpRepOp::IsNotSet, 0).matches(zero, none));
        assert!(check(IpRepSide::Dst, IpRepOp::IsNotSet, 0).matches(none, zero));
        assert!(check(IpRepSide::Src, IpRepOp::IsSet, 0).matches(zero, none));
        assert!(!check(IpRepSide::Both, IpRepOp::IsNotSet, 0).matches(zero, none));
        assert!(!check(IpRepSide::Any, IpRepOp::IsNotSet, 0).matches(zero, bad));
        assert!(check(IpRepSide::Any, IpRepOp::IsNotSet, 0).matches(bad, none));
        assert!(!check(IpRepSide::Any, IpRepOp::IsNotSet, 0).matches(bad, worse));
        assert!(check(IpRepSide::Both, IpRepOp::IsNotSet, 0).matches(none, none));
        assert!(!check(IpRepSide::Both, IpRepOp::IsNotSet, 0).matches(bad, none));
        assert!(check(IpRepSide::Both, IpRepOp::IsSet, 0).matches(bad, worse));
    }
}
