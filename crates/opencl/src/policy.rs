//! The adaptive batch policy: how large a device batch may grow, and how
//! long it may wait to fill, so that a buffer's delay (waiting for its
//! batch to fill, then the device's time for the batch) stays within the
//! latency budget (`--max-latency-ms`).
//!
//! Araujo et al.'s Table 3 is this policy as a table: for each traffic
//! intensity and delay requirement, the largest buffer that keeps the delay
//! under the requirement, or "CPU" where even the smallest worthwhile
//! batch cannot. Here the table is computed, from two measurements kept up
//! to date while running:
//! - the arrival rate `R` of device-eligible bytes (bytes/ns, smoothed);
//! - the device time of a batch of `B` bytes, modelled as `a + b·B` (fixed
//!   cost per launch `a`, cost per byte `b`; fitted from completed
//!   batches).
//!
//! A batch of `B` bytes fills in `B / R` and then takes `a + b·B` on the
//! device, so the largest batch within budget `L` is
//! `B = (L − a) / (1/R + b)`, capped by the batch area; its time limit is
//! what the budget leaves after the device time, `L − a − b·B`. When `B`
//! falls under the smallest worthwhile batch the policy says CPU (the
//! table's low-rate corner).
//!
//! The policy is pure: callers pass the time (ns since any origin), so the
//! tests drive it with a simulated clock.

/// Policy settings.
#[derive(Debug, Clone, Copy)]
pub struct PolicyConfig {
    /// Delay budget per buffer, ns.
    pub budget_ns: u64,
    /// Largest batch, bytes (the slot's input area).
    pub max_bytes: u64,
    /// Smallest batch worth launching, bytes; below it the policy routes
    /// to the CPU.
    pub min_bytes: u64,
    /// Initial device model (from start-up calibration): fixed ns per
    /// launch and ns per byte.
    pub launch_ns: f64,
    pub ns_per_byte: f64,
}

/// What the policy says now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Launch at `bytes` or when the batch's first buffer has waited
    /// `time_limit_ns`, whichever comes first.
    Device { bytes: u64, time_limit_ns: u64 },
    /// The budget does not allow a worthwhile batch at this rate.
    Cpu,
}

/// The policy's state.
#[derive(Debug, Clone)]
pub struct Policy {
    cfg: PolicyConfig,
    launch_ns: f64,
    ns_per_byte: f64,
    /// Smoothed arrival rate, bytes/ns (`None` until the first window).
    rate: Option<f64>,
    window_start: Option<u64>,
    window_bytes: u64,
}

/// Arrival-rate window, ns: the rate is re-estimated this often.
const WINDOW_NS: u64 = 2_000_000;
/// Weight of a new measurement in the smoothed values.
const ALPHA: f64 = 0.3;

impl Policy {
    pub fn new(cfg: PolicyConfig) -> Policy {
        Policy {
            launch_ns: cfg.launch_ns.max(0.0),
            ns_per_byte: cfg.ns_per_byte.max(0.0),
            cfg,
            rate: None,
            window_start: None,
            window_bytes: 0,
        }
    }

    pub fn config(&self) -> &PolicyConfig {
        &self.cfg
    }

    /// `bytes` of device-eligible input arrived at `now` (whatever path
    /// they then take).
    pub fn offered(&mut self, bytes: u64, now: u64) {
        let start = *self.window_start.get_or_insert(now);
        self.window_bytes += bytes;
        let dt = now.saturating_sub(start);
        if dt >= WINDOW_NS {
            let r = self.window_bytes as f64 / dt as f64;
            self.rate = Some(match self.rate {
                None => r,
                Some(old) => old + ALPHA * (r - old),
            });
            self.window_start = Some(now);
            self.window_bytes = 0;
        }
    }

    /// A batch of `bytes` took `device_ns` from launch to results.
    pub fn observed(&mut self, bytes: u64, device_ns: u64) {
        // Split the measurement with the current model's ratio between
        // the fixed and the per-byte part, then smooth each.
        let model = self.launch_ns + self.ns_per_byte * bytes as f64;
        let t = device_ns as f64;
        if model <= 0.0 || bytes == 0 {
            self.launch_ns += ALPHA * (t - self.launch_ns);
            return;
        }
        let scale = t / model;
        self.launch_ns += ALPHA * (self.launch_ns * scale - self.launch_ns);
        self.ns_per_byte += ALPHA * (self.ns_per_byte * scale - self.ns_per_byte);
    }

    /// Smoothed arrival rate, bytes per second.
    pub fn rate_bytes_per_s(&self) -> Option<f64> {
        self.rate.map(|r| r * 1e9)
    }

    /// Modelled device time of a batch of `bytes`, ns.
    pub fn device_ns(&self, bytes: u64) -> f64 {
        self.launch_ns + self.ns_per_byte * bytes as f64
    }

    /// The batch size and time limit for the current rate and model.
    pub fn target(&self) -> Target {
        let l = self.cfg.budget_ns as f64;
        let room = l - self.launch_ns;
        if room <= 0.0 {
            return Target::Cpu;
        }
        let bytes = match self.rate {
            // No measurement yet: as large as the budget allows at the
            // device's own speed, capped.
            None => room / self.ns_per_byte.max(1e-6),
            Some(r) if r <= 0.0 => 0.0,
            Some(r) => room / (1.0 / r + self.ns_per_byte),
        };
        let bytes = bytes.min(self.cfg.max_bytes as f64);
        if bytes < self.cfg.min_bytes as f64 {
            return Target::Cpu;
        }
        let left = l - self.device_ns(bytes as u64);
        Target::Device {
            bytes: bytes as u64,
            time_limit_ns: left.max(0.0) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn cfg() -> PolicyConfig {
        PolicyConfig {
            budget_ns: 50 * MS,
            max_bytes: 32 << 20,
            min_bytes: 16 << 10,
            launch_ns: 1.0 * MS as f64,
            // 1 GB/s device.
            ns_per_byte: 1.0,
        }
    }

    /// Feeds `rate` bytes/s for `secs` of simulated time in 100 µs steps,
    /// starting at `t0`; returns the end time.
    fn feed(p: &mut Policy, rate: f64, t0: u64, secs: f64) -> u64 {
        let step = 100_000u64;
        let per = (rate * step as f64 / 1e9) as u64;
        let mut t = t0;
        while t < t0 + (secs * 1e9) as u64 {
            t += step;
            p.offered(per, t);
        }
        t
    }

    fn within_budget(p: &Policy, rate: f64) -> (u64, u64) {
        match p.target() {
            Target::Device {
                bytes,
                time_limit_ns,
            } => {
                let fill = bytes as f64 / (rate / 1e9);
                let delay = fill.min(time_limit_ns as f64) + p.device_ns(bytes);
                assert!(
                    delay <= p.config().budget_ns as f64 * 1.001,
                    "delay {delay} over budget at {rate} B/s ({bytes} bytes)"
                );
                (bytes, time_limit_ns)
            }
            Target::Cpu => (0, 0),
        }
    }

    #[test]
    fn batch_size_tracks_a_changing_arrival_rate() {
        let mut p = Policy::new(cfg());
        let mut t = 0;
        let mut sizes = Vec::new();
        // 50 Mbit/s, 400 Mbit/s, 1 Gbit/s, back to 100 Mbit/s.
        for mbps in [50.0, 400.0, 1000.0, 100.0] {
            let rate = mbps * 1e6 / 8.0;
            t = feed(&mut p, rate, t, 0.2);
            let (b, _) = within_budget(&p, rate);
            sizes.push(b);
        }
        assert!(sizes[0] > 0);
        assert!(sizes[1] > sizes[0] * 4, "{sizes:?}");
        assert!(sizes[2] > sizes[1], "{sizes:?}");
        assert!(sizes[3] < sizes[2] / 4, "{sizes:?}");
        // Each size is close to the rate's share of the budget.
        for (mbps, b) in [50.0, 400.0, 1000.0, 100.0].iter().zip(&sizes) {
            let rate = mbps * 1e6 / 8.0 / 1e9;
            let ideal = (49.0 * MS as f64) / (1.0 / rate + 1.0);
            assert!((*b as f64 - ideal).abs() / ideal < 0.05, "{b} vs {ideal}");
        }
    }

    #[test]
    fn low_rate_goes_to_the_cpu_and_comes_back() {
        let mut p = Policy::new(cfg());
        // 1 Mbit/s: 50 ms hold ~6 KB, under the 16 KB minimum.
        let t = feed(&mut p, 1e6 / 8.0, 0, 0.2);
        assert_eq!(p.target(), Target::Cpu);
        let t = feed(&mut p, 200e6 / 8.0, t, 0.2);
        let _ = t;
        assert!(matches!(p.target(), Target::Device { .. }));
    }

    #[test]
    fn larger_budget_allows_larger_batches() {
        let mut small = Policy::new(cfg());
        let mut large = Policy::new(PolicyConfig {
            budget_ns: 500 * MS,
            ..cfg()
        });
        feed(&mut small, 100e6 / 8.0, 0, 0.1);
        feed(&mut large, 100e6 / 8.0, 0, 0.1);
        let (a, _) = within_budget(&small, 100e6 / 8.0);
        let (b, _) = within_budget(&large, 100e6 / 8.0);
        assert!(b > a * 5, "{a} {b}");
    }

    #[test]
    fn slower_device_shrinks_the_batch_and_time_limit() {
        let mut p = Policy::new(cfg());
        let t = feed(&mut p, 1e9 / 8.0, 0, 0.1);
        let (b0, l0) = within_budget(&p, 1e9 / 8.0);
        // The device turns out 4x slower than calibrated.
        for _ in 0..30 {
            p.observed(b0, (MS as f64 + 4.0 * b0 as f64) as u64);
        }
        feed(&mut p, 1e9 / 8.0, t, 0.1);
        let (b1, l1) = within_budget(&p, 1e9 / 8.0);
        assert!(b1 < b0, "{b0} {b1}");
        assert!(l1 <= l0 + MS, "{l0} {l1}");
    }

    #[test]
    fn batch_is_capped_by_the_area_and_budget_below_launch_cost_is_cpu() {
        let mut p = Policy::new(PolicyConfig {
            budget_ns: 10_000 * MS,
            ..cfg()
        });
        feed(&mut p, 10e9, 0, 0.05);
        match p.target() {
            Target::Device { bytes, .. } => assert_eq!(bytes, 32 << 20),
            t => panic!("{t:?}"),
        }
        let p = Policy::new(PolicyConfig {
            budget_ns: MS / 2,
            ..cfg()
        });
        assert_eq!(p.target(), Target::Cpu);
    }
}
