//! The plan as Markdown, for pull-request comments.

use super::plan_table::{efficiency_lines, failures_line, schedule_line, time_text, where_line};
use loam_ir::display::{money, plan_layout_line, thousands};
use loam_ir::plan::{Plan, PlanDocument};
use std::fmt::Write;

fn render_plan(out: &mut String, plan: &Plan) {
    let verdict = if plan.feasible {
        "✅ feasible"
    } else {
        "❌ infeasible"
    };
    let _ = writeln!(out, "### `{}` — {verdict}\n", plan.job);
    let _ = writeln!(out, "`{}`\n", plan.file);
    for reason in &plan.reasons {
        let _ = writeln!(out, "- {reason}");
    }
    if !plan.reasons.is_empty() {
        out.push('\n');
    }
    if plan.layout.is_none() {
        return;
    }
    let _ = writeln!(out, "| | |\n| --- | --- |");
    let _ = writeln!(out, "| where | {} |", where_line(plan));
    let _ = writeln!(out, "| layout | {} |", plan_layout_line(plan));
    if let Some(e) = &plan.estimate {
        if let Some(time) = time_text(plan) {
            let _ = writeln!(out, "| time | {time} |");
        }
        let _ = writeln!(
            out,
            "| cost | {} · {} MWh · {} t CO2 |",
            money(e.cost.amount, &e.cost.currency),
            thousands(e.energy_kwh / 1000.0),
            thousands(e.carbon_kg / 1000.0)
        );
        let _ = writeln!(
            out,
            "| efficiency | {} |",
            efficiency_lines(plan).join("<br>")
        );
    }
    if let Some(line) = schedule_line(plan) {
        let _ = writeln!(out, "| schedule | {line} |");
    }
    if let Some(d) = &plan.data {
        let _ = writeln!(
            out,
            "| data | {} ({} GB moved) |",
            d.strategy,
            thousands(d.transfer_gb)
        );
    }
    if let Some(c) = &plan.checkpoint {
        let _ = writeln!(
            out,
            "| checkpoint | every {:.0} min to `{}` |",
            c.interval_min, c.path
        );
    }
    if let Some(line) = failures_line(plan) {
        let _ = writeln!(out, "| failures | {line} |");
    }
    if !plan.why.is_empty() {
        let _ = writeln!(out, "| why | {} |", plan.why);
    }
    for note in &plan.notes {
        let _ = writeln!(out, "| note | {note} |");
    }
    if !plan.alternatives.is_empty() {
        let _ = writeln!(out, "\n<details><summary>alternatives</summary>\n");
        for a in &plan.alternatives {
            let _ = writeln!(out, "- [{}] {}: {}", a.shape, a.summary, a.why_not);
        }
        let _ = writeln!(out, "\n</details>");
    }
    out.push('\n');
}

/// Every plan of the document as Markdown sections.
pub fn render(doc: &PlanDocument) -> String {
    let mut out = String::from("## loam plan\n\n");
    for plan in &doc.plans {
        render_plan(&mut out, plan);
    }
    let _ = writeln!(out, "<sub>catalogue `{}`</sub>", doc.catalogue_digest);
    // Names, tenants and reasons come from PR-writable specs and catalogues: no control
    // character of theirs reaches a terminal or a comment raw.
    loam_ir::display::visible_lines(&out).into_owned()
}
