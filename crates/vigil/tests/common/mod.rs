//! What the protocol end-to-end tests share: a scratch directory with a
//! crafted capture and a rule file, the `vigil` binary run over them
//! (checksums off, optionally an eve-log `types` list), and the EVE
//! events read back.

use std::path::PathBuf;
use std::process::Command;

use vigil_craft::{write_pcap_file, TimedFrame};

/// One run's output.
pub struct Run {
    /// The scratch directory (capture, rules, config, `out/`).
    #[allow(dead_code)]
    pub dir: PathBuf,
    /// `eve.json` as written.
    #[allow(dead_code)]
    pub eve: String,
    /// Its events, parsed.
    #[allow(dead_code)]
    pub events: Vec<serde_json::Value>,
}

/// Runs `vigil run -r` over `frames` with `rules` in a directory of its
/// own (named after `tag` and the process); with `types`, an eve-log
/// config selecting those record types. Panics when vigil fails.
#[allow(dead_code)]
pub fn run(tag: &str, frames: &[TimedFrame], rules: &str, types: Option<&[&str]>) -> Run {
    run_with(tag, frames, rules, types, "", &[])
}

/// [`run`] with `yaml` (such as a `vars:` section) at the top of the
/// config and more command-line arguments.
#[allow(dead_code)]
pub fn run_with(
    tag: &str,
    frames: &[TimedFrame],
    rules: &str,
    types: Option<&[&str]>,
    yaml: &str,
    args: &[&str],
) -> Run {
    let dir = std::env::temp_dir().join(format!("vigil-{tag}-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join(format!("{tag}.pcap"));
    write_pcap_file(&pcap, frames).unwrap();
    let rule_file = dir.join(format!("{tag}.rules"));
    std::fs::write(&rule_file, rules).unwrap();
    let out = dir.join("out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.arg("run");
    if types.is_some() || !yaml.is_empty() {
        let mut yaml = format!("%YAML 1.1\n---\n{yaml}");
        if let Some(types) = types {
            yaml.push_str(
                "outputs:\n  - eve-log:\n      enabled: yes\n      filetype: regular\n      filename: eve.json\n      types:\n",
            );
            for t in types {
                yaml.push_str(&format!("        - {t}\n"));
            }
        }
        let cfg = dir.join("vigil.yaml");
        std::fs::write(&cfg, yaml).unwrap();
        cmd.arg("-c").arg(&cfg);
    }
    let o = cmd
        .arg("-r")
        .arg(&pcap)
        .arg("-S")
        .arg(&rule_file)
        .arg("-l")
        .arg(&out)
        .args(["-k", "none"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let eve = std::fs::read_to_string(out.join("eve.json")).unwrap();
    let events = eve
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Run { dir, eve, events }
}

/// A counter's total in a stats.log text (`name | Total | value`); `None`
/// when absent (stats.log leaves out counters that are 0).
#[allow(dead_code)]
pub fn stat(stats_log: &str, name: &str) -> Option<u64> {
    stats_log.lines().find_map(|l| {
        let mut parts = l.split('|').map(str::trim);
        (parts.next()? == name)
            .then(|| parts.nth(1)?.parse().ok())
            .flatten()
    })
}

/// The signature ids of the alerts among `events`, sorted.
#[allow(dead_code)]
pub fn alert_sids(events: &[serde_json::Value]) -> Vec<u64> {
    let mut sids: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .filter_map(|e| e["alert"]["signature_id"].as_u64())
        .collect();
    sids.sort();
    sids
}
