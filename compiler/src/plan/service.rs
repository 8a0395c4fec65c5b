//! Planning a model service: device type × tensor/pipeline/expert degree × batch ×
//! (dis)aggregation under the latency targets, the Pareto front of throughput per device
//! against latency, and the deployment the goal chooses (docs/serving.md).
//!
//! `candidates.rs` builds every replica shape a node group allows and finds how many requests
//! per second one replica sustains within the targets; `disaggregated.rs` pairs prefill and
//! decode shapes; `choose.rs` ranks the deployments, keeps the Pareto front and writes `why`;
//! this module turns the winner into the Plan IR.

mod candidates;
mod choose;
mod disaggregated;

use crate::catalogue::{Catalogue, Device, NodeGroup, Pool, Site};
use crate::check::{LoadSpec, Service, model_dims};
use crate::serve::{ReplicaShape, ServedModel, Traffic, kv_bytes_per_token, replica_memory};
use candidates::Deployment;
use loam_ir::plan::{
    AutoscalingIr, CapacityPointIr, GroupIr, MoneyIr, ParetoPointIr, RoleIr, ServedModelIr,
    ServiceEstimateIr, ServicePlan, TrafficIr,
};
use loam_ir::types::Engine;

/// Bytes in a GiB.
use loam_ir::units::GIB;

/// Days in the month a service's monthly figures are given for. Counted: a 30-day month.
const DAYS_PER_MONTH: f64 = 30.0;

/// What every candidate is measured against: the service's model, traffic and targets.
pub(crate) struct Demand<'a> {
    pub(crate) service: &'a Service,
    pub(crate) pool: &'a Pool,
    /// Requests per second at the busiest hour; for a concurrency load, `None`.
    pub(crate) peak_rate: Option<f64>,
    /// Requests in flight at once, for a concurrency load.
    pub(crate) concurrency: Option<f64>,
    pub(crate) traffic: Traffic,
    /// The targets' percentile as a fraction (0.99).
    pub(crate) fraction: f64,
    pub(crate) ttft: Option<f64>,
    pub(crate) tpot: Option<f64>,
    pub(crate) e2e: Option<f64>,
    /// Each hour's share of the busiest hour's load.
    pub(crate) profile: [f64; 24],
    /// The currency costs are given in: the budget's, else the pool's.
    pub(crate) currency: String,
    /// The monthly budget in `currency`, if any.
    pub(crate) budget: Option<f64>,
    /// The longest context a request may use.
    pub(crate) max_model_len: u32,
}

/// One node group a service may use, with its device.
#[derive(Clone, Copy)]
pub(crate) struct Place<'a> {
    pub(crate) site: &'a Site,
    pub(crate) group: &'a NodeGroup,
    pub(crate) device: &'a Device,
    /// The engine on this device: the spec's, else the vendor's default.
    pub(crate) engine: Engine,
    /// Devices the service may take from the group (its size and `max_devices`).
    pub(crate) available: u64,
    /// Price per device-hour in the demand's currency.
    pub(crate) price: f64,
}

/// Plans `service` (from spec file `file`) on `catalogue`.
pub fn plan_service(service: &Service, file: &str, catalogue: &Catalogue) -> ServicePlan {
    let mut plan = empty_plan(service, file);
    let Some(pool) = catalogue.pool(&service.resources.pool.value) else {
        plan.reasons.push(format!(
            "the catalogue has no pool `{}`",
            service.resources.pool.value
        ));
        return plan;
    };
    let demand = demand(service, pool);
    let (places, skipped) = candidates::places(&demand, catalogue);
    plan.notes.extend(skipped);
    let dims = model_dims(&service.model);
    let served = |engine: Engine| {
        ServedModel::new(
            dims.clone(),
            service.serve.precision.value,
            service
                .serve
                .kv_cache
                .as_ref()
                .map_or(service.serve.precision.value.default_kv_cache(), |k| {
                    k.value
                }),
            engine,
        )
    };
    let mut deployments: Vec<Deployment<'_>> = Vec::new();
    let mut rejected: Vec<String> = Vec::new();
    let mode = service.serve.disaggregate.value;
    if mode != loam_ir::types::Disaggregation::Disaggregated {
        for place in &places {
            let model = served(place.engine);
            candidates::aggregated(&demand, &model, place, &mut deployments, &mut rejected);
        }
    }
    if mode != loam_ir::types::Disaggregation::Aggregated {
        disaggregated::pairs(&demand, &places, &served, &mut deployments, &mut rejected);
    }
    keep_cheapest_per_label(&demand, &mut deployments);
    if let Some(first) = places.first() {
        plan.engine = first.engine;
    }
    let model = served(plan.engine);
    plan.model = model_ir(service, &model, demand.max_model_len);
    plan.traffic = traffic_ir(&demand, None);
    let chosen = choose::choose(&demand, &deployments);
    let Some((best, front, why)) =
        chosen.and_then(|(b, front, why)| deployments.get(b).map(|best| (best, front, why)))
    else {
        plan.reasons = choose::infeasible_reasons(&demand, &places, &deployments, rejected);
        return plan;
    };
    plan.feasible = true;
    if let Some(first) = best.roles.first() {
        plan.engine = first.place.engine;
    }
    plan.model = model_ir(service, &served(plan.engine), demand.max_model_len);
    plan.traffic = traffic_ir(&demand, Some(best));
    plan.mode = Some(best.mode());
    plan.roles = best
        .roles
        .iter()
        .map(|r| role_ir(r, &served(r.place.engine)))
        .collect();
    plan.estimate = Some(estimate_ir(&demand, best));
    plan.autoscaling = Some(autoscaling_ir(&demand, best));
    plan.pareto = front
        .iter()
        .filter_map(|&i| deployments.get(i))
        .map(|d| pareto_ir(&demand, d, std::ptr::eq(d, best)))
        .collect();
    plan.why = why;
    for note in best.roles.iter().filter_map(|r| r.place.calibration_note()) {
        if !plan.notes.contains(&note) {
            plan.notes.push(note);
        }
    }
    plan
}

/// One deployment per label (the same replicas with different batch limits read the same):
/// the cheapest, then the lowest latency.
fn keep_cheapest_per_label(demand: &Demand<'_>, deployments: &mut Vec<Deployment<'_>>) {
    deployments.sort_by(|a, b| {
        a.label()
            .cmp(&b.label())
            .then_with(|| {
                a.cost_per_month(demand)
                    .total_cmp(&b.cost_per_month(demand))
            })
            .then_with(|| a.point.tpot_s.total_cmp(&b.point.tpot_s))
    });
    deployments.dedup_by(|later, first| later.label() == first.label());
}

fn empty_plan(service: &Service, file: &str) -> ServicePlan {
    ServicePlan {
        kind: "service".to_string(),
        service: service.name.value.clone(),
        file: file.to_string(),
        feasible: false,
        reasons: Vec::new(),
        tenant: service.tenant.value.clone(),
        priority: service.priority,
        pool: service.resources.pool.value.clone(),
        model: ServedModelIr {
            weights: service.serve.weights.value.clone(),
            params: 0.0,
            active_params: 0.0,
            layers: service.model.layers,
            hidden: service.model.hidden,
            heads: service.model.heads,
            kv_heads: service.model.kv_heads,
            experts: service.model.experts,
            precision: service.serve.precision.value,
            kv_cache: service.serve.precision.value.default_kv_cache(),
            max_model_len: service.model.seq_len,
            kv_bytes_per_token: 0.0,
        },
        traffic: TrafficIr {
            input_mean: 0.0,
            input_p99: 0.0,
            output_mean: 0.0,
            output_p99: 0.0,
            peak_rate: 0.0,
            concurrency: None,
            profile: Vec::new(),
            percentile: service.targets.percentile,
            ttft_s: None,
            tpot_s: None,
            e2e_s: None,
        },
        engine: service
            .serve
            .engine
            .as_ref()
            .map_or(Engine::Vllm, |e| e.value),
        mode: None,
        roles: Vec::new(),
        estimate: None,
        autoscaling: None,
        pareto: Vec::new(),
        why: String::new(),
        notes: Vec::new(),
    }
}

fn demand<'a>(service: &'a Service, pool: &'a Pool) -> Demand<'a> {
    let t = &service.traffic;
    let (peak_rate, concurrency) = match &t.load {
        LoadSpec::Rate(r) => (Some(r.value), None),
        LoadSpec::Concurrency(c) => (None, Some(c.value as f64)),
    };
    let mut profile = [1.0; 24];
    if let Some(p) = &t.profile {
        for (slot, share) in profile.iter_mut().zip(&p.value) {
            *slot = *share;
        }
    }
    let currency = service
        .goal
        .budget
        .as_ref()
        .map(|b| b.value.1.clone())
        .filter(|c| pool.convert(1.0, &pool.currency.value, c).is_some())
        .unwrap_or_else(|| pool.currency.value.clone());
    let budget = service
        .goal
        .budget
        .as_ref()
        .and_then(|b| pool.convert(b.value.0, &b.value.1, &currency));
    // The engine is started with the context the spec asks for, `seq_len`, never less: a
    // request longer than the traffic's p99 but within `seq_len` must not be refused by the
    // engine. Every replica shape is sized to hold one such request (`replica_memory`), and
    // `loam check` refuses a service no replica can hold it for (L2119, L2120).
    let max_model_len = service.model.seq_len;
    Demand {
        service,
        pool,
        peak_rate,
        concurrency,
        traffic: Traffic {
            input: [t.input.mean, t.input.p50, t.input.p99],
            output: [t.output.mean, t.output.p50, t.output.p99],
        },
        fraction: service.targets.percentile.fraction(),
        ttft: service.targets.ttft.as_ref().map(|v| v.value),
        tpot: service.targets.tpot.as_ref().map(|v| v.value),
        e2e: service.targets.e2e.as_ref().map(|v| v.value),
        profile,
        currency,
        budget,
        max_model_len: u32::try_from(max_model_len.max(1)).unwrap_or(u32::MAX),
    }
}

fn model_ir(service: &Service, model: &ServedModel, max_model_len: u32) -> ServedModelIr {
    ServedModelIr {
        weights: service.serve.weights.value.clone(),
        params: model.params,
        active_params: model.active_params,
        layers: service.model.layers,
        hidden: service.model.hidden,
        heads: service.model.heads,
        kv_heads: service.model.kv_heads,
        experts: service.model.experts,
        precision: model.precision,
        kv_cache: model.kv_cache,
        max_model_len: u64::from(max_model_len),
        kv_bytes_per_token: kv_bytes_per_token(model),
    }
}

fn traffic_ir(demand: &Demand<'_>, best: Option<&Deployment<'_>>) -> TrafficIr {
    let t = &demand.traffic;
    let profile = match &demand.service.traffic.profile {
        Some(p) => p.value.clone(),
        None => Vec::new(),
    };
    TrafficIr {
        input_mean: t.input[0],
        input_p99: t.input[2],
        output_mean: t.output[0],
        output_p99: t.output[2],
        peak_rate: best.map_or(demand.peak_rate.unwrap_or(0.0), |b| b.point.requests_per_s),
        concurrency: demand.concurrency.map(|c| c as u64),
        profile,
        percentile: demand.service.targets.percentile,
        ttft_s: demand.ttft,
        tpot_s: demand.tpot,
        e2e_s: demand.e2e,
    }
}

fn role_ir(role: &candidates::Role<'_>, model: &ServedModel) -> RoleIr {
    let shape = role.shape();
    let memory = replica_memory(model, &shape);
    let per_replica = u64::from(shape.devices());
    let dpn = u64::from(role.place.group.devices_per_node.value.max(1));
    let devices = per_replica * role.replicas;
    let node = super::node::node_ir_at(
        role.place.site,
        role.place.group,
        role.place.device,
        per_replica.min(dpn),
    );
    RoleIr {
        role: role.role.to_string(),
        replicas: role.replicas,
        tensor: u64::from(role.tensor),
        pipeline: u64::from(role.pipeline),
        expert: u64::from(role.expert),
        devices_per_replica: per_replica,
        nodes_per_replica: per_replica.div_ceil(dpn),
        max_batch: u64::from(role.max_batch),
        max_batched_tokens: role.max_batched_tokens(),
        memory_fraction: memory.memory_fraction,
        kv_cache_tokens: memory.kv_tokens.floor(),
        weights_per_device_gib: loam_ir::display::significant(memory.weights_bytes / GIB),
        node_devices: Some(dpn),
        group: GroupIr {
            site: role.place.site.name.value.clone(),
            device: role.place.device.id.value.clone(),
            nodes: if per_replica >= dpn {
                role.replicas * per_replica.div_ceil(dpn)
            } else {
                devices.div_ceil(dpn)
            },
            devices,
            node_group: role.place.group.name.value.clone(),
            devices_per_node: per_replica.min(dpn),
            k8s_resource: role.place.device.kubernetes_resource.clone(),
            node_labels: role.place.group.node_labels.clone(),
            slurm_partition: Some(role.place.group.slurm_partition.clone())
                .filter(|p| !p.is_empty()),
            block: None,
            topology: None,
            preemptible_devices: 0,
            slice: None,
            tensor: Some(u64::from(role.tensor)),
            layout: None,
            sequences_per_step: None,
            stages: Vec::new(),
            throughput_uncertainty: Some(role.place.throughput_uncertainty()),
            mfu: None,
            model_tflops_per_device: None,
            memory_per_device_gib: Some(loam_ir::display::significant(
                (memory.weights_bytes + memory.overhead_bytes + memory.kv_bytes) / GIB,
            )),
            memory_gib: None,
            node: Some(node),
        },
    }
}

fn money(amount: f64, currency: &str) -> MoneyIr {
    MoneyIr {
        amount: loam_ir::display::significant(amount),
        currency: currency.to_string(),
    }
}

fn estimate_ir(demand: &Demand<'_>, d: &Deployment<'_>) -> ServiceEstimateIr {
    let p = &d.point;
    let devices = d.devices();
    let per_hour = d.cost_per_hour();
    let tokens_per_hour = p.output_tokens_per_s * 3600.0;
    let per_million = if tokens_per_hour > 0.0 {
        per_hour / tokens_per_hour * 1e6
    } else {
        0.0
    };
    ServiceEstimateIr {
        ttft_p50_s: round_ms(p.ttft_p50_s),
        ttft_s: round_ms(p.ttft_s),
        tpot_p50_s: round_ms(p.tpot_p50_s),
        tpot_s: round_ms(p.tpot_s),
        e2e_s: round_ms(p.e2e_s),
        output_tokens_per_s: loam_ir::display::significant(p.output_tokens_per_s),
        output_tokens_per_s_per_device: loam_ir::display::significant(
            p.output_tokens_per_s / devices.max(1) as f64,
        ),
        capacity_per_replica: loam_ir::display::significant(d.capacity),
        batch: loam_ir::display::significant(p.batch),
        kv_transfer_s: d.kv_transfer_s.map(round_ms),
        devices,
        device_hours_per_day: loam_ir::display::significant(d.device_hours_per_day(demand)),
        cost_per_hour: money(per_hour, &demand.currency),
        cost_per_month: money(d.cost_per_month(demand), &demand.currency),
        cost_per_million_tokens: money(per_million, &demand.currency),
        energy_kwh_per_month: loam_ir::display::significant(d.energy_kwh_per_month(demand)),
        carbon_kg_per_month: loam_ir::display::significant(d.carbon_kg_per_month(demand)),
        throughput_uncertainty: d
            .roles
            .iter()
            .map(|r| r.place.throughput_uncertainty())
            .fold(0.0, f64::max),
        at_capacity: d.at_capacity.as_ref().map(|at| CapacityPointIr {
            ttft_p50_s: round_ms(at.point.ttft_p50_s),
            tpot_p50_s: round_ms(at.point.tpot_p50_s),
            output_tokens_per_s_per_device: loam_ir::display::significant(
                at.point.output_tokens_per_s / at.devices.max(1) as f64,
            ),
        }),
    }
}

fn autoscaling_ir(demand: &Demand<'_>, d: &Deployment<'_>) -> AutoscalingIr {
    let hourly: Vec<Vec<u64>> = (0..24).map(|h| d.replicas_at(demand, h)).collect();
    let per_role = |pick: fn(u64, u64) -> u64, init: u64| -> Vec<u64> {
        (0..d.roles.len())
            .map(|i| {
                hourly
                    .iter()
                    .filter_map(|row| row.get(i).copied())
                    .fold(init, pick)
            })
            .collect()
    };
    AutoscalingIr {
        min_replicas: per_role(u64::min, u64::MAX),
        max_replicas: per_role(u64::max, 0),
        hourly,
        target_concurrency_per_replica: loam_ir::display::significant(d.concurrency_per_replica()),
    }
}

fn pareto_ir(demand: &Demand<'_>, d: &Deployment<'_>, chosen: bool) -> ParetoPointIr {
    let per_hour = d.cost_per_hour();
    let tokens_per_hour = d.point.output_tokens_per_s * 3600.0;
    ParetoPointIr {
        deployment: d.label(),
        mode: d.mode(),
        devices: d.devices(),
        output_tokens_per_s_per_device: loam_ir::display::significant(d.throughput_per_device()),
        ttft_s: round_ms(d.point.ttft_s),
        tpot_s: round_ms(d.point.tpot_s),
        cost_per_million_tokens: money(
            if tokens_per_hour > 0.0 {
                per_hour / tokens_per_hour * 1e6
            } else {
                0.0
            },
            &demand.currency,
        ),
        cost_per_month: money(d.cost_per_month(demand), &demand.currency),
        chosen,
    }
}

/// Seconds to the millisecond (a tenth of one below 10 ms), so plans do not carry noise.
fn round_ms(s: f64) -> f64 {
    if s < 0.01 {
        (s * 1e4).round() / 1e4
    } else {
        (s * 1e3).round() / 1e3
    }
}

/// The replica shape of `role` as the serving model takes it.
impl<'a> candidates::Role<'a> {
    pub(crate) fn shape(&self) -> ReplicaShape<'a> {
        ReplicaShape {
            device: self.place.device,
            tensor: self.tensor,
            pipeline: self.pipeline,
            expert: self.expert,
            max_batch: self.max_batch,
            max_model_len: self.max_model_len,
            devices_per_node: self.place.group.devices_per_node.value,
            scale_out_bandwidth: self.place.group.scale_out_per_device(),
            efficiency: self.place.calibration().map_or(1.0, |c| c.efficiency),
        }
    }
}

impl Place<'_> {
    /// The calibration of this place's engine at its site (`calibrate --fit` on the site's
    /// serving runs), if any: where the serving planner reads its engine efficiency.
    pub(crate) fn calibration(&self) -> Option<&crate::calibrate::site::EngineCalibration> {
        self.site
            .calibration
            .as_ref()
            .and_then(|c| c.serving.get(self.engine.as_str()))
    }

    /// The relative throughput uncertainty a deployment here states: the site's serving runs'
    /// when its engine is calibrated there, else the device's figures'.
    pub(crate) fn throughput_uncertainty(&self) -> f64 {
        self.calibration()
            .map_or(self.device.efficiency.uncertainty, |c| {
                c.throughput_uncertainty
            })
    }

    /// The note of a calibrated place: `calibrated on 3 serving runs at zhongwei (vllm), median
    /// error 5.0 % (±9.6 %, 2026-12-01 to 2026-12-03)`.
    fn calibration_note(&self) -> Option<String> {
        self.calibration().map(|c| {
            format!(
                "calibrated on {} serving run{} at {} ({}), median error {:.1} % (±{:.1} %, {} \
                 to {})",
                c.runs,
                if c.runs == 1 { "" } else { "s" },
                self.site.name.value,
                self.engine.as_str(),
                c.median_abs_error_pct,
                100.0 * c.throughput_uncertainty,
                c.first_run,
                c.last_run
            )
        })
    }
}

#[cfg(test)]
mod tests;
