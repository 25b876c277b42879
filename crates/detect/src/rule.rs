//! Compiling a parsed [`Rule`] into the form detection evaluates, and
//! choosing its fast pattern.

use std::collections::HashMap;
use std::net::IpAddr;

use vigil_rules::{
    Action, AddrMatcher, Buffer, ClassificationConfig, Condition, Content, Direction, EventKind,
    FlowOpts, FlowbitsCmd, PayloadItem, PortSpec, Proto, Rule, Threshold,
};
use vigil_wire::DecoderEvent;

use crate::payload::{CompiledPayload, VarTable};

/// Which packets a rule's protocol admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtoMatch {
    /// Any IP packet.
    Ip,
    /// One transport protocol number.
    Number(u8),
    /// ICMPv4 or ICMPv6 (Suricata's `icmp`).
    AnyIcmp,
}

impl ProtoMatch {
    pub fn admits(self, proto: u8) -> bool {
        match self {
            ProtoMatch::Ip => true,
            ProtoMatch::Number(p) => p == proto,
            ProtoMatch::AnyIcmp => proto == 1 || proto == 58,
        }
    }
}

/// A flowbits operation with bit names interned to indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowbitOp {
    pub cmd: FlowbitsCmd,
    pub bits: Vec<u32>,
    pub any: bool,
}

/// A packet-level test other than flowbits and flow options.
#[derive(Debug, Clone)]
pub enum Check {
    Cond(Condition),
    Event(DecoderEvent),
}

/// The fast pattern chosen for the prefilter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastPattern {
    pub bytes: Vec<u8>,
    pub nocase: bool,
}

/// A rule ready for detection. Immutable and shared by all workers.
#[derive(Debug)]
pub struct CompiledRule {
    pub action: Action,
    pub gid: u32,
    pub sid: u32,
    pub rev: u32,
    pub msg: String,
    /// Classification description ("" when none).
    pub category: String,
    /// Priority: the rule's own, else its classtype's, else 3.
    pub severity: u8,
    pub metadata: Vec<(String, String)>,
    pub noalert: bool,
    pub proto: ProtoMatch,
    pub src: AddrMatcher,
    pub dst: AddrMatcher,
    pub src_ports: PortSpec,
    pub dst_ports: PortSpec,
    pub bidirectional: bool,
    pub flow: FlowOpts,
    pub flowbit_tests: Vec<FlowbitOp>,
    pub flowbit_sets: Vec<FlowbitOp>,
    pub checks: Vec<Check>,
    pub threshold: Option<Threshold>,
    pub detection_filter: Option<Threshold>,
    /// Payload programs per buffer, in rule order.
    pub buffers: Vec<(Buffer, CompiledPayload)>,
    pub fast_pattern: Option<FastPattern>,
    pub file: String,
    pub line: usize,
}

impl CompiledRule {
    /// Whether the rule's ports can be used for grouping (`->` only).
    pub fn uses_ports(&self) -> bool {
        matches!(
            self.proto,
            ProtoMatch::Number(6) | ProtoMatch::Number(17) | ProtoMatch::Number(132)
        )
    }

    pub fn header_matches(&self, src: IpAddr, sp: u16, dst: IpAddr, dp: u16) -> bool {
        let fwd = self.src.contains(src)
            && self.dst.contains(dst)
            && (!self.uses_ports() || (self.src_ports.contains(sp) && self.dst_ports.contains(dp)));
        if fwd || !self.bidirectional {
            return fwd;
        }
        self.src.contains(dst)
            && self.dst.contains(src)
            && (!self.uses_ports() || (self.src_ports.contains(dp) && self.dst_ports.contains(sp)))
    }
}

/// Why a rule was not loaded into detection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// The rule uses a keyword (or protocol) that is not evaluated yet.
    NotEvaluable(String),
    /// The rule is well-formed but cannot be compiled (bad pcre...).
    Invalid { keyword: String, message: String },
}

/// Interns flowbit names to small indices shared by all rules.
#[derive(Debug, Default)]
pub struct FlowbitNames {
    pub names: Vec<String>,
    index: HashMap<String, u32>,
}

impl FlowbitNames {
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

fn buffer_evaluable(b: &Buffer) -> bool {
    !matches!(b, Buffer::Named(_))
}

/// Suricata's fast pattern choice: an explicit `fast_pattern` wins;
/// otherwise the longest non-negated content of the packet buffer (first
/// one on a tie). Only packet-buffer contents feed the prefilter; rules
/// without one are evaluated on every packet of their group.
pub fn choose_fast_pattern(buffers: &[vigil_rules::BufferMatch]) -> Option<FastPattern> {
    let contents = || {
        buffers
            .iter()
            .filter(|b| b.buffer == Buffer::Packet)
            .flat_map(|b| b.items.iter())
            .filter_map(|i| match i {
                PayloadItem::Content(c) if !c.negated && !c.pattern.is_empty() => Some(c),
                _ => None,
            })
    };
    let explicit = buffers
        .iter()
        .flat_map(|b| b.items.iter().map(move |i| (b, i)))
        .find_map(|(b, i)| match i {
            PayloadItem::Content(c) if c.fast_pattern.is_some() => Some((b.buffer.clone(), c)),
            _ => None,
        });
    let pick = |c: &Content| {
        let mut bytes = c.pattern.clone();
        if let Some(fp) = c.fast_pattern {
            if let Some((off, len)) = fp.chop {
                let start = (off as usize).min(bytes.len());
                let end = (start + len as usize).min(bytes.len());
                bytes = bytes[start..end].to_vec();
            }
        }
        FastPattern {
            bytes,
            nocase: c.nocase,
        }
    };
    match explicit {
        // A fast_pattern on a negated content or another buffer leaves the
        // packet buffer without a prefilter pattern.
        Some((Buffer::Packet, c)) if !c.negated => Some(pick(c)).filter(|f| !f.bytes.is_empty()),
        Some(_) => None,
        None => {
            let mut best: Option<&Content> = None;
            for c in contents() {
                if best.is_none_or(|b| c.pattern.len() > b.pattern.len()) {
                    best = Some(c);
                }
            }
            best.map(pick)
        }
    }
}

/// Compiles one rule. `Err` says why it was skipped.
pub fn compile_rule(
    rule: &Rule,
    classes: &ClassificationConfig,
    flowbits: &mut FlowbitNames,
) -> Result<CompiledRule, Skip> {
    if let Some(k) = rule.not_evaluable.first() {
        return Err(Skip::NotEvaluable(k.clone()));
    }
    let proto = match &rule.header.proto {
        Proto::Ip => ProtoMatch::Ip,
        Proto::Tcp => ProtoMatch::Number(6),
        Proto::Udp => ProtoMatch::Number(17),
        Proto::Icmp => ProtoMatch::AnyIcmp,
        Proto::Icmpv6 => ProtoMatch::Number(58),
        Proto::Sctp => ProtoMatch::Number(132),
        Proto::PktHdr => ProtoMatch::Ip,
        // Suricata's packet-only and stream-only TCP variants: packets
        // are what Vigil inspects today, so both mean TCP.
        Proto::App(name) if name == "tcp-pkt" || name == "tcp-stream" => ProtoMatch::Number(6),
        Proto::App(name) => return Err(Skip::NotEvaluable(format!("protocol {name}"))),
    };
    if let Some(b) = rule.buffers.iter().find(|b| !buffer_evaluable(&b.buffer)) {
        if let Buffer::Named(n) = &b.buffer {
            return Err(Skip::NotEvaluable(n.clone()));
        }
    }
    let mut vars = VarTable::default();
    let mut buffers = Vec::with_capacity(rule.buffers.len());
    for b in &rule.buffers {
        let prog = CompiledPayload::compile(&b.items, &mut vars).map_err(|e| Skip::Invalid {
            keyword: e.keyword().to_string(),
            message: e.to_string(),
        })?;
        buffers.push((b.buffer.clone(), prog));
    }
    let mut flow = FlowOpts::default();
    let mut flowbit_tests = Vec::new();
    let mut flowbit_sets = Vec::new();
    let mut checks = Vec::new();
    let mut threshold = None;
    let mut detection_filter = None;
    let mut noalert = rule.noalert;
    for c in &rule.conditions {
        match c {
            Condition::Flow(f) => {
                flow.to_server |= f.to_server;
                flow.to_client |= f.to_client;
                flow.established |= f.established;
                flow.not_established |= f.not_established;
                flow.stateless |= f.stateless;
                flow.only_stream |= f.only_stream;
                flow.no_stream |= f.no_stream;
                flow.only_frag |= f.only_frag;
                flow.no_frag |= f.no_frag;
            }
            Condition::Flowbits(fb) => {
                let op = FlowbitOp {
                    cmd: fb.cmd,
                    bits: fb.names.iter().map(|n| flowbits.intern(n)).collect(),
                    any: fb.any,
                };
                match fb.cmd {
                    FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet => flowbit_tests.push(op),
                    FlowbitsCmd::NoAlert => noalert = true,
                    _ => flowbit_sets.push(op),
                }
            }
            Condition::Threshold(t) => match t.kind {
                vigil_rules::ThresholdKind::DetectionFilter => detection_filter = Some(*t),
                _ => threshold = Some(*t),
            },
            Condition::Event { kind, name } => match kind {
                EventKind::Decode => match DecoderEvent::from_name(name) {
                    Some(e) => checks.push(Check::Event(e)),
                    None => {
                        return Err(Skip::Invalid {
                            keyword: "decode-event".into(),
                            message: format!("unknown decoder event '{name}'"),
                        })
                    }
                },
                EventKind::Stream => return Err(Skip::NotEvaluable("stream-event".into())),
                EventKind::AppLayer => return Err(Skip::NotEvaluable("app-layer-event".into())),
            },
            Condition::NotEvaluable { keyword, .. } => {
                return Err(Skip::NotEvaluable(keyword.clone()))
            }
            Condition::IpOpts(_) => return Err(Skip::NotEvaluable("ipopts".into())),
            other => checks.push(Check::Cond(other.clone())),
        }
    }
    let (category, class_prio) = match &rule.classtype {
        Some(ct) => match classes.lookup(ct) {
            Some(c) => (c.description.clone(), Some(c.priority)),
            None => {
                return Err(Skip::Invalid {
                    keyword: "classtype".into(),
                    message: format!("unknown classtype '{ct}'"),
                })
            }
        },
        None => (String::new(), None),
    };
    let severity = rule.priority.or(class_prio).unwrap_or(3);
    Ok(CompiledRule {
        action: rule.action,
        gid: rule.gid,
        sid: rule.sid,
        rev: rule.rev,
        msg: rule.msg.clone(),
        category,
        severity,
        metadata: rule.metadata.clone(),
        noalert,
        proto,
        src: rule.header.src.compile(),
        dst: rule.header.dst.compile(),
        src_ports: rule.header.src_ports.clone(),
        dst_ports: rule.header.dst_ports.clone(),
        bidirectional: rule.header.direction == Direction::Both,
        flow,
        flowbit_tests,
        flowbit_sets,
        checks,
        threshold,
        detection_filter,
        fast_pattern: choose_fast_pattern(&rule.buffers),
        buffers,
        file: rule.origin.file.clone(),
        line: rule.origin.line,
    })
}

/// Suricata's signature ordering: rules are inspected, and their alerts
/// written, in this order within a packet. Pass rules first, then drop and
/// reject, then alert; within an action, rules that set flowbits before
/// rules that only read them; then by priority (1 first); ties keep file
/// order.
pub fn order_key(r: &CompiledRule) -> (u8, u8, u8) {
    let action = match r.action {
        Action::Pass => 0,
        Action::Drop => 1,
        Action::Reject | Action::RejectSrc | Action::RejectDst | Action::RejectBoth => 2,
        Action::Alert => 3,
        Action::Log => 4,
    };
    let fb = match (r.flowbit_sets.is_empty(), r.flowbit_tests.is_empty()) {
        (false, true) => 0,
        (false, false) => 1,
        (true, false) => 2,
        (true, true) => 3,
    };
    (action, fb, r.severity)
}
