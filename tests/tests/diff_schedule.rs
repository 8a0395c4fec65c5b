//! `loam diff` and the schedule (issue 33, item 5), on a real git repository: a pull request
//! that moves a job from H100 at shanghai to Ascend 910B (found at guiyang) says what it does to
//! the schedule in every format, and its manifests diff holds the whole site's prerequisites,
//! as `loam emit` writes them.

use crate::git_repo;

use git_repo::{TempRepo, spec};

/// `job-a` on the planner's choice at base, pinned to Ascend910B at head (work tree).
fn moved_to_npu() -> TempRepo {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", spec("job-a", 64, 16));
    repo.commit("first");
    repo.write(
        "jobs/a.loam",
        spec("job-a", 64, 16).replace(
            "    max_devices = 16\n",
            "    devices     = [Ascend910B]\n    max_devices = 16\n",
        ),
    );
    repo
}

/// Alone in its pool, the job starts at hour 0 on both sides, so the schedule's delay is the
/// head plan's train time less the base plan's, and its deadline (2 days) is met on both.
#[test]
fn the_schedule_section_says_how_much_later_the_moved_job_finishes() {
    let repo = moved_to_npu();
    let (code, out, err) = repo.loam(&["diff", "--format", "json", "--manifests", "none"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let job = &doc["jobs"][0];
    let hours = |side: &str| job[side]["estimate"]["train_time_h"].as_f64().unwrap();
    let (before, after) = (hours("before"), hours("after"));
    assert!(after > before, "{before} → {after}");
    let moved = &doc["schedule"]["jobs"][0];
    assert_eq!(moved["job"], "job-a");
    assert_eq!(moved["change"], "moved");
    assert_eq!(moved["start_h"], serde_json::json!([0.0, 0.0]));
    // The schedule keeps five significant digits.
    let delay = moved["delay_h"].as_f64().unwrap();
    assert!(
        (delay - (after - before)).abs() < 1e-3 * after,
        "{delay} vs {}",
        after - before
    );
    assert_eq!(moved["deadline"], serde_json::json!(["met", "met"]));
    assert_eq!(doc["schedule"]["delayed"], 1);
    assert_eq!(doc["schedule"]["deadlines_lost"], serde_json::json!([]));
    // The headline names the delay in every format.
    let part = format!(
        "schedule: delays 1 job (up to +{:.1} h)",
        (after - before).abs()
    );
    assert!(
        doc["headline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str() == Some(part.as_str())),
        "{}",
        doc["headline"]
    );
    let (_, markdown, _) = repo.loam(&["diff", "--format", "markdown", "--manifests", "none"]);
    assert!(markdown.contains(&part), "{markdown}");
    assert!(
        markdown.contains("<details><summary>Schedule: delays 1 job"),
        "{markdown}"
    );
    let (_, text, _) = repo.loam(&["diff", "--manifests", "none"]);
    assert!(
        text.contains("Schedule (every job together, docs/scheduling.md):"),
        "{text}"
    );
    // The page lists the same lines under "The pool over time", the moved job's among them.
    let (_, html, _) = repo.loam(&["diff", "--format", "html", "--manifests", "none"]);
    let section = html
        .split("<section class=\"pool\" id=\"schedule\">")
        .nth(1)
        .and_then(|s| s.split("</section>").next())
        .unwrap_or_else(|| panic!("no schedule section:\n{html}"));
    assert!(section.contains("<h2>The pool over time</h2>"), "{section}");
    assert!(
        section.contains("<li>deadlines met 1 of 1 → 1 of 1;"),
        "{section}"
    );
    assert!(section.contains("<li>moved job-a: finish"), "{section}");
}

/// The job now runs at guiyang, whose prerequisites it brings: every node group of the site
/// becomes a ResourceFlavor in them (gy-910b-a, gy-h800-a, gy-dcu-a in the shipped xirang
/// pool), as `loam emit` writes them, not only the one the job uses.
#[test]
fn the_manifests_diff_has_every_node_group_of_the_site() {
    let repo = moved_to_npu();
    let (code, out, err) = repo.loam(&["diff", "--format", "json", "--manifests", "kubernetes"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let manifests = doc["jobs"][0]["manifests_diff"].as_str().unwrap();
    for group in ["gy-910b-a", "gy-h800-a", "gy-dcu-a"] {
        assert!(
            manifests.contains(&format!(
                "+++ b/_prerequisites/guiyang/20-resourceflavor-{group}.yaml"
            )),
            "{group}: {manifests}"
        );
    }
}
