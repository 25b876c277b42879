//! The PostgreSQL parser (crates/applayer) over TCP (startup, authentication,
//! simple queries and their results, SSL requests, oversized
//! messages), fed in both directions with gaps and
//! stream ends; see `common/applayer.rs` for the input layout and the
//! invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Pgsql, Transport::Tcp, 5432, data);
});
