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

/// The goal for the shared file's median |error| (9.2 % measured with host-staged
/// collectives on devices without PCIe peer-to-peer and NCCL's TCP socket transport on networks
/// that name no RDMA fabric; 34.0 % before, every costed row over-predicted): see
/// docs/cost-model.md, "Heterogeneous calibration".
const MEDIAN_BOUND_PCT: f64 = 20.0;

/// Share of costed rows within ±20 % (90 % measured).
const WITHIN_20_BOUND: f64 = 0.8;

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
    assert!(
        r.within_20_pct_share >= WITHIN_20_BOUND,
        "{:.0}% within ±20%\n{}",
        100.0 * r.within_20_pct_share,
        render_hetero_table(&r)
    );
    // Neither side dominates any more: some rows are over-predicted, some under.
    let over = r
        .rows
        .iter()
        .filter_map(|row| row.error_pct)
        .filter(|e| *e > 0.0)
        .count();
    assert!(
        over > 0 && over < r.costed_rows,
        "{over} of {} over-predicted",
        r.costed_rows
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
    // More heads than channels was costed at 0 tokens/s and scored as a -100 % miss.
    // A measured figure above the training file's bound is a typo, not a measurement.
    let typo = renamed(
        "typo",
        &good.replacen(",2.136,4375,", ",2.136,4000000000,", 1),
    );
    let headless = renamed(
        "headless",
        &good.replacen(",24,1024,16,", ",24,1024,4000000000,", 1),
    );
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
        &headless,
        &typo,
        &truncated,
        "",
    ]
    .join("\n");
    let r = calibrate_hetero(&text, catalogue_device).unwrap();
    assert_eq!((r.costed_rows, r.not_costed_rows), (1, 9));
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
        ("headless", "a head of no width"),
        ("typo", "not a throughput above 0"),
        ("truncated", "model dims blank"),
    ] {
        assert!(reason(id).contains(needle), "{id}: {}", reason(id));
    }
    let table = render_hetero_table(&r);
    assert!(table.contains("not costed: device `RTX-4090`"), "{table}");
    assert!(table.contains("9 of 10 runs not costed"), "{table}");
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

#[test]
fn a_tensor_group_without_peer_to_peer_goes_through_host_memory() {
    use crate::cost::transport::HOST_STAGED_SHARE;
    let header = CSV.lines().next().unwrap();
    let n4_d1 = CSV
        .lines()
        .find(|l| l.starts_with("sailor_mit_N4_D1,"))
        .unwrap();
    let csv = format!("{header}\n{n4_d1}\n");
    let staged = calibrate_hetero(&csv, catalogue_device).unwrap();
    // The same cards as if the driver allowed peer-to-peer over their PCIe Gen3 links.
    let direct = calibrate_hetero(&csv, |id| {
        catalogue_device(id).map(|mut d| {
            d.scale_up_bandwidth /= HOST_STAGED_SHARE;
            d
        })
    })
    .unwrap();
    // Stage 1 holds modules 5-11, seven blocks on eight RTX 2080 (fp32, micro-batch 2, 2,048
    // tokens, hidden 1,024): each block all-reduces 2 · 2048 · 1024 · 4 B = 16.78 MB four times
    // (twice forward, twice backward). A ring over 8 ranks moves 2 · 7/8 of it per rank: through
    // host memory at 16 GB/s · 0.2 · 0.8 = 2.56 GB/s that is 11.47 ms, peer-to-peer at
    // 16 · 0.8 = 12.8 GB/s 2.29 ms (plus 7 · 2 µs of hops each way, the same on both): 9.18 ms
    // more per all-reduce, 7 · 4 · 9.18 = 257 ms more per micro-batch.
    let bytes: f64 = 2.0 * 2048.0 * 1024.0 * 4.0;
    let ring = 2.0 * 7.0 / 8.0 * bytes;
    let per_all_reduce = ring / (16e9 * 0.2 * 0.8) - ring / (16e9 * 0.8);
    assert!(
        (per_all_reduce - 9.18e-3).abs() < 0.01e-3,
        "{per_all_reduce}"
    );
    let extra = staged.rows[0].stages[1].seconds_per_micro_batch
        - direct.rows[0].stages[1].seconds_per_micro_batch;
    assert!(
        (extra - 7.0 * 4.0 * per_all_reduce).abs() < 1e-3,
        "{extra} s more per micro-batch"
    );
    assert!(staged.rows[0].predicted_iter_time_s > direct.rows[0].predicted_iter_time_s);
}

#[test]
fn a_network_naming_no_rdma_fabric_runs_nccl_over_tcp_sockets() {
    let header = CSV.lines().next().unwrap();
    let p8 = CSV
        .lines()
        .find(|l| l.starts_with("dtfm_case2_megatron_P8_L24_B1024,"))
        .unwrap();
    let step = |line: &str| {
        let r = calibrate_hetero(&format!("{header}\n{line}\n"), catalogue_device).unwrap();
        (
            r.rows[0].predicted_iter_time_s,
            r.rows[0].assumptions.join("; "),
        )
    };
    let (sockets, assumed) = step(p8);
    assert!(assumed.contains("TCP sockets"), "{assumed}");
    let (rdma, assumed) = step(&p8.replace("10 Gbps inter-instance", "10 Gbps RoCE"));
    assert!(!assumed.contains("TCP sockets"), "{assumed}");
    // A pipeline send of 1 · 2048 · 2048 · 2 B = 8.39 MB leaves a 4-GPU p3.8xlarge whose 10 Gb/s
    // NIC its four ranks share: 1.25 GB/s · 0.8 / 4 = 250 MB/s over RDMA, 33.6 ms; over
    // sockets 1.25 · 0.6 / 4 = 187.5 MB/s, 44.7 ms. Two sends a slot over 128 + 8 − 1 = 135
    // slots: 135 · 2 · 11.2 ms = 3.02 s longer (the data-parallel reduction grows too).
    let send: f64 = 2048.0 * 2048.0 * 2.0;
    let per_slot = 2.0 * (send / (1.25e9 * 0.6 / 4.0) - send / (1.25e9 * 0.8 / 4.0));
    assert!(
        sockets - rdma >= 135.0 * per_slot * 0.999,
        "{sockets} vs {rdma}"
    );
}

#[test]
fn the_heterogeneous_file_cross_validates_by_source_family() {
    let cv = crate::calibrate::cross_validate_hetero(CSV, catalogue_device).unwrap();
    // The two families with costed rows: DTFM's twelve Megatron-LM runs and Sailor's nine.
    let families: Vec<(&str, usize)> = cv
        .folds
        .iter()
        .map(|f| (f.family.as_str(), f.rows))
        .collect();
    assert_eq!(families, vec![("dtfm", 12), ("sailor", 9)]);
    // Each fold's shipped median is the family's own under the shipped constants.
    let r = report();
    for fold in &cv.folds {
        let errors: Vec<f64> = r
            .rows
            .iter()
            .filter(|row| row.point_id.starts_with(&format!("{}_", fold.family)))
            .filter_map(|row| row.error_pct.map(f64::abs))
            .collect();
        assert_eq!(
            fold.shipped_median_abs_error_pct,
            crate::calibrate::median(errors)
        );
    }
    println!("{}", crate::calibrate::render_cross_validation(&cv));
    // Left out, each family is still costed within the goal for the file.
    assert!(cv.median_abs_error_pct <= MEDIAN_BOUND_PCT, "{cv:#?}");
}
