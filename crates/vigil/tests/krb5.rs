//! Kerberos 5 end to end: a crafted capture (an AS exchange over UDP, a
//! TGS exchange and a KRB-ERROR over TCP with records split across
//! segments) through the `vigil` binary to alerts and EVE `krb5` records.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use vigil_applayer::krb5::build::{kdc_rep, kdc_req, krb_error, record};
use vigil_craft::{eth_ipv4_udp, TcpSession, TimedFrame};

fn capture() -> Vec<TimedFrame> {
    let c = Ipv4Addr::new(10, 2, 0, 1);
    let s = Ipv4Addr::new(10, 2, 0, 2);
    let as_req = kdc_req(10, Some(&["robin"]), &["krbtgt", "EXAMPLE.ORG"]);
    // The reply is AES, its ticket RC4 (weak).
    let as_rep = kdc_rep(11, 18, 23);
    let mut frames: Vec<TimedFrame> = vec![
        ((1_700_000_000, 0), eth_ipv4_udp(c, 50000, s, 88, &as_req)),
        ((1_700_000_000, 500), eth_ipv4_udp(s, 88, c, 50000, &as_rep)),
    ];
    let mut t = TcpSession::new(
        "10.2.0.1:50001".parse::<SocketAddr>().unwrap(),
        "10.2.0.2:88".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_001, 0))
    .with_mss(60);
    t.handshake()
        .client_send(&record(&kdc_req(12, None, &["ldap", "dc01"])))
        // A weak reply (RC4): `weak_encryption` event.
        .server_send(&record(&kdc_rep(13, 23, 18)))
        .client_send(&record(&kdc_req(10, Some(&["eve"]), &["krbtgt", "X"])))
        .server_send(&record(&krb_error(24)))
        .close();
    frames.extend(t.into_frames());
    frames
}

#[test]
fn krb5_over_udp_and_tcp_to_alerts_and_records() {
    let common::Run { eve, events, dir } = common::run(
        "krb5",
        &capture(),
        "alert krb5 any any -> any any (msg:\"as-req\"; krb5_msg_type:AS_REQ; sid:1;)\n\
         alert krb5 any any -> any any (msg:\"not as-req\"; krb5_msg_type:!10; sid:2;)\n\
         alert krb5 any any -> any any (msg:\"cname\"; krb5.cname; content:\"robin\"; sid:3;)\n\
         alert krb5 any any -> any any (msg:\"sname\"; krb5_sname; content:\"ldap\"; sid:4;)\n\
         alert krb5 any any -> any any (msg:\"err\"; krb5_err_code:24; sid:5;)\n\
         alert krb5 any any -> any any (msg:\"weak ticket\"; krb5.ticket_encryption:weak; sid:6;)\n\
         alert krb5 any any -> any any (msg:\"aes ticket\"; krb5.ticket_encryption:aes256-cts-hmac-sha1-96; sid:7;)\n\
         alert krb5 any any -> any any (msg:\"weak event\"; app-layer-event:krb5.weak_encryption; sid:8;)\n\
         alert krb5 any any -> any any (msg:\"never\"; krb5_msg_type:AP_REQ; sid:9;)\n\
         alert krb5 any any -> any any (msg:\"weak reply\"; krb5.weak_encryption; sid:10;)\n",
        Some(&["alert", "krb5", "stats"]),
    );

    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    // sid 1: both AS-REQs; sid 2: the four other messages; sid 3: the
    // messages naming robin (AS-REQ, AS-REP, TGS-REP); sid 6: the AS-REP's RC4 ticket;
    // sid 7: the TGS-REP's AES ticket; sids 8 and 10: the TGS-REP's RC4
    // reply.
    assert_eq!(
        sids,
        vec![1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 5, 6, 7, 8, 10],
        "{eve}"
    );
    for a in events.iter().filter(|e| e["event_type"] == "alert") {
        assert_eq!(a["app_proto"], "krb5");
        assert!(a["krb5"]["msg_type"].is_string());
    }
    let err = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 5)
        .unwrap();
    assert_eq!(err["proto"], "TCP");
    assert_eq!(err["direction"], "to_client");
    assert_eq!(err["krb5"]["msg_type"], "KRB_ERROR");
    assert_eq!(err["krb5"]["failed_request"], "KRB_AS_REQ");
    assert_eq!(err["krb5"]["error_code"], "KDC_ERR_PREAUTH_FAILED");

    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "krb5")
        .collect();
    assert_eq!(recs.len(), 6, "{recs:?}");
    let rep = recs
        .iter()
        .find(|r| r["krb5"]["msg_type"] == "KRB_AS_REP")
        .expect("AS-REP record");
    assert_eq!(rep["proto"], "UDP");
    assert_eq!(rep["krb5"]["cname"], "robin");
    assert_eq!(rep["krb5"]["realm"], "EXAMPLE.ORG");
    assert_eq!(rep["krb5"]["sname"], "krbtgt/EXAMPLE.ORG");
    assert_eq!(rep["krb5"]["encryption"], "aes256-cts-hmac-sha1-96");
    assert_eq!(rep["krb5"]["weak_encryption"], false);
    assert_eq!(rep["krb5"]["ticket_encryption"], "rc4-hmac");
    assert_eq!(rep["krb5"]["ticket_weak_encryption"], true);
    // As Suricata's Kerberos logger: no `tx_id` in the record.
    assert!(rep.get("tx_id").is_none());
    let tgs = recs
        .iter()
        .find(|r| r["krb5"]["msg_type"] == "KRB_TGS_REQ")
        .expect("TGS-REQ record");
    assert_eq!(tgs["krb5"]["cname"], "<empty>");
    assert_eq!(tgs["krb5"]["encryption"], "<none>");
    // Flows counted by transport, as Suricata's `krb5_udp` / `krb5_tcp`.
    let stats = events
        .iter()
        .rev()
        .find(|e| e["event_type"] == "stats")
        .expect("stats record");
    assert_eq!(stats["stats"]["app_layer"]["flow"]["krb5_udp"], 1);
    assert_eq!(stats["stats"]["app_layer"]["flow"]["krb5_tcp"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}
