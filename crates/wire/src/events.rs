//! Decoder events (Suricata's names). Filled in by the decoder work.

/// One decoder anomaly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecoderEvent {}

/// A small fixed-size set of events raised while decoding one packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecoderEvents {}
