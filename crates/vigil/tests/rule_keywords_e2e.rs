//! End to end for the `domain` / `tld` transforms, `rpc`, `iprep` and
//! `target`: a crafted capture (DNS queries, ONC RPC calls over UDP and
//! TCP, traffic from and to listed addresses) through the `vigil` binary,
//! with a reputation configured in the YAML, to EVE alerts.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use vigil_craft::{eth_ipv4_tcp, eth_ipv4_udp, TcpSession, TimedFrame, ACK, PSH};

const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 7, 0, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(10, 7, 0, 2);

/// A DNS query for `name` (type A, class IN).
fn dns_query(id: u16, name: &str) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.extend_from_slice(&[0, 0, 1, 0, 1]);
    m
}

/// An ONC RPC call (null credentials and verifier).
fn rpc_call(xid: u32, prog: u32, vers: u32, proc_: u32) -> Vec<u8> {
    [xid, 0, 2, prog, vers, proc_, 0, 0, 0, 0]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect()
}

fn capture() -> Vec<TimedFrame> {
    let t = 1_700_000_000;
    let mut frames = vec![
        (
            (t, 0),
            eth_ipv4_udp(
                CLIENT,
                40000,
                SERVER,
                53,
                &dns_query(1, "www.mail.example.co.uk"),
            ),
        ),
        (
            (t, 1000),
            eth_ipv4_udp(CLIENT, 40001, SERVER, 53, &dns_query(2, "co.uk")),
        ),
        // portmap GETPORT call, and a reply that is not a call.
        (
            (t + 1, 0),
            eth_ipv4_udp(CLIENT, 800, SERVER, 111, &rpc_call(7, 100000, 2, 3)),
        ),
        (
            (t + 1, 1000),
            eth_ipv4_udp(SERVER, 111, CLIENT, 800, &{
                let mut r = rpc_call(7, 100000, 2, 3);
                r[7] = 1;
                r
            }),
        ),
        // A call cut short: 20 bytes of a UDP payload.
        (
            (t + 1, 2000),
            eth_ipv4_udp(CLIENT, 801, SERVER, 111, &rpc_call(8, 100000, 2, 3)[..20]),
        ),
        // Reputation: from a listed netblock, to a listed host.
        (
            (t + 3, 0),
            eth_ipv4_tcp(
                Ipv4Addr::new(192, 0, 2, 9),
                5555,
                Ipv4Addr::new(198, 51, 100, 7),
                443,
                1,
                1,
                PSH | ACK,
                b"hi",
            ),
        ),
    ];
    // NFS call over TCP: the record marker, then the call.
    let mut rec = vec![0x80, 0, 0, 40];
    rec.extend(rpc_call(9, 100003, 3, 1));
    let mut s = TcpSession::new(
        SocketAddr::from((CLIENT, 900)),
        SocketAddr::from((SERVER, 2049)),
    )
    .start_at((t + 2, 0));
    s.handshake().client_send(&rec);
    frames.extend(s.into_frames());
    frames.sort_by_key(|f| f.0);
    frames
}

const RULES: &str = "\
alert dns any any -> any any (msg:\"domain\"; dns.query; domain; content:\"example.co.uk\"; startswith; endswith; target:dest_ip; sid:1;)
alert dns any any -> any any (msg:\"tld\"; dns.query; tld; content:\"co.uk\"; startswith; endswith; target:src_ip; sid:2;)
alert dns any any -> any any (msg:\"bare suffix\"; dns.query; domain; bsize:0; sid:3;)
alert udp any any -> any any (msg:\"portmap getport\"; rpc:100000, 2, 3; sid:4;)
alert udp any any -> any any (msg:\"portmap any\"; rpc:100000, *, *; sid:5;)
alert tcp any any -> any any (msg:\"nfs\"; rpc:100003, 3, *; sid:6;)
alert tcp any any -> any any (msg:\"bad src\"; iprep:src,BadHosts,>,30; sid:7;)
alert tcp any any -> any any (msg:\"cnc dst\"; iprep:dst,CnC,isset; target:dest_ip; sid:8;)
alert tcp any any -> any any (msg:\"not listed\"; iprep:both,BadHosts,isset; sid:9;)
alert tcp any any -> any any (msg:\"unknown category\"; iprep:src,Nope,>,1; sid:10;)
";

#[test]
fn keywords_from_capture_to_eve() {
    let data = std::env::temp_dir().join(format!("vigil-iprep-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("categories.txt"),
        "# id,shortname,description\n1,BadHosts,Known bad hosts\n2,CnC,Command and control\n",
    )
    .unwrap();
    std::fs::write(
        data.join("reputation.list"),
        "192.0.2.0/24,1,50\n198.51.100.7,2,90\nthis is not a line\n",
    )
    .unwrap();
    let yaml = format!(
        "reputation-categories-file: {}\ndefault-reputation-path: {}\nreputation-files:\n  - reputation.list\n",
        data.join("categories.txt").display(),
        data.display()
    );
    let common::Run { eve, events, dir } =
        common::run_with("rulekw", &capture(), RULES, Some(&["alert"]), &yaml, &[]);
    // sid 3: "co.uk" has no registrable domain (empty buffer); sid 4 and
    // 5 once (the reply and the short call do not match); sid 9: the
    // source is in a BadHosts netblock and the destination has a host
    // entry, which answers 0 for BadHosts (Suricata's per-host scores),
    // so both are set; sid 10 is not loaded (unknown category).
    assert_eq!(
        common::alert_sids(&events),
        vec![1, 2, 3, 4, 5, 6, 7, 8, 9],
        "{eve}"
    );
    let alert = |sid: u64| {
        events
            .iter()
            .find(|e| e["alert"]["signature_id"] == sid)
            .unwrap_or_else(|| panic!("sid {sid}: {eve}"))
    };
    // target:dest_ip: the source is the client, the target the server.
    let a = &alert(1)["alert"];
    assert_eq!(a["source"]["ip"], "10.7.0.1");
    assert_eq!(a["source"]["port"], 40000);
    assert_eq!(a["target"]["ip"], "10.7.0.2");
    assert_eq!(a["target"]["port"], 53);
    // target:src_ip: the other way round.
    let a = &alert(2)["alert"];
    assert_eq!(a["source"]["ip"], "10.7.0.2");
    assert_eq!(a["source"]["port"], 53);
    assert_eq!(a["target"]["ip"], "10.7.0.1");
    assert_eq!(a["target"]["port"], 40000);
    // Written right after severity, as Suricata does.
    let line = eve
        .lines()
        .find(|l| l.contains("\"signature_id\":1,"))
        .unwrap();
    assert!(
        line.contains("\"severity\":3,\"source\":{\"ip\":\"10.7.0.1\",\"port\":40000},\"target\":{\"ip\":\"10.7.0.2\",\"port\":53}"),
        "{line}"
    );
    let a = &alert(8)["alert"];
    assert_eq!(a["target"]["ip"], "198.51.100.7");
    assert_eq!(a["target"]["port"], 443);
    // Rules without target: have neither object.
    assert!(alert(4)["alert"].get("source").is_none());
    assert!(alert(4)["alert"].get("target").is_none());
    assert_eq!(alert(6)["dest_port"], 2049);
    // The alerts, source and target included, are within Suricata's EVE
    // schema (when the shared peer material is there).
    let check =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/eve_schema_check.py");
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/peers/suricata/eve.schema.json");
    if schema.exists() {
        let o = std::process::Command::new("python3")
            .arg(&check)
            .arg(dir.join("out/eve.json"))
            .arg("--schema")
            .arg(&schema)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&data);
}
