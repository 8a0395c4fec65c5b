//! Reading a git repository with git2 (no `git` process): resolving revisions, and listing the
//! spec and catalogue files of a revision's tree or of the work tree.
//!
//! Every path handed out is relative to the repository root with `/` separators, so the two
//! sides of a diff name the same file alike whatever folder loam was run from.
//!
//! Each side's spec search honours the `.loamignore` at the root of that side: the one in the
//! revision's tree, or the work tree's file on disk, so a rule a pull request adds applies to
//! its head only.

use crate::io::{self, IGNORE_FILE, IoError, LoamIgnore};
use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// A file read from one side of a diff: its repository-relative path and its bytes.
pub type FileBytes = (String, Vec<u8>);

/// An open repository and what the command was asked to look at in it.
pub struct Repo {
    repo: Repository,
    /// The work tree's root, canonical; `None` for a bare repository.
    root: Option<PathBuf>,
    /// The revision each tree handed out by [`Repo::tree`] was named by, for messages.
    revisions: RefCell<BTreeMap<Oid, String>>,
}

/// The file mode git gives symbolic links; their blobs hold a path, not a spec.
const MODE_LINK: i32 = 0o120_000;

fn git_error(what: &str, e: &git2::Error) -> IoError {
    IoError(format!("{what}: {}", e.message()))
}

impl Repo {
    /// Opens the repository holding `path` (searching its parent folders, as git does).
    pub fn discover(path: &Path) -> Result<Repo, IoError> {
        let start = if path.is_file() {
            path.parent().unwrap_or(Path::new("."))
        } else if path.exists() {
            path
        } else {
            Path::new(".")
        };
        let repo = Repository::discover(start).map_err(|e| {
            git_error(
                &format!("`{}` is not inside a git repository", io::display(start)),
                &e,
            )
        })?;
        let root = repo.workdir().and_then(|dir| dir.canonicalize().ok());
        Ok(Repo {
            repo,
            root,
            revisions: RefCell::new(BTreeMap::new()),
        })
    }

    /// The work tree's root, if the repository has one.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The repository-relative form of a path given on the command line (relative to the current
    /// folder, or absolute): `""` for the root. The path need not exist (a spec deleted in the
    /// work tree can still be named).
    pub fn relative(&self, path: &Path) -> Result<String, IoError> {
        let root = self.root.as_deref().ok_or_else(|| {
            IoError("the repository is bare: name both sides with `--base REV --head REV`".into())
        })?;
        let absolute = absolute(path)?;
        let rest = absolute.strip_prefix(root).map_err(|_| {
            IoError(format!(
                "`{}` is outside the repository at `{}`",
                io::display(path),
                io::display(root)
            ))
        })?;
        Ok(slash_path(rest))
    }

    /// The tree of a revision (`HEAD`, `main`, `HEAD~1`, a commit id …), and the commit's short
    /// id for display.
    pub fn tree(&self, rev: &str) -> Result<(git2::Tree<'_>, String), IoError> {
        let object = self
            .repo
            .revparse_single(rev)
            .map_err(|e| self.revision_error(rev, &e))?;
        let commit = object.peel_to_commit().ok();
        let tree = object
            .peel_to_tree()
            .map_err(|e| git_error(&format!("revision `{rev}` has no tree"), &e))?;
        let short = commit
            .map(|c| c.id().to_string().chars().take(8).collect::<String>())
            .unwrap_or_default();
        self.revisions
            .borrow_mut()
            .entry(tree.id())
            .or_insert_with(|| rev.to_string());
        Ok((tree, short))
    }

    /// Why `rev` cannot be resolved, in words that say what to do: libgit2's own message is
    /// terse ("parent 0 does not exist") or misleading (`@{-1}` reports a missing ignore file).
    fn revision_error(&self, rev: &str, e: &git2::Error) -> IoError {
        let what = format!("cannot resolve revision `{rev}`");
        if rev.contains("@{") {
            return IoError(format!(
                "{what}: loam does not read the reflog (`@{{…}}`); name the branch or commit instead (`git rev-parse '{rev}'` prints it)"
            ));
        }
        if self.repo.is_shallow() && (rev.contains('~') || rev.contains('^')) {
            return IoError(format!(
                "{what}: {}; this clone is shallow, so older commits are missing: fetch more history (`git fetch --deepen=50`, or `git fetch --unshallow`; in GitHub Actions `fetch-depth: 0`)",
                e.message()
            ));
        }
        git_error(&what, e)
    }

    /// The rules of the `.loamignore` at the root of `tree`; none when it has no such file.
    pub fn tree_ignore(&self, tree: &git2::Tree<'_>) -> Result<LoamIgnore, IoError> {
        let Some(entry) = tree.get_name(IGNORE_FILE) else {
            return Ok(LoamIgnore::none());
        };
        let name = match self.revisions.borrow().get(&tree.id()) {
            Some(rev) => format!("{IGNORE_FILE}` at `{rev}"),
            None => format!("{IGNORE_FILE}` in tree `{}", tree.id()),
        };
        if entry.kind() != Some(ObjectType::Blob) || entry.filemode() == MODE_LINK {
            return Err(IoError(format!("`{name}` is not a file")));
        }
        let blob = self
            .repo
            .find_blob(entry.id())
            .map_err(|e| git_error(&format!("cannot read `{name}`"), &e))?;
        LoamIgnore::parse(None, &name, blob.content())
    }

    /// Every blob under one of `prefixes` (repository-relative; `""` is the root) whose name ends
    /// in `.<extension>`, with its bytes, sorted by path. Hidden folders, `target` and what the
    /// tree's own `.loamignore` matches are skipped below a prefix, as when walking the file
    /// system; a prefix naming a file is read whatever the rules say. Symbolic links and
    /// submodules are not specs.
    pub fn tree_files(
        &self,
        tree: &git2::Tree<'_>,
        prefixes: &[String],
        extension: &str,
    ) -> Result<Vec<FileBytes>, IoError> {
        let ignore = self.tree_ignore(tree)?;
        let suffix = format!(".{extension}");
        let mut ids = Vec::new();
        tree.walk(TreeWalkMode::PreOrder, |root, entry| {
            let Ok(name) = entry.name() else {
                return TreeWalkResult::Skip;
            };
            let path = format!("{root}{name}");
            let wanted = |p: &str| prefixes.iter().any(|prefix| under(p, prefix));
            match entry.kind() {
                Some(ObjectType::Tree) => {
                    let reachable = prefixes.iter().any(|prefix| {
                        under(&path, prefix) || under(prefix, &path) || prefix.is_empty()
                    });
                    let explicit = prefixes.iter().any(|prefix| under(prefix, &path));
                    let ignored = skipped_folder(name) || ignore.is_ignored(Path::new(&path), true);
                    if !reachable || (!explicit && ignored) {
                        return TreeWalkResult::Skip;
                    }
                }
                Some(ObjectType::Blob)
                    if entry.filemode() != MODE_LINK
                        && wanted(&path)
                        && (prefixes.contains(&path)
                            || (name.ends_with(&suffix)
                                && !ignore.is_ignored(Path::new(&path), false))) =>
                {
                    ids.push((path, entry.id()));
                }
                _ => {}
            }
            TreeWalkResult::Ok
        })
        .map_err(|e| git_error("cannot read the revision's tree", &e))?;
        ids.sort();
        ids.into_iter()
            .map(|(path, id)| {
                let blob = self
                    .repo
                    .find_blob(id)
                    .map_err(|e| git_error(&format!("cannot read `{path}`"), &e))?;
                Ok((path, blob.content().to_vec()))
            })
            .collect()
    }

    /// The files directly in folder `dir` of `tree` whose extension is one of `extensions`,
    /// sorted; `None` when the tree has no such folder.
    pub fn tree_folder(
        &self,
        tree: &git2::Tree<'_>,
        dir: &str,
        extensions: &[&str],
    ) -> Result<Option<Vec<FileBytes>>, IoError> {
        let entry = if dir.is_empty() {
            None
        } else {
            tree.get_path(Path::new(dir)).ok()
        };
        let Some(entry) = entry.filter(|e| e.kind() == Some(ObjectType::Tree)) else {
            return Ok(None);
        };
        let folder = self
            .repo
            .find_tree(entry.id())
            .map_err(|e| git_error(&format!("cannot read `{dir}`"), &e))?;
        let mut found = Vec::new();
        for item in folder.iter() {
            let Ok(name) = item.name() else { continue };
            let matches = Path::new(name)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e));
            if item.kind() != Some(ObjectType::Blob) || item.filemode() == MODE_LINK || !matches {
                continue;
            }
            let blob = self
                .repo
                .find_blob(item.id())
                .map_err(|e| git_error(&format!("cannot read `{dir}/{name}`"), &e))?;
            found.push((format!("{dir}/{name}"), blob.content().to_vec()));
        }
        found.sort();
        Ok(Some(found))
    }

    /// The `*.loam` files of the work tree under `prefixes`, as the file system has them now
    /// (tracked or not), leaving out what `.gitignore` ignores and what the `.loamignore` at the
    /// work tree's root matches (a prefix naming a file is read whatever it says). Sorted by
    /// path.
    pub fn worktree_files(&self, prefixes: &[String]) -> Result<Vec<FileBytes>, IoError> {
        let Some(root) = self.root.as_deref() else {
            return Err(IoError(
                "the repository is bare: it has no work tree; name `--head REV`".into(),
            ));
        };
        let paths: Vec<PathBuf> = prefixes
            .iter()
            .map(|p| root.join(p))
            .filter(|p| p.exists())
            .collect();
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let ignore = LoamIgnore::read_in(root)?.unwrap_or_else(LoamIgnore::none);
        let mut found = Vec::new();
        for path in io::find_spec_files_ignoring(&paths, root, &ignore)? {
            let Ok(rest) = path.strip_prefix(root) else {
                continue;
            };
            if self.repo.is_path_ignored(rest).unwrap_or(false) {
                continue;
            }
            let bytes = io::read_spec(&path)?;
            found.push((slash_path(rest), bytes));
        }
        found.sort();
        found.dedup_by(|a, b| a.0 == b.0);
        Ok(found)
    }
}

/// Whether `path` is `prefix` or inside it (`""` holds everything).
fn under(path: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Folders a walk does not enter unless named: hidden ones and build output.
fn skipped_folder(name: &str) -> bool {
    name.starts_with('.') || name == "target"
}

/// `a/b/c` from a relative path, whatever the platform's separator.
fn slash_path(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    parts.join("/")
}

/// The canonical absolute form of `path`; for a path that does not exist, its nearest existing
/// ancestor made canonical and the rest appended.
fn absolute(path: &Path) -> Result<PathBuf, IoError> {
    let cwd = std::env::current_dir()
        .map_err(|e| IoError(format!("cannot read the current folder: {e}")))?;
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    let mut existing = joined.as_path();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut result = canonical;
            for part in missing.iter().rev() {
                result.push(part);
            }
            return Ok(result);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return Ok(joined),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::under;

    #[test]
    fn under_matches_whole_components() {
        assert!(under("jobs/a.loam", ""));
        assert!(under("jobs/a.loam", "jobs"));
        assert!(under("jobs", "jobs"));
        assert!(!under("jobs2/a.loam", "jobs"));
        assert!(!under("jobs", "jobs/a.loam"));
    }
}
