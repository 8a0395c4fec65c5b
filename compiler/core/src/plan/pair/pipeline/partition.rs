//! Costing one configuration of a heterogeneous pipeline: prefix sums of each group's op
//! costs, the cost of a stage (least recomputation that fits, gradient reduction, optimizer,
//! sends), and the dynamic programme that cuts the chain into stages.

use super::{PipelineGroup, PipelinePlan, PipelineShape, PipelineSpec, PipelineStage};
use crate::cost::ops::OpCost;
use crate::cost::{Collective, Group, LINK_EFFICIENCY, uplink_slowdown};
use crate::hardware::ClusterFigures;
use crate::types::Recompute;
use crate::workload::{
    Layout, MemoryBreakdown, OpKind, ParamCount, StageHolding, StageMemory, StageStates,
    StateBytes, layer_bytes_per_token, param_count,
};

/// Prefix sums of one group's op costs under one recomputation mode.
pub(super) struct Prefix {
    pub(super) seconds: Vec<f64>,
    pub(super) backward: Vec<f64>,
    pub(super) tensor: Vec<f64>,
    pub(super) unhostable: Vec<u32>,
}

impl Prefix {
    pub(super) fn new(costs: &[OpCost]) -> Prefix {
        let mut p = Prefix {
            seconds: vec![0.0],
            backward: vec![0.0],
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
    pub(super) modes: [Prefix; 3],
    pub(super) usable: f64,
}

/// What a stage on one group costs per parameter it holds, in one configuration.
pub(super) struct PerSide {
    /// Gradient all-reduce over the data-parallel ranks (stride `tensor`), seconds per parameter.
    reduce_per_param: f64,
    /// Optimizer step, seconds per parameter.
    optimizer_per_param: f64,
    /// The group's [`crate::hardware::FittedConstants::overlap_contention`].
    contention: f64,
    /// Both directions of one micro-batch's activations to the next stage in the group.
    inside_send: f64,
    /// The memory of a stage on this group ([`crate::workload::stage_memory`], worked out once
    /// per configuration).
    memory: StageMemory,
    /// The model states of a stage under the configuration's ZeRO stage, by
    /// [`PerSide::holding_index`]: the partition asks for the same few holdings thousands of
    /// times.
    states: Vec<StateBytes>,
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
            sequence_parallel: side.tensor > 1,
            ..Layout::single()
        };
        let per_token = layer_bytes_per_token(spec.model, setup.precision, &layout);
        let states = StageStates::new(spec.model, count, setup, &layout);
        let memory = StageMemory::new(states, spec.model, setup, &layout, per_token);
        let zero = usize::from(shape.zero.min(3));
        let states = (0..=spec.model.layers)
            .flat_map(|blocks| {
                [(false, false), (false, true), (true, false), (true, true)].map(
                    |(embedding, head)| StageHolding {
                        blocks: f64::from(blocks),
                        embedding,
                        head,
                        in_flight: 1.0,
                    },
                )
            })
            .map(|holding| {
                memory
                    .state_bytes(&holding)
                    .get(zero)
                    .copied()
                    .unwrap_or([0.0; 3])
            })
            .collect();
        let per_device =
            c.node_network_bandwidth * LINK_EFFICIENCY / f64::from(c.devices_per_node.max(1));
        // Ring all-reduce; inside the node when the data-parallel ranks all fit in it.
        let reduce_per_param = if shape.data > 1 {
            let ranks_per_node = (f64::from(c.devices_per_node) / t).floor().clamp(1.0, d);
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
        PerSide {
            reduce_per_param,
            contention: c.fitted.overlap_contention,
            optimizer_per_param: (crate::cost::OPTIMIZER_STATE_TRAFFIC + 2.0 * elt)
                / t
                / shards
                / c.device.memory_bandwidth.max(1.0),
            inside_send: 2.0 * (activation / per_device.max(1.0) + c.network_latency_s),
            memory,
            states,
            layout,
        }
    }

    /// Where [`PerSide::states`] keeps the model states of a stage of `blocks` blocks, with or
    /// without the embedding and the head.
    fn holding_index(blocks: u32, embedding: bool, head: bool) -> usize {
        blocks as usize * 4 + usize::from(embedding) * 2 + usize::from(head)
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
    /// Blocks among the first `i` ops of the chain, by `i`.
    blocks: Vec<u32>,
    /// The index of the LM head in the chain.
    head_op: usize,
    shape: PipelineShape,
    micro_batches: f64,
    /// Seconds of the send across the group boundary per micro-batch (both directions).
    boundary_s: f64,
}

/// The cost of one stage.
#[derive(Debug, Clone, Copy)]
pub(super) struct StageCost {
    /// What the partition minimises the largest of: the stage's share of the step,
    /// `seconds + (reduce + optimizer) / (m + p − 1)`.
    paced: f64,
    /// Seconds per micro-batch.
    seconds: f64,
    /// Of those, tensor-parallel collectives.
    tensor: f64,
    recompute: Recompute,
    memory: MemoryBreakdown,
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
        let blocks = self.blocks.get(j)? - self.blocks.get(i)?;
        let holding = StageHolding {
            blocks: f64::from(blocks),
            embedding: i == 0,
            head: (i..j).contains(&self.head_op),
            in_flight: per.layout.in_flight(k as u32, self.micro_batches),
        };
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
        let index = PerSide::holding_index(blocks, holding.embedding, holding.head);
        let states = match per.states.get(index) {
            Some(states) => *states,
            None => per
                .memory
                .state_bytes(&holding)
                .get(usize::from(self.shape.zero.min(3)))
                .copied()
                .unwrap_or([0.0; 3]),
        };
        for (mode, prefix) in MODES.iter().zip(&side.modes) {
            let memory = per
                .memory
                .rank_with(states, &holding, self.shape.zero, *mode);
            if memory.total <= side.usable {
                let seconds = span(&prefix.seconds, i, j) + send;
                let exposed = crate::cost::exposed_reduction(
                    reduce,
                    span(&prefix.backward, i, j),
                    ops,
                    per.contention,
                );
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

/// Partitions and costs one configuration; `cuts` forces the stage boundaries (the exhaustive
/// search of the tests), otherwise the dynamic programme chooses them.
pub(super) fn cost_shape(
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
    let count = param_count(spec.model);
    let mut blocks = Vec::with_capacity(params.len());
    let mut head_op = usize::MAX;
    let mut seen = 0u32;
    blocks.push(0);
    for (i, op) in spec.graph.ops().enumerate() {
        seen += u32::from(op.kind == OpKind::Attention);
        if op.kind == OpKind::LmHead {
            head_op = i;
        }
        blocks.push(seen);
    }
    let stager = Stager {
        per_side: [
            PerSide::new(sides[0], 0, shape, spec, &count),
            PerSide::new(sides[1], 1, shape, spec, &count),
        ],
        slots: micro_batches + f64::from(shape.stages[0] + shape.stages[1]) - 1.0,
        sides,
        params,
        cuttable,
        blocks,
        head_op,
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
            memory_bytes: cost.memory.total,
            memory: cost.memory,
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
