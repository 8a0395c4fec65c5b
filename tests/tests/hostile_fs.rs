//! A checked-out repository may be hostile: loam's file-system layer never reads or writes
//! outside what it was given, never hangs on what it finds, and never loses a user's files.
//! Each test is one finding of the reliability review of 2026-12-03 (its reproducer script in
//! `reliability-repro/NN-*.sh`), run on real files, links, FIFOs, devices and processes.

use crate::loam_process::loam_in as loam;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The example every test plans or formats: small and quick to plan.
fn example() -> PathBuf {
    loam_tests::repo_root().join("examples/llama3-8b-finetune.loam")
}

/// The binary under test, for the tests that need their own streams or environment.
fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_loam-under-test")
}

/// `example()` with its `tenant` line out of the canonical layout, so `loam fmt` rewrites it.
fn unformatted() -> String {
    fs::read_to_string(example())
        .unwrap()
        .replace("  tenant = \"nlp\"", "tenant=\"nlp\"")
}

/// 01 (H1): a link planted at the old fixed temporary name is never written through.
#[test]
fn fmt_and_report_never_write_through_a_planted_temporary_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("victim.txt"), "ORIGINAL\n").unwrap();
    fs::create_dir(root.join("repo")).unwrap();
    fs::write(root.join("repo/spec.loam"), unformatted()).unwrap();
    symlink("../victim.txt", root.join("repo/.spec.loam.loam-tmp")).unwrap();
    let (code, out, err) = loam(&root.join("repo"), &["fmt", "."]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        fs::read_to_string(root.join("victim.txt")).unwrap(),
        "ORIGINAL\n"
    );
    let spec = fs::symlink_metadata(root.join("repo/spec.loam")).unwrap();
    assert!(spec.is_file(), "the spec must stay a regular file");
    assert!(
        fs::read_to_string(root.join("repo/spec.loam"))
            .unwrap()
            .contains("  tenant = \"nlp\"")
    );

    fs::create_dir(root.join("rep")).unwrap();
    symlink("../victim.txt", root.join("rep/.r.html.loam-tmp")).unwrap();
    let spec = example();
    let (code, out, err) = loam(
        root,
        &["report", spec.to_str().unwrap(), "--out", "rep/r.html"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        fs::read_to_string(root.join("victim.txt")).unwrap(),
        "ORIGINAL\n"
    );
    assert!(
        fs::read_to_string(root.join("rep/r.html"))
            .unwrap()
            .starts_with("<!doctype html>")
    );
    assert_no_temporary_files(&root.join("rep"));
    assert_no_temporary_files(&root.join("repo"));

    // A link at `--out` itself is refused, before any planning.
    symlink("victim.txt", root.join("link.html")).unwrap();
    let (code, _, err) = loam(
        root,
        &["report", spec.to_str().unwrap(), "--out", "link.html"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`link.html`: it is a symbolic link"), "{err}");
    assert_eq!(
        fs::read_to_string(root.join("victim.txt")).unwrap(),
        "ORIGINAL\n"
    );
}

/// 02 (H2): a spec linked to a file outside the searched folder is skipped with a note and
/// never read, so its text (the environment, a secret) never reaches the output.
#[test]
fn a_link_out_of_the_folder_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    fs::copy(example(), root.join("job.loam")).unwrap();
    fs::write(
        dir.path().join("secret.env"),
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\n",
    )
    .unwrap();
    symlink("/proc/self/environ", root.join("env.loam")).unwrap();
    symlink("../secret.env", root.join("sec.loam")).unwrap();
    let output = Command::new(binary())
        .args(["--color", "never", "check", "."])
        .current_dir(&root)
        .env("DEMO_SECRET_TOKEN", "ghp_demo_1234567890")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    for secret in ["ghp_demo_1234567890", "wJalrXUtnFEMI"] {
        assert!(!out.contains(secret) && !err.contains(secret), "{out}{err}");
    }
    assert!(out.contains("checked 1 file, 1 job"), "{out}");
    assert!(
        err.contains("note: skipped `env.loam`: a symbolic link to a path outside `.`"),
        "{err}"
    );
    assert!(err.contains("note: skipped `sec.loam`"), "{err}");
}

/// 03 (M1): link loops end at once and give no copies; FIFOs and devices are skipped.
#[test]
fn loops_fifos_and_devices_neither_hang_nor_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("a")).unwrap();
    fs::copy(example(), root.join("a/job.loam")).unwrap();
    symlink("..", root.join("a/up")).unwrap();
    symlink(".", root.join("self")).unwrap();
    // A link inside the folder to a spec inside it: followed, and the file still read once.
    symlink("a/job.loam", root.join("again.loam")).unwrap();
    symlink("/dev/zero", root.join("zero.loam")).unwrap();
    let status = Command::new("mkfifo")
        .arg(root.join("fifo.loam"))
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    let (code, out, err) = loam(root, &["check", "."]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("checked 1 file, 1 job: no problems"), "{out}");
    assert!(!err.contains("L1006"), "{err}");
    assert!(
        err.contains("note: skipped `fifo.loam`: it is a FIFO (named pipe), not a regular file"),
        "{err}"
    );
    assert!(err.contains("note: skipped `zero.loam`"), "{err}");

    // Named on the command line, they are errors, not hangs.
    let (code, _, err) = loam(root, &["check", "fifo.loam"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("it is a FIFO"), "{err}");
    let (code, _, err) = loam(root, &["check", "zero.loam"]);
    assert_eq!(code, 2, "{err}");
}

/// L9: the same file named twice is read once; a nested git repository (a submodule) is not
/// searched, as in a revision's tree.
#[test]
fn a_file_named_twice_is_read_once_and_submodules_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::copy(example(), root.join("x.loam")).unwrap();
    let (code, out, err) = loam(root, &["check", "x.loam", "./x.loam"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("checked 1 file, 1 job"), "{out}");
    fs::create_dir_all(root.join("vendor/sub")).unwrap();
    fs::write(
        root.join("vendor/sub/.git"),
        "gitdir: ../../.git/modules/sub\n",
    )
    .unwrap();
    fs::copy(example(), root.join("vendor/sub/x.loam")).unwrap();
    let (code, out, err) = loam(root, &["check", "."]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("checked 1 file, 1 job"), "{out}");
}

/// 05 (M4): a failed write to standard output is exit 2 with a message; a closed pipe is not
/// an error.
#[test]
fn a_full_standard_output_is_an_error_and_a_closed_pipe_is_not() {
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = Command::new(binary())
        .args(["catalogue", "list"])
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: cannot write standard output: No space left on device"),
        "{err}"
    );

    let mut child = Command::new(binary())
        .args(["catalogue", "list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.stderr.is_empty());
}

/// Runs `loam emit example() --backend BACKEND --out OUT [EXTRA]` in `dir`.
fn emit(dir: &Path, backend: &str, out: &str, extra: &[&str]) -> (u8, String, String) {
    let spec = example();
    let mut args = vec![
        "emit",
        spec.to_str().unwrap(),
        "--backend",
        backend,
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    loam(dir, &args)
}

/// 06 (M8): the next emit refuses a folder holding files it did not write or that were edited
/// since, and an empty or foreign marker authorises nothing; `--force` replaces anyway.
#[test]
fn emit_never_deletes_files_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (code, out, err) = emit(root, "slurm", "out", &[]);
    assert_eq!(code, 0, "{out}{err}");
    let marker = fs::read_to_string(root.join("out/.loam-emit")).unwrap();
    assert!(marker.starts_with("loam-emit 1\n# "), "{marker}");
    assert!(marker.contains("  llama3-8b-sft/job.sbatch\n"), "{marker}");
    // Unchanged: replaced.
    let (code, out, err) = emit(root, "slurm", "out", &[]);
    assert_eq!(code, 0, "{out}{err}");

    fs::write(root.join("out/NOTES.md"), "my notes\n").unwrap();
    fs::create_dir(root.join("out/mine")).unwrap();
    fs::write(root.join("out/mine/keep.txt"), "keep\n").unwrap();
    let sbatch = root.join("out/llama3-8b-sft/job.sbatch");
    let edited = format!("{}# hand edit\n", fs::read_to_string(&sbatch).unwrap());
    fs::write(&sbatch, &edited).unwrap();
    let (code, _, err) = emit(root, "slurm", "out", &[]);
    assert_eq!(code, 2, "{err}");
    for named in [
        "NOTES.md (not written by loam emit)",
        "mine/keep.txt (not written by loam emit)",
        "llama3-8b-sft/job.sbatch (edited since)",
        "--force",
    ] {
        assert!(err.contains(named), "{named}: {err}");
    }
    assert_eq!(fs::read_to_string(&sbatch).unwrap(), edited);
    assert!(root.join("out/NOTES.md").exists() && root.join("out/mine/keep.txt").exists());

    let (code, out, err) = emit(root, "slurm", "out", &["--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!root.join("out/NOTES.md").exists());
    assert_ne!(fs::read_to_string(&sbatch).unwrap(), edited);

    for marker in ["", "written by someone\n"] {
        let user = root.join("user");
        let _ = fs::remove_dir_all(&user);
        fs::create_dir(&user).unwrap();
        fs::write(user.join("data.txt"), "precious\n").unwrap();
        fs::write(user.join(".loam-emit"), marker).unwrap();
        for extra in [&[][..], &["--force"][..]] {
            let (code, _, err) = emit(root, "slurm", "user", extra);
            assert_eq!(code, 2, "{marker:?} {extra:?}: {err}");
            assert!(err.contains("did not write"), "{err}");
            assert_eq!(
                fs::read_to_string(user.join("data.txt")).unwrap(),
                "precious\n"
            );
        }
    }
}

/// `--out .` inside an emitted folder says why it cannot work instead of "resource busy".
#[test]
fn emit_into_the_current_folder_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (code, out, err) = emit(root, "slurm", "out", &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = emit(&root.join("out"), "slurm", ".", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("it is the current folder or holds it"),
        "{err}"
    );
}

/// 10 (M9): `fmt` keeps a file's mode and formats a linked spec at its target, keeping the
/// link; a link out of the repository is refused.
#[test]
fn fmt_keeps_modes_and_links() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    fs::create_dir_all(root.join("real")).unwrap();
    fs::write(root.join("real/spec.loam"), unformatted()).unwrap();
    symlink("real/spec.loam", root.join("link.loam")).unwrap();
    fs::write(
        root.join("private.loam"),
        unformatted().replace("llama3-8b-sft", "private"),
    )
    .unwrap();
    fs::set_permissions(root.join("private.loam"), fs::Permissions::from_mode(0o600)).unwrap();
    let (code, out, err) = loam(&root, &["fmt", "link.loam", "private.loam"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        fs::symlink_metadata(root.join("link.loam"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        !fs::read_to_string(root.join("real/spec.loam"))
            .unwrap()
            .contains("tenant=\"nlp\"")
    );
    let mode = fs::metadata(root.join("private.loam"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        !fs::read_to_string(root.join("private.loam"))
            .unwrap()
            .contains("tenant=\"nlp\"")
    );

    fs::write(dir.path().join("outside.loam"), unformatted()).unwrap();
    symlink("../outside.loam", root.join("out.loam")).unwrap();
    let (code, _, err) = loam(&root, &["fmt", "out.loam"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symbolic link to a path outside"), "{err}");
    assert_eq!(
        fs::read_to_string(dir.path().join("outside.loam")).unwrap(),
        unformatted()
    );
}

/// 11 (L1): emits racing into one folder take turns: none fails, nothing is left beside it.
#[test]
fn concurrent_emits_neither_fail_nor_leak_folders() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let spec = example();
    for _round in 0..5 {
        let children: Vec<_> = ["slurm", "baremetal", "slurm", "baremetal"]
            .iter()
            .map(|backend| {
                Command::new(binary())
                    .args([
                        "emit",
                        spec.to_str().unwrap(),
                        "--backend",
                        backend,
                        "--out",
                        "conc",
                    ])
                    .current_dir(root)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert_eq!(
                output.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    let names: Vec<String> = fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["conc"]);
}

/// 12 (L2): `--out` naming a link is refused; the link and its folder stay as they were.
#[test]
fn emit_refuses_a_link_as_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (code, out, err) = emit(root, "slurm", "shared", &[]);
    assert_eq!(code, 0, "{out}{err}");
    symlink("shared", root.join("out")).unwrap();
    let (code, _, err) = emit(root, "baremetal", "out", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`out` is a symbolic link (to `shared`)"),
        "{err}"
    );
    assert!(
        fs::symlink_metadata(root.join("out"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(root.join("shared/llama3-8b-sft/job.sbatch").exists());
}

/// L5: a `.loamignore` pattern too large for the matcher is named by its line.
#[test]
fn an_ignore_pattern_too_large_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(
        root.join(".loamignore"),
        format!("drafts/\n{}\n", "*".repeat(100_000)),
    )
    .unwrap();
    fs::copy(example(), root.join("x.loam")).unwrap();
    let start = Instant::now();
    let (code, _, err) = loam(root, &["check", "."]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".loamignore`: line 2: `****"), "{err}");
}

/// No temporary file is left in `dir`.
fn assert_no_temporary_files(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with(".loam-write-"),
            "{name} left in {}",
            dir.display()
        );
    }
}

/// L5: a revision a shallow clone lacks says the clone is shallow and how to fetch more; the
/// reflog syntax (`@{-1}`) says it is not read, instead of libgit2's "ignore file" message.
#[test]
fn revision_errors_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin");
    fs::create_dir(&origin).unwrap();
    let git = |cwd: &Path, args: &[&str]| {
        let output = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
    };
    git(&origin, &["init", "-q"]);
    fs::copy(example(), origin.join("x.loam")).unwrap();
    git(&origin, &["add", "x.loam"]);
    git(&origin, &["commit", "-qm", "one"]);
    fs::write(origin.join("notes.txt"), "two\n").unwrap();
    git(&origin, &["add", "notes.txt"]);
    git(&origin, &["commit", "-qm", "two"]);
    let url = format!("file://{}", origin.display());
    git(
        dir.path(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let clone = dir.path().join("shallow");

    let (code, _, err) = loam(&clone, &["diff", "--base", "HEAD~1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("this clone is shallow"), "{err}");
    assert!(err.contains("git fetch --deepen"), "{err}");

    let (code, _, err) = loam(&clone, &["diff", "--base", "@{-1}"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("loam does not read the reflog"), "{err}");
}

/// L10: `fmt --stdin` reads at most the size cap of a spec: `< /dev/zero` is an error at once,
/// not exhausted memory.
#[test]
fn standard_input_is_capped_like_a_spec() {
    let zero = fs::File::open("/dev/zero").unwrap();
    let start = Instant::now();
    let output = Command::new(binary())
        .args(["fmt", "--stdin"])
        .stdin(Stdio::from(zero))
        .output()
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("standard input is larger than 16 MiB"),
        "{err}"
    );
}
