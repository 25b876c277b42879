//! Sensors that split one capture (`--slice K/N`) and share the events of
//! the host and pair scopes through Redis Streams (`--sensor-redis
//! HOST:PORT`, or `sensors.redis` in the config).
//!
//! Every sensor appends its connection events and xbits matches, in its
//! input order, with its progress (`upto`), to one stream; every sensor
//! reads the stream and hands the other sensors' entries to its ordered
//! merge, which orders them with its own by packet index (the sensors read
//! the same capture, so indices are shared). Each sensor's detectors and
//! xbits then see every sensor's events in input order, as one process
//! would; detector alerts are written by the sensor that owns the source
//! host, xbits alerts by the sensor that saw the packet.
//!
//! Entries are JSON (`{"v":1,"s":K,"u":upto,"e":[...]}`); an entry of an
//! unknown version or that does not parse is counted and dropped. A
//! publisher thread writes through a bounded queue (full: dropped and
//! counted); Redis errors are retried with a pause. A sensor silent for
//! `peer-timeout` seconds (Redis gone, sensor dead) is given up on: the
//! merge goes on with local events only, and the loss is counted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use serde_json::{json, Value};
use vigil_engine::detectors::ConnKind;
use vigil_engine::{AlertOut, OutKind, PeerLink, PeerReport};

/// Format version of stream entries.
const VERSION: u64 = 1;

/// Counters, for stats.log (`sensors.*`).
#[derive(Debug, Default)]
pub struct SensorCounters {
    pub published: AtomicU64,
    pub publish_dropped: AtomicU64,
    pub publish_errors: AtomicU64,
    pub received: AtomicU64,
    pub malformed: AtomicU64,
    pub peers_lost: AtomicU64,
    pub late: AtomicU64,
}

impl SensorCounters {
    /// The `sensors.*` stats.log lines (`events_merged`: what the merge
    /// took in from the other sensors).
    pub fn stats_lines(&self, events_merged: u64) -> Vec<(&'static str, String)> {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed).to_string();
        vec![
            ("sensors.events_merged", events_merged.to_string()),
            ("sensors.entries_published", get(&self.published)),
            ("sensors.entries_not_published", get(&self.publish_dropped)),
            ("sensors.publish_errors", get(&self.publish_errors)),
            ("sensors.events_received", get(&self.received)),
            ("sensors.entries_malformed", get(&self.malformed)),
            ("sensors.entries_late", get(&self.late)),
            ("sensors.peers_lost", get(&self.peers_lost)),
        ]
    }

    /// Says on stderr what was lost, if anything.
    pub fn warn_if_lost(&self) {
        let (lost, unsent) = (
            self.peers_lost.load(Ordering::Relaxed),
            self.publish_dropped.load(Ordering::Relaxed),
        );
        if lost + unsent > 0 {
            eprintln!(
                "vigil: sensors: {lost} peer(s) given up on, {unsent} entries not published; host-scoped analysis was partly local"
            );
        }
    }
}

/// The sensor link of a run (`--sensor-redis` / `sensors.redis`, which
/// need `--slice`), set as `ecfg.peers`; `None` without one.
pub fn link(
    args: &crate::cli::RunArgs,
    cfg: &crate::config::Config,
    ecfg: &mut vigil_engine::EngineConfig,
    rules: &[vigil_detect::CompiledRule],
) -> anyhow::Result<Option<Arc<RedisPeers>>> {
    let Some(settings) = crate::run::sensor_settings(args, cfg)? else {
        return Ok(None);
    };
    let Some(slice) = ecfg.slice else {
        anyhow::bail!("--sensor-redis / sensors.redis needs --slice K/N");
    };
    let p = Arc::new(RedisPeers::new((slice.index, slice.count), settings, rules));
    ecfg.peers = Some(vigil_engine::Peers(p.clone()));
    Ok(Some(p))
}

#[derive(Debug, Clone)]
pub struct SensorSettings {
    pub server: String,
    pub port: u16,
    pub key: String,
    pub peer_timeout: Duration,
    /// Live sensors: read only entries written from now on, publish
    /// heartbeats, and take back a peer that speaks again after being
    /// given up on (offline, its late entries are dropped: the merge has
    /// moved past them).
    pub live: bool,
}

/// The Redis link of one sensor.
pub struct RedisPeers {
    slice: (u32, u32),
    settings: SensorSettings,
    /// Rules by index (gid, sid) and back, to name xbits rules across
    /// sensors.
    rule_ids: Vec<(u32, u32)>,
    rule_index: HashMap<(u32, u32), u32>,
    tx: Mutex<Option<Sender<String>>>,
    publisher: Mutex<Option<std::thread::JoinHandle<()>>>,
    pub counters: Arc<SensorCounters>,
}

impl RedisPeers {
    pub fn new(
        slice: (u32, u32),
        settings: SensorSettings,
        rules: &[vigil_detect::CompiledRule],
    ) -> RedisPeers {
        let rule_ids: Vec<(u32, u32)> = rules.iter().map(|r| (r.gid, r.sid)).collect();
        let rule_index = rule_ids
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, i as u32))
            .collect();
        let counters = Arc::new(SensorCounters::default());
        let (tx, rx) = bounded::<String>(4096);
        let publisher = {
            let settings = settings.clone();
            let counters = counters.clone();
            std::thread::Builder::new()
                .name("vigil-sensor-pub".into())
                .spawn(move || publish_loop(&settings, rx, &counters))
                .ok()
        };
        RedisPeers {
            slice,
            settings,
            rule_ids,
            rule_index,
            tx: Mutex::new(Some(tx)),
            publisher: Mutex::new(publisher),
            counters,
        }
    }

    /// Ends publishing: waits (at most `limit`) for the queue to be sent.
    pub fn finish(&self, limit: Duration) {
        self.tx.lock().map(|mut t| t.take()).ok();
        let handle = self.publisher.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = handle {
            let deadline = Instant::now() + limit;
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }

    fn encode(&self, events: &[AlertOut], upto: u64) -> String {
        let e: Vec<Value> = events
            .iter()
            .map(|a| {
                let (kind, gid, sid) = match a.kind {
                    OutKind::Conn(ConnKind::Attempt) => ("a", 0, 0),
                    OutKind::Conn(ConnKind::Failed) => ("f", 0, 0),
                    _ => {
                        let (g, s) = self
                            .rule_ids
                            .get(a.rule as usize)
                            .copied()
                            .unwrap_or((0, 0));
                        ("x", g, s)
                    }
                };
                json!([
                    kind,
                    a.index,
                    a.order.0,
                    a.order.1,
                    a.order.2,
                    a.ts_ns,
                    a.flow_id,
                    a.src.to_string(),
                    a.dst.to_string(),
                    a.sp,
                    a.dp,
                    a.proto,
                    a.pseudo,
                    a.rebuilt,
                    a.to_server,
                    gid,
                    sid,
                    a.vlan,
                    a.vlan_count,
                    a.linktype
                ])
            })
            .collect();
        json!({"v": VERSION, "s": self.slice.0, "u": upto, "e": e}).to_string()
    }
}

impl PeerLink for RedisPeers {
    fn slice(&self) -> (u32, u32) {
        self.slice
    }

    fn publish(&self, events: &[AlertOut], upto: u64) {
        let msg = self.encode(events, upto);
        let Ok(guard) = self.tx.lock() else { return };
        let Some(tx) = guard.as_ref() else { return };
        match tx.try_send(msg) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.counters
                    .publish_dropped
                    .fetch_add(events.len() as u64 + 1, Ordering::Relaxed);
            }
        }
    }

    fn subscribe(&self, mut deliver: Box<dyn FnMut(PeerReport) -> bool + Send>) {
        let settings = self.settings.clone();
        let counters = self.counters.clone();
        let (me, n) = self.slice;
        let index = self.rule_index.clone();
        let _ = std::thread::Builder::new()
            .name("vigil-sensor-sub".into())
            .spawn(move || {
                subscribe_loop(&settings, me, n, &index, &counters, &mut *deliver);
            });
    }
}

fn connect(s: &SensorSettings) -> Option<redis::Connection> {
    vigil_output::redis_connection(&s.server, s.port, None, None).ok()
}

fn publish_loop(s: &SensorSettings, rx: Receiver<String>, c: &SensorCounters) {
    let mut conn: Option<redis::Connection> = None;
    for msg in rx.iter() {
        // A few tries per entry, then it is counted as lost: the other
        // sensors give up on this one after their peer timeout anyway.
        let mut sent = false;
        for attempt in 0..3 {
            if conn.is_none() {
                conn = connect(s);
            }
            let Some(cn) = conn.as_mut() else {
                std::thread::sleep(Duration::from_millis(100 << attempt));
                continue;
            };
            let r: redis::RedisResult<String> = redis::cmd("XADD")
                .arg(&s.key)
                .arg("*")
                .arg("m")
                .arg(&msg)
                .query(cn);
            match r {
                Ok(_) => {
                    sent = true;
                    break;
                }
                Err(_) => {
                    c.publish_errors.fetch_add(1, Ordering::Relaxed);
                    conn = None;
                }
            }
        }
        if sent {
            c.published.fetch_add(1, Ordering::Relaxed);
        } else {
            c.publish_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

struct Peer {
    done: bool,
    last_seen: Instant,
}

fn subscribe_loop(
    s: &SensorSettings,
    me: u32,
    n: u32,
    index: &HashMap<(u32, u32), u32>,
    c: &SensorCounters,
    deliver: &mut dyn FnMut(PeerReport) -> bool,
) {
    let start = Instant::now();
    let mut peers: Vec<Peer> = (0..n.saturating_sub(1))
        .map(|_| Peer {
            done: false,
            last_seen: start,
        })
        .collect();
    let mut conn: Option<redis::Connection> = None;
    let mut last_id = if s.live { "$" } else { "0" }.to_string();
    while s.live || peers.iter().any(|p| !p.done) {
        // Give up on peers silent for too long.
        for (i, p) in peers.iter_mut().enumerate() {
            if !p.done && p.last_seen.elapsed() > s.peer_timeout {
                p.done = true;
                c.peers_lost.fetch_add(1, Ordering::Relaxed);
                if !deliver(PeerReport {
                    peer: i,
                    upto: u64::MAX,
                    events: Vec::new(),
                }) {
                    return;
                }
            }
        }
        if conn.is_none() {
            conn = connect(s);
            if conn.is_none() {
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        }
        let cn = conn.as_mut().expect("connected");
        let r: redis::RedisResult<redis::Value> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(256)
            .arg("BLOCK")
            .arg(500)
            .arg("STREAMS")
            .arg(&s.key)
            .arg(&last_id)
            .query(cn);
        let entries = match r {
            Ok(v) => stream_entries(&v),
            Err(_) => {
                conn = None;
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        for (id, msg) in entries {
            last_id = id;
            let Some((sensor, upto, events)) = decode(&msg, index) else {
                c.malformed.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            if sensor == me || sensor >= n {
                if sensor >= n {
                    c.malformed.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            }
            let peer = if sensor < me { sensor } else { sensor - 1 } as usize;
            let p = &mut peers[peer];
            if p.done && !(s.live && upto != u64::MAX) {
                c.late.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            p.last_seen = Instant::now();
            p.done = upto == u64::MAX;
            c.received.fetch_add(events.len() as u64, Ordering::Relaxed);
            if !deliver(PeerReport { peer, upto, events }) {
                return;
            }
        }
    }
}

/// The (id, message) pairs of an XREAD reply.
fn stream_entries(v: &redis::Value) -> Vec<(String, String)> {
    use redis::Value as V;
    let mut out = Vec::new();
    let streams: &[V] = match v {
        V::Array(a) => a,
        V::Map(m) => {
            for (_, entries) in m {
                collect_entries(entries, &mut out);
            }
            return out;
        }
        _ => return out,
    };
    for s in streams {
        if let V::Array(kv) = s {
            if let Some(entries) = kv.get(1) {
                collect_entries(entries, &mut out);
            }
        }
    }
    out
}

fn collect_entries(entries: &redis::Value, out: &mut Vec<(String, String)>) {
    use redis::Value as V;
    let text = |v: &V| -> Option<String> {
        match v {
            V::BulkString(b) => String::from_utf8(b.clone()).ok(),
            V::SimpleString(s) => Some(s.clone()),
            _ => None,
        }
    };
    let V::Array(list) = entries else { return };
    for e in list {
        let V::Array(pair) = e else { continue };
        let (Some(id), Some(V::Array(fields))) = (pair.first().and_then(text), pair.get(1)) else {
            continue;
        };
        let mut it = fields.chunks(2);
        if let Some(msg) = it.find_map(|f| match f {
            [k, v] if text(k).as_deref() == Some("m") => text(v),
            _ => None,
        }) {
            out.push((id, msg));
        }
    }
}

/// Parses one entry: (sensor, upto, events).
fn decode(msg: &str, index: &HashMap<(u32, u32), u32>) -> Option<(u32, u64, Vec<AlertOut>)> {
    let v: Value = serde_json::from_str(msg).ok()?;
    if v.get("v")?.as_u64()? != VERSION {
        return None;
    }
    let sensor = u32::try_from(v.get("s")?.as_u64()?).ok()?;
    let upto = v.get("u")?.as_u64()?;
    let mut events = Vec::new();
    for e in v.get("e")?.as_array()? {
        let f = e.as_array()?;
        if f.len() != 20 {
            return None;
        }
        let u = |i: usize| f[i].as_u64();
        let kind = match f[0].as_str()? {
            "a" => OutKind::Conn(ConnKind::Attempt),
            "f" => OutKind::Conn(ConnKind::Failed),
            "x" => OutKind::Xbits,
            _ => return None,
        };
        let rule = if kind == OutKind::Xbits {
            let id = (u32::try_from(u(15)?).ok()?, u32::try_from(u(16)?).ok()?);
            *index.get(&id)?
        } else {
            u32::MAX
        };
        let port = |i: usize| -> Option<Option<u16>> {
            match &f[i] {
                Value::Null => Some(None),
                x => Some(Some(u16::try_from(x.as_u64()?).ok()?)),
            }
        };
        let vl = f[17].as_array()?;
        let vlan = [
            u16::try_from(vl.first()?.as_u64()?).ok()?,
            u16::try_from(vl.get(1)?.as_u64()?).ok()?,
            u16::try_from(vl.get(2)?.as_u64()?).ok()?,
        ];
        events.push(AlertOut {
            frame: None,
            index: u(1)?,
            order: (u(2)?, u8::try_from(u(3)?).ok()?, u(4)?),
            ts_ns: f[5].as_i64()?,
            flow_id: f[6].as_u64(),
            src: f[7].as_str()?.parse::<IpAddr>().ok()?,
            dst: f[8].as_str()?.parse::<IpAddr>().ok()?,
            sp: port(9)?,
            dp: port(10)?,
            proto: u8::try_from(u(11)?).ok()?,
            icmp: None,
            sctp: None,
            igmp: None,
            vlan,
            vlan_count: u8::try_from(u(18)?).ok()?.min(3),
            to_server: f[14].as_bool(),
            rule,
            linktype: u32::try_from(u(19)?).ok()?,
            stream: false,
            pseudo: f[12].as_bool()?,
            rebuilt: f[13].as_bool()?,
            payload: None,
            packet: None,
            app_proto: None,
            app: None,
            kind,
            xff: None,
            blocked: false,
            tunnel: None,
            link_only: false,
            vars: None,
            context: Box::default(),
            datasets: None,
            line: None,
        });
    }
    Some((sensor, upto, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_and_unknown_versions_are_refused() {
        let index = HashMap::new();
        for bad in [
            "",
            "{}",
            "not json",
            r#"{"v":2,"s":0,"u":5,"e":[]}"#,
            r#"{"v":1,"s":0,"u":5,"e":[["z"]]}"#,
            r#"{"v":1,"s":0,"u":5,"e":[["x",1,1,1,0,5,null,"10.0.0.1","10.0.0.2",1,2,6,false,false,true,1,99,[0,0,0],0,1]]}"#,
        ] {
            assert!(decode(bad, &index).is_none(), "{bad}");
        }
        let ok = r#"{"v":1,"s":1,"u":7,"e":[["f",3,9,0,3,5,42,"10.0.0.1","10.0.0.2",1000,80,6,true,false,true,0,0,[0,0,0],0,101]]}"#;
        let (s, u, e) = decode(ok, &index).unwrap();
        assert_eq!((s, u, e.len()), (1, 7, 1));
        assert_eq!(e[0].kind, OutKind::Conn(ConnKind::Failed));
        assert_eq!(e[0].order, (9, 0, 3));
        assert_eq!(e[0].dp, Some(80));
    }
}
