//! The on-disk plan cache of `loam plan` and `loam diff` (`--cache DIR`, or `LOAM_CACHE_DIR`):
//! plans kept by their key, so a CI run plans only the jobs whose spec or catalogue inputs
//! changed since a run whose cache folder it restored.
//!
//! ```text
//!  CheckedProject ──plan_keys──▶ key ──get──▶ cached Plan ─┐
//!                                   └─(miss)─ plan_job ────┴─▶ PlannedProject ──put (misses)──▶ DIR
//! ```
//!
//! The key is [`loam_compiler::project::plan_key`]: sha256 over loam's version, the Plan
//! format version and the fitted constants, the spec file's path and text, the job's name and
//! its catalogue inputs (its pool and the devices that pool uses, as loaded). An entry is
//! `DIR/plans-v1/<first two hex digits>/<the other 62>.json`: one header line
//! `loam-plan-cache/1 <key> <seal>`, then the plan's JSON. The seal (`seal.rs`) is
//! `hmac-sha256:<hex>` of the magic, the key and the body under the secret `LOAM_CACHE_KEY` when
//! it is set, else `sha256:<hex>` of the body, which finds damage but not forgery; so without a key the cache is
//! refused where the code being planned can write (`location.rs`: inside a git work tree or a
//! planned folder). A plan is stored only when it reads back equal and serialises back to the
//! same bytes, so a cached plan renders byte for byte as a fresh one. Entries are written to a
//! temporary file in the same folder and renamed; an entry that is unreadable, truncated, for
//! another key or whose seal does not verify is never trusted: it is ignored, counted (the
//! command says so once, [`PlanCache::warning`]) and the job planned again (and the entry
//! rewritten). Apart from the refusal, nothing here fails a command: a folder that cannot be
//! read or written means planning as without a cache.
//!
//! Pruning: a hit sets the entry's modification time; after a run that wrote entries, when the
//! folder holds more than [`MAX_ENTRIES`] plans, the least recently used are removed down to
//! three quarters of it.

mod location;
mod seal;

pub use seal::MIN_KEY_BYTES;

use crate::io::{self, IoError};
use loam_compiler::project::{CheckedJob, CheckedProject, PlannedProject};
use loam_ir::plan::Plan;
use seal::Secret;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

/// The environment variable that turns the cache on when `--cache` is not given.
pub const ENV: &str = "LOAM_CACHE_DIR";

/// The environment variable holding the secret that signs and verifies entries (at least
/// [`MIN_KEY_BYTES`] bytes; a CI secret, e.g. 32 random bytes in hex).
pub const KEY_ENV: &str = "LOAM_CACHE_KEY";

/// The most plans kept (about 10–40 KB each).
pub const MAX_ENTRIES: usize = 20_000;

/// The first word of an entry's header: the entry format.
const MAGIC: &str = "loam-plan-cache/1";

/// The folder of this entry format under the cache folder.
const PLANS: &str = "plans-v1";

/// A cache folder, and the key its entries are signed with.
#[derive(Debug, Clone)]
pub struct PlanCache {
    dir: PathBuf,
    secret: Option<Secret>,
    /// Entries found but not trusted (shared by clones: the threads of one run).
    rejected: Arc<AtomicUsize>,
}

impl PlanCache {
    /// The cache of `--cache DIR`, else of `LOAM_CACHE_DIR` when set and not empty, signed with
    /// `LOAM_CACHE_KEY` when that is set; `Ok(None)` (no cache) when neither folder is given.
    /// Refused (an error, exit 2) without a key when the folder lies inside a git work tree or
    /// inside one of `planned` (the paths the command plans), where the code under review could
    /// have written forged entries; refused as well for a key shorter than [`MIN_KEY_BYTES`].
    pub fn open(flag: Option<&Path>, planned: &[PathBuf]) -> Result<Option<PlanCache>, IoError> {
        let dir = match flag {
            Some(dir) => dir.to_path_buf(),
            None => match std::env::var_os(ENV).filter(|v| !v.is_empty()) {
                Some(dir) => PathBuf::from(dir),
                None => return Ok(None),
            },
        };
        let secret = match std::env::var_os(KEY_ENV).filter(|v| !v.is_empty()) {
            None => None,
            Some(key) => Some(Secret::new(key.as_encoded_bytes()).ok_or_else(|| {
                IoError(format!(
                    "{KEY_ENV} holds {} bytes; a key that signs the plan cache needs at least \
                     {MIN_KEY_BYTES} (for example `openssl rand -hex 32`)",
                    key.len()
                ))
            })?),
        };
        if secret.is_none()
            && let Some(why) = location::refusal(&dir, planned)
        {
            return Err(IoError(format!(
                "refusing the plan cache `{}`: {why}, where the specs' own commits can write \
                 forged plans; keep the cache outside the checkout (in CI: `$RUNNER_TEMP`, a \
                 folder beside `$CI_PROJECT_DIR`), or set {KEY_ENV} to a secret so entries are \
                 signed (docs/gitops.md, \"Cache\")",
                crate::io::display(&dir)
            )));
        }
        Ok(Some(PlanCache {
            secret,
            ..PlanCache::at(dir)
        }))
    }

    /// The cache in folder `dir` (created when the first plan is written), unkeyed, wherever it
    /// is: the caller vouches for the folder.
    pub fn at(dir: impl Into<PathBuf>) -> PlanCache {
        PlanCache {
            dir: dir.into(),
            secret: None,
            rejected: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The cache in folder `dir`, its entries signed and verified with the secret `key` (at
    /// least [`MIN_KEY_BYTES`] bytes; `None` otherwise), wherever it is.
    pub fn keyed(dir: impl Into<PathBuf>, key: &[u8]) -> Option<PlanCache> {
        Some(PlanCache {
            secret: Some(Secret::new(key)?),
            ..PlanCache::at(dir)
        })
    }

    /// How many entries this cache found but did not trust (damaged, forged, for another key,
    /// signed with another key or none).
    pub fn rejected(&self) -> usize {
        self.rejected.load(Ordering::Relaxed)
    }

    /// The one line a command prints on standard error when entries were not trusted.
    pub fn warning(&self) -> Option<String> {
        let n = self.rejected();
        (n > 0).then(|| {
            format!(
                "warning: {n} {} of the plan cache `{}` failed verification (damaged, forged, \
                 or signed with another key or none) and {} ignored; {} planned again\n",
                if n == 1 { "entry" } else { "entries" },
                crate::io::display(&self.dir),
                if n == 1 { "was" } else { "were" },
                if n == 1 {
                    "its job was"
                } else {
                    "their jobs were"
                },
            )
        })
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

    /// The plan stored under `key` for `job`, when an entry holds one whose seal verifies. An
    /// entry that exists but does not is counted in [`PlanCache::rejected`].
    pub fn get(&self, key: &str, job: &CheckedJob) -> Option<Plan> {
        let path = self.entry(key)?;
        // Regular files only, of a bounded size: a FIFO or `/dev/zero` planted as an entry is
        // no entry.
        let bytes = io::read(&path).ok()?;
        let plan = match self.verify(key, &bytes, job) {
            Verdict::Trusted(plan) => *plan,
            Verdict::Signed => return None,
            Verdict::Untrusted => {
                self.rejected.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        // Recently used: pruning keeps it. A read-only cache is still read.
        if let Ok(file) = fs::File::options().append(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        Some(plan)
    }

    /// What entry text `bytes` is worth for `key` and `job`.
    fn verify(&self, key: &str, bytes: &[u8], job: &CheckedJob) -> Verdict {
        let found = self.verified(key, bytes, job);
        let signed = || {
            let header = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
            header.windows(13).any(|w| w == b" hmac-sha256:")
        };
        match found {
            Some(plan) => Verdict::Trusted(Box::new(plan)),
            None if self.secret.is_none() && signed() => Verdict::Signed,
            None => Verdict::Untrusted,
        }
    }

    /// The plan of entry text `bytes`, when it is for `key` and `job` and its seal verifies.
    fn verified(&self, key: &str, bytes: &[u8], job: &CheckedJob) -> Option<Plan> {
        let text = std::str::from_utf8(bytes).ok()?;
        let (header, body) = text.split_once('\n')?;
        let mut words = header.split(' ');
        let (magic, found_key, found_seal) = (words.next()?, words.next()?, words.next()?);
        if magic != MAGIC || found_key != key || words.next().is_some() {
            return None;
        }
        if !seal::verifies(
            self.secret.as_ref(),
            &signed(key, body),
            body.as_bytes(),
            found_seal,
        ) {
            return None;
        }
        let plan: Plan = serde_json::from_str(body).ok()?;
        (plan.file == job.file && plan.job == job.job.name.value).then_some(plan)
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
        let seal = seal::seal(self.secret.as_ref(), &signed(key, &body), body.as_bytes());
        let text = format!("{MAGIC} {key} {seal}\n{body}");
        // Through the file-system layer: an exclusive temporary file with a random name, so a
        // link planted in the folder cannot redirect the write.
        fs::create_dir_all(folder).is_ok() && io::write_atomically(&path, &text).is_ok()
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

/// What an entry found in the cache is worth.
enum Verdict {
    /// Its seal verifies: the plan it holds.
    Trusted(Box<Plan>),
    /// Signed with a key, read without one: it cannot be checked, so it is not used (a cache
    /// shared by keyed runs and runs without the secret, such as pull requests from forks).
    Signed,
    /// Damaged, forged, for another key or signed with another key: never trusted.
    Untrusted,
}

/// What an entry's seal covers: the header's magic and key, a newline, the body.
fn signed(key: &str, body: &str) -> Vec<u8> {
    format!("{MAGIC} {key}\n{body}").into_bytes()
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
