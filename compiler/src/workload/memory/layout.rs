//! The memory of the layouts the search tries, worked out in two stages as the walk moves
//! through the space: what a placement decides (the ranks that can need the most, their model
//! states) once per placement, what the micro-batch adds once per shape, so that trying a ZeRO
//! stage and a recomputation mode costs a few additions per rank.

use super::{
    GemmInputs, MemoryBreakdown, Recomputation, StageHolding, StageMemory, StageStates, Stash,
    StateBytes,
};
use crate::workload::{Layout, ModelDims, RECORDED_RANKS, RankLoad, TrainSetup};
use loam_ir::types::Recompute;

/// Ranks a layout's memory is worked out for ([`crate::workload::StageSplit::ranks`]).
const N: usize = RECORDED_RANKS;

/// What of a layout's memory its placement alone decides (every field but the micro-batch, ZeRO
/// and recomputation): the [`StageStates`], the ranks that can need the most memory
/// ([`crate::workload::StageSplit::ranks`]) and their model-state bytes under each ZeRO stage.
/// The layout search works it out once per placement, not once per micro-batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlacementMemory {
    states: StageStates,
    /// The ranks (their micro-batches in flight not yet known: 1) and their model states by
    /// ZeRO stage.
    ranks: [(StageHolding, [StateBytes; 4]); N],
    count: usize,
    /// The ranks of `ranks` as the split records them, for [`RankLoad::in_flight`].
    loads: [RankLoad; N],
    /// `weights + gradients + optimizer` by rank and ZeRO stage.
    state_sums: [[f64; 4]; N],
    /// The largest of `state_sums` over the ranks, by ZeRO stage.
    floors: [f64; 4],
}

impl PlacementMemory {
    /// The memory of `layout`'s placement; `states` are its [`StageStates`].
    pub(crate) fn new(states: StageStates, model: &ModelDims, layout: &Layout) -> PlacementMemory {
        let (loads, count) = layout.stage_split(model.layers).ranks(layout.pipeline);
        // Loops rather than closures mapped over the arrays: the search runs this once per
        // placement, and whether the compiler inlined a mapped closure varied from build to
        // build (a tenth of a 1,000-layer plan's time when it did not).
        let mut ranks = [(StageHolding::default(), [[0.0; 3]; 4]); N];
        for (slot, r) in ranks.iter_mut().zip(&loads) {
            let holding = StageHolding {
                blocks: f64::from(r.blocks),
                embedding: r.embedding,
                head: r.head,
                in_flight: 1.0,
            };
            *slot = (holding, states.bytes_by_zero(&holding));
        }
        let mut state_sums = [[0.0; 4]; N];
        for (sums, (_, bytes)) in state_sums.iter_mut().zip(&ranks) {
            for (sum, [w, g, o]) in sums.iter_mut().zip(bytes) {
                *sum = w + g + o;
            }
        }
        let mut floors = [f64::NEG_INFINITY; 4];
        for sums in state_sums.iter().take(count) {
            for (floor, sum) in floors.iter_mut().zip(sums) {
                *floor = floor.max(*sum);
            }
        }
        PlacementMemory {
            states,
            ranks,
            count,
            loads,
            state_sums,
            floors,
        }
    }

    /// A lower bound on the memory of the layout's every shape, by ZeRO stage: the largest
    /// model states of its ranks. A rank's total is its states plus terms that are never
    /// negative, summed states first, so it is never below them.
    pub(crate) fn floors(&self) -> [f64; 4] {
        self.floors
    }
}

/// [`stage_memory`] of every rank of one layout that can need the most: the first, the last and
/// the heaviest middle ones of its split ([`crate::workload::StageSplit::ranks`]), with their
/// micro-batches in flight. What no ZeRO stage changes is worked out for every recomputation
/// mode when it is made, so that trying a ZeRO stage and a mode costs a few additions per rank.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LayoutMemory {
    /// Model states by rank and ZeRO stage ([`PlacementMemory::ranks`]).
    states: [[StateBytes; 4]; N],
    /// `weights + gradients + optimizer` of `states`, the first terms of a rank's total.
    state_sums: [[f64; 4]; N],
    /// `[activations, pipeline_stash, logits]` by rank and recomputation mode, with the GEMM
    /// inputs kept as ZeRO 0 keeps them (`unit.inputs(0)`); another way (an fp8 job whose
    /// framework follows the ZeRO stage) is worked out when asked for.
    activations: [[[f64; 3]; 3]; N],
    /// The pipeline rank of each entry, for the plan to name the one needing the most (none
    /// without a pipeline).
    rank_ids: [Option<u32>; N],
    /// Communication buffers by ZeRO stage.
    comm_buffers: [f64; 4],
    count: usize,
    /// What each rank holds, in-flight micro-batches included, and the shape's memory per
    /// block: partial recomputation, whose count of blocks the search chooses per shape, is
    /// worked out from them when asked for.
    holdings: [StageHolding; N],
    unit: StageMemory,
    /// The layout's model chunks per rank.
    chunks: u32,
}

impl LayoutMemory {
    /// The ranks of `layout` (every field but ZeRO and recomputation read).
    #[inline]
    pub(crate) fn new(
        states: StageStates,
        model: &ModelDims,
        setup: &TrainSetup,
        layout: &Layout,
        per_token: Stash,
    ) -> LayoutMemory {
        let placement = PlacementMemory::new(states, model, layout);
        LayoutMemory::of_placement(&placement, model, setup, layout, per_token)
    }

    /// [`LayoutMemory::new`] of a layout whose placement's memory is `placement`.
    #[inline]
    pub(crate) fn of_placement(
        placement: &PlacementMemory,
        model: &ModelDims,
        setup: &TrainSetup,
        layout: &Layout,
        per_token: Stash,
    ) -> LayoutMemory {
        let unit = StageMemory::new(placement.states, model, setup, layout, per_token);
        let m = layout.micro_batches(setup.global_batch);
        let mut activations = [[[0.0; 3]; 3]; N];
        let tabled = unit.inputs(0);
        let mut states = [[[0.0; 3]; 4]; N];
        // Loops, not mapped closures: see [`PlacementMemory::new`].
        let mut holdings = [StageHolding::default(); N];
        for (slot, (holding, _)) in holdings.iter_mut().zip(&placement.ranks) {
            *slot = *holding;
        }
        let count = placement.count.min(N);
        for k in 0..count {
            let (Some((holding, bytes)), Some(load), Some(out)) = (
                placement.ranks.get(k),
                placement.loads.get(k),
                activations.get_mut(k),
            ) else {
                continue;
            };
            let holding = StageHolding {
                in_flight: load.in_flight(layout.pipeline, m),
                ..*holding
            };
            for (slot, r) in
                out.iter_mut()
                    .zip([Recompute::None, Recompute::Selective, Recompute::Full])
            {
                *slot = unit.activations(&holding, tabled, r);
            }
            if let Some(slot) = holdings.get_mut(k) {
                *slot = holding;
            }
            if let Some(slot) = states.get_mut(k) {
                *slot = *bytes;
            }
        }
        LayoutMemory {
            states,
            state_sums: placement.state_sums,
            activations,
            comm_buffers: [0, 1, 2, 3].map(|z| unit.comm_buffers(z)),
            count,
            rank_ids: placement
                .loads
                .map(|r| (layout.pipeline > 1).then_some(r.rank)),
            holdings,
            unit,
            chunks: layout.virtual_stages.max(1),
        }
    }

    /// The breakdown of the rank needing the most memory under `zero` and `recompute` (the
    /// earliest of equals).
    #[inline]
    pub(crate) fn breakdown(
        &self,
        zero: u8,
        recompute: impl Into<Recomputation> + Copy,
    ) -> MemoryBreakdown {
        let (total, rank) = self.worst(zero, recompute);
        self.rank_breakdown(rank, zero, recompute, total)
    }

    /// Partial recomputation of the first `per_chunk` blocks of each of this layout's chunks.
    pub(crate) fn partial(&self, per_chunk: u32) -> Recomputation {
        Recomputation {
            mode: Recompute::Full,
            per_chunk: Some(per_chunk),
            chunks: self.chunks,
        }
    }

    /// The most blocks one chunk of a rank holds (rounded up): partial recomputation of that many
    /// per chunk is full recomputation.
    pub(crate) fn most_blocks_per_chunk(&self) -> u32 {
        let most = self
            .holdings
            .iter()
            .take(self.count)
            .map(|h| h.blocks)
            .fold(0.0, f64::max);
        // Blocks per rank are whole numbers below a u32's range (the layers are).
        (most / f64::from(self.chunks.max(1)))
            .ceil()
            .clamp(0.0, f64::from(u32::MAX)) as u32
    }

    /// Partial recomputation of the fewest blocks per chunk that fits this layout in `have` bytes
    /// under ZeRO `zero`; `None` when only every block (or nothing) fits, or no chunk holds two
    /// blocks. A rank of `B` blocks, `f` micro-batches in flight, replaying `r > 0` of them needs
    /// `T(r) = T(0) + w − r·(a − i)·max(f, 1)`: its total with none replayed, plus one block's
    /// working set `w`, less what each replayed block stops keeping (its stash `a` for its input
    /// `i`) in every micro-batch in flight. So each rank needs `r ≥ (T(0) + w − have) / ((a − i)·
    /// max(f, 1))`, `k = ⌈r / chunks⌉`, and the layout the largest `k` of its ranks; the one
    /// memory function then confirms it (one block more where rounding fell short).
    pub(crate) fn fewest_partial(&self, zero: u8, have: f64) -> Option<Recomputation> {
        let most = self.most_blocks_per_chunk();
        if most < 2 {
            return None;
        }
        let z = usize::from(zero.min(3));
        let comm = self.comm_buffers.get(z).copied().unwrap_or(0.0);
        let inputs = self.unit.inputs(zero);
        let [kept, _, input] = self.unit.per_block(inputs);
        let saved = kept - input;
        let chunks = f64::from(self.chunks.max(1));
        let mut fewest = 1.0_f64;
        for k in 0..self.count {
            let (Some(holding), Some(sums)) = (self.holdings.get(k), self.state_sums.get(k)) else {
                continue;
            };
            let [activations, stash, logits] =
                self.rank_activations(k, inputs, Recompute::None.into());
            let none = sums.get(z).copied().unwrap_or(0.0) + activations + stash + comm + logits;
            let over = none + self.unit.working_set(inputs) - have;
            if over <= 0.0 {
                continue;
            }
            if saved <= 0.0 || holding.blocks <= 0.0 {
                return None;
            }
            let replayed = over / (saved * holding.in_flight.max(1.0));
            if replayed > holding.blocks {
                return None;
            }
            fewest = fewest.max((replayed / chunks).ceil());
        }
        // Bounded above by `most`, a u32.
        let fewest = fewest.min(f64::from(most)) as u32;
        [fewest, fewest.saturating_add(1)]
            .into_iter()
            .filter(|&k| k < most)
            .map(|k| self.partial(k))
            .find(|&recompute| {
                self.worst_within(zero, recompute, have)
                    .is_some_and(|(total, _)| total <= have)
            })
    }

    /// `[activations, pipeline_stash, logits]` of rank `k` under `recompute`: from the table
    /// for a whole mode, worked out for partial recomputation.
    #[inline]
    fn rank_activations(&self, k: usize, inputs: GemmInputs, recompute: Recomputation) -> [f64; 3] {
        if recompute.is_partial() || inputs != self.unit.inputs(0) {
            return self
                .holdings
                .get(k)
                .map(|holding| self.unit.activations(holding, inputs, recompute))
                .unwrap_or([0.0; 3]);
        }
        self.activations
            .get(k)
            .and_then(|modes| modes.get(recompute.mode.index()))
            .copied()
            .unwrap_or([0.0; 3])
    }

    /// The total of the rank needing the most memory under `zero` and `recompute` (the earliest
    /// of equals), and which of the ranks it is: the same sum [`breakdown`] makes, in the same
    /// order.
    #[inline]
    pub(crate) fn worst(&self, zero: u8, recompute: impl Into<Recomputation>) -> (f64, usize) {
        // No total is above infinity: the scan never stops early.
        self.worst_within(zero, recompute.into(), f64::INFINITY)
            .unwrap_or((f64::INFINITY, usize::MAX))
    }

    /// [`LayoutMemory::worst`] unless a rank needs more than `have` bytes: `None` as soon as one
    /// does. A search that reports no rejected regions needs no total of a shape that overflows,
    /// and the first rank (the most micro-batches in flight) is most often the one that does.
    #[inline]
    pub(crate) fn worst_within(
        &self,
        zero: u8,
        recompute: Recomputation,
        have: f64,
    ) -> Option<(f64, usize)> {
        let z = usize::from(zero.min(3));
        let comm = self.comm_buffers.get(z).copied().unwrap_or(0.0);
        let inputs = self.unit.inputs(zero);
        let mut worst = (0.0, usize::MAX);
        for (k, sums) in self.state_sums.iter().take(self.count).enumerate() {
            let states = sums.get(z).copied().unwrap_or(0.0);
            let [activations, stash, logits] = self.rank_activations(k, inputs, recompute);
            let total = states + activations + stash + comm + logits;
            if total > have {
                return None;
            }
            if k == 0 || total > worst.0 {
                worst = (total, k);
            }
        }
        Some(worst)
    }

    /// The breakdown of rank `k` (of [`LayoutMemory::worst`]) under `zero` and `recompute`,
    /// whose total is `total`.
    #[inline]
    pub(crate) fn rank_breakdown(
        &self,
        k: usize,
        zero: u8,
        recompute: impl Into<Recomputation>,
        total: f64,
    ) -> MemoryBreakdown {
        let z = usize::from(zero.min(3));
        let Some([weights, gradients, optimizer]) =
            self.states.get(k).and_then(|s| s.get(z)).copied()
        else {
            return MemoryBreakdown::NONE;
        };
        let [activations, pipeline_stash, logits] =
            self.rank_activations(k, self.unit.inputs(zero), recompute.into());
        MemoryBreakdown {
            weights,
            gradients,
            optimizer,
            activations,
            pipeline_stash,
            comm_buffers: self.comm_buffers.get(z).copied().unwrap_or(0.0),
            logits,
            total,
            rank: self.rank_ids.get(k).copied().flatten(),
        }
    }
}
