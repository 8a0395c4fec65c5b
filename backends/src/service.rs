//! Model services (`services[]` of the Plan IR, kind `service`): per service a folder with what
//! runs its replicas on each target. What every target needs is checked and derived once here
//! ([`ServiceContext`]): the names, the tenant's places, each role's engine command
//! ([`engine::launch`]), its pods' share of a node and its replicas per hour.

pub mod engine;

use crate::escape::{is_label_key, is_label_value, is_plain_word};
use crate::refuse::{self, Workload, error};
use crate::{Manifest, Options, Target};
use engine::EngineLaunch;
use loam_ir::cluster::Tenancy;
use loam_ir::diagnostics::{Diagnostic, codes};
use loam_ir::names::{self, is_dns_label, is_env_name};
use loam_ir::plan::{RoleIr, ServicePlan, TolerationIr};
use loam_ir::types::ServiceMode;
use serde::Serialize;

/// One role of a service (`serve`, or `prefill` and `decode`) and what the launchers derive
/// from it.
#[derive(Debug, Clone, Serialize)]
pub struct RoleContext<'a> {
    /// `serve`, `prefill` or `decode`.
    pub role: String,
    /// DNS label of the role's objects: the service's name, with `-prefill` / `-decode` when
    /// disaggregated.
    pub name: String,
    /// The role as planned.
    pub ir: &'a RoleIr,
    /// The engine's command, port, health path and metric.
    pub launch: EngineLaunch,
    /// Devices one pod (one node of a replica) takes.
    pub devices_per_pod: u64,
    /// The share of a node's devices one pod takes (1: the whole node).
    pub node_share: f64,
    /// CPU cores per pod, the plan's (already the pod's share of the node; 0: not known).
    pub cpus: u64,
    /// Memory per pod in MiB (0: not known).
    pub memory_mib: u64,
    /// `/dev/shm` per pod in MiB (0: not known).
    pub shm_mib: u64,
    /// The collective library's settings from the catalogue, sorted by name.
    pub env: Vec<(String, String)>,
    /// Taints the pods tolerate.
    pub tolerations: Vec<TolerationIr>,
    /// The RDMA resource and count per pod, for replicas over several nodes.
    pub rdma: Option<(String, u64)>,
    /// Fewest replicas (the quietest hour).
    pub min_replicas: u64,
    /// Most replicas (the busiest hour).
    pub max_replicas: u64,
    /// Replicas for each hour 0–23 (empty when the plan gives none).
    pub hourly: Vec<u64>,
    /// What one Slurm task's node requests for its devices (`gres=gpu:8`, `gres=npu:8`),
    /// from the vendor's GRES.
    pub slurm_devices: String,
    /// The engine's container image on the role's vendor.
    #[serde(skip)]
    pub vendor_image: Option<String>,
}

/// Everything common to the targets for one service.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceContext<'a> {
    /// The service's name as written (escape it!).
    pub service: String,
    /// DNS-1123 name of the service's objects and folder ([`names::job_label`]).
    pub name: String,
    /// The spec file.
    pub file: String,
    /// The tenant as written.
    pub tenant: String,
    /// The tenant's places.
    pub tenancy: Tenancy,
    /// Priority keyword.
    pub priority: String,
    /// The engine keyword.
    pub engine: String,
    /// Whether prefill and decode run in separate roles behind a router.
    pub disaggregated: bool,
    /// The roles, in plan order.
    pub roles: Vec<RoleContext<'a>>,
    /// The container image of the engine.
    pub image: String,
    /// The router's container image (disaggregated services).
    pub router_image: String,
    /// The port clients use: the router's when disaggregated, else the engine's.
    pub port: u16,
    /// The storage class of the service's weight cache (ReadWriteMany, as the checkpoint
    /// volumes: `--checkpoint-storage-class`); `None`: the cluster's default class.
    pub cache_storage_class: Option<String>,
    /// Requests in flight per replica the autoscaler keeps.
    pub target_concurrency: f64,
    /// The plan.
    #[serde(skip)]
    pub plan: &'a ServicePlan,
}

impl<'a> ServiceContext<'a> {
    /// Checks `plan` and derives the common context, or reports every problem.
    pub fn new(plan: &'a ServicePlan, options: &Options) -> Result<Self, Vec<Diagnostic>> {
        let service = &plan.service;
        let mut errors = Vec::new();
        if !plan.feasible {
            return Err(vec![refuse::infeasible(
                Workload::Service,
                service,
                &plan.reasons,
            )]);
        }
        let disaggregated = match plan.mode {
            Some(ServiceMode::Aggregated) => false,
            Some(ServiceMode::Disaggregated) => true,
            None => {
                errors.push(incomplete(
                    service,
                    "its mode is neither aggregated nor disaggregated",
                ));
                false
            }
        };
        let expected: &[&str] = if disaggregated {
            &["prefill", "decode"]
        } else {
            &["serve"]
        };
        let roles_named: Vec<&str> = plan.roles.iter().map(|r| r.role.as_str()).collect();
        if roles_named != expected {
            errors.push(incomplete(
                service,
                &format!(
                    "its roles are [{}], expected [{}]",
                    roles_named.join(", "),
                    expected.join(", ")
                ),
            ));
        }
        let name = names::job_label(service).unwrap_or_else(|problem| {
            errors.push(error(
                codes::emit::UNUSABLE_NAME,
                format!(
                    "service name `{}` cannot name the service's objects and folder: {problem}",
                    service.escape_debug()
                ),
                "name the service with letters, digits and `-`",
            ));
            String::new()
        });
        let tenancy = options.tenancy(&plan.pool, &plan.tenant);
        if !is_dns_label(&tenancy.namespace) {
            errors.push(unusable(service, "tenant namespace", &tenancy.namespace));
        }
        if !is_plain_word(&tenancy.slurm_account) {
            errors.push(unusable(service, "Slurm account", &tenancy.slurm_account));
        }
        let autoscaling = plan.autoscaling.as_ref();
        let mut roles = Vec::new();
        for (index, r) in plan.roles.iter().enumerate() {
            let g = &r.group;
            let Some(vendor) = options.vendors.of_group(g) else {
                errors.push(crate::vendors::unknown_vendor(
                    &format!("service `{service}`"),
                    index,
                    g,
                ));
                continue;
            };
            if r.replicas == 0
                || r.nodes_per_replica == 0
                || r.devices_per_replica == 0
                || !r.devices_per_replica.is_multiple_of(r.nodes_per_replica)
                || r.devices_per_replica != r.tensor.saturating_mul(r.pipeline)
            {
                errors.push(incomplete(
                    service,
                    &format!(
                        "role `{}` has {} devices per replica on {} nodes with tensor {} and pipeline {}",
                        r.role, r.devices_per_replica, r.nodes_per_replica, r.tensor, r.pipeline
                    ),
                ));
                continue;
            }
            if !is_label_key(&g.k8s_resource) {
                errors.push(unusable(service, "device resource", &g.k8s_resource));
            }
            for (k, v) in &g.node_labels {
                if !is_label_key(k) || !is_label_value(v) {
                    errors.push(unusable(service, "node label", &format!("{k}={v}")));
                }
            }
            if let Some(p) = &g.slurm_partition
                && !is_plain_word(p)
            {
                errors.push(unusable(service, "Slurm partition", p));
            }
            let node = g.node.clone().unwrap_or_default();
            for (k, v) in &node.env {
                if !is_env_name(k) || v.chars().any(char::is_control) {
                    errors.push(unusable(service, "collective setting", &format!("{k}={v}")));
                }
            }
            for f in &node.slurm_features {
                if !is_plain_word(f) {
                    errors.push(unusable(service, "Slurm feature", f));
                }
            }
            let launch = match engine::launch(plan, r) {
                Ok(launch) => launch,
                Err(engine::Unsupported(why)) => {
                    errors.push(incomplete(service, &why));
                    continue;
                }
            };
            // The engines whose KV cache moves over NIXL name their own address to it.
            let nixl = launch.host_env.is_some();
            let devices_per_pod = r.devices_per_replica / r.nodes_per_replica;
            let node_share = match r.node_devices {
                Some(n) if n > 0 => (devices_per_pod as f64 / n as f64).min(1.0),
                _ => 1.0,
            };
            // The plan's node is already this pod's share of the node (the planner scales the
            // catalogue's pod size by the devices a pod takes, `plan::node::node_ir_at`):
            // scaling it again gave a 4-of-8-device pod a quarter of the node.
            let mib = |gib: f64| (gib.max(0.0) * 1024.0).round() as u64;
            let hourly: Vec<u64> = autoscaling
                .map(|a| {
                    a.hourly
                        .iter()
                        .filter_map(|h| h.get(index).copied())
                        .collect()
                })
                .unwrap_or_default();
            let pick = |v: Option<&Vec<u64>>| v.and_then(|v| v.get(index).copied());
            let max_replicas = pick(autoscaling.map(|a| &a.max_replicas))
                .unwrap_or(r.replicas)
                .max(1);
            let min_replicas = pick(autoscaling.map(|a| &a.min_replicas))
                .unwrap_or(max_replicas)
                .clamp(1, max_replicas);
            roles.push(RoleContext {
                role: r.role.clone(),
                name: if disaggregated {
                    format!("{name}-{}", names::dns_label(&r.role, 10))
                } else {
                    name.clone()
                },
                ir: r,
                launch,
                devices_per_pod,
                node_share,
                cpus: node.cpus,
                memory_mib: mib(node.memory_gib),
                shm_mib: mib(node.shm_gib),
                env: with_ucx_devices(
                    node.env
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    nixl,
                ),
                tolerations: node.tolerations.clone(),
                rdma: node
                    .rdma
                    .as_ref()
                    .filter(|_| r.nodes_per_replica > 1 || disaggregated)
                    .map(|rd| (rd.resource.clone(), rd.per_node)),
                min_replicas,
                max_replicas,
                hourly,
                slurm_devices: crate::vendors::slurm_devices_per_node(vendor, devices_per_pod),
                vendor_image: vendor.images.get(&plan.engine).cloned(),
            });
        }
        // One image for every role: the option's, else the engine's on the roles' vendor (the
        // planner runs an engine only on a vendor whose file lists it).
        let image = match &options.serving_image {
            Some(image) => Some(image.clone()),
            None => roles.first().and_then(|r| r.vendor_image.clone()),
        };
        let image = image.unwrap_or_else(|| {
            errors.push(incomplete(
                service,
                &format!(
                    "its engine `{}` has no image in its vendor's file",
                    plan.engine
                ),
            ));
            String::new()
        });
        if !errors.is_empty() {
            return Err(errors);
        }
        let router_image = engine::router_image(plan.engine).map_or_else(
            || {
                roles
                    .first()
                    .and_then(|r| r.vendor_image.clone())
                    .unwrap_or_default()
            },
            str::to_string,
        );
        let port = match (disaggregated, roles.first()) {
            (true, _) => engine::ROUTER_PORT,
            (false, Some(r)) => r.launch.port,
            (false, None) => engine::ROUTER_PORT,
        };
        Ok(ServiceContext {
            service: service.clone(),
            name,
            file: plan.file.clone(),
            tenant: plan.tenant.clone(),
            tenancy,
            priority: plan.priority.to_string(),
            engine: plan.engine.to_string(),
            disaggregated,
            roles,
            image,
            router_image,
            port,
            cache_storage_class: options.checkpoint_storage_class.clone(),
            target_concurrency: autoscaling.map_or(0.0, |a| a.target_concurrency_per_replica),
            plan,
        })
    }
}

/// `env` (sorted by name) with `UCX_NET_DEVICES` added for an engine whose KV cache moves over
/// NIXL (`nixl`), whose UCX transport otherwise picks any device, a front-end NIC or a bond
/// included (deploy review, finding 4). The devices come from the node group's `NCCL_IB_HCA` when
/// it names them exactly (`=mlx5_0,mlx5_1:1`, NCCL docs, "Environment Variables"): UCX takes
/// exact `device:port` names (UCX FAQ, "UCX_NET_DEVICES"), so NCCL's prefix form (`mlx5`) and its
/// exclusions (`^…`) give none. A catalogue that sets `UCX_NET_DEVICES` itself keeps it.
fn with_ucx_devices(mut env: Vec<(String, String)>, nixl: bool) -> Vec<(String, String)> {
    if !nixl || env.iter().any(|(k, _)| k == "UCX_NET_DEVICES") {
        return env;
    }
    let Some(exact) = env
        .iter()
        .find(|(k, _)| k == "NCCL_IB_HCA")
        .and_then(|(_, v)| v.strip_prefix('='))
    else {
        return env;
    };
    let devices: Vec<String> = exact
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        // NCCL's port defaults to 1 (the first port); UCX wants it written.
        .map(|d| {
            if d.contains(':') {
                d.to_string()
            } else {
                format!("{d}:1")
            }
        })
        .collect();
    if !devices.is_empty() {
        env.push(("UCX_NET_DEVICES".to_string(), devices.join(",")));
        env.sort();
    }
    env
}

/// Renders one service for `target`: its folder name and the files in it.
pub fn render(
    plan: &ServicePlan,
    target: Target,
    options: &Options,
) -> Result<(String, Vec<Manifest>), Vec<Diagnostic>> {
    let ctx = ServiceContext::new(plan, options)?;
    let files = target.backend().render_service(&ctx, options)?;
    Ok((ctx.name.clone(), files))
}

/// Renders `template` with `ctx`, turning a template error into L4009.
pub(crate) fn render_one(
    env: &minijinja::Environment<'_>,
    service: &str,
    template: &str,
    ctx: minijinja::Value,
) -> Result<String, Vec<Diagnostic>> {
    env.get_template(template)
        .and_then(|t| t.render(ctx))
        .map_err(|e| vec![crate::env::template_error(service, &e)])
}

fn incomplete(service: &str, why: &str) -> Diagnostic {
    refuse::incomplete(Workload::Service, service, why)
}

fn unusable(service: &str, what: &str, value: &str) -> Diagnostic {
    refuse::unusable(Workload::Service, service, what, value)
}

#[cfg(test)]
mod ucx_tests {
    use super::with_ucx_devices;

    fn env(hca: &str) -> Vec<(String, String)> {
        vec![("NCCL_IB_HCA".to_string(), hca.to_string())]
    }

    fn ucx(env: &[(String, String)]) -> Option<&str> {
        env.iter()
            .find(|(k, _)| k == "UCX_NET_DEVICES")
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn nixl_engines_get_the_exact_hcas_with_their_ports() {
        // `=mlx5_0,mlx5_1:2`: mlx5_0 on its default port 1, mlx5_1 on port 2.
        let out = with_ucx_devices(env("=mlx5_0,mlx5_1:2"), true);
        assert_eq!(ucx(&out), Some("mlx5_0:1,mlx5_1:2"));
        // Sorted by name: NCCL_IB_HCA before UCX_NET_DEVICES.
        assert_eq!(out[0].0, "NCCL_IB_HCA");
        // A prefix or an exclusion names no device; an engine without NIXL needs none.
        assert_eq!(ucx(&with_ucx_devices(env("mlx5"), true)), None);
        assert_eq!(ucx(&with_ucx_devices(env("^=mlx5_bond_0"), true)), None);
        assert_eq!(ucx(&with_ucx_devices(env("=mlx5_0"), false)), None);
        // The catalogue's own value is kept.
        let mut own = env("=mlx5_0");
        own.push(("UCX_NET_DEVICES".to_string(), "mlx5_3:1".to_string()));
        assert_eq!(ucx(&with_ucx_devices(own, true)), Some("mlx5_3:1"));
    }
}
