//! The stages of the cost model as the layout search walks them: what it has worked out for
//! the layouts around the current one, a layout's step through them, and the floor under every
//! step of a shape that lets a search skip the shapes that cannot rank.

use super::{Costing, Kernel, Pacing, Placement, Replay, Shape, exposed};
use crate::cost::StepEstimate;
use crate::workload::{HeldParams, Layout, MemoryBreakdown};
use loam_ir::types::Recompute;
use std::sync::Mutex;

/// The layout fields a [`Kernel`] reads ([`Costing::kernel`]): tensor, context, sequence
/// parallelism, expert degree, micro-batch.
type KernelKey = (u32, u32, bool, u32, u32);

/// Kernels by [`KernelKey`].
#[allow(clippy::disallowed_types)]
type KernelMap = std::collections::HashMap<KernelKey, Kernel, foldhash::fast::FixedState>;

/// One tensor and context degree's kernels by `(expert, micro_batch)`.
#[allow(clippy::disallowed_types)]
type DegreeKernels = std::collections::HashMap<(u32, u32), Kernel, foldhash::fast::FixedState>;

/// Kernels a [`KernelShare`] holds, and a walk records for it (counted: the data split's
/// walks of the DeepSeek-V3 example work out about 50,000 in all, a few thousand per node
/// group; each is under 200 bytes).
const KERNELS_KEPT: usize = 16_384;

fn kernel_key(layout: &Layout) -> KernelKey {
    (
        layout.tensor,
        layout.context,
        layout.sequence_parallel,
        layout.expert,
        layout.micro_batch,
    )
}

/// The kernels a walk looks up: its current tensor and context degree's, by a small key (a
/// MoE job's batch with many divisors gives hundreds, looked up once per shape), and those
/// other walks left in a [`KernelShare`], read on a miss. Hash maps with a fixed seed, only
/// looked up, and iterated only to be added to a share (where the order decides nothing: each
/// key's kernel is the same whoever adds it), so no order reaches an output: a tree's nodes
/// took a third of the floor's time on a MoE job, and a sorted list's inserts (moving the
/// kernels after them) more than that.
#[derive(Debug, Default)]
struct Kernels {
    degree: DegreeKernels,
    /// What a share held when the walk started.
    known: KernelMap,
    /// Worked out by this walk and not known, when it leaves them in a share.
    fresh: Vec<(KernelKey, Kernel)>,
    /// The inputs of the share's kernels ([`Costing::kernel_inputs`]), written out once when
    /// the walk starts; `None` when the walk shares nothing, and records nothing.
    shared: Option<String>,
}

impl Kernels {
    /// The kernel of `layout`, of the current tensor and context degree, worked out by
    /// `costing` when no walk has.
    #[inline]
    fn get(&mut self, costing: &Costing<'_>, layout: &Layout) -> &Kernel {
        let Kernels {
            degree,
            known,
            fresh,
            shared,
        } = self;
        degree
            .entry((layout.expert, layout.micro_batch))
            .or_insert_with(|| {
                let key = kernel_key(layout);
                if let Some(kernel) = known.get(&key) {
                    return *kernel;
                }
                let kernel = costing.kernel(layout);
                if shared.is_some() && fresh.len() < KERNELS_KEPT {
                    fresh.push((key, kernel));
                }
                kernel
            })
    }
}

/// The kernels of walks that share a model, a precision and a node group, such as the
/// heterogeneous data split's walks of one group on each share of the batch: a kernel reads
/// none of what differs between them (the batch, the tokens, the device cap), so each walk
/// starts with the kernels the walks before it worked out and leaves its own. A kernel is a
/// pure function of its inputs, so which walk worked it out changes nothing: the plans are the
/// same whichever walks ran first and on whichever thread.
#[derive(Debug, Default)]
pub(crate) struct KernelShare {
    /// The inputs the kernels were worked out from ([`Costing::kernel_inputs`]), and the
    /// kernels; a walk on other inputs neither reads nor adds to them.
    table: Mutex<Option<(String, KernelMap)>>,
}

impl KernelShare {
    /// The kernels worked out so far from `inputs`, or none.
    fn copy_for(&self, inputs: &str) -> KernelMap {
        let Ok(table) = self.table.lock() else {
            return KernelMap::default();
        };
        match &*table {
            Some((held, kernels)) if held == inputs => kernels.clone(),
            _ => KernelMap::default(),
        }
    }

    /// Adds `kernels`, worked out from `inputs`, while there is room: the first walk's inputs
    /// name the table.
    fn add(&self, inputs: String, kernels: &[(KernelKey, Kernel)]) {
        let Ok(mut table) = self.table.lock() else {
            return;
        };
        let (held, all) = table.get_or_insert_with(|| (inputs.clone(), KernelMap::default()));
        if *held != inputs {
            return;
        }
        for (key, kernel) in kernels {
            if all.len() >= KERNELS_KEPT {
                break;
            }
            all.entry(*key).or_insert(*kernel);
        }
    }
}

/// The stages the layout search has worked out for the layouts around the current one. The
/// search visits layouts with the tensor and context degree outermost, then the placement, then
/// the micro-batch, then ZeRO and recomputation; it says when each level changes, and every
/// stage is worked out once per value of the fields it reads.
#[derive(Debug, Default)]
pub(crate) struct StageCache {
    kernels: Kernels,
    placement: Option<Placement>,
    /// The current placement's [`Pacing`], for the floors of shapes asked about before (or
    /// without) its [`Placement`].
    pacing: Option<Pacing>,
    shape: Option<Shape>,
    /// By [`Recompute::index`].
    replays: [Option<Replay>; 3],
}

impl StageCache {
    /// A cache that starts with the kernels `share` holds for `costing`'s inputs.
    pub(crate) fn sharing(share: &KernelShare, costing: &Costing<'_>) -> StageCache {
        let inputs = costing.kernel_inputs();
        StageCache {
            kernels: Kernels {
                known: share.copy_for(&inputs),
                shared: Some(inputs),
                ..Kernels::default()
            },
            ..StageCache::default()
        }
    }

    /// Leaves the kernels this cache worked out in `share`, when it was made
    /// [`StageCache::sharing`] one.
    pub(crate) fn leave_kernels(self, share: &KernelShare) {
        let Kernels { fresh, shared, .. } = self.kernels;
        if let Some(inputs) = shared {
            share.add(inputs, &fresh);
        }
    }

    /// The tensor or context degree (or sequence parallelism) changed.
    pub(crate) fn new_tensor_context(&mut self) {
        self.kernels.degree.clear();
    }

    /// The pipeline, virtual stages, data or expert degree changed.
    pub(crate) fn new_placement(&mut self) {
        self.placement = None;
        self.pacing = None;
    }

    /// The micro-batch changed.
    pub(crate) fn new_micro_batch(&mut self) {
        self.shape = None;
        self.replays = [None; 3];
    }
}

impl Costing<'_> {
    /// [`Costing::step`] of `layout` into `out`, through the stages in `cache` (see
    /// [`StageCache`]); `params` are its [`Costing::params_per_device`].
    #[inline]
    pub(crate) fn step_cached(
        &self,
        cache: &mut StageCache,
        layout: &Layout,
        params: &HeldParams,
        memory: MemoryBreakdown,
        out: &mut StepEstimate,
    ) {
        self.cached_shape(cache, layout, params);
        let StageCache { shape, replays, .. } = cache;
        let Some(shape) = shape else {
            return;
        };
        let fresh;
        // Partial recomputation's count of blocks varies by shape: worked out each time.
        let slot = if layout.recompute_layers.is_some() {
            None
        } else {
            replays.get_mut(layout.recompute.index())
        };
        let replay = match slot {
            Some(cached) => cached.get_or_insert_with(|| self.replay(shape, layout)),
            None => {
                fresh = self.replay(shape, layout);
                &fresh
            }
        };
        self.step(shape, replay, layout, memory, out);
    }

    /// The [`Shape`] of `layout` in `cache`, worked out through the cache's kernels and
    /// placement when it is not there yet.
    #[inline]
    fn cached_shape(&self, cache: &mut StageCache, layout: &Layout, params: &HeldParams) {
        let StageCache {
            kernels,
            placement,
            shape,
            ..
        } = cache;
        if shape.is_some() {
            return;
        }
        let kernel = *kernels.get(self, layout);
        let placement = placement.get_or_insert_with(|| self.placement(layout, params));
        *shape = Some(self.shape(layout, &kernel, placement));
    }

    /// What [`Costing::kernel`] reads besides the layout, written out in full (floats to the
    /// last bit): walks whose inputs match can share their kernels ([`KernelShare`]).
    pub(crate) fn kernel_inputs(&self) -> String {
        format!(
            "{:?}",
            (
                self.model,
                self.setup.precision,
                self.setup.flash_attention,
                self.cluster
            )
        )
    }

    /// Seconds no step of `layout`'s shape takes less than, under any ZeRO stage and
    /// recomputation (through `cache`, as [`Costing::step_cached`]): the pace of its slowest
    /// rank counting, per block, only what every recomputation mode runs at least (forward and
    /// backward, the fewest tensor-parallel collectives, the context-parallel rings, the expert
    /// all-to-alls at their least exposed), plus the embedding and head, over the micro-batches
    /// and the bubble. A rank's pace ([`Costing::replay`]) adds to these only what is never
    /// negative (replayed forwards and their collectives, more exposure), and the step adds to
    /// the micro-batches and the bubble only what is never negative (pipeline sends,
    /// data-parallel communication, the optimizer).
    pub(crate) fn step_floor(&self, cache: &mut StageCache, layout: &Layout) -> f64 {
        // The shape's kernel and placement without the rest of its [`Shape`] (its
        // communication, and copies of both): most shapes the floor is asked about are skipped.
        let StageCache {
            kernels,
            placement,
            pacing,
            ..
        } = cache;
        let kernel = kernels.get(self, layout);
        // The whole placement (its collectives) waits for a shape that is costed.
        let pacing = match placement {
            Some(placement) => &placement.pacing,
            None => pacing.get_or_insert_with(|| self.pacing(layout)),
        };
        let m = self.micro_batches(layout);
        let block = self.block_floor(kernel, layout);
        let pace = pacing
            .ranks()
            .map(|&(blocks, embedding, head)| blocks * block + kernel.ends(embedding, head))
            .fold(0.0, f64::max);
        (m + pacing.bubble_share.max(0.0)) * pace
    }

    /// Seconds one block of `layout` runs per micro-batch whatever is replayed
    /// (`PerBlock::seconds` of the kept modes, none or selective), the per-block part of
    /// [`Costing::step_floor`]: its forward and backward, the tensor-parallel
    /// collectives of no recomputation (the fewest), the context-parallel rings, and the expert
    /// all-to-alls as exposed beside the longest block there is (a fully replayed one: a longer
    /// window hides more, while contention is below 1).
    #[inline]
    fn block_floor(&self, kernel: &Kernel, layout: &Layout) -> f64 {
        let contention = self.cluster.fitted.overlap_contention;
        let expert = if !self.overlap_schedule_runs(layout) {
            kernel.ep_layer
        } else if contention <= 1.0 {
            exposed(
                kernel.ep_layer,
                kernel.block.with_recompute(Recompute::Full).total(),
                contention,
            )
        } else {
            0.0
        };
        let context = if layout.context > 1 {
            kernel.cp_forward + kernel.cp_backward
        } else {
            0.0
        };
        // The fewest tensor-parallel collectives, as `Costing::per_block` exposes them (more
        // collectives never expose less).
        let (forward_tp, backward_tp) = kernel.tensor_passes(layout, Recompute::None, contention);
        kernel.block.with_recompute(Recompute::None).total()
            + forward_tp
            + backward_tp
            + context
            + expert
    }

    /// Seconds no step of `shape` spends on data-parallel communication and the optimizer
    /// under ZeRO stage `zero` and any recomputation ([`Costing::data_floor_of`]), through
    /// `cache`: its placement, worked out from `params` when no shape of it was costed yet,
    /// stays there for the shapes that are.
    pub(crate) fn data_floor(
        &self,
        cache: &mut StageCache,
        shape: &Layout,
        params: &HeldParams,
        zero: u8,
    ) -> f64 {
        let kernel = *cache.kernels.get(self, shape);
        let placement = cache
            .placement
            .get_or_insert_with(|| self.placement(shape, params));
        self.data_floor_of(&kernel, placement, shape, zero)
    }

    /// [`Costing::block_floor`] of `shape`, a shape of the current tensor and context degree,
    /// through `cache`'s kernels.
    #[inline]
    pub(crate) fn shape_block_floor(&self, cache: &mut StageCache, shape: &Layout) -> f64 {
        let kernel = cache.kernels.get(self, shape);
        self.block_floor(kernel, shape)
    }

    /// Seconds no step of any shape of `placement` (a layout but for its micro-batch) takes
    /// less than, when each of its shapes' [`Costing::block_floor`] `f(b)` is at least
    /// `per_micro_batch` and `f(b)/b` at least `per_sequence`: [`Costing::step_floor`] less the
    /// embedding and the head. A step runs `m = max(B/b, 1)` micro-batches of its per-rank
    /// batch `B`, plus the bubble's `(p − 1)/v` of them, each at least the slowest rank's
    /// blocks `L` times `f(b)`; so it takes at least `L · (B · per_sequence + (p − 1)/v ·
    /// per_micro_batch)`.
    pub(crate) fn placement_step_floor(
        &self,
        placement: &Layout,
        per_sequence: f64,
        per_micro_batch: f64,
    ) -> f64 {
        let pacing = self.pacing(placement);
        let blocks = pacing.ranks().map(|&(b, ..)| b).fold(0.0, f64::max);
        let per_rank = f64::from(self.setup.global_batch) / f64::from(placement.data.max(1));
        blocks * (per_rank * per_sequence + pacing.bubble_share.max(0.0) * per_micro_batch)
    }

    /// Seconds to train the setup's tokens at `step_s` seconds a step, as [`Costing::step`]
    /// and the search's totals work it out.
    pub(crate) fn train_seconds(&self, step_s: f64) -> f64 {
        self.setup.seconds_at(self.tokens_per_step / step_s)
    }
}
