//! The output folder of `loam emit`: written whole into a temporary folder beside the target,
//! then put in its place, and only over a folder that `loam emit` wrote and nobody changed since.
//!
//! The marker `.loam-emit` lists every file an emit wrote with its SHA-256, in the format of
//! `sha256sum` (so `sha256sum -c .loam-emit` checks a folder by hand):
//!
//! ```text
//! loam-emit 1
//! # written by `loam emit`: the files below, with their SHA-256; the next emit replaces this folder only while it holds exactly these files
//! 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae  my-job/job.sbatch
//! ```
//!
//! The next emit replaces the folder only when it holds exactly the files listed, unedited
//! (`--force` accepts added or edited files). A missing, empty or foreign marker authorises
//! nothing. Emits into one folder are serialised by a lock on its parent folder, so they
//! never interleave their renames.

use super::{IoError, display};
use loam_backends::Manifest;
use loam_compiler::project::checksum;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The file that marks a folder as written by `loam emit`, listing what it wrote.
const MARKER: &str = ".loam-emit";

/// The marker's first line: its format and version.
const HEADER: &str = "loam-emit 1";

/// The marker's second line, for people who open it.
const EXPLANATION: &str = "# written by `loam emit`: the files below, with their SHA-256; the next emit replaces this folder only while it holds exactly these files";

/// The whole marker of loam before the file list; such a folder is replaced only with `--force`.
const LEGACY_MARKER: &str =
    "written by `loam emit`; the whole folder is replaced on the next emit\n";

/// How many unexpected files a refusal names.
const NAMED: usize = 5;

/// Writes `manifests` as the whole contents of `dir`: into a temporary folder beside it first,
/// then renamed into place. An existing `dir` is replaced only when empty, or written by
/// `loam emit` and unchanged since (any change is accepted with `force`); a symbolic link, the
/// current folder or a folder holding it is refused.
pub fn write_dir(dir: &Path, manifests: &[Manifest], force: bool) -> Result<(), IoError> {
    let shown = display(dir);
    let fail = |what: &str, e: std::io::Error| IoError(format!("cannot {what} `{shown}`: {e}"));
    refuse_current_folder(dir)?;
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let target = fs::read_link(dir).map(|t| display(&t)).unwrap_or_default();
            return Err(IoError(format!(
                "`{shown}` is a symbolic link (to `{target}`); `loam emit` replaces its folder as a whole, so name a real folder"
            )));
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(IoError(format!("`{shown}` exists and is not a folder")));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail("read", e)),
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
    let _lock = lock(parent).map_err(|e| fail("lock the parent folder of", e))?;
    if dir.is_dir() {
        check_replaceable(dir, force)?;
    }
    let tmp = temp_dir(parent, &format!(".{name}.loam-new-")).map_err(|e| fail("write", e))?;
    fill(tmp.path(), manifests).map_err(|e| fail("write", e))?;
    swap(dir, tmp, parent, &name).map_err(|e| fail("write", e))
}

/// Refuses `dir` when it is the current folder or holds it: a folder in use cannot be renamed
/// (the system answers "Device or resource busy").
fn refuse_current_folder(dir: &Path) -> Result<(), IoError> {
    let (Ok(cwd), Ok(target)) = (std::env::current_dir(), dir.canonicalize()) else {
        return Ok(());
    };
    let cwd = cwd.canonicalize().unwrap_or(cwd);
    if cwd.starts_with(&target) {
        return Err(IoError(format!(
            "cannot write `{}`: it is the current folder or holds it, and `loam emit` replaces the folder as a whole; run loam from outside it (`cd ..`) and name the folder",
            display(dir)
        )));
    }
    Ok(())
}

/// Refuses `dir` unless it may be replaced: empty, or holding a marker that lists exactly its
/// files with their contents (with `force`, any loam marker).
fn check_replaceable(dir: &Path, force: bool) -> Result<(), IoError> {
    let shown = display(dir);
    let mut files = BTreeMap::new();
    let mut folders = Vec::new();
    contents(dir, dir, &mut files, &mut folders)
        .map_err(|e| IoError(format!("cannot read `{shown}`: {e}")))?;
    if files.is_empty() && folders.is_empty() {
        return Ok(());
    }
    // Links and other non-regular files are never read through: a link named like a listed
    // file could point at `/dev/zero`.
    let marker = files
        .remove(MARKER)
        .filter(|(_, regular)| *regular)
        .and_then(|(path, _)| super::read(&path).ok())
        .unwrap_or_default();
    let listed = parse_marker(&marker);
    let legacy = marker == LEGACY_MARKER.as_bytes();
    let Some(listed) = listed.filter(|_| !legacy) else {
        if legacy && force {
            return Ok(());
        }
        let hint = if legacy {
            "; it was written by an older loam: pass `--force` to replace it"
        } else {
            "; choose an empty or new folder"
        };
        return Err(IoError(format!(
            "`{shown}` holds files that `loam emit` did not write{hint}"
        )));
    };
    let mut unexpected = Vec::new();
    for (relative, (path, regular)) in &files {
        match listed.get(relative) {
            None => unexpected.push(format!("{relative} (not written by loam emit)")),
            Some(_) if !*regular => unexpected.push(format!("{relative} (not a regular file)")),
            Some(sum) => {
                let now = super::read(path).map(|b| checksum(&b)).unwrap_or_default();
                if now.strip_prefix("sha256:") != Some(sum.as_str()) {
                    unexpected.push(format!("{relative} (edited since)"));
                }
            }
        }
    }
    for folder in &folders {
        let prefix = format!("{folder}/");
        if !listed.keys().any(|k| k.starts_with(&prefix)) {
            unexpected.push(format!("{folder}/ (not written by loam emit)"));
        }
    }
    if unexpected.is_empty() || force {
        return Ok(());
    }
    let count = unexpected.len();
    let mut named = unexpected
        .into_iter()
        .take(NAMED)
        .collect::<Vec<_>>()
        .join(", ");
    if count > NAMED {
        named.push_str(&format!(" and {} more", count - NAMED));
    }
    Err(IoError(format!(
        "`{shown}` holds files that the last `loam emit` did not write or that were edited since: {named}; move them out of the folder, or pass `--force` to replace it anyway"
    )))
}

/// Every file below `dir` (relative path with `/` → its path and whether it is a regular file)
/// and every folder, without following links (a link is listed as a file, never read through).
fn contents(
    root: &Path,
    dir: &Path,
    files: &mut BTreeMap<String, (PathBuf, bool)>,
    folders: &mut Vec<String>,
) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let relative = path
            .strip_prefix(root)
            .map(|r| {
                r.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        let meta = fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            folders.push(relative);
            contents(root, &path, files, folders)?;
        } else {
            files.insert(relative, (path, meta.is_file()));
        }
    }
    Ok(())
}

/// The files a marker lists (relative path → SHA-256 hex); `None` when it is not a loam marker.
fn parse_marker(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return None;
    }
    let mut listed = BTreeMap::new();
    for line in lines.filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (sum, path) = line.split_once("  ")?;
        listed.insert(path.to_string(), sum.to_string());
    }
    Some(listed)
}

/// The marker listing `manifests`.
fn marker(manifests: &[Manifest]) -> String {
    let mut text = format!("{HEADER}\n{EXPLANATION}\n");
    let mut lines: Vec<String> = manifests
        .iter()
        .map(|m| {
            let sum = checksum(m.contents.as_bytes());
            let hex = sum.strip_prefix("sha256:").unwrap_or(&sum).to_string();
            format!("{hex}  {}\n", m.path)
        })
        .collect();
    lines.sort();
    for line in lines {
        text.push_str(&line);
    }
    text
}

/// Writes every manifest under the fresh folder `tmp`, plus the marker.
fn fill(tmp: &Path, manifests: &[Manifest]) -> std::io::Result<()> {
    if let Some(m) = manifests.iter().find(|m| m.path.contains(['\n', '\r'])) {
        return Err(std::io::Error::other(format!(
            "a manifest path holds a line break: {:?}",
            m.path
        )));
    }
    fs::write(tmp.join(MARKER), marker(manifests))?;
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

/// A new folder in `parent` with an unpredictable name starting with `prefix`, with the mode a
/// new folder gets (0777 less the umask); removed when dropped unless kept.
fn temp_dir(parent: &Path, prefix: &str) -> std::io::Result<tempfile::TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o777));
    }
    builder.tempdir_in(parent)
}

/// Puts `tmp` in the place of `dir`, moving an existing `dir` aside first (into an empty
/// temporary folder, removed with what it holds) and back if the second rename fails.
fn swap(dir: &Path, tmp: tempfile::TempDir, parent: &Path, name: &str) -> std::io::Result<()> {
    if !dir.exists() {
        fs::rename(tmp.path(), dir)?;
        let _renamed_away = tmp.keep();
        return Ok(());
    }
    let old = temp_dir(parent, &format!(".{name}.loam-old-"))?;
    fs::rename(dir, old.path())?;
    if let Err(e) = fs::rename(tmp.path(), dir) {
        let _ = fs::rename(old.path(), dir);
        return Err(e);
    }
    let _renamed_away = tmp.keep();
    // `old` now holds the previous folder; dropping it removes both.
    drop(old);
    Ok(())
}

/// Holds an exclusive lock on `folder` (on Unix) until dropped, so two emits into the same
/// parent folder take turns; nothing is created for it.
#[cfg(unix)]
fn lock(folder: &Path) -> std::io::Result<fs::File> {
    let file = fs::File::open(folder)?;
    file.lock()?;
    Ok(file)
}

/// Elsewhere folders cannot be opened as files; emits are not serialised.
#[cfg(not(unix))]
fn lock(folder: &Path) -> std::io::Result<PathBuf> {
    Ok(folder.to_path_buf())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_lists_every_file_and_reads_back() {
        let manifests = vec![
            Manifest {
                path: "b/job.sbatch".into(),
                contents: "x".into(),
            },
            Manifest {
                path: "a.yaml".into(),
                contents: "y".into(),
            },
        ];
        let text = marker(&manifests);
        assert!(text.starts_with("loam-emit 1\n# "), "{text}");
        let listed = parse_marker(text.as_bytes()).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(
            listed["b/job.sbatch"],
            "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
        );
        assert!(parse_marker(b"").is_none());
        assert!(parse_marker(b"anything\n").is_none());
    }
}
