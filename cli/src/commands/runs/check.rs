//! `loam runs check PLAN.json`: every run of the runs store beside the plan its job or service
//! has now; a run outside the plan's stated uncertainty is drift (`loam_compiler::runs::drift`,
//! `drift::serving` for the serving runs of `serving.csv`).

use crate::Context;
use crate::args::OutputFormat;
use crate::catalogue_source::catalogue_texts;
use crate::io::{self, IoError};
use loam_compiler::runs::drift::serving::{self as drift_serving, ServicePredicted};
use loam_compiler::runs::drift::{Predicted, compare};
use loam_compiler::runs::store::serving::{self as store_serving, ServingRow};
use loam_compiler::runs::store::{StoreRow, is_store_path, read_rows};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// Exit 0 when no run drifted, 1 when one did (or the plan cannot be read).
pub fn run(
    plan: &Path,
    format: OutputFormat,
    catalogue_dir: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, IoError> {
    let name = io::display(plan);
    let Ok(doc) = serde_json::from_slice::<Value>(&io::read(plan)?) else {
        cx.eprint(&format!(
            "error: {name}: not a Plan JSON (`loam plan --format json`)\n"
        ));
        return Ok(1);
    };
    let predicted: Vec<Predicted> = doc
        .get("plans")
        .and_then(Value::as_array)
        .map(|plans| plans.iter().filter_map(predicted).collect())
        .unwrap_or_default();
    let services: Vec<ServicePredicted> = doc
        .get("services")
        .and_then(Value::as_array)
        .map(|plans| plans.iter().filter_map(service_predicted).collect())
        .unwrap_or_default();
    let mut rows: Vec<StoreRow> = Vec::new();
    let mut serving_rows: Vec<ServingRow> = Vec::new();
    for (path, text) in catalogue_texts(catalogue_dir)? {
        if !is_store_path(&path) {
            continue;
        }
        // A store file is a serving file by its header, as `loam check` reads it.
        if store_serving::is_file(&text) {
            serving_rows.extend(store_serving::read_rows(&text));
        } else {
            rows.extend(read_rows(&text));
        }
    }
    let comparisons = compare(&rows, &predicted);
    let serving = drift_serving::compare(&serving_rows, &services);
    let drifted = comparisons.iter().filter(|c| c.drifted).count()
        + serving.iter().filter(|c| c.drifted).count();
    let compared = comparisons.len() + serving.iter().filter(|c| c.planned).count();
    let unplanned = serving.len() + comparisons.len() - compared;
    match format {
        OutputFormat::Json => cx.print_json(&json!({
            "plan": name, "runs": comparisons, "serving_runs": serving, "drifted": drifted
        })),
        OutputFormat::Text => {
            let mut out = String::new();
            for c in &comparisons {
                let verdict = if c.drifted { "DRIFT" } else { "ok" };
                let _ = write!(
                    out,
                    "{verdict:<5} {} ({}): measured {:.0} tokens/s per device, {:+.1} % against \
                     plan `{}` ({:.0} ± {:.0} %)",
                    c.run_id,
                    c.log,
                    c.measured,
                    100.0 * c.deviation,
                    c.job,
                    c.predicted,
                    100.0 * c.band
                );
                if !c.differs.is_empty() {
                    let _ = write!(out, "; the run differs: {}", c.differs.join(", "));
                }
                out.push('\n');
            }
            for c in &serving {
                out.push_str(&serving_line(c, &name));
            }
            let _ = write!(
                out,
                "{compared} run(s) compared with {name}, {drifted} outside the plan's uncertainty"
            );
            if unplanned > 0 {
                let _ = write!(
                    out,
                    "; {unplanned} serving run(s) of a service {name} does not plan"
                );
            }
            out.push('\n');
            cx.print(&out);
        }
    }
    Ok(u8::from(drifted > 0))
}

/// The prediction of one plan of a Plan JSON; `None` for an infeasible plan or one over two
/// groups (its per-device figure mixes device types).
fn predicted(plan: &Value) -> Option<Predicted> {
    let [group] = plan.get("groups")?.as_array()?.as_slice() else {
        return None;
    };
    let devices = group.get("devices")?.as_u64()?.max(1);
    let estimate = plan.get("estimate")?;
    let layout = plan.get("layout")?;
    let degree = |k: &str| layout.get(k).and_then(Value::as_u64).unwrap_or(1);
    Some(Predicted {
        job: plan.get("job")?.as_str()?.to_string(),
        device: group.get("device")?.as_str()?.to_string(),
        site: group.get("site")?.as_str()?.to_string(),
        layout: [
            degree("tensor"),
            degree("pipeline"),
            degree("data"),
            degree("context"),
            degree("virtual_stages"),
        ],
        tokens_per_s_per_device: estimate.get("tokens_per_s")?.as_f64()? / devices as f64,
        uncertainty: estimate
            .get("throughput_uncertainty")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
    })
}

/// The text line of one serving run: its verdict, the throughput against what the plan implies
/// at the run's load, each median compared, and what differs.
fn serving_line(c: &drift_serving::ServingComparison, plan: &str) -> String {
    let mut out = String::new();
    let (Some(expected), Some(deviation)) = (c.expected, c.deviation) else {
        let _ = writeln!(
            out,
            "gone  {} ({}): service `{}` has no feasible plan in {plan}",
            c.run_id, c.log, c.service
        );
        return out;
    };
    let verdict = if c.drifted { "DRIFT" } else { "ok" };
    let load = if c.above_busiest_hour {
        "the offered load, above the busiest hour: medians against the plan's at capacity"
    } else if c.rate_bound {
        "the offered load"
    } else {
        "the plan's capacity"
    };
    let _ = write!(
        out,
        "{verdict:<5} {} ({}): measured {:.0} output tokens/s per device, {:+.1} % against \
         {:.0} ({load}) of service `{}` (± {:.0} %)",
        c.run_id,
        c.log,
        c.measured,
        100.0 * deviation,
        expected,
        c.service,
        100.0 * c.band
    );
    for l in &c.latencies {
        let _ = write!(
            out,
            "; median {} {:.1} ms against {:.1} ms{}",
            l.what,
            l.measured_ms,
            l.predicted_ms,
            if l.drifted { " (slower)" } else { "" }
        );
    }
    if !c.differs.is_empty() {
        let _ = write!(out, "; the run differs: {}", c.differs.join(", "));
    }
    out.push('\n');
    out
}

/// The prediction of one service plan of a Plan JSON; `None` for an infeasible plan (no roles
/// or no estimate).
fn service_predicted(plan: &Value) -> Option<ServicePredicted> {
    let roles = plan.get("roles")?.as_array()?;
    if roles.is_empty() {
        return None;
    }
    let estimate = plan.get("estimate")?;
    let of_groups = |key: &str| {
        let mut names: Vec<&str> = roles
            .iter()
            .filter_map(|r| r.get("group")?.get(key)?.as_str())
            .collect();
        names.dedup();
        names.join("+")
    };
    let ms = |key: &str| estimate.get(key).and_then(Value::as_f64).map(|s| s * 1e3);
    Some(ServicePredicted {
        service: plan.get("service")?.as_str()?.to_string(),
        device: of_groups("device"),
        site: of_groups("site"),
        engine: plan
            .get("engine")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        devices: estimate.get("devices")?.as_u64()?,
        output_tokens_per_s_per_device: estimate.get("output_tokens_per_s_per_device")?.as_f64()?,
        ttft_p50_ms: ms("ttft_p50_s").unwrap_or(f64::NAN),
        tpot_p50_ms: ms("tpot_p50_s").unwrap_or(f64::NAN),
        uncertainty: estimate
            .get("throughput_uncertainty")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        at_capacity: estimate.get("at_capacity").and_then(|at| {
            let figure = |key: &str| at.get(key).and_then(Value::as_f64);
            Some(drift_serving::AtCapacity {
                output_tokens_per_s_per_device: figure("output_tokens_per_s_per_device")?,
                ttft_p50_ms: figure("ttft_p50_s")? * 1e3,
                tpot_p50_ms: figure("tpot_p50_s")? * 1e3,
            })
        }),
    })
}
