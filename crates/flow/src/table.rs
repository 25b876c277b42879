//! The per-worker flow table: a hash map from [`FlowKey`] to a slab slot,
//! with an intrusive least-recently-seen list for eviction and expiry.

use std::collections::HashMap;

use crate::hash::FlowKey;

/// Which way a packet travels relative to the flow's initiator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the endpoint that sent the flow's first packet.
    ToServer,
    ToClient,
}

/// Coarse flow state used to pick a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lifecycle {
    #[default]
    New,
    Established,
    Closed,
}

/// Idle timeouts in seconds of packet time, per state, as Suricata's
/// `flow-timeouts` defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowTimeouts {
    pub new: u32,
    pub established: u32,
    pub closed: u32,
}

impl FlowTimeouts {
    /// Suricata's defaults for a protocol number.
    pub fn suricata_default(proto: u8) -> FlowTimeouts {
        match proto {
            6 => FlowTimeouts {
                new: 60,
                established: 600,
                closed: 60,
            },
            _ => FlowTimeouts {
                new: 30,
                established: 300,
                closed: 0,
            },
        }
    }

    pub fn for_state(&self, s: Lifecycle) -> u32 {
        match s {
            Lifecycle::New => self.new,
            Lifecycle::Established => self.established,
            Lifecycle::Closed => self.closed,
        }
    }
}

/// Idle timeouts by protocol (Suricata's `flow-timeouts` section: `tcp`,
/// `udp`, `icmp`, and `default` for the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutTable {
    pub default: FlowTimeouts,
    pub tcp: FlowTimeouts,
    pub udp: FlowTimeouts,
    pub icmp: FlowTimeouts,
}

impl Default for TimeoutTable {
    fn default() -> Self {
        let other = FlowTimeouts::suricata_default(17);
        TimeoutTable {
            default: other,
            tcp: FlowTimeouts::suricata_default(6),
            udp: other,
            icmp: other,
        }
    }
}

impl TimeoutTable {
    pub fn for_proto(&self, proto: u8) -> FlowTimeouts {
        match proto {
            6 => self.tcp,
            17 => self.udp,
            1 | 58 => self.icmp,
            _ => self.default,
        }
    }
}

/// One flow and the worker's state for it.
#[derive(Debug)]
pub struct Flow<T> {
    pub key: FlowKey,
    /// True when the initiator (first packet's source) is the key's `lo`.
    pub initiator_is_lo: bool,
    /// Stable id for output (deterministic: from the key and the index of
    /// the flow's first packet).
    pub id: u64,
    /// Index of the first packet (1-based input position).
    pub first_index: u64,
    /// Packet time of the first and last packet, in nanoseconds.
    pub first_ns: i64,
    pub last_ns: i64,
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    pub lifecycle: Lifecycle,
    pub state: T,
}

impl<T> Flow<T> {
    pub fn direction(&self, src_is_lo: bool) -> Direction {
        if src_is_lo == self.initiator_is_lo {
            Direction::ToServer
        } else {
            Direction::ToClient
        }
    }
}

/// Counters kept by the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowCounters {
    pub created: u64,
    pub timed_out: u64,
    /// Flows evicted because the table was full (memcap).
    pub memcap_evictions: u64,
    /// Flows still present at end of input.
    pub active: u64,
    pub peak_active: u64,
}

/// Result of [`FlowTable::lookup_or_create`].
pub struct FlowLookup {
    pub slot: u32,
    /// The flow was created by this packet.
    pub created: bool,
    pub direction: Direction,
}

const NIL: u32 = u32::MAX;

struct Slot<T> {
    flow: Option<Flow<T>>,
    prev: u32,
    next: u32,
}

/// A lock-free (single-owner) flow table with a flow-count cap.
pub struct FlowTable<T> {
    /// Keyed with foldhash, randomly seeded per table (the keys are
    /// chosen by whoever sends packets; SipHash cost 3% of a worker's
    /// instructions on dev-mix).
    map: HashMap<FlowKey, u32, foldhash::fast::RandomState>,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    /// Least recently seen at the head.
    head: u32,
    tail: u32,
    max_flows: usize,
    timeouts: TimeoutTable,
    counters: FlowCounters,
}

impl<T> FlowTable<T> {
    /// A table holding at most `max_flows` flows (at least 1).
    pub fn new(max_flows: usize) -> Self {
        FlowTable {
            map: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            max_flows: max_flows.max(1),
            timeouts: TimeoutTable::default(),
            counters: FlowCounters::default(),
        }
    }

    pub fn with_timeouts(mut self, t: TimeoutTable) -> Self {
        self.timeouts = t;
        self
    }

    pub fn timeouts(&self) -> &TimeoutTable {
        &self.timeouts
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn counters(&self) -> FlowCounters {
        FlowCounters {
            active: self.map.len() as u64,
            ..self.counters
        }
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = {
            let s = &self.slots[i as usize];
            (s.prev, s.next)
        };
        if p == NIL {
            self.head = n;
        } else {
            self.slots[p as usize].next = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.slots[n as usize].prev = p;
        }
    }

    fn push_tail(&mut self, i: u32) {
        self.slots[i as usize].prev = self.tail;
        self.slots[i as usize].next = NIL;
        if self.tail == NIL {
            self.head = i;
        } else {
            self.slots[self.tail as usize].next = i;
        }
        self.tail = i;
    }

    fn remove_slot(&mut self, i: u32) -> Flow<T> {
        self.unlink(i);
        let flow = self.slots[i as usize]
            .flow
            .take()
            .expect("linked slot holds a flow");
        self.map.remove(&flow.key);
        self.free.push(i);
        flow
    }

    fn expired(&self, f: &Flow<T>, now_ns: i64) -> bool {
        let t = self.timeouts.for_proto(f.key.proto).for_state(f.lifecycle) as i64;
        now_ns.saturating_sub(f.last_ns) > t.saturating_mul(1_000_000_000)
    }

    /// Finds the flow of a packet, or creates it. A flow found idle past
    /// its timeout is ended first (passed to `on_end`) and a new one
    /// created. When the table is full, expired flows are removed and then,
    /// if needed, the least recently seen one is evicted (counted). `init`
    /// builds the per-flow state of a new flow.
    #[allow(clippy::too_many_arguments)]
    pub fn lookup_or_create(
        &mut self,
        key: FlowKey,
        src_is_lo: bool,
        now_ns: i64,
        index: u64,
        init: impl FnOnce() -> T,
        mut on_end: impl FnMut(Flow<T>, EndReason),
    ) -> FlowLookup {
        if let Some(&i) = self.map.get(&key) {
            let expired = {
                let f = self.slots[i as usize].flow.as_ref().expect("mapped slot");
                self.expired(f, now_ns)
            };
            if !expired {
                self.unlink(i);
                self.push_tail(i);
                let f = self.slots[i as usize].flow.as_mut().expect("mapped slot");
                f.last_ns = f.last_ns.max(now_ns);
                let direction = f.direction(src_is_lo);
                return FlowLookup {
                    slot: i,
                    created: false,
                    direction,
                };
            }
            let f = self.remove_slot(i);
            self.counters.timed_out += 1;
            on_end(f, EndReason::Timeout);
        }
        if self.map.len() >= self.max_flows {
            self.expire(now_ns, &mut on_end);
        }
        while self.map.len() >= self.max_flows && self.head != NIL {
            let f = self.remove_slot(self.head);
            self.counters.memcap_evictions += 1;
            on_end(f, EndReason::Evicted);
        }
        let flow = Flow {
            key,
            initiator_is_lo: src_is_lo,
            id: flow_id(&key, index),
            first_index: index,
            first_ns: now_ns,
            last_ns: now_ns,
            pkts_toserver: 0,
            pkts_toclient: 0,
            bytes_toserver: 0,
            bytes_toclient: 0,
            lifecycle: Lifecycle::New,
            state: init(),
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize].flow = Some(flow);
                i
            }
            None => {
                self.slots.push(Slot {
                    flow: Some(flow),
                    prev: NIL,
                    next: NIL,
                });
                (self.slots.len() - 1) as u32
            }
        };
        self.push_tail(i);
        self.map.insert(key, i);
        self.counters.created += 1;
        self.counters.peak_active = self.counters.peak_active.max(self.map.len() as u64);
        FlowLookup {
            slot: i,
            created: true,
            direction: Direction::ToServer,
        }
    }

    pub fn get_mut(&mut self, slot: u32) -> Option<&mut Flow<T>> {
        self.slots.get_mut(slot as usize)?.flow.as_mut()
    }

    /// Removes the flow in `slot` (its connection ended and the same key
    /// starts a new one, e.g. TCP port reuse).
    pub fn remove(&mut self, slot: u32) -> Option<Flow<T>> {
        self.slots.get(slot as usize)?.flow.as_ref()?;
        Some(self.remove_slot(slot))
    }

    /// Removes flows idle past their timeout at `now_ns`, least recently
    /// seen first.
    pub fn expire(&mut self, now_ns: i64, on_end: &mut impl FnMut(Flow<T>, EndReason)) {
        // The list is ordered by last-seen time only approximately (packet
        // times can go backwards), so walk it all when asked explicitly but
        // stop at the first fresh flow, which bounds the cost per call.
        while self.head != NIL {
            let h = self.head;
            let expired = {
                let f = self.slots[h as usize].flow.as_ref().expect("linked slot");
                self.expired(f, now_ns)
            };
            if !expired {
                break;
            }
            let f = self.remove_slot(h);
            self.counters.timed_out += 1;
            on_end(f, EndReason::Timeout);
        }
    }

    /// Every flow in the table, mutably (in no particular order): state
    /// that must change for all flows at once, such as a rule reload.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut Flow<T>)) {
        for s in &mut self.slots {
            if let Some(fl) = s.flow.as_mut() {
                f(fl);
            }
        }
    }

    /// Ends every flow (end of input), in order of their first packet so
    /// that anything they emit is deterministic.
    pub fn drain(&mut self) -> Vec<Flow<T>> {
        let mut out: Vec<Flow<T>> = Vec::with_capacity(self.map.len());
        while self.head != NIL {
            out.push(self.remove_slot(self.head));
        }
        out.sort_by_key(|f| f.first_index);
        out
    }
}

/// Why a flow ended before the end of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Timeout,
    Evicted,
}

/// Deterministic flow id from the key and the first packet's index; fits in
/// 51 bits like Suricata's so JSON consumers keep full precision.
fn flow_id(key: &FlowKey, index: u64) -> u64 {
    let h = crate::hash::flow_hash(key) ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let h = crate::hash::flow_hash(&FlowKey {
        lo_addr: h as u128,
        ..*key
    });
    (h & ((1u64 << 51) - 1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn key(n: u8) -> (FlowKey, bool) {
        FlowKey::new(
            IpAddr::from([10, 0, 0, n]),
            1000 + n as u16,
            IpAddr::from([10, 0, 1, 1]),
            80,
            6,
            0,
        )
    }

    const S: i64 = 1_000_000_000;

    #[test]
    fn create_then_find_with_direction() {
        let mut t: FlowTable<u32> = FlowTable::new(10);
        let (k, lo) = key(1);
        let a = t.lookup_or_create(k, lo, 0, 1, || 7, |_, _| panic!());
        assert!(a.created);
        let b = t.lookup_or_create(k, !lo, S, 2, || 0, |_, _| panic!());
        assert!(!b.created);
        assert_eq!(b.slot, a.slot);
        assert_eq!(b.direction, Direction::ToClient);
        assert_eq!(t.get_mut(a.slot).unwrap().state, 7);
    }

    #[test]
    fn idle_flow_times_out_by_packet_time() {
        let mut t: FlowTable<()> = FlowTable::new(10);
        let (k, lo) = key(1);
        let first = t.lookup_or_create(k, lo, 0, 1, || (), |_, _| {});
        let id1 = t.get_mut(first.slot).unwrap().id;
        let mut ended = 0;
        // TCP new timeout is 60 s: 61 s later is a new flow.
        let again = t.lookup_or_create(
            k,
            lo,
            61 * S,
            5,
            || (),
            |_, r| {
                assert_eq!(r, EndReason::Timeout);
                ended += 1
            },
        );
        assert!(again.created);
        assert_eq!(ended, 1);
        assert_ne!(t.get_mut(again.slot).unwrap().id, id1);
        assert_eq!(t.counters().timed_out, 1);
    }

    #[test]
    fn memcap_evicts_least_recently_seen_and_counts() {
        let mut t: FlowTable<u8> = FlowTable::new(2);
        let (k1, l1) = key(1);
        let (k2, l2) = key(2);
        let (k3, l3) = key(3);
        t.lookup_or_create(k1, l1, 0, 1, || 1, |_, _| {});
        t.lookup_or_create(k2, l2, 1, 2, || 2, |_, _| {});
        // Touch flow 1 so flow 2 is the least recently seen.
        t.lookup_or_create(k1, l1, 2, 3, || 0, |_, _| {});
        let mut evicted = vec![];
        t.lookup_or_create(k3, l3, 3, 4, || 3, |f, r| evicted.push((f.state, r)));
        assert_eq!(evicted, vec![(2, EndReason::Evicted)]);
        assert_eq!(t.len(), 2);
        assert_eq!(t.counters().memcap_evictions, 1);
    }

    #[test]
    fn flood_stays_within_cap() {
        let mut t: FlowTable<()> = FlowTable::new(1000);
        for i in 0..100_000u32 {
            let (k, lo) = FlowKey::new(
                IpAddr::from(i.to_be_bytes()),
                (i % 60000) as u16,
                IpAddr::from([10, 0, 0, 1]),
                80,
                6,
                0,
            );
            t.lookup_or_create(k, lo, i as i64, i as u64 + 1, || (), |_, _| {});
            assert!(t.len() <= 1000);
        }
        assert_eq!(t.counters().memcap_evictions, 99_000);
        assert!(t.slots.len() <= 1000);
    }

    #[test]
    fn drain_in_first_packet_order() {
        let mut t: FlowTable<u8> = FlowTable::new(10);
        for (n, idx) in [(3u8, 9u64), (1, 2), (2, 5)] {
            let (k, lo) = key(n);
            t.lookup_or_create(k, lo, 0, idx, || n, |_, _| {});
        }
        let order: Vec<u64> = t.drain().iter().map(|f| f.first_index).collect();
        assert_eq!(order, vec![2, 5, 9]);
        assert!(t.is_empty());
    }
}
