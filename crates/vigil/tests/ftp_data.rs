//! FTP data connections end to end: a crafted control session that
//! announces a passive `RETR`, an active `STOR` and an extended passive
//! `LIST`, the three data connections, and a connection nobody announced, through the real
//! `vigil` binary at 1 and 2 workers.

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

const T0: (i64, u32) = (1_700_000_000, 0);

/// Control 10.0.0.1:40000 -> 10.0.0.2:21. `PASV` (227: port 5001), the
/// client opens 10.0.0.1:50000 -> 10.0.0.2:5001 before sending `RETR`
/// (as curl does), the server sends the file over it; then `PORT`
/// (port 59914), `STOR`, and the server connects from port 20 to the
/// client, which sends the file. A third connection to port 5002 carries
/// the same bytes as the `RETR` file without being announced.
fn session(retr_file: &[u8]) -> Vec<TimedFrame> {
    let mut out = Vec::new();
    let mut ctl = TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.2:21")).start_at(T0);
    ctl.handshake()
        .server_send(b"220 FTP server ready\r\n")
        .client_send(b"USER anonymous\r\n")
        .server_send(b"331 Password required\r\n")
        .client_send(b"PASS guest\r\n")
        .server_send(b"230 Logged in\r\n")
        .client_send(b"PASV\r\n")
        .server_send(b"227 Entering Passive Mode (10,0,0,2,19,137).\r\n");
    out.extend(ctl.take_frames());
    let mut data =
        TcpSession::new(addr("10.0.0.1:50000"), addr("10.0.0.2:5001")).start_at(ctl.now());
    data.handshake();
    out.extend(data.take_frames());
    ctl.set_time(data.now())
        .client_send(b"RETR pub/update.vbs\r\n")
        .server_send(b"150 Opening BINARY mode data connection\r\n");
    out.extend(ctl.take_frames());
    data.set_time(ctl.now()).server_send(retr_file).close();
    out.extend(data.take_frames());
    ctl.set_time(data.now())
        .server_send(b"226 Transfer complete\r\n")
        .client_send(b"PORT 10,0,0,1,234,10\r\n")
        .server_send(b"200 PORT command successful\r\n")
        .client_send(b"STOR upload.bin\r\n");
    out.extend(ctl.take_frames());
    let mut active =
        TcpSession::new(addr("10.0.0.2:20"), addr("10.0.0.1:59914")).start_at(ctl.now());
    // The FTP client (this connection's server) sends the file.
    active.handshake().server_send(b"UPLOADED-CONTENT").close();
    out.extend(active.take_frames());
    ctl.set_time(active.now())
        .server_send(b"150 Ok to send data\r\n")
        .server_send(b"226 Transfer complete\r\n");
    out.extend(ctl.take_frames());
    let mut other =
        TcpSession::new(addr("10.0.0.1:50001"), addr("10.0.0.2:5002")).start_at(ctl.now());
    other.handshake().server_send(retr_file).close();
    out.extend(other.take_frames());
    // EPSV and LIST: a listing, with no file name.
    ctl.set_time(other.now())
        .client_send(b"EPSV\r\n")
        .server_send(b"229 Entering Extended Passive Mode (|||5003|)\r\n")
        .client_send(b"LIST\r\n");
    out.extend(ctl.take_frames());
    let mut list =
        TcpSession::new(addr("10.0.0.1:50002"), addr("10.0.0.2:5003")).start_at(ctl.now());
    list.handshake()
        .server_send(b"-rw-r--r-- 1 ftp ftp 90 update.vbs\r\n")
        .close();
    out.extend(list.take_frames());
    ctl.set_time(list.now())
        .client_send(b"QUIT\r\n")
        .server_send(b"221 Goodbye\r\n")
        .close();
    out.extend(ctl.take_frames());
    out
}

const FILE: &[u8] = b"Set s = CreateObject(\"WScript.Shell\")\r\ns.Run \"reg add HKCU\\x /d ftp://host/abcdefgh.exe\"\r\n";

const RULES: &str = "\
alert ftp-data $EXTERNAL_NET any -> $HOME_NET any (msg:\"vbs in ftp-data\"; flow:established,to_client; content:\"CreateObject(|22|WScript.Shell|22|)\"; content:\"reg add\"; nocase; fast_pattern; content:\"ftp://\"; distance:0; within:200; pcre:\"/[a-z]{8}.[a-z]{3}/Ri\"; sid:1;)\n\
alert ftp-data any any -> any any (msg:\"retr\"; ftpdata_command:retr; sid:2;)\n\
alert ftp-data any any -> any any (msg:\"stor\"; ftpdata_command:stor; sid:3;)\n\
alert ftp-data any any -> any any (msg:\"upload to server\"; flow:to_server; content:\"UPLOADED\"; sid:4;)\n\
alert ftp-data any any -> any any (msg:\"upload to client\"; flow:to_client; content:\"UPLOADED\"; sid:5;)\n\
alert tcp any any -> any any (msg:\"vbs anywhere\"; flow:to_client; content:\"CreateObject\"; sid:6;)\n\
alert tcp any any -> any any (msg:\"ftp-data proto\"; app-layer-protocol:ftp-data; flow:to_client; content:\"Set s\"; sid:7;)\n\
alert ftp-data any any -> any any (msg:\"listing\"; flow:to_client; ftpdata_command:list; sid:8;)\n";

mod common;

const VARS: &str =
    "vars:\n  address-groups:\n    HOME_NET: \"10.0.0.1\"\n    EXTERNAL_NET: \"!$HOME_NET\"\n";

struct Out {
    eve: String,
    events: Vec<serde_json::Value>,
    stats: String,
}

fn run(tag: &str, frames: &[TimedFrame], rules: &str, workers: usize, types: &[&str]) -> Out {
    let w = workers.to_string();
    let tag = format!("ftpdata-{tag}-{workers}");
    let r = common::run_with(&tag, frames, rules, Some(types), VARS, &["--workers", &w]);
    let stats = std::fs::read_to_string(r.dir.join("out/stats.log")).unwrap_or_default();
    Out {
        eve: r.eve,
        events: r.events,
        stats,
    }
}

fn alerts(o: &Out, sid: u64) -> Vec<&serde_json::Value> {
    o.events
        .iter()
        .filter(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == sid)
        .collect()
}

fn stat(o: &Out, name: &str) -> Option<u64> {
    common::stat(&o.stats, name)
}

#[test]
fn data_connections_are_ftp_data_for_any_worker_count() {
    let frames = session(FILE);
    let types = ["alert", "ftp"];
    let one = run("main", &frames, RULES, 1, &types);
    let two = run("main", &frames, RULES, 2, &types);
    assert_eq!(one.eve, two.eve, "1 and 2 workers differ");

    // The ET Open rule on the RETR file, from the server to the client,
    // on the announced connection only.
    let a = alerts(&one, 1);
    assert_eq!(a.len(), 1, "{:#?}", one.events);
    assert_eq!(a[0]["app_proto"], "ftp-data");
    assert_eq!(a[0]["src_port"], 5001);
    assert_eq!(a[0]["direction"], "to_client");
    // Suricata puts the object in transaction alerts only.
    assert!(a[0].get("ftp_data").is_none());
    // A plain TCP rule sees both connections; the unannounced one is not
    // ftp-data.
    let a = alerts(&one, 6);
    assert_eq!(a.len(), 2);
    assert!(a
        .iter()
        .any(|e| e["dest_port"] == 50001 && e["app_proto"] != "ftp-data"));
    let a = alerts(&one, 7);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["src_port"], 5001);

    // `ftpdata_command` tells the two transfers apart; without a flow
    // direction it alerts once each way, as Suricata does.
    let a = alerts(&one, 2);
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["dest_port"], 5001);
    assert_eq!(a[0]["direction"], "to_server");
    assert_eq!(a[1]["direction"], "to_client");
    assert_eq!(a[0]["ftp_data"]["filename"], "pub/update.vbs");
    let a = alerts(&one, 3);
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["src_port"], 20);
    assert_eq!(a[0]["ftp_data"]["command"], "STOR");
    assert_eq!(a[0]["ftp_data"]["filename"], "upload.bin");
    // Active mode: the server opened the data connection, so the file the
    // FTP client sends goes to the data flow's client.
    assert!(alerts(&one, 4).is_empty());
    assert_eq!(alerts(&one, 5).len(), 1);

    // One ftp_data record per data connection, once both sides ended.
    let recs: Vec<&serde_json::Value> = one
        .events
        .iter()
        .filter(|e| e["event_type"] == "ftp_data")
        .collect();
    assert_eq!(recs.len(), 3, "{recs:#?}");
    // Logged on the packet that ended the connection, without a tx_id or
    // app_proto (Suricata's record).
    assert!(recs[0]["pcap_cnt"].is_u64());
    assert!(recs[0].get("tx_id").is_none());
    assert_eq!(recs[0]["dest_port"], 5001);
    assert_eq!(
        recs[0]["ftp_data"],
        serde_json::json!({"filename": "pub/update.vbs", "command": "RETR"})
    );
    assert_eq!(
        recs[1]["ftp_data"],
        serde_json::json!({"filename": "upload.bin", "command": "STOR"})
    );
    assert_eq!(recs[2]["ftp_data"], serde_json::json!({"command": "LIST"}));
    let a = alerts(&one, 8);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["src_port"], 5003);

    assert_eq!(stat(&one, "ftp.expectations.created"), Some(3));
    assert_eq!(stat(&one, "ftp.expectations.matched"), Some(3));
    assert_eq!(stat(&one, "app_layer.flow.ftp_data"), Some(3));
    assert_eq!(stat(&one, "app_layer.flow.ftp"), Some(1));
}

#[test]
fn ftp_data_records_follow_the_ftp_type() {
    let frames = session(FILE);
    let o = run("types", &frames, RULES, 1, &["alert"]);
    assert!(o.events.iter().all(|e| e["event_type"] != "ftp_data"));
    // Alerts still carry the object.
    assert_eq!(alerts(&o, 2)[0]["ftp_data"]["command"], "RETR");
}

#[test]
fn many_announcements_stay_bounded() {
    // One control session announcing and using 6000 passive transfers
    // that never connect: the table keeps at most its cap and counts the
    // rest, and a transfer made afterwards is still recognised.
    let mut ctl = TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.2:21")).start_at(T0);
    ctl.handshake().server_send(b"220 ready\r\n");
    for i in 0..6000u32 {
        let port = 10_000 + i;
        let reply = format!(
            "227 Entering Passive Mode (10,0,0,2,{},{})\r\n",
            port >> 8,
            port & 0xff
        );
        ctl.client_send(b"PASV\r\n")
            .server_send(reply.as_bytes())
            .client_send(format!("RETR f{i}\r\n").as_bytes());
    }
    ctl.client_send(b"PASV\r\n")
        .server_send(b"227 Entering Passive Mode (10,0,0,2,19,137)\r\n")
        .client_send(b"RETR last.vbs\r\n");
    let mut frames = ctl.take_frames();
    let mut data =
        TcpSession::new(addr("10.0.0.1:50000"), addr("10.0.0.2:5001")).start_at(ctl.now());
    data.handshake().server_send(FILE).close();
    frames.extend(data.take_frames());
    ctl.set_time(data.now()).close();
    frames.extend(ctl.take_frames());
    let o = run("bounds", &frames, RULES, 2, &["alert"]);
    assert_eq!(stat(&o, "ftp.expectations.created"), Some(6001));
    assert_eq!(stat(&o, "ftp.expectations.matched"), Some(1));
    assert_eq!(stat(&o, "ftp.expectations.peak"), Some(4096));
    assert_eq!(stat(&o, "ftp.expectations.evicted"), Some(6001 - 4096));
    let a = alerts(&o, 2);
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["ftp_data"]["filename"], "last.vbs");
}
