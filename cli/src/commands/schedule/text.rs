//! The schedule as text for people: the verdict and totals first, then each job, then each
//! site's utilisation; bounded, so a thousand-job repository prints a page, not a book.

use loam_ir::display::{money, thousands};
use loam_ir::schedule::{DayUsage, Schedule, ScheduleTotals, ScheduledJob};
use std::fmt::Write as _;

/// Most jobs listed one per line (counted: a screenful or two); the rest are counted, and
/// `--format json` has them all. Jobs that miss or risk a deadline, or never run, come first.
const MAX_JOB_LINES: usize = 60;

/// Days as people read them: `3.5 d` (hours below a day: `6.0 h`).
fn when(hours: f64) -> String {
    if hours.abs() < 24.0 {
        format!("{hours:.1} h")
    } else {
        format!("{:.1} d", hours / 24.0)
    }
}

/// Day `d` of the schedule as a date-free label: `day 12.5`.
fn day(hours: f64) -> String {
    format!("day {:.1}", hours / 24.0)
}

/// The headline: `38 of 40 deadlines met; 1 at risk: a; 1 missed: b (finishes day 42.0,
/// deadline day 40.0)`.
fn headline(s: &Schedule) -> String {
    let t = &s.totals;
    let mut out = if t.deadlines == 0 {
        "no job states a deadline".to_string()
    } else {
        format!("{} of {} deadlines met", t.met, t.deadlines)
    };
    let named = |verdict: &str| -> Vec<String> {
        s.jobs
            .iter()
            .filter_map(|j| {
                let d = j.deadline.as_ref()?;
                (d.verdict == verdict).then(|| {
                    let finish = d
                        .finish_p90_h
                        .or(d.finish_h)
                        .map_or("not finished in the horizon".to_string(), |f| {
                            format!("finishes {}", day(f))
                        });
                    format!("{} ({finish}, deadline {})", j.job, day(d.deadline_h))
                })
            })
            .collect()
    };
    for (verdict, label) in [("at-risk", "at risk"), ("missed", "missed")] {
        let names = named(verdict);
        if !names.is_empty() {
            let shown: Vec<String> = names.iter().take(5).cloned().collect();
            let more = names.len().saturating_sub(shown.len());
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            let _ = write!(out, "; {} {label}: {}{tail}", names.len(), shown.join(", "));
        }
    }
    out
}

/// The totals in two lines.
fn totals(t: &ScheduleTotals) -> String {
    let cost: Vec<String> = t.cost.iter().map(|(c, a)| money(*a, c)).collect();
    let services = match t.services {
        0 => String::new(),
        1 => " and 1 service".to_string(),
        n => format!(" and {n} services"),
    };
    format!(
        "{} jobs{services}; waited {} in all (longest {}); {} never started; {} preemptions losing {} device-hours\n{} device-hours, {}\n",
        t.jobs,
        when(t.wait_h),
        when(t.max_wait_h),
        t.never_started,
        t.preemptions,
        thousands(t.lost_device_hours),
        thousands(t.device_hours),
        if cost.is_empty() {
            "no cost".to_string()
        } else {
            cost.join(" + ")
        }
    )
}

/// One job's line.
fn job_line(j: &ScheduledJob) -> String {
    let span = match (j.start_h, j.finish_h) {
        (Some(a), Some(b)) => format!("{} → {}", day(a), day(b)),
        (Some(a), None) => format!("{} → (running)", day(a)),
        _ => j.status.clone(),
    };
    let mut line = format!(
        "  {:<28} {:>6} {:<10} {span}, waits {}",
        j.job,
        j.devices,
        j.tenant,
        when(j.wait_h)
    );
    if let Some(d) = &j.deadline {
        let _ = write!(line, "; deadline {} {}", day(d.deadline_h), d.verdict);
        if let (Some(p50), Some(p90), Some(p)) = (d.finish_p50_h, d.finish_p90_h, d.probability_met)
        {
            let _ = write!(
                line,
                " (P50 {}, P90 {}, P(met) {:.0} %)",
                day(p50),
                day(p90),
                p * 100.0
            );
        }
    }
    if !j.preemptions.is_empty() {
        let _ = write!(
            line,
            "; preempted {}× losing {}",
            j.preemptions.len(),
            when(j.lost_work_h)
        );
    }
    if !j.reason.is_empty() && (j.finish_h.is_none() || j.wait_h > 0.0) {
        let _ = write!(line, "; {}", j.reason);
    }
    if let Some(moved) = &j.placement.replaced {
        if moved.migrated_at_h.is_some() {
            let _ = write!(line, "; {} (planned at {})", moved.why, moved.planned_site);
        } else {
            let _ = write!(line, "; moved from {}: {}", moved.planned_site, moved.why);
        }
    }
    line.push('\n');
    line
}

/// How much a job's line matters: missed or never run first, then at risk, then the rest.
fn urgency(j: &ScheduledJob) -> u8 {
    match (
        j.deadline.as_ref().map(|d| d.verdict.as_str()),
        j.status.as_str(),
    ) {
        (Some("missed"), _) | (_, "never" | "not-planned") => 0,
        (Some("at-risk"), _) | (_, "queued") => 1,
        _ => 2,
    }
}

/// Mean utilisation, busiest day, fewest free and most fragmented devices of one site × type.
fn site_line(site: &str, device: &str, days: &[DayUsage]) -> String {
    let devices = days.first().map_or(0, |d| d.devices);
    let mean = if days.is_empty() {
        0.0
    } else {
        days.iter().map(|d| d.utilisation).sum::<f64>() / days.len() as f64
    };
    let peak = days.iter().map(|d| d.utilisation).fold(0.0_f64, f64::max);
    let min_free = days.iter().map(|d| d.free_devices).min().unwrap_or(0);
    let fragmented = days.iter().map(|d| d.fragmentation).max().unwrap_or(0);
    format!(
        "  {site:<12} {device:<14} {devices:>7} {:>5.0} % {:>5.0} % {min_free:>9} {fragmented:>13}\n",
        mean * 100.0,
        peak * 100.0
    )
}

/// The whole text. `default_start` says the start was today's date, so the line tells how to
/// repeat the run.
pub fn render(s: &Schedule, default_start: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", headline(s));
    out.push_str(&totals(&s.totals));
    let repeat = if default_start {
        format!(" (today; pass --start {} to repeat)", s.start)
    } else {
        String::new()
    };
    let _ = writeln!(out, "from {}{repeat}, over {}", s.start, when(s.horizon_h));
    if let Some(mc) = &s.monte_carlo {
        let _ = writeln!(out, "{} samples, seed {}", mc.samples, mc.seed);
    }
    if let Some(w) = &s.what_if {
        let _ = writeln!(out, "\nwhat if: {}", w.changes.join("; "));
        let cost: Vec<String> = w
            .cost_change
            .iter()
            .map(|(c, a)| format!("{}{}", if *a >= 0.0 { "+" } else { "" }, money(*a, c)))
            .collect();
        let _ = writeln!(
            out,
            "  deadlines met {} → {} ({:+}); waiting {} → {}; cost {}",
            w.before.met,
            w.after.met,
            w.deadlines_met_change,
            when(w.before.wait_h),
            when(w.after.wait_h),
            if cost.is_empty() {
                "unchanged".to_string()
            } else {
                cost.join(" ")
            }
        );
        for m in w.moved.iter().take(10) {
            let change = m
                .finish_change_h
                .map_or("finishes or not".to_string(), |h| {
                    format!(
                        "finishes {} {}",
                        when(h.abs()),
                        if h < 0.0 { "earlier" } else { "later" }
                    )
                });
            let verdict = if m.verdict_change.is_empty() {
                String::new()
            } else {
                format!(" ({})", m.verdict_change)
            };
            let _ = writeln!(out, "  {}: {change}{verdict}", m.job);
        }
    }
    let mut jobs: Vec<&ScheduledJob> = s.jobs.iter().collect();
    jobs.sort_by_key(|j| urgency(j));
    let _ = writeln!(
        out,
        "\njobs (name, devices, tenant, start → finish, wait, deadline)"
    );
    for j in jobs.iter().take(MAX_JOB_LINES) {
        out.push_str(&job_line(j));
    }
    if jobs.len() > MAX_JOB_LINES {
        let _ = writeln!(
            out,
            "  … {} more (--format json lists every job)",
            jobs.len() - MAX_JOB_LINES
        );
    }
    let _ = writeln!(
        out,
        "\nutilisation per site (devices, mean, busiest day, fewest free, most fragmented)"
    );
    for (site, devices) in &s.utilisation {
        for (device, days) in devices {
            out.push_str(&site_line(site, device, days));
        }
    }
    out
}
