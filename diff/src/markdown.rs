//! The diff as markdown for a pull-request comment, read in ten seconds: the verdict first,
//! then one table of totals per tenant (jobs changed, device-hours, cost, energy, carbon,
//! before → after), one line per changed job with its verdict, what the change does to
//! admission across the pool, the errors with their locations, and each job's details folded.
//!
//! The comment stays under [`LIMIT`] characters (GitHub refuses comments over 65,536): the
//! verdict, the totals and the errors always come; job lines and folded details are added in
//! order of severity while they fit, and a last line says how many were left out and that the
//! JSON report (`--format json`) holds every one. Manifest detail is the changed fields, never a
//! whole file.

use super::compare::{JobDiff, PlanDiff};
use super::services::ServiceDiff;
use super::side::Side;
use super::text::{header, job_plain};
use super::totals::{Cells, totals};
use crate::ShowDiagnostics;
use loam_ir::diff::Action;
use loam_ir::diff::TenantTotals;
use loam_ir::diff::values::{Change, Value};
use loam_ir::display::capitalised;
use std::fmt::Write;

/// The hidden marker a CI job looks for to update its earlier comment instead of adding one.
pub const MARKER: &str = "<!-- loam-diff -->";

/// The most characters the comment has.
pub const LIMIT: usize = 60_000;

/// The most characters of diagnostics the comment shows.
const ERRORS_LIMIT: usize = 12_000;

/// The most characters one job's folded details take.
const DETAILS_LIMIT: usize = 6_000;

/// The whole markdown report.
pub fn render(diff: &PlanDiff, base: &Side, head: &Side, shown: &dyn ShowDiagnostics) -> String {
    render_with(diff, base, head, "", shown)
}

/// The report with `extra` (markdown, e.g. the admission preview's changes) after the job
/// lines; diagnostics written by `shown`.
pub fn render_with(
    diff: &PlanDiff,
    base: &Side,
    head: &Side,
    extra: &str,
    shown: &dyn ShowDiagnostics,
) -> String {
    let summary = diff.summary();
    // The verdict on the comment's second line and the headline on its third: what a reviewer
    // reads before anything else, whatever follows.
    let mut out = format!("{MARKER}\n");
    let icon = if summary.blocks() {
        "❌"
    } else if summary.has_changes() {
        "📝"
    } else {
        "✅"
    };
    let mut line = format!("**{icon} {}**", capitalised(&summary.verdict()));
    if summary.blocks() && summary.has_changes() {
        let _ = write!(line, " · {}", summary.counts());
    }
    let unchanged = summary.unchanged_text();
    if !unchanged.is_empty() {
        let _ = write!(line, " · {unchanged}");
    }
    let _ = write!(
        line,
        " · loam plan diff `{}` → `{}`",
        escape(&base.title()),
        escape(&head.title())
    );
    let headline = super::headline::line(diff, base, head);
    if headline.is_empty() {
        let _ = writeln!(out, "{line}\n");
    } else {
        let _ = writeln!(out, "{line}<br>\n{headline}\n");
    }
    for text in header(base, head).lines().skip(1) {
        let _ = writeln!(out, "_{}_\n", escape(text));
    }
    let rows = totals(diff, base, head);
    if diff.jobs.iter().any(|j| j.action != Action::NoOp) || !diff.broken.is_empty() {
        out.push_str(&totals_table(&rows));
    }
    let changed_services: Vec<&ServiceDiff> = diff.changed_services().collect();
    if !changed_services.is_empty() {
        out.push_str(&services_totals_table(&super::services::totals(
            &diff.services,
            base,
            head,
        )));
    }
    let errors = errors_section(head, shown);
    let footer = "<sub>Every job's full plans, changes and manifest diff: `loam diff --format json` (the CI run keeps it as an artifact).</sub>\n";
    let changed = review_order(diff);
    // What must come, so the job lines and details fit around it.
    let admission = bounded_admission(&diff.admission);
    let schedule = diff
        .schedule
        .as_ref()
        .map_or_else(String::new, super::schedule::markdown);
    let reserved =
        errors.len() + admission.len() + schedule.len() + extra.len() + footer.len() + 400;
    let mut left_out = 0usize;
    if !changed.is_empty() || !diff.broken.is_empty() {
        out.push_str("| | job | tenant | verdict | time | cost |\n");
        out.push_str("| :-: | --- | --- | --- | --: | --: |\n");
        for job in &changed {
            let row = job_row(job);
            if out.len() + row.len() + reserved > LIMIT {
                left_out += 1;
                continue;
            }
            out.push_str(&row);
        }
        for file in &diff.broken {
            let _ = writeln!(
                out,
                "| `!` | `{}` | | **does not check**: {} at `{}` (below) | | |",
                escape(&file.file),
                plural(file.errors, "error"),
                escape(&head.label),
            );
        }
        out.push('\n');
    }
    if !changed_services.is_empty() {
        out.push_str("| | service | tenant | verdict | devices | cost per month |\n");
        out.push_str("| :-: | --- | --- | --- | --: | --: |\n");
        for service in &changed_services {
            let row = service_row(service);
            if out.len() + row.len() + reserved > LIMIT {
                left_out += 1;
                continue;
            }
            out.push_str(&row);
        }
        out.push('\n');
    }
    out.push_str(&admission);
    if !diff.admission.is_empty() {
        out.push('\n');
    }
    out.push_str(&schedule);
    out.push_str(extra);
    out.push_str(&errors);
    let mut details_left_out = 0usize;
    for job in &changed {
        let block = details(job, head, shown);
        if out.len() + block.len() + footer.len() + 200 > LIMIT {
            details_left_out += 1;
            continue;
        }
        out.push_str(&block);
    }
    for service in &changed_services {
        let block = service_details(service, head);
        if out.len() + block.len() + footer.len() + 200 > LIMIT {
            details_left_out += 1;
            continue;
        }
        out.push_str(&block);
    }
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
    if left_out + details_left_out > 0 {
        let _ = writeln!(
            out,
            "_Left out to stay under {} characters: {} and the details of {}. The JSON report has every one._",
            thousands_usize(LIMIT),
            plural(left_out, "job line"),
            plural(details_left_out, "job"),
        );
        out.push('\n');
    }
    out.push_str(footer);
    // Job, tenant and file names come from the pull request: no control character of theirs
    // reaches the comment raw (escape() keeps tables whole, this keeps terminals and logs safe).
    loam_ir::display::visible_lines(&out).into_owned()
}

/// The most characters of admission changes the comment shows.
const ADMISSION_LIMIT: usize = 8_000;

/// The admission changes, as many whole sentences as fit in [`ADMISSION_LIMIT`], then how many
/// more there are.
fn bounded_admission(changes: &[loam_compiler::admission::AdmissionChange]) -> String {
    let mut shown = changes.len();
    let mut text = crate::admission::changes_markdown(changes);
    while text.len() > ADMISSION_LIMIT && shown > 0 {
        shown /= 2;
        text = crate::admission::changes_markdown(changes.get(..shown).unwrap_or(&[]));
    }
    if shown < changes.len() {
        if shown == 0 {
            text = String::from("### Admission changes\n\n");
        }
        let _ = writeln!(
            text,
            "- … and {} more (the JSON report's `admission_changes` has every one)",
            changes.len() - shown
        );
    }
    text
}

/// The changed jobs in the order a reviewer reads them: what blocks the merge first, then what
/// destroys, then by how much the cost moves (bigger first), then by file and name. The
/// markdown's job lines and the HTML report's jobs come in this order.
pub fn review_order(diff: &PlanDiff) -> Vec<&JobDiff> {
    let mut changed: Vec<&JobDiff> = diff.changed().collect();
    changed.sort_by(|a, b| {
        severity(a.action)
            .cmp(&severity(b.action))
            .then(cost_change(b).total_cmp(&cost_change(a)))
            .then((&a.file, &a.job).cmp(&(&b.file, &b.job)))
    });
    changed
}

/// The order job lines and details come in: what blocks the merge first, then what destroys.
fn severity(action: Action) -> u8 {
    match action {
        Action::Infeasible => 0,
        Action::Error => 1,
        Action::Replace => 2,
        Action::Delete => 3,
        Action::Update => 4,
        Action::Create => 5,
        Action::NoOp => 6,
    }
}

/// How much a job's cost moves, in its currency, for ordering (bigger first).
fn cost_change(job: &JobDiff) -> f64 {
    let cost = |p: &Option<loam_ir::plan::Plan>| {
        p.as_ref()
            .and_then(|p| p.estimate.as_ref())
            .map_or(0.0, |e| e.cost.amount)
    };
    (cost(&job.after) - cost(&job.before)).abs()
}

/// The totals: one row per tenant, then the total in bold.
fn totals_table(rows: &[TenantTotals]) -> String {
    let lines = rows.iter().map(|row| TenantLine {
        tenant: row.tenant.as_deref(),
        changed: row.changed,
        of: row.after.jobs.max(row.before.jobs),
        cells: [
            row.device_hours(),
            escape(&row.cost()),
            row.energy(),
            row.carbon(),
        ],
    });
    tenant_table(
        "| tenant | jobs changed | device-hours | cost | energy | carbon |",
        lines,
    )
}

/// The services' totals per month: one row per tenant with a changed service, then the total.
fn services_totals_table(rows: &[super::services::MonthRow]) -> String {
    let lines = rows.iter().map(|row| TenantLine {
        tenant: row.tenant.as_deref(),
        changed: row.changed,
        of: row.after.services.max(row.before.services),
        cells: [
            row.devices(),
            escape(&row.cost()),
            row.energy(),
            row.carbon(),
        ],
    });
    tenant_table(
        "| tenant | services changed | devices at the busiest hour | cost per month | energy per month | carbon per month |",
        lines,
    )
}

/// One tenant's (or, without a tenant, the total's) line of a totals table.
struct TenantLine<'a> {
    tenant: Option<&'a str>,
    changed: usize,
    of: usize,
    cells: [String; 4],
}

/// A totals table under `header`: a line per tenant with a change, then the total in bold (left
/// out when one tenant's line would repeat it).
fn tenant_table<'a>(header: &str, lines: impl Iterator<Item = TenantLine<'a>>) -> String {
    let lines: Vec<TenantLine<'a>> = lines.collect();
    let mut out = format!("{header}\n| --- | --: | --: | --: | --: | --: |\n");
    let tenants = lines.iter().filter(|l| l.tenant.is_some()).count();
    for line in &lines {
        // Tenants without a change are in the total only; one tenant's row would repeat it.
        if (line.tenant.is_some() && line.changed == 0) || (line.tenant.is_none() && tenants == 1) {
            continue;
        }
        let name = match line.tenant {
            Some(t) => format!("`{}`", escape(t)),
            None => "**total**".to_string(),
        };
        let [a, b, c, d] = &line.cells;
        let _ = writeln!(
            out,
            "| {name} | {} of {} | {a} | {b} | {c} | {d} |",
            line.changed, line.of
        );
    }
    out.push('\n');
    out
}

/// One line per changed service: its verdict, what changes, devices and cost per month.
fn service_row(service: &ServiceDiff) -> String {
    let tenant = match service.tenant() {
        "" => String::new(),
        t => format!("`{}`", escape(t)),
    };
    let verdict = match service.action {
        Action::Infeasible => format!(
            "**infeasible**: {}",
            service
                .after
                .as_ref()
                .map(|p| p.reasons.join("; "))
                .unwrap_or_default()
        ),
        Action::Error => format!(
            "**does not check**{}",
            service
                .note
                .as_ref()
                .map_or(String::new(), |n| format!(": {n}"))
        ),
        Action::Update => format!("update: {}", changed_keys(&service.changes)),
        other => other.verdict().to_string(),
    };
    let value = |plan: &Option<loam_ir::plan::ServicePlan>, key: &str| {
        plan.as_ref().and_then(|p| {
            super::services::attributes(p)
                .into_iter()
                .find(|a| a.key == key)
                .map(|a| a.value)
        })
    };
    let cell = |key: &str| {
        let change = Change {
            key: key.to_string(),
            before: value(&service.before, key),
            after: value(&service.after, key),
        };
        shown_cell(&change, service.action)
    };
    format!(
        "| `{}` | `{}` | {tenant} | {} | {} | {} |\n",
        service.action.symbol(),
        escape(&service.service),
        escape(&verdict),
        cell("estimate.devices"),
        cell("estimate.cost_per_month"),
    )
}

/// The keys of the inputs that change, leading with what the author changed: `traffic.peak_rate
/// 20 → 60, roles, 3 more`.
fn changed_keys(changes: &[Change]) -> String {
    let (inputs, estimates): (Vec<&Change>, Vec<&Change>) = changes
        .iter()
        .partition(|c| !c.key.starts_with("estimate."));
    let mut parts: Vec<String> = inputs
        .iter()
        .take(3)
        .map(|c| match c.shown() {
            _ if matches!(c.before, Some(Value::List(_)))
                || matches!(c.after, Some(Value::List(_))) =>
            {
                c.key.clone()
            }
            (Some(b), Some(a)) if b.len() + a.len() < 40 => format!("{} {b} → {a}", c.key),
            _ => c.key.clone(),
        })
        .collect();
    if inputs.len() > 3 {
        parts.push(format!("{} more", inputs.len() - 3));
    }
    if parts.is_empty() {
        parts = estimates.iter().take(3).map(|c| c.key.clone()).collect();
    }
    parts.join(", ")
}

/// A table cell for one change of an estimate: the new value with its delta, the old one struck
/// through when it is gone, `—` when absent.
fn shown_cell(change: &Change, action: Action) -> String {
    let (before, after) = change.shown();
    match (before, after) {
        (_, Some(value)) if action == Action::Create => value,
        (Some(value), None) => format!("~~{value}~~"),
        (Some(old), Some(value)) if old == value => value,
        (Some(_), Some(value)) => match change.delta_text() {
            Some(delta) => format!("{value} ({delta})"),
            None => value,
        },
        (None, Some(value)) => value,
        (None, None) => "—".to_string(),
    }
    .replace('|', "\\|")
}

/// One service's folded details: its changes.
fn service_details(service: &ServiceDiff, head: &Side) -> String {
    let body = super::text::service_plain(service, head);
    format!(
        "<details><summary><code>{}</code> service <code>{}</code>: {}</summary>\n\n```diff\n{}```\n\n</details>\n\n",
        service.action.symbol(),
        html(&service.service),
        html(&super::text::describe_service(service, head)),
        fence_safe(&body)
    )
}

/// One line per changed job: its verdict, what changes, time and cost.
fn job_row(job: &JobDiff) -> String {
    let name = match &job.old_job {
        Some(old) => format!("`{}` → `{}`", escape(old), escape(&job.job)),
        None => format!("`{}`", escape(&job.job)),
    };
    let tenant = job
        .after
        .as_ref()
        .or(job.before.as_ref())
        .map_or(String::new(), |p| format!("`{}`", escape(&p.tenant)));
    format!(
        "| `{}` | {name} | {tenant} | {} | {} | {} |\n",
        job.action.symbol(),
        escape(&verdict_text(job)),
        cell(job, "estimate.train_time") + &uncertainty(job),
        cell(job, "estimate.cost"),
    )
}

/// The verdict in a few words, with the reason where the job will not run or is replaced.
fn verdict_text(job: &JobDiff) -> String {
    match job.action {
        Action::Infeasible => {
            let reasons: Vec<String> = job
                .after
                .as_ref()
                .map(|p| p.reasons.iter().map(|r| short_reason(r)).collect())
                .unwrap_or_default();
            format!("**infeasible**: {}", reasons.join("; "))
        }
        Action::Error => format!(
            "**does not check**{}",
            job.note
                .as_ref()
                .map_or(String::new(), |n| format!(": {n}"))
        ),
        Action::Replace => {
            let why = job
                .verdict
                .as_ref()
                .and_then(|v| v.forcing().next().map(|r| r.sentence()));
            match (&job.old_job, why) {
                (Some(_), _) => "replace: renamed".to_string(),
                // What the author changed (a new placement, a token count) leads; the manifest
                // field that forces the replacement follows (review finding 7).
                (None, Some(why)) => format!("replace: {}; {why}", what_changed(job)),
                (None, None) => format!("replace; {}", what_changed(job)),
            }
        }
        Action::Create => "create".to_string(),
        Action::Delete => "delete".to_string(),
        Action::Update => format!("update: {}", what_changed(job)),
        Action::NoOp => String::new(),
    }
}

/// `misses the deadline by 28.6 days (88.6 days needed, 60.0 days allowed)`: the reason
/// without the best plan's layout, which the details show.
fn short_reason(reason: &str) -> String {
    reason
        .split(" with the best plan")
        .next()
        .unwrap_or(reason)
        .to_string()
}

/// The attributes that change, leading with what the author changed rather than the estimates
/// that follow from it: `workload.tokens 2T → 4T, layout.pipeline 4 → 5`.
fn what_changed(job: &JobDiff) -> String {
    let (mut inputs, estimates): (Vec<&Change>, Vec<&Change>) = job
        .changes
        .iter()
        .partition(|c| !c.key.starts_with("estimate."));
    // What the author asked for first, then where the job runs, then how it is split.
    let rank = |key: &str| {
        [
            "workload.",
            "tenant",
            "priority",
            "pool",
            "placement.devices",
            "placement.sites",
            "interruptible",
            "layout",
        ]
        .iter()
        .position(|p| key.starts_with(p))
        .unwrap_or(8)
    };
    inputs.sort_by_key(|c| rank(&c.key));
    let mut parts: Vec<String> = inputs
        .iter()
        .take(3)
        .map(|c| match (c.shown(), &c.before, &c.after) {
            (_, Some(Value::List(_)), _) | (_, _, Some(Value::List(_))) => c.key.clone(),
            ((Some(b), Some(a)), _, _) if b.len() + a.len() < 40 => {
                format!("{} {b} → {a}", c.key)
            }
            _ => c.key.clone(),
        })
        .collect();
    if inputs.len() > 3 {
        parts.push(format!("{} more", inputs.len() - 3));
    }
    if parts.is_empty() {
        parts = estimates.iter().take(3).map(|c| c.key.clone()).collect();
    }
    parts.join(", ")
}

/// A table cell for an estimate: the new value with its change, the old one struck through for
/// a destroyed job, `—` when absent.
fn cell(job: &JobDiff, key: &str) -> String {
    let find = |plan: &Option<loam_ir::plan::Plan>| {
        plan.as_ref().and_then(|p| {
            super::compare::attributes(p)
                .into_iter()
                .find(|a| a.key == key)
                .map(|a| a.value)
        })
    };
    let change = Change {
        key: key.to_string(),
        before: find(&job.before),
        after: find(&job.after),
    };
    shown_cell(&change, job.action)
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
        .map_or(String::new(), |u| {
            format!(" {}", loam_ir::display::plus_minus(u))
        })
}

/// The errors at head, located, as `loam check` prints them (without colour), cut to
/// [`ERRORS_LIMIT`] characters.
fn errors_section(head: &Side, shown: &dyn ShowDiagnostics) -> String {
    let errors = head.errors();
    if errors.is_empty() {
        return String::new();
    }
    let mut text = shown.report(&errors, &head.specs.sources);
    if text.len() > ERRORS_LIMIT {
        let mut cut = ERRORS_LIMIT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (cut; `loam check` shows every one)\n");
    }
    format!(
        "<details open><summary>❌ {} at <code>{}</code></summary>\n\n```text\n{}```\n\n</details>\n\n",
        plural(errors.len(), "error"),
        html(&head.label),
        fence_safe(&text)
    )
}

/// One job's folded details: its changes and what its manifests' changes do, field by field.
fn details(job: &JobDiff, head: &Side, shown: &dyn ShowDiagnostics) -> String {
    let mut body = job_plain(
        &JobDiff {
            manifests: None,
            ..job.clone()
        },
        head,
    );
    let warnings = job_warnings(job, head);
    if !warnings.is_empty() {
        body.push_str("\n# warnings at head:\n");
        body.push_str(&shown.report(&warnings, &head.specs.sources));
    }
    if body.len() > DETAILS_LIMIT {
        let mut cut = DETAILS_LIMIT;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        body.truncate(cut);
        body.push_str("\n    … (cut; the JSON report has the rest)\n");
    }
    let counted = match warnings.len() {
        0 => String::new(),
        n => format!(" ({})", plural(n, "warning")),
    };
    format!(
        "<details><summary><code>{}</code> <code>{}</code>: {}{counted}</summary>\n\n```diff\n{}```\n\n</details>\n\n",
        job.action.symbol(),
        html(&job.job),
        html(&super::text::describe(job, head)),
        fence_safe(&body)
    )
}

/// The warnings at head inside the job's own block (its checks' and the planner's): folded in
/// its details, after the verdict, and only for a job that changes — an untouched job's
/// warnings are not the pull request's news.
fn job_warnings(job: &JobDiff, head: &Side) -> Vec<loam_ir::diagnostics::Diagnostic> {
    let Some(span) = head
        .specs
        .jobs
        .iter()
        .find(|j| j.job.name.value == job.job && j.file == job.file)
        .map(|j| j.job.span)
    else {
        return Vec::new();
    };
    head.specs
        .diagnostics
        .iter()
        .chain(head.planner_diagnostics())
        .filter(|d| !d.is_error())
        .filter(|d| {
            d.span
                .is_some_and(|s| s.file == span.file && s.start >= span.start && s.end <= span.end)
        })
        .cloned()
        .collect()
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn thousands_usize(n: usize) -> String {
    loam_ir::display::thousands(n as f64)
}

/// Text safe in a markdown table cell or line.
pub(super) fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('`', "'")
}

/// Text safe inside HTML.
pub(super) fn html(text: &str) -> String {
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
