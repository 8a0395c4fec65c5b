//! The CI configuration loam ships works as far as it can be tried here: every YAML file of
//! `examples/ci/` and the root `.pre-commit-hooks.yaml` parses; every shell block (`run:` in
//! GitHub Actions, `script:` in GitLab CI, the hooks' script) passes shellcheck when it is
//! installed; every `loam …` line in them, and every hook's entry, is a loam command whose flags
//! loam accepts; the install is pinned and cached; the workflow that may write comments never
//! checks out the pull request.

use loam_tests::tools::have;
use loam_tests::{repo_root, run_cli};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn ci_dir() -> PathBuf {
    repo_root().join("examples/ci")
}

/// Every YAML file of `examples/ci/`, sorted.
fn ci_yaml_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(ci_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    files
}

fn parse(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str::<Value>(&text)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

/// A string, or the lines of a list of strings (GitLab's `script:`), as one shell text.
fn shell_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => Some(
            items
                .iter()
                .map(|i| i.as_str().expect("script lines are strings"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// The shell blocks of a CI file: `(where, text)` for every step's `run:` (GitHub Actions) and
/// every job's or template's `before_script:`, `script:` and `after_script:` (GitLab CI).
fn shell_blocks(doc: &Value) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let Some(top) = doc.as_object() else {
        return blocks;
    };
    if let Some(jobs) = top.get("jobs").and_then(Value::as_object) {
        for (job, body) in jobs {
            for (i, step) in body["steps"].as_array().into_iter().flatten().enumerate() {
                if let Some(run) = step.get("run").and_then(shell_text) {
                    blocks.push((format!("jobs.{job}.steps[{i}].run"), run));
                }
            }
        }
    }
    for (job, body) in top {
        for key in ["before_script", "script", "after_script"] {
            if let Some(text) = body.get(key).and_then(shell_text) {
                blocks.push((format!("{job}.{key}"), text));
            }
        }
    }
    blocks
}

/// The `loam` command lines of a shell text (backslash continuations joined), as the words up
/// to the first redirection or shell operator, with quotes removed.
fn loam_lines(text: &str) -> Vec<Vec<String>> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("loam "))
        .map(|l| {
            l.split_whitespace()
                .take_while(|w| {
                    !(w.starts_with('>')
                        || w.starts_with("2>")
                        || ["|", "||", "&&", ";", "#"].contains(w))
                })
                .map(|w| w.trim_matches('"').trim_matches('\'').to_string())
                .collect()
        })
        .collect()
}

/// Whether loam accepts the words (program name first): parsed with `--help` after them, so
/// nothing runs; an unknown flag or value before `--help` is an error (exit 2). Shell variables
/// stand for a revision.
fn assert_loam_accepts(words: &[String], context: &str) {
    assert_eq!(words.first().map(String::as_str), Some("loam"), "{context}");
    let mut args: Vec<&str> = words[1..]
        .iter()
        .map(|w| if w.contains('$') { "main" } else { w.as_str() })
        .collect();
    assert!(!args.is_empty(), "{context}: `loam` without a command");
    args.push("--help");
    let (code, out, err) = run_cli(&args, "");
    assert_eq!(
        code,
        0,
        "{context}: loam rejects `{}`:\n{err}",
        words.join(" ")
    );
    assert!(out.contains("Usage:"), "{context}: {out}");
}

/// Runs shellcheck on `text` as a bash script.
fn shellcheck(name: &str, text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("block.sh");
    std::fs::write(&file, format!("#!/usr/bin/env bash\n{text}\n")).unwrap();
    let out = std::process::Command::new("shellcheck")
        .args(["--shell=bash", "--severity=style"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "shellcheck on {name}:\n{}\n{text}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn have_shellcheck() -> bool {
    have(
        "shellcheck",
        loam_tests::tools::runs("shellcheck", &["--version"]),
    )
}

#[test]
fn every_ci_yaml_file_parses() {
    let files = ci_yaml_files();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "gitlab-ci.yml",
        "loam-comment.yml",
        "loam.yml",
        "pre-commit-config.yaml",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing: {names:?}"
        );
    }
    for file in files
        .iter()
        .chain([&repo_root().join(".pre-commit-hooks.yaml")])
    {
        assert!(
            parse(file).is_object() || parse(file).is_array(),
            "{file:?}"
        );
    }
}

#[test]
fn every_shell_block_passes_shellcheck_and_takes_no_expression_inline() {
    let check = have_shellcheck();
    let mut count = 0;
    for file in ci_yaml_files() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for (at, text) in shell_blocks(&parse(&file)) {
            count += 1;
            // A `${{ … }}` expression pasted into a script is a script injection when it holds
            // text a pull request controls; every value reaches the scripts through `env:`.
            assert!(
                !text.contains("${{"),
                "{name} {at} pastes an expression:\n{text}"
            );
            if check {
                shellcheck(&format!("{name} {at}"), &text);
            }
        }
    }
    assert!(count >= 8, "only {count} shell blocks found");
    if check {
        let script = std::fs::read_to_string(repo_root().join("scripts/pre-commit-loam")).unwrap();
        shellcheck("scripts/pre-commit-loam", &script);
    }
}

#[test]
fn every_loam_line_in_the_ci_examples_uses_real_commands_and_flags() {
    let mut seen = Vec::new();
    for file in ci_yaml_files() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for (at, text) in shell_blocks(&parse(&file)) {
            for words in loam_lines(&text) {
                assert_loam_accepts(&words, &format!("{name} {at}"));
                seen.push(words.join(" "));
            }
        }
    }
    for expected in [
        "loam check --format github .",
        "loam check .",
        "--format markdown --detailed-exitcode",
        "--format json",
    ] {
        assert!(
            seen.iter().any(|s| s.contains(expected)),
            "no `{expected}` in {seen:#?}"
        );
    }
}

#[test]
fn the_flag_check_rejects_what_loam_does_not_know() {
    // The helper above must be able to fail: an unknown flag and a wrong value are errors.
    for words in [
        "loam diff --bass main",
        "loam diff --format markdwn",
        "loam chek .",
    ] {
        let mut args: Vec<&str> = words.split(' ').skip(1).collect();
        args.push("--help");
        let (code, _, _) = run_cli(&args, "");
        assert_eq!(code, 2, "{words}");
    }
}

#[test]
fn the_github_workflows_pin_and_cache_loam_and_split_privileges() {
    for name in ["loam.yml", "gitlab-ci.yml"] {
        let text = std::fs::read_to_string(ci_dir().join(name)).unwrap();
        let doc = parse(&ci_dir().join(name));
        let vars = doc
            .get("env")
            .or_else(|| doc.get("variables"))
            .unwrap_or_else(|| panic!("{name} has no variables"));
        let version = vars["LOAM_VERSION"].as_str().unwrap_or_default();
        assert!(
            version.starts_with('v') && version.chars().any(|c| c.is_ascii_digit()),
            "{name}: LOAM_VERSION is not a pinned tag: {version:?}"
        );
        for line in text.lines().filter(|l| l.contains("cargo install")) {
            assert!(
                line.contains("--locked") && line.contains("--tag \"$LOAM_VERSION\""),
                "{name}: unpinned install: {line}"
            );
        }
        assert!(text.contains("LOAM_VERSION"), "{name}");
    }

    // The cache is keyed by the version, and the install runs only on a miss.
    let plan = parse(&ci_dir().join("loam.yml"));
    for (job, body) in plan["jobs"].as_object().unwrap() {
        let steps = body["steps"].as_array().unwrap();
        let cache = steps
            .iter()
            .find(|s| {
                s["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("actions/cache@"))
            })
            .unwrap_or_else(|| panic!("job {job} does not cache loam"));
        assert!(
            cache["with"]["key"]
                .as_str()
                .unwrap()
                .contains("env.LOAM_VERSION"),
            "{job}"
        );
        let install = steps
            .iter()
            .find(|s| {
                s["run"]
                    .as_str()
                    .is_some_and(|r| r.contains("cargo install"))
            })
            .unwrap();
        assert_eq!(
            install["if"].as_str(),
            Some("steps.loam-cache.outputs.cache-hit != 'true'"),
            "{job}"
        );
    }
    // The pull-request workflow may only read: it runs for forks.
    let permissions = plan["permissions"].as_object().unwrap();
    assert!(permissions.values().all(|v| v == "read"), "{permissions:?}");
    let text = std::fs::read_to_string(ci_dir().join("loam.yml")).unwrap();
    assert!(!text.contains(": write"), "loam.yml asks for write access");
    assert!(text.contains("actions/upload-artifact@"));

    // The commenting workflow follows the first by name, downloads from its run, and never
    // checks out or runs the pull request's code.
    let comment = parse(&ci_dir().join("loam-comment.yml"));
    let on = &comment["on"]["workflow_run"];
    assert_eq!(on["workflows"][0], plan["name"]);
    assert_eq!(comment["permissions"]["pull-requests"], "write");
    let steps = comment["jobs"]["comment"]["steps"].as_array().unwrap();
    assert!(steps.iter().all(|s| {
        !s["uses"]
            .as_str()
            .unwrap_or_default()
            .starts_with("actions/checkout")
    }));
    assert!(steps.iter().all(|s| s.get("run").is_none()));
    let download = &steps[0];
    assert!(
        download["uses"]
            .as_str()
            .unwrap()
            .starts_with("actions/download-artifact@")
    );
    assert_eq!(
        download["with"]["run-id"],
        "${{ github.event.workflow_run.id }}"
    );
    let script = steps[1]["with"]["script"].as_str().unwrap();
    for needed in [
        "<!-- loam-diff -->",
        "updateComment",
        "createComment",
        "diff.startsWith(marker)",
        "setFailed",
        "pulls.get",
    ] {
        assert!(script.contains(needed), "the comment script lacks {needed}");
    }
}

#[test]
fn the_hooks_file_offers_loam_fmt_and_loam_check() {
    let root = repo_root();
    assert!(
        !ci_dir().join(".pre-commit-hooks.yaml").exists(),
        "the hooks file lives at the root"
    );
    let hooks = parse(&root.join(".pre-commit-hooks.yaml"));
    let hooks = hooks.as_array().expect("a list of hooks");
    let ids: Vec<&str> = hooks.iter().map(|h| h["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["loam-fmt", "loam-check"]);
    for hook in hooks {
        let id = hook["id"].as_str().unwrap();
        for key in ["name", "entry", "language"] {
            assert!(hook[key].is_string(), "{id}: no {key}");
        }
        assert_eq!(
            hook["files"].as_str().map(|f| f.contains(r"\.loam")),
            Some(true)
        );
        // The entry is this repository's script, then a loam command line.
        let entry: Vec<String> = hook["entry"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let script = root.join(&entry[0]);
        let mode = std::fs::metadata(&script)
            .unwrap_or_else(|e| panic!("{id}: {}: {e}", script.display()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_ne!(mode.permissions().mode() & 0o111, 0, "{id}: not executable");
        }
        let _ = mode;
        let mut words = vec!["loam".to_string()];
        words.extend(entry[1..].iter().cloned());
        assert_loam_accepts(&words, id);
    }
    // fmt formats the staged files; check checks the whole repository (job names are unique
    // across files, and a catalogue change touches every spec).
    assert_eq!(hooks[0]["pass_filenames"], true);
    assert_eq!(hooks[1]["pass_filenames"], false);

    // The example config uses them from this repository at a pinned revision.
    let config = parse(&ci_dir().join("pre-commit-config.yaml"));
    let repo = &config["repos"][0];
    let rev = repo["rev"].as_str().unwrap();
    assert!(
        !["main", "master", "HEAD"].contains(&rev),
        "rev {rev} is not pinned"
    );
    let used: Vec<&str> = repo["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(used, ids);
}
