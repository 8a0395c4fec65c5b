//! The plausibility guard: a chosen plan whose predicted model FLOP/s per device is above what
//! published training runs reached is flagged as an extrapolation (L3007), so the number is not
//! taken on trust. A device is held to its own best published run in the job's precision; a
//! device without one to the best MFU its vendor's runs reached in the precision, else to the
//! best MFU of any run in the file ([`yardstick`]), so no plan above the file's best MFU passes.
//!
//! The figure compared is the Plan JSON's `model_tflops_per_device` convention (model FLOPs,
//! attention included, no recomputation), which is how the catalogue's `best_published`
//! figures were worked out from the published runs. A plan over two node groups is checked per
//! group, each with the model FLOPs its own devices run.

use super::explain::Kind;
use crate::catalogue::{Catalogue, Device};
use crate::workload::{ModelDims, OpGraph, flops_per_token};
use loam_ir::diagnostics::codes;
use loam_ir::display;
use loam_ir::findings::{PlanDiagnosticIr, SpecField};
use loam_ir::plan::EstimateIr;
use loam_ir::types::{Precision, Recompute};
use yardstick::Yardstick;

mod yardstick;

/// One node group of a plan: its device type, its name, and the model FLOP/s each of its
/// devices is predicted to run.
struct GroupRate<'a> {
    device: &'a Device,
    group: &'a str,
    flops_per_device: f64,
}

/// The warnings for every group of the chosen plan predicted above its device's yardstick in
/// `precision` on `catalogue`; `estimate` is the plan's, as written in the Plan IR.
pub(crate) fn extrapolations(
    catalogue: &Catalogue,
    precision: Precision,
    model: &ModelDims,
    graph: &OpGraph,
    kind: Kind<'_, '_>,
    estimate: &EstimateIr,
) -> Vec<PlanDiagnosticIr> {
    let groups = group_rates(model, graph, kind, estimate);
    let several = groups.len() > 1;
    groups
        .iter()
        .filter_map(|g| {
            let yardstick = Yardstick::of(catalogue, g.device, precision)?;
            let ceiling = yardstick.ceiling(g.device, precision);
            (ceiling > 0.0 && g.flops_per_device > ceiling).then(|| {
                let which = if several {
                    format!(" of `{}`", g.group)
                } else {
                    String::new()
                };
                let predicted = format!(
                    "predicted {} per {}{which} in {precision}",
                    display::tflops(g.flops_per_device),
                    g.device.id.value,
                );
                let message = match yardstick {
                    Yardstick::Own(_) => format!(
                        "{predicted}, {} above {}: an extrapolation",
                        display::percent(g.flops_per_device / ceiling - 1.0),
                        yardstick.describe(g.device, precision),
                    ),
                    Yardstick::Vendor(_) | Yardstick::File(_) => format!(
                        "{predicted} ({} MFU), above {}: an extrapolation",
                        display::percent(
                            g.flops_per_device / g.device.peak(precision).unwrap_or(ceiling)
                        ),
                        yardstick.describe(g.device, precision),
                    ),
                };
                PlanDiagnosticIr::warning(
                    codes::plan::EXTRAPOLATION,
                    SpecField::Job,
                    message,
                    match yardstick {
                        Yardstick::Own(_) => "no published run on this device reached this throughput: take the plan's time and cost as optimistic, and measure a short run before relying on them",
                        Yardstick::Vendor(_) | Yardstick::File(_) => "no published run reached this share of its device's peak: take the plan's time and cost as optimistic, and measure a short run before relying on them",
                    },
                )
            })
        })
        .collect()
}

/// The model FLOP/s per device of each group of the plan. One group runs the plan's figure; in
/// a pipeline over two groups each runs the share of the model FLOPs its stages hold, in a
/// data-parallel pair the share of the batch it trains on.
fn group_rates<'a>(
    model: &ModelDims,
    graph: &OpGraph,
    kind: Kind<'_, 'a>,
    estimate: &EstimateIr,
) -> Vec<GroupRate<'a>> {
    let job_flops = estimate.tokens_per_s * flops_per_token(model, Recompute::None).model;
    let rate = |share: f64, devices: u64| job_flops * share / (devices.max(1) as f64);
    match kind {
        Kind::Single(r) => vec![GroupRate {
            device: r.placement.device,
            group: &r.placement.group.name.value,
            flops_per_device: estimate.model_tflops_per_device * 1e12,
        }],
        Kind::PairPipeline(m) => {
            let forward: Vec<f64> = graph.ops().map(|op| op.forward_flops_per_token).collect();
            let mut held = [0.0_f64; 2];
            for stage in &m.plan.stages {
                let [first, end] = stage.ops;
                let flops: f64 = forward.get(first..end).map_or(0.0, |ops| ops.iter().sum());
                if let Some(side) = held.get_mut(stage.side) {
                    *side += flops;
                }
            }
            let total = (held[0] + held[1]).max(f64::MIN_POSITIVE);
            let devices = m.plan.shape.devices();
            m.placements
                .iter()
                .zip(held)
                .zip(devices)
                .map(|((p, flops), n)| GroupRate {
                    device: p.device,
                    group: &p.group.name.value,
                    flops_per_device: rate(flops / total, n),
                })
                .collect()
        }
        Kind::PairData(d) => {
            let sequences = f64::from(d.batches[0] + d.batches[1]).max(1.0);
            d.placements
                .iter()
                .zip(d.batches)
                .zip(d.devices())
                .map(|((p, batch), n)| GroupRate {
                    device: p.device,
                    group: &p.group.name.value,
                    flops_per_device: rate(f64::from(batch) / sequences, n),
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests;
