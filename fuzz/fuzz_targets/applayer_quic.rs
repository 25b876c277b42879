//! The QUIC parser (crates/applayer) over UDP (headers, Initial packet
//! decryption, CRYPTO reassembly, TLS hellos, gQUIC tags), fed datagrams
//! in both directions; see `common/applayer.rs` for the input layout and
//! the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Quic, Transport::Udp, 443, data);
});
