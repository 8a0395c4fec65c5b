//! Sentences and short numbers the page and its figures share: where a plan runs, money at a
//! glance, the one-line verdict of a job.

use loam_ir::display::{decimals, hours_or_days, layout_degrees, thousands};
use loam_ir::plan::Plan;

/// Money rounded for a glance: `10.1M CNY`, `950k CNY`, `420 CNY`.
pub fn money_short(amount: f64, currency: &str) -> String {
    let a = amount.abs();
    if a >= 1e6 {
        format!("{}M {currency}", decimals(amount / 1e6, 1))
    } else if a >= 1e4 {
        format!("{}k {currency}", decimals(amount / 1e3, 0))
    } else {
        format!("{} {currency}", decimals(amount, 0))
    }
}

/// `n` with `digits` decimals and thousands separators: `9,439.3` (the page read `9439.3 t CO2`
/// beside `1,727 CNY`).
pub fn grouped(n: f64, digits: usize) -> String {
    let text = decimals(n.abs(), digits);
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let whole: f64 = whole.parse().unwrap_or(0.0);
    let sign = if n < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    if fraction.is_empty() {
        format!("{sign}{}", thousands(whole))
    } else {
        format!("{sign}{}.{fraction}", thousands(whole))
    }
}

/// A count as specs write it: `1T`, `2.5B`, `300K` (`K M B T`, docs/language.md), when one
/// decimal says it exactly; else with thousands separators (`1,234,567`).
pub fn count_short(n: f64) -> String {
    // Counted: the decimal prefixes of the language's count suffixes.
    for (suffix, factor) in [("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)] {
        let tenths = n / factor * 10.0;
        if n.abs() >= factor && (tenths - tenths.round()).abs() < 1e-6 {
            let value = tenths.round() / 10.0;
            return if value.fract() == 0.0 {
                format!("{value:.0}{suffix}")
            } else {
                format!("{value:.1}{suffix}")
            };
        }
    }
    thousands(n)
}

/// Where and how a plan runs, in one line: `768 × Ascend910B + 384 × H800_SXM at guiyang,
/// TP8 PP6 DP32`.
pub fn plan_where(plan: &Plan) -> String {
    let mut sites: Vec<&str> = plan.groups.iter().map(|g| g.site.as_str()).collect();
    sites.dedup();
    let devices: Vec<String> = plan
        .groups
        .iter()
        .map(|g| format!("{} × {}", thousands(g.devices as f64), g.device))
        .collect();
    let mut out = format!("{} at {}", devices.join(" + "), sites.join(" + "));
    if let Some(layout) = &plan.layout {
        out.push_str(", ");
        out.push_str(&layout_degrees(*layout));
    }
    out
}

/// A span of time as every output writes it ([`hours_or_days`]): `3.3 h` under two days (a
/// short job read "0.1 days"), else `24.0 days`.
pub fn days(hours: f64) -> String {
    hours_or_days(hours)
}

/// The verdict of a job in one sentence, with its numbers: where, how long, how much, and the
/// room left before the deadline and the budget.
pub fn verdict(plan: &Plan) -> String {
    if !plan.feasible {
        let first = plan
            .reasons
            .first()
            .cloned()
            .unwrap_or_else(|| "no plan meets the job's limits".to_string());
        return format!("Cannot run as asked: {first}");
    }
    let Some(e) = &plan.estimate else {
        return format!("Runs on {}.", plan_where(plan));
    };
    // The wall-clock time, as `loam plan` and the diff say it: an interruptible job's days in
    // its daily window, not its hours of training (the review read 44.2 days here and 58.9 in
    // `loam plan`).
    let wall_h = plan.wall_time_h().unwrap_or(e.train_time_h);
    let mut out = format!(
        "Runs on {} for {}, costs {}",
        plan_where(plan),
        days(wall_h),
        money_short(e.cost.amount, &e.cost.currency)
    );
    if let Some(goal) = &plan.goal {
        if let Some(d) = goal.deadline_h {
            out.push_str(&format!(
                ", {} before the {}-day deadline",
                days(d - wall_h),
                decimals(d / 24.0, 0)
            ));
        }
        if let Some(b) = goal.budget {
            out.push_str(&format!(
                ", {} under the {} budget",
                money_short(b - e.cost.amount, &e.cost.currency),
                money_short(b, &e.cost.currency)
            ));
        }
    }
    out.push('.');
    out
}
