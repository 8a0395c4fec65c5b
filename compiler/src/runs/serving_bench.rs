//! The JSON result of a serving benchmark: vLLM's `benchmark_serving` (`vllm bench serve
//! --save-result`, `benchmarks/benchmark_serving.py`) and SGLang's `bench_serving`
//! (`python -m sglang.bench_serving --output-file`), which write the same keys for what loam
//! reads: `request_throughput`, `output_throughput`, `median_ttft_ms`, `p99_ttft_ms`,
//! `median_tpot_ms`, `p99_tpot_ms` and `request_rate`. SGLang writes one JSON object per line
//! (a JSONL file appended run after run); loam reads the last.
//!
//! Neither tool writes the engine's version. vLLM's `--metadata KEY=VALUE` adds each pair as a
//! top-level key of the result (`benchmarks/benchmark_serving.py`: "Key-value pairs (e.g,
//! --metadata version=0.3.3 tp=1) … saved in the result JSON file"), so a top-level `version`
//! or `engine_version` that reads as a version ([`is_version`]) is the engine's version.

use super::store::serving::is_version;
use super::{IngestError, ServingMeasure};
use serde_json::Value;

/// The figures of the benchmark in `text`.
pub(super) fn read(text: &str) -> Result<ServingMeasure, IngestError> {
    // One document, or (SGLang's JSONL) the last non-empty line.
    let (line, value) = match serde_json::from_str::<Value>(text) {
        Ok(value) => (0, value),
        Err(whole) => {
            let last = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .last();
            match last.map(|(i, l)| (i + 1, serde_json::from_str::<Value>(l))) {
                Some((n, Ok(value))) if n > 1 => (n, value),
                _ => {
                    return Err(IngestError {
                        line: whole.line(),
                        message: format!("not a benchmark result: {whole}"),
                    });
                }
            }
        }
    };
    let number = |key: &str| -> Result<f64, IngestError> {
        value
            .get(key)
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| IngestError {
                line,
                message: format!(
                    "the benchmark result has no `{key}` (a non-negative number): is it the \
                     output of vLLM's benchmark_serving or SGLang's bench_serving?"
                ),
            })
    };
    let ms = |key: &str| number(key).map(|v| v / 1000.0);
    let tool = if value.get("backend").and_then(Value::as_str) == Some("sglang")
        || value.get("dataset_name").is_some() && value.get("sharegpt_output_len").is_some()
    {
        "sglang-bench-serving"
    } else {
        "vllm-benchmark-serving"
    };
    let request_rate = match value.get("request_rate") {
        Some(Value::String(s)) if s == "inf" => Some(f64::INFINITY),
        Some(v) => v.as_f64(),
        None => None,
    };
    // Both tools write `completed` and the token totals over the completed requests.
    let total = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite())
    };
    let lengths = match (
        total("total_input_tokens"),
        total("total_output_tokens"),
        total("completed").filter(|c| *c >= 1.0),
    ) {
        (Some(input), Some(output), Some(completed)) if input > 0.0 && output > 0.0 => {
            Some([input / completed, output / completed])
        }
        _ => None,
    };
    Ok(ServingMeasure {
        lengths,
        max_concurrency: value
            .get("max_concurrency")
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite() && *c >= 1.0),
        tool,
        output_tokens_per_s: number("output_throughput")?,
        requests_per_s: number("request_throughput")?,
        ttft_s: [ms("median_ttft_ms")?, ms("p99_ttft_ms")?],
        tpot_s: [ms("median_tpot_ms")?, ms("p99_tpot_ms")?],
        request_rate,
        engine_version: ["engine_version", "version"]
            .into_iter()
            .filter_map(|key| value.get(key).and_then(Value::as_str))
            .find(|v| is_version(v))
            .map(str::to_string),
    })
}
