//! Shared driver of the app-layer targets: the input is a sequence of
//! operations, each led by a control byte whose bit 0 is the direction
//! (0: to server). With bits 1 and 7 both set it is a control operation
//! and takes no data: bit 6 clear is a gap in that direction (of
//! `(ctl & 0x1c) * 64` bytes when bit 5 is set, else of unknown length),
//! bit 6 set ends that direction. Otherwise the next `(ctl >> 2) * 7 + 1`
//! bytes (up to 442) are data: a stream piece over TCP, one datagram over
//! UDP. Protocol detection is fed the same data.
//!
//! Now and then, and at the end, every buffer of every transaction is read
//! in both directions and each EVE object is serialised and parsed back,
//! as detection and logging would, and transactions are marked done and
//! pruned.
//!
//! Invariants: no panic; transaction ids strictly increase; no more
//! transactions than the configured cap; HTTP bodies within the body
//! limits; DCERPC stub data, SMB file data and SMTP MIME parts within their caps; every EVE object is a JSON object that survives a round trip.

use vigil_applayer::{
    AppLayerConfig, AppLayerState, AppProto, BufferId, Direction, ProtocolDetector, Transport,
};

use BufferId::*;

pub fn run(proto: AppProto, transport: Transport, port: u16, mut rest: &[u8]) {
    let cfg = AppLayerConfig::default();
    let mut st = AppLayerState::with_config(proto, transport, &cfg);
    let mut det = ProtocolDetector::new(transport, port);
    let mut ts = 0u64;
    while let Some((&ctl, tail)) = rest.split_first() {
        let dir = if ctl & 1 == 0 {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        ts += 1;
        if ctl & 0x82 == 0x82 {
            rest = tail;
            if ctl & 0x40 == 0 {
                let len = (ctl & 0x20 != 0).then_some(u64::from(ctl & 0x1c) * 64);
                let _ = st.on_gap(dir, len);
            } else {
                let _ = st.finish(dir);
            }
        } else {
            let n = (usize::from(ctl >> 2) * 7 + 1).min(tail.len());
            let (chunk, tail) = tail.split_at(n);
            rest = tail;
            let _ = st.feed(dir, chunk, ts);
            let _ = det.feed(dir, chunk);
        }
        // Reading everything back after every operation costs more than
        // the parsing; every 8th is enough to catch states in between.
        if ts.is_multiple_of(8) {
            check(&mut st, &cfg);
        }
    }
    let _ = det.finish();
    let _ = st.finish(Direction::ToServer);
    let _ = st.finish(Direction::ToClient);
    check(&mut st, &cfg);
}

fn check(st: &mut AppLayerState, cfg: &AppLayerConfig) {
    let txs = st.transactions();
    assert!(
        txs.len() <= cfg.max_transactions,
        "{} transactions held, cap {}",
        txs.len(),
        cfg.max_transactions
    );
    for w in txs.windows(2) {
        assert!(w[0].id < w[1].id, "transaction ids out of order");
    }
    for tx in &txs {
        for &id in BufferId::ALL {
            for dir in [Direction::ToServer, Direction::ToClient] {
                let one = st.buffer(tx.id, id, dir);
                std::hint::black_box(one);
                let n = st.buffers(tx.id, id, dir).count();
                std::hint::black_box(n);
            }
        }
        if let Some(b) = st.buffer(tx.id, HttpRequestBody, Direction::ToServer) {
            assert!(
                b.len() <= cfg.http_request_body_limit,
                "request body {}",
                b.len()
            );
        }
        if let Some(b) = st.buffer(tx.id, HttpResponseBody, Direction::ToClient) {
            assert!(
                b.len() <= cfg.http_response_body_limit,
                "response body {}",
                b.len()
            );
        }
        for dir in [Direction::ToServer, Direction::ToClient] {
            if let Some(b) = st.buffer(tx.id, DcerpcStubData, dir) {
                assert!(b.len() <= cfg.dcerpc_max_stub, "stub data {}", b.len());
            }
        }
        for &f in vigil_applayer::UintField::ALL {
            std::hint::black_box(st.uints(tx.id, f, Direction::ToServer));
        }
        // Files (HTTP bodies and multipart uploads, SMB, SMTP, FTP data):
        // listed and tracked (hashes, state) without panicking; a file's
        // size is the data the parser kept.
        for dir in [Direction::ToServer, Direction::ToClient] {
            for f in vigil_applayer::files::tx_files(st, tx.id, dir) {
                let t = vigil_applayer::files::track(&f, 0x7, false, true, false);
                assert_eq!(t.size, f.data.len() as u64);
                std::hint::black_box(t.eve(tx.id, None));
            }
        }
        for dir in [Direction::ToServer, Direction::ToClient] {
            if let Some(b) = st.buffer(tx.id, FileData, dir).filter(|_| st.as_smb().is_some()) {
                let cap = vigil_applayer::smb::MAX_FILE_DATA;
                assert!(b.len() <= cap, "SMB file data {}", b.len());
            }
        }
        if st.proto() == AppProto::Smtp {
            let mut total = 0;
            for b in st.buffers(tx.id, FileData, Direction::ToServer) {
                let cap = vigil_applayer::smtp::mime::MAX_PART_DATA;
                assert!(b.len() <= cap, "SMTP part data {}", b.len());
                total += b.len();
            }
            let cap = vigil_applayer::smtp::mime::MAX_MESSAGE_DATA;
            assert!(total <= cap, "SMTP message data {total}");
        }
        let _ = st.tx_events(tx.id);
        let siblings = st.eve_siblings(tx.id).into_iter().map(|(_, v)| v);
        for v in st.eve(tx.id).into_iter().chain(siblings) {
            assert!(v.is_object(), "EVE record is not an object: {v}");
            let text = v.to_string();
            let back: serde_json::Value = serde_json::from_str(&text).expect("EVE round trip");
            assert_eq!(back, v);
        }
        if tx.progress.request_complete && tx.progress.response_complete {
            st.set_inspected(tx.id, Direction::ToServer);
            st.set_inspected(tx.id, Direction::ToClient);
            st.set_logged(tx.id);
        }
    }
    st.prune();
}
