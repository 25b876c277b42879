//! `--prefilter`: every engine (and `auto`) gives byte-identical output on
//! the demo capture with the demo rules; `auto` reports its choices and
//! writes its calibration cache; `vigil bench prefilter --quick` is not
//! run here (it measures), only its argument handling.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-pf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn vigil(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("run vigil")
}

fn demo_rules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../demo/demo.rules")
}

#[test]
fn every_engine_gives_the_same_output() {
    let dir = tmpdir("same");
    let pcap = dir.join("demo.pcap");
    vigil_craft::demo::write_demo_pcap(&pcap).unwrap();
    let rules = demo_rules();
    let mut engines = vec!["ac", "ac-full", "ac-compact", "wm", "e2xb", "bmh", "auto"];
    if cfg!(feature = "hyperscan") {
        engines.push("hs");
    }
    let mut first: Option<(String, String)> = None;
    for e in engines {
        let out = dir.join(e);
        let o = vigil(
            &[
                "run",
                "-r",
                pcap.to_str().unwrap(),
                "-S",
                rules.to_str().unwrap(),
                "-l",
                out.to_str().unwrap(),
                "--prefilter",
                e,
                "--workers",
                "2",
            ],
            &dir.join("cache"),
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{e}: {stderr}");
        assert!(stderr.contains(&format!("prefilter {e}:")), "{e}: {stderr}");
        let eve = std::fs::read_to_string(out.join("eve.json")).unwrap();
        let fast = std::fs::read_to_string(out.join("fast.log")).unwrap();
        assert!(eve.contains("\"event_type\":\"alert\""), "{e}: no alerts");
        let stats = std::fs::read_to_string(out.join("stats.log")).unwrap();
        assert!(stats.contains("vigil.prefilter"), "{e}: {stats}");
        match &first {
            None => first = Some((eve, fast)),
            Some((e0, f0)) => {
                assert!(eve == *e0, "{e}: eve.json differs from ac's");
                assert!(fast == *f0, "{e}: fast.log differs from ac's");
            }
        }
    }
    // auto wrote its calibration cache under $XDG_CACHE_HOME/vigil.
    let cached: Vec<_> = std::fs::read_dir(dir.join("cache/vigil"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("prefilter-"))
        .collect();
    assert_eq!(cached.len(), 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unknown_or_missing_engines_are_errors() {
    let dir = tmpdir("bad");
    let pcap = dir.join("demo.pcap");
    vigil_craft::demo::write_demo_pcap(&pcap).unwrap();
    let rules = demo_rules();
    let mut bad = vec!["nope"];
    if !cfg!(feature = "hyperscan") {
        bad.push("hs");
    }
    for e in bad {
        let o = vigil(
            &[
                "run",
                "-r",
                pcap.to_str().unwrap(),
                "-S",
                rules.to_str().unwrap(),
                "-l",
                dir.join("out").to_str().unwrap(),
                "--prefilter",
                e,
            ],
            &dir.join("cache"),
        );
        assert!(!o.status.success(), "{e} accepted");
        assert!(String::from_utf8_lossy(&o.stderr).contains("--prefilter"));
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// With no `--prefilter`, a default build runs Hyperscan (the fast path is
/// the default); a build without the feature runs `ac` and says why.
#[test]
fn the_default_prefilter_is_hyperscan_when_built_in() {
    let dir = tmpdir("default");
    let pcap = dir.join("demo.pcap");
    vigil_craft::demo::write_demo_pcap(&pcap).unwrap();
    let rules = demo_rules();
    let out = dir.join("out");
    let o = vigil(
        &[
            "run",
            "-r",
            pcap.to_str().unwrap(),
            "-S",
            rules.to_str().unwrap(),
            "-l",
            out.to_str().unwrap(),
        ],
        &dir.join("cache"),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let stats = std::fs::read_to_string(out.join("stats.log")).unwrap();
    if cfg!(feature = "hyperscan") {
        assert!(stderr.contains("prefilter hs:"), "{stderr}");
        assert!(!stderr.contains("built without Hyperscan"), "{stderr}");
        assert!(
            stats.contains("vigil.prefilter") && stats.contains("hs"),
            "{stats}"
        );
    } else {
        assert!(stderr.contains("prefilter ac:"), "{stderr}");
        assert!(stderr.contains("built without Hyperscan"), "{stderr}");
    }
}
