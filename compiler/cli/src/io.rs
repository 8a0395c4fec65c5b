//! All file-system access of loam: finding spec files, reading them, writing files atomically.

use std::fs;
use std::path::{Path, PathBuf};

/// An I/O problem; the CLI reports it and exits 2.
#[derive(Debug)]
pub struct IoError(pub String);

impl std::fmt::Display for IoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The spec files named by `paths`: files as given, folders searched recursively for `*.loam`
/// (hidden folders and `target` skipped). Sorted and deduplicated, so output order is stable.
pub fn find_spec_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, IoError> {
    let defaults = [PathBuf::from(".")];
    let paths = if paths.is_empty() {
        &defaults[..]
    } else {
        paths
    };
    let mut found = Vec::new();
    for path in paths {
        let meta = fs::metadata(path)
            .map_err(|e| IoError(format!("cannot read `{}`: {e}", display(path))))?;
        if meta.is_dir() {
            walk(path, &mut found)?;
        } else {
            found.push(path.clone());
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), IoError> {
    let entries =
        fs::read_dir(dir).map_err(|e| IoError(format!("cannot read `{}`: {e}", display(dir))))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                walk(&path, found)?;
            }
        } else if name.ends_with(".loam") {
            found.push(path);
        }
    }
    Ok(())
}

/// Reads a file's bytes.
pub fn read(path: &Path) -> Result<Vec<u8>, IoError> {
    fs::read(path).map_err(|e| IoError(format!("cannot read `{}`: {e}", display(path))))
}

/// Writes `contents` to `path` through a temporary file in the same folder and a rename, so a
/// reader never sees half a file.
pub fn write_atomically(path: &Path, contents: &str) -> Result<(), IoError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = dir.join(format!(".{name}.loam-tmp"));
    fs::write(&tmp, contents)
        .and_then(|()| fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = fs::remove_file(&tmp);
            IoError(format!("cannot write `{}`: {e}", display(path)))
        })
}

/// A path as shown to users: as given, with `/` separators and no leading `./`.
pub fn display(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    text.strip_prefix("./").map(str::to_string).unwrap_or(text)
}

/// Whether `path` is a folder that exists.
pub fn is_dir(path: &Path) -> bool {
    path.is_dir()
}

/// The files directly in `dir` whose extension is one of `extensions`, sorted.
pub fn list_files(dir: &Path, extensions: &[&str]) -> Result<Vec<PathBuf>, IoError> {
    let entries =
        fs::read_dir(dir).map_err(|e| IoError(format!("cannot read `{}`: {e}", display(dir))))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e))
        })
        .collect();
    found.sort();
    Ok(found)
}
