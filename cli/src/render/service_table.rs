//! Service plans as aligned text and as Markdown: the verdict, the deployment, latency against
//! the targets, throughput, cost, autoscaling, why, and the Pareto front.

use loam_ir::display::{latency, money, price, thousands};
use loam_ir::plan::{ParetoPointIr, RoleIr, ServicePlan};
use loam_ir::types::ServiceMode;
use std::fmt::Write as _;

fn row(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "  {key:<12} {value}");
}

/// `5 × MI300X (tp1)` for one role, with its node group.
fn role_text(role: &RoleIr) -> String {
    let mut degrees = format!("tp{}", role.tensor);
    if role.pipeline > 1 {
        let _ = write!(degrees, " pp{}", role.pipeline);
    }
    if role.expert > 1 {
        let _ = write!(degrees, " ep{}", role.expert);
    }
    let prefix = if role.role == "serve" {
        String::new()
    } else {
        format!("{} ", role.role)
    };
    format!(
        "{prefix}{} × {} ({degrees}, {} device{} each)",
        role.replicas,
        role.group.device,
        role.devices_per_replica,
        if role.devices_per_replica == 1 {
            ""
        } else {
            "s"
        }
    )
}

/// Where the service runs, in one line.
pub fn deploy_line(plan: &ServicePlan) -> String {
    let roles: Vec<String> = plan.roles.iter().map(role_text).collect();
    let mut groups: Vec<String> = plan
        .roles
        .iter()
        .map(|r| format!("{} ({})", r.group.site, r.group.node_group))
        .collect();
    groups.dedup();
    format!(
        "{}: {} at {}, pool {}",
        plan.mode.map_or("none", ServiceMode::as_str),
        roles.join(" + "),
        groups.join(", "),
        plan.pool
    )
}

/// Latency against the targets, in one line.
pub fn latency_line(plan: &ServicePlan) -> Option<String> {
    let e = plan.estimate.as_ref()?;
    let t = &plan.traffic;
    let pct = t.percentile;
    let against = |value: f64, target: Option<f64>| match target {
        Some(target) => format!("{} of {}", latency(value), latency(target)),
        None => latency(value),
    };
    Some(format!(
        "{pct} TTFT {} · {pct} TPOT {} · {pct} end-to-end {} (median TTFT {}, TPOT {})",
        against(e.ttft_s, t.ttft_s),
        against(e.tpot_s, t.tpot_s),
        against(e.e2e_s, t.e2e_s),
        latency(e.ttft_p50_s),
        latency(e.tpot_p50_s)
    ))
}

/// Throughput at the busiest hour, in one line.
pub fn throughput_line(plan: &ServicePlan) -> Option<String> {
    let e = plan.estimate.as_ref()?;
    Some(format!(
        "{:.1} requests/s at the busiest hour · {} output tokens/s · {} per device · decode batch {:.0}",
        plan.traffic.peak_rate,
        thousands(e.output_tokens_per_s),
        thousands(e.output_tokens_per_s_per_device),
        e.batch
    ))
}

/// Cost, energy and carbon, in one line.
pub fn cost_line(plan: &ServicePlan) -> Option<String> {
    let e = plan.estimate.as_ref()?;
    Some(format!(
        "{} per month · {} per million output tokens · {} per hour at the busiest · {:.1} MWh · {:.1} t CO2 per month",
        money(e.cost_per_month.amount, &e.cost_per_month.currency),
        price(
            e.cost_per_million_tokens.amount,
            &e.cost_per_million_tokens.currency
        ),
        price(e.cost_per_hour.amount, &e.cost_per_hour.currency),
        e.energy_kwh_per_month / 1e3,
        e.carbon_kg_per_month / 1e3
    ))
}

/// Replicas over the day, in one line.
pub fn autoscale_line(plan: &ServicePlan) -> Option<String> {
    let a = plan.autoscaling.as_ref()?;
    let ranges: Vec<String> = plan
        .roles
        .iter()
        .zip(a.min_replicas.iter().zip(&a.max_replicas))
        .map(|(r, (lo, hi))| {
            let name = if r.role == "serve" {
                "replicas"
            } else {
                &r.role
            };
            if lo == hi {
                format!("{name} {hi}")
            } else {
                format!("{name} {lo}–{hi}")
            }
        })
        .collect();
    Some(format!(
        "{} over the day · scale at {:.0} requests in flight per replica",
        ranges.join(", "),
        a.target_concurrency_per_replica
    ))
}

/// The engine's settings, in one line.
pub fn engine_line(plan: &ServicePlan) -> String {
    let batches: Vec<String> = plan
        .roles
        .iter()
        .map(|r| format!("{} {}", r.role, r.max_batch))
        .collect();
    format!(
        "{} · {} weights · {} KV cache · max context {} · max sequences {}",
        plan.engine,
        plan.model.precision,
        plan.model.kv_cache,
        thousands(plan.model.max_model_len as f64),
        if plan.roles.len() == 1 {
            plan.roles
                .first()
                .map_or(String::new(), |r| r.max_batch.to_string())
        } else {
            batches.join(", ")
        }
    )
}

fn pareto_row(p: &ParetoPointIr) -> String {
    format!(
        "{} {:>9} tok/s/device · TPOT {:>7} · TTFT {:>7} · {:>10} per M tokens · {}",
        if p.chosen { "▸" } else { " " },
        thousands(p.output_tokens_per_s_per_device),
        latency(p.tpot_s),
        latency(p.ttft_s),
        price(
            p.cost_per_million_tokens.amount,
            &p.cost_per_million_tokens.currency
        ),
        p.deployment
    )
}

/// One service plan as a block of aligned lines.
pub fn render_service(plan: &ServicePlan) -> String {
    let mut out = String::new();
    let verdict = if plan.feasible {
        "feasible"
    } else {
        "INFEASIBLE"
    };
    let _ = writeln!(out, "{} ({}): service, {verdict}", plan.service, plan.file);
    if !plan.feasible {
        for reason in &plan.reasons {
            row(&mut out, "why not", reason);
        }
    }
    if plan.feasible {
        row(&mut out, "deploy", &deploy_line(plan));
        row(&mut out, "engine", &engine_line(plan));
    }
    for (key, line) in [
        ("latency", latency_line(plan)),
        ("throughput", throughput_line(plan)),
        ("cost", cost_line(plan)),
        ("autoscale", autoscale_line(plan)),
    ] {
        if let Some(line) = line {
            row(&mut out, key, &line);
        }
    }
    if !plan.why.is_empty() {
        row(&mut out, "why", &plan.why);
    }
    for note in &plan.notes {
        row(&mut out, "note", note);
    }
    if !plan.pareto.is_empty() {
        row(
            &mut out,
            "pareto",
            "throughput per device against latency (▸ chosen):",
        );
        for p in &plan.pareto {
            let _ = writeln!(out, "    {}", pareto_row(p));
        }
    }
    out
}

/// Every service plan, separated by blank lines, with a summary line.
pub fn render(services: &[ServicePlan]) -> String {
    let blocks: Vec<String> = services.iter().map(render_service).collect();
    let infeasible = services.iter().filter(|p| !p.feasible).count();
    let n = services.len();
    let mut out = blocks.join("\n");
    let _ = writeln!(
        out,
        "\nplanned {n} service{}: {} feasible, {infeasible} infeasible",
        if n == 1 { "" } else { "s" },
        n - infeasible,
    );
    // Names, tenants and reasons come from PR-writable specs and catalogues: no control
    // character of theirs reaches a terminal or a comment raw.
    loam_ir::display::visible_lines(&out).into_owned()
}

/// Every service plan as Markdown sections.
pub fn markdown(services: &[ServicePlan]) -> String {
    let mut out = String::new();
    for plan in services {
        let verdict = if plan.feasible {
            "✅ feasible"
        } else {
            "❌ infeasible"
        };
        let _ = writeln!(out, "### service `{}` — {verdict}\n", plan.service);
        let _ = writeln!(out, "`{}`\n", plan.file);
        for reason in &plan.reasons {
            let _ = writeln!(out, "- {reason}");
        }
        if plan.feasible {
            let _ = writeln!(out, "| | |\n| --- | --- |");
            let _ = writeln!(out, "| deploy | {} |", deploy_line(plan));
            let _ = writeln!(out, "| engine | {} |", engine_line(plan));
            for (key, line) in [
                ("latency", latency_line(plan)),
                ("throughput", throughput_line(plan)),
                ("cost", cost_line(plan)),
                ("autoscale", autoscale_line(plan)),
            ] {
                if let Some(line) = line {
                    let _ = writeln!(out, "| {key} | {line} |");
                }
            }
            let _ = writeln!(out);
        }
        if !plan.why.is_empty() {
            let _ = writeln!(out, "{}\n", plan.why);
        }
        if !plan.pareto.is_empty() {
            let _ = writeln!(
                out,
                "<details><summary>Pareto front ({} deployments)</summary>\n",
                plan.pareto.len()
            );
            let _ = writeln!(
                out,
                "| | deployment | tok/s per device | TPOT | TTFT | per M tokens | per month |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |"
            );
            for p in &plan.pareto {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    if p.chosen { "▸" } else { "" },
                    p.deployment,
                    thousands(p.output_tokens_per_s_per_device),
                    latency(p.tpot_s),
                    latency(p.ttft_s),
                    price(
                        p.cost_per_million_tokens.amount,
                        &p.cost_per_million_tokens.currency
                    ),
                    money(p.cost_per_month.amount, &p.cost_per_month.currency)
                );
            }
            let _ = writeln!(out, "\n</details>\n");
        }
    }
    // Names, tenants and reasons come from PR-writable specs and catalogues: no control
    // character of theirs reaches a terminal or a comment raw.
    loam_ir::display::visible_lines(&out).into_owned()
}
