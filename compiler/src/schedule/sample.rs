//! Monte Carlo durations: each job's hours of work drawn from its plan's throughput
//! uncertainty and failure rate, with a seeded generator so the same seed gives the same
//! schedule everywhere (no platform float functions: uniforms and sums only).

use loam_ir::plan::Plan;

/// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA
/// 2014): a 64-bit state, one multiply-xorshift chain per draw, the same numbers on every
/// platform.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        // Constants of the published algorithm.
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1): the top 53 bits as a double's mantissa.
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal by the Irwin–Hall sum of twelve uniforms minus six (variance 1; tails
    /// cut at ±6, far beyond the P90 this feeds).
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
    }

    /// Poisson with mean `lambda`: Knuth's product of uniforms below 30 (counted: its loop is
    /// short there), the normal approximation rounded above.
    pub(crate) fn poisson(&mut self, lambda: f64) -> u64 {
        if lambda <= 0.0 || !lambda.is_finite() {
            return 0;
        }
        if lambda > 30.0 {
            let x = lambda + lambda.sqrt() * self.normal();
            return x.round().max(0.0) as u64;
        }
        let limit = libm::exp(-lambda);
        let mut product = self.uniform();
        let mut k = 0;
        // Bounded: P(k > 200 | lambda ≤ 30) is below 1e-80.
        while product > limit && k < 200 {
            product *= self.uniform();
            k += 1;
        }
        k
    }
}

/// What one plan's duration is drawn from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spread {
    /// Hours of training without failures or checkpoint writes.
    failure_free_h: f64,
    /// Hours spent writing checkpoints.
    stall_h: f64,
    /// Relative throughput uncertainty (0.3 = ±30 %).
    uncertainty: f64,
    /// Failures per hour of the whole job.
    failures_per_h: f64,
    /// Mean hours redone after a failure (half an interval and the write in flight).
    lost_h: f64,
    /// Hours to restart after a failure.
    restart_h: f64,
}

impl Spread {
    /// The spread of `plan` whose expected work is `expected_h` (used whole when the plan
    /// states no goodput model).
    pub(crate) fn of(plan: &Plan, expected_h: f64) -> Spread {
        let estimate = plan.estimate.as_ref();
        let uncertainty = estimate
            .and_then(|e| e.throughput_uncertainty)
            .unwrap_or(0.0)
            .clamp(0.0, 0.9);
        match estimate.and_then(|e| e.goodput.as_ref()) {
            Some(g) => Spread {
                failure_free_h: g.failure_free_time_h,
                stall_h: g.checkpoint_stall_h,
                uncertainty,
                failures_per_h: g.interruptions_per_device_hour
                    * plan.groups.iter().map(|x| x.devices).sum::<u64>() as f64,
                lost_h: g.lost_work_min / 60.0,
                restart_h: g.restart_min / 60.0,
            },
            None => Spread {
                failure_free_h: expected_h,
                stall_h: 0.0,
                uncertainty,
                failures_per_h: 0.0,
                lost_h: 0.0,
                restart_h: 0.0,
            },
        }
    }

    /// One draw: the throughput uniform within ± the uncertainty (the catalogue states a bound,
    /// not a distribution), failures Poisson over the drawn time, each losing a uniform share
    /// of up to twice the mean lost work (so its mean is the plan's) plus the restart.
    pub(crate) fn draw(&self, rng: &mut Rng) -> f64 {
        let throughput = 1.0 + self.uncertainty * (2.0 * rng.uniform() - 1.0);
        let time_h = self.failure_free_h / throughput.max(0.1) + self.stall_h;
        let failures = rng.poisson(self.failures_per_h * time_h);
        let lost: f64 = (0..failures.min(10_000))
            .map(|_| 2.0 * self.lost_h * rng.uniform() + self.restart_h)
            .sum();
        time_h + lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_numbers_and_the_means_hold() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<f64> = (0..5).map(|_| a.uniform()).collect();
        let ys: Vec<f64> = (0..5).map(|_| b.uniform()).collect();
        assert_eq!(xs, ys);
        // The mean of Poisson(4) over 20,000 draws is 4 within 5 standard errors
        // (sqrt(4 / 20000) = 0.014, so ±0.07).
        let mut rng = Rng::new(1);
        let mean = (0..20_000).map(|_| rng.poisson(4.0) as f64).sum::<f64>() / 20_000.0;
        assert!((mean - 4.0).abs() < 0.07, "{mean}");
        let mean = (0..20_000).map(|_| rng.poisson(50.0) as f64).sum::<f64>() / 20_000.0;
        assert!((mean - 50.0).abs() < 0.25, "{mean}");
    }
}
