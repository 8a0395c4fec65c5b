//! `loam runs ingest --append`: the measured training runs written to the runs store,
//! `<catalogue>/runs/<site>/runs.csv` (docs/calibration.md, "The runs store"). Append-only: an
//! existing line is never rewritten; the file is refused when its header is not the store's or
//! its last line is cut, and the write is refused through a symbolic link or outside the
//! repository (docs/security.md).

use crate::io::{self, IoError};
use loam_compiler::catalogue::Catalogue;
use loam_compiler::check::Job;
use loam_compiler::runs::TrainingMeasure;
use loam_compiler::runs::store::{self, COLUMNS, StoreRow};
use loam_compiler::workload::ExpertDispatch;
use serde_json::Value;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The file of a site's runs inside its store folder.
const STORE_FILE: &str = "runs.csv";

/// What a row needs from the job's plan and spec, besides the log.
pub struct RanWith<'a> {
    /// The plan object of the job (one element of the Plan JSON's `plans`).
    pub plan: &'a Value,
    /// The job's typed spec.
    pub job: &'a Job,
    /// The catalogue the plan was made against.
    pub catalogue: &'a Catalogue,
    /// The day, `YYYY-MM-DD`.
    pub date: &'a str,
}

/// The store row of one training log, or why there is none.
pub fn row(log: &str, measured: &TrainingMeasure, ran: &RanWith<'_>) -> Result<StoreRow, String> {
    let plan = ran.plan;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let groups = plan.get("groups").and_then(Value::as_array);
    let [group] = groups.map(Vec::as_slice).unwrap_or(&[]) else {
        return Err(
            "the plan runs on more than one node group: the runs store keeps runs of \
                    one device type at one site"
                .into(),
        );
    };
    let pool = text(plan.get("pool"));
    let site = text(group.get("site"));
    let device = text(group.get("device"));
    let node_group = text(group.get("node_group"));
    folder_names(&site, &pool)?;
    let devices = group
        .get("devices")
        .and_then(Value::as_u64)
        .and_then(|d| u32::try_from(d).ok())
        .filter(|d| *d > 0)
        .ok_or("the plan's group states no device count")?;
    let nic_gbps = ran
        .catalogue
        .pools
        .get(&pool)
        .and_then(|p| p.node_group(&node_group))
        .map(|(_, g)| f64::from(g.nics) * g.nic_bandwidth * 8.0 / 1e9)
        .ok_or_else(|| {
            format!("node group `{node_group}` of pool `{pool}` is not in the catalogue")
        })?;
    let layout = plan.get("layout").ok_or("the plan has no layout")?;
    let degree = |k: &str| {
        layout
            .get(k)
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
    };
    let model = &ran.job.model;
    let narrow = |v: u64, what: &str| u32::try_from(v).map_err(|_| format!("{what} is too large"));
    let global_batch = measured.global_batch.unwrap_or(ran.job.train.global_batch);
    let seq_len = narrow(model.seq_len, "seq_len")?;
    // Megatron prints seconds per iteration: an iteration trains the global batch of sequences.
    // DeepSpeed and the HF Trainer print samples (sequences) per second of the whole job.
    let per_device = match (
        measured.tokens_per_s_per_device,
        measured.samples_per_s,
        measured.step_s,
    ) {
        (Some(t), _, _) => t,
        (None, Some(samples), _) => samples * f64::from(seq_len) / f64::from(devices),
        (None, None, Some(step)) => {
            global_batch as f64 * f64::from(seq_len) / step / f64::from(devices)
        }
        (None, None, None) => {
            return Err("the log states neither a step time nor a token or sample rate".into());
        }
    };
    let predicted = plan
        .get("estimate")
        .and_then(|e| e.get("tokens_per_s"))
        .and_then(Value::as_f64)
        .map(|t| t / f64::from(devices));
    let uncertainty = plan
        .get("estimate")
        .and_then(|e| e.get("throughput_uncertainty"))
        .and_then(Value::as_f64);
    let stem = Path::new(log)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("log")
        .to_string();
    let recompute = layout
        .get("recompute")
        .and_then(Value::as_str)
        .map(str::to_string);
    let moe = model.experts.filter(|e| *e > 1);
    let dims = loam_compiler::check::job_model_dims(ran.job);
    if !dims.trainable.is_full() {
        return Err(
            "the job trains adapters or freezes weights: the runs store keeps runs that train \
             every weight (it has no columns for what trains), so the fit would cost this run \
             as a full training step"
                .into(),
        );
    }
    if ran.job.train.states != loam_compiler::workload::StateOverrides::NONE {
        return Err(
            "the job pins its state formats or framework (`train { gradients, master_weights, \
             moments, framework }`): the runs store has no columns for them, so the fit would \
             cost this run with the recipe's"
                .into(),
        );
    }
    // The dispatch the plan costed (Plan JSON `workload.expert_dispatch`, absent for the
    // all-to-all).
    let dispatch = plan
        .get("workload")
        .and_then(|w| w.get("expert_dispatch"))
        .and_then(Value::as_str)
        .and_then(ExpertDispatch::from_keyword)
        .unwrap_or_default();
    let mut row = StoreRow {
        run_id: format!("{site}_{}_{stem}", ran.date),
        date: ran.date.to_string(),
        pool,
        site,
        job: text(plan.get("job")),
        tool: measured.tool.to_string(),
        log: log.to_string(),
        layers: narrow(model.layers, "layers")?,
        hidden: narrow(model.hidden, "hidden")?,
        heads: narrow(model.heads, "heads")?,
        kv_heads: narrow(model.kv_heads, "kv_heads")?,
        ffn: narrow(model.ffn, "ffn")?,
        vocab: narrow(model.vocab, "vocab")?,
        mlp: model.mlp.as_str().to_string(),
        seq_len,
        device,
        devices,
        node_nic_gbps: nic_gbps,
        precision: text(plan.get("workload").and_then(|w| w.get("precision"))),
        tp: degree("tensor").unwrap_or(1),
        pp: degree("pipeline").unwrap_or(1),
        dp: degree("data").unwrap_or(1),
        cp: degree("context").unwrap_or(1),
        vpp: degree("virtual_stages").unwrap_or(1),
        zero: degree("zero")
            .and_then(|z| u8::try_from(z).ok())
            .unwrap_or(0),
        recompute,
        micro_batch: degree("micro_batch"),
        global_batch: narrow(global_batch, "global_batch")?,
        ep: moe.and(degree("expert")),
        experts: moe.map(|e| narrow(e, "experts")).transpose()?,
        top_k: moe
            .and(model.top_k)
            .map(|k| narrow(k, "top_k"))
            .transpose()?,
        measured_tokens_per_s_per_device: per_device,
        predicted_tokens_per_s_per_device: predicted,
        throughput_uncertainty: uncertainty,
        source: format!("runs store: {}", measured.tool),
        ..StoreRow::default()
    };
    let stack = store::model::Stack {
        dispatch,
        optimizer: ran.job.train.optimizer,
        tensor_overlap: layout
            .get("tensor_overlap")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    store::model::set(&mut row, &dims, stack);
    Ok(row)
}

/// The plan's site and pool become folder names of the store: plain names only (no path
/// separator, dot or control character reaches a path).
pub fn folder_names(site: &str, pool: &str) -> Result<(), String> {
    for (what, value) in [("site", site), ("pool", pool)] {
        if value.is_empty()
            || !value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "the plan's {what} `{}` is not a name the store can be a folder of",
                value.escape_debug()
            ));
        }
    }
    Ok(())
}

/// Appends training `rows` (each already checked) to the site's store file,
/// `<catalogue_dir>/runs/<site>/runs.csv` ([`append_lines`]).
pub fn append(catalogue_dir: &Path, site: &str, rows: &[StoreRow]) -> Result<PathBuf, IoError> {
    append_lines(catalogue_dir, site, STORE_FILE, COLUMNS, &|header| {
        rows.iter().map(|r| store::line_for(r, header)).collect()
    })
}

/// The lines to append for a file whose first line is the given header (`Err`: why they
/// cannot go in that file).
pub type Render<'a> = dyn Fn(&str) -> Result<Vec<String>, String> + 'a;

/// Appends store rows (each already checked), rendered by `render` for the file's own header
/// (without their newline), to the site's store file `<catalogue_dir>/runs/<site>/<file_name>`:
/// the one writer of training and serving rows. Creates the folders and the file with `header`
/// when missing. Refuses a symbolic link at the catalogue folder, the store folder, the site
/// folder or the file; a store folder that resolves outside the repository holding the
/// catalogue; an existing file whose header `render` refuses or whose last line is cut. Nothing
/// is written when anything is refused. Returns the file written.
pub fn append_lines(
    catalogue_dir: &Path,
    site: &str,
    file_name: &str,
    header: &str,
    render: &Render<'_>,
) -> Result<PathBuf, IoError> {
    let folder = catalogue_dir.join("runs").join(site);
    let file = folder.join(file_name);
    let name = io::display(&file);
    let refuse = |why: &str| IoError(format!("will not append to `{name}`: {why}"));
    // The repository holding the catalogue (a name inside the folder stands for it).
    let repository = io::write::repository_root(&catalogue_dir.join("runs"));
    for step in [
        catalogue_dir.to_path_buf(),
        catalogue_dir.join("runs"),
        folder.clone(),
    ] {
        if let Ok(meta) = fs::symlink_metadata(&step)
            && meta.file_type().is_symlink()
        {
            return Err(refuse(&format!(
                "`{}` is a symbolic link",
                io::display(&step)
            )));
        }
    }
    fs::create_dir_all(&folder).map_err(|e| refuse(&e.to_string()))?;
    let canonical = folder.canonicalize().map_err(|e| refuse(&e.to_string()))?;
    if !canonical.starts_with(repository) {
        return Err(refuse("the store folder is outside the repository"));
    }
    let joined = |header: &str| -> Result<String, IoError> {
        let mut lines = String::new();
        for line in render(header).map_err(|why| refuse(&why))? {
            if line.chars().any(|c| c.is_control()) {
                return Err(refuse("a field holds a control character"));
            }
            lines.push_str(&line);
            lines.push('\n');
        }
        Ok(lines)
    };
    match fs::symlink_metadata(&file) {
        Ok(meta) if meta.file_type().is_symlink() => Err(refuse("it is a symbolic link")),
        Ok(meta) if !meta.is_file() => Err(refuse("it is not a regular file")),
        Ok(_) => {
            let existing = fs::read_to_string(&file).map_err(|e| refuse(&e.to_string()))?;
            let first = existing.lines().next().unwrap_or("").trim_end_matches('\r');
            let lines = joined(first)?;
            if !existing.ends_with('\n') {
                return Err(refuse(
                    "its last line is cut (no final newline); fix it in review first",
                ));
            }
            let mut handle = fs::OpenOptions::new()
                .append(true)
                .open(&file)
                .map_err(|e| refuse(&e.to_string()))?;
            handle
                .write_all(lines.as_bytes())
                .map_err(|e| refuse(&e.to_string()))?;
            Ok(file)
        }
        Err(_) => {
            let lines = joined(header)?;
            // `create_new` fails on any existing name, a link planted since included.
            let mut handle = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&file)
                .map_err(|e| refuse(&e.to_string()))?;
            handle
                .write_all(format!("{header}\n{lines}").as_bytes())
                .map_err(|e| refuse(&e.to_string()))?;
            Ok(file)
        }
    }
}

/// Today in UTC as `YYYY-MM-DD`, from the system clock (civil-from-days, H. Hinnant,
/// "chrono-Compatible Low-Level Date Algorithms").
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
