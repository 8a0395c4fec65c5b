//! Reading real-format logs (the fixtures in `tests/data/runs/` follow each tool's own format
//! strings; their figures are made up).

use super::*;

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/runs")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_megatron_log_keeps_the_steady_intervals_only() {
    // Seven intervals of 10 iterations: 10 and 20 are warm-up; a checkpoint is saved after 30,
    // so the interval ending at 40 (14.8 s) is left out; an evaluation runs after 50, so 60
    // (11.0 s) is too. Kept: 30, 50, 70 at 9,100.0, 9,200.0 and 9,000.0 ms: median 9.1 s, and
    // 372.2 TFLOP/s (of 372.2, 368.2, 376.3).
    let Ok(Measured::Training(m)) = ingest(&fixture("megatron-70b.log")) else {
        panic!("a training measure")
    };
    assert_eq!(m.tool, "megatron-lm");
    assert_eq!(m.kept, vec![30, 50, 70]);
    assert_eq!(
        m.excluded,
        vec![
            (10, Exclusion::WarmUp),
            (20, Exclusion::WarmUp),
            (40, Exclusion::Checkpoint),
            (60, Exclusion::Evaluation)
        ]
    );
    assert_eq!(m.step_s, Some(9.1));
    assert_eq!(m.tflops_per_device, Some(372.2));
    assert_eq!(m.global_batch, Some(2048));
}

#[test]
fn malformed_and_partial_logs_are_located_errors() {
    let log = fixture("megatron-70b.log");
    // Cut in the middle of the last interval's line.
    let cut = &log[..log.len() - 60];
    let err = ingest(cut).unwrap_err();
    assert_eq!(err.line, log.lines().count());
    assert!(err.message.contains("partial"), "{err}");
    // A figure that is not a number.
    let bad = log.replacen("(ms): 9100.0", "(ms): nine", 1);
    let err = ingest(&bad).unwrap_err();
    assert_eq!(err.line, 6);
    assert!(err.message.contains("elapsed time per iteration"), "{err}");
    // Only warm-up: nothing steady to report.
    let short: String = log.lines().take(5).map(|l| format!("{l}\n")).collect();
    let err = ingest(&short).unwrap_err();
    assert!(err.message.contains("no steady interval"), "{err}");
    // Nothing loam reads.
    let err = ingest("epoch 1 loss 2.3\n").unwrap_err();
    assert_eq!(err.line, 0);
}

#[test]
fn a_vllm_benchmark_result_reads_as_served() {
    let Ok(Measured::Serving(m)) = ingest(&fixture("vllm-benchmark-serving.json")) else {
        panic!("a serving measure")
    };
    assert_eq!(m.tool, "vllm-benchmark-serving");
    assert_eq!(m.output_tokens_per_s, 1513.7);
    assert_eq!(m.requests_per_s, 7.62);
    assert!((m.ttft_s[0] - 0.0782).abs() < 1e-12 && (m.ttft_s[1] - 0.2419).abs() < 1e-12);
    assert!((m.tpot_s[0] - 0.0305).abs() < 1e-12 && (m.tpot_s[1] - 0.0527).abs() < 1e-12);
    assert_eq!(m.request_rate, Some(8.0));
    let missing =
        fixture("vllm-benchmark-serving.json").replace("\"p99_tpot_ms\"", "\"p90_tpot_ms\"");
    let err = ingest(&missing).unwrap_err();
    assert!(err.message.contains("p99_tpot_ms"), "{err}");
}

#[test]
fn an_sglang_result_file_reads_its_last_run() {
    // bench_serving appends one object per run: the second run (4 requests/s) is the result.
    let Ok(Measured::Serving(m)) = ingest(&fixture("sglang-bench-serving.jsonl")) else {
        panic!("a serving measure")
    };
    assert_eq!(m.tool, "sglang-bench-serving");
    assert_eq!((m.output_tokens_per_s, m.request_rate), (760.0, Some(4.0)));
    assert!((m.ttft_s[0] - 0.12).abs() < 1e-12);
}

#[test]
fn a_torchtitan_log_keeps_its_steady_steps_colours_and_all() {
    // Steps 1 and 10 are warm-up; a checkpoint is saved after step 20, so step 30's interval
    // (2,901 tps) is left out; the validation line after 40 is not a training interval. Kept:
    // 20, 40, 50 at 3,890, 3,905 and 3,880 tokens/s per device: median 3,890; TFLOP/s 225.12,
    // 226.00, 224.57: median 225.12.
    let Ok(Measured::Training(m)) = ingest(&fixture("torchtitan-8b.log")) else {
        panic!("a training measure")
    };
    assert_eq!(m.tool, "torchtitan");
    assert_eq!(m.kept, vec![20, 40, 50]);
    assert_eq!(
        m.excluded,
        vec![
            (1, Exclusion::WarmUp),
            (10, Exclusion::WarmUp),
            (30, Exclusion::Checkpoint)
        ]
    );
    assert_eq!(m.tokens_per_s_per_device, Some(3890.0));
    assert_eq!(m.step_s, None);
    assert_eq!(m.tflops_per_device, Some(225.12));
    // A cut last line is a partial log.
    let log = fixture("torchtitan-8b.log");
    let err = ingest(&log[..log.len() - 40]).unwrap_err();
    assert_eq!(err.line, log.lines().count());
}

#[test]
fn a_deepspeed_log_keeps_the_steady_throughput_lines() {
    // Six lines at steps 100 … 600: 100 and 200 are warm-up; a checkpoint is saved after 400,
    // so 500 (35.02 samples/s) is left out. Kept: 300, 400, 600 at 40.112, 40.306, 40.208
    // samples/s: median 40.208.
    let Ok(Measured::Training(m)) = ingest(&fixture("deepspeed-13b.log")) else {
        panic!("a training measure")
    };
    assert_eq!(m.tool, "deepspeed");
    assert_eq!(m.kept, vec![300, 400, 600]);
    assert_eq!(
        m.excluded,
        vec![
            (100, Exclusion::WarmUp),
            (200, Exclusion::WarmUp),
            (500, Exclusion::Checkpoint)
        ]
    );
    assert_eq!(m.samples_per_s, Some(40.208));
    assert_eq!(m.step_s, None);
    // A cut last line is a partial log, located.
    let log = fixture("deepspeed-13b.log");
    let cut = &log[..log.len() - 30];
    let Err(e) = ingest(cut) else {
        panic!("a cut log is an error")
    };
    assert_eq!(e.line, 12);
    assert!(e.message.contains("partial"), "{e}");
}

#[test]
fn a_hugging_face_trainer_log_gives_the_whole_runs_rates() {
    // The closing line: 70.709 samples/s and 0.552 steps/s: 1/0.552 = 1.8116 s a step and
    // 70.709/0.552 = 128.1, so 128 sequences a step; the evaluation dict does not count.
    let Ok(Measured::Training(m)) = ingest(&fixture("hf-trainer-7b.log")) else {
        panic!("a training measure")
    };
    assert_eq!(m.tool, "hf-trainer");
    assert_eq!(m.samples_per_s, Some(70.709));
    assert!((m.step_s.unwrap() - 1.0 / 0.552).abs() < 1e-12);
    assert_eq!(m.global_batch, Some(128));
    assert!(m.kept.is_empty() && m.excluded.is_empty());
    let log = fixture("hf-trainer-7b.log");
    let Err(e) = ingest(&log[..log.len() - 6]) else {
        panic!("a cut metrics line is an error")
    };
    assert_eq!(e.line, 8);
}

#[test]
fn a_lightning_metrics_csv_keeps_the_steady_windows_of_the_throughput_monitor() {
    // Eight devices, a rate every 50 steps once the 100-batch window is full. Rows with a
    // training rate at steps 99 and 149 are warm-up; 199, 249, 299, 349 and 399 are kept with
    // job rates 36.16, 36.0, 32.8 (a window holding a checkpoint save, which Lightning does not
    // log), 36.4 and 36.08: median 36.08 samples/s. Loss rows, the step-49 row whose window is
    // not full and the validation row have no training rate and are not intervals.
    let Ok(Measured::Training(m)) = ingest(&fixture("lightning-metrics.csv")) else {
        panic!("a training measure")
    };
    assert_eq!(m.tool, "lightning");
    assert_eq!(m.samples_per_s, Some(36.08));
    assert_eq!(m.kept, vec![199, 249, 299, 349, 399]);
    assert_eq!(
        m.excluded,
        vec![(99, Exclusion::WarmUp), (149, Exclusion::WarmUp)]
    );
    // A world of one device has no job-wide column: the per-device rate is the job's.
    let csv = fixture("lightning-metrics.csv");
    let single: String = csv
        .lines()
        .map(|l| {
            let mut cells: Vec<&str> = l.split(',').collect();
            cells.remove(7);
            cells.remove(3);
            cells.join(",") + "\n"
        })
        .collect();
    let Ok(Measured::Training(m)) = ingest(&single) else {
        panic!("a training measure")
    };
    assert_eq!(m.samples_per_s, Some(4.51));
    // A file cut in the middle of its last row is located there.
    let cut = csv.trim_end().rsplit_once(',').unwrap().0;
    let Err(e) = ingest(cut) else {
        panic!("a cut row is an error")
    };
    assert_eq!(e.line, 12, "{e}");
    assert!(e.message.contains("partial"), "{e}");
}
