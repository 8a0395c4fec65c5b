//! Measured runs from the logs real tools write (issue 30, first part): a training log of
//! Megatron-LM (or NeMo, which prints Megatron-Core's line) or a serving benchmark's JSON (vLLM's
//! `benchmark_serving`, SGLang's `bench_serving`), read into one measured figure with what was
//! left out and why. Pure: the caller reads the file and writes the row.

mod deepspeed;
pub mod drift;
mod flops_profiler;
mod hf_trainer;
mod lightning;
mod megatron;
mod protobuf;
mod serving_bench;
pub mod store;
#[cfg(test)]
mod tests;
mod tfevents;
mod torchtitan;
mod wandb;

use serde::Serialize;

/// What one log measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Measured {
    /// A training run: its steady step time, from the intervals kept.
    Training(TrainingMeasure),
    /// A serving benchmark: throughput and latency percentiles as the tool reported them.
    Serving(ServingMeasure),
}

/// A training log's steady figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainingMeasure {
    /// The tool that wrote the log.
    pub tool: &'static str,
    /// Median seconds per iteration over the kept intervals, where the tool prints them
    /// (Megatron-LM).
    pub step_s: Option<f64>,
    /// Median tokens per second per device over the kept intervals, where the tool prints them
    /// (torchtitan's `tps`).
    pub tokens_per_s_per_device: Option<f64>,
    /// Median samples (sequences) per second of the whole job, where the tool prints that
    /// (DeepSpeed's `CurrSamplesPerSec`, the HF Trainer's `train_samples_per_second`,
    /// Lightning's `train/samples_per_sec`).
    pub samples_per_s: Option<f64>,
    /// Median of the tool's own model TFLOP/s per device over the kept intervals, when printed.
    pub tflops_per_device: Option<f64>,
    /// The global batch in sequences, when printed (the last value seen).
    pub global_batch: Option<u64>,
    /// The last iteration of each interval kept.
    pub kept: Vec<u64>,
    /// The intervals left out: the last iteration of each and the rule that left it out.
    pub excluded: Vec<(u64, Exclusion)>,
}

/// Why an interval of a training log does not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exclusion {
    /// One of the first [`WARM_UP_INTERVALS`] logged intervals: compilation, allocator growth
    /// and communicator set-up.
    WarmUp,
    /// A checkpoint was saved during the interval.
    Checkpoint,
    /// An evaluation ran during the interval.
    Evaluation,
}

/// Counted: the logged intervals at the start of a run that are warm-up, not steady state. The
/// first interval holds CUDA-graph capture, `torch.compile` and NCCL communicator creation, the
/// second the caching allocator's growth to its steady pool.
pub const WARM_UP_INTERVALS: usize = 2;

/// A training log's intervals as they are read, and the one rule for which count: the first
/// [`WARM_UP_INTERVALS`] are warm-up, and one with a checkpoint save or an evaluation logged
/// since the interval before is left out (a save wins over an evaluation).
#[derive(Debug, Default)]
struct Intervals {
    logged: usize,
    pending: Option<Exclusion>,
    kept: Vec<u64>,
    excluded: Vec<(u64, Exclusion)>,
}

impl Intervals {
    /// A checkpoint save or an evaluation was logged: the next interval holds it.
    fn mark(&mut self, why: Exclusion) {
        self.pending = match why {
            Exclusion::Evaluation => self.pending.or(Some(why)),
            _ => Some(why),
        };
    }

    /// One interval, ending at `step`: whether its figures count.
    fn count(&mut self, step: u64) -> bool {
        let reason = if self.logged < WARM_UP_INTERVALS {
            Some(Exclusion::WarmUp)
        } else {
            self.pending
        };
        self.logged += 1;
        self.pending = None;
        match reason {
            Some(reason) => {
                self.excluded.push((step, reason));
                false
            }
            None => {
                self.kept.push(step);
                true
            }
        }
    }
}

/// A serving benchmark's figures, as the tool computed them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingMeasure {
    /// The tool that wrote the result.
    pub tool: &'static str,
    /// Generated tokens per second over the whole benchmark.
    pub output_tokens_per_s: f64,
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Median and 99th-percentile time to first token, seconds.
    pub ttft_s: [f64; 2],
    /// Median and 99th-percentile time per output token, seconds.
    pub tpot_s: [f64; 2],
    /// The offered request rate (`inf` when the tool sent every request at once).
    pub request_rate: Option<f64>,
    /// Mean input and output tokens of a completed request, when the result states its totals.
    pub lengths: Option<[f64; 2]>,
    /// The most requests the benchmark kept in flight (`max_concurrency`), when it capped them.
    pub max_concurrency: Option<f64>,
    /// The engine's version, when the result states one (vLLM's `--metadata version=…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
}

/// A log loam cannot read, located at its line (1-based; 0 for the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestError {
    /// The line the problem is on.
    pub line: usize,
    /// What is wrong, in words.
    pub message: String,
}

impl std::fmt::Display for IngestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

/// Reads one log file as its bytes: a TensorBoard event file (binary, recognised by its first
/// record's framing, [`tfevents`]) or a Weights & Biases run file (by its header, [`wandb`]),
/// otherwise a text log read by [`ingest`]. A file that is none of these is an error that
/// shows none of its bytes.
pub fn ingest_bytes(bytes: &[u8]) -> Result<Measured, IngestError> {
    if tfevents::recognises(bytes) {
        return tfevents::read(bytes).map(Measured::Training);
    }
    if wandb::recognises(bytes) {
        return wandb::read(bytes).map(Measured::Training);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| IngestError {
        line: 0,
        message: format!(
            "byte {}: not UTF-8 text, and not a TensorBoard event file or a Weights & \
             Biases run file (the binary formats loam reads)",
            e.valid_up_to()
        ),
    })?;
    ingest(text)
}

/// Reads one log: a serving benchmark's JSON when the text is a JSON object, otherwise a
/// training log whose format is recognised by its lines. A log with nothing loam recognises, or
/// with no steady interval left after the exclusions, is an error, never an empty row.
pub fn ingest(text: &str) -> Result<Measured, IngestError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return serving_bench::read(text).map(Measured::Serving);
    }
    if megatron::recognises(text) {
        return megatron::read(text).map(Measured::Training);
    }
    if torchtitan::recognises(text) {
        return torchtitan::read(text).map(Measured::Training);
    }
    if deepspeed::recognises(text) {
        return deepspeed::read(text).map(Measured::Training);
    }
    if hf_trainer::recognises(text) {
        return hf_trainer::read(text).map(Measured::Training);
    }
    if lightning::recognises(text) {
        return lightning::read(text).map(Measured::Training);
    }
    Err(IngestError {
        line: 0,
        message: "no line of a format loam reads: Megatron-LM or NeMo training logs \
                  (`iteration N/ M | … elapsed time per iteration (ms): …`), torchtitan's \
                  (`step: N  loss: …  tps: …`), DeepSpeed's throughput timer \
                  (`global_step=N, … CurrSamplesPerSec=…`) or flops profiler summary \
                  (`DeepSpeed Flops Profiler`, `samples/second: …`), the Hugging Face Trainer's \
                  closing metrics (`'train_samples_per_second': …`), PyTorch Lightning's \
                  `metrics.csv` with its ThroughputMonitor (`train/device/samples_per_sec`; its \
                  TensorBoard event files and Weights & Biases run files are read too), or the \
                  JSON result of vLLM's benchmark_serving or SGLang's bench_serving"
            .into(),
    })
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    let upper = *sorted.get(mid)?;
    Some(if sorted.len().is_multiple_of(2) {
        (sorted.get(mid - 1)? + upper) / 2.0
    } else {
        upper
    })
}
