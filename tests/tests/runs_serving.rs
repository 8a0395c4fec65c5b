//! Serving runs in the store, end to end through the CLI: a vLLM `benchmark_serving` result
//! (real format: `benchmarks/benchmark_serving.py`, vllm-project/vllm, `--save-result`) of the
//! Llama 3.1 70B chat service example appended with `runs ingest --append` to the service's
//! site's `serving.csv`, checked by `loam check`, never rewritten.

use loam_tests::{repo_root, run_cli};

const SERVICE: &str = "llama31-70b-chat";

fn example() -> String {
    repo_root()
        .join("examples/llama31-70b-chat-service.loam")
        .to_string_lossy()
        .into_owned()
}

/// A copy of the shipped catalogue in `dir/specs` and the service example's Plan JSON planned
/// against it, in `dir/plan.json`.
fn catalogue_and_plan(dir: &std::path::Path) -> (String, String) {
    let (catalogue, plan, _) =
        loam_tests::planned_on_shipped_catalogue(dir, std::path::Path::new(&example()));
    (catalogue, plan)
}

fn ingest(catalogue: &str, plan: &str, bench: &str, job: &str, date: &str) -> (u8, String) {
    let (code, _, err) = run_cli(
        &[
            "--catalogue",
            catalogue,
            "runs",
            "ingest",
            bench,
            "--plan",
            plan,
            "--job",
            job,
            "--append",
            "--date",
            date,
        ],
        "",
    );
    (code, err)
}

fn bench(name: &str) -> String {
    repo_root()
        .join("tests/data/runs")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_serving_benchmark_is_appended_to_the_site_s_serving_file_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let vllm = bench("vllm-benchmark-serving.json");
    let (code, err) = ingest(&catalogue, &plan, &vllm, SERVICE, "2026-12-04");
    assert_eq!(code, 0, "{err}");
    // The example plans the service on 12 H800 at zhongwei: prefill tp2 ×4 and decode tp2 ×2;
    // `tp`, `pp` and `replicas` are the generating (decode) role's, the prefill role's follow
    // the deployment's other columns.
    let store = dir.path().join("specs/runs/zhongwei/serving.csv");
    let first = std::fs::read_to_string(&store).unwrap();
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 2, "{first}");
    assert_eq!(lines[0], loam_compiler::runs::store::serving::COLUMNS);
    assert!(
        lines[1].starts_with(
            "zhongwei_2026-12-04_vllm-benchmark-serving,2026-12-04,xirang,zhongwei,\
             llama31-70b-chat,vllm-benchmark-serving,"
        ),
        "{}",
        lines[1]
    );
    // The spec's model and precision, the plan's deployment; the fixture's 215,312 input and
    // 198,604 output tokens over 1,000 completed requests at 8 requests/s; its output
    // throughput 1,513.7 tokens/s, 7.62 requests/s, TTFT 78.2 / 241.9 ms and TPOT
    // 30.5 / 52.7 ms (median / p99).
    assert!(
        lines[1].contains(
            ",vllm,,meta-llama/Llama-3.1-70B-Instruct,80,8192,64,8,28672,128256,fp8,H800_SXM,\
             12,2,1,2,poisson,215.3,198.6,8,,1513.70,7.6200,78.20,241.90,30.50,52.70,"
        ),
        "{}",
        lines[1]
    );
    // The plan's own prediction at ingest time: 500 tokens/s per device, TTFT p50 185 ms,
    // TPOT p50 33 ms, ±10 % (the example's plan). Then the deployment: nodes of 8 devices
    // (zw-h800-a), 8 NICs of 400 Gb/s shared by 8 devices = 50 GB/s each off the node, the
    // decode role's 512 sequences, and the prefill role: tp2, pp1, 4 replicas of 64; a dense
    // model whose name tells its MLP leaves the model's columns blank.
    assert!(
        lines[1].ends_with(
            ",500.00,185.00,33.00,0.1000,runs store: vllm-benchmark-serving,\
             8,50.000,512,2,1,4,64,,,,,,,,,,,,,,,,"
        ),
        "{}",
        lines[1]
    );
    // A second run appends; the first line is never rewritten.
    let (code, err) = ingest(&catalogue, &plan, &vllm, SERVICE, "2026-12-05");
    assert_eq!(code, 0, "{err}");
    let second = std::fs::read_to_string(&store).unwrap();
    assert!(second.starts_with(&first), "an existing line was rewritten");
    assert_eq!(second.lines().count(), 3);
    let (code, _, err) = run_cli(&["--catalogue", &catalogue, "check", &example()], "");
    assert_eq!(code, 0, "{err}");
    // A line edited to an unknown engine, or a negative throughput, is an error at its line.
    std::fs::write(
        &store,
        second
            .replacen(",vllm,,", ",vllmx,,", 1)
            .replacen(",1513.70,", ",-1513.70,", 2),
    )
    .unwrap();
    let (code, _, err) = run_cli(&["--catalogue", &catalogue, "check", &example()], "");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("L2005") && err.contains("L2008"), "{err}");
    assert!(err.contains("runs/zhongwei/serving.csv:2:1"), "{err}");
    assert!(err.contains("runs/zhongwei/serving.csv:3:1"), "{err}");
}

#[test]
fn a_benchmark_against_a_job_and_a_log_against_a_service_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let log = bench("megatron-70b.log");
    let (code, err) = ingest(&catalogue, &plan, &log, SERVICE, "2026-12-04");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("a training log, but `llama31-70b-chat` is a service"),
        "{err}"
    );
    assert!(!dir.path().join("specs/runs").exists());
    // The SGLang result's last line is a run at 4 requests/s with at most 64 in flight: also a
    // serving run; 110,000 input and 95,000 output tokens over 500 requests are 220 and 190 a
    // request.
    let sglang = bench("sglang-bench-serving.jsonl");
    let (code, err) = ingest(&catalogue, &plan, &sglang, SERVICE, "2026-12-04");
    assert_eq!(code, 0, "{err}");
    let store = dir.path().join("specs/runs/zhongwei/serving.csv");
    let text = std::fs::read_to_string(&store).unwrap();
    assert!(text.contains(",sglang-bench-serving,"), "{text}");
    assert!(text.contains(",poisson,220.0,190.0,4,64,"), "{text}");
    // Its first line sent every request at once, 64 in flight: a fixed-concurrency run.
    let first = dir.path().join("sglang-first.json");
    let line = std::fs::read_to_string(&sglang).unwrap();
    std::fs::write(&first, line.lines().next().unwrap()).unwrap();
    let (code, err) = ingest(
        &catalogue,
        &plan,
        &first.to_string_lossy(),
        SERVICE,
        "2026-12-05",
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&store).unwrap();
    assert!(
        text.contains(",fixed concurrency,220.0,190.0,inf,64,"),
        "{text}"
    );
}

/// Three runs of the vLLM fixture at zhongwei, `calibrate --fit`: the site's calibration file
/// gains a `serving` section for vLLM, and a hand-edited engine or factor is a located error.
#[test]
fn calibrate_fit_writes_a_per_site_vllm_efficiency_with_its_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let vllm = bench("vllm-benchmark-serving.json");
    for k in 1..=3 {
        let (code, err) = ingest(&catalogue, &plan, &vllm, SERVICE, &format!("2026-12-0{k}"));
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, err) = run_cli(&["--catalogue", &catalogue, "calibrate", "--fit"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("xirang     zhongwei   serving vllm     3 efficiency"),
        "{out}"
    );
    let file = dir.path().join("specs/calibration/xirang-zhongwei.yaml");
    let yaml = std::fs::read_to_string(&file).unwrap();
    let value = |key: &str| -> f64 {
        let line = yaml
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap();
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(yaml.contains("serving:\n  vllm:\n    runs: 3\n"), "{yaml}");
    assert!(
        yaml.contains("first_run: \"2026-12-01\"") && yaml.contains("last_run: \"2026-12-03\""),
        "{yaml}"
    );
    // At 8 requests/s the four prefill and two decode replicas are below capacity: the model's
    // throughput is the offered rate, 8 × 198.604 = 1,588.8 tokens/s against 1,513.7 measured,
    // +4.96 % whatever the engine's efficiency; the latencies fit the efficiency.
    let error = value("median_abs_error_pct:");
    assert!((4.9..5.0).contains(&error), "{yaml}");
    // The band: s = ln(1588.8 / 1513.7) × sqrt(3 / 2) = 0.0593 (three equal residuals, one
    // factor), the prior's share 0.30 / 4 = 0.075: sqrt(0.0593² + 0.075²) = 0.0956.
    let band = value("throughput_uncertainty:");
    assert!((0.0950..0.0962).contains(&band), "{yaml}");
    let efficiency = value("efficiency:");
    assert!(efficiency > 0.05 && efficiency < 5.0, "{yaml}");
    let (code, _, err) = run_cli(&["--catalogue", &catalogue, "check", &example()], "");
    assert_eq!(code, 0, "{err}");
    std::fs::write(
        &file,
        yaml.replace("  vllm:", "  vllmx:")
            .replace(&format!("efficiency: {efficiency:.4}"), "efficiency: 7.5"),
    )
    .unwrap();
    let (code, _, err) = run_cli(&["--catalogue", &catalogue, "check", &example()], "");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("L2005") && err.contains("unknown serving engine `vllmx`"),
        "{err}"
    );
    assert!(
        err.contains("L2008") && err.contains("`efficiency` is 7.5"),
        "{err}"
    );
    assert!(err.contains("xirang-zhongwei.yaml:7:1"), "{err}");
}

/// The service's Plan JSON planned against `catalogue`.
fn plan_json(catalogue: &str, spec: &str) -> serde_json::Value {
    let (code, out, err) = run_cli(
        &["--catalogue", catalogue, "plan", spec, "--format", "json"],
        "",
    );
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Three vLLM runs at zhongwei faster than the shipped constants predict
/// (`tests/data/runs/zhongwei/vllm-70b-{1,2,3}.json`: vLLM's `--save-result` JSON, the figures of
/// the suite's vLLM fixture with median TTFT 51–53 ms and TPOT 21.4–23.4 ms): `calibrate --fit`
/// and the chat service planned again is planned with the faster engine at zhongwei and says
/// so; a store without serving runs plans every shipped service byte for byte as before.
#[test]
fn a_service_at_a_calibrated_site_uses_the_engine_efficiency_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let services = [
        "examples/llama31-70b-chat-service.loam",
        "examples/qwen3-235b-moe-service.loam",
        "examples/rag-llama31-8b-service.loam",
    ]
    .map(|s| repo_root().join(s).to_string_lossy().into_owned());
    let before: Vec<serde_json::Value> =
        services.iter().map(|s| plan_json(&catalogue, s)).collect();
    // A training run at shanghai (its calibration file has no serving section) moves no service.
    let megatron = bench("megatron-70b.log");
    let (code, err) = run_cli_job(&catalogue, &megatron, dir.path());
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run_cli(&["--catalogue", &catalogue, "calibrate", "--fit"], "");
    assert_eq!(code, 0, "{err}");
    // The catalogue's digest holds the new calibration file, as for any calibration; the
    // services' plans are the same.
    for (spec, was) in services.iter().zip(&before) {
        assert_eq!(
            plan_json(&catalogue, spec)["services"],
            was["services"],
            "{spec} moved without serving runs"
        );
    }
    let uncalibrated = &before[0]["services"][0];
    assert_eq!(uncalibrated["estimate"]["devices"], 12);
    for k in 1..=3 {
        let run = bench(&format!("zhongwei/vllm-70b-{k}.json"));
        let (code, err) = ingest(&catalogue, &plan, &run, SERVICE, &format!("2026-12-0{k}"));
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, err) = run_cli(&["--catalogue", &catalogue, "calibrate", "--fit"], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("serving vllm     3 efficiency"), "{out}");
    let after = plan_json(&catalogue, &services[0]);
    let service = &after["services"][0];
    let notes: Vec<&str> = service["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with(
            "calibrated on 3 serving runs at zhongwei (vllm), median error 5.0 % (±9.6 %, \
             2026-12-01 to 2026-12-03)"
        )),
        "{notes:?}"
    );
    // The runs' decode is faster than the shipped constants: the same busiest hour needs fewer
    // devices at zhongwei than the 12 planned before.
    let devices = service["estimate"]["devices"].as_u64().unwrap();
    assert!(devices < 12, "{devices}");
    assert!(
        service["roles"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["group"]["site"] == "zhongwei"),
        "{service}"
    );
    // The band is the runs' (see the fit test above: 9.56 %), not the device's 10 %.
    let band = service["estimate"]["throughput_uncertainty"]
        .as_f64()
        .unwrap();
    assert!((0.0950..0.0962).contains(&band), "{band}");
}

/// Appends the Megatron fixture as a training run of the Llama 3 70B example at shanghai.
fn run_cli_job(catalogue: &str, log: &str, dir: &std::path::Path) -> (u8, String) {
    let spec = repo_root().join("examples/llama3-70b-pretrain.loam");
    let training = plan_json(catalogue, &spec.to_string_lossy());
    let plan = dir.join("training-plan.json");
    std::fs::write(&plan, training.to_string()).unwrap();
    ingest(
        catalogue,
        &plan.to_string_lossy(),
        log,
        "llama3-70b-pretrain",
        "2026-12-04",
    )
}

/// `runs check` compares each stored serving run with the service's plan at the run's load: the
/// zhongwei vLLM run (`tests/data/runs/zhongwei/vllm-70b-1.json`) passes, the same result edited
/// to be 30 % slower (throughput × 0.7, medians × 1.3) drifts, exit 1; a run of a service the
/// plan lacks, or on another device, says so.
#[test]
fn runs_check_flags_a_serving_run_slower_than_its_service_s_plan() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let original = bench("zhongwei/vllm-70b-1.json");
    let (code, err) = ingest(&catalogue, &plan, &original, SERVICE, "2026-12-01");
    assert_eq!(code, 0, "{err}");
    let mut slow: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&original).unwrap()).unwrap();
    for key in [
        "output_throughput",
        "request_throughput",
        "total_token_throughput",
    ] {
        if let Some(v) = slow[key].as_f64() {
            slow[key] = serde_json::json!(v * 0.7);
        }
    }
    for key in [
        "median_ttft_ms",
        "median_tpot_ms",
        "p99_ttft_ms",
        "p99_tpot_ms",
    ] {
        if let Some(v) = slow[key].as_f64() {
            slow[key] = serde_json::json!(v * 1.3);
        }
    }
    let slow_path = dir.path().join("vllm-70b-slow.json");
    std::fs::write(&slow_path, slow.to_string()).unwrap();
    let (code, err) = ingest(
        &catalogue,
        &plan,
        &slow_path.to_string_lossy(),
        SERVICE,
        "2026-12-02",
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_cli(&["--catalogue", &catalogue, "runs", "check", &plan], "");
    assert_eq!(code, 1, "{out}{err}");
    // The plan: 12 H800, 500 tokens/s per device at its busiest hour, TTFT 185 ms and TPOT
    // 33 ms medians, ±10 %. The run offered 8 requests/s of 198.6 output tokens (stored to one
    // decimal): 8 × 198.6 / 12 = 132.4 tokens/s per device, below 500, so that is expected.
    // Measured 1,513.7 / 12 = 126.1 is −4.7 %; the slow copy's 1,059.59 / 12 = 88.3 is −33.3 %.
    // Its TPOT 21.4 × 1.3 = 27.8 ms is still below 33 × 1.1 = 36.3 ms: the throughput drifts.
    assert!(
        out.contains("ok    zhongwei_2026-12-01_vllm-70b-1 (")
            && out.contains(
                "measured 126 output tokens/s per device, -4.7 % against 132 (the offered load) of \
             service `llama31-70b-chat` (± 10 %); median TTFT 51.0 ms against 185.0 ms; median \
             TPOT 21.4 ms against 33.0 ms\n"
            ),
        "{out}"
    );
    assert!(
        out.contains("DRIFT zhongwei_2026-12-02_vllm-70b-slow (")
            && out.contains("measured 88 output tokens/s per device, -33.3 % against 132"),
        "{out}"
    );
    assert_eq!(out.matches("DRIFT").count(), 1, "{out}");
    assert!(out.contains("2 run(s) compared"), "{out}");
    let (_, json, _) = run_cli(
        &[
            "--catalogue",
            &catalogue,
            "runs",
            "check",
            &plan,
            "--format",
            "json",
        ],
        "",
    );
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["drifted"], 1);
    let deviation = json["serving_runs"][1]["deviation"].as_f64().unwrap();
    assert!(
        (deviation - (1059.59 / 12.0 / 132.4 - 1.0)).abs() < 1e-3,
        "{json}"
    );
    // Only the original row, its service renamed: no plan, nothing drifts, exit 0. On another
    // device: compared, and the difference named.
    let store = dir.path().join("specs/runs/zhongwei/serving.csv");
    let text = std::fs::read_to_string(&store).unwrap();
    let kept: Vec<&str> = text.lines().take(2).collect();
    let first = kept.join("\n");
    std::fs::write(
        &store,
        first.replace(",llama31-70b-chat,", ",old-chat,") + "\n",
    )
    .unwrap();
    let (code, out, _) = run_cli(&["--catalogue", &catalogue, "runs", "check", &plan], "");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("gone  zhongwei_2026-12-01_vllm-70b-1 (")
            && out.contains("service `old-chat` has no feasible plan in"),
        "{out}"
    );
    assert!(out.contains("0 run(s) compared"), "{out}");
    std::fs::write(&store, first.replace(",H800_SXM,", ",H20,") + "\n").unwrap();
    let (code, out, _) = run_cli(&["--catalogue", &catalogue, "runs", "check", &plan], "");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("the run differs: device H20 (plan H800_SXM)"),
        "{out}"
    );
}

/// A benchmark heavier than the plan's busiest hour but within the capacity the plan states
/// (`estimate.at_capacity`, Plan JSON 1.14) is compared with the offered load and with the
/// medians at capacity. The chat example's Plan JSON is given its figures by hand, so that the
/// run falls between them: busiest hour 100 tokens/s per device (under the run's offered
/// 132.4), capacity 200 with medians of 100 ms and 20 ms.
#[test]
fn runs_check_compares_a_run_above_the_busiest_hour_with_the_plan_at_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let (code, err) = ingest(
        &catalogue,
        &plan,
        &bench("zhongwei/vllm-70b-1.json"),
        SERVICE,
        "2026-12-01",
    );
    assert_eq!(code, 0, "{err}");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let estimate = &mut doc["services"][0]["estimate"];
    estimate["output_tokens_per_s_per_device"] = serde_json::json!(100.0);
    estimate["at_capacity"] = serde_json::json!({
        "output_tokens_per_s_per_device": 200.0,
        "tpot_p50_s": 0.020,
        "ttft_p50_s": 0.100,
    });
    std::fs::write(&plan, doc.to_string()).unwrap();
    let (code, out, err) = run_cli(&["--catalogue", &catalogue, "runs", "check", &plan], "");
    // Offered 132.4, measured 126.1 (−4.7 %); TTFT 51.0 ms under 100 × 1.1 and TPOT 21.4 ms
    // under 20 × 1.1 = 22: within the plan.
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "-4.7 % against 132 (the offered load, above the busiest hour: medians against the \
             plan's at capacity) of service `llama31-70b-chat` (± 10 %); median TTFT 51.0 ms \
             against 100.0 ms; median TPOT 21.4 ms against 20.0 ms\n"
        ),
        "{out}"
    );
    // At capacity 15 ms per token, the run's 21.4 ms is slower than the plan allows.
    doc["services"][0]["estimate"]["at_capacity"]["tpot_p50_s"] = serde_json::json!(0.015);
    std::fs::write(&plan, doc.to_string()).unwrap();
    let (code, out, _) = run_cli(&["--catalogue", &catalogue, "runs", "check", &plan], "");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("median TPOT 21.4 ms against 15.0 ms (slower)"),
        "{out}"
    );
}

/// The engine's version: stated in the result by vLLM's `--metadata version=…` (a top-level
/// key), or given with `--engine-version`, which replaces it; stored in `engine_version` and
/// checked as a version by `loam check`.
#[test]
fn the_engine_s_version_is_stored_from_the_result_or_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let original = std::fs::read_to_string(bench("vllm-benchmark-serving.json")).unwrap();
    let stated = dir.path().join("vllm-0.6.3.json");
    std::fs::write(
        &stated,
        original.replacen('{', "{\"version\": \"0.6.3\",", 1),
    )
    .unwrap();
    let (code, err) = ingest(
        &catalogue,
        &plan,
        &stated.to_string_lossy(),
        SERVICE,
        "2026-12-04",
    );
    assert_eq!(code, 0, "{err}");
    let store = dir.path().join("specs/runs/zhongwei/serving.csv");
    let text = std::fs::read_to_string(&store).unwrap();
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.contains(",vllm,0.6.3,meta-llama/Llama-3.1-70B-Instruct,")),
        "{text}"
    );
    let given = |version: &str| {
        run_cli(
            &[
                "--catalogue",
                &catalogue,
                "runs",
                "ingest",
                &stated.to_string_lossy(),
                "--plan",
                &plan,
                "--job",
                SERVICE,
                "--append",
                "--date",
                "2026-12-05",
                "--engine-version",
                version,
            ],
            "",
        )
    };
    let (code, _, err) = given("0.7.1");
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&store).unwrap();
    assert!(
        text.lines()
            .nth(2)
            .is_some_and(|l| l.contains(",vllm,0.7.1,meta-llama/")),
        "{text}"
    );
    // Not a version: refused before anything is read or written.
    let (code, _, err) = given("0.7 \u{1b}[31m");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--engine-version: expected a version"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert_eq!(std::fs::read_to_string(&store).unwrap().lines().count(), 3);
    // A training log has no engine: the flag is refused for it.
    let (code, _, err) = run_cli(
        &[
            "runs",
            "ingest",
            &bench("megatron-70b.log"),
            "--engine-version",
            "0.7.1",
        ],
        "",
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("a training log; --engine-version is a serving benchmark's"),
        "{err}"
    );
    // A store line edited to a version that is not one is an error at its line.
    std::fs::write(&store, text.replacen(",vllm,0.6.3,", ",vllm,0.6 3,", 1)).unwrap();
    let (code, _, err) = run_cli(&["--catalogue", &catalogue, "check", &example()], "");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("runs/zhongwei/serving.csv:2:1"), "{err}");
    assert!(err.contains("engine_version"), "{err}");
}

/// A site's serving file started with the store's first header keeps it: the chat example's
/// disaggregated run is refused there and nothing is written, with the header to extend its first
/// line to; once extended, its old row and the new one both pass `loam check` and fit.
#[test]
fn a_file_of_the_first_header_is_extended_not_rewritten() {
    use loam_compiler::runs::store::serving::{COLUMNS, FIRST_COLUMNS};
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let vllm = bench("vllm-benchmark-serving.json");
    let store = dir.path().join("specs/runs/zhongwei/serving.csv");
    // A row written before the deployment columns: six aggregated tp2 replicas.
    let old_row = "zhongwei_2026-11-30_vllm-benchmark-serving,2026-11-30,xirang,zhongwei,\
                   llama31-70b-chat,vllm-benchmark-serving,vllm-benchmark-serving.json,vllm,,\
                   meta-llama/Llama-3.1-70B-Instruct,80,8192,64,8,28672,128256,fp8,H800_SXM,12,\
                   2,1,6,poisson,215.3,198.6,8,,1513.70,7.6200,78.20,241.90,30.50,52.70,500.00,\
                   185.00,33.00,0.1000,runs store: vllm-benchmark-serving\n";
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    let first = format!("{FIRST_COLUMNS}\n{old_row}");
    std::fs::write(&store, &first).unwrap();
    let (code, _, err) = run_cli(&["--catalogue", &catalogue, "check", &example()], "");
    assert_eq!(code, 0, "{err}");
    let (code, err) = ingest(&catalogue, &plan, &vllm, SERVICE, "2026-12-04");
    // A write refused is an output error (exit 2), as any other refusal of the store writer.
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("it has the store's first header")
            && err.contains("extend its first line to the current header")
            && err.contains(COLUMNS),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&store).unwrap(), first);
    // The first line extended by hand, as the refusal says.
    std::fs::write(&store, format!("{COLUMNS}\n{old_row}")).unwrap();
    let (code, err) = ingest(&catalogue, &plan, &vllm, SERVICE, "2026-12-04");
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&store).unwrap();
    assert!(text.starts_with(&format!("{COLUMNS}\n{old_row}")), "{text}");
    assert!(
        text.ends_with(",8,50.000,512,2,1,4,64,,,,,,,,,,,,,,,,\n"),
        "{text}"
    );
    let (code, _, err) = run_cli(&["--catalogue", &catalogue, "check", &example()], "");
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_cli(&["--catalogue", &catalogue, "calibrate", "--fit"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("zhongwei   serving vllm     2 efficiency"),
        "{out}"
    );
}

/// The chat example plans disaggregated and states its capacity point (Plan JSON 1.15): a
/// benchmark offered more than its busiest hour and less than that capacity is compared with the
/// medians at capacity, read from the plan itself, so a median TTFT slower than the busiest
/// hour allows but within what capacity allows passes.
#[test]
fn a_disaggregated_service_s_heavier_run_is_compared_with_its_own_capacity_point() {
    let dir = tempfile::tempdir().unwrap();
    let (catalogue, plan) = catalogue_and_plan(dir.path());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let estimate = &doc["services"][0]["estimate"];
    let figure = |v: &serde_json::Value| v.as_f64().unwrap();
    let devices = figure(&estimate["devices"]);
    let (busiest, at_capacity) = (
        figure(&estimate["output_tokens_per_s_per_device"]),
        figure(&estimate["at_capacity"]["output_tokens_per_s_per_device"]),
    );
    let (ttft, ttft_at_capacity) = (
        figure(&estimate["ttft_p50_s"]) * 1e3,
        figure(&estimate["at_capacity"]["ttft_p50_s"]) * 1e3,
    );
    assert!(
        at_capacity > busiest && ttft_at_capacity > ttft,
        "{estimate}"
    );
    // The vLLM fixture's lengths (198,604 output tokens over 1,000 requests, stored as 198.6),
    // offered midway between the busiest hour and capacity, generating what it is offered.
    let output_len = 198.6;
    let per_device = (busiest + at_capacity) / 2.0;
    let rate = per_device * devices / output_len;
    let band = 1.1;
    let mut run: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(bench("vllm-benchmark-serving.json")).unwrap(),
    )
    .unwrap();
    run["request_rate"] = serde_json::json!(rate);
    run["output_throughput"] = serde_json::json!(per_device * devices);
    run["request_throughput"] = serde_json::json!(rate);
    // Above what the busiest hour allows (its median × the band), within capacity's.
    let median_ttft = (ttft * band + ttft_at_capacity * band) / 2.0;
    assert!(median_ttft > ttft * band && median_ttft < ttft_at_capacity * band);
    run["median_ttft_ms"] = serde_json::json!(median_ttft);
    let path = dir.path().join("vllm-between.json");
    std::fs::write(&path, run.to_string()).unwrap();
    let (code, err) = ingest(
        &catalogue,
        &plan,
        &path.to_string_lossy(),
        SERVICE,
        "2026-12-06",
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_cli(&["--catalogue", &catalogue, "runs", "check", &plan], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "(the offered load, above the busiest hour: medians against the plan's at capacity)"
        ) && out.contains(&format!(
            "median TTFT {median_ttft:.1} ms against {ttft_at_capacity:.1} ms"
        )),
        "{out}"
    );
}

/// A benchmark of a mixture-of-experts service (Qwen3-235B-A22B: 128 experts of 1,536, 8 per
/// token, heads of 128) keeps its model in the store's model columns, passes `loam check`, and
/// reads back as the service's model (the append's own guard compares the two). In a file of
/// the deployment header it is refused with the header to extend to, and nothing is written.
#[test]
fn a_moe_service_s_benchmark_keeps_its_model_and_needs_the_current_header() {
    use loam_compiler::runs::store::serving::{COLUMNS, DEPLOYMENT_COLUMNS, read_rows};
    let dir = tempfile::tempdir().unwrap();
    let spec = repo_root().join("examples/qwen3-235b-moe-service.loam");
    let (catalogue, plan, _) = loam_tests::planned_on_shipped_catalogue(dir.path(), &spec);
    let specs = dir.path().join("specs");
    let vllm = bench("vllm-benchmark-serving.json");
    let store = specs.join("runs/zhongwei/serving.csv");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    let older = format!("{DEPLOYMENT_COLUMNS}\n");
    std::fs::write(&store, &older).unwrap();
    let (code, err) = ingest(
        &catalogue,
        &plan,
        &vllm,
        "qwen3-235b-assistant",
        "2026-12-07",
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no columns for this service's model") && err.contains(COLUMNS),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&store).unwrap(), older);
    std::fs::remove_file(&store).unwrap();
    let (code, err) = ingest(
        &catalogue,
        &plan,
        &vllm,
        "qwen3-235b-assistant",
        "2026-12-07",
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&store).unwrap();
    let row = &read_rows(&text)[0];
    assert_eq!(
        (row.experts, row.top_k, row.expert_ffn, row.head_dim),
        (Some(128), Some(8), Some(1536), Some(128))
    );
    // Qwen's name tells its gated MLP, so the row leaves `mlp` blank.
    assert_eq!(row.mlp, None);
    let (code, _, err) = run_cli(
        &["--catalogue", &catalogue, "check", &spec.to_string_lossy()],
        "",
    );
    assert_eq!(code, 0, "{err}");
}
