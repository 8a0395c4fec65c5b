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

/// The shipped catalogue with one site calibration file added.
fn with_calibration(pool: &str, site: &str, device: &str, gemm: f64) -> Catalogue {
    let text = format!(
        "pool: {pool}\nsite: {site}\ndevices:\n  {device}:\n    runs: 7\n    run_ids: [a, b, c, d, e, f, g]\n    \
         first_run: \"2026-11-02\"\n    last_run: \"2026-12-04\"\n    fitted: [gemm, scale_out]\n    \
         gemm: {gemm}\n    scale_out: 1.0\n    scale_up: 1.0\n    throughput_uncertainty: 0.05\n    \
         median_abs_error_pct: 3.1\n"
    );
    let mut sources: Vec<(String, String)> = crate::catalogue::builtin_sources()
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    sources.push((format!("specs/calibration/{pool}-{site}.yaml"), text));
    let triples: Vec<(loam_ir::span::FileId, &str, &str)> = sources
        .iter()
        .enumerate()
        .map(|(i, (p, t))| (loam_ir::span::FileId(i as u32), p.as_str(), t.as_str()))
        .collect();
    let (catalogue, diags) = crate::catalogue::load(&triples);
    assert!(diags.is_empty(), "{diags:#?}");
    catalogue.unwrap()
}

#[test]
fn a_plan_at_a_calibrated_site_says_so_and_takes_the_runs_uncertainty() {
    let spec = eight_b_on("H100_SXM");
    let shipped = plan(&spec, &builtin());
    let group = &shipped.groups[0];
    let (pool, site) = (shipped.pool.clone(), group.site.clone());
    assert!(
        shipped.notes.iter().all(|n| !n.contains("calibrated")),
        "{:?}",
        shipped.notes
    );
    // The same factors as the shipped model: the plan is the same but for what it says.
    let neutral = plan(&spec, &with_calibration(&pool, &site, "H100_SXM", 1.0));
    assert_eq!(plan_level(&neutral), 0.05);
    assert!(
        neutral.notes.contains(&format!(
            "calibrated on 7 runs of H100_SXM at {site}, median error 3.1 % (±5 %, 2026-11-02 to 2026-12-04)"
        )),
        "{:?}",
        neutral.notes
    );
    let (a, b) = (
        shipped.estimate.as_ref().unwrap(),
        neutral.estimate.as_ref().unwrap(),
    );
    assert_eq!(a.step_time_s, b.step_time_s);
    // A GEMM share 0.8 × as high: every step is slower (compute is part of every step).
    let slower = plan(&spec, &with_calibration(&pool, &site, "H100_SXM", 0.8));
    assert!(slower.estimate.as_ref().unwrap().tokens_per_s < a.tokens_per_s);
}

#[test]
fn a_plan_elsewhere_in_a_calibrated_pool_says_it_is_not_calibrated() {
    let spec = eight_b_on("H100_SXM");
    let shipped = plan(&spec, &builtin());
    let site = shipped.groups[0].site.clone();
    let pool = builtin();
    let other = pool.pools[&shipped.pool]
        .sites
        .iter()
        .find(|s| s.name.value != site && s.devices_of("H20").1 > 0)
        .map(|s| s.name.value.clone())
        .unwrap();
    let planned = plan(&spec, &with_calibration(&shipped.pool, &other, "H20", 0.8));
    assert_eq!(planned.estimate, shipped.estimate);
    let note = format!(
        "not calibrated: no measured runs of H100_SXM at {site}; the time is the shipped model's"
    );
    assert!(planned.notes.contains(&note), "{:?}", planned.notes);
    assert!(!shipped.notes.contains(&note));
}
