//! What a change costs in total: the device-hours, money, energy and carbon of every planned job
//! before and after, per tenant and for the whole repository, the first table a reviewer reads.
//!
//! Every job planned on a side counts on that side, infeasible ones with the best plan the
//! planner found (what the change asks for; the verdict says it will not run). A job whose
//! spec does not check at head counts with its base plan on both sides (its cost is not saved,
//! only unknown); a new spec that does not check counts nowhere.

use super::compare::PlanDiff;
use super::side::Side;
use loam_ir::diff::Action;
use loam_ir::diff::{Figures, TenantTotals};
use loam_ir::display::{decimals, signed, significant, thousands};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The rows: one per tenant with a job on either side (sorted), then the total.
pub fn totals(diff: &PlanDiff, base: &Side, head: &Side) -> Vec<TenantTotals> {
    let mut rows: BTreeMap<String, TenantTotals> = BTreeMap::new();
    let mut total = TenantTotals::new(None);
    // A job that does not check at head is not gone: it counts with its base plan on both
    // sides, so the totals do not show its cost as saved.
    let unchecked = diff
        .jobs
        .iter()
        .filter(|j| j.action == Action::Error)
        .filter_map(|j| j.before.as_ref());
    for plan in base.plans() {
        row(&mut rows, &plan.tenant).before.add(plan);
        total.before.add(plan);
    }
    for plan in head.plans().iter().chain(unchecked) {
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
    let mut out: Vec<TenantTotals> = rows.into_values().collect();
    out.push(total);
    out
}

/// The row of `tenant`, made empty on first use.
fn row<'a>(rows: &'a mut BTreeMap<String, TenantTotals>, tenant: &str) -> &'a mut TenantTotals {
    rows.entry(tenant.to_string())
        .or_insert_with(|| TenantTotals::new(Some(tenant.to_string())))
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

/// A row of the totals as the text, markdown and JSON write it.
pub trait Cells {
    /// The row's name: the tenant, or `total`.
    fn name(&self) -> &str;
    /// Device-hours, before → after.
    fn device_hours(&self) -> String;
    /// Money per currency, before → after (`17,746,000 → 35,477,000 CNY (+…)`).
    fn cost(&self) -> String;
    /// Energy in MWh, before → after.
    fn energy(&self) -> String;
    /// Carbon in t CO2, before → after.
    fn carbon(&self) -> String;
    /// The row as JSON, in the units of the diff's vocabulary, rounded to 5 significant digits.
    fn to_json(&self) -> Value;
}

/// The currencies either side of `row` spends, sorted.
fn currencies(row: &TenantTotals) -> Vec<&String> {
    let mut currencies: Vec<&String> = row
        .before
        .cost
        .keys()
        .chain(row.after.cost.keys())
        .collect();
    currencies.sort();
    currencies.dedup();
    currencies
}

impl Cells for TenantTotals {
    fn name(&self) -> &str {
        self.tenant.as_deref().unwrap_or("total")
    }

    fn device_hours(&self) -> String {
        cell(self.before.device_hours, self.after.device_hours, &amount)
    }

    fn cost(&self) -> String {
        let currencies = currencies(self);
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

    fn energy(&self) -> String {
        format!(
            "{} MWh",
            cell(
                self.before.energy_kwh / 1000.0,
                self.after.energy_kwh / 1000.0,
                &amount
            )
        )
    }

    fn carbon(&self) -> String {
        format!(
            "{} t CO2",
            cell(
                self.before.carbon_kg / 1000.0,
                self.after.carbon_kg / 1000.0,
                &amount
            )
        )
    }

    fn to_json(&self) -> Value {
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
        let cost_delta: BTreeMap<&String, f64> = currencies(self)
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
