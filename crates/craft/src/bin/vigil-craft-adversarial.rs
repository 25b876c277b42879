//! `vigil-craft-adversarial SCENARIO N OUT.pcap`: writes an adversarial
//! capture (see `vigil_craft::adversarial`): `syn-flood` (N flows),
//! `overlap-storm` (N segments), `fragment-flood` (N datagrams) or
//! `tiny-segments` (N one-byte segments).

use std::fs::File;
use std::io::BufWriter;
use std::process::ExitCode;

use vigil_craft::adversarial::{scenario, SCENARIOS};
use vigil_craft::{PcapWriter, LINKTYPE_ETHERNET};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        eprintln!(
            "usage: vigil-craft-adversarial SCENARIO N OUT.pcap\n  scenarios: {}",
            SCENARIOS.join(", ")
        );
        ExitCode::from(2)
    };
    let [name, n, out] = args.as_slice() else {
        return usage();
    };
    let Ok(n) = n.parse::<u32>() else {
        return usage();
    };
    let Some(frames) = scenario(name, n) else {
        return usage();
    };
    let run = || -> std::io::Result<u64> {
        let mut w = PcapWriter::new(BufWriter::new(File::create(out)?), LINKTYPE_ETHERNET)?;
        let mut count = 0;
        for (ts, f) in frames {
            w.write_packet(ts, &f)?;
            count += 1;
        }
        w.flush()?;
        Ok(count)
    };
    match run() {
        Ok(c) => {
            println!("wrote {c} packets to {out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("vigil-craft-adversarial: {out}: {e}");
            ExitCode::FAILURE
        }
    }
}
