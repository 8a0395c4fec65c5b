//! The serving engines' command lines, built once from the plan and used by every target.
//!
//! One function per engine turns a role of a [`ServicePlan`] into the engine's argv with its
//! real flags (sources in docs/backends.md, "Services"); the Kubernetes, Slurm and bare-metal
//! renderers only place it (container args, `srun`, ssh). Nothing here is shell-quoted: each
//! target quotes every word where it lands.

use loam_ir::plan::{RoleIr, ServicePlan};
use loam_ir::types::{Engine, KvCache, ServePrecision, ServiceMode};
use serde::Serialize;

/// The port of Ray's head node (Ray's default, as in vLLM's multi-node example).
pub const RAY_PORT: u16 = 6379;
/// The port SGLang's nodes of one replica rendezvous on (`--dist-init-addr`).
pub const SGLANG_DIST_PORT: u16 = 5000;
/// The port SGLang's prefill servers hand out KV caches on (`--disaggregation-bootstrap-port`,
/// its default).
pub const SGLANG_BOOTSTRAP_PORT: u16 = 8998;
/// The port of the router in front of a disaggregated service.
pub const ROUTER_PORT: u16 = 8000;

/// How the nodes of one replica that spans several nodes start together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MultiNode {
    /// vLLM: a Ray cluster per replica; the leader runs `ray start --head` and then the engine
    /// with `--distributed-executor-backend ray`, the workers `ray start --address=LEADER:6379
    /// --block` (vLLM's `multi-node-serving.sh`, the LeaderWorkerSet vLLM example).
    Ray,
    /// SGLang: every node runs the engine with `--nnodes N`; the launcher appends
    /// `--node-rank R --dist-init-addr LEADER:5000`.
    Sglang,
}

/// How one role's engine is started and watched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineLaunch {
    /// The engine's argv, one word each.
    pub argv: Vec<String>,
    /// The port the engine serves its OpenAI-compatible API on.
    pub port: u16,
    /// The HTTP path that answers 200 when the engine is ready, when the engine has one
    /// (otherwise the probes open the port).
    pub health: Option<&'static str>,
    /// The Prometheus gauge of requests running in one engine, which the autoscaler keeps at
    /// the plan's target concurrency; `None` when the engine exports none loam knows.
    pub metric: Option<&'static str>,
    /// How the nodes of one replica start together, when a replica spans several nodes.
    pub multi_node: Option<MultiNode>,
    /// The environment variable the engine reads the address other pods reach it at from,
    /// which every target sets to the pod's or node's own address: vLLM's NIXL connector
    /// hands its side-channel host to the decoder, and its default `localhost` fails every
    /// transfer between machines (vllm-project/vllm `docs/features/nixl_connector_usage.md`,
    /// `VLLM_NIXL_SIDE_CHANNEL_HOST`).
    pub host_env: Option<&'static str>,
}

/// Why an engine cannot serve a role as planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

/// The engine command of `role` of `plan`: the one entry point every target calls.
pub fn launch(plan: &ServicePlan, role: &RoleIr) -> Result<EngineLaunch, Unsupported> {
    let disaggregated = plan.mode == Some(ServiceMode::Disaggregated);
    let multi = role.nodes_per_replica > 1;
    let engine = plan.engine;
    if disaggregated && !matches!(engine, Engine::Vllm | Engine::Sglang) {
        return Err(Unsupported(format!(
            "loam writes disaggregated services for vllm and sglang only, not {engine}"
        )));
    }
    if multi && !matches!(engine, Engine::Vllm | Engine::Sglang) {
        return Err(Unsupported(format!(
            "loam writes replicas over several nodes for vllm and sglang only, not {engine}"
        )));
    }
    Ok(match engine {
        Engine::Vllm => vllm(plan, role, disaggregated),
        Engine::Sglang => sglang(plan, role, disaggregated),
        Engine::Trtllm => trtllm(plan, role),
        Engine::Lmdeploy => lmdeploy(plan, role),
        Engine::Mindie => mindie(),
    })
}

/// `vllm serve` (vLLM's engine arguments).
fn vllm(plan: &ServicePlan, role: &RoleIr, disaggregated: bool) -> EngineLaunch {
    let port = 8000;
    let mut argv = words(&["vllm", "serve", &plan.model.weights]);
    push(&mut argv, "--host", "0.0.0.0");
    push(&mut argv, "--port", port);
    push(&mut argv, "--tensor-parallel-size", role.tensor);
    push(&mut argv, "--pipeline-parallel-size", role.pipeline);
    if role.expert > 1 {
        argv.push("--enable-expert-parallel".to_string());
    }
    push(&mut argv, "--max-num-seqs", role.max_batch);
    push(&mut argv, "--max-model-len", plan.model.max_model_len);
    push(
        &mut argv,
        "--max-num-batched-tokens",
        role.max_batched_tokens,
    );
    push(
        &mut argv,
        "--gpu-memory-utilization",
        fraction(role.memory_fraction),
    );
    match plan.model.precision {
        ServePrecision::Bf16 => push(&mut argv, "--dtype", "bfloat16"),
        ServePrecision::Fp16 => push(&mut argv, "--dtype", "float16"),
        // Dynamic fp8 on a 16-bit checkpoint, or the checkpoint's own fp8 scales.
        ServePrecision::Fp8 => push(&mut argv, "--quantization", "fp8"),
        // int8, int4 and fp4 checkpoints carry their quantisation config, which vLLM reads.
        ServePrecision::Int8 | ServePrecision::Int4 | ServePrecision::Fp4 => {}
    }
    if plan.model.kv_cache == KvCache::Fp8 {
        push(&mut argv, "--kv-cache-dtype", "fp8");
    }
    if disaggregated {
        // NIXL pulls the KV cache from the prefill engine the router names in each request.
        push(
            &mut argv,
            "--kv-transfer-config",
            r#"{"kv_connector":"NixlConnector","kv_role":"kv_both"}"#,
        );
    }
    let multi_node = (role.nodes_per_replica > 1).then_some(MultiNode::Ray);
    if multi_node.is_some() {
        push(&mut argv, "--distributed-executor-backend", "ray");
    }
    EngineLaunch {
        argv,
        port,
        health: Some("/health"),
        metric: Some("vllm:num_requests_running"),
        multi_node,
        host_env: disaggregated.then_some("VLLM_NIXL_SIDE_CHANNEL_HOST"),
    }
}

/// `python3 -m sglang.launch_server` (SGLang's server arguments).
fn sglang(plan: &ServicePlan, role: &RoleIr, disaggregated: bool) -> EngineLaunch {
    let port = 30000;
    let mut argv = words(&["python3", "-m", "sglang.launch_server"]);
    push(&mut argv, "--model-path", &plan.model.weights);
    push(&mut argv, "--host", "0.0.0.0");
    push(&mut argv, "--port", port);
    push(&mut argv, "--tp-size", role.tensor);
    if role.pipeline > 1 {
        push(&mut argv, "--pp-size", role.pipeline);
    }
    if role.expert > 1 {
        push(&mut argv, "--ep-size", role.expert);
    }
    push(&mut argv, "--max-running-requests", role.max_batch);
    push(&mut argv, "--context-length", plan.model.max_model_len);
    push(&mut argv, "--chunked-prefill-size", role.max_batched_tokens);
    push(
        &mut argv,
        "--mem-fraction-static",
        fraction(role.memory_fraction),
    );
    match plan.model.precision {
        ServePrecision::Bf16 => push(&mut argv, "--dtype", "bfloat16"),
        ServePrecision::Fp16 => push(&mut argv, "--dtype", "float16"),
        ServePrecision::Fp8 => push(&mut argv, "--quantization", "fp8"),
        ServePrecision::Int8 | ServePrecision::Int4 | ServePrecision::Fp4 => {}
    }
    if plan.model.kv_cache == KvCache::Fp8 {
        push(&mut argv, "--kv-cache-dtype", "fp8_e4m3");
    }
    // The autoscaler's metric (`sglang:num_running_reqs`) is exported only with this flag.
    argv.push("--enable-metrics".to_string());
    if disaggregated {
        push(&mut argv, "--disaggregation-mode", &role.role);
    }
    let multi_node = (role.nodes_per_replica > 1).then_some(MultiNode::Sglang);
    if multi_node.is_some() {
        push(&mut argv, "--nnodes", role.nodes_per_replica);
    }
    EngineLaunch {
        argv,
        port,
        health: Some("/health"),
        metric: Some("sglang:num_running_reqs"),
        multi_node,
        host_env: None,
    }
}

/// `trtllm-serve` (TensorRT-LLM's serve command, PyTorch backend).
fn trtllm(plan: &ServicePlan, role: &RoleIr) -> EngineLaunch {
    let port = 8000;
    let mut argv = words(&["trtllm-serve", &plan.model.weights]);
    push(&mut argv, "--host", "0.0.0.0");
    push(&mut argv, "--port", port);
    push(&mut argv, "--backend", "pytorch");
    push(&mut argv, "--tp_size", role.tensor);
    push(&mut argv, "--pp_size", role.pipeline);
    if role.expert > 1 {
        push(&mut argv, "--ep_size", role.expert);
    }
    push(&mut argv, "--max_batch_size", role.max_batch);
    push(&mut argv, "--max_num_tokens", role.max_batched_tokens);
    push(&mut argv, "--max_seq_len", plan.model.max_model_len);
    push(
        &mut argv,
        "--kv_cache_free_gpu_memory_fraction",
        fraction(role.memory_fraction),
    );
    EngineLaunch {
        argv,
        port,
        health: Some("/health"),
        metric: None,
        multi_node: None,
        host_env: None,
    }
}

/// `lmdeploy serve api_server` (LMDeploy's api_server options).
fn lmdeploy(plan: &ServicePlan, role: &RoleIr) -> EngineLaunch {
    let port = 23333;
    let mut argv = words(&["lmdeploy", "serve", "api_server", &plan.model.weights]);
    push(&mut argv, "--server-name", "0.0.0.0");
    push(&mut argv, "--server-port", port);
    push(&mut argv, "--tp", role.devices_per_replica);
    push(&mut argv, "--max-batch-size", role.max_batch);
    push(&mut argv, "--session-len", plan.model.max_model_len);
    push(
        &mut argv,
        "--cache-max-entry-count",
        fraction(role.memory_fraction),
    );
    EngineLaunch {
        argv,
        port,
        health: None,
        metric: None,
        multi_node: None,
        host_env: None,
    }
}

/// MindIE Service's daemon. It takes no flags: it reads the model path, devices, world size and
/// batch limits from its `conf/config.json` (`BackendConfig.ModelDeployConfig`,
/// `ScheduleConfig`), which the image must carry (loam does not write it yet).
fn mindie() -> EngineLaunch {
    let port = 1025;
    EngineLaunch {
        argv: words(&["/usr/local/Ascend/mindie/latest/mindie-service/bin/mindieservice_daemon"]),
        port,
        health: None,
        metric: None,
        multi_node: None,
        host_env: None,
    }
}

/// Where the router finds the prefill and decode engines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouterTargets {
    /// Fixed base URLs (`http://host:port`) of the prefill and decode engines.
    Urls {
        /// The prefill engines.
        prefill: Vec<String>,
        /// The decode engines.
        decode: Vec<String>,
    },
    /// Kubernetes pods found by label (SGLang's router): `key=value` selectors, the namespace
    /// and the engines' port.
    Selectors {
        /// The prefill pods' labels.
        prefill: Vec<String>,
        /// The decode pods' labels.
        decode: Vec<String>,
        /// Their namespace.
        namespace: String,
        /// The engines' port.
        port: u16,
    },
    /// Given when the router starts (the launcher appends its arguments).
    Later,
}

/// The router in front of a disaggregated service. vLLM: `vllm-router --vllm-pd-disaggregation
/// --prefill URL --decode URL`; SGLang: `python3 -m sglang_router.launch_router
/// --pd-disaggregation --prefill URL BOOTSTRAP_PORT --decode URL`, or with `--service-discovery`
/// and label selectors on Kubernetes, where the prefill pods name their bootstrap port in the
/// annotation `sglang.ai/bootstrap-port`.
pub fn router(engine: Engine, targets: &RouterTargets) -> Vec<String> {
    let sglang = engine == Engine::Sglang;
    let mut argv = if sglang {
        words(&[
            "python3",
            "-m",
            "sglang_router.launch_router",
            "--pd-disaggregation",
        ])
    } else {
        words(&["vllm-router", "--vllm-pd-disaggregation"])
    };
    push(&mut argv, "--host", "0.0.0.0");
    push(&mut argv, "--port", ROUTER_PORT);
    match targets {
        RouterTargets::Urls { prefill, decode } => {
            for url in prefill {
                push(&mut argv, "--prefill", url);
                if sglang {
                    argv.push(SGLANG_BOOTSTRAP_PORT.to_string());
                }
            }
            for url in decode {
                push(&mut argv, "--decode", url);
            }
        }
        RouterTargets::Selectors {
            prefill,
            decode,
            namespace,
            port,
        } => {
            argv.push("--service-discovery".to_string());
            argv.push("--prefill-selector".to_string());
            argv.extend(prefill.iter().cloned());
            argv.push("--decode-selector".to_string());
            argv.extend(decode.iter().cloned());
            push(&mut argv, "--service-discovery-namespace", namespace);
            push(&mut argv, "--service-discovery-port", port);
        }
        RouterTargets::Later => {}
    }
    argv
}

/// A POSIX `sh` script that starts one node of a replica spanning several nodes, the engine's
/// argv in `"$@"`. The launcher sets `LEADER` (the replica's first node), `NODE_RANK` (0 on the
/// leader) and `NNODES`.
pub fn multi_node_script(m: MultiNode) -> String {
    match m {
        MultiNode::Ray => format!(
            r#"if [ "$NODE_RANK" = 0 ]; then
  ray start --head --port={RAY_PORT} || exit 1
  # Wait for every node of the replica to join the Ray cluster, then serve.
  until [ "$(ray status 2>/dev/null | grep -c node_)" -ge "$NNODES" ]; do sleep 5; done
  exec "$@"
fi
exec ray start --address="$LEADER:{RAY_PORT}" --block"#
        ),
        MultiNode::Sglang => format!(
            r#"exec "$@" --node-rank "$NODE_RANK" --dist-init-addr "$LEADER:{SGLANG_DIST_PORT}""#
        ),
    }
}

/// The image of the router: vLLM's router image, or `None` for SGLang, whose own image ships
/// `sglang_router` (the engine's image on the vendor). The router is pinned to its 0.1.15 release
/// (the `vllm-router` package's release; the router's release pipeline tags each release's image
/// `v<version>`), so a manifest pulls the same router tomorrow.
pub fn router_image(engine: Engine) -> Option<&'static str> {
    match engine {
        Engine::Sglang => None,
        _ => Some("docker.io/vllm/vllm-router:v0.1.15"),
    }
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| (*s).to_string()).collect()
}

fn push(argv: &mut Vec<String>, flag: &str, value: impl ToString) {
    argv.push(flag.to_string());
    argv.push(value.to_string());
}

/// A memory share with at most two decimals, as the engines' examples write it (`0.9`).
fn fraction(f: f64) -> String {
    let f = (f.clamp(0.01, 1.0) * 100.0).round() / 100.0;
    format!("{f}")
}
