//! Megatron-LM's training log (NeMo 2 and Megatron-Bridge print the same line): one line per
//! logged interval, as `training_log` in `megatron/training/training.py` writes it,
//! ` [date] iteration      100/  500000 | consumed samples: … | elapsed time per iteration (ms):
//! 1234.5 | throughput per GPU (TFLOP/s/GPU): 401.2 | … | global batch size:  2048 | …`, and the
//! lines that mark a checkpoint save (`saving checkpoint at iteration N`, `checkpointing.py`)
//! and an evaluation (` validation loss at iteration N | …`, `evaluate_and_print_results`).

use super::{Exclusion, IngestError, Intervals, TrainingMeasure, WARM_UP_INTERVALS, median};

const ELAPSED: &str = "elapsed time per iteration (ms):";
const THROUGHPUT: &str = "throughput per GPU (TFLOP/s/GPU):";
const BATCH: &str = "global batch size:";
const SAVE: &str = "saving checkpoint at iteration";
const EVALUATION: &str = "validation loss at iteration";

/// Whether `text` has a line of Megatron's interval log.
pub(super) fn recognises(text: &str) -> bool {
    text.lines().any(|line| line.contains(ELAPSED))
}

/// The steady step time of a Megatron log. An interval is left out when it is one of the first
/// [`WARM_UP_INTERVALS`], or when a checkpoint save or an evaluation came between it and the
/// interval before: Megatron-LM since 2024 stops its interval timer for both
/// (`save_checkpoint_and_time`), older releases and NeMo 1 do not, so loam leaves such an
/// interval out whichever wrote it.
pub(super) fn read(text: &str) -> Result<TrainingMeasure, IngestError> {
    let mut seconds = Vec::new();
    let mut tflops = Vec::new();
    let mut intervals = Intervals::default();
    let mut global_batch = None;
    let ends_in_newline = text.ends_with('\n');
    let count = text.lines().count();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.contains(SAVE) {
            intervals.mark(Exclusion::Checkpoint);
            continue;
        }
        if line.contains(EVALUATION) {
            intervals.mark(Exclusion::Evaluation);
            continue;
        }
        if !line.contains(ELAPSED) {
            continue;
        }
        let located = |message: String| IngestError {
            line: number,
            message,
        };
        if number == count && !ends_in_newline && !line.trim_end().ends_with('|') {
            return Err(located(
                "the log ends in the middle of an interval's line (a partial log): its figures \
                 may be cut"
                    .into(),
            ));
        }
        let iteration = iteration_of(line).ok_or_else(|| {
            located("an interval line without `iteration N/ M |` before its figures".into())
        })?;
        let elapsed_ms = field(line, ELAPSED)
            .ok_or_else(|| located(format!("`{ELAPSED}` is not followed by a number")))?;
        if !(elapsed_ms.is_finite() && elapsed_ms > 0.0) {
            return Err(located(format!(
                "an iteration took {elapsed_ms} ms: expected a positive time"
            )));
        }
        if line.contains(BATCH) {
            let batch = field(line, BATCH)
                .ok_or_else(|| located(format!("`{BATCH}` is not followed by a number")))?;
            global_batch = Some(batch as u64);
        }
        if !intervals.count(iteration) {
            continue;
        }
        seconds.push(elapsed_ms / 1000.0);
        if line.contains(THROUGHPUT) {
            let value = field(line, THROUGHPUT)
                .ok_or_else(|| located(format!("`{THROUGHPUT}` is not followed by a number")))?;
            tflops.push(value);
        }
    }
    let logged = intervals.logged;
    let step_s = median(&seconds).ok_or_else(|| IngestError {
        line: 0,
        message: format!(
            "no steady interval: {logged} logged, every one left out ({} warm-up, the rest \
             beside a checkpoint or an evaluation); log more iterations",
            logged.min(WARM_UP_INTERVALS)
        ),
    })?;
    Ok(TrainingMeasure {
        tool: "megatron-lm",
        step_s: Some(step_s),
        tokens_per_s_per_device: None,
        samples_per_s: None,
        tflops_per_device: median(&tflops),
        global_batch,
        kept: intervals.kept,
        excluded: intervals.excluded,
    })
}

/// `N` of `iteration N/ M |`.
fn iteration_of(line: &str) -> Option<u64> {
    let after = line.split_once(" iteration ")?.1.trim_start();
    let (number, rest) = after.split_once('/')?;
    rest.contains('|').then_some(())?;
    number.trim().parse().ok()
}

/// The number after `label` up to the next `|`.
fn field(line: &str, label: &str) -> Option<f64> {
    let after = line.split_once(label)?.1;
    let value = after.split('|').next()?.trim();
    value.parse::<f64>().ok().filter(|v| v.is_finite())
}
