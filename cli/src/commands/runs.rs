//! `loam runs ingest`: the measured figures of training logs and serving-benchmark results, one
//! row per file, beside the plan the job ran with when its Plan JSON is given (predicted step
//! time and the error). Nothing is written: the rows go to standard output, for a team to append
//! to its runs store (docs/calibration.md, "Measured runs"); with `--append` the training rows
//! are appended to the runs store themselves (`runs/append.rs`).

mod append;
mod check;
mod serving;

use crate::Context;
use crate::args::{OutputFormat, RunsArgs, RunsCommand};
use loam_compiler::runs::{Measured, ingest_bytes};
use serde_json::{Value, json};
use std::path::Path;

/// The columns of a text row, in order.
const COLUMNS: &str = "file,tool,kind,job,device,devices,layout,precision,measured_step_s,\
predicted_step_s,measured_tokens_per_s_per_device,predicted_tokens_per_s_per_device,error_pct,\
tflops_per_device,intervals_kept,intervals_excluded,output_tokens_per_s,requests_per_s,\
ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s";

/// Runs `loam runs`; exit 0 when every log reads, 1 when one does not (nothing is printed for
/// any then), 2 when a file cannot be read.
pub fn run(
    args: &RunsArgs,
    cli_catalogue: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, crate::io::IoError> {
    let (logs, plan, job, append, date, engine_version, format) = match &args.command {
        RunsCommand::Ingest {
            logs,
            plan,
            job,
            append,
            date,
            engine_version,
            format,
        } => (logs, plan, job, append, date, engine_version, format),
        RunsCommand::Check { plan, format } => {
            return check::run(plan, *format, cli_catalogue, cx);
        }
    };
    if let Some(version) = engine_version
        && !loam_compiler::runs::store::serving::is_version(version)
    {
        cx.eprint(&format!(
            "error: --engine-version: {}\n",
            loam_compiler::runs::store::serving::expected_version()
        ));
        return Ok(2);
    }
    let planned = match plan {
        Some(path) => match planned(path, job.as_deref(), cx)? {
            Some(p) => Some(p),
            None => return Ok(1),
        },
        None => None,
    };
    // Every row is held until the last file reads (a failure prints none), as a CSV line in
    // text: a few hundred bytes a log.
    let mut rows = Vec::new();
    let mut lines = String::new();
    let mut measures = Vec::with_capacity(logs.len());
    let mut failed = false;
    for path in logs {
        let name = crate::io::display(path);
        // Bytes, not text: a TensorBoard event file is binary.
        let bytes = crate::io::read(path)?;
        match ingest_bytes(&bytes) {
            Ok(Measured::Training(_)) if engine_version.is_some() => {
                cx.eprint(&format!(
                    "error: {name}: a training log; --engine-version is a serving benchmark's\n"
                ));
                failed = true;
            }
            Ok(mut measured) => {
                if let (Some(version), Measured::Serving(serving)) = (engine_version, &mut measured)
                {
                    serving.engine_version = Some(version.clone());
                }
                let value = row(&name, &measured, planned.as_ref());
                match format {
                    OutputFormat::Json => rows.push(value),
                    OutputFormat::Text => {
                        lines.push_str(&csv_line(&value));
                        lines.push('\n');
                    }
                }
                // Kept only to append: a measure holds every interval's iteration.
                if *append {
                    measures.push((name, measured));
                }
            }
            Err(e) => {
                cx.eprint(&format!("error: {name}: {e}\n"));
                failed = true;
            }
        }
    }
    if failed {
        return Ok(1);
    }
    if *append && let Some(planned) = &planned {
        let day = date.clone().unwrap_or_else(append::today_utc);
        if let Some(code) = append_rows(&measures, planned, &day, cli_catalogue, cx)? {
            return Ok(code);
        }
    }
    match format {
        OutputFormat::Json => cx.print_json(&json!({ "runs": rows })),
        OutputFormat::Text => {
            cx.print(&format!("{COLUMNS}\n{lines}"));
        }
    }
    Ok(0)
}

/// Appends the training runs of `measures` to the runs store of the plan's site; `Some(exit)`
/// when nothing was appended because a row could not be made or checked.
fn append_rows(
    measures: &[(String, Measured)],
    planned: &Planned,
    day: &str,
    cli_catalogue: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<Option<u8>, crate::io::IoError> {
    let spec = Path::new(&planned.file);
    let project = crate::session::load_checked(&[spec.to_path_buf()], cli_catalogue)?;
    let Some(catalogue) = project.whole_catalogue() else {
        cx.eprint("error: the catalogue has errors; `loam check` shows them\n");
        return Ok(Some(1));
    };
    if planned.plan.get("service").is_some() {
        return append_serving(measures, planned, &project, day, cli_catalogue, cx);
    }
    let Some(checked) = project
        .jobs
        .iter()
        .find(|j| j.job.name.value == planned.job)
    else {
        cx.eprint(&format!(
            "error: the plan's spec `{}` has no job `{}` to read the model from\n",
            planned.file, planned.job
        ));
        return Ok(Some(1));
    };
    let ran = append::RanWith {
        plan: &planned.plan,
        job: &checked.job,
        catalogue,
        date: day,
    };
    let mut stored = Vec::new();
    for (name, measured) in measures {
        let Measured::Training(m) = measured else {
            cx.eprint(&format!(
                "error: {name}: a serving benchmark, but `{}` is a training job: name the \
                 service it measured with --job\n",
                planned.job
            ));
            return Ok(Some(1));
        };
        match append::row(name, m, &ran) {
            Ok(r) => stored.push(r),
            Err(e) => {
                cx.eprint(&format!("error: {name}: {e}\n"));
                return Ok(Some(1));
            }
        }
    }
    let Some(site) = stored.first().map(|r| r.site.clone()) else {
        return Ok(None);
    };
    // Each new line passes the same check `loam check` gives the store.
    let mut text = format!("{}\n", loam_compiler::runs::store::COLUMNS);
    for r in &stored {
        text.push_str(&loam_compiler::runs::store::line(r));
        text.push('\n');
    }
    let problems = loam_compiler::runs::store::check(&site, &text, catalogue);
    if let Some(p) = problems.first() {
        cx.eprint(&format!(
            "error: the row would not pass `loam check`: {}\n",
            p.message
        ));
        return Ok(Some(1));
    }
    let catalogue_dir = cli_catalogue.unwrap_or(Path::new(crate::catalogue_source::DEFAULT_DIR));
    let file = append::append(catalogue_dir, &site, &stored)?;
    cx.eprint(&format!(
        "appended {} run(s) to {}\n",
        stored.len(),
        crate::io::display(&file)
    ));
    Ok(None)
}

/// Appends the serving benchmarks of `measures` to the serving store file of the service's
/// site, under the rules of [`append_rows`]; a training log against a service is refused.
fn append_serving(
    measures: &[(String, Measured)],
    planned: &Planned,
    project: &loam_compiler::project::CheckedProject,
    day: &str,
    cli_catalogue: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<Option<u8>, crate::io::IoError> {
    use loam_compiler::runs::store::{self, serving as store_serving};
    let Some(catalogue) = project.whole_catalogue() else {
        return Ok(Some(1));
    };
    let Some(checked) = project
        .services
        .iter()
        .find(|s| s.service.name.value == planned.job)
    else {
        cx.eprint(&format!(
            "error: the plan's spec `{}` has no service `{}` to read the model from\n",
            planned.file, planned.job
        ));
        return Ok(Some(1));
    };
    let mut rows = Vec::new();
    let mut site = String::new();
    for (name, measured) in measures {
        let Measured::Serving(m) = measured else {
            cx.eprint(&format!(
                "error: {name}: a training log, but `{}` is a service: name the job it \
                 trained with --job\n",
                planned.job
            ));
            return Ok(Some(1));
        };
        match serving::row(name, m, &planned.plan, &checked.service, catalogue, day) {
            Ok(r) => {
                let text = format!("{}\n{}\n", store_serving::COLUMNS, store_serving::line(&r));
                let model = loam_compiler::check::model_dims(&checked.service.model);
                if let Some(why) =
                    loam_compiler::calibrate::stored_serving_model_differs(&text, &model)
                {
                    cx.eprint(&format!("error: {name}: {why}\n"));
                    return Ok(Some(1));
                }
                site.clone_from(&r.site);
                rows.push(r);
            }
            Err(e) => {
                cx.eprint(&format!("error: {name}: {e}\n"));
                return Ok(Some(1));
            }
        }
    }
    if rows.is_empty() {
        return Ok(None);
    }
    // Each new line passes the same check `loam check` gives the store.
    let lines: Vec<String> = rows.iter().map(store_serving::line).collect();
    let text = format!("{}\n{}\n", store_serving::COLUMNS, lines.join("\n"));
    if let Some(p) = store::check(&site, &text, catalogue).first() {
        cx.eprint(&format!(
            "error: the row would not pass `loam check`: {}\n",
            p.message
        ));
        return Ok(Some(1));
    }
    let catalogue_dir = cli_catalogue.unwrap_or(Path::new(crate::catalogue_source::DEFAULT_DIR));
    let file = append::append_lines(
        catalogue_dir,
        &site,
        store_serving::FILE,
        store_serving::COLUMNS,
        &|header| {
            rows.iter()
                .map(|r| store_serving::line_for(r, header))
                .collect()
        },
    )?;
    cx.eprint(&format!(
        "appended {} run(s) to {}\n",
        lines.len(),
        crate::io::display(&file)
    ));
    Ok(None)
}

/// What ran, from a Plan JSON: the plan of `job` (or the only one).
struct Planned {
    /// The plan object itself.
    plan: Value,
    /// The spec file the plan names.
    file: String,
    job: String,
    device: String,
    devices: u64,
    layout: String,
    precision: String,
    step_s: Option<f64>,
    tokens_per_s_per_device: Option<f64>,
}

fn planned(
    path: &Path,
    job: Option<&str>,
    cx: &mut Context<'_>,
) -> Result<Option<Planned>, crate::io::IoError> {
    let name = crate::io::display(path);
    let bytes = crate::io::read(path)?;
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        cx.eprint(&format!(
            "error: {name}: not a Plan JSON (`loam plan --format json`)\n"
        ));
        return Ok(None);
    };
    // A job's plan names it under `job`, a service's under `service`.
    let name_of = |p: &Value| -> Option<String> {
        p.get("job")
            .or_else(|| p.get("service"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let plans: Vec<Value> = ["plans", "services"]
        .iter()
        .filter_map(|k| value.get(*k).and_then(Value::as_array))
        .flatten()
        .cloned()
        .collect();
    let chosen: Vec<&Value> = plans
        .iter()
        .filter(|p| job.is_none_or(|j| name_of(p).as_deref() == Some(j)))
        .collect();
    let [plan] = chosen.as_slice() else {
        let jobs: Vec<String> = plans.iter().filter_map(name_of).collect();
        cx.eprint(&format!(
            "error: {name}: {} plans match; name one with --job (the file plans: {})\n",
            chosen.len(),
            if jobs.is_empty() {
                "none".into()
            } else {
                jobs.join(", ")
            }
        ));
        return Ok(None);
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    // A service's groups are its roles'.
    let groups: Vec<Value> = match plan.get("roles").and_then(Value::as_array) {
        Some(roles) => roles
            .iter()
            .filter_map(|r| r.get("group"))
            .cloned()
            .collect(),
        None => plan
            .get("groups")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    };
    let device = groups
        .iter()
        .map(|g| text(g.get("device")))
        .collect::<Vec<_>>()
        .join("+");
    let devices = groups
        .iter()
        .filter_map(|g| g.get("devices")?.as_u64())
        .sum();
    let layout = plan.get("layout").map_or(String::new(), |l| {
        let n = |k: &str| l.get(k).and_then(Value::as_u64).unwrap_or(1);
        format!(
            "t{} p{} d{} c{} v{} b{} z{}",
            n("tensor"),
            n("pipeline"),
            n("data"),
            n("context"),
            n("virtual_stages"),
            n("micro_batch"),
            l.get("zero").and_then(Value::as_u64).unwrap_or(0)
        )
    });
    Ok(Some(Planned {
        plan: (*plan).clone(),
        file: text(plan.get("file")),
        job: name_of(plan).unwrap_or_default(),
        device,
        devices,
        layout,
        precision: text(
            plan.get("workload")
                .or_else(|| plan.get("model"))
                .and_then(|w| w.get("precision")),
        ),
        step_s: plan
            .get("estimate")
            .and_then(|e| e.get("step_time_s"))
            .and_then(Value::as_f64),
        tokens_per_s_per_device: plan
            .get("estimate")
            .and_then(|e| e.get("tokens_per_s"))
            .and_then(Value::as_f64)
            .filter(|_| devices > 0)
            .map(|t| t / devices as f64),
    }))
}

fn row(file: &str, measured: &Measured, planned: Option<&Planned>) -> Value {
    let what = planned.map_or(json!({}), |p| {
        json!({"job": p.job, "device": p.device, "devices": p.devices, "layout": p.layout,
               "precision": p.precision})
    });
    match measured {
        Measured::Training(m) => {
            let predicted_step = planned.and_then(|p| p.step_s);
            let predicted_rate = planned.and_then(|p| p.tokens_per_s_per_device);
            // Error of the prediction against the measurement, as `loam calibrate` signs it:
            // a plan faster than the run is over-predicted (positive). From the step time
            // where the log has one, else from tokens per second per device.
            let error = match (m.step_s, m.tokens_per_s_per_device) {
                (Some(measured), _) => predicted_step.map(|p| (measured / p - 1.0) * 100.0),
                (None, Some(measured)) => predicted_rate.map(|p| (p / measured - 1.0) * 100.0),
                (None, None) => None,
            };
            json!({"file": file, "tool": m.tool, "kind": "training", "ran": what,
                   "measured_step_s": m.step_s, "predicted_step_s": predicted_step,
                   "measured_tokens_per_s_per_device": m.tokens_per_s_per_device,
                   "predicted_tokens_per_s_per_device": predicted_rate, "error_pct": error,
                   "samples_per_s": m.samples_per_s,
                   "tflops_per_device": m.tflops_per_device, "intervals_kept": m.kept.len(),
                   "intervals_excluded": m.excluded.len(), "excluded": m.excluded})
        }
        Measured::Serving(m) => json!({"file": file, "tool": m.tool, "kind": "serving",
            "ran": what, "output_tokens_per_s": m.output_tokens_per_s,
            "requests_per_s": m.requests_per_s, "ttft_s": m.ttft_s, "tpot_s": m.tpot_s,
            "request_rate": m.request_rate}),
    }
}

/// One CSV line of a row, in [`COLUMNS`] order; a file name with a comma or quote is quoted.
fn csv_line(r: &Value) -> String {
    let s = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let f = |v: Option<&Value>, digits: usize| {
        v.and_then(Value::as_f64)
            .filter(|x| x.is_finite())
            .map_or(String::new(), |x| format!("{x:.digits$}"))
    };
    let ran = r.get("ran");
    let pair = |key: &str, i: usize| r.get(key).and_then(|v| v.get(i));
    let quoted = |text: String| {
        if text.contains([',', '"', '\n']) {
            format!("\"{}\"", text.replace('"', "\"\""))
        } else {
            text
        }
    };
    [
        quoted(s(r.get("file"))),
        s(r.get("tool")),
        s(r.get("kind")),
        s(ran.and_then(|w| w.get("job"))),
        s(ran.and_then(|w| w.get("device"))),
        s(ran.and_then(|w| w.get("devices"))),
        s(ran.and_then(|w| w.get("layout"))),
        s(ran.and_then(|w| w.get("precision"))),
        f(r.get("measured_step_s"), 3),
        f(r.get("predicted_step_s"), 3),
        f(r.get("measured_tokens_per_s_per_device"), 1),
        f(r.get("predicted_tokens_per_s_per_device"), 1),
        f(r.get("error_pct"), 1),
        f(r.get("tflops_per_device"), 1),
        s(r.get("intervals_kept")),
        s(r.get("intervals_excluded")),
        f(r.get("output_tokens_per_s"), 1),
        f(r.get("requests_per_s"), 3),
        f(pair("ttft_s", 0), 4),
        f(pair("ttft_s", 1), 4),
        f(pair("tpot_s", 0), 4),
        f(pair("tpot_s", 1), 4),
    ]
    .join(",")
}
