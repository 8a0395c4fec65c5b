//! All file-system access of loam: finding spec files, reading them, writing files atomically.

pub mod emit_folder;
mod loamignore;

pub use loamignore::{FILE_NAME as IGNORE_FILE, LoamIgnore};
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
/// (hidden folders, `target` and what the `.loamignore` that applies from the current folder
/// leaves out are skipped; see [`LoamIgnore::discover`]). Sorted and deduplicated, so output
/// order is stable.
pub fn find_spec_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, IoError> {
    let cwd = std::env::current_dir()
        .map_err(|e| IoError(format!("cannot read the current folder: {e}")))?;
    let ignore = LoamIgnore::discover(&cwd)?;
    find_spec_files_ignoring(paths, &cwd, &ignore)
}

/// [`find_spec_files`] with the ignore rules given: `paths` are relative to `cwd` (or absolute).
/// A file named in `paths` is always read, and so is a folder named in `paths` searched, even
/// when the rules match it; below it, an ignored folder is not entered and an ignored file is
/// left out.
pub fn find_spec_files_ignoring(
    paths: &[PathBuf],
    cwd: &Path,
    ignore: &LoamIgnore,
) -> Result<Vec<PathBuf>, IoError> {
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
            let relative = ignore.relative_to_root(cwd, path);
            walk(path, relative.as_deref(), ignore, &mut found)?;
        } else {
            found.push(path.clone());
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// Searches `dir`; `relative` is `dir` relative to the ignore file's folder (`None` when the
/// rules do not reach it).
fn walk(
    dir: &Path,
    relative: Option<&Path>,
    ignore: &LoamIgnore,
    found: &mut Vec<PathBuf>,
) -> Result<(), IoError> {
    let entries =
        fs::read_dir(dir).map_err(|e| IoError(format!("cannot read `{}`: {e}", display(dir))))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let Some(name) = path.file_name() else {
            continue;
        };
        let child = relative.map(|r| r.join(name));
        let name = name.to_str().unwrap_or_default();
        let is_dir = path.is_dir();
        if child
            .as_deref()
            .is_some_and(|c| ignore.is_ignored(c, is_dir))
        {
            continue;
        }
        if is_dir {
            if !name.starts_with('.') && name != "target" {
                walk(&path, child.as_deref(), ignore, found)?;
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
