//! Per-packet detection: prefilter, then verification of each candidate
//! rule in rule order, with per-flow state (flowbits, pass) updated in
//! packet order.

use vigil_rules::{
    Buffer, Condition, CsumLayer, ElephantDir, FlagsModifier, FlowCountDir, FlowCounter,
    FlowbitsCmd, FlowintOp, IntCmp, VlanLayer,
};
use vigil_wire::{Packet, L4};

use crate::group::{GroupSel, PatternSet};
use crate::payload::{PendingVar, MAX_VARS};
use crate::rule::{Check, CompiledRule, FlowbitOp, FlowintOperand, FlowintStep};
use crate::stream::StreamChunk;
use crate::DetectEngine;
use std::sync::Arc;
use vigil_rules::VarScope;
use vigil_stream::StreamEvents;

/// What detection needs to know about the packet's flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowView {
    pub to_server: bool,
    /// TCP: the three-way handshake completed; other protocols: packets
    /// were seen in both directions.
    pub established: bool,
    /// Flow counters per direction, the current packet included
    /// (`flow.pkts`, `flow.bytes`). Bytes are whole frames, as Suricata
    /// counts them.
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    /// TCP session sequence progress (`next_seq - isn`) of the client and
    /// server streams, for `stream_size`; `None` without a session.
    pub tcp_sizes: Option<(u32, u32)>,
    /// `flow.age`: whole seconds from the flow's first packet to this one
    /// (Suricata: the difference of their timestamps' seconds).
    pub age_secs: u64,
    /// The flow's application protocol as detected so far
    /// (`app-layer-protocol`, rules whose header names a protocol).
    pub app_proto: crate::app::AppProtoState,
    /// Protocol detection completed on this packet (Suricata's
    /// `PKT_PROTO_DETECT_TS_DONE`/`TC_DONE`): the only packet a PD-only
    /// rule ([`crate::CompiledRule::pd_only`]) can match.
    pub app_proto_decided_now: bool,
    /// The TCP session state after this packet (`tcp.session`); `None`
    /// for a flow that is not TCP.
    pub tcp_state: Option<vigil_stream::TcpState>,
    /// `flow.elephant`: the flow is an elephant (to-server, to-client).
    pub elephant: [bool; 2],
}

/// Per-flow detection state, owned by the flow.
#[derive(Debug, Clone, Default)]
pub struct FlowDetectState {
    bits: Vec<u64>,
    /// The set flowbits in the order they were set (Suricata's flow
    /// variable list, which the EVE `metadata.flowbits` follows).
    bit_order: Vec<u32>,
    /// `flowint` variables by index (`None`: not set).
    ints: Vec<Option<u32>>,
    /// The set flowints in the order they were first set.
    int_order: Vec<u32>,
    /// Flow variables pcres captured, in the order they were first set
    /// (a later capture replaces the value in place), each at most
    /// [`vigil_rules::VAR_VALUE_MAX`] bytes.
    vars: Vec<(Arc<str>, Box<[u8]>)>,
    /// A `pass` rule matched on this flow: no further inspection.
    pub passed: bool,
    /// The countries of the flow's addresses (`geoip`).
    pub geo: crate::geoip::GeoCache,
}

impl FlowDetectState {
    /// The state carried over to another detection engine (a rule
    /// reload): `bits[i]` / `ints[i]` give the new index of old variable
    /// `i`, `None` for a name the new rules do not use (dropped).
    pub fn remap(&mut self, bits: &[Option<u32>], ints: &[Option<u32>]) {
        // The new rules may come with another GeoIP database.
        self.geo.clear();
        self.bits.clear();
        for b in std::mem::take(&mut self.bit_order) {
            if let Some(Some(n)) = bits.get(b as usize) {
                self.set(*n, true);
            }
        }
        let old_ints = std::mem::take(&mut self.ints);
        for i in std::mem::take(&mut self.int_order) {
            if let (Some(Some(v)), Some(Some(n))) = (old_ints.get(i as usize), ints.get(i as usize))
            {
                self.set_flowint(*n, *v);
            }
        }
    }

    /// Keeps the flow variables whose name `keep` accepts (a rule reload
    /// drops those the new rules do not use, as flowbits and flowints).
    pub fn retain_flowvars(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.vars.retain(|(n, _)| keep(n));
    }

    pub fn is_set(&self, bit: u32) -> bool {
        self.bits
            .get(bit as usize / 64)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }

    /// The set flowbits, in the order they were set.
    pub fn flowbits_in_order(&self) -> &[u32] {
        &self.bit_order
    }

    /// The value of `flowint` variable `var`, if set.
    pub fn flowint(&self, var: u32) -> Option<u32> {
        self.ints.get(var as usize).copied().flatten()
    }

    /// The set flowints `(index, value)`, in the order they were first set.
    pub fn flowints_in_order(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.int_order
            .iter()
            .filter_map(|&i| self.flowint(i).map(|v| (i, v)))
    }

    /// The flow variables, in the order they were first set.
    pub fn flowvars(&self) -> &[(Arc<str>, Box<[u8]>)] {
        &self.vars
    }

    /// The value of flow variable `name`, if set.
    pub fn flowvar(&self, name: &str) -> Option<&[u8]> {
        self.vars
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| &**v)
    }

    /// Stores a flow variable (Suricata's `FlowVarAddIdValue`: an existing
    /// one keeps its place).
    pub fn set_flowvar(&mut self, name: &Arc<str>, value: Box<[u8]>) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some(v) => v.1 = value,
            None => self.vars.push((name.clone(), value)),
        }
    }

    fn set_flowint(&mut self, var: u32, v: u32) {
        let i = var as usize;
        if self.ints.len() <= i {
            self.ints.resize(i + 1, None);
        }
        if self.ints[i].is_none() {
            self.int_order.push(var);
        }
        self.ints[i] = Some(v);
    }

    fn set(&mut self, bit: u32, on: bool) {
        let w = bit as usize / 64;
        if self.bits.len() <= w {
            if !on {
                return;
            }
            self.bits.resize(w + 1, 0);
        }
        let was = self.bits[w] & (1 << (bit % 64)) != 0;
        if on {
            self.bits[w] |= 1 << (bit % 64);
            if !was {
                self.bit_order.push(bit);
            }
        } else {
            self.bits[w] &= !(1 << (bit % 64));
            if was {
                self.bit_order.retain(|&b| b != bit);
            }
        }
    }
}

/// Reusable per-worker buffers, so detection allocates nothing per packet.
#[derive(Debug, Default)]
pub struct DetectScratch {
    pub(crate) seen: Vec<u64>,
    pub(crate) vars: [u64; MAX_VARS],
    /// Packet and alert variables of the packet being inspected.
    pub captured: PacketVars,
    /// Counters.
    pub prefilter_hits: u64,
    pub rules_checked: u64,
    /// Per-rule costs (`--profile-rules`); `None` when profiling is off.
    pub profile: Option<Box<crate::profile::RuleProfile>>,
}

/// A variable: its name and value.
pub type NamedValue = (Arc<str>, Box<[u8]>);

/// The variables pcres of matching rules captured on one packet.
#[derive(Debug, Default)]
pub struct PacketVars {
    /// Packet variables in the order they were stored (Suricata's
    /// `p->pktvar`; the same name may appear more than once, `pktvar`
    /// reads the first).
    pub pktvars: Vec<(Arc<str>, Box<[u8]>)>,
    /// Alert variables (`(?P<alert_name>...)`) of the rules that matched
    /// the packet, by rule index: the alert's `context` object.
    pub alert_vars: Vec<(u32, Vec<NamedValue>)>,
    /// Captures of the rule just inspected.
    pending: Vec<PendingVar>,
}

impl DetectScratch {
    /// Forgets the packet and alert variables of the previous packet:
    /// call before inspecting a packet.
    pub fn begin_packet(&mut self) {
        self.captured.pktvars.clear();
        self.captured.alert_vars.clear();
    }
}

impl PacketVars {
    /// The alert variables rule `rule` captured on this packet.
    pub fn alert_vars_of(&self, rule: u32) -> &[(Arc<str>, Box<[u8]>)] {
        self.alert_vars
            .iter()
            .find(|(r, _)| *r == rule)
            .map_or(&[], |(_, v)| v)
    }
}

/// Whether the rule's `flowvar` / `pktvar` tests hold.
pub(crate) fn var_tests_match(
    r: &CompiledRule,
    state: Option<&FlowDetectState>,
    pv: &PacketVars,
) -> bool {
    r.var_tests.iter().all(|t| {
        let value = if t.flow {
            state.and_then(|s| s.flowvar(&t.name))
        } else {
            pv.pktvars
                .iter()
                .find(|(n, _)| *n == t.name)
                .map(|(_, v)| &**v)
        };
        value.is_some_and(|v| t.matches(v))
    })
}

/// After rule `ri` was inspected: when it matched, stores what its pcres
/// captured (flow variables in the flow, packet variables with the
/// packet, alert variables for its alert), as Suricata's
/// `DetectVarProcessList`; otherwise the captures are dropped.
pub(crate) fn store_captures(
    ri: u32,
    matched: bool,
    state: Option<&mut FlowDetectState>,
    scratch: &mut PacketVars,
) {
    let mut pending = std::mem::take(&mut scratch.pending);
    crate::payload::pending_vars_take(&mut pending);
    if matched {
        let mut state = state;
        let mut alert = Vec::new();
        for v in pending.drain(..) {
            match v.scope {
                VarScope::Flow => {
                    if let Some(st) = state.as_deref_mut() {
                        st.set_flowvar(&v.name, v.value);
                    }
                }
                VarScope::Pkt => scratch.pktvars.push((v.name, v.value)),
                VarScope::Alert => alert.push((v.name, v.value)),
            }
        }
        if !alert.is_empty() {
            scratch.alert_vars.push((ri, alert));
        }
    }
    pending.clear();
    scratch.pending = pending;
}

/// Everything detection looks at for one packet.
#[derive(Debug, Clone, Copy)]
pub struct PacketInput<'p, 'a> {
    pub packet: &'p Packet<'a>,
    pub flow: Option<FlowView>,
    /// Reassembled stream data of the packet's direction that is ready
    /// for inspection on this packet (Suricata's raw stream inspection).
    pub stream: Option<&'p StreamChunk>,
    /// The packet's payload went into its TCP stream (`PKT_STREAM_ADD`):
    /// stream rules do not also inspect it unless they require packets.
    pub stream_added: bool,
    /// A pseudo packet made at flow end to inspect what is left of the
    /// stream: it has no payload of its own.
    pub pseudo: bool,
    /// The flow's payload is no longer inspected (Suricata's
    /// no-payload-inspection: TLS after the handshake): rules with
    /// packet-payload keywords do not match; header-only rules still do.
    pub no_payload: bool,
    /// The packet was reassembled from fragments (`flow:only_frag`).
    pub rebuilt: bool,
    /// Stream events raised by this packet (`stream-event`).
    pub stream_events: StreamEvents,
}

impl<'p, 'a> PacketInput<'p, 'a> {
    /// A plain packet: no stream data, not reassembled.
    pub fn new(packet: &'p Packet<'a>, flow: Option<FlowView>) -> Self {
        PacketInput {
            packet,
            flow,
            stream: None,
            stream_added: false,
            pseudo: false,
            no_payload: false,
            rebuilt: false,
            stream_events: StreamEvents::new(),
        }
    }
}

/// The buffers a deferred rule's dataset keywords look at: for each
/// keyword in rule order, the buffers (of a multi-buffer, each instance)
/// on which the rest of its buffer's keywords matched.
pub type DatasetValues = Box<[Box<[Box<[u8]>]>]>;

/// One rule that matched a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Index into [`DetectEngine::rules`].
    pub rule: u32,
    /// The payload matched in reassembled stream data, not the packet.
    pub stream: bool,
    /// The application-layer transaction the rule matched on (rules on
    /// sticky buffers such as `http.uri`), for the alert's `http`/`dns`/
    /// `tls` object.
    pub tx: Option<crate::app::TxId>,
    /// The rule has `xbits`: whether it matches (and alerts) is decided
    /// where events meet in input order ([`crate::xbits`]); the worker
    /// raises the event, not an alert.
    pub deferred: bool,
    /// A deferred rule with `dataset` / `datarep`: the buffers they look
    /// at ([`crate::dataset`]).
    pub datasets: Option<DatasetValues>,
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

/// Runs a rule's `flowint` steps in order against the flow's variables:
/// modifiers change them, tests must hold. Returns false at the first
/// failing test (earlier modifications stay, as in Suricata). Without a
/// flow, tests fail and modifiers do nothing.
fn flowints_run(steps: &[FlowintStep], st: Option<&mut FlowDetectState>) -> bool {
    if steps.is_empty() {
        return true;
    }
    let Some(st) = st else {
        return steps.iter().all(|s| s.op.is_modifier());
    };
    for s in steps {
        let cur = st.flowint(s.var);
        let operand = match s.value {
            FlowintOperand::None => None,
            FlowintOperand::Num(n) => Some(n),
            // An unset operand variable makes the step fail.
            FlowintOperand::Var(v) => match st.flowint(v) {
                Some(x) => Some(x),
                None => return false,
            },
        };
        let ok = match (s.op, operand) {
            (FlowintOp::IsSet, _) => cur.is_some(),
            (FlowintOp::NotSet, _) => cur.is_none(),
            (FlowintOp::Set, Some(v)) => {
                st.set_flowint(s.var, v);
                true
            }
            (FlowintOp::Add, Some(v)) => {
                st.set_flowint(s.var, cur.unwrap_or(0).wrapping_add(v));
                true
            }
            (FlowintOp::Sub, Some(v)) => {
                st.set_flowint(s.var, cur.unwrap_or(0).wrapping_sub(v));
                true
            }
            (op, Some(v)) => cur.is_some_and(|c| match op {
                FlowintOp::Eq => c == v,
                FlowintOp::Ne => c != v,
                FlowintOp::Lt => c < v,
                FlowintOp::Le => c <= v,
                FlowintOp::Gt => c > v,
                FlowintOp::Ge => c >= v,
                _ => false,
            }),
            (_, None) => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Suricata's signature mask: these dsize forms need a packet with
/// payload (so `dsize:!9` does not match empty packets).
fn dsize_needs_payload(cmp: &IntCmp) -> bool {
    matches!(
        cmp,
        IntCmp::Ne(_)
            | IntCmp::Gt(_)
            | IntCmp::Ge(_)
            | IntCmp::RangeEx(..)
            | IntCmp::NotRangeEx(..)
    ) || matches!(cmp, IntCmp::Eq(n) if *n > 0)
}

/// `rpc`: Suricata's detect-rpc.c on the packet payload. TCP skips the
/// 4-byte record marker and needs 28 bytes, UDP needs 24; the message
/// (xid, type, rpcvers, prog, vers, proc, big-endian) must be a CALL
/// (type 0) to the program, and to the version and procedure unless they
/// are `*`. As in Suricata, `rpcvers` is not checked. Other protocols
/// never match.
pub fn rpc_matches(r: &vigil_rules::RpcMatch, p: &Packet<'_>) -> bool {
    let payload = p.payload();
    let msg = match p.l4 {
        L4::Tcp(_) if payload.len() >= 28 => &payload[4..],
        L4::Udp(_) if payload.len() >= 24 => payload,
        _ => return false,
    };
    rpc_call_matches(r, msg)
}

/// The RPC message test on bytes that start at the xid.
pub fn rpc_call_matches(r: &vigil_rules::RpcMatch, msg: &[u8]) -> bool {
    let word = |i: usize| -> Option<u32> {
        let b = msg.get(i * 4..i * 4 + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(mtype), Some(prog), Some(vers), Some(proc_)) = (word(1), word(3), word(4), word(5))
    else {
        return false;
    };
    mtype == 0
        && prog == r.program
        && r.version.is_none_or(|v| v == vers)
        && r.procedure.is_none_or(|v| v == proc_)
}

fn check_condition(c: &Condition, p: &Packet<'_>, flow: Option<&FlowView>) -> bool {
    let ip = p.ip.as_ref();
    match c {
        Condition::Dsize(cmp) => {
            // dsize only applies to packets with a transport payload.
            let has_l4 = !matches!(p.l4, L4::None);
            let needs_payload = dsize_needs_payload(cmp);
            has_l4
                && (!needs_payload || !p.payload.is_empty())
                && cmp.matches(p.payload.len() as u64)
        }
        Condition::Icmpv6Mtu(cmp) => match p.l4 {
            L4::Icmpv6(i) => i.mtu.is_some_and(|m| cmp.matches(m as u64)),
            _ => false,
        },
        Condition::Checksum { layer, valid } => checksum_matches(p, *layer, *valid),
        Condition::IgmpType(cmp) => {
            matches!(p.l4, L4::Igmp(g) if cmp.matches(u64::from(g.itype)))
        }
        Condition::L3Proto(v) => ip.is_some_and(|i| i.version == *v),
        Condition::Rpc(r) => rpc_matches(r, p),
        Condition::SctpVtag(cmp) => matches!(p.l4, L4::Sctp(s) if cmp.matches(u64::from(s.vtag))),
        Condition::SctpChunkCnt(cmp) => {
            matches!(p.l4, L4::Sctp(s) if cmp.matches(u64::from(s.chunk_cnt)))
        }
        // Any of the first 16 chunks (those Suricata records).
        Condition::SctpChunkType(cmp) => match p.l4 {
            L4::Sctp(s) => s.chunk_types().iter().any(|t| cmp.matches(u64::from(*t))),
            _ => false,
        },
        Condition::TcpWscale(cmp) => match p.l4 {
            L4::Tcp(t) => t.wscale.is_some_and(|w| cmp.matches(w as u64)),
            _ => false,
        },
        Condition::FlowCount { counter, dir, cmp } => flow.is_some_and(|f| {
            let (ts, tc) = match counter {
                FlowCounter::Pkts => (f.pkts_toserver, f.pkts_toclient),
                FlowCounter::Bytes => (f.bytes_toserver, f.bytes_toclient),
            };
            match dir {
                FlowCountDir::ToServer => cmp.matches(ts),
                FlowCountDir::ToClient => cmp.matches(tc),
                FlowCountDir::Either => cmp.matches(ts) || cmp.matches(tc),
            }
        }),
        Condition::Ttl(cmp) => ip.is_some_and(|i| cmp.matches(i.ttl as u64)),
        Condition::VlanId { cmp, layer } => {
            let ids = p.vlans();
            let m = |id: &u16| cmp.matches(*id as u64);
            match *layer {
                VlanLayer::Any => ids.iter().any(m),
                VlanLayer::All => !ids.is_empty() && ids.iter().all(m),
                VlanLayer::Index(i) => {
                    let at = if i >= 0 {
                        Some(i as usize)
                    } else {
                        ids.len().checked_sub(i.unsigned_abs() as usize)
                    };
                    at.and_then(|k| ids.get(k)).is_some_and(m)
                }
            }
        }
        Condition::FlowAge(cmp) => flow.is_some_and(|f| cmp.matches(f.age_secs)),
        Condition::FlowElephant(dir) => flow.is_some_and(|f| {
            let [ts, tc] = f.elephant;
            match dir {
                ElephantDir::ToServer => ts,
                ElephantDir::ToClient => tc,
                ElephantDir::Either => ts || tc,
                ElephantDir::Both => ts && tc,
            }
        }),
        Condition::TcpSession(want) => flow.is_some_and(|f| {
            // Suricata's DetectTcpSessionMatch: setup or established by
            // the packet's established flag, closing by the session state.
            use vigil_stream::TcpState as S;
            let Some(state) = f.tcp_state else {
                return false;
            };
            let mut phase = if f.established {
                vigil_rules::TCP_SESSION_ESTABLISHED
            } else {
                vigil_rules::TCP_SESSION_SETUP
            };
            if matches!(
                state,
                S::FinWait1 | S::FinWait2 | S::TimeWait | S::LastAck | S::CloseWait | S::Closing
            ) {
                phase |= vigil_rules::TCP_SESSION_CLOSING;
            }
            phase & want != 0
        }),
        Condition::VlanLayers(cmp) => cmp.matches(p.vlans().len() as u64),
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
        // `op` holds the negation (`!N` is `Ne(N)`); `negated` only
        // records how the rule wrote it.
        Condition::IpProto { op, .. } => ip.is_some_and(|i| op.matches(i.proto as u64)),
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

/// `*-csum:valid|invalid`: the packet has the layer and its checksum is
/// (in)valid. A checksum that cannot be judged (frame cut short, fragment)
/// matches neither; IPv4 UDP without a checksum (zero) is valid. As in
/// Suricata, the keywords check whatever the checksum mode (`-k`).
fn checksum_matches(p: &Packet<'_>, layer: CsumLayer, valid: bool) -> bool {
    let Some(ip) = p.ip.as_ref() else {
        return false;
    };
    let v4 = ip.version == 4;
    let applies = match layer {
        CsumLayer::Ipv4 => v4,
        CsumLayer::Igmp => matches!(p.l4, L4::Igmp(_)),
        CsumLayer::Tcpv4 => v4 && matches!(p.l4, L4::Tcp(_)),
        CsumLayer::Tcpv6 => !v4 && matches!(p.l4, L4::Tcp(_)),
        CsumLayer::Udpv4 => v4 && matches!(p.l4, L4::Udp(_)),
        CsumLayer::Udpv6 => !v4 && matches!(p.l4, L4::Udp(_)),
        CsumLayer::Icmpv4 => matches!(p.l4, L4::Icmpv4(_)),
        CsumLayer::Icmpv6 => matches!(p.l4, L4::Icmpv6(_)),
    };
    if !applies {
        return false;
    }
    let ok = match layer {
        CsumLayer::Ipv4 => p.ipv4_checksum_ok(),
        CsumLayer::Icmpv4 | CsumLayer::Icmpv6 | CsumLayer::Igmp => p.icmp_checksum_ok(),
        CsumLayer::Udpv4 => {
            let zero = p.l4_header().get(6..8) == Some(&[0, 0]);
            if zero && ip.fragment.is_none() {
                Some(true)
            } else {
                p.transport_checksum_ok()
            }
        }
        _ => p.transport_checksum_ok(),
    };
    ok == Some(valid)
}

/// The source or destination address bytes of the packet's IP header.
fn address_bytes<'a>(p: &Packet<'a>, src: bool) -> Option<&'a [u8]> {
    let ip = p.ip.as_ref()?;
    let (base, at, len) = if ip.version == 4 {
        (ip.header.start, if src { 12 } else { 16 }, 4)
    } else {
        (ip.fixed_header.start, if src { 8 } else { 24 }, 16)
    };
    p.data.get(base + at..base + at + len)
}

fn buffer_bytes<'a>(b: &Buffer, p: &Packet<'a>) -> Option<&'a [u8]> {
    match b {
        // The packet's Ethernet II header: the frame's, or a tunnel
        // packet's inner frame's (VXLAN, Geneve, GRE bridging, ERSPAN).
        Buffer::EtherHdr if has_ethernet(p) => return Some(p.link_header()),
        Buffer::Packet if p.ip.is_none() => return Some(p.payload()),
        _ => {}
    }
    let ip = p.ip.as_ref()?;
    Some(match b {
        Buffer::Packet => p.payload(),
        Buffer::Ipv4Hdr if ip.version == 4 => p.data.get(ip.header.clone())?,
        Buffer::Ipv6Hdr if ip.version == 6 => p.data.get(ip.fixed_header.clone())?,
        Buffer::TcpHdr if matches!(p.l4, L4::Tcp(_)) => p.l4_header(),
        Buffer::UdpHdr if matches!(p.l4, L4::Udp(_)) => p.l4_header(),
        Buffer::Icmpv4Hdr if matches!(p.l4, L4::Icmpv4(_)) => p.l4_header(),
        Buffer::Icmpv6Hdr if matches!(p.l4, L4::Icmpv6(_)) => p.l4_header(),
        Buffer::SctpHdr => p.sctp_packet()?,
        Buffer::IgmpHdr if matches!(p.l4, L4::Igmp(g) if g.version != 0) => p.l4_header(),
        Buffer::IpSrc => address_bytes(p, true)?,
        Buffer::IpDst => address_bytes(p, false)?,
        _ => return None,
    })
}

/// Which of a rule group's fast patterns a scan looks for (see
/// [`crate::group::SplitSets`]). A group with a single engine (a selector
/// that does not split) scans it for `All`, `PacketFirst` and `Stream`,
/// and nothing for `PacketLate`: the worker's candidates are then those
/// of one engine over the packet and one over the stream chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanSets {
    /// Every pattern of the group.
    All,
    /// A packet's payload before its flow is looked at: a group's single
    /// engine; nothing for split groups, whose sets depend on the flow.
    PacketFirst,
    /// The same payload once the flow's application protocol and the
    /// packet's direction are known: the rules without an application
    /// protocol and those of the flow's, for that direction (split
    /// groups only).
    PacketLate {
        app: crate::app::AppProtoState,
        to_server: bool,
    },
    /// Stream data of one direction: the same sets as `PacketLate`.
    Stream {
        app: crate::app::AppProtoState,
        to_server: bool,
    },
}

impl ScanSets {
    /// Calls `f` with each engine to run on `group` and its rule ids.
    fn each_engine<'g>(
        self,
        group: &'g crate::group::RuleGroup,
        f: &mut dyn FnMut(&'g dyn vigil_prefilter::PrefilterEngine, &'g [u32]),
    ) {
        use crate::group::{app_slot, NO_SET};
        let Some(split) = group.split.as_deref() else {
            if let (Some(e), false) = (&group.engine, matches!(self, ScanSets::PacketLate { .. })) {
                f(e.as_ref(), &group.prefiltered[..]);
            }
            return;
        };
        let mut add = |i: u32| {
            if let Some(PatternSet {
                engine: Some(e),
                rules,
            }) = (i != NO_SET).then(|| split.set(i)).flatten()
            {
                f(e.as_ref(), &rules[..]);
            }
        };
        match self {
            ScanSets::All => (0..split.sets.len() as u32).for_each(add),
            ScanSets::PacketFirst => {}
            ScanSets::PacketLate { app, to_server } | ScanSets::Stream { app, to_server } => {
                let d = usize::from(!to_server);
                add(split.generic[d]);
                if let Some(s) = app_slot(app) {
                    add(split.app[s][d]);
                }
            }
        }
    }
}

impl DetectEngine {
    /// Which rule groups apply to a packet (needs only the decoded packet,
    /// so a batch of packets can be grouped before any flow state is
    /// touched).
    pub fn select_groups(&self, p: &Packet<'_>) -> Option<GroupSel> {
        let ip = p.ip.as_ref()?;
        Some(match p.l4 {
            L4::Tcp(_) | L4::Udp(_) | L4::Sctp(_) => {
                self.groups.select(ip.proto, p.src_port(), p.dst_port())
            }
            // Non-first fragments: no transport header, only `ip` rules.
            _ if matches!(ip.proto, 6 | 17 | 132) && ip.fragment.is_some() => {
                self.groups.select_proto_only(ip.proto)
            }
            // A transport header too short to decode: the packet is still
            // of that protocol (rules such as `decode-event:tcp.pkt_too_small`
            // apply), with unknown ports (0).
            _ => self.groups.select(ip.proto, 0, 0),
        })
    }

    /// Phase 1: appends to `out` the rules of the selected groups whose
    /// fast pattern occurs in `payload`, plus the rules that have none.
    /// The result is sorted and deduplicated (rule order). Every pattern
    /// of the groups is looked for ([`ScanSets::All`]).
    pub fn candidates(
        &self,
        sel: GroupSel,
        payload: &[u8],
        addrs: Option<(std::net::IpAddr, std::net::IpAddr)>,
        scratch: &mut DetectScratch,
        out: &mut Vec<u32>,
    ) {
        self.candidates_in(
            sel,
            ScanSets::All,
            &mut std::iter::once(payload),
            addrs,
            scratch,
            out,
            None,
        );
    }

    /// [`Self::candidates`] looking only for the patterns of `sets` (the
    /// rules without a fast pattern are added except with
    /// [`ScanSets::PacketLate`], whose candidates complete those of
    /// [`ScanSets::PacketFirst`]).
    pub fn candidates_of(
        &self,
        sel: GroupSel,
        sets: ScanSets,
        bufs: &mut dyn Iterator<Item = &[u8]>,
        addrs: Option<(std::net::IpAddr, std::net::IpAddr)>,
        scratch: &mut DetectScratch,
        out: &mut Vec<u32>,
    ) {
        self.candidates_in(sel, sets, bufs, addrs, scratch, out, None);
    }

    /// [`Self::candidates`] where some groups' prefilter already ran (on
    /// a device): `found(i, g, sink)` is asked first for group `g`, the
    /// packet's `i`-th selected group (0: primary, 1: secondary); when it
    /// returns true it has passed the pattern ids found to `sink` and the
    /// group's CPU engine is not run. The result is the same as
    /// [`Self::candidates`] when `found` reports the same ids. Only for
    /// groups with a single engine (a selector that does not split).
    #[allow(clippy::type_complexity)]
    pub fn candidates_found(
        &self,
        sel: GroupSel,
        payload: &[u8],
        addrs: Option<(std::net::IpAddr, std::net::IpAddr)>,
        scratch: &mut DetectScratch,
        out: &mut Vec<u32>,
        found: &mut dyn FnMut(usize, u32, &mut dyn FnMut(u32)) -> bool,
    ) {
        self.candidates_in(
            sel,
            ScanSets::All,
            &mut std::iter::once(payload),
            addrs,
            scratch,
            out,
            Some(found),
        );
    }

    /// Candidates from reassembled stream data: like
    /// [`Self::candidates`] over every buffer of `bufs` (the contiguous
    /// blocks of a chunk) with one deduplication.
    pub fn stream_candidates(
        &self,
        sel: GroupSel,
        bufs: &mut dyn Iterator<Item = &[u8]>,
        addrs: Option<(std::net::IpAddr, std::net::IpAddr)>,
        scratch: &mut DetectScratch,
        out: &mut Vec<u32>,
    ) {
        self.candidates_in(sel, ScanSets::All, bufs, addrs, scratch, out, None);
    }

    /// Whether the groups split their patterns ([`crate::group::SplitSets`]).
    pub fn split_groups(&self) -> bool {
        self.groups.split
    }

    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn candidates_in<'b>(
        &self,
        sel: GroupSel,
        sets: ScanSets,
        bufs: &mut dyn Iterator<Item = &'b [u8]>,
        addrs: Option<(std::net::IpAddr, std::net::IpAddr)>,
        scratch: &mut DetectScratch,
        out: &mut Vec<u32>,
        mut found: Option<&mut dyn FnMut(usize, u32, &mut dyn FnMut(u32)) -> bool>,
    ) {
        let words = self.rules.len().div_ceil(64);
        if scratch.seen.len() < words {
            scratch.seen.resize(words, 0);
        }
        let start = out.len();
        let groups = [Some(sel.primary), sel.secondary];
        for &g in groups.iter().flatten() {
            if matches!(sets, ScanSets::PacketLate { .. }) {
                break;
            }
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
        }
        for buf in bufs {
            if buf.is_empty() {
                continue;
            }
            for (i, &g) in groups.iter().enumerate() {
                let Some(g) = g else { continue };
                let seen = &mut scratch.seen;
                let hits = &mut scratch.prefilter_hits;
                let found = &mut found;
                sets.each_engine(&self.groups.groups[g as usize], &mut |engine, ids| {
                    if let Some(f) = found.as_mut() {
                        let mut sink = |id: u32| {
                            *hits += 1;
                            if let Some(&r) = ids.get(id as usize) {
                                push_unique(seen, out, r);
                            }
                        };
                        if f(i, g, &mut sink) {
                            return;
                        }
                    }
                    engine.scan_ids(buf, &mut |id| {
                        *hits += 1;
                        if let Some(&r) = ids.get(id as usize) {
                            push_unique(seen, out, r);
                        }
                    });
                });
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
        state: Option<&mut FlowDetectState>,
        scratch: &mut DetectScratch,
        alerts: &mut Vec<u32>,
    ) -> bool {
        let mut hits = Vec::new();
        let passed = self.verify_hits(input, candidates, state, scratch, &mut hits);
        alerts.extend(hits.iter().map(|h| h.rule));
        passed
    }

    /// [`Self::verify`], telling for each alert whether it matched in
    /// the stream.
    /// Checks a packet without an IP layer (ARP and other link-layer
    /// frames, undecodable packets) against the `ether`, `arp` and
    /// `pkthdr` rules. Such a packet has no addresses, ports or flow: a
    /// rule that restricts any of those, or has packet conditions other
    /// than decoder events, does not match it.
    pub fn verify_link(
        &self,
        input: PacketInput<'_, '_>,
        scratch: &mut DetectScratch,
        alerts: &mut Vec<Hit>,
    ) {
        let p = input.packet;
        if p.ip.is_some() {
            return;
        }
        let pkt_payload = packet_payload_of(&input);
        for &ri in &self.link_rules {
            let r = &self.rules[ri as usize];
            // `pkthdr` sees the packets the decoder marked invalid.
            let applies = (r.pkthdr && p.events.iter().any(|e| e.marks_invalid()))
                || match r.proto {
                    crate::rule::ProtoMatch::Ether => has_ethernet(p),
                    crate::rule::ProtoMatch::Arp => p.arp,
                    _ => false,
                };
            let f = &r.flow;
            let flowless = !(f.to_server
                || f.to_client
                || f.established
                || f.not_established
                || f.only_stream
                || f.only_frag);
            if !applies
                || !flowless
                || !r
                    .checks
                    .iter()
                    .all(|c| matches!(c, Check::Event(e) if p.events.contains(*e)))
                || !r.flowbit_tests.is_empty()
                || !r.app_tests.is_empty()
                || !r.src.is_any()
                || !r.dst.is_any()
            {
                continue;
            }
            scratch.rules_checked += 1;
            if r.captures {
                crate::payload::pending_vars_clear();
            }
            let Some(stream) = payload_verdict(r, &input, pkt_payload, &mut scratch.vars) else {
                continue;
            };
            if !var_tests_match(r, None, &scratch.captured) {
                continue;
            }
            let verdict = conclude(r, &input, None);
            if r.captures && !matches!(verdict, Verdict::NoMatch) {
                store_captures(ri, true, None, &mut scratch.captured);
            }
            match verdict {
                Verdict::Alert | Verdict::Deferred | Verdict::PassAlert => alerts.push(Hit {
                    rule: ri,
                    stream,
                    tx: None,
                    deferred: false,
                    datasets: None,
                }),
                Verdict::NoMatch | Verdict::Pass | Verdict::Silent => {}
            }
        }
    }

    pub fn verify_hits(
        &self,
        input: PacketInput<'_, '_>,
        candidates: &[u32],
        mut state: Option<&mut FlowDetectState>,
        scratch: &mut DetectScratch,
        alerts: &mut Vec<Hit>,
    ) -> bool {
        let p = input.packet;
        if p.ip.is_none() {
            return false;
        }
        let pkt_payload = packet_payload_of(&input);
        for &ri in candidates {
            let r = &self.rules[ri as usize];
            scratch.rules_checked += 1;
            let mut timer = crate::profile::CheckTimer::start(&mut scratch.profile, ri);
            if !packet_checks(r, &input, state.as_deref()) {
                continue;
            }
            if r.captures {
                crate::payload::pending_vars_clear();
            }
            let Some(stream_hit) = payload_verdict(r, &input, pkt_payload, &mut scratch.vars)
            else {
                continue;
            };
            if !var_tests_match(r, state.as_deref(), &scratch.captured) {
                continue;
            }
            let verdict = conclude(r, &input, state.as_deref_mut());
            timer.matched = !matches!(verdict, Verdict::NoMatch);
            if r.captures && timer.matched {
                store_captures(ri, true, state.as_deref_mut(), &mut scratch.captured);
            }
            match verdict {
                Verdict::NoMatch => continue,
                Verdict::Pass => return true,
                Verdict::PassAlert => {
                    alerts.push(Hit {
                        rule: ri,
                        stream: stream_hit,
                        tx: None,
                        deferred: false,
                        datasets: None,
                    });
                    return true;
                }
                Verdict::Alert | Verdict::Deferred => alerts.push(Hit {
                    rule: ri,
                    stream: stream_hit,
                    tx: None,
                    deferred: matches!(verdict, Verdict::Deferred),
                    datasets: (matches!(verdict, Verdict::Deferred) && !r.datasets.is_empty())
                        .then(|| packet_dataset_values(r, p, &mut scratch.vars)),
                }),
                Verdict::Silent => {}
            }
        }
        false
    }
}

/// The packet payload rules inspect: empty for a fragment that was not
/// reassembled (as in Suricata, where its protocol is unset: only `ip`
/// rules, and no payload) and for pseudo packets.
pub(crate) fn packet_payload_of<'a>(input: &PacketInput<'_, 'a>) -> &'a [u8] {
    let p = input.packet;
    let raw_fragment =
        p.ip.as_ref()
            .is_some_and(|ip| ip.fragment.is_some() && !input.rebuilt);
    if raw_fragment || input.pseudo {
        &[]
    } else {
        p.payload()
    }
}

/// The packet came with an Ethernet header (on the wire or inside an
/// overlay tunnel).
fn has_ethernet(p: &Packet<'_>) -> bool {
    p.link_header().len() == 14
}

/// Everything of a rule that looks at the packet and the flow but not
/// at payload buffers: protocol, header addresses and ports, `flow`,
/// flowbit tests, the flow's application protocol, and the packet
/// checks (`dsize`, `ttl`, events, `stream_size` ...).
pub(crate) fn packet_checks(
    r: &CompiledRule,
    input: &PacketInput<'_, '_>,
    state: Option<&FlowDetectState>,
) -> bool {
    let p = input.packet;
    let Some(ip) = &p.ip else { return false };
    let (sp, dp) = (p.src_port(), p.dst_port());
    let raw_fragment = ip.fragment.is_some() && !input.rebuilt;
    if raw_fragment && r.proto != crate::rule::ProtoMatch::Ip {
        return false;
    }
    // `ether` rules see IP packets that came with an Ethernet header.
    if r.proto == crate::rule::ProtoMatch::Ether && !has_ethernet(p) {
        return false;
    }
    if !r.header_matches(ip.src, sp, ip.dst, dp) {
        return false;
    }
    if !flow_matches(r, input) {
        return false;
    }
    if !r.flowbit_tests.iter().all(|op| flowbits_test(op, state)) {
        return false;
    }
    if r.pd_only && !input.flow.is_some_and(|f| f.app_proto_decided_now) {
        return false;
    }
    if !r.app_tests.is_empty() {
        let st = input.flow.map(|f| f.app_proto).unwrap_or_default();
        if !r.app_tests_match(st) {
            return false;
        }
    }
    // Pseudo packets have no size of their own (Suricata's dsize never
    // matches them).
    if input.pseudo
        && r.checks
            .iter()
            .any(|c| matches!(c, Check::Cond(Condition::Dsize(_))))
    {
        return false;
    }
    let tcp_sizes = input.flow.and_then(|f| f.tcp_sizes);
    r.checks.iter().all(|c| match c {
        Check::Cond(c) => check_condition(c, p, input.flow.as_ref()),
        Check::Event(e) => p.events.contains(*e),
        Check::IpOpt(t) => {
            ip.version == 4
                && match t {
                    Some(t) => ip.has_ipv4_option(*t),
                    None => ip.ipv4_option_count > 0,
                }
        }
        Check::StreamEvent(e) => input.stream_events.contains(*e),
        Check::StreamSize(ss) => ss.matches(tcp_sizes),
        Check::IpRep(c) => c.matches(ip.src, ip.dst),
        // Pseudo packets never match (Suricata's DetectGeoipMatch).
        Check::GeoIp(g) => !input.pseudo && g.matches(state.map(|s| &s.geo), ip.src, ip.dst),
    })
}

/// Runs the rule's packet-buffer programs on the packet payload or the
/// stream chunk (see [`crate::stream`]). `Some(stream_hit)` when they
/// match, telling whether the match was in the stream.
pub(crate) fn payload_verdict(
    r: &CompiledRule,
    input: &PacketInput<'_, '_>,
    pkt_payload: &[u8],
    vars: &mut [u64; MAX_VARS],
) -> Option<bool> {
    let p = input.packet;
    if input.no_payload && r.buffers.iter().any(|(b, _)| *b == Buffer::Packet) {
        return None;
    }
    let req = r.stream_req;
    let mut stream_hit = false;
    // A rule with packet-payload keywords needs bytes to inspect (Suricata's
    // SIG_MASK_REQUIRE_PAYLOAD): a packet without payload and without
    // stream data is skipped, even when the keywords are all negated. A
    // packet without payload that brings stream data to inspect passes,
    // and its (empty) payload is inspected as Suricata does.
    let stream_data = input
        .stream
        .is_some_and(|c| c.blocks().any(|b| !b.is_empty()));
    let has_payload = !pkt_payload.is_empty() || stream_data;
    let ok = if !req.payload {
        payload_matches(r, p, pkt_payload, vars)
    } else if req.stream {
        if let Some(chunk) = input.stream {
            stream_hit = chunk
                .blocks()
                .any(|b| !b.is_empty() && payload_matches(r, p, b, vars));
        }
        stream_hit
            || (!input.pseudo
                && !req.stream_only
                && (req.packet || !input.stream_added)
                && has_payload
                && payload_matches(r, p, pkt_payload, vars))
    } else {
        !input.pseudo && has_payload && payload_matches(r, p, pkt_payload, vars)
    };
    ok.then_some(stream_hit)
}

/// What a rule whose keywords all matched does.
pub(crate) enum Verdict {
    /// A failing `flowint` test: the rule does not match after all.
    NoMatch,
    /// A `pass` rule matched: stop inspecting the flow.
    Pass,
    /// A `pass` rule with the `alert` keyword matched: alert, then stop
    /// inspecting the flow.
    PassAlert,
    /// The rule matched and alerts.
    Alert,
    /// The rule matched without an alert (`noalert`, suppressed).
    Silent,
    /// The rule matched here but has `xbits`: the event goes to where
    /// they are resolved, which decides ([`crate::xbits`]).
    Deferred,
}

/// The last steps of a match: `flowint` (may still fail), flowbit
/// updates, `pass`, `noalert` and suppression.
pub(crate) fn conclude(
    r: &CompiledRule,
    input: &PacketInput<'_, '_>,
    mut state: Option<&mut FlowDetectState>,
) -> Verdict {
    if !flowints_run(&r.flowints, state.as_deref_mut()) {
        return Verdict::NoMatch;
    }
    if let Some(st) = state.as_deref_mut() {
        for op in &r.flowbit_sets {
            flowbits_apply(op, st);
        }
    }
    if r.action == vigil_rules::Action::Pass {
        if let Some(st) = state {
            st.passed = true;
        }
        let suppressed = match &input.packet.ip {
            Some(ip) => r.suppressed(ip.src, ip.dst),
            None => false,
        };
        if r.force_alert && !r.noalert && !suppressed {
            return Verdict::PassAlert;
        }
        return Verdict::Pass;
    }
    if r.bypass {
        // Post-match: the rest of the flow is not inspected (it still
        // alerts, unless noalert).
        if let Some(st) = state {
            st.passed = true;
        }
    }
    if (!r.xbits.is_empty() || !r.datasets.is_empty()) && input.packet.ip.is_some() {
        return Verdict::Deferred;
    }
    // A link-layer packet has no addresses: only an address-free
    // suppression (none) could apply.
    let suppressed = match &input.packet.ip {
        Some(ip) => r.suppressed(ip.src, ip.dst),
        None => false,
    };
    if !r.noalert && !suppressed {
        Verdict::Alert
    } else {
        Verdict::Silent
    }
}

/// Runs a rule's buffer programs, with `packet_buf` standing for the
/// packet payload buffer (the packet's payload or a stream block).
fn payload_matches(
    r: &CompiledRule,
    p: &Packet<'_>,
    packet_buf: &[u8],
    vars: &mut [u64; MAX_VARS],
) -> bool {
    *vars = [0; MAX_VARS];
    for (buf, prog) in &r.buffers {
        if *buf == Buffer::SctpChunkData {
            // A multi-buffer: any DATA chunk's user data.
            if !p
                .sctp_chunks()
                .filter_map(|c| c.user_data())
                .any(|d| prog.matches(d, vars))
            {
                return false;
            }
            continue;
        }
        let bytes = if *buf == Buffer::Packet {
            Some(packet_buf)
        } else {
            buffer_bytes(buf, p)
        };
        match bytes {
            Some(b) if prog.matches(b, vars) => {}
            _ => return false,
        }
    }
    true
}

/// The packet buffers a matched rule's dataset keywords look at (packet
/// rules: `ip.src`, `ip.dst`, protocol headers ...). Transaction rules'
/// keywords get theirs in [`crate::app`].
fn packet_dataset_values(
    r: &CompiledRule,
    p: &Packet<'_>,
    vars: &mut [u64; MAX_VARS],
) -> DatasetValues {
    r.datasets
        .iter()
        .map(|op| match op.src {
            crate::dataset::DsSource::Packet(i) => packet_dataset_values_one(r, i, p, vars),
            crate::dataset::DsSource::Tx(_) => Box::default(),
        })
        .collect()
}

/// The buffers of `r.buffers[i]` on which its keywords match.
pub(crate) fn packet_dataset_values_one(
    r: &CompiledRule,
    i: u32,
    p: &Packet<'_>,
    vars: &mut [u64; MAX_VARS],
) -> Box<[Box<[u8]>]> {
    let Some((buf, prog)) = r.buffers.get(i as usize) else {
        return Box::default();
    };
    if *buf == Buffer::SctpChunkData {
        return p
            .sctp_chunks()
            .filter_map(|c| c.user_data())
            .filter(|d| prog.matches(d, vars))
            .map(Box::from)
            .collect();
    }
    match buffer_bytes(buf, p) {
        Some(b) if prog.matches(b, vars) => vec![Box::from(b)].into_boxed_slice(),
        _ => Box::default(),
    }
}

#[inline]
pub(crate) fn push_unique(seen: &mut [u64], out: &mut Vec<u32>, r: u32) {
    let (w, b) = (r as usize / 64, 1u64 << (r % 64));
    if seen[w] & b == 0 {
        seen[w] |= b;
        out.push(r);
    }
}

fn flow_matches(r: &CompiledRule, input: &PacketInput<'_, '_>) -> bool {
    let (flow, p) = (input.flow, input.packet);
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
    // Suricata's only_frag / no_frag: whether the packet was rebuilt from
    // fragments.
    if f.only_frag && !input.rebuilt {
        return false;
    }
    if f.no_frag && input.rebuilt {
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
