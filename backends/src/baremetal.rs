//! Bare metal: a hostfile, a launcher script that runs the trainer on every host over ssh inside
//! the trainer contract and resumes all hosts from their checkpoint when one fails (or, with a
//! cheap-hours window, when the window opens again), and the plan JSON.

pub mod service;

use crate::change::{self, Effect, Reason};
use crate::contract;
use crate::env::{render_one, template_error};
use crate::job::JobContext;
use crate::service::ServiceContext;
use crate::window::{self, Window};
use crate::{Backend, Manifest, Options, env};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::names::dns_label;
use minijinja::Value;
use serde::Serialize;

/// The bare-metal backend: a hostfile and an ssh launcher per job and per service.
pub struct Baremetal;

impl Backend for Baremetal {
    fn name(&self) -> &'static str {
        "baremetal"
    }

    fn summary(&self) -> &'static str {
        "A hostfile, an ssh launcher and the plan JSON"
    }

    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "baremetal/hostfile.j2",
                include_str!("../templates/baremetal/hostfile.j2"),
            ),
            (
                "baremetal/launch.sh.j2",
                include_str!("../templates/baremetal/launch.sh.j2"),
            ),
            (
                "baremetal/service-hostfile.j2",
                include_str!("../templates/baremetal/service-hostfile.j2"),
            ),
            (
                "baremetal/service-launch.sh.j2",
                include_str!("../templates/baremetal/service-launch.sh.j2"),
            ),
            (
                "baremetal/service-router.sh.j2",
                include_str!("../templates/baremetal/service-router.sh.j2"),
            ),
        ]
    }

    fn render_job(
        &self,
        job: &JobContext<'_>,
        options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
        render(job, options)
    }

    fn render_service(
        &self,
        service: &ServiceContext<'_>,
        _options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
        service::render(service)
    }

    fn probe_log(&self) -> &'static str {
        "the last node's log, `$LOGDIR/node<N-1>.log` on the launching machine"
    }

    /// The launcher and the hostfile are read when the job starts, so any change to them means
    /// stop and relaunch; `plan.json` is data the trainer reads at its next start.
    fn classify(&self, file: &str, shared: bool, old: &str, new: &str) -> Vec<Reason> {
        let name = file.rsplit('/').next().unwrap_or(file);
        let reason = if shared {
            change::shared_script(file, old, new)
        } else if name == "plan.json" {
            change::script(
                file,
                old,
                new,
                Effect::InPlace,
                "data the trainer reads at its next start: copy it to the hosts",
            )
        } else {
            change::script(
                file,
                old,
                new,
                Effect::Replace,
                "read when the launch starts: stop and relaunch",
            )
        };
        reason.into_iter().collect()
    }
}

#[derive(Serialize)]
struct LaunchContext<'a> {
    job: &'a JobContext<'a>,
    placeholders: Vec<String>,
    /// The contract's wrapper, which the launcher runs around the trainer on every host.
    contract: &'static str,
    /// Names each node's lock on its host: the job and its checkpoint folder, because two runs
    /// writing one checkpoint folder must never overlap, while tests and reruns with their own
    /// folders may.
    host_lock: String,
    /// The cheap-hours window the launcher keeps, when the plan has one.
    window: Option<Window>,
}

/// Renders the hostfile, launcher and plan of one job.
pub fn render(job: &JobContext<'_>, _options: &Options) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let env = env::environment().map_err(|e| vec![template_error(&job.job, &e)])?;
    let ctx = LaunchContext {
        job,
        placeholders: job
            .groups
            .iter()
            .map(|g| dns_label(&g.ir.node_group, 40))
            .collect(),
        contract: contract::WRAPPER,
        host_lock: dns_label(&format!("{} {}", job.name, job.checkpoint_path), 40),
        window: window::window(job),
    };
    let ctx = Value::from_serialize(&ctx);
    Ok(vec![
        Manifest {
            path: "hostfile".to_string(),
            contents: render_one(env, job, "baremetal/hostfile.j2", ctx.clone())?,
        },
        Manifest {
            path: "launch.sh".to_string(),
            contents: render_one(env, job, "baremetal/launch.sh.j2", ctx)?,
        },
        Manifest {
            path: "plan.json".to_string(),
            contents: format!("{}\n", job.plan_json),
        },
    ])
}
