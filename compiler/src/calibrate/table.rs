//! Plain-text rendering of a calibration report.

use super::{CalibrationReport, CalibrationRow};
use crate::workload::Layout;
use std::fmt::Write;

/// The costed layout in the table's narrow column, or `infeasible`.
fn layout_text(layout: Option<&Layout>) -> String {
    layout.map_or_else(|| "infeasible".into(), loam_ir::display::layout_compact)
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
    write_summary(
        &mut out,
        report.median_abs_error_pct,
        report.mean_abs_error_pct,
        report.within_20_pct_share,
        (report.costed_rows, report.rows.len()),
        "tokens/s per device",
    );
    let listed = |pick: fn(&CalibrationRow) -> Option<&String>| -> Vec<(&str, &str)> {
        report
            .rows
            .iter()
            .filter_map(|r| Some((r.run_id.as_str(), pick(r)?.as_str())))
            .collect()
    };
    write_listed(
        &mut out,
        "blank layout fields taken from the stack's defaults:",
        &listed(|r| r.stack_defaults.as_ref()),
    );
    write_listed(
        &mut out,
        "expert dispatch and routing as each run's source or own columns state them:",
        &listed(|r| r.moe_stack.as_ref()),
    );
    out
}

/// `title` and one indented `run: text` line per entry of `rows`; nothing when there is none.
fn write_listed(out: &mut String, title: &str, rows: &[(&str, &str)]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title}");
    for (run, text) in rows {
        let _ = writeln!(out, "  {run}: {text}");
    }
}

/// The summary lines under a calibration table: the error statistics over the `costed` of
/// `total` runs, measured in `basis`, and how many runs were left out.
pub(super) fn write_summary(
    out: &mut String,
    median_abs: f64,
    mean_abs: f64,
    within_20_share: f64,
    (costed, total): (usize, usize),
    basis: &str,
) {
    let _ = writeln!(
        out,
        "median |error| {median_abs:.1}%, mean |error| {mean_abs:.1}%, within ±20%: {:.0}% of {costed} costed runs ({basis})",
        100.0 * within_20_share,
    );
    if total > costed {
        let _ = writeln!(
            out,
            "{} of {total} runs not costed (reasons above)",
            total - costed
        );
    }
}
