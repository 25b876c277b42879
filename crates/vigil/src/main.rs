//! The `vigil` binary: thin glue over the library crates.

mod bench_cmd;
mod bench_device;
mod bridge;
mod cli;
mod config;
mod device;
mod live;
mod rules_cmd;
mod run;
mod sensors;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc: the merge thread frees the records workers allocate, and
/// glibc's arena lock made the workers wait (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Run(args) => run::run(args),
        cli::Command::Rules(cli::RulesCommand::Check(args)) => rules_cmd::check(args),
        cli::Command::Rules(cli::RulesCommand::Keywords(args)) => rules_cmd::keywords(args),
        cli::Command::Bench(cmd) => bench_cmd::bench(cmd),
        cli::Command::Ctl(cmd) => live::ctl(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // One line: the error and its causes, no backtrace.
            let mut msg = format!("vigil: error: {e}");
            for cause in e.chain().skip(1) {
                msg.push_str(&format!(": {cause}"));
            }
            eprintln!("{msg}");
            ExitCode::from(2)
        }
    }
}
