//! Bare metal: a hostfile, a launcher script that starts the trainer on every host over ssh and
//! stops all of them when one fails or time runs out, and the plan JSON.

use crate::job::JobContext;
use crate::kubernetes::{render_one, template_error};
use crate::{Manifest, Options, env};
use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::names::dns_label;
use minijinja::Value;
use serde::Serialize;

#[derive(Serialize)]
struct LaunchContext<'a> {
    job: &'a JobContext<'a>,
    placeholders: Vec<String>,
    timeout_s: u64,
}

/// Renders the hostfile, launcher and plan of one job.
pub fn render(job: &JobContext<'_>, _options: &Options) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let env = env::environment().map_err(|e| vec![template_error(&job.job, &e)])?;
    let timeout_s = (job.train_time_h.max(0.0) * 3600.0 * 1.1).ceil() as u64 + job.grace_s;
    let ctx = LaunchContext {
        job,
        placeholders: job
            .groups
            .iter()
            .map(|g| dns_label(&g.ir.node_group, 40))
            .collect(),
        timeout_s,
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
