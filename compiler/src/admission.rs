//! The admission preview: every planned job of a revision placed at once on its pool's node
//! groups (Kueue ResourceFlavors), within its tenant's quotas and in priority order, so a
//! person sees which jobs are admitted, which borrow and may be preempted, and which queue
//! behind whom. The rules are numbered in docs/admission.md; this module applies them.
//!
//! Pure: plans and the catalogue in, a value out. Every collection that reaches output is a
//! `BTreeMap` or a `Vec` in the rules' order, so the serialised preview is byte-deterministic.

mod changes;
pub(crate) mod place;
#[cfg(test)]
mod properties;
#[cfg(test)]
pub(crate) mod tests;

pub use changes::{AdmissionChange, changes};

use crate::catalogue::Catalogue;
use loam_ir::plan::Plan;
use loam_ir::types::Priority;
use serde::Serialize;
use std::collections::BTreeMap;

/// The preview of every pool the plans name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct AdmissionPreview {
    /// One preview per pool id (jobs of different pools never compete).
    pub pools: BTreeMap<String, PoolAdmission>,
}

/// Every job of one pool, and what they hold of its node groups and quotas.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PoolAdmission {
    /// The pool id.
    pub pool: String,
    /// The jobs in the order the rules consider them (rule 2): around-the-clock jobs first,
    /// then by priority (highest first), spec file and job name.
    pub jobs: Vec<JobAdmission>,
    /// Devices of each node group: total, used, free and borrowed, by node group name.
    pub node_groups: BTreeMap<String, NodeGroupUsage>,
    /// Quota use by tenant, then by device type.
    pub tenants: BTreeMap<String, BTreeMap<String, TenantUsage>>,
    /// How many jobs got each verdict.
    pub counts: VerdictCounts,
}

/// One job's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobAdmission {
    /// The job name.
    pub job: String,
    /// The spec file it came from.
    pub file: String,
    /// The owning tenant (its ClusterQueue).
    pub tenant: String,
    /// The job's priority (its WorkloadPriorityClass).
    pub priority: Priority,
    /// Whether the job resumes from checkpoints when preempted.
    pub interruptible: bool,
    /// The daily cheap-hours window it runs in, for interruptible jobs with a schedule; such a
    /// job is placed after every around-the-clock job (rule 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// The flavors the plan chose: node group, device type, devices, of which borrowed.
    pub flavors: Vec<FlavorShare>,
    /// The verdict.
    #[serde(flatten)]
    pub status: AdmissionStatus,
}

impl JobAdmission {
    /// The devices the job needs, by device type.
    pub fn needs(&self) -> BTreeMap<String, u64> {
        let mut needs: BTreeMap<String, u64> = BTreeMap::new();
        for f in &self.flavors {
            *needs.entry(f.device.clone()).or_default() += f.devices;
        }
        needs
    }

    /// Its flavors in words: `512 × H100_SXM on sh-h100-a + 64 × H800_SXM on gy-h800`.
    pub fn flavors_text(&self) -> String {
        let parts: Vec<String> = self
            .flavors
            .iter()
            .map(|f| format!("{} × {} on {}", f.devices, f.device, f.node_group))
            .collect();
        parts.join(" + ")
    }
}

/// The hours a windowed job runs in, in its site's local time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    /// First hour of the window (0–23).
    pub start_hour: u64,
    /// Hours the window lasts.
    pub hours_per_day: u64,
}

/// What a job takes of one node group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlavorShare {
    /// The node group (the Kueue ResourceFlavor).
    pub node_group: String,
    /// Its device type.
    pub device: String,
    /// Devices the plan uses there.
    pub devices: u64,
    /// Of those, how many are above the tenant's guaranteed quota (0 unless admitted).
    pub borrowed: u64,
}

/// The verdict on one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum AdmissionStatus {
    /// Admitted now, within the tenant's guaranteed quota.
    Admitted,
    /// Admitted, but some devices are borrowed from other tenants' unused guaranteed quota.
    Borrows {
        /// Borrowed devices by device type.
        borrowed: BTreeMap<String, u64>,
        /// Who may preempt the job (rule 6).
        preempted_by: Vec<Preemptor>,
    },
    /// Waits: the devices or the quota it needs are held by other jobs.
    Queues {
        /// The admitted jobs holding what it needs, in the order they were admitted.
        behind: Vec<String>,
        /// What it needs and what is left, in words.
        reason: String,
    },
    /// Can never be admitted as planned, whatever else runs.
    NeverAdmissible {
        /// Why, with numbers.
        reason: String,
    },
    /// Not placed: the planner found no feasible plan.
    NotPlanned {
        /// The planner's reasons.
        reasons: Vec<String>,
    },
}

impl AdmissionStatus {
    /// The verdict's keyword: `admitted`, `borrows`, `queues`, `never`, `not-planned`.
    pub fn keyword(&self) -> &'static str {
        match self {
            AdmissionStatus::Admitted => "admitted",
            AdmissionStatus::Borrows { .. } => "borrows",
            AdmissionStatus::Queues { .. } => "queues",
            AdmissionStatus::NeverAdmissible { .. } => "never",
            AdmissionStatus::NotPlanned { .. } => "not-planned",
        }
    }

    /// Whether the job runs now (admitted or borrowing).
    pub fn runs(&self) -> bool {
        matches!(
            self,
            AdmissionStatus::Admitted | AdmissionStatus::Borrows { .. }
        )
    }
}

/// Who may preempt a borrowing job, as the emitted ClusterQueue configures it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Preemptor {
    /// A tenant whose unused guaranteed quota the job is using, reclaiming it with any job of
    /// any priority (`reclaimWithinCohort: Any`).
    Reclaim {
        /// The lending tenant.
        tenant: String,
        /// The device type.
        device: String,
        /// Its guaranteed devices that no job of its own uses now.
        unused_guaranteed: u64,
    },
    /// Any job of a higher priority: of the job's own tenant (`withinClusterQueue:
    /// LowerPriority`), or of another tenant while both borrow (`borrowWithinCohort:
    /// LowerPriority`).
    HigherPriority {
        /// The job's own priority; jobs above it may preempt.
        above: Priority,
    },
}

/// Who may preempt a borrower: `tenant research reclaiming its H100_SXM, jobs above normal
/// priority`, or `no one`; `loam plan`'s preview and `loam diff` say it with this one function.
pub fn preemptors_text(preemptors: &[Preemptor]) -> String {
    let parts: Vec<String> = preemptors
        .iter()
        .map(|p| match p {
            Preemptor::Reclaim { tenant, device, .. } => {
                format!("tenant {tenant} reclaiming its {device}")
            }
            Preemptor::HigherPriority { above } => format!("jobs above {above} priority"),
        })
        .collect();
    if parts.is_empty() {
        "no one".to_string()
    } else {
        parts.join(", ")
    }
}

/// Devices of one node group.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NodeGroupUsage {
    /// Its site.
    pub site: String,
    /// Its device type.
    pub device: String,
    /// Nodes × devices per node.
    pub devices: u64,
    /// Devices admitted jobs use.
    pub used: u64,
    /// Devices left.
    pub free: u64,
    /// Of the used devices, those above their tenants' guaranteed quotas.
    pub borrowed: u64,
}

/// One tenant's quota of one device type and what its admitted jobs use of it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TenantUsage {
    /// Guaranteed (nominal) quota.
    pub guaranteed: u64,
    /// Elastic quota (the borrowing limit).
    pub elastic: u64,
    /// Used within the guaranteed quota.
    pub guaranteed_used: u64,
    /// Used above it, borrowed from the cohort.
    pub borrowed: u64,
    /// True when the catalogue gives the tenant no quotas and the preview uses what the emitted
    /// ClusterQueue gets instead (rule 4).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub derived: bool,
}

/// How many jobs got each verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct VerdictCounts {
    /// Admitted within the guaranteed quota.
    pub admitted: usize,
    /// Admitted on borrowed quota.
    pub borrows: usize,
    /// Waiting for devices or quota.
    pub queues: usize,
    /// Never admissible as planned.
    pub never_admissible: usize,
    /// Not planned (infeasible).
    pub not_planned: usize,
}

impl VerdictCounts {
    /// Counts the verdicts of `jobs`.
    pub fn of<'a>(jobs: impl IntoIterator<Item = &'a JobAdmission>) -> Self {
        let mut counts = VerdictCounts::default();
        for job in jobs {
            match job.status {
                AdmissionStatus::Admitted => counts.admitted += 1,
                AdmissionStatus::Borrows { .. } => counts.borrows += 1,
                AdmissionStatus::Queues { .. } => counts.queues += 1,
                AdmissionStatus::NeverAdmissible { .. } => counts.never_admissible += 1,
                AdmissionStatus::NotPlanned { .. } => counts.not_planned += 1,
            }
        }
        counts
    }

    /// Adds `other` to these counts.
    pub fn add(&mut self, other: VerdictCounts) {
        self.admitted += other.admitted;
        self.borrows += other.borrows;
        self.queues += other.queues;
        self.never_admissible += other.never_admissible;
        self.not_planned += other.not_planned;
    }
}

impl AdmissionPreview {
    /// The verdict counts over every pool.
    pub fn counts(&self) -> VerdictCounts {
        let mut total = VerdictCounts::default();
        for pool in self.pools.values() {
            total.add(pool.counts);
        }
        total
    }

    /// Every job of every pool, pools in id order, jobs in rule order.
    pub fn jobs(&self) -> impl Iterator<Item = &JobAdmission> {
        self.pools.values().flat_map(|p| p.jobs.iter())
    }
}

/// Places every plan of `plans` on its pool at once and says, per job, whether it is admitted,
/// borrows (and who may preempt it), queues behind whom, or can never be admitted; and what the
/// admitted jobs hold of each node group and each tenant's quota.
pub fn preview(plans: &[Plan], catalogue: &Catalogue) -> AdmissionPreview {
    let mut by_pool: BTreeMap<&str, Vec<&Plan>> = BTreeMap::new();
    for plan in plans {
        by_pool.entry(plan.pool.as_str()).or_default().push(plan);
    }
    let pools = by_pool
        .into_iter()
        .map(|(id, plans)| {
            (
                id.to_string(),
                place::place_pool(id, &plans, catalogue.pool(id)),
            )
        })
        .collect();
    AdmissionPreview { pools }
}
