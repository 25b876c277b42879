//! LDAP end to end: a crafted LDAP session over TCP 389 in small
//! segments (bind, a search with two entries and controls, a refused
//! modify, a response to no request, an unsolicited notification, unbind)
//! and a CLDAP search over UDP 389, through the `vigil` binary to alerts
//! and the EVE `ldap` records.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use vigil_craft::{eth_ipv4_udp, TcpSession, TimedFrame};

/// A BER TLV (short or long definite length).
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    let n = content.len();
    if n < 0x80 {
        v.push(n as u8);
    } else if n < 0x100 {
        v.extend_from_slice(&[0x81, n as u8]);
    } else {
        v.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
    }
    v.extend_from_slice(content);
    v
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn octets(s: &str) -> Vec<u8> {
    tlv(0x04, s.as_bytes())
}

/// An LDAPMessage: id, protocolOp, optional controls.
fn msg(id: u8, op: Vec<u8>, controls: Option<Vec<u8>>) -> Vec<u8> {
    let mut c = vec![tlv(0x02, &[id]), op];
    if let Some(ctl) = controls {
        c.push(tlv(0xa0, &ctl));
    }
    tlv(0x30, &cat(&c))
}

/// An LDAPResult body: code, matched DN, diagnostic message.
fn result(code: u8, dn: &str, text: &str) -> Vec<u8> {
    cat(&[tlv(0x0a, &[code]), octets(dn), octets(text)])
}

fn attr(name: &str, vals: &[&str]) -> Vec<u8> {
    let set: Vec<u8> = vals.iter().flat_map(|v| octets(v)).collect();
    tlv(0x30, &cat(&[octets(name), tlv(0x31, &set)]))
}

fn bind_request() -> Vec<u8> {
    msg(
        1,
        tlv(
            0x60,
            &cat(&[
                tlv(0x02, &[3]),
                octets("cn=admin,dc=example,dc=org"),
                tlv(0x80, b"secret"),
            ]),
        ),
        None,
    )
}

fn search_request(id: u8) -> Vec<u8> {
    let attrs = cat(&[octets("cn"), octets("mail")]);
    let ctl = tlv(
        0x30,
        &cat(&[
            octets("1.2.840.113556.1.4.319"),
            tlv(0x01, &[0xff]),
            tlv(0x04, &[0x30, 0x00]),
        ]),
    );
    msg(
        id,
        tlv(
            0x63,
            &cat(&[
                octets("dc=example,dc=org"),
                tlv(0x0a, &[2]),
                tlv(0x0a, &[0]),
                tlv(0x02, &[100]),
                tlv(0x02, &[30]),
                tlv(0x01, &[0]),
                tlv(0x87, b"objectClass"),
                tlv(0x30, &attrs),
            ]),
        ),
        Some(ctl),
    )
}

fn entry(id: u8, dn: &str, cn: &str) -> Vec<u8> {
    let mail = format!("{cn}@example.org");
    msg(
        id,
        tlv(
            0x64,
            &cat(&[
                octets(dn),
                tlv(0x30, &cat(&[attr("cn", &[cn]), attr("mail", &[&mail])])),
            ]),
        ),
        None,
    )
}

fn tcp_capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.9.0.1:40100".parse::<SocketAddr>().unwrap(),
        "10.9.0.2:389".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(9);
    let modify = msg(
        4,
        tlv(
            0x66,
            &cat(&[
                octets("cn=alice,dc=example,dc=org"),
                tlv(
                    0x30,
                    &tlv(
                        0x30,
                        &cat(&[tlv(0x0a, &[2]), attr("telephoneNumber", &["555"])]),
                    ),
                ),
            ]),
        ),
        None,
    );
    t.handshake()
        .client_send(&bind_request())
        .server_send(&msg(1, tlv(0x61, &result(0, "", "")), None))
        .client_send(&search_request(2))
        // Both entries and the done in one burst.
        .server_send(&cat(&[
            entry(2, "cn=alice,dc=example,dc=org", "alice"),
            entry(2, "cn=bob,dc=example,dc=org", "bob"),
            msg(2, tlv(0x65, &result(0, "", "2 entries")), None),
        ]))
        .client_send(&modify)
        .server_send(&msg(4, tlv(0x67, &result(50, "", "denied")), None))
        // A del response to no request, then an unsolicited notice of
        // disconnection (message id 0).
        .server_send(&msg(9, tlv(0x6b, &result(32, "dc=org", "no such")), None))
        .server_send(&msg(
            0,
            tlv(
                0x78,
                &cat(&[
                    result(52, "", "shutting down"),
                    tlv(0x8a, b"1.3.6.1.4.1.1466.20036"),
                ]),
            ),
            None,
        ))
        .client_send(&msg(5, tlv(0x42, &[]), None))
        .close();
    t.into_frames()
}

fn udp_capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 9, 1, 1);
    let s = Ipv4Addr::new(10, 9, 1, 2);
    let reply = cat(&[
        entry(7, "cn=dc1,dc=example,dc=org", "dc1"),
        msg(7, tlv(0x65, &result(0, "", "")), None),
    ]);
    vec![
        (
            (1_700_000_100, 0),
            eth_ipv4_udp(c, 50389, s, 389, &search_request(7)),
        ),
        ((1_700_000_100, 500), eth_ipv4_udp(s, 389, c, 50389, &reply)),
    ]
}

const RULES: &str = "\
alert ldap any any -> any any (msg:\"bind\"; ldap.request.operation:bind_request; sid:1;)
alert ldap any any -> any any (msg:\"search base\"; ldap.request.operation:3; ldap.request.dn; content:\"dc=example\"; sid:2;)
alert ldap any any -> any any (msg:\"first response entry\"; ldap.responses.operation:search_result_entry,0; sid:3;)
alert ldap any any -> any any (msg:\"three responses\"; ldap.responses.count:3; sid:4;)
alert ldap any any -> any any (msg:\"bob\"; ldap.responses.dn; content:\"cn=bob\"; sid:5;)
alert ldap any any -> any any (msg:\"refused\"; ldap.responses.result_code:insufficient_access_rights; sid:6;)
alert ldap any any -> any any (msg:\"denied text\"; ldap.responses.message; content:\"denied\"; sid:7;)
alert ldap any any -> any any (msg:\"req attr\"; ldap.request.attribute_type; content:\"telephoneNumber\"; sid:8;)
alert ldap any any -> any any (msg:\"resp attr\"; ldap.responses.attribute_type; content:\"mail\"; sid:9;)
alert ldap any any -> any any (msg:\"no request\"; app-layer-event:ldap.request_not_found; sid:10;)
alert ldap any any -> any any (msg:\"never: all done\"; ldap.responses.operation:search_result_done,all; sid:11;)
alert ldap any any -> any any (msg:\"last done\"; ldap.responses.operation:search_result_done,-1; sid:12;)
alert ldap any any -> any any (msg:\"done message\"; ldap.responses.message; content:\"2 entries\"; sid:13;)
alert ldap any any -> any any (msg:\"unsolicited\"; ldap.responses.result_code:unavailable; sid:14;)
alert ldap any any -> any any (msg:\"never: invalid\"; app-layer-event:ldap.invalid_data; sid:15;)
alert ldap any any -> any any (msg:\"unbind\"; ldap.request.operation:unbind_request; sid:16;)
";

fn sids(events: &[serde_json::Value]) -> Vec<u64> {
    let mut v: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn ldap_tcp_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run("ldap", &tcp_capture(), RULES, None);
    // sid 2, 3, 4, 5, 9, 12, 13: the search (its request, then its
    // responses; the entries' messages are empty buffers, the done's
    // is the third).
    assert_eq!(
        sids(&events),
        vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 16]
    );
    for a in events.iter().filter(|e| e["event_type"] == "alert") {
        assert_eq!(a["app_proto"], "ldap");
        assert!(a["ldap"].is_object(), "{a}");
    }
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "ldap")
        .map(|e| &e["ldap"])
        .collect();
    assert_eq!(recs.len(), 6, "{recs:?}");
    // As Suricata's: no tx_id in the record, one in alerts.
    assert!(events
        .iter()
        .filter(|e| e["event_type"] == "ldap")
        .all(|e| e.get("tx_id").is_none()));
    let bind = &recs[0];
    assert_eq!(bind["request"]["message_id"], 1);
    assert_eq!(bind["request"]["operation"], "bind_request");
    assert_eq!(bind["request"]["bind_request"]["version"], 3);
    assert_eq!(
        bind["request"]["bind_request"]["name"],
        "cn=admin,dc=example,dc=org"
    );
    assert_eq!(bind["responses"][0]["operation"], "bind_response");
    assert_eq!(
        bind["responses"][0]["bind_response"]["result_code"],
        "success"
    );
    let search = &recs[1];
    let sr = &search["request"]["search_request"];
    assert_eq!(sr["base_object"], "dc=example,dc=org");
    assert_eq!(sr["scope"], 2);
    assert_eq!(sr["deref_alias"], 0);
    assert_eq!(sr["size_limit"], 100);
    assert_eq!(sr["time_limit"], 30);
    assert_eq!(sr["types_only"], false);
    assert_eq!(
        sr["filter"],
        serde_json::json!({"type": "present", "value": "objectClass"})
    );
    assert_eq!(sr["attributes"], serde_json::json!(["cn", "mail"]));
    assert_eq!(
        search["request"]["controls"][0],
        serde_json::json!({
            "control_type": "1.2.840.113556.1.4.319",
            "criticality": true,
            "control_value": "3000"
        })
    );
    let resp = search["responses"].as_array().unwrap();
    assert_eq!(resp.len(), 3);
    assert_eq!(
        resp[1]["search_result_entry"]["base_object"],
        "cn=bob,dc=example,dc=org"
    );
    assert_eq!(
        resp[1]["search_result_entry"]["attributes"][1],
        serde_json::json!({"type": "mail", "values": ["bob@example.org"]})
    );
    assert_eq!(resp[2]["search_result_done"]["message"], "2 entries");
    let modify = &recs[2];
    assert_eq!(
        modify["request"]["modify_request"]["changes"][0]["operation"],
        "replace"
    );
    assert_eq!(
        modify["responses"][0]["modify_response"]["result_code"],
        "insufficient_access_rights"
    );
    // The orphan response and the notice carry their message ids.
    assert!(recs[3].get("request").is_none());
    assert_eq!(recs[3]["responses"][0]["message_id"], 9);
    assert_eq!(
        recs[3]["responses"][0]["del_response"]["result_code"],
        "no_such_object"
    );
    assert_eq!(recs[4]["responses"][0]["message_id"], 0);
    assert_eq!(
        recs[4]["responses"][0]["extended_response"]["name"],
        "1.3.6.1.4.1.1466.20036"
    );
    assert_eq!(recs[5]["request"]["operation"], "unbind_request");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cldap_udp_search() {
    let common::Run { events, dir, .. } = common::run("cldap", &udp_capture(), RULES, None);
    // The search's own rules: base DN, first entry, last done.
    assert_eq!(sids(&events), vec![2, 3, 9, 12]);
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "ldap")
        .collect();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["proto"], "UDP");
    let l = &recs[0]["ldap"];
    assert_eq!(l["request"]["message_id"], 7);
    assert_eq!(
        l["responses"][0]["search_result_entry"]["base_object"],
        "cn=dc1,dc=example,dc=org"
    );
    assert_eq!(
        l["responses"][1]["search_result_done"]["result_code"],
        "success"
    );
    // Flow counters by transport, as Suricata's (`ldap_udp`).
    let stats = events
        .iter()
        .find(|e| e["event_type"] == "stats")
        .expect("stats record");
    assert_eq!(stats["stats"]["app_layer"]["flow"]["ldap_udp"], 1);
    assert_eq!(stats["stats"]["app_layer"]["flow"]["ldap_tcp"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

fn malformed_capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.9.2.1:40200".parse::<SocketAddr>().unwrap(),
        "10.9.2.2:389".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_200, 0));
    t.handshake()
        .client_send(&bind_request())
        .server_send(&msg(1, tlv(0x61, &result(0, "", "")), None))
        .client_send(&search_request(2))
        // A SEQUENCE whose messageID is an OCTET STRING.
        .server_send(&tlv(0x30, &tlv(0x04, &[2])))
        // Not parsed any more: the parser stopped on the bad response.
        .client_send(&bind_request())
        .close();
    let mut frames = t.into_frames();
    // CLDAP: a request datagram cut short.
    let b = bind_request();
    frames.push((
        (1_700_000_300, 0),
        eth_ipv4_udp(
            Ipv4Addr::new(10, 9, 3, 1),
            50400,
            Ipv4Addr::new(10, 9, 3, 2),
            389,
            &b[..b.len() - 3],
        ),
    ));
    frames
}

#[test]
fn ldap_malformed_events() {
    let rules = "\
alert ldap any any -> any any (msg:\"invalid\"; app-layer-event:ldap.invalid_data; sid:1;)
alert ldap any any -> any any (msg:\"incomplete\"; app-layer-event:ldap.incomplete_data; sid:2;)
alert ldap any any -> any any (msg:\"bind\"; ldap.request.operation:bind_request; sid:3;)
";
    let common::Run { events, dir, .. } =
        common::run("ldap-bad", &malformed_capture(), rules, None);
    // The bind before the bad response alerts, the one after is not
    // parsed; the search transaction carries invalid_data. The cut
    // datagram is not LDAP (detection needs a whole message).
    assert_eq!(sids(&events), vec![1, 3]);
    let invalid: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == 1)
        .collect();
    assert_eq!(invalid[0]["tx_id"], 1);
    let recs = events.iter().filter(|e| e["event_type"] == "ldap").count();
    assert_eq!(recs, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A capture that lost the client's search request (its segment is not
/// in it): the request side resumes on the next message, the search's
/// responses find no request.
fn gap_capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.9.4.1:40300".parse::<SocketAddr>().unwrap(),
        "10.9.4.2:389".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_400, 0));
    let second_bind = msg(
        3,
        tlv(
            0x60,
            &cat(&[tlv(0x02, &[3]), octets("cn=second"), tlv(0x80, b"pw")]),
        ),
        None,
    );
    t.handshake()
        .client_send(&bind_request())
        .server_send(&msg(1, tlv(0x61, &result(0, "", "")), None))
        .client_send(&search_request(2))
        .server_send(&cat(&[
            entry(2, "cn=alice,dc=example,dc=org", "alice"),
            msg(2, tlv(0x65, &result(0, "", "")), None),
        ]))
        .client_send(&second_bind)
        .server_send(&msg(3, tlv(0x61, &result(49, "", "bad password")), None))
        .close();
    t.into_frames()
        .into_iter()
        .filter(|(_, f)| !f.windows(11).any(|w| w == b"objectClass"))
        .collect()
}

#[test]
fn ldap_gap_resyncs_on_next_message() {
    let rules = "\
alert ldap any any -> any any (msg:\"bind\"; ldap.request.operation:bind_request; ldap.request.dn; content:\"cn=second\"; sid:1;)
alert ldap any any -> any any (msg:\"no request\"; app-layer-event:ldap.request_not_found; sid:2;)
alert ldap any any -> any any (msg:\"bad password\"; ldap.responses.result_code:invalid_credentials; sid:3;)
alert ldap any any -> any any (msg:\"never: search\"; ldap.request.operation:search_request; sid:4;)
";
    let common::Run { events, dir, .. } = common::run("ldap-gap", &gap_capture(), rules, None);
    // request_not_found on each orphan response's transaction.
    assert_eq!(sids(&events), vec![1, 2, 2, 3]);
    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "ldap")
        .map(|e| &e["ldap"])
        .collect();
    // The bind, the search's two orphan responses, the second bind.
    assert_eq!(recs.len(), 4, "{recs:?}");
    assert_eq!(recs[1]["responses"][0]["message_id"], 2);
    assert_eq!(recs[3]["request"]["message_id"], 3);
    let _ = std::fs::remove_dir_all(&dir);
}
