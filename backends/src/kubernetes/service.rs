//! Kubernetes objects of a service: per role a Deployment (replicas on one node) or a
//! LeaderWorkerSet (replicas over several nodes), a ClusterIP Service and a
//! HorizontalPodAutoscaler on the engine's requests-running metric; a disaggregated service adds
//! the router's Deployment and the Service in front of it. The PriorityClass its pods name comes
//! along, since no queueing system creates it for a Deployment.

use crate::kubernetes::{PRIORITIES, priority_class};
use crate::service::engine::{self, RouterTargets};
use crate::service::{RoleContext, ServiceContext, render_one};
use crate::{Manifest, env};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::types::Engine;
use minijinja::Value;

/// The storage a service's weight cache requests (physical: 1 TiB holds the largest shipped
/// model's weights, Llama 3.1 405B in bf16, 405e9 parameters × 2 bytes = 810 GB). A shared file
/// system treats it as a quota.
const MODEL_CACHE_REQUEST: &str = "1Ti";

/// The name of service `name`'s weight cache claim.
pub fn model_cache_claim(name: &str) -> String {
    format!("{name}-model-cache")
}

/// Renders the objects of one service; paths relative to the service's folder.
pub fn render(svc: &ServiceContext<'_>) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let env = env::environment().map_err(|e| vec![crate::env::template_error(&svc.service, &e)])?;
    let class = service_priority_class(&svc.priority);
    let value = PRIORITIES
        .iter()
        .find(|(p, _)| *p == svc.priority)
        .map_or(10_000, |(_, v)| *v);
    let mut files = vec![Manifest {
        path: format!("00-priorityclass-{class}.yaml"),
        contents: render_one(
            env,
            &svc.service,
            "kubernetes/priorityclass.yaml.j2",
            minijinja::context! { name => class, value => value, priority => svc.priority, service => true },
        )?,
    }];
    // The weight cache every engine pod of the service mounts at /models: gated weights are
    // downloaded once, not at every restart or new replica (newcomer review, 5.6). One claim per
    // service, in its folder: a site's prerequisites stay the same whichever services are
    // emitted (deploy review, finding 9).
    let cache_claim = model_cache_claim(&svc.name);
    files.push(Manifest {
        path: "05-model-cache-pvc.yaml".to_string(),
        contents: render_one(
            env,
            &svc.service,
            "kubernetes/model-cache-pvc.yaml.j2",
            minijinja::context! {
                name => cache_claim,
                namespace => svc.tenancy.namespace,
                storage_class => svc.cache_storage_class,
                request => MODEL_CACHE_REQUEST,
            },
        )?,
    });
    let annotations = vec![
        ("loam.io/service-name".to_string(), svc.service.clone()),
        ("loam.io/spec-file".to_string(), svc.file.clone()),
        ("loam.io/tenant".to_string(), svc.tenant.clone()),
        ("loam.io/engine".to_string(), svc.engine.clone()),
    ];
    for role in &svc.roles {
        let selector = selector(svc, role);
        let mut labels = selector.clone();
        labels.insert(
            0,
            (
                "app.kubernetes.io/managed-by".to_string(),
                "loam".to_string(),
            ),
        );
        let lws = role.ir.nodes_per_replica > 1;
        let autoscaled = role.launch.metric.is_some();
        let pod = |leader: bool| -> Result<Value, Vec<Diagnostic>> {
            let mut pod_labels = labels.clone();
            if lws {
                pod_labels.push((
                    "loam.io/node".to_string(),
                    if leader { "leader" } else { "worker" }.to_string(),
                ));
            }
            let mut pod_annotations = annotations.clone();
            if svc.plan.engine == Engine::Sglang && role.role == "prefill" {
                // Where the SGLang router's service discovery finds the KV bootstrap server.
                pod_annotations.push((
                    "sglang.ai/bootstrap-port".to_string(),
                    engine::SGLANG_BOOTSTRAP_PORT.to_string(),
                ));
            }
            let ctx = minijinja::context! {
                labels => Value::from_serialize(&pod_labels),
                annotations => Value::from_serialize(&pod_annotations),
                priority_class => class,
                node_labels => Value::from_serialize(role.ir.group.node_labels.iter().collect::<Vec<_>>()),
                tolerations => Value::from_serialize(&role.tolerations),
                image => svc.image,
                command => command(role),
                env => Value::from_serialize(&role.env),
                host_env => role.launch.host_env,
                port => role.launch.port,
                probes => leader,
                health => role.launch.health,
                resources => Value::from_serialize(resources(role)),
                ipc_lock => role.rdma.is_some(),
                shm_limit => (role.shm_mib > 0).then(|| format!("{}Mi", role.shm_mib)),
                cache_claim => cache_claim,
            };
            let text = render_one(env, &svc.service, "kubernetes/service-pod.yaml.j2", ctx)?;
            Ok(Value::from_safe_string(text.trim_end().to_string()))
        };
        let ctx = minijinja::context! {
            svc => Value::from_serialize(svc),
            role => Value::from_serialize(role),
            labels => Value::from_serialize(&labels),
            annotations => Value::from_serialize(&annotations),
            selector => Value::from_serialize(&selector),
            lws => lws,
            autoscaled => autoscaled,
            leader_pod => pod(true)?,
            worker_pod => pod(false)?,
        };
        let kind = if lws { "leaderworkerset" } else { "deployment" };
        files.push(Manifest {
            path: format!("10-{}-{kind}.yaml", role.role),
            contents: render_one(
                env,
                &svc.service,
                "kubernetes/service-workload.yaml.j2",
                ctx,
            )?,
        });
        // The Service selects the pods that serve the API: every pod of a Deployment, the
        // leaders of a LeaderWorkerSet.
        let mut service_selector = selector.clone();
        if lws {
            service_selector.push(("loam.io/node".to_string(), "leader".to_string()));
        }
        let what = if svc.disaggregated {
            format!("the {} engines, for the router", role.role)
        } else {
            "the engines".to_string()
        };
        files.push(Manifest {
            path: format!("20-{}-service.yaml", role.role),
            contents: render_one(
                env,
                &svc.service,
                "kubernetes/service-service.yaml.j2",
                minijinja::context! {
                    svc => Value::from_serialize(svc),
                    name => role.name,
                    what => what,
                    labels => Value::from_serialize(&labels),
                    annotations => Value::from_serialize(&annotations),
                    selector => Value::from_serialize(&service_selector),
                    port => role.launch.port,
                    target_port => role.launch.port,
                },
            )?,
        });
        // A budget for voluntary disruptions where one pod may go and others still serve; a
        // single replica gets none, since any budget would block node drains for good (N+1 is
        // the spec's to ask for).
        if role.min_replicas > 1 {
            files.push(Manifest {
                path: format!("25-{}-pdb.yaml", role.role),
                contents: render_one(
                    env,
                    &svc.service,
                    "kubernetes/service-pdb.yaml.j2",
                    minijinja::context! {
                        svc => Value::from_serialize(svc),
                        role => Value::from_serialize(role),
                        labels => Value::from_serialize(&labels),
                        annotations => Value::from_serialize(&annotations),
                        selector => Value::from_serialize(&selector),
                    },
                )?,
            });
        }
        if let Some(metric) = role.launch.metric {
            let hours: Vec<(u64, u64)> = role
                .hourly
                .iter()
                .enumerate()
                .map(|(h, n)| (h as u64, *n))
                .collect();
            let hourly = role
                .hourly
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",");
            files.push(Manifest {
                path: format!("30-{}-hpa.yaml", role.role),
                contents: render_one(
                    env,
                    &svc.service,
                    "kubernetes/service-hpa.yaml.j2",
                    minijinja::context! {
                        svc => Value::from_serialize(svc),
                        role => Value::from_serialize(role),
                        labels => Value::from_serialize(&labels),
                        annotations => Value::from_serialize(&annotations),
                        lws => lws,
                        metric => metric,
                        target => quantity(hpa_target(svc.target_concurrency, role.ir.max_batch)),
                        hours => hours,
                        hourly => hourly,
                    },
                )?,
            });
        }
    }
    if svc.disaggregated {
        files.extend(router(env, svc, &annotations)?);
    }
    Ok(files)
}

/// The PriorityClass of a service's pods, `loam-service-<priority>`: a name of its own, since
/// a service's class never preempts while the Volcano prerequisites' `loam-<priority>` does, and
/// one cluster-scoped name cannot be both.
fn service_priority_class(priority: &str) -> String {
    priority_class(priority).replacen("loam-", "loam-service-", 1)
}

/// The router's Deployment (and, for SGLang, its service-discovery RBAC) and the Service the
/// clients use, in front of it.
fn router(
    env: &minijinja::Environment<'_>,
    svc: &ServiceContext<'_>,
    annotations: &[(String, String)],
) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let name = format!("{}-router", svc.name);
    let labels = vec![
        (
            "app.kubernetes.io/managed-by".to_string(),
            "loam".to_string(),
        ),
        ("loam.io/service".to_string(), svc.name.clone()),
        ("loam.io/role".to_string(), "router".to_string()),
    ];
    let role_port = |role: &str| {
        svc.roles
            .iter()
            .find(|r| r.role == role)
            .map_or(engine::ROUTER_PORT, |r| r.launch.port)
    };
    let discovery = svc.plan.engine == Engine::Sglang;
    let targets = if discovery {
        let select = |role: &str| {
            vec![
                format!("loam.io/service={}", svc.name),
                format!("loam.io/role={role}"),
            ]
        };
        RouterTargets::Selectors {
            prefill: select("prefill"),
            decode: select("decode"),
            namespace: svc.tenancy.namespace.clone(),
            port: role_port("prefill"),
        }
    } else {
        // vLLM's NIXL connector pulls the KV cache from the prefill engine that answered, so
        // the role Services may spread the requests.
        let url = |role: &str| {
            format!(
                "http://{}-{role}.{}.svc:{}",
                svc.name,
                svc.tenancy.namespace,
                role_port(role)
            )
        };
        RouterTargets::Urls {
            prefill: vec![url("prefill")],
            decode: vec![url("decode")],
        }
    };
    let ctx = minijinja::context! {
        svc => Value::from_serialize(svc),
        name => name,
        labels => Value::from_serialize(&labels),
        annotations => Value::from_serialize(annotations),
        priority_class => service_priority_class(&svc.priority),
        discovery => discovery,
        image => svc.router_image,
        command => engine::router(svc.plan.engine, &targets),
        port => engine::ROUTER_PORT,
    };
    let selector = vec![
        ("loam.io/service".to_string(), svc.name.clone()),
        ("loam.io/role".to_string(), "router".to_string()),
    ];
    Ok(vec![
        Manifest {
            path: "40-router.yaml".to_string(),
            contents: render_one(env, &svc.service, "kubernetes/service-router.yaml.j2", ctx)?,
        },
        Manifest {
            path: "50-service.yaml".to_string(),
            contents: render_one(
                env,
                &svc.service,
                "kubernetes/service-service.yaml.j2",
                minijinja::context! {
                    svc => Value::from_serialize(svc),
                    name => svc.name,
                    what => "the router, which clients call",
                    labels => Value::from_serialize(&labels),
                    annotations => Value::from_serialize(annotations),
                    selector => Value::from_serialize(&selector),
                    port => engine::ROUTER_PORT,
                    target_port => engine::ROUTER_PORT,
                },
            )?,
        },
    ])
}

/// The labels that pick a role's pods.
fn selector(svc: &ServiceContext<'_>, role: &RoleContext<'_>) -> Vec<(String, String)> {
    vec![
        ("loam.io/service".to_string(), svc.name.clone()),
        ("loam.io/role".to_string(), role.role.clone()),
    ]
}

/// The container command of a role's pods: the engine's argv, or for a replica over several
/// nodes the engine's multi-node start in `sh` with LeaderWorkerSet's variables.
fn command(role: &RoleContext<'_>) -> Vec<String> {
    match role.launch.multi_node {
        None => role.launch.argv.clone(),
        Some(m) => {
            let script = format!(
                "LEADER=\"$LWS_LEADER_ADDRESS\"; NODE_RANK=\"$LWS_WORKER_INDEX\"; NNODES=\"$LWS_GROUP_SIZE\"\n{}",
                engine::multi_node_script(m)
            );
            let mut argv = vec![
                "/bin/sh".to_string(),
                "-c".to_string(),
                script,
                "loam-serve".to_string(),
            ];
            argv.extend(role.launch.argv.iter().cloned());
            argv
        }
    }
}

/// Requests and limits of one pod: its devices, its share of the node's cpus and memory, and
/// the RDMA resource when the engines talk across nodes.
fn resources(role: &RoleContext<'_>) -> Vec<(String, String)> {
    let mut r = Vec::new();
    if role.cpus > 0 {
        r.push(("cpu".to_string(), role.cpus.to_string()));
    }
    if role.memory_mib > 0 {
        r.push(("memory".to_string(), format!("{}Mi", role.memory_mib)));
    }
    r.push((
        role.ir.group.k8s_resource.clone(),
        role.devices_per_pod.to_string(),
    ));
    if let Some((resource, n)) = &role.rdma {
        r.push((resource.clone(), n.to_string()));
    }
    r
}

/// The most of an engine's own cap on running requests an autoscaling target may be
/// (chosen): the HPA scales up only when the metric exceeds the target by its tolerance, 10 %
/// by default (Kubernetes docs, "Horizontal Pod Autoscaling", algorithm details), and the
/// running-requests gauge never exceeds the cap (`--max-num-seqs`, `--max-running-requests`),
/// so a target above cap / 1.1 never scales; 0.8 leaves room for the metric's scrape lag.
const HPA_CAP_FRACTION: f64 = 0.8;

/// The requests-running target of one role's autoscaler: the plan's target concurrency per
/// replica, at most [`HPA_CAP_FRACTION`] of the role's own engine cap `max_batch`. A
/// disaggregated service's prefill role caps far below the service-wide target (64 against
/// 256 in the 70B chat example), and a target the gauge cannot reach leaves the role at its
/// minimum replicas all day.
fn hpa_target(target_concurrency: f64, max_batch: u64) -> f64 {
    if max_batch == 0 {
        return target_concurrency;
    }
    target_concurrency.min(HPA_CAP_FRACTION * max_batch as f64)
}

/// A Kubernetes quantity for a concurrency: whole numbers as they are, else in thousandths.
fn quantity(x: f64) -> String {
    let milli = (x.max(0.0) * 1000.0).round() as u64;
    if milli.is_multiple_of(1000) {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}
