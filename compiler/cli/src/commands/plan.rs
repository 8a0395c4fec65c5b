//! `loam plan`: check the specs, then plan every job and print the plans.

use crate::Context;
use crate::args::{PlanArgs, PlanFormat};
use crate::render::diagnostics::{render_text, to_json};
use crate::render::{plan_json, plan_markdown, plan_table};
use crate::session::{load_checked, plan_specs};
use serde_json::json;
use std::path::Path;

/// Runs `loam plan`; exit 0 when every job has a feasible plan, 1 on errors in the specs or the
/// catalogue (checks run first; no plan is printed) or when a job is infeasible.
pub fn run(
    args: &PlanArgs,
    catalogue_dir: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, crate::io::IoError> {
    let (specs, catalogue) = load_checked(&args.paths, catalogue_dir)?;
    let catalogue = catalogue.filter(|_| !specs.has_errors());
    let Some(catalogue) = catalogue else {
        if args.format == PlanFormat::Json {
            let diagnostics: Vec<_> = specs
                .diagnostics
                .iter()
                .map(|d| to_json(d, &specs.sources))
                .collect();
            cx.print_json(&json!({ "diagnostics": diagnostics }));
        }
        cx.eprint(&render_text(&specs.diagnostics, &specs.sources, cx.color));
        let errors = specs.diagnostics.iter().filter(|d| d.is_error()).count();
        cx.eprint(&format!(
            "no plan: {errors} {} in the specs\n",
            crate::commands::check::plural(errors, "error")
        ));
        return Ok(1);
    };
    let (doc, diagnostics) = plan_specs(&specs, &catalogue);
    if !diagnostics.is_empty() {
        cx.eprint(&render_text(&diagnostics, &specs.sources, cx.color));
    }
    match args.format {
        PlanFormat::Json => cx.print_json(&plan_json::to_json(&doc)),
        PlanFormat::Table => cx.print(&plan_table::render(&doc)),
        PlanFormat::Markdown => cx.print(&plan_markdown::render(&doc)),
    }
    let failed = diagnostics.iter().any(|d| d.is_error()) || doc.plans.iter().any(|p| !p.feasible);
    Ok(u8::from(failed))
}
