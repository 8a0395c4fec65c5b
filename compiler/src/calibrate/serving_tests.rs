//! The serving calibration on the shared inference file: the goals, and the shipped constants
//! equal to the fit.

use super::*;
use crate::catalogue::builtin;
use crate::serve::ServeFitted;

const CSV: &str = include_str!("../../../tests/data/inference_runs_calibration.csv");

/// Goals: median `|error|` over the file, per metric (issue 16).
const THROUGHPUT_BOUND_PCT: f64 = 15.0;
const LATENCY_BOUND_PCT: f64 = 20.0;

fn lookup(id: &str) -> Option<crate::catalogue::Device> {
    builtin().device(id).cloned()
}

#[test]
fn serving_calibration_meets_its_goals() {
    let report = calibrate_serving(CSV, lookup).unwrap();
    let m = report.metrics;
    assert!(m.throughput.rows >= 50, "{m:?}");
    assert!(
        m.throughput.median_abs_error_pct <= THROUGHPUT_BOUND_PCT,
        "{m:?}"
    );
    assert!(m.ttft.median_abs_error_pct <= LATENCY_BOUND_PCT, "{m:?}");
    assert!(m.tpot.median_abs_error_pct <= LATENCY_BOUND_PCT, "{m:?}");
    for row in &report.rows {
        assert_eq!(
            row.not_costed.is_some(),
            row.throughput_error_pct.is_none()
                && row.ttft_error_pct.is_none()
                && row.tpot_error_pct.is_none(),
            "{row:?}"
        );
    }
}

#[test]
fn shipped_serving_constants_are_the_fit_on_the_file() {
    let fitted = fit_serving(CSV, lookup).unwrap();
    assert_eq!(fitted, ServeFitted::SHIPPED, "refit: {fitted:?}");
}

#[test]
fn a_serving_csv_is_recognised_by_its_columns_and_a_missing_one_refused() {
    assert_eq!(csv_kind(CSV), CsvKind::Serving);
    let without_tp = CSV.replacen(",tp,", ",tensor,", 1);
    let err = calibrate_serving(&without_tp, lookup).unwrap_err();
    assert!(err.to_string().contains("`tp`"), "{err}");
}
