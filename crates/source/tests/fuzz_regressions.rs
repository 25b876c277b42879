//! Inputs the fuzz targets (fuzz/fuzz_targets/pcap_source.rs) found that
//! made the reader panic; each must now give a clear error.

use std::fs;
use std::path::PathBuf;

use vigil_source::{PcapSource, SourceError};

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vigil-source-fuzz-regressions");
    fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

/// A pcapng block: type, total length, body, total length, in the byte
/// order given; `len` overrides the length fields.
fn block(be: bool, ty: u32, body: &[u8], len: Option<u32>) -> Vec<u8> {
    let n = len.unwrap_or(12 + body.len() as u32);
    let w = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut b = Vec::new();
    b.extend_from_slice(&w(ty));
    b.extend_from_slice(&w(n));
    b.extend_from_slice(body);
    b.extend_from_slice(&w(n));
    b
}

/// Section header, an Ethernet interface and one enhanced packet block.
fn one_packet_section(be: bool) -> Vec<u8> {
    let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut shb = Vec::new();
    shb.extend_from_slice(&w32(0x1A2B_3C4D));
    shb.extend_from_slice(&w16(1));
    shb.extend_from_slice(&w16(0));
    shb.extend_from_slice(&[0xff; 8]);
    let mut idb = Vec::new();
    idb.extend_from_slice(&w16(1));
    idb.extend_from_slice(&w16(0));
    idb.extend_from_slice(&w32(65535));
    let frame = [0u8; 60];
    let mut epb = Vec::new();
    for v in [0, 0, 1, 60, 60] {
        epb.extend_from_slice(&w32(v));
    }
    epb.extend_from_slice(&frame);
    let mut out = block(be, 0x0A0D_0D0A, &shb, None);
    out.extend(block(be, 1, &idb, None));
    out.extend(block(be, 6, &epb, None));
    out
}

/// pcap-parser subtracts 12 from a process information block's length
/// without checking it (its minimum for that block is 4): a length of 4
/// to 11 overflowed (a panic with overflow checks; in release, a huge
/// read that ended the file as "truncated"). The reader refuses any
/// block shorter than 12 bytes as malformed, naming the length.
#[test]
fn pcapng_block_shorter_than_its_12_byte_frame_is_malformed() {
    for be in [false, true] {
        for len in [4u32, 6, 8, 11] {
            let mut file = one_packet_section(be);
            // Process information block (0x80000001), then padding so that
            // the parser has the bytes it asks for.
            file.extend(block(be, 0x8000_0001, &[0; 4], Some(len)));
            file.extend_from_slice(&[0; 16]);
            let path = write(&format!("short-pib-{be}-{len}.pcapng"), &file);
            let mut src = PcapSource::open(&path).unwrap();
            assert_eq!(src.next_packet().unwrap().map(|p| p.data.len()), Some(60));
            match src.next_packet() {
                Err(SourceError::Malformed { detail, offset, .. }) => {
                    assert!(detail.contains(&format!("block length {len}")), "{detail}");
                    assert_eq!(offset, one_packet_section(be).len() as u64);
                }
                other => panic!("be={be} len={len}: expected Malformed, got {other:?}"),
            }
        }
    }
}

/// The input the fuzzer found, as it was (little endian, length 6).
#[test]
fn fuzz_found_short_process_information_block() {
    let bytes: &[u8] = &[
        0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0x00, 0x00, 0x00, 0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00, 0x00,
        0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1c, 0x00, 0x00, 0x00, 0x01, 0x00,
        0x00, 0x80, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x65, 0xab, 0x00,
        0x00, 0x00, 0xff, 0x01, 0xd4, 0x00, 0x7f, 0x9a, 0xed, 0x00, 0x00, 0x00, 0x00, 0x00, 0xef,
        0xb8, 0xff, 0xff, 0xff, 0xff, 0x25, 0x1c,
    ];
    let path = write("fuzz-short-pib.pcapng", bytes);
    let mut src = PcapSource::open(&path).unwrap();
    let err = loop {
        match src.next_packet() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("expected an error"),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(&err, SourceError::Malformed { detail, .. } if detail.contains("block length 6")),
        "{err}"
    );
}
