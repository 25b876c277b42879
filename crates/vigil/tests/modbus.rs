//! Modbus end to end: a crafted Modbus/TCP session on port 502 (reads,
//! single and multiple writes, a diagnostic, an exception, the
//! encapsulated interface, a user-defined function, a bad protocol id and
//! an unsolicited response) in small segments, through the `vigil` binary
//! to alerts and the EVE `modbus` records.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

/// An MBAP header (protocol id `proto`) and a PDU.
fn mbap(tid: u16, proto: u16, unit: u8, pdu: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&tid.to_be_bytes());
    m.extend_from_slice(&proto.to_be_bytes());
    m.extend_from_slice(&((pdu.len() + 1) as u16).to_be_bytes());
    m.push(unit);
    m.extend_from_slice(pdu);
    m
}

fn msg(tid: u16, unit: u8, pdu: &[u8]) -> Vec<u8> {
    mbap(tid, 0, unit, pdu)
}

pub fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.5.0.1:50100".parse::<SocketAddr>().unwrap(),
        "10.5.0.2:502".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(9);
    t.handshake()
        // 1: read holding registers 17-18.
        .client_send(&msg(1, 1, &[3, 0, 0x10, 0, 2]))
        .server_send(&msg(1, 1, &[3, 4, 0x12, 0x34, 0x56, 0x78]))
        // 2: write single register 5 (address 4) = 16.
        .client_send(&msg(2, 1, &[6, 0, 4, 0, 0x10]))
        .server_send(&msg(2, 1, &[6, 0, 4, 0, 0x10]))
        // 3: write multiple registers 10-12 = 1, 2, 3.
        .client_send(&msg(3, 1, &[0x10, 0, 9, 0, 3, 6, 0, 1, 0, 2, 0, 3]))
        .server_send(&msg(3, 1, &[0x10, 0, 9, 0, 3]))
        // 4: diagnostic, restart communications option.
        .client_send(&msg(4, 1, &[8, 0, 1, 0xff, 0]))
        .server_send(&msg(4, 1, &[8, 0, 1, 0xff, 0]))
        // 5: read coils, answered by an exception (illegal data address).
        .client_send(&msg(5, 1, &[1, 0, 0x20, 0, 8]))
        .server_send(&msg(5, 1, &[0x81, 2]))
        // 6: a bad protocol id.
        .client_send(&mbap(6, 3, 1, &[3, 0, 0, 0, 1]))
        // 7: read device identification (MEI 14) from unit 7.
        .client_send(&msg(7, 7, &[0x2b, 0x0e, 1, 0]))
        .server_send(&msg(
            7,
            7,
            &[0x2b, 0x0e, 1, 1, 0, 0, 1, 0, 3, b'A', b'B', b'C'],
        ))
        // 8: a user-defined function (65).
        .client_send(&msg(8, 1, &[0x41, 1, 2, 3]))
        .server_send(&msg(8, 1, &[0x41, 4]))
        // An unsolicited read holding registers response.
        .server_send(&msg(99, 1, &[3, 2, 0, 1]))
        .close();
    t.into_frames()
}

pub const RULES: &str = "\
alert modbus any any -> any any (msg:\"read holding\"; modbus:function 3; sid:1;)\n\
alert modbus any any -> any any (msg:\"write 5=16\"; modbus:access write holding, address 5, value 16; sid:2;)\n\
alert modbus any any -> any any (msg:\"write 11=2\"; modbus:access write, address 11, value 2; sid:3;)\n\
alert modbus any any -> any any (msg:\"restart comm\"; modbus:function 8, subfunction 1; sid:4;)\n\
alert modbus any any -> any any (msg:\"user function\"; modbus:unit 1, function user; sid:5;)\n\
alert modbus any any -> any any (msg:\"unsolicited\"; app-layer-event:modbus.unsolicited_response; sid:6;)\n\
alert modbus any any -> any any (msg:\"bad proto id\"; app-layer-event:modbus.invalid_protocol_id; sid:7;)\n\
alert modbus any any -> any any (msg:\"read coils\"; modbus:access read coils; sid:8;)\n\
alert modbus any any -> any any (msg:\"unit above 5\"; modbus:unit >5; sid:9;)\n\
alert modbus any any -> any any (msg:\"not assigned\"; modbus:function !assigned; sid:10;)\n\
alert modbus any any -> any any (msg:\"never: write coils\"; modbus:access write coils; sid:11;)\n\
alert modbus any any -> any any (msg:\"never: subfunction 4\"; modbus:function 8, subfunction 4; sid:12;)\n\
alert modbus any any -> any any (msg:\"never: write 11=3\"; modbus:access write, address 11, value 3; sid:13;)\n\
alert modbus any any -> any any (msg:\"never: unit 2\"; modbus:unit 2; sid:14;)\n\
alert modbus any any -> any any (msg:\"never: flooded\"; app-layer-event:modbus.flooded; sid:15;)\n";

#[test]
fn modbus_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run("modbus", &capture(), RULES, None);
    let got: Vec<(u64, String, u64)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            assert_eq!(e["app_proto"], "modbus");
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                e["direction"].as_str().unwrap().to_string(),
                e["modbus"]["id"].as_u64().unwrap(),
            )
        })
        .collect();
    // What Suricata 9 (Modbus enabled) alerts on the same capture, in its
    // order: `modbus` inspects the request (the response of an
    // unsolicited one, so sid 1 matches transaction 9 too), to the server
    // only; the events match both ways.
    let want: Vec<(u64, String, u64)> = [
        (1, "to_server", 1),
        (2, "to_server", 2),
        (3, "to_server", 3),
        (4, "to_server", 4),
        (8, "to_server", 5),
        (7, "to_client", 6),
        (1, "to_server", 6),
        (7, "to_server", 6),
        (9, "to_server", 7),
        (5, "to_server", 8),
        (10, "to_server", 8),
        (1, "to_server", 9),
        (6, "to_server", 9),
        (6, "to_client", 9),
    ]
    .iter()
    .map(|(s, d, t)| (*s, d.to_string(), *t))
    .collect();
    assert_eq!(got, want);
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "modbus")
        .map(|e| &e["modbus"])
        .collect();
    // Logged as each completes; the unanswered request last (flow end).
    let ids: Vec<u64> = recs.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 7, 8, 9, 6]);
    let r1 = recs[0];
    assert_eq!(r1["request"]["function_code"], "RdHoldRegs");
    assert_eq!(r1["request"]["access_type"], "READ | HOLDING");
    assert_eq!(r1["request"]["read"]["address"], 16);
    assert_eq!(r1["request"]["read"]["quantity"], 2);
    // sawp-modbus checks a read response's byte count as bits, for
    // registers too: Suricata's record says DATA_VALUE as well.
    assert_eq!(r1["response"]["error_flags"], "DATA_VALUE");
    assert_eq!(r1["response"]["read"]["data"], "\u{12}4Vx");
    let r2 = recs[1];
    assert_eq!(
        r2["request"]["access_type"],
        "WRITE | HOLDING | SINGLE | WRITE_SINGLE"
    );
    assert_eq!(r2["response"]["write"]["address"], 4);
    assert_eq!(r2["response"]["write"]["data"], 16);
    assert_eq!(recs[2]["response"]["write"]["data"], 3);
    let d = &recs[3]["request"]["diagnostic"];
    assert_eq!(d["code"], "RestartCommOpt");
    assert_eq!(d["data"], "\\xff\u{0}");
    let ex = &recs[4]["response"];
    assert_eq!(ex["function_raw"], 129);
    assert_eq!(ex["exception"]["code"], "IllegalDataAddr");
    assert_eq!(recs[5]["request"]["mei"]["code"], "RdDevId");
    assert_eq!(recs[5]["request"]["unit_id"], 7);
    assert_eq!(recs[6]["request"]["category"], "USER_DEFINED");
    assert_eq!(recs[6]["request"]["function_code"], "Unknown");
    assert_eq!(recs[6]["response"]["data"], "\u{4}");
    assert!(recs[7].get("request").is_none());
    assert_eq!(recs[7]["response"]["transaction_id"], 99);
    assert_eq!(recs[8]["request"]["error_flags"], "PROTO_ID");
    assert_eq!(recs[8]["request"]["protocol_id"], 3);
    assert!(recs[8].get("response").is_none());
    if std::env::var_os("VIGIL_E2E_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Malformed and inconsistent messages, one per event.
fn malformed_capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.5.0.3:50200".parse::<SocketAddr>().unwrap(),
        "10.5.0.4:502".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_100, 0));
    // A length of 1 (below the minimum): its byte is skipped.
    let mut short = msg(6, 1, &[]);
    short.push(0x2a);
    t.handshake()
        // A clean first message, for detection.
        .client_send(&msg(10, 1, &[3, 0, 0, 0, 1]))
        .server_send(&msg(10, 1, &[3, 2, 0, 1]))
        // 1: read holding registers, quantity 0.
        .client_send(&msg(1, 1, &[3, 0, 0, 0, 0]))
        // 2: function code 0.
        .client_send(&msg(2, 1, &[0, 1, 2]))
        // 3: read coils answered by an unknown exception code.
        .client_send(&msg(3, 1, &[1, 0, 0, 0, 8]))
        .server_send(&msg(3, 1, &[0x81, 9]))
        // 4: write single register answered with another value.
        .client_send(&msg(4, 1, &[6, 0, 1, 0, 5]))
        .server_send(&msg(4, 1, &[6, 0, 1, 0, 6]))
        // 5: a diagnostic request with extra data.
        .client_send(&msg(5, 1, &[8, 0, 0, 1, 2, 3, 4]))
        .client_send(&short)
        // 7: write single coil with a value other than 0 or 0xff00.
        .client_send(&msg(7, 1, &[5, 0, 3, 0x12, 0x34]))
        .close();
    t.into_frames()
}

const EVENT_RULES: &str = "\
alert modbus any any -> any any (msg:\"invalid value\"; app-layer-event:modbus.invalid_value; sid:1;)\n\
alert modbus any any -> any any (msg:\"invalid function\"; app-layer-event:modbus.invalid_function_code; sid:2;)\n\
alert modbus any any -> any any (msg:\"invalid exception\"; app-layer-event:modbus.invalid_exception_code; sid:3;)\n\
alert modbus any any -> any any (msg:\"mismatch\"; app-layer-event:modbus.value_mismatch; sid:4;)\n\
alert modbus any any -> any any (msg:\"invalid length\"; app-layer-event:modbus.invalid_length; sid:5;)\n\
alert modbus any any -> any any (msg:\"never: unsolicited\"; app-layer-event:modbus.unsolicited_response; sid:6;)\n\
alert modbus any any -> any any (msg:\"never: protocol id\"; app-layer-event:modbus.invalid_protocol_id; sid:7;)\n\
alert modbus any any -> any any (msg:\"coil write\"; modbus:access write coils, address 4, value 1; sid:8;)\n";

#[test]
fn modbus_events() {
    let common::Run { events, dir, .. } =
        common::run("modbus-events", &malformed_capture(), EVENT_RULES, None);
    let got: Vec<(u64, String, u64)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                e["direction"].as_str().unwrap().to_string(),
                e["modbus"]["id"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut got = got;
    got.sort();
    // What Suricata 9 alerts on the same capture (sorted: the engine
    // inspects the two directions at other packets than Suricata, so the
    // order within a few packets differs). The length-1 message loses the
    // framing, as in Suricata: what follows decodes as garbage
    // (transactions 8 and 9, bad length and protocol id).
    let want: Vec<(u64, String, u64)> = [
        (1, "to_client", 2),
        (1, "to_server", 2),
        (2, "to_client", 3),
        (2, "to_server", 3),
        (3, "to_client", 4),
        (3, "to_server", 4),
        (4, "to_client", 1),
        (4, "to_client", 5),
        (4, "to_server", 1),
        (4, "to_server", 5),
        (5, "to_client", 6),
        (5, "to_client", 7),
        (5, "to_client", 8),
        (5, "to_client", 9),
        (5, "to_server", 6),
        (5, "to_server", 7),
        (5, "to_server", 8),
        (5, "to_server", 9),
        (7, "to_client", 8),
        (7, "to_client", 9),
        (7, "to_server", 8),
        (7, "to_server", 9),
    ]
    .iter()
    .map(|(s, d, t)| (*s, d.to_string(), *t))
    .collect();
    assert_eq!(got, want);
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "modbus")
        .map(|e| &e["modbus"])
        .collect();
    let ids: Vec<u64> = recs.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 4, 5, 2, 3, 6, 7, 8, 9]);
    assert_eq!(recs[1]["response"]["exception"]["code"], "Unknown");
    assert_eq!(recs[1]["response"]["error_flags"], "EXC_CODE");
    assert_eq!(recs[2]["response"]["error_flags"], "DATA_VALUE");
    assert_eq!(recs[3]["request"]["read"]["quantity"], 0);
    assert_eq!(recs[4]["request"]["error_flags"], "FUNC_CODE");
    assert_eq!(recs[5]["request"]["error_flags"], "DATA_LENGTH");
    assert_eq!(recs[6]["request"]["transaction_id"], 6);
    assert_eq!(recs[7]["request"]["error_flags"], "DATA_LENGTH | PROTO_ID");
    if std::env::var_os("VIGIL_E2E_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
