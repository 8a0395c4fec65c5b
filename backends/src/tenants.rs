//! Where each tenant's jobs go on every backend, read from the catalogue's pools: the one
//! mapping `loam emit` and `loam diff` render manifests with.

use crate::{QuotaShare, Tenancy};
use loam_compiler::catalogue::Catalogue;
use loam_compiler::plan::ir::PlanDocument;
use std::collections::BTreeMap;

/// The backend names of every tenant the plans name, from the catalogue's pools. A tenant the
/// catalogue does not describe is left out; the backends derive its names (see
/// [`Tenancy::derived`]).
pub fn tenancies(doc: &PlanDocument, catalogue: &Catalogue) -> BTreeMap<String, Tenancy> {
    let mut found = BTreeMap::new();
    let owners = doc
        .plans
        .iter()
        .map(|p| (&p.pool, &p.tenant))
        .chain(doc.services.iter().map(|s| (&s.pool, &s.tenant)));
    for (pool, owner) in owners {
        let Some(pool) = catalogue.pool(pool) else {
            continue;
        };
        let Some(tenant) = pool.tenant(owner) else {
            continue;
        };
        let quotas = tenant
            .quota
            .iter()
            .map(|q| {
                (
                    q.device.value.clone(),
                    QuotaShare {
                        guaranteed: u64::from(q.guaranteed.value),
                        elastic: u64::from(q.elastic.value),
                    },
                )
            })
            .collect();
        found.insert(
            owner.clone(),
            Tenancy {
                namespace: tenant.kubernetes_namespace.clone(),
                queue: tenant.queue.clone(),
                slurm_account: tenant.slurm_account.clone(),
                slurm_qos: None,
                checkpoint_root: tenant.checkpoint_root.value.to_string(),
                quotas,
            },
        );
    }
    found
}

/// The devices of every node group of the pools `doc`'s plans run in, by node group name: the
/// capacity the pool's Kueue cohort must hold for the catalogue's elastic quotas to be real.
pub fn node_group_devices(doc: &PlanDocument, catalogue: &Catalogue) -> BTreeMap<String, u64> {
    let mut found = BTreeMap::new();
    for plan in &doc.plans {
        let Some(pool) = catalogue.pool(&plan.pool) else {
            continue;
        };
        for (_, group) in pool.node_groups() {
            found.insert(group.name.value.clone(), group.devices());
        }
    }
    found
}
