//! The LDAP parser (crates/applayer: messages framed by their BER
//! length, decoded by `ldap-parser`, requests matched with responses) over
//! TCP, fed in both directions with gaps and stream ends, and the same
//! operations as UDP (CLDAP) datagrams; see `common/applayer.rs` for the
//! input layout and the invariants.
#![no_main]

mod common {
    pub mod applayer;
}

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppProto, Transport};

fuzz_target!(|data: &[u8]| {
    common::applayer::run(AppProto::Ldap, Transport::Tcp, 389, data);
    common::applayer::run(AppProto::Ldap, Transport::Udp, 389, data);
});
