//! `vigil-craft-demo OUT.pcap`: writes the demo capture (see
//! `vigil_craft::demo`) to OUT.pcap. The matching rules are in
//! `demo/demo.rules`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let [out] = args.as_slice() else {
        eprintln!("usage: vigil-craft-demo OUT.pcap");
        return ExitCode::from(2);
    };
    let path = PathBuf::from(out);
    match vigil_craft::write_demo_pcap(&path) {
        Ok(n) => {
            println!("wrote {n} packets to {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("vigil-craft-demo: {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
