//! DeepSpeed's training log: the throughput timer's line, one per `steps_per_print` steps, as
//! `ThroughputTimer.stop` in `deepspeed/utils/timer.py` (microsoft/DeepSpeed) writes it through
//! `log_dist`, `[date] [INFO] [logging.py:96:log_dist] [Rank 0] epoch=0/micro_step=100/
//! global_step=100, RunningAvgSamplesPerSec=41.2, CurrSamplesPerSec=41.9, MemAllocated=18.2GB,
//! MaxMemAllocated=31.0GB`; `CurrSamplesPerSec` is the engine's `train_batch_size` (the global
//! batch in samples) over the last step's time. A checkpoint save logs `[Torch] Checkpoint
//! global_step100 is about to be saved!` (`TorchCheckpointEngine.create`,
//! `deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py`), so the next interval holds
//! it.
//!
//! The flops profiler's summary ([`super::flops_profiler`]) profiles one step. Beside
//! throughput lines, the row's figure stays their steady median and the profile adds its
//! TFLOP/s per device (the throughput timer prints none); alone, the profiled step is the row:
//! its samples per second and TFLOP/s, one interval kept, no rule applied (one step cannot be
//! checked for warm-up), which the docs state.

use super::{Exclusion, IngestError, Intervals, TrainingMeasure, flops_profiler, median};

const CURRENT: &str = "CurrSamplesPerSec=";
const STEP: &str = "global_step=";
const END: &str = "MaxMemAllocated=";
const SAVE: &str = "is about to be saved!";

/// Whether `text` has a line of DeepSpeed's throughput timer or a flops profiler summary.
pub(super) fn recognises(text: &str) -> bool {
    text.lines()
        .any(|line| line.contains(CURRENT) && line.contains(STEP))
        || flops_profiler::recognises(text)
}

/// The steady samples per second of a DeepSpeed log: the median of the kept intervals'
/// `CurrSamplesPerSec`, the first [`WARM_UP_INTERVALS`](super::WARM_UP_INTERVALS) and any after a checkpoint save left out.
pub(super) fn read(text: &str) -> Result<TrainingMeasure, IngestError> {
    let mut rates = Vec::new();
    let mut intervals = Intervals::default();
    let count = text.lines().count();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.contains(SAVE) {
            intervals.mark(Exclusion::Checkpoint);
            continue;
        }
        if !(line.contains(CURRENT) && line.contains(STEP)) {
            continue;
        }
        let located = |message: String| IngestError {
            line: number,
            message,
        };
        if number == count && !text.ends_with('\n') && !line.contains(END) {
            return Err(located(
                "the log ends in the middle of a throughput line (a partial log)".into(),
            ));
        }
        let step = field(line, STEP)
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| located(format!("`{STEP}` is not followed by a step number")))?;
        let rate = field(line, CURRENT)
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|r| r.is_finite() && *r > 0.0)
            .ok_or_else(|| located(format!("`{CURRENT}` is not followed by a positive number")))?;
        if intervals.count(step) {
            rates.push(rate);
        }
    }
    let profile = flops_profiler::last(text)?;
    let tflops_per_device = profile.as_ref().and_then(|p| p.tflops_per_device);
    if rates.is_empty()
        && intervals.logged == 0
        && let Some(profile) = profile
    {
        // The profiled step alone.
        let samples_per_s = profile.samples_per_s.ok_or_else(|| IngestError {
            line: profile.line,
            message: "the flops profiler's summary has no `samples/second:`: DeepSpeed times \
                      the whole step only with `wall_clock_breakdown: true`"
                .into(),
        })?;
        return Ok(TrainingMeasure {
            tool: "deepspeed",
            step_s: None,
            tokens_per_s_per_device: None,
            samples_per_s: Some(samples_per_s),
            tflops_per_device,
            global_batch: None,
            kept: vec![profile.step],
            excluded: Vec::new(),
        });
    }
    let logged = intervals.logged;
    let samples_per_s = median(&rates).ok_or_else(|| IngestError {
        line: 0,
        message: format!(
            "no steady interval: {logged} throughput lines, every one left out (warm-up or beside \
             a checkpoint save); log more steps"
        ),
    })?;
    Ok(TrainingMeasure {
        tool: "deepspeed",
        step_s: None,
        tokens_per_s_per_device: None,
        samples_per_s: Some(samples_per_s),
        tflops_per_device,
        global_batch: None,
        kept: intervals.kept,
        excluded: intervals.excluded,
    })
}

/// The text after `label` up to the next `,` (or the line's end), trimmed.
fn field<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let after = line.split_once(label)?.1;
    Some(after.split(',').next()?.trim())
}
