//! PyTorch Lightning's `metrics.csv` with its `ThroughputMonitor`: the CSV logger
//! (`CSVLogger`, `lightning/fabric/loggers/csv_logs.py`) writes one row per `log_metrics` call
//! under a header of every key logged, sorted, with `step` among them; the callback
//! (`lightning/pytorch/callbacks/throughput_monitor.py`) logs the stage, the separator (`/` by
//! default) and `Throughput.compute`'s keys (`lightning/fabric/utilities/throughput.py`):
//! `train/device/samples_per_sec` (a rolling mean over the last `window_size` batches, 100 by
//! default, reported only once the window is full) and, when the world is larger than one,
//! `train/samples_per_sec` (that times the world size).
//!
//! The callback already takes validation time out of the training clock (`on_validation_end`),
//! so no row is left out for an evaluation; a checkpoint save is not logged and cannot be left
//! out (the median keeps one slow window from moving the figure). The first
//! [`WARM_UP_INTERVALS`](super::WARM_UP_INTERVALS) rows with a rate are warm-up: the first full window reaches back to the
//! first batch.

use super::{IngestError, Intervals, TrainingMeasure, median};

/// The per-device rate's key after the stage and separator.
const DEVICE_RATE: &str = "samples_per_sec";

/// Which of the `ThroughputMonitor`'s training rates a logged key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rate {
    /// `train<sep>device<sep>samples_per_sec`: one device's samples per second.
    Device,
    /// `train<sep>samples_per_sec`: the job's, logged when the world is larger than one.
    Job,
}

/// The training rate a logged key (a CSV column, a TensorBoard tag) names, if any: one rule for
/// every logger Lightning writes through.
pub(super) fn rate(key: &str) -> Option<Rate> {
    if !(key.starts_with("train") && key.ends_with(DEVICE_RATE)) {
        return None;
    }
    Some(if key.contains("device") {
        Rate::Device
    } else {
        Rate::Job
    })
}

/// The columns that matter, by index in the header.
struct Columns {
    step: usize,
    /// `train<sep>device<sep>samples_per_sec`.
    device: usize,
    /// `train<sep>samples_per_sec`, present when the world is larger than one.
    global: Option<usize>,
}

/// The header's columns when it is a Lightning `metrics.csv` with the training throughput.
fn columns(header: &str) -> Option<Columns> {
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let index = |wanted: Rate| names.iter().position(|n| rate(n) == Some(wanted));
    let device = index(Rate::Device)?;
    let global = index(Rate::Job);
    let step = names.iter().position(|n| *n == "step")?;
    Some(Columns {
        step,
        device,
        global,
    })
}

/// The monitor's logged rates, one logging call at a time, and the one rule for which count
/// (the CSV and the TensorBoard paths both feed it).
#[derive(Debug, Default)]
pub(super) struct Rates {
    rates: Vec<f64>,
    intervals: Intervals,
}

impl Rates {
    /// One logging call at `step` with the per-device rate and, in a world larger than one,
    /// the job's (both positive): the job's rate counts, or the device's in a world of one.
    pub(super) fn push(&mut self, step: u64, per_device: f64, job: Option<f64>) {
        if self.intervals.count(step) {
            self.rates.push(job.unwrap_or(per_device));
        }
    }

    /// The steady samples per second of the job: the median over the kept calls.
    pub(super) fn finish(self) -> Result<TrainingMeasure, IngestError> {
        let logged = self.intervals.logged;
        let samples_per_s = median(&self.rates).ok_or_else(|| IngestError {
            line: 0,
            message: format!(
                "no steady interval: {logged} logged training rates, every one warm-up; log \
                 more steps (the rate appears once the monitor's window of batches is full)"
            ),
        })?;
        Ok(TrainingMeasure {
            tool: "lightning",
            step_s: None,
            tokens_per_s_per_device: None,
            samples_per_s: Some(samples_per_s),
            tflops_per_device: None,
            global_batch: None,
            kept: self.intervals.kept,
            excluded: self.intervals.excluded,
        })
    }
}

/// Whether `text` is a Lightning `metrics.csv` holding `ThroughputMonitor`'s training rate.
pub(super) fn recognises(text: &str) -> bool {
    text.lines().next().and_then(columns).is_some()
}

/// The steady samples per second of the job: the median over the kept rows of the global rate
/// (or the per-device rate, in a world of one device).
pub(super) fn read(text: &str) -> Result<TrainingMeasure, IngestError> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let columns = columns(header).ok_or(IngestError {
        line: 1,
        message: "the header names no `train/device/samples_per_sec` and `step` columns".into(),
    })?;
    let width = header.split(',').count();
    let count = text.lines().count();
    let mut rates = Rates::default();
    for (index, line) in lines.enumerate() {
        let number = index + 2;
        if line.trim().is_empty() {
            continue;
        }
        let located = |message: String| IngestError {
            line: number,
            message,
        };
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != width {
            let why = if number == count && !text.ends_with('\n') {
                "the file ends in the middle of a row (a partial file)"
            } else {
                "a row whose cells do not match the header"
            };
            return Err(located(format!(
                "{why}: {} cells for {width} columns",
                cells.len()
            )));
        }
        let cell = |i: usize| cells.get(i).copied().unwrap_or_default();
        let per_device = cell(columns.device);
        if per_device.is_empty() {
            // Another metric's row (a loss, a validation rate), or a window not yet full.
            continue;
        }
        let positive = |text: &str, what: &str| {
            text.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| located(format!("{what} `{text}` is not a positive number")))
        };
        let per_device = positive(per_device, "the per-device rate")?;
        let job = match columns.global.map(cell).filter(|c| !c.is_empty()) {
            Some(global) => Some(positive(global, "the job's rate")?),
            None => None,
        };
        let step = cell(columns.step).parse::<u64>().map_err(|_| {
            located(format!(
                "the step `{}` is not a step number",
                cell(columns.step)
            ))
        })?;
        rates.push(step, per_device, job);
    }
    rates.finish()
}
