//! Kubernetes: a JobSet with one replicated job per device group, queued by Kueue (or, with
//! `--flavor volcano`, a Volcano Job and Queue), the plan as a ConfigMap, and the tenant's
//! LocalQueue and the WorkloadPriorityClass.

use crate::job::{Group, JobContext};
use crate::{Flavor, Manifest, Options, env};
use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::diagnostics::codes;
use minijinja::Value;
use serde::Serialize;

/// The Kueue priority value of each priority keyword (higher preempts lower).
pub const PRIORITIES: &[(&str, i64)] = &[
    ("low", 1_000),
    ("normal", 10_000),
    ("high", 100_000),
    ("critical", 1_000_000),
];

/// The command that starts the trainer in a pod: it computes the node rank from the group's
/// offset and the pod's index, then runs the arguments. A constant: no spec string in it.
fn launch(index_var: &str) -> Vec<String> {
    vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        format!(
            "NODE_RANK=$((NODE_RANK_OFFSET + ${{{index_var}:?}})); export NODE_RANK; exec \"$@\""
        ),
        "loam-launch".to_string(),
    ]
}

#[derive(Serialize)]
struct PodContext<'a> {
    job: &'a JobContext<'a>,
    g: &'a Group<'a>,
    image: &'a str,
    labels: &'a [(String, String)],
    node_selector_terms: Vec<(String, String)>,
    launch: Vec<String>,
    master_addr: &'a str,
    resource: String,
}

/// Renders the Kubernetes objects of one job.
pub fn render(job: &JobContext<'_>, options: &Options) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let env = env::environment().map_err(|e| vec![template_error(&job.job, &e)])?;
    let priority_value = PRIORITIES
        .iter()
        .find(|(name, _)| *name == job.priority)
        .map_or(10_000, |(_, v)| *v);
    let priority_class = format!(
        "loam-{}",
        loam_compiler::names::dns_label(&job.priority, 20)
    );
    let labels: Vec<(String, String)> = vec![
        (
            "app.kubernetes.io/managed-by".to_string(),
            "loam".to_string(),
        ),
        ("loam.io/job".to_string(), job.name.clone()),
    ];
    let annotations: Vec<(String, String)> = vec![
        ("loam.io/job-name".to_string(), job.job.clone()),
        ("loam.io/spec-file".to_string(), job.file.clone()),
        ("loam.io/tenant".to_string(), job.tenant.clone()),
        (
            "loam.io/interruptible".to_string(),
            job.interruptible.to_string(),
        ),
    ];
    let first = job.groups.first().map(|g| g.name.as_str()).unwrap_or("g0");
    let (master_addr, index_var) = match options.flavor {
        Flavor::Jobset => (
            format!("{name}-{first}-0-0.{name}", name = job.name),
            "JOB_COMPLETION_INDEX",
        ),
        Flavor::Volcano => (
            format!("{name}-{first}-0.{name}", name = job.name),
            "VC_TASK_INDEX",
        ),
    };
    let mut pods = Vec::new();
    for g in &job.groups {
        let mut terms: Vec<(String, String)> =
            g.ir.node_labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        if let Some(block) = &g.ir.block {
            terms.push(("loam.io/topology-block".to_string(), block.clone()));
            terms.sort();
        }
        let resource = match (&g.ir.slice, g.ir.k8s_resource.as_str()) {
            (Some(slice), "nvidia.com/gpu") => format!("nvidia.com/mig-{slice}"),
            _ => g.ir.k8s_resource.clone(),
        };
        let ctx = PodContext {
            job,
            g,
            image: &options.image,
            labels: &labels,
            node_selector_terms: terms,
            launch: launch(index_var),
            master_addr: &master_addr,
            resource,
        };
        let pod = render_one(
            &env,
            job,
            "kubernetes/pod.yaml.j2",
            Value::from_serialize(&ctx),
        )?;
        pods.push(Value::from_safe_string(pod.trim_end().to_string()));
    }
    let ctx = minijinja::context! {
        job => Value::from_serialize(job),
        labels => Value::from_serialize(&labels),
        annotations => Value::from_serialize(&annotations),
        priority_class => priority_class,
        priority_value => priority_value,
        pods => pods,
    };
    let files: &[(&str, &str)] = match options.flavor {
        Flavor::Jobset => &[
            ("configmap.yaml", "kubernetes/configmap.yaml.j2"),
            ("jobset.yaml", "kubernetes/jobset.yaml.j2"),
            ("localqueue.yaml", "kubernetes/localqueue.yaml.j2"),
            (
                "workloadpriorityclass.yaml",
                "kubernetes/priorityclass.yaml.j2",
            ),
        ],
        Flavor::Volcano => &[
            ("configmap.yaml", "kubernetes/configmap.yaml.j2"),
            ("volcano-job.yaml", "kubernetes/volcano-job.yaml.j2"),
            ("volcano-queue.yaml", "kubernetes/volcano-queue.yaml.j2"),
        ],
    };
    files
        .iter()
        .map(|(path, template)| {
            Ok(Manifest {
                path: (*path).to_string(),
                contents: render_one(&env, job, template, ctx.clone())?,
            })
        })
        .collect()
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
