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

/// A copy of the shipped catalogue (`specs/devices`, `specs/pools`) in `dir/specs`, and the
/// Plan JSON of the Llama 3 70B example planned against it, in `dir/plan.json`.
fn catalogue_and_plan(dir: &std::path::Path) -> (String, String) {
    let specs = dir.join("specs");
    for sub in ["devices", "pools"] {
        std::fs::create_dir_all(specs.join(sub)).unwrap();
        for entry in std::fs::read_dir(repo_root().join("specs").join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, specs.join(sub).join(path.file_name().unwrap())).unwrap();
        }
    }
    let catalogue = specs.to_string_lossy().into_owned();
    let spec = repo_root().join("examples/llama3-70b-pretrain.loam");
    let (code, out, err) = run_cli(
        &[
            "--catalogue",
            &catalogue,
            "plan",
            &spec.to_string_lossy(),
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let plan = dir.join("plan.json");
    std::fs::write(&plan, out).unwrap();
    (catalogue, plan.to_string_lossy().into_owned())
}

fn append(catalogue: &str, plan: &str, date: &str) -> (u8, String, String) {
    run_cli(
        &[
            "--catalogue",
            catalogue,
            "runs",
            "ingest",
            &data("megatron-70b.log"),
            "--plan",
            plan,
            "--append",
            "--date",
            date,
        ],
        "",
    )
}

#[test]
fn append_adds_one_line_per_run_never_rewrites_one_and_check_reads_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let (code, _, err) = append(&catalogue, &plan, "2026-12-04");
    assert_eq!(code, 0, "{err}");
    let store = dir.path().join("specs/runs/shanghai/runs.csv");
    let first = std::fs::read_to_string(&store).unwrap();
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 2, "{first}");
    assert_eq!(lines[0], loam_compiler::runs::store::COLUMNS);
    // The plan runs the job on 512 H100 at shanghai; the log's steady step is 9.1 s for a
    // global batch of 2,048 sequences of 8,192 tokens: 2048 × 8192 / 9.1 / 512 = 3,600.88
    // tokens/s per device. `sh-h100-a` has 8 NICs of 400 Gbps: 3,200 Gbps per node.
    assert!(lines[1].starts_with(
        "shanghai_2026-12-04_megatron-70b,2026-12-04,xirang,shanghai,llama3-70b-pretrain,"
    ));
    assert!(
        lines[1].contains(",H100_SXM,512,3200,bf16,4,4,32,1,5,1,"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains(",3600.88,"), "{}", lines[1]);
    let (code, _, err) = append(&catalogue, &plan, "2026-12-05");
    assert_eq!(code, 0, "{err}");
    let second = std::fs::read_to_string(&store).unwrap();
    assert!(second.starts_with(&first), "an existing line was rewritten");
    assert_eq!(second.lines().count(), 3);
    let spec = repo_root().join("examples/llama3-70b-pretrain.loam");
    let (code, _, err) = run_cli(
        &["--catalogue", &catalogue, "check", &spec.to_string_lossy()],
        "",
    );
    assert_eq!(code, 0, "{err}");
    // A line edited to name a site of another pool is an error at its file and line.
    std::fs::write(
        &store,
        second.replacen(",xirang,shanghai,", ",xirang,oak-ridge,", 1),
    )
    .unwrap();
    let (code, _, err) = run_cli(
        &["--catalogue", &catalogue, "check", &spec.to_string_lossy()],
        "",
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("L2010"), "{err}");
    assert!(err.contains("runs/shanghai/runs.csv:2:1"), "{err}");
}

#[cfg(unix)]
#[test]
fn append_refuses_a_linked_site_folder_and_a_cut_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("specs/runs")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("specs/runs/shanghai")).unwrap();
    let (code, _, err) = append(&catalogue, &plan, "2026-12-04");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    std::fs::remove_file(dir.path().join("specs/runs/shanghai")).unwrap();
    let (code, _, err) = append(&catalogue, &plan, "2026-12-04");
    assert_eq!(code, 0, "{err}");
    let store = dir.path().join("specs/runs/shanghai/runs.csv");
    let text = std::fs::read_to_string(&store).unwrap();
    let cut = &text[..text.len() - 10];
    std::fs::write(&store, cut).unwrap();
    // The cut line is already an error of the catalogue (`loam check` names it), so nothing is
    // appended after it.
    let (code, _, err) = append(&catalogue, &plan, "2026-12-05");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("the catalogue has errors"), "{err}");
    assert_eq!(std::fs::read_to_string(&store).unwrap(), cut);
}
