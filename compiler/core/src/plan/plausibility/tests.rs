//! The plausibility guard on real plans: each expectation is derived from the plan the same
//! job gets without any published figure, never from numbers the guard computes.

use crate::catalogue::{BestPublished, Catalogue, builtin};
use crate::diagnostics::{Severity, codes};
use crate::plan::findings::SpecField;
use crate::plan::ir::Plan;
use crate::span::{FileId, Span, Spanned};
use crate::types::Precision;

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
    let published = crate::display::tflops(predicted * 0.95 * 1e12);
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

    // A published run 5 % above the prediction, or one in another precision: nothing to say.
    let below = plan(
        &text,
        &with_best(unguarded(), &device, precision, predicted * 1.05),
    );
    assert!(extrapolations(&below).is_empty(), "{:?}", below.diagnostics);
    let other = if precision == Precision::Fp8 {
        Precision::Bf16
    } else {
        Precision::Fp8
    };
    let elsewhere = plan(
        &text,
        &with_best(unguarded(), &device, other, predicted * 0.5),
    );
    assert!(
        extrapolations(&elsewhere).is_empty(),
        "{:?}",
        elsewhere.diagnostics
    );
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
    assert_eq!(free.hetero.as_deref(), Some("data"), "{:?}", free.reasons);
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
    let predicted = crate::display::tflops(rates[fast] * 1e12);
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
    assert_eq!(
        free.hetero.as_deref(),
        Some("pipeline"),
        "{:?}",
        free.reasons
    );
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
