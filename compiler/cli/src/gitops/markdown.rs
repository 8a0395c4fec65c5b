//! The diff as markdown for a pull-request comment: the summary line and a table of the changed
//! jobs first, then each job's details folded in `<details>`.

use super::compare::{Action, Change, JobDiff, PlanDiff};
use super::side::Side;
use super::text::{header, job_plain};
use loam_compiler::display::plus_minus;
use std::fmt::Write;

/// The hidden marker a CI job looks for to update its earlier comment instead of adding one.
pub const MARKER: &str = "<!-- loam-diff -->";

/// The whole markdown report.
pub fn render(diff: &PlanDiff, base: &Side, head: &Side) -> String {
    let summary = diff.summary();
    let mut out = format!(
        "{MARKER}\n### loam plan diff: `{}` → `{}`\n\n",
        base.title(),
        head.title()
    );
    let line = summary.line_with_unchanged();
    let _ = writeln!(out, "**{line}**\n");
    for text in header(base, head).lines().skip(1) {
        let _ = writeln!(out, "_{}_\n", escape(text));
    }
    let changed: Vec<&JobDiff> = diff.changed().collect();
    if !changed.is_empty() {
        out.push_str("| | job | file | train time | cost | carbon | MFU |\n");
        out.push_str("| :-: | --- | --- | --: | --: | --: | --: |\n");
        for job in &changed {
            let name = match &job.old_job {
                Some(old) => format!("`{}` → `{}`", escape(old), escape(&job.job)),
                None => format!("`{}`", escape(&job.job)),
            };
            let _ = writeln!(
                out,
                "| `{}` | {name} | {} | {} | {} | {} | {} |",
                job.action.symbol(),
                escape(&job.file),
                cell(job, "estimate.train_time") + &uncertainty(job),
                cell(job, "estimate.cost"),
                cell(job, "estimate.carbon"),
                cell(job, "estimate.mfu"),
            );
        }
        out.push('\n');
    }
    for file in &diff.broken {
        let _ = writeln!(
            out,
            "- `!` `{}` does not check at `{}` ({} {}); run `loam check` for the diagnostics.",
            escape(&file.file),
            head.label,
            file.errors,
            if file.errors == 1 { "error" } else { "errors" }
        );
    }
    if !diff.broken.is_empty() {
        out.push('\n');
    }
    for job in &changed {
        let _ = writeln!(
            out,
            "<details><summary><code>{}</code> <code>{}</code>: {}</summary>\n",
            job.action.symbol(),
            html(&job.job),
            html(&super::text::describe(job, head)),
        );
        let _ = writeln!(
            out,
            "```diff\n{}```\n",
            job_plain(
                &JobDiff {
                    manifests: None,
                    ..(*job).clone()
                },
                head
            )
        );
        if let Some(manifests) = &job.manifests {
            let _ = writeln!(
                out,
                "<details><summary>manifests</summary>\n\n```diff\n{}```\n\n</details>\n",
                fence_safe(manifests)
            );
        }
        out.push_str("</details>\n\n");
    }
    out
}

/// A table cell for an estimate: the new value with its relative change, the old value struck
/// through for a destroyed job, `—` when absent.
fn cell(job: &JobDiff, key: &str) -> String {
    let find = |plan: &Option<loam_compiler::plan::ir::Plan>| {
        plan.as_ref().and_then(|p| {
            super::compare::attributes(p)
                .into_iter()
                .find(|a| a.key == key)
                .map(|a| a.value)
        })
    };
    let before = find(&job.before);
    let after = find(&job.after);
    match (&before, &after) {
        (_, Some(value)) if job.action == Action::Create => value.shown(),
        (Some(value), None) => format!("~~{}~~", value.shown()),
        (Some(_), Some(value)) => {
            let change = Change {
                key: key.to_string(),
                before: before.clone(),
                after: after.clone(),
            };
            match change.delta() {
                Some((0.0, _)) => value.shown(),
                Some(_) => format!(
                    "{} ({})",
                    value.shown(),
                    change.delta_text().unwrap_or_default()
                ),
                None => value.shown(),
            }
        }
        (None, Some(value)) => value.shown(),
        (None, None) => "—".to_string(),
    }
    .replace('|', "\\|")
}

/// ` ±30 %` after the train time of a plan predicted on devices whose figures are estimates (the
/// plan shown: head's, else base's); nothing when they are measured. Only the plan's own JSON
/// and `loam plan` name the devices, to keep the table narrow.
fn uncertainty(job: &JobDiff) -> String {
    job.after
        .as_ref()
        .or(job.before.as_ref())
        .and_then(|p| p.estimate.as_ref()?.throughput_uncertainty)
        .filter(|u| *u > 0.0)
        .map_or(String::new(), |u| format!(" {}", plus_minus(u)))
}

/// Text safe in a markdown table cell or line.
fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('`', "'")
}

/// Text safe inside HTML.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A code block's body that cannot close its fence early.
fn fence_safe(text: &str) -> String {
    let mut out = text.replace("```", "`\u{200b}``");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}
