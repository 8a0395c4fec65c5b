//! `.loamignore`: the spec files a folder search leaves out, in gitignore syntax, matched by the
//! `ignore` crate's gitignore matcher (the one ripgrep uses).
//!
//! One file applies to a search: for the file-system commands the nearest `.loamignore` from
//! the current folder up to the root of its git work tree ([`LoamIgnore::discover`]); for
//! `loam diff` the one at the root of each revision's tree (read by `gitops::repo`). Its
//! patterns are relative to the folder that holds it. Files named on the command line are
//! always read; the rules only decide what a folder search finds.

use super::{IoError, display, notes, read_spec};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::path::{Path, PathBuf};

/// The ignore file's name.
pub const FILE_NAME: &str = ".loamignore";

/// The rules of one `.loamignore` file (or none).
#[derive(Debug, Clone)]
pub struct LoamIgnore {
    /// The folder holding the file, canonical: the patterns are relative to it. `None` when no
    /// file applies.
    root: Option<PathBuf>,
    matcher: Gitignore,
}

impl LoamIgnore {
    /// No rules: nothing is ignored.
    pub fn none() -> LoamIgnore {
        LoamIgnore {
            root: None,
            matcher: Gitignore::empty(),
        }
    }

    /// Parses the text of an ignore file. `root` is the folder holding it (`None` when the rules
    /// are only matched against paths already relative to their folder, as in a git tree);
    /// `name` says where the file is in error messages (`.loamignore`, `.loamignore at main`).
    /// A line that is not a valid pattern is an error naming the line; so is a file that is not
    /// UTF-8.
    pub fn parse(root: Option<PathBuf>, name: &str, bytes: &[u8]) -> Result<LoamIgnore, IoError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| IoError(format!("`{name}` is not UTF-8 text")))?;
        let mut builder = GitignoreBuilder::new("");
        for (number, line) in text.lines().enumerate() {
            builder
                .add_line(None, line.strip_suffix('\r').unwrap_or(line))
                .map_err(|e| {
                    IoError(format!(
                        "`{name}` line {}: `{}` is not a valid pattern: {}",
                        number + 1,
                        line.trim_end(),
                        reason(&e)
                    ))
                })?;
        }
        let matcher = builder
            .build()
            .map_err(|e| IoError(format!("`{name}`: {}", too_large(text, &e))))?;
        Ok(LoamIgnore { root, matcher })
    }

    /// The `.loamignore` that applies to a search run from folder `cwd`: the nearest one in
    /// `cwd` or a parent folder, up to and including the root of the git work tree holding
    /// `cwd` (the nearest folder with a `.git` entry); outside a git work tree only `cwd`'s own.
    /// No file: no rules.
    pub fn discover(cwd: &Path) -> Result<LoamIgnore, IoError> {
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let in_work_tree = cwd.ancestors().any(|dir| dir.join(".git").exists());
        for dir in cwd.ancestors() {
            if let Some(rules) = LoamIgnore::read_in(dir)? {
                return Ok(rules);
            }
            if !in_work_tree || dir.join(".git").exists() {
                break;
            }
        }
        Ok(LoamIgnore::none())
    }

    /// The rules of the `.loamignore` in folder `dir`, if it holds one as a regular file. A
    /// symbolic link there is skipped with a note and never read: its target could be any file,
    /// and a pattern error would echo its lines.
    pub fn read_in(dir: &Path) -> Result<Option<LoamIgnore>, IoError> {
        let file = dir.join(FILE_NAME);
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            return Ok(None);
        };
        if meta.file_type().is_symlink() {
            notes::skipped(
                &display(&file),
                "a symbolic link; loam reads `.loamignore` only as a regular file",
            );
            return Ok(None);
        }
        if !meta.is_file() {
            return Ok(None);
        }
        let bytes = read_spec(&file)?;
        LoamIgnore::parse(Some(dir.to_path_buf()), &display(&file), &bytes).map(Some)
    }

    /// The folder holding the file, when a file on disk applies.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// Whether the path, relative to the file's folder (`a/b.loam`), is ignored: the last
    /// pattern that matches it decides, a `!pattern` taking it back in. Parent folders are not
    /// looked at: a search does not enter an ignored folder in the first place.
    pub fn is_ignored(&self, relative: &Path, is_dir: bool) -> bool {
        !relative.as_os_str().is_empty() && self.matcher.matched(relative, is_dir).is_ignore()
    }

    /// `path` (relative to the current folder `cwd`, or absolute) relative to the file's
    /// folder; `None` when no file applies or the path is outside its folder.
    pub fn relative_to_root(&self, cwd: &Path, path: &Path) -> Option<PathBuf> {
        let root = self.root.as_deref()?;
        let absolute = cwd.join(path);
        let canonical = absolute.canonicalize().unwrap_or(absolute);
        canonical.strip_prefix(root).ok().map(Path::to_path_buf)
    }
}

/// The message when the patterns parse one by one but the matcher cannot hold them: the first
/// line that is too large on its own, else all of them together (the matcher's automaton has a
/// size limit).
fn too_large(text: &str, e: &ignore::Error) -> String {
    for (number, line) in text.lines().enumerate() {
        let mut alone = GitignoreBuilder::new("");
        let fails = alone
            .add_line(None, line.strip_suffix('\r').unwrap_or(line))
            .is_ok()
            && alone.build().is_err();
        if fails {
            let shown: String = line.trim_end().chars().take(60).collect();
            let more = if line.trim_end().chars().count() > 60 {
                "…"
            } else {
                ""
            };
            return format!(
                "line {}: `{shown}{more}` is too large a pattern for the matcher ({}); simplify it",
                number + 1,
                reason(e)
            );
        }
    }
    format!(
        "its {} lines are too many or too complex together for the matcher ({}); split or simplify them",
        text.lines().count(),
        reason(e)
    )
}

/// The matcher's message without its echo of the pattern.
fn reason(e: &ignore::Error) -> String {
    match e {
        ignore::Error::Glob { err, .. } => err.clone(),
        other => other.to_string(),
    }
}
