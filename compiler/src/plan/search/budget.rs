//! Caps on how much a job's plan may search, counted in units of work, never in time: the same
//! spec stops at the same place on every machine, so plans stay deterministic. Two counts, since
//! their units cost different amounts: the heterogeneous pipeline search's (an op costed in one
//! setting, a pipeline stage costed over one range of ops, a cell of a partition's programme,
//! [`WorkBudget`]) and the layout walks' (a shape visited or a layout costed, [`WalkBudget`]).

use super::SearchStats;
use crate::parallel::map_ordered;
use loam_ir::diagnostics::codes;
use loam_ir::display::thousands;
use loam_ir::findings::{PlanDiagnosticIr, SpecField};
use std::cell::Cell;

/// Units one job's heterogeneous-pipeline search may spend (counted: an op costed in one
/// setting, a stage partition's cell, a stage costed over a range of ops, and each evaluation of
/// the plan's objective the search makes to bound a configuration or bisect its pace). Measured
/// on release builds (docs/performance.md): the shipped examples spend at most 0.36 million, the
/// slowest of a grid of 1,728 realistic jobs 6.5 million, a dense model of 8,192 layers on the
/// shipped `xirang` pool 10.2 million in 0.4 s; one of 65,536 layers reaches the cap, as does a
/// spec whose batch has many divisors (55,440 sequences) over hundreds of narrow layers, after
/// about 2 s of one core.
pub const SEARCH_CAP: u64 = 30_000_000;

/// Units the layout walks of one job may spend: its single-type search on each node group and
/// its data-parallel split's search of each group on each batch share (counted: each shape a walk
/// visits and each layout it costs is one). Measured on a release build, a unit is 0.2–0.25 µs
/// of one core (docs/performance.md), so the cap is about 2–2.5 s of walking; the slowest job
/// of the planner's grid of 1,728 realistic jobs spends 2.4 million, every shipped example far
/// less. A valid spec of a few lines with a batch of many divisors (55,440 sequences) over 840
/// narrow layers spent 26.6 million (5.3 s of one core) before the cap.
pub const WALK_CAP: u64 = 10_000_000;

/// Walks that share one part of what is left of [`WALK_CAP`]: the walks of a job run in rounds
/// of at most this many, each walk of a round may spend what is left divided by the round's
/// walks, and each round is charged, in order, when its walks are done. The rounds do not depend
/// on the number of threads, so neither does where a job stops.
pub const WALKS_PER_ROUND: usize = 8;

/// What is left of a job's [`WALK_CAP`].
#[derive(Debug)]
pub struct WalkBudget {
    cap: u64,
    spent: Cell<u64>,
    stopped: Cell<bool>,
}

impl WalkBudget {
    /// A budget of `cap` walk units.
    pub fn new(cap: u64) -> WalkBudget {
        WalkBudget {
            cap,
            spent: Cell::new(0),
            stopped: Cell::new(false),
        }
    }

    /// Units each of a round of `walks` walks may spend: an equal part of what is left, so the
    /// round together never passes the cap; 0 when nothing is left.
    pub fn allowance(&self, walks: usize) -> u64 {
        let left = self.cap.saturating_sub(self.spent.get());
        left / (walks.max(1) as u64)
    }

    /// Charges a finished walk's `units`; `stopped` says it ended at its allowance.
    pub fn charge(&self, units: u64, stopped: bool) {
        self.spent.set(self.spent.get().saturating_add(units));
        if stopped {
            self.stopped.set(true);
        }
    }

    /// Marks that a walk was not run for want of units.
    pub fn skip(&self) {
        self.stopped.set(true);
    }

    /// Whether some walk stopped at its allowance or was not run.
    pub fn reached(&self) -> bool {
        self.stopped.get()
    }

    /// Units spent so far.
    pub fn spent(&self) -> u64 {
        self.spent.get()
    }

    /// The cap.
    pub fn cap(&self) -> u64 {
        self.cap
    }
}

/// Runs `work` on each of `items` as walks under `budget`: in rounds of at most
/// [`WALKS_PER_ROUND`] in item order, each walk of a round given its [`WalkBudget::allowance`]
/// as `work`'s second argument, on up to `threads` threads. Each round is charged, in order,
/// when it is done, with the statistics `work` returns (none for an item that walked nothing);
/// once nothing is left the remaining items are not run (`None`), and the budget says so.
pub(crate) fn walk_in_rounds<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    budget: &WalkBudget,
    work: impl Fn(&T, u64) -> (R, Option<SearchStats>) + Sync,
) -> Vec<Option<R>> {
    let mut done = Vec::with_capacity(items.len());
    for round in items.chunks(WALKS_PER_ROUND) {
        let allowance = budget.allowance(round.len());
        if allowance == 0 {
            budget.skip();
            done.extend(round.iter().map(|_| None));
            continue;
        }
        for (result, stats) in map_ordered(round, threads, |item| work(item, allowance)) {
            if let Some(stats) = stats {
                budget.charge(stats.units(), stats.stopped);
            }
            done.push(Some(result));
        }
    }
    done
}

/// What is left of a job's cap.
#[derive(Debug)]
pub struct WorkBudget {
    cap: u64,
    spent: Cell<u64>,
}

impl WorkBudget {
    /// A budget of `cap` costings.
    pub fn new(cap: u64) -> WorkBudget {
        WorkBudget {
            cap,
            spent: Cell::new(0),
        }
    }

    /// Takes `units` costings; `false` (and nothing taken) when that would pass the cap, and
    /// from then on the budget counts as reached.
    pub fn spend(&self, units: u64) -> bool {
        let total = self.spent.get().saturating_add(units);
        if total > self.cap {
            self.spent.set(self.cap.saturating_add(1));
            return false;
        }
        self.spent.set(total);
        true
    }

    /// Whether some work was refused.
    pub fn reached(&self) -> bool {
        self.spent.get() > self.cap
    }

    /// Costings spent so far.
    pub fn spent(&self) -> u64 {
        self.spent.get().min(self.cap)
    }

    /// The cap.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// L3010 when this cap or the layout walks' (`walks`) was reached, naming which: a warning
    /// on the plan of job `job` when the search `found_plan` (the best of what was costed), an
    /// error when it found none (the search may have stopped before the first plan that fits).
    pub fn finding(
        &self,
        job: &str,
        found_plan: bool,
        walks: &WalkBudget,
    ) -> Option<PlanDiagnosticIr> {
        let pipelines = self.reached().then(|| {
            format!(
                "its cap of {} costings before it costed every pipeline over two node groups",
                thousands(self.cap as f64)
            )
        });
        let layouts = walks.reached().then(|| {
            format!(
                "its cap of {} layouts visited before it visited every layout of its node groups",
                thousands(walks.cap() as f64)
            )
        });
        let stopped = match (layouts, pipelines) {
            (None, None) => return None,
            (Some(one), None) | (None, Some(one)) => {
                format!("the search of job `{job}` stopped at {one}")
            }
            (Some(layouts), Some(pipelines)) => {
                format!("the search of job `{job}` stopped at {layouts}, and at {pipelines}")
            }
        };
        let help = if walks.reached() {
            "pin layout fields in `parallel { … }` (a micro-batch, a data or pipeline degree) to narrow the search, or allow fewer device types in `resources.devices`"
        } else {
            "pin a layout field in `parallel { … }` to plan on one node group, or allow fewer device types in `resources.devices`"
        };
        Some(if found_plan {
            PlanDiagnosticIr::warning(
                codes::plan::SEARCH_CAPPED,
                SpecField::Parallel,
                format!("{stopped}: the plan is the best of those costed"),
                help,
            )
        } else {
            PlanDiagnosticIr::error(
                codes::plan::SEARCH_CAPPED,
                SpecField::Parallel,
                format!("{stopped}, and none of those costed fits"),
                help,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{WalkBudget, WorkBudget};

    #[test]
    fn a_budget_refuses_what_would_pass_its_cap_and_stays_reached() {
        let budget = WorkBudget::new(10);
        assert!(budget.spend(4));
        assert!(budget.spend(6));
        assert!(!budget.reached());
        assert!(!budget.spend(1));
        assert!(budget.reached());
        assert!(!budget.spend(0));
        assert_eq!(budget.spent(), 10);
    }

    #[test]
    fn the_finding_is_a_warning_with_a_plan_and_an_error_without() {
        let budget = WorkBudget::new(3);
        let walks = WalkBudget::new(u64::MAX);
        assert!(budget.finding("h", true, &walks).is_none());
        assert!(!budget.spend(4));
        let findings = [
            budget.finding("h", true, &walks),
            budget.finding("h", false, &walks),
        ];
        insta::assert_snapshot!(format!("{findings:#?}"));
    }

    #[test]
    fn a_walk_budget_shares_what_is_left_among_a_round_and_never_passes_its_cap() {
        let budget = WalkBudget::new(100);
        // A round of three walks: 33 each, 99 at most together.
        assert_eq!(budget.allowance(3), 33);
        budget.charge(33, true);
        budget.charge(20, false);
        budget.charge(33, true);
        assert!(budget.reached());
        assert_eq!(budget.spent(), 86);
        // What is left, 14, split over a round of eight: 1 each.
        assert_eq!(budget.allowance(8), 1);
        assert_eq!(budget.allowance(0), 14);
        budget.charge(14, false);
        assert_eq!(budget.allowance(1), 0);
        let fresh = WalkBudget::new(10);
        assert!(!fresh.reached());
        fresh.skip();
        assert!(fresh.reached());
    }

    #[test]
    fn the_finding_names_the_walks_the_pipelines_or_both() {
        let walks = WalkBudget::new(7);
        let pipelines = WorkBudget::new(3);
        assert!(pipelines.finding("h", true, &walks).is_none());
        walks.charge(7, true);
        let only_walks = pipelines.finding("h", true, &walks);
        assert!(!pipelines.spend(4));
        let both = pipelines.finding("h", false, &walks);
        let findings = [only_walks, both];
        insta::assert_snapshot!(format!("{findings:#?}"));
    }
}
