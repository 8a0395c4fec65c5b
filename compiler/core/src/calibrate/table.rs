//! Plain-text rendering of a calibration report.

use super::CalibrationReport;
use crate::workload::Layout;
use std::fmt::Write;

/// The costed layout in the table's narrow column, or `infeasible`.
fn layout_text(layout: Option<&Layout>) -> String {
    layout.map_or_else(|| "infeasible".into(), crate::display::layout_compact)
}

/// Renders the report as an aligned table with a summary line; pure, no colour.
pub fn render_table(report: &CalibrationReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<28} {:>12} {:>12} {:>8} {:>6}  {:<30} auto >= published",
        "run", "predicted", "measured", "error", "mfu", "layout (costed)"
    );
    for row in &report.rows {
        if let Some(reason) = &row.not_costed {
            let _ = writeln!(
                out,
                "{:<28} {:>12} {:>12.1} {:>8} {:>6}  not costed: {reason}",
                row.run_id, "-", row.measured_tokens_per_s_per_device, "-", "-"
            );
            continue;
        }
        let _ = writeln!(
            out,
            "{:<28} {:>12.1} {:>12.1} {:>+7.1}% {:>5.1}%  {:<30} {}",
            row.run_id,
            row.predicted_tokens_per_s_per_device,
            row.measured_tokens_per_s_per_device,
            row.error_pct.unwrap_or(0.0),
            100.0 * row.mfu,
            layout_text(row.layout.as_ref()),
            if row.auto_at_least_as_fast {
                "yes"
            } else {
                "no"
            },
        );
    }
    let _ = writeln!(
        out,
        "median |error| {:.1}%, mean |error| {:.1}%, within ±20%: {:.0}% of {} costed runs (tokens/s per device)",
        report.median_abs_error_pct,
        report.mean_abs_error_pct,
        100.0 * report.within_20_pct_share,
        report.costed_rows
    );
    if report.not_costed_rows > 0 {
        let _ = writeln!(
            out,
            "{} of {} runs not costed (reasons above)",
            report.not_costed_rows,
            report.rows.len()
        );
    }
    out
}
