//! The runs store: a team's measured training runs kept in the repository as CSV files under
//! `specs/runs/<site>/`, one line per run, appended by `loam runs ingest --append` and never
//! rewritten, reviewed in pull requests like specs. This module is the row's schema (a superset
//! of the published-runs calibration file's columns, so `loam calibrate --fit` costs a stored
//! run with the same code and the planner's step-time function), the line a row is written as,
//! and the check of a store file against the catalogue that `loam check` reports.

use crate::calibrate::MAX_MEASURED_TOKENS_PER_S;
use crate::catalogue::Catalogue;
use loam_ir::types::{Mlp, Precision, Recompute};
use serde::Deserialize;

/// The header of every store file, in order. The columns from `layers` to
/// `measured_tokens_per_s_per_device` are those of the published-runs calibration file
/// (`tests/data/training_runs_calibration.csv`), so the calibration reader reads a store file.
pub const COLUMNS: &str = "run_id,date,pool,site,job,tool,log,layers,hidden,heads,kv_heads,ffn,\
vocab,mlp,seq_len,device,devices,node_nic_gbps,precision,tp,pp,dp,cp,vpp,zero,recompute,\
micro_batch,global_batch,ep,experts,top_k,measured_tokens_per_s_per_device,\
predicted_tokens_per_s_per_device,throughput_uncertainty,source,expert_ffn,shared_experts,\
dense_layers,capacity_factor,expert_groups,groups_per_token,expert_dispatch,head_dim,\
sliding_window,global_every,q_lora_rank,kv_lora_rank,qk_nope_head_dim,qk_rope_head_dim,\
v_head_dim,tie_embeddings,optimizer,tensor_overlap";

/// The header of files started before the model's and stack's columns ([`model`]), a prefix of
/// [`COLUMNS`]. Such a file is read, checked and appended to in its own header, with rows whose
/// model and stack columns are blank ([`line_for`]); a run that needs them goes to a new file.
pub const FIRST_COLUMNS: &str = "run_id,date,pool,site,job,tool,log,layers,hidden,heads,\
kv_heads,ffn,vocab,mlp,seq_len,device,devices,node_nic_gbps,precision,tp,pp,dp,cp,vpp,zero,\
recompute,micro_batch,global_batch,ep,experts,top_k,measured_tokens_per_s_per_device,\
predicted_tokens_per_s_per_device,throughput_uncertainty,source";

/// Whether `line` (a file's first line, without its line ending) is a training store header.
pub fn is_header(line: &str) -> bool {
    line == COLUMNS || line == FIRST_COLUMNS
}

/// One measured run as the store keeps it.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct StoreRow {
    /// `<site>_<date>_<log stem>`: unique in practice, and its prefix (the site) is the family
    /// the calibration groups runs by.
    pub run_id: String,
    /// The day the row was appended, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// The pool and site the job ran at (the plan's group).
    pub pool: String,
    /// The site; also the store folder's name.
    pub site: String,
    /// The job's name in its spec.
    pub job: String,
    /// The tool that wrote the log (`megatron-lm`, `torchtitan`).
    pub tool: String,
    /// The log's file name as given to `loam runs ingest`.
    pub log: String,
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
    /// `swiglu` or `gelu`.
    pub mlp: String,
    /// Sequence length.
    pub seq_len: u32,
    /// Device id.
    pub device: String,
    /// Devices the job ran on.
    pub devices: u32,
    /// Scale-out bandwidth of one node, Gbps (the node group's NICs).
    pub node_nic_gbps: f64,
    /// Training precision keyword.
    pub precision: String,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Context-parallel degree.
    pub cp: u32,
    /// Virtual pipeline stages.
    pub vpp: u32,
    /// ZeRO stage.
    pub zero: u8,
    /// Recomputation keyword, blank for none stated.
    pub recompute: Option<String>,
    /// Micro-batch, blank when unknown.
    pub micro_batch: Option<u32>,
    /// Global batch in sequences.
    pub global_batch: u32,
    /// Expert-parallel degree.
    pub ep: Option<u32>,
    /// Routed experts (blank for dense).
    pub experts: Option<u32>,
    /// Experts per token.
    pub top_k: Option<u32>,
    /// The measured figure.
    pub measured_tokens_per_s_per_device: f64,
    /// The plan's prediction when the run was ingested.
    pub predicted_tokens_per_s_per_device: Option<f64>,
    /// The plan's stated relative uncertainty of that prediction.
    pub throughput_uncertainty: Option<f64>,
    /// Free text: where the row came from (the calibration reader takes the stack from it).
    pub source: String,
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
    /// Groups the experts form for group-limited routing (MoE).
    #[serde(default)]
    pub expert_groups: Option<u32>,
    /// Groups each token picks its experts from (MoE, with `expert_groups`).
    #[serde(default)]
    pub groups_per_token: Option<u32>,
    /// How the stack sent tokens to their experts (`all_to_all`, `deduplicated`; MoE).
    #[serde(default)]
    pub expert_dispatch: Option<String>,
    /// Width of one attention head, when not `hidden / heads`.
    #[serde(default)]
    pub head_dim: Option<u32>,
    /// Attention window of the sliding-window blocks, in tokens.
    #[serde(default)]
    pub sliding_window: Option<u32>,
    /// Every `global_every`th block attends globally (with `sliding_window`).
    #[serde(default)]
    pub global_every: Option<u32>,
    /// Multi-head latent attention: query down-projection rank (0: a plain projection).
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
    /// The optimizer keyword, blank for AdamW.
    #[serde(default)]
    pub optimizer: Option<String>,
    /// Whether the tensor-parallel collectives ran under the GEMMs (blank: blocking).
    #[serde(default)]
    pub tensor_overlap: Option<bool>,
}

/// A problem of one store line, located: the 1-based line, the column when one is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreProblem {
    /// The line in the file (1 is the header).
    pub line: usize,
    /// The column at fault, when one is.
    pub column: Option<&'static str>,
    /// What is wrong.
    pub message: String,
    /// What kind of problem, so the catalogue gives it its code.
    pub kind: ProblemKind,
}

/// The kinds of store problem, each reported with the catalogue's code for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// A line that is not a row of the store's columns.
    Malformed,
    /// A number outside its range.
    OutOfRange,
    /// A pool or site the catalogue does not have.
    UnknownSite,
    /// A device the catalogue or the site does not have.
    UnknownDevice,
}

/// Checks one store file, `site_folder` the name of the folder it is in, against `catalogue`.
/// Every line is checked; an empty result means the file is good.
pub fn check(site_folder: &str, text: &str, catalogue: &Catalogue) -> Vec<StoreProblem> {
    let mut problems = Vec::new();
    let first = text.lines().next().unwrap_or("").trim_end_matches('\r');
    let serving_file = serving::is_header(first);
    if !is_header(first) && !serving_file {
        problems.push(StoreProblem {
            line: 1,
            column: None,
            message: format!(
                "a runs store file starts with the header `{COLUMNS}` (training runs) or \
                 `{}` (serving runs); a file started before the columns after `source` \
                 keeps the header that ends there",
                serving::COLUMNS
            ),
            kind: ProblemKind::Malformed,
        });
        return problems;
    }
    if !text.is_empty() && !text.ends_with('\n') {
        problems.push(StoreProblem {
            line: text.lines().count(),
            column: None,
            message: "the last line does not end with a newline: a cut append (each run is one \
                      whole line)"
                .into(),
            kind: ProblemKind::Malformed,
        });
    }
    // A serving file's rows may stop after the first header's columns (a file whose first
    // line was extended to the current header keeps its rows), so its records may be shorter.
    let mut reader = csv::ReaderBuilder::new()
        .flexible(serving_file)
        .from_reader(text.as_bytes());
    let headers = reader.headers().cloned().unwrap_or_default();
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line() as usize);
                problems.push(malformed(line, None, format!("not a store row: {e}")));
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line() as usize);
        if record.len() > headers.len() {
            problems.push(malformed(
                line,
                None,
                format!(
                    "not a store row: {} fields, more than the header's {}",
                    record.len(),
                    headers.len()
                ),
            ));
            continue;
        }
        let checked = if serving_file {
            record
                .deserialize::<serving::ServingRow>(Some(&headers))
                .map(|row| serving::check_row(&row, line, site_folder, catalogue))
        } else {
            record
                .deserialize::<StoreRow>(Some(&headers))
                .map(|row| check_row(&row, line, site_folder, catalogue))
        };
        match checked {
            Ok(found) => problems.extend(found),
            Err(e) => problems.push(malformed(line, None, format!("not a store row: {e}"))),
        }
    }
    problems
}

fn malformed(line: usize, column: Option<&'static str>, message: String) -> StoreProblem {
    StoreProblem {
        line,
        column,
        message,
        kind: ProblemKind::Malformed,
    }
}

/// The checks of one training row: its place, its keywords and its numbers.
fn check_row(
    row: &StoreRow,
    line: usize,
    site_folder: &str,
    catalogue: &Catalogue,
) -> Vec<StoreProblem> {
    let mut out = check_place(
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
    check_model_and_numbers(row, &mut out, &problem);
    model::check(row, &mut out, &problem);
    out
}

/// The checks every store row has, training or serving: the site is its folder's, the pool,
/// site and device are the catalogue's, and the date is a date.
fn check_place(
    [pool, site, device]: [&str; 3],
    date: &str,
    line: usize,
    site_folder: &str,
    catalogue: &Catalogue,
) -> Vec<StoreProblem> {
    let mut out = Vec::new();
    let problem = |column, message: String, kind| StoreProblem {
        line,
        column: Some(column),
        message,
        kind,
    };
    if site != site_folder {
        out.push(problem(
            "site",
            format!(
                "the row is at site `{}` but stored under `runs/{site_folder}/`: a site's runs \
                 live in its own folder",
                site
            ),
            ProblemKind::Malformed,
        ));
    }
    match catalogue.pools.get(pool) {
        None => out.push(problem(
            "pool",
            format!("unknown pool `{}`", pool),
            ProblemKind::UnknownSite,
        )),
        Some(found) => match found.site(site) {
            None => out.push(problem(
                "site",
                format!(
                    "pool `{}` has no site `{}` (its sites: {})",
                    pool,
                    site,
                    found.site_names().join(", ")
                ),
                ProblemKind::UnknownSite,
            )),
            Some(at) => {
                if catalogue.device(device).is_none() {
                    out.push(problem(
                        "device",
                        format!("unknown device `{}`", device),
                        ProblemKind::UnknownDevice,
                    ));
                } else if at.devices_of(device).1 == 0 {
                    out.push(problem(
                        "device",
                        format!(
                            "site `{}` has no {} (its devices: {})",
                            site,
                            device,
                            at.device_ids().join(", ")
                        ),
                        ProblemKind::UnknownDevice,
                    ));
                }
            }
        },
    }
    if !is_date(date) {
        out.push(problem(
            "date",
            format!("expected a date `YYYY-MM-DD`, found `{}`", date),
            ProblemKind::Malformed,
        ));
    }
    out
}

/// The model, layout and number checks of a training row.
fn check_model_and_numbers(
    row: &StoreRow,
    out: &mut Vec<StoreProblem>,
    problem: &impl Fn(&'static str, String, ProblemKind) -> StoreProblem,
) {
    if Precision::from_keyword(&row.precision).is_none() {
        out.push(problem(
            "precision",
            format!("expected one of {:?}", Precision::keywords()),
            ProblemKind::Malformed,
        ));
    }
    if Mlp::from_keyword(&row.mlp).is_none() {
        out.push(problem(
            "mlp",
            format!("expected one of {:?}", Mlp::keywords()),
            ProblemKind::Malformed,
        ));
    }
    if let Some(r) = row.recompute.as_deref().filter(|r| !r.is_empty())
        && Recompute::from_keyword(r).is_none()
    {
        out.push(problem(
            "recompute",
            format!("expected one of {:?}", Recompute::keywords()),
            ProblemKind::Malformed,
        ));
    }
    let measured = row.measured_tokens_per_s_per_device;
    if !(measured > 0.0 && measured <= MAX_MEASURED_TOKENS_PER_S) {
        out.push(problem(
            "measured_tokens_per_s_per_device",
            format!("expected a throughput above 0 and at most 1e9 tokens/s per device, found `{measured}`"),
            ProblemKind::OutOfRange,
        ));
    }
    let degrees = [
        ("layers", row.layers),
        ("hidden", row.hidden),
        ("heads", row.heads),
        ("seq_len", row.seq_len),
        ("devices", row.devices),
        ("tp", row.tp),
        ("pp", row.pp),
        ("dp", row.dp),
        ("cp", row.cp),
        ("vpp", row.vpp),
        ("global_batch", row.global_batch),
    ];
    for (column, value) in degrees {
        if value == 0 {
            out.push(problem(
                column,
                "expected at least 1".into(),
                ProblemKind::OutOfRange,
            ));
        }
    }
    // Saturating: four counts of four billion overflow 64 bits.
    let layout = [row.pp, row.dp, row.cp]
        .into_iter()
        .fold(u64::from(row.tp), |product, d| {
            product.saturating_mul(u64::from(d))
        });
    if layout != 0 && layout != u64::from(row.devices) {
        out.push(problem(
            "devices",
            format!(
                "tp × pp × dp × cp is {layout}, not the {} devices of the row",
                row.devices
            ),
            ProblemKind::Malformed,
        ));
    }
    if !(row.node_nic_gbps > 0.0 && row.node_nic_gbps <= crate::calibrate::MAX_NIC_GBPS) {
        out.push(problem(
            "node_nic_gbps",
            format!(
                "expected a bandwidth above 0 and at most 1e6 Gbps, found `{}`",
                row.node_nic_gbps
            ),
            ProblemKind::OutOfRange,
        ));
    }
}

/// Whether `text` is `YYYY-MM-DD` with a plausible month and day.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    let number = |s: &str, len: usize| {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    matches!(
        (number(y, 4), number(m, 2), number(d, 2)),
        (Some(_), Some(1..=12), Some(1..=31))
    )
}

/// The CSV line of `row`, in [`COLUMNS`] order, without its newline; a field with a comma,
/// quote or line break is quoted, and control characters are refused by the caller before.
pub fn line(row: &StoreRow) -> String {
    fields(row).join(",")
}

/// The CSV line of `row` for a file whose first line is `header` (one of [`is_header`]'s), or
/// why the row cannot be written there: a file of [`FIRST_COLUMNS`] takes a row whose model and
/// stack columns are all blank (a dense model of plain attention), and no other.
pub fn line_for(row: &StoreRow, header: &str) -> Result<String, String> {
    if header == COLUMNS {
        return Ok(line(row));
    }
    if header != FIRST_COLUMNS {
        return Err("its first line is not the runs store's header".into());
    }
    let columns = FIRST_COLUMNS.split(',').count();
    let mut fields = fields(row);
    if fields.iter().skip(columns).any(|f| !f.is_empty()) {
        return Err(
            "it has the store's first header, which has no columns for this run's model and \
             stack (experts' shape, routing, dispatch, attention); rename it (`git mv` it to \
             another `.csv` name in the same folder: every CSV file of a site's folder is \
             read) and append again, which starts the file anew with the current header"
                .into(),
        );
    }
    fields.truncate(columns);
    Ok(fields.join(","))
}

/// The fields of `row`, in [`COLUMNS`] order.
fn fields(row: &StoreRow) -> Vec<String> {
    let opt = |v: Option<u32>| v.map_or(String::new(), |v| v.to_string());
    let optf = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
    vec![
        quoted(&row.run_id),
        quoted(&row.date),
        quoted(&row.pool),
        quoted(&row.site),
        quoted(&row.job),
        quoted(&row.tool),
        quoted(&row.log),
        row.layers.to_string(),
        row.hidden.to_string(),
        row.heads.to_string(),
        row.kv_heads.to_string(),
        row.ffn.to_string(),
        row.vocab.to_string(),
        quoted(&row.mlp),
        row.seq_len.to_string(),
        quoted(&row.device),
        row.devices.to_string(),
        format!("{}", row.node_nic_gbps),
        quoted(&row.precision),
        row.tp.to_string(),
        row.pp.to_string(),
        row.dp.to_string(),
        row.cp.to_string(),
        row.vpp.to_string(),
        row.zero.to_string(),
        quoted(row.recompute.as_deref().unwrap_or("")),
        opt(row.micro_batch),
        row.global_batch.to_string(),
        opt(row.ep),
        opt(row.experts),
        opt(row.top_k),
        format!("{:.2}", row.measured_tokens_per_s_per_device),
        row.predicted_tokens_per_s_per_device
            .map_or(String::new(), |v| format!("{v:.2}")),
        optf(row.throughput_uncertainty),
        quoted(&row.source),
        opt(row.expert_ffn),
        opt(row.shared_experts),
        opt(row.dense_layers),
        row.capacity_factor
            .map_or(String::new(), |v| format!("{v}")),
        opt(row.expert_groups),
        opt(row.groups_per_token),
        quoted(row.expert_dispatch.as_deref().unwrap_or("")),
        opt(row.head_dim),
        opt(row.sliding_window),
        opt(row.global_every),
        opt(row.q_lora_rank),
        opt(row.kv_lora_rank),
        opt(row.qk_nope_head_dim),
        opt(row.qk_rope_head_dim),
        opt(row.v_head_dim),
        row.tie_embeddings.map_or(String::new(), |t| t.to_string()),
        quoted(row.optimizer.as_deref().unwrap_or("")),
        row.tensor_overlap.map_or(String::new(), |t| t.to_string()),
    ]
}

fn quoted(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

pub mod model;
pub mod serving;
#[cfg(test)]
mod tests;

/// Whether `path` is a runs store file: `…/runs/<site>/<name>.csv`.
pub fn is_store_path(path: &str) -> bool {
    let normal = path.replace('\\', "/");
    let mut parts = normal.rsplit('/');
    let name = parts.next().unwrap_or("");
    let _site = parts.next();
    name.ends_with(".csv") && parts.next() == Some("runs")
}

/// The problems of the store file at `path` as the catalogue's diagnostics, each located at
/// its line: an unknown pool or site is L2010, an unknown device L2009, a number out of range
/// L2008, anything else about the line's shape L2005.
pub fn diagnostics(
    file: loam_ir::span::FileId,
    path: &str,
    text: &str,
    catalogue: &Catalogue,
) -> Vec<loam_ir::diagnostics::Diagnostic> {
    use crate::catalogue::codes;
    use loam_ir::diagnostics::Diagnostic;
    use loam_ir::span::Span;
    let normal = path.replace('\\', "/");
    let site_folder = normal.rsplit('/').nth(1).unwrap_or("");
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    check(site_folder, text, catalogue)
        .into_iter()
        .map(|p| {
            let start = starts
                .get(p.line.saturating_sub(1))
                .copied()
                .unwrap_or(text.len())
                .min(text.len());
            let end = text
                .get(start..)
                .and_then(|rest| rest.find('\n'))
                .map_or(text.len(), |n| start + n);
            let code = match p.kind {
                ProblemKind::Malformed => codes::WRONG_TYPE,
                ProblemKind::OutOfRange => codes::OUT_OF_RANGE,
                ProblemKind::UnknownSite => codes::UNKNOWN_SITE,
                ProblemKind::UnknownDevice => codes::UNKNOWN_DEVICE,
            };
            let label = p
                .column
                .map_or_else(|| "this line".to_string(), |c| format!("column `{c}`"));
            Diagnostic::error(code, p.message, Span::new(file, start, end), label).with_help(
                "a runs store line is appended by `loam runs ingest --append`; fix the line in \
                 the pull request that added it (docs/calibration.md, \"The runs store\")",
            )
        })
        .collect()
}

/// The rows of a store file that read as rows (a file `loam check` accepts reads whole).
pub fn read_rows(text: &str) -> Vec<StoreRow> {
    csv::ReaderBuilder::new()
        .from_reader(text.as_bytes())
        .deserialize::<StoreRow>()
        .filter_map(Result::ok)
        .collect()
}
