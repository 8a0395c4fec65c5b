//! torchtitan's training log: one line per logged step, as `MetricsProcessor.log` in
//! `torchtitan/components/metrics.py` writes it, `step: 10  loss:  8.12345  grad_norm:  2.3456
//! memory: 61.20GiB(77.30%)  tps: 3,890  tflops: 225.12  mfu: 22.76%` (coloured with ANSI codes
//! unless colour is off; `tps` is tokens per second per device over the interval since the last
//! log). A checkpoint save logs `Saving the checkpoint.` (or `Staging` when asynchronous,
//! `torchtitan/components/checkpointer/dcp.py`) after a step's line, so the next interval holds
//! it. Validation (`validate step: …`) resets the interval clock and leaves no mark on the next.

use super::{Exclusion, IngestError, Intervals, TrainingMeasure, WARM_UP_INTERVALS, median};

const SAVE: [&str; 2] = ["Saving the checkpoint", "Staging the checkpoint"];

/// Whether `text` has a line of torchtitan's step log.
pub(super) fn recognises(text: &str) -> bool {
    text.lines().map(plain).any(|l| is_step_line(&l))
}

/// A line without its ANSI colour codes (CSI sequences `ESC [ … letter`).
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip to the sequence's final letter.
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn is_step_line(line: &str) -> bool {
    line.contains("tps: ") && line.contains("step: ") && !line.contains("validate step: ")
}

/// The steady tokens per second per device of a torchtitan log: the median of the kept steps'
/// `tps`. Left out: the first [`WARM_UP_INTERVALS`] logged intervals, and an interval during
/// which a checkpoint was saved.
pub(super) fn read(text: &str) -> Result<TrainingMeasure, IngestError> {
    let mut rates = Vec::new();
    let mut tflops = Vec::new();
    let mut intervals = Intervals::default();
    let count = text.lines().count();
    let ends_in_newline = text.ends_with('\n');
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = plain(raw);
        if SAVE.iter().any(|s| line.contains(s)) {
            intervals.mark(Exclusion::Checkpoint);
            continue;
        }
        if !is_step_line(&line) {
            continue;
        }
        let located = |message: String| IngestError {
            line: number,
            message,
        };
        if number == count && !ends_in_newline && !line.contains("mfu: ") {
            return Err(located(
                "the log ends in the middle of a step's line (a partial log): its figures may \
                 be cut"
                    .into(),
            ));
        }
        let step = field(&line, "step: ")
            .map(|s| s as u64)
            .ok_or_else(|| located("`step:` is not followed by a number".into()))?;
        let tps = field(&line, "tps: ")
            .filter(|t| *t > 0.0)
            .ok_or_else(|| located("`tps:` is not followed by a positive number".into()))?;
        if !intervals.count(step) {
            continue;
        }
        rates.push(tps);
        if let Some(t) = field(&line, "tflops: ") {
            tflops.push(t);
        }
    }
    let logged = intervals.logged;
    let rate = median(&rates).ok_or_else(|| IngestError {
        line: 0,
        message: format!(
            "no steady interval: {logged} logged, every one left out ({} warm-up, the rest \
             beside a checkpoint save); log more steps",
            logged.min(WARM_UP_INTERVALS)
        ),
    })?;
    Ok(TrainingMeasure {
        tool: "torchtitan",
        step_s: None,
        tokens_per_s_per_device: Some(rate),
        samples_per_s: None,
        tflops_per_device: median(&tflops),
        global_batch: None,
        kept: intervals.kept,
        excluded: intervals.excluded,
    })
}

/// The number after `label` (thousands separators allowed) up to the next space or `%`.
fn field(line: &str, label: &str) -> Option<f64> {
    let after = line.split_once(label)?.1.trim_start();
    let token: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
        .filter(|c| *c != ',')
        .collect();
    token.parse::<f64>().ok().filter(|v| v.is_finite())
}
