//! The HTTP endpoint: `GET /metrics` on one serving thread, with `tiny_http`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response, Server};

use crate::{Metrics, CONTENT_TYPE};

/// Why the metrics endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address could not be parsed, resolved or bound (in use, no permission...).
    #[error("metrics: cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// Starting the serving thread failed.
    #[error("metrics: cannot start the serving thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// Serves `GET /metrics` (and 404 elsewhere) on one address until stopped or
/// dropped.
pub struct MetricsServer {
    server: Arc<Server>,
    local_addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (e.g. `127.0.0.1:9917`; port 0 picks a free one) and starts the
    /// serving thread. An address that cannot be bound is an error, not a panic.
    pub fn start(addr: &str, metrics: Metrics) -> Result<MetricsServer, MetricsError> {
        let listen_err = |source| MetricsError::Listen {
            addr: addr.to_string(),
            source,
        };
        let server = Server::http(addr).map_err(listen_err)?;
        let local_addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| listen_err("not an IP address".into()))?;
        let server = Arc::new(server);
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let server = server.clone();
            let stopping = stopping.clone();
            std::thread::Builder::new()
                .name("vigil-metrics".into())
                .spawn(move || serve(&server, &metrics, &stopping))
                .map_err(MetricsError::Thread)?
        };
        Ok(MetricsServer {
            server,
            local_addr,
            stopping,
            thread: Some(thread),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving and waits for the serving thread; dropping does the same.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.stopping.store(true, Ordering::SeqCst);
            // Wakes the thread if it is waiting in recv(); the flag covers the case
            // where it is busy answering a request at that moment.
            self.server.unblock();
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("local_addr", &self.local_addr)
            .field("running", &self.thread.is_some())
            .finish()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The serving loop: one request at a time (a scrape is a few KiB, rendered on
/// demand); tiny_http reads requests on its own connection threads.
fn serve(server: &Server, metrics: &Metrics, stopping: &AtomicBool) {
    while !stopping.load(Ordering::SeqCst) {
        match server.recv() {
            Ok(request) => answer(request, metrics),
            // Either unblock() (the loop condition then ends it) or an accept
            // error, e.g. out of file descriptors: don't spin on the latter.
            Err(_) => {
                if !stopping.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
}

fn answer(request: Request, metrics: &Metrics) {
    // Ignore a query string: Prometheus may append one.
    let path = request.url().split('?').next().unwrap_or("");
    let response = if path != "/metrics" {
        text_response("not found; try /metrics\n", 404)
    } else if !matches!(request.method(), Method::Get | Method::Head) {
        text_response("method not allowed\n", 405).with_header(header("Allow", "GET, HEAD"))
    } else {
        Response::from_string(metrics.render()).with_header(header("Content-Type", CONTENT_TYPE))
    };
    // A client that hung up is not our problem.
    let _ = request.respond(response);
}

fn text_response(body: &str, status: u16) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_string(body)
        .with_status_code(status)
        .with_header(header("Content-Type", "text/plain; charset=utf-8"))
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid constant header")
}
