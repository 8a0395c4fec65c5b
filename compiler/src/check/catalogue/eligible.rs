//! Where a job or a service may run: the sites and device types of a pool that its spec and its
//! tenant allow. The checker ([`super::check_job`], [`super::check_service`]) and the planner's
//! choice of node groups both decide it here, so `check` never passes a spec that the planner may
//! only place somewhere else.

use crate::catalogue::{Pool, Site, Tenant};
use crate::check::{DataSpec, Job, ResourcesSpec, Service};
use loam_ir::span::Spanned;

/// The parts of a job or a service that say where it may run and what it may cost: every check
/// of names and resources against the catalogue reads a spec through this view, so jobs and
/// services follow one implementation of each rule.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The job or service name.
    pub name: &'a Spanned<String>,
    /// `job` or `service`, for messages.
    pub kind: &'static str,
    /// The tenant that owns it.
    pub tenant: &'a Spanned<String>,
    /// Its `resources` block.
    pub resources: &'a ResourcesSpec,
    /// The budget of its `goal` (a service's is per month).
    pub budget: Option<&'a Spanned<(f64, String)>>,
    /// The checkpoint path it writes (jobs only).
    pub checkpoint: Option<&'a Spanned<String>>,
    /// The data sets it reads (jobs only).
    pub data: &'a [DataSpec],
}

impl<'a> From<&'a Job> for Scope<'a> {
    fn from(job: &'a Job) -> Self {
        Scope {
            name: &job.name,
            kind: "job",
            tenant: &job.tenant,
            resources: &job.resources,
            budget: job.goal.budget.as_ref(),
            checkpoint: job.checkpoint.path.as_ref(),
            data: &job.data,
        }
    }
}

impl<'a> From<&'a Service> for Scope<'a> {
    fn from(service: &'a Service) -> Self {
        Scope {
            name: &service.name,
            kind: "service",
            tenant: &service.tenant,
            resources: &service.resources,
            budget: service.goal.budget.as_ref(),
            checkpoint: None,
            data: &[],
        }
    }
}

/// Whether the spec's `resources.devices` allows device type `id` (any when empty).
pub fn device_allowed<'a>(spec: impl Into<Scope<'a>>, id: &str) -> bool {
    let devices = &spec.into().resources.devices;
    devices.is_empty() || devices.iter().any(|d| d.value == id)
}

/// Whether the spec's `resources.sites` allows `site` (any when empty).
pub fn spec_allows_site<'a>(spec: impl Into<Scope<'a>>, site: &str) -> bool {
    let sites = &spec.into().resources.sites;
    sites.is_empty() || sites.iter().any(|s| s.value == site)
}

/// Whether the tenant may use `site` (any when the catalogue lists no sites for it).
pub fn tenant_allows_site(tenant: Option<&Tenant>, site: &str) -> bool {
    tenant.is_none_or(|t| t.sites.is_empty() || t.sites.iter().any(|s| s.value == site))
}

/// Whether both the spec and the tenant allow `site`.
pub fn site_allowed<'a>(spec: impl Into<Scope<'a>>, tenant: Option<&Tenant>, site: &str) -> bool {
    spec_allows_site(spec, site) && tenant_allows_site(tenant, site)
}

/// The sites of `pool` the spec may use, in file order.
pub fn allowed_sites<'a, 's>(spec: impl Into<Scope<'s>>, pool: &'a Pool) -> Vec<&'a Site> {
    let spec = spec.into();
    let tenant = pool.tenant(&spec.tenant.value);
    pool.sites
        .iter()
        .filter(|s| site_allowed(spec, tenant, &s.name.value))
        .collect()
}
