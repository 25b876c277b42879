//! The ENIP parser (crates/applayer: encapsulation, CIP, identity and
//! services) over TCP, fed in both directions with gaps and stream ends,
//! and the same operations as UDP datagrams; see `common/applayer.rs` for
//! the input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Enip, Transport::Tcp, 44818, data);
    common::applayer::run(AppProto::Enip, Transport::Udp, 44818, data);
});
