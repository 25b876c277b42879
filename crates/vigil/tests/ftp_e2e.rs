//! FTP end to end: a crafted control session in, the EVE `ftp` records
//! and the `ftp` object of alerts out, through the real `vigil` binary.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use vigil_craft::{write_pcap_file, TcpSession, TimedFrame};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-ftp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Runs vigil on `frames` with `rules` (and a config when given) and
/// returns the EVE events.
fn run(
    dir: &Path,
    frames: &[TimedFrame],
    rules: &str,
    config: Option<&str>,
) -> Vec<serde_json::Value> {
    let pcap = dir.join("in.pcap");
    write_pcap_file(&pcap, frames).unwrap();
    let rules_path = dir.join("test.rules");
    std::fs::write(&rules_path, rules).unwrap();
    let out = dir.join("out");
    let mut args: Vec<String> = ["run", "-r", pcap.to_str().unwrap(), "-S"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(rules_path.to_str().unwrap().into());
    args.extend(["-l".to_string(), out.to_str().unwrap().into()]);
    if let Some(c) = config {
        let p = dir.join("vigil.yaml");
        std::fs::write(&p, c).unwrap();
        args.extend(["-c".to_string(), p.to_str().unwrap().into()]);
    }
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(&args)
        .output()
        .expect("run vigil");
    assert!(
        o.status.success(),
        "vigil failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out.join("eve.json"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("eve line is JSON"))
        .collect()
}

/// An active-mode session on port 21 (client 10.0.0.1), with a multi-line
/// greeting, a bounce `PORT` naming another host, a `150`/`226` pair and a
/// passive-mode `EPSV`. The Suricata peer gives the same alerts (sid,
/// packet, direction) and the same `ftp` records on it.
fn session() -> Vec<TimedFrame> {
    let mut s = TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.2:21"));
    s.handshake()
        .server_send(b"220-Welcome to the test server\r\n220 ready\r\n")
        .client_send(b"USER anonymous\r\n")
        .server_send(b"331 Please specify the password.\r\n")
        .client_send(b"PASS guest\r\n")
        .server_send(b"230 Login successful.\r\n")
        .client_send(b"PORT 10,0,0,1,234,10\r\n")
        .server_send(b"200 PORT command successful.\r\n")
        .client_send(b"RETR a.txt\r\n")
        .server_send(b"150 Opening BINARY mode data connection.\r\n")
        .server_send(b"226 Transfer complete.\r\n")
        .client_send(b"PORT 192,168,7,7,0,80\r\n")
        .server_send(b"200 PORT command successful.\r\n")
        .client_send(b"EPSV\r\n")
        .server_send(b"229 Entering Extended Passive Mode (|||6446|)\r\n")
        .client_send(b"QUIT\r\n")
        .server_send(b"221 Goodbye.\r\n")
        .close();
    s.into_frames()
}

const RULES: &str = "\
alert ftp any any -> any any (msg:\"retr\"; ftp.command; content:\"RETR\"; ftp.command_data; content:\"a.txt\"; sid:1;)\n\
alert ftp any any -> any any (msg:\"226\"; ftp.completion_code; content:\"226\"; ftp.reply; content:\"Transfer\"; sid:2;)\n\
alert ftp any any -> any any (msg:\"active\"; flow:to_server; ftp.mode:active; ftp.dynamic_port:59914; sid:3;)\n\
alert ftp any any -> any any (msg:\"passive\"; ftp.mode:passive; ftp.dynamic_port:>6000; sid:4;)\n\
alert tcp any any -> any 21 (msg:\"bounce\"; flow:to_server,established; content:\"PORT\"; nocase; ftpbounce; sid:5;)\n\
alert ftp any any -> any any (msg:\"no reply yet\"; ftp.reply_received:no; sid:6;)\n\
alert ftp any any -> any any (msg:\"replied\"; ftp.reply_received:yes; ftp.reply; content:\"Goodbye\"; sid:7;)\n";

fn alerts(events: &[serde_json::Value], sid: u64) -> Vec<&serde_json::Value> {
    events
        .iter()
        .filter(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == sid)
        .collect()
}

#[test]
fn ftp_session_to_eve_records_and_alerts() {
    let d = tmpdir("session");
    let events = run(&d, &session(), RULES, None);
    let ftp: Vec<&serde_json::Value> = events.iter().filter(|e| e["event_type"] == "ftp").collect();
    // The greeting, USER, PASS, PORT, RETR, PORT, EPSV, QUIT.
    assert_eq!(ftp.len(), 8, "{ftp:#?}");
    let greeting = &ftp[0]["ftp"];
    assert!(greeting.get("command").is_none());
    assert_eq!(
        greeting["reply"],
        serde_json::json!(["220-Welcome to the test server", "ready"])
    );
    assert_eq!(greeting["completion_code"], serde_json::json!(["220"]));
    let retr = ftp.iter().find(|e| e["ftp"]["command"] == "RETR").unwrap();
    assert_eq!(retr["ftp"]["command_data"], "a.txt");
    assert_eq!(retr["ftp"]["command_truncated"], false);
    assert_eq!(
        retr["ftp"]["completion_code"],
        serde_json::json!(["150", "226"])
    );
    assert_eq!(retr["ftp"]["reply_received"], "yes");
    assert_eq!(retr["ftp"]["reply_truncated"], false);
    assert_eq!(retr["app_proto"], serde_json::Value::Null);
    let epsv = ftp.iter().find(|e| e["ftp"]["command"] == "EPSV").unwrap();
    assert_eq!(epsv["ftp"]["dynamic_port"], 6446);
    assert_eq!(epsv["ftp"]["mode"], "passive");

    // Buffers: once per transaction, with the transaction's object.
    let a = alerts(&events, 1);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["ftp"]["command"], "RETR");
    assert_eq!(a[0]["app_proto"], "ftp");
    // Reply keywords wait for the final reply: the alert has both lines.
    let a = alerts(&events, 2);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["direction"], "to_client");
    assert_eq!(a[0]["ftp"]["reply"][1], "Transfer complete.");
    // PORT 10,0,0,1,234,10: port 59914, the client's own address.
    let a = alerts(&events, 3);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["ftp"]["command_data"], "10,0,0,1,234,10");
    // EPSV in both directions (no flow direction in the rule).
    assert_eq!(alerts(&events, 4).len(), 2);
    // Only the PORT naming 192.168.7.7 is a bounce.
    let a = alerts(&events, 5);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["ftp"]["command_data"], "192,168,7,7,0,80");
    // A reply side is inspected once a reply reached it: RETR after its
    // 150 had none yet; the other commands were answered at once.
    let a = alerts(&events, 6);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["ftp"]["command"], "RETR");
    assert_eq!(a[0]["ftp"]["reply_received"], "no");
    assert_eq!(alerts(&events, 7)[0]["ftp"]["command"], "QUIT");
}

#[test]
fn ftp_records_follow_the_eve_types_list() {
    let d = tmpdir("types");
    let cfg = "%YAML 1.1\n---\noutputs:\n  - eve-log:\n      enabled: yes\n      filename: eve.json\n      types:\n        - alert\n";
    let events = run(&d, &session(), RULES, Some(cfg));
    assert!(events.iter().all(|e| e["event_type"] != "ftp"));
    // Alerts still carry the transaction's object.
    assert_eq!(alerts(&events, 1)[0]["ftp"]["command"], "RETR");
}
