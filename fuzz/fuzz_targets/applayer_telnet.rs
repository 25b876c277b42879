//! The telnet parser (crates/applayer) over TCP (IAC commands, option
//! negotiation, subnegotiation, lines), fed in both directions with gaps
//! and stream ends; see `common/applayer.rs` for the input layout and the
//! invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Telnet, Transport::Tcp, 23, data);
});
