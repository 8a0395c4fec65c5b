//! Costing the shapes the walk hands over: each ZeRO stage of a shape with the least
//! recomputation that fits in memory, scored by the objective, kept when it ranks.
//!
//! The cost model is worked out in stages ([`StageCache`]) as the walk moves through the space:
//! what depends only on the tensor and context degree, or only on the placement, is computed once
//! for all the shapes below it.

use super::kept::{Kept, Rejections};
use super::memory::{ShapeMemory, floor_of};
use super::space::{Axes, RecomputeLayers, Visitor, tries_micro_batch};
use super::{Candidate, Objective, Rejection, Scores, SearchResult, SearchSpec, SearchStats};
use crate::cost::{Costing, KernelShare, StageCache, StepEstimate, usable_memory};
use crate::hardware::ClusterFigures;
use crate::workload::{
    HeldParams, Layout, LayoutMemory, MemoryBreakdown, ModelDims, Recomputation, TrainSetup,
    held_params,
};
use loam_ir::types::Recompute;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// How long a plain search records the rejected regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Recording {
    /// Throughout the walk: every region with its closest miss.
    Throughout,
    /// Until it keeps a first candidate, and from there on skips the memory of what cannot rank
    /// ([`Ranker::capped`] with the one cap of a plain search): a walk that keeps nothing has
    /// every region, and one that keeps something wanted none.
    UntilKept,
}

/// Costs, ranks and records what the walk visits.
pub(super) struct Ranker<'a> {
    model: &'a ModelDims,
    setup: &'a TrainSetup,
    cluster: &'a ClusterFigures,
    /// What the candidates are ranked by: one objective, or several ranked apart in one walk.
    objectives: Vec<&'a dyn Objective>,
    /// `None` when the device has no peak for the precision.
    costing: Option<Costing<'a>>,
    /// The memory of the shapes visited, as the fit sees it too.
    memory: ShapeMemory<'a>,
    stages: StageCache,
    /// Where the walk's kernels come from and go to, when other walks share them.
    kernel_share: Option<&'a KernelShare>,
    zeros: &'a [u8],
    recomputes: &'a [Recompute],
    /// The micro-batches the walk may try ([`tries_micro_batch`]): the pinned one, else these
    /// divisors of the batch.
    micro_batch_pin: Option<u32>,
    batch_divisors: &'a [u32],
    /// Whether the current tensor degree runs sequence parallelism: a placement's kernels need
    /// it before the walk sets it on the placement's shapes.
    sequence_parallel: bool,
    /// Whether it overlaps its collectives with the GEMMs, likewise.
    tensor_overlap: bool,
    /// Under the current tensor and context degree, by expert degree and whether the layout
    /// pipelines: [`Costing::shape_block_floor`] at each of `batch_divisors` (NaN until asked),
    /// which [`Ranker::placement_shapes_floor_s`] takes the least of per placement.
    block_floors: Vec<BlockFloors>,
    recompute_layers: RecomputeLayers,
    have_bytes: f64,
    /// Parameters one device of the current placement holds, worked out when its first shape
    /// is costed (most placements of a capped walk have none).
    params: Option<HeldParams>,
    rejections: Rejections,
    /// Whether the rejected regions are wanted: a capped search returns none, so it neither
    /// records them nor works out the memory of shapes whose model states alone overflow.
    record_rejections: bool,
    /// Whether `record_rejections` turns off once a candidate is kept ([`Recording::UntilKept`]).
    recording_ends_at_first_kept: bool,
    /// Whether some ZeRO stage and recomputation of the last shape fitted in memory.
    last_shape_fitted: bool,
    stats: SearchStats,
    /// By objective, the best candidates within each device cap, widest cap first (one cap,
    /// the walk's own, for a plain search).
    kept: Vec<Vec<(u64, Kept)>>,
    /// One candidate rewritten in place: most are scored and dropped, and a candidate is too
    /// big to copy for nothing.
    scratch: Candidate,
    /// Device-seconds the run's tokens take at least ([`crate::cost::least_device_seconds`]),
    /// when the walk skips placements and shapes that cannot rank
    /// ([`Scores::ByTimeAndDevices`]); `None` otherwise.
    floor_device_s: Option<f64>,
    /// The candidate a placement's floor is scored as: its devices, the floor's time.
    floor_probe: Candidate,
    /// By device count, what [`Ranker::floor_cannot_rank`] has answered, so that a floor it
    /// settles is not scored again.
    floor_marks: BTreeMap<u64, FloorMarks>,
    /// How many times a costed candidate has joined a kept list: a floor let through under
    /// the lists as they were may be refused under better ones.
    kept_changes: u64,
    /// The floor [`Ranker::shape_cannot_rank`] worked out for the shape being costed, if it
    /// did: the debug check of each candidate tests that floor, as the walk used it.
    walked_shape_floor_s: Option<f64>,
    /// The step floor [`Ranker::shape_cannot_rank`] worked out for the shape being walked,
    /// when it did: each ZeRO stage adds its data-parallel floor to it.
    shape_step_s: Option<f64>,
    /// By objective, the score of the candidate just costed: the debug check of what skipping
    /// by floors rests on reads it rather than scoring again (scoring is most of its work).
    costed_scores: Vec<f64>,
    /// Units the walk may spend ([`SearchStats::units`]) before it stops.
    allowance: u64,
}

impl<'a> Ranker<'a> {
    /// A ranker of `spec`'s layouts by `objective`, trying the ZeRO stages and recomputation
    /// modes of `axes`; `stats` holds the size of the space. It keeps the best layouts and the
    /// rejected regions as `recording` says.
    pub(super) fn new(
        spec: &SearchSpec<'a>,
        objective: &'a dyn Objective,
        axes: &'a Axes,
        stats: SearchStats,
        scores: Scores,
        recording: Recording,
    ) -> Ranker<'a> {
        let mut ranker = Ranker::ranking(
            spec,
            vec![objective],
            axes,
            stats,
            &[u64::MAX],
            true,
            scores,
        );
        ranker.recording_ends_at_first_kept = recording == Recording::UntilKept;
        ranker
    }

    /// A ranker that keeps, for each of `objectives` apart, the best of the layouts within each
    /// of `caps` devices, and no rejected regions: every objective is offered the same
    /// candidates in the same order as a walk of its own would offer them. Its kernels come
    /// from and go to `kernels`, when given.
    pub(super) fn capped(
        spec: &SearchSpec<'a>,
        objectives: Vec<&'a dyn Objective>,
        axes: &'a Axes,
        caps: &[u64],
        scores: Scores,
        kernels: Option<&'a KernelShare>,
    ) -> Ranker<'a> {
        let mut ranker = Ranker::ranking(
            spec,
            objectives,
            axes,
            SearchStats::default(),
            caps,
            false,
            scores,
        );
        if let (Some(share), Some(costing)) = (kernels, &ranker.costing) {
            ranker.stages = StageCache::sharing(share, costing);
            ranker.kernel_share = Some(share);
        }
        ranker
    }

    fn ranking(
        spec: &SearchSpec<'a>,
        objectives: Vec<&'a dyn Objective>,
        axes: &'a Axes,
        stats: SearchStats,
        caps: &[u64],
        record_rejections: bool,
        scores: Scores,
    ) -> Ranker<'a> {
        let (model, setup, cluster) = (spec.model, spec.setup, spec.cluster);
        let floor_device_s = match scores {
            Scores::ByTimeAndDevices => crate::cost::least_device_seconds(
                model,
                setup.tokens,
                crate::cost::fastest_flops(cluster, setup.precision),
            ),
            Scores::Any => None,
        };
        let objective_count = objectives.len();
        Ranker {
            model,
            setup,
            cluster,
            kept: objectives
                .iter()
                .map(|_| {
                    caps.iter()
                        .map(|&cap| (cap, Kept::new(spec.keep)))
                        .collect()
                })
                .collect(),
            objectives,
            // A device without the precision is reported at the first layout that fits in memory.
            costing: Costing::new(model, setup, cluster).ok(),
            memory: ShapeMemory::new(model, setup),
            stages: StageCache::default(),
            kernel_share: None,
            zeros: &axes.zeros,
            recomputes: &axes.recomputes,
            micro_batch_pin: spec.pins.micro_batch,
            batch_divisors: &axes.batch_divisors,
            sequence_parallel: false,
            tensor_overlap: false,
            block_floors: Vec::new(),
            recompute_layers: axes.recompute_layers,
            have_bytes: usable_memory(&cluster.device),
            params: None,
            rejections: Rejections::default(),
            record_rejections,
            recording_ends_at_first_kept: false,
            last_shape_fitted: false,
            stats,
            scratch: Candidate {
                layout: Layout::single(),
                devices: 0,
                estimate: StepEstimate::blank(),
                train_time_s: 0.0,
                device_hours: 0.0,
            },
            floor_device_s,
            floor_probe: Candidate {
                layout: Layout::single(),
                devices: 0,
                estimate: StepEstimate::blank(),
                train_time_s: 0.0,
                device_hours: 0.0,
            },
            floor_marks: BTreeMap::new(),
            kept_changes: 0,
            walked_shape_floor_s: None,
            shape_step_s: None,
            costed_scores: vec![f64::NAN; objective_count],
            allowance: u64::MAX,
        }
    }

    /// Stops the walk once it has spent `allowance` units ([`SearchStats::units`]).
    pub(super) fn allow(&mut self, allowance: u64) {
        self.allowance = allowance;
    }

    /// The kept candidates, the rejected regions and the statistics, of the first objective
    /// and cap.
    pub(super) fn finish(self) -> SearchResult {
        let (scores, ranked) = self
            .kept
            .into_iter()
            .next()
            .and_then(|caps| caps.into_iter().next())
            .map(|(_, kept)| kept.into_ranked())
            .unwrap_or_default();
        SearchResult {
            ranked,
            scores,
            rejected: self.rejections.into_regions(),
            stats: self.stats,
        }
    }

    /// The kept candidates of every objective and cap, in the order of the objectives, then
    /// of the caps, and the walk's statistics (its units, whether it stopped).
    pub(super) fn finish_capped(self) -> (Vec<Vec<Vec<Candidate>>>, SearchStats) {
        if let Some(share) = self.kernel_share {
            self.stages.leave_kernels(share);
        }
        let kept = self
            .kept
            .into_iter()
            .map(|caps| {
                caps.into_iter()
                    .map(|(_, kept)| kept.into_ranked().1)
                    .collect()
            })
            .collect();
        (kept, self.stats)
    }

    /// The least recomputation under which `shape` at ZeRO `zero` fits in memory, and its
    /// memory; every mode tried before it is rejected for memory. Full recomputation replays the
    /// blocks [`RecomputeLayers`] says: on auto the fewest blocks per chunk that fit, tried after
    /// selective recomputation and before every block.
    #[inline]
    fn least_recompute_that_fits(
        &mut self,
        shape: &Layout,
        zero: u8,
        memory: &LayoutMemory,
    ) -> Option<(Recomputation, MemoryBreakdown)> {
        for &r in self.recomputes {
            let tries: [Option<Recomputation>; 2] = match (r, self.recompute_layers) {
                (Recompute::Full, RecomputeLayers::Pinned(k)) => [Some(memory.partial(k)), None],
                (Recompute::Full, RecomputeLayers::Fewest) => {
                    [memory.fewest_partial(zero, self.have_bytes), Some(r.into())]
                }
                _ => [Some(r.into()), None],
            };
            for recompute in tries.into_iter().flatten() {
                // Totals first: most tries are rejected, and need no breakdown. Without rejected
                // regions to report, an overflow needs no total either.
                let bound = if self.record_rejections {
                    f64::INFINITY
                } else {
                    self.have_bytes
                };
                let Some((total, rank)) = memory.worst_within(zero, recompute, bound) else {
                    continue;
                };
                if total <= self.have_bytes {
                    return Some((
                        recompute,
                        memory.rank_breakdown(rank, zero, recompute, total),
                    ));
                }
                if !self.record_rejections {
                    continue;
                }
                let layout = Layout {
                    zero,
                    recompute: recompute.mode,
                    recompute_layers: recompute.per_chunk,
                    ..*shape
                };
                self.rejections
                    .reject_memory(total, self.have_bytes, layout);
            }
        }
        None
    }

    /// Costs the scratch candidate under `zero` and `recompute` with its `memory`, and keeps it
    /// if it ranks. Breaks when the device cannot run the precision: the search ends there.
    #[inline]
    fn cost_and_rank(
        &mut self,
        zero: u8,
        recompute: Recomputation,
        memory: MemoryBreakdown,
        devices: f64,
    ) -> ControlFlow<()> {
        let cand = &mut self.scratch;
        cand.layout.zero = zero;
        cand.layout.recompute = recompute.mode;
        cand.layout.recompute_layers = recompute.per_chunk;
        self.stats.evaluated += 1;
        let Some(costing) = &self.costing else {
            let message = format!(
                "`{}` has no {} peak",
                self.cluster.device.id, self.setup.precision
            );
            if self.record_rejections {
                self.rejections
                    .reject(Rejection::Unsupported { message }, cand.layout);
            }
            return ControlFlow::Break(());
        };
        // The candidate's placement fields are its placement's, all `held_params` reads.
        let params = self
            .params
            .get_or_insert_with(|| held_params(self.model, self.memory.count(), &cand.layout));
        costing.step_cached(
            &mut self.stages,
            &cand.layout,
            params,
            memory,
            &mut cand.estimate,
        );
        set_totals(cand, self.setup, devices);
        for ((objective, caps), costed) in self
            .objectives
            .iter()
            .zip(&mut self.kept)
            .zip(&mut self.costed_scores)
        {
            let score = objective.score(cand);
            *costed = score;
            for (cap, kept) in caps {
                if cand.devices <= *cap && kept.offer(score, cand) {
                    self.kept_changes += 1;
                }
            }
        }
        // A candidate offered to an empty list is kept: the walk will return one.
        if self.recording_ends_at_first_kept {
            self.record_rejections = false;
        }
        if cfg!(debug_assertions) {
            self.assert_above_floors();
        }
        ControlFlow::Continue(())
    }

    /// Checks, in debug builds, what skipping by floors rests on for the candidate just
    /// costed: its time is at least its placement's and its shape's floor, and each objective
    /// scores it by its time and devices alone, no lower than the shape's floor.
    fn assert_above_floors(&mut self) {
        let (layout, devices) = (self.scratch.layout, self.scratch.devices);
        let shape_s = match self.walked_shape_floor_s {
            Some(floor_s) => Some(floor_s),
            None => self.shape_floor_s(&layout),
        };
        let (Some(flops_s), Some(shape_s)) = (self.placement_floor_s(devices), shape_s) else {
            return;
        };
        let blocks_s = self.placement_shapes_floor_s(&layout);
        let placement_s = flops_s.max(blocks_s.unwrap_or(0.0));
        let cand = &self.scratch;
        let slack = 1.0 + 1e-9;
        // Comparisons that a NaN makes false: a NaN time or score is no floor broken (and no
        // candidate a floor skips: nothing scores below a NaN floor).
        let most = cand.train_time_s * slack;
        assert!(
            [placement_s, shape_s]
                .iter()
                .all(|floor| floor.partial_cmp(&most) != Some(std::cmp::Ordering::Greater)),
            "{:?} trains in {} s, below its floors {placement_s} s and {shape_s} s",
            cand.layout,
            cand.train_time_s
        );
        let mut as_time = Candidate {
            layout: Layout::single(),
            devices: cand.devices,
            estimate: StepEstimate::blank(),
            train_time_s: cand.train_time_s,
            device_hours: cand.device_hours,
        };
        for (objective, &score) in self.objectives.iter().zip(&self.costed_scores) {
            assert_eq!(score.to_bits(), objective.score(&as_time).to_bits());
            // With the margin skipping leaves for rounding ([`Ranker::floor_cannot_rank`]): a
            // floor that is the candidate's own time to the last bits (the data-parallel floor
            // of a fully recomputed shape is) may score a few bits above it.
            let floor_s = shape_s.min(cand.train_time_s) * (1.0 - 1e-9);
            as_time.train_time_s = floor_s;
            as_time.device_hours = floor_s / 3600.0 * cand.devices as f64;
            let floor = objective.score(&as_time);
            assert!(
                floor.partial_cmp(&score) != Some(std::cmp::Ordering::Greater),
                "{:?}",
                cand.layout
            );
            as_time.train_time_s = cand.train_time_s;
            as_time.device_hours = cand.device_hours;
        }
    }
}

/// What [`Ranker::floor_cannot_rank`] has answered for one device count. No score falls as
/// the time grows, so a floor at or above one it refused is refused too (the kept lists only
/// get better), and a floor at or below one it let through is let through while no candidate
/// has joined a kept list since.
#[derive(Debug, Clone, Copy)]
struct FloorMarks {
    /// The least floor time refused.
    refused_from_s: f64,
    /// The greatest floor time let through since the kept lists last changed.
    let_through_upto_s: f64,
    /// [`Ranker::kept_changes`] when `let_through_upto_s` was let through.
    let_through_at: u64,
}

impl FloorMarks {
    const NONE: FloorMarks = FloorMarks {
        refused_from_s: f64::INFINITY,
        let_through_upto_s: f64::NEG_INFINITY,
        let_through_at: 0,
    };
}

impl Ranker<'_> {
    /// Whether no candidate on `devices` devices that trains for at least
    /// `floor_s` seconds can be kept. The objectives score a candidate by its training time and
    /// devices alone, never lower for a longer time ([`Scores::ByTimeAndDevices`]), so the
    /// floor's score is at most every such candidate's; when it is above the worst kept
    /// candidate of every cap the devices fit, none is kept.
    fn floor_cannot_rank(&mut self, devices: u64, floor_s: f64) -> bool {
        // Rounding in the step's own arithmetic stays far inside this margin.
        let floor_s = floor_s * (1.0 - 1e-9);
        let marks = self.floor_marks.entry(devices).or_insert(FloorMarks::NONE);
        if floor_s >= marks.refused_from_s {
            return true;
        }
        if marks.let_through_at == self.kept_changes && floor_s <= marks.let_through_upto_s {
            return false;
        }
        // The objectives read the probe's time and devices alone: its layout stays a blank one
        // (copying a layout was a twentieth of this check).
        let probe = &mut self.floor_probe;
        probe.devices = devices;
        probe.train_time_s = floor_s;
        probe.device_hours = floor_s / 3600.0 * devices as f64;
        let probe = &*probe;
        let refused = self
            .objectives
            .iter()
            .zip(&self.kept)
            .all(|(objective, caps)| {
                let floor = objective.score(probe);
                caps.iter()
                    .all(|(cap, kept)| devices > *cap || kept.refuses_from(floor))
            });
        if refused {
            marks.refused_from_s = marks.refused_from_s.min(floor_s);
        } else if marks.let_through_at == self.kept_changes {
            marks.let_through_upto_s = marks.let_through_upto_s.max(floor_s);
        } else {
            marks.let_through_at = self.kept_changes;
            marks.let_through_upto_s = floor_s;
        }
        refused
    }

    /// Seconds `devices` devices train the run in at least: every step does its model FLOPs
    /// no faster than the device's fastest kernel; `None` when the walk skips nothing.
    fn placement_floor_s(&self, devices: u64) -> Option<f64> {
        self.floor_device_s
            .map(|device_s| device_s / devices as f64)
    }

    /// Seconds any shape of `placement` trains the run in at least: the run's steps of
    /// [`Costing::placement_step_floor`] over the micro-batches the walk tries; `None` when the
    /// walk skips nothing.
    fn placement_shapes_floor_s(&mut self, placement: &Layout) -> Option<f64> {
        self.floor_device_s?;
        let costing = self.costing.as_ref()?;
        // The floor hides the expert all-to-alls where a schedule overlaps them, which the
        // pipeline, its virtual stages and the expert degree decide.
        let key = (placement.expert, costing.overlap_schedule_runs(placement));
        let slot = match self.block_floors.iter().position(|f| f.key == key) {
            Some(slot) => slot,
            None => {
                self.block_floors.push(BlockFloors {
                    key,
                    at: vec![f64::NAN; self.batch_divisors.len()],
                    least: Vec::new(),
                });
                self.block_floors.len() - 1
            }
        };
        let floors = self.block_floors.get_mut(slot)?;
        let data = placement.data;
        let least = match floors.least.iter().find(|(d, _)| *d == data) {
            Some(&(_, least)) => least,
            None => {
                let mut shape = Layout {
                    sequence_parallel: self.sequence_parallel,
                    tensor_overlap: self.tensor_overlap,
                    ..*placement
                };
                let per_rank = u64::from(self.setup.global_batch) / u64::from(data.max(1));
                let mut least = [f64::INFINITY; 2];
                let mut take = |b: u32, block: f64| {
                    least[0] = least[0].min(block / f64::from(b.max(1)));
                    least[1] = least[1].min(block);
                };
                match self.micro_batch_pin {
                    Some(b) => {
                        shape.micro_batch = b;
                        take(b, costing.shape_block_floor(&mut self.stages, &shape));
                    }
                    None => {
                        for (&b, known) in self.batch_divisors.iter().zip(floors.at.iter_mut()) {
                            if !tries_micro_batch(false, per_rank, b) {
                                continue;
                            }
                            if known.is_nan() {
                                shape.micro_batch = b;
                                *known = costing.shape_block_floor(&mut self.stages, &shape);
                            }
                            take(b, *known);
                        }
                    }
                }
                floors.least.push((data, least));
                least
            }
        };
        let [per_sequence, per_micro_batch] = least;
        if !per_sequence.is_finite() {
            return None;
        }
        let step_s = costing.placement_step_floor(placement, per_sequence, per_micro_batch);
        Some(costing.train_seconds(step_s))
    }

    /// Seconds any ZeRO stage and recomputation of `shape` trains the run in at least: the
    /// run's steps of [`Costing::step_floor`]; `None` when the walk skips nothing.
    fn shape_floor_s(&mut self, shape: &Layout) -> Option<f64> {
        let step_s = self.shape_step_floor_s(shape)?;
        Some(self.costing.as_ref()?.train_seconds(step_s))
    }

    /// [`Costing::step_floor`] of `shape`; `None` when the walk skips nothing.
    fn shape_step_floor_s(&mut self, shape: &Layout) -> Option<f64> {
        self.floor_device_s?;
        let costing = self.costing.as_ref()?;
        Some(costing.step_floor(&mut self.stages, shape))
    }

    /// Whether no ZeRO stage and recomputation of `shape` can be kept ([`Ranker::shape_floor_s`]).
    /// Remembers the step floor for the ZeRO stages ([`Ranker::zero_cannot_rank`]).
    fn shape_cannot_rank(&mut self, shape: &Layout, devices: u64) -> bool {
        self.shape_step_s = self.shape_step_floor_s(shape);
        self.walked_shape_floor_s = self
            .shape_step_s
            .zip(self.costing.as_ref())
            .map(|(step_s, costing)| costing.train_seconds(step_s));
        self.walked_shape_floor_s
            .is_some_and(|floor_s| self.floor_cannot_rank(devices, floor_s))
    }

    /// Whether no recomputation of `shape` under ZeRO stage `zero` can be kept: its step floor
    /// ([`Ranker::shape_cannot_rank`], `false` without one) and its data-parallel floor
    /// ([`Costing::data_floor`]). When it can, that floor is the one the debug check holds the
    /// stage's candidate to.
    fn zero_cannot_rank(&mut self, shape: &Layout, devices: u64, zero: u8) -> bool {
        let (Some(step_s), Some(costing)) = (self.shape_step_s, self.costing.as_ref()) else {
            return false;
        };
        // The shape's placement fields are its placement's, all `held_params` reads.
        let params = self
            .params
            .get_or_insert_with(|| held_params(self.model, self.memory.count(), shape));
        let data_s = costing.data_floor(&mut self.stages, shape, params, zero);
        let floor_s = costing.train_seconds(step_s + data_s);
        if self.floor_cannot_rank(devices, floor_s) {
            return true;
        }
        self.walked_shape_floor_s = Some(floor_s);
        false
    }
}

impl Visitor for Ranker<'_> {
    #[inline]
    fn reject(&mut self, reason: Rejection, layout: Layout) {
        if self.record_rejections {
            self.rejections.reject(reason, layout);
        }
    }

    fn enter_tensor(&mut self, tensor: &Layout) {
        self.sequence_parallel = tensor.sequence_parallel;
        self.tensor_overlap = tensor.tensor_overlap;
        self.memory.enter_tensor(tensor);
    }

    /// A rank's memory never shrinks as its micro-batch grows (activations, the pipeline's
    /// stash of `min(p·b, per-rank batch)` sequences, logits and buffers all grow with it; the
    /// model states do not change), so once no ZeRO stage and recomputation of a shape fits,
    /// none of a larger micro-batch of the same placement does. Only a search that reports no
    /// rejected regions skips them: the others count every rejection.
    fn larger_micro_batches_overflow(&self) -> bool {
        !self.record_rejections && !self.last_shape_fitted
    }

    fn enter_tensor_context(&mut self) {
        self.stages.new_tensor_context();
        self.block_floors.clear();
    }

    /// A placement whose floor ([`Ranker::placement_floor_s`]) cannot rank has no shape that
    /// can ([`Ranker::floor_cannot_rank`]); a search that reports rejected regions skips none,
    /// since it works out every placement's memory.
    fn placement_cannot_rank(&mut self, placement: &Layout) -> bool {
        if self.record_rejections {
            return false;
        }
        let devices = placement.devices();
        let Some(flops_s) = self.placement_floor_s(devices) else {
            return false;
        };
        // Nothing is refused before every cap the placement fits keeps its candidates: its
        // blocks' floor waits until then.
        let full = self
            .kept
            .iter()
            .flatten()
            .all(|(cap, kept)| devices > *cap || kept.is_full());
        if !full {
            return false;
        }
        let floor_s = flops_s.max(self.placement_shapes_floor_s(placement).unwrap_or(0.0));
        self.floor_cannot_rank(devices, floor_s)
    }

    fn enter_placement(&mut self, placement: &Layout) {
        self.params = None;
        self.stages.new_placement();
        self.memory.enter_placement(placement);
    }

    /// Tries every ZeRO stage of `shape` with the least recomputation that fits, costs and
    /// ranks it.
    // The search's innermost loop, thousands of times per search: inlined with what it calls
    // into the walk, as when the walk was one function.
    #[inline]
    fn shape(&mut self, shape: &Layout, devices: u64) -> ControlFlow<()> {
        // The walk's units are its shapes and costings; it stops once its allowance is spent.
        if self.stats.units() >= self.allowance {
            self.stats.stopped = true;
            return ControlFlow::Break(());
        }
        self.stats.shapes += 1;
        let have = self.have_bytes;
        let tries = self.recomputes.len() as u64;
        let mut memory: Option<LayoutMemory> = None;
        let mut cannot_rank: Option<bool> = None;
        self.stages.new_micro_batch();
        self.walked_shape_floor_s = None;
        self.shape_step_s = None;
        if !self.record_rejections && self.shape_cannot_rank(shape, devices) {
            // A larger micro-batch may fit and rank.
            self.last_shape_fitted = true;
            return ControlFlow::Continue(());
        }
        self.last_shape_fitted = false;
        // Any rank's memory is at least its model states, which the placement decides: worked
        // out at the placement's first shape that is not skipped above (most placements of a
        // capped walk have none, and their memory was a sixth of a MoE plan's instructions).
        let floors = self.memory.floors();
        // The candidate's layout is rewritten field by field: copying whole layouts is a
        // noticeable share of the innermost loop.
        self.scratch.layout = *shape;
        self.scratch.devices = devices;
        for &zero in self.zeros {
            self.stats.enumerated += 1;
            // When the states alone overflow the device by at least the closest miss so far,
            // every recomputation is rejected and none is a closer miss: count them without
            // working out the activations (most shapes of large models end here). Without
            // rejected regions to report, the overflow alone settles it.
            if let Some(floor) = floor_of(floors, zero)
                && floor > have
                && (!self.record_rejections || self.rejections.no_closer_memory_miss(floor - have))
            {
                self.rejections.count_memory(tries);
                continue;
            }
            // A stage whose own floor cannot rank needs no memory: a larger micro-batch may
            // still fit and rank.
            if !self.record_rejections && self.zero_cannot_rank(shape, devices, zero) {
                self.last_shape_fitted = true;
                continue;
            }
            let memory = memory.get_or_insert_with(|| self.memory.of_shape(shape));
            let Some((recompute, breakdown)) = self.least_recompute_that_fits(shape, zero, memory)
            else {
                continue;
            };
            self.last_shape_fitted = true;
            // A search that reports rejected regions works out every shape's memory, and skips
            // only the costing of a shape that cannot rank (asked once, at its first fit: a
            // refusal holds as the kept candidates get better).
            if self.record_rejections
                && *cannot_rank.get_or_insert_with(|| self.shape_cannot_rank(shape, devices))
            {
                continue;
            }
            self.cost_and_rank(zero, recompute, breakdown, devices as f64)?;
        }
        ControlFlow::Continue(())
    }
}

/// [`Costing::shape_block_floor`] of the shapes of one expert degree, with and without a
/// schedule that overlaps their all-to-alls, under the current tensor and context degree
/// ([`Ranker::placement_shapes_floor_s`]).
struct BlockFloors {
    /// The expert degree and whether a schedule overlaps its all-to-alls
    /// ([`Costing::overlap_schedule_runs`]).
    key: (u32, bool),
    /// The floor at each of the walk's batch divisors as micro-batch, NaN until asked.
    at: Vec<f64>,
    /// By data degree, the least floor per sequence and per micro-batch over the micro-batches
    /// its per-rank batch allows.
    least: Vec<(u32, [f64; 2])>,
}

/// Fills in the training time and device-hours of `cand` from its estimate; `devices` is
/// `cand.devices`.
fn set_totals(cand: &mut Candidate, setup: &TrainSetup, devices: f64) {
    let train_time_s = if cand.estimate.tokens_per_s > 0.0 {
        setup.seconds_at(cand.estimate.tokens_per_s)
    } else {
        f64::INFINITY
    };
    cand.train_time_s = train_time_s;
    cand.device_hours = train_time_s / 3600.0 * devices;
}
