//! The node groups a service may use, every replica shape they allow, and how much traffic one
//! replica of a shape carries within the targets.

use super::{DAYS_PER_MONTH, Demand, Place};
use crate::catalogue::Catalogue;
use crate::check::catalogue::eligible;
use crate::serve::{Load, OperatingPoint, ServedModel, operating_point, replica_memory};
use crate::workload::layout::rules;
use loam_ir::types::{Arch, ServiceMode};

/// The `max_num_seqs` values the search tries, smallest first. Counted: powers of two around
/// the engines' defaults (vLLM 256, SGLang and TensorRT-LLM up to 2,048 on large cards).
const MAX_BATCHES: &[u32] = &[8, 16, 32, 64, 128, 256, 512, 1024];

/// Tokens of one prefill chunk (`--max-num-batched-tokens`): vLLM's default for chunked
/// prefill. Counted: vLLM's documented default.
const PREFILL_CHUNK: u64 = 8192;

/// Bisection steps when searching the largest rate a replica carries within the targets:
/// 2⁻²⁰ of the range, far below the plan's rounding. Counted.
const BISECTION_STEPS: u32 = 20;

/// One kind of replica of a deployment.
#[derive(Clone, Copy)]
pub(crate) struct Role<'a> {
    /// `serve`, `prefill` or `decode`.
    pub(crate) role: &'static str,
    pub(crate) place: Place<'a>,
    pub(crate) tensor: u32,
    pub(crate) pipeline: u32,
    pub(crate) expert: u32,
    pub(crate) max_batch: u32,
    pub(crate) max_model_len: u32,
    /// Replicas at the busiest hour.
    pub(crate) replicas: u64,
    /// Requests per second one replica of this role carries within the targets.
    pub(crate) capacity: f64,
}

impl Role<'_> {
    /// Devices of one replica.
    pub(crate) fn devices_per_replica(&self) -> u64 {
        u64::from(self.tensor) * u64::from(self.pipeline)
    }

    /// `--max-num-batched-tokens`: one prefill chunk, at least one token per sequence.
    pub(crate) fn max_batched_tokens(&self) -> u64 {
        PREFILL_CHUNK.max(u64::from(self.max_batch))
    }

    /// `H20 tp4` (`tp8 pp2`, `ep8` for MoE).
    pub(crate) fn shape_label(&self) -> String {
        let mut s = format!("{} tp{}", self.place.device.id.value, self.tensor);
        if self.pipeline > 1 {
            s.push_str(&format!(" pp{}", self.pipeline));
        }
        if self.expert > 1 {
            s.push_str(&format!(" ep{}", self.expert));
        }
        s
    }
}

/// One way to serve the traffic at the busiest hour.
pub(crate) struct Deployment<'a> {
    /// One role (aggregated) or two (prefill, decode).
    pub(crate) roles: Vec<Role<'a>>,
    /// The whole service at the busiest hour: its rate and tokens, each replica's latency.
    pub(crate) point: OperatingPoint,
    /// Requests per second one replica (aggregated) or the deployment per prefill replica
    /// (disaggregated) carries within the targets.
    pub(crate) capacity: f64,
    /// Requests in flight per replica at capacity, the autoscaler's target.
    pub(crate) concurrency_at_capacity: f64,
    /// KV transfer of a mean prompt, disaggregated only.
    pub(crate) kv_transfer_s: Option<f64>,
    /// The heaviest load the plan says meets the targets: one replica at `capacity`
    /// (aggregated), or the whole deployment at the largest rate it carries (disaggregated).
    pub(crate) at_capacity: Option<CapacityPoint>,
}

/// An operating point at capacity and the devices that generate its tokens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CapacityPoint {
    /// The point.
    pub(crate) point: OperatingPoint,
    /// Devices of the replica (aggregated) or of the deployment (disaggregated).
    pub(crate) devices: u64,
}

impl Deployment<'_> {
    pub(crate) fn mode(&self) -> ServiceMode {
        if self.roles.len() > 1 {
            ServiceMode::Disaggregated
        } else {
            ServiceMode::Aggregated
        }
    }

    /// Devices at the busiest hour.
    pub(crate) fn devices(&self) -> u64 {
        self.roles
            .iter()
            .map(|r| r.devices_per_replica() * r.replicas)
            .sum()
    }

    /// `H20 tp4 ×6`, `prefill H100_SXM tp2 ×2 + decode H20 tp4 ×5`.
    pub(crate) fn label(&self) -> String {
        let parts: Vec<String> = self
            .roles
            .iter()
            .map(|r| {
                let prefix = if r.role == "serve" {
                    String::new()
                } else {
                    format!("{} ", r.role)
                };
                format!("{prefix}{} ×{}", r.shape_label(), r.replicas)
            })
            .collect();
        parts.join(" + ")
    }

    /// Cost of the busiest hour.
    pub(crate) fn cost_per_hour(&self) -> f64 {
        self.roles
            .iter()
            .map(|r| (r.devices_per_replica() * r.replicas) as f64 * r.place.price)
            .sum()
    }

    /// Replicas of each role at hour `hour` (at least one of each: a service stays up).
    pub(crate) fn replicas_at(&self, demand: &Demand<'_>, hour: usize) -> Vec<u64> {
        let share = demand.profile.get(hour).copied().unwrap_or(1.0);
        self.roles
            .iter()
            .map(|r| {
                let load = self.point.requests_per_s * share;
                if r.capacity > 0.0 {
                    ((load / r.capacity).ceil() as u64).clamp(1, r.replicas.max(1))
                } else {
                    r.replicas
                }
            })
            .collect()
    }

    /// Device-hours per day following the hourly profile.
    pub(crate) fn device_hours_per_day(&self, demand: &Demand<'_>) -> f64 {
        (0..24)
            .map(|h| {
                self.replicas_at(demand, h)
                    .iter()
                    .zip(&self.roles)
                    .map(|(n, r)| (n * r.devices_per_replica()) as f64)
                    .sum::<f64>()
            })
            .sum()
    }

    /// Cost of a month following the hourly profile.
    pub(crate) fn cost_per_month(&self, demand: &Demand<'_>) -> f64 {
        let per_day: f64 = (0..24)
            .map(|h| {
                self.replicas_at(demand, h)
                    .iter()
                    .zip(&self.roles)
                    .map(|(n, r)| (n * r.devices_per_replica()) as f64 * r.place.price)
                    .sum::<f64>()
            })
            .sum();
        per_day * DAYS_PER_MONTH
    }

    /// Energy of a month in kWh: each device at its typical draw, times the site's PUE.
    pub(crate) fn energy_kwh_per_month(&self, demand: &Demand<'_>) -> f64 {
        self.kwh_and_carbon(demand).0
    }

    /// CO2 of a month in kg at each site's grid intensity.
    pub(crate) fn carbon_kg_per_month(&self, demand: &Demand<'_>) -> f64 {
        self.kwh_and_carbon(demand).1
    }

    fn kwh_and_carbon(&self, demand: &Demand<'_>) -> (f64, f64) {
        let mut kwh = 0.0;
        let mut kg = 0.0;
        for h in 0..24 {
            for (n, r) in self.replicas_at(demand, h).iter().zip(&self.roles) {
                let e = (n * r.devices_per_replica()) as f64
                    * r.place.device.typical_watts
                    * r.place.site.pue
                    / 1000.0
                    * DAYS_PER_MONTH;
                kwh += e;
                kg += e * r.place.site.carbon_g_per_kwh / 1000.0;
            }
        }
        (kwh, kg)
    }

    /// Requests in flight per replica at capacity.
    pub(crate) fn concurrency_per_replica(&self) -> f64 {
        self.concurrency_at_capacity
    }

    /// Output tokens per second per device at capacity (the Pareto front's axis): what a
    /// device yields when its replica is as busy as the targets allow.
    pub(crate) fn throughput_per_device(&self) -> f64 {
        let devices: u64 = self
            .roles
            .iter()
            .map(|r| r.devices_per_replica() * r.replicas)
            .sum();
        if devices == 0 {
            return 0.0;
        }
        self.point.output_tokens_per_s / devices as f64
    }
}

/// The node groups `demand`'s service may use, and why each other group of an allowed device
/// type may not.
pub(crate) fn places<'a>(
    demand: &Demand<'a>,
    catalogue: &'a Catalogue,
) -> (Vec<Place<'a>>, Vec<String>) {
    let service = demand.service;
    let resources = &service.resources;
    let tenant = demand.pool.tenant(&service.tenant.value);
    let precision = service.serve.precision.value;
    let mut places = Vec::new();
    let mut skipped = Vec::new();
    for (site, group) in demand.pool.node_groups() {
        let id = group.device.value.as_str();
        if !eligible::device_allowed(service, id)
            || !eligible::site_allowed(service, tenant, &site.name.value)
        {
            continue;
        }
        let place = format!("`{}` at {}", group.name.value, site.name.value);
        let Some(device) = catalogue.device(id) else {
            continue;
        };
        if !device.serves(precision) {
            skipped.push((format!("no {precision} tensor rate"), id.to_string(), place));
            continue;
        }
        let engine = match &service.serve.engine {
            Some(e) => e.value,
            None => device.vendor_facts.default_engine,
        };
        if !device.vendor_facts.runs(engine) {
            skipped.push((
                format!("{engine} does not run on {} devices", device.vendor),
                id.to_string(),
                place,
            ));
            continue;
        }
        // A tenant with quotas serves only on the device types it has a quota for, and holds at
        // most its guaranteed + elastic share of one, as its jobs do (`plan/placement.rs`): a
        // Deployment is outside Kueue, so nothing on the cluster would stop it.
        let mut quota = u64::MAX;
        if let Some(t) = tenant.filter(|t| !t.quota.is_empty()) {
            let Some(q) = t.quota.iter().find(|q| q.device.value == id) else {
                skipped.push((
                    format!("tenant `{}` has no quota for it", t.name.value),
                    id.to_string(),
                    place,
                ));
                continue;
            };
            quota = u64::from(q.guaranteed.value) + u64::from(q.elastic.value);
        }
        let max_devices = resources.max_devices.as_ref().map_or(u64::MAX, |m| m.value);
        let price = demand
            .pool
            .convert(
                group.price_per_device_hour,
                &demand.pool.currency.value,
                &demand.currency,
            )
            .unwrap_or(group.price_per_device_hour);
        places.push(Place {
            site,
            group,
            device,
            engine,
            available: group.devices().min(max_devices).min(quota),
            price,
        });
    }
    (places, skipped_notes(skipped))
}

/// One sentence per reason a device type was left out: `not considered: A100_SXM_80GB,
/// Ascend910B (no fp8 tensor rate)`.
fn skipped_notes(mut skipped: Vec<(String, String, String)>) -> Vec<String> {
    skipped.sort();
    let mut notes: Vec<(String, Vec<String>)> = Vec::new();
    for (reason, device, _) in skipped {
        match notes.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, devices)) if devices.contains(&device) => {}
            Some((_, devices)) => devices.push(device),
            None => notes.push((reason, vec![device])),
        }
    }
    notes
        .into_iter()
        .map(|(reason, devices)| format!("not considered: {} ({reason})", devices.join(", ")))
        .collect()
}

/// Every (tensor, pipeline, expert) a replica on `place` may have: tensor a power of two up to
/// a node that the heads divide, pipeline across whole nodes, expert over the tensor ranks of
/// an MoE model; the spec's pins respected.
pub(crate) fn degrees(demand: &Demand<'_>, place: &Place<'_>) -> Vec<(u32, u32, u32)> {
    let serve = &demand.service.serve;
    let model = &demand.service.model;
    let dpn = place.group.devices_per_node.value.max(1);
    let mut out = Vec::new();
    let mut tensor = 1u32;
    while tensor <= dpn {
        let pinned_ok = serve
            .tensor
            .as_ref()
            .is_none_or(|t| t.value == u64::from(tensor));
        let heads_ok =
            rules::serving_tensor(model.heads, model.kv_heads, u64::from(tensor)).is_ok();
        if pinned_ok && heads_ok {
            for pipeline in [1u32, 2, 4, 8, 16] {
                // A pipeline crosses nodes only with full nodes of tensor ranks.
                if pipeline > 1 && tensor < dpn {
                    continue;
                }
                if serve
                    .pipeline
                    .as_ref()
                    .is_some_and(|p| p.value != u64::from(pipeline))
                {
                    continue;
                }
                if u64::from(tensor) * u64::from(pipeline) > place.available {
                    continue;
                }
                let expert = match model.arch {
                    Arch::Moe => {
                        let experts = model.experts.unwrap_or(1);
                        match &serve.expert {
                            Some(e) => e.value as u32,
                            None if tensor > 1 && experts.is_multiple_of(u64::from(tensor)) => {
                                tensor
                            }
                            None => 1,
                        }
                    }
                    Arch::Dense => 1,
                };
                out.push((tensor, pipeline, expert));
            }
        }
        tensor = tensor.saturating_mul(2);
        if tensor == 0 {
            break;
        }
    }
    out
}

/// Whether `point` meets every target of `demand`.
pub(crate) fn meets(demand: &Demand<'_>, point: &OperatingPoint) -> bool {
    point.stable
        && demand.ttft.is_none_or(|t| point.ttft_s <= t)
        && demand.tpot.is_none_or(|t| point.tpot_s <= t)
        && demand.e2e.is_none_or(|t| point.e2e_s <= t)
}

/// The largest value in `(0, high]` for which `ok` holds, by bisection; 0 when none does.
pub(crate) fn largest(high: f64, ok: impl Fn(f64) -> bool) -> f64 {
    let mut lo = 0.0;
    let mut hi = high;
    if ok(hi) {
        return hi;
    }
    for _ in 0..BISECTION_STEPS {
        let mid = (lo + hi) / 2.0;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Adds the best aggregated deployment of every replica shape on `place` to `out`; shapes that
/// cannot serve within the targets add a sentence to `rejected`.
pub(crate) fn aggregated<'a>(
    demand: &Demand<'a>,
    model: &ServedModel,
    place: &Place<'a>,
    out: &mut Vec<Deployment<'a>>,
    rejected: &mut Vec<String>,
) {
    let serve = &demand.service.serve;
    for (tensor, pipeline, expert) in degrees(demand, place) {
        let mut best: Option<Deployment<'a>> = None;
        let mut why_not: Option<String> = None;
        let batches: Vec<u32> = match &serve.max_batch {
            Some(b) => vec![u32::try_from(b.value).unwrap_or(u32::MAX)],
            None => MAX_BATCHES.to_vec(),
        };
        for max_batch in batches {
            let role = Role {
                role: "serve",
                place: *place,
                tensor,
                pipeline,
                expert,
                max_batch,
                max_model_len: demand.max_model_len,
                replicas: 1,
                capacity: 0.0,
            };
            let shape = role.shape();
            let memory = replica_memory(model, &shape);
            if !memory.fits {
                why_not.get_or_insert_with(|| {
                    format!(
                        "{}: the weights ({}) leave no room for one {}-token request's KV cache",
                        role.shape_label(),
                        loam_ir::display::bytes(memory.weights_bytes),
                        demand.max_model_len
                    )
                });
                continue;
            }
            let Some(deployment) = size(demand, model, role) else {
                let point = operating_point(
                    model,
                    &shape,
                    &demand.traffic,
                    Load::Rate(1e-3),
                    demand.fraction,
                );
                why_not.get_or_insert_with(|| {
                    format!(
                        "{}: even one request at a time takes {} to the first token and {} per token",
                        role.shape_label(),
                        loam_ir::display::latency(point.ttft_s),
                        loam_ir::display::latency(point.tpot_s),
                    )
                });
                continue;
            };
            let better = best.as_ref().is_none_or(|b| {
                (deployment.devices(), -deployment.capacity) < (b.devices(), -b.capacity)
            });
            if better && deployment.devices() <= place.available {
                best = Some(deployment);
            } else if deployment.devices() > place.available && best.is_none() {
                why_not = Some(format!(
                    "{}: needs {} devices, the group has {} for this service",
                    deployment
                        .roles
                        .first()
                        .map_or(String::new(), Role::shape_label),
                    deployment.devices(),
                    place.available
                ));
            }
        }
        match best {
            Some(b) => out.push(b),
            None => rejected.extend(why_not),
        }
    }
}

/// Sizes one aggregated role for the busiest hour: the capacity of one replica within the
/// targets and the replicas the load needs. `None` when no load meets the targets.
fn size<'a>(demand: &Demand<'a>, model: &ServedModel, role: Role<'a>) -> Option<Deployment<'a>> {
    let shape = role.shape();
    let at = |load| operating_point(model, &shape, &demand.traffic, load, demand.fraction);
    let offline = at(Load::Offline);
    let (capacity, replicas, point) = match (demand.peak_rate, demand.concurrency) {
        (Some(rate), _) => {
            let capacity = largest(offline.requests_per_s, |r| {
                meets(demand, &at(Load::Rate(r)))
            });
            if capacity <= 0.0 {
                return None;
            }
            let replicas = (rate / capacity).ceil().max(1.0);
            (capacity, replicas, at(Load::Rate(rate / replicas)))
        }
        (None, Some(concurrency)) => {
            let most = largest(concurrency.max(1.0), |c| {
                meets(demand, &at(Load::Concurrency(c.max(1.0).floor())))
            })
            .floor();
            if most < 1.0 {
                return None;
            }
            let replicas = (concurrency / most).ceil().max(1.0);
            let point = at(Load::Concurrency((concurrency / replicas).ceil()));
            (point.requests_per_s, replicas, point)
        }
        (None, None) => return None,
    };
    let at_capacity = at(Load::Rate(capacity));
    let role = Role {
        replicas: replicas as u64,
        capacity,
        ..role
    };
    Some(Deployment {
        roles: vec![role],
        point: OperatingPoint {
            requests_per_s: point.requests_per_s * replicas,
            output_tokens_per_s: point.output_tokens_per_s * replicas,
            ..point
        },
        capacity,
        concurrency_at_capacity: (capacity
            * (at_capacity.ttft_p50_s + demand.traffic.output[0] * at_capacity.tpot_p50_s))
            .min(f64::from(role.max_batch)),
        kv_transfer_s: None,
        at_capacity: Some(CapacityPoint {
            point: at_capacity,
            devices: role.devices_per_replica(),
        }),
    })
}
