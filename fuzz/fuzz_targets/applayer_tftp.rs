//! The TFTP parser (crates/applayer: read and write requests) as UDP
//! datagrams in both directions; see `common/applayer.rs` for the input
//! layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Tftp, Transport::Udp, 69, data);
});
