//! The typed values of a plan diff that more than one output reads: what happens to each job
//! or service ([`Action`], with its words) and the totals per tenant on each side. `loam-diff`
//! computes them and writes them as text, markdown and JSON; `loam-report` draws them on the
//! diff page. Both read these types, so the page and the other formats say the same verdicts
//! and sum the same fields.

pub mod values;

use crate::plan::Plan;
use std::collections::BTreeMap;

/// What happens to a job, in Terraform's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// A new job (`+`).
    Create,
    /// The same job, planned differently or moved to another file, whose running objects take
    /// the change (`~`).
    Update,
    /// A renamed job, or one whose manifests change where a running job cannot: the old one
    /// goes, the new one comes and resumes from the last checkpoint (`-/+`).
    Replace,
    /// A job that is gone (`-`).
    Delete,
    /// Planned at head, but it cannot run as planned: it misses its deadline or budget, or
    /// nothing in the pool can run it (`!`).
    Infeasible,
    /// Its spec (or the catalogue) does not check at head (`!`).
    Error,
    /// Nothing changed.
    NoOp,
}

impl Action {
    /// The Terraform symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Action::Create => "+",
            Action::Update => "~",
            Action::Replace => "-/+",
            Action::Delete => "-",
            Action::Infeasible | Action::Error => "!",
            Action::NoOp => " ",
        }
    }

    /// The verdict in one word, as the job lines of the pull-request comment lead with it.
    pub fn verdict(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Replace => "replace",
            Action::Delete => "delete",
            Action::Infeasible => "infeasible",
            Action::Error => "error",
            Action::NoOp => "no change",
        }
    }

    /// What the symbol means, for the legend.
    pub fn meaning(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update in place",
            Action::Replace => "destroy and then create replacement",
            Action::Delete => "destroy",
            Action::Infeasible => "infeasible: will not run as planned",
            Action::Error => "does not check; not planned",
            Action::NoOp => "no change",
        }
    }

    /// Terraform's JSON `actions` list.
    pub fn terraform_actions(self) -> &'static [&'static str] {
        match self {
            Action::Create => &["create"],
            Action::Update => &["update"],
            Action::Replace => &["delete", "create"],
            Action::Delete => &["delete"],
            Action::Infeasible => &["infeasible"],
            Action::Error => &["error"],
            Action::NoOp => &["no-op"],
        }
    }
}

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
