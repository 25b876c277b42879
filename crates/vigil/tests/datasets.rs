//! `dataset` and `datarep` end to end: a crafted capture through the real
//! `vigil` binary to eve.json, with set files read at start and written
//! at exit, the same output for any worker count.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use vigil_craft::{write_pcap_file, TcpSession, TimedFrame};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-ds-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn b64(s: &str) -> String {
    vigil_detect::dataset::base64_encode(s.as_bytes())
}

/// One HTTP request per flow: (second, client, client port, uri, host,
/// user agent).
type Req<'a> = (i64, &'a str, u16, &'a str, &'a str, &'a str);

fn capture(reqs: &[Req]) -> Vec<TimedFrame> {
    let mut frames = Vec::new();
    for (t, client, port, uri, host, ua) in reqs {
        let req = format!("GET {uri} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\n\r\n");
        let mut s = TcpSession::new(addr(&format!("{client}:{port}")), addr("192.0.2.80:80"))
            .start_at((*t, 0));
        s.handshake()
            .client_send(req.as_bytes())
            .server_send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .close();
        frames.extend(s.into_frames());
    }
    frames
}

/// Runs vigil in `dir` (capture, rules and config already there) with
/// `extra` arguments; returns eve.json and stderr.
fn run(dir: &Path, out: &str, extra: &[&str]) -> (String, String) {
    let out = dir.join(out);
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .arg("run")
        .arg("-c")
        .arg(dir.join("vigil.yaml"))
        .arg("-r")
        .arg(dir.join("in.pcap"))
        .arg("-S")
        .arg(dir.join("ds.rules"))
        .arg("-l")
        .arg(&out)
        .args(["-k", "none"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    (
        std::fs::read_to_string(out.join("eve.json")).unwrap(),
        stderr,
    )
}

/// (sid, client address) of each alert, in output order.
fn alerts(eve: &str) -> Vec<(u64, String)> {
    eve.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event_type"] == "alert")
        .map(|e| {
            (
                e["alert"]["signature_id"].as_u64().unwrap(),
                e["src_ip"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A stats.log counter (stats.log leaves out counters that are 0).
fn stat(dir: &Path, out: &str, k: &str) -> u64 {
    let stats = std::fs::read_to_string(dir.join(out).join("stats.log")).unwrap();
    stats
        .lines()
        .find(|l| l.split('|').next().unwrap().trim() == k)
        .and_then(|l| l.rsplit('|').next())
        .map_or(0, |v| v.trim().parse().unwrap())
}

#[test]
fn sets_reputations_and_state_files_across_flows_and_workers() {
    let d = tmpdir("main");
    let (a, b, c) = ("10.7.0.1", "10.7.0.2", "10.7.0.3");
    let reqs: &[Req] = &[
        // Checked before anything set it: no sid 2.
        (1000, b, 5000, "/check", "plain.example", "alpha"),
        // New user agent: sid 1 (set) alerts.
        (1001, a, 5001, "/set", "plain.example", "alpha"),
        // Another flow, another client: alpha is in the set (sid 2).
        (1002, b, 5002, "/check", "plain.example", "alpha"),
        // A user agent the state file held at start: in the set.
        (1003, c, 5003, "/check", "plain.example", "preloaded"),
        // Not new any more: no sid 1; gamma is.
        (1004, c, 5004, "/set", "plain.example", "alpha"),
        (1005, c, 5005, "/set", "plain.example", "gamma"),
        // Reputation: 90 > 50 (sid 3), 10 == 10 (sid 4), an unknown host
        // neither; sid 6 (>= 91) never.
        (1006, c, 5006, "/x", "bad.example", "delta"),
        (1007, c, 5007, "/x", "good.example", "delta"),
        (1008, c, 5008, "/x", "unknown.example", "delta"),
        // ip.src in an `ip` set loaded from a file (sid 5).
        (1009, "10.9.9.9", 5009, "/x", "plain.example", "delta"),
    ];
    write_pcap_file(&d.join("in.pcap"), &capture(reqs)).unwrap();
    let rules = "\
alert http any any -> any any (msg:\"new UA\"; flow:to_server; http.uri; content:\"/set\"; http.user_agent; dataset:set,ua-seen; sid:1;)
alert http any any -> any any (msg:\"known UA\"; flow:to_server; http.uri; content:\"/check\"; http.user_agent; dataset:isset,ua-seen; sid:2;)
alert http any any -> any any (msg:\"bad host\"; flow:to_server; http.host; datarep:host-rep, >, 50, load hosts.rep, type string; sid:3;)
alert http any any -> any any (msg:\"good host\"; flow:to_server; http.host; datarep:host-rep, ==, 10; sid:4;)
alert http any any -> any any (msg:\"bad ip\"; flow:to_server; ip.src; dataset:isset,bad-ips, type ip, load bad-ips.lst; http.uri; content:\"/x\"; sid:5;)
alert http any any -> any any (msg:\"very bad host\"; flow:to_server; http.host; datarep:host-rep, >=, 91; sid:6;)
alert http any any -> any any (msg:\"undeclared\"; flow:to_server; http.host; dataset:isset,nosuch; sid:9;)
";
    std::fs::write(d.join("ds.rules"), rules).unwrap();
    // Reputations next to the rule file, one bad line among them.
    std::fs::write(
        d.join("hosts.rep"),
        format!(
            "{},90\n{},10\nnot base64!,5\n",
            b64("bad.example"),
            b64("good.example")
        ),
    )
    .unwrap();
    std::fs::write(d.join("bad-ips.lst"), "10.9.9.9\n2001:db8::66\n").unwrap();
    let yaml = format!(
        "%YAML 1.1\n---\ndata-dir: {}\ndatasets:\n  defaults:\n    memcap: 1mb\n  ua-seen:\n    type: string\n    state: ua-seen.lst\n",
        d.join("data").display()
    );
    std::fs::write(d.join("vigil.yaml"), yaml).unwrap();
    let mut first: Option<String> = None;
    for w in ["1", "2"] {
        // The state file as the previous run left it: one value.
        std::fs::create_dir_all(d.join("data")).unwrap();
        std::fs::write(
            d.join("data/ua-seen.lst"),
            format!("{}\n", b64("preloaded")),
        )
        .unwrap();
        let out = format!("out{w}");
        let (eve, stderr) = run(&d, &out, &["--workers", w]);
        assert_eq!(
            alerts(&eve),
            vec![
                (1, a.to_string()),
                (2, b.to_string()),
                (2, c.to_string()),
                (1, c.to_string()),
                (3, c.to_string()),
                (4, c.to_string()),
                (5, "10.9.9.9".to_string()),
            ],
            "workers {w}"
        );
        match &first {
            None => first = Some(eve.clone()),
            Some(f) => assert_eq!(f, &eve, "eve.json differs at {w} workers"),
        }
        // The bad line is reported with its file and line; the rest loaded.
        assert!(
            stderr.contains("hosts.rep:3: dataset host-rep: bad base64"),
            "{stderr}"
        );
        // The undeclared set: an error naming the rule and the keyword
        // (without -v, once).
        assert_eq!(
            stderr
                .matches("ds.rules:7: sid 9: keyword dataset: set 'nosuch' is not declared")
                .count(),
            1,
            "{stderr}"
        );
        // Saved at exit: what was loaded and what the rules added, sorted.
        let saved = std::fs::read_to_string(d.join("data/ua-seen.lst")).unwrap();
        let mut want = [b64("alpha"), b64("gamma"), b64("preloaded")];
        want.sort();
        assert_eq!(saved, want.join("\n") + "\n", "workers {w}");
        assert_eq!(stat(&d, &out, "detect.datasets.added"), 2, "workers {w}");
        assert_eq!(stat(&d, &out, "detect.datasets.memcap_refused"), 0);
        // Every match of the rest of a rule is resolved: sid 1 on the 3
        // /set requests, 2 on the 3 /check, 3, 4 and 6 on all 10, 5 on the
        // 4 /x; all but the 7 alerts failed there.
        assert_eq!(stat(&d, &out, "detect.datasets.events"), 40, "workers {w}");
        assert_eq!(stat(&d, &out, "detect.datasets.failed"), 33, "workers {w}");
    }
}

#[test]
fn memcap_refuses_additions_and_counts_them() {
    let d = tmpdir("memcap");
    let reqs: Vec<Req> = (0..6)
        .map(|i| {
            let ua: &'static str = ["u0", "u1", "u2", "u3", "u4", "u5"][i];
            (
                2000 + i as i64,
                "10.8.0.1",
                6000 + i as u16,
                "/",
                "h.example",
                ua,
            )
        })
        .collect();
    write_pcap_file(&d.join("in.pcap"), &capture(&reqs)).unwrap();
    // Room for two values of 2 bytes (each costs its bytes and 48).
    std::fs::write(
        d.join("ds.rules"),
        "alert http any any -> any any (msg:\"new UA\"; flow:to_server; http.user_agent; dataset:set,uas, type string, save uas.lst, memcap 100; sid:1;)\n",
    )
    .unwrap();
    std::fs::write(
        d.join("vigil.yaml"),
        format!("%YAML 1.1\n---\ndata-dir: {}\n", d.join("data").display()),
    )
    .unwrap();
    for w in ["1", "2"] {
        let out = format!("out{w}");
        let (eve, _) = run(&d, &out, &["--workers", w]);
        assert_eq!(alerts(&eve).len(), 2, "workers {w}");
        assert_eq!(stat(&d, &out, "detect.datasets.added"), 2);
        assert_eq!(stat(&d, &out, "detect.datasets.memcap_refused"), 4);
        let saved = std::fs::read_to_string(d.join("data/uas.lst")).unwrap();
        assert_eq!(saved, format!("{}\n{}\n", b64("u0"), b64("u1")));
    }
}
