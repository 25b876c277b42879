//! The POP3 parser (crates/applayer) over TCP (commands, single and
//! multi-line responses, RETR mail through the MIME decoder, AUTH, STLS),
//! fed in both directions with gaps and stream ends; see
//! `common/applayer.rs` for the input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Pop3, Transport::Tcp, 110, data);
});
