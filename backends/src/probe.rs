//! The probe of a job (`loam emit --probe JOB`): a short run of the job's own layout on its own
//! node groups — a few hundred steps, no periodic checkpoint, a log every few steps — whose log
//! `loam runs ingest` reads back, so a new site or stack is calibrated before the big job runs
//! (docs/calibration.md, "The probe job").
//!
//! The probe is the job's plan with its length cut to the probe's steps, so every backend emits
//! it as it emits any job: the same groups, ranks, environment and trainer contract. What
//! differs is named, never guessed by the trainer: `--train-steps`, `--log-interval` and
//! `--probe` follow the layout arguments (`job::group_trainer_args`).

use loam_ir::plan::{Plan, PlanDocument};

/// Appended to the job's name: the probe's manifests, Slurm job, pods and checkpoint folder are
/// its own, so a probe never resumes from the job's checkpoints nor leaves one the job would
/// resume from, and both can be applied to one cluster.
pub const SUFFIX: &str = "-probe";

/// Steps of a probe when none are asked for: as many as fit in [`TARGET_S`], within
/// [`MIN_STEPS`] and [`MAX_STEPS`] ("a few hundred steps").
pub const MAX_STEPS: u64 = 200;

/// The fewest steps of a default probe: [`LOG_INTERVALS`] intervals of two steps. The log
/// readers leave out the first two intervals as warm-up (docs/calibration.md, "Rules for a
/// training log"), so 18 intervals remain for the median.
pub const MIN_STEPS: u64 = 40;

/// The wall time a default probe aims at: an hour of the job's devices, which a team spends
/// before committing weeks of them.
pub const TARGET_S: f64 = 3600.0;

/// Log intervals a probe prints: the trainer is asked to log every `steps / LOG_INTERVALS`
/// steps, so the steady median has enough intervals after the warm-up ones whatever the steps.
pub const LOG_INTERVALS: u64 = 20;

/// The steps of a default probe of a job whose steps take `step_time_s`.
pub fn default_steps(step_time_s: f64) -> u64 {
    if !(step_time_s.is_finite() && step_time_s > 0.0) {
        return MIN_STEPS;
    }
    ((TARGET_S / step_time_s).floor() as u64).clamp(MIN_STEPS, MAX_STEPS)
}

/// Steps between two log lines of a probe of `steps` steps.
pub fn log_interval(steps: u64) -> u64 {
    (steps / LOG_INTERVALS).max(1)
}

/// The probe of `plan` over `steps` steps: named `<job>-probe`, its tokens the probe's steps of
/// the job's global batch, its time, cost, energy and carbon those of the steps it runs, its
/// checkpoint folder its own, no cheap-hours window (a probe runs when it is applied) and no
/// expected interruptions (its restart budget is the backends' minimum). Layout, groups and
/// stages are the job's, which is the point.
pub fn probe(plan: &Plan, steps: u64) -> Plan {
    let mut probe = plan.clone();
    probe.job = format!("{}{SUFFIX}", plan.job);
    let sequences = plan.workload.global_batch as f64 * plan.workload.seq_len as f64;
    probe.workload.tokens = steps as f64 * sequences;
    if let Some(estimate) = probe.estimate.as_mut() {
        let hours = steps as f64 * estimate.step_time_s / 3600.0;
        let share = if estimate.train_time_h > 0.0 {
            hours / estimate.train_time_h
        } else {
            0.0
        };
        estimate.train_time_h = hours;
        estimate.cost.amount *= share;
        estimate.energy_kwh *= share;
        estimate.carbon_kg *= share;
        estimate.goodput = None;
    }
    if let Some(checkpoint) = probe.checkpoint.as_mut() {
        checkpoint.path = format!("{}{SUFFIX}", checkpoint.path);
    }
    probe.schedule = None;
    probe.alternatives.clear();
    probe.why = format!(
        "a probe of job `{}`: {steps} steps of its layout, logged every {} steps, for `loam runs ingest`",
        plan.job,
        log_interval(steps)
    );
    probe
}

/// The document holding only the probe of `job` of `doc` (its services and other jobs left
/// out), and the probe's steps: `steps`, or [`default_steps`] of the job's step time. The error
/// names the jobs there are.
pub fn document(
    doc: &PlanDocument,
    job: &str,
    steps: Option<u64>,
) -> Result<(PlanDocument, u64), String> {
    let Some(plan) = doc.plans.iter().find(|p| p.job == job) else {
        let mut names: Vec<&str> = doc.plans.iter().map(|p| p.job.as_str()).collect();
        names.sort_unstable();
        let known = if names.is_empty() {
            "there are none".to_string()
        } else {
            format!("the jobs are {}", names.join(", "))
        };
        return Err(format!(
            "no job `{}` to probe ({known}; a service has no probe)",
            job.escape_debug()
        ));
    };
    let Some(estimate) = plan.estimate.as_ref().filter(|_| plan.feasible) else {
        return Err(format!(
            "job `{job}` has no feasible plan to probe; `loam plan` says why"
        ));
    };
    let steps = steps.unwrap_or_else(|| default_steps(estimate.step_time_s));
    let probed = PlanDocument {
        format_version: doc.format_version.clone(),
        catalogue_digest: doc.catalogue_digest.clone(),
        plans: vec![probe(plan, steps)],
        services: Vec::new(),
    };
    Ok((probed, steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_probe_is_an_hour_within_forty_and_two_hundred_steps() {
        // 9 s steps: 3600 / 9 = 400, capped at 200; 60 s: 60 steps; 406 s (Llama 3.1 405B as
        // Meta ran it): 8, raised to 40.
        assert_eq!(default_steps(9.0), 200);
        assert_eq!(default_steps(60.0), 60);
        assert_eq!(default_steps(406.0), 40);
        assert_eq!(default_steps(f64::NAN), 40);
        assert_eq!(log_interval(200), 10);
        assert_eq!(log_interval(40), 2);
        assert_eq!(log_interval(5), 1);
    }
}
