//! The BitTorrent DHT parser (crates/applayer) over UDP (one bencoded
//! KRPC message per datagram, `bendy`), fed in both directions; see
//! `common/applayer.rs` for the input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::BittorrentDht, Transport::Udp, 6881, data);
});
