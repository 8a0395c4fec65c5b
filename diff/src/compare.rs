//! What changes between the plans of two sides: jobs matched across the sides (same name; or
//! renamed), and per job the attributes that differ, with signed deltas for the estimates.
//!
//! Matching, in this order:
//! 1. the same job name on both sides is the same job; a different file means it **moved**
//!    (an update, unless its manifests force a replacement: see [`super::classify`]);
//! 2. a job only at base and a job only at head, in the same file, with the same tenant and the
//!    same workload (model, tokens, batch, precision) are one job **renamed** (a replacement:
//!    the old job's manifests go, the new one's come);
//! 3. what is left is **added** or **removed**, unless its file does not check on the other side:
//!    then the job is shown against the diagnostics of that side instead.
//!
//! A job changes when anything that decides how it runs differs: file, tenant, priority,
//! pool, feasibility and reasons, workload, layout, placement (groups, stages), estimates, data
//! and checkpoint plans. The explanations (`why`, `notes`, `alternatives`) are not compared, nor
//! is the estimates' stated uncertainty: it says how far to trust them, not how the job runs.

use super::classify::Verdict;
use super::side::Side;
pub use super::summary::Summary;
use loam_ir::diff::Action;
use loam_ir::diff::values::{Change, Metric, Value};
use loam_ir::display::{plan_layout_line, recompute_text};
use loam_ir::plan::Plan;
use std::collections::{BTreeMap, BTreeSet};

/// One attribute of a plan: `layout.tensor = 8`.
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    /// Dotted key.
    pub key: String,
    /// Its value.
    pub value: Value,
}

/// A job's change between the sides.
#[derive(Debug, Clone)]
pub struct JobDiff {
    /// What happens to it.
    pub action: Action,
    /// Its name (at head; at base when deleted).
    pub job: String,
    /// Its old name, when renamed.
    pub old_job: Option<String>,
    /// Its file (at head; at base when deleted).
    pub file: String,
    /// Its old file, when moved.
    pub old_file: Option<String>,
    /// The plan at base.
    pub before: Option<Plan>,
    /// The plan at head.
    pub after: Option<Plan>,
    /// The attributes that differ (for creates and deletes, the main attributes of the one
    /// side).
    pub changes: Vec<Change>,
    /// A remark: `does not check at HEAD~1`, `moved from a.loam`.
    pub note: Option<String>,
    /// A unified diff of the job's manifests, when asked for and they differ.
    pub manifests: Option<String>,
    /// For a job on both sides (not renamed): what its manifests' changes do on the backend.
    pub verdict: Option<Verdict>,
}

impl JobDiff {
    /// Records what the manifests' changes do; a change that a running job cannot take turns the
    /// update into a replacement.
    pub fn classify(&mut self, verdict: Verdict) {
        if self.action == Action::Update && verdict.replaces() {
            self.action = Action::Replace;
        }
        self.verdict = Some(verdict);
    }
}

/// A spec file that does not check at head and has no plans at base to show against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenFile {
    /// Its path.
    pub file: String,
    /// Errors at head.
    pub errors: usize,
}

/// The spec files a catalogue with errors kept from being planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnplannedFiles {
    /// No catalogue loaded: no file was planned.
    All,
    /// These files use a pool or device of a broken catalogue file.
    Some(BTreeSet<String>),
}

impl Default for UnplannedFiles {
    fn default() -> Self {
        UnplannedFiles::Some(BTreeSet::new())
    }
}

impl UnplannedFiles {
    /// Whether `file` is one of them.
    pub fn contains(&self, file: &str) -> bool {
        match self {
            UnplannedFiles::All => true,
            UnplannedFiles::Some(files) => files.contains(file),
        }
    }
}

/// Everything that changes between two sides.
#[derive(Debug, Clone, Default)]
pub struct PlanDiff {
    /// One entry per job of either side, sorted by file then name (unchanged ones included).
    pub jobs: Vec<JobDiff>,
    /// One entry per service of either side, sorted by file then name (unchanged ones
    /// included).
    pub services: Vec<super::services::ServiceDiff>,
    /// Spec files that do not check at head and had no plans at base.
    pub broken: Vec<BrokenFile>,
    /// The catalogue files with errors at head (repository-relative path, errors), sorted:
    /// when any, only specs that use none of them were planned at head.
    pub catalogue: Vec<BrokenFile>,
    /// The spec files at head whose jobs and services were not planned because of the
    /// catalogue rather than of themselves: every file when no catalogue loaded.
    pub unplanned_files: UnplannedFiles,
    /// The jobs whose admission (Kueue's verdict over the whole pool, docs/admission.md)
    /// differs between the sides.
    pub admission: Vec<loam_compiler::admission::AdmissionChange>,
    /// What the change does to the schedule of every job together (docs/scheduling.md);
    /// `None` when nothing moves or a side has no catalogue.
    pub schedule: Option<super::schedule::ScheduleDiff>,
}

impl PlanDiff {
    /// The counts of the summary line, over jobs and services.
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            errors: self.broken.len(),
            catalogue_errors: (
                self.catalogue.iter().map(|f| f.errors).sum(),
                self.catalogue.len(),
            ),
            catalogue_partly: matches!(self.unplanned_files, UnplannedFiles::Some(_)),
            ..Summary::default()
        };
        let actions = self
            .jobs
            .iter()
            .map(|j| (j.action, false, j.file.as_str()))
            .chain(
                self.services
                    .iter()
                    .map(|s| (s.action, true, s.file.as_str())),
            );
        for (action, service, file) in actions {
            let catalogue_broken = self.unplanned_files.contains(file);
            match action {
                Action::Create => s.add += 1,
                Action::Update => s.change += 1,
                Action::Replace => s.replace += 1,
                Action::Delete => s.destroy += 1,
                Action::Infeasible if service => s.infeasible_services += 1,
                Action::Infeasible => s.infeasible += 1,
                Action::Error if catalogue_broken => s.unplanned += 1,
                Action::Error => s.errors += 1,
                Action::NoOp if service => s.unchanged_services += 1,
                Action::NoOp => s.unchanged += 1,
            }
        }
        s
    }

    /// The jobs that change (or do not check), in order.
    pub fn changed(&self) -> impl Iterator<Item = &JobDiff> {
        self.jobs.iter().filter(|j| j.action != Action::NoOp)
    }

    /// The services that change (or do not check), in order.
    pub fn changed_services(&self) -> impl Iterator<Item = &super::services::ServiceDiff> {
        self.services.iter().filter(|s| s.action != Action::NoOp)
    }

    /// The actions that occur, in legend order.
    pub fn actions_used(&self) -> Vec<Action> {
        let mut used: Vec<Action> = self
            .changed()
            .map(|j| j.action)
            .chain(self.changed_services().map(|s| s.action))
            .collect();
        if !self.broken.is_empty() {
            used.push(Action::Error);
        }
        used.sort();
        used.dedup();
        used
    }
}

/// The main attributes of a plan, in display order.
pub fn attributes(plan: &Plan) -> Vec<Attr> {
    let mut attrs = Vec::new();
    let mut push = |key: &str, value: Value| {
        attrs.push(Attr {
            key: key.to_string(),
            value,
        });
    };
    let text = |value: String| Value::Text(value);
    push("job", text(plan.job.clone()));
    push("file", text(plan.file.clone()));
    push("tenant", text(plan.tenant.clone()));
    push("priority", text(plan.priority.to_string()));
    push("interruptible", Value::Bool(plan.interruptible));
    push("pool", text(plan.pool.clone()));
    push("feasible", Value::Bool(plan.feasible));
    let w = &plan.workload;
    push("workload.params", Value::Number(w.params, Metric::Tokens));
    push(
        "workload.model",
        text(format!(
            "{} layers, hidden {}, {} heads, seq {}",
            w.layers, w.hidden, w.heads, w.seq_len
        )),
    );
    push("workload.tokens", Value::Number(w.tokens, Metric::Tokens));
    push("workload.global_batch", Value::Count(w.global_batch));
    push("workload.precision", text(w.precision.to_string()));
    // Only where a plan names one (a deduplicated dispatch): the all-to-all is every other
    // plan's, so a switch reads `(none) -> deduplicated`.
    if let Some(dispatch) = w.expert_dispatch {
        push("workload.expert_dispatch", text(dispatch.to_string()));
    }
    if let Some(l) = &plan.layout {
        push("layout.tensor", Value::Count(l.tensor));
        push("layout.pipeline", Value::Count(l.pipeline));
        push("layout.data", Value::Count(l.data));
        push("layout.context", Value::Count(l.context));
        push("layout.expert", Value::Count(l.expert));
        push("layout.virtual_stages", Value::Count(l.virtual_stages));
        push("layout.micro_batch", Value::Count(l.micro_batch));
        push("layout.zero", Value::Count(u64::from(l.zero)));
        // The mode with the blocks per chunk replayed under partial recomputation.
        push("layout.recompute", text(recompute_text(l)));
        // As the plan's memory and time assume it (never at tensor degree 1).
        push(
            "layout.sequence_parallel",
            Value::Bool(l.sequence_parallel_at(l.tensor)),
        );
        push("layout.tensor_overlap", Value::Bool(l.tensor_overlap));
    }
    // Each group's own tensor degree, in plans over two device types.
    for g in plan.groups.iter().filter(|_| plan.groups.len() > 1) {
        if let Some(t) = g.tensor {
            push(&format!("layout.tensor[{}]", g.device), Value::Count(t));
        }
    }
    let mut sites: Vec<&str> = plan.groups.iter().map(|g| g.site.as_str()).collect();
    sites.sort_unstable();
    sites.dedup();
    let mut devices: Vec<&str> = plan.groups.iter().map(|g| g.device.as_str()).collect();
    devices.sort_unstable();
    devices.dedup();
    if !plan.groups.is_empty() {
        push("placement.sites", text(sites.join(", ")));
        push("placement.devices", text(devices.join(", ")));
    }
    let mut list = |key: &str, items: Vec<String>| {
        if !items.is_empty() {
            attrs.push(Attr {
                key: key.to_string(),
                value: Value::List(items),
            });
        }
    };
    list("reasons", plan.reasons.clone());
    list(
        "placement.groups",
        plan.groups
            .iter()
            .map(|g| {
                format!(
                    "{}: {} × {} on {} {} ({})",
                    g.site,
                    g.devices,
                    g.device,
                    g.nodes,
                    if g.nodes == 1 { "node" } else { "nodes" },
                    g.node_group
                )
            })
            .collect(),
    );
    list(
        "placement.stages",
        plan.stages
            .iter()
            .map(|s| {
                format!(
                    "stage {}: layers {}..{} on group {}",
                    s.index,
                    s.layers.first().copied().unwrap_or_default(),
                    s.layers.get(1).copied().unwrap_or_default(),
                    s.group
                )
            })
            .collect(),
    );
    let mut number = |key: &str, n: f64, metric: Metric| {
        attrs.push(Attr {
            key: key.to_string(),
            value: Value::Number(n, metric),
        });
    };
    if let Some(e) = &plan.estimate {
        // The time every output shows: an interruptible job's in its daily window.
        let time = plan.wall_time_h().unwrap_or(e.train_time_h);
        number("estimate.train_time", time, Metric::Duration);
        if let Some(device_hours) = plan.device_hours() {
            number(
                "estimate.device_hours",
                device_hours,
                Metric::Amount("device-h"),
            );
        }
        number(
            "estimate.cost",
            e.cost.amount,
            Metric::Money(e.cost.currency.clone()),
        );
        number("estimate.carbon", e.carbon_kg, Metric::Carbon);
        number("estimate.energy", e.energy_kwh, Metric::Energy);
        number("estimate.mfu", e.mfu, Metric::Ratio);
        number("estimate.tokens_per_s", e.tokens_per_s, Metric::Rate);
        number("estimate.step_time", e.step_time_s, Metric::Seconds);
        number(
            "estimate.memory_per_device",
            e.memory_per_device_gib,
            Metric::Amount("GiB"),
        );
    }
    if let Some(d) = &plan.data {
        attrs.push(Attr {
            key: "data.strategy".into(),
            value: Value::Text(d.strategy.clone()),
        });
        attrs.push(Attr {
            key: "data.transfer".into(),
            value: Value::Number(d.transfer_gb, Metric::Amount("GB")),
        });
    }
    if let Some(c) = &plan.checkpoint {
        attrs.push(Attr {
            key: "checkpoint.interval".into(),
            value: Value::Number(c.interval_min, Metric::Amount("min")),
        });
        attrs.push(Attr {
            key: "checkpoint.path".into(),
            value: Value::Text(c.path.clone()),
        });
    }
    attrs
}

/// The attributes shown for a created or destroyed job: the ones a reviewer looks at first.
const SHOWN_WHOLE: [&str; 11] = [
    "reasons",
    "file",
    "tenant",
    "pool",
    "layout",
    "placement.groups",
    "estimate.train_time",
    "estimate.device_hours",
    "estimate.cost",
    "estimate.carbon",
    "estimate.mfu",
];

/// The attributes that differ, in display order. Numbers that differ only in the last bits
/// still count: the planner is deterministic, so any difference is real.
pub fn changes(before: &Plan, after: &Plan) -> Vec<Change> {
    let old = attributes(before);
    let new = attributes(after);
    let old_map: BTreeMap<&str, &Value> = old.iter().map(|a| (a.key.as_str(), &a.value)).collect();
    let new_map: BTreeMap<&str, &Value> = new.iter().map(|a| (a.key.as_str(), &a.value)).collect();
    let mut keys: Vec<&str> = new.iter().map(|a| a.key.as_str()).collect();
    for a in &old {
        if !new_map.contains_key(a.key.as_str()) {
            keys.push(a.key.as_str());
        }
    }
    let mut found = Vec::new();
    for key in keys {
        let (b, a) = (old_map.get(key), new_map.get(key));
        if b != a {
            found.push(Change {
                key: key.to_string(),
                before: b.map(|v| (*v).clone()),
                after: a.map(|v| (*v).clone()),
            });
        }
    }
    if found.is_empty() && differs(before, after) {
        // Something outside the shown attributes differs (a group's labels, a stage's ops …):
        // name it by its Plan JSON path.
        let (a, b) = (
            serde_json::to_value(stripped(before)).unwrap_or_default(),
            serde_json::to_value(stripped(after)).unwrap_or_default(),
        );
        let mut paths = Vec::new();
        json_changes(&a, &b, "plan", &mut paths);
        found.extend(paths);
    }
    found
}

/// Most Plan JSON paths a change outside the shown attributes lists.
const MOST_PATHS: usize = 5;

/// The leaves that differ between two JSON values, as changes keyed by their path (at most
/// [`MOST_PATHS`]).
fn json_changes(a: &serde_json::Value, b: &serde_json::Value, path: &str, out: &mut Vec<Change>) {
    use serde_json::Value as Json;
    if out.len() >= MOST_PATHS || a == b {
        return;
    }
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let (va, vb) = (
                    x.get(key).unwrap_or(&Json::Null),
                    y.get(key).unwrap_or(&Json::Null),
                );
                json_changes(va, vb, &format!("{path}.{key}"), out);
            }
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                json_changes(va, vb, &format!("{path}[{i}]"), out);
            }
        }
        _ => {
            let leaf = |v: &Json| {
                (!v.is_null()).then(|| {
                    let text = v.to_string();
                    Value::Text(if text.chars().count() > 60 {
                        format!("{}…", text.chars().take(60).collect::<String>())
                    } else {
                        text
                    })
                })
            };
            out.push(Change {
                key: path.to_string(),
                before: leaf(a),
                after: leaf(b),
            });
        }
    }
}

/// Whether two plans of one job differ in anything that decides how it runs (see the module
/// docs; explanations are not compared).
fn differs(before: &Plan, after: &Plan) -> bool {
    stripped(before) != stripped(after)
}

/// The plan without its explanations and the alternatives it was chosen over.
fn stripped(p: &Plan) -> Plan {
    let strip = |p: &Plan| {
        let mut p = p.clone();
        p.why.clear();
        p.notes.clear();
        p.alternatives.clear();
        // The other data strategies are alternatives too: an unchosen one's cost moves with
        // prices the chosen plan does not pay.
        if let Some(data) = p.data.as_mut() {
            data.options.clear();
        }
        p
    };
    strip(p)
}

/// The attributes of one side shown for a created or destroyed job.
fn whole(plan: &Plan, created: bool) -> Vec<Change> {
    let mut attrs = attributes(plan);
    if plan.layout.is_some() {
        attrs.push(Attr {
            key: "layout".into(),
            value: Value::Text(plan_layout_line(plan)),
        });
    }
    shown_whole(&attrs, &SHOWN_WHOLE, created)
}

/// The attributes named in `shown`, in that order, as the changes of a plan that is created
/// (every value after) or destroyed (every value before): jobs and services alike.
pub(super) fn shown_whole(attrs: &[Attr], shown: &[&str], created: bool) -> Vec<Change> {
    shown
        .iter()
        .filter_map(|key| attrs.iter().find(|a| a.key == *key))
        .map(|a| {
            let value = Some(a.value.clone());
            let (before, after) = if created {
                (None, value)
            } else {
                (value, None)
            };
            Change {
                key: a.key.clone(),
                before,
                after,
            }
        })
        .collect()
}

/// Whether `a` (at base) and `b` (at head), differently named, are the same job renamed.
fn renamed(a: &Plan, b: &Plan) -> bool {
    a.file == b.file && a.tenant == b.tenant && a.workload == b.workload
}

/// Matches the jobs of the two sides and lists what changes (see the module docs).
pub fn compare(base: &Side, head: &Side) -> PlanDiff {
    let base_names: BTreeMap<&str, &Plan> =
        base.plans().iter().map(|p| (p.job.as_str(), p)).collect();
    let head_names: BTreeMap<&str, &Plan> =
        head.plans().iter().map(|p| (p.job.as_str(), p)).collect();
    let mut jobs = Vec::new();
    for after in head.plans() {
        if let Some(before) = base_names.get(after.job.as_str()) {
            jobs.push(pair(before, after, None));
        }
    }
    let base_only: Vec<&Plan> = base
        .plans()
        .iter()
        .filter(|p| !head_names.contains_key(p.job.as_str()))
        .collect();
    let mut base_used = vec![false; base_only.len()];
    for after in head
        .plans()
        .iter()
        .filter(|p| !base_names.contains_key(p.job.as_str()))
    {
        let found = base_only
            .iter()
            .zip(base_used.iter_mut())
            .find(|(before, used)| !**used && renamed(before, after));
        if let Some((before, used)) = found {
            *used = true;
            jobs.push(pair(before, after, Some(Action::Replace)));
        } else if base.is_broken(&after.file) {
            let mut job = created(after);
            job.action = Action::Update;
            job.note = Some(format!(
                "at {} its spec does not check; the whole plan is shown",
                base.label
            ));
            jobs.push(job);
        } else {
            jobs.push(created(after));
        }
    }
    for (before, used) in base_only.iter().zip(&base_used) {
        if *used {
            continue;
        }
        let mut job = JobDiff {
            action: Action::Delete,
            job: before.job.clone(),
            old_job: None,
            file: before.file.clone(),
            old_file: None,
            before: Some((*before).clone()),
            after: None,
            changes: whole(before, false),
            note: None,
            manifests: None,
            verdict: None,
        };
        if head.is_broken(&before.file) {
            job.action = Action::Error;
            job.changes.clear();
            job.note = Some(head.broken_note(&before.file));
        }
        jobs.push(job);
    }
    let mut broken = Vec::new();
    for (file, errors) in &head.broken {
        // A file whose services were planned at base shows them as errors instead.
        if !base.plans().iter().any(|p| &p.file == file)
            && !base.services().iter().any(|p| &p.file == file)
        {
            broken.push(BrokenFile {
                file: file.clone(),
                errors: *errors,
            });
        }
    }
    // A job that cannot run as planned at head is its own verdict, whatever else changed: the
    // pull request must not pass as a plain change.
    for job in &mut jobs {
        if job.after.as_ref().is_some_and(|p| !p.feasible) {
            job.action = Action::Infeasible;
            if job.changes.is_empty()
                && let Some(after) = &job.after
            {
                job.changes = whole(after, true)
                    .into_iter()
                    .filter(|c| c.key == "reasons")
                    .collect();
            }
        }
    }
    jobs.sort_by(|a, b| (&a.file, &a.job).cmp(&(&b.file, &b.job)));
    PlanDiff {
        jobs,
        services: super::services::compare(base, head),
        broken,
        catalogue: catalogue_errors(head),
        unplanned_files: if head.catalogue_unloaded() {
            UnplannedFiles::All
        } else {
            UnplannedFiles::Some(head.withheld.keys().cloned().collect())
        },
        admission: Vec::new(),
        schedule: None,
    }
}

/// The catalogue files with errors at `side`, by repository-relative path (a diagnostic on no
/// spec file of the side is on a catalogue file).
fn catalogue_errors(side: &Side) -> Vec<BrokenFile> {
    if side.catalogue_errors == 0 {
        return Vec::new();
    }
    let specs: BTreeSet<&str> = side.specs.files.iter().map(String::as_str).collect();
    let mut files: BTreeMap<String, usize> = BTreeMap::new();
    for d in side.specs.diagnostics.iter().filter(|d| d.is_error()) {
        let name = d
            .span
            .and_then(|s| side.specs.sources.get(s.file))
            .map_or_else(|| "the catalogue".to_string(), |f| f.name.clone());
        if !specs.contains(name.as_str()) {
            *files.entry(name).or_default() += 1;
        }
    }
    files
        .into_iter()
        .map(|(file, errors)| BrokenFile { file, errors })
        .collect()
}

fn created(after: &Plan) -> JobDiff {
    JobDiff {
        action: Action::Create,
        job: after.job.clone(),
        old_job: None,
        file: after.file.clone(),
        old_file: None,
        before: None,
        after: Some(after.clone()),
        changes: whole(after, true),
        note: None,
        manifests: None,
        verdict: None,
    }
}

fn pair(before: &Plan, after: &Plan, action: Option<Action>) -> JobDiff {
    let moved = before.file != after.file;
    let changed = moved || differs(before, after);
    let action = action.unwrap_or(if changed {
        Action::Update
    } else {
        Action::NoOp
    });
    let renamed = before.job != after.job;
    JobDiff {
        action,
        job: after.job.clone(),
        old_job: renamed.then(|| before.job.clone()),
        file: after.file.clone(),
        old_file: moved.then(|| before.file.clone()),
        before: Some(before.clone()),
        after: Some(after.clone()),
        changes: if changed || renamed {
            changes(before, after)
        } else {
            Vec::new()
        },
        note: if moved {
            Some(format!("moved from {}", before.file))
        } else {
            None
        },
        manifests: None,
        verdict: None,
    }
}
