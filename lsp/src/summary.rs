//! A job's plan in a few lines, for the hover over its name: where, which layout, how long, at
//! what cost, in how much memory (the numbers `loam plan` prints, written by `display`).

use crate::document::Document;
use loam_compiler::syntax::parse;
use loam_ir::display;
use loam_ir::plan::Plan;
use loam_ir::span::FileId;

/// The name of the job or service whose label holds byte `offset` (`job "name" {`).
pub fn label_at(doc: &Document, offset: usize) -> Option<(String, usize, usize)> {
    let file = parse(FileId(0), &doc.text).file?;
    file.blocks.iter().find_map(|block| {
        let label = block.label.as_ref()?;
        let (start, end) = (label.span.start as usize, label.span.end as usize);
        (start..=end)
            .contains(&offset)
            .then(|| (label.value.clone(), start, end))
    })
}

/// The summary of `plan` as Markdown.
pub fn plan(plan: &Plan) -> String {
    let mut lines = vec![format!("**{}** — plan", plan.job)];
    // An infeasible job still has its best plan, as `loam plan` shows it.
    if !plan.feasible {
        lines.push(format!("not feasible: {}", plan.reasons.join("; ")));
    }
    let groups: Vec<String> = plan
        .groups
        .iter()
        .map(|g| format!("{} × {} at {}", g.devices, g.device, g.site))
        .collect();
    lines.push(format!("{} (pool {})", groups.join(" + "), plan.pool));
    if let Some(layout) = &plan.layout {
        lines.push(display::layout_line(layout));
    }
    if let Some(e) = &plan.estimate {
        // The wall-clock time every output shows; an interruptible job adds its hours of
        // training.
        let wall_h = plan.wall_time_h().unwrap_or(e.train_time_h);
        let time = if plan.schedule.is_some() {
            format!(
                "{} in its daily window ({} of training)",
                display::hours_or_days(wall_h),
                display::hours_or_days(e.train_time_h)
            )
        } else {
            format!("{} of training", display::hours_or_days(wall_h))
        };
        lines.push(format!(
            "{time}, {} · {} tokens/s · MFU {}",
            display::money(e.cost.amount, &e.cost.currency),
            display::thousands(e.tokens_per_s),
            display::percent(e.mfu)
        ));
        lines.push(format!(
            "{:.1} GiB per device at the fullest rank",
            e.memory_per_device_gib
        ));
    }
    lines.join("\n\n")
}
