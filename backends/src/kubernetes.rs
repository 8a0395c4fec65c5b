//! Kubernetes: per job and site cluster, a JobSet with one replicated job per device group,
//! queued by Kueue (or, with `--flavor volcano`, a Volcano Job), the plan as a ConfigMap, the
//! rendezvous Service of a plan over several sites and the cheap-hours window; per site, the
//! cluster prerequisites every job shares ([`prerequisites`]).

pub mod classify;
mod pod;
pub mod prerequisites;
#[cfg(test)]
mod rank_table_tests;
pub mod service;
pub mod window;

use crate::change::Reason;
use crate::env::{render_one, template_error};
use crate::job::{Group, JobContext};
use crate::layout::FolderSites;
use crate::service::ServiceContext;
use crate::{Backend, Flavor, Manifest, Options, PLACEHOLDER_IMAGE, env};
use loam_ir::cluster::vendor::RankTable;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::names::dns_label;
use loam_ir::plan::PlanDocument;
use minijinja::Value;
use pod::Rendezvous;

/// The Kubernetes backend: JobSet with Kueue (or a Volcano Job), per job and site cluster, and
/// the cluster prerequisites once per site.
pub struct Kubernetes;

impl Backend for Kubernetes {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    fn summary(&self) -> &'static str {
        "JobSet (or Volcano Job) with Kueue queueing, plan ConfigMap, LocalQueue, priority class"
    }

    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        TEMPLATES
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

    fn render_shared(
        &self,
        doc: &PlanDocument,
        options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
        prerequisites::render(doc, options)
    }

    fn lay_out(&self, manifests: Vec<Manifest>, sites: &FolderSites) -> Vec<Manifest> {
        let mut placed = crate::layout::by_site(manifests, sites);
        placed.sort_by(|a, b| a.path.cmp(&b.path));
        placed
    }

    fn still_to_provide(&self, doc: &PlanDocument, options: &Options) -> Vec<String> {
        let mut found = Vec::new();
        if options.image == PLACEHOLDER_IMAGE {
            found.push(format!(
                "the trainer image `{PLACEHOLDER_IMAGE}` is a placeholder: pass --image"
            ));
        }
        found.extend(crate::trainer_placeholder(options));
        let several_sites = doc.plans.iter().any(|p| {
            p.groups
                .iter()
                .any(|g| p.groups.first().is_some_and(|first| first.site != g.site))
        });
        if several_sites && options.rendezvous_source_ranges.is_empty() {
            found.push(
                "the rendezvous load balancer of a plan over several sites is open to every address: pass --rendezvous-source-ranges".to_string(),
            );
        }
        if options.checkpoint_storage_class.is_none() {
            found.push(
                "the checkpoint volumes use the cluster's default storage class, which must offer ReadWriteMany: pass --checkpoint-storage-class".to_string(),
            );
        }
        found
    }

    fn weights_to_provide(&self, weights: &str, namespace: &str) -> String {
        format!(
            "the engines load the weights `{weights}` into the service's claim `<service>-model-cache` at first start: a gated repository needs its token in the Secret `hf-token` (key `token`) of namespace `{namespace}`, which loam does not emit"
        )
    }

    fn probe_log(&self) -> &'static str {
        "the last node's pod log (`kubectl logs`), saved to a file"
    }

    fn classify(&self, file: &str, shared: bool, old: &str, new: &str) -> Vec<Reason> {
        classify::file(file, shared, old, new)
    }
}

/// The Kubernetes templates, jobs' and services'.
const TEMPLATES: &[(&str, &str)] = &[
    (
        "kubernetes/clusterqueue.yaml.j2",
        include_str!("../templates/kubernetes/clusterqueue.yaml.j2"),
    ),
    (
        "kubernetes/lender-clusterqueue.yaml.j2",
        include_str!("../templates/kubernetes/lender-clusterqueue.yaml.j2"),
    ),
    (
        "kubernetes/configmap.yaml.j2",
        include_str!("../templates/kubernetes/configmap.yaml.j2"),
    ),
    (
        "kubernetes/jobset.yaml.j2",
        include_str!("../templates/kubernetes/jobset.yaml.j2"),
    ),
    (
        "kubernetes/localqueue.yaml.j2",
        include_str!("../templates/kubernetes/localqueue.yaml.j2"),
    ),
    (
        "kubernetes/namespace.yaml.j2",
        include_str!("../templates/kubernetes/namespace.yaml.j2"),
    ),
    (
        "kubernetes/pod.yaml.j2",
        include_str!("../templates/kubernetes/pod.yaml.j2"),
    ),
    (
        "kubernetes/pvc.yaml.j2",
        include_str!("../templates/kubernetes/pvc.yaml.j2"),
    ),
    (
        "kubernetes/model-cache-pvc.yaml.j2",
        include_str!("../templates/kubernetes/model-cache-pvc.yaml.j2"),
    ),
    (
        "kubernetes/priorityclass.yaml.j2",
        include_str!("../templates/kubernetes/priorityclass.yaml.j2"),
    ),
    (
        "kubernetes/rank-table.yaml.j2",
        include_str!("../templates/kubernetes/rank-table.yaml.j2"),
    ),
    (
        "kubernetes/rendezvous-service.yaml.j2",
        include_str!("../templates/kubernetes/rendezvous-service.yaml.j2"),
    ),
    (
        "kubernetes/resourceflavor.yaml.j2",
        include_str!("../templates/kubernetes/resourceflavor.yaml.j2"),
    ),
    (
        "kubernetes/topology.yaml.j2",
        include_str!("../templates/kubernetes/topology.yaml.j2"),
    ),
    (
        "kubernetes/volcano-job.yaml.j2",
        include_str!("../templates/kubernetes/volcano-job.yaml.j2"),
    ),
    (
        "kubernetes/volcano-queue.yaml.j2",
        include_str!("../templates/kubernetes/volcano-queue.yaml.j2"),
    ),
    (
        "kubernetes/window.yaml.j2",
        include_str!("../templates/kubernetes/window.yaml.j2"),
    ),
    (
        "kubernetes/workloadpriorityclass.yaml.j2",
        include_str!("../templates/kubernetes/workloadpriorityclass.yaml.j2"),
    ),
    (
        "kubernetes/service-pod.yaml.j2",
        include_str!("../templates/kubernetes/service-pod.yaml.j2"),
    ),
    (
        "kubernetes/service-workload.yaml.j2",
        include_str!("../templates/kubernetes/service-workload.yaml.j2"),
    ),
    (
        "kubernetes/service-pdb.yaml.j2",
        include_str!("../templates/kubernetes/service-pdb.yaml.j2"),
    ),
    (
        "kubernetes/service-service.yaml.j2",
        include_str!("../templates/kubernetes/service-service.yaml.j2"),
    ),
    (
        "kubernetes/service-hpa.yaml.j2",
        include_str!("../templates/kubernetes/service-hpa.yaml.j2"),
    ),
    (
        "kubernetes/service-router.yaml.j2",
        include_str!("../templates/kubernetes/service-router.yaml.j2"),
    ),
];

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
                env,
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
                    env,
                    job,
                    &format!("kubernetes/{template}.yaml.j2"),
                    ctx.clone(),
                )?,
            });
        }
        if let Some(window) = window::render(env, job, options, site, &labels, &annotations)? {
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
