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
/// glibc's arena lock made the workers wait (docs/performance.md). With
/// its `override` feature it also serves the C and C++ libraries' `malloc`
/// and `new` (Hyperscan's compiler spent 40% of a cold load in glibc's).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Transparent huge pages off for the process. mimalloc asks for them
/// (`MADV_HUGEPAGE`) on its arenas, so a worker's first touch of a fresh
/// 64 KiB allocator page faulted in and zeroed a whole 2 MiB page: on
/// dev-mix with the default EVE types that was a tenth of the worker's
/// time (the kernel's `clear_page_erms`) and 50 MB of resident memory
/// (docs/performance.md). The flag is checked at each fault, so memory
/// mapped before it is set also gets normal pages from then on.
fn disable_thp() -> bool {
    // SAFETY: prctl(PR_SET_THP_DISABLE) takes integer arguments only and
    // touches no memory of this process.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0 }
}

/// mimalloc's `mi_option_purge_delay` (`mi_option_e` in mimalloc.h, the
/// same in its v2 and v3); libmimalloc-sys names no constant for it.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long (ms) mimalloc keeps freed memory before it returns it to the
/// system. Its default, a second, kept what rule loading frees (parse
/// trees, the groups' pattern lists, compiler temporaries) resident
/// while the next phase allocated afresh: peak RSS on dev-mix with ET
/// Open 248-260 MiB at 1 worker, against 225-231 MiB at 100 ms and 218
/// at 0, which slowed the load by returning and refetching pages
/// (docs/performance.md).
const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Sets mimalloc's purge delay, unless the operator chose one
/// (`MIMALLOC_PURGE_DELAY`, which mimalloc reads itself).
fn set_purge_delay(ms: std::ffi::c_long) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set stores an integer in mimalloc's option table
    // (an atomic store); it touches no memory of ours and may be called at
    // any time, from any thread.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) }
}

/// The purge delay while packets are processed, once the rules are
/// loaded: mimalloc's default, a second. Processing frees and allocates
/// the same sizes over and over (packet records, transactions, output
/// records); returned at 100 ms, those pages came back as fresh page
/// faults, each cleared by the kernel, on the workers
/// (docs/performance.md).
const PROCESSING_PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// Called when loading is done and processing starts: returns what
/// loading freed to the system now, and keeps what processing frees for
/// longer ([`PROCESSING_PURGE_DELAY_MS`]). Not when the operator chose a
/// delay (`MIMALLOC_PURGE_DELAY`).
pub fn processing_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_collect frees and purges memory this process no longer
    // uses (freed blocks); it may be called at any time, from any thread.
    unsafe { libmimalloc_sys::mi_collect(true) };
    set_purge_delay(PROCESSING_PURGE_DELAY_MS);
}

fn main() -> ExitCode {
    // A kernel without the flag (before 3.15) keeps huge pages: slower,
    // not wrong.
    disable_thp();
    set_purge_delay(PURGE_DELAY_MS);
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

#[cfg(test)]
mod tests {
    /// Option 15 is mimalloc's purge delay: its documented default (a
    /// second, mimalloc v3's options.c) until set, then what was set.
    #[test]
    fn the_purge_delay_is_mimallocs_option_15() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads an integer from mimalloc's option table.
        let get = || unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(get(), 1000);
        super::set_purge_delay(super::PURGE_DELAY_MS);
        assert_eq!(get(), 100);
        // Once loading is done, processing keeps freed memory longer.
        super::processing_memory();
        assert_eq!(get(), super::PROCESSING_PURGE_DELAY_MS);
    }

    /// The kernel reports the flag in /proc/self/status once it is set.
    #[test]
    fn huge_pages_are_turned_off_for_the_process() {
        assert!(super::disable_thp());
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with("THP_enabled:"))
            .expect("THP_enabled in /proc/self/status");
        assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
    }
}
