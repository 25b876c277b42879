//! The reassembly buffer of one direction of a TCP stream.
//!
//! Data is kept by stream offset (bytes after the initial sequence number)
//! in fixed-size blocks taken from a per-worker [`StreamMemory`], which
//! caps the total and recycles blocks so that steady-state reassembly
//! allocates nothing per packet. Sparse data (a segment far ahead of a
//! gap) costs one block, not the gap. Beside the bytes the buffer keeps
//! the ranges present (to find gaps) and, for target-based overlap
//! policies, the boundaries of the segments that supplied them.
//!
//! What it does not do: decide which segments are acceptable (window,
//! state: that is [`crate::tcp`]) or when data is inspected.

use std::collections::VecDeque;

use crate::policy::OverlapPolicy;

/// Size of one data block.
pub const BLOCK_SIZE: usize = 4096;

/// Bytes charged per remembered segment boundary.
pub const SEGMENT_COST: usize = 16;

/// Free blocks kept for reuse (the rest go back to the allocator).
const FREE_KEEP: usize = 1024;

/// Stream memory of one worker: fixed-size blocks with a byte cap.
#[derive(Debug)]
pub struct StreamMemory {
    free: Vec<Box<[u8]>>,
    used: usize,
    cap: usize,
    peak: usize,
}

impl StreamMemory {
    /// Memory capped at `cap` bytes (blocks and segment bookkeeping).
    pub fn new(cap: usize) -> Self {
        StreamMemory {
            free: Vec::new(),
            used: 0,
            cap,
            peak: 0,
        }
    }

    /// Bytes in use now.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Largest number of bytes ever in use.
    pub fn peak(&self) -> usize {
        self.peak
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    fn charge(&mut self, n: usize) -> bool {
        if self.used + n > self.cap {
            return false;
        }
        self.used += n;
        self.peak = self.peak.max(self.used);
        true
    }

    fn release(&mut self, n: usize) {
        self.used = self.used.saturating_sub(n);
    }

    fn alloc_block(&mut self) -> Option<Box<[u8]>> {
        if !self.charge(BLOCK_SIZE) {
            return None;
        }
        Some(
            self.free
                .pop()
                .unwrap_or_else(|| vec![0u8; BLOCK_SIZE].into_boxed_slice()),
        )
    }

    fn free_block(&mut self, b: Box<[u8]>) {
        self.release(BLOCK_SIZE);
        if self.free.len() < FREE_KEEP {
            self.free.push(b);
        }
    }
}

/// What inserting one segment did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inserted {
    /// Some of the segment's bytes were already present.
    pub overlap: bool,
    /// ... and some of those differed from the new data.
    pub different: bool,
    /// Bytes not stored because the memory cap was reached.
    pub dropped: u64,
    /// The whole segment lay below the released part of the stream.
    pub before_base: bool,
}

/// Reusable interval lists for the overlap path.
#[derive(Debug, Default)]
pub struct InsertScratch {
    covered: Vec<(u64, u64)>,
    writes: Vec<(u64, u64)>,
    wins: Vec<(u64, u64)>,
    loses: Vec<(u64, u64)>,
}

/// One direction's reassembled data.
#[derive(Debug, Default)]
pub struct StreamBuffer {
    /// Data below this offset has been released.
    base: u64,
    /// Block number of `blocks[0]`.
    first_block: u64,
    blocks: VecDeque<Option<Box<[u8]>>>,
    /// Present data, merged, sorted, all at or above `base`.
    ranges: Vec<(u64, u64)>,
    /// Accepted segments `[start, end)` sorted by start, for target-based
    /// policies (only those that supplied bytes; no duplicates).
    segs: Vec<(u64, u64)>,
    /// Longest segment in `segs`: bounds the search for overlaps.
    max_seg: u64,
}

impl StreamBuffer {
    /// Offset below which data is gone.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// End of the highest data present (or `base` when none).
    pub fn right_edge(&self) -> u64 {
        self.ranges.last().map_or(self.base, |r| r.1)
    }

    /// Whether any data at or after `off` is present.
    pub fn has_data_from(&self, off: u64) -> bool {
        self.ranges.last().is_some_and(|r| r.1 > off)
    }

    /// The present ranges, clipped to `[from, to)`, in order.
    pub fn ranges_in(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().filter_map(move |&(s, e)| {
            let (s, e) = (s.max(from), e.min(to));
            (s < e).then_some((s, e))
        })
    }

    /// Present ranges (for tests and diagnostics).
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Number of remembered segment boundaries.
    pub fn segment_count(&self) -> usize {
        self.segs.len()
    }

    /// Blocks held.
    pub fn blocks_held(&self) -> usize {
        self.blocks.iter().filter(|b| b.is_some()).count()
    }

    /// Appends the bytes of `[s, e)` (which must be present) to `out`.
    pub fn copy_out(&self, s: u64, e: u64, out: &mut Vec<u8>) {
        let mut pos = s;
        while pos < e {
            let b = pos / BLOCK_SIZE as u64;
            let in_block = (pos % BLOCK_SIZE as u64) as usize;
            let n = ((BLOCK_SIZE - in_block) as u64).min(e - pos) as usize;
            match self.block(b) {
                Some(blk) => out.extend_from_slice(&blk[in_block..in_block + n]),
                None => out.resize(out.len() + n, 0),
            }
            pos += n as u64;
        }
    }

    fn block(&self, b: u64) -> Option<&[u8]> {
        let i = b.checked_sub(self.first_block)?;
        self.blocks.get(i as usize)?.as_deref()
    }

    /// Whether the stored bytes at `s..` differ from `data`.
    fn differs(&self, s: u64, data: &[u8]) -> bool {
        let mut pos = s;
        let mut rest = data;
        while !rest.is_empty() {
            let b = pos / BLOCK_SIZE as u64;
            let in_block = (pos % BLOCK_SIZE as u64) as usize;
            let n = (BLOCK_SIZE - in_block).min(rest.len());
            if let Some(blk) = self.block(b) {
                if blk[in_block..in_block + n] != rest[..n] {
                    return true;
                }
            }
            rest = &rest[n..];
            pos += n as u64;
        }
        false
    }

    fn ensure_block(&mut self, b: u64, mem: &mut StreamMemory) -> Option<&mut [u8]> {
        if self.blocks.is_empty() {
            self.first_block = b;
            self.blocks.push_back(None);
        } else if b < self.first_block {
            for _ in b..self.first_block {
                self.blocks.push_front(None);
            }
            self.first_block = b;
        }
        let i = (b - self.first_block) as usize;
        while self.blocks.len() <= i {
            self.blocks.push_back(None);
        }
        if self.blocks[i].is_none() {
            self.blocks[i] = Some(mem.alloc_block()?);
        }
        self.blocks[i].as_deref_mut()
    }

    /// Writes `data` at `s`; returns how many leading bytes were written
    /// (fewer when the memory cap is reached).
    fn write(&mut self, s: u64, data: &[u8], mem: &mut StreamMemory) -> usize {
        let mut pos = s;
        let mut done = 0;
        while done < data.len() {
            let b = pos / BLOCK_SIZE as u64;
            let in_block = (pos % BLOCK_SIZE as u64) as usize;
            let n = (BLOCK_SIZE - in_block).min(data.len() - done);
            let Some(blk) = self.ensure_block(b, mem) else {
                break;
            };
            blk[in_block..in_block + n].copy_from_slice(&data[done..done + n]);
            done += n;
            pos += n as u64;
        }
        done
    }

    /// Marks `[s, e)` present.
    fn fill(&mut self, s: u64, e: u64) {
        if s >= e {
            return;
        }
        // Fast path: append at or after the end.
        match self.ranges.last_mut() {
            None => {
                self.ranges.push((s, e));
                return;
            }
            Some(last) if s > last.1 => {
                self.ranges.push((s, e));
                return;
            }
            Some(last) if s >= last.0 => {
                last.1 = last.1.max(e);
                return;
            }
            _ => {}
        }
        // General case: merge every range touching [s, e).
        let i = self.ranges.partition_point(|r| r.1 < s);
        let mut j = i;
        let (mut ns, mut ne) = (s, e);
        while j < self.ranges.len() && self.ranges[j].0 <= ne {
            ns = ns.min(self.ranges[j].0);
            ne = ne.max(self.ranges[j].1);
            j += 1;
        }
        self.ranges.splice(i..j, std::iter::once((ns, ne)));
    }

    /// Remembers a segment's boundaries; false when the memory cap does
    /// not allow it.
    fn add_segment(&mut self, s: u64, e: u64, mem: &mut StreamMemory) -> bool {
        let i = self.segs.partition_point(|x| x.0 <= s);
        // An identical segment is known already.
        if self.segs[..i]
            .iter()
            .rev()
            .take_while(|x| x.0 == s)
            .any(|x| x.1 == e)
        {
            return true;
        }
        if !mem.charge(SEGMENT_COST) {
            return false;
        }
        self.segs.insert(i, (s, e));
        self.max_seg = self.max_seg.max(e - s);
        true
    }

    /// The remembered segments that may overlap `[s, e)`.
    fn segs_near(&self, s: u64, e: u64) -> &[(u64, u64)] {
        let lo = self
            .segs
            .partition_point(|x| x.0.saturating_add(self.max_seg) <= s);
        let hi = self.segs.partition_point(|x| x.0 < e);
        &self.segs[lo..hi.max(lo)]
    }

    /// Inserts a segment's bytes at stream offset `off`, resolving
    /// overlaps with `policy`.
    pub fn insert(
        &mut self,
        off: u64,
        data: &[u8],
        policy: OverlapPolicy,
        mem: &mut StreamMemory,
        scratch: &mut InsertScratch,
    ) -> Inserted {
        let mut out = Inserted::default();
        let full_end = off + data.len() as u64;
        if data.is_empty() {
            return out;
        }
        if full_end <= self.base {
            out.before_base = true;
            out.overlap = true;
            return out;
        }
        // Bytes below the released base were inspected already.
        let skip = self.base.saturating_sub(off);
        let (s, data) = (off + skip, &data[skip as usize..]);
        let e = full_end;
        if skip > 0 {
            out.overlap = true;
        }
        let track_segs = policy.needs_segments();
        // Fast path: nothing at or beyond s yet.
        if self.ranges.last().map_or(true, |r| r.1 <= s) {
            // The segment's bookkeeping is charged first: when the cap
            // does not allow it, the data is dropped (and counted).
            if track_segs && !self.add_segment(s, e, mem) {
                out.dropped = data.len() as u64;
                return out;
            }
            let n = self.write(s, data, mem);
            self.fill(s, s + n as u64);
            out.dropped = (data.len() - n) as u64;
            return out;
        }
        let InsertScratch {
            covered,
            writes,
            wins,
            loses,
        } = scratch;
        covered.clear();
        writes.clear();
        let mut cursor = s;
        for (rs, re) in self.ranges_in(s, e) {
            if rs > cursor {
                writes.push((cursor, rs));
            }
            covered.push((rs, re));
            cursor = re;
        }
        if cursor < e {
            writes.push((cursor, e));
        }
        if !covered.is_empty() {
            out.overlap = true;
            for &(cs, ce) in covered.iter() {
                let d = &data[(cs - s) as usize..(ce - s) as usize];
                if self.differs(cs, d) {
                    out.different = true;
                    break;
                }
            }
            match policy {
                OverlapPolicy::First => {}
                OverlapPolicy::Last => writes.extend_from_slice(covered),
                _ => {
                    wins.clear();
                    loses.clear();
                    for &(os, oe) in self.segs_near(s, e) {
                        let (a, b) = (os.max(s), oe.min(e));
                        if a >= b {
                            continue;
                        }
                        if policy.new_wins(off, full_end, os, oe) {
                            wins.push((a, b));
                        } else {
                            loses.push((a, b));
                        }
                    }
                    // Covered bytes with no remembered segment (its
                    // bookkeeping was capped) keep the original.
                    for &(ws, we) in wins.iter() {
                        subtract_into(ws, we, loses, writes);
                    }
                }
            }
        }
        // A segment that supplies no byte (it lost every overlap) is not
        // remembered: retransmission storms cost nothing.
        if writes.is_empty() {
            return out;
        }
        if track_segs && !self.add_segment(s, e, mem) {
            out.dropped = data.len() as u64;
            return out;
        }
        for &(ws, we) in writes.iter() {
            let d = &data[(ws - s) as usize..(we - s) as usize];
            let n = self.write(ws, d, mem);
            out.dropped += (d.len() - n) as u64;
            self.fill(ws, ws + n as u64);
        }
        out
    }

    /// Releases everything below `off` (inspected data).
    pub fn release_before(&mut self, off: u64, mem: &mut StreamMemory) {
        if off <= self.base {
            return;
        }
        self.base = off;
        let keep = self.ranges.partition_point(|r| r.1 <= off);
        self.ranges.drain(..keep);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(off);
        }
        let before = self.segs.len();
        self.segs.retain(|s| s.1 > off);
        mem.release((before - self.segs.len()) * SEGMENT_COST);
        while !self.blocks.is_empty() && (self.first_block + 1) * BLOCK_SIZE as u64 <= off {
            if let Some(Some(b)) = self.blocks.pop_front() {
                mem.free_block(b);
            }
            self.first_block += 1;
        }
        if self.blocks.is_empty() {
            self.first_block = off / BLOCK_SIZE as u64;
        }
    }

    /// Releases everything.
    pub fn clear(&mut self, mem: &mut StreamMemory) {
        for b in self.blocks.drain(..).flatten() {
            mem.free_block(b);
        }
        mem.release(self.segs.len() * SEGMENT_COST);
        self.segs.clear();
        self.ranges.clear();
        self.max_seg = 0;
    }
}

/// Appends `[s, e)` minus the union of `cut` to `out` (in any order).
fn subtract_into(s: u64, e: u64, cut: &[(u64, u64)], out: &mut Vec<(u64, u64)>) {
    let start = out.len();
    out.push((s, e));
    for &(cs, ce) in cut {
        let mut i = start;
        while i < out.len() {
            let (ps, pe) = out[i];
            if ce <= ps || cs >= pe {
                i += 1;
                continue;
            }
            out.swap_remove(i);
            if cs > ps {
                out.push((ps, cs));
            }
            if ce < pe {
                out.push((ce, pe));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_text(b: &StreamBuffer) -> String {
        let mut out = Vec::new();
        let mut cursor = b.base();
        for &(s, e) in b.ranges() {
            out.resize(out.len() + (s - cursor) as usize, b'_');
            b.copy_out(s, e, &mut out);
            cursor = e;
        }
        String::from_utf8(out).unwrap()
    }

    fn run(policy: OverlapPolicy, segs: &[(u64, &str)]) -> (String, Inserted) {
        let mut mem = StreamMemory::new(1 << 20);
        let mut b = StreamBuffer::default();
        let mut sc = InsertScratch::default();
        let mut last = Inserted::default();
        for &(off, d) in segs {
            last = b.insert(off, d.as_bytes(), policy, &mut mem, &mut sc);
        }
        let t = stream_text(&b);
        b.clear(&mut mem);
        assert_eq!(mem.used(), 0);
        (t, last)
    }

    #[test]
    fn in_order_and_gaps() {
        let (t, _) = run(OverlapPolicy::Bsd, &[(0, "abc"), (3, "def"), (8, "xy")]);
        assert_eq!(t, "abcdef__xy");
        let (t, _) = run(OverlapPolicy::Bsd, &[(8, "xy"), (0, "abc"), (3, "def")]);
        assert_eq!(t, "abcdef__xy");
    }

    #[test]
    fn retransmission_with_different_data_is_flagged() {
        let (t, r) = run(OverlapPolicy::Bsd, &[(0, "GOOD"), (0, "EVIL")]);
        assert_eq!(t, "GOOD");
        assert!(r.overlap && r.different);
        let (_, r) = run(OverlapPolicy::Bsd, &[(0, "GOOD"), (0, "GOOD")]);
        assert!(r.overlap && !r.different);
    }

    /// The classic Novak/Sturges target-based TCP test, laid out like the
    /// fragment test: original segments A..I, then overlapping J..Q.
    fn novak(policy: OverlapPolicy) -> String {
        let segs: &[(u64, &str)] = &[
            (0, "AAAAAAAAAAAAAAAAAAAAAAAA"),
            (32, "BBBBBBBBBBBBBBBB"),
            (48, "CCCCCCCCCCCCCCCCCCCCCCCC"),
            (80, "DDDDDDDD"),
            (104, "EEEEEEEEEEEEEEEE"),
            (120, "FFFFFFFFFFFFFFFFFFFFFFFF"),
            (144, "GGGGGGGGGGGGGGGG"),
            (160, "HHHHHHHHHHHHHHHH"),
            (176, "IIIIIIII"),
            (8, "JJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJ"),
            (48, "KKKKKKKKKKKKKKKKKKKKKKKK"),
            (72, "LLLLLLLLLLLLLLLLLLLLLLLL"),
            (96, "MMMMMMMMMMMMMMMMMMMMMMMM"),
            (128, "NNNNNNNN"),
            (152, "OOOOOOOO"),
            (160, "PPPPPPPP"),
            (176, "QQQQQQQQQQQQQQQQ"),
        ];
        run(policy, segs).0
    }

    fn expand(s: &str) -> String {
        s.chars()
            .flat_map(|c| std::iter::repeat(c).take(8))
            .collect()
    }

    #[test]
    fn novak_first() {
        assert_eq!(
            novak(OverlapPolicy::First),
            expand("AAAJBBCCCLDLMEEFFFGGHHIQ")
        );
    }

    #[test]
    fn novak_last() {
        assert_eq!(
            novak(OverlapPolicy::Last),
            expand("AJJJJBKKKLLLMMMFNFGOPHQQ")
        );
    }

    #[test]
    fn novak_bsd() {
        assert_eq!(
            novak(OverlapPolicy::Bsd),
            expand("AAAJJBCCCLLLMMMFFFGGHHIQ")
        );
    }

    #[test]
    fn novak_linux() {
        assert_eq!(
            novak(OverlapPolicy::Linux),
            expand("AAAJJBCCCLLLMMMFFFGGHHQQ")
        );
    }

    #[test]
    fn novak_old_linux() {
        assert_eq!(
            novak(OverlapPolicy::OldLinux),
            expand("AAAJJBKKKLLLMMMFFFGGHHQQ")
        );
    }

    #[test]
    fn novak_solaris() {
        assert_eq!(
            novak(OverlapPolicy::Solaris),
            expand("AJJJBBKKKLLLMMMFFFGGHHQQ")
        );
    }

    #[test]
    fn release_frees_blocks_and_drops_old_retransmissions() {
        let mut mem = StreamMemory::new(1 << 20);
        let mut b = StreamBuffer::default();
        let mut sc = InsertScratch::default();
        let data = vec![b'x'; 3 * BLOCK_SIZE];
        b.insert(0, &data, OverlapPolicy::Bsd, &mut mem, &mut sc);
        assert_eq!(mem.used(), 3 * BLOCK_SIZE + SEGMENT_COST);
        b.release_before(2 * BLOCK_SIZE as u64 + 5, &mut mem);
        assert_eq!(mem.used(), BLOCK_SIZE + SEGMENT_COST);
        let r = b.insert(0, b"old", OverlapPolicy::Bsd, &mut mem, &mut sc);
        assert!(r.before_base);
        b.clear(&mut mem);
        assert_eq!(mem.used(), 0);
    }

    #[test]
    fn memcap_drops_are_counted() {
        let mut mem = StreamMemory::new(BLOCK_SIZE + SEGMENT_COST);
        let mut b = StreamBuffer::default();
        let mut sc = InsertScratch::default();
        let data = vec![b'x'; BLOCK_SIZE + 100];
        let r = b.insert(0, &data, OverlapPolicy::Bsd, &mut mem, &mut sc);
        assert_eq!(r.dropped, 100);
        assert_eq!(b.right_edge(), BLOCK_SIZE as u64);
        assert!(mem.used() <= mem.cap());
    }

    #[test]
    fn sparse_segment_costs_one_block() {
        let mut mem = StreamMemory::new(1 << 20);
        let mut b = StreamBuffer::default();
        let mut sc = InsertScratch::default();
        b.insert(900_000, b"far", OverlapPolicy::First, &mut mem, &mut sc);
        assert_eq!(mem.used(), BLOCK_SIZE);
        b.insert(0, b"near", OverlapPolicy::First, &mut mem, &mut sc);
        assert_eq!(mem.used(), 2 * BLOCK_SIZE);
        assert_eq!(b.ranges(), &[(0, 4), (900_000, 900_003)]);
        b.clear(&mut mem);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn contents(b: &StreamBuffer, len: u64) -> Vec<Option<u8>> {
        let mut out = vec![None; len as usize];
        for (s, e) in b.ranges_in(0, len) {
            let mut v = Vec::new();
            b.copy_out(s, e, &mut v);
            for (i, x) in v.into_iter().enumerate() {
                out[s as usize + i] = Some(x);
            }
        }
        out
    }

    proptest! {
        /// `first` keeps the first byte written at each offset, `last` the
        /// latest: the buffer agrees with a byte-per-offset model, and
        /// every byte of memory comes back.
        #[test]
        fn first_and_last_match_a_naive_model(
            segs in proptest::collection::vec((0u64..20_000, 1usize..3_000, any::<u8>()), 1..40),
            release in 0u64..25_000,
        ) {
            for policy in [OverlapPolicy::First, OverlapPolicy::Last, OverlapPolicy::Bsd] {
                let mut mem = StreamMemory::new(1 << 30);
                let mut b = StreamBuffer::default();
                let mut sc = InsertScratch::default();
                let mut model: Vec<Option<u8>> = vec![None; 23_000];
                for &(off, len, byte) in &segs {
                    let data = vec![byte; len];
                    b.insert(off, &data, policy, &mut mem, &mut sc);
                    for m in &mut model[off as usize..off as usize + len] {
                        match policy {
                            OverlapPolicy::Last => *m = Some(byte),
                            _ => {
                                m.get_or_insert(byte);
                            }
                        }
                    }
                }
                let got = contents(&b, 23_000);
                if policy != OverlapPolicy::Bsd {
                    prop_assert_eq!(&got, &model);
                } else {
                    // Which bytes are present never depends on the policy.
                    let a: Vec<bool> = got.iter().map(Option::is_some).collect();
                    let m: Vec<bool> = model.iter().map(Option::is_some).collect();
                    prop_assert_eq!(a, m);
                }
                b.release_before(release, &mut mem);
                prop_assert!(b.ranges().iter().all(|r| r.0 >= release));
                b.clear(&mut mem);
                prop_assert_eq!(mem.used(), 0);
            }
        }

        /// A small cap is never exceeded, whatever arrives.
        #[test]
        fn memory_never_exceeds_the_cap(
            segs in proptest::collection::vec((0u64..2_000_000, 1usize..2_000), 1..200),
        ) {
            let cap = 64 * 1024;
            let mut mem = StreamMemory::new(cap);
            let mut b = StreamBuffer::default();
            let mut sc = InsertScratch::default();
            let mut dropped = 0;
            for &(off, len) in &segs {
                let r = b.insert(off, &vec![1u8; len], OverlapPolicy::Bsd, &mut mem, &mut sc);
                dropped += r.dropped;
                prop_assert!(mem.used() <= cap);
            }
            let _ = dropped;
            b.clear(&mut mem);
            prop_assert_eq!(mem.used(), 0);
        }
    }
}
