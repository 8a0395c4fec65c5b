//! Working through a whole repository of specs on every core: parsing and checking files, and
//! planning jobs, spread over threads with a shared work queue.
//!
//! Results are put back in input order before anything else sees them, so the output is the
//! same byte for byte whatever the number of threads and however they were scheduled.

use crate::session::Specs;
use loam_compiler::catalogue::Catalogue;
use loam_compiler::check::{Job, check_file, check_unique_job_names};
use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::plan::ir::{FORMAT_VERSION, PlanDocument};
use loam_compiler::plan::plan_document;
use loam_compiler::span::FileId;
use loam_compiler::syntax::{decode_utf8, parse};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Below this many items the work runs on the calling thread: starting threads costs more.
const SERIAL_BELOW: usize = 4;

/// Applies `work` to every item on up to `available_parallelism` threads; the results come back
/// in the order of `items`.
pub fn map_ordered<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(items.len());
    if threads <= 1 || items.len() < SERIAL_BELOW {
        return items.iter().map(&work).collect();
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    let idx = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(idx) else { break };
                    mine.push((idx, work(item)));
                }
                if let Ok(mut all) = done.lock() {
                    all.append(&mut mine);
                }
            });
        }
    });
    let mut all = done
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    all.sort_by_key(|(idx, _)| *idx);
    all.into_iter().map(|(_, result)| result).collect()
}

/// What parsing and checking one file gave.
struct Checked {
    diagnostics: Vec<Diagnostic>,
    jobs: Vec<Job>,
}

fn check_one(id: FileId, bytes: &[u8]) -> Checked {
    let text = match decode_utf8(id, bytes) {
        Ok(text) => text,
        Err(diagnostic) => {
            return Checked {
                diagnostics: vec![*diagnostic],
                jobs: Vec::new(),
            };
        }
    };
    let parsed = parse(id, text);
    let mut diagnostics = parsed.diagnostics;
    let mut jobs = Vec::new();
    if let Some(file) = parsed.file {
        let checked = check_file(&file);
        diagnostics.extend(checked.diagnostics);
        jobs = checked.jobs;
    }
    Checked { diagnostics, jobs }
}

/// Parses and checks `files` (display name, bytes) into `specs` in parallel: the same result as
/// adding them one by one with [`crate::session::add_spec`], then checking that job names are
/// unique and sorting the diagnostics by file and position.
pub fn add_specs(specs: &mut Specs, files: Vec<(String, Vec<u8>)>) {
    let mut work: Vec<(FileId, Vec<u8>)> = Vec::with_capacity(files.len());
    for (name, bytes) in files {
        let lossy = String::from_utf8_lossy(&bytes).into_owned();
        let id = specs.sources.add(name.clone(), lossy);
        specs.files.push(name);
        work.push((id, bytes));
    }
    for checked in map_ordered(&work, |(id, bytes)| check_one(*id, bytes)) {
        specs.diagnostics.extend(checked.diagnostics);
        specs.jobs.extend(checked.jobs);
    }
    let duplicates = check_unique_job_names(&specs.jobs);
    specs.diagnostics.extend(duplicates);
    specs.diagnostics.sort_by_key(Diagnostic::sort_key);
}

/// Most jobs handed to one [`plan_document`] call. Each call also hashes the whole catalogue for
/// the document's digest; a few jobs per call keep that a small share of the work, and at least
/// 64 calls (when there are that many jobs) keep every core busy to the end.
const JOBS_PER_CALL: usize = 8;

/// Plans `jobs` (each with the display path of its file) against `catalogue` in parallel, a few
/// jobs per [`plan_document`] call: the same document as one call with every job (plans sorted
/// by file, stable), and the planner's diagnostics in job order.
pub fn plan_jobs(jobs: &[(&Job, &str)], catalogue: &Catalogue) -> (PlanDocument, Vec<Diagnostic>) {
    let per_call = (jobs.len() / 64).clamp(1, JOBS_PER_CALL);
    let chunks: Vec<&[(&Job, &str)]> = jobs.chunks(per_call).collect();
    let results = map_ordered(&chunks, |chunk| plan_document(chunk, catalogue));
    let mut plans = Vec::with_capacity(jobs.len());
    let mut diagnostics = Vec::new();
    for (doc, found) in results {
        plans.extend(doc.plans);
        diagnostics.extend(found);
    }
    plans.sort_by(|a, b| a.file.cmp(&b.file));
    let doc = PlanDocument {
        format_version: FORMAT_VERSION.to_string(),
        catalogue_digest: catalogue.digest(),
        plans,
    };
    (doc, diagnostics)
}
