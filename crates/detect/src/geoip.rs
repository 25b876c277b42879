//! `geoip`: the country of a packet's IPv4 addresses, from a MaxMind DB
//! (`.mmdb`) file named by the config's `geoip-database` (Suricata's
//! detect-geoip.c).
//!
//! The country is the record's `country.iso_code`. As in Suricata, only
//! IPv4 packets are looked up (an IPv6 packet never matches), an address
//! without a country (not in the database, or a record without
//! `country.iso_code`) never matches, not even a negated list, and pseudo
//! packets never match.
//!
//! Lookups are cached per flow: [`GeoCache`] holds the countries of the
//! flow's two addresses, looked up on the first packet a `geoip` rule is
//! checked against, so that later packets compare two bytes. Packets
//! without a flow are looked up each time.

use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use vigil_rules::IpRepSide;

/// A country code as compared: the first 2 bytes, zero-padded (`"U"` is
/// `[b'U', 0]`). A code that no rule can name (empty or longer than 2
/// bytes in the database) is [`UNNAMEABLE`].
pub type CountryCode = [u8; 2];

/// The code of a database country no rule can name: it is a known
/// country (a negated list matches it) that is in no list. Rule codes
/// are ASCII, so `0xff` never appears in them.
pub const UNNAMEABLE: CountryCode = [0xff, 0xff];

/// The GeoIP database.
pub struct GeoIpDb {
    reader: maxminddb::Reader<Vec<u8>>,
    path: String,
}

impl std::fmt::Debug for GeoIpDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeoIpDb")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl GeoIpDb {
    /// Reads a MaxMind DB file; the error names the path.
    pub fn open(path: &Path) -> Result<GeoIpDb, String> {
        let reader = maxminddb::Reader::open_readfile(path)
            .map_err(|e| format!("geoip-database {}: {e}", path.display()))?;
        Ok(GeoIpDb {
            reader,
            path: path.display().to_string(),
        })
    }

    /// Reads a MaxMind DB from memory (tests).
    pub fn from_bytes(data: Vec<u8>) -> Result<GeoIpDb, String> {
        let reader =
            maxminddb::Reader::from_source(data).map_err(|e| format!("geoip-database: {e}"))?;
        Ok(GeoIpDb {
            reader,
            path: String::from("<memory>"),
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The database type and the build time (seconds since the epoch)
    /// from its metadata.
    pub fn describe(&self) -> (String, u64) {
        let m = self.reader.metadata();
        (m.database_type.clone(), m.build_epoch)
    }

    /// The country of an IPv4 address: `None` when the database has no
    /// record for it or the record has no `country.iso_code` string (a
    /// database error counts as no record, as in Suricata).
    pub fn country(&self, addr: Ipv4Addr) -> Option<CountryCode> {
        let res = self.reader.lookup(IpAddr::V4(addr)).ok()?;
        let code: Option<&str> = res
            .decode_path(&[
                maxminddb::PathElement::Key("country"),
                maxminddb::PathElement::Key("iso_code"),
            ])
            .ok()?;
        Some(code_of(code?.as_bytes()))
    }
}

/// A database country code as compared with the rule's codes.
fn code_of(b: &[u8]) -> CountryCode {
    match b {
        [a] => [*a, 0],
        [a, c] => [*a, *c],
        _ => UNNAMEABLE,
    }
}

/// A rule's country code (ASCII, 1 or 2 bytes after parsing).
fn rule_code(s: &str) -> CountryCode {
    let b = s.as_bytes();
    [
        b.first().copied().unwrap_or(0),
        b.get(1).copied().unwrap_or(0),
    ]
}

/// One cached lookup: the address and its country.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Entry {
    addr: u32,
    /// 0: empty; 1: looked up, no country; 2: `cc` is the country.
    state: u8,
    cc: CountryCode,
}

/// The countries of a flow's two addresses (a fixed two-entry cache in
/// the flow's detection state; interior mutability so that rules read
/// it through a shared reference). Emptied when the rules (and so
/// perhaps the database) are reloaded.
#[derive(Debug, Clone, Default)]
pub struct GeoCache {
    cells: [Cell<Entry>; 2],
}

impl GeoCache {
    /// Forgets the cached countries.
    pub fn clear(&self) {
        for c in &self.cells {
            c.set(Entry::default());
        }
    }

    /// The country of `addr`, from the cache or looked up (and then kept
    /// in a free cell; a third address is looked up each time).
    fn country(&self, db: &GeoIpDb, addr: Ipv4Addr) -> Option<CountryCode> {
        let a = u32::from(addr);
        for c in &self.cells {
            let e = c.get();
            if e.state != 0 && e.addr == a {
                return (e.state == 2).then_some(e.cc);
            }
        }
        let cc = db.country(addr);
        if let Some(c) = self.cells.iter().find(|c| c.get().state == 0) {
            c.set(Entry {
                addr: a,
                state: if cc.is_some() { 2 } else { 1 },
                cc: cc.unwrap_or_default(),
            });
        }
        cc
    }
}

/// A compiled `geoip` option.
#[derive(Debug, Clone)]
pub struct GeoIpCheck {
    pub side: IpRepSide,
    pub negated: bool,
    pub countries: Vec<CountryCode>,
    pub db: std::sync::Arc<GeoIpDb>,
}

impl GeoIpCheck {
    pub fn new(g: &vigil_rules::GeoIp, db: std::sync::Arc<GeoIpDb>) -> GeoIpCheck {
        GeoIpCheck {
            side: g.side,
            negated: g.negated,
            countries: g.countries.iter().map(|c| rule_code(c)).collect(),
            db,
        }
    }

    /// Whether one address passes: its country is known and in the list
    /// (not in it, when negated).
    fn address_matches(&self, cache: Option<&GeoCache>, addr: Ipv4Addr) -> bool {
        let cc = match cache {
            Some(c) => c.country(&self.db, addr),
            None => self.db.country(addr),
        };
        cc.is_some_and(|cc| self.countries.contains(&cc) != self.negated)
    }

    /// Suricata's `DetectGeoipMatch`: `src` / `dst` check one address,
    /// `any` either, `both` needs both; IPv6 never matches.
    pub fn matches(&self, cache: Option<&GeoCache>, src: IpAddr, dst: IpAddr) -> bool {
        let (IpAddr::V4(s), IpAddr::V4(d)) = (src, dst) else {
            return false;
        };
        match self.side {
            IpRepSide::Src => self.address_matches(cache, s),
            IpRepSide::Dst => self.address_matches(cache, d),
            IpRepSide::Any => self.address_matches(cache, s) || self.address_matches(cache, d),
            IpRepSide::Both => self.address_matches(cache, s) && self.address_matches(cache, d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes() {
        assert_eq!(code_of(b"US"), *b"US");
        assert_eq!(code_of(b"U"), [b'U', 0]);
        assert_eq!(code_of(b""), UNNAMEABLE);
        assert_eq!(code_of(b"USA"), UNNAMEABLE);
        assert_eq!(rule_code("U"), [b'U', 0]);
        assert_eq!(rule_code("RU"), *b"RU");
    }

    /// The tests' crafted database passes the maxminddb crate's full
    /// verifier (tree, data section, metadata), and answers as written.
    #[test]
    fn crafted_test_database_is_valid() {
        let r = maxminddb::Reader::from_source(vigil_craft::mmdb::test_country_db()).unwrap();
        r.verify().unwrap();
        let db = GeoIpDb::from_bytes(vigil_craft::mmdb::test_country_db()).unwrap();
        assert_eq!(db.country(Ipv4Addr::new(10, 1, 2, 3)), Some(*b"RU"));
        assert_eq!(db.country(Ipv4Addr::new(10, 2, 255, 255)), Some(*b"US"));
        assert_eq!(db.country(Ipv4Addr::new(10, 4, 0, 1)), None);
        assert_eq!(db.country(Ipv4Addr::new(10, 5, 0, 1)), None);
        assert_eq!(db.describe().0, "Vigil-Test-Country");
    }
}
