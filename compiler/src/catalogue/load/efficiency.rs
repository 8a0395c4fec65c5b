//! Reading a device's `efficiency` block: the measured shares of peak its GEMMs and attention
//! kernels sustain, which the cost model times every kernel with.

use super::{Cx, bounds};
use crate::catalogue::codes;
use crate::catalogue::raw::{self, Loc};
use crate::catalogue::values::out_of_range;
use crate::hardware::Efficiency;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::types::Precision;
use std::collections::BTreeMap;

impl Cx<'_, '_> {
    /// The `efficiency` block: every share in (0, 1], GEMM figures only for listed precisions,
    /// and a stated uncertainty when the device's figures are estimates.
    pub(super) fn efficiency(
        &mut self,
        block: Option<&raw::EfficiencyBlock>,
        precisions: &[Precision],
        status: &Loc<super::model::Status>,
    ) -> Option<Efficiency> {
        let Some(block) = block else {
            return Some(Efficiency::unmeasured());
        };
        let mut ok = true;
        let mut gemm = BTreeMap::new();
        for (precision, share) in &block.gemm {
            ok &= self.share(share, "efficiency.gemm");
            if !precisions.contains(precision) {
                let d = Diagnostic::error(
                    codes::INCONSISTENT,
                    format!("GEMM efficiency for `{precision}`, which `precisions` does not list"),
                    self.span(share),
                    "a figure for an unlisted precision",
                )
                .with_help(format!(
                    "add `{precision}` to `precisions` or remove this figure"
                ));
                self.push(d);
                ok = false;
            }
            gemm.insert(*precision, share.value);
        }
        ok &= self.share(&block.attention.forward, "efficiency.attention.forward");
        ok &= self.share(&block.attention.backward, "efficiency.attention.backward");
        let uncertainty = match &block.uncertainty {
            Some(u) if !(0.0..1.0).contains(&u.value) => {
                let d = out_of_range(
                    self.span(u),
                    "efficiency.uncertainty",
                    "a fraction in [0, 1)",
                    &u.value.to_string(),
                );
                self.push(d);
                ok = false;
                0.0
            }
            Some(u) => u.value,
            None if status.value.is_estimate() => {
                let d = Diagnostic::error(
                    codes::INCONSISTENT,
                    format!(
                        "efficiency figures without an uncertainty on a device whose status is `{}`",
                        status.value.as_str()
                    ),
                    self.source.span(&status.referenced),
                    "these figures are estimates",
                )
                .with_help("add `uncertainty:` to `efficiency` (e.g. 0.25 for ±25 %)");
                self.push(d);
                ok = false;
                0.0
            }
            None => 0.0,
        };
        ok.then_some(Efficiency {
            gemm,
            attention_forward: block.attention.forward.value,
            attention_backward: block.attention.backward.value,
            uncertainty,
        })
    }

    /// Whether `share` is a measured fraction of the peak in its bounds; reports it otherwise.
    fn share(&mut self, share: &Loc<f64>, field: &str) -> bool {
        self.scalar_in(share, field, bounds::EFFICIENCY)
    }
}
