//! Shared helpers: rules from text, a capture written to a temporary pcap,
//! the offline pipeline run over it with alerts collected.

#![allow(dead_code)]

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;

use vigil_craft::{PcapWriter, TimedFrame, LINKTYPE_ETHERNET};
use vigil_detect::{CompiledRule, DetectEngine};
use vigil_engine::{run_offline, AlertOut, AlertSink, EngineConfig, RunStats};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Vars};
use vigil_source::PcapSource;

/// The rules of `rules`, one a line (blank lines skipped).
fn parse(rules: &str) -> Vec<vigil_rules::Rule> {
    let vars = Vars::default();
    rules
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|r| parse_rule(r, &vars, Origin::default()).unwrap_or_else(|e| panic!("{r}: {e}")))
        .collect()
}

pub fn engine(rules: &str) -> Arc<DetectEngine> {
    let (e, report) = DetectEngine::build(&parse(rules), &ClassificationConfig::default());
    assert!(report.skipped.is_empty(), "skipped: {:?}", report.skipped);
    Arc::new(e)
}

/// [`engine`] with the prefilter engine `kind`; `split`: the groups'
/// patterns split as the CPU path has them by default (a prefilter
/// device is given one engine per group).
pub fn engine_with(
    rules: &str,
    kind: vigil_prefilter::EngineKind,
    split: bool,
) -> Arc<DetectEngine> {
    let mode = if split {
        vigil_prefilter::SplitMode::Full
    } else {
        vigil_prefilter::SplitMode::Off
    };
    engine_with_mode(rules, kind, mode)
}

/// [`engine_with`] with the groups' patterns split as `mode` says.
pub fn engine_with_mode(
    rules: &str,
    kind: vigil_prefilter::EngineKind,
    mode: vigil_prefilter::SplitMode,
) -> Arc<DetectEngine> {
    let split = mode != vigil_prefilter::SplitMode::Off;
    let mut selector = vigil_prefilter::Selector::fixed(kind);
    selector.set_split_mode(mode);
    let (e, report) = DetectEngine::build_with(
        &parse(rules),
        &ClassificationConfig::default(),
        &mut selector,
    );
    assert!(report.skipped.is_empty(), "skipped: {:?}", report.skipped);
    assert_eq!(e.split_groups(), split);
    Arc::new(e)
}

/// One alert as a test looks at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub sid: u32,
    pub stream: bool,
    pub pseudo: bool,
    pub index: u64,
    pub to_server: Option<bool>,
    pub payload: Option<Vec<u8>>,
}

#[derive(Default)]
pub struct Collect(pub Vec<Seen>);

impl AlertSink for Collect {
    fn alert(&mut self, a: &AlertOut, r: &CompiledRule) -> std::io::Result<()> {
        self.0.push(Seen {
            sid: r.sid,
            stream: a.stream,
            pseudo: a.pseudo,
            index: a.index,
            to_server: a.to_server,
            payload: a.payload.as_deref().map(<[u8]>::to_vec),
        });
        Ok(())
    }
}

pub fn write_pcap(name: &str, frames: impl IntoIterator<Item = TimedFrame>) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("vigil-engine-{}-{name}.pcap", std::process::id()));
    let mut w = PcapWriter::new(
        BufWriter::new(File::create(&path).expect("create pcap")),
        LINKTYPE_ETHERNET,
    )
    .expect("pcap header");
    for (ts, f) in frames {
        w.write_packet(ts, &f).expect("write packet");
    }
    w.flush().expect("flush");
    path
}

pub fn run_pcap(
    path: &std::path::Path,
    detect: Arc<DetectEngine>,
    cfg: &EngineConfig,
) -> (Vec<Seen>, RunStats) {
    let src = PcapSource::open(path).expect("open pcap");
    let mut sink = Collect::default();
    let stats = run_offline(src, detect, cfg, &mut sink, &mut |_, _| {}).expect("run");
    (sink.0, stats)
}

pub fn run(
    name: &str,
    frames: impl IntoIterator<Item = TimedFrame>,
    rules: &str,
    cfg: &EngineConfig,
) -> (Vec<Seen>, RunStats) {
    let path = write_pcap(name, frames);
    let out = run_pcap(&path, engine(rules), cfg);
    let _ = std::fs::remove_file(&path);
    out
}

pub fn sids(v: &[Seen]) -> Vec<u32> {
    v.iter().map(|s| s.sid).collect()
}

/// A TCP SYN to port 80 in two IPv4 fragments: the first one twice
/// (overlap), then the second.
pub fn fragmented_syn() -> Vec<vigil_craft::TimedFrame> {
    let (src, dst): (std::net::IpAddr, std::net::IpAddr) =
        ("10.5.0.1".parse().unwrap(), "10.5.0.2".parse().unwrap());
    let seg = vigil_craft::PacketBuilder::default().mss(1460).tcp_segment(
        src,
        33000,
        dst,
        80,
        77,
        0,
        vigil_craft::SYN,
        &[],
    );
    let b = vigil_craft::PacketBuilder::default().ip_id(4242);
    let first = b
        .clone()
        .mf(true)
        .frag_offset(0)
        .eth_ip(src, dst, 6, &seg[..16]);
    let second = b.clone().frag_offset(2).eth_ip(src, dst, 6, &seg[16..]);
    let t = (1_700_000_100, 0);
    vec![
        (t, first.clone()),
        (vigil_craft::add_us(t, 1), first),
        (vigil_craft::add_us(t, 2), second),
    ]
}
