//! The comment the shipped GitHub workflow posts (`examples/ci/loam-comment.yml`), made by
//! running the workflow's own `script:` under node with the GitHub API stubbed (and the note
//! the GitLab job writes, by running its shell block under bash), on artifacts
//! made as `examples/ci/loam.yml` makes them (`loam diff --format markdown --detailed-exitcode`,
//! standard error into `errors.txt`), for the review's kinds of pull request (docs/gitops.md,
//! findings 1, 2, 8 and 12): a service's traffic tripled, a spec with a typo, 80 changed jobs
//! of which 2 miss their deadline, and loam failing to run at all. Every comment must carry the
//! verdict in its first 3 lines, stay under 60,000 characters and be valid markdown (no open
//! code block, every `<details>` closed).

use crate::git_repo::{TempRepo, spec};
use loam_tests::repo_root;
use loam_tests::tools::{have, runs};
use serde_json::Value;

/// The `script:` of the workflow's `actions/github-script` step.
fn comment_script() -> String {
    let path = repo_root().join("examples/ci/loam-comment.yml");
    let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["jobs"]["comment"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|step| step["with"]["script"].as_str())
        .expect("the comment step has a script")
        .to_string()
}

/// Runs the script in `dir` (which holds `loam-diff/`) under node with GitHub's API stubbed:
/// the pull request is at the run's commit, it has no comment yet. The comment it creates, and
/// whether it failed the job.
const HARNESS: &str = r#"
const fs = require('fs');
process.chdir(process.argv[2]);
const posted = [];
const failed = [];
const context = { repo: { owner: 'o', repo: 'r' } };
const core = { setFailed: (m) => failed.push(m), notice: () => {} };
const github = {
  rest: {
    pulls: { get: async () => ({ data: { head: { sha: 'abc123' } } }) },
    issues: {
      listComments: 'listComments',
      createComment: async (a) => posted.push(a.body),
      updateComment: async (a) => posted.push(a.body),
    },
  },
  paginate: async () => [],
};
process.env.RUN_URL = 'https://github.example/o/r/actions/runs/1';
process.env.HEAD_SHA = 'abc123';
const AsyncFunction = (async () => {}).constructor;
const script = fs.readFileSync('script.js', 'utf8');
new AsyncFunction('require', 'context', 'core', 'github', script)(require, context, core, github)
  .then(() => {
    fs.writeFileSync('comment.md', posted.length === 1 ? posted[0] : `posted ${posted.length}`);
    fs.writeFileSync('failed.txt', failed.join('\n'));
  })
  .catch((e) => { console.error(e); process.exit(3); });
"#;

struct Comment {
    body: String,
    failed: bool,
}

/// The artifact `loam.yml` uploads for `loam diff --base main --head <branch>` in `repo`, then
/// the comment the workflow posts for it.
fn comment_for(repo: &TempRepo, branch: &str) -> (u8, Comment) {
    let (code, markdown, errors) = repo.loam(&[
        "diff",
        "--base",
        "main",
        "--head",
        branch,
        "--format",
        "markdown",
        "--detailed-exitcode",
    ]);
    (code, post(&markdown, &errors, code))
}

/// The comment for an artifact of `diff.md`, `errors.txt` and the exit code, outcome as
/// `loam.yml` derives it.
fn post(markdown: &str, errors: &str, code: u8) -> Comment {
    let dir = tempfile::tempdir().unwrap();
    let artifact = dir.path().join("loam-diff");
    std::fs::create_dir(&artifact).unwrap();
    let outcome = match code {
        0 => "none",
        2 if markdown.contains("<!-- loam-diff -->") => "changes",
        _ => "error",
    };
    for (name, text) in [
        ("diff.md", markdown.to_string()),
        ("errors.txt", errors.to_string()),
        ("exit-code", format!("{code}\n")),
        ("outcome", format!("{outcome}\n")),
        ("pr-number", "7\n".to_string()),
    ] {
        std::fs::write(artifact.join(name), text).unwrap();
    }
    std::fs::write(dir.path().join("script.js"), comment_script()).unwrap();
    std::fs::write(dir.path().join("harness.js"), HARNESS).unwrap();
    let out = std::process::Command::new("node")
        .arg(dir.path().join("harness.js"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "node: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    Comment {
        body: read("comment.md"),
        failed: !read("failed.txt").is_empty(),
    }
}

/// What every posted comment must be: under the limit, the verdict in its first 3 lines (the
/// marker is the first), valid markdown.
fn assert_sound(comment: &Comment, verdict: &str) {
    let body = &comment.body;
    let chars = body.chars().count();
    assert!(chars <= 60_000, "{chars} characters");
    let first: Vec<&str> = body.lines().take(3).collect();
    assert_eq!(first.first(), Some(&"<!-- loam-diff -->"), "{body}");
    assert!(
        first.iter().any(|l| l.contains(verdict)),
        "the verdict `{verdict}` is not in the first 3 lines: {first:#?}"
    );
    let fences = body.lines().filter(|l| l.starts_with("```")).count();
    assert_eq!(fences % 2, 0, "a code block is left open:\n{body}");
    assert_eq!(
        body.matches("<details").count(),
        body.matches("</details>").count(),
        "a <details> is left open"
    );
}

fn have_node() -> bool {
    have("node", runs("node", &["--version"]))
}

fn example(name: &str) -> String {
    std::fs::read_to_string(repo_root().join(format!("examples/{name}.loam"))).unwrap()
}

#[test]
fn the_workflow_posts_loams_verdict_first_for_a_service_change_and_a_typo() {
    if !have_node() {
        return;
    }
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/chat.loam", example("llama31-70b-chat-service"));
    repo.write("jobs/sft.loam", example("llama3-8b-finetune"));
    repo.commit("a service and a job");

    // The review's pr7: three times the traffic; the comment used to read "No changes".
    repo.branch("traffic");
    repo.write(
        "jobs/chat.loam",
        repo.read("jobs/chat.loam")
            .replace("    rate = 20 ", "    rate = 60 "),
    );
    repo.commit("3x traffic");
    repo.checkout("main");
    let (code, comment) = comment_for(&repo, "traffic");
    assert_eq!(code, 2);
    assert_sound(&comment, "0 to add, 1 to change, 0 to destroy");
    let third = comment.body.lines().nth(2).unwrap_or_default();
    assert!(
        third.starts_with("services +") && third.contains("per month"),
        "the headline gives the monthly cost: {third}"
    );
    assert!(!comment.failed);
    // The fine-tune did not change: its warning (L3007, a throughput above every published
    // run on its device) is not this pull request's news.
    assert!(!comment.body.contains("L3007"), "{}", comment.body);

    // When the fine-tune changes, its warnings come folded in its details, after the verdict.
    repo.branch("batch");
    repo.write(
        "jobs/sft.loam",
        repo.read("jobs/sft.loam")
            .replace("global_batch = 64", "global_batch = 128"),
    );
    repo.commit("a bigger batch");
    repo.checkout("main");
    let (code, comment) = comment_for(&repo, "batch");
    assert_eq!(code, 2);
    // A new batch changes the trainer's arguments: the job is replaced (docs/gitops.md).
    assert_sound(
        &comment,
        "0 to add, 0 to change, 1 to replace, 0 to destroy",
    );
    let summary = comment
        .body
        .find("</code> <code>llama3-8b-sft</code>: ")
        .unwrap_or_else(|| panic!("{}", comment.body));
    let details = comment.body[..summary].rfind("<details>").unwrap();
    let warning = comment.body.find("L3007").expect("the job's warning");
    let closed = details + comment.body[details..].find("</details>").unwrap();
    assert!(details < warning && warning < closed, "{}", comment.body);
    assert!(comment.body[summary..closed].contains("(1 warning)</summary>"));

    // The review's pr6: a typo. The verdict, then the located error, never standard error's
    // warnings in front.
    repo.branch("typo");
    repo.write(
        "jobs/sft.loam",
        repo.read("jobs/sft.loam")
            .replace("global_batch", "global_bach"),
    );
    repo.commit("a typo");
    repo.checkout("main");
    let (code, comment) = comment_for(&repo, "typo");
    assert_eq!(code, 1);
    assert_sound(&comment, "Will not run: 1 spec with errors");
    assert!(comment.body.contains("jobs/sft.loam:"), "{}", comment.body);
    assert!(comment.failed, "errors fail the job");
}

#[test]
fn eighty_changed_jobs_keep_the_verdict_first_and_the_comment_whole() {
    if !have_node() {
        return;
    }
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    let names: Vec<String> = (0..80).map(|i| format!("team-job-{i:02}")).collect();
    for name in &names {
        repo.write(&format!("jobs/{name}.loam"), spec(name, 64, 8));
    }
    repo.commit("80 jobs");
    repo.branch("many");
    for (i, name) in names.iter().enumerate() {
        let mut text = spec(name, 128, 16);
        // Two jobs get a deadline no plan meets: 2B tokens of an 8B model need far more than
        // an hour on 16 devices (6 × 8e9 × 2e9 ≈ 1e20 FLOP against 16 × ~1e15 FLOP/s × 3,600 s
        // ≈ 6e19 FLOP at full peak).
        if i < 2 {
            text = text.replace("deadline = 2d", "deadline = 1h");
        }
        repo.write(&format!("jobs/{name}.loam"), text);
    }
    repo.commit("every job doubles its batch; two want it in an hour");
    repo.checkout("main");
    let (code, comment) = comment_for(&repo, "many");
    assert_eq!(code, 1, "{}", comment.body);
    assert_sound(&comment, "Will not run: 2 jobs infeasible");
    assert!(comment.failed);
}

#[test]
fn when_loam_cannot_run_its_message_is_posted_bounded_and_closed() {
    if !have_node() {
        return;
    }
    // No markdown (a usage or I/O error) and a long message full of code fences and
    // multi-byte characters.
    let line = "error: ``` × │ ⚠ the revision `origin/main` is not in the clone ";
    let errors: String = (0..5_000).map(|i| format!("{line}{i}\n")).collect();
    let comment = post("", &errors, 2);
    assert_sound(&comment, "loam could not run (exit code 2)");
    assert!(comment.body.chars().count() < 10_000);
    assert!(comment.failed);
}

/// The shell block of the GitLab job that writes `loam-note.md`.
fn gitlab_note_block() -> String {
    let path = repo_root().join("examples/ci/gitlab-ci.yml");
    let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["loam-diff"]["script"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|block| block.contains("> loam-note.md"))
        .expect("the block that writes the note")
        .to_string()
}

/// The note the GitLab job writes for `markdown` (loam's standard output) and `errors` (its
/// standard error).
fn gitlab_note(markdown: &str, errors: &str, code: u8) -> Comment {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("loam-diff.md"), markdown).unwrap();
    std::fs::write(dir.path().join("loam-errors.txt"), errors).unwrap();
    std::fs::write(dir.path().join("loam-report.html"), "<html></html>").unwrap();
    let script = format!(
        "set -eu\nmarker='<!-- loam-diff -->'\ncode={code}\n{}",
        gitlab_note_block()
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env("CI_PROJECT_URL", "https://gitlab.example/o/r")
        .env("CI_JOB_ID", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Comment {
        body: std::fs::read_to_string(dir.path().join("loam-note.md")).unwrap(),
        failed: code == 1,
    }
}

#[test]
fn the_gitlab_note_is_loams_markdown_verdict_first() {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/sft.loam", example("llama3-8b-finetune"));
    repo.commit("a job");
    repo.branch("typo");
    repo.write(
        "jobs/sft.loam",
        repo.read("jobs/sft.loam")
            .replace("global_batch", "global_bach"),
    );
    repo.commit("a typo");
    repo.checkout("main");
    let (code, markdown, errors) = repo.loam(&[
        "diff",
        "--base",
        "main",
        "--head",
        "typo",
        "--format",
        "markdown",
        "--detailed-exitcode",
    ]);
    assert_eq!(code, 1);
    let note = gitlab_note(&markdown, &errors, code);
    assert_sound(&note, "Will not run: 1 spec with errors");
    assert!(note.body.contains("jobs/sft.loam:"), "{}", note.body);
    assert!(note.body.contains("[loam plan report]("), "{}", note.body);

    // loam could not run: its message, in a closed code block, never cut inside a character.
    let line = "error: ``` × │ ⚠ the revision is not in the clone ";
    let long: String = (0..5_000).map(|i| format!("{line}{i}\n")).collect();
    let note = gitlab_note("", &long, 2);
    assert_sound(&note, "loam could not run (exit code 2)");
    assert!(
        note.body.lines().count() < 220,
        "{}",
        note.body.lines().count()
    );
}
