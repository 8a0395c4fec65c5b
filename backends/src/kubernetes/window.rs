//! The cheap-hours window of an interruptible plan (`plan.schedule`): two CronJobs that
//! deactivate the job when the window closes and reactivate it when it opens, with the RBAC
//! they need. Kueue: the job's Workload `spec.active` (Kueue evicts an inactive workload, and
//! the pods' SIGTERM becomes a checkpoint request); Volcano: an `AbortJob` / `ResumeJob` bus
//! Command, what `vcctl job suspend` and `resume` create.

use crate::job::JobContext;
use crate::{Flavor, Options};
use loam_ir::diagnostics::Diagnostic;
use minijinja::Value;

/// An image with `sh` and `kubectl`, for the window's CronJobs.
pub const KUBECTL_IMAGE: &str = "docker.io/alpine/k8s:1.33.0";

/// Kueue: finds the JobSet's Workload by the owner's UID and sets `spec.active`. Constant text:
/// the names come in through the environment.
const KUEUE_SCRIPT: &str = r#"set -eu
uid=$(kubectl get jobsets.jobset.x-k8s.io -n "$NAMESPACE" "$JOB" -o jsonpath='{.metadata.uid}')
for w in $(kubectl get workloads.kueue.x-k8s.io -n "$NAMESPACE" -l "kueue.x-k8s.io/job-uid=$uid" -o name); do
  kubectl patch -n "$NAMESPACE" "$w" --type=merge -p "{\"spec\":{\"active\":$ACTIVE}}"
done"#;

/// Volcano: creates the bus Command that aborts (suspends) or resumes the Job.
const VOLCANO_SCRIPT: &str = r#"set -eu
uid=$(kubectl get jobs.batch.volcano.sh -n "$NAMESPACE" "$JOB" -o jsonpath='{.metadata.uid}')
if [ "$ACTIVE" = true ]; then action=ResumeJob; else action=AbortJob; fi
kubectl create -f - <<EOF
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata:
  generateName: $JOB-window-
  namespace: $NAMESPACE
  ownerReferences:
    - {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: $JOB, uid: $uid, controller: true}
action: $action
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: $JOB, uid: $uid}
EOF"#;

/// The window's objects for the job's pods at `site`, or `None` without a schedule (or with a
/// window of the whole day).
pub fn render(
    env: &minijinja::Environment<'_>,
    job: &JobContext<'_>,
    options: &Options,
    site: &str,
    labels: &[(String, String)],
    annotations: &[(String, String)],
) -> Result<Option<String>, Vec<Diagnostic>> {
    // The same window the Slurm and bare-metal scripts keep (none when never or always open).
    let Some(window) = crate::window::window(job) else {
        return Ok(None);
    };
    let (open, hours) = (window.open, window.hours);
    let close = (open + hours) % 24;
    let (script, rules) = match options.flavor {
        Flavor::Jobset => (
            KUEUE_SCRIPT,
            vec![
                ("jobset.x-k8s.io", "jobsets", vec!["get"]),
                ("kueue.x-k8s.io", "workloads", vec!["get", "list", "patch"]),
            ],
        ),
        Flavor::Volcano => (
            VOLCANO_SCRIPT,
            vec![
                ("batch.volcano.sh", "jobs", vec!["get"]),
                ("bus.volcano.sh", "commands", vec!["create"]),
            ],
        ),
    };
    let ctx = minijinja::context! {
        job => Value::from_serialize(job),
        labels => Value::from_serialize(labels),
        annotations => Value::from_serialize(annotations),
        open => open,
        close => close,
        hours => hours,
        time_zone => window.time_zone.as_deref(),
        site => site,
        script => script,
        rules => Value::from_serialize(&rules),
        image => options.window_image.as_deref().unwrap_or(KUBECTL_IMAGE),
    };
    crate::env::render_one(env, job, "kubernetes/window.yaml.j2", ctx).map(Some)
}
