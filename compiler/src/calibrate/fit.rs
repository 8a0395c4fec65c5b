//! `loam calibrate --fit`: a few physical factors of one site and device, fitted to measured runs
//! with the planner's own step-time function ([`crate::cost::estimate`]), shrunk toward the
//! shipped model, each fit with its uncertainty from the residuals.
//!
//! The factors are multipliers on figures the planner reads from the catalogue, so a plan at a
//! calibrated site applies them where it builds its cluster figures and nothing else changes:
//!
//! - `gemm`: the sustained GEMM share (`FittedConstants::gemm_sustained`) of the site's devices:
//!   clocks, power caps and the stack's kernels;
//! - `scale_out`: the effective scale-out bandwidth per node (NICs, switch, NCCL tuning);
//! - `scale_up`: the effective scale-up bandwidth per device (NVLink / xGMI / HCCS as the stack
//!   drives it);
//! - `fixed_s`: seconds every step spends outside the modelled kernels and collectives (data
//!   loading, logging, launch overheads of the site's stack), added to the step
//!   (`FittedConstants::step_overhead_s`). Additive, not a multiplier: 0.0 is the shipped model;
//! - `attention`: the attention kernels' throughput (`Efficiency::attention_forward` and
//!   `attention_backward` of the site's devices): the stack's attention kernel (an older or
//!   Triton kernel below FlashAttention-2's rates, FlashAttention-3 or cuDNN's fused attention
//!   above them), which the GEMM factor cannot stand for because attention's share of a step
//!   grows with the sequence and shrinks with the width.
//!
//! Rules, stated: a factor is fitted only when the runs are sensitive to it (halving it moves
//! some run's prediction by at least [`SENSITIVITY`]), in the order above, and at most one factor
//! per [`RUNS_PER_FACTOR`] runs (at least one): never more factors than runs. `attention` must
//! also be told apart from `gemm`: halving it must move some two runs' predictions by shares
//! that differ by [`SENSITIVITY`] (runs of one model at one sequence length move alike, and a
//! factor they move alike is the GEMM factor's to fit). The fit minimises the squared log errors; each fitted factor `f̂` is then shrunk
//! toward 1.0 (the shipped model) in log space, `f = f̂^(n/(n+k))` with `k` = [`PRIOR_RUNS`]: the
//! shipped model counts as one run. The additive `fixed_s` is shrunk toward 0.0 by the same
//! weight, `f̂ · n/(n+k)`, and counts as sensitive when adding a quarter of its upper bound
//! ([`fixed_bound`]) moves some run's prediction by [`SENSITIVITY`]: the analogue of halving. The throughput uncertainty a plan states is
//! `sqrt(s² + (p·k/(n+k))²)`: `s` the spread of the runs around their best fit (standard
//! deviation of the log errors with `n − factors` degrees of freedom, at least [`RUN_NOISE`]; `p`
//! when none is left) and `p` the prior's [`PRIOR_UNCERTAINTY`], the share of it the shrinkage
//! keeps.

use super::Prepared;
use crate::cost::estimate;
use crate::hardware::ClusterFigures;
use serde::Serialize;

/// Counted: how many runs the shipped model's prior is worth in the shrinkage `n/(n+k)`. One:
/// a single run moves a factor halfway, three runs three quarters of the way. (A prior weighed
/// by the runs' own spread, `k = s²/p²`, trusted three agreeing runs almost fully and did worse
/// on the runs held back in the few-shot test: 6.0 % against 5.0 % pooled. Three runs of one
/// family agree more with each other than with the family's other layouts.)
pub const PRIOR_RUNS: f64 = 1.0;

/// Fitted: the smallest spread of runs around a fit, in log terms: two logs of one job differ
/// by about 1 % in their steady step (the fixture logs' kept intervals spread 0.5–1 %), so runs
/// that a fit reproduces exactly still leave this much.
pub const RUN_NOISE: f64 = 0.01;

/// Fitted: the relative uncertainty of the shipped model's throughput on a stack and site it
/// was not calibrated on; the ±30 % an unmeasured device states
/// (`hardware::Efficiency::unmeasured`), and about the spread of `loam calibrate`'s errors over
/// the published runs' source families.
pub const PRIOR_UNCERTAINTY: f64 = 0.30;

/// Counted: the least change of some run's predicted throughput, as a share, when a factor is
/// halved, for the runs to tell that factor apart (a single-node run says nothing of the
/// scale-out network).
pub const SENSITIVITY: f64 = 0.005;

/// Counted: runs per fitted factor beyond the first. One factor is fitted from a single run;
/// a second needs six, a third nine: three runs that agree can only show a shift of the whole
/// site, not which figure causes it (fitting the network on three runs sent it to its bounds
/// and doubled the error on the runs held back, see the few-shot test).
pub const RUNS_PER_FACTOR: usize = 3;

/// Physical: the bounds of each factor. A GEMM cannot sustain more than the device's best
/// measured GEMM (`gemm_sustained · gemm ≤ 1`, checked where applied) nor, on a working device,
/// less than a third of the shipped share; an effective bandwidth lies between a tenth of the
/// catalogue's nominal one (a misconfigured fabric falling back to TCP) and 1.5 times it (a
/// nominal figure that understates the link).
const GEMM_BOUNDS: (f64, f64) = (0.33, 1.25);
const BANDWIDTH_BOUNDS: (f64, f64) = (0.1, 1.5);

/// Physical: the bounds of the attention factor. Kernels older than FlashAttention-2 (Triton's
/// or materialised attention) run it at about half its rate and FlashAttention-3 at 1.5–2.0
/// times it on H100 in 16-bit (Shah et al. 2024, "FlashAttention-3", §4.1): a third to twice the
/// shipped rate, never above the device's 16-bit peak (checked where applied).
const ATTENTION_BOUNDS: (f64, f64) = (0.33, 2.0);

/// Physical: the upper bound of `fixed_s` on `rows`, half the shortest measured step (the
/// lower bound is 0: a site adds time, it cannot take the modelled work away). A fixed cost of
/// half a step would mean the modelled work is at most the other half: a run like that is
/// stalled on something the model does not see (a starved data loader, a checkpoint every
/// step), which `loam runs check` should show rather than a calibration absorb into every plan.
/// A run's measured step is its predicted step scaled by predicted over measured throughput.
fn fixed_bound(rows: &[&Prepared]) -> f64 {
    rows.iter()
        .filter_map(|r| {
            let mut cluster = r.cluster.clone();
            Factors::ONE.apply(&mut cluster);
            let e = estimate(&r.model, &r.setup, &r.layout, &cluster).ok()?;
            let step = e.step_time_s * e.tokens_per_s_per_device / r.measured;
            (step.is_finite() && step > 0.0).then_some(step)
        })
        .fold(f64::INFINITY, f64::min)
        .min(1e6)
        / 2.0
}

/// The factors of one site and device; all 1.0 is the shipped model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Factors {
    /// Multiplies the sustained GEMM share.
    pub gemm: f64,
    /// Multiplies the scale-out bandwidth per node.
    pub scale_out: f64,
    /// Multiplies the scale-up bandwidth per device.
    pub scale_up: f64,
    /// Seconds added to every step (0.0 in the shipped model).
    pub fixed_s: f64,
    /// Multiplies the attention kernels' forward and backward throughput.
    pub attention: f64,
}

impl Factors {
    /// The shipped model.
    pub const ONE: Factors = Factors {
        gemm: 1.0,
        scale_out: 1.0,
        scale_up: 1.0,
        fixed_s: 0.0,
        attention: 1.0,
    };

    /// `cluster` with these factors applied: the one place a calibration changes what the cost
    /// model reads, also called by the planner (`NodeGroup::cluster_figures`).
    pub fn apply(&self, cluster: &mut ClusterFigures) {
        cluster.fitted.gemm_sustained = (cluster.fitted.gemm_sustained * self.gemm)
            .min(1.0_f64.max(cluster.fitted.gemm_sustained));
        cluster.node_network_bandwidth *= self.scale_out;
        cluster.device.scale_up_bandwidth *= self.scale_up;
        cluster.fitted.step_overhead_s += self.fixed_s;
        // A share of the 16-bit peak: at most the whole of it, and no lower than it stood if the
        // catalogue already gave more.
        let efficiency = &mut cluster.device.efficiency;
        for rate in [
            &mut efficiency.attention_forward,
            &mut efficiency.attention_backward,
        ] {
            *rate = (*rate * self.attention).min(1.0_f64.max(*rate));
        }
    }

    fn get(&self, i: usize) -> f64 {
        match i {
            0 => self.gemm,
            1 => self.scale_out,
            2 => self.scale_up,
            FIXED => self.fixed_s,
            _ => self.attention,
        }
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.gemm = value,
            1 => self.scale_out = value,
            2 => self.scale_up = value,
            FIXED => self.fixed_s = value,
            _ => self.attention = value,
        }
    }
}

/// The names of the factors, in fitting order.
pub const FACTOR_NAMES: [&str; 5] = ["gemm", "scale_out", "scale_up", "fixed_s", "attention"];

/// The index of the additive factor in [`FACTOR_NAMES`].
const FIXED: usize = 3;

/// The index of the attention factor in [`FACTOR_NAMES`].
const ATTENTION: usize = 4;

/// The result of one fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// The shrunk factors.
    pub factors: Factors,
    /// Which factors were fitted (the others stay 1.0).
    pub fitted: Vec<&'static str>,
    /// Runs fitted on.
    pub runs: usize,
    /// The throughput uncertainty a plan states with these factors (a share).
    pub uncertainty: f64,
    /// Median `|error|` of the shrunk factors on the runs fitted, in percent.
    pub median_abs_error_pct: f64,
}

/// The predicted tokens/s per device of `row` with `factors` (`None` when the model cannot cost
/// the layout any more).
pub(crate) fn predict(row: &Prepared, factors: &Factors) -> Option<f64> {
    let mut cluster = row.cluster.clone();
    factors.apply(&mut cluster);
    estimate(&row.model, &row.setup, &row.layout, &cluster)
        .ok()
        .map(|e| e.tokens_per_s_per_device)
        .filter(|t| t.is_finite() && *t > 0.0)
}

/// `ln(measured / predicted)` of each row; a row the model cannot cost counts as a factor-of-e
/// miss, so no fit escapes to a corner where rows stop costing.
fn log_errors(rows: &[&Prepared], factors: &Factors) -> Vec<f64> {
    rows.iter()
        .map(|r| predict(r, factors).map_or(1.0, |p| libm::log(r.measured / p)))
        .collect()
}

fn sum_squares(values: &[f64]) -> f64 {
    values.iter().map(|v| v * v).sum()
}

/// Fits the factors to `rows` (all of one site and device) by the rules of this module.
pub(crate) fn fit(rows: &[&Prepared]) -> Fit {
    let n = rows.len();
    let most = (n / RUNS_PER_FACTOR).max(1).min(n);
    let fixed_max = fixed_bound(rows);
    let mut chosen: Vec<usize> = Vec::new();
    for i in 0..FACTOR_NAMES.len() {
        if chosen.len() >= most {
            break;
        }
        let mut halved = Factors::ONE;
        if i == FIXED {
            if !(fixed_max.is_finite() && fixed_max > 0.0) {
                continue;
            }
            halved.set(i, fixed_max / 4.0);
        } else {
            halved.set(i, 0.5);
        }
        let moves: Vec<f64> = rows
            .iter()
            .filter_map(|r| match (predict(r, &Factors::ONE), predict(r, &halved)) {
                (Some(a), Some(b)) => Some((a - b).abs() / a),
                _ => None,
            })
            .collect();
        let sensitive = moves.iter().any(|m| *m >= SENSITIVITY);
        let apart_from_gemm = i != ATTENTION || {
            let (low, high) = moves
                .iter()
                .fold((f64::INFINITY, 0.0_f64), |(l, h), m| (l.min(*m), h.max(*m)));
            high - low >= SENSITIVITY
        };
        if sensitive && apart_from_gemm {
            chosen.push(i);
        }
    }
    let mut best = Factors::ONE;
    // Coordinate descent, each coordinate by golden-section search on the log of the factor
    // (on the seconds themselves for `fixed_s`); four sweeps settle three multipliers to well
    // under a per-cent. The fixed cost and the attention factor trade against the GEMM factor
    // (each lengthens every step, attention by a share that differs between runs), so with
    // either the sweeps go on until a sweep moves no factor by 1e-4, at most 64.
    let sweeps = if chosen.contains(&FIXED) || chosen.contains(&ATTENTION) {
        64
    } else {
        4
    };
    for _ in 0..sweeps {
        let before = best;
        for &i in &chosen {
            if i == FIXED {
                let objective = |value: f64| {
                    let mut trial = best;
                    trial.set(i, value);
                    sum_squares(&log_errors(rows, &trial))
                };
                best.set(i, golden(objective, 0.0, fixed_max));
                continue;
            }
            let bounds = match i {
                0 => GEMM_BOUNDS,
                ATTENTION => ATTENTION_BOUNDS,
                _ => BANDWIDTH_BOUNDS,
            };
            let objective = |log_value: f64| {
                let mut trial = best;
                trial.set(i, libm::exp(log_value));
                sum_squares(&log_errors(rows, &trial))
            };
            best.set(
                i,
                libm::exp(golden(objective, libm::log(bounds.0), libm::log(bounds.1))),
            );
        }
        let moved = (0..FACTOR_NAMES.len()).any(|i| (best.get(i) - before.get(i)).abs() > 1e-4);
        if !moved {
            break;
        }
    }
    let mut shrunk = Factors::ONE;
    for &i in &chosen {
        let value = if i == FIXED {
            shrink_additive(best.get(i), n)
        } else {
            shrink(best.get(i), n)
        };
        shrunk.set(i, value);
    }
    let residuals = log_errors(rows, &shrunk);
    let abs: Vec<f64> = residuals
        .iter()
        .map(|r| 100.0 * (1.0 - libm::exp(-r)).abs())
        .collect();
    Fit {
        factors: shrunk,
        fitted: chosen
            .iter()
            .filter_map(|i| FACTOR_NAMES.get(*i).copied())
            .collect(),
        runs: n,
        uncertainty: uncertainty(&log_errors(rows, &best), chosen.len()),
        median_abs_error_pct: super::median(abs),
    }
}

/// A factor fitted on `n` runs shrunk toward 1.0 (the shipped model) as `f^(n/(n+k))`,
/// `k` = [`PRIOR_RUNS`]: the one shrinkage rule of training and serving factors.
pub(crate) fn shrink(factor: f64, n: usize) -> f64 {
    libm::pow(factor, n as f64 / (n as f64 + PRIOR_RUNS))
}

/// An additive factor fitted on `n` runs shrunk toward 0.0 (the shipped model) by the weight
/// of [`shrink`]: `f · n/(n+k)`.
pub(crate) fn shrink_additive(value: f64, n: usize) -> f64 {
    value * n as f64 / (n as f64 + PRIOR_RUNS)
}

/// The relative uncertainty of a fit of `factors` factors whose runs' log errors at the best
/// (unshrunk) fit are `at_best`: `sqrt(s² + (p·k/(n+k))²)`, `s` their spread with
/// `n − factors` degrees of freedom (at least [`RUN_NOISE`]; [`PRIOR_UNCERTAINTY`] when none is
/// left), `p` the prior's uncertainty.
pub(crate) fn uncertainty(at_best: &[f64], factors: usize) -> f64 {
    let n = at_best.len();
    let dof = n.saturating_sub(factors);
    let spread = if dof == 0 {
        PRIOR_UNCERTAINTY
    } else {
        (sum_squares(at_best) / dof as f64).sqrt().max(RUN_NOISE)
    };
    let prior = PRIOR_UNCERTAINTY * PRIOR_RUNS / (n as f64 + PRIOR_RUNS);
    // At most ±100 %: runs that far from the model say the runs or the layout are wrong,
    // which `loam runs check` shows; a plan's band cannot grow without bound.
    (spread * spread + prior * prior).sqrt().min(1.0)
}

/// The minimum of a unimodal `f` on `[lo, hi]` by golden-section search, to 1e-4 in the
/// argument (a hundredth of a per-cent of a factor).
pub(crate) fn golden(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    let ratio = (5.0_f64.sqrt() - 1.0) / 2.0;
    let mut a = hi - ratio * (hi - lo);
    let mut b = lo + ratio * (hi - lo);
    let (mut fa, mut fb) = (f(a), f(b));
    while hi - lo > 1e-4 {
        if fa <= fb {
            hi = b;
            b = a;
            fb = fa;
            a = hi - ratio * (hi - lo);
            fa = f(a);
        } else {
            lo = a;
            a = b;
            fa = fb;
            b = lo + ratio * (hi - lo);
            fb = f(b);
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
/// `|error|` in percent of `row` predicted with `factors` (100 % when it cannot be costed), the
/// error signed as `loam calibrate` signs it but taken absolute.
pub(crate) fn abs_error_pct(row: &Prepared, factors: &Factors) -> f64 {
    predict(row, factors).map_or(100.0, |p| 100.0 * (p - row.measured).abs() / row.measured)
}

#[cfg(test)]
mod tests;
