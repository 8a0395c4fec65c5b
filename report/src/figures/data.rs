//! Data gravity: run where the data is, copy the data, or split over two sites, side by side in
//! time, money and carbon.

use super::bars::panel;
use crate::figure::{Figure, Kind, Table};
use crate::svg::Svg;
use crate::text::money_short;
use loam_ir::display::{decimals, money};
use loam_ir::plan::Plan;

/// What a strategy means, for people.
fn meaning(strategy: &str) -> &'static str {
    match strategy {
        "move-compute" => "run where the data is",
        "move-data" => "copy the data over the WAN",
        "cached" => "use a copy already there",
        "split" => "split the pipeline over two sites",
        _ => "",
    }
}

/// The figure, when the job reads data.
pub fn figure(id: &str, plan: &Plan) -> Option<Figure> {
    let data = plan.data.as_ref()?;
    if data.options.is_empty() {
        return None;
    }
    let currency = plan
        .estimate
        .as_ref()
        .map_or("", |e| e.cost.currency.as_str());
    // A pipeline over two groups of one site names the site twice.
    let label = |o: &loam_ir::plan::DataOptionIr| {
        let mut sites: Vec<&str> = o.site.split('+').collect();
        sites.dedup();
        format!("{} → {}", o.strategy, sites.join("+"))
    };
    // The bars draw no deadline line: a strategy past the deadline says so on its bar, so a
    // cheaper option that misses it does not read as the better deal (gitops review,
    // finding 13: "move-data → zhongwei" at 44.7 days against a 40-day deadline).
    let deadline_h = plan.goal.as_ref().and_then(|g| g.deadline_h);
    let time: Vec<_> = data
        .options
        .iter()
        .map(|o| {
            let late = match deadline_h {
                Some(d) if o.time_h > d => {
                    format!(", past the {}-day deadline", decimals(d / 24.0, 0))
                }
                _ => String::new(),
            };
            (
                label(o),
                o.time_h / 24.0,
                format!("{} days{late}", decimals(o.time_h / 24.0, 1)),
                o.chosen,
            )
        })
        .collect();
    let cost: Vec<_> = data
        .options
        .iter()
        .map(|o| (label(o), o.cost, money_short(o.cost, currency), o.chosen))
        .collect();
    let carbon: Vec<_> = data
        .options
        .iter()
        .filter_map(|o| {
            Some((
                label(o),
                o.carbon_kg?,
                format!("{} t CO2", decimals(o.carbon_kg? / 1e3, 1)),
                o.chosen,
            ))
        })
        .collect();
    let mut svg = Svg::new(id, 760.0, 10.0);
    let mut y = panel(
        &mut svg,
        0.0,
        &match deadline_h {
            Some(d) => format!(
                "time to train, transfer included (days; deadline {} days)",
                decimals(d / 24.0, 0)
            ),
            None => "time to train, transfer included (days)".to_string(),
        },
        &time,
    );
    y = panel(
        &mut svg,
        y,
        &format!("cost, egress included ({currency})"),
        &cost,
    );
    if carbon.len() == data.options.len() {
        y = panel(&mut svg, y, "carbon (t CO2)", &carbon);
    }
    svg.ensure_height(y);
    let mut table = Table::new(
        &[
            "strategy",
            "site",
            "transfer GB",
            "transfer h",
            "egress",
            "days",
            "cost",
            "t CO2",
            "chosen",
        ],
        &[false, false, true, true, true, true, true, true, false],
    );
    for o in &data.options {
        table.row(vec![
            o.strategy.clone(),
            o.site.clone(),
            decimals(o.transfer_gb, 0),
            decimals(o.transfer_h, 1),
            money(o.egress, currency),
            decimals(o.time_h / 24.0, 1),
            money(o.cost, currency),
            o.carbon_kg
                .map(|c| decimals(c / 1e3, 1))
                .unwrap_or_default(),
            if o.chosen { "yes" } else { "" }.to_string(),
        ]);
    }
    let chosen = data.options.iter().find(|o| o.chosen);
    let desc = data
        .options
        .iter()
        .map(|o| {
            format!(
                "{} ({}) at {}: {} days, {}",
                o.strategy,
                meaning(&o.strategy),
                o.site,
                decimals(o.time_h / 24.0, 1),
                money(o.cost, currency)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(Figure {
        kind: Kind::Data,
        title: "Move the data or the compute".to_string(),
        svg: svg.finish(
            &format!("Data strategies for {}", plan.job),
            &format!("{desc}."),
        ),
        caption: format!(
            "The best plan of each way to bring data and compute together; the orange bar is the one chosen{}.",
            chosen
                .map(|o| format!(" ({}: {})", o.strategy, meaning(&o.strategy)))
                .unwrap_or_default()
        ),
        legend: Vec::new(),
        table,
    })
}
