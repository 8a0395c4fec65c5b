//! The heterogeneous calibration on the shared file, and rows it cannot cost.

use super::*;
use crate::calibrate::{CsvKind, csv_kind};

const CSV: &str = include_str!("../../../../tests/data/hetero_runs_calibration.csv");

/// The shipped catalogue's figures for a device id, as `loam calibrate` looks them up.
fn catalogue_device(id: &str) -> Option<DeviceFigures> {
    thread_local! {
        static CATALOGUE: crate::catalogue::Catalogue = crate::catalogue::builtin();
    }
    CATALOGUE.with(|c| c.device(id).map(|d| d.figures()))
}

fn report() -> HeteroCalibrationReport {
    calibrate_hetero(CSV, catalogue_device).unwrap()
}

#[test]
fn prints_the_hetero_calibration_table() {
    let r = report();
    println!("{}", render_hetero_table(&r));
    for row in &r.rows {
        println!(
            "{} {:?} pred {:.2}s meas {:?}s {} {:?}",
            row.point_id,
            row.recompute,
            row.predicted_iter_time_s,
            row.measured_iter_time_s,
            row.layout,
            row.assumptions
        );
        for s in &row.stages {
            println!("    {s:?}");
        }
    }
}

#[test]
fn the_file_is_recognised_by_its_columns() {
    assert_eq!(csv_kind(CSV), CsvKind::Hetero);
    let training = include_str!("../../../../tests/data/training_runs_calibration.csv");
    assert_eq!(csv_kind(training), CsvKind::Training);
    assert_eq!(csv_kind(""), CsvKind::Training);
}

/// Rows of the shared file costed with their published layout: the nine Sailor runs and the
/// twelve DTFM Megatron-LM runs. The two Hetu v2 runs (no model dims, layout in an image), the
/// six hybrid-cloud runs (no model dims) and the nine DTFM-scheduler runs (placement not
/// published) are listed with their reasons.
const COSTED_ROWS: usize = 21;

/// The median |error| measured on the shared file (39.6 % when this bound was set, every costed
/// row over-predicted: see docs/cost-model.md, "Heterogeneous calibration"), rounded up with
/// some headroom for the per-device GEMM efficiencies being added to the catalogue.
const MEDIAN_BOUND_PCT: f64 = 45.0;

#[test]
fn the_shared_file_costs_its_published_layouts_within_the_bound() {
    let r = report();
    assert_eq!(r.rows.len(), 38);
    assert_eq!(r.costed_rows, COSTED_ROWS, "{}", render_hetero_table(&r));
    assert!(
        r.median_abs_error_pct <= MEDIAN_BOUND_PCT,
        "median |error| {:.1}% > {MEDIAN_BOUND_PCT}%\n{}",
        r.median_abs_error_pct,
        render_hetero_table(&r)
    );
    for row in &r.rows {
        let reason = row.not_costed.as_deref().unwrap_or("");
        if row.point_id.starts_with("sailor") || row.point_id.contains("_megatron_") {
            assert_eq!(row.not_costed, None, "{}", row.point_id);
            assert!(row.predicted_iter_time_s > 0.0, "{}", row.point_id);
            assert_eq!(row.stages.len(), row.layout.split('|').count());
        } else if row.point_id.contains("dtfm_sched") {
            assert!(reason.contains("scheduler"), "{}: {reason}", row.point_id);
        } else {
            assert!(
                reason.contains("model dims blank"),
                "{}: {reason}",
                row.point_id
            );
        }
    }
    // Sailor states no network: the assumption is listed on every one of its rows.
    let sailor = r.rows.iter().find(|r| r.point_id == "sailor_mit_N4_D2");
    let assumed = sailor.map(|s| s.assumptions.join("; ")).unwrap_or_default();
    assert!(assumed.contains("1 Gb/s per node assumed"), "{assumed}");
    assert!(assumed.contains("read as fp32"), "{assumed}");
}

#[test]
fn data_parallel_replicas_run_at_the_pace_of_the_slowest() {
    let header = CSV.lines().next().unwrap();
    let n4_d2 = CSV
        .lines()
        .find(|l| l.starts_with("sailor_mit_N4_D2,"))
        .unwrap();
    let step = |line: &str| {
        let r = calibrate_hetero(&format!("{header}\n{line}\n"), catalogue_device).unwrap();
        r.rows[0].predicted_iter_time_s
    };
    let mixed = step(n4_d2);
    // The same layout with the RTX 2080 replicas swapped for RTX 3090s is faster (less so than
    // the devices, since the 1 Gb/s sends between stages take as long on either); with the RTX
    // 3090 swapped for an RTX 2080 it is exactly as fast: the 2080s paced it already.
    let fast = n4_d2.replace("RTX-2080x8", "RTX-3090x8");
    let slow = n4_d2.replace("S0[RTX-3090x8", "S0[RTX-2080x8");
    assert!(step(&fast) < 0.9 * mixed, "{} vs {mixed}", step(&fast));
    assert!(
        (step(&slow) - mixed).abs() < 1e-9 * mixed,
        "{} vs {mixed}",
        step(&slow)
    );
}

#[test]
fn odd_rows_are_listed_with_reasons_not_errors() {
    let header = CSV.lines().next().unwrap();
    let good = CSV
        .lines()
        .find(|l| l.starts_with("sailor_mit_N2_D1,"))
        .unwrap();
    let renamed = |id: &str, line: &str| line.replacen("sailor_mit_N2_D1", id, 1);
    let unknown = renamed("unknown_device", &good.replace("Titan-RTX", "RTX-4090"));
    let blank_dims = renamed(
        "blank_dims",
        &good.replacen(",24,1024,16,4096,", ",,,,,", 1),
    );
    let garbled = renamed(
        "garbled_layout",
        &good.replace(
            "S1[Titan-RTXx2]:modules 12-25",
            "S1[Titan-RTXx2:modules 12-25",
        ),
    );
    let gap = renamed(
        "layout_gap",
        &good.replace("modules 12-25", "modules 13-25"),
    );
    let no_precision = renamed(
        "no_precision",
        &good.replace(
            "fp32 likely (no --fp16/--bf16 in the artifact's Megatron-DeepSpeed launch script; not stated for MIT runs)",
            "",
        ),
    );
    let huge = renamed("huge", &good.replacen(",24,1024,", ",4000000000,1024,", 1));
    let truncated: String = renamed("truncated", good).chars().take(60).collect();
    let text = [
        header,
        good,
        &unknown,
        &blank_dims,
        &garbled,
        &gap,
        &no_precision,
        &huge,
        &truncated,
        "",
    ]
    .join("\n");
    let r = calibrate_hetero(&text, catalogue_device).unwrap();
    assert_eq!((r.costed_rows, r.not_costed_rows), (1, 7));
    let reason = |id: &str| {
        r.rows
            .iter()
            .find(|row| row.point_id == id)
            .and_then(|row| row.not_costed.clone())
            .unwrap_or_default()
    };
    for (id, needle) in [
        (
            "unknown_device",
            "device `RTX-4090` is not in the catalogue",
        ),
        (
            "blank_dims",
            "model dims blank or unreadable: layers, hidden, heads, ffn",
        ),
        ("garbled_layout", "stage_layout garbled: stage 1"),
        ("layout_gap", "expected a range from 12"),
        ("no_precision", "precision not stated"),
        ("huge", "more than the 10000"),
        ("truncated", "model dims blank"),
    ] {
        assert!(reason(id).contains(needle), "{id}: {}", reason(id));
    }
    let table = render_hetero_table(&r);
    assert!(table.contains("not costed: device `RTX-4090`"), "{table}");
    assert!(table.contains("7 of 8 runs not costed"), "{table}");
    // A header alone has no rows.
    assert_eq!(
        calibrate_hetero(&format!("{header}\n"), catalogue_device),
        Err(CalibrationError::Empty)
    );
}

#[test]
fn the_report_serializes_with_its_summary() {
    let json = serde_json::to_value(report()).unwrap();
    for key in [
        "rows",
        "costed_rows",
        "not_costed_rows",
        "median_abs_error_pct",
        "mean_abs_error_pct",
        "within_20_pct_share",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    let row = &json["rows"][0];
    for key in [
        "point_id",
        "predicted_tokens_per_s",
        "measured_tokens_per_s",
        "error_pct",
        "not_costed",
        "assumptions",
        "stages",
    ] {
        assert!(row.get(key).is_some(), "{key}");
    }
}

/// A refit of the fitted constants reaches the heterogeneous costing: it runs the planner's
/// pipeline step under the constants it is given, not the shipped ones.
#[test]
fn a_refit_reaches_the_heterogeneous_costing() {
    let shipped = report();
    let with = |fitted| calibrate_hetero_with(CSV, catalogue_device, fitted).unwrap();
    assert_eq!(with(FittedConstants::SHIPPED), shipped);
    let iter_times = |r: &HeteroCalibrationReport| -> Vec<f64> {
        r.rows.iter().map(|row| row.predicted_iter_time_s).collect()
    };
    // More contention (0.5 against the shipped 0.3) slows the compute a hidden reduction runs
    // beside by 0.2 of the hidden seconds: no costed row gets faster, and a row whose pacing
    // stage hides part of its all-reduce under its backward gets slower.
    let contended = with(FittedConstants {
        overlap_contention: 0.5,
        ..FittedConstants::SHIPPED
    });
    let pairs: Vec<(f64, f64)> = iter_times(&shipped)
        .into_iter()
        .zip(iter_times(&contended))
        .filter(|(a, _)| *a > 0.0)
        .collect();
    assert!(!pairs.is_empty());
    assert!(pairs.iter().all(|(a, b)| b >= a));
    assert!(pairs.iter().any(|(a, b)| b > a));
    // GEMMs sustaining 0.70 of the measured rate instead of 0.86 make every row's compute
    // 0.86 / 0.70 ≈ 1.23 times as long: every costed row is slower.
    let slow = with(FittedConstants {
        gemm_sustained: 0.70,
        ..FittedConstants::SHIPPED
    });
    for (a, b) in iter_times(&shipped).into_iter().zip(iter_times(&slow)) {
        if a > 0.0 {
            assert!(b > a, "{a} -> {b}");
        }
    }
}
