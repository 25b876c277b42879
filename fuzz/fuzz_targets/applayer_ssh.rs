//! The SSH parser (crates/applayer) over TCP (banners, then binary
//! packets: KEXINIT with its HASSH inputs, NEWKEYS, the encrypted rest),
//! fed in both directions with gaps and stream ends; see
//! `common/applayer.rs` for the input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Ssh, Transport::Tcp, 22, data);
});
