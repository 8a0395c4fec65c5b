//! The README's five-minute tour runs as written: every line of its code block, read from the
//! README (not copied here), runs in a shell in a fresh git repository holding the files of
//! this work tree (tracked, and untracked ones git does not ignore), on a branch one real spec
//! change ahead of `main`, with the `loam` built for the tests first on `PATH` and a home folder
//! of its own. Each `loam` line exits with the code the docs give, prints something (`loam fmt`
//! only when a file changes) and prints no error; together they change no tracked file.

#![cfg(unix)]

use git2::{IndexAddOption, Repository, Signature, Status, StatusOptions, Time};
use loam_tests::repo_root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The lines of the first ```sh block after the tour's heading: the commands, comments kept
/// (the shell drops them).
fn tour_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let at = readme
        .find("## A five-minute tour")
        .expect("the README has its tour");
    let rest = &readme[at..];
    let start = rest.find("```sh\n").expect("the tour has a sh block") + "```sh\n".len();
    let end = rest[start..].find("```").unwrap();
    rest[start..start + end]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Every file of the work tree a `git add -A` would commit: tracked ones still on disk and
/// untracked ones that `.gitignore` does not exclude.
fn work_tree_files() -> Vec<PathBuf> {
    let repo = Repository::open(repo_root()).unwrap();
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_unmodified(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts)).unwrap();
    let mut files: Vec<PathBuf> = statuses
        .iter()
        .filter(|s| !s.status().intersects(Status::WT_DELETED | Status::IGNORED))
        .filter_map(|s| s.path().ok().map(PathBuf::from))
        .filter(|p| repo_root().join(p).is_file())
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Stages everything and commits on HEAD.
fn commit(repo: &Repository, message: &str, time: i64) {
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"].iter(), IndexAddOption::DEFAULT, None)
        .unwrap();
    index.update_all(["*"].iter(), None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::new("loam tests", "tests@loam.invalid", &Time::new(time, 0)).unwrap();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .unwrap();
}

/// A fresh repository in `dir`: this work tree's files committed on `main`, then a branch
/// `tour` with one real spec change (a larger global batch) committed on it.
fn fresh_repository(dir: &Path) -> Repository {
    let files = work_tree_files();
    assert!(
        files.iter().any(|f| f == Path::new("README.md")),
        "the copy holds the repository"
    );
    for file in &files {
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo_root().join(file), &to).unwrap();
    }
    let mut opts = git2::RepositoryInitOptions::new();
    opts.initial_head("main");
    let repo = Repository::init_opts(dir, &opts).unwrap();
    commit(&repo, "the repository as it is", 1_700_000_000);
    {
        let head = repo.head().unwrap().peel_to_commit().unwrap();
        repo.branch("tour", &head, false).unwrap();
    }
    repo.set_head("refs/heads/tour").unwrap();
    let spec = dir.join("examples/llama3-8b-finetune.loam");
    let text = std::fs::read_to_string(&spec).unwrap();
    assert!(text.contains("global_batch = 64\n"));
    std::fs::write(
        &spec,
        text.replace("global_batch = 64\n", "global_batch = 128\n"),
    )
    .unwrap();
    commit(&repo, "a larger global batch", 1_700_000_060);
    repo
}

/// The file a line's `> FILE` writes, `~` being `home`.
fn redirect_target(line: &str, home: &Path) -> Option<PathBuf> {
    let (_, after) = line.split_once(" > ")?;
    let word = after.split_whitespace().next()?;
    Some(match word.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(word),
    })
}

/// The lines a run shows as errors: miette's `×`, `error:` and GitHub's `::error`.
fn error_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            let l = l.trim_start();
            l.starts_with("× ") || l.starts_with("error") || l.starts_with("::error")
        })
        .collect()
}

#[test]
fn the_readme_tour_runs_as_written_in_a_fresh_clone() {
    let lines = tour_lines();
    let loam_lines = lines.iter().filter(|l| l.starts_with("loam ")).count();
    assert!(
        loam_lines >= 15,
        "the tour has {loam_lines} loam lines: {lines:#?}"
    );

    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let (clone, home, bin) = (root.join("loam"), root.join("home"), root.join("bin"));
    for dir in [&clone, &home, &bin] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_loam-under-test"), bin.join("loam")).unwrap();
    let repo = fresh_repository(&clone);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    for line in &lines {
        let out = Command::new("sh")
            .args(["-c", line])
            .current_dir(&clone)
            .env("HOME", &home)
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .env_remove("LOAM_CATALOGUE")
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let code = out.status.code();
        let context = format!("`{line}` exited {code:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        if !line.starts_with("loam ") {
            assert_eq!(code, Some(0), "{context}");
            continue;
        }
        // docs/gitops.md: with --detailed-exitcode, 2 means the plans change (they do: the
        // branch changes a spec); every other line of the tour succeeds.
        let expected = if line.contains("--detailed-exitcode") {
            2
        } else {
            0
        };
        assert_eq!(code, Some(expected), "{context}");
        // `loam explain` prints a page whose example shows the error it explains.
        if !line.starts_with("loam explain ") {
            assert!(error_lines(&stdout).is_empty(), "{context}");
        }
        assert!(error_lines(&stderr).is_empty(), "{context}");
        if let Some(file) = redirect_target(line, &home) {
            let written = std::fs::read_to_string(clone.join(&file)).unwrap_or_default();
            assert!(!written.trim().is_empty(), "{context}\n{file:?} is empty");
        } else if !line.starts_with("loam fmt ") {
            // `loam fmt` says nothing when every file is already in canonical layout.
            assert!(
                !(stdout.trim().is_empty() && stderr.trim().is_empty()),
                "{context}"
            );
        }
        if line.starts_with("loam diff --base main ") || line == "loam diff --base main" {
            assert!(stdout.contains("llama3-8b-sft"), "{context}");
        }
    }

    // The tour changes no tracked file: `loam fmt` found everything formatted, and what it
    // writes (`deploy/`, the completions) is new.
    let mut opts = StatusOptions::new();
    opts.include_untracked(false);
    let changed: Vec<String> = repo
        .statuses(Some(&mut opts))
        .unwrap()
        .iter()
        .filter_map(|s| s.path().ok().map(str::to_string))
        .collect();
    assert!(changed.is_empty(), "the tour changed {changed:?}");
    assert!(clone.join("deploy").is_dir(), "`loam emit` wrote deploy/");
}
