//! Every example's report page, rendered by `loam report` and opened in a real headless Chromium
//! over the DevTools protocol, at a desktop width (1280×900) and a phone's (390×844): no console
//! error or warning, no uncaught exception, no failed or blocked request; every figure its plan
//! calls for, each with a title, a description, a caption and a table of its numbers, drawn at a
//! size above zero; no two labels of one figure overlapping; nothing wider than the window; a
//! screenshot that is not blank; and no script, event handler or outside address in the page.
//! The checker itself is tested first, on small hand-written pages.
//!
//! The screenshots land in `target/report-screenshots/<example>-<width>.png` for people to look
//! at. With `LOAM_WRITE_README_SCREENSHOT=1` the test also writes the README's picture,
//! `docs/images/report-hetero-70b.png`: the top 1600 px of `examples/hetero-70b-guiyang.loam`'s
//! page at 1280 wide.
//!
//! Chromium comes from `scripts/backend-tools.sh` (Debian's `chromium`); without it the tests
//! skip with a message, unless `CI` or `LOAM_REQUIRE_TOOLS` is set. Run them alone with
//! `cargo test -p loam-tests --test suite -- report_browser::`.

use crate::git_repo;

use loam_tests::browser::checks::*;
use loam_tests::browser::*;
use loam_tests::repo_root;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
/// A scratch folder for the pages this test writes, removed at the end.
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("loam-report-browser-")
        .tempdir()
        .unwrap()
}

/// `file://` address of a page.
fn file_url(path: &Path) -> String {
    format!("file://{}", path.canonicalize().unwrap().display())
}

/// Writes a hand-written page and opens it at `viewport`.
fn open_page(session: &Session, dir: &Path, name: &str, html: &str, viewport: Viewport) -> Shown {
    let path = dir.join(format!("{name}.html"));
    std::fs::write(&path, html).unwrap();
    session.open(&file_url(&path), viewport, false)
}

/// Writes a hand-written page, opens it at `viewport` and returns the checker's problems.
fn check_page(
    session: &Session,
    dir: &Path,
    name: &str,
    html: &str,
    viewport: Viewport,
) -> Vec<String> {
    page_problems(&open_page(session, dir, name, html, viewport))
}

/// A small page that keeps the contract: one job section with one figure.
fn good_page(svg_body: &str, extra_head: &str, extra_body: &str) -> String {
    format!(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>test page</title>
<style>
body {{ font-family: "DejaVu Sans", sans-serif; margin: 16px; color: #222; background: #fff; }}
svg {{ max-width: 100%; height: auto; display: block; }}
{PRINT_DETAILS}
</style>{extra_head}
</head><body>
<nav><a href="#job-demo">demo</a></nav>
<section class="job" id="job-demo"><h2>demo</h2>
<p>Runs on 64 H800 at site a for 12.5 days.</p>
<figure class="figure" data-figure="placement">
<svg role="img" aria-labelledby="t1 d1" viewBox="0 0 300 120" width="600" height="240">
<title id="t1">Placement of demo</title><desc id="d1">64 devices at site a.</desc>
<rect x="10" y="10" width="120" height="60" fill="#4a7fb5"/>
<rect x="150" y="10" width="120" height="60" fill="#e39b3b"/>
{svg_body}
</svg>
<figcaption>Where demo runs: two node groups at site a.</figcaption>
<details><summary>Numbers</summary><table><thead><tr><th>group</th><th>devices</th></tr></thead>
<tbody><tr><td>a-h800</td><td>64</td></tr></tbody></table></details>
</figure>
</section>{extra_body}
</body></html>
"##
    )
}

/// The good page's print rule: a closed `<details>` prints its table.
const PRINT_DETAILS: &str =
    "@media print { details::details-content { display: block; content-visibility: visible; } }";

/// Labels of the good page that do not overlap, one of them hidden on top of another.
const APART: &str = r#"<text x="20" y="100" font-size="12">group a</text>
<text x="160" y="100" font-size="12">group b</text>
<text x="20" y="100" font-size="12" visibility="hidden">hidden on top</text>
<text x="20" y="100" font-size="12"> </text>"#;

/// Asserts that the checker's `problems` include each of `wanted` (as part of a line).
fn assert_reports(problems: &[String], wanted: &[&str]) {
    for wanted in wanted {
        assert!(
            problems.iter().any(|p| p.contains(wanted)),
            "{wanted}: {problems:#?}"
        );
    }
}

/// The checker's tests share one session: `None` skips them where Chromium is missing.
macro_rules! session_or_skip {
    () => {
        match session() {
            Some(session) => session,
            None => return,
        }
    };
}

#[test]
fn the_checker_passes_a_page_that_keeps_the_contract() {
    let session = session_or_skip!();
    let dir = scratch();
    for viewport in [DESKTOP, PHONE] {
        let page = open_page(
            &session,
            dir.path(),
            "good",
            &good_page(APART, "", ""),
            viewport,
        );
        let problems = page_problems(&page);
        let plan = json!({"plans": [{"job": "demo", "feasible": true, "alternatives": [], "data": {"options": []}}]});
        let wanted = wanted(&plan);
        // The good page has one figure of the four a feasible job needs: exactly three missing.
        let missing = missing(&page.measure, &wanted);
        assert_eq!(missing.len(), 3, "{missing:#?}");
        assert!(missing.iter().all(|m| m.starts_with("job demo: no figure")));
        assert!(
            problems.is_empty(),
            "{}: a page that keeps the contract has problems: {problems:#?}",
            viewport.name()
        );
    }
}

#[test]
fn the_checker_finds_overlapping_labels() {
    let session = session_or_skip!();
    let dir = scratch();
    let overlapping = r#"<text x="20" y="100" font-size="14">tensor 8</text>
<text x="26" y="104" font-size="14">pipeline 4</text>"#;
    let problems = check_page(
        &session,
        dir.path(),
        "overlap",
        &good_page(overlapping, "", ""),
        DESKTOP,
    );
    assert!(
        problems.iter().any(|p| p.contains(
            "#job-demo figure placement: labels \"tensor 8\" and \"pipeline 4\" overlap"
        )),
        "{problems:#?}"
    );
    assert_eq!(problems.len(), 1, "only the overlap: {problems:#?}");
}

#[test]
fn the_checker_finds_numbers_that_would_not_print() {
    let session = session_or_skip!();
    let dir = scratch();
    let folded = good_page(APART, "", "").replace(PRINT_DETAILS, "");
    let problems = check_page(&session, dir.path(), "folded", &folded, DESKTOP);
    assert_eq!(
        problems,
        ["#job-demo figure placement: printed, its numbers would be folded away"],
    );
}

#[test]
fn the_checker_finds_a_page_wider_than_the_window() {
    let session = session_or_skip!();
    let dir = scratch();
    let wide =
        r#"<div class="wide" style="width: 700px; height: 20px; background: #eee">wide</div>"#;
    let problems = check_page(
        &session,
        dir.path(),
        "wide",
        &good_page(APART, "", wide),
        PHONE,
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("the page is 7") && p.contains("div.wide")),
        "{problems:#?}"
    );
    // The same page fits on a desktop.
    let problems = check_page(
        &session,
        dir.path(),
        "wide",
        &good_page(APART, "", wide),
        DESKTOP,
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_checker_finds_console_errors_exceptions_and_blocked_requests() {
    let session = session_or_skip!();
    let dir = scratch();
    // A page without the policy, so its script runs: an error, a warning, an exception.
    let noisy = good_page(APART, "", "")
        .replace(&format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"), "")
        .replace(
            "</body>",
            "<script>console.error('boom'); console.warn('careful'); throw new Error('thrown');</script></body>",
        );
    let problems = check_page(&session, dir.path(), "noisy", &noisy, DESKTOP);
    assert_reports(
        &problems,
        &[
            "console.error: boom",
            "console.warning: careful",
            "uncaught exception",
            "the page has 1 <script>",
            "the Content-Security-Policy meta is null",
        ],
    );
    // With the policy, an image from outside is blocked, and an inline handler refused.
    let blocked = good_page(
        APART,
        "",
        r#"<img src="https://example.invalid/logo.png" alt="logo" onerror="console.error('x')">"#,
    );
    let problems = check_page(&session, dir.path(), "blocked", &blocked, DESKTOP);
    assert_reports(
        &problems,
        &[
            "request for https://example.invalid/logo.png failed:",
            "an address outside the page: img src=\"https://example.invalid/logo.png\"",
            "an event handler attribute: img onerror",
        ],
    );
    assert!(
        problems.iter().any(|p| p.starts_with("console error")),
        "the policy's refusal is a console error: {problems:#?}"
    );
}

#[test]
fn the_checker_finds_a_blank_page_and_a_broken_figure() {
    let session = session_or_skip!();
    let dir = scratch();
    let blank = format!(
        r#"<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="{CSP}"><meta name="viewport" content="width=device-width"></head><body></body></html>"#
    );
    let problems = check_page(&session, dir.path(), "blank", &blank, DESKTOP);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].starts_with("the screenshot is blank"),
        "{problems:#?}"
    );

    let broken = good_page(APART, "", "")
        .replace(
            r#"<title id="t1">Placement of demo</title><desc id="d1">64 devices at site a.</desc>"#,
            "",
        )
        .replace(
            "<figcaption>Where demo runs: two node groups at site a.</figcaption>",
            "",
        )
        .replace(
            "<tbody><tr><td>a-h800</td><td>64</td></tr></tbody>",
            "<tbody></tbody>",
        )
        .replace(
            r#"width="600" height="240">"#,
            r#"width="0" height="0" style="width:0;height:0">"#,
        )
        .replace(r##"href="#job-demo""##, r##"href="#job-gone""##);
    let problems = check_page(&session, dir.path(), "broken", &broken, DESKTOP);
    assert_reports(
        &problems,
        &[
            "figure placement: the svg's aria-labelledby \"t1 d1\" names no element",
            "figure placement: no text in a <title>",
            "figure placement: no text in a <desc>",
            "figure placement: no text in a <figcaption>",
            "figure placement: the table has no <tbody> row",
            "figure placement: the svg is drawn 0×0 px",
            "a link to no element of the page: a href=\"#job-gone\"",
        ],
    );
}

#[test]
fn the_plan_says_which_figures_a_page_needs() {
    let plan = json!({
        "plans": [
            {"job": "big", "feasible": true, "alternatives": [{"summary": "x"}], "data": {"options": [{}]}},
            {"job": "small", "feasible": true, "alternatives": [], "data": {"options": []}},
            {"job": "late", "feasible": false, "reasons": ["misses the deadline by 4.1 days"]},
        ],
        "services": [
            {"service": "chat", "feasible": true},
            {"service": "rag", "feasible": false, "reasons": ["over budget"]},
        ],
    });
    let wanted = wanted(&plan);
    let summary: Vec<(String, Vec<&str>, usize)> = wanted
        .iter()
        .map(|w| {
            (
                format!("{} {}", w.kind, w.name),
                w.figures.clone(),
                w.reasons.len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "job big".to_string(),
                vec![
                    "placement",
                    "schedule",
                    "step-time",
                    "memory",
                    "alternatives",
                    "data"
                ],
                0
            ),
            (
                "job small".to_string(),
                vec!["placement", "schedule", "step-time", "memory"],
                0
            ),
            ("job late".to_string(), vec![], 1),
            ("service chat".to_string(), vec!["placement", "service"], 0),
            ("service rag".to_string(), vec![], 1),
        ]
    );
    let measure = json!({"sections": [
        {"kind": "job", "id": "job-late", "name": "late", "figures": [], "text": "late misses the deadline by 4.1 days"},
        {"kind": "service", "id": "svc-chat", "name": "chat", "figures": ["placement"], "text": ""},
    ]});
    let missing = missing(&measure, &wanted[2..4]);
    assert_eq!(
        missing,
        vec![
            "service chat: the section's id \"svc-chat\" does not start with \"service-\"",
            "service chat: no figure \"service\" (the section has: placement)",
        ]
    );
}

/// The examples, sorted.
fn examples() -> Vec<PathBuf> {
    let mut examples: Vec<PathBuf> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "loam"))
        .map(|p| p.strip_prefix(repo_root()).unwrap().to_path_buf())
        .collect();
    examples.sort();
    examples
}

/// Runs the CLI from the repository root.
fn loam(args: &[&str]) -> std::process::Output {
    crate::loam_process::output_in(&repo_root(), args)
}

/// The first line of a command's error output that says something.
fn first_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(nothing on stderr)")
        .to_string()
}

/// The example's plan document and its report page, or why either failed.
fn render(example: &Path, out: &Path) -> Result<Value, String> {
    let example = example.to_str().unwrap();
    let plan = loam(&["plan", "--format", "json", example]);
    if !matches!(plan.status.code(), Some(0 | 1)) {
        return Err(format!(
            "`loam plan --format json` exited with {:?}: {}",
            plan.status.code(),
            first_line(&plan.stderr)
        ));
    }
    let plan: Value = serde_json::from_slice(&plan.stdout)
        .map_err(|e| format!("the plan JSON does not parse: {e}"))?;
    let report = loam(&["report", example, "--out", out.to_str().unwrap()]);
    if !report.status.success() || !out.is_file() {
        return Err(format!(
            "`loam report` exited with {:?} and wrote {}: {}",
            report.status.code(),
            if out.is_file() { "the page" } else { "no page" },
            first_line(&report.stderr)
        ));
    }
    Ok(plan)
}

#[test]
#[allow(clippy::print_stderr)] // the timing and the list of failures are for the person running it
fn every_example_report_renders_cleanly_in_a_browser() {
    let session = session_or_skip!();
    let started = Instant::now();
    let dir = scratch();
    let shots = repo_root().join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    // `LOAM_WRITE_README_SCREENSHOT=1` also writes the README's picture of the hetero-70b page.
    let write_readme = std::env::var_os("LOAM_WRITE_README_SCREENSHOT").is_some_and(|v| v == "1");
    let mut failures: Vec<String> = Vec::new();
    let mut browser_time = Duration::ZERO;
    for example in examples() {
        let name = example.file_stem().unwrap().to_str().unwrap().to_string();
        let out = dir.path().join(format!("{name}.html"));
        let plan = match render(&example, &out) {
            Ok(plan) => plan,
            Err(why) => {
                failures.push(format!("{name}: {why}"));
                continue;
            }
        };
        let wanted = wanted(&plan);
        let opened = Instant::now();
        for viewport in [DESKTOP, PHONE] {
            let readme = write_readme && viewport.width == DESKTOP.width && name == README_EXAMPLE;
            let page = session.open(&file_url(&out), viewport, readme);
            std::fs::write(
                shots.join(format!("{name}-{}.png", viewport.width)),
                &page.png,
            )
            .unwrap();
            if let Some(png) = &page.readme_png {
                let to = repo_root().join(README_SCREENSHOT);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::write(&to, png).unwrap();
            }
            let problems = page_problems(&page)
                .into_iter()
                .chain(missing(&page.measure, &wanted));
            failures.extend(problems.map(|p| format!("{name} at {}: {p}", viewport.name())));
        }
        browser_time += opened.elapsed();
    }
    eprintln!(
        "report_browser: {:.1} s in all, {:.1} s in the browser; screenshots in {}",
        started.elapsed().as_secs_f64(),
        browser_time.as_secs_f64(),
        shots.strip_prefix(repo_root()).unwrap().display()
    );
    assert!(
        failures.is_empty(),
        "{} problem(s) in the examples' reports:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The diff page (`loam report --base`) of a real two-commit repository passes the same checks
/// as the plan pages, and draws the totals per tenant and each changed job before and after.
#[test]
fn a_diff_report_renders_cleanly_in_a_browser() {
    let session = session_or_skip!();
    let mut repo = git_repo::TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", git_repo::spec("job-a", 64, 16));
    repo.write("jobs/b.loam", git_repo::spec("job-b", 64, 8));
    repo.commit("first");
    repo.write("jobs/a.loam", git_repo::spec("job-a", 128, 16));
    repo.write("jobs/c.loam", git_repo::spec("job-c", 32, 8));
    repo.commit("second");
    let dir = scratch();
    let out = dir.path().join("diff.html");
    let root = repo.path();
    let (code, _, err) = repo.loam(&[
        "report",
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    for kind in ["totals", "diff", "placement"] {
        assert!(
            html.contains(&format!("data-figure=\"{kind}\"")),
            "the diff page has no {kind} figure"
        );
    }
    let mut failures = Vec::new();
    for viewport in [DESKTOP, PHONE] {
        let page = session.open(&file_url(&out), viewport, false);
        failures.extend(
            page_problems(&page)
                .into_iter()
                .map(|p| format!("diff at {}: {p}", viewport.name())),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
