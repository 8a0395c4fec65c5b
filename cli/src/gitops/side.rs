//! One side of a diff read: the specs and the catalogue at a revision (or in the work tree),
//! checked and planned with the same code as `loam check` and `loam plan` into a
//! [`loam_diff::Side`].

use super::repo::{FileBytes, Repo};
use crate::catalogue_source::{builtin_texts, read_dir};
use crate::io::IoError;
use crate::plan_cache::{self, PlanCache};
use crate::session::threads;
use loam_compiler::project::{ProjectFiles, check_project};
use loam_diff::Side;
use loam_ir::plan::Plan;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Where a side's catalogue comes from.
pub enum CatalogueSource {
    /// YAML texts read from a revision (display path, text), or the built-in catalogue.
    Texts(Vec<(String, String)>),
    /// A catalogue folder of the work tree, loaded as `--catalogue DIR` is, and its
    /// repository-relative name, which its files' diagnostics are named by (as at a revision).
    Folder(PathBuf, String),
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
        // The same folders as the work tree's catalogue (`catalogue_source::read_dir`): a vendor
        // file a pull request changes is compared like a pool file. `vendors/` alone does not
        // make a catalogue. `calibration/` holds each site's fitted factors
        // (docs/calibration.md): both sides plan with their own.
        for sub in ["devices", "pools", "vendors", "calibration"] {
            let dir = join(catalogue_dir, sub);
            if let Some(files) = repo.tree_folder(&tree, &dir, &YAML)? {
                found |= sub != "vendors";
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
            (
                format!("{catalogue_dir}/"),
                CatalogueSource::Folder(folder, catalogue_dir.to_string()),
            )
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
    CatalogueSource::Texts(builtin_texts())
}

fn join(dir: &str, sub: &str) -> String {
    if dir.is_empty() {
        sub.to_string()
    } else {
        format!("{dir}/{sub}")
    }
}

/// Checks and plans `snapshot` with the core's entry point. A diff shows a spec file with
/// errors as broken, whole, so none of its jobs is planned. When `reuse` planned a job with
/// the same key (same file and bytes, same job, same catalogue inputs: its pool and the
/// devices the pool uses), or `cache` holds one, that plan is taken instead of planning
/// again: planning is a pure function of the key's parts. A price change in one pool
/// re-plans only that pool's jobs.
pub fn load(
    snapshot: Snapshot,
    reuse: Option<&Side>,
    cache: Option<&PlanCache>,
) -> Result<Side, IoError> {
    let catalogue = match snapshot.catalogue {
        CatalogueSource::Texts(texts) => texts,
        CatalogueSource::Folder(dir, relative) => {
            // `specs/pools/x.yaml`, not the work tree's absolute path: a diagnostic names
            // the file as the pull request does, whichever side it is on.
            let absolute = crate::io::display(&dir);
            read_dir(&dir)?
                .into_iter()
                .map(|(path, text)| match path.strip_prefix(absolute.as_str()) {
                    Some(rest) => (format!("{relative}{rest}"), text),
                    None => (path, text),
                })
                .collect()
        }
    };
    let bytes: BTreeMap<String, Vec<u8>> = snapshot.specs.iter().cloned().collect();
    let files = ProjectFiles {
        catalogue,
        specs: snapshot.specs,
    };
    let mut specs = check_project(files, threads());
    let catalogue_errors = specs.catalogue_errors;
    let withheld = specs.withheld_files();
    let spec_names: BTreeSet<&str> = specs.files.iter().map(String::as_str).collect();
    let mut broken: BTreeMap<String, usize> = BTreeMap::new();
    for d in specs.diagnostics.iter().filter(|d| d.is_error()) {
        if let Some(file) = d.span.and_then(|s| specs.sources.get(s.file))
            && spec_names.contains(file.name.as_str())
        {
            *broken.entry(file.name.clone()).or_default() += 1;
        }
    }
    for job in &mut specs.jobs {
        if let Some(errors) = broken.get(&job.file) {
            job.errors = job.errors.max(*errors);
        }
    }
    let catalogue_digest = specs.catalogue.as_ref().map(|c| c.digest().to_string());
    let other = |key: &str| -> Option<Plan> { reuse?.plan_by_key(key).cloned() };
    let planned = plan_cache::plan(&specs, threads(), cache, &other);
    let keys = planned
        .keys
        .iter()
        .enumerate()
        .map(|(i, key)| (key.clone(), i))
        .collect();
    Ok(Side {
        label: snapshot.label,
        commit: snapshot.commit,
        catalogue_origin: snapshot.catalogue_origin,
        catalogue_digest,
        specs,
        planned,
        broken,
        catalogue_errors,
        withheld,
        bytes,
        keys,
    })
}
