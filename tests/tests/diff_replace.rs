//! `loam diff` says, per backend, whether a changed job can be updated in place or must be
//! replaced, from the manifests the backends render for each side: real git repositories in temp
//! folders, one change each, on every backend.

use crate::git_repo;

use git_repo::{TempRepo, spec};

/// The small test job with its tensor degree pinned.
fn with_tensor(tensor: u32) -> String {
    spec("job-a", 64, 16).replace(
        "  resources {",
        &format!("  parallel {{\n    tensor = {tensor}\n  }}\n\n  resources {{"),
    )
}

/// A repository whose last commit pins tensor degree 2, with degree 4 in the work tree.
fn tensor_change() -> TempRepo {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", with_tensor(2));
    repo.commit("first");
    repo.write("jobs/a.loam", with_tensor(4));
    repo
}

/// A repository whose work tree raises the device-hour price of the test job's node group: the
/// plan's estimates change, its layout and placement do not.
fn price_change() -> TempRepo {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", spec("job-a", 64, 16));
    repo.commit("first");
    let text = repo.read("specs/pools/xirang.yaml");
    let at = text.find("name: sh-h100-a").unwrap();
    let price = at + text[at..].find("price: 32.0 CNY").unwrap();
    let mut changed = text.clone();
    changed.replace_range(price..price + "price: 32.0 CNY".len(), "price: 40.0 CNY");
    repo.write("specs/pools/xirang.yaml", changed);
    repo
}

fn diff(repo: &TempRepo, manifests: &str) -> String {
    let (code, text, err) = repo.loam(&["diff", "--detailed-exitcode", "--manifests", manifests]);
    assert_eq!(code, 2, "{text}{err}");
    text
}

fn json(repo: &TempRepo, manifests: &str) -> serde_json::Value {
    let (_, text, err) = repo.loam(&["diff", "--format", "json", "--manifests", manifests]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{err}"));
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == "job-a")
        .unwrap()
        .clone()
}

#[test]
fn a_new_tensor_degree_replaces_the_job_on_every_backend() {
    let repo = tensor_change();
    let text = diff(&repo, "kubernetes");
    assert!(text.contains("~ layout.tensor"), "{text}");
    assert!(text.contains("-/+ job \"job-a\" {"), "{text}");
    assert!(
        text.contains(
            "# job \"job-a\" must be replaced on kubernetes: 20-jobset.yaml spec.replicatedJobs \
             changed (immutable on a running JobSet); it resumes from its last checkpoint"
        ),
        "{text}"
    );
    assert!(
        text.contains("Plan: 0 to add, 0 to change, 1 to replace, 0 to destroy."),
        "{text}"
    );
    let job = json(&repo, "kubernetes");
    assert_eq!(job["actions"], serde_json::json!(["delete", "create"]));
    let reasons = job["classification"]["reasons"].as_array().unwrap();
    let forcing = reasons.iter().find(|r| r["effect"] == "replace").unwrap();
    assert_eq!(forcing["object"], "JobSet/job-a");
    assert!(
        forcing["at"]
            .as_str()
            .unwrap()
            .starts_with("spec.replicatedJobs[0].template.spec.template.spec"),
        "{forcing}"
    );

    let text = diff(&repo, "slurm");
    assert!(
        text.contains("must be replaced on slurm: job.sbatch "),
        "{text}"
    );
    assert!(
        text.contains("(a submitted batch script is fixed: cancel and resubmit)"),
        "{text}"
    );
    assert_eq!(
        json(&repo, "slurm")["actions"],
        serde_json::json!(["delete", "create"])
    );

    let text = diff(&repo, "baremetal");
    assert!(
        text.contains("must be replaced on baremetal: launch.sh "),
        "{text}"
    );
}

#[test]
fn without_a_manifest_diff_jobs_are_classified_for_kubernetes() {
    let repo = tensor_change();
    let text = diff(&repo, "none");
    assert!(!text.contains("# manifests:"), "{text}");
    assert!(
        text.contains("must be replaced on kubernetes: 20-jobset.yaml spec.replicatedJobs"),
        "{text}"
    );
}

#[test]
fn a_new_price_updates_only_the_plan_configmap_in_place_on_kubernetes() {
    let repo = price_change();
    let text = diff(&repo, "kubernetes");
    assert!(text.contains("~ estimate.cost"), "{text}");
    assert!(!text.contains("placement"), "the job moved: {text}");
    assert!(
        text.contains("# job \"job-a\" will be updated in place on kubernetes\n"),
        "{text}"
    );
    assert!(text.contains("  ~ job \"job-a\" {"), "{text}");
    assert!(
        text.contains("# 10-configmap.yaml data changed (ConfigMap data may change"),
        "{text}"
    );
    assert!(!text.contains("forces replacement"), "{text}");
    assert!(
        text.contains("Plan: 0 to add, 1 to change, 0 to destroy."),
        "{text}"
    );
    let job = json(&repo, "kubernetes");
    assert_eq!(job["actions"], serde_json::json!(["update"]));
    let reasons = job["classification"]["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!(reasons[0]["file"], "10-configmap.yaml");
    assert_eq!(reasons[0]["object"], "ConfigMap/job-a-plan");
    assert_eq!(reasons[0]["field"], "data");
    assert_eq!(reasons[0]["effect"], "update");
}

#[test]
fn a_new_price_is_a_resubmission_on_slurm_but_a_plan_copy_on_bare_metal() {
    let repo = price_change();
    // The batch script carries the plan in a here-document: a submitted script cannot change.
    let text = diff(&repo, "slurm");
    assert!(
        text.contains("must be replaced on slurm: job.sbatch line "),
        "{text}"
    );
    // Bare metal keeps the plan beside the launcher, which does not change.
    let text = diff(&repo, "baremetal");
    assert!(
        text.contains("# job \"job-a\" will be updated in place on baremetal\n"),
        "{text}"
    );
    assert!(text.contains("# plan.json line "), "{text}");
    assert!(!text.contains("forces replacement"), "{text}");
}

#[test]
fn a_comment_in_the_spec_changes_nothing() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", with_tensor(2));
    repo.commit("first");
    repo.write(
        "jobs/a.loam",
        format!("# Pinned after the March run.\n{}", with_tensor(2)),
    );
    for manifests in ["kubernetes", "slurm", "baremetal"] {
        let (code, text, err) =
            repo.loam(&["diff", "--detailed-exitcode", "--manifests", manifests]);
        assert_eq!(code, 0, "{text}{err}");
        assert!(text.contains("No changes."), "{text}");
    }
}

/// The small test job with `parallel` fields pinned.
fn with_parallel(fields: &str) -> String {
    spec("job-a", 64, 16).replace(
        "  resources {",
        &format!("  parallel {{\n{fields}  }}\n\n  resources {{"),
    )
}

#[test]
fn sequence_parallelism_and_partial_recomputation_are_layout_changes() {
    // Switching sequence parallelism off changes the plan's memory and time and the trainer's
    // `--sequence-parallel`: the diff names it, and the job is replaced (its arguments change).
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write(
        "jobs/a.loam",
        with_parallel("    tensor = 2\n    sequence_parallel = true\n"),
    );
    repo.commit("first");
    repo.write(
        "jobs/a.loam",
        with_parallel("    tensor = 2\n    sequence_parallel = false\n"),
    );
    let text = diff(&repo, "kubernetes");
    assert!(text.contains("~ layout.sequence_parallel"), "{text}");
    assert!(text.contains("true -> false"), "{text}");
    assert!(text.contains("-/+ job \"job-a\" {"), "{text}");

    // Replaying 2 blocks per chunk instead of 4 is a change of `layout.recompute`, written with
    // the count, and reaches the trainer's `--recompute-layers`.
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write(
        "jobs/a.loam",
        with_parallel("    pipeline = 2\n    recompute_layers = 4\n"),
    );
    repo.commit("first");
    repo.write(
        "jobs/a.loam",
        with_parallel("    pipeline = 2\n    recompute_layers = 2\n"),
    );
    let text = diff(&repo, "kubernetes");
    assert!(text.contains("~ layout.recompute"), "{text}");
    assert!(text.contains("full (4 blocks per chunk)"), "{text}");
    assert!(text.contains("full (2 blocks per chunk)"), "{text}");
    assert!(text.contains("-/+ job \"job-a\" {"), "{text}");
}

#[test]
fn a_new_expert_dispatch_is_a_workload_change_that_replaces_the_job() {
    // Sending each token once per node changes the plan's time and the trainer's
    // `--expert-dispatch`: the diff names it (added: the all-to-all is written as no field), the
    // step shortens and the job is replaced.
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/routed.loam", loam_tests::routed_moe(None));
    repo.commit("first");
    repo.write(
        "jobs/routed.loam",
        loam_tests::routed_moe(Some("deduplicated")),
    );
    let text = diff(&repo, "kubernetes");
    assert!(
        text.contains("+ workload.expert_dispatch = \"deduplicated\""),
        "{text}"
    );
    assert!(text.contains("~ estimate.step_time"), "{text}");
    assert!(text.contains("-/+ job \"routed\" {"), "{text}");
}
