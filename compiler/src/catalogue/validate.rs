//! Whole-catalogue checks: unique names, references that resolve (a device's vendor, a node
//! group's device), quotas that fit, sites that reach each other, software new enough for its
//! devices.
//!
//! Every check runs on every item and reports everything; the caller sorts the result.

use super::codes;
use super::model::{Catalogue, Device, NodeGroup, Pool, Site, SlicingKind};
use super::values::compare_versions;
use super::yaml::Source;
use loam_ir::cluster::vendor::Vendor;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::{Span, Spanned};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Builds the catalogue from the loaded files, checking what spans several of them.
pub(crate) fn assemble(
    vendors: Vec<Vendor>,
    devices: Vec<Device>,
    pools: Vec<(Pool, Source<'_>)>,
    diags: &mut Vec<Diagnostic>,
) -> Catalogue {
    let mut catalogue = Catalogue::default();
    for vendor in vendors {
        if let Some(first) = catalogue.vendors.get(&vendor.id) {
            let name = Spanned::new(vendor.id.clone(), vendor.id_span);
            diags.push(duplicate("vendor", &name, first.id_span));
        } else {
            catalogue.vendors.insert(vendor.id.clone(), vendor);
        }
    }
    for mut device in devices {
        resolve_vendor(&mut device, &catalogue.vendors, diags);
        if let Some(first) = catalogue.devices.get(&device.id.value) {
            diags.push(duplicate("device", &device.id, first.id.span));
        } else {
            catalogue.devices.insert(device.id.value.clone(), device);
        }
    }
    for (pool, _source) in pools {
        check_pool(&pool, &catalogue.devices, diags);
        if let Some(first) = catalogue.pools.get(&pool.id.value) {
            diags.push(duplicate("pool", &pool.id, first.id.span));
        } else {
            catalogue.pools.insert(pool.id.value.clone(), pool);
        }
    }
    catalogue
}

/// Gives `device` its vendor's facts: its `vendor` must name a vendor file, and a device sliced
/// into resources of its own (MIG, vNPU) needs a vendor that names them.
fn resolve_vendor(
    device: &mut Device,
    vendors: &BTreeMap<String, Vendor>,
    diags: &mut Vec<Diagnostic>,
) {
    let name = Spanned::new(device.vendor.clone(), device.vendor_span);
    let Some(vendor) = vendors.get(&device.vendor) else {
        let known: Vec<&str> = vendors.keys().map(String::as_str).collect();
        diags.push(unknown(
            codes::UNKNOWN_VENDOR,
            "vendor",
            &name,
            &known,
            "in the catalogue",
        ));
        return;
    };
    if matches!(device.slicing, Some(SlicingKind::Mig | SlicingKind::Vnpu))
        && vendor.slice_resource.is_none()
    {
        diags.push(
            Diagnostic::error(
                codes::INCONSISTENT,
                format!(
                    "device `{}` is sliced, but vendor `{}` names no slice resource",
                    device.id.value, vendor.id
                ),
                device.vendor_span,
                "a vendor without `slice_resource`",
            )
            .with_help(
                "give the vendor a `slice_resource` template, e.g. `nvidia.com/mig-{profile}`",
            ),
        );
    }
    device.vendor_facts = vendor.clone();
}

fn duplicate(what: &str, name: &Spanned<String>, first: Span) -> Diagnostic {
    Diagnostic::error(
        codes::DUPLICATE_NAME,
        format!("duplicate {what} `{}`", name.value),
        name.span,
        format!("a second {what} with this name"),
    )
    .with_related(first, "first defined here")
    .with_help(format!("rename one of them; {what} names must be unique"))
}

/// Remembers the first span of each name and reports the repeats.
fn unique<'a>(
    what: &str,
    names: impl IntoIterator<Item = &'a Spanned<String>>,
    diags: &mut Vec<Diagnostic>,
) {
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
    for name in names {
        match seen.get(name.value.as_str()) {
            Some(first) => diags.push(duplicate(what, name, *first)),
            None => {
                seen.insert(&name.value, name.span);
            }
        }
    }
}

fn unknown(
    code: loam_ir::diagnostics::Code,
    what: &str,
    name: &Spanned<String>,
    known: &[&str],
    where_: &str,
) -> Diagnostic {
    let d = Diagnostic::error(
        code,
        format!("unknown {what} `{}`", name.value),
        name.span,
        format!("no {what} of this name {where_}"),
    );
    match crate::suggest::closest(&name.value, known.iter().copied()) {
        Some(s) => d.with_help(format!("did you mean `{s}`?")),
        None => d.with_help(format!("use one of {}", super::yaml::one_of(known))),
    }
}

/// Checks one pool against itself and the catalogue's `devices`, one concern after another.
fn check_pool(pool: &Pool, devices: &BTreeMap<String, Device>, diags: &mut Vec<Diagnostic>) {
    let names = Names::new(pool, devices);
    check_unique_names(pool, diags);
    let in_pool = check_node_groups(pool, devices, &names, diags);
    check_links(pool, &names, diags);
    check_reachability(pool, &names, diags);
    check_tenants(pool, devices, &in_pool, &names, diags);
}

/// The names a pool's references may use, for membership and did-you-mean suggestions.
struct Names<'a> {
    /// Every device id of the catalogue.
    device_ids: Vec<&'a str>,
    /// Every site of the pool.
    site_names: Vec<&'a str>,
}

impl<'a> Names<'a> {
    fn new(pool: &'a Pool, devices: &'a BTreeMap<String, Device>) -> Names<'a> {
        Names {
            device_ids: devices.keys().map(String::as_str).collect(),
            site_names: pool.sites.iter().map(|s| s.name.value.as_str()).collect(),
        }
    }

    fn is_site(&self, name: &str) -> bool {
        self.site_names.contains(&name)
    }

    /// `name` names no site of this pool.
    fn unknown_site(&self, name: &Spanned<String>) -> Diagnostic {
        unknown(
            codes::UNKNOWN_SITE,
            "site",
            name,
            &self.site_names,
            "in this pool",
        )
    }

    /// `name` names no device of the catalogue.
    fn unknown_device(&self, name: &Spanned<String>) -> Diagnostic {
        unknown(
            codes::UNKNOWN_DEVICE,
            "device",
            name,
            &self.device_ids,
            "in the catalogue",
        )
    }
}

/// Sites, node groups and tenants each have unique names.
fn check_unique_names(pool: &Pool, diags: &mut Vec<Diagnostic>) {
    unique("site", pool.sites.iter().map(|s| &s.name), diags);
    unique(
        "node group",
        pool.sites
            .iter()
            .flat_map(|s| &s.node_groups)
            .map(|g| &g.name),
        diags,
    );
    unique("tenant", pool.tenants.iter().map(|t| &t.name), diags);
}

/// Node groups: known device, no more devices per node than a node of it holds, software new
/// enough. Returns the devices of each known type in the pool.
fn check_node_groups<'a>(
    pool: &'a Pool,
    devices: &'a BTreeMap<String, Device>,
    names: &Names<'_>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<&'a str, u64> {
    let mut in_pool: BTreeMap<&str, u64> = BTreeMap::new();
    for group in pool.sites.iter().flat_map(|s| &s.node_groups) {
        let Some(device) = devices.get(&group.device.value) else {
            diags.push(names.unknown_device(&group.device));
            continue;
        };
        *in_pool.entry(device.id.value.as_str()).or_default() += group.devices();
        diags.extend(too_many_devices_per_node(group, device));
        diags.extend(software_too_old(group, device));
    }
    in_pool
}

/// `group` puts more devices in a node than a node of its `device` holds.
fn too_many_devices_per_node(group: &NodeGroup, device: &Device) -> Option<Diagnostic> {
    if group.devices_per_node.value <= device.devices_per_node.value {
        return None;
    }
    Some(
        Diagnostic::error(
            codes::INCONSISTENT,
            format!(
                "more devices per node than a `{}` node holds: expected at most {}, found {}",
                device.id.value, device.devices_per_node.value, group.devices_per_node.value
            ),
            group.devices_per_node.span,
            "too many devices in one node",
        )
        .with_related(device.devices_per_node.span, "the device's scale-up domain")
        .with_help(
            "a node group cannot hold more devices per node than the device's `devices_per_node`",
        ),
    )
}

/// `group` runs a software stack older than its `device` needs.
fn software_too_old(group: &NodeGroup, device: &Device) -> Option<Diagnostic> {
    let older = compare_versions(&group.software_version.value, &device.min_version.value)
        .is_some_and(|o| o == std::cmp::Ordering::Less);
    if !older {
        return None;
    }
    Some(
        Diagnostic::error(
            codes::SOFTWARE_TOO_OLD,
            format!(
                "{} {} is older than `{}` needs: expected at least {}, found {}",
                device.stack.as_str(),
                group.software_version.value,
                device.id.value,
                device.min_version.value,
                group.software_version.value
            ),
            group.software_version.span,
            "too old for this device",
        )
        .with_related(device.min_version.span, "the device's minimum version")
        .with_help(format!(
            "upgrade the node group to {} {} or newer",
            device.stack.as_str(),
            device.min_version.value
        )),
    )
}

/// Links: both ends known, not a loop.
fn check_links(pool: &Pool, names: &Names<'_>, diags: &mut Vec<Diagnostic>) {
    for link in &pool.links {
        for end in [&link.a, &link.b] {
            if !names.is_site(&end.value) {
                diags.push(names.unknown_site(end));
            }
        }
        if link.a.value == link.b.value {
            diags.push(
                Diagnostic::error(
                    codes::INCONSISTENT,
                    format!("link from `{}` to itself", link.a.value),
                    link.b.span,
                    "the same site at both ends",
                )
                .with_help("a WAN link joins two different sites; remove it or correct an end"),
            );
        }
    }
}

/// Reachability: each site reaches the sites it claims (all others when it claims none).
fn check_reachability(pool: &Pool, names: &Names<'_>, diags: &mut Vec<Diagnostic>) {
    let adjacent = link_graph(pool);
    for site in &pool.sites {
        let reached = reachable(&site.name.value, &adjacent);
        if site.reaches.is_empty() {
            diags.extend(unreached_sites(site, &reached, names));
        }
        for target in &site.reaches {
            if !names.is_site(&target.value) {
                diags.push(names.unknown_site(target));
            } else if !reached.contains(target.value.as_str()) {
                diags.push(claimed_but_unreached(site, target));
            }
        }
    }
}

/// The sites each site has a link to, both ways.
fn link_graph(pool: &Pool) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut adjacent: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for link in &pool.links {
        adjacent
            .entry(&link.a.value)
            .or_default()
            .insert(&link.b.value);
        adjacent
            .entry(&link.b.value)
            .or_default()
            .insert(&link.a.value);
    }
    adjacent
}

/// `site`, which claims no `reaches`, cannot reach every other site: only those `reached`.
fn unreached_sites(site: &Site, reached: &BTreeSet<&str>, names: &Names<'_>) -> Option<Diagnostic> {
    let missing: Vec<&str> = names
        .site_names
        .iter()
        .copied()
        .filter(|n| !reached.contains(n))
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(
        Diagnostic::error(
            codes::UNREACHABLE_SITE,
            format!(
                "site `{}` cannot reach {} over any link",
                site.name.value,
                super::yaml::one_of(&missing)
            ),
            site.name.span,
            "no path of links to some sites",
        )
        .with_help("add a link under `links`, or list the sites it does reach under `reaches`"),
    )
}

/// `site` claims to reach `target`, but no path of links leads there.
fn claimed_but_unreached(site: &Site, target: &Spanned<String>) -> Diagnostic {
    Diagnostic::error(
        codes::UNREACHABLE_SITE,
        format!(
            "site `{}` cannot reach `{}` over any link",
            site.name.value, target.value
        ),
        target.span,
        "claimed here, but no path of links leads there",
    )
    .with_related(site.name.span, "the site that claims it")
    .with_help(format!(
        "add a link between `{}` and `{}` (or via another site) under `links`",
        site.name.value, target.value
    ))
}

/// Tenants: known sites, known devices present in the pool (`in_pool`, by type), guaranteed
/// quotas that fit.
fn check_tenants(
    pool: &Pool,
    devices: &BTreeMap<String, Device>,
    in_pool: &BTreeMap<&str, u64>,
    names: &Names<'_>,
    diags: &mut Vec<Diagnostic>,
) {
    // Per device type, the guaranteed quotas that name it and where.
    let mut guaranteed: BTreeMap<&str, (u64, Vec<Span>)> = BTreeMap::new();
    for tenant in &pool.tenants {
        for site in &tenant.sites {
            if !names.is_site(&site.value) {
                diags.push(names.unknown_site(site));
            }
        }
        for quota in &tenant.quota {
            if !devices.contains_key(&quota.device.value) {
                diags.push(names.unknown_device(&quota.device));
            } else if !in_pool.contains_key(quota.device.value.as_str()) {
                diags.push(not_in_pool(&quota.device, in_pool));
            } else {
                let entry = guaranteed.entry(&quota.device.value).or_default();
                entry.0 += u64::from(quota.guaranteed.value);
                entry.1.push(quota.guaranteed.span);
            }
        }
    }
    for (device, (sum, spans)) in &guaranteed {
        let total = in_pool.get(device).copied().unwrap_or(0);
        if *sum > total {
            diags.extend(quotas_above_pool(device, *sum, total, spans));
        }
    }
}

/// A quota names a catalogue device that none of the pool's node groups has.
fn not_in_pool(device: &Spanned<String>, in_pool: &BTreeMap<&str, u64>) -> Diagnostic {
    let in_pool: Vec<&str> = in_pool.keys().copied().collect();
    unknown(
        codes::UNKNOWN_DEVICE,
        "device",
        device,
        &in_pool,
        "in this pool's node groups",
    )
}

/// The guaranteed quotas of `device` (at `spans`) add up to `sum`, more than the pool's `total`;
/// the last one is blamed.
fn quotas_above_pool(device: &str, sum: u64, total: u64, spans: &[Span]) -> Option<Diagnostic> {
    let (last, earlier) = spans.split_last()?;
    let mut d = Diagnostic::error(
        codes::INCONSISTENT,
        format!(
            "guaranteed quotas of `{device}` exceed the pool: expected at most {total}, found {sum}"
        ),
        *last,
        "this quota brings the sum over the pool's devices",
    )
    .with_help(format!(
        "lower the guaranteed quotas of `{device}` to {total} in all, or move the excess to `elastic`"
    ));
    for span in earlier {
        d = d.with_related(*span, "also guaranteed here");
    }
    Some(d)
}

/// Every site reachable from `start` over links, `start` included.
fn reachable<'a>(
    start: &'a str,
    adjacent: &BTreeMap<&'a str, BTreeSet<&'a str>>,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::from([start]);
    let mut queue = VecDeque::from([start]);
    while let Some(site) = queue.pop_front() {
        for next in adjacent.get(site).into_iter().flatten() {
            if seen.insert(next) {
                queue.push_back(next);
            }
        }
    }
    seen
}
