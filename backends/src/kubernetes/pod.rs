//! The pod of one device group: its launch command (rank arithmetic, then the trainer
//! contract's wrapper as PID 1), environment, requests, fabric, placement and volumes.

use crate::contract;
use crate::job::{Group, JobContext};
use crate::{Flavor, Options};
use loam_ir::cluster::vendor::RankTable;
use serde::Serialize;

/// The port of the rendezvous (torchrun's c10d store, Megatron's and DeepSpeed's
/// `MASTER_PORT`).
pub(crate) const RENDEZVOUS_PORT: u16 = 29500;

/// Where the checkpoint request file lives: node-local, inside the container.
const CHECKPOINT_REQUEST: &str = "/tmp/loam/checkpoint-request";

/// Where MindCluster mounts the Ascend rank table (`hccl.json`) that HCCL Controller or Ascend
/// Operator writes into the ConfigMap `rings-config-<job>`.
pub(crate) const RANK_TABLE_DIR: &str = "/user/serverid/devindex/config";

/// The ConfigMap key the operator fills with the rendezvous address in every site but the
/// first (see `docs/backends.md`).
pub(crate) const RENDEZVOUS_KEY: &str = "address";

/// One environment variable: a value, or a key of a ConfigMap.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EnvVar {
    pub(crate) name: String,
    pub(crate) value: Option<String>,
    pub(crate) config_map: Option<String>,
    pub(crate) key: Option<String>,
}

impl EnvVar {
    fn value(name: &str, value: impl ToString) -> Self {
        EnvVar {
            name: name.to_string(),
            value: Some(value.to_string()),
            config_map: None,
            key: None,
        }
    }

    fn from_config_map(name: &str, config_map: &str, key: &str) -> Self {
        EnvVar {
            name: name.to_string(),
            value: None,
            config_map: Some(config_map.to_string()),
            key: Some(key.to_string()),
        }
    }
}

/// Where the pods find the rendezvous: a host name in the first site, a ConfigMap key the
/// operator fills in the others.
#[derive(Debug, Clone)]
pub(crate) enum Rendezvous {
    /// The first pod's stable host name.
    Host(String),
    /// The ConfigMap (its name) holding [`RENDEZVOUS_KEY`].
    ConfigMap(String),
}

/// What `pod.yaml.j2` renders for one group.
#[derive(Debug, Serialize)]
pub(crate) struct PodContext<'a> {
    pub(crate) job: &'a JobContext<'a>,
    pub(crate) g: &'a Group<'a>,
    pub(crate) image: &'a str,
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) annotations: Vec<(String, String)>,
    pub(crate) node_selector_terms: Vec<(String, String)>,
    pub(crate) tolerations: Vec<Toleration>,
    pub(crate) launch: Vec<String>,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<EnvVar>,
    pub(crate) resources: Vec<(String, String)>,
    pub(crate) ipc_lock: bool,
    pub(crate) shm_limit: Option<String>,
    pub(crate) priority_class_name: Option<String>,
    pub(crate) rank_table: Option<String>,
}

/// A pod toleration of a node taint.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Toleration {
    pub(crate) key: String,
    pub(crate) value: Option<String>,
    pub(crate) effect: String,
}

/// The launch command: computes this node's ranks from the group's offsets and the pod's
/// index (the shell does it: a pod's `$(VAR)` expands only variables set earlier in its env
/// list, never arithmetic), then runs the trainer contract's wrapper in the same shell, which
/// stays PID 1 so that SIGTERM becomes a checkpoint request. Constants only: no spec string.
pub(crate) fn launch(index_var: &str) -> Vec<String> {
    let prelude = format!(
        "i=${{{index_var}:?}}\n\
         NODE_RANK=$((NODE_RANK_OFFSET + i)); RANK_OFFSET=$((GROUP_RANK_OFFSET + i * NPROC_PER_NODE))\n\
         PET_NODE_RANK=$NODE_RANK; export NODE_RANK RANK_OFFSET PET_NODE_RANK\n"
    );
    vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        format!("{prelude}{}", contract::WRAPPER),
        "loam-run".to_string(),
    ]
}

/// A memory quantity in whole MiB (Kubernetes quantities; GiB figures may be fractional).
pub(crate) fn mib(gib: f64) -> String {
    format!("{}Mi", (gib.max(0.0) * 1024.0).round() as u64)
}

/// The value of MindCluster's `ring-controller.atlas` label for an Ascend device.
pub(crate) fn ascend_ring(device: &str) -> &'static str {
    if device.to_ascii_lowercase().contains("910b") {
        "ascend-910b"
    } else {
        "ascend-910"
    }
}

/// Builds the pod of group `g`.
pub(crate) fn context<'a>(
    job: &'a JobContext<'a>,
    g: &'a Group<'a>,
    options: &'a Options,
    base_labels: &[(String, String)],
    rendezvous: &Rendezvous,
) -> PodContext<'a> {
    let node = g.ir.node.clone().unwrap_or_default();
    let mut terms: Vec<(String, String)> =
        g.ir.node_labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    if let Some(block) = &g.ir.block {
        terms.push(("loam.io/topology-block".to_string(), block.clone()));
        terms.sort();
    }
    let mut labels = base_labels.to_vec();
    labels.push(("loam.io/group".to_string(), g.name.clone()));
    // MindCluster writes the Ascend rank table for Volcano jobs only, and completes it only
    // when every task of the job carries NPUs: its HCCL controller counts every task's
    // replicas but caches only NPU pods (Ascend/ascend-hccl-controller, `GenerateGrouplist`
    // and agent/vcjobworker.go), so a job mixing Ascend and other devices at one site would
    // wait for its table for ever. Such a job rendezvouses over MASTER_ADDR (torch_npu).
    let ascend_rank_table = g.rank_table == Some(RankTable::Ascend)
        && options.flavor == Flavor::Volcano
        && job
            .groups
            .iter()
            .filter(|other| other.ir.site == g.ir.site)
            .all(|other| other.rank_table == Some(RankTable::Ascend));
    if ascend_rank_table {
        labels.push((
            "ring-controller.atlas".to_string(),
            ascend_ring(&g.ir.device).to_string(),
        ));
    }
    let mut annotations = Vec::new();
    // Kueue's topology-aware scheduling: only under Kueue and where the site declares levels (a
    // Topology then exists); the outermost level is the switch block the plan keeps the group in.
    if let (Flavor::Jobset, Some(level)) = (options.flavor, node.topology_levels.first()) {
        let key = if g.ir.block.is_some() {
            "kueue.x-k8s.io/podset-required-topology"
        } else {
            "kueue.x-k8s.io/podset-preferred-topology"
        };
        annotations.push((key.to_string(), level.clone()));
    }
    if let Some(block) = &g.ir.block {
        annotations.push(("loam.io/topology-block".to_string(), block.clone()));
    }
    annotations.push(("loam.io/device".to_string(), g.ir.device.clone()));
    annotations.push(("loam.io/site".to_string(), g.ir.site.clone()));
    let index_var = match options.flavor {
        Flavor::Jobset => "JOB_COMPLETION_INDEX",
        Flavor::Volcano => "VC_TASK_INDEX",
    };
    let mut env = Vec::new();
    for name in ["MASTER_ADDR", "PET_MASTER_ADDR"] {
        env.push(match rendezvous {
            Rendezvous::Host(host) => EnvVar::value(name, host),
            Rendezvous::ConfigMap(cm) => EnvVar::from_config_map(name, cm, RENDEZVOUS_KEY),
        });
    }
    let grace = job.grace_s.saturating_sub(30);
    env.extend([
        EnvVar::value("MASTER_PORT", RENDEZVOUS_PORT),
        EnvVar::value("PET_MASTER_PORT", RENDEZVOUS_PORT),
        EnvVar::value("WORLD_SIZE", job.world_size),
        EnvVar::value("NNODES", job.nnodes),
        EnvVar::value("PET_NNODES", job.nnodes),
        EnvVar::value("NPROC_PER_NODE", g.ir.devices_per_node),
        EnvVar::value("PET_NPROC_PER_NODE", g.ir.devices_per_node),
        EnvVar::value("NODE_RANK_OFFSET", g.node_rank_offset),
        EnvVar::value("GROUP_RANK_OFFSET", g.rank_offset),
        EnvVar::value("LOAM_GROUP", g.index),
        EnvVar::value("LOAM_JOB", &job.job),
        EnvVar::value("LOAM_PLAN", "/etc/loam/plan.json"),
        EnvVar::value("LOAM_CHECKPOINT_DIR", &job.checkpoint_path),
        EnvVar::value("LOAM_CHECKPOINT_REQUEST", CHECKPOINT_REQUEST),
        EnvVar::value("LOAM_GRACE_S", grace),
    ]);
    for (k, v) in &g.env {
        env.push(EnvVar::value(k, v));
    }
    let rank_table = ascend_rank_table.then(|| format!("rings-config-{}", job.name));
    if rank_table.is_some() {
        env.push(EnvVar::value(
            "RANK_TABLE_FILE",
            format!("{RANK_TABLE_DIR}/hccl.json"),
        ));
    }
    let mut resources = vec![(g.device_resource.clone(), g.ir.devices_per_node.to_string())];
    if node.cpus > 0 {
        resources.push(("cpu".to_string(), node.cpus.to_string()));
    }
    if node.memory_gib > 0.0 {
        resources.push(("memory".to_string(), mib(node.memory_gib)));
    }
    if let Some(rdma) = &node.rdma {
        resources.push((rdma.resource.clone(), rdma.per_node.to_string()));
    }
    resources.sort();
    let mut args = g.trainer_args.clone();
    args.push("--plan=/etc/loam/plan.json".to_string());
    PodContext {
        job,
        g,
        image: &options.image,
        labels,
        annotations,
        node_selector_terms: terms,
        tolerations: node
            .tolerations
            .iter()
            .map(|t| Toleration {
                key: t.key.clone(),
                value: t.value.clone(),
                effect: t.effect.clone(),
            })
            .collect(),
        launch: launch(index_var),
        args,
        env,
        resources,
        ipc_lock: node.rdma.is_some(),
        shm_limit: (node.shm_gib > 0.0).then(|| mib(node.shm_gib)),
        priority_class_name: (options.flavor == Flavor::Volcano)
            .then(|| super::priority_class(&job.priority)),
        rank_table,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The launch command computes the ranks in the shell before the trainer starts (a pod's
    /// `$(VAR)` could not) and hands the trainer its arguments unchanged.
    #[test]
    fn the_launch_command_computes_the_node_rank_before_the_trainer_starts() {
        let launch = launch("JOB_COMPLETION_INDEX");
        let out = Command::new(&launch[0])
            .args(&launch[1..])
            .args([
                "sh",
                "-c",
                "echo \"$NODE_RANK $PET_NODE_RANK $RANK_OFFSET $1\"",
                "t",
                "a b",
            ])
            .env("JOB_COMPLETION_INDEX", "3")
            .env("NODE_RANK_OFFSET", "16")
            .env("GROUP_RANK_OFFSET", "128")
            .env("NPROC_PER_NODE", "8")
            .env(
                "LOAM_CHECKPOINT_REQUEST",
                std::env::temp_dir().join(format!("loam-launch-{}", std::process::id())),
            )
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "19 19 152 a b\n");
    }
}
