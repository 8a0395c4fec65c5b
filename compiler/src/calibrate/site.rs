//! A site's calibration as catalogue data: `loam calibrate --fit` fits the runs store
//! (`runs/<site>/*.csv`) per site and device ([`super::fit`]) and writes one file per site,
//! `calibration/<pool>-<site>.yaml`, with its provenance (which runs, their dates, the fit's
//! error); the catalogue loader reads it back ([`parse`]) and the planner applies its factors
//! where it builds a node group's cluster figures.

use super::fit::{Factors, fit};
use super::{CalibrationError, Prepared, calibrate_prepared};
use crate::catalogue::Catalogue;
use crate::runs::store::StoreRow;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One site's calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteCalibration {
    /// The pool.
    pub pool: String,
    /// The site.
    pub site: String,
    /// Per device type measured there.
    pub devices: BTreeMap<String, DeviceCalibration>,
    /// Per serving engine measured there (`runs/<site>/serving.csv`); absent from the file and
    /// the JSON when none was.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub serving: BTreeMap<String, EngineCalibration>,
}

/// The fitted efficiency of one serving engine at one site, with its provenance
/// (`calibrate::serving::efficiency`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineCalibration {
    /// Serving runs fitted on.
    pub runs: u32,
    /// Their `run_id`s, sorted.
    pub run_ids: Vec<String>,
    /// The first run's date.
    pub first_run: String,
    /// The last run's date.
    pub last_run: String,
    /// Multiplies the bandwidth and GEMM shares the engine's kernels reach.
    pub efficiency: f64,
    /// The relative throughput uncertainty a service planned here states.
    pub throughput_uncertainty: f64,
    /// Median `|error|` of the fitted efficiency on the runs, in percent.
    pub median_abs_error_pct: f64,
}

/// The fitted factors of one device type at one site, with their provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceCalibration {
    /// Runs fitted on.
    pub runs: u32,
    /// Their `run_id`s, sorted.
    pub run_ids: Vec<String>,
    /// The first and last runs' dates.
    pub first_run: String,
    /// The last run's date.
    pub last_run: String,
    /// The factors fitted (the others are 1.0).
    pub fitted: Vec<String>,
    /// Multiplies the sustained GEMM share.
    pub gemm: f64,
    /// Multiplies the scale-out bandwidth per node.
    pub scale_out: f64,
    /// Multiplies the scale-up bandwidth per device.
    pub scale_up: f64,
    /// Seconds added to every step; written only when fitted, 0.0 when absent.
    #[serde(default)]
    pub fixed_s: f64,
    /// Multiplies the attention kernels' throughput; written only when fitted, 1.0 when absent.
    #[serde(default = "shipped_factor")]
    pub attention: f64,
    /// The relative throughput uncertainty a plan states here.
    pub throughput_uncertainty: f64,
    /// Median `|error|` of the fitted factors on the runs, in percent.
    pub median_abs_error_pct: f64,
}

impl DeviceCalibration {
    /// The factors as the cost model applies them.
    pub fn factors(&self) -> Factors {
        Factors {
            gemm: self.gemm,
            scale_out: self.scale_out,
            scale_up: self.scale_up,
            fixed_s: self.fixed_s,
            attention: self.attention,
        }
    }
}

/// A multiplier a file leaves out: the shipped model's.
fn shipped_factor() -> f64 {
    1.0
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    pool: String,
    site: String,
    #[serde(default)]
    devices: Option<BTreeMap<String, DeviceCalibration>>,
    #[serde(default)]
    serving: Option<BTreeMap<String, EngineCalibration>>,
}

/// Physical: a factor outside these bounds is not a calibration but a broken run or a typo (the
/// fit's own bounds are narrower, `fit.rs`).
const FACTOR_RANGE: (f64, f64) = (0.05, 5.0);

/// Physical: the most seconds a calibration may add to a step, an hour.
const FIXED_S_MAX: f64 = 3600.0;

/// Reads a calibration file; the error says what is wrong. Pools, sites and devices are checked
/// against the catalogue by the loader.
pub fn parse(text: &str) -> Result<SiteCalibration, String> {
    let raw: RawFile = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    let devices = raw.devices.unwrap_or_default();
    let serving = raw.serving.unwrap_or_default();
    for (engine, e) in &serving {
        let band = e.throughput_uncertainty > 0.0 && e.throughput_uncertainty <= 1.0;
        let error = e.median_abs_error_pct >= 0.0 && e.median_abs_error_pct.is_finite();
        if !band || !error || e.runs == 0 {
            return Err(format!(
                "serving {engine}: `throughput_uncertainty` must be a share above 0 and at most \
                 1, `median_abs_error_pct` a finite error and `runs` at least one run"
            ));
        }
    }
    for (device, d) in &devices {
        for (name, value) in [
            ("gemm", d.gemm),
            ("scale_out", d.scale_out),
            ("scale_up", d.scale_up),
            ("attention", d.attention),
        ] {
            if !(value >= FACTOR_RANGE.0 && value <= FACTOR_RANGE.1) {
                return Err(format!(
                    "{device}: `{name}` is {value}, expected a factor between {} and {}",
                    FACTOR_RANGE.0, FACTOR_RANGE.1
                ));
            }
        }
        // Physical: a site adds time to a step, it cannot remove the modelled work; an hour per
        // step is a broken run, not a calibration (the fit keeps it under half a measured step).
        if !(d.fixed_s >= 0.0 && d.fixed_s <= FIXED_S_MAX) {
            return Err(format!(
                "{device}: `fixed_s` is {}, expected seconds per step between 0 and {FIXED_S_MAX}",
                d.fixed_s
            ));
        }
        if !(d.throughput_uncertainty > 0.0 && d.throughput_uncertainty <= 1.0) {
            return Err(format!(
                "{device}: `throughput_uncertainty` is {}, expected a share above 0 and at most 1",
                d.throughput_uncertainty
            ));
        }
        if !(d.median_abs_error_pct >= 0.0 && d.median_abs_error_pct.is_finite()) || d.runs == 0 {
            return Err(format!(
                "{device}: `median_abs_error_pct` and `runs` must be a finite error and at least one run"
            ));
        }
    }
    Ok(SiteCalibration {
        pool: raw.pool,
        site: raw.site,
        devices,
        serving,
    })
}

/// The file's text: deterministic (devices sorted, numbers rounded to what the fit can tell).
pub fn to_yaml(calibration: &SiteCalibration) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Written by `loam calibrate --fit` from the runs store (runs/{}/); reviewed like the\n\
         # rest of the catalogue. Plans at this site apply the factors and state the uncertainty.",
        calibration.site
    );
    let _ = writeln!(out, "pool: {}", calibration.pool);
    let _ = writeln!(out, "site: {}", calibration.site);
    let _ = writeln!(out, "devices:");
    for (device, d) in &calibration.devices {
        let _ = writeln!(out, "  {device}:");
        let _ = writeln!(out, "    runs: {}", d.runs);
        let _ = writeln!(out, "    run_ids: [{}]", d.run_ids.join(", "));
        let _ = writeln!(out, "    first_run: \"{}\"", d.first_run);
        let _ = writeln!(out, "    last_run: \"{}\"", d.last_run);
        let _ = writeln!(out, "    fitted: [{}]", d.fitted.join(", "));
        let _ = writeln!(out, "    gemm: {:.4}", d.gemm);
        let _ = writeln!(out, "    scale_out: {:.4}", d.scale_out);
        let _ = writeln!(out, "    scale_up: {:.4}", d.scale_up);
        if d.fixed_s != 0.0 {
            let _ = writeln!(out, "    fixed_s: {:.4}", d.fixed_s);
        }
        if d.attention != 1.0 {
            let _ = writeln!(out, "    attention: {:.4}", d.attention);
        }
        let _ = writeln!(
            out,
            "    throughput_uncertainty: {:.4}",
            d.throughput_uncertainty
        );
        let _ = writeln!(
            out,
            "    median_abs_error_pct: {:.2}",
            d.median_abs_error_pct
        );
    }
    if !calibration.serving.is_empty() {
        let _ = writeln!(out, "serving:");
    }
    for (engine, e) in &calibration.serving {
        let _ = writeln!(out, "  {engine}:");
        let _ = writeln!(out, "    runs: {}", e.runs);
        let _ = writeln!(out, "    run_ids: [{}]", e.run_ids.join(", "));
        let _ = writeln!(out, "    first_run: \"{}\"", e.first_run);
        let _ = writeln!(out, "    last_run: \"{}\"", e.last_run);
        let _ = writeln!(out, "    efficiency: {:.4}", e.efficiency);
        let _ = writeln!(
            out,
            "    throughput_uncertainty: {:.4}",
            e.throughput_uncertainty
        );
        let _ = writeln!(
            out,
            "    median_abs_error_pct: {:.2}",
            e.median_abs_error_pct
        );
    }
    out
}

/// The store's runs ready to cost, by (pool, site) and device.
type StoreGroups = BTreeMap<(String, String), BTreeMap<String, Vec<(StoreRow, Prepared)>>>;

/// Every costable run of the store's `files` on its site's node-group figures, grouped.
pub(crate) fn prepare_store(
    files: &[(String, String)],
    catalogue: &Catalogue,
) -> Result<StoreGroups, CalibrationError> {
    let mut groups: StoreGroups = BTreeMap::new();
    for (_, text) in files {
        if crate::runs::store::serving::is_file(text) {
            continue;
        }
        let lookup = |id: &str| catalogue.device(id).map(crate::catalogue::Device::figures);
        let (_, prepared) = calibrate_prepared(text, &lookup)?;
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let rows: BTreeMap<String, StoreRow> = reader
            .deserialize::<StoreRow>()
            .filter_map(Result::ok)
            .map(|r| (r.run_id.clone(), r))
            .collect();
        for mut p in prepared {
            let Some(row) = rows.get(&p.run_id) else {
                continue;
            };
            let site = catalogue
                .pools
                .get(&row.pool)
                .and_then(|pool| pool.site(&row.site));
            let group = site.and_then(|s| {
                s.node_groups
                    .iter()
                    .find(|g| g.device.value == row.device)
                    .map(|g| (s, g))
            });
            let (Some((site, group)), Some(device)) = (group, catalogue.device(&row.device)) else {
                continue;
            };
            // The planner's figures of the group, as many nodes as the run used; the shipped
            // constants, never an earlier calibration's factors.
            let mut cluster = group.cluster_figures_uncalibrated(device, site);
            cluster.nodes = p.cluster.nodes;
            p.cluster = cluster;
            groups
                .entry((row.pool.clone(), row.site.clone()))
                .or_default()
                .entry(row.device.clone())
                .or_default()
                .push((row.clone(), p));
        }
    }
    Ok(groups)
}

/// Fits every site of the runs store: `files` are `(display path, text)` of
/// `runs/<site>/*.csv`. Each run is costed with its own layout on its site's node-group figures
/// (latency and switch blocks as the planner sees them) through the planner's step-time
/// function; runs are grouped by site and device. A run the model cannot cost is left out of the
/// fit (the calibration report of the same file says why).
pub fn fit_store(
    files: &[(String, String)],
    catalogue: &Catalogue,
) -> Result<Vec<SiteCalibration>, CalibrationError> {
    let groups = prepare_store(files, catalogue)?;
    let mut serving = fit_serving_store(files, catalogue);
    let mut out = Vec::new();
    for ((pool, site), devices) in groups {
        let mut fitted = BTreeMap::new();
        for (device, runs) in devices {
            let prepared: Vec<&Prepared> = runs.iter().map(|(_, p)| p).collect();
            let result = fit(&prepared);
            let mut run_ids: Vec<String> = runs.iter().map(|(r, _)| r.run_id.clone()).collect();
            run_ids.sort();
            let mut dates: Vec<&str> = runs.iter().map(|(r, _)| r.date.as_str()).collect();
            dates.sort_unstable();
            fitted.insert(
                device,
                DeviceCalibration {
                    runs: u32::try_from(result.runs).unwrap_or(u32::MAX),
                    run_ids,
                    first_run: dates.first().copied().unwrap_or("").to_string(),
                    last_run: dates.last().copied().unwrap_or("").to_string(),
                    fitted: result.fitted.iter().map(|s| (*s).to_string()).collect(),
                    gemm: round4(result.factors.gemm),
                    scale_out: round4(result.factors.scale_out),
                    scale_up: round4(result.factors.scale_up),
                    fixed_s: round4(result.factors.fixed_s),
                    attention: round4(result.factors.attention),
                    throughput_uncertainty: round4(result.uncertainty),
                    median_abs_error_pct: (result.median_abs_error_pct * 100.0).round() / 100.0,
                },
            );
        }
        let engines = serving.remove(&(pool.clone(), site.clone()));
        out.push(SiteCalibration {
            pool,
            site,
            devices: fitted,
            serving: engines.unwrap_or_default(),
        });
    }
    // Sites with serving runs only.
    for ((pool, site), engines) in serving {
        out.push(SiteCalibration {
            pool,
            site,
            devices: BTreeMap::new(),
            serving: engines,
        });
    }
    out.sort_by(|a, b| (&a.pool, &a.site).cmp(&(&b.pool, &b.site)));
    Ok(out)
}

/// The engine efficiency of every (pool, site, engine) with serving runs in the store, fitted
/// from the shipped serving constants on the runs the serving model can cost.
fn fit_serving_store(
    files: &[(String, String)],
    catalogue: &Catalogue,
) -> BTreeMap<(String, String), BTreeMap<String, EngineCalibration>> {
    use super::serving::efficiency::{fit_engine, prepare_store_rows};
    use crate::serve::ServeFitted;
    let lookup = |id: &str| catalogue.device(id).cloned();
    let mut runs: BTreeMap<(String, String, String), Vec<_>> = BTreeMap::new();
    for (_, text) in files
        .iter()
        .filter(|(_, t)| crate::runs::store::serving::is_file(t))
    {
        for (row, prepared) in prepare_store_rows(text, &lookup) {
            runs.entry((row.pool.clone(), row.site.clone(), row.engine.clone()))
                .or_default()
                .push((row, prepared));
        }
    }
    let mut out: BTreeMap<(String, String), BTreeMap<String, EngineCalibration>> = BTreeMap::new();
    for ((pool, site, engine), rows) in runs {
        let prepared: Vec<_> = rows.iter().map(|(_, p)| p).collect();
        let result = fit_engine(&prepared, &ServeFitted::SHIPPED);
        let mut run_ids: Vec<String> = rows.iter().map(|(r, _)| r.run_id.clone()).collect();
        run_ids.sort();
        let mut dates: Vec<&str> = rows.iter().map(|(r, _)| r.date.as_str()).collect();
        dates.sort_unstable();
        out.entry((pool, site)).or_default().insert(
            engine,
            EngineCalibration {
                runs: u32::try_from(result.runs).unwrap_or(u32::MAX),
                run_ids,
                first_run: dates.first().copied().unwrap_or("").to_string(),
                last_run: dates.last().copied().unwrap_or("").to_string(),
                efficiency: round4(result.efficiency),
                throughput_uncertainty: round4(result.uncertainty),
                median_abs_error_pct: (result.median_abs_error_pct * 100.0).round() / 100.0,
            },
        );
    }
    out
}

/// Rounded to four decimals, as the file writes it, so the catalogue read back plans exactly as
/// the fit's own values.
fn round4(value: f64) -> f64 {
    (value * 1e4).round() / 1e4
}

/// Reads the calibration file `path` and attaches it to its site of `catalogue`, or reports why
/// not at the file's place: unreadable L2001, an unknown pool or site L2010, a device the site
/// does not have L2009, a second file for one site L2011.
pub(crate) fn attach(
    catalogue: &mut Catalogue,
    file: loam_ir::span::FileId,
    path: &str,
    text: &str,
    diags: &mut Vec<loam_ir::diagnostics::Diagnostic>,
) {
    use crate::catalogue::codes;
    use loam_ir::diagnostics::Diagnostic;
    use loam_ir::span::Span;
    // The place of `needle` in the file (its first line when absent).
    let at = |needle: &str| {
        let start = text.find(needle).unwrap_or(0);
        let end = text
            .get(start..)
            .and_then(|rest| rest.find('\n'))
            .map_or(text.len(), |n| start + n);
        Span::new(file, start, end)
    };
    let help = "the file is written by `loam calibrate --fit` from the runs store; fit again \
                rather than editing it (docs/calibration.md)";
    let calibration = match parse(text) {
        Ok(c) => c,
        Err(message) => {
            // At the line of the value the message names (`fixed_s` is -1 …), else the first.
            let field = message
                .split('`')
                .nth(1)
                .map_or(String::new(), |name| format!("{name}:"));
            diags.push(
                Diagnostic::error(
                    codes::INVALID_YAML,
                    format!("{path}: not a site calibration: {message}"),
                    at(&field),
                    "this file",
                )
                .with_help(help),
            );
            return;
        }
    };
    let Some(pool) = catalogue.pools.get_mut(&calibration.pool) else {
        diags.push(
            Diagnostic::error(
                codes::UNKNOWN_SITE,
                format!("unknown pool `{}`", calibration.pool),
                at("pool:"),
                "this pool",
            )
            .with_help(help),
        );
        return;
    };
    let Some(site) = pool
        .sites
        .iter_mut()
        .find(|s| s.name.value == calibration.site)
    else {
        diags.push(
            Diagnostic::error(
                codes::UNKNOWN_SITE,
                format!(
                    "pool `{}` has no site `{}`",
                    calibration.pool, calibration.site
                ),
                at("site:"),
                "this site",
            )
            .with_help(help),
        );
        return;
    };
    let mut ok = true;
    for device in calibration.devices.keys() {
        if site.devices_of(device).1 == 0 {
            ok = false;
            diags.push(
                Diagnostic::error(
                    codes::UNKNOWN_DEVICE,
                    format!("site `{}` has no {device}", calibration.site),
                    at(&format!("  {device}:")),
                    "this device",
                )
                .with_help(help),
            );
        }
    }
    for (engine, e) in &calibration.serving {
        if loam_ir::types::Engine::from_keyword(engine).is_none() {
            ok = false;
            diags.push(
                Diagnostic::error(
                    codes::WRONG_TYPE,
                    format!(
                        "unknown serving engine `{engine}` (expected one of {:?})",
                        loam_ir::types::Engine::keywords()
                    ),
                    at(&format!("  {engine}:")),
                    "this engine",
                )
                .with_help(help),
            );
        }
        let (lo, hi) = super::serving::efficiency::EFFICIENCY_RANGE;
        if !(e.efficiency >= lo && e.efficiency <= hi) {
            ok = false;
            diags.push(
                Diagnostic::error(
                    codes::OUT_OF_RANGE,
                    format!(
                        "serving {engine}: `efficiency` is {}, expected a factor between {lo} \
                         and {hi}",
                        e.efficiency
                    ),
                    at(&format!("  {engine}:")),
                    "this engine",
                )
                .with_help(help),
            );
        }
    }
    if site.calibration.is_some() {
        diags.push(
            Diagnostic::error(
                codes::DUPLICATE_NAME,
                format!("a second calibration of site `{}`", calibration.site),
                at("site:"),
                "one file per site",
            )
            .with_help(help),
        );
        return;
    }
    if ok {
        site.calibration = Some(calibration);
    }
}

#[cfg(test)]
mod tests;
