//! End-to-end: a crafted SMB2 capture (session setup with NTLMSSP, a
//! tree connect to a share and a file written in two pieces out of order
//! and over itself, a tree connect to IPC$ with DCERPC over a named pipe)
//! through the real `vigil` binary, to alerts with the `smb` object and
//! to EVE `smb` records.

use std::path::PathBuf;
use std::process::Command;

use vigil_craft::{write_pcap_file, TcpSession};

const FID: [u8; 16] = [0x16, 0, 0, 0, 0x35, 1, 0, 0, 1, 0, 0, 0, 0x35, 0, 0, 0];
const PIPE: [u8; 16] = [7; 16];
const NETLOGON_LE: [u8; 16] = [
    0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab, 0xef, 0, 1, 0x23, 0x45, 0x67, 0xcf, 0xfb,
];

fn smb2(cmd: u16, resp: bool, msg_id: u64, tree: u32, body: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\xfeSMB");
    h[4] = 64;
    h[12..14].copy_from_slice(&cmd.to_le_bytes());
    h[16] = u8::from(resp);
    h[24..32].copy_from_slice(&msg_id.to_le_bytes());
    h[36..40].copy_from_slice(&tree.to_le_bytes());
    h[40] = 0x21;
    h.extend_from_slice(body);
    let n = h.len();
    let mut v = vec![0, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    v.extend(h);
    v
}

fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

fn session_setup() -> Vec<u8> {
    let mut m = b"NTLMSSP\0".to_vec();
    m.extend_from_slice(&3u32.to_le_bytes());
    m.resize(64, 0);
    m[60..64].copy_from_slice(&1u32.to_le_bytes());
    for (at, v) in [(28, "CORP"), (36, "alice"), (44, "WS1")] {
        let b = utf16(v);
        let off = m.len() as u32;
        m[at..at + 2].copy_from_slice(&(b.len() as u16).to_le_bytes());
        m[at + 4..at + 8].copy_from_slice(&off.to_le_bytes());
        m.extend(b);
    }
    let mut b = vec![0u8; 24];
    b[0] = 25;
    b[12..14].copy_from_slice(&88u16.to_le_bytes());
    b[14..16].copy_from_slice(&(m.len() as u16).to_le_bytes());
    b.extend(m);
    smb2(1, false, 1, 0, &b)
}

fn tree_connect(msg_id: u64, path: &str) -> Vec<u8> {
    let p = utf16(path);
    let mut b = vec![9, 0, 0, 0, 72, 0];
    b.extend_from_slice(&(p.len() as u16).to_le_bytes());
    b.extend(p);
    smb2(3, false, msg_id, 0, &b)
}

fn tree_connect_resp(msg_id: u64, tree: u32, share_type: u8) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    b[0] = 16;
    b[2] = share_type;
    smb2(3, true, msg_id, tree, &b)
}

fn create(msg_id: u64, tree: u32, name: &str) -> Vec<u8> {
    let n = utf16(name);
    let mut b = vec![0u8; 56];
    b[0] = 57;
    b[36] = 5;
    b[44..46].copy_from_slice(&120u16.to_le_bytes());
    b[46..48].copy_from_slice(&(n.len() as u16).to_le_bytes());
    b.extend(n);
    smb2(5, false, msg_id, tree, &b)
}

fn create_resp(msg_id: u64, tree: u32, fid: &[u8; 16]) -> Vec<u8> {
    let mut b = vec![0u8; 88];
    b[0] = 89;
    b[64..80].copy_from_slice(fid);
    smb2(5, true, msg_id, tree, &b)
}

fn write(msg_id: u64, tree: u32, fid: &[u8; 16], off: u64, data: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 48];
    b[0] = 49;
    b[2..4].copy_from_slice(&112u16.to_le_bytes());
    b[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes());
    b[8..16].copy_from_slice(&off.to_le_bytes());
    b[16..32].copy_from_slice(fid);
    b.extend_from_slice(data);
    smb2(9, false, msg_id, tree, &b)
}

fn generic_resp(cmd: u16, msg_id: u64, tree: u32) -> Vec<u8> {
    smb2(cmd, true, msg_id, tree, &[4, 0, 0, 0])
}

fn read(msg_id: u64, tree: u32, fid: &[u8; 16]) -> Vec<u8> {
    let mut b = vec![0u8; 48];
    b[0] = 49;
    b[4..8].copy_from_slice(&1024u32.to_le_bytes());
    b[16..32].copy_from_slice(fid);
    smb2(8, false, msg_id, tree, &b)
}

fn read_resp(msg_id: u64, tree: u32, data: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    b[0] = 17;
    b[2] = 80;
    b[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(data);
    smb2(8, true, msg_id, tree, &b)
}

fn ioctl(msg_id: u64, tree: u32, fid: &[u8; 16], input: &[u8], resp: bool) -> Vec<u8> {
    let mut b = vec![0u8; if resp { 48 } else { 56 }];
    b[0] = 57;
    b[4..8].copy_from_slice(&0x0011_c017u32.to_le_bytes());
    b[8..24].copy_from_slice(fid);
    let at = if resp { 32 } else { 24 };
    let data_at = 64 + b.len() as u32;
    b[at..at + 4].copy_from_slice(&data_at.to_le_bytes());
    b[at + 4..at + 8].copy_from_slice(&(input.len() as u32).to_le_bytes());
    b.extend_from_slice(input);
    smb2(11, resp, msg_id, tree, &b)
}

fn pdu(ptype: u8, call: u8, body: &[u8]) -> Vec<u8> {
    let len = 16 + body.len() as u16;
    let mut v = vec![5, 0, ptype, 3, 0x10, 0, 0, 0];
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(&[0, 0, call, 0, 0, 0]);
    v.extend_from_slice(body);
    v
}

/// The client's and the server's messages, in exchange order.
fn exchange() -> Vec<(bool, Vec<u8>)> {
    let mut bind = vec![0xb8, 0x10, 0xb8, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0];
    bind.extend_from_slice(&NETLOGON_LE);
    bind.extend_from_slice(&[1, 0, 0, 0]);
    bind.extend_from_slice(&[0x04; 20]);
    let mut ack = vec![0xb8, 0x10, 0xb8, 0x10, 1, 0, 0, 0, 0, 0, 0, 0];
    ack.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    ack.extend_from_slice(&[0x04; 20]);
    let mut req = vec![4, 0, 0, 0, 0, 0, 26, 0];
    req.extend_from_slice(b"STUB");
    let file = b"head-MARKER-SPLIT-tail";
    vec![
        (true, session_setup()),
        (false, generic_resp(1, 1, 0)),
        (true, tree_connect(2, "\\\\srv\\DATA")),
        (false, tree_connect_resp(2, 5, 1)),
        (true, create(3, 5, "dir\\report.doc")),
        (false, create_resp(3, 5, &FID)),
        // The second half first, then the first, then the first byte
        // again (an overlap).
        (true, write(4, 5, &FID, 12, &file[12..])),
        (false, generic_resp(9, 4, 5)),
        (true, write(5, 5, &FID, 0, &file[..12])),
        (false, generic_resp(9, 5, 5)),
        (true, write(6, 5, &FID, 0, b"h")),
        (false, generic_resp(9, 6, 5)),
        (true, tree_connect(7, "\\\\srv\\IPC$")),
        (false, tree_connect_resp(7, 1, 2)),
        (true, create(8, 1, "netlogon")),
        (false, create_resp(8, 1, &PIPE)),
        (true, write(9, 1, &PIPE, 0, &pdu(11, 1, &bind))),
        (false, generic_resp(9, 9, 1)),
        (true, read(10, 1, &PIPE)),
        (false, read_resp(10, 1, &pdu(12, 1, &ack))),
        (true, ioctl(11, 1, &PIPE, &pdu(0, 2, &req), false)),
        (false, ioctl(11, 1, &PIPE, &pdu(2, 2, &[0; 12]), true)),
    ]
}

const RULES: &str = "\
alert smb any any -> any any (msg:\"share\"; smb.share; content:\"DATA\"; sid:1;)
alert smb any any -> any any (msg:\"file\"; flow:established; file_data; content:\"MARKER-SPLIT\"; sid:2;)
alert smb any any -> any any (msg:\"iface\"; flow:to_server; dcerpc.iface:12345678-1234-abcd-ef00-01234567cffb; dcerpc.opnum:26; sid:3;)
alert smb any any -> any any (msg:\"pipe\"; flow:to_server; smb.version:2; smb_named_pipe; content:\"IPC$\"; sid:4;)
alert smb any any -> any any (msg:\"overlap\"; app-layer-event:smb.file_overlap; sid:5;)
alert smb any any -> any any (msg:\"user\"; smb.ntlmssp_user; content:\"alice\"; smb.ntlmssp_domain; content:\"CORP\"; sid:6;)
alert smb any any -> any any (msg:\"smb1\"; smb.version:1; sid:7;)
alert dcerpc any any -> any any (msg:\"stub\"; flow:to_server; dcerpc.stub_data; content:\"STUB\"; sid:8;)
";

fn run(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let mut s = TcpSession::new(
        "10.9.0.1:50000".parse().unwrap(),
        "10.9.0.2:445".parse().unwrap(),
    )
    .with_mss(60);
    s.handshake();
    for (to_server, m) in exchange() {
        if to_server {
            s.client_send(&m);
        } else {
            s.server_send(&m);
        }
    }
    s.close();
    let pcap = dir.join("in.pcap");
    write_pcap_file(&pcap, s.frames()).unwrap();
    let rules = dir.join("test.rules");
    std::fs::write(&rules, RULES).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["run", "-r"])
        .arg(&pcap)
        .arg("-S")
        .arg(&rules)
        .arg("-l")
        .arg(&out)
        .output()
        .expect("run vigil");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out.join("eve.json"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-e2e-smb-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn smb_capture_to_alerts_and_records() {
    let d = tmpdir("all");
    let events = run(&d);
    let alerts: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .collect();
    let count = |sid: u64| {
        alerts
            .iter()
            .filter(|e| e["alert"]["signature_id"] == sid)
            .count()
    };
    // smb.share, file_data, the dcerpc keywords, smb.named_pipe and the
    // NTLMSSP buffers once each (to the server); the overlap event on
    // the file's transaction; no SMB1 here. A `dcerpc` rule applies to
    // DCERPC over SMB.
    assert_eq!(
        [1, 2, 3, 4, 6, 7, 8].map(count),
        [1, 1, 1, 1, 1, 0, 1],
        "{alerts:#?}"
    );
    assert!(count(5) >= 1, "{alerts:#?}");
    let by_sid = |sid: u64| {
        alerts
            .iter()
            .find(|e| e["alert"]["signature_id"] == sid)
            .unwrap()
    };
    let a = by_sid(2);
    assert_eq!(a["app_proto"], "smb");
    assert_eq!(a["smb"]["filename"], "dir\\report.doc");
    assert_eq!(a["smb"]["share"], "\\\\srv\\DATA");
    assert_eq!(a["smb"]["fuid"], "00000016-0135-0000-0001-000000000035");
    let a = by_sid(3);
    assert_eq!(a["smb"]["command"], "SMB2_COMMAND_IOCTL");
    assert_eq!(a["smb"]["function"], "FSCTL_PIPE_TRANSCEIVE");
    assert_eq!(a["smb"]["dcerpc"]["request"], "REQUEST");
    assert_eq!(a["smb"]["dcerpc"]["opnum"], 26);
    assert_eq!(
        a["smb"]["dcerpc"]["interfaces"][0]["uuid"],
        "12345678-1234-abcd-ef00-01234567cffb"
    );
    assert_eq!(by_sid(6)["smb"]["ntlmssp"]["user"], "alice");
    let records: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event_type"] == "smb").collect();
    let cmds: Vec<&str> = records
        .iter()
        .map(|r| r["smb"]["command"].as_str().unwrap())
        .collect();
    for c in [
        "SMB2_COMMAND_SESSION_SETUP",
        "SMB2_COMMAND_TREE_CONNECT",
        "SMB2_COMMAND_CREATE",
        "SMB2_COMMAND_IOCTL",
    ] {
        assert!(cmds.contains(&c), "{cmds:?}");
    }
    let tc = records
        .iter()
        .find(|r| r["smb"]["named_pipe"].is_string())
        .unwrap();
    assert_eq!(tc["smb"]["named_pipe"], "\\\\srv\\IPC$");
    assert_eq!(tc["smb"]["share_type"], "PIPE");
    assert_eq!(tc["smb"]["status"], "STATUS_SUCCESS");
    assert_eq!(tc["smb"]["tree_id"], 1);
    assert_eq!(tc["dest_port"], 445);
    let ss = records
        .iter()
        .find(|r| r["smb"]["command"] == "SMB2_COMMAND_SESSION_SETUP")
        .unwrap();
    assert_eq!(ss["smb"]["ntlmssp"]["domain"], "CORP");
    assert_eq!(ss["smb"]["ntlmssp"]["host"], "WS1");
}
