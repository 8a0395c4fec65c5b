//! The plan page's "The pool over time" section: the schedule of every job together (`loam
//! schedule`), its verdict in one line, the utilisation heatmap and a Gantt chart per site.

use crate::figures::{gantt, heatmap};
use crate::svg::esc;
use loam_ir::display::hours_or_days;
use loam_ir::schedule::{Schedule, ScheduledJob};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The site a job's row is drawn under: its placement's first site (a plan over two sites is
/// drawn once, under the first, and its tooltip names both).
fn site_of(job: &ScheduledJob) -> &str {
    job.placement
        .site
        .split('+')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("unplaced")
}

/// The verdict of the schedule in one sentence.
pub fn verdict(schedule: &Schedule) -> String {
    let t = &schedule.totals;
    let mut parts = vec![format!(
        "{} jobs scheduled together from {} over {}",
        t.jobs,
        schedule.start,
        hours_or_days(schedule.horizon_h)
    )];
    if t.deadlines > 0 {
        let mut d = format!("{} of {} deadlines met", t.met, t.deadlines);
        if t.at_risk > 0 {
            let _ = write!(d, ", {} at risk", t.at_risk);
        }
        if t.missed > 0 {
            let _ = write!(d, ", {} missed", t.missed);
        }
        parts.push(d);
    }
    parts.push(format!(
        "longest wait {}",
        hours_or_days(t.max_wait_h.max(0.0))
    ));
    if t.preemptions > 0 {
        parts.push(format!(
            "{} preemption{} losing {} device-hours",
            t.preemptions,
            if t.preemptions == 1 { "" } else { "s" },
            loam_ir::display::thousands(t.lost_device_hours)
        ));
    }
    if t.never_started > 0 {
        parts.push(format!("{} never start", t.never_started));
    }
    format!("{}.", parts.join(" · "))
}

/// The section, with figure ids from `id`; an empty schedule gives an empty string.
pub fn section(schedule: &Schedule, id: &str) -> String {
    if schedule.jobs.is_empty() {
        return String::new();
    }
    let good = schedule.totals.missed == 0 && schedule.totals.never_started == 0;
    let mut out = format!(
        "<section class=\"pool\" id=\"{}\"><h2>The pool over time</h2><p class=\"verdict {}\">{}</p><p>Every job scheduled together on its pool by the rules of <code>loam schedule</code> (docs/scheduling.md): submit times, priorities, quotas and preemption.</p>",
        esc(id),
        if good { "ok" } else { "bad" },
        esc(&verdict(schedule))
    );
    if let Some(f) = heatmap::utilisation(&format!("{id}-utilisation"), &schedule.utilisation) {
        out.push_str(&f.html(&format!("{id}-utilisation-figure")));
    }
    let mut by_site: BTreeMap<&str, Vec<&ScheduledJob>> = BTreeMap::new();
    for job in &schedule.jobs {
        by_site.entry(site_of(job)).or_default().push(job);
    }
    for (k, (site, jobs)) in by_site.iter().enumerate() {
        let fid = format!("{id}-gantt-{k}");
        if let Some(f) = gantt::site(&fid, site, jobs, schedule.horizon_h) {
            out.push_str(&f.html(&format!("{fid}-figure")));
        }
    }
    out.push_str("</section>\n");
    out
}
