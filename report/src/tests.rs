//! The pages of real examples, planned with the built-in catalogue: what every page must hold
//! whatever its numbers, and that it holds nothing else.

use crate::{PlanPage, plan_page};
use loam_compiler::catalogue::{builtin, builtin_sources, facts};
use loam_compiler::project::{ProjectFiles, check_project, plan_project};
use loam_ir::plan::PlanDocument;

fn planned(path: &str, text: &str) -> PlanDocument {
    let files = ProjectFiles {
        catalogue: builtin_sources()
            .into_iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect(),
        specs: vec![(path.to_string(), text.as_bytes().to_vec())],
    };
    let checked = check_project(files, 1);
    plan_project(&checked, 1).document
}

fn page(doc: &PlanDocument) -> String {
    let cluster = facts::cluster_map(&builtin());
    plan_page(&PlanPage {
        title: "loam plan: test",
        document: doc,
        cluster: Some(&cluster),
        problems: vec![crate::Problem {
            error: false,
            line: "warning[L3005] a.loam:1:1: needs <more> & more".to_string(),
        }],
        schedule: None,
    })
}

const HETERO: &str = include_str!("../../examples/hetero-70b-guiyang.loam");
const SERVICE: &str = include_str!("../../examples/rag-llama31-8b-service.loam");

/// The `data-figure` kinds of one section, in order.
fn figures_of(html: &str, section_id: &str) -> Vec<String> {
    let start = html
        .find(&format!("id=\"{section_id}\""))
        .expect(section_id);
    let rest = &html[start..];
    let end = rest.find("</section>").unwrap();
    rest[..end]
        .split("data-figure=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn a_job_has_every_figure_its_plan_calls_for() {
    let doc = planned("examples/hetero-70b-guiyang.loam", HETERO);
    let plan = &doc.plans[0];
    assert!(plan.feasible);
    let html = page(&doc);
    let mut expected = vec!["placement"];
    if !plan.alternatives.is_empty() {
        expected.push("alternatives");
    }
    if plan.data.as_ref().is_some_and(|d| !d.options.is_empty()) {
        expected.push("data");
    }
    expected.extend(["step-time", "memory", "schedule"]);
    assert_eq!(figures_of(&html, "job-llama3-70b-mixed"), expected);
}

#[test]
fn every_figure_has_a_text_alternative_a_caption_and_a_table() {
    for (path, text) in [
        ("examples/hetero-70b-guiyang.loam", HETERO),
        ("examples/rag-llama31-8b-service.loam", SERVICE),
    ] {
        let html = page(&planned(path, text));
        let figures: Vec<&str> = html.split("<figure ").skip(1).collect();
        assert!(figures.len() >= 2, "{path}: {} figures", figures.len());
        for f in figures {
            let f = &f[..f.find("</figure>").unwrap()];
            let kind = &f[f.find("data-figure=\"").unwrap() + 13..];
            let kind = &kind[..kind.find('"').unwrap()];
            for part in [
                "<svg ",
                "role=\"img\"",
                "<title id=",
                "<desc id=",
                "<figcaption>",
                "<tbody><tr>",
            ] {
                assert!(f.contains(part), "{path}: figure {kind} has no {part}");
            }
            let desc = &f[f.find("<desc id=").unwrap()..];
            let desc = &desc[desc.find('>').unwrap() + 1..desc.find("</desc>").unwrap()];
            assert!(
                desc.len() > 20,
                "{path}: figure {kind} says too little: {desc:?}"
            );
        }
    }
}

#[test]
fn the_same_plan_gives_the_same_bytes_also_read_back_from_json() {
    let doc = planned("examples/hetero-70b-guiyang.loam", HETERO);
    let first = page(&doc);
    assert_eq!(first, page(&doc));
    let json = serde_json::to_string(&doc).unwrap();
    let read: PlanDocument = serde_json::from_str(&json).unwrap();
    assert_eq!(first, page(&read));
}

#[test]
fn the_page_loads_nothing_and_runs_nothing() {
    let html = page(&planned("examples/rag-llama31-8b-service.loam", SERVICE));
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    for forbidden in [
        "<script",
        " onload=",
        " onclick=",
        "src=\"",
        "@import",
        "url(http",
        "href=\"http",
    ] {
        assert!(!html.contains(forbidden), "the page has {forbidden}");
    }
    // Every link stays on the page.
    for link in html.split("href=\"").skip(1) {
        assert!(
            link.starts_with('#'),
            "a link leaves the page: {}",
            &link[..20.min(link.len())]
        );
    }
}

#[test]
fn text_from_specs_and_problems_is_escaped() {
    let mut doc = planned("examples/hetero-70b-guiyang.loam", HETERO);
    doc.plans[0].job = "<script>alert(1)</script>".to_string();
    doc.plans[0].why = "faster & \"cheaper\"".to_string();
    let html = page(&doc);
    assert!(!html.contains("<script"), "a job name became markup");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("faster &amp; &quot;cheaper&quot;"));
    assert!(html.contains("needs &lt;more&gt; &amp; more"));
    // The section id keeps only safe characters.
    assert!(html.contains("id=\"job--script-alert-1---script-\""));
}

#[test]
fn an_infeasible_job_says_why_and_draws_nothing() {
    let tight = HETERO.replace("deadline = 40d", "deadline = 2d");
    let doc = planned("examples/tight.loam", &tight);
    let plan = &doc.plans[0];
    assert!(!plan.feasible);
    let html = page(&doc);
    assert!(html.contains("cannot run as asked"), "no verdict");
    assert!(
        html.contains(&crate::svg::esc(&plan.reasons[0])),
        "no reason"
    );
    assert_eq!(
        figures_of(&html, "job-llama3-70b-mixed"),
        Vec::<String>::new()
    );
}

const INTERRUPTIBLE: &str = include_str!("../../examples/interruptible-cost-7b.loam");

#[test]
fn an_interruptible_job_reads_the_same_wall_clock_days_as_loam_plan() {
    // The gitops review: the page said "44.2 days, 15.8 days before the 60-day deadline" (the
    // hours of training) where `loam plan` said 58.9 days (the daily window's wall time). Both
    // now come from `Plan::wall_time_h`: the page shows it, and never the training days
    // alone as the job's time.
    let doc = planned("examples/interruptible-cost-7b.loam", INTERRUPTIBLE);
    let plan = &doc.plans[0];
    let window = plan
        .schedule
        .as_ref()
        .expect("the example runs in a window");
    let e = plan.estimate.as_ref().unwrap();
    let wall_h = plan.wall_time_h().unwrap();
    assert!(window.hours_per_day < 24, "{window:?}");
    // Fewer hours a day than 24: the wall time is longer than the training time.
    assert!(
        wall_h > e.train_time_h * 1.05,
        "{wall_h} vs {}",
        e.train_time_h
    );
    let html = page(&doc);
    let wall = crate::text::days(wall_h);
    let training = crate::text::days(e.train_time_h);
    assert!(
        html.contains(&format!("for {wall}, costs")),
        "{wall} missing"
    );
    assert!(
        !html.contains(&format!("for {training}, costs")),
        "{training} shown as the time"
    );
    let deadline_h = plan.goal.as_ref().and_then(|g| g.deadline_h).unwrap();
    let slack = crate::text::days(deadline_h - wall_h);
    assert!(
        html.contains(&format!("{slack} before the")),
        "{slack} missing"
    );
}

#[test]
fn a_short_job_reads_in_hours_not_a_tenth_of_a_day() {
    // 3.3 hours read "0.1 days" on the page and "3.3 h" in the comment.
    assert_eq!(crate::text::days(3.3), "3.3 h");
    // From two days on, days: 50 h = 2.08 days.
    assert_eq!(crate::text::days(50.0), "2.1 days");
}

#[test]
fn a_data_strategy_past_the_deadline_says_so_on_its_bar() {
    // hetero-70b-guiyang reads data and has a deadline; every data option whose time is past
    // it carries ", past the N-day deadline" on its bar, and none within it does.
    let doc = planned("examples/hetero-70b-guiyang.loam", HETERO);
    let plan = &doc.plans[0];
    let deadline_h = plan.goal.as_ref().and_then(|g| g.deadline_h).unwrap();
    let figure = crate::figures::data::figure("d", plan).expect("the example reads data");
    let days = |h: f64| loam_ir::display::decimals(h / 24.0, 1);
    let options = &plan.data.as_ref().unwrap().options;
    assert!(!options.is_empty());
    let tag = format!(
        ", past the {}-day deadline",
        loam_ir::display::decimals(deadline_h / 24.0, 0)
    );
    for o in options {
        let text = format!("{} days{tag}", days(o.time_h));
        assert_eq!(
            figure.svg.contains(&text),
            o.time_h > deadline_h,
            "{} at {} h: {text}",
            o.strategy,
            o.time_h
        );
    }
}

#[test]
fn big_numbers_read_with_separators_and_counts_as_specs_write_them() {
    // The review: "9439.3 t CO2", "24840.0 MWh", "16384 ×", "1,000,000,000,000 tokens".
    assert_eq!(crate::text::grouped(9_439.31, 1), "9,439.3");
    assert_eq!(crate::text::grouped(24_840.0, 1), "24,840.0");
    assert_eq!(crate::text::grouped(-1_234.56, 1), "-1,234.6");
    assert_eq!(crate::text::count_short(1e12), "1T");
    assert_eq!(crate::text::count_short(2.5e9), "2.5B");
    assert_eq!(crate::text::count_short(15e12), "15T");
    // Not exact in one decimal of any suffix: separators.
    assert_eq!(crate::text::count_short(1_234_567.0), "1,234,567");
    assert_eq!(crate::text::count_short(512.0), "512");
}

#[test]
fn the_headline_says_how_many_jobs_queue() {
    // The 70B example needs 512 H100_SXM of a group with 96 free (L3005): it can run, but it
    // queues, and the headline says so instead of only "all can run as asked".
    let text = include_str!("../../examples/llama3-70b-pretrain.loam");
    let doc = planned("examples/llama3-70b-pretrain.loam", text);
    let queues = doc.plans[0]
        .diagnostics
        .iter()
        .any(|d| d.code == loam_ir::diagnostics::codes::plan::QUEUES);
    assert!(queues, "the example no longer queues: pick another");
    let html = page(&doc);
    assert!(
        html.contains(
            "1 job planned: all can run as asked. 1 job queues until its devices are free."
        ),
        "{}",
        &html[html.find("verdict").unwrap_or(0)..][..300]
    );
}

#[test]
fn notes_show_code_spans_not_backticks() {
    // The 70B example's notes name node groups in backticks (`sh-h100-a`).
    let text = include_str!("../../examples/llama3-70b-pretrain.loam");
    let doc = planned("examples/llama3-70b-pretrain.loam", text);
    assert!(
        doc.plans[0].notes.iter().any(|n| n.contains('`')),
        "no note with backticks"
    );
    let html = page(&doc);
    let start = html.find("<h3>Notes</h3>").expect("a notes list");
    let notes = &html[start..start + html[start..].find("</ul>").unwrap()];
    assert!(!notes.contains('`'), "{notes}");
    assert!(notes.contains("<code>"), "{notes}");
}
