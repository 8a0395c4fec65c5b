//! Every rule once: a spec that one phase accepts is never rejected by a later one. Every check
//! fixture and every example goes through check, plan and emit (all four backends); the test
//! fails when plan rejects what check accepted, or emit what plan accepted.
//!
//! Services go through check and plan the same way (every check fixture named `service-*` or
//! holding a `service` block); their plans (`services[]`) are not emitted here yet.
//!
//! Planning may still find that a job cannot run as asked (no layout fits a node group, the
//! deadline or the budget is missed): those are the plan phase's own findings (L3xxx), reported
//! by `loam plan` before emit refuses them, and not a rule that check skipped.

use loam_backends::{Flavor, Options, Target};
use loam_compiler::catalogue::facts::{node_group_devices, tenancies};
use loam_compiler::project::{check_project, plan_project};
use loam_tests::{project_files, repo_root, split_fixture};
use std::path::PathBuf;

fn specs() -> Vec<PathBuf> {
    let root = repo_root();
    let mut found = Vec::new();
    for dir in ["tests/cases/check", "examples"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "loam") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn no_later_phase_rejects_what_an_earlier_one_accepted() {
    let targets = [
        ("kubernetes", Target::Kubernetes, Flavor::Jobset),
        ("volcano", Target::Kubernetes, Flavor::Volcano),
        ("slurm", Target::Slurm, Flavor::Jobset),
        ("baremetal", Target::Baremetal, Flavor::Jobset),
    ];
    let mut failures = Vec::new();
    let mut emitted = 0;
    for path in specs() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let checked = check_project(project_files(&split_fixture(&name, &text)), 2);
        if checked.errors() > 0 {
            continue;
        }
        let planned = plan_project(&checked, 2);
        let plannable = checked.plannable_services().count();
        if planned.document.services.len() != plannable {
            failures.push(format!(
                "{name}: check accepted {plannable} services, plan returned {} service plans",
                planned.document.services.len()
            ));
        }
        for d in planned.diagnostics.iter().filter(|d| d.is_error()) {
            if !d.code.as_str().starts_with("L3") {
                failures.push(format!(
                    "{name}: check accepted it, plan rejects it: {}: {}",
                    d.code, d.message
                ));
            }
        }
        let doc = &planned.document;
        if planned.has_errors()
            || doc.plans.iter().any(|p| !p.feasible)
            || doc.services.iter().any(|s| !s.feasible)
        {
            continue;
        }
        let Some(catalogue) = &checked.catalogue else {
            continue;
        };
        for (label, target, flavor) in targets {
            let options = Options {
                flavor,
                tenants: tenancies(doc, catalogue),
                node_groups: node_group_devices(doc, catalogue),
                ..loam_tests::shipped_options()
            };
            match loam_backends::render(doc, target, &options) {
                Ok(_) => emitted += 1,
                Err(found) => {
                    for d in found {
                        failures.push(format!(
                            "{name}: plan accepted it, emit ({label}) rejects it: {}: {}",
                            d.code, d.message
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every example plans feasibly, so each reaches all four backends.
    let examples = specs()
        .iter()
        .filter(|p| p.parent().is_some_and(|d| d.ends_with("examples")))
        .count();
    assert!(
        emitted >= 4 * examples,
        "only {emitted} emits ran for {examples} examples"
    );
}
