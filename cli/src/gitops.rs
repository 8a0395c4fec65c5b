//! GitOps: reading and planning the specs at two git revisions (or a revision and the work
//! tree), for `loam diff` and pull-request previews; what changes between them is `loam-diff`'s.
//!
//! ```text
//!  repo ──git2──▶ Snapshot (spec bytes, catalogue texts) ──check+plan──▶ Side ─┐
//!  (base, head)     repo.rs, side.rs                      loam_compiler::project ├─loam_diff::diff─▶ PlanDiff
//!                                                                              ┘
//! ```
//!
//! Reading uses git2 only (no `git` process, no network). Both sides go through the core's one
//! entry point, as `loam check` and `loam plan` do: [`loam_compiler::project::check_project`]
//! and [`loam_compiler::project::plan_project_reusing`], which takes the head's plan of a job
//! whose spec and catalogue inputs (its pool, the devices it uses) did not change, or the plan
//! the cache holds for it ([`crate::plan_cache`]).

pub mod repo;
pub mod side;

use crate::io::IoError;
use loam_backends::Target;
use loam_diff::Side;
use loam_diff::compare::PlanDiff;
use repo::Repo;
use side::Snapshot;
use std::path::PathBuf;

/// What to compare.
#[derive(Debug, Clone)]
pub struct Request {
    /// The base revision (`HEAD`, `main`, `HEAD~1` …).
    pub base: String,
    /// The head revision; `None` for the work tree.
    pub head: Option<String>,
    /// Files or folders of specs (relative to the current folder); empty: the repository root.
    pub paths: Vec<PathBuf>,
    /// `--catalogue DIR`; default: `specs/` at the repository root, else the built-in catalogue.
    pub catalogue: Option<PathBuf>,
    /// The backend whose manifests are diffed; `None` for no manifest diff (changed jobs are
    /// then classified for [`loam_diff::DEFAULT_BACKEND`]).
    pub manifests: Option<Target>,
    /// The plan cache (`--cache DIR`, `LOAM_CACHE_DIR`); `None` for none.
    pub cache: Option<crate::plan_cache::PlanCache>,
}

/// Both sides and what changes between them.
pub struct Outcome {
    /// The base side.
    pub base: Side,
    /// The head side.
    pub head: Side,
    /// The changes.
    pub diff: PlanDiff,
}

/// Reads, checks and plans both sides and compares them.
pub fn run(request: &Request) -> Result<Outcome, IoError> {
    let first = request
        .paths
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from("."));
    let repo = Repo::discover(&first)?;
    // Without paths the whole repository is compared, wherever in it loam runs.
    let prefixes = if request.paths.is_empty() {
        vec![String::new()]
    } else {
        request
            .paths
            .iter()
            .map(|p| repo.relative(p))
            .collect::<Result<Vec<_>, _>>()?
    };
    let catalogue_dir = match &request.catalogue {
        Some(dir) => repo.relative(dir)?,
        None => "specs".to_string(),
    };
    let head_snapshot = match &request.head {
        Some(rev) => Snapshot::at_revision(&repo, rev, &prefixes, &catalogue_dir)?,
        None => Snapshot::worktree(&repo, &prefixes, &catalogue_dir)?,
    };
    let base_snapshot = Snapshot::at_revision(&repo, &request.base, &prefixes, &catalogue_dir)?;
    let cache = request.cache.as_ref();
    let head = side::load(head_snapshot, None, cache)?;
    let base = side::load(base_snapshot, Some(&head), cache)?;
    let diff = loam_diff::diff(&base, &head, request.manifests);
    Ok(Outcome { base, head, diff })
}
