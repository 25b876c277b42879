//! Stream events: the TCP tracking and reassembly anomalies Suricata
//! reports, with its names (`stream-event:` rules and the `stream.`
//! counters use them).

use std::fmt;

macro_rules! stream_events {
    ($( $variant:ident => $name:literal, )+) => {
        /// One stream anomaly, named as in Suricata's `decode-events.c`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum StreamEvent {
            $( $variant, )+
        }

        impl StreamEvent {
            /// Every event, in declaration order.
            pub const ALL: &'static [StreamEvent] = &[ $( StreamEvent::$variant, )+ ];

            /// Suricata's full name (`stream.3whs_ack_in_wrong_dir`).
            pub const fn name(self) -> &'static str {
                match self {
                    $( StreamEvent::$variant => $name, )+
                }
            }

            /// Looks an event up by name, with or without the `stream.`
            /// prefix (rules write `stream-event:3whs_ack_in_wrong_dir`).
            pub fn from_name(name: &str) -> Option<StreamEvent> {
                let full = name.trim();
                let short = full.strip_prefix("stream.").unwrap_or(full);
                Self::ALL
                    .iter()
                    .copied()
                    .find(|e| e.name().strip_prefix("stream.") == Some(short))
            }
        }
    };
}

stream_events! {
    ThreeWhsAckInWrongDir => "stream.3whs_ack_in_wrong_dir",
    ThreeWhsAsyncWrongSeq => "stream.3whs_async_wrong_seq",
    ThreeWhsRightSeqWrongAckEvasion => "stream.3whs_right_seq_wrong_ack_evasion",
    ThreeWhsSynackInWrongDirection => "stream.3whs_synack_in_wrong_direction",
    ThreeWhsSynackResendWithDiffAck => "stream.3whs_synack_resend_with_diff_ack",
    ThreeWhsSynackResendWithDiffSeq => "stream.3whs_synack_resend_with_diff_seq",
    ThreeWhsSynackToserverOnSynRecv => "stream.3whs_synack_toserver_on_syn_recv",
    ThreeWhsSynackWithWrongAck => "stream.3whs_synack_with_wrong_ack",
    ThreeWhsSynackFlood => "stream.3whs_synack_flood",
    ThreeWhsSynResendDiffSeqOnSynRecv => "stream.3whs_syn_resend_diff_seq_on_syn_recv",
    ThreeWhsSynToclientOnSynRecv => "stream.3whs_syn_toclient_on_syn_recv",
    ThreeWhsWrongSeqWrongAck => "stream.3whs_wrong_seq_wrong_ack",
    ThreeWhsAckDataInject => "stream.3whs_ack_data_inject",
    FourWhsSynackWithWrongAck => "stream.4whs_synack_with_wrong_ack",
    FourWhsSynackWithWrongSyn => "stream.4whs_synack_with_wrong_syn",
    FourWhsWrongSeq => "stream.4whs_wrong_seq",
    FourWhsInvalidAck => "stream.4whs_invalid_ack",
    CloseWaitAckOutOfWindow => "stream.closewait_ack_out_of_window",
    CloseWaitFinOutOfWindow => "stream.closewait_fin_out_of_window",
    CloseWaitPktBeforeLastAck => "stream.closewait_pkt_before_last_ack",
    CloseWaitInvalidAck => "stream.closewait_invalid_ack",
    ClosingAckWrongSeq => "stream.closing_ack_wrong_seq",
    ClosingInvalidAck => "stream.closing_invalid_ack",
    EstPacketOutOfWindow => "stream.est_packet_out_of_window",
    EstPktBeforeLastAck => "stream.est_pkt_before_last_ack",
    EstSynackResend => "stream.est_synack_resend",
    EstSynackResendWithDifferentAck => "stream.est_synack_resend_with_different_ack",
    EstSynackResendWithDiffSeq => "stream.est_synack_resend_with_diff_seq",
    EstSynackToserver => "stream.est_synack_toserver",
    EstSynResend => "stream.est_syn_resend",
    EstSynResendDiffSeq => "stream.est_syn_resend_diff_seq",
    EstSynToclient => "stream.est_syn_toclient",
    EstInvalidAck => "stream.est_invalid_ack",
    FinInvalidAck => "stream.fin_invalid_ack",
    Fin1AckWrongSeq => "stream.fin1_ack_wrong_seq",
    Fin1FinWrongSeq => "stream.fin1_fin_wrong_seq",
    Fin1InvalidAck => "stream.fin1_invalid_ack",
    Fin2AckWrongSeq => "stream.fin2_ack_wrong_seq",
    Fin2FinWrongSeq => "stream.fin2_fin_wrong_seq",
    Fin2InvalidAck => "stream.fin2_invalid_ack",
    FinButNoSession => "stream.fin_but_no_session",
    FinOutOfWindow => "stream.fin_out_of_window",
    FinSyn => "stream.fin_syn",
    LastAckAckWrongSeq => "stream.lastack_ack_wrong_seq",
    LastAckInvalidAck => "stream.lastack_invalid_ack",
    RstButNoSession => "stream.rst_but_no_session",
    TimeWaitAckWrongSeq => "stream.timewait_ack_wrong_seq",
    TimeWaitInvalidAck => "stream.timewait_invalid_ack",
    ShutdownSynResend => "stream.shutdown_syn_resend",
    PktInvalidTimestamp => "stream.pkt_invalid_timestamp",
    PktInvalidAck => "stream.pkt_invalid_ack",
    PktBrokenAck => "stream.pkt_broken_ack",
    RstInvalidAck => "stream.rst_invalid_ack",
    PktRetransmission => "stream.pkt_retransmission",
    PktSpuriousRetransmission => "stream.pkt_spurious_retransmission",
    PktBadWindowUpdate => "stream.pkt_bad_window_update",
    SuspectedRstInject => "stream.suspected_rst_inject",
    WrongThread => "stream.wrong_thread",
    ReassemblySegmentBeforeBaseSeq => "stream.reassembly_segment_before_base_seq",
    ReassemblyNoSegment => "stream.reassembly_no_segment",
    ReassemblySeqGap => "stream.reassembly_seq_gap",
    ReassemblyOverlapDifferentData => "stream.reassembly_overlap_different_data",
    ReassemblyDepthReached => "stream.reassembly_depth_reached",
    ReassemblyInsertMemcap => "stream.reassembly_insert_memcap",
}

impl fmt::Display for StreamEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const _: () = assert!(StreamEvent::ALL.len() <= 128);

/// The set of stream events raised by one packet: `Copy`, one bit each.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StreamEvents(u128);

impl StreamEvents {
    pub const fn new() -> Self {
        StreamEvents(0)
    }
    #[inline]
    pub fn insert(&mut self, e: StreamEvent) {
        self.0 |= 1u128 << (e as u8);
    }
    #[inline]
    pub fn contains(&self, e: StreamEvent) -> bool {
        self.0 & (1u128 << (e as u8)) != 0
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }
    pub fn extend_from(&mut self, o: &StreamEvents) {
        self.0 |= o.0;
    }
    /// The events in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = StreamEvent> + '_ {
        // Most packets raise none: do not walk the list for them.
        let n = if self.is_empty() {
            0
        } else {
            StreamEvent::ALL.len()
        };
        StreamEvent::ALL[..n]
            .iter()
            .copied()
            .filter(|e| self.contains(*e))
    }
}

impl fmt::Debug for StreamEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_with_and_without_prefix() {
        for e in StreamEvent::ALL {
            assert_eq!(StreamEvent::from_name(e.name()), Some(*e));
            let short = e.name().strip_prefix("stream.").unwrap();
            assert_eq!(StreamEvent::from_name(short), Some(*e));
        }
        assert_eq!(StreamEvent::from_name("nope"), None);
    }

    #[test]
    fn set_ops() {
        let mut s = StreamEvents::new();
        assert!(s.is_empty());
        s.insert(StreamEvent::ReassemblyOverlapDifferentData);
        s.insert(StreamEvent::ThreeWhsAckInWrongDir);
        assert!(s.contains(StreamEvent::ReassemblyOverlapDifferentData));
        assert!(!s.contains(StreamEvent::FinSyn));
        let v: Vec<_> = s.iter().collect();
        assert_eq!(
            v,
            vec![
                StreamEvent::ThreeWhsAckInWrongDir,
                StreamEvent::ReassemblyOverlapDifferentData
            ]
        );
    }
}
