//! Heterogeneous pipeline plans: the op chain cut into stages over two device groups (different
//! device types, or the same type at two sites), each stage on the group that runs it.
//!
//! For every configuration — tensor degree per group, data-parallel degree, micro-batch, ZeRO
//! stage, and stages per group — the op chain is partitioned (a min-max partition over the cuts
//! between blocks) so that the slowest stage is as fast as it can be. The step follows synchronous 1F1B, where every stage
//! runs at the pace of the slowest: `(m + p − 1) · max stage + gradient reduction + optimizer`,
//! so minimising the slowest stage minimises the step of that configuration, and the partition is
//! optimal, not a proportional guess. Each stage takes the least recomputation that fits its
//! memory; precision-sensitive ops go only to groups that run them at their precision.
//!
//! Configurations are visited in order of a lower bound on their objective (all work spread over
//! every stage at the faster group's speed), and the search stops when the bound cannot beat the
//! best found, so the pruning never loses the optimum. The job's [`WorkBudget`] caps the work:
//! each op costed in one setting and each stage the partition costs takes a unit, and when it
//! runs out the search keeps what it has found (the planner then says so, L3010).

use crate::cost::ops::op_costs_of_layout;
use crate::cost::usable_memory;
use crate::hardware::ClusterFigures;
use crate::plan::search::budget::WorkBudget;
use crate::plan::search::divisors_u32;
use crate::workload::{Layout, MemoryBreakdown, ModelDims, OpGraph, OpKind, TrainSetup};
use loam_ir::plan::{NodeShape, sequence_parallel_runs, tensor_overlap_runs};
use loam_ir::types::Recompute;
#[cfg(test)]
use partition::cost_shape;
use partition::{Chain, Costing, MODES, MemoryReach, Prefix, Side, cost_staged, span, stager};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Most pipeline stages a heterogeneous plan considers.
pub const MAX_STAGES: u32 = 16;

/// Largest micro-batch a heterogeneous plan considers.
const MAX_MICRO_BATCH: u32 = 8;

/// Most block boundaries a stage may start at (counted): a chain of more blocks is cut only at
/// every k-th block, k the least that keeps it within this many. Every published dense or MoE
/// model has at most 126 blocks (Llama 3.1 405B), so no real chain is coarsened; a spec of
/// thousands of blocks plans in seconds instead of minutes (the partition's work grows with
/// the cut candidates), on a grid a stage of at least 16 blocks hardly notices.
const MAX_BLOCK_CUTS: usize = 256;

/// One device group a heterogeneous plan may use.
#[derive(Debug, Clone, Copy)]
pub struct PipelineGroup<'a> {
    /// Its nodes and network.
    pub cluster: &'a ClusterFigures,
    /// Most devices the plan may take from it.
    pub available: u64,
    /// Whether it may run the precision-sensitive ops (the planner gives them to the group
    /// with the more precise arithmetic when the two differ).
    pub hosts_sensitive: bool,
}

/// The WAN link between two groups at different sites.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WanLink {
    /// Bytes per second, each direction (the narrowest link of the route).
    pub bandwidth: f64,
    /// One-way seconds (the route's links together).
    pub latency_s: f64,
}

/// What to search.
#[derive(Debug, Clone)]
pub struct PipelineSpec<'a> {
    /// The model.
    pub model: &'a ModelDims,
    /// The training run.
    pub setup: &'a TrainSetup,
    /// The model's op chain.
    pub graph: &'a OpGraph,
    /// The group that runs the first stages (with the embedding).
    pub first: PipelineGroup<'a>,
    /// The group that runs the last stages (with the head and the loss).
    pub second: PipelineGroup<'a>,
    /// The WAN between them, when they are at different sites.
    pub wan: Option<WanLink>,
    /// Most devices in all.
    pub max_devices: u64,
    /// How many plans to return.
    pub keep: usize,
    /// Sequence parallelism as the spec pins it (`None`: auto); each group runs it by
    /// [`loam_ir::plan::sequence_parallel_runs`] under its own tensor degree.
    pub sequence_parallel: Option<bool>,
    /// Tensor-parallel overlap as the spec pins it; each group runs it by
    /// [`loam_ir::plan::tensor_overlap_runs`] over its own sequence parallelism.
    pub tensor_overlap: Option<bool>,
    /// Op costs shared with the searches of the job's other pairs, when there are any.
    pub side_costs: Option<&'a SideCosts>,
}

/// The op costs of a group's stages by tensor degree and micro-batch, worked out once for
/// every pair of a job the group is in: they read the group's nodes and whether it hosts the
/// precision-sensitive ops, and the job, which every pair shares; never the other group. (A
/// job over five groups searched twenty pairs, each working out both its groups' costs again.)
#[derive(Default)]
pub struct SideCosts {
    /// By group (its nodes, by address: every pair of a job reads the same) and whether it
    /// hosts the sensitive ops: the costs by (tensor degree, micro-batch).
    groups: RefCell<Vec<GroupCosts>>,
}

impl std::fmt::Debug for SideCosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let groups = self.groups.borrow().len();
        f.debug_struct("SideCosts")
            .field("groups", &groups)
            .finish_non_exhaustive()
    }
}

/// [`SideCosts`] of one group.
type GroupCosts = (
    *const ClusterFigures,
    bool,
    BTreeMap<(u32, u32), Rc<[Prefix; 3]>>,
);

impl SideCosts {
    /// The costs of `group`'s stages at tensor degree `t` and micro-batch `b`, worked out by
    /// `work` unless a search of the job already did.
    fn get(
        &self,
        group: &PipelineGroup<'_>,
        t: u32,
        b: u32,
        work: impl FnOnce() -> [Prefix; 3],
    ) -> Rc<[Prefix; 3]> {
        let key = (std::ptr::from_ref(group.cluster), group.hosts_sensitive);
        let mut groups = self.groups.borrow_mut();
        let at = match groups.iter().position(|(c, h, _)| (*c, *h) == key) {
            Some(at) => at,
            None => {
                groups.push((key.0, key.1, BTreeMap::new()));
                groups.len() - 1
            }
        };
        let Some((.., costs)) = groups.get_mut(at) else {
            return Rc::new(work());
        };
        Rc::clone(costs.entry((t, b)).or_insert_with(|| Rc::new(work())))
    }
}

/// One stage of a heterogeneous plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineStage {
    /// 0 for the first group, 1 for the second.
    pub side: usize,
    /// Half-open range of op indices in the chain.
    pub ops: [usize; 2],
    /// The least recomputation that fits.
    pub recompute: Recompute,
    /// Seconds per micro-batch (compute, tensor collectives and the send to the next stage).
    pub seconds: f64,
    /// Of `seconds`, the tensor-parallel collectives.
    pub tensor_comm: f64,
    /// Of `seconds`, the forward pass and the send of its activations.
    pub forward: f64,
    /// Bytes per device.
    pub memory_bytes: f64,
    /// Those bytes by what they hold.
    pub memory: MemoryBreakdown,
}

/// The shape of a heterogeneous plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PipelineShape {
    /// Tensor degree of each group.
    pub tensor: [u32; 2],
    /// Stages on each group.
    pub stages: [u32; 2],
    /// Data-parallel replicas of the whole pipeline.
    pub data: u32,
    /// Sequences per micro-batch.
    pub micro_batch: u32,
    /// ZeRO stage (0 or 1).
    pub zero: u8,
}

impl PipelineShape {
    /// Devices each group gives.
    pub fn devices(&self) -> [u64; 2] {
        let [t0, t1] = self.tensor;
        let [s0, s1] = self.stages;
        let data = u64::from(self.data);
        [
            u64::from(t0) * u64::from(s0) * data,
            u64::from(t1) * u64::from(s1) * data,
        ]
    }
}

/// A costed heterogeneous plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelinePlan {
    /// Its shape.
    pub shape: PipelineShape,
    /// Its stages, first to last.
    pub stages: Vec<PipelineStage>,
    /// Seconds per optimizer step.
    pub step_time_s: f64,
    /// Micro-batches per step.
    pub micro_batches: f64,
    /// The slowest stage's seconds per micro-batch.
    pub bottleneck_s: f64,
    /// Exposed gradient reduction (the slowest stage's).
    pub data_comm_s: f64,
    /// Optimizer step (the slowest stage's).
    pub optimizer_s: f64,
    /// The sites' fixed seconds per step (the larger of the two groups'; 0 uncalibrated).
    pub fixed_s: f64,
    /// Seconds to train on every token.
    pub train_time_s: f64,
    /// Bytes sent over the WAN per step (0 on one site).
    pub wan_bytes_per_step: f64,
}

/// The search's shared inputs: cumulative parameters along the chain, the groups' op costs
/// per (group, tensor, micro-batch), and the number of optimizer steps.
struct Prepared<'a> {
    /// The op chain: cumulative parameters, and where a stage may begin or end: between whole
    /// blocks, and before the final norm and the head (never inside a block, never between the
    /// head and the loss, whose input is logits).
    chain: Chain,
    sides: BTreeMap<(usize, u32, u32), Side<'a>>,
    steps: f64,
}

/// The search's shared inputs; the op costings take their units of `budget`, and the sides stop
/// where it runs out.
fn prepare<'a>(spec: &PipelineSpec<'a>, budget: &WorkBudget) -> Prepared<'a> {
    let model = spec.model;
    let setup = spec.setup;
    let steps = setup.steps(model);
    let params: Vec<f64> = std::iter::once(0.0)
        .chain(spec.graph.ops().scan(0.0, |acc, op| {
            *acc += op.params;
            Some(*acc)
        }))
        .collect();
    let kinds: Vec<OpKind> = spec.graph.ops().map(|o| o.kind).collect();
    let cuttable: Vec<bool> = (0..=kinds.len())
        .map(|i| match kinds.get(i) {
            None => true,
            Some(OpKind::Attention | OpKind::FinalNorm | OpKind::LmHead) => true,
            Some(OpKind::Embedding) => i == 0,
            Some(OpKind::Mlp | OpKind::Loss) => false,
        })
        .collect();
    let chain = Chain::new(params, coarsened(cuttable, &kinds), spec.graph);
    let mut sides = BTreeMap::new();
    for (g, group) in [spec.first, spec.second].iter().enumerate() {
        let c = group.cluster;
        let tensors = divisors_u32(model.heads)
            .into_iter()
            .filter(|t| *t <= c.devices_per_node && model.kv_heads.is_multiple_of(*t));
        for t in tensors {
            let micro = divisors_u32(setup.global_batch)
                .into_iter()
                .filter(|b| *b <= MAX_MICRO_BATCH);
            for b in micro {
                let ops = spec.graph.len() as u64;
                if !budget.spend(ops.saturating_mul(MODES.len() as u64)) {
                    break;
                }
                let work = || {
                    MODES.map(|recompute| {
                        let sequence_parallel =
                            sequence_parallel_runs(spec.sequence_parallel, t.into());
                        let layout = Layout {
                            tensor: t,
                            micro_batch: b,
                            recompute,
                            sequence_parallel,
                            tensor_overlap: tensor_overlap_runs(
                                spec.tensor_overlap,
                                sequence_parallel,
                            ),
                            ..Layout::single()
                        };
                        let mut costs = op_costs_of_layout(spec.graph, model, setup, c, &layout);
                        if !group.hosts_sensitive {
                            for (cost, op) in costs.iter_mut().zip(spec.graph.ops()) {
                                cost.hostable &= !op.sensitive;
                            }
                        }
                        Prefix::new(&costs)
                    })
                };
                let modes = match spec.side_costs {
                    Some(shared) => shared.get(group, t, b, work),
                    None => Rc::new(work()),
                };
                let side = Side {
                    group: *group,
                    tensor: t,
                    backward_per_param: chain.most_backward_per_param(&modes),
                    most_backward: Chain::most_backward(&modes),
                    least_seconds: Chain::least_seconds(&modes),
                    modes,
                    usable: usable_memory(&c.device),
                };
                sides.insert((g, t, b), side);
            }
        }
    }
    Prepared {
        chain,
        sides,
        steps,
    }
}

/// `cuttable` with at most [`MAX_BLOCK_CUTS`] block starts left cuttable: every k-th block's
/// start, k the least that fits; the chain's ends, the final norm and the head stay cuttable.
fn coarsened(mut cuttable: Vec<bool>, kinds: &[OpKind]) -> Vec<bool> {
    let blocks = kinds.iter().filter(|k| **k == OpKind::Attention).count();
    let every = blocks.div_ceil(MAX_BLOCK_CUTS).max(1);
    if every == 1 {
        return cuttable;
    }
    let mut block = 0;
    for (cut, kind) in cuttable.iter_mut().zip(kinds) {
        if *kind == OpKind::Attention {
            *cut &= block % every == 0;
            block += 1;
        }
    }
    cuttable
}

/// A bound's terms that are also in the step itself are shaved by a billionth, so that rounding
/// cannot lift the bound above the step.
const SHAVED: f64 = 1.0 - 1e-9;

/// Every configuration of `spec` whose lower bound on the objective is below `cutoff`, with
/// that bound: each op at the faster group's no-recompute speed, the work spread evenly over
/// every stage, and no stage faster than the send across the group boundary; plus the sites'
/// fixed seconds per step. (A configuration at or above the cutoff could never be costed, so
/// leaving it out early changes no result and spares sorting it.) Sorted by bound, then shape.
#[cfg(test)]
fn configurations(
    spec: &PipelineSpec<'_>,
    prepared: &Prepared<'_>,
    objective: &dyn Fn([u64; 2], f64) -> f64,
    cutoff: f64,
) -> Vec<(f64, PipelineShape)> {
    let mut configs = listed_configurations(spec, prepared, objective, cutoff, None);
    sort_configurations(&mut configs);
    configs
}

/// [`configurations`] in the order they are found; with `memory`, the budget their search
/// runs under, only those some partition of which could hold every stage in memory
/// ([`holds_in_memory`]).
fn listed_configurations(
    spec: &PipelineSpec<'_>,
    prepared: &Prepared<'_>,
    objective: &dyn Fn([u64; 2], f64) -> f64,
    cutoff: f64,
    memory: Option<&WorkBudget>,
) -> Vec<(f64, PipelineShape)> {
    let batch = spec.setup.global_batch;
    let batch_divisors = divisors_u32(batch);
    let n = prepared.chain.params.len().saturating_sub(1);
    let mut configs = Vec::new();
    // Each configuration's bound is an evaluation of the plan's objective: a unit of the job's
    // budget each, charged when the listing is done.
    let mut evaluations: u64 = 0;
    for (&(_, t0, b0), a) in prepared.sides.range((0, 0, 0)..(1, 0, 0)) {
        for (&(_, t1, b1), z) in prepared.sides.range((1, 0, 0)..(2, 0, 0)) {
            if b0 != b1 {
                continue;
            }
            let (Some(fa), Some(fz)) = (a.modes.first(), z.modes.first()) else {
                continue;
            };
            // Work only one group can host must fit in its stages; work both can host goes to
            // either at a speed ratio between the extremes `ratio` (B seconds per A second).
            let mut only = [0.0, 0.0];
            let mut both = [0.0, 0.0];
            let mut ratio = [f64::INFINITY, 0.0f64];
            let mut largest: f64 = 0.0;
            let mut hostable = true;
            for i in 0..n {
                let (one, other) = (span(&fa.seconds, i, i + 1), span(&fz.seconds, i, i + 1));
                match (
                    span_u(&fa.unhostable, i) == 0,
                    span_u(&fz.unhostable, i) == 0,
                ) {
                    (true, true) => {
                        both[0] += one;
                        both[1] += other;
                        if one > 0.0 {
                            ratio[0] = ratio[0].min(other / one);
                            ratio[1] = ratio[1].max(other / one);
                        }
                        largest = largest.max(one.min(other));
                    }
                    (true, false) => {
                        only[0] += one;
                        largest = largest.max(one);
                    }
                    (false, true) => {
                        only[1] += other;
                        largest = largest.max(other);
                    }
                    (false, false) => hostable = false,
                }
            }
            if !hostable {
                continue;
            }
            let [lo, hi] = ratio;
            // The slowest stage of `s0` stages on A and `s1` on B can be no faster than this.
            let bound_stage = |s0: f64, s1: f64| {
                let mut x = largest.max(only[0] / s0).max(only[1] / s1);
                if lo.is_finite() && lo > 0.0 {
                    x = x.max((both[0] + only[0] + only[1] / lo) / (s0 + s1 / lo));
                }
                if hi > 0.0 {
                    x = x.max((both[1] + only[1] + only[0] * hi) / (s1 + s0 * hi));
                }
                if !lo.is_finite() {
                    x = x.max((both[0] + only[0] + both[1] + only[1]) / (s0 + s1));
                }
                x
            };
            // Every step pays the larger of the two sites' fixed seconds, as `cost_shape` adds it.
            let fixed = [a, z]
                .iter()
                .map(|s| s.group.cluster.fitted.step_overhead_s)
                .fold(0.0, f64::max);
            for &d in &batch_divisors {
                if !(batch / d).is_multiple_of(b0) {
                    continue;
                }
                let m = f64::from(batch / d / b0);
                // The first group's last stage sends across the boundary after every
                // micro-batch, so no partition paces faster than the send (its stage's ops and
                // optimizer only add to it).
                let probe = PipelineShape {
                    tensor: [t0, t1],
                    stages: [1, 1],
                    data: d,
                    micro_batch: b0,
                    zero: 0,
                };
                let least_send = partition::boundary(spec, &probe, m).0 * SHAVED;
                let cap = |g: &PipelineGroup<'_>, t: u32| {
                    (g.available / (u64::from(t) * u64::from(d))).min(u64::from(MAX_STAGES))
                };
                let (cap0, cap1) = (cap(&spec.first, t0), cap(&spec.second, t1));
                // Each group has a stage at least and both at most `MAX_STAGES`.
                let upto = [cap0, cap1].map(|c| {
                    u32::try_from(c.min(u64::from(MAX_STAGES - 1))).unwrap_or(MAX_STAGES - 1)
                });
                let mut reaches = [MemoryReach::default(), MemoryReach::default()];
                // Each group runs as equal nodes with its tensor groups inside a node, within
                // its nodes (the rule emit checks, `NodeShape`): whether `s` stages of a group
                // run so, by `s`.
                let runs_by_stages = |g: &PipelineGroup<'_>, t: u32, cap: u64| -> Vec<bool> {
                    let c = g.cluster;
                    (0..=cap)
                        .map(|s| {
                            let devices = u64::from(t) * s * u64::from(d);
                            NodeShape::fits(
                                devices,
                                c.devices_per_node.into(),
                                t.into(),
                                c.nodes.into(),
                            )
                        })
                        .collect()
                };
                let runs = [
                    runs_by_stages(&spec.first, t0, cap0),
                    runs_by_stages(&spec.second, t1, cap1),
                ];
                let stages_run = |g: usize, s: u64| {
                    runs.get(g)
                        .and_then(|r| r.get(usize::try_from(s).ok()?))
                        .copied()
                        .unwrap_or(false)
                };
                // Both ZeRO stages of a shape have its devices and its bound: it is scored
                // once (the configurations are sorted by bound, then shape, so the order they
                // are found in is not what ranks them).
                for s0 in 1..=cap0 {
                    for s1 in 1..=cap1 {
                        let p = s0 + s1;
                        // 1F1B keeps every stage busy only with a micro-batch per stage.
                        if p > u64::from(MAX_STAGES) || p as usize > n || p as f64 > m {
                            break;
                        }
                        let shape = PipelineShape {
                            tensor: [t0, t1],
                            stages: [s0 as u32, s1 as u32],
                            data: d,
                            micro_batch: b0,
                            zero: 0,
                        };
                        let devices = shape.devices();
                        if devices[0] + devices[1] > spec.max_devices {
                            break;
                        }
                        if !(stages_run(0, s0) && stages_run(1, s1)) {
                            continue;
                        }
                        let bottleneck = bound_stage(s0 as f64, s1 as f64).max(least_send);
                        let seconds = prepared.steps * (m + p as f64 - 1.0) * bottleneck
                            + prepared.steps * fixed * SHAVED;
                        let bound = objective(devices, seconds);
                        evaluations = evaluations.saturating_add(1);
                        if bound < cutoff {
                            for (zero, reach) in [0u8, 1].into_iter().zip(&mut reaches) {
                                let shape = PipelineShape { zero, ..shape };
                                if memory.is_none_or(|budget| {
                                    holds_in_memory(spec, prepared, reach, shape, upto, budget)
                                }) {
                                    configs.push((bound, shape));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    if let Some(budget) = memory {
        // Refused past the cap, the budget then says it was reached.
        budget.spend(evaluations);
    }
    configs
}

/// Sorts configurations by bound, then shape.
fn sort_configurations(configs: &mut [(f64, PipelineShape)]) {
    // Each shape is listed once, so the order is total and an unstable sort gives the same one.
    configs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
}

/// Whether some partition of `shape` could hold every stage in memory
/// ([`MemoryReach::admits`]), with `reach`, that of its tensor degrees, micro-batch, data degree
/// and ZeRO stage, extended when it has not been to `upto` stages per group, the most any
/// configuration of theirs has (one stager per key, not one per stage count).
fn holds_in_memory(
    spec: &PipelineSpec<'_>,
    prepared: &Prepared<'_>,
    reach: &mut MemoryReach,
    shape: PipelineShape,
    upto: [u32; 2],
    budget: &WorkBudget,
) -> bool {
    if let Some(fits) = reach.admits(shape.stages) {
        return fits;
    }
    let Some(costing) = prepared.costing(&shape, budget) else {
        return false;
    };
    stager(spec, &costing, shape).reach_further(reach, upto);
    reach.admits(shape.stages) == Some(true)
}

/// Keeps the `keep` best by (score, shape).
fn insert_kept(found: &mut Vec<(f64, PipelinePlan)>, score: f64, plan: PipelinePlan, keep: usize) {
    let pos = found
        .iter()
        .position(|(s, f)| score.total_cmp(s).then(plan.shape.cmp(&f.shape)).is_lt())
        .unwrap_or(found.len());
    if pos < keep {
        found.insert(pos, (score, plan));
        found.truncate(keep);
    }
}

/// Searches heterogeneous pipelines of `spec`; `objective(devices per group, train seconds)`
/// scores a plan (lower is better) and must not decrease as the seconds grow. `incumbent` is the
/// best plan of another kind: configurations whose bound reaches it cannot win and are not
/// costed once the pair has one plan; until then configurations up to `incumbent × slack` are,
/// so that a losing pair still shows a plan as an alternative. Such a plan is the first found in
/// bound order, not always the pair's best: finding the best of a pair that cannot win costs
/// four times as long on the benchmark. Best first. When `budget` runs out the search stops with
/// the plans it has costed (none when it ran out before the first); [`WorkBudget::reached`]
/// then says so.
pub fn search_pipelines(
    spec: &PipelineSpec<'_>,
    objective: &dyn Fn([u64; 2], f64) -> f64,
    incumbent: f64,
    slack: f64,
    budget: &WorkBudget,
) -> Vec<(f64, PipelinePlan)> {
    let prepared = prepare(spec, budget);
    if budget.reached() || !prepared.splittable() {
        return Vec::new();
    }
    let keep = spec.keep.max(1);
    let mut found: Vec<(f64, PipelinePlan)> = Vec::new();
    let shown = incumbent * slack.max(1.0);
    // A configuration no partition of which fits in memory is left out before the rest are
    // sorted and partitioned: a job of hundreds of wide blocks has tens of thousands, each
    // partitioned to find nothing.
    let mut configs = listed_configurations(spec, &prepared, objective, shown, Some(budget));
    if budget.reached() {
        return found;
    }
    sort_configurations(&mut configs);
    for (bound, shape) in configs {
        let worst_kept = if found.len() >= keep {
            found.last().map_or(f64::INFINITY, |f| f.0)
        } else {
            f64::INFINITY
        };
        let cutoff = if found.is_empty() { shown } else { incumbent };
        if bound >= worst_kept.min(cutoff) {
            break;
        }
        let Some(costing) = prepared.costing(&shape, budget) else {
            continue;
        };
        let stager = stager(spec, &costing, shape);
        // Once `keep` plans are kept, a configuration whose partition's lower bound scores
        // above the worst of them cannot join them: it is not partitioned.
        let devices = shape.devices();
        let beats = |train_s: f64| objective(devices, train_s) <= worst_kept;
        let costing = Costing {
            beats: (found.len() >= keep).then_some(&beats as &dyn Fn(f64) -> bool),
            ..costing
        };
        let plan = cost_staged(&stager, &costing, shape, None);
        if budget.reached() {
            break;
        }
        if let Some(plan) = plan {
            insert_kept(
                &mut found,
                objective(shape.devices(), plan.train_time_s),
                plan,
                keep,
            );
        }
    }
    found
}

impl<'a> Prepared<'a> {
    /// Whether some cut leaves the first group a prefix and the second a suffix that each can
    /// host (which ops a group can host depends on its device only).
    fn splittable(&self) -> bool {
        let host = |g: usize| {
            self.sides
                .range((g, 0, 0)..(g + 1, 0, 0))
                .next()
                .and_then(|(_, s)| s.modes.first())
                .map(|p| p.unhostable.clone())
        };
        let (Some(a), Some(b)) = (host(0), host(1)) else {
            return false;
        };
        let n = self.chain.params.len().saturating_sub(1);
        let total_b = b.get(n).copied().unwrap_or(0);
        (1..n).any(|c| {
            self.chain.cuttable.get(c).copied().unwrap_or(false)
                && a.get(c).copied() == Some(0)
                && b.get(c).copied() == Some(total_b)
        })
    }

    /// What `shape`'s partition costs against.
    fn costing<'s>(
        &'s self,
        shape: &PipelineShape,
        budget: &'s WorkBudget,
    ) -> Option<Costing<'s, 'a>> {
        Some(Costing {
            sides: [
                self.sides.get(&(0, shape.tensor[0], shape.micro_batch))?,
                self.sides.get(&(1, shape.tensor[1], shape.micro_batch))?,
            ],
            chain: &self.chain,
            steps: self.steps,
            budget,
            beats: None,
        })
    }
}

/// The same space searched without the dynamic programme or the pruning: every configuration,
/// every way to cut the chain. For tests on small pools only (it is exponential).
#[cfg(test)]
pub(crate) fn search_exhaustively(
    spec: &PipelineSpec<'_>,
    objective: &dyn Fn([u64; 2], f64) -> f64,
) -> Option<(f64, PipelinePlan)> {
    let budget = WorkBudget::new(u64::MAX);
    let prepared = prepare(spec, &budget);
    let n = prepared.chain.params.len().saturating_sub(1);
    let mut found = Vec::new();
    for (_, shape) in configurations(spec, &prepared, objective, f64::INFINITY) {
        let costing = prepared.costing(&shape, &budget)?;
        let p = (shape.stages[0] + shape.stages[1]) as usize;
        // Every composition of n ops into p non-empty stages, as its stage ends.
        let mut ends: Vec<usize> = (1..=p).map(|k| k.min(n)).collect();
        if let Some(last) = ends.last_mut() {
            *last = n;
        }
        loop {
            let plan = cost_shape(spec, &costing, shape, Some(&ends));
            if let Some(plan) = plan {
                insert_kept(
                    &mut found,
                    objective(shape.devices(), plan.train_time_s),
                    plan,
                    1,
                );
            }
            // Next composition: advance the last movable interior end.
            let mut k = p.saturating_sub(1);
            let mut advanced = false;
            while k > 0 {
                k -= 1;
                let limit = n - (p - 1 - k);
                if ends.get(k).is_some_and(|e| *e < limit) {
                    if let Some(e) = ends.get_mut(k) {
                        *e += 1;
                    }
                    for r in (k + 1)..p.saturating_sub(1) {
                        let prev = ends.get(r - 1).copied().unwrap_or(0);
                        if let Some(e) = ends.get_mut(r) {
                            *e = prev + 1;
                        }
                    }
                    advanced = true;
                    break;
                }
            }
            if !advanced {
                break;
            }
        }
    }
    found.into_iter().next()
}

/// Every configuration's partitions by the search and the reference programmes (see
/// [`partition::compare_partitions`]), for the tests on real stage costs.
#[cfg(test)]
pub(crate) fn compare_partitions_on_every_configuration(
    spec: &PipelineSpec<'_>,
    objective: &dyn Fn([u64; 2], f64) -> f64,
) -> Vec<(PipelineShape, partition::Compared)> {
    let budget = WorkBudget::new(u64::MAX);
    let prepared = prepare(spec, &budget);
    configurations(spec, &prepared, objective, f64::INFINITY)
        .into_iter()
        .filter_map(|(_, shape)| {
            let costing = prepared.costing(&shape, &budget)?;
            Some((shape, partition::compare_partitions(spec, &costing, shape)))
        })
        .collect()
}

fn span_u(v: &[u32], i: usize) -> u32 {
    v.get(i + 1).copied().unwrap_or(0) - v.get(i).copied().unwrap_or(0)
}

mod partition;
#[cfg(test)]
mod tests;
