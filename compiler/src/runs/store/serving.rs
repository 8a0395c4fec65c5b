//! Serving runs in the store: one line per serving benchmark (vLLM's `benchmark_serving`,
//! SGLang's `bench_serving`) of a planned service, in `<catalogue>/runs/<site>/serving.csv`,
//! appended by `loam runs ingest --append` under the same append-only rules as training rows.
//! The columns from `engine` to `tpot_ms` are named as in the published serving-runs file
//! (`tests/data/inference_runs_calibration.csv`), so a stored run reads as a published one: the
//! scenario is `poisson` at the benchmark's request rate, `fixed concurrency` when every request
//! was sent at once (rate `inf`) but at most `concurrency` were in flight, or `offline max
//! throughput` when nothing capped them, the lengths are the mean tokens of a completed request,
//! `ttft_ms` and `tpot_ms` are medians (the published file's `ttft_stat`/`tpot_stat` `median`).

use super::{ProblemKind, StoreProblem};
use crate::catalogue::Catalogue;
use loam_ir::types::{Engine, ServePrecision};
use serde::Deserialize;

/// The file of a site's serving runs inside its store folder.
pub const FILE: &str = "serving.csv";

/// The header of a serving store file, in order: the first header's columns, the deployment's
/// (devices per node, scale-out per device, the generating role's batch limit, and a
/// disaggregated deployment's prefill role), then the model's beyond a dense model's dimensions
/// ([`MODEL_COLUMNS`]). A new file gets this one.
pub const COLUMNS: &str = "run_id,date,pool,site,service,tool,log,engine,engine_version,model,\
layers,hidden,heads,kv_heads,ffn,vocab,precision,device,device_count,tp,pp,replicas,scenario,\
input_len,output_len,request_rate,concurrency,out_tok_s_total,req_s,ttft_ms,ttft_p99_ms,tpot_ms,tpot_p99_ms,\
predicted_out_tok_s_per_device,predicted_ttft_ms,predicted_tpot_ms,throughput_uncertainty,source,\
devices_per_node,scale_out_gb_s,max_batch,prefill_tp,prefill_pp,prefill_replicas,prefill_max_batch,\
mlp,experts,top_k,expert_ffn,shared_experts,dense_layers,capacity_factor,head_dim,\
sliding_window,global_every,q_lora_rank,kv_lora_rank,qk_nope_head_dim,qk_rope_head_dim,\
v_head_dim,tie_embeddings";

/// The model's columns at the end of [`COLUMNS`], blank for a dense model of plain attention
/// whose gated MLP the weights' name tells (`runs::store::model::set_serving`).
pub const MODEL_COLUMNS: usize = 16;

/// The header of files started before the model's columns: [`COLUMNS`] without its last
/// [`MODEL_COLUMNS`]. Read, checked and appended to in its own columns, like [`FIRST_COLUMNS`].
pub const DEPLOYMENT_COLUMNS: &str = "run_id,date,pool,site,service,tool,log,engine,\
engine_version,model,layers,hidden,heads,kv_heads,ffn,vocab,precision,device,device_count,tp,pp,\
replicas,scenario,input_len,output_len,request_rate,concurrency,out_tok_s_total,req_s,ttft_ms,\
ttft_p99_ms,tpot_ms,tpot_p99_ms,predicted_out_tok_s_per_device,predicted_ttft_ms,\
predicted_tpot_ms,throughput_uncertainty,source,devices_per_node,scale_out_gb_s,max_batch,\
prefill_tp,prefill_pp,prefill_replicas,prefill_max_batch";

/// The header of files started before the deployment's columns: a prefix of [`COLUMNS`], so a
/// file of it becomes one of the new header by extending its first line alone (its rows keep
/// their meaning; their deployment columns read as blank). Both are read, checked and appended
/// to, each file in its own header.
pub const FIRST_COLUMNS: &str = "run_id,date,pool,site,service,tool,log,engine,engine_version,\
model,layers,hidden,heads,kv_heads,ffn,vocab,precision,device,device_count,tp,pp,replicas,\
scenario,input_len,output_len,request_rate,concurrency,out_tok_s_total,req_s,ttft_ms,\
ttft_p99_ms,tpot_ms,tpot_p99_ms,predicted_out_tok_s_per_device,predicted_ttft_ms,\
predicted_tpot_ms,throughput_uncertainty,source";

/// Whether `line` (a file's first line, without its line ending) is a serving store header.
pub fn is_header(line: &str) -> bool {
    line == COLUMNS || line == DEPLOYMENT_COLUMNS || line == FIRST_COLUMNS
}

/// Whether a store file's `text` holds serving runs: its first line is a serving header.
pub fn is_file(text: &str) -> bool {
    text.lines()
        .next()
        .is_some_and(|l| is_header(l.trim_end_matches('\r')))
}

/// The longest engine version the store keeps (`0.6.3.post1`, `v0.4.3-cu124`).
pub const MAX_VERSION_CHARS: usize = 40;

/// Whether `text` reads as an engine's version: 1 to [`MAX_VERSION_CHARS`] characters of
/// letters, digits, `.`, `+`, `-` and `_`, starting with a digit or `v` and a digit. Anything
/// else is not stored (a result file's keys are not spec text, so they are never echoed).
pub fn is_version(text: &str) -> bool {
    let mut chars = text.chars();
    let starts = match chars.next() {
        Some(c) if c.is_ascii_digit() => true,
        Some('v') => chars.next().is_some_and(|c| c.is_ascii_digit()),
        _ => false,
    };
    starts
        && text.len() <= MAX_VERSION_CHARS
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_'))
}

/// What a version must look like ([`is_version`]), as the flag's and the store's errors say it.
pub fn expected_version() -> String {
    format!(
        "expected a version such as `0.6.3` (letters, digits, `.+-_`, at most \
         {MAX_VERSION_CHARS} characters, starting with a digit or `v` and a digit)"
    )
}

/// The most generated tokens per second one benchmark can state (a bound on hostile input: a
/// thousand times the fastest published serving run of a whole cluster).
pub const MAX_OUTPUT_TOKENS_PER_S: f64 = 1e9;

/// One measured serving run as the store keeps it.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ServingRow {
    /// `<site>_<date>_<file stem>`, as a training run's.
    pub run_id: String,
    /// The day the row was appended, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// The pool of the service's plan.
    pub pool: String,
    /// The site; also the store folder's name.
    pub site: String,
    /// The service's name in its spec.
    pub service: String,
    /// The benchmark tool (`vllm-benchmark-serving`, `sglang-bench-serving`).
    pub tool: String,
    /// The result file's name as given to `loam runs ingest`.
    pub log: String,
    /// The engine keyword of the plan (`vllm`, `sglang` …).
    pub engine: String,
    /// The engine's version, blank when the result does not say.
    pub engine_version: Option<String>,
    /// The weights served (the spec's `weights`).
    pub model: String,
    /// Transformer blocks.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u32,
    /// Attention heads.
    pub heads: u32,
    /// Key-value heads.
    pub kv_heads: u32,
    /// MLP inner size.
    pub ffn: u32,
    /// Vocabulary.
    pub vocab: u32,
    /// Weight precision keyword.
    pub precision: String,
    /// Device id.
    pub device: String,
    /// Devices of the deployment.
    pub device_count: u32,
    /// Tensor-parallel degree of a replica.
    pub tp: u32,
    /// Pipeline-parallel degree of a replica.
    pub pp: u32,
    /// Replicas.
    pub replicas: u32,
    /// `poisson` or `offline max throughput`.
    pub scenario: String,
    /// Mean input tokens of a request, blank when the result has no totals.
    pub input_len: Option<f64>,
    /// Mean output tokens of a request.
    pub output_len: Option<f64>,
    /// Offered requests per second, `inf` for all at once.
    pub request_rate: String,
    /// The most requests the benchmark kept in flight, blank when it did not cap them.
    pub concurrency: Option<f64>,
    /// Generated tokens per second, whole deployment.
    pub out_tok_s_total: f64,
    /// Completed requests per second.
    pub req_s: f64,
    /// Median time to first token, ms.
    pub ttft_ms: f64,
    /// 99th-percentile time to first token, ms.
    pub ttft_p99_ms: f64,
    /// Median time per output token, ms.
    pub tpot_ms: f64,
    /// 99th-percentile time per output token, ms.
    pub tpot_p99_ms: f64,
    /// The plan's generated tokens per second per device when the run was ingested.
    pub predicted_out_tok_s_per_device: Option<f64>,
    /// The plan's median TTFT, ms.
    pub predicted_ttft_ms: Option<f64>,
    /// The plan's median TPOT, ms.
    pub predicted_tpot_ms: Option<f64>,
    /// The plan's stated relative uncertainty of its throughput.
    pub throughput_uncertainty: Option<f64>,
    /// Free text: where the row came from.
    pub source: String,
    /// Devices per node of the deployment's node group (blank in a file of [`FIRST_COLUMNS`]).
    #[serde(default)]
    pub devices_per_node: Option<u32>,
    /// Bytes per second, in GB/s, one device of the group reaches off its node
    /// (`NodeGroup::scale_out_per_device`): a replica's scale-out and a disaggregated
    /// deployment's KV-cache link.
    #[serde(default)]
    pub scale_out_gb_s: Option<f64>,
    /// The generating role's batch limit as planned (the engine's `--max-num-seqs`).
    #[serde(default)]
    pub max_batch: Option<u32>,
    /// A disaggregated deployment's prefill role: its tensor degree (`tp`, `pp`, `replicas` and
    /// `max_batch` are then the decode role's). Blank for an aggregated deployment.
    #[serde(default)]
    pub prefill_tp: Option<u32>,
    /// The prefill role's pipeline degree.
    #[serde(default)]
    pub prefill_pp: Option<u32>,
    /// The prefill role's replicas.
    #[serde(default)]
    pub prefill_replicas: Option<u32>,
    /// The prefill role's batch limit.
    #[serde(default)]
    pub prefill_max_batch: Option<u32>,
    /// The MLP keyword, blank when the weights' name tells it (`calibrate::mlp_of_weights`).
    #[serde(default)]
    pub mlp: Option<String>,
    /// Routed experts of a mixture of experts, blank for a dense model.
    #[serde(default)]
    pub experts: Option<u32>,
    /// Experts each token runs (MoE).
    #[serde(default)]
    pub top_k: Option<u32>,
    /// Hidden size of one routed expert, when not `ffn` (MoE).
    #[serde(default)]
    pub expert_ffn: Option<u32>,
    /// Experts every token runs besides the routed ones (MoE).
    #[serde(default)]
    pub shared_experts: Option<u32>,
    /// The first blocks that are dense, with an MLP of `ffn` (MoE).
    #[serde(default)]
    pub dense_layers: Option<u32>,
    /// Expert capacity factor; blank = dropless (MoE).
    #[serde(default)]
    pub capacity_factor: Option<f64>,
    /// Width of one attention head, when not `hidden / heads`.
    #[serde(default)]
    pub head_dim: Option<u32>,
    /// Attention window of the sliding-window blocks, in tokens.
    #[serde(default)]
    pub sliding_window: Option<u32>,
    /// Every `global_every`th block attends globally (with `sliding_window`).
    #[serde(default)]
    pub global_every: Option<u32>,
    /// Multi-head latent attention: query down-projection rank.
    #[serde(default)]
    pub q_lora_rank: Option<u32>,
    /// Multi-head latent attention: key/value latent rank.
    #[serde(default)]
    pub kv_lora_rank: Option<u32>,
    /// Multi-head latent attention: per-head query/key width without rotary embedding.
    #[serde(default)]
    pub qk_nope_head_dim: Option<u32>,
    /// Multi-head latent attention: per-head query/key width with rotary embedding.
    #[serde(default)]
    pub qk_rope_head_dim: Option<u32>,
    /// Multi-head latent attention: per-head value width.
    #[serde(default)]
    pub v_head_dim: Option<u32>,
    /// Whether the output head shares the input embedding (blank: it does not).
    #[serde(default)]
    pub tie_embeddings: Option<bool>,
}

/// A disaggregated deployment's prefill role as a store row states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefillRole {
    /// Tensor degree.
    pub tensor: u32,
    /// Pipeline degree.
    pub pipeline: u32,
    /// Replicas.
    pub replicas: u32,
    /// Batch limit.
    pub max_batch: u32,
}

impl PrefillRole {
    /// The role's columns, in [`PrefillRole::of`]'s order.
    pub const COLUMNS: [&'static str; 4] = [
        "prefill_tp",
        "prefill_pp",
        "prefill_replicas",
        "prefill_max_batch",
    ];

    /// The role from its four columns (tensor, pipeline, replicas, batch limit): all stated, or
    /// `None` (an aggregated deployment, or a row stating only some, which [`check_row`]
    /// refuses).
    pub fn of([tensor, pipeline, replicas, max_batch]: [Option<u32>; 4]) -> Option<PrefillRole> {
        Some(PrefillRole {
            tensor: tensor?,
            pipeline: pipeline?,
            replicas: replicas?,
            max_batch: max_batch?,
        })
    }
}

impl ServingRow {
    /// The prefill role of a disaggregated deployment ([`PrefillRole::of`] its columns).
    pub fn prefill(&self) -> Option<PrefillRole> {
        PrefillRole::of(self.prefill_columns())
    }

    /// The prefill role's columns as the row states them.
    fn prefill_columns(&self) -> [Option<u32>; 4] {
        [
            self.prefill_tp,
            self.prefill_pp,
            self.prefill_replicas,
            self.prefill_max_batch,
        ]
    }

    /// Whether the row states any of the prefill role's columns.
    fn states_prefill(&self) -> bool {
        self.prefill_columns().iter().any(Option::is_some)
    }
}

/// The checks of one serving row: its place (shared with training rows), its keywords and its
/// numbers.
pub(super) fn check_row(
    row: &ServingRow,
    line: usize,
    site_folder: &str,
    catalogue: &Catalogue,
) -> Vec<StoreProblem> {
    let mut out = super::check_place(
        [&row.pool, &row.site, &row.device],
        &row.date,
        line,
        site_folder,
        catalogue,
    );
    let problem = |column, message: String, kind| StoreProblem {
        line,
        column: Some(column),
        message,
        kind,
    };
    if let Some(version) = &row.engine_version
        && !is_version(version)
    {
        out.push(problem(
            "engine_version",
            expected_version(),
            ProblemKind::Malformed,
        ));
    }
    if Engine::from_keyword(&row.engine).is_none() {
        out.push(problem(
            "engine",
            format!("expected one of {:?}", Engine::keywords()),
            ProblemKind::Malformed,
        ));
    }
    if ServePrecision::from_keyword(&row.precision).is_none() {
        out.push(problem(
            "precision",
            format!("expected one of {:?}", ServePrecision::keywords()),
            ProblemKind::Malformed,
        ));
    }
    if !matches!(
        row.scenario.as_str(),
        "poisson" | "fixed concurrency" | "offline max throughput"
    ) {
        out.push(problem(
            "scenario",
            "expected `poisson`, `fixed concurrency` or `offline max throughput`".into(),
            ProblemKind::Malformed,
        ));
    }
    let rate_ok = row.request_rate == "inf"
        || row
            .request_rate
            .parse::<f64>()
            .is_ok_and(|r| r > 0.0 && r <= MAX_OUTPUT_TOKENS_PER_S);
    if !rate_ok {
        out.push(problem(
            "request_rate",
            format!(
                "expected requests per second above 0, or `inf`, found `{}`",
                row.request_rate
            ),
            ProblemKind::OutOfRange,
        ));
    }
    for (column, value) in [
        ("out_tok_s_total", Some(row.out_tok_s_total)),
        ("req_s", Some(row.req_s)),
        ("ttft_ms", Some(row.ttft_ms)),
        ("ttft_p99_ms", Some(row.ttft_p99_ms)),
        ("tpot_ms", Some(row.tpot_ms)),
        ("tpot_p99_ms", Some(row.tpot_p99_ms)),
        ("input_len", row.input_len),
        ("output_len", row.output_len),
        ("concurrency", row.concurrency),
    ] {
        if let Some(v) = value
            && !(v > 0.0 && v <= MAX_OUTPUT_TOKENS_PER_S)
        {
            out.push(problem(
                column,
                format!("expected a number above 0 and at most 1e9, found `{v}`"),
                ProblemKind::OutOfRange,
            ));
        }
    }
    if let Some(v) = row.scale_out_gb_s
        && !(v > 0.0 && v <= MAX_OUTPUT_TOKENS_PER_S)
    {
        out.push(problem(
            "scale_out_gb_s",
            format!("expected a number above 0 and at most 1e9, found `{v}`"),
            ProblemKind::OutOfRange,
        ));
    }
    let prefill = row.prefill();
    if prefill.is_none() && row.states_prefill() {
        out.push(problem(
            "prefill_tp",
            "a disaggregated deployment states its prefill role's `prefill_tp`, `prefill_pp`, \
             `prefill_replicas` and `prefill_max_batch` together (all blank for an aggregated one)"
                .into(),
            ProblemKind::Malformed,
        ));
    }
    for (column, value) in [
        ("layers", row.layers),
        ("hidden", row.hidden),
        ("heads", row.heads),
        ("device_count", row.device_count),
        ("tp", row.tp),
        ("pp", row.pp),
        ("replicas", row.replicas),
        ("devices_per_node", row.devices_per_node.unwrap_or(1)),
        ("max_batch", row.max_batch.unwrap_or(1)),
        ("prefill_tp", row.prefill_tp.unwrap_or(1)),
        ("prefill_pp", row.prefill_pp.unwrap_or(1)),
        ("prefill_replicas", row.prefill_replicas.unwrap_or(1)),
        ("prefill_max_batch", row.prefill_max_batch.unwrap_or(1)),
    ] {
        if value == 0 {
            out.push(problem(
                column,
                "expected at least 1".into(),
                ProblemKind::OutOfRange,
            ));
        }
    }
    // Saturating: three counts of four billion overflow 64 bits.
    let role = |tp: u32, pp: u32, replicas: u32| {
        u64::from(tp)
            .saturating_mul(u64::from(pp))
            .saturating_mul(u64::from(replicas))
    };
    let deployed = role(row.tp, row.pp, row.replicas)
        .saturating_add(prefill.map_or(0, |p| role(p.tensor, p.pipeline, p.replicas)));
    if deployed > u64::from(row.device_count) {
        let product = if prefill.is_some() {
            "tp × pp × replicas of both roles"
        } else {
            "tp × pp × replicas"
        };
        out.push(problem(
            "device_count",
            format!(
                "{product} is {deployed}, more than the {} devices of the row",
                row.device_count
            ),
            ProblemKind::Malformed,
        ));
    }
    super::model::check_serving(row, &mut out, &problem);
    out
}

/// The CSV line of `row`, in [`COLUMNS`] order, without its newline.
pub fn line(row: &ServingRow) -> String {
    fields(row).join(",")
}

/// The CSV line of `row` for a file whose first line is `header` (one of [`is_header`]'s), or
/// why the row cannot be written there: a file of [`FIRST_COLUMNS`] takes the row without its
/// deployment columns, which only a disaggregated deployment cannot spare.
pub fn line_for(row: &ServingRow, header: &str) -> Result<String, String> {
    if header == COLUMNS {
        return Ok(line(row));
    }
    if header != FIRST_COLUMNS && header != DEPLOYMENT_COLUMNS {
        return Err("its first line is not the serving runs store's header".into());
    }
    let all = fields(row);
    if all
        .iter()
        .skip(all.len() - MODEL_COLUMNS)
        .any(|f| !f.is_empty())
    {
        return Err(format!(
            "it has an earlier header of the store, which has no columns for this service's \
             model (a mixture of experts, the attention's shape, or an MLP the weights' name \
             does not tell); extend its first line to the current header (its rows keep \
             their meaning): `{COLUMNS}`"
        ));
    }
    if header == DEPLOYMENT_COLUMNS {
        let mut fields = all;
        fields.truncate(DEPLOYMENT_COLUMNS.split(',').count());
        return Ok(fields.join(","));
    }
    if row.prefill().is_some() {
        return Err(format!(
            "it has the store's first header, which has no columns for a disaggregated \
             deployment's prefill role; extend its first line to the current header (its rows \
             keep their meaning): `{COLUMNS}`"
        ));
    }
    let columns = FIRST_COLUMNS.split(',').count();
    let mut fields = fields(row);
    fields.truncate(columns);
    Ok(fields.join(","))
}

/// The fields of `row`, in [`COLUMNS`] order.
fn fields(row: &ServingRow) -> Vec<String> {
    let q = super::quoted;
    let opt = |v: Option<f64>, digits: usize| v.map_or(String::new(), |v| format!("{v:.digits$}"));
    let count = |v: Option<u32>| v.map_or(String::new(), |v| v.to_string());
    vec![
        q(&row.run_id),
        q(&row.date),
        q(&row.pool),
        q(&row.site),
        q(&row.service),
        q(&row.tool),
        q(&row.log),
        q(&row.engine),
        q(row.engine_version.as_deref().unwrap_or("")),
        q(&row.model),
        row.layers.to_string(),
        row.hidden.to_string(),
        row.heads.to_string(),
        row.kv_heads.to_string(),
        row.ffn.to_string(),
        row.vocab.to_string(),
        q(&row.precision),
        q(&row.device),
        row.device_count.to_string(),
        row.tp.to_string(),
        row.pp.to_string(),
        row.replicas.to_string(),
        q(&row.scenario),
        opt(row.input_len, 1),
        opt(row.output_len, 1),
        q(&row.request_rate),
        opt(row.concurrency, 0),
        format!("{:.2}", row.out_tok_s_total),
        format!("{:.4}", row.req_s),
        format!("{:.2}", row.ttft_ms),
        format!("{:.2}", row.ttft_p99_ms),
        format!("{:.2}", row.tpot_ms),
        format!("{:.2}", row.tpot_p99_ms),
        opt(row.predicted_out_tok_s_per_device, 2),
        opt(row.predicted_ttft_ms, 2),
        opt(row.predicted_tpot_ms, 2),
        opt(row.throughput_uncertainty, 4),
        q(&row.source),
        count(row.devices_per_node),
        opt(row.scale_out_gb_s, 3),
        count(row.max_batch),
        count(row.prefill_tp),
        count(row.prefill_pp),
        count(row.prefill_replicas),
        count(row.prefill_max_batch),
        q(row.mlp.as_deref().unwrap_or("")),
        count(row.experts),
        count(row.top_k),
        count(row.expert_ffn),
        count(row.shared_experts),
        count(row.dense_layers),
        row.capacity_factor
            .map_or(String::new(), |v| format!("{v}")),
        count(row.head_dim),
        count(row.sliding_window),
        count(row.global_every),
        row.q_lora_rank.map_or(String::new(), |v| v.to_string()),
        count(row.kv_lora_rank),
        count(row.qk_nope_head_dim),
        count(row.qk_rope_head_dim),
        count(row.v_head_dim),
        row.tie_embeddings.map_or(String::new(), |t| t.to_string()),
    ]
}

/// The rows of a serving store file that read as rows (a row of the first header's columns
/// under the current header too, its deployment columns blank).
pub fn read_rows(text: &str) -> Vec<ServingRow> {
    csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes())
        .deserialize::<ServingRow>()
        .filter_map(Result::ok)
        .collect()
}
