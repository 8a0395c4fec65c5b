//! Error by regime on small hand-written files, each statistic worked out by hand.

use super::*;
use crate::calibrate::{CalibrationRow, HeteroCalibrationRow};
use loam_ir::types::Precision;

/// A training report row with only what the regime table reads: its id and error.
fn training_row(run_id: &str, error_pct: Option<f64>) -> CalibrationRow {
    CalibrationRow {
        run_id: run_id.into(),
        predicted_tokens_per_s_per_device: 0.0,
        measured_tokens_per_s_per_device: 1.0,
        precision: Precision::Bf16,
        measured_model_tflops_per_device: None,
        error_pct,
        not_costed: error_pct.is_none().then(|| "not costed".into()),
        device: String::new(),
        devices: 1,
        layout: None,
        mfu: 0.0,
        auto_tokens_per_s_per_device: 0.0,
        auto_layout: None,
        auto_at_least_as_fast: true,
        stack_defaults: None,
        moe_stack: None,
    }
}

fn training_report(rows: Vec<CalibrationRow>) -> CalibrationReport {
    CalibrationReport {
        costed_rows: rows.iter().filter(|r| r.error_pct.is_some()).count(),
        not_costed_rows: 0,
        median_abs_error_pct: 0.0,
        mean_abs_error_pct: 0.0,
        within_20_pct_share: 0.0,
        rows,
    }
}

const TRAINING: &str = "\
run_id,seq_len,zero,experts,precision,device,devices,source
a_1,2048,0,,bf16,H100_SXM,8,NVIDIA/NeMo docs (NeMo 24.07)
a_2,4096,1,,fp8,H100_SXM,64,NVIDIA/NeMo docs (NeMo 24.07)
b_1,4096,3,128,bf16,B200,256,pytorch/torchtitan benchmarks
b_2,131072,3,,bf16,H100_SXM,8,pytorch/torchtitan benchmarks
c_1,2048,1,,bf16,A100_SXM_80GB,1024,a paper
";

fn stats<'a>(table: &'a [RegimeStats], dimension: Dimension, regime: &str) -> &'a RegimeStats {
    table
        .iter()
        .find(|s| s.dimension == dimension && s.regime == regime)
        .unwrap_or_else(|| panic!("no {} {regime} in {table:#?}", dimension.as_str()))
}

#[test]
fn each_regime_gets_the_median_the_share_within_20_and_the_signed_mean_of_its_runs() {
    // Errors +10, −30, +5, +40 and a run not costed (c_1, left out of every regime).
    let report = training_report(vec![
        training_row("a_1", Some(10.0)),
        training_row("a_2", Some(-30.0)),
        training_row("b_1", Some(5.0)),
        training_row("b_2", Some(40.0)),
        training_row("c_1", None),
    ]);
    let table = training_regimes(TRAINING, &report).unwrap();
    // H100_SXM holds a_1, a_2, b_2: |errors| 10, 30, 40, median 30; within ±20 %: one of
    // three; signed mean (10 − 30 + 40) / 3 = +6.67.
    let h100 = stats(&table, Dimension::Device, "H100_SXM");
    assert_eq!(h100.runs, 3);
    assert_eq!(h100.median_abs_error_pct, 30.0);
    assert!((h100.within_20_pct_share - 1.0 / 3.0).abs() < 1e-12);
    assert!((h100.mean_signed_error_pct - 20.0 / 3.0).abs() < 1e-12);
    // Sequence bands: a_1 at 2,048 is ≤ 2K; a_2 and b_1 at 4,096 are 2K–8K (|−30|, |5|: median
    // 17.5, one of two within, mean −12.5); b_2 at 131,072 is > 32K.
    let mid = stats(&table, Dimension::Sequence, "2K–8K");
    assert_eq!(mid.runs, 2);
    assert_eq!(mid.median_abs_error_pct, 17.5);
    assert_eq!(mid.within_20_pct_share, 0.5);
    assert_eq!(mid.mean_signed_error_pct, -12.5);
    assert_eq!(stats(&table, Dimension::Sequence, "> 32K").runs, 1);
    // ZeRO 0 is a stage of its own, not a blank cell.
    assert_eq!(stats(&table, Dimension::Zero, "ZeRO-0").runs, 1);
    assert_eq!(stats(&table, Dimension::Zero, "ZeRO-3").runs, 2);
    // 128 experts make b_1 the one MoE run.
    assert_eq!(stats(&table, Dimension::Moe, "MoE").runs, 1);
    assert_eq!(stats(&table, Dimension::Moe, "dense").runs, 3);
    // Scale: 8 devices is one node (a_1, b_2: |10|, |40| → median 25, mean +25).
    let node = stats(&table, Dimension::Scale, "1–8");
    assert_eq!((node.runs, node.median_abs_error_pct), (2, 25.0));
    assert_eq!(node.mean_signed_error_pct, 25.0);
    // Stacks from the source text; families from the id.
    assert_eq!(stats(&table, Dimension::Stack, "NeMo").runs, 2);
    assert_eq!(stats(&table, Dimension::Stack, "torchtitan").runs, 2);
    assert_eq!(stats(&table, Dimension::Family, "b").runs, 2);
    // The run not costed is in no regime: no A100 row, no `unstated` stack, no family `c`.
    assert!(
        !table
            .iter()
            .any(|s| s.regime == "A100_SXM_80GB" || s.regime == "c")
    );
    // Dimensions in the table's order, bands by their bounds (≤ 2K before 2K–8K before > 32K).
    let order: Vec<(Dimension, &str)> = table
        .iter()
        .filter(|s| s.dimension == Dimension::Sequence)
        .map(|s| (s.dimension, s.regime.as_str()))
        .collect();
    assert_eq!(
        order,
        vec![
            (Dimension::Sequence, "≤ 2K"),
            (Dimension::Sequence, "2K–8K"),
            (Dimension::Sequence, "> 32K")
        ]
    );
    assert!(table.windows(2).all(|w| w[0].dimension <= w[1].dimension));
}

#[test]
fn the_table_prints_one_line_per_regime() {
    let report = training_report(vec![training_row("a_1", Some(-12.34))]);
    let text = render_regimes(
        "tokens/s per device",
        &training_regimes(TRAINING, &report).unwrap(),
    );
    assert!(text.starts_with("accuracy by regime (tokens/s per device):\n"));
    // One run: median 12.3 %, within ±20 %: 100 %, signed −12.3 %.
    let line = text.lines().find(|l| l.contains("H100_SXM")).unwrap();
    assert!(
        line.contains("12.3%") && line.contains("100%") && line.contains("-12.3%"),
        "{line}"
    );
    // header + heading + eight dimensions of one run each.
    assert_eq!(text.lines().count(), 2 + 8, "{text}");
}

#[test]
fn a_heterogeneous_run_counts_under_each_of_its_device_types() {
    let csv = "\
point_id,gpu_mix,stage_layout,seq_len,precision,num_gpus,framework
s_1,2xRTX-3090 + 2xTitan-RTX,x,2048,fp32 likely (…),4,Sailor (Megatron-DeepSpeed fork)
s_2,8xRTX-3090,x,2048,fp16,8,Sailor (Megatron-DeepSpeed fork)
d_1,64xV100-16GB: 8x p3.8xlarge (4 GPU) + 32x p3.2xlarge (1 GPU),x,2048,fp16,64,Megatron-LM PP8
";
    let row = |id: &str, error: f64| HeteroCalibrationRow {
        point_id: id.into(),
        role: String::new(),
        devices: String::new(),
        layout: String::new(),
        recompute: None,
        predicted_tokens_per_s: 0.0,
        measured_tokens_per_s: None,
        predicted_iter_time_s: 0.0,
        measured_iter_time_s: None,
        error_pct: Some(error),
        not_costed: None,
        assumptions: Vec::new(),
        stages: Vec::new(),
    };
    let report = HeteroCalibrationReport {
        rows: vec![row("s_1", -10.0), row("s_2", 30.0), row("d_1", 4.0)],
        costed_rows: 3,
        not_costed_rows: 0,
        median_abs_error_pct: 0.0,
        mean_abs_error_pct: 0.0,
        within_20_pct_share: 0.0,
    };
    let table = hetero_regimes(csv, &report).unwrap();
    // RTX 3090 is in s_1 and s_2 (−10, +30: median 20, one of two within ±20 %, mean +10);
    // TITAN RTX in s_1 only; V100 in d_1.
    let rtx = stats(&table, Dimension::Device, "RTX_3090");
    assert_eq!((rtx.runs, rtx.median_abs_error_pct), (2, 20.0));
    assert_eq!(rtx.within_20_pct_share, 0.5);
    assert_eq!(rtx.mean_signed_error_pct, 10.0);
    assert_eq!(stats(&table, Dimension::Device, "TITAN_RTX").runs, 1);
    assert_eq!(stats(&table, Dimension::Device, "V100_SXM2_16GB").runs, 1);
    // `fp32 likely` reads as fp32; the fork Sailor runs names the stack.
    assert_eq!(stats(&table, Dimension::Precision, "fp32").runs, 1);
    assert_eq!(
        stats(&table, Dimension::Stack, "Megatron-DeepSpeed").runs,
        2
    );
    assert_eq!(stats(&table, Dimension::Stack, "Megatron-LM").runs, 1);
    assert_eq!(stats(&table, Dimension::Scale, "9–64").runs, 1);
}

#[test]
fn bands_have_their_edges_where_named() {
    assert_eq!(sequence_band(2048).label, "≤ 2K");
    assert_eq!(sequence_band(2049).label, "2K–8K");
    assert_eq!(sequence_band(8192).label, "2K–8K");
    assert_eq!(sequence_band(32_768).label, "8K–32K");
    assert_eq!(sequence_band(32_769).label, "> 32K");
    assert_eq!(scale_band(8).label, "1–8");
    assert_eq!(scale_band(9).label, "9–64");
    assert_eq!(scale_band(512).label, "65–512");
    assert_eq!(scale_band(513).label, "> 512");
}

#[test]
fn a_serving_run_is_tagged_by_prompt_length_engine_and_group() {
    let csv = "\
run_id,group,precision,device_count,input_len
r1,trtllm_perf,fp8,8,128
r2,trtllm_perf,fp8,1,4096
r3,,fp16,16,20000
";
    let rows = read_rows(csv).unwrap();
    let tags = |i: usize, engine: Option<&str>| {
        tags::serving_tags(&rows[i], Some("H100_SXM"), engine.map(str::to_string))
    };
    // Throughput errors −10 and +30 on the TensorRT-LLM rows, −5 on the third (no engine costed,
    // no group): the engine's regime has median 20, one of two within ±20 %, mean +10.
    let runs = vec![
        (-10.0, tags(0, Some("trtllm"))),
        (30.0, tags(1, Some("trtllm"))),
        (-5.0, tags(2, None)),
    ];
    let table = by_regime(&runs);
    let trtllm = stats(&table, Dimension::Stack, "trtllm");
    assert_eq!((trtllm.runs, trtllm.median_abs_error_pct), (2, 20.0));
    assert_eq!(trtllm.within_20_pct_share, 0.5);
    assert_eq!(trtllm.mean_signed_error_pct, 10.0);
    assert_eq!(stats(&table, Dimension::Stack, "unstated").runs, 1);
    assert_eq!(stats(&table, Dimension::Family, "unstated").runs, 1);
    // Prompts of 128, 4,096 and 20,000 tokens fall in three bands; 1, 8 and 16 devices in two.
    assert_eq!(stats(&table, Dimension::Sequence, "≤ 2K").runs, 1);
    assert_eq!(stats(&table, Dimension::Sequence, "2K–8K").runs, 1);
    assert_eq!(stats(&table, Dimension::Sequence, "8K–32K").runs, 1);
    assert_eq!(stats(&table, Dimension::Scale, "1–8").runs, 2);
    assert_eq!(stats(&table, Dimension::Scale, "9–64").runs, 1);
    // Every run is on the device costed.
    assert_eq!(stats(&table, Dimension::Device, "H100_SXM").runs, 3);
}
