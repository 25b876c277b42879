//! `vigil run --prefilter-device`: opening the OpenCL device, measuring
//! the opportunistic CPU threshold at start-up, and the lane settings.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use vigil_detect::DetectEngine;
use vigil_engine::{DeviceSetup, LaneConfig};
use vigil_opencl::{DeviceMatcher, Lane};

use crate::cli::DeviceArgs;

/// Does this run use the device? `opencl` without a device is an error;
/// `auto` falls back to the CPU.
pub fn wanted(a: &DeviceArgs) -> Result<bool> {
    match a.prefilter_device.as_str() {
        "cpu" => Ok(false),
        "opencl" => match vigil_opencl::devices() {
            Ok(d) if d.len() > a.opencl_device => Ok(true),
            Ok(d) => bail!(
                "--prefilter-device opencl: OpenCL device {} not found ({} device(s))",
                a.opencl_device,
                d.len()
            ),
            Err(e) => bail!("--prefilter-device opencl: {e}"),
        },
        "auto" => Ok(vigil_opencl::available(a.opencl_device)),
        other => bail!("unknown --prefilter-device {other:?}: expected cpu, opencl or auto"),
    }
}

/// The `--prefilter` engine to build with the device on: the device runs
/// AC-Full and AC-Compact, so other fixed choices become AC-Compact
/// (MIDeA's choice for device memory); `auto` keeps its per-group choice
/// and the groups it gives other engines stay on the CPU.
pub fn engine_name(prefilter: &str, device: bool) -> &str {
    match prefilter {
        _ if !device => prefilter,
        "ac-full" | "ac-compact" | "auto" => prefilter,
        _ => "ac-compact",
    }
}

/// `(key, value)` lines for stats.log.
pub type StatsLines = Vec<(&'static str, String)>;

/// Opens the device, uploads the groups' automata and measures the CPU
/// threshold. Returns the setup (`None` with `auto` when the device is
/// slower than the CPU at every buffer size) and lines for stats.log.
pub fn setup(
    a: &DeviceArgs,
    detect: &DetectEngine,
    pcap: &Path,
) -> Result<(Option<DeviceSetup>, StatsLines)> {
    if a.max_latency_ms.is_nan() || a.max_latency_ms <= 0.0 {
        bail!("--max-latency-ms must be positive");
    }
    let engines = detect
        .groups
        .groups
        .iter()
        .map(|g| g.engine.clone())
        .collect();
    let matcher = DeviceMatcher::new(a.opencl_device, engines)
        .map_err(|e| anyhow::anyhow!("OpenCL device {}: {e}", a.opencl_device))?;
    let mut lane = LaneConfig {
        queues: a.queues.max(1),
        max_bytes: a.batch_bytes.max(2048),
        max_buffers: 16384,
        output_entries: a.output_entries.max(1),
        cpu_threshold: 0,
        max_latency: Duration::from_secs_f64(a.max_latency_ms / 1000.0),
        fixed_buffers: a.batch_buffers.map(|n| n.max(1)),
        local_size: a.local_size,
        ..LaneConfig::default()
    };
    if let Some(n) = lane.fixed_buffers {
        lane.max_buffers = lane.max_buffers.max(n);
    }
    let mut lines = vec![(
        "vigil.prefilter.device",
        format!("{} / {}", matcher.info.platform, matcher.info.name),
    )];
    let measured = if matcher.device_groups() > 0 {
        let sample: Vec<u8> = vigil_bench::payloads::from_pcap(pcap, 256 << 10)
            .unwrap_or_default()
            .concat();
        let sample = if sample.len() < 4096 {
            vigil_bench::payloads::demo().concat().repeat(8)
        } else {
            sample
        };
        let mut probe =
            Lane::new(matcher.clone(), lane.clone()).map_err(|e| anyhow::anyhow!("OpenCL: {e}"))?;
        let c = probe
            .calibrate(&sample)
            .map_err(|e| anyhow::anyhow!("OpenCL calibration: {e}"))?;
        lane.launch_ns = c.launch_ns;
        lane.ns_per_byte = c.ns_per_byte.max(0.01);
        lines.push((
            "vigil.prefilter.device_calibration",
            c.rows
                .iter()
                .map(|(s, cpu, dev)| format!("{s}B:cpu={cpu:.0}ns,device={dev:.0}ns"))
                .collect::<Vec<_>>()
                .join(" "),
        ));
        Some(c.threshold)
    } else {
        None
    };
    lane.cpu_threshold = a.cpu_threshold.or(measured).unwrap_or(usize::MAX);
    let shown = |t: usize| {
        if t == usize::MAX {
            "none (device slower at every size)".to_string()
        } else {
            format!("{t} bytes")
        }
    };
    eprintln!(
        "vigil: prefilter device {} / {}: {} of {} rule groups on the device ({} KiB of tables); \
         CPU threshold {}{}",
        matcher.info.platform,
        matcher.info.name,
        matcher.device_groups(),
        detect.groups.groups.len(),
        matcher.table_bytes >> 10,
        shown(lane.cpu_threshold),
        match (a.cpu_threshold, measured) {
            (Some(_), Some(m)) => format!(" (set; measured {})", shown(m)),
            (Some(_), None) => " (set)".to_string(),
            (None, _) => " (measured)".to_string(),
        }
    );
    lines.push((
        "vigil.prefilter.device_threshold_measured",
        measured.map_or("-".into(), shown),
    ));
    lines.push((
        "vigil.prefilter.device_threshold",
        shown(lane.cpu_threshold),
    ));
    if a.prefilter_device == "auto" && lane.cpu_threshold == usize::MAX {
        // The device never beats the CPU here: auto means the CPU.
        eprintln!(
            "vigil: --prefilter-device auto: the device is slower than the CPU; using the CPU"
        );
        lines.push(("vigil.prefilter.device_used", "no (auto: slower)".into()));
        return Ok((None, lines));
    }
    Ok((
        Some(DeviceSetup {
            matcher: Arc::clone(&matcher),
            lane,
            max_pending: 256,
        }),
        lines,
    ))
}
