//! The calibration harness: predicted vs measured throughput of published training runs.
//!
//! Reads any CSV with the columns of `tests/data/training_runs_calibration.csv`, builds a
//! homogeneous cluster of each row's device and NIC bandwidth, plans the row with its published
//! layout pinned (blank `micro_batch` / `recompute` are left to the search), and compares the
//! predicted tokens/s per device with the measured one. Each row is also planned with every
//! layout field on auto, to check that loam's own choice is predicted at least as fast.

mod table;

pub use table::render_table;

use crate::hardware::{ClusterFigures, DeviceFigures};
use crate::plan::search::{Candidate, Pins, SearchSpec, search};
use crate::types::{Mlp, Optimizer, Precision, Recompute};
use crate::workload::{Layout, ModelDims, TrainSetup};
use serde::{Deserialize, Serialize};

/// One-way latency between nodes assumed for calibration clusters (InfiniBand / RoCE switch
/// hop plus NIC, as nccl-tests small messages show).
pub const CALIBRATION_NETWORK_LATENCY_S: f64 = 5e-6;

/// One row of the calibration CSV.
#[derive(Debug, Clone, Deserialize)]
struct Row {
    run_id: String,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    vocab: u32,
    mlp: String,
    seq_len: u32,
    device: String,
    devices: u32,
    node_nic_gbps: f64,
    precision: String,
    tp: u32,
    pp: u32,
    dp: u32,
    cp: u32,
    vpp: u32,
    zero: u8,
    recompute: Option<String>,
    micro_batch: Option<u32>,
    global_batch: u32,
    measured_tokens_per_s_per_device: f64,
}

/// Predicted vs measured for one published run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationRow {
    /// The run's id.
    pub run_id: String,
    /// loam's prediction with the published layout (0 when it found no feasible layout).
    pub predicted_tokens_per_s_per_device: f64,
    /// What the run measured.
    pub measured_tokens_per_s_per_device: f64,
    /// `100 · (predicted − measured) / measured`.
    pub error_pct: f64,
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
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    /// One entry per CSV row, in file order.
    pub rows: Vec<CalibrationRow>,
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
        mean(self.rows.iter().map(|r| r.error_pct))
    }

    /// Share of rows predicted faster than measured.
    pub fn over_prediction_share(&self) -> f64 {
        let n = self.rows.len().max(1) as f64;
        self.rows.iter().filter(|r| r.error_pct > 0.0).count() as f64 / n
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
    /// The device id is not known to the lookup.
    #[error("line {line}: column `device`: unknown device `{device}`")]
    UnknownDevice {
        /// 1-based line.
        line: u64,
        /// The id.
        device: String,
    },
    /// No data rows.
    #[error("the calibration CSV has no rows")]
    Empty,
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
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(csv_text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| bad(1, "?", e.to_string()))?
        .iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    let mut rows = Vec::new();
    for result in reader.deserialize::<Row>() {
        let row = result.map_err(|e| csv_error(&e, &headers))?;
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(CalibrationError::Empty);
    }
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        out.push(calibrate_row(row, i as u64 + 2, &device_lookup)?);
    }
    let abs: Vec<f64> = out.iter().map(|r| r.error_pct.abs()).collect();
    let within = abs.iter().filter(|e| **e <= 20.0).count() as f64 / abs.len() as f64;
    Ok(CalibrationReport {
        median_abs_error_pct: median(abs.clone()),
        mean_abs_error_pct: mean(abs.into_iter()),
        within_20_pct_share: within,
        rows: out,
    })
}

fn csv_error(e: &csv::Error, headers: &[String]) -> CalibrationError {
    let line = e.position().map(csv::Position::line).unwrap_or(0);
    let column = match e.kind() {
        csv::ErrorKind::Deserialize { err, .. } => err
            .field()
            .and_then(|f| headers.get(f as usize))
            .cloned()
            .unwrap_or_else(|| "?".into()),
        _ => "?".into(),
    };
    let message = match e.kind() {
        csv::ErrorKind::Deserialize { err, .. } => err.kind().to_string(),
        other => format!("{other:?}"),
    };
    bad(line, &column, message)
}

fn calibrate_row(
    row: &Row,
    line: u64,
    device_lookup: &impl Fn(&str) -> Option<DeviceFigures>,
) -> Result<CalibrationRow, CalibrationError> {
    let device = device_lookup(&row.device).ok_or_else(|| CalibrationError::UnknownDevice {
        line,
        device: row.device.clone(),
    })?;
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
    if row.devices == 0 || row.measured_tokens_per_s_per_device <= 0.0 {
        return Err(bad(
            line,
            "devices",
            "expected a positive device count and throughput",
        ));
    }
    let mut model = ModelDims::dense(
        row.layers,
        row.hidden,
        row.ffn,
        row.heads,
        row.kv_heads,
        row.vocab,
        row.seq_len,
        mlp,
    );
    // The CSV names no kernels, so the recipe is inferred: Megatron GPT-3-era runs (GeLU, no
    // weight sharding) train with dropout on materialised attention probabilities; FSDP / ZeRO-3
    // stacks and Llama-class (SwiGLU) recipes use fused flash attention without dropout.
    model.dropout = mlp == Mlp::Gelu && row.zero < 3;
    let setup = TrainSetup {
        global_batch: row.global_batch,
        precision,
        optimizer: Optimizer::Adamw,
        tokens: 1e12,
        flash_attention: !model.dropout,
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
    };
    // Megatron runs sequence parallelism with selective recomputation (Korthikanti et al.);
    // the full-recomputation baselines and SC21 predate it.
    let sequence_parallel = Some(row.tp > 1 && recompute != Some(Recompute::Full));
    let pins = Pins {
        tensor: Some(row.tp),
        pipeline: Some(row.pp),
        data: Some(row.dp),
        context: Some(row.cp),
        expert: Some(1),
        virtual_stages: Some(row.vpp),
        micro_batch: row.micro_batch,
        zero: Some(row.zero),
        recompute,
        sequence_parallel,
        // The published layouts name no split rule: the faster of the two is theirs.
        pipeline_split: None,
        stages: None,
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
    let auto = search(
        &SearchSpec {
            pins: Pins::default(),
            ..spec
        },
        &fastest,
    );
    let best = pinned.ranked.first();
    let own = auto.ranked.first();
    let predicted = best.map_or(0.0, |c| c.estimate.tokens_per_s_per_device);
    let measured = row.measured_tokens_per_s_per_device;
    let pinned_total = best.map_or(0.0, |c| c.estimate.tokens_per_s);
    let auto_total = own.map_or(0.0, |c| c.estimate.tokens_per_s);
    Ok(CalibrationRow {
        run_id: row.run_id.clone(),
        predicted_tokens_per_s_per_device: predicted,
        measured_tokens_per_s_per_device: measured,
        error_pct: 100.0 * (predicted - measured) / measured,
        device: row.device.clone(),
        devices: row.devices,
        layout: best.map(|c| c.layout),
        mfu: best.map_or(0.0, |c| c.estimate.mfu),
        auto_tokens_per_s_per_device: own.map_or(0.0, |c| c.estimate.tokens_per_s_per_device),
        auto_layout: own.map(|c| c.layout),
        auto_at_least_as_fast: auto_total >= pinned_total * (1.0 - 1e-9),
    })
}

#[cfg(test)]
pub(crate) mod tests;
