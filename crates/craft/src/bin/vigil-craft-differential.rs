//! `vigil-craft-differential SEED FIRST COUNT FLOWS OUTDIR [HTTP_PCT [FLOWBITS_PCT]]`: one
//! batch of the differential test against Suricata (see
//! `vigil_craft::differential`): COUNT rules from global rule index FIRST
//! (sids 1000000 + index), FLOWS flows per rule, HTTP_PCT percent of the
//! rules (default 0) `http` rules on sticky buffers, FLOWBITS_PCT percent
//! of the others (default 0) checking a flowbit set by a companion rule
//! (sid + 2000000, noalert). Writes OUTDIR/rules.rules, OUTDIR/traffic.pcap and
//! OUTDIR/flows.tsv (`sid client_port variant description` per flow).

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use vigil_craft::differential::{gen_batch, MAX_BATCH_FLOWS};
use vigil_craft::write_pcap_file;

/// Sid of global rule index 0.
const SID_BASE: u64 = 1_000_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = |why: &str| {
        eprintln!("vigil-craft-differential: {why}\nusage: vigil-craft-differential SEED FIRST COUNT FLOWS OUTDIR [HTTP_PCT [FLOWBITS_PCT]]");
        ExitCode::from(2)
    };
    let (seed, first, count, flows, out, http, fbits) = match args.as_slice() {
        [a, b, c, d, e] => (a, b, c, d, e, "0", "0"),
        [a, b, c, d, e, f] => (a, b, c, d, e, f.as_str(), "0"),
        [a, b, c, d, e, f, g] => (a, b, c, d, e, f.as_str(), g.as_str()),
        _ => return usage("expected 5 to 7 arguments"),
    };
    let (Ok(http_pct), Ok(flowbits_pct)) = (http.parse::<u64>(), fbits.parse::<u64>()) else {
        return usage("HTTP_PCT and FLOWBITS_PCT are numbers");
    };
    let (Ok(seed), Ok(first), Ok(count), Ok(flows)) = (
        seed.parse::<u64>(),
        first.parse::<u64>(),
        count.parse::<usize>(),
        flows.parse::<usize>(),
    ) else {
        return usage("SEED, FIRST, COUNT and FLOWS are numbers");
    };
    if count == 0 || flows == 0 || count * flows > MAX_BATCH_FLOWS || count > 20_000 {
        return usage("COUNT x FLOWS must be between 1 and 29535 (COUNT at most 20000)");
    }
    let Ok(first_sid) = u32::try_from(SID_BASE + first) else {
        return usage("FIRST too large");
    };
    if u32::try_from(SID_BASE + first + count as u64).is_err() {
        return usage("FIRST + COUNT too large");
    }
    let (rules, frames, index) =
        gen_batch(seed, first, count, first_sid, flows, http_pct, flowbits_pct);
    let out = Path::new(out);
    let run = || -> std::io::Result<()> {
        fs::create_dir_all(out)?;
        fs::write(out.join("rules.rules"), rules.join("\n") + "\n")?;
        fs::write(out.join("flows.tsv"), index.join("\n") + "\n")?;
        write_pcap_file(&out.join("traffic.pcap"), &frames)
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vigil-craft-differential: {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
