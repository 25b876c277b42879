//! The DNP3 parser (crates/applayer: link layer with CRCs, transport
//! reassembly, application header and object headers) over TCP, fed in
//! both directions with gaps and stream ends; see `common/applayer.rs`
//! for the input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Dnp3, Transport::Tcp, 20000, data);
});
