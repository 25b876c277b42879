//! MIDeA's Table 2 for a ruleset: patterns, automaton states, and the
//! memory of AC-Full, AC-Compact and Hyperscan, for all fast patterns in
//! one automaton and summed over the rule groups (one automaton per
//! distinct group pattern set, as Vigil builds them).

use vigil_prefilter::{automaton_size, EngineKind, Pattern};

/// One row of the table.
#[derive(Debug, Clone)]
pub struct MemRow {
    pub label: String,
    pub rules: usize,
    /// Automata summed in this row.
    pub automata: usize,
    pub patterns: usize,
    pub states: usize,
    pub ac_full_bytes: usize,
    pub ac_compact_bytes: usize,
    /// Hyperscan database + one scratch; `None` without the feature.
    pub hs_bytes: Option<usize>,
}

/// Sizes of `sets` summed (AC-Full computed from the state count; the
/// others built). Hyperscan is compiled only `with_hs` (it takes a while
/// for hundreds of groups).
pub fn row(label: &str, rules: usize, sets: &[Vec<Pattern>], with_hs: bool) -> MemRow {
    let mut r = MemRow {
        label: label.into(),
        rules,
        automata: sets.len(),
        patterns: 0,
        states: 0,
        ac_full_bytes: 0,
        ac_compact_bytes: 0,
        hs_bytes: (with_hs && EngineKind::Hs.available()).then_some(0),
    };
    for s in sets {
        let z = automaton_size(s);
        r.patterns += s.len();
        r.states += z.states;
        r.ac_full_bytes += z.ac_full_bytes;
        r.ac_compact_bytes += EngineKind::AcCompact
            .build(s)
            .map_or(z.ac_compact_bytes, |e| e.heap_bytes());
        if let Some(h) = &mut r.hs_bytes {
            *h += EngineKind::Hs.build(s).map_or(0, |e| e.heap_bytes());
        }
    }
    r
}

fn mb(b: usize) -> String {
    format!("{:.2} MB", b as f64 / (1u64 << 20) as f64)
}

/// The rows as a Markdown table.
pub fn markdown(rows: &[MemRow]) -> String {
    let mut s = String::from(
        "| set | #rules | #automata | #patterns | #states | AC-Full | AC-Compact | Hyperscan |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.label,
            r.rules,
            r.automata,
            r.patterns,
            r.states,
            mb(r.ac_full_bytes),
            mb(r.ac_compact_bytes),
            r.hs_bytes.map_or("not measured".into(), mb)
        ));
    }
    s
}

/// The rows as CSV.
pub fn csv(rows: &[MemRow]) -> String {
    let mut s = String::from(
        "set,rules,automata,patterns,states,ac_full_bytes,ac_compact_bytes,hyperscan_bytes\n",
    );
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            r.label,
            r.rules,
            r.automata,
            r.patterns,
            r.states,
            r.ac_full_bytes,
            r.ac_compact_bytes,
            r.hs_bytes.map_or(String::new(), |b| b.to_string())
        ));
    }
    s
}
