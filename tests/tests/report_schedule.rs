//! The plan page's "The pool over time" section (issue 33, item 5): a utilisation heatmap (site
//! × day) and a Gantt chart per site, drawn from a schedule (`loam_ir::schedule::Schedule`, as
//! `loam schedule` computes it). Checked on a small hand-made schedule whose every mark is known
//! (waits, preemptions, deadlines met and missed), in the page's text and in a real headless
//! Chromium like the other figures (no console error, no overlapping labels, nothing wider than
//! the window, a table under every figure); and a 1,000-job schedule over 200 days stays
//! bounded: 40 rows per chart, 200 per table, a week per heatmap cell, each said on the page.

use loam_ir::plan::{FORMAT_VERSION, PlanDocument};
use loam_ir::schedule::{
    DayUsage, DeadlineVerdict, Placement, Preemption, RunInterval, Schedule, ScheduleTotals,
    ScheduledJob,
};
use loam_ir::types::Priority;
use loam_report::{PlanPage, plan_page};
use loam_tests::browser::checks::page_problems;
use loam_tests::browser::{DESKTOP, PHONE, session};
use std::collections::BTreeMap;

fn empty_document() -> PlanDocument {
    PlanDocument {
        format_version: FORMAT_VERSION.to_string(),
        catalogue_digest: "sha256:test".to_string(),
        plans: Vec::new(),
        services: Vec::new(),
    }
}

#[allow(clippy::too_many_arguments)]
fn job(
    name: &str,
    site: &str,
    priority: Priority,
    devices: u64,
    submit_h: f64,
    runs: &[(f64, f64)],
    preemptions: Vec<Preemption>,
    deadline: Option<(f64, &str)>,
) -> ScheduledJob {
    let start_h = runs.first().map(|r| r.0);
    let finish_h = runs.last().map(|r| r.1);
    ScheduledJob {
        job: name.to_string(),
        file: format!("jobs/{name}.loam"),
        kind: "job".to_string(),
        tenant: "nlp".to_string(),
        priority,
        pool: "xirang".to_string(),
        devices,
        submit_h,
        start_h,
        finish_h,
        wait_h: start_h.map_or(0.0, |s| s - submit_h),
        lost_work_h: preemptions.iter().map(|p| p.lost_work_h).sum(),
        preemptions,
        deadline: deadline.map(|(d, verdict)| DeadlineVerdict {
            deadline_h: d,
            verdict: verdict.to_string(),
            finish_h,
            finish_p50_h: None,
            finish_p90_h: None,
            probability_met: None,
        }),
        placement: Placement {
            site: site.to_string(),
            device: "H100_SXM".to_string(),
            node_groups: vec![format!("{site}-h100")],
            replaced: None,
        },
        status: if finish_h.is_some() {
            "finished"
        } else {
            "queued"
        }
        .to_string(),
        reason: String::new(),
        runs: runs
            .iter()
            .map(|&(from_h, to_h)| RunInterval { from_h, to_h })
            .collect(),
    }
}

fn days(n: u64, devices: u64, busy: impl Fn(u64) -> f64) -> Vec<DayUsage> {
    (0..n)
        .map(|day| DayUsage {
            day,
            devices,
            utilisation: busy(day),
            free_devices: devices - (busy(day) * devices as f64).round() as u64,
            fragmentation: day % 3,
        })
        .collect()
}

/// Two sites over ten days:
/// - shanghai: `pretrain` (critical, 256 devices) runs days 0-6 and meets its day-8 deadline;
///   `finetune` (low) starts at once, is preempted by `pretrain2` at day 1 (lost 6 h), resumes
///   day 3 and misses its day-4 deadline; `pretrain2` (high) runs days 1-3.
/// - guiyang: `eval` waits 2 days (submitted day 0, starts day 2) and runs one day.
fn small() -> Schedule {
    let d = 24.0;
    let jobs = vec![
        job(
            "pretrain",
            "shanghai",
            Priority::Critical,
            256,
            0.0,
            &[(0.0, 6.0 * d)],
            Vec::new(),
            Some((8.0 * d, "met")),
        ),
        job(
            "finetune",
            "shanghai",
            Priority::Low,
            64,
            0.0,
            &[(0.0, 1.0 * d), (3.0 * d, 5.0 * d)],
            vec![Preemption {
                at_h: 1.0 * d,
                by: "pretrain2".to_string(),
                rule: "priority".to_string(),
                lost_work_h: 6.0,
            }],
            Some((4.0 * d, "missed")),
        ),
        job(
            "pretrain2",
            "shanghai",
            Priority::High,
            64,
            1.0 * d,
            &[(1.0 * d, 3.0 * d)],
            Vec::new(),
            None,
        ),
        job(
            "eval",
            "guiyang",
            Priority::Normal,
            8,
            0.0,
            &[(2.0 * d, 3.0 * d)],
            Vec::new(),
            None,
        ),
    ];
    let mut utilisation = BTreeMap::new();
    utilisation.insert(
        "guiyang".to_string(),
        BTreeMap::from([(
            "H800_SXM".to_string(),
            days(10, 64, |day| if day == 2 { 0.125 } else { 0.0 }),
        )]),
    );
    utilisation.insert(
        "shanghai".to_string(),
        BTreeMap::from([(
            "H100_SXM".to_string(),
            days(10, 512, |day| if day < 6 { 0.625 } else { 0.0 }),
        )]),
    );
    Schedule {
        start: "2026-12-07".to_string(),
        horizon_h: 10.0 * d,
        totals: ScheduleTotals {
            jobs: 4,
            deadlines: 2,
            met: 1,
            missed: 1,
            max_wait_h: 2.0 * d,
            wait_h: 2.0 * d,
            preemptions: 1,
            lost_device_hours: 384.0,
            ..ScheduleTotals::default()
        },
        jobs,
        utilisation,
        queue: Vec::new(),
        monte_carlo: None,
        what_if: None,
    }
}

fn page(schedule: &Schedule) -> String {
    let doc = empty_document();
    plan_page(&PlanPage {
        title: "loam plan: schedule",
        document: &doc,
        cluster: None,
        problems: Vec::new(),
        schedule: Some(schedule),
    })
}

/// The `data-figure` kinds on the page, in order.
fn kinds(html: &str) -> Vec<String> {
    html.split("data-figure=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn the_pool_section_has_a_heatmap_and_a_gantt_chart_per_site() {
    let html = page(&small());
    assert!(html.contains("<h2>The pool over time</h2>"), "{html}");
    // Sites in name order: guiyang, then shanghai.
    assert_eq!(kinds(&html), ["utilisation", "gantt", "gantt"]);
    assert!(html.contains("Schedule at guiyang") && html.contains("Schedule at shanghai"));
    // The verdict line: 1 of 2 deadlines met, 1 missed; the longest wait 2 days = 48 h, which
    // hours_or_days writes as "2.0 days"; one preemption, 384 device-hours lost (64 × 6 h).
    assert!(
        html.contains("4 jobs scheduled together from 2026-12-07 over 10.0 days · 1 of 2 deadlines met, 1 missed · longest wait 2.0 days · 1 preemption losing 384 device-hours."),
        "{html}"
    );
}

#[test]
fn waits_preemptions_and_deadlines_are_marked_with_their_numbers() {
    let html = page(&small());
    // eval waits from day 0 to day 2: 48 h.
    assert!(html.contains("eval waits 2.0 days from day 0.0"), "{html}");
    // finetune holds devices twice: days 0-1 and 3-5, and is preempted at day 1 by pretrain2.
    assert!(html.contains("finetune: 64 × H100_SXM at shanghai, day 0.0 to day 1.0"));
    assert!(html.contains("finetune: 64 × H100_SXM at shanghai, day 3.0 to day 5.0"));
    assert!(
        html.contains("finetune preempted by pretrain2 (priority) at day 1.0, 6.0 h of work lost")
    );
    // Deadlines: pretrain's at day 8 met (ink), finetune's at day 4 missed (vermillion).
    assert!(html.contains("pretrain: deadline day 8.0 (met)"));
    assert!(html.contains("finetune: deadline day 4.0 (missed)"));
    let missed_mark = html.find("finetune: deadline day 4.0 (missed)").unwrap();
    let rect = &html[html[..missed_mark].rfind("<rect").unwrap()..missed_mark];
    assert!(rect.contains("fill=\"#D55E00\""), "{rect}");
    // The heatmap: shanghai's 512 devices 62.5 % busy on days 0-5 (320 of 512), 0 % after:
    // mean over 10 days = 6 × 62.5 / 10 = 37.5 %; its cells shade #0072B2 at 62.5 %:
    // 255 + (0 - 255) × 0.625 = 95.6 → 96 = 0x60; 255 - 141 × 0.625 = 166.9 → 167 = 0xA7;
    // 255 - 77 × 0.625 = 206.9 → 207 = 0xCF.
    assert!(
        html.contains("shanghai H100_SXM, day 0: 62.5 % busy, 192 free"),
        "{html}"
    );
    assert!(html.contains("fill=\"#60A7CF\""));
    assert!(html.contains("<td class=\"num\">37.5 %</td>"));
}

/// 1,000 jobs at one site over 200 days: the chart draws 40 rows and says how many more, the
/// table lists 200 and says the rest are in the JSON, the heatmap draws weeks.
#[test]
fn a_thousand_job_schedule_makes_a_bounded_page() {
    let mut schedule = small();
    schedule.horizon_h = 200.0 * 24.0;
    schedule.jobs = (0..1000)
        .map(|k| {
            let start = f64::from(k) * 4.0;
            job(
                &format!("job-{k:04}"),
                "shanghai",
                Priority::Normal,
                8,
                0.0,
                &[(start, start + 10.0)],
                Vec::new(),
                Some((start + 12.0, "met")),
            )
        })
        .collect();
    schedule.utilisation = BTreeMap::from([(
        "shanghai".to_string(),
        BTreeMap::from([("H100_SXM".to_string(), days(200, 512, |_| 0.5))]),
    )]);
    let html = page(&schedule);
    // 1,000 - 40 = 960 more in the chart; 1,000 - 200 = 800 more in the table.
    assert!(
        html.contains("+ 960 more jobs starting later"),
        "chart rows"
    );
    assert!(html.contains("… 800 more jobs"), "table rows");
    assert!(html.contains("The chart shows the first 40 of 1000 jobs by start."));
    // Job 39 is the 40th by start and drawn; job 40 is in the table only (once: its row).
    assert!(html.contains("job-0039: deadline"));
    assert!(!html.contains("job-0040: deadline"));
    // 200 days > 120: weeks, ceil(200 / 7) = 29 cells.
    assert!(html.contains("a cell is a week&#39;s mean"));
    assert_eq!(html.matches("shanghai H100_SXM, days ").count(), 29);
    // Bounded: the page of 1,000 jobs under 100 kB (measured: 86,048 bytes).
    assert!(html.len() < 100_000, "{} bytes", html.len());
}

/// The section in a real Chromium at a desktop's and a phone's width: no problem the report's
/// checker finds (console errors, overlapping labels, a figure without its parts, a page wider
/// than the window).
#[test]
fn the_pool_section_passes_the_report_checks_in_chromium() {
    let Some(session) = session() else {
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix("loam-report-schedule-")
        .tempdir()
        .unwrap();
    for (name, schedule) in [
        ("small", small()),
        ("big", {
            let mut s = small();
            for k in 0..60 {
                let start = f64::from(k) * 3.0;
                s.jobs.push(job(
                    &format!("a-rather-long-job-name-number-{k:02}"),
                    "shanghai",
                    Priority::Low,
                    8,
                    0.0,
                    &[(start, start + 20.0)],
                    Vec::new(),
                    None,
                ));
            }
            s
        }),
    ] {
        let path = dir.path().join(format!("{name}.html"));
        std::fs::write(&path, page(&schedule)).unwrap();
        let url = format!("file://{}", path.canonicalize().unwrap().display());
        for viewport in [DESKTOP, PHONE] {
            let shown = session.open(&url, viewport, false);
            let problems = page_problems(&shown);
            assert!(
                problems.is_empty(),
                "{name} at {} px: {problems:#?}",
                viewport.width
            );
        }
    }
}

/// `loam report` over three examples (one an interruptible job with a daily window) draws the
/// pool section from the CLI's own schedule: a heatmap and a Gantt chart per site the jobs
/// run at, and the page passes the browser's checks.
#[test]
fn loam_report_of_several_jobs_draws_the_pool_section() {
    let dir = tempfile::Builder::new()
        .prefix("loam-report-pool-")
        .tempdir()
        .unwrap();
    let out = dir.path().join("pool.html");
    let paths: Vec<String> = [
        "examples/llama3-70b-pretrain.loam",
        "examples/llama3-8b-finetune.loam",
        "examples/interruptible-cost-7b.loam",
    ]
    .iter()
    .map(|p| loam_tests::repo_root().join(p).display().to_string())
    .collect();
    let mut args = vec!["report"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--out", out.to_str().unwrap()]);
    let (code, _, err) = loam_tests::run_cli(&args, "");
    assert!(code <= 1, "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        html.contains("<h2>The pool over time</h2>"),
        "no pool section"
    );
    let figures = kinds(&html);
    assert_eq!(
        figures.iter().filter(|k| *k == "utilisation").count(),
        1,
        "{figures:?}"
    );
    assert!(figures.iter().any(|k| k == "gantt"), "{figures:?}");
    // Every job has its row: its name in a bar's tooltip (`<job>: <devices> × …`).
    for job in ["llama3-70b-pretrain", "llama3-8b-sft", "qwen-7b-continued"] {
        assert!(html.contains(&format!("<title>{job}: ")), "{job}");
    }
    let Some(session) = session() else {
        return;
    };
    let url = format!("file://{}", out.canonicalize().unwrap().display());
    for viewport in [DESKTOP, PHONE] {
        let problems = page_problems(&session.open(&url, viewport, false));
        assert!(problems.is_empty(), "{} px: {problems:#?}", viewport.width);
    }
}
