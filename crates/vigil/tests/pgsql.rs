//! PostgreSQL end to end: a crafted session on port 5432 (startup, MD5
//! authentication, a simple query with rows, an error, terminate) in
//! small segments, through the `vigil` binary to alerts and the EVE
//! `pgsql` records.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn startup() -> Vec<u8> {
    let mut body = 0x0003_0000u32.to_be_bytes().to_vec();
    body.extend_from_slice(b"user\0alice\0database\0shop\0application_name\0psql\0\0");
    let mut v = (body.len() as u32 + 4).to_be_bytes().to_vec();
    v.extend(body);
    v
}

fn row(col: &[u8]) -> Vec<u8> {
    let mut b = 1u16.to_be_bytes().to_vec();
    b.extend_from_slice(&(col.len() as u32).to_be_bytes());
    b.extend_from_slice(col);
    msg(b'D', &b)
}

fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.5.0.1:44000".parse::<SocketAddr>().unwrap(),
        "10.5.0.2:5432".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(9);
    let mut md5 = 5u32.to_be_bytes().to_vec();
    md5.extend_from_slice(b"\x01\x02\x03\x04");
    let mut ok = msg(b'R', &0u32.to_be_bytes());
    ok.extend(msg(b'S', b"server_version\x0016.1\x00"));
    ok.extend(msg(b'K', &[0, 0, 0x30, 0x39, 0, 0, 0, 7]));
    ok.extend(msg(b'Z', b"I"));
    let mut rows = msg(
        b'T',
        &[
            0, 1, b'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 4, 255, 255, 255, 255, 0, 0,
        ],
    );
    rows.extend(row(b"42"));
    rows.extend(row(b"1000"));
    rows.extend(msg(b'C', b"SELECT 2\x00"));
    rows.extend(msg(b'Z', b"I"));
    let mut err = msg(
        b'E',
        b"SERROR\x00VERROR\x00C42P01\x00Mrelation \"nope\" does not exist\x00\x00",
    );
    err.extend(msg(b'Z', b"I"));
    t.handshake()
        .client_send(&startup())
        .server_send(&msg(b'R', &md5))
        .client_send(&msg(b'p', b"md5abcdef0123\x00"))
        .server_send(&ok)
        .client_send(&msg(b'Q', b"select a from accounts;\x00"))
        .server_send(&rows)
        .client_send(&msg(b'Q', b"select * from nope;\x00"))
        .server_send(&err)
        .client_send(&msg(b'X', b""))
        .close();
    t.into_frames()
}

#[test]
fn pgsql_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run(
        "pgsql",
        &capture(),
        "alert pgsql any any -> any any (msg:\"query\"; pgsql.query; content:\"from accounts\"; sid:1;)\n\
         alert pgsql any any -> any any (msg:\"any query\"; pgsql.query; content:\"select\"; startswith; sid:2;)\n\
         alert pgsql any any -> any any (msg:\"never: not a query\"; pgsql.query; content:\"alice\"; sid:3;)\n\
         alert pgsql any any -> any any (msg:\"never: event\"; app-layer-event:pgsql.malformed_message; sid:4;)\n",
        None,
    );
    let alerts: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .collect();
    let mut sids: Vec<u64> = alerts
        .iter()
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2, 2], "{alerts:#?}");
    for a in &alerts {
        assert_eq!(a["app_proto"], "pgsql");
        assert_eq!(a["direction"], "to_server");
    }
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "pgsql")
        .map(|e| &e["pgsql"])
        .collect();
    assert_eq!(recs.len(), 5, "{recs:#?}");
    // Suricata's numbering inside the object, from 1; none outside.
    assert_eq!(recs[0]["tx_id"], 1);
    assert_eq!(recs[4]["tx_id"], 5);
    assert!(events
        .iter()
        .filter(|e| e["event_type"] == "pgsql")
        .all(|e| e.get("tx_id").is_none()));
    let p = &recs[0]["request"];
    assert_eq!(p["protocol_version"], "3.0");
    assert_eq!(p["startup_parameters"]["user"], "alice");
    assert_eq!(
        p["startup_parameters"]["optional_parameters"][0]["database"],
        "shop"
    );
    assert_eq!(
        recs[0]["response"]["authentication_md5_password"],
        "\u{1}\u{2}\u{3}\u{4}"
    );
    assert_eq!(recs[1]["request"]["password_redacted"], true);
    assert_eq!(recs[1]["response"]["message"], "authentication_ok");
    assert_eq!(
        recs[1]["response"]["parameter_status"][0]["server_version"],
        "16.1"
    );
    assert_eq!(recs[1]["response"]["process_id"], 12345);
    assert_eq!(
        recs[2]["request"]["simple_query"],
        "select a from accounts;"
    );
    assert_eq!(recs[2]["response"]["data_rows"], 2);
    assert_eq!(recs[2]["response"]["data_size"], 6);
    assert_eq!(recs[2]["response"]["command_completed"], "SELECT 2");
    assert_eq!(recs[3]["response"]["code"], "42P01");
    assert_eq!(recs[4]["request"]["message"], "termination_message");
    if std::env::var_os("VIGIL_KEEP_E2E").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
