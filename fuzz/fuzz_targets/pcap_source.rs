//! The capture reader (crates/source: classic pcap and pcapng through
//! `pcap-parser`) on hostile files. The input is written to a temporary
//! file (the reader only opens paths) and read to the end or the first
//! error; the first byte chooses between one file and a directory of two
//! files (the input cut in two at the second byte), which the reader
//! reads as one stream.
//!
//! Invariants: no panic, no endless loop (reading stops after a bounded
//! number of packets); every packet's data fits in the input; timestamps
//! are normalised (nanoseconds below 1e9); packet indexes count up from
//! 1; bytes read never exceed the input size. Every packet is then
//! decoded.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use vigil_source::PcapSource;

fn scratch() -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    base.join(format!("vigil-fuzz-pcap-{}", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let root = scratch();
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_file(&root);
    let path = if sel & 1 == 0 {
        std::fs::write(&root, body).expect("write scratch file");
        root.clone()
    } else {
        let cut = body
            .first()
            .map_or(0, |&c| usize::from(c) * body.len() / 256);
        std::fs::create_dir(&root).expect("scratch dir");
        std::fs::write(root.join("a"), &body[..cut]).expect("write a");
        std::fs::write(root.join("b"), &body[cut..]).expect("write b");
        root.clone()
    };
    if let Ok(mut src) = PcapSource::open(&path) {
        let total = src.total_bytes();
        assert_eq!(total, body.len() as u64);
        let mut n = 0u64;
        // A record is at least 12 bytes (a pcapng simple packet block), so
        // no input can hold more packets than this.
        let bound = body.len() as u64 / 12 + 1;
        // Up to the end or the first error.
        while let Ok(Some(p)) = src.next_packet() {
            n += 1;
            assert!(n <= bound, "more packets than the input can hold");
            assert_eq!(p.index, n);
            assert!(p.data.len() <= body.len());
            assert!(p.ts.nanos < 1_000_000_000);
            if let Some(l) = p.lent {
                assert_eq!(l.window.bytes(l.off, p.data.len() as u32), p.data);
            }
            let pkt = vigil_wire::decode(p.linktype, p.data);
            std::hint::black_box(pkt.payload());
            assert!(src.bytes_read() <= total, "read past the input");
        }
        assert!(src.bytes_read() <= total, "read past the input");
        assert_eq!(src.packets_read(), n);
        let _ = src.truncated_records();
    }
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_file(&root);
});
