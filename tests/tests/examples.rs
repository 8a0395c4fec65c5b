//! Every example in `examples/` checks clean and is formatted canonically.

use loam_tests::{check, repo_root};

fn examples() -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "loam"))
        .collect();
    found.sort();
    assert!(found.len() >= 6, "expected at least six examples");
    found
}

#[test]
fn every_example_checks_clean() {
    for path in examples() {
        let text = std::fs::read_to_string(&path).unwrap();
        let output = check("example.loam", &text);
        assert!(
            output.starts_with("no diagnostics (1 jobs)")
                || output.starts_with("no diagnostics (0 jobs, 1 service)"),
            "{}:\n{output}",
            path.display()
        );
    }
}

#[test]
fn every_example_is_already_formatted() {
    for path in examples() {
        let text = std::fs::read_to_string(&path).unwrap();
        let formatted = loam_compiler::fmt::format_source(&text).unwrap();
        assert_eq!(
            formatted,
            text,
            "{} is not in canonical layout (run `loam fmt`)",
            path.display()
        );
    }
}

#[test]
fn formatting_every_fixture_is_a_fixed_point() {
    let mut n_files = 0;
    for dir in ["tests/cases/parse", "tests/cases/check", "examples"] {
        for entry in std::fs::read_dir(repo_root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            // `examples/ci/` holds CI configuration, not specs.
            if path.is_dir() {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Fixtures with syntax errors are not formatted at all.
            let Some(once) = loam_compiler::fmt::format_source(&text) else {
                continue;
            };
            let twice = loam_compiler::fmt::format_source(&once).unwrap();
            assert_eq!(twice, once, "fmt is not idempotent on {}", path.display());
            n_files += 1;
        }
    }
    assert!(n_files > 20);
}
