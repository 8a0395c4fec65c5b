//! Where a job may run: the sites and device types of a pool that its spec and its tenant allow.
//! The checker ([`super::check_job`]) and the planner's choice of node groups both decide it
//! here, so `check` never passes a job that the planner may only place somewhere else.

use super::{Pool, Site, Tenant};
use crate::check::{Job, ResourcesSpec};

/// Whether the job's `resources.devices` allows device type `id` (any when empty).
pub fn device_allowed(job: &Job, id: &str) -> bool {
    resources_allow_device(&job.resources, id)
}

/// Whether a `resources` block (a job's or a service's) allows device type `id` (any when its
/// `devices` is empty).
pub fn resources_allow_device(resources: &ResourcesSpec, id: &str) -> bool {
    resources.devices.is_empty() || resources.devices.iter().any(|d| d.value == id)
}

/// Whether the job's `resources.sites` allows `site` (any when empty).
pub fn spec_allows_site(job: &Job, site: &str) -> bool {
    resources_allow_site(&job.resources, site)
}

/// Whether a `resources` block allows `site` (any when its `sites` is empty).
pub fn resources_allow_site(resources: &ResourcesSpec, site: &str) -> bool {
    resources.sites.is_empty() || resources.sites.iter().any(|s| s.value == site)
}

/// Whether the tenant may use `site` (any when the catalogue lists no sites for it).
pub fn tenant_allows_site(tenant: Option<&Tenant>, site: &str) -> bool {
    tenant.is_none_or(|t| t.sites.is_empty() || t.sites.iter().any(|s| s.value == site))
}

/// Whether both the spec and the tenant allow `site`.
pub fn site_allowed(job: &Job, tenant: Option<&Tenant>, site: &str) -> bool {
    spec_allows_site(job, site) && tenant_allows_site(tenant, site)
}

/// The sites of `pool` the job may use, in file order.
pub fn allowed_sites<'a>(job: &Job, pool: &'a Pool) -> Vec<&'a Site> {
    let tenant = pool.tenant(&job.tenant.value);
    pool.sites
        .iter()
        .filter(|s| site_allowed(job, tenant, &s.name.value))
        .collect()
}
