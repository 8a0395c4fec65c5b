//! `loam schedule`: plan every job, then run them together on their pools over weeks
//! (`loam_compiler::schedule`) and print who starts when, who waits and is preempted, and
//! which deadlines hold; with `--add`/`--remove-site`, what a capacity change does.

mod text;

use crate::Context;
use crate::commands::plan::{load_and_plan, report_diagnostics};
use crate::io::IoError;
use clap::{Args, ValueEnum};
use loam_compiler::schedule::date::{format_date, parse_date};
use loam_compiler::schedule::what_if::{self, Addition};
use loam_compiler::schedule::{DEFAULT_SEED, Options, Rules, Submits, schedule_with_services};
use std::path::{Path, PathBuf};

/// Most Monte Carlo samples (counted: 1,000 samples of a 1,000-job repository take seconds;
/// ten times more only narrows P90 by a third).
const MAX_SAMPLES: u64 = 10_000;

/// Arguments of `loam schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// Files or folders to schedule; folders are searched for `*.loam` recursively. Default: `.`.
    pub paths: Vec<PathBuf>,
    /// The first day (`YYYY-MM-DD`, 00:00 UTC); default: today's UTC date, printed so the run
    /// can be repeated.
    #[arg(long, value_name = "DATE")]
    pub start: Option<String>,
    /// How far to simulate: days (`90d`), weeks (`12w`) or hours (`2160h`).
    #[arg(long, default_value = "90d", value_name = "DURATION")]
    pub horizon: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ScheduleFormat::Text)]
    pub format: ScheduleFormat,
    /// Monte Carlo samples over durations and failures (0: the expected schedule only).
    #[arg(long, default_value_t = 0)]
    pub samples: u64,
    /// The Monte Carlo seed (the same seed gives the same probabilities).
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Add devices at a site (`256xH100_SXM@shanghai`) and compare; repeatable.
    #[arg(long, value_name = "COUNTxDEVICE@SITE")]
    pub add: Vec<String>,
    /// Remove a site's node groups and compare; repeatable.
    #[arg(long, value_name = "SITE")]
    pub remove_site: Vec<String>,
    /// Whose rules admit the jobs: Kueue's (preemption, re-placement) or Slurm's (priority
    /// with backfill reservations, no preemption).
    #[arg(long, value_enum, default_value_t = ScheduleRules::Kueue)]
    pub rules: ScheduleRules,
    /// Show every warning of planning in full.
    #[arg(long)]
    pub verbose: bool,
}

/// The scheduler whose rules `loam schedule` follows (docs/scheduling.md, rule 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScheduleRules {
    /// Kueue: BestEffortFIFO, reclaiming and priority preemption, re-placement, migration.
    Kueue,
    /// Slurm: multifactor priority with backfill reservations, no preemption.
    Slurm,
}

/// Output format of `loam schedule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScheduleFormat {
    /// Text for people: the verdict first.
    Text,
    /// The schedule as JSON (keys in a fixed order).
    Json,
}

/// Hours in `90d`, `12w` or `2160h`.
fn horizon_hours(text: &str) -> Result<f64, String> {
    let bad = || format!("--horizon `{text}`: write days (90d), weeks (12w) or hours (2160h)");
    let Some((cut, _)) = text.char_indices().last() else {
        return Err(bad());
    };
    let (number, unit) = text.split_at(cut);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let hours = match unit {
        "d" => value * 24.0,
        "w" => value * 168.0,
        "h" => value,
        _ => return Err(bad()),
    };
    // At most ten years (87,600 h), the longest deadline a spec may state.
    if !(hours > 0.0 && hours <= 87_600.0) {
        return Err(format!("--horizon `{text}`: between 1h and 3650d"));
    }
    Ok(hours)
}

/// Today's UTC date as days since 1970-01-01.
fn today() -> i64 {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (seconds / 86_400) as i64
}

/// Runs `loam schedule`: 0 when no deadline is missed, 1 on errors in the specs or the
/// catalogue, a missed deadline or a job that can never be admitted, 2 on a bad argument.
pub fn run(
    args: &ScheduleArgs,
    catalogue_dir: Option<&Path>,
    cx: &mut Context<'_>,
) -> Result<u8, IoError> {
    let usage = |cx: &mut Context<'_>, message: String| {
        cx.eprint(&format!("error: {message}\n"));
        Ok(2)
    };
    let start_day = match &args.start {
        Some(text) => match parse_date(text) {
            Ok(day) => day,
            Err(problem) => return usage(cx, format!("--start: {problem}")),
        },
        None => today(),
    };
    let horizon_h = match horizon_hours(&args.horizon) {
        Ok(h) => h,
        Err(problem) => return usage(cx, problem),
    };
    if args.samples > MAX_SAMPLES {
        return usage(cx, format!("--samples: at most {MAX_SAMPLES}"));
    }
    let mut additions = Vec::new();
    for text in &args.add {
        match Addition::parse(text) {
            Ok(a) => additions.push(a),
            Err(problem) => return usage(cx, format!("--add {problem}")),
        }
    }
    let (specs, planned) = load_and_plan(&args.paths, catalogue_dir, None, cx)?;
    if specs.files.is_empty() && specs.catalogue_errors == 0 {
        cx.eprint(&crate::io::no_specs_found(&args.paths));
        return Ok(1);
    }
    report_diagnostics(&specs, &planned, args.verbose, cx);
    let Some(catalogue) = &specs.catalogue else {
        return Ok(1);
    };
    if planned.document.plans.is_empty()
        && planned.document.services.is_empty()
        && specs.errors() > 0
    {
        // Nothing to schedule: the errors above say why.
        return Ok(1);
    }
    let start_min = start_day * 1440;
    let mut submits = Submits::new();
    for checked in &specs.jobs {
        if let Some(submit) = &checked.job.submit {
            let hours = (submit.value - start_min) as f64 / 60.0;
            submits.insert(
                (checked.file.clone(), checked.job.name.value.clone()),
                hours,
            );
        }
    }
    let options = Options {
        start: format_date(start_day),
        horizon_h,
        samples: args.samples,
        seed: args.seed,
        rules: match args.rules {
            ScheduleRules::Kueue => Rules::Kueue,
            ScheduleRules::Slurm => Rules::Slurm,
        },
        threads: crate::session::threads(),
    };
    let plans = &planned.document.plans;
    let services = &planned.document.services;
    let result = if additions.is_empty() && args.remove_site.is_empty() {
        schedule_with_services(plans, services, &submits, catalogue, &options)
    } else {
        match what_if::changed_catalogue(catalogue, &additions, &args.remove_site) {
            Ok((changed, words)) => what_if::compare(
                plans, services, &submits, catalogue, &changed, words, &options,
            ),
            Err(problem) => return usage(cx, problem),
        }
    };
    match args.format {
        ScheduleFormat::Json => match serde_json::to_value(&result) {
            Ok(value) => cx.print_json(&value),
            Err(e) => return Err(IoError(format!("cannot write the schedule: {e}"))),
        },
        ScheduleFormat::Text => cx.print(&text::render(&result, args.start.is_none())),
    }
    let missed = result.totals.missed > 0
        || result
            .jobs
            .iter()
            .any(|j| j.status == "never" || j.status == "not-planned");
    Ok(u8::from(specs.errors() > 0 || missed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn horizons_read_days_weeks_and_hours() {
        assert_eq!(horizon_hours("90d"), Ok(2160.0));
        assert_eq!(horizon_hours("12w"), Ok(2016.0));
        assert_eq!(horizon_hours("36h"), Ok(36.0));
        assert!(horizon_hours("90").is_err());
        assert!(horizon_hours("0d").is_err());
        assert!(horizon_hours("").is_err());
        assert!(horizon_hours("90日").is_err());
    }
}
