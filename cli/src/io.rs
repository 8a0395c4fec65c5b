//! All file-system access of loam: finding spec files, reading them, writing files atomically.
//!
//! The rules every command shares (docs/cli.md, "Files loam reads and writes"):
//! a folder search never leaves the folders it was given (a symbolic link pointing outside is
//! skipped, never read), visits each folder and file once (loops end, a file reached twice is
//! read once), reads regular files only, of at most [`SPEC_SIZE_LIMIT`] bytes, and says on
//! standard error what it skipped ([`notes`]). Every write goes through an unpredictable
//! temporary file created exclusively beside its target, then a rename ([`write`]).

pub mod emit_folder;
mod loamignore;
pub mod notes;
mod read;
mod walk;
pub mod write;

pub use loamignore::{FILE_NAME as IGNORE_FILE, LoamIgnore};
pub use read::{DATA_SIZE_LIMIT, SPEC_SIZE_LIMIT, read, read_spec};
use std::path::Path;
pub use walk::{find_spec_files, find_spec_files_ignoring, list_files};
pub use write::write_atomically;

/// An I/O problem; the CLI reports it and exits 2.
#[derive(Debug)]
pub struct IoError(pub String);

impl std::fmt::Display for IoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A path as shown to users: as given, with `/` separators and no leading `./`.
pub fn display(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    text.strip_prefix("./").map(str::to_string).unwrap_or(text)
}

/// The error for a command whose paths hold no spec file, naming what was searched: a CI gate
/// on a mistyped or emptied folder must fail, not pass on nothing (exit 1).
pub fn no_specs_found(paths: &[std::path::PathBuf]) -> String {
    let searched = if paths.is_empty() {
        "`.`".to_string()
    } else {
        paths
            .iter()
            .map(|p| format!("`{}`", display(p)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "error: no spec files in {searched}: a folder is searched for `*.loam` files below it \
         (hidden folders, `target`, nested git repositories and what `.loamignore` lists are \
         skipped); name a `.loam` file or a folder that holds some\n"
    )
}

/// Whether `path` is a folder that exists.
pub fn is_dir(path: &Path) -> bool {
    path.is_dir()
}
