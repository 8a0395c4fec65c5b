//! Model services (`services[]` of the Plan JSON) rendered for every target from a hand-made
//! plan (`tests/data/services-plan.json`, node groups copied from `specs/pools/xirang.yaml`):
//! an aggregated vLLM service of one-node H20 replicas (tp4 ×3), a vLLM service whose replicas
//! span two H100 nodes (tp8 pp2, a LeaderWorkerSet), and a disaggregated SGLang service (prefill
//! on H100, decode on H20, behind a router).
//!
//! Snapshots pin the manifests; the real tools check them: every Kubernetes object strictly
//! against the Kubernetes 1.33 schemas or the LeaderWorkerSet CRD (`tests/backends/k8s-validate.py`),
//! every script through `bash -n` and shellcheck, every batch script through `sbatch
//! --test-only` on the test cluster. With `CI` or `LOAM_REQUIRE_TOOLS` set a missing tool fails.

use loam_backends::{Manifest, Options, Target, render};
use loam_ir::plan::PlanDocument;
use loam_tests::repo_root;
use loam_tests::tools::{
    have, have_python, have_slurm, nlp_tenancy, plan_fixture, python, run, runs, scratch, text,
};
use std::path::{Path, PathBuf};

fn services() -> PlanDocument {
    let path = repo_root().join("tests/data/services-plan.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn options() -> Options {
    let mut options = loam_tests::shipped_options();
    loam_tests::tools::insert_nlp(&mut options, &nlp_tenancy("/ckpt/nlp"));
    options
}

fn rendered(target: Target) -> Vec<Manifest> {
    render(&services(), target, &options()).unwrap_or_else(|d| panic!("{d:#?}"))
}

fn write(manifests: &[Manifest], dir: &Path) -> Vec<PathBuf> {
    manifests
        .iter()
        .map(|m| {
            let path = dir.join(&m.path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &m.contents).unwrap();
            path
        })
        .collect()
}

fn joined(manifests: &[Manifest], folder: &str) -> String {
    manifests
        .iter()
        .filter(|m| m.path.starts_with(&format!("{folder}/")))
        .map(|m| format!("=== {}\n{}", m.path, m.contents))
        .collect()
}

#[test]
fn service_manifests_match_their_snapshots() {
    for (target, tag) in [
        (Target::Kubernetes, "kubernetes"),
        (Target::Slurm, "slurm"),
        (Target::Baremetal, "baremetal"),
    ] {
        let manifests = rendered(target);
        for folder in ["qwen-chat", "llama-405b", "deepseek-pd"] {
            insta::assert_snapshot!(format!("{tag}-{folder}"), joined(&manifests, folder));
        }
    }
}

#[test]
fn rendering_is_deterministic_and_engines_get_their_flags() {
    assert_eq!(rendered(Target::Kubernetes), rendered(Target::Kubernetes));
    let k8s = rendered(Target::Kubernetes);
    let file = |p: &str| {
        k8s.iter()
            .find(|m| m.path == p)
            .unwrap_or_else(|| panic!("no {p}"))
            .contents
            .clone()
    };
    let agg = file("qwen-chat/10-serve-deployment.yaml");
    for flag in [
        "\"--tensor-parallel-size\"",
        "\"--max-num-seqs\"",
        "\"--gpu-memory-utilization\"",
        "\"--kv-cache-dtype\"",
        "\"--quantization\"",
    ] {
        assert!(agg.contains(flag), "{flag} missing:\n{agg}");
    }
    let lws = file("llama-405b/10-serve-leaderworkerset.yaml");
    assert!(lws.contains("kind: LeaderWorkerSet") && lws.contains("size: 2"));
    assert!(lws.contains("ray start --head") && lws.contains("--distributed-executor-backend"));
    let hpa = file("llama-405b/30-serve-hpa.yaml");
    assert!(hpa.contains("kind: LeaderWorkerSet") && hpa.contains("vllm:num_requests_running"));
    let decode = file("deepseek-pd/10-decode-deployment.yaml");
    assert!(
        decode.contains("\"--disaggregation-mode\"\n")
            || decode.contains("\"--disaggregation-mode\"")
    );
    assert!(decode.contains("\"--ep-size\""));
    let router = file("deepseek-pd/40-router.yaml");
    assert!(router.contains("\"--pd-disaggregation\"") && router.contains("kind: RoleBinding"));
}

#[test]
fn a_service_may_not_take_a_jobs_folder() {
    let mut doc = plan_fixture("small-1-node");
    let mut svc = services().services.remove(0);
    svc.service = doc.plans[0].job.clone();
    doc.services.push(svc);
    let errors = render(&doc, Target::Kubernetes, &options()).unwrap_err();
    assert!(
        errors.iter().any(|d| d.code.as_str() == "L4008"),
        "{errors:#?}"
    );
}

#[test]
fn every_service_object_validates_against_kubernetes_and_the_lws_crd() {
    if !have_python() {
        return;
    }
    let dir = scratch("services", "k8s");
    let files = write(&rendered(Target::Kubernetes), &dir);
    let validator = repo_root().join("tests/backends/k8s-validate.py");
    let mut args = vec![validator.to_str().unwrap()];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    let o = run(python(), &args, &dir);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains(" passed, 0 failed"), "{out}");
    for kind in [
        "LeaderWorkerSet/llama-405b",
        "Deployment/qwen-chat",
        "HorizontalPodAutoscaler/deepseek-pd-decode",
        "Service/deepseek-pd",
    ] {
        assert!(out.contains(kind), "{kind} not validated:\n{out}");
    }
    // The check is real: an unknown field of the LeaderWorkerSet is refused.
    let lws = dir.join("llama-405b/10-serve-leaderworkerset.yaml");
    let broken = std::fs::read_to_string(&lws)
        .unwrap()
        .replace("  startupPolicy:", "  startupPolicyy:");
    std::fs::write(&lws, broken).unwrap();
    let o = run(
        python(),
        &[validator.to_str().unwrap(), lws.to_str().unwrap()],
        &dir,
    );
    assert!(!o.status.success(), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_service_script_passes_bash_n_and_shellcheck() {
    if !have("shellcheck", runs("shellcheck", &["--version"])) {
        return;
    }
    let dir = scratch("services", "shellcheck");
    let mut scripts = write(&rendered(Target::Slurm), &dir.join("slurm"));
    scripts.extend(write(&rendered(Target::Baremetal), &dir.join("baremetal")));
    scripts.retain(|p| p.extension().is_some_and(|e| e == "sh" || e == "sbatch"));
    assert_eq!(scripts.len(), 5 + 5, "{scripts:?}");
    for script in scripts {
        let s = script.to_str().unwrap();
        let o = run("bash", &["-n", s], &dir);
        assert!(o.status.success(), "bash -n {s}: {}", text(&o));
        let o = run("shellcheck", &["--shell=bash", s], &dir);
        assert!(o.status.success(), "shellcheck {s}:\n{}", text(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_service_batch_script_is_accepted_by_slurmctld() {
    if !have_slurm() {
        return;
    }
    let dir = scratch("services", "sbatch");
    let scripts: Vec<PathBuf> = write(&rendered(Target::Slurm), &dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sbatch"))
        .collect();
    assert_eq!(scripts.len(), 4);
    for script in &scripts {
        let o = run("sbatch", &["--test-only", script.to_str().unwrap()], &dir);
        assert!(
            o.status.success(),
            "sbatch --test-only {}:\n{}",
            script.display(),
            text(&o)
        );
    }
    // The check is real: more nodes than the partition has are refused.
    let decode = dir.join("deepseek-pd/decode.sbatch");
    let too_big = std::fs::read_to_string(&decode)
        .unwrap()
        .replace("--nodes=5", "--nodes=97");
    std::fs::write(&decode, too_big).unwrap();
    let o = run("sbatch", &["--test-only", decode.to_str().unwrap()], &dir);
    assert!(!o.status.success(), "97 nodes accepted: {}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The three shipped service examples, planned by `loam plan --format json` on the shipped
/// catalogue: every Kubernetes object validates, every script passes shellcheck, every batch
/// script is accepted by slurmctld.
fn example_services() -> Vec<(String, PlanDocument)> {
    let mut found = Vec::new();
    for name in [
        "llama31-70b-chat-service.loam",
        "rag-llama31-8b-service.loam",
        "qwen3-235b-moe-service.loam",
    ] {
        let path = repo_root().join("examples").join(name);
        let (code, out, err) =
            loam_tests::run_cli(&["plan", path.to_str().unwrap(), "--format", "json"], "");
        assert_eq!(code, 0, "{name}: {err}");
        let doc: PlanDocument = serde_json::from_str(&out).unwrap();
        assert_eq!(doc.services.len(), 1, "{name}");
        assert!(doc.services[0].feasible && !doc.services[0].pareto.is_empty());
        found.push((name.to_string(), doc));
    }
    found
}

#[test]
fn the_example_services_emit_manifests_the_real_tools_accept() {
    let examples = example_services();
    let dir = scratch("services", "examples");
    for (name, doc) in &examples {
        let folder = dir.join(name.trim_end_matches(".loam"));
        let k8s = render(doc, Target::Kubernetes, &options()).unwrap_or_else(|d| panic!("{d:#?}"));
        let slurm = render(doc, Target::Slurm, &options()).unwrap_or_else(|d| panic!("{d:#?}"));
        let bare = render(doc, Target::Baremetal, &options()).unwrap_or_else(|d| panic!("{d:#?}"));
        let k8s_files = write(&k8s, &folder.join("k8s"));
        assert!(
            k8s.iter()
                .any(|m| m.contents.contains("kind: HorizontalPodAutoscaler")),
            "{name}: no autoscaler"
        );
        if have_python() {
            let validator = repo_root().join("tests/backends/k8s-validate.py");
            let mut args = vec![validator.to_str().unwrap()];
            args.extend(k8s_files.iter().map(|p| p.to_str().unwrap()));
            let o = run(python(), &args, &folder);
            assert!(o.status.success(), "{name}: {}", text(&o));
        }
        let mut scripts = write(&slurm, &folder.join("slurm"));
        scripts.extend(write(&bare, &folder.join("baremetal")));
        scripts.retain(|p| p.extension().is_some_and(|e| e == "sh" || e == "sbatch"));
        assert!(!scripts.is_empty(), "{name}");
        if have("shellcheck", runs("shellcheck", &["--version"])) {
            for script in &scripts {
                let s = script.to_str().unwrap();
                let o = run("shellcheck", &["--shell=bash", s], &folder);
                assert!(o.status.success(), "{name}: shellcheck {s}:\n{}", text(&o));
            }
        }
        if have_slurm() {
            for script in scripts
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "sbatch"))
            {
                let o = run(
                    "sbatch",
                    &["--test-only", script.to_str().unwrap()],
                    &folder,
                );
                assert!(
                    o.status.success(),
                    "{name}: sbatch --test-only {}:\n{}",
                    script.display(),
                    text(&o)
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
