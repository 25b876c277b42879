//! `dataset` in the pipeline: a value set on one flow is seen by rules on
//! other flows (on other workers) in input order, through transforms, the
//! same for any worker count.

mod common;

use std::net::IpAddr;

use common::{engine, run_pcap, sids, write_pcap};
use vigil_craft::{PacketBuilder, TimedFrame};
use vigil_engine::EngineConfig;

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

/// One DNS query per flow (each from its own client port).
fn frames(names: &[&str]) -> Vec<TimedFrame> {
    let b = PacketBuilder::default();
    let c: IpAddr = "10.0.0.9".parse().unwrap();
    let s: IpAddr = "10.0.1.53".parse().unwrap();
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let q = b.udp(c, 40000 + i as u16, s, 53, &dns_query(i as u16, n));
            ((1_700_000_100 + i as i64, 0), q)
        })
        .collect()
}

#[test]
fn set_then_isset_across_flows_for_any_worker_count() {
    let dir = std::env::temp_dir().join(format!("vigil-engine-ds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bl = dir.join("md5.lst");
    // md5("evil.test"), and a bad line that is skipped.
    std::fs::write(&bl, "91b0ffa0b82a366338f9591163db5813\nnot-hex\n").unwrap();
    let rules = format!(
        "alert dns any any -> any any (msg:\"new name\"; dns.query; dataset:set,names, type string; sid:1;)\n\
         alert dns any any -> any any (msg:\"listed\"; dns.query; to_md5; dataset:isset,bl, type md5, load {}; sid:2;)\n\
         alert dns any any -> any any (msg:\"seen before\"; dns.query; content:\"again\"; dataset:isset,names; sid:3;)\n",
        bl.display()
    );
    let names = [
        "example.com",
        "example.com",
        "evil.test",
        "again.example",
        "again.example",
        "evil.test",
    ];
    let path = write_pcap("datasets", frames(&names));
    let mut first = None;
    for workers in [1, 2, 3] {
        let detect = engine(&rules);
        let cfg = EngineConfig {
            workers,
            ..EngineConfig::default()
        };
        let (seen, stats) = run_pcap(&path, detect.clone(), &cfg);
        // 1: example.com (new); 1, 2: evil.test; 1, then 3 (set by the
        // rule before it on the same packet); 3: seen again; 2.
        assert_eq!(sids(&seen), vec![1, 1, 2, 1, 3, 3, 2], "workers {workers}");
        let idx: Vec<u64> = seen.iter().map(|s| s.index).collect();
        match &first {
            None => first = Some(idx),
            Some(f) => assert_eq!(f, &idx, "workers {workers}"),
        }
        assert_eq!(stats.datasets.added, 3);
        let ds = detect.datasets.lock().unwrap();
        let names_set = ds.find("names").unwrap() as usize;
        assert_eq!(ds.data[names_set].len(), 3);
        assert_eq!(ds.data[ds.find("bl").unwrap() as usize].stats.bad_lines, 1);
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(&dir);
}
