//! What a change costs in total: the device-hours, money, energy and carbon of every planned job
//! before and after, per tenant and for the whole repository, the first table a reviewer reads.
//!
//! Every job planned on a side counts on that side, infeasible ones with the best plan the
//! planner found (what the change asks for; the verdict says it will not run). A job whose
//! spec does not check at head counts with its base plan on both sides (its cost is not saved,
//! only unknown); a new spec that does not check counts nowhere.

use super::compare::{Action, PlanDiff};
use super::side::Side;
use loam_ir::display::{decimals, signed, significant, thousands};
use loam_ir::plan::Plan;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The sums over one side's jobs.
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
    fn add(&mut self, plan: &Plan) {
        self.jobs += 1;
        let Some(e) = &plan.estimate else { return };
        self.device_hours += plan.device_hours().unwrap_or(0.0);
        *self.cost.entry(e.cost.currency.clone()).or_default() += e.cost.amount;
        self.energy_kwh += e.energy_kwh;
        self.carbon_kg += e.carbon_kg;
    }
}

/// One row of the totals: a tenant's jobs, or all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The tenant; `None` for the total.
    pub tenant: Option<String>,
    /// Jobs that change (any verdict but no change).
    pub changed: usize,
    /// At base.
    pub before: Figures,
    /// At head.
    pub after: Figures,
}

/// The rows: one per tenant with a job on either side (sorted), then the total.
pub fn totals(diff: &PlanDiff, base: &Side, head: &Side) -> Vec<Row> {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut total = Row::new(None);
    // A job that does not check at head is not gone: it counts with its base plan on both
    // sides, so the totals do not show its cost as saved.
    let unchecked = diff
        .jobs
        .iter()
        .filter(|j| j.action == Action::Error)
        .filter_map(|j| j.before.as_ref());
    for plan in &base.plans {
        row(&mut rows, &plan.tenant).before.add(plan);
        total.before.add(plan);
    }
    for plan in head.plans.iter().chain(unchecked) {
        row(&mut rows, &plan.tenant).after.add(plan);
        total.after.add(plan);
    }
    for job in diff.changed() {
        let Some(plan) = job.after.as_ref().or(job.before.as_ref()) else {
            continue;
        };
        row(&mut rows, &plan.tenant).changed += 1;
        total.changed += 1;
    }
    let mut out: Vec<Row> = rows.into_values().collect();
    out.push(total);
    out
}

/// The row of `tenant`, made empty on first use.
fn row<'a>(rows: &'a mut BTreeMap<String, Row>, tenant: &str) -> &'a mut Row {
    rows.entry(tenant.to_string())
        .or_insert_with(|| Row::new(Some(tenant.to_string())))
}

/// `before → after (+delta, +pct %)`, or the one value when it did not change.
fn cell(before: f64, after: f64, show: &dyn Fn(f64) -> String) -> String {
    if show(before) == show(after) {
        return show(after);
    }
    let delta = after - before;
    let sign = if delta < 0.0 { "-" } else { "+" };
    let pct = if before == 0.0 {
        String::new()
    } else {
        format!(", {} %", signed(delta / before.abs() * 100.0, 1))
    };
    format!(
        "{} → {} ({sign}{}{pct})",
        show(before),
        show(after),
        show(delta.abs())
    )
}

/// [`cell`] for other modules' totals (the services' per month).
pub fn cell_text(before: f64, after: f64, show: &dyn Fn(f64) -> String) -> String {
    cell(before, after, show)
}

/// Money per currency, before → after, the currencies of either side sorted; `—` for none.
pub fn cost_cells(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> String {
    let mut currencies: Vec<&String> = before.keys().chain(after.keys()).collect();
    currencies.sort();
    currencies.dedup();
    if currencies.is_empty() {
        return "—".into();
    }
    currencies
        .iter()
        .map(|c| {
            let get = |f: &BTreeMap<String, f64>| f.get(*c).copied().unwrap_or(0.0);
            format!("{} {c}", cell(get(before), get(after), &thousands))
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Energy held in kWh, before → after, in MWh.
pub fn mwh(before_kwh: f64, after_kwh: f64) -> String {
    format!(
        "{} MWh",
        cell(before_kwh / 1000.0, after_kwh / 1000.0, &amount)
    )
}

/// Carbon held in kg, before → after, in t CO2.
pub fn tonnes(before_kg: f64, after_kg: f64) -> String {
    format!(
        "{} t CO2",
        cell(before_kg / 1000.0, after_kg / 1000.0, &amount)
    )
}

/// Whole with separators from a hundred up, else one decimal.
fn amount(n: f64) -> String {
    if n.abs() >= 100.0 {
        thousands(n)
    } else {
        decimals(n, 1)
    }
}

impl Row {
    fn new(tenant: Option<String>) -> Row {
        Row {
            tenant,
            changed: 0,
            before: Figures::default(),
            after: Figures::default(),
        }
    }

    /// The currencies either side spends, sorted.
    fn currencies(&self) -> Vec<&String> {
        let mut currencies: Vec<&String> = self
            .before
            .cost
            .keys()
            .chain(self.after.cost.keys())
            .collect();
        currencies.sort();
        currencies.dedup();
        currencies
    }

    /// The row's name: the tenant, or `total`.
    pub fn name(&self) -> &str {
        self.tenant.as_deref().unwrap_or("total")
    }

    /// Device-hours, before → after.
    pub fn device_hours(&self) -> String {
        cell(self.before.device_hours, self.after.device_hours, &amount)
    }

    /// Money per currency, before → after (`17,746,000 → 35,477,000 CNY (+…)`).
    pub fn cost(&self) -> String {
        let currencies = self.currencies();
        if currencies.is_empty() {
            return "—".into();
        }
        currencies
            .iter()
            .map(|c| {
                let get = |f: &Figures| f.cost.get(*c).copied().unwrap_or(0.0);
                format!(
                    "{} {c}",
                    cell(get(&self.before), get(&self.after), &thousands)
                )
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Energy in MWh, before → after.
    pub fn energy(&self) -> String {
        format!(
            "{} MWh",
            cell(
                self.before.energy_kwh / 1000.0,
                self.after.energy_kwh / 1000.0,
                &amount
            )
        )
    }

    /// Carbon in t CO2, before → after.
    pub fn carbon(&self) -> String {
        format!(
            "{} t CO2",
            cell(
                self.before.carbon_kg / 1000.0,
                self.after.carbon_kg / 1000.0,
                &amount
            )
        )
    }

    /// The row as JSON, in the units of the diff's vocabulary, rounded to 5 significant digits.
    pub fn to_json(&self) -> Value {
        let side = |f: &Figures| {
            let cost: BTreeMap<&String, f64> =
                f.cost.iter().map(|(c, a)| (c, significant(*a))).collect();
            json!({
                "jobs": f.jobs,
                "device_hours": significant(f.device_hours),
                "cost": cost,
                "energy_mwh": significant(f.energy_kwh / 1000.0),
                "carbon_t": significant(f.carbon_kg / 1000.0),
            })
        };
        let cost_delta: BTreeMap<&String, f64> = self
            .currencies()
            .into_iter()
            .map(|c| {
                let get = |f: &Figures| f.cost.get(c).copied().unwrap_or(0.0);
                (c, significant(get(&self.after) - get(&self.before)))
            })
            .collect();
        json!({
            "tenant": self.tenant,
            "jobs_changed": self.changed,
            "before": side(&self.before),
            "after": side(&self.after),
            "delta": {
                "jobs": self.after.jobs as i64 - self.before.jobs as i64,
                "device_hours": significant(self.after.device_hours - self.before.device_hours),
                "cost": cost_delta,
                "energy_mwh": significant((self.after.energy_kwh - self.before.energy_kwh) / 1000.0),
                "carbon_t": significant((self.after.carbon_kg - self.before.carbon_kg) / 1000.0),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_shows_both_sides_and_the_change_only_when_they_differ() {
        assert_eq!(cell(10.0, 10.0, &amount), "10.0");
        assert_eq!(cell(200.0, 300.0, &amount), "200 → 300 (+100, +50.0 %)");
        assert_eq!(cell(300.0, 200.0, &amount), "300 → 200 (-100, -33.3 %)");
        assert_eq!(cell(0.0, 5.0, &amount), "0.0 → 5.0 (+5.0)");
    }
}
