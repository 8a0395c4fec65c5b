//! `loam emit PLAN.json`: reads a Plan JSON and re-checks it before anything is rendered, since
//! a plan file can be edited by hand (review finding L8).
//!
//! ```text
//!  plan.json ──parse──▶ PlanDocument ──L4010: same catalogue?──▶ L4012: agrees with the
//!  catalogue and itself? (plan::ir::validate) ──▶ L4012: is it what loam plans now for the
//!  spec it names, when that spec is readable here?
//! ```
//!
//! The spec check re-plans each spec file the plans name, when it is a plain `.loam` file at a
//! relative path inside the current folder (no `..`, no symlink on the way); a plan whose job is
//! not in it, whose spec does not check, or that differs from what loam plans now is refused.
//! When the spec is not there (a deploy job that holds only the reviewed plan), the plan is
//! emitted on the catalogue checks alone, and a note says so.

use crate::io::{self, IoError};
use crate::session::{load_checked, plan_catalogue, threads};
use loam_compiler::catalogue::Catalogue;
use loam_compiler::plan::validate;
use loam_compiler::project::plan_project;
use loam_ir::diagnostics::{Diagnostic, codes};
use loam_ir::plan::PlanDocument;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// A plan document ready to emit: the plans, the catalogue they agree with, and the notes to
/// print when the emit succeeds (specs that could not be re-planned here).
pub struct Checked {
    /// The plans, as read.
    pub doc: PlanDocument,
    /// The catalogue `loam emit` runs with, the one the plans were made with.
    pub catalogue: Catalogue,
    /// One line per spec the plans name that is not readable here.
    pub notes: Vec<String>,
}

/// Reads and re-checks the plan JSON at `path` against the catalogue of `catalogue_dir` and
/// the specs it names: the document, or every L4010/L4012 problem found. I/O errors and a file
/// that is not a plan are `Err` (exit 2).
pub fn load(
    path: &Path,
    catalogue_dir: Option<&Path>,
) -> Result<Result<Checked, Vec<Diagnostic>>, IoError> {
    let bytes = io::read(path)?;
    let doc = serde_json::from_slice::<PlanDocument>(&bytes).map_err(|e| {
        IoError(format!(
            "`{}` is not a loam plan (`loam plan --format json`): {e}",
            io::display(path)
        ))
    })?;
    let catalogue = plan_catalogue(catalogue_dir)?;
    // The tenants' names and checkpoint roots come from this catalogue: they must be the
    // ones the plan was made with.
    if doc.catalogue_digest != catalogue.digest() {
        let diagnostic = Diagnostic::unlocated(
            codes::emit::OTHER_CATALOGUE,
            format!(
                "the plan in `{}` was made with catalogue `{}`, not with this one (`{}`)",
                io::display(path),
                doc.catalogue_digest.escape_debug(),
                catalogue.digest()
            ),
        )
        .with_help(
            "plan again with this catalogue (`loam plan --format json`), or pass the catalogue the plan was made with (`--catalogue DIR`)",
        );
        return Ok(Err(vec![diagnostic]));
    }
    let mut problems = validate::check_document(&doc, &catalogue);
    if !problems.is_empty() {
        return Ok(Err(problems));
    }
    let mut notes = Vec::new();
    let mut by_file: BTreeMap<&str, Vec<&loam_ir::plan::Plan>> = BTreeMap::new();
    for plan in doc.plans.iter().filter(|p| p.feasible) {
        by_file.entry(plan.file.as_str()).or_default().push(plan);
    }
    for (file, plans) in by_file {
        let Some(spec) = readable_spec(file) else {
            notes.push(format!(
                "note: `{}`, the spec the plan of job `{}` names, is not a readable `.loam` file below this folder: the plan was checked against the catalogue only\n",
                file.escape_debug(),
                plans.first().map_or(String::new(), |p| p.job.escape_debug().to_string())
            ));
            continue;
        };
        let specs = load_checked(&[spec], catalogue_dir)?;
        let errors = specs.errors();
        if errors > 0 {
            // Its diagnostics are not shown: `loam check` shows them, and a plan must not make
            // loam print a file it names.
            for plan in plans {
                problems.push(
                    Diagnostic::unlocated(
                        codes::emit::INCONSISTENT_PLAN,
                        format!(
                            "the plan of job `{}` does not agree with its spec: `{}` has {errors} error(s) now",
                            plan.job.escape_debug(),
                            file.escape_debug()
                        ),
                    )
                    .with_help(format!("run `loam check {}`", file.escape_debug())),
                );
            }
            continue;
        }
        let fresh = plan_project(&specs, threads()).document.plans;
        problems.extend(
            plans
                .into_iter()
                .filter_map(|plan| validate::check_against_spec(plan, &fresh)),
        );
    }
    if problems.is_empty() {
        Ok(Ok(Checked {
            doc,
            catalogue,
            notes,
        }))
    } else {
        Ok(Err(problems))
    }
}

/// `file` as a path to read, when it names a regular `.loam` file below the current folder:
/// relative, no `.`/`..` or root components, no symlink on the way. A plan names its spec, and
/// a hand-edited plan must not make loam read any other file.
fn readable_spec(file: &str) -> Option<PathBuf> {
    let path = Path::new(file);
    if path.extension().is_none_or(|e| e != "loam")
        || !path.components().all(|c| matches!(c, Component::Normal(_)))
    {
        return None;
    }
    let mut walked = PathBuf::new();
    for component in path.components() {
        walked.push(component);
        let meta = std::fs::symlink_metadata(&walked).ok()?;
        if meta.file_type().is_symlink() {
            return None;
        }
    }
    std::fs::symlink_metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|_| path.to_path_buf())
}
