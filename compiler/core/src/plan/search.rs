//! Homogeneous layout search: every tensor × pipeline × data × context × expert × virtual-stage
//! × micro-batch × ZeRO × recompute split of a job on one device type, pruned, costed, ranked.
//!
//! Auto fields enumerate only values that can work (divisors, powers of two); pinned fields are
//! checked and, when they cannot work, reported as a typed [`Rejection`] with numbers. Recompute
//! on auto takes the least recomputation that fits memory (more recomputation is never faster).
//! Ties are broken by the layout's field order, so results are identical everywhere.

use crate::cost::{Costing, StageCache, StepEstimate, usable_memory};
use crate::hardware::ClusterFigures;
use crate::types::{Arch, Optimize, Recompute};
use crate::workload::{
    Layout, ModelDims, StageActivations, TrainSetup, breakdown, layer_bytes_per_token, param_count,
    params_per_device_counted, state_bytes,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// Layout fields fixed by the spec; `None` means auto.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pins {
    /// Tensor-parallel degree.
    pub tensor: Option<u32>,
    /// Pipeline stages.
    pub pipeline: Option<u32>,
    /// Data-parallel degree.
    pub data: Option<u32>,
    /// Context-parallel degree.
    pub context: Option<u32>,
    /// Expert-parallel degree.
    pub expert: Option<u32>,
    /// Virtual stages per pipeline rank.
    pub virtual_stages: Option<u32>,
    /// Micro-batch size.
    pub micro_batch: Option<u32>,
    /// ZeRO stage.
    pub zero: Option<u8>,
    /// Recomputation mode.
    pub recompute: Option<Recompute>,
    /// Sequence parallelism (auto: on whenever tensor > 1).
    pub sequence_parallel: Option<bool>,
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
}

impl Economics {
    /// Money to train.
    pub fn cost(&self, c: &Candidate) -> f64 {
        c.device_hours * self.price_per_device_hour
    }

    /// Energy to train in kWh.
    pub fn energy_kwh(&self, c: &Candidate) -> f64 {
        c.device_hours * self.watts_per_device / 1000.0
    }

    /// CO2 to train in kg.
    pub fn carbon_kg(&self, c: &Candidate) -> f64 {
        self.energy_kwh(c) * self.carbon_g_per_kwh / 1000.0
    }
}

impl Objective for Economics {
    fn score(&self, c: &Candidate) -> f64 {
        match self.optimize {
            Optimize::Time => c.train_time_s,
            Optimize::Cost => self.cost(c),
            // The product of hours and money: halving either is worth the same.
            Optimize::Balanced => c.train_time_s / 3600.0 * self.cost(c),
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

impl Rejection {
    /// `value` is not a multiple of `by`.
    fn indivisible(what: &'static str, value: impl Into<u64>, by: impl Into<u64>) -> Rejection {
        Rejection::Indivisible {
            what,
            value: value.into(),
            by: by.into(),
        }
    }

    /// The region a rejection belongs to.
    fn region(&self) -> Region {
        match self {
            Rejection::Indivisible { what, .. } => Region::Indivisible(what),
            Rejection::TensorBeyondNode { .. } => Region::TensorBeyondNode,
            Rejection::TooManyDevices { .. } => Region::TooManyDevices,
            Rejection::InterleaveNeedsMicroBatches { .. } => Region::InterleaveNeedsMicroBatches,
            Rejection::OutOfMemory { .. } => Region::OutOfMemory,
            Rejection::Unsupported { .. } => Region::Unsupported,
        }
    }

    /// How far from working (smaller is closer), to keep the most telling example per region.
    fn distance(&self) -> f64 {
        match self {
            Rejection::OutOfMemory {
                need_bytes,
                have_bytes,
            } => need_bytes - have_bytes,
            Rejection::TooManyDevices { need, have } => need.saturating_sub(*have) as f64,
            _ => 0.0,
        }
    }
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
    /// data 1..=devices, context 1..=seq_len, expert 1..=experts, virtual 1..=layers,
    /// micro-batch 1..=global batch, 4 ZeRO stages, 3 recompute modes).
    pub raw_space: f64,
    /// Layouts that passed divisibility and device-count rules and reached the memory check.
    pub enumerated: u64,
    /// Layouts costed by the cost model.
    pub evaluated: u64,
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

/// A stable key grouping rejections into regions. Regions are reported in the order of this
/// key, which is the alphabetical order of their names (`indivisible: heads % tensor`,
/// `interleave needs micro-batches`, `out of memory`, `tensor beyond node`, `too many devices`,
/// `unsupported`): keep the variants in that order. A fixed key, because the search rejects
/// thousands of layouts and a text key costs an allocation each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Region {
    Indivisible(&'static str),
    InterleaveNeedsMicroBatches,
    OutOfMemory,
    TensorBeyondNode,
    TooManyDevices,
    Unsupported,
}

/// Positive divisors of `n` in increasing order.
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

fn to_u32(values: Vec<u64>) -> Vec<u32> {
    values
        .into_iter()
        .filter_map(|v| u32::try_from(v).ok())
        .collect()
}

/// The values a layout field takes: the pinned one, else `auto` (which the caller may filter
/// further). Slices of precomputed lists, so the inner loops allocate nothing.
fn values<'a>(pin: Option<&'a u32>, auto: &'a [u32]) -> &'a [u32] {
    pin.map_or(auto, std::slice::from_ref)
}

struct Collector {
    rejected: BTreeMap<Region, RejectedRegion>,
    /// The out-of-memory region, kept apart because the search rejects most layouts it
    /// rejects at all for memory, thousands per search.
    out_of_memory: Option<RejectedRegion>,
}

impl Collector {
    /// Counts `layout` in the region of `reason` (memory: [`Collector::reject_memory`]).
    fn reject(&mut self, reason: Rejection, layout: Layout) {
        let entry = self
            .rejected
            .entry(reason.region())
            .or_insert_with(|| RejectedRegion {
                reason: reason.clone(),
                example: layout,
                count: 0,
            });
        entry.count += 1;
        if reason.distance() < entry.reason.distance() {
            entry.reason = reason;
            entry.example = layout;
        }
    }

    /// [`Collector::reject`] of [`Rejection::OutOfMemory`].
    fn reject_memory(&mut self, need_bytes: f64, have_bytes: f64, layout: Layout) {
        let reason = Rejection::OutOfMemory {
            need_bytes,
            have_bytes,
        };
        match &mut self.out_of_memory {
            Some(entry) => {
                entry.count += 1;
                if reason.distance() < entry.reason.distance() {
                    entry.reason = reason;
                    entry.example = layout;
                }
            }
            None => {
                self.out_of_memory = Some(RejectedRegion {
                    reason,
                    example: layout,
                    count: 1,
                });
            }
        }
    }

    /// Every region, in [`Region`] order.
    fn into_regions(self) -> Vec<RejectedRegion> {
        let mut rejected = self.rejected;
        if let Some(entry) = self.out_of_memory {
            rejected.insert(Region::OutOfMemory, entry);
        }
        rejected.into_values().collect()
    }
}

/// The search's state, and its two innermost loops (ZeRO stage, recomputation).
struct Ranker<'a> {
    setup: &'a TrainSetup,
    cluster: &'a ClusterFigures,
    objective: &'a dyn Objective,
    /// `None` when the device has no peak for the precision.
    costing: Option<Costing<'a>>,
    stages: StageCache,
    zeros: Vec<u8>,
    recomputes: Vec<Recompute>,
    have_bytes: f64,
    keep: usize,
    out: Collector,
    stats: SearchStats,
    ranked: Vec<(f64, Candidate)>,
    /// One candidate rewritten in place: most are scored and dropped, and a candidate is too
    /// big to copy for nothing.
    scratch: Candidate,
}

/// A layout with every field but ZeRO and recomputation chosen, and what its ZeRO stages share.
struct Shaped<'p> {
    probe: Layout,
    devices: u64,
    params: f64,
    /// Weights, gradients and optimizer bytes by entry of [`Ranker::zeros`].
    states: &'p [(f64, f64, f64); 4],
}

impl Ranker<'_> {
    /// Weights, gradients and optimizer bytes of `probe` under each ZeRO stage tried.
    fn states(&self, probe: &Layout, params: f64, per_layer: f64) -> [(f64, f64, f64); 4] {
        let mut states = [(0.0, 0.0, 0.0); 4];
        for (slot, &z) in states.iter_mut().zip(&self.zeros) {
            let layout_z = Layout { zero: z, ..*probe };
            *slot = state_bytes(self.setup, &layout_z, params, per_layer);
        }
        states
    }

    /// Tries every ZeRO stage of `shaped` with the least recomputation that fits, costs and
    /// ranks it. Breaks when the device cannot run the precision: the search ends there.
    fn zero_stages(
        &mut self,
        shaped: Shaped<'_>,
        activations: &StageActivations,
    ) -> ControlFlow<()> {
        self.stages.new_micro_batch();
        // The candidate's layout is rewritten field by field: copying whole layouts is a
        // noticeable share of the innermost loop.
        self.scratch.layout = shaped.probe;
        self.scratch.devices = shaped.devices;
        let devices = shaped.devices as f64;
        for (&z, &(weights, gradients, optimizer)) in self.zeros.iter().zip(shaped.states) {
            self.stats.enumerated += 1;
            let mut fitted = None;
            for &r in &self.recomputes {
                let memory = breakdown(weights, gradients, optimizer, activations.bytes(r));
                if memory.total <= self.have_bytes {
                    fitted = Some((r, memory));
                    break;
                }
                let layout = Layout {
                    zero: z,
                    recompute: r,
                    ..shaped.probe
                };
                self.out
                    .reject_memory(memory.total, self.have_bytes, layout);
            }
            let Some((r, memory)) = fitted else {
                continue;
            };
            let cand = &mut self.scratch;
            cand.layout.zero = z;
            cand.layout.recompute = r;
            self.stats.evaluated += 1;
            let Some(costing) = &self.costing else {
                let message = format!(
                    "`{}` has no {} peak",
                    self.cluster.device.id, self.setup.precision
                );
                self.out
                    .reject(Rejection::Unsupported { message }, cand.layout);
                return ControlFlow::Break(());
            };
            costing.step_cached(
                &mut self.stages,
                &cand.layout,
                shaped.params,
                memory,
                &mut cand.estimate,
            );
            set_totals(cand, self.setup, devices);
            let score = self.objective.score(cand);
            insert_ranked(&mut self.ranked, score, cand, self.keep);
        }
        ControlFlow::Continue(())
    }

    fn finish(self) -> SearchResult {
        let (scores, ranked) = self.ranked.into_iter().unzip();
        SearchResult {
            ranked,
            scores,
            rejected: self.out.into_regions(),
            stats: self.stats,
        }
    }
}

/// Searches the layouts of `spec` and ranks them by `objective`.
pub fn search(spec: &SearchSpec<'_>, objective: &dyn Objective) -> SearchResult {
    let model = spec.model;
    let setup = spec.setup;
    let cluster = spec.cluster;
    let pins = spec.pins;
    let dpn = cluster.devices_per_node.max(1);
    let max_devices = spec.max_devices.min(cluster.devices()).max(1);
    let batch = u64::from(setup.global_batch);
    let layers = u64::from(model.layers);
    let stats = SearchStats {
        raw_space: f64::from(dpn)
            * f64::from(model.layers)
            * max_devices as f64
            * f64::from(model.seq_len)
            * model.total_experts()
            * f64::from(model.layers)
            * f64::from(setup.global_batch)
            * 4.0
            * 3.0,
        ..SearchStats::default()
    };
    let base = Layout::single();
    let count = param_count(model);

    let batch_divisors = to_u32(divisors(batch));
    let layer_divisors = to_u32(divisors(layers));
    let expert_divisors: Vec<u32> = match model.arch {
        Arch::Dense => vec![1],
        Arch::Moe => to_u32(divisors(u64::from(model.experts))),
    };
    let tensors: Vec<u32> = match pins.tensor {
        Some(t) => vec![t],
        None => to_u32(divisors(u64::from(model.heads)))
            .into_iter()
            .filter(|t| *t <= dpn && model.kv_heads.is_multiple_of(*t))
            .collect(),
    };
    let contexts: Vec<u32> = match pins.context {
        Some(c) => vec![c],
        // Powers of two that leave each rank at least 1024 tokens in two balanced chunks.
        None => (0..8)
            .map(|i| 1u32 << i)
            .filter(|c| model.seq_len / c >= 1024)
            .collect(),
    };
    let pipelines: Vec<u32> = match pins.pipeline {
        Some(p) => vec![p],
        None => layer_divisors.clone(),
    };
    let zeros: Vec<u8> = match pins.zero {
        Some(z) => vec![z],
        None => vec![0, 1, 2, 3],
    };
    let recomputes: Vec<Recompute> = match pins.recompute {
        Some(r) => vec![r],
        None => vec![Recompute::None, Recompute::Selective, Recompute::Full],
    };

    let mut ranker = Ranker {
        setup,
        cluster,
        objective,
        // A device without the precision is reported at the first layout that fits in memory.
        costing: Costing::new(model, setup, cluster).ok(),
        stages: StageCache::default(),
        zeros,
        recomputes,
        have_bytes: usable_memory(&cluster.device),
        keep: spec.keep.max(1),
        out: Collector {
            rejected: BTreeMap::new(),
            out_of_memory: None,
        },
        stats,
        ranked: Vec::new(),
        scratch: Candidate {
            layout: base,
            devices: 0,
            estimate: StepEstimate::blank(),
            train_time_s: 0.0,
            device_hours: 0.0,
        },
    };
    for &t in &tensors {
        let probe = Layout { tensor: t, ..base };
        if t == 0 || !model.heads.is_multiple_of(t) {
            ranker.out.reject(
                Rejection::indivisible("heads % tensor", model.heads, t),
                probe,
            );
            continue;
        }
        if !model.kv_heads.is_multiple_of(t) {
            ranker.out.reject(
                Rejection::indivisible("kv_heads % tensor", model.kv_heads, t),
                probe,
            );
            continue;
        }
        if t > dpn {
            ranker.out.reject(
                Rejection::TensorBeyondNode {
                    tensor: t,
                    devices_per_node: dpn,
                },
                probe,
            );
            continue;
        }
        let sp = pins.sequence_parallel.unwrap_or(t > 1) && t > 1;
        let per_token = layer_bytes_per_token(
            model,
            setup.precision,
            &Layout {
                tensor: t,
                sequence_parallel: sp,
                ..base
            },
        );
        for &c in &contexts {
            let probe = Layout {
                tensor: t,
                context: c,
                ..base
            };
            if c == 0 || (c > 1 && !model.seq_len.is_multiple_of(2 * c)) {
                ranker.out.reject(
                    Rejection::indivisible("seq_len % (2 · context)", model.seq_len, 2 * c),
                    probe,
                );
                continue;
            }
            ranker.stages.new_tensor_context();
            for &p in &pipelines {
                let probe = Layout {
                    pipeline: p,
                    ..probe
                };
                if p == 0 || !layers.is_multiple_of(u64::from(p)) {
                    ranker.out.reject(
                        Rejection::indivisible("layers % pipeline", layers, p),
                        probe,
                    );
                    continue;
                }
                // Auto: the divisors of the stage's layers (1 without pipelining).
                let virtuals = match pins.virtual_stages.as_ref() {
                    Some(v) => std::slice::from_ref(v),
                    None if p == 1 => &[1][..],
                    None => &layer_divisors[..],
                };
                let stage_layers = layers / u64::from(p);
                let fixed = u64::from(t) * u64::from(c) * u64::from(p);
                // Auto: the divisors of the batch that fit in the devices.
                let datas = values(pins.data.as_ref(), &batch_divisors);
                for &v in virtuals {
                    if pins.virtual_stages.is_none() && !stage_layers.is_multiple_of(v.into()) {
                        continue;
                    }
                    let probe = Layout {
                        virtual_stages: v,
                        ..probe
                    };
                    if v == 0 || !layers.is_multiple_of(u64::from(p) * u64::from(v)) {
                        ranker.out.reject(
                            Rejection::indivisible(
                                "layers % (pipeline · virtual_stages)",
                                layers,
                                u64::from(p) * u64::from(v),
                            ),
                            probe,
                        );
                        continue;
                    }
                    for &d in datas {
                        if pins.data.is_none() && fixed * u64::from(d) > max_devices {
                            continue;
                        }
                        let probe = Layout { data: d, ..probe };
                        let devices = fixed * u64::from(d);
                        if devices > max_devices {
                            ranker.out.reject(
                                Rejection::TooManyDevices {
                                    need: devices,
                                    have: max_devices,
                                },
                                probe,
                            );
                            continue;
                        }
                        if d == 0 || !batch.is_multiple_of(u64::from(d)) {
                            ranker.out.reject(
                                Rejection::indivisible("global_batch % data", batch, d),
                                probe,
                            );
                            continue;
                        }
                        // Auto: divisors of the experts that divide the data degree (1 for
                        // dense models); the micro-batch: divisors of the per-rank batch.
                        let experts = values(pins.expert.as_ref(), &expert_divisors);
                        let per_rank = batch / u64::from(d);
                        let micro = values(pins.micro_batch.as_ref(), &batch_divisors);
                        for &e in experts {
                            if pins.expert.is_none() && !d.is_multiple_of(e) {
                                continue;
                            }
                            let probe = Layout { expert: e, ..probe };
                            if e == 0
                                || !d.is_multiple_of(e)
                                || !model.experts.max(1).is_multiple_of(e)
                            {
                                ranker.out.reject(
                                    Rejection::indivisible(
                                        "data % expert and experts % expert",
                                        d,
                                        e,
                                    ),
                                    probe,
                                );
                                continue;
                            }
                            let params = params_per_device_counted(model, &count, &probe);
                            ranker.stages.new_placement();
                            // The same for every micro-batch.
                            let states = ranker.states(&probe, params, count.per_layer);
                            for &b in micro {
                                if pins.micro_batch.is_none() && !per_rank.is_multiple_of(b.into())
                                {
                                    continue;
                                }
                                let probe = Layout {
                                    micro_batch: b,
                                    ..probe
                                };
                                let per_pipe = u64::from(d) * u64::from(b);
                                if b == 0 || !batch.is_multiple_of(per_pipe) {
                                    ranker.out.reject(
                                        Rejection::indivisible(
                                            "global_batch % (data · micro_batch)",
                                            batch,
                                            per_pipe,
                                        ),
                                        probe,
                                    );
                                    continue;
                                }
                                let m = batch / per_pipe;
                                if v > 1 && !m.is_multiple_of(u64::from(p)) {
                                    ranker.out.reject(
                                        Rejection::InterleaveNeedsMicroBatches {
                                            micro_batches: m,
                                            pipeline: p,
                                        },
                                        probe,
                                    );
                                    continue;
                                }
                                let probe = Layout {
                                    sequence_parallel: sp,
                                    ..probe
                                };
                                let activations =
                                    StageActivations::new(model, setup, &probe, per_token);
                                let shaped = Shaped {
                                    probe,
                                    devices,
                                    params,
                                    states: &states,
                                };
                                if ranker.zero_stages(shaped, &activations).is_break() {
                                    return ranker.finish();
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    ranker.finish()
}

/// Fills in the training time and device-hours of `cand` from its estimate; `devices` is
/// `cand.devices`.
fn set_totals(cand: &mut Candidate, setup: &TrainSetup, devices: f64) {
    let train_time_s = if cand.estimate.tokens_per_s > 0.0 {
        setup.tokens / cand.estimate.tokens_per_s
    } else {
        f64::INFINITY
    };
    cand.train_time_s = train_time_s;
    cand.device_hours = train_time_s / 3600.0 * devices;
}

/// Keeps the `keep` best by (score, layout field order).
fn insert_ranked(ranked: &mut Vec<(f64, Candidate)>, score: f64, cand: &Candidate, keep: usize) {
    let before = |s: &f64, c: &Candidate| {
        score
            .total_cmp(s)
            .then_with(|| cand.layout.cmp(&c.layout))
            .is_lt()
    };
    // Most candidates lose to the worst kept one; `ranked` is sorted, so that settles it.
    if ranked.len() >= keep && ranked.last().is_some_and(|(s, c)| !before(s, c)) {
        return;
    }
    let pos = ranked
        .iter()
        .position(|(s, c)| before(s, c))
        .unwrap_or(ranked.len());
    if pos < keep {
        ranked.insert(pos, (score, cand.clone()));
        ranked.truncate(keep);
    }
}

#[cfg(test)]
mod tests;
