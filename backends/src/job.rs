//! What every target needs from a plan, checked once: names, the tenant's places, the groups with
//! their rank offsets, the trainer's arguments and the plan JSON.
//!
//! A plan that cannot be emitted (infeasible, incomplete, a checkpoint outside the tenant's root,
//! a name no backend can carry) is reported here with every problem at once.

use crate::Options;
use crate::escape::{
    dns_label, is_dns_label, is_label_key, is_label_value, is_plain_word, json_ascii, slug,
};
use loam_compiler::diagnostics::codes;
use loam_compiler::diagnostics::{Code, Diagnostic};
use loam_compiler::plan::ir::{Plan, PlanDocument};
use serde::Serialize;

/// Longest name of a job's Kubernetes objects, so pod host names (`<job>-<group>-0-<n>`) stay
/// within the 63 bytes of a DNS label.
pub const MAX_NAME: usize = 32;

/// An emit error: emit diagnostics point at no source text (the plan is generated data).
pub fn error(code: Code, message: String, help: &str) -> Diagnostic {
    Diagnostic::unlocated(code, message).with_help(help)
}

/// Where a tenant's jobs go on each backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tenancy {
    /// Kubernetes namespace.
    pub namespace: String,
    /// Kueue LocalQueue and ClusterQueue, or Volcano queue.
    pub queue: String,
    /// Slurm account.
    pub slurm_account: String,
    /// Slurm QoS, when the site uses one per tenant.
    pub slurm_qos: Option<String>,
    /// Checkpoints must live under this absolute path.
    pub checkpoint_root: String,
}

impl Tenancy {
    /// The names loam uses when the catalogue gives none: namespace `team-<tenant>`, queue and
    /// account `<tenant>`, checkpoints under `/ckpt/<tenant>`.
    pub fn derived(tenant: &str) -> Self {
        let label = dns_label(tenant, 40);
        Tenancy {
            namespace: format!("team-{label}"),
            queue: label.clone(),
            slurm_account: label.clone(),
            slurm_qos: None,
            checkpoint_root: format!("/ckpt/{label}"),
        }
    }
}

/// One device group, with what launchers need.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// Index in the plan.
    pub index: usize,
    /// Short DNS label, e.g. `g0-h100-sxm`.
    pub name: String,
    /// Device id.
    pub device: String,
    /// Site.
    pub site: String,
    /// Catalogue node group.
    pub node_group: String,
    /// Nodes.
    pub nodes: u64,
    /// Devices per node.
    pub devices_per_node: u64,
    /// Devices.
    pub devices: u64,
    /// Node rank of this group's first node.
    pub node_rank_offset: u64,
    /// Global rank of this group's first device.
    pub rank_offset: u64,
    /// Kubernetes extended resource.
    pub k8s_resource: String,
    /// Node labels, sorted by key.
    pub node_labels: Vec<(String, String)>,
    /// Slurm partition.
    pub partition: Option<String>,
    /// Planned topology block.
    pub block: Option<String>,
    /// Devices that may be preempted.
    pub preemptible_devices: u64,
    /// Slice profile.
    pub slice: Option<String>,
}

/// Everything common to the targets for one plan.
#[derive(Debug, Clone, Serialize)]
pub struct JobContext {
    /// The job's name as written in the spec (escape it!).
    pub job: String,
    /// The spec file.
    pub file: String,
    /// DNS-1123 name of the job's objects and folder.
    pub name: String,
    /// Tenant name as written.
    pub tenant: String,
    /// The tenant's places.
    pub tenancy: Tenancy,
    /// Priority keyword.
    pub priority: String,
    /// Whether the job tolerates preemption.
    pub interruptible: bool,
    /// Device groups.
    pub groups: Vec<Group>,
    /// Total nodes.
    pub nnodes: u64,
    /// Total devices (processes).
    pub world_size: u64,
    /// Checkpoint folder (absolute, under the tenant's root).
    pub checkpoint_path: String,
    /// The checkpoint folder relative to the tenant's root.
    pub checkpoint_subpath: String,
    /// Minutes between checkpoints.
    pub checkpoint_interval_min: f64,
    /// Seconds to write one checkpoint.
    pub checkpoint_write_s: f64,
    /// Predicted training hours.
    pub train_time_h: f64,
    /// The trainer command and its layout arguments, one word each (each target adds
    /// `--plan=<where the plan JSON is>`).
    pub trainer_args: Vec<String>,
    /// The plan (as a one-plan document), pretty JSON in printable ASCII.
    pub plan_json: String,
    /// Restarts allowed after failures (one per started day of training, at least 3).
    pub max_restarts: u64,
    /// Seconds between the stop signal and the kill: two checkpoint writes and a minute.
    pub grace_s: u64,
}

/// The job's output folder name.
pub fn folder(plan: &Plan) -> String {
    dns_label(&plan.job, MAX_NAME)
}

impl JobContext {
    /// Checks `plan` and derives the common context, or reports every problem.
    pub fn new(
        doc: &PlanDocument,
        plan: &Plan,
        options: &Options,
    ) -> Result<Self, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let job = &plan.job;
        if !plan.feasible {
            let why = if plan.reasons.is_empty() {
                String::new()
            } else {
                format!(": {}", plan.reasons.join("; "))
            };
            errors.push(error(
                codes::emit::INFEASIBLE_PLAN,
                format!("cannot emit job `{job}`, its plan is infeasible{why}"),
                "change the spec until `loam plan` finds a feasible plan",
            ));
            return Err(errors);
        }
        let (Some(layout), Some(estimate), Some(checkpoint)) =
            (&plan.layout, &plan.estimate, &plan.checkpoint)
        else {
            errors.push(incomplete(
                job,
                "it has no layout, estimate or checkpoint plan",
            ));
            return Err(errors);
        };
        if plan.groups.is_empty() {
            errors.push(incomplete(job, "it has no device groups"));
        }
        let tenancy = options
            .tenants
            .get(&plan.tenant)
            .cloned()
            .unwrap_or_else(|| Tenancy::derived(&plan.tenant));
        for (what, value) in [("namespace", &tenancy.namespace), ("queue", &tenancy.queue)] {
            if !is_dns_label(value) {
                errors.push(unusable(job, &format!("tenant {what}"), value));
            }
        }
        if !is_plain_word(&tenancy.slurm_account) {
            errors.push(unusable(job, "Slurm account", &tenancy.slurm_account));
        }
        if let Some(qos) = &tenancy.slurm_qos
            && !is_plain_word(qos)
        {
            errors.push(unusable(job, "Slurm QoS", qos));
        }
        let checkpoint_subpath = match under_root(&checkpoint.path, &tenancy.checkpoint_root) {
            Some(sub) => sub,
            None => {
                errors.push(error(
                    codes::emit::CHECKPOINT_OUTSIDE_ROOT,
                    format!(
                        "checkpoint path `{}` of job `{job}` is outside tenant `{}`'s root `{}`",
                        checkpoint.path, plan.tenant, tenancy.checkpoint_root
                    ),
                    "write checkpoints below the tenant's checkpoint root, without `..` or `.` segments",
                ));
                String::new()
            }
        };
        let mut groups = Vec::new();
        let (mut nnodes, mut world_size) = (0u64, 0u64);
        for (index, g) in plan.groups.iter().enumerate() {
            if g.nodes == 0
                || g.devices_per_node == 0
                || g.devices != g.nodes.saturating_mul(g.devices_per_node)
            {
                errors.push(incomplete(
                    job,
                    &format!(
                        "group {index} has {} devices on {} nodes of {} devices",
                        g.devices, g.nodes, g.devices_per_node
                    ),
                ));
            }
            if !is_label_key(&g.k8s_resource) {
                errors.push(unusable(job, "device resource", &g.k8s_resource));
            }
            for (k, v) in &g.node_labels {
                if !is_label_key(k) || !is_label_value(v) {
                    errors.push(unusable(job, "node label", &format!("{k}={v}")));
                }
            }
            for (what, value) in [
                ("Slurm partition", &g.slurm_partition),
                ("topology block", &g.block),
                ("slice profile", &g.slice),
            ] {
                if let Some(v) = value
                    && !is_plain_word(v)
                {
                    errors.push(unusable(job, what, v));
                }
            }
            let device_label = slug(&g.device, 9);
            groups.push(Group {
                index,
                name: format!("g{index}-{device_label}")
                    .trim_end_matches('-')
                    .to_string(),
                device: g.device.clone(),
                site: g.site.clone(),
                node_group: g.node_group.clone(),
                nodes: g.nodes,
                devices_per_node: g.devices_per_node,
                devices: g.devices,
                node_rank_offset: nnodes,
                rank_offset: world_size,
                k8s_resource: g.k8s_resource.clone(),
                node_labels: g
                    .node_labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                partition: g.slurm_partition.clone(),
                block: g.block.clone(),
                preemptible_devices: g.preemptible_devices,
                slice: g.slice.clone(),
            });
            nnodes = nnodes.saturating_add(g.nodes);
            world_size = world_size.saturating_add(g.devices);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let one = PlanDocument {
            format_version: doc.format_version.clone(),
            catalogue_digest: doc.catalogue_digest.clone(),
            plans: vec![plan.clone()],
        };
        let plan_json = serde_json::to_string_pretty(&one).map_err(|e| {
            vec![error(
                codes::emit::INTERNAL_ERROR,
                format!("cannot serialise the plan of job `{job}`: {e}"),
                "report this as a bug in loam",
            )]
        })?;
        let mut trainer_args = options.trainer.clone();
        trainer_args.extend([
            format!("--tensor-parallel={}", layout.tensor),
            format!("--pipeline-parallel={}", layout.pipeline),
            format!("--data-parallel={}", layout.data),
            format!("--context-parallel={}", layout.context),
            format!("--expert-parallel={}", layout.expert),
            format!("--virtual-stages={}", layout.virtual_stages),
            format!("--micro-batch={}", layout.micro_batch),
            format!("--global-batch={}", plan.workload.global_batch),
            format!("--seq-len={}", plan.workload.seq_len),
            format!("--zero={}", layout.zero),
            format!("--recompute={}", layout.recompute),
            format!("--precision={}", plan.workload.precision),
            format!("--checkpoint-dir={}", checkpoint.path),
            format!("--checkpoint-interval-min={}", checkpoint.interval_min),
        ]);
        let days = estimate.train_time_h.max(0.0) / 24.0;
        let max_restarts = (days.ceil() as u64).clamp(3, 1000);
        let grace_s = (2.0 * checkpoint.write_s.max(0.0)).ceil() as u64 + 60;
        Ok(JobContext {
            job: job.clone(),
            file: plan.file.clone(),
            name: folder(plan),
            tenant: plan.tenant.clone(),
            tenancy,
            priority: plan.priority.to_string(),
            interruptible: plan.interruptible,
            groups,
            nnodes,
            world_size,
            checkpoint_path: checkpoint.path.clone(),
            checkpoint_subpath,
            checkpoint_interval_min: checkpoint.interval_min,
            checkpoint_write_s: checkpoint.write_s,
            train_time_h: estimate.train_time_h,
            trainer_args,
            plan_json: json_ascii(&plan_json),
            max_restarts,
            grace_s,
        })
    }
}

/// L4002: the plan lacks what every target needs.
fn incomplete(job: &str, why: &str) -> Diagnostic {
    error(
        codes::emit::INCOMPLETE_PLAN,
        format!("cannot emit job `{job}`, its plan is incomplete: {why}"),
        "emit plans made by `loam plan`; a hand-edited plan must keep every field",
    )
}

/// L4004: a name that a manifest cannot carry safely.
fn unusable(job: &str, what: &str, value: &str) -> Diagnostic {
    error(
        codes::emit::UNUSABLE_NAME,
        format!(
            "{what} `{}` of job `{job}` cannot be used in a manifest",
            value.escape_debug()
        ),
        "use letters, digits, `-`, `_` and `.` (Kubernetes names: lowercase DNS labels)",
    )
}

/// `path` relative to `root` when `path` is a clean absolute path inside `root`: no `.`, `..`
/// or empty segments, no control characters.
pub fn under_root(path: &str, root: &str) -> Option<String> {
    let clean = |p: &str| {
        p.starts_with('/')
            && !p.chars().any(char::is_control)
            && p.trim_end_matches('/')
                .split('/')
                .skip(1)
                .all(|s| !s.is_empty() && s != "." && s != "..")
    };
    if !clean(path) || !clean(root) {
        return None;
    }
    let root = root.trim_end_matches('/');
    let rest = path.trim_end_matches('/').strip_prefix(root)?;
    let sub = rest.strip_prefix('/')?;
    Some(sub.to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::under_root;

    #[test]
    fn checkpoints_stay_under_the_root() {
        assert_eq!(
            under_root("/ckpt/nlp/a/b", "/ckpt/nlp").as_deref(),
            Some("a/b")
        );
        assert_eq!(
            under_root("/ckpt/nlp/a/", "/ckpt/nlp/").as_deref(),
            Some("a")
        );
        assert_eq!(under_root("/ckpt/nlp", "/ckpt/nlp"), None);
        assert_eq!(under_root("/ckpt/nlp2/a", "/ckpt/nlp"), None);
        assert_eq!(under_root("/ckpt/nlp/../vision/a", "/ckpt/nlp"), None);
        assert_eq!(under_root("/ckpt/nlp/./a", "/ckpt/nlp"), None);
        assert_eq!(under_root("/ckpt/nlp//a", "/ckpt/nlp"), None);
        assert_eq!(under_root("ckpt/nlp/a", "ckpt/nlp"), None);
        assert_eq!(under_root("/ckpt/nlp/a\nb", "/ckpt/nlp"), None);
    }
}
