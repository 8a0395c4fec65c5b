//! The typed values of a plan diff that more than one output reads: the totals per tenant on
//! each side. `loam-diff` computes them and writes them as text, markdown and JSON; `loam-report`
//! draws them on the diff page. Both read these types, so the page and the other formats sum
//! the same fields.

use crate::plan::Plan;
use std::collections::BTreeMap;

/// The sums over one side's jobs (of one tenant, or all of them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Jobs planned.
    pub jobs: usize,
    /// Device-hours (every device of a job for its train time).
    pub device_hours: f64,
    /// Money, per currency.
    pub cost: BTreeMap<String, f64>,
    /// Energy, kWh.
    pub energy_kwh: f64,
    /// Carbon, kg CO2.
    pub carbon_kg: f64,
}

impl Figures {
    /// Counts `plan` in: one job, and its estimate's device-hours, money, energy and carbon
    /// when it has one.
    pub fn add(&mut self, plan: &Plan) {
        self.jobs += 1;
        let Some(e) = &plan.estimate else { return };
        self.device_hours += plan.device_hours().unwrap_or(0.0);
        *self.cost.entry(e.cost.currency.clone()).or_default() += e.cost.amount;
        self.energy_kwh += e.energy_kwh;
        self.carbon_kg += e.carbon_kg;
    }
}

/// One row of the diff's totals: a tenant's jobs, or all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantTotals {
    /// The tenant; `None` for the total over all tenants.
    pub tenant: Option<String>,
    /// Jobs that change (any verdict but no change).
    pub changed: usize,
    /// At base.
    pub before: Figures,
    /// At head.
    pub after: Figures,
}

impl TenantTotals {
    /// A row with nothing counted yet.
    pub fn new(tenant: Option<String>) -> TenantTotals {
        TenantTotals {
            tenant,
            changed: 0,
            before: Figures::default(),
            after: Figures::default(),
        }
    }
}
