//! Checks of a typed job against the catalogue: names that must resolve (pool, sites, devices,
//! tenant, currency), what the allowed devices can do (precision, features, software), and
//! whether the job can fit at all (devices per node, device counts, quotas, memory).
//!
//! Pure and order-independent: every check reads the job and the catalogue and pushes what it
//! finds; the result is sorted. A name that does not resolve removes what depends on it from
//! later checks, so one typo gives one diagnostic, not a cascade.

use super::capability::{Missing, missing_capability, pool_devices_with};
use super::eligible::{self, Scope};
use super::fit::check_fit;
use super::software::check_software;
use crate::catalogue::{Catalogue, Device, Feature, NodeGroup, Pool, Site, Tenant};
use crate::check::{Job, ResourcesSpec};
use crate::suggest::closest;
use loam_ir::checkpoint::{CheckpointPath, RootProblem};
use loam_ir::diagnostics::codes::catalogue as codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::span::{Span, Spanned};
use std::collections::BTreeMap;

/// The most secondary labels pointing into the catalogue one diagnostic carries.
const MAX_RELATED: usize = 3;

/// Every feature a spec may require, in keyword order.
const FEATURES: &[Feature] = &[
    Feature::FlashAttention,
    Feature::Fp8,
    Feature::TransformerEngine,
    Feature::Sparsity,
    Feature::GpudirectRdma,
];

/// What a job may use after its names are resolved: the devices and node groups of the allowed
/// types at the allowed sites.
pub(crate) struct Allowed<'a> {
    /// Allowed device types, sorted by id.
    pub devices: Vec<&'a Device>,
    /// Node groups of those types at the allowed sites, in file order.
    pub groups: Vec<(&'a Site, &'a NodeGroup)>,
    /// Where the spec names each device (absent when `devices` is not written).
    pub named_at: BTreeMap<String, Span>,
}

impl Allowed<'_> {
    /// The node groups of device type `id`.
    pub fn groups_of<'s>(&'s self, id: &'s str) -> impl Iterator<Item = &'s NodeGroup> + 's {
        self.groups
            .iter()
            .filter(move |(_, g)| g.device.value == id)
            .map(|(_, g)| *g)
    }

    /// All devices of the allowed types at the allowed sites.
    pub fn total_devices(&self) -> u64 {
        self.groups.iter().map(|(_, g)| g.devices()).sum()
    }
}

/// What a job or a service may use once its names resolve.
pub(crate) struct Resolved<'a> {
    /// Its pool.
    pub pool: &'a Pool,
    /// Its tenant, when the pool has it.
    pub tenant: Option<&'a Tenant>,
    /// The devices and node groups it may use (at least one device).
    pub allowed: Allowed<'a>,
}

/// The checks jobs and services share: names that must resolve (devices, features, pool, data
/// sites, tenant, the budget's currency, sites), then the allowed devices' features and
/// software. `None` when no pool, site or device is left to check the rest against.
pub(crate) fn resolve<'a>(
    spec: Scope<'_>,
    catalogue: &'a Catalogue,
    diags: &mut Diagnostics,
) -> Option<Resolved<'a>> {
    let known = known_devices(spec, catalogue, diags);
    check_feature_names(spec, diags);
    let pool = resolve_pool(spec, catalogue, diags)?;
    check_data_sites(spec, pool, diags);
    let tenant = check_tenant(spec, pool, diags);
    check_budget(spec, pool, diags);
    let sites = allowed_sites(spec, pool, tenant, diags)?;
    let allowed = allowed(spec, catalogue, pool, &known, &sites, diags);
    if allowed.devices.is_empty() {
        return None;
    }
    check_features(spec, catalogue, pool, &allowed, diags);
    check_software(spec.resources, &allowed, diags);
    Some(Resolved {
        pool,
        tenant,
        allowed,
    })
}

/// Checks `job` against `catalogue`; returns every problem found, sorted by position.
pub fn check_job(job: &Job, catalogue: &Catalogue) -> Vec<Diagnostic> {
    let mut diags = Diagnostics::new();
    let Some(resolved) = resolve(Scope::from(job), catalogue, &mut diags) else {
        return diags.into_sorted();
    };
    let Resolved {
        pool,
        tenant,
        allowed,
    } = resolved;
    check_precision(job, catalogue, pool, &allowed, &mut diags);
    check_tensor(job, &allowed, &mut diags);
    check_counts(
        Scope::from(job),
        pinned_devices(job),
        tenant,
        &allowed,
        &mut diags,
    );
    check_fit(job, &allowed, &mut diags);
    diags.into_sorted()
}

/// `a`, `b` and `c` as a list of code spans.
pub(crate) fn ticked<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "lacks" for one device, "lack" for several.
pub(crate) fn lack(n: usize) -> &'static str {
    if n == 1 { "lacks" } else { "lack" }
}

pub(crate) fn did_you_mean<'a>(
    unknown: &str,
    known: impl IntoIterator<Item = &'a str> + Clone,
    what: &str,
) -> String {
    match closest(unknown, known.clone()) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!("known {what}: {}", ticked(known)),
    }
}

/// The help for an unknown device: the catalogue's devices of its family (`H100` →
/// `H100_SXM`, `H100_HBM2e_96GB`), else the closest id, else every id.
fn device_help(unknown: &str, catalogue: &Catalogue) -> String {
    let ids = catalogue.device_ids();
    match crate::suggest::devices_like(unknown, ids.clone()).as_slice() {
        [] => format!("known devices: {}", ticked(ids)),
        [one] => format!("did you mean `{one}`?"),
        several => format!(
            "did you mean one of {}? (`loam catalogue list` shows every device)",
            ticked(several.iter().copied())
        ),
    }
}

/// The listed devices the catalogue defines (unknown ones are reported).
fn known_devices<'a>(
    spec: Scope<'a>,
    catalogue: &Catalogue,
    diags: &mut Diagnostics,
) -> Vec<&'a Spanned<String>> {
    let mut known = Vec::new();
    for device in &spec.resources.devices {
        if catalogue.device(&device.value).is_some() {
            known.push(device);
        } else if let Some(file) = catalogue.withheld.devices.get(&device.value) {
            diags.push(not_loaded("device", device, file));
        } else {
            diags.push(
                Diagnostic::error(
                    codes::JOB_UNKNOWN_DEVICE,
                    format!("unknown device `{}`", device.value),
                    device.span,
                    "no device of this name in the catalogue",
                )
                .with_help(device_help(&device.value, catalogue)),
            );
        }
    }
    known
}

fn check_feature_names(spec: Scope<'_>, diags: &mut Diagnostics) {
    let keywords = FEATURES.iter().map(|f| f.as_str());
    for feature in &spec.resources.features {
        if feature_of(&feature.value).is_none() {
            diags.push(
                Diagnostic::error(
                    codes::JOB_UNKNOWN_FEATURE,
                    format!("unknown feature `{}`", feature.value),
                    feature.span,
                    "no device feature of this name",
                )
                .with_help(did_you_mean(
                    &feature.value,
                    keywords.clone(),
                    "features",
                )),
            );
        }
    }
}

fn feature_of(name: &str) -> Option<Feature> {
    FEATURES.iter().copied().find(|f| f.as_str() == name)
}

fn resolve_pool<'a>(
    spec: Scope<'_>,
    catalogue: &'a Catalogue,
    diags: &mut Diagnostics,
) -> Option<&'a Pool> {
    let name = &spec.resources.pool;
    let pool = catalogue.pool(&name.value);
    if let Some(file) = catalogue.withheld.pools.get(&name.value) {
        diags.push(not_loaded("pool", name, file));
    } else if pool.is_none() {
        diags.push(
            Diagnostic::error(
                codes::JOB_UNKNOWN_POOL,
                format!("unknown pool `{}`", name.value),
                name.span,
                "no pool of this name in the catalogue",
            )
            .with_help(did_you_mean(&name.value, catalogue.pool_ids(), "pools")),
        );
    }
    pool
}

/// A pool or device the catalogue left out because `file` has errors (finding 9 of the gitops
/// review): the spec is blocked by that file, and fixing it is the help, not another name.
fn not_loaded(what: &str, name: &Spanned<String>, file: &str) -> Diagnostic {
    Diagnostic::error(
        codes::NOT_LOADED,
        format!("{what} `{}` is not loaded: `{file}` has errors", name.value),
        name.span,
        "its catalogue file does not load",
    )
    .with_help(format!(
        "fix `{file}` first (`loam check` lists its errors); specs on other pools are planned as usual"
    ))
}

fn unknown_site(pool: &Pool, site: &Spanned<String>, label: &str) -> Diagnostic {
    Diagnostic::error(
        codes::JOB_UNKNOWN_SITE,
        format!("unknown site `{}`", site.value),
        site.span,
        label.to_string(),
    )
    .with_help(
        match crate::suggest::closest_place(&site.value, pool.site_names()) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!(
                "known sites of `{}`: {}",
                pool.id.value,
                ticked(pool.site_names())
            ),
        },
    )
}

fn check_data_sites(spec: Scope<'_>, pool: &Pool, diags: &mut Diagnostics) {
    for data in spec.data {
        if pool.site(&data.site.value).is_none() {
            let label = format!("pool `{}` has no site of this name", pool.id.value);
            diags.push(unknown_site(pool, &data.site, &label));
        }
    }
}

/// The sites the job may use (see [`super::eligible`]), reporting listed sites the pool lacks
/// and listed sites closed to the tenant; `None` when none is left.
fn allowed_sites<'a>(
    spec: Scope<'_>,
    pool: &'a Pool,
    tenant: Option<&Tenant>,
    diags: &mut Diagnostics,
) -> Option<Vec<&'a Site>> {
    for name in &spec.resources.sites {
        match pool.site(&name.value) {
            None => {
                let label = format!("pool `{}` has no site of this name", pool.id.value);
                diags.push(unknown_site(pool, name, &label));
            }
            Some(_) if !eligible::tenant_allows_site(tenant, &name.value) => {
                if let Some(tenant) = tenant {
                    diags.push(site_closed_to_tenant(tenant, name));
                }
            }
            Some(_) => {}
        }
    }
    let sites = eligible::allowed_sites(spec, pool);
    (!sites.is_empty()).then_some(sites)
}

/// L2116: a listed site the tenant may not use.
fn site_closed_to_tenant(tenant: &Tenant, site: &Spanned<String>) -> Diagnostic {
    let open: Vec<&str> = tenant.sites.iter().map(|s| s.value.as_str()).collect();
    let mut d = Diagnostic::error(
        codes::SITE_CLOSED_TO_TENANT,
        format!(
            "site `{}` is not open to tenant `{}`",
            site.value, tenant.name.value
        ),
        site.span,
        "the tenant may not run jobs here",
    )
    .with_help(format!("choose among the tenant's sites: {}", ticked(open)));
    if let Some(first) = tenant.sites.first() {
        d = d.with_related(
            first.span,
            format!("tenant `{}` may use these sites", tenant.name.value),
        );
    }
    d
}

fn check_tenant<'a>(
    spec: Scope<'_>,
    pool: &'a Pool,
    diags: &mut Diagnostics,
) -> Option<&'a Tenant> {
    let name = &spec.tenant;
    let Some(tenant) = pool.tenant(&name.value) else {
        diags.push(
            Diagnostic::error(
                codes::JOB_UNKNOWN_TENANT,
                format!("unknown tenant `{}`", name.value),
                name.span,
                format!("pool `{}` has no tenant of this name", pool.id.value),
            )
            .with_help(did_you_mean(
                &name.value,
                pool.tenant_names(),
                &format!("tenants of `{}`", pool.id.value),
            )),
        );
        return None;
    };
    // A path that is malformed on its own is reported by the checker (L1018) already.
    if let Some(written) = spec.checkpoint
        && let Ok(path) = CheckpointPath::parse(&written.value)
        && let Err(problem) = path.relative_to(&tenant.checkpoint_root.value)
    {
        let root = &tenant.checkpoint_root.value;
        let (message, label) = match problem {
            RootProblem::TheRoot => (
                format!("expected a checkpoint path below `{root}`, found the root itself"),
                format!(
                    "the checkpoint root of tenant `{}`, shared by all its jobs",
                    name.value
                ),
            ),
            RootProblem::Outside => (
                format!(
                    "expected a checkpoint path under `{root}`, found `{}`",
                    written.value
                ),
                format!("outside the checkpoint root of tenant `{}`", name.value),
            ),
        };
        // What the planner does without `path` (the same function).
        let help = match root.job_folder(&spec.name.value) {
            Ok(folder) => format!(
                "remove `path` to use `{folder}` (the tenant's root and the job's name), or write another folder below `{root}`"
            ),
            Err(_) => format!("write a folder below `{root}`, e.g. \"{root}/run-1\""),
        };
        diags.push(
            Diagnostic::error(codes::CHECKPOINT_OUTSIDE_ROOT, message, written.span, label)
                .with_related(
                    tenant.checkpoint_root.span,
                    format!("tenant `{}` keeps its checkpoints here", name.value),
                )
                .with_help(help),
        );
    }
    Some(tenant)
}

fn check_budget(spec: Scope<'_>, pool: &Pool, diags: &mut Diagnostics) {
    let Some(budget) = spec.budget else {
        return;
    };
    let currency = &budget.value.1;
    let known = pool.currencies();
    if known.contains(&currency.as_str()) {
        return;
    }
    let help = match closest(currency, known.iter().copied()) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!(
            "write the budget in a currency pool `{}` converts: {}",
            pool.id.value,
            ticked(known.iter().copied())
        ),
    };
    diags.push(
        Diagnostic::error(
            codes::JOB_UNKNOWN_CURRENCY,
            format!("unknown currency `{currency}`"),
            budget.span,
            format!("pool `{}` has no exchange rate for it", pool.id.value),
        )
        .with_related(
            pool.currency.span,
            "the pool's currencies are declared here",
        )
        .with_help(help),
    );
}

/// The devices and node groups the job may use, reporting listed devices the pool (or the
/// allowed sites) lacks.
fn allowed<'a>(
    spec: Scope<'_>,
    catalogue: &'a Catalogue,
    pool: &'a Pool,
    known: &[&Spanned<String>],
    sites: &[&'a Site],
    diags: &mut Diagnostics,
) -> Allowed<'a> {
    let at_sites = |id: &str| sites.iter().any(|s| s.devices_of(id).1 > 0);
    let mut named_at = BTreeMap::new();
    let mut ids: Vec<&str> = Vec::new();
    if spec.resources.devices.is_empty() {
        ids = pool
            .device_ids()
            .into_iter()
            .filter(|id| at_sites(id))
            .collect();
    }
    for device in known {
        let id = device.value.as_str();
        if pool.devices_of(id).1 == 0 {
            diags.push(
                Diagnostic::error(
                    codes::DEVICE_NOT_IN_POOL,
                    format!("device `{id}` is not in pool `{}`", pool.id.value),
                    device.span,
                    "the pool has no nodes of this type",
                )
                .with_help(format!(
                    "choose devices the pool has: {}",
                    ticked(pool.device_ids())
                )),
            );
        } else if !at_sites(id) {
            diags.push(
                Diagnostic::error(
                    codes::DEVICE_NOT_IN_POOL,
                    format!("device `{id}` is not at the allowed sites"),
                    device.span,
                    "none of the sites the job may use has this type",
                )
                .with_help("allow a site that has these devices (in `resources.sites`, among the tenant's sites), or choose other devices"),
            );
        } else if !ids.contains(&id) {
            ids.push(id);
            named_at.insert(id.to_string(), device.span);
        }
    }
    ids.sort_unstable();
    let devices: Vec<&Device> = ids.iter().filter_map(|id| catalogue.device(id)).collect();
    let groups = sites
        .iter()
        .flat_map(|s| s.node_groups.iter().map(move |g| (*s, g)))
        .filter(|(_, g)| ids.contains(&g.device.value.as_str()))
        .collect();
    Allowed {
        devices,
        groups,
        named_at,
    }
}

/// Where to point when talking about the allowed devices as a whole.
pub(crate) fn devices_span(resources: &ResourcesSpec) -> Span {
    match (resources.devices.first(), resources.devices.last()) {
        (Some(first), Some(last)) => first.span.join(last.span),
        _ => resources.pool.span,
    }
}

/// Up to [`MAX_RELATED`] secondary labels, one per device.
pub(crate) fn with_device_labels<'a>(
    mut diagnostic: Diagnostic,
    devices: impl IntoIterator<Item = (&'a Device, Span, String)>,
) -> Diagnostic {
    for (_, span, message) in devices.into_iter().take(MAX_RELATED) {
        diagnostic = diagnostic.with_related(span, message);
    }
    diagnostic
}

fn check_precision(
    job: &Job,
    catalogue: &Catalogue,
    pool: &Pool,
    allowed: &Allowed<'_>,
    diags: &mut Diagnostics,
) {
    let precision = &job.train.precision;
    if allowed.devices.iter().any(|d| d.supports(precision.value)) {
        return;
    }
    let others = pool_devices_with(catalogue, pool, |d| d.supports(precision.value));
    let common = common_precision(&allowed.devices);
    let help = if others.is_empty() {
        format!("train in a precision the devices support, such as `{common}`")
    } else {
        format!(
            "train in a precision the devices support, such as `{common}`, or allow devices that train in {}: {}",
            precision.value,
            ticked(others)
        )
    };
    let missing = Missing {
        code: codes::UNSUPPORTED_PRECISION,
        message: format!("no allowed device trains in `{}`", precision.value),
        span: precision.span,
        what: precision.value.as_str(),
    };
    diags.push(missing_capability(missing, allowed, help, |d| {
        let list: Vec<&str> = d.precisions.value.iter().map(|p| p.as_str()).collect();
        let message = format!("`{}` trains in {}", d.id.value, list.join(", "));
        (d.precisions.span, message)
    }));
}

/// A precision every device in `devices` supports (bf16 when it is one), for help lines.
fn common_precision(devices: &[&Device]) -> &'static str {
    use loam_ir::types::Precision;
    [Precision::Bf16, Precision::Fp16, Precision::Fp32]
        .into_iter()
        .find(|p| devices.iter().all(|d| d.supports(*p)))
        .map_or("fp32", Precision::as_str)
}

fn check_features(
    spec: Scope<'_>,
    catalogue: &Catalogue,
    pool: &Pool,
    allowed: &Allowed<'_>,
    diags: &mut Diagnostics,
) {
    for name in &spec.resources.features {
        let Some(feature) = feature_of(&name.value) else {
            continue;
        };
        if allowed.devices.iter().any(|d| d.has_feature(feature)) {
            continue;
        }
        let others = pool_devices_with(catalogue, pool, |d| d.has_feature(feature));
        let help = if others.is_empty() {
            format!(
                "no device of pool `{}` has it; drop the requirement",
                pool.id.value
            )
        } else {
            format!(
                "allow devices that have it ({}), or drop the requirement",
                ticked(others)
            )
        };
        let missing = Missing {
            code: codes::UNSUPPORTED_FEATURE,
            message: format!("no allowed device has feature `{}`", name.value),
            span: name.span,
            what: &name.value,
        };
        diags.push(missing_capability(missing, allowed, help, |d| {
            let list: Vec<&str> = d.features.value.iter().map(|f| f.as_str()).collect();
            let message = if list.is_empty() {
                format!("`{}` lists no features", d.id.value)
            } else {
                format!("`{}` has {}", d.id.value, list.join(", "))
            };
            (d.features.span, message)
        }));
    }
}

fn check_tensor(job: &Job, allowed: &Allowed<'_>, diags: &mut Diagnostics) {
    let Some(tensor) = &job.parallel.tensor else {
        return;
    };
    let Some((_, widest)) = allowed
        .groups
        .iter()
        .max_by_key(|(_, g)| (g.devices_per_node.value, std::cmp::Reverse(&g.name.value)))
    else {
        return;
    };
    let per_node = u64::from(widest.devices_per_node.value);
    if tensor.value <= per_node {
        return;
    }
    diags.push(
        Diagnostic::error(
            codes::TENSOR_ABOVE_NODE,
            format!(
                "expected tensor parallelism of at most {per_node}, found {}",
                tensor.value
            ),
            tensor.span,
            format!("a tensor group must fit in one node of {per_node} devices"),
        )
        .with_related(
            widest.devices_per_node.span,
            format!(
                "the widest allowed nodes (`{}`) have {per_node} devices",
                widest.name.value
            ),
        )
        .with_help(format!(
            "set `tensor` to {per_node} or less (a divisor of the heads), or to `auto`"
        )),
    );
}

/// The least number of devices the pinned layout needs, and where the pinned degrees are.
fn pinned_devices(job: &Job) -> Option<(u64, Span)> {
    let p = &job.parallel;
    let pinned: Vec<&Spanned<u64>> = [&p.tensor, &p.pipeline, &p.data, &p.context]
        .into_iter()
        .flatten()
        .collect();
    let first = pinned.first()?;
    let span = pinned.iter().fold(first.span, |s, d| s.join(d.span));
    let product = pinned
        .iter()
        .fold(1u64, |n, d| n.saturating_mul(d.value.max(1)));
    Some((product, span))
}

/// The pinned degrees' devices (`pinned`: how many and where) against the pool and the tenant's
/// quota; unpinned, the tenant needs a quota for one device of the allowed types.
pub(crate) fn check_counts(
    spec: Scope<'_>,
    pinned: Option<(u64, Span)>,
    tenant: Option<&Tenant>,
    allowed: &Allowed<'_>,
    diags: &mut Diagnostics,
) {
    let (needed, span) = pinned.unwrap_or((1, devices_span(spec.resources)));
    let ids: Vec<&str> = allowed
        .devices
        .iter()
        .map(|d| d.id.value.as_str())
        .collect();
    let total = allowed.total_devices();
    if pinned.is_some() && needed > total {
        diags.push(
            Diagnostic::error(
                codes::TOO_MANY_DEVICES,
                format!("the pinned layout needs {needed} devices, the pool holds {total} of the allowed types"),
                span,
                format!("{needed} devices in all"),
            )
            .with_help(format!(
                "pin smaller degrees or set them to `auto`, or allow more device types or sites ({} allowed now)",
                ticked(ids.iter().copied())
            )),
        );
    }
    let Some(tenant) = tenant else {
        return;
    };
    let quota: u64 = tenant
        .quota
        .iter()
        .filter(|q| ids.contains(&q.device.value.as_str()))
        .map(|q| u64::from(q.guaranteed.value) + u64::from(q.elastic.value))
        .sum();
    if needed <= quota {
        return;
    }
    let message = if quota == 0 {
        format!(
            "tenant `{}` has no quota for the allowed devices",
            tenant.name.value
        )
    } else {
        format!(
            "the pinned layout needs {needed} devices, tenant `{}` may use {quota} of the allowed types",
            tenant.name.value
        )
    };
    let with_quota: Vec<&str> = tenant
        .quota
        .iter()
        .filter(|q| u64::from(q.guaranteed.value) + u64::from(q.elastic.value) > 0)
        .map(|q| q.device.value.as_str())
        .collect();
    diags.push(
        Diagnostic::error(
            codes::ABOVE_QUOTA,
            message,
            span,
            if pinned.is_some() {
                format!("{needed} devices above the quota of {quota}")
            } else {
                "the tenant may use none of these devices".to_string()
            },
        )
        .with_related(
            tenant.name.span,
            format!(
                "quota of `{}` (guaranteed + elastic) declared here",
                tenant.name.value
            ),
        )
        .with_help(if with_quota.is_empty() {
            "ask the pool's operators for a quota".to_string()
        } else {
            format!(
                "use fewer devices, or devices the tenant has quota for: {}",
                ticked(with_quota)
            )
        }),
    );
}
