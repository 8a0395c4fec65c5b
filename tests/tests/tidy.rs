//! Hygiene enforced by `cargo test`: module docs, module size, and every diagnostic code shown
//! in at least one snapshot or explanation page.

use loam_ir::diagnostics::codes;
use loam_tests::repo_root;
use std::path::{Path, PathBuf};

/// Modules above this many lines must be split by concern (CONTRIBUTING.md: about 800).
const MAX_MODULE_LINES: usize = 800;

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "snapshots" {
                rust_files(&path, found);
            }
        } else if name.ends_with(".rs") {
            found.push(path);
        }
    }
}

fn source_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in [
        "grammar/src",
        "ir/src",
        "compiler/src",
        "cli/src",
        "backends/src",
        "report/src",
        "diff/src",
        "tests/src",
    ] {
        rust_files(&repo_root().join(dir), &mut found);
    }
    found.sort();
    found
}

#[test]
fn every_source_file_starts_with_a_module_doc() {
    let missing: Vec<String> = source_files()
        .into_iter()
        .filter(|p| !p.ends_with("tests.rs"))
        .filter(|p| !std::fs::read_to_string(p).unwrap().starts_with("//!"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` first line: {missing:#?}"
    );
}

#[test]
fn modules_stay_small() {
    let too_long: Vec<String> = source_files()
        .into_iter()
        .filter_map(|p| {
            let lines = std::fs::read_to_string(&p).unwrap().lines().count();
            (lines > MAX_MODULE_LINES).then(|| format!("{} ({lines} lines)", p.display()))
        })
        .collect();
    assert!(
        too_long.is_empty(),
        "split these modules by concern: {too_long:#?}"
    );
}

/// The integration tests run as threads of one process (`suite.rs`): a test that moved the
/// process's current folder would move it under every other test's relative paths.
#[test]
fn no_test_changes_the_current_folder() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("tests"), &mut files);
    let forbidden = ["set_current_dir", "::set_var(", "::remove_var("];
    let offenders: Vec<String> = files
        .iter()
        .filter(|path| !path.ends_with("tidy.rs"))
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            forbidden.iter().any(|call| text.contains(call))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "change process-wide state; run loam as a process (`loam_process::loam_in`) instead: {offenders:?}"
    );
}

fn snapshot_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("target") {
                snapshot_files(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "snap") {
            found.push(path);
        }
    }
}

#[test]
fn every_code_appears_in_a_snapshot() {
    let mut files = Vec::new();
    for dir in ["tests", "compiler", "backends"] {
        snapshot_files(&repo_root().join(dir), &mut files);
    }
    let snapshots: String = files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let missing: Vec<&str> = codes::all()
        .iter()
        .map(|c| c.code.as_str())
        .filter(|code| !snapshots.contains(code))
        .collect();
    assert!(missing.is_empty(), "codes no snapshot shows: {missing:?}");
}

/// Every text file the repository tracks, outside build output and snapshots.
fn text_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "snapshots" && name != "fuzz" {
                text_files(&path, found);
            }
        } else if [
            ".rs", ".md", ".yaml", ".toml", ".sh", ".py", ".loam", ".pest",
        ]
        .iter()
        .any(|ext| name.ends_with(ext))
        {
            found.push(path);
        }
    }
}

#[test]
fn docs_and_comments_cite_only_the_repository() {
    // A reader of a clone has nothing beside it: every reference must resolve inside the tree.
    let mut files = Vec::new();
    text_files(&repo_root(), &mut files);
    let outside: Vec<String> = files
        .iter()
        .filter(|p| !p.ends_with("tidy.rs"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            text.contains("../shared") || text.contains("DESIGN.md") || text.contains("STYLE.md")
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "files citing what is outside the repository: {outside:#?}"
    );
}

/// The planner's modules (the files and folders right under `compiler/src/plan/`) and the
/// sibling modules each names: `super::x` from a top-level file, `crate::plan::x` from anywhere.
fn plan_module_uses() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let dir = repo_root().join("compiler/src/plan");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let units: std::collections::BTreeSet<String> = files
        .iter()
        .filter_map(|p| p.strip_prefix(&dir).ok())
        .filter_map(|rel| rel.components().next())
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    let mut uses: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for path in files.iter().filter(|p| !p.ends_with("tests.rs")) {
        let rel = path.strip_prefix(&dir).unwrap();
        let top_level = rel.components().count() == 1;
        let unit = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let mut prefixes = vec!["crate::plan::"];
        if top_level {
            prefixes.push("super::");
        }
        for prefix in prefixes {
            for (at, _) in text.match_indices(prefix) {
                let rest = &text[at + prefix.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if units.contains(&name) && name != unit {
                    uses.entry(unit.clone()).or_default().insert(name);
                }
            }
        }
        uses.entry(unit).or_default();
    }
    uses
}

#[test]
fn the_planners_modules_import_each_other_in_no_cycle() {
    let uses = plan_module_uses();
    // Depth-first search for a back edge; the path to it is the cycle.
    fn visit(
        unit: &str,
        uses: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|u| u == unit) {
            let mut cycle = path[at..].to_vec();
            cycle.push(unit.to_string());
            return Some(cycle);
        }
        if done.contains(unit) {
            return None;
        }
        path.push(unit.to_string());
        for next in uses.get(unit).into_iter().flatten() {
            if let Some(cycle) = visit(next, uses, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(unit.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    for unit in uses.keys() {
        let cycle = visit(unit, &uses, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "plan/ modules import each other in a cycle: {cycle:?}"
        );
    }
    assert!(uses.len() > 5, "found only {uses:?}");
}

/// Every numeric constant of the cost model says what kind it is (physical with its source,
/// counted, or fitted) and `docs/cost-model.md` lists it, so no number hides in the code.
#[test]
fn cost_model_constants_are_tagged_and_documented() {
    let root = repo_root();
    let docs = std::fs::read_to_string(root.join("docs/cost-model.md")).unwrap();
    let mut files = Vec::new();
    for dir in [
        "compiler/src/cost",
        "compiler/src/workload",
        "compiler/src/serve",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    for file in [
        "compiler/src/cost.rs",
        "compiler/src/workload.rs",
        "compiler/src/calibrate.rs",
        "compiler/src/serve.rs",
        "compiler/src/calibrate/serving.rs",
    ] {
        files.push(root.join(file));
    }
    let mut seen = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line
                .strip_prefix("pub const ")
                .or_else(|| line.strip_prefix("pub(crate) const "))
                .or_else(|| line.strip_prefix("const "))
            else {
                continue;
            };
            let Some((name, ty)) = rest.split_once(':') else {
                continue;
            };
            if !ty.trim_start().starts_with("f64") {
                continue;
            }
            // The doc comment above the constant starts with its kind.
            let mut start = i;
            while start > 0 && lines[start - 1].trim_start().starts_with("///") {
                start -= 1;
            }
            let first = lines.get(start).copied().unwrap_or("");
            assert!(
                ["/// Physical", "/// Counted", "/// Fitted"]
                    .iter()
                    .any(|kind| first.trim_start().starts_with(kind)),
                "{}: `{name}` has no kind (Physical / Counted / Fitted) in its doc comment",
                path.display()
            );
            assert!(
                docs.contains(&format!("`{name}`")),
                "docs/cost-model.md does not list `{name}`"
            );
            seen += 1;
        }
    }
    assert!(seen >= 8, "only {seen} constants found");
}

/// The backends and the report read the Plan IR and nothing else of the compiler: `loam-ir` is
/// their one loam dependency, a Cargo fact rather than a convention (the tests may plan with the
/// compiler, so only `[dependencies]` is read).
#[test]
fn backends_and_report_depend_on_the_ir_only() {
    for manifest in ["backends/Cargo.toml", "report/Cargo.toml"] {
        let text = std::fs::read_to_string(repo_root().join(manifest)).unwrap();
        let dependencies = text
            .split("\n[")
            .find(|section| section.starts_with("dependencies]"))
            .unwrap_or_else(|| panic!("{manifest} has no [dependencies]"));
        let loam: Vec<&str> = dependencies
            .lines()
            .filter(|line| line.starts_with("loam-"))
            .collect();
        assert_eq!(
            loam,
            ["loam-ir.workspace = true"],
            "{manifest}: the loam crates it depends on"
        );
    }
}

/// The diff compares two planned sides and reads no file: its loam dependencies are the IR, the
/// compiler, the backends and the report, never the CLI, and it has no git (ARCHITECTURE.md,
/// `loam-diff`).
#[test]
fn the_diff_depends_on_no_reader() {
    let text = std::fs::read_to_string(repo_root().join("diff/Cargo.toml")).unwrap();
    let dependencies = text
        .split("\n[")
        .find(|section| section.starts_with("dependencies]"))
        .expect("diff/Cargo.toml has [dependencies]");
    let names: Vec<&str> = dependencies
        .lines()
        .filter_map(|line| line.split_once(".workspace = true").map(|(name, _)| name))
        .collect();
    let loam: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| name.starts_with("loam-"))
        .collect();
    assert_eq!(
        loam,
        ["loam-ir", "loam-compiler", "loam-backends", "loam-report"],
        "diff/Cargo.toml: the loam crates it depends on"
    );
    assert!(
        !names.contains(&"git2"),
        "loam-diff reads no repository; the CLI reads both sides"
    );
}
