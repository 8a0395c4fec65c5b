//! Re-placement (rule 13 of docs/scheduling.md): a job that cannot start on its plan's node
//! groups may start at once on one of its plan's alternatives, when that finishes earlier than
//! waiting could. Kueue's analogue is flavor fungibility (`whenCanBorrow`/`whenCanPreempt:
//! TryNextFlavor`: a workload that does not fit its first flavor is tried on the next); here the
//! "flavors" are the planner's alternatives, each with its own layout, hours and cost.
//!
//! A job moves at most once. One that was preempted before it moves starts over there (its
//! checkpoints are where it ran; carrying them along is migration, rule 14, which the schedule
//! does only for a running interruptible job, `sim/moves.rs`).
//! A job with a daily window never moves (its plan chose the window's hours for its site).

use super::job::EPS_H;
use crate::admission::place::{Demand, Ledger, PoolRules, Share};
use loam_ir::display::{hours_or_days, percent_signed};
use loam_ir::plan::Plan;
use std::rc::Rc;

/// One alternative a job may start on instead of its plan's node groups.
#[derive(Debug, Clone)]
pub(crate) struct Alternative {
    /// What it takes of each node group and device type, by the admission rules.
    pub(crate) demand: Demand,
    /// Hours from the move until trained, at the expected throughput: the alternative's
    /// `time_h` (its data transfer, then its training with the expected failures). The move
    /// holds the devices for all of it: the alternatives state only the total.
    pub(crate) hours: f64,
    /// Devices it holds.
    pub(crate) devices: u64,
    /// Sites and device types, joined by `+` (the schedule's `placement`).
    pub(crate) site: String,
    pub(crate) device: String,
    pub(crate) node_groups: Vec<String>,
    /// What it costs in the plan's currency, when stated.
    pub(crate) cost: Option<f64>,
    /// Its cost against the plan's, as a fraction (0.03 = 3 % more), when both are stated.
    pub(crate) cost_change: Option<f64>,
}

/// A job moved to an alternative.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Moved {
    /// Index into the job's alternatives.
    pub(crate) alternative: usize,
    /// When it moved (and started).
    pub(crate) at_h: f64,
    /// The earliest its plan's node groups could have started it: when enough of the running
    /// jobs finish or give their devices back (a lower bound: later arrivals are ignored).
    pub(crate) planned_start_h: f64,
    /// That start plus its plan's hours: the earliest it could have finished by waiting.
    pub(crate) planned_finish_h: f64,
    /// The move's start plus the alternative's hours.
    pub(crate) finish_h: f64,
    /// Its deadline (an instant), when it has one.
    pub(crate) deadline_at_h: Option<f64>,
    /// Hours of work it had done on its plan's node groups before a preemption, which it
    /// does again on the alternative; for a migration, the work since its last checkpoint.
    pub(crate) redone_h: f64,
    /// For a migration of a running job (rule 14): the waiting job it made room for, and the
    /// hours sooner that one starts.
    pub(crate) migrated_for: Option<(usize, f64)>,
}

impl Moved {
    /// Hours earlier it finishes than the earliest it could by waiting.
    pub(crate) fn earlier_h(&self) -> f64 {
        self.planned_finish_h - self.finish_h
    }

    /// In words: "starts 4.0 days earlier at guiyang (256 × H800_SXM on gy-h800-a), finishes at
    /// least 3.1 days earlier, +3.0 % cost"; `name` names a job by its index.
    pub(crate) fn why(&self, alternative: &Alternative, name: &dyn Fn(usize) -> String) -> String {
        if let Some((other, gain_h)) = self.migrated_for {
            let mut text = format!(
                "migrated at hour {} from its last checkpoint to {} ({} × {} on {}) so that `{}` \
                 could start {} sooner; finishes {} later ({} of work redone and a restart)",
                loam_ir::display::significant(self.at_h),
                alternative.site,
                alternative.devices,
                alternative.device,
                alternative.node_groups.join(" + "),
                name(other),
                hours_or_days(gain_h),
                hours_or_days(-self.earlier_h()),
                hours_or_days(self.redone_h),
            );
            if let Some(change) = alternative.cost_change {
                text.push_str(&format!(", {} cost", percent_signed(change)));
            }
            return text;
        }
        let mut text = format!(
            "starts {} earlier at {} ({} × {} on {}), finishes at least {} earlier",
            hours_or_days(self.planned_start_h - self.at_h),
            alternative.site,
            alternative.devices,
            alternative.device,
            alternative.node_groups.join(" + "),
            hours_or_days(self.earlier_h()),
        );
        if let Some(change) = alternative.cost_change {
            text.push_str(&format!(", {} cost", percent_signed(change)));
        }
        if self.redone_h > EPS_H {
            text.push_str(&format!(
                "; starts over there, redoing the {} of work done before its preemption",
                hours_or_days(self.redone_h)
            ));
        }
        if let Some(deadline) = self.deadline_at_h
            && self.finish_h > deadline + EPS_H
        {
            text.push_str(&format!(
                "; misses its deadline there too, by {}, but by less than waiting",
                hours_or_days(self.finish_h - deadline)
            ));
        }
        text
    }
}

/// The alternatives of `plan` the schedule may start its job on, in the planner's order: those
/// that state their node groups and hours, are within the spec's budget (the planner's
/// `over-budget` ones never are), and that the admission rules could ever place (the same
/// checks as the plan's own groups). None for a job with a daily window.
pub(crate) fn alternatives_of(rules: &PoolRules, plan: &Plan) -> Vec<Alternative> {
    if plan.schedule.is_some() {
        return Vec::new();
    }
    let plan_cost = plan.estimate.as_ref().map(|e| e.cost.amount);
    let budget = plan.goal.as_ref().and_then(|g| g.budget);
    plan.alternatives
        .iter()
        .filter(|a| a.lost_on != "over-budget")
        .filter(|a| match (budget, a.cost) {
            (Some(budget), Some(cost)) => cost <= budget,
            _ => true,
        })
        .filter_map(|a| {
            let hours = a.time_h.filter(|h| h.is_finite() && *h > 0.0)?;
            let shares: Vec<Share<'_>> = a
                .placement
                .iter()
                .map(|p| Share {
                    node_group: &p.node_group,
                    device: &p.device,
                    devices: p.devices,
                })
                .collect();
            if shares.is_empty() {
                return None;
            }
            let demand = rules.demand_on(plan, &shares).ok()?;
            let joined = |f: &dyn Fn(&loam_ir::plan::AlternativePlacementIr) -> &str| {
                let mut seen: Vec<&str> = Vec::new();
                for p in &a.placement {
                    if !seen.contains(&f(p)) {
                        seen.push(f(p));
                    }
                }
                seen.join("+")
            };
            Some(Alternative {
                demand,
                hours,
                devices: a.placement.iter().map(|p| p.devices).sum(),
                site: joined(&|p| p.site.as_str()),
                device: joined(&|p| p.device.as_str()),
                node_groups: a.placement.iter().map(|p| p.node_group.clone()).collect(),
                cost: a.cost,
                cost_change: match (a.cost, plan_cost) {
                    (Some(mine), Some(theirs)) if theirs > 0.0 => Some(mine / theirs - 1.0),
                    _ => None,
                },
            })
        })
        .collect()
}

/// What deciding a move reads.
pub(crate) struct Ask<'a> {
    pub(crate) rules: &'a PoolRules,
    /// Every job's demand as it runs now (a moved job's is its alternative's).
    pub(crate) demands: &'a [Option<Demand>],
    pub(crate) ledger: &'a Ledger,
    /// `(hour, job)`: when each running job finishes or gives its devices back, in time order;
    /// worked out only when a move or a migration is possible (sorting every running job for
    /// each waiting one was most of a pool's simulation).
    pub(crate) releases: &'a dyn Fn() -> Rc<[(f64, usize)]>,
    pub(crate) t: f64,
    /// Hours of work left on its plan's placement (this run's: expected or sampled).
    pub(crate) work_h: f64,
    /// Hours of work its plan's placement takes in all in this run (more than `work_h` when
    /// it ran before a preemption).
    pub(crate) planned_h: f64,
    /// This run's hours over the expected ones (a sample's throughput and failures draw), by
    /// which the alternatives' hours are scaled too.
    pub(crate) scale: f64,
    pub(crate) deadline_at_h: Option<f64>,
}

/// The first of `alternatives` (the planner's order) that fits now and finishes before the
/// earliest instant the job could finish on `planned` (its plan's demand) by waiting.
pub(crate) fn choose(
    planned: &Demand,
    alternatives: &[Alternative],
    ask: &Ask<'_>,
) -> Option<Moved> {
    // Most waiting jobs have no alternative that fits now; finding that out is cheap, so it
    // comes before the instant waiting would finish.
    let mut fitting = alternatives
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            ask.ledger
                .fits(&a.demand, &ask.rules.quotas, &ask.rules.groups)
                .is_ok()
        })
        .peekable();
    fitting.peek()?;
    let planned_start_h = earliest_start(planned, ask);
    let planned_finish_h = planned_start_h + ask.work_h;
    // Never for a placeable job (see `earliest_start`); a move needs a finite gain to state.
    if !planned_finish_h.is_finite() {
        return None;
    }
    fitting.find_map(|(k, a)| {
        let finish_h = ask.t + a.hours * ask.scale;
        (finish_h < planned_finish_h - EPS_H).then_some(Moved {
            alternative: k,
            at_h: ask.t,
            planned_start_h,
            planned_finish_h,
            finish_h,
            deadline_at_h: ask.deadline_at_h,
            redone_h: (ask.planned_h - ask.work_h).max(0.0),
            migrated_for: None,
        })
    })
}

/// The earliest instant `d` could fit as far as the running jobs decide it: for each node
/// group, the tenant's quota and the cohort of each device type it lacks, the instant enough
/// of the jobs holding them have finished or given them back. `f64::INFINITY` when even all of
/// them would not do (the rules' never-admissible checks exclude that for a placeable job).
pub(crate) fn earliest_start(d: &Demand, ask: &Ask<'_>) -> f64 {
    let Ask {
        rules,
        demands,
        ledger,
        releases,
        t,
        ..
    } = *ask;
    let releases = releases();
    // The instant `short` devices are given back by running jobs, counting what `held` says
    // each holds.
    let freed_by = |short: u64, held: &dyn Fn(&Demand) -> u64| -> f64 {
        if short == 0 {
            return t;
        }
        let mut freed = 0;
        for &(at, j) in releases.iter() {
            if let Some(Some(other)) = demands.get(j) {
                freed += held(other);
                if freed >= short {
                    return at.max(t);
                }
            }
        }
        f64::INFINITY
    };
    let mut start = t;
    for (name, &needs) in &d.per_group {
        let capacity = rules.groups.get(name).map_or(0, |g| g.devices);
        let short = (ledger.group_used(name) + needs).saturating_sub(capacity);
        start = start.max(freed_by(short, &|o| {
            o.per_group.get(name).copied().unwrap_or(0)
        }));
    }
    for (device, &needs) in &d.per_device {
        let q = rules.quotas.get(&d.tenant, device);
        let short =
            (ledger.used_by(&d.tenant, device) + needs).saturating_sub(q.guaranteed + q.elastic);
        start = start.max(freed_by(short, &|o| {
            if o.tenant == d.tenant {
                o.per_device.get(device).copied().unwrap_or(0)
            } else {
                0
            }
        }));
        let used = ledger.device_used.get(device).copied().unwrap_or(0);
        let short = (used + needs).saturating_sub(rules.quotas.cohort(device));
        start = start.max(freed_by(short, &|o| {
            o.per_device.get(device).copied().unwrap_or(0)
        }));
    }
    start
}
