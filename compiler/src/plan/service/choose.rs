//! Choosing a service's deployment: the goal's ranking, the monthly budget, the Pareto front of
//! throughput per device against latency, and the sentences that explain the choice.

use super::candidates::Deployment;
use super::{Demand, Place};
use loam_ir::display::{latency, money, percent, price};
use loam_ir::types::Optimize;
use std::cmp::Ordering;

/// The most deployments the front lists. Counted: what a reader compares at a glance.
const FRONT_SIZE: usize = 8;

/// The chosen deployment's index, the front's indices (lowest latency first) and `why`; `None`
/// when no deployment meets the targets and the budget.
pub(crate) fn choose(
    demand: &Demand<'_>,
    deployments: &[Deployment<'_>],
) -> Option<(usize, Vec<usize>, String)> {
    let within: Vec<usize> = (0..deployments.len())
        .filter(|&i| {
            deployments
                .get(i)
                .is_some_and(|d| demand.budget.is_none_or(|b| d.cost_per_month(demand) <= b))
        })
        .collect();
    let mut ranked = within.clone();
    ranked.sort_by(|&a, &b| match (deployments.get(a), deployments.get(b)) {
        (Some(x), Some(y)) => compare(demand, x, y, deployments),
        _ => Ordering::Equal,
    });
    let best = *ranked.first()?;
    let front = pareto_front(deployments, &within, best);
    let mut why = why(demand, deployments, &ranked);
    why.push_str(&off_front(demand, deployments, &front, best));
    Some((best, front, why))
}

/// Mean time a request waits for its whole answer at the busiest hour: the latency the `time`
/// goal minimises.
fn response_s(demand: &Demand<'_>, d: &Deployment<'_>) -> f64 {
    d.point.ttft_p50_s + demand.traffic.output[0] * d.point.tpot_p50_s
}

fn compare(
    demand: &Demand<'_>,
    a: &Deployment<'_>,
    b: &Deployment<'_>,
    all: &[Deployment<'_>],
) -> Ordering {
    let cost = |d: &Deployment<'_>| d.cost_per_month(demand);
    let primary = match demand.service.goal.optimize {
        Optimize::Cost => cost(a).total_cmp(&cost(b)),
        Optimize::Time => response_s(demand, a).total_cmp(&response_s(demand, b)),
        Optimize::Carbon => a
            .carbon_kg_per_month(demand)
            .total_cmp(&b.carbon_kg_per_month(demand)),
        Optimize::Balanced => {
            // Each against the best of all: equal weight to a 10 % dearer and a 10 % slower.
            let least_cost = all.iter().map(cost).fold(f64::INFINITY, f64::min);
            let least_time = all
                .iter()
                .map(|d| response_s(demand, d))
                .fold(f64::INFINITY, f64::min);
            let score = |d: &Deployment<'_>| {
                cost(d) / least_cost.max(1e-9) + response_s(demand, d) / least_time.max(1e-9)
            };
            score(a).total_cmp(&score(b))
        }
    };
    primary
        .then_with(|| cost(a).total_cmp(&cost(b)))
        .then_with(|| a.devices().cmp(&b.devices()))
        .then_with(|| a.point.ttft_s.total_cmp(&b.point.ttft_s))
        .then_with(|| a.label().cmp(&b.label()))
}

/// The deployments no other beats in both throughput per device and time per output token,
/// lowest latency first, at most [`FRONT_SIZE`] (the chosen one always among them).
fn pareto_front(deployments: &[Deployment<'_>], within: &[usize], best: usize) -> Vec<usize> {
    let get = |i: usize| deployments.get(i);
    // Compared as the plan states them, so a reader never sees a dominated point.
    let axes = |d: &Deployment<'_>| {
        (
            loam_ir::display::significant(d.throughput_per_device()),
            super::round_ms(d.point.tpot_s),
        )
    };
    let mut front: Vec<usize> = within
        .iter()
        .copied()
        .filter(|&i| {
            let Some(d) = get(i) else { return false };
            let (tp, lat) = axes(d);
            !within.iter().any(|&j| {
                get(j).is_some_and(|o| {
                    let (otp, olat) = axes(o);
                    otp >= tp && olat <= lat && (otp > tp || olat < lat)
                })
            })
        })
        .collect();
    front.sort_by(|&a, &b| match (get(a), get(b)) {
        (Some(x), Some(y)) => x
            .point
            .tpot_s
            .total_cmp(&y.point.tpot_s)
            .then_with(|| x.label().cmp(&y.label())),
        _ => Ordering::Equal,
    });
    if front.len() > FRONT_SIZE {
        // Keep evenly spread points, and the chosen one.
        let step = front.len() as f64 / FRONT_SIZE as f64;
        let mut kept: Vec<usize> = (0..FRONT_SIZE)
            .filter_map(|k| front.get((k as f64 * step) as usize).copied())
            .collect();
        if !kept.contains(&best) && front.contains(&best) {
            kept.pop();
            kept.push(best);
        }
        front = kept;
        front.sort_by(|&a, &b| match (get(a), get(b)) {
            (Some(x), Some(y)) => x.point.tpot_s.total_cmp(&y.point.tpot_s),
            _ => Ordering::Equal,
        });
    }
    if !front.contains(&best) {
        front.push(best);
    }
    front
}

/// When the chosen deployment is not on the front (another yields more per device at no more
/// latency), why it still wins: its devices cost less per token.
fn off_front(
    demand: &Demand<'_>,
    deployments: &[Deployment<'_>],
    front: &[usize],
    best: usize,
) -> String {
    let Some(chosen) = deployments.get(best) else {
        return String::new();
    };
    let dominating = front.iter().filter_map(|&i| deployments.get(i)).find(|o| {
        o.throughput_per_device() > chosen.throughput_per_device()
            && o.point.tpot_s <= chosen.point.tpot_s
    });
    let Some(other) = dominating else {
        return String::new();
    };
    let per_million = |d: &Deployment<'_>| {
        let tokens = d.point.output_tokens_per_s * 3600.0;
        if tokens > 0.0 {
            d.cost_per_hour() / tokens * 1e6
        } else {
            0.0
        }
    };
    format!(
        " It is off the front of throughput per device: {} yields {:.0} output tokens/s per device to its {:.0}, on dearer devices ({} against {} per million output tokens).",
        other.label(),
        other.throughput_per_device(),
        chosen.throughput_per_device(),
        price(per_million(other), &demand.currency),
        price(per_million(chosen), &demand.currency),
    )
}

/// Why the first of `ranked` won, with numbers.
fn why(demand: &Demand<'_>, deployments: &[Deployment<'_>], ranked: &[usize]) -> String {
    let Some(best) = ranked.first().and_then(|&i| deployments.get(i)) else {
        return String::new();
    };
    let c = &demand.currency;
    let goal = demand.service.goal.optimize;
    let measure = |d: &Deployment<'_>| match goal {
        Optimize::Cost | Optimize::Balanced => {
            format!("{} per month", money(d.cost_per_month(demand), c))
        }
        Optimize::Time => format!("{} per answer", latency(response_s(demand, d))),
        Optimize::Carbon => format!("{:.1} t CO2 per month", d.carbon_kg_per_month(demand) / 1e3),
    };
    let adjective = match goal {
        Optimize::Cost => "cheapest",
        Optimize::Time => "fastest",
        Optimize::Carbon => "lowest-carbon",
        Optimize::Balanced => "best balance of cost and latency",
    };
    let mut s = format!(
        "{} ({}) is the {adjective} of {} deployments that meet the targets: {}",
        best.label(),
        best.mode(),
        ranked.len(),
        measure(best)
    );
    let tokens_per_hour = best.point.output_tokens_per_s * 3600.0;
    if tokens_per_hour > 0.0 {
        s.push_str(&format!(
            ", {} per million output tokens",
            price(best.cost_per_hour() / tokens_per_hour * 1e6, c)
        ));
    }
    if let Some(next) = ranked.get(1).and_then(|&i| deployments.get(i)) {
        let (a, b) = (best.cost_per_month(demand), next.cost_per_month(demand));
        if b > 0.0 && goal == Optimize::Cost {
            s.push_str(&format!(
                "; {} below the next, {} at {}",
                percent((b - a) / b),
                next.label(),
                measure(next)
            ));
        } else {
            s.push_str(&format!(
                "; the next is {} at {}",
                next.label(),
                measure(next)
            ));
        }
    }
    s.push('.');
    let pct = demand.service.targets.percentile;
    let mut targets = Vec::new();
    if let Some(t) = demand.ttft {
        targets.push(format!(
            "{pct} TTFT {} of {}",
            latency(best.point.ttft_s),
            latency(t)
        ));
    }
    if let Some(t) = demand.tpot {
        targets.push(format!(
            "{pct} TPOT {} of {}",
            latency(best.point.tpot_s),
            latency(t)
        ));
    }
    if let Some(t) = demand.e2e {
        targets.push(format!(
            "{pct} end-to-end {} of {}",
            latency(best.point.e2e_s),
            latency(t)
        ));
    }
    s.push_str(&format!(
        " At the busiest hour's {:.1} requests/s: {}.",
        best.point.requests_per_s,
        targets.join(", ")
    ));
    if let Some(budget) = demand.budget {
        s.push_str(&format!(
            " The monthly budget of {} leaves {}.",
            money(budget, c),
            money(budget - best.cost_per_month(demand), c)
        ));
    }
    s
}

/// Why no deployment was chosen: each shape's reason, and the budget.
pub(crate) fn infeasible_reasons(
    demand: &Demand<'_>,
    places: &[Place<'_>],
    deployments: &[Deployment<'_>],
    rejected: Vec<String>,
) -> Vec<String> {
    if places.is_empty() {
        return vec![format!(
            "no node group of pool `{}` may serve it: none of the allowed device types and sites runs {} weights on its engine",
            demand.pool.id.value, demand.service.serve.precision.value
        )];
    }
    let mut reasons = Vec::new();
    if let (Some(budget), Some(cheapest)) = (
        demand.budget,
        deployments.iter().min_by(|a, b| {
            a.cost_per_month(demand)
                .total_cmp(&b.cost_per_month(demand))
        }),
    ) {
        reasons.push(format!(
            "the cheapest deployment that meets the targets, {}, costs {} per month, over the budget of {}",
            cheapest.label(),
            money(cheapest.cost_per_month(demand), &demand.currency),
            money(budget, &demand.currency)
        ));
    }
    let mut rejected = rejected;
    rejected.sort();
    rejected.dedup();
    reasons.extend(rejected.into_iter().take(6));
    if reasons.is_empty() {
        reasons.push("no replica shape meets the targets".to_string());
    }
    reasons
}
