//! The YAML configuration reader (crates/vigil/src/config.rs, compiled in
//! here because the vigil crate is a binary) on hostile text: the input is
//! the config file (written to a scratch directory, as `Config::load` reads
//! paths), then every accessor the run uses is called, and a `--set`
//! override made of the input's first line is applied.
//!
//! Invariants: no panic (errors are `Err`, naming the file); after
//! `--set a.b=v` succeeds, `get_str("a.b")` is `v`.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/vigil/src/config.rs"]
mod config;

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;

fn scratch() -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    base.join(format!("vigil-fuzz-yaml-{}", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let dir = scratch();
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("vigil.yaml");
    std::fs::write(&path, data).expect("write scratch config");
    if let Ok(mut c) = config::Config::load(&path) {
        for key in [
            "vars.address-groups.HOME_NET",
            "default-rule-path",
            "classification-file",
            "flow.memcap",
            "stream.reassembly.depth",
        ] {
            let _ = c.get(key);
            let _ = c.get_str(key);
        }
        let _ = c.string_map("vars.address-groups");
        let _ = c.string_map("vars.port-groups");
        let _ = c.rule_files();
        let _ = c.output("eve-log");
        let _ = c.output("fast");
        for flag in [
            "payload",
            "payload-printable",
            "packet",
            "http-body",
            "tagged-packets",
        ] {
            let _ = c.eve_alert_flag(flag);
            let _ = c.eve_alert_flag_default_on(flag);
        }
        for t in ["alert", "drop", "http", "dns", "tls", "flow", "stats"] {
            let _ = c.eve_logs_type(t);
        }
        let _ = c.eve_drop_log();
        let _ = c.eve_alert_xff();
        let _ = c.flow_memcap();
        let text = String::from_utf8_lossy(data);
        if let Some(line) = text.lines().next() {
            if let Some(v) = line.get(..64.min(line.len())) {
                let _ = config::truthy(v);
                let _ = config::parse_size(v);
            }
            let kv = format!("fuzz.key={line}");
            if c.set(&kv).is_ok() {
                assert_eq!(c.get_str("fuzz.key").as_deref(), Some(line));
            }
        }
    }
    let _ = std::fs::remove_file(&path);
});
