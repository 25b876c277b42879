//! Adversarial traffic (see `vigil_craft::adversarial`) must not grow the
//! engine's state beyond its configured caps, and whatever a cap drops is
//! counted. Memory is checked through the engine's own accounting (flow
//! table size, stream blocks and bookkeeping, defragmentation bytes),
//! which is what the caps bound.

mod common;

use common::{engine, run, run_pcap, write_pcap};
use vigil_craft::adversarial::{fragment_flood, overlap_storm, syn_flood, tiny_segments};
use vigil_engine::{DefragConfig, EngineConfig};

const RULES: &str = "alert tcp any any -> any any (content:\"ATTACK\"; sid:1;)\n\
                     alert tcp any any -> any 80 (flags:S; flowbits:noalert; sid:2;)\n\
                     alert udp any any -> any any (content:\"FFFF\"; sid:3;)\n";

#[test]
fn syn_flood_of_a_million_flows_stays_within_the_flow_cap() {
    let flows = 1_000_000u32;
    let cap = 20_000;
    let cfg = EngineConfig {
        workers: 2,
        max_flows: cap,
        ..EngineConfig::default()
    };
    let path = write_pcap("synflood", syn_flood(flows));
    let (alerts, s) = run_pcap(&path, engine(RULES), &cfg);
    let _ = std::fs::remove_file(&path);
    assert!(alerts.is_empty());
    let w = &s.workers;
    assert_eq!(w.pkts, u64::from(flows));
    assert_eq!(w.flows_created, u64::from(flows));
    // Each worker holds at most its share of the cap at any time ...
    assert!(
        w.flows_peak <= cap as u64,
        "peak {} > cap {cap}",
        w.flows_peak
    );
    // ... and every flow pushed out for another is counted.
    assert_eq!(w.flows_evicted + w.flows_active_at_end, u64::from(flows));
    assert!(w.flows_evicted >= u64::from(flows) - cap as u64);
    // SYNs carry no data: no stream memory at all.
    assert_eq!(w.stream_mem_peak, 0);
    // The detectors saw every attempt and every failure (a flow evicted
    // or ended without an answer), and kept their tables bounded: a
    // million spoofed sources are a million keys, refused and counted
    // beyond the cap.
    let d = s.detectors.expect("detectors on by default");
    assert_eq!(d.attempts, u64::from(flows));
    assert_eq!(d.failed, u64::from(flows));
    assert!(d.keys_peak <= vigil_engine::detectors::MAX_KEYS as u64);
    assert!(d.keys_refused > 0);
}

#[test]
fn overlap_storm_stays_within_the_stream_memcap() {
    let memcap = 512 << 10;
    let cfg = EngineConfig {
        stream_memcap: memcap,
        ..EngineConfig::default()
    };
    let segments = 200_000;
    let (_, s) = run("storm", overlap_storm(segments), RULES, &cfg);
    let w = &s.workers;
    assert!(
        w.stream_mem_peak <= memcap as u64,
        "stream memory peak {} > cap {memcap}",
        w.stream_mem_peak
    );
    assert!(w.stream_memcap_dropped > 0, "drops must be counted");
    assert!(w.stream_overlaps > 100_000);
    assert!(w.stream_events["stream.reassembly_overlap_different_data"] > 100_000);
    assert!(w.stream_events["stream.reassembly_insert_memcap"] > 0);
}

#[test]
fn fragment_flood_stays_within_the_defrag_caps() {
    let memcap = 1 << 20;
    let trackers = 500;
    let cfg = EngineConfig {
        defrag: Some(DefragConfig {
            memcap,
            max_trackers: trackers,
            ..DefragConfig::default()
        }),
        ..EngineConfig::default()
    };
    let datagrams = 100_000;
    let (alerts, s) = run("fragflood", fragment_flood(datagrams), RULES, &cfg);
    assert!(alerts.is_empty(), "fragments alone match no UDP rule");
    let d = &s.defrag;
    assert_eq!(d.fragments, 2 * u64::from(datagrams));
    assert_eq!(d.reassembled, 0);
    assert!(
        d.peak_bytes <= memcap as u64,
        "defrag peak {} > cap {memcap}",
        d.peak_bytes
    );
    assert!(d.peak_trackers <= trackers as u64);
    assert!(d.evicted >= u64::from(datagrams) - trackers as u64);
    assert_eq!(d.overlaps, u64::from(datagrams));
    assert_eq!(s.workers.events["ipv4.frag_overlap"], u64::from(datagrams));
}

#[test]
fn tiny_segments_unacknowledged_stay_within_the_stream_memcap() {
    let memcap = 1 << 20;
    let cfg = EngineConfig {
        stream_memcap: memcap,
        ..EngineConfig::default()
    };
    let data: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let (_, s) = run("tiny", tiny_segments(&data, None), RULES, &cfg);
    let w = &s.workers;
    assert!(
        w.stream_mem_peak <= memcap as u64,
        "peak {}",
        w.stream_mem_peak
    );
    // Per-segment bookkeeping fills the cap long before the data does.
    assert!(w.stream_memcap_dropped > 0);
}

#[test]
fn tiny_segments_acknowledged_are_inspected_as_a_stream() {
    let mut data: Vec<u8> = (0..50_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    data.splice(30_000..30_000, b"ATTACK".iter().copied());
    let (alerts, s) = run(
        "tiny-acked",
        tiny_segments(&data, Some(100)),
        RULES,
        &EngineConfig::default(),
    );
    assert_eq!(common::sids(&alerts), vec![1]);
    assert!(alerts[0].stream);
    // Acknowledged data is inspected and released as it goes.
    assert!(
        s.workers.stream_mem_peak < 64 * 1024,
        "peak {}",
        s.workers.stream_mem_peak
    );
    assert_eq!(s.workers.stream_memcap_dropped, 0);
}
