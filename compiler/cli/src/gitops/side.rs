//! One side of a diff: the specs and the catalogue at a revision (or in the work tree), checked
//! and planned with the same code as `loam check` and `loam plan`.

use super::repo::{FileBytes, Repo};
use crate::catalogue_source::{load_catalogue, load_texts};
use crate::io::IoError;
use crate::parallel;
use crate::session::{Specs, check_against};
use loam_compiler::catalogue::{Catalogue, builtin_sources};
use loam_compiler::check::Job;
use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::plan::ir::Plan;
use loam_compiler::span::SourceMap;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Where a side's catalogue comes from.
pub enum CatalogueSource {
    /// YAML texts read from a revision (display path, text), or the built-in catalogue.
    Texts(Vec<(String, String)>),
    /// A catalogue folder of the work tree, loaded as `--catalogue DIR` is.
    Folder(PathBuf),
}

/// The files of one side, read but not yet checked.
pub struct Snapshot {
    /// What the side is called in the output: the revision as given, or `work tree`.
    pub label: String,
    /// The commit's short id, for a revision.
    pub commit: Option<String>,
    /// The spec files (repository-relative path, bytes), sorted by path.
    pub specs: Vec<FileBytes>,
    /// Where the catalogue comes from: `specs/` (or `--catalogue DIR`) or `built-in`.
    pub catalogue_origin: String,
    /// The catalogue's files.
    pub catalogue: CatalogueSource,
}

/// The extensions of catalogue files.
const YAML: [&str; 2] = ["yaml", "yml"];

impl Snapshot {
    /// The specs under `prefixes` and the catalogue in folder `catalogue_dir` (both
    /// repository-relative) at revision `rev`; the built-in catalogue when the revision has no
    /// such folder.
    pub fn at_revision(
        repo: &Repo,
        rev: &str,
        prefixes: &[String],
        catalogue_dir: &str,
    ) -> Result<Snapshot, IoError> {
        let (tree, commit) = repo.tree(rev)?;
        let specs = repo.tree_files(&tree, prefixes, "loam")?;
        let mut texts = Vec::new();
        let mut found = false;
        for sub in ["devices", "pools"] {
            let dir = join(catalogue_dir, sub);
            if let Some(files) = repo.tree_folder(&tree, &dir, &YAML)? {
                found = true;
                texts.extend(
                    files
                        .into_iter()
                        .map(|(path, bytes)| (path, String::from_utf8_lossy(&bytes).into_owned())),
                );
            }
        }
        let (origin, catalogue) = if found {
            (format!("{catalogue_dir}/"), CatalogueSource::Texts(texts))
        } else {
            ("built-in".to_string(), builtin())
        };
        Ok(Snapshot {
            label: rev.to_string(),
            commit: Some(commit),
            specs,
            catalogue_origin: origin,
            catalogue,
        })
    }

    /// The specs under `prefixes` and the catalogue in folder `catalogue_dir` as the work tree
    /// has them now.
    pub fn worktree(
        repo: &Repo,
        prefixes: &[String],
        catalogue_dir: &str,
    ) -> Result<Snapshot, IoError> {
        let specs = repo.worktree_files(prefixes)?;
        let root = repo
            .root()
            .ok_or_else(|| IoError("the repository has no work tree".into()))?;
        let folder = root.join(catalogue_dir);
        let is_catalogue = ["devices", "pools"]
            .iter()
            .any(|sub| folder.join(sub).is_dir());
        let (origin, catalogue) = if is_catalogue {
            (format!("{catalogue_dir}/"), CatalogueSource::Folder(folder))
        } else {
            ("built-in".to_string(), builtin())
        };
        Ok(Snapshot {
            label: "work tree".to_string(),
            commit: None,
            specs,
            catalogue_origin: origin,
            catalogue,
        })
    }
}

fn builtin() -> CatalogueSource {
    CatalogueSource::Texts(
        builtin_sources()
            .into_iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect(),
    )
}

fn join(dir: &str, sub: &str) -> String {
    if dir.is_empty() {
        sub.to_string()
    } else {
        format!("{dir}/{sub}")
    }
}

/// One side, checked and planned.
pub struct Side {
    /// What the side is called in the output.
    pub label: String,
    /// The commit's short id, for a revision.
    pub commit: Option<String>,
    /// `specs/` or `built-in`.
    pub catalogue_origin: String,
    /// The catalogue, when it loaded without errors.
    pub catalogue: Option<Catalogue>,
    /// The catalogue's digest, when it loaded.
    pub catalogue_digest: Option<String>,
    /// The specs (sources, jobs, every check diagnostic).
    pub specs: Specs,
    /// The plans of every job in a file that checked, sorted by file.
    pub plans: Vec<Plan>,
    /// The planner's diagnostics.
    pub planner_diagnostics: Vec<Diagnostic>,
    /// Spec files with errors, and how many.
    pub broken: BTreeMap<String, usize>,
    /// Errors in the catalogue; when any, no job of this side was planned.
    pub catalogue_errors: usize,
    /// The bytes of each spec file, by path.
    pub bytes: BTreeMap<String, Vec<u8>>,
}

impl Side {
    /// Checks and plans `snapshot`. When `reuse` planned the same spec file (same path, same
    /// bytes, checked clean) against the same catalogue, its plans are taken instead of planning
    /// again: planning is a pure function of the two.
    pub fn load(snapshot: Snapshot, reuse: Option<&Side>) -> Result<Side, IoError> {
        let mut sources = SourceMap::new();
        let (catalogue, catalogue_diagnostics) = match snapshot.catalogue {
            CatalogueSource::Texts(texts) => load_texts(texts, &mut sources),
            CatalogueSource::Folder(dir) => load_catalogue(Some(&dir), &mut sources)?,
        };
        let catalogue_errors = catalogue_diagnostics
            .iter()
            .filter(|d| d.is_error())
            .count();
        let mut specs = Specs {
            sources,
            files: Vec::new(),
            jobs: Vec::new(),
            diagnostics: catalogue_diagnostics,
        };
        let bytes: BTreeMap<String, Vec<u8>> = snapshot.specs.iter().cloned().collect();
        parallel::add_specs(&mut specs, snapshot.specs);
        if let Some(catalogue) = &catalogue {
            check_against(&mut specs, catalogue);
        }
        let spec_names: BTreeSet<&str> = specs.files.iter().map(String::as_str).collect();
        let mut broken: BTreeMap<String, usize> = BTreeMap::new();
        for d in specs.diagnostics.iter().filter(|d| d.is_error()) {
            if let Some(file) = d.span.and_then(|s| specs.sources.get(s.file))
                && spec_names.contains(file.name.as_str())
            {
                *broken.entry(file.name.clone()).or_default() += 1;
            }
        }
        let catalogue_digest = catalogue.as_ref().map(Catalogue::digest);
        let reusable = |file: &str| -> Option<&Side> {
            let other = reuse?;
            let same = other.catalogue_digest.is_some()
                && other.catalogue_digest == catalogue_digest
                && other.bytes.get(file) == bytes.get(file)
                && !other.broken.contains_key(file);
            same.then_some(other)
        };
        let mut plans = Vec::new();
        let mut planner_diagnostics = Vec::new();
        if let Some(catalogue) = &catalogue {
            let mut todo: Vec<(&Job, &str)> = Vec::new();
            let mut reused: BTreeSet<&str> = BTreeSet::new();
            for job in &specs.jobs {
                let file = specs.sources.get(job.file).map_or("", |f| f.name.as_str());
                if broken.contains_key(file) {
                    continue;
                }
                if let Some(other) = reusable(file) {
                    if reused.insert(file) {
                        plans.extend(other.plans.iter().filter(|p| p.file == file).cloned());
                    }
                } else {
                    todo.push((job, file));
                }
            }
            let (doc, found) = parallel::plan_jobs(&todo, catalogue);
            plans.extend(doc.plans);
            plans.sort_by(|a, b| a.file.cmp(&b.file));
            planner_diagnostics = found;
        }
        Ok(Side {
            label: snapshot.label,
            commit: snapshot.commit,
            catalogue_origin: snapshot.catalogue_origin,
            catalogue,
            catalogue_digest,
            specs,
            plans,
            planner_diagnostics,
            broken,
            catalogue_errors,
            bytes,
        })
    }

    /// Whether the jobs of `file` could not be planned on this side: the file, or the
    /// catalogue, has errors.
    pub fn is_broken(&self, file: &str) -> bool {
        self.catalogue_errors > 0 || self.broken.contains_key(file)
    }

    /// The label with the commit: `HEAD~1 (1a2b3c4d)`, or `work tree`.
    pub fn title(&self) -> String {
        match &self.commit {
            Some(commit) if !commit.is_empty() && *commit != self.label => {
                format!("{} ({commit})", self.label)
            }
            _ => self.label.clone(),
        }
    }
}
