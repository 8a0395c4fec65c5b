//! Kubernetes: per job and site cluster, a JobSet with one replicated job per device group,
//! queued by Kueue (or, with `--flavor volcano`, a Volcano Job), the plan as a ConfigMap, the
//! rendezvous Service of a plan over several sites and the cheap-hours window; per site, the
//! cluster prerequisites every job shares ([`prerequisites`]).

mod pod;
pub mod prerequisites;
#[cfg(test)]
mod rank_table_tests;
pub mod window;

use crate::job::{Group, JobContext};
use crate::{Flavor, Manifest, Options, env};
use loam_ir::cluster::vendor::RankTable;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diagnostics::codes;
use loam_ir::names::dns_label;
use minijinja::Value;
use pod::Rendezvous;

/// The Kueue (and Volcano) priority value of each priority keyword (higher preempts lower).
pub const PRIORITIES: &[(&str, i64)] = &[
    ("low", 1_000),
    ("normal", 10_000),
    ("high", 100_000),
    ("critical", 1_000_000),
];

/// The folder of the cluster prerequisites, beside the job folders: `_` is never part of a
/// job folder's name (a DNS label), so no job can take it.
pub const PREREQUISITES: &str = "_prerequisites";

/// The Argo CD sync wave of every job object; prerequisites use negative waves.
pub const JOB_WAVE: i64 = 0;

/// The name of the (Workload)PriorityClass of a priority keyword.
pub fn priority_class(priority: &str) -> String {
    format!("loam-{}", dns_label(priority, 20))
}

/// The folder name of a site (a DNS label, so spec strings never shape a path).
pub fn site_label(site: &str) -> String {
    dns_label(site, 40)
}

/// The sites of a job's groups in plan order, each with its groups.
pub fn sites<'a, 'b>(job: &'b JobContext<'a>) -> Vec<(String, Vec<&'b Group<'a>>)> {
    let mut sites: Vec<(String, Vec<&Group<'a>>)> = Vec::new();
    for g in &job.groups {
        match sites.iter_mut().find(|(site, _)| *site == g.ir.site) {
            Some((_, groups)) => groups.push(g),
            None => sites.push((g.ir.site.clone(), vec![g])),
        }
    }
    sites
}

/// The ConfigMap in every site but the first that holds the rendezvous address.
pub fn rendezvous_config_map(job: &str) -> String {
    format!("{job}-rendezvous")
}

/// Renders the Kubernetes objects of one job: paths relative to the job's folder, one
/// sub-folder per site when its groups are at several sites.
pub fn render(job: &JobContext<'_>, options: &Options) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let env = env::environment().map_err(|e| vec![template_error(&job.job, &e)])?;
    let labels: Vec<(String, String)> = vec![
        (
            "app.kubernetes.io/managed-by".to_string(),
            "loam".to_string(),
        ),
        ("loam.io/job".to_string(), job.name.clone()),
    ];
    let annotations: Vec<(String, String)> = vec![
        (
            "argocd.argoproj.io/sync-wave".to_string(),
            JOB_WAVE.to_string(),
        ),
        ("loam.io/job-name".to_string(), job.job.clone()),
        ("loam.io/spec-file".to_string(), job.file.clone()),
        ("loam.io/tenant".to_string(), job.tenant.clone()),
        (
            "loam.io/interruptible".to_string(),
            job.interruptible.to_string(),
        ),
    ];
    let sites = sites(job);
    let several = sites.len() > 1;
    let first_group = job.groups.first().map_or("g0", |g| g.name.as_str());
    let first_host = match options.flavor {
        Flavor::Jobset => format!("{name}-{first_group}-0-0.{name}", name = job.name),
        Flavor::Volcano => format!("{name}-{first_group}-0.{name}", name = job.name),
    };
    let mut files = Vec::new();
    for (i, (site, groups)) in sites.iter().enumerate() {
        let rendezvous = if i == 0 {
            Rendezvous::Host(first_host.clone())
        } else {
            Rendezvous::ConfigMap(rendezvous_config_map(&job.name))
        };
        let mut pods = Vec::new();
        let mut rank_table = false;
        for g in groups {
            let ctx = pod::context(job, g, options, &labels, &rendezvous);
            rank_table |= ctx.rank_table.is_some();
            let text = render_one(
                &env,
                job,
                "kubernetes/pod.yaml.j2",
                Value::from_serialize(&ctx),
            )?;
            pods.push(Value::from_safe_string(text.trim_end().to_string()));
        }
        let ctx = minijinja::context! {
            job => Value::from_serialize(job),
            groups => Value::from_serialize(groups),
            labels => Value::from_serialize(&labels),
            annotations => Value::from_serialize(&annotations),
            priority_class => priority_class(&job.priority),
            pods => pods,
            nnodes => groups.iter().map(|g| g.ir.nodes).sum::<u64>(),
            site => site,
            several => several,
            first_group => first_group,
            port => pod::RENDEZVOUS_PORT,
            source_ranges => options.rendezvous_source_ranges,
            max_retry => volcano_max_retry(job),
            index_label => match options.flavor {
                // Kubernetes labels an Indexed Job's pods with their index (1.28 and later).
                Flavor::Jobset => "batch.kubernetes.io/job-completion-index",
                Flavor::Volcano => "volcano.sh/task-index",
            },
            ring => groups
                .iter()
                .find(|g| rank_table && g.rank_table == Some(RankTable::Ascend))
                .map(|g| pod::ascend_ring(&g.ir.device)),
        };
        let mut templates: Vec<(&str, &str)> = vec![("10-configmap.yaml", "configmap")];
        if rank_table {
            templates.push(("15-rank-table.yaml", "rank-table"));
        }
        templates.push(match options.flavor {
            Flavor::Jobset => ("20-jobset.yaml", "jobset"),
            Flavor::Volcano => ("20-volcano-job.yaml", "volcano-job"),
        });
        if several && i == 0 {
            templates.push(("30-rendezvous-service.yaml", "rendezvous-service"));
        }
        let folder = if several {
            format!("{}/", site_label(site))
        } else {
            String::new()
        };
        for (path, template) in templates {
            files.push(Manifest {
                path: format!("{folder}{path}"),
                contents: render_one(
                    &env,
                    job,
                    &format!("kubernetes/{template}.yaml.j2"),
                    ctx.clone(),
                )?,
            });
        }
        if let Some(window) = window::render(&env, job, options, site, &labels, &annotations)? {
            files.push(Manifest {
                path: format!("{folder}40-window.yaml"),
                contents: window,
            });
        }
    }
    Ok(files)
}

/// Volcano's `maxRetry` of `job`: its restart budget plus one resume per opening of its
/// cheap-hours window. Volcano counts a `ResumeJob` of an aborted job as a retry
/// (volcano-sh/volcano `pkg/controllers/job/state/aborted.go`: `RetryCount++`; `restarting.go`
/// fails the job at `maxRetry`), so a daily window spent the budget in about six days.
fn volcano_max_retry(job: &JobContext<'_>) -> u64 {
    let budget = u64::from(job.max_restarts.unsigned_abs());
    let resumes = crate::window::window(job).map_or(0, |w| {
        // One opening per day of training, whole days up.
        (job.train_time_h.max(0.0) / w.hours.max(1) as f64).ceil() as u64
    });
    budget.saturating_add(resumes)
}

/// Renders `template` with `ctx`, turning a template error into L4009.
pub(crate) fn render_one(
    env: &minijinja::Environment<'_>,
    job: &JobContext<'_>,
    template: &str,
    ctx: Value,
) -> Result<String, Vec<Diagnostic>> {
    env.get_template(template)
        .and_then(|t| t.render(ctx))
        .map_err(|e| vec![template_error(&job.job, &e)])
}

/// L4009: a template failed, which is a bug in loam.
pub(crate) fn template_error(job: &str, e: &minijinja::Error) -> Diagnostic {
    crate::job::error(
        codes::emit::INTERNAL_ERROR,
        format!("internal error rendering job `{job}`: {e}"),
        "report this as a bug in loam, with the plan JSON",
    )
}
