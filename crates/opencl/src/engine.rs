//! The device behind the prefilter trait: one pattern set, one lane.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use vigil_prefilter::{BuildError, EngineKind, Pattern, PrefilterEngine, PrefilterMatch};

use crate::{DeviceMatcher, Handle, Lane, LaneConfig, Result};

/// A prefilter engine that matches on an OpenCL device: AC-Full or
/// AC-Compact tables built on the host, the automaton run by the kernel,
/// case-sensitive confirmation on the host. Buffers too large for the
/// batch area are matched by the CPU engine.
#[derive(Debug)]
pub struct OpenClEngine {
    cpu: Arc<dyn PrefilterEngine>,
    lane: Mutex<Lane>,
    name: &'static str,
}

impl OpenClEngine {
    /// Builds `kind` (ac-full or ac-compact) over `patterns` and uploads
    /// it to device `device`.
    pub fn new(
        kind: EngineKind,
        patterns: &[Pattern],
        device: usize,
        cfg: LaneConfig,
    ) -> Result<OpenClEngine> {
        let name = match kind {
            EngineKind::AcFull => "opencl-ac-full",
            EngineKind::AcCompact => "opencl-ac-compact",
            k => return Err(crate::Error(format!("{k} has no device kernel"))),
        };
        let cpu: Arc<dyn PrefilterEngine> = Arc::from(
            kind.build(patterns)
                .map_err(|BuildError(e)| crate::Error(e))?,
        );
        let m = DeviceMatcher::new(device, vec![Some(cpu.clone())])?;
        Ok(OpenClEngine {
            cpu,
            lane: Mutex::new(Lane::new(m, cfg)?),
            name,
        })
    }

    /// The lane, for statistics and tuning.
    pub fn lane(&self) -> std::sync::MutexGuard<'_, Lane> {
        self.lane.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn run(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) -> Result<()> {
        let mut lane = self.lane();
        let on = lane.matcher().on_device(0);
        let max = lane.config().max_bytes;
        let now = Instant::now();
        let mut handles: Vec<Option<Handle>> = Vec::with_capacity(batch.len());
        for hay in batch {
            handles.push(if on && !hay.is_empty() && hay.len() <= max {
                Some(lane.push(0, hay, now)?)
            } else {
                None
            });
        }
        lane.flush()?;
        if let Some(last) = handles.iter().flatten().map(|h| h.seq).max() {
            lane.wait(last)?;
        }
        for (bi, (hay, h)) in batch.iter().zip(&handles).enumerate() {
            let buffer = bi as u32;
            match h.and_then(|h| lane.matches(h)) {
                Some(found) => {
                    for &(pattern, end) in found {
                        sink(PrefilterMatch {
                            buffer,
                            pattern,
                            end,
                        });
                    }
                }
                None => self.cpu.scan_batch(&[hay], &mut |m| {
                    sink(PrefilterMatch { buffer, ..m });
                }),
            }
        }
        let next = handles.iter().flatten().map(|h| h.seq + 1).max();
        if let Some(n) = next {
            lane.release_before(n);
        }
        Ok(())
    }
}

impl PrefilterEngine for OpenClEngine {
    fn name(&self) -> &'static str {
        self.name
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        if let Err(e) = self.run(batch, sink) {
            // A device failure must not lose matches: redo on the CPU.
            eprintln!("vigil-opencl: device error ({e}); matching on the CPU");
            self.cpu.scan_batch(batch, sink);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.cpu.heap_bytes()
    }

    fn pattern_count(&self) -> usize {
        self.cpu.pattern_count()
    }
}
