//! `vigil rules check` through the real binary: the per-problem line
//! format, the summary counts per state, the JSON summary, the exit status
//! (non-zero only for syntax errors) and `threshold-file` in `vigil run`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-rc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn vigil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .output()
        .expect("run vigil")
}

const MIXED: &str = "\
alert tcp any any -> any any (msg:\"ok\"; content:\"a\"; sid:1; rev:1;)
alert gtp any any -> any any (msg:\"app\"; gtp_type:1; sid:2;)
alert tcp any any -> any any (msg:\"bad pcre\"; pcre:\"/(/\"; sid:3;)
alert tcp any any -> any any (msg:\"syntax\"; content:\"a\"; depth:0x; sid:4;)
alert tcp any any -> any any (msg:\"gated\"; content:\"a\"; requires: version >= 99; sid:5;)
alert tcp any any -> any any (msg:\"dup\"; content:\"b\"; sid:1; rev:2;)
alert tcp any any -> any any (msg:\"lua\"; lua:script.lua; sid:6;)
# a comment
alert tcp any any -> any any (msg:\"ref\"; content:\"c\"; reference:nosuchsystem,abc; sid:7;)
";

#[test]
fn text_report_states_and_exit_status() {
    let d = tmpdir("text");
    let f = d.join("mixed.rules");
    std::fs::write(&f, MIXED).unwrap();
    let name = f.to_str().unwrap();
    let out = vigil(&["rules", "check", name]);
    let text = String::from_utf8_lossy(&out.stdout);
    // A syntax error: non-zero exit.
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = |n: usize, rest: &str| format!("{name}:{n}: {rest}");
    for want in [
        line(2, "sid 2: keyword gtp_type: not yet evaluable: "),
        line(3, "sid 3: keyword pcre: "),
        line(4, "sid 4: keyword depth: "),
        line(5, "sid 5: keyword requires: requirement not met"),
        line(1, "sid 1: keyword sid: duplicate signature 1:1 (rev 1)"),
        line(7, "sid 6: keyword lua: not yet evaluable: "),
        line(
            9,
            "sid 7: keyword reference: warning: unknown reference system 'nosuchsystem'",
        ),
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&want)),
            "missing {want:?} in\n{text}"
        );
    }
    assert!(
        text.contains(
            "8 rules: 2 ok, 2 not yet evaluable, 1 invalid, 1 requires not met, 1 duplicate, 1 syntax errors"
        ),
        "{text}"
    );
    // The gtp rule also needs the gtp parser.
    assert!(text.contains("also needs protocol gtp"), "{text}");

    // Without the syntax error the exit status is 0, whatever else fails.
    let g = d.join("nosyntax.rules");
    let no_syntax: String = MIXED
        .lines()
        .filter(|l| !l.contains("sid:4;"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&g, no_syntax).unwrap();
    let out = vigil(&["rules", "check", "--quiet", g.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // --quiet keeps errors only.
    assert!(!text.contains("not yet evaluable:"), "{text}");
    assert!(text.contains("keyword pcre"), "{text}");
}

#[test]
fn json_summary() {
    let d = tmpdir("json");
    let f = d.join("mixed.rules");
    std::fs::write(&f, MIXED).unwrap();
    let out = vigil(&["rules", "check", "--json", "--timings", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let s = &v["summary"];
    assert_eq!(s["rules"], 8);
    assert_eq!(s["ok"], 2);
    assert_eq!(s["not_evaluable"], 2);
    assert_eq!(s["syntax_errors"], 1);
    assert_eq!(s["invalid"], 1);
    assert_eq!(s["requires_unmet"], 1);
    assert_eq!(s["duplicates"], 1);
    assert_eq!(s["not_evaluable_by_keyword"]["gtp_type"], 1);
    assert_eq!(s["not_evaluable_by_keyword"]["protocol gtp"], 1);
    assert_eq!(s["not_evaluable_by_keyword"]["lua"], 1);
    assert_eq!(s["not_evaluable_only_by_keyword"]["lua"], 1);
    assert_eq!(s["invalid_by_keyword"]["pcre"], 1);
    assert!(s["timings"]["total_ms"].as_f64().is_some());
    assert_eq!(s["files"][0]["rules"], 8);
    let problems = v["problems"].as_array().unwrap();
    let p = problems
        .iter()
        .find(|p| p["state"] == "syntax_error")
        .expect("syntax problem");
    assert_eq!(p["line"], 4);
    assert_eq!(p["sid"], 4);
    assert_eq!(p["keyword"], "depth");
}

#[test]
fn threshold_file_config_key_applies() {
    use vigil_craft::{eth_ipv4_udp, write_pcap_file};
    let d = tmpdir("thr");
    // Five UDP datagrams: every one is inspected as a packet.
    let frames: Vec<((i64, u32), Vec<u8>)> = (0..5)
        .map(|i| {
            (
                (i, 0),
                eth_ipv4_udp(
                    "10.0.0.1".parse().unwrap(),
                    40000,
                    "192.0.2.80".parse().unwrap(),
                    53,
                    b"probe",
                ),
            )
        })
        .collect();
    let pcap = d.join("in.pcap");
    write_pcap_file(&pcap, &frames).unwrap();
    std::fs::write(
        d.join("r.rules"),
        "alert udp any any -> any any (msg:\"probe\"; content:\"probe\"; sid:20;)\n\
         alert udp any any -> any any (msg:\"also\"; content:\"robe\"; sid:21;)\n",
    )
    .unwrap();
    std::fs::write(
        d.join("threshold.config"),
        "threshold gen_id 1, sig_id 20, type limit, track by_src, count 2, seconds 60\n\
         suppress gen_id 1, sig_id 21\n",
    )
    .unwrap();
    std::fs::write(d.join("vigil.yaml"), "threshold-file: threshold.config\n").unwrap();
    let out = vigil(&[
        "run",
        "-c",
        d.join("vigil.yaml").to_str().unwrap(),
        "-r",
        pcap.to_str().unwrap(),
        "-S",
        d.join("r.rules").to_str().unwrap(),
        "-l",
        d.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let eve = std::fs::read_to_string(d.join("eve.json")).unwrap();
    let sids: Vec<u64> = eve
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event_type"] == "alert")
        .map(|v| v["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    assert_eq!(sids, vec![20, 20], "{eve}");
}
