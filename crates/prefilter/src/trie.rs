//! The Aho-Corasick trie (goto function, failure links and merged output
//! lists) over folded keys, shared by AC-Full and AC-Compact, which differ
//! only in how they lay out the transition function.

use crate::fold::Folded;

pub(crate) const ROOT: u32 = 0;

#[derive(Debug, Default)]
pub(crate) struct Trie {
    /// Goto transitions per state, sorted by byte.
    pub goto: Vec<Vec<(u8, u32)>>,
    /// Failure link per state (the root's is the root).
    pub fail: Vec<u32>,
    /// Slots recognised in each state, including those inherited through
    /// failure links.
    pub out: Vec<Vec<u32>>,
    /// States in breadth-first order (the root first).
    pub bfs: Vec<u32>,
}

impl Trie {
    pub fn build(folded: &Folded) -> Trie {
        let mut t = Trie {
            goto: vec![Vec::new()],
            fail: vec![ROOT],
            out: vec![Vec::new()],
            bfs: Vec::new(),
        };
        for (slot, key) in folded.keys.iter().enumerate() {
            let mut s = ROOT;
            for &b in key.iter() {
                s = match t.child(s, b) {
                    Some(n) => n,
                    None => {
                        let n = t.goto.len() as u32;
                        t.goto.push(Vec::new());
                        t.fail.push(ROOT);
                        t.out.push(Vec::new());
                        let row = &mut t.goto[s as usize];
                        let at = row.partition_point(|&(c, _)| c < b);
                        row.insert(at, (b, n));
                        n
                    }
                };
            }
            t.out[s as usize].push(slot as u32);
        }
        // Failure links in breadth-first order.
        let mut queue = std::collections::VecDeque::new();
        queue.push_back(ROOT);
        while let Some(s) = queue.pop_front() {
            t.bfs.push(s);
            let row = std::mem::take(&mut t.goto[s as usize]);
            for &(b, n) in &row {
                let target = if s == ROOT {
                    ROOT
                } else {
                    // Follow failure links from s until one has a
                    // b-transition (the root always "has" one: to itself).
                    let mut f = t.fail[s as usize];
                    loop {
                        if let Some(x) = t.child(f, b) {
                            break x;
                        }
                        if f == ROOT {
                            break ROOT;
                        }
                        f = t.fail[f as usize];
                    }
                };
                t.fail[n as usize] = target;
                let inherited = t.out[target as usize].clone();
                let o = &mut t.out[n as usize];
                for x in inherited {
                    if !o.contains(&x) {
                        o.push(x);
                    }
                }
                queue.push_back(n);
            }
            t.goto[s as usize] = row;
        }
        t
    }

    #[inline]
    pub fn child(&self, s: u32, b: u8) -> Option<u32> {
        let row = &self.goto[s as usize];
        row.binary_search_by_key(&b, |&(c, _)| c)
            .ok()
            .map(|i| row[i].1)
    }

    pub fn states(&self) -> usize {
        self.goto.len()
    }

    /// Output lists flattened: (start offsets per state + 1, slots).
    pub fn flat_outputs(&self) -> (Vec<u32>, Vec<u32>) {
        let mut start = Vec::with_capacity(self.out.len() + 1);
        let mut slots = Vec::new();
        for o in &self.out {
            start.push(slots.len() as u32);
            slots.extend_from_slice(o);
        }
        start.push(slots.len() as u32);
        (start, slots)
    }
}
