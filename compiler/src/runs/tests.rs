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

/// vLLM's `--metadata version=0.6.3` writes a top-level `version`: the engine's version. A
/// value that does not read as a version (control bytes, a sentence) is not kept.
#[test]
fn a_benchmark_s_stated_version_is_the_engine_s_and_nothing_else_is() {
    let stated = |extra: &str| {
        let text = fixture("vllm-benchmark-serving.json").replacen('{', &format!("{{{extra}"), 1);
        match ingest(&text) {
            Ok(Measured::Serving(m)) => m.engine_version,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(stated(""), None);
    assert_eq!(stated(r#""version": "0.6.3","#).as_deref(), Some("0.6.3"));
    assert_eq!(
        stated(r#""engine_version": "v0.4.3-cu124","#).as_deref(),
        Some("v0.4.3-cu124")
    );
    assert_eq!(stated(r#""version": "0.6.3\u001b]0;x","#), None);
    assert_eq!(stated(r#""version": "the latest","#), None);
    assert_eq!(stated(r#""version": 6,"#), None);
    let long = format!(r#""version": "1{}","#, "0".repeat(40));
    assert_eq!(stated(&long), None);
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

/// The bytes of a fixture (a binary one: the TensorBoard event file).
fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/runs")
        .join(name);
    std::fs::read(path).unwrap()
}

/// A protobuf varint.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited protobuf field.
fn bytes_field(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
    varint(number << 3 | 2, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// One TFRecord as `RecordWriter.write` frames it (tensorboard/summary/writer/record_writer.py):
/// `<Q` length, its masked CRC32C, the data, the data's masked CRC32C.
fn frame(data: &[u8]) -> Vec<u8> {
    let length = (data.len() as u64).to_le_bytes();
    let mut out = length.to_vec();
    out.extend(tfevents::masked_crc32c(&length).to_le_bytes());
    out.extend_from_slice(data);
    out.extend(tfevents::masked_crc32c(data).to_le_bytes());
    out
}

/// An `Event` (event.proto: step = 2, summary = 5) whose one `Summary.Value` (summary.proto:
/// tag = 1, tensor = 8) holds a new-style scalar as torch's `scalar(..., new_style=True)` writes
/// it (torch/utils/tensorboard/summary.py): a `TensorProto` (tensor.proto) with dtype = 1
/// (`DT_FLOAT`) and float_val = 5, packed; or with `double_precision`, dtype 2 and double_val
/// = 6.
fn new_style_event(step: u64, tag: &str, value: f64, double: bool) -> Vec<u8> {
    let mut tensor = Vec::new();
    varint(1 << 3, &mut tensor);
    varint(if double { 2 } else { 1 }, &mut tensor);
    if double {
        bytes_field(6, &value.to_le_bytes(), &mut tensor);
    } else {
        bytes_field(5, &(value as f32).to_le_bytes(), &mut tensor);
    }
    let mut summary_value = Vec::new();
    bytes_field(1, tag.as_bytes(), &mut summary_value);
    bytes_field(8, &tensor, &mut summary_value);
    let mut summary = Vec::new();
    bytes_field(1, &summary_value, &mut summary);
    let mut event = Vec::new();
    varint(2 << 3, &mut event);
    varint(step, &mut event);
    bytes_field(5, &summary, &mut event);
    frame(&event)
}

#[test]
fn crc32c_gives_the_check_value_of_rfc_3720() {
    // The CRC-32C check value of the nine ASCII digits "123456789" is 0xE3069283 (RFC 3720,
    // appendix B.4; the catalogue of parametrised CRCs).
    assert_eq!(tfevents::crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn a_lightning_tensorboard_event_file_is_read_as_its_metrics_csv() {
    // Written by tensorboardX's SummaryWriter (tests/data/runs/lightning-tensorboard.py) with the
    // rates of lightning-metrics.csv: rates at 99 … 399 every 50 steps; 99 and 149 are warm-up,
    // the job rates kept are 36.16, 36.0, 32.8, 36.4 and 36.08: median 36.08, stored as a 32-bit
    // float (`simple_value`), so to f32 precision.
    let Ok(Measured::Training(m)) = ingest_bytes(&fixture_bytes("lightning-tensorboard.tfevents"))
    else {
        panic!("a training measure")
    };
    assert_eq!(m.tool, "lightning");
    assert_eq!(m.kept, vec![199, 249, 299, 349, 399]);
    assert_eq!(
        m.excluded,
        vec![(99, Exclusion::WarmUp), (149, Exclusion::WarmUp)]
    );
    assert_eq!(m.samples_per_s, Some(f64::from(36.08f32)));
}

#[test]
fn new_style_scalars_in_a_world_of_one_device() {
    // Four logging calls of the per-device rate only (one device), new-style tensors: 3.0 and
    // 5.0 at steps 10 and 20 are warm-up, 4.0 (float_val) and 4.5 (double_val) are kept, with
    // a loss at step 30 between them: median (4.0 + 4.5) / 2 = 4.25.
    let tag = "train/device/samples_per_sec";
    let mut file = Vec::new();
    file.extend(new_style_event(10, tag, 3.0, false));
    file.extend(new_style_event(20, tag, 5.0, false));
    file.extend(new_style_event(30, tag, 4.0, false));
    file.extend(new_style_event(30, "train_loss", 2.5, false));
    file.extend(new_style_event(40, tag, 4.5, true));
    let Ok(Measured::Training(m)) = ingest_bytes(&file) else {
        panic!("a training measure")
    };
    assert_eq!(m.samples_per_s, Some(4.25));
    assert_eq!(m.kept, vec![30, 40]);
    // A rate that is not positive is an error at its record, the fifth. A rate record is 62
    // bytes: tensor 8 (dtype 2, float_val 2 + 4), value 40 (tag 2 + 28, tensor 2 + 8), summary
    // 42, event 46 (step 2, summary 2 + 42), framing 16. The loss record is 44 (a 10-byte tag:
    // value 22, summary 24, event 28). So the fifth starts at 3 × 62 + 44 = 230.
    assert_eq!(
        file.len(),
        230 + 66,
        "the double record is 66 bytes: double_val holds 4 more"
    );
    let mut bad = file[..230].to_vec();
    bad.extend(new_style_event(40, tag, -1.0, false));
    let Err(e) = ingest_bytes(&bad) else {
        panic!("a negative rate is an error")
    };
    assert!(e.message.starts_with("byte 230: "), "{e}");
}

#[test]
fn a_damaged_event_file_is_located_by_byte_never_echoed() {
    let file = fixture_bytes("lightning-tensorboard.tfevents");
    // The records' offsets, from each header's length (12 bytes of header, 4 of footer).
    let mut offsets = vec![0usize];
    while let Some(&at) = offsets.last() {
        let length = u64::from_le_bytes(file[at..at + 8].try_into().unwrap()) as usize;
        let next = at + 12 + length + 4;
        if next >= file.len() {
            break;
        }
        offsets.push(next);
    }
    let third = offsets[2];
    // A flipped byte in the third record's data.
    let mut flipped = file.clone();
    flipped[third + 14] ^= 0x20;
    let e = ingest_bytes(&flipped).unwrap_err();
    assert_eq!(
        e.message,
        format!("byte {third}: the record's data fails its CRC32C")
    );
    // A flipped byte in its length.
    let mut flipped = file.clone();
    flipped[third] ^= 0x01;
    let e = ingest_bytes(&flipped).unwrap_err();
    assert_eq!(
        e.message,
        format!("byte {third}: the record's length fails its CRC32C")
    );
    // Cut inside the last record: a partial file, at that record.
    let last = *offsets.last().unwrap();
    let e = ingest_bytes(&file[..file.len() - 3]).unwrap_err();
    assert!(e.message.starts_with(&format!("byte {last}: ")), "{e}");
    assert!(e.message.contains("partial"), "{e}");
    // A header that claims 2⁴⁰ bytes, its CRC right: over the cap, not an allocation.
    let huge = (1u64 << 40).to_le_bytes();
    let mut claim = huge.to_vec();
    claim.extend(tfevents::masked_crc32c(&huge).to_le_bytes());
    let e = ingest_bytes(&claim).unwrap_err();
    assert!(
        e.message
            .starts_with("byte 0: a record of 1099511627776 bytes"),
        "{e}"
    );
    // An event file with no training rate names what loam reads from one.
    let e = ingest_bytes(&file[..offsets[2]]).unwrap_err();
    assert!(
        e.message.contains("no `train/device/samples_per_sec`"),
        "{e}"
    );
    // None of these messages shows a tag or any other byte of the file.
    for bad in [&flipped[..], &file[..file.len() - 3], &file[..offsets[2]]] {
        let message = ingest_bytes(bad).unwrap_err().message;
        assert!(
            !message.contains("hp_metric") && !message.contains("brain"),
            "{message}"
        );
    }
    // A binary file that is not an event file: not text, located at its first bad byte.
    let e = ingest_bytes(b"step 1\n\xff\xfe binary").unwrap_err();
    assert!(e.message.starts_with("byte 7: not UTF-8 text"), "{e}");
}

#[test]
fn a_deepspeed_flops_profile_alone_is_the_profiled_steps_row() {
    // The profile of step 10 with wall_clock_breakdown: 21.3 T forward flops per GPU, a step of
    // 120 + 240 + 40 = 400 ms, so 3 × 21.3 / 0.4 = 159.75 TFLOP/s per GPU and 4 samples per
    // GPU × 8 GPUs / 0.4 s = 80 samples/s; one step, kept as it is (no rule applies to one).
    let Ok(Measured::Training(m)) = ingest(&fixture("deepspeed-flops-profiler.log")) else {
        panic!("a training measure")
    };
    assert_eq!(m.tool, "deepspeed");
    assert_eq!(m.samples_per_s, Some(80.0));
    assert_eq!(m.tflops_per_device, Some(159.75));
    assert_eq!(m.kept, vec![10]);
    assert!(m.excluded.is_empty());
}

#[test]
fn a_deepspeed_log_with_a_profile_keeps_its_steady_rate_and_adds_the_profiles_tflops() {
    // deepspeed-13b.log's steady median, 40.208 samples/s (see the test above), and the
    // profile's 159.75 TFLOP/s per GPU beside it.
    let log = fixture("deepspeed-13b.log") + &fixture("deepspeed-flops-profiler.log");
    let Ok(Measured::Training(m)) = ingest(&log) else {
        panic!("a training measure")
    };
    assert_eq!(m.samples_per_s, Some(40.208));
    assert_eq!(m.tflops_per_device, Some(159.75));
    assert_eq!(m.kept, vec![300, 400, 600]);
}

#[test]
fn a_deepspeed_profile_without_the_step_timed_or_with_a_bad_figure_is_located() {
    let log = fixture("deepspeed-flops-profiler.log");
    // Without wall_clock_breakdown the profile stops at the forward pass (lines 28 to 34 are
    // not printed): an error at the banner, line 8.
    let forward_only: String = log
        .lines()
        .enumerate()
        .filter(|(i, _)| !(27..34).contains(i))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let Err(e) = ingest(&forward_only) else {
        panic!("no step figure is an error")
    };
    assert_eq!(e.line, 8, "{e}");
    assert!(e.message.contains("wall_clock_breakdown"), "{e}");
    // A rate in a unit flops_to_string never prints is an error at its line, 33.
    let Err(e) = ingest(&log.replace("159.75 TFLOPS", "159.75 TFLOP/s")) else {
        panic!("a bad figure is an error")
    };
    assert_eq!(e.line, 33, "{e}");
}

/// A W&B `HistoryRecord` inside a `Record` (wandb/proto/wandb_internal.proto: Record.history =
/// 2; HistoryRecord.item = 1; HistoryItem.key = 1, value_json = 16), items as (key, JSON).
fn wandb_history(items: &[(&str, &str)]) -> Vec<u8> {
    let mut history = Vec::new();
    for (key, json) in items {
        let mut item = Vec::new();
        bytes_field(1, key.as_bytes(), &mut item);
        bytes_field(16, json.as_bytes(), &mut item);
        bytes_field(1, &item, &mut history);
    }
    let mut record = Vec::new();
    bytes_field(2, &history, &mut record);
    record
}

/// A W&B run file as `DataStore` writes it (wandb/sdk/internal/datastore.py): the header, then
/// each record in LevelDB log pieces of at most a 32 KiB block's room, `<IHB` (CRC-32 of type
/// and data, length, type FULL 1 / FIRST 2 / MIDDLE 3 / LAST 4), a block's tail under 7 bytes
/// zero-padded.
fn wandb_file(records: &[Vec<u8>]) -> Vec<u8> {
    const BLOCK: usize = 32 * 1024;
    let mut out = b":W&B\xe1\xbe\x00".to_vec();
    let piece = |out: &mut Vec<u8>, data: &[u8], kind: u8| {
        let crc = wandb::crc32(wandb::crc32(0, &[kind]), data);
        out.extend(crc.to_le_bytes());
        out.extend((data.len() as u16).to_le_bytes());
        out.push(kind);
        out.extend_from_slice(data);
    };
    for record in records {
        let mut left = BLOCK - out.len() % BLOCK;
        if left < 7 {
            out.resize(out.len() + left, 0);
            left = BLOCK;
        }
        if record.len() + 7 <= left {
            piece(&mut out, record, 1);
            continue;
        }
        let (first, mut rest) = record.split_at(left - 7);
        piece(&mut out, first, 2);
        while rest.len() > BLOCK - 7 {
            piece(&mut out, &rest[..BLOCK - 7], 3);
            rest = &rest[BLOCK - 7..];
        }
        piece(&mut out, rest, 4);
    }
    out
}

#[test]
fn crc32_gives_the_check_value_of_zlib() {
    // The CRC-32 (IEEE 802.3, zlib's crc32) check value of "123456789" is 0xCBF43926.
    assert_eq!(wandb::crc32(0, b"123456789"), 0xCBF4_3926);
}

#[test]
fn a_lightning_wandb_run_file_is_read_as_its_metrics_csv() {
    // Logged by wandb 0.31 in offline mode, its history records kept and framed again as
    // DataStore writes them (tests/data/runs/lightning-wandb.py), with the rates of
    // lightning-metrics.csv: 99 and 149 are warm-up, the job rates kept 36.16, 36.0, 32.8,
    // 36.4 and 36.08 (JSON numbers, so exact): median 36.08.
    let m = match ingest_bytes(&fixture_bytes("lightning-wandb.wandb")) {
        Ok(Measured::Training(m)) => m,
        other => panic!("a training measure, not {other:?}"),
    };
    assert_eq!(m.tool, "lightning");
    assert_eq!(m.kept, vec![199, 249, 299, 349, 399]);
    assert_eq!(
        m.excluded,
        vec![(99, Exclusion::WarmUp), (149, Exclusion::WarmUp)]
    );
    assert_eq!(m.samples_per_s, Some(36.08));
}

#[test]
fn a_wandb_record_split_across_blocks_reads_and_damage_is_located() {
    // Four calls of one device: 2.0 and 3.0 are warm-up; the third carries 70,000 bytes of
    // padding, so it spans three blocks (FIRST, MIDDLE, LAST), and 5.0 and 4.0 are kept:
    // median 4.5.
    let pad = format!("\"{}\"", "x".repeat(70_000));
    let call = |step: &str, rate: &str, pad: &str| {
        wandb_history(&[
            ("trainer/global_step", step),
            ("train/device/samples_per_sec", rate),
            ("note", pad),
        ])
    };
    let records = vec![
        call("10", "2.0", "0"),
        call("20", "3.0", "0"),
        call("30", "5.0", &pad),
        call("40", "4.0", "0"),
    ];
    let file = wandb_file(&records);
    assert!(file.len() > 2 * 32 * 1024);
    let Ok(Measured::Training(m)) = ingest_bytes(&file) else {
        panic!("a training measure")
    };
    assert_eq!(m.samples_per_s, Some(4.5));
    assert_eq!(m.kept, vec![30, 40]);
    // The first record starts after the 7-byte file header, the second after the first's
    // 7-byte piece header and data.
    let second = 7 + 7 + records[0].len();
    let mut flipped = file.clone();
    flipped[second + 9] ^= 0x01;
    let e = ingest_bytes(&flipped).unwrap_err();
    assert_eq!(
        e.message,
        format!("byte {second}: the record fails its CRC-32")
    );
    // Cut inside the split record: a partial file, at the piece cut. The record's FIRST piece
    // fills the rest of the first block, so its MIDDLE piece starts the second, at byte 32,768,
    // and a cut at 40,000 falls inside it.
    let e = ingest_bytes(&file[..40_000]).unwrap_err();
    assert!(e.message.starts_with("byte 32768: "), "{e}");
    assert!(e.message.contains("partial"), "{e}");
    // A rate that is not a positive number, at its record; no message shows the file's bytes.
    let bad = wandb_file(&[call("10", "NaN", "0")]);
    let e = ingest_bytes(&bad).unwrap_err();
    assert_eq!(
        e.message,
        "byte 7: a training rate that is not a positive number"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Any bytes framed as a valid record (so the protobuf decoders see them), and either
    /// fixture with one byte changed or cut anywhere: a row or a located error, never a panic,
    /// and no error shows the file's own words.
    #[test]
    fn hostile_binary_logs_never_panic_nor_echo(
        data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        at in 0usize..4000,
        xor in 1u8..=255,
    ) {
        let mut inputs = vec![frame(&data), wandb_file(std::slice::from_ref(&data))];
        for name in ["lightning-tensorboard.tfevents", "lightning-wandb.wandb"] {
            let file = fixture_bytes(name);
            let mut changed = file.clone();
            let i = at % file.len();
            changed[i] ^= xor;
            inputs.push(changed);
            inputs.push(file[..i].to_vec());
        }
        for input in inputs {
            if let Err(e) = ingest_bytes(&input) {
                for word in ["train_loss", "hp_metric", "_timestamp", "brain.Event"] {
                    proptest::prop_assert!(!e.message.contains(word), "{}", e.message);
                }
            }
        }
    }
}
