//! Plain-text rendering of a serving calibration report and its cross-validation.

use super::serving::{ServingCalibrationReport, ServingCrossValidation, ServingMetrics};
use std::fmt::Write;

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

fn err(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:+.1}%"))
}

fn metric_lines(out: &mut String, indent: &str, m: &ServingMetrics) {
    for (name, s) in [
        ("output throughput", m.throughput),
        ("TTFT", m.ttft),
        ("TPOT / ITL", m.tpot),
    ] {
        if s.rows == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "{indent}{name}: median |error| {:.1}%, mean |error| {:.1}%, within ±20%: {:.0}% of {} rows",
            s.median_abs_error_pct,
            s.mean_abs_error_pct,
            100.0 * s.within_20_pct_share,
            s.rows
        );
    }
}

/// Renders the report: one line per run (throughput in its basis, TTFT and TPOT in ms), then
/// the statistics per metric and per source family; pure, no colour.
pub fn render_serving_table(report: &ServingCalibrationReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<44} {:<20} {:>10} {:>10} {:>8}  {:>9} {:>9} {:>8}  {:>7} {:>7} {:>8}",
        "run",
        "basis",
        "predicted",
        "measured",
        "error",
        "ttft pred",
        "ttft ms",
        "error",
        "tpot pr",
        "tpot ms",
        "error"
    );
    for row in &report.rows {
        if let Some(reason) = &row.not_costed {
            let _ = writeln!(out, "{:<44} not costed: {reason}", row.run_id);
            continue;
        }
        let _ = writeln!(
            out,
            "{:<44} {:<20} {:>10} {:>10} {:>8}  {:>9} {:>9} {:>8}  {:>7} {:>7} {:>8}",
            row.run_id,
            row.throughput_basis.map_or("-", |b| b.column()),
            cell(row.throughput_error_pct.and(row.predicted_throughput)),
            cell(row.measured_throughput),
            err(row.throughput_error_pct),
            cell(row.ttft_error_pct.and(row.predicted_ttft_ms)),
            cell(row.measured_ttft_ms),
            err(row.ttft_error_pct),
            cell(row.tpot_error_pct.and(row.predicted_tpot_ms)),
            cell(row.measured_tpot_ms),
            err(row.tpot_error_pct),
        );
    }
    metric_lines(&mut out, "", &report.metrics);
    let total = report.rows.len();
    let _ = writeln!(
        out,
        "{} of {total} runs costed, {} not costed (reasons above)",
        report.costed_rows, report.not_costed_rows
    );
    let _ = writeln!(out, "per source family:");
    for (group, m) in &report.groups {
        if m.throughput.rows + m.ttft.rows + m.tpot.rows == 0 {
            continue;
        }
        let _ = writeln!(out, "  {group}");
        metric_lines(&mut out, "    ", m);
    }
    out
}

/// Renders the leave-one-group-out cross-validation.
pub fn render_serving_cross_validation(cv: &ServingCrossValidation) -> String {
    let mut out = String::new();
    for fold in &cv.folds {
        let _ = writeln!(out, "{} left out", fold.group);
        metric_lines(&mut out, "  ", &fold.metrics);
    }
    let _ = writeln!(out, "all held-out rows:");
    metric_lines(&mut out, "  ", &cv.held_out);
    out
}
