//! Whether a job's model can fit in the memory of its allowed devices at all: the checker's
//! memory pre-check, a visitor over the layout search's own space.
//!
//! For each allowed device type this walks the space the planner searches
//! ([`crate::plan::search::Space`]: the spec's pins read once by [`Pins::of`], the divisibility
//! rules of [`crate::workload::layout::rules`], every axis the search has, context and expert parallelism
//! included) with the node size of the type's largest node group and every device of the type
//! the job may use, and asks the search's own memory function ([`ShapeMemory`]) about every ZeRO
//! stage and recomputation mode the search would try. It stops at the first layout that fits;
//! when none does it keeps the one needing the least memory per device, which L2108 reports
//! (of each placement only the smallest micro-batch the rules allow: memory grows with it). The
//! job is rejected only when no allowed device type fits; the planner picks among those that do.
//!
//! On one node group without a tenant quota the pre-check accepts exactly when the planner's
//! single-type search finds a layout that fits; over several groups its device count is the sum
//! of theirs (and tenant quotas are left to the planner), so it never refuses what a plan over
//! two groups could hold.

use super::check_job::{Allowed, ticked};
use crate::check::Job;
use crate::check::{job_model_dims, train_setup};
use crate::cost::usable_memory;
use crate::plan::search::{
    Axes, Bounds, RecomputeLayers, Rejection, ShapeMemory, Space, Visitor, floor_of, setup_on,
};
use crate::workload::Pins;
use crate::workload::{Layout, TrainSetup, memory_per_device};
use loam_ir::diagnostics::codes::catalogue as codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::display::layout_degrees;
use loam_ir::types::Recompute;
use std::ops::ControlFlow;

use loam_ir::units::GIB;

/// What the pre-check found on one device type.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one verdict per device type of a job, returned by value; boxing the layout saves nothing"
)]
pub(crate) enum Verdict {
    /// A layout the search tries fits in `usable` bytes.
    Fits,
    /// None does: the layout needing the least memory per device, and its bytes.
    Short(Layout, f64),
    /// The space holds no layout at all (its rules or the device count rule every one out; the
    /// count checks and the planner say why).
    NoLayout,
}

/// Walks the search's space keeping the least memory per device, until a layout fits.
struct LeastMemory<'a> {
    memory: ShapeMemory<'a>,
    zeros: &'a [u8],
    recomputes: &'a [Recompute],
    recompute_layers: RecomputeLayers,
    usable: f64,
    least: Option<(Layout, f64)>,
    fits: bool,
}

impl Visitor for LeastMemory<'_> {
    fn reject(&mut self, _reason: Rejection, _layout: Layout) {}

    fn enter_tensor(&mut self, tensor: &Layout) {
        self.memory.enter_tensor(tensor);
    }

    fn enter_tensor_context(&mut self) {}

    fn enter_placement(&mut self, placement: &Layout) {
        self.memory.enter_placement(placement);
    }

    /// A rank's memory never shrinks as its micro-batch grows (activations, the pipeline's
    /// stash of `min(p·b, per-rank batch)` sequences, logits and buffers all grow with it; the
    /// model states do not change: the search's own rule, `Ranker`'s), under every ZeRO stage
    /// and recomputation mode alike. So once a shape has not fitted, no larger micro-batch of
    /// its placement fits, nor needs less than the least so far (which is at most that shape's
    /// every total): the walk leaves them, and the verdict, the least layout and its bytes are
    /// those of the whole walk. A walk of a model too large for every device took seconds over
    /// a batch of many divisors.
    fn larger_micro_batches_overflow(&self) -> bool {
        !self.fits
    }

    /// Every ZeRO stage and recomputation mode of `shape` the search tries, as the search's
    /// ranking reads them ([`crate::workload::LayoutMemory::worst`] against the usable bytes).
    fn shape(&mut self, shape: &Layout, _devices: u64) -> ControlFlow<()> {
        let floors = self.memory.floors();
        let mut memory = None;
        for &zero in self.zeros {
            // Any rank needs at least its model states: a stage whose states neither fit nor
            // beat the least memory so far changes nothing.
            if let Some(floor) = floor_of(floors, zero)
                && floor > self.usable
                && self.least.is_some_and(|(_, least)| floor >= least)
            {
                continue;
            }
            let memory = memory.get_or_insert_with(|| self.memory.of_shape(shape));
            for &mode in self.recomputes {
                let recompute = self.recompute_layers.least_memory(mode, memory);
                let (total, _) = memory.worst(zero, recompute);
                if self.least.is_none_or(|(_, least)| total < least) {
                    let layout = Layout {
                        zero,
                        recompute: mode,
                        recompute_layers: recompute.per_chunk,
                        ..*shape
                    };
                    self.least = Some((layout, total));
                }
                if total <= self.usable {
                    self.fits = true;
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Whether a layout of the space within `bounds` fits in `usable` bytes per device, trained as
/// `setup` says: the same layouts, in the same order, with the same memory as the planner's
/// single-type search within the same bounds.
pub(crate) fn least_memory(bounds: &Bounds<'_>, setup: &TrainSetup, usable: f64) -> Verdict {
    let axes = Axes::new(bounds);
    let mut visitor = LeastMemory {
        memory: ShapeMemory::new(bounds.model, setup),
        zeros: &axes.zeros,
        recomputes: &axes.recomputes,
        recompute_layers: axes.recompute_layers,
        usable,
        least: None,
        fits: false,
    };
    // A break is the first layout that fits.
    let _ = Space::new(bounds, &axes).walk(&mut visitor);
    match (visitor.fits, visitor.least) {
        (true, _) => Verdict::Fits,
        (false, Some((layout, bytes))) => Verdict::Short(layout, bytes),
        (false, None) => Verdict::NoLayout,
    }
}

/// Reports a model that fits on none of the allowed device types.
pub(crate) fn check_fit(job: &Job, allowed: &Allowed<'_>, diags: &mut Diagnostics) {
    let model = job_model_dims(job);
    let setup = train_setup(job);
    let pins = Pins::of(job);
    let mut misses = Vec::new();
    for device in &allowed.devices {
        let id = device.id.value.as_str();
        let per_node = allowed
            .groups_of(id)
            .map(|g| g.devices_per_node.value)
            .max()
            .unwrap_or(device.devices_per_node.value)
            .min(device.devices_per_node.value);
        let in_pool: u64 = allowed.groups_of(id).map(|g| g.devices()).sum();
        let budget = job
            .resources
            .max_devices
            .as_ref()
            .map_or(in_pool, |m| m.value.min(in_pool));
        if budget == 0 {
            // No device to hold a layout; the count checks say why.
            return;
        }
        // On one node group, its nodes, as the planner's search there; over several, no node
        // rule (a plan over two groups takes nodes of both, and no node shape changes memory).
        let mut groups = allowed.groups_of(id);
        let nodes = match (groups.next(), groups.next()) {
            (Some(only), None) => Some(u64::from(only.nodes)),
            _ => None,
        };
        let bounds = Bounds {
            model: &model,
            global_batch: setup.global_batch,
            pins,
            devices_per_node: per_node.max(1),
            max_devices: budget,
            nodes,
        };
        let usable = usable_memory(&device.figures());
        match least_memory(&bounds, &setup_on(&setup, device), usable) {
            // No layout fits the device count at all; the count checks say why.
            Verdict::Fits | Verdict::NoLayout => return,
            Verdict::Short(layout, bytes) => {
                // The rank that needs the most, as the plan would name it.
                let rank = memory_per_device(&model, &setup_on(&setup, device), &layout).rank;
                misses.push((*device, layout, bytes, usable, budget, rank));
            }
        }
    }
    for (device, layout, bytes, usable, budget, rank) in misses {
        let id = device.id.value.as_str();
        let span = allowed
            .named_at
            .get(id)
            .copied()
            .or_else(|| job.resources.max_devices.as_ref().map(|m| m.span))
            .unwrap_or(job.resources.pool.span);
        let label = if allowed.named_at.contains_key(id) {
            format!("too little memory on `{id}` for this model")
        } else {
            format!("no layout fits `{id}` within these limits")
        };
        let memory = device.memory_bytes.value;
        diags.push(
            Diagnostic::error(
                codes::MODEL_DOES_NOT_FIT,
                format!(
                    "model does not fit on `{id}`: needs at least {:.1} GiB per device{}, the device has {:.1} GiB ({:.1} GiB usable)",
                    bytes / GIB,
                    rank.map_or(String::new(), |r| format!(" on pipeline rank {r}")),
                    memory / GIB,
                    usable / GIB
                ),
                span,
                label,
            )
            .with_related(device.memory_bytes.span, format!("`{id}` has {:.1} GiB", memory / GIB))
            .with_help(format!(
                "the least memory is with {} and micro-batch {} on {budget} devices, ZeRO-{} and {} recomputation; allow more devices, or devices with more memory than {}",
                layout_degrees(&layout),
                layout.micro_batch,
                layout.zero,
                match layout.recompute {
                    Recompute::None => "no",
                    other => other.as_str(),
                },
                ticked([id])
            )),
        );
    }
}

#[cfg(test)]
mod tests;
