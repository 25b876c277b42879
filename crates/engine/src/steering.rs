//! Flow steering for the offline reader: which worker gets a flow.
//!
//! Jiang et al.'s remedy for skewed flow sizes is an indirection table
//! between the flow hash and the workers, rebalanced for new flows from
//! the workers' measured load. Here the table has one entry per flow (a
//! pin: flow hash -> worker) and is rebalanced at every new flow: a flow's
//! first packet goes to the worker that was sent the fewest packets so far
//! (ties: the lowest worker number), and the flow's later packets follow
//! its pin. Coarser tables (4,096 hash buckets moved between workers every
//! 8,192 packets) balanced dev-mix worse at 4 workers than plain hashing
//! and no better at 16 (docs/performance.md, "Load balance over workers").
//! The load is the packets the reader sent, so every decision depends on
//! the input alone, never on timing: a run is repeatable, and since a
//! flow is never split between workers the output is the same for any
//! worker count. A pin is dropped once its flow has been idle longer than
//! any flow time-out (the worker's flow is gone by then too).
//!
//! Pins are bounded ([`SteeringConfig::max_pins`]): when the map is full,
//! new flows go to `hash % workers` for the rest of the run without a pin,
//! and no pin is made again (so an unpinned flow never meets a pin of its
//! own later); the fall-back is counted.

use std::collections::HashMap;

/// Settings of the balancing steering.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteeringConfig {
    /// Input packets between two sweeps of idle pins.
    pub sweep: u64,
    /// Idle time after which a flow's pin is dropped (ns): longer than
    /// every flow time-out.
    pub idle_ns: i64,
    /// Most flows pinned at once.
    pub max_pins: usize,
}

impl Default for SteeringConfig {
    fn default() -> Self {
        SteeringConfig {
            sweep: 8192,
            idle_ns: 661 * 1_000_000_000,
            max_pins: 1 << 21,
        }
    }
}

/// What the steering did, for stats.log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SteeringStats {
    /// Flows placed on the least loaded worker.
    pub flows_placed: u64,
    /// Most flows pinned at once.
    pub pins_peak: u64,
    /// Pins dropped after their flow's idle time.
    pub pins_expired: u64,
    /// 1 when the pin map filled and new flows fell back to the hash.
    pub frozen: u64,
}

#[derive(Debug, Clone, Copy)]
struct Pin {
    worker: u16,
    last_ns: i64,
}

/// The reader's flow-to-worker map (see the module docs).
#[derive(Debug)]
pub struct Steering {
    n: usize,
    cfg: Option<SteeringConfig>,
    pins: HashMap<u64, Pin, foldhash::fast::RandomState>,
    /// Packets sent to each worker so far.
    load: Vec<u64>,
    since_sweep: u64,
    frozen: bool,
    pub stats: SteeringStats,
}

impl Steering {
    /// Steering over `n` workers; `cfg` `None` is the static choice
    /// (`hash % n`).
    pub fn new(n: usize, cfg: Option<SteeringConfig>) -> Steering {
        let n = n.max(1);
        Steering {
            n,
            cfg: cfg.filter(|_| n > 1),
            pins: HashMap::default(),
            load: vec![0; n],
            since_sweep: 0,
            frozen: false,
            stats: SteeringStats::default(),
        }
    }

    /// The worker of the flow with dispatch hash `hash`, for a packet at
    /// `ts_ns`.
    pub fn worker(&mut self, hash: u64, ts_ns: i64) -> usize {
        let Some(cfg) = self.cfg else {
            return (hash % self.n as u64) as usize;
        };
        let full = self.frozen || self.pins.len() >= cfg.max_pins;
        let w = match self.pins.get_mut(&hash) {
            Some(p) => {
                p.last_ns = p.last_ns.max(ts_ns);
                p.worker as usize
            }
            None if full => {
                if !self.frozen {
                    self.frozen = true;
                    self.stats.frozen = 1;
                }
                (hash % self.n as u64) as usize
            }
            None => {
                let (w, _) = self
                    .load
                    .iter()
                    .enumerate()
                    .min_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)))
                    .expect("workers");
                self.pins.insert(
                    hash,
                    Pin {
                        worker: w as u16,
                        last_ns: ts_ns,
                    },
                );
                self.stats.flows_placed += 1;
                self.stats.pins_peak = self.stats.pins_peak.max(self.pins.len() as u64);
                w
            }
        };
        self.load[w] += 1;
        w
    }

    /// Counts one input record; every `sweep` records, drops idle pins.
    pub fn tick(&mut self, ts_ns: i64) {
        let Some(cfg) = self.cfg else {
            return;
        };
        self.since_sweep += 1;
        if self.since_sweep < cfg.sweep {
            return;
        }
        self.since_sweep = 0;
        let before = self.pins.len();
        self.pins
            .retain(|_, p| ts_ns.saturating_sub(p.last_ns) <= cfg.idle_ns);
        self.stats.pins_expired += (before - self.pins.len()) as u64;
    }

    /// Packets sent to each worker so far.
    pub fn load(&self) -> &[u64] {
        &self.load
    }

    /// Flows pinned now.
    pub fn pinned(&self) -> usize {
        self.pins.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(sweep: u64) -> SteeringConfig {
        SteeringConfig {
            sweep,
            idle_ns: 100,
            max_pins: 1000,
        }
    }

    #[test]
    fn static_steering_is_hash_modulo() {
        let mut s = Steering::new(3, None);
        for h in [0u64, 1, 2, 3, 77, u64::MAX] {
            assert_eq!(s.worker(h, 0), (h % 3) as usize);
            s.tick(0);
        }
        assert_eq!(s.pinned(), 0);
        // One worker: everything to worker 0, no pins.
        let mut one = Steering::new(1, Some(cfg(4)));
        assert_eq!(one.worker(12345, 0), 0);
        assert_eq!(one.pinned(), 0);
    }

    #[test]
    fn new_flows_go_to_the_least_loaded_worker_and_stay() {
        let mut s = Steering::new(2, Some(cfg(1000)));
        // Two flows whose hashes both say worker 0 (even).
        let (elephant, mouse) = (2u64, 4u64);
        assert_eq!(s.worker(elephant, 0), 0);
        // Worker 1 has carried nothing yet: the second flow goes there.
        assert_eq!(s.worker(mouse, 1), 1);
        for t in 2..10 {
            assert_eq!(s.worker(elephant, t), 0);
        }
        assert_eq!(s.load(), &[9, 1]);
        // New flows now go to worker 1 until it has caught up...
        for h in 10..18u64 {
            assert_eq!(s.worker(h * 2, 20), 1, "flow {h}");
        }
        assert_eq!(s.load(), &[9, 9]);
        // ... and the old flows keep their workers.
        assert_eq!(s.worker(mouse, 21), 1);
        assert_eq!(s.worker(elephant, 22), 0);
        assert_eq!(s.stats.flows_placed, 10);
    }

    #[test]
    fn pins_expire_after_idle_time() {
        let mut s = Steering::new(2, Some(cfg(4)));
        let (a, b) = (10u64, 11u64);
        for t in 0..4 {
            s.worker(if t % 2 == 0 { a } else { b }, t);
            s.tick(t);
        }
        assert_eq!(s.pinned(), 2);
        // Idle past 100 ns: dropped at the next sweep.
        for t in 200..204 {
            s.worker(1000 + t as u64, t);
            s.tick(t);
        }
        assert_eq!(s.stats.pins_expired, 2);
        assert_eq!(s.pinned(), 4);
    }

    #[test]
    fn full_pin_map_falls_back_to_the_hash_for_good() {
        let mut s = Steering::new(
            2,
            Some(SteeringConfig {
                max_pins: 2,
                ..cfg(4)
            }),
        );
        s.worker(2, 0);
        s.worker(4, 0);
        assert_eq!(s.pinned(), 2);
        // Full: a new flow takes hash % 2 without a pin.
        assert_eq!(s.worker(7, 1), 1);
        assert_eq!(s.worker(8, 1), 0);
        assert_eq!(s.stats.frozen, 1);
        // Room again after the sweep, but no new pins: flow 7 stays put.
        for t in 500..504 {
            s.tick(t);
        }
        assert_eq!(s.pinned(), 0);
        assert_eq!(s.worker(7, 505), 1);
        assert_eq!(s.pinned(), 0);
    }

    #[test]
    fn the_same_input_steers_the_same_way() {
        let run = || {
            let mut s = Steering::new(4, Some(cfg(64)));
            let mut out = Vec::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for t in 0..10_000i64 {
                // A few heavy flows and many light ones.
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let h = if x.is_multiple_of(3) { x % 5 } else { x >> 8 };
                out.push(s.worker(h, t));
                s.tick(t);
            }
            (out, s.stats)
        };
        let (a, sa) = run();
        let (b, sb) = run();
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert!(sa.flows_placed > 0);
    }
}
