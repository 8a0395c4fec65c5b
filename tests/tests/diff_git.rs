//! `loam diff` on real git repositories made in temp folders: two commits, branches, merges,
//! added, removed, renamed and moved jobs, a catalogue change, a spec broken on one side, binary
//! and non-UTF-8 files beside the specs, and the exit codes. Whether a changed job is updated in
//! place or replaced on each backend is tested in `diff_replace.rs`.

use crate::git_repo;

use git_repo::{TempRepo, spec};

/// Snapshots `text` with commit ids and catalogue digests (which change whenever the shipped
/// catalogue does) filtered; temp paths are already `[REPO]`.
fn snapshot(name: &str, text: &str) {
    insta::with_settings!({filters => vec![
        (r"\([0-9a-f]{8}\)", "([COMMIT])"),
        (r"sha256:[0-9a-f]{12}", "sha256:[DIGEST]"),
    ]}, {
        insta::assert_snapshot!(name, text);
    });
}

/// Raises the device-hour price of the node group that the small test job runs on.
fn raise_price(repo: &TempRepo) {
    let text = repo.read("specs/pools/xirang.yaml");
    let at = text.find("name: sh-h100-a").unwrap();
    let rest = &text[at..];
    let price = rest.find("price: 32.0 CNY").unwrap();
    let mut changed = text.clone();
    changed.replace_range(
        at + price..at + price + "price: 32.0 CNY".len(),
        "price: 40.0 CNY",
    );
    repo.write("specs/pools/xirang.yaml", changed);
}

/// A repository with two commits: `a` and `b` at first, then `a` changed and `c` added.
fn two_commits() -> TempRepo {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", spec("job-a", 64, 16));
    repo.write("jobs/b.loam", spec("job-b", 64, 8));
    repo.commit("first");
    repo.write("jobs/a.loam", spec("job-a", 128, 16));
    repo.write("jobs/c.loam", spec("job-c", 32, 8));
    repo.commit("second");
    repo
}

#[test]
fn acceptance_two_commits_in_every_format() {
    let repo = two_commits();
    let (code, text, err) = repo.loam(&["diff", "--base", "HEAD~1", "--manifests", "none"]);
    assert_eq!(code, 0, "{err}");
    // A new global batch changes the trainer's arguments in the JobSet's pod template, which a
    // running JobSet cannot take: the job is replaced.
    assert!(text.contains("-/+ job \"job-a\""), "{text}");
    assert!(text.contains("+ job \"job-c\""), "{text}");
    assert!(
        text.contains("Plan: 1 to add, 0 to change, 1 to replace, 0 to destroy."),
        "{text}"
    );
    snapshot("two_commits_text", &text);

    let (code, markdown, _) = repo.loam(&[
        "diff",
        "--base",
        "HEAD~1",
        "--format",
        "markdown",
        "--manifests",
        "none",
    ]);
    assert_eq!(code, 0);
    assert!(markdown.contains("| `-/+` | `job-a` |"), "{markdown}");
    assert!(
        markdown.contains("must be replaced on kubernetes: 20-jobset.yaml spec.replicatedJobs"),
        "{markdown}"
    );
    assert!(markdown.contains("<details>"), "{markdown}");
    snapshot("two_commits_markdown", &markdown);

    let (code, json, _) = repo.loam(&["diff", "--base", "HEAD~1", "--format", "json"]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["format_version"], "3.1");
    // job-c is new; job-a is replaced, counted as itself (not as an add and a destroy).
    assert_eq!(doc["summary"]["add"], 1);
    assert_eq!(doc["summary"]["change"], 0);
    assert_eq!(doc["summary"]["replace"], 1);
    assert_eq!(doc["summary"]["destroy"], 0);
    assert_eq!(doc["summary"]["unchanged"], 1);
    let a = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == "job-a")
        .unwrap();
    assert_eq!(a["actions"], serde_json::json!(["delete", "create"]));
    assert_eq!(a["classification"]["backend"], "kubernetes");
    let forcing = a["classification"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["effect"] == "replace")
        .unwrap();
    assert_eq!(forcing["file"], "20-jobset.yaml");
    assert_eq!(forcing["field"], "spec.replicatedJobs");
    let batch = a["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["attribute"] == "workload.global_batch")
        .unwrap();
    // Counts are JSON numbers, and their change too.
    assert_eq!(batch["before"], 64);
    assert_eq!(batch["after"], 128);
    assert_eq!(batch["delta"], 64);
    // Estimates carry their unit, in the vocabulary `loam plan` uses.
    let time = a["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["attribute"] == "estimate.train_time")
        .unwrap();
    assert_eq!(time["unit"], "days");
    let before_days = time["before"].as_f64().unwrap();
    let plan_hours = a["before"]["estimate"]["train_time_h"].as_f64().unwrap();
    assert!((before_days * 24.0 - plan_hours).abs() < 1e-3 * plan_hours);
    assert!(
        a["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["delta"].is_number()),
        "an estimate delta: {a}"
    );
    // Keys are sorted.
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[test]
fn the_markdown_table_states_the_uncertainty_of_estimated_device_figures() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", spec("job-a", 64, 16));
    repo.commit("first");
    repo.write("jobs/a.loam", spec("job-a", 128, 16));
    let on_npu = spec("job-npu", 64, 16).replace(
        "    max_devices = 16\n",
        "    devices     = [Ascend910B]\n    max_devices = 16\n",
    );
    repo.write("jobs/npu.loam", on_npu);
    repo.commit("second");
    let (code, markdown, err) = repo.loam(&[
        "diff",
        "--base",
        "HEAD~1",
        "--format",
        "markdown",
        "--manifests",
        "none",
    ]);
    assert_eq!(code, 0, "{err}");
    let row = |job: &str| {
        markdown
            .lines()
            .find(|l| l.starts_with("| `") && l.contains(&format!("| `{job}` |")))
            .unwrap_or_else(|| panic!("no row of {job} in {markdown}"))
            .to_string()
    };
    // The job on Ascend910B shows the catalogue's stated uncertainty after its train time; the
    // one on H100_SXM (measured figures) shows none.
    let stated = loam_compiler::catalogue::builtin()
        .device("Ascend910B")
        .unwrap()
        .efficiency
        .uncertainty;
    assert!(stated > 0.0);
    let npu = row("job-npu");
    assert!(
        npu.contains(&format!(" ±{:.0} % |", stated * 100.0)),
        "{npu}"
    );
    assert!(!row("job-a").contains('±'), "{}", row("job-a"));
}

#[test]
fn detailed_exitcode_is_2_on_changes_and_0_without() {
    let repo = two_commits();
    let changed = repo.loam(&[
        "diff",
        "--base",
        "HEAD~1",
        "--detailed-exitcode",
        "--manifests",
        "none",
    ]);
    assert_eq!(changed.0, 2, "{}", changed.2);
    // The work tree matches HEAD.
    let same = repo.loam(&["diff", "--detailed-exitcode"]);
    assert_eq!(same.0, 0, "{}{}", same.1, same.2);
    assert!(same.1.contains("No changes."), "{}", same.1);
    let revs = repo.loam(&[
        "diff",
        "--base",
        "HEAD",
        "--head",
        "HEAD",
        "--detailed-exitcode",
    ]);
    assert_eq!(revs.0, 0);
}

#[test]
fn removed_renamed_and_moved_jobs() {
    let mut repo = TempRepo::new();
    repo.write("jobs/a.loam", spec("job-a", 64, 8));
    repo.write("jobs/b.loam", spec("job-b", 64, 8));
    repo.write("jobs/d.loam", spec("job-d", 32, 8));
    repo.commit("first");
    // Renamed: same file, same workload, another name.
    repo.write(
        "jobs/a.loam",
        spec("job-a2", 64, 8).replace("/ckpt/nlp/job-a2", "/ckpt/nlp/job-a"),
    );
    // Moved: same name, another file.
    repo.remove("jobs/b.loam");
    repo.write("team/b.loam", spec("job-b", 64, 8));
    // Removed.
    repo.remove("jobs/d.loam");
    repo.commit("second");
    let (code, text, err) = repo.loam(&[
        "diff",
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "--manifests",
        "none",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("-/+ job \"job-a\" -> \"job-a2\""), "{text}");
    assert!(text.contains("moved from jobs/b.loam"), "{text}");
    assert!(text.contains("- job \"job-d\""), "{text}");
    assert!(
        text.contains("Plan: 0 to add, 1 to change, 1 to replace, 1 to destroy."),
        "{text}"
    );
    // The legend lists only the symbols used.
    assert!(
        text.contains("destroy and then create replacement"),
        "{text}"
    );
    assert!(!text.contains("  + create"), "{text}");
    snapshot("removed_renamed_moved_text", &text);
}

#[test]
fn a_catalogue_price_replans_unchanged_specs() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", spec("job-a", 64, 16));
    repo.commit("first");
    raise_price(&repo);
    let (code, text, err) = repo.loam(&["diff", "--detailed-exitcode", "--manifests", "none"]);
    assert_eq!(code, 2, "{text}{err}");
    assert!(
        text.contains("jobs whose pool or devices changed are planned again"),
        "{text}"
    );
    assert!(text.contains("~ estimate.cost"), "{text}");
    // The cost rises by a quarter (32 -> 40 CNY per device-hour) unless the planner moved the job.
    assert!(
        text.contains("CNY, +") || text.contains("placement"),
        "{text}"
    );
}

#[test]
fn a_removed_catalogue_falls_back_to_the_built_in_one() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", spec("job-a", 64, 16));
    repo.commit("first");
    std::fs::remove_dir_all(repo.path().join("specs")).unwrap();
    let (code, text, _) = repo.loam(&["diff", "--detailed-exitcode"]);
    assert!(text.contains("specs/ -> built-in"), "{text}");
    // Same texts as the shipped catalogue: nothing changes.
    assert_eq!(code, 0, "{text}");
}

#[test]
fn a_spec_broken_at_head_shows_its_diagnostics_and_exits_1() {
    let mut repo = TempRepo::new();
    repo.write("jobs/a.loam", spec("job-a", 64, 8));
    repo.write("jobs/b.loam", spec("job-b", 64, 8));
    repo.commit("first");
    repo.write(
        "jobs/a.loam",
        spec("job-a", 64, 8).replace("global_batch", "global_bach"),
    );
    repo.write("jobs/new.loam", "job \"broken\" {\n  tenant = \n}\n");
    let (code, text, err) = repo.loam(&["diff", "--detailed-exitcode", "--manifests", "none"]);
    assert_eq!(code, 1, "{text}{err}");
    assert!(
        err.contains("L1002") || err.contains("global_bach"),
        "{err}"
    );
    assert!(text.contains("! job \"job-a\""), "{text}");
    assert!(text.contains("jobs/new.loam does not check"), "{text}");
    let (_, annotations, _) = repo.loam(&["diff", "--format", "github", "--manifests", "none"]);
    assert!(
        annotations
            .lines()
            .any(|l| l.starts_with("::error file=jobs/a.loam,line=")),
        "{annotations}"
    );
}

#[test]
fn a_spec_broken_at_base_is_compared_against_nothing() {
    let mut repo = TempRepo::new();
    repo.write("jobs/a.loam", "job \"job-a\" {\n");
    repo.commit("broken");
    repo.write("jobs/a.loam", spec("job-a", 64, 8));
    repo.commit("fixed");
    let (code, text, err) = repo.loam(&[
        "diff",
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "--detailed-exitcode",
        "--manifests",
        "none",
    ]);
    assert_eq!(code, 2, "{text}{err}");
    assert!(text.contains("its spec does not check"), "{text}");
    assert!(err.contains("at HEAD~1"), "{err}");
}

#[test]
fn binary_and_non_utf8_files_beside_the_specs() {
    let mut repo = TempRepo::new();
    repo.write("jobs/a.loam", spec("job-a", 64, 8));
    repo.write("jobs/weights.bin", [0u8, 159, 146, 150, 255, 0, 1]);
    repo.commit("first");
    repo.write("jobs/latin1.loam", b"# caf\xe9\njob \"x\" {}\n");
    let (code, text, err) = repo.loam(&["diff", "--manifests", "none"]);
    assert_eq!(code, 1, "{text}{err}");
    assert!(err.contains("UTF-8"), "{err}");
    assert!(text.contains("jobs/latin1.loam does not check"), "{text}");
    assert!(!text.contains("weights.bin"), "{text}");
    // Committed, the binary file still is no spec and nothing else changed.
    repo.remove("jobs/latin1.loam");
    let (code, _, err) = repo.loam(&["diff", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn branches_and_merges() {
    let mut repo = TempRepo::new();
    repo.write("jobs/a.loam", spec("job-a", 64, 8));
    repo.write("jobs/b.loam", spec("job-b", 64, 8));
    repo.commit("first");
    repo.branch("feature");
    repo.write("jobs/a.loam", spec("job-a", 128, 8));
    repo.commit("feature: bigger batch");
    repo.checkout("main");
    repo.write("jobs/c.loam", spec("job-c", 32, 8));
    repo.commit("main: add c");
    // The pull request's view: main against the feature branch.
    let (code, text, _) = repo.loam(&[
        "diff",
        "--base",
        "main",
        "--head",
        "feature",
        "--detailed-exitcode",
        "--manifests",
        "none",
    ]);
    assert_eq!(code, 2);
    assert!(text.contains("-/+ job \"job-a\""), "{text}");
    assert!(text.contains("- job \"job-c\""), "{text}");
    repo.merge("feature");
    let (code, text, _) = repo.loam(&[
        "diff",
        "--base",
        "HEAD^1",
        "--head",
        "HEAD",
        "--manifests",
        "none",
    ]);
    assert_eq!(code, 0);
    assert!(
        text.contains("Plan: 0 to add, 0 to change, 1 to replace, 0 to destroy."),
        "{text}"
    );
    let (_, text, _) = repo.loam(&[
        "diff",
        "--base",
        "HEAD^2",
        "--head",
        "HEAD",
        "--manifests",
        "none",
    ]);
    assert!(
        text.contains("Plan: 1 to add, 0 to change, 0 to destroy."),
        "{text}"
    );
}

#[test]
fn paths_limit_the_diff() {
    let repo = two_commits();
    let jobs_a = repo.path().join("jobs/a.loam");
    let (_, text, err) = repo.loam(&[
        "diff",
        "--base",
        "HEAD~1",
        "--manifests",
        "none",
        jobs_a.to_str().unwrap(),
    ]);
    assert!(
        text.contains("Plan: 0 to add, 0 to change, 1 to replace, 0 to destroy."),
        "{text}{err}"
    );
}

#[test]
fn manifests_are_diffed() {
    let repo = two_commits();
    let (_, text, err) = repo.loam(&["diff", "--base", "HEAD~1"]);
    assert!(text.contains("# manifests:"), "{text}{err}");
    assert!(text.contains("+++ b/job-a/"), "{text}");
    assert!(text.contains("--global-batch=128"), "{text}");
}

#[test]
fn unknown_revision_is_an_io_error() {
    let repo = two_commits();
    let (code, _, err) = repo.loam(&["diff", "--base", "no-such-branch"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot resolve revision `no-such-branch`"),
        "{err}"
    );
}
