//! Plain-text rendering of a heterogeneous calibration report.

use super::HeteroCalibrationReport;
use std::fmt::Write;

/// Renders the report as an aligned table (run, role, devices, predicted, measured, error) with
/// the summary line; pure, no colour. A row not costed shows its reason instead of an error.
pub fn render_hetero_table(report: &HeteroCalibrationReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<36} {:<15} {:<40} {:>10} {:>10} {:>8}",
        "run", "role", "devices", "predicted", "measured", "error"
    );
    for row in &report.rows {
        let measured = row
            .measured_tokens_per_s
            .map_or_else(|| "-".to_string(), |m| format!("{m:.0}"));
        let head = format!("{:<36} {:<15} {:<40}", row.point_id, row.role, row.devices);
        match (row.not_costed.as_deref(), row.error_pct) {
            (None, Some(error)) => {
                let _ = writeln!(
                    out,
                    "{head} {:>10.0} {measured:>10} {error:>+7.1}%",
                    row.predicted_tokens_per_s
                );
            }
            (reason, _) => {
                let reason = reason.unwrap_or("no error computed");
                let _ = writeln!(
                    out,
                    "{head} {:>10} {measured:>10} {:>8}  not costed: {reason}",
                    "-", "-"
                );
            }
        }
    }
    crate::calibrate::table::write_summary(
        &mut out,
        report.median_abs_error_pct,
        report.mean_abs_error_pct,
        report.within_20_pct_share,
        (report.costed_rows, report.rows.len()),
        "whole-job tokens/s",
    );
    out
}
