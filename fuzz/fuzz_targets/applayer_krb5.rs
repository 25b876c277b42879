//! The Kerberos 5 parser (crates/applayer, `kerberos-parser` underneath)
//! over TCP (4-byte record markers) and over UDP (a message per
//! datagram), fed in both directions with gaps and stream ends; see
//! `common/applayer.rs` for the input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Krb5, Transport::Tcp, 88, data);
    common::applayer::run(AppProto::Krb5, Transport::Udp, 88, data);
});
