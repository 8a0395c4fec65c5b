//! The calibration harness: predicted vs measured throughput of published training runs.
//!
//! Reads any CSV with the columns of `tests/data/training_runs_calibration.csv`, builds a
//! homogeneous cluster of each row's device and NIC bandwidth, plans the row with its published
//! layout pinned (blank `micro_batch` / `recompute` are left to the search), and compares the
//! predicted tokens/s per device with the measured one. Each row is also planned with every
//! layout field on auto, to check that loam's own choice is predicted at least as fast.
//!
//! A CSV with the columns of `tests/data/hetero_runs_calibration.csv` (runs that mix device
//! types or node shapes) is the other kind ([`csv_kind`]); [`calibrate_hetero`] costs each of
//! its rows with its published stage layout.

mod cells;
mod cross;
mod csv_errors;
pub mod fit;
mod hetero;
mod hetero_row;
mod moe_stack;
mod regime;
mod row;
mod serving;
mod serving_row;
mod serving_table;
#[cfg(test)]
mod serving_tests;
pub mod site;
mod stack_defaults;
mod table;

pub use cross::{
    CrossValidation, FamilyFold, cross_validate, cross_validate_hetero, render_cross_validation,
};
pub use hetero::{
    ASSUMED_GPT_VOCAB, ASSUMED_INFINIBAND_GBPS, ASSUMED_NODE_NETWORK_GBPS, HeteroCalibrationReport,
    HeteroCalibrationRow, HeteroStageCost, calibrate_hetero, render_hetero_table,
};
pub use regime::{
    Dimension, RegimeStats, ServingRegimes, hetero_regimes, render_regimes, render_serving_regimes,
    serving_regimes, training_regimes,
};
pub use serving::{
    ASSUMED_SCALE_OUT_BANDWIDTH, ServingCalibrationReport, ServingCalibrationRow,
    ServingCrossValidation, ServingFold, ServingMetric, ServingMetrics, ThroughputBasis,
    calibrate_serving, calibrate_serving_with, cross_validate_serving, fit_serving,
};
pub use serving_row::{mlp_of_weights, stored_serving_model_differs};
pub use serving_table::{render_serving_cross_validation, render_serving_table};
pub use table::render_table;

use row::{NotedArchitecture, PublishedSplit, Row, noted_architecture};

use crate::check::{MAX_DIM, MAX_LAYERS};
use crate::cost::FittedConstants;
use crate::hardware::{ClusterFigures, DeviceFigures};
use crate::plan::search::{Candidate, Rejection, SearchSpec, search};
use crate::workload::{ExpertDispatch, ExpertOverlap, Layout, ModelDims, TrainSetup};
use crate::workload::{Pins, StageSplit};
use loam_ir::types::{Arch, Mlp, Optimizer, Precision, Recompute, SplitRule};
use serde::Serialize;

/// Physical: one-way latency between nodes assumed for calibration clusters (InfiniBand / RoCE switch
/// hop plus NIC, as nccl-tests small messages show).
pub const CALIBRATION_NETWORK_LATENCY_S: f64 = 5e-6;

/// Physical: the most tokens/s per device a calibration row may claim. The fastest published
/// runs measure tens of thousands; a billion would need about 10^16 FLOP/s of model compute on
/// even a 1B-parameter model, above every device's dense peak, so a larger figure (or `inf`) is a
/// typo, not a measurement.
pub const MAX_MEASURED_TOKENS_PER_S: f64 = 1e9;

/// Physical: the most scale-out bandwidth per node a calibration row may state, in Gbps: 1 Pbps,
/// over a hundred times the fastest nodes' NICs together (8 × 800 Gbps).
pub const MAX_NIC_GBPS: f64 = 1e6;

/// Predicted vs measured for one published run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationRow {
    /// The run's id.
    pub run_id: String,
    /// loam's prediction with the published layout (0 when the row is not costed).
    pub predicted_tokens_per_s_per_device: f64,
    /// What the run measured.
    pub measured_tokens_per_s_per_device: f64,
    /// The precision the run trained in.
    pub precision: Precision,
    /// The measured throughput as model TFLOP/s per device, in loam's MFU convention (measured
    /// tokens/s per device × the model's FLOPs per token, attention included, no
    /// recomputation); what a device's `best_published` figure is taken from. `None` when the
    /// row's model cannot be built.
    pub measured_model_tflops_per_device: Option<f64>,
    /// `100 · (predicted − measured) / measured`; `None` when the row is not costed.
    pub error_pct: Option<f64>,
    /// Why the row could not be costed with its published layout (`None` when it was).
    pub not_costed: Option<String>,
    /// Device id.
    pub device: String,
    /// Devices used.
    pub devices: u32,
    /// The layout costed (published fields plus the search's micro-batch / recompute choice).
    pub layout: Option<Layout>,
    /// Predicted model FLOPs utilisation of that layout.
    pub mfu: f64,
    /// Predicted tokens/s per device of loam's own layout on the same devices.
    pub auto_tokens_per_s_per_device: f64,
    /// loam's own layout.
    pub auto_layout: Option<Layout>,
    /// Whether loam's own layout is predicted at least as fast (whole-job tokens/s).
    pub auto_at_least_as_fast: bool,
    /// The blank layout fields taken from the row's software stack's defaults, in a sentence
    /// (`None` when the search chose them or the row states them).
    pub stack_defaults: Option<String>,
    /// How the row's stack sent its MoE tokens (dispatch and routing), in a sentence, when its
    /// source documents it (`None` for dense models and sources that do not say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_stack: Option<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    /// One entry per CSV row, in file order.
    pub rows: Vec<CalibrationRow>,
    /// Rows costed with their published layout: the statistics below are over these.
    pub costed_rows: usize,
    /// Rows that could not be costed, each with its reason in `not_costed`.
    pub not_costed_rows: usize,
    /// Median of `|error_pct|`.
    pub median_abs_error_pct: f64,
    /// Mean of `|error_pct|`.
    pub mean_abs_error_pct: f64,
    /// Share of rows with `|error_pct| ≤ 20`.
    pub within_20_pct_share: f64,
}

impl CalibrationReport {
    /// Mean signed error in percent (positive: loam predicts faster than measured).
    pub fn mean_signed_error_pct(&self) -> f64 {
        mean(self.errors())
    }

    /// Share of costed rows predicted faster than measured.
    pub fn over_prediction_share(&self) -> f64 {
        let n = self.costed_rows.max(1) as f64;
        self.errors().filter(|e| *e > 0.0).count() as f64 / n
    }

    /// The signed errors of the costed rows, in file order.
    pub fn errors(&self) -> impl Iterator<Item = f64> + '_ {
        self.rows.iter().filter_map(|r| r.error_pct)
    }
}

/// Why the CSV could not be calibrated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    /// The CSV is malformed or a value does not parse.
    #[error("line {line}: column `{column}`: {message}")]
    BadRow {
        /// 1-based line in the CSV text.
        line: u64,
        /// Column name (or `?` when unknown).
        column: String,
        /// What went wrong.
        message: String,
    },
    /// A line that cannot be read as a row at all (a wrong number of fields).
    #[error("line {line}: {message}")]
    BadLine {
        /// 1-based line in the CSV text.
        line: u64,
        /// What went wrong.
        message: String,
    },
    /// No data rows.
    #[error("the calibration CSV has no rows")]
    Empty,
}

/// Which calibration a CSV is for, by its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvKind {
    /// Published homogeneous training runs (`training_runs_calibration.csv`'s columns).
    Training,
    /// Runs that mix device types or node shapes (`hetero_runs_calibration.csv`'s columns:
    /// `point_id`, `gpu_mix` and `stage_layout` among them).
    Hetero,
    /// Published serving runs (`inference_runs_calibration.csv`'s columns: `scenario`,
    /// `engine`, `ttft_ms` and `out_tok_s_total` among them).
    Serving,
}

/// The kind of calibration CSV `csv_text` is; anything without the heterogeneous file's marker
/// columns is read as the training kind (which reports a header it cannot read).
pub fn csv_kind(csv_text: &str) -> CsvKind {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(csv_text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .map(|h| h.iter().map(str::to_string).collect())
        .unwrap_or_default();
    let has = |column: &str| headers.iter().any(|h| h == column);
    if hetero::is_hetero_header(&headers) {
        CsvKind::Hetero
    } else if serving::is_serving(&headers)
        || (!has("measured_tokens_per_s_per_device") && serving::has_serving_marker(&headers))
    {
        // A serving file missing one of its marker columns (`ttft_ms`) is still a serving file:
        // its reader names the missing column, where the training reader named `mlp`.
        CsvKind::Serving
    } else {
        CsvKind::Training
    }
}

/// Whether a published run with this MLP, ZeRO stage and precision trained with the GPT-3-era
/// Megatron recipe: dropout, and attention probabilities materialised to apply it. The CSVs name
/// no kernels, so 16-bit GeLU runs without weight sharding are read as Megatron GPT-3-era runs;
/// FSDP / ZeRO-3 stacks and Llama-class recipes use fused flash attention without dropout, and
/// FP8 only exists on Transformer Engine-era stacks, whose GPT recipes do too.
fn gpt_era_recipe(mlp: Mlp, zero: u8, precision: Precision) -> bool {
    mlp == Mlp::Gelu && zero < 3 && precision != Precision::Fp8
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    let hi = values.get(n / 2).copied().unwrap_or(0.0);
    if !n.is_multiple_of(2) {
        hi
    } else {
        let lo = values.get(n / 2 - 1).copied().unwrap_or(hi);
        (lo + hi) / 2.0
    }
}

fn bad(line: u64, column: &str, message: impl Into<String>) -> CalibrationError {
    CalibrationError::BadRow {
        line,
        column: column.to_string(),
        message: message.into(),
    }
}

/// Compares loam's predictions with every run in `csv_text`; `device_lookup` maps a device id
/// to its datasheet figures (the CLI passes the catalogue's).
pub fn calibrate(
    csv_text: &str,
    device_lookup: impl Fn(&str) -> Option<DeviceFigures>,
) -> Result<CalibrationReport, CalibrationError> {
    let (report, _) = calibrate_prepared(csv_text, &device_lookup)?;
    Ok(report)
}

/// A costed row kept for refitting: everything its prediction depends on but the fitted
/// constants, which [`cross_validate`] varies.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// The run's id.
    pub run_id: String,
    /// The run's source family (the `run_id` up to its first `_`).
    pub family: String,
    pub model: ModelDims,
    pub setup: TrainSetup,
    pub cluster: ClusterFigures,
    /// The layout costed with the shipped constants.
    pub layout: Layout,
    pub measured: f64,
}

/// [`calibrate`], also returning every costed row ready to re-cost.
pub(crate) fn calibrate_prepared(
    csv_text: &str,
    device_lookup: &impl Fn(&str) -> Option<DeviceFigures>,
) -> Result<(CalibrationReport, Vec<Prepared>), CalibrationError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(csv_text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| csv_errors::describe(&e, &[]))?
        .iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    let mut rows = Vec::new();
    for result in reader.deserialize::<Row>() {
        let row = result.map_err(|e| csv_errors::describe(&e, &headers))?;
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(CalibrationError::Empty);
    }
    let mut out = Vec::new();
    let mut prepared = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let (result, ready) = calibrate_row(row, i as u64 + 2, device_lookup)?;
        out.push(result);
        prepared.extend(ready);
    }
    Ok((summarise(out), prepared))
}

/// The statistics both kinds of report give over their costed rows.
pub(crate) struct ErrorStats {
    pub costed: usize,
    pub median_abs: f64,
    pub mean_abs: f64,
    pub within_20_share: f64,
}

impl ErrorStats {
    /// The statistics of the signed errors in percent (`None` for a row not costed).
    pub(crate) fn of(errors: impl Iterator<Item = Option<f64>>) -> ErrorStats {
        let abs: Vec<f64> = errors.flatten().map(f64::abs).collect();
        let costed = abs.len();
        let within = abs.iter().filter(|e| **e <= 20.0).count() as f64 / costed.max(1) as f64;
        ErrorStats {
            costed,
            median_abs: median(abs.clone()),
            mean_abs: mean(abs.into_iter()),
            within_20_share: within,
        }
    }
}

/// The report of `rows`: the statistics over the costed ones.
fn summarise(rows: Vec<CalibrationRow>) -> CalibrationReport {
    let stats = ErrorStats::of(rows.iter().map(|r| r.error_pct));
    CalibrationReport {
        costed_rows: stats.costed,
        not_costed_rows: rows.len() - stats.costed,
        median_abs_error_pct: stats.median_abs,
        mean_abs_error_pct: stats.mean_abs,
        within_20_pct_share: stats.within_20_share,
        rows,
    }
}

/// A published run read from its row: the keywords parsed, the notes read.
struct Published {
    mlp: Mlp,
    precision: Precision,
    recompute: Option<Recompute>,
    split: PublishedSplit,
    noted: NotedArchitecture,
}

/// Parses the row's keyword columns; a value the file's README does not define is a bad row.
fn read_published(row: &Row, line: u64) -> Result<Published, CalibrationError> {
    let mlp = Mlp::from_keyword(&row.mlp).ok_or_else(|| {
        bad(
            line,
            "mlp",
            format!("expected one of {:?}", Mlp::keywords()),
        )
    })?;
    let precision = Precision::from_keyword(&row.precision).ok_or_else(|| {
        bad(
            line,
            "precision",
            format!("expected one of {:?}", Precision::keywords()),
        )
    })?;
    let recompute = match row.recompute.as_deref() {
        None | Some("") => None,
        Some(text) => Some(Recompute::from_keyword(text).ok_or_else(|| {
            bad(
                line,
                "recompute",
                format!("expected one of {:?}", Recompute::keywords()),
            )
        })?),
    };
    if row.zero > 3 {
        return Err(bad(line, "zero", "expected 0, 1, 2 or 3"));
    }
    if row.devices == 0 {
        return Err(bad(
            line,
            "devices",
            "expected a device count of at least 1",
        ));
    }
    // NaN passes `<= 0`, so the range is tested for what it must be (finite, positive, bounded).
    let measured = row.measured_tokens_per_s_per_device;
    if !(measured > 0.0 && measured <= MAX_MEASURED_TOKENS_PER_S) {
        return Err(bad(
            line,
            "measured_tokens_per_s_per_device",
            format!(
                "expected a throughput above 0 and at most {} tokens/s per device, found `{measured}`",
                loam_ir::display::thousands(MAX_MEASURED_TOKENS_PER_S)
            ),
        ));
    }
    let nic = row.node_nic_gbps;
    if nic.is_nan() || nic > MAX_NIC_GBPS {
        return Err(bad(
            line,
            "node_nic_gbps",
            format!(
                "expected a bandwidth of at most {} Gbps per node, found `{nic}`",
                loam_ir::display::thousands(MAX_NIC_GBPS)
            ),
        ));
    }
    // The spec checker's bounds: a row beyond them describes no job loam would plan, and
    // costing it would allocate per block and per pipeline chunk (4 × 10⁹ layers took 24 GB).
    if u64::from(row.layers) > MAX_LAYERS {
        return Err(bad(
            line,
            "layers",
            format!("expected at most {MAX_LAYERS} layers"),
        ));
    }
    let counts = [
        ("hidden", Some(row.hidden)),
        ("heads", Some(row.heads)),
        ("kv_heads", Some(row.kv_heads)),
        ("ffn", Some(row.ffn)),
        ("vocab", Some(row.vocab)),
        ("seq_len", Some(row.seq_len)),
        ("devices", Some(row.devices)),
        ("tp", Some(row.tp)),
        ("pp", Some(row.pp)),
        ("dp", Some(row.dp)),
        ("cp", Some(row.cp)),
        ("vpp", Some(row.vpp)),
        ("micro_batch", row.micro_batch),
        ("global_batch", Some(row.global_batch)),
        ("ep", row.ep),
        ("experts", row.experts),
        ("top_k", row.top_k),
        ("expert_ffn", row.expert_ffn),
        ("shared_experts", row.shared_experts),
        ("dense_layers", row.dense_layers),
        ("dense_ffn", row.dense_ffn),
        ("expert_groups", row.expert_groups),
        ("groups_per_token", row.groups_per_token),
        ("head_dim", row.head_dim),
        ("sliding_window", row.sliding_window),
        ("global_every", row.global_every),
        ("q_lora_rank", row.q_lora_rank),
        ("kv_lora_rank", row.kv_lora_rank),
        ("qk_nope_head_dim", row.qk_nope_head_dim),
        ("qk_rope_head_dim", row.qk_rope_head_dim),
        ("v_head_dim", row.v_head_dim),
    ];
    if let Some((column, _)) = counts
        .iter()
        .find(|(_, value)| value.is_some_and(|v| u64::from(v) > MAX_DIM))
    {
        return Err(bad(
            line,
            column,
            format!(
                "expected at most {}",
                loam_ir::display::thousands(MAX_DIM as f64)
            ),
        ));
    }
    let split = PublishedSplit::parse(row.pipeline_split.as_deref()).ok_or_else(|| {
        bad(
            line,
            "pipeline_split",
            "expected `even`, `embedding_and_loss_count_as_layers`, `uneven_unstated` or blank",
        )
    })?;
    let noted = noted_architecture(row.notes.as_deref().unwrap_or(""))
        .map_err(|m| bad(line, "notes", m))?;
    let noted = row
        .stated_architecture(noted)
        .map_err(|(c, m)| bad(line, c, m))?;
    Ok(Published {
        mlp,
        precision,
        recompute,
        split,
        noted,
    })
}

/// A row listed with the reason it could not be costed.
fn not_costed(
    row: &Row,
    published: &Published,
    model: Option<&ModelDims>,
    reason: String,
) -> CalibrationRow {
    CalibrationRow {
        run_id: row.run_id.clone(),
        predicted_tokens_per_s_per_device: 0.0,
        measured_tokens_per_s_per_device: row.measured_tokens_per_s_per_device,
        precision: published.precision,
        measured_model_tflops_per_device: model.map(|m| measured_model_tflops(row, m)),
        error_pct: None,
        not_costed: Some(reason),
        device: row.device.clone(),
        devices: row.devices,
        layout: None,
        mfu: 0.0,
        auto_tokens_per_s_per_device: 0.0,
        auto_layout: None,
        auto_at_least_as_fast: false,
        stack_defaults: None,
        moe_stack: None,
    }
}

/// The model the row describes, trained with the recipe [`gpt_era_recipe`] infers.
fn published_model(row: &Row, published: &Published) -> Result<ModelDims, String> {
    let dims = [
        ("layers", row.layers),
        ("hidden", row.hidden),
        ("heads", row.heads),
        ("kv_heads", row.kv_heads),
        ("ffn", row.ffn),
        ("vocab", row.vocab),
        ("seq_len", row.seq_len),
    ];
    if let Some((column, _)) = dims.iter().find(|(_, value)| *value == 0) {
        return Err(format!("`{column}` is 0: the row describes no model"));
    }
    let mut model = ModelDims::dense(
        row.layers,
        row.hidden,
        row.ffn,
        row.heads,
        row.kv_heads,
        row.vocab,
        row.seq_len,
        published.mlp,
    );
    model.dropout = gpt_era_recipe(published.mlp, row.zero, published.precision);
    let noted = published.noted;
    if let Some(experts) = row.experts.filter(|e| *e > 1) {
        let top_k = row.top_k.ok_or("a MoE row needs `top_k`")?;
        model = model.with_experts(experts, top_k);
        model.expert_ffn = row.expert_ffn;
        model.shared_experts = row.shared_experts.unwrap_or(0);
        model.dense_layers = row.dense_layers.unwrap_or(0);
        if model.dense_layers > 0 {
            // The dense first blocks run `dense_ffn`; `ffn` is their size in the model block.
            model.ffn = row.dense_ffn.unwrap_or(row.ffn);
        }
    }
    if let Some(head_dim) = noted.head_dim {
        model = model.with_head_dim(head_dim);
    }
    if let Some(mla) = noted.mla {
        model = model.with_mla(mla);
    }
    model.sliding_window = noted.sliding_window;
    model.global_every = noted.global_every;
    model.tied_embeddings = row.tie_embeddings.unwrap_or(false);
    if model.arch == Arch::Moe {
        model.capacity_factor = row.capacity_factor;
    }
    Ok(model)
}

/// The row's measured tokens/s per device as model TFLOP/s per device (MFU convention).
fn measured_model_tflops(row: &Row, model: &ModelDims) -> f64 {
    let per_token = crate::workload::flops_per_token(model, Recompute::None).model;
    row.measured_tokens_per_s_per_device * per_token / 1e12
}

fn calibrate_row(
    row: &Row,
    line: u64,
    device_lookup: &impl Fn(&str) -> Option<DeviceFigures>,
) -> Result<(CalibrationRow, Option<Prepared>), CalibrationError> {
    let published = read_published(row, line)?;
    let mut model = match published_model(row, &published) {
        Ok(model) => model,
        Err(reason) => return Ok((not_costed(row, &published, None, reason), None)),
    };
    // The dispatch and routing the row's stack documents; a routing limit is the model's as it
    // ran (a benchmark's fake gate included).
    let moe = moe_stack::moe_stack(row, &model);
    if let Some(m) = &moe {
        model.expert_groups = m.groups;
    }
    if row.node_nic_gbps <= 0.0 {
        let reason = format!(
            "`node_nic_gbps` is {}: the run states no scale-out bandwidth",
            row.node_nic_gbps
        );
        return Ok((not_costed(row, &published, Some(&model), reason), None));
    }
    let Some(device) = device_lookup(&row.device) else {
        return Ok((
            not_costed(
                row,
                &published,
                Some(&model),
                format!("device `{}` is not in the catalogue", row.device),
            ),
            None,
        ));
    };
    let setup = TrainSetup {
        global_batch: row.global_batch,
        precision: published.precision,
        optimizer: row.stated_optimizer().unwrap_or(Optimizer::Adamw),
        tokens: 1e12,
        flash_attention: !model.dropout,
        states: row.published_states(published.precision),
        expert_dispatch: moe
            .as_ref()
            .map_or(ExpertDispatch::AllToAll, |m| m.dispatch),
        expert_overlap: moe.as_ref().map_or(ExpertOverlap::default(), |m| m.overlap),
    };
    let dpn = device.devices_per_node.max(1);
    let cluster = ClusterFigures {
        devices_per_node: dpn,
        nodes: row.devices.div_ceil(dpn),
        node_network_bandwidth: row.node_nic_gbps * 1e9 / 8.0,
        nics_per_node: dpn,
        network_latency_s: CALIBRATION_NETWORK_LATENCY_S,
        // The published runs name no switch blocks; their fabrics are taken at full bisection.
        block: None,
        device,
        fitted: FittedConstants::SHIPPED,
    };
    let recompute = published.recompute;
    // Sequence parallelism is standard with tensor parallelism since Korthikanti et al. (2022):
    // Megatron-Core, NeMo and torchtitan's tensor-parallel plan all split norms and dropout over
    // the tensor group. Only the GPT-3-era Megatron runs with full recomputation (SC21 and
    // Korthikanti's own full-recomputation baselines) predate it.
    let gpt3_era_full = model.dropout && recompute == Some(Recompute::Full);
    let sequence_parallel = Some(row.tp > 1 && !gpt3_era_full);
    let defaults = stack_defaults::stack_defaults(row);
    let pins = Pins {
        tensor: Some(row.tp),
        pipeline: Some(row.pp),
        data: Some(row.dp),
        context: Some(row.cp),
        expert: Some(row.ep.unwrap_or(1).max(1)),
        virtual_stages: Some(defaults.as_ref().map_or(row.vpp, |d| d.virtual_stages)),
        micro_batch: row.micro_batch.or(defaults.as_ref().map(|d| d.micro_batch)),
        zero: Some(row.zero),
        recompute,
        recompute_layers: None,
        sequence_parallel,
        tensor_overlap: Some(row.states_tensor_overlap()),
        // The stack's own split where its defaults are known, else the split the source
        // names; blank or unstated leaves it to the search (the faster rule is theirs).
        pipeline_split: match (published.split, &defaults) {
            (_, Some(_)) => Some(SplitRule::Pinned),
            (PublishedSplit::Even, None) => Some(SplitRule::Balanced),
            (PublishedSplit::EmbeddingAndLoss, None) => Some(SplitRule::EmbeddingAndLoss),
            (PublishedSplit::Unstated | PublishedSplit::UnevenUnstated, None) => None,
        },
        stages: defaults
            .as_ref()
            .map(|d| StageSplit::of_chunks(SplitRule::Pinned, &d.chunks, row.pp)),
    };
    let fastest = |c: &Candidate| -c.estimate.tokens_per_s;
    let spec = SearchSpec {
        model: &model,
        setup: &setup,
        cluster: &cluster,
        pins,
        max_devices: u64::from(row.devices),
        keep: 1,
    };
    let pinned = search(&spec, &fastest);
    let Some(best) = pinned.ranked.first() else {
        let reason = pinned
            .rejected
            .iter()
            .find(|r| matches!(r.reason, Rejection::OutOfMemory { .. }))
            .or_else(|| pinned.rejected.first())
            .map_or_else(
                || "no layout matches the published one".to_string(),
                |r| {
                    format!(
                        "the published layout is rejected: {}",
                        crate::plan::rejection_text(&r.reason)
                    )
                },
            );
        return Ok((not_costed(row, &published, Some(&model), reason), None));
    };
    let auto = search(
        &SearchSpec {
            pins: Pins::default(),
            ..spec
        },
        &fastest,
    );
    let own = auto.ranked.first();
    let predicted = best.estimate.tokens_per_s_per_device;
    let measured = row.measured_tokens_per_s_per_device;
    let auto_total = own.map_or(0.0, |c| c.estimate.tokens_per_s);
    let result = CalibrationRow {
        run_id: row.run_id.clone(),
        predicted_tokens_per_s_per_device: predicted,
        measured_tokens_per_s_per_device: measured,
        precision: published.precision,
        measured_model_tflops_per_device: Some(measured_model_tflops(row, &model)),
        error_pct: Some(100.0 * (predicted - measured) / measured),
        not_costed: None,
        device: row.device.clone(),
        devices: row.devices,
        layout: Some(best.layout),
        mfu: best.estimate.mfu,
        auto_tokens_per_s_per_device: own.map_or(0.0, |c| c.estimate.tokens_per_s_per_device),
        auto_layout: own.map(|c| c.layout),
        auto_at_least_as_fast: auto_total >= best.estimate.tokens_per_s * (1.0 - 1e-9),
        stack_defaults: defaults.map(|d| d.text),
        moe_stack: moe.map(|m| m.text),
    };
    let prepared = Prepared {
        run_id: row.run_id.clone(),
        family: row.run_id.split('_').next().unwrap_or("").to_string(),
        model,
        setup,
        cluster,
        layout: best.layout,
        measured,
    };
    Ok((result, Some(prepared)))
}

#[cfg(test)]
pub(crate) mod tests;
