//! The alternatives: time to train against cost for the chosen plan and every costed plan that
//! lost, with the deadline and budget lines and the time–cost front; each point lettered, the
//! letters explained under the drawing with the layout and why it lost.

use super::scatter::{Limit, Plot, Point, draw};
use crate::figure::{Figure, Kind, Table};
use crate::svg::Svg;
use crate::text::{money_short, plan_where};
use loam_ir::display::{decimals, money};
use loam_ir::plan::Plan;

/// Money in the unit the axis counts in: `(divisor, name)`.
pub(crate) fn money_unit(max: f64) -> (f64, &'static str) {
    if max >= 2e6 {
        (1e6, "millions")
    } else if max >= 2e3 {
        (1e3, "thousands")
    } else {
        (1.0, "")
    }
}

/// The time–cost front of `(time, cost)` points: those no other point beats on both (ties on
/// both count once), fastest first.
pub fn front(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut by_time = points.to_vec();
    by_time.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for p in by_time {
        if out.last().is_none_or(|last| p.1 < last.1) {
            out.push(p);
        }
    }
    out
}

/// The figure, or `None` when the plan has no estimate or no alternative with a time and cost
/// (a plan written before format 1.9).
pub fn figure(id: &str, plan: &Plan) -> Option<Figure> {
    let e = plan.estimate.as_ref()?;
    let currency = &e.cost.currency;
    let costed: Vec<_> = plan
        .alternatives
        .iter()
        .filter_map(|a| Some((a, a.time_h?, a.cost?)))
        .collect();
    if costed.is_empty() {
        return None;
    }
    // Wall-clock hours, as every output gives them ([`Plan::wall_time_h`]). An interruptible
    // job trains only in its daily window; its alternatives would run in the same window, so
    // their training hours are stretched by the chosen plan's wall-to-training ratio and the
    // deadline line compares like with like.
    let chosen_time = plan.wall_time_h().unwrap_or(e.train_time_h);
    let window_stretch = if plan.schedule.is_some() && e.train_time_h > 0.0 {
        chosen_time / e.train_time_h
    } else {
        1.0
    };
    let costed: Vec<_> = costed
        .into_iter()
        .map(|(a, time, cost)| (a, time * window_stretch, cost))
        .collect();
    let chosen_cost = e.cost.amount;
    let budget = plan.goal.as_ref().and_then(|g| g.budget);
    let deadline = plan.goal.as_ref().and_then(|g| g.deadline_h);
    let max_cost = costed
        .iter()
        .map(|(_, _, c)| *c)
        .chain([chosen_cost])
        .chain(budget)
        .fold(0.0, f64::max);
    let (unit, unit_name) = money_unit(max_cost);
    let letter = |k: usize| char::from(b'A' + (k % 26) as u8).to_string();
    let mut points = vec![Point {
        x: chosen_time / 24.0,
        y: chosen_cost / unit,
        label: "chosen".to_string(),
        chosen: true,
        tip: format!(
            "chosen: {}, {} days, {}",
            plan_where(plan),
            decimals(chosen_time / 24.0, 1),
            money(chosen_cost, currency)
        ),
    }];
    let mut legend = vec![format!(
        "chosen — {}: {} days, {}",
        plan_where(plan),
        decimals(chosen_time / 24.0, 1),
        money_short(chosen_cost, currency)
    )];
    let mut table = Table::new(
        &[
            "mark",
            "shape",
            "layout and placement",
            "days",
            "cost",
            "t CO2",
            "lost on",
            "why not",
        ],
        &[false, false, false, true, true, true, false, false],
    );
    table.row(vec![
        "chosen".to_string(),
        plan.hetero
            .map_or_else(|| "single-type".to_string(), |h| h.to_string()),
        plan_where(plan),
        decimals(chosen_time / 24.0, 1),
        money(chosen_cost, currency),
        decimals(e.carbon_kg / 1e3, 1),
        String::new(),
        String::new(),
    ]);
    for (k, (a, time, cost)) in costed.iter().enumerate() {
        let mark = letter(k);
        points.push(Point {
            x: time / 24.0,
            y: cost / unit,
            label: mark.clone(),
            chosen: false,
            tip: format!("{mark}: {} — {}", a.summary, a.why_not),
        });
        legend.push(format!(
            "{mark} — {} ({}): {}",
            a.summary, a.shape, a.why_not
        ));
        table.row(vec![
            mark,
            a.shape.clone(),
            a.summary.clone(),
            decimals(time / 24.0, 1),
            money(*cost, currency),
            a.carbon_kg
                .map(|c| decimals(c / 1e3, 1))
                .unwrap_or_default(),
            a.lost_on.clone(),
            a.why_not.clone(),
        ]);
    }
    let front = front(&points.iter().map(|p| (p.x, p.y)).collect::<Vec<_>>());
    let mut limits = Vec::new();
    if let Some(d) = deadline {
        limits.push(Limit {
            vertical: true,
            value: d / 24.0,
            label: format!("deadline {} days", decimals(d / 24.0, 0)),
        });
    }
    if let Some(b) = budget {
        limits.push(Limit {
            vertical: false,
            value: b / unit,
            label: format!("budget {}", money_short(b, currency)),
        });
    }
    let y_title = if unit_name.is_empty() {
        format!("cost ({currency})")
    } else {
        format!("cost ({currency}, {unit_name})")
    };
    let plot = Plot {
        x_title: "time to train (days)".to_string(),
        y_title,
        points,
        limits,
        front,
        stairs: true,
    };
    let mut svg = Svg::new(id, 760.0, 360.0);
    draw(&mut svg, [10.0, 14.0, 740.0, 340.0], &plot);
    let beaten = costed.len();
    let desc = format!(
        "The chosen plan takes {} days and costs {}; {beaten} costed alternative{} lost: {}.",
        decimals(chosen_time / 24.0, 1),
        money(chosen_cost, currency),
        if beaten == 1 { "" } else { "s" },
        costed
            .iter()
            .map(|(a, _, _)| format!("{} ({})", a.shape, a.why_not))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let window = match &plan.schedule {
        Some(w) => format!(
            " The job trains {} h a day, so its times are wall-clock days in that window: {} of training take {} days, and each alternative's training time is stretched alike.",
            w.hours_per_day,
            crate::text::days(e.train_time_h),
            decimals(chosen_time / 24.0, 1)
        ),
        None => String::new(),
    };
    let goal = plan
        .goal
        .as_ref()
        .map(|g| g.optimize.to_string())
        .unwrap_or_else(|| "time".to_string());
    Some(Figure {
        kind: Kind::Alternatives,
        title: "The alternatives".to_string(),
        svg: svg.finish(
            &format!("Time against cost of the plans costed for {}", plan.job),
            &desc,
        ),
        caption: format!(
            "Each point is the best plan of one shape or place; lower left is better. The goal is {goal}. The green staircase joins the plans nothing beats on both time and cost; dashed red-orange lines are the deadline and budget; both axes start at zero.{window}"
        ),
        legend,
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::front;
    use proptest::prelude::*;

    proptest! {
        /// Nothing beats a point of the front on both axes, and every other point is beaten by
        /// one on the front.
        #[test]
        fn the_front_is_exactly_the_undominated_points(points in prop::collection::vec((1.0f64..100.0, 1.0f64..100.0), 1..20)) {
            let f = front(&points);
            let beats = |a: &(f64, f64), b: &(f64, f64)| a.0 <= b.0 && a.1 <= b.1 && a != b;
            for p in &f {
                prop_assert!(!points.iter().any(|q| beats(q, p)), "{p:?} is beaten");
            }
            for p in &points {
                prop_assert!(f.contains(p) || f.iter().any(|q| beats(q, p)), "{p:?} is neither on the front nor beaten by it");
            }
        }
    }
}
