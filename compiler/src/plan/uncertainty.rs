//! How uncertain a plan's predicted throughput is because of its devices' figures.
//!
//! The cost model times kernels with each device's measured share of peak
//! (`DeviceFigures::efficiency`). Where nobody has published such a measurement the catalogue
//! states an estimate and its relative uncertainty instead of borrowing another part's figures
//! silently; the plan carries that uncertainty, so a reader sees ±30 % beside a time predicted on
//! an unmeasured device and nothing beside one on a measured device.

use crate::calibrate::site::DeviceCalibration;
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
    let pool = catalogue.pools.get(&plan.pool);
    let calibrations: Vec<Option<(&str, &DeviceCalibration)>> = plan
        .groups
        .iter()
        .map(|g| {
            let site = pool?.site(&g.site)?;
            let calibration = site.calibration.as_ref()?.devices.get(&g.device)?;
            Some((site.name.value.as_str(), calibration))
        })
        .collect();
    // A calibrated site's groups take their uncertainty from its runs' residuals.
    let per_group: Vec<f64> = plan
        .groups
        .iter()
        .zip(&calibrations)
        .map(|(g, c)| {
            c.map_or_else(
                || device_uncertainty(catalogue, &g.device),
                |(_, c)| c.throughput_uncertainty,
            )
        })
        .collect();
    estimate.throughput_uncertainty = Some(per_group.iter().copied().fold(0.0, f64::max));
    if plan.groups.len() > 1 {
        for (group, u) in plan.groups.iter_mut().zip(per_group) {
            group.throughput_uncertainty = Some(u);
        }
    }
    // Say which figures the plan stands on, once some site of the pool is calibrated: a pool
    // with no calibration plans and reads exactly as before.
    let any_calibrated = pool.is_some_and(|p| p.sites.iter().any(|s| s.calibration.is_some()));
    if !any_calibrated {
        return;
    }
    for (group, calibration) in plan.groups.iter().zip(&calibrations) {
        let note = match calibration {
            Some((site, c)) => format!(
                "calibrated on {} run{} of {} at {site}, median error {:.1} % (±{:.0} %, {} to {})",
                c.runs,
                if c.runs == 1 { "" } else { "s" },
                group.device,
                c.median_abs_error_pct,
                100.0 * c.throughput_uncertainty,
                c.first_run,
                c.last_run
            ),
            None => format!(
                "not calibrated: no measured runs of {} at {}; the time is the shipped model's",
                group.device, group.site
            ),
        };
        if !plan.notes.contains(&note) {
            plan.notes.push(note);
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
