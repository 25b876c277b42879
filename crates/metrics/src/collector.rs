//! The scrape-time collector: turns the latest [`Snapshot`] into const metrics.

use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::TypedMetric;
use prometheus_client::registry::Unit;

use crate::{InterfaceFigures, Snapshot, WorkerFigures};

/// Encodes the snapshot it shares with [`crate::Metrics`] on every scrape.
#[derive(Debug)]
pub(crate) struct SnapshotCollector {
    snapshot: Arc<Mutex<Snapshot>>,
}

impl SnapshotCollector {
    pub(crate) fn new(snapshot: Arc<Mutex<Snapshot>>) -> Self {
        SnapshotCollector { snapshot }
    }
}

/// A per-worker figure: family name (counters without their `_total`, which the
/// encoder appends), help text, whether it is a gauge, and the accessor.
type WorkerField = (&'static str, &'static str, bool, fn(&WorkerFigures) -> u64);

const WORKER_FIELDS: &[WorkerField] = &[
    (
        "vigil_packets",
        "Packets processed by the worker.",
        false,
        |w| w.packets,
    ),
    (
        "vigil_bytes",
        "Bytes of captured frames processed by the worker.",
        false,
        |w| w.bytes,
    ),
    (
        "vigil_decoder_invalid",
        "Packets the worker's decoder found malformed.",
        false,
        |w| w.decoder_invalid,
    ),
    (
        "vigil_flows",
        "Flows the worker created.",
        false,
        |w| w.flows_created,
    ),
    (
        "vigil_flows_active",
        "Flows in the worker's flow table now.",
        true,
        |w| w.flows_active,
    ),
    (
        "vigil_flows_timed_out",
        "Flows the worker expired on their idle timeout.",
        false,
        |w| w.flows_timed_out,
    ),
    (
        "vigil_flow_memcap_evictions",
        "Flows the worker evicted early because the flow table hit its memory cap.",
        false,
        |w| w.flow_memcap_evictions,
    ),
    (
        "vigil_stream_memcap_dropped_bytes",
        "TCP payload bytes the worker did not reassemble because the stream memory cap was reached.",
        false,
        |w| w.stream_memcap_dropped_bytes,
    ),
    (
        "vigil_worker_alerts",
        "Alerts raised by the worker.",
        false,
        |w| w.alerts,
    ),
];

/// A per-interface counter: family name without `_total`, help, accessor.
type InterfaceField = (&'static str, &'static str, fn(&InterfaceFigures) -> u64);

const INTERFACE_FIELDS: &[InterfaceField] = &[
    (
        "vigil_kernel_packets",
        "Packets the kernel delivered to the capture socket(s) on the interface.",
        |i| i.kernel_packets,
    ),
    (
        "vigil_kernel_drops",
        "Packets the kernel dropped because the capture socket's ring or buffer was full.",
        |i| i.kernel_drops,
    ),
    (
        "vigil_kernel_ifdrops",
        "Packets dropped by the interface or its driver before reaching the capture socket.",
        |i| i.kernel_ifdrops,
    ),
    (
        "vigil_truncated_frames",
        "Frames captured shorter than on the wire (snap length).",
        |i| i.truncated,
    ),
];

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // Encoding is a few KiB of string formatting: hold the lock for it rather
        // than cloning the snapshot (publish only swaps the value).
        let s = crate::lock(&self.snapshot);

        for &(name, help, gauge, get) in WORKER_FIELDS {
            let samples = s
                .workers
                .iter()
                .enumerate()
                .map(|(id, w)| ([("worker", id)], get(w)));
            if gauge {
                family(&mut encoder, name, help, None, samples, ConstGauge::new)?;
            } else {
                family(&mut encoder, name, help, None, samples, ConstCounter::new)?;
            }
        }

        for &(name, help, get) in INTERFACE_FIELDS {
            let samples = s
                .interfaces
                .iter()
                .map(|i| ([("interface", i.name.as_str())], get(i)));
            family(&mut encoder, name, help, None, samples, ConstCounter::new)?;
        }

        let samples = s
            .alerts_by_action
            .iter()
            .map(|(action, n)| ([("action", action.as_str())], *n));
        family(
            &mut encoder,
            "vigil_alerts",
            "Alerts raised, by action taken (e.g. allowed, blocked).",
            None,
            samples,
            ConstCounter::new,
        )?;

        single(
            &mut encoder,
            "vigil_uptime",
            "Seconds since the engine started.",
            Some(&Unit::Seconds),
            ConstGauge::new(s.uptime_seconds),
        )?;
        single(
            &mut encoder,
            "vigil_rules_loaded",
            "Rules in the rule set now in force.",
            None,
            ConstGauge::new(s.rules_loaded),
        )?;
        single(
            &mut encoder,
            "vigil_rule_reloads",
            "Rule reloads attempted since start (SIGUSR2), successful or not.",
            None,
            ConstCounter::new(s.reloads),
        )?;
        single(
            &mut encoder,
            "vigil_rule_reload_failures",
            "Rule reloads that failed.",
            None,
            ConstCounter::new(s.reload_failures),
        )?;
        Ok(())
    }
}

/// One labelled metric family: the descriptor, then one sample per label set.
fn family<L, V, M>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    samples: impl Iterator<Item = (L, V)>,
    make: impl Fn(V) -> M,
) -> Result<(), std::fmt::Error>
where
    L: EncodeLabelSet,
    M: EncodeMetric + TypedMetric,
{
    let mut metric_encoder = encoder.encode_descriptor(name, help, unit, M::TYPE)?;
    for (labels, value) in samples {
        make(value).encode(metric_encoder.encode_family(&labels)?)?;
    }
    Ok(())
}

/// One metric without labels.
fn single<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    metric: M,
) -> Result<(), std::fmt::Error> {
    let metric_encoder = encoder.encode_descriptor(name, help, unit, metric.metric_type())?;
    metric.encode(metric_encoder)
}
