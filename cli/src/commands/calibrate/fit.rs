//! `loam calibrate --fit`: fits the runs store of the catalogue (`<catalogue>/runs/<site>/*.csv`)
//! per site and device and writes each site's factors to `<catalogue>/calibration/<pool>-<site>.yaml`
//! (docs/calibration.md), which the catalogue reads back and plans at that site apply.

use crate::Context;
use crate::args::OutputFormat;
use crate::catalogue_source::{DEFAULT_DIR, catalogue_texts};
use crate::io::{self, IoError};
use loam_compiler::calibrate::site::{fit_store, to_yaml};
use loam_compiler::catalogue::Catalogue;
use loam_compiler::runs::store::is_store_path;
use std::fmt::Write as _;
use std::path::Path;

/// Fits and writes; exit 0 when written (or nothing to fit), 1 when the store cannot be fitted.
pub fn run(
    catalogue: &Catalogue,
    catalogue_dir: Option<&Path>,
    format: OutputFormat,
    cx: &mut Context<'_>,
) -> Result<u8, IoError> {
    let store: Vec<(String, String)> = catalogue_texts(catalogue_dir)?
        .into_iter()
        .filter(|(path, _)| is_store_path(path))
        .collect();
    if store.is_empty() {
        cx.eprint(
            "no runs in the store (`<catalogue>/runs/<site>/*.csv`): append some with \
             `loam runs ingest LOG --plan PLAN.json --append`\n",
        );
        return Ok(1);
    }
    let sites = match fit_store(&store, catalogue) {
        Ok(sites) => sites,
        Err(e) => {
            cx.eprint(&format!("error: the runs store: {e}\n"));
            return Ok(1);
        }
    };
    let dir = catalogue_dir
        .unwrap_or(Path::new(DEFAULT_DIR))
        .join("calibration");
    // The calibration folder must be a real folder: a link could lead the write anywhere.
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(IoError(format!(
            "will not write into `{}`: it is a symbolic link",
            io::display(&dir)
        )));
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| IoError(format!("cannot create `{}`: {e}", io::display(&dir))))?;
    let mut text = format!(
        "{:<10} {:<10} {:<12} {:>5} {:<16} {:>7} {:>9} {:>8} {:>12} {:>13}\n",
        "pool",
        "site",
        "device",
        "runs",
        "fitted",
        "gemm",
        "scale_out",
        "scale_up",
        "uncertainty",
        "median |err|"
    );
    let mut written = Vec::new();
    for site in &sites {
        let file = dir.join(format!("{}-{}.yaml", site.pool, site.site));
        io::write_atomically(&file, &to_yaml(site))?;
        written.push(io::display(&file));
        for (device, d) in &site.devices {
            let _ = writeln!(
                text,
                "{:<10} {:<10} {:<12} {:>5} {:<16} {:>7.4} {:>9.4} {:>8.4} {:>11.1}% {:>12.1}%",
                site.pool,
                site.site,
                device,
                d.runs,
                d.fitted.join("+"),
                d.gemm,
                d.scale_out,
                d.scale_up,
                100.0 * d.throughput_uncertainty,
                d.median_abs_error_pct
            );
        }
        // A serving engine's efficiency in the `gemm` column: it multiplies the GEMM share
        // (and the bandwidth share) its kernels reach.
        for (engine, e) in &site.serving {
            let _ = writeln!(
                text,
                "{:<10} {:<10} {:<12} {:>5} {:<16} {:>7.4} {:>9} {:>8} {:>11.1}% {:>12.1}%",
                site.pool,
                site.site,
                format!("serving {engine}"),
                e.runs,
                "efficiency",
                e.efficiency,
                "",
                "",
                100.0 * e.throughput_uncertainty,
                e.median_abs_error_pct
            );
        }
    }
    match format {
        OutputFormat::Json => cx.print_json(&serde_json::json!({
            "sites": sites, "written": written
        })),
        OutputFormat::Text => {
            for file in &written {
                let _ = writeln!(text, "wrote {file}");
            }
            cx.print(&text);
        }
    }
    Ok(0)
}
