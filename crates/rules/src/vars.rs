//! Address and port variables, address/port specifications and their
//! matchers.
//!
//! Negation follows Suricata: every element of a (possibly nested) list is
//! classified by the parity of the `!` in front of it and of the groups and
//! variables around it. Elements with even parity are included, odd ones
//! excluded; an address matches when it is in some included element (or
//! nothing was included, which means `any`) and in no excluded one. So
//! `![1.1.1.1,!1.1.1.2]` includes 1.1.1.2 and excludes 1.1.1.1, exactly as
//! Suricata reads it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::ast::{AddrItem, AddrSpec, PortSpec};
use crate::error::{RuleError, RuleErrorKind};

/// How deep variables may refer to variables (guards against cycles).
const MAX_VAR_DEPTH: usize = 32;
/// How deep `[...]` groups may nest.
const MAX_GROUP_DEPTH: usize = 64;

/// Suricata's default `vars.address-groups`, plus the Snort defaults that
/// Snort rules use and Suricata's file does not define.
pub const DEFAULT_ADDRESS_VARS: &[(&str, &str)] = &[
    ("HOME_NET", "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"),
    ("EXTERNAL_NET", "!$HOME_NET"),
    ("HTTP_SERVERS", "$HOME_NET"),
    ("SMTP_SERVERS", "$HOME_NET"),
    ("SQL_SERVERS", "$HOME_NET"),
    ("DNS_SERVERS", "$HOME_NET"),
    ("TELNET_SERVERS", "$HOME_NET"),
    ("AIM_SERVERS", "$EXTERNAL_NET"),
    ("DC_SERVERS", "$HOME_NET"),
    ("DNP3_SERVER", "$HOME_NET"),
    ("DNP3_CLIENT", "$HOME_NET"),
    ("MODBUS_CLIENT", "$HOME_NET"),
    ("MODBUS_SERVER", "$HOME_NET"),
    ("ENIP_CLIENT", "$HOME_NET"),
    ("ENIP_SERVER", "$HOME_NET"),
    // Snort defaults (snort.conf / snort.lua).
    ("SIP_SERVERS", "$HOME_NET"),
    ("SSH_SERVERS", "$HOME_NET"),
    ("FTP_SERVERS", "$HOME_NET"),
    ("SNMP_SERVERS", "$HOME_NET"),
];

/// Suricata's default `vars.port-groups`, plus Snort defaults.
pub const DEFAULT_PORT_VARS: &[(&str, &str)] = &[
    ("HTTP_PORTS", "80"),
    ("SHELLCODE_PORTS", "!80"),
    ("ORACLE_PORTS", "1521"),
    ("SSH_PORTS", "22"),
    ("DNP3_PORTS", "20000"),
    ("MODBUS_PORTS", "502"),
    ("FILE_DATA_PORTS", "[$HTTP_PORTS,110,143]"),
    ("FTP_PORTS", "21"),
    ("GENEVE_PORTS", "6081"),
    ("VXLAN_PORTS", "4789"),
    ("TEREDO_PORTS", "3544"),
    ("SIP_PORTS", "[5060,5061]"),
    // Snort defaults.
    ("GTP_PORTS", "[2123,2152,3386]"),
];

/// Address and port variables (`$HOME_NET`, `$HTTP_PORTS`, ...).
///
/// Values are kept as written and resolved when a rule uses them, so a
/// variable may refer to one that is set later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vars {
    addresses: HashMap<String, String>,
    ports: HashMap<String, String>,
    /// Address specifications already resolved with these values: a
    /// ruleset names a handful (`$HOME_NET`, `$EXTERNAL_NET`, `any`)
    /// tens of thousands of times, and resolving one parses every
    /// network of its variables again.
    resolved: AddrMemo,
}

/// [`Vars`]'s resolved addresses. Not part of its value: a clone starts
/// empty, and two `Vars` compare by their variables only.
#[derive(Debug, Default)]
struct AddrMemo(std::sync::Mutex<foldhash::HashMap<String, Result<AddrSpec, RuleError>>>);

impl Clone for AddrMemo {
    fn clone(&self) -> Self {
        AddrMemo::default()
    }
}

impl PartialEq for AddrMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for AddrMemo {}

/// Most address specifications remembered; past this, new ones are
/// resolved each time (a ruleset of distinct literal addresses).
const ADDR_MEMO_MAX: usize = 4096;

impl Default for Vars {
    /// Suricata's default `suricata.yaml` variables.
    fn default() -> Self {
        let mut v = Vars::empty();
        for (k, val) in DEFAULT_ADDRESS_VARS {
            v.addresses.insert((*k).to_string(), (*val).to_string());
        }
        for (k, val) in DEFAULT_PORT_VARS {
            v.ports.insert((*k).to_string(), (*val).to_string());
        }
        v
    }
}

fn var_name(name: &str) -> Result<&str, RuleError> {
    let n = name.trim();
    let n = n.strip_prefix('$').unwrap_or(n);
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(RuleError::new(
            RuleErrorKind::Variable,
            format!("invalid variable name '{name}'"),
        ));
    }
    Ok(n)
}

impl Vars {
    /// Suricata's default variables (same as [`Vars::default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// No variables at all.
    pub fn empty() -> Self {
        Vars {
            addresses: HashMap::new(),
            ports: HashMap::new(),
            resolved: AddrMemo::default(),
        }
    }

    /// Sets (or replaces) an address variable. `name` may be written with
    /// or without the `$`. The value is checked when a rule uses it (or by
    /// [`Vars::validate`]).
    pub fn set_address(&mut self, name: &str, value: &str) -> Result<(), RuleError> {
        let n = var_name(name)?;
        self.addresses
            .insert(n.to_string(), value.trim().to_string());
        self.resolved = AddrMemo::default();
        Ok(())
    }

    /// Sets (or replaces) a port variable.
    pub fn set_port(&mut self, name: &str, value: &str) -> Result<(), RuleError> {
        let n = var_name(name)?;
        self.ports.insert(n.to_string(), value.trim().to_string());
        Ok(())
    }

    /// The raw value of an address variable.
    pub fn address(&self, name: &str) -> Option<&str> {
        let n = name.strip_prefix('$').unwrap_or(name);
        self.addresses.get(n).map(String::as_str)
    }

    /// The raw value of a port variable.
    pub fn port(&self, name: &str) -> Option<&str> {
        let n = name.strip_prefix('$').unwrap_or(name);
        self.ports.get(n).map(String::as_str)
    }

    /// Names of the address variables, sorted.
    pub fn address_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.addresses.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    /// Names of the port variables, sorted.
    pub fn port_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.ports.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    /// Resolves every variable; returns one error per bad variable.
    pub fn validate(&self) -> Vec<RuleError> {
        let mut errs = Vec::new();
        for n in self.address_names() {
            if let Err(e) = self.resolve_address(&format!("${n}")) {
                errs.push(e);
            }
        }
        for n in self.port_names() {
            if let Err(e) = self.resolve_port(&format!("${n}")) {
                errs.push(e);
            }
        }
        errs
    }

    /// Resolves an address specification as written in a rule header.
    pub fn resolve_address(&self, spec: &str) -> Result<AddrSpec, RuleError> {
        if let Ok(memo) = self.resolved.0.lock() {
            if let Some(r) = memo.get(spec) {
                return r.clone();
            }
        }
        let r = self.resolve_address_now(spec);
        if let Ok(mut memo) = self.resolved.0.lock() {
            if memo.len() < ADDR_MEMO_MAX {
                memo.insert(spec.to_string(), r.clone());
            }
        }
        r
    }

    fn resolve_address_now(&self, spec: &str) -> Result<AddrSpec, RuleError> {
        let mut out = AddrSpec::default();
        self.addr_rec(spec, false, 0, 0, &mut out)
            .map_err(|m| RuleError::new(RuleErrorKind::Address, m))?;
        if out.include.is_empty() {
            out.include.push(AddrItem::Any);
        }
        if !out.exclude.is_empty() && out.compile().is_empty() {
            return Err(RuleError::new(
                RuleErrorKind::Address,
                format!("address specification '{spec}' matches no address"),
            ));
        }
        Ok(out)
    }

    /// Resolves a port specification as written in a rule header.
    pub fn resolve_port(&self, spec: &str) -> Result<PortSpec, RuleError> {
        let mut out = PortSpec::default();
        self.port_rec(spec, false, 0, 0, &mut out)
            .map_err(|m| RuleError::new(RuleErrorKind::Port, m))?;
        if out.include.is_empty() {
            out.include.push((0, 65535));
        }
        if !out.exclude.is_empty() && out.compile().is_empty() {
            return Err(RuleError::new(
                RuleErrorKind::Port,
                format!("port specification '{spec}' matches no port"),
            ));
        }
        Ok(out)
    }

    fn addr_rec(
        &self,
        s: &str,
        neg: bool,
        var_depth: usize,
        group_depth: usize,
        out: &mut AddrSpec,
    ) -> Result<(), String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty address".into());
        }
        let mut neg = neg;
        let mut s = s;
        while let Some(rest) = s.strip_prefix('!') {
            neg = !neg;
            s = rest.trim_start();
        }
        if s.is_empty() {
            return Err("'!' without an operand".into());
        }
        if s.starts_with('[') {
            if group_depth >= MAX_GROUP_DEPTH {
                return Err("address groups nested too deep".into());
            }
            let inner = group_inner(s)?;
            for part in split_top(inner)? {
                self.addr_rec(part, neg, var_depth, group_depth + 1, out)?;
            }
            return Ok(());
        }
        if let Some(name) = s.strip_prefix('$') {
            if var_depth >= MAX_VAR_DEPTH {
                return Err(format!("variable ${name} nests too deep (cycle?)"));
            }
            let Some(val) = self.addresses.get(name) else {
                if self.ports.contains_key(name) {
                    return Err(format!(
                        "${name} is a port variable, not an address variable"
                    ));
                }
                return Err(format!("undefined address variable ${name}"));
            };
            return self
                .addr_rec(val, neg, var_depth + 1, group_depth, out)
                .map_err(|e| format!("in ${name}: {e}"));
        }
        if s.eq_ignore_ascii_case("any") {
            if neg {
                return Err("'!any' matches no address".into());
            }
            out.include.push(AddrItem::Any);
            return Ok(());
        }
        let item = parse_addr_item(s)?;
        if neg {
            out.exclude.push(item);
        } else {
            out.include.push(item);
        }
        Ok(())
    }

    fn port_rec(
        &self,
        s: &str,
        neg: bool,
        var_depth: usize,
        group_depth: usize,
        out: &mut PortSpec,
    ) -> Result<(), String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty port".into());
        }
        let mut neg = neg;
        let mut s = s;
        while let Some(rest) = s.strip_prefix('!') {
            neg = !neg;
            s = rest.trim_start();
        }
        if s.is_empty() {
            return Err("'!' without an operand".into());
        }
        if s.starts_with('[') {
            if group_depth >= MAX_GROUP_DEPTH {
                return Err("port groups nested too deep".into());
            }
            let inner = group_inner(s)?;
            for part in split_top(inner)? {
                self.port_rec(part, neg, var_depth, group_depth + 1, out)?;
            }
            return Ok(());
        }
        if let Some(name) = s.strip_prefix('$') {
            if var_depth >= MAX_VAR_DEPTH {
                return Err(format!("variable ${name} nests too deep (cycle?)"));
            }
            let Some(val) = self.ports.get(name) else {
                if self.addresses.contains_key(name) {
                    return Err(format!(
                        "${name} is an address variable, not a port variable"
                    ));
                }
                return Err(format!("undefined port variable ${name}"));
            };
            return self
                .port_rec(val, neg, var_depth + 1, group_depth, out)
                .map_err(|e| format!("in ${name}: {e}"));
        }
        if s.eq_ignore_ascii_case("any") {
            if neg {
                return Err("'!any' matches no port".into());
            }
            out.include.push((0, 65535));
            return Ok(());
        }
        let r = parse_port_item(s)?;
        if neg {
            out.exclude.push(r);
        } else {
            out.include.push(r);
        }
        Ok(())
    }
}

/// The text between the outer `[` and its matching `]`, which must end `s`.
fn group_inner(s: &str) -> Result<&str, String> {
    let mut depth = 0usize;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if i + 1 != s.len() {
                        return Err(format!("unexpected text after ']' in '{s}'"));
                    }
                    return Ok(&s[1..i]);
                }
            }
            _ => {}
        }
    }
    Err(format!("unbalanced '[' in '{s}'"))
}

/// Splits a list at top-level commas.
fn split_top(s: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced ']' in '{s}'"));
                }
            }
            b',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced '[' in '{s}'"));
    }
    parts.push(&s[start..]);
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err(format!("empty element in list '[{s}]'"));
    }
    Ok(parts)
}

fn parse_ip(s: &str) -> Result<IpAddr, String> {
    let s = s.trim();
    if let Ok(v4) = s.parse::<Ipv4Addr>() {
        return Ok(IpAddr::V4(v4));
    }
    if let Ok(v6) = s.parse::<Ipv6Addr>() {
        return Ok(IpAddr::V6(v6));
    }
    Err(format!("invalid IP address '{s}'"))
}

/// Network mask of an IPv4 prefix length (lengths over 32 count as 32).
fn v4_mask(len: u8) -> u32 {
    u32::MAX
        .checked_shl(32u32.saturating_sub(len as u32))
        .unwrap_or(0)
}

/// Network mask of an IPv6 prefix length (lengths over 128 count as 128).
fn v6_mask(len: u8) -> u128 {
    u128::MAX
        .checked_shl(128u32.saturating_sub(len as u32))
        .unwrap_or(0)
}

fn mask_addr(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & v4_mask(len))),
        IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & v6_mask(len))),
    }
}

/// Parses one address element: `1.2.3.4`, `1.2.3.0/24`,
/// `1.2.3.0/255.255.255.0`, `2001:db8::/32`, `1.2.3.4-1.2.3.9`.
pub(crate) fn parse_addr_item(s: &str) -> Result<AddrItem, String> {
    let s = s.trim();
    if let Some((ip, pfx)) = s.split_once('/') {
        let ip = parse_ip(ip)?;
        let pfx = pfx.trim();
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let len: u8 = if let Ok(n) = pfx.parse::<u8>() {
            if n > max {
                return Err(format!("prefix length {n} too long in '{s}'"));
            }
            n
        } else if let (true, Ok(mask)) = (ip.is_ipv4(), pfx.parse::<Ipv4Addr>()) {
            let m = u32::from(mask);
            if m.leading_ones() + m.trailing_zeros() != 32 {
                return Err(format!("non-contiguous netmask in '{s}'"));
            }
            m.leading_ones() as u8
        } else {
            return Err(format!("invalid prefix in '{s}'"));
        };
        return Ok(AddrItem::Cidr(mask_addr(ip, len), len));
    }
    if let Some((a, b)) = s.split_once('-') {
        let a = parse_ip(a)?;
        let b = parse_ip(b)?;
        let ok = match (a, b) {
            (IpAddr::V4(x), IpAddr::V4(y)) => x <= y,
            (IpAddr::V6(x), IpAddr::V6(y)) => x <= y,
            _ => return Err(format!("range '{s}' mixes IPv4 and IPv6")),
        };
        if !ok {
            return Err(format!("range '{s}' ends before it starts"));
        }
        return Ok(AddrItem::Range(a, b));
    }
    let ip = parse_ip(s)?;
    let len = if ip.is_ipv4() { 32 } else { 128 };
    Ok(AddrItem::Cidr(ip, len))
}

fn parse_port_num(s: &str, whole: &str) -> Result<u16, String> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid port '{whole}'"));
    }
    t.parse::<u16>()
        .map_err(|_| format!("port '{whole}' out of range"))
}

/// Parses one port element: `80`, `80:90`, `1024:`, `:1023`.
pub(crate) fn parse_port_item(s: &str) -> Result<(u16, u16), String> {
    let s = s.trim();
    if let Some((a, b)) = s.split_once(':') {
        let lo = if a.trim().is_empty() {
            0
        } else {
            parse_port_num(a, s)?
        };
        let hi = if b.trim().is_empty() {
            65535
        } else {
            parse_port_num(b, s)?
        };
        if a.trim().is_empty() && b.trim().is_empty() {
            return Err(format!("invalid port range '{s}'"));
        }
        if lo > hi {
            return Err(format!("port range '{s}' ends before it starts"));
        }
        return Ok((lo, hi));
    }
    let p = parse_port_num(s, s)?;
    Ok((p, p))
}

// ---------------------------------------------------------------------------
// Matching

impl AddrItem {
    /// Whether `ip` lies in this element (families never mix).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self, ip) {
            (AddrItem::Any, _) => true,
            (AddrItem::Cidr(IpAddr::V4(net), len), IpAddr::V4(a)) => {
                let m = v4_mask(*len);
                u32::from(a) & m == u32::from(*net) & m
            }
            (AddrItem::Cidr(IpAddr::V6(net), len), IpAddr::V6(a)) => {
                let m = v6_mask(*len);
                u128::from(a) & m == u128::from(*net) & m
            }
            (AddrItem::Range(IpAddr::V4(lo), IpAddr::V4(hi)), IpAddr::V4(a)) => {
                *lo <= a && a <= *hi
            }
            (AddrItem::Range(IpAddr::V6(lo), IpAddr::V6(hi)), IpAddr::V6(a)) => {
                *lo <= a && a <= *hi
            }
            _ => false,
        }
    }

    fn push_ranges(&self, v4: &mut Vec<(u32, u32)>, v6: &mut Vec<(u128, u128)>) {
        match *self {
            AddrItem::Any => {
                v4.push((0, u32::MAX));
                v6.push((0, u128::MAX));
            }
            AddrItem::Cidr(IpAddr::V4(net), len) => {
                let host = !v4_mask(len);
                let lo = u32::from(net) & !host;
                v4.push((lo, lo | host));
            }
            AddrItem::Cidr(IpAddr::V6(net), len) => {
                let host = !v6_mask(len);
                let lo = u128::from(net) & !host;
                v6.push((lo, lo | host));
            }
            AddrItem::Range(IpAddr::V4(a), IpAddr::V4(b)) => {
                let (a, b) = (u32::from(a), u32::from(b));
                v4.push((a.min(b), a.max(b)));
            }
            AddrItem::Range(IpAddr::V6(a), IpAddr::V6(b)) => {
                let (a, b) = (u128::from(a), u128::from(b));
                v6.push((a.min(b), a.max(b)));
            }
            // Mixed-family ranges are rejected by the parser.
            AddrItem::Range(_, _) => {}
        }
    }
}

impl AddrSpec {
    /// `any`.
    pub fn any() -> Self {
        AddrSpec {
            include: vec![AddrItem::Any],
            exclude: Vec::new(),
        }
    }

    /// True when the spec is plain `any` (every address matches).
    pub fn is_any(&self) -> bool {
        self.exclude.is_empty() && self.include.contains(&AddrItem::Any)
    }

    /// Whether `ip` matches, by a linear scan. For long lists use
    /// [`AddrSpec::compile`] once and [`AddrMatcher::contains`].
    pub fn contains(&self, ip: IpAddr) -> bool {
        (self.include.is_empty() || self.include.iter().any(|i| i.contains(ip)))
            && !self.exclude.iter().any(|i| i.contains(ip))
    }

    /// Precomputes the set of matching addresses as sorted, disjoint ranges
    /// (IPv4 and IPv6 kept apart) for O(log n) lookups.
    pub fn compile(&self) -> AddrMatcher {
        let mut inc4 = Vec::new();
        let mut inc6 = Vec::new();
        if self.include.is_empty() {
            AddrItem::Any.push_ranges(&mut inc4, &mut inc6);
        }
        for i in &self.include {
            i.push_ranges(&mut inc4, &mut inc6);
        }
        let mut exc4 = Vec::new();
        let mut exc6 = Vec::new();
        for i in &self.exclude {
            i.push_ranges(&mut exc4, &mut exc6);
        }
        AddrMatcher {
            v4: subtract(normalize(inc4), &normalize(exc4)),
            v6: subtract(normalize(inc6), &normalize(exc6)),
        }
    }
}

/// A compiled [`AddrSpec`]: sorted disjoint inclusive ranges per family.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AddrMatcher {
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
}

impl AddrMatcher {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(a) => in_ranges(&self.v4, u32::from(a)),
            IpAddr::V6(a) => in_ranges(&self.v6, u128::from(a)),
        }
    }

    /// True when no address at all matches.
    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// True when every IPv4 and IPv6 address matches.
    pub fn is_any(&self) -> bool {
        self.v4 == [(0, u32::MAX)] && self.v6 == [(0, u128::MAX)]
    }

    /// The IPv4 ranges (inclusive, sorted, disjoint, not adjacent).
    pub fn v4_ranges(&self) -> &[(u32, u32)] {
        &self.v4
    }

    /// The IPv6 ranges (inclusive, sorted, disjoint, not adjacent).
    pub fn v6_ranges(&self) -> &[(u128, u128)] {
        &self.v6
    }
}

impl PortSpec {
    /// `any`.
    pub fn any() -> Self {
        PortSpec {
            include: vec![(0, 65535)],
            exclude: Vec::new(),
        }
    }

    /// True when every port matches.
    pub fn is_any(&self) -> bool {
        self.exclude.is_empty() && self.include.contains(&(0, 65535))
    }

    pub fn contains(&self, port: u16) -> bool {
        (self.include.is_empty() || self.include.iter().any(|&(a, b)| a <= port && port <= b))
            && !self.exclude.iter().any(|&(a, b)| a <= port && port <= b)
    }

    /// Precomputes sorted disjoint ranges for O(log n) lookups.
    pub fn compile(&self) -> PortMatcher {
        let inc = if self.include.is_empty() {
            vec![(0u16, 65535u16)]
        } else {
            self.include
                .iter()
                .map(|&(a, b)| (a.min(b), a.max(b)))
                .collect()
        };
        let exc = self
            .exclude
            .iter()
            .map(|&(a, b)| (a.min(b), a.max(b)))
            .collect();
        PortMatcher {
            ranges: subtract(normalize(inc), &normalize(exc)),
        }
    }
}

/// A compiled [`PortSpec`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortMatcher {
    ranges: Vec<(u16, u16)>,
}

impl PortMatcher {
    pub fn contains(&self, port: u16) -> bool {
        in_ranges(&self.ranges, port)
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn is_any(&self) -> bool {
        self.ranges == [(0, 65535)]
    }

    /// Inclusive, sorted, disjoint, non-adjacent ranges.
    pub fn ranges(&self) -> &[(u16, u16)] {
        &self.ranges
    }
}

trait RangeInt: Copy + Ord {
    const MAX: Self;
    fn succ(self) -> Self;
    fn pred(self) -> Self;
}

macro_rules! range_int {
    ($($t:ty),*) => {$(
        impl RangeInt for $t {
            const MAX: Self = <$t>::MAX;
            fn succ(self) -> Self { self + 1 }
            fn pred(self) -> Self { self - 1 }
        }
    )*};
}
range_int!(u16, u32, u128);

fn in_ranges<T: RangeInt>(ranges: &[(T, T)], x: T) -> bool {
    if ranges.len() <= 4 {
        return ranges.iter().any(|&(a, b)| a <= x && x <= b);
    }
    let i = ranges.partition_point(|r| r.1 < x);
    i < ranges.len() && ranges[i].0 <= x
}

/// Sorts and merges overlapping or adjacent ranges.
fn normalize<T: RangeInt>(mut v: Vec<(T, T)>) -> Vec<(T, T)> {
    v.sort_unstable();
    let mut out: Vec<(T, T)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        if let Some(last) = out.last_mut() {
            if last.1 == T::MAX || a <= last.1.succ() {
                if b > last.1 {
                    last.1 = b;
                }
                continue;
            }
        }
        out.push((a, b));
    }
    out
}

/// `inc` minus `exc`; both normalized.
fn subtract<T: RangeInt>(inc: Vec<(T, T)>, exc: &[(T, T)]) -> Vec<(T, T)> {
    if exc.is_empty() {
        return inc;
    }
    let mut out = Vec::with_capacity(inc.len());
    let mut j = 0;
    for (mut a, b) in inc {
        while j < exc.len() && exc[j].1 < a {
            j += 1;
        }
        let mut k = j;
        let mut done = false;
        while k < exc.len() && exc[k].0 <= b {
            let (ea, eb) = exc[k];
            if ea > a {
                out.push((a, ea.pred()));
            }
            if eb >= b {
                done = true;
                break;
            }
            a = eb.succ();
            k += 1;
        }
        if !done {
            out.push((a, b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn resolved_addresses_follow_the_variables() {
        let mut v = Vars::default();
        v.set_address("HOME_NET", "10.0.0.0/8").unwrap();
        let home = v.resolve_address("$HOME_NET").unwrap();
        let ext = v.resolve_address("!$HOME_NET").unwrap();
        assert!(home.contains(ip("10.1.2.3")) && !ext.contains(ip("10.1.2.3")));
        // The same again, now remembered.
        assert_eq!(v.resolve_address("$HOME_NET").unwrap(), home);
        // A new value is used, not the remembered resolution.
        v.set_address("HOME_NET", "192.168.0.0/16").unwrap();
        let home = v.resolve_address("$HOME_NET").unwrap();
        let ext = v.resolve_address("!$HOME_NET").unwrap();
        assert!(!home.contains(ip("10.1.2.3")) && home.contains(ip("192.168.1.1")));
        assert!(ext.contains(ip("10.1.2.3")) && !ext.contains(ip("192.168.1.1")));
        // Errors are remembered as errors.
        let e = v.resolve_address("$NO_SUCH_NET").unwrap_err();
        assert_eq!(v.resolve_address("$NO_SUCH_NET").unwrap_err(), e);
        // A clone starts with nothing remembered and compares equal.
        let c = v.clone();
        assert_eq!(c, v);
        assert_eq!(c.resolve_address("$HOME_NET").unwrap(), home);
    }

    #[test]
    fn subtract_ranges() {
        let r = subtract(vec![(0u16, 100)], &[(10, 20), (30, 40), (100, 100)]);
        assert_eq!(r, vec![(0, 9), (21, 29), (41, 99)]);
        let r = subtract(vec![(0u16, 10), (20, 30)], &[(5, 25)]);
        assert_eq!(r, vec![(0, 4), (26, 30)]);
        let r = subtract(vec![(0u16, 65535)], &[(0, 65535)]);
        assert!(r.is_empty());
        let r = subtract(vec![(5u16, 10)], &[(0, 4), (11, 20)]);
        assert_eq!(r, vec![(5, 10)]);
    }

    #[test]
    fn normalize_merges() {
        let r = normalize(vec![
            (5u16, 10),
            (0, 4),
            (12, 13),
            (11, 11),
            (65000, 65535),
            (65535, 65535),
        ]);
        assert_eq!(r, vec![(0, 13), (65000, 65535)]);
    }

    #[test]
    fn nested_negation() {
        let v = Vars::default();
        let s = v.resolve_address("![1.1.1.1,!1.1.1.2]").unwrap();
        assert_eq!(s.include, vec![AddrItem::Cidr(ip("1.1.1.2"), 32)]);
        assert_eq!(s.exclude, vec![AddrItem::Cidr(ip("1.1.1.1"), 32)]);
        assert!(s.contains(ip("1.1.1.2")));
        assert!(!s.contains(ip("1.1.1.1")));
        assert!(!s.contains(ip("8.8.8.8")));
    }
}
