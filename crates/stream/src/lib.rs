//! vigil-stream: TCP session tracking and stream reassembly.
//!
//! Each worker owns the sessions of its flows. [`TcpSession`] follows the
//! connection state machine (three-way and split handshakes, FIN and RST
//! teardown, sequence, acknowledgement and window tracking) and feeds each
//! direction's accepted payload into a [`StreamBuffer`], which resolves
//! overlapping segments by an [`OverlapPolicy`] and stores data in blocks
//! from a per-worker [`StreamMemory`] with a hard byte cap. Anomalies are
//! reported as [`StreamEvent`]s with Suricata's names.
//!
//! When to inspect the reassembled data follows Suricata's IDS-mode raw
//! stream inspection ([`TcpSession::raw_window`]): acknowledged data once a
//! chunk of it has accumulated, at once while the connection closes or
//! after the depth is reached, and everything left when the flow ends.
//!
//! What it does not do: own flows (the worker's flow table does), run
//! detection, or parse application protocols. Everything is driven by the
//! packets given to it, so results depend only on packet order and content.

pub mod buffer;
pub mod events;
pub mod policy;
pub mod tcp;

pub use buffer::{InsertScratch, Inserted, StreamBuffer, StreamMemory, BLOCK_SIZE};
pub use events::{StreamEvent, StreamEvents};
pub use policy::OverlapPolicy;
pub use tcp::{HalfStream, Outcome, RawWindow, Segment, StreamConfig, TcpSession, TcpState};
