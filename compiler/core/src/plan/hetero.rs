//! Heterogeneous pipeline plans: the op chain cut into stages over two device groups (different
//! device types, or the same type at two sites), each stage on the group that runs it.
//!
//! For every configuration — tensor degree per group, data-parallel degree, micro-batch, ZeRO
//! stage, and stages per group — the op chain is partitioned by dynamic programming so that the
//! slowest stage is as fast as it can be. The step follows synchronous 1F1B, where every stage
//! runs at the pace of the slowest: `(m + p − 1) · max stage + gradient reduction + optimizer`,
//! so minimising the slowest stage minimises the step of that configuration, and the partition is
//! optimal, not a proportional guess. Each stage takes the least recomputation that fits its
//! memory; precision-sensitive ops go only to groups that run them at their precision.
//!
//! Configurations are visited in order of a lower bound on their objective (all work spread over
//! every stage at the faster group's speed), and the search stops when the bound cannot beat the
//! best found, so the pruning never loses the optimum.

use crate::cost::ops::{OpCost, OpSetting, op_costs};
use crate::cost::{LINK_EFFICIENCY, usable_memory};
use crate::hardware::ClusterFigures;
use crate::types::Recompute;
use crate::workload::{ModelDims, OpGraph, OpKind, TrainSetup, model_state_bytes};
use std::collections::BTreeMap;

/// Most pipeline stages a heterogeneous plan considers.
pub const MAX_STAGES: u32 = 16;

/// Largest micro-batch a heterogeneous plan considers.
const MAX_MICRO_BATCH: u32 = 8;

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
    /// Bytes per device.
    pub memory_bytes: f64,
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
    /// Seconds to train on every token.
    pub train_time_s: f64,
    /// Bytes sent over the WAN per step (0 on one site).
    pub wan_bytes_per_step: f64,
}

/// Prefix sums of one group's op costs under one recomputation mode.
struct Prefix {
    seconds: Vec<f64>,
    backward: Vec<f64>,
    tensor: Vec<f64>,
    stash: Vec<f64>,
    unhostable: Vec<u32>,
}

impl Prefix {
    fn new(costs: &[OpCost]) -> Prefix {
        let mut p = Prefix {
            seconds: vec![0.0],
            backward: vec![0.0],
            tensor: vec![0.0],
            stash: vec![0.0],
            unhostable: vec![0],
        };
        for c in costs {
            let last = |v: &Vec<f64>| v.last().copied().unwrap_or(0.0);
            let (s, b, t, m) = (
                last(&p.seconds),
                last(&p.backward),
                last(&p.tensor),
                last(&p.stash),
            );
            let u = p.unhostable.last().copied().unwrap_or(0);
            let hostable = c.hostable && c.seconds.is_finite();
            p.seconds.push(s + if hostable { c.seconds } else { 0.0 });
            p.backward.push(b + if hostable { c.backward } else { 0.0 });
            p.tensor.push(t + c.tensor_comm);
            p.stash.push(m + c.stash_bytes);
            p.unhostable.push(u + u32::from(!hostable));
        }
        p
    }
}

fn span(v: &[f64], i: usize, j: usize) -> f64 {
    v.get(j).copied().unwrap_or(0.0) - v.get(i).copied().unwrap_or(0.0)
}

const MODES: [Recompute; 3] = [Recompute::None, Recompute::Selective, Recompute::Full];

/// One group under one (tensor, micro-batch): its prefix sums per recomputation mode.
struct Side<'a> {
    group: PipelineGroup<'a>,
    tensor: u32,
    modes: [Prefix; 3],
    usable: f64,
}

/// What a stage on one group costs per parameter it holds, in one configuration.
struct PerSide {
    /// Tensor degree, as a float.
    tensor: f64,
    /// Weights, gradients and optimizer state, bytes per parameter of the stage.
    state_per_param: f64,
    /// Gradient all-reduce over the data-parallel ranks (stride `tensor`), seconds per parameter.
    reduce_per_param: f64,
    /// Optimizer step, seconds per parameter.
    optimizer_per_param: f64,
    /// Both directions of one micro-batch's activations to the next stage in the group.
    inside_send: f64,
}

impl PerSide {
    fn new(side: &Side<'_>, shape: PipelineShape, spec: &PipelineSpec<'_>) -> PerSide {
        let c = side.group.cluster;
        let t = f64::from(side.tensor.max(1));
        let d = f64::from(shape.data.max(1));
        let setup = spec.setup;
        let elt = setup.precision.bytes();
        let (w, g, o) = model_state_bytes(1.0 / t, shape.zero, d, setup.precision, setup.optimizer);
        let per_device = c.node_network_bandwidth * LINK_EFFICIENCY
            / f64::from(c.devices_per_node.max(1));
        // Ring all-reduce; inside the node when the data-parallel ranks all fit in it.
        let reduce_per_param = if shape.data > 1 {
            let ranks_per_node = (f64::from(c.devices_per_node) / t).floor().clamp(1.0, d);
            let bw = if ranks_per_node >= d {
                c.device.scale_up_bandwidth * LINK_EFFICIENCY
            } else {
                per_device
            };
            2.0 * 2.0 * (d - 1.0) / d * elt / t / bw.max(1.0)
        } else {
            0.0
        };
        let shards = if shape.zero >= 1 { d } else { 1.0 };
        let activation = f64::from(shape.micro_batch)
            * f64::from(spec.model.seq_len)
            * f64::from(spec.model.hidden)
            * elt
            / t;
        PerSide {
            tensor: t,
            state_per_param: w + g + o,
            reduce_per_param,
            optimizer_per_param: (crate::cost::OPTIMIZER_STATE_TRAFFIC + 2.0 * elt)
                / t
                / shards
                / c.device.memory_bandwidth.max(1.0),
            inside_send: 2.0 * (activation / per_device.max(1.0) + c.network_latency_s),
        }
    }
}

/// Everything a configuration's stage costs need.
struct Stager<'s, 'a> {
    per_side: [PerSide; 2],
    /// `m + p − 1`: the slots every stage runs.
    slots: f64,
    sides: [&'s Side<'a>; 2],
    params: &'s [f64],
    cuttable: &'s [bool],
    shape: PipelineShape,
    micro_batches: f64,
    /// Seconds of the send across the group boundary per micro-batch (both directions).
    boundary_s: f64,
}

/// The cost of one stage.
#[derive(Debug, Clone, Copy)]
struct StageCost {
    /// What the partition minimises the largest of: the stage's share of the step,
    /// `seconds + (reduce + optimizer) / (m + p − 1)`.
    paced: f64,
    /// Seconds per micro-batch.
    seconds: f64,
    /// Of those, tensor-parallel collectives.
    tensor: f64,
    recompute: Recompute,
    memory: f64,
    /// Exposed gradient reduction after the last micro-batch.
    reduce: f64,
    /// The optimizer step.
    optimizer: f64,
}

impl Stager<'_, '_> {
    fn stage_count(&self) -> usize {
        (self.shape.stages[0] + self.shape.stages[1]) as usize
    }

    /// Ops `[i, j)` as stage `k`, or `None` when they cannot run there.
    fn cost(&self, k: usize, i: usize, j: usize) -> Option<StageCost> {
        let p = self.stage_count();
        let g = usize::from(k >= self.shape.stages[0] as usize);
        let side = self.sides.get(g)?;
        let per = self.per_side.get(g)?;
        let first = side.modes.first()?;
        if first.unhostable.get(j)? - first.unhostable.get(i)? > 0 {
            return None;
        }
        let params = span(self.params, i, j);
        let state = params * per.state_per_param;
        let in_flight = ((p - k) as f64).min(self.micro_batches).max(1.0) / per.tensor;
        let send = if k + 1 == p {
            0.0
        } else if k + 1 == self.shape.stages[0] as usize {
            self.boundary_s
        } else {
            per.inside_send
        };
        let ops = (j - i).max(1) as f64;
        let reduce = params * per.reduce_per_param;
        let optimizer = params * per.optimizer_per_param;
        for (mode, prefix) in MODES.iter().zip(&side.modes) {
            let memory = state + span(&prefix.stash, i, j) * in_flight;
            if memory <= side.usable {
                let seconds = span(&prefix.seconds, i, j) + send;
                // Hidden under the last micro-batch's backward except its last op.
                let window = span(&prefix.backward, i, j) * (ops - 1.0) / ops;
                let exposed = (reduce - window).max(reduce / ops);
                return Some(StageCost {
                    paced: seconds + (exposed + optimizer) / self.slots,
                    seconds,
                    tensor: span(&prefix.tensor, i, j),
                    recompute: *mode,
                    memory,
                    reduce: exposed,
                    optimizer,
                });
            }
        }
        None
    }


    /// The min-max partition of the chain into the configuration's stages, by dynamic
    /// programming from the last stage back: `best[r][i]` is the slowest stage of the best split
    /// of ops `[i, n)` into the last `r` stages.
    fn partition(&self) -> Option<Vec<(usize, usize, StageCost)>> {
        let n = self.params.len().saturating_sub(1);
        let p = self.stage_count();
        if p == 0 || p > n {
            return None;
        }
        let inf = f64::INFINITY;
        let mut best = vec![vec![inf; n + 1]; p + 1];
        let mut cut = vec![vec![n; n + 1]; p + 1];
        if let Some(row) = best.get_mut(0)
            && let Some(end) = row.get_mut(n)
        {
            *end = 0.0;
        }
        let cuts: Vec<usize> = (0..=n)
            .filter(|&i| self.cuttable.get(i).copied().unwrap_or(false))
            .collect();
        for r in 1..=p {
            let k = p - r;
            // Stage k starts at a cut with k cuts before it and leaves r − 1 segments after.
            let last_start = cuts.len().checked_sub(r + 1)?;
            for (ci, &i) in cuts.iter().enumerate().take(last_start + 1).skip(k) {
                let mut found = inf;
                let mut at = n;
                let last_end = cuts.len() - r;
                for &j in cuts.get(ci + 1..=last_end).unwrap_or(&[]) {
                    let Some(StageCost { paced, .. }) = self.cost(k, i, j) else {
                        break;
                    };
                    if paced >= found {
                        break;
                    }
                    let rest = best.get(r - 1).and_then(|row| row.get(j)).copied()?;
                    let worst = paced.max(rest);
                    if worst < found {
                        found = worst;
                        at = j;
                    }
                }
                if let Some(cell) = best.get_mut(r).and_then(|row| row.get_mut(i)) {
                    *cell = found;
                }
                if let Some(cell) = cut.get_mut(r).and_then(|row| row.get_mut(i)) {
                    *cell = at;
                }
            }
        }
        if !best.get(p)?.first()?.is_finite() {
            return None;
        }
        let mut stages = Vec::with_capacity(p);
        let mut i = 0;
        for r in (1..=p).rev() {
            let j = *cut.get(r)?.get(i)?;
            stages.push((i, j, self.cost(p - r, i, j)?));
            i = j;
        }
        Some(stages)
    }
}

/// Positive divisors of `n`, increasing.
fn divisors(n: u32) -> Vec<u32> {
    (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
}

/// The search's shared inputs: cumulative parameters along the chain, the groups' op costs
/// per (group, tensor, micro-batch), and the number of optimizer steps.
struct Prepared<'a> {
    params: Vec<f64>,
    /// Where a stage may begin or end: between whole blocks, and before the final norm and the
    /// head (never inside a block, never between the head and the loss, whose input is logits).
    cuttable: Vec<bool>,
    sides: BTreeMap<(usize, u32, u32), Side<'a>>,
    steps: f64,
}

fn prepare<'a>(spec: &PipelineSpec<'a>) -> Prepared<'a> {
    let model = spec.model;
    let setup = spec.setup;
    let steps = setup.tokens / setup.tokens_per_step(model).max(1.0);
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
    let mut sides = BTreeMap::new();
    for (g, group) in [spec.first, spec.second].iter().enumerate() {
        let c = group.cluster;
        let tensors = divisors(model.heads)
            .into_iter()
            .filter(|t| *t <= c.devices_per_node && model.kv_heads.is_multiple_of(*t));
        for t in tensors {
            let micro = divisors(setup.global_batch)
                .into_iter()
                .filter(|b| *b <= MAX_MICRO_BATCH);
            for b in micro {
                let modes = MODES.map(|recompute| {
                    let setting = OpSetting {
                        tensor: t,
                        micro_batch: b,
                        recompute,
                    };
                    let mut costs = op_costs(spec.graph, model, setup, c, setting);
                    if !group.hosts_sensitive {
                        for (cost, op) in costs.iter_mut().zip(spec.graph.ops()) {
                            cost.hostable &= !op.sensitive;
                        }
                    }
                    Prefix::new(&costs)
                });
                let side = Side {
                    group: *group,
                    tensor: t,
                    modes,
                    usable: usable_memory(&c.device),
                };
                sides.insert((g, t, b), side);
            }
        }
    }
    Prepared {
        params,
        cuttable,
        sides,
        steps,
    }
}

/// Every configuration of `spec`, with a lower bound on its objective: each op at the faster
/// group's no-recompute speed, the work spread evenly over every stage.
fn configurations(
    spec: &PipelineSpec<'_>,
    prepared: &Prepared<'_>,
    objective: &dyn Fn([u64; 2], f64) -> f64,
) -> Vec<(f64, PipelineShape)> {
    let batch = spec.setup.global_batch;
    let n = prepared.params.len().saturating_sub(1);
    let mut configs = Vec::new();
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
                match (span_u(&fa.unhostable, i) == 0, span_u(&fz.unhostable, i) == 0) {
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
            for d in divisors(batch) {
                if !(batch / d).is_multiple_of(b0) {
                    continue;
                }
                let m = f64::from(batch / d / b0);
                let cap = |g: &PipelineGroup<'_>, t: u32| {
                    (g.available / (u64::from(t) * u64::from(d))).min(u64::from(MAX_STAGES))
                };
                let (cap0, cap1) = (cap(&spec.first, t0), cap(&spec.second, t1));
                for zero in [0u8, 1] {
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
                                zero,
                            };
                            let devices = shape.devices();
                            if devices[0] + devices[1] > spec.max_devices {
                                break;
                            }
                            let bottleneck = bound_stage(s0 as f64, s1 as f64);
                            let seconds = prepared.steps * (m + p as f64 - 1.0) * bottleneck;
                            configs.push((objective(devices, seconds), shape));
                        }
                    }
                }
            }
        }
    }
    configs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    configs
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
/// scores a plan (lower is better) and must not decrease as the seconds grow. Configurations
/// whose bound reaches `incumbent` (the best plan of another kind) are not costed: they cannot
/// win. Best first.
pub fn search_pipelines(
    spec: &PipelineSpec<'_>,
    objective: &dyn Fn([u64; 2], f64) -> f64,
    incumbent: f64,
) -> Vec<(f64, PipelinePlan)> {
    let prepared = prepare(spec);
    if !prepared.splittable() {
        return Vec::new();
    }
    let keep = spec.keep.max(1);
    let mut found: Vec<(f64, PipelinePlan)> = Vec::new();
    for (bound, shape) in configurations(spec, &prepared, objective) {
        let worst_kept = if found.len() >= keep {
            found.last().map_or(f64::INFINITY, |f| f.0)
        } else {
            f64::INFINITY
        };
        if bound >= worst_kept.min(incumbent) {
            break;
        }
        let Some(sides) = prepared.sides_of(&shape) else {
            continue;
        };
        let plan = cost_shape(spec, sides, prepared.chain(), shape, prepared.steps, None);
        if let Some(plan) = plan {
            insert_kept(&mut found, objective(shape.devices(), plan.train_time_s), plan, keep);
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
        let n = self.params.len().saturating_sub(1);
        let total_b = b.get(n).copied().unwrap_or(0);
        (1..n).any(|c| {
            self.cuttable.get(c).copied().unwrap_or(false)
                && a.get(c).copied() == Some(0)
                && b.get(c).copied() == Some(total_b)
        })
    }

    fn chain(&self) -> (&[f64], &[bool]) {
        (&self.params, &self.cuttable)
    }

    fn sides_of(&self, shape: &PipelineShape) -> Option<[&Side<'a>; 2]> {
        Some([
            self.sides.get(&(0, shape.tensor[0], shape.micro_batch))?,
            self.sides.get(&(1, shape.tensor[1], shape.micro_batch))?,
        ])
    }
}

/// The same space searched without the dynamic programme or the pruning: every configuration,
/// every way to cut the chain. For tests on small pools only (it is exponential).
#[cfg(test)]
pub(crate) fn search_exhaustively(
    spec: &PipelineSpec<'_>,
    objective: &dyn Fn([u64; 2], f64) -> f64,
) -> Option<(f64, PipelinePlan)> {
    let prepared = prepare(spec);
    let n = prepared.params.len().saturating_sub(1);
    let mut found = Vec::new();
    for (_, shape) in configurations(spec, &prepared, objective) {
        let sides = prepared.sides_of(&shape)?;
        let p = (shape.stages[0] + shape.stages[1]) as usize;
        // Every composition of n ops into p non-empty stages, as its stage ends.
        let mut ends: Vec<usize> = (1..=p).map(|k| k.min(n)).collect();
        if let Some(last) = ends.last_mut() {
            *last = n;
        }
        loop {
            let plan = cost_shape(spec, sides, prepared.chain(), shape, prepared.steps, Some(&ends));
            if let Some(plan) = plan {
                insert_kept(&mut found, objective(shape.devices(), plan.train_time_s), plan, 1);
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

fn span_u(v: &[u32], i: usize) -> u32 {
    v.get(i + 1).copied().unwrap_or(0) - v.get(i).copied().unwrap_or(0)
}

/// Partitions and costs one configuration; `cuts` forces the stage boundaries (the exhaustive
/// search of the tests), otherwise the dynamic programme chooses them.
fn cost_shape(
    spec: &PipelineSpec<'_>,
    sides: [&Side<'_>; 2],
    chain: (&[f64], &[bool]),
    shape: PipelineShape,
    steps: f64,
    cuts: Option<&[usize]>,
) -> Option<PipelinePlan> {
    let (params, cuttable) = chain;
    let setup = spec.setup;
    let micro_batches = f64::from(setup.global_batch)
        / (f64::from(shape.data.max(1)) * f64::from(shape.micro_batch.max(1)));
    let activation = f64::from(shape.micro_batch)
        * f64::from(spec.model.seq_len)
        * f64::from(spec.model.hidden)
        * setup.precision.bytes();
    // Across the group boundary every data-parallel pipeline sends at once.
    let (boundary_s, wan_bytes_per_step) = match spec.wan {
        Some(wan) => {
            let bytes = activation * f64::from(shape.data);
            let seconds = bytes / (wan.bandwidth * LINK_EFFICIENCY).max(1.0) + wan.latency_s;
            (2.0 * seconds, 2.0 * bytes * micro_batches)
        }
        None => {
            let per_device = |c: &ClusterFigures| {
                c.node_network_bandwidth * LINK_EFFICIENCY / f64::from(c.devices_per_node.max(1))
            };
            let bw = per_device(spec.first.cluster).min(per_device(spec.second.cluster));
            let bytes = activation / f64::from(shape.tensor[0].min(shape.tensor[1]).max(1));
            let latency = spec
                .first
                .cluster
                .network_latency_s
                .max(spec.second.cluster.network_latency_s);
            (2.0 * (bytes / bw.max(1.0) + latency), 0.0)
        }
    };
    let stager = Stager {
        per_side: [
            PerSide::new(sides[0], shape, spec),
            PerSide::new(sides[1], shape, spec),
        ],
        slots: micro_batches + f64::from(shape.stages[0] + shape.stages[1]) - 1.0,
        sides,
        params,
        cuttable,
        shape,
        micro_batches,
        boundary_s,
    };
    let cuts = match cuts {
        None => stager.partition()?,
        Some(ends) => {
            let mut start = 0;
            let mut stages = Vec::with_capacity(ends.len());
            for (k, &end) in ends.iter().enumerate() {
                if !cuttable.get(end).copied().unwrap_or(false) {
                    return None;
                }
                stages.push((start, end, stager.cost(k, start, end)?));
                start = end;
            }
            stages
        }
    };
    let p = cuts.len() as f64;
    let slots = micro_batches + p - 1.0;
    let mut stages = Vec::with_capacity(cuts.len());
    let mut slowest: Option<StageCost> = None;
    for (k, (i, j, cost)) in cuts.into_iter().enumerate() {
        if slowest.is_none_or(|s| cost.paced > s.paced) {
            slowest = Some(cost);
        }
        stages.push(PipelineStage {
            side: usize::from(k >= shape.stages[0] as usize),
            ops: [i, j],
            recompute: cost.recompute,
            seconds: cost.seconds,
            tensor_comm: cost.tensor,
            memory_bytes: cost.memory,
        });
    }
    let slowest = slowest?;
    // Every stage runs m + p − 1 slots at the pace of the slowest, which then reduces its
    // gradients and steps its optimizer.
    let step_time_s = slots * slowest.paced;
    let (bottleneck, data_comm, optimizer) = (slowest.seconds, slowest.reduce, slowest.optimizer);
    Some(PipelinePlan {
        shape,
        stages,
        step_time_s,
        micro_batches,
        bottleneck_s: bottleneck,
        data_comm_s: data_comm,
        optimizer_s: optimizer,
        train_time_s: steps * step_time_s,
        wan_bytes_per_step,
    })
}

#[cfg(test)]
mod tests;
