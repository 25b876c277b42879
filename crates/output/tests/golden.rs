//! Byte-for-byte checks against Suricata's formats.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::Value;
use vigil_output::{
    format_fast_alert, write_stats_log, write_stats_log_with, AlertEvent, EveConfig, EveFormatter,
    EveWriter, FastLogWriter, FlowInfo, StatsLogOptions, StatsTree,
};

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

fn eve_line(ev: &AlertEvent<'_>) -> String {
    eve_line_with(ev, EveConfig::default())
}

fn eve_line_with(ev: &AlertEvent<'_>, cfg: EveConfig) -> String {
    let mut w = EveWriter::with_config(Vec::new(), cfg);
    w.write_alert(ev).unwrap();
    let out = String::from_utf8(w.into_inner().unwrap()).unwrap();
    assert!(out.ends_with('\n') && out.matches('\n').count() == 1);
    out.trim_end_matches('\n').to_string()
}

fn fast_line(ev: &AlertEvent<'_>, ips: bool) -> String {
    let mut v = Vec::new();
    format_fast_alert(&mut v, ev, ips).unwrap();
    String::from_utf8(v).unwrap()
}

/// The first alert of /work/shared/pcaps/dev/expected-alerts.jsonl, with the
/// fields that file leaves out filled in.
fn dev_alert<'a>(metadata: &'a [(String, String)]) -> AlertEvent<'a> {
    AlertEvent {
        ts_secs: 1_640_626_741,
        ts_nanos: 666_724_000,
        flow_id: Some(1_395_712_345_678_901),
        pcap_cnt: Some(16771),
        src_ip: v4(192, 168, 1, 161),
        src_port: Some(59120),
        dest_ip: v4(192, 168, 1, 46),
        dest_port: Some(445),
        proto: 6,
        pkt_src: "wire/pcap",
        tx_id: Some(2),
        action: "allowed",
        gid: 1,
        signature_id: 2_025_701,
        rev: 2,
        signature: "ET POLICY SMB2 NT Create AndX Request For an Executable File",
        category: "Potential Corporate Privacy Violation",
        severity: 1,
        metadata,
        app_proto: Some("smb"),
        direction: Some("to_server"),
        flow: Some(FlowInfo {
            pkts_toserver: 12,
            pkts_toclient: 10,
            bytes_toserver: 3000,
            bytes_toclient: 2000,
            start_secs: 1_640_626_740,
            start_nanos: 1_000,
            src_ip: v4(192, 168, 1, 161),
            dest_ip: v4(192, 168, 1, 46),
            src_port: Some(59120),
            dest_port: Some(445),
        }),
        ..AlertEvent::default()
    }
}

fn et_metadata() -> Vec<(String, String)> {
    [
        (
            "affected_product",
            "Windows_XP_Vista_7_8_10_Server_32_64_Bit",
        ),
        ("attack_target", "Client_Endpoint"),
        ("created_at", "2018_07_03"),
        ("deployment", "Internal"),
        ("former_category", "POLICY"),
        ("signature_severity", "Informational"),
        ("updated_at", "2018_07_03"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[test]
fn golden_dev_alert() {
    let md = et_metadata();
    let got = eve_line(&dev_alert(&md));
    let want = concat!(
        r#"{"timestamp":"2021-12-27T17:39:01.666724+0000","flow_id":1395712345678901,"pcap_cnt":16771,"#,
        r#""event_type":"alert","src_ip":"192.168.1.161","src_port":59120,"dest_ip":"192.168.1.46","#,
        r#""dest_port":445,"proto":"TCP","ip_v":4,"pkt_src":"wire/pcap","tx_id":2,"alert":{"action":"allowed","#,
        r#""gid":1,"signature_id":2025701,"rev":2,"#,
        r#""signature":"ET POLICY SMB2 NT Create AndX Request For an Executable File","#,
        r#""category":"Potential Corporate Privacy Violation","severity":1,"metadata":{"#,
        r#""affected_product":["Windows_XP_Vista_7_8_10_Server_32_64_Bit"],"attack_target":["Client_Endpoint"],"#,
        r#""created_at":["2018_07_03"],"deployment":["Internal"],"former_category":["POLICY"],"#,
        r#""signature_severity":["Informational"],"updated_at":["2018_07_03"]}},"app_proto":"smb","#,
        r#""direction":"to_server","flow":{"pkts_toserver":12,"pkts_toclient":10,"bytes_toserver":3000,"#,
        r#""bytes_toclient":2000,"start":"2021-12-27T17:39:00.000001+0000","src_ip":"192.168.1.161","#,
        r#""dest_ip":"192.168.1.46","src_port":59120,"dest_port":445}}"#
    );
    assert_eq!(got, want);
}

/// The dev set's expected alerts flatten `alert.*`; every field they keep
/// must come out of our record with the same value.
#[test]
fn dev_alert_matches_expected_alerts_jsonl() {
    const LINE1: &str = r#"{"pcap_cnt":16771,"timestamp":"2021-12-27T17:39:01.666724+0000","src_ip":"192.168.1.161","src_port":59120,"dest_ip":"192.168.1.46","dest_port":445,"proto":"TCP","app_proto":"smb","signature_id":2025701,"rev":2,"signature":"ET POLICY SMB2 NT Create AndX Request For an Executable File"}"#;
    let file = std::fs::read_to_string("/work/shared/pcaps/dev/expected-alerts.jsonl").ok();
    let line = file
        .as_deref()
        .and_then(|f| f.lines().next())
        .unwrap_or(LINE1);
    let want: Value = serde_json::from_str(line).unwrap();
    let md = et_metadata();
    let got: Value = serde_json::from_str(&eve_line(&dev_alert(&md))).unwrap();
    for (k, v) in want.as_object().unwrap() {
        let ours = got.get(k).or_else(|| got["alert"].get(k));
        assert_eq!(ours, Some(v), "field {k}");
    }
}

/// A real Suricata 8 alert (ET rule, HTTP, payload-printable and
/// payload-length on, packet on), minus what we do not write (in_iface,
/// community_id, ts/tc_progress, http) and moved to UTC.
#[test]
fn golden_suricata8_alert_field_order() {
    let want = concat!(
        r#"{"timestamp":"2026-02-08T17:21:57.697544+0000","flow_id":2075460149639207,"event_type":"alert","#,
        r#""src_ip":"192.168.100.2","src_port":35510,"dest_ip":"172.20.0.3","dest_port":8080,"proto":"TCP","#,
        r#""ip_v":4,"pkt_src":"wire/pcap","tx_id":0,"alert":{"action":"allowed","gid":1,"signature_id":2016953,"#,
        r#""rev":5,"signature":"ET EXPLOIT Apache Struts Possible OGNL Java Exec In URI","#,
        r#""category":"Attempted User Privilege Gain","severity":1,"metadata":{"confidence":["Medium"],"#,
        r#""created_at":["2013_05_31"],"signature_severity":["Major"],"#,
        r#""tag":["Description_Generated_By_Proofpoint_Nexus"],"updated_at":["2024_03_06"]}},"#,
        r#""app_proto":"http","direction":"to_server","flow":{"pkts_toserver":4,"pkts_toclient":3,"#,
        r#""bytes_toserver":1059,"bytes_toclient":326,"start":"2026-02-08T17:21:51.679838+0000","#,
        r#""src_ip":"192.168.100.2","dest_ip":"172.20.0.3","src_port":35510,"dest_port":8080},"#,
        r#""payload_length":787,"payload_printable":"GET /struts2-showcase/%24%7B%0A%28%23dm%3D%40ognl.OgnlContext%40DEFAULT_MEMBER_ACCESS%29.%28%23ct%3D%23request%5B%27struts.valueStack%27%5D.context%29.%28%23cr%3D%23ct%5B%27com.opensymphony.xwork2.ActionContext.container%27%5D%29.%28%23ou%3D%23cr.getInstance%28%40com.opensymphony.xwork2.ognl.OgnlUtil%40class%29%29.%28%23ou.getExcludedPackageNames%28%29.clear%28%29%29.%28%23ou.getExcludedClasses%28%29.clear%28%29%29.%28%23ct.setMemberAccess%28%23dm%29%29.%28%23a%3D%40java.lang.Runtime%40getRuntime%28%29.exec%28%27bash%20shell.sh%27%29%29.%28%40org.apache.commons.io.IOUtils%40toString%28%23a.getInputStream%28%29%29%29%7D/actionChain1.action HTTP/1.1\r\nHost: 172.20.0.3:8080\r\nUser-Agent: python-requests/2.32.5\r\nAccept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n","#,
        r#""stream":1,"packet":"Mn/6IStGjt9rddSTCABFAAA0NGBAAD8GNqLAqGQCrBQAA4q2H5Dk/50qnruPjIAQAD/Q6AAAAQEICsWnolsZQ+yg","#,
        r#""packet_info":{"linktype":1,"linktype_name":"EN10MB"}}"#
    );
    let parsed: Value = serde_json::from_str(want).unwrap();
    let payload = parsed["payload_printable"]
        .as_str()
        .unwrap()
        .as_bytes()
        .to_vec();
    assert_eq!(payload.len(), 787);
    let packet = [
        50u8, 127, 250, 33, 43, 70, 142, 223, 107, 117, 212, 147, 8, 0, 69, 0, 0, 52, 52, 96, 64,
        0, 63, 6, 54, 162, 192, 168, 100, 2, 172, 20, 0, 3, 138, 182, 31, 144, 228, 255, 157, 42,
        158, 187, 143, 140, 128, 16, 0, 63, 208, 232, 0, 0, 1, 1, 8, 10, 197, 167, 162, 91, 25, 67,
        236, 160,
    ];
    // ET writes metadata in its own order; Suricata sorts the keys.
    let md: Vec<(String, String)> = [
        ("created_at", "2013_05_31"),
        ("confidence", "Medium"),
        ("signature_severity", "Major"),
        ("tag", "Description_Generated_By_Proofpoint_Nexus"),
        ("updated_at", "2024_03_06"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let ev = AlertEvent {
        ts_secs: 1_770_571_317,
        ts_nanos: 697_544_000,
        flow_id: Some(2_075_460_149_639_207),
        src_ip: v4(192, 168, 100, 2),
        src_port: Some(35510),
        dest_ip: v4(172, 20, 0, 3),
        dest_port: Some(8080),
        proto: 6,
        tx_id: Some(0),
        signature_id: 2_016_953,
        rev: 5,
        signature: "ET EXPLOIT Apache Struts Possible OGNL Java Exec In URI",
        category: "Attempted User Privilege Gain",
        severity: 1,
        metadata: &md,
        app_proto: Some("http"),
        direction: Some("to_server"),
        flow: Some(FlowInfo {
            pkts_toserver: 4,
            pkts_toclient: 3,
            bytes_toserver: 1059,
            bytes_toclient: 326,
            start_secs: 1_770_571_311,
            start_nanos: 679_838_000,
            src_ip: v4(192, 168, 100, 2),
            dest_ip: v4(172, 20, 0, 3),
            src_port: Some(35510),
            dest_port: Some(8080),
        }),
        payload: Some(&payload),
        stream: true,
        packet: Some(&packet),
        packet_info_linktype: Some(1),
        ..AlertEvent::default()
    };
    let cfg = EveConfig {
        payload_base64: false,
        payload_printable: true,
        payload_length: true,
        community_id: None,
    };
    assert_eq!(eve_line_with(&ev, cfg), want);
}

#[test]
fn minimal_alert_and_optional_fields() {
    let ev = AlertEvent {
        src_ip: v4(10, 0, 0, 1),
        dest_ip: v4(10, 0, 0, 2),
        proto: 47,
        signature_id: 1,
        ..AlertEvent::default()
    };
    assert_eq!(
        eve_line(&ev),
        concat!(
            r#"{"timestamp":"1970-01-01T00:00:00.000000+0000","event_type":"alert","src_ip":"10.0.0.1","#,
            r#""dest_ip":"10.0.0.2","proto":"GRE","ip_v":4,"pkt_src":"wire/pcap","alert":{"action":"allowed","#,
            r#""gid":1,"signature_id":1,"rev":0,"signature":"","category":"","severity":3}}"#
        )
    );
    let ev = AlertEvent { proto: 253, ..ev };
    assert!(eve_line(&ev).contains(r#""proto":"253","ip_v":4,"#));
}

#[test]
fn vlan_icmpv6_and_ipv6_addresses() {
    let ev = AlertEvent {
        ts_secs: 1,
        pcap_cnt: Some(3),
        vlan: &[10, 20],
        src_ip: IpAddr::V6(Ipv6Addr::new(0xfd01, 0, 0, 0, 0, 0, 0x101, 0x101)),
        dest_ip: IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1)),
        proto: 58,
        icmp_type: Some(128),
        icmp_code: Some(0),
        action: "blocked",
        signature_id: 9,
        ..AlertEvent::default()
    };
    assert_eq!(
        eve_line(&ev),
        concat!(
            r#"{"timestamp":"1970-01-01T00:00:01.000000+0000","pcap_cnt":3,"event_type":"alert","vlan":[10,20],"#,
            r#""src_ip":"fd01:0000:0000:0000:0000:0000:0101:0101","#,
            r#""dest_ip":"ff02:0000:0000:0000:0000:0000:0000:0001","proto":"IPv6-ICMP","ip_v":6,"#,
            r#""icmp_type":128,"icmp_code":0,"pkt_src":"wire/pcap","alert":{"action":"blocked","gid":1,"#,
            r#""signature_id":9,"rev":0,"signature":"","category":"","severity":3}}"#
        )
    );
}

#[test]
fn json_escaping_of_odd_strings_and_binary_payload() {
    let msg = "quote\" back\\slash /slash\nnl\ttab \u{1}ctl \u{7f}del é \u{1F600}";
    let md = vec![("k\"ey".to_string(), "v\\al\u{0}".to_string())];
    let payload = [0xffu8, 0xfe, 0x00, b'"', b'\\', b'\n', 0x80];
    let ev = AlertEvent {
        src_ip: v4(1, 2, 3, 4),
        dest_ip: v4(5, 6, 7, 8),
        proto: 17,
        src_port: Some(53),
        dest_port: Some(1024),
        signature: msg,
        category: "cat\u{1b}[0m",
        metadata: &md,
        payload: Some(&payload),
        pkt_src: "stream (flow timeout)",
        ..AlertEvent::default()
    };
    let line = eve_line(&ev);
    assert!(line.contains(
        "\"signature\":\"quote\\\" back\\\\slash /slash\\nnl\\ttab \\u0001ctl \u{7f}del é 😀\""
    ));
    assert!(line.contains(r#""category":"cat\u001b[0m""#));
    assert!(line.contains(r#""metadata":{"k\"ey":["v\\al\u0000"]}"#));
    assert!(
        line.contains(r#""payload":"//4AIlwKgA==","payload_printable":"...\"\\\n.","stream":0}"#)
    );
    // And it all parses back to the original values.
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["alert"]["signature"], msg);
    assert_eq!(v["alert"]["metadata"]["k\"ey"][0], "v\\al\u{0}");
    assert_eq!(v["pkt_src"], "stream (flow timeout)");
}

#[test]
fn empty_payload_and_payload_options() {
    let ev = AlertEvent {
        src_ip: v4(1, 1, 1, 1),
        dest_ip: v4(2, 2, 2, 2),
        proto: 6,
        payload: Some(b""),
        ..AlertEvent::default()
    };
    let all = EveConfig {
        payload_base64: true,
        payload_printable: true,
        payload_length: true,
        community_id: None,
    };
    assert!(eve_line_with(&ev, all).ends_with(r#""severity":3},"payload_length":0,"stream":0}"#));
    let ev = AlertEvent {
        payload: Some(b"GOOD"),
        stream: true,
        ..ev
    };
    assert!(eve_line_with(&ev, all).ends_with(
        r#""payload":"R09PRA==","payload_length":4,"payload_printable":"GOOD","stream":1}"#
    ));
    assert!(
        eve_line(&ev).ends_with(r#""payload":"R09PRA==","payload_printable":"GOOD","stream":1}"#)
    );
}

#[test]
fn formatter_is_reusable_and_deterministic() {
    let md = et_metadata();
    let ev = dev_alert(&md);
    let mut f = EveFormatter::new(EveConfig::default());
    let mut a = Vec::new();
    let mut b = Vec::new();
    f.alert(&mut a, &ev).unwrap();
    f.alert(&mut b, &ev).unwrap();
    assert_eq!(a, b);
    // Writing preformatted records gives the same file.
    let mut w = EveWriter::new(Vec::new());
    w.write_record(&a).unwrap();
    w.write_alert(&ev).unwrap();
    let out = w.into_inner().unwrap();
    let mut want = a.clone();
    want.push(b'\n');
    want.extend_from_slice(&a);
    want.push(b'\n');
    assert_eq!(out, want);
}

// ---------------------------------------------------------------- fast.log

#[test]
fn fast_log_tcp() {
    let md = et_metadata();
    assert_eq!(
        fast_line(&dev_alert(&md), false),
        "12/27/2021-17:39:01.666724  [**] [1:2025701:2] ET POLICY SMB2 NT Create AndX Request For an Executable File [**] [Classification: Potential Corporate Privacy Violation] [Priority: 1] {TCP} 192.168.1.161:59120 -> 192.168.1.46:445\n"
    );
}

#[test]
fn fast_log_udp_drop_and_null_classification() {
    let ev = AlertEvent {
        ts_secs: 1_700_000_000,
        ts_nanos: 5_000,
        src_ip: v4(10, 0, 0, 1),
        src_port: Some(5353),
        dest_ip: v4(224, 0, 0, 251),
        dest_port: Some(5353),
        proto: 17,
        gid: 1,
        signature_id: 1000,
        rev: 3,
        signature: "UDP test",
        category: "",
        severity: 3,
        rule_drop: true,
        action: "blocked",
        ..AlertEvent::default()
    };
    assert_eq!(
        fast_line(&ev, true),
        "11/14/2023-22:13:20.000005  [Drop] [**] [1:1000:3] UDP test [**] [Classification: (null)] [Priority: 3] {UDP} 10.0.0.1:5353 -> 224.0.0.251:5353\n"
    );
    assert_eq!(
        fast_line(&ev, false),
        "11/14/2023-22:13:20.000005  [wDrop] [**] [1:1000:3] UDP test [**] [Classification: (null)] [Priority: 3] {UDP} 10.0.0.1:5353 -> 224.0.0.251:5353\n"
    );
}

#[test]
fn fast_log_icmp_prints_type_and_code_as_ports() {
    let ev = AlertEvent {
        src_ip: v4(192, 168, 0, 1),
        dest_ip: v4(192, 168, 0, 2),
        proto: 1,
        icmp_type: Some(8),
        icmp_code: Some(0),
        signature_id: 2,
        rev: 1,
        signature: "ICMP echo",
        category: "Misc activity",
        ..AlertEvent::default()
    };
    assert_eq!(
        fast_line(&ev, false),
        "01/01/1970-00:00:00.000000  [**] [1:2:1] ICMP echo [**] [Classification: Misc activity] [Priority: 3] {ICMP} 192.168.0.1:8 -> 192.168.0.2:0\n"
    );
}

#[test]
fn fast_log_ipv6_and_unknown_protocols() {
    let src = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    let dst = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));
    let ev = AlertEvent {
        src_ip: src,
        src_port: Some(443),
        dest_ip: dst,
        dest_port: Some(50000),
        proto: 6,
        signature_id: 3,
        rev: 1,
        signature: "v6",
        category: "Not Suspicious Traffic",
        severity: 4,
        ..AlertEvent::default()
    };
    assert_eq!(
        fast_line(&ev, false),
        "01/01/1970-00:00:00.000000  [**] [1:3:1] v6 [**] [Classification: Not Suspicious Traffic] [Priority: 4] {TCP} 2001:0db8:0000:0000:0000:0000:0000:0001:443 -> 2001:0db8:0000:0000:0000:0000:0000:0002:50000\n"
    );
    let ev = AlertEvent {
        proto: 58,
        icmp_type: Some(135),
        icmp_code: Some(0),
        src_port: None,
        dest_port: None,
        ..ev
    };
    assert!(fast_line(&ev, false).ends_with(
        "{IPv6-ICMP} 2001:0db8:0000:0000:0000:0000:0000:0001:135 -> 2001:0db8:0000:0000:0000:0000:0000:0002:0\n"
    ));
    let ev = AlertEvent {
        proto: 253,
        icmp_type: None,
        icmp_code: None,
        ..ev
    };
    assert!(fast_line(&ev, false).contains("{PROTO:253} "));
    let ev = AlertEvent { proto: 47, ..ev };
    assert!(fast_line(&ev, false).contains("{GRE} 2001:0db8:0000:0000:0000:0000:0000:0001:0 -> "));
}

#[test]
fn fast_log_writer_buffers_lines() {
    let md = et_metadata();
    let ev = dev_alert(&md);
    let mut w = FastLogWriter::new(Vec::new());
    w.write_alert(&ev).unwrap();
    w.write_alert(&ev).unwrap();
    let out = String::from_utf8(w.into_inner().unwrap()).unwrap();
    assert_eq!(out.lines().count(), 2);
    assert_eq!(out, fast_line(&ev, false).repeat(2));
}

// ---------------------------------------------------------------- stats

fn sample_stats() -> StatsTree {
    let mut t = StatsTree::new();
    t.add("decoder.pkts", 123).unwrap();
    t.add("decoder.bytes", 45_678).unwrap();
    t.add("decoder.ipv4", 120).unwrap();
    t.add("decoder.event.ipv4.pkt_too_small", 0).unwrap();
    t.add("decoder.event.ipv4.trunc_pkt", 2).unwrap();
    t.add("flow.memcap_evictions", 0).unwrap();
    t.add("detect.alert", 7).unwrap();
    t
}

#[test]
fn stats_eve_nesting_and_determinism() {
    let tree = sample_stats();
    let mut w = EveWriter::new(Vec::new());
    w.write_stats(1_640_626_741, 0, &tree).unwrap();
    w.write_stats(1_640_626_741, 0, &tree.clone()).unwrap();
    let out = String::from_utf8(w.into_inner().unwrap()).unwrap();
    let want = concat!(
        r#"{"timestamp":"2021-12-27T17:39:01.000000+0000","event_type":"stats","stats":{"#,
        r#""decoder":{"pkts":123,"bytes":45678,"ipv4":120,"event":{"ipv4":{"pkt_too_small":0,"trunc_pkt":2}}},"#,
        r#""flow":{"memcap_evictions":0},"detect":{"alert":7}}}"#,
        "\n"
    );
    assert_eq!(out, format!("{want}{want}"));

    // Building the same counters in another order and sorting gives one layout.
    let mut a = sample_stats();
    let mut b = StatsTree::new();
    for (k, v) in sample_stats().counters().into_iter().rev() {
        b.set(&k, v).unwrap();
    }
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn stats_log_table() {
    let tree = sample_stats();
    let mut out = Vec::new();
    write_stats_log(&mut out, &tree, &[("vigil.elapsed_ms", "1234".to_string())]).unwrap();
    let sep = "-".repeat(99);
    let want = format!(
        "{sep}\n\
         Counter                                                      | TM Name                   | Value\n\
         {sep}\n\
         decoder.pkts                                                 | Total                     | 123\n\
         decoder.bytes                                                | Total                     | 45678\n\
         decoder.ipv4                                                 | Total                     | 120\n\
         decoder.event.ipv4.trunc_pkt                                 | Total                     | 2\n\
         detect.alert                                                 | Total                     | 7\n\
         vigil.elapsed_ms                                             | Total                     | 1234\n"
    );
    assert_eq!(String::from_utf8(out).unwrap(), want);

    let mut out = Vec::new();
    let opts = StatsLogOptions {
        date: Some((1_640_626_741, 90_061)),
        null_values: true,
    };
    write_stats_log_with(&mut out, &tree, &[], &opts).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(sep.as_str()));
    assert_eq!(
        lines.next(),
        Some("Date: 12/27/2021 -- 17:39:01 (uptime: 1d, 01h 01m 01s)")
    );
    assert!(text.contains(
        "\nflow.memcap_evictions                                        | Total                     | 0\n"
    ));
}

#[test]
fn alert_source_and_target() {
    use vigil_output::AlertTarget;
    let md = vec![("k".to_string(), "v".to_string())];
    let ev = AlertEvent {
        src_ip: v4(10, 0, 0, 1),
        src_port: Some(40000),
        dest_ip: v4(10, 0, 0, 2),
        dest_port: Some(53),
        proto: 17,
        signature_id: 1,
        metadata: &md,
        target: Some(AlertTarget::Dest),
        ..AlertEvent::default()
    };
    // Suricata's AlertJsonHeader: right after severity, before metadata.
    assert!(
        eve_line(&ev).contains(concat!(
            r#""severity":3,"source":{"ip":"10.0.0.1","port":40000},"#,
            r#""target":{"ip":"10.0.0.2","port":53},"metadata":{"k":["v"]}}"#
        )),
        "{}",
        eve_line(&ev)
    );
    let ev = AlertEvent {
        target: Some(AlertTarget::Src),
        ..ev
    };
    assert!(eve_line(&ev).contains(concat!(
        r#""source":{"ip":"10.0.0.2","port":53},"#,
        r#""target":{"ip":"10.0.0.1","port":40000}"#
    )));
    // ICMP: addresses only.
    let ev = AlertEvent {
        src_port: None,
        dest_port: None,
        proto: 1,
        icmp_type: Some(8),
        icmp_code: Some(0),
        target: Some(AlertTarget::Dest),
        metadata: &[],
        ..ev
    };
    assert!(eve_line(&ev)
        .ends_with(r#""severity":3,"source":{"ip":"10.0.0.1"},"target":{"ip":"10.0.0.2"}}}"#));
    // Without target: neither object.
    let ev = AlertEvent { target: None, ..ev };
    assert!(!eve_line(&ev).contains("\"source\""));
    assert!(!eve_line(&ev).contains("\"target\""));
}
