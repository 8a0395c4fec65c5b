//! Where a plan cache may live without a key: not where the code under review can write.
//!
//! A pull request or a branch writes every file of its checkout, so a cache folder inside a git
//! work tree, or inside a folder being planned, holds whatever the branch committed there; an
//! unkeyed entry is only checksummed, and anyone can recompute a checksum. Without
//! `LOAM_CACHE_KEY` such a folder is refused (review finding M7).

use std::path::{Component, Path, PathBuf};

/// Why `dir` is no place for an unkeyed plan cache, when it is not: it lies inside a git work
/// tree (a folder with a `.git` entry above it), or inside one of `planned` (the files and
/// folders the command reads specs from; a file counts by its folder). Both the path as given
/// and the path with its symlinks resolved are checked, so neither a link out of the checkout
/// nor a link into it gets past.
pub fn refusal(dir: &Path, planned: &[PathBuf]) -> Option<String> {
    let cwd = std::env::current_dir().ok()?;
    let lexical = normal(&cwd.join(dir));
    let resolved = resolve(&lexical);
    for path in [&lexical, &resolved] {
        if let Some(tree) = path
            .ancestors()
            .find(|a| a.join(".git").symlink_metadata().is_ok())
        {
            return Some(format!(
                "it lies inside the git work tree `{}`",
                tree.display()
            ));
        }
    }
    let default = [PathBuf::from(".")];
    let planned = if planned.is_empty() {
        &default[..]
    } else {
        planned
    };
    for root in planned {
        let (folder, shown) = if root.is_file() {
            let parent = root
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            (parent, format!("the folder of `{}`", root.display()))
        } else {
            (root.clone(), format!("`{}`", root.display()))
        };
        let folder = normal(&cwd.join(folder));
        let folder_resolved = resolve(&folder);
        let inside = [&lexical, &resolved]
            .iter()
            .any(|p| p.starts_with(&folder) || p.starts_with(&folder_resolved));
        if inside {
            return Some(format!("it lies inside {shown}, which is being planned"));
        }
    }
    None
}

/// `path` without `.` and with `..` applied, as text (no file system access).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` with the symlinks of its longest existing ancestor resolved (the cache folder need
/// not exist yet).
fn resolve(path: &Path) -> PathBuf {
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}
