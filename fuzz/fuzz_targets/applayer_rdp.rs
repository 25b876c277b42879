//! The RDP parser (crates/applayer) over TCP (TPKT records: X.224
//! connection request and confirm, MCS Connect Initial with its client
//! data, Connect Response), fed in both directions with gaps and stream
//! ends; see `common/applayer.rs` for the input layout and the
//! invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Rdp, Transport::Tcp, 3389, data);
});
