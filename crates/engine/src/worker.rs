//! A worker: owns, with no locks, the flow table, the TCP sessions and
//! their reassembled streams, and the per-flow detection state of the
//! flows the dispatcher pins to it, and runs decode, flow and stream
//! tracking and detection over each batch it receives.
//!
//! A batch is processed in two passes. The first is stateless: decode every
//! packet, pick its rule groups and run the prefilter over all of them (the
//! step a device engine will take over). The second runs in packet order:
//! flow lookup, TCP tracking and reassembly, raw stream inspection,
//! verification, flowbits. So the order in which per-flow state changes
//! never depends on how the prefilter was run.
//!
//! Stream inspection follows Suricata's IDS mode: a packet inspects the
//! reassembled data of its own direction that the peer acknowledged, once
//! a chunk of it (2560 bytes by default) is ready or the connection is
//! closing; when a flow ends (timeout, port reuse, eviction, end of input)
//! what is left is inspected on pseudo packets ("stream (flow timeout)").

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use vigil_detect::{
    DetectEngine, DetectScratch, FlowDetectState, FlowView, GroupSel, Hit, PacketInput, ScanSets,
    StreamChunk,
};
use vigil_flow::{
    bits_addr, Direction, EndReason, Flow, FlowKey, FlowTable, Lifecycle, TimeoutTable,
};
use vigil_stream::{InsertScratch, Segment, StreamConfig, StreamMemory, TcpSession, TcpState};
use vigil_wire::{decode, linktype, DecoderEvent, IgmpInfo, Packet, SctpInfo, L4};

use vigil_applayer::AppLayerConfig;
use vigil_detect::{AppProtoState, RuleProfile, TxInput};
use vigil_rules::Buffer;

use crate::app::{app_dir, dir_index, AppFlow, FeedOutcome};
use crate::batch::{
    Batch, PacketRecord, DEFRAG_IGNORED, DEFRAG_MEMCAP, DEFRAG_OVERLAP, DEFRAG_TOO_LARGE,
};
use crate::exception::{ExceptionCase, ExceptionPolicies, ExceptionPolicy};

mod device;
pub use device::{DeviceSetup, PendingBatch};

pub use vigil_stream::TcpState as SessionState;

/// Per-flow state a worker keeps.
#[derive(Debug, Default)]
pub struct FlowState {
    pub detect: FlowDetectState,
    /// TCP session (state `None` for other protocols and before a SYN).
    pub tcp: TcpSession,
    seen_to_server: bool,
    seen_to_client: bool,
    /// VLAN ids of the flow's first packet (for pseudo packets).
    vlan: [u16; 3],
    vlan_count: u8,
    v6: bool,
    /// Key in the worker's timeout index: (second of the idle deadline,
    /// [`flow_seq`]).
    deadline: Option<(i64, u64)>,
    /// Tunnel depth of the flow's first packet (a tunnel's frame and the
    /// packet inside it share their input index).
    depth: u8,
    /// Application layer (TCP and UDP flows, when enabled).
    pub app: Option<Box<AppFlow>>,
    /// Payload is no longer inspected (TLS after its handshake, with
    /// `encryption-handling: default`).
    no_payload: bool,
    /// Inline: a packet of this flow was dropped by a rule; every later
    /// one is dropped without inspection.
    pub dropped: bool,
    /// No more detection on this flow (the `pass-flow` exception policy);
    /// reassembly, parsing and transaction logging go on.
    no_detect: bool,
    /// The midstream exception was judged for this flow.
    midstream_seen: bool,
    /// The app-layer error exception was judged for this flow.
    app_error_seen: bool,
    /// Inline: a `drop` record was written for (to-server, to-client).
    drop_logged: [bool; 2],
    /// A SYN opened the session and a connection attempt was raised for
    /// the detectors (a failure is raised if it never gets established).
    conn_attempt: bool,
    /// TCP flags seen (to-server, to-client), for the `flow` record.
    tcp_flags: [u8; 2],
    /// Smallest and largest TTL seen (to-server, to-client), for `netflow`.
    ttl: [(u8, u8); 2],
    /// ICMP type and code of the flow's first packet.
    icmp: Option<(u8, u8)>,
    /// An alert was raised on the flow.
    alerted: bool,
    /// Byte-rate tracking for elephant flows (`flow.rate-tracking`
    /// configured).
    rate: Option<Box<vigil_flow::FlowRate>>,
    /// Why and when (packet time) the flow ended.
    end: (FlowEnd, i64),
}

/// Why a flow ended: Suricata's `flow.reason`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FlowEnd {
    /// End of input (or of the capture).
    #[default]
    Shutdown,
    /// Idle longer than its state's timeout.
    Timeout,
    /// Evicted to make room (the flow table's memcap).
    Forced,
    /// A SYN started a new connection on the finished session's tuple.
    TcpReuse,
}

impl FlowEnd {
    pub fn name(self) -> &'static str {
        match self {
            FlowEnd::Shutdown => "shutdown",
            FlowEnd::Timeout => "timeout",
            FlowEnd::Forced => "forced",
            FlowEnd::TcpReuse => "tcp_reuse",
        }
    }
}

/// Where an alert goes in the output order: by packet index, then phase
/// (0: flows ended before the packet, 1: the packet, 1 + d: the tunnel
/// packet d tunnels down in it, 255: the datagram it completed), then the
/// ended flow's place (`flow_seq`: first packet index, tunnel depth).
pub type AlertOrder = (u64, u8, u64);

/// A record's phase in [`AlertOrder`].
fn phase(rec: &PacketRecord) -> u8 {
    if rec.rebuilt {
        u8::MAX
    } else {
        rec.tunnel.saturating_add(1)
    }
}

/// One alert found by a worker, with everything output needs.
#[derive(Debug, Clone)]
pub struct AlertOut {
    /// Input position of the packet (`pcap_cnt`); for pseudo packets the
    /// flow's last packet.
    pub index: u64,
    pub order: AlertOrder,
    pub ts_ns: i64,
    pub flow_id: Option<u64>,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sp: Option<u16>,
    pub dp: Option<u16>,
    pub proto: u8,
    pub icmp: Option<(u8, u8)>,
    /// SCTP header and chunk summary (the EVE `sctp` object).
    pub sctp: Option<SctpInfo>,
    /// IGMP type and version (the EVE `igmp` object).
    pub igmp: Option<IgmpInfo>,
    pub vlan: [u16; 3],
    pub vlan_count: u8,
    pub to_server: Option<bool>,
    /// Index into [`DetectEngine::rules`].
    pub rule: u32,
    pub linktype: u32,
    /// The rule matched reassembled stream data (`payload` is then the
    /// stream data, with `[N bytes missing]` for gaps).
    pub stream: bool,
    /// Raised on a flow-end pseudo packet ("stream (flow timeout)").
    pub pseudo: bool,
    /// Raised on a datagram rebuilt from fragments ("defrag").
    pub rebuilt: bool,
    /// Packet payload (or stream data), when payload logging is on.
    pub payload: Option<Box<[u8]>>,
    /// Whole frame, when packet logging is on.
    pub packet: Option<Box<[u8]>>,
    /// The flow's `app_proto` (`"failed"` when detection gave up; `None`
    /// while undecided or without a flow).
    pub app_proto: Option<&'static str>,
    /// The transaction an alert matched on, or the one a transaction
    /// record logs.
    pub app: Option<Box<AppRecord>>,
    /// An alert, or a transaction record (`http`, `dns`, `tls` events).
    pub kind: OutKind,
    /// The client address an HTTP proxy reported (X-Forwarded-For or the
    /// configured header), when XFF handling is on.
    pub xff: Option<String>,
    /// The application-layer frame a `frame` rule matched (EVE
    /// `frame` object).
    pub frame: Option<Box<FrameOut>>,
    /// Inline: the packet was dropped by this (drop or reject) rule
    /// (EVE `"action":"blocked"`).
    pub blocked: bool,
    /// Raised on a tunnel packet: the tunnel and the frame's outermost
    /// packet (EVE `tunnel` object, `pkt_src`).
    pub tunnel: Option<TunnelOut>,
    /// Raised on a packet without an IP layer (`src`/`dst`/`proto` are
    /// placeholders, not written).
    pub link_only: bool,
    /// The flow's and packet's variables after the packet's detection
    /// (EVE `metadata`), shared by the packet's alerts; `None` when off
    /// or there are none.
    pub vars: Option<Arc<AlertVars>>,
    /// The rule's alert variables (EVE `alert.context`).
    pub context: Box<[vigil_detect::NamedValue]>,
    /// An [`OutKind::Xbits`] event of a rule with `dataset` / `datarep`:
    /// the buffers its keywords look at (vigil_detect::dataset).
    pub datasets: Option<vigil_detect::inspect::DatasetValues>,
    /// A transaction record the worker formatted
    /// ([`crate::AlertSink::tx_formatter`]): its output lines; `app` is
    /// then `None`.
    pub line: Option<Box<[u8]>>,
}

/// A snapshot of the variables Suricata logs with an event
/// (`EveAddMetadata`): the flow's flowbits, flowints and flow variables,
/// each in the order they were first set, and the packet's variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertVars {
    pub flowbits: Vec<String>,
    pub flowints: Vec<(String, u32)>,
    pub flowvars: Vec<vigil_detect::NamedValue>,
    pub pktvars: Vec<vigil_detect::NamedValue>,
}

impl AlertVars {
    /// The variables of `state` (the flow, if any) and `pktvars` (the
    /// packet); `None` when there are none.
    pub fn snapshot(
        detect: &DetectEngine,
        state: Option<&FlowDetectState>,
        pktvars: &[vigil_detect::NamedValue],
    ) -> Option<Arc<AlertVars>> {
        let mut v = AlertVars {
            pktvars: pktvars.to_vec(),
            ..AlertVars::default()
        };
        if let Some(st) = state {
            v.flowbits = st
                .flowbits_in_order()
                .iter()
                .filter_map(|&b| detect.flowbit_names.get(b as usize).cloned())
                .collect();
            v.flowints = st
                .flowints_in_order()
                .filter_map(|(i, val)| Some((detect.flowint_names.get(i as usize)?.clone(), val)))
                .collect();
            v.flowvars = st.flowvars().to_vec();
        }
        let empty = v.flowbits.is_empty()
            && v.flowints.is_empty()
            && v.flowvars.is_empty()
            && v.pktvars.is_empty();
        (!empty).then(|| Arc::new(v))
    }
}

/// A tunnel packet's tunnel, for output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelOut {
    pub kind: vigil_wire::TunnelKind,
    pub depth: u8,
    /// The outermost packet's addresses, ports (0 without) and protocol.
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sp: u16,
    pub dp: u16,
    pub proto: u8,
}

/// The tunnel of a tunnel packet.
fn tunnel_of(p: &Packet<'_>) -> Option<TunnelOut> {
    let (t, root) = (p.tunnel?, p.outer_ip.as_ref()?);
    Some(TunnelOut {
        kind: t.kind,
        depth: t.depth,
        src: root.src,
        dst: root.dst,
        sp: p.outer_ports.0,
        dp: p.outer_ports.1,
        proto: root.proto,
    })
}

/// Inline (NFQUEUE): the netfilter mark change that the `nfq_set_mark`
/// rules matching a packet ask for, folded into one: the packet goes on
/// with mark `(old & !mask) | (value & mask)`, `old` being the mark it was
/// queued with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MarkChange {
    pub value: u32,
    pub mask: u32,
}

impl MarkChange {
    /// `nfq_set_mark:mark/mask` applied after `self` (Suricata applies
    /// the matching rules' marks in turn, each on the previous result).
    pub fn then(self, mark: u32, mask: u32) -> MarkChange {
        MarkChange {
            value: (self.value & self.mask & !mask) | (mark & mask),
            mask: self.mask | mask,
        }
    }

    /// The mark of a packet queued with mark `old`.
    pub fn apply(self, old: u32) -> u32 {
        (old & !self.mask) | (self.value & self.mask)
    }
}

/// What happens to a packet when Vigil is inline (IPS mode): the packet
/// is held until every rule that can see it was evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verdict {
    #[default]
    Accept,
    /// A `drop` rule matched it.
    Drop,
    /// A `reject*` rule matched it: dropped, and the sender (or the other
    /// side, or both) is told (TCP RST, else ICMP unreachable).
    Reject(RejectTo),
    /// Its flow was dropped before (the flow verdict table): dropped
    /// without inspection.
    FlowDropped,
    /// Its source or destination is blocked (the host table): dropped
    /// without inspection.
    HostBlocked,
    /// An exception policy dropped it (a memory cap reached, a session
    /// picked up midstream, a parser error).
    Exception(ExceptionCase),
}

impl Verdict {
    pub fn is_drop(self) -> bool {
        self != Verdict::Accept
    }
}

/// The eve-log `drop` type's settings (Suricata's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DropLog {
    /// `flows: all` logs every dropped packet; `start` (the default) the
    /// first of each flow direction.
    pub all: bool,
    /// `alerts: yes`: the record names the rule that dropped the packet.
    pub alerts: bool,
}

impl Verdict {
    /// Suricata's drop reason (`PacketDropReasonToString`); the host
    /// table's is Vigil's own.
    pub fn drop_reason(self) -> Option<&'static str> {
        Some(match self {
            Verdict::Accept => return None,
            Verdict::Drop | Verdict::Reject(_) => "rules",
            Verdict::FlowDropped => "flow drop",
            Verdict::HostBlocked => "host table",
            Verdict::Exception(c) => c.drop_reason_text(),
        })
    }
}

/// A record's ports (transports that have them) and ICMP type and code.
fn ports_and_icmp(p: &Packet<'_>) -> (Option<u16>, Option<u16>, Option<(u8, u8)>) {
    let has_ports = matches!(p.l4, L4::Tcp(_) | L4::Udp(_) | L4::Sctp(_));
    let icmp = match p.l4 {
        L4::Icmpv4(i) | L4::Icmpv6(i) => Some((i.itype, i.icode)),
        _ => None,
    };
    (
        has_ports.then(|| p.src_port()),
        has_ports.then(|| p.dst_port()),
        icmp,
    )
}

/// The packet's SCTP summary, for SCTP packets.
fn sctp_of(p: &Packet<'_>) -> Option<SctpInfo> {
    match p.l4 {
        L4::Sctp(s) => Some(s),
        _ => None,
    }
}

/// The packet's IGMP type and version, for IGMP packets.
fn igmp_of(p: &Packet<'_>) -> Option<IgmpInfo> {
    match p.l4 {
        L4::Igmp(g) => Some(g),
        _ => None,
    }
}

/// The `drop` object of an EVE drop record (Suricata's DropLogJSON): the
/// packet's IP and transport header fields, and why it was dropped.
fn drop_json(p: &Packet<'_>, reason: &str) -> String {
    use std::fmt::Write;
    let mut o = String::with_capacity(160);
    o.push('{');
    let d = p.data;
    let be16 = |b: &[u8], i: usize| {
        b.get(i..i + 2)
            .map_or(0, |x| u16::from_be_bytes([x[0], x[1]]))
    };
    if let Some(ip) = &p.ip {
        if ip.version == 4 {
            let h = d.get(ip.header.clone()).unwrap_or(&[]);
            let _ = write!(
                o,
                "\"len\":{},\"tos\":{},\"ttl\":{},\"ipid\":{},",
                be16(h, 2),
                ip.tos,
                ip.ttl,
                ip.id
            );
        } else {
            let h = d.get(ip.fixed_header.clone()).unwrap_or(&[]);
            let flowlbl = h.get(1..4).map_or(0, |x| {
                (u32::from(x[0] & 0x0f) << 16) | (u32::from(x[1]) << 8) | u32::from(x[2])
            });
            let _ = write!(
                o,
                "\"len\":{},\"tc\":{},\"hoplimit\":{},\"flowlbl\":{},",
                be16(h, 4),
                ip.tos,
                ip.ttl,
                flowlbl
            );
        }
    }
    match p.l4 {
        L4::Tcp(t) => {
            let h = p.l4_header();
            let f = |bit: u8| t.flags & bit != 0;
            let _ = write!(
                o,
                "\"tcpseq\":{},\"tcpack\":{},\"tcpwin\":{},\"syn\":{},\"ack\":{},\"psh\":{},\"rst\":{},\"urg\":{},\"fin\":{},\"tcpres\":{},\"tcpurgp\":{},",
                t.seq,
                t.ack,
                t.window,
                f(0x02),
                f(0x10),
                f(0x08),
                f(0x04),
                f(0x20),
                f(0x01),
                h.get(12).map_or(0, |b| b & 0x0f),
                be16(h, 18)
            );
        }
        L4::Udp(_) => {
            let _ = write!(o, "\"udplen\":{},", be16(p.l4_header(), 4));
        }
        L4::Icmpv4(i) | L4::Icmpv6(i) => {
            if let (Some(id), Some(seq)) = (i.id, i.seq) {
                let _ = write!(o, "\"icmp_id\":{id},\"icmp_seq\":{seq},");
            }
        }
        _ => {}
    }
    let _ = write!(o, "\"reason\":\"{reason}\"}}");
    o
}

/// Who gets the answer of a `reject` (`reject` is `rejectsrc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectTo {
    Src,
    Dst,
    Both,
}

impl RejectTo {
    /// Whether the (source, destination) of the rejected packet is
    /// answered.
    pub fn sides(self) -> (bool, bool) {
        match self {
            RejectTo::Src => (true, false),
            RejectTo::Dst => (false, true),
            RejectTo::Both => (true, true),
        }
    }
}

/// What an output item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutKind {
    #[default]
    Alert,
    /// An app-layer transaction record: `app` is set, `rule` is unused.
    TxLog,
    /// Inline: a dropped packet (EVE `drop` event): `app` holds the
    /// `drop` object; `rule` is the rule that dropped it, or `u32::MAX`.
    Drop,
    /// An event for the host and pair scopes: `rule` (which has
    /// `xbits`) matched everything else on this packet; where events meet
    /// in input order its xbits decide whether it matches and alerts
    /// (vigil_detect::xbits). Otherwise an alert.
    Xbits,
    /// A packet, when a loaded rule has `tag`: after the packet's alerts,
    /// where items meet in input order the tag table decides whether it
    /// is a tagged packet (crate::tags); `packet` holds the frame, `rule`
    /// is unused.
    Tag,
    /// A connection event for the built-in detectors
    /// ([`crate::detectors`]): `src` is the client, `dst`/`dp` the
    /// server; `rule` is unused.
    Conn(crate::detectors::ConnKind),
}

/// [`AppRecord::tx_id`] of a record about a packet, not a transaction
/// (decoder and stream `anomaly` records): no `tx_id` is written.
pub const PACKET_RECORD: u64 = u64::MAX;

/// A transaction's EVE object, as the output writes it.
#[derive(Debug, Clone)]
pub struct AppRecord {
    /// Event type and object key: `http`, `dns` or `tls`.
    pub key: &'static str,
    pub tx_id: u64,
    body: RecordBody,
}

/// An [`AppRecord`]'s object: text (the busiest protocols' transaction
/// objects are written as text on the worker, [`vigil_applayer::jsonw`]),
/// or what the output thread writes: the other protocols' trees
/// ([`vigil_applayer::EveObject::Tree`]), a flow summary.
#[derive(Debug, Clone)]
enum RecordBody {
    Text(String),
    Tree(vigil_applayer::EveObject),
    /// A `flow` record (`None`) or one direction's `netflow` record.
    Flow(Box<FlowSummary>, Option<usize>),
}

impl AppRecord {
    /// A record whose object is already serialised.
    pub fn new(key: &'static str, tx_id: u64, json: String) -> Self {
        AppRecord {
            key,
            tx_id,
            body: RecordBody::Text(json),
        }
    }

    /// The object, serialised JSON, followed by `,"key":{...}` for each
    /// object logged beside it (SMTP's `email`).
    pub fn json(&self) -> std::borrow::Cow<'_, str> {
        match &self.body {
            RecordBody::Text(s) => std::borrow::Cow::Borrowed(s),
            RecordBody::Tree(t) => std::borrow::Cow::Owned(t.text()),
            RecordBody::Flow(sum, dir) => std::borrow::Cow::Owned(sum.json(*dir)),
        }
    }
}

/// A frame an alert matched on: what the EVE `frame` object shows.
#[derive(Debug, Clone)]
pub struct FrameOut {
    /// The frame type within its protocol (`pdu`, `nbss.hdr` ...).
    pub name: &'static str,
    pub id: u64,
    pub to_server: bool,
    /// Stream offset (TCP).
    pub stream_offset: Option<u64>,
    pub length: u64,
    pub complete: bool,
    pub tx_id: Option<u64>,
    /// Its first bytes (at most 256, what EVE logs).
    pub data: Box<[u8]>,
}

impl AlertOut {
    /// Suricata's `pkt_src` for the alert's packet.
    pub fn pkt_src(&self) -> &'static str {
        if self.pseudo {
            "stream (flow timeout)"
        } else if self.rebuilt {
            "defrag"
        } else if let Some(t) = &self.tunnel {
            t.kind.pkt_src()
        } else {
            "wire/pcap"
        }
    }
}

/// Counters a worker keeps; summed over workers at the end.
#[derive(Debug, Default, Clone)]
pub struct WorkerStats {
    pub pkts: u64,
    pub bytes: u64,
    pub invalid: u64,
    pub ipv4: u64,
    pub ipv6: u64,
    pub tcp: u64,
    pub udp: u64,
    pub icmpv4: u64,
    pub icmpv6: u64,
    pub sctp: u64,
    pub igmp: u64,
    pub other_ip: u64,
    pub fragments: u64,
    pub vlan: u64,
    pub events: BTreeMap<&'static str, u64>,
    pub stream_events: BTreeMap<&'static str, u64>,
    /// Flows by detected application protocol (`failed` included).
    pub app_flows: BTreeMap<&'static str, u64>,
    /// The UDP flows among `app_flows` (Suricata's stats name a protocol
    /// it parses on both transports `dns_tcp` / `dns_udp`).
    pub app_flows_udp: BTreeMap<&'static str, u64>,
    /// App-layer events raised by the parsers (limits, anomalies).
    pub app_events: u64,
    /// Stream gaps the parsers were told about.
    pub app_gaps: u64,
    /// Bytes given to the parsers.
    pub app_bytes: u64,
    /// Transactions inspected by tx rules (inspections, not distinct).
    pub tx_inspections: u64,
    /// Transaction records written.
    pub tx_logged: u64,
    /// `anomaly` records written (app-layer parser events).
    pub anomalies_logged: u64,
    /// TLS flows whose payload inspection stopped after the handshake.
    pub tls_encrypted_flows: u64,
    pub flows_created: u64,
    pub flows_timed_out: u64,
    pub flows_evicted: u64,
    pub flows_active_at_end: u64,
    pub flows_peak: u64,
    pub alerts: u64,
    pub passed_flows: u64,
    /// Flows bypassed by a rule's `bypass` keyword.
    pub bypassed_flows: u64,
    pub prefilter_hits: u64,
    pub rules_checked: u64,
    /// Datagrams rebuilt from fragments that this worker inspected.
    pub rebuilt: u64,
    /// Tunnel packets (each packet inside a tunnel) inspected.
    pub tunnel_pkts: u64,
    /// TCP sessions opened (SYN seen) and picked up midstream.
    pub tcp_sessions: u64,
    pub tcp_reuse: u64,
    /// Elephant flows (`flow.rate-tracking`): flows that became one in
    /// either direction, and directions that became one.
    pub flow_elephant: u64,
    pub flow_elephant_toserver: u64,
    pub flow_elephant_toclient: u64,
    /// Raw stream chunks inspected (pseudo packets included).
    pub stream_chunks: u64,
    pub stream_chunk_bytes: u64,
    pub pseudo_packets: u64,
    /// Payload bytes not reassembled: beyond the depth, or memory cap.
    pub stream_depth_dropped: u64,
    pub stream_memcap_dropped: u64,
    pub stream_overlaps: u64,
    /// Largest stream memory in use (bytes; summed over workers it is an
    /// upper bound of the total).
    pub stream_mem_peak: u64,
    /// TCP packets kept from the stream engine for a wrong checksum.
    pub tcp_invalid_checksum: u64,
    /// Workers that turned checksum validation off (`-k auto`).
    pub checksum_auto_off: u64,
    /// Inline: packets dropped by a `drop` rule, by a `reject` rule, and
    /// because their flow was dropped before (the flow verdict table).
    pub ips_drop_rule: u64,
    pub ips_reject: u64,
    pub ips_drop_flow: u64,
    /// Inline: packets dropped by the host table, hosts blocked, and
    /// blocks that took another blocked host's slot.
    pub ips_drop_host: u64,
    pub ips_hosts_blocked: u64,
    pub ips_host_evictions: u64,
    /// Inline: packets accepted.
    pub ips_accepted: u64,
    /// Inline: accepted packets rewritten by `replace` rules.
    pub ips_replaced: u64,
    /// Inline: accepted packets given a new mark by `nfq_set_mark` rules.
    pub ips_marked: u64,
    /// Inline: packets rejected by an exception policy (`reject`).
    pub ips_exception_rejects: u64,
    /// Inline: packets dropped by an exception policy, by drop reason
    /// (`stream_midstream` ...).
    pub ips_drop_exception: BTreeMap<&'static str, u64>,
    /// Exception policies applied, by case and policy
    /// (`("tcp.midstream", "drop_flow")` ...).
    pub exceptions: BTreeMap<(&'static str, &'static str), u64>,
    /// Per-rule costs (`--profile-rules`), summed over workers.
    pub rule_profile: Option<Box<RuleProfile>>,
}

impl WorkerStats {
    pub fn add(&mut self, o: &WorkerStats) {
        macro_rules! sum {
            ($($f:ident),*) => { $( self.$f += o.$f; )* };
        }
        sum!(
            pkts,
            bytes,
            invalid,
            ipv4,
            ipv6,
            tcp,
            udp,
            icmpv4,
            icmpv6,
            sctp,
            igmp,
            other_ip,
            fragments,
            vlan,
            flows_created,
            flows_timed_out,
            flows_evicted,
            flows_active_at_end,
            flows_peak,
            alerts,
            passed_flows,
            bypassed_flows,
            prefilter_hits,
            rules_checked,
            rebuilt,
            tunnel_pkts,
            tcp_sessions,
            tcp_reuse,
            flow_elephant,
            flow_elephant_toserver,
            flow_elephant_toclient,
            stream_chunks,
            stream_chunk_bytes,
            pseudo_packets,
            stream_depth_dropped,
            stream_memcap_dropped,
            stream_overlaps,
            stream_mem_peak,
            tcp_invalid_checksum,
            checksum_auto_off,
            ips_drop_rule,
            ips_reject,
            ips_drop_flow,
            ips_drop_host,
            ips_hosts_blocked,
            ips_host_evictions,
            ips_accepted,
            ips_replaced,
            ips_marked,
            ips_exception_rejects
        );
        for (k, v) in &o.ips_drop_exception {
            *self.ips_drop_exception.entry(k).or_default() += v;
        }
        if let Some(p) = &o.rule_profile {
            match &mut self.rule_profile {
                Some(mine) => mine.add(p),
                None => self.rule_profile = Some(p.clone()),
            }
        }
        for (k, v) in &o.exceptions {
            *self.exceptions.entry(*k).or_default() += v;
        }
        for (k, v) in &o.events {
            *self.events.entry(k).or_default() += v;
        }
        for (k, v) in &o.stream_events {
            *self.stream_events.entry(k).or_default() += v;
        }
        for (k, v) in &o.app_flows {
            *self.app_flows.entry(k).or_default() += v;
        }
        for (k, v) in &o.app_flows_udp {
            *self.app_flows_udp.entry(k).or_default() += v;
        }
        self.app_events += o.app_events;
        self.app_gaps += o.app_gaps;
        self.app_bytes += o.app_bytes;
        self.tx_inspections += o.tx_inspections;
        self.tx_logged += o.tx_logged;
        self.anomalies_logged += o.anomalies_logged;
        self.tls_encrypted_flows += o.tls_encrypted_flows;
    }
}

/// Settings a worker needs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub max_flows: usize,
    pub log_payload: bool,
    pub log_packet: bool,
    pub stream: StreamConfig,
    /// Stream reassembly memory of this worker, bytes.
    pub stream_memcap: usize,
    /// Largest stream payload logged with an alert (Suricata's
    /// `payload-buffer-size`).
    pub payload_max: usize,
    /// App-layer parsing (protocol detection, HTTP/DNS/TLS parsers and
    /// the rules on their transactions); `None` turns it off.
    pub app: Option<AppLayerConfig>,
    /// Write a record per app-layer transaction (`http`, `dns`, `tls`
    /// events).
    pub log_tx: bool,
    /// See [`crate::EngineConfig::log_tx_types`].
    pub log_tx_types: Option<Vec<&'static str>>,
    /// Write `flow` / `netflow` records when flows end.
    pub flow_log: FlowLog,
    /// Write an `anomaly` record per app-layer parser event of each
    /// finished transaction.
    pub log_anomaly: bool,
    /// Write an `anomaly` record per decoder event of a packet.
    pub log_anomaly_decode: bool,
    /// Write an `anomaly` record per stream event of a packet.
    pub log_anomaly_stream: bool,
    /// `fileinfo` records.
    pub log_files: bool,
    /// File-store v2 folder.
    pub file_store: Option<std::path::PathBuf>,
    /// Put the transaction's object in alerts that matched on one.
    pub alert_app: bool,
    /// Log the flow's and packet's variables with alerts (eve-log
    /// `metadata`).
    pub log_vars: bool,
    /// Stop payload inspection and reassembly of a TLS flow once both
    /// sides are encrypted (Suricata's `encryption-handling: default`);
    /// false inspects encrypted data too (`full`).
    pub tls_stop_after_handshake: bool,
    /// With `tls_stop_after_handshake`: bypass the flow once encrypted
    /// (`encryption-handling: bypass`): no more inspection, parsing or
    /// logging; inline, its packets are accepted.
    pub tls_bypass: bool,
    /// Bypass a TCP flow once a direction reaches the reassembly depth
    /// (Suricata's `stream.bypass`).
    pub stream_bypass: bool,
    /// XFF: the request header naming the original client (lower case)
    /// and whether the last address of its list is used (`reverse`
    /// deployment) rather than the first (`forward`).
    pub xff: Option<(String, bool)>,
    /// Flow idle timeouts (`flow-timeouts`).
    pub timeouts: TimeoutTable,
    /// TCP checksum validation (Suricata's `-k`).
    pub checksum: ChecksumMode,
    /// Inline (IPS): `drop` and `reject` rules drop the packet and its
    /// flow, and each packet gets a [`Verdict`]; otherwise they alert
    /// only (`"action":"allowed"`).
    pub inline: bool,
    /// Inline: the host table shared by all workers (`ips.block-hosts`).
    pub hosts: Option<Arc<crate::hosts::HostTable>>,
    /// Inline: the `rate_filter` state of all workers (one table).
    pub rate_filters: Option<Arc<std::sync::Mutex<vigil_detect::ThresholdTracker>>>,
    /// Inline: write a `drop` record for dropped packets.
    pub drop_log: Option<DropLog>,
    /// What to do when Vigil would lose sight of a packet or flow.
    pub exceptions: ExceptionPolicies,
    /// Time and count every rule check (`--profile-rules`).
    pub profile_rules: bool,
    /// Raise connection events for the built-in detectors
    /// ([`OutKind::Conn`]).
    pub conn_events: bool,
    /// `flow.rate-tracking`: elephant-flow detection.
    pub rate_tracking: Option<vigil_flow::RateConfig>,
}

/// Suricata's checksum modes (`-k`). With validation on, a TCP packet
/// whose checksum is wrong is not given to the stream engine (its payload
/// is not reassembled, it does not move the session) and is counted in
/// `tcp.invalid_checksum`; it is still inspected as a packet. That keeps a
/// sensor in step with the end host, which drops such packets (an
/// attacker cannot slip data past it that the host never accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChecksumMode {
    /// No validation (capture files often hold offloaded, unfilled
    /// checksums).
    #[default]
    None,
    /// Validate every TCP packet.
    All,
    /// Validate, unless more than 10% of the first 1000 TCP packets with
    /// a checksum fail: then the traffic is taken to have offloaded
    /// checksums and validation is turned off (per worker).
    Auto,
}

impl ChecksumMode {
    pub fn from_name(s: &str) -> Option<ChecksumMode> {
        match s {
            "none" | "no" => Some(ChecksumMode::None),
            "all" | "yes" => Some(ChecksumMode::All),
            "auto" => Some(ChecksumMode::Auto),
            _ => None,
        }
    }
}

/// [`ChecksumMode::Auto`]: packets looked at, and the failure share (per
/// ten) above which validation is turned off.
const CHECKSUM_AUTO_SAMPLE: u64 = 1000;
const CHECKSUM_AUTO_TENTHS: u64 = 1;

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            rate_tracking: None,
            max_flows: 1 << 16,
            log_payload: false,
            log_packet: false,
            stream: StreamConfig::default(),
            stream_memcap: 64 << 20,
            payload_max: 4096,
            app: Some(AppLayerConfig::default()),
            log_tx: true,
            log_tx_types: None,
            flow_log: FlowLog::default(),
            log_anomaly: false,
            log_anomaly_decode: false,
            log_anomaly_stream: false,
            log_files: false,
            file_store: None,
            alert_app: true,
            log_vars: true,
            tls_stop_after_handshake: true,
            tls_bypass: false,
            stream_bypass: false,
            xff: None,
            timeouts: TimeoutTable::default(),
            checksum: ChecksumMode::None,
            inline: false,
            hosts: None,
            drop_log: None,
            exceptions: ExceptionPolicies::default(),
            profile_rules: false,
            conn_events: false,
            rate_filters: None,
        }
    }
}

/// Everything of a worker except its flow table, so that a flow borrowed
/// from the table can be worked on with it.
struct Ctx {
    detect: Arc<DetectEngine>,
    scratch: DetectScratch,
    cfg: WorkerConfig,
    stats: WorkerStats,
    mem: StreamMemory,
    ins: InsertScratch,
    chunk: StreamChunk,
    /// Inline: the reach-back part of the current window, and the stream
    /// matches found in it alone.
    old_chunk: StreamChunk,
    old_hits: Vec<Hit>,
    stream_cands: Vec<u32>,
    merged: Vec<u32>,
    hits: Vec<Hit>,
    /// The stream events of the packet being inspected, for its anomaly
    /// records (taken by [`Worker::emit`]).
    pkt_stream_events: vigil_stream::StreamEvents,
    pseudo_buf: Vec<u8>,
    app_buf: Vec<u8>,
    ended: Vec<Flow<FlowState>>,
    /// Flows by the second their idle timeout expires (packet time).
    deadlines: BTreeMap<(i64, u64), u32>,
    clock_timeouts: u64,
    /// Checksum validation on now, and (auto) packets judged / failed.
    checksum_on: bool,
    checksum_seen: u64,
    checksum_bad: u64,
    /// Inline: the verdict of the packet being inspected.
    verdict: Verdict,
    /// Inline: a host a drop of this packet blocks (host table).
    block_host: Option<IpAddr>,
    /// An exception policy decided this packet's drop (or reject).
    exception_drop: Option<ExceptionCase>,
    /// The `pass-packet` exception policy: no detection on this packet.
    skip_detect: bool,
    /// The current packet's payload is scanned (its flow's payload is
    /// still inspected and the flow was not dropped inline).
    scan_payload: bool,
    /// The rule whose drop decided this packet's verdict.
    drop_rule: Option<u32>,
    /// `drop` records with `flows: start`: this packet's direction of its
    /// flow had one already.
    drop_logged: bool,
    /// The dropped packet's flow id and direction.
    drop_flow: Option<(u64, bool)>,
    /// A loaded rule has `tag`: packets that a tag may cover go to the
    /// tag table (see [`Ctx::tag_flows`]).
    tagging: bool,
    /// A loaded rule has `tag:host`: a host tag may cover any packet, so
    /// every packet goes to the tag table.
    tag_hosts: bool,
    /// The flows a rule with `tag` has matched on (before thresholds, so a
    /// superset of the flows the merge tags): only their packets can be
    /// covered by a session tag, so only theirs go to the tag table when
    /// no rule has `tag:host`. Removed when the flow ends.
    tag_flows: HashSet<u64>,
    /// The current packet's flow id (for its [`OutKind::Tag`] item).
    pkt_flow: Option<u64>,
    /// Inline: `replace` edits of the current packet (payload offset,
    /// bytes), in the order they are applied.
    edits: Vec<(usize, Box<[u8]>)>,
    /// Inline: the `nfq_set_mark` change of the current packet.
    mark: Option<MarkChange>,
}

pub struct Worker {
    flows: FlowTable<FlowState>,
    ctx: Ctx,
    /// Inline: each record's verdict in the last batch.
    verdicts: Vec<Verdict>,
    /// Inline: the records of the last batch that `replace` rewrote
    /// (record index, the packet as it goes on).
    changed: Vec<(usize, Box<[u8]>)>,
    /// Inline: the records of the last batch that `nfq_set_mark` rules
    /// mark (record index, the change), in record order.
    marks: Vec<(usize, MarkChange)>,
    // Reused per batch.
    candidates: Vec<u32>,
    spans: Vec<(u32, u32)>,
    sels: Vec<Option<GroupSel>>,
}

/// What the packet being inspected is.
#[derive(Clone, Copy)]
struct PktCtx<'r> {
    rec: &'r PacketRecord,
    /// The FTP data connection this packet opens (the reader's
    /// expectation table).
    ftp_data: Option<&'r vigil_applayer::ftpdata::FtpDataInfo>,
    order: AlertOrder,
    sel: Option<GroupSel>,
}

/// A span of pass 1 that was left to pass 2 (see [`Worker::process`]).
const DEFERRED: (u32, u32) = (u32::MAX, u32::MAX);

impl Worker {
    pub fn new(detect: Arc<DetectEngine>, cfg: WorkerConfig) -> Self {
        let checksum_on = cfg.checksum != ChecksumMode::None;
        let (tagging, tag_hosts) = tag_modes(&detect);
        let mut scratch = DetectScratch::default();
        if cfg.profile_rules {
            scratch.profile = Some(Box::new(RuleProfile::new(detect.rules.len())));
        }
        Worker {
            flows: FlowTable::new(cfg.max_flows).with_timeouts(cfg.timeouts),
            ctx: Ctx {
                detect,
                scratch,
                mem: StreamMemory::new(cfg.stream_memcap),
                cfg,
                stats: WorkerStats::default(),
                ins: InsertScratch::default(),
                chunk: StreamChunk::default(),
                old_chunk: StreamChunk::default(),
                old_hits: Vec::new(),
                stream_cands: Vec::new(),
                merged: Vec::new(),
                hits: Vec::new(),
                pkt_stream_events: vigil_stream::StreamEvents::new(),
                pseudo_buf: Vec::new(),
                app_buf: Vec::new(),
                ended: Vec::new(),
                deadlines: BTreeMap::new(),
                clock_timeouts: 0,
                checksum_on,
                checksum_seen: 0,
                checksum_bad: 0,
                verdict: Verdict::Accept,
                block_host: None,
                exception_drop: None,
                skip_detect: false,
                scan_payload: true,
                drop_rule: None,
                drop_logged: false,
                drop_flow: None,
                tagging,
                tag_hosts,
                tag_flows: HashSet::new(),
                pkt_flow: None,
                edits: Vec::new(),
                mark: None,
            },
            candidates: Vec::new(),
            spans: Vec::new(),
            sels: Vec::new(),
            verdicts: Vec::new(),
            changed: Vec::new(),
            marks: Vec::new(),
        }
    }

    /// Inline: the records of the last batch that `nfq_set_mark` rules
    /// mark, with the mark change (accepted packets only; the verdict
    /// carries the new mark).
    pub fn marks(&self) -> &[(usize, MarkChange)] {
        &self.marks
    }

    /// Inline: the records of the last batch that `replace` rules
    /// rewrote, with the rewritten packet (checksums recomputed); the
    /// verdict gives the packet back changed.
    pub fn changed(&self) -> &[(usize, Box<[u8]>)] {
        &self.changed
    }

    /// Inline: the verdict of each record of the last batch processed
    /// (markers: `Accept`).
    pub fn verdicts(&self) -> &[Verdict] {
        &self.verdicts
    }

    /// Stream memory in use now (bytes).
    pub fn stream_memory(&self) -> usize {
        self.ctx.mem.used()
    }

    /// Processes one batch, appending alerts in output order.
    pub fn process(&mut self, batch: &Batch, alerts: &mut Vec<AlertOut>) {
        let mut packets: Vec<Packet<'_>> = batch.records.iter().map(|r| batch.packet(r)).collect();
        // Pass 1 (stateless): the rule groups of every packet. On the CPU
        // the prefilter runs in pass 2, when the packet's flow is known:
        // a flow whose payload is no longer inspected (TLS after the
        // handshake) or that was dropped is not scanned at all, as in
        // Suricata (the device path scans the whole batch in pass 1).
        self.candidates.clear();
        self.spans.clear();
        self.sels.clear();
        for p in &packets {
            self.sels.push(self.ctx.detect.select_groups(p));
            self.spans.push(DEFERRED);
        }
        self.pass2(batch, &mut packets, alerts);
    }

    /// The packet's candidates: pass 1's (`span`), or, when pass 1 left
    /// them to pass 2 ([`DEFERRED`]), the prefilter run now over the
    /// payload with `sets` (split groups scan a flow's packets once the
    /// flow was looked at: [`Ctx::merge_late_candidates`]); with `scan`
    /// false only the rules without a prefilter pattern (every prefiltered
    /// rule has a packet payload pattern, and none of those can match when
    /// the payload is not inspected).
    fn packet_candidates(
        &mut self,
        p: &Packet<'_>,
        sel: Option<GroupSel>,
        span: std::ops::Range<usize>,
        scan: bool,
        sets: ScanSets,
    ) -> std::ops::Range<usize> {
        if span.start != DEFERRED.0 as usize {
            return span;
        }
        let start = self.candidates.len();
        if let Some(sel) = sel {
            let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
            let payload = if scan { p.payload() } else { &[] };
            self.ctx.detect.candidates_of(
                sel,
                sets,
                &mut std::iter::once(payload),
                addrs,
                &mut self.ctx.scratch,
                &mut self.candidates,
            );
        }
        start..self.candidates.len()
    }

    /// Pass 2 (in order): flows, streams, verification, per-flow state,
    /// over `packets` (decoded from `batch`) with pass 1's `candidates`,
    /// `spans` and `sels`.
    fn pass2(&mut self, batch: &Batch, packets: &mut [Packet<'_>], alerts: &mut Vec<AlertOut>) {
        self.verdicts.clear();
        self.changed.clear();
        self.marks.clear();
        for (i, p) in packets.iter_mut().enumerate() {
            let rec = &batch.records[i];
            self.ctx.verdict = Verdict::Accept;
            self.ctx.exception_drop = None;
            self.ctx.skip_detect = false;
            self.ctx.drop_rule = None;
            self.ctx.drop_logged = false;
            self.ctx.drop_flow = None;
            self.ctx.pkt_flow = None;
            self.ctx.edits.clear();
            self.ctx.mark = None;
            if rec.marker {
                self.clock(rec, alerts);
                self.verdicts.push(Verdict::Accept);
                continue;
            }
            add_defrag_events(p, rec.defrag);
            self.ctx.count_decode(p, rec);
            let sec = rec.ts_ns.div_euclid(1_000_000_000).max(0) as u64;
            // The host table first: a blocked host's packets go no
            // further.
            let host_blocked = match (&self.ctx.cfg.hosts, &p.ip) {
                (Some(h), Some(ip)) if self.ctx.cfg.inline => {
                    h.is_blocked(ip.src, sec) || h.is_blocked(ip.dst, sec)
                }
                _ => false,
            };
            if rec.defrag & DEFRAG_MEMCAP != 0 {
                self.ctx.exception(ExceptionCase::DefragMemcap, None);
            }
            if host_blocked {
                self.ctx.verdict = Verdict::HostBlocked;
            } else {
                let (s, e) = self.spans[i];
                let pk = PktCtx {
                    rec,
                    ftp_data: batch.ftp_data_of(rec),
                    order: (rec.index, phase(rec), 0),
                    sel: self.sels[i],
                };
                self.inspect(p, pk, s as usize..e as usize, alerts);
            }
            let v = self.ctx.verdict;
            let s = &mut self.ctx.stats;
            match (v, self.ctx.exception_drop) {
                (Verdict::Accept, _) => {
                    if self.ctx.cfg.inline {
                        s.ips_accepted += 1;
                    }
                }
                (Verdict::Exception(c), _) | (Verdict::Reject(_), Some(c)) => {
                    if matches!(v, Verdict::Reject(_)) {
                        s.ips_exception_rejects += 1;
                    }
                    *s.ips_drop_exception.entry(c.drop_reason()).or_default() += 1;
                }
                (Verdict::Drop, _) => s.ips_drop_rule += 1,
                (Verdict::Reject(_), None) => s.ips_reject += 1,
                (Verdict::FlowDropped, _) => s.ips_drop_flow += 1,
                (Verdict::HostBlocked, _) => s.ips_drop_host += 1,
            }
            if v.is_drop() && self.ctx.cfg.drop_log.is_some() && !self.ctx.drop_logged {
                self.ctx.drop_record(p, rec, v, alerts);
            }
            if !self.ctx.edits.is_empty() && !v.is_drop() && !rec.rebuilt && rec.tunnel == 0 {
                if let Some(f) = rewrite(p, &self.ctx.edits) {
                    self.ctx.stats.ips_replaced += 1;
                    self.changed.push((i, f));
                }
            }
            // `nfq_set_mark`: not on tunnelled packets (Suricata: the
            // tunnel may carry other flows); a dropped packet's mark does
            // not matter.
            if let Some(m) = self.ctx.mark {
                if !v.is_drop() && !rec.rebuilt && rec.tunnel == 0 {
                    self.ctx.stats.ips_marked += 1;
                    self.marks.push((i, m));
                }
            }
            if self.ctx.tagging
                && (self.ctx.tag_hosts
                    || self
                        .ctx
                        .pkt_flow
                        .is_some_and(|f| self.ctx.tag_flows.contains(&f)))
            {
                self.ctx.tag_item(p, rec, alerts);
            }
            if let (Some(a), Some(h)) = (self.ctx.block_host.take(), &self.ctx.cfg.hosts) {
                self.ctx.stats.ips_hosts_blocked += 1;
                if h.block(a, sec) {
                    self.ctx.stats.ips_host_evictions += 1;
                }
            }
            self.verdicts.push(v);
        }
        // Flows ended by a packet sort before its own alerts; keep the
        // batch in output order (stable: rule order within a packet).
        alerts.sort_by_key(|a| a.order);
    }

    fn inspect(
        &mut self,
        p: &Packet<'_>,
        pk: PktCtx<'_>,
        cand: std::ops::Range<usize>,
        alerts: &mut Vec<AlertOut>,
    ) {
        let Some(ip) = &p.ip else {
            // No IP layer: only link-layer rules (`ether`, `arp`) apply.
            if !self.ctx.skip_detect && !self.ctx.detect.link_rules.is_empty() {
                self.ctx.inspect_link(p, pk, alerts);
            }
            return;
        };
        if ip.fragment.is_some() && !pk.rec.rebuilt {
            // Fragments get no flow: the datagram they rebuild is
            // inspected with its flow (Suricata does the same).
            if !self.ctx.skip_detect {
                let cand = self.packet_candidates(p, pk.sel, cand, true, ScanSets::All);
                self.ctx
                    .inspect_flowless(p, pk, &self.candidates[cand], alerts);
            }
            return;
        }
        let vlan = if p.vlan_count > 0 {
            p.vlan[p.vlan_count as usize - 1]
        } else {
            0
        };
        let (sp, dp) = (p.src_port(), p.dst_port());
        let (key, src_is_lo) = FlowKey::new(ip.src, sp, ip.dst, dp, ip.proto, vlan);
        let rec = pk.rec;
        let mut slot = self.lookup(key, src_is_lo, p, rec, alerts);
        // A SYN that starts a new connection on a finished session: the
        // old flow ends here and a new one begins with this packet.
        if let L4::Tcp(t) = p.l4 {
            let Some(flow) = self.flows.get_mut(slot) else {
                return;
            };
            let to_server = flow.direction(src_is_lo) == Direction::ToServer;
            if flow.state.tcp.is_reuse(t.flags, t.seq, to_server) {
                if let Some(mut old) = self.flows.remove(slot) {
                    old.state.end = (FlowEnd::TcpReuse, rec.ts_ns);
                    self.ctx.stats.tcp_reuse += 1;
                    self.ctx.ended.push(old);
                    self.ctx.flush_ended((rec.index, 0), alerts);
                }
                slot = self.lookup(key, src_is_lo, p, rec, alerts);
            }
        }
        let Some(flow) = self.flows.get_mut(slot) else {
            return;
        };
        let scan = !(flow.state.no_payload || (self.ctx.cfg.inline && flow.state.dropped));
        self.ctx.scan_payload = scan;
        let cand = self.packet_candidates(p, pk.sel, cand, scan, ScanSets::PacketFirst);
        let Some(flow) = self.flows.get_mut(slot) else {
            return;
        };
        let candidates = &self.candidates[cand];
        self.ctx.pkt_flow = Some(flow.id);
        if self.ctx.cfg.inline && flow.state.dropped {
            // The flow verdict table: a dropped flow's packets are
            // dropped here, before any further inspection.
            self.ctx.verdict = Verdict::FlowDropped;
            flow.last_ns = flow.last_ns.max(rec.ts_ns);
        } else {
            let before = alerts.len();
            self.ctx
                .inspect_flow(p, pk, flow, src_is_lo, candidates, alerts);
            if alerts[before..].iter().any(|a| a.kind == OutKind::Alert) {
                flow.state.alerted = true;
            }
            // A rule's drop drops the flow; an exception policy decided
            // that itself (drop-packet leaves the flow alone).
            if matches!(self.ctx.verdict, Verdict::Drop | Verdict::Reject(_))
                && self.ctx.exception_drop.is_none()
            {
                flow.state.dropped = true;
            }
        }
        if self.ctx.verdict.is_drop() {
            let to_server = flow.direction(src_is_lo) == Direction::ToServer;
            self.ctx.drop_flow = Some((flow.id, to_server));
            if self.ctx.cfg.drop_log.is_some_and(|d| !d.all) {
                // `flows: start`: one drop record per flow direction.
                let d = usize::from(!to_server);
                self.ctx.drop_logged = flow.state.drop_logged[d];
                flow.state.drop_logged[d] = true;
            }
        }
        // Reindex the flow by its new idle deadline (at most once per
        // second of packet time for a busy flow).
        let secs = self
            .ctx
            .cfg
            .timeouts
            .for_proto(flow.key.proto)
            .for_state(flow.lifecycle);
        let due = flow.last_ns.saturating_add(i64::from(secs) * 1_000_000_000);
        let key = (due.div_euclid(1_000_000_000), flow_seq(flow));
        if flow.state.deadline != Some(key) {
            if let Some(old) = flow.state.deadline.replace(key) {
                self.ctx.deadlines.remove(&old);
            }
            self.ctx.deadlines.insert(key, slot);
        }
    }

    /// A clock marker: flows whose idle deadline fell in an earlier second
    /// end here (what is left of their streams is inspected).
    fn clock(&mut self, rec: &PacketRecord, alerts: &mut Vec<AlertOut>) {
        let sec = rec.ts_ns.div_euclid(1_000_000_000);
        while let Some((&(due, first), &slot)) = self.ctx.deadlines.first_key_value() {
            if due >= sec {
                break;
            }
            self.ctx.deadlines.pop_first();
            if self
                .flows
                .get_mut(slot)
                .is_some_and(|f| flow_seq(f) == first)
            {
                if let Some(mut f) = self.flows.remove(slot) {
                    f.state.deadline = None;
                    f.state.end = (FlowEnd::Timeout, rec.ts_ns);
                    self.ctx.clock_timeouts += 1;
                    self.ctx.ended.push(f);
                }
            }
        }
        if !self.ctx.ended.is_empty() {
            self.ctx.flush_ended((rec.index, 0), alerts);
        }
    }

    /// Finds or creates the packet's flow, ending (and inspecting what is
    /// left of) flows that timed out or were evicted on the way.
    fn lookup(
        &mut self,
        key: FlowKey,
        src_is_lo: bool,
        p: &Packet<'_>,
        rec: &PacketRecord,
        alerts: &mut Vec<AlertOut>,
    ) -> u32 {
        let ended = &mut self.ctx.ended;
        let look = self.flows.lookup_or_create(
            key,
            src_is_lo,
            rec.ts_ns,
            rec.index,
            || FlowState {
                vlan: p.vlan,
                vlan_count: p.vlan_count,
                v6: p.ip.as_ref().is_some_and(|i| i.version == 6),
                icmp: ports_and_icmp(p).2,
                depth: rec.tunnel,
                ttl: [(u8::MAX, 0); 2],
                ..FlowState::default()
            },
            |mut f, why: EndReason| {
                let reason = match why {
                    EndReason::Timeout => FlowEnd::Timeout,
                    EndReason::Evicted => FlowEnd::Forced,
                };
                f.state.end = (reason, rec.ts_ns);
                ended.push(f)
            },
        );
        if !self.ctx.ended.is_empty() {
            self.ctx.flush_ended((rec.index, 0), alerts);
        }
        look.slot
    }

    /// Counters so far (the flow figures from the table now), without
    /// ending anything: live runs publish these every second.
    pub fn snapshot(&self) -> WorkerStats {
        let mut s = self.ctx.stats.clone();
        self.fill_counters(&mut s, &self.flows.counters());
        s
    }

    /// The figures kept outside `WorkerStats` (flow table, detection
    /// scratch, stream memory), written into `s`.
    fn fill_counters(&self, s: &mut WorkerStats, c: &vigil_flow::FlowCounters) {
        s.flows_created = c.created;
        s.flows_timed_out = c.timed_out + self.ctx.clock_timeouts;
        s.flows_evicted = c.memcap_evictions;
        s.flows_active_at_end = c.active;
        s.flows_peak = c.peak_active;
        s.prefilter_hits = self.ctx.scratch.prefilter_hits;
        s.rules_checked = self.ctx.scratch.rules_checked;
        s.rule_profile = self.ctx.scratch.profile.clone();
        s.stream_mem_peak = self.ctx.mem.peak() as u64;
    }

    /// The detection engine in use.
    pub fn detect(&self) -> &Arc<DetectEngine> {
        &self.ctx.detect
    }

    /// Swaps in another detection engine (a rule reload) between
    /// batches. Flows, streams and app-layer state are kept; each flow's
    /// flowbits, flowints and flow variables are carried over by name,
    /// in the order they were set (a variable the
    /// new rules do not use is dropped), and the per-transaction record
    /// of which rules fired is cleared, since it names rules of the old
    /// engine: a transaction still open is inspected by the new rules
    /// from its current state.
    pub fn set_detect(&mut self, new: Arc<DetectEngine>) {
        let (bits, ints) = self.ctx.detect.var_maps_to(&new);
        let vars = &new.flowvar_names;
        self.flows.for_each_mut(|f| {
            f.state.detect.remap(&bits, &ints);
            f.state
                .detect
                .retain_flowvars(|n| vars.binary_search_by(|v| v.as_str().cmp(n)).is_ok());
            if let Some(app) = f.state.app.as_mut() {
                for t in app.txd.values_mut() {
                    t.fired.clear();
                }
            }
        });
        // Rule indices change with the ruleset: the profile starts over.
        if self.ctx.scratch.profile.is_some() {
            self.ctx.scratch.profile = Some(Box::new(RuleProfile::new(new.rules.len())));
        }
        (self.ctx.tagging, self.ctx.tag_hosts) = tag_modes(&new);
        self.ctx.detect = new;
    }

    /// End of input: every flow ends (what is left of its streams is
    /// inspected). Returns the final counters and the last alerts.
    pub fn finish(mut self) -> (WorkerStats, Vec<AlertOut>) {
        // Counted before the flows end: `active` is what was left.
        let c = self.flows.counters();
        let flows = self.flows.drain();
        let mut alerts = Vec::new();
        self.ctx.ended.extend(flows.into_iter().map(|mut f| {
            f.state.end = (FlowEnd::Shutdown, f.last_ns);
            f
        }));
        self.ctx.flush_ended((u64::MAX, 0), &mut alerts);
        let mut s = std::mem::take(&mut self.ctx.stats);
        self.fill_counters(&mut s, &c);
        (s, alerts)
    }
}

/// How an alert is placed and labelled.
#[derive(Clone, Copy)]
struct Emit {
    index: u64,
    order: AlertOrder,
    ts_ns: i64,
    linktype: u32,
    flow_id: Option<u64>,
    to_server: Option<bool>,
    pseudo: bool,
    rebuilt: bool,
}

impl Ctx {
    /// Appends the packet's [`OutKind::Tag`] item (after its alerts).
    fn tag_item(&mut self, p: &Packet<'_>, rec: &PacketRecord, alerts: &mut Vec<AlertOut>) {
        let Some(ip) = &p.ip else { return };
        let (sp, dp, icmp) = ports_and_icmp(p);
        alerts.push(AlertOut {
            index: rec.index,
            order: (rec.index, phase(rec), 0),
            ts_ns: rec.ts_ns,
            flow_id: self.pkt_flow,
            src: ip.src,
            dst: ip.dst,
            sp,
            dp,
            proto: ip.proto,
            icmp,
            sctp: sctp_of(p),
            igmp: igmp_of(p),
            vlan: p.vlan,
            vlan_count: p.vlan_count,
            to_server: None,
            rule: u32::MAX,
            linktype: rec.linktype,
            stream: false,
            pseudo: false,
            rebuilt: rec.rebuilt,
            payload: None,
            packet: Some(p.data.into()),
            app_proto: None,
            app: None,
            kind: OutKind::Tag,
            blocked: false,
            xff: None,
            tunnel: tunnel_of(p),
            link_only: false,
            vars: None,
            context: Box::default(),
            datasets: None,
            line: None,
            frame: None,
        });
    }

    /// Appends the `drop` record of a dropped packet.
    fn drop_record(
        &mut self,
        p: &Packet<'_>,
        rec: &PacketRecord,
        v: Verdict,
        alerts: &mut Vec<AlertOut>,
    ) {
        let Some(ip) = &p.ip else { return };
        let reason = v.drop_reason().unwrap_or("rules");
        let (sp, dp, icmp) = ports_and_icmp(p);
        alerts.push(AlertOut {
            frame: None,
            index: rec.index,
            order: (rec.index, phase(rec), 0),
            ts_ns: rec.ts_ns,
            flow_id: self.drop_flow.map(|f| f.0),
            src: ip.src,
            dst: ip.dst,
            sp,
            dp,
            proto: ip.proto,
            icmp,
            sctp: sctp_of(p),
            igmp: igmp_of(p),
            vlan: p.vlan,
            vlan_count: p.vlan_count,
            to_server: self.drop_flow.map(|f| f.1),
            rule: self.drop_rule.unwrap_or(u32::MAX),
            linktype: rec.linktype,
            stream: false,
            pseudo: false,
            rebuilt: rec.rebuilt,
            payload: None,
            packet: None,
            app_proto: None,
            app: Some(Box::new(AppRecord::new("drop", 0, drop_json(p, reason)))),
            kind: OutKind::Drop,
            blocked: true,
            xff: None,
            tunnel: tunnel_of(p),
            link_only: false,
            vars: None,
            context: Box::default(),
            datasets: None,
            line: None,
        });
    }

    /// Applies the exception policy of `case` to the packet being
    /// inspected and, for a flow policy, to `flow`; counted by case and
    /// policy. Any policy but `ignore` ends detection on the packet.
    fn exception(&mut self, case: ExceptionCase, flow: Option<&mut FlowState>) {
        let pol = self.cfg.exceptions.get(case);
        if pol == ExceptionPolicy::Ignore {
            return;
        }
        *self
            .stats
            .exceptions
            .entry((case.counter(), pol.counter()))
            .or_default() += 1;
        match pol {
            ExceptionPolicy::DropPacket | ExceptionPolicy::DropFlow if !self.verdict.is_drop() => {
                self.verdict = Verdict::Exception(case);
            }
            ExceptionPolicy::Reject if !self.verdict.is_drop() => {
                self.verdict = Verdict::Reject(RejectTo::Src);
                self.exception_drop = Some(case);
            }
            // Pass policies act below (a flow) or by skipping detection.
            _ => {}
        }
        if let Some(f) = flow {
            match pol {
                ExceptionPolicy::DropFlow | ExceptionPolicy::Reject => f.dropped = true,
                ExceptionPolicy::Bypass => {
                    f.detect.passed = true;
                    self.stats.passed_flows += 1;
                    f.tcp.disable_reassembly(&mut self.mem);
                }
                ExceptionPolicy::PassFlow => f.no_detect = true,
                _ => {}
            }
        }
        self.skip_detect = true;
    }

    /// Validation is on and the packet's TCP checksum is wrong.
    fn checksum_bad(&mut self, p: &Packet<'_>) -> bool {
        if !self.checksum_on {
            return false;
        }
        let Some(ok) = p.transport_checksum_ok() else {
            return false;
        };
        if self.cfg.checksum == ChecksumMode::Auto && self.checksum_seen < CHECKSUM_AUTO_SAMPLE {
            self.checksum_seen += 1;
            self.checksum_bad += u64::from(!ok);
            if self.checksum_seen == CHECKSUM_AUTO_SAMPLE
                && self.checksum_bad * 10 > CHECKSUM_AUTO_SAMPLE * CHECKSUM_AUTO_TENTHS
            {
                self.checksum_on = false;
                self.stats.checksum_auto_off = 1;
                eprintln!(
                    "vigil: {} of the first {CHECKSUM_AUTO_SAMPLE} TCP packets of a worker had \
                     invalid checksums (offloaded?): checksum validation off there (-k auto)",
                    self.checksum_bad
                );
            }
        }
        !ok
    }

    fn count_decode(&mut self, p: &Packet<'_>, rec: &PacketRecord) {
        let s = &mut self.stats;
        if rec.rebuilt {
            // Not a packet from the wire: counted apart.
            s.rebuilt += 1;
            return;
        }
        if rec.tunnel > 0 {
            // A tunnel packet: its frame was counted; its layers count as
            // Suricata's decoder counts them.
            s.tunnel_pkts += 1;
        } else {
            s.pkts += 1;
            // Captured bytes, as Suricata's decoder.bytes (a record's
            // original length can be anything: one of dev-mix's claims 4 GB).
            s.bytes += rec.len as u64;
            if p.vlan_count > 0 {
                s.vlan += 1;
            }
        }
        match &p.ip {
            Some(ip) if ip.version == 4 => s.ipv4 += 1,
            Some(_) => s.ipv6 += 1,
            None => s.invalid += u64::from(!p.events.is_empty()),
        }
        if p.ip.as_ref().is_some_and(|i| i.fragment.is_some()) {
            s.fragments += 1;
        }
        match p.l4 {
            L4::Tcp(_) => s.tcp += 1,
            L4::Udp(_) => s.udp += 1,
            L4::Icmpv4(_) => s.icmpv4 += 1,
            L4::Icmpv6(_) => s.icmpv6 += 1,
            L4::Sctp(_) => s.sctp += 1,
            L4::Igmp(_) => s.igmp += 1,
            L4::Other(_) => s.other_ip += 1,
            L4::None => {}
        }
        for e in p.events.iter() {
            *s.events.entry(e.name()).or_default() += 1;
        }
    }

    fn inspect_flowless(
        &mut self,
        p: &Packet<'_>,
        pk: PktCtx<'_>,
        cands: &[u32],
        alerts: &mut Vec<AlertOut>,
    ) {
        self.hits.clear();
        self.scratch.begin_packet();
        let mut input = PacketInput::new(p, None);
        input.rebuilt = pk.rec.rebuilt;
        self.detect
            .verify_hits(input, cands, None, &mut self.scratch, &mut self.hits);
        let e = Emit {
            index: pk.rec.index,
            order: pk.order,
            ts_ns: pk.rec.ts_ns,
            linktype: pk.rec.linktype,
            flow_id: None,
            to_server: None,
            pseudo: false,
            rebuilt: pk.rec.rebuilt,
        };
        self.emit(p, e, false, None, None, alerts);
    }

    /// A packet without an IP layer against the link-layer rules.
    fn inspect_link(&mut self, p: &Packet<'_>, pk: PktCtx<'_>, alerts: &mut Vec<AlertOut>) {
        self.hits.clear();
        self.scratch.begin_packet();
        let input = PacketInput::new(p, None);
        self.detect
            .verify_link(input, &mut self.scratch, &mut self.hits);
        let e = Emit {
            index: pk.rec.index,
            order: pk.order,
            ts_ns: pk.rec.ts_ns,
            linktype: pk.rec.linktype,
            flow_id: None,
            to_server: None,
            pseudo: false,
            rebuilt: false,
        };
        self.emit(p, e, false, None, None, alerts);
    }

    #[allow(clippy::too_many_arguments)]
    fn inspect_flow(
        &mut self,
        p: &Packet<'_>,
        pk: PktCtx<'_>,
        flow: &mut Flow<FlowState>,
        src_is_lo: bool,
        cands: &[u32],
        alerts: &mut Vec<AlertOut>,
    ) {
        let rec = pk.rec;
        let mut to_server = flow.direction(src_is_lo) == Direction::ToServer;
        if let L4::Tcp(t) = p.l4 {
            if flow.state.tcp.starts_reversed(t.flags, to_server) {
                // The SYN's sender is the client: the flow was started by
                // a stray packet of the server.
                flow.initiator_is_lo = !flow.initiator_is_lo;
                std::mem::swap(&mut flow.pkts_toserver, &mut flow.pkts_toclient);
                std::mem::swap(&mut flow.bytes_toserver, &mut flow.bytes_toclient);
                let st = &mut flow.state;
                std::mem::swap(&mut st.seen_to_server, &mut st.seen_to_client);
                st.tcp_flags.swap(0, 1);
                st.ttl.swap(0, 1);
                to_server = true;
            }
        }
        let wire_len = u64::from(p.own_len(rec.orig_len));
        {
            let d = usize::from(!to_server);
            if let L4::Tcp(t) = p.l4 {
                flow.state.tcp_flags[d] |= t.flags;
            }
            if let Some(ip) = &p.ip {
                let (lo, hi) = &mut flow.state.ttl[d];
                *lo = (*lo).min(ip.ttl);
                *hi = (*hi).max(ip.ttl);
            }
        }
        if to_server {
            flow.pkts_toserver += 1;
            flow.bytes_toserver += wire_len;
            flow.state.seen_to_server = true;
        } else {
            flow.pkts_toclient += 1;
            flow.bytes_toclient += wire_len;
            flow.state.seen_to_client = true;
        }
        if let Some(rc) = &self.cfg.rate_tracking {
            let rate = flow
                .state
                .rate
                .get_or_insert_with(|| Box::new(vigil_flow::FlowRate::new(rc)));
            let before = rate.elephant();
            let sec = rec.ts_ns.div_euclid(1_000_000_000);
            if rate.update(rc, sec, wire_len, to_server) {
                if before == [false, false] {
                    self.stats.flow_elephant += 1;
                }
                if to_server {
                    self.stats.flow_elephant_toserver += 1;
                } else {
                    self.stats.flow_elephant_toclient += 1;
                }
            }
        }
        let mut stream_added = false;
        let mut stream_events = vigil_stream::StreamEvents::new();
        let mut chunk_ready = false;
        let mut reach_back = false;
        let mut tcp_sizes = None;
        let (mut exc_midstream, mut exc_memcap) = (false, false);
        let mut depth_bypass = false;
        // A TCP packet the stream engine does not take (bad checksum).
        let unstreamed = matches!(p.l4, L4::Tcp(_)) && self.checksum_bad(p);
        let established = match p.l4 {
            L4::Tcp(_) if unstreamed => {
                // Not for the stream engine (Suricata's
                // tcp.invalid_checksum); still inspected as a packet, but
                // as Suricata does, without the flow's application layer:
                // a TCP packet has an app protocol for detection only once
                // the stream engine has processed it (`PKT_STREAM_EST`),
                // so `alert http` / `alert dcerpc` rules and transaction
                // rules do not match it; protocol-agnostic rules do.
                self.stats.tcp_invalid_checksum += 1;
                flow.state.tcp.flow_established()
            }
            L4::Tcp(t) => {
                let st = &mut flow.state;
                let before = st.tcp.state;
                let est_before = st.tcp.flow_established();
                let seg = Segment {
                    seq: t.seq,
                    ack: t.ack,
                    flags: t.flags,
                    window: t.window,
                    wscale: t.wscale,
                    payload: p.payload(),
                };
                let out = st.tcp.process(
                    &seg,
                    to_server,
                    &self.cfg.stream,
                    &mut self.mem,
                    &mut self.ins,
                );
                let s = &mut self.stats;
                if before == TcpState::None && st.tcp.state != TcpState::None {
                    s.tcp_sessions += 1;
                }
                if self.cfg.conn_events
                    && before == TcpState::None
                    && st.tcp.state == TcpState::SynSent
                {
                    st.conn_attempt = true;
                    if let Some(ip) = &p.ip {
                        alerts.push(conn_event(
                            crate::detectors::ConnKind::Attempt,
                            rec.index,
                            (rec.index, phase(rec), 0),
                            rec.ts_ns,
                            Some(flow.id),
                            (ip.src, Some(p.src_port())),
                            (ip.dst, Some(p.dst_port())),
                            false,
                        ));
                    }
                }
                // A session whose first packet is not a SYN (picked up
                // with stream.midstream, else not tracked): once a flow.
                if before == TcpState::None
                    && t.flags & 0x10 != 0
                    && t.flags & 0x04 == 0
                    && !st.midstream_seen
                {
                    st.midstream_seen = true;
                    exc_midstream = true;
                }
                exc_memcap = out.memcap_dropped > 0;
                depth_bypass = self.cfg.stream_bypass && out.depth_dropped > 0;
                s.stream_depth_dropped += out.depth_dropped;
                s.stream_memcap_dropped += out.memcap_dropped;
                s.stream_overlaps += u64::from(out.overlap);
                for e in out.events.iter() {
                    *s.stream_events.entry(e.name()).or_default() += 1;
                }
                stream_added = out.stream_added;
                stream_events = out.events;
                flow.lifecycle = if st.tcp.is_open() {
                    Lifecycle::Established
                } else if matches!(
                    st.tcp.state,
                    TcpState::LastAck | TcpState::TimeWait | TcpState::Closed
                ) {
                    Lifecycle::Closed
                } else {
                    Lifecycle::New
                };
                if st.tcp.state != TcpState::None {
                    tcp_sizes = Some((st.tcp.client.seq_size(), st.tcp.server.seq_size()));
                }
                if !st.detect.passed {
                    if let Some(w) = st.tcp.raw_window(to_server, &self.cfg.stream, false) {
                        fill_chunk(&mut self.chunk, &st.tcp, to_server, w);
                        chunk_ready = !self.chunk.is_empty();
                        let progress = st.tcp.half(to_server).raw_progress;
                        if self.cfg.stream.inline && w.from < progress {
                            // The window reaches back into data already
                            // inspected: keep that part to tell old
                            // matches from new ones.
                            let old = vigil_stream::RawWindow {
                                from: w.from,
                                to: progress,
                            };
                            fill_chunk(&mut self.old_chunk, &st.tcp, to_server, old);
                            reach_back = !self.old_chunk.is_empty();
                        }
                    }
                }
                // Suricata: established once the session was, judged
                // before this packet (the handshake's last ACK is not).
                est_before
            }
            _ => {
                let both = flow.state.seen_to_server && flow.state.seen_to_client;
                if both {
                    flow.lifecycle = Lifecycle::Established;
                }
                both
            }
        };
        if exc_midstream {
            self.exception(ExceptionCase::Midstream, Some(&mut flow.state));
        }
        if exc_memcap {
            self.exception(ExceptionCase::StreamReassemblyMemcap, Some(&mut flow.state));
        }
        if flow.state.detect.passed || flow.state.dropped {
            // Passed (a pass rule, bypass) or dropped by an exception
            // policy just now: nothing more is looked at.
            return;
        }
        let ts_us = (rec.ts_ns.max(0) / 1000) as u64;
        let was_encrypted = flow.state.no_payload;
        let decided_now = self.app_feed(p, flow, to_server, ts_us, pk.ftp_data);
        let tls_bypass = self.cfg.tls_bypass && !was_encrypted && flow.state.no_payload;
        if !flow.state.app_error_seen
            && flow
                .state
                .app
                .as_ref()
                .and_then(|a| a.state.as_ref())
                .is_some_and(|s| s.errored())
        {
            flow.state.app_error_seen = true;
            self.exception(ExceptionCase::AppLayerError, Some(&mut flow.state));
            if flow.state.detect.passed || flow.state.dropped {
                return;
            }
        }
        let e = Emit {
            index: rec.index,
            order: pk.order,
            ts_ns: rec.ts_ns,
            linktype: rec.linktype,
            flow_id: Some(flow.id),
            to_server: Some(to_server),
            pseudo: false,
            rebuilt: rec.rebuilt,
        };
        if self.skip_detect || flow.state.no_detect {
            // pass-packet / pass-flow: the stream and app layer were
            // updated; no detection. Transactions are still logged and
            // the inspected stream data let go.
            self.scratch.begin_packet();
            self.log_txs(flow, e, false, alerts);
            if chunk_ready {
                self.stream_inspected(&mut flow.state.tcp, to_server);
            }
            return;
        }
        let view = FlowView {
            to_server,
            established,
            pkts_toserver: flow.pkts_toserver,
            pkts_toclient: flow.pkts_toclient,
            bytes_toserver: flow.bytes_toserver,
            bytes_toclient: flow.bytes_toclient,
            tcp_sizes,
            age_secs: flow_age_secs(flow.first_ns, flow.last_ns),
            app_proto: flow
                .state
                .app
                .as_ref()
                .filter(|_| !unstreamed)
                .map_or(AppProtoState::Unknown, |a| a.proto),
            app_proto_decided_now: decided_now,
            tcp_state: matches!(p.l4, L4::Tcp(_)).then_some(flow.state.tcp.state),
            elephant: flow
                .state
                .rate
                .as_ref()
                .map_or([false; 2], |r| r.elephant()),
        };
        let use_merged =
            self.merge_late_candidates(pk.sel, p, view.app_proto, to_server, chunk_ready, cands);
        let merged = std::mem::take(&mut self.merged);
        let cands = if use_merged { &merged[..] } else { cands };
        self.hits.clear();
        self.scratch.begin_packet();
        let mut input = PacketInput::new(p, Some(view));
        input.no_payload = flow.state.no_payload;
        input.stream = chunk_ready.then_some(&self.chunk);
        input.stream_added = stream_added;
        input.rebuilt = rec.rebuilt;
        input.stream_events = stream_events;
        self.pkt_stream_events = stream_events;
        let mut passed = self.detect.verify_hits(
            input,
            cands,
            Some(&mut flow.state.detect),
            &mut self.scratch,
            &mut self.hits,
        );
        if reach_back && self.hits.iter().any(|h| h.stream) {
            // Inline windows overlap: a stream match that the part
            // already inspected holds on its own was reported then.
            let old_rules: Vec<u32> = self
                .hits
                .iter()
                .filter(|h| h.stream)
                .map(|h| h.rule)
                .collect();
            let mut again = input;
            again.stream = Some(&self.old_chunk);
            again.stream_added = true;
            let mut st = flow.state.detect.clone();
            self.old_hits.clear();
            // The packet's variables are what the first pass stored.
            let kept = (
                self.scratch.captured.pktvars.len(),
                self.scratch.captured.alert_vars.len(),
            );
            self.detect.verify_hits(
                again,
                &old_rules,
                Some(&mut st),
                &mut self.scratch,
                &mut self.old_hits,
            );
            self.scratch.captured.pktvars.truncate(kept.0);
            self.scratch.captured.alert_vars.truncate(kept.1);
            let old = &self.old_hits;
            self.hits
                .retain(|h| !(h.stream && old.iter().any(|o| o.stream && o.rule == h.rule)));
        }
        self.merged = merged;
        if !passed && !unstreamed {
            passed = inspect_txs(
                &self.detect,
                &mut self.stats,
                &mut self.scratch,
                &mut self.hits,
                input,
                &mut flow.state,
                to_server,
                false,
            );
        }
        // Frames: inspected after the packet's own alerts are out.
        let frames_pending = !passed
            && !unstreamed
            && flow
                .state
                .app
                .as_ref()
                .and_then(|a| a.frames.as_ref())
                .is_some_and(|f| f.framers[usize::from(!to_server)].has_done());
        if passed {
            self.stats.passed_flows += 1;
        } else if flow.state.detect.passed {
            // A rule with the `bypass` keyword matched.
            self.stats.bypassed_flows += 1;
            passed = true;
        } else if depth_bypass || tls_bypass {
            // stream.bypass (a direction reached the reassembly depth), or
            // TLS encrypted with `encryption-handling: bypass`: this packet
            // was inspected, the next ones are not.
            flow.state.detect.passed = true;
            self.stats.bypassed_flows += 1;
            passed = true;
        }
        self.emit(
            p,
            e,
            chunk_ready,
            flow.state.app.as_deref(),
            Some(&flow.state.detect),
            alerts,
        );
        if frames_pending && self.inspect_frames(p, view, false, flow, to_server, e, alerts) {
            self.stats.passed_flows += 1;
            passed = true;
        }
        self.log_txs(flow, e, false, alerts);
        if chunk_ready {
            self.stream_inspected(&mut flow.state.tcp, to_server);
        }
        if passed {
            // Nothing more of this flow is inspected: stop keeping data.
            flow.state.tcp.disable_reassembly(&mut self.mem);
        }
    }

    fn stream_inspected(&mut self, tcp: &mut TcpSession, client: bool) {
        if let Some(end) = self.chunk.end() {
            self.stats.stream_chunks += 1;
            self.stats.stream_chunk_bytes +=
                self.chunk.blocks().map(|b| b.len() as u64).sum::<u64>();
            if self.cfg.stream.inline {
                let keep = if client {
                    self.cfg.stream.toserver_chunk
                } else {
                    self.cfg.stream.toclient_chunk
                };
                tcp.raw_inspected_inline(client, end, keep, &mut self.mem);
            } else {
                tcp.raw_inspected(client, end, &mut self.mem);
            }
        }
    }

    /// The packet's candidates plus those found once the flow was looked
    /// at (the flow's application protocol and the packet's direction
    /// known: [`ScanSets::PacketLate`]) and those of the stream chunk,
    /// merged in rule order into `self.merged`; false when there is
    /// nothing to add.
    fn merge_late_candidates(
        &mut self,
        sel: Option<GroupSel>,
        p: &Packet<'_>,
        app: AppProtoState,
        to_server: bool,
        chunk_ready: bool,
        cands: &[u32],
    ) -> bool {
        let Some(sel) = sel else { return false };
        self.stream_cands.clear();
        let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
        if self.scan_payload && !p.payload().is_empty() && self.detect.split_groups() {
            self.detect.candidates_of(
                sel,
                ScanSets::PacketLate { app, to_server },
                &mut std::iter::once(p.payload()),
                addrs,
                &mut self.scratch,
                &mut self.stream_cands,
            );
        }
        if chunk_ready {
            self.detect.candidates_of(
                sel,
                ScanSets::Stream { app, to_server },
                &mut self.chunk.blocks(),
                addrs,
                &mut self.scratch,
                &mut self.stream_cands,
            );
            self.stream_cands.sort_unstable();
            self.stream_cands.dedup();
        }
        if self.stream_cands.is_empty() {
            return false;
        }
        self.merged.clear();
        let (a, b) = (cands, &self.stream_cands[..]);
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let next = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) if x == y => {
                    i += 1;
                    j += 1;
                    x
                }
                (Some(&x), Some(&y)) if x < y => {
                    i += 1;
                    x
                }
                (Some(&x), None) => {
                    i += 1;
                    x
                }
                (_, Some(&y)) => {
                    j += 1;
                    y
                }
                (None, None) => break,
            };
            self.merged.push(next);
        }
        true
    }

    /// Ends the flows in `self.ended`: inspects what is left of their
    /// streams (in order of their first packet) and frees their memory.
    fn flush_ended(&mut self, at: (u64, u8), alerts: &mut Vec<AlertOut>) {
        let mut ended = std::mem::take(&mut self.ended);
        ended.sort_by_key(flow_seq);
        for f in &mut ended {
            if let Some(k) = f.state.deadline.take() {
                self.deadlines.remove(&k);
            }
            let order = (at.0, at.1, flow_seq(f));
            if f.state.conn_attempt && !f.state.tcp.established_ever() {
                let (cli, srv) = endpoints(f);
                alerts.push(conn_event(
                    crate::detectors::ConnKind::Failed,
                    f.first_index,
                    order,
                    f.last_ns,
                    Some(f.id),
                    (cli.0, Some(cli.1)),
                    (srv.0, Some(srv.1)),
                    true,
                ));
            }
            self.flush_flow(f, order, alerts);
            self.tag_flows.remove(&f.id);
            if self.cfg.flow_log.flow || self.cfg.flow_log.netflow {
                flow_records(f, self.cfg.flow_log, order, alerts);
            }
            f.state.tcp.release(&mut self.mem);
        }
        ended.clear();
        self.ended = ended;
    }

    /// Suricata's flow-end pseudo packets: one per direction that still
    /// needs inspection, to-server first, each inspecting all the data
    /// left in its direction, acknowledged or not.
    fn flush_flow(
        &mut self,
        f: &mut Flow<FlowState>,
        order: AlertOrder,
        alerts: &mut Vec<AlertOut>,
    ) {
        if f.state.detect.passed {
            return;
        }
        let ts_us = (f.last_ns.max(0) / 1000) as u64;
        if f.key.proto == 6 {
            if let (Some(app), Some(cfg)) = (f.state.app.as_deref_mut(), self.cfg.app.as_ref()) {
                for client in [true, false] {
                    let o = app.feed_tcp(
                        &mut f.state.tcp,
                        client,
                        u64::MAX,
                        true,
                        ts_us,
                        cfg,
                        &mut self.mem,
                        &mut self.app_buf,
                    );
                    count_feed(&mut self.stats, app, o, false);
                }
            }
        }
        let e = Emit {
            index: f.first_index,
            order,
            ts_ns: f.last_ns,
            linktype: linktype::RAW,
            flow_id: Some(f.id),
            to_server: Some(true),
            pseudo: true,
            rebuilt: false,
        };
        if f.key.proto != 6 {
            self.log_txs(f, e, true, alerts);
            return;
        }
        for client in [true, false] {
            let app_pending = f
                .state
                .app
                .as_ref()
                .is_some_and(|a| a.dirty[usize::from(!client)]);
            if !f.state.tcp.needs_flush(client) && !app_pending {
                continue;
            }
            self.stats.pseudo_packets += 1;
            let mut buf = std::mem::take(&mut self.pseudo_buf);
            build_pseudo(&mut buf, f, client);
            let mut p = decode(linktype::RAW, &buf);
            p.vlan = f.state.vlan;
            p.vlan_count = f.state.vlan_count;
            let mut chunk_ready = false;
            if let Some(w) = f.state.tcp.raw_window(client, &self.cfg.stream, true) {
                fill_chunk(&mut self.chunk, &f.state.tcp, client, w);
                chunk_ready = !self.chunk.is_empty();
            }
            let sel = self.detect.select_groups(&p);
            self.stream_cands.clear();
            let app = f
                .state
                .app
                .as_ref()
                .map_or(AppProtoState::Unknown, |a| a.proto);
            if let Some(sel) = sel {
                let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
                self.detect.candidates_of(
                    sel,
                    ScanSets::Stream {
                        app,
                        to_server: client,
                    },
                    &mut self.chunk.blocks().filter(|_| chunk_ready),
                    addrs,
                    &mut self.scratch,
                    &mut self.stream_cands,
                );
            }
            let tcp = &f.state.tcp;
            let view = FlowView {
                to_server: client,
                established: true,
                pkts_toserver: f.pkts_toserver,
                pkts_toclient: f.pkts_toclient,
                bytes_toserver: f.bytes_toserver,
                bytes_toclient: f.bytes_toclient,
                tcp_sizes: Some((tcp.client.seq_size(), tcp.server.seq_size())),
                age_secs: flow_age_secs(f.first_ns, f.last_ns),
                app_proto: f
                    .state
                    .app
                    .as_ref()
                    .map_or(AppProtoState::Unknown, |a| a.proto),
                app_proto_decided_now: false,
                tcp_state: Some(tcp.state),
                elephant: f.state.rate.as_ref().map_or([false; 2], |r| r.elephant()),
            };
            let mut input = PacketInput::new(&p, Some(view));
            input.pseudo = true;
            input.no_payload = f.state.no_payload;
            input.stream = chunk_ready.then_some(&self.chunk);
            self.hits.clear();
            self.scratch.begin_packet();
            let cands = std::mem::take(&mut self.stream_cands);
            let passed = self.detect.verify_hits(
                input,
                &cands,
                Some(&mut f.state.detect),
                &mut self.scratch,
                &mut self.hits,
            );
            if !passed {
                inspect_txs(
                    &self.detect,
                    &mut self.stats,
                    &mut self.scratch,
                    &mut self.hits,
                    input,
                    &mut f.state,
                    client,
                    true,
                );
            }
            self.stream_cands = cands;
            let e = Emit {
                index: f.first_index,
                order,
                ts_ns: f.last_ns,
                linktype: linktype::RAW,
                flow_id: Some(f.id),
                to_server: Some(client),
                pseudo: true,
                rebuilt: false,
            };
            self.emit(
                &p,
                e,
                chunk_ready,
                f.state.app.as_deref(),
                Some(&f.state.detect),
                alerts,
            );
            self.inspect_frames(&p, view, true, f, client, e, alerts);
            if chunk_ready {
                self.stream_inspected(&mut f.state.tcp, client);
            }
            self.pseudo_buf = buf;
        }
        self.log_txs(f, e, true, alerts);
    }

    /// Inspects the complete frames of direction `to_server` on packet
    /// `p` of that direction (a pseudo packet at flow end), each alert
    /// carrying its frame. True when a `pass` rule matched.
    #[allow(clippy::too_many_arguments)]
    fn inspect_frames(
        &mut self,
        p: &Packet<'_>,
        view: FlowView,
        pseudo: bool,
        flow: &mut Flow<FlowState>,
        to_server: bool,
        e: Emit,
        alerts: &mut Vec<AlertOut>,
    ) -> bool {
        let Some(app) = flow.state.app.as_deref_mut() else {
            return false;
        };
        let frames = app.take_frames(to_server);
        let Some(proto) = app.frame_proto().filter(|_| !frames.is_empty()) else {
            return false;
        };
        let tcp = matches!(p.l4, L4::Tcp(_));
        let saved = std::mem::take(&mut self.hits);
        let mut passed = false;
        for f in frames {
            self.hits.clear();
            let mut input = PacketInput::new(p, Some(view));
            input.pseudo = pseudo;
            passed = self.detect.inspect_frame(
                input,
                proto,
                &f,
                Some(&mut flow.state.detect),
                &mut self.scratch,
                &mut self.hits,
            );
            if self.hits.is_empty() {
                if passed {
                    break;
                }
                continue;
            }
            let n0 = alerts.len();
            self.emit(
                p,
                e,
                false,
                flow.state.app.as_deref(),
                Some(&flow.state.detect),
                alerts,
            );
            let fo = FrameOut {
                name: f.name,
                id: f.id,
                to_server,
                stream_offset: tcp.then_some(f.offset),
                length: f.len,
                complete: f.complete,
                tx_id: f.tx_id,
                data: f.data[..f.data.len().min(256)].into(),
            };
            for a in &mut alerts[n0..] {
                a.frame = Some(Box::new(fo.clone()));
            }
            if passed {
                break;
            }
        }
        self.hits = saved;
        passed
    }

    /// Feeds the app layer with what this packet makes available: for
    /// TCP the data of each direction the peer has acknowledged (the
    /// opposite direction first: this packet's ACK), for UDP the
    /// datagram.
    fn app_feed(
        &mut self,
        p: &Packet<'_>,
        flow: &mut Flow<FlowState>,
        to_server: bool,
        ts_us: u64,
        ftp_data: Option<&vigil_applayer::ftpdata::FtpDataInfo>,
    ) -> bool {
        let Some(cfg) = self.cfg.app.as_ref() else {
            return false;
        };
        let mut decided = false;
        let st = &mut flow.state;
        if st.no_payload {
            return false;
        }
        let server_port = if to_server {
            p.dst_port()
        } else {
            p.src_port()
        };
        match p.l4 {
            L4::Tcp(_) => {
                if st.tcp.state == TcpState::None {
                    return false;
                }
                let app = st.app.get_or_insert_with(|| {
                    st.tcp.app_consumed(true, Some(0), &mut self.mem);
                    st.tcp.app_consumed(false, Some(0), &mut self.mem);
                    let mut a = AppFlow::new(vigil_applayer::Transport::Tcp, server_port);
                    a.want_frames = self.detect.frame_types.clone();
                    Box::new(a)
                });
                if let Some(info) = ftp_data {
                    app.expect_ftp_data(info);
                }
                for client in [!to_server, to_server] {
                    let h = st.tcp.half(client);
                    let to = if self.cfg.stream.inline {
                        // Inline: the parser gets the data as it arrives
                        // (up to the first hole), so that a request's
                        // rules run on the packet that completes it.
                        let from = h.app_progress.unwrap_or(0);
                        match h.buf.ranges_in(from, u64::MAX).next() {
                            Some((s, e)) if s == from => e,
                            _ => from,
                        }
                    } else {
                        h.acked_offset()
                    };
                    let o = app.feed_tcp(
                        &mut st.tcp,
                        client,
                        to,
                        false,
                        ts_us,
                        cfg,
                        &mut self.mem,
                        &mut self.app_buf,
                    );
                    decided |= o.decided;
                    count_feed(&mut self.stats, app, o, false);
                }
                if self.cfg.tls_stop_after_handshake
                    && app
                        .state
                        .as_ref()
                        .and_then(|s| s.as_tls())
                        .is_some_and(|t| t.payload_done())
                {
                    st.no_payload = true;
                    st.tcp.disable_reassembly(&mut self.mem);
                    self.stats.tls_encrypted_flows += 1;
                }
            }
            L4::Udp(_) => {
                let app = st.app.get_or_insert_with(|| {
                    let mut a = AppFlow::new(vigil_applayer::Transport::Udp, server_port);
                    a.set_client_port(if to_server {
                        p.src_port()
                    } else {
                        p.dst_port()
                    });
                    a.want_frames = self.detect.frame_types.clone();
                    Box::new(a)
                });
                let o = app.feed_udp(to_server, p.payload(), ts_us, cfg);
                decided |= o.decided;
                count_feed(&mut self.stats, app, o, true);
            }
            _ => {}
        }
        decided
    }

    /// Writes a record for each transaction that is complete (every one
    /// left at the end of the flow), then drops the transactions that
    /// are done with.
    fn log_txs(&mut self, f: &mut Flow<FlowState>, e: Emit, eof: bool, alerts: &mut Vec<AlertOut>) {
        // Nothing parsed or inspected since the last look: no transaction
        // became loggable (at the flow's end every one is).
        if !f.state.app.as_deref().is_some_and(|a| eof || a.log_due) {
            return;
        }
        let ((cip, cp), (sip, sp)) = endpoints(f);
        let (proto, vlan, vlan_count) = (f.key.proto, f.state.vlan, f.state.vlan_count);
        let Some(app) = f.state.app.as_deref_mut() else {
            return;
        };
        app.log_due = false;
        let Some(state) = app.state.as_mut() else {
            return;
        };
        // Suricata's transaction records carry the variables too
        // (`EveAddCommonOptions`): the flow's, and the packet's when the
        // record is written for a packet (not at the flow's end).
        let mut vars: Option<Option<Arc<AlertVars>>> = None;
        let mut done = Vec::new();
        // Read once: the file records below use the same summaries
        // (marking a transaction logged changes nothing they look at).
        let txs = state.transactions();
        for tx in &txs {
            if tx.logged {
                continue;
            }
            if !(eof || (tx.progress.request_complete && tx.progress.response_complete)) {
                continue;
            }
            state.set_logged(tx.id);
            done.push(tx.id);
        }
        app.tx_count += done.len() as u64;
        let out = |rec: Box<AppRecord>, reply: bool, app_proto, vars| {
            let ((src, sport), (dst, dport)) = if reply {
                ((sip, sp), (cip, cp))
            } else {
                ((cip, cp), (sip, sp))
            };
            AlertOut {
                frame: None,
                index: e.index,
                order: e.order,
                ts_ns: e.ts_ns,
                flow_id: e.flow_id,
                src,
                dst,
                sp: Some(sport),
                dp: Some(dport),
                proto,
                icmp: None,
                sctp: None,
                igmp: None,
                vlan,
                vlan_count,
                to_server: Some(true),
                rule: u32::MAX,
                linktype: e.linktype,
                stream: false,
                pseudo: e.pseudo,
                rebuilt: false,
                payload: None,
                packet: None,
                app_proto,
                app: Some(rec),
                kind: OutKind::TxLog,
                blocked: false,
                xff: None,
                tunnel: None,
                link_only: false,
                vars,
                context: Box::default(),
                datasets: None,
                line: None,
            }
        };
        // One protocol per flow: its records are logged or not.
        let type_logged = tx_type_logged(&self.cfg, app);
        for id in done {
            // The transaction's parser events, as Suricata's anomaly
            // logger writes them (type `applayer`, layer `proto_parser`).
            if self.cfg.log_anomaly {
                if let Some(state) = app.state.as_ref() {
                    for (ev, _) in state.tx_events(id) {
                        // Suricata's key order; the names are plain
                        // identifiers.
                        let json = format!(
                            r#"{{"app_proto":"{}","type":"applayer","event":"{}","layer":"proto_parser"}}"#,
                            ev.proto().name(),
                            ev.anomaly_name()
                        );
                        let rec = Box::new(AppRecord::new("anomaly", id, json));
                        alerts.push(out(rec, false, app.proto_name(), None));
                        self.stats.anomalies_logged += 1;
                    }
                }
            }
            // A config rule (`config: logging disable, type tx, scope tx`)
            // may have kept this transaction out of the log.
            if !self.cfg.log_tx
                || !type_logged
                || app.txd.get(&id).is_some_and(|t| t.no_log)
                || app.state.as_ref().is_some_and(|s| s.tx_log_filtered(id))
            {
                continue;
            }
            let Some(rec) = tx_record(app, id) else {
                continue;
            };
            self.stats.tx_logged += 1;
            // A response that is a transaction of its own (SIP) is
            // logged from its sender, as Suricata does.
            let reply = app.state.as_ref().and_then(|s| s.tx_dir(id))
                == Some(vigil_applayer::Direction::ToClient);
            let vars = vars
                .get_or_insert_with(|| {
                    let pktvars: &[vigil_detect::NamedValue] = if e.pseudo {
                        &[]
                    } else {
                        &self.scratch.captured.pktvars
                    };
                    self.cfg
                        .log_vars
                        .then(|| AlertVars::snapshot(&self.detect, Some(&f.state.detect), pktvars))
                        .flatten()
                })
                .clone();
            alerts.push(out(rec, reply, app.proto_name(), vars));
        }
        // The transactions' files (`fileinfo`, file store), once
        // detection is done with both sides (a `filestore` rule may
        // still fire), as Suricata logs a file after its detection.
        if self.cfg.log_files || self.cfg.file_store.is_some() {
            let ready: Vec<vigil_applayer::TxId> = txs
                .iter()
                .filter(|t| {
                    eof || (t.progress.request_complete
                        && t.progress.response_complete
                        && t.inspected == [true, true])
                })
                .filter(|t| !app.txd.get(&t.id).is_some_and(|d| d.files_logged))
                .map(|t| t.id)
                .collect();
            for id in ready {
                let Some(state) = app.state.as_ref() else {
                    break;
                };
                // The transaction's own record goes into each of its
                // `fileinfo` records: built only for transactions with files.
                let has_files = [
                    vigil_applayer::Direction::ToServer,
                    vigil_applayer::Direction::ToClient,
                ]
                .into_iter()
                .any(|d| !vigil_applayer::files::tx_files(state, id, d).is_empty());
                let rec = if has_files { tx_record(app, id) } else { None };
                let rec_json = rec.as_deref().map(|r| (r.key, r.json()));
                let files = crate::files::file_records(
                    state,
                    id,
                    eof,
                    rec_json.as_ref().map(|(k, j)| (*k, j.as_ref())),
                    &self.detect,
                    app.txd.get(&id),
                    self.cfg.file_store.as_deref(),
                );
                app.txd.entry(id).or_default().files_logged = true;
                if self.cfg.log_files {
                    for f in files {
                        let rec = Box::new(AppRecord::new("fileinfo", id, f.json));
                        alerts.push(out(rec, f.to_client, app.proto_name(), None));
                    }
                }
            }
        }
        app.prune();
    }

    /// `anomaly` records for the packet's decoder events (type
    /// `decode`, Suricata's `decoder.` names) and stream events (type
    /// `stream`), one per event, as Suricata's anomaly logger writes
    /// them; a packet without an IP layer is left out.
    fn log_packet_anomalies(
        &mut self,
        p: &Packet<'_>,
        e: &Emit,
        stream_events: vigil_stream::StreamEvents,
        alerts: &mut Vec<AlertOut>,
    ) {
        let Some(ip) = &p.ip else { return };
        let mut names: Vec<(&str, String)> = Vec::new();
        if self.cfg.log_anomaly_decode {
            names.extend(
                p.events
                    .iter()
                    .map(|ev| ("decode", format!("decoder.{}", ev.name()))),
            );
        }
        if self.cfg.log_anomaly_stream && !e.pseudo {
            names.extend(
                stream_events
                    .iter()
                    .map(|ev| ("stream", ev.name().to_string())),
            );
        }
        if names.is_empty() {
            return;
        }
        let (sp, dp, icmp) = ports_and_icmp(p);
        for (kind, event) in names {
            // Suricata's key order; the names are plain identifiers.
            let json = format!(r#"{{"type":"{kind}","event":"{event}"}}"#);
            alerts.push(AlertOut {
                index: e.index,
                order: e.order,
                ts_ns: e.ts_ns,
                flow_id: e.flow_id,
                src: ip.src,
                dst: ip.dst,
                sp,
                dp,
                proto: ip.proto,
                icmp,
                sctp: sctp_of(p),
                igmp: igmp_of(p),
                vlan: p.vlan,
                vlan_count: p.vlan_count,
                to_server: e.to_server,
                rule: u32::MAX,
                linktype: e.linktype,
                stream: false,
                pseudo: e.pseudo,
                rebuilt: e.rebuilt,
                payload: None,
                packet: None,
                app_proto: None,
                app: Some(Box::new(AppRecord::new("anomaly", PACKET_RECORD, json))),
                kind: OutKind::TxLog,
                blocked: false,
                xff: None,
                tunnel: tunnel_of(p),
                link_only: false,
                vars: None,
                context: Box::default(),
                datasets: None,
                line: None,
                frame: None,
            });
            self.stats.anomalies_logged += 1;
        }
    }

    fn emit(
        &mut self,
        p: &Packet<'_>,
        e: Emit,
        chunk_ready: bool,
        app: Option<&AppFlow>,
        state: Option<&FlowDetectState>,
        alerts: &mut Vec<AlertOut>,
    ) {
        // Suricata logs the variables as they are once the packet's
        // detection is over, the same in each of its alerts.
        let vars = if self.cfg.log_vars && !self.hits.is_empty() {
            AlertVars::snapshot(&self.detect, state, &self.scratch.captured.pktvars)
        } else {
            None
        };
        let stream_events = std::mem::take(&mut self.pkt_stream_events);
        if self.cfg.log_anomaly_decode || self.cfg.log_anomaly_stream {
            self.log_packet_anomalies(p, &e, stream_events, alerts);
        }
        // Most packets match nothing: the rest is their alerts.
        if self.hits.is_empty() {
            return;
        }
        let app_proto = app.and_then(|a| a.proto_name());
        // A link-layer packet (ARP ...) has no addresses: unspecified ones
        // stand in, and the output writes none.
        let unspecified = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
        let (src, dst, proto) = match &p.ip {
            Some(ip) => (ip.src, ip.dst, ip.proto),
            None => (unspecified, unspecified, 0),
        };
        let tunnel = tunnel_of(p);
        let (sp, dp, icmp) = ports_and_icmp(p);
        let mut stream_payload: Option<Box<[u8]>> = None;
        for h in &self.hits {
            let rule = &self.detect.rules[h.rule as usize];
            if let (Some(_), Some(f)) = (&rule.tag, e.flow_id) {
                self.tag_flows.insert(f);
            }
            // A deferred hit is an xbits / dataset event, counted where it
            // is resolved (detect.xbits.events, detect.datasets.events).
            if !h.deferred {
                self.stats.alerts += 1;
            }
            let mut blocked = false;
            // Inline, the verdict is the worker's: a rule whose xbits
            // tests are decided later does not drop (docs/inline.md).
            let decided_here = !h.deferred
                || (!rule.xbits.iter().any(|o| o.is_test())
                    && rule.datasets.is_empty()
                    && !rule.noalert
                    && !rule.suppressed(src, dst));
            if self.cfg.inline && !e.pseudo && decided_here {
                use vigil_rules::Action;
                // A `rate_filter` may change the action inline: its state
                // spans flows, so it is one table for all workers (rules
                // with a rate filter are few, and only their matches take
                // the lock).
                let mut action = rule.action;
                if let (Some(rf), Some(t)) = (&rule.rate_filter, &self.cfg.rate_filters) {
                    let key = vigil_detect::AlertKey {
                        src,
                        dst,
                        flow_id: e.flow_id.unwrap_or(0),
                        ts_ns: e.ts_ns,
                        sp: sp.unwrap_or(0),
                        dp: dp.unwrap_or(0),
                    };
                    if let Some(new) = t
                        .lock()
                        .ok()
                        .and_then(|mut t| t.rate_filter(h.rule, rf, &key))
                    {
                        action = new;
                    }
                }
                let v = match action {
                    Action::Drop => Verdict::Drop,
                    Action::Reject | Action::RejectSrc => Verdict::Reject(RejectTo::Src),
                    Action::RejectDst => Verdict::Reject(RejectTo::Dst),
                    Action::RejectBoth => Verdict::Reject(RejectTo::Both),
                    _ => Verdict::Accept,
                };
                if v.is_drop() {
                    blocked = true;
                    if let Some(ht) = &self.cfg.hosts {
                        if ht.blocks_class(&rule.classtype) {
                            self.block_host = Some(match ht.cfg.track {
                                crate::hosts::BlockTrack::Src => src,
                                crate::hosts::BlockTrack::Dst => dst,
                            });
                        }
                    }
                    // A reject answers; it wins over a plain drop.
                    if !matches!(self.verdict, Verdict::Reject(_)) {
                        self.verdict = v;
                        self.drop_rule = Some(h.rule);
                    }
                }
            }
            // `replace` (IPS mode only, as Suricata): the rule's payload
            // program is run on the packet's own payload (a stream match
            // too: Suricata's replace rules match packets), and the
            // occurrences it finds are rewritten.
            if rule.replace && self.cfg.inline && !e.pseudo && !h.deferred {
                replace_edits(&self.detect, p, h.rule, &mut self.edits);
            }
            // `nfq_set_mark` (post-match; inline only): the matching rules'
            // marks in turn. A zero mask changes nothing (Suricata).
            if let Some((mark, mask)) = rule.nfq_mark {
                if mask != 0 && self.cfg.inline && !e.pseudo && !h.deferred {
                    self.mark = Some(self.mark.unwrap_or_default().then(mark, mask));
                }
            }
            let stream = h.stream && chunk_ready;
            let payload = if !self.cfg.log_payload {
                None
            } else if stream {
                Some(
                    stream_payload
                        .get_or_insert_with(|| self.chunk.render(self.cfg.payload_max).into())
                        .clone(),
                )
            } else {
                Some(p.payload().into())
            };
            alerts.push(AlertOut {
                frame: None,
                index: e.index,
                order: e.order,
                ts_ns: e.ts_ns,
                flow_id: e.flow_id,
                src,
                dst,
                sp,
                dp,
                proto,
                icmp,
                sctp: sctp_of(p),
                igmp: igmp_of(p),
                vlan: p.vlan,
                vlan_count: p.vlan_count,
                to_server: e.to_server,
                rule: h.rule,
                linktype: e.linktype,
                stream,
                pseudo: e.pseudo,
                rebuilt: e.rebuilt,
                payload,
                // A link-layer packet's bytes go along for fast.log's
                // `[Raw pkt: ...]` (its own, from its tunnel's start).
                packet: if p.ip.is_none() {
                    let start = p.tunnel.map_or(0, |t| t.start);
                    Some(p.data.get(start..).unwrap_or(&[]).into())
                } else {
                    (self.cfg.log_packet && !e.pseudo).then(|| p.data.into())
                },
                app_proto,
                app: match h.tx {
                    Some(tx) if self.cfg.alert_app => app.and_then(|a| tx_alert_record(a, tx)),
                    _ => None,
                },
                kind: if h.deferred {
                    OutKind::Xbits
                } else {
                    OutKind::Alert
                },
                blocked,
                tunnel,
                link_only: p.ip.is_none(),
                vars: vars.clone(),
                context: self.scratch.captured.alert_vars_of(h.rule).into(),
                datasets: h.datasets.clone(),
                line: None,
                xff: match (&self.cfg.xff, app) {
                    (Some((hdr, last)), Some(a)) => xff_of(a, h.tx, hdr, *last),
                    _ => None,
                },
            });
        }
    }
}

/// Whether a loaded rule has `tag`, and whether one has `tag:host`
/// ([`Ctx::tagging`], [`Ctx::tag_hosts`]).
fn tag_modes(detect: &DetectEngine) -> (bool, bool) {
    let mut tags = detect.rules.iter().filter_map(|r| r.tag.as_ref());
    let any = tags.clone().next().is_some();
    let host = tags.any(|t| matches!(t.scope, vigil_rules::TagScope::Host { .. }));
    (any, host)
}

/// A connection event for the detectors (see [`OutKind::Conn`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn conn_event(
    kind: crate::detectors::ConnKind,
    index: u64,
    order: AlertOrder,
    ts_ns: i64,
    flow_id: Option<u64>,
    (src, sp): (IpAddr, Option<u16>),
    (dst, dp): (IpAddr, Option<u16>),
    flow_end: bool,
) -> AlertOut {
    AlertOut {
        frame: None,
        index,
        order,
        ts_ns,
        flow_id,
        src,
        dst,
        sp,
        dp,
        proto: 6,
        icmp: None,
        sctp: None,
        igmp: None,
        vlan: [0; 3],
        vlan_count: 0,
        to_server: Some(true),
        rule: u32::MAX,
        linktype: linktype::RAW,
        stream: false,
        pseudo: flow_end,
        rebuilt: false,
        payload: None,
        packet: None,
        app_proto: None,
        app: None,
        kind: OutKind::Conn(kind),
        xff: None,
        blocked: false,
        tunnel: None,
        link_only: false,
        vars: None,
        context: Box::default(),
        datasets: None,
        line: None,
    }
}

/// Copies the raw-stream window `w` of one direction into `chunk`.
fn fill_chunk(chunk: &mut StreamChunk, tcp: &TcpSession, client: bool, w: vigil_stream::RawWindow) {
    chunk.clear(w.from);
    let buf = &tcp.half(client).buf;
    for (s, e) in buf.ranges_in(w.from, w.to) {
        chunk.push_block(s, |out| buf.copy_out(s, e, out));
    }
}

/// A TCP/IP header (no payload) for a pseudo packet of `f` in direction
/// `client` (client to server when true), raw IP.
fn build_pseudo(buf: &mut Vec<u8>, f: &Flow<FlowState>, client: bool) {
    let k = &f.key;
    let lo = (bits_addr(k.lo_addr), k.lo_port);
    let hi = (bits_addr(k.hi_addr), k.hi_port);
    let (cli, srv) = if f.initiator_is_lo {
        (lo, hi)
    } else {
        (hi, lo)
    };
    let ((src, sp), (dst, dp)) = if client { (cli, srv) } else { (srv, cli) };
    let tcp = &f.state.tcp;
    let (snd, rcv) = (tcp.half(client), tcp.half(!client));
    buf.clear();
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) if !f.state.v6 => {
            buf.extend_from_slice(&[0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0]);
            buf.extend_from_slice(&s.octets());
            buf.extend_from_slice(&d.octets());
        }
        _ => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V4(v) => v.to_ipv6_mapped(),
                IpAddr::V6(v) => v,
            };
            buf.extend_from_slice(&[0x60, 0, 0, 0, 0, 20, 6, 64]);
            buf.extend_from_slice(&v6(src).octets());
            buf.extend_from_slice(&v6(dst).octets());
        }
    }
    buf.extend_from_slice(&sp.to_be_bytes());
    buf.extend_from_slice(&dp.to_be_bytes());
    buf.extend_from_slice(&snd.next_seq.to_be_bytes());
    buf.extend_from_slice(&rcv.next_seq.to_be_bytes());
    buf.extend_from_slice(&[0x50, 0x10, 0, 0, 0, 0, 0, 0]);
}

fn add_defrag_events(p: &mut Packet<'_>, bits: u8) {
    if bits == 0 {
        return;
    }
    let v6 = p.ip.as_ref().is_some_and(|i| i.version == 6);
    if bits & DEFRAG_OVERLAP != 0 {
        p.events.insert(if v6 {
            DecoderEvent::Ipv6FragOverlap
        } else {
            DecoderEvent::Ipv4FragOverlap
        });
    }
    if bits & DEFRAG_TOO_LARGE != 0 {
        p.events.insert(if v6 {
            DecoderEvent::Ipv6FragPktTooLarge
        } else {
            DecoderEvent::Ipv4FragPktTooLarge
        });
    }
    if bits & DEFRAG_IGNORED != 0 {
        p.events.insert(if v6 {
            DecoderEvent::Ipv6FragIgnored
        } else {
            DecoderEvent::Ipv4FragIgnored
        });
    }
}

/// Counts what feeding the app layer did.
fn count_feed(stats: &mut WorkerStats, app: &AppFlow, o: FeedOutcome, udp: bool) {
    if o.decided {
        if let Some(name) = app.proto_name() {
            *stats.app_flows.entry(name).or_default() += 1;
            if udp {
                *stats.app_flows_udp.entry(name).or_default() += 1;
            }
        }
    }
    stats.app_events += o.events;
    stats.app_gaps += o.gaps;
    stats.app_bytes += o.bytes;
}

/// Whether the eve-log `types` take the flow's transaction records
/// (Suricata's `ftp` type takes the `ftp_data` records too).
fn tx_type_logged(cfg: &WorkerConfig, app: &AppFlow) -> bool {
    let (Some(types), Some(st)) = (&cfg.log_tx_types, &app.state) else {
        return true;
    };
    let key = match st.eve_key() {
        "ftp_data" => "ftp",
        k => k,
    };
    types.contains(&key)
}

/// A transaction's EVE object.
fn tx_record(app: &AppFlow, tx: vigil_applayer::TxId) -> Option<Box<AppRecord>> {
    tx_record_of(app, tx, false)
}

/// A transaction's object in an alert.
fn tx_alert_record(app: &AppFlow, tx: vigil_applayer::TxId) -> Option<Box<AppRecord>> {
    tx_record_of(app, tx, true)
}

fn tx_record_of(app: &AppFlow, tx: vigil_applayer::TxId, alert: bool) -> Option<Box<AppRecord>> {
    let st = app.state.as_ref()?;
    let body = match st.eve_object(tx, alert)? {
        vigil_applayer::EveObject::Text(s) => RecordBody::Text(s),
        tree => RecordBody::Tree(tree),
    };
    Some(Box::new(AppRecord {
        key: st.eve_key(),
        tx_id: tx,
        body,
    }))
}

/// The flow's client and server (address, port).
fn endpoints(f: &Flow<FlowState>) -> ((IpAddr, u16), (IpAddr, u16)) {
    let k = &f.key;
    let lo = (bits_addr(k.lo_addr), k.lo_port);
    let hi = (bits_addr(k.hi_addr), k.hi_port);
    if f.initiator_is_lo {
        (lo, hi)
    } else {
        (hi, lo)
    }
}

/// Runs the transaction rules over the transactions of the packet's
/// direction that changed since they were last inspected. A direction
/// of a transaction is done once it is complete (or the flow ends).
/// Returns true when a `pass` rule matched.
#[allow(clippy::too_many_arguments)]
fn inspect_txs(
    detect: &DetectEngine,
    stats: &mut WorkerStats,
    scratch: &mut DetectScratch,
    hits: &mut Vec<Hit>,
    input: PacketInput<'_, '_>,
    st: &mut FlowState,
    to_server: bool,
    eof: bool,
) -> bool {
    let Some(app) = st.app.as_deref_mut() else {
        return false;
    };
    let dir = app_dir(to_server);
    let di = dir_index(dir);
    if !app.dirty[di] {
        return false;
    }
    app.dirty[di] = false;
    // Inspection may finish a side or keep a transaction out of the log.
    app.log_due = true;
    let Some(state) = app.state.as_mut() else {
        return false;
    };
    let has_rules = detect.has_tx_rules(state.proto());
    let mut passed = false;
    for tx in state.transactions() {
        if tx.inspected[di] {
            continue;
        }
        let complete = tx.progress.complete(dir) || eof;
        if !state.side_started(tx.id, dir) {
            // Nothing of this direction reached it (an FTP command not
            // answered yet): wait, or let it go once complete.
            if complete {
                state.set_inspected(tx.id, dir);
            }
            continue;
        }
        if has_rules {
            let txst = app.txd.entry(tx.id).or_default();
            // An incomplete side is inspected once (headers, the start
            // of a body), then again when complete: never rescanned per
            // packet while a body grows.
            if !complete {
                if txst.partial[di] {
                    continue;
                }
                txst.partial[di] = true;
            }
            stats.tx_inspections += 1;
            passed = detect.inspect_tx(
                input,
                TxInput {
                    app: state,
                    tx: tx.id,
                    dir,
                },
                txst,
                Some(&mut st.detect),
                scratch,
                hits,
            );
        }
        if complete {
            state.set_inspected(tx.id, dir);
        }
        if passed {
            break;
        }
    }
    passed
}

/// The XFF address for an alert: from the alert's HTTP transaction, else
/// the flow's newest transaction that has the header. `last` picks the
/// last address of the list (reverse proxy) instead of the first.
fn xff_of(
    app: &AppFlow,
    tx: Option<vigil_applayer::TxId>,
    header: &str,
    last: bool,
) -> Option<String> {
    let http = app.state.as_ref()?.as_http()?;
    let value = match tx {
        Some(id) => http.tx(id)?.request_header(header)?,
        None => http
            .transactions()
            .filter_map(|t| t.request_header(header))
            .last()?,
    };
    let text = String::from_utf8_lossy(value);
    let mut parts = text.split(',').map(str::trim).filter(|p| !p.is_empty());
    let pick = if last {
        parts.next_back()
    } else {
        parts.next()
    }?;
    pick.parse::<IpAddr>().ok().map(|ip| ip.to_string())
}

/// `flow.age`: the difference of the whole seconds of the flow's first
/// and last packet times, as Suricata computes it.
fn flow_age_secs(first_ns: i64, last_ns: i64) -> u64 {
    let secs = |ns: i64| ns.div_euclid(1_000_000_000);
    secs(last_ns).saturating_sub(secs(first_ns)).max(0) as u64
}

/// A flow's place among flows: its first packet's input index, then
/// tunnel depth. Unique within a run (one packet record starts at most one
/// flow), whatever the worker count.
fn flow_seq(f: &Flow<FlowState>) -> u64 {
    f.first_index << 8 | u64::from(f.state.depth)
}

/// Which flow-end records a worker writes (the eve-log `flow` and
/// `netflow` types).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowLog {
    pub flow: bool,
    pub netflow: bool,
}

/// `"2021-12-27T15:50:21.357011+0000"` for a packet time in nanoseconds.
fn eve_time(ns: i64) -> String {
    vigil_output::iso8601(
        ns.div_euclid(1_000_000_000),
        ns.rem_euclid(1_000_000_000) as u32,
    )
}

/// Suricata's TCP flag booleans (EveTcpFlags): only the flags set.
fn tcp_flag_fields(out: &mut String, flags: u8) {
    for (bit, name) in [
        (0x02, "syn"),
        (0x01, "fin"),
        (0x04, "rst"),
        (0x08, "psh"),
        (0x10, "ack"),
        (0x20, "urg"),
        (0x40, "ecn"),
        (0x80, "cwr"),
    ] {
        if flags & bit != 0 {
            out.push_str(",\"");
            out.push_str(name);
            out.push_str("\":true");
        }
    }
}

/// Ends a flow record's object: `tx_cnt` when the flow had transactions
/// (Suricata writes it only then), then the closing brace.
fn close_with_tx_cnt(j: &mut String, tx_cnt: u64) {
    if tx_cnt > 0 {
        j.push_str(",\"tx_cnt\":");
        push_int(j, tx_cnt);
    }
    j.push('}');
}

/// The records of an ended flow, as Suricata's flow and netflow loggers
/// write them: one `flow` record (both directions' counters, times, age,
/// state, why it ended, whether it alerted, and for TCP the flags each
/// side sent and the session state), and `netflow` records, one per
/// direction that carried packets (the to-client one with the addresses
/// swapped), with that direction's counters and TTL range.
fn flow_records(f: &Flow<FlowState>, log: FlowLog, order: AlertOrder, alerts: &mut Vec<AlertOut>) {
    let st = &f.state;
    let (cli, srv) = endpoints(f);
    let app_proto = st.app.as_ref().and_then(|a| a.proto_name());
    let has_ports = matches!(f.key.proto, 6 | 17 | 132);
    // What the records show, copied: the output thread writes the JSON.
    let sum = FlowSummary {
        pkts: [f.pkts_toserver, f.pkts_toclient],
        bytes: [f.bytes_toserver, f.bytes_toclient],
        first_ns: f.first_ns,
        last_ns: f.last_ns,
        state: match f.lifecycle {
            Lifecycle::New => "new",
            Lifecycle::Established => "established",
            Lifecycle::Closed => "closed",
        },
        reason: st.end.0.name(),
        alerted: st.alerted,
        elephant: st.rate.as_ref().map_or([false, false], |r| r.elephant()),
        tx_cnt: st.app.as_ref().map_or(0, |a| a.tx_count),
        tcp: (f.key.proto == 6).then(|| {
            (
                st.tcp_flags,
                // A session never tracked (midstream pickup off) has no state.
                (st.tcp.state != TcpState::None).then(|| st.tcp.state.name()),
            )
        }),
        ttl: st.ttl,
    };
    let record = |key: &'static str, body: RecordBody, to_server: bool, app_proto| {
        let ((src, sp), (dst, dp)) = if to_server { (cli, srv) } else { (srv, cli) };
        AlertOut {
            frame: None,
            index: f.first_index,
            order,
            ts_ns: st.end.1,
            flow_id: Some(f.id),
            src,
            dst,
            sp: has_ports.then_some(sp),
            dp: has_ports.then_some(dp),
            proto: f.key.proto,
            icmp: st.icmp,
            sctp: None,
            igmp: None,
            vlan: st.vlan,
            vlan_count: st.vlan_count,
            to_server: Some(to_server),
            rule: u32::MAX,
            linktype: 0,
            stream: false,
            pseudo: true,
            rebuilt: false,
            payload: None,
            packet: None,
            app_proto,
            app: Some(Box::new(AppRecord {
                key,
                tx_id: 0,
                body,
            })),
            kind: OutKind::TxLog,
            blocked: false,
            xff: None,
            tunnel: None,
            link_only: false,
            vars: None,
            context: Box::default(),
            datasets: None,
            line: None,
        }
    };
    if log.flow {
        alerts.push(record(
            "flow",
            RecordBody::Flow(Box::new(sum), None),
            true,
            app_proto,
        ));
    }
    if log.netflow {
        for to_server in [true, false] {
            let d = usize::from(!to_server);
            if sum.pkts[d] == 0 && !to_server {
                continue;
            }
            alerts.push(record(
                "netflow",
                RecordBody::Flow(Box::new(sum), Some(d)),
                to_server,
                Some(app_proto.unwrap_or("unknown")),
            ));
        }
    }
}

/// An ended flow's figures, as its `flow` and `netflow` records show them.
#[derive(Debug, Clone, Copy)]
struct FlowSummary {
    /// To server, to client.
    pkts: [u64; 2],
    bytes: [u64; 2],
    first_ns: i64,
    last_ns: i64,
    state: &'static str,
    reason: &'static str,
    alerted: bool,
    elephant: [bool; 2],
    tx_cnt: u64,
    /// TCP: the flags each side sent, and the session state if tracked.
    tcp: Option<([u8; 2], Option<&'static str>)>,
    /// Per direction (lowest, highest).
    ttl: [(u8, u8); 2],
}

impl FlowSummary {
    /// The `flow` object (`dir` `None`) or the `netflow` object of one
    /// direction (0 to server, 1 to client).
    fn json(&self, dir: Option<usize>) -> String {
        // Written piece by piece (`itoa` for the numbers): a `write!` of
        // the whole object was a fifth of the merge thread's instructions,
        // which writes these records.
        let age = self.last_ns.div_euclid(1_000_000_000) - self.first_ns.div_euclid(1_000_000_000);
        let times = |j: &mut String| {
            j.push_str(",\"start\":\"");
            j.push_str(&eve_time(self.first_ns));
            j.push_str("\",\"end\":\"");
            j.push_str(&eve_time(self.last_ns));
            j.push_str("\",\"age\":");
            push_int(j, age);
        };
        let Some(d) = dir else {
            let mut j = String::with_capacity(320);
            j.push_str("{\"pkts_toserver\":");
            push_int(&mut j, self.pkts[0]);
            j.push_str(",\"pkts_toclient\":");
            push_int(&mut j, self.pkts[1]);
            j.push_str(",\"bytes_toserver\":");
            push_int(&mut j, self.bytes[0]);
            j.push_str(",\"bytes_toclient\":");
            push_int(&mut j, self.bytes[1]);
            times(&mut j);
            j.push_str(",\"state\":\"");
            j.push_str(self.state);
            j.push_str("\",\"reason\":\"");
            j.push_str(self.reason);
            j.push_str("\",\"alerted\":");
            j.push_str(if self.alerted { "true" } else { "false" });
            // Suricata: `elephant` and its directions after `alerted`.
            if self.elephant != [false, false] {
                j.push_str(",\"elephant\":true,\"elephant_direction\":[");
                match self.elephant {
                    [true, true] => j.push_str("\"toserver\",\"toclient\""),
                    [true, false] => j.push_str("\"toserver\""),
                    _ => j.push_str("\"toclient\""),
                }
                j.push(']');
            }
            close_with_tx_cnt(&mut j, self.tx_cnt);
            if let Some(([ts, tc], state)) = self.tcp {
                j.push_str(",\"tcp\":{\"tcp_flags\":\"");
                push_hex(&mut j, ts | tc);
                j.push_str("\",\"tcp_flags_ts\":\"");
                push_hex(&mut j, ts);
                j.push_str("\",\"tcp_flags_tc\":\"");
                push_hex(&mut j, tc);
                j.push('"');
                tcp_flag_fields(&mut j, ts | tc);
                if let Some(state) = state {
                    j.push_str(",\"state\":\"");
                    j.push_str(state);
                    j.push('"');
                }
                j.push('}');
            }
            return j;
        };
        let (lo, hi) = self.ttl[d];
        let mut j = String::with_capacity(240);
        j.push_str("{\"pkts\":");
        push_int(&mut j, self.pkts[d]);
        j.push_str(",\"bytes\":");
        push_int(&mut j, self.bytes[d]);
        times(&mut j);
        j.push_str(",\"min_ttl\":");
        push_int(&mut j, lo.min(hi));
        j.push_str(",\"max_ttl\":");
        push_int(&mut j, hi);
        close_with_tx_cnt(&mut j, self.tx_cnt);
        if let Some((flags, _)) = self.tcp {
            let flags = flags[d];
            j.push_str(",\"tcp\":{\"tcp_flags\":\"");
            push_hex(&mut j, flags);
            j.push('"');
            tcp_flag_fields(&mut j, flags);
            j.push('}');
        }
        j
    }
}

/// Appends an integer in decimal.
fn push_int(j: &mut String, v: impl itoa::Integer) {
    j.push_str(itoa::Buffer::new().format(v));
}

/// Appends a byte as two lowercase hex digits.
fn push_hex(j: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    j.push(HEX[usize::from(b >> 4)] as char);
    j.push(HEX[usize::from(b & 15)] as char);
}

/// Records the `replace` edits of rule `ri` on the packet payload.
fn replace_edits(
    detect: &DetectEngine,
    p: &Packet<'_>,
    ri: u32,
    out: &mut Vec<(usize, Box<[u8]>)>,
) {
    let Some(rule) = detect.rules.get(ri as usize) else {
        return;
    };
    let Some((_, prog)) = rule.buffers.iter().find(|(b, _)| *b == Buffer::Packet) else {
        return;
    };
    let mut vars = [0u64; vigil_detect::payload::MAX_VARS];
    if let Some(edits) = prog.replace_edits(p.payload(), &mut vars) {
        out.extend(edits.into_iter().map(|(o, b)| (o, Box::<[u8]>::from(b))));
    }
}

/// The packet with `replace` edits (payload offset, bytes) applied and its
/// TCP or UDP checksum updated (RFC 1624, incrementally: the IP header is
/// unchanged); `None` when nothing changed or the packet has no payload
/// in its frame.
fn rewrite(p: &Packet<'_>, edits: &[(usize, Box<[u8]>)]) -> Option<Box<[u8]>> {
    let base = p.data.as_ptr() as usize;
    let pay = p.payload();
    let pay_at = (pay.as_ptr() as usize).checked_sub(base)?;
    let l4_at = (p.l4_header().as_ptr() as usize).checked_sub(base)?;
    let csum_at = match p.l4 {
        L4::Tcp(_) => l4_at + 16,
        L4::Udp(_) => l4_at + 6,
        _ => return None,
    };
    let mut f: Vec<u8> = p.data.to_vec();
    if pay_at + pay.len() > f.len() || csum_at + 2 > f.len() {
        return None;
    }
    let old = u16::from_be_bytes([f[csum_at], f[csum_at + 1]]);
    let mut sum = u32::from(!old);
    let mut changed = false;
    for (off, bytes) in edits {
        for (k, &b) in bytes.iter().enumerate() {
            let Some(at) = (off + k)
                .checked_add(pay_at)
                .filter(|&a| a < pay_at + pay.len())
            else {
                continue;
            };
            let was = f[at];
            if was == b {
                continue;
            }
            changed = true;
            // The byte's weight in its 16-bit word counted from the
            // transport header (the pseudo header is even).
            let shift = if (at - l4_at) % 2 == 0 { 8 } else { 0 };
            sum += u32::from(!(u16::from(was) << shift));
            sum += u32::from(u16::from(b) << shift);
            f[at] = b;
        }
    }
    if !changed {
        return None;
    }
    // UDP over IPv4 without a checksum stays without one.
    if !(matches!(p.l4, L4::Udp(_)) && old == 0) {
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let mut c = !(sum as u16);
        if c == 0 && matches!(p.l4, L4::Udp(_)) {
            c = 0xffff;
        }
        f[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
    }
    Some(f.into())
}
