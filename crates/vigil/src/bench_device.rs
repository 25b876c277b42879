//! `vigil bench prefilter --device opencl`: the device's throughput
//! against batch size, with transfers (end to end through a worker's lane:
//! pinned batch area, queue pool, host post-processing) and without (the
//! kernel's own time), next to every CPU engine on the same payloads in
//! the same run.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use vigil_opencl::{DeviceMatcher, Lane, LaneConfig};
use vigil_prefilter::{EngineKind, Pattern, PrefilterEngine};

/// One measured configuration.
struct Row {
    engine: String,
    batch: usize,
    /// Gbit/s end to end (transfers, kernel, host work), kernel only.
    e2e: f64,
    kernel: f64,
    transfer_ms: f64,
}

fn gbps(bytes: usize, ns: f64) -> f64 {
    bytes as f64 * 8.0 / ns.max(1.0)
}

fn cpu_gbps(e: &dyn PrefilterEngine, bufs: &[&[u8]], bytes: usize) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let mut sink = 0u64;
        for b in bufs {
            e.scan_ids(b, &mut |id| sink = sink.wrapping_add(id as u64));
        }
        std::hint::black_box(sink);
        best = best.min(t.elapsed().as_nanos() as f64);
    }
    gbps(bytes, best)
}

/// Streams every buffer through a lane with fixed batches of `batch`
/// buffers; returns (wall ns, kernel ns, transfer ns), best of `reps`.
fn device_run(
    m: &Arc<DeviceMatcher>,
    bufs: &[&[u8]],
    batch: usize,
    sort: bool,
    reps: usize,
    queues: usize,
    local_size: usize,
) -> Result<(f64, f64, f64)> {
    let cfg = LaneConfig {
        queues,
        local_size,
        max_bytes: (batch * 1536).clamp(64 << 10, 32 << 20),
        max_buffers: batch,
        fixed_buffers: Some(batch),
        output_entries: (batch * 64).max(1 << 16),
        max_latency: Duration::from_secs(10),
        sort_work_items: sort,
        ..LaneConfig::default()
    };
    let mut lane = Lane::new(m.clone(), cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut best = (f64::MAX, 0.0, 0.0);
    for _ in 0..reps {
        lane.stats = Default::default();
        let t = Instant::now();
        let mut last = None;
        let mut found = 0usize;
        for b in bufs {
            let h = lane.push(0, b, t).map_err(|e| anyhow::anyhow!("{e}"))?;
            if last.is_some_and(|l: vigil_opencl::Handle| l.seq != h.seq) {
                // Consume what has come back, as a worker does.
                lane.poll().map_err(|e| anyhow::anyhow!("{e}"))?;
                lane.release_before(h.seq.saturating_sub(4));
            }
            last = Some(h);
        }
        lane.flush().map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some(h) = last {
            lane.wait(h.seq).map_err(|e| anyhow::anyhow!("{e}"))?;
            found += lane.matches(h).map_or(0, |m| m.len());
            lane.release_before(h.seq + 1);
        }
        std::hint::black_box(found);
        let wall = t.elapsed().as_nanos() as f64;
        if wall < best.0 {
            best = (
                wall,
                lane.stats.kernel_ns as f64,
                lane.stats.transfer_ns as f64,
            );
        }
    }
    Ok(best)
}

/// Runs the device benchmark over `patterns` (one rule group's set) and
/// `payloads`; writes `device.csv` and `device.md` to `out`.
pub fn run(
    out: &std::path::Path,
    device: usize,
    patterns: &[Pattern],
    set_name: &str,
    payloads: &[Vec<u8>],
    quick: bool,
) -> Result<()> {
    let bufs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
    let bytes: usize = bufs.iter().map(|b| b.len()).sum();
    let info = vigil_opencl::devices()
        .map_err(|e| anyhow::anyhow!("--device opencl: {e}"))?
        .into_iter()
        .nth(device)
        .ok_or_else(|| anyhow::anyhow!("OpenCL device {device} not found"))?;
    eprintln!(
        "vigil bench: device {} / {} ({} compute units); {} patterns ({set_name}); {} payloads, {} bytes",
        info.platform,
        info.name,
        info.compute_units,
        patterns.len(),
        bufs.len(),
        bytes
    );
    // CPU engines, same payloads, same run.
    let mut cpu = Vec::new();
    for k in EngineKind::available_kinds() {
        if k == EngineKind::Bmh && patterns.len() > 1 {
            continue;
        }
        let Ok(e) = k.build(patterns) else { continue };
        let g = cpu_gbps(e.as_ref(), &bufs, bytes);
        eprintln!("vigil bench: cpu {k}: {g:.3} Gbit/s");
        cpu.push((k, g));
    }
    let (best_kind, best_cpu) = cpu
        .iter()
        .copied()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .context("no CPU engine")?;
    let sizes: &[usize] = if quick {
        &[64, 1024, 8192]
    } else {
        &[16, 64, 256, 1024, 4096, 16384]
    };
    let reps = if quick { 1 } else { 2 };
    let mut rows = Vec::new();
    let mut mapping = Vec::new();
    for kind in [EngineKind::AcCompact, EngineKind::AcFull] {
        let e: Arc<dyn PrefilterEngine> = match kind.build(patterns) {
            Ok(e) => Arc::from(e),
            Err(e) => {
                eprintln!("vigil bench: {kind}: {e}");
                continue;
            }
        };
        let m = DeviceMatcher::new(device, vec![Some(e)]).map_err(|e| anyhow::anyhow!("{e}"))?;
        for &batch in sizes {
            // End to end with the queue pool (4 batches in flight); the
            // kernel's own time from a one-queue run, where kernels do
            // not overlap (summed kernel times of overlapping batches
            // would understate the device's speed).
            let (wall, _, transfer) = device_run(&m, &bufs, batch, true, reps, 4, 64)?;
            let (_, kernel, _) = device_run(&m, &bufs, batch, true, reps, 1, 64)?;
            let r = Row {
                engine: format!("opencl-{kind}"),
                batch,
                e2e: gbps(bytes, wall),
                kernel: gbps(bytes, kernel),
                transfer_ms: transfer / 1e6,
            };
            eprintln!(
                "vigil bench: {} batch {batch}: {:.3} Gbit/s with transfers, {:.3} kernel only, transfers {:.1} ms",
                r.engine, r.e2e, r.kernel, r.transfer_ms
            );
            rows.push(r);
        }
        // Work-item mapping: arrival order vs (group, length) order.
        let batch = 4096.min(bufs.len().max(1));
        let (_, k_arrival, _) = device_run(&m, &bufs, batch, false, reps, 1, 64)?;
        let (_, k_sorted, _) = device_run(&m, &bufs, batch, true, reps, 1, 64)?;
        let (_, k_runtime, _) = device_run(&m, &bufs, batch, true, reps, 1, 0)?;
        mapping.push((
            kind,
            batch,
            gbps(bytes, k_arrival),
            gbps(bytes, k_sorted),
            gbps(bytes, k_runtime),
        ));
    }
    let mut md = String::new();
    md.push_str(&format!(
        "# vigil bench prefilter --device opencl\n\ndevice: {} / {} ({} compute units)\n\
         patterns: {} ({set_name})\npayloads: {} buffers, {} bytes\n\n\
         ## CPU engines (same payloads, same run)\n\n| engine | Gbit/s |\n|---|---|\n",
        info.platform,
        info.name,
        info.compute_units,
        patterns.len(),
        bufs.len(),
        bytes
    ));
    for (k, g) in &cpu {
        md.push_str(&format!("| {k} | {g:.3} |\n"));
    }
    md.push_str(&format!(
        "\nbest CPU engine: {best_kind} at {best_cpu:.3} Gbit/s (one thread)\n\n\
         ## Device vs batch size\n\n\
         | engine | batch (buffers) | Gbit/s with transfers | Gbit/s kernel only | transfers (ms) | vs best CPU (with transfers) |\n\
         |---|---|---|---|---|---|\n"
    ));
    let mut csv = String::from(
        "engine,batch_buffers,gbps_with_transfers,gbps_kernel,transfer_ms,ratio_vs_best_cpu\n",
    );
    for r in &rows {
        md.push_str(&format!(
            "| {} | {} | {:.3} | {:.3} | {:.1} | {:.2} |\n",
            r.engine,
            r.batch,
            r.e2e,
            r.kernel,
            r.transfer_ms,
            r.e2e / best_cpu
        ));
        csv.push_str(&format!(
            "{},{},{:.4},{:.4},{:.3},{:.4}\n",
            r.engine,
            r.batch,
            r.e2e,
            r.kernel,
            r.transfer_ms,
            r.e2e / best_cpu
        ));
    }
    for (k, g) in &cpu {
        csv.push_str(&format!("cpu-{k},,{g:.4},{g:.4},0,{:.4}\n", g / best_cpu));
    }
    md.push_str(
        "\n## Work-item mapping (one buffer per work-item; kernel Gbit/s)\n\n\
         | engine | batch | arrival order, work-groups of 64 | sorted by (group, length), 64 | sorted, work-group size chosen by the runtime |\n|---|---|---|---|---|\n",
    );
    for (k, b, a, s, r) in &mapping {
        md.push_str(&format!(
            "| opencl-{k} | {b} | {a:.3} | {s:.3} | {r:.3} |\n"
        ));
    }
    std::fs::write(out.join("device.csv"), csv).context("writing device.csv")?;
    std::fs::write(out.join("device.md"), &md).context("writing device.md")?;
    std::io::stdout().lock().write_all(md.as_bytes())?;
    Ok(())
}
