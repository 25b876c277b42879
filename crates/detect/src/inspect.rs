//! Per-packet detection: prefilter, then verification of each candidate
//! rule in rule order, with per-flow state (flowbits, pass) updated in
//! packet order.

use vigil_rules::{Buffer, Condition, FlagsModifier, FlowbitsCmd};
use vigil_wire::{Packet, L4};

use crate::group::GroupSel;
use crate::payload::MAX_VARS;
use crate::rule::{Check, CompiledRule, FlowbitOp};
use crate::DetectEngine;

/// What detection needs to know about the packet's flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowView {
    pub to_server: bool,
    /// TCP: the three-way handshake completed; other protocols: packets
    /// were seen in both directions.
    pub established: bool,
}

/// Per-flow detection state, owned by the flow.
#[derive(Debug, Clone, Default)]
pub struct FlowDetectState {
    bits: Vec<u64>,
    /// A `pass` rule matched on this flow: no further inspection.
    pub passed: bool,
}

impl FlowDetectState {
    pub fn is_set(&self, bit: u32) -> bool {
        self.bits
            .get(bit as usize / 64)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }

    fn set(&mut self, bit: u32, on: bool) {
        let w = bit as usize / 64;
        if self.bits.len() <= w {
            if !on {
                return;
            }
            self.bits.resize(w + 1, 0);
        }
        if on {
            self.bits[w] |= 1 << (bit % 64);
        } else {
            self.bits[w] &= !(1 << (bit % 64));
        }
    }
}

/// Reusable per-worker buffers, so detection allocates nothing per packet.
#[derive(Debug, Default)]
pub struct DetectScratch {
    seen: Vec<u64>,
    vars: [u64; MAX_VARS],
    /// Counters.
    pub prefilter_hits: u64,
    pub rules_checked: u64,
}

/// Everything detection looks at for one packet.
#[derive(Debug, Clone, Copy)]
pub struct PacketInput<'p, 'a> {
    pub packet: &'p Packet<'a>,
    pub flow: Option<FlowView>,
}

fn flowbits_test(op: &FlowbitOp, st: Option<&FlowDetectState>) -> bool {
    let is = |b: u32| st.is_some_and(|s| s.is_set(b));
    match op.cmd {
        FlowbitsCmd::IsSet => {
            if op.any {
                op.bits.iter().any(|&b| is(b))
            } else {
                op.bits.iter().all(|&b| is(b))
            }
        }
        FlowbitsCmd::IsNotSet => {
            if op.any {
                op.bits.iter().any(|&b| !is(b))
            } else {
                op.bits.iter().all(|&b| !is(b))
            }
        }
        _ => true,
    }
}

fn flowbits_apply(op: &FlowbitOp, st: &mut FlowDetectState) {
    for &b in &op.bits {
        match op.cmd {
            FlowbitsCmd::Set => st.set(b, true),
            FlowbitsCmd::Unset => st.set(b, false),
            FlowbitsCmd::Toggle => {
                let cur = st.is_set(b);
                st.set(b, !cur)
            }
            _ => {}
        }
    }
}

fn flags_match(flags: u8, want: u8, mask: u8, m: FlagsModifier) -> bool {
    let f = flags & !mask;
    match m {
        FlagsModifier::Exact => f == want,
        FlagsModifier::Plus => f & want == want,
        FlagsModifier::Any => f & want != 0,
        FlagsModifier::Not => f & want == 0,
    }
}

fn check_condition(c: &Condition, p: &Packet<'_>) -> bool {
    let ip = p.ip.as_ref();
    match c {
        Condition::Dsize(cmp) => {
            // dsize only applies to packets with a transport payload.
            !matches!(p.l4, L4::None) && cmp.matches(p.payload.len() as u64)
        }
        Condition::Ttl(cmp) => ip.is_some_and(|i| cmp.matches(i.ttl as u64)),
        Condition::Tos(cmp) => ip.is_some_and(|i| cmp.matches(i.tos as u64)),
        Condition::IpId(id) => ip.is_some_and(|i| i.version == 4 && i.id == *id as u32),
        Condition::Itype(cmp) => match p.l4 {
            L4::Icmpv4(i) | L4::Icmpv6(i) => cmp.matches(i.itype as u64),
            _ => false,
        },
        Condition::Icode(cmp) => match p.l4 {
            L4::Icmpv4(i) | L4::Icmpv6(i) => cmp.matches(i.icode as u64),
            _ => false,
        },
        Condition::IcmpId(id) => match p.l4 {
            L4::Icmpv4(i) | L4::Icmpv6(i) => i.id == Some(*id),
            _ => false,
        },
        Condition::IcmpSeq(seq) => match p.l4 {
            L4::Icmpv4(i) | L4::Icmpv6(i) => i.seq == Some(*seq),
            _ => false,
        },
        Condition::Flags(f) => match p.l4 {
            L4::Tcp(t) => flags_match(t.flags, f.flags, f.mask, f.modifier),
            _ => false,
        },
        Condition::TcpMss(cmp) => match p.l4 {
            L4::Tcp(t) => t.mss.is_some_and(|m| cmp.matches(m as u64)),
            _ => false,
        },
        Condition::TcpSeq(v) => matches!(p.l4, L4::Tcp(t) if t.seq == *v),
        Condition::TcpAck(v) => matches!(p.l4, L4::Tcp(t) if t.ack == *v),
        Condition::TcpWindow { negated, value } => match p.l4 {
            L4::Tcp(t) => (t.window == *value) != *negated,
            _ => false,
        },
        Condition::IpProto { negated, op, .. } => {
            ip.is_some_and(|i| op.matches(i.proto as u64) != *negated)
        }
        Condition::SameIp => ip.is_some_and(|i| i.src == i.dst),
        Condition::Fragbits { modifier, bits } => ip.is_some_and(|i| {
            let mut have = 0u8;
            if i.fragment.as_ref().is_some_and(|f| f.more_fragments) {
                have |= 1;
            }
            if i.dont_fragment {
                have |= 2;
            }
            if i.reserved_bit {
                have |= 4;
            }
            flags_match(have, *bits, 0, *modifier)
        }),
        Condition::Fragoffset { negated, op } => ip.is_some_and(|i| {
            let off = i.fragment.as_ref().map_or(0, |f| f.offset) as u64;
            op.matches(off) != *negated
        }),
        // Handled elsewhere or never reach here (compile rejects them).
        _ => true,
    }
}

fn buffer_bytes<'a>(b: &Buffer, p: &Packet<'a>) -> Option<&'a [u8]> {
    let ip = p.ip.as_ref()?;
    Some(match b {
        Buffer::Packet => p.payload(),
        Buffer::Ipv4Hdr if ip.version == 4 => p.data.get(ip.header.clone())?,
        Buffer::Ipv6Hdr if ip.version == 6 => p.data.get(ip.fixed_header.clone())?,
        Buffer::TcpHdr if matches!(p.l4, L4::Tcp(_)) => p.l4_header(),
        Buffer::UdpHdr if matches!(p.l4, L4::Udp(_)) => p.l4_header(),
        Buffer::Icmpv4Hdr if matches!(p.l4, L4::Icmpv4(_)) => p.l4_header(),
        Buffer::Icmpv6Hdr if matches!(p.l4, L4::Icmpv6(_)) => p.l4_header(),
        _ => return None,
    })
}

impl DetectEngine {
    /// Which rule groups apply to a packet (needs only the decoded packet,
    /// so a batch of packets can be grouped before any flow state is
    /// touched).
    pub fn select_groups(&self, p: &Packet<'_>) -> Option<GroupSel> {
        let ip = p.ip.as_ref()?;
        Some(match p.l4 {
            L4::Tcp(_) | L4::Udp(_) | L4::Sctp { .. } => {
                self.groups.select(ip.proto, p.src_port(), p.dst_port())
            }
            _ if matches!(ip.proto, 6 | 17 | 132) => self.groups.select_proto_only(ip.proto),
            _ => self.groups.select(ip.proto, 0, 0),
        })
    }

    /// Phase 1: appends to `out` the rules of the selected groups whose
    /// fast pattern occurs in `payload`, plus the rules that have none.
    /// The result is sorted and deduplicated (rule order).
    pub fn candidates(
        &self,
        sel: GroupSel,
        payload: &[u8],
        addrs: Option<(std::net::IpAddr, std::net::IpAddr)>,
        scratch: &mut DetectScratch,
        out: &mut Vec<u32>,
    ) {
        let words = self.rules.len().div_ceil(64);
        if scratch.seen.len() < words {
            scratch.seen.resize(words, 0);
        }
        let start = out.len();
        for g in std::iter::once(sel.primary).chain(sel.secondary) {
            let group = &self.groups.groups[g as usize];
            for &r in &group.always {
                push_unique(&mut scratch.seen, out, r);
            }
            if group.addr_indexed > 0 {
                if let Some((src, dst)) = addrs {
                    for &r in group.by_src.lookup(crate::group::addr_key(src)) {
                        push_unique(&mut scratch.seen, out, r);
                    }
                    for &r in group.by_dst.lookup(crate::group::addr_key(dst)) {
                        push_unique(&mut scratch.seen, out, r);
                    }
                }
            }
            if let Some(engine) = &group.engine {
                if !payload.is_empty() {
                    let seen = &mut scratch.seen;
                    let hits = &mut scratch.prefilter_hits;
                    engine.scan_ids(payload, &mut |id| {
                        *hits += 1;
                        push_unique(seen, out, group.prefiltered[id as usize]);
                    });
                }
            }
        }
        for &r in &out[start..] {
            scratch.seen[r as usize / 64] &= !(1 << (r % 64));
        }
        out[start..].sort_unstable();
    }

    /// Phase 2: verifies `candidates` (sorted) in rule order and appends the
    /// indices of the rules that match and should alert to `alerts`.
    /// Updates flowbits in `state` as rules match. Returns true when a
    /// `pass` rule matched (the caller stops inspecting the flow).
    pub fn verify(
        &self,
        input: PacketInput<'_, '_>,
        candidates: &[u32],
        mut state: Option<&mut FlowDetectState>,
        scratch: &mut DetectScratch,
        alerts: &mut Vec<u32>,
    ) -> bool {
        let p = input.packet;
        let Some(ip) = &p.ip else { return false };
        let (sp, dp) = (p.src_port(), p.dst_port());
        for &ri in candidates {
            let r = &self.rules[ri as usize];
            scratch.rules_checked += 1;
            if !r.header_matches(ip.src, sp, ip.dst, dp) {
                continue;
            }
            if !flow_matches(r, input.flow, p) {
                continue;
            }
            if !r
                .flowbit_tests
                .iter()
                .all(|op| flowbits_test(op, state.as_deref()))
            {
                continue;
            }
            if !r.checks.iter().all(|c| match c {
                Check::Cond(c) => check_condition(c, p),
                Check::Event(e) => p.events.contains(*e),
            }) {
                continue;
            }
            scratch.vars = [0; MAX_VARS];
            let mut ok = true;
            for (buf, prog) in &r.buffers {
                match buffer_bytes(buf, p) {
                    Some(bytes) if prog.matches(bytes, &mut scratch.vars) => {}
                    _ => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                continue;
            }
            if let Some(st) = state.as_deref_mut() {
                for op in &r.flowbit_sets {
                    flowbits_apply(op, st);
                }
            }
            if r.action == vigil_rules::Action::Pass {
                if let Some(st) = state.as_deref_mut() {
                    st.passed = true;
                }
                return true;
            }
            if !r.noalert {
                alerts.push(ri);
            }
        }
        false
    }
}

#[inline]
fn push_unique(seen: &mut [u64], out: &mut Vec<u32>, r: u32) {
    let (w, b) = (r as usize / 64, 1u64 << (r % 64));
    if seen[w] & b == 0 {
        seen[w] |= b;
        out.push(r);
    }
}

fn flow_matches(r: &CompiledRule, flow: Option<FlowView>, p: &Packet<'_>) -> bool {
    let f = &r.flow;
    if f.stateless {
        return true;
    }
    if !(f.to_server
        || f.to_client
        || f.established
        || f.not_established
        || f.only_stream
        || f.only_frag
        || f.no_frag)
    {
        return true;
    }
    if f.only_frag && p.ip.as_ref().is_none_or(|i| i.fragment.is_none()) {
        return false;
    }
    if f.no_frag && p.ip.as_ref().is_some_and(|i| i.fragment.is_some()) {
        return false;
    }
    let Some(v) = flow else {
        return !(f.to_server || f.to_client || f.established || f.only_stream);
    };
    if f.to_server && !v.to_server {
        return false;
    }
    if f.to_client && v.to_server {
        return false;
    }
    if f.established && !v.established {
        return false;
    }
    if f.not_established && v.established {
        return false;
    }
    if f.only_stream && !(matches!(p.l4, L4::Tcp(_)) && v.established) {
        return false;
    }
    true
}
