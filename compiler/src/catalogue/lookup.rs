//! Lookups the checker and planner use: devices, pools, sites, tenants and node groups by name,
//! names for did-you-mean, free devices, currency conversion, routes between sites.

use super::model::{Catalogue, Device, Link, NodeGroup, Pool, Site, Tenant};
use crate::hardware::{ClusterFigures, DeviceFigures};
use loam_ir::types::Precision;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What an id names in the catalogue (for `loam catalogue show ID`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Found<'a> {
    /// A device type.
    Device(&'a Device),
    /// A pool.
    Pool(&'a Pool),
    /// A site of a pool.
    Site(&'a Pool, &'a Site),
}

impl Catalogue {
    /// The device with id `id`.
    pub fn device(&self, id: &str) -> Option<&Device> {
        self.devices.get(id)
    }

    /// The pool with id `id`.
    pub fn pool(&self, id: &str) -> Option<&Pool> {
        self.pools.get(id)
    }

    /// Every device id, sorted (candidates for did-you-mean).
    pub fn device_ids(&self) -> Vec<&str> {
        self.devices.keys().map(String::as_str).collect()
    }

    /// Every pool id, sorted.
    pub fn pool_ids(&self) -> Vec<&str> {
        self.pools.keys().map(String::as_str).collect()
    }

    /// The pool marked as default: `xirang` when present, else the first by id.
    pub fn default_pool(&self) -> Option<&Pool> {
        self.pools
            .get("xirang")
            .or_else(|| self.pools.values().next())
    }

    /// What `id` names: a device, a pool, a site (`site` or `pool/site`), in that order.
    pub fn find(&self, id: &str) -> Option<Found<'_>> {
        if let Some(d) = self.devices.get(id) {
            return Some(Found::Device(d));
        }
        if let Some(p) = self.pools.get(id) {
            return Some(Found::Pool(p));
        }
        if let Some((pool, site)) = id.split_once('/') {
            let pool = self.pools.get(pool)?;
            return pool.site(site).map(|s| Found::Site(pool, s));
        }
        self.pools
            .values()
            .find_map(|p| p.site(id).map(|s| Found::Site(p, s)))
    }

    /// Every id [`Catalogue::find`] accepts, sorted (candidates for did-you-mean).
    pub fn all_ids(&self) -> Vec<String> {
        let mut ids: BTreeSet<String> = self.devices.keys().cloned().collect();
        ids.extend(self.pools.keys().cloned());
        for pool in self.pools.values() {
            for site in &pool.sites {
                ids.insert(site.name.value.clone());
                ids.insert(format!("{}/{}", pool.id.value, site.name.value));
            }
        }
        ids.into_iter().collect()
    }

    /// Where the devices of type `device` are: `(pool, site, free, total)` for every site that
    /// has any, sorted by pool and site.
    pub fn placements(&self, device: &str) -> Vec<(&str, &str, u64, u64)> {
        let mut out = Vec::new();
        for pool in self.pools.values() {
            for site in &pool.sites {
                let (free, total) = site.devices_of(device);
                if total > 0 {
                    out.push((
                        pool.id.value.as_str(),
                        site.name.value.as_str(),
                        free,
                        total,
                    ));
                }
            }
        }
        out.sort();
        out
    }

    /// The sha256 content hash of the catalogue, `sha256:<hex>` (computed once, at loading).
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The sha256 hash, `sha256:<hex>`, of the catalogue parts a plan of a job in pool `pool`
    /// can read: the pool as loaded and the device entry of every device type its node groups
    /// use (see `catalogue/digest.rs`). Equal digests and equal specs give equal plans; a change
    /// anywhere else in the catalogue leaves it as it is. A pool the catalogue lacks has a
    /// digest of its own.
    pub fn inputs_digest(&self, pool: &str) -> String {
        let found = self.pools.get(pool);
        let mut devices: Vec<(&str, Option<&Device>)> = found
            .map(|p| {
                p.device_ids()
                    .into_iter()
                    .map(|id| (id, self.devices.get(id)))
                    .collect()
            })
            .unwrap_or_default();
        // The plausibility guard holds a plan to the best published runs of every device (its
        // vendor's, or the catalogue's best), so the devices with such a run are inputs too.
        for (id, device) in &self.devices {
            if !device.best_published.is_empty() && !devices.iter().any(|(d, _)| d == id) {
                devices.push((id.as_str(), Some(device)));
            }
        }
        // Conservative: what cannot be hashed part by part is keyed by the whole catalogue.
        super::digest::inputs(pool, found, &devices).unwrap_or_else(|| self.digest.clone())
    }
}

impl Device {
    /// The figures the cost model reads. The scale-up bandwidth is one direction, half the
    /// bidirectional catalogue figure, or what host-staged collectives reach of it on a device
    /// without peer-to-peer ([`crate::cost::transport::scale_up_one_way`]).
    pub fn figures(&self) -> DeviceFigures {
        DeviceFigures {
            id: self.id.value.clone(),
            peak_flops: self.peak_flops.iter().map(|(p, v)| (*p, v.value)).collect(),
            memory_bytes: self.memory_bytes.value,
            memory_bandwidth: self.memory_bandwidth,
            scale_up_bandwidth: crate::cost::transport::scale_up_one_way(
                self.scale_up_bandwidth_bidir,
                self.peer_to_peer,
            ),
            devices_per_node: self.devices_per_node.value,
            scale_up_domain: self.scale_up_domain,
            tdp_watts: self.tdp_watts,
            efficiency: self.efficiency.clone(),
        }
    }

    /// Whether the device trains in `precision`.
    pub fn supports(&self, precision: Precision) -> bool {
        self.precisions.value.contains(&precision)
    }

    /// Whether a service may store and multiply its weights in `precision` here: the device has
    /// a tensor rate for the GEMMs ([`ServePrecision::compute`]: fp8 on an fp8 peak, bf16, int8
    /// and int4 on a bf16 peak, fp16 on an fp16 peak) or, for fp4, an fp4 rate
    /// ([`Device::fp4_peak`]). The serving model times GEMMs on exactly these rates.
    ///
    /// [`ServePrecision::compute`]: loam_ir::types::ServePrecision::compute
    pub fn serves(&self, precision: loam_ir::types::ServePrecision) -> bool {
        match precision.compute() {
            Some(p) => self.peak(p).is_some(),
            None => self.fp4_peak.is_some(),
        }
    }

    /// Whether the device has `feature`.
    pub fn has_feature(&self, feature: super::Feature) -> bool {
        self.features.value.contains(&feature)
    }

    /// Peak dense FLOP/s in `precision`, when the catalogue has a figure.
    pub fn peak(&self, precision: Precision) -> Option<f64> {
        self.peak_flops.get(&precision).map(|v| v.value)
    }

    /// The best published measurement in `precision`, when a published run is known.
    pub fn best_published(&self, precision: Precision) -> Option<&super::BestPublished> {
        self.best_published.get(&precision)
    }
}

impl Site {
    /// `(free, total)` devices of type `device` at this site.
    pub fn devices_of(&self, device: &str) -> (u64, u64) {
        self.node_groups
            .iter()
            .filter(|g| g.device.value == device)
            .fold((0, 0), |(f, t), g| {
                (f + u64::from(g.free_devices), t + g.devices())
            })
    }

    /// The dataset cached here under `name`.
    pub fn dataset(&self, name: &str) -> Option<&super::Dataset> {
        self.datasets.iter().find(|d| d.name == name)
    }

    /// Mean electricity price over the day, per kWh in the pool's base currency.
    pub fn mean_power_price(&self) -> f64 {
        let n = self.power_price_per_kwh.len().max(1) as f64;
        self.power_price_per_kwh.iter().sum::<f64>() / n
    }

    /// Every device type present at the site, sorted.
    pub fn device_ids(&self) -> Vec<&str> {
        let ids: BTreeSet<&str> = self
            .node_groups
            .iter()
            .map(|g| g.device.value.as_str())
            .collect();
        ids.into_iter().collect()
    }
}

impl NodeGroup {
    /// The cluster figures of this group for the cost model; `site` gives the latency, and its
    /// calibration for `device`, when it has one, its fitted factors
    /// (`calibrate::fit::Factors::apply`).
    pub fn cluster_figures(&self, device: &Device, site: &Site) -> ClusterFigures {
        let mut figures = self.cluster_figures_uncalibrated(device, site);
        if let Some(calibrated) = site
            .calibration
            .as_ref()
            .and_then(|c| c.devices.get(&device.id.value))
        {
            calibrated.factors().apply(&mut figures);
        }
        figures
    }

    /// The cluster figures of this group from the catalogue's figures alone, without the site's
    /// calibration: what a calibration is fitted against.
    pub fn cluster_figures_uncalibrated(&self, device: &Device, site: &Site) -> ClusterFigures {
        ClusterFigures {
            device: device.figures(),
            devices_per_node: self.devices_per_node.value,
            nodes: self.nodes,
            node_network_bandwidth: f64::from(self.nics) * self.nic_bandwidth,
            nics_per_node: self.nics,
            network_latency_s: site.latency_s,
            block: (site.nodes_per_block > 0 && site.block_uplink > 0.0).then_some(
                crate::hardware::SwitchBlock {
                    nodes: site.nodes_per_block,
                    uplink: site.block_uplink,
                },
            ),
            fitted: crate::cost::FittedConstants::SHIPPED,
        }
    }
}

impl Pool {
    /// The site named `name`.
    pub fn site(&self, name: &str) -> Option<&Site> {
        self.sites.iter().find(|s| s.name.value == name)
    }

    /// Every site name, in file order.
    pub fn site_names(&self) -> Vec<&str> {
        self.sites.iter().map(|s| s.name.value.as_str()).collect()
    }

    /// The tenant named `name`.
    pub fn tenant(&self, name: &str) -> Option<&Tenant> {
        self.tenants.iter().find(|t| t.name.value == name)
    }

    /// Every tenant name, in file order.
    pub fn tenant_names(&self) -> Vec<&str> {
        self.tenants.iter().map(|t| t.name.value.as_str()).collect()
    }

    /// The node group named `name` and its site.
    pub fn node_group(&self, name: &str) -> Option<(&Site, &NodeGroup)> {
        self.node_groups().find(|(_, g)| g.name.value == name)
    }

    /// Every node group with its site, in file order.
    pub fn node_groups(&self) -> impl Iterator<Item = (&Site, &NodeGroup)> {
        self.sites
            .iter()
            .flat_map(|s| s.node_groups.iter().map(move |g| (s, g)))
    }

    /// Every device type in the pool, sorted.
    pub fn device_ids(&self) -> Vec<&str> {
        let ids: BTreeSet<&str> = self
            .node_groups()
            .map(|(_, g)| g.device.value.as_str())
            .collect();
        ids.into_iter().collect()
    }

    /// `(free, total)` devices of type `device` in the whole pool.
    pub fn devices_of(&self, device: &str) -> (u64, u64) {
        self.sites
            .iter()
            .map(|s| s.devices_of(device))
            .fold((0, 0), |(f, t), (a, b)| (f + a, t + b))
    }

    /// Free devices of type `device` per site, sorted by site name.
    pub fn free_by_site(&self, device: &str) -> BTreeMap<&str, u64> {
        self.sites
            .iter()
            .map(|s| (s.name.value.as_str(), s.devices_of(device).0))
            .filter(|(_, free)| *free > 0)
            .collect()
    }

    /// All devices in the pool.
    pub fn total_devices(&self) -> u64 {
        self.node_groups().map(|(_, g)| g.devices()).sum()
    }

    /// Every currency the pool can convert, the base first.
    pub fn currencies(&self) -> Vec<&str> {
        let mut out = vec![self.currency.value.as_str()];
        out.extend(
            self.rates
                .keys()
                .map(String::as_str)
                .filter(|c| *c != self.currency.value),
        );
        out
    }

    /// Converts `amount` from currency `from` to currency `to`; `None` when either is unknown.
    pub fn convert(&self, amount: f64, from: &str, to: &str) -> Option<f64> {
        let rate = |c: &str| {
            if c == self.currency.value {
                Some(1.0)
            } else {
                self.rates.get(c).copied()
            }
        };
        Some(amount * rate(from)? / rate(to)?)
    }

    /// The direct link between sites `a` and `b`, either way round.
    pub fn link(&self, a: &str, b: &str) -> Option<&Link> {
        self.links
            .iter()
            .find(|l| (l.a.value == a && l.b.value == b) || (l.a.value == b && l.b.value == a))
    }
}

/// The route with the fewest links from site `from` to site `to` (ties: the first link in file
/// order wins); empty when `from == to`, `None` when no route exists.
pub fn route<'a>(pool: &'a Pool, from: &str, to: &str) -> Option<Vec<&'a Link>> {
    let mut previous: BTreeMap<&str, (&str, &Link)> = BTreeMap::new();
    let mut seen = BTreeSet::from([from]);
    let mut queue = VecDeque::from([from]);
    while let Some(site) = queue.pop_front() {
        if site == to {
            let mut path = Vec::new();
            let mut at = to;
            while let Some((prev, link)) = previous.get(at) {
                path.push(*link);
                at = prev;
            }
            path.reverse();
            return Some(path);
        }
        for link in &pool.links {
            let next = if link.a.value == site {
                link.b.value.as_str()
            } else if link.b.value == site {
                link.a.value.as_str()
            } else {
                continue;
            };
            if seen.insert(next) {
                previous.insert(next, (site, link));
                queue.push_back(next);
            }
        }
    }
    None
}
