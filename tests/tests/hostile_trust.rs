//! Inputs loam must not trust (review findings M7 and L8): a hand-edited Plan JSON is re-checked
//! against the catalogue, against itself and against the spec it names before `loam emit`
//! writes anything (L4012); every plan loam itself writes passes those checks. The plan cache's
//! trust rules are in `plan_cache.rs`; the CI examples' cache locations are checked here.

use crate::loam_process::loam_in;
use loam_compiler::catalogue::{builtin, builtin_sources};
use loam_compiler::plan::validate;
use loam_compiler::project::{ProjectFiles, check_project, plan_project};
use loam_ir::plan::PlanDocument;
use loam_ir::types::Hetero;
use loam_tests::repo_root;
use serde_json::{Value, json};
use std::path::Path;

/// The examples and their plans, except the two that take seconds each to plan (DeepSeek-V3
/// and the 405B pretraining; they use the layouts and pools of others here).
fn example_plans() -> PlanDocument {
    let mut specs = Vec::new();
    for entry in std::fs::read_dir(repo_root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.extension().is_some_and(|e| e == "loam")
            && !name.starts_with("deepseek")
            && !name.starts_with("llama3-405b")
        {
            specs.push((format!("examples/{name}"), std::fs::read(&path).unwrap()));
        }
    }
    specs.sort();
    let catalogue = builtin_sources()
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    let project = check_project(ProjectFiles { catalogue, specs }, 2);
    plan_project(&project, 2).document
}

/// What `loam plan` writes passes every L4012 check: the rules hold for every plan and service
/// of the examples (one and two node groups, pipeline and data pairs, MoE, services).
#[test]
fn every_plan_loam_writes_passes_the_emit_checks() {
    let doc = example_plans();
    assert!(doc.plans.len() >= 10 && !doc.services.is_empty());
    assert!(doc.plans.iter().any(|p| p.hetero == Some(Hetero::Data)));
    assert!(doc.plans.iter().any(|p| p.hetero == Some(Hetero::Pipeline)));
    let found = validate::check_document(&doc, &builtin());
    assert!(found.is_empty(), "{found:#?}");
    for plan in &doc.plans {
        assert!(validate::check_against_spec(plan, &doc.plans).is_none());
    }
}

/// The shipped two-node plan fixture, stamped with the shipped catalogue's digest, as JSON.
fn two_node_plan() -> Value {
    let text =
        std::fs::read_to_string(repo_root().join("tests/cases/emit/plans/two-node-lab.json"))
            .unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["catalogue_digest"] = json!(builtin().digest());
    doc
}

/// Emits `doc` from `dir/plan.json` into `dir/out` with the Kubernetes backend, run in `dir`:
/// exit code, stdout, stderr.
fn emit(dir: &Path, doc: &Value) -> (u8, String, String) {
    std::fs::write(
        dir.join("plan.json"),
        serde_json::to_string_pretty(doc).unwrap(),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(dir.join("out"));
    loam_in(
        dir,
        &[
            "emit",
            "plan.json",
            "--backend",
            "kubernetes",
            "--out",
            "out",
        ],
    )
}

/// Review finding L8: hand edits that `loam emit` wrote into manifests as they were (`tensor: 0`,
/// `data: 2^63` → `--data-parallel=9223372036854775808`, an unknown pool → `cohort: nope`, a
/// negative or 1e308 checkpoint interval; an expert overlap where Megatron-Core refuses it) are
/// refused with L4012, exit 1, nothing written.
#[test]
fn hand_edited_plans_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = emit(dir.path(), &two_node_plan());
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("wrote "), "{out}");
    // The spec it names is not here: said once, after the catalogue checks passed.
    assert!(err.contains("checked against the catalogue only"), "{err}");

    type Edit = fn(&mut Value);
    let edits: [(&str, Edit, &str); 10] = [
        (
            "tensor 0",
            |p| p["layout"]["tensor"] = json!(0),
            "layout degree `tensor` is 0",
        ),
        (
            "data 2^63",
            |p| p["layout"]["data"] = json!(1u64 << 63),
            "layout degree `data` is 9223372036854775808, more than the plan's 16 devices",
        ),
        (
            "data 4",
            |p| p["layout"]["data"] = json!(4),
            "make 32 devices, and its groups place 16",
        ),
        (
            "pool",
            |p| p["pool"] = json!("nope"),
            "pool `nope` is not in the catalogue",
        ),
        (
            "tenant",
            |p| p["tenant"] = json!("intruder"),
            "tenant `intruder` is not a tenant of pool `lab`",
        ),
        (
            "node group",
            |p| p["groups"][0]["node_group"] = json!("lab-b200"),
            "node group `lab-b200` is not at site `alpha`",
        ),
        (
            "nodes",
            |p| {
                p["groups"][0]["nodes"] = json!(40);
                p["groups"][0]["devices"] = json!(320);
                p["layout"]["data"] = json!(40);
            },
            "its groups use 40 nodes of node group `lab-h100`, which has 4",
        ),
        (
            "expert overlap",
            |p| p["layout"]["expert_overlap"] = json!(true),
            "overlaps the expert all-to-alls (`expert_overlap`), which runs only on a pipeline \
             with virtual stages",
        ),
        (
            "interval -5",
            |p| p["checkpoint"]["interval_min"] = json!(-5.0),
            "checkpoint interval is -5 min",
        ),
        (
            "interval 1e308",
            |p| p["checkpoint"]["interval_min"] = json!(1e308),
            "the checkpoint interval is 1e308 min",
        ),
    ];
    for (what, edit, expected) in edits {
        let mut doc = two_node_plan();
        edit(&mut doc["plans"][0]);
        let (code, out, err) = emit(dir.path(), &doc);
        assert_eq!(code, 1, "{what}: {out}{err}");
        assert!(
            err.contains("L4012") && err.contains(expected),
            "{what}: {err}"
        );
        assert!(err.contains("nothing emitted"), "{what}: {err}");
        assert!(!dir.path().join("out").exists(), "{what}: written");
    }
}

/// A plan whose spec is readable where `loam emit` runs is re-planned: emitted when it is what
/// loam plans now; refused (L4012) when the spec changed since, when the plan was edited in a
/// way the catalogue allows, or when the spec has no such job. A spec path that leaves the
/// folder or goes through a symlink is not read.
#[test]
fn a_plan_must_be_what_its_spec_plans_to_now() {
    let dir = tempfile::tempdir().unwrap();
    let spec = "llama3-8b-finetune.loam";
    let text = std::fs::read_to_string(repo_root().join("examples").join(spec)).unwrap();
    std::fs::write(dir.path().join(spec), &text).unwrap();
    let (code, json_text, err) = loam_in(dir.path(), &["plan", "--format", "json", spec]);
    assert_eq!(code, 0, "{err}");
    let planned: Value = serde_json::from_str(&json_text).unwrap();

    let (code, _, err) = emit(dir.path(), &planned);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("checked against the catalogue only"), "{err}");

    // Edited within what the catalogue allows: another micro-batch.
    let mut edited = planned.clone();
    edited["plans"][0]["layout"]["micro_batch"] = json!(2);
    let (code, _, err) = emit(dir.path(), &edited);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("loam plans `llama3-8b-finetune.loam` differently now (`layout` differs)"),
        "{err}"
    );

    // Another job name.
    let mut renamed = planned.clone();
    renamed["plans"][0]["job"] = json!("someone-else");
    renamed["plans"][0]["checkpoint"]["path"] = json!("/ckpt/nlp/someone-else");
    let (code, _, err) = emit(dir.path(), &renamed);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("has no job of that name"), "{err}");

    // The spec changed since.
    std::fs::write(
        dir.path().join(spec),
        text.replacen("tokens       = 2B", "tokens       = 3B", 1),
    )
    .unwrap();
    let (code, _, err) = emit(dir.path(), &planned);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("differently now"), "{err}");

    // A spec that no longer checks: refused, its text not shown.
    std::fs::write(dir.path().join(spec), "job \"x\" { SECRET-TEXT }").unwrap();
    let (code, _, err) = emit(dir.path(), &planned);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("error(s) now") && !err.contains("SECRET-TEXT"),
        "{err}"
    );

    // Through a symlink, or outside the folder: not read (the catalogue checks alone).
    std::fs::write(dir.path().join("real.loam"), &text).unwrap();
    std::fs::remove_file(dir.path().join(spec)).unwrap();
    std::os::unix::fs::symlink("real.loam", dir.path().join(spec)).unwrap();
    let (code, _, err) = emit(dir.path(), &planned);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("checked against the catalogue only"), "{err}");
    let mut outside = planned.clone();
    outside["plans"][0]["file"] = json!("../llama3-8b-finetune.loam");
    let (code, _, err) = emit(dir.path(), &outside);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("`../llama3-8b-finetune.loam`, the spec"),
        "{err}"
    );
}

/// Review finding M7: the shipped CI setups never keep an unsigned plan cache inside the
/// checkout, where a pull request can commit forged entries.
#[test]
fn the_ci_examples_keep_the_plan_cache_out_of_the_checkout() {
    let ci = repo_root().join("examples/ci");
    let github = std::fs::read_to_string(ci.join("loam.yml")).unwrap();
    for inside in ["path: .loam-cache", "--cache .loam-cache", "path: .loam"] {
        assert!(
            !github.contains(inside),
            "loam.yml caches inside the checkout"
        );
    }
    let uses = github.matches("--cache ").count();
    assert!(uses >= 4);
    assert_eq!(
        github
            .matches("--cache \"$RUNNER_TEMP/loam-cache\"")
            .count(),
        uses
    );
    assert_eq!(
        github
            .matches("path: ${{ runner.temp }}/loam-cache")
            .count(),
        2
    );
    let gitlab = std::fs::read_to_string(ci.join("gitlab-ci.yml")).unwrap();
    assert!(!gitlab.contains("--cache"));
    // GitLab caches only inside the checkout: the cache is on only with the signing key, and a
    // merge request that commits files in the cached folder fails.
    let on = gitlab.find("export LOAM_CACHE_DIR").unwrap();
    let guard = gitlab[..on]
        .rfind("if [ -n \"${LOAM_CACHE_KEY:-}\" ]")
        .unwrap();
    assert!(on - guard < 100);
    assert!(gitlab.contains("git ls-files -- .loam"));
}

/// A service's plan is re-checked too: a role with tensor degree 0, or more replicas than its
/// group's devices hold, is refused (L4012).
#[test]
fn hand_edited_service_plans_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo_root().join("tests/data/services-plan.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["catalogue_digest"] = json!(builtin().digest());
    let (code, _, err) = emit(dir.path(), &doc);
    assert_eq!(code, 0, "{err}");
    let mut zero = doc.clone();
    zero["services"][0]["roles"][0]["tensor"] = json!(0);
    let (code, _, err) = emit(dir.path(), &zero);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("role `serve`'s tensor is 0"), "{err}");
    let mut more = doc;
    more["services"][0]["roles"][0]["replicas"] = json!(7);
    let (code, _, err) = emit(dir.path(), &more);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("runs 7 replicas of 4 devices, and its group has 12"),
        "{err}"
    );
}
