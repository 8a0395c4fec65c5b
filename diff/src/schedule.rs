//! What a change does to the schedule (issue 33, item 5): every job of each side scheduled
//! together on its pool (`loam_compiler::schedule`, the rules of docs/scheduling.md), then per
//! job the delay of its start and finish, the deadlines lost and won, and per site and device
//! type the change in utilisation; written for the text, the pull-request comment (one part of
//! the headline, the details folded and bounded) and the JSON.

use super::markdown::{escape, html};
use loam_ir::display::{percent_signed, signed};
use loam_ir::schedule::{Schedule, ScheduledJob};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Moves smaller than this are no move: the schedule keeps five significant digits, so 90 days
/// (2,160 h) are exact to 0.1 h; 0.05 h is half of that. (counted)
const MOVE_EPS_H: f64 = 0.05;

/// Rows of jobs the comment's folded table shows; the JSON has every one. (counted: a screen)
pub const MARKDOWN_ROWS: usize = 20;

/// One job's move between the sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobMove {
    /// The job.
    pub job: String,
    /// Its file at head (at base when it is gone).
    pub file: String,
    /// `moved` (on both sides), `added` (head only) or `removed` (base only).
    pub change: String,
    /// Start at base and at head, hours from the schedule's start.
    pub start_h: (Option<f64>, Option<f64>),
    /// Finish at base and at head.
    pub finish_h: (Option<f64>, Option<f64>),
    /// Finish at head minus at base (positive = later); `None` when a side never finishes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_h: Option<f64>,
    /// The deadline verdict at base and at head (`met`, `at-risk`, `missed`), when it has one.
    pub deadline: (Option<String>, Option<String>),
}

/// One site's device type: mean utilisation over the horizon at base and at head.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UtilisationChange {
    /// The site.
    pub site: String,
    /// The device type.
    pub device: String,
    /// Mean share of device-hours held, at base and at head.
    pub utilisation: (f64, f64),
}

/// The schedule's change.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ScheduleDiff {
    /// Deadlines met at base and at head.
    pub deadlines_met: (usize, usize),
    /// Jobs with a deadline at base and at head.
    pub deadlines: (usize, usize),
    /// Jobs whose deadline is met at base and not at head (in file, then name order).
    pub deadlines_lost: Vec<String>,
    /// Jobs whose deadline is not met at base and is at head.
    pub deadlines_won: Vec<String>,
    /// Hours waited, summed over jobs, at base and at head.
    pub wait_h: (f64, f64),
    /// Jobs delayed (finish later) among those on both sides.
    pub delayed: usize,
    /// The largest delay of a job on both sides, hours.
    pub max_delay_h: f64,
    /// Every job that moves, appears or goes: the most delayed first, then file and name.
    pub jobs: Vec<JobMove>,
    /// Every site's device type whose utilisation changes, in site then device order.
    pub utilisation: Vec<UtilisationChange>,
}

fn met(job: &ScheduledJob) -> Option<bool> {
    job.deadline.as_ref().map(|d| d.verdict == "met")
}

fn mean_utilisation(days: &[loam_ir::schedule::DayUsage]) -> f64 {
    if days.is_empty() {
        return 0.0;
    }
    days.iter().map(|d| d.utilisation).sum::<f64>() / days.len() as f64
}

/// The change from `base` to `head`; `None` when nothing moves.
pub fn compare(base: &Schedule, head: &Schedule) -> Option<ScheduleDiff> {
    let key = |j: &ScheduledJob| j.job.clone();
    let before: BTreeMap<String, &ScheduledJob> = base.jobs.iter().map(|j| (key(j), j)).collect();
    let after: BTreeMap<String, &ScheduledJob> = head.jobs.iter().map(|j| (key(j), j)).collect();
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    let mut diff = ScheduleDiff {
        deadlines_met: (base.totals.met, head.totals.met),
        deadlines: (base.totals.deadlines, head.totals.deadlines),
        wait_h: (base.totals.wait_h, head.totals.wait_h),
        ..ScheduleDiff::default()
    };
    for name in names {
        let (b, a) = (before.get(name).copied(), after.get(name).copied());
        let moved = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => (x - y).abs() > MOVE_EPS_H,
            (None, None) => false,
            _ => true,
        };
        let change = match (b, a) {
            (Some(b), Some(a)) => {
                if !moved(b.start_h, a.start_h) && !moved(b.finish_h, a.finish_h) {
                    continue;
                }
                "moved"
            }
            (None, Some(_)) => "added",
            (Some(_), None) => "removed",
            (None, None) => continue,
        };
        let delay_h = match (b.and_then(|j| j.finish_h), a.and_then(|j| j.finish_h)) {
            (Some(x), Some(y)) if change == "moved" => Some(y - x),
            _ => None,
        };
        if let Some(d) = delay_h.filter(|d| *d > MOVE_EPS_H) {
            diff.delayed += 1;
            diff.max_delay_h = diff.max_delay_h.max(d);
        }
        match (b.and_then(met), a.and_then(met)) {
            (Some(true), Some(false)) => diff.deadlines_lost.push(name.clone()),
            (Some(false), Some(true)) => diff.deadlines_won.push(name.clone()),
            _ => {}
        }
        let verdict = |j: Option<&ScheduledJob>| {
            j.and_then(|j| j.deadline.as_ref().map(|d| d.verdict.clone()))
        };
        diff.jobs.push(JobMove {
            job: name.clone(),
            file: a.or(b).map_or(String::new(), |j| j.file.clone()),
            change: change.to_string(),
            start_h: (b.and_then(|j| j.start_h), a.and_then(|j| j.start_h)),
            finish_h: (b.and_then(|j| j.finish_h), a.and_then(|j| j.finish_h)),
            delay_h,
            deadline: (verdict(b), verdict(a)),
        });
    }
    diff.jobs.sort_by(|x, y| {
        let d = |m: &JobMove| m.delay_h.unwrap_or(0.0);
        d(y).total_cmp(&d(x))
            .then(x.file.cmp(&y.file))
            .then(x.job.cmp(&y.job))
    });
    let mut places: Vec<(&String, &String)> = base
        .utilisation
        .iter()
        .chain(&head.utilisation)
        .flat_map(|(site, devices)| devices.keys().map(move |d| (site, d)))
        .collect();
    places.sort();
    places.dedup();
    for (site, device) in places {
        let of = |s: &Schedule| {
            s.utilisation
                .get(site)
                .and_then(|d| d.get(device))
                .map_or(0.0, |days| mean_utilisation(days))
        };
        let (b, a) = (of(base), of(head));
        if (a - b).abs() >= 0.0005 {
            diff.utilisation.push(UtilisationChange {
                site: site.clone(),
                device: device.clone(),
                utilisation: (b, a),
            });
        }
    }
    let nothing = diff.jobs.is_empty() && diff.utilisation.is_empty();
    (!nothing).then_some(diff)
}

/// Hours as days past two days, as every output writes a span.
fn span(h: f64) -> String {
    loam_ir::display::hours_or_days(h)
}

/// A signed span: `+2.0 days`, `-5.0 h`.
fn signed_span(h: f64) -> String {
    if h.abs() < 48.0 {
        format!("{} h", signed(h, 1))
    } else {
        format!("{} days", signed(h / 24.0, 1))
    }
}

/// The headline's part when the change delays a job or moves a deadline's verdict: `schedule:
/// delays 3 jobs (up to +2.0 days), loses 1 deadline (`x`)`.
pub fn headline_part(diff: &ScheduleDiff) -> Option<String> {
    let says =
        diff.delayed > 0 || !diff.deadlines_lost.is_empty() || !diff.deadlines_won.is_empty();
    says.then(|| headline(diff))
}

/// The schedule's change in one line: `schedule: delays 3 jobs (up to +2.0 days), loses 1
/// deadline (`x`)`, or what else moved.
pub fn headline(diff: &ScheduleDiff) -> String {
    let mut parts = Vec::new();
    if diff.delayed > 0 {
        parts.push(format!(
            "delays {} job{} (up to {})",
            diff.delayed,
            if diff.delayed == 1 { "" } else { "s" },
            signed_span(diff.max_delay_h)
        ));
    }
    let names = |v: &[String]| {
        let shown: Vec<String> = v.iter().take(3).map(|n| format!("`{n}`")).collect();
        let more = v.len().saturating_sub(3);
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    };
    if !diff.deadlines_lost.is_empty() {
        let n = diff.deadlines_lost.len();
        parts.push(format!(
            "loses {n} deadline{} ({})",
            if n == 1 { "" } else { "s" },
            names(&diff.deadlines_lost)
        ));
    }
    if !diff.deadlines_won.is_empty() {
        let n = diff.deadlines_won.len();
        parts.push(format!(
            "wins {n} deadline{} ({})",
            if n == 1 { "" } else { "s" },
            names(&diff.deadlines_won)
        ));
    }
    if parts.is_empty() {
        let earlier = diff
            .jobs
            .iter()
            .filter(|j| j.delay_h.is_some_and(|d| d < 0.0))
            .count();
        if earlier > 0 {
            parts.push(format!(
                "{earlier} job{} earlier",
                if earlier == 1 {
                    " finishes"
                } else {
                    "s finish"
                }
            ));
        } else {
            parts.push("moves no deadline".to_string());
        }
    }
    format!("schedule: {}", parts.join(", "))
}

/// An hour of the schedule as the text writes it: `2.6 h`, `12.3 days` (from hour 0), `—`.
fn at(h: Option<f64>) -> String {
    h.map_or_else(|| "—".to_string(), span)
}

fn verdicts(d: &(Option<String>, Option<String>)) -> String {
    match d {
        (None, None) => String::new(),
        (b, a) if b == a => b.clone().unwrap_or_default(),
        (b, a) => format!(
            "{} → {}",
            b.as_deref().unwrap_or("—"),
            a.as_deref().unwrap_or("—")
        ),
    }
}

/// The text section.
pub fn text(diff: &ScheduleDiff) -> String {
    let mut out = String::from("Schedule (every job together, docs/scheduling.md):\n");
    let _ = writeln!(
        out,
        "  deadlines met {} of {} → {} of {}; waiting {} → {}",
        diff.deadlines_met.0,
        diff.deadlines.0,
        diff.deadlines_met.1,
        diff.deadlines.1,
        span(diff.wait_h.0),
        span(diff.wait_h.1)
    );
    for m in &diff.jobs {
        let delay = m
            .delay_h
            .map_or(String::new(), |d| format!(" ({})", signed_span(d)));
        let deadline = verdicts(&m.deadline);
        let _ = writeln!(
            out,
            "  {:<8} {}: finish {} → {}{delay}{}",
            m.change,
            m.job,
            at(m.finish_h.0),
            at(m.finish_h.1),
            if deadline.is_empty() {
                String::new()
            } else {
                format!(", deadline {deadline}")
            }
        );
    }
    for u in &diff.utilisation {
        let _ = writeln!(
            out,
            "  utilisation {} {}: {} → {} ({})",
            u.site,
            u.device,
            loam_ir::display::percent(u.utilisation.0),
            loam_ir::display::percent(u.utilisation.1),
            percent_signed(u.utilisation.1 - u.utilisation.0)
        );
    }
    out
}

/// The comment's folded section: a summary line and a table of at most [`MARKDOWN_ROWS`] jobs,
/// then the utilisation changes.
pub fn markdown(diff: &ScheduleDiff) -> String {
    let mut out = format!(
        "<details><summary>Schedule: {}; deadlines met {} → {}</summary>\n\n",
        html(&escape(&headline(diff).replace("schedule: ", ""))),
        diff.deadlines_met.0,
        diff.deadlines_met.1
    );
    if !diff.jobs.is_empty() {
        out.push_str("| job | change | finish before | finish after | delay | deadline |\n");
        out.push_str("| --- | --- | --: | --: | --: | --- |\n");
        for m in diff.jobs.iter().take(MARKDOWN_ROWS) {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {} |",
                escape(&m.job),
                m.change,
                at(m.finish_h.0),
                at(m.finish_h.1),
                m.delay_h.map_or(String::new(), signed_span),
                verdicts(&m.deadline)
            );
        }
        if diff.jobs.len() > MARKDOWN_ROWS {
            let _ = writeln!(
                out,
                "\n_… and {} more jobs (the JSON report's `schedule.jobs` has every one)._",
                diff.jobs.len() - MARKDOWN_ROWS
            );
        }
        out.push('\n');
    }
    if !diff.utilisation.is_empty() {
        out.push_str("| site | device | utilisation before | after | change |\n");
        out.push_str("| --- | --- | --: | --: | --: |\n");
        for u in &diff.utilisation {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                escape(&u.site),
                escape(&u.device),
                loam_ir::display::percent(u.utilisation.0),
                loam_ir::display::percent(u.utilisation.1),
                percent_signed(u.utilisation.1 - u.utilisation.0)
            );
        }
        out.push('\n');
    }
    out.push_str("</details>\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_ir::schedule::{DayUsage, DeadlineVerdict, RunInterval, ScheduleTotals};
    use loam_ir::types::Priority;

    fn job(name: &str, start: f64, finish: f64, deadline: Option<(f64, &str)>) -> ScheduledJob {
        ScheduledJob {
            job: name.to_string(),
            file: format!("jobs/{name}.loam"),
            kind: "job".to_string(),
            tenant: "nlp".to_string(),
            priority: Priority::Normal,
            pool: "xirang".to_string(),
            devices: 64,
            submit_h: 0.0,
            start_h: Some(start),
            finish_h: Some(finish),
            wait_h: start,
            preemptions: Vec::new(),
            lost_work_h: 0.0,
            deadline: deadline.map(|(d, v)| DeadlineVerdict {
                deadline_h: d,
                verdict: v.to_string(),
                finish_h: Some(finish),
                finish_p50_h: None,
                finish_p90_h: None,
                probability_met: None,
            }),
            placement: Default::default(),
            status: "finished".to_string(),
            reason: String::new(),
            runs: vec![RunInterval {
                from_h: start,
                to_h: finish,
            }],
        }
    }

    fn schedule(jobs: Vec<ScheduledJob>, busy: f64) -> Schedule {
        let met = jobs
            .iter()
            .filter(|j| j.deadline.as_ref().is_some_and(|d| d.verdict == "met"))
            .count();
        let deadlines = jobs.iter().filter(|j| j.deadline.is_some()).count();
        let days = (0..4)
            .map(|day| DayUsage {
                day,
                devices: 512,
                utilisation: busy,
                free_devices: 0,
                fragmentation: 0,
            })
            .collect();
        Schedule {
            start: "2026-12-07".to_string(),
            horizon_h: 96.0,
            totals: ScheduleTotals {
                jobs: jobs.len(),
                deadlines,
                met,
                missed: deadlines - met,
                wait_h: jobs.iter().map(|j| j.wait_h).sum(),
                ..ScheduleTotals::default()
            },
            jobs,
            utilisation: BTreeMap::from([(
                "shanghai".to_string(),
                BTreeMap::from([("H100_SXM".to_string(), days)]),
            )]),
            ..Schedule::default()
        }
    }

    /// A pull request adds `urgent`, which runs first: `a` starts 30 h later and misses its
    /// 40-h deadline (finish 20 → 50 h), `b` 30 h later too (finish 60 → 90 h, no deadline);
    /// utilisation 25 % → 40 %. Waiting: 0 + 20 = 20 h before, 30 + 50 + 0 = 80 h after.
    /// Spans of two days and more read in days: 80 h = 3.3 days, 50 h = 2.1 days.
    #[test]
    fn an_added_job_that_delays_two_and_breaks_a_deadline() {
        let base = schedule(
            vec![
                job("a", 0.0, 20.0, Some((40.0, "met"))),
                job("b", 20.0, 60.0, None),
            ],
            0.25,
        );
        let head = schedule(
            vec![
                job("a", 30.0, 50.0, Some((40.0, "missed"))),
                job("b", 50.0, 90.0, None),
                job("urgent", 0.0, 30.0, Some((36.0, "met"))),
            ],
            0.40,
        );
        let diff = compare(&base, &head).unwrap();
        assert_eq!(diff.delayed, 2);
        assert_eq!(diff.max_delay_h, 30.0);
        assert_eq!(diff.deadlines_lost, ["a"]);
        assert!(diff.deadlines_won.is_empty());
        // Both delayed by 30 h, so file order; then the added job (no delay).
        let order: Vec<(&str, &str)> = diff
            .jobs
            .iter()
            .map(|m| (m.job.as_str(), m.change.as_str()))
            .collect();
        assert_eq!(order, [("a", "moved"), ("b", "moved"), ("urgent", "added")]);
        assert_eq!(
            headline_part(&diff).unwrap(),
            "schedule: delays 2 jobs (up to +30.0 h), loses 1 deadline (`a`)"
        );
        let text = text(&diff);
        assert!(
            text.contains("  deadlines met 1 of 1 → 1 of 2; waiting 20.0 h → 3.3 days\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  moved    a: finish 20.0 h → 2.1 days (+30.0 h), deadline met → missed\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  utilisation shanghai H100_SXM: 25.0 % → 40.0 % (+15.0 %)\n"),
            "{text}"
        );
        let md = markdown(&diff);
        assert!(md.starts_with("<details><summary>Schedule: delays 2 jobs (up to +30.0 h), loses 1 deadline ('a'); deadlines met 1 → 1</summary>"), "{md}");
        assert!(
            md.contains("| `a` | moved | 20.0 h | 2.1 days | +30.0 h | met → missed |"),
            "{md}"
        );
    }

    /// Nothing moves: no diff. A job 0.01 h earlier is rounding, not a move.
    #[test]
    fn the_same_schedule_is_no_change() {
        let base = schedule(vec![job("a", 0.0, 20.0, None)], 0.25);
        assert_eq!(compare(&base, &base), None);
        let nudged = schedule(vec![job("a", 0.0, 19.99, None)], 0.25);
        assert_eq!(compare(&base, &nudged), None);
    }

    /// 25 jobs each 1 h later: the comment's table shows 20 and says 5 more.
    #[test]
    fn the_comment_table_is_bounded() {
        let base = schedule(
            (0..25)
                .map(|k| job(&format!("j{k:02}"), 0.0, 10.0, None))
                .collect(),
            0.5,
        );
        let head = schedule(
            (0..25)
                .map(|k| job(&format!("j{k:02}"), 1.0, 11.0, None))
                .collect(),
            0.5,
        );
        let diff = compare(&base, &head).unwrap();
        let md = markdown(&diff);
        assert_eq!(md.matches("| moved |").count(), MARKDOWN_ROWS);
        assert!(md.contains("… and 5 more jobs"), "{md}");
    }
}
