//! The plan report: one self-contained HTML page with SVG figures drawn by loam, for the people
//! who decide on a plan (the lead who approves the spend, the engineer who checks the placement,
//! the reviewer of a pull request).
//!
//! The page needs no network, no script and no external font: every figure is inline SVG with a
//! caption that says what to see, a text alternative and the table of numbers behind it. The
//! crate does no I/O: the CLI plans (or diffs) and passes the values in; the same values give the
//! same bytes.

mod figure;
mod figures;
mod page;
mod pool;
mod svg;
#[cfg(test)]
mod tests;
mod text;

use loam_ir::cluster::ClusterMap;
use loam_ir::diff::values::{Change, Value};
use loam_ir::diff::{Action, TenantTotals};
use loam_ir::plan::{Plan, PlanDocument};

/// What a plan page shows: every job and service of one planned document.
#[derive(Debug, Clone)]
pub struct PlanPage<'a> {
    /// The page's title, e.g. the paths planned.
    pub title: &'a str,
    /// The plans.
    pub document: &'a PlanDocument,
    /// The catalogue the plans were made against, as its map
    /// (`loam_compiler::catalogue::facts::cluster_map`): sites, node groups and WAN links for
    /// the placement map, device memory for the memory figure. Without it the map shows only
    /// what the plans use.
    pub cluster: Option<&'a ClusterMap>,
    /// Errors and warnings of checking and planning, shown above the plans: a page of a
    /// project with errors says so first.
    pub problems: Vec<Problem>,
    /// Every job scheduled together over time (`loam schedule`), drawn as the section "The
    /// pool over time": a utilisation heatmap and a Gantt chart per site. `None` leaves it out.
    pub schedule: Option<&'a loam_ir::schedule::Schedule>,
}

/// One diagnostic as the page lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// An error (boxed first) rather than a warning (folded under the errors).
    pub error: bool,
    /// The diagnostic on one line: `error[L2001] jobs/a.loam:12:3: …`.
    pub line: String,
}

/// What a diff page shows: the verdict, the totals per tenant, and before/after per job.
#[derive(Debug, Clone)]
pub struct DiffPage<'a> {
    /// The page's title.
    pub title: &'a str,
    /// The base side, as the text diff names it (`main (3f2a1c9)`).
    pub base: &'a str,
    /// The head side.
    pub head: &'a str,
    /// One line: what the change does (`2 to update, 1 to create`), as the markdown leads with.
    pub verdict: &'a str,
    /// The reviewer's headline after the verdict (cost deltas, admission outcome, a deadline at
    /// risk, the top cost driver), as the markdown's third line; empty for none.
    pub headline: &'a str,
    /// Every job on either side, changed ones first.
    pub jobs: Vec<JobChange<'a>>,
    /// Every service whose plan changes (or does not check), in file order.
    pub services: Vec<ServiceChange>,
    /// Unchanged jobs left out of `jobs` (a large repository's page would list hundreds of
    /// "no change" rows); said in one row.
    pub unchanged_left_out: usize,
    /// The totals per tenant, then the total (tenant `None`).
    pub tenants: Vec<TenantTotals>,
    /// The catalogue at head as its map, for the changed jobs' figures.
    pub cluster: Option<&'a ClusterMap>,
    /// Errors at either side, shown first.
    pub problems: Vec<Problem>,
    /// What the change does to every job scheduled together over time (`loam schedule`'s rules,
    /// docs/scheduling.md), one line each, the deadlines and waiting first; empty when the
    /// schedule does not change. The caller bounds it.
    pub schedule: Vec<String>,
}

/// One service's change between the sides, as the other formats write it.
#[derive(Debug, Clone)]
pub struct ServiceChange {
    /// What happens to it: `create`, `update`, `delete`, `infeasible`, `error`, written with
    /// Terraform's symbol.
    pub action: Action,
    /// The service's name.
    pub service: String,
    /// Its file.
    pub file: String,
    /// Devices at the busiest hour, before and after (`—` on the page when absent).
    pub devices: (Option<Value>, Option<Value>),
    /// Cost per month, before and after (`—` on the page when absent).
    pub cost_per_month: (Option<Value>, Option<Value>),
    /// The attributes that change, typed; the page writes them as the text diff does
    /// ([`loam_ir::diff::values::sides`]).
    pub changes: Vec<Change>,
}

/// One job's change between the sides.
#[derive(Debug, Clone)]
pub struct JobChange<'a> {
    /// What happens to it: `create`, `update`, `replace`, `delete`, `infeasible`, `error` or
    /// no change, written with Terraform's symbol.
    pub action: Action,
    /// The job's name.
    pub job: &'a str,
    /// Its file.
    pub file: &'a str,
    /// Its plan at base.
    pub before: Option<&'a Plan>,
    /// Its plan at head.
    pub after: Option<&'a Plan>,
    /// The fields that differ, typed; the page writes them as the text diff does
    /// ([`loam_ir::diff::values::sides`]).
    pub changes: &'a [Change],
    /// A remark (`moved from a.loam`).
    pub note: Option<&'a str>,
}

/// The HTML page of a plan.
pub fn plan_page(page: &PlanPage<'_>) -> String {
    page::plan(page)
}

/// The HTML page of a plan diff.
pub fn diff_page(page: &DiffPage<'_>) -> String {
    page::diff(page)
}
