//! Real git repositories in temp folders, made with git2, for the `loam diff` tests: files are
//! written, committed with a fixed author and time (so commit ids are stable), branched and
//! merged; `loam` runs in-process against them.

use git2::{IndexAddOption, Oid, Repository, Signature, Time};
use std::path::{Path, PathBuf};

/// A job spec small enough to plan quickly; `{name}`, `{batch}` and `{max}` vary it.
pub fn spec(name: &str, batch: u32, max_devices: u32) -> String {
    format!(
        r#"job "{name}" {{
  tenant = "nlp"

  model {{
    layers   = 32
    hidden   = 4096
    ffn      = 14336
    heads    = 32
    kv_heads = 8
    vocab    = 128256
    seq_len  = 4096
  }}

  train {{
    tokens       = 2B
    global_batch = {batch}
    precision    = bf16
  }}

  resources {{
    pool        = xirang
    max_devices = {max_devices}
  }}

  goal {{
    optimize = time
    deadline = 2d
  }}

  checkpoint {{
    path = "/ckpt/nlp/{name}"
  }}
}}
"#
    )
}

/// A temp folder holding a git repository.
pub struct TempRepo {
    dir: tempfile::TempDir,
    /// The repository.
    pub repo: Repository,
    time: i64,
}

impl TempRepo {
    /// An empty repository on branch `main`.
    pub fn new() -> TempRepo {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = git2::RepositoryInitOptions::new();
        opts.initial_head("main");
        let repo = Repository::init_opts(dir.path(), &opts).unwrap();
        TempRepo {
            dir,
            repo,
            time: 1_700_000_000,
        }
    }

    /// The work tree's root.
    pub fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// Writes a file (creating folders).
    pub fn write(&self, path: &str, contents: impl AsRef<[u8]>) {
        let full = self.dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, contents).unwrap();
    }

    /// Reads a file of the work tree.
    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(path)).unwrap()
    }

    /// Removes a file of the work tree.
    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.dir.path().join(path)).unwrap();
    }

    /// Copies the shipped catalogue into `specs/`.
    pub fn add_catalogue(&self) {
        for (path, text) in loam_compiler::catalogue::builtin_sources() {
            self.write(path, text);
        }
    }

    fn signature(&mut self) -> Signature<'static> {
        self.time += 60;
        Signature::new("loam tests", "tests@loam.invalid", &Time::new(self.time, 0)).unwrap()
    }

    /// Stages everything (additions, changes, removals) and commits on the current branch.
    pub fn commit(&mut self, message: &str) -> Oid {
        let mut index = self.repo.index().unwrap();
        index
            .add_all(["*"].iter(), IndexAddOption::DEFAULT, None)
            .unwrap();
        index.update_all(["*"].iter(), None).unwrap();
        index.write().unwrap();
        let tree_id = index.write_tree().unwrap();
        let sig = self.signature();
        let tree = self.repo.find_tree(tree_id).unwrap();
        let parent = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    }

    /// Creates branch `name` at HEAD and checks it out.
    pub fn branch(&self, name: &str) {
        let head = self.repo.head().unwrap().peel_to_commit().unwrap();
        self.repo.branch(name, &head, false).unwrap();
        self.checkout(name);
    }

    /// Checks out branch `name`, updating the work tree.
    pub fn checkout(&self, name: &str) {
        let refname = format!("refs/heads/{name}");
        let object = self.repo.revparse_single(&refname).unwrap();
        let mut opts = git2::build::CheckoutBuilder::new();
        opts.force();
        self.repo.checkout_tree(&object, Some(&mut opts)).unwrap();
        self.repo.set_head(&refname).unwrap();
    }

    /// Merges branch `name` into the current branch with a merge commit (no conflicts expected).
    pub fn merge(&mut self, name: &str) -> Oid {
        let sig = self.signature();
        let ours = self.repo.head().unwrap().peel_to_commit().unwrap();
        let theirs = self
            .repo
            .revparse_single(&format!("refs/heads/{name}"))
            .unwrap()
            .peel_to_commit()
            .unwrap();
        let mut index = self.repo.merge_commits(&ours, &theirs, None).unwrap();
        assert!(!index.has_conflicts(), "merge conflicts");
        let tree_id = index.write_tree_to(&self.repo).unwrap();
        let tree = self.repo.find_tree(tree_id).unwrap();
        let id = self
            .repo
            .commit(
                Some("HEAD"),
                &sig,
                &sig,
                &format!("merge {name}"),
                &tree,
                &[&ours, &theirs],
            )
            .unwrap();
        let mut opts = git2::build::CheckoutBuilder::new();
        opts.force();
        self.repo.checkout_head(Some(&mut opts)).unwrap();
        id
    }

    /// Runs `loam` with `args` and the repository as the last path; returns exit code, standard
    /// output and standard error, with the temp folder's path replaced by `[REPO]`.
    pub fn loam(&self, args: &[&str]) -> (u8, String, String) {
        let root = self.path();
        let mut all: Vec<String> = vec!["loam".into(), "--color".into(), "never".into()];
        all.extend(args.iter().map(|a| a.to_string()));
        if !args.iter().any(|a| Path::new(a).is_absolute()) {
            all.push(root.to_string_lossy().into_owned());
        }
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = loam_cli::run(all, &mut out, &mut err, &mut std::io::empty());
        let clean = |bytes: Vec<u8>| {
            String::from_utf8(bytes)
                .unwrap()
                .replace(&root.to_string_lossy().into_owned(), "[REPO]")
        };
        (code, clean(out), clean(err))
    }
}
