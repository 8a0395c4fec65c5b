//! The search space in its fixed order: every tensor × context × pipeline × virtual-stage × data
//! × expert × micro-batch shape of a job on one device type, each either handed on to be costed
//! or rejected with the reason its region cannot work.
//!
//! Each layout field is one level of the walk, outermost first. A level enumerates the field's
//! candidate values (auto fields only values that can work, pinned fields their one value),
//! probes each one against the fields chosen so far, and either reports the rejection or goes one
//! level deeper. The walk tells its [`Visitor`] when the tensor degree, the context degree and the
//! placement change, so what depends only on those is worked out once per value.

use super::{Rejection, SearchSpec};
use crate::workload::Pins;
use crate::workload::layout::rules;
use crate::workload::{Layout, ModelDims, StageSplit};
use loam_ir::plan::{NodeShape, sequence_parallel_runs, tensor_overlap_runs};
use loam_ir::types::{Arch, Recompute, SplitRule};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// Splits kept per thread before the memo of [`split`] starts again (counted: a 4,096-layer
/// model's searches meet about a thousand; each entry is under 200 bytes).
const SPLITS_KEPT: usize = 16_384;
use std::ops::ControlFlow;

/// What decides which layouts exist for a job on one device type: the model, the batch, the
/// spec's pins, the node size (tensor parallelism stays inside a node) and the devices a layout
/// may use. The search and the checker's fit both walk the space these bound, so they agree on
/// which layouts exist.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds<'a> {
    /// The model.
    pub(crate) model: &'a ModelDims,
    /// Sequences per step.
    pub(crate) global_batch: u32,
    /// The layout fields the spec fixes.
    pub(crate) pins: Pins,
    /// Devices per node (at least 1).
    pub(crate) devices_per_node: u32,
    /// Most devices a layout may use (at least 1).
    pub(crate) max_devices: u64,
    /// The node group's nodes, in a search on one: a layout whose devices cannot run there as
    /// equal nodes, each tensor group inside one (the rule `loam emit` checks, [`NodeShape`]),
    /// is rejected. `None` leaves node shapes out (the checker's pre-check over several groups,
    /// whose memory no node shape changes).
    pub(crate) nodes: Option<u64>,
}

impl<'a> Bounds<'a> {
    /// The bounds of a search: `spec`'s device cap, further bounded by its cluster.
    pub(crate) fn of_search(spec: &SearchSpec<'a>) -> Bounds<'a> {
        Bounds {
            model: spec.model,
            global_batch: spec.setup.global_batch,
            pins: spec.pins,
            devices_per_node: spec.cluster.devices_per_node.max(1),
            max_devices: spec.max_devices.min(spec.cluster.devices()).max(1),
            nodes: Some(spec.cluster.nodes.into()),
        }
    }
}

/// What the walk reports, in the order it visits the space.
pub(crate) trait Visitor {
    /// `layout`, with the fields the walk had chosen when it probed it, cannot work.
    fn reject(&mut self, reason: Rejection, layout: Layout);

    /// A new tensor degree: `tensor` has it and the sequence parallelism its shapes will have.
    fn enter_tensor(&mut self, tensor: &Layout);

    /// A new context degree (under the current tensor degree).
    fn enter_tensor_context(&mut self);

    /// A new placement: `placement` has every field but the micro-batch, ZeRO and recomputation.
    fn enter_placement(&mut self, placement: &Layout);

    /// Whether no shape of `placement` (every field but the micro-batch, ZeRO and
    /// recomputation) can be kept, whatever it costs: the walk then skips its shapes without
    /// entering it.
    fn placement_cannot_rank(&mut self, _placement: &Layout) -> bool {
        false
    }

    /// A shape that passed every probe: every field but ZeRO and recomputation. Breaking ends the
    /// walk.
    fn shape(&mut self, shape: &Layout, devices: u64) -> ControlFlow<()>;

    /// Whether every larger micro-batch of the last shape's placement is known not to fit in
    /// memory: the walk then skips them.
    fn larger_micro_batches_overflow(&self) -> bool {
        false
    }
}

/// The values each auto layout field takes, worked out once per search.
pub(crate) struct Axes {
    tensors: Vec<u32>,
    contexts: Vec<u32>,
    pipelines: Vec<u32>,
    /// Chunk counts `p · v` that split the blocks evenly under one of the two rules: the
    /// divisors of `layers` and of `layers + 2`.
    even_chunks: Vec<u64>,
    /// The divisors of the global batch, ascending: the micro-batches the walk may try.
    pub(crate) batch_divisors: Vec<u32>,
    expert_divisors: Vec<u32>,
    /// ZeRO stages, tried innermost.
    pub(crate) zeros: Vec<u8>,
    /// Recomputation modes, least first, tried innermost.
    pub(crate) recomputes: Vec<Recompute>,
    /// Which blocks full recomputation replays.
    pub(crate) recompute_layers: RecomputeLayers,
}

/// The blocks full recomputation replays, as the search tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecomputeLayers {
    /// Every block (recomputation pinned `full`).
    Every,
    /// The fewest blocks per chunk that fit, before every block (recomputation on auto): the
    /// search keeps as many activations as the device holds.
    Fewest,
    /// The spec's count per chunk.
    Pinned(u32),
}

impl RecomputeLayers {
    /// Of the recomputations the search tries for `mode`, the one needing the least memory of
    /// `memory`'s layout: the pinned count of blocks per chunk, else `mode` on every block
    /// (replaying fewer blocks never needs less).
    pub(crate) fn least_memory(
        self,
        mode: Recompute,
        memory: &crate::workload::LayoutMemory,
    ) -> crate::workload::Recomputation {
        match (mode, self) {
            (Recompute::Full, RecomputeLayers::Pinned(k)) => memory.partial(k),
            _ => mode.into(),
        }
    }
}

impl Axes {
    /// The values of the fields within `bounds`: the pinned one, else those that can work.
    pub(crate) fn new(bounds: &Bounds<'_>) -> Axes {
        let model = bounds.model;
        let pins = bounds.pins;
        let dpn = bounds.devices_per_node.max(1);
        let layers = u64::from(model.layers);
        let mut even_chunks = divisors(layers);
        even_chunks.extend(divisors(layers + 2));
        even_chunks.sort_unstable();
        even_chunks.dedup();
        // Auto pipeline degrees: the divisors of the layers, and the powers of two published runs
        // use whatever the layers (Llama 3.1 405B: 126 blocks on 16 ranks; DeepSeek-V3: 61 on
        // 16) while they leave at least three blocks per rank (deeper uneven pipelines only
        // lengthen the search: their bubble grows faster than their work shrinks).
        let mut pipelines: Vec<u32> = to_u32(
            divisors(layers)
                .into_iter()
                .chain(
                    std::iter::successors(Some(1u64), |x| x.checked_mul(2))
                        .take_while(|x| x.saturating_mul(3) <= layers),
                )
                .filter(|p| *p <= layers)
                .collect(),
        );
        pipelines.sort_unstable();
        pipelines.dedup();
        Axes {
            tensors: match pins.tensor {
                Some(t) => vec![t],
                // Divisors of the heads within a node that the tensor rule allows.
                None => divisors_u32(model.heads)
                    .into_iter()
                    .filter(|&t| {
                        t <= dpn
                            && rules::tensor(model.heads.into(), model.kv_heads.into(), t.into())
                                .is_ok()
                    })
                    .collect(),
            },
            contexts: match pins.context {
                Some(c) => vec![c],
                // Powers of two that leave each rank at least 1024 tokens in two balanced chunks;
                // one rank (no context parallelism) whatever the sequence, so a job of short
                // sequences has layouts too.
                None => (0..8)
                    .map(|i| 1u32 << i)
                    .filter(|&c| c == 1 || model.seq_len / c >= 1024)
                    .collect(),
            },
            pipelines: match pins.pipeline {
                Some(p) => vec![p],
                None => pipelines,
            },
            even_chunks,
            batch_divisors: divisors_u32(bounds.global_batch),
            expert_divisors: match model.arch {
                Arch::Dense => vec![1],
                Arch::Moe => divisors_u32(model.experts),
            },
            zeros: match pins.zero {
                Some(z) => vec![z],
                None => vec![0, 1, 2, 3],
            },
            recomputes: match pins.recompute {
                Some(r) => vec![r],
                None => vec![Recompute::None, Recompute::Selective, Recompute::Full],
            },
            recompute_layers: match (pins.recompute_layers, pins.recompute) {
                (Some(k), _) => RecomputeLayers::Pinned(k),
                (None, Some(_)) => RecomputeLayers::Every,
                (None, None) => RecomputeLayers::Fewest,
            },
        }
    }
}

/// The split of `layers` blocks over `p × v` chunks under `rule` ([`StageSplit::new`]), worked
/// out once per thread: a split depends on nothing else, and the walk meets each one again under
/// every tensor and context degree, and in every search of the same model (the heterogeneous
/// data split walks each group on 15 shares of the batch). Working one out is `O(p·v)`: a
/// 1,000-block model's splits were most of a walk.
fn split(layers: u32, p: u32, v: u32, rule: SplitRule) -> StageSplit {
    thread_local! {
        static SPLITS: RefCell<BTreeMap<(u32, u32, u32, SplitRule), StageSplit>> =
            const { RefCell::new(BTreeMap::new()) };
    }
    SPLITS.with(|splits| {
        let mut splits = splits.borrow_mut();
        if splits.len() >= SPLITS_KEPT {
            splits.clear();
        }
        *splits
            .entry((layers, p, v, rule))
            .or_insert_with(|| StageSplit::new(layers, p, v, rule))
    })
}

/// Positive divisors of `n` in increasing order, by trial division up to `√n`: the one
/// divisor function of the planner (a batch of 720,720 has 240 of them).
fn divisors(n: u64) -> Vec<u64> {
    let mut low = Vec::new();
    let mut high = Vec::new();
    let mut i = 1;
    while i * i <= n {
        if n.is_multiple_of(i) {
            low.push(i);
            if i != n / i {
                high.push(n / i);
            }
        }
        i += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

/// [`divisors`] of a `u32`.
pub(crate) fn divisors_u32(n: u32) -> Vec<u32> {
    to_u32(divisors(n.into()))
}

fn to_u32(values: Vec<u64>) -> Vec<u32> {
    values
        .into_iter()
        .filter_map(|v| u32::try_from(v).ok())
        .collect()
}

/// Whether the walk tries micro-batch `b` (a pinned one, or one of the batch's divisors) on a
/// per-rank batch of `per_rank` sequences: a pinned one always, else one that divides it.
#[inline]
pub(crate) fn tries_micro_batch(pinned: bool, per_rank: u64, b: u32) -> bool {
    pinned || per_rank.is_multiple_of(b.into())
}

/// The values a layout field takes: the pinned one, else `auto` (which the caller may filter
/// further). Slices of precomputed lists, so the walk allocates nothing.
fn values<'a>(pin: Option<&'a u32>, auto: &'a [u32]) -> &'a [u32] {
    pin.map_or(auto, std::slice::from_ref)
}

/// The walk over one search's space.
pub(crate) struct Space<'a> {
    model: &'a ModelDims,
    pins: Pins,
    axes: &'a Axes,
    devices_per_node: u32,
    max_devices: u64,
    batch: u64,
    layers: u64,
    /// The node group's nodes, in a search on one ([`Bounds::nodes`]).
    nodes: Option<u64>,
}

impl<'a> Space<'a> {
    /// The space within `bounds`, whose field values are `axes` ([`Axes::new`] of the same
    /// bounds).
    pub(crate) fn new(bounds: &Bounds<'a>, axes: &'a Axes) -> Space<'a> {
        Space {
            model: bounds.model,
            pins: bounds.pins,
            axes,
            devices_per_node: bounds.devices_per_node.max(1),
            max_devices: bounds.max_devices.max(1),
            batch: u64::from(bounds.global_batch),
            layers: u64::from(bounds.model.layers),
            nodes: bounds.nodes,
        }
    }

    /// Most devices a layout may use.
    pub(super) fn max_devices(&self) -> u64 {
        self.max_devices
    }

    /// Visits the whole space in order; stops when the visitor breaks.
    pub(crate) fn walk(&self, visitor: &mut impl Visitor) -> ControlFlow<()> {
        for &t in &self.axes.tensors {
            let probe = Layout {
                tensor: t,
                ..Layout::single()
            };
            match self.probe_tensor(t) {
                Err(reason) => visitor.reject(reason, probe),
                Ok(()) => {
                    visitor.enter_tensor(&Layout {
                        sequence_parallel: self.sequence_parallel(t),
                        tensor_overlap: self.tensor_overlap(t),
                        ..probe
                    });
                    self.contexts(probe, visitor)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn contexts(&self, probe: Layout, visitor: &mut impl Visitor) -> ControlFlow<()> {
        for &c in &self.axes.contexts {
            let probe = Layout {
                context: c,
                ..probe
            };
            match self.probe_context(c) {
                Err(reason) => visitor.reject(reason, probe),
                Ok(()) => {
                    visitor.enter_tensor_context();
                    self.pipelines(probe, visitor)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pipelines(&self, probe: Layout, visitor: &mut impl Visitor) -> ControlFlow<()> {
        for &p in &self.axes.pipelines {
            let probe = Layout {
                pipeline: p,
                ..probe
            };
            match self.probe_pipeline(p) {
                Err(reason) => visitor.reject(reason, probe),
                Ok(()) => self.virtual_stages(probe, visitor)?,
            }
        }
        ControlFlow::Continue(())
    }

    fn virtual_stages(&self, probe: Layout, visitor: &mut impl Visitor) -> ControlFlow<()> {
        let p = probe.pipeline;
        // Auto: 1, and the values whose chunks come out even under one of the two rules.
        let pinned = self.pins.virtual_stages;
        // At most one block per chunk; counting the embedding and the loss as layers allows two
        // chunks more (the first may hold the embedding alone and the last the head alone).
        let most = ((self.layers + 2) / u64::from(p.max(1))).max(1);
        let autos = std::iter::once(1u64).chain(
            self.axes
                .even_chunks
                .iter()
                .filter(|&&n| n > u64::from(p) && n.is_multiple_of(u64::from(p)))
                .map(|n| n / u64::from(p))
                .filter(|&v| v <= most),
        );
        let mut values: Vec<u32> = match pinned {
            Some(v) => vec![v],
            None if p == 1 => vec![1],
            None => autos.filter_map(|v| u32::try_from(v).ok()).collect(),
        };
        values.dedup();
        for v in values {
            let probe = Layout {
                virtual_stages: v,
                ..probe
            };
            self.splits(probe, visitor)?;
        }
        ControlFlow::Continue(())
    }

    /// The splits of the blocks over the chunks: the pinned one, else the balanced one and, when
    /// the chunks do not divide the blocks, the one counting the embedding and the loss as layers
    /// (skipped when it gives the ranks the same blocks, which would cost the same). Trying it on
    /// even splits too made the 3-type benchmark three times slower; a spec can still pin it.
    fn splits(&self, probe: Layout, visitor: &mut impl Visitor) -> ControlFlow<()> {
        let (p, v) = (probe.pipeline, probe.virtual_stages);
        if let Some(split) = self.pins.stages {
            return self.datas(Layout { split, ..probe }, visitor);
        }
        let rules: &[SplitRule] = match &self.pins.pipeline_split {
            Some(rule) => std::slice::from_ref(rule),
            None => &[SplitRule::Balanced, SplitRule::EmbeddingAndLoss],
        };
        let mut balanced: Option<StageSplit> = None;
        let even = self
            .layers
            .is_multiple_of(u64::from(p).saturating_mul(u64::from(v.max(1))));
        let mut failed = None;
        let mut worked = false;
        for &rule in rules {
            if rule == SplitRule::EmbeddingAndLoss && even && self.pins.pipeline_split.is_none() {
                continue;
            }
            if let Err(problem) = rules::pipeline_split(self.layers, p.into(), v.into(), rule, None)
            {
                // Auto splits that cannot work are not layouts of their own: the other rule may.
                failed = failed.or(Some(problem));
                continue;
            }
            worked = true;
            let split = split(self.model.layers, p, v, rule);
            if let Some(b) = balanced
                && b.with_rule(rule) == split
            {
                continue;
            }
            if rule == SplitRule::Balanced {
                balanced = Some(split);
            }
            self.datas(Layout { split, ..probe }, visitor)?;
        }
        if let (false, Some(problem)) = (worked, failed) {
            visitor.reject(problem_rejection(problem, self.layers), probe);
        }
        ControlFlow::Continue(())
    }

    fn datas(&self, probe: Layout, visitor: &mut impl Visitor) -> ControlFlow<()> {
        // Devices of one replica, worked out once for every data degree tried.
        let replica = probe.replica_devices();
        // Auto: the divisors of the batch that fit in the devices.
        for &d in values(self.pins.data.as_ref(), &self.axes.batch_divisors) {
            let devices = replica * u64::from(d);
            if self.pins.data.is_none() && devices > self.max_devices {
                continue;
            }
            let probe = Layout { data: d, ..probe };
            match self.probe_data(devices, d) {
                Err(reason) => visitor.reject(reason, probe),
                Ok(()) => self.experts(probe, visitor)?,
            }
        }
        ControlFlow::Continue(())
    }

    fn experts(&self, probe: Layout, visitor: &mut impl Visitor) -> ControlFlow<()> {
        // Once the data degree is known, the layout's devices run as equal nodes.
        if let Err(reason) = self.probe_nodes(&probe) {
            visitor.reject(reason, probe);
            return ControlFlow::Continue(());
        }
        let grid = u64::from(probe.tensor) * u64::from(probe.context) * u64::from(probe.data);
        // Auto: divisors of the experts that divide the tensor × context × data grid (1 for
        // dense models).
        for &e in values(self.pins.expert.as_ref(), &self.axes.expert_divisors) {
            if self.pins.expert.is_none() && !grid.is_multiple_of(u64::from(e)) {
                continue;
            }
            let probe = Layout { expert: e, ..probe };
            match self.probe_expert(grid, e) {
                Err(reason) => visitor.reject(reason, probe),
                Ok(()) => {
                    if visitor.placement_cannot_rank(&probe) {
                        continue;
                    }
                    visitor.enter_placement(&probe);
                    self.micro_batches(probe, visitor)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn micro_batches(&self, probe: Layout, visitor: &mut impl Visitor) -> ControlFlow<()> {
        let devices = probe.devices();
        // Auto: the divisors of the per-rank batch.
        let per_rank = self.batch / u64::from(probe.data);
        // One shape rewritten per micro-batch: copying whole layouts is a noticeable share of
        // the innermost loop.
        let mut shape = Layout {
            sequence_parallel: self.sequence_parallel(probe.tensor),
            tensor_overlap: self.tensor_overlap(probe.tensor),
            ..probe
        };
        for &b in values(self.pins.micro_batch.as_ref(), &self.axes.batch_divisors) {
            if !tries_micro_batch(self.pins.micro_batch.is_some(), per_rank, b) {
                continue;
            }
            shape.micro_batch = b;
            match self.probe_micro_batch(&shape) {
                // Rejections carry the layout as probed, before sequence parallelism.
                Err(reason) => visitor.reject(
                    reason,
                    Layout {
                        micro_batch: b,
                        ..probe
                    },
                ),
                Ok(()) => {
                    visitor.shape(&shape, devices)?;
                    if visitor.larger_micro_batches_overflow() {
                        break;
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// Sequence parallelism under tensor degree `t`: as pinned, on by default, never without
    /// tensor parallelism.
    fn sequence_parallel(&self, t: u32) -> bool {
        sequence_parallel_runs(self.pins.sequence_parallel, t.into())
    }

    /// Tensor-parallel overlap under tensor degree `t`: only as pinned, over sequence
    /// parallelism.
    fn tensor_overlap(&self, t: u32) -> bool {
        tensor_overlap_runs(self.pins.tensor_overlap, self.sequence_parallel(t))
    }

    /// The tensor degree splits the heads and the KV heads, inside one node.
    fn probe_tensor(&self, t: u32) -> Result<(), Rejection> {
        rules::tensor(
            self.model.heads.into(),
            self.model.kv_heads.into(),
            t.into(),
        )?;
        if t > self.devices_per_node {
            return Err(Rejection::TensorBeyondNode {
                tensor: t,
                devices_per_node: self.devices_per_node,
            });
        }
        Ok(())
    }

    /// Context parallelism cuts each sequence into two balanced chunks per rank.
    fn probe_context(&self, c: u32) -> Result<(), Rejection> {
        Ok(rules::context(self.model.seq_len.into(), c.into())?)
    }

    /// Every pipeline rank holds at least one block.
    fn probe_pipeline(&self, p: u32) -> Result<(), Rejection> {
        rules::pipeline_split(self.layers, p.into(), 1, SplitRule::Balanced, None)
            .map_err(|problem| problem_rejection(problem, self.layers))
    }

    /// The layout's `devices` are allowed, and the data degree splits the batch.
    fn probe_data(&self, devices: u64, d: u32) -> Result<(), Rejection> {
        if devices > self.max_devices {
            return Err(Rejection::TooManyDevices {
                need: devices,
                have: self.max_devices,
            });
        }
        Ok(rules::data(self.batch, d.into())?)
    }

    /// In a search on a node group, the layout's devices run there as equal nodes with each
    /// tensor group inside one ([`NodeShape::fits`]); a count that cannot is one that whole
    /// nodes would hold (devices a multiple of the node size).
    fn probe_nodes(&self, layout: &Layout) -> Result<(), Rejection> {
        let (devices, dpn) = (layout.devices(), u64::from(self.devices_per_node));
        match self.nodes {
            Some(nodes) if !NodeShape::fits(devices, dpn, layout.tensor.into(), nodes) => {
                Err(Rejection::Indivisible {
                    what: "devices % devices per node",
                    value: devices,
                    by: dpn,
                })
            }
            _ => Ok(()),
        }
    }

    /// The expert degree divides the tensor × context × data grid and the experts.
    fn probe_expert(&self, grid: u64, e: u32) -> Result<(), Rejection> {
        Ok(rules::expert(grid, self.model.experts.into(), e.into())?)
    }

    /// The micro-batch splits each data rank's batch, into a whole number of micro-batches per
    /// pipeline stage when stages are interleaved.
    fn probe_micro_batch(&self, probe: &Layout) -> Result<(), Rejection> {
        let (p, v, d, b) = (
            probe.pipeline,
            probe.virtual_stages,
            probe.data,
            probe.micro_batch,
        );
        rules::micro_batch(self.batch, d.into(), b.into())?;
        let m = self.batch / (u64::from(d) * u64::from(b));
        if rules::interleave(m, p.into(), v.into()).is_err() {
            return Err(Rejection::InterleaveNeedsMicroBatches {
                micro_batches: m,
                pipeline: p,
            });
        }
        Ok(())
    }
}

/// The rejection of a split that cannot work.
fn problem_rejection(problem: rules::SplitProblem, layers: u64) -> Rejection {
    match problem {
        rules::SplitProblem::TooManyChunks { chunks, layers, .. } => {
            Rejection::StagesWithoutBlocks { chunks, layers }
        }
        // Pinned splits are the checker's (L1015); the search gets only those that work.
        rules::SplitProblem::PinnedLength { expected, .. } => Rejection::StagesWithoutBlocks {
            chunks: expected,
            layers,
        },
        rules::SplitProblem::PinnedSum { expected, .. } => Rejection::StagesWithoutBlocks {
            chunks: expected,
            layers,
        },
        rules::SplitProblem::EmptyChunk { .. } => {
            Rejection::StagesWithoutBlocks { chunks: 0, layers }
        }
    }
}
