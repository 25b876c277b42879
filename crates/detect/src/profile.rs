//! Rule profiling (`--profile-rules N`): what each rule costs in phase 2.
//!
//! A worker's [`crate::DetectScratch`] carries a [`RuleProfile`] only when
//! profiling is on; every verification of a candidate rule (packet,
//! stream and transaction inspection) is then timed and counted. When it
//! is off the only cost is one `Option` test per candidate.

use std::time::Instant;

/// Cost of one rule, summed over the checks made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuleCost {
    /// Times the rule was verified (a candidate of phase 2).
    pub checks: u64,
    /// Checks that matched (alert, pass or a silent match).
    pub matches: u64,
    /// Nanoseconds spent verifying the rule, all checks.
    pub nanos: u64,
    /// ... of which in checks that matched.
    pub nanos_match: u64,
    /// The longest single check.
    pub max_nanos: u64,
}

impl RuleCost {
    pub fn add(&mut self, o: &RuleCost) {
        self.checks += o.checks;
        self.matches += o.matches;
        self.nanos += o.nanos;
        self.nanos_match += o.nanos_match;
        self.max_nanos = self.max_nanos.max(o.max_nanos);
    }
}

/// Per-rule costs, indexed like [`crate::DetectEngine::rules`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleProfile {
    pub rules: Vec<RuleCost>,
}

impl RuleProfile {
    pub fn new(rules: usize) -> RuleProfile {
        RuleProfile {
            rules: vec![RuleCost::default(); rules],
        }
    }

    #[inline]
    fn record(&mut self, rule: u32, nanos: u64, matched: bool) {
        if let Some(c) = self.rules.get_mut(rule as usize) {
            c.checks += 1;
            c.nanos += nanos;
            c.max_nanos = c.max_nanos.max(nanos);
            if matched {
                c.matches += 1;
                c.nanos_match += nanos;
            }
        }
    }

    /// Adds another worker's profile (same ruleset).
    pub fn add(&mut self, o: &RuleProfile) {
        if self.rules.len() < o.rules.len() {
            self.rules.resize(o.rules.len(), RuleCost::default());
        }
        for (a, b) in self.rules.iter_mut().zip(&o.rules) {
            a.add(b);
        }
    }

    /// The `n` costliest rules (by total time, then checks, then index),
    /// as `(rule index, cost)`; rules never checked are left out.
    pub fn top(&self, n: usize) -> Vec<(u32, RuleCost)> {
        let mut v: Vec<(u32, RuleCost)> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, c)| c.checks > 0)
            .map(|(i, c)| (i as u32, *c))
            .collect();
        v.sort_by(|a, b| {
            b.1.nanos
                .cmp(&a.1.nanos)
                .then(b.1.checks.cmp(&a.1.checks))
                .then(a.0.cmp(&b.0))
        });
        v.truncate(n);
        v
    }

    /// Total time over every rule.
    pub fn total_nanos(&self) -> u64 {
        self.rules.iter().map(|c| c.nanos).sum()
    }
}

/// Times one check of one rule; records on drop, so every way out of the
/// check (no match, match, `pass`) is counted.
pub(crate) struct CheckTimer<'a> {
    on: Option<(&'a mut RuleProfile, Instant)>,
    rule: u32,
    pub(crate) matched: bool,
}

impl<'a> CheckTimer<'a> {
    #[inline]
    pub(crate) fn start(profile: &'a mut Option<Box<RuleProfile>>, rule: u32) -> CheckTimer<'a> {
        CheckTimer {
            on: profile.as_deref_mut().map(|p| (p, Instant::now())),
            rule,
            matched: false,
        }
    }
}

impl Drop for CheckTimer<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some((p, t0)) = self.on.take() {
            let ns = t0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
            p.record(self.rule, ns, self.matched);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_records_checks_and_matches() {
        let mut prof = Some(Box::new(RuleProfile::new(3)));
        {
            let _t = CheckTimer::start(&mut prof, 1);
        }
        {
            let mut t = CheckTimer::start(&mut prof, 1);
            t.matched = true;
        }
        {
            let mut t = CheckTimer::start(&mut prof, 2);
            t.matched = true;
        }
        let p = prof.unwrap();
        assert_eq!(p.rules[0].checks, 0);
        assert_eq!((p.rules[1].checks, p.rules[1].matches), (2, 1));
        assert_eq!((p.rules[2].checks, p.rules[2].matches), (1, 1));
        assert!(p.rules[1].nanos >= p.rules[1].nanos_match);
        assert!(p.rules[1].max_nanos <= p.rules[1].nanos);
        let top = p.top(10);
        assert_eq!(top.len(), 2);
        assert!(top.iter().all(|(i, _)| *i != 0));
    }

    #[test]
    fn off_records_nothing() {
        let mut prof: Option<Box<RuleProfile>> = None;
        let mut t = CheckTimer::start(&mut prof, 5);
        t.matched = true;
        drop(t);
        assert!(prof.is_none());
    }

    #[test]
    fn profiles_add_up() {
        let mut a = RuleProfile::new(2);
        a.record(0, 10, true);
        let mut b = RuleProfile::new(2);
        b.record(0, 30, false);
        b.record(1, 5, false);
        a.add(&b);
        assert_eq!(
            a.rules[0],
            RuleCost {
                checks: 2,
                matches: 1,
                nanos: 40,
                nanos_match: 10,
                max_nanos: 30
            }
        );
        assert_eq!(a.total_nanos(), 45);
        assert_eq!(a.top(1)[0].0, 0);
    }
}
