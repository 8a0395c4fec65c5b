//! `loam calibrate`: predicted vs measured throughput of published training runs, and whether
//! loam's own layout beats the published one; or, for a CSV of runs that mix device types,
//! predicted vs measured whole-job throughput with each run's own stage layout; or, for a CSV
//! of serving runs, predicted vs measured output throughput, TTFT and TPOT per run. After the
//! table and its summary lines, each kind prints its error by regime (sequence length, ZeRO,
//! MoE, precision, device, scale, stack, source family); `--cross-validate` refits the fitted
//! constants per source family on the training and the heterogeneous files alike.

use crate::Context;
use crate::args::{CalibrateArgs, OutputFormat};
use crate::session::plan_catalogue;
use loam_compiler::calibrate::{
    CsvKind, calibrate, calibrate_hetero, calibrate_serving, cross_validate, cross_validate_hetero,
    cross_validate_serving, csv_kind, hetero_regimes, render_cross_validation, render_hetero_table,
    render_regimes, render_serving_cross_validation, render_serving_regimes, render_serving_table,
    render_table, serving_regimes, training_regimes,
};
use loam_ir::plan::json::sort_keys;
use std::path::Path;

mod fit;

/// Runs `loam calibrate`; exit 0 on success, 1 when the CSV is malformed, 2 when unreadable.
pub fn run(
    args: &CalibrateArgs,
    catalogue_dir: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, crate::io::IoError> {
    let catalogue = plan_catalogue(catalogue_dir)?;
    let Some(csv) = args.csv.as_ref().filter(|_| !args.fit) else {
        return fit::run(&catalogue, catalogue_dir, args.format, cx);
    };
    let bytes = crate::io::read(csv)?;
    let name = crate::io::display(csv);
    let Ok(text) = String::from_utf8(bytes) else {
        cx.eprint(&format!("error: {name}: the CSV is not UTF-8 text\n"));
        return Ok(1);
    };
    if csv_kind(&text) == CsvKind::Serving {
        let devices = |id: &str| catalogue.device(id).cloned();
        let value = if args.cross_validate {
            match cross_validate_serving(&text, devices) {
                Ok(cv) => match args.format {
                    OutputFormat::Json => serde_json::to_value(&cv).unwrap_or_default(),
                    OutputFormat::Text => {
                        cx.print(&render_serving_cross_validation(&cv));
                        return Ok(0);
                    }
                },
                Err(e) => {
                    cx.eprint(&format!("error: {name}: {e}\n"));
                    return Ok(1);
                }
            }
        } else {
            match calibrate_serving(&text, devices) {
                Ok(report) => {
                    let regimes = match serving_regimes(&text, &report) {
                        Ok(regimes) => regimes,
                        Err(e) => {
                            cx.eprint(&format!("error: {name}: {e}\n"));
                            return Ok(1);
                        }
                    };
                    match args.format {
                        OutputFormat::Json => with_regimes(
                            serde_json::to_value(&report).unwrap_or_default(),
                            serde_json::to_value(&regimes).unwrap_or_default(),
                        ),
                        OutputFormat::Text => {
                            cx.print(&render_serving_table(&report));
                            cx.print(&format!("\n{}", render_serving_regimes(&regimes)));
                            return Ok(0);
                        }
                    }
                }
                Err(e) => {
                    cx.eprint(&format!("error: {name}: {e}\n"));
                    return Ok(1);
                }
            }
        };
        cx.print_json(&sort_keys(value));
        return Ok(0);
    }
    let lookup = |id: &str| catalogue.device(id).map(|d| d.figures());
    let hetero = csv_kind(&text) == CsvKind::Hetero;
    if args.cross_validate {
        // The training and the heterogeneous refits report alike.
        let refit = if hetero {
            cross_validate_hetero(&text, lookup)
        } else {
            cross_validate(&text, lookup)
        };
        let cv = match refit {
            Ok(cv) => cv,
            Err(e) => {
                cx.eprint(&format!("error: {name}: {e}\n"));
                return Ok(1);
            }
        };
        match args.format {
            OutputFormat::Json => {
                cx.print_json(&sort_keys(serde_json::to_value(&cv).unwrap_or_default()));
            }
            OutputFormat::Text => cx.print(&render_cross_validation(&cv)),
        }
        return Ok(0);
    }
    if hetero {
        let (report, regimes) = match calibrate_hetero(&text, lookup)
            .and_then(|report| Ok((hetero_regimes(&text, &report)?, report)))
        {
            Ok((regimes, report)) => (report, regimes),
            Err(e) => {
                cx.eprint(&format!("error: {name}: {e}\n"));
                return Ok(1);
            }
        };
        match args.format {
            OutputFormat::Json => {
                cx.print_json(&sort_keys(with_regimes(
                    serde_json::to_value(&report).unwrap_or_default(),
                    serde_json::to_value(&regimes).unwrap_or_default(),
                )));
            }
            OutputFormat::Text => {
                cx.print(&render_hetero_table(&report));
                cx.print(&format!(
                    "\n{}",
                    render_regimes("whole-job tokens/s", &regimes)
                ));
            }
        }
        return Ok(0);
    }
    let (report, regimes) = match calibrate(&text, lookup)
        .and_then(|report| Ok((training_regimes(&text, &report)?, report)))
    {
        Ok((regimes, report)) => (report, regimes),
        Err(e) => {
            cx.eprint(&format!("error: {name}: {e}\n"));
            return Ok(1);
        }
    };
    let auto_wins = report
        .rows
        .iter()
        .filter(|r| r.auto_at_least_as_fast)
        .count();
    let n = report.rows.len();
    match args.format {
        OutputFormat::Json => {
            let mut value = serde_json::to_value(&report).unwrap_or_default();
            if let Some(map) = value.as_object_mut() {
                map.insert(
                    "auto_at_least_as_fast_share".into(),
                    serde_json::json!(auto_wins as f64 / n.max(1) as f64),
                );
            }
            cx.print_json(&sort_keys(with_regimes(
                value,
                serde_json::to_value(&regimes).unwrap_or_default(),
            )));
        }
        OutputFormat::Text => {
            cx.print(&render_table(&report));
            cx.print(&format!(
                "loam's own layout (every field auto, same devices) is predicted at least as fast as the published one on {auto_wins} of {n} runs\n"
            ));
            cx.print(&format!(
                "\n{}",
                render_regimes("tokens/s per device", &regimes)
            ));
        }
    }
    Ok(0)
}

/// A report's JSON with its error by regime under `regimes`, after every key it had.
fn with_regimes(mut report: serde_json::Value, regimes: serde_json::Value) -> serde_json::Value {
    if let Some(map) = report.as_object_mut() {
        map.insert("regimes".into(), regimes);
    }
    report
}
