//! The NFS parser (crates/applayer: ONC RPC record marking and fragments,
//! NFSv2/v3 procedures, NFSv4 COMPOUND ops, READ/WRITE file transfers)
//! over TCP, fed in both directions with gaps and stream ends, and the
//! same operations as UDP datagrams; see `common/applayer.rs` for the
//! input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Nfs, Transport::Tcp, 2049, data);
    common::applayer::run(AppProto::Nfs, Transport::Udp, 2049, data);
});
