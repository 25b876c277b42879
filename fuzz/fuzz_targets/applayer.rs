//! Fuzzes the app-layer parsers: the first byte picks the protocol and
//! transport, the rest is cut into chunks whose first byte gives the
//! direction and length, fed as stream pieces (or datagrams), with gaps
//! and stream ends thrown in. Every buffer and the EVE object of every
//! transaction are read back, as detection and logging would.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_applayer::{AppLayerState, AppProto, BufferId, Direction, ProtocolDetector, Transport};

const BUFFERS: &[&str] = &[
    "http.method", "http.uri", "http.uri.raw", "http.request_line", "http.header",
    "http.header.raw", "http.header_names", "http.host", "http.user_agent", "http.cookie",
    "http.request_body", "http.stat_code", "http.response_body", "http.request_header",
    "http.response_header", "file.data", "dns.query", "dns.answers.rrname",
    "dns.response.rrname", "tls.sni", "tls.cert_subject", "tls.cert_issuer", "tls.certs",
    "ja3.hash", "ja3s.hash", "ja4.hash",
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let (proto, transport) = match sel % 4 {
        0 => (AppProto::Http, Transport::Tcp),
        1 => (AppProto::Tls, Transport::Tcp),
        2 => (AppProto::Dns, Transport::Udp),
        _ => (AppProto::Dns, Transport::Tcp),
    };
    let mut st = AppLayerState::new(proto, transport);
    let mut det = ProtocolDetector::new(transport, u16::from(sel));
    let mut ts = 0u64;
    while let Some((&ctl, tail)) = rest.split_first() {
        let dir = if ctl & 1 == 0 { Direction::ToServer } else { Direction::ToClient };
        let n = ((ctl >> 2) as usize * 7 + 1).min(tail.len());
        let (chunk, tail) = tail.split_at(n);
        rest = tail;
        ts += 1;
        match ctl & 3 {
            2 if ctl & 0x80 != 0 => {
                st.on_gap(dir);
            }
            3 if ctl & 0x80 != 0 => {
                st.finish(dir);
            }
            _ => {
                st.feed(dir, chunk, ts);
                det.feed(dir, chunk);
            }
        }
    }
    det.finish();
    for tx in st.transactions() {
        for name in BUFFERS {
            let id = BufferId::from_keyword(name).expect("known buffer");
            for dir in [Direction::ToServer, Direction::ToClient] {
                let _ = st.buffer(tx.id, id, dir);
                for b in st.buffers(tx.id, id, dir) {
                    std::hint::black_box(b);
                }
            }
        }
        let _ = st.eve(tx.id).map(|v| v.to_string());
    }
    st.prune();
});
