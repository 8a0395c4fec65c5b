//! `loam report`: one self-contained HTML page of the plans (as `loam plan` makes them) or,
//! with `--base`, of the plan diff (as `loam diff` computes it), written to a file or printed.

use crate::Context;
use crate::args::{DiffArgs, DiffFormat, DiffManifests, ReportArgs};
use crate::commands::check::plural;
use crate::commands::{diff, plan};
use crate::io::{self, IoError};
use crate::render::diagnostics::Renderers;
use crate::render::plan_html;
use loam_diff::html;
use std::path::Path;

/// Runs `loam report`. Exit codes: without `--base` as `loam plan` (0 every job feasible, 1
/// errors in the specs or an infeasible plan: the page is still written, to show why); with
/// `--base` as `loam diff` without `--detailed-exitcode`; 2 on usage or I/O errors, and then
/// nothing is written.
pub fn run(
    args: &ReportArgs,
    catalogue: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, IoError> {
    // A missing folder or a link at `--out` fails before any planning, not after it.
    if let Some(out) = &args.out {
        if std::fs::symlink_metadata(out).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(IoError(format!(
                "cannot write `{}`: it is a symbolic link; name a regular file or a new path",
                io::display(out)
            )));
        }
        let folder = out.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(folder) = folder.filter(|f| !io::is_dir(f)) {
            return Err(IoError(format!(
                "cannot write `{}`: the folder `{}` does not exist",
                io::display(out),
                io::display(folder)
            )));
        }
    }
    let (page, code, summary) = match &args.base {
        None => {
            let (specs, planned) =
                plan::load_and_plan(&args.paths, catalogue, args.cache.as_deref(), cx)?;
            if specs.files.is_empty() && specs.catalogue_errors == 0 {
                cx.eprint(&io::no_specs_found(&args.paths));
                return Ok(1);
            }
            plan::report_diagnostics(&specs, &planned, false, cx);
            let page = plan_html::render(&plan_html::title(&args.paths), &specs, &planned);
            let doc = &planned.document;
            let mut summary = format!("{} {}", doc.plans.len(), plural(doc.plans.len(), "job"));
            if !doc.services.is_empty() {
                let n = doc.services.len();
                summary.push_str(&format!(" and {n} {}", plural(n, "service")));
            }
            (
                page,
                plan::exit_code(&planned),
                format!("{summary} planned"),
            )
        }
        Some(base) => {
            let outcome = diff::compute(&diff_args(args, base), catalogue, cx)?;
            let (base, head, changes) = (&outcome.base, &outcome.head, &outcome.diff);
            diff::report_diagnostics(base, head, cx);
            let page = html::render(changes, base, head, &Renderers);
            (
                page,
                diff::exit_code(&outcome, false),
                changes.summary().verdict(),
            )
        }
    };
    match &args.out {
        Some(out) => {
            io::write_atomically(out, &page)?;
            cx.print(&format!("wrote {}: {summary}\n", io::display(out)));
        }
        None => cx.print(&page),
    }
    Ok(code)
}

/// The `loam diff` that `loam report --base` shows: the same sides, paths, cache and manifests
/// as `loam diff --format html` with those flags, so both give the same page.
fn diff_args(args: &ReportArgs, base: &str) -> DiffArgs {
    DiffArgs {
        paths: args.paths.clone(),
        base: base.to_string(),
        head: args.head.clone(),
        worktree: args.worktree,
        detailed_exitcode: false,
        format: DiffFormat::Html,
        manifests: DiffManifests(Some(loam_diff::DEFAULT_BACKEND)),
        cache: args.cache.clone(),
    }
}
