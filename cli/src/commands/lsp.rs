//! `loam lsp`: the language server for editors (the `loam-lsp` crate) on standard input and
//! output. This command only reads the catalogue the server checks against, by the CLI's rules.

use crate::catalogue_source::{DEFAULT_DIR, builtin_texts, is_catalogue, read_dir};
use crate::io::IoError;
use std::path::{Path, PathBuf};

/// Runs the server until the editor exits it; exit 0, or 2 when the connection fails.
pub fn run(catalogue_dir: Option<&Path>) -> Result<u8, IoError> {
    let load = |root: Option<&Path>| -> Result<Vec<(String, String)>, String> {
        // Absolute paths, so that go to definition can open the files whatever the editor's
        // current folder.
        let dir: Option<PathBuf> = match (catalogue_dir, root) {
            (Some(dir), _) => Some(std::path::absolute(dir).unwrap_or_else(|_| dir.into())),
            (None, Some(root)) if is_catalogue(&root.join(DEFAULT_DIR)) => {
                Some(root.join(DEFAULT_DIR))
            }
            (None, None) if is_catalogue(Path::new(DEFAULT_DIR)) => {
                std::path::absolute(DEFAULT_DIR).ok()
            }
            (None, _) => None,
        };
        match dir {
            Some(dir) => read_dir(&dir).map_err(|e| e.0),
            None => Ok(builtin_texts()),
        }
    };
    loam_lsp::serve_stdio(&load).map_err(IoError)?;
    Ok(0)
}
