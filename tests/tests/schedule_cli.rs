//! `loam schedule` through the CLI: a submit time moves a job's start and deadline, a malformed
//! one is a located error, a capacity what-if is compared against the unchanged pool, bad
//! arguments exit 2, and the same input gives byte-identical JSON.

use loam_tests::{repo_root, run_cli};

/// The shipped 8B fine-tune (16 H100 at shanghai, deadline 2d) with `submit` added after its
/// tenant line; returns the temp dir and the spec's path.
fn spec_with_submit(submit: &str) -> (tempfile::TempDir, String) {
    let text = std::fs::read_to_string(repo_root().join("examples/llama3-8b-finetune.loam"))
        .unwrap()
        .replace(
            "  tenant = \"nlp\"\n",
            &format!("  tenant = \"nlp\"\n  submit = \"{submit}\"\n"),
        );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sft.loam");
    std::fs::write(&path, text).unwrap();
    let path = path.to_string_lossy().into_owned();
    (dir, path)
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap()
}

#[test]
fn a_submit_time_moves_the_start_and_the_deadline() {
    let (_dir, spec) = spec_with_submit("2026-01-06T12:00Z");
    let (code, out, err) = run_cli(&["plan", &spec, "--format", "json"], "");
    assert_eq!(code, 0, "{err}");
    let train_h = json(&out)["plans"][0]["estimate"]["train_time_h"]
        .as_f64()
        .unwrap();
    let (code, out, err) = run_cli(
        &[
            "schedule",
            &spec,
            "--start",
            "2026-01-05",
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let doc = json(&out);
    let job = &doc["jobs"][0];
    // 2026-01-06T12:00 is 1 day 12 h after 2026-01-05 00:00: hour 36. Alone on the pool it
    // starts at once, runs its plan's train time, and its 2-day deadline falls at 36 + 48 = 84.
    assert_eq!(job["submit_h"], 36.0);
    assert_eq!(job["start_h"], 36.0);
    let finish = job["finish_h"].as_f64().unwrap();
    assert!(
        (finish - (36.0 + train_h)).abs() < 1e-3 * train_h,
        "{finish} vs {train_h}"
    );
    assert_eq!(job["deadline"]["deadline_h"], 84.0);
    assert_eq!(job["deadline"]["verdict"], "met");
    assert_eq!(doc["start"], "2026-01-05");
    assert_eq!(doc["totals"]["met"], 1);
    // The text leads with the verdict.
    let (code, out, _) = run_cli(&["schedule", &spec, "--start", "2026-01-05"], "");
    assert_eq!(code, 0);
    assert!(out.starts_with("1 of 1 deadlines met\n"), "{out}");
}

#[test]
fn an_impossible_submit_date_is_a_located_error() {
    let (_dir, spec) = spec_with_submit("2026-02-30");
    let (code, _, err) = run_cli(&["schedule", &spec, "--start", "2026-01-05"], "");
    assert_eq!(code, 1, "{err}");
    // The value is on line 4 (after the comment, the job line and the tenant line).
    assert!(err.contains("L1007"), "{err}");
    assert!(err.contains("sft.loam:4:"), "{err}");
    assert!(err.contains("2026-02 has 28"), "{err}");
    assert!(err.contains("1 error in the specs"), "{err}");
}

#[test]
fn a_capacity_what_if_is_compared_with_the_unchanged_pool() {
    let spec = repo_root()
        .join("examples/llama3-8b-finetune.loam")
        .to_string_lossy()
        .into_owned();
    let (code, out, err) = run_cli(
        &[
            "schedule",
            &spec,
            "--start",
            "2026-01-05",
            "--add",
            "256xH100_SXM@shanghai",
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let doc = json(&out);
    let w = &doc["what_if"];
    // shanghai's H100 node group has 8 devices per node: 256 devices are 32 more nodes.
    assert_eq!(
        w["changes"][0],
        "+256 H100_SXM at shanghai (32 nodes on node group sh-h100-a)"
    );
    // One job alone never waited: nothing changes.
    assert_eq!(w["deadlines_met_change"], 0);
    assert_eq!(w["wait_change_h"], 0.0);
    assert_eq!(w["moved"].as_array().unwrap().len(), 0);
}

#[test]
fn bad_arguments_exit_2_and_name_the_argument() {
    let spec = repo_root()
        .join("examples/llama3-8b-finetune.loam")
        .to_string_lossy()
        .into_owned();
    for (args, needle) in [
        (vec!["--start", "2026-13-01"], "--start"),
        (vec!["--horizon", "ninety"], "--horizon"),
        (vec!["--add", "lots@shanghai"], "--add"),
        (vec!["--remove-site", "atlantis"], "atlantis"),
    ] {
        let mut argv = vec!["schedule", spec.as_str()];
        argv.extend(args);
        let (code, _, err) = run_cli(&argv, "");
        assert_eq!(code, 2, "{argv:?}: {err}");
        assert!(err.contains(needle), "{argv:?}: {err}");
    }
}

#[test]
fn the_same_input_gives_byte_identical_json() {
    let examples = repo_root().join("examples").to_string_lossy().into_owned();
    let args = [
        "schedule",
        examples.as_str(),
        "--start",
        "2026-01-05",
        "--samples",
        "20",
        "--format",
        "json",
    ];
    let (_, one, _) = run_cli(&args, "");
    let (_, two, _) = run_cli(&args, "");
    assert!(one.contains("\"probability_met\""), "{one}");
    assert_eq!(one, two);
}

#[test]
fn a_job_preempted_behind_its_tenants_quota_moves_to_an_alternative_and_meets_its_deadline() {
    // The shipped 70B pre-train (512 H100 at shanghai, priority high, ready after its 10-minute
    // data transfer) and 8B fine-tune (16 H100 at shanghai, normal, deadline 2 days) together:
    // nlp's H100 quota (256 guaranteed + 256 elastic) holds one of them. The fine-tune starts at
    // 0, the pre-train preempts it when ready, and waiting for shanghai again would end after the
    // pre-train, some 45 days on. Its plan's first alternative, 16 H800 at guiyang, is free: it
    // moves there at once and meets its deadline.
    let dir = tempfile::tempdir().unwrap();
    for name in ["llama3-70b-pretrain.loam", "llama3-8b-finetune.loam"] {
        std::fs::copy(
            repo_root().join("examples").join(name),
            dir.path().join(name),
        )
        .unwrap();
    }
    let folder = dir.path().to_string_lossy().into_owned();
    let sft_spec = dir
        .path()
        .join("llama3-8b-finetune.loam")
        .to_string_lossy()
        .into_owned();
    let (code, out, err) = run_cli(&["plan", &sft_spec, "--format", "json"], "");
    assert_eq!(code, 0, "{err}");
    let plan = json(&out)["plans"][0].clone();
    let alternative = plan["alternatives"][0].clone();
    assert_eq!(alternative["placement"][0]["node_group"], "gy-h800-a");
    let args = ["schedule", folder.as_str(), "--start", "2026-01-05"];
    let (code, text, err) = run_cli(&args, "");
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("2 of 2 deadlines met\n"), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("llama3-8b-sft"))
        .unwrap();
    assert!(
        line.contains("moved from shanghai: starts ")
            && line.contains("at guiyang (16 × H800_SXM on gy-h800-a)"),
        "{line}"
    );
    let (code, out, err) = run_cli(&[&args[..], &["--format", "json"]].concat(), "");
    assert_eq!(code, 0, "{err}");
    let doc = json(&out);
    let job = |name: &str| {
        doc["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["job"] == name)
            .unwrap()
            .clone()
    };
    let (sft, pretrain) = (job("llama3-8b-sft"), job("llama3-70b-pretrain"));
    let place = &sft["placement"];
    assert_eq!(place["site"], "guiyang");
    assert_eq!(place["node_groups"][0], "gy-h800-a");
    assert_eq!(place["replaced"]["planned_site"], "shanghai");
    assert_eq!(sft["deadline"]["verdict"], "met");
    // By hand from the plan and the preemption: waiting, the fine-tune could restart only when
    // the pre-train gives back the quota (its finish), and would then train its plan's hours
    // less the work kept before the preemption plus the hours the preemption lost; on the
    // alternative it trains the alternative's hours from the preemption on.
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    let preempted = &sft["preemptions"][0];
    let at = f(&preempted["at_h"]);
    let waiting = f(&pretrain["finish_h"]) + f(&plan["estimate"]["train_time_h"]) - at
        + f(&preempted["lost_work_h"]);
    let moved = at + f(&alternative["time_h"]);
    assert!((f(&sft["finish_h"]) - moved).abs() < 1e-3, "{sft}");
    // Both the pre-train's finish and the gain are written to five significant figures
    // (`significant`): past 1,000 hours each is within 0.05 h, so their difference within 0.1.
    let earlier = f(&place["replaced"]["earlier_h"]);
    // Both lie between 1,000 and 10,000 hours, where five figures are tenths.
    let finish = f(&pretrain["finish_h"]);
    assert!(
        (1e3..1e4).contains(&earlier) && (1e3..1e4).contains(&finish),
        "{sft}"
    );
    let tolerance = 0.05 + 0.05 + 1e-6;
    assert!(
        (earlier - (waiting - moved)).abs() <= tolerance,
        "{earlier} vs {}",
        waiting - moved
    );
    // The cost change is the alternative's cost against the plan's.
    let change = f(&alternative["cost"]) / f(&plan["estimate"]["cost"]["amount"]) - 1.0;
    assert!(
        (f(&place["replaced"]["cost_change"]) - change).abs() < 1e-4,
        "{place}"
    );
}

/// Rule 15: a service in the paths is scheduled beside the jobs: it holds its busiest hour's
/// replicas (the plan's `roles[].replicas × devices_per_replica`) from hour 0 to the horizon,
/// is counted apart from the jobs, and its devices are busy in its site's utilisation every day.
#[test]
fn a_service_holds_its_busiest_hours_devices_over_the_whole_horizon() {
    let service = repo_root().join("examples/rag-llama31-8b-service.loam");
    let service = service.to_str().unwrap();
    let (code, out, err) = run_cli(&["plan", service, "--format", "json"], "");
    assert_eq!(code, 0, "{err}");
    let plan = json(&out)["services"][0].clone();
    let roles = plan["roles"].as_array().unwrap();
    let devices: u64 = roles
        .iter()
        .map(|r| r["replicas"].as_u64().unwrap() * r["devices_per_replica"].as_u64().unwrap())
        .sum();
    let (code, out, err) = run_cli(
        &[
            "schedule",
            service,
            "--start",
            "2026-01-05",
            "--horizon",
            "2d",
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let doc = json(&out);
    let entry = &doc["jobs"][0];
    assert_eq!(entry["kind"], "service");
    assert_eq!(entry["job"], plan["service"]);
    assert_eq!(entry["status"], "running");
    assert_eq!(entry["devices"].as_u64(), Some(devices));
    assert_eq!(
        entry["runs"],
        serde_json::json!([{"from_h": 0.0, "to_h": 48.0}])
    );
    assert_eq!(doc["totals"]["services"], 1);
    assert_eq!(doc["totals"]["jobs"], 0);
    assert_eq!(
        doc["totals"]["device_hours"].as_f64(),
        Some(devices as f64 * 48.0)
    );
    // Every day of the service's site and device type has those devices busy all day.
    let site = roles[0]["group"]["site"].as_str().unwrap();
    let device = roles[0]["group"]["device"].as_str().unwrap();
    for day in doc["utilisation"][site][device].as_array().unwrap() {
        let total = day["devices"].as_u64().unwrap();
        let busy = total - day["free_devices"].as_u64().unwrap();
        assert_eq!(busy, devices, "{day}");
    }
    let (code, out, _) = run_cli(&["schedule", service, "--start", "2026-01-05"], "");
    assert_eq!(code, 0);
    assert!(out.contains("0 jobs and 1 service;"), "{out}");
}
