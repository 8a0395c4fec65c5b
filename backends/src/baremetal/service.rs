//! Bare metal: per role a hostfile (placeholders per node: host, replica, node rank) and a
//! launcher that starts the engine on every host over ssh; a disaggregated service adds the
//! router's script.

use crate::escape::shell_quote;
use crate::service::engine::{self, RouterTargets};
use crate::service::{ServiceContext, render_one};
use crate::{Manifest, env};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::names::dns_label;
use loam_ir::types::Engine;
use minijinja::Value;

/// Renders `<role>-hostfile` and `<role>-launch.sh` for every role (and `router.sh`).
pub fn render(svc: &ServiceContext<'_>) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let env = env::environment().map_err(|e| vec![crate::env::template_error(&svc.service, &e)])?;
    let mut files = Vec::new();
    for role in &svc.roles {
        let placeholder = dns_label(&role.ir.group.node_group, 40);
        let mut lines = Vec::new();
        for replica in 0..role.max_replicas {
            for rank in 0..role.ir.nodes_per_replica {
                let n = replica * role.ir.nodes_per_replica + rank + 1;
                lines.push((format!("{placeholder}-{n}"), replica, rank));
            }
        }
        let settings: String = role
            .env
            .iter()
            .map(|(k, v)| format!("export {k}={};", shell_quote(v)))
            .collect::<Vec<_>>()
            .join(" ");
        let hostfile = format!("{}-hostfile", role.role);
        let ctx = minijinja::context! {
            svc => Value::from_serialize(svc),
            role => Value::from_serialize(role),
            lines => lines,
            hostfile => hostfile,
            settings => settings,
            // The launcher sets the leader, rank, size and the host's address on the ssh
            // command line.
            node_script => crate::slurm::service::node_script(role, "", ""),
        };
        files.push(Manifest {
            path: hostfile.clone(),
            contents: render_one(
                env,
                &svc.service,
                "baremetal/service-hostfile.j2",
                ctx.clone(),
            )?,
        });
        files.push(Manifest {
            path: format!("{}-launch.sh", role.role),
            contents: render_one(env, &svc.service, "baremetal/service-launch.sh.j2", ctx)?,
        });
    }
    if svc.disaggregated {
        files.push(router_script(env, svc)?);
    }
    Ok(files)
}

/// `router.sh`: the router with the engines' URLs given as its arguments (Slurm and bare metal
/// learn the hosts only when the replicas start).
pub(crate) fn router_script(
    env: &minijinja::Environment<'_>,
    svc: &ServiceContext<'_>,
) -> Result<Manifest, Vec<Diagnostic>> {
    let port_of = |role: &str| {
        svc.roles
            .iter()
            .find(|r| r.role == role)
            .map_or(engine::ROUTER_PORT, |r| r.launch.port)
    };
    let ctx = minijinja::context! {
        svc => Value::from_serialize(svc),
        sglang => svc.plan.engine == Engine::Sglang,
        port => engine::ROUTER_PORT,
        prefill_port => port_of("prefill"),
        decode_port => port_of("decode"),
        bootstrap => engine::SGLANG_BOOTSTRAP_PORT,
        command => engine::router(svc.plan.engine, &RouterTargets::Later),
    };
    Ok(Manifest {
        path: "router.sh".to_string(),
        contents: render_one(env, &svc.service, "baremetal/service-router.sh.j2", ctx)?,
    })
}
