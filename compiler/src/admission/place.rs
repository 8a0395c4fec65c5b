//! Placing one pool's jobs: the static checks (rule 3), the quotas (rule 4), the admission loop
//! with reclaiming (rules 5 and 7), and the final accounting of who holds what (rule 8).
//!
//! The rules themselves ([`PoolRules`], [`Ledger::fits`], [`admit`]) are also what the schedule
//! (`crate::schedule`) applies at every event, so the one-instant preview and the schedule over
//! weeks cannot disagree on who fits.

use super::{
    AdmissionStatus, FlavorShare, JobAdmission, NodeGroupUsage, PoolAdmission, Preemptor,
    TenantUsage, VerdictCounts, Window,
};
use crate::catalogue::Pool;
use loam_ir::plan::Plan;
use loam_ir::types::Priority;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BTreeSet};

mod ledger;
mod preempt;

pub(crate) use ledger::{Blocker, Demand, Ledger, NodeGroupInfo, Quota, Quotas, blocker_text};
pub(crate) use preempt::preempt_lower;
use preempt::reclaim;

/// A pool's node groups and every tenant's quotas (rules 3 and 4): what the preview and the
/// schedule both check jobs against.
pub(crate) struct PoolRules {
    pub(crate) groups: BTreeMap<String, NodeGroupInfo>,
    pub(crate) quotas: Quotas,
    pool_known: bool,
}

impl PoolRules {
    /// The rules of `pool` for `plans` (all of this pool; tenants without quotas in the
    /// catalogue get theirs from the plans, rule 4).
    pub(crate) fn new(plans: &[&Plan], pool: Option<&Pool>) -> Self {
        let groups: BTreeMap<String, NodeGroupInfo> = pool
            .map(|p| {
                p.node_groups()
                    .map(|(site, g)| {
                        (
                            g.name.value.clone(),
                            NodeGroupInfo {
                                site: site.name.value.clone(),
                                device: g.device.value.clone(),
                                devices: g.devices(),
                            },
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let quotas = quotas(plans, pool, &groups);
        PoolRules {
            groups,
            quotas,
            pool_known: pool.is_some(),
        }
    }

    /// The job's entry in the preview (its verdict when it can never be placed) and its demand
    /// when it may be (rule 3).
    pub(crate) fn demand(&self, plan: &Plan) -> (JobAdmission, Option<Demand>) {
        admission_of(plan, self.pool_known, &self.groups, &self.quotas)
    }

    /// The demand of `plan`'s job on `shares` instead of its plan's groups (one of its
    /// alternatives), by the same checks; the reason when it could never be placed there.
    pub(crate) fn demand_on(&self, plan: &Plan, shares: &[Share<'_>]) -> Result<Demand, String> {
        checked_demand(plan, shares, self.pool_known, &self.groups, &self.quotas)
    }
}

/// Rule 2: the order jobs are considered in: around-the-clock jobs first, then by priority
/// (highest first), spec file and job name.
pub(crate) fn rule_order(plan: &Plan) -> (bool, Reverse<Priority>, String, String) {
    (
        plan.schedule.is_some(),
        Reverse(plan.priority),
        plan.file.clone(),
        plan.job.clone(),
    )
}

/// What admitting one waiting job does.
pub(crate) enum Admit {
    /// It fits beside what is admitted.
    Fits,
    /// It fits once these admitted jobs (indices) are evicted; the ledger is without them.
    Evicts { ledger: Ledger, victims: Vec<usize> },
    /// It waits.
    Waits,
}

/// Rules 5 and 7 for job `index`: it is admitted when it fits; else, when it is within its
/// tenant's guaranteed quota, by reclaiming from borrowing jobs of other tenants. `cheaper`
/// orders two admitted jobs of the same priority by what evicting them costs (the preview has
/// no costs and passes `Ordering::Equal`; then the latest admitted goes first, as Kueue does).
pub(crate) fn admit(
    index: usize,
    demands: &[Option<Demand>],
    ledger: &Ledger,
    rules: &PoolRules,
    cheaper: &dyn Fn(usize, usize) -> Ordering,
) -> Admit {
    let Some(Some(d)) = demands.get(index) else {
        return Admit::Waits;
    };
    if ledger.fits(d, &rules.quotas, &rules.groups).is_ok() {
        return Admit::Fits;
    }
    match reclaim(
        index,
        demands,
        ledger,
        &rules.quotas,
        &rules.groups,
        cheaper,
    ) {
        Some((ledger, victims)) => Admit::Evicts { ledger, victims },
        None => Admit::Waits,
    }
}

/// The preview of pool `id` for `plans` (all of this pool), with the catalogue's `pool`.
pub(super) fn place_pool(id: &str, plans: &[&Plan], pool: Option<&Pool>) -> PoolAdmission {
    let rules = PoolRules::new(plans, pool);

    // Rule 2: the order of consideration.
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| plans.get(i).map(|p| rule_order(p)));

    let mut jobs: Vec<JobAdmission> = Vec::new();
    let mut demands: Vec<Option<Demand>> = Vec::new();
    for &i in &order {
        let Some(plan) = plans.get(i) else { continue };
        let (job, demand) = rules.demand(plan);
        jobs.push(job);
        demands.push(demand);
    }
    let PoolRules { groups, quotas, .. } = &rules;

    let mut ledger = Ledger::default();
    let mut next_seq = 0;
    let mut evicted_by: BTreeMap<usize, usize> = BTreeMap::new();
    let mut waiting: Vec<usize> = Vec::new();
    // Rule 5: in order, admit what fits; a job within its tenant's guaranteed quota reclaims
    // it from borrowing jobs of other tenants (rule 7).
    for index in 0..demands.len() {
        let Some(Some(d)) = demands.get(index) else {
            continue;
        };
        match admit(index, &demands, &ledger, &rules, &|_, _| Ordering::Equal) {
            Admit::Fits => {
                ledger.add(next_seq, index, d);
                next_seq += 1;
            }
            Admit::Evicts {
                ledger: after,
                victims,
            } => {
                ledger = after;
                ledger.add(next_seq, index, d);
                next_seq += 1;
                for v in victims {
                    evicted_by.insert(v, index);
                    waiting.push(v);
                }
            }
            Admit::Waits => waiting.push(index),
        }
    }
    // Kueue's BestEffortFIFO tries every waiting job again when quota is freed; here the
    // waiting jobs are tried again in the rules' order, without reclaiming, until none fits.
    waiting.sort_unstable();
    loop {
        let mut admitted_one = false;
        waiting.retain(|&index| {
            let Some(Some(d)) = demands.get(index) else {
                return false;
            };
            if ledger.fits(d, quotas, groups).is_ok() {
                ledger.add(next_seq, index, d);
                next_seq += 1;
                evicted_by.remove(&index);
                admitted_one = true;
                return false;
            }
            true
        });
        if !admitted_one {
            break;
        }
    }

    account(id, jobs, &demands, &ledger, quotas, groups, &evicted_by)
}

/// The job's entry (its verdict when it is never placed) and its demand when it may be.
fn admission_of(
    plan: &Plan,
    pool_known: bool,
    groups: &BTreeMap<String, NodeGroupInfo>,
    quotas: &Quotas,
) -> (JobAdmission, Option<Demand>) {
    let flavors: Vec<FlavorShare> = plan
        .groups
        .iter()
        .map(|g| FlavorShare {
            node_group: g.node_group.clone(),
            device: g.device.clone(),
            devices: g.devices,
            borrowed: 0,
        })
        .collect();
    let mut job = JobAdmission {
        job: plan.job.clone(),
        file: plan.file.clone(),
        tenant: plan.tenant.clone(),
        priority: plan.priority,
        interruptible: plan.interruptible,
        window: plan.schedule.as_ref().map(|s| Window {
            start_hour: s.start_hour,
            hours_per_day: s.hours_per_day,
        }),
        flavors,
        status: AdmissionStatus::Admitted,
    };
    if !plan.feasible {
        job.status = AdmissionStatus::NotPlanned {
            reasons: plan.reasons.clone(),
        };
        return (job, None);
    }
    let shares: Vec<Share<'_>> = plan
        .groups
        .iter()
        .map(|g| Share {
            node_group: &g.node_group,
            device: &g.device,
            devices: g.devices,
        })
        .collect();
    match checked_demand(plan, &shares, pool_known, groups, quotas) {
        Ok(demand) => (job, Some(demand)),
        Err(reason) => {
            job.status = AdmissionStatus::NeverAdmissible { reason };
            (job, None)
        }
    }
}

/// Devices of one node group a job would hold.
pub(crate) struct Share<'a> {
    pub(crate) node_group: &'a str,
    pub(crate) device: &'a str,
    pub(crate) devices: u64,
}

/// Rule 3 for `plan`'s job holding `shares` (its plan's groups, or an alternative's): its
/// demand, or why no other job could ever make room for it there.
fn checked_demand(
    plan: &Plan,
    shares: &[Share<'_>],
    pool_known: bool,
    groups: &BTreeMap<String, NodeGroupInfo>,
    quotas: &Quotas,
) -> Result<Demand, String> {
    let mut per_group: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_device: BTreeMap<String, u64> = BTreeMap::new();
    for g in shares {
        *per_group.entry(g.node_group.to_string()).or_default() += g.devices;
        *per_device.entry(g.device.to_string()).or_default() += g.devices;
    }
    if !pool_known {
        return Err(format!("pool `{}` is not in the catalogue", plan.pool));
    }
    if shares.is_empty() {
        return Err("the plan names no node group".to_string());
    }
    for g in shares {
        match groups.get(g.node_group) {
            None => {
                return Err(format!(
                    "node group `{}` is not in pool `{}`",
                    g.node_group, plan.pool
                ));
            }
            Some(info) if info.device != g.device => {
                return Err(format!(
                    "the plan puts {} on node group `{}`, which holds {}: plan again",
                    g.device, g.node_group, info.device
                ));
            }
            Some(_) => {}
        }
    }
    for (name, &needs) in &per_group {
        let capacity = groups.get(name).map_or(0, |g| g.devices);
        if needs > capacity {
            return Err(format!(
                "needs {needs} devices of `{name}`, which has {capacity}"
            ));
        }
    }
    for (device, &needs) in &per_device {
        let q = quotas.get(&plan.tenant, device);
        if q.guaranteed + q.elastic == 0 {
            return Err(format!(
                "tenant `{}` has no quota for {device}",
                plan.tenant
            ));
        }
        if needs > q.guaranteed + q.elastic {
            return Err(format!(
                "needs {needs} {device}, above tenant `{}`'s {} guaranteed + {} elastic",
                plan.tenant, q.guaranteed, q.elastic
            ));
        }
        let cohort = quotas.cohort(device);
        if needs > cohort {
            return Err(format!(
                "needs {needs} {device}, above the {cohort} the pool's cohort holds"
            ));
        }
    }
    Ok(Demand {
        tenant: plan.tenant.clone(),
        priority: plan.priority,
        per_group,
        per_device,
    })
}

/// Rule 4: each tenant's quota per device type. A tenant with quotas in the catalogue has them
/// (none for a device type it is not given); a tenant with none gets what the emitted
/// ClusterQueue gets: per node group its jobs use, the largest job there (whole nodes), no
/// elastic share. The cohort holds every device of the pool: the tenants' guaranteed quotas
/// and the unreserved rest, which the pool's lender ClusterQueue lends.
fn quotas(
    plans: &[&Plan],
    pool: Option<&Pool>,
    groups: &BTreeMap<String, NodeGroupInfo>,
) -> Quotas {
    let mut of: BTreeMap<(String, String), Quota> = BTreeMap::new();
    let mut declared: BTreeSet<String> = BTreeSet::new();
    if let Some(pool) = pool {
        for tenant in pool.tenants.iter().filter(|t| !t.quota.is_empty()) {
            declared.insert(tenant.name.value.clone());
            for q in &tenant.quota {
                let entry = of
                    .entry((tenant.name.value.clone(), q.device.value.clone()))
                    .or_default();
                entry.guaranteed += u64::from(q.guaranteed.value);
                entry.elastic += u64::from(q.elastic.value);
            }
        }
    }
    // The largest whole-node need of any feasible plan on each node group (the backends'
    // `nodes_needed` × devices per node).
    let mut largest: BTreeMap<&str, u64> = BTreeMap::new();
    for plan in plans.iter().filter(|p| p.feasible) {
        for g in &plan.groups {
            let need = (g.nodes * g.devices_per_node).max(g.devices);
            let entry = largest.entry(g.node_group.as_str()).or_default();
            *entry = (*entry).max(need);
        }
    }
    let mut derived_groups: BTreeMap<(String, String), BTreeSet<&str>> = BTreeMap::new();
    for plan in plans
        .iter()
        .filter(|p| p.feasible && !declared.contains(&p.tenant))
    {
        for g in &plan.groups {
            let Some(info) = groups.get(&g.node_group) else {
                continue;
            };
            derived_groups
                .entry((plan.tenant.clone(), info.device.clone()))
                .or_default()
                .insert(g.node_group.as_str());
        }
    }
    for (key, names) in derived_groups {
        let guaranteed = names
            .iter()
            .map(|n| largest.get(n).copied().unwrap_or(0))
            .sum();
        of.insert(
            key,
            Quota {
                guaranteed,
                elastic: 0,
                derived: true,
            },
        );
    }
    // The cohort holds the tenants' guaranteed quotas and, through the pool's lender queue,
    // every device nobody is guaranteed: all the pool's devices of the type (more only when
    // the catalogue guarantees more than there are).
    let mut guaranteed: BTreeMap<String, u64> = BTreeMap::new();
    for ((_, device), q) in &of {
        *guaranteed.entry(device.clone()).or_default() += q.guaranteed;
    }
    let mut cohort: BTreeMap<String, u64> = BTreeMap::new();
    for info in groups.values() {
        *cohort.entry(info.device.clone()).or_default() += info.devices;
    }
    for (device, g) in guaranteed {
        let held = cohort.entry(device).or_default();
        *held = (*held).max(g);
    }
    let mut by_tenant: BTreeMap<String, BTreeMap<String, Quota>> = BTreeMap::new();
    for ((tenant, device), q) in &of {
        by_tenant
            .entry(tenant.clone())
            .or_default()
            .insert(device.clone(), *q);
    }
    Quotas {
        of,
        by_tenant,
        cohort,
    }
}

/// Rule 8: the verdict of every job from the final ledger, and what each node group and tenant
/// holds.
fn account(
    id: &str,
    mut jobs: Vec<JobAdmission>,
    demands: &[Option<Demand>],
    ledger: &Ledger,
    quotas: &Quotas,
    groups: &BTreeMap<String, NodeGroupInfo>,
    evicted_by: &BTreeMap<usize, usize>,
) -> PoolAdmission {
    // Split each tenant's use into guaranteed and borrowed in admission order: the earliest
    // admitted jobs hold the guaranteed quota.
    let mut guaranteed_left: BTreeMap<(String, String), u64> = quotas
        .of
        .iter()
        .map(|(k, q)| (k.clone(), q.guaranteed))
        .collect();
    let mut node_groups: BTreeMap<String, NodeGroupUsage> = groups
        .iter()
        .map(|(name, g)| {
            (
                name.clone(),
                NodeGroupUsage {
                    site: g.site.clone(),
                    device: g.device.clone(),
                    devices: g.devices,
                    used: 0,
                    free: g.devices,
                    borrowed: 0,
                },
            )
        })
        .collect();
    for &index in ledger.admitted.values() {
        let Some(job) = jobs.get_mut(index) else {
            continue;
        };
        let mut borrowed: BTreeMap<String, u64> = BTreeMap::new();
        for flavor in &mut job.flavors {
            let left = guaranteed_left
                .entry((job.tenant.clone(), flavor.device.clone()))
                .or_default();
            let inside = flavor.devices.min(*left);
            *left -= inside;
            flavor.borrowed = flavor.devices - inside;
            if flavor.borrowed > 0 {
                *borrowed.entry(flavor.device.clone()).or_default() += flavor.borrowed;
            }
            if let Some(usage) = node_groups.get_mut(&flavor.node_group) {
                usage.used += flavor.devices;
                usage.free = usage.devices.saturating_sub(usage.used);
                usage.borrowed += flavor.borrowed;
            }
        }
        if !borrowed.is_empty() {
            job.status = AdmissionStatus::Borrows {
                borrowed,
                preempted_by: Vec::new(),
            };
        }
    }
    let mut tenants: BTreeMap<String, BTreeMap<String, TenantUsage>> = BTreeMap::new();
    for ((tenant, device), q) in &quotas.of {
        let used = ledger.used_by(tenant, device);
        let guaranteed_used = used.min(q.guaranteed);
        tenants.entry(tenant.clone()).or_default().insert(
            device.clone(),
            TenantUsage {
                guaranteed: q.guaranteed,
                elastic: q.elastic,
                guaranteed_used,
                borrowed: used - guaranteed_used,
                derived: q.derived,
            },
        );
    }
    let admitted: BTreeSet<usize> = ledger.admitted.values().copied().collect();
    let names: Vec<String> = jobs.iter().map(|j| j.job.clone()).collect();
    for (index, job) in jobs.iter_mut().enumerate() {
        if let AdmissionStatus::Borrows {
            borrowed,
            preempted_by,
        } = &mut job.status
        {
            *preempted_by = preemptors(&job.tenant, job.priority, borrowed, &tenants);
            continue;
        }
        if admitted.contains(&index) {
            continue;
        }
        let Some(Some(d)) = demands.get(index) else {
            continue;
        };
        let (behind, mut reason) = match ledger.fits(d, quotas, groups) {
            Ok(()) => (Vec::new(), "waits for its turn".to_string()),
            Err(blocker) => holders(&blocker, d, demands, ledger, &names),
        };
        if let Some(name) = evicted_by.get(&index).and_then(|r| names.get(*r)) {
            reason = format!(
                "preempted by `{name}`, whose tenant reclaims its guaranteed quota; {reason}"
            );
        }
        job.status = AdmissionStatus::Queues { behind, reason };
    }
    let counts = VerdictCounts::of(&jobs);
    PoolAdmission {
        pool: id.to_string(),
        jobs,
        node_groups,
        tenants,
        counts,
    }
}

/// Rule 6: who may preempt a job of `tenant` at `priority` that borrows `borrowed`.
fn preemptors(
    tenant: &str,
    priority: Priority,
    borrowed: &BTreeMap<String, u64>,
    tenants: &BTreeMap<String, BTreeMap<String, TenantUsage>>,
) -> Vec<Preemptor> {
    let mut found = Vec::new();
    for device in borrowed.keys() {
        for (lender, usage) in tenants {
            let Some(u) = usage.get(device) else { continue };
            let unused = u.guaranteed.saturating_sub(u.guaranteed_used);
            if lender != tenant && unused > 0 {
                found.push(Preemptor::Reclaim {
                    tenant: lender.clone(),
                    device: device.clone(),
                    unused_guaranteed: unused,
                });
            }
        }
    }
    if priority != Priority::Critical {
        found.push(Preemptor::HigherPriority { above: priority });
    }
    found
}

/// The admitted jobs holding what `blocker` says is missing, in admission order, and the reason
/// in words.
fn holders(
    blocker: &Blocker,
    d: &Demand,
    demands: &[Option<Demand>],
    ledger: &Ledger,
    names: &[String],
) -> (Vec<String>, String) {
    let holds = |j: usize| -> bool {
        let Some(Some(other)) = demands.get(j) else {
            return false;
        };
        match blocker {
            Blocker::Tenant { device, .. } => {
                other.tenant == d.tenant && other.per_device.contains_key(device)
            }
            Blocker::Cohort { device, .. } => other.per_device.contains_key(device),
            Blocker::NodeGroup { name, .. } => other.per_group.contains_key(name),
        }
    };
    let behind = ledger
        .admitted
        .values()
        .filter(|&&j| holds(j))
        .filter_map(|&j| names.get(j).cloned())
        .collect();
    (behind, blocker_text(blocker, &d.tenant))
}
