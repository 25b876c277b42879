//! Per-flow byte-rate tracking for elephant flows (Suricata 8+'s
//! `flow.rate-tracking`, util-flow-rate.c): each direction of a flow
//! sums its bytes (whole frames) over the last `interval` seconds; once
//! the sum reaches `bytes` the direction is an elephant, for the rest of
//! the flow.

/// `flow.rate-tracking` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateConfig {
    /// `flow.rate-tracking.bytes`: the threshold within one window.
    pub bytes: u64,
    /// `flow.rate-tracking.interval`: the window, in whole seconds
    /// (1..=[`MAX_INTERVAL`]).
    pub interval: u16,
}

/// The largest `interval` accepted: a flow holds 2 x 8 bytes per second
/// of window (Suricata accepts up to 65535 and charges it to its flow
/// memcap; Vigil caps the window at one hour, 57.6 KB per tracked flow).
pub const MAX_INTERVAL: u16 = 3600;

impl RateConfig {
    /// Checks the values as Suricata does (`bytes` and an `interval` of
    /// 1..=65535 are required), with Vigil's cap on the interval.
    pub fn new(bytes: u64, interval: u16) -> Result<RateConfig, String> {
        if interval == 0 || interval > MAX_INTERVAL {
            return Err(format!(
                "flow.rate-tracking.interval: {interval} is not a number of seconds from 1 to {MAX_INTERVAL}"
            ));
        }
        Ok(RateConfig { bytes, interval })
    }
}

/// One direction's window: one byte count per second, in a ring indexed
/// by the second modulo the interval.
#[derive(Debug, Clone)]
struct DirRate {
    buckets: Box<[u64]>,
    /// The newest second counted; `None` before the first packet.
    last_sec: Option<i64>,
    /// Sum of `buckets`: the bytes of the last `interval` seconds.
    sum: u64,
}

impl DirRate {
    fn new(interval: u16) -> DirRate {
        DirRate {
            buckets: vec![0; usize::from(interval.max(1))].into_boxed_slice(),
            last_sec: None,
            sum: 0,
        }
    }

    fn slot(&self, sec: i64) -> usize {
        sec.rem_euclid(self.buckets.len() as i64) as usize
    }

    /// Adds `len` bytes at second `sec`; returns the window's sum. A
    /// packet older than the newest one counts in the newest second.
    fn add(&mut self, sec: i64, len: u64) -> u64 {
        let now = match self.last_sec {
            Some(last) if sec > last => {
                let gap = sec - last;
                if gap >= self.buckets.len() as i64 {
                    self.buckets.fill(0);
                    self.sum = 0;
                } else {
                    for s in last + 1..=sec {
                        let i = self.slot(s);
                        self.sum -= self.buckets[i];
                        self.buckets[i] = 0;
                    }
                }
                sec
            }
            Some(last) => last,
            None => sec,
        };
        self.last_sec = Some(now);
        let i = self.slot(now);
        self.buckets[i] = self.buckets[i].saturating_add(len);
        self.sum = self.sum.saturating_add(len);
        self.sum
    }
}

/// A flow's rate tracker: both directions and their elephant flags.
#[derive(Debug, Clone)]
pub struct FlowRate {
    dirs: [DirRate; 2],
    elephant: [bool; 2],
}

impl FlowRate {
    pub fn new(cfg: &RateConfig) -> FlowRate {
        FlowRate {
            dirs: [DirRate::new(cfg.interval), DirRate::new(cfg.interval)],
            elephant: [false; 2],
        }
    }

    /// Counts a packet of `len` bytes at second `sec` (`to_server`
    /// picks the direction). Returns true when this packet made the
    /// direction an elephant.
    pub fn update(&mut self, cfg: &RateConfig, sec: i64, len: u64, to_server: bool) -> bool {
        let d = usize::from(!to_server);
        let sum = self.dirs[d].add(sec, len);
        if !self.elephant[d] && sum >= cfg.bytes {
            self.elephant[d] = true;
            return true;
        }
        false
    }

    /// (to-server, to-client) elephant flags.
    pub fn elephant(&self) -> [bool; 2] {
        self.elephant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_slides_by_whole_seconds() {
        let cfg = RateConfig::new(200, 4).unwrap();
        let mut r = FlowRate::new(&cfg);
        // 48 + 44 + 47 + 46 in four consecutive seconds: 185, below 200.
        for (s, n) in [(0, 48), (1, 44), (2, 47), (3, 46)] {
            assert!(!r.update(&cfg, 1000 + s, n, true));
        }
        assert_eq!(r.dirs[0].sum, 185);
        // Second 4 drops second 0: 185 - 48 + 43.
        assert!(!r.update(&cfg, 1004, 43, true));
        assert_eq!(r.dirs[0].sum, 180);
        // A long gap empties the window.
        assert!(!r.update(&cfg, 1060, 44, true));
        assert_eq!(r.dirs[0].sum, 44);
        // Reaching the threshold makes the direction an elephant, once.
        assert!(r.update(&cfg, 1060, 156, true));
        assert!(!r.update(&cfg, 1060, 1000, true));
        assert_eq!(r.elephant(), [true, false]);
        // The flag stays when the rate drops.
        assert!(!r.update(&cfg, 2000, 1, true));
        assert_eq!(r.elephant(), [true, false]);
        // The other direction has its own window.
        assert!(r.update(&cfg, 2000, 200, false));
        assert_eq!(r.elephant(), [true, true]);
    }

    #[test]
    fn older_packets_count_in_the_newest_second() {
        let cfg = RateConfig::new(100, 2).unwrap();
        let mut r = FlowRate::new(&cfg);
        r.update(&cfg, 10, 60, true);
        r.update(&cfg, 11, 10, true);
        r.update(&cfg, 5, 10, true);
        assert_eq!(r.dirs[0].sum, 80);
        r.update(&cfg, 12, 0, true);
        assert_eq!(r.dirs[0].sum, 20);
    }

    #[test]
    fn interval_is_bounded() {
        assert!(RateConfig::new(1, 0).is_err());
        assert!(RateConfig::new(1, MAX_INTERVAL + 1).is_err());
        assert!(RateConfig::new(1, MAX_INTERVAL).is_ok());
    }
}
