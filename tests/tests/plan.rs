//! `loam plan` and `loam calibrate` end to end: every example plans, the JSON keeps the contract,
//! output is deterministic, and infeasible jobs fail with numbers in their reasons.

use crate::loam_process::loam_in;
use loam_tests::repo_root;
use serde_json::Value;

/// Runs loam from the repository root, so paths in the output are relative and stable.
fn loam(args: &[&str]) -> (u8, String, String) {
    loam_in(&repo_root(), args)
}

/// `text` with the catalogue digest replaced, so snapshots survive catalogue edits that do not
/// change the plan.
fn redact(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("sha256:") {
        out.push_str(&rest[..at]);
        out.push_str("sha256:[digest]");
        rest = rest[at + 7..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

fn examples() -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "loam"))
        .map(|p| format!("examples/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    found.sort();
    found
}

fn plan_json(args: &[&str]) -> (u8, Value, String) {
    let mut all = vec!["plan", "--format", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = loam(&all);
    (code, serde_json::from_str(&out).unwrap_or(Value::Null), err)
}

/// Every key of every object is in sorted order.
fn assert_sorted(value: &Value) {
    match value {
        Value::Object(map) => {
            let keys: Vec<&String> = map.keys().collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted);
            map.values().for_each(assert_sorted);
        }
        Value::Array(items) => items.iter().for_each(assert_sorted),
        _ => {}
    }
}

const PLAN_FIELDS: &[&str] = &[
    "job",
    "file",
    "feasible",
    "layout",
    "groups",
    "stages",
    "estimate",
    "data",
    "checkpoint",
    "alternatives",
];
const LAYOUT_FIELDS: &[&str] = &[
    "tensor",
    "pipeline",
    "data",
    "context",
    "expert",
    "virtual_stages",
    "micro_batch",
    "zero",
    "recompute",
];
const ESTIMATE_FIELDS: &[&str] = &[
    "step_time_s",
    "tokens_per_s",
    "model_tflops_per_device",
    "mfu",
    "memory_per_device_gib",
    "train_time_h",
    "cost",
    "energy_kwh",
    "carbon_kg",
    "breakdown_s",
    "flops_convention",
];

fn has(value: &Value, fields: &[&str], what: &str) {
    for f in fields {
        assert!(value.get(f).is_some(), "{what} lacks `{f}`: {value}");
    }
}

/// Every example's plan states what failures cost and how its nodes run it, and the numbers
/// agree with each other: the wall time is the failure-free time over the goodput, the
/// interruptions are the wall time at the devices' rate, the restart budget covers them.
#[test]
fn every_plan_states_its_failures_and_how_its_nodes_run_it() {
    for example in examples() {
        let (code, doc, err) = plan_json(&[&example]);
        assert_eq!(code, 0, "{example}: {err}");
        for plan in doc["plans"].as_array().unwrap() {
            let e = &plan["estimate"];
            let g = &e["goodput"];
            let number = |v: &Value| v.as_f64().unwrap();
            let fraction = number(&g["fraction"]);
            assert!(fraction > 0.5 && fraction <= 1.0, "{example}: {g}");
            let wall = number(&e["train_time_h"]);
            let work = number(&g["failure_free_time_h"]);
            assert!(
                (wall * fraction - work).abs() <= 1e-3 * work,
                "{example}: {e}"
            );
            let devices: f64 = plan["groups"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| number(&g["devices"]))
                .sum();
            let expected = wall * devices * number(&g["interruptions_per_device_hour"]);
            let stated = number(&g["interruptions_expected"]);
            assert!(
                (expected - stated).abs() <= 0.01 * stated.max(1.0),
                "{example}: {g}"
            );
            assert!(number(&g["restart_budget"]) > stated, "{example}: {g}");
            assert!(number(&g["restart_min"]) > 0.0);
            for group in plan["groups"].as_array().unwrap() {
                let node = &group["node"];
                let collective = node["collective"].as_str().unwrap();
                let vendor = node["vendor"].as_str().unwrap();
                let expected = match vendor {
                    "nvidia" => "nccl",
                    "amd" | "hygon" => "rccl",
                    _ => "hccl",
                };
                assert_eq!(collective, expected, "{example}: {node}");
                assert!(number(&node["cpus"]) > 0.0, "{example}: {node}");
                assert!(number(&node["shm_gib"]) <= number(&node["memory_gib"]));
                assert!(!node["tolerations"].as_array().unwrap().is_empty());
            }
        }
    }
}

#[test]
fn every_example_plans_feasibly_with_every_contract_field() {
    for example in examples() {
        let (code, doc, err) = plan_json(&[&example]);
        assert_eq!(code, 0, "{example}: {err}\n{doc}");
        assert_sorted(&doc);
        assert_eq!(doc["format_version"], "1.18");
        assert!(
            doc["catalogue_digest"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        let plans = doc["plans"].as_array().unwrap();
        let services = doc["services"].as_array().map_or(&[][..], Vec::as_slice);
        assert!(!plans.is_empty() || !services.is_empty(), "{example}");
        // A service example's plan (1.8): feasible, with its deployment, estimate and front.
        for service in services {
            assert_eq!(service["kind"], "service", "{example}");
            assert_eq!(service["feasible"], true, "{example}: {service}");
            assert_eq!(service["file"], example.as_str());
            for key in [
                "model",
                "traffic",
                "engine",
                "mode",
                "roles",
                "estimate",
                "autoscaling",
                "pareto",
                "why",
            ] {
                assert!(!service[key].is_null(), "{example}: no `{key}`");
            }
            assert!(!service["pareto"].as_array().unwrap().is_empty());
        }
        for plan in plans {
            has(plan, PLAN_FIELDS, "plan");
            assert_eq!(plan["feasible"], true, "{example}: {plan}");
            assert_eq!(plan["file"], example.as_str());
            has(&plan["layout"], LAYOUT_FIELDS, "layout");
            has(&plan["estimate"], ESTIMATE_FIELDS, "estimate");
            // What the report draws (1.9): the goal, and every alternative's time, cost and
            // carbon, the chosen plan's own when it ties.
            assert!(plan["goal"]["optimize"].is_string(), "{example}: no goal");
            for alternative in plan["alternatives"].as_array().unwrap() {
                for key in ["time_h", "cost", "carbon_kg"] {
                    assert!(
                        alternative[key].as_f64().is_some_and(|v| v > 0.0),
                        "{example}: an alternative without `{key}`: {alternative}"
                    );
                }
            }
            // A plan over two device types states each type's own figures (1.7), and the
            // blended MFU lies between them.
            let groups = plan["groups"].as_array().unwrap();
            if groups.len() > 1 {
                let mfus: Vec<f64> = groups.iter().map(|g| g["mfu"].as_f64().unwrap()).collect();
                let blended = plan["estimate"]["mfu"].as_f64().unwrap();
                let (lo, hi) = (
                    mfus.iter().copied().fold(1.0, f64::min),
                    mfus.iter().copied().fold(0.0, f64::max),
                );
                assert!(
                    lo - 1e-4 <= blended && blended <= hi + 1e-4,
                    "{example}: {blended} not in {mfus:?}"
                );
                let memory = groups
                    .iter()
                    .map(|g| g["memory_per_device_gib"].as_f64().unwrap())
                    .fold(0.0, f64::max);
                assert!(
                    (memory - plan["estimate"]["memory_per_device_gib"].as_f64().unwrap()).abs()
                        < 1e-3
                );
            }
            has(
                &plan["estimate"]["breakdown_s"],
                &[
                    "compute",
                    "tensor_comm",
                    "pipeline_bubble",
                    "data_comm",
                    "other",
                ],
                "breakdown",
            );
            has(&plan["estimate"]["cost"], &["amount", "currency"], "cost");
            has(
                &plan["data"],
                &["strategy", "transfer_gb", "transfer_h"],
                "data",
            );
            has(
                &plan["checkpoint"],
                &["interval_min", "write_s"],
                "checkpoint",
            );
            for group in plan["groups"].as_array().unwrap() {
                has(group, &["site", "device", "nodes", "devices"], "group");
            }
            for alt in plan["alternatives"].as_array().unwrap() {
                has(alt, &["summary", "objective", "why_not"], "alternative");
            }
            // Stages cover every block exactly once, in order.
            let layers = plan["workload"]["layers"].as_u64().unwrap();
            let stages = plan["stages"].as_array().unwrap();
            // One stage per pipeline rank, or per model chunk when interleaved (then each names
            // its rank).
            let pipeline = plan["layout"]["pipeline"].as_u64().unwrap();
            let interleaved = stages.iter().any(|s| s.get("rank").is_some());
            let chunks = if interleaved {
                pipeline * plan["layout"]["virtual_stages"].as_u64().unwrap()
            } else {
                pipeline
            };
            assert_eq!(stages.len() as u64, chunks);
            let mut next = 0;
            for (i, stage) in stages.iter().enumerate() {
                assert_eq!(stage["index"].as_u64().unwrap(), i as u64);
                let range = stage["layers"].as_array().unwrap();
                assert_eq!(range[0].as_u64().unwrap(), next);
                next = range[1].as_u64().unwrap();
                // Every stage states its seconds per micro-batch (format 1.13), the forward
                // and the collectives each a part of them.
                let seconds = |key: &str| stage[key].as_f64().unwrap_or(-1.0);
                let (all, forward, comm) = (
                    seconds("micro_batch_s"),
                    seconds("forward_s"),
                    seconds("tensor_comm_s"),
                );
                assert!(
                    all > 0.0 && forward > 0.0 && forward < all && (0.0..all).contains(&comm),
                    "{example}: stage {i}: {stage}"
                );
            }
            assert_eq!(next, layers, "{example}: stages must cover [0, {layers})");
            // The devices of the layout are the devices placed: every stage takes its group's
            // tensor degree (the layout's, in a single-type plan) times the data degree; in a
            // data-parallel split each group's own layout takes its devices.
            let l = &plan["layout"];
            let groups = plan["groups"].as_array().unwrap();
            let degrees = |l: &Value| -> u64 {
                ["tensor", "pipeline", "data", "context", "expert"]
                    .iter()
                    .map(|k| l[*k].as_u64().unwrap())
                    .product()
            };
            let devices: u64 = if plan["hetero"] == "data" {
                groups.iter().map(|g| degrees(&g["layout"])).sum()
            } else {
                // Interleaved plans list every chunk; the first `pipeline` are one per rank.
                stages
                    .iter()
                    .filter(|s| !interleaved || s["index"].as_u64().unwrap() < pipeline)
                    .map(|s| {
                        let g = &groups[s["group"].as_u64().unwrap() as usize];
                        let tensor = g["tensor"]
                            .as_u64()
                            .unwrap_or(l["tensor"].as_u64().unwrap());
                        tensor * l["data"].as_u64().unwrap() * l["context"].as_u64().unwrap()
                    })
                    .sum()
            };
            let placed: u64 = plan["groups"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["devices"].as_u64().unwrap())
                .sum();
            assert_eq!(devices, placed, "{example}");
            // Memory fits the devices (the largest of a heterogeneous plan's).
            let capacity_gib = groups
                .iter()
                .map(|g| {
                    loam_compiler::catalogue::builtin()
                        .device(g["device"].as_str().unwrap())
                        .unwrap()
                        .memory_bytes
                        .value
                        / (1u64 << 30) as f64
                })
                .fold(0.0, f64::max);
            let memory = plan["estimate"]["memory_per_device_gib"].as_f64().unwrap();
            assert!(
                memory > 0.0 && memory <= capacity_gib,
                "{example}: {memory} GiB"
            );
        }
    }
}

#[test]
fn the_70b_plan_is_believable() {
    let (code, doc, _) = plan_json(&["examples/llama3-70b-pretrain.loam"]);
    assert_eq!(code, 0);
    let plan = &doc["plans"][0];
    let e = &plan["estimate"];
    let mfu = e["mfu"].as_f64().unwrap();
    assert!((0.30..=0.55).contains(&mfu), "MFU {mfu}");
    assert!(plan["layout"]["tensor"].as_u64().unwrap() <= 8);
    let days = e["train_time_h"].as_f64().unwrap() / 24.0;
    assert!((1.0..=60.0).contains(&days), "{days} days");
    assert!(e["cost"]["amount"].as_f64().unwrap() <= 20e6);
    assert_eq!(e["cost"]["currency"], "CNY");
}

#[test]
fn plans_of_the_70b_example_snapshot() {
    let (code, table, _) = loam(&["plan", "examples/llama3-70b-pretrain.loam"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("plan_70b_table", redact(&table));
    let (_, json, _) = loam(&[
        "plan",
        "--format",
        "json",
        "examples/llama3-70b-pretrain.loam",
    ]);
    insta::assert_snapshot!("plan_70b_json", redact(&json));
    let (_, markdown, _) = loam(&[
        "plan",
        "--format",
        "markdown",
        "examples/llama3-70b-pretrain.loam",
    ]);
    insta::assert_snapshot!("plan_70b_markdown", redact(&markdown));
    for name in ["mixtral-8x7b-moe", "pinned-layout-13b"] {
        let (code, table, _) = loam(&["plan", &format!("examples/{name}.loam")]);
        assert_eq!(code, 0);
        insta::assert_snapshot!(format!("plan_{name}_table"), redact(&table));
    }
}

#[test]
fn plans_on_estimated_device_figures_state_their_uncertainty_and_measured_ones_do_not() {
    // hetero-data-70b-shanghai runs on H100_SXM and H20, hetero-70b-guiyang on H800_SXM and
    // Ascend910B, the other two on H100_SXM alone. What each should show is read from the
    // catalogue's figures.
    let catalogue = loam_compiler::catalogue::builtin();
    let stated = |device: &str| catalogue.device(device).unwrap().efficiency.uncertainty;
    let mut shown = Vec::new();
    for example in [
        "examples/hetero-data-70b-shanghai.loam",
        "examples/hetero-70b-guiyang.loam",
        "examples/llama3-8b-finetune.loam",
        "examples/llama3-70b-pretrain.loam",
    ] {
        let (code, doc, err) = plan_json(&[example]);
        assert_eq!(code, 0, "{example}: {err}");
        let plan = &doc["plans"][0];
        let devices: Vec<&str> = plan["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["device"].as_str().unwrap())
            .collect();
        let largest = devices.iter().map(|d| stated(d)).fold(0.0, f64::max);
        let estimate = &plan["estimate"];
        assert_eq!(
            estimate["throughput_uncertainty"].as_f64(),
            Some(largest),
            "{example}: {estimate}"
        );
        let (code, table, _) = loam(&["plan", example]);
        assert_eq!(code, 0);
        let time = table
            .lines()
            .find(|l| l.trim_start().starts_with("time "))
            .unwrap_or_else(|| panic!("{example}: no time line in {table}"));
        if largest == 0.0 {
            assert!(!time.contains('±'), "{example}: {time}");
            continue;
        }
        let plus_minus = format!("±{:.0} %", largest * 100.0);
        assert!(
            time.contains(&format!("· {plus_minus} (device figures estimated: ")),
            "{example}: {time}"
        );
        // Only the estimated devices are named.
        let named = &time[time.find("estimated: ").unwrap()..];
        for device in &devices {
            assert_eq!(
                named.contains(device),
                stated(device) > 0.0,
                "{example}: {device} in {time}"
            );
        }
        shown.push(example);
    }
    assert_eq!(shown.len(), 2, "{shown:?}");
}

#[test]
fn planning_is_deterministic_and_independent_of_argument_order() {
    let all = examples();
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let (_, first, _) = loam(&[&["plan", "--format", "json"][..], &refs].concat());
    let (_, second, _) = loam(&[&["plan", "--format", "json"][..], &refs].concat());
    assert_eq!(first, second);
    let reversed: Vec<&str> = refs.iter().rev().copied().collect();
    let (_, third, _) = loam(&[&["plan", "--format", "json"][..], &reversed].concat());
    assert_eq!(first, third);
    let (_, folder, _) = loam(&["plan", "--format", "json", "examples"]);
    assert_eq!(first, folder);
}

/// The 70B example with its goal block replaced by `goal`.
fn seventy_b_with(goal: &str, extra: &str) -> String {
    let text =
        std::fs::read_to_string(repo_root().join("examples/llama3-70b-pretrain.loam")).unwrap();
    let start = text.find("  goal {").unwrap();
    let end = start + text[start..].find("  }\n").unwrap() + 4;
    let mut out = format!(
        "{}  goal {{\n{goal}\n  }}\n{}",
        &text[..start],
        &text[end..]
    );
    if !extra.is_empty() {
        out = out.replace("    context     = 1\n", extra);
    }
    out
}

fn plan_text(name: &str, text: &str) -> (u8, Value) {
    let dir = std::env::temp_dir().join(format!("loam-plan-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.loam"));
    std::fs::write(&path, text).unwrap();
    let (code, doc, err) = plan_json(&[path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(err.is_empty() || code == 1, "{err}");
    (code, doc)
}

#[test]
fn a_missed_deadline_fails_with_days_in_the_reason() {
    let (code, doc) = plan_text(
        "deadline",
        &seventy_b_with("    optimize = cost\n    deadline = 10d", ""),
    );
    assert_eq!(code, 1);
    let plan = &doc["plans"][0];
    assert_eq!(plan["feasible"], false);
    let reasons = plan["reasons"].to_string();
    assert!(reasons.contains("misses the deadline by"), "{reasons}");
    assert!(reasons.contains("days"), "{reasons}");
}

#[test]
fn a_blown_budget_fails_with_money_in_the_reason() {
    let (code, doc) = plan_text(
        "budget",
        &seventy_b_with("    optimize = time\n    budget   = 2.5M CNY", ""),
    );
    assert_eq!(code, 1);
    let reasons = doc["plans"][0]["reasons"].to_string();
    assert!(reasons.contains("over budget by"), "{reasons}");
    assert!(reasons.contains("CNY"), "{reasons}");
}

#[test]
fn a_pinned_layout_that_does_not_fit_fails_with_memory_numbers() {
    // Checks run before planning: a pinned layout no device can hold is rejected up front
    // (L2108) with the memory it needs, and no plan is printed.
    let text = seventy_b_with("    optimize = time", "")
        .replace("    tensor      = auto\n", "    tensor      = 1\n")
        .replace("    pipeline    = auto\n", "    pipeline    = 1\n")
        .replace("    zero        = auto\n", "    zero        = 0\n");
    let dir = std::env::temp_dir().join(format!("loam-plan-test-oom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("oom.loam");
    std::fs::write(&path, text).unwrap();
    let (code, out, err) = loam(&["plan", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("does not fit"), "{err}");
    assert!(err.contains("GiB per device"), "{err}");
}

#[test]
fn an_8b_model_at_a_million_tokens_plans_on_auto_with_context_parallelism() {
    // Llama 3 8B (h = 4096, a = 32 query and g = 8 KV heads of width 128, ffn 14,336, vocab
    // 128,256) at s = 2^20 = 1,048,576 tokens per sequence on H100 (79.6 GiB), bf16, flash
    // attention. With context 1 a rank holds whole sequences and the rank with the LM head holds,
    // by the memory function's rules (docs/cost-model.md, "Workload"), whatever the tensor degree
    // t ≤ 8 (one node), pipeline, ZeRO stage and recomputation:
    // - the fp32 logits, s · vocab / t · 4 B = 2^20 · 128,256 / 8 · 4 B = 62.6 GiB;
    // - the head's inputs, 2 · s · h · 2 B = 2 · 2^20 · 4096 · 2 B = 16 GiB;
    // - at least one block's activations, kept or replayed by full recomputation: per token,
    //   with sequence parallelism, the norm, QKV and MLP inputs 8h / t = 4,096 B, plus Q, K, V
    //   and the attention output 2 · (32·128 + 8·256 + 32·128) = 20,480 B and SwiGLU's
    //   2 · 3 · 14,336 = 86,016 B over t: 4,096 + 106,496 / 8 = 17,408 B (Korthikanti's
    //   34·h/t), × 2^20 tokens = 17 GiB.
    // 62.6 + 16 + 17 = 95.6 GiB > 79.6 GiB, the whole device before any weight: whole sequences
    // cannot fit, so the search has to split them over context ranks (each term shrinks by c).
    let fixture = "tests/cases/plan/long-context-8b-plans-with-context-parallelism.loam";
    let (code, doc, err) = plan_json(&[fixture]);
    assert_eq!(code, 0, "{err}");
    let plan = &doc["plans"][0];
    assert_eq!(plan["feasible"], true, "{plan}");
    let context = plan["layout"]["context"].as_u64().unwrap();
    assert!(context > 1, "{}", plan["layout"]);
    // Pinned to whole sequences, the checker's memory pre-check refuses it before planning.
    let text = std::fs::read_to_string(repo_root().join(fixture))
        .unwrap()
        .replace(
            "  train {",
            "  parallel {\n    context = 1\n  }\n\n  train {",
        );
    let (code, doc) = plan_text("context-1", &text);
    assert_eq!(code, 1);
    assert_eq!(doc["diagnostics"][0]["code"], "L2108", "{doc}");
}

#[test]
fn a_plan_above_the_best_published_run_warns_and_still_succeeds() {
    // The L3007 fixture: a feasible plan on H100_SXM predicted above the catalogue's figure.
    let fixture = "tests/cases/plan/L3007-prediction-above-the-best-published-run.loam";
    let (code, doc, err) = plan_json(&[fixture]);
    assert_eq!(code, 0, "a warning does not fail the plan: {err}");
    let plan = &doc["plans"][0];
    assert_eq!(plan["feasible"], true);
    let finding = plan["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "L3007")
        .unwrap_or_else(|| panic!("no L3007 in {plan}"));
    assert_eq!(finding["severity"], "warning");
    assert_eq!(finding["field"], "job");
    let message = finding["message"].as_str().unwrap();
    // The figure in the message is the plan's own estimate, above the catalogue's.
    let predicted = plan["estimate"]["model_tflops_per_device"]
        .as_f64()
        .unwrap();
    assert!(
        message.contains(&format!("{predicted:.1} TFLOP/s")),
        "{message}"
    );
    assert!(
        plan["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == message)
    );
    // `loam plan` shows it like the other warnings, and exits 0.
    let (code, table, err) = loam(&["plan", fixture]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("L3007"), "{err}");
    assert!(table.contains(message), "{table}");
}

#[test]
fn spec_errors_stop_planning() {
    // The job with errors is not planned; its errors come with the (empty) plan list.
    let (code, doc) = plan_text("broken", "job \"x\" {\n  tenant = 3\n}\n");
    assert_eq!(code, 1);
    assert_eq!(doc["plans"].as_array().map(Vec::len), Some(0), "{doc}");
    assert!(
        doc["diagnostics"].as_array().is_some_and(|d| !d.is_empty()),
        "{doc}"
    );
}

#[test]
fn calibration_stays_within_its_bound() {
    let (code, out, err) = loam(&[
        "calibrate",
        "tests/data/training_runs_calibration.csv",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_sorted(&report);
    // The goals the core's calibration test keeps (compiler/src/calibrate/tests.rs).
    let median = report["median_abs_error_pct"].as_f64().unwrap();
    assert!(median <= 6.0, "median |error| {median} %");
    let within = report["within_20_pct_share"].as_f64().unwrap();
    assert!(within >= 0.87, "{within} of runs within ±20 %");
    assert!(report["mean_abs_error_pct"].as_f64().is_some());
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 65);
    // Every published layout is costed, and loam's own layout is at least as fast on each.
    assert_eq!(report["costed_rows"], 65, "{report}");
    assert_eq!(report["not_costed_rows"], 0);
    assert_eq!(report["auto_at_least_as_fast_share"], 1.0);
    for row in rows {
        assert!(row["not_costed"].is_null(), "{row}");
        has(
            row,
            &[
                "run_id",
                "predicted_tokens_per_s_per_device",
                "measured_tokens_per_s_per_device",
                "error_pct",
                "auto_at_least_as_fast",
            ],
            "row",
        );
    }
    // torchtitan's Table 5 states no micro-batch: the stack's defaults are costed and named
    // (8 micro-batches, one per pipeline rank, of 256 / 8 / 8 = 4 sequences; two stages per
    // rank for Interleaved 1F1B), and a row that states its own layout names none.
    let row = |id: &str| rows.iter().find(|r| r["run_id"] == id).unwrap();
    let interleaved = row("tt2412_llama31_405b_h100_512_interleaved");
    assert_eq!(interleaved["layout"]["virtual_stages"], 2, "{interleaved}");
    assert_eq!(interleaved["layout"]["micro_batch"], 4, "{interleaved}");
    let named = interleaved["stack_defaults"].as_str().unwrap();
    assert!(named.starts_with("torchtitan 9dec370"), "{named}");
    assert_eq!(
        row("tt2412_llama31_405b_h100_512_1f1b")["layout"]["virtual_stages"],
        1
    );
    assert!(row("sc21_t1_1008.0B")["stack_defaults"].is_null());
    // Every costed run is in one regime of each dimension it has a value for: ZeRO 0 to 3 hold
    // the 65 runs between them.
    let regimes = report["regimes"].as_array().unwrap();
    let zero: u64 = regimes
        .iter()
        .filter(|r| r["dimension"] == "zero")
        .map(|r| r["runs"].as_u64().unwrap())
        .sum();
    assert_eq!(zero, 65, "{regimes:?}");
    let (code, text, _) = loam(&["calibrate", "tests/data/training_runs_calibration.csv"]);
    assert_eq!(code, 0);
    assert!(text.contains("median |error|"), "{text}");
    assert!(
        text.contains("accuracy by regime (tokens/s per device):"),
        "{text}"
    );
}

/// `loam calibrate --cross-validate`: one fold per source family, each refitted without it, and
/// the pooled error on the families left out within the goal.
#[test]
fn calibrate_cross_validates_by_source_family() {
    let (code, out, err) = loam(&[
        "calibrate",
        "--cross-validate",
        "tests/data/training_runs_calibration.csv",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let cv: Value = serde_json::from_str(&out).unwrap();
    assert_sorted(&cv);
    let folds = cv["folds"].as_array().unwrap();
    let families: std::collections::BTreeSet<&str> = folds
        .iter()
        .map(|f| f["family"].as_str().unwrap())
        .collect();
    assert_eq!(families.len(), folds.len());
    for family in ["sc21", "nemo2407", "tt2412", "mb260401"] {
        assert!(families.contains(family), "{family} missing: {cv}");
    }
    let runs: u64 = folds.iter().map(|f| f["rows"].as_u64().unwrap()).sum();
    assert_eq!(runs, 65);
    let median = cv["median_abs_error_pct"].as_f64().unwrap();
    assert!(median <= 12.0, "left-out median |error| {median} %");
    let (code, text, _) = loam(&[
        "calibrate",
        "--cross-validate",
        "tests/data/training_runs_calibration.csv",
    ]);
    assert_eq!(code, 0);
    assert!(text.contains("left-out families: median |error|"), "{text}");
    // The heterogeneous file refits the same constants through its own costing: one fold per
    // family with costed rows (DTFM's 12 Megatron-LM runs, Sailor's 9).
    let (code, out, err) = loam(&[
        "calibrate",
        "--cross-validate",
        "tests/data/hetero_runs_calibration.csv",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let cv: Value = serde_json::from_str(&out).unwrap();
    let folds: Vec<(&str, u64)> = cv["folds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["family"].as_str().unwrap(), f["rows"].as_u64().unwrap()))
        .collect();
    assert_eq!(folds, vec![("dtfm", 12), ("sailor", 9)], "{cv}");
}

/// `loam calibrate` on the heterogeneous-run file: recognised by its columns, 21 of its 38 runs
/// costed with their published stage layouts (the bound is the core test's and the goal,
/// compiler/src/calibrate/hetero/tests.rs), every other run listed with the reason it is
/// not, and the error by regime after the table.
#[test]
fn hetero_calibration_costs_the_published_stage_layouts() {
    let (code, out, err) = loam(&[
        "calibrate",
        "tests/data/hetero_runs_calibration.csv",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_sorted(&report);
    assert_eq!(report["costed_rows"], 21, "{report}");
    assert_eq!(report["not_costed_rows"], 17);
    let median = report["median_abs_error_pct"].as_f64().unwrap();
    assert!(median <= 20.0, "median |error| {median} %");
    // The error by regime follows the report: RTX 2080 runs only in Sailor's nine.
    let regimes = report["regimes"].as_array().unwrap();
    let rtx = regimes
        .iter()
        .find(|r| r["dimension"] == "device" && r["regime"] == "RTX_2080")
        .unwrap();
    assert_eq!(rtx["runs"], 7, "{rtx}");
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 38);
    for row in rows {
        has(
            row,
            &[
                "point_id",
                "role",
                "devices",
                "predicted_tokens_per_s",
                "measured_tokens_per_s",
                "error_pct",
                "not_costed",
                "assumptions",
                "stages",
            ],
            "row",
        );
        assert_ne!(
            row["error_pct"].is_null(),
            row["not_costed"].is_null(),
            "{row}"
        );
    }
    let (code, text, _) = loam(&["calibrate", "tests/data/hetero_runs_calibration.csv"]);
    assert_eq!(code, 0);
    assert!(text.contains("median |error|"), "{text}");
    assert!(text.contains("17 of 38 runs not costed"), "{text}");
    assert!(
        text.contains("not costed: the stage placement was chosen by the framework's scheduler"),
        "{text}"
    );
    // The summary lines come first, unchanged; the regime table after them.
    let summary = text.find("median |error|").unwrap();
    let regimes = text
        .find("accuracy by regime (whole-job tokens/s):")
        .unwrap();
    assert!(summary < regimes, "{text}");
}

/// A CSV with the heterogeneous file's columns but rows that cannot be costed (an unknown
/// device, blank model dims, a garbled stage layout, a short row) still calibrates: each row
/// says why it is not costed, and the command succeeds.
#[test]
fn odd_hetero_rows_are_not_costed_with_reasons() {
    let dir = std::env::temp_dir().join(format!("loam-hetero-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::read_to_string(repo_root().join("tests/data/hetero_runs_calibration.csv"))
        .unwrap();
    let header = file.lines().next().unwrap();
    let good = file
        .lines()
        .find(|l| l.starts_with("sailor_mit_N2_D1,"))
        .unwrap();
    let odd = |id: &str, from: &str, to: &str| {
        assert!(good.contains(from), "{from}");
        good.replacen("sailor_mit_N2_D1", id, 1)
            .replacen(from, to, 1)
    };
    let rows = [
        odd("unknown_device", "S0[RTX-3090x2]", "S0[RTX-4090x2]"),
        odd("blank_dims", ",24,1024,16,4096,", ",24,,16,4096,"),
        odd(
            "garbled_layout",
            "S0[RTX-3090x2]:modules 0-11 | S1[Titan-RTXx2]:modules 12-25",
            "S0[RTX-3090x2]:modules 0-11 S1[Titan-RTXx2]",
        ),
        "short_row,hetero".to_string(),
    ];
    let path = dir.join("odd.csv");
    std::fs::write(&path, format!("{header}\n{good}\n{}\n", rows.join("\n"))).unwrap();
    let (code, out, err) = loam(&["calibrate", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["costed_rows"], 1, "{report}");
    let reason = |i: usize| {
        report["rows"][i]["not_costed"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(
        reason(1).contains("device `RTX-4090` is not in the catalogue"),
        "{}",
        reason(1)
    );
    assert!(
        reason(2).contains("model dims blank or unreadable: hidden"),
        "{}",
        reason(2)
    );
    assert!(reason(3).contains("stage_layout garbled"), "{}", reason(3));
    assert!(reason(4).contains("model dims blank"), "{}", reason(4));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_calibration_csv_names_the_line_and_column() {
    let dir = std::env::temp_dir().join(format!("loam-calibrate-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good =
        std::fs::read_to_string(repo_root().join("tests/data/training_runs_calibration.csv"))
            .unwrap();
    let mut lines: Vec<String> = good.lines().take(3).map(str::to_string).collect();
    lines[2] = lines[2]
        .replacen(',', ",notanumber,", 1)
        .replacen(",notanumber,", ",", 0);
    let header: Vec<&str> = lines[0].split(',').collect();
    let layers_col = header.iter().position(|h| *h == "layers").unwrap();
    let mut cells: Vec<String> = good
        .lines()
        .nth(2)
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    cells[layers_col] = "many".into();
    lines[2] = cells.join(",");
    let path = dir.join("bad.csv");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let (code, _, err) = loam(&["calibrate", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("`layers`"), "{err}");
    let (code, _, err) = loam(&["calibrate", "no/such/file.csv"]);
    assert_eq!(code, 2, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn alternatives_never_repeat_the_chosen_plan_or_each_other() {
    // The newcomer review: deepseek-v3-pretrain listed its own layout as "0 s slower (+0.0 %)"
    // and then one `mb2 … recompute full` line twice; llama2-70b-lora three "costs 0 USD more
    // (+0.0 %)". A line a reader cannot tell from the chosen plan or from another line is no
    // alternative; a true tie says it is one.
    let (code, doc, err) = plan_json(&[
        "examples/deepseek-v3-pretrain.loam",
        "examples/llama2-70b-lora-gaudi2.loam",
    ]);
    assert_eq!(code, 0, "{err}");
    for plan in doc["plans"].as_array().unwrap() {
        let alternatives = plan["alternatives"].as_array().unwrap();
        let mut lines: Vec<String> = alternatives
            .iter()
            .map(|a| format!("{} {}", a["shape"], a["summary"]))
            .collect();
        let listed = lines.len();
        lines.sort();
        lines.dedup();
        assert_eq!(lines.len(), listed, "{}: {lines:#?}", plan["job"]);
        for a in alternatives {
            let why = a["why_not"].as_str().unwrap();
            assert!(!why.contains("(+0.0 %)"), "{}: {why}", plan["job"]);
        }
    }
}

/// An aggregated service states one replica at its capacity within the targets (Plan JSON
/// 1.14, what `loam runs check` compares a heavier benchmark with): by Little's law the replica
/// generates `capacity_per_replica` requests/s × `output_mean` tokens over its devices, and its
/// medians are no faster than at the busiest hour, where each replica is offered less. A
/// disaggregated service states its whole deployment at the heaviest rate it carries (1.15).
#[test]
fn a_service_states_its_capacity_point() {
    for example in [
        "examples/rag-llama31-8b-service.loam",
        "examples/qwen3-235b-moe-service.loam",
    ] {
        let (code, doc, err) = plan_json(&[example]);
        assert_eq!(code, 0, "{err}");
        let service = &doc["services"][0];
        assert_eq!(service["mode"], "aggregated", "{example}");
        let estimate = &service["estimate"];
        let at = &estimate["at_capacity"];
        let role = &service["roles"][0];
        let by_hand = estimate["capacity_per_replica"].as_f64().unwrap()
            * service["traffic"]["output_mean"].as_f64().unwrap()
            / role["devices_per_replica"].as_f64().unwrap();
        let stated = at["output_tokens_per_s_per_device"].as_f64().unwrap();
        assert!(
            (stated / by_hand - 1.0).abs() < 1e-3,
            "{example}: {stated} against {by_hand}"
        );
        assert!(stated >= estimate["output_tokens_per_s_per_device"].as_f64().unwrap());
        for median in ["ttft_p50_s", "tpot_p50_s"] {
            assert!(
                at[median].as_f64().unwrap() >= estimate[median].as_f64().unwrap(),
                "{example} {median}: {at} against {estimate}"
            );
        }
    }
    // The chat example: 12 devices (prefill and decode replicas) at 20 requests/s of 300 output
    // tokens at the busiest hour, 500 tokens/s per device. At capacity the deployment carries
    // at least that rate, so at least 500 tokens/s per device, and no faster medians.
    let (_, doc, _) = plan_json(&["examples/llama31-70b-chat-service.loam"]);
    let service = &doc["services"][0];
    assert_eq!(service["mode"], "disaggregated");
    let estimate = &service["estimate"];
    let at = &estimate["at_capacity"];
    let devices: f64 = service["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["replicas"].as_f64().unwrap() * r["devices_per_replica"].as_f64().unwrap())
        .sum();
    assert_eq!(devices, estimate["devices"].as_f64().unwrap());
    let rate = at["output_tokens_per_s_per_device"].as_f64().unwrap() * devices
        / service["traffic"]["output_mean"].as_f64().unwrap();
    let peak = service["traffic"]["peak_rate"].as_f64().unwrap();
    assert!(
        rate >= peak * (1.0 - 1e-4),
        "{at}: {rate} requests/s against {peak}"
    );
    for median in ["ttft_p50_s", "tpot_p50_s"] {
        assert!(
            at[median].as_f64().unwrap() >= estimate[median].as_f64().unwrap(),
            "{median}: {at} against {estimate}"
        );
    }
}
