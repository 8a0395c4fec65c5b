//! Calibration on published serving runs: each row of a CSV with the columns of
//! `tests/data/inference_runs_calibration.csv` is costed with its own model, device, degrees,
//! precision, engine and load through the serving model (`crate::serve`), and its predicted
//! output throughput (in the row's own basis), TTFT and TPOT compared with what it measured.
//! A row that cannot be costed says why; [`fit_serving`] refits [`ServeFitted`] on the file.

use super::cells::Cells;
use super::serving_row::{
    COLUMNS, catalogue_id, engine, is_serving_header, load, model_dims, precision,
};
use super::{CalibrationError, ErrorStats, bad};
use crate::catalogue::Device;
use crate::runs::store::serving::PrefillRole;
use crate::serve::{Load, ReplicaShape, ServeFitted, ServedModel, Traffic, operating_point_with};
use loam_ir::types::Engine;
use serde::Serialize;
use std::collections::BTreeMap;

/// Counted: TensorRT-LLM's `trtllm-bench` caps the in-flight batch at 2048 sequences; vLLM's
/// and MindIE's default `max_num_seqs` is 256, SGLang's `max_running_requests` is bounded by
/// its KV pool (1024 taken), LMDeploy's `max_batch_size` 256. A row's own batch or concurrency
/// is used where it states one.
fn default_max_batch(engine: Engine) -> u32 {
    match engine {
        Engine::Trtllm => 2048,
        Engine::Sglang => 1024,
        Engine::Vllm | Engine::Mindie | Engine::Lmdeploy => 256,
    }
}

/// Counted: scale-out bandwidth per device assumed for a replica wider than a node: one
/// 400 Gb/s NIC per device (DGX H100 / MI300X platform), in bytes/s.
pub const ASSUMED_SCALE_OUT_BANDWIDTH: f64 = 400e9 / 8.0;

/// Whether a CSV header is the serving-run kind.
pub(super) fn is_serving(headers: &[String]) -> bool {
    is_serving_header(headers)
}

/// Whether a CSV header has any column only serving-run files have.
pub(super) fn has_serving_marker(headers: &[String]) -> bool {
    ["scenario", "engine", "ttft_ms", "out_tok_s_total"]
        .iter()
        .any(|c| headers.iter().any(|h| h == c))
}

/// What a row's throughput is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThroughputBasis {
    /// Output tokens/s of the whole deployment (`out_tok_s_total`).
    OutTokSTotal,
    /// Output tokens/s per device (`out_tok_s_per_device`).
    OutTokSPerDevice,
    /// Input and output tokens/s of the whole deployment (`total_tok_s`).
    TotalTokS,
    /// Requests/s of the whole deployment (`req_s`).
    ReqS,
}

impl ThroughputBasis {
    /// The column it is read from.
    pub fn column(self) -> &'static str {
        match self {
            ThroughputBasis::OutTokSTotal => "out_tok_s_total",
            ThroughputBasis::OutTokSPerDevice => "out_tok_s_per_device",
            ThroughputBasis::TotalTokS => "total_tok_s",
            ThroughputBasis::ReqS => "req_s",
        }
    }
}

/// Predicted vs measured for one serving run; the metrics a row does not publish are `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingCalibrationRow {
    /// The run's id.
    pub run_id: String,
    /// Its source family (`group`).
    pub group: String,
    /// Catalogue id of its device, when known.
    pub device: Option<String>,
    /// The engine costed.
    pub engine: Option<Engine>,
    /// The load costed, in words.
    pub load: Option<String>,
    /// The column the throughput is compared in.
    pub throughput_basis: Option<ThroughputBasis>,
    /// Predicted throughput in that basis.
    pub predicted_throughput: Option<f64>,
    /// Measured throughput in that basis.
    pub measured_throughput: Option<f64>,
    /// `100 · (predicted − measured) / measured`.
    pub throughput_error_pct: Option<f64>,
    /// Predicted median time to first token, ms.
    pub predicted_ttft_ms: Option<f64>,
    /// Measured time to first token, ms (the row's statistic, `ttft_stat`).
    pub measured_ttft_ms: Option<f64>,
    /// TTFT error in percent.
    pub ttft_error_pct: Option<f64>,
    /// Predicted median time per output token, ms.
    pub predicted_tpot_ms: Option<f64>,
    /// Measured TPOT (or ITL where only that is published), ms.
    pub measured_tpot_ms: Option<f64>,
    /// TPOT error in percent.
    pub tpot_error_pct: Option<f64>,
    /// Readings of blank or free-text cells the costing rests on.
    pub assumptions: Vec<String>,
    /// Why the row could not be costed (`None` when it was).
    pub not_costed: Option<String>,
}

/// The error statistics of one metric over the rows that publish it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServingMetric {
    /// Rows costed with this metric published.
    pub rows: usize,
    /// Median of `|error|`, percent.
    pub median_abs_error_pct: f64,
    /// Mean of `|error|`, percent.
    pub mean_abs_error_pct: f64,
    /// Share of rows with `|error| ≤ 20 %`.
    pub within_20_pct_share: f64,
}

impl ServingMetric {
    fn of(errors: impl Iterator<Item = Option<f64>>) -> ServingMetric {
        let s = ErrorStats::of(errors);
        ServingMetric {
            rows: s.costed,
            median_abs_error_pct: s.median_abs,
            mean_abs_error_pct: s.mean_abs,
            within_20_pct_share: s.within_20_share,
        }
    }
}

/// The three metrics over a set of rows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServingMetrics {
    /// Output throughput (each row in its own basis).
    pub throughput: ServingMetric,
    /// Time to first token.
    pub ttft: ServingMetric,
    /// Time per output token (TPOT, or ITL).
    pub tpot: ServingMetric,
}

impl ServingMetrics {
    fn of<'a>(rows: impl Iterator<Item = &'a ServingCalibrationRow> + Clone) -> ServingMetrics {
        ServingMetrics {
            throughput: ServingMetric::of(rows.clone().map(|r| r.throughput_error_pct)),
            ttft: ServingMetric::of(rows.clone().map(|r| r.ttft_error_pct)),
            tpot: ServingMetric::of(rows.map(|r| r.tpot_error_pct)),
        }
    }
}

/// The comparison over a whole serving-run file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingCalibrationReport {
    /// One entry per CSV row, in file order.
    pub rows: Vec<ServingCalibrationRow>,
    /// Rows costed (at least one metric compared).
    pub costed_rows: usize,
    /// Rows not costed, each with its reason.
    pub not_costed_rows: usize,
    /// The statistics over every costed row.
    pub metrics: ServingMetrics,
    /// The statistics per source family (`group`).
    pub groups: BTreeMap<String, ServingMetrics>,
    /// The fitted constants the rows were costed with.
    pub fitted: ServeFitted,
}

/// What a row measured, in the model's units.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Measured {
    throughput: Option<(ThroughputBasis, f64)>,
    ttft_s: Option<f64>,
    tpot_s: Option<f64>,
}

/// A costable row, ready to cost with any fitted constants.
#[derive(Debug, Clone)]
pub(crate) struct PreparedServing {
    pub group: String,
    model: ServedModel,
    device: Device,
    tensor: u32,
    pipeline: u32,
    replicas: u32,
    devices: u32,
    max_batch: u32,
    /// Devices per node of the deployment (the row's, else the device's usual node).
    devices_per_node: u32,
    /// Bytes per second one device reaches off its node (the row's, else assumed).
    scale_out_bandwidth: f64,
    /// A disaggregated deployment's prefill role (a runs-store row's); `tensor`, `pipeline`,
    /// `replicas` and `max_batch` are then the decode role's.
    prefill: Option<PrefillRole>,
    traffic: Traffic,
    load: Load,
    measured: Measured,
}

/// Predicted values of a prepared row: throughput in its basis, TTFT and TPOT in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Predicted {
    throughput: f64,
    ttft_s: f64,
    tpot_s: f64,
}

impl PreparedServing {
    /// Whether the row is a disaggregated deployment's (prefill and decode roles apart).
    pub(crate) fn is_disaggregated(&self) -> bool {
        self.prefill.is_some()
    }

    /// A replica of `tensor` × `pipeline` devices admitting `max_batch` sequences.
    fn shape(&self, tensor: u32, pipeline: u32, max_batch: u32) -> ReplicaShape<'_> {
        ReplicaShape {
            device: &self.device,
            tensor,
            pipeline,
            expert: 1,
            max_batch,
            max_model_len: (self.traffic.input[0] + self.traffic.output[0]) as u32,
            devices_per_node: self.devices_per_node,
            scale_out_bandwidth: self.scale_out_bandwidth,
            // The constants are the `fitted` argument's.
            efficiency: 1.0,
        }
    }

    fn predict(&self, fitted: &ServeFitted) -> Predicted {
        let shape = self.shape(self.tensor, self.pipeline, self.max_batch);
        let (op, replicas) = match self.prefill {
            // The whole deployment's point: the rate is shared by each role's replicas.
            Some(prefill) => (disaggregated::point(self, prefill, fitted), 1.0),
            None => (
                operating_point_with(&self.model, &shape, fitted, &self.traffic, self.load, 0.5),
                f64::from(self.replicas.max(1)),
            ),
        };
        let throughput = match self.measured.throughput.map(|(b, _)| b) {
            Some(ThroughputBasis::OutTokSPerDevice) => {
                op.output_tokens_per_s * replicas / f64::from(self.devices.max(1))
            }
            Some(ThroughputBasis::TotalTokS) => {
                op.requests_per_s * (self.traffic.input[0] + self.traffic.output[0]) * replicas
            }
            Some(ThroughputBasis::ReqS) => op.requests_per_s * replicas,
            Some(ThroughputBasis::OutTokSTotal) | None => op.output_tokens_per_s * replicas,
        };
        Predicted {
            throughput,
            ttft_s: op.ttft_p50_s,
            tpot_s: op.tpot_p50_s,
        }
    }

    /// Signed errors in percent: throughput, TTFT, TPOT (`None` where not measured).
    fn errors(&self, fitted: &ServeFitted) -> [Option<f64>; 3] {
        let p = self.predict(fitted);
        let err = |pred: f64, meas: f64| 100.0 * (pred - meas) / meas;
        [
            self.measured.throughput.map(|(_, m)| err(p.throughput, m)),
            self.measured.ttft_s.map(|m| err(p.ttft_s, m)),
            self.measured.tpot_s.map(|m| err(p.tpot_s, m)),
        ]
    }
}

/// Reads every row of a serving-run CSV: the header must have every column of the shipped
/// file.
fn read_rows(csv_text: &str) -> Result<Vec<Cells>, CalibrationError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(csv_text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| super::csv_errors::describe(&e, &[]))?
        .iter()
        .map(str::to_string)
        .collect();
    if let Some(missing) = COLUMNS.iter().find(|c| !headers.iter().any(|h| h == *c)) {
        return Err(bad(
            1,
            missing,
            "the serving-run CSV lacks this column (see tests/data/inference_runs_calibration.csv)",
        ));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| super::csv_errors::describe(&e, &headers))?;
        rows.push(Cells::new(&headers, &record));
    }
    if rows.is_empty() {
        return Err(CalibrationError::Empty);
    }
    Ok(rows)
}

/// What a row measured.
fn measured(row: &Cells) -> Measured {
    let throughput = [
        ThroughputBasis::OutTokSTotal,
        ThroughputBasis::OutTokSPerDevice,
        ThroughputBasis::TotalTokS,
        ThroughputBasis::ReqS,
    ]
    .into_iter()
    .find_map(|b| row.number(b.column()).map(|v| (b, v)));
    Measured {
        throughput,
        ttft_s: row.number("ttft_ms").map(|v| v / 1e3),
        tpot_s: row
            .number("tpot_ms")
            .or_else(|| row.number("itl_ms"))
            .map(|v| v / 1e3),
    }
}

fn load_text(load: Load) -> String {
    match load {
        Load::Offline => "offline".into(),
        Load::StaticBatch(b) => format!("static batch {b}"),
        Load::Concurrency(c) => format!("concurrency {c}"),
        Load::Rate(r) => format!("{r} req/s"),
    }
}

/// Reads a row into something costable, or the reason it is not; `out` collects what is known
/// either way.
fn prepare(
    row: &Cells,
    device_lookup: &impl Fn(&str) -> Option<Device>,
    out: &mut ServingCalibrationRow,
) -> Result<PreparedServing, String> {
    let notes = &mut out.assumptions;
    let m = measured(row);
    if m.throughput.is_none() && m.ttft_s.is_none() && m.tpot_s.is_none() {
        return Err(
            "no measured throughput, TTFT or TPOT in a stated basis (the derived columns are blank)"
                .into(),
        );
    }
    let device_text = row.text("device");
    let (id, note) = catalogue_id(device_text)
        .ok_or_else(|| format!("device `{device_text}` is not in the catalogue"))?;
    notes.extend(note);
    out.device = Some(id.to_string());
    let device =
        device_lookup(id).ok_or_else(|| format!("device `{id}` is not in the catalogue"))?;
    let engine_text = row.text("engine");
    let (engine, note) = engine(engine_text)
        .ok_or_else(|| format!("engine `{engine_text}` is not one loam knows"))?;
    notes.extend(note);
    out.engine = Some(engine);
    let precision_text = row.text("precision");
    let (precision, note) = precision(precision_text)
        .ok_or_else(|| format!("precision `{precision_text}` is not one loam knows"))?;
    notes.extend(note);
    let load = load(row)?;
    out.load = Some(load_text(load));
    let (Some(input), Some(output)) = (row.number("input_len"), row.number("output_len")) else {
        return Err("request lengths not given (input_len / output_len blank)".into());
    };
    // The spec checker's bounds: a row beyond them describes no service loam would plan.
    let layers_bound = u32::try_from(crate::check::MAX_LAYERS).unwrap_or(u32::MAX);
    let dim_bound = u32::try_from(crate::check::MAX_DIM).unwrap_or(u32::MAX);
    if row.count("layers").is_some_and(|l| l > layers_bound) {
        return Err(format!(
            "`layers` above {layers_bound}: no spec may say that"
        ));
    }
    for column in [
        "hidden",
        "heads",
        "kv_heads",
        "ffn",
        "vocab",
        "device_count",
        "tp",
        "pp",
        "replicas",
        "batch_size",
        "devices_per_node",
        "max_batch",
        "prefill_tp",
        "prefill_pp",
        "prefill_replicas",
        "prefill_max_batch",
    ] {
        if row.count(column).is_some_and(|v| v > dim_bound) {
            return Err(format!(
                "`{column}` above {dim_bound}: no spec may say that"
            ));
        }
    }
    let dims = model_dims(row, notes)?;
    let devices = row.count("device_count");
    let pipeline = row.count("pp").unwrap_or(1);
    let tensor = match row.count("tp") {
        Some(tp) => tp,
        None => {
            let replicas = row.count("replicas").unwrap_or(1);
            let tp = devices.unwrap_or(1) / (pipeline * replicas).max(1);
            notes.push(format!(
                "tp blank: {} assumed (device_count over pp and replicas)",
                tp.max(1)
            ));
            tp.max(1)
        }
    };
    let per_replica = tensor.saturating_mul(pipeline).max(1);
    let replicas = row
        .count("replicas")
        .unwrap_or_else(|| (devices.unwrap_or(per_replica) / per_replica).max(1));
    let devices = devices.unwrap_or(per_replica * replicas);
    let asked = match load {
        Load::StaticBatch(b) | Load::Concurrency(b) => b as u32,
        Load::Offline => row.count("batch_size").unwrap_or(0),
        Load::Rate(_) => 0,
    };
    // A runs-store row states the limit the plan gave the engine (its load is the whole
    // deployment's, so its concurrency is no replica's batch).
    let max_batch = match row.count("max_batch") {
        Some(stated) => stated,
        None if asked > 0 => asked,
        None => default_max_batch(engine),
    };
    // A count is positive or absent, so a role is whole or none.
    let prefill = PrefillRole::of(PrefillRole::COLUMNS.map(|c| row.count(c)));
    if prefill.is_some() && !matches!(load, Load::Rate(_) | Load::Concurrency(_)) {
        return Err(
            "a disaggregated deployment is costed at a request rate or a bounded concurrency; \
             this run sent every request at once with no bound"
                .into(),
        );
    }
    if prefill.is_some() {
        notes.push("disaggregated: prefill and decode roles costed apart".into());
    }
    let devices_per_node = row
        .count("devices_per_node")
        .unwrap_or(device.devices_per_node.value);
    let scale_out_bandwidth = match row.number("scale_out_gb_s") {
        Some(gb_s) if gb_s > 0.0 => gb_s * 1e9,
        _ => ASSUMED_SCALE_OUT_BANDWIDTH,
    };
    let model = ServedModel::new(dims, precision, precision.default_kv_cache(), engine);
    let prepared = PreparedServing {
        group: row.text("group").to_string(),
        model,
        device,
        tensor,
        pipeline,
        replicas,
        devices,
        max_batch,
        devices_per_node,
        scale_out_bandwidth,
        prefill,
        traffic: Traffic::fixed(input, output),
        load,
        measured: m,
    };
    out.throughput_basis = m.throughput.map(|(b, _)| b);
    out.measured_throughput = m.throughput.map(|(_, v)| v);
    out.measured_ttft_ms = m.ttft_s.map(|v| v * 1e3);
    out.measured_tpot_ms = m.tpot_s.map(|v| v * 1e3);
    Ok(prepared)
}

/// The report rows (not yet costed) and the costable ones with their index among them.
type Prepared = (Vec<ServingCalibrationRow>, Vec<(usize, PreparedServing)>);

/// Every row read and prepared: the report rows (uncosted) and the costable ones with their
/// index.
fn prepare_all(
    csv_text: &str,
    device_lookup: &impl Fn(&str) -> Option<Device>,
) -> Result<Prepared, CalibrationError> {
    Ok(prepare_cells(&read_rows(csv_text)?, device_lookup))
}

/// Rows read by column and prepared: a published file's or the runs store's serving rows.
fn prepare_cells(rows: &[Cells], device_lookup: &impl Fn(&str) -> Option<Device>) -> Prepared {
    let mut out = Vec::new();
    let mut prepared = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let mut r = ServingCalibrationRow {
            run_id: row.text("run_id").to_string(),
            group: row.text("group").to_string(),
            device: None,
            engine: None,
            load: None,
            throughput_basis: None,
            predicted_throughput: None,
            measured_throughput: None,
            throughput_error_pct: None,
            predicted_ttft_ms: None,
            measured_ttft_ms: None,
            ttft_error_pct: None,
            predicted_tpot_ms: None,
            measured_tpot_ms: None,
            tpot_error_pct: None,
            assumptions: Vec::new(),
            not_costed: None,
        };
        match prepare(row, device_lookup, &mut r) {
            Ok(p) => prepared.push((i, p)),
            Err(reason) => r.not_costed = Some(reason),
        }
        out.push(r);
    }
    (out, prepared)
}

/// Compares the serving model's predictions with every run of a serving-run CSV;
/// `device_lookup` maps a catalogue id to the device (the CLI passes the catalogue's).
pub fn calibrate_serving(
    csv_text: &str,
    device_lookup: impl Fn(&str) -> Option<Device>,
) -> Result<ServingCalibrationReport, CalibrationError> {
    calibrate_serving_with(csv_text, &device_lookup, &ServeFitted::SHIPPED)
}

/// [`calibrate_serving`] with explicit fitted constants.
pub fn calibrate_serving_with(
    csv_text: &str,
    device_lookup: &impl Fn(&str) -> Option<Device>,
    fitted: &ServeFitted,
) -> Result<ServingCalibrationReport, CalibrationError> {
    let (mut rows, prepared) = prepare_all(csv_text, device_lookup)?;
    for (i, p) in &prepared {
        let Some(r) = rows.get_mut(*i) else { continue };
        let predicted = p.predict(fitted);
        let [t, f, s] = p.errors(fitted);
        if r.throughput_basis.is_some() {
            r.predicted_throughput = Some(predicted.throughput);
        }
        r.throughput_error_pct = t;
        r.predicted_ttft_ms = Some(predicted.ttft_s * 1e3);
        r.ttft_error_pct = f;
        r.predicted_tpot_ms = Some(predicted.tpot_s * 1e3);
        r.tpot_error_pct = s;
    }
    let costed = rows.iter().filter(|r| r.not_costed.is_none()).count();
    let mut groups = BTreeMap::new();
    for group in rows.iter().map(|r| r.group.clone()) {
        if groups.contains_key(&group) {
            continue;
        }
        let of_group = rows.iter().filter(|r| r.group == group);
        groups.insert(group.clone(), ServingMetrics::of(of_group));
    }
    Ok(ServingCalibrationReport {
        costed_rows: costed,
        not_costed_rows: rows.len() - costed,
        metrics: ServingMetrics::of(rows.iter()),
        groups,
        fitted: *fitted,
        rows,
    })
}

/// The fit's objective over prepared rows: per metric, the median `|error|` plus 0.3 × the
/// mean `|error|` capped at 100 % (the mean keeps the tails honest, the cap keeps one wild row
/// from steering the fit).
fn objective(rows: &[&PreparedServing], fitted: &ServeFitted) -> f64 {
    let mut errors: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for row in rows {
        for (list, e) in errors.iter_mut().zip(row.errors(fitted)) {
            if let Some(e) = e {
                list.push(if e.is_finite() { e.abs() } else { 1e6 });
            }
        }
    }
    errors
        .into_iter()
        .filter(|e| !e.is_empty())
        .map(|e| {
            let capped = super::mean(e.iter().map(|v| v.min(100.0)));
            super::median(e) + 0.3 * capped
        })
        .sum()
}

/// Counted: rounds of the fit's coordinate descent (the shipped file's fit stops changing
/// after three).
const FIT_ROUNDS: usize = 4;

/// Fits [`ServeFitted`] on prepared rows: coordinate descent over fixed grids (bandwidth share
/// 0.50–1.00 in steps of 0.02, GEMM share 0.20–1.28 in steps of 0.02, per-block overhead 0–300 µs
/// in steps of 5 µs), the lowest value kept on ties. Every constant is shared by all engines, so
/// every row informs each of them.
fn fit(rows: &[&PreparedServing]) -> ServeFitted {
    let mut best = ServeFitted::SHIPPED;
    let try_value = |best: &mut ServeFitted, set: &dyn Fn(&mut ServeFitted, f64), grid: &[f64]| {
        let mut chosen = *best;
        let mut chosen_score = f64::INFINITY;
        for v in grid {
            let mut candidate = *best;
            set(&mut candidate, *v);
            let s = objective(rows, &candidate);
            if s < chosen_score {
                chosen = candidate;
                chosen_score = s;
            }
        }
        *best = chosen;
    };
    let shares: Vec<f64> = (25..=50).map(|k| f64::from(k) / 50.0).collect();
    let gemm_shares: Vec<f64> = (10..=64).map(|k| f64::from(k) / 50.0).collect();
    let overheads: Vec<f64> = (0..=60).map(|k| f64::from(k) / 200_000.0).collect();
    for _ in 0..FIT_ROUNDS {
        try_value(&mut best, &|f, v| f.bandwidth_share = v, &shares);
        try_value(&mut best, &|f, v| f.gemm_share = v, &gemm_shares);
        try_value(&mut best, &|f, v| f.block_overhead_s = v, &overheads);
    }
    best
}

/// Refits the serving model's constants on every costable row of a serving-run CSV.
pub fn fit_serving(
    csv_text: &str,
    device_lookup: impl Fn(&str) -> Option<Device>,
) -> Result<ServeFitted, CalibrationError> {
    let (_, prepared) = prepare_all(csv_text, &device_lookup)?;
    let rows: Vec<&PreparedServing> = prepared.iter().map(|(_, p)| p).collect();
    Ok(fit(&rows))
}

/// One left-out source family: its rows' errors with the constants refitted without it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingFold {
    /// The family left out (`group`).
    pub group: String,
    /// The constants fitted on every other family.
    pub fitted: ServeFitted,
    /// The family's errors with those constants.
    pub metrics: ServingMetrics,
}

/// Leave-one-group-out cross-validation of the serving constants.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingCrossValidation {
    /// One fold per source family with costed rows.
    pub folds: Vec<ServingFold>,
    /// Every left-out row's errors together.
    pub held_out: ServingMetrics,
}

/// Refits the serving constants with each source family left out and costs that family with
/// them.
pub fn cross_validate_serving(
    csv_text: &str,
    device_lookup: impl Fn(&str) -> Option<Device>,
) -> Result<ServingCrossValidation, CalibrationError> {
    let (rows, prepared) = prepare_all(csv_text, &device_lookup)?;
    let mut groups: Vec<String> = prepared.iter().map(|(_, p)| p.group.clone()).collect();
    groups.sort();
    groups.dedup();
    let mut folds = Vec::new();
    let mut held = Vec::new();
    for group in groups {
        let train: Vec<&PreparedServing> = prepared
            .iter()
            .map(|(_, p)| p)
            .filter(|p| p.group != group)
            .collect();
        let fitted = fit(&train);
        let mut fold_rows = Vec::new();
        for (i, p) in prepared.iter().filter(|(_, p)| p.group == group) {
            let Some(r) = rows.get(*i) else { continue };
            let [t, f, s] = p.errors(&fitted);
            let mut r = r.clone();
            r.throughput_error_pct = t;
            r.ttft_error_pct = f;
            r.tpot_error_pct = s;
            fold_rows.push(r);
        }
        folds.push(ServingFold {
            group,
            fitted,
            metrics: ServingMetrics::of(fold_rows.iter()),
        });
        held.extend(fold_rows);
    }
    Ok(ServingCrossValidation {
        folds,
        held_out: ServingMetrics::of(held.iter()),
    })
}

mod disaggregated;
pub(crate) mod efficiency;
#[cfg(test)]
mod fewshot;
