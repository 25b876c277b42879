//! End-to-end: a crafted DCERPC over TCP capture (bind, fragmented
//! request, response) through the real `vigil` binary, to alerts with the
//! `dcerpc` object and references, and to EVE `dcerpc` records.

use std::path::PathBuf;
use std::process::Command;

use vigil_craft::{write_pcap_file, TcpSession};

const NETLOGON_LE: [u8; 16] = [
    0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab, 0xef, 0, 1, 0x23, 0x45, 0x67, 0xcf, 0xfb,
];

fn pdu(ptype: u8, flags: u8, call: u8, body: &[u8]) -> Vec<u8> {
    let len = 16 + body.len() as u16;
    let mut v = vec![5, 0, ptype, flags, 0x10, 0, 0, 0];
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(&[0, 0, call, 0, 0, 0]);
    v.extend_from_slice(body);
    v
}

fn request(flags: u8, call: u8, opnum: u8, stub: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, 0, 0, 0, 0, opnum, 0];
    b.extend_from_slice(stub);
    pdu(0, flags, call, &b)
}

/// Client and server bytes: a bind of netlogon 1.0, its ack, a request
/// (opnum 26) in two fragments and its response.
fn exchange() -> (Vec<u8>, Vec<u8>) {
    let mut bind = vec![0xb8, 0x10, 0xb8, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0];
    bind.extend_from_slice(&NETLOGON_LE);
    bind.extend_from_slice(&[1, 0, 0, 0]);
    bind.extend_from_slice(&[0x04; 20]);
    let mut ack = vec![0xb8, 0x10, 0xb8, 0x10, 1, 0, 0, 0, 0, 0, 0, 0];
    ack.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    ack.extend_from_slice(&[0x04; 20]);
    let mut client = pdu(11, 3, 1, &bind);
    // The stub data is split over two fragments: the marker only exists
    // once they are joined.
    client.extend(request(
        1,
        2,
        26,
        b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAMARK",
    ));
    client.extend(request(
        2,
        2,
        26,
        b"ERBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\xff\xff\x2f\x21",
    ));
    let mut server = pdu(12, 3, 1, &ack);
    let mut resp = vec![0, 0, 0, 0, 0, 0, 0, 0];
    resp.extend_from_slice(&[0x11; 12]);
    server.extend(pdu(2, 3, 2, &resp));
    (client, server)
}

const RULES: &str = "\
alert dcerpc any any -> any any (msg:\"opnum and content\"; flow:established,to_server; dcerpc.opnum:26; content:\"|ff ff 2f 21|\"; endswith; reference:url,github.com/x/y; reference:cve,2020-1472; sid:1;)
alert dcerpc any any -> any any (msg:\"iface\"; flow:established,to_server; dcerpc.iface:12345678-1234-abcd-ef00-01234567cffb,=1; sid:2;)
alert dcerpc any any -> any any (msg:\"stub joined\"; flow:established,to_server; dcerpc.stub_data; content:\"MARKER\"; sid:3;)
alert dcerpc any any -> any any (msg:\"wrong opnum\"; flow:established,to_server; dce_opnum:1-25,27; sid:4;)
alert dcerpc any any -> any any (msg:\"response stub\"; flow:established,to_client; dce_stub_data; content:\"|11 11 11 11|\"; sid:5;)
";

const CONFIG: &str = "%YAML 1.1
---
outputs:
  - eve-log:
      enabled: yes
      filename: eve.json
      types:
        - alert:
            metadata:
              rule:
                reference: yes
        - dcerpc
";

fn run(dir: &std::path::Path, config: Option<&str>) -> Vec<serde_json::Value> {
    let mut s = TcpSession::new(
        "10.9.0.1:50000".parse().unwrap(),
        "10.9.0.2:135".parse().unwrap(),
    )
    .with_mss(50);
    let (client, server) = exchange();
    // The bind and its ack, then the request and its response.
    s.handshake()
        .client_send(&client[..72])
        .server_send(&server[..56])
        .client_send(&client[72..])
        .server_send(&server[56..])
        .close();
    let pcap = dir.join("in.pcap");
    write_pcap_file(&pcap, s.frames()).unwrap();
    let rules = dir.join("test.rules");
    std::fs::write(&rules, RULES).unwrap();
    let out = dir.join("out");
    let mut args: Vec<String> = vec![
        "run".into(),
        "-r".into(),
        pcap.display().to_string(),
        "-S".into(),
        rules.display().to_string(),
        "-l".into(),
        out.display().to_string(),
    ];
    if let Some(c) = config {
        let p = dir.join("vigil.yaml");
        std::fs::write(&p, c).unwrap();
        args.push("-c".into());
        args.push(p.display().to_string());
    }
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(&args)
        .output()
        .expect("run vigil");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out.join("eve.json"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-e2e-dce-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn dcerpc_capture_to_alerts_and_records() {
    let d = tmpdir("cfg");
    let events = run(&d, Some(CONFIG));
    let alerts: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .collect();
    let mut sids: Vec<u64> = alerts
        .iter()
        .map(|e| e["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort_unstable();
    assert_eq!(sids, vec![1, 2, 3, 5], "{alerts:#?}");
    let a1 = alerts
        .iter()
        .find(|e| e["alert"]["signature_id"] == 1)
        .unwrap();
    assert_eq!(a1["app_proto"], "dcerpc");
    assert_eq!(a1["dcerpc"]["request"], "REQUEST");
    assert_eq!(a1["dcerpc"]["req"]["opnum"], 26);
    assert_eq!(a1["dcerpc"]["req"]["frag_cnt"], 2);
    assert_eq!(
        a1["dcerpc"]["interfaces"][0]["uuid"],
        "12345678-1234-abcd-ef00-01234567cffb"
    );
    assert_eq!(
        a1["alert"]["references"],
        serde_json::json!([
            "https://github.com/x/y",
            "https://cve.mitre.org/cgi-bin/cvename.cgi?name=2020-1472"
        ])
    );
    let records: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "dcerpc")
        .collect();
    assert_eq!(records.len(), 2, "{records:#?}");
    let bind = &records[0]["dcerpc"];
    assert_eq!(bind["request"], "BIND");
    assert_eq!(bind["response"], "BINDACK");
    assert_eq!(bind["interfaces"][0]["ack_result"], 0);
    assert_eq!(bind["interfaces"][0]["version"], "1.0");
    let call = &records[1]["dcerpc"];
    assert_eq!(call["request"], "REQUEST");
    assert_eq!(call["response"], "RESPONSE");
    assert_eq!(call["call_id"], 2);
    assert_eq!(call["rpc_version"], "5.0");
    assert_eq!(call["req"]["stub_data_size"], 87);
    // The response header is part of a response's stub, as in Suricata.
    assert_eq!(call["res"]["stub_data_size"], 20);
    assert_eq!(records[1]["dest_port"], 135);
}

/// Without the config: every record type is logged (dcerpc included),
/// alerts carry no references.
#[test]
fn dcerpc_defaults() {
    let d = tmpdir("default");
    let events = run(&d, None);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event_type"] == "dcerpc")
            .count(),
        2
    );
    let a = events
        .iter()
        .find(|e| e["event_type"] == "alert")
        .expect("an alert");
    assert!(a["alert"].get("references").is_none());
}
