//! Slurm: one batch script per role. The allocation holds every replica's nodes; one `srun` per
//! replica starts the engine on its nodes (one task per node), the replicas over several nodes
//! through the engine's multi-node start ([`engine::multi_node_script`]).

use crate::job::error;
use crate::service::engine;
use crate::service::{RoleContext, ServiceContext, render_one};
use crate::{Manifest, env};
use loam_ir::diagnostics::{Diagnostic, codes};
use minijinja::Value;

/// Renders `<role>.sbatch` for every role of the service.
pub fn render(svc: &ServiceContext<'_>) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let env = env::environment().map_err(|e| vec![crate::env::template_error(&svc.service, &e)])?;
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for role in &svc.roles {
        let Some(partition) = role.ir.group.slurm_partition.clone() else {
            errors.push(error(
                codes::emit::NO_SLURM_PARTITION,
                format!(
                    "role `{}` of service `{}` runs on node group `{}`, which has no Slurm partition",
                    role.role, svc.service, role.ir.group.node_group
                ),
                "give the node group a `slurm_partition` in the catalogue, or emit for another backend",
            ));
            continue;
        };
        let node = role.ir.group.node.clone().unwrap_or_default();
        let ctx = minijinja::context! {
            svc => Value::from_serialize(svc),
            role => Value::from_serialize(role),
            partition => partition,
            nodes => role.max_replicas.saturating_mul(role.ir.nodes_per_replica),
            gres => role.slurm_devices,
            exclusive => role.node_share >= 1.0,
            constraint => (!node.slurm_features.is_empty()).then(|| node.slurm_features.join("&")),
            time => node.slurm_max_time_min.map(time_limit),
            srun => Vec::<String>::new(),
            node_script => node_script(role, SLURM_NODE, SLURM_NODE_ADDRESS),
            signal_s => SERVICE_SIGNAL_S,
            slurm_tries => crate::slurm::SLURM_TRIES,
            slurm_retry_s => crate::slurm::SLURM_RETRY_S,
        };
        files.push(Manifest {
            path: format!("{}.sbatch", role.role),
            contents: render_one(env, &svc.service, "slurm/service.sbatch.j2", ctx)?,
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if svc.disaggregated {
        files.push(crate::baremetal::service::router_script(env, svc)?);
    }
    Ok(files)
}

/// Seconds before the time limit that a service's batch script gets SIGUSR1 to requeue itself:
/// counted, the requeue's tries ([`crate::slurm::SLURM_TRIES`] × 5 s) with room; Slurm may send
/// it up to a minute earlier still (sbatch(1), `--signal`).
const SERVICE_SIGNAL_S: u64 = 60;

/// Slurm's `D-HH:MM:00` for a partition's MaxTime: a service runs until stopped, so it asks for
/// all the partition allows.
fn time_limit(minutes: u64) -> String {
    format!(
        "{}-{:02}:{:02}:00",
        minutes / 1440,
        (minutes % 1440) / 60,
        minutes % 60
    )
}

/// A Slurm task's leader (the step's first node), rank and size, for the multi-node start.
const SLURM_NODE: &str = "LEADER=$(scontrol show hostnames \"$SLURM_STEP_NODELIST\" | head -n 1)\nNODE_RANK=$SLURM_PROCID\nNNODES=$SLURM_STEP_NUM_NODES\n";

/// A Slurm task's own address, as `NODE_ADDR`: the node's `NodeAddr`, the address slurmctld
/// and the other nodes reach it at (scontrol(1), `show node`; `-o` puts one node on one line),
/// or its Slurm name when scontrol does not answer. `SLURMD_NODENAME` is the name of the node
/// running the task (srun(1), OUTPUT ENVIRONMENT VARIABLES).
const SLURM_NODE_ADDRESS: &str = "NODE_ADDR=$(scontrol show node \"$SLURMD_NODENAME\" -o 2>/dev/null | sed -n 's/.*[[:space:]]NodeAddr=\\([^[:space:]]*\\).*/\\1/p') || NODE_ADDR=\nNODE_ADDR=${NODE_ADDR:-$SLURMD_NODENAME}\n";

/// What every node runs: the engine itself, or `node` (which sets `LEADER`, `NODE_RANK` and
/// `NNODES`) and then the engine's multi-node start. An engine that hands its peers its own
/// address ([`engine::EngineLaunch::host_env`], vLLM's NIXL side channel) first gets the node's
/// address, which `address` sets as `NODE_ADDR` (empty: the launcher has set it), as an IPv4
/// address when the node can resolve it: vLLM binds its side-channel listener to that host
/// too (`VLLM_NIXL_SIDE_CHANNEL_HOST`, "IP address used for NIXL handshake", vllm-project/vllm
/// `vllm/envs.py`), and ZeroMQ binds to an address or an interface name, not to a DNS name.
pub(crate) fn node_script(role: &RoleContext<'_>, node: &str, address: &str) -> String {
    let advertise = role
        .launch
        .host_env
        .map(|var| {
            format!(
                "{address}NODE_IP=$(getent ahostsv4 \"$NODE_ADDR\" 2>/dev/null | awk 'NR == 1 {{ print $1 }}') || NODE_IP=\nexport {var}=\"${{NODE_IP:-$NODE_ADDR}}\"\n"
            )
        })
        .unwrap_or_default();
    match role.launch.multi_node {
        None => format!("{advertise}exec \"$@\""),
        Some(m) => format!("{advertise}{node}{}", engine::multi_node_script(m)),
    }
}
