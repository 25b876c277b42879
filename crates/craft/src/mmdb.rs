//! A minimal MaxMind DB (`.mmdb`) writer for tests of `geoip`: an IPv4
//! database (24-bit records) mapping networks to
//! `{country: {iso_code: "XX"}}`, following the MaxMind DB format 2.0
//! (binary search tree, 16-byte separator, data section, metadata).

use std::net::Ipv4Addr;

/// One network of the database and what its record holds.
#[derive(Debug, Clone, Copy)]
pub struct Network<'a> {
    pub addr: Ipv4Addr,
    /// Prefix length, 1..=32.
    pub prefix: u8,
    /// `Some(code)`: `{country: {iso_code: code}}`; `None`: a record
    /// without a country (`{city: "nowhere"}`).
    pub country: Option<&'a str>,
}

#[derive(Clone, Copy, PartialEq)]
enum Rec {
    Empty,
    Node(u32),
    Data(u32),
}

fn string(out: &mut Vec<u8>, s: &str) {
    assert!(s.len() < 29, "short strings only");
    out.push(0x40 | s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

fn map(out: &mut Vec<u8>, n: usize) {
    assert!(n < 29);
    out.push(0xe0 | n as u8);
}

/// An unsigned integer of the given type (5: uint16, 6: uint32, 9:
/// uint64), big-endian without leading zero bytes.
fn uint(out: &mut Vec<u8>, ty: u8, v: u64) {
    let bytes = v.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    let payload = &bytes[skip..];
    if ty <= 7 {
        out.push((ty << 5) | payload.len() as u8);
    } else {
        out.push(payload.len() as u8);
        out.push(ty - 7);
    }
    out.extend_from_slice(payload);
}

/// The database bytes for `networks` (later networks do not override
/// earlier ones that contain them; tests use disjoint networks).
pub fn country_db(networks: &[Network<'_>]) -> Vec<u8> {
    // Data section: one record per network.
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    for n in networks {
        offsets.push(data.len() as u32);
        map(&mut data, 1);
        match n.country {
            Some(cc) => {
                string(&mut data, "country");
                map(&mut data, 1);
                string(&mut data, "iso_code");
                string(&mut data, cc);
            }
            None => {
                string(&mut data, "city");
                string(&mut data, "nowhere");
            }
        }
    }
    // Search tree.
    let mut nodes: Vec<[Rec; 2]> = vec![[Rec::Empty; 2]];
    for (n, off) in networks.iter().zip(&offsets) {
        assert!((1..=32).contains(&n.prefix));
        let a = u32::from(n.addr);
        let mut node = 0usize;
        for i in 0..n.prefix {
            let bit = ((a >> (31 - i)) & 1) as usize;
            if i + 1 == n.prefix {
                nodes[node][bit] = Rec::Data(*off);
                break;
            }
            node = match nodes[node][bit] {
                Rec::Node(x) => x as usize,
                Rec::Empty => {
                    nodes.push([Rec::Empty; 2]);
                    let x = nodes.len() - 1;
                    nodes[node][bit] = Rec::Node(x as u32);
                    x
                }
                Rec::Data(_) => break,
            };
        }
    }
    let count = nodes.len() as u32;
    let mut out = Vec::new();
    for node in &nodes {
        for r in node {
            let v = match *r {
                Rec::Empty => count,
                Rec::Node(x) => x,
                Rec::Data(off) => count + 16 + off,
            };
            out.extend_from_slice(&v.to_be_bytes()[1..]);
        }
    }
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\xab\xcd\xefMaxMind.com");
    map(&mut out, 9);
    string(&mut out, "node_count");
    uint(&mut out, 6, count as u64);
    string(&mut out, "record_size");
    uint(&mut out, 5, 24);
    string(&mut out, "ip_version");
    uint(&mut out, 5, 4);
    string(&mut out, "database_type");
    string(&mut out, "Vigil-Test-Country");
    string(&mut out, "languages");
    out.extend_from_slice(&[0x01, 0x04]); // array of 1
    string(&mut out, "en");
    string(&mut out, "binary_format_major_version");
    uint(&mut out, 5, 2);
    string(&mut out, "binary_format_minor_version");
    uint(&mut out, 5, 0);
    string(&mut out, "build_epoch");
    uint(&mut out, 9, 1_700_000_000);
    string(&mut out, "description");
    map(&mut out, 1);
    string(&mut out, "en");
    string(&mut out, "Vigil test database");
    out
}

/// The database of the `geoip` tests: 10.1.0.0/16 is `RU`, 10.2.0.0/16
/// `US`, 10.3.0.0/16 `DE`, 10.4.0.0/16 has a record without a country;
/// other addresses are not in it.
pub fn test_country_db() -> Vec<u8> {
    let net = |b: u8, country| Network {
        addr: Ipv4Addr::new(10, b, 0, 0),
        prefix: 16,
        country,
    };
    country_db(&[
        net(1, Some("RU")),
        net(2, Some("US")),
        net(3, Some("DE")),
        net(4, None),
    ])
}
