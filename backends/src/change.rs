//! What a change between two renderings of a job does to the running job: updated in place,
//! replaced (deleted and created again, resuming from its last checkpoint), or a change of the
//! shared cluster objects only. Each backend knows its own rules ([`crate::Backend::classify`]):
//! which Kubernetes fields are immutable in a JobSet, that a submitted Slurm script is fixed.
//! What they share is here: the words of a reason, the layout convention for shared files, and
//! the line comparison of scripts.

use crate::Target;
use std::collections::BTreeMap;

// The folder of shared cluster objects that every job's manifests may reference: what a backend
// renders once for all jobs ([`crate::Backend::render_shared`]) is below it.
use crate::kubernetes::PREREQUISITES;

/// What a manifest change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    /// The running job must be deleted and created again.
    Replace,
    /// Applied to the running job as it is.
    InPlace,
    /// A shared cluster object changes; the job does not.
    Cluster,
}

impl Effect {
    /// The name in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Effect::Replace => "replace",
            Effect::InPlace => "update",
            Effect::Cluster => "cluster",
        }
    }

    fn consequence(self) -> &'static str {
        match self {
            Effect::Replace => "forces replacement",
            Effect::InPlace => "updated in place",
            Effect::Cluster => "updates the cluster, not the job",
        }
    }
}

/// One manifest change and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// The file, relative to the job's folder (`20-jobset.yaml`); empty for the whole job.
    pub file: String,
    /// The object, `Kind/name`, for Kubernetes.
    pub object: Option<String>,
    /// The field that the rule names (`spec.replicatedJobs`), or the lines of a script.
    pub field: String,
    /// The first changed field below it (`spec.replicatedJobs[0].template.spec…`).
    pub at: Option<String>,
    /// `changed`, `added` or `removed`.
    pub change: &'static str,
    /// What it does.
    pub effect: Effect,
    /// Why, from the rule.
    pub why: &'static str,
}

impl Reason {
    /// `20-jobset.yaml spec.replicatedJobs changed (immutable on a running JobSet)`.
    pub fn sentence(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if !self.file.is_empty() {
            parts.push(&self.file);
        }
        // The object is named when the field alone would not say which one.
        if let Some(object) = &self.object
            && (self.field.is_empty() || self.effect == Effect::Cluster)
        {
            parts.push(object);
        }
        if !self.field.is_empty() {
            parts.push(&self.field);
        }
        format!("{} {} ({})", parts.join(" "), self.change, self.why)
    }

    /// The sentence with its consequence, as the job's block lists it.
    pub fn line(&self) -> String {
        format!("{}: {}", self.sentence(), self.effect.consequence())
    }
}

/// Rendered files by path, as [`crate::render`] gives them.
pub type Files = BTreeMap<String, String>;

/// Every change from the `old` rendering of a job to the `new` one on `target`, replacements
/// first: each file that differs, added and removed ones included, classified by its backend
/// ([`crate::Backend::classify`]) as a path without the job's folder ([`shown_file`]).
pub fn classify(old: &Files, new: &Files, target: Target) -> Vec<Reason> {
    let backend = target.backend();
    let mut paths: Vec<&String> = old.keys().chain(new.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut reasons = Vec::new();
    for path in paths {
        let (a, b) = (old.get(path), new.get(path));
        if a == b {
            continue;
        }
        let (a, b) = (a.map_or("", String::as_str), b.map_or("", String::as_str));
        reasons.extend(backend.classify(&shown_file(path), is_shared(path), a, b));
    }
    reasons.sort_by_key(|r| r.effect);
    reasons
}

/// A rendered path as a reason names it: without the job's folder (`job-a/jobset.yaml` →
/// `jobset.yaml`); a shared file keeps its whole path.
fn shown_file(path: &str) -> String {
    match path.split_once('/') {
        Some((first, rest)) if first != PREREQUISITES => rest.to_string(),
        _ => path.to_string(),
    }
}

/// Whether a rendered path is below the shared objects' folder ([`PREREQUISITES`]).
pub fn is_shared(path: &str) -> bool {
    path.split('/').any(|c| c == PREREQUISITES)
}

/// `added`, `removed` or `changed`, from which side is empty.
pub fn change_of(old: &str, new: &str) -> &'static str {
    match (old.is_empty(), new.is_empty()) {
        (true, false) => "added",
        (false, true) => "removed",
        _ => "changed",
    }
}

/// Comments do not change what a script runs (`#!` and `#SBATCH` lines do); what is left, with
/// line numbers from 1.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim_start();
            !line.starts_with('#') || line.starts_with("#!") || line.starts_with("#SBATCH")
        })
        .map(|(i, line)| (i + 1, line))
        .collect()
}

/// `#SBATCH --nodes` for a directive, else `line 12`.
fn line_label(number: usize, line: &str) -> String {
    match line.strip_prefix("#SBATCH") {
        Some(rest) => {
            let option = rest.trim().split(['=', ' ']).next().unwrap_or_default();
            format!("#SBATCH {option}")
        }
        None => format!("line {number}"),
    }
}

/// The change of a script (or any text a backend compares line by line): `None` when only
/// comments changed, else one reason naming the first three changed lines (`#SBATCH --nodes,
/// line 5`) with the `effect` and `why` the backend gives.
pub fn script(
    file: &str,
    old: &str,
    new: &str,
    effect: Effect,
    why: &'static str,
) -> Option<Reason> {
    let (a, b) = (code_lines(old), code_lines(new));
    let (ta, tb): (Vec<&str>, Vec<&str>) = (
        a.iter().map(|(_, l)| *l).collect(),
        b.iter().map(|(_, l)| *l).collect(),
    );
    if ta == tb {
        return None;
    }
    let mut labels: Vec<String> = Vec::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &ta, &tb) {
        if matches!(op, similar::DiffOp::Equal { .. }) {
            continue;
        }
        // Lines of the new script name the change; a pure deletion names the old lines.
        let (lines, range) = if op.new_range().is_empty() {
            (&a, op.old_range())
        } else {
            (&b, op.new_range())
        };
        for (number, line) in lines.get(range).unwrap_or_default() {
            let label = line_label(*number, line);
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
    }
    const SHOWN: usize = 3;
    let mut field = labels
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if labels.len() > SHOWN {
        field.push_str(&format!(" and {} more", labels.len() - SHOWN));
    }
    Some(Reason {
        file: file.to_string(),
        object: None,
        field,
        at: None,
        change: change_of(old, new),
        effect,
        why,
    })
}

/// A shared file's change, for a backend that compares its files as text: the cluster's, not
/// the job's.
pub fn shared_script(file: &str, old: &str, new: &str) -> Option<Reason> {
    script(file, old, new, Effect::Cluster, "a shared cluster file")
}

/// What the backends' rule tests read: the reasons of [`classify`] and the files they compare.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Files, Reason, Target};

    /// The reasons of one change, replacements first.
    #[derive(Debug)]
    pub struct Verdict {
        pub reasons: Vec<Reason>,
    }

    impl Verdict {
        /// The changes that force a replacement.
        pub fn forcing(&self) -> impl Iterator<Item = &Reason> {
            self.reasons
                .iter()
                .filter(|r| r.effect == super::Effect::Replace)
        }

        /// Whether the job must be replaced.
        pub fn replaces(&self) -> bool {
            self.forcing().next().is_some()
        }
    }

    /// [`super::classify`] of `old` to `new` on `target`.
    pub fn classify(old: &Files, new: &Files, target: Target) -> Verdict {
        Verdict {
            reasons: super::classify(old, new, target),
        }
    }

    /// Files from `(path, text)` pairs.
    pub fn files(pairs: &[(&str, &str)]) -> Files {
        pairs
            .iter()
            .map(|(p, t)| ((*p).to_string(), (*t).to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests;
