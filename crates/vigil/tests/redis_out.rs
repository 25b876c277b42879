//! EVE to Redis (`filetype: redis`) end to end: each test starts its own
//! `redis-server` on 127.0.0.1 on a free port (no persistence, killed when
//! the test ends, pass or fail), runs `vigil run -r` on the demo capture
//! and reads the records back from Redis.
//!
//! They need `redis-server` (scripts/setup.sh installs it). Without it they
//! are skipped with a note, unless `VIGIL_REQUIRE_NET=1` (CI sets it), when
//! they fail. Nothing but 127.0.0.1 is contacted.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn tool(name: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the Redis tests can run here; panics when they must.
fn can_run(test: &str) -> bool {
    if tool("redis-server") {
        return true;
    }
    let why = format!("{test}: needs redis-server (scripts/setup.sh)");
    if std::env::var_os("VIGIL_REQUIRE_NET").is_some_and(|v| v == "1") {
        panic!("VIGIL_REQUIRE_NET=1 but {why}");
    }
    eprintln!("skipped: {why}");
    false
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-redis-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Taken by the tests that load the machine (two sensors on dev-mix) and
/// by the one whose one-record queue must keep up: not at the same time.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A port nothing listened on a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `redis-server` child on 127.0.0.1, killed on drop.
struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    /// Starts one on `port` and waits (at most 10 s) until it answers.
    fn start(port: u16, dir: &Path) -> RedisServer {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .args(["--daemonize", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let mut server = RedisServer { child, port };
        let t = Instant::now();
        loop {
            if let Ok(Some(st)) = server.child.try_wait() {
                panic!("redis-server on port {port} exited at start: {st}");
            }
            if let Ok(mut c) = server.try_connect() {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return server;
                }
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "redis-server on port {port} not ready in 10 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn try_connect(&self) -> redis::RedisResult<redis::Connection> {
        let c = redis::Client::open(("127.0.0.1", self.port))?;
        let conn = c.get_connection_with_timeout(Duration::from_secs(2))?;
        conn.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(conn)
    }

    fn connect(&self) -> redis::Connection {
        self.try_connect()
            .expect("connect to the test redis-server")
    }
}

impl RedisServer {
    /// Waits (at most `limit`) until `n` clients, this test's own
    /// connection included, are connected.
    fn wait_clients(&self, n: usize, limit: Duration) {
        let mut con = self.connect();
        let t = Instant::now();
        loop {
            let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
            if clients.lines().count() >= n {
                return;
            }
            assert!(t.elapsed() < limit, "vigil never connected");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The demo capture and rules in `dir`; returns (pcap, rules).
fn demo_inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let pcap = dir.join("in.pcap");
    vigil_craft::write_pcap_file(&pcap, &vigil_craft::demo_capture()).unwrap();
    let rules = dir.join("demo.rules");
    std::fs::write(&rules, vigil_craft::DEMO_RULES).unwrap();
    (pcap, rules)
}

/// The demo capture followed by one quiet UDP packet, and the replay
/// speed that plays the demo in about a second and the quiet gap before
/// that packet in about `gap_s` seconds.
fn slow_inputs(dir: &Path, gap_s: f64) -> (PathBuf, PathBuf, f64) {
    let (_, rules) = demo_inputs(dir);
    let mut frames = vigil_craft::demo_capture();
    let first = frames.first().unwrap().0;
    let last = frames.last().unwrap().0;
    let span = (last.0 - first.0) as f64 + (last.1 as f64 - first.1 as f64) / 1e9;
    let speed = span.max(1.0);
    frames.push((
        (last.0 + (gap_s * speed).ceil() as i64, last.1),
        vigil_craft::eth_ipv4_udp(
            std::net::Ipv4Addr::new(10, 9, 9, 1),
            1000,
            std::net::Ipv4Addr::new(10, 9, 9, 2),
            2000,
            b"quiet",
        ),
    ));
    let pcap = dir.join("slow.pcap");
    vigil_craft::write_pcap_file(&pcap, &frames).unwrap();
    (pcap, rules, speed)
}

/// `vigil run` on the demo capture with `config` (YAML) into `dir/<out>`,
/// at most `limit` (killed past it).
fn run_vigil(dir: &Path, out: &str, config: &str, limit: Duration) -> (Output, Duration) {
    let (pcap, rules) = demo_inputs(dir);
    wait_bounded(spawn_vigil(dir, out, config, &pcap, &rules, &[]), limit)
}

fn spawn_vigil(
    dir: &Path,
    out: &str,
    config: &str,
    pcap: &Path,
    rules: &Path,
    extra: &[&str],
) -> Child {
    let cfg = dir.join(format!("{out}.yaml"));
    std::fs::write(&cfg, config).unwrap();
    Command::new(env!("CARGO_BIN_EXE_vigil"))
        .arg("run")
        .arg("-r")
        .arg(pcap)
        .arg("-S")
        .arg(rules)
        .arg("-c")
        .arg(&cfg)
        .arg("-l")
        .arg(dir.join(out))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vigil")
}

fn wait_bounded(mut child: Child, limit: Duration) -> (Output, Duration) {
    let t = Instant::now();
    loop {
        if child.try_wait().expect("wait for vigil").is_some() {
            return (child.wait_with_output().unwrap(), t.elapsed());
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "vigil still running after {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "vigil failed ({}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

/// The eve.json lines of the same run written to a file.
fn file_lines(dir: &Path) -> Vec<String> {
    let (o, _) = run_vigil(
        dir,
        "file",
        "outputs:\n  - eve-log:\n      filetype: regular\n",
        Duration::from_secs(60),
    );
    assert_ok(&o);
    let eve = std::fs::read_to_string(dir.join("file/eve.json")).unwrap();
    let lines: Vec<String> = eve.lines().map(str::to_string).collect();
    assert!(lines.len() > 5, "the demo gave {} EVE lines", lines.len());
    lines
}

fn redis_config(port: u16, body: &str) -> String {
    format!("outputs:\n  - eve-log:\n      filetype: redis\n      redis:\n        server: 127.0.0.1\n        port: {port}\n{body}")
}

/// A Redis list, whole.
fn list(con: &mut redis::Connection, key: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query(con)
        .unwrap()
}

/// `key: value` pairs from stats.log's table.
fn stats_value(dir: &Path, out: &str, key: &str) -> u64 {
    let log = std::fs::read_to_string(dir.join(out).join("stats.log")).unwrap();
    log.lines()
        .find(|l| l.split('|').next().map(str::trim) == Some(key))
        .and_then(|l| l.rsplit('|').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{key} missing from stats.log:\n{log}"))
}

/// Every mode delivers exactly the lines eve.json gets, in order: list
/// (LPUSH, pipelined), rpush (one command per record; also with a queue of
/// one record, which then waits for room instead of dropping), channel (a
/// subscriber connected before the run) and stream (XADD, field `eve`).
#[test]
fn redis_modes_carry_the_same_records_as_eve_json() {
    if !can_run("redis_modes_carry_the_same_records_as_eve_json") {
        return;
    }
    let _serial = heavy();
    let d = tmpdir("modes");
    let want = file_lines(&d);
    let n = want.len() as u64;
    let server = RedisServer::start(free_port(), &d);
    let mut con = server.connect();
    let limit = Duration::from_secs(60);

    // list = LPUSH: newest first in the list.
    let (o, _) = run_vigil(
        &d,
        "list",
        &redis_config(
            server.port,
            "        mode: list\n        key: eve-list\n        pipelining:\n          enabled: yes\n          batch-size: 3\n",
        ),
        limit,
    );
    assert_ok(&o);
    assert!(
        !d.join("list/eve.json").exists(),
        "filetype redis wrote eve.json"
    );
    let mut got: Vec<String> = list(&mut con, "eve-list");
    got.reverse();
    assert_eq!(got, want);
    assert_eq!(stats_value(&d, "list", "eve.redis.written"), n);
    assert_eq!(stats_value(&d, "list", "eve.redis.dropped"), 0);
    assert_eq!(stats_value(&d, "list", "eve.redis.errors"), 0);
    assert_eq!(stats_value(&d, "list", "eve.redis.reconnects"), 0);

    // rpush, no pipelining: oldest first.
    let (o, _) = run_vigil(
        &d,
        "rpush",
        &redis_config(server.port, "        mode: rpush\n        key: eve-rpush\n"),
        limit,
    );
    assert_ok(&o);
    let got: Vec<String> = list(&mut con, "eve-rpush");
    assert_eq!(got, want);

    // A queue of one record with Redis up: records wait for room, none
    // is dropped.
    let (o, _) = run_vigil(
        &d,
        "tiny",
        &redis_config(
            server.port,
            "        mode: rpush\n        key: eve-tiny\n        buffer-size: 1\n",
        ),
        limit,
    );
    assert_ok(&o);
    let got: Vec<String> = list(&mut con, "eve-tiny");
    assert_eq!(got, want);
    assert_eq!(stats_value(&d, "tiny", "eve.redis.dropped"), 0);

    // channel = PUBLISH, to a subscriber connected before the run.
    let sub_con = server.connect();
    let subscriber = std::thread::spawn(move || {
        let mut sub_con = sub_con;
        sub_con
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut ps = sub_con.as_pubsub();
        ps.subscribe("eve-channel").unwrap();
        let mut got = Vec::new();
        let t = Instant::now();
        while (got.len() as u64) < n && t.elapsed() < Duration::from_secs(60) {
            match ps.get_message() {
                Ok(m) => got.push(m.get_payload::<String>().unwrap()),
                Err(e) if e.is_timeout() => {}
                Err(e) => panic!("subscriber: {e}"),
            }
        }
        got
    });
    // Bounded wait until the subscription is in place.
    let t = Instant::now();
    loop {
        let (_, subs): (String, u64) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg("eve-channel")
            .query(&mut con)
            .unwrap();
        if subs == 1 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no subscriber");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (o, _) = run_vigil(
        &d,
        "channel",
        &redis_config(server.port, "        mode: channel\n        key: eve-channel\n        pipelining:\n          enabled: yes\n"),
        limit,
    );
    assert_ok(&o);
    assert_eq!(subscriber.join().unwrap(), want);

    // stream = XADD key MAXLEN ~ 100000 * eve <record>.
    let (o, _) = run_vigil(
        &d,
        "stream",
        &redis_config(
            server.port,
            "        mode: stream\n        key: eve-stream\n",
        ),
        limit,
    );
    assert_ok(&o);
    let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg("eve-stream")
        .arg("-")
        .arg("+")
        .query(&mut con)
        .unwrap();
    let got: Vec<String> = entries
        .into_iter()
        .map(|(_, mut fields)| {
            assert_eq!(fields.len(), 1, "{fields:?}");
            let (f, v) = fields.remove(0);
            assert_eq!(f, "eve");
            v
        })
        .collect();
    assert_eq!(got, want);
}

/// Redis unreachable for the whole run: the run still ends (within the
/// flush timeout plus a margin), exits 0, and counts every record as
/// dropped, with errors.
#[test]
fn redis_down_run_finishes_and_counts_drops() {
    if !can_run("redis_down_run_finishes_and_counts_drops") {
        return;
    }
    let d = tmpdir("down");
    let n = file_lines(&d).len() as u64;
    let port = free_port();
    let (o, took) = run_vigil(
        &d,
        "down",
        &redis_config(port, "        key: k\n        flush-timeout: 1\n"),
        Duration::from_secs(60),
    );
    assert_ok(&o);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_eq!(stats_value(&d, "down", "eve.redis.written"), 0);
    assert_eq!(stats_value(&d, "down", "eve.redis.dropped"), n);
    assert!(stats_value(&d, "down", "eve.redis.errors") > 0);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not delivered to Redis"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Redis comes up while the writer is retrying: what fit in the buffer
/// (4 records, plus the one in hand if the writer took it in time) is
/// delivered after the reconnect,
/// the rest was dropped and counted; written + dropped = all records.
#[test]
fn redis_started_late_gets_the_buffered_records() {
    if !can_run("redis_started_late_gets_the_buffered_records") {
        return;
    }
    let d = tmpdir("late");
    let want = file_lines(&d);
    let n = want.len() as u64;
    let port = free_port();
    let (pcap, rules) = demo_inputs(&d);
    let child = spawn_vigil(
        &d,
        "late",
        &redis_config(
            port,
            "        mode: rpush\n        key: late\n        buffer-size: 4\n        flush-timeout: 15\n",
        ),
        &pcap,
        &rules,
        &[],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let server = RedisServer::start(port, &d);
    let (o, took) = wait_bounded(child, Duration::from_secs(60));
    assert_ok(&o);
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let written = stats_value(&d, "late", "eve.redis.written");
    let dropped = stats_value(&d, "late", "eve.redis.dropped");
    assert_eq!(written + dropped, n);
    // The buffer's 4, plus one when the writer took the first record
    // before the buffer filled.
    assert!((4..=5).contains(&written), "written {written}");
    assert!(stats_value(&d, "late", "eve.redis.errors") > 0);
    assert!(stats_value(&d, "late", "eve.redis.reconnects") >= 1);
    let got: Vec<String> = list(&mut server.connect(), "late");
    // The first records, in order: later ones found the buffer full (but
    // for one that found room after the writer took the first).
    assert_eq!(got.len() as u64, written);
    assert_eq!(got[..4], want[..4]);
    let mut at = 0;
    for g in &got {
        at += want[at..]
            .iter()
            .position(|w| w == g)
            .unwrap_or_else(|| panic!("{g} out of order or not in eve.json"));
        at += 1;
    }
}

/// Redis killed mid-run, after the writer connected and before the
/// records come (offline, EVE lines reach the writer at the end): the
/// round trip fails, reconnecting fails until the flush timeout, the run
/// ends with exit 0 and every record counted as dropped.
#[test]
fn redis_killed_mid_run_run_finishes_and_counts_drops() {
    if !can_run("redis_killed_mid_run_run_finishes_and_counts_drops") {
        return;
    }
    let d = tmpdir("killed");
    let (pcap, rules, speed) = slow_inputs(&d, 3.0);
    // The same capture to a file: how many records there are.
    let file = spawn_vigil(
        &d,
        "file",
        "outputs:\n  - eve-log:\n      filetype: regular\n",
        &pcap,
        &rules,
        &[],
    );
    let (o, _) = wait_bounded(file, Duration::from_secs(60));
    assert_ok(&o);
    let n = std::fs::read_to_string(d.join("file/eve.json"))
        .unwrap()
        .lines()
        .count() as u64;
    let mut server = RedisServer::start(free_port(), &d);
    let speed = format!("{speed}");
    let child = spawn_vigil(
        &d,
        "killed",
        &redis_config(server.port, "        key: k\n        flush-timeout: 1\n"),
        &pcap,
        &rules,
        &["--replay-speed", &speed],
    );
    // Wait (bounded) until vigil's writer is connected, then kill Redis
    // while the replay is still in its quiet gap.
    server.wait_clients(2, Duration::from_secs(10));
    let _ = server.child.kill();
    let _ = server.child.wait();
    let (o, took) = wait_bounded(child, Duration::from_secs(60));
    assert_ok(&o);
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(stats_value(&d, "killed", "eve.redis.written"), 0);
    assert_eq!(stats_value(&d, "killed", "eve.redis.dropped"), n);
    assert!(stats_value(&d, "killed", "eve.redis.errors") > 0);
}

/// A bad option stops the run at start, naming the option.
#[test]
fn bad_redis_options_are_errors_at_start() {
    let d = tmpdir("bad");
    for (body, what) in [
        ("        mode: queue\n", "outputs.eve-log.redis.mode"),
        ("        key:\n", "outputs.eve-log.redis.key"),
    ] {
        let (o, _) = run_vigil(
            &d,
            "bad",
            &redis_config(free_port(), body),
            Duration::from_secs(60),
        );
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(what), "{err}");
    }
    let (o, _) = run_vigil(
        &d,
        "bad",
        "outputs:\n  - eve-log:\n      filetype: redis\n      redis:\n        port: 99999\n",
        Duration::from_secs(60),
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("outputs.eve-log.redis.port: '99999'"));
}

/// `--slice 0/2` and `1/2` with `--sensor-redis`: two sensors that
/// share the events of host scopes through Redis Streams write, between
/// them, the single run's detector and xbits alerts (and every other
/// alert of rules without cross-flow counting).
#[test]
fn two_sensors_share_host_events_through_redis() {
    if !can_run("two_sensors_share_host_events_through_redis") {
        return;
    }
    let _serial = heavy();
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    let pcap = shared.join("pcaps/dev/dev-mix.pcap");
    let rules = shared.join("rules/et-open/emerging.rules");
    if !pcap.is_file() || !rules.is_file() {
        eprintln!("skipping: ../shared dev-mix or ET Open not found");
        return;
    }
    let d = tmpdir("sensors");
    let alerts = |out: &str| -> Vec<String> {
        std::fs::read_to_string(d.join(out).join("eve.json"))
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"event_type\":\"alert\""))
            .map(str::to_string)
            .collect()
    };
    let one = spawn_vigil(&d, "one", "", &pcap, &rules, &["--workers", "2"]);
    assert_ok(&wait_bounded(one, Duration::from_secs(300)).0);
    let server = RedisServer::start(free_port(), &d);
    let link = format!("127.0.0.1:{}", server.port);
    let sensors: Vec<Child> = (0..2)
        .map(|k| {
            let spec = format!("{k}/2");
            spawn_vigil(
                &d,
                &format!("s{k}"),
                "",
                &pcap,
                &rules,
                &["--workers", "2", "--slice", &spec, "--sensor-redis", &link],
            )
        })
        .collect();
    let mut union = Vec::new();
    for (k, c) in sensors.into_iter().enumerate() {
        assert_ok(&wait_bounded(c, Duration::from_secs(300)).0);
        let out = format!("s{k}");
        assert_eq!(stats_value(&d, &out, "sensors.peers_lost"), 0);
        assert_eq!(stats_value(&d, &out, "sensors.entries_malformed"), 0);
        assert!(stats_value(&d, &out, "sensors.events_merged") > 1000);
        union.extend(alerts(&out));
    }
    // Host-scoped: the detectors (gid 9000) and rules with xbits.
    let host = |v: &[String]| -> Vec<String> {
        let mut h: Vec<String> = v
            .iter()
            .filter(|l| l.contains("\"gid\":9000") || l.contains("ET.") && l.contains("xbits"))
            .cloned()
            .collect();
        h.sort();
        h
    };
    let (got, want) = (host(&union), host(&alerts("one")));
    assert!(want.len() >= 30, "{} host-scoped alerts", want.len());
    let matched = got.iter().filter(|l| want.contains(l)).count() as f64;
    let (recall, precision) = (
        matched / want.len() as f64,
        matched / got.len().max(1) as f64,
    );
    eprintln!(
        "host-scoped alerts: single {} sensors {} recall {recall:.4} precision {precision:.4}",
        want.len(),
        got.len()
    );
    assert!(recall >= 0.99 && precision >= 0.99);
    // In fact exactly the same lines.
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&d);
}

/// Redis killed while two linked sensors run: both finish, give up on
/// each other after the peer timeout and count it; analysis goes on
/// with local events.
#[test]
fn sensors_finish_when_redis_dies() {
    if !can_run("sensors_finish_when_redis_dies") {
        return;
    }
    let d = tmpdir("sensors-killed");
    let (pcap, rules, speed) = slow_inputs(&d, 3.0);
    let mut server = RedisServer::start(free_port(), &d);
    let cfg = format!(
        "sensors:\n  redis:\n    server: 127.0.0.1\n    port: {}\n    peer-timeout: 2\n",
        server.port
    );
    let speed = format!("{speed}");
    let sensors: Vec<Child> = (0..2)
        .map(|k| {
            let spec = format!("{k}/2");
            spawn_vigil(
                &d,
                &format!("s{k}"),
                &cfg,
                &pcap,
                &rules,
                &["--slice", &spec, "--replay-speed", &speed],
            )
        })
        .collect();
    // Both connected (publisher and reader each), then Redis goes away
    // while the replay is in its quiet gap.
    server.wait_clients(3, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1500));
    let _ = server.child.kill();
    let _ = server.child.wait();
    for (k, c) in sensors.into_iter().enumerate() {
        let (o, took) = wait_bounded(c, Duration::from_secs(60));
        assert_ok(&o);
        assert!(took < Duration::from_secs(40), "took {took:?}");
        let out = format!("s{k}");
        let lost = stats_value(&d, &out, "sensors.peers_lost")
            + stats_value(&d, &out, "sensors.entries_not_published");
        assert!(lost > 0, "sensor {k} counted no loss");
    }
}
