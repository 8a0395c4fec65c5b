//! Reading how a node group runs a job (`pod`, `fabric`, `taints`, `slurm`) and a site's
//! `restart_time` and topology `levels`: the facts manifests need that the cost model does not.
//!
//! Every name here lands unquoted in a manifest (a resource, a label key, an environment variable,
//! a Slurm feature), so each is checked with the rule the backends apply (`loam_ir::names`).

use super::{Cx, bounds};
use crate::catalogue::codes;
use crate::catalogue::model::NodeRun;
use crate::catalogue::raw::{self, Loc};
use crate::units::Dimension;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::names::{is_env_name, is_label_key, is_label_value, is_plain_word};

/// The time from a failure until the job runs again when the site does not say: rescheduling,
/// pulling the image, starting the processes and the rendezvous. An assumption (Daly's worked
/// examples use 10 minutes), listed in docs/backends.md.
pub(crate) const DEFAULT_RESTART_S: f64 = 600.0;

/// Whether `s` reads as an IANA time zone name (`Asia/Shanghai`, `UTC`, `America/Argentina/Salta`):
/// letters, digits, `_`, `-`, `+` and `/`, starting with a letter. Which names exist is the tz
/// database's business; this keeps anything else out of the manifests.
fn is_time_zone(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/'))
}

/// The taint effects Kubernetes knows.
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

impl Cx<'_, '_> {
    /// The `pod`, `fabric`, `taints` and `slurm` blocks of a node group.
    pub(super) fn node_run(&mut self, raw: &raw::NodeGroup) -> Option<NodeRun> {
        let mut run = NodeRun::default();
        let mut ok = true;
        if let Some(pod) = &raw.pod {
            run.cpus = self
                .count(&pod.cpus, 1, bounds::MAX_POD_CPUS, "pod.cpus")
                .unwrap_or(0);
            let memory = self.positive_quantity(
                &pod.memory,
                Dimension::Bytes,
                "pod.memory",
                bounds::HOST_MEMORY,
            );
            let shm =
                self.positive_quantity(&pod.shm, Dimension::Bytes, "pod.shm", bounds::HOST_MEMORY);
            ok &= run.cpus > 0 && memory.is_some() && shm.is_some();
            run.memory_bytes = memory.unwrap_or(0.0);
            run.shm_bytes = shm.unwrap_or(0.0);
            if let (Some(memory), Some(shm)) = (memory, shm)
                && shm > memory
            {
                let d = Diagnostic::error(
                    codes::INCONSISTENT,
                    "expected `/dev/shm` no larger than the pod's memory".to_string(),
                    self.span(&pod.shm),
                    "larger than `pod.memory`",
                )
                .with_related(self.span(&pod.memory), "the pod's memory")
                .with_help("shared memory counts against the pod's memory; lower `shm`");
                self.push(d);
                ok = false;
            }
        }
        if let Some(fabric) = &raw.fabric {
            if let Some(rdma) = &fabric.rdma {
                ok &= self.manifest_name(&rdma.resource, "fabric.rdma.resource", is_label_key);
                match self.count(
                    &rdma.per_node,
                    1,
                    bounds::MAX_PER_NODE,
                    "fabric.rdma.per_node",
                ) {
                    Some(n) => run.rdma = Some((rdma.resource.value.clone(), n)),
                    None => ok = false,
                }
            }
            for (name, value) in &fabric.env {
                if !is_env_name(name) {
                    let d = Diagnostic::error(
                        codes::INVALID_NAME,
                        format!(
                            "expected an environment variable name, found `{}`",
                            name.escape_debug()
                        ),
                        self.span(value),
                        "the value of this variable",
                    )
                    .with_help("name variables with letters, digits and `_`, e.g. `NCCL_IB_HCA`");
                    self.push(d);
                    ok = false;
                }
                run.env.insert(name.clone(), value.value.clone());
            }
        }
        for taint in &raw.taints {
            ok &= self.manifest_name(&taint.key, "taints.key", is_label_key);
            if let Some(value) = &taint.value {
                ok &= self.manifest_name(value, "taints.value", is_label_value);
            }
            if !TAINT_EFFECTS.contains(&taint.effect.value.as_str()) {
                let d = Diagnostic::error(
                    codes::OUT_OF_RANGE,
                    format!(
                        "unknown taint effect `{}`, expected one of {}",
                        taint.effect.value.escape_debug(),
                        TAINT_EFFECTS.join(", ")
                    ),
                    self.span(&taint.effect),
                    "not a taint effect",
                )
                .with_help(
                    "Kubernetes taints have the effect NoSchedule, PreferNoSchedule or NoExecute",
                );
                self.push(d);
                ok = false;
            }
            run.taints.push((
                taint.key.value.clone(),
                taint.value.as_ref().map(|v| v.value.clone()),
                taint.effect.value.clone(),
            ));
        }
        if let Some(slurm) = &raw.slurm {
            if let Some(max) = &slurm.max_time {
                match self.positive_quantity(
                    max,
                    Dimension::Duration,
                    "slurm.max_time",
                    bounds::SLURM_MAX_TIME,
                ) {
                    Some(s) => run.slurm_max_time_s = Some(s),
                    None => ok = false,
                }
            }
            for feature in &slurm.features {
                ok &= self.manifest_name(feature, "slurm.features", is_plain_word);
                run.slurm_features.push(feature.value.clone());
            }
            run.slurm_containers = slurm.containers;
        }
        ok.then_some(run)
    }

    /// The site's restart time in seconds (the default when it has none) and its topology levels.
    pub(super) fn site_run(&mut self, raw: &raw::Site) -> Option<(f64, Vec<String>)> {
        let restart = match &raw.restart_time {
            Some(t) => self.positive_quantity(
                t,
                Dimension::Duration,
                "restart_time",
                bounds::RESTART_TIME,
            )?,
            None => DEFAULT_RESTART_S,
        };
        let mut ok = true;
        for level in &raw.topology.levels {
            ok &= self.manifest_name(level, "topology.levels", is_label_key);
        }
        let levels: Vec<String> = raw
            .topology
            .levels
            .iter()
            .map(|l| l.value.clone())
            .collect();
        if let Some(zone) = &raw.time_zone {
            ok &= self.manifest_name(zone, "time_zone", is_time_zone);
        }
        ok.then_some((restart, levels))
    }

    /// Checks a name that a manifest carries unquoted.
    pub(super) fn manifest_name(
        &mut self,
        name: &Loc<String>,
        field: &str,
        valid: fn(&str) -> bool,
    ) -> bool {
        if valid(&name.value) {
            return true;
        }
        let d = Diagnostic::error(
            codes::INVALID_NAME,
            format!(
                "`{field}` cannot be used in a manifest: `{}`",
                name.value.escape_debug()
            ),
            self.span(name),
            "not a Kubernetes name or plain word",
        )
        .with_help("use letters, digits, `-`, `_` and `.` (label keys may have a `prefix/`)");
        self.push(d);
        false
    }
}
