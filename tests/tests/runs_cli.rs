//! `loam runs ingest` through the CLI: real-format logs in, one row per log out, beside the plan
//! the job ran with; a log loam cannot read fails the whole command with its name and line.

use loam_tests::{repo_root, run_cli};

fn data(name: &str) -> String {
    repo_root()
        .join("tests/data/runs")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_megatron_log_beside_its_plan_gives_measured_and_predicted_steps() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let spec = repo_root().join("examples/llama3-70b-pretrain.loam");
    let (code, out, err) = run_cli(&["plan", &spec.to_string_lossy(), "--format", "json"], "");
    assert_eq!(code, 0, "{err}");
    std::fs::write(&plan, &out).unwrap();
    let predicted = serde_json::from_str::<serde_json::Value>(&out).unwrap()["plans"][0]
        ["estimate"]["step_time_s"]
        .as_f64()
        .unwrap();
    let (code, out, err) = run_cli(
        &[
            "runs",
            "ingest",
            &data("megatron-70b.log"),
            "--plan",
            &plan.to_string_lossy(),
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let run = &doc["runs"][0];
    // The log's steady intervals: 9.1 s (see `runs::tests`); the error is measured over
    // predicted step, signed as `loam calibrate` signs throughput.
    assert_eq!(run["measured_step_s"], 9.1);
    assert_eq!(run["ran"]["job"], "llama3-70b-pretrain");
    let error = run["error_pct"].as_f64().unwrap();
    assert!((error - (9.1 / predicted - 1.0) * 100.0).abs() < 1e-9);
    assert_eq!(run["intervals_kept"], 3);
    assert_eq!(run["intervals_excluded"], 4);
    // A torchtitan log is compared on tokens per second per device: 3,890 measured.
    let (code, out, err) = run_cli(
        &[
            "runs",
            "ingest",
            &data("torchtitan-8b.log"),
            "--plan",
            &plan.to_string_lossy(),
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let run = &doc["runs"][0];
    let plan_doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let rate = plan_doc["plans"][0]["estimate"]["tokens_per_s"]
        .as_f64()
        .unwrap()
        / plan_doc["plans"][0]["groups"][0]["devices"]
            .as_f64()
            .unwrap();
    assert_eq!(run["measured_tokens_per_s_per_device"], 3890.0);
    let error = run["error_pct"].as_f64().unwrap();
    assert!(
        (error - (rate / 3890.0 - 1.0) * 100.0).abs() < 1e-9,
        "{run}"
    );
    // The text format is CSV with a header.
    let (code, out, _) = run_cli(
        &["runs", "ingest", &data("vllm-benchmark-serving.json")],
        "",
    );
    assert_eq!(code, 0);
    let mut lines = out.lines();
    assert!(lines.next().unwrap().starts_with("file,tool,kind,"));
    assert!(
        lines
            .next()
            .unwrap()
            .contains(",vllm-benchmark-serving,serving,")
    );
}

#[test]
fn an_unreadable_log_fails_the_command_and_prints_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.log");
    let log = std::fs::read_to_string(data("megatron-70b.log")).unwrap();
    std::fs::write(&cut, &log[..log.len() - 60]).unwrap();
    let (code, out, err) = run_cli(
        &[
            "runs",
            "ingest",
            &data("megatron-70b.log"),
            &cut.to_string_lossy(),
        ],
        "",
    );
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("cut.log: line 15:"), "{err}");
    assert!(err.contains("partial"), "{err}");
}
