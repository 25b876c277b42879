//! Detection on application-layer transactions: rules that inspect sticky
//! buffers (`http.uri`, `dns.query`, `tls.sni` ...) run against the
//! transactions the app-layer parsers build, fire at most once per
//! transaction, and are prefiltered per buffer type.

pub use vigil_applayer::{AppLayerState, AppProto, Direction as AppDir, TxId};

use crate::inspect::{DetectScratch, FlowDetectState, Hit, PacketInput};
use crate::DetectEngine;

/// What is known of a flow's application protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AppProtoState {
    /// Detection has not decided yet.
    #[default]
    Unknown,
    Detected(AppProto),
    /// Every probe rejected the flow (Suricata's `failed`).
    Failed,
}

impl AppProtoState {
    /// The protocol, when detected.
    pub fn proto(self) -> Option<AppProto> {
        match self {
            AppProtoState::Detected(p) => Some(p),
            _ => None,
        }
    }
}

/// One transaction of a flow, inspected in one direction.
#[derive(Clone, Copy)]
pub struct TxInput<'a> {
    pub app: &'a AppLayerState,
    pub tx: TxId,
    pub dir: AppDir,
}

/// Per-transaction detection state the worker keeps: which rules already
/// fired on it (a transaction rule fires once per transaction).
#[derive(Debug, Default, Clone)]
pub struct TxDetectState {
    pub fired: Vec<u32>,
}

impl DetectEngine {
    /// Whether any loaded rule inspects transactions of `proto`.
    pub fn has_tx_rules(&self, _proto: AppProto) -> bool {
        false
    }

    /// Inspects one direction of a transaction on the current packet
    /// (`input`): prefilter over the transaction's buffers, then full
    /// verification of each candidate rule in rule order. Rules that
    /// match and alert are appended to `alerts` with `tx` set; rules
    /// already in `txst.fired` are skipped and new matches are added to
    /// it. Updates flowbits in `state`. Returns true when a `pass` rule
    /// matched.
    pub fn inspect_tx(
        &self,
        _input: PacketInput<'_, '_>,
        _tx: TxInput<'_>,
        _txst: &mut TxDetectState,
        _state: Option<&mut FlowDetectState>,
        _scratch: &mut DetectScratch,
        _alerts: &mut Vec<Hit>,
    ) -> bool {
        false
    }
}
