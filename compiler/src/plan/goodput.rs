//! Goodput: what failures and checkpoints cost a run. One function of the job's interruption
//! rate, the time to write a checkpoint and the time to restart gives the checkpoint interval
//! and the expected wall time; the search scores every layout with it, and the plan states it
//! (`estimate.goodput`), so deadline, budget and the manifests' restart budgets agree.
//!
//! Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps" (Future
//! Generation Computer Systems 22, 2006): with `M` the job's mean time between interruptions,
//! `δ` the time to write a checkpoint, `R` the time to restart and `τ` the compute between
//! checkpoints, the expected wall time of `T` seconds of work is
//! `M·e^{R/M}·(e^{(τ+δ)/M} − 1)·T/τ`, and the interval that minimises it is
//! `τ = √(2δM)·(1 + ⅓·√(δ/2M) + δ/18M) − δ` while `δ < 2M` (else `τ = M`).

use crate::catalogue::{Device, Site};
use loam_ir::plan::GoodputIr;

/// What a run's failures depend on, for one node group or a pair of them.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Failures {
    /// Job-interrupting failures per device-second (1 / the device's MTBF).
    pub per_device_s: f64,
    /// Seconds to write one checkpoint.
    pub write_s: f64,
    /// Seconds from a failure until training runs again, reading the checkpoint included.
    pub restart_s: f64,
    /// The spec's checkpoint interval, when it pins one.
    pub pinned_interval_s: Option<f64>,
}

impl Failures {
    /// No failures and free checkpoints: the wall time is the failure-free time.
    pub const NONE: Failures = Failures {
        per_device_s: 0.0,
        write_s: 0.0,
        restart_s: 0.0,
        pinned_interval_s: None,
    };

    /// The failures of `device` at `site` for a checkpoint of `bytes`: written and read back at
    /// the site's storage bandwidth.
    pub fn at(device: &Device, site: &Site, bytes: f64, pinned_interval_s: Option<f64>) -> Self {
        let write_s = bytes / site.storage_bandwidth.max(1.0);
        Failures {
            per_device_s: 1.0 / device.mtbf_s.max(1.0),
            write_s,
            restart_s: site.restart_s + write_s,
            pinned_interval_s,
        }
    }

    /// The run of `devices` devices that needs `work_s` seconds without failures.
    pub fn run(&self, work_s: f64, devices: u64) -> Run {
        Run::new(
            self.per_device_s * devices as f64,
            self.write_s,
            self.restart_s,
            self.pinned_interval_s,
            work_s,
        )
    }

    /// The run of a pair: both groups' failures interrupt it, checkpoints take as long as the
    /// slower write and a restart as long as the slower one.
    pub fn pair_run(pair: [&Failures; 2], devices: [u64; 2], work_s: f64) -> Run {
        let rate =
            pair[0].per_device_s * devices[0] as f64 + pair[1].per_device_s * devices[1] as f64;
        Run::new(
            rate,
            pair[0].write_s.max(pair[1].write_s),
            pair[0].restart_s.max(pair[1].restart_s),
            pair[0].pinned_interval_s,
            work_s,
        )
    }
}

/// A run with its failures: the checkpoint interval and the expected wall time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    /// Failure-free seconds of training.
    pub work_s: f64,
    /// Expected wall seconds: work, checkpoint writes, restarts and redone work.
    pub wall_s: f64,
    /// Seconds of training between checkpoints.
    pub interval_s: f64,
    /// Interruptions per second of the whole job.
    pub rate_per_s: f64,
    /// Seconds to write one checkpoint.
    pub write_s: f64,
    /// Seconds to restart after a failure.
    pub restart_s: f64,
}

impl Run {
    fn new(rate_per_s: f64, write_s: f64, restart_s: f64, pinned: Option<f64>, work_s: f64) -> Run {
        let write_s = write_s.max(0.0);
        // A run shorter than its pinned interval never reaches a checkpoint: a failure loses at
        // most the whole run, so the interval that counts is the work itself (a `52w` interval
        // on a two-hour job made Daly's factor lose 40 % of the run to failures never due).
        let pinned = pinned.map(|p| {
            if work_s.is_finite() && work_s > 0.0 {
                p.min(work_s)
            } else {
                p
            }
        });
        let (interval_s, factor) = stretch_factor(rate_per_s, write_s, restart_s, pinned);
        let wall_s = if !work_s.is_finite() {
            work_s
        } else if rate_per_s > 0.0 && interval_s > 0.0 {
            // `factor` is `m·e^{R/M}·(e^{(τ+δ)/M} − 1)`, the left operand of the same product
            // evaluated in the same order, so the wall time is bit for bit what it was.
            factor * work_s / interval_s
        } else if interval_s.is_finite() && interval_s > 0.0 {
            work_s * (1.0 + write_s / interval_s)
        } else {
            work_s
        };
        Run {
            work_s,
            wall_s: wall_s.max(work_s),
            interval_s,
            rate_per_s,
            write_s,
            restart_s,
        }
    }

    /// Wall time over failure-free time (1 without failures).
    pub fn stretch(&self) -> f64 {
        if self.work_s > 0.0 && self.wall_s.is_finite() {
            self.wall_s / self.work_s
        } else {
            1.0
        }
    }

    /// Interruptions expected over the run.
    pub fn interruptions(&self) -> f64 {
        self.wall_s * self.rate_per_s
    }

    /// What the plan states, with the devices the rate is spread over.
    pub fn ir(&self, devices: u64) -> GoodputIr {
        let round = loam_ir::display::significant;
        let expected = self.interruptions();
        GoodputIr {
            fraction: round(1.0 / self.stretch()),
            failure_free_time_h: round(self.work_s / 3600.0),
            interruptions_per_device_hour: round(self.rate_per_s * 3600.0 / devices.max(1) as f64),
            interruptions_expected: round(expected),
            restart_min: round(self.restart_s / 60.0),
            lost_work_min: round((self.interval_s.min(self.work_s) + self.write_s) / 2.0 / 60.0),
            checkpoint_stall_h: round(
                self.work_s / self.interval_s.max(1.0) * self.write_s / 3600.0,
            ),
            restart_budget: restart_budget(expected),
        }
    }
}

/// Puts `run` into `plan`: the checkpoint interval and write time, the wall time as the training
/// time, and the goodput. The plan's money, energy and carbon come from the objective's outcome,
/// which already holds the devices for the wall time.
pub(crate) fn state(plan: &mut loam_ir::plan::Plan, run: &Run, devices: u64, path: &str) {
    let round = loam_ir::display::significant;
    let interval_s = if run.interval_s.is_finite() {
        run.interval_s
    } else {
        run.work_s
    };
    plan.checkpoint = Some(loam_ir::plan::CheckpointIr {
        interval_min: round(interval_s / 60.0),
        write_s: round(run.write_s),
        path: path.to_string(),
    });
    if let Some(e) = plan.estimate.as_mut() {
        e.train_time_h = round(run.wall_s / 3600.0);
        e.goodput = Some(run.ir(devices));
    }
}

/// The checkpoint interval and the factor `m·e^{R/M}·(e^{(τ+δ)/M} − 1)` of a run's wall time
/// (`factor · work / τ`). Neither depends on the work, only on the rate (so on the device count),
/// the write and restart times and a pinned interval: the search asks for the same few values for
/// thousands of layouts, so the last ones computed on this thread are kept (a pure function's
/// results: which are kept changes only how long it takes), 1,024 of them: a pipeline search
/// lists a few hundred device counts per pair of tensor degrees and data degree, again for each
/// micro-batch, and 64 kept too few to meet them again.
fn stretch_factor(
    rate_per_s: f64,
    write_s: f64,
    restart_s: f64,
    pinned: Option<f64>,
) -> (f64, f64) {
    type Slot = Option<([u64; 4], (f64, f64))>;
    thread_local! {
        static KEPT: std::cell::RefCell<[Slot; 1024]> = const { std::cell::RefCell::new([None; 1024]) };
    }
    let key = [
        rate_per_s.to_bits(),
        write_s.to_bits(),
        restart_s.to_bits(),
        pinned.map_or(u64::MAX, f64::to_bits),
    ];
    let slot = (key
        .iter()
        .fold(0u64, |h, k| (h ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        >> 54) as usize;
    if let Some(Some((kept, value))) = KEPT.with(|k| k.borrow().get(slot).copied())
        && kept == key
    {
        return value;
    }
    let interval_s = pinned.unwrap_or_else(|| daly_interval(write_s, rate_per_s));
    let factor = if rate_per_s > 0.0 && interval_s > 0.0 {
        let m = 1.0 / rate_per_s;
        // libm, not the platform's: a plan must be byte-identical everywhere.
        m * libm::exp(restart_s / m) * libm::expm1((interval_s + write_s) / m)
    } else {
        0.0
    };
    KEPT.with(|k| {
        if let Some(s) = k.borrow_mut().get_mut(slot) {
            *s = Some((key, (interval_s, factor)));
        }
    });
    (interval_s, factor)
}

/// Daly's higher-order optimum: the seconds of work between checkpoints that minimise the
/// expected wall time, given the write time and the job's interruption rate (never less than one
/// write; unbounded without failures).
pub fn daly_interval(write_s: f64, rate_per_s: f64) -> f64 {
    if rate_per_s <= 0.0 {
        return f64::INFINITY;
    }
    let m = 1.0 / rate_per_s;
    if write_s >= 2.0 * m {
        return m;
    }
    let x = write_s / (2.0 * m);
    let tau = (2.0 * write_s * m).sqrt() * (1.0 + x.sqrt() / 3.0 + x / 9.0) - write_s;
    tau.max(write_s)
}

/// Restarts to allow for `expected` interruptions: three standard deviations above the mean of
/// a Poisson count, plus three for failures that are not the hardware's (a bad node at start, a
/// preemption). Saturates at `u64::MAX` (and NaN gives 3); no manifest can carry more than
/// `i32::MAX`, and the planner refuses a plan that needs more (L3009).
pub fn restart_budget(expected: f64) -> u64 {
    let expected = if expected.is_nan() {
        0.0
    } else {
        expected.max(0.0)
    };
    // `as` saturates a float too large for u64 (documented Rust semantics), and L3009 refuses
    // every budget above i32::MAX before a backend sees it.
    (expected + 3.0 * expected.sqrt() + 3.0).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Daly's own worked examples (δ = 5 min): M = 24 h gives 117 min, M = 6 h 57 min,
    /// M = 15 min 9.1 min (rounded as in the paper).
    #[test]
    fn the_interval_matches_dalys_examples() {
        let minutes = |m_h: f64| daly_interval(300.0, 1.0 / (m_h * 3600.0)) / 60.0;
        assert_eq!(minutes(24.0).round(), 117.0);
        assert_eq!(minutes(6.0).round(), 57.0);
        assert!((minutes(0.25) - 9.1).abs() < 0.05, "{}", minutes(0.25));
    }

    /// Llama 3 405B's pretraining (Meta, 2024): 419 unexpected interruptions in 54 days on
    /// 16,384 H100 GPUs. The catalogue's H100 MTBF must predict that many over that time.
    #[test]
    fn the_h100_rate_predicts_the_published_llama3_interruptions() {
        let catalogue = crate::catalogue::builtin();
        let h100 = catalogue.device("H100_SXM").unwrap();
        let expected: f64 = 54.0 * 86_400.0 * 16_384.0 / h100.mtbf_s;
        assert!((expected - 419.0).abs() / 419.0 < 0.15, "{expected}");
    }

    #[test]
    fn without_failures_the_wall_time_is_the_work() {
        let run = Failures::NONE.run(3600.0, 512);
        assert_eq!(run.wall_s, 3600.0);
        assert_eq!(run.ir(512).fraction, 1.0);
    }

    #[test]
    fn more_devices_lose_more_time_and_need_more_restarts() {
        let f = Failures {
            per_device_s: 1.0 / (50_000.0 * 3600.0),
            write_s: 60.0,
            restart_s: 900.0,
            pinned_interval_s: None,
        };
        let small = f.run(30.0 * 86_400.0, 64);
        let large = f.run(30.0 * 86_400.0, 16_384);
        assert!(small.stretch() < large.stretch());
        assert!(large.stretch() < 1.5);
        assert!(large.ir(16_384).restart_budget > large.interruptions() as u64);
        assert!(large.interval_s < small.interval_s);
    }

    /// The kept factor gives the wall time bit for bit as the closed form, whichever keys were
    /// asked for before (slots collide and are overwritten).
    #[test]
    fn kept_factors_give_the_closed_form_bit_for_bit() {
        let closed = |rate: f64, write: f64, restart: f64, work: f64| {
            let tau = daly_interval(write, rate);
            let m = 1.0 / rate;
            m * libm::exp(restart / m) * libm::expm1((tau + write) / m) * work / tau
        };
        for round in 0..3 {
            for devices in 1..300_u64 {
                let f = Failures {
                    per_device_s: 1.0 / (50_000.0 * 3600.0),
                    write_s: 30.0 + f64::from(round),
                    restart_s: 900.0,
                    pinned_interval_s: None,
                };
                let work = 1e6 + devices as f64 * 17.0;
                let run = f.run(work, devices);
                let expected = closed(f.per_device_s * devices as f64, f.write_s, 900.0, work);
                assert_eq!(run.wall_s.to_bits(), expected.max(work).to_bits());
            }
        }
    }

    #[test]
    fn the_budget_covers_three_deviations() {
        assert_eq!(restart_budget(0.0), 3);
        assert_eq!(restart_budget(100.0), 133);
        assert_eq!(restart_budget(f64::NAN), 3);
        assert_eq!(restart_budget(1e33), u64::MAX);
    }

    /// A pinned interval longer than the run counts as the run: a two-hour job with a 52-week
    /// interval loses what a failure during those two hours costs, not a year's rework.
    #[test]
    fn a_pinned_interval_beyond_the_run_counts_as_the_run() {
        let f = Failures {
            per_device_s: 1.0 / (50_000.0 * 3600.0),
            write_s: 1.0,
            restart_s: 900.0,
            pinned_interval_s: Some(52.0 * 7.0 * 86_400.0),
        };
        let run = f.run(2.0 * 3600.0, 4);
        assert!(run.stretch() < 1.01, "{}", run.stretch());
        assert!(run.interval_s <= 2.0 * 3600.0);
    }

    fn finding_of(job: &str, g: &GoodputIr) -> Option<loam_ir::findings::PlanDiagnosticIr> {
        loam_ir::findings::goodput_finding(
            job,
            g.fraction,
            g.restart_budget,
            g.interruptions_expected,
        )
    }

    /// A budget no int32 manifest field can carry, or a goodput below one half, is L3009.
    #[test]
    fn a_plan_lost_to_failures_is_refused() {
        let f = Failures {
            per_device_s: 1.0 / (50_000.0 * 3600.0),
            write_s: 60.0,
            restart_s: 900.0,
            pinned_interval_s: Some(52.0 * 7.0 * 86_400.0),
        };
        let run = f.run(365.0 * 86_400.0, 4096);
        let ir = run.ir(4096);
        let finding = finding_of("big", &ir).unwrap();
        assert_eq!(
            finding.code,
            loam_ir::diagnostics::codes::plan::FAILURES_DOMINATE
        );
        let fine = Failures {
            pinned_interval_s: None,
            ..f
        }
        .run(30.0 * 86_400.0, 4096);
        assert!(finding_of("ok", &fine.ir(4096)).is_none());
    }
}
