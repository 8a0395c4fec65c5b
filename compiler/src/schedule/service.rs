//! Services in the schedule (rule 15 of docs/scheduling.md): a service's replicas are
//! Deployments and LeaderWorkerSets outside Kueue at a pod priority of their own that never
//! preempts (docs/backends.md, "Services and Kueue"), so they take node-group devices but no
//! tenant quota. The schedule holds each service's devices at its busiest hour (the
//! autoscaler's maximum) from hour 0 to the horizon, before any job: its pods outrank every
//! training pod in the scheduler's queue, and a scale-up that found its nodes taken by training
//! would wait, which the schedule must not promise away. Services are placed highest priority
//! first, then by spec file and name; one that does not fit beside the services before it can
//! never run, since they hold their devices for good.

use crate::admission::place::PoolRules;
use loam_ir::display::significant;
use loam_ir::plan::ServicePlan;
use loam_ir::schedule::{RunInterval, ScheduledJob};
use loam_ir::types::Priority;
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// What one pool's services hold, and their entries in the schedule.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// Devices per node group held by the placed services.
    pub(super) per_group: BTreeMap<String, u64>,
    /// One entry per service, in the order they were placed.
    pub(super) entries: Vec<ScheduledJob>,
}

/// The order services are placed in: highest priority first, then spec file and name.
fn order(s: &ServicePlan) -> (Reverse<Priority>, String, String) {
    (Reverse(s.priority), s.file.clone(), s.service.clone())
}

/// The devices `service` holds per node group at its busiest hour.
fn demand(service: &ServicePlan) -> BTreeMap<String, u64> {
    let mut per_group: BTreeMap<String, u64> = BTreeMap::new();
    for role in &service.roles {
        *per_group.entry(role.group.node_group.clone()).or_default() +=
            role.replicas.saturating_mul(role.devices_per_replica);
    }
    per_group
}

/// Places `services` (all of one pool) on `rules`' node groups and takes what they hold out of
/// the devices jobs may use.
pub(super) fn place(services: &[&ServicePlan], rules: &mut PoolRules, horizon_h: f64) -> Held {
    let mut sorted: Vec<&ServicePlan> = services.to_vec();
    sorted.sort_by_key(|s| order(s));
    let mut held = Held::default();
    for service in sorted {
        let needs = demand(service);
        let devices: u64 = needs.values().sum();
        let refusal = if !service.feasible {
            Some(("not-planned", service.reasons.join("; ")))
        } else if needs.is_empty() || devices == 0 {
            Some(("never", "its plan places no replica".to_string()))
        } else {
            needs.iter().find_map(|(name, &need)| {
                let Some(group) = rules.groups.get(name) else {
                    return Some(("never", format!("node group `{name}` is not in the pool")));
                };
                (need > group.devices).then(|| {
                    (
                        "never",
                        format!(
                            "node group `{name}` has {} of its {} devices left beside the services before it; it needs {need}",
                            group.devices,
                            group.devices + held.per_group.get(name).copied().unwrap_or(0)
                        ),
                    )
                })
            })
        };
        if refusal.is_none() {
            for (name, &need) in &needs {
                if let Some(group) = rules.groups.get_mut(name) {
                    group.devices -= need;
                }
                *held.per_group.entry(name.clone()).or_default() += need;
            }
        }
        held.entries
            .push(entry(service, devices, refusal, horizon_h));
    }
    held
}

/// A service's entry: running from hour 0 to the horizon, or why it never runs.
fn entry(
    service: &ServicePlan,
    devices: u64,
    refusal: Option<(&str, String)>,
    horizon_h: f64,
) -> ScheduledJob {
    let replicas: u64 = service.roles.iter().map(|r| r.replicas).sum();
    let (status, reason, start_h, runs) = match refusal {
        Some((status, reason)) => (status.to_string(), reason, None, Vec::new()),
        None => (
            "running".to_string(),
            format!(
                "a service: holds its busiest hour's {replicas} replica{} around the clock, outside the queues (rule 15)",
                if replicas == 1 { "" } else { "s" }
            ),
            Some(0.0),
            vec![RunInterval {
                from_h: 0.0,
                to_h: significant(horizon_h),
            }],
        ),
    };
    ScheduledJob {
        job: service.service.clone(),
        file: service.file.clone(),
        kind: "service".to_string(),
        tenant: service.tenant.clone(),
        priority: service.priority,
        pool: service.pool.clone(),
        devices,
        submit_h: 0.0,
        start_h,
        finish_h: None,
        wait_h: 0.0,
        preemptions: Vec::new(),
        lost_work_h: 0.0,
        deadline: None,
        placement: super::placement_of(&service.roles.iter().map(|r| &r.group).collect::<Vec<_>>()),
        status,
        reason,
        runs,
    }
}
