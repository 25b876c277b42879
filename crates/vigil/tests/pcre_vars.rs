//! pcre variable capture end to end: a crafted TCP session through the
//! `vigil` binary to `eve.json`. A pcre captures a flow variable that
//! `flowvar` reads on a later packet of the flow, a packet variable that
//! `pktvar` reads on the same packet, an alert variable
//! (`alert.context`), and every alert carries the flow's and packet's
//! variables as Suricata's top-level `metadata` object.

mod common;

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.9.0.1:40000".parse::<SocketAddr>().unwrap(),
        "10.9.0.2:7000".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0));
    t.handshake()
        .client_send(b"USER alice\r\n")
        .server_send(b"OK alice\r\n")
        .client_send(b"PASS x\x01y\r\n")
        .close();
    t.into_frames()
}

const RULES: &str = "\
alert tcp any any -> any any (msg:\"capture user\"; flow:to_server; content:\"USER \"; pcre:\"/^USER (?P<flow_user>[a-z]+)\\r\\n/\"; flowbits:set,seen_user; flowint:cnt,+,1; sid:1;)
alert tcp any any -> any any (msg:\"flowvar later packet\"; flow:to_client; content:\"OK\"; flowvar:user,\"lic\"; sid:2;)
alert tcp any any -> any any (msg:\"never: other user\"; flow:to_client; content:\"OK\"; flowvar:user,\"bob\"; sid:3;)
alert tcp any any -> any any (msg:\"pktvar read\"; flow:to_server; content:\"PASS\"; pktvar:pw,\"x|01|\"; sid:5;)
alert tcp any any -> any any (msg:\"pkt capture\"; flow:to_server; content:\"PASS\"; pcre:\"/PASS (?P<pkt_pw>\\S+)/\"; sid:4;)
alert tcp any any -> any any (msg:\"alert context\"; flow:to_server; content:\"PASS\"; pcre:\"/PASS (?P<alert_first>.)/\"; sid:6;)
alert tcp any any -> any any (msg:\"never: capture of a rule that fails\"; flow:to_server; content:\"USER\"; pcre:\"/(?P<flow_ghost>USER)/\"; content:\"NEVER\"; sid:7;)
alert tcp any any -> any any (msg:\"never: ghost\"; flowvar:ghost,\"USER\"; sid:8;)
";

fn alerts(events: &[serde_json::Value], sid: u64) -> Vec<&serde_json::Value> {
    events
        .iter()
        .filter(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == sid)
        .collect()
}

#[test]
fn captures_flowvar_pktvar_and_metadata() {
    let common::Run { events, eve, dir } = common::run("pcrevars", &capture(), RULES, None);
    for sid in [1, 2, 4, 5, 6] {
        assert!(!alerts(&events, sid).is_empty(), "sid {sid}:\n{eve}");
    }
    for sid in [3, 7, 8] {
        assert!(alerts(&events, sid).is_empty(), "sid {sid}:\n{eve}");
    }

    // The flow variable, set by sid 1 on the request, read by sid 2 on
    // the reply; with the flowbit and flowint of sid 1.
    let reply = alerts(&events, 2)[0];
    assert_eq!(
        reply["metadata"],
        serde_json::json!({
            "flowbits": ["seen_user"],
            "flowints": {"cnt": 1},
            "flowvars": [{"user": "alice"}],
        }),
    );
    // Written right after pkt_src, as Suricata's EveAddCommonOptions.
    let line = eve
        .lines()
        .find(|l| l.contains("\"signature_id\":2,"))
        .unwrap();
    assert!(
        line.contains("\"pkt_src\":\"wire/pcap\",\"metadata\":{\"flowbits\":[\"seen_user\"],\"flowints\":{\"cnt\":1},\"flowvars\":[{\"user\":\"alice\"}]},\"alert\":"),
        "{line}"
    );

    // The packet variable: sid 4 (ordered first: it sets what sid 5
    // reads) captures `x\x01y`, logged with the byte as '.'.
    let pass = alerts(&events, 5)[0];
    assert_eq!(
        pass["metadata"]["pktvars"],
        serde_json::json!([{"pw": "x.y"}])
    );
    assert_eq!(alerts(&events, 4)[0]["metadata"], pass["metadata"]);
    // The alert variable goes to its own alert only.
    assert_eq!(
        alerts(&events, 6)[0]["alert"]["context"],
        serde_json::json!({"first": "x"})
    );
    assert!(pass["alert"].get("context").is_none());
    // Alerts of packets before any variable was set have no metadata.
    let first = alerts(&events, 1)[0];
    assert_eq!(
        first["metadata"],
        serde_json::json!({
            "flowbits": ["seen_user"],
            "flowints": {"cnt": 1},
            "flowvars": [{"user": "alice"}],
        }),
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `metadata: no` in the eve-log output turns the object off.
#[test]
fn metadata_off() {
    let common::Run { events, dir, .. } = common::run_with(
        "pcrevars-off",
        &capture(),
        RULES,
        None,
        "outputs:\n  - eve-log:\n      enabled: yes\n      filename: eve.json\n      metadata: no\n",
        &[],
    );
    assert!(!alerts(&events, 2).is_empty());
    assert!(events.iter().all(|e| e.get("metadata").is_none()));
    let _ = std::fs::remove_dir_all(dir);
}

/// Transaction records carry the flow's variables too, as Suricata's.
#[test]
fn transaction_records_carry_the_variables() {
    let mut t = TcpSession::new(
        "10.9.0.1:40001".parse::<SocketAddr>().unwrap(),
        "10.9.0.2:80".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0));
    t.handshake()
        .client_send(b"GET /x?user=carol HTTP/1.1\r\nHost: h\r\n\r\n")
        .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .close();
    let rules = "alert tcp any any -> any any (msg:\"get\"; flow:to_server; content:\"GET \"; depth:4; pcre:\"/user=(?P<flow_user>[a-z]+)/\"; flowbits:set,got_get; flowbits:noalert; sid:20;)\n";
    let common::Run { events, eve, dir } =
        common::run("pcrevars-tx", &t.into_frames(), rules, None);
    let http: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "http")
        .collect();
    assert_eq!(http.len(), 1, "{eve}");
    assert_eq!(
        http[0]["metadata"],
        serde_json::json!({"flowbits": ["got_get"], "flowvars": [{"user": "carol"}]}),
        "{eve}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
