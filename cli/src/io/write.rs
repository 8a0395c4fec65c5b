//! Writing one file atomically and safely: through a temporary file with an unpredictable name,
//! created exclusively (`O_EXCL`) in the target's folder, then renamed over the target. A link
//! planted at a temporary name cannot redirect the write, a reader never sees half a file, and
//! a failed write leaves the target as it was.

use super::{IoError, display};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What to do when the target is a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Refuse: the path must name a regular file or nothing (`report --out`).
    Refuse,
    /// Write to the file the link points to, when that file is inside `root` (canonical):
    /// `loam fmt link.loam` formats the link's target and keeps the link.
    FollowInside,
}

/// Writes `contents` to `path` atomically, refusing to replace a symbolic link. A new file gets
/// the usual mode (0666 less the umask); a replaced file keeps its mode.
pub fn write_atomically(path: &Path, contents: &str) -> Result<(), IoError> {
    write_file(path, contents.as_bytes(), Links::Refuse, None)
}

/// Writes `contents` to `path` atomically; `links` says what a link at `path` means, `root`
/// is the folder a followed link must stay inside ([`Links::FollowInside`]).
pub fn write_file(
    path: &Path,
    contents: &[u8],
    links: Links,
    root: Option<&Path>,
) -> Result<(), IoError> {
    let shown = display(path);
    let target = resolve(path, links, root)?;
    let fail = |e: std::io::Error| IoError(format!("cannot write `{shown}`: {e}"));
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mode = existing_mode(&target);
    let mut tmp = temp_file_in(dir).map_err(fail)?;
    tmp.write_all(contents).map_err(fail)?;
    if let Some(permissions) = mode {
        fs::set_permissions(tmp.path(), permissions).map_err(fail)?;
    }
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(&target).map_err(|e| fail(e.error))?;
    Ok(())
}

/// The file to write for `path`: `path` itself unless it is a link, which is refused or
/// resolved per `links`.
fn resolve(path: &Path, links: Links, root: Option<&Path>) -> Result<PathBuf, IoError> {
    let shown = display(path);
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(path.to_path_buf());
    }
    let target = path.canonicalize().ok();
    let inside = match (links, &target, root) {
        (Links::FollowInside, Some(target), Some(root)) => target.starts_with(root),
        _ => false,
    };
    match target {
        Some(target) if inside && fs::metadata(&target).is_ok_and(|m| m.is_file()) => Ok(target),
        _ if links == Links::Refuse => Err(IoError(format!(
            "cannot write `{shown}`: it is a symbolic link; name a regular file or a new path"
        ))),
        _ => Err(IoError(format!(
            "cannot write `{shown}`: it is a symbolic link to a path outside `{}`; format the file it points to there",
            root.map_or_else(|| ".".to_string(), display)
        ))),
    }
}

/// The permissions of the regular file at `path`, if there is one.
fn existing_mode(path: &Path) -> Option<fs::Permissions> {
    fs::symlink_metadata(path)
        .ok()
        .filter(fs::Metadata::is_file)
        .map(|m| m.permissions())
}

/// A new temporary file in `dir` with a random name, created exclusively, with the mode a new
/// file gets (0666 less the umask; tempfile's default would be 0600).
pub(super) fn temp_file_in(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".loam-write-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

/// The repository `path` belongs to, canonical: the nearest folder above it holding `.git`,
/// else the folder holding `path` (a link there may point below it).
pub fn repository_root(path: &Path) -> PathBuf {
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let folder = folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf());
    folder
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map_or_else(|| folder.clone(), Path::to_path_buf)
}
