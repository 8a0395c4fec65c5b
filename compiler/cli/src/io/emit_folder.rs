//! The output folder of `loam emit`: written whole into a temporary folder beside the target,
//! then put in its place, and only over a folder `loam emit` wrote before.

use super::{IoError, display};
use loam_backends::Manifest;
use std::fs;
use std::path::{Path, PathBuf};

/// The file that marks a folder as written by `loam emit`; only such folders are replaced.
const MARKER: &str = ".loam-emit";

/// Writes `manifests` as the whole contents of `dir`: into a temporary folder beside it first,
/// then renamed into place. An existing `dir` is replaced only when empty or written by
/// `loam emit` before (it holds the marker file).
pub fn write_dir(dir: &Path, manifests: &[Manifest]) -> Result<(), IoError> {
    let shown = display(dir);
    let fail = |what: &str, e: std::io::Error| IoError(format!("cannot {what} `{shown}`: {e}"));
    if dir.exists() {
        if !dir.is_dir() {
            return Err(IoError(format!("`{shown}` exists and is not a folder")));
        }
        let empty = fs::read_dir(dir)
            .map_err(|e| fail("read", e))?
            .next()
            .is_none();
        if !empty && !dir.join(MARKER).is_file() {
            return Err(IoError(format!(
                "`{shown}` holds files that `loam emit` did not write; choose an empty or new folder"
            )));
        }
    }
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| fail("create the parent of", e))?;
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("out")
        .to_string();
    let pid = std::process::id();
    let tmp = parent.join(format!(".{name}.loam-tmp-{pid}"));
    let old = parent.join(format!(".{name}.loam-old-{pid}"));
    let result = fill(&tmp, manifests).and_then(|()| swap(dir, &tmp, &old));
    if result.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result.map_err(|e| fail("write", e))
}

/// Writes every manifest under `tmp` (created fresh), plus the marker.
fn fill(tmp: &Path, manifests: &[Manifest]) -> std::io::Result<()> {
    if tmp.exists() {
        fs::remove_dir_all(tmp)?;
    }
    fs::create_dir(tmp)?;
    fs::write(
        tmp.join(MARKER),
        "written by `loam emit`; the whole folder is replaced on the next emit\n",
    )?;
    for m in manifests {
        let path: PathBuf = m
            .path
            .split('/')
            .fold(tmp.to_path_buf(), |p, part| p.join(part));
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&path, &m.contents)?;
        if m.path.ends_with(".sh") || m.path.ends_with(".sbatch") {
            set_executable(&path)?;
        }
    }
    Ok(())
}

/// Puts `tmp` in the place of `dir`, moving an existing `dir` aside first and removing it after.
fn swap(dir: &Path, tmp: &Path, old: &Path) -> std::io::Result<()> {
    if dir.exists() {
        fs::rename(dir, old)?;
        if let Err(e) = fs::rename(tmp, dir) {
            let _ = fs::rename(old, dir);
            return Err(e);
        }
        fs::remove_dir_all(old)
    } else {
        fs::rename(tmp, dir)
    }
}

#[cfg(unix)]
fn set_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path) -> std::io::Result<()> {
    Ok(())
}
