//! Rule groups: rules partitioned by transport protocol and port so that a
//! packet is only prefiltered against the fast patterns of rules that could
//! apply to it.
//!
//! For TCP, UDP and SCTP a rule is keyed by its destination ports when they
//! are not `any`, else by its source ports when they are not `any`, else it
//! is port-independent. A source side that admits most ports (`!80`,
//! `1024:`) does not narrow and counts as `any` ([`admits_most`]). A
//! packet with ports (sp, dp) is checked against two groups: the
//! destination-keyed group of `dp` (which also holds the port-independent
//! rules) and the source-keyed group of `sp`, if any. Ports whose
//! rule sets are identical share one group, found by a sweep over the port
//! ranges, so ET Open builds a few hundred groups, not 65,536.
//! Bidirectional (`<>`) rules are keyed in both tables.

use foldhash::HashMap;
use std::sync::Arc;

use vigil_applayer::AppProto;
use vigil_prefilter::{Pattern, PrefilterEngine, Route, Selector, SplitMode, NO_GROUP};

use crate::addr_index::AddrIndex;
use crate::app::{proto_index, AppProtoState, PROTOS};
use crate::rule::{CompiledRule, ProtoMatch};

/// A pattern list waiting for its engine: the group it belongs to, which
/// of the group's lists it is, and the patterns (id = position).
struct PendingSet {
    group: u32,
    /// `None`: the group's single engine ([`RuleGroup::engine`]); else the
    /// index into its [`SplitSets::sets`].
    split: Option<u32>,
    patterns: Vec<Pattern>,
}

/// The fast patterns of part of a group's rules, and their engine.
#[derive(Debug)]
pub struct PatternSet {
    /// `None` when the engine could not be built (its rules are then in
    /// the group's `always` list).
    pub engine: Option<Arc<dyn PrefilterEngine>>,
    /// Rule index for each pattern id.
    pub rules: Vec<u32>,
}

/// The application protocols whose rules [`SplitMode::Protocols`] keeps in
/// a group's generic set: those of most flows and bytes (web and name
/// lookups), for which a second scan of every packet would cost more than
/// the patterns it keeps out of the other flows' scans.
pub const COMMON_PROTOS: [AppProto; 4] = [
    AppProto::Http,
    AppProto::Http2,
    AppProto::Tls,
    AppProto::Dns,
];

/// Slots of [`SplitSets::app`]: `failed`, then each protocol.
pub const APP_SLOTS: usize = 1 + PROTOS.len();

/// The slot of a flow's application-protocol state (`None` while it is
/// unknown: no rule with an application protocol matches then).
pub fn app_slot(st: AppProtoState) -> Option<usize> {
    match st {
        AppProtoState::Unknown => None,
        AppProtoState::Failed => Some(0),
        AppProtoState::Detected(p) => Some(1 + proto_index(p)),
    }
}

/// The flow directions a rule can match in (to server, to client): one
/// when its `flow` names it, else both.
fn rule_dirs(r: &CompiledRule) -> [bool; 2] {
    let f = &r.flow;
    match (f.stateless, f.to_server, f.to_client) {
        (false, true, false) => [true, false],
        (false, false, true) => [false, true],
        _ => [true, true],
    }
}

fn slot_state(slot: usize) -> AppProtoState {
    match slot {
        0 => AppProtoState::Failed,
        s => AppProtoState::Detected(PROTOS[s - 1]),
    }
}

/// The fast patterns of `prefiltered` (rules that have one), pattern id =
/// position in the list.
fn patterns_of(rules: &[CompiledRule], prefiltered: &[u32]) -> Vec<Pattern> {
    prefiltered
        .iter()
        .enumerate()
        .filter_map(|(id, &r)| {
            rules[r as usize].fast_pattern.as_ref().map(|fp| Pattern {
                id: id as u32,
                bytes: fp.bytes.clone(),
                nocase: fp.nocase,
            })
        })
        .collect()
}

/// No set in a [`SplitSets`] slot.
pub const NO_SET: u32 = u32::MAX;

/// A group's fast patterns split by the flow's application protocol, so
/// that a buffer is only scanned for patterns whose rules could match it
/// (Pigasus's point: the cost is the multi-pattern scan, so scan less). A
/// rule with an application protocol (`alert smb`, `app-layer-protocol`)
/// never matches while the flow's protocol is unknown, nor on a flow of
/// another protocol: its pattern is only in the sets of the protocol
/// states it admits (`app`), which are scanned once the flow's state is
/// known; the other rules' patterns are in the `generic` set, scanned
/// over every packet and stream chunk. Each set is kept per flow
/// direction, as Suricata's rule groups are: a rule with
/// `flow:to_server` (`from_client`) cannot match a packet or stream data
/// going to the client, so it is only in the to-server sets, and the
/// reverse; a rule without a direction is in both. The union of the sets
/// scanned for a buffer holds every rule that can match it, so detection
/// output is that of one engine over all patterns.
///
/// [`SplitMode::Protocols`], the default, keeps only the rules of the less
/// common protocols apart ([`COMMON_PROTOS`] stay in the generic set) and
/// does not split by direction: each rule's pattern is in one set, so the
/// databases hold as many literals as one engine per group and compile
/// as fast, while the common flows are no longer scanned for the SMB,
/// FTP, SMTP ... rules' raw contents (`MKD`, `SMB`, `|0d 0a 0d 0a|UEsDB`).
/// A flow of a less common protocol is scanned twice: the generic set
/// and its protocol's.
///
/// Splitting TCP groups further, into the rules that can match a packet
/// that the stream took (packet rules, and stream rules anchored with
/// `depth`/`offset`) and the stream rules, was measured too and left
/// out: most stream rules are anchored and sit in both sets, so the
/// packet scans hardly shrink, the second scan of packets the stream did
/// not take costs more than that, and the databases take 137 MB. Nor
/// did scanning a packet the stream took only for the rules that look at
/// its payload, in a set per group for the payload's first 64 bytes
/// (rules anchored there) and one for the rest: 3.6% fewer worker
/// instructions for twice the databases' memory (docs/performance.md,
/// nineteenth session); nor finding those rules by looking where their
/// anchored contents must be, with the others in a set of their own: at
/// best 4.8% fewer instructions, no faster in wall-clock pairs, and 30 MB
/// more databases (twentieth session).
#[derive(Debug)]
pub struct SplitSets {
    pub sets: Vec<PatternSet>,
    /// Rules without an application protocol, per flow direction
    /// (0: to server, 1: to client; [`NO_SET`]: none).
    pub generic: [u32; 2],
    /// Per [`app_slot`] and direction: the rules with an application
    /// protocol that admit that state.
    pub app: [[u32; 2]; APP_SLOTS],
}

impl SplitSets {
    pub fn set(&self, i: u32) -> Option<&PatternSet> {
        self.sets.get(i as usize)
    }
}

/// One rule group: the rules that may apply, split into those reached
/// through the prefilter and those checked on every packet.
#[derive(Debug)]
pub struct RuleGroup {
    /// Prefilter over the fast patterns; pattern id = index in
    /// `prefiltered` (`None` when the group has none, or when they are
    /// split: see `split`).
    pub engine: Option<Arc<dyn PrefilterEngine>>,
    /// The rules with a fast pattern (rule index for each pattern id of
    /// `engine`).
    pub prefiltered: Vec<u32>,
    /// The same patterns split into the sets the worker scans separately
    /// (when the selector splits groups, [`Selector::set_split_groups`]).
    pub split: Option<Box<SplitSets>>,
    /// Rules without a fast pattern and without a narrow address side,
    /// checked on every packet; sorted by rule index.
    pub always: Vec<u32>,
    /// Rules without a fast pattern indexed by their source addresses
    /// (shared by every group with the same indexed rules: IP-list rules
    /// with `any` ports sit in every port group).
    pub by_src: Arc<AddrIndex>,
    /// ... or by their destination addresses.
    pub by_dst: Arc<AddrIndex>,
    /// Number of rules in the two address indexes.
    pub addr_indexed: usize,
}

impl RuleGroup {
    pub fn rule_count(&self) -> usize {
        self.prefiltered.len() + self.always.len() + self.addr_indexed
    }

    /// Every engine of the group with its rule ids: the single engine, or
    /// each split set's.
    pub fn engines(&self) -> Vec<(&Arc<dyn PrefilterEngine>, &[u32])> {
        match &self.split {
            Some(s) => s
                .sets
                .iter()
                .filter_map(|p| p.engine.as_ref().map(|e| (e, &p.rules[..])))
                .collect(),
            None => self
                .engine
                .iter()
                .map(|e| (e, &self.prefiltered[..]))
                .collect(),
        }
    }
}

/// A rule side is worth indexing when it covers less than a /8 of IPv4
/// and less than a /64 of IPv6.
const NARROW_V4: u128 = 1 << 24;
const NARROW_V6: u128 = 1 << 64;

/// Address coverage of a matcher, and its ranges in the index's key space
/// (IPv4 as IPv4-mapped IPv6), or `None` when it is too broad.
fn narrow_ranges(m: &vigil_rules::AddrMatcher) -> Option<(u128, Vec<(u128, u128)>)> {
    let v4: u128 = m
        .v4_ranges()
        .iter()
        .map(|&(a, b)| (b - a) as u128 + 1)
        .sum();
    let v6: u128 = m
        .v6_ranges()
        .iter()
        .map(|&(a, b)| (b - a).saturating_add(1))
        .fold(0u128, |x, y| x.saturating_add(y));
    if v4 >= NARROW_V4 || v6 >= NARROW_V6 {
        return None;
    }
    let mapped = |a: u32| (0xffffu128 << 32) | a as u128;
    let mut r: Vec<(u128, u128)> = m
        .v4_ranges()
        .iter()
        .map(|&(a, b)| (mapped(a), mapped(b)))
        .collect();
    r.extend(m.v6_ranges().iter().copied());
    Some((v4 + v6, r))
}

/// Key of an address in the index space.
#[inline]
pub fn addr_key(a: std::net::IpAddr) -> u128 {
    match a {
        std::net::IpAddr::V4(v4) => (0xffffu128 << 32) | u32::from(v4) as u128,
        std::net::IpAddr::V6(v6) => u128::from(v6),
    }
}

/// Port tables for one transport protocol.
#[derive(Debug)]
struct PortTable {
    /// Group index by destination port.
    by_dst: Vec<u32>,
    /// Group index by source port (`u32::MAX`: no source-keyed rules).
    by_src: Vec<u32>,
}

/// Which group(s) a packet is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSel {
    pub primary: u32,
    pub secondary: Option<u32>,
}

/// All rule groups of a ruleset.
#[derive(Debug)]
pub struct RuleGroups {
    pub groups: Vec<RuleGroup>,
    tcp: PortTable,
    udp: PortTable,
    sctp: PortTable,
    /// Group per other protocol number (ICMP, ICMPv6, GRE, ...).
    by_proto: Vec<u32>,
    /// The groups' patterns are split ([`SplitSets`]).
    pub split: bool,
}

const NONE: u32 = u32::MAX;

struct Builder<'r, 's> {
    rules: &'r [CompiledRule],
    groups: Vec<RuleGroup>,
    dedup: HashMap<Vec<u32>, u32>,
    /// Chooses and builds each group's prefilter engine.
    selector: &'s mut Selector,
    /// How the groups' patterns are split ([`SplitSets`]).
    split: SplitMode,
    /// Pattern lists of the groups; engines are built once every group
    /// exists (see [`RuleGroups::build_engines`]).
    pending: Vec<PendingSet>,
    /// The indexed side of each rule without a fast pattern (`None`: not
    /// computed yet; `Some(None)`: checked on every packet), computed once
    /// per rule rather than once per group the rule is in.
    sides: Vec<Option<Option<IndexedSide>>>,
    /// Address indexes by their (sorted) rule list, source side then
    /// destination side, so that groups with the same indexed rules share
    /// one index.
    addr_cache: [HashMap<Vec<u32>, Arc<AddrIndex>>; 2],
}

/// The side a rule is address-indexed by (`true`: source) and its ranges.
type IndexedSide = (bool, Arc<[(u128, u128)]>);

impl Builder<'_, '_> {
    fn group_for(&mut self, mut members: Vec<u32>) -> u32 {
        members.sort_unstable();
        members.dedup();
        if let Some(&g) = self.dedup.get(&members) {
            return g;
        }
        let mut prefiltered = Vec::new();
        let mut always = Vec::new();
        let mut src_rules = Vec::new();
        let mut dst_rules = Vec::new();
        for &r in &members {
            let rule = &self.rules[r as usize];
            match &rule.fast_pattern {
                None if !rule.bidirectional => match self.indexed_side(r) {
                    Some((true, _)) => src_rules.push(r),
                    Some((false, _)) => dst_rules.push(r),
                    None => always.push(r),
                },
                Some(_) => prefiltered.push(r),
                None => always.push(r),
            }
        }
        let g = self.groups.len() as u32;
        let split = if self.split != SplitMode::Off && !prefiltered.is_empty() {
            Some(Box::new(self.split_sets(g, &prefiltered)))
        } else {
            if !prefiltered.is_empty() {
                self.pending.push(PendingSet {
                    group: g,
                    split: None,
                    patterns: patterns_of(self.rules, &prefiltered),
                });
            }
            None
        };
        let addr_indexed = src_rules.len() + dst_rules.len();
        let by_src = self.addr_index(0, src_rules);
        let by_dst = self.addr_index(1, dst_rules);
        self.groups.push(RuleGroup {
            engine: None,
            prefiltered,
            split,
            always,
            by_src,
            by_dst,
            addr_indexed,
        });
        self.dedup.insert(members, g);
        g
    }

    /// Splits the prefiltered rules of group `g` ([`SplitSets`]) and
    /// queues each distinct set's patterns for its engine.
    fn split_sets(&mut self, g: u32, prefiltered: &[u32]) -> SplitSets {
        let mut generic: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
        let mut app: Vec<[Vec<u32>; 2]> = vec![[Vec::new(), Vec::new()]; APP_SLOTS];
        let coarse = self.split == SplitMode::Protocols;
        for &r in prefiltered {
            let rule = &self.rules[r as usize];
            let dirs = if coarse {
                [true, true]
            } else {
                rule_dirs(rule)
            };
            let common = coarse
                && COMMON_PROTOS
                    .iter()
                    .any(|&p| rule.app_tests_match(AppProtoState::Detected(p)));
            if rule.app_tests.is_empty() || common {
                for (list, on) in generic.iter_mut().zip(dirs) {
                    if on {
                        list.push(r);
                    }
                }
                continue;
            }
            for (slot, lists) in app.iter_mut().enumerate() {
                if rule.app_tests_match(slot_state(slot)) {
                    for (list, on) in lists.iter_mut().zip(dirs) {
                        if on {
                            list.push(r);
                        }
                    }
                }
            }
        }
        let mut sets: Vec<PatternSet> = Vec::new();
        let mut index: HashMap<Vec<u32>, u32> = HashMap::default();
        let mut set_of = |rules: Vec<u32>, pending: &mut Vec<PendingSet>| -> u32 {
            if rules.is_empty() {
                return NO_SET;
            }
            if let Some(&i) = index.get(&rules) {
                return i;
            }
            let i = sets.len() as u32;
            let patterns = patterns_of(self.rules, &rules);
            pending.push(PendingSet {
                group: g,
                split: Some(i),
                patterns,
            });
            index.insert(rules.clone(), i);
            sets.push(PatternSet {
                engine: None,
                rules,
            });
            i
        };
        let [ts, tc] = generic;
        let generic = [set_of(ts, &mut self.pending), set_of(tc, &mut self.pending)];
        let mut slots = [[NO_SET; 2]; APP_SLOTS];
        for (slot, [ts, tc]) in slots.iter_mut().zip(app) {
            *slot = [set_of(ts, &mut self.pending), set_of(tc, &mut self.pending)];
        }
        SplitSets {
            sets,
            generic,
            app: slots,
        }
    }

    /// The side rule `r` (no fast pattern, not bidirectional) is indexed by,
    /// or `None` when both sides are too broad.
    fn indexed_side(&mut self, r: u32) -> Option<IndexedSide> {
        if let Some(side) = &self.sides[r as usize] {
            return side.clone();
        }
        let rule = &self.rules[r as usize];
        let side = match (narrow_ranges(&rule.src), narrow_ranges(&rule.dst)) {
            (Some(s), Some(d)) if d.0 < s.0 => Some((false, d.1.into())),
            (Some(s), _) => Some((true, s.1.into())),
            (None, Some(d)) => Some((false, d.1.into())),
            (None, None) => None,
        };
        self.sides[r as usize] = Some(side.clone());
        side
    }

    /// The address index of `rules` on one side (0: source, 1: destination),
    /// built once per distinct rule list.
    fn addr_index(&mut self, which: usize, rules: Vec<u32>) -> Arc<AddrIndex> {
        if let Some(idx) = self.addr_cache[which].get(&rules) {
            return idx.clone();
        }
        let mut ranges = Vec::new();
        for &r in &rules {
            if let Some(Some((_, rs))) = &self.sides[r as usize] {
                ranges.extend(rs.iter().map(|&(a, b)| (a, b, r)));
            }
        }
        let idx = Arc::new(AddrIndex::build(&ranges));
        self.addr_cache[which].insert(rules, idx.clone());
        idx
    }

    /// Sweeps port ranges: `keyed` holds (rule, ranges); `base` is added
    /// to every port's set. Returns a group index per port.
    fn port_table(
        &mut self,
        keyed: &[(u32, Vec<(u16, u16)>)],
        base: &[u32],
        with_base: bool,
    ) -> Vec<u32> {
        // Boundary events: at port p the rule enters (+) or leaves (-).
        let mut starts: Vec<Vec<u32>> = vec![Vec::new(); 65537];
        let mut ends: Vec<Vec<u32>> = vec![Vec::new(); 65537];
        for (r, ranges) in keyed {
            for &(lo, hi) in ranges {
                starts[lo as usize].push(*r);
                ends[hi as usize + 1].push(*r);
            }
        }
        let mut active: HashMap<u32, u32> = HashMap::default();
        let mut table = vec![NONE; 65536];
        let mut current = NONE;
        let mut dirty = true;
        for (p, slot) in table.iter_mut().enumerate() {
            for r in &ends[p] {
                if let Some(c) = active.get_mut(r) {
                    *c -= 1;
                    if *c == 0 {
                        active.remove(r);
                    }
                }
                dirty = true;
            }
            for r in &starts[p] {
                *active.entry(*r).or_insert(0) += 1;
                dirty = true;
            }
            if dirty {
                current = if active.is_empty() && !with_base {
                    NONE
                } else {
                    let mut m: Vec<u32> = active.keys().copied().collect();
                    if with_base {
                        m.extend_from_slice(base);
                    }
                    self.group_for(m)
                };
                dirty = false;
            }
            *slot = current;
        }
        table
    }
}

/// The port ranges a port spec admits (include minus exclude).
fn admitted_ranges(spec: &vigil_rules::PortSpec) -> Vec<(u16, u16)> {
    if spec.exclude.is_empty() {
        let mut r = spec.include.clone();
        r.sort_unstable();
        let mut out: Vec<(u16, u16)> = Vec::with_capacity(r.len());
        for (lo, hi) in r {
            match out.last_mut() {
                Some(last) if lo as u32 <= last.1 as u32 + 1 => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        return out;
    }
    let mut allowed = vec![false; 65536];
    for &(lo, hi) in &spec.include {
        for p in lo..=hi {
            allowed[p as usize] = true;
        }
    }
    for &(lo, hi) in &spec.exclude {
        for p in lo..=hi {
            allowed[p as usize] = false;
        }
    }
    let mut out = Vec::new();
    let mut p = 0usize;
    while p < 65536 {
        if allowed[p] {
            let s = p;
            while p < 65536 && allowed[p] {
                p += 1;
            }
            out.push((s as u16, (p - 1) as u16));
        } else {
            p += 1;
        }
    }
    out
}

fn is_any(r: &[(u16, u16)]) -> bool {
    r == [(0, 65535)]
}

/// Whether port ranges admit at least half the ports (`any` among them).
/// A rule keyed by
/// such a source side (`!80`, `1024:`, `!$HTTP_PORTS`) would put a
/// source-keyed group behind most source ports, so that most packets
/// were scanned a second time for a handful of patterns; it is grouped
/// as port-independent instead, one more pattern in the destination
/// groups' scans (verification still checks its ports).
fn admits_most(r: &[(u16, u16)]) -> bool {
    r.iter().map(|&(lo, hi)| (hi - lo) as u32 + 1).sum::<u32>() >= 32768
}

impl RuleGroups {
    pub fn build(rules: &[CompiledRule]) -> RuleGroups {
        RuleGroups::build_with(rules, &mut Selector::default())
    }

    /// Builds the groups with prefilter engines from `selector` (a fixed
    /// engine, or `auto`: measured per group).
    pub fn build_with(rules: &[CompiledRule], selector: &mut Selector) -> RuleGroups {
        let mut b = Builder {
            rules,
            groups: Vec::new(),
            dedup: HashMap::default(),
            split: selector.split_mode(),
            selector,
            pending: Vec::new(),
            sides: vec![None; rules.len()],
            addr_cache: [HashMap::default(), HashMap::default()],
        };
        let port_protos = [6u8, 17, 132];
        let mut tables = Vec::new();
        for proto in port_protos {
            let mut by_dst: Vec<(u32, Vec<(u16, u16)>)> = Vec::new();
            let mut by_src: Vec<(u32, Vec<(u16, u16)>)> = Vec::new();
            let mut any: Vec<u32> = Vec::new();
            for (i, r) in rules.iter().enumerate() {
                let i = i as u32;
                // Transaction rules are inspected on transactions only.
                if r.is_tx() || !r.admits_ip_proto(proto) {
                    continue;
                }
                if !r.uses_ports() {
                    any.push(i);
                    continue;
                }
                let dst = admitted_ranges(&r.dst_ports);
                let src = admitted_ranges(&r.src_ports);
                if r.bidirectional {
                    // Either endpoint may be the rule's destination.
                    if is_any(&dst) && is_any(&src) {
                        any.push(i);
                    } else {
                        let mut both = dst.clone();
                        both.extend(src.iter().copied());
                        if is_any(&dst) || is_any(&src) {
                            any.push(i);
                        } else {
                            by_dst.push((i, both.clone()));
                            by_src.push((i, both));
                        }
                    }
                } else if !is_any(&dst) {
                    by_dst.push((i, dst));
                } else if !admits_most(&src) {
                    by_src.push((i, src));
                } else {
                    any.push(i);
                }
            }
            let dst_table = b.port_table(&by_dst, &any, true);
            let src_table = b.port_table(&by_src, &[], false);
            tables.push(PortTable {
                by_dst: dst_table,
                by_src: src_table,
            });
        }
        let mut by_proto = vec![NONE; 256];
        let mut other_cache: HashMap<Vec<u32>, u32> = HashMap::default();
        // The packet rules' protocols, gathered once: 256 walks over the
        // whole rule set (a kilobyte per rule, a cache miss each) were
        // most of this function's own time. The flag: the rule has an
        // `ip_proto` test, so that its own check decides.
        let packet_rules: Vec<(u32, ProtoMatch, bool)> = rules
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.is_tx())
            .map(|(i, r)| (i as u32, r.proto, r.tests_ip_proto()))
            .collect();
        for (p, slot) in by_proto.iter_mut().enumerate() {
            // For TCP/UDP/SCTP this entry serves packets without usable
            // ports (non-first fragments): only `ip` rules apply to them.
            let portless = port_protos.contains(&(p as u8));
            let members: Vec<u32> = packet_rules
                .iter()
                .filter(|&&(i, proto, ip_proto)| {
                    (!portless || proto == ProtoMatch::Ip)
                        && proto.admits(p as u8)
                        && (!ip_proto || rules[i as usize].admits_ip_proto(p as u8))
                })
                .map(|&(i, _, _)| i)
                .collect();
            *slot = match other_cache.get(&members) {
                Some(&g) => g,
                None => {
                    let g = b.group_for(members.clone());
                    other_cache.insert(members, g);
                    g
                }
            };
        }
        let mut tables = tables.into_iter();
        let mut groups = RuleGroups {
            tcp: tables.next().expect("tcp table"),
            udp: tables.next().expect("udp table"),
            sctp: tables.next().expect("sctp table"),
            by_proto,
            split: b.split != SplitMode::Off,
            groups: b.groups,
        };
        groups.build_engines(b.pending, b.selector);
        groups
    }

    /// Builds each pattern list's engine, in group order. With `auto`
    /// the selector's sampled packets are routed to the groups first, so
    /// that each engine is chosen for the share of the traffic it will
    /// scan (TCP payloads count twice: they are scanned once per packet
    /// and once more as reassembled stream data; a protocol's set is
    /// given its group's share, an upper bound); then the selector's
    /// whole-configuration check times the sampled packets through the
    /// groups' single or generic engines as the run scans them, and may
    /// replace the engines they reach.
    fn build_engines(&mut self, pending: Vec<PendingSet>, selector: &mut Selector) {
        let traffic = selector.traffic();
        let shares: Option<Vec<f64>> = (!traffic.is_empty()).then(|| {
            let mut bytes = vec![0f64; self.groups.len()];
            let total: f64 = traffic.iter().map(|t| t.bytes as f64).sum::<f64>().max(1.0);
            for t in traffic {
                let sel = self.select(t.proto, t.sp, t.dp);
                let scans = if t.proto == 6 { 2.0 } else { 1.0 };
                for g in std::iter::once(sel.primary).chain(sel.secondary) {
                    if let Some(b) = bytes.get_mut(g as usize) {
                        *b += scans * t.bytes as f64;
                    }
                }
            }
            bytes.into_iter().map(|b| b / total).collect()
        });
        // The pending list each group's packets are routed to: its single
        // engine's or its generic set's, per direction (a sampled packet
        // is taken as going to the server when its destination port is
        // the lower one).
        let mut routed = vec![[NO_GROUP; 2]; self.groups.len()];
        for (i, p) in pending.iter().enumerate() {
            let g = p.group as usize;
            let split = self.groups[g].split.as_deref();
            for (d, slot) in routed[g].iter_mut().enumerate() {
                if p.split == split.map(|s| s.generic[d]) {
                    *slot = i as u32;
                }
            }
        }
        let routes: Vec<Route> = selector
            .sampled_traffic()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let sel = self.select(t.proto, t.sp, t.dp);
                let d = usize::from(t.dp > t.sp);
                let list = |g: Option<u32>| {
                    g.and_then(|g| routed.get(g as usize).map(|r| r[d]))
                        .unwrap_or(NO_GROUP)
                };
                Route {
                    sample: i as u32,
                    groups: [list(Some(sel.primary)), list(sel.secondary)],
                    stream: t.proto == 6,
                }
            })
            .collect();
        // The engines are independent: with a fixed engine the selector
        // builds them all at once, on every core, and the loop below takes
        // them in order.
        let sets: Vec<&[Pattern]> = pending
            .iter()
            .filter(|p| !p.patterns.is_empty())
            .map(|p| &p.patterns[..])
            .collect();
        selector.prebuild(&sets);
        let mut built = vec![false; pending.len()];
        for (i, p) in pending.iter().enumerate() {
            if p.patterns.is_empty() {
                continue;
            }
            let share = shares.as_ref().map(|s| s[p.group as usize]);
            let group = &mut self.groups[p.group as usize];
            match selector.build_for(&p.patterns, share) {
                Ok(e) => {
                    built[i] = true;
                    match (p.split, group.split.as_deref_mut()) {
                        (Some(s), Some(split)) => split.sets[s as usize].engine = Some(e),
                        _ => group.engine = Some(e),
                    }
                }
                // Building from in-memory patterns only fails on resource
                // limits of the automaton; fall back to checking every
                // rule of the list.
                Err(_) => {
                    match (p.split, group.split.as_deref()) {
                        (Some(s), Some(split)) => {
                            let rules = split.sets[s as usize].rules.clone();
                            group.always.extend(rules);
                        }
                        _ => group.always.append(&mut group.prefiltered),
                    }
                    group.always.sort_unstable();
                    group.always.dedup();
                }
            }
        }
        if routes.is_empty() {
            return;
        }
        // Lists whose engine failed to build take no part.
        let sets: Vec<&[Pattern]> = pending
            .iter()
            .zip(&built)
            .map(|(p, &ok)| if ok { &p.patterns[..] } else { &[][..] })
            .collect();
        if let Some(engines) = selector.check_whole(&sets, &routes) {
            for (p, e) in pending.iter().zip(engines) {
                let Some(e) = e else { continue };
                let group = &mut self.groups[p.group as usize];
                match (p.split, group.split.as_deref_mut()) {
                    (Some(s), Some(split)) => split.sets[s as usize].engine = Some(e),
                    _ => group.engine = Some(e),
                }
            }
        }
    }

    /// The groups a packet of `proto` with ports (sp, dp) is checked
    /// against.
    pub fn select(&self, proto: u8, sp: u16, dp: u16) -> GroupSel {
        let t = match proto {
            6 => &self.tcp,
            17 => &self.udp,
            132 => &self.sctp,
            _ => {
                return GroupSel {
                    primary: self.by_proto[proto as usize],
                    secondary: None,
                }
            }
        };
        let secondary = t.by_src[sp as usize];
        GroupSel {
            primary: t.by_dst[dp as usize],
            secondary: (secondary != NONE).then_some(secondary),
        }
    }

    /// Packets whose transport header was not decoded (non-first IP
    /// fragments): only `ip` rules for port protocols.
    pub fn select_proto_only(&self, proto: u8) -> GroupSel {
        GroupSel {
            primary: self.by_proto[proto as usize],
            secondary: None,
        }
    }

    pub fn stats(&self) -> GroupStats {
        GroupStats {
            groups: self.groups.len(),
            prefilter_patterns: self.groups.iter().map(|g| g.prefiltered.len()).sum(),
            heap_bytes: self
                .groups
                .iter()
                .flat_map(|g| g.engines())
                .map(|(e, _)| e.heap_bytes())
                .sum(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupStats {
    pub groups: usize,
    pub prefilter_patterns: usize,
    pub heap_bytes: usize,
}
