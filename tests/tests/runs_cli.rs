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
    let spec = repo_root().join("examples/llama3-70b-pretrain.loam");
    let (catalogue, plan, _) = loam_tests::planned_on_shipped_catalogue(dir, &spec);
    (catalogue, plan)
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

/// The three-command workflow of docs/calibration.md on its fixture logs: ingest with
/// `--append`, `calibrate --fit`, plan; then `runs check` flags a run far from its plan.
#[test]
fn logs_to_a_calibrated_plan_in_three_commands_and_drift_after() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    for k in 1..=3 {
        let log = data(&format!("shanghai/megatron-70b-{k}.log"));
        let date = format!("2026-12-0{k}");
        let (code, _, err) = run_cli(
            &[
                "--catalogue",
                &catalogue,
                "runs",
                "ingest",
                &log,
                "--plan",
                &plan,
                "--append",
                "--date",
                &date,
            ],
            "",
        );
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, err) = run_cli(&["--catalogue", &catalogue, "calibrate", "--fit"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("xirang     shanghai   H100_SXM         3 gemm"),
        "{out}"
    );
    let written = dir.path().join("specs/calibration/xirang-shanghai.yaml");
    let yaml = std::fs::read_to_string(&written).unwrap();
    assert!(
        yaml.contains("first_run: \"2026-12-01\"") && yaml.contains("runs: 3"),
        "{yaml}"
    );
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
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let calibrated = &doc["plans"][0];
    let notes: Vec<&str> = calibrated["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("calibrated on 3 runs of H100_SXM at shanghai, median error")),
        "{notes:?}"
    );
    // The runs measured 1024 × 8192 / 17.17 s / 512 = 954 tokens/s per device (median of the
    // three: 17.00, 17.17, 17.35 s) against 1,037 predicted. One factor (GEMM share) fits them,
    // shrunk three quarters of the way in log terms: 1037 × (954/1037)^(3/4) ≈ 974 when the
    // layout stays, as it does here.
    let per_device = calibrated["estimate"]["tokens_per_s"].as_f64().unwrap() / 512.0;
    assert!((966.0..982.0).contains(&per_device), "{per_device}");
    let band = calibrated["estimate"]["throughput_uncertainty"]
        .as_f64()
        .unwrap();
    assert!(band > 0.0 && band < 0.15, "{band}");
    // A run at 25.2 s a step (a slow node): 651 tokens/s per device, 37 % below the plan.
    let slow = dir.path().join("slow.log");
    let text = std::fs::read_to_string(data("shanghai/megatron-70b-1.log")).unwrap();
    std::fs::write(&slow, text.replace("(ms): 17", "(ms): 25")).unwrap();
    let slow = slow.to_string_lossy().into_owned();
    let (code, _, err) = run_cli(
        &[
            "--catalogue",
            &catalogue,
            "runs",
            "ingest",
            &slow,
            "--plan",
            &plan,
            "--append",
            "--date",
            "2026-12-05",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = run_cli(&["--catalogue", &catalogue, "runs", "check", &plan], "");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("DRIFT shanghai_2026-12-05_slow"), "{out}");
    assert!(out.contains("against plan `llama3-70b-pretrain`"), "{out}");
    assert!(out.contains("4 run(s) compared"), "{out}");
    assert_eq!(out.matches("DRIFT").count(), 1, "{out}");
}

/// A mixture-of-experts run keeps in the store what its plan costed — the experts' width, the
/// routing's group limit, the deduplicated dispatch — so `loam calibrate` costs the stored run
/// as the plan did; without them it would cost every expert at the dense width with the
/// all-to-all.
#[test]
fn a_stored_moe_run_is_costed_with_its_plans_experts_routing_and_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("routed.loam");
    std::fs::write(&spec, loam_tests::routed_moe(Some("deduplicated"))).unwrap();
    let (catalogue, plan, doc) = loam_tests::planned_on_shipped_catalogue(dir.path(), &spec);
    let specs = dir.path().join("specs");
    let planned = &doc["plans"][0];
    assert_eq!(planned["workload"]["expert_dispatch"], "deduplicated");
    let devices = planned["groups"][0]["devices"].as_f64().unwrap();
    let predicted = planned["estimate"]["tokens_per_s"].as_f64().unwrap() / devices;
    let (code, _, err) = append(&catalogue, &plan, "2026-12-07");
    assert_eq!(code, 0, "{err}");
    let store = specs.join("runs/shanghai/runs.csv");
    let text = std::fs::read_to_string(&store).unwrap();
    let row = text.lines().nth(1).unwrap();
    // expert_ffn 1536, no shared experts or dense blocks, dropless, 8 groups with 2 per token,
    // the deduplicated dispatch; plain attention, untied embeddings, AdamW, blocking tensor
    // collectives.
    assert!(
        row.ends_with(",1536,,,,8,2,deduplicated,,,,,,,,,,,"),
        "{row}"
    );
    let costed = |text: &str| {
        std::fs::write(&store, text).unwrap();
        let (code, out, err) = run_cli(
            &["calibrate", &store.to_string_lossy(), "--format", "json"],
            "",
        );
        assert_eq!(code, 0, "{err}");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        doc["rows"][0]["predicted_tokens_per_s_per_device"]
            .as_f64()
            .unwrap()
    };
    // The calibration's own network assumptions (one-way latency, NICs per device) are all
    // that differ from the plan's site: within 1 %.
    let stored = costed(&text);
    assert!(
        (stored / predicted - 1.0).abs() < 0.01,
        "stored run costed at {stored}, planned at {predicted}"
    );
    // The same row with the all-to-all is another, slower step: the column is read.
    let all_to_all = costed(&text.replace(",deduplicated,", ",all_to_all,"));
    assert!(all_to_all < 0.8 * stored, "{all_to_all} vs {stored}");
}

/// The store has no columns for what trains or for pinned state formats: a run of a LoRA job,
/// or of one that pins its gradients' format, is refused, not stored as a step the fit would
/// then mis-cost; nothing is written.
#[test]
fn a_lora_run_or_one_with_pinned_states_is_not_appended_to_the_store() {
    let lora =
        std::fs::read_to_string(repo_root().join("examples/llama2-70b-lora-gaudi2.loam")).unwrap();
    let pretrain =
        std::fs::read_to_string(repo_root().join("examples/llama3-70b-pretrain.loam")).unwrap();
    assert!(pretrain.contains("  train {\n"));
    let pinned = pretrain.replacen("  train {\n", "  train {\n    gradients = fp32\n", 1);
    for (text, why) in [
        (lora, "trains adapters or freezes weights"),
        (pinned, "pins its state formats"),
    ] {
        refused_at_append(&text, why);
    }
}

fn refused_at_append(text: &str, why: &str) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.loam");
    std::fs::write(&spec, text).unwrap();
    let (catalogue, plan, _) = loam_tests::planned_on_shipped_catalogue(dir.path(), &spec);
    let (code, _, err) = append(&catalogue, &plan, "2026-12-07");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(why), "{err}");
    assert!(!dir.path().join("specs/runs").exists());
}
