//! Costing one configuration of a heterogeneous pipeline: prefix sums of each group's op
//! costs, the cost of a stage (least recomputation that fits, gradient reduction, optimizer,
//! sends), and the min-max partition ([`minmax`]) that cuts the chain into stages.

use super::{PipelineGroup, PipelinePlan, PipelineShape, PipelineSpec, PipelineStage};
use crate::cost::ops::OpCost;
use crate::cost::pipeline_step::{StageTimes, optimizer_seconds_per_param, slots, step_seconds};
use crate::cost::{Collective, Group, LINK_EFFICIENCY, scale_up_devices, uplink_slowdown};
use crate::hardware::ClusterFigures;
use crate::plan::search::budget::WorkBudget;
use crate::workload::{
    Layout, MemoryBreakdown, OpGraph, OpKind, ParamCount, StageHolding, StageMemory, StageStates,
    layer_bytes_per_token, param_count,
};
use loam_ir::plan::{sequence_parallel_runs, tensor_overlap_runs};
use loam_ir::types::Recompute;

mod floor;
mod minmax;
mod reach;
#[cfg(test)]
mod reference;
pub(super) use reach::MemoryReach;
#[cfg(test)]
pub(super) use reference::{
    Compared, Reference, check_floors, check_least_slowest, compare_partitions,
};

/// Prefix sums of one group's op costs under one recomputation mode.
pub(super) struct Prefix {
    pub(super) seconds: Vec<f64>,
    pub(super) backward: Vec<f64>,
    pub(super) forward: Vec<f64>,
    pub(super) tensor: Vec<f64>,
    pub(super) unhostable: Vec<u32>,
}

impl Prefix {
    pub(super) fn new(costs: &[OpCost]) -> Prefix {
        let mut p = Prefix {
            seconds: vec![0.0],
            backward: vec![0.0],
            forward: vec![0.0],
            tensor: vec![0.0],
            unhostable: vec![0],
        };
        for c in costs {
            let last = |v: &Vec<f64>| v.last().copied().unwrap_or(0.0);
            let (s, b, t) = (last(&p.seconds), last(&p.backward), last(&p.tensor));
            let u = p.unhostable.last().copied().unwrap_or(0);
            let hostable = c.hostable && c.seconds.is_finite();
            p.seconds.push(s + if hostable { c.seconds } else { 0.0 });
            p.backward.push(b + if hostable { c.backward } else { 0.0 });
            let f = last(&p.forward);
            p.forward.push(f + if hostable { c.forward } else { 0.0 });
            p.tensor.push(t + c.tensor_comm);
            p.unhostable.push(u + u32::from(!hostable));
        }
        p
    }
}

pub(super) fn span(v: &[f64], i: usize, j: usize) -> f64 {
    v.get(j).copied().unwrap_or(0.0) - v.get(i).copied().unwrap_or(0.0)
}

pub(super) const MODES: [Recompute; 3] = [Recompute::None, Recompute::Selective, Recompute::Full];

/// One group under one (tensor, micro-batch): its prefix sums per recomputation mode.
pub(super) struct Side<'a> {
    pub(super) group: PipelineGroup<'a>,
    pub(super) tensor: u32,
    pub(super) modes: std::rc::Rc<[Prefix; 3]>,
    pub(super) usable: f64,
    /// The most backward seconds per parameter of any stretch of the chain between two
    /// consecutive cuts, under any recomputation mode ([`Chain::most_backward_per_param`]):
    /// whether the floor of a stage's exposed reduction may count the backward that hides it.
    pub(super) backward_per_param: f64,
    /// By op, the backward seconds of the ops before it, each op under the recomputation mode
    /// whose backward is longest there ([`Chain::most_backward`]): no mode's backward over a
    /// stretch exceeds this one's span, for the reduction floor's hull
    /// ([`floor::ReduceHull`]).
    pub(super) most_backward: Vec<f64>,
    /// By op, the seconds of the ops before it, each op under its fastest recomputation mode
    /// ([`Chain::least_seconds`]), for the spread bound ([`Stager::spread_floor`]).
    pub(super) least_seconds: Vec<f64>,
}

/// What a stage on one group costs per parameter it holds, in one configuration.
pub(super) struct PerSide {
    /// The site's fixed seconds per step (`FittedConstants::step_overhead_s`, 0 uncalibrated).
    fixed: f64,
    /// Gradient all-reduce over the data-parallel ranks (stride `tensor`), seconds per parameter.
    reduce_per_param: f64,
    /// Optimizer step, seconds per parameter.
    optimizer_per_param: f64,
    /// The group's [`crate::cost::FittedConstants::overlap_contention`].
    contention: f64,
    /// `1 − contention`, the most of a stage's backward that hides its reduction, when a
    /// stage's exposed-reduction floor counts it (`Stager::unhidden_floor`): the contention in
    /// `[0, 1]` and every stretch between two cuts adds more reduction than that much of its
    /// backward, by a millionth. `None` otherwise.
    hidden_per_backward: Option<f64>,
    /// Where `hidden_per_backward` is `None` (some stretch adds more backward than its
    /// reduction can hide under): the lower hull of the exposed reduction, which never falls as
    /// a stage grows without asking that of every stretch ([`floor::ReduceHull`]). `None` when
    /// `hidden_per_backward` is set, or there is nothing to reduce.
    reduce_hull: Option<std::rc::Rc<floor::ReduceHull>>,
    /// Both directions of one micro-batch's activations to the next stage in the group.
    inside_send: f64,
    /// The memory of a stage on this group ([`crate::workload::stage_memory`], worked out once
    /// per configuration). A stage's model states are worked out when it is costed, under the
    /// configuration's ZeRO stage only: a few multiplications, cheaper than a cache of every
    /// holding of a long chain, which each configuration filled anew.
    memory: StageMemory,
    /// The group's layout as the memory function reads it (all the pipeline's stages).
    layout: Layout,
}

impl PerSide {
    /// `index` is 0 for the first group, 1 for the second.
    fn new(
        side: &Side<'_>,
        index: usize,
        shape: PipelineShape,
        spec: &PipelineSpec<'_>,
        count: &ParamCount,
        chain: &Chain,
    ) -> PerSide {
        let c = side.group.cluster;
        let t = f64::from(side.tensor.max(1));
        let d = f64::from(shape.data.max(1));
        let setup = spec.setup;
        let elt = setup.precision.bytes();
        // Each stage of the group as a single-type layout of the whole pipeline would run it.
        let layout = Layout {
            tensor: side.tensor,
            pipeline: shape.stages[0] + shape.stages[1],
            data: shape.data,
            micro_batch: shape.micro_batch,
            zero: shape.zero,
            sequence_parallel: sequence_parallel_runs(spec.sequence_parallel, side.tensor.into()),
            tensor_overlap: tensor_overlap_runs(
                spec.tensor_overlap,
                sequence_parallel_runs(spec.sequence_parallel, side.tensor.into()),
            ),
            ..Layout::single()
        };
        let per_token = layer_bytes_per_token(spec.model, setup.precision, &layout);
        let states = StageStates::new(spec.model, count, setup, &layout);
        let memory = StageMemory::new(states, spec.model, setup, &layout, per_token);
        let per_device =
            c.node_network_bandwidth * LINK_EFFICIENCY / f64::from(c.devices_per_node.max(1));
        // Ring all-reduce; on the scale-up fabric when the data-parallel ranks all fit in one
        // domain (the node, or a rack-scale fabric: the collective model's own count).
        let reduce_per_param = if shape.data > 1 {
            let ranks_per_node = (scale_up_devices(c) / t).floor().clamp(1.0, d);
            // Ranks are ordered tensor, then the group's stages, then data.
            let ranks = Group {
                size: d,
                stride: t * f64::from(shape.stages.get(index).copied().unwrap_or(1).max(1)),
            };
            let bw = if ranks_per_node >= d {
                c.device.scale_up_bandwidth * LINK_EFFICIENCY
            } else {
                per_device / uplink_slowdown(Collective::AllReduce, ranks, c)
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
        let contention = c.fitted.overlap_contention;
        let hides = 1.0 - contention;
        let hidden_per_backward = ((0.0..=1.0).contains(&contention)
            && reduce_per_param >= hides * side.backward_per_param * (1.0 + 1e-6))
            .then_some(hides);
        // The hull, a pass over the chain, is worked out once per group, tensor degree,
        // micro-batch and reduction per parameter ([`Chain::hulls`]), and only where the
        // whole chain's reduction outweighs its longest backward, so that some stage's exposed
        // reduction may exceed the `contention` share the floor counts anyway.
        let whole = |v: &[f64]| v.last().copied().unwrap_or(0.0);
        let reduce_hull = (hidden_per_backward.is_none()
            && (0.0..=1.0).contains(&contention)
            && reduce_per_param * whole(&chain.params) > whole(&side.most_backward))
        .then(|| {
            let key = (
                index,
                side.tensor,
                shape.micro_batch,
                reduce_per_param.to_bits(),
            );
            let mut hulls = chain.hulls.borrow_mut();
            let hull = hulls.entry(key).or_insert_with(|| {
                std::rc::Rc::new(floor::ReduceHull::new(
                    chain,
                    &side.most_backward,
                    reduce_per_param,
                    hides,
                ))
            });
            std::rc::Rc::clone(hull)
        });
        PerSide {
            fixed: c.fitted.step_overhead_s,
            reduce_per_param,
            contention,
            hidden_per_backward,
            reduce_hull,
            optimizer_per_param: optimizer_seconds_per_param(
                elt,
                t,
                shards,
                c.device.memory_bandwidth,
            ),
            inside_send: 2.0 * (activation / per_device.max(1.0) + c.network_latency_s),
            memory,
            layout,
        }
    }
}

/// Everything a configuration's stage costs need.
pub(super) struct Stager<'s, 'a> {
    per_side: [PerSide; 2],
    /// `m + p − 1`: the slots every stage runs.
    slots: f64,
    sides: [&'s Side<'a>; 2],
    params: &'s [f64],
    cuttable: &'s [bool],
    /// The ops at which a stage may begin or end, in order ([`Chain::cuts`]).
    cuts: &'s [usize],
    /// Blocks among the first `i` ops of the chain, by `i`.
    blocks: &'s [u32],
    /// The index of the LM head in the chain.
    head_op: usize,
    shape: PipelineShape,
    micro_batches: f64,
    /// Seconds of the send across the group boundary per micro-batch (both directions).
    boundary_s: f64,
    /// Bytes sent over the WAN per step (0 on one site).
    wan_bytes_per_step: f64,
    /// The job's cap on the search: each stage the partition costs takes one unit.
    budget: &'s WorkBudget,
}

/// The cost of one stage.
#[derive(Debug, Clone, Copy)]
pub(super) struct StageCost {
    /// What the partition minimises the largest of: the stage's share of the step,
    /// [`StageTimes::paced`].
    paced: f64,
    /// Seconds per micro-batch, the exposed gradient reduction after the last micro-batch and
    /// the optimizer step.
    times: StageTimes,
    /// Of the seconds per micro-batch, tensor-parallel collectives.
    tensor: f64,
    /// Of the seconds per micro-batch, the forward pass and the send of its activations.
    forward: f64,
    recompute: Recompute,
    memory: MemoryBreakdown,
}

impl Stager<'_, '_> {
    /// The ops at which a stage may begin or end (the chain's cuttable points), in order.
    fn cuts(&self) -> &[usize] {
        self.cuts
    }

    fn stage_count(&self) -> usize {
        (self.shape.stages[0] + self.shape.stages[1]) as usize
    }

    /// Seconds of the send after stage `k` (per micro-batch, both directions).
    fn send(&self, k: usize) -> f64 {
        let g = usize::from(k >= self.shape.stages[0] as usize);
        if k + 1 == self.stage_count() {
            0.0
        } else if k + 1 == self.shape.stages[0] as usize {
            self.boundary_s
        } else {
            self.per_side.get(g).map_or(0.0, |per| per.inside_send)
        }
    }

    /// Ops `[i, j)` as stage `k`, or `None` when they cannot run there.
    fn cost(&self, k: usize, i: usize, j: usize) -> Option<StageCost> {
        let g = usize::from(k >= self.shape.stages[0] as usize);
        let side = self.sides.get(g)?;
        let per = self.per_side.get(g)?;
        let in_flight = per.layout.in_flight(k as u32, self.micro_batches);
        let (mode, memory) = self.least_fitting(g, i, j, in_flight)?;
        let (recompute, prefix) = (*MODES.get(mode)?, side.modes.get(mode)?);
        let params = span(self.params, i, j);
        let send = self.send(k);
        let ops = (j - i).max(1) as f64;
        let reduce = params * per.reduce_per_param;
        let optimizer = params * per.optimizer_per_param;
        let seconds = span(&prefix.seconds, i, j) + send;
        let exposed = crate::cost::exposed_reduction(
            reduce,
            span(&prefix.backward, i, j),
            ops,
            per.contention,
        );
        let times = StageTimes {
            seconds,
            reduce: exposed,
            optimizer,
        };
        Some(StageCost {
            paced: times.paced(self.slots),
            times,
            tensor: span(&prefix.tensor, i, j),
            // The send is the activations forward and their gradients back.
            forward: span(&prefix.forward, i, j) + send / 2.0,
            recompute,
            memory,
        })
    }

    /// Ops `[i, j)` as a stage of group `g` holding `in_flight` micro-batches at its peak: the
    /// least recomputation under which they fit (its index in [`MODES`]) and the stage's
    /// memory under it; `None` when the group cannot host them or no recomputation fits.
    fn least_fitting(
        &self,
        g: usize,
        i: usize,
        j: usize,
        in_flight: f64,
    ) -> Option<(usize, MemoryBreakdown)> {
        let side = self.sides.get(g)?;
        let per = self.per_side.get(g)?;
        let first = side.modes.first()?;
        if first.unhostable.get(j)? > first.unhostable.get(i)? {
            return None;
        }
        let holding = StageHolding {
            blocks: f64::from(self.blocks.get(j)?.saturating_sub(*self.blocks.get(i)?)),
            embedding: i == 0,
            head: (i..j).contains(&self.head_op),
            in_flight,
        };
        let states = per.memory.state_bytes(&holding, self.shape.zero);
        MODES.iter().enumerate().find_map(|(index, mode)| {
            let memory = per
                .memory
                .rank_with(states, &holding, self.shape.zero, *mode);
            (memory.total <= side.usable).then_some((index, memory))
        })
    }

    /// The min-max partition of the chain into the configuration's stages, each stage with its
    /// cost; `None` when no partition runs, none has its slowest stage's pace at or below `cap`
    /// (see [`minmax::min_max_partition`]), or the job's [`WorkBudget`] ran out on the way.
    fn partition(&self, cap: f64) -> Option<Vec<(usize, usize, StageCost)>> {
        let n = self.params.len().saturating_sub(1);
        let p = self.stage_count();
        if p == 0 || p > n {
            return None;
        }
        let cuts = self.cuts();
        // The first stage starts at the chain's start and the last ends at its end.
        if cuts.first() != Some(&0) || cuts.last() != Some(&n) {
            return None;
        }
        // Every cell of the programme (a start of a stage) takes a unit besides its costings.
        if !self.budget.spend((p * cuts.len()) as u64) {
            return None;
        }
        let mut paced = |k: usize, from: usize, to: usize| {
            if !self.budget.spend(1) {
                return None;
            }
            let (i, j) = (*cuts.get(from)?, *cuts.get(to)?);
            let cost = self.cost(k, i, j)?;
            let rank = MODES.iter().position(|m| *m == cost.recompute).unwrap_or(0);
            Some((cost.paced, rank))
        };
        let floor =
            |k: usize, from: usize, to: usize, rank: usize| match (cuts.get(from), cuts.get(to)) {
                (Some(&i), Some(&j)) => self.floor(k, i, j, rank),
                _ => f64::INFINITY,
            };
        let mut times = minmax::StageTimes {
            paced: &mut paced,
            floor: &floor,
        };
        let ends = minmax::min_max_partition(cuts.len(), p, &mut times, cap);
        if self.budget.reached() {
            return None;
        }
        let mut stages = Vec::with_capacity(p);
        let mut i = 0;
        for (k, end) in ends?.into_iter().enumerate() {
            let j = *cuts.get(end)?;
            stages.push((i, j, self.cost(k, i, j)?));
            i = j;
        }
        Some(stages)
    }

    /// [`Stager::partition`] by a reference programme (the scan it replaced, or the same
    /// without its early stop), for the tests that compare them on real configurations.
    #[cfg(test)]
    fn partition_by(&self, reference: Reference) -> Option<Vec<(usize, usize)>> {
        let cuts = self.cuts();
        let mut paced = |k: usize, from: usize, to: usize| {
            let (i, j) = (*cuts.get(from)?, *cuts.get(to)?);
            self.cost(k, i, j).map(|c| c.paced)
        };
        let (m, p) = (cuts.len(), self.stage_count());
        let ends = match reference {
            Reference::Scan => minmax::min_max_partition_by_scan(m, p, &mut paced),
            Reference::Exhaustive => minmax::min_max_partition_exhaustive(m, p, &mut paced),
        }?;
        let mut i = 0;
        Some(
            ends.into_iter()
                .map(|end| {
                    let j = cuts[end];
                    let stage = (i, j);
                    i = j;
                    stage
                })
                .collect(),
        )
    }
}

/// The last `j` in `[lo, stop)` where `holds` does (`lo − 1` when it never does), for a
/// predicate that, once false, stays false.
fn last_index(lo: usize, stop: usize, holds: impl Fn(usize) -> bool) -> usize {
    let (mut below, mut above) = (lo, stop);
    while below < above {
        let mid = below + (above - below) / 2;
        if holds(mid) {
            below = mid + 1;
        } else {
            above = mid;
        }
    }
    below.wrapping_sub(1)
}

/// The op chain as every configuration's partition reads it, listed once per search (each
/// configuration listed its cuts and counted its blocks anew, `O(n)` each on a long chain).
pub(super) struct Chain {
    /// Cumulative parameters along the chain, by op.
    pub(super) params: Vec<f64>,
    /// Where a stage may begin or end, by op.
    pub(super) cuttable: Vec<bool>,
    /// The ops at which a stage may begin or end, in order.
    cuts: Vec<usize>,
    /// Blocks among the first `i` ops of the chain, by `i`.
    blocks: Vec<u32>,
    /// The index of the LM head in the chain (`usize::MAX` without one).
    head_op: usize,
    /// The reduction hulls worked out so far ([`PerSide::reduce_hull`]), by group, tensor
    /// degree, micro-batch and the bits of the reduction seconds per parameter: what a hull
    /// depends on besides the chain. Configurations that differ in the other group's stages
    /// or in their ZeRO stage share one (90 hulls for 19,672 configurations of a 278-layer
    /// job).
    pub(super) hulls: std::cell::RefCell<HullCache>,
}

/// [`Chain::hulls`].
pub(super) type HullCache =
    std::collections::BTreeMap<(usize, u32, u32, u64), std::rc::Rc<floor::ReduceHull>>;

impl Chain {
    /// The chain of `graph`, with its cumulative parameters and cuttable points.
    pub(super) fn new(params: Vec<f64>, cuttable: Vec<bool>, graph: &OpGraph) -> Chain {
        let n = params.len().saturating_sub(1);
        let cuts = (0..=n)
            .filter(|&i| cuttable.get(i).copied().unwrap_or(false))
            .collect();
        let mut blocks = Vec::with_capacity(params.len());
        let mut head_op = usize::MAX;
        let mut seen = 0u32;
        blocks.push(0);
        for (i, op) in graph.ops().enumerate() {
            seen += u32::from(op.kind == OpKind::Attention);
            if op.kind == OpKind::LmHead {
                head_op = i;
            }
            blocks.push(seen);
        }
        Chain {
            params,
            cuttable,
            cuts,
            blocks,
            head_op,
            hulls: std::cell::RefCell::default(),
        }
    }
}

/// What a configuration's partition costs against: its sides, the chain, the optimizer steps,
/// and the job's cap on the search.
pub(super) struct Costing<'s, 'a> {
    pub(super) sides: [&'s Side<'a>; 2],
    /// The op chain.
    pub(super) chain: &'s Chain,
    pub(super) steps: f64,
    pub(super) budget: &'s WorkBudget,
    /// Whether a plan that trains for at least the given seconds could still be kept: a
    /// configuration whose lower bound cannot is not partitioned.
    pub(super) beats: Option<&'s dyn Fn(f64) -> bool>,
}

/// Partitions and costs one configuration; `cuts` forces the stage boundaries (the exhaustive
/// search of the tests), otherwise the min-max partition chooses them. `None` when nothing
/// runs, or when the job's budget ran out while partitioning. (The search builds the stager
/// itself, [`cost_staged`].)
#[cfg(test)]
pub(super) fn cost_shape(
    spec: &PipelineSpec<'_>,
    costing: &Costing<'_, '_>,
    shape: PipelineShape,
    cuts: Option<&[usize]>,
) -> Option<PipelinePlan> {
    cost_staged(&stager(spec, costing, shape), costing, shape, cuts)
}

/// Partitions and costs one configuration as `cost_shape` (the tests') does, with its stager
/// already built (by [`stager`] from a costing of the same sides, chain and budget).
pub(super) fn cost_staged(
    stager: &Stager<'_, '_>,
    costing: &Costing<'_, '_>,
    shape: PipelineShape,
    cuts: Option<&[usize]>,
) -> Option<PipelinePlan> {
    // Each group's site adds its fixed seconds to every step, both at once: the larger counts.
    let fixed = stager.per_side.iter().map(|p| p.fixed).fold(0.0, f64::max);
    let cuts = match cuts {
        None => {
            // A configuration none of whose partitions holds its stages within the pace of use
            // is not partitioned; the check takes a unit of the job's budget per stage, as the
            // partition's cells do.
            if !costing.budget.spend(stager.stage_count() as u64) {
                return None;
            }
            let per_pace = stager.slots * costing.steps;
            let cap = match costing.beats {
                Some(beats) => {
                    // Each evaluation of the plan's objective (its goodput model) the checks
                    // and bisections below make is a unit of the job's budget too: a job with
                    // hundreds of thousands of configurations spends most of its search here.
                    let evaluations = std::cell::Cell::new(0u64);
                    let useful = |pace: f64| {
                        evaluations.set(evaluations.get().saturating_add(1));
                        beats(pace * per_pace + fixed * costing.steps)
                    };
                    // The cheap tests first: the spread bound, then the stages' memory and
                    // floors held to the cap found from it. The cap is the least pace `useful`
                    // refuses, whatever pace it is found from (`useful_pace`), unless the
                    // threshold is 2⁶⁴ times that pace: then it is `+∞` from the lower one
                    // and the memory test only weaker. The greedy bound's bisection then runs
                    // for what passes, so that it answers, and the cap is, as before.
                    let checked = (|| {
                        let spread = stager.spread_floor();
                        if !useful(spread) {
                            return None;
                        }
                        if !stager.may_hold_stages(useful_pace(spread, useful)) {
                            return None;
                        }
                        let from = stager.least_slowest_if(useful)?;
                        Some(useful_pace(from, useful))
                    })();
                    if !costing.budget.spend(evaluations.get()) {
                        return None;
                    }
                    checked?
                }
                None => {
                    if !stager.may_hold_stages(f64::INFINITY) {
                        return None;
                    }
                    f64::INFINITY
                }
            };
            stager.partition(cap)?
        }
        Some(ends) => {
            let mut start = 0;
            let mut stages = Vec::with_capacity(ends.len());
            for (k, &end) in ends.iter().enumerate() {
                if !stager.cuttable.get(end).copied().unwrap_or(false) {
                    return None;
                }
                stages.push((start, end, stager.cost(k, start, end)?));
                start = end;
            }
            stages
        }
    };
    let micro_batches = stager.micro_batches;
    let steps = costing.steps;
    let slots = slots(micro_batches, cuts.len());
    let times: Vec<StageTimes> = cuts.iter().map(|(.., cost)| cost.times).collect();
    let stages: Vec<PipelineStage> = cuts
        .into_iter()
        .enumerate()
        .map(|(k, (i, j, cost))| PipelineStage {
            side: usize::from(k >= shape.stages[0] as usize),
            ops: [i, j],
            recompute: cost.recompute,
            seconds: cost.times.seconds,
            tensor_comm: cost.tensor,
            forward: cost.forward,
            memory_bytes: cost.memory.total,
            memory: cost.memory,
        })
        .collect();
    let (paced_s, pacing) = step_seconds(slots, &times)?;
    let step_time_s = paced_s + fixed;
    let slowest = times.get(pacing)?;
    let (bottleneck, data_comm, optimizer) = (slowest.seconds, slowest.reduce, slowest.optimizer);
    Some(PipelinePlan {
        shape,
        stages,
        step_time_s,
        micro_batches,
        bottleneck_s: bottleneck,
        data_comm_s: data_comm,
        optimizer_s: optimizer,
        fixed_s: fixed,
        train_time_s: steps * step_time_s,
        wan_bytes_per_step: stager.wan_bytes_per_step,
    })
}

/// The slowest pace a partition may have and still be of use, from `least` (a pace that is):
/// the least pace `useful` refuses, found by doubling then bisection (`useful` holds, then does
/// not, as the pace grows), a billionth above it so that rounding in the step time cannot refuse
/// a partition the caller would keep. `+∞` when every pace is.
fn useful_pace(least: f64, useful: impl Fn(f64) -> bool) -> f64 {
    let mut low = least.max(0.0);
    let mut high = low.max(f64::MIN_POSITIVE) * 2.0;
    let mut doublings = 0;
    while useful(high) {
        if doublings == 64 || !high.is_finite() {
            return f64::INFINITY;
        }
        low = high;
        high *= 2.0;
        doublings += 1;
    }
    for _ in 0..64 {
        let mid = 0.5 * (low + high);
        if mid <= low || mid >= high {
            break;
        }
        if useful(mid) {
            low = mid;
        } else {
            high = mid;
        }
    }
    high * (1.0 + 1e-9)
}

/// Seconds of the send across the group boundary per micro-batch (the activations forward and
/// their gradients back) of `shape` with `micro_batches` per step, and the WAN bytes per step
/// it moves (0 within a site).
pub(super) fn boundary(
    spec: &PipelineSpec<'_>,
    shape: &PipelineShape,
    micro_batches: f64,
) -> (f64, f64) {
    let activation = f64::from(shape.micro_batch)
        * f64::from(spec.model.seq_len)
        * f64::from(spec.model.hidden)
        * spec.setup.precision.bytes();
    // Across the group boundary every data-parallel pipeline sends at once.
    match spec.wan {
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
    }
}

/// The stager of one configuration: its micro-batches, the send across the group boundary and
/// what a stage on each group costs per parameter.
pub(super) fn stager<'s, 'a>(
    spec: &PipelineSpec<'_>,
    costing: &Costing<'s, 'a>,
    shape: PipelineShape,
) -> Stager<'s, 'a> {
    let Costing {
        sides,
        chain,
        budget,
        ..
    } = *costing;
    let setup = spec.setup;
    let micro_batches = f64::from(setup.global_batch)
        / (f64::from(shape.data.max(1)) * f64::from(shape.micro_batch.max(1)));
    let (boundary_s, wan_bytes_per_step) = boundary(spec, &shape, micro_batches);
    let count = param_count(spec.model);
    Stager {
        per_side: [
            PerSide::new(sides[0], 0, shape, spec, &count, chain),
            PerSide::new(sides[1], 1, shape, spec, &count, chain),
        ],
        slots: slots(
            micro_batches,
            (shape.stages[0] as usize) + (shape.stages[1] as usize),
        ),
        sides,
        params: &chain.params,
        cuttable: &chain.cuttable,
        cuts: &chain.cuts,
        blocks: &chain.blocks,
        head_op: chain.head_op,
        shape,
        micro_batches,
        boundary_s,
        wan_bytes_per_step,
        budget,
    }
}
