//! `loam report` and `--format html`, in-process: what the CLI guarantees about the HTML page,
//! not what the page draws (that is `loam-report`'s, tested there). The page is written only
//! when it was rendered and never in part; the same input gives the same bytes; `loam plan
//! --format html` and `loam diff --format html` print exactly what `loam report` writes; the exit
//! codes are `loam plan`'s and `loam diff`'s; the title and the problem lines handed to the page
//! are the paths and the located diagnostics.

use crate::git_repo;

use git_repo::{TempRepo, spec};
use loam_tests::{check_files, repo_root, run_cli, split_fixture};
use std::path::{Path, PathBuf};

/// A temp folder holding one small spec, `a.loam`.
fn one_spec() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.loam");
    std::fs::write(&path, spec("job-a", 64, 16)).unwrap();
    (dir, path.to_string_lossy().into_owned())
}

fn text(path: &Path) -> String {
    String::from_utf8(std::fs::read(path).unwrap()).unwrap()
}

/// The files in `dir`, sorted by name.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn str(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn report_writes_one_page_and_says_so() {
    let (dir, spec) = one_spec();
    let out = dir.path().join("report.html");
    let (code, stdout, err) = run_cli(&["report", &spec, "--out", str(&out)], "");
    assert_eq!(code, 0, "{err}");
    assert!(text(&out).starts_with("<!doctype html>"), "{}", text(&out));
    assert!(stdout.starts_with("wrote "), "{stdout}");
    assert!(stdout.contains("1 job planned"), "{stdout}");
    // Nothing but the page is left beside it: the temporary file was renamed.
    assert_eq!(listing(dir.path()), ["a.loam", "report.html"]);
}

#[test]
fn the_same_input_gives_the_same_bytes_and_every_route_prints_them() {
    let (dir, spec) = one_spec();
    let (first, second) = (dir.path().join("1.html"), dir.path().join("2.html"));
    for out in [&first, &second] {
        let (code, _, err) = run_cli(&["report", &spec, "--out", str(out)], "");
        assert_eq!(code, 0, "{err}");
    }
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );
    // Without --out the page goes to standard output, and `plan --format html` prints it too.
    let (code, printed, _) = run_cli(&["report", &spec], "");
    assert_eq!(code, 0);
    assert_eq!(printed, text(&first));
    let (code, planned, err) = run_cli(&["plan", "--format", "html", &spec], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(planned, text(&first));
}

#[test]
fn a_missing_path_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let missing = dir.path().join("no-such.loam");
    let (code, stdout, err) = run_cli(&["report", str(&missing), "--out", str(&out)], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no-such.loam"), "{err}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

#[test]
fn out_into_a_missing_folder_exits_2() {
    let (dir, spec) = one_spec();
    let out = dir.path().join("missing").join("report.html");
    let (code, _, err) = run_cli(&["report", &spec, "--out", str(&out)], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!dir.path().join("missing").exists());
    assert_eq!(listing(dir.path()), ["a.loam"]);
}

#[test]
fn a_spec_with_errors_exits_1_and_still_writes_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let broken = repo_root().join("tests/cases/check/three-mistakes.loam");
    let (code, stdout, err) = run_cli(&["report", str(&broken), "--out", str(&out)], "");
    assert_eq!(code, 1, "{err}");
    assert!(text(&out).starts_with("<!doctype html>"));
    assert!(stdout.starts_with("wrote "), "{stdout}");
    // The diagnostics go to standard error as `loam plan` prints them.
    assert!(err.contains("L1002") && err.contains("3 errors"), "{err}");
    let (plan_code, planned, _) = run_cli(&["plan", "--format", "html", str(&broken)], "");
    assert_eq!(plan_code, 1);
    assert_eq!(planned, text(&out));
}

#[test]
fn the_problems_are_one_located_line_per_diagnostic() {
    let path = "three-mistakes.loam";
    let source =
        std::fs::read_to_string(repo_root().join("tests/cases/check/three-mistakes.loam")).unwrap();
    let specs = check_files(&split_fixture(path, &source));
    let planned = loam_compiler::project::plan_project(&specs, 1);
    let problems = loam_cli::render::plan_html::problems(&specs, &planned);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    for (problem, at) in problems.iter().zip(["6:5", "11:15", "17:20"]) {
        let line = &problem.line;
        assert!(problem.error, "{line}");
        assert!(
            line.starts_with("error[L") && line.contains(&format!(" {path}:{at}: ")),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
    }
    assert_eq!(
        loam_cli::render::plan_html::title(&[PathBuf::from("./jobs"), PathBuf::from("b.loam")]),
        "loam plan: jobs b.loam"
    );
    assert_eq!(loam_cli::render::plan_html::title(&[]), "loam plan: .");
}

/// A repository whose second commit changes `job-a` and adds `job-c`.
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
fn report_base_writes_the_page_diff_format_html_prints() {
    let repo = two_commits();
    let root = repo.path();
    let root = str(&root);
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("diff.html");
    let (code, stdout, err) = repo.loam(&[
        "report",
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "--out",
        str(&out),
        root,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("1 to add, 0 to change, 1 to replace, 0 to destroy"),
        "{stdout}"
    );
    let page = text(&out);
    assert!(page.starts_with("<!doctype html>"), "{page}");
    let (code, printed, err) = repo.loam(&[
        "diff", "--base", "HEAD~1", "--head", "HEAD", "--format", "html", root,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(printed, page);
    // The work tree is the default head, as for `loam diff`; it is HEAD here.
    let (code, worktree, _) = repo.loam(&["report", "--base", "HEAD~1", "--worktree", root]);
    assert_eq!(code, 0);
    assert!(worktree.starts_with("<!doctype html>"));
}

#[test]
fn report_base_exit_codes_are_loam_diffs() {
    let mut repo = two_commits();
    let root = repo.path();
    let root = str(&root);
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("diff.html");
    // An unknown revision is a usage error: exit 2, nothing written.
    let (code, _, err) = repo.loam(&["report", "--base", "no-such-rev", "--out", str(&out), root]);
    assert_eq!(code, 2, "{err}");
    assert!(listing(out_dir.path()).is_empty());
    // A spec that does not check at head: exit 1, and the page shows why.
    repo.write("jobs/b.loam", "job \"job-b\" {\n  tenant = \n}\n");
    repo.commit("broken");
    let (code, _, err) = repo.loam(&["report", "--base", "HEAD~1", "--out", str(&out), root]);
    assert_eq!(code, 1, "{err}");
    assert!(text(&out).starts_with("<!doctype html>"));
    let (diff_code, _, _) = repo.loam(&["diff", "--base", "HEAD~1", "--format", "html", root]);
    assert_eq!(diff_code, code);
    // --head and --worktree belong to --base.
    let (code, _, err) = repo.loam(&["report", "--head", "HEAD", root]);
    assert_eq!(code, 2, "{err}");
}

/// The title and the problem lines are handed to the page; that the page shows them is the
/// renderer's to keep.
#[test]
fn the_page_shows_its_title_and_problems() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let broken = repo_root().join("tests/cases/check/three-mistakes.loam");
    let (code, _, _) = run_cli(&["report", str(&broken), "--out", str(&out)], "");
    assert_eq!(code, 1);
    let page = text(&out);
    assert!(page.contains("loam plan: "), "{page}");
    assert!(page.contains("three-mistakes.loam:6:5"), "{page}");
}
