//! Calibration against the shared published-run file, and CSV error handling.

use super::*;
use crate::hardware::DeviceFigures;
use std::collections::BTreeMap;

const CSV: &str = include_str!("../../../tests/data/training_runs_calibration.csv");

/// The project's accuracy goals on the 65-row calibration file (measured: median 5.6 %,
/// 89 % of runs within ±20 %, mean signed +2.9 %); a change that breaks one fails.
const MEDIAN_BOUND_PCT: f64 = 6.0;

/// Share of runs predicted within ±20 % of what they measured: 57 of 65 (0.877), so one more
/// run out of the band fails. It was 0.90 (59 of 65) before tensor-parallel overlap: two runs
/// that state async tensor parallelism left the band once it was modelled (torchtitan's 8B at
/// tensor degree 8, whose blocking twin loam already over-predicts by 19 %, and its 405B at
/// 128K context, where context parallelism over-predicts the 8B by 41 %), while the left-out
/// median went from 6.7 to 5.7 % (docs/cost-model.md, "Tensor-parallel overlap").
const WITHIN_20_BOUND: f64 = 0.87;

/// The mean signed error on the same file: a change that biases the model to one side fails.
const MEAN_SIGNED_BOUND_PCT: f64 = 3.0;

/// Median `|error|` on each left-out source family's runs with the constants refitted on the
/// others, pooled over the families: the goal, 8 %. Measured 6.5 % since the refit counts
/// medians within a printed digit as ties (`cross::MEDIAN_TIE_PCT`); 8.0 % (8.02) before, when a
/// fold took the lowest median exactly and jumped to far grid points on noise
/// (docs/cost-model.md, "Cross-validation by source family").
const CROSS_VALIDATED_BOUND_PCT: f64 = 8.0;

/// Datasheet figures from `devices.csv` (NVIDIA A100 and H100 datasheets) until the catalogue
/// lookup is available to tests.
pub(crate) fn test_device(id: &str) -> Option<DeviceFigures> {
    let (bf16, fp8, tf32, fp32, mem_gb, bw_tb_s, up_bidir_gb_s, tdp) = match id {
        "A100_SXM_80GB" => (312.0, None, 156.0, 19.5, 80.0, 2.039, 600.0, 400.0),
        "H100_SXM" => (989.4, Some(1978.9), 494.7, 66.9, 80.0, 3.35, 900.0, 700.0),
        _ => return None,
    };
    let mut peak = BTreeMap::new();
    peak.insert(Precision::Bf16, bf16 * 1e12);
    peak.insert(Precision::Fp16, bf16 * 1e12);
    peak.insert(Precision::Tf32, tf32 * 1e12);
    peak.insert(Precision::Fp32, fp32 * 1e12);
    if let Some(fp8) = fp8 {
        peak.insert(Precision::Fp8, fp8 * 1e12);
    }
    Some(DeviceFigures {
        id: id.to_string(),
        peak_flops: peak,
        memory_bytes: mem_gb * 1e9,
        memory_bandwidth: bw_tb_s * 1e12,
        scale_up_bandwidth: up_bidir_gb_s * 1e9 / 2.0,
        devices_per_node: 8,
        scale_up_domain: catalogue_device(id).map_or(8, |d| d.scale_up_domain.max(8)),
        tdp_watts: tdp,
        // The shipped catalogue's measured shares: a test H100 runs GEMMs like the real one.
        efficiency: catalogue_device(id)
            .map_or_else(crate::hardware::Efficiency::unmeasured, |d| d.efficiency),
    })
}

/// The shipped catalogue's figures for a device id, as `loam calibrate` looks them up.
fn catalogue_device(id: &str) -> Option<DeviceFigures> {
    thread_local! {
        static CATALOGUE: crate::catalogue::Catalogue = crate::catalogue::builtin();
    }
    CATALOGUE.with(|c| c.device(id).map(|d| d.figures()))
}

/// The report on the shared file, worked out once for every test of this module (planning 65 runs
/// twice takes a while in debug builds).
fn report() -> CalibrationReport {
    static REPORT: std::sync::OnceLock<CalibrationReport> = std::sync::OnceLock::new();
    REPORT
        .get_or_init(|| calibrate(CSV, catalogue_device).unwrap())
        .clone()
}

#[test]
fn prints_the_calibration_table() {
    let r = report();
    println!("{}", render_table(&r));
    println!("mean signed {:.1}%", r.mean_signed_error_pct());
}

#[test]
fn a_layout_that_ran_without_recomputation_fits() {
    // Megatron-Bridge's recipe runs Llama 3.1 405B on 256 GB200 (TP4 PP16 v4, micro-batch 1,
    // fp8) with no recomputation (`perf_recipes/llama/gb200/llama31.py` at 067f987df: its base
    // config sets `recompute_granularity = None`); it ran, so the memory model must not make
    // the search replay blocks to fit it (it did, one per chunk, before fp8 GEMM inputs were
    // kept in 1 byte and GB200's memory was read as the device reports it).
    let r = report();
    let run = "mb260401_llama31_405b_gb200_256";
    let row = r.rows.iter().find(|row| row.run_id == run).unwrap();
    let layout = row.layout.unwrap();
    assert_eq!(layout.recompute, Recompute::None, "{run}: {layout:?}");
}

#[test]
fn median_error_stays_within_bound() {
    let r = report();
    assert!(
        r.median_abs_error_pct <= MEDIAN_BOUND_PCT,
        "median |error| {:.2}% > {MEDIAN_BOUND_PCT}%\n{}",
        r.median_abs_error_pct,
        render_table(&r)
    );
}

#[test]
fn most_runs_are_within_twenty_percent() {
    let r = report();
    assert!(
        r.within_20_pct_share >= WITHIN_20_BOUND,
        "{:.2} of runs within ±20 %\n{}",
        r.within_20_pct_share,
        render_table(&r)
    );
}

#[test]
fn refitting_without_a_family_predicts_that_family() {
    let cv = cross_validate(CSV, catalogue_device).unwrap();
    println!("{}", render_cross_validation(&cv));
    assert!(
        cv.median_abs_error_pct <= CROSS_VALIDATED_BOUND_PCT,
        "{}",
        render_cross_validation(&cv)
    );
    // One fold per source family; every costed run is in exactly one.
    let all = report();
    let families: std::collections::BTreeSet<&str> = all
        .rows
        .iter()
        .map(|r| r.run_id.split('_').next().unwrap_or(""))
        .collect();
    assert_eq!(cv.folds.len(), families.len());
    assert_eq!(cv.folds.iter().map(|f| f.rows).sum::<usize>(), 65);
    // The shipped constants are the fit on every run: the grid's best is what loam ships.
    assert_eq!(cv.fitted_on_all, FittedConstants::SHIPPED);
}

#[test]
fn errors_are_not_biased_to_one_side() {
    let r = report();
    assert!(
        r.mean_signed_error_pct().abs() < MEAN_SIGNED_BOUND_PCT,
        "{}",
        r.mean_signed_error_pct()
    );
    let over = r.over_prediction_share();
    assert!(
        (0.2..=0.8).contains(&over),
        "share predicted faster: {over}"
    );
}

#[test]
fn every_published_layout_is_costed_and_auto_is_at_least_as_fast() {
    let r = report();
    for row in &r.rows {
        assert_eq!(row.not_costed, None, "{}", row.run_id);
        assert!(row.layout.is_some(), "{} infeasible", row.run_id);
        assert!(row.auto_at_least_as_fast, "{}", row.run_id);
    }
    assert_eq!(r.costed_rows, 65);
}

#[test]
fn report_serializes_to_the_contract_shape() {
    let r = report();
    let json = serde_json::to_value(&r).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "rows",
            "costed_rows",
            "not_costed_rows",
            "median_abs_error_pct",
            "mean_abs_error_pct",
            "within_20_pct_share"
        ]
    );
    let row = &json["rows"][0];
    for key in [
        "run_id",
        "predicted_tokens_per_s_per_device",
        "measured_tokens_per_s_per_device",
        "error_pct",
        "not_costed",
    ] {
        assert!(row.get(key).is_some(), "{key}");
    }
}

#[test]
fn bad_rows_name_line_and_column() {
    let header = CSV.lines().next().unwrap();
    let good = CSV.lines().nth(1).unwrap();
    let broken = good.replacen(",24,", ",twenty-four,", 1);
    let text = format!("{header}\n{good}\n{broken}\n");
    match calibrate(&text, test_device) {
        Err(CalibrationError::BadRow { line, column, .. }) => {
            assert_eq!(line, 3);
            assert_eq!(column, "layers");
        }
        other => panic!("{other:?}"),
    }
    // Counts beyond the spec checker's bounds are bad rows too: four billion layers once made
    // the harness allocate 24 GB, and a pipeline degree of 2^24 + 1 is past any spec's.
    let deep = good.replacen(",24,", ",4000000000,", 1);
    match calibrate(&format!("{header}\n{deep}\n"), test_device) {
        Err(CalibrationError::BadRow { line, column, .. }) => {
            assert_eq!((line, column.as_str()), (2, "layers"));
        }
        other => panic!("{other:?}"),
    }
    let columns: Vec<&str> = header.split(',').collect();
    let pp = columns.iter().position(|c| *c == "pp").unwrap();
    let mut cells: Vec<String> = good.split(',').map(str::to_string).collect();
    cells[pp] = (1u64 << 24).saturating_add(1).to_string();
    match calibrate(&format!("{header}\n{}\n", cells.join(",")), test_device) {
        Err(CalibrationError::BadRow { column, .. }) => assert_eq!(column, "pp"),
        other => panic!("{other:?}"),
    }
    // A device the lookup does not know is listed with the reason, not dropped.
    let unknown = good.replace("A100_SXM_80GB", "B300");
    let listed = calibrate(&format!("{header}\n{good}\n{unknown}\n"), test_device).unwrap();
    assert_eq!((listed.costed_rows, listed.not_costed_rows), (1, 1));
    let reason = listed.rows[1].not_costed.as_deref().unwrap();
    assert!(reason.contains("B300"), "{reason}");
    assert!(render_table(&listed).contains("not costed: device `B300`"));
    assert_eq!(
        calibrate(&format!("{header}\n"), test_device),
        Err(CalibrationError::Empty)
    );
}

#[test]
fn measured_model_flops_agree_with_the_costed_mfu() {
    // Two routes to the same figure: the measured tokens/s × the model's FLOPs per token, and
    // the costed layout's MFU × the peak, scaled from predicted to measured tokens/s.
    let catalogue = crate::catalogue::builtin();
    for row in report().rows {
        let measured = row.measured_model_tflops_per_device.unwrap();
        let peak = catalogue
            .device(&row.device)
            .and_then(|d| d.peak(row.precision))
            .unwrap();
        let scaled = row.mfu * peak / 1e12 * row.measured_tokens_per_s_per_device
            / row.predicted_tokens_per_s_per_device;
        assert!(
            (measured - scaled).abs() <= 1e-6 * measured,
            "{}: {measured} vs {scaled}",
            row.run_id
        );
    }
}

#[test]
fn the_catalogues_best_published_figures_are_the_files_best_runs() {
    // The `source` column by run id.
    let mut reader = csv::Reader::from_reader(CSV.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (run_column, source_column) = (column("run_id"), column("source"));
    let sources: BTreeMap<String, String> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[run_column].to_string(), r[source_column].to_string())
        })
        .collect();
    // The fastest run of the file per device and precision, in model TFLOP/s per device.
    let mut best: BTreeMap<(String, Precision), (f64, String)> = BTreeMap::new();
    for row in report().rows {
        let measured = row.measured_model_tflops_per_device.unwrap();
        let entry = best
            .entry((row.device.clone(), row.precision))
            .or_insert((measured, row.run_id.clone()));
        if measured > entry.0 {
            *entry = (measured, row.run_id.clone());
        }
    }
    // The shipped catalogue has exactly those, written to 0.1 TFLOP/s, with the run's source;
    // a device without a published run has no figure.
    let catalogue = crate::catalogue::builtin();
    let mut shipped = BTreeMap::new();
    for (id, device) in &catalogue.devices {
        for (precision, figure) in &device.best_published {
            shipped.insert((id.clone(), *precision), figure.clone());
        }
    }
    assert_eq!(
        shipped.keys().collect::<Vec<_>>(),
        best.keys().collect::<Vec<_>>()
    );
    for (key, (tflops, run)) in &best {
        let figure = &shipped[key];
        assert!(
            (figure.model_flops.value / 1e12 - tflops).abs() <= 0.05 + 1e-9,
            "{key:?}: catalogue {} vs {tflops} from {run}",
            figure.model_flops.value / 1e12
        );
        assert_eq!(&figure.run, run, "{key:?}");
        assert_eq!(figure.source, sources[run], "{key:?}");
    }
}

/// The dispatch and routing a row's source documents are the ones its run is costed with, and
/// only there: the DeepSeek-V3 report's node-limited routing and per-node dispatch (at most 4
/// of its EP64's 8 nodes, 3.5 remote copies a token where an all-to-all sends 7), NeMo
/// AutoModel's DeepEP with the fake gate its table states; Megatron-Bridge's DeepSeek-V3 table
/// names no dispatcher, and a dense row has none.
#[test]
fn the_dispatch_a_source_documents_is_the_one_costed() {
    let r = report();
    let row = |id: &str| r.rows.iter().find(|x| x.run_id == id).unwrap();
    let report_run = row("dsv3_report_h800_2048");
    let text = report_run.moe_stack.as_deref().unwrap();
    assert!(text.contains("at most 4 of 8 nodes"), "{text}");
    // Costed with the all-to-all it was −27 %: its cross-node dispatch, half as many bytes, is
    // what the published step did not spend.
    let error = report_run.error_pct.unwrap();
    assert!(error.abs() < 20.0, "{error}");
    let automodel = row("automodel_deepseek_v3_h100_256");
    let text = automodel.moe_stack.as_deref().unwrap();
    assert!(
        text.contains("DeepEP") && text.contains("8 consecutive experts"),
        "{text}"
    );
    assert!(row("mb2509_deepseek_v3_h100_1024").moe_stack.is_none());
    assert!(row("sc21_t1_1.7B").moe_stack.is_none());
    assert!(
        render_table(&r).contains(
            "expert dispatch and routing as each run's source or own columns state them:"
        )
    );
}
