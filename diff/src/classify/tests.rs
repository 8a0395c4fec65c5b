//! Unit tests of the generic classification; each backend's rules are tested where they live
//! (`backends/src/kubernetes/classify/tests.rs`, `backends/src/change/tests.rs`), and
//! `tests/tests/diff_git.rs` runs them on the manifests the backends render.

use super::*;
use loam_backends::change::Effect;

fn files(pairs: &[(&str, &str)]) -> Files {
    pairs
        .iter()
        .map(|(p, t)| ((*p).to_string(), (*t).to_string()))
        .collect()
}

const JOBSET: &str = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: a\n  namespace: n\n  labels:\n    team: x\n    kueue.x-k8s.io/queue-name: q\nspec:\n  replicatedJobs:\n    - name: g0\n      template:\n        spec:\n          parallelism: 2\n";

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-plan\n  namespace: n\ndata:\n  plan.json: |\n    {\"a\": 1}\n";

fn k8s(jobset: &str, configmap: &str) -> Files {
    files(&[("a/jobset.yaml", jobset), ("a/configmap.yaml", configmap)])
}

#[test]
fn a_plan_without_manifests_on_one_side_is_a_replacement() {
    let old = k8s(JOBSET, CONFIGMAP);
    assert!(classify(&old, &Files::new(), Target::Kubernetes).replaces());
    assert!(
        classify(&Files::new(), &Files::new(), Target::Kubernetes)
            .reasons
            .is_empty()
    );
}

#[test]
fn the_verdict_names_its_backend_and_puts_replacements_first() {
    let script = "#!/bin/bash\nsrun train --tp=8\n";
    let old = files(&[("a/job.sbatch", script)]);
    let new = files(&[("a/job.sbatch", &script.replace("=8", "=4"))]);
    let verdict = classify(&old, &new, Target::Slurm);
    assert_eq!(verdict.backend, "slurm");
    assert!(verdict.replaces());
    // New plan data (in place) and a new replicated job (a replacement): the replacement comes
    // first although its file sorts after.
    let old = files(&[("a/a.yaml", CONFIGMAP), ("a/b.yaml", JOBSET)]);
    let new = files(&[
        ("a/a.yaml", &CONFIGMAP.replace("\"a\": 1", "\"a\": 2")),
        (
            "a/b.yaml",
            &JOBSET.replace("parallelism: 2", "parallelism: 3"),
        ),
    ]);
    let verdict = classify(&old, &new, Target::Kubernetes);
    let effects: Vec<Effect> = verdict.reasons.iter().map(|r| r.effect).collect();
    assert_eq!(effects, [Effect::Replace, Effect::InPlace]);
    assert_eq!(verdict.backend, "kubernetes");
}
