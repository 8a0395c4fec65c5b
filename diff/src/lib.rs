//! What changes between two planned projects, for `loam diff` and pull-request previews: jobs
//! and services matched and compared, the reviewer's headline, totals per tenant, what each
//! changed job's manifests do on its backend, what the change does to admission and to the
//! schedule, and the text, markdown, JSON and HTML of it all.
//!
//! ```text
//!  Side (base) ─┐
//!               ├─compare─▶ PlanDiff ──▶ text | markdown | json | html
//!  Side (head) ─┘  compare.rs            text.rs markdown.rs json.rs html.rs
//! ```
//!
//! A [`Side`] is a project checked and planned by the core's one entry point, with its label;
//! the caller reads the files (the CLI reads git revisions and the work tree) and plans them.
//! Nothing here reads a file, the environment or the clock.
//!
//! Each job on both sides is then classified ([`classify`]): the backend's manifests of both
//! sides are rendered once, diffed for the report and compared against the backend's rules to
//! say whether the running job is updated in place or replaced.

pub mod admission;
pub mod catalogue_changes;
pub mod classify;
pub mod compare;
pub mod headline;
pub mod html;
pub mod json;
mod manifests;
pub mod markdown;
pub mod schedule;
pub mod services;
pub mod side;
pub mod summary;
pub mod text;
pub mod totals;

pub use side::Side;

use compare::PlanDiff;
use loam_backends::Target;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diff::Action;
use loam_ir::span::SourceMap;

/// The backend whose rules classify changed jobs when no manifests are diffed: the default of
/// `--manifests`.
pub const DEFAULT_BACKEND: Target = Target::Kubernetes;

/// How the caller writes diagnostics, for the outputs that show them (markdown, JSON, HTML):
/// the diff shows them exactly as the caller's other commands do (the CLI's are miette's
/// reports), and that rendering stays with the caller.
pub trait ShowDiagnostics {
    /// Diagnostics in full, for people, without colour: the source lines, labels and help.
    fn report(&self, diagnostics: &[Diagnostic], sources: &SourceMap) -> String;
    /// One diagnostic on one line: `error[L1002] jobs/a.loam:14:5: unknown field …`.
    fn one_line(&self, diagnostic: &Diagnostic, sources: &SourceMap) -> String;
    /// One diagnostic as a JSON object (file, lines and columns, code, severity, message …).
    fn json(&self, diagnostic: &Diagnostic, sources: &SourceMap) -> serde_json::Value;
}

/// Compares two planned sides: the jobs and services matched and compared; each updated or
/// replaced job's manifests rendered on `manifests` (diffed into the result) or, when `None`,
/// on [`DEFAULT_BACKEND`], and classified by that backend's rules; the admission changes of both
/// sides' previews; and the schedule of every job of each side run together.
pub fn diff(base: &Side, head: &Side, manifests: Option<Target>) -> PlanDiff {
    let mut diff = compare::compare(base, head);
    let target = manifests.unwrap_or(DEFAULT_BACKEND);
    for job in &mut diff.jobs {
        if !matches!(job.action, Action::Update | Action::Replace) {
            continue;
        }
        let (Some(before), Some(after)) = (&job.before, &job.after) else {
            continue;
        };
        // Both uses read the same rendering: what is shown is what was classified.
        let old = manifests::render(before, base, target);
        let new = manifests::render(after, head, target);
        if manifests.is_some() {
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
            &loam_compiler::admission::preview(base.plans(), at_base),
            &loam_compiler::admission::preview(head.plans(), at_head),
        );
        admission::explain_admission(&mut diff, &head.label);
    }
    // What the change does to every job scheduled together over time (issue 33).
    if let (Some(before), Some(after)) = (
        loam_compiler::schedule::of_project(&base.specs, base.plans(), base.services()),
        loam_compiler::schedule::of_project(&head.specs, head.plans(), head.services()),
    ) {
        diff.schedule = schedule::compare(&before, &after);
    }
    diff
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
    at_head.extend(head.planner_diagnostics().iter().cloned());
    (base_errors, at_head)
}
