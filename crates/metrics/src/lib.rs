//! Prometheus exposition of Vigil's live counters.
//!
//! The engine fills a [`Snapshot`] (cumulative figures since start) every second or
//! so and hands it to [`Metrics::publish`]. A scrape renders the latest snapshot in
//! the OpenMetrics text format with `prometheus-client` ([`Metrics::render`]);
//! [`MetricsServer`] serves it over HTTP (`GET /metrics`) with `tiny_http`.
//!
//! The snapshot is plain data, so the engine's hot path never touches a metric
//! object: the figures become `ConstCounter`/`ConstGauge` samples only at scrape
//! time, in a custom [`prometheus_client::collector::Collector`].
//!
//! ```
//! use vigil_metrics::{Metrics, MetricsServer, Snapshot, WorkerFigures};
//!
//! let metrics = Metrics::default();
//! let server = MetricsServer::start("127.0.0.1:0", metrics.clone())?;
//! // The engine, every second or so:
//! metrics.publish(Snapshot {
//!     workers: vec![WorkerFigures { packets: 10, ..Default::default() }],
//!     uptime_seconds: 1.0,
//!     ..Default::default()
//! });
//! assert!(metrics.render().contains("vigil_packets_total{worker=\"0\"} 10\n"));
//! server.stop();
//! # Ok::<(), vigil_metrics::MetricsError>(())
//! ```

mod collector;
mod server;

use std::sync::{Arc, Mutex, MutexGuard};

use prometheus_client::registry::Registry;

pub use server::{MetricsError, MetricsServer};

/// What the engine publishes, cumulative since start (plain data, filled by the
/// caller every second or so).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// One entry per worker; the index is the worker id (the `worker` label).
    pub workers: Vec<WorkerFigures>,
    /// One entry per capture interface (the `interface` label is its name).
    pub interfaces: Vec<InterfaceFigures>,
    /// Alerts by action, e.g. `("allowed", n)`, `("blocked", n)` (the `action` label).
    pub alerts_by_action: Vec<(String, u64)>,
    /// Seconds since the engine started.
    pub uptime_seconds: f64,
    /// Rules in the running rule set.
    pub rules_loaded: u64,
    /// Rule reloads attempted since start (successful or not).
    pub reloads: u64,
    /// Rule reloads that failed.
    pub reload_failures: u64,
}

/// One worker's cumulative figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerFigures {
    pub packets: u64,
    pub bytes: u64,
    pub decoder_invalid: u64,
    pub flows_created: u64,
    /// A gauge: flows in the worker's table now.
    pub flows_active: u64,
    pub flows_timed_out: u64,
    pub flow_memcap_evictions: u64,
    pub stream_memcap_dropped_bytes: u64,
    pub alerts: u64,
}

/// One capture interface's cumulative figures, as the kernel reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InterfaceFigures {
    pub name: String,
    pub kernel_packets: u64,
    pub kernel_drops: u64,
    pub kernel_ifdrops: u64,
    pub truncated: u64,
}

/// The content type of [`Metrics::render`]'s output (what `MetricsServer` sends).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Shared handle: the engine calls [`publish`](Metrics::publish); scrapes read the
/// latest snapshot. Cloning is cheap (one `Arc`).
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    snapshot: Arc<Mutex<Snapshot>>,
    registry: Registry,
}

impl Default for Metrics {
    fn default() -> Self {
        let snapshot = Arc::new(Mutex::new(Snapshot::default()));
        let mut registry = Registry::default();
        registry.register_collector(Box::new(collector::SnapshotCollector::new(
            snapshot.clone(),
        )));
        Metrics {
            inner: Arc::new(Inner { snapshot, registry }),
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("snapshot", &*lock(&self.inner.snapshot))
            .finish()
    }
}

impl Metrics {
    /// A handle with an empty snapshot (same as `Metrics::default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the published snapshot; the next scrape shows it.
    pub fn publish(&self, s: Snapshot) {
        *lock(&self.inner.snapshot) = s;
    }

    /// A copy of the latest published snapshot.
    pub fn snapshot(&self) -> Snapshot {
        lock(&self.inner.snapshot).clone()
    }

    /// The latest snapshot in the OpenMetrics text format, as prometheus-client
    /// writes it (ending with `# EOF`); see [`CONTENT_TYPE`].
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        // Writing into a String cannot fail, and the collector only writes.
        prometheus_client::encoding::text::encode(&mut out, &self.inner.registry)
            .expect("encoding metrics into a String");
        out
    }
}

/// Locks the snapshot; a panic elsewhere while holding the lock leaves plain data
/// that is still worth showing, so poisoning is ignored.
fn lock(m: &Mutex<Snapshot>) -> MutexGuard<'_, Snapshot> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
