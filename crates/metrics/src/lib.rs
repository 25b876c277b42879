//! Prometheus exposition of a live run's counters: the engine publishes a
//! cumulative [`Snapshot`] every second or so; a scrape of `/metrics`
//! renders the latest one in the OpenMetrics text format through the
//! `prometheus-client` crate, served by `tiny_http`.
//!
//! The registry is built afresh from the snapshot at each scrape: the
//! figures are the engine's own cumulative counters, so nothing here
//! counts, and a scrape never touches the workers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// What the engine publishes, cumulative since start.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Index = worker id.
    pub workers: Vec<WorkerFigures>,
    pub interfaces: Vec<InterfaceFigures>,
    /// e.g. `("allowed", n)`.
    pub alerts_by_action: Vec<(String, u64)>,
    pub uptime_seconds: f64,
    pub rules_loaded: u64,
    pub reloads: u64,
    pub reload_failures: u64,
}

#[derive(Clone, Debug, Default)]
pub struct WorkerFigures {
    pub packets: u64,
    pub bytes: u64,
    pub decoder_invalid: u64,
    pub flows_created: u64,
    pub flows_active: u64,
    pub flows_timed_out: u64,
    pub flow_memcap_evictions: u64,
    pub stream_memcap_dropped_bytes: u64,
    pub alerts: u64,
}

#[derive(Clone, Debug, Default)]
pub struct InterfaceFigures {
    pub name: String,
    pub kernel_packets: u64,
    pub kernel_drops: u64,
    pub kernel_ifdrops: u64,
    pub truncated: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("metrics: cannot listen on {addr}: {why}")]
    Listen { addr: String, why: String },
}

/// Shared handle: the engine calls [`Metrics::publish`]; scrapes read
/// the latest snapshot.
#[derive(Clone, Default, Debug)]
pub struct Metrics {
    latest: Arc<Mutex<Snapshot>>,
}

type Labels = Vec<(String, String)>;

fn counter_family(
    reg: &mut Registry,
    name: &str,
    help: &str,
    key: &str,
    values: impl IntoIterator<Item = (String, u64)>,
) {
    let fam = Family::<Labels, Counter>::default();
    for (label, v) in values {
        fam.get_or_create(&vec![(key.to_string(), label)]).inc_by(v);
    }
    reg.register(name, help, fam);
}

fn gauge_family(
    reg: &mut Registry,
    name: &str,
    help: &str,
    key: &str,
    values: impl IntoIterator<Item = (String, u64)>,
) {
    let fam = Family::<Labels, Gauge>::default();
    for (label, v) in values {
        fam.get_or_create(&vec![(key.to_string(), label)])
            .set(i64::try_from(v).unwrap_or(i64::MAX));
    }
    reg.register(name, help, fam);
}

fn counter(reg: &mut Registry, name: &str, help: &str, v: u64) {
    let c = Counter::<u64>::default();
    c.inc_by(v);
    reg.register(name, help, c);
}

impl Metrics {
    pub fn publish(&self, s: Snapshot) {
        *self.latest.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }

    /// The latest snapshot in the OpenMetrics text format.
    pub fn render(&self) -> String {
        let s = self
            .latest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut reg = Registry::default();
        let per_worker = |f: fn(&WorkerFigures) -> u64| {
            s.workers
                .iter()
                .enumerate()
                .map(move |(i, w)| (i.to_string(), f(w)))
                .collect::<Vec<_>>()
        };
        let per_if = |f: fn(&InterfaceFigures) -> u64| {
            s.interfaces
                .iter()
                .map(move |i| (i.name.clone(), f(i)))
                .collect::<Vec<_>>()
        };
        // prometheus-client adds `_total` to counter names.
        counter_family(
            &mut reg,
            "vigil_packets",
            "Packets decoded",
            "worker",
            per_worker(|w| w.packets),
        );
        counter_family(
            &mut reg,
            "vigil_bytes",
            "Bytes of the packets decoded",
            "worker",
            per_worker(|w| w.bytes),
        );
        counter_family(
            &mut reg,
            "vigil_decoder_invalid",
            "Packets the decoder found invalid",
            "worker",
            per_worker(|w| w.decoder_invalid),
        );
        counter_family(
            &mut reg,
            "vigil_flows",
            "Flows created",
            "worker",
            per_worker(|w| w.flows_created),
        );
        gauge_family(
            &mut reg,
            "vigil_flows_active",
            "Flows in the flow table now",
            "worker",
            per_worker(|w| w.flows_active),
        );
        counter_family(
            &mut reg,
            "vigil_flows_timed_out",
            "Flows ended by their idle timeout",
            "worker",
            per_worker(|w| w.flows_timed_out),
        );
        counter_family(
            &mut reg,
            "vigil_flow_memcap_evictions",
            "Flows evicted because the flow table was full",
            "worker",
            per_worker(|w| w.flow_memcap_evictions),
        );
        counter_family(
            &mut reg,
            "vigil_stream_memcap_dropped_bytes",
            "Stream bytes not reassembled because of the stream memcap",
            "worker",
            per_worker(|w| w.stream_memcap_dropped_bytes),
        );
        counter_family(
            &mut reg,
            "vigil_worker_alerts",
            "Alerts raised by the worker (before thresholds)",
            "worker",
            per_worker(|w| w.alerts),
        );
        counter_family(
            &mut reg,
            "vigil_kernel_packets",
            "Packets the kernel saw for the capture rings, drops included",
            "interface",
            per_if(|i| i.kernel_packets),
        );
        counter_family(
            &mut reg,
            "vigil_kernel_drops",
            "Packets the kernel dropped because a ring was full",
            "interface",
            per_if(|i| i.kernel_drops),
        );
        counter_family(
            &mut reg,
            "vigil_kernel_ifdrops",
            "Packets the interface dropped since start",
            "interface",
            per_if(|i| i.kernel_ifdrops),
        );
        counter_family(
            &mut reg,
            "vigil_truncated_frames",
            "Frames longer than the snapshot length (cut)",
            "interface",
            per_if(|i| i.truncated),
        );
        counter_family(
            &mut reg,
            "vigil_alerts",
            "Alerts written, by action",
            "action",
            s.alerts_by_action.iter().cloned(),
        );
        let up = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        up.set(s.uptime_seconds);
        reg.register("vigil_uptime_seconds", "Seconds since the run started", up);
        let rules = Gauge::<i64>::default();
        rules.set(i64::try_from(s.rules_loaded).unwrap_or(i64::MAX));
        reg.register("vigil_rules_loaded", "Rules in the detection engine", rules);
        counter(
            &mut reg,
            "vigil_rule_reloads",
            "Rule reloads that took effect",
            s.reloads,
        );
        counter(
            &mut reg,
            "vigil_rule_reload_failures",
            "Rule reloads that failed (the old rules stayed)",
            s.reload_failures,
        );
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &reg);
        out
    }
}

/// Serves `GET /metrics` until stopped or dropped.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl MetricsServer {
    pub fn start(addr: &str, metrics: Metrics) -> Result<MetricsServer, MetricsError> {
        let err = |why: String| MetricsError::Listen {
            addr: addr.to_string(),
            why,
        };
        let server = Arc::new(tiny_http::Server::http(addr).map_err(|e| err(e.to_string()))?);
        let local = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| err("not an IP address".into()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (server.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("vigil-metrics".into())
            .spawn(move || serve(&s, &st, &metrics))
            .map_err(|e| err(e.to_string()))?;
        Ok(MetricsServer {
            server,
            stop,
            thread: Some(thread),
            addr: local,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop(self) {}
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &tiny_http::Server, stop: &AtomicBool, metrics: &Metrics) {
    while !stop.load(Ordering::SeqCst) {
        let req = match server.recv_timeout(Duration::from_millis(250)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break,
        };
        let resp = if req.method() == &tiny_http::Method::Get
            && req.url().split('?').next() == Some("/metrics")
        {
            let body = metrics.render();
            let ct = "application/openmetrics-text; version=1.0.0; charset=utf-8";
            let mut r = tiny_http::Response::from_string(body);
            if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", ct) {
                r.add_header(h);
            }
            r
        } else {
            tiny_http::Response::from_string("not found: try /metrics\n").with_status_code(404)
        };
        // A client that went away is not our problem.
        let _ = req.respond(resp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn sample() -> Snapshot {
        Snapshot {
            workers: vec![
                WorkerFigures {
                    packets: 10,
                    bytes: 1500,
                    flows_active: 3,
                    ..WorkerFigures::default()
                },
                WorkerFigures {
                    packets: 7,
                    alerts: 2,
                    ..WorkerFigures::default()
                },
            ],
            interfaces: vec![InterfaceFigures {
                name: "eth0".into(),
                kernel_packets: 18,
                kernel_drops: 1,
                ..InterfaceFigures::default()
            }],
            alerts_by_action: vec![("allowed".into(), 2)],
            uptime_seconds: 4.5,
            rules_loaded: 25530,
            reloads: 1,
            reload_failures: 0,
        }
    }

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    #[test]
    fn render_has_each_figure_with_its_labels_and_type() {
        let m = Metrics::default();
        m.publish(sample());
        let text = m.render();
        let l = lines(&text);
        for want in [
            "vigil_packets_total{worker=\"0\"} 10",
            "vigil_packets_total{worker=\"1\"} 7",
            "vigil_bytes_total{worker=\"0\"} 1500",
            "vigil_flows_active{worker=\"0\"} 3",
            "vigil_worker_alerts_total{worker=\"1\"} 2",
            "vigil_kernel_packets_total{interface=\"eth0\"} 18",
            "vigil_kernel_drops_total{interface=\"eth0\"} 1",
            "vigil_alerts_total{action=\"allowed\"} 2",
            "vigil_uptime_seconds 4.5",
            "vigil_rules_loaded 25530",
            "vigil_rule_reloads_total 1",
            "vigil_rule_reload_failures_total 0",
            "# TYPE vigil_packets counter",
            "# TYPE vigil_flows_active gauge",
            "# HELP vigil_kernel_drops Packets the kernel dropped because a ring was full.",
        ] {
            assert!(l.contains(&want), "missing {want:?} in\n{text}");
        }
        assert_eq!(l.last(), Some(&"# EOF"));
    }

    #[test]
    fn an_empty_snapshot_renders() {
        let text = Metrics::default().render();
        assert!(text.contains("vigil_uptime_seconds 0"), "{text}");
    }

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn the_server_answers_metrics_and_404() {
        let m = Metrics::default();
        m.publish(sample());
        let srv = MetricsServer::start("127.0.0.1:0", m.clone()).unwrap();
        let addr = srv.local_addr();
        let r = get(addr, "/metrics");
        assert!(
            r.starts_with("HTTP/1.0 200") || r.starts_with("HTTP/1.1 200"),
            "{r}"
        );
        assert!(r.contains("openmetrics-text"), "{r}");
        assert!(r.contains("vigil_packets_total{worker=\"0\"} 10"), "{r}");
        // A new snapshot shows at the next scrape.
        let mut s = sample();
        s.workers[0].packets = 11;
        m.publish(s);
        assert!(get(addr, "/metrics").contains("vigil_packets_total{worker=\"0\"} 11"));
        let r = get(addr, "/other");
        assert!(r.contains(" 404 "), "{r}");
        let t = std::time::Instant::now();
        srv.stop();
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(std::net::TcpStream::connect(addr).is_err() || get_fails(addr));
    }

    fn get_fails(addr: SocketAddr) -> bool {
        let Ok(mut s) = std::net::TcpStream::connect(addr) else {
            return true;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
        let mut out = String::new();
        s.read_to_string(&mut out).is_err() || out.is_empty()
    }

    #[test]
    fn a_port_in_use_is_an_error_not_a_panic() {
        let first = MetricsServer::start("127.0.0.1:0", Metrics::default()).unwrap();
        let taken = first.local_addr().to_string();
        match MetricsServer::start(&taken, Metrics::default()) {
            Err(e) => assert!(e.to_string().contains(&taken), "{e}"),
            Ok(_) => panic!("bound a port already in use"),
        }
        assert!(MetricsServer::start("not-an-address", Metrics::default()).is_err());
    }
}
