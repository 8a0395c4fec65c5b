//! Whether a changed job can be updated in place on its backend or must be replaced (deleted and
//! created again, resuming from its last checkpoint), decided from the differences between the
//! manifests that the backend renders for each side. What each change does is the backend's
//! knowledge (`Backend::classify` in `loam-backends`: the fields of a running JobSet that
//! Kubernetes refuses to change, a submitted Slurm script being fixed); here is only what every
//! backend shares: a plan with no manifests on one side is replaced whole, and the verdict names
//! its backend.

use loam_backends::Target;
use loam_backends::change::{Effect, Files, Reason};

/// What happens to a changed job on one backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The backend's name in the registry (`kubernetes`, `slurm`, `baremetal`).
    pub backend: &'static str,
    /// Every manifest change, replacements first.
    pub reasons: Vec<Reason>,
}

impl Verdict {
    /// The changes that force a replacement.
    pub fn forcing(&self) -> impl Iterator<Item = &Reason> {
        self.reasons.iter().filter(|r| r.effect == Effect::Replace)
    }

    /// Whether the job must be replaced.
    pub fn replaces(&self) -> bool {
        self.forcing().next().is_some()
    }
}

/// Classifies the change from `old` manifests to `new` ones on `target`: a plan without
/// manifests on one side is replaced whole, else each changed file by its backend's rules
/// ([`loam_backends::change::classify`]).
pub fn classify(old: &Files, new: &Files, target: Target) -> Verdict {
    let backend = target.name();
    let reasons = if old.is_empty() != new.is_empty() {
        // The plan is not feasible on one side: there is nothing to update.
        vec![Reason {
            file: String::new(),
            object: None,
            field: "every manifest".into(),
            at: None,
            change: if new.is_empty() { "removed" } else { "added" },
            effect: Effect::Replace,
            why: "the plan has no manifests on one side",
        }]
    } else {
        loam_backends::change::classify(old, new, target)
    };
    Verdict { backend, reasons }
}

#[cfg(test)]
mod tests;
