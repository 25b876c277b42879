//! A worker: owns, with no locks, the flow table and per-flow detection
//! state of the flows the dispatcher pins to it, and runs decode, flow
//! tracking and detection over each batch it receives.
//!
//! A batch is processed in two passes. The first is stateless: decode every
//! packet, pick its rule groups and run the prefilter over all of them (the
//! step a device engine will take over). The second runs in packet order:
//! flow lookup, TCP state, verification, flowbits. So the order in which
//! per-flow state changes never depends on how the prefilter was run.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use vigil_detect::{DetectEngine, DetectScratch, FlowDetectState, FlowView, PacketInput};
use vigil_flow::{Direction, FlowKey, FlowTable, Lifecycle};
use vigil_wire::{decode, Packet, L4};

use crate::batch::Batch;

/// Minimal TCP connection state: enough for `flow:established` with
/// Suricata's meaning (three-way handshake seen; no midstream pickup).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TcpState {
    #[default]
    None,
    SynSent,
    SynRecv,
    Established,
    Closing,
    Closed,
}

#[derive(Debug, Default)]
pub struct FlowState {
    pub detect: FlowDetectState,
    pub tcp: TcpState,
    seen_to_server: bool,
    seen_to_client: bool,
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;
const RST: u8 = 0x04;

fn tcp_step(s: TcpState, flags: u8, to_server: bool) -> TcpState {
    use TcpState::*;
    if flags & RST != 0 && s != None {
        return Closed;
    }
    match s {
        None if to_server && flags & SYN != 0 && flags & ACK == 0 => SynSent,
        SynSent if !to_server && flags & SYN != 0 && flags & ACK != 0 => SynRecv,
        SynRecv if to_server && flags & ACK != 0 && flags & SYN == 0 => Established,
        Established if flags & FIN != 0 => Closing,
        other => other,
    }
}

/// One alert found by a worker, with everything output needs.
#[derive(Debug, Clone)]
pub struct AlertOut {
    pub index: u64,
    pub ts_ns: i64,
    pub flow_id: Option<u64>,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sp: Option<u16>,
    pub dp: Option<u16>,
    pub proto: u8,
    pub icmp: Option<(u8, u8)>,
    pub vlan: [u16; 3],
    pub vlan_count: u8,
    pub to_server: Option<bool>,
    /// Index into [`DetectEngine::rules`].
    pub rule: u32,
    pub linktype: u32,
    /// Packet payload, when payload logging is on.
    pub payload: Option<Box<[u8]>>,
    /// Whole frame, when packet logging is on.
    pub packet: Option<Box<[u8]>>,
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
    pub other_ip: u64,
    pub fragments: u64,
    pub vlan: u64,
    pub events: BTreeMap<&'static str, u64>,
    pub flows_created: u64,
    pub flows_timed_out: u64,
    pub flows_evicted: u64,
    pub flows_active_at_end: u64,
    pub flows_peak: u64,
    pub alerts: u64,
    pub passed_flows: u64,
    pub prefilter_hits: u64,
    pub rules_checked: u64,
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
            prefilter_hits,
            rules_checked
        );
        for (k, v) in &o.events {
            *self.events.entry(k).or_default() += v;
        }
    }
}

/// Settings a worker needs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub max_flows: usize,
    pub log_payload: bool,
    pub log_packet: bool,
}

pub struct Worker {
    detect: Arc<DetectEngine>,
    flows: FlowTable<FlowState>,
    scratch: DetectScratch,
    cfg: WorkerConfig,
    pub stats: WorkerStats,
    // Reused per batch.
    candidates: Vec<u32>,
    spans: Vec<(u32, u32)>,
    rule_hits: Vec<u32>,
}

impl Worker {
    pub fn new(detect: Arc<DetectEngine>, cfg: WorkerConfig) -> Self {
        Worker {
            detect,
            flows: FlowTable::new(cfg.max_flows),
            scratch: DetectScratch::default(),
            cfg,
            stats: WorkerStats::default(),
            candidates: Vec::new(),
            spans: Vec::new(),
            rule_hits: Vec::new(),
        }
    }

    fn count_decode(&mut self, p: &Packet<'_>, orig_len: u32) {
        let s = &mut self.stats;
        s.pkts += 1;
        s.bytes += orig_len as u64;
        if p.vlan_count > 0 {
            s.vlan += 1;
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
            L4::Sctp { .. } => s.sctp += 1,
            L4::Other(_) => s.other_ip += 1,
            L4::None => {}
        }
        for e in p.events.iter() {
            *s.events.entry(e.name()).or_default() += 1;
        }
    }

    /// Processes one batch, appending alerts in packet order.
    pub fn process(&mut self, batch: &Batch, alerts: &mut Vec<AlertOut>) {
        let packets: Vec<Packet<'_>> = batch
            .records
            .iter()
            .map(|r| decode(r.linktype, batch.data(r)))
            .collect();
        // Pass 1 (stateless): rule groups and prefilter for every packet.
        self.candidates.clear();
        self.spans.clear();
        for p in &packets {
            let start = self.candidates.len() as u32;
            if let Some(sel) = self.detect.select_groups(p) {
                let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
                self.detect.candidates(
                    sel,
                    p.payload(),
                    addrs,
                    &mut self.scratch,
                    &mut self.candidates,
                );
            }
            self.spans.push((start, self.candidates.len() as u32));
        }
        // Pass 2 (in order): flows, verification, per-flow state.
        for (i, p) in packets.iter().enumerate() {
            let rec = &batch.records[i];
            self.count_decode(p, rec.orig_len);
            let (s, e) = self.spans[i];
            self.inspect(p, rec, s as usize..e as usize, alerts);
        }
    }

    fn inspect(
        &mut self,
        p: &Packet<'_>,
        rec: &crate::batch::PacketRecord,
        cand: std::ops::Range<usize>,
        alerts: &mut Vec<AlertOut>,
    ) {
        let Some(ip) = &p.ip else { return };
        if ip.fragment.is_some() {
            // Fragments are dispatched by address pair and carry no usable
            // ports until reassembled: they get no flow (Suricata inspects
            // the reassembled datagram instead), only flow-less rules.
            self.inspect_flowless(p, rec, cand, alerts);
            return;
        }
        let vlan = if p.vlan_count > 0 {
            p.vlan[p.vlan_count as usize - 1]
        } else {
            0
        };
        let (sp, dp) = (p.src_port(), p.dst_port());
        let (key, src_is_lo) = FlowKey::new(ip.src, sp, ip.dst, dp, ip.proto, vlan);
        let mut ended_timeout = 0;
        let mut ended_evicted = 0;
        let look = self.flows.lookup_or_create(
            key,
            src_is_lo,
            rec.ts_ns,
            rec.index,
            FlowState::default,
            |_, reason| match reason {
                vigil_flow::EndReason::Timeout => ended_timeout += 1,
                vigil_flow::EndReason::Evicted => ended_evicted += 1,
            },
        );
        let _ = (ended_timeout, ended_evicted);
        let Some(flow) = self.flows.get_mut(look.slot) else {
            return;
        };
        let to_server = look.direction == Direction::ToServer;
        if to_server {
            flow.pkts_toserver += 1;
            flow.bytes_toserver += rec.orig_len as u64;
            flow.state.seen_to_server = true;
        } else {
            flow.pkts_toclient += 1;
            flow.bytes_toclient += rec.orig_len as u64;
            flow.state.seen_to_client = true;
        }
        let established = match p.l4 {
            L4::Tcp(t) => {
                flow.state.tcp = tcp_step(flow.state.tcp, t.flags, to_server);
                flow.lifecycle = match flow.state.tcp {
                    TcpState::Established | TcpState::Closing => Lifecycle::Established,
                    TcpState::Closed => Lifecycle::Closed,
                    _ => Lifecycle::New,
                };
                matches!(flow.state.tcp, TcpState::Established | TcpState::Closing)
            }
            _ => {
                let both = flow.state.seen_to_server && flow.state.seen_to_client;
                if both {
                    flow.lifecycle = Lifecycle::Established;
                }
                both
            }
        };
        let flow_id = flow.id;
        if flow.state.detect.passed {
            return;
        }
        let flow_state = &mut flow.state.detect;
        let view = FlowView {
            to_server,
            established,
        };
        self.rule_hits.clear();
        let passed = self.detect.verify(
            PacketInput {
                packet: p,
                flow: Some(view),
            },
            &self.candidates[cand],
            Some(flow_state),
            &mut self.scratch,
            &mut self.rule_hits,
        );
        if passed {
            self.stats.passed_flows += 1;
        }
        self.emit(p, rec, Some(flow_id), Some(to_server), alerts);
    }

    fn inspect_flowless(
        &mut self,
        p: &Packet<'_>,
        rec: &crate::batch::PacketRecord,
        cand: std::ops::Range<usize>,
        alerts: &mut Vec<AlertOut>,
    ) {
        self.rule_hits.clear();
        self.detect.verify(
            PacketInput {
                packet: p,
                flow: None,
            },
            &self.candidates[cand],
            None,
            &mut self.scratch,
            &mut self.rule_hits,
        );
        self.emit(p, rec, None, None, alerts);
    }

    fn emit(
        &mut self,
        p: &Packet<'_>,
        rec: &crate::batch::PacketRecord,
        flow_id: Option<u64>,
        to_server: Option<bool>,
        alerts: &mut Vec<AlertOut>,
    ) {
        let Some(ip) = &p.ip else { return };
        let (sp, dp) = (p.src_port(), p.dst_port());
        let has_ports = matches!(p.l4, L4::Tcp(_) | L4::Udp(_) | L4::Sctp { .. });
        let icmp = match p.l4 {
            L4::Icmpv4(i) | L4::Icmpv6(i) => Some((i.itype, i.icode)),
            _ => None,
        };
        for &rule in &self.rule_hits {
            self.stats.alerts += 1;
            alerts.push(AlertOut {
                index: rec.index,
                ts_ns: rec.ts_ns,
                flow_id,
                src: ip.src,
                dst: ip.dst,
                sp: has_ports.then_some(sp),
                dp: has_ports.then_some(dp),
                proto: ip.proto,
                icmp,
                vlan: p.vlan,
                vlan_count: p.vlan_count,
                to_server,
                rule,
                linktype: rec.linktype,
                payload: self.cfg.log_payload.then(|| p.payload().into()),
                packet: self.cfg.log_packet.then(|| p.data.into()),
            });
        }
    }

    /// End of input: every flow ends. Returns the final counters.
    pub fn finish(mut self) -> WorkerStats {
        let c = self.flows.counters();
        let flows = self.flows.drain();
        let mut s = self.stats;
        s.flows_created = c.created;
        s.flows_timed_out = c.timed_out;
        s.flows_evicted = c.memcap_evictions;
        s.flows_active_at_end = flows.len() as u64;
        s.flows_peak = c.peak_active;
        s.prefilter_hits = self.scratch.prefilter_hits;
        s.rules_checked = self.scratch.rules_checked;
        self.scratch = DetectScratch::default();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_reaches_established() {
        let mut s = TcpState::None;
        s = tcp_step(s, SYN, true);
        assert_eq!(s, TcpState::SynSent);
        s = tcp_step(s, SYN | ACK, false);
        assert_eq!(s, TcpState::SynRecv);
        s = tcp_step(s, ACK, true);
        assert_eq!(s, TcpState::Established);
        s = tcp_step(s, FIN | ACK, false);
        assert_eq!(s, TcpState::Closing);
        assert_eq!(tcp_step(s, RST, true), TcpState::Closed);
    }

    #[test]
    fn no_midstream_pickup() {
        // Data without a handshake never becomes established.
        let mut s = TcpState::None;
        for (f, dir) in [(ACK, true), (ACK, false), (ACK | 0x08, true)] {
            s = tcp_step(s, f, dir);
        }
        assert_eq!(s, TcpState::None);
    }
}
