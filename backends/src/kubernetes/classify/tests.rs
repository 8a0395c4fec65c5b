//! Unit tests of the Kubernetes rules, on small hand-written manifests; `tests/tests/diff_git.rs`
//! runs them on the manifests the backends render.

use crate::Target;
use crate::change::Effect;
use crate::change::Files;
use crate::change::testing::{classify, files};

const JOBSET: &str = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: a\n  namespace: n\n  labels:\n    team: x\n    kueue.x-k8s.io/queue-name: q\nspec:\n  replicatedJobs:\n    - name: g0\n      template:\n        spec:\n          parallelism: 2\n";

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-plan\n  namespace: n\ndata:\n  plan.json: |\n    {\"a\": 1}\n";

fn k8s(jobset: &str, configmap: &str) -> Files {
    files(&[("a/jobset.yaml", jobset), ("a/configmap.yaml", configmap)])
}

#[test]
fn a_changed_replicated_job_forces_a_replacement() {
    let old = k8s(JOBSET, CONFIGMAP);
    let new = k8s(
        &JOBSET.replace("parallelism: 2", "parallelism: 4"),
        CONFIGMAP,
    );
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert!(verdict.replaces());
    let reason = verdict.forcing().next().unwrap();
    assert_eq!(
        reason.sentence(),
        "jobset.yaml spec.replicatedJobs changed (immutable on a running JobSet)"
    );
    assert_eq!(
        reason.at.as_deref(),
        Some("spec.replicatedJobs[0].template.spec.parallelism")
    );
}

#[test]
fn plan_data_and_labels_are_updated_in_place() {
    let old = k8s(JOBSET, CONFIGMAP);
    let new = k8s(
        &JOBSET.replace("team: x", "team: y"),
        &CONFIGMAP.replace("\"a\": 1", "\"a\": 2"),
    );
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert!(!verdict.replaces(), "{verdict:?}");
    let fields: Vec<&str> = verdict.reasons.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(fields, ["data", "metadata.labels"]);
    assert!(verdict.reasons.iter().all(|r| r.effect == Effect::InPlace));
}

#[test]
fn the_queue_label_of_a_running_job_is_fixed() {
    let old = k8s(JOBSET, CONFIGMAP);
    let new = k8s(&JOBSET.replace("queue-name: q", "queue-name: r"), CONFIGMAP);
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert_eq!(
        verdict.forcing().next().unwrap().field,
        "metadata.labels.kueue.x-k8s.io/queue-name"
    );
}

#[test]
fn an_immutable_configmap_cannot_take_new_data() {
    let frozen = format!("{CONFIGMAP}immutable: true\n");
    let old = k8s(JOBSET, &frozen);
    let new = k8s(JOBSET, &frozen.replace("\"a\": 1", "\"a\": 2"));
    assert!(classify(&old, &new, Target::Kubernetes).replaces());
}

#[test]
fn unknown_kinds_non_yaml_files_and_new_job_objects_are_replacements() {
    let unknown =
        "apiVersion: example.com/v1\nkind: Trainer\nmetadata:\n  name: a\nspec:\n  x: 1\n";
    let old = files(&[("a/trainer.yaml", unknown)]);
    let new = files(&[("a/trainer.yaml", &unknown.replace("x: 1", "x: 2"))]);
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert_eq!(
        verdict.forcing().next().unwrap().sentence(),
        "trainer.yaml spec.x changed (a kind loam does not know: treated as replaced)"
    );

    let old = files(&[("a/notes.txt", "a")]);
    let new = files(&[("a/notes.txt", "b")]);
    assert!(classify(&old, &new, Target::Kubernetes).replaces());

    let old = k8s(JOBSET, CONFIGMAP);
    let mut new = old.clone();
    new.insert(
        "a/extra.yaml".into(),
        CONFIGMAP.replace("a-plan", "a-extra"),
    );
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert_eq!(
        verdict.forcing().next().unwrap().sentence(),
        "extra.yaml ConfigMap/a-extra added (the job's objects differ)"
    );
}

#[test]
fn shared_objects_and_prerequisites_update_the_cluster() {
    let queue = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata:\n  name: q\n  namespace: n\nspec:\n  clusterQueue: q\n";
    let old = files(&[("a/localqueue.yaml", queue)]);
    let new = files(&[(
        "a/localqueue.yaml",
        &queue.replace("clusterQueue: q", "clusterQueue: r"),
    )]);
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert!(!verdict.replaces());
    assert_eq!(verdict.reasons[0].effect, Effect::Cluster);

    // Any kind below `_prerequisites` is shared, even one that would replace a job elsewhere.
    let old = files(&[("_prerequisites/site-a/jobset.yaml", JOBSET)]);
    let new = files(&[(
        "_prerequisites/site-a/jobset.yaml",
        &JOBSET.replace("parallelism: 2", "parallelism: 3"),
    )]);
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert!(!verdict.replaces(), "{verdict:?}");
    assert_eq!(verdict.reasons[0].file, "_prerequisites/site-a/jobset.yaml");
}

#[test]
fn volcano_jobs_may_rescale_but_not_change_their_pods() {
    let job = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: a\nspec:\n  minAvailable: 2\n  tasks:\n    - name: g0\n      replicas: 2\n      template:\n        spec:\n          containers: [{name: t, args: [\"--tensor-parallel=8\"]}]\n";
    let old = files(&[("a/volcano-job.yaml", job)]);
    let rescaled = job
        .replace("minAvailable: 2", "minAvailable: 3")
        .replace("replicas: 2", "replicas: 3");
    let new = files(&[("a/volcano-job.yaml", &rescaled)]);
    assert!(!classify(&old, &new, Target::Kubernetes).replaces());
    let new = files(&[("a/volcano-job.yaml", &job.replace("=8", "=4"))]);
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert_eq!(
        verdict.forcing().next().unwrap().sentence(),
        "volcano-job.yaml spec.tasks changed (immutable once a Volcano Job is created)"
    );
}

#[test]
fn a_batch_job_template_is_immutable_but_parallelism_is_not() {
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: a\nspec:\n  parallelism: 2\n  template:\n    spec:\n      restartPolicy: Never\n";
    let old = files(&[("a/job.yaml", job)]);
    let new = files(&[(
        "a/job.yaml",
        &job.replace("parallelism: 2", "parallelism: 1"),
    )]);
    assert!(!classify(&old, &new, Target::Kubernetes).replaces());
    let new = files(&[("a/job.yaml", &job.replace("Never", "OnFailure"))]);
    assert_eq!(
        classify(&old, &new, Target::Kubernetes)
            .forcing()
            .next()
            .unwrap()
            .field,
        "spec.template"
    );
}

/// The review's finding 6: an interruptible job's window (a CronJob that suspends and resumes
/// the JobSet) moved to another hour read as "a kind loam does not know: treated as replaced".
/// A CronJob's schedule may change (Kubernetes `ValidateCronJobUpdate` refuses no spec change),
/// so the job is updated in place; a RoleBinding's `roleRef` still may not change.
#[test]
fn a_new_window_schedule_is_an_update_not_a_replacement() {
    const CRONJOB: &str = "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: a-window-start\n  namespace: n\nspec:\n  schedule: \"0 22 * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers:\n            - name: k\n";
    const BINDING: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: a-window\n  namespace: n\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: a-window\nsubjects:\n  - kind: ServiceAccount\n    name: a-window\n";
    let old = files(&[("a/window.yaml", CRONJOB), ("a/binding.yaml", BINDING)]);
    let new = files(&[
        ("a/window.yaml", &CRONJOB.replace("0 22", "0 20")),
        ("a/binding.yaml", BINDING),
    ]);
    let verdict = classify(&old, &new, Target::Kubernetes);
    assert!(!verdict.replaces(), "{verdict:?}");
    let fields: Vec<&str> = verdict.reasons.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(fields, ["spec"]);

    let renamed = files(&[
        ("a/window.yaml", CRONJOB),
        (
            "a/binding.yaml",
            &BINDING.replace("  name: a-window\nsubjects", "  name: b-window\nsubjects"),
        ),
    ]);
    assert!(classify(&old, &renamed, Target::Kubernetes).replaces());
}
