use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use vigil_craft::{
    eth_ipv4_udp, PcapFormat, PcapNgWriter, PcapWriter, LINKTYPE_ETHERNET, LINKTYPE_IPV4,
    LINKTYPE_RAW,
};
use vigil_source::{PcapSource, SourceError, Timestamp};

/// A fresh, empty directory for one test.
fn tmpdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("vigil-source-tests")
        .join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn frame(n: u8, len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len).map(|i| n.wrapping_add(i as u8)).collect();
    eth_ipv4_udp(
        Ipv4Addr::new(10, 0, 0, 1),
        1000 + u16::from(n),
        Ipv4Addr::new(10, 0, 0, 2),
        53,
        &payload,
    )
}

#[derive(Debug, PartialEq)]
struct Pkt {
    ts: Timestamp,
    linktype: u32,
    data: Vec<u8>,
    orig_len: u32,
    index: u64,
}

fn read_all(path: &Path) -> (Vec<Pkt>, PcapSource) {
    read_all_as(path, true)
}

/// [`read_all`], comparing with a read through a FIFO when `piped`.
fn read_all_as(path: &Path, piped: bool) -> (Vec<Pkt>, PcapSource) {
    let mut src = PcapSource::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(p) = src.next_packet().unwrap() {
        out.push(Pkt {
            ts: p.ts,
            linktype: p.linktype,
            data: p.data.to_vec(),
            orig_len: p.orig_len,
            index: p.index,
        });
    }
    // A regular file is parsed in place (mapped); through a FIFO, the
    // streaming reader parses it: both read the same.
    if let Some(piped) = read_piped(path).filter(|_| piped) {
        assert_eq!(
            piped,
            Ok((
                out.iter()
                    .map(|p| (p.ts, p.linktype, p.data.clone(), p.orig_len, p.index))
                    .collect(),
                src.truncated_records()
            )),
            "{}: read through a FIFO",
            path.display()
        );
    }
    (out, src)
}

type Piped = Result<(Vec<(Timestamp, u32, Vec<u8>, u32, u64)>, u64), String>;

/// The packets (and records cut short) of the regular file `path` read
/// through a FIFO, or the error's text with the FIFO's path put back to
/// `path`. `None` where that cannot be done (not a readable regular file,
/// no `mkfifo`).
fn read_piped(path: &Path) -> Option<Piped> {
    if !fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    let fifo = path.with_extension("fifo");
    let _ = fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        return None;
    }
    let writer_path = fifo.clone();
    // The reader may stop early (an error): the write then fails, which is
    // fine.
    let writer = std::thread::spawn(move || {
        let _ = fs::write(writer_path, bytes);
    });
    let fix = |e: SourceError| {
        e.to_string()
            .replace(&fifo.display().to_string(), &path.display().to_string())
    };
    let res = (|| {
        let mut src = PcapSource::open(&fifo).map_err(fix)?;
        let mut out = Vec::new();
        while let Some(p) = src.next_packet().map_err(fix)? {
            out.push((p.ts, p.linktype, p.data.to_vec(), p.orig_len, p.index));
        }
        Ok((out, src.truncated_records()))
    })();
    writer.join().unwrap();
    fs::remove_file(&fifo).unwrap();
    Some(res)
}

fn ts(secs: i64, nanos: u32) -> Timestamp {
    Timestamp { secs, nanos }
}

#[test]
fn classic_pcap_microseconds() {
    let dir = tmpdir("classic_us");
    let path = dir.join("a.pcap");
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
    w.write_packet((1_705_312_800, 1), &frame(1, 10)).unwrap();
    w.write_packet((1_705_312_800, 999_999), &frame(2, 0))
        .unwrap();
    w.write_record((1_705_312_801, 500_000), &frame(3, 5)[..20], 1514)
        .unwrap();
    fs::write(&path, w.into_inner()).unwrap();

    let (pkts, src) = read_all(&path);
    assert_eq!(pkts.len(), 3);
    assert_eq!(pkts[0].ts, ts(1_705_312_800, 1000));
    assert_eq!(pkts[1].ts, ts(1_705_312_800, 999_999_000));
    assert_eq!(pkts[2].ts, ts(1_705_312_801, 500_000_000));
    assert_eq!(pkts[0].data, frame(1, 10));
    assert_eq!(pkts[0].orig_len as usize, frame(1, 10).len());
    assert_eq!(pkts[2].data, &frame(3, 5)[..20]);
    assert_eq!(pkts[2].orig_len, 1514);
    assert!(pkts.iter().all(|p| p.linktype == LINKTYPE_ETHERNET));
    assert_eq!(
        pkts.iter().map(|p| p.index).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    let size = fs::metadata(&path).unwrap().len();
    assert_eq!(src.total_bytes(), size);
    assert_eq!(src.bytes_read(), size);
    assert_eq!(src.truncated_records(), 0);
    assert_eq!(src.packets_read(), 3);
}

#[test]
fn classic_pcap_nanoseconds_both_byte_orders() {
    let dir = tmpdir("classic_ns");
    for (i, big_endian) in [false, true].into_iter().enumerate() {
        let path = dir.join(format!("{i}.pcap"));
        let fmt = PcapFormat {
            nanos: true,
            big_endian,
            snaplen: 65535,
        };
        let mut w = PcapWriter::with_format(Vec::new(), LINKTYPE_RAW, fmt).unwrap();
        w.write_packet((100, 123_456_789), &frame(7, 3)[14..])
            .unwrap();
        w.write_packet((101, 999_999_999), &frame(8, 3)[14..])
            .unwrap();
        fs::write(&path, w.into_inner()).unwrap();
        let (pkts, _) = read_all(&path);
        assert_eq!(pkts.len(), 2, "big_endian={big_endian}");
        assert_eq!(pkts[0].ts, ts(100, 123_456_789));
        assert_eq!(pkts[1].ts, ts(101, 999_999_999));
        assert_eq!(pkts[0].linktype, LINKTYPE_RAW);
        assert_eq!(pkts[1].data, &frame(8, 3)[14..]);
    }
    // Microsecond big-endian too.
    let path = dir.join("be_us.pcap");
    let fmt = PcapFormat {
        nanos: false,
        big_endian: true,
        snaplen: 65535,
    };
    let mut w = PcapWriter::with_format(Vec::new(), LINKTYPE_ETHERNET, fmt).unwrap();
    w.write_packet((5, 6), &frame(1, 1)).unwrap();
    fs::write(&path, w.into_inner()).unwrap();
    let (pkts, _) = read_all(&path);
    assert_eq!(pkts[0].ts, ts(5, 6000));
    assert_eq!(pkts[0].data, frame(1, 1));
}

#[test]
fn pcapng_interfaces_resolutions_sections_and_block_kinds() {
    let dir = tmpdir("pcapng");
    let path = dir.join("multi.pcapng");
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    let eth = w.add_interface(LINKTYPE_ETHERNET).unwrap(); // microseconds (default)
    let raw = w
        .add_interface_with(LINKTYPE_RAW, 0, Some(9), Some(1_000_000_000))
        .unwrap(); // ns, offset
    assert_eq!((eth, raw), (0, 1));
    w.write_packet(eth, (1_700_000_000, 250_000_000), &frame(1, 4))
        .unwrap();
    w.write_packet(raw, (1_700_000_001, 123_456_789), &frame(2, 4)[14..])
        .unwrap();
    // Raw units: 1.5 s on the nanosecond interface, i.e. offset + 1.5 s.
    w.write_epb(raw, 1_500_000_000, &frame(3, 4)[14..], 999)
        .unwrap();
    w.write_spb(&frame(4, 4), frame(4, 4).len() as u32).unwrap();
    w.write_opb(1, 2_000_000_001, &frame(5, 4)[14..], 40)
        .unwrap();
    // A second section, big-endian, with one interface at 2^-10 s.
    w.new_section(true).unwrap();
    let be = w
        .add_interface_with(LINKTYPE_IPV4, 0, Some(0x80 | 10), Some(-5))
        .unwrap();
    assert_eq!(be, 0);
    w.write_epb(be, 3 * 1024 + 512, &frame(6, 1)[14..], 29)
        .unwrap();
    w.write_opb(0, 1024 + 256, &frame(7, 1)[14..], 29).unwrap();
    // An unknown block type is skipped.
    w.write_block(0x0000_0bad, &[1, 2, 3, 4]).unwrap();
    w.write_epb(be, 0, &frame(8, 1)[14..], 29).unwrap();
    fs::write(&path, w.into_inner()).unwrap();

    let (pkts, src) = read_all(&path);
    let got: Vec<(u64, Timestamp, u32, u32)> = pkts
        .iter()
        .map(|p| (p.index, p.ts, p.linktype, p.orig_len))
        .collect();
    let eth_len = frame(1, 4).len() as u32;
    assert_eq!(
        got,
        vec![
            (
                1,
                ts(1_700_000_000, 250_000_000),
                LINKTYPE_ETHERNET,
                eth_len
            ),
            (
                2,
                ts(1_700_000_001, 123_456_789),
                LINKTYPE_RAW,
                eth_len - 14
            ),
            (3, ts(1_000_000_001, 500_000_000), LINKTYPE_RAW, 999),
            // SPB: interface 0, no timestamp of its own.
            (
                4,
                ts(1_000_000_001, 500_000_000),
                LINKTYPE_ETHERNET,
                eth_len
            ),
            (5, ts(1_000_000_002, 1), LINKTYPE_RAW, 40),
            (6, ts(-2, 500_000_000), LINKTYPE_IPV4, 29),
            (7, ts(-4, 250_000_000), LINKTYPE_IPV4, 29),
            (8, ts(-5, 0), LINKTYPE_IPV4, 29),
        ]
    );
    assert_eq!(pkts[0].data, frame(1, 4));
    assert_eq!(pkts[2].data, &frame(3, 4)[14..]);
    assert_eq!(pkts[3].data, frame(4, 4));
    assert_eq!(pkts[4].data, &frame(5, 4)[14..]);
    assert_eq!(pkts[7].data, &frame(8, 1)[14..]);
    assert_eq!(src.bytes_read(), fs::metadata(&path).unwrap().len());
}

#[test]
fn pcapng_hand_built_bytes() {
    // SHB + IDB (linktype 1, if_tsresol 3 = milliseconds) + EPB, written by hand.
    let mut b: Vec<u8> = Vec::new();
    let le32 = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&x.to_le_bytes());
    le32(&mut b, 0x0a0d_0d0a);
    le32(&mut b, 28);
    le32(&mut b, 0x1a2b_3c4d);
    b.extend_from_slice(&[1, 0, 0, 0]);
    b.extend_from_slice(&[0xff; 8]);
    le32(&mut b, 28);
    le32(&mut b, 1);
    le32(&mut b, 28);
    b.extend_from_slice(&[1, 0, 0, 0]);
    le32(&mut b, 0); // snaplen
    b.extend_from_slice(&[9, 0, 1, 0, 3, 0, 0, 0]); // if_tsresol = 3
    le32(&mut b, 28);
    let pkt = [0xde, 0xad, 0xbe, 0xef, 0x01];
    le32(&mut b, 6);
    le32(&mut b, 32 + 8);
    le32(&mut b, 0);
    le32(&mut b, 0);
    le32(&mut b, 12_345); // 12.345 s
    le32(&mut b, 5);
    le32(&mut b, 60);
    b.extend_from_slice(&pkt);
    b.extend_from_slice(&[0, 0, 0]);
    le32(&mut b, 32 + 8);
    let dir = tmpdir("pcapng_hand");
    let path = dir.join("x.pcapng");
    fs::write(&path, &b).unwrap();
    let (pkts, _) = read_all(&path);
    assert_eq!(
        pkts,
        vec![Pkt {
            ts: ts(12, 345_000_000),
            linktype: 1,
            data: pkt.to_vec(),
            orig_len: 60,
            index: 1
        }]
    );
}

#[test]
fn directory_in_bytewise_name_order() {
    let dir = tmpdir("dir");
    let write_pcap = |name: &str, n: u8, linktype: u32| {
        let mut w = PcapWriter::new(Vec::new(), linktype).unwrap();
        w.write_packet((i64::from(n), 0), &frame(n, 1)).unwrap();
        w.write_packet((i64::from(n), 1), &frame(n + 100, 1))
            .unwrap();
        fs::write(dir.join(name), w.into_inner()).unwrap();
    };
    write_pcap("b.pcap", 4, LINKTYPE_ETHERNET);
    write_pcap("9.pcap", 2, LINKTYPE_RAW);
    write_pcap("10.pcap", 1, LINKTYPE_ETHERNET);
    write_pcap("B.pcap", 3, LINKTYPE_IPV4);
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.add_interface(LINKTYPE_IPV4).unwrap();
    w.write_packet(0, (5, 0), &frame(5, 1)).unwrap();
    fs::write(dir.join("c.pcapng"), w.into_inner()).unwrap();
    fs::create_dir(dir.join("a_subdir")).unwrap();

    let mut src = PcapSource::open(&dir).unwrap();
    let names: Vec<String> = src
        .files()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        vec!["10.pcap", "9.pcap", "B.pcap", "b.pcap", "c.pcapng"]
    );
    let mut got = Vec::new();
    while let Some(p) = src.next_packet().unwrap() {
        got.push((p.index, p.ts.secs, p.linktype, p.data[30..34].to_vec()));
    }
    let order: Vec<(u64, i64, u32)> = got.iter().map(|g| (g.0, g.1, g.2)).collect();
    assert_eq!(
        order,
        vec![
            (1, 1, LINKTYPE_ETHERNET),
            (2, 1, LINKTYPE_ETHERNET),
            (3, 2, LINKTYPE_RAW),
            (4, 2, LINKTYPE_RAW),
            (5, 3, LINKTYPE_IPV4),
            (6, 3, LINKTYPE_IPV4),
            (7, 4, LINKTYPE_ETHERNET),
            (8, 4, LINKTYPE_ETHERNET),
            (9, 5, LINKTYPE_IPV4),
        ]
    );
    let total: u64 = ["10.pcap", "9.pcap", "B.pcap", "b.pcap", "c.pcapng"]
        .iter()
        .map(|n| fs::metadata(dir.join(n)).unwrap().len())
        .sum();
    assert_eq!(src.total_bytes(), total);
    assert_eq!(src.bytes_read(), total);
    assert_eq!(src.current_file(), None);
}

#[test]
fn empty_directory_is_an_empty_stream() {
    let dir = tmpdir("empty_dir");
    let mut src = PcapSource::open(&dir).unwrap();
    assert!(src.next_packet().unwrap().is_none());
    assert_eq!(src.total_bytes(), 0);
}

#[test]
fn many_packets_across_refills_and_a_record_bigger_than_the_buffer() {
    let dir = tmpdir("big");
    let path = dir.join("big.pcap");
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
    for i in 0..3000u32 {
        w.write_packet(
            (i64::from(i), i % 1_000_000),
            &frame(i as u8, (i % 1400) as usize),
        )
        .unwrap();
    }
    let huge: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
    w.write_packet((9999, 0), &huge).unwrap();
    w.write_packet((10000, 0), &frame(1, 1)).unwrap();
    fs::write(&path, w.into_inner()).unwrap();

    let mut src = PcapSource::open(&path).unwrap();
    let mut n = 0u32;
    while let Some(p) = src.next_packet().unwrap() {
        match n {
            0..3000 => {
                assert_eq!(p.ts, Timestamp::from_micros(i64::from(n), n % 1_000_000));
                assert_eq!(p.data, &frame(n as u8, (n % 1400) as usize)[..]);
            }
            3000 => assert_eq!(p.data, &huge[..]),
            _ => assert_eq!(p.data, &frame(1, 1)[..]),
        }
        n += 1;
        assert_eq!(p.index, u64::from(n));
    }
    assert_eq!(n, 3002);
    assert_eq!(src.bytes_read(), src.total_bytes());
}

fn expect_err(path: &Path) -> SourceError {
    let e = match PcapSource::open(path) {
        Ok(mut src) => loop {
            match src.next_packet() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("{}: expected an error", path.display()),
                Err(e) => break e,
            }
        },
        Err(e) => e,
    };
    // The streaming reader (through a FIFO) reports the same error.
    if let Some(piped) = read_piped(path) {
        assert_eq!(piped.err().as_deref(), Some(e.to_string().as_str()));
    }
    e
}

#[test]
fn error_cases() {
    let dir = tmpdir("errors");

    let missing = dir.join("missing.pcap");
    let e = expect_err(&missing);
    assert!(matches!(e, SourceError::NotFound { .. }), "{e:?}");
    assert!(e.to_string().contains("missing.pcap"), "{e}");
    assert_eq!(e.path(), missing);

    let garbage = dir.join("garbage.pcap");
    fs::write(&garbage, b"this is not a capture file at all, just text\n").unwrap();
    let e = expect_err(&garbage);
    assert!(matches!(e, SourceError::NotPcap { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with(&garbage.display().to_string()),
        "{e}"
    );

    let empty = dir.join("empty.pcap");
    fs::write(&empty, b"").unwrap();
    let e = expect_err(&empty);
    assert!(matches!(e, SourceError::Empty { .. }), "{e:?}");
    assert!(e.to_string().contains("empty.pcap"));

    let short = dir.join("short.pcap");
    let hdr = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET)
        .unwrap()
        .into_inner();
    fs::write(&short, &hdr[..10]).unwrap();
    let e = expect_err(&short);
    assert!(matches!(e, SourceError::Truncated { .. }), "{e:?}");
    assert!(e.to_string().contains("short.pcap"));

    let short_ng = dir.join("short.pcapng");
    let ng = PcapNgWriter::new(Vec::new()).unwrap().into_inner();
    fs::write(&short_ng, &ng[..12]).unwrap();
    let e = expect_err(&short_ng);
    assert!(matches!(e, SourceError::Truncated { .. }), "{e:?}");

    // A packet for an interface the section never described.
    let bad_if = dir.join("bad_if.pcapng");
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.add_interface(LINKTYPE_ETHERNET).unwrap();
    w.write_epb(3, 0, &frame(1, 1), 10).unwrap();
    fs::write(&bad_if, w.into_inner()).unwrap();
    let e = expect_err(&bad_if);
    assert!(matches!(e, SourceError::Malformed { .. }), "{e:?}");
    assert!(
        e.to_string().contains("bad_if.pcapng") && e.to_string().contains("interface 3"),
        "{e}"
    );

    // Garbage after a good block in a pcapng file.
    let bad_block = dir.join("bad_block.pcapng");
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.add_interface(LINKTYPE_ETHERNET).unwrap();
    w.write_packet(0, (1, 0), &frame(1, 1)).unwrap();
    let mut bytes = w.into_inner();
    bytes.extend_from_slice(&[6, 0, 0, 0, 3, 0, 0, 0]);
    bytes.extend_from_slice(&[0u8; 40]);
    fs::write(&bad_block, bytes).unwrap();
    let e = expect_err(&bad_block);
    assert!(matches!(e, SourceError::Malformed { .. }), "{e:?}");

    // Unreadable file (only meaningful when not running as root).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let locked = dir.join("locked.pcap");
        fs::write(&locked, &hdr).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        if fs::File::open(&locked).is_err() {
            let e = expect_err(&locked);
            assert!(matches!(e, SourceError::PermissionDenied { .. }), "{e:?}");
            assert!(e.to_string().contains("locked.pcap"));
        }
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o644)).unwrap();
    }
}

#[test]
fn a_record_bigger_than_the_largest_buffer_is_an_error_mapped_or_not() {
    let dir = tmpdir("too_large");
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
    w.write_packet((1, 0), &frame(1, 100)).unwrap();
    let huge = vec![0x5au8; vigil_source::MAX_BUFFER + 1];
    w.write_packet((2, 0), &huge).unwrap();
    w.write_packet((3, 0), &frame(3, 100)).unwrap();
    let path = dir.join("huge.pcap");
    fs::write(&path, w.into_inner()).unwrap();
    // `expect_err` also reads it through a FIFO, with the same outcome.
    match expect_err(&path) {
        SourceError::RecordTooLarge { offset, limit, .. } => {
            assert_eq!(offset as usize, 24 + 16 + frame(1, 100).len());
            assert_eq!(limit, vigil_source::MAX_BUFFER);
        }
        e => panic!("{e}"),
    }
    fs::remove_file(&path).unwrap();
}

#[test]
fn truncated_last_record_ends_the_stream_with_a_warning() {
    let dir = tmpdir("truncated");
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
    w.write_packet((1, 0), &frame(1, 100)).unwrap();
    w.write_packet((2, 0), &frame(2, 100)).unwrap();
    let full = w.into_inner();
    let second_start = 24 + 16 + frame(1, 100).len();
    // Cut inside the second record's data, and inside its header.
    for (i, cut) in [full.len() - 7, second_start + 5].into_iter().enumerate() {
        let path = dir.join(format!("t{i}.pcap"));
        fs::write(&path, &full[..cut]).unwrap();
        let (pkts, src) = read_all(&path);
        assert_eq!(pkts.len(), 1, "cut at {cut}");
        assert_eq!(pkts[0].data, frame(1, 100));
        assert_eq!(src.truncated_records(), 1);
    }

    // pcapng, and a directory: the truncated file ends, the next one is read.
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.add_interface(LINKTYPE_ETHERNET).unwrap();
    w.write_packet(0, (1, 0), &frame(1, 100)).unwrap();
    w.write_packet(0, (2, 0), &frame(2, 100)).unwrap();
    let ng = w.into_inner();
    let sub = dir.join("dir");
    fs::create_dir(&sub).unwrap();
    fs::write(sub.join("1.pcapng"), &ng[..ng.len() - 30]).unwrap();
    fs::write(sub.join("2.pcap"), &full).unwrap();
    let (pkts, src) = read_all(&sub);
    assert_eq!(pkts.len(), 3);
    assert_eq!(pkts[1].data, frame(1, 100));
    assert_eq!(pkts[1].index, 2);
    assert_eq!(src.truncated_records(), 1);

    // A record header claiming far more data than the file holds.
    let mut bogus = full[..second_start].to_vec();
    bogus.extend_from_slice(&[
        0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x3f, 0xff, 0xff, 0xff, 0x3f,
    ]);
    bogus.extend_from_slice(&[0u8; 64]);
    let path = dir.join("bogus_len.pcap");
    fs::write(&path, bogus).unwrap();
    let (pkts, src) = read_all(&path);
    assert_eq!(pkts.len(), 1);
    assert_eq!(src.truncated_records(), 1);
}

#[test]
fn demo_capture_reads_back() {
    let dir = tmpdir("demo");
    let path = dir.join("demo.pcap");
    let n = vigil_craft::write_demo_pcap(&path).unwrap();
    let frames = vigil_craft::demo_capture();
    let (pkts, _) = read_all(&path);
    assert_eq!(pkts.len(), n);
    for (p, (t, f)) in pkts.iter().zip(&frames) {
        assert_eq!(p.ts, Timestamp::from_micros(t.0, t.1));
        assert_eq!(&p.data, f);
    }
}

#[test]
fn source_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<PcapSource>();
}

#[cfg(unix)]
#[test]
fn reads_from_a_fifo() {
    let dir = tmpdir("fifo");
    let fifo = dir.join("in.pcap");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return; // no mkfifo here
    }
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
    for i in 0..500u32 {
        w.write_packet((i64::from(i), 0), &frame(i as u8, 700))
            .unwrap();
    }
    let bytes = w.into_inner();
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || fs::write(writer_path, bytes).unwrap());
    let mut src = PcapSource::open(&fifo).unwrap();
    let mut n = 0u32;
    while let Some(p) = src.next_packet().unwrap() {
        assert_eq!(p.data, &frame(n as u8, 700)[..]);
        n += 1;
    }
    writer.join().unwrap();
    assert_eq!(n, 500);
    assert_eq!(src.total_bytes(), 0);
    assert_eq!(src.truncated_records(), 0);
}

/// A section header block with ~300 KB of comment options.
fn big_shb() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    body.extend_from_slice(&[1, 0, 0, 0]);
    body.extend_from_slice(&[0xff; 8]);
    for _ in 0..5 {
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&60_000u16.to_le_bytes());
        body.extend_from_slice(&[b'c'; 60_000]);
    }
    body.extend_from_slice(&[0, 0, 0, 0]);
    let len = (12 + body.len()) as u32;
    let mut b = Vec::new();
    b.extend_from_slice(&0x0a0d_0d0au32.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

#[test]
fn section_headers_bigger_than_the_buffer() {
    let dir = tmpdir("big_shb");
    let path = dir.join("x.pcapng");
    let mut bytes = big_shb();
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.add_interface(LINKTYPE_ETHERNET).unwrap();
    w.write_packet(0, (1, 0), &frame(1, 10)).unwrap();
    let rest = w.into_inner();
    let shb_len = 28;
    bytes.extend_from_slice(&rest[shb_len..]); // IDB + EPB after the big SHB
    bytes.extend_from_slice(&big_shb()); // a second big section
    bytes.extend_from_slice(&rest[shb_len..]);
    fs::write(&path, bytes).unwrap();
    // Not through a FIFO: there the first section header must fit the
    // initial buffer (the file cannot be read again from the top).
    let (pkts, src) = read_all_as(&path, false);
    assert_eq!(pkts.len(), 2);
    assert_eq!(pkts[1].data, frame(1, 10));
    assert_eq!(pkts[1].index, 2);
    assert_eq!(src.bytes_read(), src.total_bytes());
}
