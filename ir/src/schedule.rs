//! The schedule: every job and service of a repository run together on its pools over weeks,
//! as `loam schedule` computes it, the report draws it and `loam diff` compares it.
//!
//! Times are hours from the schedule's start (its `start` date, 00:00 UTC), rounded as plans
//! round. Every map is a `BTreeMap` and every list is in a stated order, so the serialised
//! schedule is byte-deterministic.

use crate::types::Priority;
use serde::Serialize;
use std::collections::BTreeMap;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The whole schedule of one revision.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Schedule {
    /// The day the schedule starts (`YYYY-MM-DD`, 00:00 UTC); hour 0 of every time below.
    pub start: String,
    /// Hours simulated; work still queued or running at the horizon is reported as such.
    pub horizon_h: f64,
    /// The verdict in numbers: deadlines met, at risk and missed, device-hours, cost.
    pub totals: ScheduleTotals,
    /// Every job and service, in the order of their spec file, then name.
    pub jobs: Vec<ScheduledJob>,
    /// Per site, then device type: one entry per day of the horizon.
    pub utilisation: BTreeMap<String, BTreeMap<String, Vec<DayUsage>>>,
    /// Queue length over time: one point at every instant the number of waiting or running
    /// jobs changes, in time order.
    pub queue: Vec<QueuePoint>,
    /// The Monte Carlo run behind the probabilities, when one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monte_carlo: Option<MonteCarlo>,
    /// The capacity what-if, when `--add` or `--remove-site` changed the pool: these totals
    /// are the changed pool's, `what_if.before` the unchanged one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_if: Option<WhatIf>,
}

/// The totals every output leads with.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ScheduleTotals {
    /// Jobs scheduled (planned and admissible).
    pub jobs: usize,
    /// Services holding their devices (rule 15 of docs/scheduling.md); absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub services: usize,
    /// Jobs with a deadline.
    pub deadlines: usize,
    /// Deadlines met (at P90 when sampled: `at_risk` takes those met at P50 only).
    pub met: usize,
    /// Deadlines met by the expected schedule but not at P90 (only with `--samples`).
    pub at_risk: usize,
    /// Deadlines missed (or not finished within the horizon).
    pub missed: usize,
    /// Jobs that never start within the horizon or can never be admitted.
    pub never_started: usize,
    /// Hours waited, summed over jobs (submit to first start).
    pub wait_h: f64,
    /// The longest wait of any job.
    pub max_wait_h: f64,
    /// Device-hours held by running work within the horizon.
    pub device_hours: f64,
    /// Money for that work, by currency.
    pub cost: BTreeMap<String, f64>,
    /// Preemptions over the schedule.
    pub preemptions: usize,
    /// Device-hours of work redone after preemptions (work since the last checkpoint).
    pub lost_device_hours: f64,
}

/// One job's or service's life in the schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduledJob {
    /// The job or service name.
    pub job: String,
    /// The spec file it came from.
    pub file: String,
    /// `job` or `service` (a service runs from its start to the horizon).
    pub kind: String,
    /// The owning tenant.
    pub tenant: String,
    /// Its priority.
    pub priority: Priority,
    /// The pool.
    pub pool: String,
    /// Devices it holds while running (once moved to an alternative, the alternative's; the
    /// totals count its plan's before the move).
    pub devices: u64,
    /// When it is submitted (the spec's `submit`, else 0).
    pub submit_h: f64,
    /// When it first starts, if it does within the horizon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_h: Option<f64>,
    /// When it finishes, if it does within the horizon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_h: Option<f64>,
    /// Hours between submit and first start (to the horizon when it never starts).
    pub wait_h: f64,
    /// The preemptions it suffers, in time order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preemptions: Vec<Preemption>,
    /// Hours of work redone after its preemptions (work since the last checkpoint, plus
    /// restarts).
    pub lost_work_h: f64,
    /// The deadline verdict, for a job with a deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineVerdict>,
    /// Where it ran.
    pub placement: Placement,
    /// The status at the horizon: `finished`, `running`, `queued`, `never` (never admissible
    /// as planned, with `reason`), `not-planned`.
    pub status: String,
    /// Why it waited or never ran, in words (empty when it did neither).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The intervals it held devices, in time order (a window job has one per window).
    pub runs: Vec<RunInterval>,
}

/// One interval a job held devices.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunInterval {
    /// Start hour.
    pub from_h: f64,
    /// End hour.
    pub to_h: f64,
}

/// One preemption a job suffered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preemption {
    /// When.
    pub at_h: f64,
    /// The job that took its devices.
    pub by: String,
    /// Why that job may preempt it: `reclaim` (its tenant takes back guaranteed quota) or
    /// `priority` (a higher priority in the same ClusterQueue).
    pub rule: String,
    /// Hours of work lost: since the last checkpoint, plus the restart.
    pub lost_work_h: f64,
}

/// A job's deadline against its finish.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeadlineVerdict {
    /// The deadline, hours from the schedule's start (submit + the spec's deadline).
    pub deadline_h: f64,
    /// `met`, `at-risk` or `missed`.
    pub verdict: String,
    /// Finish of the expected schedule (none when it does not finish within the horizon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_h: Option<f64>,
    /// Median finish over the samples (only with `--samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_p50_h: Option<f64>,
    /// 90th-percentile finish over the samples (only with `--samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_p90_h: Option<f64>,
    /// Share of samples that meet the deadline (only with `--samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability_met: Option<f64>,
}

/// Where a job ran, and why if not where its plan put it.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Placement {
    /// Sites, joined by `+` for a plan over two.
    pub site: String,
    /// Device types, joined by `+`.
    pub device: String,
    /// Node groups it holds devices of.
    pub node_groups: Vec<String>,
    /// Set when the schedule moved it to one of its plan's alternatives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<Replacement>,
}

/// A re-placement on a plan's alternative.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replacement {
    /// Where the plan put it.
    pub planned_site: String,
    /// Hours earlier it finishes than on its plan's placement (negative for a migration, which
    /// delays the migrated job so that another may start).
    pub earlier_h: f64,
    /// Cost change against the plan, as a fraction (0.03 = 3 % more).
    pub cost_change: f64,
    /// In words: "starts 4.0 days earlier at guiyang, +3 % cost".
    pub why: String,
    /// Set when the job was migrated while running (from its last checkpoint, to let a waiting
    /// job start): the hour it moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrated_at_h: Option<f64>,
}

/// One site × device type on one day.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DayUsage {
    /// Day index from the start (0-based).
    pub day: u64,
    /// Devices of that type at the site.
    pub devices: u64,
    /// Busy device-hours over 24 × devices.
    pub utilisation: f64,
    /// Devices free at the day's busiest instant (the fewest free), so a day with one hour of
    /// full use reads as full.
    pub free_devices: u64,
    /// Of those free devices, how many no job queued at that instant can use (too few for it,
    /// the wrong type, or its tenant's quota spent), i.e. idle capacity that only a smaller or
    /// other job could fill.
    pub fragmentation: u64,
}

/// Jobs waiting and running from an instant on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QueuePoint {
    /// Hour.
    pub at_h: f64,
    /// Jobs submitted and waiting.
    pub queued: usize,
    /// Jobs holding devices.
    pub running: usize,
}

/// How the probabilities were sampled.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MonteCarlo {
    /// Samples drawn.
    pub samples: u64,
    /// The seed (the same seed gives the same numbers).
    pub seed: u64,
}

/// The answer to a capacity what-if: the changed pool against the unchanged one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    /// The changes asked for, in words (`+256 H100_SXM at shanghai`, `- site guiyang`).
    pub changes: Vec<String>,
    /// Totals of the unchanged pool.
    pub before: ScheduleTotals,
    /// Totals of the changed pool.
    pub after: ScheduleTotals,
    /// Deadlines met after minus before.
    pub deadlines_met_change: i64,
    /// Hours waited after minus before.
    pub wait_change_h: f64,
    /// Cost after minus before, by currency.
    pub cost_change: BTreeMap<String, f64>,
    /// Jobs whose finish moved, with hours (positive = later), in file then name order.
    pub moved: Vec<MovedJob>,
}

/// A job whose finish a what-if moves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MovedJob {
    /// The job.
    pub job: String,
    /// Its spec file.
    pub file: String,
    /// Finish after minus before, hours (positive = later); `None` when one side never finishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_change_h: Option<f64>,
    /// Its deadline verdict before → after, when it changed (`met → missed`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub verdict_change: String,
}
