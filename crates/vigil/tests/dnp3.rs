//! DNP3 end to end: a crafted DNP3 session on port 20000 (a class 0
//! read and its response with IIN and objects, a write, a direct operate
//! over two transport segments, an unsolicited response, an unknown
//! object, a frame with a bad user-data CRC), through the `vigil` binary
//! to alerts and the EVE `dnp3` records.

mod common;

use std::net::SocketAddr;

use vigil_applayer::dnp3::frame;
use vigil_craft::{TcpSession, TimedFrame};

/// Master (1) to outstation (10): DIR, PRI, unconfirmed user data.
fn req(user: &[u8]) -> Vec<u8> {
    frame(0xc4, 10, 1, user)
}

/// Outstation to master: PRI, unconfirmed user data.
fn resp(user: &[u8]) -> Vec<u8> {
    frame(0x44, 1, 10, user)
}

pub fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.6.0.1:40000".parse::<SocketAddr>().unwrap(),
        "10.6.0.2:20000".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(11);
    // Direct operate: g12v1 (CROB), 2-byte index prefix, 2-byte count.
    let crob = [
        12, 1, 0x28, 1, 0, 3, 0, 0x41, 1, 0xe8, 3, 0, 0, 0xd0, 7, 0, 0, 0,
    ];
    let operate = [&[0xc2, 0x05][..], &crob[..]].concat();
    let mut bad = req(&[0xc5, 0xc5, 0x01, 60, 2, 0x06]);
    let n = bad.len();
    bad[n - 1] ^= 0x55;
    t.handshake()
        // Class 0 read.
        .client_send(&req(&[0xc0, 0xc0, 0x01, 60, 1, 0x06]))
        .server_send(&resp(&[
            0xc0, 0xc0, 0x81, 0x80, 0x00, 30, 2, 0x00, 0, 1, 1, 5, 0, 1, 6, 0, 1, 2, 0x00, 0, 2, 1,
            1, 0x81,
        ]))
        // Clear the restart indication (g80v1 index 7).
        .client_send(&req(&[0xc1, 0xc1, 0x02, 80, 1, 0x00, 7, 7, 0x00]))
        .server_send(&resp(&[0xc1, 0xc1, 0x81, 0x00, 0x00]))
        // Direct operate in two transport segments.
        .client_send(&req(&[&[0x42][..], &operate[..9]].concat()))
        .client_send(&req(&[&[0x83][..], &operate[9..]].concat()))
        .server_send(&resp(
            &[&[0xc2, 0xc2, 0x81, 0x00, 0x00][..], &crob[..]].concat(),
        ))
        // Unsolicited response: class 1 events, g2v1 with a 1-byte index.
        .server_send(&resp(&[
            0xc3, 0xf0, 0x82, 0x02, 0x00, 2, 1, 0x17, 1, 0, 0x81,
        ]))
        // An unknown object.
        .client_send(&req(&[0xc4, 0xc4, 0x01, 99, 9, 0x00, 0, 0]))
        // A bad user-data CRC.
        .client_send(&bad)
        .close();
    t.into_frames()
}

pub const RULES: &str = "\
alert dnp3 any any -> any any (msg:\"read\"; dnp3_func:read; sid:1;)\n\
alert dnp3 any any -> any any (msg:\"response\"; dnp3_func:129; sid:2;)\n\
alert dnp3 any any -> any any (msg:\"restart\"; dnp3_ind:device_restart; sid:3;)\n\
alert dnp3 any any -> any any (msg:\"crob\"; dnp3_obj:12,1; sid:4;)\n\
alert dnp3 any any -> any any (msg:\"crob data\"; dnp3.data; content:\"|0c 01 28|\"; sid:5;)\n\
alert dnp3 any any -> any any (msg:\"unknown object\"; app-layer-event:dnp3.unknown_object; sid:6;)\n\
alert dnp3 any any -> any any (msg:\"bad crc\"; app-layer-event:dnp3.bad_transport_crc; sid:7;)\n\
alert dnp3 any any -> any any (msg:\"unsolicited\"; dnp3_func:unsolicited_response; sid:8;)\n\
alert dnp3 any any -> any any (msg:\"class 1\"; dnp3_ind:class_1_events; sid:9;)\n\
alert dnp3 any any -> any any (msg:\"analog\"; dnp3_obj:30,2; sid:10;)\n\
alert dnp3 any any -> any any (msg:\"never: cold restart\"; dnp3_func:cold_restart; sid:11;)\n\
alert dnp3 any any -> any any (msg:\"two flags\"; dnp3_ind:device_restart,class_1_events; sid:12;)\n";

#[test]
fn dnp3_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run("dnp3", &capture(), RULES, None);
    let got: Vec<(u64, String, u64)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            assert_eq!(e["app_proto"], "dnp3");
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                e["direction"].as_str().unwrap().to_string(),
                e["pcap_cnt"].as_u64().unwrap(),
            )
        })
        .collect();
    // What Suricata 9 (DNP3 enabled) alerts on the same capture, in its
    // order and at the same packets: `dnp3.data` sees the first transport
    // segment of the direct operate (packet 21), `dnp3_ind` with two
    // names matches either, the bad-CRC frame's event has no transaction
    // to go to (the peer warns so) and alerts nowhere.
    let want: Vec<(u64, String, u64)> = [
        (1, "to_server", 11),
        (2, "to_client", 14),
        (3, "to_client", 14),
        (10, "to_client", 14),
        (12, "to_client", 14),
        (2, "to_client", 20),
        (5, "to_server", 21),
        (4, "to_server", 29),
        (2, "to_client", 30),
        (4, "to_client", 30),
        (5, "to_client", 30),
        (8, "to_client", 36),
        (9, "to_client", 36),
        (12, "to_client", 36),
        (1, "to_server", 37),
        (6, "to_server", 37),
    ]
    .iter()
    .map(|(s, d, p)| (*s, d.to_string(), *p))
    .collect();
    assert_eq!(got, want);
    // Alert objects: the record under its direction, empty for the
    // first segment of a message (as the peer's).
    for e in events.iter().filter(|e| e["event_type"] == "alert") {
        let d = &e["dnp3"];
        match e["pcap_cnt"].as_u64().unwrap() {
            21 => assert_eq!(d, &serde_json::json!({})),
            _ if e["direction"] == "to_server" => assert_eq!(d["request"]["type"], "request"),
            _ => assert!(d["response"]["type"]
                .as_str()
                .unwrap()
                .ends_with("response")),
        }
    }
    let recs: Vec<(u64, &serde_json::Value)> = events
        .iter()
        .filter(|e| e["event_type"] == "dnp3")
        .map(|e| (e["pcap_cnt"].as_u64().unwrap(), &e["dnp3"]))
        .collect();
    // The peer's records at the same packets (its `points` aside).
    let at: Vec<u64> = recs.iter().map(|r| r.0).collect();
    assert_eq!(at, [6, 11, 14, 17, 24, 29, 33, 36]);
    let r = recs[0].1;
    assert_eq!(r["type"], "request");
    assert_eq!(r["src"], 1);
    assert_eq!(r["dst"], 10);
    assert_eq!(r["control"]["dir"], true);
    assert_eq!(r["control"]["function_code"], 4);
    assert_eq!(r["application"]["function_code"], 1);
    assert_eq!(r["application"]["objects"][0]["group"], 60);
    assert_eq!(r["application"]["objects"][0]["qualifier"], 6);
    assert_eq!(r["application"]["complete"], true);
    let p = recs[1].1;
    assert_eq!(p["type"], "response");
    assert_eq!(
        p["iin"]["indicators"],
        serde_json::json!(["device_restart"])
    );
    assert_eq!(p["application"]["objects"][0]["count"], 2);
    assert_eq!(p["application"]["objects"][1]["stop"], 2);
    assert_eq!(recs[3].1["iin"], serde_json::json!({}));
    let op = recs[4].1;
    assert_eq!(op["application"]["function_code"], 5);
    assert_eq!(op["application"]["objects"][0]["prefix_code"], 2);
    assert_eq!(op["application"]["objects"][0]["range_code"], 8);
    assert_eq!(op["application"]["objects"][0]["count"], 1);
    let u = recs[6].1;
    assert_eq!(u["type"], "unsolicited_response");
    assert_eq!(u["application"]["control"]["uns"], true);
    assert_eq!(
        u["iin"]["indicators"],
        serde_json::json!(["class_1_events"])
    );
    let unk = recs[7].1;
    assert_eq!(unk["application"]["complete"], false);
    assert_eq!(unk["application"]["objects"][0]["group"], 99);
    if std::env::var_os("VIGIL_E2E_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
