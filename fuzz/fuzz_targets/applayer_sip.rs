//! The SIP parser (crates/applayer) over TCP (header and Content-Length
//! framing) and over UDP (a message per datagram), fed in both directions
//! with gaps and stream ends; see `common/applayer.rs` for the input
//! layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Sip, Transport::Tcp, 5060, data);
    common::applayer::run(AppProto::Sip, Transport::Udp, 5060, data);
});
