//! The plan as one self-contained HTML page (`loam report`, `loam plan --format html`): the
//! CLI hands the checked and planned project to `loam_report`, which draws the page.

use super::diagnostics::one_line;
use loam_compiler::catalogue::facts;
use loam_compiler::project::{CheckedProject, PlannedProject};
use loam_report::{PlanPage, Problem, plan_page};
use std::path::PathBuf;

/// The page's title: `loam plan: ` and the paths as given (`.` when none), as `loam report` and
/// `loam plan --format html` both name it.
pub fn title(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = if paths.is_empty() {
        vec![".".to_string()]
    } else {
        paths.iter().map(|p| crate::io::display(p)).collect()
    };
    format!("loam plan: {}", shown.join(" "))
}

/// The page of `planned` under `title`, with every diagnostic of checking and planning as one
/// problem line each. The one rendering both commands print or write, so their bytes agree.
pub fn render(title: &str, specs: &CheckedProject, planned: &PlannedProject) -> String {
    let cluster = specs.catalogue.as_ref().map(facts::cluster_map);
    // Every job together over time, from two jobs on (one job alone has nothing to wait for).
    let schedule = (planned.document.plans.len() > 1)
        .then(|| {
            loam_compiler::schedule::of_project(
                specs,
                &planned.document.plans,
                &planned.document.services,
            )
        })
        .flatten();
    plan_page(&PlanPage {
        title,
        document: &planned.document,
        cluster: cluster.as_ref(),
        problems: problems(specs, planned),
        schedule: schedule.as_ref(),
    })
}

/// One line per diagnostic of checking and planning, in their sorted order.
pub fn problems(specs: &CheckedProject, planned: &PlannedProject) -> Vec<Problem> {
    planned
        .diagnostics
        .iter()
        .map(|d| Problem {
            error: d.is_error(),
            line: one_line(d, &specs.sources),
        })
        .collect()
}
