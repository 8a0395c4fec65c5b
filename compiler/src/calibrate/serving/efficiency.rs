//! A serving engine's efficiency at a site: one factor multiplying both the bandwidth share and
//! the GEMM share its kernels reach ([`ServeFitted`]), fitted on measured serving runs by the
//! training fit's rules (`calibrate::fit`: the shrinkage `f^(n/(n+1))`, the uncertainty from
//! the residuals, never more factors than runs: one factor, on at least one run). The few-shot
//! test (`fewshot.rs`) and `loam calibrate --fit` on the runs store's serving rows both fit it
//! here.

use super::super::fit::{golden, shrink, uncertainty};
use super::{Cells, PreparedServing, ServeFitted, prepare_cells};
use crate::catalogue::Device;
use crate::runs::store::serving::ServingRow;
use crate::serve::Load;

/// The range searched for the unshrunk efficiency; [`EFFICIENCY_RANGE`] is what a calibration
/// file may hold.
const SEARCH: (f64, f64) = (0.4, 2.5);

/// A calibration file's engine efficiency outside these bounds is a broken run or a typo.
pub const EFFICIENCY_RANGE: (f64, f64) = (0.05, 5.0);

/// `ln(predicted / measured)` of a row's throughput, when it has one.
pub(crate) fn log_error(row: &PreparedServing, fitted: &ServeFitted) -> Option<f64> {
    let [throughput, _, _] = row.errors(fitted);
    throughput
        .map(|e| 1.0 + e / 100.0)
        .filter(|r| r.is_finite() && *r > 0.0)
        .map(libm::log)
}

/// Which measured figures a fit compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Figures {
    /// The throughput only (the published rows of the few-shot test: many state nothing else).
    #[cfg(test)]
    Throughput,
    /// Throughput, median TTFT and median TPOT (a store row states all three; below the
    /// deployment's capacity the throughput is the offered rate whatever the engine, and only
    /// the latencies tell its speed).
    All,
}

/// `ln(predicted / measured)` of each figure of `row` that `figures` compares and it measured.
fn log_errors(row: &PreparedServing, fitted: &ServeFitted, figures: Figures) -> Vec<f64> {
    let errors = row.errors(fitted);
    let take = match figures {
        #[cfg(test)]
        Figures::Throughput => 1,
        Figures::All => errors.len(),
    };
    errors
        .iter()
        .take(take)
        .filter_map(|e| *e)
        .map(|e| 1.0 + e / 100.0)
        .filter(|r| r.is_finite() && *r > 0.0)
        .map(libm::log)
        .collect()
}

/// The efficiency that minimises the squared log errors of `rows` from `base`, unshrunk (a row
/// whose throughput cannot be compared counts as a log error of 1 in the few-shot fit).
fn best(rows: &[&PreparedServing], base: &ServeFitted, figures: Figures) -> f64 {
    let objective = |log_e: f64| -> f64 {
        let fitted = base.with_efficiency(libm::exp(log_e));
        rows.iter()
            .map(|r| match figures {
                #[cfg(test)]
                Figures::Throughput => log_error(r, &fitted).map_or(1.0, |e| e * e),
                Figures::All => log_errors(r, &fitted, figures)
                    .iter()
                    .map(|e| e * e)
                    .sum::<f64>(),
            })
            .sum()
    };
    libm::exp(golden(objective, libm::log(SEARCH.0), libm::log(SEARCH.1)))
}

/// The shrunk efficiency fitted on `rows` from `base` on their throughput (the few-shot test).
#[cfg(test)]
pub(crate) fn fit_efficiency(rows: &[&PreparedServing], base: &ServeFitted) -> f64 {
    shrink(best(rows, base, Figures::Throughput), rows.len())
}

/// An engine's fit at a site.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineFit {
    /// The shrunk efficiency.
    pub efficiency: f64,
    /// Runs fitted.
    pub runs: usize,
    /// The relative throughput uncertainty a plan states with it.
    pub uncertainty: f64,
    /// Median `|error|` of the shrunk efficiency on the runs' throughput, percent.
    pub median_abs_error_pct: f64,
}

/// Fits one engine's efficiency on `rows` from `base` on every figure they measured: fitted
/// only when halving it moves some figure of some run by at least
/// [`SENSITIVITY`](super::super::fit::SENSITIVITY), as a training factor is; else 1.0. The
/// error and the uncertainty are the throughput's, which a plan's band states.
pub(crate) fn fit_engine(rows: &[&PreparedServing], base: &ServeFitted) -> EngineFit {
    let halved = base.with_efficiency(0.5);
    let sensitive = rows.iter().any(|r| {
        let (a, b) = (
            log_errors(r, base, Figures::All),
            log_errors(r, &halved, Figures::All),
        );
        a.iter()
            .zip(&b)
            .any(|(x, y)| (libm::exp(x - y) - 1.0).abs() >= super::super::fit::SENSITIVITY)
    });
    let (unshrunk, efficiency) = if sensitive {
        let e = best(rows, base, Figures::All);
        (e, shrink(e, rows.len()))
    } else {
        (1.0, 1.0)
    };
    let (at_best, shrunk) = (
        base.with_efficiency(unshrunk),
        base.with_efficiency(efficiency),
    );
    let residuals: Vec<f64> = rows.iter().filter_map(|r| log_error(r, &at_best)).collect();
    let abs: Vec<f64> = rows
        .iter()
        .filter_map(|r| log_error(r, &shrunk))
        .map(|l| 100.0 * (libm::exp(l) - 1.0).abs())
        .collect();
    EngineFit {
        efficiency,
        runs: rows.len(),
        uncertainty: uncertainty(&residuals, usize::from(sensitive)),
        median_abs_error_pct: super::super::median(abs),
    }
}

/// The serving rows of a runs store file (`runs/<site>/serving.csv`) that the serving model can
/// cost with a measured throughput, each with its row: the store's columns are named as the
/// published serving file's, so they are read and prepared by the same code.
pub(crate) fn prepare_store_rows(
    text: &str,
    device_lookup: &impl Fn(&str) -> Option<Device>,
) -> Vec<(ServingRow, PreparedServing)> {
    let rows = crate::runs::store::serving::read_rows(text);
    let Ok(cells) = super::super::cells::read_rows(text) else {
        return Vec::new();
    };
    let (_, prepared) = prepare_cells(&cells, device_lookup);
    let id = |i: usize| cells.get(i).map(|c: &Cells| c.text("run_id").to_string());
    prepared
        .into_iter()
        .map(|(i, mut p)| {
            // A benchmark offers its rate (or keeps its requests in flight) to the whole
            // deployment; the serving model's operating point is a replica's, at its share (a
            // disaggregated deployment's point is the whole deployment's).
            let replicas = f64::from(p.replicas.max(1));
            p.load = match p.load {
                load if p.is_disaggregated() => load,
                Load::Rate(r) => Load::Rate(r / replicas),
                Load::Concurrency(c) => Load::Concurrency((c / replicas).max(1.0)),
                other => other,
            };
            (i, p)
        })
        .filter(|(_, p)| log_error(p, &ServeFitted::SHIPPED).is_some())
        .filter_map(|(i, p)| {
            let run_id = id(i)?;
            let row = rows.iter().find(|r| r.run_id == run_id)?;
            Some((row.clone(), p))
        })
        .collect()
}
