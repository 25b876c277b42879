//! The mDNS parser (crates/applayer, DNS messages with mDNS's events,
//! buffers and records) over UDP (a message per datagram), fed in both
//! directions; see `common/applayer.rs` for the input layout and the
//! invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Mdns, Transport::Udp, 5353, data);
});
