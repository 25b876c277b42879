//! Case folding shared by the engines that do not fold case themselves
//! (MIDeA's trick): every pattern is inserted once, in lower case, into a
//! case-insensitive matcher, and patterns that must match exactly are
//! confirmed against the buffer after a hit.

use crate::Pattern;

/// ASCII lower-case table.
pub(crate) static LOWER: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).to_ascii_lowercase();
        i += 1;
    }
    t
};

#[derive(Debug, Clone)]
struct Member {
    id: u32,
    /// `None` for nocase members (or patterns without letters).
    exact: Option<Box<[u8]>>,
}

/// The distinct lower-cased patterns of a set ("slots") and the caller
/// patterns behind each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Folded {
    /// Lower-cased pattern bytes, one per slot, in first-seen order.
    pub keys: Vec<Box<[u8]>>,
    members: Vec<Vec<Member>>,
    all_nocase: Vec<bool>,
    /// Non-empty caller patterns.
    pub count: usize,
}

impl Folded {
    pub fn new(patterns: &[Pattern]) -> Folded {
        let mut index: std::collections::HashMap<Vec<u8>, usize> = Default::default();
        let mut f = Folded::default();
        for p in patterns.iter().filter(|p| !p.bytes.is_empty()) {
            f.count += 1;
            let key = p.bytes.to_ascii_lowercase();
            let slot = *index.entry(key.clone()).or_insert_with(|| {
                f.keys.push(key.into_boxed_slice());
                f.members.push(Vec::new());
                f.keys.len() - 1
            });
            let exact = if p.nocase || !p.bytes.iter().any(u8::is_ascii_alphabetic) {
                None
            } else {
                Some(p.bytes.clone().into_boxed_slice())
            };
            f.members[slot].push(Member { id: p.id, exact });
        }
        f.all_nocase = f
            .members
            .iter()
            .map(|m| m.iter().all(|m| m.exact.is_none()))
            .collect();
        f
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Reports the caller patterns behind `slot`, whose folded key was
    /// found ending at `end` in `hay`.
    #[inline]
    pub fn report(&self, hay: &[u8], slot: usize, end: usize, emit: &mut impl FnMut(u32)) {
        let members = &self.members[slot];
        if self.all_nocase[slot] {
            for m in members {
                emit(m.id);
            }
            return;
        }
        for m in members {
            match &m.exact {
                None => emit(m.id),
                Some(bytes) => {
                    if end >= bytes.len() && hay[end - bytes.len()..end] == bytes[..] {
                        emit(m.id)
                    }
                }
            }
        }
    }

    /// Heap bytes of the member lists and keys.
    pub fn heap_bytes(&self) -> usize {
        self.keys.iter().map(|k| k.len() + 16).sum::<usize>()
            + self
                .members
                .iter()
                .flatten()
                .map(|m| 24 + m.exact.as_ref().map_or(0, |e| e.len()))
                .sum::<usize>()
            + self.members.len() * 24
    }
}
