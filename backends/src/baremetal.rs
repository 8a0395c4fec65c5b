//! Bare metal: a hostfile, a launcher script that runs the trainer on every host over ssh inside
//! the trainer contract and resumes all hosts from their checkpoint when one fails (or, with a
//! cheap-hours window, when the window opens again), and the plan JSON.

use crate::contract;
use crate::job::JobContext;
use crate::kubernetes::{render_one, template_error};
use crate::window::{self, Window};
use crate::{Manifest, Options, env};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::names::dns_label;
use minijinja::Value;
use serde::Serialize;

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
            contents: render_one(&env, job, "baremetal/hostfile.j2", ctx.clone())?,
        },
        Manifest {
            path: "launch.sh".to_string(),
            contents: render_one(&env, job, "baremetal/launch.sh.j2", ctx)?,
        },
        Manifest {
            path: "plan.json".to_string(),
            contents: format!("{}\n", job.plan_json),
        },
    ])
}
