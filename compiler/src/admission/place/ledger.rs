//! What the admission rules count with: a job's demand, the tenants' quotas and the cohort, the
//! ledger of what admitted jobs hold, and why a job does not fit (the preview and the schedule
//! share them).

use loam_ir::types::Priority;
use std::collections::BTreeMap;

/// One node group of the pool.
pub(crate) struct NodeGroupInfo {
    pub(crate) site: String,
    pub(crate) device: String,
    pub(crate) devices: u64,
}

/// A placeable job: what it takes of each node group and device type.
#[derive(Debug, Clone)]
pub(crate) struct Demand {
    pub(crate) tenant: String,
    pub(crate) priority: Priority,
    /// Devices per node group.
    pub(crate) per_group: BTreeMap<String, u64>,
    /// Devices per device type.
    pub(crate) per_device: BTreeMap<String, u64>,
}

/// A tenant's quota of one device type.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Quota {
    pub(crate) guaranteed: u64,
    pub(crate) elastic: u64,
    pub(crate) derived: bool,
}

/// Every tenant's quota per device type, and what the cohort (the pool) holds of each.
pub(crate) struct Quotas {
    pub(crate) of: BTreeMap<(String, String), Quota>,
    /// `of` by tenant, then device type: looked up without allocating (the schedule asks at
    /// every event).
    pub(crate) by_tenant: BTreeMap<String, BTreeMap<String, Quota>>,
    pub(crate) cohort: BTreeMap<String, u64>,
}

impl Quotas {
    pub(crate) fn get(&self, tenant: &str, device: &str) -> Quota {
        self.by_tenant
            .get(tenant)
            .and_then(|m| m.get(device))
            .copied()
            .unwrap_or_default()
    }

    pub(crate) fn cohort(&self, device: &str) -> u64 {
        self.cohort.get(device).copied().unwrap_or(0)
    }
}

/// What the admitted jobs hold.
#[derive(Clone, Default)]
pub(crate) struct Ledger {
    pub(crate) group_used: BTreeMap<String, u64>,
    /// By tenant, then device type.
    pub(crate) tenant_used: BTreeMap<String, BTreeMap<String, u64>>,
    pub(crate) device_used: BTreeMap<String, u64>,
    /// Admission sequence number → job index; a job put back keeps its number.
    pub(crate) admitted: BTreeMap<usize, usize>,
}

/// Why a job does not fit now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Blocker {
    Tenant {
        device: String,
        needs: u64,
        room: u64,
    },
    Cohort {
        device: String,
        needs: u64,
        room: u64,
    },
    NodeGroup {
        name: String,
        device: String,
        needs: u64,
        free: u64,
    },
}

impl Ledger {
    pub(crate) fn used_by(&self, tenant: &str, device: &str) -> u64 {
        self.tenant_used
            .get(tenant)
            .and_then(|m| m.get(device))
            .copied()
            .unwrap_or(0)
    }

    /// Whether `d` fits next to what is admitted, or the first limit it hits: the tenant's
    /// guaranteed + elastic quota, what the cohort holds, the node group's devices.
    pub(crate) fn fits(
        &self,
        d: &Demand,
        quotas: &Quotas,
        groups: &BTreeMap<String, NodeGroupInfo>,
    ) -> Result<(), Blocker> {
        for (device, &needs) in &d.per_device {
            let q = quotas.get(&d.tenant, device);
            let used = self.used_by(&d.tenant, device);
            let limit = q.guaranteed + q.elastic;
            if used + needs > limit {
                return Err(Blocker::Tenant {
                    device: device.clone(),
                    needs,
                    room: limit.saturating_sub(used),
                });
            }
            let total = self.device_used.get(device).copied().unwrap_or(0);
            let cohort = quotas.cohort(device);
            if total + needs > cohort {
                return Err(Blocker::Cohort {
                    device: device.clone(),
                    needs,
                    room: cohort.saturating_sub(total),
                });
            }
        }
        for (name, &needs) in &d.per_group {
            let capacity = groups.get(name).map_or(0, |g| g.devices);
            let used = self.group_used.get(name).copied().unwrap_or(0);
            if used + needs > capacity {
                return Err(Blocker::NodeGroup {
                    name: name.clone(),
                    device: groups
                        .get(name)
                        .map(|g| g.device.clone())
                        .unwrap_or_default(),
                    needs,
                    free: capacity.saturating_sub(used),
                });
            }
        }
        Ok(())
    }

    pub(crate) fn add(&mut self, seq: usize, index: usize, d: &Demand) {
        for (name, n) in &d.per_group {
            *self.group_used.entry(name.clone()).or_default() += n;
        }
        for (device, n) in &d.per_device {
            *self
                .tenant_used
                .entry(d.tenant.clone())
                .or_default()
                .entry(device.clone())
                .or_default() += n;
            *self.device_used.entry(device.clone()).or_default() += n;
        }
        self.admitted.insert(seq, index);
    }

    pub(crate) fn remove(&mut self, seq: usize, d: &Demand) {
        for (name, n) in &d.per_group {
            if let Some(used) = self.group_used.get_mut(name) {
                *used = used.saturating_sub(*n);
            }
        }
        for (device, n) in &d.per_device {
            if let Some(used) = self
                .tenant_used
                .get_mut(&d.tenant)
                .and_then(|m| m.get_mut(device))
            {
                *used = used.saturating_sub(*n);
            }
            if let Some(used) = self.device_used.get_mut(device) {
                *used = used.saturating_sub(*n);
            }
        }
        self.admitted.remove(&seq);
    }

    /// Devices admitted jobs use of node group `name`.
    pub(crate) fn group_used(&self, name: &str) -> u64 {
        self.group_used.get(name).copied().unwrap_or(0)
    }
}

/// What `blocker` says is missing for a job of `tenant`, in words (the preview's `queues`
/// reason and the schedule's reason for a wait).
pub(crate) fn blocker_text(blocker: &Blocker, tenant: &str) -> String {
    match blocker {
        Blocker::Tenant {
            device,
            needs,
            room,
        } => format!(
            "needs {needs} {device}, {room} left of tenant `{tenant}`'s guaranteed + elastic quota"
        ),
        Blocker::Cohort {
            device,
            needs,
            room,
        } => format!("needs {needs} {device}, {room} left in the pool's cohort"),
        Blocker::NodeGroup {
            name,
            device,
            needs,
            free,
        } => {
            format!("needs {needs} {device} on `{name}`, {free} free")
        }
    }
}
