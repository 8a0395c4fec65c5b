//! Bad input gets a clear, located error and exit 1: never a panic, a hang or partial output.

use loam_tests::run_cli;
use std::path::PathBuf;

/// Writes `bytes` to a fresh file in a temporary folder and returns its path.
fn temp_spec(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loam-robustness-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.loam"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs `loam check` on `bytes`; asserts exit 1 and that stderr names `code`.
fn rejects(name: &str, bytes: &[u8], code: &str) -> String {
    let path = temp_spec(name, bytes);
    let (exit, _, err) = run_cli(&["check", path.to_str().unwrap()], "");
    assert_eq!(exit, 1, "{name}: {err}");
    assert!(err.contains(code), "{name}: expected {code} in:\n{err}");
    let shown = path.display().to_string();
    err.replace(&shown, "[PATH]")
}

#[test]
fn empty_file() {
    rejects("empty", b"", "L1016");
}

#[test]
fn binary_garbage() {
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 & 0x7f)
        .collect();
    // ASCII with control characters: not spec text, refused before parsing (L0005).
    rejects("garbage", &garbage, "L0005");
}

#[test]
fn invalid_utf8() {
    let out = rejects("latin1", b"job \"caf\xe9\" {}\n", "L0002");
    insta::assert_snapshot!(out);
}

#[test]
fn ten_megabyte_file() {
    // Ten megabytes of one long comment-free line of names: a syntax error at the second name.
    let big = "model ".repeat(10 * 1024 * 1024 / 6);
    rejects("big", big.as_bytes(), "L0001");
}

#[test]
fn ten_megabytes_of_valid_jobs_check() {
    let job =
        std::fs::read_to_string(loam_tests::repo_root().join("examples/llama3-8b-finetune.loam"))
            .unwrap();
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 10 * 1024 * 1024 {
        text.push_str(&job.replace("llama3-8b-sft", &format!("job-{i}")));
        i += 1;
    }
    let path = temp_spec("many", text.as_bytes());
    let (exit, out, err) = run_cli(&["check", path.to_str().unwrap()], "");
    assert_eq!(exit, 0, "{err}");
    assert!(out.contains(&format!("{i} jobs")), "{out}");
}

#[test]
fn ten_thousand_deep_nesting() {
    let deep = format!("job \"x\" {}{}", "a { ".repeat(10_000), "}".repeat(10_001));
    let out = rejects("deep", deep.as_bytes(), "L0003");
    insta::assert_snapshot!(out);
    let lists = format!(
        "job \"x\" {{ a = {}{} }}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    rejects("deep-list", lists.as_bytes(), "L0003");
}

#[test]
fn thousand_digit_number() {
    let text = format!(
        "job \"x\" {{\n  tenant = \"a\"\n  model {{ layers = {} }}\n}}\n",
        "7".repeat(1000)
    );
    rejects("digits", text.as_bytes(), "L1010");
}

#[test]
fn number_with_a_unit_that_overflows() {
    let text = format!(
        "job \"x\" {{\n  data \"d\" {{\n    site = a\n    size = {}PB\n  }}\n}}\n",
        "9".repeat(306)
    );
    rejects("overflow", text.as_bytes(), "L1010");
}

#[test]
fn a_missing_path_is_an_io_error_with_exit_2() {
    let (exit, _, err) = run_cli(&["check", "no/such/file.loam"], "");
    assert_eq!(exit, 2);
    assert!(err.contains("cannot read `no/such/file.loam`"), "{err}");
}
