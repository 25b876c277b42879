//! The device pipeline end to end: the same alerts, in the same order,
//! with the prefilter on an OpenCL device (PoCL in CI) as on the CPU —
//! flowbits across packets, case-sensitive and nocase contents, port- and
//! protocol-keyed rule groups, small batches with many in flight and time
//! limits, large ones, a tiny output area. Skips without an OpenCL
//! platform unless `VIGIL_REQUIRE_OPENCL=1`.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use common::{run_pcap, write_pcap, Seen};
use vigil_craft::{PacketBuilder, TcpSession, TimedFrame};
use vigil_detect::DetectEngine;
use vigil_engine::{DeviceSetup, EngineConfig, LaneConfig};
use vigil_opencl::DeviceMatcher;
use vigil_prefilter::EngineKind;

const RULES: &str = r#"alert tcp any any -> any 80 (msg:"login"; content:"LOGIN"; flowbits:set,login; flowbits:noalert; sid:1;)
alert tcp any 80 -> any any (msg:"after login"; content:"welcome"; nocase; flowbits:isset,login; sid:2;)
alert tcp any any -> any 80 (msg:"exact case"; content:"Secret"; sid:3;)
alert tcp any any -> any any (msg:"anywhere"; content:"needle"; nocase; sid:4;)
alert udp any any -> any 53 (msg:"dns-ish"; content:"|07|example"; sid:5;)
alert udp any 5000 -> any any (msg:"src keyed"; content:"from5000"; sid:6;)
alert icmp any any -> any any (msg:"icmp payload"; content:"ping-data"; sid:7;)
alert ip any any -> any any (msg:"any proto"; content:"ipwide"; sid:8;)
alert tcp any any -> any 80 (msg:"no fast pattern"; dsize:>1000; sid:9;)
"#;

fn have_device() -> bool {
    match vigil_opencl::devices() {
        Ok(d) if !d.is_empty() => true,
        r => {
            if vigil_opencl::required_by_env() {
                panic!("VIGIL_REQUIRE_OPENCL=1 but no OpenCL device: {r:?}");
            }
            eprintln!("note: skipping device test: no OpenCL device");
            false
        }
    }
}

fn detect(kind: EngineKind, split: bool) -> Arc<DetectEngine> {
    common::engine_with(RULES, kind, split)
}

fn capture() -> Vec<TimedFrame> {
    let words: [&[u8]; 8] = [
        b"LOGIN user",
        b"login lower",
        b"Secret stuff",
        b"secret lower",
        b"a NEEDLE in hay",
        b"ipwide",
        b"nothing",
        b"",
    ];
    let mut frames = Vec::new();
    for i in 0..120u16 {
        let c: SocketAddr = format!("10.1.{}.{}:{}", i / 200, 1 + i % 200, 30000 + i)
            .parse()
            .unwrap();
        let s: SocketAddr = "10.2.0.1:80".parse().unwrap();
        let mut t = TcpSession::new(c, s).start_at((1_700_000_000 + i64::from(i / 10), 0));
        t.handshake();
        let w = words[i as usize % words.len()];
        let mut data = w.to_vec();
        data.extend(std::iter::repeat_n(b'x', (i as usize * 37) % 300));
        t.client_send(&data);
        t.server_send(if i % 3 == 0 {
            b"WELCOME back"
        } else {
            b"go away"
        });
        if i % 7 == 0 {
            t.client_send(&vec![b'z'; 1200]);
        }
        t.client_send(words[(i as usize + 3) % words.len()]);
        t.close();
        frames.extend(t.into_frames());
    }
    let b = PacketBuilder::default();
    let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
    for i in 0..60u32 {
        let ts = (1_700_000_020 + i64::from(i / 20), i * 1000);
        frames.push((
            ts,
            b.udp(
                ip("10.3.0.1"),
                40000,
                ip("10.3.0.2"),
                53,
                b"\x07example\x03com",
            ),
        ));
        frames.push((
            ts,
            b.udp(
                ip("10.3.0.3"),
                5000,
                ip("10.3.0.4"),
                6000 + i as u16,
                b"from5000 ipwide",
            ),
        ));
        frames.push((
            ts,
            b.ipv4_icmp(
                "10.4.0.1".parse().unwrap(),
                "10.4.0.2".parse().unwrap(),
                8,
                0,
                1,
                i as u16,
                b"ping-data needle",
            ),
        ));
    }
    frames.sort_by_key(|f| f.0);
    frames
}

fn device(detect: &DetectEngine, lane: LaneConfig) -> DeviceSetup {
    let engines = detect
        .groups
        .groups
        .iter()
        .map(|g| g.engine.clone())
        .collect();
    DeviceSetup {
        matcher: DeviceMatcher::new(0, engines).unwrap(),
        lane,
        max_pending: 8,
    }
}

#[test]
fn device_pipeline_gives_the_cpu_alerts_in_order() {
    if !have_device() {
        return;
    }
    let path = write_pcap("device", capture());
    let lanes = [
        // Small: 4 buffers a batch, 3 queues, a 0.1 ms budget, an output
        // area of 8 matches (overflows re-run on the CPU).
        LaneConfig {
            queues: 3,
            fixed_buffers: Some(4),
            max_latency: Duration::from_micros(100),
            output_entries: 8,
            ..LaneConfig::default()
        },
        // Large and adaptive, with a CPU threshold in the traffic's range.
        LaneConfig {
            max_latency: Duration::from_millis(200),
            cpu_threshold: 40,
            ..LaneConfig::default()
        },
    ];
    for kind in [EngineKind::AcCompact, EngineKind::AcFull] {
        let d = detect(kind, false);
        let (want, _) = run_pcap(&path, d.clone(), &EngineConfig::default());
        // The CPU path with split rule groups finds the same alerts.
        let (split, _) = run_pcap(&path, detect(kind, true), &EngineConfig::default());
        assert_eq!(split, want, "{kind}: split groups");
        let sids: std::collections::BTreeSet<u32> = want.iter().map(|s| s.sid).collect();
        assert!(
            sids.len() >= 8 && !sids.contains(&1),
            "capture should fire rules 2..9: {sids:?}"
        );
        for lane in &lanes {
            for workers in [1, 2] {
                let cfg = EngineConfig {
                    workers,
                    batch_packets: 16,
                    device: Some(device(&d, lane.clone())),
                    ..EngineConfig::default()
                };
                let (got, stats): (Vec<Seen>, _) = run_pcap(&path, d.clone(), &cfg);
                assert_eq!(got, want, "{kind}, {workers} worker(s), {lane:?}");
                let dev = stats.device.expect("device stats");
                assert!(dev.device_buffers > 0 && dev.batches > 0, "{dev:?}");
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}
