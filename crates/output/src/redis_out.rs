//! EVE records to Redis (Suricata's eve-log `filetype: redis`).
//!
//! [`RedisWriter`] is a [`Write`] that cuts what it is given into lines
//! (one EVE record each, newline removed) and hands each line to a bounded
//! queue; a dedicated thread takes records from the queue and sends them to
//! Redis with `LPUSH`, `RPUSH`, `PUBLISH` or `XADD key [MAXLEN ~|= n] * eve
//! <record>`, up to `batch_size` commands per round trip (a pipeline).
//!
//! Nothing here blocks the caller for long or fails it. A full queue
//! while Redis is reachable (it is only slower than the records come) makes
//! the caller wait for room, at most [`FULL_WAIT`] per record; a full queue
//! while it is not drops the record at once; drops are counted. A lost or
//! refused connection is retried with a growing pause (100 ms doubling to
//! 2 s) and the batch in hand is sent again on the new connection (so a record can arrive twice when the
//! connection dropped after Redis applied it). [`RedisWriter::finish`]
//! gives the thread a bounded time to deliver what is queued and counts the
//! rest as dropped.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender as Tx, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The Redis command each record is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisMode {
    /// `LPUSH key record` (`mode: list` or `lpush`, the default).
    Lpush,
    /// `RPUSH key record`.
    Rpush,
    /// `PUBLISH channel record` (`mode: channel` or `publish`).
    Publish,
    /// `XADD key [MAXLEN ~|= maxlen] * eve record` (`mode: stream` or
    /// `xadd`). `maxlen` 0: no trimming.
    Xadd { maxlen: u64, exact: bool },
}

impl RedisMode {
    /// The mode named by Suricata's `mode` option; stream trimming comes
    /// from `stream-maxlen` and `stream-trim-exact`.
    pub fn parse(name: &str, maxlen: u64, exact: bool) -> Option<RedisMode> {
        Some(match name {
            "list" | "lpush" => RedisMode::Lpush,
            "rpush" => RedisMode::Rpush,
            "channel" | "publish" => RedisMode::Publish,
            "stream" | "xadd" => RedisMode::Xadd { maxlen, exact },
            _ => return None,
        })
    }
}

/// Where and how to send records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisSettings {
    /// Host name or address; a value with a `/` is a Unix socket path.
    pub server: String,
    pub port: u16,
    pub mode: RedisMode,
    /// List key, channel name or stream key.
    pub key: String,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Commands per round trip: 1 without pipelining.
    pub batch_size: usize,
    /// Records the queue holds before new ones are dropped.
    pub buffer_size: usize,
    /// How long [`RedisWriter::finish`] waits for the queue to drain.
    pub flush_timeout: Duration,
}

impl Default for RedisSettings {
    /// Suricata's defaults: 127.0.0.1:6379, `LPUSH suricata`, no
    /// pipelining; a queue of 16384 records and 5 s to drain it at exit.
    fn default() -> Self {
        RedisSettings {
            server: "127.0.0.1".to_string(),
            port: 6379,
            mode: RedisMode::Lpush,
            key: "suricata".to_string(),
            username: None,
            password: None,
            batch_size: 1,
            buffer_size: 16384,
            flush_timeout: Duration::from_secs(5),
        }
    }
}

/// What the writer did, for stats.log (`eve.redis.*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedisCounts {
    /// Records Redis accepted.
    pub written: u64,
    /// Records never delivered: the queue was full, Redis refused the
    /// command, or the exit flush ran out of time.
    pub dropped: u64,
    /// Connections opened after the first attempt failed or a connection
    /// was lost.
    pub reconnects: u64,
    /// Failed connection attempts, failed round trips and commands Redis
    /// answered with an error.
    pub errors: u64,
}

#[derive(Default)]
struct Counters {
    written: AtomicU64,
    dropped: AtomicU64,
    reconnects: AtomicU64,
    errors: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> RedisCounts {
        RedisCounts {
            written: self.written.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
        }
    }
}

struct Shared {
    counters: Counters,
    /// Set by `finish`: the thread stops trying at this instant.
    deadline: Mutex<Option<Instant>>,
    /// The writer thread holds a working connection: a full queue is
    /// then waited on (bounded), not dropped from at once.
    connected: AtomicBool,
}

impl Shared {
    fn past_deadline(&self) -> bool {
        match *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(d) => Instant::now() >= d,
            None => false,
        }
    }
}

/// Sends EVE records to Redis from a background thread; see the module
/// documentation.
pub struct RedisWriter {
    tx: Option<Tx<Vec<u8>>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Bytes of a record whose newline has not arrived yet.
    partial: Vec<u8>,
    flush_timeout: Duration,
}

impl std::fmt::Debug for RedisWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisWriter")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// Connect, read and write timeout of one attempt or round trip.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection to the Redis server at `server` (a path: a Unix socket)
/// and `port`, with `IO_TIMEOUT` on connecting, reading and writing.
pub fn redis_connection(
    server: &str,
    port: u16,
    username: Option<&str>,
    password: Option<&str>,
) -> redis::RedisResult<redis::Connection> {
    use redis::IntoConnectionInfo as _;
    let addr = if server.contains('/') {
        redis::ConnectionAddr::Unix(server.into())
    } else {
        redis::ConnectionAddr::Tcp(server.to_string(), port)
    };
    let mut info = redis::RedisConnectionInfo::default().set_skip_set_lib_name();
    if let Some(p) = password {
        info = info.set_password(p);
        if let Some(u) = username {
            info = info.set_username(u);
        }
    }
    let info = addr.into_connection_info()?.set_redis_settings(info);
    let client = redis::Client::open(info)?;
    let conn = client.get_connection_with_timeout(IO_TIMEOUT)?;
    conn.set_read_timeout(Some(IO_TIMEOUT))?;
    conn.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(conn)
}
/// The longest a record waits for room in a full queue while the writer
/// is connected: one round trip's timeout.
pub const FULL_WAIT: Duration = IO_TIMEOUT;

impl RedisWriter {
    /// Starts the writer thread. Connecting happens there, so a Redis that
    /// is down does not stop the caller; records wait in the queue.
    pub fn start(settings: RedisSettings) -> io::Result<RedisWriter> {
        let (tx, rx) = crossbeam_channel::bounded(settings.buffer_size.max(1));
        let shared = Arc::new(Shared {
            counters: Counters::default(),
            deadline: Mutex::new(None),
            connected: AtomicBool::new(false),
        });
        let flush_timeout = settings.flush_timeout;
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("eve-redis".to_string())
                .spawn(move || Sender::new(settings, shared).run(rx))?
        };
        Ok(RedisWriter {
            tx: Some(tx),
            shared,
            thread: Some(thread),
            partial: Vec::new(),
            flush_timeout,
        })
    }

    /// Queues one record (without its newline). When the queue is full:
    /// while the writer is connected (Redis is only slower than the
    /// records come), waits at most [`FULL_WAIT`] for room; while it is
    /// not, drops the record at once. Dropped records are counted.
    pub fn send_record(&mut self, record: &[u8]) {
        if record.is_empty() {
            return;
        }
        let Some(tx) = &self.tx else {
            self.shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let sent = match tx.try_send(record.to_vec()) {
            Ok(()) => true,
            Err(TrySendError::Full(rec)) if self.shared.connected.load(Ordering::Relaxed) => {
                match tx.send_timeout(rec, FULL_WAIT) {
                    Ok(()) => true,
                    Err(SendTimeoutError::Timeout(_)) | Err(SendTimeoutError::Disconnected(_)) => {
                        false
                    }
                }
            }
            Err(_) => false,
        };
        if !sent {
            self.shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counters so far.
    pub fn counts(&self) -> RedisCounts {
        self.shared.counters.snapshot()
    }

    /// Queues any unterminated last record, then waits at most the flush
    /// timeout for the queue to drain; what is still undelivered then is
    /// counted as dropped. Returns the final counters.
    pub fn finish(&mut self) -> RedisCounts {
        if !self.partial.is_empty() {
            let rec = std::mem::take(&mut self.partial);
            self.send_record(&rec);
        }
        *self
            .shared
            .deadline
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + self.flush_timeout);
        // Closing the queue lets the thread end once it is empty.
        self.tx = None;
        if let Some(t) = self.thread.take() {
            // The thread checks the deadline at least every 50 ms and each
            // round trip is bounded by IO_TIMEOUT, so this wait is too.
            let _ = t.join();
        }
        self.counts()
    }
}

impl Write for RedisWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(nl) = memchr_nl(rest) {
            let (line, tail) = rest.split_at(nl);
            if self.partial.is_empty() {
                self.send_record(line);
            } else {
                let mut rec = std::mem::take(&mut self.partial);
                rec.extend_from_slice(line);
                self.send_record(&rec);
            }
            rest = &tail[1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(buf.len())
    }

    /// Records go out as their newline arrives; nothing waits here.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for RedisWriter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// The writer thread's state.
struct Sender {
    settings: RedisSettings,
    shared: Arc<Shared>,
    conn: Option<redis::Connection>,
    /// Whether a connection ever failed or was lost (the next success is
    /// a reconnect).
    had_trouble: bool,
    backoff: Duration,
    next_attempt: Instant,
    batch: VecDeque<Vec<u8>>,
}

impl Sender {
    fn new(settings: RedisSettings, shared: Arc<Shared>) -> Sender {
        Sender {
            settings,
            shared,
            conn: None,
            had_trouble: false,
            backoff: BACKOFF_MIN,
            next_attempt: Instant::now(),
            batch: VecDeque::new(),
        }
    }

    fn run(mut self, rx: Receiver<Vec<u8>>) {
        let batch_size = self.settings.batch_size.max(1);
        // Connect early so the first records need not wait for it.
        self.connect();
        loop {
            if self.batch.is_empty() {
                match rx.recv_timeout(Duration::from_millis(200)) {
                    Ok(r) => self.batch.push_back(r),
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            while self.batch.len() < batch_size {
                match rx.try_recv() {
                    Ok(r) => self.batch.push_back(r),
                    Err(_) => break,
                }
            }
            if !self.deliver() {
                // Out of time at exit: count what is left.
                let left = self.batch.len() as u64 + rx.try_iter().count() as u64;
                self.shared
                    .counters
                    .dropped
                    .fetch_add(left, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Sends the batch, retrying until it is sent; false when the exit
    /// deadline passed first.
    fn deliver(&mut self) -> bool {
        loop {
            if self.shared.past_deadline() {
                return false;
            }
            if self.conn.is_none() && !self.connect() {
                self.pause();
                continue;
            }
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for rec in &self.batch {
                let cmd = pipe.cmd(self.command()).arg(&self.settings.key);
                if let RedisMode::Xadd { maxlen, exact } = self.settings.mode {
                    if maxlen > 0 {
                        cmd.arg("MAXLEN")
                            .arg(if exact { "=" } else { "~" })
                            .arg(maxlen);
                    }
                    cmd.arg("*").arg("eve");
                }
                cmd.arg(&rec[..]);
            }
            let conn = self.conn.as_mut().expect("connected above");
            let c = &self.shared.counters;
            match pipe.query::<Vec<redis::RedisResult<redis::Value>>>(conn) {
                Ok(results) => {
                    let bad = results.iter().filter(|r| r.is_err()).count() as u64;
                    let n = self.batch.len() as u64;
                    // A reply per command; anything missing was not acked.
                    let ok = (results.len() as u64).min(n).saturating_sub(bad);
                    c.written.fetch_add(ok, Ordering::Relaxed);
                    c.dropped.fetch_add(n - ok, Ordering::Relaxed);
                    c.errors.fetch_add(n - ok, Ordering::Relaxed);
                    self.batch.clear();
                    return true;
                }
                Err(_) => {
                    c.errors.fetch_add(1, Ordering::Relaxed);
                    self.shared.connected.store(false, Ordering::Relaxed);
                    self.conn = None;
                    self.had_trouble = true;
                    self.next_attempt = Instant::now() + self.backoff;
                }
            }
        }
    }

    fn command(&self) -> &'static str {
        match self.settings.mode {
            RedisMode::Lpush => "LPUSH",
            RedisMode::Rpush => "RPUSH",
            RedisMode::Publish => "PUBLISH",
            RedisMode::Xadd { .. } => "XADD",
        }
    }

    /// One connection attempt, when the backoff allows; true when
    /// connected.
    fn connect(&mut self) -> bool {
        if Instant::now() < self.next_attempt {
            return false;
        }
        match self.open() {
            Ok(conn) => {
                if self.had_trouble {
                    self.shared
                        .counters
                        .reconnects
                        .fetch_add(1, Ordering::Relaxed);
                }
                self.conn = Some(conn);
                self.shared.connected.store(true, Ordering::Relaxed);
                self.backoff = BACKOFF_MIN;
                true
            }
            Err(_) => {
                self.shared.counters.errors.fetch_add(1, Ordering::Relaxed);
                self.had_trouble = true;
                self.next_attempt = Instant::now() + self.backoff;
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                false
            }
        }
    }

    fn open(&self) -> redis::RedisResult<redis::Connection> {
        let s = &self.settings;
        redis_connection(
            &s.server,
            s.port,
            s.username.as_deref(),
            s.password.as_deref(),
        )
    }

    /// Sleeps until the next connection attempt, in steps short enough to
    /// notice the exit deadline.
    fn pause(&self) {
        let now = Instant::now();
        if self.next_attempt > now {
            std::thread::sleep((self.next_attempt - now).min(Duration::from_millis(50)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_by_suricata_names() {
        assert_eq!(RedisMode::parse("list", 0, false), Some(RedisMode::Lpush));
        assert_eq!(RedisMode::parse("lpush", 0, false), Some(RedisMode::Lpush));
        assert_eq!(RedisMode::parse("rpush", 0, false), Some(RedisMode::Rpush));
        assert_eq!(
            RedisMode::parse("channel", 0, false),
            Some(RedisMode::Publish)
        );
        assert_eq!(
            RedisMode::parse("publish", 0, false),
            Some(RedisMode::Publish)
        );
        assert_eq!(
            RedisMode::parse("xadd", 5, true),
            Some(RedisMode::Xadd {
                maxlen: 5,
                exact: true
            })
        );
        assert!(RedisMode::parse("stream", 0, false).is_some());
        assert_eq!(RedisMode::parse("queue", 0, false), None);
    }

    /// A writer to a port that was free a moment ago (bound, read,
    /// closed): nothing listens there.
    fn unreachable_writer(buffer_size: usize, flush_timeout: Duration) -> RedisWriter {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        RedisWriter::start(RedisSettings {
            port,
            buffer_size,
            flush_timeout,
            ..RedisSettings::default()
        })
        .unwrap()
    }

    /// Nothing listens: every record is counted as dropped within the
    /// flush timeout, errors are counted, nothing blocks.
    #[test]
    fn unreachable_server_drops_and_counts_within_the_timeout() {
        let mut w = unreachable_writer(4, Duration::from_millis(300));
        let t = Instant::now();
        for i in 0..10 {
            writeln!(w, "{{\"n\":{i}}}").unwrap();
        }
        // A record without its newline is sent at finish.
        write!(w, "{{\"n\":10}}").unwrap();
        let c = w.finish();
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
        assert_eq!(c.written, 0);
        assert_eq!(c.dropped, 11, "{c:?}");
        assert!(c.errors >= 1, "{c:?}");
    }

    #[test]
    fn lines_are_cut_at_newlines_across_writes() {
        let mut w = unreachable_writer(100, Duration::from_millis(100));
        w.write_all(b"{\"a\":1}\n{\"b\"").unwrap();
        w.write_all(b":2}\n\n{\"c\":3}\n").unwrap();
        let c = w.finish();
        // Three records (the empty line is none), none delivered.
        assert_eq!(c.dropped + c.written, 3, "{c:?}");
    }
}
