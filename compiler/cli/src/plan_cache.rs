//! The on-disk plan cache of `loam plan` and `loam diff` (`--cache DIR`, or `LOAM_CACHE_DIR`):
//! plans kept by their key, so a CI run plans only the jobs whose spec or catalogue inputs
//! changed since a run whose cache folder it restored.
//!
//! ```text
//!  CheckedProject ──plan_keys──▶ key ──get──▶ cached Plan ─┐
//!                                   └─(miss)─ plan_job ────┴─▶ PlannedProject ──put (misses)──▶ DIR
//! ```
//!
//! The key is [`loam_compiler::project::plan_key`]: sha256 over loam's version and the Plan
//! format version, the spec file's path and text, the job's name and its catalogue inputs (its
//! pool and the devices that pool uses, as loaded). An entry is
//! `DIR/plans-v1/<first two hex digits>/<the other 62>.json`: one header line
//! `loam-plan-cache/1 <key> <sha256 of the rest>`, then the plan's JSON. A plan is stored only
//! when it reads back equal and serialises back to the same bytes, so a cached plan renders
//! byte for byte as a fresh one. Entries are written to a temporary file in the same folder and
//! renamed; an entry that is unreadable, truncated, for another key or whose checksum does not
//! match is ignored and the job planned again (and the entry rewritten). Nothing here fails a
//! command: a folder that cannot be read or written means planning as without a cache.
//!
//! Pruning: a hit sets the entry's modification time; after a run that wrote entries, when the
//! folder holds more than [`MAX_ENTRIES`] plans, the least recently used are removed down to
//! three quarters of it.

use loam_compiler::plan::ir::Plan;
use loam_compiler::project::{CheckedJob, CheckedProject, PlannedProject, checksum};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// The environment variable that turns the cache on when `--cache` is not given.
pub const ENV: &str = "LOAM_CACHE_DIR";

/// The most plans kept (about 10–40 KB each).
pub const MAX_ENTRIES: usize = 20_000;

/// The first word of an entry's header: the entry format.
const MAGIC: &str = "loam-plan-cache/1";

/// The folder of this entry format under the cache folder.
const PLANS: &str = "plans-v1";

/// Temporary files of this process, numbered.
static TEMP: AtomicU64 = AtomicU64::new(0);

/// A cache folder.
#[derive(Debug, Clone)]
pub struct PlanCache {
    dir: PathBuf,
}

impl PlanCache {
    /// The cache of `--cache DIR`, else of `LOAM_CACHE_DIR` when set and not empty; `None`
    /// (no cache) otherwise.
    pub fn open(flag: Option<&Path>) -> Option<PlanCache> {
        let dir = match flag {
            Some(dir) => dir.to_path_buf(),
            None => PathBuf::from(std::env::var_os(ENV).filter(|v| !v.is_empty())?),
        };
        Some(PlanCache::at(dir))
    }

    /// The cache in folder `dir` (created when the first plan is written).
    pub fn at(dir: impl Into<PathBuf>) -> PlanCache {
        PlanCache { dir: dir.into() }
    }

    /// Where the entry of `key` (`sha256:<hex>`) lives; `None` for a key of another form.
    fn entry(&self, key: &str) -> Option<PathBuf> {
        let hex = key.strip_prefix("sha256:")?;
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let (head, tail) = hex.split_at(2);
        Some(self.dir.join(PLANS).join(head).join(format!("{tail}.json")))
    }

    /// The plan stored under `key` for `job`, when an intact entry holds one.
    pub fn get(&self, key: &str, job: &CheckedJob) -> Option<Plan> {
        let path = self.entry(key)?;
        let text = fs::read_to_string(&path).ok()?;
        let (header, body) = text.split_once('\n')?;
        let mut words = header.split(' ');
        let intact = words.next() == Some(MAGIC)
            && words.next() == Some(key)
            && words.next() == Some(checksum(body.as_bytes()).as_str())
            && words.next().is_none();
        if !intact {
            return None;
        }
        let plan: Plan = serde_json::from_str(body).ok()?;
        if plan.file != job.file || plan.job != job.job.name.value {
            return None;
        }
        // Recently used: pruning keeps it. A read-only cache is still read.
        if let Ok(file) = fs::File::options().append(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        Some(plan)
    }

    /// Stores `plan` under `key`; whether it was written. A plan that does not read back
    /// exactly (a number JSON cannot hold) is not stored.
    pub fn put(&self, key: &str, plan: &Plan) -> bool {
        let Some(path) = self.entry(key) else {
            return false;
        };
        let Ok(body) = serde_json::to_string(plan) else {
            return false;
        };
        let exact = serde_json::from_str::<Plan>(&body).is_ok_and(|back| {
            back == *plan && serde_json::to_string(&back).ok() == Some(body.clone())
        });
        if !exact {
            return false;
        }
        let Some(folder) = path.parent() else {
            return false;
        };
        let text = format!("{MAGIC} {key} {}\n{body}", checksum(body.as_bytes()));
        let n = TEMP.fetch_add(1, Ordering::Relaxed);
        let tmp = folder.join(format!(".{}.{n}.tmp", std::process::id()));
        let written = fs::create_dir_all(folder)
            .and_then(|()| fs::write(&tmp, text))
            .and_then(|()| fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written.is_ok()
    }

    /// Removes the least recently used entries down to three quarters of `max` when the
    /// folder holds more than `max`; how many were removed.
    pub fn prune(&self, max: usize) -> usize {
        let mut entries: Vec<(SystemTime, PathBuf)> = Vec::new();
        let Ok(folders) = fs::read_dir(self.dir.join(PLANS)) else {
            return 0;
        };
        for folder in folders.filter_map(Result::ok) {
            let Ok(files) = fs::read_dir(folder.path()) else {
                continue;
            };
            for file in files.filter_map(Result::ok) {
                let path = file.path();
                if path.extension().is_some_and(|e| e == "json") {
                    let time = file
                        .metadata()
                        .and_then(|m| m.modified())
                        .unwrap_or(SystemTime::UNIX_EPOCH);
                    entries.push((time, path));
                }
            }
        }
        if entries.len() <= max {
            return 0;
        }
        entries.sort();
        let remove = entries.len() - max * 3 / 4;
        entries
            .iter()
            .take(remove)
            .filter(|(_, path)| fs::remove_file(path).is_ok())
            .count()
    }
}

/// Plans `project` on up to `threads` threads, taking a job's plan from `other` (the other side
/// of a diff), else from `cache`, before planning it; the plans made here are then stored in
/// `cache`.
pub fn plan(
    project: &CheckedProject,
    threads: usize,
    cache: Option<&PlanCache>,
    other: &(dyn Fn(&str) -> Option<Plan> + Sync),
) -> PlannedProject {
    let reuse = |job: &CheckedJob, key: &str| -> Option<Plan> {
        other(key).or_else(|| cache.and_then(|c| c.get(key, job)))
    };
    let planned = loam_compiler::project::plan_project_reusing(project, threads, &reuse);
    if let Some(cache) = cache {
        let mut wrote = false;
        for ((plan, key), reused) in planned
            .document
            .plans
            .iter()
            .zip(&planned.keys)
            .zip(&planned.reused)
        {
            if !reused {
                wrote |= cache.put(key, plan);
            }
        }
        if wrote {
            cache.prune(MAX_ENTRIES);
        }
    }
    planned
}
