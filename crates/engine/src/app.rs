//! The application layer inside a worker: protocol detection by content,
//! feeding the parsers, and the per-transaction bookkeeping detection and
//! logging need.
//!
//! TCP follows Suricata's IDS mode: a direction's data goes to the
//! app layer once the peer acknowledged it (so on a packet of the other
//! direction), in order, with holes reported to the parser as gaps; at the
//! end of a flow whatever is left is fed. Until the protocol is known the
//! data stays in the stream buffer (the detector looks at no more than
//! [`vigil_applayer::probe::PROBE_DEPTH`] bytes per direction), so the
//! parser sees the flow from its first byte. UDP datagrams are fed one by
//! one as they arrive.

use std::collections::BTreeMap;

use vigil_applayer::frames::{FrameProto, Framer};
use vigil_applayer::probe::{Detection, PROBE_DEPTH};
use vigil_applayer::{
    AppLayerConfig, AppLayerState, Direction as AppDir, ProtocolDetector, Transport, TxId,
};
use vigil_detect::{AppProtoState, TxDetectState};
use vigil_stream::{StreamMemory, TcpSession};

/// App-layer state of one flow.
pub struct AppFlow {
    detector: Option<ProtocolDetector>,
    pub proto: AppProtoState,
    pub state: Option<AppLayerState>,
    /// Rules already fired, per live transaction.
    pub txd: BTreeMap<TxId, TxDetectState>,
    /// Bytes of each direction (to-server, to-client) given to the
    /// detector.
    probed: [u64; 2],
    /// Data of a direction was parsed since its transactions were last
    /// inspected.
    pub dirty: [bool; 2],
    /// Something that can make a transaction loggable happened since
    /// the transactions were last looked at for logging: data parsed in
    /// either direction, a side ending, or their inspection. Without it
    /// (and before the flow's end) there is nothing to log, and
    /// `log_txs` returns at once instead of walking them per packet.
    pub log_due: bool,
    finished: [bool; 2],
    /// The detector gave up on a direction while the other was still
    /// undecided, and its first bytes were let go: the parser starts it
    /// with a gap.
    skipped: [bool; 2],
    /// An FTP data connection expected by its control channel, until its
    /// first data decides the protocol.
    ftp_data: Option<Box<vigil_applayer::ftpdata::FtpDataInfo>>,
    /// Transactions finished so far (the `flow` record's `tx_cnt`).
    pub tx_count: u64,
    /// The frame types rules inspect (protocol, type), when any: the flow
    /// keeps framers once its protocol (one with frames) is known.
    pub want_frames: Option<std::sync::Arc<[(&'static str, &'static str)]>>,
    /// The framers of both directions (to-server, to-client).
    pub frames: Option<Box<FlowFrames>>,
}

/// The frames of a flow: a framer per direction.
#[derive(Debug)]
pub struct FlowFrames {
    pub framers: [Framer; 2],
}

impl std::fmt::Debug for AppFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppFlow")
            .field("proto", &self.proto)
            .field("txs", &self.txd.len())
            .finish()
    }
}

/// Counters of what feeding did.
#[derive(Debug, Default, Clone, Copy)]
pub struct FeedOutcome {
    /// The protocol was decided by this call.
    pub decided: bool,
    pub events: u64,
    pub bytes: u64,
    pub gaps: u64,
}

pub fn dir_index(d: AppDir) -> usize {
    match d {
        AppDir::ToServer => 0,
        AppDir::ToClient => 1,
    }
}

pub fn app_dir(to_server: bool) -> AppDir {
    if to_server {
        AppDir::ToServer
    } else {
        AppDir::ToClient
    }
}

impl AppFlow {
    /// A flow whose server listens on `server_port`.
    pub fn new(transport: Transport, server_port: u16) -> AppFlow {
        AppFlow {
            detector: Some(ProtocolDetector::new(transport, server_port)),
            proto: AppProtoState::Unknown,
            state: None,
            txd: BTreeMap::new(),
            probed: [0; 2],
            dirty: [false; 2],
            log_due: false,
            finished: [false; 2],
            skipped: [false; 2],
            ftp_data: None,
            tx_count: 0,
            want_frames: None,
            frames: None,
        }
    }

    /// The framer of direction `di`, created once the flow's protocol is
    /// known when rules want frames and the protocol has some.
    fn framer(&mut self, di: usize, tcp: bool) -> Option<&mut Framer> {
        let want = self.want_frames.as_ref()?;
        if self.frames.is_none() {
            let AppProtoState::Detected(p) = self.proto else {
                return None;
            };
            let fp = FrameProto::of(p)?;
            let enabled: Vec<&'static str> = want
                .iter()
                .filter(|(proto, _)| *proto == fp.name())
                .map(|(_, n)| *n)
                .collect();
            if enabled.is_empty() {
                self.want_frames = None;
                return None;
            }
            self.frames = Some(Box::new(FlowFrames {
                framers: [
                    Framer::new(fp, true, tcp, enabled.clone()),
                    Framer::new(fp, false, tcp, enabled),
                ],
            }));
        }
        self.frames.as_mut().map(|f| &mut f.framers[di])
    }

    /// Suricata's `app_proto` value for EVE (`None` while undecided).
    pub fn proto_name(&self) -> Option<&'static str> {
        match self.proto {
            AppProtoState::Unknown => None,
            AppProtoState::Detected(p) => Some(p.name()),
            AppProtoState::Failed => Some("failed"),
        }
    }

    /// Direction `di` changed (data parsed, or its side ended): its
    /// transactions are inspected again, and looked at for logging.
    fn parsed(&mut self, di: usize) {
        self.dirty[di] = true;
        self.log_due = true;
    }

    fn decide(&mut self, d: Detection, transport: Transport, cfg: &AppLayerConfig) -> bool {
        match d {
            Detection::Pending => false,
            Detection::Detected(p) => {
                self.proto = AppProtoState::Detected(p);
                let mut st = AppLayerState::with_config(p, transport, cfg);
                if self.detector.as_ref().is_some_and(|d| d.reversed()) {
                    st.set_reversed();
                }
                self.state = Some(st);
                self.detector = None;
                self.log_due = true;
                true
            }
            Detection::Failed => {
                self.proto = AppProtoState::Failed;
                self.detector = None;
                true
            }
        }
    }

    /// The control channel announced this flow as an FTP data connection
    /// (the reader's expectation table): when its first data reaches the
    /// app layer it is `ftp-data` without probing (Suricata looks its
    /// expectations up there), unless its protocol was decided before.
    pub fn expect_ftp_data(&mut self, info: &vigil_applayer::ftpdata::FtpDataInfo) {
        if self.detector.is_some() {
            self.ftp_data = Some(Box::new(info.clone()));
        }
    }

    /// The UDP client's port, which mDNS and LLMNR detection also tries.
    pub fn set_client_port(&mut self, port: u16) {
        if let Some(d) = self.detector.as_mut() {
            d.set_client_port(port);
        }
    }

    /// Feeds one UDP datagram.
    pub fn feed_udp(
        &mut self,
        to_server: bool,
        payload: &[u8],
        ts_us: u64,
        cfg: &AppLayerConfig,
    ) -> FeedOutcome {
        let mut out = FeedOutcome::default();
        if payload.is_empty() {
            return out;
        }
        let dir = app_dir(to_server);
        if let Some(det) = self.detector.as_mut() {
            let d = det.feed(dir, payload);
            out.decided = self.decide(d, Transport::Udp, cfg);
        }
        if let Some(st) = self.state.as_mut() {
            out.events += st.feed(dir, payload, ts_us).len() as u64;
            out.bytes += payload.len() as u64;
            self.parsed(dir_index(dir));
            if let Some(f) = self.framer(dir_index(dir), false) {
                f.feed_datagram(payload);
            }
        }
        out
    }

    /// Feeds direction `client` of a TCP session with its data up to
    /// stream offset `to` (what the peer acknowledged; `u64::MAX` at the
    /// end of the flow, when holes count as gaps too). `scratch` is a
    /// reusable copy buffer.
    #[allow(clippy::too_many_arguments)]
    pub fn feed_tcp(
        &mut self,
        tcp: &mut TcpSession,
        client: bool,
        to: u64,
        eof: bool,
        ts_us: u64,
        cfg: &AppLayerConfig,
        mem: &mut StreamMemory,
        scratch: &mut Vec<u8>,
    ) -> FeedOutcome {
        let mut out = FeedOutcome::default();
        let dir = app_dir(client);
        let di = dir_index(dir);
        let h = tcp.half(client);
        let Some(start) = h.app_progress else {
            return out;
        };
        let to = to.min(h.buf.right_edge());
        if to > start {
            // Contiguous present data from `start`, with holes before a
            // range treated as gaps (the peer acknowledged data we never
            // saw).
            let ranges: Vec<(u64, u64)> = h.buf.ranges_in(start, to).collect();
            if let Some(info) = self.ftp_data.take().filter(|_| self.detector.is_some()) {
                self.detector = None;
                self.proto = AppProtoState::Detected(vigil_applayer::AppProto::FtpData);
                self.state = Some(AppLayerState::ftp_data(Some(*info), ts_us));
                // The transaction is there for both directions now.
                self.parsed(0);
                self.parsed(1);
                out.decided = true;
            }
            // Protocol detection first: the detector sees the new bytes
            // from the stream's beginning; the parser then gets the same
            // data once the protocol is known.
            if let Some(det) = self.detector.as_mut() {
                let mut d = Detection::Pending;
                let mut pos = self.probed[di].max(start);
                for &(s, e) in &ranges {
                    if s > pos {
                        break; // a hole: detect on what came before it
                    }
                    if e <= pos {
                        continue;
                    }
                    scratch.clear();
                    h.buf.copy_out(pos, e, scratch);
                    d = det.feed(dir, scratch);
                    pos = e;
                    if d != Detection::Pending {
                        break;
                    }
                }
                if d == Detection::Pending && eof {
                    d = det.finish();
                }
                self.probed[di] = pos;
                out.decided = self.decide(d, Transport::Tcp, cfg);
                if d == Detection::Pending && pos >= PROBE_DEPTH as u64 {
                    // This direction told the detector all it will look
                    // at; do not hold its data while the other one
                    // decides.
                    tcp.app_consumed(client, Some(pos), mem);
                    self.skipped[di] = true;
                    return out;
                }
            }
            match self.state.as_mut() {
                // A detected-only protocol that has no use for the data:
                // the app layer stops following this direction.
                Some(st) if !st.wants_data(dir) => {
                    tcp.app_consumed(client, None, mem);
                }
                Some(_) => {
                    let framing = self.framer(di, true).is_some();
                    let Some(st) = self.state.as_mut() else {
                        return out;
                    };
                    let mut fr = if framing {
                        self.frames.as_mut().map(|f| &mut f.framers[di])
                    } else {
                        None
                    };
                    if std::mem::take(&mut self.skipped[di]) {
                        out.events += st.on_gap(dir, None).len() as u64;
                        out.gaps += 1;
                        if let Some(f) = fr.as_mut() {
                            f.gap();
                        }
                    }
                    let mut pos = start;
                    for &(s, e) in &ranges {
                        if s > pos {
                            out.events += st.on_gap(dir, Some(s - pos)).len() as u64;
                            out.gaps += 1;
                            if let Some(f) = fr.as_mut() {
                                f.gap();
                            }
                        }
                        scratch.clear();
                        h.buf.copy_out(s, e, scratch);
                        out.events += st.feed(dir, scratch, ts_us).len() as u64;
                        if let Some(f) = fr.as_mut() {
                            f.feed(s, scratch);
                        }
                        out.bytes += e - s;
                        pos = e;
                    }
                    if eof && pos < to && to != u64::MAX {
                        out.events += st.on_gap(dir, Some(to - pos)).len() as u64;
                        out.gaps += 1;
                        if let Some(f) = fr.as_mut() {
                            f.gap();
                        }
                    }
                    if st.take_raw_trigger(dir) {
                        tcp.trigger_raw(client);
                    }
                    self.parsed(di);
                    tcp.app_consumed(client, Some(pos.max(start)), mem);
                }
                None if self.proto == AppProtoState::Failed => {
                    tcp.app_consumed(client, None, mem);
                    tcp.app_consumed(!client, None, mem);
                }
                None => {}
            }
            self.follow_switch();
        } else if eof && self.detector.is_some() && self.probed != [0, 0] {
            // (A flow that carried no data at all keeps an unknown
            // protocol, as in Suricata; it did not fail detection.)
            let d = self.detector.as_mut().map(|d| d.finish());
            if let Some(d) = d {
                out.decided = self.decide(d, Transport::Tcp, cfg);
            }
        }
        if self.proto == AppProtoState::Failed {
            tcp.app_consumed(client, None, mem);
        }
        // The sender closed and everything it sent was parsed.
        let h = tcp.half(client);
        if !self.finished[di]
            && self.state.is_some()
            && (eof || (h.fin_seen && h.app_progress.is_some_and(|p| p >= h.buf.right_edge())))
        {
            self.finished[di] = true;
            if let Some(st) = self.state.as_mut() {
                out.events += st.finish(dir).len() as u64;
            }
            if let Some(f) = self.frames.as_mut() {
                f.framers[di].finish();
            }
            self.parsed(di);
        }
        out
    }

    /// The parser changed the flow's protocol (HTTP/1 `Upgrade: h2c`
    /// accepted: HTTP/2): the flow's protocol follows, and the detection
    /// state of the old transactions goes.
    fn follow_switch(&mut self) {
        if let (Some(st), AppProtoState::Detected(p)) = (self.state.as_ref(), self.proto) {
            if st.proto() != p {
                self.proto = AppProtoState::Detected(st.proto());
                self.txd.clear();
                self.log_due = true;
            }
        }
    }

    /// The frames of direction `to_server` completed since the last call.
    pub fn take_frames(&mut self, to_server: bool) -> Vec<vigil_applayer::frames::Frame> {
        match self.frames.as_mut() {
            Some(ff) => ff.framers[usize::from(!to_server)].take_done().collect(),
            None => Vec::new(),
        }
    }

    /// The name of the flow's frame protocol (`tls`, `http1` ...).
    pub fn frame_proto(&self) -> Option<&'static str> {
        self.frames.as_ref().map(|f| f.framers[0].proto().name())
    }

    /// Drops the detection state of transactions the parser pruned.
    pub fn prune(&mut self) {
        if let Some(st) = self.state.as_mut() {
            if st.prune() > 0 {
                let live: Vec<TxId> = st.transactions().iter().map(|t| t.id).collect();
                self.txd.retain(|id, _| live.binary_search(id).is_ok());
            }
        }
    }
}
