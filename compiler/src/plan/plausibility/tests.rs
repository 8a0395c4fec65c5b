//! The plausibility guard on real plans: each expectation is derived from the plan the same
//! job gets without any published figure, never from numbers the guard computes.

use crate::catalogue::{BestPublished, Catalogue, builtin};
use loam_ir::diagnostics::{Severity, codes};
use loam_ir::findings::SpecField;
use loam_ir::plan::Plan;
use loam_ir::span::{FileId, Span, Spanned};
use loam_ir::types::{Hetero, Precision};

use crate::plan::tests::{example, plan_with as plan};

/// The shipped catalogue without any published figure: the guard stays silent on it.
fn unguarded() -> Catalogue {
    let mut catalogue = builtin();
    for device in catalogue.devices.values_mut() {
        device.best_published.clear();
    }
    catalogue
}

/// `catalogue` with `device`'s best published run in `precision` at `tflops` TFLOP/s.
fn with_best(
    mut catalogue: Catalogue,
    device: &str,
    precision: Precision,
    tflops: f64,
) -> Catalogue {
    let best = BestPublished {
        model_flops: Spanned::new(tflops * 1e12, Span::new(FileId(0), 0, 0)),
        run: format!("run_on_{device}"),
        source: "a test".to_string(),
    };
    catalogue
        .devices
        .get_mut(device)
        .unwrap()
        .best_published
        .insert(precision, best);
    catalogue
}

/// The plan's L3007 messages.
fn extrapolations(plan: &Plan) -> Vec<&str> {
    plan.diagnostics
        .iter()
        .filter(|d| d.code == codes::plan::EXTRAPOLATION)
        .map(|d| d.message.as_str())
        .collect()
}

/// The plan without its guard's findings and notes, to compare with an unguarded plan.
fn without_guard(mut plan: Plan) -> Plan {
    let guarded: Vec<String> = extrapolations(&plan)
        .iter()
        .map(|m| m.to_string())
        .collect();
    plan.diagnostics
        .retain(|d| d.code != codes::plan::EXTRAPOLATION);
    plan.notes.retain(|n| !guarded.contains(n));
    plan
}

#[test]
fn a_plan_above_the_best_published_run_is_flagged_and_one_below_is_not() {
    let text = example("llama3-8b-finetune.loam");
    let free = plan(&text, &unguarded());
    assert!(free.feasible, "{:?}", free.reasons);
    assert!(extrapolations(&free).is_empty(), "{:?}", free.diagnostics);
    let device = free.groups[0].device.clone();
    let precision = free.workload.precision;
    let predicted = free.estimate.as_ref().unwrap().model_tflops_per_device;

    // A published run 5 % below the prediction: the plan is an extrapolation.
    let above = plan(
        &text,
        &with_best(unguarded(), &device, precision, predicted * 0.95),
    );
    let found: Vec<_> = above
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::plan::EXTRAPOLATION)
        .collect();
    assert_eq!(found.len(), 1, "{:?}", above.diagnostics);
    let finding = found[0];
    assert_eq!(finding.severity, Severity::Warning);
    assert_eq!(finding.field, SpecField::Job);
    let published = loam_ir::display::tflops(predicted * 0.95 * 1e12);
    for part in [
        device.as_str(),
        precision.as_str(),
        published.as_str(),
        "run_on_",
    ] {
        assert!(
            finding.message.contains(part),
            "{part}: {}",
            finding.message
        );
    }
    assert!(above.notes.contains(&finding.message), "{:?}", above.notes);
    // A warning only: the plan itself is the one the job gets without the figure.
    assert!(above.feasible);
    assert_eq!(without_guard(above), free);

    // A published run 5 % above the prediction: nothing to say.
    let below = plan(
        &text,
        &with_best(unguarded(), &device, precision, predicted * 1.05),
    );
    assert!(extrapolations(&below).is_empty(), "{:?}", below.diagnostics);
}

#[test]
fn a_run_in_another_precision_is_only_the_files_best_when_none_used_the_plans() {
    let text = example("llama3-8b-finetune.loam");
    let free = plan(&text, &unguarded());
    let device = free.groups[0].device.clone();
    let precision = free.workload.precision;
    let other = if precision == Precision::Fp8 {
        Precision::Bf16
    } else {
        Precision::Fp8
    };
    let peak = builtin().device(&device).unwrap().peak(other).unwrap();
    // The only run of the catalogue is in the other precision, at that precision's whole peak
    // (100 % MFU): no plan is above it.
    let at_peak = plan(&text, &with_best(unguarded(), &device, other, peak / 1e12));
    assert!(
        extrapolations(&at_peak).is_empty(),
        "{:?}",
        at_peak.diagnostics
    );
    // At a thousandth of a TFLOP/s every plan is above the best MFU the file holds, and the
    // finding says it is the file's best of any precision, not a run in the plan's.
    let tiny = plan(&text, &with_best(unguarded(), &device, other, 1e-3));
    let found = extrapolations(&tiny);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("the best MFU of any published run, 0.0 %"),
        "{}",
        found[0]
    );
    assert_eq!(without_guard(tiny), free);
}

/// Model TFLOP/s per device of each group of a `hetero: data` plan, from the plan alone: the
/// whole job's model FLOP/s (the average per device × all devices) split by the groups'
/// shares of the batch.
fn data_group_rates(plan: &Plan) -> Vec<f64> {
    let average = plan.estimate.as_ref().unwrap().model_tflops_per_device;
    let devices: u64 = plan.groups.iter().map(|g| g.devices).sum();
    let batch = plan.workload.global_batch as f64;
    plan.groups
        .iter()
        .map(|g| {
            let share = g.sequences_per_step.unwrap() as f64 / batch;
            average * devices as f64 * share / g.devices as f64
        })
        .collect()
}

#[test]
fn each_group_of_a_data_parallel_pair_is_held_to_its_own_device() {
    let text = example("hetero-data-70b-shanghai.loam");
    let free = plan(&text, &unguarded());
    assert_eq!(free.hetero, Some(Hetero::Data), "{:?}", free.reasons);
    let precision = free.workload.precision;
    let rates = data_group_rates(&free);
    let average = free.estimate.as_ref().unwrap().model_tflops_per_device;
    // The groups run at different rates; the plan-wide average hides the faster one.
    let fast = if rates[0] > rates[1] { 0 } else { 1 };
    let slow = 1 - fast;
    assert!(
        rates[fast] > average && average > rates[slow],
        "{rates:?} {average}"
    );
    let (fast_group, slow_group) = (&free.groups[fast], &free.groups[slow]);

    // Each device's figure between the average and its own group's rate: only the faster
    // group is above its figure.
    let catalogue = with_best(
        with_best(
            unguarded(),
            &fast_group.device,
            precision,
            (rates[fast] + average) / 2.0,
        ),
        &slow_group.device,
        precision,
        (rates[slow] + average) / 2.0,
    );
    let guarded = plan(&text, &catalogue);
    let found = extrapolations(&guarded);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains(&fast_group.device), "{}", found[0]);
    assert!(found[0].contains(&fast_group.node_group), "{}", found[0]);
    let predicted = loam_ir::display::tflops(rates[fast] * 1e12);
    assert!(found[0].contains(&predicted), "{predicted}: {}", found[0]);

    // Figures just below each group's own rate: both groups are flagged.
    let catalogue = with_best(
        with_best(
            unguarded(),
            &fast_group.device,
            precision,
            rates[fast] * 0.99,
        ),
        &slow_group.device,
        precision,
        rates[slow] * 0.99,
    );
    let both = plan(&text, &catalogue);
    assert_eq!(extrapolations(&both).len(), 2, "{:?}", both.diagnostics);
    assert_eq!(without_guard(both), free);
}

/// The TFLOP/s a finding says its group was predicted at.
fn predicted_in(message: &str) -> f64 {
    let rest = message.strip_prefix("predicted ").unwrap();
    rest.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn the_groups_of_a_pipeline_pair_share_the_plans_model_flops() {
    let text = example("hetero-70b-guiyang.loam");
    let free = plan(&text, &unguarded());
    assert_eq!(free.hetero, Some(Hetero::Pipeline), "{:?}", free.reasons);
    let precision = free.workload.precision;
    // A published figure far below anything either group runs: both are flagged, each with
    // the FLOPs of its own stages; together they make the plan's model FLOPs.
    let mut catalogue = unguarded();
    for g in &free.groups {
        catalogue = with_best(catalogue, &g.device, precision, 1e-3);
    }
    let guarded = plan(&text, &catalogue);
    let found = extrapolations(&guarded);
    assert_eq!(found.len(), 2, "{found:?}");
    let mut total = 0.0;
    for g in &free.groups {
        let message = found
            .iter()
            .find(|m| m.contains(&format!("{} of `{}`", g.device, g.node_group)))
            .unwrap();
        total += predicted_in(message) * g.devices as f64;
    }
    let devices: u64 = free.groups.iter().map(|g| g.devices).sum();
    let whole = free.estimate.as_ref().unwrap().model_tflops_per_device * devices as f64;
    // Each rate is written to 0.1 TFLOP/s.
    assert!(
        (total - whole).abs() <= 0.05 * devices as f64,
        "{total} vs {whole}"
    );
    assert_eq!(without_guard(guarded), free);
}

/// MPT-7B as llm-foundry benchmarks it (32 blocks of 4,096, GELU MLP of 16,384, 50,368 tokens,
/// 2,048-token sequences), pre-trained in bf16 on one node of 8 A100-40GB.
const MPT_7B_ON_A100_40GB: &str = r#"job "mpt-7b" {
  tenant = "nlp"
  model {
    arch    = dense
    mlp     = gelu
    layers  = 32
    hidden  = 4096
    ffn     = 16384
    heads   = 32
    vocab   = 50368
    seq_len = 2048
  }
  train {
    tokens       = 1B
    global_batch = 48
    precision    = bf16
  }
  resources {
    pool        = lab
    devices     = [A100_SXM_40GB]
    max_devices = 8
  }
}
"#;

/// The shipped devices with the lab pool, its H100 nodes swapped for A100-40GB ones (no shipped
/// pool has any).
fn lab_with_a100_40gb() -> Catalogue {
    let (_, lab) = crate::catalogue::builtin_sources()
        .into_iter()
        .find(|(path, _)| *path == "specs/pools/lab.yaml")
        .unwrap();
    let text = lab.replace("H100_SXM", "A100_SXM_40GB");
    let (catalogue, diagnostics) =
        crate::catalogue::builtin_devices_with_pool("specs/pools/lab.yaml", &text);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    catalogue.unwrap()
}

/// A plan's MFU as the Plan JSON gives it.
fn mfu(plan: &Plan) -> f64 {
    plan.estimate.as_ref().unwrap().mfu
}

#[test]
fn a_device_without_its_own_run_is_held_to_its_vendors_best_mfu() {
    // A100_SXM_40GB has no published run. NVIDIA's best bf16 MFU in the file is Korthikanti et
    // al.'s 1T run on A100_SXM_80GB: 174.4 TFLOP/s of its 312 TFLOP/s bf16 peak = 55.9 %
    // (H100_SXM's best, MPT-7B, is 441.7 of 989.4 = 44.6 %; B200's 443.8 of 2,250 = 19.7 %).
    let catalogue = lab_with_a100_40gb();
    let planned = plan(MPT_7B_ON_A100_40GB, &catalogue);
    assert!(planned.feasible, "{:?}", planned.reasons);
    assert_eq!(planned.groups[0].device, "A100_SXM_40GB");
    // The issue's case: loam predicts MPT-7B on A100-40GB above every bf16 run of the file.
    assert!(mfu(&planned) > 0.559, "MFU {}", mfu(&planned));
    let found = extrapolations(&planned);
    assert_eq!(found.len(), 1, "{:?}", planned.diagnostics);
    for part in [
        "A100_SXM_40GB in bf16",
        &format!("({} MFU)", loam_ir::display::percent(mfu(&planned))),
        "the best MFU of a published run on nvidia devices in bf16, 55.9 %",
        "`korthikanti_1T_seqsel` on A100_SXM_80GB",
        "since no run on A100_SXM_40GB is published",
    ] {
        assert!(found[0].contains(part), "{part}: {}", found[0]);
    }
    // The figure is data: an NVIDIA run 2 % above this plan's MFU (on the 80 GB part, whose
    // bf16 peak is the 40 GB part's) silences the guard; the plan itself does not change.
    let peak = catalogue
        .device("A100_SXM_80GB")
        .unwrap()
        .peak(Precision::Bf16)
        .unwrap();
    let faster = with_best(
        catalogue,
        "A100_SXM_80GB",
        Precision::Bf16,
        mfu(&planned) * 1.02 * peak / 1e12,
    );
    let quiet = plan(MPT_7B_ON_A100_40GB, &faster);
    assert!(extrapolations(&quiet).is_empty(), "{:?}", quiet.diagnostics);
    assert_eq!(without_guard(planned), without_guard(quiet));
}

#[test]
fn a_vendor_without_a_run_in_the_precision_is_held_to_the_files_best_mfu() {
    // Gaudi 2's only published run is in fp8 and no other Intel device has one, so the 70B
    // LoRA fine-tune in bf16 is held to the best bf16 MFU of the file: 55.9 % (above).
    let planned = plan(&example("llama2-70b-lora-gaudi2.loam"), &builtin());
    assert!(planned.feasible, "{:?}", planned.reasons);
    assert_eq!(planned.groups[0].device, "Gaudi2");
    // The issue's case: loam predicts Gaudi 2 in bf16 above every bf16 run of the file.
    assert!(mfu(&planned) > 0.559, "MFU {}", mfu(&planned));
    let found = extrapolations(&planned);
    assert_eq!(found.len(), 1, "{:?}", planned.diagnostics);
    for part in [
        "Gaudi2 in bf16",
        "the best MFU of any published run in bf16, 55.9 %",
        "`korthikanti_1T_seqsel` on A100_SXM_80GB",
        "since no run on intel devices in bf16 is published",
    ] {
        assert!(found[0].contains(part), "{part}: {}", found[0]);
    }
}

#[test]
fn a_plan_at_a_plausible_mfu_on_a_device_without_a_run_is_not_flagged() {
    // The same MPT-7B on the A100-40GB node, recomputing every block: the recomputed forward
    // is not model FLOPs, so the MFU falls to about three quarters of the plan's above, below
    // NVIDIA's 55.9 %.
    let text = MPT_7B_ON_A100_40GB.replace(
        "    precision    = bf16\n",
        "    precision    = bf16\n  }\n  parallel {\n    recompute = full\n",
    );
    let planned = plan(&text, &lab_with_a100_40gb());
    assert!(planned.feasible, "{:?}", planned.reasons);
    assert!(mfu(&planned) < 0.559, "MFU {}", mfu(&planned));
    assert!(
        extrapolations(&planned).is_empty(),
        "{:?}",
        planned.diagnostics
    );
}

#[test]
fn the_yardsticks_are_rows_of_the_calibration_file() {
    // Every published run the guard reads names a row of the calibration file, on the device
    // the row ran on; the MFU is that run's model FLOP/s over the device's peak.
    let csv = include_str!("../../../../tests/data/training_runs_calibration.csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (run, device, precision) = (column("run_id"), column("device"), column("precision"));
    let rows: Vec<(String, String, String)> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[run].to_string(),
                r[device].to_string(),
                r[precision].to_string(),
            )
        })
        .collect();
    let catalogue = builtin();
    let runs = super::yardstick::published_runs(&catalogue);
    assert!(runs.len() >= 10, "{}", runs.len());
    for r in &runs {
        assert!(
            rows.contains(&(
                r.run.to_string(),
                r.device.id.value.clone(),
                r.precision.as_str().to_string()
            )),
            "{} on {} in {}",
            r.run,
            r.device.id.value,
            r.precision
        );
        let peak = r.device.peak(r.precision).unwrap();
        assert!((r.mfu - r.model_flops / peak).abs() < 1e-12);
    }
    // The file's best bf16 MFU: 174.4 / 312 = 0.559.
    let best_bf16 = runs
        .iter()
        .filter(|r| r.precision == Precision::Bf16)
        .map(|r| r.mfu)
        .fold(0.0, f64::max);
    assert!((best_bf16 - 174.4 / 312.0).abs() < 5e-4, "{best_bf16}");
}
