//! TCP session tracking: the connection state machine, sequence and
//! acknowledgement tracking per direction, and the reassembly buffer each
//! direction's accepted data goes into.
//!
//! States and their order follow Suricata's `stream-tcp` (the state names
//! are seen from the server: a FIN from the client moves the session to
//! `CloseWait`), because which packets count as established and when the
//! raw stream is inspected depend on them. The client is the endpoint that
//! sent the first SYN; the caller makes that endpoint its flow's
//! "to server" side (see [`TcpSession::starts_reversed`]).
//!
//! Not done here: deciding what to inspect with which rules, and any
//! application-layer parsing. Timestamps (PAWS) and checksums are not
//! validated.

use crate::buffer::{InsertScratch, StreamBuffer, StreamMemory};
use crate::events::{StreamEvent, StreamEvents};
use crate::policy::OverlapPolicy;

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;

/// Largest reassembly depth used when the configured depth is 0
/// (unlimited): offsets are tracked in a 31-bit sequence space.
const MAX_DEPTH: u64 = 1 << 30;

/// Stream tracking and reassembly settings (Suricata's `stream` section).
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// Bytes per direction reassembled; data beyond is not kept
    /// (`stream.reassembly.depth`, default 1 MiB; 0 = unlimited).
    pub depth: u64,
    /// Raw inspection waits for this many acknowledged new bytes (or for
    /// the end of the connection): `toserver-chunk-size`,
    /// `toclient-chunk-size`.
    pub toserver_chunk: u64,
    pub toclient_chunk: u64,
    pub policy: OverlapPolicy,
    /// Pick up sessions whose handshake was not seen.
    pub midstream: bool,
    /// Inline (IPS) raw inspection, as Suricata's `stream.inline`: a
    /// packet that adds data inspects its direction's data up to its own
    /// end at once, acknowledged or not, in a window that reaches back a
    /// chunk (`*-chunk-size`) into data already inspected, so a pattern
    /// split over segments is seen by the packet that completes it (the
    /// one an IPS must drop). A match that lies wholly in the reach-back
    /// can be reported again, as in Suricata.
    pub inline: bool,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            depth: 1 << 20,
            toserver_chunk: 2560,
            toclient_chunk: 2560,
            policy: OverlapPolicy::Bsd,
            midstream: false,
            inline: false,
        }
    }
}

impl StreamConfig {
    fn depth(&self) -> u64 {
        if self.depth == 0 {
            MAX_DEPTH
        } else {
            self.depth.min(MAX_DEPTH)
        }
    }
}

/// Connection state, in Suricata's order (comparisons rely on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum TcpState {
    #[default]
    None,
    SynSent,
    SynRecv,
    Established,
    FinWait1,
    FinWait2,
    TimeWait,
    LastAck,
    CloseWait,
    Closing,
    Closed,
}

impl TcpState {
    /// Suricata's name for the state (EVE `tcp.state`).
    pub fn name(self) -> &'static str {
        match self {
            TcpState::None => "none",
            TcpState::SynSent => "syn_sent",
            TcpState::SynRecv => "syn_recv",
            TcpState::Established => "established",
            TcpState::FinWait1 => "fin_wait1",
            TcpState::FinWait2 => "fin_wait2",
            TcpState::TimeWait => "time_wait",
            TcpState::LastAck => "last_ack",
            TcpState::CloseWait => "close_wait",
            TcpState::Closing => "closing",
            TcpState::Closed => "closed",
        }
    }
}

/// The TCP fields tracking needs from one packet.
#[derive(Debug, Clone, Copy)]
pub struct Segment<'a> {
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub wscale: Option<u8>,
    pub payload: &'a [u8],
}

/// One direction: the data one endpoint sends.
#[derive(Debug, Default)]
pub struct HalfStream {
    /// Initial sequence number.
    pub isn: u32,
    /// Sequence number of stream offset 0 (`isn + 1`).
    base_seq: u32,
    /// Highest sequence number sent plus one (data and FIN).
    pub next_seq: u32,
    /// Highest acknowledgement the peer sent for this data.
    pub last_ack: u32,
    /// Receive window this endpoint advertises (scaled): limits the peer.
    pub adv_window: u32,
    wscale: u8,
    wscale_offered: Option<u8>,
    pub fin_seen: bool,
    /// Reassembled data of this direction.
    pub buf: StreamBuffer,
    /// Offset up to which the raw stream has been inspected.
    pub raw_progress: u64,
    /// Offset up to which the application layer has consumed the stream
    /// (`None`: no app-layer parser holds this direction, so only raw
    /// inspection keeps data).
    pub app_progress: Option<u64>,
    /// Data beyond the reassembly depth arrived.
    pub depth_reached: bool,
    /// Payload bytes seen / not stored (depth, memory cap).
    pub bytes_seen: u64,
    /// The application layer completed a message of this direction: the
    /// next raw-stream window is not held back for a full chunk
    /// (Suricata's raw-inspection trigger). Cleared by the next
    /// inspection.
    pub raw_trigger: bool,
}

impl HalfStream {
    fn init(&mut self, isn: u32, window: u16, wscale: Option<u8>) {
        self.isn = isn;
        self.base_seq = isn.wrapping_add(1);
        self.next_seq = self.base_seq;
        self.last_ack = self.base_seq;
        self.adv_window = u32::from(window);
        self.wscale_offered = wscale;
    }

    /// Stream offset of a sequence number (negative: before the start).
    #[inline]
    fn rel(&self, seq: u32) -> i64 {
        i64::from(seq.wrapping_sub(self.base_seq) as i32)
    }

    /// Offset of the last acknowledged byte plus one.
    pub fn acked_offset(&self) -> u64 {
        self.rel(self.last_ack).max(0) as u64
    }

    /// Releases the data below both the raw and the app-layer progress.
    fn release_consumed(&mut self, mem: &mut StreamMemory) {
        let off = self.raw_progress.min(self.app_progress.unwrap_or(u64::MAX));
        self.buf.release_before(off, mem);
    }

    /// Whether reassembled data not yet inspected is present.
    pub fn has_unprocessed(&self) -> bool {
        self.buf.has_data_from(self.raw_progress)
    }

    /// Suricata's `stream_size` figure: `next_seq - isn`.
    pub fn seq_size(&self) -> u32 {
        self.next_seq.wrapping_sub(self.isn)
    }
}

#[inline]
fn seq_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[inline]
fn seq_geq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// What processing one packet did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    pub events: StreamEvents,
    /// The payload went into reassembly (Suricata's `PKT_STREAM_ADD`):
    /// rules that inspect the stream do not also inspect this packet.
    pub stream_added: bool,
    /// This packet completed the handshake.
    pub handshake_done: bool,
    /// A SYN that starts a new connection on a finished session (port
    /// reuse): the caller ends the flow and starts a new one.
    pub reuse: bool,
    /// Payload bytes not stored: beyond the depth, or memory cap.
    pub depth_dropped: u64,
    pub memcap_dropped: u64,
    /// The segment overlapped data already present.
    pub overlap: bool,
}

/// A TCP session: state plus both directions.
#[derive(Debug, Default)]
pub struct TcpSession {
    pub state: TcpState,
    pub client: HalfStream,
    pub server: HalfStream,
    four_whs: bool,
    midstream: bool,
    established_ever: bool,
    no_reassembly: bool,
}

/// A window of the raw stream ready for inspection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawWindow {
    /// Inspection starts here (the raw progress).
    pub from: u64,
    /// ... and covers data below this offset.
    pub to: u64,
}

impl TcpSession {
    pub fn new() -> Self {
        Self::default()
    }

    /// A packet that would open a session but travels "to client" in its
    /// flow (the flow was created by an earlier stray packet): the caller
    /// should swap the flow's direction first so that the SYN's sender
    /// becomes the client.
    pub fn starts_reversed(&self, flags: u8, to_server: bool) -> bool {
        self.state == TcpState::None && flags & (SYN | ACK | RST) == SYN && !to_server
    }

    /// A SYN from `from_client`'s side that starts a new connection on a
    /// finished session (TCP port reuse): the caller ends the flow and
    /// starts a new one with this packet.
    pub fn is_reuse(&self, flags: u8, seq: u32, from_client: bool) -> bool {
        let finished = matches!(
            self.state,
            TcpState::FinWait2
                | TcpState::TimeWait
                | TcpState::LastAck
                | TcpState::Closing
                | TcpState::Closed
        );
        finished && flags & (SYN | ACK | RST) == SYN && seq != self.half(from_client).isn
    }

    /// Stops keeping data (the flow is no longer inspected) and frees
    /// what is held.
    pub fn disable_reassembly(&mut self, mem: &mut StreamMemory) {
        self.no_reassembly = true;
        self.release(mem);
    }

    /// Whether a packet arriving now counts as established for
    /// `flow:established` (Suricata: the session reached the established
    /// state, whatever happened since; evaluated before the packet).
    pub fn flow_established(&self) -> bool {
        self.state >= TcpState::Established
    }

    /// The session is open in Suricata's flow-state sense (established
    /// and not yet in LastAck, TimeWait or Closed): for flow timeouts.
    pub fn is_open(&self) -> bool {
        matches!(
            self.state,
            TcpState::Established
                | TcpState::FinWait1
                | TcpState::FinWait2
                | TcpState::Closing
                | TcpState::CloseWait
        )
    }

    /// The session reached the established state at some point.
    pub fn established_ever(&self) -> bool {
        self.established_ever
    }

    /// Whether the session was picked up without a handshake.
    pub fn is_midstream(&self) -> bool {
        self.midstream
    }

    pub fn half(&self, client: bool) -> &HalfStream {
        if client {
            &self.client
        } else {
            &self.server
        }
    }

    fn halves(&mut self, from_client: bool) -> (&mut HalfStream, &mut HalfStream) {
        if from_client {
            (&mut self.client, &mut self.server)
        } else {
            (&mut self.server, &mut self.client)
        }
    }

    /// Processes one packet of the session. `from_client` is the packet's
    /// direction (client = SYN sender).
    pub fn process(
        &mut self,
        seg: &Segment<'_>,
        from_client: bool,
        cfg: &StreamConfig,
        mem: &mut StreamMemory,
        scratch: &mut InsertScratch,
    ) -> Outcome {
        let mut out = Outcome::default();
        let f = seg.flags;
        let (syn, ack, rst, fin) = (f & SYN != 0, f & ACK != 0, f & RST != 0, f & FIN != 0);
        if syn && fin {
            out.events.insert(StreamEvent::FinSyn);
        }
        match self.state {
            TcpState::None => {
                if rst {
                    out.events.insert(StreamEvent::RstButNoSession);
                } else if syn && !ack {
                    self.client.init(seg.seq, seg.window, seg.wscale);
                    self.state = TcpState::SynSent;
                } else if fin && !syn {
                    out.events.insert(StreamEvent::FinButNoSession);
                } else if ack && !syn && cfg.midstream {
                    self.pick_up_midstream(seg, from_client);
                    self.established(seg, from_client, cfg, mem, scratch, &mut out);
                }
                return out;
            }
            TcpState::SynSent => {
                self.syn_sent(seg, from_client, &mut out);
                return out;
            }
            _ => {}
        }
        // The handshake's last ACK may carry data: it goes on below.
        if self.state == TcpState::SynRecv && !self.syn_recv(seg, from_client, &mut out) {
            return out;
        }
        self.established(seg, from_client, cfg, mem, scratch, &mut out);
        out
    }

    fn pick_up_midstream(&mut self, seg: &Segment<'_>, from_client: bool) {
        let (snd, rcv) = self.halves(from_client);
        snd.init(seg.seq.wrapping_sub(1), seg.window, None);
        rcv.init(seg.ack.wrapping_sub(1), 0, None);
        rcv.adv_window = u32::MAX / 4;
        snd.adv_window = u32::MAX / 4;
        self.midstream = true;
        self.established_ever = true;
        self.state = TcpState::Established;
    }

    fn syn_sent(&mut self, seg: &Segment<'_>, from_client: bool, out: &mut Outcome) {
        let f = seg.flags;
        let (syn, ack, rst) = (f & SYN != 0, f & ACK != 0, f & RST != 0);
        if from_client {
            if rst {
                // As Suricata: the client's RST aborts the handshake only
                // when it is the answer to its own SYN (seq = ISN, window
                // 0, ack = ISN + 1); another (a reply to a stray ACK) is
                // ignored and the SYN may be resent.
                if seg.seq == self.client.isn
                    && seg.window == 0
                    && seg.ack == self.client.isn.wrapping_add(1)
                {
                    self.state = TcpState::Closed;
                }
            } else if syn && ack && self.four_whs {
                // Four-way handshake: the client answers the server's SYN.
                if seg.ack != self.server.isn.wrapping_add(1) {
                    out.events.insert(StreamEvent::FourWhsSynackWithWrongAck);
                    return;
                }
                if seg.seq != self.client.isn {
                    out.events.insert(StreamEvent::FourWhsSynackWithWrongSyn);
                    return;
                }
                self.server.last_ack = seg.ack;
                self.client.adv_window = u32::from(seg.window);
                self.negotiate_wscale(seg.wscale);
                self.state = TcpState::SynRecv;
            } else if syn && !ack && seg.seq != self.client.isn {
                // SYN resent with another ISN: follow the new one.
                self.client.init(seg.seq, seg.window, seg.wscale);
            }
            return;
        }
        if rst {
            if ack && seg.ack == self.client.isn.wrapping_add(1) {
                self.state = TcpState::Closed;
            } else {
                out.events.insert(StreamEvent::RstInvalidAck);
            }
        } else if syn && ack {
            if seg.ack != self.client.isn.wrapping_add(1) {
                out.events.insert(StreamEvent::ThreeWhsSynackWithWrongAck);
                return;
            }
            self.server.init(seg.seq, seg.window, seg.wscale);
            self.client.last_ack = seg.ack;
            let theirs = seg.wscale;
            self.negotiate_wscale(theirs);
            self.state = TcpState::SynRecv;
        } else if syn {
            // The server sends its own SYN: split (four-way) handshake.
            self.server.init(seg.seq, seg.window, seg.wscale);
            self.four_whs = true;
        }
    }

    /// Window scaling applies only when both SYNs offered it.
    fn negotiate_wscale(&mut self, responder: Option<u8>) {
        let (c, s) = if self.four_whs {
            (responder, self.server.wscale_offered)
        } else {
            (self.client.wscale_offered, responder)
        };
        if let (Some(c), Some(s)) = (c, s) {
            self.client.wscale = c.min(14);
            self.server.wscale = s.min(14);
        }
    }

    /// Returns true when the packet completed the handshake (and goes on
    /// to established processing).
    fn syn_recv(&mut self, seg: &Segment<'_>, from_client: bool, out: &mut Outcome) -> bool {
        let f = seg.flags;
        let (syn, ack, rst) = (f & SYN != 0, f & ACK != 0, f & RST != 0);
        if rst {
            self.state = TcpState::Closed;
            return false;
        }
        // In a four-way handshake the server sends the final ACK.
        let acker_is_client = !self.four_whs;
        if syn {
            if ack && from_client == acker_is_client {
                out.events
                    .insert(StreamEvent::ThreeWhsSynackInWrongDirection);
            } else if !ack && from_client && seg.seq != self.client.isn {
                out.events
                    .insert(StreamEvent::ThreeWhsSynResendDiffSeqOnSynRecv);
            } else if !ack && !from_client {
                out.events.insert(StreamEvent::ThreeWhsSynToclientOnSynRecv);
            }
            return false;
        }
        if !ack {
            return false;
        }
        if from_client != acker_is_client {
            out.events.insert(StreamEvent::ThreeWhsAckInWrongDir);
            return false;
        }
        let peer = if from_client {
            &self.server
        } else {
            &self.client
        };
        let want = peer.isn.wrapping_add(1);
        if seg.ack != want && !(seq_gt(seg.ack, want) && seq_geq(peer.next_seq, seg.ack)) {
            out.events.insert(StreamEvent::ThreeWhsWrongSeqWrongAck);
            return false;
        }
        self.state = TcpState::Established;
        self.established_ever = true;
        out.handshake_done = true;
        true
    }

    fn established(
        &mut self,
        seg: &Segment<'_>,
        from_client: bool,
        cfg: &StreamConfig,
        mem: &mut StreamMemory,
        scratch: &mut InsertScratch,
        out: &mut Outcome,
    ) {
        let f = seg.flags;
        let (syn, ack, rst, fin) = (f & SYN != 0, f & ACK != 0, f & RST != 0, f & FIN != 0);
        let state = self.state;
        if syn {
            let finished = matches!(
                state,
                TcpState::FinWait2
                    | TcpState::TimeWait
                    | TcpState::LastAck
                    | TcpState::Closing
                    | TcpState::Closed
            );
            let isn = if from_client {
                self.client.isn
            } else {
                self.server.isn
            };
            if !ack && finished && seg.seq != isn {
                out.reuse = true;
            } else if state == TcpState::Established {
                let e = match (ack, from_client, seg.seq == isn) {
                    (true, true, _) => StreamEvent::EstSynackToserver,
                    (true, false, true) => StreamEvent::EstSynackResend,
                    (true, false, false) => StreamEvent::EstSynackResendWithDiffSeq,
                    (false, false, _) => StreamEvent::EstSynToclient,
                    (false, true, true) => StreamEvent::EstSynResend,
                    (false, true, false) => StreamEvent::EstSynResendDiffSeq,
                };
                out.events.insert(e);
            } else if state >= TcpState::FinWait1 {
                out.events.insert(StreamEvent::ShutdownSynResend);
            }
            return;
        }
        if state == TcpState::Closed {
            return;
        }
        let midstream = self.midstream;
        let no_reassembly = self.no_reassembly;
        let (snd, rcv) = self.halves(from_client);
        if rst {
            // Accept a reset that lands inside the window the sender may use.
            let win = rcv.adv_window.max(1);
            let lo = snd.last_ack.wrapping_sub(win);
            let ok = midstream
                || (seq_geq(seg.seq, lo) && !seq_gt(seg.seq, snd.next_seq.wrapping_add(win)));
            if ok {
                self.state = TcpState::Closed;
            } else {
                out.events.insert(StreamEvent::RstInvalidAck);
            }
            return;
        }
        snd.adv_window = u32::from(seg.window) << snd.wscale;
        if ack && seq_gt(seg.ack, rcv.last_ack) {
            // An ACK may cover data we never saw (capture loss) but not
            // beyond what the acknowledging side allowed.
            let next_win = rcv.last_ack.wrapping_add(snd.adv_window);
            if midstream
                || !seq_gt(seg.ack, next_win)
                || !seq_gt(seg.ack, rcv.next_seq.wrapping_add(1))
            {
                rcv.last_ack = seg.ack;
                if seq_gt(seg.ack, rcv.next_seq) {
                    rcv.next_seq = seg.ack;
                }
            } else {
                out.events.insert(StreamEvent::PktInvalidAck);
            }
        }
        let len = seg.payload.len() as u32;
        if len > 0 && !no_reassembly {
            add_data(snd, rcv, seg, cfg, mem, scratch, midstream, out);
        } else if len > 0 && seq_gt(seg.seq.wrapping_add(len), snd.next_seq) {
            snd.next_seq = seg.seq.wrapping_add(len);
        }
        let end = seg.seq.wrapping_add(len);
        if fin {
            if !snd.fin_seen || seq_gt(end.wrapping_add(1), snd.next_seq) {
                snd.fin_seen = true;
            }
            if seq_gt(end.wrapping_add(1), snd.next_seq) {
                snd.next_seq = end.wrapping_add(1);
            }
            self.state = match (state, from_client) {
                (TcpState::Established, true) => TcpState::CloseWait,
                (TcpState::Established, false) => TcpState::FinWait1,
                (TcpState::FinWait1, true) => {
                    if ack && seq_geq(seg.ack, self.server.next_seq) {
                        TcpState::TimeWait
                    } else {
                        TcpState::Closing
                    }
                }
                (TcpState::FinWait2, true) => TcpState::TimeWait,
                (TcpState::CloseWait, false) => TcpState::LastAck,
                (s, _) => s,
            };
        } else if ack {
            let acks_server_fin =
                self.server.fin_seen && seq_geq(seg.ack, self.server.next_seq) && from_client;
            let acks_client_fin =
                self.client.fin_seen && seq_geq(seg.ack, self.client.next_seq) && !from_client;
            self.state = match state {
                TcpState::FinWait1 if acks_server_fin => TcpState::FinWait2,
                TcpState::Closing if acks_server_fin || acks_client_fin => TcpState::TimeWait,
                TcpState::LastAck if acks_server_fin => TcpState::Closed,
                TcpState::TimeWait if acks_client_fin => TcpState::Closed,
                s => s,
            };
        }
    }

    /// The raw-stream window a packet of direction `from_client` should
    /// inspect, if any (Suricata's IDS-mode raw reassembly): data not yet
    /// inspected, up to what the peer acknowledged, once at least a chunk
    /// of it is acknowledged, the depth was reached, or the session is
    /// closing; everything at the end of the flow (`eof`).
    pub fn raw_window(
        &self,
        from_client: bool,
        cfg: &StreamConfig,
        eof: bool,
    ) -> Option<RawWindow> {
        if !self.established_ever {
            return None;
        }
        let h = self.half(from_client);
        if !h.has_unprocessed() {
            return None;
        }
        if eof {
            return Some(RawWindow {
                from: h.raw_progress,
                to: u64::MAX,
            });
        }
        let chunk = if from_client {
            cfg.toserver_chunk
        } else {
            cfg.toclient_chunk
        };
        if cfg.inline {
            // Up to the end of the data present from the progress on (a
            // gap waits for its data), reaching back a chunk.
            let (s, e) = h.buf.ranges_in(h.raw_progress, u64::MAX).next()?;
            if s > h.raw_progress || e <= h.raw_progress {
                return None;
            }
            let from = h
                .raw_progress
                .saturating_sub(chunk)
                .max(h.buf.base())
                .max(h.buf.ranges_in(0, h.raw_progress).last().map_or(0, |r| r.0));
            return Some(RawWindow { from, to: e });
        }
        let acked = h.acked_offset();
        let flush = h.depth_reached || h.raw_trigger || self.state > TcpState::TimeWait;
        if !flush && acked < h.raw_progress.saturating_add(chunk) {
            return None;
        }
        (acked > h.raw_progress).then_some(RawWindow {
            from: h.raw_progress,
            to: acked,
        })
    }

    /// Records that the raw stream of a direction was inspected up to
    /// `progress` and releases the data below it.
    pub fn raw_inspected(&mut self, from_client: bool, progress: u64, mem: &mut StreamMemory) {
        self.raw_inspected_inline(from_client, progress, 0, mem);
    }

    /// [`TcpSession::raw_inspected`] for inline inspection: data a chunk
    /// back from the progress is kept for the next window's reach-back.
    pub fn raw_inspected_inline(
        &mut self,
        from_client: bool,
        progress: u64,
        keep: u64,
        mem: &mut StreamMemory,
    ) {
        let h = if from_client {
            &mut self.client
        } else {
            &mut self.server
        };
        h.raw_trigger = false;
        if progress > h.raw_progress {
            h.raw_progress = progress;
            let off = progress
                .saturating_sub(keep)
                .min(h.app_progress.unwrap_or(u64::MAX));
            h.buf.release_before(off, mem);
        }
    }

    /// Asks for the raw stream of a direction to be inspected at its next
    /// packet without waiting for a chunk (see [`HalfStream::raw_trigger`]).
    pub fn trigger_raw(&mut self, from_client: bool) {
        if from_client {
            self.client.raw_trigger = true;
        } else {
            self.server.raw_trigger = true;
        }
    }

    /// Records that the application layer consumed a direction up to
    /// `progress` (`None`: it stops following this direction) and
    /// releases the data both consumers are done with.
    pub fn app_consumed(
        &mut self,
        from_client: bool,
        progress: Option<u64>,
        mem: &mut StreamMemory,
    ) {
        let h = if from_client {
            &mut self.client
        } else {
            &mut self.server
        };
        h.app_progress = progress;
        h.release_consumed(mem);
    }

    /// Does the flow need a last inspection of direction `client` when it
    /// ends (Suricata's flow-timeout pseudo packets): always while the
    /// session is open, else when data was not inspected yet.
    pub fn needs_flush(&self, client: bool) -> bool {
        if !self.established_ever {
            return false;
        }
        if self.state >= TcpState::Established && self.state != TcpState::Closed {
            return true;
        }
        self.half(client).has_unprocessed()
    }

    /// Frees all reassembly memory.
    pub fn release(&mut self, mem: &mut StreamMemory) {
        self.client.buf.clear(mem);
        self.server.buf.clear(mem);
    }
}

#[allow(clippy::too_many_arguments)]
fn add_data(
    snd: &mut HalfStream,
    rcv: &HalfStream,
    seg: &Segment<'_>,
    cfg: &StreamConfig,
    mem: &mut StreamMemory,
    scratch: &mut InsertScratch,
    midstream: bool,
    out: &mut Outcome,
) {
    let len = seg.payload.len() as u32;
    let end = seg.seq.wrapping_add(len);
    // Suricata's window check: the segment must end within what the
    // receiver allowed (last ACK plus its advertised window).
    let next_win = snd.last_ack.wrapping_add(rcv.adv_window);
    if !midstream && seq_gt(end, next_win) && seq_gt(end, snd.next_seq) {
        out.events.insert(StreamEvent::EstPacketOutOfWindow);
        return;
    }
    snd.bytes_seen += u64::from(len);
    if !seq_gt(end, snd.next_seq) && !seq_gt(end, snd.last_ack) {
        out.events.insert(StreamEvent::PktRetransmission);
    }
    if seq_gt(end, snd.next_seq) {
        snd.next_seq = end;
    }
    let off = snd.rel(seg.seq);
    let mut data = seg.payload;
    let mut off_u = off;
    if off < 0 {
        let skip = (-off) as usize;
        if skip >= data.len() {
            out.events
                .insert(StreamEvent::ReassemblySegmentBeforeBaseSeq);
            return;
        }
        data = &data[skip..];
        off_u = 0;
    }
    let off_u = off_u as u64;
    let depth = cfg.depth();
    if off_u >= depth {
        if !snd.depth_reached {
            out.events.insert(StreamEvent::ReassemblyDepthReached);
        }
        snd.depth_reached = true;
        out.depth_dropped = data.len() as u64;
        return;
    }
    if off_u + data.len() as u64 > depth {
        let keep = (depth - off_u) as usize;
        out.depth_dropped = (data.len() - keep) as u64;
        data = &data[..keep];
        snd.depth_reached = true;
    }
    let ins = snd.buf.insert(off_u, data, cfg.policy, mem, scratch);
    if ins.different {
        out.events
            .insert(StreamEvent::ReassemblyOverlapDifferentData);
    }
    if ins.dropped > 0 {
        out.events.insert(StreamEvent::ReassemblyInsertMemcap);
    }
    out.overlap = ins.overlap;
    out.memcap_dropped = ins.dropped;
    out.stream_added = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Conn {
        s: TcpSession,
        cfg: StreamConfig,
        mem: StreamMemory,
        sc: InsertScratch,
    }

    impl Conn {
        fn new() -> Self {
            Conn {
                s: TcpSession::new(),
                cfg: StreamConfig::default(),
                mem: StreamMemory::new(1 << 24),
                sc: InsertScratch::default(),
            }
        }
        fn pkt(&mut self, client: bool, flags: u8, seq: u32, ack: u32, data: &[u8]) -> Outcome {
            let seg = Segment {
                seq,
                ack,
                flags,
                window: 65535,
                wscale: None,
                payload: data,
            };
            self.s
                .process(&seg, client, &self.cfg, &mut self.mem, &mut self.sc)
        }
        fn handshake(&mut self) {
            self.pkt(true, SYN, 100, 0, b"");
            self.pkt(false, SYN | ACK, 500, 101, b"");
            let o = self.pkt(true, ACK, 101, 501, b"");
            assert!(o.handshake_done);
        }
        fn text(&self, client: bool) -> Vec<u8> {
            let h = self.s.half(client);
            let mut v = Vec::new();
            for (s, e) in h.buf.ranges_in(0, u64::MAX) {
                h.buf.copy_out(s, e, &mut v);
            }
            v
        }
    }

    #[test]
    fn three_way_handshake_then_data_and_close() {
        let mut c = Conn::new();
        assert!(!c.s.flow_established());
        c.handshake();
        assert_eq!(c.s.state, TcpState::Established);
        assert!(c.s.flow_established() && c.s.is_open());
        let o = c.pkt(true, ACK | 0x08, 101, 501, b"hello ");
        assert!(o.stream_added);
        c.pkt(true, ACK | 0x08, 107, 501, b"world");
        assert_eq!(c.text(true), b"hello world");
        // Nothing acknowledged yet: no raw inspection before the end.
        assert_eq!(c.s.raw_window(true, &c.cfg, false), None);
        c.pkt(false, ACK, 501, 112, b"");
        assert_eq!(c.s.client.acked_offset(), 11);
        // Less than a chunk acknowledged: still waiting.
        assert_eq!(c.s.raw_window(true, &c.cfg, false), None);
        c.pkt(true, FIN | ACK, 112, 501, b"");
        assert_eq!(c.s.state, TcpState::CloseWait);
        // Closing: acknowledged data is inspected without waiting.
        assert_eq!(
            c.s.raw_window(true, &c.cfg, false),
            Some(RawWindow { from: 0, to: 11 })
        );
        c.s.raw_inspected(true, 11, &mut c.mem);
        c.pkt(false, FIN | ACK, 501, 113, b"");
        assert_eq!(c.s.state, TcpState::LastAck);
        assert!(c.s.flow_established() && !c.s.is_open());
        c.pkt(true, ACK, 113, 502, b"");
        assert_eq!(c.s.state, TcpState::Closed);
        assert!(!c.s.needs_flush(true));
        c.s.release(&mut c.mem);
        assert_eq!(c.mem.used(), 0);
    }

    #[test]
    fn chunk_of_acked_data_is_ready() {
        let mut c = Conn::new();
        c.handshake();
        let data = vec![b'a'; 3000];
        c.pkt(true, ACK, 101, 501, &data);
        c.pkt(false, ACK, 501, 101 + 3000, b"");
        assert_eq!(
            c.s.raw_window(true, &c.cfg, false),
            Some(RawWindow { from: 0, to: 3000 })
        );
        assert_eq!(c.s.raw_window(false, &c.cfg, false), None);
    }

    #[test]
    fn client_rst_to_a_stray_ack_keeps_syn_sent() {
        let mut c = Conn::new();
        c.pkt(true, SYN, 100, 0, b"");
        // The server answers with a bare ACK; the client resets it.
        c.pkt(false, ACK, 7000, 9000, b"");
        c.pkt(true, RST, 9000, 9000, b"");
        assert_ne!(c.s.state, TcpState::Closed);
        // The SYN is resent with the same ISN and the handshake goes on.
        c.pkt(true, SYN, 100, 0, b"");
        c.pkt(false, SYN | ACK, 500, 101, b"");
        let o = c.pkt(true, ACK, 101, 501, b"");
        assert!(o.handshake_done);
    }

    #[test]
    fn rst_data_is_not_added_and_closes() {
        let mut c = Conn::new();
        c.handshake();
        let o = c.pkt(false, RST, 501, 0, b"Access Denied");
        assert!(!o.stream_added);
        assert_eq!(c.s.state, TcpState::Closed);
        assert!(c.text(false).is_empty());
    }

    #[test]
    fn no_session_without_syn_unless_midstream() {
        let mut c = Conn::new();
        let o = c.pkt(true, ACK, 5, 9, b"data");
        assert!(!o.stream_added);
        assert_eq!(c.s.state, TcpState::None);
        let mut m = Conn::new();
        m.cfg.midstream = true;
        let o = m.pkt(true, ACK, 5, 9, b"data");
        assert!(o.stream_added);
        assert_eq!(m.text(true), b"data");
    }

    #[test]
    fn four_way_handshake() {
        let mut c = Conn::new();
        c.pkt(true, SYN, 1000, 0, b"");
        c.pkt(false, SYN, 3000, 0, b"");
        c.pkt(true, SYN | ACK, 1000, 3001, b"");
        let o = c.pkt(false, ACK, 3001, 1001, b"");
        assert!(o.handshake_done);
        let o = c.pkt(true, ACK, 1001, 3001, b"EVIL");
        assert!(o.stream_added);
    }

    #[test]
    fn overlap_with_different_data_raises_event() {
        let mut c = Conn::new();
        c.handshake();
        c.pkt(true, ACK, 101, 501, b"GOOD");
        let o = c.pkt(true, ACK, 101, 501, b"EVIL");
        assert!(o
            .events
            .contains(StreamEvent::ReassemblyOverlapDifferentData));
        assert_eq!(c.text(true), b"GOOD");
    }

    #[test]
    fn depth_limits_stored_data() {
        let mut c = Conn::new();
        c.cfg.depth = 10;
        c.handshake();
        let o = c.pkt(true, ACK, 101, 501, b"0123456789abcdef");
        assert_eq!(o.depth_dropped, 6);
        assert_eq!(c.text(true), b"0123456789");
        let o = c.pkt(true, ACK, 117, 501, b"more");
        assert!(!o.stream_added);
        assert_eq!(o.depth_dropped, 4);
    }

    #[test]
    fn port_reuse_is_reported() {
        let mut c = Conn::new();
        c.handshake();
        c.pkt(false, RST, 501, 0, b"");
        assert_eq!(c.s.state, TcpState::Closed);
        let o = c.pkt(true, SYN, 9999, 0, b"");
        assert!(o.reuse);
    }

    #[test]
    fn out_of_window_segment_is_refused() {
        let mut c = Conn::new();
        c.handshake();
        let o = c.pkt(true, ACK, 101 + 200_000, 501, b"far");
        assert!(o.events.contains(StreamEvent::EstPacketOutOfWindow));
        assert!(!o.stream_added);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Arbitrary packets never panic the tracker and never leak
        /// memory past the cap.
        #[test]
        fn arbitrary_packets(
            pkts in proptest::collection::vec(
                (any::<bool>(), any::<u32>(), any::<u32>(), any::<u8>(), any::<u16>(),
                 proptest::option::of(0u8..20), 0usize..600),
                1..80),
            base in any::<u32>(),
        ) {
            let cfg = StreamConfig { depth: 0, ..StreamConfig::default() };
            let mut mem = StreamMemory::new(256 * 1024);
            let mut sc = InsertScratch::default();
            let mut s = TcpSession::new();
            for &(client, seq, ack, flags, window, wscale, len) in &pkts {
                // Half the packets near a plausible sequence space.
                let seq = if seq % 2 == 0 { base.wrapping_add(seq % 100_000) } else { seq };
                let data = vec![0x41u8; len];
                let seg = Segment { seq, ack, flags, window, wscale, payload: &data };
                s.process(&seg, client, &cfg, &mut mem, &mut sc);
                prop_assert!(mem.used() <= mem.cap());
                for c in [true, false] {
                    if let Some(w) = s.raw_window(c, &cfg, false) {
                        prop_assert!(w.to > w.from);
                        s.raw_inspected(c, w.to.min(s.half(c).buf.right_edge()), &mut mem);
                    }
                }
            }
            s.release(&mut mem);
            prop_assert_eq!(mem.used(), 0);
        }
    }
}
