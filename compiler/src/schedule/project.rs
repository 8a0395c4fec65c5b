//! The schedule of a checked and planned project as the diff, the Plan JSON and the report
//! show it: `loam schedule`'s rules with its default horizon, no samples, and hour 0 at the
//! earliest stated `submit` day, so the same specs give the same schedule.

use super::date::format_date;
use super::{DEFAULT_SEED, Options, Rules, Submits, schedule_with_services};
use crate::project::CheckedProject;
use loam_ir::plan::{Plan, ServicePlan};
use loam_ir::schedule::Schedule;

/// How far the diff, the Plan JSON and the report schedule: 90 days, `loam schedule`'s default
/// horizon. (counted)
const HORIZON_H: f64 = 90.0 * 24.0;

/// The schedule of every planned job and service of `specs` together (rule 15 for the services), as `loam schedule` computes it with
/// its default horizon, no samples, and hour 0 at the earliest stated `submit` day (no clock: the
/// same specs give the same schedule; without any `submit`, `start` is empty and hour 0 is when
/// every job is submitted). `None` without a catalogue or a plan.
pub fn of_project(
    specs: &CheckedProject,
    plans: &[Plan],
    services: &[ServicePlan],
) -> Option<Schedule> {
    let catalogue = specs.catalogue.as_ref()?;
    if plans.is_empty() {
        return None;
    }
    let stated: Vec<(&str, &str, i64)> = specs
        .jobs
        .iter()
        .filter_map(|c| {
            let submit = c.job.submit.as_ref()?;
            Some((c.file.as_str(), c.job.name.value.as_str(), submit.value))
        })
        .collect();
    let first_day = stated.iter().map(|s| s.2.div_euclid(1440)).min();
    let start_min = first_day.map_or(0, |d| d * 1440);
    let submits: Submits = stated
        .iter()
        .map(|(file, job, at)| {
            (
                (file.to_string(), job.to_string()),
                (at - start_min) as f64 / 60.0,
            )
        })
        .collect();
    let options = Options {
        start: first_day.map_or_else(String::new, format_date),
        horizon_h: HORIZON_H,
        samples: 0,
        seed: DEFAULT_SEED,
        threads: 1,
        rules: Rules::Kueue,
    };
    Some(schedule_with_services(
        plans, services, &submits, catalogue, &options,
    ))
}
