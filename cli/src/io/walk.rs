//! The folder search for spec files (and the catalogue's file listing): confined to the folders
//! it was given, each folder and file visited once, regular files only, skips said aloud.

use super::read::{SPEC_SIZE_LIMIT, file_id, not_regular};
use super::{IoError, LoamIgnore, display, notes};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The spec files named by `paths`: files as given, folders searched recursively for `*.loam`
/// (hidden folders, `target`, nested git repositories and what the `.loamignore` that applies
/// from the current folder leaves out are skipped; see [`LoamIgnore::discover`]). Sorted, each
/// file once, so output order is stable.
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
///
/// Each folder named is a root the search never leaves: a symbolic link below it is followed
/// only when it points inside that root, and each folder and file is visited once (by device
/// and inode), so link loops end and a file reached by two paths is read once (by its real
/// path when it has one in the search). FIFOs, devices, sockets, links that point nowhere and
/// files over [`SPEC_SIZE_LIMIT`] are skipped with a note ([`notes`]).
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
    let mut search = Search {
        ignore,
        root: PathBuf::new(),
        root_shown: String::new(),
        folders: BTreeSet::new(),
        files: BTreeMap::new(),
    };
    for path in paths {
        let meta = fs::metadata(path)
            .map_err(|e| IoError(format!("cannot read `{}`: {e}", display(path))))?;
        if meta.is_dir() {
            search.root = path
                .canonicalize()
                .map_err(|e| IoError(format!("cannot read `{}`: {e}", display(path))))?;
            search.root_shown = display(path);
            let relative = ignore.relative_to_root(cwd, path);
            if search.folders.insert(file_id(&meta)) {
                search.walk(path, relative.as_deref())?;
            }
        } else {
            // Named on the command line: read whatever it is (the read refuses what is not a
            // regular file), once.
            search.add(path.clone(), &meta, false);
        }
    }
    let mut found: Vec<PathBuf> = search.files.into_values().map(|(path, _)| path).collect();
    found.sort();
    Ok(found)
}

/// One search's state.
struct Search<'a> {
    ignore: &'a LoamIgnore,
    /// The canonical folder being searched; links out of it are not followed.
    root: PathBuf,
    /// The root as named on the command line, for notes.
    root_shown: String,
    /// The folders entered, by `(device, inode)`.
    folders: BTreeSet<(u64, u64)>,
    /// The files found, by `(device, inode)`: the path found and whether it went through a link.
    files: BTreeMap<(u64, u64), (PathBuf, bool)>,
}

impl Search<'_> {
    /// Keeps `path` unless its file was found already; a path without links wins over one
    /// through a link.
    fn add(&mut self, path: PathBuf, meta: &fs::Metadata, via_link: bool) {
        let id = file_id(meta);
        match self.files.get(&id) {
            Some((_, true)) if !via_link => {
                self.files.insert(id, (path, via_link));
            }
            Some(_) => {}
            None => {
                self.files.insert(id, (path, via_link));
            }
        }
    }

    /// Searches `dir`; `relative` is `dir` relative to the ignore file's folder (`None` when
    /// the rules do not reach it).
    fn walk(&mut self, dir: &Path, relative: Option<&Path>) -> Result<(), IoError> {
        let entries = fs::read_dir(dir)
            .map_err(|e| IoError(format!("cannot read `{}`: {e}", display(dir))))?;
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let Some(name) = path.file_name() else {
                continue;
            };
            let child = relative.map(|r| r.join(name));
            let name = name.to_str().unwrap_or_default();
            let Ok(own) = fs::symlink_metadata(&path) else {
                continue;
            };
            let is_link = own.file_type().is_symlink();
            let meta = if is_link {
                // Only a link whose target is inside the root is followed; the target's text
                // is never read otherwise (it could be `/proc/self/environ`, a secret file).
                if !name.ends_with(".loam") && skipped_folder(name) {
                    continue;
                }
                match path.canonicalize() {
                    Ok(target) if target.starts_with(&self.root) => match fs::metadata(&path) {
                        Ok(meta) => meta,
                        Err(_) => continue,
                    },
                    Ok(_) => {
                        notes::skipped(
                            &display(&path),
                            &format!("a symbolic link to a path outside `{}`", self.root_shown),
                        );
                        continue;
                    }
                    Err(e) => {
                        if name.ends_with(".loam") {
                            notes::skipped(&display(&path), &format!("a broken link: {e}"));
                        }
                        continue;
                    }
                }
            } else {
                own
            };
            let is_dir = meta.is_dir();
            if child
                .as_deref()
                .is_some_and(|c| self.ignore.is_ignored(c, is_dir))
            {
                continue;
            }
            if is_dir {
                // A folder with its own `.git` is another repository (a submodule): its specs
                // are not this one's, as in a revision's tree.
                if skipped_folder(name) || path.join(".git").exists() {
                    continue;
                }
                if self.folders.insert(file_id(&meta)) {
                    self.walk(&path, child.as_deref())?;
                }
            } else if name.ends_with(".loam") {
                if !meta.is_file() {
                    notes::skipped(&display(&path), not_regular(&meta));
                } else if meta.len() > SPEC_SIZE_LIMIT {
                    notes::skipped(
                        &display(&path),
                        &format!(
                            "larger than {} MiB, the most loam reads",
                            SPEC_SIZE_LIMIT >> 20
                        ),
                    );
                } else {
                    self.add(path, &meta, is_link);
                }
            }
        }
        Ok(())
    }
}

/// Folders a search does not enter: hidden ones and build output.
fn skipped_folder(name: &str) -> bool {
    name.starts_with('.') || name == "target"
}

/// The regular files directly in `dir` whose extension is one of `extensions`, sorted. A link
/// is followed only to a regular file inside `root` (canonical); others are skipped with a
/// note, and so is a FIFO or device with a wanted extension.
pub fn list_files(dir: &Path, root: &Path, extensions: &[&str]) -> Result<Vec<PathBuf>, IoError> {
    let entries =
        fs::read_dir(dir).map_err(|e| IoError(format!("cannot read `{}`: {e}", display(dir))))?;
    let mut found = Vec::new();
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let wanted = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| extensions.contains(&e));
        let Ok(own) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !wanted || own.is_dir() {
            continue;
        }
        if own.file_type().is_symlink() {
            let inside = path.canonicalize().is_ok_and(|t| t.starts_with(root));
            if !inside {
                notes::skipped(
                    &display(&path),
                    &format!(
                        "a symbolic link to a path outside `{}` (or nowhere)",
                        display(root)
                    ),
                );
                continue;
            }
        }
        match fs::metadata(&path) {
            Ok(meta) if meta.is_file() => found.push(path),
            Ok(meta) => notes::skipped(&display(&path), not_regular(&meta)),
            Err(_) => {}
        }
    }
    found.sort();
    Ok(found)
}
