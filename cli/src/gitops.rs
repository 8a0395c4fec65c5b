//! GitOps: planning the specs at two git revisions (or a revision and the work tree) and showing
//! what changes, for `loam diff` and pull-request previews.
//!
//! ```text
//!  repo ──git2──▶ Snapshot (spec bytes, catalogue texts) ──check+plan──▶ Side ─┐
//!  (base, head)     repo.rs, side.rs                      loam_compiler::project ├─compare─▶ PlanDiff ──▶ text | markdown | json
//!                                                                              ┘  compare.rs           text.rs markdown.rs json.rs html.rs
//! ```
//!
//! Each job on both sides is then classified ([`classify`]): the backend's manifests of both
//! sides are rendered once, diffed for the report and compared against the backend's rules to
//! say whether the running job is updated in place or replaced.
//!
//! Reading uses git2 only (no `git` process, no network). Both sides go through the core's one
//! entry point, as `loam check` and `loam plan` do: [`loam_compiler::project::check_project`]
//! and [`loam_compiler::project::plan_project_reusing`], which takes the head's plan of a job
//! whose spec and catalogue inputs (its pool, the devices it uses) did not change, or the plan
//! the cache holds for it ([`crate::plan_cache`]).

pub mod catalogue_changes;
pub mod classify;
pub mod compare;
pub mod headline;
pub mod html;
pub mod json;
mod manifests;
pub mod markdown;
pub mod repo;
pub mod schedule;
pub mod services;
pub mod side;
pub mod summary;
pub mod text;
pub mod totals;
pub mod values;

use crate::io::IoError;
use compare::{Action, PlanDiff};
use loam_backends::Target;
use loam_compiler::admission::AdmissionStatus;
use loam_ir::diagnostics::Diagnostic;
use repo::Repo;
use side::{Side, Snapshot};
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
    /// then classified for [`DEFAULT_BACKEND`]).
    pub manifests: Option<Target>,
    /// The plan cache (`--cache DIR`, `LOAM_CACHE_DIR`); `None` for none.
    pub cache: Option<crate::plan_cache::PlanCache>,
}

/// The backend whose rules classify changed jobs when no manifests are diffed: the default of
/// `--manifests`.
pub const DEFAULT_BACKEND: Target = Target::Kubernetes;

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
    let head = Side::load(head_snapshot, None, cache)?;
    let base = Side::load(base_snapshot, Some(&head), cache)?;
    let mut diff = compare::compare(&base, &head);
    let target = request.manifests.unwrap_or(DEFAULT_BACKEND);
    for job in &mut diff.jobs {
        if !matches!(job.action, Action::Update | Action::Replace) {
            continue;
        }
        let (Some(before), Some(after)) = (&job.before, &job.after) else {
            continue;
        };
        // Both uses read the same rendering: what is shown is what was classified.
        let old = manifests::render(before, &base, target);
        let new = manifests::render(after, &head, target);
        if request.manifests.is_some() {
            job.manifests = manifests::diff(&old, &new);
        }
        // A renamed job is replaced whatever its manifests say.
        if job.old_job.is_none() {
            job.classify(classify::classify(&old, &new, target));
        }
    }
    // What the change does to admission across the whole pool: every job of each side
    // placed at once, by the same rules as `loam plan`'s preview.
    if let (Some(at_base), Some(at_head)) = (&base.specs.catalogue, &head.specs.catalogue) {
        diff.admission = loam_compiler::admission::changes(
            &loam_compiler::admission::preview(&base.plans, at_base),
            &loam_compiler::admission::preview(&head.plans, at_head),
        );
        explain_admission(&mut diff, &head.label);
    }
    // What the change does to every job scheduled together over time (issue 33).
    if let (Some(before), Some(after)) = (
        schedule::of_project(&base.specs, &base.plans),
        schedule::of_project(&head.specs, &head.plans),
    ) {
        diff.schedule = schedule::compare(&before, &after);
    }
    Ok(Outcome { base, head, diff })
}

/// The core's admission sentences, said more exactly where the diff knows more (review finding
/// 10): a job whose spec does not check at head is not placed, not "removed"; a borrower that
/// borrows the same devices but may be preempted by others names who.
fn explain_admission(diff: &mut PlanDiff, head_label: &str) {
    // A job whose spec does not check at head is not removed: it is not placed because it
    // was not planned (review finding 10). The core's sentence knows only that it is gone.
    let unchecked: std::collections::BTreeSet<&str> = diff
        .jobs
        .iter()
        .filter(|j| j.action == Action::Error)
        .map(|j| j.job.as_str())
        .collect();
    for change in &mut diff.admission {
        // A borrower that borrows the same devices, but may now be preempted by others (or
        // by no one), read "this change makes `x` borrow 128 H800_SXM … (it was borrowing 128
        // H800_SXM)": the difference, who may preempt it, is said instead.
        if let (
            Some(AdmissionStatus::Borrows {
                borrowed: was,
                preempted_by: before,
            }),
            Some(AdmissionStatus::Borrows {
                borrowed: now,
                preempted_by: after,
            }),
        ) = (&change.before, &change.after)
            && was == now
            && before != after
        {
            change.sentence = format!(
                "`{}` still borrows the same devices; who may preempt it changes: {} → {}",
                change.job,
                crate::render::admission::preemptors_text(before),
                crate::render::admission::preemptors_text(after)
            );
        }
        if change.after.is_none() && unchecked.contains(change.job.as_str()) {
            let removed = format!("`{}` is removed;", change.job);
            if let Some(rest) = change.sentence.strip_prefix(&removed) {
                change.sentence = format!(
                    "`{}` is not placed: its spec does not check at {};{rest}",
                    change.job, head_label
                );
            }
        }
    }
}

/// The diagnostics a diff shows, the same in every format: at base only the errors, which explain
/// why a job could not be compared; at head every one, of checking and of planning.
pub fn shown_diagnostics(base: &Side, head: &Side) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let base_errors = base
        .specs
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .cloned()
        .collect();
    let mut at_head = head.specs.diagnostics.clone();
    at_head.extend(head.planner_diagnostics.iter().cloned());
    (base_errors, at_head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_compiler::admission::{AdmissionChange, Preemptor};

    #[test]
    fn a_borrower_that_only_lost_its_preemptor_says_so() {
        // The review's pr2: `llama3-405b-pretrain` borrows 128 H800_SXM on both sides; at base
        // tenant nlp could reclaim them, at head no one can.
        let borrowed = std::collections::BTreeMap::from([("H800_SXM".to_string(), 128)]);
        let reclaim = Preemptor::Reclaim {
            tenant: "nlp".into(),
            device: "H800_SXM".into(),
            unused_guaranteed: 128,
        };
        let mut diff = PlanDiff {
            admission: vec![AdmissionChange {
                job: "llama3-405b-pretrain".into(),
                pool: "xirang".into(),
                before: Some(AdmissionStatus::Borrows {
                    borrowed: borrowed.clone(),
                    preempted_by: vec![reclaim],
                }),
                after: Some(AdmissionStatus::Borrows {
                    borrowed,
                    preempted_by: Vec::new(),
                }),
                sentence: "this change makes `llama3-405b-pretrain` borrow 128 H800_SXM … (it was borrowing 128 H800_SXM)".into(),
            }],
            ..PlanDiff::default()
        };
        explain_admission(&mut diff, "HEAD");
        assert_eq!(
            diff.admission[0].sentence,
            "`llama3-405b-pretrain` still borrows the same devices; who may preempt it changes: \
             tenant nlp reclaiming its H800_SXM → no one"
        );
    }
}
