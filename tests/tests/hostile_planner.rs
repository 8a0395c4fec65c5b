//! The planner's work is bounded: a valid spec with many layers plans to the end (finding M2 of
//! the reliability review of 2026-12-03, its reproducer `reliability-repro/04-planner-layers-slow.sh`),
//! run with the real `loam` process on the shipped catalogue. How fast is measured by the
//! `hetero` benchmark (docs/performance.md), never asserted here; the search's cap (L3010) is
//! tested beside the search with a small cap (`plan::pair::pipeline::tests`).

use crate::loam_process::loam_in as loam;
use std::fs;

/// The reproducer's spec: a dense model of `layers` blocks on the shipped `xirang` pool.
fn layers_job(layers: u32) -> String {
    format!(
        r#"job "h" {{
  tenant = "nlp"
  model {{
    layers   = {layers}
    hidden   = 1024
    ffn      = 4096
    heads    = 16
    vocab    = 128256
    seq_len  = 2048
  }}
  train {{
    tokens       = 2T
    global_batch = 4096
    precision    = bf16
  }}
  resources {{
    pool = xirang
  }}
}}
"#
    )
}

#[test]
fn a_thousand_layer_job_plans_to_the_end_with_every_stage_placed() {
    // Before the fix this took 35 s of CPU (1,280 layers: over 69 s); now about 3 s in release.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("l1000.loam"), layers_job(1000)).unwrap();
    let (code, out, err) = loam(dir.path(), &["plan", "--format", "json", "l1000.loam"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let plan = &doc["plans"][0];
    assert_eq!(plan["feasible"], true, "{out}");
    // The search finished under its cap: no L3010 on the plan.
    let codes: Vec<&str> = plan["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(!codes.contains(&"L3010"), "{codes:?}");
    // Every one of the 1,000 blocks is in exactly one stage.
    let mut next = 0;
    for stage in plan["stages"].as_array().unwrap() {
        assert_eq!(stage["layers"][0], next, "{stage}");
        next = stage["layers"][1].as_u64().unwrap();
    }
    assert_eq!(next, 1000);
}
