//! What a plan is judged by: its outcome (time, money, energy, carbon) and the job's goal and
//! limits, the same for plans on one node group and plans over two.
//!
//! Deadline and budget are hard constraints: an outcome that breaks one scores above every
//! outcome that breaks none, by how far it misses, so when nothing meets them the best entry is
//! the closest miss and its numbers become the reasons.

use super::goodput::{Failures, Run};
use super::search::{Candidate, Economics};
use loam_ir::types::Optimize;

/// Scores at or above this break the deadline or the budget.
pub(crate) const PENALTY: f64 = 1e100;

/// What a plan costs to run, whole run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Outcome {
    /// Wall-clock seconds until trained (data transfer first).
    pub(crate) time_s: f64,
    /// Money, in the plan's currency.
    pub(crate) cost: f64,
    /// Energy in kWh.
    pub(crate) energy_kwh: f64,
    /// CO2 in kg.
    pub(crate) carbon_kg: f64,
}

/// The job's goal and hard limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    pub(crate) optimize: Optimize,
    pub(crate) deadline_s: Option<f64>,
    pub(crate) budget: Option<f64>,
}

impl Limits {
    /// The objective without the constraints (lower is better).
    pub(crate) fn raw(&self, o: &Outcome) -> f64 {
        match self.optimize {
            Optimize::Time => o.time_s,
            Optimize::Cost => o.cost,
            // The product of hours and money: halving either is worth the same.
            Optimize::Balanced => o.time_s / 3600.0 * o.cost,
            Optimize::Carbon => o.carbon_kg,
        }
    }

    /// How far past the deadline and the budget, as shares (0 when met).
    pub(crate) fn misses(&self, o: &Outcome) -> (f64, f64) {
        let late = self
            .deadline_s
            .map_or(0.0, |d| (o.time_s / d.max(1.0) - 1.0).max(0.0));
        let over = self
            .budget
            .map_or(0.0, |b| (o.cost / b.max(1e-9) - 1.0).max(0.0));
        (late, over)
    }

    /// The score: the raw objective when every limit holds, else above [`PENALTY`].
    pub(crate) fn score(&self, o: &Outcome) -> f64 {
        let (late, over) = self.misses(o);
        if late > 0.0 || over > 0.0 {
            PENALTY * (1.0 + late + over)
        } else {
            self.raw(o)
        }
    }
}

/// The objective of one node group: its economics plus the fixed time and cost of bringing the
/// data there.
pub(crate) struct Constrained {
    pub(crate) economics: Economics,
    /// Seconds spent moving data before training starts.
    pub(crate) transfer_s: f64,
    /// Money spent moving data (egress).
    pub(crate) transfer_cost: f64,
    pub(crate) limits: Limits,
}

impl Constrained {
    /// The outcome of a homogeneous layout.
    pub(crate) fn outcome(&self, c: &Candidate) -> Outcome {
        let t = self.economics.totals(c);
        Outcome {
            time_s: t.wall_s + self.transfer_s,
            cost: t.cost + self.transfer_cost,
            energy_kwh: t.energy_kwh,
            carbon_kg: t.carbon_kg,
        }
    }
}

impl super::search::Objective for Constrained {
    fn score(&self, c: &Candidate) -> f64 {
        self.limits.score(&self.outcome(c))
    }
}

/// The objective of a pipeline over two node groups: each group's economics, the data brought
/// to the first group's site, and the egress of the activations that cross the WAN.
pub(crate) struct PairObjective {
    pub(crate) economics: [Economics; 2],
    pub(crate) transfer_s: f64,
    /// Data transfer and WAN egress, whole run.
    pub(crate) fixed_cost: f64,
}

impl PairObjective {
    /// The run of `devices` of each group training `train_s` seconds without failures.
    pub(crate) fn run(&self, devices: [u64; 2], train_s: f64) -> Run {
        Failures::pair_run(
            [&self.economics[0].failures, &self.economics[1].failures],
            devices,
            train_s,
        )
    }
}

impl PairObjective {
    /// The outcome of using `devices` of each group for `train_s` seconds.
    pub(crate) fn outcome(&self, devices: [u64; 2], train_s: f64) -> Outcome {
        // The devices are held for the wall time, failures included.
        let train_s = self.run(devices, train_s).wall_s;
        let mut o = Outcome {
            time_s: train_s + self.transfer_s,
            cost: self.fixed_cost,
            energy_kwh: 0.0,
            carbon_kg: 0.0,
        };
        for (e, n) in self.economics.iter().zip(devices) {
            let hours = train_s / 3600.0 * n as f64;
            let kwh = hours * e.watts_per_device / 1000.0;
            o.cost += hours * e.price_per_device_hour;
            o.energy_kwh += kwh;
            o.carbon_kg += kwh * e.carbon_g_per_kwh / 1000.0;
        }
        o
    }
}
