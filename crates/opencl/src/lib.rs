//! The OpenCL device path of the prefilter (MIDeA's GPU matching, with
//! Araujo et al.'s buffer time limits, stream pool and the adaptive batch
//! size their Table 3 implies).
//!
//! - [`DeviceMatcher`]: one per run. Opens the device, builds the kernel
//!   and uploads the automata of every rule group whose engine is AC-Full
//!   or AC-Compact, concatenated into a few arrays (see `match.cl`).
//! - [`Lane`]: one per worker. A pool of slots, each with its own command
//!   queue, host-pinned batch area and device buffers. Buffers of any
//!   group are appended to the filling slot, tagged with their group; the
//!   slot is launched when full (the [`policy`]'s target) or when its time
//!   limit expires; several slots are in flight while the worker goes on;
//!   results come back in launch order.
//! - [`OpenClEngine`]: the device behind the [`PrefilterEngine`] trait, for
//!   one pattern set (tests, benchmarks).
//!
//! OpenCL is loaded at run time (`opencl3`'s `dynamic` feature): a build
//! needs no OpenCL library, and a machine without one simply reports no
//! platform.

mod engine;
mod lane;
pub mod policy;
mod tables;

use std::sync::Arc;

use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::memory::{Buffer, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY};
use opencl3::program::Program;
use vigil_prefilter::PrefilterEngine;

pub use engine::OpenClEngine;
pub use lane::{Calibration, Handle, Lane, LaneConfig};
pub use policy::{Policy, PolicyConfig, Target};

/// The kernel source.
pub const KERNEL_SOURCE: &str = include_str!("match.cl");

/// A device-path error (no platform, build failure, OpenCL error code).
#[derive(Debug, Clone)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Error {}

impl From<opencl3::error_codes::ClError> for Error {
    fn from(e: opencl3::error_codes::ClError) -> Self {
        Error(format!("OpenCL error {e}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// One OpenCL device, as listed by [`devices`].
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub index: usize,
    pub platform: String,
    pub name: String,
    pub compute_units: u32,
}

/// Platform discovery is serialised: PoCL initialises its devices on the
/// first call and crashes when two threads race through it.
static DISCOVERY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn list() -> Result<Vec<(DeviceInfo, Device)>> {
    let _guard = DISCOVERY.lock().unwrap_or_else(|e| e.into_inner());
    let platforms = opencl3::platform::get_platforms()
        .map_err(|e| Error(format!("no OpenCL runtime or platform ({e})")))?;
    let mut out = Vec::new();
    for p in platforms {
        let pname = p.name().unwrap_or_default();
        for id in p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default() {
            let d = Device::new(id);
            out.push((
                DeviceInfo {
                    index: out.len(),
                    platform: pname.clone(),
                    name: d.name().unwrap_or_default(),
                    compute_units: d.max_compute_units().unwrap_or(1),
                },
                d,
            ));
        }
    }
    Ok(out)
}

/// The OpenCL devices of every platform, numbered as `--opencl-device`
/// takes them. An error when no OpenCL library or platform is found.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    Ok(list()?.into_iter().map(|(i, _)| i).collect())
}

/// True when device `index` exists.
pub fn available(index: usize) -> bool {
    devices().is_ok_and(|d| d.len() > index)
}

/// Device tables of all rule groups, uploaded once and shared by the
/// workers' lanes.
#[derive(Debug)]
pub struct DeviceMatcher {
    pub info: DeviceInfo,
    pub(crate) context: Context,
    pub(crate) program: Program,
    pub(crate) device: Device,
    pub(crate) groups: Buffer<u32>,
    pub(crate) full: Buffer<u32>,
    pub(crate) rows: Buffer<u32>,
    pub(crate) band: Buffer<u32>,
    pub(crate) out_start: Buffer<u32>,
    pub(crate) out_slots: Buffer<u32>,
    /// Per rule group: its engine, and whether the device runs it.
    pub(crate) engines: Vec<Option<Arc<dyn PrefilterEngine>>>,
    pub(crate) on_device: Vec<bool>,
    /// Bytes of automaton tables uploaded.
    pub table_bytes: usize,
}

fn upload(ctx: &Context, data: &[u32]) -> Result<Buffer<u32>> {
    // Zero-sized buffers are invalid: keep one element.
    let mut one = [0u32];
    let (ptr, n) = if data.is_empty() {
        (one.as_mut_ptr(), 1)
    } else {
        (data.as_ptr() as *mut u32, data.len())
    };
    // SAFETY: COPY_HOST_PTR copies `n` elements from `ptr` during the call.
    Ok(unsafe {
        Buffer::<u32>::create(
            ctx,
            CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
            n,
            ptr as *mut std::ffi::c_void,
        )?
    })
}

impl DeviceMatcher {
    /// Opens device `index` and uploads the automata of the groups whose
    /// engine offers device tables (AC-Full, AC-Compact); the other
    /// groups stay on their CPU engine.
    pub fn new(
        index: usize,
        engines: Vec<Option<Arc<dyn PrefilterEngine>>>,
    ) -> Result<Arc<DeviceMatcher>> {
        let mut all = list()?;
        if index >= all.len() {
            return Err(Error(format!(
                "OpenCL device {index} not found ({} device(s))",
                all.len()
            )));
        }
        let (info, device) = all.swap_remove(index);
        // Groups whose tables would pass the device's largest single
        // allocation stay on the CPU.
        let max_words = device
            .max_mem_alloc_size()
            .map_or(usize::MAX, |b| (b / 4) as usize);
        let t = tables::Tables::build_limited(&engines, max_words);
        let context = Context::from_device(&device)?;
        let program = Program::create_and_build_from_source(&context, KERNEL_SOURCE, "")
            .map_err(|log| Error(format!("kernel build failed: {log}")))?;
        let table_bytes = t.bytes();
        Ok(Arc::new(DeviceMatcher {
            groups: upload(&context, &t.groups)?,
            full: upload(&context, &t.full)?,
            rows: upload(&context, &t.rows)?,
            band: upload(&context, &t.band)?,
            out_start: upload(&context, &t.out_start)?,
            out_slots: upload(&context, &t.out_slots)?,
            info,
            context,
            program,
            device,
            engines,
            on_device: t.on_device,
            table_bytes,
        }))
    }

    /// Does the device run group `g`'s prefilter?
    pub fn on_device(&self, g: usize) -> bool {
        self.on_device.get(g).copied().unwrap_or(false)
    }

    /// Number of groups the device runs.
    pub fn device_groups(&self) -> usize {
        self.on_device.iter().filter(|&&b| b).count()
    }

    /// The CPU engine of group `g`.
    pub fn engine(&self, g: usize) -> Option<&dyn PrefilterEngine> {
        self.engines.get(g).and_then(|e| e.as_deref())
    }
}

/// Counters of the device path (one lane's, or summed).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DeviceStats {
    /// Batches launched, and how many of them by their time limit.
    pub batches: u64,
    pub batches_timed_out: u64,
    /// Buffers and bytes matched on the device and on the CPU (the
    /// opportunistic path: under the size threshold, too large for a slot,
    /// a group the device does not run, or the policy said CPU).
    pub device_buffers: u64,
    pub device_bytes: u64,
    pub cpu_buffers: u64,
    pub cpu_bytes: u64,
    /// Sum over batches of their fill, per mille of the slot's batch area.
    pub fill_permille_sum: u64,
    /// Host-to-device and device-to-host transfer time, kernel time (ns,
    /// from the queues' profiling).
    pub transfer_ns: u64,
    pub kernel_ns: u64,
    /// Sum over launches of the slots in flight (the launched one
    /// included), and the most seen at once.
    pub inflight_sum: u64,
    pub inflight_max: u64,
    /// Slots of the pool (per lane; summed over lanes).
    pub queues: u64,
    /// Batches whose output area overflowed, and buffers re-run on the
    /// CPU because of it.
    pub overflow_batches: u64,
    pub overflow_reruns: u64,
    /// Waits for a free slot (all in flight).
    pub pool_waits: u64,
    /// The opportunistic CPU threshold in force, bytes (`u64::MAX`: all
    /// buffers on the CPU).
    pub cpu_threshold: u64,
}

impl DeviceStats {
    pub fn add(&mut self, o: &DeviceStats) {
        self.batches += o.batches;
        self.batches_timed_out += o.batches_timed_out;
        self.device_buffers += o.device_buffers;
        self.device_bytes += o.device_bytes;
        self.cpu_buffers += o.cpu_buffers;
        self.cpu_bytes += o.cpu_bytes;
        self.fill_permille_sum += o.fill_permille_sum;
        self.transfer_ns += o.transfer_ns;
        self.kernel_ns += o.kernel_ns;
        self.inflight_sum += o.inflight_sum;
        self.inflight_max = self.inflight_max.max(o.inflight_max);
        self.queues += o.queues;
        self.overflow_batches += o.overflow_batches;
        self.overflow_reruns += o.overflow_reruns;
        self.pool_waits += o.pool_waits;
        self.cpu_threshold = self.cpu_threshold.max(o.cpu_threshold);
    }

    /// Average batch fill, per mille of the slot area.
    pub fn avg_fill_permille(&self) -> u64 {
        self.fill_permille_sum / self.batches.max(1)
    }

    /// Average slots in flight at launch, in hundredths.
    pub fn avg_inflight_centi(&self) -> u64 {
        self.inflight_sum * 100 / self.batches.max(1)
    }
}

/// Test support: whether device tests must fail rather than skip when no
/// OpenCL platform is found (`VIGIL_REQUIRE_OPENCL=1`, set by CI).
pub fn required_by_env() -> bool {
    std::env::var("VIGIL_REQUIRE_OPENCL").is_ok_and(|v| v == "1")
}
