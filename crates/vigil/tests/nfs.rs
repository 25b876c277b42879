//! NFS end to end: a crafted NFSv3 session over TCP (LOOKUP, a file read
//! in two READs, GETATTR, CREATE, two WRITEs and a COMMIT, RENAME, a
//! REMOVE that fails) in small segments, an NFSv3 ACCESS over UDP and an
//! NFSv4 session (OPEN/GETFH naming a handle, a READ of it, a REMOVE),
//! through the `vigil` binary to alerts, `nfs` records with their `rpc`
//! objects and `fileinfo` records.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use vigil_craft::{eth_ipv4_udp, TcpSession, TimedFrame};

/// An XDR writer.
#[derive(Default)]
struct W(Vec<u8>);

impl W {
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn opaque(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(&(b.len() as u32).to_be_bytes());
        self.0.extend_from_slice(b);
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
        self
    }
    fn raw(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
}

const PROGRAM: u32 = 100003;

fn call(xid: u32, vers: u32, procedure: u32, args: &[u8]) -> Vec<u8> {
    let cred = W::default()
        .u32(0x5f00_0000)
        .opaque(b"client01")
        .u32(1000)
        .u32(1001)
        .u32(0)
        .0;
    W::default()
        .u32(xid)
        .u32(0)
        .u32(2)
        .u32(PROGRAM)
        .u32(vers)
        .u32(procedure)
        .u32(1)
        .opaque(&cred)
        .u32(0)
        .u32(0)
        .raw(args)
        .0
}

fn reply(xid: u32, results: &[u8]) -> Vec<u8> {
    W::default()
        .u32(xid)
        .u32(1)
        .u32(0)
        .u32(0)
        .u32(0)
        .u32(0)
        .raw(results)
        .0
}

fn record(m: &[u8]) -> Vec<u8> {
    let mut v = (m.len() as u32 | 0x8000_0000).to_be_bytes().to_vec();
    v.extend_from_slice(m);
    v
}

const DIR: &[u8] = b"\x01\x00\x00\x00directory-handle";
const FH: &[u8] = b"\x01\x00\x00\x01file-handle-0001";
const FH2: &[u8] = b"\x01\x00\x00\x02file-handle-0002";
const FH4: &[u8] = b"\x01\x00\x00\x04file-handle-v4v4";
const PART1: &[u8] = b"NFS file: top 01";
const PART2: &[u8] = b"secret content!\n";

/// `wcc_data` with neither attribute set.
fn wcc() -> W {
    W::default().u32(0).u32(0)
}

fn v3_session() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.5.0.1:801".parse::<SocketAddr>().unwrap(),
        "10.5.0.2:2049".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(1400);
    let lookup = W::default().opaque(DIR).opaque(b"secret.txt").0;
    let lookup_res = W::default().u32(0).opaque(FH).u32(0).u32(0).0;
    let read = |off: u64| W::default().opaque(FH).u64(off).u32(4096).0;
    let read_res = |eof: u32, d: &[u8]| {
        W::default()
            .u32(0)
            .u32(1)
            .raw(&[0; 84])
            .u32(d.len() as u32)
            .u32(eof)
            .opaque(d)
            .0
    };
    // CREATE: UNCHECKED with an empty sattr3.
    let create = W::default()
        .opaque(DIR)
        .opaque(b"up.bin")
        .u32(0)
        .raw(&[0; 24])
        .0;
    let create_res = W::default()
        .u32(0)
        .u32(1)
        .opaque(FH2)
        .u32(0)
        .raw(&wcc().0)
        .0;
    let write = |off: u64, d: &[u8]| {
        W::default()
            .opaque(FH2)
            .u64(off)
            .u32(d.len() as u32)
            .u32(0)
            .opaque(d)
            .0
    };
    let write_res = |n: u32| {
        W::default()
            .u32(0)
            .raw(&wcc().0)
            .u32(n)
            .u32(0)
            .raw(b"verifier")
            .0
    };
    let rename = W::default()
        .opaque(DIR)
        .opaque(b"up.bin")
        .opaque(DIR)
        .opaque(b"up2.bin")
        .0;
    let rename_res = W::default().u32(0).raw(&wcc().0).raw(&wcc().0).0;
    let remove = W::default().opaque(DIR).opaque(b"nothere").0;
    let remove_res = W::default().u32(2).raw(&wcc().0).0;
    t.handshake()
        .client_send(&record(&call(1, 3, 3, &lookup)))
        .server_send(&record(&reply(1, &lookup_res)))
        .client_send(&record(&call(2, 3, 6, &read(0))))
        .server_send(&record(&reply(2, &read_res(0, PART1))))
        .client_send(&record(&call(3, 3, 6, &read(PART1.len() as u64))))
        .server_send(&record(&reply(3, &read_res(1, PART2))))
        .client_send(&record(&call(4, 3, 1, &W::default().opaque(FH).0)))
        .server_send(&record(&reply(4, &W::default().u32(0).raw(&[0; 84]).0)))
        .client_send(&record(&call(5, 3, 8, &create)))
        .server_send(&record(&reply(5, &create_res)))
        .client_send(&record(&call(6, 3, 7, &write(0, b"upload one;;"))))
        .server_send(&record(&reply(6, &write_res(12))))
        .client_send(&record(&call(7, 3, 7, &write(12, b" upload two;"))))
        .server_send(&record(&reply(7, &write_res(12))))
        .client_send(&record(&call(
            8,
            3,
            21,
            &W::default().opaque(FH2).u64(0).u32(0).0,
        )))
        .server_send(&record(&reply(
            8,
            &W::default().u32(0).raw(&wcc().0).raw(b"verifier").0,
        )))
        .client_send(&record(&call(9, 3, 14, &rename)))
        .server_send(&record(&reply(9, &rename_res)))
        .client_send(&record(&call(10, 3, 12, &remove)))
        .server_send(&record(&reply(10, &remove_res)))
        .close();
    t.into_frames()
}

fn v4_session() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.5.0.1:802".parse::<SocketAddr>().unwrap(),
        "10.5.0.4:2049".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_020, 0))
    .with_mss(1400);
    let compound = |ops: W, n: u32| W::default().opaque(b"").u32(0).u32(n).raw(&ops.0).0;
    let result = |ops: W, n: u32| W::default().u32(0).opaque(b"").u32(n).raw(&ops.0).0;
    // PUTFH, OPEN (CLAIM_NULL "v4file.txt", no create), GETFH.
    let open = W::default()
        .u32(22)
        .opaque(DIR)
        .u32(18)
        .u32(0)
        .u32(1)
        .u32(0)
        .u64(0x1234)
        .opaque(b"open-owner")
        .u32(0)
        .u32(0)
        .opaque(b"v4file.txt")
        .u32(10);
    let open_res = W::default()
        .u32(22)
        .u32(0)
        .u32(18)
        .u32(0)
        .raw(&[0; 16])
        .u32(1)
        .u64(1)
        .u64(2)
        .u32(4)
        .u32(0)
        .u32(0)
        .u32(10)
        .u32(0)
        .opaque(FH4);
    let read = W::default()
        .u32(22)
        .opaque(FH4)
        .u32(25)
        .raw(&[0; 16])
        .u64(0)
        .u32(4096);
    let read_res = W::default()
        .u32(22)
        .u32(0)
        .u32(25)
        .u32(0)
        .u32(1)
        .opaque(b"version four data\n");
    let remove = W::default().u32(22).opaque(DIR).u32(28).opaque(b"old.txt");
    let remove_res = W::default()
        .u32(22)
        .u32(0)
        .u32(28)
        .u32(0)
        .u32(1)
        .u64(3)
        .u64(4);
    t.handshake()
        .client_send(&record(&call(0x41, 4, 1, &compound(open, 3))))
        .server_send(&record(&reply(0x41, &result(open_res, 3))))
        .client_send(&record(&call(0x42, 4, 1, &compound(read, 2))))
        .server_send(&record(&reply(0x42, &result(read_res, 2))))
        .client_send(&record(&call(0x43, 4, 1, &compound(remove, 2))))
        .server_send(&record(&reply(0x43, &result(remove_res, 2))))
        .close();
    t.into_frames()
}

fn capture() -> Vec<TimedFrame> {
    let mut frames = v3_session();
    let c = Ipv4Addr::new(10, 5, 0, 1);
    let s = Ipv4Addr::new(10, 5, 0, 3);
    let access = W::default().opaque(FH).u32(0x1f).0;
    frames.push((
        (1_700_000_010, 0),
        eth_ipv4_udp(c, 700, s, 2049, &call(0x77, 3, 4, &access)),
    ));
    frames.push((
        (1_700_000_010, 500),
        eth_ipv4_udp(
            s,
            2049,
            c,
            700,
            &reply(0x77, &W::default().u32(0).u32(0).u32(0x1f).0),
        ),
    ));
    frames.extend(v4_session());
    frames
}

const RULES: &str = "\
alert nfs any any -> any any (msg:\"lookup\"; nfs_procedure:LOOKUP; sid:1;)\n\
alert nfs any any -> any any (msg:\"v3\"; nfs.version:3; sid:2;)\n\
alert nfs any any -> any any (msg:\"file name\"; file.name; content:\"secret.txt\"; sid:3;)\n\
alert nfs any any -> any any (msg:\"file data\"; file.data; content:\"secret content\"; sid:4;)\n\
alert nfs any any -> any any (msg:\"commit\"; nfs_procedure:21; sid:5;)\n\
alert nfs any any -> any any (msg:\"big file\"; filesize:>20; sid:6;)\n\
alert nfs any any -> any any (msg:\"write\"; nfs_procedure:WRITE; sid:7;)\n\
alert nfs any any -> any any (msg:\"remove\"; nfs_procedure:REMOVE; sid:8;)\n\
alert nfs any any -> any any (msg:\"v4\"; nfs.version:>3; sid:9;)\n\
alert nfs any any -> any any (msg:\"access\"; nfs_procedure:ACCESS; sid:10;)\n\
alert nfs any any -> any any (msg:\"never: symlink\"; nfs_procedure:SYMLINK; sid:11;)\n\
alert nfs any any -> any any (msg:\"never: event\"; app-layer-event:nfs.malformed_data; sid:12;)\n";

#[test]
fn nfs_to_alerts_records_and_files() {
    let types = ["alert", "nfs", "files"];
    let common::Run { events, dir, .. } = common::run("nfs", &capture(), RULES, Some(&types));
    let mut got: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            assert_eq!(e["app_proto"], "nfs");
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                e["direction"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    // The Suricata 9 peer's alerts on the same capture: nfs.version on
    // every transaction but the NFSv4 READ transfer (opened by a reply,
    // it has no version), file.name/file.data/filesize on the READ
    // transfer to the client, filesize also on the WRITE transfer,
    // COMMIT as a procedure of the WRITE transfer, REMOVE by name in v3
    // (12) and v4 (28).
    let want: Vec<(u64, String)> = [
        (1, "to_server"),
        (2, "to_server"),
        (2, "to_server"),
        (2, "to_server"),
        (2, "to_server"),
        (2, "to_server"),
        (2, "to_server"),
        (2, "to_server"),
        (2, "to_server"),
        (3, "to_client"),
        (4, "to_client"),
        (5, "to_server"),
        (6, "to_client"),
        (6, "to_server"),
        (7, "to_server"),
        (8, "to_server"),
        (8, "to_server"),
        (9, "to_server"),
        (10, "to_server"),
    ]
    .iter()
    .map(|(s, d)| (*s, d.to_string()))
    .collect();
    assert_eq!(got, want);
    let alert = events
        .iter()
        .find(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == 3)
        .unwrap();
    assert_eq!(alert["nfs"]["procedure"], "READ");
    assert_eq!(alert["rpc"]["xid"], 2);

    let recs: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event_type"] == "nfs").collect();
    // GETATTR is not logged (as Suricata).
    let procs: Vec<(&str, u64)> = recs
        .iter()
        .map(|r| {
            (
                r["nfs"]["procedure"].as_str().unwrap(),
                r["nfs"]["version"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        procs,
        [
            ("LOOKUP", 3),
            ("READ", 3),
            ("CREATE", 3),
            ("WRITE", 3),
            ("RENAME", 3),
            ("REMOVE", 3),
            ("ACCESS", 3),
            ("READ", 4),
            ("REMOVE", 4)
        ]
    );
    // The records as the peer writes them.
    let expect = |i: usize, v: serde_json::Value| assert_eq!(recs[i]["nfs"], v, "record {i}");
    expect(
        0,
        serde_json::json!({"version":3,"procedure":"LOOKUP","filename":"secret.txt",
            "hhash":"e376e449","id":1,"file_tx":false,"type":"response","status":"OK"}),
    );
    expect(
        1,
        serde_json::json!({"version":3,"procedure":"READ","filename":"secret.txt",
            "hhash":"e376e449","id":2,"file_tx":true,"type":"response","status":"OK",
            "read":{"first":true,"last":true,"last_xid":3,"chunks":2}}),
    );
    expect(
        3,
        serde_json::json!({"version":3,"procedure":"WRITE","filename":"up.bin",
            "hhash":"29e5ee77","id":5,"file_tx":true,"type":"response","status":"OK",
            "write":{"first":true,"last":true,"last_xid":8,"chunks":2}}),
    );
    expect(
        4,
        serde_json::json!({"version":3,"procedure":"RENAME","filename":"up.bin",
            "hhash":"79ea5558","id":6,"file_tx":false,"type":"response","status":"OK",
            "rename":{"from":"up.bin","to":"up2.bin"}}),
    );
    expect(
        5,
        serde_json::json!({"version":3,"procedure":"REMOVE","filename":"nothere",
            "hhash":"79ea5558","id":7,"file_tx":false,"type":"response",
            "status":"ERR_NOENT"}),
    );
    expect(
        8,
        serde_json::json!({"version":4,"procedure":"REMOVE","filename":"old.txt",
            "id":2,"file_tx":false,"type":"response","status":"OK"}),
    );
    // Vigil names the NFSv4 READ's file from the OPEN/GETFH before it
    // (the peer logs it unnamed).
    assert_eq!(recs[7]["nfs"]["filename"], "v4file.txt");
    assert_eq!(recs[7]["nfs"]["read"]["chunks"], 0);
    assert_eq!(
        recs[0]["rpc"],
        serde_json::json!({"xid":1,"status":"ACCEPTED","auth_type":"UNIX",
            "creds":{"machine_name":"client01","uid":1000,"gid":1001}})
    );
    assert_eq!(recs[6]["proto"], "UDP");
    assert_eq!(recs[6]["rpc"]["xid"], 0x77);

    let files: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "fileinfo")
        .collect();
    let summary: Vec<(&str, u64, &str)> = files
        .iter()
        .map(|f| {
            (
                f["fileinfo"]["filename"].as_str().unwrap(),
                f["fileinfo"]["size"].as_u64().unwrap(),
                f["fileinfo"]["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("secret.txt", 32, "CLOSED"),
            ("up.bin", 24, "CLOSED"),
            ("v4file.txt", 18, "CLOSED")
        ]
    );
    assert_eq!(files[0]["nfs"]["procedure"], "READ");
    if std::env::var_os("VIGIL_E2E_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
