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
    /// Errors in the catalogue; when any, only what does not use a broken catalogue file was
    /// planned (nothing, when no catalogue loaded at all).
    pub catalogue_errors: usize,
    /// Spec files whose only errors are a pool or device of a broken catalogue file, each with
    /// that file ([`CheckedProject::withheld_files`]).
    pub withheld: BTreeMap<String, String>,
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

    /// Whether no catalogue loaded on this side, so no spec was checked or planned.
    pub fn catalogue_unloaded(&self) -> bool {
        self.specs.catalogue.is_none() && self.catalogue_errors > 0
    }

    /// Whether the jobs of `file` could not be planned on this side: the file has errors (its
    /// own, or a catalogue file it uses does not load), or no catalogue loaded.
    pub fn is_broken(&self, file: &str) -> bool {
        self.catalogue_unloaded() || self.broken.contains_key(file)
    }

    /// Why `file`'s jobs have no plan on this side, when [`Side::is_broken`]: `the catalogue
    /// does not load at HEAD`, `specs/pools/xirang.yaml, which it uses, does not load at HEAD`,
    /// or `jobs/a.loam does not check at HEAD`.
    pub fn broken_note(&self, file: &str) -> String {
        if self.catalogue_unloaded() {
            format!("the catalogue does not load at {}", self.label)
        } else if let Some(fault) = self.withheld.get(file) {
            format!("{fault}, which it uses, does not load at {}", self.label)
        } else {
            format!("{file} does not check at {}", self.label)
        }
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
