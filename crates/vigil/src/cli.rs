//! Command-line interface, with Suricata-familiar flags for `run`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "vigil",
    version,
    about = "Vigil: a parallel, Suricata-compatible network intrusion detection system"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of `Run` does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect a capture (file or directory) with a ruleset and write EVE
    /// JSON, fast.log and stats.log.
    Run(RunArgs),
    /// Rule tools.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Control a running live instance: `vigil ctl reload-rules --pidfile F`.
    #[command(subcommand)]
    Ctl(CtlCommand),
    /// Benchmarks: `vigil bench prefilter --out DIR [--quick]`.
    #[command(subcommand)]
    Bench(crate::bench_cmd::BenchCommand),
}

#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// Reload the rule files and config of a running `vigil run -i`
    /// (sends it SIGUSR2, as Suricata's signal; the old rules stay when
    /// the new ones fail to load).
    ReloadRules(CtlArgs),
    /// Reopen its output files (SIGHUP; what logrotate does).
    ReopenLogs(CtlArgs),
    /// Stop it cleanly (SIGTERM).
    Stop(CtlArgs),
}

#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The pid file the instance was started with (--pidfile).
    #[arg(long, value_name = "FILE", required_unless_present = "pid")]
    pub pidfile: Option<PathBuf>,
    /// Its process id.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,
}

#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Parse and compile rule files; report every problem as
    /// `file:line: sid N: keyword K: message` and a summary of rules ok /
    /// not yet evaluable (by keyword) / failed (by reason). Exits non-zero
    /// only when a rule has a syntax error.
    Check(CheckArgs),
    /// List every rule keyword Vigil knows (and every Suricata 9 keyword
    /// it does not) with its status: supported, parsed (accepted, not
    /// evaluated, with the reason) or unsupported. The output is
    /// docs/keywords.md.
    Keywords(KeywordsArgs),
}

#[derive(Debug, Args)]
pub struct KeywordsArgs {
    /// A JSON array of {name, canonical, kind, status, reason} instead of
    /// the Markdown table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Rule files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Suricata-style YAML config (variables, classification file).
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Override a config value: --set vars.address-groups.HOME_NET=[10.0.0.0/8]
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Machine-readable output: a JSON object with `summary` and `problems`.
    #[arg(long)]
    pub json: bool,
    /// Also measure and print load time: parse, compile, group, total.
    #[arg(long)]
    pub timings: bool,
    /// Print only errors (syntax, invalid) and the summary, not every
    /// not-yet-evaluable rule.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// pcap or pcapng file, or a directory of them (read in name order).
    #[arg(short = 'r', value_name = "PATH", conflicts_with = "interfaces")]
    pub pcap: Option<PathBuf>,
    /// Capture live from this interface (repeatable): one AF_PACKET
    /// TPACKET_V3 ring per worker and interface, joined in a fanout group.
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// Inline (IPS) on NFQUEUE: queue number or range (repeatable; `0:3`
    /// as iptables --queue-balance), one worker per queue. Every packet
    /// is held until its verdict; drop and reject rules drop.
    #[arg(short = 'q', value_name = "QUEUE", conflicts_with_all = ["pcap", "interfaces"])]
    pub nfqueues: Vec<String>,
    /// Inline (IPS) as an AF_PACKET bridge ("bump in the wire"):
    /// `IFACE_A:IFACE_B` (repeatable). Frames that pass inspection are
    /// sent on from A to B and from B to A; drop and reject rules drop.
    /// Fail-closed: nothing passes while Vigil is not running.
    #[arg(
        long = "inline",
        value_name = "IFACE_A:IFACE_B",
        conflicts_with_all = ["pcap", "interfaces", "nfqueues"]
    )]
    pub bridges: Vec<String>,
    /// Live: how the kernel spreads packets over the workers' rings:
    /// hash (symmetric flow hash; default), lb, cpu, qm.
    #[arg(long, value_name = "MODE", default_value = "hash")]
    pub fanout: String,
    /// Live: BPF filter read from a file (else the expression after the
    /// options, as with Suricata).
    #[arg(short = 'F', value_name = "FILE")]
    pub bpf_file: Option<PathBuf>,
    /// Live: BPF filter expression (e.g. `not port 22`).
    #[arg(value_name = "BPF", trailing_var_arg = true)]
    pub bpf: Vec<String>,
    /// Live: ring block size in bytes (a multiple of the page size).
    #[arg(long = "ring-block-size", value_name = "BYTES")]
    pub ring_block_size: Option<usize>,
    /// Live: ring blocks per worker and interface.
    #[arg(long = "ring-blocks", value_name = "N")]
    pub ring_blocks: Option<usize>,
    /// Live: ring frame size hint (bytes).
    #[arg(long = "ring-frame-size", value_name = "BYTES")]
    pub ring_frame_size: Option<usize>,
    /// Live: do not put the interfaces in promiscuous mode.
    #[arg(long = "no-promisc")]
    pub no_promisc: bool,
    /// Write the process id to this file (removed at exit).
    #[arg(long, value_name = "FILE")]
    pub pidfile: Option<PathBuf>,
    /// Serve Prometheus metrics on ADDR:PORT (live runs).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Pace a capture by its timestamps (1: real time, 2: twice as fast;
    /// 0: as fast as possible, the default) and drive timeouts from
    /// that clock.
    #[arg(long = "replay-speed", value_name = "X")]
    pub replay_speed: Option<f64>,
    /// Rule file (repeatable). Replaces the config's rule-files.
    #[arg(short = 'S', value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Rule file added to the config's rule-files (repeatable).
    #[arg(short = 's', value_name = "FILE")]
    pub extra_rules: Vec<PathBuf>,
    /// Output directory (eve.json, fast.log, stats.log).
    #[arg(short = 'l', value_name = "DIR", default_value = ".")]
    pub log_dir: PathBuf,
    /// Suricata-style YAML config.
    #[arg(short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override a config value (repeatable), e.g.
    /// --set vars.address-groups.HOME_NET=[10.0.0.0/8]
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Worker threads (default: number of cores).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Inspect only slice K of N (`0/2`, `1/2`): the flows whose symmetric
    /// flow hash falls in slice K (fragments by address pair, a datagram
    /// rebuilt from fragments by its own flow). N sensors given the same
    /// traffic with slices 0 to N-1 inspect every packet exactly once
    /// between them. Also the config's `vigil.slice: "K/N"`.
    #[arg(long, value_name = "K/N")]
    pub slice: Option<String>,
    /// How flows are spread over the workers of an offline run: balance
    /// (default: each new flow goes to the worker that has been sent the
    /// fewest packets so far, and stays there; output is the same for any
    /// worker count) or static (flow hash modulo workers). Also the
    /// config's `vigil.steering`.
    #[arg(long, value_name = "MODE")]
    pub steering: Option<String>,
    /// With --slice: share the events of host and pair scopes (detectors,
    /// xbits) with the other slices' sensors through the Redis server at
    /// HOST:PORT (Redis Streams). Also the config's `sensors.redis`
    /// (`server`, `port`, `key`, `peer-timeout`). See docs/detectors.md.
    #[arg(long, value_name = "HOST:PORT")]
    pub sensor_redis: Option<String>,
    /// TCP checksum validation, as Suricata's -k: all, none (default for
    /// -r), auto (default live: off in a worker when over 10% of its first
    /// 1000 TCP packets fail). Bad segments are kept out of reassembly.
    #[arg(short = 'k', value_name = "MODE")]
    pub checksum: Option<String>,
    /// Run mode, as Suricata's: `single` runs one worker and, offline,
    /// does everything on one thread (reading, detection, output: the
    /// per-core figure); `workers` or `autofp` (default) run the worker
    /// pipeline (a reader, --workers workers and an output thread
    /// offline). The output is the same.
    #[arg(long = "runmode", value_name = "MODE")]
    pub runmode: Option<String>,
    /// More output on stderr (repeatable).
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Load no rules; decode and track flows only.
    #[arg(long = "disable-detection")]
    pub disable_detection: bool,
    /// Treat any rule that fails to load as a fatal error.
    #[arg(long = "init-errors-fatal")]
    pub init_errors_fatal: bool,
    /// Inline verdicts on a capture file: drop and reject rules drop their
    /// packet and the rest of its flow, alerts say "blocked", and stream
    /// inspection runs as inline (deterministic).
    #[arg(long = "simulate-ips")]
    pub simulate_ips: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Rule profiling: time and count every check of every rule and write
    /// the N costliest to rule_perf.log and rule_perf.json in the output
    /// directory (also the config's profiling.rules: enabled, limit). Off
    /// by default; it slows inspection while on
    #[arg(long = "profile-rules", value_name = "N")]
    pub profile_rules: Option<usize>,
    /// Prefilter engine of the rule groups: hs (the default, Hyperscan/
    /// Vectorscan; ac when built without it), auto (measured per group
    /// at load, cached), ac, ac-full, ac-compact, wm, e2xb, bmh. Output
    /// is the same whichever is used.
    #[arg(long, value_name = "ENGINE")]
    pub prefilter: Option<String>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// The prefilter's device path (`vigil run`).
#[derive(Debug, Clone, Args)]
pub struct DeviceArgs {
    /// Where the prefilter runs: cpu, opencl (fails without an OpenCL
    /// device) or auto (opencl when a device is found). With a device,
    /// rule groups use AC-Compact unless --prefilter is ac-full or auto.
    #[arg(
        long = "prefilter-device",
        value_name = "DEVICE",
        default_value = "cpu"
    )]
    pub prefilter_device: String,
    /// OpenCL device number, over all platforms in order (see `clinfo -l`).
    #[arg(long = "opencl-device", value_name = "N", default_value_t = 0)]
    pub opencl_device: usize,
    /// Delay budget of a buffer on the device path: batch size and time
    /// limit follow the arrival rate and device time within it.
    #[arg(long = "max-latency-ms", value_name = "MS", default_value_t = 100.0)]
    pub max_latency_ms: f64,
    /// Buffers shorter than this are matched on the CPU (default: measured
    /// at start-up).
    #[arg(long = "opencl-cpu-threshold", value_name = "BYTES")]
    pub cpu_threshold: Option<usize>,
    /// Fixed device batch size in buffers (default: adaptive).
    #[arg(long = "opencl-batch-buffers", value_name = "N")]
    pub batch_buffers: Option<usize>,
    /// Batch area of each command queue's slot, bytes.
    #[arg(long = "opencl-batch-bytes", value_name = "BYTES", default_value_t = 4 << 20)]
    pub batch_bytes: usize,
    /// Command queues (batches in flight) per worker.
    #[arg(long = "opencl-queues", value_name = "N", default_value_t = 4)]
    pub queues: usize,
    /// Output area per batch, in matches; a batch that finds more re-runs
    /// the affected buffers on the CPU.
    #[arg(long = "opencl-output-entries", value_name = "N", default_value_t = 1 << 18)]
    pub output_entries: usize,
    /// Work-group size of the kernel launches (0: the OpenCL runtime
    /// chooses).
    #[arg(long = "opencl-local-size", value_name = "N", default_value_t = 64)]
    pub local_size: usize,
}
