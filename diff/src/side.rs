//! One side of a diff: a project checked and planned by the core (`CheckedProject`,
//! `PlannedProject`), with what the diff needs to say about
//! it (its label and commit, where its catalogue came from, which files do not check, the plans
//! taken from elsewhere). The caller reads the files and plans them (`loam diff` reads git
//! revisions); everything here is data.

use loam_compiler::project::{CheckedProject, PlannedProject};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::plan::{Plan, ServicePlan};
use std::collections::BTreeMap;

/// One side, checked and planned.
pub struct Side {
    /// What the side is called in the output.
    pub label: String,
    /// The commit's short id, for a revision.
    pub commit: Option<String>,
    /// `specs/` or `built-in`.
    pub catalogue_origin: String,
    /// The catalogue's digest, when it loaded.
    pub catalogue_digest: Option<String>,
    /// The specs and the catalogue, checked (sources, jobs, every check diagnostic).
    pub specs: CheckedProject,
    /// The core's plans of them: every job and service in a file that checked, sorted by file,
    /// the planner's findings, each plan's key and whether it was reused.
    pub planned: PlannedProject,
    /// Spec files with errors, and how many.
    pub broken: BTreeMap<String, usize>,
    /// Errors in the catalogue; when any, no job of this side was planned.
    pub catalogue_errors: usize,
    /// The bytes of each spec file, by path.
    pub bytes: BTreeMap<String, Vec<u8>>,
    /// The index in `plans` of each plan, by its key ([`loam_compiler::project::plan_key`]).
    pub keys: BTreeMap<String, usize>,
}

impl Side {
    /// The plans of every job in a file that checked, sorted by file.
    pub fn plans(&self) -> &[Plan] {
        &self.planned.document.plans
    }

    /// The plans of every service in a file that checked, sorted by file.
    pub fn services(&self) -> &[ServicePlan] {
        &self.planned.document.services
    }

    /// The planner's diagnostics.
    pub fn planner_diagnostics(&self) -> &[Diagnostic] {
        &self.planned.findings
    }

    /// How many plans were taken from the other side or the cache rather than planned.
    pub fn reused(&self) -> usize {
        self.planned.reused.iter().filter(|r| **r).count()
    }

    /// The plan with `key`, if this side has one.
    pub fn plan_by_key(&self, key: &str) -> Option<&Plan> {
        self.keys.get(key).and_then(|i| self.plans().get(*i))
    }

    /// The errors of this side's checks and planner, as `loam check` and `loam plan` report
    /// them.
    pub fn errors(&self) -> Vec<Diagnostic> {
        self.specs
            .diagnostics
            .iter()
            .chain(self.planner_diagnostics())
            .filter(|d| d.is_error())
            .cloned()
            .collect()
    }

    /// Whether the jobs of `file` could not be planned on this side: the file, or the
    /// catalogue, has errors.
    pub fn is_broken(&self, file: &str) -> bool {
        self.catalogue_errors > 0 || self.broken.contains_key(file)
    }

    /// The label with the commit: `HEAD~1 (1a2b3c4d)`, or `work tree`.
    pub fn title(&self) -> String {
        match &self.commit {
            Some(commit) if !commit.is_empty() && *commit != self.label => {
                format!("{} ({commit})", self.label)
            }
            _ => self.label.clone(),
        }
    }
}
