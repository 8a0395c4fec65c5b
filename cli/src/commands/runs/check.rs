//! `loam runs check PLAN.json`: every run of the runs store beside the plan its job has now;
//! a run outside the plan's stated uncertainty is drift (`loam_compiler::runs::drift`).

use crate::Context;
use crate::args::OutputFormat;
use crate::catalogue_source::catalogue_texts;
use crate::io::{self, IoError};
use loam_compiler::runs::drift::{Predicted, compare};
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
    let mut rows: Vec<StoreRow> = Vec::new();
    for (path, text) in catalogue_texts(catalogue_dir)? {
        if !is_store_path(&path) {
            continue;
        }
        rows.extend(read_rows(&text));
    }
    let comparisons = compare(&rows, &predicted);
    let drifted = comparisons.iter().filter(|c| c.drifted).count();
    match format {
        OutputFormat::Json => cx.print_json(&json!({
            "plan": name, "runs": comparisons, "drifted": drifted
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
            let _ = writeln!(
                out,
                "{} run(s) compared with {name}, {drifted} outside the plan's uncertainty",
                comparisons.len()
            );
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
