//! The diff's figures: each changed job before and after (time, cost, devices), and the totals
//! per tenant before and after.

use super::bars::panel;
use crate::JobChange;
use crate::figure::{Figure, Kind, Table};
use crate::svg::Svg;
use crate::text::money_short;
use loam_ir::diff::{Figures, TenantTotals};
use loam_ir::display::{decimals, money, thousands};
use loam_ir::plan::Plan;

fn devices(plan: &Plan) -> u64 {
    plan.groups.iter().map(|g| g.devices).sum()
}

/// A changed job before and after; `None` when neither side has an estimate.
pub fn job(id: &str, change: &JobChange<'_>) -> Option<Figure> {
    let sides: Vec<(&str, &Plan)> = [("before", change.before), ("after", change.after)]
        .into_iter()
        .filter_map(|(name, plan)| Some((name, plan?)))
        .filter(|(_, p)| p.estimate.is_some())
        .collect();
    if sides.is_empty() {
        return None;
    }
    let row = |f: &dyn Fn(&Plan) -> (f64, String)| -> Vec<(String, f64, String, bool)> {
        sides
            .iter()
            .map(|(name, plan)| {
                let (v, text) = f(plan);
                (name.to_string(), v, text, *name == "after")
            })
            .collect()
    };
    let time = row(&|p| {
        let h = p.wall_time_h().unwrap_or(0.0);
        (h / 24.0, format!("{} days", decimals(h / 24.0, 1)))
    });
    let cost = row(&|p| {
        p.estimate.as_ref().map_or((0.0, String::new()), |e| {
            (e.cost.amount, money_short(e.cost.amount, &e.cost.currency))
        })
    });
    let count = row(&|p| {
        (
            devices(p) as f64,
            format!("{} devices", thousands(devices(p) as f64)),
        )
    });
    let mut svg = Svg::new(id, 760.0, 10.0);
    let mut y = panel(&mut svg, 0.0, "time to train (days)", &time);
    y = panel(&mut svg, y, "cost", &cost);
    y = panel(&mut svg, y, "devices", &count);
    svg.ensure_height(y);
    let mut table = Table::new(&["field", "before", "after"], &[false, false, false]);
    for field in change.changes {
        let (before, after) = loam_ir::diff::values::sides(field);
        table.row(vec![field.key.clone(), before, after]);
    }
    if table.rows.is_empty() {
        for (name, plan) in &sides {
            table.row(vec![
                format!("plan {name}"),
                if *name == "before" {
                    crate::text::plan_where(plan)
                } else {
                    String::new()
                },
                if *name == "after" {
                    crate::text::plan_where(plan)
                } else {
                    String::new()
                },
            ]);
        }
    }
    let desc = sides
        .iter()
        .map(|(name, plan)| {
            let e = plan.estimate.as_ref();
            format!(
                "{name}: {}, {} days, {}",
                crate::text::plan_where(plan),
                decimals(plan.wall_time_h().unwrap_or(0.0) / 24.0, 1),
                e.map_or(String::new(), |e| money(e.cost.amount, &e.cost.currency))
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(Figure {
        kind: Kind::Diff,
        title: "Before and after".to_string(),
        svg: svg.finish(&format!("{} before and after", change.job), &format!("{desc}.")),
        caption: "The job's time to train, cost and devices at the base (blue) and at the head (orange) of the change.".to_string(),
        legend: Vec::new(),
        table,
    })
}

/// The totals per tenant before and after.
pub fn totals(id: &str, rows: &[TenantTotals]) -> Option<Figure> {
    if rows.is_empty() {
        return None;
    }
    let name = |r: &TenantTotals| {
        r.tenant
            .clone()
            .unwrap_or_else(|| "all tenants".to_string())
    };
    let currency = rows
        .iter()
        .flat_map(|r| r.before.cost.keys().chain(r.after.cost.keys()))
        .next()
        .cloned()
        .unwrap_or_default();
    let mut cost = Vec::new();
    let mut hours = Vec::new();
    for r in rows {
        for (side, f, after) in [("before", &r.before, false), ("after", &r.after, true)] {
            let amount = f.cost.get(&currency).copied().unwrap_or(0.0);
            cost.push((
                format!("{} {side}", name(r)),
                amount,
                money_short(amount, &currency),
                after,
            ));
            hours.push((
                format!("{} {side}", name(r)),
                f.device_hours,
                format!("{} device-h", thousands(f.device_hours)),
                after,
            ));
        }
    }
    let mut svg = Svg::new(id, 760.0, 10.0);
    let mut y = panel(&mut svg, 0.0, &format!("cost ({currency})"), &cost);
    y = panel(&mut svg, y, "device-hours", &hours);
    svg.ensure_height(y);
    let mut table = Table::new(
        &[
            "tenant",
            "jobs changed",
            "cost before",
            "cost after",
            "device-h before",
            "device-h after",
            "t CO2 before",
            "t CO2 after",
        ],
        &[false, true, true, true, true, true, true, true],
    );
    for r in rows {
        let money_of = |f: &Figures| {
            f.cost
                .iter()
                .map(|(c, a)| money(*a, c))
                .collect::<Vec<_>>()
                .join(" + ")
        };
        table.row(vec![
            name(r),
            r.changed.to_string(),
            money_of(&r.before),
            money_of(&r.after),
            thousands(r.before.device_hours),
            thousands(r.after.device_hours),
            decimals(r.before.carbon_kg / 1e3, 1),
            decimals(r.after.carbon_kg / 1e3, 1),
        ]);
    }
    let desc = rows
        .iter()
        .map(|r| {
            format!(
                "{}: {} → {}",
                name(r),
                money_short(
                    r.before.cost.get(&currency).copied().unwrap_or(0.0),
                    &currency
                ),
                money_short(
                    r.after.cost.get(&currency).copied().unwrap_or(0.0),
                    &currency
                )
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(Figure {
        kind: Kind::Totals,
        title: "Totals per tenant".to_string(),
        svg: svg.finish("Cost and device-hours per tenant, before and after", &format!("{desc}.")),
        caption: "Each tenant's cost and device-hours at the base (blue) and at the head (orange); the last pair is every tenant together.".to_string(),
        legend: Vec::new(),
        table,
    })
}
