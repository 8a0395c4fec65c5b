//! The stated uncertainty on real plans: every expectation is read from the catalogue's device
//! figures, never copied from a device file.

use crate::catalogue::{Catalogue, builtin};
use loam_ir::plan::Plan;

use crate::plan::tests::{example, plan_with as plan};

/// The 8B fine-tune example, allowed only `device`.
fn eight_b_on(device: &str) -> String {
    example("llama3-8b-finetune.loam").replace(
        "    max_devices = 16\n",
        &format!("    devices     = [{device}]\n    max_devices = 16\n"),
    )
}

/// The catalogue's stated uncertainty of `device`'s figures.
fn stated(catalogue: &Catalogue, device: &str) -> f64 {
    catalogue.device(device).unwrap().efficiency.uncertainty
}

fn plan_level(plan: &Plan) -> f64 {
    plan.estimate
        .as_ref()
        .and_then(|e| e.throughput_uncertainty)
        .unwrap_or_else(|| panic!("no uncertainty in {plan:?}"))
}

#[test]
fn a_plan_on_an_estimated_device_states_its_uncertainty_and_one_on_a_measured_device_zero() {
    let catalogue = builtin();
    let estimated = plan(&eight_b_on("Ascend910B"), &catalogue);
    assert!(estimated.feasible, "{:?}", estimated.reasons);
    assert_eq!(estimated.groups.len(), 1);
    assert_eq!(estimated.groups[0].device, "Ascend910B");
    let expected = stated(&catalogue, "Ascend910B");
    assert!(expected > 0.0, "Ascend910B's figures are estimates");
    assert_eq!(plan_level(&estimated), expected);
    // One group states it once, in the estimate.
    assert_eq!(estimated.groups[0].throughput_uncertainty, None);

    let measured = plan(&eight_b_on("H100_SXM"), &catalogue);
    assert!(measured.feasible, "{:?}", measured.reasons);
    assert_eq!(measured.groups[0].device, "H100_SXM");
    assert_eq!(stated(&catalogue, "H100_SXM"), 0.0, "H100_SXM is measured");
    assert_eq!(plan_level(&measured), 0.0);
}

#[test]
fn the_uncertainty_follows_the_catalogue_and_changes_nothing_else() {
    let mut catalogue = builtin();
    let before = plan(&eight_b_on("H100_SXM"), &catalogue);
    let device = catalogue.devices.get_mut("H100_SXM").unwrap();
    device.efficiency.uncertainty = 0.15;
    let after = plan(&eight_b_on("H100_SXM"), &catalogue);
    assert_eq!(plan_level(&after), 0.15);
    // The figure is stated beside the prediction, not folded into it.
    let mut restated = after.clone();
    if let Some(e) = restated.estimate.as_mut() {
        e.throughput_uncertainty = before.estimate.as_ref().unwrap().throughput_uncertainty;
    }
    assert_eq!(restated, before);
}

#[test]
fn a_plan_over_two_groups_states_each_groups_uncertainty_and_the_largest() {
    let catalogue = builtin();
    for name in ["hetero-70b-guiyang.loam", "hetero-data-70b-shanghai.loam"] {
        let plan = plan(&example(name), &catalogue);
        assert!(plan.feasible, "{name}: {:?}", plan.reasons);
        assert_eq!(plan.groups.len(), 2, "{name}");
        let mut largest = 0.0_f64;
        for g in &plan.groups {
            let expected = stated(&catalogue, &g.device);
            assert_eq!(g.throughput_uncertainty, Some(expected), "{name}: {g:?}");
            largest = largest.max(expected);
        }
        assert!(largest > 0.0, "{name} runs on an estimated device");
        assert_eq!(plan_level(&plan), largest, "{name}");
    }
}

#[test]
fn an_infeasible_plan_states_it_on_its_closest_miss() {
    let catalogue = builtin();
    let text = eight_b_on("Ascend910B").replace("deadline = 2d", "deadline = 10min");
    let plan = plan(&text, &catalogue);
    assert!(!plan.feasible);
    assert_eq!(plan_level(&plan), stated(&catalogue, "Ascend910B"));
}
