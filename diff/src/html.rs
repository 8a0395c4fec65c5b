//! The diff as one self-contained HTML page (`loam report --base`, `loam diff --format html`):
//! the verdict and the reviewer's headline, the totals per tenant, every job's change and every
//! changed service's, handed to `loam_report`, which
//! draws the page. The values are the other formats': the summary's verdict, the totals of
//! [`super::totals`], the jobs in the markdown's order and their changes as the text writes
//! them.

use super::compare::{JobDiff, PlanDiff};
use super::markdown::review_order;
use super::services::{self, ServiceDiff};
use super::shown_diagnostics;
use super::side::Side;
use super::totals;
use crate::ShowDiagnostics;
use loam_compiler::catalogue::facts;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diff::Action;
use loam_report::{DiffPage, JobChange, Problem, ServiceChange, diff_page};

/// The page of `diff` between `base` and `head`. The one rendering both commands print or
/// write, so their bytes agree; its problems written by `shown`.
pub fn render(diff: &PlanDiff, base: &Side, head: &Side, shown: &dyn ShowDiagnostics) -> String {
    let (base_title, head_title) = (base.title(), head.title());
    let title = format!("loam diff: {base_title} → {head_title}");
    let verdict = diff.summary().verdict();
    let cluster = head.specs.catalogue.as_ref().map(facts::cluster_map);
    let headline = super::headline::line(diff, base, head);
    diff_page(&DiffPage {
        title: &title,
        base: &base_title,
        head: &head_title,
        verdict: &verdict,
        headline: &headline,
        jobs: jobs(diff),
        services: diff.changed_services().map(service_change).collect(),
        unchanged_left_out: unchanged_left_out(diff),
        tenants: totals::totals(diff, base, head),
        cluster: cluster.as_ref(),
        problems: problems(base, head, shown),
        schedule: diff
            .schedule
            .as_ref()
            .map(schedule_lines)
            .unwrap_or_default(),
    })
}

/// The most schedule lines the page lists: the totals, then moved jobs and utilisation changes
/// (a 500-spec pull request may move hundreds); the rest are one line.
const MOST_SCHEDULE_LINES: usize = 40;

/// The schedule's change as the text diff words it, one line each, bounded.
fn schedule_lines(diff: &super::schedule::ScheduleDiff) -> Vec<String> {
    let text = super::schedule::text(diff);
    let mut lines: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() > MOST_SCHEDULE_LINES {
        let more = lines.len() - (MOST_SCHEDULE_LINES - 1);
        lines.truncate(MOST_SCHEDULE_LINES - 1);
        lines.push(format!("… and {more} more (the JSON diff has each)"));
    }
    lines
}

/// Every job of either side: the changed ones in review order, then the unchanged ones by file
/// and name, unless there are more than [`MOST_UNCHANGED_LISTED`] (then one row counts them).
fn jobs(diff: &PlanDiff) -> Vec<JobChange<'_>> {
    let listed = unchanged_left_out(diff) == 0;
    review_order(diff)
        .into_iter()
        .chain(unchanged(diff).filter(|_| listed))
        .map(job_change)
        .collect()
}

/// The most unchanged jobs the page lists one by one; more are one row (the review's 500-spec
/// pull request drew 480 "no change" rows, 515 KB).
const MOST_UNCHANGED_LISTED: usize = 20;

fn unchanged(diff: &PlanDiff) -> impl Iterator<Item = &JobDiff> {
    diff.jobs.iter().filter(|j| j.action == Action::NoOp)
}

/// How many unchanged jobs the page leaves out.
fn unchanged_left_out(diff: &PlanDiff) -> usize {
    let n = unchanged(diff).count();
    if n > MOST_UNCHANGED_LISTED { n } else { 0 }
}

fn job_change(job: &JobDiff) -> JobChange<'_> {
    JobChange {
        action: job.action,
        job: &job.job,
        file: &job.file,
        before: job.before.as_ref(),
        after: job.after.as_ref(),
        changes: &job.changes,
        note: job.note.as_deref(),
    }
}

/// A service's change as the page shows it: the values the text and markdown write.
fn service_change(service: &ServiceDiff) -> ServiceChange {
    let value = |plan: &Option<loam_ir::plan::ServicePlan>, key: &str| {
        plan.as_ref().and_then(|p| {
            services::attributes(p)
                .into_iter()
                .find(|a| a.key == key)
                .map(|a| a.value)
        })
    };
    let both = |key: &str| (value(&service.before, key), value(&service.after, key));
    ServiceChange {
        action: service.action,
        service: service.service.clone(),
        file: service.file.clone(),
        devices: both("estimate.devices"),
        cost_per_month: both("estimate.cost_per_month"),
        changes: service.changes.clone(),
    }
}

/// The problems the page shows first, one line each: the errors at base (which explain why a
/// job could not be compared), then every diagnostic at head, each line led by its side.
pub fn problems(base: &Side, head: &Side, shown: &dyn ShowDiagnostics) -> Vec<Problem> {
    let (base_errors, at_head) = shown_diagnostics(base, head);
    let at = |side: &Side, d: &Diagnostic| Problem {
        error: d.is_error(),
        line: format!(
            "at {}: {}",
            side.title(),
            shown.one_line(d, &side.specs.sources)
        ),
    };
    base_errors
        .iter()
        .map(|d| at(base, d))
        .chain(at_head.iter().map(|d| at(head, d)))
        .collect()
}
