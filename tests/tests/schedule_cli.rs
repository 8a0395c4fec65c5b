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
