//! Concatenation of the rule groups' automata into the kernel's arrays
//! (layout in `match.cl`).

use std::sync::Arc;

use vigil_prefilter::{AcFullTable, DeviceTables, PrefilterEngine};

/// Words per group descriptor.
pub(crate) const GROUP_WORDS: usize = 8;

#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub groups: Vec<u32>,
    pub full: Vec<u32>,
    pub rows: Vec<u32>,
    pub band: Vec<u32>,
    pub out_start: Vec<u32>,
    pub out_slots: Vec<u32>,
    pub on_device: Vec<bool>,
}

impl Tables {
    /// The device tables of the groups whose engine offers them (AC-Full,
    /// AC-Compact), where no uploaded array may exceed `max_words` u32
    /// words (the device's largest allocation): a group whose tables
    /// would not fit stays on its CPU engine.
    pub fn build_limited(engines: &[Option<Arc<dyn PrefilterEngine>>], max_words: usize) -> Tables {
        let mut t = Tables::default();
        for e in engines {
            let mut desc = [0u32; GROUP_WORDS];
            let tables = e.as_ref().and_then(|e| e.device_tables());
            let fits = |n: usize| n < u32::MAX as usize / 2 && n <= max_words;
            let on = match tables {
                Some(DeviceTables::AcFull {
                    table,
                    out_start,
                    out_slots,
                }) if fits(t.full.len() + 256 * out_start.len()) => {
                    desc[0] = 0;
                    desc[1] = t.full.len() as u32;
                    match table {
                        // Widened to the u32 layout: (next << 8) | match.
                        AcFullTable::U16(v) => t.full.extend(
                            v.iter()
                                .map(|&e| (((e & 0x7fff) as u32) << 8) | (e >> 15) as u32),
                        ),
                        AcFullTable::U32(v) => t.full.extend_from_slice(v),
                    }
                    Self::lists(&mut t, &mut desc, out_start, out_slots);
                    true
                }
                Some(DeviceTables::AcCompact {
                    rows,
                    band,
                    out_start,
                    out_slots,
                }) if fits(t.band.len() + band.len()) => {
                    desc[0] = 1;
                    desc[1] = (t.rows.len() / 3) as u32;
                    desc[2] = t.band.len() as u32;
                    for r in rows {
                        t.rows.extend_from_slice(&[
                            r.off,
                            r.fail,
                            r.lo as u32 | (r.len as u32) << 16,
                        ]);
                    }
                    t.band.extend_from_slice(band);
                    Self::lists(&mut t, &mut desc, out_start, out_slots);
                    true
                }
                _ => false,
            };
            t.groups.extend_from_slice(&desc);
            t.on_device.push(on);
        }
        t
    }

    fn lists(t: &mut Tables, desc: &mut [u32; GROUP_WORDS], start: &[u32], slots: &[u32]) {
        desc[3] = t.out_start.len() as u32;
        desc[4] = t.out_slots.len() as u32;
        t.out_start.extend_from_slice(start);
        t.out_slots.extend_from_slice(slots);
    }

    pub fn bytes(&self) -> usize {
        4 * (self.groups.len()
            + self.full.len()
            + self.rows.len()
            + self.band.len()
            + self.out_start.len()
            + self.out_slots.len())
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;
    use vigil_prefilter::{EngineKind, Pattern};

    #[test]
    fn groups_past_the_allocation_limit_stay_on_the_cpu() {
        let pats: Vec<Pattern> = ["alpha", "beta", "gamma"]
            .iter()
            .enumerate()
            .map(|(i, p)| Pattern {
                id: i as u32,
                bytes: p.as_bytes().to_vec(),
                nocase: false,
            })
            .collect();
        let full: Arc<dyn PrefilterEngine> = Arc::from(EngineKind::AcFull.build(&pats).unwrap());
        let engines = vec![Some(full)];
        assert_eq!(
            Tables::build_limited(&engines, usize::MAX).on_device,
            vec![true]
        );
        assert_eq!(Tables::build_limited(&engines, 16).on_device, vec![false]);
    }
}
