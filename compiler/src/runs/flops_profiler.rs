//! DeepSpeed's flops profiler summary: `FlopsProfiler.print_model_profile` in
//! `deepspeed/profiling/flops_profiler/profiler.py` (microsoft/DeepSpeed), printed once, at the
//! configured `profile_step`. After the banner `-------------------------- DeepSpeed Flops
//! Profiler --------------------------` and `Profile Summary at step N:`, each figure is a line
//! `'{:<70}  {:<8}'.format(label, value)`. With the engine's `wall_clock_breakdown` on, the
//! profile times the whole step and prints `FLOPS per GPU = 3 * fwd flops per GPU / iter
//! latency:  159.75 TFLOPS` (the factor is 2 + the recomputation factor, plus 1; the value is
//! `flops_to_string`: `{round(x / 1e12, 2):g} TFLOPS`, with G, M, K below a TFLOP/s) and
//! `samples/second:  80.0` (`train_micro_batch_size_per_gpu() × world_size / iter latency`);
//! without it, only the forward pass is timed and neither line is printed.
//!
//! It profiles one step: its figures are that step's, not a steady state, and the profiler's
//! flops are its own count of the model's operations (`fwd flops per GPU`, times 3 for forward
//! and backward).

use super::IngestError;

const BANNER: &str = "DeepSpeed Flops Profiler";
const STEP: &str = "Profile Summary at step ";
/// The label of the whole step's rate: the only `FLOPS per GPU` line over the iter latency.
const STEP_FLOPS: &str = "FLOPS per GPU = ";
const OVER_ITER: &str = "/ iter latency:";
const SAMPLES: &str = "samples/second:";

/// One printed profile summary.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Profile {
    /// The line of its banner (1-based).
    pub line: usize,
    /// The training step profiled.
    pub step: u64,
    /// The step's samples per second of the job, as DeepSpeed computed it.
    pub samples_per_s: Option<f64>,
    /// The step's model TFLOP/s per device, by the profiler's own count of the flops.
    pub tflops_per_device: Option<f64>,
}

/// Whether `text` holds a flops profiler summary.
pub(super) fn recognises(text: &str) -> bool {
    text.lines().any(|line| line.contains(BANNER))
}

/// The value after a figure's label: what follows the label's last `:`, trimmed.
fn value(line: &str) -> &str {
    line.rsplit_once(':').map_or("", |(_, v)| v.trim())
}

/// A rate `flops_to_string` printed, `X [T|G|M|K]FLOPS`, in TFLOP/s.
fn tflops(text: &str) -> Option<f64> {
    let (number, unit) = text.split_once(' ')?;
    let scale = match unit.trim().strip_suffix("FLOPS")? {
        "T" => 1.0,
        "G" => 1e-3,
        "M" => 1e-6,
        "K" => 1e-9,
        "" => 1e-12,
        _ => return None,
    };
    let number = number.parse::<f64>().ok()?;
    Some(number * scale).filter(|v| v.is_finite() && *v > 0.0)
}

/// The last profile summary of `text` (DeepSpeed prints one; a restarted job can print
/// another), `None` when there is none; a figure that does not read is an error at its line.
pub(super) fn last(text: &str) -> Result<Option<Profile>, IngestError> {
    let mut profile: Option<Profile> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let located = |message: String| IngestError {
            line: number,
            message,
        };
        if line.contains(BANNER) {
            profile = Some(Profile {
                line: number,
                step: 0,
                samples_per_s: None,
                tflops_per_device: None,
            });
            continue;
        }
        let Some(current) = profile.as_mut() else {
            continue;
        };
        if let Some(after) = line.split_once(STEP).map(|(_, a)| a) {
            let step = after.trim().trim_end_matches(':');
            current.step = step
                .parse()
                .map_err(|_| located(format!("`{STEP}` is not followed by a step number")))?;
        } else if line.contains(STEP_FLOPS) && line.contains(OVER_ITER) {
            let rate = tflops(value(line)).ok_or_else(|| {
                located("the step's `FLOPS per GPU` is not a positive `… TFLOPS` figure".into())
            })?;
            current.tflops_per_device = Some(rate);
        } else if line.contains(SAMPLES) {
            let rate = value(line)
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| {
                    located(format!("`{SAMPLES}` is not followed by a positive number"))
                })?;
            current.samples_per_s = Some(rate);
        }
    }
    Ok(profile)
}
