//! Homogeneous layout search: every tensor × pipeline × data × context × expert × virtual-stage
//! × micro-batch × ZeRO × recompute split of a job on one device type, pruned, costed, ranked.
//!
//! Auto fields enumerate only values that can work (divisors, powers of two); pinned fields are
//! checked and, when they cannot work, reported as a typed [`Rejection`] with numbers. Recompute
//! on auto takes the least recomputation that fits memory (more recomputation is never faster).
//! Ties are broken by the layout's field order, so results are identical everywhere.
//!
//! Three parts: [`space`] walks the shapes in a fixed order and probes each against the rules,
//! [`rank`] costs each shape's ZeRO stages with the least recomputation that fits, and [`kept`]
//! holds the best candidates and the rejected regions.

pub mod budget;
mod kept;
mod memory;
mod rank;
mod space;

use super::goodput::{Failures, Run};
use crate::cost::{KernelShare, StepEstimate};
use crate::hardware::ClusterFigures;
use crate::workload::{Layout, ModelDims, Pins, TrainSetup};
use loam_ir::types::Optimize;
pub(crate) use memory::{ShapeMemory, floor_of};
use rank::{Ranker, Recording};
use serde::Serialize;
pub(crate) use space::{Axes, Bounds, RecomputeLayers, Space, Visitor, divisors_u32};

/// The training setup a search on `device` runs with: fused attention only where the device's
/// software stack has it. The planner's single-type search, its data split over two groups and
/// the checker's memory pre-check all set it here, so they give a layout the same memory.
pub(crate) fn setup_on(setup: &TrainSetup, device: &crate::catalogue::Device) -> TrainSetup {
    TrainSetup {
        flash_attention: device.has_feature(crate::catalogue::model::Feature::FlashAttention),
        ..setup.clone()
    }
}

/// What to search.
#[derive(Debug, Clone)]
pub struct SearchSpec<'a> {
    /// The model.
    pub model: &'a ModelDims,
    /// The training run.
    pub setup: &'a TrainSetup,
    /// The devices available.
    pub cluster: &'a ClusterFigures,
    /// Fixed layout fields.
    pub pins: Pins,
    /// Most devices the job may use (further bounded by the cluster).
    pub max_devices: u64,
    /// How many ranked candidates to return.
    pub keep: usize,
}

/// One costed layout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The layout.
    pub layout: Layout,
    /// Devices it uses.
    pub devices: u64,
    /// The cost model's prediction.
    pub estimate: StepEstimate,
    /// Seconds to train on all of `TrainSetup::tokens`.
    pub train_time_s: f64,
    /// Device-hours to train.
    pub device_hours: f64,
}

/// Scores a candidate; lower is better.
pub trait Objective {
    /// The score of `candidate`.
    fn score(&self, candidate: &Candidate) -> f64;
}

impl<F: Fn(&Candidate) -> f64> Objective for F {
    fn score(&self, candidate: &Candidate) -> f64 {
        self(candidate)
    }
}

/// The built-in objectives: time, money, a balance of both, or emitted CO2.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Economics {
    /// What to minimise.
    pub optimize: Optimize,
    /// Price of one device-hour in the job's currency.
    pub price_per_device_hour: f64,
    /// Average electrical power per device in watts (board power plus its share of the node).
    pub watts_per_device: f64,
    /// Grid carbon intensity in g CO2 per kWh.
    pub carbon_g_per_kwh: f64,
    /// What failures and checkpoints add to the run ([`Failures::NONE`] to leave them out).
    pub failures: Failures,
}

impl Economics {
    /// The run of `c` with its expected failures and checkpoint writes.
    pub fn run(&self, c: &Candidate) -> Run {
        self.failures.run(c.train_time_s, c.devices)
    }

    /// Expected wall seconds to train, failures included.
    pub fn wall_time_s(&self, c: &Candidate) -> f64 {
        self.run(c).wall_s
    }

    /// Money to train: the devices are held for the wall time.
    pub fn cost(&self, c: &Candidate) -> f64 {
        self.totals(c).cost
    }

    /// Energy to train in kWh.
    pub fn energy_kwh(&self, c: &Candidate) -> f64 {
        self.totals(c).energy_kwh
    }

    /// CO2 to train in kg.
    pub fn carbon_kg(&self, c: &Candidate) -> f64 {
        self.totals(c).carbon_kg
    }

    /// Wall seconds, money, kWh and kg CO2 of `c`, with its failures worked out once (the
    /// search scores every layout it costs, so this is on its hot path).
    pub fn totals(&self, c: &Candidate) -> Totals {
        let run = self.run(c);
        let device_hours = c.device_hours * run.stretch();
        let energy_kwh = device_hours * self.watts_per_device / 1000.0;
        Totals {
            wall_s: run.wall_s,
            cost: device_hours * self.price_per_device_hour,
            energy_kwh,
            carbon_kg: energy_kwh * self.carbon_g_per_kwh / 1000.0,
        }
    }
}

/// What a layout costs over the whole run, failures included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
    /// Expected wall seconds.
    pub wall_s: f64,
    /// Money.
    pub cost: f64,
    /// Energy in kWh.
    pub energy_kwh: f64,
    /// CO2 in kg.
    pub carbon_kg: f64,
}

impl Objective for Economics {
    fn score(&self, c: &Candidate) -> f64 {
        match self.optimize {
            Optimize::Time => self.wall_time_s(c),
            Optimize::Cost => self.cost(c),
            // The product of hours and money: halving either is worth the same.
            Optimize::Balanced => {
                let t = self.totals(c);
                t.wall_s / 3600.0 * t.cost
            }
            Optimize::Carbon => self.carbon_kg(c),
        }
    }
}

/// Why a region of the search space cannot work.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rejection {
    /// A count does not divide another (`what` names both).
    Indivisible {
        /// E.g. `"heads % tensor"`.
        what: &'static str,
        /// The dividend.
        value: u64,
        /// The divisor.
        by: u64,
    },
    /// Tensor parallelism larger than the scale-up domain.
    TensorBeyondNode {
        /// Requested degree.
        tensor: u32,
        /// Devices per node.
        devices_per_node: u32,
    },
    /// More devices than allowed.
    TooManyDevices {
        /// Devices the layout needs.
        need: u64,
        /// Devices allowed.
        have: u64,
    },
    /// Interleaving needs the micro-batch count to be a multiple of the pipeline depth.
    InterleaveNeedsMicroBatches {
        /// Micro-batches per step.
        micro_batches: u64,
        /// Pipeline stages.
        pipeline: u32,
    },
    /// More pipeline chunks than the split rule can give a block each.
    StagesWithoutBlocks {
        /// `pipeline · virtual_stages`.
        chunks: u64,
        /// Transformer blocks.
        layers: u64,
    },
    /// The heaviest stage does not fit in device memory.
    OutOfMemory {
        /// Bytes needed per device.
        need_bytes: f64,
        /// Usable bytes per device.
        have_bytes: f64,
    },
    /// The device cannot run the precision.
    Unsupported {
        /// The cost model's message.
        message: String,
    },
}

/// Every rejection of one kind, with the closest miss as the example.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RejectedRegion {
    /// The closest miss.
    pub reason: Rejection,
    /// Its layout (for memory, the closest one).
    pub example: Layout,
    /// Layouts rejected for this reason.
    pub count: u64,
}

/// How big the space was and how pruning kept it small.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SearchStats {
    /// Product of every field's full range (tensor 1..=devices per node, pipeline 1..=layers,
    /// data 1..=devices, context 1..=seq_len, expert 1..=experts, virtual 1..=layers, 2 split
    /// rules, micro-batch 1..=global batch, 4 ZeRO stages, 3 recompute modes).
    pub raw_space: f64,
    /// Layouts that passed divisibility and device-count rules and reached the memory check.
    pub enumerated: u64,
    /// Layouts costed by the cost model.
    pub evaluated: u64,
    /// Shapes the walk visited (every field but ZeRO and recomputation): with the layouts
    /// costed, the walk's units of [`budget::WALK_CAP`].
    pub shapes: u64,
    /// Whether the walk stopped at its allowance of units before the end of the space.
    pub stopped: bool,
}

impl SearchStats {
    /// The walk's units ([`budget::WALK_CAP`]): shapes visited and layouts costed.
    pub fn units(&self) -> u64 {
        self.shapes.saturating_add(self.evaluated)
    }
}

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    /// Best first.
    pub ranked: Vec<Candidate>,
    /// Objective score of each entry of `ranked`.
    pub scores: Vec<f64>,
    /// Regions that cannot work, keyed by kind.
    pub rejected: Vec<RejectedRegion>,
    /// Sizes.
    pub stats: SearchStats,
}

/// Searches the layouts of `spec` and ranks them by `objective`, costing every layout that
/// fits ([`Scores::Any`]).
pub fn search(spec: &SearchSpec<'_>, objective: &dyn Objective) -> SearchResult {
    search_scored(spec, objective, Scores::Any)
}

/// [`search`] with an `objective` that scores as `scores` says: one that scores by time and
/// devices alone ([`Scores::ByTimeAndDevices`]) lets the walk skip costing the shapes that
/// cannot rank. Every shape's memory is still worked out, so the rejected regions are those
/// of [`search`]; the ranked candidates are too, and only [`SearchStats::evaluated`] counts
/// fewer.
pub fn search_scored(
    spec: &SearchSpec<'_>,
    objective: &dyn Objective,
    scores: Scores,
) -> SearchResult {
    search_recording(spec, objective, scores, Recording::Throughout, u64::MAX)
}

/// The planner's plain search, under a job's [`budget::WalkBudget`]: [`search_scored`] when
/// `throughout`, else the search that records the rejected regions only while it has kept no
/// candidate: the same ranked candidates and scores, for less work where the objective scores
/// by time and devices alone ([`Scores::ByTimeAndDevices`]), since once a candidate is kept no
/// memory of a placement or shape that cannot rank is worked out, as in [`search_capped`]. Such
/// a search that keeps none returns the regions of [`search_scored`]; one that keeps some
/// returns part of them (a plan reports them only when none is found). Either stops after
/// `allowance` units of its walk ([`SearchStats::units`]) with what it had kept and recorded by
/// then; [`SearchStats::stopped`] says it did. The statistics count what this walk did.
pub(crate) fn search_within(
    spec: &SearchSpec<'_>,
    objective: &dyn Objective,
    scores: Scores,
    throughout: bool,
    allowance: u64,
) -> SearchResult {
    let recording = if throughout {
        Recording::Throughout
    } else {
        Recording::UntilKept
    };
    search_recording(spec, objective, scores, recording, allowance)
}

/// A plain search of `spec` by `objective`, recording the rejected regions as `recording` says,
/// stopping after `allowance` units.
fn search_recording(
    spec: &SearchSpec<'_>,
    objective: &dyn Objective,
    scores: Scores,
    recording: Recording,
    allowance: u64,
) -> SearchResult {
    let bounds = Bounds::of_search(spec);
    let axes = Axes::new(&bounds);
    let space = Space::new(&bounds, &axes);
    let stats = SearchStats {
        raw_space: raw_space(spec, space.max_devices()),
        ..SearchStats::default()
    };
    let mut ranker = Ranker::new(spec, objective, &axes, stats, scores, recording);
    ranker.allow(allowance);
    // A break is the device lacking the precision, or the allowance spent: what was found up
    // to there is the result.
    let _ = space.walk(&mut ranker);
    ranker.finish()
}

/// How the objectives of a [`search_capped`] or a [`search_scored`] score a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scores {
    /// In any way: every shape that fits is costed and offered.
    Any,
    /// By its `train_time_s`, `devices` and `device_hours` (their product over 3,600) alone,
    /// never lower for a longer time on the same devices: failures, deadlines, budgets, money,
    /// energy and carbon all are. A placement or shape whose least possible training time
    /// already scores above the worst kept candidate of every cap it fits is then skipped
    /// without working out its memory or costing it (a [`search_scored`], which reports
    /// rejected regions, works out every memory and skips only the costing):
    /// [`crate::cost::fastest_flops`] and [`crate::cost::Costing::placement_step_floor`] bound a
    /// placement's time, [`crate::cost::Costing::step_floor`] a shape's.
    ByTimeAndDevices,
}

/// The ranked candidates of [`search`] of `spec` by each of `objectives` with `max_devices` set
/// to each of `caps` in turn, in one walk: a smaller cap's search visits a subset of a larger
/// one's layouts and costs each the same (nothing of the cost model reads the cap), so its best
/// are the best of the wider walk's candidates within the cap; and nothing the walk visits or
/// costs reads the objective, so each objective's best are those of a walk of its own. The
/// rejected regions, which do depend on the cap, are not returned. One list per objective and
/// cap, in the order of `objectives`, then of `caps`, and the walk's statistics (its units,
/// and whether it stopped). Objectives that score by time and devices alone
/// ([`Scores::ByTimeAndDevices`]) let the walk skip what cannot rank. The walk starts with the
/// kernels `kernels` holds for its inputs, when given, and leaves its own there: they are the
/// same whichever walk works them out. It stops after `allowance` units ([`SearchStats::units`])
/// with the candidates kept by then (`u64::MAX`: never).
pub(crate) fn search_capped(
    spec: &SearchSpec<'_>,
    objectives: &[&dyn Objective],
    caps: &[u64],
    scores: Scores,
    kernels: Option<&KernelShare>,
    allowance: u64,
) -> (Vec<Vec<Vec<Candidate>>>, SearchStats) {
    let Some(&widest) = caps.iter().max() else {
        return (vec![Vec::new(); objectives.len()], SearchStats::default());
    };
    let wide = SearchSpec {
        max_devices: widest,
        ..spec.clone()
    };
    let bounds = Bounds::of_search(&wide);
    let axes = Axes::new(&bounds);
    let space = Space::new(&bounds, &axes);
    // The devices each cap allows, as the walk of a search with that cap bounds them.
    let allowed: Vec<u64> = caps
        .iter()
        .map(|&cap| cap.min(spec.cluster.devices()).max(1))
        .collect();
    let mut ranker = Ranker::capped(&wide, objectives.to_vec(), &axes, &allowed, scores, kernels);
    ranker.allow(allowance);
    // A break is the device lacking the precision (nothing was kept for any cap), or the
    // allowance spent (what was kept by then is the result).
    let _ = space.walk(&mut ranker);
    ranker.finish_capped()
}

/// The product of every field's full range (see [`SearchStats::raw_space`]).
fn raw_space(spec: &SearchSpec<'_>, max_devices: u64) -> f64 {
    let model = spec.model;
    f64::from(spec.cluster.devices_per_node.max(1))
        * f64::from(model.layers)
        * max_devices as f64
        * f64::from(model.seq_len)
        * model.total_experts()
        * f64::from(model.layers)
        * 2.0
        * f64::from(spec.setup.global_batch)
        * 4.0
        * 3.0
}

#[cfg(test)]
mod floor_tests;
#[cfg(test)]
mod micro_batch_tests;
#[cfg(test)]
mod recompute_tests;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
pub(crate) mod tests;
