//! How uncertain a plan's predicted throughput is because of its devices' figures.
//!
//! The cost model times kernels with each device's measured share of peak
//! (`DeviceFigures::efficiency`). Where nobody has published such a measurement the catalogue
//! states an estimate and its relative uncertainty instead of borrowing another part's figures
//! silently; the plan carries that uncertainty, so a reader sees ±30 % beside a time predicted on
//! an unmeasured device and nothing beside one on a measured device.

use crate::catalogue::Catalogue;
use crate::hardware::Efficiency;
use loam_ir::plan::Plan;

/// Writes the uncertainty into `plan`: `estimate.throughput_uncertainty` is the largest of its
/// groups' (a step waits for the slower side, and either side's figures can be the ones that are
/// wrong), and in a plan over two groups each group states its own.
pub(crate) fn state(plan: &mut Plan, catalogue: &Catalogue) {
    let Some(estimate) = plan.estimate.as_mut() else {
        return;
    };
    let per_group: Vec<f64> = plan
        .groups
        .iter()
        .map(|g| device_uncertainty(catalogue, &g.device))
        .collect();
    estimate.throughput_uncertainty = Some(per_group.iter().copied().fold(0.0, f64::max));
    if plan.groups.len() > 1 {
        for (group, u) in plan.groups.iter_mut().zip(per_group) {
            group.throughput_uncertainty = Some(u);
        }
    }
}

/// The stated uncertainty of `device`'s figures. A plan only names devices of its catalogue; an
/// id that is not there is taken as unmeasured, so a lookup miss never reads as certainty.
fn device_uncertainty(catalogue: &Catalogue, device: &str) -> f64 {
    catalogue.device(device).map_or_else(
        || Efficiency::unmeasured().uncertainty,
        |d| d.efficiency.uncertainty,
    )
}

#[cfg(test)]
mod tests;
