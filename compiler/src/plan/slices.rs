//! Small jobs on a slice of a device: when the chosen plan needs one whole device and the job
//! is optimised for cost or carbon, the smallest slice profile of the catalogue (MIG on NVIDIA,
//! vNPU on Ascend) whose memory holds the job and whose slower run still meets the deadline.
//!
//! A slice with a share `f` of the device's compute runs the job `1/f` times longer at `f` of the
//! price per hour, so money and energy stay the same while the rest of the device stays free for
//! other jobs; a time-optimised job keeps the whole device.

use super::objective::Limits;
use crate::catalogue::{Device, SliceProfile};
use crate::cost::usable_memory;
use loam_ir::plan::Plan;
use loam_ir::types::Optimize;

/// The slice profile for a one-device plan needing `memory_bytes`, training for `train_s`
/// after `lead_s` of data transfer, if one fits.
pub(crate) fn fit_slice<'d>(
    device: &'d Device,
    memory_bytes: f64,
    train_s: f64,
    lead_s: f64,
    limits: &Limits,
) -> Option<&'d SliceProfile> {
    if !matches!(limits.optimize, Optimize::Cost | Optimize::Carbon) {
        return None;
    }
    let mut figures = device.figures();
    let mut fitting: Vec<&SliceProfile> = device
        .slice_profiles
        .iter()
        .filter(|s| s.compute_fraction > 0.0 && s.compute_fraction < 1.0)
        .filter(|s| {
            // A slice is a device of the slice's memory to `usable_memory`.
            figures.memory_bytes = s.memory_bytes;
            memory_bytes <= usable_memory(&figures)
        })
        .filter(|s| {
            limits
                .deadline_s
                .is_none_or(|d| lead_s + train_s / s.compute_fraction <= d)
        })
        .collect();
    // The least compute, then the least memory, then the catalogue's order.
    fitting.sort_by(|a, b| {
        a.compute_fraction
            .total_cmp(&b.compute_fraction)
            .then(a.memory_bytes.total_cmp(&b.memory_bytes))
    });
    fitting.first().copied()
}

/// Puts a one-device `plan` on `slice`: the same money and energy, `1/f` of the throughput.
pub(crate) fn apply_slice(plan: &mut Plan, device: &Device, slice: &SliceProfile) {
    let f = slice.compute_fraction;
    let Some(group) = plan.groups.first_mut() else {
        return;
    };
    group.slice = Some(slice.name.clone());
    if let Some(node) = group.node.as_mut() {
        let resource = super::node::slice_resource(device, slice);
        super::node::on_slice(node, resource, f);
    }
    if let Some(e) = plan.estimate.as_mut() {
        e.step_time_s = super::single::round(e.step_time_s / f);
        e.tokens_per_s = super::single::round(e.tokens_per_s * f);
        e.model_tflops_per_device = super::single::round(e.model_tflops_per_device * f);
        e.train_time_h = super::single::round(e.train_time_h / f);
        if let Some(g) = e.goodput.as_mut() {
            g.failure_free_time_h = super::single::round(g.failure_free_time_h / f);
        }
    }
    plan.notes.push(format!(
        "runs on a {} slice ({:.0} % of one {}'s compute, {:.0} GiB): {:.1}× the time for the same money, the rest of the device stays free",
        slice.name,
        f * 100.0,
        group.device,
        slice.memory_bytes / loam_ir::units::GIB,
        1.0 / f
    ));
}
