//! Hugging Face Trainer's log: the metrics dict the Trainer logs when training ends, printed by
//! `ProgressCallback.on_log` (`transformers/trainer_callback.py`) as a Python dict,
//! `{'train_runtime': 247.4258, 'train_samples_per_second': 4.042, 'train_steps_per_second':
//! 2.021, 'train_loss': 1.13, 'epoch': 1.0}`, its rates computed by `speed_metrics`
//! (`transformers/trainer_utils.py`) over the whole `train()` call. The figure is an average over
//! the whole run: warm-up, evaluations and checkpoint saves inside it cannot be left out (the
//! row says so: no interval is kept or excluded); the last such line of the log counts.

use super::{IngestError, TrainingMeasure};

const RUNTIME: &str = "'train_runtime':";
const SAMPLES: &str = "'train_samples_per_second':";
const STEPS: &str = "'train_steps_per_second':";

/// Whether `text` has the Trainer's closing metrics line.
pub(super) fn recognises(text: &str) -> bool {
    text.lines().any(|line| line.contains(SAMPLES))
}

/// The run's samples per second and seconds per step from the last closing metrics line.
pub(super) fn read(text: &str) -> Result<TrainingMeasure, IngestError> {
    let (index, line) = text
        .lines()
        .enumerate()
        .filter(|(_, line)| line.contains(SAMPLES))
        .last()
        .ok_or(IngestError {
            line: 0,
            message: format!("no line with {SAMPLES}"),
        })?;
    let located = |message: String| IngestError {
        line: index + 1,
        message,
    };
    if !line.trim_end().ends_with('}') {
        return Err(located(
            "the metrics line is cut before its closing `}` (a partial log)".into(),
        ));
    }
    let number = |label: &str| {
        field(line, label)
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| located(format!("`{label}` is not followed by a positive number")))
    };
    let samples_per_s = number(SAMPLES)?;
    let steps_per_s = number(STEPS)?;
    number(RUNTIME)?;
    // The rates are rounded to three decimals, so samples per step is rounded to the nearest
    // whole sequence.
    let per_step = (samples_per_s / steps_per_s).round();
    Ok(TrainingMeasure {
        tool: "hf-trainer",
        step_s: Some(1.0 / steps_per_s),
        tokens_per_s_per_device: None,
        samples_per_s: Some(samples_per_s),
        tflops_per_device: None,
        global_batch: (per_step >= 1.0).then_some(per_step as u64),
        kept: Vec::new(),
        excluded: Vec::new(),
    })
}

/// The number after `label` up to the next `,` or `}`.
fn field(line: &str, label: &str) -> Option<f64> {
    let after = line.split_once(label)?.1;
    after.split([',', '}']).next()?.trim().parse().ok()
}
