//! Tunnels and link-layer frames end to end, as Suricata 9 handles them:
//! the packet inside a tunnel (VXLAN, GRE) is a packet of its own, with
//! `pkt_src` naming the tunnel, a `tunnel` object for the frame that
//! carried it and no `pcap_cnt`; the outer packet is inspected too; ARP
//! frames (no IP layer) are seen by `alert arp` and `alert ether` rules.
//! The same alerts come out for any worker count.

use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;

use serde_json::Value;
use vigil_craft::{eth_ipv4_udp, write_pcap_file, PacketBuilder, TimedFrame};

const SECRET: &[u8] = b"tunnelled-secret";

fn capture() -> Vec<TimedFrame> {
    let b = PacketBuilder::new();
    let (o1, o2) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let (i1, i2) = (Ipv4Addr::new(192, 168, 1, 1), Ipv4Addr::new(192, 168, 1, 2));
    // The packet inside: UDP to port 53 carrying the secret.
    let inner_frame = eth_ipv4_udp(i1, 5353, i2, 53, SECRET);
    let inner_ip = inner_frame[14..].to_vec();

    // 1: VXLAN (I flag, VNI 100) from 40000 to 4789.
    let mut vx = vec![0x08, 0, 0, 0, 0, 0, 100, 0];
    vx.extend_from_slice(&inner_frame);
    let vxlan = eth_ipv4_udp(o1, 40000, o2, 4789, &vx);

    // 2: GRE version 0 carrying IPv4.
    let mut gre = vec![0, 0, 0x08, 0x00];
    gre.extend_from_slice(&inner_ip);
    let gre = b.ethernet(0x0800, &b.ipv4_packet(o1, o2, 47, &gre));

    // 3: an ARP request on the wire.
    let arp = [
        0u8, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
    ];
    let arp = b.ethernet(0x0806, &arp);
    vec![
        ((1_700_000_000, 0), vxlan),
        ((1_700_000_000, 100), gre),
        ((1_700_000_000, 200), arp),
    ]
}

const RULES: &str = "\
alert udp any any -> any 53 (msg:\"inner\"; content:\"tunnelled-secret\"; sid:1;)\n\
alert udp any any -> any 4789 (msg:\"outer vxlan\"; sid:2;)\n\
alert arp any any -> any any (msg:\"arp\"; sid:3;)\n\
alert ether any any -> any any (msg:\"ether arp\"; ether.hdr; content:\"|08 06|\"; offset:12; depth:2; sid:4;)\n\
alert ip any any -> any any (msg:\"outer gre\"; ip_proto:47; sid:5;)\n\
alert ip any any -> any any (msg:\"never on arp\"; content:\"|00 01 08 00 06 04|\"; sid:6;)\n";

fn run(dir: &std::path::Path, workers: &str) -> (Vec<Value>, String) {
    let out = dir.join(format!("out-{workers}"));
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["run", "-r"])
        .arg(dir.join("tunnels.pcap"))
        .arg("-S")
        .arg(dir.join("tunnels.rules"))
        .arg("-l")
        .arg(&out)
        .args(["--workers", workers, "-k", "none"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let eve = std::fs::read_to_string(out.join("eve.json")).unwrap();
    let alerts = eve
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event_type"] == "alert")
        .collect();
    (
        alerts,
        std::fs::read_to_string(out.join("stats.log")).unwrap(),
    )
}

fn by_sid(alerts: &[Value], sid: u64) -> Vec<&Value> {
    alerts
        .iter()
        .filter(|a| a["alert"]["signature_id"] == sid)
        .collect()
}

#[test]
fn tunnel_packets_and_arp_frames() {
    let dir = std::env::temp_dir().join(format!("vigil-tunnels-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write_pcap_file(&dir.join("tunnels.pcap"), &capture()).unwrap();
    std::fs::write(dir.join("tunnels.rules"), RULES).unwrap();
    let (alerts, stats) = run(&dir, "1");

    // The packet inside each tunnel.
    let inner = by_sid(&alerts, 1);
    assert_eq!(inner.len(), 2, "{inner:?}");
    let src: Vec<&str> = inner
        .iter()
        .map(|a| a["pkt_src"].as_str().unwrap())
        .collect();
    assert_eq!(src, ["vxlan encapsulation", "gre tunnel"]);
    for (a, (cnt, proto, sp, dp)) in inner
        .iter()
        .zip([(1, "UDP", 40000, 4789), (2, "GRE", 0, 0)])
    {
        assert!(a.get("pcap_cnt").is_none(), "{a}");
        assert_eq!(a["src_ip"], "192.168.1.1");
        assert_eq!(a["dest_port"], 53);
        let t = &a["tunnel"];
        assert_eq!(t["src_ip"], "10.0.0.1");
        assert_eq!(t["dest_ip"], "10.0.0.2");
        assert_eq!(t["proto"], proto);
        assert_eq!(t["src_port"], sp);
        assert_eq!(t["dest_port"], dp);
        assert_eq!(t["depth"], 1);
        assert_eq!(t["pcap_cnt"], cnt);
        assert_eq!(t["pkt_src"], "wire/pcap");
        let ip: IpAddr = a["src_ip"].as_str().unwrap().parse().unwrap();
        assert!(ip.is_ipv4());
    }

    // The frames themselves, from the wire.
    let outer = by_sid(&alerts, 2);
    assert_eq!(outer.len(), 1);
    assert_eq!(outer[0]["pkt_src"], "wire/pcap");
    assert_eq!(outer[0]["pcap_cnt"], 1);
    assert!(outer[0].get("tunnel").is_none());
    let gre = by_sid(&alerts, 5);
    assert_eq!(gre.len(), 1);
    assert_eq!(gre[0]["proto"], "GRE");
    assert_eq!(gre[0]["pcap_cnt"], 2);

    // ARP: no addresses, ports or protocol.
    for sid in [3, 4] {
        let a = by_sid(&alerts, sid);
        assert_eq!(a.len(), 1, "sid {sid}: {a:?}");
        let a = a[0];
        assert_eq!(a["pcap_cnt"], 3);
        assert_eq!(a["pkt_src"], "wire/pcap");
        for absent in ["src_ip", "dest_ip", "proto", "ip_v", "flow_id", "flow"] {
            assert!(a.get(absent).is_none(), "sid {sid} has {absent}: {a}");
        }
    }
    assert!(by_sid(&alerts, 6).is_empty());
    assert_eq!(alerts.len(), 6);

    // Tunnel packets are counted apart from the frames.
    let stat = |name: &str| -> u64 {
        stats
            .lines()
            .find(|l| l.split('|').next().map(str::trim) == Some(name))
            .and_then(|l| l.rsplit('|').next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(stat("decoder.pkts"), 3);
    assert_eq!(stat("decoder.tunnel_pkts"), 2);

    // The same alerts, in the same order, whatever the worker count.
    let strip = |v: &[Value]| -> Vec<String> { v.iter().map(|a| a.to_string()).collect() };
    for workers in ["2", "3"] {
        let (other, _) = run(&dir, workers);
        assert_eq!(strip(&alerts), strip(&other), "--workers {workers}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
