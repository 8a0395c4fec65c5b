//! Where the catalogue comes from: `--catalogue DIR`, else `./specs` when that folder is a
//! catalogue (it holds `devices/` or `pools/`), else the catalogue built into loam.
//!
//! A `./specs` folder without `devices/` or `pools/` is somebody's job specs, not a catalogue,
//! and is never taken for one.

use crate::io::{self, IoError};
use loam_compiler::catalogue;
use std::path::{Path, PathBuf};

/// The folder used when `--catalogue` is not given, if it is a catalogue.
pub const DEFAULT_DIR: &str = "specs";

/// The catalogue kinds of file, each in its own folder (`calibration/`: each site's factors
/// fitted to its measured runs by `loam calibrate --fit`).
const FOLDERS: [&str; 4] = ["devices", "pools", "vendors", "calibration"];

/// The folders that make a folder a catalogue (a `vendors/` folder alone does not).
const MARKERS: [&str; 2] = ["devices", "pools"];

/// Whether `dir` holds a catalogue: a `devices/` or `pools/` folder.
pub fn is_catalogue(dir: &Path) -> bool {
    MARKERS.iter().any(|sub| io::is_dir(&dir.join(sub)))
}

/// The catalogue's `(display path, text)` files: from the folder given, else `./specs` when it
/// is a catalogue, else the built-in one.
pub fn catalogue_texts(cli_catalogue: Option<&Path>) -> Result<Vec<(String, String)>, IoError> {
    let default = Path::new(DEFAULT_DIR);
    match cli_catalogue {
        Some(dir) => read_dir(dir),
        None if is_catalogue(default) => read_dir(default),
        None => Ok(builtin_texts()),
    }
}

/// The built-in catalogue's files.
pub fn builtin_texts() -> Vec<(String, String)> {
    catalogue::builtin_sources()
        .into_iter()
        .map(|(path, text)| (path.to_string(), text.to_string()))
        .collect()
}

/// `(display path, text)` of `dir/devices/*.yaml`, `dir/pools/*.yaml` and `dir/vendors/*.yaml`
/// (and `.yml`), sorted.
pub fn read_dir(dir: &Path) -> Result<Vec<(String, String)>, IoError> {
    if !io::is_dir(dir) {
        return Err(IoError(format!(
            "cannot read catalogue `{}`: not a folder",
            io::display(dir)
        )));
    }
    if !is_catalogue(dir) {
        return Err(IoError(format!(
            "`{}` is not a catalogue: it has no `devices/` or `pools/` folder",
            io::display(dir)
        )));
    }
    // Links are followed only to files inside the catalogue folder: a catalogue error echoes
    // the file's lines, which must never be another file's (a secret).
    let root = dir
        .canonicalize()
        .map_err(|e| IoError(format!("cannot read catalogue `{}`: {e}", io::display(dir))))?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for sub in FOLDERS {
        let folder = dir.join(sub);
        if io::is_dir(&folder) {
            paths.extend(io::list_files(&folder, &root, &["yaml", "yml"])?);
        }
    }
    paths.extend(runs_store_files(dir, &root)?);
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let bytes = io::read_spec(path)?;
            Ok((
                io::display(path),
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        })
        .collect()
}

/// The runs store's files, `dir/runs/<site>/*.csv` (docs/calibration.md): read with the
/// catalogue so `loam check` checks each line against it. A site folder that is a link is not
/// entered (the store lives in the repository, never behind a link).
fn runs_store_files(dir: &Path, root: &Path) -> Result<Vec<PathBuf>, IoError> {
    let runs = dir.join("runs");
    let is_real_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if !is_real_dir(&runs) {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(&runs)
        .map_err(|e| IoError(format!("cannot read `{}`: {e}", io::display(&runs))))?;
    let mut sites: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_real_dir(p))
        .collect();
    sites.sort();
    let mut files = Vec::new();
    for site in sites {
        files.extend(io::list_files(&site, root, &["csv"])?);
    }
    Ok(files)
}
