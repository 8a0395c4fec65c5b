//! Devices per node group in numbers, beside the admission ledger: a quick, exact test that a
//! waiting job can neither fit nor make room by evicting, so the schedule need not ask the
//! admission rules again (which compare names and copy the ledger). Only a shortcut: whenever
//! it says "maybe", the rules decide.

use crate::admission::place::{Demand, PoolRules};
use loam_ir::types::Priority;
use std::collections::BTreeMap;

/// Index of a priority (low … critical).
fn rank(p: Priority) -> usize {
    match p {
        Priority::Low => 0,
        Priority::Normal => 1,
        Priority::High => 2,
        Priority::Critical => 3,
    }
}

/// One job's tenant index, priority rank and (node group index, devices) needs.
type JobNeeds = (usize, usize, Vec<(usize, u64)>);

/// Devices of each node group: capacity, in use, and held per tenant and priority.
pub(crate) struct Capacity {
    cap: Vec<u64>,
    used: Vec<u64>,
    /// held[group][tenant][priority rank].
    held: Vec<Vec<[u64; 4]>>,
    /// Per job: its tenant's index, priority rank and (group, devices) needs.
    jobs: Vec<Option<JobNeeds>>,
    /// Per node group, the index of its device type.
    device_of: Vec<usize>,
    /// limit[tenant][device type]: the tenant's guaranteed + elastic quota.
    limit: Vec<Vec<u64>>,
    /// Per device type, what the pool's cohort holds.
    cohort: Vec<u64>,
}

impl Capacity {
    /// The empty pool of `rules`, for `demands` (the schedule's jobs, in its order).
    pub(crate) fn new(rules: &PoolRules, demands: &[Option<Demand>]) -> Capacity {
        let names: BTreeMap<&str, usize> = rules
            .groups
            .keys()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i))
            .collect();
        let mut tenants: BTreeMap<&str, usize> = BTreeMap::new();
        for d in demands.iter().flatten() {
            let next = tenants.len();
            tenants.entry(d.tenant.as_str()).or_insert(next);
        }
        let jobs = demands
            .iter()
            .map(|d| {
                let d = d.as_ref()?;
                let tenant = tenants.get(d.tenant.as_str()).copied()?;
                let needs = d
                    .per_group
                    .iter()
                    .map(|(g, &n)| names.get(g.as_str()).map(|&i| (i, n)))
                    .collect::<Option<Vec<_>>>()?;
                Some((tenant, rank(d.priority), needs))
            })
            .collect();
        let mut device_names: Vec<&str> =
            rules.groups.values().map(|g| g.device.as_str()).collect();
        device_names.sort_unstable();
        device_names.dedup();
        let device_of = rules
            .groups
            .values()
            .map(|g| device_names.binary_search(&g.device.as_str()).unwrap_or(0))
            .collect();
        let mut limit = vec![vec![0; device_names.len()]; tenants.len()];
        for (tenant, &t) in &tenants {
            if let Some(row) = limit.get_mut(t) {
                for (slot, device) in row.iter_mut().zip(&device_names) {
                    let q = rules.quotas.get(tenant, device);
                    *slot = q.guaranteed + q.elastic;
                }
            }
        }
        let cohort = device_names
            .iter()
            .map(|device| rules.quotas.cohort(device))
            .collect();
        Capacity {
            device_of,
            limit,
            cohort,
            cap: rules.groups.values().map(|g| g.devices).collect(),
            used: vec![0; names.len()],
            held: vec![vec![[0; 4]; tenants.len()]; names.len()],
            jobs,
        }
    }

    fn change(&mut self, job: usize, add: bool) {
        let Some(Some((tenant, priority, needs))) = self.jobs.get(job) else {
            return;
        };
        for &(g, n) in needs {
            if let Some(u) = self.used.get_mut(g) {
                *u = if add { *u + n } else { u.saturating_sub(n) };
            }
            if let Some(h) = self
                .held
                .get_mut(g)
                .and_then(|t| t.get_mut(*tenant))
                .and_then(|p| p.get_mut(*priority))
            {
                *h = if add { *h + n } else { h.saturating_sub(n) };
            }
        }
    }

    /// Job `job`, not admitted, will take `d` instead of its plan's node groups (it moved to an
    /// alternative).
    pub(crate) fn set_needs(&mut self, job: usize, rules: &PoolRules, d: &Demand) {
        let Some(Some((_, _, needs))) = self.jobs.get_mut(job) else {
            return;
        };
        *needs = d
            .per_group
            .iter()
            .filter_map(|(g, &n)| rules.groups.keys().position(|k| k == g).map(|i| (i, n)))
            .collect();
    }

    /// Job `job` was admitted.
    pub(crate) fn add(&mut self, job: usize) {
        self.change(job, true);
    }

    /// Job `job` gave its devices back.
    pub(crate) fn remove(&mut self, job: usize) {
        self.change(job, false);
    }

    /// True when job `job` certainly cannot start by evicting lower priorities
    /// (`preempt_lower`: of its own tenant, and of other tenants while they borrow): even were
    /// every lower-priority job evicted, a node group of its plan would lack the devices, or a
    /// device type it needs would be above its tenant's guaranteed + elastic quota or what the
    /// cohort holds. Other tenants' jobs count as evictable whether or not their tenant borrows:
    /// a bound, so "hopeless" stays certain.
    pub(crate) fn hopeless_by_priority(&self, job: usize) -> bool {
        let Some(Some((tenant, priority, needs))) = self.jobs.get(job) else {
            return false;
        };
        let own = |g: usize, lower: bool| -> u64 {
            self.held
                .get(g)
                .and_then(|by_tenant| by_tenant.get(*tenant))
                .map_or(0, |p| {
                    p.iter().take(if lower { *priority } else { 4 }).sum()
                })
        };
        // Every tenant's lower priorities on node group `g`, the job's own included.
        let lower_all = |g: usize| -> u64 {
            self.held.get(g).map_or(0, |by_tenant| {
                by_tenant
                    .iter()
                    .map(|p| p.iter().take(*priority).sum::<u64>())
                    .sum()
            })
        };
        let group_short = needs.iter().any(|&(g, n)| {
            let cap = self.cap.get(g).copied().unwrap_or(0);
            let used = self.used.get(g).copied().unwrap_or(0);
            cap.saturating_sub(used) + lower_all(g) < n
        });
        // Per device type it needs (the ledger's sums over that type's node groups): the
        // tenant's quota with its own lower priorities evicted, and the cohort with every
        // tenant's.
        group_short
            || needs.iter().any(|&(g, _)| {
                let device = self.device_of.get(g).copied().unwrap_or(0);
                let of_type = || {
                    (0..self.cap.len())
                        .filter(move |&h| self.device_of.get(h).copied() == Some(device))
                };
                let needs_here: u64 = needs
                    .iter()
                    .filter(|&&(h, _)| self.device_of.get(h).copied() == Some(device))
                    .map(|&(_, n)| n)
                    .sum();
                let lower: u64 = of_type().map(|h| own(h, true)).sum();
                let lower_everyone: u64 = of_type().map(lower_all).sum();
                let mine: u64 = of_type().map(|h| own(h, false)).sum();
                let used: u64 = of_type()
                    .map(|h| self.used.get(h).copied().unwrap_or(0))
                    .sum();
                let limit = self
                    .limit
                    .get(*tenant)
                    .and_then(|l| l.get(device))
                    .copied()
                    .unwrap_or(0);
                let cohort = self.cohort.get(device).copied().unwrap_or(0);
                mine.saturating_sub(lower) + needs_here > limit
                    || used.saturating_sub(lower_everyone) + needs_here > cohort
            })
    }

    /// True when job `job` certainly cannot start now: a node group of its plan lacks the
    /// devices even were every job it could ever evict there evicted — other tenants'
    /// (reclaiming) and its own tenant's lower priorities.
    pub(crate) fn hopeless(&self, job: usize) -> bool {
        let Some(Some((tenant, priority, needs))) = self.jobs.get(job) else {
            return false;
        };
        needs.iter().any(|&(g, n)| {
            let cap = self.cap.get(g).copied().unwrap_or(0);
            let used = self.used.get(g).copied().unwrap_or(0);
            let evictable: u64 = self.held.get(g).map_or(0, |by_tenant| {
                by_tenant
                    .iter()
                    .enumerate()
                    .map(|(t, p)| {
                        if t == *tenant {
                            p.iter().take(*priority).sum::<u64>()
                        } else {
                            p.iter().sum()
                        }
                    })
                    .sum()
            });
            cap.saturating_sub(used) + evictable < n
        })
    }
}
