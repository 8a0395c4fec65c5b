//! Preemption: reclaiming guaranteed quota from borrowing tenants (rule 7) and, for the
//! schedule, a higher priority evicting lower ones of its own ClusterQueue or of borrowing
//! tenants; both evict in the platform's order and give back every victim the job fits beside.

use super::{Demand, Ledger, NodeGroupInfo, PoolRules, Quotas};
use loam_ir::types::Priority;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Rule 7 (Kueue's classic preemption with `reclaimWithinCohort: Any`): a job that fits in its
/// tenant's unused guaranteed quota may evict jobs of other tenants that borrow the device types
/// it needs, lowest priority and latest admitted first, then gives back every victim it can do
/// without. Returns the ledger without the victims, and the victims, or `None` when evicting
/// every candidate would not make room.
pub(super) fn reclaim(
    index: usize,
    demands: &[Option<Demand>],
    ledger: &Ledger,
    quotas: &Quotas,
    groups: &BTreeMap<String, NodeGroupInfo>,
    cheaper: &dyn Fn(usize, usize) -> Ordering,
) -> Option<(Ledger, Vec<usize>)> {
    let d = demands.get(index)?.as_ref()?;
    let within_guaranteed = d.per_device.iter().all(|(device, n)| {
        ledger.used_by(&d.tenant, device) + n <= quotas.get(&d.tenant, device).guaranteed
    });
    if !within_guaranteed {
        return None;
    }
    let borrowing = |l: &Ledger, tenant: &str, device: &str| {
        l.used_by(tenant, device) > quotas.get(tenant, device).guaranteed
    };
    let mut candidates: Vec<(usize, usize, Priority)> = ledger
        .admitted
        .iter()
        .filter_map(|(&seq, &j)| {
            let other = demands.get(j)?.as_ref()?;
            (other.tenant != d.tenant
                && other
                    .per_device
                    .keys()
                    .any(|k| d.per_device.contains_key(k)))
            .then_some((seq, j, other.priority))
        })
        .collect();
    // Lowest priority first, then the cheapest to evict, then the most recently admitted.
    candidates.sort_by(|a, b| {
        a.2.cmp(&b.2)
            .then_with(|| cheaper(a.1, b.1))
            .then_with(|| b.0.cmp(&a.0))
    });
    // Only a tenant still above its guaranteed quota of a shared device type lends.
    let lends = |after: &Ledger, other: &Demand| {
        other
            .per_device
            .keys()
            .any(|k| d.per_device.contains_key(k) && borrowing(after, &other.tenant, k))
    };
    evict(d, &candidates, demands, ledger, quotas, groups, &lends)
}

/// Kueue's classic preemption by priority under the emitted ClusterQueue's policies: job `index`
/// may evict admitted jobs of a lower priority that hold a device type it needs — of its own
/// tenant (`withinClusterQueue: LowerPriority`), and of another tenant while that tenant borrows
/// the device type, the job being allowed to borrow too (`borrowWithinCohort: LowerPriority`,
/// no `maxPriorityThreshold`). Candidates in Kueue's order (`CandidatesOrdering` in
/// kubernetes-sigs/kueue `pkg/scheduler/preemption/common/ordering.go`): other tenants' first,
/// then the lowest priority, then the cheapest to evict (`cheaper`), then the latest admitted;
/// another tenant's job is evicted only while its tenant still borrows a shared device type
/// (`candidateIsValid`, `pkg/scheduler/preemption/classical/candidate_generator.go`). The
/// preview never needs it (it considers jobs highest priority first); the schedule does, when a
/// higher-priority job is submitted after a lower one started.
pub(crate) fn preempt_lower(
    index: usize,
    demands: &[Option<Demand>],
    ledger: &Ledger,
    rules: &PoolRules,
    cheaper: &dyn Fn(usize, usize) -> Ordering,
) -> Option<(Ledger, Vec<usize>)> {
    let d = demands.get(index)?.as_ref()?;
    // The lowest priority evicts no one.
    if d.priority == Priority::Low {
        return None;
    }
    let mut candidates: Vec<(usize, usize, Priority)> = ledger
        .admitted
        .iter()
        .filter_map(|(&seq, &j)| {
            let other = demands.get(j)?.as_ref()?;
            (other.priority < d.priority
                && other
                    .per_device
                    .keys()
                    .any(|k| d.per_device.contains_key(k)))
            .then_some((seq, j, other.priority))
        })
        .collect();
    if candidates.is_empty() || !fits_without_all(d, &candidates, demands, ledger, rules) {
        return None;
    }
    let own_tenant = |j: usize| {
        demands
            .get(j)
            .and_then(Option::as_ref)
            .is_some_and(|o| o.tenant == d.tenant)
    };
    candidates.sort_by(|a, b| {
        own_tenant(a.1)
            .cmp(&own_tenant(b.1))
            .then(a.2.cmp(&b.2))
            .then_with(|| cheaper(a.1, b.1))
            .then_with(|| b.0.cmp(&a.0))
    });
    let quotas = &rules.quotas;
    let may_evict = |after: &Ledger, other: &Demand| {
        other.tenant == d.tenant
            || other.per_device.keys().any(|k| {
                d.per_device.contains_key(k)
                    && after.used_by(&other.tenant, k) > quotas.get(&other.tenant, k).guaranteed
            })
    };
    evict(
        d,
        &candidates,
        demands,
        ledger,
        &rules.quotas,
        &rules.groups,
        &may_evict,
    )
}

/// Whether `d` would fit were every one of `candidates` evicted, counted without copying the
/// ledger. When not, `evict` finds no victims either: evicting fewer frees
/// less. The schedule asks at every event, and most of its waiting jobs cannot preempt.
fn fits_without_all(
    d: &Demand,
    candidates: &[(usize, usize, Priority)],
    demands: &[Option<Demand>],
    ledger: &Ledger,
    rules: &PoolRules,
) -> bool {
    let evicted = || {
        candidates
            .iter()
            .filter_map(|&(_, j, _)| demands.get(j).and_then(Option::as_ref))
    };
    for (device, &needs) in &d.per_device {
        let freed: u64 = evicted()
            .map(|o| o.per_device.get(device).copied().unwrap_or(0))
            .sum();
        let freed_own: u64 = evicted()
            .filter(|o| o.tenant == d.tenant)
            .map(|o| o.per_device.get(device).copied().unwrap_or(0))
            .sum();
        let q = rules.quotas.get(&d.tenant, device);
        if ledger.used_by(&d.tenant, device).saturating_sub(freed_own) + needs
            > q.guaranteed + q.elastic
        {
            return false;
        }
        let total = ledger.device_used.get(device).copied().unwrap_or(0);
        if total.saturating_sub(freed) + needs > rules.quotas.cohort(device) {
            return false;
        }
    }
    for (name, &needs) in &d.per_group {
        let freed: u64 = evicted()
            .map(|o| o.per_group.get(name).copied().unwrap_or(0))
            .sum();
        let capacity = rules.groups.get(name).map_or(0, |g| g.devices);
        if ledger.group_used(name).saturating_sub(freed) + needs > capacity {
            return false;
        }
    }
    true
}

/// Evicts `candidates` (admission number, job, priority) in order, each one `may_evict` allows
/// at that point, until `d` fits; then gives back, in reverse, every victim `d` still fits
/// beside. `None` when evicting every allowed candidate would not make room.
fn evict(
    d: &Demand,
    candidates: &[(usize, usize, Priority)],
    demands: &[Option<Demand>],
    ledger: &Ledger,
    quotas: &Quotas,
    groups: &BTreeMap<String, NodeGroupInfo>,
    may_evict: &dyn Fn(&Ledger, &Demand) -> bool,
) -> Option<(Ledger, Vec<usize>)> {
    let mut after = ledger.clone();
    let mut victims: Vec<(usize, usize)> = Vec::new();
    for &(seq, j, _) in candidates {
        if after.fits(d, quotas, groups).is_ok() {
            break;
        }
        let Some(other) = demands.get(j).and_then(Option::as_ref) else {
            continue;
        };
        if may_evict(&after, other) {
            after.remove(seq, other);
            victims.push((seq, j));
        }
    }
    if after.fits(d, quotas, groups).is_err() {
        return None;
    }
    // Give back, in reverse, every victim the job still fits beside.
    let mut kept: Vec<usize> = Vec::new();
    for &(seq, j) in victims.iter().rev() {
        let Some(other) = demands.get(j).and_then(Option::as_ref) else {
            continue;
        };
        after.add(seq, j, other);
        if after.fits(d, quotas, groups).is_err() {
            after.remove(seq, other);
            kept.push(j);
        }
    }
    kept.reverse();
    Some((after, kept))
}
