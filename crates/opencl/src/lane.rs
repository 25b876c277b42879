//! A worker's lane to the device: a pool of slots (command queue, pinned
//! batch area, device buffers), the batch being filled, the batches in
//! flight (in launch order) and the results not yet consumed.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::event::Event;
use opencl3::event::CL_COMPLETE;
use opencl3::kernel::Kernel;
use opencl3::memory::{
    Buffer, ClMem, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE,
};
use opencl3::types::{cl_mem, cl_uint, CL_BLOCKING, CL_NON_BLOCKING};

use crate::policy::{Policy, PolicyConfig, Target};
use crate::{DeviceMatcher, DeviceStats, Error, Result};

/// Lane settings.
#[derive(Debug, Clone)]
pub struct LaneConfig {
    /// Slots (command queues) in the pool: batches in flight at most.
    pub queues: usize,
    /// Batch area of a slot, bytes (buffers larger than this go to the
    /// CPU).
    pub max_bytes: usize,
    /// Buffers per batch at most.
    pub max_buffers: usize,
    /// Output area, (buffer, slot, end) entries per batch.
    pub output_entries: usize,
    /// Buffers shorter than this are matched on the CPU.
    pub cpu_threshold: usize,
    /// Delay budget per buffer (`--max-latency-ms`).
    pub max_latency: Duration,
    /// Fixed batch size in buffers (no adaptation; time limit = budget).
    pub fixed_buffers: Option<usize>,
    /// Initial device model for the policy: ns per launch, ns per byte.
    pub launch_ns: f64,
    pub ns_per_byte: f64,
    /// Order a batch's work-items by (group, length) before launch
    /// (otherwise arrival order).
    pub sort_work_items: bool,
    /// Work-group size (0: the runtime chooses). Measured on PoCL with
    /// ET Open on dev-mix: any explicit size ran the kernel 3-4x faster
    /// than the runtime's choice; 64 is also a warp/wavefront multiple.
    pub local_size: usize,
}

impl Default for LaneConfig {
    fn default() -> Self {
        LaneConfig {
            queues: 4,
            max_bytes: 4 << 20,
            max_buffers: 16384,
            output_entries: 1 << 18,
            cpu_threshold: 0,
            max_latency: Duration::from_millis(100),
            fixed_buffers: None,
            launch_ns: 200_000.0,
            ns_per_byte: 1.0,
            sort_work_items: true,
            local_size: 64,
        }
    }
}

/// Where a buffer's results will be: batch sequence number and position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle {
    pub seq: u64,
    pub index: u32,
}

/// A host-pinned area (ALLOC_HOST_PTR), mapped once for the life of the
/// slot; batches are written into it and copied to the device buffer.
struct Pinned {
    buf: Buffer<u8>,
    ptr: *mut u8,
    len: usize,
}

struct Slot {
    queue: CommandQueue,
    kernel: Kernel,
    pinned: Pinned,
    input: Buffer<u8>,
    desc: Buffer<u32>,
    out: Buffer<u32>,
    count: Buffer<u32>,
    lost: Buffer<u32>,
    // Host side of the batch being filled / in flight.
    host_desc: Vec<u32>,
    kernel_desc: Vec<u32>,
    order: Vec<u32>,
    used: usize,
    seq: u64,
    first_at: Option<Instant>,
    host_count: Box<[u32; 1]>,
    host_lost: Vec<u32>,
    events: Vec<Event>,
    kernel_event: Option<Event>,
    target_bytes: usize,
    local_size: usize,
}

// SAFETY: the pinned pointer is only used by the lane that owns the slot.
unsafe impl Send for Slot {}

/// Results of one completed batch: (pattern id, end) per buffer.
#[derive(Debug, Default)]
struct Done {
    seq: u64,
    ranges: Vec<(u32, u32)>,
    matches: Vec<(u32, u32)>,
}

/// One worker's lane.
pub struct Lane {
    m: Arc<DeviceMatcher>,
    cfg: LaneConfig,
    slots: Vec<Slot>,
    free: Vec<usize>,
    filling: Option<usize>,
    inflight: VecDeque<usize>,
    done: VecDeque<Done>,
    next_seq: u64,
    policy: Policy,
    origin: Instant,
    pub stats: DeviceStats,
    scratch: Vec<(u32, u32, u32)>,
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane")
            .field("cfg", &self.cfg)
            .field("stats", &self.stats)
            .finish()
    }
}

fn ns(e: &Event) -> (u64, u64) {
    (
        e.profiling_command_start().unwrap_or(0),
        e.profiling_command_end().unwrap_or(0),
    )
}

impl Lane {
    pub fn new(m: Arc<DeviceMatcher>, cfg: LaneConfig) -> Result<Lane> {
        let mut slots = Vec::new();
        for _ in 0..cfg.queues.max(1) {
            slots.push(Self::slot(&m, &cfg)?);
        }
        let policy = Policy::new(PolicyConfig {
            budget_ns: cfg.max_latency.as_nanos() as u64,
            max_bytes: cfg.max_bytes as u64,
            // Smallest worthwhile batch: where the launch cost is no more
            // than the per-byte cost (the device at half its speed).
            min_bytes: (cfg.launch_ns / cfg.ns_per_byte.max(1e-3))
                .clamp(4096.0, (cfg.max_bytes / 2).max(4096) as f64) as u64,
            launch_ns: cfg.launch_ns,
            ns_per_byte: cfg.ns_per_byte,
        });
        let stats = DeviceStats {
            queues: slots.len() as u64,
            cpu_threshold: cfg.cpu_threshold as u64,
            ..DeviceStats::default()
        };
        Ok(Lane {
            free: (0..slots.len()).rev().collect(),
            slots,
            m,
            cfg,
            filling: None,
            inflight: VecDeque::new(),
            done: VecDeque::new(),
            next_seq: 0,
            policy,
            origin: Instant::now(),
            stats,
            scratch: Vec::new(),
        })
    }

    fn slot(m: &DeviceMatcher, cfg: &LaneConfig) -> Result<Slot> {
        let ctx = &m.context;
        // SAFETY: the device belongs to the context.
        let queue = unsafe { CommandQueue::create(ctx, m.device.id(), CL_QUEUE_PROFILING_ENABLE)? };
        let area = cfg.max_bytes.next_multiple_of(16).max(16);
        let nbuf = cfg.max_buffers.max(1);
        let null = std::ptr::null_mut::<c_void>();
        // SAFETY: plain allocations, no host pointer.
        let (pinned_buf, input, desc, out, count, lost) = unsafe {
            (
                Buffer::<u8>::create(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, area, null)?,
                Buffer::<u8>::create(ctx, CL_MEM_READ_ONLY, area, null)?,
                Buffer::<u32>::create(ctx, CL_MEM_READ_ONLY, 4 * nbuf, null)?,
                Buffer::<u32>::create(ctx, CL_MEM_READ_WRITE, 3 * cfg.output_entries.max(1), null)?,
                Buffer::<u32>::create(ctx, CL_MEM_READ_WRITE, 1, null)?,
                Buffer::<u32>::create(ctx, CL_MEM_READ_WRITE, nbuf, null)?,
            )
        };
        let mut ptr: cl_mem = std::ptr::null_mut();
        // SAFETY: blocking map of the whole pinned area; it stays mapped
        // until the slot is dropped.
        unsafe {
            queue.enqueue_map_buffer(
                &pinned_buf,
                CL_BLOCKING,
                CL_MAP_WRITE,
                0,
                area,
                &mut ptr,
                &[],
            )?;
        }
        let kernel = Kernel::create(&m.program, "match_batch")?;
        let local_size = match kernel.get_work_group_size(m.device.id()) {
            Ok(max) if max > 0 => cfg.local_size.min(max),
            _ => cfg.local_size,
        };
        let cap = cfg.output_entries.max(1) as cl_uint;
        // SAFETY: argument types match the kernel's signature.
        unsafe {
            kernel.set_arg(0, &input.get())?;
            kernel.set_arg(1, &desc.get())?;
            kernel.set_arg(3, &m.groups.get())?;
            kernel.set_arg(4, &m.full.get())?;
            kernel.set_arg(5, &m.rows.get())?;
            kernel.set_arg(6, &m.band.get())?;
            kernel.set_arg(7, &m.out_start.get())?;
            kernel.set_arg(8, &m.out_slots.get())?;
            kernel.set_arg(9, &out.get())?;
            kernel.set_arg(10, &count.get())?;
            kernel.set_arg(11, &cap)?;
            kernel.set_arg(12, &lost.get())?;
        }
        Ok(Slot {
            queue,
            kernel,
            pinned: Pinned {
                buf: pinned_buf,
                ptr: ptr as *mut u8,
                len: area,
            },
            input,
            desc,
            out,
            count,
            lost,
            host_desc: Vec::with_capacity(3 * nbuf),
            kernel_desc: Vec::with_capacity(4 * nbuf),
            order: Vec::with_capacity(nbuf),
            used: 0,
            seq: 0,
            first_at: None,
            host_count: Box::new([0]),
            host_lost: vec![0; nbuf],
            events: Vec::new(),
            kernel_event: None,
            target_bytes: area,
            local_size,
        })
    }

    pub fn config(&self) -> &LaneConfig {
        &self.cfg
    }

    pub fn matcher(&self) -> &Arc<DeviceMatcher> {
        &self.m
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    fn now_ns(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.origin).as_nanos() as u64
    }

    /// Should a buffer of `len` bytes of group `g` go to the device? Counts
    /// it as offered to the policy and, when not, as a CPU buffer.
    pub fn wants(&mut self, g: usize, len: usize, now: Instant) -> bool {
        let eligible = self.m.on_device(g) && len > 0;
        if eligible {
            let t = self.now_ns(now);
            self.policy.offered(len as u64, t);
        }
        let go = eligible
            && len >= self.cfg.cpu_threshold
            && len <= self.cfg.max_bytes
            && (self.cfg.fixed_buffers.is_some() || self.policy.target() != Target::Cpu);
        if !go {
            self.stats.cpu_buffers += 1;
            self.stats.cpu_bytes += len as u64;
        }
        go
    }

    /// Target bytes and time limit for the next batch.
    fn target(&self) -> (usize, Duration) {
        match self.cfg.fixed_buffers {
            Some(_) => (self.cfg.max_bytes, self.cfg.max_latency),
            None => match self.policy.target() {
                Target::Device {
                    bytes,
                    time_limit_ns,
                } => (
                    (bytes as usize).clamp(1, self.cfg.max_bytes),
                    Duration::from_nanos(time_limit_ns),
                ),
                Target::Cpu => (1, Duration::ZERO),
            },
        }
    }

    fn max_buffers(&self) -> usize {
        self.cfg
            .fixed_buffers
            .unwrap_or(self.cfg.max_buffers)
            .clamp(1, self.cfg.max_buffers.max(1))
    }

    /// Appends `hay` (group `g`) to the filling batch, launching batches
    /// as they fill. The caller checked [`Lane::wants`].
    pub fn push(&mut self, g: u32, hay: &[u8], now: Instant) -> Result<Handle> {
        let need = hay.len().next_multiple_of(16);
        if let Some(s) = self.filling {
            let sl = &self.slots[s];
            if sl.used + need > sl.pinned.len || sl.host_desc.len() / 3 >= self.max_buffers() {
                self.launch(false)?;
            }
        }
        let s = match self.filling {
            Some(s) => s,
            None => {
                let s = self.acquire()?;
                let (target, _) = self.target();
                let seq = self.next_seq;
                self.next_seq += 1;
                let sl = &mut self.slots[s];
                sl.seq = seq;
                sl.used = 0;
                sl.host_desc.clear();
                sl.first_at = Some(now);
                sl.target_bytes = target;
                self.filling = Some(s);
                s
            }
        };
        let sl = &mut self.slots[s];
        if sl.used + need > sl.pinned.len {
            return Err(Error("buffer larger than the batch area".into()));
        }
        // SAFETY: in bounds of the mapped area, which only this lane uses;
        // the slot is not in flight while filling.
        unsafe {
            std::ptr::copy_nonoverlapping(hay.as_ptr(), sl.pinned.ptr.add(sl.used), hay.len());
        }
        let index = (sl.host_desc.len() / 3) as u32;
        sl.host_desc
            .extend_from_slice(&[sl.used as u32, hay.len() as u32, g]);
        sl.used += need;
        self.stats.device_buffers += 1;
        self.stats.device_bytes += hay.len() as u64;
        let h = Handle { seq: sl.seq, index };
        if sl.used >= sl.target_bytes || sl.host_desc.len() / 3 >= self.max_buffers() {
            self.launch(false)?;
        }
        Ok(h)
    }

    /// When the filling batch must be launched (its time limit).
    pub fn deadline(&self) -> Option<Instant> {
        let s = self.filling?;
        let (_, limit) = self.target();
        self.slots[s].first_at.map(|t| t + limit)
    }

    /// Launches the filling batch if its time limit has passed.
    pub fn launch_if_due(&mut self, now: Instant) -> Result<bool> {
        match self.deadline() {
            Some(d) if now >= d => {
                self.launch(true)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Launches the filling batch, if any.
    pub fn flush(&mut self) -> Result<()> {
        if self.filling.is_some() {
            self.launch(false)?;
        }
        Ok(())
    }

    fn acquire(&mut self) -> Result<usize> {
        if let Some(s) = self.free.pop() {
            return Ok(s);
        }
        self.stats.pool_waits += 1;
        self.complete_front()?;
        self.free
            .pop()
            .ok_or_else(|| Error("no free slot after completing one".into()))
    }

    fn launch(&mut self, timed_out: bool) -> Result<()> {
        let Some(s) = self.filling.take() else {
            return Ok(());
        };
        let sl = &mut self.slots[s];
        let n = sl.host_desc.len() / 3;
        if n == 0 {
            self.free.push(s);
            return Ok(());
        }
        self.stats.batches += 1;
        self.stats.batches_timed_out += timed_out as u64;
        self.stats.fill_permille_sum += (sl.used as u64 * 1000) / sl.pinned.len.max(1) as u64;
        sl.host_count[0] = 0;
        sl.events.clear();
        // Work-items in (group, length) order: neighbours share tables and
        // run loops of similar length (measured: see the report in
        // docs/ARCHITECTURE.md); each carries its buffer's index.
        sl.order.clear();
        sl.order.extend(0..n as u32);
        let hd = &sl.host_desc;
        if self.cfg.sort_work_items {
            sl.order.sort_by_key(|&i| {
                let i = i as usize;
                (hd[3 * i + 2], std::cmp::Reverse(hd[3 * i + 1]))
            });
        }
        sl.kernel_desc.clear();
        for &i in &sl.order {
            let i = i as usize;
            sl.kernel_desc
                .extend_from_slice(&[hd[3 * i], hd[3 * i + 1], hd[3 * i + 2], i as u32]);
        }
        // SAFETY: host memory (pinned area, host vectors) stays untouched
        // until the slot completes; sizes are within the buffers.
        unsafe {
            let src = std::slice::from_raw_parts(sl.pinned.ptr, sl.used);
            sl.events.push(sl.queue.enqueue_write_buffer(
                &mut sl.input,
                CL_NON_BLOCKING,
                0,
                src,
                &[],
            )?);
            sl.events.push(sl.queue.enqueue_write_buffer(
                &mut sl.desc,
                CL_NON_BLOCKING,
                0,
                &sl.kernel_desc,
                &[],
            )?);
            sl.events.push(sl.queue.enqueue_write_buffer(
                &mut sl.count,
                CL_NON_BLOCKING,
                0,
                &sl.host_count[..],
                &[],
            )?);
            let nb = n as cl_uint;
            sl.kernel.set_arg(2, &nb)?;
            let l = sl.local_size;
            let global = [if l > 0 { n.next_multiple_of(l) } else { n }];
            let local = (l > 0).then_some([l]);
            sl.kernel_event = Some(sl.queue.enqueue_nd_range_kernel(
                sl.kernel.get(),
                1,
                std::ptr::null(),
                global.as_ptr(),
                local.as_ref().map_or(std::ptr::null(), |l| l.as_ptr()),
                &[],
            )?);
            sl.events.push(sl.queue.enqueue_read_buffer(
                &sl.count,
                CL_NON_BLOCKING,
                0,
                &mut sl.host_count[..],
                &[],
            )?);
            sl.events.push(sl.queue.enqueue_read_buffer(
                &sl.lost,
                CL_NON_BLOCKING,
                0,
                &mut sl.host_lost[..n],
                &[],
            )?);
        }
        sl.queue.flush()?;
        self.inflight.push_back(s);
        let k = self.inflight.len() as u64;
        self.stats.inflight_sum += k;
        self.stats.inflight_max = self.stats.inflight_max.max(k);
        Ok(())
    }

    /// Collects every in-flight batch the device has finished, without
    /// waiting.
    pub fn poll(&mut self) -> Result<()> {
        while let Some(&s) = self.inflight.front() {
            let finished = match self.slots[s].events.last() {
                Some(e) => e.command_execution_status()?.0 == CL_COMPLETE,
                None => true,
            };
            if !finished {
                break;
            }
            self.complete_front()?;
        }
        Ok(())
    }

    /// Are the results of batch `seq` available?
    pub fn ready(&self, seq: u64) -> bool {
        let pending = self
            .inflight
            .front()
            .map(|&s| self.slots[s].seq)
            .or(self.filling.map(|s| self.slots[s].seq));
        pending.is_none_or(|p| seq < p)
    }

    /// Waits until the results of batch `seq` are available, launching it
    /// if it is still filling.
    pub fn wait(&mut self, seq: u64) -> Result<()> {
        if self.filling.is_some_and(|s| self.slots[s].seq <= seq) {
            self.launch(false)?;
        }
        while self
            .inflight
            .front()
            .is_some_and(|&s| self.slots[s].seq <= seq)
        {
            self.complete_front()?;
        }
        Ok(())
    }

    /// The (pattern id, end) matches of a buffer whose batch is ready;
    /// `None` when its results are not (or no longer) held, so that a
    /// caller can never mistake missing results for "no match".
    pub fn matches(&self, h: Handle) -> Option<&[(u32, u32)]> {
        let d = self.done.iter().find(|d| d.seq == h.seq)?;
        let &(a, b) = d.ranges.get(h.index as usize)?;
        Some(&d.matches[a as usize..b as usize])
    }

    /// Drops the results of batches before `seq`.
    pub fn release_before(&mut self, seq: u64) {
        while self.done.front().is_some_and(|d| d.seq < seq) {
            self.done.pop_front();
        }
    }

    /// Batches launched and not yet collected.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    fn complete_front(&mut self) -> Result<()> {
        let Some(s) = self.inflight.pop_front() else {
            return Ok(());
        };
        for e in &self.slots[s].events {
            e.wait()?;
        }
        let sl = &mut self.slots[s];
        let n = sl.host_desc.len() / 3;
        let found = sl.host_count[0] as usize;
        let cap = self.cfg.output_entries.max(1);
        let kept = found.min(cap);
        let mut raw = vec![0u32; 3 * kept];
        if kept > 0 {
            // SAFETY: blocking read of `kept` entries into `raw`.
            let ev = unsafe {
                sl.queue
                    .enqueue_read_buffer(&sl.out, CL_BLOCKING, 0, &mut raw, &[])?
            };
            let (a, b) = ns(&ev);
            self.stats.transfer_ns += b.saturating_sub(a);
        }
        // Device time of the batch: its commands' own durations (not the
        // time spent queued behind other slots' batches).
        let mut busy = 0u64;
        for e in &sl.events {
            let (a, b) = ns(e);
            self.stats.transfer_ns += b.saturating_sub(a);
            busy += b.saturating_sub(a);
        }
        if let Some(k) = sl.kernel_event.take() {
            let (a, b) = ns(&k);
            self.stats.kernel_ns += b.saturating_sub(a);
            busy += b.saturating_sub(a);
        }
        if self.cfg.fixed_buffers.is_none() && busy > 0 {
            self.policy.observed(sl.used as u64, busy);
        }
        // Bucket the matches by buffer; sort each buffer's by (end, slot)
        // so the order does not depend on the device's scheduling.
        let scratch = &mut self.scratch;
        scratch.clear();
        for t in raw.chunks_exact(3) {
            scratch.push((t[0], t[2], t[1]));
        }
        scratch.sort_unstable();
        let overflow = found > cap;
        if overflow {
            self.stats.overflow_batches += 1;
        }
        let mut d = Done {
            seq: sl.seq,
            ranges: Vec::with_capacity(n),
            matches: Vec::with_capacity(kept),
        };
        // SAFETY: the pinned area holds this batch until the slot is
        // reused, which happens after this function.
        let area = unsafe { std::slice::from_raw_parts(sl.pinned.ptr, sl.used) };
        let mut at = 0usize;
        for i in 0..n {
            let (off, len, g) = (
                sl.host_desc[3 * i] as usize,
                sl.host_desc[3 * i + 1] as usize,
                sl.host_desc[3 * i + 2] as usize,
            );
            let hay = &area[off..off + len];
            let start = d.matches.len() as u32;
            let from = at;
            while at < scratch.len() && scratch[at].0 as usize == i {
                at += 1;
            }
            let Some(engine) = self.m.engine(g) else {
                d.ranges.push((start, start));
                continue;
            };
            if overflow && sl.host_lost[i] != 0 {
                // Some of this buffer's matches did not fit: re-run it.
                self.stats.overflow_reruns += 1;
                engine.scan_batch(&[hay], &mut |m| d.matches.push((m.pattern, m.end)));
            } else {
                for &(_, end, slot) in &scratch[from..at] {
                    engine
                        .report_slot(hay, slot, end as usize, &mut |id| d.matches.push((id, end)));
                }
            }
            d.ranges.push((start, d.matches.len() as u32));
        }
        self.done.push_back(d);
        self.free.push(s);
        Ok(())
    }

    /// Measures the opportunistic threshold: for each buffer size, the
    /// time per buffer on the CPU engine and through the device (a full
    /// batch of such buffers, transfers and host post-processing
    /// included); the threshold is the smallest size from which the
    /// device is not slower, or `usize::MAX` when it never is.
    pub fn calibrate(&mut self, sample: &[u8]) -> Result<Calibration> {
        let g = (0..self.m.engines.len())
            .filter(|&g| self.m.on_device(g))
            .max_by_key(|&g| self.m.engine(g).map_or(0, |e| e.pattern_count()))
            .ok_or_else(|| Error("no rule group runs on the device".into()))?;
        let m = self.m.clone();
        let engine = m.engine(g).expect("device group has an engine");
        let saved = (self.cfg.cpu_threshold, self.cfg.fixed_buffers);
        let mut rows = Vec::new();
        let mut threshold = usize::MAX;
        let budget = self.cfg.max_bytes.min(1 << 20);
        for size in [16usize, 32, 64, 128, 256, 512, 1024, 1460] {
            let count = (budget / size.next_multiple_of(16)).clamp(16, self.cfg.max_buffers);
            let bufs: Vec<&[u8]> = (0..count)
                .map(|i| {
                    let at = (i * 977) % sample.len().saturating_sub(size).max(1);
                    &sample[at..(at + size).min(sample.len())]
                })
                .collect();
            let mut sink = 0u64;
            let reps = 3;
            let t = Instant::now();
            for _ in 0..reps {
                for b in &bufs {
                    engine.scan_ids(b, &mut |id| sink = sink.wrapping_add(id as u64));
                }
            }
            let cpu = t.elapsed().as_nanos() as f64 / (reps * count) as f64;
            self.cfg.fixed_buffers = Some(count);
            let mut dev = f64::MAX;
            for _ in 0..reps {
                let t = Instant::now();
                let mut last = None;
                for b in &bufs {
                    last = Some(self.push(g as u32, b, t)?);
                }
                self.flush()?;
                if let Some(h) = last {
                    self.wait(h.seq)?;
                    for i in 0..count as u32 {
                        let m = self.matches(Handle { index: i, ..h });
                        sink = sink.wrapping_add(m.map_or(0, |m| m.len()) as u64);
                    }
                    self.release_before(h.seq + 1);
                }
                dev = dev.min(t.elapsed().as_nanos() as f64 / count as f64);
            }
            std::hint::black_box(sink);
            if dev <= cpu && threshold == usize::MAX {
                threshold = size;
            }
            if dev > cpu {
                threshold = usize::MAX;
            }
            rows.push((size, cpu, dev));
        }
        // Device model for the policy: a one-buffer batch's round trip is
        // the fixed cost; the largest size gives the cost per byte.
        let mut launch = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let h = self.push(g as u32, &sample[..sample.len().min(16)], t)?;
            self.flush()?;
            self.wait(h.seq)?;
            self.release_before(h.seq + 1);
            launch = launch.min(t.elapsed().as_nanos() as f64);
        }
        let &(size, _, dev) = rows.last().expect("rows measured");
        let count = (budget / size.next_multiple_of(16)).clamp(16, self.cfg.max_buffers) as f64;
        let ns_per_byte = (dev * count - launch).max(0.0) / (count * size as f64);
        self.cfg.cpu_threshold = saved.0;
        self.cfg.fixed_buffers = saved.1;
        self.stats = DeviceStats {
            queues: self.slots.len() as u64,
            cpu_threshold: self.cfg.cpu_threshold as u64,
            ..DeviceStats::default()
        };
        Ok(Calibration {
            threshold,
            rows,
            group: g,
            launch_ns: launch,
            ns_per_byte,
        })
    }

    /// Sets the CPU threshold (after calibration or from the command line).
    pub fn set_cpu_threshold(&mut self, t: usize) {
        self.cfg.cpu_threshold = t;
        self.stats.cpu_threshold = t as u64;
    }
}

/// What start-up calibration measured.
#[derive(Debug, Clone)]
pub struct Calibration {
    /// Buffers shorter than this go to the CPU (`usize::MAX`: all do).
    pub threshold: usize,
    /// (buffer size, CPU ns per buffer, device ns per buffer).
    pub rows: Vec<(usize, f64, f64)>,
    /// The group measured (the one with most patterns on the device).
    pub group: usize,
    /// Device model: round trip of a one-buffer batch, and ns per byte
    /// of a full batch.
    pub launch_ns: f64,
    pub ns_per_byte: f64,
}

impl Drop for Lane {
    fn drop(&mut self) {
        for sl in &mut self.slots {
            let _ = sl.queue.finish();
            // SAFETY: unmapping the area mapped in `slot`.
            unsafe {
                let _ = sl.queue.enqueue_unmap_mem_object(
                    sl.pinned.buf.get(),
                    sl.pinned.ptr as *mut c_void,
                    &[],
                );
            }
            let _ = sl.queue.finish();
        }
    }
}
