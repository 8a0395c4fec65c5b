//! The planning request: everything the planner needs from a checked job, decided once before
//! any search — the pool, where the job may run (its placements, and why other node groups of
//! an allowed type may not), each placement's objective, the model and training setup, the
//! pinned layout fields, the limits, the currency money is counted in, and what the job
//! checkpoints where.

use super::goodput::Failures;
use super::objective::{Constrained, Limits};
use super::placement::{self, Placement};
use super::search::Economics;
use super::single::CheckpointNeeds;
use crate::catalogue::{Catalogue, Pool};
use crate::check::{Job, job_model_dims, train_setup_on};
use crate::workload::Pins;
use crate::workload::{ModelDims, TrainSetup};
use loam_ir::types::Recompute;

/// A checked job, ready to plan.
pub(crate) struct PlanRequest<'a> {
    pub(crate) pool: &'a Pool,
    /// The node groups that may run the job, in the pool's file order.
    pub(crate) placements: Vec<Placement<'a>>,
    /// One sentence for each node group of an allowed type that may not.
    pub(crate) skipped: Vec<String>,
    /// The objective of each placement, in the same order.
    pub(crate) objectives: Vec<Constrained>,
    pub(crate) model: ModelDims,
    pub(crate) setup: TrainSetup,
    pub(crate) pins: Pins,
    pub(crate) limits: Limits,
    /// The budget's currency, else the pool's.
    pub(crate) currency: String,
    /// What the job checkpoints and where.
    pub(crate) checkpoint: CheckpointNeeds,
}

/// Why a job cannot be planned at all: the sentences of the plan's reasons.
pub(crate) struct Unplannable {
    pub(crate) headline: String,
    pub(crate) skipped: Vec<String>,
}

impl<'a> PlanRequest<'a> {
    /// The request of `job`, or why no node group of its pool may run it.
    pub(crate) fn new(job: &'a Job, catalogue: &'a Catalogue) -> Result<Self, Unplannable> {
        let Some(pool) = catalogue.pool(&job.resources.pool.value) else {
            return Err(Unplannable {
                headline: format!("the catalogue has no pool `{}`", job.resources.pool.value),
                skipped: Vec::new(),
            });
        };
        let (placements, skipped) = placement::options(job, pool, catalogue);
        if placements.is_empty() {
            return Err(Unplannable {
                headline: format!("no node group of pool `{}` can run the job", pool.id.value),
                skipped,
            });
        }
        let checkpoint = CheckpointNeeds::of(job, pool);
        let objectives = placements
            .iter()
            .map(|o| objective(job, pool, o, &checkpoint))
            .collect();
        Ok(PlanRequest {
            pool,
            placements,
            skipped,
            objectives,
            model: job_model_dims(job),
            setup: train_setup_on(job, pool),
            pins: Pins::of(job),
            limits: limits(job),
            currency: placement::currency(job, pool),
            checkpoint,
        })
    }
}

impl Pins {
    /// The layout fields `job` pins: the one reading of a spec's `parallel` block, for the
    /// planner and the checker's memory pre-check alike. A degree too large for the layout's
    /// integers saturates, so the search's rules reject it with its numbers.
    pub(crate) fn of(job: &Job) -> Pins {
        let narrow = |v: &Option<loam_ir::span::Spanned<u64>>| {
            v.as_ref()
                .map(|s| u32::try_from(s.value).unwrap_or(u32::MAX))
        };
        let p = &job.parallel;
        let (pipeline_split, stages) = crate::check::pinned_split(p, job.model.layers);
        Pins {
            tensor: narrow(&p.tensor),
            pipeline: narrow(&p.pipeline),
            data: narrow(&p.data),
            context: narrow(&p.context),
            expert: narrow(&p.expert),
            // Pinned blocks per chunk fix the chunks per rank too (one unless pinned).
            virtual_stages: narrow(&p.virtual_stages).or(stages.map(|_| 1)),
            micro_batch: narrow(&p.micro_batch),
            zero: p
                .zero
                .as_ref()
                .map(|s| u8::try_from(s.value).unwrap_or(u8::MAX)),
            // Blocks replayed per chunk imply full recomputation.
            recompute: p
                .recompute
                .as_ref()
                .map(|s| s.value)
                .or(p.recompute_layers.as_ref().map(|_| Recompute::Full)),
            recompute_layers: narrow(&p.recompute_layers),
            sequence_parallel: p.sequence_parallel.as_ref().map(|s| s.value),
            tensor_overlap: p.tensor_overlap.as_ref().map(|s| s.value),
            pipeline_split,
            stages,
        }
    }
}

/// The job's goal and limits.
fn limits(job: &Job) -> Limits {
    Limits {
        optimize: job.goal.optimize,
        deadline_s: job.goal.deadline.as_ref().map(|d| d.value),
        budget: job.goal.budget.as_ref().map(|b| b.value.0),
    }
}

/// The objective of `option`: money converted to the budget's currency (or the pool's), power
/// at the site's mean price and PUE, carbon at the site's intensity.
pub(crate) fn objective(
    job: &Job,
    pool: &Pool,
    option: &Placement<'_>,
    checkpoint: &CheckpointNeeds,
) -> Constrained {
    let currency = placement::currency(job, pool);
    let base = pool.currency.value.as_str();
    let convert = |amount: f64| pool.convert(amount, base, &currency).unwrap_or(amount);
    let watts = option.device.typical_watts * option.site.pue;
    let power_price_per_hour = watts / 1000.0 * option.site.mean_power_price();
    let (transfer_s, transfer_cost) = placement::transfer(job, pool, option.site);
    Constrained {
        economics: Economics {
            optimize: job.goal.optimize,
            price_per_device_hour: convert(option.group.price_per_device_hour)
                + convert(power_price_per_hour),
            watts_per_device: watts,
            carbon_g_per_kwh: option.site.carbon_g_per_kwh,
            failures: Failures::at(
                option.device,
                option.site,
                checkpoint.bytes,
                checkpoint.interval_s,
            ),
        },
        transfer_s,
        transfer_cost: convert(transfer_cost),
        limits: limits(job),
    }
}
