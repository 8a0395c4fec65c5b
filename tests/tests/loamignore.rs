//! `.loamignore`: folder searches of `check`, `fmt`, `plan` and `emit` leave out what it
//! matches (gitignore syntax, negation included), files named on the command line are read
//! anyway, the nearest file from the current folder up to the work tree's root applies, and
//! `loam diff` reads it from each revision's tree (or the work tree). A pattern the matcher
//! cannot read is an error naming the file and line.
//!
//! The file-system commands run as a process (`loam-under-test`), since the current folder
//! decides which file applies; `loam diff` runs in-process against a real git repository.

use crate::git_repo;

use git_repo::{TempRepo, spec};
use std::path::Path;

const BROKEN: &str = "job \"broken\" {\n  model {\n    layers = \n";

use crate::loam_process::loam_in as loam;

fn write(root: &Path, path: &str, text: &str) {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

/// A work tree (a git repository, no commits needed) with a clean job, drafts that are broken
/// and unformatted but ignored, one draft taken back in by a negation, and a `*.wip.loam` file.
fn work_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git2::Repository::init(dir.path()).unwrap();
    let root = dir.path();
    write(
        root,
        ".loamignore",
        "# drafts are not ready, except the one that is\n/drafts/*\n!/drafts/ready.loam\n*.wip.loam\n",
    );
    write(root, "jobs/a.loam", &spec("job-a", 64, 16));
    write(root, "jobs/c.wip.loam", BROKEN);
    write(root, "drafts/broken.loam", BROKEN);
    write(root, "drafts/ready.loam", &spec("job-ready", 64, 8));
    write(
        root,
        "drafts/unformatted.loam",
        &spec("job-u", 32, 8).replace("  tenant = ", "tenant   =  "),
    );
    dir
}

#[test]
fn check_fmt_and_plan_leave_out_what_the_ignore_file_matches() {
    let dir = work_tree();
    let root = dir.path();
    let (code, out, err) = loam(root, &["check", "."]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("checked 2 files, 2 jobs: no problems"),
        "{out}"
    );

    let (code, out, err) = loam(root, &["fmt", "--check", "."]);
    assert_eq!(code, 0, "{out}{err}");
    // Without the ignore file the same search finds the broken and unformatted drafts.
    std::fs::remove_file(root.join(".loamignore")).unwrap();
    let (code, _, err) = loam(root, &["fmt", "--check", "."]);
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = loam(root, &["check", "."]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("broken.loam"), "{err}");
}

#[test]
fn plan_and_emit_honour_the_ignore_file_and_a_negation_takes_a_file_back() {
    let dir = work_tree();
    let root = dir.path();
    let (code, out, err) = loam(root, &["plan", "--format", "json", "."]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut jobs: Vec<&str> = doc["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["job"].as_str().unwrap())
        .collect();
    jobs.sort_unstable();
    assert_eq!(jobs, ["job-a", "job-ready"], "{out}");

    let out_dir = root.join("deploy");
    let (code, _, err) = loam(
        root,
        &[
            "emit",
            ".",
            "--backend",
            "slurm",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut written: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && !n.starts_with('_'))
        .collect();
    written.sort();
    assert_eq!(written, ["job-a", "job-ready"]);
}

#[test]
fn a_file_or_folder_named_on_the_command_line_is_read_anyway() {
    let dir = work_tree();
    let root = dir.path();
    let (code, _, err) = loam(root, &["check", "drafts/broken.loam"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("drafts/broken.loam"), "{err}");
    let (code, _, err) = loam(root, &["check", "jobs/c.wip.loam"]);
    assert_eq!(code, 1, "{err}");
    // A named folder is searched even though `/drafts/*` matches what is in it: the rules
    // decide only below the folder named, and `drafts/x` matches `/drafts/*` there too.
    let (code, out, err) = loam(root, &["check", "drafts"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("checked 1 file"), "{out}");
}

#[test]
fn the_nearest_ignore_file_up_to_the_work_tree_root_applies() {
    let dir = work_tree();
    let root = dir.path();
    // From a subfolder without its own file, the root's applies: `c.wip.loam` is left out.
    let (code, out, err) = loam(&root.join("jobs"), &["check", "."]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("checked 1 file"), "{out}");
    // A nearer file replaces the root's entirely (its rules are not added to them).
    write(root, "jobs/.loamignore", "# nothing ignored here\n");
    let (code, _, err) = loam(&root.join("jobs"), &["check", "."]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("c.wip.loam"), "{err}");
}

#[test]
fn outside_a_work_tree_only_the_current_folders_file_applies() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".loamignore", "*.loam\n");
    write(root, "inner/a.loam", &spec("job-a", 64, 16));
    // Every spec ignored: nothing to check is an error (a CI gate must not pass on nothing).
    let (code, _, err) = loam(root, &["check", "."]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no spec files in `.`"), "{err}");
    // No `.git` above: the parent's file is not looked for.
    let (code, out, err) = loam(&root.join("inner"), &["check", "."]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("checked 1 file"), "{out}");
}

#[test]
fn a_pattern_the_matcher_cannot_read_is_an_error_naming_the_line() {
    let dir = work_tree();
    let root = dir.path();
    // Braces are alternatives, as in ripgrep (git reads them literally); an unclosed one is
    // an error rather than a rule that silently matches nothing.
    write(root, ".loamignore", "# ok\n/drafts/\n*.{wip,tmp.loam\n");
    for args in [
        &["check", "."][..],
        &["fmt", "--check", "."],
        &["plan", "."],
    ] {
        let (code, out, err) = loam(root, args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(".loamignore` line 3"), "{err}");
        assert!(
            err.contains("`*.{wip,tmp.loam` is not a valid pattern"),
            "{err}"
        );
    }
    // A named file does not need the rules, but the search still reads them: the error stands.
    let (code, _, err) = loam(root, &["check", "jobs/a.loam"]);
    assert_eq!(code, 2, "{err}");
    write(root, ".loamignore", "*.{wip,tmp}.loam\n/drafts/\n");
    let (code, out, err) = loam(root, &["check", "."]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("checked 1 file"), "{out}");
}

/// A repository whose first commit has no ignore file and whose second adds one that ignores
/// `drafts/`, with a broken draft in it.
fn ignore_added_in_second_commit() -> TempRepo {
    let mut repo = TempRepo::new();
    repo.add_catalogue();
    repo.write("jobs/a.loam", spec("job-a", 64, 16));
    repo.write("drafts/b.loam", spec("job-b", 64, 8));
    repo.commit("first");
    repo.write(".loamignore", "/drafts/\n");
    repo.write("drafts/broken.loam", BROKEN);
    repo.commit("ignore the drafts");
    repo
}

#[test]
fn diff_reads_each_revisions_own_ignore_file() {
    let repo = ignore_added_in_second_commit();
    // At HEAD the drafts are ignored: job-b leaves the plans, the broken draft is not read.
    let (code, out, err) = repo.loam(&[
        "diff",
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "--manifests",
        "none",
        "--detailed-exitcode",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("- job \"job-b\""), "{out}");
    assert!(!out.contains("broken"), "{out}");
    assert!(!err.contains("broken"), "{err}");
    // The other way round, the head (HEAD~1) has no ignore file: job-b is added.
    let (code, out, err) = repo.loam(&[
        "diff",
        "--base",
        "HEAD",
        "--head",
        "HEAD~1",
        "--manifests",
        "none",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("+ job \"job-b\""), "{out}");
}

#[test]
fn diff_of_the_work_tree_reads_the_work_trees_ignore_file() {
    let repo = ignore_added_in_second_commit();
    // Not committed: the work tree ignores only the broken draft now, so job-b comes back.
    repo.write(".loamignore", "/drafts/broken.loam\n");
    let (code, out, err) = repo.loam(&["diff", "--base", "HEAD", "--manifests", "none"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("+ job \"job-b\""), "{out}");
    assert!(!err.contains("broken"), "{err}");
    // Named, an ignored file is read on both sides.
    let broken = repo.path().join("drafts/broken.loam");
    let (code, _, err) = repo.loam(&[
        "diff",
        "--base",
        "HEAD",
        "--manifests",
        "none",
        broken.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("broken.loam"), "{err}");
}

#[test]
fn diff_reports_a_bad_ignore_file_with_its_revision() {
    let mut repo = ignore_added_in_second_commit();
    repo.write(".loamignore", "/drafts/\n[z-a]{\n");
    repo.commit("a bad pattern");
    let (code, _, err) = repo.loam(&["diff", "--base", "HEAD~1", "--head", "HEAD"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`.loamignore` at `HEAD` line 2"), "{err}");
}
