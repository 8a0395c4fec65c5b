//! Whether a changed job can be updated in place on its backend or must be replaced (deleted and
//! created again, resuming from its last checkpoint), decided from the differences between the
//! manifests that the backend renders for each side.
//!
//! - Kubernetes: every YAML document is found again by kind, namespace and name, and each changed
//!   field is looked up in the rules of its kind ([`rules`]); a field no rule allows, an object
//!   of a kind loam does not know, an added or removed job object, or a file that is not YAML
//!   forces a replacement.
//! - Slurm: a submitted batch script is fixed, so any change to what it runs (comments aside)
//!   means cancel and resubmit.
//! - Bare metal: the launcher and the hostfile are read when the job starts, so any change to
//!   them means stop and relaunch; `plan.json` is data the trainer reads at its next start.
//!
//! Files below a `_prerequisites` folder, and shared kinds (queues, flavours, priority classes)
//! anywhere, are objects of the cluster that many jobs share: changing them updates the cluster,
//! not the job.

pub mod objects;
pub mod rules;

use loam_backends::Target;
use rules::Mutability;
use std::collections::BTreeMap;

/// The folder of shared cluster objects that every job's manifests may reference.
const PREREQUISITES: &str = "_prerequisites";

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

/// What happens to a changed job on one backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `kubernetes`, `slurm` or `baremetal`.
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

/// The name a backend goes by in the output.
pub fn backend_name(target: Target) -> &'static str {
    match target {
        Target::Kubernetes => "kubernetes",
        Target::Slurm => "slurm",
        Target::Baremetal => "baremetal",
    }
}

/// Manifests by path, as rendered.
pub type Files = BTreeMap<String, String>;

/// Classifies the change from `old` manifests to `new` ones on `target`.
pub fn classify(old: &Files, new: &Files, target: Target) -> Verdict {
    let backend = backend_name(target);
    let mut reasons = Vec::new();
    if old.is_empty() != new.is_empty() {
        // The plan is not feasible on one side: there is nothing to update.
        reasons.push(Reason {
            file: String::new(),
            object: None,
            field: "every manifest".into(),
            at: None,
            change: if new.is_empty() { "removed" } else { "added" },
            effect: Effect::Replace,
            why: "the plan has no manifests on one side",
        });
    } else {
        let mut paths: Vec<&String> = old.keys().chain(new.keys()).collect();
        paths.sort();
        paths.dedup();
        for path in paths {
            let (a, b) = (old.get(path), new.get(path));
            if a == b {
                continue;
            }
            let file = shown_file(path);
            let shared = path.split('/').any(|c| c == PREREQUISITES);
            let (a, b) = (a.map_or("", String::as_str), b.map_or("", String::as_str));
            match target {
                Target::Kubernetes => kubernetes_file(&file, shared, a, b, &mut reasons),
                Target::Slurm | Target::Baremetal => {
                    script_file(&file, shared, target, a, b, &mut reasons);
                }
            }
        }
    }
    reasons.sort_by_key(|r| r.effect);
    Verdict { backend, reasons }
}

/// A manifest's path without the job's folder (`job-a/jobset.yaml` → `jobset.yaml`).
fn shown_file(path: &str) -> String {
    match path.split_once('/') {
        Some((first, rest)) if first != PREREQUISITES => rest.to_string(),
        _ => path.to_string(),
    }
}

fn is_yaml(file: &str) -> bool {
    file.ends_with(".yaml") || file.ends_with(".yml")
}

fn kubernetes_file(file: &str, shared: bool, old: &str, new: &str, out: &mut Vec<Reason>) {
    let parsed = if is_yaml(file) {
        objects::parse(old).zip(objects::parse(new))
    } else {
        None
    };
    let Some((a, b)) = parsed else {
        out.push(Reason {
            file: file.to_string(),
            object: None,
            field: String::new(),
            at: None,
            change: change_of(old, new),
            effect: if shared {
                Effect::Cluster
            } else {
                Effect::Replace
            },
            why: if shared {
                "a shared cluster object"
            } else {
                "not Kubernetes objects loam can compare: treated as replaced"
            },
        });
        return;
    };
    let mut ids: Vec<&objects::Identity> = a.keys().chain(b.keys()).collect();
    ids.sort();
    ids.dedup();
    let mut found: BTreeMap<(Effect, String), Reason> = BTreeMap::new();
    for id in ids {
        let kind = rules::find(&id.group, &id.kind);
        let shared = shared || kind.is_some_and(|k| k.shared);
        let object = Some(id.shown());
        let reason = |field: String, at: Option<String>, change, effect, why| Reason {
            file: file.to_string(),
            object: object.clone(),
            field,
            at,
            change,
            effect,
            why,
        };
        let (x, y) = match (a.get(id), b.get(id)) {
            (Some(x), Some(y)) => (x, y),
            (x, _) => {
                let change = if x.is_some() { "removed" } else { "added" };
                let r = if shared {
                    reason(
                        String::new(),
                        None,
                        change,
                        Effect::Cluster,
                        "a shared cluster object",
                    )
                } else {
                    reason(
                        String::new(),
                        None,
                        change,
                        Effect::Replace,
                        "the job's objects differ",
                    )
                };
                found.entry((r.effect, r.sentence())).or_insert(r);
                continue;
            }
        };
        // A ConfigMap once made immutable stays so (Kubernetes refuses any change to it).
        let frozen = x.get("immutable").and_then(serde_json::Value::as_bool) == Some(true);
        for path in objects::changed_paths(x, y) {
            let at = Some(objects::shown(&path));
            let head: Vec<&String> = path.iter().take(2).collect();
            let r = match kind {
                _ if shared => reason(
                    String::new(),
                    None,
                    "changed",
                    Effect::Cluster,
                    "a shared cluster object",
                ),
                None => reason(
                    objects::shown(&head),
                    at,
                    "changed",
                    Effect::Replace,
                    "a kind loam does not know: treated as replaced",
                ),
                Some(_) if frozen => reason(
                    objects::shown(&head),
                    at,
                    "changed",
                    Effect::Replace,
                    "the ConfigMap is immutable",
                ),
                Some(kind) => match rules::decide(kind, &path) {
                    Some(rule) => reason(
                        objects::shown(rule.path),
                        at,
                        "changed",
                        match rule.mutability {
                            Mutability::Mutable => Effect::InPlace,
                            Mutability::Immutable => Effect::Replace,
                        },
                        rule.why,
                    ),
                    None => reason(
                        objects::shown(&head),
                        at,
                        "changed",
                        Effect::Replace,
                        kind.default_why,
                    ),
                },
            };
            // One reason per field and effect; the first changed field below it is kept.
            found.entry((r.effect, r.sentence())).or_insert(r);
        }
    }
    out.extend(found.into_values());
}

fn change_of(old: &str, new: &str) -> &'static str {
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

fn script_file(
    file: &str,
    shared: bool,
    target: Target,
    old: &str,
    new: &str,
    out: &mut Vec<Reason>,
) {
    let (a, b) = (code_lines(old), code_lines(new));
    let (ta, tb): (Vec<&str>, Vec<&str>) = (
        a.iter().map(|(_, l)| *l).collect(),
        b.iter().map(|(_, l)| *l).collect(),
    );
    if ta == tb {
        return;
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
    let name = file.rsplit('/').next().unwrap_or(file);
    let (effect, why) = match target {
        _ if shared => (Effect::Cluster, "a shared cluster file"),
        Target::Baremetal if name == "plan.json" => (
            Effect::InPlace,
            "data the trainer reads at its next start: copy it to the hosts",
        ),
        Target::Baremetal => (
            Effect::Replace,
            "read when the launch starts: stop and relaunch",
        ),
        _ => (
            Effect::Replace,
            "a submitted batch script is fixed: cancel and resubmit",
        ),
    };
    out.push(Reason {
        file: file.to_string(),
        object: None,
        field,
        at: None,
        change: change_of(old, new),
        effect,
        why,
    });
}

#[cfg(test)]
mod tests;
