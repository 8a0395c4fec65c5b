//! Where the catalogue comes from: `--catalogue DIR`, else `./specs` when it exists, else the
//! catalogue built into loam. Its YAML texts go into the run's [`SourceMap`], so catalogue
//! errors render with their YAML line and spec diagnostics can point into the catalogue.

use crate::io::{self, IoError};
use loam_compiler::catalogue::{self, Catalogue};
use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::span::{FileId, SourceMap};
use std::path::{Path, PathBuf};

/// The folder used when `--catalogue` is not given, if it exists in the current directory.
pub const DEFAULT_DIR: &str = "specs";

/// Loads the catalogue: from `cli_catalogue` when given, else from `./specs` when that folder
/// exists, else the built-in one. Every YAML text is added to `sources`.
///
/// Returns the catalogue when it loaded without errors, and its diagnostics (sorted). A folder
/// that cannot be read, or holds neither `devices/` nor `pools/`, is an I/O error.
pub fn load_catalogue(
    cli_catalogue: Option<&Path>,
    sources: &mut SourceMap,
) -> Result<(Option<Catalogue>, Vec<Diagnostic>), IoError> {
    let texts = match cli_catalogue {
        Some(dir) => read_dir(dir)?,
        None if io::is_dir(Path::new(DEFAULT_DIR)) => read_dir(Path::new(DEFAULT_DIR))?,
        None => catalogue::builtin_sources()
            .into_iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect(),
    };
    Ok(load_texts(texts, sources))
}

/// Loads a catalogue from `(display path, text)` pairs, adding each text to `sources`. Files
/// are told apart by their folder (`devices/`, `pools/`).
pub fn load_texts(
    texts: Vec<(String, String)>,
    sources: &mut SourceMap,
) -> (Option<Catalogue>, Vec<Diagnostic>) {
    let ids: Vec<(FileId, String, String)> = texts
        .into_iter()
        .map(|(path, text)| (sources.add(path.clone(), text.clone()), path, text))
        .collect();
    let triples: Vec<(FileId, &str, &str)> = ids
        .iter()
        .map(|(id, path, text)| (*id, path.as_str(), text.as_str()))
        .collect();
    let (catalogue, mut diagnostics) = catalogue::load(&triples);
    diagnostics.sort_by_key(Diagnostic::sort_key);
    let has_errors = diagnostics.iter().any(Diagnostic::is_error);
    (catalogue.filter(|_| !has_errors), diagnostics)
}

/// `(display path, text)` of `dir/devices/*.yaml` and `dir/pools/*.yaml` (and `.yml`), sorted.
fn read_dir(dir: &Path) -> Result<Vec<(String, String)>, IoError> {
    if !io::is_dir(dir) {
        return Err(IoError(format!(
            "cannot read catalogue `{}`: not a folder",
            io::display(dir)
        )));
    }
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut folders = 0;
    for sub in ["devices", "pools"] {
        let folder = dir.join(sub);
        if io::is_dir(&folder) {
            folders += 1;
            paths.extend(io::list_files(&folder, &["yaml", "yml"])?);
        }
    }
    if folders == 0 {
        return Err(IoError(format!(
            "`{}` is not a catalogue: it has no `devices/` or `pools/` folder",
            io::display(dir)
        )));
    }
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let bytes = io::read(path)?;
            Ok((
                io::display(path),
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        })
        .collect()
}
