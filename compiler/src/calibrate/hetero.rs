//! Calibration on published runs that mix device types or node shapes: each row is costed with
//! its own stage layout on the devices it names, and the whole job's predicted tokens/s is
//! compared with the measured one.
//!
//! A row's stages are timed with the heterogeneous pipeline planner's rules: every op on its
//! device by [`op_costs_of_layout`] (the single-type block and head model), the send to the next
//! stage and the gradient all-reduce by the collective model ([`p2p_time`],
//! [`collective_time`]), the reduction's overlap by [`exposed_reduction`], the memory by
//! [`stage_memory`], which picks the least recomputation that fits. Synchronous data parallelism
//! runs each stage at the pace of its slowest replica, and the step is the planner's pipeline
//! step ([`crate::cost::pipeline_step`]),
//! `max over stages k of ((m + p − 1) · sₖ + reduceₖ + optimizerₖ)` as in
//! `docs/heterogeneous.md`, under the fitted constants it is given ([`calibrate_hetero_with`]).
//! A row that cannot be costed says why (`not_costed`); nothing in a row fails the whole file.

use super::cells::{Cells, read_rows};
use super::hetero_row::{
    GpuMix, MARKER_COLUMNS, StageText, catalogue_id, parse_gpu_mix, parse_precision,
    parse_stage_layout, stated_bandwidth, stated_transport,
};
use super::{CALIBRATION_NETWORK_LATENCY_S, CalibrationError, ErrorStats, gpt_era_recipe};
use crate::cost::FittedConstants;
use crate::cost::ops::op_costs_of_layout;
use crate::cost::pipeline_step::{StageTimes, optimizer_seconds_per_param, slots, step_seconds};
use crate::cost::transport::Transport;
use crate::cost::{Collective, Group, collective_time, exposed_reduction, p2p_time, usable_memory};
use crate::hardware::{ClusterFigures, DeviceFigures};
use crate::workload::{
    Layout, ModelDims, OpGraph, OpKind, StageHolding, TrainSetup, op_graph, stage_memory,
};
use loam_ir::types::{Mlp, Optimizer, Recompute};
use serde::Serialize;

mod table;

pub use table::render_hetero_table;

/// Inter-node bandwidth assumed where a row states none, in Gb/s per node: gigabit Ethernet.
/// The one source that leaves it out, Sailor's MIT cluster, profiles its links in its artifact
/// (eth-easl/sailor, `sailor/providers/multizone_bandwidths_het.json`): 115 MB/s (0.92 Gb/s)
/// between the RTX 3090 nodes and the others, the link every pipeline through them crosses. Its
/// runs also record their gradient reduction next to the iteration time (`red_grads` in the
/// notes): 5.5, 7.2, 8.9, 21.6 and 22.6 s for 0.5 to 1.4 GB of fp32 gradients per node, the
/// order of a ring all-reduce at 1 Gb/s over TCP sockets (7.5, 10.1, 11.6 to 13.5, 28.3 and
/// 31.3 s in this model); at 10 Gb/s it would take a tenth of that.
pub const ASSUMED_NODE_NETWORK_GBPS: f64 = 1.0;

/// Inter-node bandwidth assumed where a row names InfiniBand without a figure, in Gb/s per node:
/// EDR, the slowest generation still sold.
pub const ASSUMED_INFINIBAND_GBPS: f64 = 100.0;

/// Vocabulary assumed for a GPT-style model whose row leaves `vocab` blank: GPT-2's BPE, which
/// Megatron-LM's GPT training scripts use.
pub const ASSUMED_GPT_VOCAB: u32 = 50_257;

/// Most blocks a row may have: the op chain has two ops per block, and a garbled cell must not
/// make the calibration build millions of them (published models have at most a few hundred).
const MAX_LAYERS: u32 = 10_000;

/// One stage as costed: its slowest replica's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeteroStageCost {
    /// First and last module it holds (0 the embedding, 1 to `layers` the blocks, `layers + 1`
    /// the head).
    pub modules: [u32; 2],
    /// Seconds per micro-batch of its slowest replica (ops, tensor collectives, the send on).
    pub seconds_per_micro_batch: f64,
    /// Catalogue id of that replica's device.
    pub slowest_device: String,
    /// Exposed gradient all-reduce over its replicas, seconds per step.
    pub reduction_s: f64,
    /// Optimizer step, seconds.
    pub optimizer_s: f64,
}

/// Predicted vs measured for one run of the heterogeneous file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeteroCalibrationRow {
    /// The row's `point_id`.
    pub point_id: String,
    /// `hetero`, `homo_baseline` or `node_net_hetero`, as the row says.
    pub role: String,
    /// The devices, by catalogue id where the names resolve (`8 RTX_3090 + 8 TITAN_RTX`), else
    /// `gpu_mix` as written.
    pub devices: String,
    /// The layout costed, one stage per `|`: its replicas and modules.
    pub layout: String,
    /// The recomputation costed: the least that fits every stage.
    pub recompute: Option<Recompute>,
    /// Whole-job tokens/s loam predicts (0 when not costed).
    pub predicted_tokens_per_s: f64,
    /// Whole-job tokens/s measured (`tokens_per_s`, else from the iteration time).
    pub measured_tokens_per_s: Option<f64>,
    /// Seconds per step loam predicts (0 when not costed).
    pub predicted_iter_time_s: f64,
    /// Seconds per step measured, where the row gives it.
    pub measured_iter_time_s: Option<f64>,
    /// `100 · (predicted − measured) / measured` tokens/s; `None` when not costed.
    pub error_pct: Option<f64>,
    /// Why the row could not be costed (`None` when it was).
    pub not_costed: Option<String>,
    /// What the costing assumed because the row does not say.
    pub assumptions: Vec<String>,
    /// Each stage's cost, first to last.
    pub stages: Vec<HeteroStageCost>,
}

/// The comparison over a whole heterogeneous-run file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeteroCalibrationReport {
    /// One entry per CSV row, in file order.
    pub rows: Vec<HeteroCalibrationRow>,
    /// Rows costed: the statistics are over these.
    pub costed_rows: usize,
    /// Rows not costed, each with its reason.
    pub not_costed_rows: usize,
    /// Median of `|error_pct|` (whole-job tokens/s).
    pub median_abs_error_pct: f64,
    /// Mean of `|error_pct|`.
    pub mean_abs_error_pct: f64,
    /// Share of costed rows with `|error_pct| ≤ 20`.
    pub within_20_pct_share: f64,
}

/// Whether a CSV header marks the heterogeneous-run kind (it has `point_id`, `gpu_mix` and
/// `stage_layout`).
pub(super) fn is_hetero_header(headers: &[String]) -> bool {
    MARKER_COLUMNS
        .iter()
        .all(|m| headers.iter().any(|h| h.trim() == *m))
}

/// Compares loam's predictions with every run of a heterogeneous-run CSV; `device_lookup` maps a
/// catalogue id to its figures. Only a CSV that cannot be read at all (or has no rows) is an
/// error; every row that cannot be costed is listed with its reason.
pub fn calibrate_hetero(
    csv_text: &str,
    device_lookup: impl Fn(&str) -> Option<DeviceFigures>,
) -> Result<HeteroCalibrationReport, CalibrationError> {
    calibrate_hetero_with(csv_text, device_lookup, FittedConstants::SHIPPED)
}

/// [`calibrate_hetero`] under the fitted constants `fitted` (a refit's, where
/// [`calibrate_hetero`] takes the shipped ones): every stage's ops, overlap and step read them.
pub(crate) fn calibrate_hetero_with(
    csv_text: &str,
    device_lookup: impl Fn(&str) -> Option<DeviceFigures>,
    fitted: FittedConstants,
) -> Result<HeteroCalibrationReport, CalibrationError> {
    let rows: Vec<HeteroCalibrationRow> = read_rows(csv_text)?
        .iter()
        .map(|cells| calibrate_row(cells, &device_lookup, fitted))
        .collect();
    if rows.is_empty() {
        return Err(CalibrationError::Empty);
    }
    let stats = ErrorStats::of(rows.iter().map(|r| r.error_pct));
    Ok(HeteroCalibrationReport {
        costed_rows: stats.costed,
        not_costed_rows: rows.len() - stats.costed,
        median_abs_error_pct: stats.median_abs,
        mean_abs_error_pct: stats.mean_abs,
        within_20_pct_share: stats.within_20_share,
        rows,
    })
}

/// One data-parallel replica of a stage, or one kind of them: a tensor-parallel group on nodes
/// of one shape.
#[derive(Debug, Clone)]
struct Replica {
    cluster: ClusterFigures,
    tensor: u32,
}

/// One stage to cost.
#[derive(Debug, Clone)]
struct Stage {
    modules: [u32; 2],
    /// Half-open range of op indices in the chain.
    ops: [usize; 2],
    replicas: Vec<Replica>,
}

/// A row read into what the costing needs.
#[derive(Debug, Clone)]
struct Costable {
    model: ModelDims,
    setup: TrainSetup,
    stages: Vec<Stage>,
    /// Data-parallel replicas of every stage.
    data: u32,
    micro_batch: u32,
}

/// One row's comparison, or the reason it has none.
fn calibrate_row(
    row: &Cells,
    lookup: &impl Fn(&str) -> Option<DeviceFigures>,
    fitted: FittedConstants,
) -> HeteroCalibrationRow {
    let mut assumptions = Vec::new();
    let mut out = HeteroCalibrationRow {
        point_id: row.text("point_id").to_string(),
        role: row.text("role").to_string(),
        devices: devices_text(row.text("gpu_mix")),
        layout: row.text("stage_layout").to_string(),
        recompute: None,
        predicted_tokens_per_s: 0.0,
        measured_tokens_per_s: measured_tokens_per_s(row),
        predicted_iter_time_s: 0.0,
        measured_iter_time_s: row.number("iter_time_s"),
        error_pct: None,
        not_costed: None,
        assumptions: Vec::new(),
        stages: Vec::new(),
    };
    let costed = read_costable(row, lookup, &mut assumptions, fitted).and_then(|c| {
        out.layout = layout_text(&c);
        cost(&c)
    });
    out.assumptions = assumptions;
    match costed {
        Err(reason) => out.not_costed = Some(reason),
        Ok(costed) => match out.measured_tokens_per_s {
            None => {
                out.not_costed =
                    Some("the row gives neither tokens/s, an iteration time nor samples/s".into());
            }
            // The training file's bound: a larger figure is a typo, not a measurement.
            Some(measured) if !(measured > 0.0 && measured <= super::MAX_MEASURED_TOKENS_PER_S) => {
                out.not_costed = Some(format!(
                    "measured {measured} tokens/s: not a throughput above 0 and at most {}",
                    loam_ir::display::thousands(super::MAX_MEASURED_TOKENS_PER_S)
                ));
            }
            Some(measured) => {
                out.recompute = Some(costed.recompute);
                out.predicted_iter_time_s = costed.step_s;
                out.predicted_tokens_per_s = costed.tokens_per_s;
                out.error_pct = Some(100.0 * (costed.tokens_per_s - measured) / measured);
                out.stages = costed.stages;
                if costed.recompute != Recompute::None {
                    out.assumptions.push(format!(
                        "recomputation not stated: {} is the least that fits",
                        costed.recompute.as_str()
                    ));
                }
            }
        },
    }
    out
}

/// The whole job's measured tokens/s: the `tokens_per_s` column, else tokens per step over the
/// iteration time, else samples/s times the sequence length.
fn measured_tokens_per_s(row: &Cells) -> Option<f64> {
    let seq_len = || row.count("seq_len").map(f64::from);
    row.number("tokens_per_s")
        .or_else(|| {
            let tokens = f64::from(row.count("global_batch")?) * seq_len()?;
            Some(tokens / row.number("iter_time_s")?)
        })
        .or_else(|| Some(row.number("samples_per_s")? * seq_len()?))
}

/// `gpu_mix` by catalogue ids where every name resolves, else as written.
fn devices_text(gpu_mix: &str) -> String {
    let Ok(mix) = parse_gpu_mix(gpu_mix) else {
        return gpu_mix.to_string();
    };
    let ids: Option<Vec<String>> = mix
        .devices
        .iter()
        .map(|(n, name)| catalogue_id(name).map(|id| format!("{n} {id}")))
        .collect();
    ids.map_or_else(|| gpu_mix.to_string(), |ids| ids.join(" + "))
}

/// The costed layout, one stage per `|`: `RTX_3090x8/RTX_2080x8 0-11`.
fn layout_text(c: &Costable) -> String {
    c.stages
        .iter()
        .map(|s| {
            let replicas: Vec<String> = s
                .replicas
                .iter()
                .map(|r| {
                    format!(
                        "{}x{}@{}",
                        r.cluster.device.id, r.tensor, r.cluster.devices_per_node
                    )
                })
                .collect();
            format!("{} {}-{}", replicas.join("/"), s.modules[0], s.modules[1])
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Reads the row; `Err` is the reason it cannot be costed.
fn read_costable(
    row: &Cells,
    lookup: &impl Fn(&str) -> Option<DeviceFigures>,
    assumptions: &mut Vec<String>,
    fitted: FittedConstants,
) -> Result<Costable, String> {
    let dims = ["layers", "hidden", "heads", "ffn", "seq_len"];
    let missing: Vec<&str> = dims
        .iter()
        .copied()
        .filter(|d| row.count(d).is_none())
        .collect();
    let layout_text = row.text("stage_layout");
    if !missing.is_empty() {
        let mut reason = format!("model dims blank or unreadable: {}", missing.join(", "));
        if let Some(layout) = unpublished_layout(layout_text) {
            reason.push_str("; ");
            reason.push_str(&layout);
        }
        return Err(reason);
    }
    let dim = |d: &str| row.count(d).unwrap_or(1);
    let (layers, hidden, heads, ffn, seq_len) = (
        dim("layers"),
        dim("hidden"),
        dim("heads"),
        dim("ffn"),
        dim("seq_len"),
    );
    if layers > MAX_LAYERS {
        return Err(format!(
            "{layers} layers: more than the {MAX_LAYERS} this calibration builds an op chain for"
        ));
    }
    // A head is at least one channel wide: more heads than channels describe no attention.
    if heads > hidden {
        return Err(format!(
            "{heads} heads over {hidden} channels: a head of no width"
        ));
    }
    let vocab = match row.count("vocab") {
        Some(v) => v,
        None if row.text("model").contains("GPT") => {
            assumptions.push(format!("vocab blank: GPT-2's {ASSUMED_GPT_VOCAB} assumed"));
            ASSUMED_GPT_VOCAB
        }
        None => return Err("vocab blank".into()),
    };
    let precision_text = row.text("precision");
    let (precision, likely) = parse_precision(precision_text).ok_or_else(|| {
        if precision_text.is_empty() {
            "precision not stated".to_string()
        } else {
            format!("precision `{precision_text}` does not read")
        }
    })?;
    if likely {
        assumptions.push(format!(
            "precision `{}` read as {}",
            precision_text.split('(').next().unwrap_or("").trim(),
            precision.as_str()
        ));
    }
    let global_batch = row
        .count("global_batch")
        .ok_or("global_batch blank or unreadable")?;
    let micro_batch = row
        .count("micro_batch")
        .ok_or("micro_batch blank or unreadable")?;
    if row.text("framework").contains("scheduler") {
        return Err(format!(
            "the stage placement was chosen by the framework's scheduler and is not published \
             (stage_layout: `{layout_text}`)"
        ));
    }
    let mix = parse_gpu_mix(row.text("gpu_mix")).map_err(|e| format!("gpu_mix: {e}"))?;
    let network_text = row.text("inter_node_network");
    let line_rate = match stated_bandwidth(network_text) {
        Some(bw) => bw,
        None => {
            let (what, gbps) = if network_text.contains("InfiniBand") {
                ("InfiniBand without a figure", ASSUMED_INFINIBAND_GBPS)
            } else {
                ("inter-node network not stated", ASSUMED_NODE_NETWORK_GBPS)
            };
            assumptions.push(format!("{what}: {gbps} Gb/s per node assumed"));
            gbps * 1e9 / 8.0
        }
    };
    let transport = stated_transport(network_text);
    if transport == Transport::Sockets {
        assumptions.push("no RDMA fabric named: NCCL over TCP sockets".into());
    }
    let network = transport.line_rate_in_model(line_rate);
    let device = |name: &str| -> Result<DeviceFigures, String> {
        let id = catalogue_id(name).unwrap_or(name);
        lookup(id).ok_or_else(|| format!("device `{name}` is not in the catalogue"))
    };
    let node = |figures: DeviceFigures, per_node: u32| ClusterFigures {
        devices_per_node: per_node.max(1),
        nodes: 1,
        node_network_bandwidth: network,
        nics_per_node: 1,
        network_latency_s: CALIBRATION_NETWORK_LATENCY_S,
        block: None,
        device: figures,
        fitted,
    };
    // Devices per node where the mix names no node shapes: the row's GPUs over its nodes.
    let even_nodes = match (row.count("num_gpus"), row.count("nodes")) {
        (Some(g), Some(n)) if g.is_multiple_of(n) => Some(g / n),
        _ => None,
    };
    let mut model = ModelDims::dense(layers, hidden, ffn, heads, heads, vocab, seq_len, Mlp::Gelu);
    model.dropout = gpt_era_recipe(Mlp::Gelu, 0, precision);
    // GPT-3 and OPT tie the head to the input embedding.
    model.tied_embeddings = true;
    let (stages, data) = if layout_text.starts_with("S0[") {
        let parsed = parse_stage_layout(layout_text, layers)
            .map_err(|e| format!("stage_layout garbled: {e}"))?;
        published_stages(&parsed, layers, &device, &node, even_nodes)?
    } else if layout_text.starts_with("uniform") {
        uniform_stages(row, &mix, layers, &device, &node, even_nodes, assumptions)?
    } else {
        return Err(unpublished_layout(layout_text).unwrap_or_default());
    };
    let devices: u32 = stages
        .iter()
        .map(|s| s.replicas.iter().map(|r| r.tensor).sum::<u32>())
        .sum();
    if let (Some(gpus), false) = (row.count("num_gpus"), layout_text.starts_with("uniform"))
        && gpus != devices
    {
        return Err(format!(
            "stage_layout places {devices} devices, num_gpus says {gpus}"
        ));
    }
    let setup = TrainSetup {
        global_batch,
        precision,
        optimizer: Optimizer::Adamw,
        tokens: 1e12,
        flash_attention: !model.dropout,
        expert_dispatch: Default::default(),
        expert_overlap: Default::default(),
        states: crate::workload::StateOverrides::NONE,
    };
    Ok(Costable {
        model,
        setup,
        stages,
        data,
        micro_batch,
    })
}

/// Why `stage_layout` gives nothing to cost, or `None` when it is a per-stage (`S0[…]`) or
/// uniform layout.
fn unpublished_layout(layout_text: &str) -> Option<String> {
    if layout_text.starts_with("S0[") || layout_text.starts_with("uniform") {
        None
    } else if layout_text.is_empty() {
        Some("no stage layout published".into())
    } else {
        Some(format!(
            "the stage layout is not published per stage: `{layout_text}`"
        ))
    }
}

/// Op indices `[first, end)` of modules `first..=last` (module 0 the embedding, module `b` block
/// `b − 1`, module `layers + 1` the final norm, the head and the loss).
fn op_range(modules: [u32; 2], layers: u32) -> [usize; 2] {
    let [first, last] = modules.map(|m| m as usize);
    let layers = layers as usize;
    let start = if first == 0 { 0 } else { 2 * first - 1 };
    let end = if last > layers {
        2 * layers + 4
    } else {
        2 * last + 1
    };
    [start, end]
}

/// The stages of a per-stage layout, each replica on nodes of its device count (or the row's
/// GPUs per node); every stage must have as many replicas as the others.
fn published_stages(
    parsed: &[StageText],
    layers: u32,
    device: &impl Fn(&str) -> Result<DeviceFigures, String>,
    node: &impl Fn(DeviceFigures, u32) -> ClusterFigures,
    even_nodes: Option<u32>,
) -> Result<(Vec<Stage>, u32), String> {
    let data = parsed.first().map_or(0, |s| s.replicas.len());
    let mut stages = Vec::with_capacity(parsed.len());
    for (k, s) in parsed.iter().enumerate() {
        if s.replicas.len() != data {
            return Err(format!(
                "stage_layout garbled: stage {k} has {} replicas, stage 0 has {data}",
                s.replicas.len()
            ));
        }
        let replicas = s
            .replicas
            .iter()
            .map(|r| {
                let per_node = even_nodes.unwrap_or(r.devices);
                Ok(Replica {
                    cluster: node(device(&r.device)?, per_node),
                    tensor: r.devices,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        stages.push(Stage {
            modules: s.modules,
            ops: op_range(s.modules, layers),
            replicas,
        });
    }
    Ok((stages, u32::try_from(data).unwrap_or(1)))
}

/// Megatron's uniform layout from the `tp pp dp` columns: `layers / pp` blocks per stage, the
/// embedding on the first and the head on the last, one device type. The replicas of every
/// stage sit on each node shape the mix names (DTFM: 4-GPU and 1-GPU instances); the slower
/// kind paces the stage.
fn uniform_stages(
    row: &Cells,
    mix: &GpuMix,
    layers: u32,
    device: &impl Fn(&str) -> Result<DeviceFigures, String>,
    node: &impl Fn(DeviceFigures, u32) -> ClusterFigures,
    even_nodes: Option<u32>,
    assumptions: &mut Vec<String>,
) -> Result<(Vec<Stage>, u32), String> {
    let (Some(tp), Some(pp), Some(dp)) = (row.count("tp"), row.count("pp"), row.count("dp")) else {
        return Err("a uniform layout needs the tp, pp and dp columns".into());
    };
    let [(_, name)] = mix.devices.as_slice() else {
        return Err(
            "a uniform layout over several device types does not say which runs where".into(),
        );
    };
    if !layers.is_multiple_of(pp) {
        return Err(format!(
            "a uniform split needs the {layers} blocks to divide over {pp} stages"
        ));
    }
    if let Some(gpus) = row.count("num_gpus")
        && u64::from(tp) * u64::from(pp) * u64::from(dp) != u64::from(gpus)
    {
        let product = u64::from(tp) * u64::from(pp) * u64::from(dp);
        return Err(format!("tp·pp·dp = {product} but num_gpus = {gpus}"));
    }
    let figures = device(name)?;
    let shapes: Vec<u32> = if mix.node_shapes.is_empty() {
        vec![even_nodes.unwrap_or(figures.devices_per_node)]
    } else {
        mix.node_shapes
            .iter()
            .map(|(_, per_node)| *per_node)
            .collect()
    };
    if shapes.len() > 1 {
        assumptions.push(format!(
            "replicas on every node shape ({} devices per node); the slowest paces each stage",
            shapes
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" and ")
        ));
    }
    let replicas: Vec<Replica> = shapes
        .iter()
        .map(|per_node| Replica {
            cluster: node(figures.clone(), *per_node),
            tensor: tp,
        })
        .collect();
    let per_stage = layers / pp;
    let stages = (0..pp)
        .map(|k| {
            let first = if k == 0 { 0 } else { 1 + k * per_stage };
            let last = if k + 1 == pp {
                layers + 1
            } else {
                (k + 1) * per_stage
            };
            Stage {
                modules: [first, last],
                ops: op_range([first, last], layers),
                replicas: replicas.clone(),
            }
        })
        .collect();
    Ok((stages, dp))
}

/// What costing a row gives.
struct Costed {
    step_s: f64,
    tokens_per_s: f64,
    recompute: Recompute,
    stages: Vec<HeteroStageCost>,
}

/// The least recomputation under which every replica of every stage fits its device.
fn fitting_recompute(c: &Costable, graph: &OpGraph, m: f64) -> Result<Recompute, String> {
    let p = c.stages.len() as u32;
    let mut worst = String::new();
    for mode in [Recompute::None, Recompute::Selective, Recompute::Full] {
        let mut fits = true;
        for (k, stage) in c.stages.iter().enumerate() {
            let holding = holding(graph, stage, c.layout(1, p, mode).in_flight(k as u32, m));
            for r in &stage.replicas {
                let layout = c.layout(r.tensor, p, mode);
                let need = stage_memory(&c.model, &c.setup, &layout, &holding).total;
                let usable = usable_memory(&r.cluster.device);
                if need > usable {
                    fits = false;
                    worst = format!(
                        "stage {k} on {} needs {:.1} GiB under {} recomputation, {:.1} GiB usable",
                        r.cluster.device.id,
                        need / loam_ir::units::GIB,
                        mode.as_str(),
                        usable / loam_ir::units::GIB
                    );
                }
            }
        }
        if fits {
            return Ok(mode);
        }
    }
    Err(format!("no recomputation fits: {worst}"))
}

impl Costable {
    /// A replica's layout as the single-type memory and op models read it. Neither source turns
    /// on sequence parallelism (Megatron-DeepSpeed and 2022 Megatron-LM leave it off).
    fn layout(&self, tensor: u32, pipeline: u32, recompute: Recompute) -> Layout {
        Layout {
            tensor,
            pipeline,
            data: self.data,
            micro_batch: self.micro_batch,
            recompute,
            sequence_parallel: false,
            ..Layout::single()
        }
    }
}

/// What a stage holds, for the memory function.
fn holding(graph: &OpGraph, stage: &Stage, in_flight: f64) -> StageHolding {
    let [i, j] = stage.ops;
    let kinds: Vec<OpKind> = graph.ops().skip(i).take(j - i).map(|o| o.kind).collect();
    StageHolding {
        blocks: kinds.iter().filter(|k| **k == OpKind::Attention).count() as f64,
        embedding: kinds.contains(&OpKind::Embedding),
        head: kinds.contains(&OpKind::LmHead),
        in_flight,
    }
}

/// Costs a read row: every replica of every stage, each stage at its slowest replica's pace.
fn cost(c: &Costable) -> Result<Costed, String> {
    let graph = op_graph(&c.model, &[]);
    let p = c.stages.len();
    let m = f64::from(c.setup.global_batch) / (f64::from(c.data) * f64::from(c.micro_batch));
    let recompute = fitting_recompute(c, &graph, m)?;
    let elt = c.setup.precision.bytes();
    let activation =
        f64::from(c.micro_batch) * f64::from(c.model.seq_len) * f64::from(c.model.hidden) * elt;
    let params: Vec<f64> = graph.ops().map(|o| o.params).collect();
    let slots = slots(m, p);
    // Megatron orders ranks tensor, data, pipeline: pipeline neighbours are `t·d` ranks apart,
    // data-parallel ones `t`.
    let pipeline_stride = |r: &Replica| f64::from(r.tensor) * f64::from(c.data);
    let send = |r: &Replica| {
        p2p_time(
            activation / f64::from(r.tensor.max(1)),
            pipeline_stride(r),
            &r.cluster,
        )
    };
    let mut times = Vec::with_capacity(p);
    let mut stages = Vec::with_capacity(p);
    for (k, stage) in c.stages.iter().enumerate() {
        let [i, j] = stage.ops;
        let ops = (j - i).max(1) as f64;
        let stage_params: f64 = params.get(i..j).unwrap_or(&[]).iter().sum();
        // Both ends of the link to the next stage: the slower one paces the send.
        let next_send = c
            .stages
            .get(k + 1)
            .map(|next| next.replicas.iter().map(send).fold(0.0, f64::max));
        let mut slowest = (f64::NEG_INFINITY, String::new());
        let (mut reduce, mut backward, mut optimizer): (f64, f64, f64) = (0.0, 0.0, 0.0);
        for r in &stage.replicas {
            let layout = c.layout(r.tensor, p as u32, recompute);
            let costs = op_costs_of_layout(&graph, &c.model, &c.setup, &r.cluster, &layout);
            let costs = costs.get(i..j).unwrap_or(&[]);
            if costs.iter().any(|o| !o.hostable) {
                return Err(format!(
                    "{} does not run {}",
                    r.cluster.device.id,
                    c.setup.precision.as_str()
                ));
            }
            let t = f64::from(r.tensor.max(1));
            let compute: f64 = costs.iter().map(|o| o.seconds).sum();
            backward = backward.max(costs.iter().map(|o| o.backward).sum());
            let sends = next_send.map_or(0.0, |next| 2.0 * send(r).max(next));
            let seconds = compute + sends;
            if seconds > slowest.0 {
                slowest = (seconds, r.cluster.device.id.clone());
            }
            let group = Group {
                size: f64::from(c.data),
                stride: t,
            };
            reduce = reduce.max(collective_time(
                Collective::AllReduce,
                stage_params / t * elt,
                group,
                &r.cluster,
            ));
            optimizer = optimizer.max(
                stage_params
                    * optimizer_seconds_per_param(elt, t, 1.0, r.cluster.device.memory_bandwidth),
            );
        }
        // The all-reduce runs at the pace of its slowest member and hides under the longest
        // backward, which the replicas that finish earlier wait out.
        let contention = stage
            .replicas
            .first()
            .map_or(0.0, |r| r.cluster.fitted.overlap_contention);
        let reduction = exposed_reduction(reduce, backward, ops, contention);
        let (seconds, slowest_device) = slowest;
        times.push(StageTimes {
            seconds,
            reduce: reduction,
            optimizer,
        });
        stages.push(HeteroStageCost {
            modules: stage.modules,
            seconds_per_micro_batch: seconds,
            slowest_device,
            reduction_s: reduction,
            optimizer_s: optimizer,
        });
    }
    let step = step_seconds(slots, &times).map_or(0.0, |(step, _)| step);
    if !step.is_finite() || step <= 0.0 {
        return Err("the layout has no stage to cost".into());
    }
    let tokens = f64::from(c.setup.global_batch) * f64::from(c.model.seq_len);
    Ok(Costed {
        step_s: step,
        tokens_per_s: tokens / step,
        recompute,
        stages,
    })
}

#[cfg(test)]
mod tests;
