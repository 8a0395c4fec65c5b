//! Cross-validation by source family: refit the cost model's fitted constants without one
//! family of published runs, and measure the error on that family.
//!
//! A constant fitted on every row can hide over-fitting: a value that suits one recipe's runs
//! may be wrong for the next recipe. Leaving each family out in turn (NeMo 24.07, torchtitan,
//! Megatron-Bridge …) shows how the model does on runs whose family it was not tuned on, which
//! is the situation of every plan loam makes. The refit re-costs each row's layout as the
//! shipped constants chose it; only [`FittedConstants`] vary.

use super::hetero::calibrate_hetero_with;
use super::{CalibrationError, Prepared, calibrate_prepared, median};
use crate::cost::FittedConstants;
use crate::cost::estimate;
use crate::hardware::DeviceFigures;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The grid each fitted constant is searched on: physical bounds, steps finer than the data
/// can tell apart.
const GEMM_SUSTAINED_GRID: (f64, f64, f64) = (0.70, 1.0, 0.02);
const OVERLAP_CONTENTION_GRID: (f64, f64, f64) = (0.0, 0.5, 0.05);

/// One left-out family.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FamilyFold {
    /// The family: the `run_id` prefix before its first `_`.
    pub family: String,
    /// Costed runs of the family.
    pub rows: usize,
    /// The constants refitted on every other family.
    pub fitted: FittedConstants,
    /// Median `|error|` on the family's runs with those constants, in percent.
    pub median_abs_error_pct: f64,
    /// Median `|error|` on the family's runs with the shipped constants, in percent.
    pub shipped_median_abs_error_pct: f64,
}

/// The whole cross-validation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrossValidation {
    /// One fold per family, sorted by family.
    pub folds: Vec<FamilyFold>,
    /// The constants fitted on every costed run (what [`FittedConstants::SHIPPED`] should be).
    pub fitted_on_all: FittedConstants,
    /// Median `|error|` over every run, each predicted by the fold that left its family out.
    pub median_abs_error_pct: f64,
    /// Share of runs within ±20 % that way.
    pub within_20_pct_share: f64,
}

/// Refits the fitted constants with each source family of `csv_text` left out in turn.
pub fn cross_validate(
    csv_text: &str,
    device_lookup: impl Fn(&str) -> Option<DeviceFigures>,
) -> Result<CrossValidation, CalibrationError> {
    let (_, prepared) = calibrate_prepared(csv_text, &device_lookup)?;
    let mut families: BTreeMap<&str, Vec<&Prepared>> = BTreeMap::new();
    for p in &prepared {
        families.entry(p.family.as_str()).or_default().push(p);
    }
    let everyone: Vec<&Prepared> = prepared.iter().collect();
    let mut folds = Vec::new();
    let mut held_out_errors = Vec::new();
    for (family, members) in &families {
        let rest: Vec<&Prepared> = prepared.iter().filter(|p| p.family != *family).collect();
        let fitted = fit(&rest);
        let errors = abs_errors(members, &fitted);
        held_out_errors.extend(errors.iter().copied());
        folds.push(FamilyFold {
            family: (*family).to_string(),
            rows: members.len(),
            fitted,
            median_abs_error_pct: median(errors),
            shipped_median_abs_error_pct: median(abs_errors(members, &FittedConstants::SHIPPED)),
        });
    }
    let n = held_out_errors.len().max(1) as f64;
    let within = held_out_errors.iter().filter(|e| **e <= 20.0).count() as f64 / n;
    Ok(CrossValidation {
        folds,
        fitted_on_all: fit(&everyone),
        median_abs_error_pct: median(held_out_errors),
        within_20_pct_share: within,
    })
}

/// `|error|` in percent of each run under `fitted`; a run the model cannot cost counts as a
/// miss of 100 %.
fn abs_errors(rows: &[&Prepared], fitted: &FittedConstants) -> Vec<f64> {
    rows.iter()
        .map(|p| {
            let mut cluster = p.cluster.clone();
            cluster.fitted = *fitted;
            match estimate(&p.model, &p.setup, &p.layout, &cluster) {
                Ok(e) => 100.0 * (e.tokens_per_s_per_device - p.measured).abs() / p.measured,
                Err(_) => 100.0,
            }
        })
        .collect()
}

fn grid((from, to, step): (f64, f64, f64)) -> impl Iterator<Item = f64> {
    let steps = ((to - from) / step).round() as u32;
    // Rounded to the grid's decimals, so that a fitted value prints and compares as written.
    (0..=steps).map(move |i| ((from + f64::from(i) * step) * 1e6).round() / 1e6)
}

/// Every point of the grid, in grid order.
fn grid_points() -> Vec<FittedConstants> {
    grid(GEMM_SUSTAINED_GRID)
        .flat_map(|gemm_sustained| {
            grid(OVERLAP_CONTENTION_GRID).map(move |overlap_contention| FittedConstants {
                gemm_sustained,
                overlap_contention,
                ..FittedConstants::SHIPPED
            })
        })
        .collect()
}

/// Medians of `|error|` closer than this (in percentage points) are one fit: the report prints
/// them to one decimal, and a median over a few dozen runs does not resolve finer. Taking the
/// lowest median exactly let a fold jump to a far grid point for a hundredth of a point (without
/// Korthikanti et al.'s eight runs the refit went to 0.84 / 0.30 and costed them at 5.5 %, against
/// 3.8 % with the constants a tie keeps); the left-out median was
/// 8.0 % with exact ties, 6.9, 6.5, 6.8 and 6.8 % at 0.05, 0.1, 0.2 and 0.3 point, and the fit on
/// every run stays at the shipped constants up to 0.1 (docs/cost-model.md, "Cross-validation by
/// source family").
const MEDIAN_TIE_PCT: f64 = 0.1;

/// The point of the grid whose `|error|`s (`errors` of it) have the lowest median, medians
/// within [`MEDIAN_TIE_PCT`] of it counted as ties and broken by the mean, then by grid order,
/// so the fit is deterministic and does not jump on noise.
fn best_on_grid(errors: impl Fn(&FittedConstants) -> Vec<f64>) -> FittedConstants {
    let scored: Vec<(f64, f64, FittedConstants)> = grid_points()
        .into_iter()
        .map(|fitted| {
            let errors = errors(&fitted);
            let mean = errors.iter().sum::<f64>() / errors.len().max(1) as f64;
            (median(errors), mean, fitted)
        })
        .collect();
    let lowest = scored.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
    let mut best = (f64::INFINITY, FittedConstants::SHIPPED);
    for (median, mean, fitted) in scored {
        if median <= lowest + MEDIAN_TIE_PCT && mean < best.0 {
            best = (mean, fitted);
        }
    }
    best.1
}

/// The constants on the grid with the lowest median `|error|` over `rows`.
pub(crate) fn fit(rows: &[&Prepared]) -> FittedConstants {
    best_on_grid(|fitted| abs_errors(rows, fitted))
}

/// Refits the fitted constants on a heterogeneous-run file with each source family (the
/// `point_id` prefix before its first `_`) left out in turn: the same grid and rule as
/// [`cross_validate`], each row re-costed through the heterogeneous costing
/// ([`calibrate_hetero_with`]), whose stages, overlap and step read the constants. A row costed
/// with the shipped constants that a refit cannot cost counts as a miss of 100 %.
pub fn cross_validate_hetero(
    csv_text: &str,
    device_lookup: impl Fn(&str) -> Option<DeviceFigures>,
) -> Result<CrossValidation, CalibrationError> {
    let shipped = calibrate_hetero_with(csv_text, &device_lookup, FittedConstants::SHIPPED)?;
    // The rows costed with the shipped constants, by family.
    let costed: Vec<(usize, String)> = shipped
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.error_pct.is_some())
        .map(|(i, r)| (i, family_of(&r.point_id)))
        .collect();
    // Each grid point costs the file once; the folds pick their rows from these.
    let mut by_point: Vec<(FittedConstants, Vec<f64>)> = Vec::new();
    for fitted in grid_points() {
        let report = calibrate_hetero_with(csv_text, &device_lookup, fitted)?;
        let errors = costed
            .iter()
            .map(|(i, _)| {
                report
                    .rows
                    .get(*i)
                    .and_then(|r| r.error_pct)
                    .map_or(100.0, f64::abs)
            })
            .collect();
        by_point.push((fitted, errors));
    }
    let errors_of = |fitted: &FittedConstants, keep: &dyn Fn(&str) -> bool| -> Vec<f64> {
        by_point
            .iter()
            .find(|(f, _)| f == fitted)
            .map(|(_, errors)| {
                errors
                    .iter()
                    .zip(&costed)
                    .filter(|(_, (_, family))| keep(family))
                    .map(|(e, _)| *e)
                    .collect()
            })
            .unwrap_or_default()
    };
    let shipped_errors = |family: &str| -> Vec<f64> {
        costed
            .iter()
            .filter(|(_, f)| f == family)
            .filter_map(|(i, _)| shipped.rows.get(*i)?.error_pct.map(f64::abs))
            .collect()
    };
    let families: std::collections::BTreeSet<&str> =
        costed.iter().map(|(_, f)| f.as_str()).collect();
    let mut folds = Vec::new();
    let mut held_out = Vec::new();
    for family in families {
        let fitted = best_on_grid(|f| errors_of(f, &|other| other != family));
        let errors = errors_of(&fitted, &|other| other == family);
        held_out.extend(errors.iter().copied());
        folds.push(FamilyFold {
            family: family.to_string(),
            rows: errors.len(),
            fitted,
            median_abs_error_pct: median(errors),
            shipped_median_abs_error_pct: median(shipped_errors(family)),
        });
    }
    let n = held_out.len().max(1) as f64;
    let within = held_out.iter().filter(|e| **e <= 20.0).count() as f64 / n;
    Ok(CrossValidation {
        folds,
        fitted_on_all: best_on_grid(|f| errors_of(f, &|_| true)),
        median_abs_error_pct: median(held_out),
        within_20_pct_share: within,
    })
}

/// A heterogeneous row's source family: its `point_id` up to the first `_`.
fn family_of(point_id: &str) -> String {
    point_id.split('_').next().unwrap_or(point_id).to_string()
}

/// The cross-validation as a table: one line per left-out family, then the pooled result.
pub fn render_cross_validation(cv: &CrossValidation) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14} {:>5} {:>15} {:>19} {:>22} {:>17}",
        "left out",
        "runs",
        "gemm_sustained",
        "overlap_contention",
        "median |error| refit",
        "with shipped"
    );
    for f in &cv.folds {
        let _ = writeln!(
            out,
            "{:<14} {:>5} {:>15.2} {:>19.2} {:>21.1}% {:>16.1}%",
            f.family,
            f.rows,
            f.fitted.gemm_sustained,
            f.fitted.overlap_contention,
            f.median_abs_error_pct,
            f.shipped_median_abs_error_pct
        );
    }
    let _ = writeln!(
        out,
        "left-out families: median |error| {:.1}%, within ±20%: {:.0}% of runs",
        cv.median_abs_error_pct,
        100.0 * cv.within_20_pct_share
    );
    let _ = writeln!(
        out,
        "fitted on every run: gemm_sustained {:.2}, overlap_contention {:.2} (shipped {:.2}, {:.2})",
        cv.fitted_on_all.gemm_sustained,
        cv.fitted_on_all.overlap_contention,
        FittedConstants::SHIPPED.gemm_sustained,
        FittedConstants::SHIPPED.overlap_contention
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `|error|`s per grid point, keyed by its two constants: the shipped point's median is
    /// lowest by a hundredth of a point, a far point's is a tie with a much lower mean, a third's
    /// mean is lower still but its median is a fifth of a point worse.
    fn errors_of(fitted: &FittedConstants) -> Vec<f64> {
        let at = |g: f64, o: f64| {
            (fitted.gemm_sustained - g).abs() < 1e-9 && (fitted.overlap_contention - o).abs() < 1e-9
        };
        if at(0.86, 0.35) {
            vec![1.0, 5.00, 40.0]
        } else if at(0.88, 0.50) {
            vec![4.0, 5.05, 6.0]
        } else if at(0.90, 0.25) {
            vec![0.0, 5.2, 5.2]
        } else {
            vec![50.0; 3]
        }
    }

    #[test]
    fn medians_a_printed_digit_apart_are_ties_broken_by_the_mean() {
        let best = best_on_grid(errors_of);
        assert_eq!((best.gemm_sustained, best.overlap_contention), (0.88, 0.50));
    }

    #[test]
    fn a_median_worse_by_more_than_the_tie_is_not_taken_for_its_mean() {
        // Without the far tie, the shipped point wins although 0.90 / 0.25 has the lowest mean.
        let best = best_on_grid(|f| {
            let e = errors_of(f);
            if e == [4.0, 5.05, 6.0] {
                vec![50.0; 3]
            } else {
                e
            }
        });
        assert_eq!((best.gemm_sustained, best.overlap_contention), (0.86, 0.35));
    }
}
