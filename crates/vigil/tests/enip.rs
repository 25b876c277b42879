//! ENIP end to end: a crafted EtherNet/IP session over TCP (RegisterSession,
//! a CIP Get Attribute Single and its response, ListServices) in small
//! segments, and a ListIdentity exchange over UDP, through the `vigil`
//! binary to alerts and the EVE `enip` records.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use vigil_craft::{eth_ipv4_udp, TcpSession, TimedFrame};

fn pdu(cmd: u16, session: u32, data: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&cmd.to_le_bytes());
    p.extend_from_slice(&(data.len() as u16).to_le_bytes());
    p.extend_from_slice(&session.to_le_bytes());
    p.extend_from_slice(&0u32.to_le_bytes());
    p.extend_from_slice(b"vigil\0\0\0");
    p.extend_from_slice(&0u32.to_le_bytes());
    p.extend_from_slice(data);
    p
}

/// SendRRData with a null address item and an unconnected data item.
fn rr(session: u32, cip: &[u8]) -> Vec<u8> {
    let mut d = vec![0, 0, 0, 0, 0x0a, 0, 2, 0, 0, 0, 0, 0, 0xb2, 0];
    d.extend_from_slice(&(cip.len() as u16).to_le_bytes());
    d.extend_from_slice(cip);
    pdu(0x6f, session, &d)
}

fn list_services_response() -> Vec<u8> {
    let mut item = vec![1, 0, 0x20, 0x01];
    item.extend_from_slice(b"Communications\0\0");
    let mut d = vec![1, 0, 0, 1];
    d.extend_from_slice(&(item.len() as u16).to_le_bytes());
    d.extend_from_slice(&item);
    pdu(4, 0x1122_3344, &d)
}

fn list_identity_response() -> Vec<u8> {
    let mut item = vec![1, 0, 0, 2, 0xaf, 0x12, 10, 4, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0];
    item.extend_from_slice(&[
        1, 0, 0x0e, 0, 0x37, 0, 20, 11, 0x60, 0, 0x78, 0x56, 0x34, 0x12,
    ]);
    item.push(11);
    item.extend_from_slice(b"1756-L61/B ");
    item.push(3);
    let mut d = vec![1, 0, 0x0c, 0];
    d.extend_from_slice(&(item.len() as u16).to_le_bytes());
    d.extend_from_slice(&item);
    pdu(0x63, 0, &d)
}

fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.4.0.1:50000".parse::<SocketAddr>().unwrap(),
        "10.4.0.2:44818".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(7);
    let session = 0x1122_3344;
    t.handshake()
        .client_send(&pdu(0x65, 0, &[1, 0, 0, 0]))
        .server_send(&pdu(0x65, session, &[1, 0, 0, 0]))
        // Get Attribute Single: class 1 (Identity), instance 1, attribute 7.
        .client_send(&rr(session, &[0x0e, 3, 0x20, 0x01, 0x24, 0x01, 0x30, 0x07]))
        .server_send(&rr(session, &[0x8e, 0, 0, 0, b'a', b'b', b'c']))
        .client_send(&pdu(4, session, &[]))
        .server_send(&list_services_response())
        .close();
    let mut frames = t.into_frames();
    let c = Ipv4Addr::new(10, 4, 0, 1);
    let s = Ipv4Addr::new(10, 4, 0, 3);
    frames.push((
        (1_700_000_010, 0),
        eth_ipv4_udp(c, 2222, s, 44818, &pdu(0x63, 0, &[])),
    ));
    frames.push((
        (1_700_000_010, 500),
        eth_ipv4_udp(s, 44818, c, 2222, &list_identity_response()),
    ));
    frames
}

const RULES: &str = "\
alert enip any any -> any any (msg:\"register\"; enip_command:register_session; sid:1;)\n\
alert enip any any -> any any (msg:\"get identity revision\"; cip_service:14,1,7; sid:2;)\n\
alert enip any any -> any any (msg:\"cip ok\"; enip.cip_status:0; sid:3;)\n\
alert enip any any -> any any (msg:\"product\"; enip.product_name; content:\"1756-\"; startswith; sid:4;)\n\
alert enip any any -> any any (msg:\"service\"; enip.service_name; content:\"Communications\"; sid:5;)\n\
alert enip any any -> any any (msg:\"caps\"; enip.capabilities:288; sid:6;)\n\
alert enip any any -> any any (msg:\"class 1\"; enip.cip_class:1; sid:7;)\n\
alert enip any any -> any any (msg:\"PLC\"; enip.device_type:14; enip.vendor_id:1; sid:8;)\n\
alert enip any any -> any any (msg:\"never: unit data\"; enip_command:112; sid:9;)\n\
alert enip any any -> any any (msg:\"never: class 2\"; cip_service:14,2; sid:10;)\n\
alert enip any any -> any any (msg:\"never: event\"; app-layer-event:enip.invalid_pdu; sid:11;)\n";

#[test]
fn enip_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run("enip", &capture(), RULES, None);
    let alerts: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .collect();
    let got: Vec<(u64, String)> = {
        let mut v: Vec<(u64, String)> = alerts
            .iter()
            .map(|e| {
                (
                    e["alert"]["signature_id"].as_u64().unwrap(),
                    e["direction"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    // What Suricata 9 (ENIP enabled) alerts on the same capture: the
    // keywords are registered in both directions, and the response-side
    // ones (`enip.cip_status`, `enip.service_name` ...) also match when
    // the request side is inspected after the response arrived.
    let want: Vec<(u64, String)> = [
        (1, "to_client"),
        (1, "to_server"),
        (2, "to_server"),
        (3, "to_client"),
        (3, "to_server"),
        (4, "to_client"),
        (5, "to_client"),
        (5, "to_server"),
        (6, "to_client"),
        (6, "to_server"),
        (7, "to_client"),
        (7, "to_server"),
        (8, "to_client"),
    ]
    .iter()
    .map(|(s, d)| (*s, d.to_string()))
    .collect();
    assert_eq!(got, want);
    for a in &alerts {
        assert_eq!(a["app_proto"], "enip");
    }
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "enip")
        .collect();
    assert_eq!(recs.len(), 4);
    let reg = &recs[0]["enip"];
    assert_eq!(reg["request"]["command"], "register_session");
    assert_eq!(reg["response"]["register_session"]["protocol_version"], 1);
    let cip = &recs[1]["enip"];
    assert_eq!(cip["request"]["cip"]["service"], "Get Attributes Single");
    assert_eq!(cip["request"]["cip"]["class_name"], "Identity");
    assert_eq!(cip["request"]["cip"]["path"][0]["segment_type"], "class");
    assert_eq!(cip["request"]["cip"]["path"][2]["value"], 7);
    assert_eq!(cip["response"]["cip"]["status"], "Success");
    let ls = &recs[2]["enip"]["response"]["list_services"];
    assert_eq!(ls["service_name"], "Communications\0\0");
    assert_eq!(ls["capabilities"], 288);
    let id = &recs[3];
    assert_eq!(id["proto"], "UDP");
    let id = &id["enip"]["response"]["identity"];
    assert_eq!(id["vendor_id"], "Rockwell Automation/Allen-Bradley");
    assert_eq!(id["device_type"], "Programmable Logic Controller");
    assert_eq!(id["revision"], "20.11");
    assert_eq!(id["serial"], 0x1234_5678);
    assert_eq!(id["product_name"], "1756-L61/B ");
    if std::env::var_os("VIGIL_E2E_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// SendUnitData with a connected address item and connected data (CIP
/// sequence number) carrying `cip`.
fn unit(session: u32, conn: u32, seq: u16, cip: &[u8]) -> Vec<u8> {
    let mut d = vec![0, 0, 0, 0, 0, 0, 2, 0, 0xa1, 0, 4, 0];
    d.extend_from_slice(&conn.to_le_bytes());
    d.extend_from_slice(&[0xb1, 0]);
    d.extend_from_slice(&((cip.len() + 2) as u16).to_le_bytes());
    d.extend_from_slice(&seq.to_le_bytes());
    d.extend_from_slice(cip);
    pdu(0x70, session, &d)
}

/// Connected messaging: a Multiple Service Packet request and an error
/// response with an extended status, paired by sequence number; a PDU
/// whose item overruns it (`invalid_pdu`).
fn connected_capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.4.1.1:50001".parse::<SocketAddr>().unwrap(),
        "10.4.1.2:44818".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_100, 0));
    let a = [0x0e, 3, 0x20, 0x01, 0x24, 0x01, 0x30, 0x01];
    let b = [0x0e, 3, 0x20, 0xf5, 0x24, 0x01, 0x30, 0x05];
    let mut msp = vec![0x0a, 2, 0x20, 0x02, 0x24, 0x01, 2, 0, 6, 0, 14, 0];
    msp.extend_from_slice(&a);
    msp.extend_from_slice(&b);
    // Error response: general status 0x01, extended 0x0100.
    let err = [0x8a, 0, 0x01, 1, 0x00, 0x01];
    t.handshake()
        .client_send(&unit(7, 0x42, 3, &msp))
        .server_send(&unit(7, 0x43, 3, &err))
        .client_send(&pdu(0x6f, 7, &[0, 0, 0, 0, 0, 0, 1, 0, 0xb2, 0, 0x40, 0]))
        .close();
    t.into_frames()
}

const CONNECTED_RULES: &str = "\
alert enip any any -> any any (msg:\"unit data\"; enip_command:send_unit_data; sid:21;)\n\
alert enip any any -> any any (msg:\"tcp/ip class in msp\"; cip_service:14,245,5; sid:22;)\n\
alert enip any any -> any any (msg:\"msp\"; cip_service:10; sid:23;)\n\
alert enip any any -> any any (msg:\"connection failure\"; enip.cip_status:1; sid:24;)\n\
alert enip any any -> any any (msg:\"ext status\"; enip.cip_extendedstatus:0x100; sid:25;)\n\
alert enip any any -> any any (msg:\"attr 5\"; enip.cip_attribute:5; sid:26;)\n\
alert enip any any -> any any (msg:\"invalid\"; app-layer-event:enip.invalid_pdu; sid:27;)\n\
alert enip any any -> any any (msg:\"never: class 4\"; enip.cip_class:4; sid:28;)\n";

#[test]
fn enip_connected_messaging_and_events() {
    let common::Run { events, dir, .. } =
        common::run("enip-conn", &connected_capture(), CONNECTED_RULES, None);
    let mut got: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                e["direction"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    // Suricata 9 on the same capture: the error response has no
    // Multiple Service list, so its CIP does not parse (`invalid_pdu`) and
    // it is not paired (a transaction of its own); events belong to the
    // transaction in both directions.
    let want: Vec<(u64, String)> = [
        (21, "to_client"),
        (21, "to_server"),
        (22, "to_server"),
        (23, "to_server"),
        (26, "to_client"),
        (26, "to_server"),
        (27, "to_client"),
        (27, "to_client"),
        (27, "to_server"),
        (27, "to_server"),
    ]
    .iter()
    .map(|(s, d)| (*s, d.to_string()))
    .collect();
    assert_eq!(got, want);
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "enip")
        .collect();
    assert_eq!(recs.len(), 3);
    let req = &recs[0]["enip"]["request"];
    assert_eq!(req["command"], "send_unit_data");
    assert_eq!(req["cip"]["service"], "Multiple Service Packet");
    assert_eq!(req["cip"]["class_name"], "Message Router");
    assert_eq!(req["cip"]["multiple"][1]["class_name"], "TCP/IP Interface");
    assert!(recs[0]["enip"].get("response").is_none());
    assert!(recs[1]["enip"]["response"].get("cip").is_none());
    assert_eq!(recs[2]["enip"]["request"]["command"], "send_r_r_data");
    if std::env::var_os("VIGIL_E2E_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
