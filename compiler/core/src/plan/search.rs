//! Homogeneous layout search: every tensor × pipeline × data × context × expert × virtual-stage
//! × micro-batch × ZeRO × recompute split of a job on one device type, pruned, costed, ranked.
//!
//! Auto fields enumerate only values that can work (divisors, powers of two); pinned fields are
//! checked and, when they cannot work, reported as a typed [`Rejection`] with numbers. Recompute
//! on auto takes the least recomputation that fits memory (more recomputation is never faster).
//! Ties are broken by the layout's field order, so results are identical everywhere.

use crate::cost::{CostError, StepEstimate, estimate, usable_memory};
use crate::hardware::ClusterFigures;
use crate::types::{Arch, Optimize, Recompute};
use crate::workload::{Layout, ModelDims, TrainSetup, memory_per_device};
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// A stable key grouping rejections into regions.
    fn region(&self) -> String {
        match self {
            Rejection::Indivisible { what, .. } => format!("indivisible: {what}"),
            Rejection::TensorBeyondNode { .. } => "tensor beyond node".into(),
            Rejection::TooManyDevices { .. } => "too many devices".into(),
            Rejection::InterleaveNeedsMicroBatches { .. } => {
                "interleave needs micro-batches".into()
            }
            Rejection::OutOfMemory { .. } => "out of memory".into(),
            Rejection::Unsupported { .. } => "unsupported".into(),
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

struct Collector {
    rejected: BTreeMap<String, RejectedRegion>,
}

impl Collector {
    fn reject(&mut self, reason: Rejection, layout: Layout, times: u64) {
        let entry = self
            .rejected
            .entry(reason.region())
            .or_insert_with(|| RejectedRegion {
                reason: reason.clone(),
                example: layout,
                count: 0,
            });
        entry.count += times;
        if reason.distance() < entry.reason.distance() {
            entry.reason = reason;
            entry.example = layout;
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
    let have_bytes = usable_memory(&cluster.device);
    let batch = u64::from(setup.global_batch);
    let layers = u64::from(model.layers);
    let mut out = Collector {
        rejected: BTreeMap::new(),
    };
    let mut stats = SearchStats {
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
        None => to_u32(divisors(layers)),
    };
    let zeros: Vec<u8> = match pins.zero {
        Some(z) => vec![z],
        None => vec![0, 1, 2, 3],
    };
    let recomputes: Vec<Recompute> = match pins.recompute {
        Some(r) => vec![r],
        None => vec![Recompute::None, Recompute::Selective, Recompute::Full],
    };

    let mut ranked: Vec<(f64, Candidate)> = Vec::new();
    for &t in &tensors {
        let probe = Layout { tensor: t, ..base };
        if t == 0 || !model.heads.is_multiple_of(t) {
            out.reject(
                Rejection::Indivisible {
                    what: "heads % tensor",
                    value: model.heads.into(),
                    by: t.into(),
                },
                probe,
                1,
            );
            continue;
        }
        if !model.kv_heads.is_multiple_of(t) {
            out.reject(
                Rejection::Indivisible {
                    what: "kv_heads % tensor",
                    value: model.kv_heads.into(),
                    by: t.into(),
                },
                probe,
                1,
            );
            continue;
        }
        if t > dpn {
            out.reject(
                Rejection::TensorBeyondNode {
                    tensor: t,
                    devices_per_node: dpn,
                },
                probe,
                1,
            );
            continue;
        }
        for &c in &contexts {
            let probe = Layout {
                tensor: t,
                context: c,
                ..base
            };
            if c == 0 || (c > 1 && !model.seq_len.is_multiple_of(2 * c)) {
                out.reject(
                    Rejection::Indivisible {
                        what: "seq_len % (2 · context)",
                        value: model.seq_len.into(),
                        by: (2 * c).into(),
                    },
                    probe,
                    1,
                );
                continue;
            }
            for &p in &pipelines {
                let probe = Layout {
                    pipeline: p,
                    ..probe
                };
                if p == 0 || !layers.is_multiple_of(u64::from(p)) {
                    out.reject(
                        Rejection::Indivisible {
                            what: "layers % pipeline",
                            value: layers,
                            by: p.into(),
                        },
                        probe,
                        1,
                    );
                    continue;
                }
                let virtuals: Vec<u32> = match pins.virtual_stages {
                    Some(v) => vec![v],
                    None if p == 1 => vec![1],
                    None => to_u32(divisors(layers / u64::from(p))),
                };
                let fixed = u64::from(t) * u64::from(c) * u64::from(p);
                let datas: Vec<u32> = match pins.data {
                    Some(d) => vec![d],
                    None => to_u32(divisors(batch))
                        .into_iter()
                        .filter(|d| fixed * u64::from(*d) <= max_devices)
                        .collect(),
                };
                for &v in &virtuals {
                    let probe = Layout {
                        virtual_stages: v,
                        ..probe
                    };
                    if v == 0 || !layers.is_multiple_of(u64::from(p) * u64::from(v)) {
                        out.reject(
                            Rejection::Indivisible {
                                what: "layers % (pipeline · virtual_stages)",
                                value: layers,
                                by: u64::from(p) * u64::from(v),
                            },
                            probe,
                            1,
                        );
                        continue;
                    }
                    for &d in &datas {
                        let probe = Layout { data: d, ..probe };
                        let devices = fixed * u64::from(d);
                        if devices > max_devices {
                            out.reject(
                                Rejection::TooManyDevices {
                                    need: devices,
                                    have: max_devices,
                                },
                                probe,
                                1,
                            );
                            continue;
                        }
                        if d == 0 || !batch.is_multiple_of(u64::from(d)) {
                            out.reject(
                                Rejection::Indivisible {
                                    what: "global_batch % data",
                                    value: batch,
                                    by: d.into(),
                                },
                                probe,
                                1,
                            );
                            continue;
                        }
                        let experts: Vec<u32> = match (pins.expert, model.arch) {
                            (Some(e), _) => vec![e],
                            (None, Arch::Dense) => vec![1],
                            (None, Arch::Moe) => to_u32(divisors(u64::from(model.experts)))
                                .into_iter()
                                .filter(|e| d.is_multiple_of(*e))
                                .collect(),
                        };
                        let micro: Vec<u32> = match pins.micro_batch {
                            Some(b) => vec![b],
                            None => to_u32(divisors(batch / u64::from(d))),
                        };
                        for &e in &experts {
                            let probe = Layout { expert: e, ..probe };
                            if e == 0
                                || !d.is_multiple_of(e)
                                || !model.experts.max(1).is_multiple_of(e)
                            {
                                out.reject(
                                    Rejection::Indivisible {
                                        what: "data % expert and experts % expert",
                                        value: d.into(),
                                        by: e.into(),
                                    },
                                    probe,
                                    1,
                                );
                                continue;
                            }
                            for &b in &micro {
                                let probe = Layout {
                                    micro_batch: b,
                                    ..probe
                                };
                                let per_pipe = u64::from(d) * u64::from(b);
                                if b == 0 || !batch.is_multiple_of(per_pipe) {
                                    out.reject(
                                        Rejection::Indivisible {
                                            what: "global_batch % (data · micro_batch)",
                                            value: batch,
                                            by: per_pipe,
                                        },
                                        probe,
                                        1,
                                    );
                                    continue;
                                }
                                let m = batch / per_pipe;
                                if v > 1 && !m.is_multiple_of(u64::from(p)) {
                                    out.reject(
                                        Rejection::InterleaveNeedsMicroBatches {
                                            micro_batches: m,
                                            pipeline: p,
                                        },
                                        probe,
                                        1,
                                    );
                                    continue;
                                }
                                let sp = pins.sequence_parallel.unwrap_or(t > 1) && t > 1;
                                for &z in &zeros {
                                    let layout_z = Layout {
                                        zero: z,
                                        sequence_parallel: sp,
                                        ..probe
                                    };
                                    stats.enumerated += 1;
                                    let mut fitted = None;
                                    for &r in &recomputes {
                                        let layout = Layout {
                                            recompute: r,
                                            ..layout_z
                                        };
                                        let need = memory_per_device(model, setup, &layout).total;
                                        if need <= have_bytes {
                                            fitted = Some(layout);
                                            break;
                                        }
                                        out.reject(
                                            Rejection::OutOfMemory {
                                                need_bytes: need,
                                                have_bytes,
                                            },
                                            layout,
                                            1,
                                        );
                                    }
                                    let Some(layout) = fitted else { continue };
                                    stats.evaluated += 1;
                                    match estimate(model, setup, &layout, cluster) {
                                        Ok(est) => {
                                            let cand =
                                                candidate(layout, devices, est, setup, model);
                                            let score = objective.score(&cand);
                                            insert_ranked(
                                                &mut ranked,
                                                score,
                                                cand,
                                                spec.keep.max(1),
                                            );
                                        }
                                        Err(CostError::UnsupportedPrecision { .. }) => {
                                            let message = format!(
                                                "`{}` has no {} peak",
                                                cluster.device.id, setup.precision
                                            );
                                            out.reject(
                                                Rejection::Unsupported { message },
                                                layout,
                                                1,
                                            );
                                            return finish(ranked, out, stats);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    finish(ranked, out, stats)
}

fn candidate(
    layout: Layout,
    devices: u64,
    estimate: StepEstimate,
    setup: &TrainSetup,
    model: &ModelDims,
) -> Candidate {
    let _ = model;
    let train_time_s = if estimate.tokens_per_s > 0.0 {
        setup.tokens / estimate.tokens_per_s
    } else {
        f64::INFINITY
    };
    Candidate {
        layout,
        devices,
        device_hours: train_time_s / 3600.0 * devices as f64,
        estimate,
        train_time_s,
    }
}

/// Keeps the `keep` best by (score, layout field order).
fn insert_ranked(ranked: &mut Vec<(f64, Candidate)>, score: f64, cand: Candidate, keep: usize) {
    let key = |s: f64, c: &Candidate| (s, c.layout);
    let pos = ranked
        .iter()
        .position(|(s, c)| {
            let (a, la) = key(score, &cand);
            let (b, lb) = key(*s, c);
            a.total_cmp(&b).then(la.cmp(&lb)).is_lt()
        })
        .unwrap_or(ranked.len());
    if pos < keep {
        ranked.insert(pos, (score, cand));
        ranked.truncate(keep);
    }
}

fn finish(ranked: Vec<(f64, Candidate)>, out: Collector, stats: SearchStats) -> SearchResult {
    let (scores, ranked) = ranked.into_iter().unzip();
    SearchResult {
        ranked,
        scores,
        rejected: out.rejected.into_values().collect(),
        stats,
    }
}

#[cfg(test)]
mod tests;
