//! The Modbus parser (crates/applayer: MBAP and PDUs through
//! `sawp-modbus`, request/response pairing, events) over TCP, fed in both
//! directions with gaps and stream ends; see `common/applayer.rs` for the
//! input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Modbus, Transport::Tcp, 502, data);
});
