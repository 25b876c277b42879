//! The worker's device path: pass 1 split in two around the device.
//!
//! [`Worker::device_submit`] decodes a batch, picks each packet's rule
//! groups and appends the payload of every (packet, group) the device runs
//! to the lane's filling device batch (one batch for all groups, each
//! buffer tagged with its group, MIDeA's Figure 2); the lane launches
//! device batches as they fill or time out. The packet batch then waits in
//! the worker's queue while later ones are decoded and submitted.
//! [`Worker::device_complete`] takes the oldest packet batch once its
//! device batches are back, builds the candidates exactly as pass 1 does
//! (device results for the groups the device ran, the CPU engine for the
//! others: buffers under the size threshold, groups whose engine has no
//! kernel) and runs pass 2 in packet order. Candidate sets do not depend on
//! which path found them, so alerts, flowbits and output are those of the
//! CPU run.
//!
//! Stream chunks (pass 2's raw stream inspection) stay on the CPU engines:
//! they are produced in pass 2 itself, in packet order, so sending them to
//! the device would stall the ordered pass on a round trip.

use std::sync::Arc;
use std::time::Instant;

use vigil_detect::GroupSel;
use vigil_opencl::{DeviceMatcher, Handle, Lane, LaneConfig};
use vigil_wire::{decode_at, Packet};

use super::{AlertOut, Worker};
use crate::batch::Batch;

/// What a run needs for the device path.
#[derive(Debug, Clone)]
pub struct DeviceSetup {
    pub matcher: Arc<DeviceMatcher>,
    /// Each worker's lane settings.
    pub lane: LaneConfig,
    /// Packet batches a worker holds waiting for the device at most
    /// before it forces their device batches out.
    pub max_pending: usize,
}

/// A packet batch submitted to the device and not yet completed.
#[derive(Debug)]
pub struct PendingBatch {
    pub batch: Batch,
    /// Device buffers per packet: (primary, secondary) group.
    handles: Vec<[Option<Handle>; 2]>,
    /// The last device batch holding one of its buffers.
    last_seq: Option<u64>,
}

impl PendingBatch {
    /// Are all its device results back?
    pub fn ready(&self, lane: &Lane) -> bool {
        self.last_seq.is_none_or(|s| lane.ready(s))
    }
}

impl Worker {
    /// Pass 1, first half: decode, select groups, hand the device its
    /// buffers.
    pub fn device_submit(
        &mut self,
        lane: &mut Lane,
        batch: Batch,
    ) -> Result<PendingBatch, vigil_opencl::Error> {
        let now = Instant::now();
        let detect = self.ctx.detect.clone();
        let mut handles = Vec::with_capacity(batch.records.len());
        let mut last_seq = None;
        for r in &batch.records {
            let p = decode_at(r.linktype, batch.data(r), r.tunnel);
            let mut h = [None, None];
            if let Some(sel) = detect.select_groups(&p) {
                let payload = p.payload();
                for (i, g) in [Some(sel.primary), sel.secondary].into_iter().enumerate() {
                    let Some(g) = g else { continue };
                    let has_engine = detect
                        .groups
                        .groups
                        .get(g as usize)
                        .is_some_and(|grp| grp.engine.is_some());
                    if has_engine
                        && !payload.is_empty()
                        && lane.wants(g as usize, payload.len(), now)
                    {
                        let handle = lane.push(g, payload, now)?;
                        last_seq = Some(handle.seq);
                        h[i] = Some(handle);
                    }
                }
            }
            handles.push(h);
        }
        Ok(PendingBatch {
            batch,
            handles,
            last_seq,
        })
    }

    /// Pass 1, second half, and pass 2: waits for the batch's device
    /// results, builds candidates, runs the ordered pass. Returns the
    /// packet batch (for the pool).
    pub fn device_complete(
        &mut self,
        lane: &mut Lane,
        pending: PendingBatch,
        alerts: &mut Vec<AlertOut>,
    ) -> Result<Batch, vigil_opencl::Error> {
        if let Some(seq) = pending.last_seq {
            lane.wait(seq)?;
        }
        let batch = pending.batch;
        let mut packets: Vec<Packet<'_>> = batch
            .records
            .iter()
            .map(|r| decode_at(r.linktype, batch.data(r), r.tunnel))
            .collect();
        self.candidates.clear();
        self.spans.clear();
        self.sels.clear();
        let ctx = &mut self.ctx;
        for (p, h) in packets.iter().zip(&pending.handles) {
            let start = self.candidates.len() as u32;
            let sel: Option<GroupSel> = ctx.detect.select_groups(p);
            if let Some(sel) = sel {
                let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
                ctx.detect.candidates_found(
                    sel,
                    p.payload(),
                    addrs,
                    &mut ctx.scratch,
                    &mut self.candidates,
                    // Groups the device did not get (or, defensively,
                    // whose results are not held) run on the CPU engine.
                    &mut |i, _g, sink| match h
                        .get(i)
                        .copied()
                        .flatten()
                        .and_then(|h| lane.matches(h))
                    {
                        Some(found) => {
                            for &(id, _) in found {
                                sink(id);
                            }
                            true
                        }
                        None => false,
                    },
                );
            }
            self.sels.push(sel);
            self.spans.push((start, self.candidates.len() as u32));
        }
        self.pass2(&batch, &mut packets, alerts);
        drop(packets);
        if let Some(seq) = pending.last_seq {
            // Later packet batches may still read batch `seq`.
            lane.release_before(seq);
        }
        Ok(batch)
    }
}
