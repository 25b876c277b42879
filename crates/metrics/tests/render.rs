//! render() of known snapshots: exact sample lines, # TYPE / # HELP lines, labels.

use std::collections::BTreeMap;

use vigil_metrics::{InterfaceFigures, Metrics, Snapshot, WorkerFigures};

/// The rendered text, split into its parts, every line accounted for.
#[derive(Debug, Default)]
struct Exposition {
    /// family -> type
    types: BTreeMap<String, String>,
    /// family -> help
    helps: BTreeMap<String, String>,
    /// family -> unit
    units: BTreeMap<String, String>,
    /// full sample line text before the value ("name{labels}") -> value text
    samples: BTreeMap<String, String>,
    /// sample names in order of appearance (for the family-grouping check)
    sample_order: Vec<String>,
    eof: bool,
}

fn parse(text: &str) -> Exposition {
    let mut e = Exposition::default();
    for line in text.lines() {
        assert!(!e.eof, "line after # EOF: {line:?}");
        if line == "# EOF" {
            e.eof = true;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').expect("# TYPE name type");
            assert!(
                e.types.insert(name.into(), ty.into()).is_none(),
                "two # TYPE lines for {name}"
            );
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("# HELP name text");
            assert!(!help.trim().is_empty(), "empty help for {name}");
            assert!(e.helps.insert(name.into(), help.into()).is_none());
        } else if let Some(rest) = line.strip_prefix("# UNIT ") {
            let (name, unit) = rest.split_once(' ').expect("# UNIT name unit");
            e.units.insert(name.into(), unit.into());
        } else {
            assert!(!line.starts_with('#'), "unexpected comment {line:?}");
            // Values never contain spaces; label values here contain none either.
            let (series, value) = line.rsplit_once(' ').expect("sample: series value");
            let name = series.split('{').next().unwrap();
            e.sample_order.push(name.to_string());
            assert!(
                e.samples.insert(series.into(), value.into()).is_none(),
                "duplicate series {series}"
            );
        }
    }
    assert!(e.eof, "no # EOF at the end");
    e
}

fn known_snapshot() -> Snapshot {
    Snapshot {
        workers: vec![
            WorkerFigures {
                packets: 1000,
                bytes: 640_000,
                decoder_invalid: 3,
                flows_created: 120,
                flows_active: 17,
                flows_timed_out: 100,
                flow_memcap_evictions: 2,
                stream_memcap_dropped_bytes: 4096,
                alerts: 5,
            },
            WorkerFigures {
                packets: 2000,
                bytes: 1_280_000,
                decoder_invalid: 0,
                flows_created: 240,
                flows_active: 33,
                flows_timed_out: 200,
                flow_memcap_evictions: 0,
                stream_memcap_dropped_bytes: 0,
                alerts: 7,
            },
        ],
        interfaces: vec![
            InterfaceFigures {
                name: "eth0".into(),
                kernel_packets: 2500,
                kernel_drops: 11,
                kernel_ifdrops: 1,
                truncated: 4,
            },
            InterfaceFigures {
                name: "eth1".into(),
                kernel_packets: 600,
                kernel_drops: 0,
                kernel_ifdrops: 0,
                truncated: 0,
            },
        ],
        alerts_by_action: vec![("allowed".into(), 9), ("blocked".into(), 3)],
        uptime_seconds: 3600.5,
        rules_loaded: 42_000,
        reloads: 3,
        reload_failures: 1,
    }
}

#[test]
fn known_snapshot_renders_exact_sample_lines() {
    let metrics = Metrics::default();
    metrics.publish(known_snapshot());
    let text = metrics.render();

    // Exact lines, as they appear in the text.
    let lines: Vec<&str> = text.lines().collect();
    for expected in [
        "vigil_packets_total{worker=\"0\"} 1000",
        "vigil_packets_total{worker=\"1\"} 2000",
        "vigil_bytes_total{worker=\"0\"} 640000",
        "vigil_bytes_total{worker=\"1\"} 1280000",
        "vigil_decoder_invalid_total{worker=\"0\"} 3",
        "vigil_flows_total{worker=\"1\"} 240",
        "vigil_flows_active{worker=\"0\"} 17",
        "vigil_flows_active{worker=\"1\"} 33",
        "vigil_flows_timed_out_total{worker=\"0\"} 100",
        "vigil_flow_memcap_evictions_total{worker=\"0\"} 2",
        "vigil_stream_memcap_dropped_bytes_total{worker=\"0\"} 4096",
        "vigil_worker_alerts_total{worker=\"1\"} 7",
        "vigil_kernel_packets_total{interface=\"eth0\"} 2500",
        "vigil_kernel_packets_total{interface=\"eth1\"} 600",
        "vigil_kernel_drops_total{interface=\"eth0\"} 11",
        "vigil_kernel_ifdrops_total{interface=\"eth0\"} 1",
        "vigil_truncated_frames_total{interface=\"eth0\"} 4",
        "vigil_alerts_total{action=\"allowed\"} 9",
        "vigil_alerts_total{action=\"blocked\"} 3",
        "vigil_uptime_seconds 3600.5",
        "vigil_rules_loaded 42000",
        "vigil_rule_reloads_total 3",
        "vigil_rule_reload_failures_total 1",
        "# TYPE vigil_packets counter",
        "# TYPE vigil_flows_active gauge",
        "# TYPE vigil_uptime_seconds gauge",
        "# TYPE vigil_rules_loaded gauge",
        "# TYPE vigil_rule_reload_failures counter",
        "# EOF",
    ] {
        assert!(
            lines.contains(&expected),
            "missing line {expected:?} in:\n{text}"
        );
    }
    assert_eq!(lines.last(), Some(&"# EOF"));

    let e = parse(&text);

    // Every family: its type, a help text, and every sample name belongs to it.
    let counters = [
        "vigil_packets",
        "vigil_bytes",
        "vigil_decoder_invalid",
        "vigil_flows",
        "vigil_flows_timed_out",
        "vigil_flow_memcap_evictions",
        "vigil_stream_memcap_dropped_bytes",
        "vigil_worker_alerts",
        "vigil_kernel_packets",
        "vigil_kernel_drops",
        "vigil_kernel_ifdrops",
        "vigil_truncated_frames",
        "vigil_alerts",
        "vigil_rule_reloads",
        "vigil_rule_reload_failures",
    ];
    let gauges = [
        "vigil_flows_active",
        "vigil_uptime_seconds",
        "vigil_rules_loaded",
    ];
    assert_eq!(
        e.types.len(),
        counters.len() + gauges.len(),
        "{:?}",
        e.types
    );
    for c in counters {
        assert_eq!(e.types.get(c).map(String::as_str), Some("counter"), "{c}");
        assert!(e.helps.contains_key(c), "no HELP for {c}");
    }
    for g in gauges {
        assert_eq!(e.types.get(g).map(String::as_str), Some("gauge"), "{g}");
        assert!(e.helps.contains_key(g), "no HELP for {g}");
    }
    assert_eq!(
        e.units.get("vigil_uptime_seconds").map(String::as_str),
        Some("seconds")
    );
    for name in &e.sample_order {
        let family = name.strip_suffix("_total").unwrap_or(name);
        let ty = &e.types[family];
        assert_eq!(
            name.ends_with("_total"),
            ty == "counter",
            "{name}: sample name does not match its {ty} family"
        );
    }

    // Per-worker families have exactly one sample per worker, labelled by index;
    // per-interface ones one per interface name.
    let worker_families = [
        "vigil_packets_total",
        "vigil_bytes_total",
        "vigil_decoder_invalid_total",
        "vigil_flows_total",
        "vigil_flows_active",
        "vigil_flows_timed_out_total",
        "vigil_flow_memcap_evictions_total",
        "vigil_stream_memcap_dropped_bytes_total",
        "vigil_worker_alerts_total",
    ];
    for f in worker_families {
        let series: Vec<_> = e
            .samples
            .keys()
            .filter(|k| k.split('{').next() == Some(f))
            .cloned()
            .collect();
        assert_eq!(
            series,
            vec![
                format!("{f}{{worker=\"0\"}}"),
                format!("{f}{{worker=\"1\"}}")
            ]
        );
    }
    for f in [
        "vigil_kernel_packets_total",
        "vigil_kernel_drops_total",
        "vigil_kernel_ifdrops_total",
        "vigil_truncated_frames_total",
    ] {
        let n = e
            .samples
            .keys()
            .filter(|k| k.split('{').next() == Some(f))
            .count();
        assert_eq!(n, 2, "{f}");
        assert!(e
            .samples
            .contains_key(&format!("{f}{{interface=\"eth1\"}}")));
    }
    // 9 worker families x 2 + 4 interface families x 2 + 2 actions + 4 scalars.
    assert_eq!(e.samples.len(), 18 + 8 + 2 + 4);
}

#[test]
fn publish_replaces_the_snapshot() {
    let metrics = Metrics::default();
    let mut s = known_snapshot();
    metrics.publish(s.clone());
    s.workers[0].packets = 1500;
    s.workers.truncate(1);
    s.uptime_seconds = 3601.5;
    // A clone of the handle publishes into the same state.
    metrics.clone().publish(s.clone());
    assert_eq!(metrics.snapshot(), s);
    let e = parse(&metrics.render());
    assert_eq!(e.samples["vigil_packets_total{worker=\"0\"}"], "1500");
    assert!(!e.samples.contains_key("vigil_packets_total{worker=\"1\"}"));
    assert_eq!(e.samples["vigil_uptime_seconds"], "3601.5");
}

#[test]
fn empty_snapshot_renders_families_and_scalars() {
    let e = parse(&Metrics::default().render());
    assert_eq!(e.types.len(), 18);
    assert_eq!(e.samples["vigil_uptime_seconds"], "0.0");
    assert_eq!(e.samples["vigil_rules_loaded"], "0");
    assert_eq!(e.samples["vigil_rule_reloads_total"], "0");
    assert_eq!(e.samples["vigil_rule_reload_failures_total"], "0");
    assert_eq!(e.samples.len(), 4);
}

#[test]
fn label_values_are_escaped() {
    let metrics = Metrics::default();
    metrics.publish(Snapshot {
        interfaces: vec![InterfaceFigures {
            name: "we\"ird\\if".into(),
            kernel_packets: 1,
            ..Default::default()
        }],
        alerts_by_action: vec![("a\nb".into(), 2)],
        ..Default::default()
    });
    let text = metrics.render();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&r#"vigil_kernel_packets_total{interface="we\"ird\\if"} 1"#),
        "{text}"
    );
    assert!(
        lines.contains(&r#"vigil_alerts_total{action="a\nb"} 2"#),
        "{text}"
    );
}
