//! MQTT end to end: a crafted capture (MQTT 5 CONNECT/CONNACK, a QoS 1
//! PUBLISH and its PUBACK, SUBSCRIBE/SUBACK, packets split across
//! segments, on MQTT's port) through the `vigil` binary to
//! alerts and EVE `mqtt` records.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

/// MQTT 5 CONNECT: client id `craft`, username `user`, password `pw`,
/// receive maximum 20.
const CONNECT: &[u8] =
    b"\x10\x1f\x00\x04MQTT\x05\xc2\x00\x3c\x03\x21\x00\x14\x00\x05craft\x00\x04user\x00\x02pw";
/// CONNACK: session present, reason 0x86 (bad user name or password).
const CONNACK: &[u8] = b"\x20\x03\x01\x86\x00";
/// PUBLISH QoS 1, retain: topic `sensors/t`, id 5, no properties.
const PUBLISH: &[u8] = b"\x33\x12\x00\x09sensors/t\x00\x05\x0021.5";
const PUBACK: &[u8] = b"\x40\x02\x00\x05";
/// SUBSCRIBE id 6: `a/#` QoS 1, `b/+` QoS 0.
const SUBSCRIBE: &[u8] = b"\x82\x0f\x00\x06\x00\x00\x03a/#\x01\x00\x03b/+\x00";
const SUBACK: &[u8] = b"\x90\x05\x00\x06\x00\x01\x00";

fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.2.0.1:41000".parse::<SocketAddr>().unwrap(),
        "10.2.0.2:1883".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(7);
    t.handshake()
        .client_send(CONNECT)
        .server_send(CONNACK)
        .client_send(PUBLISH)
        .server_send(PUBACK)
        .client_send(SUBSCRIBE)
        .server_send(SUBACK)
        .client_send(b"\xe0\x00")
        .close();
    t.into_frames()
}

#[test]
fn mqtt_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run(
        "mqtt",
        &capture(),
        "alert mqtt any any -> any any (msg:\"connack 134\"; mqtt.type:CONNACK; mqtt.reason_code:134; sid:1;)\n\
         alert mqtt any any -> any any (msg:\"user\"; mqtt.connect.username; content:\"user\"; mqtt.connect.flags:username,password,!will; sid:2;)\n\
         alert mqtt any any -> any any (msg:\"publish\"; mqtt.publish.topic; content:\"sensors/\"; mqtt.qos:1; mqtt.flags:retain,!dup; sid:3;)\n\
         alert mqtt any any -> any any (msg:\"subscribe b\"; mqtt.subscribe.topic; content:\"b/+\"; sid:4;)\n\
         alert mqtt any any -> any any (msg:\"session\"; mqtt.connack.session_present:true; mqtt.protocol_version:5; sid:5;)\n\
         alert mqtt any any -> any any (msg:\"never: reason 0\"; mqtt.type:CONNACK; mqtt.reason_code:0; sid:6;)\n\
         alert mqtt any any -> any any (msg:\"never: qos 2\"; mqtt.qos:2; sid:7;)\n\
         alert mqtt any any -> any any (msg:\"never: dup\"; mqtt.flags:dup; sid:8;)\n\
         alert mqtt any any -> any any (msg:\"never: event\"; app-layer-event:mqtt.missing_publish; sid:9;)\n",
        None,
    );

    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2, 3, 4, 5]);
    for a in events.iter().filter(|e| e["event_type"] == "alert") {
        assert_eq!(a["app_proto"], "mqtt");
    }
    let connack = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 1)
        .unwrap();
    assert_eq!(connack["tx_id"], 0);
    assert_eq!(connack["mqtt"]["connect"]["client_id"], "craft");
    assert_eq!(connack["mqtt"]["connack"]["return_code"], 134);
    let publish = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 3)
        .unwrap();
    assert_eq!(publish["tx_id"], 1);

    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "mqtt")
        .collect();
    assert_eq!(recs.len(), 4, "{recs:?}");
    let c = &recs[0]["mqtt"];
    assert_eq!(c["connect"]["protocol_version"], 5);
    assert_eq!(c["connect"]["username"], "user");
    assert_eq!(c["connect"]["password"], "pw");
    assert_eq!(c["connect"]["properties"]["receive_maximum"], 20);
    assert_eq!(c["connack"]["session_present"], true);
    let p = &recs[1]["mqtt"];
    assert_eq!(p["publish"]["topic"], "sensors/t");
    assert_eq!(p["publish"]["message"], "21.5");
    assert_eq!(p["publish"]["message_id"], 5);
    assert_eq!(p["publish"]["retain"], true);
    assert_eq!(p["puback"]["message_id"], 5);
    let s = &recs[2]["mqtt"];
    assert_eq!(s["subscribe"]["topics"][0]["topic"], "a/#");
    assert_eq!(s["subscribe"]["topics"][1]["qos"], 0);
    assert_eq!(s["suback"]["qos_granted"], serde_json::json!([1, 0]));
    assert!(recs[3]["mqtt"]["disconnect"].is_object());
    // As Suricata's MQTT logger: no `tx_id` in the record, the client as
    // source.
    assert!(recs[0].get("tx_id").is_none());
    assert_eq!(recs[0]["src_port"], 41000);
    let _ = std::fs::remove_dir_all(&dir);
}
