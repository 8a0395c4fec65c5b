//! The schedule's Gantt chart of one site: a row per job, its wait from submission to start,
//! the intervals it holds devices, the preemptions it suffers and its deadline, on one time
//! axis in days.

use crate::figure::{Figure, Kind, Table, palette};
use crate::svg::{Anchor, FONT, Scale, Svg, text_width, ticks};
use loam_ir::display::{decimals, hours_or_days};
use loam_ir::schedule::ScheduledJob;
use loam_ir::types::Priority;

/// Rows drawn per site: beyond them the jobs that start latest are summed up in one row, so a
/// 1,000-job schedule draws a chart of bounded height (40 rows of 20 units: 800 units, about a
/// screen). (counted)
pub const MAX_ROWS: usize = 40;

/// Rows of the table under the chart: beyond them one row counts the rest, so the page stays
/// bounded too (a few hundred rows are still quick to scroll and print). (counted)
pub const MAX_TABLE_ROWS: usize = 200;

/// Widest job label, in drawing units; longer names are cut with `…` (the table has them
/// whole). (counted: a third of the 760-unit drawing)
const LABEL_MAX_W: f64 = 220.0;

const ROW_H: f64 = 20.0;
const BAR_H: f64 = 12.0;

/// The fill of a priority's bars: distinct in the Okabe–Ito palette and from the red-orange of a
/// missed deadline.
pub fn priority_colour(priority: Priority) -> &'static str {
    match priority {
        Priority::Critical => palette::PURPLE,
        Priority::High => palette::ORANGE,
        Priority::Normal => palette::BLUE,
        Priority::Low => palette::SKY,
    }
}

/// `name` cut to `width` units with `…`.
pub fn fit(name: &str, width: f64) -> String {
    if text_width(name, FONT) <= width {
        return name.to_string();
    }
    let mut out = String::new();
    for c in name.chars() {
        out.push(c);
        if text_width(&format!("{out}…"), FONT) > width {
            out.pop();
            break;
        }
    }
    format!("{out}…")
}

/// Days with one decimal, as the axis reads (`12.5 d`).
fn day(hours: f64) -> String {
    format!("day {}", decimals(hours / 24.0, 1))
}

/// The order rows are drawn in: first start (never started last), then submission, file, name.
pub fn by_start(a: &&ScheduledJob, b: &&ScheduledJob) -> std::cmp::Ordering {
    let key = |j: &ScheduledJob| j.start_h.unwrap_or(f64::INFINITY);
    key(a)
        .total_cmp(&key(b))
        .then(a.submit_h.total_cmp(&b.submit_h))
        .then(a.file.cmp(&b.file))
        .then(a.job.cmp(&b.job))
}

/// The Gantt chart of the jobs of `site` (in any order; drawn by start), over `horizon_h`;
/// `None` when the site has no job.
pub fn site(id: &str, site: &str, jobs: &[&ScheduledJob], horizon_h: f64) -> Option<Figure> {
    if jobs.is_empty() {
        return None;
    }
    let mut sorted: Vec<&ScheduledJob> = jobs.to_vec();
    sorted.sort_by(by_start);
    let (shown, rest) = sorted.split_at(sorted.len().min(MAX_ROWS));
    let end_h = horizon_h.max(f64::EPSILON);
    let width = 760.0;
    let mut svg = Svg::new(id, width, 10.0);
    // Legend: the priorities drawn, then the marks.
    let mut priorities: Vec<Priority> = sorted.iter().map(|j| j.priority).collect();
    priorities.sort();
    priorities.dedup();
    let mut x = 12.0;
    let mut y = 14.0;
    let mut legend: Vec<(String, String)> = vec![("waiting".to_string(), palette::PALE.into())];
    for p in priorities.iter().rev() {
        legend.push((format!("{p} priority"), priority_colour(*p).into()));
    }
    legend.push(("preempted".to_string(), palette::YELLOW.into()));
    legend.push(("deadline".to_string(), palette::INK.into()));
    for (name, colour) in &legend {
        let w = 17.0 + text_width(name, FONT) + 14.0;
        if x + w > width - 12.0 {
            x = 12.0;
            y += 20.0;
        }
        x = svg.legend_item(x, y, colour, name);
    }
    let top = y + 14.0;
    let label_w = shown
        .iter()
        .map(|j| text_width(&j.job, FONT))
        .fold(0.0, f64::max)
        .min(LABEL_MAX_W)
        + 10.0;
    let left = 12.0 + label_w;
    let right = width - 16.0;
    let t = ticks(0.0, end_h / 24.0, 6);
    let scale = Scale {
        domain: (
            0.0,
            t.last().copied().unwrap_or(end_h / 24.0).max(f64::EPSILON),
        ),
        range: (left, right),
    };
    let at = |h: f64| scale.at(h.clamp(0.0, end_h) / 24.0);
    for (k, job) in shown.iter().enumerate() {
        let ry = top + k as f64 * ROW_H;
        let by = ry + (ROW_H - BAR_H) / 2.0;
        svg.text(
            12.0,
            by + BAR_H - 1.0,
            Anchor::Start,
            &fit(&job.job, label_w - 10.0),
        );
        let waited_to = job.start_h.unwrap_or(end_h);
        if waited_to > job.submit_h {
            let mut tip = format!(
                "{} waits {} from {}",
                job.job,
                hours_or_days(waited_to - job.submit_h),
                day(job.submit_h)
            );
            if !job.reason.is_empty() {
                tip.push_str(&format!(": {}", job.reason));
            }
            svg.rect_styled(
                at(job.submit_h),
                by,
                at(waited_to) - at(job.submit_h),
                BAR_H,
                palette::PALE,
                Some(palette::MUTED),
                Some(&tip),
            );
        }
        // After a preemption the job waits again until its next interval: grey too. (Gaps
        // without a preemption are a window job's closed hours, not a wait.)
        for pair in job.runs.windows(2) {
            let (Some(before), Some(after)) = (pair.first(), pair.get(1)) else {
                continue;
            };
            let preempted = job
                .preemptions
                .iter()
                .any(|p| (p.at_h - before.to_h).abs() < 1e-6);
            if preempted && after.from_h > before.to_h {
                let tip = format!(
                    "{} waits {} after its preemption, from {}",
                    job.job,
                    hours_or_days(after.from_h - before.to_h),
                    day(before.to_h)
                );
                svg.rect_styled(
                    at(before.to_h),
                    by,
                    at(after.from_h) - at(before.to_h),
                    BAR_H,
                    palette::PALE,
                    Some(palette::MUTED),
                    Some(&tip),
                );
            }
        }
        for run in &job.runs {
            let tip = format!(
                "{}: {} × {} at {}, {} to {}",
                job.job,
                job.devices,
                job.placement.device,
                job.placement.site,
                day(run.from_h),
                day(run.to_h)
            );
            svg.rect(
                at(run.from_h),
                by,
                (at(run.to_h) - at(run.from_h)).max(1.0),
                BAR_H,
                priority_colour(job.priority),
                Some(&tip),
            );
        }
        for p in &job.preemptions {
            let tip = format!(
                "{} preempted by {} ({}) at {}, {} of work lost",
                job.job,
                p.by,
                p.rule,
                day(p.at_h),
                hours_or_days(p.lost_work_h)
            );
            svg.rect_styled(
                at(p.at_h) - 2.0,
                by - 2.0,
                4.0,
                BAR_H + 4.0,
                palette::YELLOW,
                Some(palette::INK),
                Some(&tip),
            );
        }
        if let Some(d) = &job.deadline {
            let missed = d.verdict == "missed";
            let tip = format!(
                "{}: deadline {} ({})",
                job.job,
                day(d.deadline_h),
                d.verdict
            );
            let colour = if missed {
                palette::VERMILLION
            } else {
                palette::INK
            };
            svg.rect(at(d.deadline_h) - 1.5, ry, 3.0, ROW_H, colour, Some(&tip));
        }
    }
    let mut bottom = top + shown.len() as f64 * ROW_H;
    if !rest.is_empty() {
        let started = rest.iter().filter(|j| j.start_h.is_some()).count();
        svg.text_styled(
            12.0,
            bottom + 14.0,
            Anchor::Start,
            FONT,
            false,
            palette::MUTED,
            &format!(
                "+ {} more jobs starting later ({} start within the horizon): in the table",
                rest.len(),
                started
            ),
        );
        bottom += ROW_H;
    }
    let y_axis = svg.bottom_axis(bottom + 6.0, &scale, &t, "days from the schedule's start");
    svg.ensure_height(y_axis);

    let mut table = Table::new(
        &[
            "job",
            "priority",
            "devices",
            "submit",
            "start",
            "finish",
            "waited",
            "preemptions",
            "deadline",
            "status",
        ],
        &[
            false, false, true, true, true, true, true, true, false, false,
        ],
    );
    for job in sorted.iter().take(MAX_TABLE_ROWS) {
        table.row(vec![
            job.job.clone(),
            job.priority.to_string(),
            job.devices.to_string(),
            day(job.submit_h),
            job.start_h.map(day).unwrap_or_else(|| "—".into()),
            job.finish_h.map(day).unwrap_or_else(|| "—".into()),
            hours_or_days(job.wait_h),
            job.preemptions.len().to_string(),
            job.deadline.as_ref().map_or(String::new(), |d| {
                format!("{} ({})", day(d.deadline_h), d.verdict)
            }),
            job.status.clone(),
        ]);
    }
    if sorted.len() > MAX_TABLE_ROWS {
        table.row(vec![
            format!("… {} more jobs", sorted.len() - MAX_TABLE_ROWS),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            "in loam schedule --format json".to_string(),
        ]);
    }
    let waited = sorted.iter().filter(|j| j.wait_h > 0.0).count();
    let preempted = sorted.iter().filter(|j| !j.preemptions.is_empty()).count();
    let missed = sorted
        .iter()
        .filter(|j| j.deadline.as_ref().is_some_and(|d| d.verdict == "missed"))
        .count();
    let desc = format!(
        "{} jobs at {site} over {}: {waited} wait before they start, {preempted} are preempted, {missed} miss their deadline.",
        sorted.len(),
        hours_or_days(horizon_h)
    );
    let mut caption = "Each row is a job: grey while it waits (after submission, after a preemption), coloured by priority while it holds devices, a yellow mark where it is preempted, a black line at its deadline (red-orange when missed).".to_string();
    if !rest.is_empty() {
        caption.push_str(&format!(
            " The chart shows the first {MAX_ROWS} of {} jobs by start.",
            sorted.len()
        ));
    }
    if sorted.len() > MAX_TABLE_ROWS {
        caption.push_str(&format!(
            " The table lists the first {MAX_TABLE_ROWS}; loam schedule --format json has them all."
        ));
    }
    Some(Figure {
        kind: Kind::Gantt,
        title: format!("Schedule at {site}"),
        svg: svg.finish(&format!("The schedule at {site}"), &desc),
        caption,
        legend: Vec::new(),
        table,
    })
}
