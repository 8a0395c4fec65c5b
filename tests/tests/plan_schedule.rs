//! The Plan JSON's `schedule` (issue 33, item 5; docs/plan-format.md): `loam plan --format json`
//! over more than one job carries every job scheduled together beside the plans; over one job
//! it does not (a job alone waits for nothing), and the plans themselves are unchanged.

use loam_tests::{repo_root, run_cli};

fn plan_json(paths: &[&str]) -> serde_json::Value {
    let full: Vec<String> = paths
        .iter()
        .map(|p| repo_root().join(p).display().to_string())
        .collect();
    let mut args = vec!["plan"];
    args.extend(full.iter().map(String::as_str));
    args.extend_from_slice(&["--format", "json"]);
    let (code, out, err) = run_cli(&args, "");
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Two examples together: one schedule entry per plan, in file order, each holding devices for
/// exactly its plan's train time when it is not preempted (runs summed), on the node groups
/// its plan chose, or on those of one of its plan's alternatives when the schedule moved it
/// there (rule 13; here the fine-tune, preempted by the pre-train); the same bytes twice.
#[test]
fn two_jobs_carry_a_schedule_of_both_beside_their_plans() {
    let paths = [
        "examples/llama3-70b-pretrain.loam",
        "examples/llama3-8b-finetune.loam",
    ];
    let doc = plan_json(&paths);
    let plans = doc["plans"].as_array().unwrap();
    let jobs = doc["schedule"]["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), plans.len());
    for (plan, job) in plans.iter().zip(jobs) {
        assert_eq!(job["job"], plan["job"]);
        let groups: Vec<&serde_json::Value> = plan["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| &g["node_group"])
            .collect();
        let placed: Vec<&serde_json::Value> = job["placement"]["node_groups"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
        if job["placement"]["replaced"].is_null() {
            assert_eq!(placed, groups, "{}", job["job"]);
        } else {
            let of_an_alternative = plan["alternatives"].as_array().unwrap().iter().any(|a| {
                let theirs: Vec<&serde_json::Value> = a["placement"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| &p["node_group"])
                    .collect();
                theirs == placed
            });
            assert!(of_an_alternative, "{}", job["job"]);
        }
        if job["preemptions"].is_null()
            && job["placement"]["replaced"].is_null()
            && job["status"] == "finished"
        {
            let held: f64 = job["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["to_h"].as_f64().unwrap() - r["from_h"].as_f64().unwrap())
                .sum();
            let train = plan["estimate"]["train_time_h"].as_f64().unwrap();
            // Five significant digits in the schedule.
            assert!(
                (held - train).abs() <= 1e-4 * train.max(1.0),
                "{held} vs {train}"
            );
        }
    }
    // No clock: without a `submit` in the specs, `start` is empty and hour 0 is submission.
    assert_eq!(doc["schedule"]["start"], "");
    assert_eq!(doc["schedule"]["horizon_h"], 2160.0);
    assert_eq!(plan_json(&paths), doc);
}

#[test]
fn one_job_has_no_schedule() {
    let doc = plan_json(&["examples/llama3-8b-finetune.loam"]);
    assert!(doc.get("schedule").is_none(), "{doc}");
}

/// Rule 15 in the Plan JSON: two jobs and a service planned together schedule the service too,
/// holding its plan's busiest-hour devices from hour 0 to the 90-day horizon beside the jobs,
/// and the totals count it apart.
#[test]
fn a_service_planned_with_jobs_is_in_their_schedule() {
    let doc = plan_json(&[
        "examples/llama3-70b-pretrain.loam",
        "examples/llama3-8b-finetune.loam",
        "examples/rag-llama31-8b-service.loam",
    ]);
    let service = &doc["services"][0];
    let devices: u64 = service["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["replicas"].as_u64().unwrap() * r["devices_per_replica"].as_u64().unwrap())
        .sum();
    let schedule = &doc["schedule"];
    let entry = schedule["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["kind"] == "service")
        .unwrap();
    assert_eq!(entry["job"], service["service"]);
    assert_eq!(entry["devices"].as_u64(), Some(devices));
    assert_eq!(
        entry["runs"],
        serde_json::json!([{"from_h": 0.0, "to_h": 2160.0}])
    );
    assert_eq!(schedule["totals"]["services"], 1);
    assert_eq!(schedule["totals"]["jobs"], 2);
}
