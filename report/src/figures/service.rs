//! A service's deployments: cost per month against TPOT and against TTFT,
//! with the targets, the front of deployments that meet them, and the chosen one.

use super::scatter::{Limit, Plot, Point, draw};
use crate::figure::{Figure, Kind, Table};
use crate::svg::Svg;
use loam_ir::display::{latency, money, price, thousands};
use loam_ir::plan::ServicePlan;

/// The figure, for a service with a front.
pub fn figure(id: &str, plan: &ServicePlan) -> Option<Figure> {
    if plan.pareto.is_empty() {
        return None;
    }
    let t = &plan.traffic;
    let pct = t.percentile.to_string();
    let letter = |k: usize| char::from(b'A' + (k % 26) as u8).to_string();
    let marks: Vec<String> = plan
        .pareto
        .iter()
        .enumerate()
        .map(|(k, p)| {
            if p.chosen {
                "chosen".to_string()
            } else {
                letter(k)
            }
        })
        .collect();
    // Cost per month on the x axis, as the planner ranks deployments (its off-peak scale-down
    // included): tokens/s per device at the peak drew the cheapest deployment left of, and so
    // seemingly dominated by, a dearer one (gitops review, finding 13).
    let max_cost = plan
        .pareto
        .iter()
        .map(|p| p.cost_per_month.amount)
        .fold(0.0, f64::max);
    let (unit, unit_name) = super::alternatives::money_unit(max_cost);
    let currency = plan
        .pareto
        .first()
        .map_or("", |p| p.cost_per_month.currency.as_str());
    let x_title = if unit_name.is_empty() {
        format!("cost per month ({currency})")
    } else {
        format!("cost per month ({currency}, {unit_name})")
    };
    let panel = |metric: &str,
                 value: &dyn Fn(&loam_ir::plan::ParetoPointIr) -> f64,
                 target: Option<f64>| {
        let mut points: Vec<Point> = plan
            .pareto
            .iter()
            .zip(&marks)
            .map(|(p, mark)| Point {
                x: p.cost_per_month.amount / unit,
                y: value(p) * 1e3,
                label: mark.clone(),
                chosen: p.chosen,
                tip: format!(
                    "{mark}: {} — {} per month, {} tokens/s per device, {metric} {}",
                    p.deployment,
                    money(p.cost_per_month.amount, &p.cost_per_month.currency),
                    thousands(p.output_tokens_per_s_per_device),
                    latency(value(p))
                ),
            })
            .collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        // Joined: the deployments nothing beats on both cost and this latency.
        let front =
            super::alternatives::front(&points.iter().map(|p| (p.x, p.y)).collect::<Vec<_>>());
        Plot {
            x_title: x_title.clone(),
            y_title: format!("{pct} {metric} (ms)"),
            points,
            limits: target
                .map(|v| Limit {
                    vertical: false,
                    value: v * 1e3,
                    label: format!("target {}", latency(v)),
                })
                .into_iter()
                .collect(),
            front,
            stairs: false,
        }
    };
    let tpot = panel("TPOT", &|p| p.tpot_s, t.tpot_s);
    let ttft = panel("TTFT", &|p| p.ttft_s, t.ttft_s);
    let mut svg = Svg::new(id, 760.0, 640.0);
    draw(&mut svg, [10.0, 14.0, 740.0, 300.0], &tpot);
    draw(&mut svg, [10.0, 334.0, 740.0, 300.0], &ttft);
    let mut table = Table::new(
        &[
            "mark",
            "deployment",
            "mode",
            "devices",
            "tokens/s per device",
            "TTFT",
            "TPOT",
            "per M tokens",
            "per month",
        ],
        &[false, false, false, true, true, true, true, true, true],
    );
    let mut legend = Vec::new();
    for (p, mark) in plan.pareto.iter().zip(&marks) {
        legend.push(format!(
            "{mark} — {} ({}): {} tokens/s per device, TTFT {}, TPOT {}, {} per million tokens",
            p.deployment,
            p.mode,
            thousands(p.output_tokens_per_s_per_device),
            latency(p.ttft_s),
            latency(p.tpot_s),
            price(
                p.cost_per_million_tokens.amount,
                &p.cost_per_million_tokens.currency
            )
        ));
        table.row(vec![
            mark.clone(),
            p.deployment.clone(),
            p.mode.to_string(),
            p.devices.to_string(),
            thousands(p.output_tokens_per_s_per_device),
            latency(p.ttft_s),
            latency(p.tpot_s),
            price(
                p.cost_per_million_tokens.amount,
                &p.cost_per_million_tokens.currency,
            ),
            money(p.cost_per_month.amount, &p.cost_per_month.currency),
        ]);
    }
    let targets: Vec<String> = [
        ("TTFT", t.ttft_s),
        ("TPOT", t.tpot_s),
        ("end-to-end", t.e2e_s),
    ]
    .iter()
    .filter_map(|(n, v)| v.map(|v| format!("{pct} {n} ≤ {}", latency(v))))
    .collect();
    let chosen = plan.pareto.iter().find(|p| p.chosen);
    let desc = format!(
        "{} deployments meet the targets ({}); the chosen one, {}, gives {} output tokens/s per device.",
        plan.pareto.len(),
        targets.join(", "),
        chosen.map_or("none", |p| p.deployment.as_str()),
        chosen.map_or("0".to_string(), |p| thousands(
            p.output_tokens_per_s_per_device
        ))
    );
    Some(Figure {
        kind: Kind::Service,
        title: "Cost against latency".to_string(),
        svg: svg.finish(&format!("Deployments of {}", plan.service), &desc),
        caption: format!(
            "Each point is a deployment that meets the targets ({}); left is cheaper (cost per month, with the scale-down off the peak hour), lower is faster, and both axes start at zero. The chosen one is the orange diamond; dashed red-orange lines are the targets.",
            targets.join(", ")
        ),
        legend,
        table,
    })
}
