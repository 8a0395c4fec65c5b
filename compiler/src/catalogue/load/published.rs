//! Reading a device's `best_published` block: the best model FLOP/s per device a published
//! training run measured, per precision, which the planner's plausibility guard compares plans
//! with.

use super::Cx;
use crate::catalogue::codes;
use crate::catalogue::model::{BestPublished, spanned};
use crate::catalogue::raw;
use crate::units::Dimension;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::Spanned;
use loam_ir::types::Precision;
use std::collections::BTreeMap;

impl Cx<'_, '_> {
    /// The measurements of `raw.best_published` in base units. A figure is kept only when it
    /// reads; a measurement in a precision the device does not list, or above its datasheet
    /// peak, is a catalogue error (a run cannot beat the hardware it ran on).
    pub(super) fn best_published(
        &mut self,
        raw: &raw::DeviceFile,
        peak_flops: &BTreeMap<Precision, Spanned<f64>>,
    ) -> BTreeMap<Precision, BestPublished> {
        let mut found = BTreeMap::new();
        for (precision, entry) in &raw.best_published {
            let field = format!("best_published.{precision}.model_flops");
            let Some(flops) = self.positive_quantity(
                &entry.model_flops,
                Dimension::FlopRate,
                &field,
                super::bounds::FLOP_RATE,
            ) else {
                continue;
            };
            let span = self.span(&entry.model_flops);
            if !raw.precisions.iter().any(|p| p.value == *precision) {
                let d = Diagnostic::error(
                    codes::INCONSISTENT,
                    format!(
                        "published measurement for `{precision}`, which `precisions` does not list"
                    ),
                    span,
                    "a measurement in an unlisted precision",
                )
                .with_help(format!(
                    "add `{precision}` to `precisions` or remove this measurement"
                ));
                self.push(d);
                continue;
            }
            if let Some(peak) = peak_flops.get(precision)
                && flops > peak.value
            {
                let d = Diagnostic::error(
                    codes::INCONSISTENT,
                    format!(
                        "published measurement above the peak: expected at most {} in `{precision}`, found {}",
                        loam_ir::display::tflops(peak.value),
                        loam_ir::display::tflops(flops)
                    ),
                    span,
                    "more than `peak_dense`",
                )
                .with_related(peak.span, "the datasheet peak")
                .with_help(
                    "a measured throughput cannot exceed the peak; check the run's model FLOPs per token and its tokens per second",
                );
                self.push(d);
                continue;
            }
            found.insert(
                *precision,
                BestPublished {
                    model_flops: spanned(flops, span),
                    run: entry.run.value.clone(),
                    source: entry.source.value.clone(),
                },
            );
        }
        found
    }
}
