//! `loam diff`: plan the specs at two git revisions (or a revision and the work tree) and show
//! what changes, as text, markdown for a pull request, JSON, or GitHub annotations.

use crate::Context;
use crate::args::{DiffArgs, DiffFormat};
use crate::gitops::{self, Outcome, Request};
use crate::io::IoError;
use crate::render::diagnostics::{Renderers, render_text};
use crate::render::github;
use loam_diff::{Side, html, json, markdown, text};
use std::path::Path;

/// Runs `loam diff`. Exit codes: 0 success, 1 when a spec or the catalogue does not check at
/// head, 2 on usage or I/O errors; with `--detailed-exitcode`, 0 means no change and 2 means
/// changes (errors stay 1).
pub fn run(args: &DiffArgs, catalogue: Option<&Path>, cx: &mut Context<'_>) -> Result<u8, IoError> {
    let outcome = compute(args, catalogue, cx)?;
    let (base, head, diff) = (&outcome.base, &outcome.head, &outcome.diff);
    match args.format {
        DiffFormat::Json => cx.print_json(&json::render(diff, base, head, &Renderers)),
        DiffFormat::Markdown => {
            report_diagnostics_of(diff, base, head, cx);
            cx.print(&markdown::render(diff, base, head, &Renderers));
        }
        DiffFormat::Text => {
            report_diagnostics_of(diff, base, head, cx);
            cx.print(&text::render(diff, base, head, cx.color));
        }
        DiffFormat::Html => {
            report_diagnostics_of(diff, base, head, cx);
            cx.print(&html::render(diff, base, head, &Renderers));
        }
        DiffFormat::Github => {
            let mut annotations = github::render(&head.specs.diagnostics, &head.specs.sources);
            annotations.push_str(&github::render(
                head.planner_diagnostics(),
                &head.specs.sources,
            ));
            cx.print(&annotations);
            cx.print(&text::render(diff, base, head, false));
            let summary = diff.summary();
            let headline = loam_diff::headline::line(diff, base, head);
            let notice = if headline.is_empty() {
                summary.line()
            } else {
                format!("{} {headline}", summary.line())
            };
            cx.print(&format!("::notice title=loam diff::{notice}\n"));
        }
    }
    Ok(exit_code(&outcome, args.detailed_exitcode))
}

/// Reads, checks and plans both sides that `args` name, and compares them: what every format
/// of `loam diff`, and `loam report --base`, shows.
/// Cache entries that were not trusted are told on standard error, once.
pub fn compute(
    args: &DiffArgs,
    catalogue: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<Outcome, IoError> {
    let request = Request {
        base: args.base.clone(),
        head: if args.worktree {
            None
        } else {
            args.head.clone()
        },
        paths: args.paths.clone(),
        catalogue: catalogue.map(Path::to_path_buf),
        manifests: args.manifests.0,
        cache: crate::plan_cache::PlanCache::open(args.cache.as_deref(), &args.paths)?,
    };
    let outcome = gitops::run(&request);
    if let Some(warning) = request.cache.as_ref().and_then(|c| c.warning()) {
        cx.eprint(&warning);
    }
    outcome
}

/// The exit code of a diff: 1 when a job is infeasible or a spec or the catalogue does not
/// check at head; else, with `detailed` (`--detailed-exitcode`), 2 when something changes; 0
/// otherwise.
pub fn exit_code(outcome: &Outcome, detailed: bool) -> u8 {
    let summary = outcome.diff.summary();
    // An infeasible job blocks like an error: applied, it would not run.
    let errors = summary.blocks() || outcome.head.catalogue_errors > 0;
    if errors {
        1
    } else if detailed && summary.has_changes() {
        2
    } else {
        0
    }
}

/// Diagnostics on standard error: every one at head; at base only the errors, which explain why
/// a job could not be compared.
pub fn report_diagnostics(base: &Side, head: &Side, cx: &mut Context<'_>) {
    let (base_errors, at_head) = loam_diff::shown_diagnostics(base, head);
    if !base_errors.is_empty() {
        cx.eprint(&format!("at {}:\n", base.title()));
        cx.eprint(&render_text(&base_errors, &base.specs.sources, cx.color));
    }
    if !at_head.is_empty() {
        cx.eprint(&format!("at {}:\n", head.title()));
        cx.eprint(&render_text(&at_head, &head.specs.sources, cx.color));
    }
}

/// [`report_diagnostics`] for a diff: every error in full, and the warnings of the specs that
/// change; the warnings of unchanged specs, which are not the change's news (the review's
/// newcomer counted 265 such lines on an unchanged repository), as one count per code.
pub fn report_diagnostics_of(
    diff: &loam_diff::compare::PlanDiff,
    base: &Side,
    head: &Side,
    cx: &mut Context<'_>,
) {
    let (base_errors, at_head) = loam_diff::shown_diagnostics(base, head);
    if !base_errors.is_empty() {
        cx.eprint(&format!("at {}:\n", base.title()));
        cx.eprint(&render_text(&base_errors, &base.specs.sources, cx.color));
    }
    let changed: std::collections::BTreeSet<&str> = diff
        .changed()
        .map(|j| j.file.as_str())
        .chain(diff.changed_services().map(|s| s.file.as_str()))
        .chain(diff.broken.iter().map(|b| b.file.as_str()))
        .collect();
    let unchanged = |d: &loam_ir::diagnostics::Diagnostic| {
        !d.is_error()
            && d.span
                .and_then(|s| head.specs.sources.get(s.file))
                .is_some_and(|f| {
                    head.bytes.contains_key(&f.name) && !changed.contains(f.name.as_str())
                })
    };
    let (folded, shown): (Vec<_>, Vec<_>) = at_head.into_iter().partition(|d| unchanged(d));
    if !shown.is_empty() {
        cx.eprint(&format!("at {}:\n", head.title()));
        cx.eprint(&render_text(&shown, &head.specs.sources, cx.color));
    }
    if !folded.is_empty() {
        let refs: Vec<&loam_ir::diagnostics::Diagnostic> = folded.iter().collect();
        cx.eprint(&format!(
            "at {}, in specs this change leaves as they are: {}",
            head.title(),
            crate::render::folded::summary(&refs, "loam plan")
        ));
    }
}
