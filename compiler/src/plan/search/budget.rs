//! A cap on how much a job's plan may search, counted in units of work (an op costed in one
//! setting, a pipeline stage costed over one range of ops, a cell of a partition's programme),
//! never in time: the same spec stops at the same place on every machine, so plans stay
//! deterministic.

use loam_ir::diagnostics::codes;
use loam_ir::display::thousands;
use loam_ir::findings::{PlanDiagnosticIr, SpecField};
use std::cell::Cell;

/// Costings one job's heterogeneous-pipeline search may spend (counted). At about 100 ns a
/// costing this is a few seconds of one core: the shipped examples need at most about 42
/// million (`llama3-405b-pretrain`), a dense model of 1,000 layers on the shipped `xirang` pool
/// less; one of 8,192 layers there reaches it after about 13 s (docs/performance.md).
pub const SEARCH_CAP: u64 = 60_000_000;

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

    /// L3010 when the cap was reached: a warning on the plan of job `job` when the search
    /// `found_plan` (the best of what was costed), an error when it found none (the search may
    /// have stopped before the first plan that fits).
    pub fn finding(&self, job: &str, found_plan: bool) -> Option<PlanDiagnosticIr> {
        if !self.reached() {
            return None;
        }
        let stopped = format!(
            "the search of job `{job}` stopped at its cap of {} costings before it costed every pipeline over two node groups",
            thousands(self.cap as f64)
        );
        let help = "pin a layout field in `parallel { … }` to plan on one node group, or allow fewer device types in `resources.devices`";
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
    use super::WorkBudget;

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
        assert!(budget.finding("h", true).is_none());
        assert!(!budget.spend(4));
        let findings = [budget.finding("h", true), budget.finding("h", false)];
        insta::assert_snapshot!(format!("{findings:#?}"));
    }
}
