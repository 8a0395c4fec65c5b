//! Error by regime: the calibration's error statistics over the runs of each regime (sequence
//! length band, ZeRO stage, MoE or dense, precision, device, scale, software stack, source
//! family), so that a weakness confined to one regime shows before someone else finds it.
//!
//! Each costed run is tagged from its own CSV row ([`tags`]); the statistics are those of the
//! summary line (median |error|, share within ±20 %) plus the mean signed error, which says
//! which way a regime leans.

use super::ServingCalibrationReport;
use super::cells::{Cells, read_rows};
use super::{CalibrationError, CalibrationReport, HeteroCalibrationReport, median};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

mod tags;

pub use tags::{hetero_tags, serving_tags, training_tags};

/// What a regime groups runs by, in the order the table lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Band of the sequence (training) or prompt (serving) length.
    Sequence,
    /// ZeRO stage (weight, gradient and optimizer-state sharding).
    Zero,
    /// Mixture of experts or dense.
    Moe,
    /// Training or serving precision.
    Precision,
    /// Catalogue device id (a run over several types counts under each).
    Device,
    /// Band of the devices the run used.
    Scale,
    /// Software stack: framework or serving engine, as the row names it.
    Stack,
    /// Source family: the id's prefix before its first `_` (serving: the `group` column).
    Family,
}

impl Dimension {
    /// The dimension's name in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Sequence => "sequence",
            Dimension::Zero => "zero",
            Dimension::Moe => "moe",
            Dimension::Precision => "precision",
            Dimension::Device => "device",
            Dimension::Scale => "scale",
            Dimension::Stack => "stack",
            Dimension::Family => "family",
        }
    }
}

/// One regime a run belongs to: its dimension, the label, and the order the label sorts in
/// (a band's lower bound; 0 for labels that sort by name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Regime {
    /// What the regime groups by.
    pub dimension: Dimension,
    /// Sort key inside the dimension, before the label.
    pub order: u64,
    /// The label (`2K–8K`, `fp8`, `H100_SXM` …).
    pub label: String,
}

impl Regime {
    /// A regime sorted by its label.
    pub fn named(dimension: Dimension, label: impl Into<String>) -> Regime {
        Regime {
            dimension,
            order: 0,
            label: label.into(),
        }
    }
}

/// The error statistics of the runs of one regime.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeStats {
    /// What the regime groups by.
    pub dimension: Dimension,
    /// The regime's label.
    pub regime: String,
    /// Costed runs in it.
    pub runs: usize,
    /// Median `|error|`, percent.
    pub median_abs_error_pct: f64,
    /// Share of its runs within ±20 %.
    pub within_20_pct_share: f64,
    /// Mean signed error, percent (positive: predicted faster than measured).
    pub mean_signed_error_pct: f64,
}

/// The statistics of every regime of `runs`, each a signed error in percent with the regimes
/// its run belongs to; sorted by dimension, then by each regime's order and label.
pub fn by_regime(runs: &[(f64, Vec<Regime>)]) -> Vec<RegimeStats> {
    let mut groups: BTreeMap<&Regime, Vec<f64>> = BTreeMap::new();
    for (error, regimes) in runs {
        for regime in regimes {
            groups.entry(regime).or_default().push(*error);
        }
    }
    groups
        .into_iter()
        .map(|(regime, errors)| {
            let n = errors.len();
            let abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
            let within = abs.iter().filter(|e| **e <= 20.0).count();
            RegimeStats {
                dimension: regime.dimension,
                regime: regime.label.clone(),
                runs: n,
                median_abs_error_pct: median(abs),
                within_20_pct_share: within as f64 / n.max(1) as f64,
                mean_signed_error_pct: errors.iter().sum::<f64>() / n.max(1) as f64,
            }
        })
        .collect()
}

/// Band of a length in tokens: `≤ 2K`, `2K–8K`, `8K–32K`, `> 32K`.
pub fn sequence_band(tokens: u32) -> Regime {
    let (order, label) = match tokens {
        0..=2048 => (0, "≤ 2K"),
        2049..=8192 => (2048, "2K–8K"),
        8193..=32_768 => (8192, "8K–32K"),
        _ => (32_768, "> 32K"),
    };
    Regime {
        dimension: Dimension::Sequence,
        order,
        label: label.into(),
    }
}

/// Band of a device count: `1–8` (one node), `9–64`, `65–512`, `> 512`.
pub fn scale_band(devices: u32) -> Regime {
    let (order, label) = match devices {
        0..=8 => (0, "1–8"),
        9..=64 => (9, "9–64"),
        65..=512 => (65, "65–512"),
        _ => (513, "> 512"),
    };
    Regime {
        dimension: Dimension::Scale,
        order,
        label: label.into(),
    }
}

/// The error by regime of a training report (`csv_text` is the file it was made from).
pub fn training_regimes(
    csv_text: &str,
    report: &CalibrationReport,
) -> Result<Vec<RegimeStats>, CalibrationError> {
    let runs = report.rows.iter().map(|r| (r.run_id.as_str(), r.error_pct));
    regimes_of(csv_text, "run_id", runs, training_tags)
}

/// The error by regime of a heterogeneous-run report, in whole-job tokens/s.
pub fn hetero_regimes(
    csv_text: &str,
    report: &HeteroCalibrationReport,
) -> Result<Vec<RegimeStats>, CalibrationError> {
    let runs = report
        .rows
        .iter()
        .map(|r| (r.point_id.as_str(), r.error_pct));
    regimes_of(csv_text, "point_id", runs, hetero_tags)
}

/// The error by regime of `runs` (each run's id and signed error, `None` when not costed),
/// tagged by `tags` from the row of `csv_text` whose `id_column` names it.
fn regimes_of<'a>(
    csv_text: &str,
    id_column: &str,
    runs: impl Iterator<Item = (&'a str, Option<f64>)>,
    tags: fn(&Cells) -> Vec<Regime>,
) -> Result<Vec<RegimeStats>, CalibrationError> {
    let rows = read_rows(csv_text)?;
    let runs = runs
        .filter_map(|(id, error)| {
            let cells = rows.iter().find(|c| c.text(id_column) == id)?;
            Some((error?, tags(cells)))
        })
        .collect::<Vec<_>>();
    Ok(by_regime(&runs))
}

/// The error by regime of a serving report, one table per metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingRegimes {
    /// Throughput error by regime.
    pub throughput: Vec<RegimeStats>,
    /// Time-to-first-token error by regime.
    pub ttft: Vec<RegimeStats>,
    /// Time-per-output-token error by regime.
    pub tpot: Vec<RegimeStats>,
}

/// The error by regime of a serving report.
pub fn serving_regimes(
    csv_text: &str,
    report: &ServingCalibrationReport,
) -> Result<ServingRegimes, CalibrationError> {
    let rows = read_rows(csv_text)?;
    let tagged: Vec<_> = report
        .rows
        .iter()
        .filter_map(|r| {
            let cells = rows.iter().find(|c| c.text("run_id") == r.run_id)?;
            let engine = r.engine.map(|e| e.as_str().to_string());
            Some((r, serving_tags(cells, r.device.as_deref(), engine)))
        })
        .collect();
    let metric = |error: fn(&super::ServingCalibrationRow) -> Option<f64>| {
        let runs: Vec<(f64, Vec<Regime>)> = tagged
            .iter()
            .filter_map(|(r, tags)| Some((error(r)?, tags.clone())))
            .collect();
        by_regime(&runs)
    };
    Ok(ServingRegimes {
        throughput: metric(|r| r.throughput_error_pct),
        ttft: metric(|r| r.ttft_error_pct),
        tpot: metric(|r| r.tpot_error_pct),
    })
}

/// The table of `stats` under a heading naming what the errors are measured in.
pub fn render_regimes(heading: &str, stats: &[RegimeStats]) -> String {
    let mut out = String::new();
    // Headed "accuracy", not "error": CI logs and `grep ^error` read a line that starts with
    // "error" as a failure.
    let _ = writeln!(out, "accuracy by regime ({heading}):");
    let _ = writeln!(
        out,
        "{:<10} {:<28} {:>5} {:>15} {:>11} {:>12}",
        "dimension", "regime", "runs", "median |error|", "within ±20%", "mean signed"
    );
    for s in stats {
        let _ = writeln!(
            out,
            "{:<10} {:<28} {:>5} {:>14.1}% {:>10.0}% {:>+11.1}%",
            s.dimension.as_str(),
            s.regime,
            s.runs,
            s.median_abs_error_pct,
            100.0 * s.within_20_pct_share,
            s.mean_signed_error_pct
        );
    }
    out
}

/// The three tables of a serving report's regimes.
pub fn render_serving_regimes(regimes: &ServingRegimes) -> String {
    [
        ("throughput", &regimes.throughput),
        ("TTFT", &regimes.ttft),
        ("TPOT", &regimes.tpot),
    ]
    .iter()
    .map(|(metric, stats)| render_regimes(metric, stats))
    .collect::<Vec<_>>()
    .join("\n")
}

#[cfg(test)]
mod tests;
