//! The CLI contract, in-process: exit codes, formats, and `fmt` writing nothing on failure.

use loam_tests::{repo_root, run_cli};

fn example(name: &str) -> String {
    repo_root()
        .join("examples")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn check_examples_is_clean() {
    let dir = repo_root().join("examples");
    let (code, out, err) = run_cli(&["check", dir.to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no problems"), "{out}");
}

#[test]
fn three_mistakes_give_three_located_coded_diagnostics() {
    let path = repo_root().join("tests/cases/check/three-mistakes.loam");
    let (code, _, err) = run_cli(&["check", path.to_str().unwrap()], "");
    assert_eq!(code, 1);
    for expected in [
        "L1002",
        "L1008",
        "L1009",
        "three-mistakes.loam:6:5",
        "three-mistakes.loam:11:15",
        "three-mistakes.loam:17:20",
    ] {
        assert!(err.contains(expected), "missing {expected} in:\n{err}");
    }
    assert!(err.contains("3 errors"), "{err}");
}

#[test]
fn check_json_lists_every_diagnostic_with_its_location() {
    let path = repo_root().join("tests/cases/check/three-mistakes.loam");
    let (code, out, _) = run_cli(&["check", "--format", "json", path.to_str().unwrap()], "");
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let diagnostics = doc["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 3);
    for d in diagnostics {
        for key in [
            "file",
            "line",
            "column",
            "end_line",
            "end_column",
            "code",
            "severity",
            "message",
            "help",
        ] {
            assert!(!d[key].is_null(), "{key} missing in {d}");
        }
    }
    assert_eq!(diagnostics[0]["code"], "L1002");
    assert_eq!(diagnostics[0]["line"], 6);
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, err) = run_cli(&["check", "--format", "yaml"], "");
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = run_cli(&["frobnicate"], "");
    assert_eq!(code, 2);
}

#[test]
fn help_and_version_exit_0() {
    let (code, out, _) = run_cli(&["--help"], "");
    assert_eq!(code, 0);
    assert!(out.contains("check") && out.contains("fmt"), "{out}");
    let (code, out, _) = run_cli(&["fmt", "--help"], "");
    assert_eq!(code, 0);
    assert!(out.contains("--check"), "{out}");
}

#[test]
fn fmt_check_reports_and_writes_nothing() {
    let dir = std::env::temp_dir().join(format!("loam-fmt-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("messy.loam");
    let messy = "job \"a\" {\ntenant=\"t\"\n   model {layers=1}\n}\n";
    std::fs::write(&path, messy).unwrap();
    let (code, _, err) = run_cli(&["fmt", "--check", dir.to_str().unwrap()], "");
    assert_eq!(code, 1);
    assert!(err.contains("would reformat"), "{err}");
    assert!(err.ends_with("would reformat 1 file\n"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), messy);

    let (code, out, _) = run_cli(&["fmt", "--diff", path.to_str().unwrap()], "");
    assert_eq!(code, 1);
    assert!(out.contains("+  tenant = \"t\""), "{out}");

    let (code, _, _) = run_cli(&["fmt", dir.to_str().unwrap()], "");
    assert_eq!(code, 0);
    let formatted = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        formatted,
        "job \"a\" {\n  tenant = \"t\"\n  model {\n    layers = 1\n  }\n}\n"
    );
    // The newcomer review: a clean `fmt --check` printed nothing at all; it says what it read.
    let (code, _, err) = run_cli(&["fmt", "--check", dir.to_str().unwrap()], "");
    assert_eq!(code, 0);
    assert_eq!(err, "1 file already formatted\n");
}

#[test]
fn fmt_leaves_every_file_alone_when_one_does_not_parse() {
    let dir = std::env::temp_dir().join(format!("loam-fmt-atomic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = "job \"a\" {\ntenant=\"t\"\n}\n";
    std::fs::write(dir.join("a.loam"), good).unwrap();
    std::fs::write(dir.join("b.loam"), "job \"b\" {\n").unwrap();
    let (code, _, err) = run_cli(&["fmt", dir.to_str().unwrap()], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("L0001") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(dir.join("a.loam")).unwrap(), good);
}

#[test]
fn fmt_reads_standard_input() {
    let (code, out, _) = run_cli(&["fmt", "-"], "job \"a\" {tenant=\"t\"}");
    assert_eq!(code, 0);
    assert_eq!(out, "job \"a\" {\n  tenant = \"t\"\n}\n");
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, out, _) = run_cli(&["completions", shell], "");
        assert_eq!(code, 0);
        assert!(out.contains("loam"), "{shell}");
    }
}

#[test]
fn validate_is_an_alias_of_check() {
    let (code, out, _) = run_cli(&["validate", &example("llama3-8b-finetune.loam")], "");
    assert_eq!(code, 0);
    assert!(out.contains("no problems"));
}

#[test]
fn a_folder_without_specs_is_an_error_naming_what_was_searched() {
    // A CI gate on a mistyped or emptied folder must fail, not pass on nothing (newcomer
    // review, section 6): every command that reads specs exits 1 and names the folder.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "not a spec\n").unwrap();
    let folder = dir.path().to_str().unwrap();
    let out_file = dir.path().join("plan.html");
    let out_dir = dir.path().join("deploy");
    let commands: [Vec<&str>; 5] = [
        vec!["check", folder],
        vec!["plan", folder],
        vec!["report", folder, "--out", out_file.to_str().unwrap()],
        vec![
            "emit",
            folder,
            "--backend",
            "kubernetes",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        vec!["check", "--format", "github", folder],
    ];
    for args in commands {
        let (code, out, err) = run_cli(&args, "");
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(
            err.contains(&format!("no spec files in `{folder}`")),
            "{args:?}: {err}"
        );
    }
    assert!(!out_file.exists(), "no page is written for nothing");
    // The GitHub format also says it as an annotation, where a CI log shows it.
    let (_, out, _) = run_cli(&["check", "--format", "github", folder], "");
    assert!(
        out.starts_with("::error title=loam check::no spec files in"),
        "{out}"
    );
}

#[test]
fn check_for_github_counts_services_as_well_as_jobs() {
    // examples/ holds 15 files: 12 with a job block, 3 with a service block.
    let dir = repo_root().join("examples");
    let (code, out, err) = run_cli(&["check", "--format", "github", dir.to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("::notice title=loam check::checked 15 files, 12 jobs, 3 services: 0 errors"),
        "{out}"
    );
}

#[test]
fn plan_folds_many_warnings_into_a_count_per_code_and_verbose_shows_each() {
    // Three examples that queue on H100_SXM and sit above the tenant's quota: more than three
    // warnings, so `loam plan` folds them (newcomer review: 264 lines of warnings came first).
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "llama3-70b-pretrain.loam",
        "mixtral-8x7b-moe.loam",
        "llama3-8b-finetune.loam",
    ] {
        std::fs::copy(example(name), dir.path().join(name)).unwrap();
    }
    let folder = dir.path().to_str().unwrap();
    let (code, full_out, full) = run_cli(&["plan", "--verbose", folder], "");
    assert_eq!(code, 0, "{full}");
    let codes: Vec<&str> = full
        .lines()
        .filter(|l| l.len() == 5 && l.starts_with('L'))
        .collect();
    assert!(
        codes.len() > 3,
        "the fixture needs more than 3 warnings: {full}"
    );
    let (code, out, folded) = run_cli(&["plan", folder], "");
    assert_eq!(code, 0, "{folded}");
    assert_eq!(out, full_out, "folding changes standard error only");
    assert!(!folded.contains('⚠'), "{folded}");
    assert!(
        folded.starts_with(&format!("{} warnings (`loam plan --verbose`", codes.len())),
        "{folded}"
    );
    // One line per code, and the counts add up to the warnings shown with --verbose.
    let mut total = 0;
    for line in folded.lines().skip(1) {
        let (count, rest) = line.trim_start().split_once(" × ").unwrap();
        let code = rest.split(' ').next().unwrap();
        let count: usize = count.parse().unwrap();
        assert_eq!(
            count,
            codes.iter().filter(|c| **c == code).count(),
            "{code}"
        );
        total += count;
    }
    assert_eq!(total, codes.len());
}

/// The first figure with a time unit in `cell` (`15.7–16.7 ms`, `1.84 s`), if any.
fn first_time_figure(cell: &str) -> Option<String> {
    let chars: Vec<char> = cell.chars().collect();
    let mut start = 0;
    while start < chars.len() {
        if !chars[start].is_ascii_digit() || (start > 0 && chars[start - 1].is_alphanumeric()) {
            start += 1;
            continue;
        }
        let mut end = start;
        while end < chars.len() && (chars[end].is_ascii_digit() || ".,–".contains(chars[end])) {
            end += 1;
        }
        let figure: String = chars[start..end].iter().collect();
        let rest: String = chars[end..].iter().take(4).collect();
        for unit in [" ms", " s"] {
            let after = rest.strip_prefix(unit).and_then(|r| r.chars().next());
            if rest.starts_with(unit) && after.is_none_or(|c| !c.is_alphanumeric()) {
                return Some(format!("{figure}{unit}"));
            }
        }
        start = end.max(start + 1);
    }
    None
}

#[test]
fn the_readme_performance_table_leads_with_the_benchmarks_figures() {
    // The README claimed 4.1 ms for the 405B search long after docs/performance.md measured
    // 15.7–16.7 ms. Each row of the benchmark table at the top of docs/performance.md leads its
    // "measured" cell with the current figure; the README must state that figure.
    let performance = std::fs::read_to_string(repo_root().join("docs/performance.md")).unwrap();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let rows: Vec<&str> = performance
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    assert!(
        rows.len() >= 5,
        "no benchmark table at the top of docs/performance.md"
    );
    let mut checked = 0;
    for row in rows {
        let measured = row.split(" | ").nth(2).unwrap_or_default();
        let Some(figure) = first_time_figure(measured) else {
            continue;
        };
        assert!(
            readme.contains(&figure),
            "README.md's Performance table should state {figure}, as docs/performance.md does:\n{row}"
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked} figures checked");
}

#[test]
fn a_time_figure_is_read_with_its_unit() {
    assert_eq!(
        first_time_figure("15.7–16.7 ms since").as_deref(),
        Some("15.7–16.7 ms")
    );
    assert_eq!(
        first_time_figure("warm (a cache): 1.84 s (1.77–1.90)").as_deref(),
        Some("1.84 s")
    );
    assert_eq!(
        first_time_figure("8 samples, 455 ms").as_deref(),
        Some("455 ms")
    );
    assert_eq!(first_time_figure("H100 at 3 sites"), None);
}

#[test]
fn the_readme_calibration_row_is_what_loam_calibrate_prints() {
    // The newcomer review found the README at "22 published runs, 4.7 %, 91 %" while
    // `loam calibrate` printed 65 runs, 6.2 %, 86 %. The row is checked against the command:
    // when the cost model changes, this test names the numbers to write.
    let csv = repo_root().join("tests/data/training_runs_calibration.csv");
    let (code, out, err) = run_cli(&["calibrate", csv.to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    let summary = out
        .lines()
        .find(|l| l.starts_with("median |error| "))
        .unwrap_or_else(|| panic!("no summary line in:\n{out}"));
    // `median |error| 5.8%, mean |error| 10.7%, within ±20%: 88% of 65 costed runs (…)`
    let median = summary
        .strip_prefix("median |error| ")
        .and_then(|r| r.split('%').next())
        .unwrap();
    let (_, after) = summary.split_once("within ±20%: ").unwrap();
    let within = after.split('%').next().unwrap();
    let runs = after
        .split(" of ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap();
    let expected = format!(
        "| calibration on {runs} published runs (`loam calibrate`; a test keeps this row equal to its output) | median abs. error {median} %, {within} % within ±20 % |"
    );
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    assert!(
        readme.contains(&expected),
        "README.md's Performance table should read:\n{expected}\n(from: {summary})"
    );
}
