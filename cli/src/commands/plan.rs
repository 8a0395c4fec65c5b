//! `loam plan`: check the specs, then plan every job and print the plans.

use crate::Context;
use crate::args::{PlanArgs, PlanFormat};
use crate::plan_cache::{self, PlanCache};
use crate::render::diagnostics::{render_text, to_json};
use crate::render::{admission, folded, plan_html, plan_markdown, plan_table, service_table};
use crate::session::{load_checked, threads};
use loam_compiler::project::{CheckedProject, PlannedProject};
use loam_ir::plan::json as plan_json;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Runs `loam plan`; exit 0 when every job has a feasible plan, 1 on errors in the specs or the
/// catalogue, or when a job cannot run as planned. Every job without an error of its own is
/// planned and printed, also beside a job with errors in the same file.
pub fn run(
    args: &PlanArgs,
    catalogue_dir: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, crate::io::IoError> {
    let (specs, planned) = load_and_plan(&args.paths, catalogue_dir, args.cache.as_deref(), cx)?;
    if specs.files.is_empty() && specs.catalogue_errors == 0 {
        cx.eprint(&crate::io::no_specs_found(&args.paths));
        return Ok(1);
    }
    let doc = &planned.document;
    let checks_failed = specs.errors() > 0;
    match args.format {
        PlanFormat::Json if checks_failed => {
            // The plans that could be made, and the check errors that kept the others from it.
            let mut value = plan_json::to_json(doc);
            let diagnostics: Vec<_> = specs
                .diagnostics
                .iter()
                .map(|d| to_json(d, &specs.sources))
                .collect();
            if let Some(map) = value.as_object_mut() {
                map.insert("diagnostics".to_string(), json!(diagnostics));
            }
            with_schedule(&mut value, &specs, doc);
            cx.print_json(&value);
        }
        PlanFormat::Json => {
            let mut value = plan_json::to_json(doc);
            with_schedule(&mut value, &specs, doc);
            cx.print_json(&value);
        }
        PlanFormat::Table => {
            if !doc.plans.is_empty() {
                cx.print(&plan_table::render(doc));
            }
            if !doc.services.is_empty() {
                let gap = if doc.plans.is_empty() { "" } else { "\n" };
                cx.print(&format!("{gap}{}", service_table::render(&doc.services)));
            }
        }
        PlanFormat::Markdown if !doc.plans.is_empty() || !doc.services.is_empty() => {
            let mut text = plan_markdown::render(doc);
            if !doc.services.is_empty() {
                text.push_str(&service_table::markdown(&doc.services));
            }
            cx.print(&text);
        }
        PlanFormat::Markdown => {}
        PlanFormat::Html => cx.print(&plan_html::render(
            &plan_html::title(&args.paths),
            &specs,
            &planned,
        )),
    }
    // With more than one job, what Kueue would make of all of them at once.
    if doc.plans.len() > 1
        && let Some(catalogue) = &specs.catalogue
    {
        let preview = loam_compiler::admission::preview(&doc.plans, catalogue);
        match args.format {
            PlanFormat::Table => cx.print(&format!("\n{}", admission::table(&preview))),
            PlanFormat::Markdown => cx.print(&format!("\n{}", admission::markdown(&preview))),
            PlanFormat::Json | PlanFormat::Html => {}
        }
    }
    // After the plans, so a folder's tens of warnings do not bury them (warnings folded
    // unless `--verbose`; errors in full).
    report_diagnostics(&specs, &planned, args.verbose, cx);
    Ok(exit_code(&planned))
}

/// With more than one job, the Plan JSON carries every job scheduled together beside the plans
/// (`schedule`, docs/plan-format.md), as the admission preview follows the table.
fn with_schedule(
    value: &mut serde_json::Value,
    specs: &CheckedProject,
    doc: &loam_ir::plan::PlanDocument,
) {
    if doc.plans.len() < 2 {
        return;
    }
    let Some(schedule) = loam_compiler::schedule::of_project(specs, &doc.plans, &doc.services)
    else {
        return;
    };
    if let (Some(map), Ok(schedule)) = (value.as_object_mut(), serde_json::to_value(&schedule)) {
        map.insert("schedule".to_string(), plan_json::sort_keys(schedule));
    }
}

/// Reads and checks the specs of `paths` against the catalogue, then plans them through the
/// plan cache (`--cache DIR`, else `LOAM_CACHE_DIR`): what `loam plan` and `loam report` show.
/// Cache entries that were not trusted are told on standard error, once.
pub fn load_and_plan(
    paths: &[PathBuf],
    catalogue_dir: Option<&Path>,
    cache: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<(CheckedProject, PlannedProject), crate::io::IoError> {
    let cache = PlanCache::open(cache, paths)?;
    let specs = load_checked(paths, catalogue_dir)?;
    let planned = plan_cache::plan(&specs, threads(), cache.as_ref(), &|_| None);
    if let Some(warning) = cache.as_ref().and_then(PlanCache::warning) {
        cx.eprint(&warning);
    }
    Ok((specs, planned))
}

/// The diagnostics of checking and planning on standard error: errors in full, warnings in
/// full with `verbose` or when there are few, else folded into a count per code
/// ([`folded`]); then, when the specs have errors, how many and how many jobs were not
/// planned.
pub fn report_diagnostics(
    specs: &CheckedProject,
    planned: &PlannedProject,
    verbose: bool,
    cx: &mut Context<'_>,
) {
    let (errors, warnings): (Vec<_>, Vec<_>) =
        planned.diagnostics.iter().partition(|d| d.is_error());
    if folded::folds(warnings.len(), verbose) {
        if !errors.is_empty() {
            let errors: Vec<_> = errors.into_iter().cloned().collect();
            cx.eprint(&render_text(&errors, &specs.sources, cx.color));
        }
        cx.eprint(&folded::summary(&warnings, "loam plan"));
    } else if !planned.diagnostics.is_empty() {
        cx.eprint(&render_text(&planned.diagnostics, &specs.sources, cx.color));
    }
    if specs.errors() > 0 {
        let errors = specs.errors();
        let doc = &planned.document;
        let unplanned = (specs.jobs.len() + specs.services.len())
            .saturating_sub(doc.plans.len() + doc.services.len());
        cx.eprint(&format!(
            "{errors} {} in the specs; {unplanned} {} not planned\n",
            crate::commands::check::plural(errors, "error"),
            crate::commands::check::plural(unplanned, "job"),
        ));
    }
}

/// 0 when every job and service has a feasible plan; 1 on errors in the specs or the
/// catalogue, or when one cannot run as planned.
pub fn exit_code(planned: &PlannedProject) -> u8 {
    let doc = &planned.document;
    let failed = planned.has_errors()
        || doc.plans.iter().any(|p| !p.feasible)
        || doc.services.iter().any(|s| !s.feasible);
    u8::from(failed)
}
