//! `loam calibrate` on the shared serving-run file, run as the real binary: the file is
//! recognised by its columns, every row is costed or says why, the medians meet the goals of
//! issue 16, a made-up extra row in the same format is read, and a CSV missing a column is
//! refused with a clear error.

use loam_tests::repo_root;
use serde_json::Value;

/// Runs the `loam` built for the tests in the repository root.
fn loam(args: &[&str]) -> (u8, String, String) {
    crate::loam_process::loam_in(&repo_root(), args)
}

/// Median of `|x|` over the values present.
fn median_abs(values: impl Iterator<Item = f64>) -> (usize, f64) {
    let mut v: Vec<f64> = values.map(f64::abs).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    assert!(n > 0);
    let m = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (n, m)
}

fn errors<'a>(rows: &'a [Value], field: &'a str) -> impl Iterator<Item = f64> + 'a {
    rows.iter().filter_map(move |r| r[field].as_f64())
}

fn json_report(path: &str) -> Value {
    let (code, out, err) = loam(&["calibrate", path, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn serving_calibration_meets_the_goals_on_the_shared_file() {
    let report = json_report("tests/data/inference_runs_calibration.csv");
    let rows = report["rows"].as_array().unwrap();
    let file =
        std::fs::read_to_string(repo_root().join("tests/data/inference_runs_calibration.csv"))
            .unwrap();
    let mut reader = csv::Reader::from_reader(file.as_bytes());
    assert_eq!(rows.len(), reader.records().count());
    // The medians computed here from the rows, and the report's own agree.
    let (n, throughput) = median_abs(errors(rows, "throughput_error_pct"));
    assert!(n >= 50, "only {n} throughput rows costed");
    assert!(
        throughput <= 15.0,
        "throughput median |error| {throughput} %"
    );
    let reported = report["metrics"]["throughput"]["median_abs_error_pct"]
        .as_f64()
        .unwrap();
    assert!((reported - throughput).abs() < 1e-9);
    let (n_ttft, ttft) = median_abs(errors(rows, "ttft_error_pct"));
    assert!(
        n_ttft >= 10 && ttft <= 20.0,
        "TTFT median |error| {ttft} % over {n_ttft}"
    );
    let (n_tpot, tpot) = median_abs(errors(rows, "tpot_error_pct"));
    assert!(
        n_tpot >= 10 && tpot <= 20.0,
        "TPOT median |error| {tpot} % over {n_tpot}"
    );
    // Every row is costed or says why, never both.
    for row in rows {
        let costed = ["throughput_error_pct", "ttft_error_pct", "tpot_error_pct"]
            .iter()
            .any(|f| !row[*f].is_null());
        assert_ne!(costed, row["not_costed"].is_string(), "{row}");
    }
    let (code, text, _) = loam(&["calibrate", "tests/data/inference_runs_calibration.csv"]);
    assert_eq!(code, 0);
    assert!(text.contains("output throughput: median |error|"), "{text}");
    assert!(
        text.contains("not costed: request lengths not given"),
        "{text}"
    );
}

#[test]
fn an_extra_row_in_the_same_format_is_read_and_a_missing_column_refused() {
    let dir = std::env::temp_dir().join(format!("loam-serving-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file =
        std::fs::read_to_string(repo_root().join("tests/data/inference_runs_calibration.csv"))
            .unwrap();
    let header = file.lines().next().unwrap();
    let columns: Vec<&str> = header.split(',').collect();
    let mut cells = vec![String::new(); columns.len()];
    let mut set = |name: &str, value: &str| {
        let i = columns.iter().position(|c| *c == name).unwrap();
        cells[i] = value.to_string();
    };
    for (name, value) in [
        ("run_id", "made_up_qwen_like_h200"),
        ("group", "made_up"),
        ("engine", "vLLM 0.9"),
        ("model", "a made-up 14B model"),
        ("params_b", "14"),
        ("layers", "40"),
        ("hidden", "5120"),
        ("heads", "40"),
        ("kv_heads", "8"),
        ("ffn", "13824"),
        ("vocab", "152064"),
        ("precision", "bf16"),
        ("device", "H200 SXM 141GB"),
        ("device_count", "1"),
        ("tp", "1"),
        ("pp", "1"),
        ("replicas", "1"),
        ("scenario", "online, fixed concurrency"),
        ("input_len", "1000"),
        ("output_len", "300"),
        ("concurrency", "32"),
        ("out_tok_s_total", "1500"),
        ("ttft_ms", "250"),
        ("tpot_ms", "20"),
    ] {
        set(name, value);
    }
    let path = dir.join("extra.csv");
    let mut row = csv::Writer::from_writer(Vec::new());
    row.write_record(&cells).unwrap();
    let row = String::from_utf8(row.into_inner().unwrap()).unwrap();
    std::fs::write(&path, format!("{}\n{row}", file.trim_end())).unwrap();
    let report = json_report(path.to_str().unwrap());
    let rows = report["rows"].as_array().unwrap();
    let last = rows.last().unwrap();
    assert_eq!(last["run_id"], "made_up_qwen_like_h200");
    assert!(last["not_costed"].is_null(), "{last}");
    assert!(last["throughput_error_pct"].as_f64().is_some(), "{last}");
    assert_eq!(last["device"], "H200_SXM");

    // The same file without the `tp` column: refused, naming it, with a non-zero exit.
    let tp = columns.iter().position(|c| *c == "tp").unwrap();
    let mut reader = csv::Reader::from_reader(file.as_bytes());
    let mut writer = csv::Writer::from_writer(Vec::new());
    let without: Vec<&str> = columns
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != tp)
        .map(|(_, c)| *c)
        .collect();
    writer.write_record(&without).unwrap();
    for record in reader.records() {
        let record = record.unwrap();
        let kept: Vec<&str> = record
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != tp)
            .map(|(_, c)| c)
            .collect();
        writer.write_record(&kept).unwrap();
    }
    let path = dir.join("missing.csv");
    std::fs::write(&path, writer.into_inner().unwrap()).unwrap();
    let (code, out, err) = loam(&["calibrate", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("column `tp`"), "{err}");
    assert!(err.contains("lacks this column"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
