//! The HTTP/2 parser (crates/applayer): the client preface, frames and
//! HPACK header blocks in both directions, with gaps and stream ends;
//! see `common/applayer.rs` for the input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Http2, Transport::Tcp, 80, data);
});
