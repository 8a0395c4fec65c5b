//! Reading catalogue files: YAML → [`super::raw`] records → [`super::model`] values in base units.
//!
//! Everything a single file can get wrong is found here (schema, units, ranges, currencies,
//! identifiers); what needs several files (references, reachability, quotas) is in
//! [`super::validate`].

use super::codes;
use super::model::{self, Catalogue, Device, Pool, spanned};
use super::raw::{self, Loc};
use super::values::{Money, out_of_range};
use super::yaml::Source;
use crate::runs::store::diagnostics as run_store_diagnostics;
use crate::units::Dimension;
use loam_ir::checkpoint::CheckpointPath;
use loam_ir::cluster::vendor::Vendor;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::span::{FileId, Span, Spanned};
use std::collections::{BTreeMap, BTreeSet};

mod bounds;
mod efficiency;
mod file;
mod numbers;
mod published;
mod run;
mod stack;
mod vendor;

/// What a catalogue file describes, decided by the folder it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Device,
    Pool,
    Vendor,
    /// A runs store file, `runs/<site>/<name>.csv` (`crate::runs::store`): checked against the
    /// loaded catalogue, and not part of its digest (a measured run changes no plan by itself).
    Runs,
    /// A site's calibration, `calibration/<pool>-<site>.yaml` (`crate::calibrate::site`):
    /// attached to its site once the pools are loaded.
    Calibration,
}

pub(super) fn kind_of(path: &str) -> Option<Kind> {
    if crate::runs::store::is_store_path(path) {
        return Some(Kind::Runs);
    }
    let normal = path.replace('\\', "/");
    let parent = normal.rsplit('/').nth(1).unwrap_or("");
    match parent {
        "devices" => Some(Kind::Device),
        "pools" => Some(Kind::Pool),
        "vendors" => Some(Kind::Vendor),
        "calibration" => Some(Kind::Calibration),
        _ => None,
    }
}

/// The file name without folder and `.yaml` / `.yml` extension.
pub(crate) fn stem(path: &str) -> &str {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    name.strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .unwrap_or(name)
}

/// Loads and validates a whole catalogue from `(file id, display path, text)` triples.
///
/// A file under a `devices/` folder is a device, one under `pools/` a pool, one under
/// `vendors/` a vendor. The shipped vendors ([`super::builtin::shipped_vendors`]) are known to
/// every catalogue; a `vendors/` file of the same name replaces one. Returns the catalogue when
/// nothing is wrong, and every diagnostic found, sorted by path and position so the result does
/// not depend on the order of `sources`.
pub fn load(sources: &[(FileId, &str, &str)]) -> (Option<Catalogue>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut devices: Vec<Device> = Vec::new();
    let mut pools: Vec<(Pool, Source<'_>)> = Vec::new();
    let mut vendors: Vec<Vendor> = Vec::new();
    let mut runs: Vec<(FileId, &str, &str)> = Vec::new();
    let mut calibrations: Vec<(FileId, &str, &str)> = Vec::new();
    let mut ordered: Vec<&(FileId, &str, &str)> = sources.iter().collect();
    ordered.sort_by(|a, b| (a.1, a.2).cmp(&(b.1, b.2)));
    let own_vendors: BTreeSet<&str> = ordered
        .iter()
        .filter(|(_, path, _)| kind_of(path) == Some(Kind::Vendor))
        .map(|(_, path, _)| stem(path))
        .collect();
    // The shipped vendors the catalogue does not replace, under file ids of their own (counted
    // down from the largest, far from the caller's): a test keeps them free of diagnostics.
    let shipped: Vec<(FileId, &str, &str)> = super::builtin::shipped_vendors()
        .into_iter()
        .filter(|(path, _)| !own_vendors.contains(stem(path)))
        .zip((0..u32::MAX).rev())
        .map(|((path, text), id)| (FileId(id), path, text))
        .collect();
    for (file, path, text) in shipped.iter().chain(ordered.iter().copied()) {
        let source = Source {
            file: *file,
            path,
            text,
        };
        match kind_of(path) {
            Some(Kind::Vendor) => {
                let mut cx = Cx {
                    source,
                    diags: &mut diags,
                };
                if let Some(vendor) = cx.vendor() {
                    vendors.push(vendor);
                }
            }
            Some(Kind::Device) => {
                let mut cx = Cx {
                    source,
                    diags: &mut diags,
                };
                if let Some(device) = cx.device() {
                    devices.push(device);
                }
            }
            Some(Kind::Pool) => {
                let mut cx = Cx {
                    source,
                    diags: &mut diags,
                };
                if let Some(pool) = cx.pool() {
                    pools.push((pool, source));
                }
            }
            Some(Kind::Runs) => runs.push((*file, path, text)),
            Some(Kind::Calibration) => calibrations.push((*file, path, text)),
            None => diags.push(
                Diagnostic::error(
                    codes::UNKNOWN_FILE,
                    format!(
                        "expected a file under `devices/`, `pools/` or `vendors/`, found `{path}`"
                    ),
                    Span::new(*file, 0, 0),
                    "not a device, pool or vendor file",
                )
                .with_help(
                    "move the file into the catalogue's `devices/`, `pools/` or `vendors/` folder",
                ),
            ),
        }
    }
    let mut catalogue = super::validate::assemble(vendors, devices, pools, &mut diags);
    for (file, path, text) in calibrations {
        crate::calibrate::site::attach(&mut catalogue, file, path, text, &mut diags);
    }
    for (file, path, text) in runs {
        diags.extend(run_store_diagnostics(file, path, text, &catalogue));
    }
    let mut paths: BTreeMap<FileId, &str> = BTreeMap::new();
    for (file, path, _) in sources {
        paths.insert(*file, path);
    }
    diags.sort_by(|a, b| {
        let key = |d: &Diagnostic| {
            (
                d.span.and_then(|s| paths.get(&s.file).copied()),
                d.span.map(|s| (s.start, s.end)),
                d.code,
            )
        };
        key(a).cmp(&key(b)).then_with(|| a.message.cmp(&b.message))
    });
    diags.dedup();
    let has_errors = diags.iter().any(Diagnostic::is_error);
    (catalogue.sources, catalogue.digest) = fingerprint(sources);
    ((!has_errors).then_some(catalogue), diags)
}

/// Every source's `(display path, text)`, sorted, and the catalogue's digest over them: what a
/// plan records it was read against.
pub(super) fn fingerprint(sources: &[(FileId, &str, &str)]) -> (Vec<(String, String)>, String) {
    let mut texts: Vec<(String, String)> = sources
        .iter()
        .map(|(_, p, t)| ((*p).to_string(), (*t).to_string()))
        .collect();
    texts.sort();
    // A vendor file identical to loam's own of that name replaces nothing, so it does not count
    // in the digest: `./specs` read from disk and the built-in catalogue hash alike.
    let shipped: BTreeMap<&str, &str> = super::builtin::shipped_vendors()
        .into_iter()
        .map(|(path, text)| (stem(path), text))
        .collect();
    let counted: Vec<(String, String)> = texts
        .iter()
        .filter(|(path, text)| {
            kind_of(path) != Some(Kind::Runs)
                && (kind_of(path) != Some(Kind::Vendor)
                    || shipped.get(stem(path)).is_none_or(|own| own != text))
        })
        .cloned()
        .collect();
    let digest = super::digest::digest(&counted);
    (texts, digest)
}

/// The loading context of one file.
struct Cx<'a, 'd> {
    source: Source<'a>,
    diags: &'d mut Vec<Diagnostic>,
}

impl Cx<'_, '_> {
    fn span<T>(&self, loc: &Loc<T>) -> Span {
        self.source.span(&loc.referenced)
    }

    fn spanned<T: Clone>(&self, loc: &Loc<T>) -> Spanned<T> {
        spanned(loc.value.clone(), self.span(loc))
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn device(&mut self) -> Option<Device> {
        let raw: raw::DeviceFile = self.read_as("device", |f: &raw::DeviceFile| &f.id)?;
        let mut peak_flops = BTreeMap::new();
        for (precision, text) in &raw.peak_dense {
            if let Some(v) =
                self.positive_quantity(text, Dimension::FlopRate, "peak_dense", bounds::FLOP_RATE)
            {
                peak_flops.insert(*precision, spanned(v, self.span(text)));
            }
        }
        let fp4_peak = raw.peak_fp4.as_ref().and_then(|text| {
            self.positive_quantity(text, Dimension::FlopRate, "peak_fp4", bounds::FLOP_RATE)
        });
        let precisions: Vec<_> = raw.precisions.iter().map(|p| p.value).collect();
        for (precision, text) in &raw.peak_dense {
            if !precisions.contains(precision) {
                let d = Diagnostic::error(
                    codes::INCONSISTENT,
                    format!("peak figure for `{precision}`, which `precisions` does not list"),
                    self.span(text),
                    "a figure for an unlisted precision",
                )
                .with_help(format!(
                    "add `{precision}` to `precisions` or remove this figure"
                ));
                self.push(d);
            }
        }
        let precisions_span = match (raw.precisions.first(), raw.precisions.last()) {
            (Some(a), Some(b)) => self.span(a).join(self.span(b)),
            _ => self.span(&raw.id),
        };
        let features_span = match (raw.features.first(), raw.features.last()) {
            (Some(a), Some(b)) => self.span(a).join(self.span(b)),
            _ => self.span(&raw.id),
        };
        let memory = self.positive_quantity(
            &raw.memory,
            Dimension::Bytes,
            "memory",
            bounds::DEVICE_MEMORY,
        );
        let memory_bandwidth = self.positive_quantity(
            &raw.memory_bandwidth,
            Dimension::Bandwidth,
            "memory_bandwidth",
            bounds::BANDWIDTH,
        );
        let efficiency = self.efficiency(raw.efficiency.as_ref(), &precisions, &raw.status);
        let scale_up = self.positive_quantity(
            &raw.scale_up.bandwidth,
            Dimension::Bandwidth,
            "scale_up.bandwidth",
            bounds::BANDWIDTH,
        );
        let devices_per_node = self.count(
            &raw.devices_per_node,
            1,
            bounds::MAX_PER_NODE,
            "devices_per_node",
        );
        let scale_up_domain = self.scale_up_domain(&raw, devices_per_node);
        let tdp =
            self.positive_quantity(&raw.power.tdp, Dimension::Power, "power.tdp", bounds::POWER);
        let typical = self.positive_quantity(
            &raw.power.typical,
            Dimension::Power,
            "power.typical",
            bounds::POWER,
        );
        if let (Some(tdp), Some(typical)) = (tdp, typical)
            && typical > tdp
        {
            let d = Diagnostic::error(
                codes::INCONSISTENT,
                format!("typical power above the power limit: expected at most {tdp} W, found {typical} W"),
                self.span(&raw.power.typical),
                "more than `power.tdp`",
            )
            .with_related(self.span(&raw.power.tdp), "the power limit")
            .with_help("typical draw under load cannot exceed the board power limit; check both figures");
            self.push(d);
        }
        let mtbf = self.positive_quantity(
            &raw.reliability.mtbf,
            Dimension::Duration,
            "reliability.mtbf",
            bounds::MTBF,
        );
        let best_published = self.best_published(&raw, &peak_flops);
        self.version(&raw.software.min_version, "software.min_version");
        let mut slice_profiles = Vec::new();
        for profile in raw.slicing.iter().flat_map(|s| &s.profiles) {
            let slice_memory = self.positive_quantity(
                &profile.memory,
                Dimension::Bytes,
                "memory",
                bounds::DEVICE_MEMORY,
            );
            if !(profile.compute.value > 0.0 && profile.compute.value <= 1.0) {
                let d = out_of_range(
                    self.span(&profile.compute),
                    "compute",
                    "a fraction in (0, 1]",
                    &profile.compute.value.to_string(),
                );
                self.push(d);
            }
            if let (Some(slice), Some(total)) = (slice_memory, memory)
                && slice > total
            {
                let d = Diagnostic::error(
                    codes::INCONSISTENT,
                    format!(
                        "slice memory above the device memory: expected at most {}, found {}",
                        loam_ir::display::bytes(total),
                        loam_ir::display::bytes(slice)
                    ),
                    self.span(&profile.memory),
                    "more than the whole device",
                )
                .with_related(self.span(&raw.memory), "the device memory")
                .with_help("a slice holds part of the device's memory; correct the profile");
                self.push(d);
            }
            if let Some(slice) = slice_memory {
                slice_profiles.push(model::SliceProfile {
                    name: profile.name.value.clone(),
                    memory_bytes: slice,
                    compute_fraction: profile.compute.value,
                });
            }
        }
        Some(Device {
            id: self.spanned(&raw.id),
            name: raw.name.value,
            vendor_span: self.span(&raw.vendor),
            vendor_facts: Vendor::unresolved(&raw.vendor.value),
            vendor: raw.vendor.value,
            status: spanned(raw.status.value, self.source.span(&raw.status.referenced)),
            source: raw.source.value,
            peak_flops,
            fp4_peak,
            precisions: spanned(precisions, precisions_span),
            features: spanned(
                raw.features.iter().map(|f| f.value).collect(),
                features_span,
            ),
            memory_bytes: spanned(memory?, self.span(&raw.memory)),
            memory_bandwidth: memory_bandwidth?,
            efficiency: efficiency?,
            efficiency_source: raw
                .efficiency
                .as_ref()
                .map(|e| e.source.value.clone())
                .unwrap_or_default(),
            fabric: raw.scale_up.fabric.value,
            scale_up_bandwidth_bidir: scale_up?,
            peer_to_peer: raw.scale_up.peer_to_peer.is_none_or(|p| p.value),
            devices_per_node: spanned(devices_per_node?, self.span(&raw.devices_per_node)),
            scale_up_domain: scale_up_domain?,
            tdp_watts: tdp?,
            typical_watts: typical?,
            stack: raw.software.stack.value,
            min_version: self.spanned(&raw.software.min_version),
            kubernetes_resource: raw.kubernetes_resource.value,
            slicing: raw.slicing.as_ref().map(|s| s.kind.value),
            slice_profiles,
            mtbf_s: mtbf?,
            mtbf_basis: raw.reliability.basis.value,
            best_published,
            file: self.source.path.to_string(),
        })
    }

    /// Devices on one scale-up fabric: `scale_up.domain`, a whole number of nodes, or one node
    /// when absent. `None` (with an error) when it is not a multiple of `devices_per_node`.
    fn scale_up_domain(&mut self, raw: &raw::DeviceFile, per_node: Option<u32>) -> Option<u32> {
        let per_node = per_node?;
        let Some(domain) = raw.scale_up.domain.as_ref() else {
            return Some(per_node);
        };
        let counted = self.count(domain, 1, bounds::MAX_DEVICES, "scale_up.domain")?;
        if counted < per_node || !counted.is_multiple_of(per_node) {
            let d = Diagnostic::error(
                codes::INCONSISTENT,
                format!(
                    "a scale-up domain is a whole number of nodes: expected a multiple of {per_node}, found {counted}"
                ),
                self.span(domain),
                format!("not a multiple of {per_node} devices per node"),
            )
            .with_related(self.span(&raw.devices_per_node), "the node's devices")
            .with_help("give the devices one fabric joins (GB200 NVL72: 72, 18 nodes of 4), or leave `domain` out for one node");
            self.push(d);
            return None;
        }
        Some(counted)
    }

    fn pool(&mut self) -> Option<Pool> {
        let raw: raw::PoolFile = self.read_as("pool", |f: &raw::PoolFile| &f.id)?;
        let base = raw.currency.base.value.clone();
        if !crate::units::is_currency_code(&base) {
            let d = Diagnostic::error(
                codes::UNKNOWN_CURRENCY,
                format!("expected an ISO 4217 currency code, found `{base}`"),
                self.span(&raw.currency.base),
                "not a currency code",
            )
            .with_help("write three capital letters such as `CNY`, `USD` or `EUR`");
            self.push(d);
        }
        let mut rates = BTreeMap::new();
        for (code, rate) in &raw.currency.rates {
            if !crate::units::is_currency_code(code) {
                let d = Diagnostic::error(
                    codes::UNKNOWN_CURRENCY,
                    format!("expected an ISO 4217 currency code, found `{code}`"),
                    self.span(rate),
                    "rate of a malformed currency code",
                )
                .with_help("write three capital letters such as `USD` or `EUR`");
                self.push(d);
            }
            if self.scalar_in(rate, "rates", bounds::EXCHANGE_RATE) {
                rates.insert(code.clone(), rate.value);
            }
        }
        let money = Money {
            base: base.clone(),
            rates: rates.clone(),
        };
        let sites: Vec<_> = raw
            .sites
            .iter()
            .filter_map(|s| self.site(s, &money))
            .collect();
        let links: Vec<_> = raw
            .links
            .iter()
            .filter_map(|l| self.link(l, &money))
            .collect();
        let tenants: Vec<_> = raw.tenants.iter().filter_map(|t| self.tenant(t)).collect();
        let stack = self.pool_stack(raw.stack.as_ref());
        if sites.len() != raw.sites.len()
            || links.len() != raw.links.len()
            || tenants.len() != raw.tenants.len()
        {
            return None;
        }
        let stack = stack?;
        Some(Pool {
            id: self.spanned(&raw.id),
            name: raw.name.value,
            currency: self.spanned(&raw.currency.base),
            rates,
            sites,
            links,
            tenants,
            stack,
            file: self.source.path.to_string(),
        })
    }

    fn site(&mut self, raw: &raw::Site, money: &Money) -> Option<model::Site> {
        self.identifier(&raw.name, "site name");
        let storage = self.positive_quantity(
            &raw.storage_bandwidth,
            Dimension::Bandwidth,
            "storage_bandwidth",
            bounds::BANDWIDTH,
        );
        // NaN and infinity fail every comparison, so `x < 0` let `.nan` through (M6): each
        // figure is checked for what it must be, finite and inside its range.
        let carbon_ok = self.scalar_in(
            &raw.carbon_intensity,
            "carbon_intensity",
            bounds::CARBON_INTENSITY,
        );
        let pue_ok = self.scalar_in(&raw.pue, "pue", bounds::PUE);
        let hours = &raw.power_price.per_kwh;
        if hours.value.len() != 24 {
            let d = Diagnostic::error(
                codes::OUT_OF_RANGE,
                format!(
                    "expected 24 hourly power prices, found {}",
                    hours.value.len()
                ),
                self.span(hours),
                "one price per hour of the day, 0 to 23",
            )
            .with_help("list the price per kWh for each of the 24 hours, starting at midnight");
            self.push(d);
        }
        let mut prices_ok = true;
        for price in &hours.value {
            prices_ok &= self.scalar_in(price, "per_kwh", bounds::PRICE);
        }
        let rate = money.rate(&raw.power_price.currency.value);
        if rate.is_none() {
            let d = money.unknown(
                &raw.power_price.currency.value,
                self.span(&raw.power_price.currency),
            );
            self.push(d);
        }
        let nodes_per_block = self.count(
            &raw.topology.nodes_per_block,
            1,
            bounds::MAX_NODES,
            "nodes_per_block",
        );
        let uplink = self.positive_quantity(
            &raw.topology.block_uplink,
            Dimension::Bandwidth,
            "block_uplink",
            bounds::BANDWIDTH,
        );
        let latency = self.positive_quantity(
            &raw.topology.latency,
            Dimension::Duration,
            "latency",
            bounds::LATENCY,
        );
        let mut datasets = Vec::new();
        for dataset in &raw.datasets {
            if let Some(size) = self.positive_quantity(
                &dataset.size,
                Dimension::Bytes,
                "size",
                bounds::DATASET_SIZE,
            ) {
                datasets.push(model::Dataset {
                    name: dataset.name.value.clone(),
                    size_bytes: size,
                });
            }
        }
        let groups: Vec<_> = raw
            .node_groups
            .iter()
            .filter_map(|g| self.node_group(g, money))
            .collect();
        let complete =
            groups.len() == raw.node_groups.len() && datasets.len() == raw.datasets.len();
        let reaches = raw
            .reaches
            .iter()
            .flatten()
            .map(|r| self.spanned(r))
            .collect();
        let run = self.site_run(raw);
        let rate = rate?;
        (complete && carbon_ok && pue_ok && prices_ok).then_some(())?;
        let (restart_s, topology_levels) = run?;
        Some(model::Site {
            name: self.spanned(&raw.name),
            region: raw.region.value.clone(),
            city: raw.city.value.clone(),
            carbon_g_per_kwh: raw.carbon_intensity.value,
            pue: raw.pue.value,
            storage_bandwidth: storage?,
            power_price_per_kwh: hours.value.iter().map(|p| p.value * rate).collect(),
            nodes_per_block: nodes_per_block?,
            block_uplink: uplink?,
            latency_s: latency?,
            datasets,
            node_groups: groups,
            reaches,
            restart_s,
            topology_levels,
            time_zone: raw.time_zone.as_ref().map(|z| z.value.clone()),
            calibration: None,
        })
    }

    fn node_group(&mut self, raw: &raw::NodeGroup, money: &Money) -> Option<model::NodeGroup> {
        let nodes = self.count(&raw.nodes, 1, bounds::MAX_NODES, "nodes");
        let per_node = self.count(
            &raw.devices_per_node,
            1,
            bounds::MAX_PER_NODE,
            "devices_per_node",
        );
        let free = self.count(&raw.free_devices, 0, bounds::MAX_DEVICES, "free_devices");
        if let (Some(nodes), Some(per_node), Some(free)) = (nodes, per_node, free) {
            let total = u64::from(nodes) * u64::from(per_node);
            if u64::from(free) > total {
                let d = Diagnostic::error(
                    codes::INCONSISTENT,
                    format!("more free devices than the group has: expected at most {total}, found {free}"),
                    self.span(&raw.free_devices),
                    format!("more than {nodes} nodes × {per_node} devices"),
                )
                .with_related(self.span(&raw.nodes), "the group's nodes")
                .with_help("free devices are a part of `nodes` × `devices_per_node`; correct one of them");
                self.push(d);
            }
        }
        let nics = self.count(&raw.nics.count, 1, bounds::MAX_PER_NODE, "nics.count");
        let nic_bandwidth = self.positive_quantity(
            &raw.nics.bandwidth,
            Dimension::Bandwidth,
            "nics.bandwidth",
            bounds::BANDWIDTH,
        );
        let price = self.money(&raw.price, money, "price");
        self.version(&raw.software.version, "software.version");
        let run = self.node_run(raw);
        Some(model::NodeGroup {
            name: self.spanned(&raw.name),
            device: self.spanned(&raw.device),
            nodes: nodes?,
            devices_per_node: spanned(per_node?, self.span(&raw.devices_per_node)),
            free_devices: free?,
            nics: nics?,
            nic_bandwidth: nic_bandwidth?,
            price_per_device_hour: price?,
            price_written: self.spanned(&raw.price),
            driver: raw.software.driver.value.clone(),
            software_version: self.spanned(&raw.software.version),
            slurm_partition: raw.slurm_partition.value.clone(),
            node_labels: raw.node_labels.clone(),
            run: run?,
        })
    }

    fn link(&mut self, raw: &raw::Link, money: &Money) -> Option<model::Link> {
        let latency = self.positive_quantity(
            &raw.latency,
            Dimension::Duration,
            "latency",
            bounds::LATENCY,
        );
        let bandwidth = self.positive_quantity(
            &raw.bandwidth,
            Dimension::Bandwidth,
            "bandwidth",
            bounds::BANDWIDTH,
        );
        let egress = self.money(&raw.egress_price, money, "egress_price");
        let ends = match raw.between.value.as_slice() {
            [a, b] => Some((self.spanned(a), self.spanned(b))),
            other => {
                let d = Diagnostic::error(
                    codes::OUT_OF_RANGE,
                    format!("expected 2 sites in `between`, found {}", other.len()),
                    self.span(&raw.between),
                    "a link joins exactly two sites",
                )
                .with_help("write `between: [site_a, site_b]`; a link works in both directions");
                self.push(d);
                None
            }
        };
        let (a, b) = ends?;
        Some(model::Link {
            a,
            b,
            latency_s: latency?,
            bandwidth: bandwidth?,
            egress_per_gb: egress?,
        })
    }

    fn tenant(&mut self, raw: &raw::Tenant) -> Option<model::Tenant> {
        self.identifier(&raw.name, "tenant name");
        let root = &raw.checkpoint_root.value;
        let checkpoint_root = match CheckpointPath::parse(root) {
            Ok(path) => Some(spanned(path, self.span(&raw.checkpoint_root))),
            Err(problem) => {
                let d = Diagnostic::error(
                    codes::INVALID_NAME,
                    format!(
                        "expected a clean absolute path, found `{}`",
                        root.escape_debug()
                    ),
                    self.span(&raw.checkpoint_root),
                    problem.to_string(),
                )
                .with_help("write the checkpoint root like `/ckpt/nlp`");
                self.push(d);
                None
            }
        };
        let mut quota = Vec::new();
        for q in &raw.quota {
            let guaranteed = self.count(&q.guaranteed, 0, bounds::MAX_DEVICES, "guaranteed");
            let elastic = self.count(&q.elastic, 0, bounds::MAX_DEVICES, "elastic");
            if let (Some(g), Some(e)) = (guaranteed, elastic) {
                quota.push(model::Quota {
                    device: self.spanned(&q.device),
                    guaranteed: spanned(g, self.span(&q.guaranteed)),
                    elastic: spanned(e, self.span(&q.elastic)),
                });
            }
        }
        (quota.len() == raw.quota.len()).then_some(())?;
        Some(model::Tenant {
            name: self.spanned(&raw.name),
            checkpoint_root: checkpoint_root?,
            kubernetes_namespace: raw.kubernetes_namespace.value.clone(),
            slurm_account: raw.slurm_account.value.clone(),
            queue: raw.queue.value.clone(),
            sites: raw
                .sites
                .iter()
                .flatten()
                .map(|s| self.spanned(s))
                .collect(),
            quota,
        })
    }
}
