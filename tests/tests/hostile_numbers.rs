//! Every number loam reads is finite and physical, and every count it derives fits the manifest
//! field that carries it. Each test is one finding of the reliability review of 2026-12-03 (its
//! reproducer script in `reliability-repro/NN-*.sh`), run on a real copy of the catalogue, real
//! CSV files and the real `loam` process.

use crate::loam_process::loam_in as loam;
use std::fs;
use std::path::Path;

/// The tiny job of the reproducers: two blocks on the `lab` pool, planned in well under a second.
fn tiny_job(extra: &str) -> String {
    format!(
        r#"job "tiny-a" {{
  tenant = "research"
  model {{
    layers  = 2
    hidden  = 256
    ffn     = 1024
    heads   = 4
    vocab   = 32000
    seq_len = 512
  }}
  train {{
    tokens       = 1B
    global_batch = 32
    precision    = bf16
  }}
  resources {{
    pool = lab
  }}
{extra}}}
"#
    )
}

/// Copies the shipped catalogue into `dir/cat`, with `from` replaced by `to` in `pools/lab.yaml`.
fn mutated_catalogue(dir: &Path, from: &str, to: &str) {
    let specs = loam_tests::repo_root().join("specs");
    for kind in ["devices", "pools"] {
        fs::create_dir_all(dir.join("cat").join(kind)).unwrap();
        for entry in fs::read_dir(specs.join(kind)).unwrap() {
            let path = entry.unwrap().path();
            let mut text = fs::read_to_string(&path).unwrap();
            if path.ends_with("pools/lab.yaml") {
                assert!(text.contains(from), "lab.yaml has no `{from}`");
                text = text.replacen(from, to, 1);
            }
            fs::write(
                dir.join("cat").join(kind).join(path.file_name().unwrap()),
                text,
            )
            .unwrap();
        }
    }
}

/// 07 (M6): `.nan` carbon intensity and a `.nan` hourly price are refused where they are written
/// (L2008, naming the field and the accepted range), not planned into "NaN t CO2" or an L3001
/// that blames memory.
#[test]
fn nan_in_the_catalogue_is_refused_at_its_place() {
    for (from, to, field) in [
        (
            "carbon_intensity: 500",
            "carbon_intensity: .nan",
            "carbon_intensity",
        ),
        ("per_kwh: [0.35,", "per_kwh: [.nan,", "per_kwh"),
        (
            "carbon_intensity: 500",
            "carbon_intensity: .inf",
            "carbon_intensity",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        mutated_catalogue(dir.path(), from, to);
        fs::write(dir.path().join("job.loam"), tiny_job("")).unwrap();
        let (code, out, err) = loam(
            dir.path(),
            &["--catalogue", "cat", "plan", "--format", "json", "job.loam"],
        );
        assert_eq!(code, 1, "{to}: {out}{err}");
        assert!(err.contains("L2008"), "{to}: {err}");
        assert!(err.contains(&format!("in `{field}`")), "{to}: {err}");
        assert!(err.contains("lab.yaml"), "{to}: {err}");
        assert!(!err.contains("L3001"), "{to}: {err}");
        assert!(!out.contains("null") && !out.contains("NaN"), "{to}: {out}");
    }
}

/// 08 (M5): a checkpoint interval of 10,000 weeks is refused by `loam check` at the value (L1011,
/// with the accepted range), so no plan with a saturated restart budget exists to emit.
#[test]
fn an_absurd_checkpoint_interval_is_refused_at_check_time() {
    let dir = tempfile::tempdir().unwrap();
    let job = tiny_job("  checkpoint {\n    interval = 10000w\n  }\n");
    fs::write(dir.path().join("j.loam"), job).unwrap();
    let (code, out, err) = loam(dir.path(), &["check", "j.loam"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("L1011"), "{err}");
    assert!(err.contains("between 1min and 52w"), "{err}");
    let (code, _, err) = loam(
        dir.path(),
        &["emit", "j.loam", "--backend", "kubernetes", "--out", "k"],
    );
    assert_ne!(code, 0, "{err}");
    assert!(
        !dir.path().join("k").exists(),
        "emit wrote manifests for a refused job"
    );
}

/// 08 (M5): a plan that failures would dominate is refused by the planner (L3009, located at the
/// job), and `emit` writes nothing for it: no `maxRestarts` beyond int32, no launcher whose bash
/// arithmetic wraps. A pinned 52-week interval on the tiny job plans with a small budget.
#[test]
fn a_plan_lost_to_failures_is_refused_and_never_emitted() {
    let dir = tempfile::tempdir().unwrap();
    let page =
        fs::read_to_string(loam_tests::repo_root().join("docs/diagnostics/L3009.md")).unwrap();
    let example = page
        .split("```loam\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    fs::write(dir.path().join("big.loam"), example).unwrap();
    let (code, out, err) = loam(dir.path(), &["plan", "big.loam"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("L3009"), "{err}");
    assert!(
        err.contains("big.loam:1:5"),
        "not located at the job: {err}"
    );
    for backend in ["kubernetes", "baremetal"] {
        let (code, _, err) = loam(
            dir.path(),
            &["emit", "big.loam", "--backend", backend, "--out", "o"],
        );
        assert_ne!(code, 0, "{backend}: {err}");
        assert!(!dir.path().join("o").exists(), "{backend} wrote manifests");
    }

    let job = tiny_job("  checkpoint {\n    interval = 52w\n  }\n");
    fs::write(dir.path().join("tiny.loam"), job).unwrap();
    let (code, out, err) = loam(
        dir.path(),
        &["emit", "tiny.loam", "--backend", "kubernetes", "--out", "k"],
    );
    assert_eq!(code, 0, "{out}{err}");
    for entry in walk(&dir.path().join("k")) {
        let text = fs::read_to_string(&entry).unwrap();
        for line in text.lines().filter(|l| l.contains("maxRestarts:")) {
            let budget: i64 = line.split(':').nth(1).unwrap().trim().parse().unwrap();
            assert!((3..100).contains(&budget), "{line}");
        }
    }
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The header and first two runs of a shipped calibration CSV, with `column` of the first run
/// set to `value` (`None` drops the column from every line instead).
fn calibration_csv(file: &str, column: &str, value: Option<&str>) -> String {
    let text = fs::read_to_string(loam_tests::repo_root().join("tests/data").join(file)).unwrap();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let rows: Vec<Vec<String>> = reader
        .records()
        .take(3)
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    let at = rows[0].iter().position(|h| h == column).unwrap();
    let mut writer = csv::Writer::from_writer(Vec::new());
    for (i, mut row) in rows.into_iter().enumerate() {
        match value {
            None => {
                row.remove(at);
            }
            Some(v) if i == 1 => row[at] = v.to_string(),
            Some(_) => {}
        }
        writer.write_record(&row).unwrap();
    }
    String::from_utf8(writer.into_inner().unwrap()).unwrap()
}

/// 14 (L6): NaN, infinite and absurd measurements are refused, naming the line and the
/// measurement's column (not `devices`); rows describing no model or no network are listed as
/// not costed with the reason instead of scored as −100 % misses.
#[test]
fn calibrate_refuses_non_finite_measurements_and_skips_rows_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let training = "training_runs_calibration.csv";
    let measured = "measured_tokens_per_s_per_device";
    for value in ["NaN", "inf", "1e308", "0", "-5"] {
        fs::write(
            dir.path().join("m.csv"),
            calibration_csv(training, measured, Some(value)),
        )
        .unwrap();
        let (code, out, err) = loam(dir.path(), &["calibrate", "m.csv"]);
        assert_eq!(code, 1, "{value}: {out}{err}");
        assert!(
            err.contains(&format!("line 2: column `{measured}`")),
            "{value}: {err}"
        );
    }
    for (column, value) in [
        ("seq_len", "0"),
        ("hidden", "0"),
        ("node_nic_gbps", "0"),
        ("node_nic_gbps", "-1"),
    ] {
        fs::write(
            dir.path().join("z.csv"),
            calibration_csv(training, column, Some(value)),
        )
        .unwrap();
        let (code, out, err) = loam(dir.path(), &["calibrate", "z.csv"]);
        assert_eq!(code, 0, "{column}={value}: {out}{err}");
        let first = out.lines().nth(1).unwrap();
        assert!(
            first.contains("not costed") && first.contains(column),
            "{column}={value}: {first}"
        );
        assert!(
            out.contains("1 of 2 runs not costed"),
            "{column}={value}: {out}"
        );
        assert!(!out.contains("NaN") && !out.contains("-100"), "{out}");
    }
}

/// 14 (L5): CSV errors name the line and the column in words: a missing column by name (not
/// "column `?`"), a short row without Rust Debug text, and a serving CSV without `ttft_ms` by
/// that column (it was read as a training CSV and blamed on `mlp`).
#[test]
fn calibrate_csv_errors_name_the_line_and_column_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let training = "training_runs_calibration.csv";
    fs::write(
        dir.path().join("nodevice.csv"),
        calibration_csv(training, "device", None),
    )
    .unwrap();
    let (code, _, err) = loam(dir.path(), &["calibrate", "nodevice.csv"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("line 1: column `device`: the header has no such column"),
        "{err}"
    );

    let full = calibration_csv(training, "device", Some("H100_SXM"));
    let mut lines: Vec<String> = full.lines().map(str::to_string).collect();
    let short = lines[2].rsplit_once(',').unwrap().0.to_string();
    lines[2] = short;
    fs::write(dir.path().join("short.csv"), lines.join("\n") + "\n").unwrap();
    let (code, _, err) = loam(dir.path(), &["calibrate", "short.csv"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("line 3: ") && err.contains("fields where the header has"),
        "{err}"
    );
    assert!(
        !err.contains("UnequalLengths") && !err.contains('?'),
        "{err}"
    );

    let serving = calibration_csv("inference_runs_calibration.csv", "ttft_ms", None);
    fs::write(dir.path().join("serving.csv"), serving).unwrap();
    let (code, _, err) = loam(dir.path(), &["calibrate", "serving.csv"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("column `ttft_ms`"), "{err}");
    assert!(!err.contains("`mlp`"), "{err}");
}
