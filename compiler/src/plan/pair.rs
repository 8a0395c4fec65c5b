//! Plans over a pair of node groups (of two device types, or two sites): which pairs to try,
//! what a pipeline over a pair costs (each group's prices, the data brought to the first group, the WAN's egress),
//! and the Plan IR of the winner.
//!
//! Pairs come from the best few node groups by their single-type score, plus groups that can run
//! only the precision-sensitive ops (devices without fp8 in an fp8 job). Groups at two sites are
//! paired only over a WAN route whose latency fits `resources.max_latency`; the activations that
//! cross it are costed in the stage times (bandwidth) and in money (egress).

use self::pipeline::{
    PipelineGroup, PipelinePlan, PipelineSpec, SideCosts, WanLink, search_pipelines,
};
use super::goodput::Failures;
use super::objective::{Constrained, Outcome, PairObjective};
use super::placement::{self, Placement};
use super::single::{self, round};
use super::stages::stage_ir;
use crate::catalogue::{Pool, route};
use crate::check::Job;
use crate::workload::{MemoryBreakdown, ModelDims, OpGraph, TrainSetup, flops_per_token};
use loam_ir::plan::{
    BreakdownIr, EstimateIr, LayoutIr, Plan, sequence_parallel_runs, tensor_overlap_runs,
};
use loam_ir::types::{Hetero, Recompute};

pub mod data;
pub mod pipeline;

/// Single-type node groups paired per plan (the best by their own score).
const PAIRED_GROUPS: usize = 3;

/// Groups that only run sensitive ops, paired per plan (the cheapest).
const SENSITIVE_HOSTS: usize = 2;

/// Pipelines kept per pair.
const KEEP_PER_PAIR: usize = 2;

/// A costed pipeline over two node groups.
pub(crate) struct PairPipeline<'a> {
    pub(crate) score: f64,
    /// Option indices of the first and the second group.
    pub(crate) pair: [usize; 2],
    pub(crate) placements: [&'a Placement<'a>; 2],
    pub(crate) plan: PipelinePlan,
    pub(crate) outcome: Outcome,
    /// Data transfer and WAN egress, whole run.
    pub(crate) fixed_cost: f64,
}

impl PairPipeline<'_> {
    /// One line: layout and placement.
    pub(crate) fn summary(&self) -> String {
        let s = &self.plan.shape;
        let [a, b] = self.placements;
        let [da, db] = s.devices();
        format!(
            "pipeline of {} + {} stages DP{} mb{} ZeRO-{} on {da} × {} at {} ({}, TP{}) + {db} × {} at {} ({}, TP{})",
            s.stages[0],
            s.stages[1],
            s.data,
            s.micro_batch,
            s.zero,
            a.device.id.value,
            a.site.name.value,
            a.group.name.value,
            s.tensor[0],
            b.device.id.value,
            b.site.name.value,
            b.group.name.value,
            s.tensor[1],
        )
    }
}

/// How precise a device's arithmetic is, from what its figures publish: 2 with fp32 (or tf32)
/// matrix or vector rates, 1 with 16-bit only. In a pipeline over two types the sensitive ops
/// go to the type that ranks higher (either, when they tie).
pub(crate) fn arithmetic_rank(p: &Placement<'_>) -> u8 {
    use loam_ir::types::Precision;
    if p.device.peak(Precision::Fp32).is_some() || p.device.peak(Precision::Tf32).is_some() {
        2
    } else {
        u8::from(
            p.device.peak(Precision::Bf16).is_some() || p.device.peak(Precision::Fp16).is_some(),
        )
    }
}

/// The node groups worth pairing: indices into `options`.
pub(crate) fn candidates(options: &[Placement<'_>], single_scores: &[Option<f64>]) -> Vec<usize> {
    let mut full: Vec<(f64, usize)> = options
        .iter()
        .enumerate()
        .filter(|(_, o)| o.hosts_job_precision)
        .map(|(i, _)| {
            (
                single_scores.get(i).copied().flatten().unwrap_or(f64::MAX),
                i,
            )
        })
        .collect();
    full.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut partial: Vec<(f64, usize)> = options
        .iter()
        .enumerate()
        .filter(|(_, o)| !o.hosts_job_precision)
        .map(|(i, o)| (o.group.price_per_device_hour, i))
        .collect();
    partial.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    full.into_iter()
        .take(PAIRED_GROUPS)
        .chain(partial.into_iter().take(SENSITIVE_HOSTS))
        .map(|(_, i)| i)
        .collect()
}

/// What the planner hands the pairing.
pub(crate) struct PairInput<'p, 'a> {
    pub(crate) job: &'p Job,
    pub(crate) pool: &'a Pool,
    pub(crate) options: &'a [Placement<'a>],
    pub(crate) objectives: &'p [Constrained],
    pub(crate) single_scores: &'p [Option<f64>],
    pub(crate) model: &'p ModelDims,
    pub(crate) setup: &'p TrainSetup,
    pub(crate) graph: &'p OpGraph,
    /// What the job checkpoints and where.
    pub(crate) checkpoint: &'p single::CheckpointNeeds,
    /// The layout fields the spec pins (each group of a data-parallel split honours them).
    pub(crate) pins: crate::workload::Pins,
    /// Converts an amount in the pool's base currency to the plan's.
    pub(crate) convert: &'p dyn Fn(f64) -> f64,
    /// The best single-type score: pipelines that cannot beat it are not costed, but for the
    /// best of each pair within [`ALTERNATIVE_SLACK`] of it (to show as an alternative).
    pub(crate) incumbent: f64,
    /// The job's cap on the search; once reached, no further pair is searched.
    pub(crate) budget: &'p super::search::budget::WorkBudget,
    /// The job's cap on its layout walks, which the data split's searches share with the
    /// single-type ones.
    pub(crate) walks: &'p super::search::budget::WalkBudget,
    /// Threads the independent searches of one group may spread over (the plan is the same on
    /// any number).
    pub(crate) threads: usize,
}

/// How much worse than the best single-type plan a pipeline may be and still be costed (to
/// show as an alternative).
const ALTERNATIVE_SLACK: f64 = 1.1;

/// How two node groups are linked, for a plan over both.
pub(crate) struct PairLink {
    /// The WAN between their sites; `None` on one site.
    pub(crate) wan: Option<WanLink>,
    /// Egress price per GB over the route, in the pool's base currency (0 on one site).
    pub(crate) egress_per_gb: f64,
    /// Most devices the plan may take from both together: the job's `max_devices`, and the
    /// tenant's quota when both groups hold one device type (they share it).
    pub(crate) max_devices: u64,
}

/// The link between `pa` and `pb`, or `None` when no WAN route joins their sites or its
/// latency breaks `resources.max_latency` (then one sentence saying so joins `ruled_out`).
pub(crate) fn pair_link(
    input: &PairInput<'_, '_>,
    pa: &Placement<'_>,
    pb: &Placement<'_>,
    ruled_out: &mut Vec<String>,
) -> Option<PairLink> {
    let job = input.job;
    let (sa, sb) = (&pa.site.name.value, &pb.site.name.value);
    let mut egress_per_gb = 0.0;
    let wan = if sa == sb {
        None
    } else {
        let links = route(input.pool, sa, sb)?;
        let latency_s: f64 = links.iter().map(|l| l.latency_s).sum();
        if let Some(max) = &job.resources.max_latency
            && latency_s > max.value
        {
            let text = format!(
                "no plan across {sa} and {sb}: the WAN's {:.1} ms exceeds max_latency {:.1} ms",
                latency_s * 1e3,
                max.value * 1e3
            );
            if !ruled_out.contains(&text) {
                ruled_out.push(text);
            }
            return None;
        }
        egress_per_gb = links.iter().map(|l| l.egress_per_gb).sum::<f64>();
        let bandwidth = links
            .iter()
            .map(|l| l.bandwidth)
            .fold(f64::INFINITY, f64::min);
        Some(WanLink {
            bandwidth,
            latency_s,
        })
    };
    let mut max_devices = job
        .resources
        .max_devices
        .as_ref()
        .map_or(pa.available + pb.available, |m| m.value);
    // Two groups of one device type share the tenant's quota of it.
    if pa.device.id.value == pb.device.id.value
        && let Some(quota) = pa.quota
    {
        max_devices = max_devices.min(quota);
    }
    Some(PairLink {
        wan,
        egress_per_gb,
        max_devices,
    })
}

/// Every pipeline over a pair of candidate groups, best first, and one sentence for each pair
/// the WAN rules out.
pub(crate) fn pair_pipelines<'a>(
    input: &PairInput<'_, 'a>,
) -> (Vec<PairPipeline<'a>>, Vec<String>) {
    let mut found = Vec::new();
    let mut ruled_out = Vec::new();
    let picks = candidates(input.options, input.single_scores);
    let limits = input.objectives.first().map(|o| o.limits);
    let Some(limits) = limits else {
        return (found, ruled_out);
    };
    let side_costs = SideCosts::default();
    for &a in &picks {
        for &b in &picks {
            let (Some(pa), Some(pb)) = (input.options.get(a), input.options.get(b)) else {
                continue;
            };
            if a == b || (!pa.hosts_job_precision && !pb.hosts_job_precision) {
                continue;
            }
            let (Some(oa), Some(ob)) = (input.objectives.get(a), input.objectives.get(b)) else {
                continue;
            };
            let Some(link) = pair_link(input, pa, pb, &mut ruled_out) else {
                continue;
            };
            // Activations forward and gradients back, for every token of the run.
            let crossing_gb = 2.0
                * input.setup.tokens
                * f64::from(input.model.hidden)
                * input.setup.precision.bytes()
                / 1e9;
            let egress = (input.convert)(crossing_gb * link.egress_per_gb);
            let pair = PairObjective {
                economics: [oa.economics, ob.economics],
                transfer_s: oa.transfer_s,
                fixed_cost: oa.transfer_cost + egress,
            };
            let spec = PipelineSpec {
                model: input.model,
                setup: input.setup,
                graph: input.graph,
                first: PipelineGroup {
                    cluster: &pa.cluster,
                    available: pa.available,
                    hosts_sensitive: arithmetic_rank(pa) >= arithmetic_rank(pb),
                },
                second: PipelineGroup {
                    cluster: &pb.cluster,
                    available: pb.available,
                    hosts_sensitive: arithmetic_rank(pb) >= arithmetic_rank(pa),
                },
                wan: link.wan,
                max_devices: link.max_devices,
                keep: KEEP_PER_PAIR,
                sequence_parallel: input.pins.sequence_parallel,
                tensor_overlap: input.pins.tensor_overlap,
                side_costs: Some(&side_costs),
            };
            let objective =
                |devices: [u64; 2], train_s: f64| limits.score(&pair.outcome(devices, train_s));
            if input.budget.reached() {
                continue;
            }
            for (score, plan) in search_pipelines(
                &spec,
                &objective,
                input.incumbent,
                ALTERNATIVE_SLACK,
                input.budget,
            ) {
                let outcome = pair.outcome(plan.shape.devices(), plan.train_time_s);
                found.push(PairPipeline {
                    score,
                    pair: [a, b],
                    placements: [pa, pb],
                    plan,
                    outcome,
                    fixed_cost: pair.fixed_cost,
                });
            }
        }
    }
    found.sort_by(|x, y| {
        x.score
            .total_cmp(&y.score)
            .then(x.pair.cmp(&y.pair))
            .then(x.plan.shape.cmp(&y.plan.shape))
    });
    (found, ruled_out)
}

/// Fills `plan` from the winning pipeline `m`.
pub(crate) fn fill_pair_pipeline(
    plan: &mut Plan,
    job: &Job,
    m: &PairPipeline<'_>,
    input: &PairInput<'_, '_>,
    currency: String,
) {
    let shape = m.plan.shape;
    let devices = shape.devices();
    plan.hetero = Some(Hetero::Pipeline);
    let deepest = m
        .plan
        .stages
        .iter()
        .map(|s| s.recompute)
        .max()
        .unwrap_or(Recompute::None);
    plan.layout = Some(LayoutIr {
        tensor: shape.tensor[0].into(),
        pipeline: u64::from(shape.stages[0] + shape.stages[1]),
        data: shape.data.into(),
        context: 1,
        expert: 1,
        virtual_stages: 1,
        // The partition over the two groups is no rule's: `stages` give it.
        pipeline_split: None,
        micro_batch: shape.micro_batch.into(),
        zero: shape.zero,
        recompute: deepest,
        // Each stage's recomputation is whole-block (`stages[].recompute`).
        recompute_layers: None,
        // On when a group runs it: each group does by its own tensor degree, as costed.
        sequence_parallel: Some(
            shape
                .tensor
                .iter()
                .any(|t| sequence_parallel_runs(input.pins.sequence_parallel, (*t).into())),
        ),
        tensor_overlap: shape.tensor.iter().any(|t| {
            tensor_overlap_runs(
                input.pins.tensor_overlap,
                sequence_parallel_runs(input.pins.sequence_parallel, (*t).into()),
            )
        }),
        // The two-group pipeline's op costs run every expert all-to-all between the blocks.
        expert_overlap: false,
    });
    let [leader, _] = m.placements;
    let stages_on = |o: &Placement<'_>| {
        let side = usize::from(!std::ptr::eq(o, leader));
        shape.stages.get(side).copied().unwrap_or(1)
    };
    plan.groups = m
        .placements
        .iter()
        .zip(devices)
        .zip(shape.tensor)
        .map(|((o, n), t)| {
            let mut g = single::group_ir(o, n, u64::from(t) * u64::from(stages_on(o)), t.into());
            g.tensor = Some(t.into());
            g
        })
        .collect();
    plan.stages = m
        .plan
        .stages
        .iter()
        .enumerate()
        .map(|(k, s)| stage_ir(job, input.graph, k, s.side, s.ops, Some(s.recompute)))
        .collect();
    let p = &m.plan;
    let slots = p.micro_batches + (p.stages.len() as f64) - 1.0;
    let tensor = p.stages.iter().map(|s| s.tensor_comm).fold(0.0, f64::max);
    let run = PairRun {
        step_time_s: p.step_time_s,
        train_time_s: p.train_time_s,
        memory: p
            .stages
            .iter()
            .map(|s| s.memory)
            .reduce(|a, b| if b.total > a.total { b } else { a })
            .unwrap_or(MemoryBreakdown::NONE),
        breakdown: BreakdownIr {
            compute: round(p.micro_batches * (p.bottleneck_s - tensor)),
            tensor_comm: round(p.micro_batches * tensor),
            pipeline_bubble: round((slots - p.micro_batches) * p.bottleneck_s),
            data_comm: round(p.data_comm_s),
            other: round(p.optimizer_s + p.fixed_s),
        },
    };
    plan.estimate = Some(pair_estimate(
        input,
        m.placements,
        devices,
        &run,
        &m.outcome,
        currency,
    ));
    fill_pair_data(plan, input, m.placements, devices, p.train_time_s);
    let mut blocks = [0u64; 2];
    let mut memory = [MemoryBreakdown::NONE; 2];
    for (stage, ir) in p.stages.iter().zip(plan.stages.iter_mut()) {
        ir.micro_batch_s = Some(round(stage.seconds));
        ir.tensor_comm_s = Some(round(stage.tensor_comm));
        ir.forward_s = Some(round(stage.forward));
        let side = stage.side;
        if let (Some(b), Some(m)) = (blocks.get_mut(side), memory.get_mut(side)) {
            *b += ir.layers[1].saturating_sub(ir.layers[0]);
            if stage.memory.total > m.total {
                *m = stage.memory;
            }
        }
    }
    let all = (blocks[0] + blocks[1]).max(1) as f64;
    let shares = blocks.map(|b| b as f64 / all);
    fill_group_figures(plan, input, m.placements, shares, memory);
}

/// Each group's own MFU, model TFLOP/s per device and memory: the estimate blends the two
/// device types, which hides the slower one. `shares` are the fractions of the model's FLOPs
/// each group computes, `memory` what each group's fullest device holds.
pub(crate) fn fill_group_figures(
    plan: &mut Plan,
    input: &PairInput<'_, '_>,
    placements: [&Placement<'_>; 2],
    shares: [f64; 2],
    memory: [MemoryBreakdown; 2],
) {
    let Some(tokens_per_s) = plan.estimate.as_ref().map(|e| e.tokens_per_s) else {
        return;
    };
    let flops = flops_per_token(input.model, Recompute::None).model;
    for (((group, o), share), bytes) in plan
        .groups
        .iter_mut()
        .zip(placements)
        .zip(shares)
        .zip(memory)
    {
        let per_device = tokens_per_s * flops * share / group.devices.max(1) as f64;
        let peak = o
            .cluster
            .device
            .peak_flops
            .get(&input.setup.precision)
            .copied()
            .unwrap_or(0.0);
        group.model_tflops_per_device = Some(round(per_device / 1e12));
        group.mfu = Some(if peak > 0.0 {
            round(per_device / peak)
        } else {
            0.0
        });
        group.memory_per_device_gib = Some(round(bytes.total / loam_ir::units::GIB));
        group.memory_gib = Some(single::memory_ir(&bytes));
    }
}

/// What a plan over two groups predicts, besides its outcome.
pub(crate) struct PairRun {
    pub(crate) step_time_s: f64,
    pub(crate) train_time_s: f64,
    /// The memory of the device that needs the most, on either group.
    pub(crate) memory: MemoryBreakdown,
    /// Where a step's time goes, rounded.
    pub(crate) breakdown: BreakdownIr,
}

/// The estimate of a plan over two groups: throughput, and model FLOPs over both groups'
/// devices and their peaks.
pub(crate) fn pair_estimate(
    input: &PairInput<'_, '_>,
    placements: [&Placement<'_>; 2],
    devices: [u64; 2],
    run: &PairRun,
    outcome: &Outcome,
    currency: String,
) -> EstimateIr {
    let total_devices = (devices[0] + devices[1]).max(1) as f64;
    let tokens_per_s = input.setup.tokens_per_step(input.model) / run.step_time_s.max(1e-12);
    let flops = flops_per_token(input.model, Recompute::None).model;
    let peak: f64 = placements
        .iter()
        .zip(devices)
        .map(|(o, n)| {
            o.cluster
                .device
                .peak_flops
                .get(&input.setup.precision)
                .copied()
                .unwrap_or(0.0)
                * n as f64
        })
        .sum();
    single::estimate_ir(
        &single::Figures {
            step_time_s: run.step_time_s,
            tokens_per_s,
            model_tflops_per_device: tokens_per_s * flops / total_devices / 1e12,
            mfu: if peak > 0.0 {
                tokens_per_s * flops / peak
            } else {
                0.0
            },
            memory: run.memory,
            train_time_s: run.train_time_s,
            breakdown: run.breakdown.clone(),
        },
        single::Totals {
            cost: outcome.cost,
            currency,
            energy_kwh: outcome.energy_kwh,
            carbon_kg: outcome.carbon_kg,
        },
    )
}

/// The data and checkpoint sections of a plan over two groups: the data is read at the first
/// group's site (`split` when the second is elsewhere); checkpoints and goodput follow the pair's
/// joint failure rate and the slower storage, over `work_s` failure-free seconds.
pub(crate) fn fill_pair_data(
    plan: &mut Plan,
    input: &PairInput<'_, '_>,
    placements: [&Placement<'_>; 2],
    devices: [u64; 2],
    work_s: f64,
) {
    let (job, pool) = (input.job, input.pool);
    let [first, second] = placements;
    let mut data = placement::data_ir(job, pool, first.site);
    if first.site.name.value != second.site.name.value {
        data.strategy = "split".to_string();
    }
    plan.data = Some(data);
    let failures = placements.map(|o| {
        Failures::at(
            o.device,
            o.site,
            input.checkpoint.bytes,
            input.checkpoint.interval_s,
        )
    });
    let run = Failures::pair_run([&failures[0], &failures[1]], devices, work_s);
    super::goodput::state(plan, &run, devices[0] + devices[1], &input.checkpoint.path);
}
