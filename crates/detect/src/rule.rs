//! Compiling a parsed [`Rule`] into the form detection evaluates, and
//! choosing its fast pattern.

use std::collections::HashMap;
use std::net::IpAddr;

use vigil_applayer::{AppProto, BufferId};
use vigil_rules::{
    Action, AddrMatcher, Buffer, BufferMatch, ClassificationConfig, Condition, Content, Direction,
    EventKind, FlowOpts, FlowbitsCmd, FlowintOp, FlowintValue, PayloadItem, PortSpec, Proto, Rule,
    SuppressTrack, Threshold,
};
use vigil_wire::DecoderEvent;

use crate::app::{AppProtoState, AppSpec, AppTest, TxList};
use crate::payload::{CompiledPayload, ListKind, VarTable};

/// Which packets a rule's protocol admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtoMatch {
    /// Any IP packet.
    Ip,
    /// One transport protocol number.
    Number(u8),
    /// ICMPv4 or ICMPv6 (Suricata's `icmp`).
    AnyIcmp,
    /// TCP or UDP (application protocols that run over both: `dns`).
    TcpUdp,
    /// `ether`: every packet with an Ethernet header, IP or not.
    Ether,
    /// `arp`: ARP frames only (never an IP packet).
    Arp,
}

impl ProtoMatch {
    pub fn admits(self, proto: u8) -> bool {
        match self {
            ProtoMatch::Ip => true,
            ProtoMatch::Number(p) => p == proto,
            ProtoMatch::AnyIcmp => proto == 1 || proto == 58,
            ProtoMatch::TcpUdp => proto == 6 || proto == 17,
            ProtoMatch::Ether => true,
            ProtoMatch::Arp => false,
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

/// A `flowint` operation with variable names interned to indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowintStep {
    pub var: u32,
    pub op: FlowintOp,
    pub value: FlowintOperand,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowintOperand {
    None,
    Num(u32),
    Var(u32),
}

/// IPv4 option type bytes for `ipopts` names (Suricata's table).
pub fn ipopt_type(name: &str) -> Option<u8> {
    Some(match name {
        "eol" => 0x00,
        "nop" => 0x01,
        "rr" => 0x07,
        "ts" => 0x44,
        "sec" => 0x82,
        "lsrr" | "lsrre" => 0x83,
        "esec" => 0x85,
        "satid" => 0x88,
        "ssrr" => 0x89,
        _ => return None,
    })
}

/// A packet-level test other than flowbits and flow options.
#[derive(Debug, Clone)]
pub enum Check {
    Cond(Condition),
    Event(DecoderEvent),
    /// `ipopts`: an IPv4 option type (`None`: any option).
    IpOpt(Option<u8>),
    /// `stream-event`: a TCP tracking or reassembly anomaly on the packet.
    StreamEvent(vigil_stream::StreamEvent),
    /// `stream_size`.
    StreamSize(crate::stream::StreamSize),
    /// `iprep`, with the category resolved and the reputation table.
    IpRep(crate::reputation::IpRepCheck),
    /// `geoip`, with the database.
    GeoIp(crate::geoip::GeoIpCheck),
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
    /// The classtype's short name (`classtype:` as written; "" when none).
    pub classtype: String,
    /// Priority: the rule's own, else its classtype's, else 3.
    pub severity: u8,
    pub metadata: Vec<(String, String)>,
    /// `reference:` (system, value) pairs in rule order.
    pub references: Vec<(String, String)>,
    /// `target:`: `Some(true)` for `dest_ip`, `Some(false)` for `src_ip`
    /// (alerts then carry `source` and `target`).
    pub target_dest: Option<bool>,
    /// `tag:`: an alert of the rule tags its session or host; applied
    /// where alerts meet in input order (vigil_engine's tags).
    pub tag: Option<vigil_rules::TagSpec>,
    pub noalert: bool,
    /// `alert` keyword: a `pass` rule alerts too ("alert then pass").
    pub force_alert: bool,
    /// `bypass`: a match stops inspection of the rest of the flow.
    pub bypass: bool,
    /// A packet-payload content has `replace` (applied inline only).
    pub replace: bool,
    /// `nfq_set_mark` (mark, mask): applied inline (NFQUEUE) only.
    pub nfq_mark: Option<(u32, u32)>,
    /// `config: logging disable, type tx, scope tx`.
    pub disable_tx_log: bool,
    pub proto: ProtoMatch,
    /// `pkthdr` header: as `ip` for IP packets, and also checked against
    /// packets without a usable IP layer (undecodable ones: decoder-event
    /// rules).
    pub pkthdr: bool,
    pub src: AddrMatcher,
    pub dst: AddrMatcher,
    pub src_ports: PortSpec,
    pub dst_ports: PortSpec,
    pub bidirectional: bool,
    pub flow: FlowOpts,
    /// Which of stream and packet the payload keywords inspect.
    pub stream_req: crate::stream::StreamReq,
    pub flowbit_tests: Vec<FlowbitOp>,
    pub flowbit_sets: Vec<FlowbitOp>,
    pub checks: Vec<Check>,
    pub threshold: Option<Threshold>,
    pub detection_filter: Option<Threshold>,
    /// `flowint` operations in rule order, run after everything else
    /// matched; a failing test makes the rule not match.
    pub flowints: Vec<FlowintStep>,
    /// `xbits` / `hostbits` in rule order. A rule with any is resolved
    /// where the workers' events meet (see [`crate::xbits`]).
    pub xbits: Vec<crate::xbits::XbitOp>,
    /// `flowvar` / `pktvar` tests, checked after the payload matched.
    pub var_tests: Vec<VarTest>,
    /// A pcre of the rule stores capture groups in variables (kept only
    /// when the whole rule matches).
    pub captures: bool,
    /// Which kinds of variables the rule's pcres capture (flow, packet),
    /// for the rule order.
    pub sets_vars: (bool, bool),
    /// `dataset` / `datarep` keywords in rule order. A rule with any is
    /// resolved where the workers' events meet (see [`crate::dataset`]).
    pub datasets: Vec<crate::dataset::DatasetOp>,
    /// `threshold.config` suppressions by address: an alert whose tracked
    /// address is in the set is dropped (side effects still happen).
    pub suppress: Vec<(SuppressTrack, AddrMatcher)>,
    /// `threshold.config` `rate_filter`: changes the alert's action while
    /// the rule matches too often (applied after the threshold).
    pub rate_filter: Option<crate::threshold::RateFilter>,
    /// Payload programs per packet buffer (payload, protocol headers), in
    /// rule order. Application-layer buffers are in `app`.
    pub buffers: Vec<(Buffer, CompiledPayload)>,
    /// The prefilter pattern: on the packet payload for packet rules, on
    /// `app.lists[app.fast_list]` for transaction rules.
    pub fast_pattern: Option<FastPattern>,
    /// Tests on the flow's application protocol (rule header protocol of
    /// a packet rule, `app-layer-protocol`); all must hold.
    pub app_tests: Vec<AppTest>,
    /// Suricata's PD-only signature: `app-layer-protocol` is its only
    /// match keyword (besides `flow` directions and flowbit sets) and its
    /// header names no application protocol. It matches only on the
    /// packet on which protocol detection completed.
    pub pd_only: bool,
    /// Transaction rules (any application-layer buffer, `urilen`, ...):
    /// what they inspect. `None` for packet rules.
    pub app: Option<AppSpec>,
    /// Frame rules (`frame`): the frame type and the program run on each
    /// frame of it. Such a rule has no packet buffer nor `app`.
    pub frame: Option<crate::frame::FrameSpec>,
    pub file: String,
    pub line: usize,
}

impl CompiledRule {
    /// Whether the rule can match a packet whose IP protocol is `proto`:
    /// its header protocol admits it and every `ip_proto` check passes
    /// (`alert ip ... (ip_proto:41;)` belongs to protocol 41's group only,
    /// not to every group, where it was verified on every packet).
    #[inline]
    pub fn admits_ip_proto(&self, proto: u8) -> bool {
        self.proto.admits(proto)
            && self.checks.iter().all(|c| match c {
                Check::Cond(vigil_rules::Condition::IpProto { op, .. }) => op.matches(proto as u64),
                _ => true,
            })
    }

    /// Whether the rule has an `ip_proto` test (which
    /// [`CompiledRule::admits_ip_proto`] applies besides its protocol).
    pub fn tests_ip_proto(&self) -> bool {
        self.checks
            .iter()
            .any(|c| matches!(c, Check::Cond(vigil_rules::Condition::IpProto { .. })))
    }

    /// Whether the rule's ports can be used for grouping (`->` only).
    pub fn uses_ports(&self) -> bool {
        matches!(
            self.proto,
            ProtoMatch::Number(6)
                | ProtoMatch::Number(17)
                | ProtoMatch::Number(132)
                | ProtoMatch::TcpUdp
        )
    }

    /// Whether the rule inspects application-layer transactions (it is
    /// then not in the packet rule groups).
    pub fn is_tx(&self) -> bool {
        self.app.is_some() || self.frame.is_some()
    }

    /// Whether the flow's application protocol passes the rule's tests.
    pub fn app_tests_match(&self, st: AppProtoState) -> bool {
        self.app_tests.iter().all(|t| t.matches(st))
    }

    /// Whether a `threshold.config` suppression drops this rule's alert
    /// for a packet from `src` to `dst`.
    pub fn suppressed(&self, src: IpAddr, dst: IpAddr) -> bool {
        self.suppress.iter().any(|(t, m)| match t {
            SuppressTrack::BySrc => m.contains(src),
            SuppressTrack::ByDst => m.contains(dst),
            SuppressTrack::ByEither => m.contains(src) || m.contains(dst),
        })
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
    /// `requires:` is not met by this engine (Suricata skips such rules
    /// silently).
    RequiresUnmet(String),
}

/// `flowvar:name,"content"` (`flow`) or `pktvar:name,"content"`: the
/// variable is set and holds `content` somewhere in its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarTest {
    pub flow: bool,
    pub name: std::sync::Arc<str>,
    pub content: Box<[u8]>,
}

impl VarTest {
    /// Whether `value` holds the content (Suricata's `SpmSearch`).
    pub fn matches(&self, value: &[u8]) -> bool {
        memchr::memmem::find(value, &self.content).is_some()
    }
}

/// Interns flowbit names to small indices shared by all rules.
#[derive(Debug, Default)]
pub struct FlowbitNames {
    pub names: Vec<String>,
    index: HashMap<String, u32>,
    /// `flowint` variable names (their own index space).
    pub int_names: Vec<String>,
    int_index: HashMap<String, u32>,
    /// `xbits` / `hostbits` names (their own index space).
    pub xbit_names: Vec<String>,
    xbit_index: HashMap<String, u32>,
    /// Flow variable names that pcres capture or `flowvar` reads.
    pub flowvar_names: std::collections::BTreeSet<String>,
    /// The sets `dataset` / `datarep` keywords name (declared by the
    /// config or by the rules), and where their files are.
    pub datasets: crate::dataset::Datasets,
    pub dataset_cfg: crate::dataset::DatasetConfig,
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

    /// The index of an `xbits` / `hostbits` name.
    pub fn intern_xbit(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.xbit_index.get(name) {
            return i;
        }
        let i = self.xbit_names.len() as u32;
        self.xbit_names.push(name.to_string());
        self.xbit_index.insert(name.to_string(), i);
        i
    }

    /// The index of a `flowint` variable.
    pub fn intern_int(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.int_index.get(name) {
            return i;
        }
        let i = self.int_names.len() as u32;
        self.int_names.push(name.to_string());
        self.int_index.insert(name.to_string(), i);
        i
    }
}

/// Application protocols a rule header may name that detection handles:
/// the transport they imply and the parser behind them (`None`: plain
/// TCP, Suricata's `tcp-pkt` / `tcp-stream`).
fn header_app_proto(name: &str) -> Option<(ProtoMatch, Option<AppProto>)> {
    Some(match name {
        "tcp-pkt" | "tcp-stream" => (ProtoMatch::Number(6), None),
        "http" | "http1" => (ProtoMatch::Number(6), Some(AppProto::Http)),
        // `ssl` is Suricata's alias of `tls`.
        "tls" | "ssl" => (ProtoMatch::Number(6), Some(AppProto::Tls)),
        "dns" => (ProtoMatch::TcpUdp, Some(AppProto::Dns)),
        "smb" => (ProtoMatch::Number(6), Some(AppProto::Smb)),
        // DCERPC over UDP is not detected yet; the header still admits it.
        "dcerpc" => (ProtoMatch::TcpUdp, Some(AppProto::Dcerpc)),
        "ftp" => (ProtoMatch::Number(6), Some(AppProto::Ftp)),
        "ftp-data" => (ProtoMatch::Number(6), Some(AppProto::FtpData)),
        "smtp" => (ProtoMatch::Number(6), Some(AppProto::Smtp)),
        "ssh" => (ProtoMatch::Number(6), Some(AppProto::Ssh)),
        "sip" => (ProtoMatch::TcpUdp, Some(AppProto::Sip)),
        // `doh2` (DNS over HTTP/2) is an HTTP/2 flow here.
        "http2" | "doh2" => (ProtoMatch::Number(6), Some(AppProto::Http2)),
        "mqtt" => (ProtoMatch::Number(6), Some(AppProto::Mqtt)),
        "rfb" => (ProtoMatch::Number(6), Some(AppProto::Rfb)),
        "websocket" => (ProtoMatch::Number(6), Some(AppProto::WebSocket)),
        "pgsql" => (ProtoMatch::Number(6), Some(AppProto::Pgsql)),
        "dhcp" => (ProtoMatch::Number(17), Some(AppProto::Dhcp)),
        "krb5" => (ProtoMatch::TcpUdp, Some(AppProto::Krb5)),
        "snmp" => (ProtoMatch::Number(17), Some(AppProto::Snmp)),
        "ike" | "ikev2" => (ProtoMatch::Number(17), Some(AppProto::Ike)),
        "enip" => (ProtoMatch::TcpUdp, Some(AppProto::Enip)),
        "modbus" => (ProtoMatch::Number(6), Some(AppProto::Modbus)),
        "dnp3" => (ProtoMatch::Number(6), Some(AppProto::Dnp3)),
        "quic" => (ProtoMatch::Number(17), Some(AppProto::Quic)),
        "mdns" => (ProtoMatch::Number(17), Some(AppProto::Mdns)),
        "llmnr" => (ProtoMatch::TcpUdp, Some(AppProto::Llmnr)),
        "ldap" => (ProtoMatch::TcpUdp, Some(AppProto::Ldap)),
        "ntp" => (ProtoMatch::Number(17), Some(AppProto::Ntp)),
        "telnet" => (ProtoMatch::Number(6), Some(AppProto::Telnet)),
        "bittorrent-dht" => (ProtoMatch::Number(17), Some(AppProto::BittorrentDht)),
        "pop3" => (ProtoMatch::Number(6), Some(AppProto::Pop3)),
        "imap" => (ProtoMatch::Number(6), Some(AppProto::Imap)),
        "rdp" => (ProtoMatch::Number(6), Some(AppProto::Rdp)),
        "nfs" => (ProtoMatch::TcpUdp, Some(AppProto::Nfs)),
        "tftp" => (ProtoMatch::Number(17), Some(AppProto::Tftp)),
        _ => return None,
    })
}

/// The application-layer buffer a canonical sticky-buffer name denotes,
/// when the app-layer parsers provide it.
pub fn tx_buffer(b: &Buffer) -> Option<BufferId> {
    match b {
        Buffer::Named(n) => BufferId::from_keyword(n),
        _ => None,
    }
}

/// Whether a keyword the parser marked as not evaluable is evaluated by
/// detection (application-layer buffers, transforms, `urilen`, ...).
fn keyword_evaluable(rule: &Rule, k: &str) -> bool {
    match k {
        "stream_size" | "urilen" => true,
        "filemd5" | "filesha1" | "filesha256" | "filestore" => true,
        "filesize" | "filemagic" => check_evaluable(rule, k),
        "ftpbounce" | "krb5.weak_encryption" => true,
        "tls.version"
        | "ssl_version"
        | "tls.fingerprint"
        | "dns.opcode"
        | "dns.rcode"
        | "dns.rrtype"
        | "dcerpc.iface"
        | "dcerpc.opnum"
        | "ftp.dynamic_port"
        | "ftp.mode"
        | "ftp.reply_received"
        | "smb.version"
        | "http2.frametype"
        | "http2.errorcode"
        | "http2.priority"
        | "http2.window"
        | "http2.size_update"
        | "http2.settings"
        | "krb5.msg_type"
        | "krb5.err_code"
        | "krb5.ticket_encryption"
        | "snmp.version"
        | "snmp.pdu_type"
        | "snmp.trap_type"
        | "ntp.version"
        | "ntp.mode"
        | "ntp.stratum"
        | "ike.exchtype"
        | "ike.key_exchange_payload_length"
        | "ike.nonce_payload_length"
        | "ike.chosen_sa_attribute"
        | "cip.service"
        | "modbus"
        | "nfs_procedure" => check_evaluable(rule, k),
        k if vigil_applayer::UintField::from_keyword(k).is_some() => check_evaluable(rule, k),
        "app-layer-protocol" => rule.conditions.iter().all(|c| match c {
            Condition::NotEvaluable { keyword, value } if keyword == "app-layer-protocol" => value
                .as_deref()
                .is_some_and(|v| parse_app_layer_protocol(v).is_ok()),
            _ => true,
        }),
        k if k.starts_with("frame:") => crate::frame::frame_evaluable(k),
        _ => BufferId::from_keyword(k).is_some() || crate::app::transform_supported(k),
    }
}

/// Whether every use of the check keyword `k` in the rule has a valid value.
fn check_evaluable(rule: &Rule, k: &str) -> bool {
    rule.conditions.iter().all(|c| match c {
        Condition::NotEvaluable { keyword, value } if keyword == k => value
            .as_deref()
            .and_then(|v| crate::app::TxCheck::parse(k, v))
            .is_some_and(|r| r.is_ok()),
        _ => true,
    })
}

/// `app-layer-protocol:[!]<name>`: the test, for the protocols Vigil
/// detects (and `failed`). Other names are not evaluable.
pub fn parse_app_layer_protocol(v: &str) -> Result<AppTest, String> {
    let t = v.trim().trim_matches('"').trim();
    let (negated, name) = match t.strip_prefix('!') {
        Some(n) => (true, n.trim()),
        None => (false, t),
    };
    let want = match name {
        "failed" => AppProtoState::Failed,
        n => match header_app_proto(n) {
            Some((_, Some(p))) => AppProtoState::Detected(p),
            _ => return Err(format!("app-layer-protocol '{n}' is not detected")),
        },
    };
    Ok(AppTest { want, negated })
}

/// Every reason a parsed rule cannot be evaluated yet, in rule order and
/// deduplicated (the first is what [`compile_rule`] reports): keywords
/// and buffers the parser marked that detection does not evaluate, the
/// application protocol, and keywords only detection knows it cannot
/// evaluate (app-layer events).
pub fn not_evaluable_keywords(rule: &Rule) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |k: String| {
        if !out.contains(&k) {
            out.push(k);
        }
    };
    for k in rule
        .not_evaluable
        .iter()
        .filter(|k| !keyword_evaluable(rule, k))
    {
        add(k.clone());
    }
    if let Proto::App(name) = &rule.header.proto {
        if header_app_proto(name).is_none() && !matches!(name.as_str(), "ether" | "arp") {
            add(format!("protocol {name}"));
        }
    }
    for c in &rule.conditions {
        if let Condition::Event {
            kind: EventKind::AppLayer,
            name,
        } = c
        {
            if crate::app::TxCheck::app_event(name).is_none() {
                add("app-layer-event".into());
            }
        }
    }
    out
}

/// Suricata's fast pattern choice among the lists `eligible` admits: an
/// explicit `fast_pattern` (on any list of the rule) wins when it is on
/// an eligible list and not negated; otherwise the longest non-negated
/// content of the eligible lists (first one on a tie). Returns the index
/// of the list in `buffers` and the pattern.
fn choose_fast_pattern_in(
    buffers: &[BufferMatch],
    eligible: &dyn Fn(&BufferMatch) -> bool,
) -> Option<(usize, FastPattern)> {
    let explicit = buffers
        .iter()
        .enumerate()
        .flat_map(|(bi, b)| b.items.iter().map(move |i| (bi, i)))
        .find_map(|(bi, i)| match i {
            PayloadItem::Content(c) if c.fast_pattern.is_some() => Some((bi, c)),
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
        // A fast_pattern on a negated content or on a list that is not
        // prefiltered leaves the rule without a prefilter pattern.
        Some((bi, c)) if !c.negated && eligible(&buffers[bi]) => {
            Some((bi, pick(c))).filter(|(_, f)| !f.bytes.is_empty())
        }
        Some(_) => None,
        None => {
            let mut best: Option<(usize, &Content)> = None;
            for (bi, b) in buffers.iter().enumerate().filter(|(_, b)| eligible(b)) {
                for i in &b.items {
                    if let PayloadItem::Content(c) = i {
                        if !c.negated
                            && !c.pattern.is_empty()
                            && best.is_none_or(|(_, x)| c.pattern.len() > x.pattern.len())
                        {
                            best = Some((bi, c));
                        }
                    }
                }
            }
            best.map(|(bi, c)| (bi, pick(c)))
        }
    }
}

/// Suricata's fast pattern choice: an explicit `fast_pattern` wins;
/// otherwise the longest non-negated content of the packet buffer (first
/// one on a tie). Only packet-buffer contents feed the prefilter; rules
/// without one are evaluated on every packet of their group.
pub fn choose_fast_pattern(buffers: &[BufferMatch]) -> Option<FastPattern> {
    choose_fast_pattern_in(buffers, &|b| b.buffer == Buffer::Packet).map(|(_, f)| f)
}

/// The fast pattern of a transaction rule: Suricata picks it across all
/// the rule's lists (explicit `fast_pattern` first, else the longest
/// content); Vigil only prefilters transaction buffers, so the choice is
/// among application-layer lists (Suricata's per-buffer priorities are
/// not modelled: every app-layer buffer has the same priority).
pub fn choose_tx_fast_pattern(buffers: &[BufferMatch]) -> Option<(usize, FastPattern)> {
    // A list under `absent` can match without its buffer: never the
    // fast pattern.
    choose_fast_pattern_in(buffers, &|b| {
        tx_buffer(&b.buffer).is_some()
            && !b
                .items
                .iter()
                .any(|it| matches!(it, PayloadItem::Absent { .. }))
    })
}

/// `urilen:<cmp>[,raw|norm]`.
fn parse_urilen(v: &str) -> Result<(vigil_rules::IntCmp, bool), String> {
    let t = v.trim().trim_matches('"').trim();
    let (cmp, raw) = match t.rsplit_once(',') {
        Some((c, m)) => (c, m.trim() == "raw"),
        None => (t, false),
    };
    Ok((vigil_rules::parse_uint_cmp(cmp.trim(), 65535)?, raw))
}

/// Compiles one rule. `Err` says why it was skipped.
pub fn compile_rule(
    rule: &Rule,
    classes: &ClassificationConfig,
    flowbits: &mut FlowbitNames,
) -> Result<CompiledRule, Skip> {
    compile_rule_with(rule, classes, flowbits, None)
}

/// [`compile_rule`] with the IP reputation `iprep` reads (`None`: no
/// reputation configured, so every `iprep` category is unknown and the
/// rule is invalid, as in Suricata).
pub fn compile_rule_with(
    rule: &Rule,
    classes: &ClassificationConfig,
    flowbits: &mut FlowbitNames,
    reputation: Option<&std::sync::Arc<crate::reputation::Reputation>>,
) -> Result<CompiledRule, Skip> {
    if let Some(why) = &rule.requires_unmet {
        return Err(Skip::RequiresUnmet(why.clone()));
    }
    if let Some(k) = not_evaluable_keywords(rule).into_iter().next() {
        return Err(Skip::NotEvaluable(k));
    }
    let (proto, header_app) = match &rule.header.proto {
        Proto::Ip => (ProtoMatch::Ip, None),
        Proto::Tcp => (ProtoMatch::Number(6), None),
        Proto::Udp => (ProtoMatch::Number(17), None),
        Proto::Icmp => (ProtoMatch::AnyIcmp, None),
        Proto::Icmpv6 => (ProtoMatch::Number(58), None),
        Proto::Sctp => (ProtoMatch::Number(132), None),
        Proto::Igmp => (ProtoMatch::Number(2), None),
        Proto::PktHdr => (ProtoMatch::Ip, None),
        // Link-layer rules (Suricata 9).
        Proto::App(name) if name == "ether" => (ProtoMatch::Ether, None),
        Proto::App(name) if name == "arp" => (ProtoMatch::Arp, None),
        // Suricata's packet-only and stream-only TCP variants mean TCP;
        // application protocols imply their transport.
        Proto::App(name) => {
            header_app_proto(name).ok_or_else(|| Skip::NotEvaluable(format!("protocol {name}")))?
        }
    };
    let mut vars = VarTable::default();
    let mut buffers = Vec::with_capacity(rule.buffers.len());
    let mut lists: Vec<TxList> = Vec::new();
    let mut frame: Option<crate::frame::FrameSpec> = None;
    // Index in `lists` of each of the rule's buffers that is one.
    let mut list_of: Vec<Option<usize>> = Vec::with_capacity(rule.buffers.len());
    // Dataset keywords: (the set as the keyword declares it, the test,
    // index of the buffer in `rule.buffers`).
    let mut ds_items: Vec<(&vigil_rules::DatasetDecl, crate::dataset::DsTest, usize)> = Vec::new();
    for (bi, b) in rule.buffers.iter().enumerate() {
        for it in &b.items {
            match it {
                PayloadItem::Dataset(d) => {
                    ds_items.push((&d.set, crate::dataset::DsTest::Cmd(d.cmd), bi))
                }
                PayloadItem::Datarep(d) => {
                    ds_items.push((&d.set, crate::dataset::DsTest::Rep(d.op, d.value), bi))
                }
                _ => {}
            }
        }
    }
    // Packet buffer index and transaction list index of each of the
    // rule's buffers.
    let mut src_of: Vec<crate::dataset::DsSource> = Vec::with_capacity(rule.buffers.len());
    for b in &rule.buffers {
        let kind = if b.buffer == Buffer::Packet {
            ListKind::Payload
        } else {
            ListKind::Sticky
        };
        let absent = b.items.iter().find_map(|it| match it {
            PayloadItem::Absent { or_else } => Some(*or_else),
            _ => None,
        });
        let items: Vec<PayloadItem> = b
            .items
            .iter()
            .filter(|it| {
                !matches!(
                    it,
                    PayloadItem::Absent { .. } | PayloadItem::Dataset(_) | PayloadItem::Datarep(_)
                )
            })
            .cloned()
            .collect();
        if absent == Some(false) && !items.is_empty() {
            return Err(Skip::Invalid {
                keyword: "absent".into(),
                message: "'absent' cannot be mixed with other keywords on the buffer (use 'absent: or_else')".into(),
            });
        }
        let prog =
            CompiledPayload::compile_for(&items, &mut vars, kind).map_err(|e| Skip::Invalid {
                keyword: e.keyword().to_string(),
                message: e.to_string(),
            })?;
        if let Some(fr) = crate::frame::frame_of(&b.buffer) {
            if absent.is_some() {
                return Err(Skip::NotEvaluable("absent".into()));
            }
            let xf = crate::app::compile_transforms(&b.transforms)?;
            frame = Some(crate::frame::FrameSpec {
                proto: fr.proto,
                name: fr.name,
                xf,
                prog,
            });
            list_of.push(None);
            src_of.push(crate::dataset::DsSource::Packet(u32::MAX));
            continue;
        }
        match tx_buffer(&b.buffer) {
            Some(id) => {
                let xf = crate::app::compile_transforms(&b.transforms)?;
                list_of.push(Some(lists.len()));
                src_of.push(crate::dataset::DsSource::Tx(lists.len() as u32));
                lists.push(TxList {
                    buffer: id,
                    transforms: b.transforms.clone(),
                    xf,
                    prog,
                    absent,
                    key: 0,
                });
            }
            None => {
                if let Some(t) = b.transforms.first() {
                    return Err(Skip::NotEvaluable(t.name.clone()));
                }
                if absent.is_some() {
                    return Err(Skip::NotEvaluable("absent".into()));
                }
                list_of.push(None);
                src_of.push(crate::dataset::DsSource::Packet(buffers.len() as u32));
                buffers.push((b.buffer.clone(), prog));
            }
        }
    }
    let mut urilen: Option<(vigil_rules::IntCmp, bool)> = None;
    let mut app_tests: Vec<AppTest> = Vec::new();
    // `http1`: HTTP/1 flows only (`http` also matches HTTP/2 ones).
    if matches!(&rule.header.proto, Proto::App(n) if n == "http1") {
        app_tests.push(AppTest {
            want: AppProtoState::Detected(AppProto::Http2),
            negated: true,
        });
    }
    let mut tx_checks: Vec<crate::app::TxCheck> = Vec::new();
    let mut flow = FlowOpts::default();
    let mut flowbit_tests = Vec::new();
    let mut flowbit_sets = Vec::new();
    let mut checks = Vec::new();
    let mut threshold = None;
    let mut detection_filter = None;
    let mut flowints = Vec::new();
    let mut var_tests: Vec<VarTest> = Vec::new();
    let mut sets_vars = (false, false);
    for it in rule.buffers.iter().flat_map(|b| &b.items) {
        if let PayloadItem::Pcre(p) = it {
            for c in &p.captures {
                match c.scope {
                    vigil_rules::VarScope::Flow => {
                        sets_vars.0 = true;
                        flowbits.flowvar_names.insert(c.name.clone());
                    }
                    vigil_rules::VarScope::Pkt => sets_vars.1 = true,
                    vigil_rules::VarScope::Alert => {}
                }
            }
        }
    }
    let mut xbits: Vec<crate::xbits::XbitOp> = Vec::new();
    let mut noalert = rule.noalert || rule.action == Action::Config;
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
                EventKind::Engine => {
                    // Suricata looks the full name up in one table of
                    // decoder and stream events, ignoring case.
                    let lower = name.to_ascii_lowercase();
                    let check = if let Some(rest) = lower.strip_prefix("decoder.") {
                        DecoderEvent::from_name(rest).map(Check::Event)
                    } else if lower.starts_with("stream.") {
                        vigil_stream::StreamEvent::from_name(&lower).map(Check::StreamEvent)
                    } else {
                        None
                    };
                    match check {
                        Some(c) => checks.push(c),
                        None => {
                            return Err(Skip::Invalid {
                                keyword: "engine-event".into(),
                                message: format!("unknown engine event '{name}'"),
                            })
                        }
                    }
                }
                EventKind::Decode => match DecoderEvent::from_name(name) {
                    Some(e) => checks.push(Check::Event(e)),
                    None => {
                        return Err(Skip::Invalid {
                            keyword: "decode-event".into(),
                            message: format!("unknown decoder event '{name}'"),
                        })
                    }
                },
                EventKind::Stream => match vigil_stream::StreamEvent::from_name(name) {
                    Some(e) => checks.push(Check::StreamEvent(e)),
                    None => {
                        return Err(Skip::Invalid {
                            keyword: "stream-event".into(),
                            message: format!("unknown stream event '{name}'"),
                        })
                    }
                },
                EventKind::AppLayer => match crate::app::TxCheck::app_event(name) {
                    Some(c) => tx_checks.push(c),
                    None => return Err(Skip::NotEvaluable("app-layer-event".into())),
                },
            },
            Condition::NotEvaluable {
                keyword,
                value: Some(v),
            } if keyword == "stream_size" => {
                let ss = crate::stream::StreamSize::parse(v).map_err(|message| Skip::Invalid {
                    keyword: "stream_size".into(),
                    message,
                })?;
                checks.push(Check::StreamSize(ss));
            }
            Condition::NotEvaluable {
                keyword,
                value: Some(v),
            } if keyword == "urilen" => {
                urilen = Some(parse_urilen(v).map_err(|message| Skip::Invalid {
                    keyword: "urilen".into(),
                    message,
                })?);
            }
            Condition::NotEvaluable {
                keyword,
                value: Some(v),
            } if keyword == "app-layer-protocol" => {
                app_tests.push(
                    parse_app_layer_protocol(v)
                        .map_err(|_| Skip::NotEvaluable("app-layer-protocol".into()))?,
                );
            }
            Condition::NotEvaluable { keyword, value }
                if matches!(keyword.as_str(), "filemd5" | "filesha1" | "filesha256") =>
            {
                tx_checks.push(
                    crate::app::file_hash_check(keyword, value.as_deref(), &rule.origin.file)
                        .map_err(|message| Skip::Invalid {
                            keyword: keyword.clone(),
                            message,
                        })?,
                );
            }
            Condition::NotEvaluable {
                keyword,
                value: None,
            } if keyword == "filestore" => tx_checks.push(crate::app::TxCheck::FileStore),
            Condition::NotEvaluable {
                keyword,
                value: Some(v),
            } if crate::app::TxCheck::parse(keyword, v).is_some() => {
                match crate::app::TxCheck::parse(keyword, v) {
                    Some(Ok(c)) => tx_checks.push(c),
                    _ => return Err(Skip::NotEvaluable(keyword.clone())),
                }
            }
            Condition::NotEvaluable { keyword, .. } if keyword == "krb5.weak_encryption" => {
                tx_checks.push(crate::app::TxCheck::MsgInt {
                    proto: vigil_applayer::AppProto::Krb5,
                    key: "krb5.weak_encryption".into(),
                    cmp: vigil_rules::IntCmp::Eq(1),
                })
            }
            Condition::NotEvaluable { keyword, .. } if keyword == "ftpbounce" => {
                tx_checks.push(crate::app::TxCheck::FtpBounce)
            }
            Condition::NotEvaluable { keyword, .. } => {
                return Err(Skip::NotEvaluable(keyword.clone()))
            }
            // HTTP/1 and TLS track their progress states; SSH and SMTP
            // name states Vigil's parsers do not follow.
            Condition::AppLayerState(st) => {
                let proto = match st.proto.as_str() {
                    "http1" => vigil_applayer::AppProto::Http,
                    "tls" => vigil_applayer::AppProto::Tls,
                    _ => return Err(Skip::NotEvaluable("app-layer-state".into())),
                };
                tx_checks.push(crate::app::TxCheck::AppState {
                    proto,
                    to_server: st.to_server,
                    op: st.op,
                    progress: st.progress,
                });
            }
            Condition::IpRep(r) => {
                let rep = reputation.ok_or_else(|| Skip::Invalid {
                    keyword: "iprep".into(),
                    message: format!(
                        "unknown iprep category '{}' (no reputation-categories-file configured)",
                        r.category
                    ),
                })?;
                let cat = rep.category(&r.category).ok_or_else(|| Skip::Invalid {
                    keyword: "iprep".into(),
                    message: format!("unknown iprep category '{}'", r.category),
                })?;
                checks.push(Check::IpRep(crate::reputation::IpRepCheck {
                    side: r.side,
                    cat,
                    op: r.op,
                    value: r.value,
                    rep: std::sync::Arc::clone(rep),
                }));
            }
            Condition::GeoIp(g) => {
                let db = flowbits
                    .dataset_cfg
                    .geoip
                    .as_ref()
                    .ok_or_else(|| Skip::Invalid {
                        keyword: "geoip".into(),
                        message: "no GeoIP database: set geoip-database in the config".into(),
                    })?;
                checks.push(Check::GeoIp(crate::geoip::GeoIpCheck::new(
                    g,
                    std::sync::Arc::clone(db),
                )));
            }
            Condition::IpOpts(name) => {
                let t = if name == "any" {
                    None
                } else {
                    Some(ipopt_type(name).ok_or_else(|| Skip::Invalid {
                        keyword: "ipopts".into(),
                        message: format!("unknown ip option '{name}'"),
                    })?)
                };
                checks.push(Check::IpOpt(t));
            }
            Condition::Flowvar(m) | Condition::Pktvar(m) => {
                let flow = matches!(c, Condition::Flowvar(_));
                if flow {
                    flowbits.flowvar_names.insert(m.name.clone());
                }
                var_tests.push(VarTest {
                    flow,
                    name: m.name.as_str().into(),
                    content: m.content.clone().into(),
                });
            }
            Condition::Flowint(f) => flowints.push(FlowintStep {
                var: flowbits.intern_int(&f.name),
                op: f.op,
                value: match &f.value {
                    None => FlowintOperand::None,
                    Some(FlowintValue::Num(n)) => FlowintOperand::Num(*n),
                    Some(FlowintValue::Var(v)) => FlowintOperand::Var(flowbits.intern_int(v)),
                },
            }),
            Condition::Xbits(x) => {
                let track = match x.track.as_str() {
                    "ip_src" => crate::xbits::XTrack::Src,
                    "ip_dst" => crate::xbits::XTrack::Dst,
                    "ip_pair" => crate::xbits::XTrack::Pair,
                    // Bits per transaction (Suricata 8): not kept yet.
                    _ => return Err(Skip::NotEvaluable("xbits track tx".into())),
                };
                xbits.push(crate::xbits::XbitOp {
                    cmd: x.cmd,
                    bit: flowbits.intern_xbit(&x.name),
                    track,
                    expire_s: x.expire.unwrap_or(crate::xbits::DEFAULT_EXPIRE_S),
                });
            }
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
    // An xbits test is decided where the workers' events meet (see
    // crate::xbits), after the worker already applied the rule's flow
    // state changes: a rule that would change flow state only when an
    // xbit is set cannot be evaluated that way.
    // A `pass` rule stops at the worker, so its xbits would never apply.
    if (!xbits.is_empty() && rule.action == Action::Pass)
        || (xbits.iter().any(|o| o.is_test())
            && (!flowbit_sets.is_empty()
                || flowints.iter().any(|f| f.op.is_modifier())
                || rule.bypass))
    {
        return Err(Skip::NotEvaluable(
            "xbits on a pass rule, or an xbits test with flowbits/flowint/bypass".into(),
        ));
    }
    // A dataset keyword is decided where the workers' events meet, like
    // an xbits test (each may fail there: `set` fails on a known value).
    if !ds_items.is_empty()
        && (rule.action == Action::Pass
            || !flowbit_sets.is_empty()
            || flowints.iter().any(|f| f.op.is_modifier())
            || rule.bypass
            || matches!(proto, ProtoMatch::Ether | ProtoMatch::Arp))
    {
        return Err(Skip::NotEvaluable(
            "dataset/datarep on a pass or link-layer rule, or with flowbits/flowint/bypass".into(),
        ));
    }
    let mut datasets = Vec::with_capacity(ds_items.len());
    for (decl, test, bi) in ds_items {
        let set = flowbits
            .dataset_cfg
            .resolve_rule_set(&mut flowbits.datasets, decl, &rule.origin.file)
            .map_err(|message| Skip::Invalid {
                keyword: match test {
                    crate::dataset::DsTest::Cmd(_) => "dataset".into(),
                    crate::dataset::DsTest::Rep(..) => "datarep".into(),
                },
                message,
            })?;
        datasets.push(crate::dataset::DatasetOp {
            set,
            test,
            src: src_of[bi],
        });
    }
    let severity = rule.priority.or(class_prio).unwrap_or(3);
    // A rule that names DHCP and nothing of it is still inspected per
    // transaction, as Suricata does since its issue 8621: each datagram
    // alerts once, in its own direction.
    // NTP likewise: Suricata 9 alerts on each message with its `ntp`
    // object.
    let per_tx = matches!(
        header_app,
        Some(AppProto::Dhcp | AppProto::Ntp | AppProto::BittorrentDht)
    );
    if let Some(f) = &frame {
        // As Suricata: a frame rule inspects its frame and nothing else of
        // the payload or the application layer.
        if !lists.is_empty() || !buffers.is_empty() || urilen.is_some() || !tx_checks.is_empty() {
            return Err(Skip::Invalid {
                keyword: "frame".into(),
                message: "'frame' cannot be mixed with payload keywords or other application-layer keywords".into(),
            });
        }
        if !datasets.is_empty() {
            return Err(Skip::NotEvaluable("dataset on a frame".into()));
        }
        if let Some(p) = crate::frame::frame_app_proto(f.proto) {
            app_tests.push(AppTest {
                want: AppProtoState::Detected(p),
                negated: false,
            });
        }
    }
    let (app, fast_pattern) = if lists.is_empty()
        && urilen.is_none()
        && tx_checks.is_empty()
        && !per_tx
    {
        // A packet rule whose header names an application protocol only
        // matches once the flow is known to carry it.
        if let Some(p) = header_app {
            app_tests.insert(
                0,
                AppTest {
                    want: AppProtoState::Detected(p),
                    negated: false,
                },
            );
        }
        (None, choose_fast_pattern(&rule.buffers))
    } else {
        let mut ids: Vec<BufferId> = lists.iter().map(|l| l.buffer).collect();
        if let Some((_, raw)) = urilen {
            ids.push(if raw {
                BufferId::HttpUriRaw
            } else {
                BufferId::HttpUri
            });
        }
        let protos: Vec<AppProto> = ids
            .iter()
            .map(|b| b.proto())
            .chain(tx_checks.iter().map(|c| c.proto()))
            .collect();
        // `alert smb` with DCERPC keywords (named pipes) or file
        // buffers: SMB transactions.
        let smb_rule = header_app == Some(AppProto::Smb)
            && ids.iter().all(|b| {
                matches!(
                    b,
                    BufferId::FileData | BufferId::FileName | BufferId::DcerpcStubData
                ) || b.proto() == AppProto::Smb
            })
            && tx_checks
                .iter()
                .all(|c| c.is_file() || matches!(c.proto(), AppProto::Dcerpc | AppProto::Smb));
        // `alert smtp` with file buffers (the mail's MIME parts) and
        // SMTP keywords: SMTP transactions.
        let smtp_rule = header_app == Some(AppProto::Smtp)
            && ids.iter().all(|b| {
                matches!(b, BufferId::FileData | BufferId::FileName) || b.proto() == AppProto::Smtp
            })
            && tx_checks
                .iter()
                .all(|c| c.is_file() || c.proto() == AppProto::Smtp);
        // `alert nfs` with file buffers (READ and WRITE data) and NFS
        // keywords: NFS transactions.
        let nfs_rule = header_app == Some(AppProto::Nfs)
            && ids.iter().all(|b| {
                matches!(b, BufferId::FileData | BufferId::FileName) || b.proto() == AppProto::Nfs
            })
            && tx_checks
                .iter()
                .all(|c| c.is_file() || c.proto() == AppProto::Nfs);
        // `alert quic` with the JA3/JA4 buffers (Suricata registers
        // them for QUIC too): QUIC transactions.
        let quic_rule = header_app == Some(AppProto::Quic)
            && ids.iter().all(|b| {
                matches!(
                    b,
                    BufferId::Ja3Hash
                        | BufferId::Ja3String
                        | BufferId::Ja3sHash
                        | BufferId::Ja3sString
                        | BufferId::Ja4Hash
                ) || b.proto() == AppProto::Quic
            })
            && tx_checks.iter().all(|c| c.proto() == AppProto::Quic);
        // `alert pop3` with the mail's buffers (`email.*`, `file.*`
        // of RETR): POP3 transactions (a Vigil extension).
        let pop3_rule = header_app == Some(AppProto::Pop3)
            && ids.iter().all(|b| {
                !matches!(
                    b,
                    BufferId::SmtpHelo | BufferId::SmtpMailFrom | BufferId::SmtpRcptTo
                ) && (matches!(b, BufferId::FileData | BufferId::FileName)
                    || b.proto() == AppProto::Smtp)
            })
            && tx_checks
                .iter()
                .all(|c| c.is_file() || c.proto() == AppProto::Pop3);
        let first = if smb_rule {
            Some(AppProto::Smb)
        } else if smtp_rule {
            Some(AppProto::Smtp)
        } else if quic_rule {
            Some(AppProto::Quic)
        } else if pop3_rule {
            Some(AppProto::Pop3)
        } else if nfs_rule {
            Some(AppProto::Nfs)
        } else {
            protos.first().copied().or(header_app)
        };
        let Some(app_proto) = first else {
            return Err(Skip::NotEvaluable("no application protocol".into()));
        };
        if let Some(other) = protos
            .iter()
            .find(|p| **p != app_proto)
            .filter(|_| !smb_rule && !smtp_rule && !quic_rule && !pop3_rule && !nfs_rule)
        {
            return Err(Skip::Invalid {
                keyword: "protocol".into(),
                message: format!(
                    "keywords of different application protocols ({} and {})",
                    app_proto.name(),
                    other.name()
                ),
            });
        }
        // Suricata 9 switches an HTTP/2 flow carrying DNS to `doh2`:
        // an `alert http2` rule with `dns.*` keywords is invalid there
        // ("can't set rule app proto").
        if app_proto == AppProto::Dns && matches!(&rule.header.proto, Proto::App(n) if n == "http2")
        {
            return Err(Skip::Invalid {
                keyword: "protocol".into(),
                message: "dns keywords in an http2 rule (DNS over HTTP/2 is doh2)".into(),
            });
        }
        // `alert http2` / `doh2` with `http.*` or `dns.*` buffers:
        // those buffers on HTTP/2 flows only.
        let http2_only = header_app == Some(AppProto::Http2)
            && matches!(app_proto, AppProto::Http | AppProto::Dns);
        if http2_only {
            app_tests.push(AppTest {
                want: AppProtoState::Detected(AppProto::Http2),
                negated: false,
            });
        }
        if let Some(h) = header_app.filter(|h| *h != app_proto && !http2_only) {
            // Protocols Vigil detects but has no transactions for yet
            // (FTP's file.data, SMB's file buffers ...): a valid rule
            // that cannot be evaluated, not an invalid one.
            if matches!(h, AppProto::Ftp | AppProto::Smb | AppProto::Dcerpc) {
                return Err(Skip::NotEvaluable(format!(
                    "{} transactions ({} buffers)",
                    h.name(),
                    app_proto.name()
                )));
            }
            return Err(Skip::Invalid {
                keyword: "protocol".into(),
                message: format!(
                    "rule protocol {} with {} buffers",
                    h.name(),
                    app_proto.name()
                ),
            });
        }
        let (dir, both_dirs) = crate::app::spec_directions(app_proto, &ids, &tx_checks, &flow);
        let fast =
            choose_tx_fast_pattern(&rule.buffers).and_then(|(bi, f)| Some((list_of[bi]?, f)));
        let (fast_list, fp) = match fast {
            Some((li, f)) => (Some(li), Some(f)),
            None => (None, None),
        };
        (
            Some(AppSpec {
                proto: app_proto,
                dir,
                lists,
                urilen,
                fast_list,
                checks: tx_checks,
                both_dirs,
            }),
            fp,
        )
    };
    let f = &flow;
    let pd_only = !app_tests.is_empty()
        && header_app.is_none()
        && app.is_none()
        && checks.is_empty()
        && rule.buffers.is_empty()
        && frame.is_none()
        && flowbit_tests.is_empty()
        && flowbit_sets.iter().all(|o| o.cmd == FlowbitsCmd::Set)
        && flowints.is_empty()
        && var_tests.is_empty()
        && !(f.established
            || f.not_established
            || f.stateless
            || f.only_stream
            || f.no_stream
            || f.only_frag
            || f.no_frag);
    Ok(CompiledRule {
        pkthdr: rule.header.proto == Proto::PktHdr,
        action: rule.action,
        gid: rule.gid,
        sid: rule.sid,
        rev: rule.rev,
        msg: rule.msg.clone(),
        category,
        classtype: rule.classtype.clone().unwrap_or_default(),
        severity,
        metadata: rule.metadata.clone(),
        references: rule.references.clone(),
        target_dest: rule.target.as_deref().map(|t| t == "dest_ip"),
        tag: rule.tag,
        noalert,
        force_alert: rule.force_alert,
        bypass: rule.bypass,
        replace: buffers
            .iter()
            .any(|(b, p)| *b == Buffer::Packet && p.has_replace()),
        nfq_mark: rule.nfq_mark,
        disable_tx_log: rule.disable_tx_log,
        proto,
        src: rule.header.src.compile(),
        dst: rule.header.dst.compile(),
        src_ports: rule.header.src_ports.clone(),
        dst_ports: rule.header.dst_ports.clone(),
        bidirectional: rule.header.direction == Direction::Both,
        flow,
        stream_req: crate::stream::StreamReq::of(rule),
        flowbit_tests,
        flowbit_sets,
        checks,
        threshold,
        detection_filter,
        flowints,
        xbits,
        captures: buffers
            .iter()
            .any(|(_, p): &(Buffer, CompiledPayload)| p.captures())
            || app.as_ref().is_some_and(|a| a.captures()),
        var_tests,
        sets_vars,
        datasets,
        suppress: Vec::new(),
        rate_filter: None,
        fast_pattern,
        app_tests,
        pd_only,
        app,
        frame,
        buffers,
        file: rule.origin.file.clone(),
        line: rule.origin.line,
    })
}

/// Suricata's signature ordering: rules are inspected, and their alerts
/// written, in this order within a packet. Pass rules first, then drop and
/// reject, then alert; within an action, rules that set flowbits before
/// rules that only read them; the same for flow variables (a pcre
/// capture sets, `flowvar` reads), packet variables and flowint; then by
/// priority (1 first); ties keep file order.
pub fn order_key(r: &CompiledRule) -> (u8, u8, u8, u8, u8, u8, u8) {
    let action = match r.action {
        Action::Pass => 0,
        Action::Drop => 1,
        Action::Reject | Action::RejectSrc | Action::RejectDst | Action::RejectBoth => 2,
        Action::Alert => 3,
        Action::Log | Action::Config => 4,
    };
    let fb = match (r.flowbit_sets.is_empty(), r.flowbit_tests.is_empty()) {
        (false, true) => 0,
        (false, false) => 1,
        (true, false) => 2,
        (true, true) => 3,
    };
    let sets = r.flowints.iter().any(|f| f.op.is_modifier());
    let reads = r.flowints.iter().any(|f| !f.op.is_modifier());
    let fi = match (sets, reads) {
        (true, false) => 0,
        (true, true) => 1,
        (false, true) => 2,
        (false, false) => 3,
    };
    // Suricata orders by host and ip-pair bits the same way.
    let xs = r.xbits.iter().any(|o| !o.is_test());
    let xt = r.xbits.iter().any(|o| o.is_test());
    let xb = match (xs, xt) {
        (true, false) => 0,
        (true, true) => 1,
        (false, true) => 2,
        (false, false) => 3,
    };
    let var_order = |sets: bool, flow: bool| {
        let reads = r.var_tests.iter().any(|t| t.flow == flow);
        match (sets, reads) {
            (true, false) => 0,
            (true, true) => 1,
            (false, true) => 2,
            (false, false) => 3,
        }
    };
    let fv = var_order(r.sets_vars.0, true);
    let pv = var_order(r.sets_vars.1, false);
    (action, fb, fv, pv, fi, xb, r.severity)
}
