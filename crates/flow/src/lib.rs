//! Flows: the key both directions of a conversation share, the symmetric
//! hash that pins a flow to one worker, and the per-worker flow table.
//!
//! The flow table is owned by exactly one worker and has no locks. Time is
//! packet time, never wall time, so results are repeatable: a flow whose
//! idle time has passed its timeout when its next packet arrives is treated
//! as ended, and a new flow starts, whatever else the worker was doing.
//! The table's memory is capped by a flow count; when it is full the least
//! recently seen flow is evicted and the eviction is counted.
//!
//! What it does not do: TCP state tracking or stream reassembly (the worker
//! keeps those in the per-flow state `T`).

mod hash;
mod rate;
mod table;

pub use hash::{addr_bits, bits_addr, flow_hash, pair_hash, FlowKey};
pub use rate::{FlowRate, RateConfig, MAX_INTERVAL as RATE_MAX_INTERVAL};
pub use table::{
    Direction, EndReason, Flow, FlowCounters, FlowLookup, FlowTable, FlowTimeouts, Lifecycle,
    TimeoutTable,
};
